/*
 * rules/http.c - the Streamable HTTP transport (MCP-RULES §6.2, and the
 * 2026-07-28 revision's HTTP rules of Appendix A, V26-007 and V26-008): what
 * the exchanges of an http session say (methods, targets, statuses, headers,
 * content types) and where its messages travelled (which body, which SSE
 * stream, which event id).
 *
 * These rules run only on sessions recorded by the HTTP tap whose transport
 * is http (an_rule_transports). The engine keeps each exchange from its row
 * (which comes whole, before its messages) to its last message, and the
 * session's HTTP state (an_state.http: the endpoint, the assigned session
 * id, when it ended, the event ids seen, bounded); a rule hooked to AN_ON_HTTP
 * sees an exchange begin (its request and response heads), be done (its
 * messages counted) and the server messages that are copies (replays after a
 * Last-Event-ID, the same message on a second stream), which no other rule
 * reads.
 *
 * One cause, one finding: a request the HTTP layer refused (4xx, 5xx) is
 * owed no JSON-RPC answer, and an id-less error in its body is the HTTP
 * layer's (the engine and RPC-012 know); a request that never got its answer
 * is LIFE-015's, HTTP-008 says only an answer that came on the wrong stream;
 * a missing priming event is said once per session.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "analyze/analyze.h"

/* ---- helpers ---- */

static int ok_status(int s)
{
	return s >= 200 && s < 300;
}

/*
 * An MCP request: POST, GET or DELETE, not an OAuth discovery probe, and one
 * the tap relayed (one it refused itself, a foreign Host say, had its body
 * left unread and reached no server: its outcome says why).
 */
static int mcp_request(const struct an_exchange *x)
{
	return (!strcmp(x->method, "POST") || !strcmp(x->method, "GET") || !strcmp(x->method, "DELETE")) &&
	       strncmp(x->target, "/.well-known/", 13) && !(x->outcome && !strcmp(x->outcome, "refused"));
}

/* A GET that resumes a stream (with Last-Event-ID). */
static int resumed(const struct an_exchange *x)
{
	return x && !strcmp(x->method, "GET") && x->last_event_id;
}

static const char *req_hdr(const struct an_exchange *x, const char *name)
{
	return an_hdr(x->req_headers, name);
}

static const char *resp_hdr(const struct an_exchange *x, const char *name)
{
	return an_hdr(x->resp_headers, name);
}

/* The event (begin or done) of exchange x, or NULL when the call is another. */
static const struct an_exchange *at(const struct an_ctx *c, enum an_http_event ev)
{
	return c->m && c->m->http == ev ? c->m->x : NULL;
}

/* A server message that is not JSON-RPC at all (RPC-001 and RPC-014 say the others). */
static int not_jsonrpc(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->in_batch || (m->cls->kind != MT_INVALID && m->cls->kind != MT_NOTJSONRPC))
		return 0;
	if (m->cls->kind == MT_NOTJSONRPC && an_jsonrpc_like(m))
		return 0;
	if (m->cls->kind == MT_INVALID && m->cls->error && !strcmp(m->cls->error, "invalid UTF-8") &&
	    an_version_in(c->st, AN_FROM_0326 | AN_V26))
		return 0;
	return 1;
}

/* ---- HTTP-001: one MCP endpoint ---- */

static void http_001(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *ep = c->st->http.endpoint;
	size_t n;

	if (!x || !ep || !mcp_request(x))
		return;
	n = strcspn(x->target, "?#");
	if (n != strlen(ep) || strncmp(x->target, ep, n))
		an_report(c, -1,
			  "%s %.*s: the session's MCP endpoint is %s (one path for POST, GET "
			  "and DELETE)",
			  x->method, (int)n, x->target, ep);
}

/* ---- HTTP-002: client messages only in POST bodies ---- */

static void http_002(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->dir != AN_C2S || m->in_batch || !m->x || !strcmp(m->x->method, "POST"))
		return;
	an_report(c, -1,
		  "the client sent a JSON-RPC message in the body of a %s (#%lld): every "
		  "client message is a new HTTP POST",
		  m->x->method, (long long)m->x->seq);
}

