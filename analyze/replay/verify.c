/*
 * verify.c - the recorded client against a live server (see verify.h).
 *
 * The recorded client is run opts->runs times, a fresh server (or a fresh MCP
 * session of the server at the URL) each time. A run sends the recorded
 * client messages in order, at the recorded pace (unless fast), each after the
 * answers the recorded client had seen before it; it follows the values the
 * live server mints (mint.h) and answers the server's own requests from the
 * recording. When all runs are over, each recorded request is judged once: its
 * live answers against the recorded one, the paths where the live runs
 * disagree set aside as noise.
 *
 * The engine knows no transport: a run talks to its server through a wire
 * (struct vwire), which puts a message, hands back the next thing the server
 * said, and starts and stops the run's server or session. Two wires: stdio (a
 * child process; tap/stdio/lineio.h) and HTTP (tap/http/httpclient.h).
 */
#include "analyze/replay/verify.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/replay/mint.h"
#include "schema/redact.h"
#include "schema/util.h"
#include "tap/http/httpclient.h"
#include "tap/stdio/child.h"
#include "tap/stdio/lineio.h"

/* How many differing paths are kept per answer (the rest are counted). */
#define MAX_PATHS 1000

struct verify;

/* One live run of the recorded client. */
struct vrun {
	struct rp_script *s;
	struct verify *v; /* borrowed: the verify it belongs to */
	/* The stdio wire: */
	struct lio io;
	pid_t pid;
	/* The HTTP wire: */
	struct hc *hc;       /* owned */
	char *end_text;      /* owned: how the server went, or NULL */
	int unreached;       /* nothing came from the server in this run */
	int expired;         /* it no longer knew the session (404) */
	size_t deletes_done; /* the recorded DELETEs made so far */
	json_t *fails;       /* recorded client message index (decimal) -> what went wrong
			      * instead of an answer: {"why": "status"|"body"|"lost",
			      * "status": N, "text": "..."} */
	int write_failed;    /* the server stopped reading */
	int timeout_ms;
	struct mt_buf *raw; /* per recorded client request: its live answer's line (parsed
			     * when it is needed) */
	json_t **sreq;      /* per recorded server request: the live request it stood for */
	int64_t *sent_ns;   /* per recorded client message: when it went out (0: never) */
	int64_t *got_ns;    /* per recorded client request: when its live answer came (0: not) */
	char *gave_up;      /* per recorded client request: waited for in vain once */
	size_t *owed;       /* the client requests sent whose recorded answer is awaited,
			     * in order (those answered or given up since are dropped lazily) */
	size_t nowed, owed_cap;
	struct mt_map by_id;           /* live id (JSON text) -> recorded client request awaiting it */
	json_t *pending;               /* live server requests not answered yet: [{method, id, msg}] */
	json_t *subs;                  /* recorded value -> live value (mint.h) */
	json_t *origins;               /* borrowed: mint_index of the script */
	const char *const *answerable; /* borrowed: the methods of the recorded server requests
					* the recorded client answered (interned) */
	size_t nanswerable;
	int gone;   /* the server's output ended */
	int status; /* its wait status, once reaped (reaped: 1) */
	int reaped;
	int64_t last_sent; /* index of the last client message sent, or -1 */
};

/* What a wire hands back: the server's message, or what happened. */
enum { W_MSG = 1, W_TIMEOUT = 0, W_GONE = -1, W_FAILED = 2, W_NOTE = 3 };
struct win {
	const char *p; /* W_MSG: the message (borrowed until the next call) */
	size_t n;
	int64_t tag;      /* W_FAILED: the recorded client message it was about, or -1 */
	int status;       /* W_FAILED, W_NOTE: an HTTP status, 0 when none */
	enum hc_why why;  /* W_FAILED */
	int expired;      /* W_FAILED: a 404 for the session */
	const char *text; /* W_FAILED, W_NOTE: what happened (borrowed) */
};

/*
 * A run's way to its server. start: the server or session is there to talk
 * to; 0, or an exit status. put: one message (no newline) for the server,
 * about recorded message tag (-1: none). next: the next thing from the
 * server within timeout_ms (W_*). end_session: end the live session where
 * the recording did (NULL: the wire has no such thing). drain: everything put
 * goes out. stop: the server or session ends. describe_end: how the server
 * went, after "GONE the server ".
 */
struct vwire {
	int (*start)(struct verify *v, struct vrun *r);
	void (*put)(struct vrun *r, const char *p, size_t n, int64_t tag);
	int (*next)(struct vrun *r, int timeout_ms, struct win *in);
	void (*end_session)(struct vrun *r);
	void (*drain)(struct vrun *r);
	void (*stop)(struct vrun *r);
	void (*describe_end)(const struct vrun *r, struct mt_buf *out);
};

struct verify {
	struct rp_script *s;
	const struct verify_opts *o;
	struct mt_err *err;    /* borrowed: what ended the run, for the caller */
	const struct vwire *w; /* the wire every run uses */
	/* What the recording says of HTTP (for the HTTP wire): */
	int legacy;       /* talk legacy HTTP+SSE */
	int get_stream;   /* open the GET stream */
	int had_get;      /* the recording had one */
	int64_t *deletes; /* owned: the seqs of the recorded DELETEs of the session */
	size_t ndeletes;
	int *rec_status; /* owned: per recorded message, the HTTP error status (400 up)
			  * its POST got, else 0; NULL for a stdio recording */
	json_t *notes;   /* the NOTE lines said (a set) */
	int gone_said;   /* a GONE line was printed */
	json_t *origins;
	const char **answerable; /* owned: see vrun */
	size_t nanswerable;
	struct vrun *run; /* o->runs of them */
	int nrun;
	size_t passed, differed, missing, cancelled, unanswered, noise, redacted;
	size_t srv_missing; /* MISSING server request lines printed (every run's) */
	struct mt_buf cmd;
	struct mt_buf sent; /* scratch: a recorded request's bytes, for storing */
	struct mt_buf line; /* the report's line being said (o->line has the whole ones) */
	struct store *st;   /* where the run is stored (borrowed), or NULL */
	int64_t id;         /* the stored run */
};

static int is_request(const struct rp_msg *m)
{
	return m->c2s && m->kind == MT_REQUEST;
}

/*
 * A recorded client request holding a value the tap redacted cannot be sent:
 * the value was never stored. initialize goes anyway (nothing works without
 * it), with the marker in place and a note.
 */
static int not_sendable(const struct rp_msg *m)
{
	return m->c2s && m->kind == MT_REQUEST && m->redacted &&
	       !(m->method && !strcmp(m->method, "initialize"));
}

