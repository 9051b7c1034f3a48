/*
 * rules/v26.c - the stateless 2026-07-28 revision (MCP-RULES Appendix A): the
 * per-request _meta, versions, ids, resultType and multi round-trip requests
 * (MRTR), no server requests, cancellation, request-scoped logging,
 * subscriptions, error codes and cacheable results.
 *
 * A session is 2026-07-28 when its first request carries
 * _meta["io.modelcontextprotocol/protocolVersion"] and there is no initialize
 * (engine.c, detect_stateless). The tracker keeps what the engine does not:
 * the server/discover answer, the open requests that asked for log messages,
 * the open subscriptions/listen requests, the ids of requests answered with
 * input_required, and which deprecated features were already reported.
 */
#include <string.h>

#include "analyze/analyze.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT "io.modelcontextprotocol/clientInfo"
#define META_SERVER "io.modelcontextprotocol/serverInfo"
#define META_LOG "io.modelcontextprotocol/logLevel"
#define META_SUB "io.modelcontextprotocol/subscriptionId"

/* Messages for a cancelled request within this many ms of the cancel were in flight. */
#define CANCEL_GRACE_MS 100
/* The most request ids answered with input_required that are remembered. */
#define MAX_INPUT_REQUIRED 4096

/* Deprecated features (V26-015), as bits of ext.v26.dep. */
enum { DEP_ROOTS = 1, DEP_SAMPLING = 2, DEP_LOGGING = 4, DEP_CONTEXT = 8 };

/* How many bytes of s (at most max) to print without cutting a UTF-8 character. */
static int clip(const char *s, int max)
{
	int n = 0;

	while (n < max && s[n])
		n++;
	if (s[n])
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	return n;
}

static json_t *v26_ext(const struct an_state *st)
{
	return json_object_get(st->ext, "v26");
}

/* A member of the extension object by an id key (which may hold any bytes). */
static json_t *by_key(json_t *obj, const char *key, size_t n)
{
	return obj ? json_object_getn(obj, key, n) : NULL;
}

/* The _meta of a request the engine kept the params of (borrowed; NULL if none). */
static json_t *request_meta(const struct an_request *r)
{
	return r ? json_object_get(an_req_params(r), "_meta") : NULL;
}

/* The client's answer to a server answer: the request it answers, when it is the client's. */
static const struct an_request *client_request(const struct an_msg *m)
{
	return m->dir == AN_S2C && m->req && m->req->dir == AN_C2S ? m->req : NULL;
}

/* The client capabilities a request declared (per request in this revision). */
static json_t *request_caps(const struct an_ctx *c, const struct an_request *r)
{
	json_t *caps = json_object_get(request_meta(r), META_CAPS);

	return json_is_object(caps) ? caps : c->st->client_caps;
}

static const char *result_type(json_t *result)
{
	return json_string_value(json_object_get(result, "resultType"));
}

static int is_input_required(json_t *result)
{
	const char *rt = result_type(result);

	return rt && !strcmp(rt, "input_required");
}

static int log_rank(const char *level)
{
	static const char *const levels[] = {
		"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
	};

	for (int i = 0; level && i < 8; i++)
		if (!strcmp(level, levels[i]))
			return i;
	return -1;
}

/* ---- V26-001: the per-request _meta ---- */

/* What a request's _meta lacks of the required fields: NULL when nothing. */
static const char *meta_missing(json_t *meta)
{
	int v = json_is_string(json_object_get(meta, META_VERSION));
	int k = json_is_object(json_object_get(meta, META_CAPS));

	if (v && k)
		return NULL;
	if (!v && !k)
		return META_VERSION " and " META_CAPS;
	return v ? META_CAPS : META_VERSION;
}

static void v26_001(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	json_t *ext = v26_ext(c->st);
	const struct an_request *r;
	const char *missing;

	if (m->dir == AN_C2S && m->cls->kind == MT_REQUEST) {
		json_t *meta = an_path(an_params(c), "_meta");
		if (!strcmp(m->method, "initialize"))
			return; /* a dual-era fallback to legacy semantics: V26-014 */
		if ((missing = meta_missing(meta)))
			an_report(c, -1, "%s lacks _meta %s: every 2026-07-28 request carries them",
				  m->method, missing);
		else if (!json_object_get(meta, META_CLIENT) &&
			 !json_is_true(json_object_get(ext, "noclientinfo")))
			an_report(c, AN_WARNING,
				  "%s has no _meta %s: clients should send it on every "
				  "request (not reported again)",
				  m->method, META_CLIENT);
		return;
	}
	if (!(r = client_request(m)) || !an_req_params(r))
		return;
	if ((missing = meta_missing(request_meta(r)))) {
		int64_t rel = r->seq;
		if (m->cls->kind == MT_RESPONSE)
			an_report_at(c, -1, m->seq, &rel, 1,
				     "#%lld lacked _meta %s, yet the server "
				     "answered it with a result instead of a -32602 error",
				     (long long)r->seq, missing);
		else if (m->cls->has_error_code && m->cls->error_code != -32602)
			an_report_at(c, -1, m->seq, &rel, 1,
				     "#%lld lacked _meta %s: the server must "
				     "reject it with -32602, not %lld",
				     (long long)r->seq, missing, (long long)m->cls->error_code);
		return;
	}
	if (m->cls->kind == MT_RESPONSE && !json_is_true(json_object_get(ext, "noserverinfo")) &&
	    !json_object_get(json_object_get(an_result(c), "_meta"), META_SERVER))
		an_report(c, AN_WARNING,
			  "the result has no _meta %s: servers should send it in every "
			  "result (not reported again)",
			  META_SERVER);
}