/* ---- HTTP-003 / HTTP-013: Accept on POST and GET ---- */

static void http_003(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *acc;
	int json, sse;

	if (!x || strcmp(x->method, "POST") || !mcp_request(x))
		return;
	acc = req_hdr(x, "Accept");
	json = an_accepts(acc, "application/json");
	sse = an_accepts(acc, "text/event-stream");
	if (!acc)
		an_report(c, -1,
			  "POST without an Accept header: it lists application/json and "
			  "text/event-stream");
	else if (!json || !sse)
		an_report(c, -1, "POST with Accept '%s': it lists %s too (wildcards do not count)", acc,
			  !json && !sse ? "application/json and text/event-stream"
			  : !json       ? "application/json"
					: "text/event-stream");
}

static void http_013(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *acc;

	if (!x || strcmp(x->method, "GET") || !mcp_request(x))
		return;
	acc = req_hdr(x, "Accept");
	if (!acc)
		an_report(c, -1, "GET without an Accept header: it lists text/event-stream");
	else if (!an_accepts(acc, "text/event-stream"))
		an_report(c, -1, "GET with Accept '%s': it lists text/event-stream", acc);
}

/* ---- HTTP-004: a POST body is one JSON-RPC message ---- */

static void http_004(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);

	if (!x || strcmp(x->method, "POST") || !mcp_request(x))
		return;
	/* (A batch is RPC-009's and RPC-010's.) */
	if (x->has_req_body)
		an_report(c, -1, "the POST body (%zu bytes) is not a JSON-RPC message: it is %s",
			  x->req_body_len,
			  an_version_in(c->st, AN_V(AN_V2025_03_26))
				  ? "one request, notification or response, or a batch of them"
				  : "one request, notification or response");
	else if (x->messages <= 0)
		an_report(c, -1, "a POST with an empty body: it carries one JSON-RPC message");
}

/* ---- HTTP-005 / 006 / 007: what a POST is answered with ---- */

static void http_005(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_DONE);

	if (!x || strcmp(x->method, "POST") || x->c2s_requests || !x->c2s_others || !ok_status(x->status))
		return;
	if (x->status != 202)
		an_report(c, -1,
			  "a POST of notifications or responses only was accepted with %d: "
			  "the answer is 202 Accepted",
			  x->status);
	else if (x->s2c_messages || x->has_resp_body || (x->resp_type && strcmp(x->resp_type, "empty")))
		an_report(c, -1,
			  "202 Accepted to a POST of notifications or responses has a body "
			  "(%s): it has none",
			  x->resp_type ? x->resp_type : "unknown type");
}

static void http_006(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->dir != AN_S2C || m->in_batch || !m->x || strcmp(m->x->method, "POST") || !m->channel ||
	    strcmp(m->channel, "body") || !ok_status(m->x->status) ||
	    (m->cls->idtype != MT_ID_NONE && m->cls->idtype != MT_ID_NULL))
		return;
	an_report(c, -1,
		  "the server refused the POST (#%lld) with an error without an id but "
		  "status %d: a refusal is an HTTP error status (e.g. 400)",
		  (long long)m->x->seq, m->x->status);
}

