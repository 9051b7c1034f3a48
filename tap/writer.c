/*
 * writer.c - the queue between the relay and the store, and the thread that
 * empties it (see writer.h).
 */
#include "tap/writer.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "schema/facts.h"
#include "schema/map.h"
#include "schema/message.h"
#include "schema/spans.h"
#include "tap/http/httphdr.h"
#include "tap/stdio/frame.h"

/* What a chunk is: stream bytes to frame, or one of the HTTP tap's records. */
enum chunk_type {
	CH_BYTES,       /* data: bytes read from stream s */
	CH_MSG,         /* data: one whole message; str: channel, sse_id, sse_event;
			 * num: exchange, replayed */
	CH_XBEGIN,      /* data: the request body kept on the exchange, then its headers
			 * (nh, packed); str: method, target (both as sent), the headers as
			 * JSON and the Last-Event-ID when the producer made it; num: conn */
	CH_XHEAD,       /* data: the response's headers (nh, packed); str: resp_type, the
			 * headers as JSON when the producer made it; num: status, first_byte_ns */
	CH_XEND,        /* data: the response body kept on it; str: outcome, error; num: end_ns */
	CH_HTTP_ID,     /* str: the session's Mcp-Session-Id */
	CH_GAP,         /* a message not stored: num: its bytes; str: why */
	CH_SESSION_NEW, /* a shared writer's session: str: transport, upstream, client_addr,
			 * command; num: started_wall; seq: its t0 (monotonic ns) */
	CH_SESSION_END, /* str: error; num: ended_wall, duration_ns */
};

#define CHUNK_STRS 4

struct chunk {
	struct chunk *next;
	enum writer_stream s;
	int64_t t_ns; /* since the session's start */
	int64_t wall;
	size_t n;     /* bytes counted as held (CH_BYTES: 0 when the stream ended) */
	size_t lines; /* newlines in data: the messages it ends (records: 1) */
	enum chunk_type type;
	int sess;    /* records of a shared writer: the session's handle (0: the writer's own) */
	int64_t seq; /* records: their seq, given by the producer */
	int64_t num[2];
	size_t len;       /* records: data's bytes before the headers */
	size_t rlen;      /* CH_MSG: bytes after them: the producer's classification of it
			   * (has_cls: a struct mt_class, its spans as offsets + 1), then
			   * its redacted form (pre) */
	unsigned pre : 1; /* CH_MSG: the producer redacted it (nothing after: nothing to) */
	unsigned has_cls : 1;
	size_t hlen;              /* records: the packed headers' bytes after them ("name\0value\0"...) */
	size_t nh;                /* ... and how many fields they are */
	uint32_t str[CHUNK_STRS]; /* records: offset + 1 of a NUL-terminated string in data (0: NULL) */
	char data[];
};

static const char *const stream_dir[WS_COUNT] = {"c2s", "s2c", "stderr"};

struct writer {
	/* Shared, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t wake;       /* the writer waits here */
	pthread_cond_t room;       /* producers wait here for room, or (sync) a commit */
	struct chunk *head, *tail; /* queued, not taken by the writer yet */
	struct chunk *spent;       /* stored, given back: the producers free them (a free in
				    * the thread that allocated is cheap; across threads both
				    * fight for malloc's arena lock) */
	size_t held_bytes;         /* relayed and not committed: queued, taken, in the open transaction
				    * (changed under mu, atomically: writer_held reads it without) */
	size_t held_lines;
	int stalled;         /* the store takes nothing now: 2 locked elsewhere, 1 slow or not open
			      * yet; 3 it takes again and stores what it held meanwhile */
	int64_t last_commit; /* monotonic ns */
	int hold_said;       /* the relay waited at --hold: said once */
	int idle;            /* the writer waits on an empty queue: wake it */
	int urgent;          /* a producer asked for a drain now */
	int stopping;        /* producers no longer wait */
	int finishing;       /* writer_finish was called: drain, end the session, exit */
	int waiting;         /* producers waiting */
	uint64_t put;        /* chunks queued so far */
	uint64_t done;       /* chunks processed (and, with sync, committed) */
	uint64_t waits;
	int timed;                  /* writer_set_time: puts are timed ... */
	int64_t time_ns, time_wall; /* ... at this */

	/* The writer thread's own (the finisher's after the join). */
	pthread_t thread;
	struct writer_opts o;
	char *path; /* writer_open: the file to open and the session to create */
	struct store_session_new sn;
	struct store *st; /* owned; NULL: relay only */
	int64_t session;
	int64_t t0;
	struct chunk *pending; /* taken from the queue, not framed yet */
	struct mt_framer fr[WS_COUNT];
	const struct chunk *cur; /* the chunk being framed */
	int64_t seq;             /* the next frame's sequence number */
	int in_txn;
	size_t txn_rows;
	int64_t txn_started;                                /* monotonic ns */
	int64_t txn_first_seq;                              /* the first seq the open transaction holds */
	uint64_t txn_msgs, txn_stderr, txn_gaps, txn_bytes; /* in it: lost if it fails */
	uint64_t txn_gap_bytes;                             /* of txn_bytes, the gaps' */
	size_t txn_held_bytes, txn_held_lines;              /* what its chunks count in held_* */
	int failed;                                         /* the store failed for good */
	int gave_up;                                        /* a signal ended a wait for the lock */
	int64_t lock_since; /* monotonic ns: the lock wait going on began then (0: none) */
	int lock_said;      /* the wait at the end was said */
	int moved_said;     /* the file's deletion or replacement was reported */
	char *fail_reason;
	uint64_t lost_msgs, lost_bytes; /* relayed but not stored (not yet in a gap row) */
	int64_t lost_seq;               /* where the loss began */
	struct mt_facts facts;          /* the session's pairing and handshake */
	struct mt_spans *spans;         /* --otlp: the session's span builder (NULL: none) */
	struct otlp_push *push;         /* --otlp: owned; NULL: no push */
	char *push_url;                 /* ... where it pushes, for messages */
	struct mt_spans_opts sopts;
	/* A shared writer (writer_open_shared) stores many sessions: session and
	 * facts above are the current one's, the others wait in slots (by
	 * handle; 0 is the writer's own). */
	int shared;
	struct wslot *slots;
	size_t nslots;
	int cur_sess;                /* the handle whose state is above */
	int next_handle;             /* producers' side, under mu */
	int lost_sess;               /* where the loss began */
	struct mt_buf red;           /* scratch for a redacted frame */
	struct mt_buf hjson, hjson2; /* scratch: an exchange's headers as stored JSON */
	struct mt_buf tgt;           /* scratch: its target, redacted */
	struct mt_buf body, body2;   /* scratch: its bodies, redacted */
	struct mt_hdr *hv;           /* scratch: its headers, unpacked */
	size_t hv_cap;
	/* Exchanges begun in the open transaction whose row is not made yet: made
	 * whole at their end, or as far as they came at the commit (one INSERT
	 * rather than an INSERT and two UPDATEs). */
	struct xwait *xw;
	size_t nxw, capxw;
	struct mt_map xw_at;    /* (session, seq) -> index in xw */
	struct chunk *out;      /* processed chunks, to give back to the producers */
	struct chunk *out_last; /* ... the last of that list (hand_over splices it whole) */
	int pem;                /* stderr is inside a private key (mt_redact_line) */
	int has_end;
	struct store_session_end end;
	char *end_error;
	struct writer_stats stats;
};

/* An exchange whose row waits: its records are kept until it is made. */
struct xwait {
	int64_t session; /* the store's id */
	int64_t seq;
	int64_t t_ns;        /* its request's time, since the session's start */
	struct chunk *begin; /* CH_XBEGIN */
	struct chunk *head;  /* CH_XHEAD, or NULL */
};

/* A session of a shared writer, while another is current. */
struct wslot {
	int64_t session; /* the store's id; 0: not created (yet, or it could not be) */
	int64_t t0;      /* its clock's start, monotonic ns */
	struct mt_facts facts;
	struct mt_spans *spans;
	int used;
};

/* Set from a signal handler: stop waiting for a lock (see writer_give_up). */
static volatile sig_atomic_t give_up;

/* What the writer gave back goes to the producers (under mu): the list spliced whole. */
static void hand_over(struct writer *w)
{
	if (!w->out)
		return;
	w->out_last->next = w->spent;
	w->spent = w->out;
	w->out = w->out_last = NULL;
}

/* The chunks given back (under mu). */
static struct chunk *take_spent(struct writer *w)
{
	struct chunk *l = w->spent;

	w->spent = NULL;
	return l;
}

static void free_chunks(struct chunk *l)
{
	while (l) {
		struct chunk *next = l->next;
		free(l);
		l = next;
	}
}

/* How long one wait for the lock lasts before the writer looks at its state again. */
#define LOCK_SLICE_MS 50
/* A producer at the queue's bound that saw no commit for this long takes the store as
 * stalled (a hung disk): long enough that a checkpoint or a busy CPU is not one. */
