/*
 * cmd-record.c - `mcptap record`: wrap a stdio MCP server command, relay its
 * traffic untouched and log every message to a capture file.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "tap/http/httplog.h"
#include "tap/http/httptap.h"
#include "tap/otlpcli.h"
#include "tap/stdio/relay.h"

static int run_record(int argc, char **argv);

const struct cmd_entry cmd_record = {
	.name = "record",
	.summary = "run a stdio MCP server through the tap, or proxy an HTTP one, and log its traffic",
	.usage = "mcptap record -w FILE [--sync] [--max-message SIZE] [--queue SIZE] "
		 "[--hold SIZE] [--batch DURATION] [--drain-timeout DURATION] [--redact-key NAME] "
		 "[--redact-path PATH] [--redact-value REGEX] [--keep-secrets] " OTLPCLI_USAGE
		 " -- COMMAND [ARG...]\n"
		 "mcptap record -w FILE --upstream URL [--listen ADDR] [--allow-host NAME] [--cacert FILE] "
		 "[--insecure] "
		 "[--upstream-header NAME=env:VAR] [--max-headers SIZE] [--max-body SIZE] "
		 "[--connect-timeout DURATION] [--upstream-timeout DURATION] "
		 "[--client-timeout DURATION] [--stop-timeout DURATION] "
		 "[--threads N] [--memory SIZE] "
		 "[--max-message SIZE] [--queue SIZE] "
		 "[--hold SIZE] [--batch DURATION] [--redact-key NAME] [--redact-path PATH] "
		 "[--redact-value REGEX] [--keep-secrets] " OTLPCLI_USAGE " [-v]",
	.options =
		"  -w, --write FILE      the capture file (created 0600 if missing; $MCPTAP_FILE)\n"
		"      --sync            make each chunk durable before it is forwarded (slow)\n"
		"      --max-message SIZE  store lines up to SIZE bytes (default 256M); longer\n"
		"                        ones are relayed and recorded as a gap\n"
		"      --queue SIZE      what may be relayed and not yet stored while the file\n"
		"                        keeps up (default 1M, and 4096 lines); beyond it the\n"
		"                        relay waits (backpressure): nothing is dropped, and a\n"
		"                        SIGKILL of the tap loses no more than this\n"
		"      --hold SIZE       what the tap holds while the file takes nothing (locked\n"
		"                        by another program, a stalled disk), relaying on at\n"
		"                        full speed (default 16M); stored in order when it is back\n"
		"      --batch DURATION  commit at least this often (default 5ms; 20ms with\n"
		"                        --upstream)\n"
		"      --drain-timeout DURATION  after the server exits, wait for the rest of\n"
		"                        its output until it is quiet this long (default 1s);\n"
		"                        bytes the client is slow to read are always delivered\n"
		"      --redact-key NAME   also redact JSON values under members named NAME\n"
		"      --redact-path PATH  also redact what is at this JSON path\n"
		"                        (params.arguments.query; * and [*] match any)\n"
		"      --redact-value REGEX  also redact what this extended regex matches\n"
		"      --keep-secrets    store credentials as they are (no redaction)\n" OTLPCLI_OPTIONS_HELP
		"\n"
		"The HTTP tap (a reverse proxy for Streamable HTTP and legacy HTTP+SSE):\n"
		"      --upstream URL    the server (http:// or https://); every path is\n"
		"                        forwarded to its origin, with URL's query added\n"
		"                        (no user:password@: use --upstream-header)\n"
		"      --listen ADDR     where clients connect: HOST:PORT, [V6]:PORT or PORT\n"
		"                        (default 127.0.0.1:8808; PORT 0: any free port)\n"
		"      --cacert FILE     trust this CA for the upstream, besides the system's\n"
		"      --insecure        do not verify the upstream's certificate (said on stderr)\n"
		"      --allow-host NAME  on loopback, requests must name the tap by a loopback\n"
		"                        name and come from no foreign Origin (DNS rebinding:\n"
		"                        403); let NAME in too (repeatable)\n"
		"      --upstream-header NAME=env:VAR  send NAME with the value of $VAR upstream\n"
		"                        on every request (a static credential; never stored)\n"
		"      --max-headers SIZE  a request head's limit (default 64k; 431 beyond)\n"
		"      --max-body SIZE   a request body's limit (default 16M; 413 beyond)\n"
		"      --connect-timeout DURATION  to reach the upstream (default 10s; then 502)\n"
		"      --upstream-timeout DURATION  an upstream silent this long (but on an SSE\n"
		"                        stream) is given up: 504, or a cut response (5m)\n"
		"      --client-timeout DURATION  a request head not whole this long after its\n"
		"                        first byte (408), a client silent this long in a\n"
		"                        request, not reading its answer, or idle, is closed\n"
		"                        (default 1m); a connection awaiting its answer never\n"
		"                        times out\n"
		"      --stop-timeout DURATION  after SIGINT or SIGTERM, how long open exchanges\n"
		"                        and streams get to end (default 2s)\n"
		"      --threads N       relay on N event loops, each in a thread of its own\n"
		"                        (default: one per CPU the tap may use, at most 8)\n"
		"      --memory SIZE     what the relay holds across connections (requests\n"
		"                        being read, answers not yet taken; default 64M);\n"
		"                        past it the tap stops reading until it has room\n"
		"  -v, --verbose         a line on stderr for each exchange as it ends: the\n"
		"                        connection, method, path, what its body carried, the\n"
		"                        status, messages and time\n"
		"  -h, --help            this text\n"
		"\n"
		"A DURATION is a number with a unit, ns, us, ms, s, m or h (500ms, 1.5s); a\n"
		"bare number is ms. --batch-ms, --drain-ms and --stop-ms, the older names,\n"
		"still work.\n"
		"\n"
		"Credentials are kept out of the capture file: in the command line, stderr and\n"
		"messages they are stored as [redacted:HASH], equal secrets as equal markers;\n"
		"what is relayed is never changed (see mcptap(1), REDACTION).\n"
		"\n"
		"The stdio tap exits with the command's exit status, or re-raises the signal\n"
		"that killed it; 127 or 126 when it cannot be run. It never writes to stdout.\n"
		"The HTTP tap runs until SIGINT or SIGTERM and exits 0; each MCP session is a\n"
		"session of the capture file.\n",
	.run = run_record,
};

/* Leave the way the child left: its status, or its fatal signal. */
static int exit_like_child(const struct relay_result *res)
{
	if (res->exit_signal > 0) {
		struct rlimit no_core = {0, 0};
		struct sigaction sa;
		sigset_t set;

		setrlimit(RLIMIT_CORE, &no_core);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(res->exit_signal, &sa, NULL);
		sigemptyset(&set);
		sigaddset(&set, res->exit_signal);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		raise(res->exit_signal);
		return 128 + res->exit_signal; /* a signal whose default is not to die */
	}
	return res->exit_status >= 0 ? res->exit_status : EXIT_ERROR;
}

