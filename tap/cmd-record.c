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

/* What record's command line says: the stdio tap's options and the HTTP tap's. */
struct record_cli {
	struct relay_opts o;
	struct httptap_opts ho;
	struct otlp_cli oc;
	const char **uh;    /* --upstream-header values, as sent (ho's) */
	char **uh_owned;    /* ... made from the environment (owned) */
	const char **ah;    /* --allow-host values (ho's) */
	const char **rules; /* --redact-key/-path/-value values ... */
	char *kinds;        /* ... and which of the three each is (K, P, V) */
	size_t nrules;
	struct mt_redact *red; /* owned; NULL with --keep-secrets */
	struct mt_buf upstream_shown;
	const char *path;
	int http, threads, batch_given, keep;
};

static void record_init(struct record_cli *r, int argc)
{
	memset(r, 0, sizeof(*r));
	otlp_cli_init(&r->oc, &cmd_record, argc);
	writer_opts_default(&r->o.wopts);
	httptap_opts_default(&r->ho);
	r->uh = mt_calloc((size_t)argc + 1, sizeof(*r->uh));
	r->ah = mt_calloc((size_t)argc + 1, sizeof(*r->ah));
	r->uh_owned = mt_calloc((size_t)argc + 1, sizeof(*r->uh_owned));
	r->rules = mt_calloc((size_t)argc + 1, sizeof(*r->rules));
	r->kinds = mt_calloc((size_t)argc + 1, 1);
	r->ho.voice.say = mt_say_stderr;
	r->ho.upstream_headers = r->uh;
	r->ho.allow_hosts = r->ah;
	r->o.drain_ms = 1000;
}

static void record_release(struct record_cli *r)
{
	mt_redact_free(r->red);
	mt_buf_release(&r->upstream_shown);
	free(r->rules);
	free(r->kinds);
	for (size_t i = 0; r->uh_owned[i]; i++)
		free(r->uh_owned[i]);
	free(r->uh);
	free(r->uh_owned);
	free(r->ah);
	otlp_cli_release(&r->oc);
}

/* A size option's value in [lo, hi] into *v; -1 after saying why (what: its words). */
static int size_in(const char *opt, const char *arg, uint64_t lo, uint64_t hi, const char *what, uint64_t *v)
{
	if (mt_parse_size(arg, v) || *v < lo || *v > hi) {
		cli_usage_error(&cmd_record, "bad --%s '%s' (%s)", opt, arg, what);
		return -1;
	}
	return 0;
}

/*
 * One option of record's (c, as getopt_long gave it; name: its long name as
 * given, for messages): 1 taken, 0 not one of these, -1 after saying why.
 */
