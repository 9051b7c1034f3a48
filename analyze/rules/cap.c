/*
 * rules/cap.c - capability-use rules (MCP-RULES §5, with the gates of §1 and
 * the capability shapes of §2): a party uses a feature only when its peer
 * declared the capability that gates it, answers a feature request with a
 * result only when it declared that feature itself, and declares its
 * capabilities with the value types of the schema.
 *
 * Capabilities are known from the handshake on: the client's from its
 * initialize request, the server's from the initialize result. Before that a
 * gate cannot be judged, so the gate rules say nothing (LIFE-001/005 cover
 * traffic before the handshake). Most rules here are LIFE-011's "only use
 * capabilities that were successfully negotiated": a warning up to
 * 2025-03-26, an error from 2025-06-18 (AN_SEV_MUST_0618).
 *
 * The tracker keeps, under st->ext "cap":
 *   "elicit": { elicitationId: seq where it was established } - the URL-mode
 *             elicitations the server sent (elicitation/create with mode
 *             "url", and -32042 errors), for CAP-020
 *   "done":   { elicitationId: seq of its first notifications/elicitation/complete }
 *             (each holds the MAX_ELICIT latest ids, in the order they came)
 *   "required_tools": how many tools of the latest tools/list require a task
 *             (CAP-018's cheap path)
 *   "server_caps": the server's capabilities from a successful initialize
 *             that retried a failed first one (the engine keeps only the
 *             first initialize's answer)
 */
#include <string.h>

#include "analyze/analyze.h"

/* How many open requests CAP-009 looks through for a resources/subscribe still
 * waiting for its answer. */
#define PENDING_SCAN 4096
/* How many URL-mode elicitation ids the tracker keeps (the latest ones). */
#define MAX_ELICIT 4096
/* How many subscriptions CAP-009 compares a sub-resource uri with. */
#define SUB_SCAN 4096

static const char *side_name(enum an_dir side)
{
	return side == AN_C2S ? "client" : "server";
}

/*
 * The server's capabilities from a successful initialize that retried a
 * failed first one: the engine keeps only the first initialize's answer, so
 * the tracker notes these (borrowed; NULL when there was no such retry).
 */
static json_t *retry_caps(const struct an_state *st)
{
	return json_object_get(json_object_get(st->ext, "cap"), "server_caps");
}

/* Have the capabilities of this side been declared on the wire yet (and read:
 * in a message beyond the analyzer's limits they are unknown)? */
static int caps_known(const struct an_state *st, enum an_dir side)
{
	if (st->caps_unreadable[side])
		return 0;
	if (side == AN_C2S)
		return st->init_seq != 0 || st->phase == AN_PH_STATELESS;
	return st->init_answer_seq != 0 || retry_caps(st) != NULL;
}

/* an_cap(), with the server's capabilities from a retried initialize when the
 * first one failed. */
static json_t *cap_of(const struct an_state *st, enum an_dir side, const char *path)
{
	if (side == AN_S2C && !st->init_answer_seq)
		return an_path(retry_caps(st), path);
	return an_cap(st, side, path);
}

/* A capability counts as declared when present and neither null nor false. */
static int declared(json_t *v)
{
	return v && !json_is_null(v) && !json_is_false(v);
}

static int is(const char *a, const char *b)
{
	return a && !strcmp(a, b);
}

/*
 * The current request (or notification) uses a feature of `side`'s that the
 * capability at `path` gates. want_true: the capability is a flag that must
 * be `true` (listChanged, subscribe); otherwise it must just be declared.
 */
static void need_cap(const struct an_ctx *c, enum an_dir side, const char *path, int want_true)
{
	json_t *v;

	if (!caps_known(c->st, side))
		return;
	v = cap_of(c->st, side, path);
	if (want_true ? json_is_true(v) : declared(v))
		return;
	an_report(c, -1, "%s %s, but the %s did not declare %s%s", an_dir_arrow(c->m->dir), c->m->method,
		  side_name(side), path, want_true ? ": true" : "");
}

/*
 * The params of the current request, or of the request the current answer
 * answers. The request's record shares the engine's parse of its params, for
 * the methods whose params it keeps; the message itself is parsed otherwise.
 */
static json_t *request_params(const struct an_ctx *c)
{
	json_t *p = c->m->req ? an_req_params(c->m->req) : NULL;

	return p || c->m->cls->kind != MT_REQUEST ? p : an_params(c);
}

/* The error code of the current answer, or 0 when it is a result or has none. */
static int64_t error_code(const struct an_ctx *c)
{
	return c->m->cls->kind == MT_ERROR && c->m->cls->has_error_code ? c->m->cls->error_code : 0;
}

/* ---- the gates of §1 ---- */

static void cap_001(const struct an_ctx *c)
{
	if (c->m->dir == AN_C2S && (is(c->m->method, "tools/list") || is(c->m->method, "tools/call")))
		need_cap(c, AN_S2C, "tools", 0);
}

