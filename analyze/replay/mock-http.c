/*
 * mock-http.c - the mock server over HTTP (see mock.h, mock_http_serve): the
 * replay engine (mock.c) behind the HTTP endpoint of tap/http/httpserve.h.
 *
 * Each MCP session the endpoint opens is a run of its own through the
 * recording, with a script of its own. The engine's messages are routed the
 * way the recording sent them: an answer ends the POST of the request it
 * answers (as JSON, or as the last event of an SSE stream when the recording
 * answered that request on one); a server message recorded on a POST's
 * stream goes on the stream of the live request standing for that POST's,
 * one recorded on a GET stream on the session's GET stream. A stdio
 * recording has no such say: server messages go on the stream of the POST
 * whose message set them off while it is open (its answer then comes as the
 * stream's last event), else on the GET stream.
 */
#include "analyze/replay/mock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/map.h"
#include "schema/util.h"
#include "tap/http/httpserve.h"
#include "tap/http/httpsess.h"

/* A recorded session a live one may be a run of (-s with more than one session). */
struct pick {
	int64_t id;
	char *client; /* its client's "name version", or NULL */
	int used;     /* runs of it so far */
};

struct mhttp {
	struct store *st;   /* borrowed: the capture */
	int64_t session;    /* the recording's session (with picks: the first's) */
	struct pick *picks; /* owned: -s with more than one session: those to choose from, or NULL */
	size_t npicks;
	const struct canon_ignore *ig;
	const struct mock_opts *o;
	struct rp_script others; /* its replies alone: the recorded exchanges without
				  * JSON-RPC (OAuth metadata, ...), of every session served */
	json_t *summaries;       /* the ended runs' summaries */
	int rc;                  /* the worst exit status of the runs */
	size_t runs;
};

/*
 * Where a run's mock sends: to the run's client, or (muted) nowhere, while a
 * recorded session is tried on what the client has sent so far.
 */
struct rsink {
	struct mrun *r;
	int muted;
	size_t made; /* while muted: answers the mock made itself (a miss) */
};

/*
 * Past this many messages from a client, the recorded session its run follows
 * stays the one it is (a switch replays them all to the other recording).
 */
#define SWITCH_LINES 256

/* One MCP session: a run of its own through the recording. */
struct mrun {
	struct mhttp *m;
	struct hsv_sess *s;
	struct rp_script *script; /* owned */
	struct mock *k;
	struct rsink *sink; /* owned: k's */
	struct pick *pick;  /* with picks: the recorded session it follows */
	struct mt_buf said; /* what the client sent so far, each as its length and bytes */
	size_t nsaid;
	int64_t cur;         /* the POST whose message is being fed, while it waits */
	int64_t ctx;         /* where a stdio recording's server messages go now */
	struct mt_map live;  /* a live request's id (JSON text) -> its POST */
	struct mt_map fresh; /* a server request's id (JSON text) -> the POST it went on */
	json_t *resumed;     /* the client's resumptions: [{recorded, events}] */
	int64_t *tags;       /* owned: the last resumption's */
};

static int is_answer(int kind)
{
	return kind == MT_RESPONSE || kind == MT_ERROR;
}