/* "params.a.b, params.c" of the redacted values in msg (a recorded message), into out. */
static void redacted_paths(json_t *msg, struct mt_buf *out, json_t *list)
{
	json_t *set = json_object(), *e;
	const char *k;

	rp_marker_paths(json_object_get(msg, "params"), "params", set);
	rp_marker_paths(json_object_get(msg, "result"), "result", set);
	rp_marker_paths(json_object_get(msg, "error"), "error", set);
	mt_buf_reset(out);
	json_object_foreach(set, k, e)
	{
		if (out->len)
			mt_buf_puts(out, ", ");
		mt_buf_puts(out, k);
		if (list)
			json_array_append_new(list, json_string(k));
	}
	json_decref(set);
}

static int is_answer(const struct rp_msg *m)
{
	return m->kind == MT_RESPONSE || m->kind == MT_ERROR;
}

/* Run r's live answer to recorded request q, parsed (a new reference), or NULL. */
static json_t *live_answer(const struct vrun *r, size_t q)
{
	return r->got_ns[q] ? rp_parse(r->raw[q].data, r->raw[q].len) : NULL;
}

/* Was request q's recorded answer given after the client had cancelled it? */
static int answered_after_cancel(const struct rp_msg *q)
{
	return q->cancelled_by >= 0 && (q->answer < 0 || q->answer > q->cancelled_by);
}

/*
 * Is a live answer to recorded request q worth waiting for, once it is sent?
 * (Over HTTP, a request whose recorded POST got an error status too: the live
 * status is its answer.)
 */
static int owes(const struct vrun *r, size_t q)
{
	const struct rp_msg *m = &r->s->m[q];

	return is_request(m) && !answered_after_cancel(m) &&
	       (m->answer >= 0 || (r->v->rec_status && r->v->rec_status[q]));
}

/* Is a live answer to recorded request q worth waiting for? */
static int awaited(const struct vrun *r, size_t q)
{
	return owes(r, q) && r->sent_ns[q] && !r->got_ns[q] && !r->gave_up[q];
}

/* Drop from owed the requests no longer awaited; how many are left. */
static size_t still_owed(struct vrun *r)
{
	size_t k = 0;

	for (size_t j = 0; j < r->nowed; j++)
		if (awaited(r, r->owed[j]))
			r->owed[k++] = r->owed[j];
	r->nowed = k;
	return k;
}

static json_t *counterpart(void *ctx, size_t j)
{
	struct vrun *r = ctx;
	const struct rp_msg *m = &r->s->m[j];

	if (m->c2s)
		return NULL;
	if (is_answer(m) && m->request >= 0)
		return live_answer(r, (size_t)m->request);
	if (m->kind == MT_REQUEST)
		return json_incref(r->sreq[j]);
	return NULL;
}

static void send_json(struct vrun *r, json_t *msg, int64_t tag)
{
	char *text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (text)
		r->v->w->put(r, text, strlen(text), tag);
	free(text);
}

/* Take in one line from the live server. */
static void take_line(struct vrun *r, const char *line, size_t n)
{
	struct mt_class c;
	json_t *msg;

	mt_classify(line, n, &c);
	if (c.kind > MT_ERROR)
		return; /* not JSON-RPC: the analyzer's business, not replay's */
	if (!(msg = rp_parse(line, n)))
		return;
	if (c.kind == MT_RESPONSE || c.kind == MT_ERROR) {
		char *key = json_dumps(json_object_get(msg, "id"), JSON_COMPACT | JSON_ENCODE_ANY);
		int64_t q;
		if (key && mt_map_take(&r->by_id, key, strlen(key), &q) && !r->got_ns[q]) {
			mt_buf_reset(&r->raw[q]);
			mt_buf_append(&r->raw[q], line, n);
			r->got_ns[q] = mt_mono_ns();
		}
		free(key);
	} else if (c.kind == MT_REQUEST) {
		const char *method = json_string_value(json_object_get(msg, "method"));
		const char *name = rp_name(r->s, method);
		int answerable = 0;
		for (size_t i = 0; name && i < r->nanswerable && !answerable; i++)
			answerable = r->answerable[i] == name;
		if (answerable) {
			json_array_append_new(r->pending, json_pack("{s:s,s:O,s:O,s:I}", "method", method,
								    "id", json_object_get(msg, "id"), "msg",
								    msg, "t", (json_int_t)mt_mono_ns()));
		} else {
			/* The recorded client never answered such a request: say so, so that
			 * the server is not left waiting. */
			json_t *e =
				json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
					  json_object_get(msg, "id"), "error", "code", -32601, "message",
					  "mcptap replay: the recorded client never answered this request");
			send_json(r, e, -1);
			json_decref(e);
		}
	}
	json_decref(msg);
}

/* What went wrong instead of recorded client message q's answer in run r, or NULL. */
static json_t *fail_of(const struct vrun *r, size_t q)
{
	char key[32];

	if (!r->fails)
		return NULL;
	snprintf(key, sizeof(key), "%zu", q);
	return json_object_get(r->fails, key);
}

/* The HTTP error status recorded client message q's POST got, or 0. */
static int rec_status(const struct verify *v, size_t q)
{
	return v->rec_status ? v->rec_status[q] : 0;
}

/* Add to the report: each line, once whole, goes to the caller (o->line). */
static void say(struct verify *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct verify *v, const char *fmt, ...)
{
	va_list ap;
	char *text, *nl;
	size_t done = 0;

	va_start(ap, fmt);
	text = mt_vasprintf(fmt, ap);
	va_end(ap);
	mt_buf_puts(&v->line, text);
	free(text);
	while ((nl = memchr(v->line.data + done, '\n', v->line.len - done))) {
		size_t n = (size_t)(nl - v->line.data) + 1 - done;
		char keep = v->line.data[done + n];
		v->line.data[done + n] = '\0';
		v->o->line(v->o->line_ctx, v->line.data + done);
		v->line.data[done + n] = keep;
		done += n;
	}
	if (done) {
		memmove(v->line.data, v->line.data + done, v->line.len - done + 1);
		v->line.len -= done;
	}
}

/* Say a NOTE line once per verify (the same note from every run is one). */
static void note(struct verify *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct verify *v, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!json_object_get(v->notes, text)) {
		json_object_set_new(v->notes, text, json_true());
		say(v, "NOTE %s\n", text);
	}
}

/*
 * The wire says what was sent for recorded message in->tag got no answer, or
 * a bad one. A request keeps it for its judgment (and is no longer waited
 * for); a 404 for a session that the recording did not get ends the run (the
 * server no longer knows the session). Anything else is a NOTE.
 */