static void cap_002(const struct an_ctx *c)
{
	if (c->m->dir == AN_C2S && (is(c->m->method, "prompts/list") || is(c->m->method, "prompts/get")))
		need_cap(c, AN_S2C, "prompts", 0);
}

static void cap_003(const struct an_ctx *c)
{
	const char *m = c->m->method;

	if (c->m->dir == AN_C2S &&
	    (is(m, "resources/list") || is(m, "resources/templates/list") || is(m, "resources/read")))
		need_cap(c, AN_S2C, "resources", 0);
}

static void cap_004(const struct an_ctx *c)
{
	if (c->m->dir == AN_C2S &&
	    (is(c->m->method, "resources/subscribe") || is(c->m->method, "resources/unsubscribe")))
		need_cap(c, AN_S2C, "resources.subscribe", 1);
}

static void cap_005(const struct an_ctx *c)
{
	if (c->m->dir == AN_C2S)
		need_cap(c, AN_S2C, "logging", 0);
}

static void cap_006(const struct an_ctx *c)
{
	if (c->m->dir == AN_C2S)
		need_cap(c, AN_S2C, "completions", 0);
}

static const char *const log_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", NULL,
};

static void cap_007(const struct an_ctx *c)
{
	json_t *level;

	if (c->m->dir != AN_S2C)
		return;
	if (caps_known(c->st, AN_S2C) && !declared(cap_of(c->st, AN_S2C, "logging")))
		an_report(c, -1,
			  "the server sent notifications/message without declaring the "
			  "logging capability");
	level = json_object_get(an_params(c), "level");
	if (!json_is_string(level)) {
		an_report(c, -1, "notifications/message params.level is missing or not a string");
		return;
	}
	for (size_t i = 0; log_levels[i]; i++)
		if (!strcmp(json_string_value(level), log_levels[i]))
			return;
	an_report(c, -1,
		  "notifications/message level '%s' is not one of debug, info, notice, "
		  "warning, error, critical, alert, emergency",
		  json_string_value(level));
}

static void cap_008(const struct an_ctx *c)
{
	const char *m = c->m->method;

	if (c->m->dir != AN_S2C)
		return;
	if (is(m, "notifications/tools/list_changed"))
		need_cap(c, AN_S2C, "tools.listChanged", 1);
	else if (is(m, "notifications/prompts/list_changed"))
		need_cap(c, AN_S2C, "prompts.listChanged", 1);
	else if (is(m, "notifications/resources/list_changed"))
		need_cap(c, AN_S2C, "resources.listChanged", 1);
}

/* Is a resources/subscribe for uri among the open requests? */
static int subscribe_pending(const struct an_state *st, const char *uri)
{
	size_t n = 0;

	for (const struct an_request *r = st->open_first; r && n < PENDING_SCAN; r = r->open_next, n++) {
		if (r->dir == AN_C2S && !r->answer_seq && is(r->method, "resources/subscribe") &&
		    is(json_string_value(json_object_get(an_req_params(r), "uri")), uri))
			return 1;
	}
	return 0;
}

/* Does uri name a subscribed resource, or a sub-resource of one (its uri as a prefix)? */
static int subscribed(const struct an_state *st, const char *uri)
{
	const char *key;
	json_t *v;
	size_t n = 0;

	if (json_object_get(st->subscriptions, uri))
		return 1;
	json_object_foreach(st->subscriptions, key, v)
	{
		size_t len = strlen(key);
		if (++n > SUB_SCAN)
			break;
		if (len && !strncmp(uri, key, len))
			return 1;
	}
	return 0;
}

static void cap_009(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	const char *uri;

	if (c->m->dir != AN_S2C || !caps_known(st, AN_S2C))
		return;
	if (!json_is_true(cap_of(st, AN_S2C, "resources.subscribe"))) {
		an_report(c, -1,
			  "s→c notifications/resources/updated, but the server did not declare "
			  "resources.subscribe: true");
		return;
	}
	uri = json_string_value(json_object_get(an_params(c), "uri"));
	if (uri && !subscribed(st, uri) && !subscribe_pending(st, uri))
		an_report(c, AN_WARNING,
			  "notifications/resources/updated for '%s', which the client "
			  "has no active subscription to",
			  uri);
}

static void cap_010(const struct an_ctx *c)
{
	if (c->m->dir == AN_S2C)
		need_cap(c, AN_C2S, "sampling", 0);
}

static void cap_011(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->cls->kind == MT_REQUEST) {
		if (m->dir == AN_S2C)
			need_cap(c, AN_C2S, "roots", 0);
		return;
	}
	/* The client's error answer: without roots it should say -32601. */
	if (m->dir != AN_C2S || !caps_known(c->st, AN_C2S) || declared(cap_of(c->st, AN_C2S, "roots")))
		return;
	if (error_code(c) != -32601)
		an_report(c, AN_WARNING,
			  "the client declared no roots and answered roots/list with "
			  "error %lld; expected -32601 (method not found)",
			  (long long)error_code(c));
}