#define STALL_NS (50 * 1000000LL)

void writer_opts_default(struct writer_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->queue_bytes = 1u << 20;
	o->queue_lines = 4096;
	o->hold_bytes = 16u << 20;
	o->batch_rows = 512;
	o->batch_ms = 5;
	o->max_message = 256u << 20;
	o->label = "the capture file";
	o->goes_on = "the relay goes on without logging";
}

/* ---- the store side (writer thread) ---- */

/* msgs messages (bytes) from seq on were relayed but are not stored. */
static void lose(struct writer *w, uint64_t msgs, uint64_t bytes, int64_t seq)
{
	if (!w->lost_msgs && !w->lost_bytes) {
		w->lost_seq = seq;
		w->lost_sess = w->cur_sess;
	}
	w->lost_msgs += msgs;
	w->lost_bytes += bytes;
	w->stats.lost_messages += msgs;
	w->stats.lost_bytes += bytes;
}

static void release_txn(struct writer *w, int committed);
static void xwait_drop(struct writer *w);

static void store_failed(struct writer *w, const char *why)
{
	if (w->failed)
		return;
	w->failed = 1;
	w->fail_reason = mt_strdup(why);
	if (!w->gave_up && !w->moved_said)
		mt_voice_warn(&w->o.voice, "cannot log to %s: %s; %s", w->o.label, why, w->o.goes_on);
	/* What the failed transaction held is lost too (its gap rows included). */
	if (w->in_txn) {
		store_rollback(w->st);
		w->in_txn = 0;
		w->stats.stored_messages -= w->txn_msgs;
		w->stats.stored_stderr -= w->txn_stderr;
		/* Oversized lines were counted as lost when their gap row was written. */
		w->stats.lost_messages -= w->txn_gaps;
		w->stats.lost_bytes -= w->txn_gap_bytes;
		lose(w, w->txn_msgs + w->txn_stderr + w->txn_gaps, w->txn_bytes, w->txn_first_seq);
		w->txn_msgs = w->txn_stderr = w->txn_gaps = w->txn_bytes = w->txn_gap_bytes = 0;
	}
	xwait_drop(w);
	release_txn(w, 0);
}

/*
 * The store takes again (under mu). What it held meanwhile is stored at the
 * store's pace while the relay goes on, up to --hold still: a client that
 * was talking through a lock does not wait for the backlog. Once it is under
 * --queue, or when the relay fills --hold (a flood outruns the store), the
 * queue's bound holds again.
 */
static void end_stall(struct writer *w)
{
	if (w->stalled)
		w->stalled = w->held_bytes > w->o.queue_bytes ? 3 : 0;
}

/*
 * Give back to the producers what the open transaction's chunks counted in
 * held_* (they are committed, or lost for good): the relay may go on.
 */
static void release_txn(struct writer *w, int committed)
{
	pthread_mutex_lock(&w->mu);
	__atomic_sub_fetch(&w->held_bytes, w->txn_held_bytes, __ATOMIC_RELAXED);
	w->held_lines -= w->txn_held_lines;
	if (committed) {
		end_stall(w);
		w->last_commit = mt_mono_ns();
	}
	if (w->waiting)
		pthread_cond_broadcast(&w->room);
	pthread_mutex_unlock(&w->mu);
	w->txn_held_bytes = w->txn_held_lines = 0;
}

/* The store waits for a lock another connection holds: the relay must not. */
static void on_lock_wait(void *ctx)
{
	struct writer *w = ctx;

	pthread_mutex_lock(&w->mu);
	if (w->stalled != 2) {
		w->stalled = 2;
		if (w->waiting)
			pthread_cond_broadcast(&w->room);
	}
	pthread_mutex_unlock(&w->mu);
}

/*
 * A call found the file locked by another connection and waited LOCK_SLICE_MS
 * for it. Returns 1 to try again (always, for as long as the tap lives), or 0
 * when a signal told the tap to stop waiting. At the session's end, a wait of
 * more than a second is said once, with what is waiting.
 */
static int keep_waiting(struct writer *w)
{
	int64_t now = mt_mono_ns();
	int finishing;

	if (give_up) {
		if (!w->gave_up)
			mt_voice_warn(&w->o.voice, "stopped waiting for %s, locked by another connection",
				      w->o.label);
		w->gave_up = 1;
		return 0;
	}
	if (!w->lock_since)
		w->lock_since = now;
	pthread_mutex_lock(&w->mu);
	finishing = w->finishing;
	size_t held = w->held_lines;
	pthread_mutex_unlock(&w->mu);
	if (finishing && !w->lock_said && now - w->lock_since > 1000000000LL) {
		w->lock_said = 1;
		mt_voice_warn(&w->o.voice,
			      "waiting for %s, locked by another connection, to store the session's last "
			      "%zu lines (SIGTERM or SIGINT gives up)",
			      w->o.label, held);
	}
	return 1;
}

/* Begin a transaction, waiting for the lock as long as it takes. 0, or -1: no store. */
static int ensure_txn(struct writer *w, int64_t seq)
{
	struct mt_err err = {"", 0};

	if (w->in_txn)
		return 0;
	if (!w->st || w->failed || w->gave_up)
		return -1;
	while (store_begin(w->st, &err)) {
		if (!err.busy) {
			store_failed(w, err.msg);
			return -1;
		}
		if (!keep_waiting(w))
			return -1;
		err.busy = 0;
	}
	w->lock_since = 0;
	w->in_txn = 1;
	w->txn_rows = 0;
	w->txn_first_seq = seq;
	w->txn_msgs = w->txn_stderr = w->txn_gaps = w->txn_bytes = w->txn_gap_bytes = 0;
	w->txn_started = mt_mono_ns();
	return 0;
}

/*
 * A capture deleted or replaced under us: what is logged goes into a file
 * nobody can open any more. Said once; looked at once a second after a
 * commit (now: whenever asked).
 */
/*
 * Is the capture file still the one at its path? When it was deleted or
 * replaced, SQLite's -wal and -shm files of this connection sit under the
 * path's names, where a reader or a new tap would take them for the new
 * file's and could write this session's pages into it. So the tap lets go of
 * the file at once (closing removes them), says so once, and relays on
 * without logging. Looked at after every commit and, when idle, every second.
 */
static void look_at_file(struct writer *w)
{
	int moved;

	if (w->moved_said || !w->st)
		return;
	if (!(moved = store_file_moved(w->st)))
		return;
	w->moved_said = 1;
	mt_voice_warn(&w->o.voice,
		      "%s was %s while recording: the tap stops logging this session (what it stored "
		      "went with the old file) and lets go of its journal, so that the file now at that "
		      "path is not harmed",
		      w->o.label, moved == 1 ? "deleted" : "replaced by another file");
	store_failed(w, moved == 1 ? "the capture file was deleted" : "the capture file was replaced");
	store_close_moved(w->st);
	w->st = NULL;
}

static int xwait_flush(struct writer *w);

static void commit(struct writer *w)
{
	struct mt_err err = {"", 0};

	if (!w->in_txn)
		return;
	if (xwait_flush(w))
		return;
	/* In WAL mode a commit seldom waits; when it does, it waits like a begin. */
	while (store_commit(w->st, &err)) {
		if (!err.busy || !keep_waiting(w)) {
			store_failed(w, err.msg[0] ? err.msg : "gave up waiting for the lock");
			release_txn(w, 0);
			return;
		}
		err.busy = 0;
	}
	w->lock_since = 0;
	w->in_txn = 0;
	w->txn_msgs = w->txn_stderr = w->txn_gaps = w->txn_bytes = w->txn_gap_bytes = 0;
	w->stats.commits++;
	release_txn(w, 1);
	look_at_file(w);
}

/* ---- --otlp: the spans of what is stored, pushed ---- */

static void switch_session(struct writer *w, int h);

/* A span made (mt_span_fn): queued for the pusher under its session's id (a full
 * queue counts it there). Never stops the builder. */
static int push_span(void *ctx, const char *resource, const char *span, size_t n)
{
	struct writer *w = ctx;

	(void)n;
	(void)otlp_push_span_tagged(w->push, w->session, resource, span);
	return 0;
}

/*
 * The current session's row, read back as export reads it, into its span
 * builder: a new builder when fresh (the session was just made), else the
 * attributes of the spans to come (its handshake or Mcp-Session-Id was
 * stored). Read in the open transaction: the store's rows so far.
 */
static void spans_row(struct writer *w, int fresh)
{
	struct store_session_row row;
	struct mt_err err = {"", 0};

	if (!w->push || !w->st || !w->session || (!fresh && !w->spans))
		return;
	if (store_session_get(w->st, w->session, &row, &err)) {
		mt_voice_warn(&w->o.voice,
			      "cannot read session %lld of %s back: %s; its spans are not pushed",
			      (long long)w->session, w->o.label, err.msg);
		mt_spans_free(w->spans);
		w->spans = NULL;
		return;
	}
	if (fresh) {
		mt_spans_free(w->spans);
		w->spans = mt_spans_new(&w->sopts, push_span, w);
		mt_spans_session(w->spans, &row);
	} else {
		mt_spans_session_update(w->spans, &row);
	}
	store_session_row_release(&row);
}