static void http_007(const struct an_ctx *c)
{
	const struct an_exchange *x = c->m->x;
	const char *ct;

	if (c->m->http == AN_HTTP_NONE) {
		/* A server message (SSE event data, a body) that is not JSON-RPC. */
		const struct an_msg *m = c->m;
		char ex[64];
		if (m->dir != AN_S2C || !not_jsonrpc(c))
			return;
		snprintf(ex, sizeof(ex), "%.*s", (int)(m->raw_len < 40 ? m->raw_len : 40), m->raw);
		for (char *p = ex; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = '?';
		an_report(c, -1, "the server sent %s that is not a JSON-RPC message%s (%s): '%s%s'",
			  m->channel && !strcmp(m->channel, "sse") ? "SSE event data" : "a body", "",
			  m->cls->error ? m->cls->error : "not JSON-RPC", ex, m->raw_len > 40 ? "..." : "");
		return;
	}
	if (!(x = at(c, AN_HTTP_DONE)) || strcmp(x->method, "POST") || !ok_status(x->status))
		return;
	if (x->error && !strncmp(x->error, "the stream ended inside an event", 32)) {
		an_report(c, -1,
			  "the SSE stream answering the POST ended inside an event (no "
			  "blank line after it): the event was never complete");
		return;
	}
	if (!x->c2s_requests)
		return;
	/* A body the capture did not see whole (it ended, or lost bytes of it) is not judged. */
	if (x->outcome && (!strcmp(x->outcome, "stopped") || !strcmp(x->outcome, "gap")) && !x->s2c_messages)
		return;
	ct = resp_hdr(x, "Content-Type");
	if (!an_media_is(ct, "application/json") && !an_media_is(ct, "text/event-stream"))
		an_report(c, -1,
			  "a POST carrying a request was answered %d with Content-Type '%s': "
			  "it is application/json or text/event-stream",
			  x->status, ct ? ct : "(none)");
	else if (an_media_is(ct, "application/json") && x->has_resp_body)
		an_report(c, -1,
			  "the application/json answer to a POST carrying a request is not "
			  "a JSON-RPC message (%zu bytes)",
			  x->resp_body_len);
	else if (an_media_is(ct, "application/json") && !x->s2c_messages)
		an_report(c, -1,
			  "the application/json answer to a POST carrying a request is "
			  "empty: it is the JSON-RPC response");
}

/* ---- HTTP-008: a request's answer on its POST's stream ---- */

static void http_008(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_request *r = m->req;

	/* (On a GET stream: resumed, it is fine; fresh, it is HTTP-016's.) */
	if (m->dir != AN_S2C || !r || r->dir != AN_C2S || r->answer_seq || !r->exchange_sse || !m->exchange ||
	    m->exchange == r->exchange || (m->x && !strcmp(m->x->method, "GET")))
		return;
	an_report(c, -1,
		  "the answer to #%lld %s came on the stream of #%lld, not on the SSE "
		  "stream of its POST (#%lld) nor on a resumed one (GET with Last-Event-ID)",
		  (long long)r->seq, r->method, (long long)m->exchange, (long long)r->exchange);
}

/* ---- HTTP-015 / HTTP-016: the GET stream ---- */

static void http_015(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *ct;

	if (!x || strcmp(x->method, "GET") || !mcp_request(x) || !ok_status(x->status))
		return;
	ct = resp_hdr(x, "Content-Type");
	if (!an_media_is(ct, "text/event-stream"))
		an_report(c, -1,
			  "the GET was answered %d with Content-Type '%s': it is "
			  "text/event-stream, or 405 Method Not Allowed",
			  x->status, ct ? ct : "(none)");
}

static void http_016(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	/* (An error in the JSON body of a GET the server refused is no message on a
	 * stream: the HTTP layer's refusal, which HTTP-006 and HTTP-026 judge.) */
	if (m->dir != AN_S2C || m->in_batch || !m->x || strcmp(m->x->method, "GET") || resumed(m->x) ||
	    !m->channel || strcmp(m->channel, "sse"))
		return;
	an_report(c, -1,
		  "a JSON-RPC %s on the GET stream (#%lld), which resumes no earlier "
		  "stream: answers go on the stream of their request",
		  m->cls->kind == MT_ERROR ? "error" : "response", (long long)m->x->seq);
}

/* ---- HTTP-018 / 019 / 020: streams, event ids, resumption ---- */

static void http_018(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	int64_t rel = m->copy_of;

	if (m->http != AN_HTTP_COPY || m->replayed || !m->copy_of)
		return;
	an_report_at(c, -1, m->seq, &rel, 1,
		     "the server sent this %s%s%s again on another stream (#%lld, first on #%lld): "
		     "each message goes on one stream only",
		     mt_kind_name(m->cls->kind), m->method ? " " : "", m->method ? m->method : "",
		     (long long)m->exchange, (long long)m->copy_of);
}

static void http_019(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->http != AN_HTTP_NONE || !m->replayed || m->in_batch || !m->x || resumed(m->x))
		return;
	if (m->copy_of) {
		int64_t rel = m->copy_of;
		an_report_at(c, -1, m->seq, &rel, 1,
			     "SSE event id '%s' on #%lld was already used on #%lld: event ids are "
			     "unique across the session's streams",
			     m->sse_id ? m->sse_id : "", (long long)m->exchange, (long long)m->copy_of);
	} else {
		an_report(c, -1,
			  "SSE event id '%s' on #%lld was already used in this session: event "
			  "ids are unique across its streams",
			  m->sse_id ? m->sse_id : "", (long long)m->exchange);
	}
}

