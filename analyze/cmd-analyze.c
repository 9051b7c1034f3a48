/*
 * cmd-analyze.c - `mcptap analyze`: check captured sessions against the
 * protocol rules of their revision, report like a compiler (or as JSON, SARIF,
 * JUnit), store the findings in the capture file, and exit non-zero when a
 * finding at or above --fail-on exists.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/report.h"
#include "schema/cli.h"

static int run_analyze(int argc, char **argv);

const struct cmd_entry cmd_analyze = {
	.name = "analyze",
	.summary = "check captured sessions against the MCP rules of their protocol revision",
	.usage = "mcptap analyze -r FILE [-s ID | --all] [-T text|json|sarif|junit] "
		 "[--fail-on error|warning|info|never] [--spec REVISION] [--rules LIST | "
		 "--skip-rules LIST] [--timeout-ms N] [--no-store]\nmcptap analyze --list-rules",
	.options =
		"  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		"  -s, --session ID      the session (default: the newest)\n"
		"      --all             every session in the file\n"
		"  -T, --format FORMAT   text (default), json, sarif (2.1.0) or junit (XML)\n"
		"      --fail-on LEVEL   exit 1 when a finding at or above LEVEL exists:\n"
		"                        error (default), warning, info, or never\n"
		"      --spec REVISION   check against REVISION (2024-11-05, 2025-03-26,\n"
		"                        2025-06-18, 2025-11-25, 2026-07-28), not the negotiated one\n"
		"      --rules LIST      run only these rules (ids or prefixes: CAP,LIFE-001)\n"
		"      --skip-rules LIST run all rules but these\n"
		"      --timeout-ms N    a request unanswered for N ms is late (LIFE-015)\n"
		"      --no-store        do not store the findings in the capture file\n"
		"      --list-rules      print the rule table and exit\n"
		"  -h, --help            this text\n"
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

static int list_rules(void)
{
	size_t n;
	const struct an_rule *const *rules = an_rules(&n);

	printf("%-10s %-10s %-36s %s\n", "RULE", "SEVERITY", "REVISIONS", "SUMMARY");
	for (size_t i = 0; i < n; i++) {
		char vers[96];
		printf("%-10s %-10s %-36s %s%s\n", rules[i]->id, severity_text(rules[i]),
		       versions_text(rules[i]->versions, vers, sizeof(vers)), rules[i]->summary,
		       rules[i]->check ? "" : " [not checked on its own]");
	}
	return EXIT_OK;
}

static int feed(const struct store_item *it, void *ctx)
{
	an_engine_feed(ctx, it);
	return 0;
}

/*
 * Store one session's findings, committed in slices of 50 ms so that taps
 * recording into the file meanwhile never wait long; the analysis counts as
 * complete (latest_finding) once its last slice is in. A failure is a
 * warning, not an error.
 */
static void store_findings(struct store *st, const char *path, const struct report_session *rs)
{
	struct mt_err err = {"", 0};
	struct store_analysis a;
	struct mt_buf rel = MT_BUF_INIT;
	int64_t id;
	size_t c[AN_SEVERITY_COUNT] = {0, 0, 0};

	for (size_t i = 0; i < rs->nfindings; i++)
		c[rs->findings[i].sev]++;
	a.session = rs->session;
	a.started_wall = mt_wall_us();
	a.spec = an_version_name(rs->st->version);
	a.spec_source = rs->st->version_source;
	a.errors = (int64_t)c[AN_ERROR];
	a.warnings = (int64_t)c[AN_WARNING];
	a.infos = (int64_t)c[AN_INFO];
	a.rules = NULL;
	if (store_begin(st, &err) || store_add_analysis(st, &a, &id, &err))
		goto fail;
	for (size_t i = 0; i < rs->nfindings; i++) {
		const struct an_finding *f = &rs->findings[i];
		mt_buf_reset(&rel);
		if (f->nrelated) {
			mt_buf_putc(&rel, '[');
			for (size_t j = 0; j < f->nrelated; j++)
				mt_buf_printf(&rel, "%s%lld", j ? "," : "", (long long)f->related[j]);
			mt_buf_putc(&rel, ']');
		}
		if (store_add_finding(st, id, rs->session, f->rule->id, an_severity_name(f->sev),
				      f->seq, f->nrelated ? rel.data : NULL, f->text, &err) ||
		    store_slice(st, &err))
			goto fail;
	}
	if (store_analysis_done(st, id, &err) || store_commit(st, &err))
		goto fail;
	mt_buf_release(&rel);
	return;
fail:
	store_rollback(st);
	mt_warn("cannot store the findings in '%s': %s", path, err.msg);
	mt_buf_release(&rel);
}