/* The current session ends after duration_ns (-1: unknown): its open requests' spans. */
static void spans_end(struct writer *w, int64_t duration_ns)
{
	if (!w->spans)
		return;
	(void)mt_spans_session_end(w->spans, duration_ns);
	mt_spans_free(w->spans);
	w->spans = NULL;
}

/* A message stored (m; its bytes as stored: m->raw, stored_n): the spans it ends. */
static void spans_message(struct writer *w, const struct store_msg *m, size_t stored_n)
{
	struct store_item it;
	enum mt_kind k = m->cls->kind;
	int64_t rq = m->request_seq;

	/* (A message after its session's end, as a ping with an ended session's id:
	 * the builder again, with the session's ids.) */
	if (!w->spans && w->push)
		spans_row(w, 1);
	if (!w->spans)
		return;
	/* The item a reader of the file would be given (store_each_item). */
	memset(&it, 0, sizeof(it));
	it.type = STORE_ITEM_MESSAGE;
	it.seq = m->seq;
	it.t_ns = m->t_ns;
	it.wall = m->wall;
	it.dir = m->dir;
	it.channel = m->channel;
	it.kind = mt_kind_name(k);
	it.raw = m->raw;
	it.raw_len = stored_n;
	it.size = (int64_t)m->size;
	if (rq > 0 && rq < m->seq && (k == MT_RESPONSE || k == MT_ERROR))
		it.request_seq = rq;
	else if (rq > 0 && rq < m->seq && k == MT_NOTIFICATION)
		it.cancels_seq = rq;
	it.exchange = m->exchange;
	it.replayed = m->replayed;
	(void)mt_spans_item(w->spans, &it);
}

/* Something else of the session stored at t_ns (a stderr line): its end is no sooner. */
static void spans_time(struct writer *w, int64_t t_ns)
{
	struct store_item it;

	if (!w->spans)
		return;
	memset(&it, 0, sizeof(it));
	it.type = STORE_ITEM_STDERR;
	it.t_ns = t_ns;
	it.dir = it.kind = "stderr";
	it.raw = "";
	(void)mt_spans_item(w->spans, &it);
}

/* Record the spans not sent as a gap row of each session that lost some. 1: recorded. */
static int spans_gaps(struct writer *w, const struct otlp_push_lost *lost, size_t n, const char *why)
{
	struct mt_err err = {"", 0};
	char reason[700];

	if (!w->st || w->failed)
		return 0;
	for (;;) {
		size_t i = 0;
		err.busy = 0;
		if (!store_begin(w->st, &err)) {
			for (; i < n; i++) {
				if (!lost[i].tag)
					continue;
				snprintf(reason, sizeof(reason), "%s %lld spans not pushed to %s: %s",
					 STORE_GAP_OTLP, (long long)lost[i].spans, w->push_url, why);
				if (store_add_gap(w->st, lost[i].tag, -1, NULL, 0, 0, reason, &err))
					break;
			}
			if (i == n && !store_commit(w->st, &err))
				return 1;
		}
		store_rollback(w->st);
		if (!err.busy || w->gave_up || !keep_waiting(w)) {
			mt_voice_warn(&w->o.voice, "cannot record the spans not pushed in %s: %s", w->o.label,
				      err.msg);
			return 0;
		}
	}
}

/*
 * The end: the open requests of every session end, unanswered; the pusher
 * gets otlp_stop_ms to send what it holds; what it could not send is said
 * (opts.voice, one line) and recorded as gap rows.
 */
static void spans_finish(struct writer *w)
{
	struct otlp_push_stats st;
	struct otlp_push_lost *lost = NULL;
	size_t nlost = 0;
	char why[400];

	if (!w->push)
		return;
	if (w->shared) {
		for (size_t h = 0; h < w->nslots; h++) {
			if (!w->slots[h].used || !((int)h == w->cur_sess ? w->spans : w->slots[h].spans))
				continue;
			switch_session(w, (int)h);
			spans_end(w, -1);
		}
	} else {
		spans_end(w, w->has_end ? w->end.duration_ns : -1);
	}
	otlp_push_finish(w->push, w->o.otlp_stop_ms > 0 ? w->o.otlp_stop_ms : 5000, &st, &lost, &nlost);
	w->push = NULL;
	if (!w->st && !st.queued && !st.dropped_full)
		mt_voice_warn(&w->o.voice,
			      "no span was pushed to %s: spans are made of what %s stores, and it "
			      "stored nothing",
			      w->push_url, w->o.label);
	if (st.failed + st.dropped_full) {
		if (st.failed && st.dropped_full)
			snprintf(why, sizeof(why), "%lld failed: %s; %lld dropped: the queue was full",
				 (long long)st.failed, st.last_error, (long long)st.dropped_full);
		else if (st.failed)
			snprintf(why, sizeof(why), "%s", st.last_error);
		else
			snprintf(why, sizeof(why), "the queue was full");
		int recorded = spans_gaps(w, lost, nlost, why);
		mt_voice_warn(&w->o.voice, "%lld of %lld spans were not pushed to %s (%s)%s",
			      (long long)(st.failed + st.dropped_full),
			      (long long)(st.queued + st.dropped_full), w->push_url, why,
			      recorded ? "; the capture records them as gaps" : "");
	}
	free(lost);
}

/* A JSON string member of obj (borrowed), or NULL. */
/* What the handshake message stored says of a side, into the session's row. */
static int note_handshake(struct writer *w, enum writer_stream s, const struct mt_class *c, const char *p,
			  size_t n, int64_t seq, int64_t request_seq)
{
	struct mt_handshake h;
	struct mt_err err = {"", 0};
	int rc = 0;

	if (mt_facts_handshake(&w->facts, s == WS_C2S, c, p, n, seq, request_seq, &h)) {
		struct store_session_init in = {h.protocol_version, h.name, h.version, h.caps_json};
		if ((h.side == MT_SIDE_CLIENT ? store_session_set_client
					      : store_session_set_server)(w->st, w->session, &in, &err))
			store_failed(w, err.msg);
		else
			rc = 1;
		mt_handshake_release(&h);
	}
	return rc;
}

/* Where a message travelled: stdio, or an HTTP exchange's body or SSE event. */
struct msg_meta {
	const char *channel;
	int64_t exchange;   /* the exchange's seq, 0: none */
	const char *sse_id; /* NULL: none */
	const char *sse_event;
	int replayed; /* a server's replay after Last-Event-ID: not paired again */
};

/* A span moved from base to data: its offset + 1 (0: none) made a pointer again. */
static void span_at(struct mt_span *sp, const char *data)
{
	sp->p = sp->p ? data + ((uintptr_t)sp->p - 1) : NULL;
}

/* ... and the other way: a span of the bytes at base, as an offset + 1. */
static void span_off(struct mt_span *sp, const char *base)
{
	sp->p = sp->p ? (const char *)(uintptr_t)(sp->p - base + 1) : NULL;
}

/* The spans of a classification, all moved one way or the other. */
static void class_move(struct mt_class *c, const char *base, int to_offsets)
{
	struct mt_span *v[] = {&c->id, &c->method, &c->progress_token, &c->params, &c->result};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (to_offsets)
			span_off(v[i], base);
		else
			span_at(v[i], base);
}

/*
 * Store one message (in the open transaction): classified, paired with its
 * request, redacted. 0, or -1 with err set. pre: the producer redacted it
 * already (into red, red_n; NULL: nothing to); cls: it classified it too.
 */
