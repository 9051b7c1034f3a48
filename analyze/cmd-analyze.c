/*
 * cmd-analyze.c - `mcptap analyze`: check captured sessions against the
 * protocol rules of their revision, report like a compiler (or as JSON, SARIF,
 * JUnit), store the findings in the capture file, and exit non-zero when a
 * finding at or above --fail-on exists.
 *
 * Findings are never all in memory: the engine hands each one over as it is
 * made (an_engine_set_sink), the report prints it or keeps it on disk
 * (report.h), and it goes into the capture file in small batches.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/report.h"
#include "cli.h"
#include "schema/filter.h"
#include "schema/map.h"

static int run_analyze(int argc, char **argv);

const struct cmd_entry cmd_analyze = {
	.name = "analyze",
	.summary = "check captured sessions against the MCP rules of their protocol revision",
	.usage = "mcptap analyze -r FILE [-s LIST | --all] [-Y EXPR] [-T text|json|sarif|junit] "
		 "[--fail-on error|warning|info|never] [--spec REVISION] [--rules LIST | "
		 "--skip-rules LIST] [--max-per-rule N] [--timeout DURATION] [--no-store]\n"
		 "mcptap analyze --list-rules [-T text|json]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: every session in the file)\n"
		   "      --all             the same as -s all\n"
		   "  -Y, --filter EXPR     report only the findings on messages EXPR passes (and\n"
		   "                        those on the session, where one passes); every rule\n"
		   "                        still sees every message, and all are stored\n"
		   "  -T, --format FORMAT   text (default), json, sarif (2.1.0) or junit (XML);\n"
		   "                        --list-rules: text or json (an object per line)\n"
		   "      --fail-on LEVEL   exit 1 when a finding at or above LEVEL exists:\n"
		   "                        error (default), warning, info, or never\n"
		   "      --spec REVISION   check against REVISION (2024-11-05, 2025-03-26,\n"
		   "                        2025-06-18, 2025-11-25, 2026-07-28), not the negotiated one\n"
		   "      --rules LIST      run only these rules (ids or prefixes: CAP,LIFE-001)\n"
		   "      --skip-rules LIST run all rules but these\n"
		   "      --max-per-rule N  report at most N findings of each rule (all are\n"
		   "                        counted, and stored in the file)\n"
		   "      --timeout DURATION  a request unanswered this long is late (LIFE-015)\n"
		   "      --no-store        do not store the findings in the capture file (a file\n"
		   "                        that cannot be written is analyzed without storing)\n"
		   "      --list-rules      print the rule table and exit\n"
		   "  -h, --help            this text\n"
		   "\n"
		   "A DURATION is a number with a unit, ns, us, ms, s, m or h (500ms, 1.5s); a\n"
		   "bare number is ms. --timeout-ms N, the older name of --timeout, still works.\n"
		   "\n"
		   "Exit status: 0 when no finding is at or above --fail-on, 1 when one is,\n"
		   "2 on a usage error or a file that cannot be read.\n",
	.run = run_analyze,
};

static const char *versions_text(unsigned mask, char *out, size_t n)
{
	size_t len = 0;

	out[0] = '\0';
	if ((mask & AN_ALL4) == AN_ALL4) {
		len += (size_t)snprintf(out, n, "all4");
		mask &= ~AN_ALL4;
	}
	for (int v = 0; v < AN_VERSION_COUNT && len < n; v++)
		if (mask & AN_V(v))
			len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "",
						an_version_name((enum an_version)v));
	return out;
}

static const char *severity_text(const struct an_rule *r)
{
	switch (r->sev_policy) {
	case AN_SEV_MUST_0618: return "warn>error";
	case AN_SEV_MUST_0326: return r->sev == AN_ERROR ? "info>error" : "info>warn";
	default: return an_severity_name(r->sev);
	}
}

/* The first item of a --rules/--skip-rules list that names no rule (in item), or NULL. */
static const char *unmatched_item(const char *list, char *item, size_t cap)
{
	size_t n;
	const struct an_rule *const *rules = an_rules(&n);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		int hit = 0;
		snprintf(item, cap, "%.*s", (int)(end ? (size_t)(end - p) : strlen(p)), p);
		for (size_t i = 0; i < n && !hit; i++)
			hit = an_rule_listed(item, rules[i]->id);
		if (!hit && item[strspn(item, " ")])
			return item;
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

/* The rule table: text columns, or (json) one JSON object per rule per line. */
static int list_rules(int json)
{
	size_t n;
	const struct an_rule *const *rules = an_rules(&n);

	if (!json)
		printf("%-10s %-10s %-36s %s\n", "RULE", "SEVERITY", "REVISIONS", "SUMMARY");
	for (size_t i = 0; i < n; i++) {
		const struct an_rule *r = rules[i];
		char vers[96];
		if (!json) {
			printf("%-10s %-10s %-36s %s%s\n", r->id, severity_text(r),
			       versions_text(r->versions, vers, sizeof(vers)), r->summary,
			       r->check ? "" : " [not checked on its own]");
			continue;
		}
		json_t *o = json_object(), *v = json_array();
		for (int k = 0; k < AN_VERSION_COUNT; k++)
			if (r->versions & AN_V(k))
				json_array_append_new(v, json_string(an_version_name((enum an_version)k)));
		json_object_set_new(o, "id", json_string(r->id));
		json_object_set_new(o, "severity", json_string(severity_text(r)));
		json_object_set_new(o, "revisions", v);
		json_object_set_new(o, "summary", json_string(r->summary));
		json_object_set_new(o, "checked", json_boolean(r->check != NULL));
		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(o);
	}
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
}

/*
 * The capture file's side of a run: each session's analysis row and its
 * findings, stored as they come. Findings wait in a small batch (bounded:
 * KEEP_BATCH of them, KEEP_BYTES of text) and a batch is stored in one short
 * transaction, committed in 50 ms slices (store_slice), so that a tap
 * recording into the file meanwhile never waits long: the file is held only
 * while a batch goes in, never while the walk reads on. The analysis counts
 * as complete (latest_finding) once its last batch is in.
 */
#define KEEP_BATCH 1024
#define KEEP_BYTES (1 << 20)

struct kept {
	const char *rule; /* the rule's id (static) */
	enum an_severity sev;
	int64_t seq;
	size_t text;    /* offsets into keep.text */
	size_t related; /* SIZE_MAX: none */
};

struct keep {
	struct store *st; /* borrowed: the writing connection; NULL: not storing */
	const char *path;
	const char *rules; /* store_analysis.rules (borrowed) */
	int64_t session;
	int64_t started_wall;
	int64_t analysis;             /* its row, 0 until stored */
	const struct an_state *state; /* borrowed: the session's engine state */
	int64_t c[AN_SEVERITY_COUNT];
	struct kept *v; /* owned: the batch */
	size_t n;
	struct mt_buf text; /* the batch's texts and related lists */
};

static void keep_begin(struct keep *k, int64_t session, const struct an_state *state)
{
	k->session = session;
	k->state = state;
	k->analysis = 0;
	k->n = 0;
	memset(k->c, 0, sizeof(k->c));
	k->started_wall = mt_wall_us();
	mt_buf_reset(&k->text);
}

/*
 * Store the batch; with done, the analysis's end too. A failure is said once
 * and ends the storing (the report goes on).
 */
static void keep_flush(struct keep *k, int done)
{
	struct mt_err err = {"", 0};
	struct store_analysis a;
	int rc = -1;

	if (!k->st || (!k->n && !done))
		return;
	memset(&a, 0, sizeof(a));
	a.session = k->session;
	a.started_wall = k->started_wall;
	a.spec = an_version_name(k->state->version);
	a.spec_source = k->state->version_source;
	a.errors = k->c[AN_ERROR];
	a.warnings = k->c[AN_WARNING];
	a.infos = k->c[AN_INFO];
	a.rules = k->rules;
	if (store_begin(k->st, &err) || (!k->analysis && store_add_analysis(k->st, &a, &k->analysis, &err)))
		goto out;
	for (size_t i = 0; i < k->n; i++) {
		const struct kept *f = &k->v[i];
		if (store_add_finding(k->st, k->analysis, k->session, f->rule, an_severity_name(f->sev),
				      f->seq, f->related == SIZE_MAX ? NULL : k->text.data + f->related,
				      k->text.data + f->text, &err) ||
		    store_slice(k->st, &err))
			goto out;
	}
	if ((done && store_analysis_finish(k->st, k->analysis, &a, &err)) || store_commit(k->st, &err))
		goto out;
	rc = 0;
out:
	if (rc) {
		store_rollback(k->st);
		mt_warn("cannot store the findings in '%s': %s", k->path, err.msg);
		k->st = NULL;
	}
	k->n = 0;
	mt_buf_reset(&k->text);
}

static void keep_finding(struct keep *k, const struct an_finding *f)
{
	struct kept *kf;

	k->c[f->sev]++;
	if (!k->st)
		return;
	kf = &k->v[k->n++];
	kf->rule = f->rule->id;
	kf->sev = f->sev;
	kf->seq = f->seq;
	kf->related = SIZE_MAX;
	if (f->nrelated) {
		kf->related = k->text.len;
		mt_buf_putc(&k->text, '[');
		for (size_t j = 0; j < f->nrelated; j++)
			mt_buf_printf(&k->text, "%s%lld", j ? "," : "", (long long)f->related[j]);
		mt_buf_append(&k->text, "]", 2); /* with its NUL */
	}
	kf->text = k->text.len;
	mt_buf_append(&k->text, f->text, strlen(f->text) + 1);
	if (k->n == KEEP_BATCH || k->text.len >= KEEP_BYTES)
		keep_flush(k, 0);
}

/* One session's walk: items to the engine, findings to the report and the file. */
struct walk {
	struct an_engine *e;
	struct report *rep;
	struct keep *keep;
	enum an_severity fail_on;
	int fail_never;
	int failing;        /* a finding at or above --fail-on was made */
	int filtered;       /* -Y: only findings on what passes are reported */
	struct mt_map pass; /* -Y: the seqs of the messages it passes, and of their
			     * HTTP exchanges */
};

static void sink(const struct an_finding *f, void *ctx)
{
	struct walk *w = ctx;
	int64_t v;

	keep_finding(w->keep, f);
	/* (On the session: reported when something in it passes.) */
	if (w->filtered && (f->seq ? !mt_map_get(&w->pass, &f->seq, sizeof(f->seq), &v) : w->pass.len == 0))
		return;
	report_finding(w->rep, f);
	if (!w->fail_never && f->sev >= w->fail_on)
		w->failing = 1;
}

static int pass_item(const struct store_item *it, void *ctx)
{
	struct mt_map *m = ctx;

	mt_map_put(m, &it->seq, sizeof(it->seq), 1);
	if (it->exchange)
		mt_map_put(m, &it->exchange, sizeof(it->exchange), 1);
	return 0;
}

/* -Y: the seqs of session id's messages the filter passes, and of their exchanges, into w. */
static int pick_seqs(struct store *st, struct mt_filter *f, int64_t id, struct walk *w, const char *path)
{
	struct mt_err err = {"", 0};
	int rc;

	w->filtered = 1;
	mt_map_init(&w->pass, 0);
	store_set_filter(st, f, 0);
	rc = store_each_item_ex(st, id, 0, pass_item, &w->pass, &err);
	store_set_filter(st, NULL, 0);
	if (rc < 0) {
		mt_error("cannot read session %lld of '%s': %s", (long long)id, path, err.msg);
		return -1;
	}
	return 0;
}

static int feed(const struct store_item *it, void *ctx)
{
	struct walk *w = ctx;

	report_item(w->rep, it->seq);
	an_engine_feed(w->e, it);
	return 0;
}

/*
 * The rules that run, comma-separated, when --rules or --skip-rules leaves
 * some out (owned; NULL when every rule runs).
 */
static char *rules_run(const struct an_options *o)
{
	size_t n, ran = 0, checked = 0;
	const struct an_rule *const *rules = an_rules(&n);
	struct mt_buf b = MT_BUF_INIT;

	if (!o->only && !o->skip)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!rules[i]->check)
			continue;
		checked++;
		if ((o->only && !an_rule_listed(o->only, rules[i]->id)) ||
		    (o->skip && an_rule_listed(o->skip, rules[i]->id)))
			continue;
		mt_buf_printf(&b, "%s%s", ran++ ? "," : "", rules[i]->id);
	}
	if (ran == checked) {
		mt_buf_release(&b);
		return NULL;
	}
	if (!b.data)
		mt_buf_putc(&b, '\0'); /* none ran: "" */
	return b.data;
}