static void cap_012(const struct an_ctx *c)
{
	if (c->m->dir == AN_C2S)
		need_cap(c, AN_C2S, "roots.listChanged", 1);
}

static void cap_013(const struct an_ctx *c)
{
	if (c->m->dir == AN_S2C)
		need_cap(c, AN_C2S, "elicitation", 0);
}

/* ---- 2025-11-25: modes, tools, context and tasks ---- */

/*
 * Is an elicitation mode supported by the client's declaration? 0 when not,
 * 1 when it is, -1 when elicitation itself was not declared (CAP-013's case).
 * `{}` means form only; a missing mode means form.
 */
static int mode_supported(const struct an_state *st, const char *mode)
{
	json_t *e = cap_of(st, AN_C2S, "elicitation");

	if (!declared(e))
		return -1;
	if (!mode || !strcmp(mode, "form"))
		return declared(json_object_get(e, "form")) || !declared(json_object_get(e, "url"));
	if (!strcmp(mode, "url"))
		return declared(json_object_get(e, "url"));
	return 0;
}

static void cap_014(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	json_t *params = request_params(c);
	json_t *mode;
	const char *name;

	if (!caps_known(c->st, AN_C2S))
		return;
	mode = json_object_get(params, "mode");
	if (mode && !json_is_string(mode)) {
		if (m->cls->kind == MT_REQUEST && m->dir == AN_S2C)
			an_report(c, -1, "elicitation/create params.mode is not a string");
		return;
	}
	name = json_string_value(mode);
	if (mode_supported(c->st, name) != 0)
		return;
	if (m->cls->kind == MT_REQUEST) {
		if (m->dir == AN_S2C)
			an_report(c, -1,
				  "elicitation/create in %s mode, which the client did not "
				  "declare (elicitation.%s)",
				  name ? name : "form (default)", name ? name : "form");
		return;
	}
	/* The client's answer to a mode it did not declare: a -32602 error. */
	if (m->dir != AN_C2S || !m->req || m->req->answer_seq)
		return;
	if (m->cls->kind == MT_RESPONSE)
		an_report(c, -1,
			  "the client answered an elicitation/create in undeclared %s mode "
			  "with a result; expected error -32602",
			  name ? name : "form");
	else if (error_code(c) != -32602)
		an_report(c, -1,
			  "the client answered an elicitation/create in undeclared %s mode "
			  "with error %lld; expected -32602",
			  name ? name : "form", (long long)error_code(c));
}

static void cap_015(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	json_t *params = request_params(c);
	const char *field;

	if (!caps_known(c->st, AN_C2S) || declared(cap_of(c->st, AN_C2S, "sampling.tools")))
		return;
	field = json_object_get(params, "tools")        ? "tools"
		: json_object_get(params, "toolChoice") ? "toolChoice"
							: NULL;
	if (!field)
		return;
	if (m->cls->kind == MT_REQUEST) {
		if (m->dir == AN_S2C)
			an_report(c, -1,
				  "sampling/createMessage carries %s, but the client did not "
				  "declare sampling.tools",
				  field);
	} else if (m->dir == AN_C2S && m->req && !m->req->answer_seq) {
		int64_t rel = m->req->seq;
		an_report_at(c, -1, m->seq, &rel, 1,
			     "the client answered a sampling/createMessage "
			     "with %s (#%lld) with a result, though it did not declare "
			     "sampling.tools; it must return an error",
			     field, (long long)m->req->seq);
	}
}

static void cap_016(const struct an_ctx *c)
{
	const char *ctx;

	if (c->m->dir != AN_S2C || !caps_known(c->st, AN_C2S) ||
	    declared(cap_of(c->st, AN_C2S, "sampling.context")))
		return;
	ctx = json_string_value(json_object_get(request_params(c), "includeContext"));
	if (is(ctx, "thisServer") || is(ctx, "allServers"))
		an_report(c, -1,
			  "sampling/createMessage asks for includeContext '%s', but the client "
			  "did not declare sampling.context",
			  ctx);
}