/* ---- V26-002: unsupported versions ---- */

static int string_in(json_t *array, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(array, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return 1;
	return 0;
}

/*
 * At the end: a server that answered every request of the session with the
 * same error, over several methods and never with a result, refuses the
 * revision itself (a 2025-11-25 server asking for its initialize) without
 * saying so as -32022 says it.
 */
static void silent_refusal(const struct an_ctx *c)
{
	json_t *a = json_object_get(v26_ext(c->st), "answers");
	json_int_t errors = json_integer_value(json_object_get(a, "errors"));
	int64_t rel = json_integer_value(json_object_get(a, "rseq"));

	if (!a || json_integer_value(json_object_get(a, "results")) || json_object_get(a, "mixed") ||
	    errors < 2 || json_object_size(json_object_get(a, "methods")) < 2 ||
	    json_integer_value(json_object_get(a, "code")) == -32022)
		return;
	an_report_at(c, -1, json_integer_value(json_object_get(a, "seq")), &rel, 1,
		     "the server answered none of %lld requests (%zu methods) with a result, each with "
		     "error %lld '%.80s': a server without this revision answers -32022 "
		     "UnsupportedProtocolVersionError, naming the ones it has",
		     (long long)errors, json_object_size(json_object_get(a, "methods")),
		     (long long)json_integer_value(json_object_get(a, "code")),
		     json_string_value(json_object_get(a, "message"))
			     ? json_string_value(json_object_get(a, "message"))
			     : "");
}

static void v26_002(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_request *r = m ? client_request(m) : NULL;
	const char *asked = json_string_value(json_object_get(request_meta(r), META_VERSION));
	json_t *known = an_path(v26_ext(c->st), "discover.versions");
	int64_t rel = r ? r->seq : 0;

	if (!m) {
		silent_refusal(c);
		return;
	}
	if (!r)
		return;
	if (m->cls->kind == MT_ERROR && m->cls->has_error_code && m->cls->error_code == -32022) {
		json_t *data = json_object_get(an_error(c), "data"),
		       *sup = json_object_get(data, "supported");
		size_t i;
		json_t *v;
		int ok = json_is_array(sup);
		json_array_foreach(sup, i, v) ok = ok && json_is_string(v);
		const char *req = json_string_value(json_object_get(data, "requested"));
		if (!ok || !req)
			an_report(c, -1,
				  "UnsupportedProtocolVersionError (-32022) without data.supported "
				  "(an array of strings) and data.requested (a string)");
		else if (asked && strcmp(req, asked))
			an_report_at(c, AN_WARNING, m->seq, &rel, 1,
				     "-32022 says '%s' was requested, "
				     "but #%lld asked for '%s'",
				     req, (long long)r->seq, asked);
		if (asked && json_is_array(known) && string_in(known, asked))
			an_report_at(c, -1, m->seq, &rel, 1,
				     "the server rejects revision '%s' of #%lld "
				     "as unsupported, but server/discover listed it",
				     asked, (long long)r->seq);
		return;
	}
	if (!asked)
		return;
	if (!strcmp(r->method, "server/discover") && m->cls->kind == MT_RESPONSE) {
		json_t *sv = json_object_get(an_result(c), "supportedVersions");
		if (json_is_array(sv) && !string_in(sv, asked) && !is_input_required(an_result(c)))
			an_report_at(c, -1, m->seq, &rel, 1,
				     "server/discover #%lld asked in revision "
				     "'%s', which the answer does not list as "
				     "supported: it must be a -32022 error",
				     (long long)r->seq, asked);
		return;
	}
	if (json_is_array(known) && !string_in(known, asked))
		an_report_at(c, -1, m->seq, &rel, 1,
			     "#%lld asked for revision '%s', which "
			     "server/discover did not list, and got %s instead of "
			     "a -32022 UnsupportedProtocolVersionError",
			     (long long)r->seq, asked,
			     m->cls->kind == MT_RESPONSE ? "a result" : "another error");
}

/* ---- V26-003: request ids ---- */

static void v26_003(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_state *st = c->st;
	json_t *p, *orig;
	const struct an_request *open;

	if (m->dir != AN_C2S || m->cls->idtype == MT_ID_NULL)
		return;
	open = an_open_request(st, AN_C2S, m->id_key, m->id_key_len);
	if (open && open->seq != m->seq) {
		int64_t rel = open->seq;
		an_report_at(c, -1, m->seq, &rel, 1,
			     "request id %.*s is still in use by #%lld (%s), "
			     "which has no answer yet",
			     (int)m->cls->id.n, m->cls->id.p, (long long)rel, open->method);
		return;
	}
	p = an_params(c);
	if (!json_object_get(p, "inputResponses") && !json_object_get(p, "requestState"))
		return;
	orig = by_key(json_object_get(v26_ext(st), "ir"), m->id_key, m->id_key_len);
	if (orig) {
		int64_t rel = json_integer_value(orig);
		an_report_at(c, -1, m->seq, &rel, 1,
			     "the retry reuses id %.*s of #%lld, which was "
			     "answered with input_required: a retry has a new id",
			     (int)m->cls->id.n, m->cls->id.p, (long long)rel);
	}
}

/* ---- V26-004: resultType and InputRequiredResult ---- */

static int mrtr_method(const char *method)
{
	return !strcmp(method, "tools/call") || !strcmp(method, "prompts/get") ||
	       !strcmp(method, "resources/read");
}

static int extensions_declared(const struct an_ctx *c, const struct an_request *r)
{
	json_t *a = json_object_get(request_caps(c, r), "extensions");
	json_t *b = an_path(v26_ext(c->st), "discover.caps.extensions");

	return json_object_size(a) || json_object_size(b);
}

static void v26_004(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_request *r = client_request(m);
	json_t *result = an_result(c), *rtv, *irs, *v;
	const char *rt, *key;

	if (!r || !json_is_object(result))
		return; /* an answer to no request: RPC-004; not an object: RPC-011 */
	rtv = json_object_get(result, "resultType");
	if (!rtv) {
		an_report(c, -1,
			  "the %s result has no resultType: a 2026-07-28 server sends "
			  "\"complete\" or \"input_required\"",
			  r->method);
		return;
	}
	if (!json_is_string(rtv)) {
		an_report(c, -1, "the %s result's resultType is not a string", r->method);
		return;
	}
	rt = json_string_value(rtv);
	if (!strcmp(rt, "complete"))
		return;
	if (strcmp(rt, "input_required")) {
		an_report(c, extensions_declared(c, r) ? AN_WARNING : AN_ERROR,
			  "the %s result has resultType '%.*s', which is neither \"complete\" nor "
			  "\"input_required\"%s",
			  r->method, clip(rt, 40), rt,
			  extensions_declared(c, r) ? " (an extension may define it)" : "");
		return;
	}
	if (!mrtr_method(r->method)) {
		an_report(c, -1,
			  "%s was answered with input_required: only tools/call, prompts/get "
			  "and resources/read may be",
			  r->method);
		return;
	}
	irs = json_object_get(result, "inputRequests");
	if (!irs && !json_object_get(result, "requestState")) {
		an_report(c, -1,
			  "the input_required result has neither inputRequests nor "
			  "requestState");
		return;
	}
	v = json_object_get(result, "requestState");
	if (v && !json_is_string(v))
		an_report(c, -1, "the input_required result's requestState is not a string");
	if (irs && !json_is_object(irs)) {
		an_report(c, -1, "inputRequests is not an object (a map of id to request)");
		return;
	}
	json_object_foreach(irs, key, v)
	{
		const char *meth = json_string_value(json_object_get(v, "method"));
		if (!meth || (strcmp(meth, "elicitation/create") && strcmp(meth, "sampling/createMessage") &&
			      strcmp(meth, "roots/list")))
			an_report(c, -1,
				  "input request '%.*s' is %.*s, not elicitation/create, "
				  "sampling/createMessage or roots/list",
				  clip(key, 40), key, meth ? clip(meth, 40) : 13,
				  meth ? meth : "not a request");
	}
}

/* ---- V26-005: no server requests, no client responses ---- */

static void v26_005(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->dir == AN_S2C && m->cls->kind == MT_REQUEST)
		an_report(c, -1,
			  "the server sent a JSON-RPC request (%s): in 2026-07-28 it asks "
			  "for input inside an input_required result",
			  m->method);
	else if (m->dir == AN_C2S && (m->cls->kind == MT_RESPONSE || m->cls->kind == MT_ERROR))
		an_report(c, -1,
			  "the client wrote a JSON-RPC %s: in 2026-07-28 clients send only "
			  "requests and notifications",
			  mt_kind_name(m->cls->kind));
}