static void took_failure(struct vrun *r, const struct win *in)
{
	struct verify *v = r->v;
	struct rp_script *s = r->s;
	struct mt_buf what = MT_BUF_INIT;
	char key[32];

	if (in->tag < 0 || (size_t)in->tag >= s->n) {
		note(v, "the server refused %s: %s",
		     in->tag == -2 ? "to end the session (DELETE)" : "an answer mcptap made up", in->text);
		return;
	}
	size_t q = (size_t)in->tag;
	const struct rp_msg *m = &s->m[q];
	if (in->expired && rec_status(v, q) != 404) {
		r->expired = 1;
		free(r->end_text);
		r->end_text = mt_strdup("no longer knows the session (HTTP 404 to its Mcp-Session-Id: "
					"it expired, or the server forgot it)");
		r->gone = 1;
		return;
	}
	if (is_request(m)) {
		snprintf(key, sizeof(key), "%zu", q);
		if (!r->fails)
			r->fails = json_object();
		json_object_set_new(r->fails, key,
				    json_pack("{s:s,s:i,s:s}", "why",
					      in->why == HC_STATUS ? "status"
					      : in->why == HC_BODY ? "body"
								   : "lost",
					      "status", in->status, "text", in->text));
		r->gave_up[q] = 1;
		return;
	}
	if (in->why == HC_STATUS && in->status == rec_status(v, q))
		return; /* as recorded */
	if (is_answer(m) && m->request >= 0) {
		rp_describe(s, (size_t)m->request, &what);
		note(v, "#%lld the answer to #%lld %s: %s", (long long)m->seq,
		     (long long)s->m[m->request].seq, what.data, in->text);
	} else {
		note(v, "#%lld %s: %s", (long long)m->seq, m->method ? m->method : "?", in->text);
	}
	mt_buf_release(&what);
}

/*
 * Read the server until pred holds or deadline_ns (0: the answer timeout)
 * passes; 0 when it held. A timeout gives up on every answer still owed (each
 * costs at most one timeout); the server's end gives up on all of them.
 */
static int wait_for(struct vrun *r, int (*pred)(struct vrun *, size_t), size_t arg, int64_t deadline_ns)
{
	int64_t deadline = deadline_ns ? deadline_ns : mt_mono_ns() + (int64_t)r->timeout_ms * 1000000;
	struct win in;

	while (!pred(r, arg)) {
		int64_t left = (deadline - mt_mono_ns()) / 1000000;
		int rc = r->gone ? W_GONE : left > 0 ? r->v->w->next(r, (int)left, &in) : W_TIMEOUT;
		if (rc == W_MSG) {
			take_line(r, in.p, in.n);
			continue;
		}
		if (rc == W_FAILED) {
			took_failure(r, &in);
			if (!r->gone)
				continue;
			rc = W_GONE;
		}
		if (rc == W_NOTE) {
			if (in.status != 405 || r->v->had_get)
				note(r->v, "%s", in.text);
			continue;
		}
		if (rc == W_TIMEOUT && deadline_ns)
			return -1; /* a pacing deadline: nothing was owed */
		for (size_t j = 0, n_owed = still_owed(r); j < n_owed; j++)
			r->gave_up[r->owed[j]] = 1;
		r->nowed = 0;
		if (rc == W_GONE)
			r->gone = 1;
		return -1;
	}
	return 0;
}

/* Have the answers arrived that the recording had before message i was sent? */
static int answers_before(struct vrun *r, size_t i)
{
	/* (Everything sent comes before i: messages go out in order.) */
	for (size_t j = 0, n_owed = still_owed(r); j < n_owed; j++)
		if ((size_t)r->s->m[r->owed[j]].answer < i)
			return 0;
	return 1;
}

static int never(struct vrun *r, size_t i)
{
	(void)r;
	(void)i;
	return 0;
}

static int all_answered(struct vrun *r, size_t unused)
{
	(void)unused;
	return !still_owed(r);
}

/* Is a live server request with the method of recorded server request i waiting? */
static int server_request_waiting(struct vrun *r, size_t i)
{
	const char *method = r->s->m[i].method;

	for (size_t k = 0; k < json_array_size(r->pending); k++)
		if (method && !strcmp(method, json_string_value(json_object_get(json_array_get(r->pending, k),
										"method"))))
			return 1;
	return 0;
}

/* When the live request standing for recorded server request j arrived (0: not yet). */
static int64_t server_request_arrival(const struct vrun *r, size_t j)
{
	const char *method = r->s->m[j].method;

	for (size_t k = 0; method && k < json_array_size(r->pending); k++) {
		json_t *lr = json_array_get(r->pending, k);
		if (!strcmp(method, json_string_value(json_object_get(lr, "method"))))
			return (int64_t)json_integer_value(json_object_get(lr, "t"));
	}
	return 0;
}

/*
 * Keep the recorded pace: message i goes out the recorded delay after the
 * latest event before it that this run can see: the previous client message
 * going out, a recorded answer to a client request arriving, or (for the
 * client's answer to a server request) that request arriving.
 */
static void pace(struct vrun *r, size_t i)
{
	const struct rp_script *s = r->s;
	const struct rp_msg *m = &s->m[i];
	int64_t rec_t = 0, live_t = 0;

	if (is_answer(m) && m->request >= 0) {
		int64_t at = server_request_arrival(r, (size_t)m->request);
		if (at) {
			rec_t = s->m[m->request].t_ns;
			live_t = at;
		}
	}

	if (r->last_sent >= 0 && s->m[r->last_sent].t_ns >= rec_t) {
		rec_t = s->m[r->last_sent].t_ns;
		live_t = r->sent_ns[r->last_sent];
	}
	for (size_t j = r->last_sent >= 0 ? (size_t)r->last_sent + 1 : 0; j < i; j++) {
		const struct rp_msg *a = &s->m[j];
		if (!a->c2s && is_answer(a) && a->request >= 0 && r->got_ns[a->request] && a->t_ns >= rec_t) {
			rec_t = a->t_ns;
			live_t = r->got_ns[a->request];
		}
	}
	if (!live_t || m->t_ns <= rec_t)
		return;
	int64_t due = live_t + (m->t_ns - rec_t);
	if (due > mt_mono_ns())
		(void)wait_for(r, never, 0, due);
}

/* Send recorded client message i as this run needs it. */
static void send_one(struct vrun *r, size_t i)
{
	struct rp_script *s = r->s;
	const struct rp_msg *m = &s->m[i];
	json_t *msg = NULL, *live_id = NULL;
	struct mt_buf out = MT_BUF_INIT;
	int bad = 0;

	if (is_answer(m)) {
		/* An answer goes to the live request that stands for the recorded one. */
		const char *method = m->request >= 0 ? s->m[m->request].method : NULL;
		for (size_t k = 0; k < json_array_size(r->pending); k++) {
			json_t *lr = json_array_get(r->pending, k);
			if (method && !strcmp(method, json_string_value(json_object_get(lr, "method")))) {
				live_id = json_incref(json_object_get(lr, "id"));
				json_decref(r->sreq[m->request]);
				r->sreq[m->request] = json_incref(json_object_get(lr, "msg"));
				json_array_remove(r->pending, k);
				break;
			}
		}
		if (!live_id)
			return;
	}
	/* (A message that cannot be read back is not sent: the run's end says why.) */
	if (rp_json(s, i, &msg, NULL)) {
		bad = 1;
	} else if (msg && mint_substitute(r->origins, i, msg, counterpart, r, r->subs)) {
		if (live_id)
			json_object_set(msg, "id", live_id);
		send_json(r, msg, (int64_t)i);
	} else if (live_id) {
		char *id = json_dumps(live_id, JSON_COMPACT | JSON_ENCODE_ANY);
		if (id)
			bad = rp_render(s, i, id, strlen(id), NULL, 0, &out, NULL);
		free(id);
	} else {
		bad = rp_render(s, i, NULL, 0, NULL, 0, &out, NULL);
	}
	if (out.len) /* (without the newline rp_render ends it with) */
		r->v->w->put(r, out.data, out.data[out.len - 1] == '\n' ? out.len - 1 : out.len, (int64_t)i);
	if (!bad && m->kind == MT_REQUEST) {
		/* The recorded id goes out as it was: its answer is looked up by it. */
		json_t *id = json_object_get(msg, "id");
		char *key = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (key)
			mt_map_put(&r->by_id, key, strlen(key), (int64_t)i);
		free(key);
	}
	r->sent_ns[i] = mt_mono_ns();
	r->last_sent = (int64_t)i;
	if (owes(r, i)) {
		if (r->nowed == r->owed_cap) {
			r->owed_cap = r->owed_cap ? 2 * r->owed_cap : 16;
			r->owed = mt_realloc(r->owed, r->owed_cap * sizeof(*r->owed));
		}
		r->owed[r->nowed++] = i;
	}
	json_decref(msg);
	json_decref(live_id);
	mt_buf_release(&out);
}

