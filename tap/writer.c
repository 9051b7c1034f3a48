/*
 * writer.c - the queue between the relay and the store, and the thread that
 * empties it (see writer.h).
 */
#include "tap/writer.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/map.h"
#include "schema/message.h"
#include "tap/frame.h"

struct chunk {
	struct chunk *next;
	enum writer_stream s;
	int64_t t_ns; /* since the session's start */
	int64_t wall;
	size_t n;     /* 0: the stream ended */
	char data[];
};

static const char *const stream_dir[WS_COUNT] = {"c2s", "s2c", "stderr"};

struct writer {
	/* Shared, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t wake;    /* the writer waits here */
	pthread_cond_t room;    /* producers wait here for room, or (sync) a commit */
	struct chunk *head, *tail;
	size_t bytes;           /* queued bytes */
	int idle;               /* the writer waits on an empty queue: wake it */
	int urgent;             /* a producer asked for a drain now */
	int stopping;
	int waiting;            /* producers waiting */
	uint64_t put;           /* chunks queued so far */
	uint64_t done;          /* chunks processed (and, with sync, committed) */
	uint64_t waits;

	/* The writer thread's own (the finisher's after the join). */
	pthread_t thread;
	struct writer_opts o;
	struct store *st;       /* owned; NULL: relay only */
	int64_t session;
	int64_t t0;
	struct mt_framer fr[WS_COUNT];
	const struct chunk *cur; /* the chunk being framed */
	int64_t seq;             /* the next frame's sequence number */
	int in_txn;
	size_t txn_rows;
	int64_t txn_started;     /* monotonic ns */
	int64_t txn_first_seq;   /* the first seq the open transaction holds */
	uint64_t txn_msgs, txn_stderr, txn_gaps, txn_bytes; /* in it: lost if it fails */
	uint64_t txn_gap_bytes;                              /* of txn_bytes, the gaps' */
	int failed;              /* the store failed for good */
	int64_t moved_check;     /* monotonic ns of the last look at the file's path */
	int moved_said;          /* the file's deletion or replacement was reported */
	char *fail_reason;
	uint64_t lost_msgs, lost_bytes; /* relayed but not stored (not yet in a gap row) */
	int64_t lost_seq;        /* where the loss began */
	int64_t init_seq;        /* the initialize request's seq, until it is answered */
	struct mt_map open;      /* requests awaiting an answer: key -> seq */
	struct mt_buf key;       /* scratch for the map's keys */
	struct writer_stats stats;
};

void writer_opts_default(struct writer_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->queue_bytes = 4u << 20;
	o->batch_rows = 512;
	o->batch_ms = 5;
	o->max_message = 256u << 20;
	o->label = "the capture file";
}

/* ---- the store side (writer thread) ---- */

/* msgs messages (bytes) from seq on were relayed but are not stored. */
static void lose(struct writer *w, uint64_t msgs, uint64_t bytes, int64_t seq)
{
	if (!w->lost_msgs && !w->lost_bytes)
		w->lost_seq = seq;
	w->lost_msgs += msgs;
	w->lost_bytes += bytes;
	w->stats.lost_messages += msgs;
	w->stats.lost_bytes += bytes;
}

static void store_failed(struct writer *w, const char *why)
{
	if (w->failed)
		return;
	w->failed = 1;
	w->fail_reason = mt_strdup(why);
	mt_warn("cannot log to %s: %s; the relay goes on without logging", w->o.label, why);
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
}

