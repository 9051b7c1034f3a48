/*
 * rules/task.c - task rules (MCP-RULES §7.2; 2025-11-25 only, experimental):
 * task ids, the CreateTaskResult, the status life cycle, the tasks/ methods,
 * related-task metadata, listing, polling and input_required.
 *
 * A task is seen ("observed") in a CreateTaskResult, a tasks/get or
 * tasks/cancel result, an element of a tasks/list result, and the params of
 * notifications/tasks/status; observe() finds them in a message for the rules
 * and the tracker alike.
 *
 * The tracker keeps, under st->ext "task":
 *   "t": "<requestor dir>:<taskId>" -> {
 *        "s": last status seen, "q": its seq, "m": the method that created it,
 *        "c": seq of its CreateTaskResult, "ct": its time (ns),
 *        "ttl": its ttl (ms, null = unlimited), "pi": the last pollInterval (ms),
 *        "lg": time of the last tasks/get for it (ns), "early": tasks/get sent
 *        sooner than pollInterval, "ok": seq of a successful tasks/get,
 *        "res": seq of a successful tasks/result, "rs": seq of an open
 *        tasks/result request, "ir": seq where the requestor saw
 *        input_required with no tasks/result since, "irw": a tasks/get came
 *        then, "err": 1 when tasks/result returned isError: true }
 *   "l": "<requestor dir>" -> the tasks/list listing in progress:
 *        {"q": seq of its first request, "t": its time, "ids": {taskId: 1}}
 *   "n": tasks known. At most MAX_TASKS are kept; later ones are not tracked.
 *   "done": the keys of the tasks that reached a terminal status, oldest
 *        first; past MAX_DONE the oldest go (so what is kept follows the tasks
 *        not yet terminal, not the session: a task that ended long ago and is
 *        seen again is judged as new).
 * Keys carry the requestor's direction because task ids are unique per
 * receiver only.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "analyze/analyze.h"

#define MAX_TASKS 100000
#define MAX_DONE 4096
#define RELATED "io.modelcontextprotocol/related-task"
/* A tasks/get is early when it comes sooner than this share of pollInterval. */
#define POLL_SLACK 0.9

enum obs_kind { OBS_CREATE, OBS_GET, OBS_CANCEL, OBS_LIST, OBS_STATUS };

struct obs {
	enum obs_kind kind;
	json_t *task;  /* the Task object (borrowed) */
	json_t *id;    /* its taskId (borrowed; may be a non-string) */
	int requestor; /* enum an_dir of the side that asked for the task */
	char key[320]; /* tracker key, "" when taskId is not a usable string */
};

typedef void (*obs_fn)(const struct an_ctx *c, struct obs *o, void *arg);

static const char *const obs_names[] = {"CreateTaskResult", "tasks/get result", "tasks/cancel result",
					"tasks/list entry", "notifications/tasks/status"};

static void task_key(char *out, size_t n, int requestor, const char *id)
{
	snprintf(out, n, "%d:%s", requestor, id);
}

/* Methods a request can be task-augmented on (2025-11-25). */
static int augmentable(const char *method)
{
	return method && (!strcmp(method, "tools/call") || !strcmp(method, "sampling/createMessage") ||
			  !strcmp(method, "elicitation/create"));
}

/* A CreateTaskResult answering a (possibly task-augmented) request. */
static int is_create_task(const struct an_ctx *c, json_t *result)
{
	return augmentable(c->m->method) && json_is_object(json_object_get(result, "task")) &&
	       !json_object_get(result, "content");
}

static void observe_one(const struct an_ctx *c, enum obs_kind k, json_t *task, int requestor, obs_fn fn,
			void *arg)
{
	struct obs o;

	if (!json_is_object(task))
		return;
	o.kind = k;
	o.task = task;
	o.id = json_object_get(task, "taskId");
	o.requestor = requestor;
	o.key[0] = '\0';
	if (json_is_string(o.id) && json_string_length(o.id) < 256)
		task_key(o.key, sizeof(o.key), requestor, json_string_value(o.id));
	fn(c, &o, arg);
}

