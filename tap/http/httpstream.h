/*
 * httpstream.h - the one strict HTTP/1.1 reader, on the nodejs http_parser
 * (Debian's libhttp-parser): it reads the two byte streams of connections
 * and says what it read to a sink. Pure: it knows neither sockets nor TCP
 * reassembly, and does no I/O. Its callers feed it each direction's bytes in
 * order (hx_data), the bytes they lack (hx_gap) and the connection's end
 * (hx_close): pcap import from the TCP reassembler (tap/pcap/pcapimport.c
 * adapts its streams), the HTTP tap from its sockets (tap/http/httptap.c, a
 * byte relay reading a copy of what it forwards).
 *
 * Per connection:
 *
 *   - Which side is the client: the one that sends a request. When the
 *     caller guessed the other (a connection seen from its middle, or
 *     a server that speaks first), the sink's swap is called (the caller
 *     swaps them in its own reading: later data comes with the directions changed).
 *   - What it carries, from its first bytes: HTTP/1.x; TLS (a handshake or
 *     record header: not decodable); HTTP/2 (the "PRI * HTTP/2.0"
 *     preface); anything else. Only HTTP/1.x is read on; the others are
 *     counted, with their bytes.
 *   - Requests are paired with responses in order (keep-alive and
 *     pipelining); interim 1xx responses are skipped; the response to a
 *     HEAD, a 1xx, 204 or 304 has no body whatever its fields say; bodies
 *     are framed by Content-Length, chunked encoding or the connection's
 *     close. A request is said whole (head and body, bounded by max_body);
 *     a response's head, then its body's bytes as they are parsed (chunked
 *     framing taken off), then its end. A body read to the close is
 *     complete only at a clean close (HX_FIN); a reset, the capture's end,
 *     an eviction or a new connection on the same ports end it as cut.
 *   - Pairing across gaps: each request's place in the client's stream is
 *     kept (where it begins and ends), and so is each stretch of that
 *     stream not read (a gap, a head cut). A response's first segment says
 *     how much of the client's stream the server had received (its ack).
 *     When responses may have been lost (a gap in the server's stream since
 *     the last one) or a stretch of the client's stream was, the response
 *     answers the first request the server had not received whole if it had
 *     begun to (an early answer), or the last one it had received whole;
 *     when that is a stretch not read, a request lost there: the response
 *     is then paired with nothing. Requests passed over end as "gap" (their
 *     response was not captured); so do those waiting at the close when the
 *     server's stream lost bytes after them. Without an ack
 *     (HX_ACK_UNKNOWN), or with no gap about, pairing is in order; a request
 *     lost in a gap then takes the next response with it, unless the
 *     server's stream lost bytes too.
 *   - A gap (bytes not captured) inside a body whose length is known (a
 *     Content-Length body, a chunk's data) or read to the close is skipped
 *     by its length and said to the exchange; one that runs past a
 *     Content-Length body's end ends the body there, the rest being a gap
 *     between messages. One in a chunked body that does not end in the
 *     chunk's data is said to the exchange, and reading goes on at the next
 *     line that looks like a chunk's size (CRLF, hex digits, maybe ";"
 *     extensions, CRLF), in the same exchange: the bytes before it are the
 *     cut chunk's data, said as body; a start line found first ends the
 *     exchange as "gap". Anywhere else the message in progress is lost (an
 *     exchange it cut ends as "gap"), and reading starts again at the next
 *     line that opens a request (client side) or a response (server side).
 *   - Every gap is said when it comes: to the exchange whose body it is in
 *     or which it cut (response_gap), else to the connection (conn_gap);
 *     gaps of a connection not yet known to carry HTTP are said when it is.
 *   - Responses whose request was not captured are counted and skipped; so
 *     are parse errors, which resynchronise as after a gap.
 *
 * Memory is bounded per connection: a head by http_parser's limit (80 KiB),
 * a request body by max_body (what is beyond is counted, not kept), the
 * text kept while looking for a place to resynchronise by HX_SCAN_MAX (a
 * chunk's size line by HX_CHUNK_LINE_MAX, with the chunk that bears it out
 * by 64 KiB), the requests waiting for their responses (and the stretches
 * not read among them) by PENDING_MAX. What each connection holds (its
 * state, head buffers, request body, the text kept while resynchronising,
 * the requests waiting) is counted in hx_opts.mem as it changes, so that its
 * caller bounds it with its own (an import: its --memory).
 */
#ifndef MCPTAP_HTTPSTREAM_H
#define MCPTAP_HTTPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "tap/http/httphdr.h"

struct mt_mem;

/* Which way bytes go. */
enum hx_dir {
	HX_C2S, /* client to server */
	HX_S2C, /* server to client */
};

