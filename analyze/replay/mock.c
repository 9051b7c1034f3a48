/*
 * mock.c - the mock server (see mock.h).
 *
 * One pass over the client's lines: each request is matched to a recorded one
 * (replay.h) and its block played; the recorded server requests the live
 * client declared no capability for are left out, and the conversation goes on
 * as if the recorded client's answer to them had come. An answer that follows
 * server messages waits until the client has read them (see before_answer).
 * At the end the run's summary goes to --report FILE and into the capture.
 */
#include "analyze/replay/mock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "schema/util.h"
#include "tap/stdio/lineio.h"

#define ORDER_WAIT_MS 2000 /* the longest an answer waits for the client to read */
#define MAX_LISTED 1000    /* misses and unused recordings listed and stored, at most each */

/* What became of a recorded message (the server's, mostly). */
enum {
	ST_NEW, /* not sent (or sent and may go again: an answer that is reused) */
	ST_SENT,
	ST_SKIPPED, /* a server request the live client declared no capability for */
	ST_AWAITED, /* a server request sent; the live client has not answered it yet */
};

/* The signal that ends the run, 0 while none has come. */
static volatile sig_atomic_t mock_signal;
/* /dev/null, for on_signal to put in place of stdin and stdout; -1: none. */
static int mock_devnull = -1;

/* The live ids of a client request the live client sent (see rp_msg.live). */
struct live {
	struct mt_buf id;    /* its live id as JSON text */
	struct mt_buf token; /* its live progress token as JSON text, if any */
};

struct mock {
	struct rp_script *s;               /* borrowed */
	const struct mock_opts *o;         /* borrowed */
	struct mock_sink sink;             /* where the server's messages go */
	const volatile sig_atomic_t *stop; /* non-zero: the run ends (may be NULL) */
	char *state;                       /* owned: per recorded message, ST_* */
	struct mt_map fresh;               /* our request id -> recorded server request index */
	json_int_t next_id;                /* our last fresh request id */
	struct live *live;                 /* owned: the slots rp_msg.live points to, nlive of them */
	size_t nlive, live_cap;
	int32_t *spare; /* owned: slots free again, nspare of them (capacity live_cap) */
	size_t nspare;
	struct mt_buf out, key;
	int read_said; /* a recorded message could not be read, and it was said */
	int64_t *todo; /* owned: anchors whose blocks play_block has yet to play */
	size_t todo_cap;
	int server_since; /* server messages went out since the last answer */
	/* The live client, as its last initialize said (new references, or NULL). */
	int initialized;          /* an initialize came: caps decides what is sent */
	json_t *caps;             /* its params.capabilities ({} when it had none) */
	json_t *client_info;      /* its params.clientInfo */
	json_t *asked;            /* its params.protocolVersion */
	json_t *answered_version; /* the protocolVersion of the recorded answer it got */
	/* What the summary says. */
	size_t requests, answered, reused, missed, garbage, waits, timeouts;
	json_t *misses;      /* owned: [{method, name, id, closest, differs}], MAX_LISTED at most */
	json_t *miss_lines;  /* owned: the live request line of each miss, a string */
	json_t *skipped;     /* owned: [{seq, method, needs}] */
	int64_t wall, t0;    /* when the run began (µs since the epoch; monotonic ns) */
	size_t unused_count; /* (mock_end's, for mock_save) */
	int64_t refusing;    /* the refused recorded request mock_error answers now, or -1 */
};

/*
 * An answer (a response or an error to a client request) is about to be
 * queued. When server messages (notifications, server requests) went out
 * since the last answer, it waits, under --timing ordered and the recorded
 * ones, until the client has read them: the answer then comes in a later
 * read() than they did.
 *
 * Why reading is the barrier: the TypeScript SDK's stdio transport handles
 * every complete line of one read() in one go, synchronously. A response is
 * processed at once, which removes its request's progress handler, while a
 * notification's handler runs a microtask later; progress that came in the
 * same read() as the result is thus dropped. But node (libuv) calls back once
 * per read(), and drains the microtask queue before it runs the next read
 * callback: notifications the client read before the answer was even written
 * have been handled when the answer is. (Log messages and list_changed
 * notifications keep their order relative to answers the same way.)
 *
 * It costs a test of a flag when no server message came before the answer.
 */
static void before_answer(struct mock *k)
{
	if (!k->server_since)
		return;
	k->server_since = 0;
	if (!k->o->ordered || !k->sink.barrier)
		return;
	switch (k->sink.barrier(k->sink.ctx)) {
	case 1:
		k->timeouts++;
		/* fall through */
	case 0: k->waits++; break;
	default: break; /* (the transport cannot know what the client read) */
	}
}

static int stopped(const struct mock *k)
{
	return k->stop && *k->stop;
}

/* Hand message p (n bytes, no newline) to the transport. */
static void emit(struct mock *k, const char *p, size_t n, const struct mock_out *o)
{
	k->sink.send(k->sink.ctx, p, n, o);
}

