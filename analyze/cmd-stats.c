/*
 * cmd-stats.c - `mcptap stats`: per-method counts, errors, cancels and latency
 * percentiles, requests never answered, and traffic each way, for a session;
 * tools/call, prompts/get and resources/read broken down by the tool, prompt
 * or resource they name.
 *
 * One pass over the session in seq order, with memory in proportion to the
 * requests still open, not to the session's length: an answer or a cancel
 * closes its request, and each row keeps its latencies in a log-bucketed
 * histogram (percentiles within 1%; count, min and max exact). Rows are
 * bounded too: past STATS_MAX_METHODS methods and STATS_MAX_NAMES names per
 * method, the rest are counted together in an "other" row.
 *
 * An answer is paired with its request as the tap recorded them; a request
 * is cancelled when its sender cancelled it before any answer came (as the
 * exchange view says), and an answer after the cancel counts nowhere.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/tally.h"
#include "cli.h"
#include "schema/filter.h"

static int run_stats(int argc, char **argv);

const struct cmd_entry cmd_stats = {
	.name = "stats",
	.summary = "per-method counts, errors and latency percentiles of a session",
	.usage = "mcptap stats -r FILE [-s LIST] [-Y EXPR] [-T text|json]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: the newest); each is counted on its own\n"
		   "  -Y, --filter EXPR     only the exchanges EXPR passes (a request, or its\n"
		   "                        answer): 'tool == search' (FILTERS in mcptap.1)\n"
		   "  -T, --format FORMAT   text (default) or json (one object on one line)\n"
		   "  -h, --help            this text\n"
		   "\n"
		   "Percentiles are within 1% of the exact value (a log-bucketed histogram);\n"
		   "counts, min and max are exact.\n",
	.run = run_stats,
};

static int each(const struct store_item *it, void *ctx)
{
	tally_feed(ctx, it);
	return 0;
}

/* ---- output ---- */

/* The columns text takes (a UTF-8 character is one). */
static int columns(const char *text)
{
	int cols = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		cols += (*p & 0xC0) != 0x80;
	return cols;
}

/* Print text padded with spaces to width columns, on the right (left: on the left). */
static void put_padded(const char *text, int width, int left)
{
	int pad = width - columns(text);

	for (; left && pad > 0; pad--)
		putchar(' ');
	fputs(text, stdout);
	for (; pad > 0; pad--)
		putchar(' ');
}

static const char *dir_text(int c2s)
{
	return c2s ? "c→s" : "s→c";
}

/* What a row names, escaped for a terminal: "tools/call", "  echo", "(other methods)". */
static const char *row_label(struct tally *s, const struct tally_row *r)
{
	mt_buf_reset(&s->text);
	if (!r->named) {
		if (r->method)
			mt_printable_append(&s->text, r->method, strlen(r->method));
		else
			mt_buf_puts(&s->text, "(other methods)");
	} else {
		mt_buf_puts(&s->text, "  ");
		if (r->name)
			mt_printable_append(&s->text, r->name, r->name_len);
		else
			mt_buf_puts(&s->text, "(other names)");
	}
	mt_buf_putc(&s->text, '\0');
	return s->text.data;
}

