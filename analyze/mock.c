/*
 * mock.c - the mock server (see mock.h).
 */
#include "analyze/mock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "schema/cli.h"
#include "tap/lineio.h"

struct mock {
	struct rp_script *s;
	struct lio io;
	double scale;          /* 0: no waiting */
	char *emitted;         /* per recorded message: already sent */
	struct mt_map fresh;   /* our request id -> recorded server request index */
	json_int_t next_id;    /* our next fresh request id */
	struct mt_map tokens;  /* recorded progress token (JSON text) -> client request index */
	struct mt_buf out, key;
	size_t answered, reused, misses, garbage;
};

static void mock_send(struct mock *k, size_t i, const struct mt_buf *id, const struct mt_buf *token)
{
	mt_buf_reset(&k->out);
	rp_render(k->s, i, id && id->len ? id->data : NULL, id ? id->len : 0,
		  token && token->len ? token->data : NULL, token ? token->len : 0, &k->out);
	lio_put(&k->io, k->out.data, k->out.len);
	k->emitted[i] = 1;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts;

	if (ns <= 0)
		return;
	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The live progress token for a recorded notification's token, or NULL. */
static const struct mt_buf *live_token(struct mock *k, size_t i)
{
	const struct rp_msg *m = &k->s->m[i];
	int64_t req;

	if (!m->cls.progress_token.n)
		return NULL;
	if (!mt_map_get(&k->tokens, m->cls.progress_token.p, m->cls.progress_token.n, &req))
		return NULL;
	return &k->s->m[req].live_token_text;
}

/* Send server message j, as the live conversation needs it. */
static void play_one(struct mock *k, size_t j)
{
	struct rp_msg *m = &k->s->m[j];

	if (k->emitted[j])
		return;
	switch (m->cls.kind) {
	case MT_REQUEST: {
		struct mt_buf id = MT_BUF_INIT;
		++k->next_id;
		mt_buf_printf(&id, "%lld", (long long)k->next_id);
		mt_map_put(&k->fresh, &k->next_id, sizeof(k->next_id), (int64_t)j);
		mock_send(k, j, &id, NULL);
		mt_buf_release(&id);
		break;
	}
	case MT_RESPONSE:
	case MT_ERROR:
		/* An answer goes out under the live id of the request it answers. */
		if (m->request >= 0 && k->s->m[m->request].live_id_text.len)
			mock_send(k, j, &k->s->m[m->request].live_id_text, NULL);
		break;
	case MT_NOTIFICATION:
		mock_send(k, j, NULL, live_token(k, j));
		break;
	default:
		/* What the server wrote that was not JSON-RPC is part of the recording too. */
		mock_send(k, j, NULL, NULL);
		break;
	}
}

/* Play the block of anchor a (-1: the messages before any client message). */
static void play_block(struct mock *k, int64_t a)
{
	struct rp_script *s = k->s;
	int64_t prev_t = a >= 0 ? s->m[a].t_ns : 0;

	for (size_t j = (size_t)(a + 1); j < s->n && !s->m[j].c2s; j++) {
		if (k->scale > 0) {
			(void)lio_flush(&k->io);
			sleep_ns((int64_t)((double)(s->m[j].t_ns - prev_t) * k->scale));
		}
		prev_t = s->m[j].t_ns;
		play_one(k, j);
	}
}

static void mock_error(struct mock *k, struct mt_span id_tok, int code, const char *message,
		       json_t *data)
{
	json_t *id = id_tok.n ? json_loadb(id_tok.p, id_tok.n, JSON_DECODE_ANY, NULL) : NULL;
	json_t *e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			      "error", "code", code, "message", message);
	char *text;

	json_decref(id);

	if (data)
		json_object_set(json_object_get(e, "error"), "data", data);
	text = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	lio_put(&k->io, text, strlen(text));
	lio_put(&k->io, "\n", 1);
	free(text);
	json_decref(e);
}

/* Params that are absent or an empty object need no parse: the key is the method's. */
static int empty_params(struct mt_span p)
{
	size_t i = 0;

	if (!p.n)
		return 1;
	if (p.p[0] != '{')
		return 0;
	for (i = 1; i < p.n && (p.p[i] == ' ' || p.p[i] == '\t' || p.p[i] == '\r' || p.p[i] == '\n');
	     i++)
		;
	return i < p.n && p.p[i] == '}';
}

