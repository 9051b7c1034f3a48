/*
 * cmd-diff.c - `mcptap diff A B`: two recorded sessions compared offline, the
 * conversations aligned by replay's matching (analyze/replay/sdiff.h), as text
 * for people or one JSON document for programs; the exit status says whether
 * they differ.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/diffside.h"
#include "cli.h"

static int run_diff(int argc, char **argv);

const struct cmd_entry cmd_diff = {
	.name = "diff",
	.summary = "compare two recorded sessions, exchange by exchange",
	.usage = "mcptap diff [-T text|json] [--ignore PATH]... [--noise FILE[:ID]]... FILE[:ID] FILE[:ID] "
		 "[FILE[:ID]]",
	.options = "  FILE[:ID]             a capture file and a session in it (default: the\n"
		   "                        newest, as replay); the first is A, the second B, a\n"
		   "                        third one more --noise\n"
		   "  -T, --format FORMAT   text (default) or json (one document)\n"
		   "      --ignore PATH     leave PATH out of matching and comparing (repeatable):\n"
		   "                        params.arguments.ts, result.content[*].text, result.*.id;\n"
		   "                        NAME=PATH only for the method or tool/prompt NAME\n"
		   "      --noise FILE[:ID]  another recording of A's side (the same flow against\n"
		   "                        the same server): where it differs from A is noise,\n"
		   "                        set aside (repeatable)\n"
		   "  -h, --help            this text\n"
		   "\n"
		   "Exchanges (the client's requests and the server's, s→c, with their answers) are\n"
		   "paired by method and canonical params, not by position; each pair is CHANGED\n"
		   "when its params, result or error differ (the paths, A's and B's values),\n"
		   "unpaired ones are ADDED (B only) or MISSING (A only). Ids, progress tokens,\n"
		   "session ids, timing and transport are never differences. Exit status: 0 the\n"
		   "same, 1 they differ, 2 an error.\n",
	.run = run_diff,
};

/*
 * Split arg at its last ':' when what follows is a session id (digits), or
 * when the whole is no file but the part before is; else the whole is the
 * file. 0, or a usage error (EXIT_ERROR) for an id that is not one.
 */
static int side_parse(const struct cmd_entry *cmd, const char *arg, struct diff_side *s)
{
	const char *colon = strrchr(arg, ':');
	struct stat sb;

	memset(s, 0, sizeof(*s));
	s->path = mt_strdup(arg);
	if (!colon || colon == arg)
		return 0;
	size_t at = (size_t)(colon - arg);
	const char *id = colon + 1;
	int digits = *id && strspn(id, "0123456789") == strlen(id);
	if (!digits) {
		char *file;
		int whole = stat(arg, &sb) == 0;
		if (whole)
			return 0;
		file = mt_strndup(arg, at);
		int part = stat(file, &sb) == 0;
		free(file);
		if (!part)
			return 0;
		return cli_usage_error(cmd, "bad session '%s' in '%s' (FILE:ID, ID a session id)", id, arg);
	}
	s->path[at] = '\0';
	s->sid = s->path + at + 1;
	return 0;
}

/* Open the side's file and pick its session; -1 after saying why. */
static int side_open(struct diff_side *s)
{
	if (cli_open_capture(s->path, &s->st))
		return -1;
	return cli_pick_session(s->st, s->path, s->sid, &s->id);
}