/* Call fn on every task the current message shows. */
static void observe(const struct an_ctx *c, obs_fn fn, void *arg)
{
	const struct an_msg *m = c->m;
	const char *meth = m->method;
	json_t *res, *e;
	size_t i;

	if (!meth)
		return;
	if (m->cls->kind == MT_NOTIFICATION) {
		if (!strcmp(meth, "notifications/tasks/status"))
			observe_one(c, OBS_STATUS, an_params(c), m->dir == AN_C2S ? AN_S2C : AN_C2S, fn, arg);
		return;
	}
	if (m->cls->kind != MT_RESPONSE || !m->req || (strncmp(meth, "tasks/", 6) && !augmentable(meth)))
		return;
	res = an_result(c);
	if (!strcmp(meth, "tasks/get"))
		observe_one(c, OBS_GET, res, m->req->dir, fn, arg);
	else if (!strcmp(meth, "tasks/cancel"))
		observe_one(c, OBS_CANCEL, res, m->req->dir, fn, arg);
	else if (!strcmp(meth, "tasks/list"))
		json_array_foreach(json_object_get(res, "tasks"), i, e)
		{
			observe_one(c, OBS_LIST, e, m->req->dir, fn, arg);
		}
	else if (is_create_task(c, res))
		observe_one(c, OBS_CREATE, json_object_get(res, "task"), m->req->dir, fn, arg);
}

static json_t *ext_of(const struct an_state *st)
{
	return json_object_get(st->ext, "task");
}

/* The tracker's record of a task (borrowed), or NULL. */
static json_t *known(const struct an_state *st, const char *key)
{
	return key[0] ? json_object_get(json_object_get(ext_of(st), "t"), key) : NULL;
}

static const char *status_of(json_t *t)
{
	return json_string_value(json_object_get(t, "s"));
}

static int is_terminal(const char *s)
{
	return s && (!strcmp(s, "completed") || !strcmp(s, "failed") || !strcmp(s, "cancelled"));
}

static int is_status(const char *s)
{
	return s && (is_terminal(s) || !strcmp(s, "working") || !strcmp(s, "input_required"));
}

/* The taskId a tasks/get|result|cancel request (params) names, as a tracker key. */
static const char *param_key(json_t *params, int requestor, char *out, size_t n)
{
	json_t *id = json_object_get(params, "taskId");

	out[0] = '\0';
	if (json_is_string(id) && json_string_length(id) < 256)
		task_key(out, n, requestor, json_string_value(id));
	return out;
}

static json_int_t int_of(json_t *t, const char *k)
{
	return json_integer_value(json_object_get(t, k));
}

/* Is a tasks/get at time now early for the task record t? Polls are measured
 * from the previous poll: a first check right after creation is not counted. */
static int poll_early(json_t *t, int64_t now)
{
	json_t *pi = json_object_get(t, "pi");
	int64_t last = int_of(t, "lg");

	if (!json_is_number(pi) || json_number_value(pi) <= 0 || !last)
		return 0;
	return (double)(now - last) < json_number_value(pi) * 1e6 * POLL_SLACK;
}

/* The related-task metadata of a params or result object, or NULL. */
static json_t *related(json_t *obj)
{
	return json_object_get(json_object_get(obj, "_meta"), RELATED);
}

/* ---- TASK-001 ---- */

static void task_001_obs(const struct an_ctx *c, struct obs *o, void *arg)
{
	json_t *t;

	(void)arg;
	if (!json_is_string(o->id)) {
		an_report(c, -1, "%s taskId is %s", obs_names[o->kind],
			  o->id ? "not a string" : "missing (it is a string the receiver generates)");
		return;
	}
	if (o->kind == OBS_CREATE && (t = known(c->st, o->key)) && int_of(t, "c")) {
		int64_t rel = int_of(t, "c");
		an_report_at(c, -1, c->m->seq, &rel, 1,
			     "taskId '%.80s' was already given to another task at #%lld: ids must be "
			     "unique among the receiver's tasks",
			     json_string_value(o->id), (long long)rel);
	}
}

static void task_001(const struct an_ctx *c)
{
	observe(c, task_001_obs, NULL);
}

/* ---- TASK-002, TASK-010 ---- */

/* The capability a receiver declares for task-augmented requests of this method, or NULL. */
static const char *task_cap(const char *method, enum an_dir *receiver)
{
	if (!strcmp(method, "tools/call")) {
		*receiver = AN_S2C;
		return "tasks.requests.tools.call";
	}
	*receiver = AN_C2S;
	if (!strcmp(method, "sampling/createMessage"))
		return "tasks.requests.sampling.createMessage";
	if (!strcmp(method, "elicitation/create"))
		return "tasks.requests.elicitation.create";
	return NULL;
}

/* Did the receiver of the current answer's request declare task support for it? */
static int receiver_supports(const struct an_ctx *c)
{
	enum an_dir receiver;
	const char *cap = task_cap(c->m->method, &receiver);
	json_t *tool;
	const char *ts;

	if (!cap || !an_cap(c->st, receiver, cap))
		return 0;
	if (strcmp(c->m->method, "tools/call"))
		return 1;
	/* Tools also say so one by one; an unlisted tool gets the benefit of the doubt. */
	tool = json_object_get(c->st->tools,
			       json_string_value(json_object_get(an_req_params(c->m->req), "name"))
				       ? json_string_value(json_object_get(an_req_params(c->m->req), "name"))
				       : "");
	if (!tool)
		return 1;
	ts = json_string_value(an_path(tool, "execution.taskSupport"));
	return ts && (!strcmp(ts, "optional") || !strcmp(ts, "required"));
}