/* ---- V26-006: only declared client capabilities ---- */

static void v26_006(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_request *r = client_request(m);
	json_t *caps, *irs, *v;
	const char *key;

	if (!r)
		return;
	caps = request_caps(c, r);
	if (m->cls->kind == MT_ERROR) {
		json_t *need;
		int all_declared = 1;
		if (!m->cls->has_error_code || m->cls->error_code != -32021)
			return;
		need = an_path(an_error(c), "data.requiredCapabilities");
		if (!json_is_object(need)) {
			an_report(c, -1,
				  "MissingRequiredClientCapabilityError (-32021) without a "
				  "data.requiredCapabilities object");
			return;
		}
		json_object_foreach(need, key, v) all_declared = all_declared && json_object_get(caps, key);
		if (all_declared && json_object_size(need)) {
			int64_t rel = r->seq;
			an_report_at(c, -1, m->seq, &rel, 1,
				     "-32021 says capabilities are missing that "
				     "#%lld declared",
				     (long long)r->seq);
		}
		return;
	}
	irs = json_object_get(an_result(c), "inputRequests");
	if (!is_input_required(an_result(c)) || !json_is_object(irs))
		return;
	json_object_foreach(irs, key, v)
	{
		const char *meth = json_string_value(json_object_get(v, "method"));
		json_t *p = json_object_get(v, "params");
		const char *need = NULL;
		if (!meth)
			continue;
		if (!strcmp(meth, "roots/list")) {
			if (!json_object_get(caps, "roots"))
				need = "roots";
		} else if (!strcmp(meth, "sampling/createMessage")) {
			const char *ctx = json_string_value(json_object_get(p, "includeContext"));
			if (!json_object_get(caps, "sampling"))
				need = "sampling";
			else if ((json_object_get(p, "tools") || json_object_get(p, "toolChoice")) &&
				 !an_path(caps, "sampling.tools"))
				need = "sampling.tools";
			else if (ctx && strcmp(ctx, "none") && !an_path(caps, "sampling.context"))
				an_report(c, AN_WARNING,
					  "input request '%.*s' uses includeContext "
					  "'%.*s' without sampling.context",
					  clip(key, 40), key, clip(ctx, 20), ctx);
		} else if (!strcmp(meth, "elicitation/create")) {
			json_t *el = json_object_get(caps, "elicitation");
			const char *mode = json_string_value(json_object_get(p, "mode"));
			if (!el)
				need = "elicitation";
			else if (mode && !strcmp(mode, "url")) {
				if (!json_object_get(el, "url"))
					need = "elicitation.url";
			} else if (json_object_get(el, "url") && !json_object_get(el, "form")) {
				need = "elicitation.form";
			}
		}
		if (need)
			an_report(c, -1,
				  "input request '%.*s' (%s) needs the client capability %s, "
				  "which #%lld did not declare",
				  clip(key, 40), key, meth, need, (long long)r->seq);
	}
}