/* The live ids of client request i: its slot, made (empty) when it has none. */
static struct live *live_of(struct mock *k, size_t i)
{
	struct rp_msg *m = &k->s->m[i];

	if (m->live < 0) {
		if (k->nspare) {
			m->live = k->spare[--k->nspare];
		} else {
			if (k->nlive == k->live_cap) {
				k->live_cap = k->live_cap ? 2 * k->live_cap : 16;
				k->live = mt_realloc(k->live, k->live_cap * sizeof(*k->live));
				k->spare = mt_realloc(k->spare, k->live_cap * sizeof(*k->spare));
			}
			memset(&k->live[k->nlive], 0, sizeof(*k->live));
			m->live = (int32_t)k->nlive++;
		}
		mt_buf_reset(&k->live[m->live].id);
		mt_buf_reset(&k->live[m->live].token);
	}
	return &k->live[m->live];
}

/* The live ids of client request i, or NULL when the live client never sent it. */
static const struct live *live_get(const struct mock *k, int64_t i)
{
	return i >= 0 && k->s->m[i].live >= 0 ? &k->live[k->s->m[i].live] : NULL;
}

/*
 * Client request i's answer went out: its live ids are needed no more (but
 * for its progress token, which a notification after it may name), and its
 * slot serves the next request.
 */
static void live_done(struct mock *k, size_t i)
{
	struct rp_msg *m = &k->s->m[i];

	if (m->live >= 0 && !m->token) {
		k->spare[k->nspare++] = m->live;
		m->live = -1;
	}
}

/* The live progress token for a recorded notification's token (c), or NULL. */
static const struct mt_buf *live_token(struct mock *k, const struct mt_class *c)
{
	const struct live *lv;
	int64_t req;

	if (!c->progress_token.n ||
	    !mt_map_get(&k->s->tokens, c->progress_token.p, c->progress_token.n, &req) ||
	    !(lv = live_get(k, req)))
		return NULL;
	return &lv->token;
}

/* Say it once when a recorded message could not be read back. */
static void read_trouble(struct mock *k)
{
	if (k->s->read_errors && !k->read_said) {
		k->read_said = 1;
		mt_voice_error(&k->o->voice, "replay: cannot read the recording: %s", k->s->read_err.msg);
	}
}

static void mock_error(struct mock *k, struct mt_span id_tok, int code, const char *message, json_t *data);

/*
 * How recorded message i travelled, for a transport that can send it the
 * same way: over HTTP, on the stream of the POST that carried recorded client
 * request on[i]; o->on names the live request that stands for it, while it is
 * live.
 */
static void stream_of(struct mock *k, size_t i, struct mock_out *o)
{
	const struct live *lv;

	o->via = k->s->via ? (enum rp_via)k->s->via[i] : RP_VIA_STDIO;
	if (o->via == RP_VIA_POST && (lv = live_get(k, k->s->on[i])) && lv->id.len) {
		o->on = lv->id.data;
		o->on_n = lv->id.len;
	}
}

/*
 * Send recorded message i: under the live id id (NULL: as recorded), and a
 * notification under the live progress token of the request it names. An
 * answer that cannot be read back goes out as an error.
 */
static void mock_send(struct mock *k, size_t i, const struct mt_buf *id)
{
	enum mt_kind kind = k->s->m[i].kind;
	const struct mt_buf *token = NULL;
	struct mt_err err = {"", 0};
	struct mt_class c;
	const char *p;
	size_t n;

	k->state[i] = ST_SENT;
	if (rp_read(k->s, i, &p, &n, &c, &err)) {
		read_trouble(k);
		if ((kind == MT_RESPONSE || kind == MT_ERROR) && id && id->len)
			mock_error(k, (struct mt_span){id->data, id->len}, MOCK_MISS_CODE,
				   "mcptap replay: the recorded answer cannot be read", NULL);
		return;
	}
	if (kind == MT_RESPONSE || kind == MT_ERROR)
		before_answer(k);
	else
		k->server_since = 1;
	if (kind == MT_NOTIFICATION)
		token = live_token(k, &c);
	mt_buf_reset(&k->out);
	rp_splice(p, n, &c, id && id->len ? id->data : NULL, id ? id->len : 0,
		  token && token->len ? token->data : NULL, token ? token->len : 0, &k->out);
	struct mock_out o = {kind, (int64_t)i, NULL, 0, NULL, 0, RP_VIA_STDIO, -1};
	if ((kind == MT_RESPONSE || kind == MT_ERROR) && id && id->len) {
		o.answers = id->data;
		o.answers_n = id->len;
	}
	stream_of(k, i, &o);
	emit(k, k->out.data, k->out.len - 1, &o); /* (rp_splice ends it with a newline) */
}

/*
 * Send server message j, as the live conversation needs it. Returns 1 when it
 * is a server request the live client declared no capability for (not sent).
 */