void diff_side_release(struct diff_side *s)
{
	store_close(s->st);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

/* Load a side's session for the diff; -1 after saying why. */
static int side_load(struct diff_side *s, const struct canon_ignore *ig, struct rp_script *sc)
{
	struct mt_err err = {"", 0};

	if (rp_load(s->st, s->id, ig, sc, &err))
		return mt_error("cannot read session %lld of '%s': %s", (long long)s->id, s->path, err.msg);
	return 0;
}

struct printer {
	int json;           /* -T json */
	size_t items;       /* JSON: exchanges printed */
	struct mt_buf line; /* text: the line being made */
	json_t *items_json; /* JSON: the exchanges, printed at the end */
};

/* A value for a text line: compact JSON, cut after 40 bytes, safe for a terminal. */
static void short_value(struct printer *p, json_t *v)
{
	char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	size_t n;

	if (!t) {
		mt_buf_puts(&p->line, "(absent)");
		return;
	}
	n = strlen(t);
	if (n > 40) {
		n = 40;
		while (n > 0 && ((unsigned char)t[n] & 0xc0) == 0x80)
			n--; /* (not inside a UTF-8 sequence) */
	}
	mt_printable_append(&p->line, t, n);
	if (n < strlen(t))
		mt_buf_puts(&p->line, "...");
	free(t);
}

static const char *const status_word[] = {"same", "changed", "added", "missing"};

static int print_item(const struct sd_item *it, void *ctx)
{
	struct printer *p = ctx;

	if (it->status == SD_SAME)
		return 0;
	if (p->json) {
		json_t *o = json_pack("{s:s,s:s,s:s}", "status", status_word[it->status], "dir",
				      it->s2c ? "s2c" : "c2s", "method", it->method);
		if (it->subject)
			json_object_set_new(o, "subject", json_string(it->subject));
		if (it->a_seq >= 0)
			json_object_set_new(o, "a", json_integer(it->a_seq));
		if (it->b_seq >= 0)
			json_object_set_new(o, "b", json_integer(it->b_seq));
		if (it->status == SD_CHANGED) {
			json_object_set(o, "diffs", it->diffs);
			json_object_set(o, "noise", it->noise);
		}
		json_array_append_new(p->items_json, o);
		return 0;
	}
	mt_buf_reset(&p->line);
	mt_buf_puts(&p->line, it->status == SD_CHANGED ? "CHANGED "
			      : it->status == SD_ADDED ? "ADDED "
						       : "MISSING ");
	if (it->s2c)
		mt_buf_puts(&p->line, "s→c "); /* (a server's request) */
	mt_printable_append(&p->line, it->method, strlen(it->method));
	if (it->subject) {
		mt_buf_putc(&p->line, ' ');
		mt_printable_append(&p->line, it->subject, strlen(it->subject));
	}
	if (it->status == SD_ADDED) {
		mt_buf_printf(&p->line, " (B #%lld)", (long long)it->b_seq);
	} else if (it->status == SD_MISSING) {
		mt_buf_printf(&p->line, " (A #%lld)", (long long)it->a_seq);
	} else {
		size_t n = json_array_size(it->diffs);
		mt_buf_printf(&p->line, " (A #%lld, B #%lld):", (long long)it->a_seq, (long long)it->b_seq);
		for (size_t k = 0; k < n && k < 8; k++) {
			json_t *d = json_array_get(it->diffs, k);
			const char *path = json_string_value(json_object_get(d, "path"));
			mt_buf_puts(&p->line, k ? ", " : " ");
			mt_printable_append(&p->line, path, strlen(path));
			mt_buf_putc(&p->line, ' ');
			short_value(p, json_object_get(d, "a"));
			mt_buf_puts(&p->line, " -> ");
			short_value(p, json_object_get(d, "b"));
		}
		if (it->ndiffs > 8)
			mt_buf_printf(&p->line, " (+%zu more)", it->ndiffs - 8);
		if (json_array_size(it->noise))
			mt_buf_printf(&p->line, " (%zu noisy path%s set aside)", json_array_size(it->noise),
				      json_array_size(it->noise) == 1 ? "" : "s");
	}
	puts(p->line.data);
	return 0;
}

/* {"file": F, "session": ID} of a side. */
static json_t *side_json(const struct diff_side *s)
{
	return json_pack("{s:s,s:I}", "file", s->path, "session", (json_int_t)s->id);
}

int diff_compare(const struct cmd_entry *cmd, const char *arg_a, const char *arg_b, struct diff_args *da,
		 struct diff_side *a, struct diff_side *b, sd_each_fn each, void *ctx, struct sd_totals *t)
{
	size_t opened = 0;
	struct diff_side *noise = mt_calloc(da->nnoise ? da->nnoise : 1, sizeof(*noise));
	struct rp_script sa, sb;
	int loaded_a = 0, loaded_b = 0, rc = EXIT_ERROR;
	struct canon_ignore ig;
	struct mt_err err = {"", 0};
	json_t *nz = json_object();

	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	if ((rc = side_parse(cmd, arg_a, a)) || (rc = side_parse(cmd, arg_b, b)))
		goto out;
	while (opened < da->nnoise) {
		struct diff_side *ns = &noise[opened++]; /* (counted: side_parse may allocate and fail) */
		if ((rc = side_parse(cmd, da->noise[opened - 1], ns)))
			goto out;
	}
	rc = EXIT_ERROR;
	if (side_open(a) || side_open(b))
		goto out;
	for (size_t k = 0; k < da->nnoise; k++)
		if (side_open(&noise[k]))
			goto out;
	ig.paths = da->ignore;
	ig.n = da->nignore;
	json_decref(da->noise_sides);
	da->noise_sides = json_array();
	for (size_t k = 0; k < da->nnoise; k++)
		json_array_append_new(da->noise_sides, side_json(&noise[k]));
	/* The noise first: each of its recordings against a fresh load of A. */
	for (size_t k = 0; k < da->nnoise; k++) {
		struct rp_script sc;
		int bad;
		if (side_load(a, &ig, &sa))
			goto out;
		if (side_load(&noise[k], &ig, &sc)) {
			rp_release(&sa);
			goto out;
		}
		bad = sd_noise(&sa, &sc, nz, &err);
		bad = bad || sc.read_errors || sa.read_errors;
		if (bad)
			mt_error("cannot read session %lld of '%s' or %lld of '%s': %s",
				 (long long)noise[k].id, noise[k].path, (long long)a->id, a->path,
				 sc.read_errors   ? sc.read_err.msg
				 : sa.read_errors ? sa.read_err.msg
						  : err.msg);
		rp_release(&sc);
		rp_release(&sa);
		if (bad)
			goto out;
	}
	if (side_load(a, &ig, &sa))
		goto out;
	loaded_a = 1;
	if (rp_ignore_check(&sa, &err)) {
		rc = cli_usage_error(cmd, "%s", err.msg);
		goto out;
	}
	if (side_load(b, &ig, &sb))
		goto out;
	loaded_b = 1;
	if (sd_run(&sa, &sb, nz, each, ctx, t, &err) || sa.read_errors || sb.read_errors) {
		fflush(stdout);
		mt_error("cannot read session %lld of '%s' or %lld of '%s': %s", (long long)a->id, a->path,
			 (long long)b->id, b->path,
			 sa.read_errors   ? sa.read_err.msg
			 : sb.read_errors ? sb.read_err.msg
					  : err.msg);
		goto out;
	}
	rc = 0;
out:
	if (loaded_a)
		rp_release(&sa);
	if (loaded_b)
		rp_release(&sb);
	for (size_t k = 0; k < opened; k++)
		diff_side_release(&noise[k]);
	free(noise);
	json_decref(nz);
	return rc;
}

/* -T json: the document, the exchanges as print_item kept them (t NULL: no totals, a failure). */
static void print_json(struct printer *p, const struct diff_side *a, const struct diff_side *b,
		       const struct diff_args *da, const struct sd_totals *t)
{
	json_t *h = json_object(), *list = json_array(), *e;
	char *text;
	size_t i;

	json_object_set_new(h, "a", side_json(a));
	json_object_set_new(h, "b", side_json(b));
	if (da->noise_sides)
		json_array_extend(list, da->noise_sides);
	json_object_set_new(h, "noise", list);
	text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
	/* (the object left open for the exchanges, a line each) */
	printf("%.*s,\"exchanges\":[", text ? (int)strlen(text) - 1 : 1, text ? text : "{");
	free(text);
	json_decref(h);
	json_array_foreach(p->items_json, i, e)
	{
		char *t1 = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("%s%s", p->items++ ? ",\n" : "\n", t1 ? t1 : "null");
		free(t1);
	}
	if (!t) {
		printf("]}\n");
		return;
	}
	printf("%s],\"exchanges_a\":%zu,\"exchanges_b\":%zu,\"same\":%zu,\"changed\":%zu,"
	       "\"added\":%zu,\"missing\":%zu,\"noise_paths\":%zu}\n",
	       p->items ? "\n" : "", t->a_exchanges, t->b_exchanges, t->same, t->changed, t->added,
	       t->missing, t->noise);
}

int diff_arg(struct diff_args *da, int c, const char *arg)
{
	if (c == 'i') {
		da->ignore = mt_realloc(da->ignore, (da->nignore + 1) * sizeof(*da->ignore));
		da->ignore[da->nignore++] = arg;
		return 1;
	}
	if (c == 'n') {
		da->noise = mt_realloc(da->noise, (da->nnoise + 1) * sizeof(*da->noise));
		da->noise[da->nnoise++] = arg;
		return 1;
	}
	return 0;
}

static int run_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'T'},
		{"ignore", required_argument, NULL, 'i'},
		{"noise", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text";
	struct diff_args da = {NULL, 0, NULL, 0, NULL};
	struct diff_side a, b;
	int c, rc = EXIT_ERROR;
	struct sd_totals t;
	struct printer pr = {0, 0, MT_BUF_INIT, NULL};

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'T': format = optarg; break;
		case 'i':
		case 'n':
			if ((rc = diff_arg(&da, c, optarg)) != 1)
				goto out;
			break;
		case 'h':
			cli_help(&cmd_diff, stdout);
			rc = EXIT_OK;
			goto out;
		default: rc = cli_bad_option(&cmd_diff, c, argv); goto out;
		}
	}
	rc = EXIT_ERROR;
	if (strcmp(format, "text") && strcmp(format, "json")) {
		rc = cli_usage_error(&cmd_diff, "unknown format '%s' (text or json)", format);
		goto out;
	}
	if (argc - optind != 2 && argc - optind != 3) {
		rc = cli_usage_error(&cmd_diff, "give two sessions, A and B, and perhaps a third of A's "
						"side: FILE[:ID] FILE[:ID] [FILE[:ID]]");
		goto out;
	}
	if (argc - optind == 3) /* (a third recording: one more --noise) */
		diff_arg(&da, 'n', argv[optind + 2]);
	pr.json = !strcmp(format, "json");
	if (pr.json)
		pr.items_json = json_array();
	if ((rc = diff_compare(&cmd_diff, argv[optind], argv[optind + 1], &da, &a, &b, print_item, &pr,
			       &t))) {
		if (pr.json && pr.items_json && json_array_size(pr.items_json))
			print_json(&pr, &a, &b, &da, NULL);
		goto out;
	}
	if (pr.json) {
		print_json(&pr, &a, &b, &da, &t);
	} else {
		printf("diff: %zu exchange%s in A, %zu in B: %zu same, %zu changed, %zu added, "
		       "%zu missing",
		       t.a_exchanges, t.a_exchanges == 1 ? "" : "s", t.b_exchanges, t.same, t.changed,
		       t.added, t.missing);
		if (da.nnoise)
			printf("; %zu path%s set aside as noise", t.noise, t.noise == 1 ? "" : "s");
		printf("\n");
	}
	rc = t.changed || t.added || t.missing ? EXIT_FINDINGS : EXIT_OK;
out:
	fflush(stdout);
	diff_side_release(&a);
	diff_side_release(&b);
	free(da.ignore);
	free(da.noise);
	json_decref(da.noise_sides);
	json_decref(pr.items_json);
	mt_buf_release(&pr.line);
	return rc;
}