static void cap_017(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	enum an_dir recv = m->dir == AN_C2S ? AN_S2C : AN_C2S;
	const char *path = NULL;

	/* Cheap path: no "task" member anywhere in the bytes. */
	if (!memmem(m->raw, m->raw_len, "\"task\"", 6) || !caps_known(c->st, recv))
		return;
	if (!json_object_get(request_params(c), "task"))
		return;
	if (m->dir == AN_C2S && is(m->method, "tools/call"))
		path = "tasks.requests.tools.call";
	else if (m->dir == AN_S2C && is(m->method, "sampling/createMessage"))
		path = "tasks.requests.sampling.createMessage";
	else if (m->dir == AN_S2C && is(m->method, "elicitation/create"))
		path = "tasks.requests.elicitation.create";
	if (path && declared(cap_of(c->st, recv, path)))
		return;
	if (path && !strcmp(path, "tasks.requests.tools.call"))
		an_report(c, AN_ERROR,
			  "tools/call is task-augmented, but the server did not declare "
			  "tasks.requests.tools.call");
	else if (!declared(cap_of(c->st, recv, "tasks")))
		an_report(c, -1, "%s %s is task-augmented, but the %s declared no tasks capability",
			  an_dir_arrow(m->dir), m->method, side_name(recv));
	else if (path)
		an_report(c, -1, "%s %s is task-augmented, but the %s did not declare %s",
			  an_dir_arrow(m->dir), m->method, side_name(recv), path);
	else
		an_report(c, -1, "%s %s is task-augmented, but no capability lets a %s run it as a task",
			  an_dir_arrow(m->dir), m->method, side_name(recv));
}

/* The tool's execution.taskSupport from the latest tools/list: "forbidden" when
 * absent; NULL when the tool is not known. */
static const char *task_support(const struct an_state *st, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *tool = name ? json_object_get(st->tools, name) : NULL;
	const char *ts;

	if (!json_is_object(tool))
		return NULL;
	ts = json_string_value(an_path(tool, "execution.taskSupport"));
	return ts ? ts : "forbidden";
}

static void cap_018(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	/* Tools of the latest list that require a task (the tracker counts them). */
	json_int_t required =
		json_integer_value(json_object_get(json_object_get(c->st->ext, "cap"), "required_tools"));
	json_t *params;
	const char *ts, *name;
	int as_task;

	if (!json_object_size(c->st->tools))
		return;
	/* Cheap paths: nothing to check unless a tool requires a task, or the call
	 * carries one (request), or the server runs tools as tasks (answer). */
	if (m->cls->kind == MT_REQUEST) {
		if (m->dir != AN_C2S || (!required && !memmem(m->raw, m->raw_len, "\"task\"", 6)))
			return;
	} else {
		if (m->dir != AN_S2C || !m->req || m->req->answer_seq ||
		    (!required && !declared(cap_of(c->st, AN_S2C, "tasks.requests.tools.call"))))
			return;
	}
	params = request_params(c);
	if (!(ts = task_support(c->st, params)))
		return;
	name = json_string_value(json_object_get(params, "name"));
	as_task = json_object_get(params, "task") != NULL;
	if (m->cls->kind == MT_REQUEST) {
		if (as_task && !strcmp(ts, "forbidden"))
			an_report(c, -1,
				  "tool '%s' is called as a task, but its execution.taskSupport "
				  "is %s",
				  name,
				  an_path(json_object_get(c->st->tools, name), "execution.taskSupport")
					  ? "\"forbidden\""
					  : "absent (forbidden)");
		else if (!as_task && !strcmp(ts, "required"))
			an_report(c, -1,
				  "tool '%s' has execution.taskSupport \"required\", but is "
				  "called without a task",
				  name);
		return;
	}
	/* The server's answer (-32600 is the MAY of "receivers requiring task augmentation"). */
	int64_t rel = m->req->seq;
	if (!as_task && !strcmp(ts, "required") && error_code(c) != -32601 && error_code(c) != -32600)
		an_report_at(c, -1, m->seq, &rel, 1,
			     "tool '%s' requires a task and #%lld called it "
			     "without one: the server must answer -32601, not %s",
			     name, (long long)m->req->seq,
			     m->cls->kind == MT_RESPONSE ? "a result" : "another error");
	else if (as_task && !strcmp(ts, "forbidden") && error_code(c) != -32601 &&
		 declared(cap_of(c->st, AN_S2C, "tasks.requests.tools.call")))
		an_report_at(c, AN_WARNING, m->seq, &rel, 1,
			     "tool '%s' does not support tasks and "
			     "#%lld called it as one: the server should answer -32601",
			     name, (long long)m->req->seq);
}

static void cap_019(const struct an_ctx *c)
{
	const char *m = c->m->method;
	enum an_dir recv = c->m->dir == AN_C2S ? AN_S2C : AN_C2S;

	if (is(m, "tasks/list"))
		need_cap(c, recv, "tasks.list", 0);
	else if (is(m, "tasks/cancel"))
		need_cap(c, recv, "tasks.cancel", 0);
}

