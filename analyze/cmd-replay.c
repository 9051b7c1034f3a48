/*
 * cmd-replay.c - `mcptap replay`: play a recorded session back.
 *
 *   --as server: a mock of the recorded server on stdin/stdout, for a
 *     client's tests (the client spawns it as its server command);
 *   --as client: the recorded client against a live server, a command on
 *     stdio or a URL (Streamable HTTP or legacy HTTP+SSE), comparing every
 *     live answer with the recorded one (a regression test).
 *
 * The matching rules are in replay.h; the wires are tap/stdio/lineio.h and
 * tap/http/httpclient.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/replay/mock.h"
#include "analyze/replay/verify.h"
#include "cli.h"
#include "schema/filter.h"
#include "tap/http/httpclient.h"
#include "tap/stdio/child.h"
#include "tap/stdio/lineio.h"

static int run_replay(int argc, char **argv);

const struct cmd_entry cmd_replay = {
	.name = "replay",
	.summary = "play a recorded session back: a mock server, or the recorded client",
	.usage =
		"mcptap replay -r FILE [-s ID] [-Y EXPR] --as server [--listen ADDR [--path PATH] "
		"[--legacy-sse] "
		"[--allow-host NAME]... [--client-timeout DURATION]] "
		"[--strict] [--timing ordered|none|recorded|scale=X] [--report FILE] [--ignore PATH]... "
		"[--no-store]\n"
		"mcptap replay -r FILE [-s ID] [-Y EXPR] --as client [--ignore PATH]... [--timeout DURATION] "
		"[--runs N] [--reset CMD] [--fast] [-v] [--no-store] -- COMMAND [ARG...]\n"
		"mcptap replay -r FILE [-s ID] [-Y EXPR] --as client --url URL [--legacy-sse | "
		"--streamable-http] "
		"[--cacert FILE] [--insecure] [--header NAME=env:VAR]... [--ignore PATH]... "
		"[--timeout DURATION] [--runs N] [--reset CMD] [--fast] [-v] [--no-store]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session ID      the session (default: the newest); with --listen, a LIST\n"
		   "                        (ids, ranges A-B, all, comma-separated): each client's\n"
		   "                        session a run of the one its initialize's clientInfo\n"
		   "                        picks among them\n"
		   "  -Y, --filter EXPR     replay only the exchanges EXPR passes (a request or its\n"
		   "                        answer), and initialize: 'tool == search' (FILTERS)\n"
		   "      --as server       be the recorded server on stdin/stdout, or over HTTP\n"
		   "                        with --listen\n"
		   "      --as client       be the recorded client against COMMAND, or the server\n"
		   "                        at --url\n"
		   "      --ignore PATH     leave PATH out of matching and comparing (repeatable):\n"
		   "                        params.arguments.ts, result.content[*].text, result.*.id;\n"
		   "                        NAME=PATH only for the method or tool/prompt NAME\n"
		   "      --no-store        do not store the run in the capture file\n"
		   "  server:\n"
		   "      --listen ADDR     serve over HTTP on ADDR (HOST:PORT; PORT 0: any free\n"
		   "                        one) instead of stdin/stdout: Streamable HTTP, or legacy\n"
		   "                        HTTP+SSE when the recording was; each client's MCP\n"
		   "                        session is a run of its own\n"
		   "      --path PATH       the endpoint (default: the recording's; /mcp, or /sse\n"
		   "                        with --legacy-sse, for a stdio recording)\n"
		   "      --legacy-sse      serve HTTP+SSE (2024-11-05): GET PATH, POST /message\n"
		   "      --allow-host NAME  on loopback, requests must name the mock by a loopback\n"
		   "                        name and come from no foreign Origin (DNS rebinding:\n"
		   "                        403); let NAME in too (repeatable)\n"
		   "      --client-timeout DURATION  a request head not whole this long after its\n"
		   "                        first byte gets 408; a client silent this long in a\n"
		   "                        request, not reading its answer, or idle, is closed\n"
		   "                        (default 1m)\n"
		   "      --strict          exit 1 when a request had no recording, or a recorded\n"
		   "                        request was never asked for\n"
		   "      --timing T        ordered (default: no waiting, but each answer goes out\n"
		   "                        once the client has read what came before it), none\n"
		   "                        (everything at once), recorded (the recorded gaps), or\n"
		   "                        scale=X (the gaps times X)\n"
		   "      --report FILE     write the run's summary to FILE as JSON when the client\n"
		   "                        goes away\n"
		   "  client:\n"
		   "      --timeout DURATION  wait at most this long for each answer (default 10s)\n"
		   "      --runs N          run the recorded client N times, a fresh server each\n"
		   "                        time (default 2): what differs between live runs is\n"
		   "                        noise, not a difference\n"
		   "      --reset CMD       run CMD with /bin/sh before each run, to put a stateful\n"
		   "                        server's data back (a failure stops the replay)\n"
		   "      --fast            send as soon as the answers allow, not at the recorded\n"
		   "                        pace\n"
		   "      --url URL         the server over HTTP (http:// or https://), each run a\n"
		   "                        fresh MCP session: Streamable HTTP, or legacy HTTP+SSE\n"
		   "                        for a legacy recording (URL: its SSE endpoint)\n"
		   "      --legacy-sse      talk legacy HTTP+SSE whatever the recording\n"
		   "      --streamable-http  talk Streamable HTTP whatever the recording\n"
		   "      --cacert FILE     trust this CA for the server, besides the system's\n"
		   "      --insecure        do not verify the server's certificate (said on stderr)\n"
		   "      --header NAME=env:VAR  send NAME with the value of $VAR on every request\n"
		   "                        (a credential; never stored)\n"
		   "  -v, --verbose         client: the recorded and live values at each path\n"
		   "  -h, --help            this text\n"
		   "\n"
		   "A DURATION is a number with a unit, ns, us, ms, s, m or h (500ms, 1.5s); a\n"
		   "bare number is ms. --timeout-ms N, the older name of --timeout, still works.\n"
		   "\n"
		   "As a server, a request with no recording gets a JSON-RPC error (-30900) whose\n"
		   "data names the closest recorded request and the paths that differ. As a\n"
		   "client, each request prints PASS, DIFF with the paths that differ, MISSING,\n"
		   "CANCELLED or UNANSWERED; the exit status is 1 when any differed or went\n"
		   "missing.\n",
	.run = run_replay,
};

/* ---- the command ---- */