static void run_init(struct vrun *r, struct verify *v)
{
	size_t n = v->s->n ? v->s->n : 1;

	memset(r, 0, sizeof(*r));
	r->s = v->s;
	r->v = v;
	r->timeout_ms = v->o->timeout_ms;
	r->origins = v->origins;
	r->answerable = v->answerable;
	r->nanswerable = v->nanswerable;
	r->raw = mt_calloc(n, sizeof(*r->raw));
	r->sreq = mt_calloc(n, sizeof(*r->sreq));
	r->sent_ns = mt_calloc(n, sizeof(*r->sent_ns));
	r->got_ns = mt_calloc(n, sizeof(*r->got_ns));
	r->gave_up = mt_calloc(n, 1);
	mt_map_init(&r->by_id, 0);
	r->pending = json_array();
	r->subs = json_object();
	r->last_sent = -1;
	r->pid = -1;
	r->io.rfd = r->io.wfd = -1;
}

static void run_release(struct vrun *r)
{
	for (size_t i = 0; i < r->s->n; i++) {
		json_decref(r->sreq[i]);
		mt_buf_release(&r->raw[i]);
	}
	free(r->raw);
	free(r->sreq);
	free(r->sent_ns);
	free(r->got_ns);
	free(r->gave_up);
	free(r->owed);
	mt_map_release(&r->by_id);
	json_decref(r->pending);
	json_decref(r->subs);
	json_decref(r->fails);
	free(r->end_text);
	hc_free(r->hc);
	lio_release(&r->io);
}

/* ---- the stdio wire: the server is a child process, its stdin and stdout a channel ---- */

/* Reap the server without waiting long: it closed its output, so it is ending. */
static void reap(struct vrun *r, int patience_ms)
{
	for (int t = 0; !r->reaped && t <= patience_ms / 10; t++) {
		if (waitpid(r->pid, &r->status, WNOHANG) == r->pid)
			r->reaped = 1;
		else if (t < patience_ms / 10)
			usleep(10000);
	}
}

static int stdio_start(struct verify *v, struct vrun *r)
{
	int to[2] = {-1, -1}, from[2] = {-1, -1}, fds[3], e;

	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) {
		mt_err_set(v->err, "cannot create pipes: %s", strerror(errno));
		for (int k = 0; k < 2; k++) {
			if (to[k] >= 0)
				close(to[k]);
			if (from[k] >= 0)
				close(from[k]);
		}
		return EXIT_ERROR;
	}
	fds[0] = to[0];
	fds[1] = from[1];
	fds[2] = -1;
	e = child_spawn(v->o->argv, fds, NULL, &r->pid);
	close(to[0]);
	close(from[1]);
	if (e) {
		mt_err_set(v->err, "cannot run '%s': %s", v->o->argv[0], strerror(e));
		close(to[1]);
		close(from[0]);
		r->pid = -1;
		return e == ENOENT ? 127 : 126;
	}
	lio_init(&r->io, from[0], to[1], 0);
	/* A server that stops reading must not hold us past the timeouts. */
	if (lio_nonblock(&r->io))
		mt_voice_warn(&v->o->voice, "replay: cannot make the pipe to the server non-blocking: %s",
			      strerror(errno));
	return 0;
}

static void stdio_put(struct vrun *r, const char *p, size_t n, int64_t tag)
{
	(void)tag;
	lio_put(&r->io, p, n);
	lio_put(&r->io, "\n", 1);
	r->write_failed = r->io.write_failed;
}

static int stdio_next(struct vrun *r, int timeout_ms, struct win *in)
{
	int rc = lio_next(&r->io, timeout_ms, &in->p, &in->n);

	r->write_failed = r->io.write_failed;
	if (rc == LIO_LINE)
		return W_MSG;
	if (rc == LIO_TIMEOUT)
		return W_TIMEOUT;
	reap(r, 2000);
	return W_GONE;
}

static void stdio_drain(struct vrun *r)
{
	if (lio_drain(&r->io, r->timeout_ms) && !r->io.write_failed)
		mt_voice_warn(&r->v->o->voice,
			      "replay: the server did not read all the requests within %d ms", r->timeout_ms);
}

/* Done: close the server's stdin (its cue to exit), then wait a little. */
static void stdio_stop(struct vrun *r)
{
	if (r->io.wfd >= 0)
		close(r->io.wfd);
	r->io.wfd = -1;
	if (r->pid > 0) {
		reap(r, 5000);
		if (!r->reaped) {
			kill(r->pid, SIGTERM);
			reap(r, 200);
		}
		if (!r->reaped) {
			kill(r->pid, SIGKILL);
			if (waitpid(r->pid, &r->status, 0) == r->pid)
				r->reaped = 1;
		}
	}
	if (r->io.rfd >= 0)
		close(r->io.rfd);
	r->io.rfd = -1;
}

/* "exited with status 3" or "was killed by signal 9 (Killed)". */
static void stdio_describe_end(const struct vrun *r, struct mt_buf *out)
{
	if (!r->reaped)
		mt_buf_puts(out, "closed its output");
	else if (WIFSIGNALED(r->status))
		mt_buf_printf(out, "was killed by signal %d (%s)", WTERMSIG(r->status),
			      strsignal(WTERMSIG(r->status)));
	else
		mt_buf_printf(out, "exited with status %d", WEXITSTATUS(r->status));
}

static const struct vwire stdio_wire = {
	stdio_start, stdio_put, stdio_next, NULL, stdio_drain, stdio_stop, stdio_describe_end,
};

/* ---- the HTTP wire: a fresh MCP session of the server at the URL ---- */

