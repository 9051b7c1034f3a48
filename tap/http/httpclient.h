/*
 * httpclient.h - an MCP client's HTTP transport: JSON-RPC messages POSTed to a
 * server on Streamable HTTP (2025-03-26 on) or legacy HTTP+SSE (2024-11-05),
 * and the server's messages read back from JSON bodies and SSE streams. It is
 * to a server at a URL what tap/stdio/lineio.h is to a server on stdio, with the
 * same blocking shape: queue a message (hc_post), take the next thing the
 * server said (hc_next, with a timeout). Replay's verify drives it.
 *
 * Built on libcurl's multi interface, driven by hc_next and hc_flush (no
 * thread, no event loop of its own); SSE is framed by tap/http/sse.h.
 *
 * Streamable HTTP. Every message is a POST to the URL carrying Content-Type
 * application/json and Accept "application/json, text/event-stream"; from the
 * answer that carries it, the live Mcp-Session-Id goes on every later
 * request, and from the initialize result, MCP-Protocol-Version (the version
 * the server negotiated). An answer is read as JSON (one message, or a
 * batch), 202, or an SSE stream that may carry notifications and server
 * requests before the answer. A stream that ends cleanly before the answer,
 * after an event id, is resumed once more with GET and Last-Event-ID (at most
 * HC_RESUMES times). With get_stream, the GET stream is opened once the POST
 * of notifications/initialized is accepted (405: the server has none), and
 * opened again, with Last-Event-ID, when the server ends it; without, it is
 * opened when a request is answered 202 (its answer can come on no other).
 *
 * Legacy HTTP+SSE. hc_open GETs the URL; the first `endpoint` event names the
 * URL (resolved against the given one) every message is POSTed to, and every
 * reply arrives as a `message` event on that stream. The stream's end is the
 * session's end.
 *
 * Order. Messages go out in the order they were queued: a POST starts once
 * the one before has its answer's head (as the SDK clients await each send),
 * or HC_ORDER_MS after it started, for a server that holds its head back
 * until it has the answer.
 *
 * A dead server. A transfer that cannot connect (refused, no such host, a
 * certificate that does not verify, the connect timeout) means the server is
 * gone: HC_GONE. One that breaks after it connected is checked with a fresh
 * connection: when none can be made, HC_GONE (the server went away);
 * otherwise the broken transfer's request fails on its own (HC_FAILED). After
 * HC_GONE nothing more is sent, and hc_next returns HC_GONE again.
 *
 * Bounds: a JSON body or an SSE event holds at most max_message bytes (a
 * longer one is dropped and said); what the server sent and hc_next has not
 * handed out yet is held up to HC_QUEUE_MAX bytes, beyond which its
 * transfers are paused.
 */
#ifndef MCPTAP_HTTPCLIENT_H
#define MCPTAP_HTTPCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "schema/util.h"

#define HC_ORDER_MS 1000
#define HC_RESUMES 3
#define HC_QUEUE_MAX ((size_t)16 << 20)

struct hc_opts {
	const char *url;            /* http:// or https:// (borrowed) */
	int legacy;                 /* legacy HTTP+SSE: url is the SSE endpoint */
	int get_stream;             /* Streamable HTTP: open the GET stream */
	const char *cacert;         /* a CA file trusted besides the system's, or NULL */
	int insecure;               /* no certificate or host name verification */
	const char *const *headers; /* "Name: value" lines sent on every request (borrowed) */
	size_t nheaders;
	int connect_timeout_ms; /* to reach the server (0: 10000) */
	size_t max_message;     /* the largest message read (0: 256 MiB) */
};

/* What hc_next returns. */
enum {
	HC_MESSAGE = 1, /* a server message: data, len */
	HC_TIMEOUT = 0,
	HC_GONE = -1,  /* the server is gone: text says how */
	HC_FAILED = 2, /* what was sent under tag got no answer, or a bad one: status, why, text */
	HC_NOTE = 3,   /* something about the session worth saying: status, text */
};

/* Why an HC_FAILED. */
enum hc_why {
	HC_STATUS = 1, /* an HTTP error status (or a redirect): status */
	HC_BODY,       /* an answer that is not what MCP allows (not JSON, another content type) */
	HC_LOST,       /* no answer: its stream ended or broke before it */
};

/* One thing from the server; every pointer borrowed until the next hc_next. */
struct hc_event {
	const char *data; /* HC_MESSAGE: its bytes (NUL-terminated, not counted) */
	size_t len;
	int64_t tag;      /* HC_FAILED: the tag of the hc_post or hc_delete */
	int status;       /* the HTTP status it is about; 0 when none came */
	enum hc_why why;  /* HC_FAILED */
	int expired;      /* HC_FAILED: a 404 to a request that named the session */
	int cert;         /* HC_GONE: the server's certificate did not verify */
	const char *text; /* HC_FAILED, HC_NOTE, HC_GONE: for people, terminal-safe; else "" */
};

struct hc;

/*
 * A client for o->url (o is copied; its strings stay borrowed). Nothing is
 * sent yet but, for legacy, the GET of the SSE stream. Returns 0 with *out,
 * or -1 with err set (not an http(s) URL, libcurl failing to start or
 * running out of memory). A later transfer that libcurl has no memory to
 * start ends the client as a dead server does: HC_GONE, "could not be
 * reached (out of memory)".
 */
int hc_open(const struct hc_opts *o, struct hc **out, struct mt_err *err);
/* Abort what is running and free everything; c may be NULL. */
void hc_free(struct hc *c);

/* Queue message (n bytes, one JSON-RPC message, no newline) for the server, under tag. */
void hc_post(struct hc *c, const char *msg, size_t n, int64_t tag);
/* Queue a DELETE of the live session (Streamable HTTP with a session id), under tag. */
void hc_delete(struct hc *c, int64_t tag);

/*
 * The next thing from the server, waiting up to timeout_ms (-1: for ever) and
 * sending what is queued meanwhile: HC_MESSAGE, HC_FAILED, HC_NOTE, HC_GONE or
 * HC_TIMEOUT, with ev filled.
 */
int hc_next(struct hc *c, int timeout_ms, struct hc_event *ev);

/*
 * Wait up to timeout_ms until everything queued has been sent and has the head
 * of its answer (a DELETE: its whole answer); what arrives meanwhile is kept
 * for hc_next. 0 when it has, -1 on timeout or when the server is gone.
 */
int hc_flush(struct hc *c, int timeout_ms);

/* The live Mcp-Session-Id, or NULL. */
const char *hc_session_id(const struct hc *c);
/* Has hc_delete's DELETE been sent? */
int hc_deleted(const struct hc *c);

/*
 * Pure helpers (exported for their tests). hc_resolve: ref resolved against
 * base (RFC 3986) into a new string, or NULL when either is not a URL.
 * hc_excerpt: up to max bytes of p for a message, printable ASCII kept and
 * every other byte as \xNN (\n for a newline), "..." when cut; into out
 * (appended).
 */
char *hc_resolve(const char *base, const char *ref);
void hc_excerpt(const char *p, size_t n, size_t max, struct mt_buf *out);

#endif