static int store_message_pre(struct writer *w, enum writer_stream s, const char *p, size_t n, int incomplete,
			     int64_t seq, int64_t t_ns, int64_t wall, const struct msg_meta *mm, int pre,
			     const char *red, size_t red_n, const struct mt_class *cls, struct mt_err *err)
{
	struct mt_class c, rc2;
	struct store_msg m;

	memset(&m, 0, sizeof(m));
	if (cls) {
		c = *cls;
		class_move(&c, p, 0);
	} else {
		mt_classify(p, n, &c);
	}
	m.session = w->session;
	m.seq = seq;
	m.t_ns = t_ns;
	m.wall = wall;
	m.dir = stream_dir[s];
	m.channel = mm->channel;
	m.cls = &c;
	m.raw = p;
	m.size = n;
	m.incomplete = incomplete;
	m.request_seq = mm->replayed ? 0 : mt_facts_pair(&w->facts, s == WS_C2S, &c, seq);
	if (!m.request_seq && !mm->replayed && mm->channel && !strcmp(mm->channel, "body"))
		m.request_seq = mt_facts_pair_post(&w->facts, s == WS_C2S, &c, seq, mm->exchange);
	m.raw_len = 0;
	m.exchange = mm->exchange;
	m.sse_id = mm->sse_id;
	m.sse_event = mm->sse_event;
	m.replayed = mm->replayed;
	if (pre ? red != NULL : w->o.redact && mt_redact_message(w->o.redact, p, n, c.kind, &w->red)) {
		m.raw = pre ? red : w->red.data;
		m.raw_len = pre ? red_n : w->red.len; /* (never 0: a marker took the secret's place) */
		/* The columns come from the stored bytes too: an id or a progress
		 * token that held a secret is stored as its marker. (Pairing went
		 * by the bytes relayed.) */
		mt_classify(m.raw, m.raw_len, &rc2);
		m.cls = &rc2;
	}
	if (store_add_message(w->st, &m, err))
		return -1;
	w->stats.stored_messages++;
	w->txn_msgs++;
	if (!mm->replayed && (c.kind == MT_REQUEST || c.kind == MT_RESPONSE) &&
	    note_handshake(w, s, m.cls, m.raw, m.raw_len ? m.raw_len : n, seq,
			   m.request_seq)) /* (the stored bytes: redacted) */
		spans_row(w, 0);
	spans_message(w, &m, m.raw_len ? m.raw_len : n);
	return 0;
}

/* store_message_pre for what the writer classifies and redacts itself. */
static int store_message(struct writer *w, enum writer_stream s, const char *p, size_t n, int incomplete,
			 int64_t seq, int64_t t_ns, int64_t wall, const struct msg_meta *mm,
			 struct mt_err *err)
{
	return store_message_pre(w, s, p, n, incomplete, seq, t_ns, wall, mm, 0, NULL, 0, NULL, err);
}

/* A message of n bytes from stream s, relayed and not stored: a gap row says why. */
static void store_gap(struct writer *w, int64_t seq, enum writer_stream s, size_t n, const char *why)
{
	struct mt_err err = {"", 0};

	if (store_add_gap(w->st, w->session, seq, stream_dir[s], 1, (int64_t)n, why, &err)) {
		store_failed(w, err.msg);
		lose(w, 1, n, seq);
		return;
	}
	w->stats.lost_messages++;
	w->stats.lost_bytes += n;
	w->txn_rows++;
	w->txn_gaps++;
	w->txn_bytes += n;
	w->txn_gap_bytes += n;
}

/* One frame from the framer of the current chunk's stream. */
static void on_frame(void *ctx, const char *p, size_t n, unsigned flags)
{
	struct writer *w = ctx;
	const struct chunk *ch = w->cur;
	struct mt_err err = {"", 0};
	int64_t seq = w->seq++;
	int rc;

	if (!w->in_txn) {
		lose(w, 1, n, seq);
		if (ch->s == WS_STDERR && w->o.redact) /* (a private key's lines stay found) */
			(void)mt_redact_line(w->o.redact, &w->pem, p, n, &w->red);
		return;
	}
	if (flags & MT_FRAME_OVERSIZED) {
		char why[160];
		snprintf(why, sizeof(why), "a line of %zu bytes is larger than --max-message (%zu)", n,
			 w->o.max_message);
		store_gap(w, seq, ch->s, n, why);
		return;
	}
	if (ch->s == WS_STDERR) {
		/* What is stored is redacted; what was relayed is not touched. */
		int red = w->o.redact && mt_redact_line(w->o.redact, &w->pem, p, n, &w->red);
		rc = store_add_stderr(w->st, w->session, seq, ch->t_ns, ch->wall, red ? w->red.data : p,
				      red ? w->red.len : n, !!(flags & MT_FRAME_INCOMPLETE), &err);
		if (!rc) {
			w->stats.stored_stderr++;
			w->txn_stderr++;
			spans_time(w, ch->t_ns);
		}
	} else {
		static const struct msg_meta stdio = {"stdio", 0, NULL, NULL, 0};
		rc = store_message(w, ch->s, p, n, !!(flags & MT_FRAME_INCOMPLETE), seq, ch->t_ns, ch->wall,
				   &stdio, &err);
	}
	if (rc) {
		store_failed(w, err.msg);
		lose(w, 1, n, seq);
		return;
	}
	w->txn_rows++;
	w->txn_bytes += n;
}

/* Make session h of a shared writer the current one. */
static void switch_session(struct writer *w, int h)
{
	struct wslot *c;

	if (h == w->cur_sess || h < 0 || (size_t)h >= w->nslots || !w->slots[h].used)
		return;
	c = &w->slots[w->cur_sess];
	c->session = w->session;
	c->facts = w->facts;
	c->spans = w->spans;
	w->session = w->slots[h].session;
	w->facts = w->slots[h].facts;
	w->spans = w->slots[h].spans;
	w->cur_sess = h;
}

static const char *chunk_str(const struct chunk *ch, int i)
{
	return ch->str[i] ? ch->data + ch->str[i] - 1 : NULL;
}

/* A record's headers, unpacked into w->hv (valid until the next call). */
static const struct mt_hdr *chunk_headers(struct writer *w, const struct chunk *ch)
{
	const char *p = ch->data + ch->len + ch->rlen;

	if (ch->nh > w->hv_cap) {
		w->hv_cap = ch->nh;
		w->hv = mt_realloc(w->hv, w->hv_cap * sizeof(*w->hv));
	}
	for (size_t i = 0; i < ch->nh; i++) {
		w->hv[i].name = p;
		p += strlen(p) + 1;
		w->hv[i].value = p;
		p += strlen(p) + 1;
	}
	return w->hv;
}

/* Headers as they are stored: JSON, redacted (in out, until it is used again). */
static const char *headers_json(struct writer *w, const struct mt_hdr *h, size_t n, struct mt_buf *out)
{
	mt_hdr_json(h, n, w->o.redact, out);
	mt_buf_putc(out, '\0');
	return out->data;
}

/*
 * A body no message holds, as it is stored (*n: its length): redacted into
 * out, until out is used again. NULL for none (n 0).
 */
static const void *body_stored(struct writer *w, const char *p, size_t *n, struct mt_buf *out)
{
	if (!*n)
		return NULL;
	if (w->o.redact && mt_redact_body(w->o.redact, p, *n, out)) {
		*n = out->len;
		return out->data ? out->data : "";
	}
	return p;
}

/* Give a chunk back to the producers (with the rest, at the end of the drain). */
static void give_back(struct writer *w, struct chunk *ch)
{
	if (!w->out)
		w->out_last = ch;
	ch->next = w->out;
	w->out = ch;
}

/* The key of exchange seq of the current session in xw_at. */
static const void *xwait_key(const struct writer *w, int64_t seq, int64_t key[2])
{
	key[0] = w->session;
	key[1] = seq;
	return key;
}

/* The waiting exchange seq of the current session: its index, or -1. */
static ssize_t xwait_find(struct writer *w, int64_t seq)
{
	int64_t key[2], i;

	if (!w->nxw || !mt_map_get(&w->xw_at, xwait_key(w, seq, key), sizeof(key), &i))
		return -1;
	return (ssize_t)i;
}

/* Exchange seq begins (ch, kept): 1, or 0 when its seq is already waiting. */
static int xwait_add(struct writer *w, const struct chunk *ch, int64_t seq, int64_t t_ns)
{
	int64_t key[2];

	if (xwait_find(w, seq) >= 0)
		return 0;
	if (w->nxw == w->capxw) {
		w->capxw = w->capxw ? w->capxw * 2 : 64;
		w->xw = mt_realloc(w->xw, w->capxw * sizeof(*w->xw));
	}
	(void)mt_map_put(&w->xw_at, xwait_key(w, seq, key), sizeof(key), (int64_t)w->nxw);
	w->xw[w->nxw].session = w->session;
	w->xw[w->nxw].seq = seq;
	w->xw[w->nxw].t_ns = t_ns;
	w->xw[w->nxw].begin = (struct chunk *)ch;
	w->xw[w->nxw].head = NULL;
	w->nxw++;
	return 1;
}

/* Forget waiting exchange i (its chunks given back). */
static void xwait_remove(struct writer *w, size_t i)
{
	struct xwait *x = &w->xw[i];
	int64_t key[2] = {x->session, x->seq}, v;

	(void)mt_map_take(&w->xw_at, key, sizeof(key), &v);
	give_back(w, x->begin);
	if (x->head)
		give_back(w, x->head);
	if (i != --w->nxw) {
		*x = w->xw[w->nxw];
		key[0] = x->session;
		key[1] = x->seq;
		(void)mt_map_put(&w->xw_at, key, sizeof(key), (int64_t)i);
	}
}

/*
 * Make the row of waiting exchange i, with its end when end is not NULL, and
 * forget it. 0, or -1 with err set.
 */
