/*
 * cmd-sniff.c - `mcptap sniff`: capture MCP traffic live from a network
 * interface (libpcap) and store its sessions as `mcptap import` does.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tap/pcap/capcli.h"

static int run_sniff(int argc, char **argv);

const struct cmd_entry cmd_sniff = {
	.name = "sniff",
	.summary = "capture MCP traffic live from a network interface and store its sessions",
	.usage = "mcptap sniff -w FILE -i IFACE [-f FILTER] [-c COUNT | --duration DURATION] "
		 "[--max-message SIZE] [--flow-memory SIZE] [--memory SIZE] [--max-flows N] "
		 "[--idle DURATION] [--redact-key NAME] [--redact-path PATH] "
		 "[--redact-value REGEX] [--keep-secrets] " OTLPCLI_USAGE " [-v]",
	.options = "  -i, --interface IFACE  the interface to capture on (lo, eth0, any)\n"
		   "  -c, --count COUNT     stop after COUNT packets\n"
		   "      --duration DURATION  stop after this long\n"
		   "  -v, --verbose         a line on stderr for each HTTP exchange as it "
		   "ends\n" CAPCLI_OPTIONS_HELP "\n"
		   "Packets are read as `mcptap import` reads a file, and stored as they come:\n"
		   "each MCP session is a session of FILE with the packets' times. SIGINT\n"
		   "(Ctrl-C) or SIGTERM stops the capture; everything read is stored. Capturing\n"
		   "needs root or the CAP_NET_RAW capability. A summary at the end says what was\n"
		   "read, stored and skipped, and what the kernel dropped.\n"
		   "\n"
		   "Exit status: 0; 2 for a usage error, an interface that cannot be captured on\n"
		   "(no such interface, no permission), a bad filter, a store failure, or an\n"
		   "interface that fails during the capture (what was read is stored).\n",
	.run = run_sniff,
};

/* -v: a line on stderr for each exchange as it ends. */
static void say_exchange(void *ctx, const struct hl_done *d)
{
	struct mt_buf b = MT_BUF_INIT;

	(void)ctx;
	hl_done_text(d, &b);
	mt_buf_putc(&b, '\0');
	fprintf(stderr, "mcptap: %s\n", b.data);
	fflush(stderr);
	mt_buf_release(&b);
}

static int run_sniff(int argc, char **argv)
{
	static const struct option longopts[] = {
		CAPCLI_LONGOPTS,
		{"interface", required_argument, NULL, 'i'},
		{"count", required_argument, NULL, 'c'},
		{"duration", required_argument, NULL, 0x200},
		{"verbose", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	struct capcli o;
	struct capcli_run r;
	struct mt_capture *cap;
	struct mt_err err = {"", 0};
	const char *iface = NULL;
	char what[300];
	int64_t n, ns;
	int c, rc = EXIT_ERROR;

	capcli_init(&o, &cmd_sniff, argc);
	memset(&r, 0, sizeof(r));
	r.live = 1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:w:f:i:c:vh", longopts, NULL)) != -1) {
		int taken = capcli_option(&o, c, optarg);
		if (taken < 0)
			goto out;
		if (taken)
			continue;
		switch (c) {
		case 'i': iface = optarg; break;
		case 'v': o.io.on_end = say_exchange; break;
		case 'c':
			if (mt_parse_int64(optarg, &n) || n < 1) {
				cli_usage_error(&cmd_sniff, "bad --count '%s' (1 or more)", optarg);
				goto out;
			}
			r.max_packets = (uint64_t)n;
			break;
		case 0x200:
			if (mt_parse_duration(optarg, MT_SEC, &ns) || ns < MT_MS || ns > 365 * 24 * MT_HOUR) {
				cli_usage_error(&cmd_sniff,
						"bad --duration '%s' (a duration, 1ms to 8760h: "
						"500ms, 2m; a bare number is seconds)",
						optarg);
				goto out;
			}
			r.duration_ms = mt_duration_in(ns, MT_MS);
			break;
		case 'h':
			cli_help(&cmd_sniff, stdout);
			rc = EXIT_OK;
			goto out;
		default: rc = cli_bad_option(&cmd_sniff, c, argv); goto out;
		}
	}
	if (optind < argc) {
		cli_usage_error(&cmd_sniff, "unexpected argument '%s' (the interface is -i IFACE)",
				argv[optind]);
		goto out;
	}
	if (!iface) {
		cli_usage_error(&cmd_sniff, "no interface: give -i IFACE (lo, eth0, any)");
		goto out;
	}
	if (r.max_packets && r.duration_ms) {
		cli_usage_error(&cmd_sniff, "-c and --duration are one or the other");
		goto out;
	}
	if (capcli_ready(&o))
		goto out;
	/* The writer's warnings, on stderr. */
	o.io.wopts.voice.say = mt_say_stderr;
	cap = mt_capture_open_live(iface, &err);
	if (!cap) {
		mt_error("%s", err.msg);
		goto out;
	}
	snprintf(what, sizeof(what), "interface '%s'", iface);
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
