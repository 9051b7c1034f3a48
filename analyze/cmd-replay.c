/*
 * cmd-replay.c - `mcptap replay`: play a recorded session back.
 *
 *   --as server: a mock of the recorded server on stdin/stdout, for a
 *     client's tests (the client spawns it as its server command);
 *   --as client: the recorded client against a live server command, comparing
 *     every live answer with the recorded one (a regression test).
 *
 * The matching rules are in replay.h; the wire is tap/lineio.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/replay.h"
#include "schema/cli.h"
#include "tap/child.h"
#include "tap/lineio.h"

static int run_replay(int argc, char **argv);

const struct cmd_entry cmd_replay = {
	.name = "replay",
	.summary = "play a recorded session back: a mock server, or the recorded client",
	.usage = "mcptap replay -r FILE [-s ID] --as server [--strict] [--timing none|recorded|scale=X] "
		 "[--ignore PATH]...\n"
		 "mcptap replay -r FILE [-s ID] --as client [--ignore PATH]... [--timeout-ms N] "
		 "[--no-store] -- COMMAND [ARG...]",
	.options =
		"  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		"  -s, --session ID      the session (default: the newest)\n"
		"      --as server       be the recorded server on stdin/stdout\n"
		"      --as client       be the recorded client against COMMAND\n"
		"      --ignore PATH     leave PATH out of matching and comparing (repeatable):\n"
		"                        params.arguments.ts, result.content[*].text, result.*.id;\n"
		"                        NAME=PATH only for the method or tool/prompt NAME\n"
		"      --strict          server: exit 1 when a request had no recording, or a\n"
		"                        recorded request was never asked for\n"
		"      --timing T        server: none (default, as fast as possible), recorded\n"
		"                        (the recorded gaps), or scale=X (the gaps times X)\n"
		"      --timeout-ms N    client: wait at most N ms for each answer (default 10000)\n"
		"      --no-store        client: do not store the run in the capture file\n"
		"  -h, --help            this text\n"
		"\n"
		"As a server, a request with no recording gets a JSON-RPC error (-32001) whose\n"
		"data names the closest recorded request and the paths that differ. As a\n"
		"client, each request prints PASS, DIFF with the paths that differ, or MISSING;\n"
		"the exit status is 1 when any differed or went missing.\n",
	.run = run_replay,
};

/* A JSON-RPC error code of mcptap's own: "no recorded answer". */
#define REPLAY_MISS -32001