static void http_020(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_exchange *x = m->x;
	int64_t from;

	if (m->http == AN_HTTP_BEGIN) {
		if (x->last_event_id && strcmp(x->method, "GET") && mcp_request(x))
			an_report(c, AN_WARNING,
				  "a %s with Last-Event-ID '%s': a stream is resumed "
				  "with an HTTP GET",
				  x->method, x->last_event_id);
		return;
	}
	if (m->http != AN_HTTP_COPY || !m->replayed || !resumed(x) || !m->copy_of)
		return;
	if (!mt_map_get(&c->st->http.events, x->last_event_id, strlen(x->last_event_id), &from) ||
	    from == m->copy_of)
		return;
	int64_t rel[2] = {m->copy_of, from};
	an_report_at(c, AN_ERROR, m->seq, rel, 2,
		     "the resumed stream #%lld replays event '%s' of stream #%lld, but its "
		     "Last-Event-ID '%s' is of stream #%lld: only that stream's messages are replayed",
		     (long long)x->seq, m->sse_id ? m->sse_id : "", (long long)m->copy_of, x->last_event_id,
		     (long long)from);
}

/* ---- HTTP-021: the priming event (2025-11-25) ---- */

static int unprimed(const struct an_exchange *x)
{
	return x && ok_status(x->status) && x->resp_type && !strcmp(x->resp_type, "sse") &&
	       (!strcmp(x->method, "POST") || !strcmp(x->method, "GET")) && x->s2c_messages &&
	       !x->s2c_with_id;
}

static void http_021(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_DONE);

	if (!unprimed(x) || json_is_true(json_object_get(json_object_get(c->st->ext, "http"), "unprimed")))
		return;
	an_report(c, -1,
		  "the SSE stream answering the %s carried %lld event%s and none with an "
		  "id: the server should open each stream with a priming event (an id and "
		  "empty data) so that the client can resume (said once)",
		  x->method, (long long)x->s2c_messages, x->s2c_messages == 1 ? "" : "s");
}

/* ---- HTTP-022 / 023 / 024 / 025: the session id ---- */

static void http_022(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const struct an_http *h = &c->st->http;
	const char *given;

	if (!x || !(given = resp_hdr(x, "Mcp-Session-Id")) || !ok_status(x->status))
		return;
	if (h->session_id && strcmp(given, h->session_id))
		an_report(c, -1,
			  "the server names session id '%s' on #%lld after '%s' (#%lld): a "
			  "session id is assigned once, on the initialize response",
			  given, (long long)x->seq, h->session_id, (long long)h->session_id_seq);
	else if (!h->session_id && c->st->init_answer_seq && x->seq > c->st->init_answer_seq)
		an_report(c, -1,
			  "the server first names a session id ('%s') on #%lld, after the "
			  "initialize exchange: it is assigned on the initialize response",
			  given, (long long)x->seq);
}

static void http_023(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *given;

	if (!x || !(given = resp_hdr(x, "Mcp-Session-Id")))
		return;
	for (const unsigned char *p = (const unsigned char *)given; *p; p++)
		if (*p < 0x21 || *p > 0x7E) {
			an_report(c, -1,
				  "session id '%s' holds byte 0x%02X at %zu: only visible ASCII "
				  "(0x21 to 0x7E)",
				  given, *p, (size_t)(p - (const unsigned char *)given));
			return;
		}
	if (!*given)
		an_report(c, -1, "an empty Mcp-Session-Id: a session id is visible ASCII (0x21 to 0x7E)");
}

