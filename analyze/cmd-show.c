/*
 * cmd-show.c - `mcptap show`: a session's messages in the order they were
 * read, as text for people or as JSON lines for programs.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/cli.h"

static int run_show(int argc, char **argv);

const struct cmd_entry cmd_show = {
	.name = "show",
	.summary = "print the messages of a session in order",
	.usage = "mcptap show -r FILE [-s ID] [-T text|json] [--full]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session ID      the session (default: the newest)\n"
		   "  -T, --format FORMAT   text (default) or json (one object per line)\n"
		   "      --full            text: do not shorten message bodies\n"
		   "  -h, --help            this text\n",
	.run = run_show,
};

#define BODY_WIDTH 160

struct show {
	int json;
	int full;
	int color;
	int64_t session;
	struct mt_buf text;
};

/* The id as JSON: its original type. NULL when there is none. */
static json_t *id_json(const struct store_item *it)
{
	if (!it->idtype)
		return NULL;
	if (!strcmp(it->idtype, "null"))
		return json_null();
	if (!strcmp(it->idtype, "string"))
		return json_string(it->id_text ? it->id_text : "");
	if (it->id_sqltype == 1 /* SQLITE_INTEGER */)
		return json_integer(it->id_int);
	if (it->id_sqltype == 2 /* SQLITE_FLOAT */)
		return json_real(it->id_real);
	/* An integer too big for int64, kept as its digits. */
	return it->id_text ? json_loads(it->id_text, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, NULL)
			   : NULL;
}

static void id_text(const struct store_item *it, struct mt_buf *out)
{
	json_t *id = id_json(it);
	char *s = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;

	mt_buf_reset(out);
	if (s)
		mt_buf_puts(out, s);
	else if (it->id_text)
		mt_buf_puts(out, it->id_text);
	free(s);
	json_decref(id);
}

