/*
 * rules/rules.c - the list of rule tables. Each family of rules is one table in its
 * own file; `mcptap analyze --list-rules` prints them in this order:
 *   life.c         SPEC, LIFE   the handshake, the revision, timeouts
 *   flow.c         PING, CANCEL, PROG   ping, cancellation, progress
 *   rpc.c          RPC          JSON-RPC framing as MCP constrains it
 *   cap.c          CAP          using only negotiated capabilities
 *   stdio.c        STDIO        the stdio transport
 *   res.c          RES          result and payload shapes
 *   task.c         TASK         tasks (2025-11-25)
 *   v26.c          V26          the stateless 2026-07-28 revision
 *   http.c         HTTP         the Streamable HTTP transport (http sessions)
 *   sse.c          SSE          the legacy HTTP+SSE transport (sse sessions)
 *   auth.c         AUTH         HTTP authorization (http and sse sessions)
 *   tap.c          TAP          gaps in the capture, messages beyond the parser
 * Families whose rules need state the engine does not keep have trackers.
 * The transport families run only on sessions of their transport
 * (an_rule_transports); the others on every session.
 */
#include <string.h>

#include "analyze/analyze.h"

extern const struct an_rule an_rules_life[], an_rules_flow[], an_rules_rpc[], an_rules_cap[],
	an_rules_stdio[], an_rules_res[], an_rules_task[], an_rules_v26[], an_rules_http[], an_rules_sse[],
	an_rules_auth[], an_rules_tap[];
extern const struct an_tracker an_trackers_life[], an_trackers_flow[], an_trackers_rpc[], an_trackers_cap[],
	an_trackers_stdio[], an_trackers_res[], an_trackers_task[], an_trackers_v26[], an_trackers_http[];

const struct an_rule *const an_rule_tables[] = {
	an_rules_life, an_rules_flow, an_rules_rpc, an_rules_cap,  an_rules_stdio,
	an_rules_res,  an_rules_task, an_rules_v26, an_rules_http, an_rules_sse,
	an_rules_auth, an_rules_tap,  NULL,
};

const struct an_tracker *const an_tracker_tables[] = {
	an_trackers_life, an_trackers_flow, an_trackers_rpc, an_trackers_cap,  an_trackers_stdio,
	an_trackers_res,  an_trackers_task, an_trackers_v26, an_trackers_http, NULL,
};

unsigned an_rule_transports(const struct an_rule *r)
{
	const unsigned stdio = 1u << AN_T_STDIO, http = 1u << AN_T_HTTP, sse = 1u << AN_T_SSE;

	if (!strncmp(r->id, "STDIO-", 6))
		return stdio;
	/* (V26-007 and V26-008 are the 2026-07-28 revision's Streamable HTTP rules.) */
	if (!strncmp(r->id, "HTTP-", 5) || !strcmp(r->id, "V26-007") || !strcmp(r->id, "V26-008"))
		return http;
	if (!strncmp(r->id, "SSE-", 4))
		return sse;
	if (!strncmp(r->id, "AUTH-", 5))
		return http | sse;
	return stdio | http | sse;
}