static void print_text(struct tally *s, const struct store_session_row *row)
{
	char dur[32], v[5][32];
	size_t *order = tally_order(s), nun;

	mt_format_duration(row->duration_ns >= 0 ? row->duration_ns : s->last_t - s->first_t, dur);
	printf("session %lld: %s, %lld messages c→s (%lld bytes), %lld s→c (%lld bytes), "
	       "%lld stderr lines\n",
	       (long long)row->id, dur, (long long)s->msgs[0], (long long)s->bytes[0], (long long)s->msgs[1],
	       (long long)s->bytes[1], (long long)s->stderr_lines);
	printf("DIR  %-32s %8s %7s %7s %9s %10s %9s %9s %9s %9s\n", "METHOD", "REQUESTS", "ERRORS", "ISERROR",
	       "CANCELLED", "UNANSWERED", "P50", "P95", "P99", "MAX");
	for (size_t k = 0; k < s->nrows; k++) {
		const struct tally_row *r = &s->rows[order[k]];
		static const int ps[4] = {50, 95, 99, 100};
		for (int j = 0; j < 4; j++)
			mt_format_duration(tally_percentile(&r->lat, ps[j]), v[j]);
		if (r->tool_call)
			snprintf(v[4], sizeof(v[4]), "%lld", (long long)r->is_error);
		else
			snprintf(v[4], sizeof(v[4]), "-");
		put_padded(dir_text(r->c2s), 4, 0);
		putchar(' ');
		put_padded(row_label(s, r), 32, 0);
		printf(" %8lld %7lld %7s %9lld %10lld", (long long)r->requests, (long long)r->errors, v[4],
		       (long long)r->cancelled, (long long)tally_unanswered(r));
		for (int j = 0; j < 4; j++) {
			putchar(' ');
			put_padded(r->lat.count ? v[j] : "-", 9, 1);
		}
		putchar('\n');
	}
	nun = tally_unanswered_list(s);
	if (nun)
		printf("never answered:\n");
	for (size_t i = 0; i < nun; i++) {
		const struct tally_open *q = &s->open[i];
		printf("  #%lld %s %s", (long long)q->seq, dir_text(s->rows[q->row].c2s),
		       row_label(s, &s->rows[q->row]));
		if (q->named != SIZE_MAX && s->rows[q->named].name)
			printf(" %s", row_label(s, &s->rows[q->named]) + 2);
		putchar('\n');
	}
	if (s->invalid[0] || s->invalid[1])
		printf("not JSON-RPC: %lld lines c→s, %lld s→c\n", (long long)s->invalid[0],
		       (long long)s->invalid[1]);
	free(order);
}

/* A JSON string of n bytes (invalid UTF-8, from a foreign file: made valid). */
static json_t *json_text(struct tally *s, const char *p, size_t n)
{
	json_t *j = json_stringn(p, n);

	if (!j) {
		mt_utf8_lossy(p, n, &s->key);
		j = json_stringn(s->key.data ? s->key.data : "", s->key.len);
	}
	return j;
}

static json_t *row_json(struct tally *s, const struct tally_row *r)
{
	json_t *j = json_object();

	if (!r->named) {
		json_object_set_new(j, "dir", json_string(r->c2s ? "c2s" : "s2c"));
		json_object_set_new(j, "method",
				    r->method ? json_text(s, r->method, strlen(r->method)) : json_null());
	} else {
		json_object_set_new(j, "name", r->name ? json_text(s, r->name, r->name_len) : json_null());
	}
	if ((r->named && !r->name) || (!r->named && !r->method))
		json_object_set_new(j, "other", json_true());
	json_object_set_new(j, "requests", json_integer(r->requests));
	json_object_set_new(j, "errors", json_integer(r->errors));
	if (r->tool_call)
		json_object_set_new(j, "is_error", json_integer(r->is_error));
	json_object_set_new(j, "answered", json_integer(r->answered));
	json_object_set_new(j, "unanswered", json_integer(tally_unanswered(r)));
	json_object_set_new(j, "cancelled", json_integer(r->cancelled));
	if (r->lat.count) {
		json_object_set_new(j, "min_ns", json_integer(r->lat.min));
		json_object_set_new(j, "p50_ns", json_integer(tally_percentile(&r->lat, 50)));
		json_object_set_new(j, "p95_ns", json_integer(tally_percentile(&r->lat, 95)));
		json_object_set_new(j, "p99_ns", json_integer(tally_percentile(&r->lat, 99)));
		json_object_set_new(j, "max_ns", json_integer(r->lat.max));
	}
	return j;
}

static json_t *pair(int64_t c2s, int64_t s2c)
{
	return json_pack("{s:I,s:I}", "c2s", (json_int_t)c2s, "s2c", (json_int_t)s2c);
}