static int show_json(struct show *sh, const struct store_item *it)
{
	json_t *o = json_object(), *msg = NULL;
	const char *method = it->method;
	char t[32];
	json_object_set_new(o, "session", json_integer(sh->session));
	json_object_set_new(o, "seq", it->seq >= 0 ? json_integer(it->seq) : json_null());
	if (it->type != STORE_ITEM_GAP) { /* a gap has no clock of its own */
		json_object_set_new(o, "t_ns", json_integer(it->t_ns));
		mt_format_wall(it->wall, t);
		json_object_set_new(o, "time", json_string(t));
	}
	if (it->dir)
		json_object_set_new(o, "dir", json_string(it->type == STORE_ITEM_STDERR ? "s2c" : it->dir));
	if (it->channel)
		json_object_set_new(o, "channel", json_string(it->channel));
	json_object_set_new(o, "kind", json_string(it->kind));
	if (it->type == STORE_ITEM_GAP) {
		json_object_set_new(o, "messages", json_integer(it->gap_messages));
		json_object_set_new(o, "bytes", json_integer(it->gap_bytes));
		json_object_set_new(o, "reason", json_string(it->gap_reason ? it->gap_reason : ""));
		goto print;
	}
	json_t *id = id_json(it);
	if (id)
		json_object_set_new(o, "id", id);
	if (method)
		json_object_set_new(o, "method", json_string(method));
	if (it->has_error_code)
		json_object_set_new(o, "error_code", json_integer(it->error_code));
	if (it->request_seq > 0)
		json_object_set_new(o, "latency_ns", json_integer(it->latency_ns));
	json_object_set_new(o, "size", json_integer(it->size));
	if (it->incomplete)
		json_object_set_new(o, "incomplete", json_true());
	if (it->type == STORE_ITEM_STDERR) {
		size_t n = it->raw_len;
		const unsigned char *p = it->raw;
		while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			n--;
		mt_utf8_lossy((const char *)p, n, &sh->text);
		json_object_set_new(o, "text", json_stringn(sh->text.data ? sh->text.data : "", sh->text.len));
		goto print;
	}
	if (strcmp(it->kind, "invalid"))
		msg = json_loadb(it->raw, it->raw_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (msg) {
		json_object_set_new(o, "message", msg);
	} else {
		mt_utf8_lossy(it->raw, it->raw_len, &sh->text);
		json_object_set_new(o, "raw", json_stringn(sh->text.data ? sh->text.data : "", sh->text.len));
	}
print:
	json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	putchar('\n');
	json_decref(o);
	return 0;
}

/* A compact one-line body: re-encoded JSON, or the bytes with escapes. */
static void body_text(struct show *sh, const struct store_item *it)
{
	json_t *msg = NULL;
	char *s = NULL;

	mt_buf_reset(&sh->text);
	if (it->type == STORE_ITEM_MESSAGE && strcmp(it->kind, "invalid"))
		msg = json_loadb(it->raw, it->raw_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (msg && (s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY))) {
		mt_buf_puts(&sh->text, s);
	} else {
		const unsigned char *p = it->raw;
		size_t n = it->raw_len;
		while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			n--;
		for (size_t i = 0; i < n && (sh->full || sh->text.len < BODY_WIDTH + 8); i++) {
			if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
				mt_buf_putc(&sh->text, (char)p[i]);
			else if (p[i] == '\\')
				mt_buf_puts(&sh->text, "\\\\");
			else if (p[i] >= 0x80)
				mt_buf_putc(&sh->text, (char)p[i]);
			else
				mt_buf_printf(&sh->text, "\\x%02x", p[i]);
		}
	}
	free(s);
	json_decref(msg);
	if (!sh->full && sh->text.len > BODY_WIDTH) {
		/* Cut at a character boundary. */
		size_t cut = BODY_WIDTH;
		while (cut > 0 && ((unsigned char)sh->text.data[cut] & 0xC0) == 0x80)
			cut--;
		sh->text.len = cut;
		mt_buf_puts(&sh->text, "…");
	}
}

static const char *arrow(const struct store_item *it)
{
	if (it->type == STORE_ITEM_STDERR)
		return "⇠";
	if (it->type == STORE_ITEM_GAP)
		return "✗";
	return !strcmp(it->dir, "c2s") ? "→" : "←";
}

static const char *kind_color(const struct store_item *it)
{
	if (it->type != STORE_ITEM_MESSAGE)
		return "\033[33m";
	if (!strcmp(it->kind, "error") || !strcmp(it->kind, "invalid") ||
	    !strcmp(it->kind, "notjsonrpc"))
		return "\033[31m";
	return !strcmp(it->dir, "c2s") ? "\033[36m" : "\033[32m";
}

static int show_text(struct show *sh, const struct store_item *it)
{
	const char *method = it->method, *on = "", *off = "";
	struct mt_buf id = MT_BUF_INIT;
	char lat[32] = "";

	if (it->request_seq > 0)
		cli_format_duration(it->latency_ns, lat);
	if (sh->color) {
		on = kind_color(it);
		off = "\033[0m";
	}
	if (it->type == STORE_ITEM_GAP) {
		char seq[24] = "-";
		if (it->seq >= 0)
			snprintf(seq, sizeof(seq), "%lld", (long long)it->seq);
		printf("%6s %11s %s%s %-12s %lld messages, %lld bytes not stored: %s%s\n",
		       seq, "", on, arrow(it), "gap",
		       (long long)it->gap_messages, (long long)it->gap_bytes,
		       it->gap_reason ? it->gap_reason : "", off);
		return 0;
	}
	if (it->type == STORE_ITEM_MESSAGE)
		id_text(it, &id);
	body_text(sh, it);
	printf("%6lld %11.6f %s%s %-12s%s %-8s %-28s %8s  %s%s\n", (long long)it->seq,
	       (double)it->t_ns / 1e9, on, arrow(it), it->kind, off,
	       id.data ? id.data : "", method ? method : "", lat, sh->text.data ? sh->text.data : "",
	       it->incomplete ? " [no newline]" : "");
	mt_buf_release(&id);
	return 0;
}

static int each(const struct store_item *it, void *ctx)
{
	struct show *sh = ctx;

	return sh->json ? show_json(sh, it) : show_text(sh, it);
}

static int run_show(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'T'},
		{"full", no_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct show sh;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	const char *path = NULL, *format = "text", *sid = NULL;
	int c, rc = EXIT_ERROR;

	memset(&sh, 0, sizeof(sh));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': path = optarg; break;
		case 's': sid = optarg; break;
		case 'T': format = optarg; break;
		case 'F': sh.full = 1; break;
		case 'h': cli_help(&cmd_show, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_show, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_show, "unexpected argument '%s'", argv[optind]);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return cli_usage_error(&cmd_show, "unknown format '%s' (text or json)", format);
	if (!(path = cli_capture_path(path)))
		return cli_usage_error(&cmd_show, "no capture file: give -r FILE or set MCPTAP_FILE");
	sh.json = !strcmp(format, "json");
	sh.color = !sh.json && cli_use_color(stdout);
	if (cli_open_capture(path, &st) || cli_pick_session(st, path, sid, &sh.session))
		goto out;
	if (store_each_item(st, sh.session, each, &sh, &err) < 0) {
		mt_error("cannot read '%s': %s", path, err.msg);
		goto out;
	}
	rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out:
	mt_buf_release(&sh.text);
	store_close(st);
	return rc;
}
