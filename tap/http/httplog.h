/*
 * httplog.h - what is stored of HTTP exchanges: the part of the HTTP tap that
 * knows no socket, shared by the tap (tap/http/httptap.c, on libevent and
 * libcurl) and pcap import (tap/pcap/pcapimport.c, on captured TCP streams).
 *
 * The caller reads HTTP its own way and says what it read: a request (head
 * and whole body), its response's head, the response body's bytes as they
 * come (chunked framing taken off), bytes it could not see, the exchange's
 * end. This module decides the rest, once for both:
 *
 *   - the capture session of each exchange (tap/http/httpsess.h: Mcp-Session-Id,
 *     the initialize joining the id its answer names, the legacy endpoint
 *     event, a 2026-07-28 client named in _meta, else the connection), and
 *     a session's end (a DELETE answered 2xx, a 404 for its id);
 *   - the JSON-RPC messages: a request body, a JSON response body, each SSE
 *     event's data (tap/http/sse.h), with SSE ids and event types, and events a
 *     server sends again after a Last-Event-ID resumption flagged;
 *   - what cannot be stored as a message: a body or event above
 *     max_message, bytes not captured (a gap);
 *   - the exchange's row: method, target and headers (the writer redacts
 *     them), status, response type, a body no message holds, its outcome;
 *   - bodies in a Content-Encoding: gzip (x-gzip) and deflate (zlib's format,
 *     or raw deflate as some servers send), alone, are decoded with zlib for
 *     storing (the bytes relayed are never altered; the headers are stored as
 *     sent, Content-Encoding included). A response body is inflated as it
 *     comes, HL_DECODE_BUF bytes at a time, and what it decodes to is read as
 *     a plain body is (each SSE event stored as soon as its bytes are in; a
 *     JSON body, kept, bounded by max_message and HL_KEEP_BODY_MAX in decoded
 *     bytes: a decompression bomb is a gap, as a big plain body is, and is
 *     not decoded past that). Data that cannot be decoded keeps what it
 *     decoded to before; the rest is a gap row and the exchange's error says
 *     why ("cannot decode the gzip body: ZLIB'S REASON"). Another coding
 *     (br, zstd, a list of two) is not decoded: the body is kept as sent
 *     (bounded), never read as JSON-RPC, and the error says so. A request
 *     body is decoded whole, up to max_message. So a body the exchange's
 *     row keeps (req_body, resp_body) is decoded when its coding is gzip,
 *     x-gzip or deflate (what was decoded, when the data failed), as sent
 *     otherwise (a request body that cannot be decoded, too).
 *
 * Times are the writer's (writer_now): now for the tap, the packets' times
 * for an importer that sets them (writer_set_time).
 *
 * Memory: what an exchange holds until its end (its state, a response body
 * kept, the SSE event being assembled, headers and messages as stored, a
 * coded body's zlib state and window, about 40 KiB, as zlib allocates them) and
 * each session's SSE event ids seen are counted in hl_opts.mem as they grow
 * and shrink (an import bounds them with --memory). The ids of a session
 * with nothing open are the only memory apart from connections that can be
 * given back: hl_reclaim forgets them, those idle longest first (a replay of
 * them is then not flagged). The sessions' own bookkeeping (which session a
 * request joins) is not counted.
 *
 * Threads: the sessions are shared under the log's own lock; an exchange is
 * used by one thread at a time (its SSE events are parsed outside the lock).
 */
#ifndef MCPTAP_HTTPLOG_H
#define MCPTAP_HTTPLOG_H

#include <stddef.h>
#include <stdint.h>

#include "tap/http/httphdr.h"
#include "tap/writer.h"

/* A response body kept on the exchange (not JSON-RPC) is cut at this size. */
#define HL_KEEP_BODY_MAX (64 * 1024)
/* An SSE event larger than this is recorded as a gap (less when max_message is). */
#define HL_SSE_EVENT_MAX (16u << 20)
/* A coded body is decoded this many bytes at a time (on the stack, then read on). */
#define HL_DECODE_BUF (16 * 1024)