static int xwait_row(struct writer *w, size_t i, const struct chunk *end, struct mt_err *err)
{
	struct xwait *xw = &w->xw[i];
	const struct chunk *b = xw->begin, *h = xw->head;
	const struct mt_hdr *hv = chunk_headers(w, b);
	struct store_exchange x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.session = xw->session;
	x.seq = xw->seq;
	x.conn = b->num[0];
	x.t_ns = xw->t_ns;
	x.wall = b->wall;
	x.method = chunk_str(b, 0);
	x.target = chunk_str(b, 1);
	if (w->o.redact && mt_target_redact(x.target, w->o.redact, &w->tgt)) {
		mt_buf_putc(&w->tgt, '\0');
		x.target = w->tgt.data;
	}
	if (chunk_str(b, 2)) { /* (made by the producer, redacted) */
		x.req_headers_json = chunk_str(b, 2);
		x.last_event_id = chunk_str(b, 3);
	} else {
		x.req_headers_json = headers_json(w, hv, b->nh, &w->hjson);
		x.last_event_id = mt_hdr_get(hv, b->nh, "Last-Event-ID");
	}
	x.req_body_len = b->len;
	x.req_body = body_stored(w, b->data, &x.req_body_len, &w->body);
	if (h) {
		x.status = (int)h->num[0];
		x.resp_headers_json = chunk_str(h, 1)
					      ? chunk_str(h, 1)
					      : headers_json(w, chunk_headers(w, h), h->nh, &w->hjson2);
		x.resp_type = chunk_str(h, 0);
		x.first_byte_ns = h->num[1];
	}
	if (end) {
		x.end_ns = end->num[0];
		x.outcome = chunk_str(end, 0);
		x.error = chunk_str(end, 1);
		x.resp_body_len = end->len;
		x.resp_body = body_stored(w, end->data, &x.resp_body_len, &w->body2);
	}
	rc = store_exchange_begin(w->st, &x, err);
	xwait_remove(w, i);
	return rc;
}

/* Make the rows of every waiting exchange, as far as they came. 0, or -1: the store failed. */
static int xwait_flush(struct writer *w)
{
	struct mt_err err = {"", 0};

	while (w->nxw)
		if (xwait_row(w, w->nxw - 1, NULL, &err)) {
			store_failed(w, err.msg);
			return -1;
		}
	return 0;
}

/* The open transaction is lost: so are the rows that waited in it. */
static void xwait_drop(struct writer *w)
{
	while (w->nxw)
		xwait_remove(w, w->nxw - 1);
}

/*
 * Store one of the HTTP tap's records (in the open transaction when there is
 * a store). Returns 1 when the chunk is kept (an exchange's row waits for it),
 * else 0.
 */
static int process_record(struct writer *w, const struct chunk *ch)
{
	struct mt_err err = {"", 0};
	int64_t seq = ch->type == CH_SESSION_NEW ? 0 : ch->seq;
	int rc = 0;

	if (w->shared && ch->type == CH_SESSION_NEW) {
		/* A slot for it, created in the store when it can be. */
		size_t h = (size_t)ch->num[1];
		if (h >= w->nslots) {
			size_t n = w->nslots ? w->nslots * 2 : 16;
			while (n <= h)
				n *= 2;
			w->slots = mt_realloc(w->slots, n * sizeof(*w->slots));
			memset(w->slots + w->nslots, 0, (n - w->nslots) * sizeof(*w->slots));
			w->nslots = n;
		}
		w->slots[h].used = 1;
		w->slots[h].t0 = ch->seq;
		mt_facts_init(&w->slots[h].facts);
	}
	if (w->shared) {
		switch_session(w, ch->sess);
		if (!w->session && ch->type != CH_SESSION_NEW)
			seq = 0; /* (its session could not be made: what it holds is lost) */
	}
	if (seq >= w->seq)
		w->seq = seq + 1;
	if (!w->in_txn || (w->shared && !w->session && ch->type != CH_SESSION_NEW)) {
		if (ch->type == CH_MSG || ch->type == CH_GAP)
			lose(w, 1, ch->type == CH_MSG ? ch->len : (size_t)ch->num[0], seq);
		return 0;
	}
	int64_t t_ns = w->shared ? ch->t_ns - w->slots[w->cur_sess].t0 : ch->t_ns;
	switch (ch->type) {
	case CH_SESSION_NEW: {
		struct store_session_new sn;
		memset(&sn, 0, sizeof(sn));
		sn.transport = chunk_str(ch, 0);
		sn.upstream = chunk_str(ch, 1);
		sn.client_addr = chunk_str(ch, 2);
		sn.command = chunk_str(ch, 3);
		sn.started_wall = ch->num[0];
		int64_t id = 0;
		rc = store_session_create(w->st, &sn, &id, &err);
		if (!rc) {
			w->slots[ch->sess].session = id;
			if (w->cur_sess == ch->sess) {
				w->session = id;
				spans_row(w, 1);
			}
		}
		break;
	}
	case CH_SESSION_END: {
		struct store_session_end e;
		memset(&e, 0, sizeof(e));
		e.ended_wall = ch->num[0];
		e.duration_ns = ch->num[1];
		e.exit_status = -1;
		e.exit_signal = -1;
		e.error = chunk_str(ch, 0);
		rc = store_session_finish(w->st, w->session, &e, &err);
		if (!rc)
			spans_end(w, e.duration_ns);
		break;
	}
	case CH_MSG: {
		struct msg_meta mm = {chunk_str(ch, 0), ch->num[0], chunk_str(ch, 1), chunk_str(ch, 2),
				      (int)ch->num[1]};
		if (ch->len > w->o.max_message) {
			char why[160];
			snprintf(why, sizeof(why),
				 "a message of %zu bytes is larger than --max-message (%zu)", ch->len,
				 w->o.max_message);
			store_gap(w, seq, ch->s, ch->len, why);
			return 0;
		}
		struct mt_class cls;
		size_t skip = ch->has_cls ? sizeof(cls) : 0;
		if (ch->has_cls)
			memcpy(&cls, ch->data + ch->len, sizeof(cls));
		rc = store_message_pre(w, ch->s, ch->data, ch->len, 0, seq, t_ns, ch->wall, &mm, ch->pre,
				       ch->rlen > skip ? ch->data + ch->len + skip : NULL, ch->rlen - skip,
				       ch->has_cls ? &cls : NULL, &err);
		if (!rc)
			w->txn_bytes += ch->len;
		break;
	}
	case CH_GAP: store_gap(w, seq, ch->s, (size_t)ch->num[0], chunk_str(ch, 0)); return 0;
	case CH_XBEGIN:
		if (xwait_add(w, ch, seq, t_ns)) {
			w->txn_rows++;
			return 1; /* (kept: its row is made at its end, or at the commit) */
		}
		mt_err_set(&err, "a second exchange %lld in session %lld", (long long)seq,
			   (long long)w->session);
		rc = -1;
		break;
	case CH_XHEAD: {
		ssize_t i = xwait_find(w, seq);
		if (i >= 0 && !w->xw[i].head) {
			w->xw[i].head = (struct chunk *)ch;
			w->txn_rows++;
			return 1;
		}
		if (i >= 0 && xwait_row(w, (size_t)i, NULL, &err)) {
			rc = -1;
			break;
		}
		rc = store_exchange_head(w->st, w->session, seq, (int)ch->num[0],
					 chunk_str(ch, 1)
						 ? chunk_str(ch, 1)
						 : headers_json(w, chunk_headers(w, ch), ch->nh, &w->hjson),
					 chunk_str(ch, 0), ch->num[1], &err);
		break;
	}
	case CH_XEND: {
		ssize_t i = xwait_find(w, seq);
		if (i >= 0) {
			rc = xwait_row(w, (size_t)i, ch, &err);
		} else {
			size_t n = ch->len;
			const void *body = body_stored(w, ch->data, &n, &w->body2);
			rc = store_exchange_end(w->st, w->session, seq, ch->num[0], chunk_str(ch, 0),
						chunk_str(ch, 1), body, n, &err);
		}
		break;
	}
	case CH_HTTP_ID:
		rc = store_session_set_http(w->st, w->session, chunk_str(ch, 0), &err);
		if (!rc)
			spans_row(w, 0);
		break;
	case CH_BYTES: break;
	}
	if (rc) {
		store_failed(w, err.msg);
		if (ch->type == CH_MSG)
			lose(w, 1, ch->len, seq);
		return 0;
	}
	w->txn_rows++;
	return 0;
}

/* Frame one chunk (in the open transaction when there is a store). 1: it is kept. */
static int process(struct writer *w, struct chunk *ch)
{
	if (ch->type != CH_BYTES)
		return process_record(w, ch);
	w->cur = ch;
	if (ch->n)
		mt_framer_push(&w->fr[ch->s], ch->data, ch->n, on_frame, w);
	else
		mt_framer_close(&w->fr[ch->s], on_frame, w);
	w->cur = NULL;
	return 0;
}