static int play_one(struct mock *k, size_t j)
{
	struct rp_msg *m = &k->s->m[j];
	const struct live *lv;

	if (k->state[j] != ST_NEW)
		return 0;
	switch (m->kind) {
	case MT_REQUEST: {
		json_t *msg = NULL;
		if (k->initialized && rp_json(k->s, j, &msg, NULL))
			read_trouble(k);
		const char *needs =
			k->initialized
				? rp_missing_capability(m->method, json_object_get(msg, "params"), k->caps)
				: NULL;
		json_decref(msg);
		if (needs) {
			k->state[j] = ST_SKIPPED;
			json_array_append_new(k->skipped,
					      json_pack("{s:I,s:s?,s:s}", "seq", (json_int_t)m->seq, "method",
							m->method, "needs", needs));
			return 1;
		}
		struct mt_buf id = MT_BUF_INIT;
		++k->next_id;
		mt_buf_printf(&id, "%lld", (long long)k->next_id);
		mt_map_put(&k->fresh, &k->next_id, sizeof(k->next_id), (int64_t)j);
		mock_send(k, j, &id);
		k->state[j] = ST_AWAITED;
		mt_buf_release(&id);
		break;
	}
	case MT_RESPONSE:
	case MT_ERROR:
		/* An answer goes out under the live id of the request it answers (one
		 * the server sent without an id, or with a null one, as it was). */
		if ((lv = live_get(k, m->request)) && lv->id.len) {
			mock_send(k, j, m->idless ? NULL : &lv->id);
			live_done(k, (size_t)m->request);
		}
		break;
	default:
		/* Notifications; and what the server wrote that was not JSON-RPC is part
		 * of the recording too. */
		mock_send(k, j, NULL);
		break;
	}
	return 0;
}

static void todo_push(struct mock *k, size_t *n, int64_t a)
{
	if (*n == k->todo_cap) {
		k->todo_cap = k->todo_cap ? 2 * k->todo_cap : 16;
		k->todo = mt_realloc(k->todo, k->todo_cap * sizeof(*k->todo));
	}
	k->todo[(*n)++] = a;
}

/*
 * Play the block of anchor a (-1: the messages before any client message).
 * A server request left out is taken as answered as recorded: the block of
 * that recorded answer follows this one (a queue, not recursion: a recording
 * may chain any number of them).
 */
static void play_block(struct mock *k, int64_t a)
{
	struct rp_script *s = k->s;
	size_t n = 0, at = 0;

	todo_push(k, &n, a);
	while (at < n) {
		int64_t b = k->todo[at++];
		int64_t prev_t = b >= 0 ? s->m[b].t_ns : 0;
		for (int64_t j = rp_block_first(s, b); j >= 0 && !stopped(k); j = rp_block_next(s, j)) {
			if (k->o->scale > 0 && k->sink.delay)
				k->sink.delay(k->sink.ctx,
					      (int64_t)((double)(s->m[j].t_ns - prev_t) * k->o->scale));
			prev_t = s->m[j].t_ns;
			if (play_one(k, (size_t)j) && s->m[j].answer >= 0)
				todo_push(k, &n, s->m[j].answer);
		}
	}
}

static void mock_error(struct mock *k, struct mt_span id_tok, int code, const char *message, json_t *data)
{
	json_t *id = id_tok.n ? json_loadb(id_tok.p, id_tok.n, JSON_DECODE_ANY, NULL) : NULL;
	json_t *e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
			      "code", code, "message", message);
	char *text;

	json_decref(id);

	if (data)
		json_object_set(json_object_get(e, "error"), "data", data);
	text = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	before_answer(k);
	{
		struct mock_out o = {MT_ERROR,     -1,         id_tok.n ? id_tok.p : NULL, id_tok.n, NULL, 0,
				     RP_VIA_STDIO, k->refusing};
		emit(k, text, strlen(text), &o);
	}
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
	for (i = 1; i < p.n && (p.p[i] == ' ' || p.p[i] == '\t' || p.p[i] == '\r' || p.p[i] == '\n'); i++)
		;
	return i < p.n && p.p[i] == '}';
}

/* Keep what the live client said of itself: it decides which server requests go out. */
static void note_initialize(struct mock *k, json_t *params)
{
	json_t *caps = json_object_get(params, "capabilities");

	k->initialized = 1;
	json_decref(k->caps);
	k->caps = json_is_object(caps) ? json_incref(caps) : json_object();
	json_decref(k->client_info);
	k->client_info = json_incref(json_object_get(params, "clientInfo"));
	json_decref(k->asked);
	k->asked = json_incref(json_object_get(params, "protocolVersion"));
}

