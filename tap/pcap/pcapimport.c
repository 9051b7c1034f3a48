/*
 * pcapimport.c - captured packets to stored MCP sessions (see pcapimport.h).
 *
 * The glue between HTTP reading (tap/http/httpstream.h, a sink of exchanges) and
 * what the HTTP tap stores (tap/http/httplog.h): each call sets the writer's
 * clock to the capture time of the data that made it, so every record's
 * t_ns and wall are the packets'.
 *
 * Every gap HTTP reading says is stored as a gap row: in the session of the
 * connection's last exchange; before its first exchange is read, held and
 * stored in that exchange's session before it; in a session of its own
 * when the connection closes without one.
 */
#include "tap/pcap/pcapimport.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gaps held for a connection before it has a session, at most (more are merged into the last). */
#define HELD_GAPS_MAX 16

struct iconn {
	int64_t num;                       /* hl's connection number */
	int64_t last_sess;                 /* the session of its last exchange (0: none yet) */
	char addr[64];                     /* the client's "ADDR:PORT" */
	char upstream[80];                 /* "http://ADDR:PORT" of the server */
	struct hl_gap held[HELD_GAPS_MAX]; /* gaps before its first exchange (why: owned) */
	size_t nheld;
};

struct mt_import {
	struct writer *w;
	struct hl_log *log;
	struct hx_reader *hx;
	struct tf *tf;
	struct mt_mem mem; /* every stage's memory, against limits.total_bytes */
};

struct iexch {
	struct hl_exch *x;
	struct iconn *conn;
};

void mt_import_opts_default(struct mt_import_opts *o)
{
	memset(o, 0, sizeof(*o));
	writer_opts_default(&o->wopts);
	/* An import produces as fast as it reads: bigger batches, a deeper queue. */
	o->wopts.batch_rows = 8192;
	o->wopts.batch_ms = 100;
	o->wopts.queue_bytes = 16u << 20;
	o->wopts.queue_lines = 65536;
	o->wopts.hold_bytes = 64u << 20;
	o->wopts.max_message = 16u << 20;
	tf_limits_default(&o->limits);
	hx_opts_default(&o->hx);
}

/* The capture time us is the writer's clock from now on. */
static void at(struct mt_import *im, int64_t us)
{
	/* (A pcapng time may be anything: beyond year 2262 in ns, it saturates.) */
	if (us < 0)
		us = 0;
	writer_set_time(im->w, us > INT64_MAX / 1000 ? INT64_MAX : us * 1000, us);
}

/* ---- the reassembler's streams, read by the HTTP reader ---- */

static void id_of(const struct tf_conn *tc, struct hx_conn_id *id)
{
	memset(id, 0, sizeof(*id));
	id->num = tc->num;
	id->client.family = tc->client.family;
	memcpy(id->client.addr, tc->client.addr, sizeof(id->client.addr));
	id->client.port = tc->client.port;
	id->server.family = tc->server.family;
	memcpy(id->server.addr, tc->server.addr, sizeof(id->server.addr));
	id->server.port = tc->server.port;
	id->saw_start = tc->saw_syn;
	id->first_us = tc->first_us;
	id->owner = (void *)tc;
}

static enum hx_dir hx_dir_of(enum tf_dir d)
{
	return d == TF_C2S ? HX_C2S : HX_S2C;
}

static void *gl_open(void *ctx, const struct tf_conn *tc)
{
	struct mt_import *im = ctx;
	struct hx_conn_id id;

	id_of(tc, &id);
	return hx_open(im->hx, &id);
}

static void gl_data(void *state, const struct tf_conn *tc, enum tf_dir d, const uint8_t *p, size_t n,
		    int64_t us, uint64_t ack)
{
	struct hx_conn_id id;

	id_of(tc, &id);
	hx_data(state, &id, hx_dir_of(d), p, n, us, ack == TF_ACK_UNKNOWN ? HX_ACK_UNKNOWN : ack);
}

static void gl_gap(void *state, const struct tf_conn *tc, enum tf_dir d, uint64_t n, int64_t us)
{
	struct hx_conn_id id;

	id_of(tc, &id);
	hx_gap(state, &id, hx_dir_of(d), n, us);
}