/* ---- V26-009: nothing more for a cancelled request ---- */

static void after_cancel(const struct an_ctx *c, const struct an_request *r, const char *what)
{
	const struct an_msg *m = c->m;
	int64_t rel[2];

	if (!r || r->dir != AN_C2S || !r->cancel_seq || r->cancel_seq > m->seq ||
	    m->t_ns - r->cancel_t_ns <= (int64_t)CANCEL_GRACE_MS * 1000000)
		return;
	rel[0] = r->seq;
	rel[1] = r->cancel_seq;
	an_report_at(c, -1, m->seq, rel, 2,
		     "%s for #%lld %s, %lld ms after the client cancelled "
		     "it (#%lld)",
		     what, (long long)r->seq, r->method, (long long)((m->t_ns - r->cancel_t_ns) / 1000000),
		     (long long)r->cancel_seq);
}

static void v26_009(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_state *st = c->st;
	struct mt_buf key = MT_BUF_INIT;
	json_t *p, *v;

	if (m->dir != AN_S2C)
		return;
	if (m->cls->kind != MT_NOTIFICATION) {
		after_cancel(c, client_request(m), m->cls->kind == MT_ERROR ? "an error" : "a result");
		return;
	}
	p = an_params(c);
	if (!strcmp(m->method, "notifications/progress") && (v = json_object_get(p, "progressToken"))) {
		an_key_of(v, &key);
		after_cancel(c, an_token_request(st, AN_C2S, key.data ? key.data : "", key.len), "progress");
	} else if ((v = json_object_get(json_object_get(p, "_meta"), META_SUB)) &&
		   strcmp(m->method, "notifications/cancelled")) {
		an_key_of(v, &key);
		after_cancel(c, an_find_request(st, AN_C2S, key.data, key.len), m->method);
	}
	mt_buf_release(&key);
}

/* ---- V26-010: request-scoped log messages ---- */

static void v26_010(const struct an_ctx *c)
{
	json_t *p = an_params(c), *open = json_object_get(v26_ext(c->st), "log"), *v;
	const char *key;
	int want = 99, level;

	if (c->m->dir != AN_S2C)
		return;
	if (json_object_get(json_object_get(p, "_meta"), META_SUB)) {
		an_report(c, -1,
			  "notifications/message on a subscriptions/listen stream: log "
			  "messages belong to the request that asked for them");
		return;
	}
	json_object_foreach(open, key, v)
	{
		int r = log_rank(json_string_value(v));
		if (r >= 0 && r < want)
			want = r;
	}
	if (!json_object_size(open)) {
		an_report(c, -1,
			  "notifications/message, but no open request asked for log messages "
			  "(_meta %s)",
			  META_LOG);
		return;
	}
	level = log_rank(json_string_value(json_object_get(p, "level")));
	if (level >= 0 && want < 99 && level < want)
		an_report(c, AN_WARNING,
			  "a %s log message is below the lowest level an open request "
			  "asked for",
			  json_string_value(json_object_get(p, "level")));
}

/* ---- V26-011: subscriptions ---- */

/* The filter flag a list_changed notification needs, or NULL. */
static const char *filter_flag(const char *method)
{
	if (!strcmp(method, "notifications/tools/list_changed"))
		return "toolsListChanged";
	if (!strcmp(method, "notifications/prompts/list_changed"))
		return "promptsListChanged";
	if (!strcmp(method, "notifications/resources/list_changed"))
		return "resourcesListChanged";
	return NULL;
}

/* Is uri one of the subscribed URIs, or below one? */
static int uri_subscribed(json_t *uris, const char *uri)
{
	size_t i;
	json_t *v;

	json_array_foreach(uris, i, v)
	{
		const char *s = json_string_value(v);
		if (s && !strncmp(uri, s, strlen(s)))
			return 1;
	}
	return 0;
}

