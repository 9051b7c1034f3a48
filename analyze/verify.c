/*
 * verify.c - the recorded client against a live server (see verify.h).
 */
#include "analyze/verify.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "schema/cli.h"
#include "tap/child.h"
#include "tap/lineio.h"

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

	struct store_replay_result r = {
		.seq = m->seq, .method = m->method, .status = status, .sent = m->raw,
		.sent_len = m->len, .recorded = a ? a->raw : NULL, .recorded_len = a ? a->len : 0,
		.live = live, .live_len = live_len, .diff_json = diff,
	};

	if (v->st && store_add_replay_result(v->st, v->run, &r, &err))
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

int verify_run(struct rp_script *s, const struct verify_opts *o)
{
	char **argv = o->argv;
	int timeout_ms = o->timeout_ms;
	struct store *st = o->st;
	const char *ignore_json = o->ignore_json;
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
		struct store_replay_run r = {s->session, mt_wall_us(), cmd.data, ignore_json, "client", 1};
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
	struct store_replay_totals tot = {mt_mono_ns() - t0, (int64_t)v.passed, (int64_t)v.differed,
					  (int64_t)v.missing, 0, NULL};
	if (st && store_finish_replay_run(st, v.run, &tot, &err))
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

