/*
 * rules/flow.c - the utilities that run alongside requests (MCP-RULES §3.2 to
 * §3.4): ping, cancellation and progress.
 *
 * Thresholds (heuristics the spec leaves open):
 *   PING-001  a ping answered later than --timeout-ms (default PING_LATE_NS) is
 *             not "prompt"; one left unanswered while the session went on that
 *             long was never answered.
 *   PING-003  more than PING_BURST pings from one side within PING_WINDOW_NS.
 *   CANCEL-001/003  races are legal: an answer and a cancel that cross within
 *             CANCEL_GRACE_NS of each other are not findings.
 *   PROG-009  more than PROG_BURST progress notifications from one side within
 *             PROG_WINDOW_NS.
 *
 * The tracker keeps, under st->ext "flow":
 *   "ping_start0", "ping_count0", "ping_flag0" (and ...1): the ping rate window
 *       per sender (0 = client, 1 = server), and whether PING-003 fired;
 *   "prog_start0", "prog_count0", "prog_flag0" (and ...1): the same for progress;
 *   "init_ok", "init_error": the seq of the latest first answer to a client
 *       initialize that was a result / an error (read by LIFE-004 in
 *       rules/life.c: the engine follows only the first initialize).
 * The engine keeps on each request the last progress for its token and the
 * task it created (and that task's end), for as long as it keeps the request:
 * a progress token that is in no request it keeps is in no active request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"

#define MS 1000000LL
#define PING_LATE_NS (5000 * MS)
#define PING_BURST 10
#define PING_WINDOW_NS (10000 * MS)
#define CANCEL_GRACE_NS (1000 * MS)
#define PROG_BURST 100
#define PROG_WINDOW_NS (1000 * MS)
/* At most this many findings at the end of a session, then one that counts the rest. */
#define END_REPORTS 20

/* ---- helpers ---- */

/* v as compact JSON into buf, shortened with "..." to fit; buf is returned. */
static const char *show(json_t *v, char *buf, size_t n)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	if (!s)
		snprintf(buf, n, "(none)");
	else if (strlen(s) < n)
		snprintf(buf, n, "%s", s);
	else
		snprintf(buf, n, "%.*s...", (int)(n - 4), s);
	free(s);
	return buf;
}

