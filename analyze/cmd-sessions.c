/*
 * cmd-sessions.c - `mcptap sessions`: one line per captured session.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "schema/filter.h"

static int run_sessions(int argc, char **argv);

const struct cmd_entry cmd_sessions = {
	.name = "sessions",
	.summary = "list the sessions in a capture file",
	.usage = "mcptap sessions -r FILE [-s LIST] [-Y EXPR] [-T text|json]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: every session)\n"
		   "  -Y, --filter EXPR     only the sessions with a message EXPR passes\n"
		   "                        (FILTERS in mcptap.1)\n"
		   "  -T, --format FORMAT   text (default) or json (one object per line)\n"
		   "  -h, --help            this text\n",
	.run = run_sessions,
};

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void local_time(int64_t wall_us, char out[32])
{
	time_t t = (time_t)(wall_us / 1000000);
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, 32, "?");
}

static void exit_text(const struct store_session_row *r, char out[32])
{
	if (r->exit_signal > 0) {
		const char *name = sigabbrev_np(r->exit_signal);
		if (name)
			snprintf(out, 32, "SIG%s", name);
		else
			snprintf(out, 32, "signal %d", r->exit_signal);
	} else if (r->exit_status >= 0) {
		snprintf(out, 32, "%d", r->exit_status);
	} else {
		/* No end: its tap still records it, or was killed (aborted). */
		snprintf(out, 32, "%s", r->ended_wall ? "?" : store_session_state(r));
	}
}

/* Append text (NULL or empty: "-") to b, escaped for a terminal. */
static void put_text(struct mt_buf *b, const char *text)
{
	mt_printable_append(b, or_dash(text), strlen(or_dash(text)));
}

/* Pad b with spaces until what follows start takes width columns (a UTF-8 character is one). */
static void pad_from(struct mt_buf *b, size_t start, int width)
{
	int cols = 0;

	for (size_t i = start; i < b->len; i++)
		cols += ((unsigned char)b->data[i] & 0xC0) != 0x80;
	for (; cols < width; cols++)
		mt_buf_putc(b, ' ');
}

/* "name version", "name" or "-", escaped, then padded to width columns and two spaces. */
static void put_peer(struct mt_buf *b, const char *name, const char *version, int width)
{
	size_t start = b->len;

	put_text(b, name);
	if (name && version) {
		mt_buf_putc(b, ' ');
		put_text(b, version);
	}
	pad_from(b, start, width);
	mt_buf_puts(b, "  ");
}

static void print_text(const struct store_session_row *rows, size_t n)
{
	struct mt_buf b = MT_BUF_INIT;

	printf("%4s  %-19s  %9s  %11s  %-7s  %-10s  %-24s  %-24s  %s\n", "ID", "STARTED", "DURATION",
	       "C2S/S2C", "EXIT", "PROTOCOL", "CLIENT", "SERVER", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const struct store_session_row *r = &rows[i];
		char started[32], dur[32], ex[32], msgs[48];
		size_t start;
		local_time(r->started_wall, started);
		mt_format_duration(r->duration_ns, dur);
		exit_text(r, ex);
		snprintf(msgs, sizeof(msgs), "%lld/%lld", (long long)r->msgs_c2s, (long long)r->msgs_s2c);
		mt_buf_reset(&b);
		mt_buf_printf(&b, "%4lld  %-19s  ", (long long)r->id, started);
		for (int pad = 9 - (int)strlen(dur) + (strstr(dur, "µ") ? 1 : 0); pad > 0; pad--)
			mt_buf_putc(&b, ' '); /* (µ is two bytes, one column) */
		mt_buf_puts(&b, dur);
		mt_buf_printf(&b, "  %11s  %-7s  ", msgs, ex);
		start = b.len;
		put_text(&b, r->protocol_version);
		pad_from(&b, start, 10);
		mt_buf_puts(&b, "  ");
		put_peer(&b, r->client_name, r->client_version, 24);
		put_peer(&b, r->server_name, r->server_version, 24);
		put_text(&b, r->command);
		mt_buf_putc(&b, '\n');
		if (r->error) {
			mt_buf_puts(&b, "      error: ");
			put_text(&b, r->error);
			mt_buf_putc(&b, '\n');
		}
		if (r->transport && (!strcmp(r->transport, "http") || !strcmp(r->transport, "sse"))) {
			/* An HTTP tap's session: where it forwarded to, and for whom. */
			mt_buf_puts(&b, "      ");
			put_text(&b, r->transport);
			mt_buf_puts(&b, ": upstream ");
			put_text(&b, r->upstream);
			mt_buf_puts(&b, ", Mcp-Session-Id ");
			put_text(&b, r->http_session_id);
			mt_buf_puts(&b, ", client ");
			put_text(&b, r->client_addr);
			if (!r->ended_wall && r->last_wall) {
				/* No end yet (a Streamable HTTP client may never say DELETE):
				 * when it last did something, and how long ago. */
				char last[32], idle[32];
				int64_t now = mt_wall_us();
				local_time(r->last_wall, last);
				mt_format_duration(now > r->last_wall ? (now - r->last_wall) * 1000 : 0,
						   idle);
				mt_buf_printf(&b, ", last activity %s", last);
				if (!strcmp(store_session_state(r), "running"))
					mt_buf_printf(&b, " (idle %s)", idle);
			}
			mt_buf_putc(&b, '\n');
		}
		if (r->gap_messages || r->gap_bytes)
			mt_buf_printf(&b, "      gap: %lld messages (%lld bytes) relayed but not stored\n",
				      (long long)r->gap_messages, (long long)r->gap_bytes);
		fwrite(b.data, 1, b.len, stdout);
	}
	mt_buf_release(&b);
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

static void set_json(json_t *o, const char *k, const char *text)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	if (v)
		json_object_set_new(o, k, v);
}