/* A miss, for the summary: closest is the recorded request nearest to it (or null). */
static void note_miss(struct mock *k, const struct mt_class *c, const char *method, json_t *params,
		      const char *line, size_t n, json_t *closest, json_t *diffs)
{
	k->missed++;
	if (json_array_size(k->misses) < MAX_LISTED) {
		json_t *id = c->id.n ? rp_parse(c->id.p, c->id.n) : NULL;
		json_t *line_text = json_stringn(line, n);
		/* NULL when the method is not UTF-8 (a lone surrogate escape): counted only. */
		json_t *e = json_pack("{s:s,s:s?,s:o,s:O,s:O}", "method", method, "name", rp_subject(params),
				      "id", id ? id : json_null(), "closest", closest, "differs", diffs);
		if (e) {
			json_array_append_new(k->misses, e);
			json_array_append_new(k->miss_lines, line_text ? line_text : json_null());
		} else {
			json_decref(line_text);
		}
	}
}

/* The recorded request i as the summary names a miss's closest recording. */
static json_t *closest_of(struct rp_script *s, int64_t i)
{
	json_t *j = NULL, *c;

	(void)rp_json(s, (size_t)i, &j, NULL);
	c = json_pack("{s:I,s:O?}", "seq", (json_int_t)s->m[i].seq, "params", json_object_get(j, "params"));
	json_decref(j);
	return c;
}

/* v as compact JSON, cut to about max bytes (on a UTF-8 boundary, "..." after), into b. */
static void short_value(struct mt_buf *b, json_t *v, size_t max)
{
	char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	size_t n = t ? strlen(t) : 0;

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)t[n] & 0xC0) == 0x80)
			n--;
		mt_buf_append(b, t, n);
		mt_buf_puts(b, "...");
	} else if (t) {
		mt_buf_puts(b, t);
	}
	free(t);
}

/*
 * What a miss says in the error's message (clients and inspectors print that
 * and seldom error.data): the closest recorded request, and where this one
 * differs from it with the recorded values (the first MISS_SAID paths).
 */
#define MISS_SAID 3
static void miss_message(struct mt_buf *b, const char *method, int64_t seq, json_t *diffs, json_t *was)
{
	size_t n = json_array_size(diffs);

	mt_buf_reset(b);
	if (seq < 0) {
		mt_buf_printf(b, "mcptap replay: %s was never recorded", method);
		return;
	}
	mt_buf_printf(b,
		      "mcptap replay: no recorded answer for these params; the closest "
		      "recorded %s (#%lld) differs ",
		      method, (long long)seq);
	if (!n)
		mt_buf_puts(b, "nowhere: its answers are all used up");
	for (size_t i = 0; i < n && i < MISS_SAID; i++) {
		json_t *v = json_array_get(json_array_get(was, i), 0);
		mt_buf_printf(b, "%s%s ", i ? ", " : "at ", json_string_value(json_array_get(diffs, i)));
		if (!v) {
			mt_buf_puts(b, "(not in the recording)");
		} else {
			mt_buf_puts(b, "(recorded ");
			short_value(b, v, 40);
			mt_buf_putc(b, ')');
		}
	}
	if (n > MISS_SAID)
		mt_buf_printf(b, " and %zu more", n - MISS_SAID);
}

/* A request with no recording: an error naming the closest one, and a line in the summary. */
static void mock_miss(struct mock *k, const struct mt_class *c, const char *method, json_t *params,
		      const char *line, size_t n)
{
	struct rp_script *s = k->s;
	json_t *diffs = json_array(), *was = json_array(), *data, *closest = json_null();
	int64_t close = rp_closest(s, method, params, diffs, was);
	struct mt_buf msg = MT_BUF_INIT;

	data = json_pack("{s:s,s:s}", "mcptap", "replay: no recorded request matches", "method", method);
	if (close >= 0) {
		closest = closest_of(s, close);
		json_object_set(data, "closest", closest);
		json_object_set(data, "differs", diffs);
	}
	miss_message(&msg, method, close >= 0 ? s->m[close].seq : -1, diffs, was);
	mt_buf_putc(&msg, '\0');
	mock_error(k, c->id, close >= 0 ? MOCK_MISS_CODE : -32601, msg.data, data);
	note_miss(k, c, method, params, line, n, closest, diffs);
	mt_buf_release(&msg);
	json_decref(closest);
	json_decref(data);
	json_decref(diffs);
	json_decref(was);
}