static int txn_due(struct writer *w)
{
	return w->in_txn && (w->txn_rows >= w->o.batch_rows ||
			     mt_mono_ns() - w->txn_started >= (int64_t)w->o.batch_ms * 1000000);
}

/*
 * Store the chunks taken from the queue, in order. Each waits for a
 * transaction (the lock, as long as it takes); its bytes stay counted in
 * held_* until the transaction that holds them commits.
 */
static void store_pending(struct writer *w)
{
	uint64_t n = 0;

	while (w->pending) {
		struct chunk *ch = w->pending;
		int stored = ensure_txn(w, ch->type == CH_BYTES         ? w->seq
					   : ch->type == CH_SESSION_NEW ? 0
									: ch->seq) == 0;

		w->pending = ch->next;
		int kept = process(w, ch);
		if (stored && w->in_txn) {
			w->txn_held_bytes += ch->n;
			w->txn_held_lines += ch->lines;
		} else {
			/* Not stored (no store, or it failed): nothing to wait for. */
			pthread_mutex_lock(&w->mu);
			__atomic_sub_fetch(&w->held_bytes, ch->n, __ATOMIC_RELAXED);
			w->held_lines -= ch->lines;
			if (w->waiting)
				pthread_cond_broadcast(&w->room);
			pthread_mutex_unlock(&w->mu);
		}
		if (!kept)
			give_back(w, ch);
		n++;
		/* Batches stay bounded even when a drain brings many chunks. */
		if (w->o.sync ? !w->pending : txn_due(w))
			commit(w);
	}
	pthread_mutex_lock(&w->mu);
	hand_over(w);
	w->done += n;
	if (w->o.sync)
		pthread_cond_broadcast(&w->room);
	pthread_mutex_unlock(&w->mu);
}

/*
 * writer_open: open the file and create the session here, off the relay's
 * path, so that the server starts at once; a lock held elsewhere is waited
 * out while the queue holds what is relayed meanwhile. A file that cannot be
 * a capture is said once, and the tap relays without logging.
 */
static void open_store(struct writer *w)
{
	struct mt_err err = {"", 0};
	struct stat sb;

	for (;;) {
		struct store *st = NULL;
		if (store_open_wait(w->path, STORE_WRITE, LOCK_SLICE_MS, &st, &err) == 0) {
			w->st = st;
			break;
		}
		if (!err.busy || !keep_waiting(w)) {
			if (!w->gave_up)
				mt_voice_warn(&w->o.voice, "cannot log to %s: %s; %s", w->o.label, err.msg,
					      w->o.goes_on);
			return;
		}
		err.busy = 0;
	}
	store_set_lock_wait(w->st, LOCK_SLICE_MS, on_lock_wait, w);
	if (w->o.sync && store_set_sync_full(w->st, 1, &err))
		mt_voice_warn(&w->o.voice, "cannot make %s synchronous: %s", w->o.label, err.msg);
	/* A new file is made 0600; an existing one keeps its mode (the tap never
	 * changes it behind the user's back), but traffic may hold secrets. */
	if (stat(w->path, &sb) == 0 && (sb.st_mode & 077))
		mt_voice_warn(&w->o.voice,
			      "%s can be read by other users (mode %04o), and so can its -wal and -shm "
			      "files: traffic may hold secrets; chmod 600 it",
			      w->o.label, (unsigned)(sb.st_mode & 07777));
	while (!w->shared && store_session_create(w->st, &w->sn, &w->session, &err)) {
		if (!err.busy || !keep_waiting(w)) {
			if (!w->gave_up)
				mt_voice_warn(&w->o.voice, "cannot log to %s: %s; %s", w->o.label, err.msg,
					      w->o.goes_on);
			store_close(w->st);
			w->st = NULL;
			return;
		}
		err.busy = 0;
	}
	w->lock_since = 0;
	if (!w->shared)
		spans_row(w, 1);
	pthread_mutex_lock(&w->mu);
	end_stall(w);
	w->last_commit = mt_mono_ns();
	if (w->waiting)
		pthread_cond_broadcast(&w->room);
	pthread_mutex_unlock(&w->mu);
}

/*
 * The session's end: the streams' last unterminated lines, the gap row when
 * something was not stored, how the server ended, and the file closed.
 */
static void finish_session(struct writer *w)
{
	struct mt_err err = {"", 0};

	for (int i = 0; i < WS_COUNT; i++) {
		struct chunk end;
		memset(&end, 0, sizeof(end));
		end.s = (enum writer_stream)i;
		end.t_ns = mt_mono_ns() - w->t0;
		end.wall = mt_wall_us();
		(void)ensure_txn(w, w->seq);
		process(w, &end);
	}
	if (w->st && !w->failed) {
		commit(w);
		look_at_file(w);
	}
	spans_finish(w);
	if (!w->st)
		return;
	if (w->shared)
		switch_session(w, w->lost_sess);
	if ((w->lost_msgs || w->lost_bytes || w->failed) && !w->session) {
		w->failed = 1; /* (a shared writer whose sessions could not be made) */
	} else if (w->lost_msgs || w->lost_bytes || w->failed) {
		/* Record the gap: after a failure, a checkpoint may have made room. */
		char why[700];
		snprintf(why, sizeof(why), "%s", w->failed ? w->fail_reason : "not stored");
		store_rollback(w->st);
		w->in_txn = 0;
		store_checkpoint(w->st);
		for (;;) {
			err.busy = 0;
			if (!store_begin(w->st, &err) &&
			    !store_add_gap(w->st, w->session, w->lost_seq ? w->lost_seq : -1, NULL,
					   (int64_t)w->lost_msgs, (int64_t)w->lost_bytes, why, &err) &&
			    !(w->has_end && store_session_finish(w->st, w->session, &w->end, &err)) &&
			    !store_commit(w->st, &err))
				break;
			store_rollback(w->st);
			if (!err.busy || w->gave_up || !keep_waiting(w)) {
				mt_voice_warn(&w->o.voice, "cannot record the logging gap in %s: %s",
					      w->o.label, err.msg);
				break;
			}
		}
		w->failed = 1;
	} else if (w->has_end) {
		while (store_session_finish(w->st, w->session, &w->end, &err)) {
			if (!err.busy || !keep_waiting(w)) {
				mt_voice_warn(&w->o.voice, "cannot record the end of the session in %s: %s",
					      w->o.label, err.msg);
				w->failed = 1;
				break;
			}
			err.busy = 0;
		}
	}
}

static void deadline_after(struct timespec *ts, int64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ns / 1000000000;
	ts->tv_nsec += ns % 1000000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct timespec ts;
	int64_t batch_ns = (int64_t)w->o.batch_ms * 1000000;

	if (w->path)
		open_store(w);
	else if (w->st && !w->shared)
		spans_row(w, 1);
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->head && !w->finishing) {
			if (w->in_txn) {
				/* Rows wait for their commit: sleep until it is due. */
				int64_t left = w->txn_started + batch_ns - mt_mono_ns();
				if (left > 0) {
					deadline_after(&ts, left);
					pthread_cond_timedwait(&w->wake, &w->mu, &ts);
					continue;
				}
				pthread_mutex_unlock(&w->mu);
				commit(w);
				pthread_mutex_lock(&w->mu);
				continue;
			}
			/* No producer is putting now: what they did not take back is freed here. */
			hand_over(w);
			free_chunks(take_spent(w));
			w->idle = 1;
			deadline_after(&ts, 1000000000);
			int rc = pthread_cond_timedwait(&w->wake, &w->mu, &ts);
			w->idle = 0;
			if (rc == ETIMEDOUT && w->st) {
				pthread_mutex_unlock(&w->mu);
				look_at_file(w);
				pthread_mutex_lock(&w->mu);
			}
		}
		if (!w->head)
			break; /* finishing, and nothing left */
		/* Let a batch gather, unless someone needs it now. */
		if (!w->urgent && !w->stopping && !w->o.sync) {
			deadline_after(&ts, batch_ns);
			while (!w->urgent && !w->stopping &&
			       pthread_cond_timedwait(&w->wake, &w->mu, &ts) != ETIMEDOUT)
				;
		}
		w->pending = w->head;
		w->head = w->tail = NULL;
		w->urgent = 0;
		pthread_mutex_unlock(&w->mu);
		store_pending(w);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	finish_session(w);
	return NULL;
}

static void writer_free(struct writer *w);