static void cap_020(const struct an_ctx *c)
{
	json_t *ext = json_object_get(c->st->ext, "cap");
	json_t *id, *seen, *done;

	if (c->m->dir != AN_S2C)
		return;
	id = json_object_get(an_params(c), "elicitationId");
	if (!json_is_string(id)) {
		an_report(c, -1, "notifications/elicitation/complete has no string elicitationId");
		return;
	}
	seen = json_object_get(json_object_get(ext, "elicit"), json_string_value(id));
	done = json_object_get(json_object_get(ext, "done"), json_string_value(id));
	if (!seen) {
		an_report(c, -1,
			  "notifications/elicitation/complete for elicitationId '%s', which no "
			  "url-mode elicitation/create or -32042 error sent to this client "
			  "established",
			  json_string_value(id));
	} else if (done) {
		int64_t rel[2] = {json_integer_value(seen), json_integer_value(done)};
		an_report_at(c, AN_INFO, c->m->seq, rel, 2,
			     "elicitation '%s' was already completed at "
			     "#%lld; the client ignores this one",
			     json_string_value(id), (long long)json_integer_value(done));
	}
}

static void cap_021(const struct an_ctx *c)
{
	json_t *list, *el;
	size_t i;

	if (c->m->dir != AN_S2C || error_code(c) != -32042)
		return;
	if (caps_known(c->st, AN_C2S) && mode_supported(c->st, "url") != 1)
		an_report(c, -1,
			  "the server answered -32042 (URL elicitation required), but the "
			  "client did not declare elicitation.url");
	list = an_path(an_error(c), "data.elicitations");
	if (!json_is_array(list) || !json_array_size(list)) {
		an_report(c, -1,
			  "a -32042 error must list the required URL elicitations in "
			  "data.elicitations (a non-empty array)");
		return;
	}
	json_array_foreach(list, i, el)
	{
		if (!is(json_string_value(json_object_get(el, "mode")), "url"))
			an_report(c, -1,
				  "data.elicitations[%zu] of the -32042 error is not a URL-mode "
				  "elicitation (mode \"url\")",
				  i);
		else if (!json_is_string(json_object_get(el, "elicitationId")))
			an_report(c, -1,
				  "data.elicitations[%zu] of the -32042 error has no string "
				  "elicitationId",
				  i);
	}
}

/* ---- answers and declarations ---- */

/* Feature requests and the capability the responder must have declared to serve them. */
static const struct {
	const char *method;
	enum an_dir responder;
	const char *cap;
	unsigned versions;
} features[] = {
	{"tools/list", AN_S2C, "tools", AN_ALL4},
	{"tools/call", AN_S2C, "tools", AN_ALL4},
	{"prompts/list", AN_S2C, "prompts", AN_ALL4},
	{"prompts/get", AN_S2C, "prompts", AN_ALL4},
	{"resources/list", AN_S2C, "resources", AN_ALL4},
	{"resources/templates/list", AN_S2C, "resources", AN_ALL4},
	{"resources/read", AN_S2C, "resources", AN_ALL4},
	{"resources/subscribe", AN_S2C, "resources", AN_ALL4},
	{"resources/unsubscribe", AN_S2C, "resources", AN_ALL4},
	{"completion/complete", AN_S2C, "completions", AN_FROM_0326},
	{"sampling/createMessage", AN_C2S, "sampling", AN_ALL4},
	{"roots/list", AN_C2S, "roots", AN_ALL4},
	{"elicitation/create", AN_C2S, "elicitation", AN_FROM_0618},
};

static void cap_022(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (!m->req || m->req->answer_seq || !m->method)
		return;
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		if (strcmp(m->method, features[i].method))
			continue;
		if (m->dir != features[i].responder || !an_version_in(c->st, features[i].versions) ||
		    !caps_known(c->st, m->dir) || declared(cap_of(c->st, m->dir, features[i].cap)))
			return;
		int64_t rel = m->req->seq;
		an_report_at(c, -1, m->seq, &rel, 1,
			     "the %s answered %s (#%lld) with a result, but "
			     "did not declare the %s capability",
			     side_name(m->dir), m->method, (long long)m->req->seq, features[i].cap);
		return;
	}
}

enum shape { SH_OBJECT, SH_BOOL, SH_MAP };

