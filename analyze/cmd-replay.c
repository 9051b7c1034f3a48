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

/* What the HTTP mock says (mock_opts.say): on stderr. */
static void say_line(void *ctx, const char *text)
{
	(void)ctx;
	fputs(text, stderr);
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

static int run_replay(int argc, char **argv)
{
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
	/* A peer that goes away is an answer to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	const char **ignore = NULL;
	size_t nignore = 0;
	struct cli_read rd = {.path = NULL};
	const char *path, *sid, *as = NULL, *timing = "ordered", *report = NULL;
	const char *listen = NULL, *http_path = NULL, *expr;
	struct mt_filter *filter = NULL;
	int legacy = 0, all = 0;
	int64_t *sessions = NULL;
	size_t nsessions = 0;
	struct store *st = NULL;
	struct rp_script s;
	struct mt_err err = {"", 0};
	struct canon_ignore ig;
	int strict = 0, no_store = 0, fast = 0, verbose = 0, c, rc = EXIT_ERROR, loaded = 0;
	int writable = 0;
	int64_t id, n, timeout_ms = 10000, runs = 2;
	int given[128] = {0};
	const char *given_as[128] = {NULL}; /* a long option's name as given (--timeout-ms) */
	double scale = 0;
	int ordered = 1;
	json_t *ignore_json = json_array();
	char *ignore_text = NULL;
	struct mt_buf self = MT_BUF_INIT;
	const char *url = NULL, *cacert = NULL, *reset = NULL;
	int insecure = 0;
	enum verify_transport transport = VERIFY_AUTO;
	char **headers = mt_calloc((size_t)argc + 1, sizeof(*headers)); /* owned, each owned */
	size_t nheaders = 0;
	const char **allow = mt_calloc((size_t)argc + 1, sizeof(*allow)); /* owned (argv's strings) */
	size_t nallow = 0;
	int client_timeout_ms = 0, li;
	int64_t ns;
	char *resolved = NULL;

	optind = 1;
	opterr = 0;
	while ((li = -1, c = getopt_long(argc, argv, "+:r:s:Y:vh", longopts, &li)) != -1) {
		if (c > 0 && c < 128) {
			given[c] = 1;
			if (li >= 0)
				given_as[c] = longopts[li].name;
		}
		if (cli_read_option(&cmd_replay, &rd, c, optarg))
			continue;
		switch (c) {
		case 'a': as = optarg; break;
		case 'S': strict = 1; break;
		case 't': timing = optarg; break;
		case 'R': report = optarg; break;
		case 'F': fast = 1; break;
		case 'v': verbose = 1; break;
		case 'i':
			ignore = mt_realloc(ignore, (nignore + 1) * sizeof(*ignore));
			ignore[nignore++] = optarg;
			json_array_append_new(ignore_json, json_string(optarg));
			break;
		case 'O':
			if (mt_parse_duration(optarg, MT_MS, &ns) || ns < MT_MS || ns > MT_HOUR) {
				rc = cli_usage_error(&cmd_replay,
						     "bad --%s '%s' (a duration, 1ms to 1h: "
						     "500ms, 2s; a bare number is ms)",
						     given_as[c] ? given_as[c] : "timeout", optarg);
				goto out;
			}
			timeout_ms = mt_duration_in(ns, MT_MS);
			break;
		case 'n':
			if (mt_parse_int64(optarg, &n) || n < 1 || n > VERIFY_MAX_RUNS) {
				rc = cli_usage_error(&cmd_replay, "bad --runs '%s' (1 to %d)", optarg,
						     VERIFY_MAX_RUNS);
				goto out;
			}
			runs = n;
			break;
		case 'N': no_store = 1; break;
		case 'W': listen = optarg; break;
		case 'A': allow[nallow++] = optarg; break;
		case 'K':
			if (mt_parse_duration(optarg, MT_MS, &ns) || ns < MT_MS || ns > 24 * MT_HOUR) {
				rc = cli_usage_error(&cmd_replay,
						     "bad --client-timeout '%s' (a duration, 1ms "
						     "to 24h: 500ms, 2s; a bare number is ms)",
						     optarg);
				goto out;
			}
			client_timeout_ms = (int)mt_duration_in(ns, MT_MS);
			break;
		case 'P':
			if (optarg[0] != '/') {
				rc = cli_usage_error(&cmd_replay, "bad --path '%s' (it starts with /)",
						     optarg);
				goto out;
			}
			http_path = optarg;
			break;
		case 'U': url = optarg; break;
		case 'G': /* (both modes: the mock serves it, verify talks it) */
		case 'M':
			if (transport != VERIFY_AUTO &&
			    transport != (c == 'G' ? VERIFY_LEGACY : VERIFY_STREAMABLE)) {
				rc = cli_usage_error(&cmd_replay,
						     "--legacy-sse and --streamable-http contradict "
						     "each other");
				goto out;
			}
			transport = c == 'G' ? VERIFY_LEGACY : VERIFY_STREAMABLE;
			legacy = c == 'G';
			break;
		case 'C':
			if (access(optarg, R_OK)) {
				rc = cli_usage_error(&cmd_replay, "cannot read --cacert '%s': %s", optarg,
						     strerror(errno));
				goto out;
			}
			cacert = optarg;
			break;
		case 'I': insecure = 1; break;
		case 'X':
			if (!*optarg) {
				rc = cli_usage_error(&cmd_replay, "--reset needs a command");
				goto out;
			}
			reset = optarg;
			break;
		case 'E':
			if (!(headers[nheaders] = cli_env_header(&cmd_replay, "--header", optarg))) {
				rc = EXIT_ERROR;
				goto out;
			}
			nheaders++;
			break;
		case 'h':
			cli_help(&cmd_replay, stdout);
			rc = EXIT_OK;
			goto out;
		default: rc = cli_bad_option(&cmd_replay, c, argv); goto out;
		}
	}
	path = rd.path;
	sid = rd.sid;
	expr = rd.expr;
	if (!as || (strcmp(as, "server") && strcmp(as, "client"))) {
		rc = cli_usage_error(&cmd_replay, "say --as server or --as client");
		goto out;
	}
	for (size_t k = 0; k < sizeof(mode_only) / sizeof(mode_only[0]); k++) {
		if (given[mode_only[k].code] && mode_only[k].server != !strcmp(as, "server")) {
			const char *name = given_as[mode_only[k].code];
			rc = cli_usage_error(&cmd_replay, "%s%s is for --as %s, not --as %s",
					     name ? "--" : "", name ? name : mode_only[k].name,
					     mode_only[k].server ? "server" : "client", as);
			goto out;
		}
	}
	if (!strcmp(as, "server") && (http_path || legacy || nallow) && !listen) {
		rc = cli_usage_error(&cmd_replay, "--path, --legacy-sse and --allow-host serve over HTTP: "
						  "they need --listen");
		goto out;
	}
	if (listen && (rc = cli_check_listen(&cmd_replay, listen)))
		goto out;
	if (!strcmp(as, "server") && optind < argc) {
		rc = cli_usage_error(&cmd_replay, "--as server takes no command");
		goto out;
	}
	if (!strcmp(as, "client") && !url && optind >= argc) {
		rc = cli_usage_error(&cmd_replay,
				     "--as client needs the server's command after --, or --url URL");
		goto out;
	}
	if (url && optind < argc) {
		rc = cli_usage_error(&cmd_replay, "--url and a command: give one server");
		goto out;
	}
	if (!strcmp(as, "client") && !url && (transport != VERIFY_AUTO || cacert || insecure || nheaders)) {
		rc = cli_usage_error(&cmd_replay, "--legacy-sse, --streamable-http, --cacert, --insecure "
						  "and --header need --url");
		goto out;
	}
	if (url && !(resolved = hc_resolve(url, url))) {
		rc = cli_usage_error(&cmd_replay, "bad --url '%s': an http:// or https:// URL", url);
		goto out;
	}
	if (parse_timing(timing, &scale, &ordered)) {
		rc = cli_usage_error(&cmd_replay, "bad --timing '%s' (ordered, none, recorded, scale=X)",
				     timing);
		goto out;
	}
	if (!(path = cli_capture_path(path))) {
		rc = cli_usage_error(&cmd_replay, "no capture file: give -r FILE or set MCPTAP_FILE");
		goto out;
	}
	/* A client run is stored in the capture file as it goes; a mock reads it
	 * while it serves, and stores its run when the client is gone. A file
	 * that cannot be written is read all the same, and the run not stored. */
	if (!strcmp(as, "client") && !no_store && store_open(path, STORE_UPDATE, &st, &err) == 0) {
		writable = 1;
	} else {
		if (cli_open_capture(path, &st))
			goto out;
		if (!strcmp(as, "client") && !no_store)
			mt_warn("replay: the run is not stored in '%s': %s", path, err.msg);
	}
	if (expr) {
		/* The user's expression is checked alone (its columns are theirs); the
		 * lifecycle is always replayed. */
		struct mt_buf b = MT_BUF_INIT;
		if (!(filter = cli_filter(&cmd_replay, expr)))
			goto out;
		mt_filter_free(filter);
		mt_buf_printf(&b, "(%s) or method == initialize or method == notifications/initialized",
			      expr);
		filter = cli_filter(&cmd_replay, b.data);
		mt_buf_release(&b);
		if (!filter)
			goto out;
		store_set_filter(st, filter, STORE_FILTER_PAIRS);
	}
	/* More than one session (a list, a range, all) is for the HTTP mock. */
	all = sid && strspn(sid, "0123456789") != strlen(sid);
	if (all && (strcmp(as, "server") || !listen)) {
		rc = cli_usage_error(&cmd_replay, "-s with more than one session is for --as server "
						  "--listen (each client's session a run of one of them)");
		goto out;
	}
	if (all && cli_session_list_problem(sid)) {
		rc = cli_usage_error(&cmd_replay, "bad session list '%s': %s", sid,
				     cli_session_list_problem(sid));
		goto out;
	}
	/* (more than one: the newest of them says how to serve) */
	if (all) {
		if (cli_pick_sessions(st, path, sid, CLI_NEWEST, &sessions, &nsessions))
			goto out;
		id = sessions[nsessions - 1];
	} else if (cli_pick_session(st, path, sid, &id)) {
		goto out;
	}
	ig.paths = ignore;
	ig.n = nignore;
	if (rp_load(st, id, &ig, &s, &err)) {
		mt_error("cannot read session %lld of '%s': %s", (long long)id, path, err.msg);
		goto out;
	}
	loaded = 1;
	if (s.n == 0) {
		mt_error("session %lld of '%s' has no messages to replay", (long long)id, path);
		goto out;
	}
	if (rp_ignore_check(&s, &err)) {
		rc = cli_usage_error(&cmd_replay, "%s", err.msg);
		goto out;
	}
	ignore_text = json_dumps(ignore_json, JSON_COMPACT);
	if (!strcmp(as, "server")) {
		if (!s.server_msgs)
			mt_warn("replay: session %lld has no server messages: every request will miss",
				(long long)id);
		mt_buf_puts(&self, "mcptap");
		for (int k = 0; k < argc; k++) {
			mt_buf_putc(&self, ' ');
			mt_shell_quote(&self, argv[k]);
		}
		struct mock_opts mo = {scale,     ordered,     strict,   report, no_store ? NULL : path,
				       self.data, ignore_text, say_line, NULL};
		if (listen) {
			struct mock_http_opts ho;
			http_setup(st, &s, sessions, nsessions, listen, http_path, legacy, &ho);
			ho.sessions = sessions;
			ho.nsessions = nsessions;
			ho.allow_hosts = allow;
			ho.n_allow_hosts = nallow;
			ho.client_timeout_ms = client_timeout_ms;
			struct mt_err merr = {"", 0};
			rc = mock_http_serve(st, &s, &ig, &mo, &ho, &merr);
			if (merr.msg[0])
				mt_error("%s", merr.msg);
			free((char *)ho.post_path);
		} else {
			rc = mock_serve(&s, &mo);
		}
	} else {
		if (!s.requests)
			mt_warn("replay: session %lld has no client requests: nothing to compare",
				(long long)id);
		struct verify_opts vo = {
			.argv = argv + optind,
			.timeout_ms = (int)timeout_ms,
			.st = writable ? st : NULL,
			.store_path = path,
			.ignore_json = ignore_text,
			.runs = (int)runs,
			.fast = fast,
			.verbose = verbose,
			.url = url,
			.transport = transport,
			.cacert = cacert,
			.insecure = insecure,
			.headers = (const char *const *)headers,
			.nheaders = nheaders,
			.reset = reset,
			.line = verify_line,
			.voice = {mt_say_stderr, NULL},
		};
		struct mt_err verr = {"", 0};
		if (insecure)
			mt_warn("--insecure: the server's certificate and host name are not checked");
		rc = verify_run(&s, &vo, &verr);
		if (verr.msg[0])
			mt_error("%s", verr.msg);
	}
out:
	free(sessions);
	if (loaded)
		rp_release(&s);
	store_set_filter(st, NULL, 0);
	mt_filter_free(filter);
	/* The capture stayed open for the run: if it was deleted or replaced
	 * meanwhile, its journal must not go to the file now at its path. */
	if (st && store_file_moved(st))
		store_close_moved(st);
	else
		store_close(st);
	free(ignore);
	free(ignore_text);
	json_decref(ignore_json);
	mt_buf_release(&self);
	for (size_t k = 0; k < nheaders; k++)
		free(headers[k]);
	free(headers);
	free(allow);
	free(resolved);
	return rc;
}