static void run_send(void *ctx, const char *p, size_t n, const struct mock_out *o)
{
	struct mrun *r = ctx;
	int64_t h = 0;

	if (is_answer(o->kind)) {
		/* The POST of the request it answers; else (an error the mock made
		 * for what the client sent) the POST being fed. */
		if (!(o->answers && mt_map_take(&r->live, o->answers, o->answers_n, &h)))
			h = r->cur;
		if (h) {
			const struct rp_http_reply *x = rp_refusal(r->script, o->refused);
			if (h == r->cur)
				r->cur = 0;
			if (h == r->ctx)
				r->ctx = 0;
			if (x)
				hsv_refuse(r->s, h, x->status, x->headers_json, x->body, x->body_len, p, n);
			else
				hsv_answer(r->s, h, p, n, o->via == RP_VIA_POST, o->rec);
			return;
		}
		hsv_send(r->s, 0, p, n, o->rec); /* (an answer to no live POST: on the GET stream) */
		return;
	}
	switch (o->via) {
	case RP_VIA_POST:
		if (!o->on || !mt_map_get(&r->live, o->on, o->on_n, &h))
			h = 0;
		break;
	case RP_VIA_GET: h = 0; break;
	default: /* a stdio recording: with what set it off */ h = r->ctx; break;
	}
	hsv_send(r->s, h, p, n, o->rec);
	if (o->kind == MT_REQUEST) {
		/* The client's answer to it will set off what followed it: on the same stream. */
		struct mt_class c;
		if (mt_classify(p, n, &c) == MT_REQUEST && c.id.n)
			(void)mt_map_put(&r->fresh, c.id.p, c.id.n, h);
	}
}

static int run_barrier(void *ctx)
{
	struct mrun *r = ctx;

	hsv_barrier(r->s);
	return 0;
}

static void run_delay(void *ctx, int64_t ns)
{
	struct mrun *r = ctx;

	hsv_delay(r->s, ns);
}

static void rs_send(void *ctx, const char *p, size_t n, const struct mock_out *o)
{
	struct rsink *rs = ctx;

	if (!rs->muted)
		run_send(rs->r, p, n, o);
	else if (is_answer(o->kind) && o->rec < 0)
		rs->made++;
}

static int rs_barrier(void *ctx)
{
	struct rsink *rs = ctx;

	return rs->muted ? 0 : run_barrier(rs->r);
}

static void rs_delay(void *ctx, int64_t ns)
{
	struct rsink *rs = ctx;

	if (!rs->muted)
		run_delay(rs->r, ns);
}

/* Session loaded into a new script and a mock on it, sending through a new sink. */
static int load_run(struct mrun *r, int64_t session, int muted, struct rp_script **script, struct mock **k,
		    struct rsink **rs)
{
	struct mhttp *m = r->m;
	struct mt_err err = {"", 0};
	struct mock_sink sink;

	*script = mt_calloc(1, sizeof(**script));
	if (rp_load(m->st, session, m->ig, *script, &err)) {
		mt_voice_error(&m->o->voice, "replay: cannot read session %lld for a new client: %s",
			       (long long)session, err.msg);
		free(*script);
		*script = NULL;
		return -1;
	}
	*rs = mt_calloc(1, sizeof(**rs));
	(*rs)->r = r;
	(*rs)->muted = muted;
	sink = (struct mock_sink){*rs, rs_send, rs_barrier, rs_delay};
	*k = mock_new(*script, m->o, &sink, NULL);
	mock_begin(*k);
	return 0;
}

static void drop_run(struct rp_script *script, struct mock *k, struct rsink *rs)
{
	mock_free(k);
	rp_release(script);
	free(script);
	free(rs);
}

/* The run's recording is loaded and its engine started: 0, or -1 (said). */
static int run_start(struct mrun *r, int64_t session)
{
	return load_run(r, session, 0, &r->script, &r->k, &r->sink);
}

/*
 * A request the recording the run follows has no answer for: another of the
 * same client's recorded sessions whose conversation so far is the live one's
 * (each message the client sent, fed to it, got a recorded answer) and that
 * has an answer for it takes over the run, the first in the capture's order.
 */