/* The declared capability values whose type the schema fixes, per side and revision. */
static const struct {
	enum an_dir side;
	const char *path;
	enum shape shape;
	unsigned versions;
} shapes[] = {
	{AN_C2S, "experimental", SH_MAP, AN_ALL4},
	{AN_C2S, "roots", SH_OBJECT, AN_ALL4},
	{AN_C2S, "roots.listChanged", SH_BOOL, AN_ALL4},
	{AN_C2S, "sampling", SH_OBJECT, AN_ALL4},
	{AN_C2S, "sampling.context", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "sampling.tools", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "elicitation", SH_OBJECT, AN_FROM_0618},
	{AN_C2S, "elicitation.form", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "elicitation.url", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.list", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.cancel", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.requests", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.requests.sampling", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.requests.sampling.createMessage", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.requests.elicitation", SH_OBJECT, AN_ONLY_1125},
	{AN_C2S, "tasks.requests.elicitation.create", SH_OBJECT, AN_ONLY_1125},
	{AN_S2C, "experimental", SH_MAP, AN_ALL4},
	{AN_S2C, "logging", SH_OBJECT, AN_ALL4},
	{AN_S2C, "completions", SH_OBJECT, AN_FROM_0326},
	{AN_S2C, "prompts", SH_OBJECT, AN_ALL4},
	{AN_S2C, "prompts.listChanged", SH_BOOL, AN_ALL4},
	{AN_S2C, "resources", SH_OBJECT, AN_ALL4},
	{AN_S2C, "resources.subscribe", SH_BOOL, AN_ALL4},
	{AN_S2C, "resources.listChanged", SH_BOOL, AN_ALL4},
	{AN_S2C, "tools", SH_OBJECT, AN_ALL4},
	{AN_S2C, "tools.listChanged", SH_BOOL, AN_ALL4},
	{AN_S2C, "tasks", SH_OBJECT, AN_ONLY_1125},
	{AN_S2C, "tasks.list", SH_OBJECT, AN_ONLY_1125},
	{AN_S2C, "tasks.cancel", SH_OBJECT, AN_ONLY_1125},
	{AN_S2C, "tasks.requests", SH_OBJECT, AN_ONLY_1125},
	{AN_S2C, "tasks.requests.tools", SH_OBJECT, AN_ONLY_1125},
	{AN_S2C, "tasks.requests.tools.call", SH_OBJECT, AN_ONLY_1125},
};

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* The revision the capabilities in this initialize message are declared for. */
static enum an_version declared_version(const struct an_state *st, json_t *msg_part)
{
	const char *pv = json_string_value(json_object_get(msg_part, "protocolVersion"));
	enum an_version v;

	if (!strcmp(st->version_source, "option") || !pv)
		return st->version;
	if (an_version_parse(pv, &v) == 0)
		return v;
	return an_version_nearest(pv);
}

static void cap_023(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	enum an_dir side;
	json_t *part, *caps;
	enum an_version v;

	if (m->cls->kind == MT_REQUEST && m->dir == AN_C2S) {
		side = AN_C2S;
		part = request_params(c);
	} else if (m->cls->kind == MT_RESPONSE && m->dir == AN_S2C && m->req && m->req->dir == AN_C2S) {
		side = AN_S2C;
		part = an_result(c);
	} else {
		return;
	}
	caps = json_object_get(part, "capabilities");
	if (!json_is_object(caps))
		return; /* LIFE-002 / LIFE-003 */
	v = declared_version(c->st, part);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		json_t *val;
		if (shapes[i].side != side || !(shapes[i].versions & AN_V(v)))
			continue;
		if (!(val = an_path(caps, shapes[i].path)))
			continue;
		if (shapes[i].shape == SH_BOOL && !json_is_boolean(val)) {
			an_report(c, -1, "%s capability %s is %s, not a boolean", side_name(side),
				  shapes[i].path, type_name(val));
		} else if (shapes[i].shape != SH_BOOL && !json_is_object(val)) {
			an_report(c, -1, "%s capability %s is %s, not an object", side_name(side),
				  shapes[i].path, type_name(val));
		} else if (shapes[i].shape == SH_MAP) {
			const char *key;
			json_t *sub;
			json_object_foreach(val, key, sub)
			{
				if (!json_is_object(sub))
					an_report(c, -1,
						  "%s capability experimental['%s'] is %s, not "
						  "an object",
						  side_name(side), key, type_name(sub));
			}
		}
	}
}

/* ---- the tracker: URL-mode elicitation ids ---- */

static json_t *member(json_t *ext, const char *name)
{
	json_t *o = json_object_get(ext, name);

	if (!o) {
		o = json_object();
		json_object_set_new(ext, name, o);
	}
	return o;
}

/* Set key in obj, dropping its oldest member when it holds MAX_ELICIT. */
static void set_bounded(json_t *obj, const char *key, int64_t seq)
{
	if (json_object_size(obj) >= MAX_ELICIT) {
		void *it = json_object_iter(obj); /* insertion order: the oldest first */
		if (it)
			json_object_del(obj, json_object_iter_key(it));
	}
	json_object_set_new(obj, key, json_integer(seq));
}

static void note_elicitation(json_t *ext, json_t *id, int64_t seq)
{
	json_t *seen = member(ext, "elicit");

	if (json_is_string(id) && !json_object_get(seen, json_string_value(id)))
		set_bounded(seen, json_string_value(id), seq);
}

static void track_elicit(const struct an_ctx *c, json_t *ext)
{
	json_t *params;

	if (c->m->dir != AN_S2C)
		return;
	params = request_params(c);
	if (is(json_string_value(json_object_get(params, "mode")), "url"))
		note_elicitation(ext, json_object_get(params, "elicitationId"), c->m->seq);
}

