/*
 * cmd-report.c - `mcptap report`: a capture's sessions as one self-contained
 * HTML file a person opens in a browser (analyze/export/html.c): per session
 * a summary (stats's figures, a latency histogram, errors by code), the
 * analyzer's findings, and a sequence diagram with one arrow per message.
 * Redacts as the tap does unless --keep-secrets; written as export writes.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/diffside.h"
#include "analyze/exportside.h"
#include "schema/map.h"
#include "cli.h"

static int run_report(int argc, char **argv);

const struct cmd_entry cmd_report = {
	.name = "report",
	.summary = "write captured sessions as an HTML report: summary, findings, sequence diagram",
	.usage = "mcptap report -r FILE [-s LIST] [-Y EXPR] [-o FILE] [--redact-key NAME] "
		 "[--redact-path PATH] [--redact-value REGEX] [--keep-secrets]\n"
		 "mcptap report --diff [--ignore PATH]... [--noise FILE[:ID]]... [-o FILE] "
		 "[--redact-key NAME] [--redact-path PATH] [--redact-value REGEX] [--keep-secrets] "
		 "FILE[:ID] FILE[:ID]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: every session)\n"
		   "  -Y, --filter EXPR     draw only the messages EXPR passes (FILTERS in\n"
		   "                        mcptap.1); the summary and the findings are the\n"
		   "                        whole session's\n"
		   "  -o, --output FILE     write FILE (replaced whole at the end); default: stdout\n"
		   "      --redact-key NAME, --redact-path PATH, --redact-value REGEX\n"
		   "                        more to redact, as for record\n"
		   "      --keep-secrets    write what the file holds as it is (no redaction)\n"
		   "      --diff            two sessions side by side, A and B (FILE[:ID], the\n"
		   "                        newest without :ID), compared as diff compares them:\n"
		   "                        their changed, added and missing exchanges listed\n"
		   "                        and marked on their arrows\n"
		   "      --ignore PATH, --noise FILE[:ID]\n"
		   "                        with --diff: as for diff\n"
		   "  -h, --help            this text\n",
	.run = run_report,
};

/* report --diff: what the comparison found, for the page. */
struct rdiff {
	struct mt_map marks[2]; /* A's and B's request seqs -> enum ex_html_mark */
	json_t *items;          /* the exchanges that are not the same, in diff's order */
	struct diff_side a, b;
	struct sd_totals t;
};

static int keep_item(const struct sd_item *it, void *ctx)
{
	struct rdiff *d = ctx;
	static const char *const word[] = {"same", "changed", "added", "missing"};
	json_t *o;

	if (it->status == SD_SAME)
		return 0;
	if (it->a_seq >= 0)
		mt_map_put(&d->marks[0], &it->a_seq, sizeof(it->a_seq),
			   it->status == SD_CHANGED ? EX_HTML_CHANGED : EX_HTML_MISSING);
	if (it->b_seq >= 0)
		mt_map_put(&d->marks[1], &it->b_seq, sizeof(it->b_seq),
			   it->status == SD_CHANGED ? EX_HTML_CHANGED : EX_HTML_ADDED);
	o = json_pack("{s:s,s:b,s:s,s:I,s:I}", "status", word[it->status], "s2c", it->s2c, "method",
		      it->method, "a", (json_int_t)it->a_seq, "b", (json_int_t)it->b_seq);
	if (it->subject)
		json_object_set_new(o, "subject", json_string(it->subject));
	if (it->status == SD_CHANGED) {
		json_t *paths = json_array(), *e;
		size_t i;
		json_array_foreach(it->diffs, i, e)
		{
			json_array_append(paths, json_object_get(e, "path"));
		}
		json_object_set_new(o, "paths", paths);
	}
	json_array_append_new(d->items, o);
	return 0;
}