static int run_analyze(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"all", no_argument, NULL, 'A'},
		{"format", required_argument, NULL, 'T'},
		{"fail-on", required_argument, NULL, 'F'},
		{"spec", required_argument, NULL, 'S'},
		{"rules", required_argument, NULL, 'R'},
		{"skip-rules", required_argument, NULL, 'K'},
		{"timeout-ms", required_argument, NULL, 'O'},
		{"no-store", no_argument, NULL, 'N'},
		{"list-rules", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct an_options ao;
	struct report_opts ro;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct store_session_row *rows = NULL;
	struct report_session *rs = NULL;
	struct an_engine **engines = NULL;
	const char *path = NULL, *format = "text", *sid = NULL, *fail_on = "error";
	size_t nrows = 0, nsess = 0;
	int all = 0, no_store = 0, c, rc = EXIT_ERROR;
	int64_t n;

	memset(&ao, 0, sizeof(ao));
	memset(&ro, 0, sizeof(ro));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': path = optarg; break;
		case 's': sid = optarg; break;
		case 'A': all = 1; break;
		case 'T': format = optarg; break;
		case 'F': fail_on = optarg; break;
		case 'S':
			if (an_version_parse(optarg, &ao.version))
				return cli_usage_error(&cmd_analyze, "unknown revision '%s'", optarg);
			ao.force_version = 1;
			break;
		case 'R': ao.only = optarg; break;
		case 'K': ao.skip = optarg; break;
		case 'O':
			if (mt_parse_int64(optarg, &n) || n <= 0)
				return cli_usage_error(&cmd_analyze, "bad --timeout-ms '%s'", optarg);
			ao.timeout_ns = n * 1000000;
			break;
		case 'N': no_store = 1; break;
		case 'L': return list_rules();
		case 'h': cli_help(&cmd_analyze, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_analyze, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_analyze, "unexpected argument '%s'", argv[optind]);
	if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "sarif") &&
	    strcmp(format, "junit"))
		return cli_usage_error(&cmd_analyze, "unknown format '%s' (text, json, sarif, junit)",
				       format);
	if (!strcmp(fail_on, "never"))
		ro.fail_never = 1;
	else if (!strcmp(fail_on, "error"))
		ro.fail_on = AN_ERROR;
	else if (!strcmp(fail_on, "warning"))
		ro.fail_on = AN_WARNING;
	else if (!strcmp(fail_on, "info"))
		ro.fail_on = AN_INFO;
	else
		return cli_usage_error(&cmd_analyze, "bad --fail-on '%s' (error, warning, info, never)",
				       fail_on);
	if (ao.only && ao.skip)
		return cli_usage_error(&cmd_analyze, "--rules and --skip-rules exclude each other");
	for (int k = 0; k < 2; k++) {
		char item[64];
		const char *list = k ? ao.skip : ao.only;
		if (list && unmatched_item(list, item, sizeof(item)))
			return cli_usage_error(&cmd_analyze, "%s: '%s' names no rule (see --list-rules)",
					       k ? "--skip-rules" : "--rules", item);
	}
	if (all && sid)
		return cli_usage_error(&cmd_analyze, "-s and --all exclude each other");
	if (!(path = cli_capture_path(path)))
		return cli_usage_error(&cmd_analyze, "no capture file: give -r FILE or set MCPTAP_FILE");

	/* Findings are stored when the file is writable; reading is enough to report. */
	if (no_store || store_open(path, STORE_UPDATE, &st, &err)) {
		if (!no_store && access(path, W_OK) == 0 && access(path, F_OK) == 0) {
			mt_error("cannot open '%s': %s", path, err.msg);
			goto out;
		}
		if (cli_open_capture(path, &st))
			goto out;
		if (!no_store)
			mt_warn("'%s' is read-only: the findings are not stored", path);
		no_store = 1;
	}
	if (all) {
		if (store_sessions(st, &rows, &nrows, &err)) {
			mt_error("cannot read '%s': %s", path, err.msg);
			goto out;
		}
	} else {
		int64_t id;
		if (cli_pick_session(st, path, sid, &id))
			goto out;
		rows = mt_calloc(1, sizeof(*rows));
		rows[0].id = id;
		nrows = 1;
	}
	engines = mt_calloc(nrows ? nrows : 1, sizeof(*engines));
	rs = mt_calloc(nrows ? nrows : 1, sizeof(*rs));
	for (size_t i = 0; i < nrows; i++) {
		struct an_engine *e = an_engine_new(rows[i].id, &ao);
		engines[nsess] = e;
		if (store_each_item_ex(st, rows[i].id, STORE_ITEMS_LEAN, feed, e, &err) < 0) {
			mt_error("cannot read session %lld of '%s': %s", (long long)rows[i].id, path,
				 err.msg);
			nsess++;
			goto out;
		}
		an_engine_end(e);
		rs[nsess].session = rows[i].id;
		rs[nsess].st = an_engine_state(e);
		rs[nsess].findings = an_engine_findings(e, &rs[nsess].nfindings);
		nsess++;
	}
	ro.path = path;
	ro.an = &ao;
	ro.color = !strcmp(format, "text") && cli_use_color(stdout);
	if (!strcmp(format, "json"))
		report_json(stdout, rs, nsess, &ro);
	else if (!strcmp(format, "sarif"))
		report_sarif(stdout, rs, nsess, &ro);
	else if (!strcmp(format, "junit"))
		report_junit(stdout, rs, nsess, &ro);
	else
		report_text(stdout, rs, nsess, &ro);
	if (fflush(stdout) != 0) {
		mt_error("cannot write the report");
		goto out;
	}
	if (!no_store)
		for (size_t i = 0; i < nsess; i++)
			store_findings(st, path, &rs[i]);
	rc = EXIT_OK;
	for (size_t i = 0; i < nsess && !ro.fail_never; i++)
		for (size_t j = 0; j < rs[i].nfindings; j++)
			if (rs[i].findings[j].sev >= ro.fail_on)
				rc = EXIT_FINDINGS;
out:
	for (size_t i = 0; i < nsess; i++)
		an_engine_free(engines[i]);
	free(engines);
	free(rs);
	store_sessions_free(rows, nrows);
	store_close(st);
	return rc;
}