static void http_024(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const struct an_http *h = &c->st->http;
	const char *sid;

	/* (A DELETE without it is HTTP-028's.) */
	if (!x || !h->session_id || x->seq <= h->session_id_seq || !mcp_request(x) ||
	    !strcmp(x->method, "DELETE"))
		return;
	sid = req_hdr(x, "Mcp-Session-Id");
	if (!sid)
		an_report(c, -1,
			  "%s without Mcp-Session-Id: the server assigned '%s' (#%lld), and "
			  "every later request carries it",
			  x->method, h->session_id, (long long)h->session_id_seq);
	else if (strcmp(sid, h->session_id))
		an_report(c, -1, "%s with Mcp-Session-Id '%s', not the session's '%s' (#%lld)", x->method,
			  sid, h->session_id, (long long)h->session_id_seq);
}

static void http_025(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const struct an_http *h = &c->st->http;

	if (!x || !h->session_id || x->seq <= h->session_id_seq || !mcp_request(x) ||
	    req_hdr(x, "Mcp-Session-Id") || x->status < 400 || x->status == 400 || x->status == 401 ||
	    x->status == 403 || x->status == 405)
		return;
	an_report(c, -1,
		  "a %s without Mcp-Session-Id was refused with %d: a server that requires "
		  "the session id answers 400 Bad Request",
		  x->method, x->status);
}

/* ---- HTTP-026 / 027 / 028: the session's end ---- */

static void http_026(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const struct an_http *h = &c->st->http;
	const char *sid;

	if (!x || !h->ended_seq || x->seq <= h->ended_seq || !x->status || x->status == 404 ||
	    !(sid = req_hdr(x, "Mcp-Session-Id")) || strcmp(sid, h->session_id))
		return;
	int64_t rel = h->ended_seq;
	an_report_at(c, -1, x->seq, &rel, 1,
		     "%s with session id '%s', which ended at #%lld (%s), got %d: a terminated "
		     "session's id gets 404 Not Found",
		     x->method, sid, (long long)h->ended_seq, h->ended_by_404 ? "404 Not Found" : "a DELETE",
		     x->status);
}

static void http_027(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const struct an_http *h = &c->st->http;
	const char *sid;

	if (!x || !h->ended_by_404 || h->reused_seq || x->seq <= h->ended_seq ||
	    !(sid = req_hdr(x, "Mcp-Session-Id")) || strcmp(sid, h->session_id))
		return;
	int64_t rel = h->ended_seq;
	an_report_at(c, -1, x->seq, &rel, 1,
		     "after 404 Not Found (#%lld) the client sent session id '%s' again: it starts a "
		     "new session, an initialize without a session id",
		     (long long)h->ended_seq, sid);
}

static void http_028(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const struct an_http *h = &c->st->http;

	if (!x || strcmp(x->method, "DELETE") || !mcp_request(x) || !h->session_id ||
	    req_hdr(x, "Mcp-Session-Id"))
		return;
	an_report(c, -1, "DELETE without Mcp-Session-Id: ending session '%s' (#%lld) takes its id",
		  h->session_id, (long long)h->session_id_seq);
}

/* ---- HTTP-029 / 030 / 032: MCP-Protocol-Version ---- */

static int after_init(const struct an_ctx *c, const struct an_exchange *x)
{
	return c->st->init_answer_seq && x->seq > c->st->init_answer_seq && mcp_request(x);
}

static int version_refused(const struct an_exchange *x, const char *v)
{
	enum an_version k;

	return an_version_parse(v, &k) && x->status != 400 && x->status != 0;
}

static void http_029(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);

	if (!x || !after_init(c, x) || req_hdr(x, "MCP-Protocol-Version"))
		return;
	an_report(c, -1,
		  "%s without MCP-Protocol-Version after the initialize exchange (#%lld): "
		  "every later request names the negotiated version",
		  x->method, (long long)c->st->init_answer_seq);
}

static void http_030(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *v;

	if (!x || !after_init(c, x) || !c->st->negotiated || !(v = req_hdr(x, "MCP-Protocol-Version")) ||
	    !strcmp(v, c->st->negotiated) || version_refused(x, v))
		return;
	an_report(c, -1, "%s with MCP-Protocol-Version '%s', but '%s' was negotiated", x->method, v,
		  c->st->negotiated);
}