static void v26_011_ack(const struct an_ctx *c, json_t *sub, const char *sid)
{
	json_t *got = json_object_get(an_params(c), "notifications"), *want, *v;
	const char *key;

	if (json_is_true(json_object_get(sub, "acked")))
		return;
	want = json_object_get(sub, "filter");
	if (!json_is_object(got)) {
		an_report(c, -1, "the acknowledgement of subscription %s has no notifications object", sid);
		return;
	}
	json_object_foreach(got, key, v)
	{
		if (!strcmp(key, "resourceSubscriptions")) {
			size_t i;
			json_t *u;
			json_array_foreach(v, i, u)
			{
				const char *s = json_string_value(u);
				if (s && !string_in(json_object_get(want, key), s))
					an_report(c, -1,
						  "subscription %s acknowledges resource '%.*s', "
						  "which the client did not ask for",
						  sid, clip(s, 80), s);
			}
		} else if (json_is_true(v) && !json_is_true(json_object_get(want, key))) {
			an_report(c, -1,
				  "subscription %s acknowledges %.*s, which the client did not "
				  "ask for",
				  sid, clip(key, 40), key);
		}
	}
}

static void v26_011(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	json_t *subs = json_object_get(v26_ext(c->st), "subs"), *sidv, *sub;
	struct mt_buf key = MT_BUF_INIT;
	char sid[64];
	const char *flag;

	if (m->dir != AN_S2C)
		return;
	if (m->cls->kind == MT_RESPONSE) {
		/* The graceful end of a subscription names it. */
		const struct an_request *r = client_request(m);
		if (!r || strcmp(r->method, "subscriptions/listen"))
			return;
		sidv = json_object_get(json_object_get(an_result(c), "_meta"), META_SUB);
		if (sidv)
			an_key_of(sidv, &key);
		if (!sidv || key.len != m->id_key_len || memcmp(key.data, m->id_key, key.len))
			an_report(c, -1,
				  "the subscriptions/listen result's _meta %s is %s, not its "
				  "request id %.*s",
				  META_SUB, sidv ? "another id" : "missing", (int)m->cls->id.n, m->cls->id.p);
		mt_buf_release(&key);
		return;
	}
	flag = filter_flag(m->method);
	if (!flag && strcmp(m->method, "notifications/resources/updated") &&
	    strcmp(m->method, "notifications/subscriptions/acknowledged"))
		return;
	sidv = json_object_get(json_object_get(an_params(c), "_meta"), META_SUB);
	if (!sidv) {
		an_report(c, -1,
			  "%s without _meta %s: it is sent only on a subscriptions/listen "
			  "stream",
			  m->method, META_SUB);
		return;
	}
	an_key_of(sidv, &key);
	sub = by_key(subs, key.data ? key.data : "", key.len);
	mt_buf_release(&key);
	snprintf(sid, sizeof(sid), "%s", json_is_string(sidv) ? json_string_value(sidv) : "");
	if (json_is_integer(sidv))
		snprintf(sid, sizeof(sid), "%lld", (long long)json_integer_value(sidv));
	for (char *s = sid; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7F)
			*s = '?';
	if (!sub) {
		an_report(c, -1,
			  "%s names subscription %s, which is not an open subscriptions/listen "
			  "request",
			  m->method, sid);
		return;
	}
	if (!strcmp(m->method, "notifications/subscriptions/acknowledged")) {
		v26_011_ack(c, sub, sid);
		return;
	}
	if (!json_is_true(json_object_get(sub, "acked")))
		an_report(c, -1,
			  "%s on subscription %s before notifications/subscriptions/"
			  "acknowledged",
			  m->method, sid);
	if (flag && !json_is_true(json_object_get(json_object_get(sub, "filter"), flag)))
		an_report(c, -1, "%s on subscription %s, which did not ask for %s", m->method, sid, flag);
	if (!flag) {
		json_t *uris = an_path(sub, "filter.resourceSubscriptions");
		const char *uri = json_string_value(json_object_get(an_params(c), "uri"));
		if (!json_array_size(uris))
			an_report(c, -1,
				  "notifications/resources/updated on subscription %s, which "
				  "subscribed to no resources",
				  sid);
		else if (uri && !uri_subscribed(uris, uri))
			an_report(c, AN_WARNING,
				  "notifications/resources/updated for '%.*s', which "
				  "subscription %s did not subscribe to",
				  clip(uri, 80), uri, sid);
	}
}

/* ---- V26-012: error codes ---- */

/* 1 the first time `what` is said of `code` in the session, 0 after. */
static int once(const struct an_ctx *c, const char *what, int64_t code)
{
	json_t *ext = v26_ext(c->st), *seen = json_object_get(ext, what);
	char key[24];

	if (!seen) {
		seen = json_object();
		json_object_set_new(ext, what, seen);
	}
	snprintf(key, sizeof(key), "%lld", (long long)code);
	if (json_object_get(seen, key))
		return 0;
	json_object_set_new(seen, key, json_true());
	return 1;
}