static void maybe_switch(struct mrun *r, const char *p, size_t n)
{
	struct mhttp *m = r->m;
	json_t *j, *params;
	const char *method;

	if (!r->pick || m->npicks < 2 || r->nsaid > SWITCH_LINES)
		return;
	j = json_loadb(p, n, JSON_DECODE_ANY, NULL);
	method = json_string_value(json_object_get(j, "method"));
	params = json_object_get(j, "params");
	if (!method || !json_object_get(j, "id") || rp_has_request(r->script, method, params)) {
		json_decref(j);
		return;
	}
	for (size_t i = 0; i < m->npicks; i++) {
		struct pick *k = &m->picks[i];
		struct rp_script *sc;
		struct mock *nk;
		struct rsink *rs;
		size_t at = 0;
		if (k == r->pick || (k->client == NULL) != (r->pick->client == NULL) ||
		    (k->client && strcmp(k->client, r->pick->client)))
			continue;
		if (load_run(r, k->id, 1, &sc, &nk, &rs))
			continue;
		if (!rp_has_request(sc, method, params)) {
			drop_run(sc, nk, rs);
			continue;
		}
		for (size_t l = 0; l < r->nsaid && !rs->made; l++) {
			size_t len;
			memcpy(&len, r->said.data + at, sizeof(len));
			mock_feed(nk, r->said.data + at + sizeof(len), len);
			at += sizeof(len) + len;
		}
		if (rs->made) {
			drop_run(sc, nk, rs);
			continue;
		}
		/* (The run so far was the other recording's: it is not stored.) */
		drop_run(r->script, r->k, r->sink);
		r->script = sc;
		r->k = nk;
		r->sink = rs;
		rs->muted = 0;
		r->pick->used--;
		k->used++;
		r->pick = k;
		break;
	}
	json_decref(j);
}

/*
 * -s with more than one session: the recorded session a live one is a run of, once its first message
 * (p, n bytes) came: the first recorded session of the same client (its
 * initialize's clientInfo name and version, or a 2026-07-28 request's _meta
 * clientInfo) that no live session has been a
 * run of yet, else the one of them used least, else, for a client never
 * recorded, the first recorded session used least.
 */
static struct pick *pick_session(struct mhttp *m, const char *p, size_t n)
{
	char *who = hs_client(p, n);
	struct pick *best = NULL, *any = NULL;

	for (size_t i = 0; i < m->npicks; i++) {
		struct pick *k = &m->picks[i];
		if (who && k->client && !strcmp(who, k->client) && (!best || k->used < best->used))
			best = k;
		if (!any || k->used < any->used)
			any = k;
	}
	if (!best)
		best = any;
	free(who);
	if (best)
		best->used++;
	return best; /* (no picks: mock_http_serve refuses that before) */
}

static void *on_open(void *ctx, struct hsv_sess *s)
{
	struct mhttp *m = ctx;
	struct mrun *r = mt_calloc(1, sizeof(*r));

	r->m = m;
	r->s = s;
	mt_map_init(&r->live, 0);
	mt_map_init(&r->fresh, 0);
	/* With more than one session, the recording is chosen by the session's first message. */
	if (!m->picks && run_start(r, m->session)) {
		mt_map_release(&r->live);
		mt_map_release(&r->fresh);
		free(r);
		return NULL;
	}
	return r;
}

static void on_message(void *state, struct hsv_sess *s, int64_t req, const char *p, size_t n)
{
	struct mrun *r = state;
	struct mt_class c;
	int64_t h;

	(void)s;
	if (!r->k) {
		r->pick = pick_session(r->m, p, n);
		if (run_start(r, r->pick ? r->pick->id : r->m->session))
			return; /* (the capture changed under the mock: said; no answer) */
	}
	mt_classify(p, n, &c);
	r->cur = req;
	r->ctx = req;
	if (req && c.kind == MT_REQUEST && c.id.n)
		(void)mt_map_put(&r->live, c.id.p, c.id.n, req);
	if ((c.kind == MT_RESPONSE || c.kind == MT_ERROR) && c.id.n &&
	    mt_map_take(&r->fresh, c.id.p, c.id.n, &h))
		r->ctx = h; /* what the answer sets off goes where the request went */
	if (c.kind == MT_REQUEST)
		maybe_switch(r, p, n);
	if (r->pick && r->m->npicks > 1 && r->nsaid <= SWITCH_LINES) {
		mt_buf_append(&r->said, (const char *)&n, sizeof(n));
		mt_buf_append(&r->said, p, n);
		r->nsaid++;
	}
	mock_feed(r->k, p, n);
	r->cur = 0;
	r->ctx = 0;
}

