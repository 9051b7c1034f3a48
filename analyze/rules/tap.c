/*
 * rules/tap.c - what the capture itself says about the session, not the
 * peers: a gap (traffic relayed but not stored), a message beyond what the
 * analyzer's JSON parser reads, and requests the HTTP tap answered itself
 * because the upstream failed. Neither is a protocol rule (MCP-RULES has
 * none); each is a fact about the capture, said once, so that no other rule
 * reports what it only seems to show.
 *
 * The engine does the rest (engine.c): a gap settles every request still
 * open, whose answer or cancel it may hold, and makes the rules that would
 * claim an absence in that direction (an answer to no request, an id-less
 * error answering nothing) say nothing; an unreadable message is read by no
 * rule, nor is its answer.
 */
#include <string.h>

#include "analyze/analyze.h"
#include "schema/store.h"

static void tap_001(const struct an_ctx *c)
{
	const struct store_item *g = c->m->gap;
	const char *what = !g->dir                  ? "messages"
			   : !strcmp(g->dir, "c2s") ? "client→server messages"
			   : !strcmp(g->dir, "s2c") ? "server→client messages"
						    : "stderr lines";

	if (g->gap_messages == 1)
		what = !g->dir                  ? "message"
		       : !strcmp(g->dir, "c2s") ? "client→server message"
		       : !strcmp(g->dir, "s2c") ? "server→client message"
						: "stderr line";
	an_report(c, -1,
		  "the capture has a gap: %lld %s (%lld bytes) relayed but not stored (%s); "
		  "what %s held is not judged",
		  (long long)g->gap_messages, what, (long long)g->gap_bytes,
		  g->gap_reason && *g->gap_reason ? g->gap_reason : "no reason recorded",
		  g->gap_messages == 1 ? "it" : "they");
}

static void tap_002(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->req && m->cls->kind != MT_REQUEST)
		an_report(c, -1,
			  "the analyzer cannot read this %s answer to #%lld %s: %s is beyond "
			  "its JSON parser's limits; no rule judged it",
			  an_dir_arrow(m->dir), (long long)m->req->seq, m->req->method, m->unreadable);
	else
		an_report(c, -1,
			  "the analyzer cannot read this %s %s: %s is beyond its JSON parser's "
			  "limits; no rule judged it%s",
			  an_dir_arrow(m->dir), m->method ? m->method : mt_kind_name(m->cls->kind),
			  m->unreadable, m->cls->kind == MT_REQUEST ? " or its answer" : "");
}

/*
 * A POST the tap answered itself (502, 504) because the upstream could not be
 * reached, closed the connection without an answer, or was silent: the
 * requests it carried never got the server's answer. (The engine owes them
 * none, as for any refused POST, so LIFE-015 says nothing of them.)
 */
static void tap_003(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_exchange *x = m && m->http == AN_HTTP_DONE ? m->x : NULL;
	const char *why;

	if (!x || !x->c2s_requests || !x->outcome || (x->status != 502 && x->status != 504))
		return;
	if (!strcmp(x->outcome, "unreachable"))
		why = "could not be reached";
	else if (!strcmp(x->outcome, "upstream-gone"))
		why = "closed the connection without an answer";
	else if (!strcmp(x->outcome, "timeout"))
		why = "sent nothing in time";
	else
		return;
	if (x->req_key && x->req_key_len > 2) {
		struct mt_buf id = MT_BUF_INIT;
		an_key_text(x->req_key, x->req_key_len, &id);
		an_report(c, -1,
			  "the tap answered the %s (exchange %lld) with %d itself: the upstream "
			  "%s (%s); request id %.*s never got the server's answer",
			  x->method, (long long)x->seq, x->status, why, x->error ? x->error : "no reason",
			  (int)id.len, id.data);
		mt_buf_release(&id);
	} else
		an_report(c, -1,
			  "the tap answered the %s (exchange %lld) with %d itself: the upstream "
			  "%s (%s); its %lld request%s never got the server's answer",
			  x->method, (long long)x->seq, x->status, why, x->error ? x->error : "no reason",
			  (long long)x->c2s_requests, x->c2s_requests == 1 ? "" : "s");
}

const struct an_rule an_rules_tap[] = {
	{"TAP-001", AN_WARNING, AN_SEV_FIXED, AN_EVERY, AN_ON_GAP, NULL, tap_001,
	 "the capture is complete: a gap (lines over --max-message, a store that failed) is said "
	 "once, and rules say nothing that the missing messages could contradict (an open "
	 "request's answer, a request for an answer)",
	 "mcptap; a capture fact, not an MCP rule"},
	{"TAP-002", AN_WARNING, AN_SEV_FIXED, AN_EVERY, AN_ON_UNREADABLE, NULL, tap_002,
	 "every message is within what the analyzer reads (Jansson: nesting up to 2048 levels, "
	 "integers within 64 bits, numbers within a double, no \\u0000 in a member name); one "
	 "beyond is said once and judged by no rule",
	 "mcptap; a capture fact, not an MCP rule"},
	{"TAP-003", AN_WARNING, AN_SEV_FIXED, AN_EVERY, AN_ON_HTTP, NULL, tap_003,
	 "every request reached the server: one the HTTP tap answered itself (502, 504) because "
	 "the upstream could not be reached, closed without an answer or was silent is said, "
	 "once per POST",
	 "mcptap; a capture fact, not an MCP rule"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};