/* --timing: none, ordered (no gaps, each answer after what came before has been
 * read), recorded, scale=X (the last two ordered too). */
static int parse_timing(const char *t, double *scale, int *ordered)
{
	char *end;

	*ordered = 1;
	if (!strcmp(t, "none"))
		*scale = 0, *ordered = 0;
	else if (!strcmp(t, "ordered"))
		*scale = 0;
	else if (!strcmp(t, "recorded"))
		*scale = 1;
	else if (!strncmp(t, "scale=", 6)) {
		*scale = strtod(t + 6, &end);
		if (end == t + 6 || *end || !(*scale >= 0) || *scale > 1000)
			return -1;
	} else
		return -1;
	return 0;
}

/* Options that belong to one --as mode only: their names, by getopt code. */
static const struct {
	int code;
	const char *name;
	int server; /* 1: --as server only; 0: --as client only */
} mode_only[] = {
	{'S', "--strict", 1},
	{'t', "--timing", 1},
	{'R', "--report", 1},
	{'W', "--listen", 1},
	{'P', "--path", 1},
	{'A', "--allow-host", 1},
	{'K', "--client-timeout", 1},
	{'O', "--timeout", 0},
	{'n', "--runs", 0},
	{'F', "--fast", 0},
	{'v', "--verbose", 0},
	{'U', "--url", 0},
	{'M', "--streamable-http", 0},
	{'C', "--cacert", 0},
	{'I', "--insecure", 0},
	{'E', "--header", 0},
	{'X', "--reset", 0},
};

/*
 * How the mock serves over HTTP: the recording's transport (legacy HTTP+SSE
 * when it was, or when --legacy-sse says so; the 2026-07-28 revision, or an
 * HTTP recording with no initialize, statelessly), its endpoint (its path, unless --path), and Mcp-Session-Id
 * minted when the recorded server named one (a stdio recording: always); with
 * sessions (-s), over all of them.
 * ho->post_path is owned (or NULL).
 */