static void mock_request(struct mock *k, const struct mt_class *c)
{
	struct rp_script *s = k->s;
	json_t *params = NULL;
	int reused = 0;
	int64_t i;

	/* The method, then the params (parsed only when there are some). */
	if (mt_json_string(c->method, &k->key) || memchr(k->key.data ? k->key.data : "", '\0', k->key.len)) {
		mock_error(k, c->id, -32600, "Invalid Request", NULL);
		return;
	}
	const char *method = k->key.data ? k->key.data : "";
	if (!empty_params(c->params))
		params = rp_parse(c->params.p, c->params.n);
	i = rp_match_request(s, method, params, &reused);
	if (i < 0) {
		json_t *diffs = json_array(), *data;
		int64_t close = rp_closest(s, method, params, diffs);
		k->misses++;
		data = json_pack("{s:s,s:s}", "mcptap", "replay: no recorded request matches", "method",
				 method);
		if (close >= 0) {
			json_object_set_new(data, "closest",
					    json_pack("{s:I,s:O?}", "seq", (json_int_t)s->m[close].seq, "params",
						      json_object_get(s->m[close].json, "params")));
			json_object_set(data, "differs", diffs);
		}
		mock_error(k, c->id, close >= 0 ? MOCK_MISS_CODE : -32601,
			   close >= 0 ? "mcptap replay: no recorded answer for these params"
				      : "mcptap replay: this method was never recorded",
			   data);
		json_decref(data);
		json_decref(diffs);
		json_decref(params);
		return;
	}
	json_decref(params);
	struct rp_msg *r = &s->m[i];
	mt_buf_reset(&r->live_id_text);
	mt_buf_append(&r->live_id_text, c->id.p, c->id.n);
	mt_buf_reset(&r->live_token_text);
	if (c->progress_token.n)
		mt_buf_append(&r->live_token_text, c->progress_token.p, c->progress_token.n);
	if (reused) {
		k->reused++;
		/* A reused recording: its answer again, nothing else it set off. */
		if (r->answer >= 0)
			mock_send(k, (size_t)r->answer, &r->live_id_text, NULL);
		return;
	}
	k->answered++;
	if (r->answer >= 0)
		k->emitted[r->answer] = 0; /* may have gone out for an earlier reuse */
	play_block(k, i);
	if (r->answer < 0) {
		/* The recording ends before the server answered (it crashed or was cut). */
		mock_error(k, c->id, MOCK_MISS_CODE,
			   "mcptap replay: the recorded server never answered this request", NULL);
		return;
	}
	/* The answer came later in the recording. Unless the server was waiting on
	 * the client for it (an answer to its own request came between), send it now
	 * so that a client that waits for each answer is not left waiting. */
	if (!k->emitted[r->answer]) {
		int waited = 0;
		for (size_t j = (size_t)i + 1; j < (size_t)r->answer; j++)
			if (s->m[j].c2s && (s->m[j].cls.kind == MT_RESPONSE || s->m[j].cls.kind == MT_ERROR))
				waited = 1;
		if (!waited)
			play_one(k, (size_t)r->answer);
	}
}

static void mock_answer(struct mock *k, json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	int64_t sreq;

	if (!json_is_integer(id))
		return;
	json_int_t v = json_integer_value(id);
	if (!mt_map_take(&k->fresh, &v, sizeof(v), &sreq))
		return;
	/* The recorded client's answer to that request anchors what followed it. */
	int64_t a = k->s->m[sreq].answer;
	if (a >= 0)
		play_block(k, a);
}

static void mock_line(struct mock *k, const char *line, size_t n)
{
	struct mt_class c;
	json_t *msg;

	mt_classify(line, n, &c);
	if (c.kind == MT_INVALID || c.kind == MT_NOTJSONRPC || c.kind == MT_BATCH) {
		if (!k->garbage++)
			mt_warn("replay: the client sent %s: '%.*s'",
				c.kind == MT_INVALID ? "a line that is not JSON"
				: c.kind == MT_BATCH ? "a batch (not replayed)"
						     : "JSON that is not JSON-RPC",
				(int)(n < 60 ? n : 60), line);
		mock_error(k, (struct mt_span){NULL, 0}, c.kind == MT_INVALID ? -32700 : -32600,
			   c.kind == MT_INVALID ? "Parse error" : "Invalid Request", NULL);
		return;
	}
	if (c.kind == MT_REQUEST) {
		mock_request(k, &c);
		return;
	}
	msg = rp_parse(line, n);
	if (!msg) {
		/* Past the JSON parser's limits: an answer or a notification gets no reply. */
		if (!k->garbage++)
			mt_warn("replay: cannot parse a %s from the client (nested too deep); skipped",
				mt_kind_name(c.kind));
		return;
	}
	switch (c.kind) {
	case MT_RESPONSE:
	case MT_ERROR:
		mock_answer(k, msg);
		break;
	case MT_NOTIFICATION: {
		int64_t i = rp_match_notification(k->s, json_string_value(json_object_get(msg, "method")),
						  json_object_get(msg, "params"));
		if (i >= 0)
			play_block(k, i);
		break;
	}
	default:
		break;
	}
	json_decref(msg);
}

int mock_serve(struct rp_script *s, const struct mock_opts *o)
{
	double scale = o->scale;
	int strict = o->strict;
	struct mock k;
	const char *line;
	size_t n, unused = 0;
	int r, rc = EXIT_OK;

	memset(&k, 0, sizeof(k));
	k.s = s;
	k.scale = scale;
	k.emitted = mt_calloc(s->n ? s->n : 1, 1);
	mt_map_init(&k.fresh, 0);
	mt_map_init(&k.tokens, 0);
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].c2s && s->m[i].cls.kind == MT_REQUEST && s->m[i].cls.progress_token.n)
			mt_map_put(&k.tokens, s->m[i].cls.progress_token.p, s->m[i].cls.progress_token.n,
				   (int64_t)i);
	lio_init(&k.io, STDIN_FILENO, STDOUT_FILENO, 0);
	play_block(&k, -1);
	while ((r = lio_next(&k.io, -1, &line, &n)) == LIO_LINE) {
		mock_line(&k, line, n);
		if (k.io.write_failed) {
			mt_warn("replay: the client stopped reading its answers");
			break;
		}
	}
	(void)lio_flush(&k.io);
	if (r == LIO_ERROR)
		mt_warn("replay: cannot read the client: %s", strerror(errno));
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].c2s && s->m[i].cls.kind == MT_REQUEST && !s->m[i].used)
			unused++;
	if (strict || k.misses) {
		mt_error("replay: %zu requests answered from the recording (%zu again), %zu without "
			 "a recording, %zu recorded requests never asked for",
			 k.answered, k.reused, k.misses, unused);
		if (strict && (k.misses || unused))
			rc = EXIT_FINDINGS;
	}
	lio_release(&k.io);
	mt_map_release(&k.fresh);
	mt_map_release(&k.tokens);
	mt_buf_release(&k.out);
	mt_buf_release(&k.key);
	free(k.emitted);
	return rc;
}