static int ensure_txn(struct writer *w, int64_t seq)
{
	struct mt_err err = {""};

	if (w->in_txn)
		return 0;
	if (store_begin(w->st, &err)) {
		store_failed(w, err.msg);
		return -1;
	}
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
static void look_at_file(struct writer *w, int now_too)
{
	int64_t now = mt_mono_ns();

	if (w->moved_said || !w->st || (!now_too && now - w->moved_check < 1000000000))
		return;
	w->moved_check = now;
	int moved = store_file_moved(w->st);
	if (moved) {
		w->moved_said = 1;
		mt_warn("%s was %s while recording: this session is logged into a file that is "
			"gone and is lost when the tap exits",
			w->o.label, moved == 1 ? "deleted" : "replaced by another file");
	}
}

static void commit(struct writer *w)
{
	struct mt_err err = {""};

	if (!w->in_txn)
		return;
	if (store_commit(w->st, &err)) {
		store_failed(w, err.msg);
		return;
	}
	w->in_txn = 0;
	w->txn_msgs = w->txn_stderr = w->txn_gaps = w->txn_bytes = w->txn_gap_bytes = 0;
	w->stats.commits++;
	look_at_file(w, 0);
}

/* A JSON string member of obj (borrowed), or NULL. */
static const char *jstr(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/*
 * Note what an initialize request (c2s) or its answer (s2c, paired by the tap:
 * request_seq) says about the session.
 */
static void note_initialize(struct writer *w, enum writer_stream s, const struct mt_class *c,
			    const char *p, size_t n, int64_t seq, int64_t request_seq)
{
	struct store_session_init in = {NULL, NULL, NULL, NULL};
	struct mt_err err = {""};
	json_t *msg, *body, *info;
	char *caps = NULL;
	int is_request = s == WS_C2S && c->kind == MT_REQUEST;

	if (is_request) {
		/* Every request passes here: decode the name only when it has escapes. */
		int is_init = c->method.n == 12 && !memcmp(c->method.p, "\"initialize\"", 12);
		if (!is_init && memchr(c->method.p, '\\', c->method.n)) {
			struct mt_buf m = MT_BUF_INIT;
			is_init = mt_json_string(c->method, &m) == 0 && m.len == 10 &&
				  memcmp(m.data, "initialize", 10) == 0;
			mt_buf_release(&m);
		}
		if (!is_init)
			return;
		w->init_seq = seq;
	} else if (!(s == WS_S2C && c->kind == MT_RESPONSE && w->init_seq &&
		     request_seq == w->init_seq)) {
		return;
	}
	msg = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	body = json_object_get(msg, is_request ? "params" : "result");
	if (json_is_object(body)) {
		info = json_object_get(body, is_request ? "clientInfo" : "serverInfo");
		in.protocol_version = jstr(body, "protocolVersion");
		in.name = jstr(info, "name");
		in.version = jstr(info, "version");
		if (json_is_object(json_object_get(body, "capabilities")))
			caps = json_dumps(json_object_get(body, "capabilities"),
					  JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		in.caps_json = caps;
		if ((is_request ? store_session_set_client : store_session_set_server)(
			    w->st, w->session, &in, &err))
			store_failed(w, err.msg);
	}
	if (!is_request)
		w->init_seq = 0;
	free(caps);
	json_decref(msg);
}

/* The most requests remembered while they await an answer. */
#define OPEN_REQUESTS_MAX 100000

/*
 * Pair answers with requests as they are read: a request is remembered by its
 * direction and id (with its type); an answer in the other direction with the
 * same id takes it. Returns the request's seq for an answer, else 0.
 */
static int64_t pair(struct writer *w, enum writer_stream s, const struct mt_class *c, int64_t seq)
{
	int is_request = c->kind == MT_REQUEST;
	int64_t req = 0;

	if (c->idtype == MT_ID_NONE || c->idtype == MT_ID_NULL ||
	    !(is_request || c->kind == MT_RESPONSE || c->kind == MT_ERROR))
		return 0;
	mt_id_key(c, (s == WS_C2S) == is_request ? 'c' : 's', &w->key);
	if (is_request)
		(void)mt_map_put(&w->open, w->key.data, w->key.len, seq);
	else if (!mt_map_take(&w->open, w->key.data, w->key.len, &req))
		req = 0;
	return req;
}

/* One frame from the framer of the current chunk's stream. */
static void on_frame(void *ctx, const char *p, size_t n, unsigned flags)
{
	struct writer *w = ctx;
	const struct chunk *ch = w->cur;
	struct mt_err err = {""};
	int64_t seq = w->seq++;
	int rc;

	if (!w->st || w->failed || ensure_txn(w, seq)) {
		lose(w, 1, n, seq);
		return;
	}
	if (flags & MT_FRAME_OVERSIZED) {
		char why[160];
		snprintf(why, sizeof(why), "a line of %zu bytes is larger than --max-message (%zu)",
			 n, w->o.max_message);
		if (store_add_gap(w->st, w->session, seq, stream_dir[ch->s], 1, (int64_t)n, why,
				  &err)) {
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
		return;
	}
	if (ch->s == WS_STDERR) {
		rc = store_add_stderr(w->st, w->session, seq, ch->t_ns, ch->wall, p, n,
				      !!(flags & MT_FRAME_INCOMPLETE), &err);
		if (!rc) {
			w->stats.stored_stderr++;
			w->txn_stderr++;
		}
	} else {
		struct mt_class c;
		struct store_msg m;
		mt_classify(p, n, &c);
		m.session = w->session;
		m.seq = seq;
		m.t_ns = ch->t_ns;
		m.wall = ch->wall;
		m.dir = stream_dir[ch->s];
		m.channel = "stdio";
		m.cls = &c;
		m.raw = p;
		m.size = n;
		m.incomplete = !!(flags & MT_FRAME_INCOMPLETE);
		m.request_seq = pair(w, ch->s, &c, seq);
		rc = store_add_message(w->st, &m, &err);
		if (!rc) {
			w->stats.stored_messages++;
			w->txn_msgs++;
			if (c.kind == MT_REQUEST || c.kind == MT_RESPONSE)
				note_initialize(w, ch->s, &c, p, n, seq, m.request_seq);
		}
	}
	if (rc) {
		store_failed(w, err.msg);
		lose(w, 1, n, seq);
		return;
	}
	w->txn_rows++;
	w->txn_bytes += n;
}

static void process(struct writer *w, struct chunk *ch)
{
	w->cur = ch;
	if (ch->n)
		mt_framer_push(&w->fr[ch->s], ch->data, ch->n, on_frame, w);
	else
		mt_framer_close(&w->fr[ch->s], on_frame, w);
	w->cur = NULL;
}

static int txn_due(struct writer *w)
{
	return w->in_txn && (w->txn_rows >= w->o.batch_rows ||
			     mt_mono_ns() - w->txn_started >= (int64_t)w->o.batch_ms * 1000000);
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

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->head && !w->stopping) {
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
			w->idle = 1;
			pthread_cond_wait(&w->wake, &w->mu);
			w->idle = 0;
		}
		if (!w->head)
			break; /* stopping, and nothing left */
		/* Let a batch gather, unless someone needs it now. */
		if (!w->urgent && !w->stopping && !w->o.sync) {
			deadline_after(&ts, batch_ns);
			while (!w->urgent && !w->stopping &&
			       pthread_cond_timedwait(&w->wake, &w->mu, &ts) != ETIMEDOUT)
				;
		}
		struct chunk *list = w->head;
		w->head = w->tail = NULL;
		w->bytes = 0;
		w->urgent = 0;
		if (w->waiting)
			pthread_cond_broadcast(&w->room);
		pthread_mutex_unlock(&w->mu);

		uint64_t n = 0;
		while (list) {
			struct chunk *next = list->next;
			process(w, list);
			free(list);
			list = next;
			n++;
			/* Batches stay bounded even when a drain brings many chunks. */
			if (w->o.sync ? !list : txn_due(w))
				commit(w);
		}

		pthread_mutex_lock(&w->mu);
		w->done += n;
		if (w->o.sync)
			pthread_cond_broadcast(&w->room);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct writer *writer_start(struct store *st, int64_t session, int64_t t0_ns,
			    const struct writer_opts *o)
{
	struct writer *w = mt_calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	w->o = *o;
	w->st = st;
	w->session = session;
	w->t0 = t0_ns;
	w->seq = 1;
	mt_map_init(&w->open, OPEN_REQUESTS_MAX);
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
		mt_error("cannot start the writer thread: %s", strerror(e));
		abort();
	}
	return w;
}

static void put(struct writer *w, enum writer_stream s, const char *p, size_t n, int timed,
		int64_t t_ns, int64_t wall);

void writer_put(struct writer *w, enum writer_stream s, const char *p, size_t n)
{
	put(w, s, p, n, 0, 0, 0);
}

void writer_put_at(struct writer *w, enum writer_stream s, const char *p, size_t n,
		   int64_t t_ns, int64_t wall)
{
	put(w, s, p, n, 1, t_ns, wall);
}

static void put(struct writer *w, enum writer_stream s, const char *p, size_t n, int timed,
		int64_t t_ns, int64_t wall)
{
	struct chunk *ch = mt_malloc(sizeof(*ch) + n);
	uint64_t ticket;

	ch->next = NULL;
	ch->s = s;
	ch->n = n;
	if (n)
		memcpy(ch->data, p, n);
	pthread_mutex_lock(&w->mu);
	/* Backpressure: wait for room, but a chunk always fits in an empty queue. */
	while (w->head && w->bytes + n > w->o.queue_bytes && !w->stopping) {
		w->waits++;
		w->urgent = 1;
		pthread_cond_signal(&w->wake);
		w->waiting++;
		pthread_cond_wait(&w->room, &w->mu);
		w->waiting--;
	}
	/* The times and the order are taken here, under the lock: the store's order
	 * is the order in which the relay read the bytes. */
	ch->t_ns = timed ? t_ns : mt_mono_ns() - w->t0;
	ch->wall = timed ? wall : mt_wall_us();
	if (w->tail)
		w->tail->next = ch;
	else
		w->head = ch;
	w->tail = ch;
	w->bytes += n;
	ticket = ++w->put;
	if (w->o.sync || w->bytes >= w->o.queue_bytes / 2)
		w->urgent = 1;
	if (w->idle || w->urgent)
		pthread_cond_signal(&w->wake);
	if (w->o.sync) {
		w->waiting++;
		while (w->done < ticket && !w->stopping)
			pthread_cond_wait(&w->room, &w->mu);
		w->waiting--;
	}
	pthread_mutex_unlock(&w->mu);
}

void writer_stop(struct writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	pthread_cond_broadcast(&w->wake);
	pthread_cond_broadcast(&w->room);
	pthread_mutex_unlock(&w->mu);
}

int writer_finish(struct writer *w, const struct store_session_end *e,
		  struct writer_stats *stats)
{
	struct mt_err err = {""};
	int rc = 0;

	writer_stop(w);
	pthread_join(w->thread, NULL);

	/* The writer thread is gone: what is left is this thread's, including chunks
	 * put after it stopped. */
	while (w->head) {
		struct chunk *next = w->head->next;
		process(w, w->head);
		free(w->head);
		w->head = next;
	}
	w->tail = NULL;
	for (int i = 0; i < WS_COUNT; i++) {
		struct chunk end = {NULL, (enum writer_stream)i, mt_mono_ns() - w->t0, mt_wall_us(), 0};
		process(w, &end);
	}
	if (w->st && !w->failed) {
		commit(w);
		look_at_file(w, 1);
	}
	if (w->st && (w->lost_msgs || w->lost_bytes || w->failed)) {
		/* Record the gap: after a failure, a checkpoint may have made room. */
		char why[700];
		snprintf(why, sizeof(why), "%s", w->failed ? w->fail_reason : "not stored");
		store_rollback(w->st);
		w->in_txn = 0;
		store_checkpoint(w->st);
		if (store_begin(w->st, &err) ||
		    store_add_gap(w->st, w->session, w->lost_seq ? w->lost_seq : -1, NULL,
				  (int64_t)w->lost_msgs, (int64_t)w->lost_bytes, why, &err) ||
		    (e && store_session_finish(w->st, w->session, e, &err)) ||
		    store_commit(w->st, &err)) {
			store_rollback(w->st);
			mt_warn("cannot record the logging gap in %s: %s", w->o.label, err.msg);
		}
		rc = -1;
	} else if (w->st && e) {
		if (store_session_finish(w->st, w->session, e, &err)) {
			mt_warn("cannot record the end of the session in %s: %s", w->o.label,
				err.msg);
			rc = -1;
		}
	}
	if (w->st && store_close(w->st)) {
		mt_warn("cannot close %s cleanly", w->o.label);
		rc = -1;
	}
	if (stats) {
		*stats = w->stats;
		stats->waits = w->waits;
	}
	for (int i = 0; i < WS_COUNT; i++)
		mt_framer_release(&w->fr[i]);
	mt_buf_release(&w->key);
	mt_map_release(&w->open);
	free(w->fail_reason);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->room);
	free(w);
	return rc;
}
