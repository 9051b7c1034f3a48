/*
 * cmd-stats.c - `mcptap stats`: per-method counts, errors and latency
 * percentiles, requests never answered, and traffic each way, for a session.
 * Answers are paired with their requests as the tap recorded them.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/cli.h"
#include "schema/map.h"

static int run_stats(int argc, char **argv);

const struct cmd_entry cmd_stats = {
	.name = "stats",
	.summary = "per-method counts, errors and latency percentiles of a session",
	.usage = "mcptap stats -r FILE [-s ID] [-T text|json]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session ID      the session (default: the newest)\n"
		   "  -T, --format FORMAT   text (default) or json\n"
		   "  -h, --help            this text\n",
	.run = run_stats,
};

/* One (direction, method) pair. */
struct method_stat {
	char *dir;          /* owned: c2s | s2c (the requester's direction) */
	char *method;       /* owned */
	int64_t requests;
	int64_t errors;     /* answered with an error */
	int64_t answered;
	int64_t *lat;       /* owned: latencies of the answers, ns */
	size_t nlat, caplat;
};

/* A request not yet answered. */
struct pending {
	int64_t seq;
	size_t stat;        /* its method_stat */
	int answered;
};

struct stats {
	struct method_stat *m;
	size_t nm, capm;
	struct mt_map by_name;  /* "dir method" -> index into m */
	struct pending *p;
	size_t np, capp;
	struct mt_map by_seq;   /* request seq -> index into p */
	int64_t msgs[2], bytes[2], notifications[2], stderr_lines, invalid[2];
	int64_t first_t, last_t;
	struct mt_buf key;
};

static size_t stat_for(struct stats *s, const char *dir, const char *method)
{
	int64_t idx;

	mt_buf_reset(&s->key);
	mt_buf_printf(&s->key, "%s %s", dir, method);
	if (mt_map_get(&s->by_name, s->key.data, s->key.len, &idx))
		return (size_t)idx;
	if (s->nm == s->capm) {
		s->capm = s->capm ? s->capm * 2 : 16;
		s->m = mt_realloc(s->m, s->capm * sizeof(*s->m));
	}
	memset(&s->m[s->nm], 0, sizeof(s->m[s->nm]));
	s->m[s->nm].dir = mt_strdup(dir);
	s->m[s->nm].method = mt_strdup(method);
	mt_map_put(&s->by_name, s->key.data, s->key.len, (int64_t)s->nm);
	return s->nm++;
}