static void http_setup(struct store *st, const struct rp_script *s, const int64_t *sessions, size_t nsessions,
		       const char *listen, const char *path, int legacy, struct mock_http_opts *ho)
{
	struct store_session_row row;
	struct mt_err err = {"", 0};
	int have_row = store_session_get(st, s->session, &row, &err) == 0;

	memset(ho, 0, sizeof(*ho));
	ho->listen = listen;
	ho->legacy = legacy || s->transport == RP_SSE;
	/* 2026-07-28: its version, or an HTTP recording without an initialize. */
	ho->stateless = !ho->legacy &&
			((have_row && row.protocol_version && !strcmp(row.protocol_version, "2026-07-28")) ||
			 (s->transport == RP_HTTP && !rp_name(s, "initialize")));
	ho->session_ids =
		s->transport != RP_HTTP || (have_row && row.http_session_id && row.http_session_id[0]);
	/* Several sessions (-s): ids are minted when any of them had one, and a
	 * 2026-07-28 request (no initialize, no session id) is served statelessly
	 * beside them when they mix. */
	for (size_t i = 0; i < nsessions && s->transport == RP_HTTP && !ho->legacy; i++) {
		struct store_session_row r;
		if (store_session_get(st, sessions[i], &r, &err) != 0)
			continue;
		if (r.http_session_id && r.http_session_id[0])
			ho->session_ids = 1;
		else /* (one without: perhaps 2026-07-28, which has none) */
			ho->also_stateless = 1;
		store_session_row_release(&r);
	}
	if (ho->stateless && ho->session_ids) {
		ho->stateless = 0; /* (the stateful ones need their ids) */
		ho->also_stateless = 1;
	}
	if (ho->legacy && s->transport == RP_SSE && have_row && row.http_session_id) {
		/* The recorded endpoint ("/message?sessionId=..."): its path. */
		size_t n = strcspn(row.http_session_id, "?#");
		if (n && row.http_session_id[0] == '/')
			ho->post_path = mt_strndup(row.http_session_id, n);
	}
	ho->path = path                                                  ? path
		   : s->path && (s->transport == RP_SSE) == !!ho->legacy ? s->path
		   : ho->legacy                                          ? "/sse"
									 : "/mcp";
	if (have_row)
		store_session_row_release(&row);
}

/* verify_run's report: on standard output (NULL: flush it). */
static void verify_line(void *ctx, const char *text)
{
	(void)ctx;
	if (text)
		fputs(text, stdout);
	else
		fflush(stdout);
}