/* ---- the mock server ---- */

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
		mock_error(k, c->id, close >= 0 ? REPLAY_MISS : -32601,
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
		mock_error(k, c->id, REPLAY_MISS,
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

static int serve(struct rp_script *s, double scale, int strict)
{
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

/* ---- the recorded client against a live server ---- */

struct verify {
	struct rp_script *s;
	struct lio io;
	int timeout_ms;
	struct store *st;        /* NULL: not stored */
	int64_t run;
	char *got;               /* per recorded request: its live answer arrived */
	char *gave_up;           /* per recorded request: waited for it once in vain */
	json_t *live_requests;   /* server requests not yet answered: [{"method":..,"id":..}] */
	size_t passed, differed, missing;
	int server_gone;         /* its output ended: waiting is pointless */
};

static void store_result(struct verify *v, size_t i, const char *status, const char *live,
			 size_t live_len, json_t *paths)
{
	const struct rp_msg *m = &v->s->m[i];
	const struct rp_msg *a = m->answer >= 0 ? &v->s->m[m->answer] : NULL;
	struct mt_err err = {""};
	char *diff = paths ? json_dumps(paths, JSON_COMPACT) : NULL;

	if (v->st && store_add_replay_result(v->st, v->run, m->seq, m->method, status, m->raw, m->len,
					     a ? a->raw : NULL, a ? a->len : 0, live, live_len, diff,
					     &err))
		mt_warn("replay: %s", err.msg);
	free(diff);
}

/* Compare a live answer with the recorded one for recorded request i. */
static void verify_answer(struct verify *v, size_t i, json_t *live, const char *line, size_t n)
{
	const struct rp_msg *m = &v->s->m[i];
	json_t *rec = m->answer >= 0 ? v->s->m[m->answer].json : NULL;
	json_t *paths = json_array();
	struct canon_ignore ig;
	size_t nd;

	rp_ignore_for(v->s, m->method, json_object_get(m->json, "params"), &ig);
	v->got[i] = 1;
	if (!rec) {
		/* The recording has no answer: any answer is new. */
		json_array_append_new(paths, json_string("(no recorded answer)"));
		nd = 1;
	} else if (json_object_get(rec, "result") && json_object_get(live, "result")) {
		nd = canon_diff(json_object_get(rec, "result"), json_object_get(live, "result"), "result",
				&ig, 8, paths);
	} else if (json_object_get(rec, "error") && json_object_get(live, "error")) {
		nd = canon_diff(json_object_get(rec, "error"), json_object_get(live, "error"), "error",
				&ig, 8, paths);
	} else {
		json_array_append_new(paths, json_string(json_object_get(live, "result") ? "result" : "error"));
		nd = 1;
	}
	if (nd == 0) {
		v->passed++;
		printf("PASS #%lld %s\n", (long long)m->seq, m->method ? m->method : "?");
		store_result(v, i, "pass", line, n, NULL);
	} else {
		v->differed++;
		printf("DIFF #%lld %s:", (long long)m->seq, m->method ? m->method : "?");
		for (size_t k = 0; k < json_array_size(paths); k++)
			printf("%s %s", k ? "," : "", json_string_value(json_array_get(paths, k)));
		if (nd > json_array_size(paths))
			printf(" (+%zu more)", nd - json_array_size(paths));
		printf("\n");
		store_result(v, i, "diff", line, n, paths);
	}
	fflush(stdout);
	json_decref(paths);
	free((void *)ig.paths);
}

/* The recorded client request with this live id still awaiting its answer. */
static int64_t sent_request(struct verify *v, json_t *id)
{
	for (size_t i = 0; i < v->s->n; i++) {
		const struct rp_msg *m = &v->s->m[i];
		if (m->c2s && m->cls.kind == MT_REQUEST && m->live_id && !v->got[i] &&
		    json_equal(m->live_id, id))
			return (int64_t)i;
	}
	return -1;
}

/* Take in one live line from the server. */
static void verify_line(struct verify *v, const char *line, size_t n)
{
	struct mt_class c;
	json_t *msg;

	mt_classify(line, n, &c);
	if (c.kind > MT_ERROR)
		return; /* not JSON-RPC: the analyzer's business, not replay's */
	msg = rp_parse(line, n);
	if (!msg)
		return;
	if (c.kind == MT_RESPONSE || c.kind == MT_ERROR) {
		int64_t i = sent_request(v, json_object_get(msg, "id"));
		if (i >= 0)
			verify_answer(v, (size_t)i, msg, line, n);
	} else if (c.kind == MT_REQUEST) {
		const char *method = json_string_value(json_object_get(msg, "method"));
		int answerable = 0;
		for (size_t i = 0; i < v->s->n && !answerable; i++) {
			const struct rp_msg *m = &v->s->m[i];
			answerable = !m->c2s && m->cls.kind == MT_REQUEST && m->method && method &&
				     !strcmp(m->method, method) && m->answer >= 0;
		}
		if (answerable) {
			json_array_append_new(v->live_requests,
					      json_pack("{s:s,s:O}", "method", method, "id",
							json_object_get(msg, "id")));
		} else {
			/* The recorded client never answered such a request: say so, so that
			 * the server is not left waiting. */
			json_t *e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
					      json_object_get(msg, "id"), "error", "code", -32601, "message",
					      "mcptap replay: the recorded client never answered this request");
			char *text = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
			lio_put(&v->io, text, strlen(text));
			lio_put(&v->io, "\n", 1);
			free(text);
			json_decref(e);
		}
	}
	json_decref(msg);
}

/* Read the server until pred holds or the timeout passes; 0 when it held. */
static int verify_wait(struct verify *v, int (*pred)(struct verify *, size_t), size_t arg)
{
	int64_t deadline = mt_mono_ns() / 1000000 + v->timeout_ms;
	const char *line;
	size_t n;

	while (!pred(v, arg)) {
		int64_t left = deadline - mt_mono_ns() / 1000000;
		int r = left > 0 ? lio_next(&v->io, (int)left, &line, &n) : LIO_TIMEOUT;
		if (r == LIO_LINE) {
			verify_line(v, line, n);
			continue;
		}
		/* Timed out, or the server is gone: what it still owes is not waited
		 * for again (each answer costs at most one timeout). */
		for (size_t i = 0; i < v->s->n; i++)
			if (v->s->m[i].live_id && !v->got[i])
				v->gave_up[i] = 1;
		if (r == LIO_EOF || r == LIO_ERROR)
			v->server_gone = 1;
		return -1;
	}
	return 0;
}

/* Have the answers arrived that the recording had before message i was sent? */
static int answers_before(struct verify *v, size_t i)
{
	for (size_t q = 0; q < i; q++) {
		const struct rp_msg *m = &v->s->m[q];
		if (m->c2s && m->cls.kind == MT_REQUEST && m->live_id && !v->got[q] && !v->gave_up[q] &&
		    m->answer >= 0 && (size_t)m->answer < i)
			return 0;
	}
	return 1;
}

/* Is a live server request with the method of recorded server request i waiting? */
static int server_request_waiting(struct verify *v, size_t i)
{
	const char *method = v->s->m[i].method;

	for (size_t k = 0; k < json_array_size(v->live_requests); k++)
		if (method && !strcmp(method, json_string_value(json_object_get(
							json_array_get(v->live_requests, k), "method"))))
			return 1;
	return 0;
}

static int all_answered(struct verify *v, size_t unused)
{
	(void)unused;
	for (size_t i = 0; i < v->s->n; i++)
		if (v->s->m[i].c2s && v->s->m[i].cls.kind == MT_REQUEST && v->s->m[i].live_id &&
		    !v->got[i] && !v->gave_up[i])
			return 0;
	return 1;
}

/* Send recorded client message i (an answer goes under the live server's id). */
static void verify_send(struct verify *v, size_t i)
{
	struct rp_msg *m = &v->s->m[i];
	struct mt_buf out = MT_BUF_INIT;

	if (m->cls.kind == MT_RESPONSE || m->cls.kind == MT_ERROR) {
		const char *method = m->request >= 0 ? v->s->m[m->request].method : NULL;
		for (size_t k = 0; k < json_array_size(v->live_requests); k++) {
			json_t *lr = json_array_get(v->live_requests, k);
			if (method && !strcmp(method, json_string_value(json_object_get(lr, "method")))) {
				char *id = json_dumps(json_object_get(lr, "id"), JSON_COMPACT | JSON_ENCODE_ANY);
				if (id)
					rp_render(v->s, i, id, strlen(id), NULL, 0, &out);
				free(id);
				json_array_remove(v->live_requests, k);
				break;
			}
		}
	} else {
		rp_render(v->s, i, NULL, 0, NULL, 0, &out);
		if (m->cls.kind == MT_REQUEST)
			m->live_id = json_loadb(m->cls.id.p, m->cls.id.n, JSON_DECODE_ANY, NULL);
	}
	if (out.len)
		lio_put(&v->io, out.data, out.len);
	mt_buf_release(&out);
}

static int verify(struct rp_script *s, char **argv, int timeout_ms, struct store *st,
		  const char *ignore_json)
{
	struct verify v;
	int to[2] = {-1, -1}, from[2] = {-1, -1}, status = 0, rc = EXIT_ERROR;
	pid_t pid = 0;
	struct mt_err err = {""};
	struct mt_buf cmd = MT_BUF_INIT;
	int64_t t0 = mt_mono_ns();

	memset(&v, 0, sizeof(v));
	v.s = s;
	v.timeout_ms = timeout_ms;
	v.got = mt_calloc(s->n ? s->n : 1, 1);
	v.gave_up = mt_calloc(s->n ? s->n : 1, 1);
	v.live_requests = json_array();
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			mt_buf_putc(&cmd, ' ');
		mt_shell_quote(&cmd, argv[i]);
	}
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) {
		mt_error("cannot create pipes: %s", strerror(errno));
		goto out;
	}
	{
		int fds[3] = {to[0], from[1], -1};
		int e = child_spawn(argv, fds, NULL, &pid);
		close(to[0]);
		close(from[1]);
		to[0] = from[1] = -1;
		if (e) {
			mt_error("cannot run '%s': %s", argv[0], strerror(e));
			rc = e == ENOENT ? 127 : 126;
			goto out;
		}
	}
	if (st) {
		struct store_replay_run r = {s->session, mt_wall_us(), cmd.data, ignore_json};
		if (store_add_replay_run(st, &r, &v.run, &err)) {
			mt_warn("replay: the run is not stored: %s", err.msg);
			st = NULL;
		}
	}
	v.st = st;
	lio_init(&v.io, from[0], to[1], 0);
	/* A server that stops reading must not hold us past the timeouts. */
	if (lio_nonblock(&v.io))
		mt_warn("replay: cannot make the pipe to the server non-blocking: %s", strerror(errno));
	for (size_t i = 0; i < s->n; i++) {
		struct rp_msg *m = &s->m[i];
		if (!m->c2s)
			continue;
		if (m->cls.kind > MT_ERROR)
			continue; /* what the client sent that was not JSON-RPC is not replayed */
		/* Wait for what the recorded client had seen before it sent this. */
		if (!v.server_gone)
			(void)verify_wait(&v, answers_before, i);
		if ((m->cls.kind == MT_RESPONSE || m->cls.kind == MT_ERROR) && m->request >= 0 &&
		    (v.server_gone || verify_wait(&v, server_request_waiting, (size_t)m->request))) {
			printf("MISSING server request %s (recorded #%lld): the client's answer #%lld "
			       "was not sent\n",
			       s->m[m->request].method ? s->m[m->request].method : "?",
			       (long long)s->m[m->request].seq, (long long)m->seq);
			continue;
		}
		verify_send(&v, i);
		if (v.io.write_failed)
			break;
	}
	if (lio_drain(&v.io, timeout_ms) && !v.io.write_failed)
		mt_warn("replay: the server did not read all the requests within %d ms", timeout_ms);
	if (!v.server_gone)
		(void)verify_wait(&v, all_answered, 0);
	for (size_t i = 0; i < s->n; i++) {
		if (s->m[i].c2s && s->m[i].cls.kind == MT_REQUEST && !s->m[i].live_id) {
			/* Never sent: the server went away first. */
			v.missing++;
			printf("MISSING #%lld %s: not sent, the server had gone\n", (long long)s->m[i].seq,
			       s->m[i].method ? s->m[i].method : "?");
			store_result(&v, i, "missing", NULL, 0, NULL);
			continue;
		}
		if (s->m[i].c2s && s->m[i].cls.kind == MT_REQUEST && s->m[i].live_id && !v.got[i]) {
			v.missing++;
			printf("MISSING #%lld %s: no answer within %d ms\n", (long long)s->m[i].seq,
			       s->m[i].method ? s->m[i].method : "?", timeout_ms);
			store_result(&v, i, "missing", NULL, 0, NULL);
		}
	}
	/* Done: close the server's stdin (its cue to exit), then wait a little. */
	close(to[1]);
	to[1] = -1;
	for (int tries = 0; tries < 50 && waitpid(pid, &status, WNOHANG) == 0; tries++)
		usleep(100000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGTERM);
		usleep(200000);
		if (waitpid(pid, &status, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
	}
	printf("replay: %zu requests: %zu passed, %zu differed, %zu missing (session %lld against %s)\n",
	       v.passed + v.differed + v.missing, v.passed, v.differed, v.missing,
	       (long long)s->session, cmd.data);
	if (st && store_finish_replay_run(st, v.run, mt_mono_ns() - t0, (int64_t)v.passed,
					  (int64_t)v.differed, (int64_t)v.missing, &err))
		mt_warn("replay: %s", err.msg);
	rc = v.differed || v.missing ? EXIT_FINDINGS : EXIT_OK;
out:
	for (int k = 0; k < 2; k++) {
		if (to[k] >= 0)
			close(to[k]);
		if (from[k] >= 0)
			close(from[k]);
	}
	lio_release(&v.io);
	json_decref(v.live_requests);
	free(v.got);
	free(v.gave_up);
	mt_buf_release(&cmd);
	return rc;
}

/* ---- the command ---- */

static int parse_timing(const char *t, double *scale)
{
	char *end;

	if (!strcmp(t, "none"))
		*scale = 0;
	else if (!strcmp(t, "recorded"))
		*scale = 1;
	else if (!strncmp(t, "scale=", 6)) {
		*scale = strtod(t + 6, &end);
		if (end == t + 6 || *end || !(*scale >= 0) || *scale > 1000)
			return -1;
	} else
		return -1;
	return 0;
}

static int run_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"as", required_argument, NULL, 'a'},
		{"strict", no_argument, NULL, 'S'},
		{"timing", required_argument, NULL, 't'},
		{"ignore", required_argument, NULL, 'i'},
		{"timeout-ms", required_argument, NULL, 'O'},
		{"no-store", no_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	/* A peer that goes away is an answer to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	const char **ignore = NULL;
	size_t nignore = 0;
	const char *path = NULL, *sid = NULL, *as = NULL, *timing = "none";
	struct store *st = NULL;
	struct rp_script s;
	struct mt_err err = {""};
	struct canon_ignore ig;
	int strict = 0, no_store = 0, c, rc = EXIT_ERROR, loaded = 0;
	int64_t id, n, timeout_ms = 10000;
	double scale = 0;
	json_t *ignore_json = json_array();
	char *ignore_text = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:r:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': path = optarg; break;
		case 's': sid = optarg; break;
		case 'a': as = optarg; break;
		case 'S': strict = 1; break;
		case 't': timing = optarg; break;
		case 'i':
			ignore = mt_realloc(ignore, (nignore + 1) * sizeof(*ignore));
			ignore[nignore++] = optarg;
			json_array_append_new(ignore_json, json_string(optarg));
			break;
		case 'O':
			if (mt_parse_int64(optarg, &n) || n <= 0 || n > 3600000) {
				rc = cli_usage_error(&cmd_replay, "bad --timeout-ms '%s'", optarg);
				goto out;
			}
			timeout_ms = n;
			break;
		case 'N': no_store = 1; break;
		case 'h': cli_help(&cmd_replay, stdout); rc = EXIT_OK; goto out;
		default:
			rc = cli_bad_option(&cmd_replay, c, argv);
			goto out;
		}
	}
	if (!as || (strcmp(as, "server") && strcmp(as, "client"))) {
		rc = cli_usage_error(&cmd_replay, "say --as server or --as client");
		goto out;
	}
	if (!strcmp(as, "server") && optind < argc) {
		rc = cli_usage_error(&cmd_replay, "--as server takes no command");
		goto out;
	}
	if (!strcmp(as, "client") && optind >= argc) {
		rc = cli_usage_error(&cmd_replay, "--as client needs the server's command after --");
		goto out;
	}
	if (parse_timing(timing, &scale)) {
		rc = cli_usage_error(&cmd_replay, "bad --timing '%s' (none, recorded, scale=X)", timing);
		goto out;
	}
	if (!(path = cli_capture_path(path))) {
		rc = cli_usage_error(&cmd_replay, "no capture file: give -r FILE or set MCPTAP_FILE");
		goto out;
	}
	/* A client run is stored in the capture file; a mock only reads it. */
	if (!strcmp(as, "client") && !no_store && store_open(path, STORE_UPDATE, &st, &err) == 0)
		;
	else if (cli_open_capture(path, &st))
		goto out;
	else if (!strcmp(as, "client") && !no_store)
		mt_warn("replay: '%s' is not writable: the run is not stored", path);
	if (cli_pick_session(st, path, sid, &id))
		goto out;
	ig.paths = ignore;
	ig.n = nignore;
	if (rp_load(st, id, &ig, &s, &err)) {
		mt_error("cannot read session %lld of '%s': %s", (long long)id, path, err.msg);
		goto out;
	}
	loaded = 1;
	if (s.n == 0) {
		mt_error("session %lld of '%s' has no messages to replay", (long long)id, path);
		goto out;
	}
	if (!strcmp(as, "server")) {
		if (!s.server_msgs)
			mt_warn("replay: session %lld has no server messages: every request will miss",
				(long long)id);
		store_close(st);
		st = NULL;
		rc = serve(&s, scale, strict);
	} else {
		if (!s.requests)
			mt_warn("replay: session %lld has no client requests: nothing to compare",
				(long long)id);
		ignore_text = json_dumps(ignore_json, JSON_COMPACT);
		rc = verify(&s, argv + optind, (int)timeout_ms, no_store ? NULL : st, ignore_text);
	}
out:
	if (loaded)
		rp_release(&s);
	store_close(st);
	free(ignore);
	free(ignore_text);
	json_decref(ignore_json);
	return rc;
}