static void task_002(const struct an_ctx *c)
{
	json_t *res = an_result(c), *task;
	int asked, created;
	const char *s;

	if (!c->m->req || !augmentable(c->m->method))
		return;
	asked = json_is_object(json_object_get(an_req_params(c->m->req), "task"));
	created = is_create_task(c, res);
	if (!created) {
		if (asked && receiver_supports(c))
			an_report(c, -1,
				  "task-augmented %s answered with a plain result: a receiver that "
				  "accepts it must return a CreateTaskResult",
				  c->m->method);
		return;
	}
	if (!asked) {
		int64_t rel = c->m->req->seq;
		an_report_at(c, -1, c->m->seq, &rel, 1,
			     "CreateTaskResult answers %s #%lld, which did "
			     "not ask for a task (params.task)",
			     c->m->method, (long long)rel);
	}
	task = json_object_get(res, "task");
	s = json_string_value(json_object_get(task, "status"));
	if (!is_status(s))
		an_report(c, -1, "CreateTaskResult task.status is not a task status");
	if (!json_is_string(json_object_get(task, "statusMessage")) && json_object_get(task, "statusMessage"))
		an_report(c, -1, "CreateTaskResult task.statusMessage is not a string");
	if (json_object_get(task, "pollInterval") && !json_is_number(json_object_get(task, "pollInterval")))
		an_report(c, -1, "CreateTaskResult task.pollInterval is not a number");
}

static void task_010(const struct an_ctx *c)
{
	enum an_dir receiver;
	const char *cap;

	if (!c->m->req || !augmentable(c->m->method) ||
	    !json_is_object(json_object_get(an_req_params(c->m->req), "task")) ||
	    !(cap = task_cap(c->m->method, &receiver)) || an_cap(c->st, receiver, cap) ||
	    !is_create_task(c, an_result(c)))
		return;
	an_report(c, -1,
		  "the %s declared no %s, yet answered the task-augmented %s with a "
		  "CreateTaskResult instead of processing it normally",
		  receiver == AN_S2C ? "server" : "client", cap, c->m->method);
}

/* ---- TASK-003 ---- */

static void task_003(const struct an_ctx *c)
{
	json_t *task;
	const char *s;

	if (!augmentable(c->m->method) || !is_create_task(c, an_result(c)))
		return;
	task = json_object_get(an_result(c), "task");
	s = json_string_value(json_object_get(task, "status"));
	if (s && strcmp(s, "working"))
		an_report(c, -1, "the task was created in status '%.40s': tasks must begin in 'working'", s);
}

/* ---- TASK-004 ---- */

static int transition_ok(const char *from, const char *to)
{
	if (!strcmp(from, to))
		return 1;
	if (is_terminal(from))
		return 0;
	return is_status(to); /* working <-> input_required, either -> terminal */
}

static void task_004_obs(const struct an_ctx *c, struct obs *o, void *arg)
{
	json_t *t = known(c->st, o->key);
	const char *from = status_of(t), *to = json_string_value(json_object_get(o->task, "status"));

	(void)arg;
	if (!to || !is_status(to)) {
		an_report(c, -1, "%s for task '%.80s' has status %s%.40s%s, not a task status",
			  obs_names[o->kind], json_string_value(o->id) ? json_string_value(o->id) : "?",
			  to ? "'" : "", to ? to : "missing", to ? "'" : "");
		return;
	}
	if (from && !transition_ok(from, to)) {
		int64_t rel = int_of(t, "q");
		an_report_at(c, -1, c->m->seq, &rel, 1, "task '%.80s' went from '%s' (#%lld) to '%s': %s",
			     json_string_value(o->id), from, (long long)rel, to,
			     is_terminal(from) ? "a terminal status must not change"
					       : "not a valid transition");
	}
}

static void task_004(const struct an_ctx *c)
{
	observe(c, task_004_obs, NULL);
}

/* ---- TASK-005 ---- */

/* YYYY-MM-DDTHH:MM[:SS[.frac]](Z|+HH:MM), loosely: a date, a T, a time. */
static int is_timestamp(const char *s)
{
	int y, mo, d, h, mi, n = 0;

	return s && sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10 && mo >= 1 && mo <= 12 &&
	       d >= 1 && d <= 31 && (s[10] == 'T' || s[10] == 't') &&
	       sscanf(s + 11, "%2d:%2d", &h, &mi) == 2 && isdigit((unsigned char)s[11]) && s[13] == ':';
}