static int64_t get_int(json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

static void set_int(json_t *obj, const char *key, int64_t v)
{
	json_t *old = json_object_get(obj, key);

	if (json_is_integer(old))
		json_integer_set(old, v);
	else
		json_object_set_new(obj, key, json_integer(v));
}

/* This family's tracker state (borrowed), or NULL before the tracker ran. */
static json_t *flow_ext(const struct an_state *st)
{
	return json_object_get(st->ext, "flow");
}

static enum an_dir peer_of(enum an_dir d)
{
	return d == AN_C2S ? AN_S2C : AN_C2S;
}

/* The task a task-augmented request created, its status, or NULL (borrowed). */
static const char *task_status(const struct an_state *st, const struct an_request *r, const char **task_id)
{
	return an_req_task_status(st, r, task_id);
}

static int terminal(const char *status)
{
	return status &&
	       (!strcmp(status, "completed") || !strcmp(status, "failed") || !strcmp(status, "cancelled"));
}

/* Is the request still active: unanswered and not cancelled, or its task not yet terminal? */
static int request_active(const struct an_state *st, const struct an_request *r)
{
	const char *task;

	if (!r->answer_seq && !r->cancel_seq)
		return 1;
	return r->is_task && !terminal(task_status(st, r, &task));
}

/* The request (sent by `sender`) whose progress token has this key, or NULL. */
static struct an_request *token_request(const struct an_state *st, enum an_dir sender,
					const struct mt_buf *key)
{
	return key->data ? an_token_request(st, sender, key->data, key->len) : NULL;
}

/*
 * A rate window: is this event over `burst` in `window` ns, for the first
 * time? The tracker moves the window with window_step() after the rule ran.
 */
static int window_over(json_t *ext, const char *name, enum an_dir d, int64_t t, int64_t window, int64_t burst)
{
	char start[32], count[32], flag[32];

	snprintf(start, sizeof(start), "%s_start%d", name, (int)d);
	snprintf(count, sizeof(count), "%s_count%d", name, (int)d);
	snprintf(flag, sizeof(flag), "%s_flag%d", name, (int)d);
	if (!ext || get_int(ext, flag) || !json_object_get(ext, start))
		return 0;
	return t - get_int(ext, start) < window && get_int(ext, count) + 1 > burst;
}

static void window_step(json_t *ext, const char *name, enum an_dir d, int64_t t, int64_t window,
			int64_t burst)
{
	char start[32], count[32], flag[32];

	snprintf(start, sizeof(start), "%s_start%d", name, (int)d);
	snprintf(count, sizeof(count), "%s_count%d", name, (int)d);
	snprintf(flag, sizeof(flag), "%s_flag%d", name, (int)d);
	if (!json_object_get(ext, start) || t - get_int(ext, start) >= window) {
		set_int(ext, start, t);
		set_int(ext, count, 1);
		return;
	}
	set_int(ext, count, get_int(ext, count) + 1);
	if (get_int(ext, count) > burst)
		set_int(ext, flag, 1);
}

/* ---- ping ---- */

static int64_t ping_late(const struct an_state *st)
{
	return st->timeout_ns ? st->timeout_ns : PING_LATE_NS;
}

int an_ping_never_answered(const struct an_state *st, const struct an_request *r)
{
	return !r->answer_seq && !r->cancel_seq && !strcmp(r->method, "ping") && an_version_in(st, AN_ALL4) &&
	       st->last_t_ns - r->t_ns > ping_late(st);
}

static void ping_001(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	const struct an_msg *m = c->m;
	json_t *result, *err, *v;
	const char *key;

	if (!m) {
		/* The end: pings that stayed unanswered while the session went on. */
		size_t n = 0;
		for (const struct an_request *r = st->open_first; r; r = r->open_next) {
			if (!an_ping_never_answered(st, r) || n++ >= END_REPORTS)
				continue;
			an_report_at(c, -1, r->seq, NULL, 0,
				     "%s ping was never answered (the session went on for %lld ms)",
				     an_dir_arrow(r->dir), (long long)((st->last_t_ns - r->t_ns) / MS));
		}
		if (n > END_REPORTS)
			an_report(c, -1, "%zu more %s never answered", n - END_REPORTS,
				  n - END_REPORTS == 1 ? "ping was" : "pings were");
		return;
	}
	if (!m->req || m->req->answer_seq)
		return; /* no request or a second answer: RPC-004 */
	if (m->cls->kind == MT_ERROR) {
		err = an_error(c);
		an_report(c, -1, "ping #%lld was answered with error %lld '%s', not an empty result",
			  (long long)m->req->seq, (long long)json_integer_value(json_object_get(err, "code")),
			  json_is_string(json_object_get(err, "message"))
				  ? json_string_value(json_object_get(err, "message"))
				  : "");
		return;
	}
	result = an_result(c);
	json_object_foreach(result, key, v)
	{
		if (strcmp(key, "_meta")) {
			an_report(c, -1, "the answer to ping #%lld has member '%s': it must be empty",
				  (long long)m->req->seq, key);
			break;
		}
	}
	if (m->t_ns - m->req->t_ns > ping_late(st))
		an_report(c, AN_WARNING,
			  "ping #%lld was answered after %lld ms (more than %lld ms): "
			  "not promptly",
			  (long long)m->req->seq, (long long)((m->t_ns - m->req->t_ns) / MS),
			  (long long)(ping_late(st) / MS));
}

static void ping_002(const struct an_ctx *c)
{
	json_t *params = an_params(c);
	const char *key;
	json_t *v;

	json_object_foreach(params, key, v)
	{
		if (strcmp(key, "_meta")) {
			an_report(c, -1, "ping carries params.%s: a ping has no parameters", key);
			return;
		}
	}
}

static void ping_003(const struct an_ctx *c)
{
	if (window_over(flow_ext(c->st), "ping", c->m->dir, c->m->t_ns, PING_WINDOW_NS, PING_BURST))
		an_report(c, -1, "%s sent more than %d pings within %lld s: excessive pinging",
			  c->m->dir == AN_C2S ? "the client" : "the server", PING_BURST,
			  (long long)(PING_WINDOW_NS / 1000 / MS));
}

/* ---- cancellation ---- */

/* The cancelled request's id (borrowed), or NULL when there is none. */
static json_t *cancel_id(const struct an_ctx *c)
{
	return json_object_get(an_params(c), "requestId");
}

/* The request the cancel names, sent by the canceller; key gets its id key. */
static struct an_request *cancel_target(const struct an_ctx *c, json_t *rid, struct mt_buf *key)
{
	an_key_of(rid, key);
	return an_find_request(c->st, c->m->dir, key->data, key->len);
}

static void cancel_001(const struct an_ctx *c)
{
	json_t *rid = cancel_id(c);
	struct mt_buf key = MT_BUF_INIT;
	struct an_request *r, *other;
	char id[64];

	if (!rid)
		goto out; /* CANCEL-006/007 */
	r = cancel_target(c, rid, &key);
	if (!r) {
		/* A request the engine no longer keeps is one settled long ago: no race
		 * to time, nothing to say. */
		if (an_id_fate(c->st, c->m->dir, key.data, key.len) != AN_ID_UNUSED)
			goto out;
		other = an_find_request(c->st, peer_of(c->m->dir), key.data, key.len);
		if (other)
			an_report(c, -1,
				  "requestId %s is #%lld %s, which the peer sent: a cancel goes in "
				  "the direction of the request it cancels",
				  show(rid, id, sizeof(id)), (long long)other->seq, other->method);
		else if (an_id_fate(c->st, peer_of(c->m->dir), key.data, key.len) != AN_ID_UNUSED)
			an_report(c, -1,
				  "requestId %s is the id of a request the peer sent: a cancel goes "
				  "in the direction of the request it cancels",
				  show(rid, id, sizeof(id)));
		else
			an_report(c, -1, "requestId %s names no request that %s sent",
				  show(rid, id, sizeof(id)),
				  c->m->dir == AN_C2S ? "the client" : "the server");
	} else if (r->answer_seq && !r->cancel_seq && c->m->t_ns - r->answer_t_ns > CANCEL_GRACE_NS) {
		int64_t rel[2] = {r->seq, r->answer_seq};
		an_report_at(c, AN_WARNING, c->m->seq, rel, 2,
			     "cancels #%lld %s, answered %lld ms earlier at #%lld: it was no longer "
			     "in progress",
			     (long long)r->seq, r->method, (long long)((c->m->t_ns - r->answer_t_ns) / MS),
			     (long long)r->answer_seq);
	}
out:
	mt_buf_release(&key);
}

static void cancel_002(const struct an_ctx *c)
{
	json_t *rid = cancel_id(c);
	struct mt_buf key = MT_BUF_INIT;
	struct an_request *r;

	if (rid && (r = cancel_target(c, rid, &key)) && r->dir == AN_C2S &&
	    !strcmp(r->method, "initialize")) {
		int64_t rel = r->seq;
		an_report_at(c, -1, c->m->seq, &rel, 1, "cancels the initialize request #%lld",
			     (long long)r->seq);
	}
	mt_buf_release(&key);
}

static void cancel_003(const struct an_ctx *c)
{
	const struct an_request *r = c->m->req;
	enum an_dir sender = peer_of(c->m->dir);

	if (!r && c->m->cls->idtype != MT_ID_NONE && c->m->cls->idtype != MT_ID_NULL &&
	    an_id_fate(c->st, sender, c->m->id_key, c->m->id_key_len) == AN_ID_CANCELLED) {
		an_report(c, -1, "answers id %.*s, a request cancelled long before and let go unanswered",
			  (int)c->m->cls->id.n, c->m->cls->id.p);
		return;
	}
	if (!r || !r->cancel_seq || r->answer_seq || c->m->t_ns - r->cancel_t_ns <= CANCEL_GRACE_NS)
		return;
	int64_t rel[2] = {r->seq, r->cancel_seq};
	an_report_at(c, -1, c->m->seq, rel, 2,
		     "answers #%lld %s %lld ms after it was cancelled at #%lld (grace %lld ms)",
		     (long long)r->seq, r->method, (long long)((c->m->t_ns - r->cancel_t_ns) / MS),
		     (long long)r->cancel_seq, (long long)(CANCEL_GRACE_NS / MS));
}

static void cancel_006(const struct an_ctx *c)
{
	json_t *rid = cancel_id(c);
	struct mt_buf key = MT_BUF_INIT;
	struct an_request *r;

	if (!rid) {
		an_report(c, -1,
			  "notifications/cancelled has no requestId: it is required to cancel a "
			  "request (tasks are cancelled with tasks/cancel)");
	} else if ((r = cancel_target(c, rid, &key)) &&
		   (r->is_task || json_object_get(an_req_params(r), "task"))) {
		int64_t rel = r->seq;
		an_report_at(c, -1, c->m->seq, &rel, 1,
			     "cancels the task-augmented request #%lld %s: tasks are cancelled with "
			     "tasks/cancel",
			     (long long)r->seq, r->method);
	}
	mt_buf_release(&key);
}

static void cancel_007(const struct an_ctx *c)
{
	if (!cancel_id(c))
		an_report(c, -1, "notifications/cancelled has no params.requestId");
}

/* ---- progress ---- */

/* Is this token JSON text a string or an integer? */
static int token_ok(struct mt_span t)
{
	if (!t.n)
		return 0;
	if (t.p[0] == '"')
		return 1;
	if (t.p[0] != '-' && (t.p[0] < '0' || t.p[0] > '9'))
		return 0;
	return !memchr(t.p, '.', t.n) && !memchr(t.p, 'e', t.n) && !memchr(t.p, 'E', t.n);
}

static void prog_001(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	json_t *tok;
	char buf[64];

	if (m->cls->kind == MT_REQUEST) {
		if (m->cls->token_type != MT_ID_NONE && !token_ok(m->cls->progress_token))
			an_report(c, -1, "params._meta.progressToken %.*s is not a string or an integer",
				  (int)(m->cls->progress_token.n < 64 ? m->cls->progress_token.n : 64),
				  m->cls->progress_token.p);
		return;
	}
	if (strcmp(m->method, "notifications/progress"))
		return;
	/* The classifier found params.progressToken; a string or an integer is fine. */
	if (m->cls->progress_token.n && token_ok(m->cls->progress_token))
		return;
	tok = json_object_get(an_params(c), "progressToken");
	if (!tok)
		an_report(c, -1, "notifications/progress has no params.progressToken");
	else if (!json_is_string(tok) && !json_is_integer(tok))
		an_report(c, -1, "progressToken %s is not a string or an integer",
			  show(tok, buf, sizeof(buf)));
}

static void prog_002(const struct an_ctx *c)
{
	const struct an_request *r = c->m->req, *prev;
	struct mt_buf key = MT_BUF_INIT;
	char buf[64];

	if (!r || !r->has_token)
		return;
	an_key_of(r->progress_token, &key);
	prev = token_request(c->st, c->m->dir, &key);
	if (prev && prev != r && request_active(c->st, prev)) {
		int64_t rel = prev->seq;
		if (prev->seq == c->m->seq)
			an_report(c, -1,
				  "progressToken %s is already used by an earlier %s of this "
				  "batch, still in progress",
				  show(r->progress_token, buf, sizeof(buf)), prev->method);
		else
			an_report_at(c, -1, c->m->seq, &rel, 1,
				     "progressToken %s is already used by #%lld %s, still in progress",
				     show(r->progress_token, buf, sizeof(buf)), (long long)prev->seq,
				     prev->method);
	}
	mt_buf_release(&key);
}

/* The progress notification's token and the request it belongs to (sent by the peer). */
static struct an_request *progress_request(const struct an_ctx *c, json_t **tok, struct mt_buf *key)
{
	*tok = an_params_member(c, "progressToken");
	if (!*tok)
		return NULL;
	an_key_of(*tok, key);
	return token_request(c->st, peer_of(c->m->dir), key);
}

static void prog_003(const struct an_ctx *c)
{
	struct mt_buf key = MT_BUF_INIT;
	json_t *tok, *prog = an_params_member(c, "progress"), *last;
	const struct an_request *r = progress_request(c, &tok, &key);
	char a[64], b[64], d[64];

	if (!tok)
		goto out;
	if (!json_is_number(prog)) {
		an_report(c, -1, "notifications/progress has no numeric params.progress");
		goto out;
	}
	/* Only within one request still going on: a later request may reuse the token
	 * and start over; a token of no request is PROG-004's, progress after the
	 * answer PROG-005's (or PROG-008's). */
	last = r && request_active(c->st, r) ? r->last_progress : NULL;
	if (!json_is_number(last))
		goto out;
	if (json_number_value(prog) <= json_number_value(last))
		an_report(c, -1, "progress %s for token %s does not increase (the last was %s)",
			  show(prog, a, sizeof(a)), show(tok, b, sizeof(b)), show(last, d, sizeof(d)));
out:
	mt_buf_release(&key);
}

static void prog_004(const struct an_ctx *c)
{
	struct mt_buf key = MT_BUF_INIT;
	json_t *tok;
	const struct an_request *r = progress_request(c, &tok, &key), *own;
	char buf[64];

	if (!tok || r)
		goto out; /* no token: PROG-001 */
	own = token_request(c->st, c->m->dir, &key);
	if (own)
		an_report(c, -1,
			  "progressToken %s is the one this side put in its own request #%lld "
			  "%s: progress goes from the receiver of a request to its sender",
			  show(tok, buf, sizeof(buf)), (long long)own->seq, own->method);
	else
		an_report(c, -1, "progressToken %s is not the token of any active request %s sent",
			  show(tok, buf, sizeof(buf)), c->m->dir == AN_C2S ? "the server" : "the client");
out:
	mt_buf_release(&key);
}

static void prog_005(const struct an_ctx *c)
{
	struct mt_buf key = MT_BUF_INIT;
	json_t *tok;
	const struct an_request *r = progress_request(c, &tok, &key);
	char buf[64];

	/* A task-augmented request keeps its token until the task ends: PROG-008. */
	if (r && r->answer_seq && !(r->is_task && an_version_in(c->st, AN_ONLY_1125))) {
		int64_t rel[2] = {r->seq, r->answer_seq};
		an_report_at(c, -1, c->m->seq, rel, 2,
			     "progress for token %s after #%lld %s was answered at #%lld",
			     show(tok, buf, sizeof(buf)), (long long)r->seq, r->method,
			     (long long)r->answer_seq);
	}
	mt_buf_release(&key);
}

static void prog_006(const struct an_ctx *c)
{
	json_t *msg = an_params_member(c, "message");
	const char *s;

	if (!msg)
		return;
	if (!json_is_string(msg)) {
		an_report(c, -1, "params.message is not a string");
		return;
	}
	for (s = json_string_value(msg); *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'; s++)
		;
	if (!*s)
		an_report(c, -1, "params.message is empty: it should say what is happening");
}

static void prog_008(const struct an_ctx *c)
{
	struct mt_buf key = MT_BUF_INIT;
	json_t *tok;
	const struct an_request *r = progress_request(c, &tok, &key);
	const char *status, *task = NULL;
	char buf[64];

	if (r && r->is_task && terminal(status = task_status(c->st, r, &task)))
		an_report(c, -1, "progress for token %s after task %s of #%lld %s reached status %s",
			  show(tok, buf, sizeof(buf)), task, (long long)r->seq, r->method, status);
	mt_buf_release(&key);
}

static void prog_009(const struct an_ctx *c)
{
	if (window_over(flow_ext(c->st), "prog", c->m->dir, c->m->t_ns, PROG_WINDOW_NS, PROG_BURST))
		an_report(c, -1, "%s sent more than %d progress notifications within %lld ms: flooding",
			  c->m->dir == AN_C2S ? "the client" : "the server", PROG_BURST,
			  (long long)(PROG_WINDOW_NS / MS));
}

/* ---- trackers ---- */

static void track_ping(const struct an_ctx *c, json_t *ext)
{
	window_step(ext, "ping", c->m->dir, c->m->t_ns, PING_WINDOW_NS, PING_BURST);
}

static void track_progress(const struct an_ctx *c, json_t *ext)
{
	window_step(ext, "prog", c->m->dir, c->m->t_ns, PROG_WINDOW_NS, PROG_BURST);
}

/* The latest first answers to the client's initialize requests (read by LIFE-004). */
static void track_init(const struct an_ctx *c, json_t *ext)
{
	const struct an_request *r = c->m->req;

	if (r && r->dir == AN_C2S && r->answer_seq == c->m->seq)
		set_int(ext, c->m->cls->kind == MT_RESPONSE ? "init_ok" : "init_error", c->m->seq);
}

#define SRC_PING "MCP-RULES §3.2; basic/utilities/ping.mdx"
#define SRC_CANCEL "MCP-RULES §3.3; basic/utilities/cancellation.mdx"
#define SRC_CANCEL_TS "MCP-RULES §3.3; basic/utilities/cancellation.mdx, schema/<v>/schema.ts"
#define SRC_PROG "MCP-RULES §3.4; basic/utilities/progress.mdx"

const struct an_rule an_rules_flow[] = {
	{"PING-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_ANSWER | AN_ON_END, "ping", ping_001,
	 "a ping is answered promptly with an empty result: never an error; a warning past "
	 "--timeout-ms (default 5 s), an error when never answered while the session went on",
	 SRC_PING},
	{"PING-002", AN_INFO, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, "ping", ping_002,
	 "a ping has no parameters (params._meta only); either side may ping at any time", SRC_PING},
	{"PING-003", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, "ping", ping_003,
	 "no excessive pinging: at most 10 pings from one side within 10 s", SRC_PING},
	{"CANCEL-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/cancelled",
	 cancel_001,
	 "a cancel names a request its sender issued; a warning when that request was answered "
	 "more than 1 s before",
	 SRC_CANCEL_TS},
	{"CANCEL-002", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/cancelled",
	 cancel_002, "the initialize request is never cancelled", SRC_CANCEL_TS},
	{"CANCEL-003", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_ANSWER, NULL, cancel_003,
	 "a cancelled request gets no answer: one sent more than 1 s (the race grace) after the "
	 "cancel is flagged",
	 SRC_CANCEL},
	{"CANCEL-004", AN_INFO, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "invalid cancels are ignored, never answered: an answer to a notification is an answer to "
	 "no request, see RPC-004/RPC-008",
	 SRC_CANCEL},
	{"CANCEL-005", AN_WARNING, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "the canceller ignores a late answer: what it does with it leaves no trace on the wire", SRC_CANCEL},
	{"CANCEL-006", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_NOTIFICATION, "notifications/cancelled",
	 cancel_006,
	 "a cancel carries requestId and never names a task-augmented request (tasks/cancel does)",
	 "MCP-RULES §3.3; basic/utilities/cancellation.mdx, schema/2025-11-25/schema.ts"},
	{"CANCEL-007", AN_ERROR, AN_SEV_FIXED,
	 AN_V(AN_V2024_11_05) | AN_V(AN_V2025_03_26) | AN_V(AN_V2025_06_18), AN_ON_NOTIFICATION,
	 "notifications/cancelled", cancel_007,
	 "notifications/cancelled carries params.requestId (required by the schema)",
	 "MCP-RULES §3.3; schema/<v>/schema.ts (CancelledNotification)"},
	{"CANCEL-008", AN_WARNING, AN_SEV_FIXED, AN_FROM_0326, 0, NULL, NULL,
	 "HTTP only: a disconnect is not a cancel; not visible in a stdio capture",
	 "MCP-RULES §3.3; basic/transports.mdx"},
	{"PROG-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_NOTIFICATION, NULL, prog_001,
	 "progress tokens (params._meta.progressToken, notifications/progress progressToken) are "
	 "strings or integers",
	 SRC_PROG},
	{"PROG-002", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, NULL, prog_002,
	 "a sender's progress token is unique across its active requests (tasks: until terminal)", SRC_PROG},
	{"PROG-003", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/progress", prog_003,
	 "progress is a number that strictly increases for a token within one request", SRC_PROG},
	{"PROG-004", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/progress", prog_004,
	 "a progress notification names a token the peer gave in one of its requests", SRC_PROG},
	{"PROG-005", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/progress", prog_005,
	 "no progress for a request after its answer (task-augmented requests: PROG-008)", SRC_PROG},
	{"PROG-006", AN_WARNING, AN_SEV_FIXED, AN_FROM_0326, AN_ON_NOTIFICATION, "notifications/progress",
	 prog_006, "a progress message, when given, is a non-empty human-readable string", SRC_PROG},
	{"PROG-007", AN_INFO, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "a MAY: progress and total may be floats, total may be missing and progress may exceed "
	 "it; nothing to flag (types and order: PROG-001, PROG-003)",
	 SRC_PROG},
	{"PROG-008", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_NOTIFICATION, "notifications/progress",
	 prog_008,
	 "progress for a task-augmented request stops once its task is completed, failed or "
	 "cancelled",
	 "MCP-RULES §3.4; basic/utilities/progress.mdx, basic/utilities/tasks.mdx"},
	{"PROG-009", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/progress",
	 prog_009, "no progress flooding: at most 100 progress notifications from one side within 1 s",
	 SRC_PROG},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_flow[] = {
	{AN_ON_REQUEST, "ping", track_ping, "flow"},
	{AN_ON_NOTIFICATION, "notifications/progress", track_progress, "flow"},
	{AN_ON_ANSWER, "initialize", track_init, "flow"},
	{0, NULL, NULL, NULL},
};
