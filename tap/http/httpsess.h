/*
 * httpsess.h - which capture session an HTTP request belongs to.
 *
 * One MCP session is one capture session. The tracker knows them by what the
 * wire says of them, and nothing else:
 *
 *   - Streamable HTTP: the Mcp-Session-Id a request carries. The initialize
 *     request carries none: it starts a session, and joins the id its answer
 *     names (hs_named).
 *   - Legacy HTTP+SSE: the GET stream starts a session; its endpoint event
 *     names the URI that the session's POSTs go to (hs_endpoint).
 *   - Without either: the 2026-07-28 revision's requests name their client
 *     (the clientInfo in their _meta): one session per client, whatever
 *     the connection. Otherwise (a server without sessions) the client
 *     connection, and the newest such session when a client opens a new
 *     connection for it.
 *
 * Ids are client-chosen or server-chosen strings; two sessions may carry
 * equal JSON-RPC ids, which is why each is tracked apart. Sessions are small
 * numbers from 1 on, never reused; the caller keeps what it needs per number.
 * Pure bookkeeping: no I/O, bounded by HS_MAX_KEYS keys.
 */
#ifndef MCPTAP_HTTPSESS_H
#define MCPTAP_HTTPSESS_H

#include <stddef.h>
#include <stdint.h>

#include "schema/map.h"
#include "schema/util.h"

#define HS_MAX_KEYS 1000000

enum hs_kind {
	HS_HTTP, /* Streamable HTTP (or plain JSON-RPC over HTTP) */
	HS_SSE,  /* legacy HTTP+SSE: a GET stream with an endpoint event */
};

struct hs_tracker {
	struct mt_map by_id;       /* "i" + Mcp-Session-Id -> session */
	struct mt_map by_endpoint; /* "e" + the endpoint's path and query -> session */
	struct mt_map by_conn;     /* "c" + connection number -> its session */
	struct mt_map by_client;   /* "k" + a 2026-07-28 client's name and version -> session */
	struct mt_buf key;
	int64_t next;   /* the next session's number */
	int64_t idless; /* the newest session without an id or endpoint, or 0 */
};

/* What the tracker is told of a request. */
struct hs_request {
	int64_t conn;
	const char *method;     /* GET, POST, DELETE, ... */
	const char *target;     /* path and query, as sent */
	const char *session_id; /* its Mcp-Session-Id, or NULL */
	int initialize;         /* its body is an initialize request (or a batch holding one) */
	const char *client;     /* 2026-07-28: its _meta clientInfo as "name version", or NULL */
};

void hs_init(struct hs_tracker *t);
void hs_release(struct hs_tracker *t);

/*
 * The session of a request; *created is set to 1 (and *kind says which) when
 * it starts a new one.
 */
int64_t hs_request(struct hs_tracker *t, const struct hs_request *r, int *created, enum hs_kind *kind);

/*
 * The server named the session's id (Mcp-Session-Id on a response to a
 * request that had none). Returns the session the exchange belongs to now:
 * sess itself, unless the id is already another session's.
 */
int64_t hs_named(struct hs_tracker *t, int64_t sess, const char *session_id);

/* A legacy GET stream's endpoint event: POSTs to target belong to sess. */
void hs_endpoint(struct hs_tracker *t, int64_t sess, const char *target);

/* A stateless session is one without an id: it may be joined from other connections. */
void hs_idless(struct hs_tracker *t, int64_t sess);

/* The connection closed. */
void hs_conn_closed(struct hs_tracker *t, int64_t conn);

/*
 * The session ended (DELETE, or 404 for its id). Requests that name its id
 * or endpoint still belong to it; others from its connections start anew.
 */
void hs_end(struct hs_tracker *t, int64_t sess);

/* Path and query of a URI: itself when relative, its part after the authority when absolute. */
const char *hs_uri_target(const char *uri);

/*
 * 2026-07-28: the client a request (p: n bytes of JSON) names in
 * params._meta["io.modelcontextprotocol/clientInfo"], as "name version"
 * (owned); NULL when it names none.
 */
char *hs_meta_client(const char *p, size_t n);

/* The same, or first an initialize's params.clientInfo. */
char *hs_client(const char *p, size_t n);

#endif