static void gl_close(void *state, const struct tf_conn *tc, enum tf_end_how how, int64_t us)
{
	struct hx_conn_id id;
	enum hx_end_how h = how == TF_FIN       ? HX_FIN
			    : how == TF_RST     ? HX_RST
			    : how == TF_IDLE    ? HX_IDLE
			    : how == TF_EVICTED ? HX_EVICTED
			    : how == TF_REUSED  ? HX_REUSED
			    : how == TF_MEMORY  ? HX_MEMORY
						: HX_EOF;

	id_of(tc, &id);
	hx_close(state, &id, h, us);
}

/* ---- what the reader says, stored ---- */

static void *on_conn_open(void *ctx, const struct hx_conn_id *c, int64_t us)
{
	struct mt_import *im = ctx;
	const struct tf_conn *tc = c->owner;
	struct iconn *k = mt_calloc(1, sizeof(*k));

	mt_mem_size(&im->mem, 0, sizeof(*k));
	at(im, us);
	k->num = hl_conn_new(im->log);
	tf_end_str(&tc->client, k->addr, sizeof(k->addr), 0);
	tf_end_str(&tc->server, k->upstream, sizeof(k->upstream), 1);
	return k;
}

static void on_swap(void *ctx, const struct hx_conn_id *c)
{
	struct mt_import *im = ctx;

	tf_swap(im->tf, c->owner);
}

static void held_release(struct mt_import *im, struct iconn *k)
{
	for (size_t i = 0; i < k->nheld; i++) {
		mt_mem_size(&im->mem, strlen(k->held[i].why) + 1, 0);
		free((char *)k->held[i].why);
	}
	k->nheld = 0;
}

static void *on_request(void *ctx, void *conn, const struct hx_request *r, int64_t us)
{
	struct mt_import *im = ctx;
	struct iconn *k = conn;
	struct iexch *e = mt_calloc(1, sizeof(*e));
	struct hl_request q;

	mt_mem_size(&im->mem, 0, sizeof(*e));
	at(im, us);
	memset(&q, 0, sizeof(q));
	q.conn = k->num;
	q.client_addr = k->addr;
	q.upstream = k->upstream;
	q.method = r->method;
	q.target = r->target;
	q.h = r->h;
	q.nh = r->nh;
	q.body = r->body;
	q.body_len = r->body_len;
	q.body_lost = r->body_lost;
	q.body_cut = r->body_cut;
	q.gaps = k->held;
	q.ngaps = k->nheld;
	e->x = hl_request(im->log, &q);
	e->conn = k;
	k->last_sess = hl_info(e->x)->sess;
	held_release(im, k);
	return e;
}

static void on_response_head(void *ctx, void *x, int status, const struct mt_hdr *h, size_t nh, int64_t us)
{
	struct mt_import *im = ctx;
	struct iexch *e = x;

	at(im, us);
	hl_response_head(im->log, e->x, status, h, nh);
}

static void on_response_body(void *ctx, void *x, const char *p, size_t n, int64_t us)
{
	struct mt_import *im = ctx;
	struct iexch *e = x;

	at(im, us);
	hl_response_body(im->log, e->x, p, n);
}

static void on_response_gap(void *ctx, void *x, uint64_t n, int64_t us)
{
	struct mt_import *im = ctx;
	struct iexch *e = x;

	at(im, us);
	hl_response_gap(im->log, e->x, n);
}

static void on_response_resync(void *ctx, void *x, int64_t us)
{
	struct mt_import *im = ctx;
	struct iexch *e = x;

	at(im, us);
	hl_response_resync(im->log, e->x);
}

static void on_end(void *ctx, void *x, const char *outcome, const char *error, int64_t us)
{
	struct mt_import *im = ctx;
	struct iexch *e = x;

	at(im, us);
	hl_end(im->log, e->x, outcome, error);
	free(e);
	mt_mem_size(&im->mem, sizeof(*e), 0);
}