static void v26_012(const struct an_ctx *c)
{
	int64_t code = c->m->cls->error_code;

	if (!c->m->cls->has_error_code)
		return;
	if (code == -32002 || code == -32042)
		an_report(c, -1, "error code %lld is retired in 2026-07-28 (%s)", (long long)code,
			  code == -32002 ? "resource not found is -32602 now" : "URL elicitation");
	else if (code <= -32023 && code >= -32099)
		an_report(c, -1,
			  "error code %lld is in -32020..-32099, reserved for codes the "
			  "specification defines (-32020, -32021, -32022)",
			  (long long)code);
	else if (code <= -32000 && code >= -32019 && once(c, "legacy", code))
		an_report(c, AN_WARNING,
			  "error code %lld is in the legacy range -32000..-32019, which "
			  "new implementations should not use (not reported again for "
			  "this code)",
			  (long long)code);
}

/* ---- V26-013: cacheable results ---- */

static void v26_013(const struct an_ctx *c)
{
	static const char *const cacheable[] = {
		"tools/list",
		"prompts/list",
		"resources/list",
		"resources/templates/list",
		"resources/read",
		"server/discover",
		NULL,
	};
	const struct an_request *r = client_request(c->m);
	json_t *result, *ttl;
	const char *scope;
	size_t i;

	if (!r)
		return;
	for (i = 0; cacheable[i] && strcmp(cacheable[i], r->method); i++)
		;
	if (!cacheable[i])
		return;
	result = an_result(c);
	if (!json_is_object(result) || is_input_required(result))
		return;
	ttl = json_object_get(result, "ttlMs");
	if (!json_is_number(ttl) || json_number_value(ttl) < 0)
		an_report(c, -1,
			  "the %s result's ttlMs is %s: a cacheable result carries a number "
			  ">= 0",
			  r->method, ttl ? "invalid" : "missing");
	scope = json_string_value(json_object_get(result, "cacheScope"));
	if (!scope || (strcmp(scope, "public") && strcmp(scope, "private")))
		an_report(c, -1, "the %s result's cacheScope is %s: it is \"public\" or \"private\"",
			  r->method, json_object_get(result, "cacheScope") ? "invalid" : "missing");
}

/* ---- V26-014: dual-era ---- */

static void v26_014(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->cls->kind == MT_REQUEST) {
		/* The engine already takes the revision from this initialize: the phase
		 * still says the session was stateless. */
		if (m->dir == AN_C2S && c->st->phase == AN_PH_STATELESS)
			an_report(c, -1,
				  "initialize after 2026-07-28 requests: a dual-era server "
				  "switches this process to legacy semantics");
		return;
	}
	if (m->cls->kind == MT_ERROR && m->dir == AN_S2C) {
		json_t *err = an_error(c);
		const char *msg = json_string_value(json_object_get(err, "message"));
		int about_version = (m->cls->has_error_code && m->cls->error_code == -32022) ||
				    (msg && strcasestr(msg, "version"));
		if (about_version && !json_is_array(an_path(err, "data.supported")))
			an_report(c, -1,
				  "the initialize error names no supported versions "
				  "(data.supported): a modern-only server should, since legacy "
				  "clients cannot fall forward");
	}
}

/* ---- V26-015: deprecated features ---- */

/* The deprecated features the current message uses. */
static unsigned deprecated_bits(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	unsigned bits = 0;

	if (m->dir == AN_C2S && m->cls->kind == MT_REQUEST) {
		if (json_object_get(an_path(an_params(c), "_meta"), META_LOG))
			bits |= DEP_LOGGING;
	} else if (m->dir == AN_S2C && m->cls->kind == MT_NOTIFICATION) {
		if (!strcmp(m->method, "notifications/message"))
			bits |= DEP_LOGGING;
	} else if (m->dir == AN_S2C && m->cls->kind == MT_RESPONSE && client_request(m) &&
		   mrtr_method(m->method)) {
		json_t *irs = json_object_get(an_result(c), "inputRequests"), *v;
		const char *key;
		json_object_foreach(irs, key, v)
		{
			const char *meth = json_string_value(json_object_get(v, "method"));
			const char *ctx = json_string_value(an_path(v, "params.includeContext"));
			if (meth && !strcmp(meth, "roots/list"))
				bits |= DEP_ROOTS;
			if (meth && !strcmp(meth, "sampling/createMessage"))
				bits |= DEP_SAMPLING;
			if (ctx && strcmp(ctx, "none"))
				bits |= DEP_CONTEXT;
		}
	}
	return bits;
}

static void v26_015(const struct an_ctx *c)
{
	static const char *const what[] = {
		"roots (roots/list input requests)",
		"sampling (sampling/createMessage input requests)",
		"logging (_meta logLevel and notifications/message)",
		"includeContext \"thisServer\"/\"allServers\"",
	};
	unsigned seen = (unsigned)json_integer_value(json_object_get(v26_ext(c->st), "dep"));
	unsigned bits = deprecated_bits(c) & ~seen;

	for (int i = 0; i < 4; i++)
		if (bits & (1u << i))
			an_report(c, -1, "uses %s, deprecated in 2026-07-28 (not reported again)", what[i]);
}

/* ---- the tracker ---- */