static void task_005_obs(const struct an_ctx *c, struct obs *o, void *arg)
{
	static const char *const stamps[] = {"createdAt", "lastUpdatedAt", NULL};
	json_t *ttl = json_object_get(o->task, "ttl");
	const char *id = json_string_value(o->id) ? json_string_value(o->id) : "?";

	(void)arg;
	for (int i = 0; stamps[i]; i++) {
		json_t *v = json_object_get(o->task, stamps[i]);
		if (!v)
			an_report(c, -1, "%s for task '%.80s' has no %s", obs_names[o->kind], id, stamps[i]);
		else if (!is_timestamp(json_string_value(v)))
			an_report(c, -1, "%s for task '%.80s' %s is not an ISO 8601 timestamp",
				  obs_names[o->kind], id, stamps[i]);
	}
	if (!ttl)
		an_report(c, -1, "%s for task '%.80s' has no ttl (a number of ms, or null for unlimited)",
			  obs_names[o->kind], id);
	else if (!json_is_number(ttl) && !json_is_null(ttl))
		an_report(c, -1, "%s for task '%.80s' ttl is not a number or null", obs_names[o->kind], id);
}

static void task_005(const struct an_ctx *c)
{
	observe(c, task_005_obs, NULL);
}

/* ---- TASK-006 ---- */

static void task_006(const struct an_ctx *c)
{
	char key[320];
	json_t *t;
	const char *was;

	if (!c->m->req)
		return;
	t = known(c->st, param_key(an_req_params(c->m->req), c->m->req->dir, key, sizeof(key)));
	was = status_of(t);
	if (c->m->cls->kind == MT_RESPONSE) {
		const char *s = json_string_value(json_object_get(an_result(c), "status"));
		if (is_terminal(was)) {
			int64_t rel = int_of(t, "q");
			an_report_at(c, -1, c->m->seq, &rel, 1,
				     "tasks/cancel of a task already '%s' (#%lld) "
				     "succeeded: it must be rejected with -32602",
				     was, (long long)rel);
		} else if (!s || strcmp(s, "cancelled")) {
			an_report(c, -1,
				  "the tasks/cancel result has status '%.40s': the task must be "
				  "'cancelled' before the response",
				  s ? s : "(none)");
		}
	} else if (is_terminal(was) && c->m->cls->has_error_code && c->m->cls->error_code != -32602) {
		an_report(c, -1, "tasks/cancel of a task already '%s' failed with %lld, not -32602", was,
			  (long long)c->m->cls->error_code);
	}
}

/* ---- TASK-007 ---- */

static void task_007_obs(const struct an_ctx *c, struct obs *o, void *arg)
{
	json_t *t = known(c->st, o->key);
	const char *s = json_string_value(json_object_get(o->task, "status"));

	(void)arg;
	if (t && int_of(t, "res") && s && !is_terminal(s)) {
		int64_t rel = int_of(t, "res");
		an_report_at(c, -1, c->m->seq, &rel, 1,
			     "task '%.80s' is '%s' after tasks/result answered "
			     "at #%lld: tasks/result must block until the task is terminal",
			     json_string_value(o->id), s, (long long)rel);
	}
}

static void task_007(const struct an_ctx *c)
{
	char key[320];
	json_t *t, *res;
	const char *m;

	if (!c->m->method || strcmp(c->m->method, "tasks/result")) {
		observe(c, task_007_obs, NULL);
		return;
	}
	if (c->m->cls->kind != MT_RESPONSE || !c->m->req)
		return;
	t = known(c->st, param_key(an_req_params(c->m->req), c->m->req->dir, key, sizeof(key)));
	m = json_string_value(json_object_get(t, "m"));
	res = an_result(c);
	if (json_is_object(json_object_get(res, "task")) && !json_object_get(res, "content")) {
		an_report(c, -1, "tasks/result returned a CreateTaskResult, not the underlying result");
		return;
	}
	if (!m)
		return;
	if (!strcmp(m, "tools/call") && !json_is_array(json_object_get(res, "content")))
		an_report(c, -1,
			  "tasks/result of a tools/call task has no content array: it must be the "
			  "CallToolResult");
	else if (!strcmp(m, "sampling/createMessage") &&
		 (!json_object_get(res, "role") || !json_object_get(res, "content") ||
		  !json_is_string(json_object_get(res, "model"))))
		an_report(c, -1,
			  "tasks/result of a sampling task is not a CreateMessageResult (role, "
			  "content, model)");
	else if (!strcmp(m, "elicitation/create") && !json_is_string(json_object_get(res, "action")))
		an_report(c, -1, "tasks/result of an elicitation task is not an ElicitResult (action)");
}

/* ---- TASK-008 ---- */