/* Text into the page, escaped. */
static void put_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* The page of a diff: the list of what differs, then A and B side by side. */
static int diff_body(struct ex_sink *x, void *ctx)
{
	struct rdiff *d = ctx;
	const struct diff_side *side[2] = {&d->a, &d->b};
	json_t *e;
	size_t i;

	if (ex_begin(x))
		return -1;
	fprintf(x->out, "<section id=\"diff\">\n<h2>Diff</h2>\n<p>A: <code>");
	put_text(x->out, d->a.path);
	fprintf(x->out, "</code> session %lld; B: <code>", (long long)d->a.id);
	put_text(x->out, d->b.path);
	fprintf(x->out,
		"</code> session %lld. %zu exchanges in A, %zu in B: %zu same, %zu changed, "
		"%zu added, %zu missing",
		(long long)d->b.id, d->t.a_exchanges, d->t.b_exchanges, d->t.same, d->t.changed, d->t.added,
		d->t.missing);
	if (d->t.noise)
		fprintf(x->out, "; %zu paths set aside as noise", d->t.noise);
	fputs(".</p>\n", x->out);
	if (json_array_size(d->items))
		fputs("<table class=\"diffs\">\n<tr><th>status</th><th>exchange</th><th>A</th>"
		      "<th>B</th><th>paths that differ</th></tr>\n",
		      x->out);
	json_array_foreach(d->items, i, e)
	{
		const char *st = json_string_value(json_object_get(e, "status"));
		json_int_t sa = json_integer_value(json_object_get(e, "a"));
		json_int_t sb = json_integer_value(json_object_get(e, "b"));
		json_t *paths = json_object_get(e, "paths"), *p;
		size_t k;
		fprintf(x->out, "<tr class=\"d-%s\"><td class=\"%s\">%s</td><td>%s", st, st, st,
			json_is_true(json_object_get(e, "s2c")) ? "s→c " : "");
		put_text(x->out, json_string_value(json_object_get(e, "method")));
		if (json_object_get(e, "subject")) {
			fputc(' ', x->out);
			put_text(x->out, json_string_value(json_object_get(e, "subject")));
		}
		fputs("</td><td>", x->out);
		if (sa >= 0)
			fprintf(x->out, "<a href=\"#a-s%lld-m%lld\">#%lld</a>", (long long)d->a.id,
				(long long)sa, (long long)sa);
		fputs("</td><td>", x->out);
		if (sb >= 0)
			fprintf(x->out, "<a href=\"#b-s%lld-m%lld\">#%lld</a>", (long long)d->b.id,
				(long long)sb, (long long)sb);
		fputs("</td><td>", x->out);
		json_array_foreach(paths, k, p)
		{
			if (k)
				fputs(", ", x->out);
			fputs("<code>", x->out);
			put_text(x->out, json_string_value(p));
			fputs("</code>", x->out);
		}
		fputs("</td></tr>\n", x->out);
	}
	if (json_array_size(d->items))
		fputs("</table>\n", x->out);
	fputs("</section>\n<div class=\"sbs\">\n", x->out);
	for (int k = 0; k < 2; k++) {
		fputs("<div class=\"side\">\n", x->out);
		x->st = side[k]->st;
		x->path = side[k]->path;
		ex_html_side(x, k ? "b-" : "a-", k ? "B: " : "A: ", &d->marks[k]);
		if (ex_session(x, side[k]->id))
			return -1;
		fputs("</div>\n", x->out);
	}
	fputs("</div>\n", x->out);
	return ex_end(x);
}