/* What the HTTP tap says as it runs (httptap_opts.say): on stderr. */
static void say_line(void *ctx, const char *text)
{
	(void)ctx;
	fputs(text, stderr);
}

/* -v: a line on stderr for each exchange as it ends (from any loop's thread). */
static void say_exchange(void *ctx, const struct hl_done *d)
{
	struct mt_buf b = MT_BUF_INIT;

	(void)ctx;
	hl_done_text(d, &b);
	mt_buf_putc(&b, '\0');
	flockfile(stderr);
	fprintf(stderr, "mcptap: %s\n", b.data);
	fflush(stderr);
	funlockfile(stderr);
	mt_buf_release(&b);
}

static int run_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"write", required_argument, NULL, 'w'},
		{"sync", no_argument, NULL, 'S'},
		{"max-message", required_argument, NULL, 'M'},
		{"queue", required_argument, NULL, 'Q'},
		{"hold", required_argument, NULL, 'H'},
		{"batch", required_argument, NULL, 'B'},
		{"batch-ms", required_argument, NULL, 'B'}, /* (its older name) */
		{"drain-timeout", required_argument, NULL, 'D'},
		{"drain-ms", required_argument, NULL, 'D'}, /* (its older name) */
		{"redact-key", required_argument, NULL, 'K'},
		{"redact-path", required_argument, NULL, 'P'},
		{"redact-value", required_argument, NULL, 'V'},
		{"keep-secrets", no_argument, NULL, 'k'},
		{"upstream", required_argument, NULL, 'U'},
		{"listen", required_argument, NULL, 'L'},
		{"cacert", required_argument, NULL, 'C'},
		{"insecure", no_argument, NULL, 'I'},
		{"upstream-header", required_argument, NULL, 'E'},
		{"max-headers", required_argument, NULL, 'X'},
		{"max-body", required_argument, NULL, 'Y'},
		{"connect-timeout", required_argument, NULL, 'T'},
		{"stop-timeout", required_argument, NULL, 'O'},
		{"stop-ms", required_argument, NULL, 'O'}, /* (its older name) */
		{"upstream-timeout", required_argument, NULL, 'u'},
		{"client-timeout", required_argument, NULL, 'c'},
		{"allow-host", required_argument, NULL, 'A'},
		{"threads", required_argument, NULL, 'N'},
		{"memory", required_argument, NULL, 0x100},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		OTLPCLI_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct otlp_cli oc;
	struct relay_opts o;
	struct relay_result res;
	struct mt_err err = {"", 0};
	struct httptap_opts ho;
	int http = 0, threads = 0, batch_given = 0;
	const char **uh = mt_calloc((size_t)argc + 1, sizeof(*uh));
	const char **ah = mt_calloc((size_t)argc + 1, sizeof(*ah));
	char **uh_owned = mt_calloc((size_t)argc + 1, sizeof(*uh_owned));
	struct mt_redact *red = NULL;
	struct mt_buf upstream_shown = MT_BUF_INIT;
	const char *path = NULL;
	const char **rules = mt_calloc((size_t)argc + 1, sizeof(*rules));
	char *kinds = mt_calloc((size_t)argc + 1, 1);
	size_t nrules = 0;
	uint64_t size;
	int64_t n, ns;
	int c, li, keep = 0, rc = EXIT_ERROR;

	memset(&o, 0, sizeof(o));
	otlp_cli_init(&oc, &cmd_record, argc);
	writer_opts_default(&o.wopts);
	httptap_opts_default(&ho);
	ho.say = say_line;
	ho.upstream_headers = uh;
	ho.allow_hosts = ah;
	o.drain_ms = 1000;
	optind = 1;
	opterr = 0;
	while ((li = -1, c = getopt_long(argc, argv, "+:w:vh", longopts, &li)) != -1) {
		/* (a duration option's name as given: --batch or --batch-ms) */
		const char *name = li >= 0 ? longopts[li].name : "";

		switch (c) {
		case 'w': path = optarg; break;
		case 'v': ho.on_end = say_exchange; break;
		case 'S': o.wopts.sync = 1; break;
		case 'M':
			if (mt_parse_size(optarg, &size) || size == 0 || size > (1ULL << 31) - 1) {
				cli_usage_error(&cmd_record, "bad --max-message '%s' (1 byte to 2G less one)",
						optarg);
				goto out;
			}
			o.wopts.max_message = size;
			break;
		case 'Q':
			if (mt_parse_size(optarg, &size) || size < 4096 || size > (1ULL << 32)) {
				cli_usage_error(&cmd_record, "bad --queue '%s' (4k to 4G)", optarg);
				goto out;
			}
			o.wopts.queue_bytes = size;
			break;
		case 'H':
			if (mt_parse_size(optarg, &size) || size < 4096 || size > (1ULL << 40)) {
				cli_usage_error(&cmd_record, "bad --hold '%s' (4k to 1T)", optarg);
				goto out;
			}
			o.wopts.hold_bytes = size;
			break;
		case 'B':
			if (mt_parse_duration(optarg, MT_MS, &ns) || ns < MT_MS || ns > MT_MIN) {
				cli_usage_error(&cmd_record,
						"bad --%s '%s' (a duration, 1ms to 1m: 500ms, 2s; "
						"a bare number is ms)",
						name, optarg);
				goto out;
			}
			o.wopts.batch_ms = (int)mt_duration_in(ns, MT_MS);
			batch_given = 1;
			break;
		case 'D':
			if (mt_parse_duration(optarg, MT_MS, &ns) || ns < MT_MS || ns > MT_HOUR) {
				cli_usage_error(&cmd_record,
						"bad --%s '%s' (a duration, 1ms to 1h: 500ms, 2s; "
						"a bare number is ms)",
						name, optarg);
				goto out;
			}
			o.drain_ms = (int)mt_duration_in(ns, MT_MS);
			break;
		case 'K':
		case 'P':
		case 'V':
			kinds[nrules] = (char)c;
			rules[nrules++] = optarg;
			break;
		case 'k': keep = 1; break;
		case 'U':
			ho.upstream = optarg;
			http = 1;
			break;
		case 'L':
			ho.listen = optarg;
			http = 1;
			break;
		case 'C':
			if (access(optarg, R_OK)) {
				cli_usage_error(&cmd_record, "cannot read --cacert '%s': %s", optarg,
						strerror(errno));
				goto out;
			}
			ho.cacert = optarg;
			break;
		case 'I': ho.insecure = 1; break;
		case 'A': ah[ho.n_allow_hosts++] = optarg; break;
		case 'E':
			if (!(uh_owned[ho.n_upstream_headers] =
				      cli_env_header(&cmd_record, "--upstream-header", optarg)))
				goto out;
			uh[ho.n_upstream_headers] = uh_owned[ho.n_upstream_headers];
			ho.n_upstream_headers++;
			break;
		case 'X':
		case 'Y':
			if (mt_parse_size(optarg, &size) || size < 1024 || size > (1ULL << 31)) {
				cli_usage_error(&cmd_record, "bad --%s '%s' (1k to 2G)",
						c == 'X' ? "max-headers" : "max-body", optarg);
				goto out;
			}
			*(c == 'X' ? &ho.max_headers : &ho.max_body) = size;
			break;
		case 'T':
		case 'O':
		case 'u':
		case 'c':
			if (mt_parse_duration(optarg, MT_MS, &ns) || ns < MT_MS || ns > 24 * MT_HOUR) {
				cli_usage_error(&cmd_record,
						"bad --%s '%s' (a duration, 1ms to 24h: 500ms, "
						"2s; a bare number is ms)",
						name, optarg);
				goto out;
			}
			*(c == 'T'   ? &ho.connect_timeout_ms
			  : c == 'O' ? &ho.stop_ms
			  : c == 'u' ? &ho.upstream_timeout_ms
				     : &ho.client_timeout_ms) = (int)mt_duration_in(ns, MT_MS);
			break;
		case 'N':
			if (mt_parse_int64(optarg, &n) || n < 1 || n > HTTPTAP_THREADS_MAX) {
				cli_usage_error(&cmd_record, "bad --threads '%s' (1 to %d)", optarg,
						HTTPTAP_THREADS_MAX);
				goto out;
			}
			ho.threads = (int)n;
			threads = 1;
			break;
		case 0x100:
			if (mt_parse_size(optarg, &size) || size < (1u << 20) || size > (1ULL << 40)) {
				cli_usage_error(&cmd_record, "bad --memory '%s' (1M to 1T)", optarg);
				goto out;
			}
			ho.memory = size;
			threads = 1; /* (an HTTP tap's option) */
			break;
		case 'h':
			cli_help(&cmd_record, stdout);
			rc = EXIT_OK;
			goto out;
		default:
			if ((n = otlp_cli_option(&oc, c, optarg)) < 0)
				goto out;
			if (n)
				break;
			rc = cli_bad_option(&cmd_record, c, argv);
			goto out;
		}
	}
	if (http && optind < argc) {
		cli_usage_error(&cmd_record,
				"--upstream and --listen proxy an HTTP server: no command to run");
		goto out;
	}
	if (http && !ho.upstream) {
		cli_usage_error(&cmd_record, "--listen needs --upstream URL (the server to forward to)");
		goto out;
	}
	if (!http && (ho.cacert || ho.insecure || ho.n_upstream_headers || ho.n_allow_hosts || threads)) {
		cli_usage_error(&cmd_record, "--cacert, --insecure, --upstream-header, --allow-host, "
					     "--threads and --memory need --upstream");
		goto out;
	}
	if (!http && ho.on_end) {
		cli_usage_error(&cmd_record, "-v needs --upstream (a line per HTTP exchange)");
		goto out;
	}
	if (!http && optind >= argc) {
		cli_usage_error(&cmd_record, "no command to run (put it after --), or --upstream URL");
		goto out;
	}
	if (keep && nrules) {
		cli_usage_error(&cmd_record, "--keep-secrets and --redact-* contradict each other");
		goto out;
	}
	path = cli_capture_path(path);
	if (!path) {
		cli_usage_error(&cmd_record, "no capture file: give -w FILE or set MCPTAP_FILE");
		goto out;
	}
	if (o.wopts.hold_bytes < o.wopts.queue_bytes)
		o.wopts.hold_bytes = o.wopts.queue_bytes; /* holding never shrinks the queue */
	if (!keep) {
		int bad;
		red = cli_redactor(&cmd_record, kinds, rules, nrules, &bad);
		if (bad)
			goto out;
	}
	o.wopts.redact = red;
	o.wopts.voice.say = mt_say_stderr;
	if (otlp_cli_apply(&oc, &o.wopts))
		goto out;
	if (http) {
		static char label[600];
		/* --upstream as said and stored: the credentials of its query
		 * redacted, with --keep-secrets too (they come from the command
		 * line, not from the traffic). */
		struct mt_redact *ur = red;
		int bad = 0;
		if (!ur)
			ur = cli_redactor(&cmd_record, kinds, NULL, 0, &bad);
		rc = cli_check_upstream(&cmd_record, ho.upstream, ur, &upstream_shown);
		if (ur != red)
			mt_redact_free(ur);
		if (rc || (rc = cli_check_listen(&cmd_record, ho.listen)))
			goto out;
		ho.upstream_shown = upstream_shown.data;
		snprintf(label, sizeof(label), "'%s'", path);
		ho.wopts = o.wopts;
		ho.wopts.label = label;
		/* Bigger batches: a commit writes a page of every session it holds. */
		ho.wopts.batch_rows = HTTPTAP_BATCH_ROWS;
		if (!batch_given)
			ho.wopts.batch_ms = HTTPTAP_BATCH_MS;
		ho.db_path = path;
		rc = httptap_run(&ho, &err);
		if (rc < 0) { /* (a thread would not start: the tap cannot go on) */
			mt_error("%s", err.msg);
			abort();
		}
		if (err.msg[0])
			mt_error("%s", err.msg);
		goto out;
	}
	o.argv = argv + optind;
	o.db_path = path;
	{
		static char label[600];
		snprintf(label, sizeof(label), "'%s'", path);
		o.wopts.label = label;
	}
	o.voice.say = mt_say_stderr;
	n = relay_run(&o, &res, &err);
	if (n == -2) { /* (a thread would not start: the tap cannot go on) */
		mt_error("%s", err.msg);
		abort();
	}
	if (n) {
		mt_error("%s", err.msg);
		rc = EXIT_ERROR;
		goto out;
	}
	if (res.spawn_errno) {
		mt_error("cannot run '%s': %s", o.argv[0], strerror(res.spawn_errno));
		rc = res.exit_status;
		goto out;
	}
	mt_redact_free(red);
	red = NULL;
	free(rules);
	free(kinds);
	free(uh);
	free(uh_owned);
	free(ah);
	otlp_cli_release(&oc);
	return exit_like_child(&res);
out:
	mt_redact_free(red);
	mt_buf_release(&upstream_shown);
	free(rules);
	free(kinds);
	for (size_t i = 0; uh_owned[i]; i++)
		free(uh_owned[i]);
	free(uh);
	free(uh_owned);
	free(ah);
	otlp_cli_release(&oc);
	return rc;
}
