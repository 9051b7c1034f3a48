/*
 * rules-rpc.c - JSON-RPC framing as MCP constrains it (MCP-RULES §4): message
 * shape, ids, answers, errors, batches, result and params types, UTF-8, _meta
 * keys, and methods valid for the sender's role and revision.
 */
#include <string.h>

#include "analyze/analyze.h"

static void rpc_001(const struct an_ctx *c)
{
	const char *why = c->m->cls->error ? c->m->cls->error : "not a JSON-RPC message";

	/* The answer-shape problems have their own rule. */
	if (!strcmp(why, "both result and error"))
		return;
	an_report(c, -1, "%s message is JSON but not JSON-RPC 2.0: %s", an_dir_arrow(c->m->dir), why);
}

static void rpc_002(const struct an_ctx *c)
{
	const struct mt_class *k = c->m->cls;

	if (k->idtype == MT_ID_NULL)
		an_report(c, -1, "request id is null");
	else if (k->idtype == MT_ID_NUMBER &&
		 (memchr(k->id.p, '.', k->id.n) || memchr(k->id.p, 'e', k->id.n) ||
		  memchr(k->id.p, 'E', k->id.n)))
		an_report(c, -1, "request id %.*s is not an integer", (int)k->id.n, k->id.p);
}

static void rpc_003(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	struct an_request *prev;

	if (m->cls->idtype == MT_ID_NULL)
		return;
	prev = an_find_request(c->st, m->dir, m->id_key, m->id_key_len);
	if (prev && prev->seq != m->seq) {
		int64_t rel = prev->seq;
		an_report_at(c, -1, m->seq, &rel, 1, "request id %.*s was already used by #%lld (%s)",
			     (int)m->cls->id.n, m->cls->id.p, (long long)prev->seq, prev->method);
	}
}

static void rpc_004(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->cls->idtype == MT_ID_NULL || m->cls->idtype == MT_ID_NONE)
		return; /* an error without an id: RPC-012 */
	if (!m->req) {
		an_report(c, -1, "%s %s with id %.*s answers no request the peer sent",
			  an_dir_arrow(m->dir), mt_kind_name(m->cls->kind), (int)m->cls->id.n,
			  m->cls->id.p);
	} else if (m->req->answer_seq && m->req->answer_seq != m->seq) {
		int64_t rel[2] = {m->req->seq, m->req->answer_seq};
		an_report_at(c, -1, m->seq, rel, 2, "second answer to #%lld %s (first at #%lld)",
			     (long long)m->req->seq, m->req->method, (long long)m->req->answer_seq);
	}
}

static void rpc_005(const struct an_ctx *c)
{
	const char *why = c->m->cls->error;

	if (why && !strcmp(why, "both result and error"))
		an_report(c, -1, "the response sets both result and error");
}

static void rpc_006(const struct an_ctx *c)
{
	json_t *err = an_error(c);
	json_t *code = json_object_get(err, "code");

	if (!json_is_integer(code))
		an_report(c, -1, "error.code is missing or not an integer");
	if (!json_is_string(json_object_get(err, "message")))
		an_report(c, -1, "error.message is missing or not a string");
}

static void rpc_007(const struct an_ctx *c)
{
	if (!strncmp(c->m->method, "notifications/", 14))
		an_report(c, -1, "%s carries an id: notifications must not", c->m->method);
}

const struct an_rule an_rules_rpc[] = {
	{"RPC-001", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_NOTJSONRPC, NULL, rpc_001,
	 "every message is a JSON-RPC 2.0 request, notification or response",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-002", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST, NULL, rpc_002,
	 "request ids are strings or integers, never null",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-003", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, NULL, rpc_003,
	 "a sender never reuses a request id within the session",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-004", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_ANSWER, NULL, rpc_004,
	 "every answer carries the id of an outstanding request from the peer, and is its only answer",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-005", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_NOTJSONRPC, NULL, rpc_005,
	 "a response sets exactly one of result and error",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-006", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_ERROR, NULL, rpc_006,
	 "an error carries an integer code and a string message",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-007", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST, NULL, rpc_007,
	 "notifications carry no id (a notifications/* method sent with an id)",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-008", AN_ERROR, AN_SEV_MUST_0326, AN_ALL4, 0, NULL, NULL,
	 "no response to a notification; on the wire it is an answer to no request: see RPC-004",
	 "MCP-RULES §4; basic/index.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};