/* The tag of a DELETE the recording made (the one a run ends with has none). */
#define TAG_DELETE (-2)
#define TAG_END (-3)

static int http_start(struct verify *v, struct vrun *r)
{
	struct hc_opts ho;
	struct mt_err err = {"", 0};

	memset(&ho, 0, sizeof(ho));
	ho.url = v->o->url;
	ho.legacy = v->legacy;
	ho.get_stream = v->get_stream;
	ho.cacert = v->o->cacert;
	ho.insecure = v->o->insecure;
	ho.headers = v->o->headers;
	ho.nheaders = v->o->nheaders;
	ho.connect_timeout_ms = v->o->timeout_ms;
	if (hc_open(&ho, &r->hc, &err)) {
		mt_err_set(v->err, "replay: %s", err.msg);
		return EXIT_ERROR;
	}
	r->unreached = 1;
	return 0;
}

static void http_put(struct vrun *r, const char *p, size_t n, int64_t tag)
{
	hc_post(r->hc, p, n, tag);
}

static int http_next(struct vrun *r, int timeout_ms, struct win *in)
{
	struct hc_event ev;
	int rc = hc_next(r->hc, timeout_ms, &ev);

	in->tag = ev.tag;
	in->status = ev.status;
	in->why = ev.why;
	in->expired = ev.expired;
	in->text = ev.text;
	switch (rc) {
	case HC_MESSAGE:
		r->unreached = 0;
		in->p = ev.data;
		in->n = ev.len;
		return W_MSG;
	case HC_FAILED: r->unreached = 0; return W_FAILED;
	case HC_NOTE: r->unreached = 0; return W_NOTE;
	case HC_GONE:
		if (!r->end_text)
			r->end_text = mt_strdup(ev.text);
		return W_GONE;
	default: return W_TIMEOUT;
	}
}

static void http_end_session(struct vrun *r)
{
	hc_delete(r->hc, TAG_DELETE);
}

static void http_drain(struct vrun *r)
{
	(void)hc_flush(r->hc, r->timeout_ms);
}

/*
 * The run's end. A session the recording did not end is ended here (DELETE,
 * which the server may refuse with 405), so that N runs leave no sessions
 * behind; then every stream is closed.
 */
static void http_stop(struct vrun *r)
{
	if (!r->gone) {
		if (!r->v->ndeletes && hc_session_id(r->hc) && !hc_deleted(r->hc))
			hc_delete(r->hc, TAG_END);
		/* (What is queued goes out: a recorded DELETE, a last notification.) */
		(void)hc_flush(r->hc, r->timeout_ms < 5000 ? r->timeout_ms : 5000);
	}
	hc_free(r->hc);
	r->hc = NULL;
}

static void http_describe_end(const struct vrun *r, struct mt_buf *out)
{
	mt_buf_printf(out, "at %s %s", r->v->cmd.data, r->end_text ? r->end_text : "went away");
}

static const struct vwire http_wire = {
	http_start, http_put, http_next, http_end_session, http_drain, http_stop, http_describe_end,
};

/* ---- a run ---- */

/* Make the recorded DELETEs of the session that came before seq (INT64_MAX: all). */
static void end_session_before(struct verify *v, struct vrun *r, int64_t seq)
{
	while (v->w->end_session && !r->gone && r->deletes_done < v->ndeletes &&
	       v->deletes[r->deletes_done] < seq) {
		v->w->end_session(r);
		r->deletes_done++;
	}
}

/* One live run: start the server (or session), play the recorded client, stop it. */
static int run_once(struct verify *v, struct vrun *r)
{
	const struct rp_script *s = v->s;
	int rc = v->w->start(v, r);

	if (rc)
		return rc;
	for (size_t i = 0; i < s->n && !r->gone; i++) {
		const struct rp_msg *m = &s->m[i];
		if (!m->c2s || m->kind > MT_ERROR)
			continue; /* what the client sent that was not JSON-RPC is not replayed */
		if (not_sendable(m))
			continue; /* judged REDACTED */
		/* Wait for what the recorded client had seen before it sent this. */
		(void)wait_for(r, answers_before, i, 0);
		if (r->gone)
			break;
		end_session_before(v, r, m->seq);
		if (is_answer(m) && m->request >= 0 &&
		    wait_for(r, server_request_waiting, (size_t)m->request, 0)) {
			if (r->gone)
				break;
			v->srv_missing++;
			say(v,
			    "MISSING server request %s (recorded #%lld): the client's answer #%lld "
			    "was not sent\n",
			    s->m[m->request].method ? s->m[m->request].method : "?",
			    (long long)s->m[m->request].seq, (long long)m->seq);
			continue;
		}
		if (!v->o->fast)
			pace(r, i);
		send_one(r, i);
		if (r->write_failed)
			break;
	}
	if (!r->gone)
		v->w->drain(r);
	(void)wait_for(r, all_answered, 0, 0);
	end_session_before(v, r, INT64_MAX);
	v->w->stop(r);
	return 0;
}

static void say_value(struct verify *v, const char *label, json_t *value)
{
	char *t = value ? json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	if (!t)
		say(v, " %s (absent)", label);
	else if (strlen(t) > 200)
		say(v, " %s %.200s...", label, t);
	else
		say(v, " %s %s", label, t);
	free(t);
}

/* Both kinds alike (results or errors): the paths where they differ; else the kind. */
static size_t compare(json_t *rec, json_t *live, const struct canon_ignore *ig, json_t *paths)
{
	if (json_object_get(rec, "result") && json_object_get(live, "result"))
		return canon_diff(json_object_get(rec, "result"), json_object_get(live, "result"), "result",
				  ig, MAX_PATHS, paths);
	if (json_object_get(rec, "error") && json_object_get(live, "error"))
		return canon_diff(json_object_get(rec, "error"), json_object_get(live, "error"), "error", ig,
				  MAX_PATHS, paths);
	json_array_append_new(paths, json_string(json_object_get(live, "result") ? "result" : "error"));
	return 1;
}

/*
 * Store recorded request q's result: what was sent (its recorded bytes), its
 * recorded answer, the first run's live one. A store that fails is said once;
 * the rest of the run is not stored.
 */
