/*
 * writer.h - the logger behind the relay: a bounded queue of byte chunks and
 * a thread that frames, classifies and stores them in batched transactions.
 *
 * Relay threads call writer_put() with each chunk they read; the chunk's
 * sequence and times are taken there, under the queue's lock, so the store's
 * order is the order of reading across all streams. The writer thread wakes
 * for a batch (a timer or a high-water mark), not for each chunk.
 *
 * What was relayed and is not committed yet is "held". While the store keeps
 * up, held data stays under the queue's bounds (queue_bytes, queue_lines):
 * writer_put() waits for room (backpressure), so nothing is dropped, and a
 * SIGKILL loses no more than that. While the store takes nothing (another
 * connection holds the file's write lock, a commit hangs on a slow disk, the
 * file is not open yet), the relay goes on and the writer holds up to
 * hold_bytes; it stores all of it, in order, when the store comes back. A
 * lock is waited for as long as the tap lives (writer_give_up ends that).
 *
 * When the store fails for good (disk full, file gone, corrupt), the writer
 * says so once (through opts.voice), counts what it could not store, and goes on taking
 * chunks so the relay never stops; the gap is recorded when the store allows.
 */
#ifndef MCPTAP_WRITER_H
#define MCPTAP_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "schema/message.h"
#include "schema/redact.h"
#include "schema/store.h"
#include "schema/util.h"
#include "tap/http/httphdr.h"
#include "tap/otlppush.h"

enum writer_stream {
	WS_C2S,    /* client to server: the tap's stdin */
	WS_S2C,    /* server to client: the child's stdout */
	WS_STDERR, /* the child's stderr */
	WS_COUNT
};

struct writer_opts {
	size_t queue_bytes;             /* held data's bound while the store keeps up ... */
	size_t queue_lines;             /* ... in bytes and in lines (a chunk above it waits) */
	size_t hold_bytes;              /* held data's bound while the store takes nothing */
	size_t batch_rows;              /* commit after this many rows ... */
	int batch_ms;                   /* ... or this many ms after the first uncommitted one */
	size_t max_message;             /* frames above this are counted as a gap, not stored */
	int sync;                       /* commit each chunk before writer_put returns */
	const struct mt_redact *redact; /* what to keep out of the store; NULL: nothing */
	const char *label;              /* the capture file's name, for messages */
	const char *goes_on;            /* what goes on when it cannot be written, for messages */
	struct mt_voice voice;          /* where its warnings go (from its thread); zero: nowhere */
	/* --otlp: each request's spans (schema/spans.h) pushed from a thread of
	 * their own once its answer (cancel, session end) is stored, as export
	 * -T otlp would write them; spans not sent are said (voice) at the end
	 * and recorded as a gap row of their session. */
	const struct otlp_push_opts *otlp; /* where to (borrowed until the writer starts); NULL: no push */
	unsigned otlp_spans;               /* MT_SPANS_* (0: the CLIENT spans) */
	int otlp_stop_ms;                  /* at the end, what is still queued gets this long (0: 5000) */
};

/* Defaults: a 1 MiB, 4096-line queue, 16 MiB held, 512 rows or 5 ms per batch,
 * 256 MiB messages. */
void writer_opts_default(struct writer_opts *o);

struct writer;

/*
 * Start a writer for session (already created in st) whose clock started at
 * t0_ns (monotonic). Takes st (closed by writer_finish, or here on failure).
 * st may be NULL: the writer then only drains the queue. Returns a new
 * writer, or NULL when its thread cannot be started ("cannot start the
 * writer thread: REASON" in err).
 */
struct writer *writer_start(struct store *st, int64_t session, int64_t t0_ns, const struct writer_opts *o,
			    struct mt_err *err);

/*
 * Start a writer that opens path itself (STORE_WRITE) and creates the session
 * sn there, in its own thread: the caller never waits for the file (it may be
 * locked by another connection for long). A file that cannot be opened is said
 * through opts.voice and the writer only drains the queue. NULL (and err) as
 * writer_start.
 */
struct writer *writer_open(const char *path, const struct store_session_new *sn, int64_t t0_ns,
			   const struct writer_opts *o, struct mt_err *err);

/*
 * Stop waiting for locks, for good, in every writer: what is held is lost and
 * said so. Async-signal-safe (a signal after the server exited calls it).
 */
void writer_give_up(void);

/*
 * Hand the writer a copy of n bytes read from stream s (n == 0: the stream
 * ended). Safe from several threads. Waits while the queue is full and, with
 * opts.sync, until the chunk is committed.
 */
void writer_put(struct writer *w, enum writer_stream s, const char *p, size_t n);

/*
 * The same with the chunk's times given (t_ns since the session's start, and
 * wall-clock µs), for importers and test fixtures whose clock is not now.
 */
void writer_put_at(struct writer *w, enum writer_stream s, const char *p, size_t n, int64_t t_ns,
		   int64_t wall);

/*
 * The HTTP tap's records. Its messages come whole (a request body, a JSON
 * response body, an SSE event's data), not as stream bytes to frame; each
 * record carries the seq the tap gave it (one order per session, shared by
 * messages, exchanges and gaps). They wait for room as writer_put does.
 */