/* An exchange that ended, for a live view (hl_opts.on_end). */
struct hl_done {
	int64_t conn;        /* the client connection's number */
	const char *method;  /* GET, POST, ... */
	const char *path;    /* the target without its query (which may hold a secret) */
	int has_query;       /* ... and it had one */
	int status;          /* 0: no response */
	const char *type;    /* json | sse | empty | other, or NULL */
	const char *rpc;     /* what its request body carried: "tools/call echo",
			      * "notifications/initialized", "batch of 3", ... or NULL */
	int64_t messages;    /* the messages stored of it, both ways */
	int64_t ns;          /* from its request to its end */
	const char *outcome; /* complete, client-gone, upstream-gone, refused, ... */
	const char *error;   /* or NULL */
};

/*
 * d as one line for a person, mitmdump's way, into out (reset first):
 * "#3 POST /mcp tools/call echo -> 200 json, 2 messages, 4.1ms".
 */
void hl_done_text(const struct hl_done *d, struct mt_buf *out);

struct hl_opts {
	struct writer *w;               /* borrowed: the shared writer storing every session */
	const char *upstream;           /* each session's upstream URL, unless a request names one */
	size_t max_message;             /* a JSON body or an SSE event above this is a gap */
	int end_at_last;                /* a session still open at hl_free ends at its last record
					 * (an import), not now (the tap) */
	const struct mt_redact *redact; /* the writer's redactor, to redact messages here,
					 * in the caller's thread (an import, which has a CPU to
					 * spare), not in the writer's; NULL: the writer does
					 * (the tap: its relay has none to spare) */
	struct mt_mem *mem;             /* where exchanges' and sessions' memory is counted (borrowed;
					 * NULL: nowhere). Only with one thread (an import). */
	/* Told of each exchange as it ends (NULL: nobody), in the thread that ends it,
	 * outside the log's lock; d is borrowed for the call. */
	void (*on_end)(void *ctx, const struct hl_done *d);
	void *on_end_ctx;
};

struct hl_log;
struct hl_exch;

/* A log storing through o->w (borrowed; it must outlive the log). Never NULL. */
struct hl_log *hl_new(const struct hl_opts *o);

/*
 * End every session still open (its end stored) and free the log. Open
 * exchanges must have been ended. NULL is let be.
 */
void hl_free(struct hl_log *l);

/* A new client connection: its number (1, 2, ... in this log). */
int64_t hl_conn_new(struct hl_log *l);

/* The connection closed: a session known by it alone is not joined by it again. */
void hl_conn_closed(struct hl_log *l, int64_t conn);

/* Bytes of one direction not captured: a gap row. */
struct hl_gap {
	enum writer_stream s; /* WS_C2S or WS_S2C */
	uint64_t bytes;
	const char *why; /* borrowed for the call */
};

/* What was read of a request. Everything is borrowed for the call. */
struct hl_request {
	int64_t conn;            /* hl_conn_new's */
	const char *client_addr; /* "ADDR:PORT": a new session's client address */
	const char *upstream;    /* a new session's upstream URL; NULL: the log's */
	const char *method;      /* GET, POST, ... */
	const char *target;      /* the request target as sent (absolute or not) */
	const struct mt_hdr *h;  /* its header fields, in order */
	size_t nh;
	const char *body; /* the whole body (NULL when there is none) */
	size_t body_len;
	uint64_t body_lost;        /* bytes of the body that were not captured (a gap) */
	uint64_t body_cut;         /* bytes of the body beyond a reader's limit, not given */
	const struct hl_gap *gaps; /* gaps of its connection no session held yet (an import:
				    * before its first request), stored before it */
	size_t ngaps;
};

/*
 * A request: its session found (or made), the gaps it brings stored, its
 * exchange row begun and its body stored as a message when it is JSON-RPC
 * (a gzip or deflate body decoded first: one larger than max_message then is
 * a gap; one that cannot be decoded, or in another coding, is stored as sent
 * and said at hl_end). Returns the exchange (owned by the log until hl_end);
 * never NULL.
 */
struct hl_exch *hl_request(struct hl_log *l, const struct hl_request *r);