static void related_shape(const struct an_ctx *c, json_t *rel, const char *where)
{
	if (rel && !json_is_string(json_object_get(rel, "taskId")))
		an_report(c, -1, "%s _meta[\"" RELATED "\"] is not an object with a string taskId", where);
}

/* A request the receiver of a task sends while that task waits for input. */
static void task_008_input(const struct an_ctx *c)
{
	json_t *tasks = json_object_get(ext_of(c->st), "t"), *t;
	json_t *rel = related(an_params(c));
	const char *key;
	char want = c->m->dir == AN_C2S ? '1' : '0'; /* the requestor is the peer */

	if (rel) {
		related_shape(c, rel, c->m->method);
		return;
	}
	json_object_foreach(tasks, key, t)
	{
		if (key[0] != want || !int_of(t, "rs") || !status_of(t) ||
		    strcmp(status_of(t), "input_required"))
			continue;
		an_report(c, -1,
			  "%s sent while task '%.80s' is input_required and its tasks/result is "
			  "open, without _meta[\"" RELATED "\"]",
			  c->m->method, key + 2);
		return;
	}
}

static void task_008(const struct an_ctx *c)
{
	const char *m = c->m->method;
	enum mt_kind k = c->m->cls->kind;
	json_t *obj, *rel;

	if (!m)
		return;
	if (k == MT_NOTIFICATION) {
		if (!strcmp(m, "notifications/tasks/status") && related(an_params(c)))
			an_report(c, AN_WARNING,
				  "notifications/tasks/status should not carry "
				  "_meta[\"" RELATED "\"]: the taskId is in the params");
		return;
	}
	if (k == MT_REQUEST && strncmp(m, "tasks/", 6)) {
		if (!strcmp(m, "elicitation/create") || !strcmp(m, "sampling/createMessage"))
			task_008_input(c);
		return;
	}
	if (k == MT_RESPONSE && strncmp(m, "tasks/", 6)) {
		/* The answer to a request related to a task is related to it too. */
		json_t *want =
			c->m->req ? json_object_get(related(an_req_params(c->m->req)), "taskId") : NULL;
		if (json_is_string(want) && !related(an_result(c))) {
			int64_t req = c->m->req->seq;
			an_report_at(c, -1, c->m->seq, &req, 1,
				     "the %s result answers #%lld, which is related "
				     "to task '%.80s', without _meta[\"" RELATED "\"]",
				     m, (long long)req, json_string_value(want));
		}
		return;
	}
	if (strncmp(m, "tasks/", 6) || (k != MT_REQUEST && k != MT_RESPONSE))
		return;
	obj = k == MT_REQUEST ? an_params(c) : an_result(c);
	rel = related(obj);
	if (k == MT_RESPONSE && !strcmp(m, "tasks/result")) {
		json_t *want = c->m->req ? json_object_get(an_req_params(c->m->req), "taskId") : NULL;
		json_t *got = json_object_get(rel, "taskId");
		if (!rel)
			an_report(c, -1, "the tasks/result result has no _meta[\"" RELATED "\"]");
		else if (!json_is_string(got))
			related_shape(c, rel, "the tasks/result result");
		else if (json_is_string(want) && !json_equal(want, got))
			an_report(c, -1,
				  "the tasks/result result's related taskId '%.80s' is not the "
				  "requested '%.80s'",
				  json_string_value(got), json_string_value(want));
		return;
	}
	if (rel)
		an_report(c, AN_WARNING,
			  "%s %s should not carry _meta[\"" RELATED "\"]: the taskId "
			  "is in the message",
			  m, k == MT_REQUEST ? "request" : "result");
}

/* ---- TASK-009 ---- */

static void task_009(const struct an_ctx *c)
{
	const char *m = c->m->method;
	int64_t code = c->m->cls->error_code;
	char key[320];

	if (!m || strncmp(m, "tasks/", 6) || !c->m->cls->has_error_code || !c->m->req)
		return;
	if (code == -32601 || code == -32602 || code == -32603)
		return;
	if (!strcmp(m, "tasks/result") &&
	    known(c->st, param_key(an_req_params(c->m->req), c->m->req->dir, key, sizeof(key))))
		return; /* a known task's result may be any error of the underlying request */
	an_report(c, -1,
		  "%s failed with %lld: task protocol errors are -32602 (invalid taskId or "
		  "cursor) or -32603 (internal)",
		  m, (long long)code);
}

/* ---- TASK-011 ---- */

