/*
 * httptap.h - the HTTP tap: a transparent reverse proxy in front of an MCP
 * server on Streamable HTTP or legacy HTTP+SSE, logging every exchange and
 * every JSON-RPC message it relays.
 *
 * A byte relay: each client connection gets its own upstream connection
 * (bufferevents; OpenSSL through bufferevent_openssl for https), the bytes
 * of each side go to the other as they came but for the edits a reverse
 * proxy cannot avoid (httptap.c says which), and a copy of each direction is
 * read by the one strict HTTP/1.1 reader (httpstream.h), which says what it
 * read to httplog.c. Event loops in threads of their own (one per CPU by
 * default), each with its own listening socket on the same port; they share
 * the session tracker and one writer (tap/writer.h) that stores every session
 * off the relay's path.
 */
#ifndef MCPTAP_HTTPTAP_H
#define MCPTAP_HTTPTAP_H

#include <stddef.h>

#include "tap/writer.h"

struct hl_done;

struct httptap_opts {
	const char *listen;                  /* HOST:PORT ([V6]:PORT); PORT 0: any free one */
	const char *upstream;                /* http:// or https:// URL, without user:password@ */
	const char *upstream_shown;          /* the same as said and stored: its credentials
					      * redacted (NULL: upstream) */
	const char *cacert;                  /* a CA file trusted besides the system's, or NULL */
	int insecure;                        /* no certificate or host name verification */
	const char *const *upstream_headers; /* "Name: value" lines sent upstream */
	size_t n_upstream_headers;
	const char *const *allow_hosts; /* Host names let in besides loopback ones (--allow-host) */
	size_t n_allow_hosts;
	size_t max_headers;      /* a request head's limit (431 beyond it) */
	size_t max_body;         /* a request body's limit (413 beyond it) */
	int connect_timeout_ms;  /* to reach the upstream */
	int upstream_timeout_ms; /* the upstream silent this long (but on an SSE stream) */
	int client_timeout_ms;   /* a client silent this long sending a request, or not
				  * reading what is sent to it (but an idle SSE stream) */
	int stop_ms;             /* after SIGINT or SIGTERM: how long open exchanges get */
	int threads;             /* event loops relaying, each in a thread of its own */
	size_t memory;           /* the bytes the relay holds, all connections together
				  * (requests being read, twice: the reader's copy;
				  * answers not yet taken); past it, reading waits */
	const char *db_path;
	struct writer_opts wopts; /* per session */
	/* Told of each exchange as it ends (-v), in a loop's thread: hl_opts.on_end. */
	void (*on_end)(void *ctx, const struct hl_done *d);
	void *on_end_ctx;
	/* What the tap says as it runs, whole lines for the caller to print on
	 * stderr: the address listened on, the upstream back, its warnings (in
	 * any thread). */
	struct mt_voice voice;
};

/*
 * The HTTP tap's writer commits in bigger batches than the stdio tap's (rows,
 * and ms unless --batch-ms says): many sessions run at once, and a commit
 * rewrites a page of each session it holds a row of. (Rows stay under half
 * the default --queue's lines, so the relay does not wait for a commit.)
 */
#define HTTPTAP_BATCH_ROWS 2048
#define HTTPTAP_BATCH_MS 20

/* The most event loops --threads takes. */
#define HTTPTAP_THREADS_MAX 64

/* Defaults; threads: the CPUs the tap may run on (its affinity), at most 8. */
void httptap_opts_default(struct httptap_opts *o);

/*
 * Listen, relay and log until SIGINT or SIGTERM; then stop accepting, give
 * open exchanges stop_ms to end, store everything. The address listened on
 * is said (o->voice: "mcptap: listening on http://ADDR"), and so are its
 * warnings as it runs. Returns an exit status: 0, or EXIT_ERROR when it
 * could not listen or set up, the writer's thread included (the reason in
 * err), or a loop's thread would not start (said through o->voice, err left as
 * it was).
 */
int httptap_run(const struct httptap_opts *o, struct mt_err *err);

#endif