static void store_result(struct verify *v, size_t q, json_t *qmsg, const char *status, json_t *diff,
			 json_t *noise)
{
	struct rp_script *s = v->s;
	const struct rp_msg *m = &s->m[q];
	const struct vrun *r0 = &v->run[0];
	struct mt_err err = {"", 0};
	const char *p, *answer = NULL;
	size_t n, answer_len = 0;
	char *d, *nz;

	if (!v->st)
		return;
	/* The request's bytes are copied: reading its answer may read past them. */
	mt_buf_reset(&v->sent);
	if (!rp_read(s, q, &p, &n, NULL, NULL))
		mt_buf_append(&v->sent, p, n);
	if (m->answer >= 0 && rp_read(s, (size_t)m->answer, &answer, &answer_len, NULL, NULL))
		answer = NULL;
	d = json_array_size(diff) ? json_dumps(diff, JSON_COMPACT) : NULL;
	nz = json_array_size(noise) ? json_dumps(noise, JSON_COMPACT) : NULL;
	/* (No live answer, but what came instead: an HTTP error, a body that is not one.) */
	const char *instead = json_string_value(json_object_get(fail_of(r0, q), "text"));
	struct store_replay_result row = {
		.seq = m->seq,
		.method = m->method,
		.name = rp_subject(json_object_get(qmsg, "params")),
		.status = status,
		.sent = v->sent.data,
		.sent_len = v->sent.len,
		.recorded = answer,
		.recorded_len = answer_len,
		.live = r0->got_ns[q] ? r0->raw[q].data : instead,
		.live_len = r0->got_ns[q] ? r0->raw[q].len
			    : instead     ? strlen(instead)
					  : 0,
		.diff_json = d,
		.noise_json = nz,
	};
	if (store_add_replay_result(v->st, v->id, &row, &err)) {
		mt_voice_warn(&v->o->voice, "replay: the run is not stored in full: %s", err.msg);
		v->st = NULL;
	}
	free(d);
	free(nz);
}

/* Did a run that has no answer to q end because its server had gone? */
static int gone_without(const struct verify *v, size_t q)
{
	for (int k = 0; k < v->nrun; k++)
		if (!v->run[k].got_ns[q] && v->run[k].gone)
			return 1;
	return 0;
}

/* Why a run had no answer to q when it had gone: "the server had gone", or its session. */
static const char *gone_phrase(const struct verify *v, size_t q)
{
	for (int k = 0; k < v->nrun; k++)
		if (!v->run[k].got_ns[q] && v->run[k].gone)
			return v->run[k].expired ? "the session had ended (HTTP 404)" : "the server had gone";
	return "the server had gone";
}

/* Judge recorded request q over every run; print its line; count it. */
static void judge(struct verify *v, size_t q, struct mt_buf *what)
{
	struct rp_script *s = v->s;
	const struct rp_msg *m = &s->m[q];
	json_t *qmsg = NULL, *rec = NULL, *live[VERIFY_MAX_RUNS] = {NULL};
	json_t *diff = json_array(), *noise = json_array(), *set_aside = json_array();
	struct canon_ignore ig;
	int all_live = 1, sent = 1;

	(void)rp_json(s, q, &qmsg, NULL);
	if (m->answer >= 0)
		(void)rp_json(s, (size_t)m->answer, &rec, NULL);
	rp_describe(s, q, what);
	if (not_sendable(m)) {
		struct mt_buf paths = MT_BUF_INIT;
		json_t *list = json_array();
		redacted_paths(qmsg, &paths, list);
		v->redacted++;
		say(v,
		    "REDACTED #%lld %s: not sent: the tap stored %s redacted, so the value is "
		    "not known\n",
		    (long long)m->seq, what->data, paths.data ? paths.data : "a value");
		store_result(v, q, qmsg, "redacted", list, NULL);
		json_decref(list);
		mt_buf_release(&paths);
		goto out;
	}
	for (int k = 0; k < v->nrun; k++) {
		all_live &= v->run[k].got_ns[q] != 0;
		sent &= v->run[k].sent_ns[q] != 0;
	}
	if (m->cancelled_by >= 0 && (!rec || !all_live) && (m->answer < 0 || m->answer > m->cancelled_by)) {
		v->cancelled++;
		say(v, "CANCELLED #%lld %s: cancelled as recorded%s\n", (long long)m->seq, what->data,
		    all_live ? ", and answered anyway" : "");
		store_result(v, q, qmsg, "cancelled", NULL, NULL);
		goto out;
	}
	if (v->w == &http_wire) {
		/* An HTTP error status, or an answer that is not one, is the request's result. */
		int rs = rec_status(v, q), as_recorded = rs != 0, answered = 0;
		json_t *odd = NULL; /* the first run's failure that was not as recorded (borrowed) */
		for (int k = 0; k < v->nrun; k++) {
			json_t *f = fail_of(&v->run[k], q);
			const char *why = f ? json_string_value(json_object_get(f, "why")) : NULL;
			int st = f ? (int)json_integer_value(json_object_get(f, "status")) : 0;
			int same = why && !strcmp(why, "status") && st == rs;
			answered |= v->run[k].got_ns[q] != 0;
			as_recorded &= same;
			if (why && strcmp(why, "lost") && !same && !odd)
				odd = f;
		}
		if (as_recorded) {
			v->passed++;
			say(v, "PASS #%lld %s (HTTP %d, as recorded)\n", (long long)m->seq, what->data, rs);
			store_result(v, q, qmsg, "pass", NULL, NULL);
			goto out;
		}
		if ((odd && (rec || rs)) || (rs && answered)) {
			struct mt_buf why = MT_BUF_INIT;
			mt_buf_puts(&why, odd ? json_string_value(json_object_get(odd, "text")) : "answered");
			if (rs)
				mt_buf_printf(&why, ", where the recording had HTTP %d", rs);
			v->differed++;
			say(v, "DIFF #%lld %s: %s\n", (long long)m->seq, what->data, why.data);
			json_array_append_new(diff, json_string(why.data));
			store_result(v, q, qmsg, "diff", diff, NULL);
			mt_buf_release(&why);
			goto out;
		}
	}
	if (!rec && !rec_status(v, q)) {
		v->unanswered++;
		say(v, "UNANSWERED #%lld %s: the recorded server never answered it%s\n", (long long)m->seq,
		    what->data, all_live ? " (the live one did)" : "");
		store_result(v, q, qmsg, "unanswered", NULL, NULL);
		goto out;
	}
	if (!sent || !all_live) {
		const char *lost = NULL;
		for (int k = 0; k < v->nrun && !lost; k++) {
			json_t *f = fail_of(&v->run[k], q);
			if (f && !v->run[k].got_ns[q])
				lost = json_string_value(json_object_get(f, "text"));
		}
		v->missing++;
		if (!sent)
			say(v, "MISSING #%lld %s: not sent, %s\n", (long long)m->seq, what->data,
			    gone_phrase(v, q));
		else if (lost)
			say(v, "MISSING #%lld %s: not answered: %s\n", (long long)m->seq, what->data, lost);
		else if (gone_without(v, q))
			say(v, "MISSING #%lld %s: not answered, %s\n", (long long)m->seq, what->data,
			    gone_phrase(v, q));
		else
			say(v, "MISSING #%lld %s: no answer within %d ms\n", (long long)m->seq, what->data,
			    v->o->timeout_ms);
		store_result(v, q, qmsg, "missing", NULL, NULL);
		goto out;
	}
	for (int k = 0; k < v->nrun; k++)
		live[k] = live_answer(&v->run[k], q);
	rp_ignore_for(s, m->method, json_object_get(qmsg, "params"), &ig);
	/* Noise: where the live runs disagree with the first. */
	for (int k = 1; k < v->nrun; k++)
		(void)compare(live[0], live[k], &ig, noise);
	/* Differences: from the recording (minted values followed), in any run. */
	for (int k = 0; k < v->nrun; k++) {
		json_t *paths = json_array(), *recs = mint_apply(rec, v->run[k].subs);
		(void)compare(recs, live[k], &ig, paths);
		for (size_t p = 0; p < json_array_size(paths); p++) {
			json_t *path = json_array_get(paths, p);
			json_t *into = mint_is_noise(noise, json_string_value(path)) ? set_aside : diff;
			int seen = 0;
			for (size_t e = 0; e < json_array_size(into) && !seen; e++)
				seen = json_equal(json_array_get(into, e), path);
			if (!seen)
				json_array_append(into, path);
		}
		json_decref(recs);
		json_decref(paths);
	}
	free((void *)ig.paths);
	v->noise += json_array_size(set_aside);
	if (!json_array_size(diff)) {
		v->passed++;
		say(v, "PASS #%lld %s", (long long)m->seq, what->data);
		if (json_array_size(set_aside))
			say(v, " (%zu noisy path%s set aside)", json_array_size(set_aside),
			    json_array_size(set_aside) == 1 ? "" : "s");
		say(v, "\n");
	} else {
		v->differed++;
		say(v, "DIFF #%lld %s:", (long long)m->seq, what->data);
		for (size_t k = 0; k < json_array_size(diff) && k < 8; k++)
			say(v, "%s %s", k ? "," : "", json_string_value(json_array_get(diff, k)));
		if (json_array_size(diff) > 8)
			say(v, " (+%zu more)", json_array_size(diff) - 8);
		say(v, "\n");
	}
	if (v->o->verbose) {
		for (size_t k = 0; k < json_array_size(diff); k++) {
			const char *path = json_string_value(json_array_get(diff, k));
			json_t *recs = mint_apply(rec, v->run[0].subs);
			say(v, "    %s:", path);
			say_value(v, "recorded", canon_value_at(recs, path));
			say_value(v, "live", canon_value_at(live[0], path));
			say(v, "\n");
			json_decref(recs);
		}
		for (size_t k = 0; k < json_array_size(set_aside); k++) {
			const char *path = json_string_value(json_array_get(set_aside, k));
			say(v, "    noise %s:", path);
			say_value(v, "recorded", canon_value_at(rec, path));
			for (int r = 0; r < v->nrun; r++) {
				char label[32];
				snprintf(label, sizeof(label), "run %d", r + 1);
				say_value(v, label, canon_value_at(live[r], path));
			}
			say(v, "\n");
		}
	}
	store_result(v, q, qmsg, json_array_size(diff) ? "diff" : "pass", diff, set_aside);
out:
	for (int k = 0; k < v->nrun; k++)
		json_decref(live[k]);
	json_decref(qmsg);
	json_decref(rec);
	json_decref(diff);
	json_decref(noise);
	json_decref(set_aside);
}