static void track_url_error(const struct an_ctx *c, json_t *ext)
{
	json_t *list;

	if (c->m->dir != AN_S2C || !c->m->cls->has_error_code || c->m->cls->error_code != -32042)
		return;
	list = an_path(an_error(c), "data.elicitations");
	for (size_t i = 0; i < json_array_size(list); i++)
		note_elicitation(ext, json_object_get(json_array_get(list, i), "elicitationId"), c->m->seq);
}

static void track_complete(const struct an_ctx *c, json_t *ext)
{
	json_t *id = json_object_get(an_params(c), "elicitationId");
	json_t *done;

	if (c->m->dir != AN_S2C || !json_is_string(id) ||
	    !json_object_get(json_object_get(ext, "elicit"), json_string_value(id)))
		return;
	done = member(ext, "done");
	if (!json_object_get(done, json_string_value(id)))
		set_bounded(done, json_string_value(id), c->m->seq);
}

/* After a tools/list answer (the engine has updated st->tools): how many
 * tools of the list require a task, for CAP-018's cheap path. */
static void track_tools(const struct an_ctx *c, json_t *ext)
{
	const char *name;
	json_t *tool;
	json_int_t n = 0;

	json_object_foreach(c->st->tools, name, tool)
	{
		if (is(json_string_value(an_path(tool, "execution.taskSupport")), "required"))
			n++;
	}
	json_object_set_new(ext, "required_tools", json_integer(n));
}

/* A successful initialize result that the engine does not take because an
 * earlier initialize failed: keep its capabilities for the gates. */
static void track_init_retry(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	json_t *caps;

	if (m->dir != AN_S2C || !m->req || m->req->dir != AN_C2S || c->st->init_answer_seq)
		return;
	caps = json_object_get(an_result(c), "capabilities");
	json_object_set_new(ext, "server_caps", json_is_object(caps) ? json_deep_copy(caps) : json_object());
}

#define SRC(sec, file) "MCP-RULES §" sec "; " file