static void task_011(const struct an_ctx *c)
{
	json_t *ext = ext_of(c->st), *tasks = json_object_get(ext, "t"), *t, *e, *listing, *page;
	const struct an_request *r = c->m->req;
	const char *key;
	char dir[4];
	size_t i;
	int64_t start_t;

	if (!r || json_object_get(an_result(c), "nextCursor"))
		return; /* not the last page */
	snprintf(dir, sizeof(dir), "%d", r->dir);
	listing = json_object_get(json_object_get(ext, "l"), dir);
	if (json_object_get(an_req_params(r), "cursor") && !listing)
		return; /* the listing started before the capture did */
	start_t = listing ? int_of(listing, "t") : r->t_ns;
	page = json_object_get(an_result(c), "tasks");
	json_object_foreach(tasks, key, t)
	{
		int found = 0;
		json_t *ttl = json_object_get(t, "ttl");
		if (key[0] != dir[0] || !int_of(t, "ok") || int_of(t, "ok") > c->m->seq)
			continue;
		/* A task past its ttl may be gone. */
		if (json_is_number(ttl) &&
		    (double)(c->m->t_ns - int_of(t, "ct")) > json_number_value(ttl) * 1e6)
			continue;
		if (int_of(t, "ct") > start_t)
			continue;
		if (json_object_get(json_object_get(listing, "ids"), key + 2))
			continue;
		json_array_foreach(page, i, e)
		{
			if (json_is_string(json_object_get(e, "taskId")) &&
			    !strcmp(json_string_value(json_object_get(e, "taskId")), key + 2))
				found = 1;
		}
		if (!found) {
			int64_t rel = int_of(t, "ok");
			an_report_at(c, -1, c->m->seq, &rel, 1,
				     "task '%.80s' was retrievable with tasks/get "
				     "(#%lld) but the complete tasks/list listing does not hold it",
				     key + 2, (long long)rel);
		}
	}
}

/* ---- TASK-012 ---- */

static void task_012(const struct an_ctx *c)
{
	char key[320];
	json_t *t = known(c->st, param_key(an_params(c), c->m->dir, key, sizeof(key)));

	if (t && !int_of(t, "early") && poll_early(t, c->m->t_ns)) {
		int64_t last = int_of(t, "lg");
		an_report(c, -1,
			  "tasks/get for '%.80s' %.0f ms after the previous one; the receiver asked "
			  "for a pollInterval of %.0f ms",
			  key + 2, (double)(c->m->t_ns - last) / 1e6,
			  json_number_value(json_object_get(t, "pi")));
	}
}

/* ---- TASK-013 ---- */

static void task_013_obs(const struct an_ctx *c, struct obs *o, void *arg)
{
	json_t *t = known(c->st, o->key);
	const char *s = json_string_value(json_object_get(o->task, "status"));
	const char *id = json_string_value(o->id) ? json_string_value(o->id) : "?";

	(void)arg;
	if (!s)
		return;
	if (!strcmp(s, "completed") && int_of(t, "err"))
		an_report(c, -1,
			  "tool task '%.80s' is 'completed' though its result has isError: true; "
			  "it should be 'failed'",
			  id);
	if (!strcmp(s, "failed") && o->kind == OBS_GET && !json_object_get(o->task, "statusMessage"))
		an_report(c, -1, "the tasks/get result for failed task '%.80s' has no statusMessage", id);
}

static void task_013(const struct an_ctx *c)
{
	char key[320];
	json_t *t;
	const char *s;

	if (!c->m->method || strcmp(c->m->method, "tasks/result")) {
		observe(c, task_013_obs, NULL);
		return;
	}
	if (!c->m->req || !json_is_true(json_object_get(an_result(c), "isError")))
		return;
	t = known(c->st, param_key(an_req_params(c->m->req), c->m->req->dir, key, sizeof(key)));
	s = status_of(t);
	if (s && !strcmp(s, "completed"))
		an_report(c, -1,
			  "the tool result of task '%.80s' has isError: true but the task is "
			  "'completed'; it should be 'failed'",
			  key + 2);
}

/* ---- TASK-014 ---- */

static void task_014(const struct an_ctx *c)
{
	char key[320];
	json_t *tasks, *t;
	const char *k;

	if (!c->m) {
		tasks = json_object_get(ext_of(c->st), "t");
		json_object_foreach(tasks, k, t)
		{
			if (int_of(t, "ir") && !int_of(t, "irw"))
				an_report_at(c, -1, int_of(t, "ir"), NULL, 0,
					     "the requestor saw task '%.80s' "
					     "input_required and never called tasks/result",
					     k + 2);
		}
		return;
	}
	t = known(c->st, param_key(an_params(c), c->m->dir, key, sizeof(key)));
	if (t && int_of(t, "ir") && !int_of(t, "irw")) {
		int64_t rel = int_of(t, "ir");
		an_report_at(c, -1, c->m->seq, &rel, 1,
			     "task '%.80s' is input_required (#%lld): the "
			     "requestor should call tasks/result, not poll tasks/get",
			     key + 2, (long long)rel);
	}
}