struct writer_http_msg {
	int sess; /* the session's handle (writer_session_new; 0: the writer's own) */
	int64_t seq;
	enum writer_stream s;  /* WS_C2S or WS_S2C */
	const char *channel;   /* "body" | "sse" */
	int64_t exchange;      /* the exchange's seq */
	const char *sse_id;    /* the event's id: field, or NULL */
	const char *sse_event; /* its event: type, or NULL */
	int replayed;          /* sent again after a Last-Event-ID resumption */
	const char *p;
	size_t n;
	/* The producer redacted it already (with the writer's opts.redact), in
	 * its own thread: the writer stores stored (stored_n bytes) in its place,
	 * or p as it is when stored is NULL, and redacts it no more. */
	int redacted;
	const char *stored;
	size_t stored_n;
	const struct mt_class *cls; /* p classified by the producer (not done again); NULL */
};
void writer_put_msg(struct writer *w, const struct writer_http_msg *m);
/* A message of bytes relayed from s and not stored (too large), and why. */
void writer_put_gap(struct writer *w, int h, int64_t seq, enum writer_stream s, size_t bytes,
		    const char *why);
/*
 * An exchange's request as the tap read it (its time: now), its response's
 * head, its end (times since the session's start). Target and headers are
 * given as they were sent: the writer redacts them (and turns the headers
 * into the stored JSON) off the relay's path. Everything is copied.
 */
struct writer_exchange {
	int64_t seq;
	int64_t conn; /* the client connection's number */
	const char *method;
	const char *target;     /* the path and query */
	const struct mt_hdr *h; /* the request's header fields, in order */
	size_t nh;
	const void *body; /* a body no message holds (not JSON-RPC); NULL: none */
	size_t body_len;
	/* The producer made the headers' stored JSON itself (mt_hdr_json with the
	 * writer's redactor), in its own thread; h is then not read. */
	const char *headers_json;
	const char *last_event_id; /* ... and found its Last-Event-ID (NULL: none) */
};
void writer_put_exchange_begin(struct writer *w, int h, const struct writer_exchange *x);
void writer_put_exchange_head(struct writer *w, int h, int64_t seq, int status, const struct mt_hdr *hv,
			      size_t nh, const char *resp_type, int64_t first_byte_ns);
/* The same with the headers' stored JSON made by the producer (see writer_exchange). */
void writer_put_exchange_head_json(struct writer *w, int h, int64_t seq, int status, const char *headers_json,
				   const char *resp_type, int64_t first_byte_ns);
void writer_put_exchange_end(struct writer *w, int h, int64_t seq, int64_t end_ns, const char *outcome,
			     const char *error, const void *body, size_t len);
/* The session's Mcp-Session-Id, when the server names it. */
void writer_put_http_id(struct writer *w, int h, const char *id);

/*
 * A writer of many sessions at once, on one connection to the file (the HTTP
 * tap: one per MCP session would have them all fight for the file's lock).
 * It opens path in its own thread, and makes no session of its own: each is
 * made by writer_session_new, which returns its handle at once (the row is
 * made in order with the rest), and ended by writer_session_end. Records
 * carry their session's handle; their times are taken from t0_ns on. NULL
 * (and err) as writer_start.
 */
struct writer *writer_open_shared(const char *path, const struct writer_opts *o, struct mt_err *err);
int writer_session_new(struct writer *w, const struct store_session_new *sn, int64_t t0_ns);
void writer_session_end(struct writer *w, int h, const struct store_session_end *e);
/* Nanoseconds since the session's start (its t0). */
int64_t writer_clock(const struct writer *w);

/*
 * The time records are given: monotonic ns (the scale of a session's t0) and
 * wall-clock µs; now, unless writer_set_time said otherwise.
 */
void writer_now(struct writer *w, int64_t *ns, int64_t *wall);
/*
 * From now on, every chunk and record put is timed ns (monotonic scale: a
 * session's t_ns is ns less its t0) and wall µs instead of now, until the
 * next call; ns < 0 goes back to now. For an importer whose clock is the
 * capture's (one producer: the writer does not order puts by it).
 */
void writer_set_time(struct writer *w, int64_t ns, int64_t wall);

/*
 * Free what the writer has stored and given back that no producer has freed
 * yet (producers free it at their next put: after a burst, nobody may put
 * for a while). Any thread. Returns the bytes still held: queued, or stored
 * and not committed.
 */
size_t writer_reclaim(struct writer *w);
/* What it holds: relayed and not yet committed, in bytes. */
size_t writer_held(struct writer *w);

/*
 * Stop waiting: producers blocked in writer_put() return, and later puts queue
 * without waiting for room. Call it before making sure no thread is inside
 * writer_put(), then call writer_finish().
 */
void writer_stop(struct writer *w);

/* Counters, for tests and the end-of-session summary. */
struct writer_stats {
	uint64_t stored_messages;
	uint64_t stored_stderr;
	uint64_t lost_messages; /* relayed but not stored */
	uint64_t lost_bytes;
	uint64_t commits;
	uint64_t waits; /* times a producer waited for room */
};

/*
 * Drain everything (no thread may be inside writer_put() any more), store the
 * session's end (e may be NULL), commit, close the store and free the writer;
 * the counters go to *stats when it is not NULL. Waits for a locked file as
 * long as it takes, or until writer_give_up(). Returns 0, or -1 when anything
 * could not be stored (already said through opts.voice).
 */
int writer_finish(struct writer *w, const struct store_session_end *e, struct writer_stats *stats);

#endif