static int record_option(struct record_cli *r, int c, const char *name, const char *arg)
{
	struct httptap_opts *ho = &r->ho;
	struct writer_opts *wo = &r->o.wopts;
	uint64_t size;
	int64_t n;

	switch (c) {
	case 'w': r->path = arg; break;
	case 'v': ho->on_end = say_exchange; break;
	case 'S': wo->sync = 1; break;
	case 'M':
		if (size_in("max-message", arg, 1, (1ULL << 31) - 1, "1 byte to 2G less one", &size))
			return -1;
		wo->max_message = size;
		break;
	case 'Q':
		if (size_in("queue", arg, 4096, 1ULL << 32, "4k to 4G", &size))
			return -1;
		wo->queue_bytes = size;
		break;
	case 'H':
		if (size_in("hold", arg, 4096, 1ULL << 40, "4k to 1T", &size))
			return -1;
		wo->hold_bytes = size;
		break;
	case 'B':
		if (cli_duration_ms(&cmd_record, name, arg, MT_MIN, "1ms to 1m", &wo->batch_ms))
			return -1;
		r->batch_given = 1;
		break;
	case 'D':
		if (cli_duration_ms(&cmd_record, name, arg, MT_HOUR, "1ms to 1h", &r->o.drain_ms))
			return -1;
		break;
	case 'K':
	case 'P':
	case 'V':
		r->kinds[r->nrules] = (char)c;
		r->rules[r->nrules++] = arg;
		break;
	case 'k': r->keep = 1; break;
	case 'U':
		ho->upstream = arg;
		r->http = 1;
		break;
	case 'L':
		ho->listen = arg;
		r->http = 1;
		break;
	case 'C':
		if (access(arg, R_OK)) {
			cli_usage_error(&cmd_record, "cannot read --cacert '%s': %s", arg, strerror(errno));
			return -1;
		}
		ho->cacert = arg;
		break;
	case 'I': ho->insecure = 1; break;
	case 'A': r->ah[ho->n_allow_hosts++] = arg; break;
	case 'E':
		if (!(r->uh_owned[ho->n_upstream_headers] =
			      cli_env_header(&cmd_record, "--upstream-header", arg)))
			return -1;
		r->uh[ho->n_upstream_headers] = r->uh_owned[ho->n_upstream_headers];
		ho->n_upstream_headers++;
		break;
	case 'X':
	case 'Y':
		if (size_in(c == 'X' ? "max-headers" : "max-body", arg, 1024, 1ULL << 31, "1k to 2G", &size))
			return -1;
		*(c == 'X' ? &ho->max_headers : &ho->max_body) = size;
		break;
	case 'T':
	case 'O':
	case 'u':
	case 'c':
		if (cli_duration_ms(&cmd_record, name, arg, 24 * MT_HOUR, "1ms to 24h",
				    c == 'T'   ? &ho->connect_timeout_ms
				    : c == 'O' ? &ho->stop_ms
				    : c == 'u' ? &ho->upstream_timeout_ms
					       : &ho->client_timeout_ms))
			return -1;
		break;
	case 'N':
		if (mt_parse_int64(arg, &n) || n < 1 || n > HTTPTAP_THREADS_MAX) {
			cli_usage_error(&cmd_record, "bad --threads '%s' (1 to %d)", arg,
					HTTPTAP_THREADS_MAX);
			return -1;
		}
		ho->threads = (int)n;
		r->threads = 1;
		break;
	case 0x100:
		if (size_in("memory", arg, 1u << 20, 1ULL << 40, "1M to 1T", &size))
			return -1;
		ho->memory = size;
		r->threads = 1; /* (an HTTP tap's option) */
		break;
	default: return otlp_cli_option(&r->oc, c, arg);
	}
	return 1;
}

/* A usage error of record's said: -1. */
static int usage(const char *why)
{
	cli_usage_error(&cmd_record, "%s", why);
	return -1;
}

/*
 * What the options say together, checked (more: a command follows them);
 * the redactor made. 0, or -1 after saying why.
 */
static int record_check(struct record_cli *r, int more)
{
	const struct httptap_opts *ho = &r->ho;
	int bad;

	if (r->http && more)
		return usage("--upstream and --listen proxy an HTTP server: no command to run");
	if (r->http && !ho->upstream)
		return usage("--listen needs --upstream URL (the server to forward to)");
	if (!r->http &&
	    (ho->cacert || ho->insecure || ho->n_upstream_headers || ho->n_allow_hosts || r->threads))
		return usage(
			"--cacert, --insecure, --upstream-header, --allow-host, --threads and --memory need "
			"--upstream");
	if (!r->http && ho->on_end)
		return usage("-v needs --upstream (a line per HTTP exchange)");
	if (!r->http && !more)
		return usage("no command to run (put it after --), or --upstream URL");
	if (r->keep && r->nrules)
		return usage("--keep-secrets and --redact-* contradict each other");
	if (!(r->path = cli_capture_path(r->path)))
		return usage("no capture file: give -w FILE or set MCPTAP_FILE");
	if (r->o.wopts.hold_bytes < r->o.wopts.queue_bytes)
		r->o.wopts.hold_bytes = r->o.wopts.queue_bytes; /* holding never shrinks the queue */
	if (!r->keep) {
		r->red = cli_redactor(&cmd_record, r->kinds, r->rules, r->nrules, &bad);
		if (bad)
			return -1;
	}
	r->o.wopts.redact = r->red;
	r->o.wopts.voice.say = mt_say_stderr;
	return otlp_cli_apply(&r->oc, &r->o.wopts) ? -1 : 0;
}

