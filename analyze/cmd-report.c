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

#include "analyze/export/export.h"
#include "schema/cli.h"
#include "schema/filter.h"

static int run_report(int argc, char **argv);

const struct cmd_entry cmd_report = {
	.name = "report",
	.summary = "write captured sessions as an HTML report: summary, findings, sequence diagram",
	.usage = "mcptap report -r FILE [-s LIST] [-Y EXPR] [-o FILE] [--redact-key NAME] "
		 "[--redact-path PATH] [--redact-value REGEX] [--keep-secrets]",
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
		   "  -h, --help            this text\n",
	.run = run_report,
};

#define MAX_RULES 64

static int run_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'},
		{"output", required_argument, NULL, 'o'},
		{"redact-key", required_argument, NULL, 'K'},
		{"redact-path", required_argument, NULL, 'P'},
		{"redact-value", required_argument, NULL, 'V'},
		{"keep-secrets", no_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *path = NULL, *sid = NULL, *expr = NULL, *out = NULL;
	const char *rules[MAX_RULES];
	char kinds[MAX_RULES];
	size_t nrules = 0;
	int keep = 0, c, rc = EXIT_ERROR, bad = 0;
	struct ex_sink x;
	struct ex_opts opts = {0, 0, 0};
	struct mt_filter *filter = NULL;
	struct mt_redact *redact = NULL;
	int64_t *ids = NULL;
	size_t nids = 0;

	memset(&x, 0, sizeof(x));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': path = optarg; break;
		case 's': sid = optarg; break;
		case 'Y': expr = optarg; break;
		case 'o': out = optarg; break;
		case 'k': keep = 1; break;
		case 'K':
		case 'P':
		case 'V':
			if (nrules == MAX_RULES)
				return cli_usage_error(&cmd_report, "more than %d --redact-* rules",
						       MAX_RULES);
			kinds[nrules] = (char)c;
			rules[nrules++] = optarg;
			break;
		case 'h': cli_help(&cmd_report, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_report, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_report, "unexpected argument '%s'", argv[optind]);
	if (keep && nrules)
		return cli_usage_error(&cmd_report,
				       "--keep-secrets and --redact-* contradict each other");
	if (sid && cli_session_list_problem(sid))
		return cli_usage_error(&cmd_report, "bad session list '%s': %s", sid,
				       cli_session_list_problem(sid));
	if (!(path = cli_capture_path(path)))
		return cli_usage_error(&cmd_report, "no capture file: give -r FILE or set MCPTAP_FILE");
	if (out && !*out)
		return cli_usage_error(&cmd_report, "-o needs a file name");
	if (expr && !(filter = cli_filter(&cmd_report, expr)))
		return EXIT_ERROR;
	if (!keep && !(redact = cli_redactor(&cmd_report, kinds, rules, nrules, &bad)))
		goto out;
	if (cli_open_capture(path, &x.st) || cli_pick_sessions(x.st, path, sid, CLI_ALL, &ids, &nids))
		goto out;
	x.format = &ex_html;
	store_set_filter(x.st, filter, x.format->filter);
	x.path = path;
	x.redact = redact;
	x.filter = filter;
	x.filtered = filter != NULL;
	x.o = &opts;
	rc = ex_write(&x, &cmd_report, out, ids, nids);
out:
	if (x.format && x.format->release)
		x.format->release(&x);
	ex_sink_release(&x);
	free(ids);
	mt_filter_free(filter);
	mt_redact_free(redact);
	store_close(x.st);
	return rc;
}