static void http_032(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *v;

	if (!x || !mcp_request(x) || !(v = req_hdr(x, "MCP-Protocol-Version")) || !version_refused(x, v))
		return;
	an_report(c, -1,
		  "a %s with MCP-Protocol-Version '%s', which is no protocol version, got "
		  "%d: an invalid or unsupported version gets 400 Bad Request",
		  x->method, v, x->status);
}

/* ---- V26-007 / V26-008: the 2026-07-28 revision's Streamable HTTP ---- */

void an_v26_007(const struct an_ctx *c)
{
	const struct an_exchange *x = at(c, AN_HTTP_BEGIN);
	const char *sid;

	if (!x || !mcp_request(x))
		return;
	if (strcmp(x->method, "POST") && ok_status(x->status))
		an_report(c, -1,
			  "%s answered %d: in 2026-07-28 the endpoint is POST only (GET and "
			  "DELETE get 405)",
			  x->method, x->status);
	else if ((sid = resp_hdr(x, "Mcp-Session-Id")))
		an_report(c, -1, "the server names a session id ('%s'): 2026-07-28 has no sessions", sid);
	else if (x->last_event_id)
		an_report(c, -1, "%s with Last-Event-ID '%s': 2026-07-28 has no resumable streams", x->method,
			  x->last_event_id);
}

/*
 * The answer to a request for a method the revision does not have (and no
 * extension brings): "method not found", -32601 with HTTP 404.
 */
static void v26_008_answer(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_request *r = m->req;
	int64_t rel;

	if (m->dir != AN_S2C || !r || r->dir != AN_C2S || r->answer_seq || r->unreadable || !m->x ||
	    !r->method || !an_method_outside(c->st, r->method))
		return;
	if (m->cls->kind == MT_ERROR && m->cls->has_error_code && m->cls->error_code == -32601 &&
	    m->x->status == 404)
		return;
	rel = r->seq;
	if (m->cls->kind == MT_RESPONSE)
		an_report_at(c, -1, m->seq, &rel, 1,
			     "#%lld asks for %s, which 2026-07-28 does not "
			     "have, and got a result: an unimplemented method gets "
			     "HTTP 404 and -32601",
			     (long long)r->seq, r->method);
	else
		an_report_at(c, -1, m->seq, &rel, 1,
			     "#%lld asks for %s, which 2026-07-28 does not "
			     "have, and got HTTP %d with error %lld: an unimplemented "
			     "method gets HTTP 404 and -32601",
			     (long long)r->seq, r->method, m->x->status,
			     (long long)(m->cls->has_error_code ? m->cls->error_code : 0));
}

void an_v26_008(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_exchange *x = m->x;
	const char *hv, *hm, *hn, *want = NULL;
	json_t *pv;
	struct mt_buf why = MT_BUF_INIT;

	if (m->cls->kind == MT_RESPONSE || m->cls->kind == MT_ERROR) {
		v26_008_answer(c);
		return;
	}
	if (m->dir != AN_C2S || m->in_batch || !x || strcmp(x->method, "POST") || !m->method)
		return;
	hv = req_hdr(x, "MCP-Protocol-Version");
	hm = req_hdr(x, "Mcp-Method");
	hn = req_hdr(x, "Mcp-Name");
	pv = json_object_get(an_path(an_params(c), "_meta"), "io.modelcontextprotocol/protocolVersion");
	if (!hv)
		mt_buf_printf(&why, "; no MCP-Protocol-Version");
	else if (json_is_string(pv) && strcmp(hv, json_string_value(pv)))
		mt_buf_printf(&why, "; MCP-Protocol-Version '%s' but _meta says '%s'", hv,
			      json_string_value(pv));
	if (m->cls->kind == MT_REQUEST && !hm)
		mt_buf_printf(&why, "; no Mcp-Method");
	else if (hm && strcmp(hm, m->method))
		mt_buf_printf(&why, "; Mcp-Method '%s' but the body's method is '%s'", hm, m->method);
	if (!strcmp(m->method, "tools/call") || !strcmp(m->method, "prompts/get"))
		want = json_string_value(json_object_get(an_params(c), "name"));
	else if (!strcmp(m->method, "resources/read"))
		want = json_string_value(json_object_get(an_params(c), "uri"));
	if (want && !hn)
		mt_buf_printf(&why, "; no Mcp-Name ('%s')", want);
	else if (want && strcmp(hn, want))
		mt_buf_printf(&why, "; Mcp-Name '%s' but the body names '%s'", hn, want);
	if (why.len)
		an_report(c, -1, "the POST's headers disagree with its body: %s", why.data + 2);
	mt_buf_release(&why);
}