static void mock_request(struct mock *k, const struct mt_class *c, const char *line, size_t n)
{
	struct rp_script *s = k->s;
	json_t *params = NULL;
	int reused = 0;
	int64_t i;

	k->requests++;
	/* The method, then the params (parsed only when there are some). */
	if (mt_json_string(c->method, &k->key) || memchr(k->key.data ? k->key.data : "", '\0', k->key.len)) {
		mock_error(k, c->id, -32600, "Invalid Request", NULL);
		return;
	}
	const char *method = k->key.data ? k->key.data : "";
	int initialize = !strcmp(method, "initialize");
	if (!empty_params(c->params))
		params = rp_parse(c->params.p, c->params.n);
	if (initialize)
		note_initialize(k, params);
	i = rp_match_request(s, method, params, &reused);
	if (i < 0) {
		mock_miss(k, c, method, params, line, n);
		json_decref(params);
		return;
	}
	struct rp_msg *r = &s->m[i];
	if (initialize && r->answer >= 0) {
		/* The recorded version, whatever the client asked: a server may answer with
		 * one it supports, and the client may then refuse it. */
		json_t *a = NULL;
		(void)rp_json(s, (size_t)r->answer, &a, NULL);
		json_decref(k->answered_version);
		k->answered_version =
			json_incref(json_object_get(json_object_get(a, "result"), "protocolVersion"));
		json_decref(a);
	}
	struct live *lv = live_of(k, (size_t)i);
	mt_buf_reset(&lv->id);
	mt_buf_append(&lv->id, c->id.p, c->id.n);
	mt_buf_reset(&lv->token);
	if (c->progress_token.n)
		mt_buf_append(&lv->token, c->progress_token.p, c->progress_token.n);
	if (reused) {
		k->reused++;
		/* A reused recording: its answer again, nothing else it set off. */
		if (r->answer >= 0) {
			mock_send(k, (size_t)r->answer, &lv->id);
			live_done(k, (size_t)i);
		}
		json_decref(params);
		return;
	}
	if (r->answer >= 0)
		k->state[r->answer] = ST_NEW; /* may have gone out for an earlier reuse */
	play_block(k, i);
	if (r->answer < 0 && r->cancelled_by >= 0) {
		/* The recorded client cancelled it and the server never answered: nor
		 * does the mock (a client that cancels it too expects nothing). */
		k->answered++;
		json_decref(params);
		return;
	}
	if (r->answer < 0 && r->refused) {
		/* The recorded server refused it at the HTTP level (a 401 before OAuth):
		 * so does an HTTP transport (o->refused); a JSON-RPC error says it elsewhere. */
		const struct rp_http_reply *h = rp_refusal(s, i);
		char text[128];
		snprintf(text, sizeof(text),
			 "mcptap replay: the recorded server refused this request (HTTP %d)",
			 h ? h->status : 0);
		k->refusing = i;
		mock_error(k, c->id, MOCK_MISS_CODE, text, NULL);
		k->refusing = -1;
		k->answered++;
		json_decref(params);
		return;
	}
	if (r->answer < 0) {
		/* The recording ends before the server answered (it crashed or was cut): a
		 * miss whose closest recording is the very request. */
		json_t *closest = closest_of(s, i), *diffs = json_array();
		mock_error(k, c->id, MOCK_MISS_CODE,
			   "mcptap replay: the recorded server never answered this request", NULL);
		note_miss(k, c, method, params, line, n, closest, diffs);
		json_decref(closest);
		json_decref(diffs);
		json_decref(params);
		return;
	}
	k->answered++;
	json_decref(params);
	/* The answer came later in the recording. Unless the server was waiting on
	 * the client for it (the answer to a request of ours the live client still
	 * owes came between), send it now so that a client that waits for each
	 * answer is not left waiting. */
	if (k->state[r->answer] == ST_NEW) {
		/* An answer the server gave only after the client cancelled the request
		 * stays where it was: after the cancellation. */
		int waited = r->cancelled_by >= 0 && r->answer > r->cancelled_by;
		for (size_t j = (size_t)i + 1; j < (size_t)r->answer && !waited; j++) {
			const struct rp_msg *m = &s->m[j];
			if (m->c2s && (m->kind == MT_RESPONSE || m->kind == MT_ERROR))
				waited = m->request < 0 || k->state[m->request] == ST_NEW ||
					 k->state[m->request] == ST_AWAITED;
		}
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
	k->state[sreq] = ST_SENT;
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
			mt_voice_warn(&k->o->voice, "replay: the client sent %s: '%.*s'",
				      c.kind == MT_INVALID ? "a line that is not JSON"
				      : c.kind == MT_BATCH ? "a batch (not replayed)"
							   : "JSON that is not JSON-RPC",
				      (int)(n < 60 ? n : 60), line);
		mock_error(k, (struct mt_span){NULL, 0}, c.kind == MT_INVALID ? -32700 : -32600,
			   c.kind == MT_INVALID ? "Parse error" : "Invalid Request", NULL);
		return;
	}
	if (c.kind == MT_REQUEST) {
		mock_request(k, &c, line, n);
		return;
	}
	msg = rp_parse(line, n);
	if (!msg) {
		/* Past the JSON parser's limits: an answer or a notification gets no reply. */
		if (!k->garbage++)
			mt_voice_warn(&k->o->voice,
				      "replay: cannot parse a %s from the client (nested too deep); skipped",
				      mt_kind_name(c.kind));
		return;
	}
	switch (c.kind) {
	case MT_RESPONSE:
	case MT_ERROR: mock_answer(k, msg); break;
	case MT_NOTIFICATION: {
		int64_t i = rp_match_notification(k->s, json_string_value(json_object_get(msg, "method")),
						  json_object_get(msg, "params"));
		if (i >= 0)
			play_block(k, i);
		break;
	}
	default: break;
	}
	json_decref(msg);
}

/* ---- the end of a run: its summary, the report file, the capture ---- */