/* ---- the tracker ---- */

static json_t *record(json_t *ext, const char *key)
{
	json_t *tasks = json_object_get(ext, "t"), *t;

	if (!tasks) {
		tasks = json_object();
		json_object_set_new(ext, "t", tasks);
	}
	if ((t = json_object_get(tasks, key)))
		return t;
	if (json_object_size(tasks) >= MAX_TASKS)
		return NULL;
	t = json_object();
	json_object_set_new(tasks, key, t);
	json_object_set_new(ext, "n", json_integer((json_int_t)json_object_size(tasks)));
	return t;
}

/* A task reached a terminal status: keep it among the MAX_DONE latest that did. */
static void ended(json_t *ext, const char *key)
{
	json_t *done = json_object_get(ext, "done");

	if (!done) {
		done = json_array();
		json_object_set_new(ext, "done", done);
	}
	json_array_append_new(done, json_string(key));
	if (json_array_size(done) > MAX_DONE) {
		json_t *tasks = json_object_get(ext, "t");
		const char *old = json_string_value(json_array_get(done, 0));
		/* Unless it came back to life meanwhile (TASK-004 said so). */
		if (old && is_terminal(status_of(json_object_get(tasks, old))))
			json_object_del(tasks, old);
		json_array_remove(done, 0);
		json_object_set_new(ext, "n", json_integer((json_int_t)json_object_size(tasks)));
	}
}

static void set_int(json_t *t, const char *k, int64_t v)
{
	json_object_set_new(t, k, json_integer((json_int_t)v));
}

static void track_obs(const struct an_ctx *c, struct obs *o, void *arg)
{
	json_t *ext = arg, *t, *s = json_object_get(o->task, "status"), *v;

	if (!o->key[0] || !(t = record(ext, o->key)))
		return;
	if (json_is_string(s) && is_status(json_string_value(s))) {
		if (is_terminal(json_string_value(s)) && !is_terminal(status_of(t)))
			ended(ext, o->key);
		json_object_set(t, "s", s);
		set_int(t, "q", c->m->seq);
		/* The requestor polled and saw input_required: it should call tasks/result
		 * next. (Status notifications do not count: requestors must not rely on them.) */
		if (!strcmp(json_string_value(s), "input_required")) {
			if (!int_of(t, "ir") && !int_of(t, "rs") &&
			    (o->kind == OBS_GET || o->kind == OBS_LIST))
				set_int(t, "ir", c->m->seq);
		} else {
			json_object_del(t, "ir");
			json_object_del(t, "irw");
		}
	}
	if (json_is_number(v = json_object_get(o->task, "pollInterval")))
		json_object_set(t, "pi", v);
	if ((v = json_object_get(o->task, "ttl")))
		json_object_set(t, "ttl", v);
	if (o->kind == OBS_CREATE) {
		set_int(t, "c", c->m->seq);
		set_int(t, "ct", c->m->t_ns);
		json_object_set_new(t, "m", json_string(c->m->method));
	} else if (o->kind == OBS_GET) {
		set_int(t, "ok", c->m->seq);
	} else if (o->kind == OBS_LIST) {
		char dir[4];
		json_t *l;
		snprintf(dir, sizeof(dir), "%d", o->requestor);
		l = json_object_get(json_object_get(ext, "l"), dir);
		if (l && json_is_string(o->id))
			json_object_set_new(json_object_get(l, "ids"), json_string_value(o->id), json_true());
	}
}

static void track_request(const struct an_ctx *c, json_t *ext)
{
	const char *m = c->m->method;
	char key[320];
	json_t *t;

	if (!strcmp(m, "tasks/list")) {
		json_t *lists = json_object_get(ext, "l");
		char dir[4];
		if (json_object_get(an_params(c), "cursor"))
			return;
		if (!lists) {
			lists = json_object();
			json_object_set_new(ext, "l", lists);
		}
		snprintf(dir, sizeof(dir), "%d", c->m->dir);
		json_object_set_new(lists, dir,
				    json_pack("{s:I,s:I,s:{}}", "q", (json_int_t)c->m->seq, "t",
					      (json_int_t)c->m->t_ns, "ids"));
		return;
	}
	if (strcmp(m, "tasks/get") && strcmp(m, "tasks/result"))
		return;
	if (!(t = known(c->st, param_key(an_params(c), c->m->dir, key, sizeof(key)))))
		return;
	if (!strcmp(m, "tasks/get")) {
		if (poll_early(t, c->m->t_ns))
			set_int(t, "early", int_of(t, "early") + 1);
		set_int(t, "lg", c->m->t_ns);
		if (int_of(t, "ir"))
			set_int(t, "irw", 1);
	} else {
		set_int(t, "rs", c->m->seq);
		json_object_del(t, "ir");
		json_object_del(t, "irw");
	}
}