/*
 * Why the findings cannot be stored in path, into why (0: they may be tried).
 * A file of another user is not written (its -wal and -shm files would be
 * ours), nor one that this process may not write or that is on read-only
 * media, nor one whose directory cannot take its -wal and -shm files.
 */
static int cannot_store(const char *path, char *why, size_t n)
{
	struct stat sb;
	char *dir, *slash;
	int rc = 0;

	if (stat(path, &sb) != 0)
		return 0; /* opening it says why */
	if (sb.st_uid != geteuid()) {
		snprintf(why, n, "the file belongs to another user");
		return 1;
	}
	if (access(path, W_OK) != 0) {
		snprintf(why, n, "%s", strerror(errno));
		return 1;
	}
	dir = mt_strdup(path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, strlen(dir) + 1, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (access(dir, W_OK) != 0) {
		char *wal = mt_asprintf("%s-wal", path), *shm = mt_asprintf("%s-shm", path);
		if (access(wal, W_OK) != 0 || access(shm, W_OK) != 0) {
			snprintf(why, n, "its directory cannot hold its -wal and -shm files (%s)",
				 strerror(errno));
			rc = 1;
		}
		free(wal);
		free(shm);
	}
	free(dir);
	return rc;
}

/* What analyze's command line says. */
struct analyze_cli {
	struct an_options ao;
	struct report_opts ro;
	struct cli_read rd;
	struct mt_filter *filter; /* -Y (owned) */
	int all, no_store;
};

/* The report format -T names; -1 (after saying why) when none. */
static int report_format(const char *name)
{
	static const char *const names[] = {[REPORT_TEXT] = "text",
					    [REPORT_JSON] = "json",
					    [REPORT_SARIF] = "sarif",
					    [REPORT_JUNIT] = "junit"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	cli_usage_error(&cmd_analyze, "unknown format '%s' (text, json, sarif, junit)", name);
	return -1;
}

/* --fail-on LEVEL into ro; -1 after saying why. */
static int fail_level(const char *level, struct report_opts *ro)
{
	if (!strcmp(level, "never"))
		ro->fail_never = 1;
	else if (!strcmp(level, "error"))
		ro->fail_on = AN_ERROR;
	else if (!strcmp(level, "warning"))
		ro->fail_on = AN_WARNING;
	else if (!strcmp(level, "info"))
		ro->fail_on = AN_INFO;
	else
		return cli_usage_error(&cmd_analyze, "bad --fail-on '%s' (error, warning, info, never)",
				       level);
	return 0;
}

/*
 * Read analyze's command line into a. Returns -1 when the sessions are to be
 * analyzed, or the exit status when the command is done (--help,
 * --list-rules, a usage error said).
 */
static int analyze_options(int argc, char **argv, struct analyze_cli *a)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'},
		{"all", no_argument, NULL, 'A'},
		{"format", required_argument, NULL, 'T'},
		{"fail-on", required_argument, NULL, 'F'},
		{"spec", required_argument, NULL, 'S'},
		{"rules", required_argument, NULL, 'R'},
		{"skip-rules", required_argument, NULL, 'K'},
		{"timeout", required_argument, NULL, 'O'},
		{"timeout-ms", required_argument, NULL, 'O'}, /* (its older name) */
		{"max-per-rule", required_argument, NULL, 'M'},
		{"no-store", no_argument, NULL, 'N'},
		{"list-rules", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct an_options *ao = &a->ao;
	const char *fail_on = "error";
	int list = 0, c, li, format;
	int64_t n, ns;

	optind = 1;
	opterr = 0;
	while ((li = -1, c = getopt_long(argc, argv, ":r:s:Y:T:h", longopts, &li)) != -1) {
		if (cli_read_option(&cmd_analyze, &a->rd, c, optarg))
			continue;
		switch (c) {
		case 'A': a->all = 1; break;
		case 'F': fail_on = optarg; break;
		case 'S':
			if (an_version_parse(optarg, &ao->version))
				return cli_usage_error(&cmd_analyze, "unknown revision '%s'", optarg);
			ao->force_version = 1;
			break;
		case 'R': ao->only = optarg; break;
		case 'K': ao->skip = optarg; break;
		case 'O':
			if (mt_parse_duration(optarg, MT_MS, &ns) || ns <= 0)
				return cli_usage_error(&cmd_analyze,
						       "bad --%s '%s' (a duration above 0: "
						       "500ms, 2s; a bare number is ms)",
						       li >= 0 ? longopts[li].name : "timeout", optarg);
			ao->timeout_ns = ns;
			break;
		case 'M':
			if (mt_parse_int64(optarg, &n) || n <= 0)
				return cli_usage_error(&cmd_analyze, "bad --max-per-rule '%s'", optarg);
			a->ro.max_per_rule = (size_t)n;
			break;
		case 'N': a->no_store = 1; break;
		case 'L': list = 1; break;
		case 'h': cli_help(&cmd_analyze, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_analyze, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_analyze, "unexpected argument '%s'", argv[optind]);
	if ((format = report_format(a->rd.format)) < 0)
		return EXIT_ERROR;
	a->ro.format = (enum report_format)format;
	if (list) {
		if (a->ro.format != REPORT_TEXT && a->ro.format != REPORT_JSON)
			return cli_usage_error(&cmd_analyze, "--list-rules prints text or json");
		return list_rules(a->ro.format == REPORT_JSON);
	}
	if (fail_level(fail_on, &a->ro))
		return EXIT_ERROR;
	if (ao->only && ao->skip)
		return cli_usage_error(&cmd_analyze, "--rules and --skip-rules exclude each other");
	for (int k = 0; k < 2; k++) {
		char item[64];
		const char *l = k ? ao->skip : ao->only;
		if (l && unmatched_item(l, item, sizeof(item)))
			return cli_usage_error(&cmd_analyze, "%s: '%s' names no rule (see --list-rules)",
					       k ? "--skip-rules" : "--rules", item);
	}
	if (a->all && a->rd.sid)
		return cli_usage_error(&cmd_analyze, "-s and --all exclude each other");
	if (cli_read_check(&cmd_analyze, &a->rd))
		return EXIT_ERROR;
	if (a->rd.expr && !(a->filter = cli_filter(&cmd_analyze, a->rd.expr)))
		return EXIT_ERROR;
	return -1;
}

/* The rows of the sessions -s (or --all) names, into *rows; -1 after saying why. */
static int pick_rows(struct store *st, const struct analyze_cli *a, struct store_session_row **rows,
		     size_t *nrows)
{
	struct mt_err err = {"", 0};
	int64_t *ids;
	size_t nids;

	*rows = NULL;
	*nrows = 0;
	if (cli_pick_sessions(st, a->rd.path, a->all ? "all" : a->rd.sid, CLI_ALL, &ids, &nids))
		return -1;
	*rows = mt_calloc(nids, sizeof(**rows));
	for (; *nrows < nids; (*nrows)++) {
		if (store_session_get(st, ids[*nrows], &(*rows)[*nrows], &err)) {
			mt_error("cannot read '%s': %s", a->rd.path, err.msg);
			free(ids);
			return -1;
		}
	}
	free(ids);
	return 0;
}

/*
 * Walk one session through a new engine: its findings to rep and keep.
 * Returns 1 when one is at or above --fail-on, 0 when none, -1 after saying
 * why it could not be read.
 */
static int analyze_session(struct store *st, const struct store_session_row *row, const struct analyze_cli *a,
			   struct report *rep, struct keep *keep)
{
	struct mt_err err = {"", 0};
	struct walk w;
	int http, rc = -1;

	memset(&w, 0, sizeof(w));
	w.e = an_engine_new(row->id, &a->ao);
	w.rep = rep;
	w.keep = keep;
	w.fail_on = a->ro.fail_on;
	w.fail_never = a->ro.fail_never;
	an_engine_set_sink(w.e, sink, &w);
	an_engine_set_session(w.e, row->transport, row->http_session_id);
	/* An HTTP session's exchanges, and its messages' HTTP columns, too. */
	http = row->transport && (!strcmp(row->transport, "http") || !strcmp(row->transport, "sse"));
	if (a->filter && pick_seqs(st, a->filter, row->id, &w, a->rd.path))
		goto out;
	keep_begin(keep, row->id, an_engine_state(w.e));
	report_session_begin(rep, row->id, an_engine_state(w.e));
	if (store_each_item_ex(st, row->id, http ? STORE_ITEMS_EXCHANGES : STORE_ITEMS_LEAN, feed, &w, &err) <
	    0) {
		mt_error("cannot read session %lld of '%s': %s", (long long)row->id, a->rd.path, err.msg);
		goto out;
	}
	an_engine_end(w.e);
	report_session_end(rep);
	keep_flush(keep, 1);
	rc = w.failing;
out:
	an_engine_free(w.e);
	mt_map_release(&w.pass);
	return rc;
}

static int run_analyze(int argc, char **argv)
{
	struct analyze_cli a;
	struct store *st = NULL, *wst = NULL;
	struct mt_err err = {"", 0};
	struct store_session_row *rows = NULL;
	struct report *rep = NULL;
	struct keep keep;
	const char *path;
	char *rules = NULL, why[sizeof(err.msg)] = "";
	size_t nrows = 0;
	int rc = EXIT_ERROR, failing = 0;

	memset(&a, 0, sizeof(a));
	memset(&keep, 0, sizeof(keep));
	a.rd.format = "text";
	if ((rc = analyze_options(argc, argv, &a)) >= 0)
		goto out;
	rc = EXIT_ERROR;
	path = a.rd.path;

	/*
	 * Two connections when the findings are stored: the walk reads on one
	 * while batches of findings are committed on the other. (On one, the
	 * walk's open statements would keep a read transaction, and its snapshot,
	 * under every commit, and a tap's commit meanwhile would make the next
	 * write fail.) Reading is enough to report.
	 */
	if (!a.no_store && !cannot_store(path, why, sizeof(why)) &&
	    store_open(path, STORE_UPDATE, &wst, &err))
		snprintf(why, sizeof(why), "%s", err.msg);
	if (cli_open_capture(path, &st))
		goto out;
	if (!a.no_store && !wst)
		mt_warn("cannot store the findings in '%s': %s", path, why);
	if (pick_rows(st, &a, &rows, &nrows))
		goto out;
	a.ro.path = path;
	a.ro.an = &a.ao;
	a.ro.color = a.ro.format == REPORT_TEXT && cli_use_color(stdout);
	if (report_new(stdout, &a.ro, &rep, &err)) {
		mt_error("%s", err.msg);
		goto out;
	}
	rules = rules_run(&a.ao);
	keep.st = wst;
	keep.path = path;
	keep.rules = rules;
	keep.v = mt_calloc(KEEP_BATCH, sizeof(*keep.v));
	for (size_t i = 0; i < nrows; i++) {
		int f = analyze_session(st, &rows[i], &a, rep, &keep);
		if (f < 0)
			goto out;
		failing |= f;
	}
	if (report_finish(rep, &err)) {
		mt_error("%s", err.msg);
		goto out;
	}
	rc = failing ? EXIT_FINDINGS : EXIT_OK;
out:
	mt_filter_free(a.filter);
	free(keep.v);
	mt_buf_release(&keep.text);
	free(rules);
	report_free(rep);
	store_sessions_free(rows, nrows);
	store_close(wst);
	store_close(st);
	return rc;
}