static const struct option longopts[] = {
	{"read", required_argument, NULL, 'r'},
	{"session", required_argument, NULL, 's'},
	{"filter", required_argument, NULL, 'Y'},
	{"as", required_argument, NULL, 'a'},
	{"strict", no_argument, NULL, 'S'},
	{"timing", required_argument, NULL, 't'},
	{"report", required_argument, NULL, 'R'},
	{"ignore", required_argument, NULL, 'i'},
	{"timeout", required_argument, NULL, 'O'},
	{"timeout-ms", required_argument, NULL, 'O'}, /* (its older name) */
	{"runs", required_argument, NULL, 'n'},
	{"reset", required_argument, NULL, 'X'},
	{"fast", no_argument, NULL, 'F'},
	{"verbose", no_argument, NULL, 'v'},
	{"no-store", no_argument, NULL, 'N'},
	{"listen", required_argument, NULL, 'W'},
	{"path", required_argument, NULL, 'P'},
	{"allow-host", required_argument, NULL, 'A'},
	{"client-timeout", required_argument, NULL, 'K'},
	{"legacy-sse", no_argument, NULL, 'G'},
	{"url", required_argument, NULL, 'U'},
	{"streamable-http", no_argument, NULL, 'M'},
	{"cacert", required_argument, NULL, 'C'},
	{"insecure", no_argument, NULL, 'I'},
	{"header", required_argument, NULL, 'E'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* What replay's command line says, and what a run of it holds. */
struct replay {
	struct cli_read rd;
	const char *path; /* the capture file (-r, or $MCPTAP_FILE) */
	const char *as, *timing, *report, *listen, *http_path, *url, *cacert, *reset;
	const char **ignore; /* --ignore paths (argv's strings; the array owned) */
	size_t nignore;
	json_t *ignore_json; /* ... as a JSON array, stored with the run */
	char *ignore_text;   /* ... as its text (owned) */
	int strict, no_store, fast, verbose, legacy, insecure, client_timeout_ms, timeout_ms;
	int64_t runs;
	int given[128];            /* by getopt code: the option was given */
	const char *given_as[128]; /* ... under this long name (--timeout-ms) */
	enum verify_transport transport;
	char **headers; /* --header, made from the environment (owned, each owned) */
	size_t nheaders;
	const char **allow; /* --allow-host values (argv's strings; the array owned) */
	size_t nallow;
	double scale;
	int ordered;
	char *resolved; /* --url, resolved (owned) */
	/* the run */
	struct store *st;
	int writable;
	struct mt_filter *filter;
	int64_t *sessions; /* -s with more than one: theirs (owned) */
	size_t nsessions;
	int64_t id; /* the session replayed (the newest of them) */
	struct canon_ignore ig;
	struct rp_script s;
	int loaded;
};

static void replay_init(struct replay *r, int argc)
{
	memset(r, 0, sizeof(*r));
	r->timing = "ordered";
	r->timeout_ms = 10000;
	r->runs = 2;
	r->ordered = 1;
	r->transport = VERIFY_AUTO;
	r->ignore_json = json_array();
	r->headers = mt_calloc((size_t)argc + 1, sizeof(*r->headers));
	r->allow = mt_calloc((size_t)argc + 1, sizeof(*r->allow));
}

static void replay_release(struct replay *r)
{
	free(r->sessions);
	if (r->loaded)
		rp_release(&r->s);
	store_set_filter(r->st, NULL, 0);
	mt_filter_free(r->filter);
	/* The capture stayed open for the run: if it was deleted or replaced
	 * meanwhile, its journal must not go to the file now at its path. */
	if (r->st && store_file_moved(r->st))
		store_close_moved(r->st);
	else
		store_close(r->st);
	free(r->ignore);
	free(r->ignore_text);
	json_decref(r->ignore_json);
	for (size_t k = 0; k < r->nheaders; k++)
		free(r->headers[k]);
	free(r->headers);
	free(r->allow);
	free(r->resolved);
}

/* A usage error of replay's said: -1. */
static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_usage_error(&cmd_replay, "%s", msg);
	return -1;
}

/* One option of replay's (c, as getopt_long gave it): 1 taken, 0 not one of these, -1 after saying why. */
static int replay_option(struct replay *r, int c, const char *arg)
{
	int64_t n;

	if (cli_read_option(&cmd_replay, &r->rd, c, arg))
		return 1;
	switch (c) {
	case 'a': r->as = arg; break;
	case 'S': r->strict = 1; break;
	case 't': r->timing = arg; break;
	case 'R': r->report = arg; break;
	case 'F': r->fast = 1; break;
	case 'v': r->verbose = 1; break;
	case 'i':
		r->ignore = mt_realloc(r->ignore, (r->nignore + 1) * sizeof(*r->ignore));
		r->ignore[r->nignore++] = arg;
		json_array_append_new(r->ignore_json, json_string(arg));
		break;
	case 'O':
		if (cli_duration_ms(&cmd_replay, r->given_as[c] ? r->given_as[c] : "timeout", arg, MT_HOUR,
				    "1ms to 1h", &r->timeout_ms))
			return -1;
		break;
	case 'n':
		if (mt_parse_int64(arg, &n) || n < 1 || n > VERIFY_MAX_RUNS)
			return usage("bad --runs '%s' (1 to %d)", arg, VERIFY_MAX_RUNS);
		r->runs = n;
		break;
	case 'N': r->no_store = 1; break;
	case 'W': r->listen = arg; break;
	case 'A': r->allow[r->nallow++] = arg; break;
	case 'K':
		if (cli_duration_ms(&cmd_replay, "client-timeout", arg, 24 * MT_HOUR, "1ms to 24h",
				    &r->client_timeout_ms))
			return -1;
		break;
	case 'P':
		if (arg[0] != '/')
			return usage("bad --path '%s' (it starts with /)", arg);
		r->http_path = arg;
		break;
	case 'U': r->url = arg; break;
	case 'G': /* (both modes: the mock serves it, verify talks it) */
	case 'M':
		if (r->transport != VERIFY_AUTO &&
		    r->transport != (c == 'G' ? VERIFY_LEGACY : VERIFY_STREAMABLE))
			return usage("--legacy-sse and --streamable-http contradict each other");
		r->transport = c == 'G' ? VERIFY_LEGACY : VERIFY_STREAMABLE;
		r->legacy = c == 'G';
		break;
	case 'C':
		if (access(arg, R_OK))
			return usage("cannot read --cacert '%s': %s", arg, strerror(errno));
		r->cacert = arg;
		break;
	case 'I': r->insecure = 1; break;
	case 'X':
		if (!*arg)
			return usage("--reset needs a command");
		r->reset = arg;
		break;
	case 'E':
		if (!(r->headers[r->nheaders] = cli_env_header(&cmd_replay, "--header", arg)))
			return -1;
		r->nheaders++;
		break;
	default: return 0;
	}
	return 1;
}

/* What the options say together, checked (more: a command follows them). 0, or -1 after saying why. */
static int replay_check(struct replay *r, int more)
{
	const char *as = r->as;
	int server;

	if (!as || (strcmp(as, "server") && strcmp(as, "client")))
		return usage("say --as server or --as client");
	server = !strcmp(as, "server");
	for (size_t k = 0; k < sizeof(mode_only) / sizeof(mode_only[0]); k++) {
		if (r->given[mode_only[k].code] && mode_only[k].server != server) {
			const char *name = r->given_as[mode_only[k].code];
			return usage("%s%s is for --as %s, not --as %s", name ? "--" : "",
				     name ? name : mode_only[k].name,
				     mode_only[k].server ? "server" : "client", as);
		}
	}
	if (server && (r->http_path || r->legacy || r->nallow) && !r->listen)
		return usage("--path, --legacy-sse and --allow-host serve over HTTP: they need --listen");
	if (r->listen && cli_check_listen(&cmd_replay, r->listen))
		return -1;
	if (server && more)
		return usage("--as server takes no command");
	if (!server && !r->url && !more)
		return usage("--as client needs the server's command after --, or --url URL");
	if (r->url && more)
		return usage("--url and a command: give one server");
	if (!server && !r->url && (r->transport != VERIFY_AUTO || r->cacert || r->insecure || r->nheaders))
		return usage("--legacy-sse, --streamable-http, --cacert, --insecure and --header need --url");
	if (r->url && !(r->resolved = hc_resolve(r->url, r->url)))
		return usage("bad --url '%s': an http:// or https:// URL", r->url);
	if (parse_timing(r->timing, &r->scale, &r->ordered))
		return usage("bad --timing '%s' (ordered, none, recorded, scale=X)", r->timing);
	if (!(r->path = cli_capture_path(r->rd.path)))
		return usage("no capture file: give -r FILE or set MCPTAP_FILE");
	return 0;
}

/*
 * Open the capture (for writing too when a client run is stored in it),
 * set -Y's filter, pick the session or sessions, and load the script. 0, or
 * -1 after saying why.
 */
static int replay_load(struct replay *r)
{
	const char *sid = r->rd.sid, *path = r->path;
	struct mt_err err = {"", 0};
	int client = !strcmp(r->as, "client"), all;

	/* A client run is stored in the capture file as it goes; a mock reads it
	 * while it serves, and stores its run when the client is gone. A file
	 * that cannot be written is read all the same, and the run not stored. */
	if (client && !r->no_store && store_open(path, STORE_UPDATE, &r->st, &err) == 0) {
		r->writable = 1;
	} else {
		if (cli_open_capture(path, &r->st))
			return -1;
		if (client && !r->no_store)
			mt_warn("replay: the run is not stored in '%s': %s", path, err.msg);
	}
	if (r->rd.expr) {
		/* The user's expression is checked alone (its columns are theirs); the
		 * lifecycle is always replayed. */
		struct mt_buf b = MT_BUF_INIT;
		if (!(r->filter = cli_filter(&cmd_replay, r->rd.expr)))
			return -1;
		mt_filter_free(r->filter);
		mt_buf_printf(&b, "(%s) or method == initialize or method == notifications/initialized",
			      r->rd.expr);
		r->filter = cli_filter(&cmd_replay, b.data);
		mt_buf_release(&b);
		if (!r->filter)
			return -1;
		store_set_filter(r->st, r->filter, STORE_FILTER_PAIRS);
	}
	/* More than one session (a list, a range, all) is for the HTTP mock. */
	all = sid && strspn(sid, "0123456789") != strlen(sid);
	if (all && (client || !r->listen))
		return usage(
			"-s with more than one session is for --as server --listen (each client's session a "
			"run of one of them)");
	if (all && cli_session_list_problem(sid))
		return usage("bad session list '%s': %s", sid, cli_session_list_problem(sid));
	/* (more than one: the newest of them says how to serve) */
	if (all) {
		if (cli_pick_sessions(r->st, path, sid, CLI_NEWEST, &r->sessions, &r->nsessions))
			return -1;
		r->id = r->sessions[r->nsessions - 1];
	} else if (cli_pick_session(r->st, path, sid, &r->id)) {
		return -1;
	}
	r->ig.paths = r->ignore;
	r->ig.n = r->nignore;
	if (rp_load(r->st, r->id, &r->ig, &r->s, &err))
		return mt_error("cannot read session %lld of '%s': %s", (long long)r->id, path, err.msg);
	r->loaded = 1;
	if (r->s.n == 0)
		return mt_error("session %lld of '%s' has no messages to replay", (long long)r->id, path);
	if (rp_ignore_check(&r->s, &err))
		return usage("%s", err.msg);
	r->ignore_text = json_dumps(r->ignore_json, JSON_COMPACT);
	return 0;
}

/* --as server: the mock, on stdio or over HTTP (--listen). Its exit status. */
static int replay_server(struct replay *r, int argc, char **argv)
{
	struct mt_buf self = MT_BUF_INIT;
	int rc;

	if (!r->s.server_msgs)
		mt_warn("replay: session %lld has no server messages: every request will miss",
			(long long)r->id);
	mt_buf_puts(&self, "mcptap");
	for (int k = 0; k < argc; k++) {
		mt_buf_putc(&self, ' ');
		mt_shell_quote(&self, argv[k]);
	}
	struct mock_opts mo = {
		.scale = r->scale,
		.ordered = r->ordered,
		.strict = r->strict,
		.report = r->report,
		.store_path = r->no_store ? NULL : r->path,
		.command = self.data,
		.ignore_json = r->ignore_text,
		.voice = {mt_say_stderr, NULL},
	};
	if (r->listen) {
		struct mock_http_opts ho;
		struct mt_err merr = {"", 0};
		http_setup(r->st, &r->s, r->sessions, r->nsessions, r->listen, r->http_path, r->legacy, &ho);
		ho.sessions = r->sessions;
		ho.nsessions = r->nsessions;
		ho.allow_hosts = r->allow;
		ho.n_allow_hosts = r->nallow;
		ho.client_timeout_ms = r->client_timeout_ms;
		rc = mock_http_serve(r->st, &r->s, &r->ig, &mo, &ho, &merr);
		if (merr.msg[0])
			mt_error("%s", merr.msg);
		free((char *)ho.post_path);
	} else {
		rc = mock_serve(&r->s, &mo);
	}
	mt_buf_release(&self);
	return rc;
}

/* --as client: the recorded client against the server argv runs or --url names. Its exit status. */
static int replay_client(struct replay *r, char **argv)
{
	struct mt_err verr = {"", 0};
	int rc;

	if (!r->s.requests)
		mt_warn("replay: session %lld has no client requests: nothing to compare", (long long)r->id);
	struct verify_opts vo = {
		.argv = argv,
		.timeout_ms = r->timeout_ms,
		.st = r->writable ? r->st : NULL,
		.store_path = r->path,
		.ignore_json = r->ignore_text,
		.runs = (int)r->runs,
		.fast = r->fast,
		.verbose = r->verbose,
		.url = r->url,
		.transport = r->transport,
		.cacert = r->cacert,
		.insecure = r->insecure,
		.headers = (const char *const *)r->headers,
		.nheaders = r->nheaders,
		.reset = r->reset,
		.line = verify_line,
		.voice = {mt_say_stderr, NULL},
	};
	if (r->insecure)
		mt_warn("--insecure: the server's certificate and host name are not checked");
	rc = verify_run(&r->s, &vo, &verr);
	if (verr.msg[0])
		mt_error("%s", verr.msg);
	return rc;
}

static int run_replay(int argc, char **argv)
{
	struct replay r;
	int c, li, taken, rc = EXIT_ERROR;

	/* A peer that goes away is an answer to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	replay_init(&r, argc);
	optind = 1;
	opterr = 0;
	while ((li = -1, c = getopt_long(argc, argv, "+:r:s:Y:vh", longopts, &li)) != -1) {
		if (c > 0 && c < 128) {
			r.given[c] = 1;
			if (li >= 0)
				r.given_as[c] = longopts[li].name;
		}
		taken = replay_option(&r, c, optarg);
		if (taken < 0)
			goto out;
		if (taken)
			continue;
		if (c == 'h') {
			cli_help(&cmd_replay, stdout);
			rc = EXIT_OK;
		} else {
			rc = cli_bad_option(&cmd_replay, c, argv);
		}
		goto out;
	}
	if (replay_check(&r, optind < argc) || replay_load(&r))
		goto out;
	rc = !strcmp(r.as, "server") ? replay_server(&r, argc, argv) : replay_client(&r, argv + optind);
out:
	replay_release(&r);
	return rc;
}