/* One end of a connection. */
struct hx_end {
	int family;       /* AF_INET or AF_INET6 (0: not known) */
	uint8_t addr[16]; /* network order; the first 4 bytes for IPv4 */
	uint16_t port;    /* host order */
};

/*
 * A connection as its caller names it, given with each call (the reader
 * keeps the pointer for the call only).
 */
struct hx_conn_id {
	uint64_t num; /* the caller's number for it */
	struct hx_end client, server;
	int saw_start; /* its start was seen: its streams are read from their
			* first byte (else from the first line that opens a
			* message) */
	int64_t first_us;
	void *owner; /* the caller's own (the sink's swap gives it back) */
};

/* How a connection ended. */
enum hx_end_how {
	HX_FIN,     /* both sides closed */
	HX_RST,     /* reset */
	HX_IDLE,    /* idle too long: given up on */
	HX_EVICTED, /* a limit on connections made room */
	HX_EOF,     /* the capture ended with it open */
	HX_REUSED,  /* a new connection on its ports ended it */
	HX_MEMORY,  /* the memory budget made room */
};

/* A data call's ack when it is not known. */
#define HX_ACK_UNKNOWN UINT64_MAX

/* The longest line looked at when resynchronising (a request or status line). */
#define HX_SCAN_MAX 8192
/* The longest chunk-size line (extensions included) looked for after a gap in a chunked body. */
#define HX_CHUNK_LINE_MAX 256
/* TLS servers listed by address in the counts. */
#define HX_TLS_SERVERS 16

/* A request, whole. Everything is borrowed for the call. */
struct hx_request {
	const char *method;     /* "GET", "POST", ... */
	const char *target;     /* as sent */
	const struct mt_hdr *h; /* its fields, in order */
	size_t nh;
	const char *body; /* its body, without chunked framing; NULL when none */
	size_t body_len;
	uint64_t body_lost;  /* bytes of it not captured (a gap) */
	uint64_t body_cut;   /* bytes of it beyond max_body, not kept */
	int major, minor;    /* its HTTP version */
	uint64_t start, end; /* where it lies in the client's stream (offsets: the
			      * bytes of data and gap calls counted), head and body */
};

/* A request's head, as soon as it is whole (its body not read yet). Borrowed for the call. */
struct hx_head {
	const char *method;
	const char *target;
	const struct mt_hdr *h;
	size_t nh;
	int major, minor;
	uint64_t start;          /* where it begins in the client's stream */
	int chunked;             /* its body is chunked */
	uint64_t content_length; /* its Content-Length; UINT64_MAX when none */
};

/*
 * What the reader says. conn and x are the sink's own handles (what
 * conn_open and request returned); us is the capture time (µs) of the data
 * that made it known. Callbacks may be NULL but request.
 */
struct hx_sink {
	void *ctx;
	/* A connection is known to carry HTTP/1.x (at its first request or response). */
	void *(*conn_open)(void *ctx, const struct hx_conn_id *c, int64_t us);
	/*
	 * The caller's client is the server: directions change, and the caller
	 * swaps them too (later data comes with HX_C2S for the new client).
	 */
	void (*swap)(void *ctx, const struct hx_conn_id *c);
	/*
	 * A request's head is whole (a live relay checks it before its body
	 * comes): nonzero refuses it, and the client's stream is read no more
	 * (neither this request nor anything after it is said).
	 */
	int (*request_head)(void *ctx, void *conn, const struct hx_head *hd, int64_t us);
	/* A request: the sink's handle of its exchange (said once its end is known). */
	void *(*request)(void *ctx, void *conn, const struct hx_request *r, int64_t us);
	/*
	 * The client's stream is not HTTP where it is read (why: http_parser's
	 * words); hd is the head of the request it is in when that head was
	 * whole (an error in its body), else NULL. With this callback, the
	 * client's stream is read no more (a live relay refuses it); without it,
	 * reading looks for the next request.
	 */
	void (*request_error)(void *ctx, void *conn, const struct hx_head *hd, const char *why, int64_t us);
	/* The final response's head. */
	void (*response_head)(void *ctx, void *x, int status, const struct mt_hdr *h, size_t nh, int64_t us);
	/* Bytes of its body, in order. */
	void (*response_body)(void *ctx, void *x, const char *p, size_t n, int64_t us);
	/* n bytes of it were not captured (skipped by the framing, or it was cut). */
	void (*response_gap)(void *ctx, void *x, uint64_t n, int64_t us);
	/*
	 * After a gap in a chunked body, the body's next bytes begin a chunk
	 * (where a write of the server's began: often an SSE event).
	 */
	void (*response_resync)(void *ctx, void *x, int64_t us);
	/*
	 * The exchange ended: outcome "complete" (the response read whole),
	 * "closed" (the connection closed before: a FIN, a reset, a new
	 * connection on the same ports), "gap" (bytes not captured cut it, or
	 * held its response) or "stopped" (the capture ended, the connection
	 * was idle too long or given up on for a limit), with error saying
	 * more (NULL when complete).
	 */
	void (*end)(void *ctx, void *x, const char *outcome, const char *error, int64_t us);
	/*
	 * n bytes of direction d were not captured outside any exchange's body
	 * (between messages, in a head, while resynchronising), with why: said
	 * as they come (those before the connection was known to carry HTTP,
	 * after conn_open).
	 */
	void (*conn_gap)(void *ctx, void *conn, enum hx_dir d, uint64_t n, const char *why, int64_t us);
	/* The connection is over (only for those conn_open was called for). */
	void (*conn_close)(void *ctx, void *conn, int64_t us);
};

