/*
 * rules/sse.c - the legacy HTTP+SSE transport (MCP-RULES §6.3): a GET stream
 * whose first event names the endpoint, POSTs to that endpoint, and every
 * server message as an SSE `message` event of JSON.
 *
 * These rules run only on sessions whose transport is sse. The table gives
 * them the revision 2024-11-05, where this transport is defined; later
 * revisions keep it for backwards compatibility (the "Backwards
 * Compatibility" section of their transports page), and the SDKs negotiate
 * any revision over it, so the rules apply to the session's transport in
 * every revision. The tap stores the endpoint event as the session's
 * http_session_id, and only when it is the stream's first event: a session
 * without one had no endpoint event first.
 */
#include <string.h>

#include "analyze/analyze.h"

static int ok_status(int s)
{
	return s >= 200 && s < 300;
}

/* A server message that is not JSON-RPC at all (RPC-001 and RPC-014 say the others). */
static int not_jsonrpc(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->cls->kind != MT_INVALID && m->cls->kind != MT_NOTJSONRPC)
		return 0;
	if (m->cls->kind == MT_NOTJSONRPC && an_jsonrpc_like(m))
		return 0;
	if (m->cls->kind == MT_INVALID && m->cls->error && !strcmp(m->cls->error, "invalid UTF-8") &&
	    an_version_in(c->st, AN_FROM_0326 | AN_V26))
		return 0;
	return 1;
}

static void sse_002(const struct an_ctx *c)
{
	const struct an_exchange *x = c->m->http == AN_HTTP_BEGIN ? c->m->x : NULL;

	/* (The first successful GET stream: later ones are reconnections.) */
	if (!x || strcmp(x->method, "GET") || !ok_status(x->status) || c->st->http.get_streams ||
	    !x->resp_type || strcmp(x->resp_type, "sse"))
		return;
	if (!c->st->http.stored_id || !*c->st->http.stored_id)
		an_report(c, -1,
			  "the GET stream's first event is not an endpoint event: the server "
			  "names the URI for the client's POSTs first");
}

static void sse_003(const struct an_ctx *c)
{
	const struct an_exchange *x = c->m->http == AN_HTTP_BEGIN ? c->m->x : NULL;
	const char *ep = c->st->http.stored_id;
	size_t n;

	if (!x || strcmp(x->method, "POST") || !ep || !*ep || !strcmp(x->target, ep))
		return;
	/* (A redacted query compares by its path.) */
	n = strcspn(ep, "?#");
	if ((strstr(x->target, "[redacted:") || strstr(ep, "[redacted:")) && strcspn(x->target, "?#") == n &&
	    !strncmp(x->target, ep, n))
		return;
	an_report(c, -1, "a POST to %s, not to the endpoint the server named (%s)", x->target, ep);
}

static void sse_004(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->dir != AN_S2C || m->in_batch || !m->channel)
		return;
	if (!strcmp(m->channel, "body"))
		an_report(c, -1,
			  "a server message in the body of the %s answer (#%lld): server "
			  "messages are SSE message events on the GET stream",
			  m->x ? m->x->method : "HTTP", (long long)m->exchange);
	else if (m->sse_event && strcmp(m->sse_event, "message"))
		an_report(c, -1,
			  "a server message in an SSE event of type '%s': server messages are "
			  "'message' events",
			  m->sse_event);
	else if (not_jsonrpc(c))
		an_report(c, -1, "the data of an SSE message event is not a JSON-RPC message (%s)",
			  m->cls->error ? m->cls->error : "not JSON-RPC");
}

#define SRC "MCP-RULES §6.3; 2024-11-05/basic/transports.mdx"

const struct an_rule an_rules_sse[] = {
	{"SSE-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "the server has a GET (SSE) endpoint and a POST endpoint: a session without both is not "
	 "recorded as an sse session",
	 SRC},
	{"SSE-002", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_HTTP, NULL, sse_002,
	 "the GET stream's first event is an endpoint event naming the POST URI (sse sessions, "
	 "any revision)",
	 SRC},
	{"SSE-003", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_HTTP, NULL, sse_003,
	 "the client POSTs to the endpoint the server named (sse sessions, any revision)", SRC},
	{"SSE-004", AN_ERROR, AN_SEV_FIXED, AN_ALL4,
	 AN_ON_MESSAGE | AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_FRAMING, NULL, sse_004,
	 "server messages are SSE 'message' events of JSON on the GET stream, never in a POST "
	 "answer's body (sse sessions, any revision)",
	 SRC},
	{"SSE-005", AN_ERROR, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "Origin validation, localhost binding, authentication: as HTTP-033 and HTTP-034, not in "
	 "the capture",
	 SRC},
	{"SSE-006", AN_INFO, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "the POST's status and body are not specified (202 is common practice): not enforced", SRC},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};