const struct an_rule an_rules_cap[] = {
	{"CAP-001", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST, "tools/list|tools/call", cap_001,
	 "c→s tools/list and tools/call only when the server declared tools",
	 SRC("5", "docs/specification/<v>/server/tools.mdx, basic/lifecycle.mdx")},
	{"CAP-002", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST, "prompts/list|prompts/get", cap_002,
	 "c→s prompts/list and prompts/get only when the server declared prompts",
	 SRC("5", "docs/specification/<v>/server/prompts.mdx")},
	{"CAP-003", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST,
	 "resources/list|resources/templates/list|resources/read", cap_003,
	 "c→s resources/list, resources/templates/list and resources/read only when the server "
	 "declared resources",
	 SRC("5", "docs/specification/<v>/server/resources.mdx")},
	{"CAP-004", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST,
	 "resources/subscribe|resources/unsubscribe", cap_004,
	 "c→s resources/subscribe and resources/unsubscribe only when the server declared "
	 "resources.subscribe: true",
	 SRC("5", "docs/specification/<v>/server/resources.mdx")},
	{"CAP-005", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST, "logging/setLevel", cap_005,
	 "c→s logging/setLevel only when the server declared logging",
	 SRC("5", "docs/specification/<v>/server/utilities/logging.mdx")},
	{"CAP-006", AN_ERROR, AN_SEV_MUST_0618, AN_FROM_0326, AN_ON_REQUEST, "completion/complete", cap_006,
	 "c→s completion/complete only when the server declared completions (ungated in "
	 "2024-11-05, where the capability does not exist)",
	 SRC("5", "docs/specification/<v>/server/utilities/completion.mdx")},
	{"CAP-007", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION, "notifications/message", cap_007,
	 "a server that sends notifications/message declared logging, and the level is one of the "
	 "eight syslog levels",
	 SRC("5", "docs/specification/<v>/server/utilities/logging.mdx")},
	{"CAP-008", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_NOTIFICATION,
	 "notifications/tools/list_changed|notifications/prompts/list_changed|"
	 "notifications/resources/list_changed",
	 cap_008,
	 "s→c notifications/{tools,prompts,resources}/list_changed only when the server declared "
	 "the matching listChanged: true",
	 SRC("5", "server/tools.mdx, server/prompts.mdx, server/resources.mdx")},
	{"CAP-009", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_NOTIFICATION,
	 "notifications/resources/updated", cap_009,
	 "s→c notifications/resources/updated only when the server declared resources.subscribe: "
	 "true, and (warning) for a uri the client is subscribed to, or a sub-resource of one "
	 "(a subscribe still unanswered among the last 256 requests counts)",
	 SRC("5", "schema/<v>/schema.ts (ResourceUpdatedNotification)")},
	{"CAP-010", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST, "sampling/createMessage", cap_010,
	 "s→c sampling/createMessage only when the client declared sampling",
	 SRC("5", "docs/specification/<v>/client/sampling.mdx")},
	{"CAP-011", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_REQUEST | AN_ON_ERROR, "roots/list", cap_011,
	 "s→c roots/list only when the client declared roots; a client without roots answers "
	 "-32601 (warning)",
	 SRC("5", "docs/specification/<v>/client/roots.mdx")},
	{"CAP-012", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, AN_ON_NOTIFICATION,
	 "notifications/roots/list_changed", cap_012,
	 "c→s notifications/roots/list_changed only when the client declared roots.listChanged: true",
	 SRC("5", "docs/specification/<v>/client/roots.mdx")},
	{"CAP-013", AN_ERROR, AN_SEV_MUST_0618, AN_FROM_0618, AN_ON_REQUEST, "elicitation/create", cap_013,
	 "s→c elicitation/create only when the client declared elicitation",
	 SRC("5", "docs/specification/<v>/client/elicitation.mdx")},
	{"CAP-014", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST | AN_ON_ANSWER, "elicitation/create",
	 cap_014,
	 "elicitation/create only in a mode the client declared (no mode = form; elicitation {} = "
	 "form only; url needs elicitation.url), and the client answers an undeclared mode with "
	 "-32602",
	 SRC("5", "docs/specification/2025-11-25/client/elicitation.mdx")},
	{"CAP-015", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST | AN_ON_RESPONSE,
	 "sampling/createMessage", cap_015,
	 "sampling/createMessage with tools or toolChoice only when the client declared "
	 "sampling.tools; a client without it returns an error",
	 SRC("5", "docs/specification/2025-11-25/client/sampling.mdx, schema/2025-11-25/schema.ts")},
	{"CAP-016", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST, "sampling/createMessage", cap_016,
	 "includeContext thisServer/allServers only when the client declared sampling.context",
	 SRC("5", "docs/specification/2025-11-25/client/sampling.mdx")},
	{"CAP-017", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST, NULL, cap_017,
	 "a request is task-augmented only when the receiver declared the task capability for it "
	 "(tools/call without tasks.requests.tools.call: error)",
	 SRC("5", "docs/specification/2025-11-25/basic/utilities/tasks.mdx")},
	{"CAP-018", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST | AN_ON_ANSWER, "tools/call", cap_018,
	 "tools/call follows the tool's execution.taskSupport from the latest tools/list "
	 "(absent/forbidden: no task; required: a task, else the server answers -32601, or the "
	 "-32600 tasks.mdx also allows)",
	 SRC("5", "docs/specification/2025-11-25/basic/utilities/tasks.mdx")},
	{"CAP-019", AN_ERROR, AN_SEV_MUST_0618, AN_ONLY_1125, AN_ON_REQUEST, "tasks/list|tasks/cancel",
	 cap_019, "tasks/list and tasks/cancel only when the receiver declared tasks.list / tasks.cancel",
	 SRC("5", "docs/specification/2025-11-25/basic/utilities/tasks.mdx")},
	{"CAP-020", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_NOTIFICATION,
	 "notifications/elicitation/complete", cap_020,
	 "notifications/elicitation/complete names the elicitationId of a url-mode elicitation "
	 "the server sent this client (repeats: info)",
	 SRC("5", "docs/specification/2025-11-25/client/elicitation.mdx")},
	{"CAP-021", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_ERROR, NULL, cap_021,
	 "a -32042 error goes to a client with elicitation.url and lists only url-mode "
	 "elicitations, each with an elicitationId",
	 SRC("5", "docs/specification/2025-11-25/client/elicitation.mdx")},
	{"CAP-022", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE,
	 "tools/list|tools/call|prompts/list|prompts/get|resources/list|resources/templates/list|"
	 "resources/read|resources/subscribe|resources/unsubscribe|completion/complete|"
	 "sampling/createMessage|roots/list|elicitation/create",
	 cap_022,
	 "a party answers a feature request with a result only when it declared that feature's "
	 "capability (tools, prompts, resources, completions, sampling, roots, elicitation)",
	 SRC("5", "server/tools.mdx, server/prompts.mdx, server/resources.mdx, client/*.mdx")},
	{"CAP-023", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_RESPONSE, "initialize", cap_023,
	 "declared capabilities have the schema's value types: listChanged and subscribe booleans, "
	 "the others objects, experimental a map of objects",
	 SRC("5", "schema/<v>/schema.json")},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_cap[] = {
	{AN_ON_RESPONSE, "initialize", track_init_retry, "cap"},
	{AN_ON_RESPONSE, "tools/list", track_tools, "cap"},
	{AN_ON_REQUEST, "elicitation/create", track_elicit, "cap"},
	{AN_ON_ERROR, NULL, track_url_error, "cap"},
	{AN_ON_NOTIFICATION, "notifications/elicitation/complete", track_complete, "cap"},
	{0, NULL, NULL, NULL},
};
