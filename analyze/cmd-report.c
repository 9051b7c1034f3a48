/*
 * cmd-report.c - `mcptap report`: a capture's sessions as one self-contained
 * HTML file a person opens in a browser (analyze/export/html.c): per session
 * a summary (stats's figures, a latency histogram, errors by code), the
 * analyzer's findings, and a sequence diagram with one arrow per message.
 * Redacts as the tap does unless --keep-secrets; written as export writes.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analyze/export/export.h"
#include "schema/cli.h"

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
	struct ex_args a;
	int c, r;

	memset(&a, 0, sizeof(a));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:o:h", longopts, NULL)) != -1) {
		if ((r = ex_arg(&cmd_report, &a, c, optarg)) == 1)
			continue;
		if (r)
			return r;
		if (c == 'h') {
			cli_help(&cmd_report, stdout);
			return EXIT_OK;
		}
		return cli_bad_option(&cmd_report, c, argv);
	}
	if (optind < argc)
		return cli_usage_error(&cmd_report, "unexpected argument '%s'", argv[optind]);
	return ex_run(&cmd_report, &ex_html, &a);
}