static struct writer *start(struct store *st, int64_t session, int64_t t0_ns, const struct writer_opts *o,
			    const char *path, const struct store_session_new *sn, int shared,
			    struct mt_err *err)
{
	struct writer *w = mt_calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	w->o = *o;
	w->o.otlp = NULL;
	w->shared = shared;
	if (o->otlp) {
		struct mt_err perr = {"", 0};
		/* (Said and stored without its query, which may hold a credential.) */
		w->push_url = otlp_push_url(o->otlp->url, &perr);
		if (w->push_url) {
			w->push_url[strcspn(w->push_url, "?#")] = '\0';
			w->push = otlp_push_start(o->otlp, &perr);
		}
		if (!w->push)
			mt_voice_warn(&w->o.voice, "cannot push spans to %s: %s; no span is pushed",
				      w->push_url ? w->push_url : "--otlp", perr.msg);
		w->sopts.spans = o->otlp_spans;
	}
	if (shared) {
		w->nslots = 16;
		w->slots = mt_calloc(w->nslots, sizeof(*w->slots));
		w->slots[0].used = 1;
	}
	w->st = st;
	w->session = session;
	w->t0 = t0_ns;
	w->seq = 1;
	if (path) {
		w->path = mt_strdup(path);
		if (sn) {
			w->sn = *sn;
			w->sn.transport = mt_strdup(sn->transport ? sn->transport : "stdio");
			w->sn.command = sn->command ? mt_strdup(sn->command) : NULL;
			w->sn.cwd = sn->cwd ? mt_strdup(sn->cwd) : NULL;
			w->sn.upstream = sn->upstream ? mt_strdup(sn->upstream) : NULL;
			w->sn.client_addr = sn->client_addr ? mt_strdup(sn->client_addr) : NULL;
		}
		w->stalled = 1; /* until the session is there to store into */
	} else if (st) {
		store_set_lock_wait(st, LOCK_SLICE_MS, on_lock_wait, w);
	}
	w->last_commit = mt_mono_ns();
	mt_facts_init(&w->facts);
	mt_map_init(&w->xw_at, 0);
	for (int i = 0; i < WS_COUNT; i++)
		mt_framer_init(&w->fr[i], o->max_message);
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_cond_init(&w->room, &ca);
	pthread_condattr_destroy(&ca);
	int e = pthread_create(&w->thread, NULL, writer_main, w);
	if (e) {
		mt_err_set(err, "cannot start the writer thread: %s", strerror(e));
		store_close(w->st); /* (taken either way) */
		writer_free(w);
		return NULL;
	}
	return w;
}

struct writer *writer_start(struct store *st, int64_t session, int64_t t0_ns, const struct writer_opts *o,
			    struct mt_err *err)
{
	return start(st, session, t0_ns, o, NULL, NULL, 0, err);
}

struct writer *writer_open(const char *path, const struct store_session_new *sn, int64_t t0_ns,
			   const struct writer_opts *o, struct mt_err *err)
{
	return start(NULL, 0, t0_ns, o, path, sn, 0, err);
}

struct writer *writer_open_shared(const char *path, const struct writer_opts *o, struct mt_err *err)
{
	return start(NULL, 0, 0, o, path, NULL, 1, err);
}

static void put(struct writer *w, enum writer_stream s, const char *p, size_t n, int timed, int64_t t_ns,
		int64_t wall);

void writer_put(struct writer *w, enum writer_stream s, const char *p, size_t n)
{
	put(w, s, p, n, 0, 0, 0);
}

void writer_put_at(struct writer *w, enum writer_stream s, const char *p, size_t n, int64_t t_ns,
		   int64_t wall)
{
	put(w, s, p, n, 1, t_ns, wall);
}

static size_t count_lines(const char *p, size_t n)
{
	size_t lines = 0;
	const char *end = p + n;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		lines++;
		p++;
	}
	return lines;
}

/* Is there room for a chunk of n bytes and lines lines? (under mu) */
static int has_room(const struct writer *w, size_t n, size_t lines)
{
	size_t max_bytes = w->stalled ? w->o.hold_bytes : w->o.queue_bytes;
	size_t max_lines = w->stalled ? SIZE_MAX : w->o.queue_lines;

	/* A chunk always fits when nothing is held. */
	return !w->held_bytes || (w->held_bytes + n <= max_bytes && w->held_lines + lines <= max_lines);
}

static void enqueue(struct writer *w, struct chunk *ch, int timed, int64_t t_ns, int64_t wall);

static void put(struct writer *w, enum writer_stream s, const char *p, size_t n, int timed, int64_t t_ns,
		int64_t wall)
{
	struct chunk *ch = mt_calloc(1, sizeof(*ch) + n);

	ch->s = s;
	ch->n = n;
	ch->lines = count_lines(p, n);
	if (n)
		memcpy(ch->data, p, n);
	enqueue(w, ch, timed, t_ns, wall);
}

/*
 * A record of the HTTP tap: len bytes of body, rlen bytes left for the caller
 * to fill (after a message: its classification and redacted form), the
 * headers, then the strings (NULL ones stay NULL), and two numbers. It counts
 * as one line and its bytes.
 */
static struct chunk *make_record(enum chunk_type type, int h, enum writer_stream s, int64_t seq,
				 const void *body, size_t len, size_t rlen, const struct mt_hdr *hv,
				 size_t nh, const char *const strs[CHUNK_STRS], int64_t num0, int64_t num1)
{
	size_t n = len + rlen, sl[CHUNK_STRS], hlen = 0;
	struct chunk *ch;

	for (size_t i = 0; i < nh; i++)
		hlen += strlen(hv[i].name) + strlen(hv[i].value) + 2;
	n += hlen;
	for (int i = 0; i < CHUNK_STRS; i++) {
		sl[i] = strs && strs[i] ? strlen(strs[i]) + 1 : 0;
		n += sl[i];
	}
	ch = mt_malloc(sizeof(*ch) + n);
	memset(ch, 0, sizeof(*ch));
	ch->type = type;
	ch->sess = h;
	ch->s = s;
	ch->seq = seq;
	ch->num[0] = num0;
	ch->num[1] = num1;
	ch->len = len;
	ch->rlen = rlen;
	ch->n = n;
	ch->lines = 1;
	if (len)
		memcpy(ch->data, body, len);
	n = len + rlen;
	ch->hlen = hlen;
	ch->nh = nh;
	for (size_t i = 0; i < nh; i++) {
		size_t a = strlen(hv[i].name) + 1, b = strlen(hv[i].value) + 1;
		memcpy(ch->data + n, hv[i].name, a);
		memcpy(ch->data + n + a, hv[i].value, b);
		n += a + b;
	}
	for (int i = 0; i < CHUNK_STRS; i++) {
		if (!sl[i])
			continue;
		memcpy(ch->data + n, strs[i], sl[i]);
		ch->str[i] = (uint32_t)n + 1;
		n += sl[i];
	}
	return ch;
}

/* A record of the HTTP tap (make_record), queued. */
static void put_record_h(struct writer *w, int h, enum chunk_type type, enum writer_stream s, int64_t seq,
			 const void *body, size_t len, const struct mt_hdr *hv, size_t nh,
			 const char *const strs[CHUNK_STRS], int64_t num0, int64_t num1)
{
	enqueue(w, make_record(type, h, s, seq, body, len, 0, hv, nh, strs, num0, num1), 0, 0, 0);
}

static void put_record(struct writer *w, int h, enum chunk_type type, enum writer_stream s, int64_t seq,
		       const void *body, size_t len, const char *const strs[CHUNK_STRS], int64_t num0,
		       int64_t num1)
{
	put_record_h(w, h, type, s, seq, body, len, NULL, 0, strs, num0, num1);
}

void writer_put_msg(struct writer *w, const struct writer_http_msg *m)
{
	const char *strs[CHUNK_STRS] = {m->channel, m->sse_id, m->sse_event, NULL};
	size_t sn = m->redacted && m->stored ? m->stored_n : 0, cn = m->cls ? sizeof(*m->cls) : 0;
	struct chunk *ch = make_record(CH_MSG, m->sess, m->s, m->seq, m->p, m->n, cn + sn, NULL, 0, strs,
				       m->exchange, m->replayed);

	/* After the message: its classification (spans as offsets), its redaction. */
	if (m->cls) {
		struct mt_class c = *m->cls;
		class_move(&c, m->p, 1);
		memcpy(ch->data + m->n, &c, sizeof(c));
	}
	if (sn)
		memcpy(ch->data + m->n + cn, m->stored, sn);
	ch->pre = !!m->redacted;
	ch->has_cls = !!m->cls;
	enqueue(w, ch, 0, 0, 0);
}

void writer_put_gap(struct writer *w, int h, int64_t seq, enum writer_stream s, size_t bytes, const char *why)
{
	const char *strs[CHUNK_STRS] = {why, NULL, NULL, NULL};

	put_record(w, h, CH_GAP, s, seq, NULL, 0, strs, (int64_t)bytes, 0);
}

void writer_put_exchange_begin(struct writer *w, int h, const struct writer_exchange *x)
{
	const char *strs[CHUNK_STRS] = {x->method, x->target, x->headers_json,
					x->headers_json ? x->last_event_id : NULL};

	put_record_h(w, h, CH_XBEGIN, WS_C2S, x->seq, x->body, x->body ? x->body_len : 0,
		     x->headers_json ? NULL : x->h, x->headers_json ? 0 : x->nh, strs, x->conn, 0);
}