/*
 * The recorded client requests no live request matched: [{seq, method, name}]
 * for the first MAX_LISTED of them; *count: all of them.
 */
static json_t *unused_requests(struct rp_script *s, size_t *count)
{
	json_t *a = json_array();

	*count = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct rp_msg *m = &s->m[i];
		json_t *j = NULL;
		if (!m->c2s || m->kind != MT_REQUEST || m->used || ++*count > MAX_LISTED)
			continue;
		(void)rp_json(s, i, &j, NULL);
		json_array_append_new(a,
				      json_pack("{s:I,s:s?,s:s?}", "seq", (json_int_t)m->seq, "method",
						m->method, "name", rp_subject(json_object_get(j, "params"))));
		json_decref(j);
	}
	return a;
}

static const char *signal_name(int sig)
{
	return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "signal";
}

/* The run's summary (a new reference): what --report writes and the capture keeps. */
static json_t *mock_summary(struct mock *k, json_t *unused, size_t unused_count, const char *ended)
{
	int ok = !k->missed && !(k->o->strict && unused_count);

	return json_pack("{s:I,s:{s:O?,s:O?},s:O?,s:I,s:I,s:I,s:I,s:O,s:I,s:O,s:O,s:I,s:I,s:I,s:s,s:b}",
			 "session", (json_int_t)k->s->session, "protocol", "asked", k->asked, "answered",
			 k->answered_version, "client", k->client_info, "requests", (json_int_t)k->requests,
			 "answered", (json_int_t)k->answered, "reused", (json_int_t)k->reused, "missed",
			 (json_int_t)k->missed, "misses", k->misses, "unused_count", (json_int_t)unused_count,
			 "unused", unused, "skipped", k->skipped, "ordered_waits", (json_int_t)k->waits,
			 "ordered_timeouts", (json_int_t)k->timeouts, "garbage", (json_int_t)k->garbage,
			 "ended", ended, "ok", ok);
}

void mock_write_report(const char *path, json_t *sum, const struct mt_voice *v)
{
	char *tmp = mt_asprintf("%s.tmp", path);
	char *text = json_dumps(sum, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	int fd = mt_open_private(tmp, O_TRUNC); /* (0600, as every file mcptap makes) */
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	int bad = !f || !text || fputs(text, f) == EOF || fputc('\n', f) == EOF;

	if (fd >= 0 && !f)
		close(fd);
	if (f && fclose(f) == EOF)
		bad = 1;
	if (bad || rename(tmp, path) < 0) {
		mt_voice_warn(v, "replay: cannot write the report '%s': %s", path, strerror(errno));
		(void)unlink(tmp);
	}
	free(text);
	free(tmp);
}

/* One replay_result row; NULLs as the schema allows. */
static int store_row(struct store *st, int64_t run, int64_t seq, const char *method, const char *name,
		     const char *status, const char *sent, const char *recorded, size_t recorded_len,
		     json_t *diff, struct mt_err *err)
{
	char *diff_text = diff ? json_dumps(diff, JSON_COMPACT) : NULL;
	struct store_replay_result r = {
		.seq = seq,
		.method = method,
		.name = name,
		.status = status,
		.sent = sent,
		.sent_len = sent ? strlen(sent) : 0,
		.recorded = recorded,
		.recorded_len = recorded_len,
		.diff_json = diff_text,
	};
	int rc = store_add_replay_result(st, run, &r, err);

	free(diff_text);
	return rc;
}

/*
 * Store the run in the capture file: a replay_run of mode server, a row per
 * miss (seq: the closest recording, or 0; sent: the live line; diff: the
 * paths that differ), per unused recording (recorded: its answer; both
 * MAX_LISTED at most, the totals say how many there were) and per
 * server request left out (diff: the capability path the live initialize
 * lacked). A capture that cannot be written is a warning, not a failure.
 */
static void mock_store(struct mock *k, size_t unused_count, const char *summary, int64_t wall, int64_t t0)
{
	struct rp_script *s = k->s;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct store_replay_run run = {s->session, wall, k->o->command, k->o->ignore_json, "server", 1};
	int64_t id;
	size_t i;
	json_t *e;

	if (store_open(k->o->store_path, STORE_UPDATE, &st, &err) || store_begin(st, &err) ||
	    store_add_replay_run(st, &run, &id, &err))
		goto fail;
	json_array_foreach(k->misses, i, e)
	{
		json_t *closest = json_object_get(e, "closest");
		if (store_row(st, id, json_integer_value(json_object_get(closest, "seq")),
			      json_string_value(json_object_get(e, "method")),
			      json_string_value(json_object_get(e, "name")), "miss",
			      json_string_value(json_array_get(k->miss_lines, i)), NULL, 0,
			      json_object_get(e, "differs"), &err) ||
		    store_slice(st, &err))
			goto fail;
	}
	for (size_t m = 0, listed = 0; m < s->n && listed < MAX_LISTED; m++) {
		const struct rp_msg *r = &s->m[m];
		const char *answer = NULL;
		size_t answer_len = 0;
		json_t *j = NULL;
		if (!r->c2s || r->kind != MT_REQUEST || r->used)
			continue;
		listed++;
		(void)rp_json(s, m, &j, NULL);
		if (r->answer >= 0 && rp_read(s, (size_t)r->answer, &answer, &answer_len, NULL, NULL))
			answer = NULL;
		int bad = store_row(st, id, r->seq, r->method, rp_subject(json_object_get(j, "params")),
				    "unused", NULL, answer, answer_len, NULL, &err) ||
			  store_slice(st, &err);
		json_decref(j);
		if (bad)
			goto fail;
	}
	json_array_foreach(k->skipped, i, e)
	{
		char *path =
			mt_asprintf("params.capabilities.%s", json_string_value(json_object_get(e, "needs")));
		json_t *diff = json_pack("[s]", path);
		int bad = store_row(st, id, json_integer_value(json_object_get(e, "seq")),
				    json_string_value(json_object_get(e, "method")), NULL, "skipped", NULL,
				    NULL, 0, diff, &err);
		json_decref(diff);
		free(path);
		if (bad)
			goto fail;
	}
	struct store_replay_totals tot = {mt_mono_ns() - t0,
					  (int64_t)k->answered,
					  (int64_t)k->missed,
					  (int64_t)unused_count,
					  0,
					  summary};
	if (store_finish_replay_run(st, id, &tot, &err) || store_commit(st, &err))
		goto fail;
	store_close(st);
	return;
fail:
	if (st)
		store_rollback(st);
	mt_voice_warn(&k->o->voice, "replay: the run is not stored in '%s': %s", k->o->store_path, err.msg);
	store_close(st);
}

/* ---- signals ---- */

static void on_signal(int sig)
{
	int e = errno;

	mock_signal = sig;
	/* stdin and stdout become /dev/null: a read of stdin, blocked now or about to
	 * block, ends (EOF), and a write to a client that no longer reads completes. So
	 * the run ends the normal way, with its summary, whenever the signal came. */
	if (mock_devnull >= 0) {
		(void)dup2(mock_devnull, STDIN_FILENO);
		(void)dup2(mock_devnull, STDOUT_FILENO);
	}
	errno = e;
}

static const int mock_sigs[3] = {SIGTERM, SIGINT, SIGHUP};

/* Catch the signals that end a run; one ignored from the start stays ignored. */
static void catch_signals(struct sigaction old[3], int set[3])
{
	struct sigaction sa;

	mock_signal = 0;
	mock_devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: a blocked read returns */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++) {
		set[i] = sigaction(mock_sigs[i], NULL, &old[i]) == 0 && old[i].sa_handler != SIG_IGN &&
			 sigaction(mock_sigs[i], &sa, NULL) == 0;
	}
}