/* report --diff A B: 0 (written), or the exit status after saying why. */
static int report_diff(struct ex_args *ea, struct diff_args *da, const char *arg_a, const char *arg_b)
{
	struct rdiff d;
	struct ex_sink x;
	struct ex_opts opts = {0, 0, 0};
	struct mt_redact *redact = NULL;
	char *title = NULL;
	int rc, bad = 0;

	memset(&d, 0, sizeof(d));
	memset(&x, 0, sizeof(x));
	mt_map_init(&d.marks[0], 0);
	mt_map_init(&d.marks[1], 0);
	d.items = json_array();
	if (ea->rd.keep && ea->rd.nrules) {
		rc = cli_usage_error(&cmd_report, "--keep-secrets and --redact-* contradict each other");
		goto out;
	}
	if (ea->rd.out && !*ea->rd.out) {
		rc = cli_usage_error(&cmd_report, "-o needs a file name");
		goto out;
	}
	rc = EXIT_ERROR;
	if (!ea->rd.keep &&
	    !(redact = cli_redactor(&cmd_report, ea->rd.kinds, ea->rd.rules, ea->rd.nrules, &bad)))
		goto out;
	if ((rc = diff_compare(&cmd_report, arg_a, arg_b, da, &d.a, &d.b, keep_item, &d, &d.t)))
		goto out;
	x.format = &ex_html;
	x.redact = redact;
	x.o = &opts;
	if (ea->rd.out) {
		struct stat so, sc;
		for (int k = 0; k < 2; k++)
			if (stat(ea->rd.out, &so) == 0 && stat(k ? d.b.path : d.a.path, &sc) == 0 &&
			    so.st_dev == sc.st_dev && so.st_ino == sc.st_ino) {
				rc = cli_usage_error(&cmd_report, "-o '%s' is a capture file itself",
						     ea->rd.out);
				goto out;
			}
	}
	/* (what the page's title says; each side's session is read with its own) */
	title = mt_asprintf("%s:%lld and %s:%lld", d.a.path, (long long)d.a.id, d.b.path, (long long)d.b.id);
	x.path = title;
	rc = ex_output(&x, &cmd_report, ea->rd.out, diff_body, &d);
out:
	if (x.format && x.format->release)
		x.format->release(&x);
	ex_sink_release(&x);
	mt_redact_free(redact);
	diff_side_release(&d.a);
	diff_side_release(&d.b);
	mt_map_release(&d.marks[0]);
	mt_map_release(&d.marks[1]);
	json_decref(d.items);
	json_decref(da->noise_sides);
	free(title);
	return rc;
}

static int run_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'},
		{"output", required_argument, NULL, 'o'},
		CLI_REDACT_LONGOPTS,
		{"diff", no_argument, NULL, 'd'},
		{"ignore", required_argument, NULL, 'i'},
		{"noise", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct ex_args a;
	struct diff_args da = {NULL, 0, NULL, 0, NULL};
	int c, r, diff = 0, rc;

	memset(&a, 0, sizeof(a));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:o:h", longopts, NULL)) != -1) {
		if ((r = cli_read_option(&cmd_report, &a.rd, c, optarg)) == 1 || diff_arg(&da, c, optarg))
			continue;
		if (r) {
			rc = r;
			goto out;
		}
		if (c == 'd') {
			diff = 1;
			continue;
		}
		if (c == 'h') {
			cli_help(&cmd_report, stdout);
			rc = EXIT_OK;
			goto out;
		}
		rc = cli_bad_option(&cmd_report, c, argv);
		goto out;
	}
	if (diff) {
		if (a.rd.path || a.rd.sid || a.rd.expr)
			rc = cli_usage_error(&cmd_report, "--diff takes its sessions as FILE[:ID] FILE[:ID], "
							  "not -r, -s or -Y");
		else if (argc - optind != 2)
			rc = cli_usage_error(&cmd_report, "--diff needs two sessions: FILE[:ID] FILE[:ID]");
		else
			rc = report_diff(&a, &da, argv[optind], argv[optind + 1]);
		goto out;
	}
	if (da.nignore || da.nnoise)
		rc = cli_usage_error(&cmd_report, "--ignore and --noise are for --diff");
	else if (optind < argc)
		rc = cli_usage_error(&cmd_report, "unexpected argument '%s'", argv[optind]);
	else
		rc = ex_run(&cmd_report, &ex_html, &a);
out:
	free(da.ignore);
	free(da.noise);
	return rc;
}
