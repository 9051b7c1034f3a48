/*
 * httpserve.h - an MCP server endpoint over HTTP, for an application that
 * answers the messages (replay's mock server). It speaks the transports'
 * framing and knows nothing of what the messages mean:
 *
 *   - Streamable HTTP (2025-03-26 on): POST of one message; a notification or
 *     a response is answered 202; a request waits for the application's
 *     answer, sent as JSON, or as the last event of an SSE stream when server
 *     messages came before it on that POST (or the application asks for a
 *     stream). An initialize without Mcp-Session-Id starts a session: the
 *     endpoint mints its id and names it on the answer; later requests must
 *     carry it (400 without, 404 for an unknown or ended one). GET opens the
 *     session's stream for the server's own messages (one at a time: 409);
 *     DELETE ends the session. Every SSE event has an id, and a GET with
 *     Last-Event-ID gets the events of that stream after it again (and those
 *     the application names: hsv_app.resume), then goes on as the session's
 *     stream.
 *   - Legacy HTTP+SSE (2024-11-05): GET of the SSE path starts a session and
 *     its first event, "endpoint", names where its POSTs go (a path relative
 *     to the endpoint: "/message?sessionId=ID"); each POST is answered 202,
 *     and every server message goes on the GET stream as a "message" event.
 *   - Stateless (2026-07-28): no session id, no GET (405): the requests of one
 *     client, as its _meta clientInfo names it, make one session.
 *
 * Bad requests are answered here: 404 for another path, 405 for another
 * method (with Allow), 406 for an Accept without the media types, 415 for a
 * body that is not application/json, 400 for a body that is not JSON. The
 * requests are read by tap/http/httpendpoint.h, with the HTTP tap's strict
 * reader and listening side: what the tap refuses (unsound framing, a
 * request smuggling shape, bytes that are not HTTP: 400; a foreign Host or
 * Origin on loopback: 403; 413 above max_body; 431; a head not whole within
 * client_timeout_ms: 408) is refused the same way, the connection closed.
 *
 * What the application sends goes through a queue per session, in order:
 * messages, answers, barriers (what follows waits until what went before has
 * left the endpoint and a moment has passed, so that a client reads them
 * apart) and delays. One event loop in the calling thread; no I/O is done in
 * the application's callbacks but through these calls.
 */
#ifndef MCPTAP_HTTPSERVE_H
#define MCPTAP_HTTPSERVE_H

#include <stddef.h>
#include <stdint.h>

#include "schema/util.h"

enum hsv_mode {
	HSV_STREAMABLE, /* Streamable HTTP */
	HSV_LEGACY,     /* HTTP+SSE (2024-11-05) */
	HSV_STATELESS,  /* 2026-07-28: no sessions on the wire */
};

struct hsv_sess;

/*
 * The application. Every callback runs in the endpoint's loop; state is what
 * open returned.
 */
struct hsv_app {
	void *ctx;
	/* A session begins: the application's state for it, or NULL to refuse it (503). */
	void *(*open)(void *ctx, struct hsv_sess *s);
	/*
	 * One message from the client (p: n bytes). req is the handle of the POST
	 * that waits for its answer when it is a request (give it to hsv_answer),
	 * else 0 (the POST was answered 202).
	 */
	void (*message)(void *state, struct hsv_sess *s, int64_t req, const char *p, size_t n);
	/*
	 * The session ended (DELETE, its legacy stream closed, the endpoint
	 * stopped: why says which). Its last call: s is gone after it.
	 */
	void (*close)(void *state, struct hsv_sess *s, const char *why);
	/*
	 * A request to another path than the endpoint's (or another method on
	 * it): 1 and the reply to give (status, headers as a JSON array of
	 * [name, value], body; borrowed until the reply is sent), or 0 for the
	 * endpoint's own answer (404, 405). May be NULL.
	 */
	int (*other)(void *ctx, const char *method, const char *target, int *status,
		     const char **headers_json, const char **body, size_t *body_len);
	/*
	 * A GET with Last-Event-ID (Streamable HTTP) resumes a stream: it gets
	 * the events of that stream after the id again (as the spec has it) and,
	 * when this returns 1, the events tagged *tags (see hsv_send; *n of them,
	 * borrowed for the call), each the first kept one with its tag after the
	 * one found for the tag before it. Every event goes again once, as it
	 * went the first time (its id and bytes), in the order they first went,
	 * while the session still keeps it. 0: the spec's answer alone. May be NULL.
	 */
	int (*resume)(void *state, struct hsv_sess *s, const char *last_event_id, const int64_t **tags,
		      size_t *n);
};