static void print_json(const struct store_session_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct store_session_row *r = &rows[i];
		json_t *o = json_object();
		char t[32];
		json_object_set_new(o, "id", json_integer(r->id));
		set_str(o, "transport", r->transport);
		mt_format_wall(r->started_wall, t);
		json_object_set_new(o, "started", json_string(t));
		if (r->ended_wall) {
			mt_format_wall(r->ended_wall, t);
			json_object_set_new(o, "ended", json_string(t));
		}
		if (r->duration_ns >= 0)
			json_object_set_new(o, "duration_ns", json_integer(r->duration_ns));
		set_str(o, "command", r->command);
		set_str(o, "upstream", r->upstream);
		set_str(o, "client_addr", r->client_addr);
		set_str(o, "http_session_id", r->http_session_id);
		if (r->last_wall) {
			mt_format_wall(r->last_wall, t);
			json_object_set_new(o, "last_activity", json_string(t));
		}
		json_object_set_new(o, "state", json_string(store_session_state(r)));
		if (r->pid)
			json_object_set_new(o, "pid", json_integer(r->pid));
		if (r->tap_pid)
			json_object_set_new(o, "tap_pid", json_integer(r->tap_pid));
		if (r->exit_status >= 0)
			json_object_set_new(o, "exit_status", json_integer(r->exit_status));
		if (r->exit_signal)
			json_object_set_new(o, "exit_signal", json_integer(r->exit_signal));
		set_str(o, "error", r->error);
		set_str(o, "protocol_version", r->protocol_version);
		set_str(o, "client_name", r->client_name);
		set_str(o, "client_version", r->client_version);
		set_str(o, "server_name", r->server_name);
		set_str(o, "server_version", r->server_version);
		set_json(o, "client_capabilities", r->client_caps);
		set_json(o, "server_capabilities", r->server_caps);
		json_object_set_new(o, "messages_c2s", json_integer(r->msgs_c2s));
		json_object_set_new(o, "messages_s2c", json_integer(r->msgs_s2c));
		json_object_set_new(o, "bytes_c2s", json_integer(r->bytes_c2s));
		json_object_set_new(o, "bytes_s2c", json_integer(r->bytes_s2c));
		json_object_set_new(o, "stderr_lines", json_integer(r->stderr_lines));
		json_object_set_new(o, "gap_messages", json_integer(r->gap_messages));
		json_object_set_new(o, "gap_bytes", json_integer(r->gap_bytes));
		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(o);
	}
}

static int run_sessions(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},   {"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'}, {"format", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	struct store *st = NULL;
	struct store_session_row *rows = NULL;
	struct mt_err err = {"", 0};
	struct cli_read rd = {.format = "text"};
	struct mt_filter *filter = NULL;
	int64_t *ids = NULL;
	size_t n = 0, nids = 0;
	int c, rc = EXIT_ERROR;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:T:h", longopts, NULL)) != -1) {
		if (cli_read_option(&cmd_sessions, &rd, c, optarg))
			continue;
		switch (c) {
		case 'h': cli_help(&cmd_sessions, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_sessions, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_sessions, "unexpected argument '%s'", argv[optind]);
	if (strcmp(rd.format, "text") && strcmp(rd.format, "json"))
		return cli_usage_error(&cmd_sessions, "unknown format '%s' (text or json)", rd.format);
	if (cli_read_check(&cmd_sessions, &rd))
		return EXIT_ERROR;
	if (rd.expr && !(filter = cli_filter(&cmd_sessions, rd.expr)))
		return EXIT_ERROR;
	if (cli_open_capture(rd.path, &st))
		goto out;
	store_set_filter(st, filter, 0);
	if (rd.sid && cli_pick_sessions(st, rd.path, rd.sid, CLI_ALL, &ids, &nids))
		goto out;
	if (store_sessions(st, &rows, &n, &err)) {
		mt_error("cannot read '%s': %s", rd.path, err.msg);
		goto out;
	}
	if (rd.sid) {
		/* Those named, in the file's order (both lists are in id order). */
		size_t k = 0, j = 0;
		for (size_t i = 0; i < n; i++) {
			while (j < nids && ids[j] < rows[i].id)
				j++;
			if (j < nids && ids[j] == rows[i].id) {
				struct store_session_row keep = rows[i];
				rows[k++] = keep;
			} else {
				store_session_row_release(&rows[i]);
			}
		}
		n = k;
	}
	if (filter) {
		/* Those with a message the filter passes. */
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			int64_t pass = 0;
			if (store_filter_count(st, rows[i].id, &pass, &err)) {
				mt_error("cannot read '%s': %s", rd.path, err.msg);
				for (size_t j = i; j < n; j++)
					store_session_row_release(&rows[j]);
				n = k;
				goto out;
			}
			if (pass) {
				struct store_session_row keep = rows[i];
				rows[k++] = keep;
			} else {
				store_session_row_release(&rows[i]);
			}
		}
		n = k;
	}
	if (!strcmp(rd.format, "json"))
		print_json(rows, n);
	else
		print_text(rows, n);
	rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out:
	free(ids);
	mt_filter_free(filter);
	store_sessions_free(rows, n);
	store_close(st);
	return rc;
}