static void release_signals(const struct sigaction old[3], const int set[3])
{
	for (int i = 0; i < 3; i++)
		if (set[i])
			(void)sigaction(mock_sigs[i], &old[i], NULL);
	if (mock_devnull >= 0)
		close(mock_devnull);
	mock_devnull = -1;
}

struct mock *mock_new(struct rp_script *s, const struct mock_opts *o, const struct mock_sink *sink,
		      const volatile sig_atomic_t *stop)
{
	struct mock *k = mt_calloc(1, sizeof(*k));

	k->s = s;
	k->o = o;
	k->sink = *sink;
	k->stop = stop;
	k->state = mt_calloc(s->n ? s->n : 1, 1);
	k->misses = json_array();
	k->miss_lines = json_array();
	k->skipped = json_array();
	k->wall = mt_wall_us();
	k->t0 = mt_mono_ns();
	k->refusing = -1;
	mt_map_init(&k->fresh, 0);
	return k;
}

void mock_begin(struct mock *k)
{
	play_block(k, -1);
}

void mock_feed(struct mock *k, const char *p, size_t n)
{
	mock_line(k, p, n);
	read_trouble(k);
}

int mock_end(struct mock *k, const char *ended, json_t **summary)
{
	struct rp_script *s = k->s;
	const struct mock_opts *o = k->o;
	size_t skipped, unused_count;
	json_t *unused, *sum;
	int rc = EXIT_OK;

	unused = unused_requests(s, &unused_count);
	skipped = json_array_size(k->skipped);
	if (o->strict || k->missed) {
		mt_voice_error(&k->o->voice,
			       "replay: %zu request%s answered from the recording (%zu again), %zu without "
			       "a recording, %zu recorded request%s never asked for",
			       k->answered, k->answered == 1 ? "" : "s", k->reused, k->missed, unused_count,
			       unused_count == 1 ? "" : "s");
		if (o->strict && (k->missed || unused_count))
			rc = EXIT_FINDINGS;
	}
	if (skipped) {
		json_t *e = json_array_get(k->skipped, 0);
		mt_voice_warn(
			&k->o->voice,
			"replay: %zu recorded server request%s not sent: the client did not declare the "
			"capability %s (#%lld %s needs %s%s)",
			skipped, skipped == 1 ? "" : "s", skipped == 1 ? "it needs" : "they need",
			(long long)json_integer_value(json_object_get(e, "seq")),
			json_string_value(json_object_get(e, "method")),
			json_string_value(json_object_get(e, "needs")), skipped > 1 ? ", ..." : "");
	}
	if (k->timeouts)
		mt_voice_warn(&k->o->voice,
			      "replay: %zu answer%s went out before the client had read the messages before "
			      "%s (it did not read within %d ms)",
			      k->timeouts, k->timeouts == 1 ? "" : "s", k->timeouts == 1 ? "it" : "them",
			      ORDER_WAIT_MS);
	sum = mock_summary(k, unused, unused_count, ended);
	k->unused_count = unused_count;
	read_trouble(k);
	if (s->read_errors)
		rc = EXIT_ERROR;
	json_decref(unused);
	*summary = sum;
	return rc;
}