struct hsv_opts {
	const char *listen;             /* HOST:PORT, [V6]:PORT or PORT (loopback); PORT 0: any free one */
	const char *const *allow_hosts; /* on loopback, Host names let in besides loopback ones
					 * (--allow-host; and Origin hosts); borrowed */
	size_t n_allow_hosts;
	const char *path;      /* the MCP endpoint (legacy: the SSE stream's path) */
	const char *post_path; /* legacy: where POSTs go (default "/message") */
	enum hsv_mode mode;    /* path's transport */
	/* Besides (not stateless): Streamable HTTP, and the legacy HTTP+SSE stream
	 * (its POSTs at post_path), on these paths too; NULL: not there. */
	const char *also_streamable, *also_legacy;
	int session_ids;       /* Streamable HTTP: mint Mcp-Session-Id (else the newest session
				* takes the requests that name none) */
	int also_stateless;    /* Streamable HTTP: a request without Mcp-Session-Id, no
				* initialize, whose _meta names its revision (2026-07-28), is
				* served as HSV_STATELESS serves it */
	size_t max_body;       /* a request body's limit (413 beyond it) */
	int barrier_ms;        /* the moment a barrier waits once the bytes have left */
	int stop_ms;           /* after SIGINT or SIGTERM: how long open streams get */
	int client_timeout_ms; /* a request head must be whole within it (408); a client
				* silent or not reading that long is closed */
	const char *name;      /* for messages: "replay" */
	/* Where the addresses served, and its warnings, are said: whole lines
	 * for the caller to print on stderr. */
	struct mt_voice voice;
};

void hsv_opts_default(struct hsv_opts *o);

/*
 * Serve until SIGINT or SIGTERM: the address is said (o->voice: "mcptap:
 * NAME on http://ADDR/PATH"), then sessions come and go. At the end every
 * session is closed ("stopped"). Returns 0, or -1 when it could not listen
 * or set up (the reason in err).
 */
int hsv_run(const struct hsv_opts *o, const struct hsv_app *app, struct mt_err *err);

/* The session's id as the client sees it (Mcp-Session-Id, or the legacy sessionId); "" when none. */
const char *hsv_session_id(const struct hsv_sess *s);

/*
 * A server message (p: n bytes) on the stream of request req's POST, or on
 * the session's GET stream when req is 0 or answered already (held until a
 * GET stream opens, up to a bound). Legacy sessions: always the GET stream.
 * tag names it for hsv_app.resume (any value the application likes; -1: none).
 */
void hsv_send(struct hsv_sess *s, int64_t req, const char *p, size_t n, int64_t tag);

/*
 * The answer to request req (p: n bytes): JSON, unless an SSE stream was
 * opened for it already or sse is set; then its stream's last event. An
 * answer for a request whose client has gone is dropped. tag: as hsv_send's.
 */
void hsv_answer(struct hsv_sess *s, int64_t req, const char *p, size_t n, int sse, int64_t tag);

/*
 * Refuse request req as a recorded server did: status (401, say), headers (a
 * JSON array of [name, value]: those a client reads go out, WWW-Authenticate
 * among them; not Date, lengths or hop-by-hop fields) and body. Where a
 * status can no longer be given (an SSE stream was opened for it, or legacy:
 * its POST was answered 202), the JSON-RPC message p (n bytes) goes instead,
 * as hsv_answer's. A session whose first request is refused ends: it never
 * began for the client.
 */
void hsv_refuse(struct hsv_sess *s, int64_t req, int status, const char *headers_json, const char *body,
		size_t body_len, const char *p, size_t n);

/* What follows waits until what was sent before has left and barrier_ms has passed. */
void hsv_barrier(struct hsv_sess *s);

/* What follows waits ns nanoseconds more. */
void hsv_delay(struct hsv_sess *s, int64_t ns);

#endif