/* ---- what an HTTP recording says ---- */

static int plan_exchange(const struct store_exchange_row *x, void *ctx)
{
	struct verify *v = ctx;

	if (!x->method)
		return 0;
	if (!strcmp(x->method, "GET")) {
		v->had_get = 1;
	} else if (!strcmp(x->method, "DELETE")) {
		v->deletes = mt_realloc(v->deletes, (v->ndeletes + 1) * sizeof(*v->deletes));
		v->deletes[v->ndeletes++] = x->seq;
	}
	return 0;
}

/*
 * How to talk to the server at the URL, from the recording: legacy HTTP+SSE
 * for a legacy recording (transport sse), else Streamable HTTP (or as
 * o->transport forces); the GET stream where the recording had one (always,
 * for a recording that was not over HTTP: a 405 is fine then); the session's
 * recorded DELETEs; the HTTP error status each client message got. 0, or -1
 * with err set.
 */
static int http_plan(struct verify *v, struct mt_err *err)
{
	struct rp_script *s = v->s;
	struct store_session_row row;
	int http, rc = -1;

	memset(&row, 0, sizeof(row));
	if (store_session_get(s->st, s->session, &row, err))
		return -1;
	http = row.transport && strcmp(row.transport, "stdio");
	v->legacy = v->o->transport == VERIFY_LEGACY ||
		    (v->o->transport == VERIFY_AUTO && row.transport && !strcmp(row.transport, "sse"));
	if (http && (store_each_exchange(s->st, s->session, plan_exchange, v, err) < 0 ||
		     rp_error_statuses(s, &v->rec_status, err)))
		goto out;
	v->get_stream = !v->legacy && (!http || v->had_get);
	rc = 0;
out:
	store_session_row_release(&row);
	return rc;
}

/*
 * --reset: cmd with /bin/sh before run k of n, its output on stderr (stdout
 * is the report's), its input /dev/null. 0 when it exited 0, else -1 with
 * err set.
 */
static int run_reset(const char *cmd, int k, int n, struct mt_err *err)
{
	pid_t pid;
	int st = 0;

	pid = fork();
	if (pid < 0)
		return mt_err_set(err, "replay: cannot run --reset: %s", strerror(errno));
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != 0) {
			dup2(fd, 0);
			close(fd);
		}
		dup2(2, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return mt_err_set(err, "replay: --reset: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		return mt_err_set(err, "replay: --reset '%s' was killed by signal %d before run %d of %d",
				  cmd, WTERMSIG(st), k, n);
	return mt_err_set(err, "replay: --reset '%s' exited with status %d before run %d of %d", cmd,
			  WEXITSTATUS(st), k, n);
}

