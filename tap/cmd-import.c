/*
 * cmd-import.c - `mcptap import`: the MCP sessions of a packet capture file
 * (pcap or pcapng), stored as the HTTP tap would have stored them.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tap/pcap/capcli.h"

static int run_import(int argc, char **argv);

const struct cmd_entry cmd_import = {
	.name = "import",
	.summary = "store the MCP sessions of a pcap or pcapng capture file",
	.usage = "mcptap import -w FILE [-f FILTER] [--max-message SIZE] [--flow-memory SIZE] "
		 "[--memory SIZE] [--max-flows N] [--idle DURATION] [--redact-key NAME] "
		 "[--redact-path PATH] [--redact-value REGEX] [--keep-secrets] " OTLPCLI_USAGE " CAPTURE",
	.options = CAPCLI_OPTIONS_HELP
	"\n"
	"CAPTURE is a pcap or pcapng file (tcpdump -w, tshark -w, Wireshark), or - for\n"
	"standard input. TCP streams are rebuilt, HTTP/1.1 is read on them, and each\n"
	"MCP session found (Streamable HTTP by Mcp-Session-Id, legacy SSE by its\n"
	"endpoint, otherwise by connection) is a session of FILE with the packets'\n"
	"times, as the HTTP tap stores them; analyze, stats, show and replay read it.\n"
	"Progress shows on a terminal; a summary at the end says what was read, what\n"
	"was stored and what was skipped and why (TLS, HTTP/2, other protocols,\n"
	"truncated packets, link types, the limits reached).\n"
	"\n"
	"Exit status: 0 (also when a file cut short was read up to its cut); 2 for a\n"
	"usage error, a file that is not a capture, a bad filter, or a store failure;\n"
	"130 (143) when SIGINT (SIGTERM) stopped it: what was read is stored.\n",
	.run = run_import,
};

static int run_import(int argc, char **argv)
{
	static const struct option longopts[] = {CAPCLI_LONGOPTS, {NULL, 0, NULL, 0}};
	struct capcli o;
	struct capcli_run r;
	struct mt_capture *cap;
	struct mt_err err = {"", 0};
	char what[600];
	int c, rc = EXIT_ERROR;

	capcli_init(&o, &cmd_import, argc);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:w:f:h", longopts, NULL)) != -1) {
		int taken = capcli_option(&o, c, optarg);
		if (taken < 0)
			goto out;
		if (taken)
			continue;
		if (c == 'h') {
			cli_help(&cmd_import, stdout);
			rc = EXIT_OK;
			goto out;
		}
		rc = cli_bad_option(&cmd_import, c, argv);
		goto out;
	}
	if (optind >= argc) {
		cli_usage_error(&cmd_import, "no capture to import (a pcap or pcapng file, or -)");
		goto out;
	}
	if (optind + 1 < argc) {
		cli_usage_error(&cmd_import, "one capture at a time ('%s' and '%s')", argv[optind],
				argv[optind + 1]);
		goto out;
	}
	if (capcli_ready(&o))
		goto out;
	/* The writer's warnings, on stderr. */
	o.io.wopts.voice.say = mt_say_stderr;
	cap = mt_capture_open_file(argv[optind], &err); /* ("-": stdin) */
	if (!cap) {
		mt_error("%s", err.msg);
		goto out;
	}
	snprintf(what, sizeof(what), "'%s'", argv[optind]);
	memset(&r, 0, sizeof(r));
	r.what = what;
	r.voice.say = mt_say_stderr;
	memset(&err, 0, sizeof(err));
	rc = capcli_run(&o, cap, &r, &err);
	if (err.msg[0])
		mt_error("%s", err.msg);
out:
	capcli_release(&o);
	return rc;
}