struct hx_opts {
	size_t max_body;    /* a request body kept up to this (default 16 MiB) */
	struct mt_mem *mem; /* where what connections hold is counted (borrowed; NULL:
			     * nowhere) */
};
void hx_opts_default(struct hx_opts *o);

/* What the connections carried. */
struct hx_stats {
	uint64_t http, tls, h2, other, unsynced;                   /* connections: HTTP/1.x, TLS, HTTP/2,
								    * other TCP, midstream with no HTTP start found */
	uint64_t tls_bytes, h2_bytes, other_bytes, unsynced_bytes; /* their bytes */
	uint64_t upgraded; /* HTTP connections that switched protocol (101, CONNECT) */
	uint64_t requests, responses, interim;
	uint64_t orphans;         /* responses whose request was not captured: skipped */
	uint64_t unpaired;        /* of them, responses to a request lost in a gap (the
				   * server's ack, or a stretch of the client's stream
				   * lost, says so) */
	uint64_t lost_responses;  /* requests whose response was lost in a gap (passed
				   * over by a later response, or at the close): "gap" */
	uint64_t unanswered;      /* requests without a response when their connection ended */
	uint64_t parse_errors;    /* messages http_parser refused (reading resynchronised) */
	uint64_t resyncs;         /* times reading started again after a gap or an error */
	uint64_t chunk_resyncs;   /* of them, at a chunk's size line in the same body */
	uint64_t lost_requests;   /* requests cut by a gap or an error: not said */
	uint64_t skipped_bytes;   /* bytes passed over looking for a message's start */
	uint64_t gaps, gap_bytes; /* gaps said (hx_gap) on HTTP connections */
	uint64_t body_cut;        /* request bodies above max_body */
	/* The TLS servers seen (the first HX_TLS_SERVERS), with their counts. */
	struct hx_tls_server {
		struct hx_end server;
		uint64_t connections, bytes;
	} tls_servers[HX_TLS_SERVERS];
	size_t n_tls_servers;
	uint64_t tls_servers_more; /* connections to servers beyond that list */
};

struct hx_reader;

/* A reader saying what it reads to sink (copied). Never NULL. */
struct hx_reader *hx_new(const struct hx_opts *o, const struct hx_sink *sink);

/* The reader's state of one connection. */
struct hx_stream;

/* A new connection (id: borrowed for the call). Never NULL. */
struct hx_stream *hx_open(struct hx_reader *r, const struct hx_conn_id *id);

/*
 * n bytes of direction d, in order, seen at us. ack: how much of the other
 * direction its sender had received when it sent these bytes, as an offset
 * in that direction's stream (what its data and gap calls add up to);
 * HX_ACK_UNKNOWN when not known.
 */
void hx_data(struct hx_stream *s, const struct hx_conn_id *id, enum hx_dir d, const uint8_t *p, size_t n,
	     int64_t us, uint64_t ack);

/* n bytes of direction d are missing here (not captured, or given up on). */
void hx_gap(struct hx_stream *s, const struct hx_conn_id *id, enum hx_dir d, uint64_t n, int64_t us);

/* The connection is over: what is open ends as how says; s is freed. */
void hx_close(struct hx_stream *s, const struct hx_conn_id *id, enum hx_end_how how, int64_t us);

void hx_stats(const struct hx_reader *r, struct hx_stats *out);

/* What the reader holds for a connection, in bytes (a body being read, heads, its state). */
size_t hx_held(const struct hx_stream *s);

/* A message has begun on direction d of a connection and not ended. */
int hx_in_message(const struct hx_stream *s, enum hx_dir d);

/*
 * Whether direction d of a connection is read: HX_READING; HX_NOT_HTTP (its
 * bytes are not HTTP/1.x, or it was refused: they are only counted);
 * HX_SWITCHED (the protocol was switched, by a 101 or a CONNECT tunnel).
 */
enum hx_reading { HX_READING, HX_NOT_HTTP, HX_SWITCHED };
enum hx_reading hx_reading(const struct hx_stream *s, enum hx_dir d);

/* Free the reader (every connection must have been closed). NULL is let be. */
void hx_free(struct hx_reader *r);

#endif