/* ---- the tracker ---- */

static void http_track(const struct an_ctx *c, json_t *ext)
{
	if (c->m && c->m->http == AN_HTTP_DONE && unprimed(c->m->x) && an_version_in(c->st, AN_ONLY_1125))
		json_object_set_new(ext, "unprimed", json_true());
}

#define R(id, sev, vers, hooks, fn, summary)                           \
	{                                                              \
		id, sev, AN_SEV_FIXED, vers, hooks, NULL, fn, summary, \
			"MCP-RULES §6.2; basic/transports.mdx"        \
	}
#define DOC(id, sev, vers, summary)                                                                          \
	{                                                                                                    \
		id, sev, AN_SEV_FIXED, vers, 0, NULL, NULL, summary, "MCP-RULES §6.2; basic/transports.mdx" \
	}

const struct an_rule an_rules_http[] = {
	R("HTTP-001", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_001,
	  "one MCP endpoint: every POST, GET and DELETE of a session targets one path "
	  "(OAuth discovery under /.well-known/ aside)"),
	R("HTTP-002", AN_ERROR, AN_FROM_0326, AN_ON_MESSAGE | AN_ON_BATCH | AN_FRAMING, http_002,
	  "every client message (responses to server requests too) is the body of an HTTP POST"),
	R("HTTP-003", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_003,
	  "a POST's Accept lists application/json and text/event-stream"),
	R("HTTP-004", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_004,
	  "a POST body is one JSON-RPC message (2025-03-26: or a batch; batches are RPC-009's and "
	  "RPC-010's): not empty, not other text"),
	R("HTTP-005", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_005,
	  "a POST of only notifications and responses, accepted, gets 202 Accepted with no body"),
	R("HTTP-006", AN_ERROR, AN_FROM_0326, AN_ON_ERROR | AN_FRAMING, http_006,
	  "input the server cannot accept gets an HTTP error status (its body may be an id-less "
	  "JSON-RPC error), not 2xx with such an error"),
	R("HTTP-007", AN_ERROR, AN_FROM_0326, AN_ON_HTTP | AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_FRAMING,
	  http_007,
	  "a POST carrying a request is answered application/json (the JSON-RPC response) or "
	  "text/event-stream; bodies and SSE event data from the server are JSON-RPC messages, "
	  "and an SSE stream does not end inside an event"),
	R("HTTP-008", AN_WARNING, AN_FROM_0326, AN_ON_ANSWER | AN_FRAMING, http_008,
	  "a request POSTed with an SSE answer gets its response on that stream, or on a stream "
	  "resumed with GET and Last-Event-ID (2025-11-25 says so of POST streams); none at all is "
	  "LIFE-015's"),
	DOC("HTTP-009", AN_WARNING, AN_FROM_0326,
	    "requests and notifications on a POST's stream relate to its request: the progress "
	    "tokens are PROG-*'s, the related tasks TASK-*'s"),
	DOC("HTTP-010", AN_WARNING, AN_V(AN_V2025_03_26) | AN_V(AN_V2025_06_18),
	    "the server does not close a POST's stream before its responses: a request left "
	    "without one is LIFE-015's"),
	DOC("HTTP-011", AN_WARNING, AN_FROM_0326,
	    "the server closes a POST's stream after its last response: who closed a stream first "
	    "is not stored"),
	DOC("HTTP-012", AN_WARNING, AN_FROM_0326,
	    "a disconnect is not a cancel: see CANCEL-008 (a client that cancels sends "
	    "notifications/cancelled)"),
	R("HTTP-013", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_013, "a GET's Accept lists text/event-stream"),
	DOC("HTTP-014", AN_INFO, AN_FROM_0326, "the client may open a GET stream: nothing to check"),
	R("HTTP-015", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_015,
	  "a successful GET is answered text/event-stream (or the GET gets 405)"),
	R("HTTP-016", AN_ERROR, AN_FROM_0326, AN_ON_ANSWER | AN_FRAMING, http_016,
	  "no JSON-RPC response on a GET stream, unless it resumes an earlier stream"),
	DOC("HTTP-017", AN_WARNING, AN_FROM_0326,
	    "server messages on the GET stream are unrelated to running requests: a heuristic "
	    "left to PROG-* and TASK-*"),
	R("HTTP-018", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_018,
	  "a server message (with an id) goes on one stream only, not broadcast on two (replays "
	  "after Last-Event-ID aside)"),
	R("HTTP-019", AN_ERROR, AN_FROM_0326,
	  AN_ON_MESSAGE | AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_ON_BATCH | AN_FRAMING, http_019,
	  "SSE event ids are unique across the session's streams (a replay on a stream resumed "
	  "with Last-Event-ID aside)"),
	R("HTTP-020", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_020,
	  "a stream is resumed with GET and Last-Event-ID (another method: a warning), and replays "
	  "only the messages of the stream that event id came from"),
	R("HTTP-021", AN_WARNING, AN_ONLY_1125, AN_ON_HTTP, http_021,
	  "an SSE stream opens with a priming event (an id, empty data): a stream whose events "
	  "carry no id at all had none (said once; the retry field and reconnect delays are not "
	  "stored)"),
	R("HTTP-022", AN_WARNING, AN_FROM_0326, AN_ON_HTTP, http_022,
	  "the session id is assigned once, on the initialize response: not changed, not first "
	  "named later (derived)"),
	R("HTTP-023", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_023,
	  "a session id is visible ASCII only (0x21 to 0x7E)"),
	R("HTTP-024", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_024,
	  "once the server assigned a session id, every later POST and GET carries it unchanged "
	  "(a DELETE: HTTP-028)"),
	R("HTTP-025", AN_WARNING, AN_FROM_0326, AN_ON_HTTP, http_025,
	  "a server that refuses a request without the session id answers 400 Bad Request "
	  "(another 4xx or 5xx but 401, 403 and 405)"),
	R("HTTP-026", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_026,
	  "after a 404 or a successful DELETE, requests with that session id get 404 Not Found"),
	R("HTTP-027", AN_ERROR, AN_FROM_0326, AN_ON_HTTP, http_027,
	  "after a 404 the client does not send that session id again (it initializes a new "
	  "session; said once)"),
	R("HTTP-028", AN_WARNING, AN_FROM_0326, AN_ON_HTTP, http_028,
	  "a DELETE that ends a session carries its Mcp-Session-Id"),
	R("HTTP-029", AN_ERROR, AN_FROM_0618, AN_ON_HTTP, http_029,
	  "every request after the initialize exchange carries MCP-Protocol-Version"),
	R("HTTP-030", AN_WARNING, AN_FROM_0618, AN_ON_HTTP, http_030,
	  "MCP-Protocol-Version is the negotiated version"),
	DOC("HTTP-031", AN_WARNING, AN_FROM_0618,
	    "without MCP-Protocol-Version a server assumes 2025-03-26: the analyzer takes the "
	    "version from the initialize exchange instead"),
	R("HTTP-032", AN_ERROR, AN_FROM_0618, AN_ON_HTTP, http_032,
	  "a request whose MCP-Protocol-Version is no protocol version gets 400 Bad Request"),
	DOC("HTTP-033", AN_ERROR, AN_ALL4,
	    "servers validate Origin (2025-11-25: an invalid one gets 403): which origins are "
	    "valid is the server's choice, not in the capture"),
	DOC("HTTP-034", AN_WARNING, AN_ALL4,
	    "local servers bind to localhost and authenticate: not in the capture"),
	DOC("HTTP-035", AN_INFO, AN_FROM_0326,
	    "a client may fall back to HTTP+SSE after a 4xx on its first POST: the fallback is "
	    "a new session (its transport sse), not a violation"),
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_http[] = {
	{AN_ON_HTTP, NULL, http_track, "http"},
	{0, NULL, NULL, NULL},
};