static void track_answer(const struct an_ctx *c, json_t *ext)
{
	char key[320];
	json_t *t;

	if (c->m->req && c->m->method && !strcmp(c->m->method, "tasks/result") &&
	    (t = known(c->st, param_key(an_req_params(c->m->req), c->m->req->dir, key, sizeof(key))))) {
		json_object_del(t, "rs");
		if (c->m->cls->kind == MT_RESPONSE) {
			set_int(t, "res", c->m->seq);
			if (json_is_true(json_object_get(an_result(c), "isError")))
				set_int(t, "err", 1);
		}
		return;
	}
	if (c->m->cls->kind == MT_RESPONSE)
		observe(c, track_obs, ext);
}

static void track(const struct an_ctx *c, json_t *ext)
{
	if (c->st->version != AN_V2025_11_25 || !c->m->method)
		return;
	switch (c->m->cls->kind) {
	case MT_REQUEST:
		if (!strncmp(c->m->method, "tasks/", 6))
			track_request(c, ext);
		break;
	case MT_RESPONSE:
	case MT_ERROR: track_answer(c, ext); break;
	case MT_NOTIFICATION: observe(c, track_obs, ext); break;
	default: break;
	}
}

#define SRC "MCP-RULES §7.2; basic/utilities/tasks.mdx"
#define OBSERVED (AN_ON_RESPONSE | AN_ON_NOTIFICATION)

const struct an_rule an_rules_task[] = {
	{"TASK-001", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, OBSERVED, NULL, task_001,
	 "task ids are strings, unique among the receiver's tasks", SRC},
	{"TASK-002", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_RESPONSE, NULL, task_002,
	 "a receiver that supports a task-augmented request answers it with a CreateTaskResult{task}, "
	 "and only such requests get one",
	 SRC},
	{"TASK-003", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_RESPONSE, NULL, task_003,
	 "tasks begin in the working status (the CreateTaskResult says working)", SRC},
	{"TASK-004", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, OBSERVED, NULL, task_004,
	 "task status changes follow working <-> input_required -> completed|failed|cancelled; "
	 "terminal statuses never change",
	 SRC},
	{"TASK-005", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, OBSERVED, NULL, task_005,
	 "every task response carries ISO 8601 createdAt and lastUpdatedAt and a ttl (number or null)", SRC},
	{"TASK-006", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_ANSWER, "tasks/cancel", task_006,
	 "tasks/cancel of a terminal task fails with -32602; a successful cancel returns the task "
	 "as cancelled (staying cancelled: TASK-004)",
	 SRC},
	{"TASK-007", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, OBSERVED, NULL, task_007,
	 "tasks/result blocks until the task is terminal and returns the underlying request's result", SRC},
	{"TASK-008", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125,
	 AN_ON_REQUEST | AN_ON_RESPONSE | AN_ON_NOTIFICATION, NULL, task_008,
	 "tasks/result results, input_required requests and their answers carry related-task _meta; "
	 "tasks/get, list, cancel and status notifications should not (warning)",
	 SRC},
	{"TASK-009", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_ERROR, NULL, task_009,
	 "tasks/* protocol errors use -32602 (bad taskId or cursor) or -32603 (internal); -32601 "
	 "when unsupported",
	 SRC},
	{"TASK-010", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_RESPONSE, NULL, task_010,
	 "a receiver that did not declare task support for a request type processes task-augmented "
	 "requests normally (no CreateTaskResult)",
	 SRC},
	{"TASK-011", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_RESPONSE, "tasks/list", task_011,
	 "a complete tasks/list listing holds every task tasks/get returned (unless past its ttl)", SRC},
	{"TASK-012", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST, "tasks/get", task_012,
	 "requestors space tasks/get polls by at least 90% of the pollInterval (reported once per "
	 "task); not relying on status notifications cannot be seen",
	 SRC},
	{"TASK-013", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, OBSERVED, NULL, task_013,
	 "a tool task whose result has isError: true ends failed, not completed; a failed task's "
	 "tasks/get result has a statusMessage",
	 SRC},
	{"TASK-014", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST | AN_ON_END, "tasks/get", task_014,
	 "a requestor whose tasks/get or tasks/list shows input_required calls tasks/result rather "
	 "than polling on (how it uses SSE on tasks/get is HTTP only: not visible in a stdio "
	 "capture)",
	 SRC},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_task[] = {
	{AN_ON_REQUEST | AN_ON_ANSWER | AN_ON_NOTIFICATION, NULL, track, "task"},
	{0, NULL, NULL, NULL},
};