/*
 * The response's head (a final one: interim 1xx heads are the hop's). A
 * HEAD request's response, a 204 and a 304 are empty whatever it says. Its
 * Content-Encoding says how the body is read (see the top of this file).
 */
void hl_response_head(struct hl_log *l, struct hl_exch *x, int status, const struct mt_hdr *h, size_t nh);

/*
 * n bytes of the response body, in order (a chunked body's framing taken
 * off; a content coding not: it is decoded here). SSE events are stored as
 * they are parsed; any other body is kept (bounded) until hl_end.
 */
void hl_response_body(struct hl_log *l, struct hl_exch *x, const char *p, size_t n);

/*
 * n bytes of the response were not captured (of its body; or its head and
 * what followed, when no head came): a JSON body is then not a message; in
 * an SSE stream the event in progress is lost, and what follows the gap is
 * dropped up to the next blank line (where the gap ended is not known: the
 * rest of an event is not read as one). The gap is stored (an SSE stream's
 * now, another's at hl_end).
 */
void hl_response_gap(struct hl_log *l, struct hl_exch *x, uint64_t n);

/*
 * After a gap, the body goes on at a chunk's start (a server's write: an
 * SSE event's start, most often): when its first bytes begin a line an
 * event begins with (a field, a comment, a blank line), nothing more is
 * dropped for the gap. (Not in a coded body: compressed data cannot be
 * read on after a gap; what follows is a gap row at hl_end.)
 */
void hl_response_resync(struct hl_log *l, struct hl_exch *x);

/*
 * The exchange ended: outcome is complete | client-gone | upstream-gone |
 * timeout | unreachable | stopped | cut ..., error what went wrong or NULL
 * (an SSE stream that ended inside an event says so when error is NULL;
 * what its bodies' codings did is said after it, "; " between). A JSON
 * response body is stored now. Frees x.
 */
void hl_end(struct hl_log *l, struct hl_exch *x, const char *outcome, const char *error);

/* n bytes of direction s not captured between exchanges of session sess: a gap row. */
void hl_session_gap(struct hl_log *l, int64_t sess, enum writer_stream s, uint64_t n, const char *why);

/*
 * Gaps of connection conn (hl_conn_new's), on which no request was read:
 * stored in a session of their own (by connection, as plain JSON-RPC's), so
 * that what the capture missed is said. client_addr and upstream as in
 * struct hl_request.
 */
void hl_gap_session(struct hl_log *l, int64_t conn, const char *client_addr, const char *upstream,
		    const struct hl_gap *gaps, size_t ngaps);

/* What an exchange's caller may want to know; valid until hl_end. */
struct hl_info {
	int64_t sess;         /* its session's number */
	int is_sse, is_json;  /* the response's type, once its head is in */
	int endpoint_stream;  /* a legacy SSE GET stream waiting for its endpoint event */
	unsigned events;      /* SSE blocks parsed so far on it */
	const char *endpoint; /* the endpoint event's URI read on it, or NULL */
	const char *rpc_id;   /* the request's JSON-RPC id token, or NULL */
};
const struct hl_info *hl_info(const struct hl_exch *x);

struct hl_stats {
	uint64_t sessions;      /* made */
	uint64_t sessions_sse;  /* of them, legacy HTTP+SSE ones */
	uint64_t sessions_gaps; /* of them, sessions of a connection's gaps alone */
	uint64_t exchanges;
	uint64_t messages; /* handed to the writer */
	uint64_t gaps;     /* gap rows handed to it */
	uint64_t gap_bytes;
	uint64_t over_max;      /* of the gaps, response bodies and SSE events above
				 * max_message */
	uint64_t ids_forgotten; /* times hl_reclaim forgot a session's SSE event ids */
};
void hl_stats(struct hl_log *l, struct hl_stats *out);

/*
 * Give memory back to a budget (mt_mem.reclaim): the SSE event ids of the
 * sessions with no exchange open are forgotten, those whose last exchange
 * ended first, until need bytes are freed or none is left. Returns the
 * bytes freed (as counted in hl_opts.mem).
 */
size_t hl_reclaim(struct hl_log *l, size_t need);

#endif
