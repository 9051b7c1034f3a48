/*
 * httpendpoint.h - a small HTTP/1.1 server endpoint on bufferevents, for an
 * application that answers requests itself (the HTTP mock). It shares the
 * HTTP tap's listening side (tap/http/httplisten.h: back-off at the
 * descriptor limit, the Host and Origin guard) and its strict reader
 * (tap/http/httpstream.h, the one that reads pcap imports), and refuses
 * what the tap refuses, with the same words:
 *
 *   - 400 for a head whose bytes, framing or target are unsound
 *     (mt_head_problem, mt_hdr_framing_problem, mt_target_problem: the
 *     request smuggling shapes) and for bytes that are not an HTTP/1.x
 *     request; 403 for a foreign Host or Origin (hln_guard_check); 413 for a
 *     body above max_body; 431 for a head above max_headers; 408 for a head
 *     not whole within client_timeout_ms of its first byte. A refusal is a
 *     JSON-RPC error (id null, code -32000) with "Connection: close", sent
 *     once the replies owed before it have gone; then the connection
 *     closes and nothing after the refused bytes is read.
 *
 * One request at a time per connection: the next is read only once the
 * reply to the one before has ended (what a pipelining client sends
 * meanwhile waits, up to HEP_IN_HELD bytes; the socket is watched for the
 * client's close all along). Keep-alive by default in HTTP/1.1;
 * "Connection: close" and HTTP/1.0 (without "Connection: keep-alive") close
 * after the reply. Replies are written here: a whole one with
 * Content-Length, or a stream (chunked in HTTP/1.1, delimited by the close
 * in HTTP/1.0). Every reply carries Date, and "Connection: close" when the
 * connection closes after it; nothing else is added (no default
 * Content-Type). A reply to HEAD has no body. 100 Continue is said to a
 * client that waits for it.
 *
 * One event loop, the caller's; no threads.
 */
#ifndef MCPTAP_HTTPENDPOINT_H
#define MCPTAP_HTTPENDPOINT_H

#include <stddef.h>

#include <event2/event.h>

#include "tap/http/httphdr.h"
#include "tap/http/httplisten.h"

/* A client's output above this is full (hep_full); below HEP_OUT_LOW it is writable again. */
#define HEP_OUT_HIGH (256 * 1024)
#define HEP_OUT_LOW (64 * 1024)
/* What a client sends while its request is answered is held up to this, then not read. */
#define HEP_IN_HELD (64 * 1024)

struct hep;
struct hep_req;

struct hep_opts {
	size_t max_body;         /* a request body's limit (413 beyond) */
	size_t max_headers;      /* a request head's limit (431 beyond; default 64 KiB) */
	int client_timeout_ms;   /* a head must be whole within it of its first byte (408); a
				  * connection silent that long while it owes request bytes or
				  * has nothing open, or that reads nothing that long while
				  * owed a reply, is closed (default 60000) */
	struct hln_guard *guard; /* Host and Origin (borrowed; its said[] is set as refusals
				  * are said); NULL: none */
	const char *who;         /* for the guard's line: "mock" */
	struct hln_pace *pace;   /* refused accepts (borrowed); never NULL */
};

void hep_opts_default(struct hep_opts *o);

/* The application: every callback runs in the endpoint's loop. */
struct hep_handler {
	void *ctx;
	/*
	 * A request, whole (head and body). r is the endpoint's until its reply
	 * ends: answer it with hep_reply, or hep_stream_start then
	 * hep_stream_chunk and hep_stream_end, now or later.
	 */
	void (*request)(void *ctx, struct hep_req *r);
	/*
	 * r's client went away (or the endpoint is freed) before r's reply
	 * ended: r's last call, arg is what hep_set_arg gave it. r is freed
	 * after it. May be NULL.
	 */
	void (*gone)(void *ctx, struct hep_req *r, void *arg);
	/* r's client output was full (hep_full) and is below HEP_OUT_LOW again. May be NULL. */
	void (*writable)(void *ctx, struct hep_req *r, void *arg);
	/* A line to say (a Host or Origin refusal, the first of its kind; refused accepts). */
	void (*say)(void *ctx, const char *line);
};

/*
 * An endpoint accepting on the listening socket fd (taken: closed by
 * hep_free, or here on failure) in base's loop. o and h are copied (what
 * they point to is borrowed). NULL on failure (errno set).
 */
struct hep *hep_new(struct event_base *base, evutil_socket_t fd, const struct hep_opts *o,
		    const struct hep_handler *h);

/* Accept no more (the listening socket closed); the connections go on. */
void hep_stop_accepting(struct hep *e);

/* Does any connection hold output not yet written to its socket? 1 or 0. */
int hep_busy(const struct hep *e);

/* Close every connection (gone for each request open) and the listener. NULL is let be. */
void hep_free(struct hep *e);

/* ---- a request (borrowed from the endpoint; valid until its reply ends or gone) ---- */

const char *hep_method(const struct hep_req *r);
/* The request target as sent ("/mcp?x=1"). */
const char *hep_target(const struct hep_req *r);
/* Its fields in order (*n of them). */
const struct mt_hdr *hep_fields(const struct hep_req *r, size_t *n);
/* The value of its first field called name (any case), or NULL. */
const char *hep_field(const struct hep_req *r, const char *name);
/* Its body (*n bytes, NUL-terminated after them); "" when none. */
const char *hep_body(const struct hep_req *r, size_t *n);
/* The client's address: "ADDR:PORT" or "[V6]:PORT". */
const char *hep_peer(const struct hep_req *r);
/* Its HTTP version's minor number (1.0: 0, 1.1: 1). */
int hep_minor(const struct hep_req *r);
/* Keep the application's arg with r (for gone and writable). */
void hep_set_arg(struct hep_req *r, void *arg);

/* ---- its reply ---- */

/*
 * The whole reply: status, reason, the n fields h (borrowed for the call;
 * not Content-Length, Transfer-Encoding, Connection or Date, which are the
 * endpoint's), and body (len bytes). r is gone after it.
 */
void hep_reply(struct hep_req *r, int status, const char *reason, const struct mt_hdr *h, size_t nh,
	       const char *body, size_t len);

/* A streamed reply's head (as hep_reply's); its body follows with hep_stream_chunk. */
void hep_stream_start(struct hep_req *r, int status, const char *reason, const struct mt_hdr *h, size_t nh);

/* len bytes more of a streamed reply's body (nothing when len is 0). */
void hep_stream_chunk(struct hep_req *r, const char *p, size_t len);

/* The streamed reply ends. r is gone after it. */
void hep_stream_end(struct hep_req *r);

/* Is r's client output above HEP_OUT_HIGH (writable is called once it is below HEP_OUT_LOW)? */
int hep_full(const struct hep_req *r);

/*
 * Has what was written to r's client left the endpoint and been taken by
 * the peer (the socket's send queue empty too)? 1 or 0.
 */
int hep_flushed(const struct hep_req *r);

#endif