static void print_json(struct tally *s, const struct store_session_row *row)
{
	json_t *o = json_object(), *methods = json_array(), *un = json_array(), *m = NULL;
	size_t *order = tally_order(s), nun;

	json_object_set_new(o, "session", json_integer(row->id));
	json_object_set_new(o, "duration_ns",
			    json_integer(row->duration_ns >= 0 ? row->duration_ns : s->last_t - s->first_t));
	json_object_set_new(o, "messages", pair(s->msgs[0], s->msgs[1]));
	json_object_set_new(o, "bytes", pair(s->bytes[0], s->bytes[1]));
	json_object_set_new(o, "notifications", pair(s->notifications[0], s->notifications[1]));
	json_object_set_new(o, "not_jsonrpc", pair(s->invalid[0], s->invalid[1]));
	json_object_set_new(o, "stderr_lines", json_integer(s->stderr_lines));
	for (size_t k = 0; k < s->nrows; k++) {
		const struct tally_row *r = &s->rows[order[k]];
		if (!r->named) {
			m = row_json(s, r);
			if (r->subject)
				json_object_set_new(m, "names", json_array());
			json_array_append_new(methods, m);
		} else {
			json_array_append_new(json_object_get(m, "names"), row_json(s, r));
		}
	}
	json_object_set_new(o, "methods", methods);
	nun = tally_unanswered_list(s);
	for (size_t i = 0; i < nun; i++) {
		const struct tally_open *q = &s->open[i];
		const struct tally_row *r = &s->rows[q->row];
		json_t *j = json_object();
		json_object_set_new(j, "seq", json_integer(q->seq));
		json_object_set_new(j, "dir", json_string(r->c2s ? "c2s" : "s2c"));
		json_object_set_new(j, "method",
				    r->method ? json_text(s, r->method, strlen(r->method)) : json_null());
		if (q->named != SIZE_MAX && s->rows[q->named].name)
			json_object_set_new(j, "name",
					    json_text(s, s->rows[q->named].name, s->rows[q->named].name_len));
		json_array_append_new(un, j);
	}
	json_object_set_new(o, "unanswered", un);
	json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(o);
	free(order);
}

/* One session's figures, printed. 0, or -1 (said). */
static int stats_session(struct store *st, const char *path, int64_t id, int json, int more)
{
	struct tally s;
	struct store_session_row row;
	struct mt_err err = {"", 0};
	int rc = -1;

	tally_init(&s);
	memset(&row, 0, sizeof(row));
	/* Unpaired: the latencies come from the open requests' clocks, with no join. */
	if (store_session_get(st, id, &row, &err) || store_each_item_ex(st, id, 0, each, &s, &err) < 0) {
		mt_error("cannot read '%s': %s", path, err.msg);
		goto out;
	}
	if (json) {
		print_json(&s, &row);
	} else {
		if (more)
			putchar('\n');
		print_text(&s, &row);
	}
	rc = 0;
out:
	tally_release(&s);
	store_session_row_release(&row);
	return rc;
}

static int run_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},   {"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'}, {"format", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	struct store *st = NULL;
	struct cli_read rd = {.format = "text"};
	struct mt_filter *filter = NULL;
	int64_t *ids = NULL;
	size_t nids = 0;
	int c, rc = EXIT_ERROR;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:T:h", longopts, NULL)) != -1) {
		if (cli_read_option(&cmd_stats, &rd, c, optarg))
			continue;
		switch (c) {
		case 'h': cli_help(&cmd_stats, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_stats, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_stats, "unexpected argument '%s'", argv[optind]);
	if (strcmp(rd.format, "text") && strcmp(rd.format, "json"))
		return cli_usage_error(&cmd_stats, "unknown format '%s' (text or json)", rd.format);
	if (cli_read_check(&cmd_stats, &rd))
		return EXIT_ERROR;
	if (rd.expr && !(filter = cli_filter(&cmd_stats, rd.expr)))
		return EXIT_ERROR;
	if (cli_open_capture(rd.path, &st) || cli_pick_sessions(st, rd.path, rd.sid, CLI_NEWEST, &ids, &nids))
		goto out;
	store_set_filter(st, filter, STORE_FILTER_PAIRS);
	for (size_t k = 0; k < nids; k++)
		if (stats_session(st, rd.path, ids[k], !strcmp(rd.format, "json"), k > 0))
			goto out;
	rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out:
	free(ids);
	mt_filter_free(filter);
	store_close(st);
	return rc;
}