static int each(const struct store_item *it, void *ctx)
{
	struct stats *s = ctx;
	int d;

	if (it->type == STORE_ITEM_STDERR) {
		s->stderr_lines++;
		return 0;
	}
	if (it->type != STORE_ITEM_MESSAGE)
		return 0;
	d = strcmp(it->dir, "c2s") ? 1 : 0;
	if (!s->msgs[0] && !s->msgs[1])
		s->first_t = it->t_ns;
	s->last_t = it->t_ns;
	s->msgs[d]++;
	s->bytes[d] += it->size;
	if (!strcmp(it->kind, "notification"))
		s->notifications[d]++;
	else if (!strcmp(it->kind, "invalid") || !strcmp(it->kind, "notjsonrpc"))
		s->invalid[d]++;
	if (!strcmp(it->kind, "request")) {
		size_t k = stat_for(s, it->dir, it->method ? it->method : "");
		s->m[k].requests++;
		if (s->np == s->capp) {
			s->capp = s->capp ? s->capp * 2 : 64;
			s->p = mt_realloc(s->p, s->capp * sizeof(*s->p));
		}
		s->p[s->np] = (struct pending){it->seq, k, 0};
		mt_map_put(&s->by_seq, &it->seq, sizeof(it->seq), (int64_t)s->np);
		s->np++;
	} else if (it->request_seq > 0) {
		int64_t idx;
		if (!mt_map_get(&s->by_seq, &it->request_seq, sizeof(it->request_seq), &idx) ||
		    s->p[idx].answered)
			return 0;
		struct method_stat *ms = &s->m[s->p[idx].stat];
		s->p[idx].answered = 1;
		ms->answered++;
		if (!strcmp(it->kind, "error"))
			ms->errors++;
		if (ms->nlat == ms->caplat) {
			ms->caplat = ms->caplat ? ms->caplat * 2 : 16;
			ms->lat = mt_realloc(ms->lat, ms->caplat * sizeof(*ms->lat));
		}
		ms->lat[ms->nlat++] = it->latency_ns;
	}
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The p-th percentile (nearest rank) of sorted v; -1 when empty. */
static int64_t percentile(const int64_t *v, size_t n, int p)
{
	size_t rank;

	if (!n)
		return -1;
	rank = ((size_t)p * n + 99) / 100;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

static int cmp_stat(const void *a, const void *b)
{
	const struct method_stat *x = a, *y = b;
	int c = strcmp(x->dir, y->dir);

	return c ? c : strcmp(x->method, y->method);
}

static void print_text(struct stats *s, const struct store_session_row *row)
{
	char dur[32], a[32], b[32], c[32];
	int64_t unanswered = 0;

	cli_format_duration(row->duration_ns >= 0 ? row->duration_ns : s->last_t - s->first_t, dur);
	printf("session %lld: %s, %lld messages c→s (%lld bytes), %lld s→c (%lld bytes), "
	       "%lld stderr lines\n",
	       (long long)row->id, dur, (long long)s->msgs[0], (long long)s->bytes[0],
	       (long long)s->msgs[1], (long long)s->bytes[1], (long long)s->stderr_lines);
	printf("%-4s %-32s %8s %7s %10s %10s %10s %10s\n", "DIR", "METHOD", "REQUESTS", "ERRORS",
	       "UNANSWERED", "P50", "P95", "P99");
	for (size_t i = 0; i < s->nm; i++) {
		struct method_stat *m = &s->m[i];
		cli_format_duration(percentile(m->lat, m->nlat, 50), a);
		cli_format_duration(percentile(m->lat, m->nlat, 95), b);
		cli_format_duration(percentile(m->lat, m->nlat, 99), c);
		printf("%-4s %-32s %8lld %7lld %10lld %10s %10s %10s\n",
		       !strcmp(m->dir, "c2s") ? "c→s" : "s→c", m->method, (long long)m->requests,
		       (long long)m->errors, (long long)(m->requests - m->answered), m->nlat ? a : "-",
		       m->nlat ? b : "-", m->nlat ? c : "-");
	}
	for (size_t i = 0; i < s->np; i++) {
		if (s->p[i].answered)
			continue;
		if (!unanswered++)
			printf("never answered:\n");
		printf("  #%lld %s %s\n", (long long)s->p[i].seq,
		       !strcmp(s->m[s->p[i].stat].dir, "c2s") ? "c→s" : "s→c",
		       s->m[s->p[i].stat].method);
	}
	if (s->invalid[0] || s->invalid[1])
		printf("not JSON-RPC: %lld lines c→s, %lld s→c\n", (long long)s->invalid[0],
		       (long long)s->invalid[1]);
}

static void print_json(struct stats *s, const struct store_session_row *row)
{
	json_t *o = json_object(), *methods = json_array(), *un = json_array();

	json_object_set_new(o, "session", json_integer(row->id));
	json_object_set_new(o, "duration_ns",
			    json_integer(row->duration_ns >= 0 ? row->duration_ns : s->last_t - s->first_t));
	json_object_set_new(o, "messages", json_pack("{s:I,s:I}", "c2s", (json_int_t)s->msgs[0],
						      "s2c", (json_int_t)s->msgs[1]));
	json_object_set_new(o, "bytes", json_pack("{s:I,s:I}", "c2s", (json_int_t)s->bytes[0],
						   "s2c", (json_int_t)s->bytes[1]));
	json_object_set_new(o, "notifications",
			    json_pack("{s:I,s:I}", "c2s", (json_int_t)s->notifications[0], "s2c",
				      (json_int_t)s->notifications[1]));
	json_object_set_new(o, "not_jsonrpc", json_pack("{s:I,s:I}", "c2s", (json_int_t)s->invalid[0],
							 "s2c", (json_int_t)s->invalid[1]));
	json_object_set_new(o, "stderr_lines", json_integer(s->stderr_lines));
	for (size_t i = 0; i < s->nm; i++) {
		struct method_stat *m = &s->m[i];
		json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "dir", m->dir, "method", m->method,
				      "requests", (json_int_t)m->requests, "errors",
				      (json_int_t)m->errors, "answered", (json_int_t)m->answered,
				      "unanswered", (json_int_t)(m->requests - m->answered));
		if (m->nlat) {
			json_object_set_new(j, "p50_ns", json_integer(percentile(m->lat, m->nlat, 50)));
			json_object_set_new(j, "p95_ns", json_integer(percentile(m->lat, m->nlat, 95)));
			json_object_set_new(j, "p99_ns", json_integer(percentile(m->lat, m->nlat, 99)));
			json_object_set_new(j, "max_ns", json_integer(m->lat[m->nlat - 1]));
		}
		json_array_append_new(methods, j);
	}
	json_object_set_new(o, "methods", methods);
	for (size_t i = 0; i < s->np; i++)
		if (!s->p[i].answered)
			json_array_append_new(un, json_pack("{s:I,s:s,s:s}", "seq", (json_int_t)s->p[i].seq,
							    "dir", s->m[s->p[i].stat].dir, "method",
							    s->m[s->p[i].stat].method));
	json_object_set_new(o, "unanswered", un);
	json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(o);
}

static int run_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct stats s;
	struct store *st = NULL;
	struct store_session_row row;
	struct mt_err err = {"", 0};
	const char *path = NULL, *format = "text", *sid = NULL;
	int64_t id;
	int c, rc = EXIT_ERROR;

	memset(&s, 0, sizeof(s));
	memset(&row, 0, sizeof(row));
	mt_map_init(&s.by_name, 0);
	mt_map_init(&s.by_seq, 0);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': path = optarg; break;
		case 's': sid = optarg; break;
		case 'T': format = optarg; break;
		case 'h': cli_help(&cmd_stats, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_stats, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_stats, "unexpected argument '%s'", argv[optind]);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return cli_usage_error(&cmd_stats, "unknown format '%s' (text or json)", format);
	if (!(path = cli_capture_path(path)))
		return cli_usage_error(&cmd_stats, "no capture file: give -r FILE or set MCPTAP_FILE");
	if (cli_open_capture(path, &st) || cli_pick_session(st, path, sid, &id))
		goto out;
	if (store_session_get(st, id, &row, &err) || store_each_item(st, id, each, &s, &err) < 0) {
		mt_error("cannot read '%s': %s", path, err.msg);
		goto out;
	}
	/* (qsort and memcpy never get NULL: a method with no answered request has
	 * no latencies, a session with no request no methods.) */
	for (size_t i = 0; i < s.nm; i++)
		if (s.m[i].nlat)
			qsort(s.m[i].lat, s.m[i].nlat, sizeof(int64_t), cmp_i64);
	/* Sort the methods; pending entries point at them by index, so remap. */
	{
		size_t *order = mt_calloc(s.nm ? s.nm : 1, sizeof(*order));
		struct method_stat *copy = mt_calloc(s.nm ? s.nm : 1, sizeof(*copy));
		if (s.nm) {
			memcpy(copy, s.m, s.nm * sizeof(*copy));
			qsort(s.m, s.nm, sizeof(*s.m), cmp_stat);
		}
		for (size_t i = 0; i < s.nm; i++)
			for (size_t j = 0; j < s.nm; j++)
				if (copy[i].dir == s.m[j].dir && copy[i].method == s.m[j].method)
					order[i] = j;
		for (size_t i = 0; i < s.np; i++)
			s.p[i].stat = order[s.p[i].stat];
		free(order);
		free(copy);
	}
	if (!strcmp(format, "json"))
		print_json(&s, &row);
	else
		print_text(&s, &row);
	rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out:
	for (size_t i = 0; i < s.nm; i++) {
		free(s.m[i].dir);
		free(s.m[i].method);
		free(s.m[i].lat);
	}
	free(s.m);
	free(s.p);
	mt_map_release(&s.by_name);
	mt_map_release(&s.by_seq);
	mt_buf_release(&s.key);
	store_session_row_release(&row);
	store_close(st);
	return rc;
}