static void on_close(void *state, struct hsv_sess *s, const char *why)
{
	struct mrun *r = state;
	struct mhttp *m = r->m;
	json_t *sum = NULL;
	int rc;

	if (!r->k) {
		/* (a session that ended before it said anything: no run) */
		mt_map_release(&r->live);
		mt_map_release(&r->fresh);
		free(r);
		return;
	}
	rc = mock_end(r->k, why, &sum);
	if (sum) {
		json_object_set_new(sum, "http_session", json_string(hsv_session_id(s)));
		json_object_set_new(sum, "resumed", r->resumed ? r->resumed : json_array());
		r->resumed = NULL;
		mock_save(r->k, sum);
		json_array_append_new(m->summaries, sum);
	}
	if (rc > m->rc)
		m->rc = rc;
	m->runs++;
	drop_run(r->script, r->k, r->sink);
	mt_buf_release(&r->said);
	mt_map_release(&r->live);
	mt_map_release(&r->fresh);
	json_decref(r->resumed);
	free(r->tags);
	free(r);
}

/*
 * The client resumes a stream: the k-th resumption of the live session is
 * answered as the recorded session's k-th was, with the events the recorded
 * server sent again on it (the mock's own events that stood for them); past
 * the recorded ones, as the spec says (see hsv_app.resume).
 */
static int on_resume(void *state, struct hsv_sess *s, const char *last_event_id, const int64_t **tags,
		     size_t *n)
{
	struct mrun *r = state;
	const struct rp_resume *x;
	size_t k;
	int64_t *t;

	(void)s;
	(void)last_event_id;
	if (!r->k)
		return 0;
	if (!r->resumed)
		r->resumed = json_array();
	k = json_array_size(r->resumed);
	if (k >= r->script->nresumes) {
		json_array_append_new(r->resumed,
				      json_pack("{s:n,s:I}", "recorded", "events", (json_int_t)0));
		return 0;
	}
	x = &r->script->resumes[k];
	json_array_append_new(r->resumed, json_pack("{s:I,s:I}", "recorded", (json_int_t)x->exchange,
						    "events", (json_int_t)x->n));
	/* (the script's indexes are the tags run_send gave) */
	t = mt_malloc((x->n ? x->n : 1) * sizeof(*t));
	for (size_t i = 0; i < x->n; i++)
		t[i] = x->orig[i];
	free(r->tags);
	r->tags = t;
	*tags = t;
	*n = x->n;
	return 1;
}

/* A request to another path: what the recording answered there (see hsv_app.other). */
static int on_other(void *ctx, const char *method, const char *target, int *status, const char **headers_json,
		    const char **body, size_t *body_len)
{
	struct mhttp *m = ctx;
	const struct rp_http_reply *x = rp_other_reply(&m->others, method, target);

	if (!x)
		return 0;
	*status = x->status;
	*headers_json = x->headers_json;
	*body = x->body ? x->body : "";
	*body_len = x->body_len;
	return 1;
}