void mock_save(struct mock *k, json_t *summary)
{
	char *text;

	if (!k->o->store_path)
		return;
	text = json_dumps(summary, JSON_COMPACT | JSON_PRESERVE_ORDER);
	mock_store(k, k->unused_count, text, k->wall, k->t0);
	free(text);
}

void mock_free(struct mock *k)
{
	if (!k)
		return;
	mt_map_release(&k->fresh);
	for (size_t i = 0; i < k->nlive; i++) {
		mt_buf_release(&k->live[i].id);
		mt_buf_release(&k->live[i].token);
	}
	free(k->live);
	free(k->spare);
	mt_buf_release(&k->out);
	mt_buf_release(&k->key);
	json_decref(k->caps);
	json_decref(k->client_info);
	json_decref(k->asked);
	json_decref(k->answered_version);
	json_decref(k->misses);
	json_decref(k->miss_lines);
	json_decref(k->skipped);
	free(k->todo);
	free(k->state);
	free(k);
}

/* ---- the stdio transport: lines on stdin and stdout ---- */

/* The stdio transport's state: the channel, and a line being made. */
struct stdio_ctx {
	struct lio io;
	struct mt_buf line;
};

/* One line, in one piece: a reader never sees a message without its newline. */
static void stdio_send(void *ctx, const char *p, size_t n, const struct mock_out *o)
{
	struct stdio_ctx *c = ctx;

	(void)o;
	mt_buf_reset(&c->line);
	mt_buf_append(&c->line, p, n);
	mt_buf_putc(&c->line, '\n');
	lio_put(&c->io, c->line.data, c->line.len);
}

/* An answer waits until the client has read what went before it (a pipe or a socketpair). */
static int stdio_barrier(void *ctx)
{
	struct lio *io = &((struct stdio_ctx *)ctx)->io;

	if (io->outq == LIO_OUTQ_NONE)
		return -1;
	return lio_wait_read(io, ORDER_WAIT_MS, &mock_signal) == 1 ? 1 : 0;
}

/* Sleep ns (what is queued goes out first), or less when a signal ends the run. */
static void stdio_delay(void *ctx, int64_t ns)
{
	struct timespec ts;

	(void)lio_flush(&((struct stdio_ctx *)ctx)->io);
	if (ns <= 0)
		return;
	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !mock_signal)
		;
}

int mock_serve(struct rp_script *s, const struct mock_opts *o)
{
	struct stdio_ctx sc = {.line = MT_BUF_INIT};
	struct lio *io = &sc.io;
	struct mock_sink sink = {&sc, stdio_send, stdio_barrier, stdio_delay};
	struct mock *k;
	struct sigaction old[3];
	int set[3];
	const char *line, *ended = "eof";
	size_t n;
	int r = LIO_EOF, rc;
	json_t *sum = NULL;

	catch_signals(old, set);
	lio_init(io, STDIN_FILENO, STDOUT_FILENO, 0);
	k = mock_new(s, o, &sink, &mock_signal);
	mock_begin(k);
	while (!mock_signal && (r = lio_next(io, -1, &line, &n)) == LIO_LINE) {
		mock_feed(k, line, n);
		if (io->write_failed)
			break;
	}
	(void)lio_flush(io);
	if (mock_signal) {
		ended = signal_name(mock_signal);
	} else if (io->write_failed) {
		ended = "the client stopped reading";
		mt_voice_warn(&k->o->voice, "replay: the client stopped reading its answers");
	} else if (r == LIO_ERROR) {
		ended = "read error";
		mt_voice_warn(&k->o->voice, "replay: cannot read the client: %s", strerror(errno));
	}
	rc = mock_end(k, ended, &sum);
	if (o->report)
		mock_write_report(o->report, sum, &k->o->voice);
	mock_save(k, sum);
	release_signals(old, set);
	json_decref(sum);
	mock_free(k);
	lio_release(io);
	mt_buf_release(&sc.line);
	return rc;
}
