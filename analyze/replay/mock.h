/*
 * mock.h - the mock server: a recorded session answering a live client
 * (`mcptap replay --as server`). The matching rules are in replay.h; the wire
 * is tap/stdio/lineio.h (stdio lines).
 */
#ifndef MCPTAP_MOCK_H
#define MCPTAP_MOCK_H

#include <signal.h>
#include <jansson.h>

#include "analyze/replay/replay.h"
#include "schema/util.h"

/*
 * The mock's JSON-RPC error code for "no recorded answer". It lies outside
 * JSON-RPC's reserved range (-32768..-32000), where the SDKs put their own
 * codes (-32001 is the TypeScript SDK's RequestTimeout).
 */
#define MOCK_MISS_CODE (-30900)

struct mock_opts {
	double scale;            /* recorded gaps times scale; 0: none */
	int ordered;             /* an answer waits until the client has read what the
				  * server sent before it (every --timing but none) */
	int strict;              /* exit 1 on a miss or an unused recording */
	const char *report;      /* --report FILE: the run's summary as JSON, or NULL */
	const char *store_path;  /* the capture file to store the run in; NULL: --no-store */
	const char *command;     /* the mock's own command line, for the stored run */
	const char *ignore_json; /* the --ignore paths as a JSON array text, or NULL */
	/*
	 * What the mock says while it runs, whole lines ("mcptap: ...\n") for the
	 * caller to print: its warnings, the summary of misses at the end, and
	 * (the HTTP mock) where it listens (hsv_opts.voice). Zero: nothing is said.
	 */
	struct mt_voice voice;
};

/*
 * Serve s on stdin/stdout until the client closes stdin, stops reading, or
 * SIGTERM, SIGINT or SIGHUP comes (caught while it serves: the run then ends
 * the same way, stdin and stdout turned to /dev/null). Then the summary goes
 * to o->report and the run into o->store_path (see NOTES on the summary's
 * members). Returns the exit status (EXIT_OK, or EXIT_FINDINGS under strict
 * when a request missed or a recorded one was never asked for).
 */
int mock_serve(struct rp_script *s, const struct mock_opts *o);

/*
 * The engine under mock_serve, for any transport: one run of a live client
 * through the recording. It takes the client's messages one at a time
 * (mock_feed) and hands the server's to the transport's sink, with what it
 * needs to send each the way the recording did.
 */
struct mock;

/* A server message the mock sends. */
struct mock_out {
	int kind;            /* enum mt_kind */
	int64_t rec;         /* the recorded message (its index in the script); -1: one the
			      * mock made (an error answer) */
	const char *answers; /* an answer: the live id (JSON text) of the request it answers,
			      * else NULL; borrowed for the call */
	size_t answers_n;
	const char *on; /* recorded on the SSE stream of a POST (via RP_VIA_POST): the
			 * live id of the request that stands for the one that POST
			 * carried, while it is live; else NULL */
	size_t on_n;
	enum rp_via via; /* how the recorded message travelled */
	int64_t refused; /* an error standing for the recorded server's HTTP refusal of
			  * this recorded request (rp_refusal), or -1 */
};

struct mock_sink {
	void *ctx;
	/* One message, p (n bytes, no newline), borrowed for the call. */
	void (*send)(void *ctx, const char *p, size_t n, const struct mock_out *o);
	/*
	 * An answer follows server messages (ordered timing): what went out
	 * before must reach the client first, in an earlier read. Returns 0
	 * (done), 1 (it waited as long as it may), or -1 (the transport cannot
	 * tell: not counted). NULL: no such waits.
	 */
	int (*barrier)(void *ctx);
	/* The recorded gap before the next message, scaled (NULL: none). */
	void (*delay)(void *ctx, int64_t ns);
};

/*
 * A run of s (borrowed, and changed: each run needs a script of its own) for
 * one live client; sink is copied; *stop (may be NULL) non-zero ends what is
 * being played. Never NULL.
 */
struct mock *mock_new(struct rp_script *s, const struct mock_opts *o, const struct mock_sink *sink,
		      const volatile sig_atomic_t *stop);
/* Send what the recorded server sent before any client message. */
void mock_begin(struct mock *k);
/* One message from the live client (p: n bytes, no newline). */
void mock_feed(struct mock *k, const char *p, size_t n);
/*
 * The run is over (ended says why: "eof", "SIGTERM", ...): warnings to
 * o->voice; *summary is set to the run's summary (a new reference; see NOTES).
 * Returns the exit status as mock_serve's.
 */
int mock_end(struct mock *k, const char *ended, json_t **summary);
/* Store the ended run (its summary from mock_end) into o->store_path, when there is one. */
void mock_save(struct mock *k, json_t *summary);
void mock_free(struct mock *k);

/* Where and how the mock serves over HTTP (mock_http_serve). */
struct mock_http_opts {
	const char *listen;             /* HOST:PORT */
	const char *const *allow_hosts; /* on loopback, names let in besides loopback ones
					 * (--allow-host); borrowed */
	size_t n_allow_hosts;
	int client_timeout_ms;   /* --client-timeout; 0: the default */
	const char *path;        /* the MCP endpoint (legacy: the SSE stream's path) */
	const char *post_path;   /* legacy: where POSTs go; NULL: "/message" */
	int legacy;              /* HTTP+SSE (2024-11-05) */
	int stateless;           /* 2026-07-28: no sessions on the wire */
	int session_ids;         /* Streamable HTTP: mint Mcp-Session-Id */
	int also_stateless;      /* Streamable HTTP: a 2026-07-28 request outside any session
				  * is served statelessly beside the sessions */
	const int64_t *sessions; /* serve these sessions of the capture (borrowed; NULL: s
				  * alone): a live session is a run of the one its first message
				  * picks (see mock_http_serve) */
	size_t nsessions;
};

/*
 * Serve the recording s (loaded from st, which stays open) over HTTP until
 * SIGINT or SIGTERM: each MCP session a client opens is a run of its own
 * (its own script, loaded from st again, with ig), stored when it ends as
 * mock_serve stores its one. With ho->sessions, a live session is a run of the
 * recorded session its first message picks: the first not run yet of the
 * same client (its initialize's clientInfo name and version), else the one of
 * them run least, else (a client never recorded) the session run least. o->report gets {session, transport, runs,
 * sessions: [each run's summary, with its http_session], ok}. Returns the
 * worst exit status of the runs, or EXIT_ERROR with fail set when it could
 * not serve (the sessions to serve could not be read or there were none, the
 * HTTP server could not start).
 */
int mock_http_serve(struct store *st, struct rp_script *s, const struct canon_ignore *ig,
		    const struct mock_opts *o, const struct mock_http_opts *ho, struct mt_err *fail);

/*
 * Write a summary to path through path.tmp (a reader never sees half of it),
 * mode 0600 whatever the umask (mt_open_private); a failure is a warning to v.
 */
void mock_write_report(const char *path, json_t *sum, const struct mt_voice *v);

#endif