/* record --upstream: the HTTP tap, until a signal stops it. Its exit status. */
static int record_http(struct record_cli *r)
{
	static char label[600];
	struct httptap_opts *ho = &r->ho;
	struct mt_err err = {"", 0};
	/* --upstream as said and stored: the credentials of its query redacted,
	 * with --keep-secrets too (they come from the command line, not from the
	 * traffic). */
	struct mt_redact *ur = r->red;
	int bad = 0, rc;

	if (!ur)
		ur = cli_redactor(&cmd_record, r->kinds, NULL, 0, &bad);
	rc = cli_check_upstream(&cmd_record, ho->upstream, ur, &r->upstream_shown);
	if (ur != r->red)
		mt_redact_free(ur);
	if (rc || (rc = cli_check_listen(&cmd_record, ho->listen)))
		return rc;
	ho->upstream_shown = r->upstream_shown.data;
	snprintf(label, sizeof(label), "'%s'", r->path);
	ho->wopts = r->o.wopts;
	ho->wopts.label = label;
	/* Bigger batches: a commit writes a page of every session it holds. */
	ho->wopts.batch_rows = HTTPTAP_BATCH_ROWS;
	if (!r->batch_given)
		ho->wopts.batch_ms = HTTPTAP_BATCH_MS;
	ho->db_path = r->path;
	rc = httptap_run(ho, &err);
	if (err.msg[0])
		mt_error("%s", err.msg);
	return rc;
}

/*
 * record -- CMD: the stdio tap around argv, until the child ends. 0 when it
 * ran (res says how it ended), else the exit status after saying why.
 */
static int record_stdio(struct record_cli *r, char **argv, struct relay_result *res)
{
	static char label[600];
	struct relay_opts *o = &r->o;
	struct mt_err err = {"", 0};
	int n;

	o->argv = argv;
	o->db_path = r->path;
	snprintf(label, sizeof(label), "'%s'", r->path);
	o->wopts.label = label;
	o->voice.say = mt_say_stderr;
	n = relay_run(o, res, &err);
	if (n == -2) { /* (a relay thread would not start: the tap cannot go on) */
		mt_error("%s", err.msg);
		abort();
	}
	if (n) {
		mt_error("%s", err.msg);
		return EXIT_ERROR;
	}
	if (res->spawn_errno) {
		mt_error("cannot run '%s': %s", argv[0], strerror(res->spawn_errno));
		return res->exit_status;
	}
	return 0;
}

static int run_record(int argc, char **argv)
{
	struct record_cli r;
	struct relay_result res;
	int c, li, taken, rc = EXIT_ERROR;

	record_init(&r, argc);
	optind = 1;
	opterr = 0;
	while ((li = -1, c = getopt_long(argc, argv, "+:w:vh", longopts, &li)) != -1) {
		/* (a duration option's name as given: --batch or --batch-ms) */
		taken = record_option(&r, c, li >= 0 ? longopts[li].name : "", optarg);
		if (taken < 0)
			goto out;
		if (taken)
			continue;
		if (c == 'h') {
			cli_help(&cmd_record, stdout);
			rc = EXIT_OK;
		} else {
			rc = cli_bad_option(&cmd_record, c, argv);
		}
		goto out;
	}
	if (record_check(&r, optind < argc))
		goto out;
	if (r.http) {
		rc = record_http(&r);
		goto out;
	}
	if ((rc = record_stdio(&r, argv + optind, &res)) != 0)
		goto out;
	record_release(&r); /* (before the tap ends as its child did) */
	return exit_like_child(&res);
out:
	record_release(&r);
	return rc;
}