static void on_conn_gap(void *ctx, void *conn, enum hx_dir d, uint64_t n, const char *why, int64_t us)
{
	struct mt_import *im = ctx;
	struct iconn *k = conn;

	if (!k)
		return;
	at(im, us);
	if (k->last_sess) {
		hl_session_gap(im->log, k->last_sess, d == HX_C2S ? WS_C2S : WS_S2C, n, why);
	} else if (k->nheld < HELD_GAPS_MAX) {
		/* No session has the connection yet: its first exchange's will. */
		struct hl_gap *g = &k->held[k->nheld++];
		g->s = d == HX_C2S ? WS_C2S : WS_S2C;
		g->bytes = n;
		g->why = mt_strdup(why);
		mt_mem_size(&im->mem, 0, strlen(why) + 1);
	} else {
		k->held[HELD_GAPS_MAX - 1].bytes += n;
	}
}

static void on_conn_close(void *ctx, void *conn, int64_t us)
{
	struct mt_import *im = ctx;
	struct iconn *k = conn;

	if (!k)
		return;
	at(im, us);
	/* Gaps of a connection that never had an exchange: a session of their own. */
	hl_gap_session(im->log, k->num, k->addr, k->upstream, k->held, k->nheld);
	held_release(im, k);
	hl_conn_closed(im->log, k->num);
	free(k);
	mt_mem_size(&im->mem, sizeof(*k), 0);
}

/* The budget asks for memory kept apart from connections: sessions' SSE event ids. */
static size_t on_reclaim(void *ctx, size_t need)
{
	struct mt_import *im = ctx;

	return hl_reclaim(im->log, need);
}

struct mt_import *mt_import_new(const struct mt_import_opts *o, struct mt_err *err)
{
	struct mt_import *im = mt_calloc(1, sizeof(*im));
	struct hl_opts lo;
	struct hx_sink sink = {
		.ctx = im,
		.conn_open = on_conn_open,
		.swap = on_swap,
		.request = on_request,
		.response_head = on_response_head,
		.response_body = on_response_body,
		.response_gap = on_response_gap,
		.response_resync = on_response_resync,
		.end = on_end,
		.conn_gap = on_conn_gap,
		.conn_close = on_conn_close,
	};
	struct tf_handler th;
	struct hx_opts ho = o->hx;

	im->w = writer_open_shared(o->db_path, &o->wopts, err);
	if (!im->w) {
		free(im);
		return NULL;
	}
	im->mem.reclaim = on_reclaim;
	im->mem.reclaim_ctx = im;
	memset(&lo, 0, sizeof(lo));
	lo.w = im->w;
	lo.max_message = o->wopts.max_message;
	lo.end_at_last = 1;
	lo.redact = o->wopts.redact; /* (redacted here: the writer's thread does the rest) */
	lo.mem = &im->mem;
	lo.on_end = o->on_end;
	lo.on_end_ctx = o->on_end_ctx;
	im->log = hl_new(&lo);
	ho.mem = &im->mem;
	im->hx = hx_new(&ho, &sink);
	memset(&th, 0, sizeof(th));
	th.ctx = im;
	th.open = gl_open;
	th.data = gl_data;
	th.gap = gl_gap;
	th.close = gl_close;
	th.mem = &im->mem; /* (the reassembler counts there too) */
	im->tf = tf_new(&o->limits, &th);
	return im;
}

struct tf *mt_import_tf(struct mt_import *im)
{
	return im->tf;
}

void mt_import_stats(struct mt_import *im, struct mt_import_stats *out)
{
	memset(out, 0, sizeof(*out));
	tf_stats(im->tf, &out->tf);
	hx_stats(im->hx, &out->hx);
	hl_stats(im->log, &out->hl);
	out->mem_used = im->mem.used;
	out->mem_peak = im->mem.peak;
}

int mt_import_finish(struct mt_import *im, int64_t end_us, struct mt_import_stats *out)
{
	struct writer_stats ws;
	int rc;

	tf_finish(im->tf, end_us);
	if (out)
		mt_import_stats(im, out);
	tf_free(im->tf);
	hx_free(im->hx);
	hl_free(im->log); /* (the sessions' ends, at their last records) */
	rc = writer_finish(im->w, NULL, &ws);
	if (out) {
		out->w = ws;
		out->mem_left = im->mem.used;
	}
	free(im);
	return rc;
}