static void track_request(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	json_t *p = an_params(c), *meta = json_object_get(p, "_meta"), *v;

	if (m->dir != AN_C2S)
		return;
	if (json_is_object(json_object_get(ext, "ir")))
		json_object_deln(json_object_get(ext, "ir"), m->id_key, m->id_key_len);
	if (!meta_missing(meta) && !json_object_get(meta, META_CLIENT))
		json_object_set_new(ext, "noclientinfo", json_true());
	if (json_is_string(v = json_object_get(meta, META_LOG))) {
		if (!json_object_get(ext, "log"))
			json_object_set_new(ext, "log", json_object());
		json_object_setn_nocheck(json_object_get(ext, "log"), m->id_key, m->id_key_len, v);
	}
	if (!strcmp(m->method, "subscriptions/listen")) {
		json_t *filter = json_object_get(p, "notifications");
		if (!json_object_get(ext, "subs"))
			json_object_set_new(ext, "subs", json_object());
		json_object_setn_new_nocheck(
			json_object_get(ext, "subs"), m->id_key, m->id_key_len,
			json_pack("{s:o,s:b}", "filter",
				  json_is_object(filter) ? json_incref(filter) : json_object(), "acked", 0));
	}
}

/* What the server answered, for V26-002 at the end (silent_refusal). */
static void count_answer(const struct an_ctx *c, json_t *ext, const struct an_request *r)
{
	const struct an_msg *m = c->m;
	json_t *a = json_object_get(ext, "answers"), *methods;
	json_int_t errors;

	if (!a) {
		a = json_pack("{s:i,s:i,s:{}}", "results", 0, "errors", 0, "methods");
		json_object_set_new(ext, "answers", a);
	}
	if (m->cls->kind == MT_RESPONSE) {
		json_object_set_new(a, "results",
				    json_integer(json_integer_value(json_object_get(a, "results")) + 1));
		return;
	}
	if (!m->cls->has_error_code)
		return;
	errors = json_integer_value(json_object_get(a, "errors")) + 1;
	json_object_set_new(a, "errors", json_integer(errors));
	methods = json_object_get(a, "methods");
	if (json_object_size(methods) < 64)
		json_object_set_new(methods, r->method, json_true());
	if (errors == 1) {
		json_t *msg = json_object_get(an_error(c), "message");
		json_object_set_new(a, "code", json_integer(m->cls->error_code));
		json_object_set_new(a, "seq", json_integer(m->seq));
		json_object_set_new(a, "rseq", json_integer(r->seq));
		json_object_set_new(a, "message", json_is_string(msg) ? json_incref(msg) : json_string(""));
	} else if (json_integer_value(json_object_get(a, "code")) != m->cls->error_code) {
		json_object_set_new(a, "mixed", json_true());
	}
}

static void track_answer(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	const struct an_request *r = client_request(m);
	json_t *result, *ir;

	if (!r)
		return;
	if (json_object_get(ext, "log"))
		json_object_deln(json_object_get(ext, "log"), m->id_key, m->id_key_len);
	if (json_object_get(ext, "subs"))
		json_object_deln(json_object_get(ext, "subs"), m->id_key, m->id_key_len);
	count_answer(c, ext, r);
	if (m->cls->kind != MT_RESPONSE)
		return;
	result = an_result(c);
	if (!json_object_get(json_object_get(result, "_meta"), META_SERVER))
		json_object_set_new(ext, "noserverinfo", json_true());
	if (is_input_required(result)) {
		if (!(ir = json_object_get(ext, "ir"))) {
			ir = json_object();
			json_object_set_new(ext, "ir", ir);
		}
		if (json_object_size(ir) < MAX_INPUT_REQUIRED)
			json_object_setn_new_nocheck(ir, m->id_key, m->id_key_len, json_integer(r->seq));
	}
	if (!strcmp(r->method, "server/discover") && json_is_object(result) && !is_input_required(result))
		json_object_set_new(ext, "discover",
				    json_pack("{s:O?,s:O?}", "versions",
					      json_object_get(result, "supportedVersions"), "caps",
					      json_object_get(result, "capabilities")));
}

static void track_notification(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	json_t *sidv, *sub;
	struct mt_buf key = MT_BUF_INIT;

	if (m->dir != AN_S2C || strcmp(m->method, "notifications/subscriptions/acknowledged"))
		return;
	sidv = json_object_get(json_object_get(an_params(c), "_meta"), META_SUB);
	if (!sidv)
		return;
	an_key_of(sidv, &key);
	sub = by_key(json_object_get(ext, "subs"), key.data ? key.data : "", key.len);
	if (sub)
		json_object_set_new(sub, "acked", json_true());
	mt_buf_release(&key);
}

static void v26_track(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	unsigned bits;

	if (c->st->version != AN_V2026_07_28)
		return;
	if (m->cls->kind == MT_REQUEST)
		track_request(c, ext);
	else if (m->cls->kind == MT_NOTIFICATION)
		track_notification(c, ext);
	else
		track_answer(c, ext);
	if ((bits = deprecated_bits(c)))
		json_object_set_new(ext, "dep",
				    json_integer(json_integer_value(json_object_get(ext, "dep")) | bits));
}