void writer_put_exchange_head(struct writer *w, int h, int64_t seq, int status, const struct mt_hdr *hv,
			      size_t nh, const char *resp_type, int64_t first_byte_ns)
{
	const char *strs[CHUNK_STRS] = {resp_type, NULL, NULL, NULL};

	put_record_h(w, h, CH_XHEAD, WS_S2C, seq, NULL, 0, hv, nh, strs, status, first_byte_ns);
}

void writer_put_exchange_head_json(struct writer *w, int h, int64_t seq, int status, const char *headers_json,
				   const char *resp_type, int64_t first_byte_ns)
{
	const char *strs[CHUNK_STRS] = {resp_type, headers_json, NULL, NULL};

	put_record_h(w, h, CH_XHEAD, WS_S2C, seq, NULL, 0, NULL, 0, strs, status, first_byte_ns);
}

void writer_put_exchange_end(struct writer *w, int h, int64_t seq, int64_t end_ns, const char *outcome,
			     const char *error, const void *body, size_t len)
{
	const char *strs[CHUNK_STRS] = {outcome, error, NULL, NULL};

	put_record(w, h, CH_XEND, WS_S2C, seq, body, body ? len : 0, strs, end_ns, 0);
}

void writer_put_http_id(struct writer *w, int h, const char *id)
{
	const char *strs[CHUNK_STRS] = {id, NULL, NULL, NULL};

	put_record(w, h, CH_HTTP_ID, WS_S2C, 0, NULL, 0, strs, 0, 0);
}

int writer_session_new(struct writer *w, const struct store_session_new *sn, int64_t t0_ns)
{
	const char *strs[CHUNK_STRS] = {sn->transport ? sn->transport : "stdio", sn->upstream,
					sn->client_addr, sn->command};
	int h;

	pthread_mutex_lock(&w->mu);
	h = ++w->next_handle;
	pthread_mutex_unlock(&w->mu);
	put_record(w, h, CH_SESSION_NEW, WS_C2S, t0_ns, NULL, 0, strs, sn->started_wall, h);
	return h;
}

void writer_session_end(struct writer *w, int h, const struct store_session_end *e)
{
	const char *strs[CHUNK_STRS] = {e->error, NULL, NULL, NULL};

	put_record(w, h, CH_SESSION_END, WS_S2C, 0, NULL, 0, strs, e->ended_wall, e->duration_ns);
}

int64_t writer_clock(const struct writer *w)
{
	return mt_mono_ns() - w->t0;
}

void writer_now(struct writer *w, int64_t *ns, int64_t *wall)
{
	if (!__atomic_load_n(&w->timed, __ATOMIC_ACQUIRE)) {
		*ns = mt_mono_ns(); /* (never timed: the tap's writers, without a lock) */
		*wall = mt_wall_us();
		return;
	}
	pthread_mutex_lock(&w->mu);
	*ns = w->timed ? w->time_ns : mt_mono_ns();
	*wall = w->timed ? w->time_wall : mt_wall_us();
	pthread_mutex_unlock(&w->mu);
}

void writer_set_time(struct writer *w, int64_t ns, int64_t wall)
{
	pthread_mutex_lock(&w->mu);
	w->time_ns = ns;
	w->time_wall = wall;
	__atomic_store_n(&w->timed, ns >= 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->mu);
}

static void enqueue(struct writer *w, struct chunk *ch, int timed, int64_t t_ns, int64_t wall)
{
	struct timespec ts;
	size_t n = ch->n;
	uint64_t ticket;
	struct chunk *spent;

	pthread_mutex_lock(&w->mu);
	/*
	 * Backpressure. While the store keeps up, what is relayed and not committed
	 * stays under the queue's bounds (this bounds what a SIGKILL loses). While it
	 * takes nothing (a lock held elsewhere, a commit that hangs), the relay goes
	 * on up to --hold; only then does it wait.
	 */
	while (!has_room(w, n, ch->lines) && !w->stopping) {
		if (w->stalled == 3) {
			w->stalled = 0; /* the backlog fills --hold: the queue's bound again */
			continue;
		}
		w->waits++;
		w->urgent = 1;
		pthread_cond_signal(&w->wake);
		w->waiting++;
		deadline_after(&ts, STALL_NS);
		int rc = pthread_cond_timedwait(&w->room, &w->mu, &ts);
		w->waiting--;
		if (rc == ETIMEDOUT && !w->stalled && mt_mono_ns() - w->last_commit >= STALL_NS)
			w->stalled = 1; /* no commit for a while: the disk stalls */
		/* (A slow store is backpressure as usual: only a lock is said.) */
		if (w->stalled == 2 && !has_room(w, n, ch->lines) && !w->hold_said) {
			w->hold_said = 1;
			mt_voice_warn(&w->o.voice,
				      "%s is locked by another connection and the tap holds %zu bytes for it "
				      "(--hold): the relay waits for it now",
				      w->o.label, w->held_bytes);
		}
	}
	/* The times and the order are taken here, under the lock: the store's order
	 * is the order in which the relay read the bytes. */
	ch->t_ns = timed ? t_ns : w->timed ? w->time_ns - w->t0 : mt_mono_ns() - w->t0;
	ch->wall = timed ? wall : w->timed ? w->time_wall : mt_wall_us();
	if (w->tail)
		w->tail->next = ch;
	else
		w->head = ch;
	w->tail = ch;
	__atomic_add_fetch(&w->held_bytes, n, __ATOMIC_RELAXED);
	w->held_lines += ch->lines;
	ticket = ++w->put;
	if (w->o.sync || w->held_bytes >= w->o.queue_bytes / 2 || w->held_lines >= w->o.queue_lines / 2)
		w->urgent = 1;
	if (w->idle || w->urgent)
		pthread_cond_signal(&w->wake);
	if (w->o.sync) {
		w->waiting++;
		while (w->done < ticket && !w->stopping)
			pthread_cond_wait(&w->room, &w->mu);
		w->waiting--;
	}
	spent = take_spent(w);
	pthread_mutex_unlock(&w->mu);
	free_chunks(spent);
}

size_t writer_held(struct writer *w)
{
	return __atomic_load_n(&w->held_bytes, __ATOMIC_RELAXED);
}

size_t writer_reclaim(struct writer *w)
{
	struct chunk *l;
	size_t held;

	pthread_mutex_lock(&w->mu);
	l = take_spent(w);
	held = w->held_bytes;
	pthread_mutex_unlock(&w->mu);
	free_chunks(l);
	return held;
}

void writer_stop(struct writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	pthread_cond_broadcast(&w->wake);
	pthread_cond_broadcast(&w->room);
	pthread_mutex_unlock(&w->mu);
}

void writer_give_up(void)
{
	give_up = 1;
}

int writer_finish(struct writer *w, const struct store_session_end *e, struct writer_stats *stats)
{
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	if (e) {
		w->has_end = 1;
		w->end = *e;
		w->end_error = e->error ? mt_strdup(e->error) : NULL;
		w->end.error = w->end_error;
	}
	w->stopping = 1;
	w->finishing = 1;
	pthread_cond_broadcast(&w->wake);
	pthread_cond_broadcast(&w->room);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	hand_over(w);
	free_chunks(take_spent(w));

	if ((w->st || w->path) && (w->failed || w->lost_msgs || w->lost_bytes || w->gave_up))
		rc = -1;
	if (w->st && store_close(w->st)) {
		mt_voice_warn(&w->o.voice, "cannot close %s cleanly", w->o.label);
		rc = -1;
	}
	if (stats) {
		*stats = w->stats;
		stats->waits = w->waits;
	}
	writer_free(w);
	return rc;
}

/* Free w and what it holds (its thread, if it ever ran, was joined). */
static void writer_free(struct writer *w)
{
	for (int i = 0; i < WS_COUNT; i++)
		mt_framer_release(&w->fr[i]);
	mt_buf_release(&w->red);
	mt_buf_release(&w->hjson);
	mt_buf_release(&w->hjson2);
	mt_buf_release(&w->tgt);
	mt_buf_release(&w->body);
	mt_buf_release(&w->body2);
	free(w->hv);
	free(w->xw);
	mt_map_release(&w->xw_at);
	mt_facts_release(&w->facts);
	mt_spans_free(w->spans);
	for (size_t i = 0; i < w->nslots; i++)
		if (w->slots[i].used && (int)i != w->cur_sess) {
			mt_facts_release(&w->slots[i].facts);
			mt_spans_free(w->slots[i].spans);
		}
	otlp_push_stop(w->push, 0, NULL); /* (finish_session stopped it: NULL) */
	free(w->push_url);
	free(w->slots);
	free(w->fail_reason);
	free(w->end_error);
	free(w->path);
	free((char *)w->sn.transport);
	free((char *)w->sn.command);
	free((char *)w->sn.cwd);
	free((char *)w->sn.upstream);
	free((char *)w->sn.client_addr);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->room);
	free(w);
}