int verify_run(struct rp_script *s, const struct verify_opts *o, struct mt_err *fail)
{
	struct verify v;
	struct mt_err err = {"", 0};
	struct mt_buf what = MT_BUF_INIT, end = MT_BUF_INIT, prev_end = MT_BUF_INIT;
	int64_t t0 = mt_mono_ns();
	int rc = EXIT_ERROR;

	memset(&v, 0, sizeof(v));
	v.s = s;
	v.o = o;
	v.err = fail;
	v.nrun = o->runs > 0 ? o->runs : 1;
	if (v.nrun > VERIFY_MAX_RUNS)
		v.nrun = VERIFY_MAX_RUNS;
	if (!(v.origins = mint_index(s, &err))) {
		mt_err_set(fail, "replay: cannot read the recording: %s", err.msg);
		goto out;
	}
	/* The server requests the recorded client answered, by method. */
	for (size_t i = 0; i < s->n; i++) {
		const struct rp_msg *m = &s->m[i];
		size_t k = 0;
		if (m->c2s || m->kind != MT_REQUEST || !m->method || m->answer < 0)
			continue;
		while (k < v.nanswerable && v.answerable[k] != m->method)
			k++;
		if (k == v.nanswerable) {
			v.answerable = mt_realloc(v.answerable, (k + 1) * sizeof(*v.answerable));
			v.answerable[v.nanswerable++] = m->method;
		}
	}
	v.w = o->url ? &http_wire : &stdio_wire;
	v.notes = json_object();
	if (o->url) {
		/* The URL as said and stored: its credentials redacted. */
		unsigned char key[16];
		struct mt_err kerr = {"", 0};
		struct mt_redact *red;
		(void)mt_redact_load_key(key, &kerr);
		red = mt_redact_new(key);
		if (!mt_redact_url(red, o->url, strlen(o->url), &v.cmd))
			mt_buf_puts(&v.cmd, o->url);
		mt_redact_free(red);
		if (http_plan(&v, &err)) {
			mt_err_set(fail, "replay: cannot read the recording's HTTP exchanges: %s", err.msg);
			goto out;
		}
	} else {
		for (size_t i = 0; o->argv[i]; i++) {
			if (i)
				mt_buf_putc(&v.cmd, ' ');
			mt_shell_quote(&v.cmd, o->argv[i]);
		}
	}
	v.run = mt_calloc((size_t)v.nrun, sizeof(*v.run));
	for (int k = 0; k < v.nrun; k++)
		run_init(&v.run[k], &v);
	for (int k = 0; k < v.nrun; k++) {
		struct vrun *r = &v.run[k];
		/* (What was said goes out first: the command's output follows it.) */
		if (o->reset)
			o->line(o->line_ctx, NULL);
		if (o->reset && run_reset(o->reset, k + 1, v.nrun, fail)) {
			rc = EXIT_ERROR;
			goto out;
		}
		int e = run_once(&v, r);
		if (e) {
			rc = e;
			goto out;
		}
		if (r->gone) {
			/* The server's end, once (again only if it ended otherwise; a server
			 * that went away and cannot be reached in a later run is one end). */
			size_t owed = 0;
			for (size_t q = 0; q < s->n; q++)
				owed += owes(r, q) && !r->got_ns[q] && !fail_of(r, q);
			mt_buf_reset(&end);
			v.w->describe_end(r, &end);
			if ((!prev_end.len || strcmp(prev_end.data, end.data)) &&
			    !(r->unreached && v.gone_said)) {
				const struct rp_msg *last = r->last_sent >= 0 ? &s->m[r->last_sent] : NULL;
				if (last)
					rp_describe(s, (size_t)r->last_sent, &what);
				say(&v,
				    "GONE the server %s %s #%lld %s (run %d of %d): %zu request%s "
				    "left without an answer\n",
				    end.data, r->unreached ? "at" : "after",
				    last ? (long long)last->seq : 0LL, last ? what.data : "", k + 1, v.nrun,
				    owed, owed == 1 ? "" : "s");
				v.gone_said = 1;
			}
			mt_buf_reset(&prev_end);
			mt_buf_puts(&prev_end, end.data);
		}
	}
	if (o->st) {
		struct store_replay_run row = {s->session,     mt_wall_us(), v.cmd.data,
					       o->ignore_json, "client",     v.nrun};
		if (store_add_replay_run(o->st, &row, &v.id, &err))
			mt_voice_warn(&o->voice, "replay: the run is not stored in '%s': %s", o->store_path,
				      err.msg);
		else
			v.st = o->st;
	}
	for (size_t q = 0; q < s->n; q++) {
		const struct rp_msg *m = &s->m[q];
		/* What the recorded client sends that holds markers, and is sent all
		 * the same: initialize, notifications, answers to the server's requests. */
		if (m->c2s && m->redacted && !not_sendable(m)) {
			struct mt_buf paths = MT_BUF_INIT;
			json_t *msg = NULL;
			(void)rp_json(s, q, &msg, NULL);
			redacted_paths(msg, &paths, NULL);
			json_decref(msg);
			if (is_answer(m) && m->request >= 0) {
				rp_describe(s, (size_t)m->request, &what);
				say(&v,
				    "NOTE #%lld the answer to #%lld %s carries values the tap redacted "
				    "(%s): sent with the markers in their place\n",
				    (long long)m->seq, (long long)s->m[m->request].seq, what.data,
				    paths.data ? paths.data : "?");
			} else {
				rp_describe(s, q, &what);
				say(&v,
				    "NOTE #%lld %s carries values the tap redacted (%s): sent with the "
				    "markers in their place%s\n",
				    (long long)m->seq, what.data, paths.data ? paths.data : "?",
				    is_request(m) ? ", since the session needs it" : "");
			}
			mt_buf_release(&paths);
		}
	}
	for (size_t q = 0; q < s->n; q++)
		if (is_request(&s->m[q]))
			judge(&v, q, &what);
	if (v.nrun == 1 && v.differed)
		say(&v, "NOTE one run cannot tell noise from a change: values that differ on every "
			"run (times, random ids) count as differences; --runs 2 or more sets them "
			"aside, and --reset CMD puts a stateful server's data back before each run\n");
	size_t total = v.passed + v.differed + v.missing + v.cancelled + v.unanswered + v.redacted;
	say(&v,
	    "replay: %zu request%s: %zu passed, %zu differed, %zu missing, %zu cancelled, "
	    "%zu unanswered; %zu path%s set aside as noise over %d run%s (session %lld against %s)",
	    total, total == 1 ? "" : "s", v.passed, v.differed, v.missing, v.cancelled, v.unanswered, v.noise,
	    v.noise == 1 ? "" : "s", v.nrun, v.nrun == 1 ? "" : "s", (long long)s->session, v.cmd.data);
	if (v.redacted)
		say(&v, "; %zu not sent: %s values the tap redacted", v.redacted,
		    v.redacted == 1 ? "it carries" : "they carry");
	if (v.srv_missing)
		say(&v, "; %zu server request%s missing (the client's answer not sent)", v.srv_missing,
		    v.srv_missing == 1 ? "" : "s");
	say(&v, "\n");
	v.o->line(v.o->line_ctx, NULL);
	struct store_replay_totals tot = {mt_mono_ns() - t0,  (int64_t)v.passed, (int64_t)v.differed,
					  (int64_t)v.missing, (int64_t)v.noise,  NULL};
	if (v.st && store_finish_replay_run(v.st, v.id, &tot, &err))
		mt_voice_warn(&o->voice, "replay: the run is not stored in full: %s", err.msg);
	rc = v.differed || v.missing || v.srv_missing ? EXIT_FINDINGS : EXIT_OK;
	if (s->read_errors) {
		mt_err_set(fail, "replay: cannot read the recording: %s", s->read_err.msg);
		rc = EXIT_ERROR;
	}
out:
	for (int k = 0; v.run && k < v.nrun; k++)
		run_release(&v.run[k]);
	free(v.run);
	free(v.answerable);
	free(v.deletes);
	free(v.rec_status);
	json_decref(v.notes);
	json_decref(v.origins);
	mt_buf_release(&v.cmd);
	mt_buf_release(&v.sent);
	mt_buf_release(&v.line);
	mt_buf_release(&what);
	mt_buf_release(&end);
	mt_buf_release(&prev_end);
	return rc;
}