const struct an_rule an_rules_v26[] = {
	{"V26-001", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_REQUEST | AN_ON_ANSWER, NULL, v26_001,
	 "every request carries _meta protocolVersion and clientCapabilities, and one without "
	 "them gets -32602; clientInfo and the result's serverInfo are warnings (once)",
	 "MCP-RULES App. A; 2026-07-28/basic/index.mdx"},
	{"V26-002", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_ANSWER | AN_ON_END, NULL, v26_002,
	 "an unsupported revision gets -32022 with data.supported and data.requested "
	 "(supported = what server/discover listed); a server that answers every request of "
	 "several methods with one other error and never a result refuses the revision silently",
	 "MCP-RULES App. A; 2026-07-28/basic/versioning.mdx"},
	{"V26-003", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_REQUEST, NULL, v26_003,
	 "a request id differs from every request of the sender still unanswered, and an MRTR "
	 "retry has a new id",
	 "MCP-RULES App. A; 2026-07-28/basic/index.mdx, basic/patterns/mrtr.mdx"},
	{"V26-004", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_RESPONSE, NULL, v26_004,
	 "every result carries resultType \"complete\" or \"input_required\"; input_required "
	 "answers only tools/call, prompts/get, resources/read, with inputRequests or requestState",
	 "MCP-RULES App. A; 2026-07-28/basic/index.mdx, basic/patterns/mrtr.mdx"},
	{"V26-005", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_REQUEST | AN_ON_ANSWER, NULL, v26_005,
	 "the server writes no JSON-RPC requests and the client no JSON-RPC responses",
	 "MCP-RULES App. A; 2026-07-28/basic/patterns/index.mdx, basic/transports/stdio.mdx"},
	{"V26-006", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_ANSWER, NULL, v26_006,
	 "input requests need the client capabilities the request declared, and -32021 lists "
	 "capabilities that were really missing",
	 "MCP-RULES App. A; 2026-07-28/basic/index.mdx, basic/patterns/mrtr.mdx"},
	{"V26-007", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_HTTP, NULL, an_v26_007,
	 "Streamable HTTP is POST only (a GET or DELETE answered 2xx), with no session id from "
	 "the server and no Last-Event-ID (HTTP sessions only; rules/http.c)",
	 "MCP-RULES App. A; 2026-07-28/basic/transports/streamable-http.mdx"},
	{"V26-008", AN_ERROR, AN_SEV_FIXED, AN_V26,
	 AN_ON_REQUEST | AN_ON_NOTIFICATION | AN_ON_ANSWER | AN_FRAMING, NULL, an_v26_008,
	 "a POST's MCP-Protocol-Version matches _meta, Mcp-Method the body's method (required on "
	 "requests), Mcp-Name the name or uri of tools/call, prompts/get and resources/read; a "
	 "method the revision lacks gets HTTP 404 and -32601 (HTTP sessions only; rules/http.c)",
	 "MCP-RULES App. A; 2026-07-28/basic/transports/streamable-http.mdx"},
	{"V26-009", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_ANSWER | AN_ON_NOTIFICATION, NULL, v26_009,
	 "after the client cancels a request the server sends nothing more for it (a result, "
	 "progress, subscription notifications), allowing 100 ms for messages in flight",
	 "MCP-RULES App. A; 2026-07-28/basic/patterns/index.mdx"},
	{"V26-010", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_NOTIFICATION, "notifications/message", v26_010,
	 "notifications/message only while a request that set _meta logLevel is open, never on "
	 "a subscription stream (below that level: a warning)",
	 "MCP-RULES App. A; 2026-07-28/server/utilities/logging.mdx"},
	{"V26-011", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_NOTIFICATION | AN_ON_RESPONSE, NULL, v26_011,
	 "subscription notifications carry the subscriptionId of an open subscriptions/listen, "
	 "come after its acknowledgement, and only of the types it asked for",
	 "MCP-RULES App. A; 2026-07-28/basic/patterns/subscriptions.mdx"},
	{"V26-012", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_ERROR, NULL, v26_012,
	 "no -32002 or -32042, no undefined code in -32020..-32099 (-32000..-32019: a warning)",
	 "MCP-RULES App. A; 2026-07-28/basic/index.mdx"},
	{"V26-013", AN_ERROR, AN_SEV_FIXED, AN_V26, AN_ON_RESPONSE, NULL, v26_013,
	 "list, resources/read and server/discover results carry ttlMs (>= 0) and cacheScope "
	 "(public or private)",
	 "MCP-RULES App. A; schema/2026-07-28/schema.ts"},
	{"V26-014", AN_INFO, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST | AN_ON_ERROR, "initialize", v26_014,
	 "an initialize after 2026-07-28 requests selects legacy semantics; an initialize error "
	 "about the version names the supported versions",
	 "MCP-RULES App. A; 2026-07-28/basic/versioning.mdx"},
	{"V26-015", AN_INFO, AN_SEV_FIXED, AN_V26, AN_ON_REQUEST | AN_ON_RESPONSE | AN_ON_NOTIFICATION, NULL,
	 v26_015, "deprecated features in use: roots, sampling, logging, includeContext (once each)",
	 "MCP-RULES App. A; 2026-07-28/deprecated.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_v26[] = {
	{AN_ON_REQUEST | AN_ON_ANSWER | AN_ON_NOTIFICATION, NULL, v26_track, "v26"},
	{0, NULL, NULL, NULL},
};