int mock_http_serve(struct store *st, struct rp_script *s, const struct canon_ignore *ig,
		    const struct mock_opts *o, const struct mock_http_opts *ho, struct mt_err *fail)
{
	struct mhttp m = {
		.st = st, .session = s->session, .ig = ig, .o = o, .summaries = json_array(), .rc = EXIT_OK};
	struct hsv_app app = {&m, on_open, on_message, on_close, on_other, on_resume};
	struct mt_err err = {"", 0};
	struct hsv_opts hv;
	char legacy_post[256] = "/message";
	int rc;

	hsv_opts_default(&hv);
	hv.listen = ho->listen;
	hv.voice = o->voice;
	hv.allow_hosts = ho->allow_hosts;
	hv.n_allow_hosts = ho->n_allow_hosts;
	if (ho->client_timeout_ms > 0)
		hv.client_timeout_ms = ho->client_timeout_ms;
	hv.mode = ho->legacy ? HSV_LEGACY : ho->stateless ? HSV_STATELESS : HSV_STREAMABLE;
	hv.session_ids = ho->session_ids;
	hv.also_stateless = ho->also_stateless;
	hv.path = ho->path;
	if (ho->post_path)
		snprintf(legacy_post, sizeof(legacy_post), "%s", ho->post_path);
	hv.post_path = legacy_post;
	/* Whatever the recording's transport, a client may try either: both, at the
	 * recorded path and the usual ones (a 2026-07-28 recording has no sessions). */
	if (hv.mode != HSV_STATELESS) {
		hv.also_streamable = strcmp(hv.path, "/mcp") ? "/mcp" : NULL;
		hv.also_legacy = strcmp(hv.path, "/sse") && strcmp(legacy_post, "/sse") ? "/sse" : NULL;
	}
	hv.name = "replay: the mock server listens";
	if (ho->sessions) {
		struct store_session_row *rows = NULL;
		size_t nrows = 0;
		if (store_sessions(st, &rows, &nrows, &err)) {
			mt_err_set(fail, "replay: cannot list the sessions: %s", err.msg);
			json_decref(m.summaries);
			return EXIT_ERROR;
		}
		m.picks = mt_calloc(nrows ? nrows : 1, sizeof(*m.picks));
		for (size_t i = 0; i < nrows; i++) {
			size_t k = 0;
			while (k < ho->nsessions && ho->sessions[k] != rows[i].id)
				k++;
			if (k == ho->nsessions)
				continue; /* (not asked for) */
			if (rp_add_other_replies(st, rows[i].id, &m.others, &err))
				mt_voice_warn(
					&o->voice,
					"replay: cannot read session %lld's exchanges without JSON-RPC: %s",
					(long long)rows[i].id, err.msg);
			if (!rows[i].msgs_c2s && !rows[i].msgs_s2c)
				continue; /* (nothing to replay) */
			m.picks[m.npicks].id = rows[i].id;
			if (rows[i].client_name)
				m.picks[m.npicks].client =
					mt_asprintf("%s %s", rows[i].client_name,
						    rows[i].client_version ? rows[i].client_version : "");
			m.npicks++;
		}
		store_sessions_free(rows, nrows);
		if (!m.npicks) {
			mt_err_set(fail, "replay: the capture holds no session to replay");
			free(m.picks);
			json_decref(m.summaries);
			return EXIT_ERROR;
		}
	}
	if (!ho->sessions && rp_add_other_replies(st, s->session, &m.others, &err))
		mt_voice_warn(&o->voice, "replay: cannot read the recorded exchanges without JSON-RPC: %s",
			      err.msg);
	if ((rc = hsv_run(&hv, &app, &err) ? EXIT_ERROR : EXIT_OK))
		mt_err_set(fail, "%s", err.msg);
	rp_release(&m.others);
	for (size_t i = 0; i < m.npicks; i++)
		free(m.picks[i].client);
	free(m.picks);
	if (rc) {
		json_decref(m.summaries);
		return rc;
	}
	rc = m.rc;
	if (o->report) {
		size_t i;
		json_t *e;
		int ok = 1;
		json_array_foreach(m.summaries, i, e) ok &= json_is_true(json_object_get(e, "ok"));
		json_t *rep = json_pack("{s:I,s:s,s:I,s:O,s:b}", "session", (json_int_t)s->session,
					"transport", ho->legacy ? "sse" : "http", "runs", (json_int_t)m.runs,
					"sessions", m.summaries, "ok", ok);
		mock_write_report(o->report, rep, &o->voice);
		json_decref(rep);
	}
	json_decref(m.summaries);
	return rc;
}
