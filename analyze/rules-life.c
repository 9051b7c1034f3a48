/*
 * rules-life.c - lifecycle rules (MCP-RULES §3.1): the handshake, its order,
 * the negotiated revision, timeouts; and SPEC-001, the revision the session
 * is checked against.
 */
#include <string.h>

#include "analyze/analyze.h"

/* Is v an object with string members name and version? */
static const char *implementation_problem(json_t *v)
{
	if (!json_is_object(v))
		return "is missing or not an object";
	if (!json_is_string(json_object_get(v, "name")))
		return "has no string name";
	if (!json_is_string(json_object_get(v, "version")))
		return "has no string version";
	return NULL;
}

static void spec_001(const struct an_ctx *c)
{
	const struct an_state *st = c->st;

	if (!strcmp(st->version_source, "nearest"))
		an_report(c, -1, "protocol revision '%s' is unknown; checked against the nearest, %s",
			  st->negotiated ? st->negotiated : st->requested ? st->requested : "?",
			  an_version_name(st->version));
	else if (!strcmp(st->version_source, "default") && st->rpc_messages)
		an_report(c, -1, "no initialize and no revision in _meta; checked against %s "
				 "(choose another with --spec)", an_version_name(st->version));
}

static void life_001(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (c->st->rpc_messages != 1 || m->in_batch)
		return;
	if (m->dir == AN_C2S && m->cls->kind == MT_REQUEST && !strcmp(m->method, "initialize"))
		return;
	an_report(c, -1, "the first message is %s %s, not the client's initialize request",
		  an_dir_arrow(m->dir), m->method ? m->method : mt_kind_name(m->cls->kind));
}

static void life_002(const struct an_ctx *c)
{
	json_t *p = an_params(c);
	const char *why;

	if (c->m->dir != AN_C2S)
		return;
	if (!json_is_object(p)) {
		an_report(c, -1, "initialize has no params object");
		return;
	}
	if (!json_is_string(json_object_get(p, "protocolVersion")))
		an_report(c, -1, "initialize params.protocolVersion is missing or not a string");
	if (!json_is_object(json_object_get(p, "capabilities")))
		an_report(c, -1, "initialize params.capabilities is missing or not an object");
	if ((why = implementation_problem(json_object_get(p, "clientInfo"))))
		an_report(c, -1, "initialize params.clientInfo %s", why);
}

static void life_003(const struct an_ctx *c)
{
	json_t *r = an_result(c), *instr;
	const char *why;

	if (!c->m->req || c->m->req->dir != AN_C2S)
		return;
	if (!json_is_object(r)) {
		an_report(c, -1, "the initialize result is not an object");
		return;
	}
	if (!json_is_string(json_object_get(r, "protocolVersion")))
		an_report(c, -1, "the initialize result has no string protocolVersion");
	if (!json_is_object(json_object_get(r, "capabilities")))
		an_report(c, -1, "the initialize result has no capabilities object");
	if ((why = implementation_problem(json_object_get(r, "serverInfo"))))
		an_report(c, -1, "the initialize result's serverInfo %s", why);
	instr = json_object_get(r, "instructions");
	if (instr && !json_is_string(instr))
		an_report(c, -1, "the initialize result's instructions is not a string");
}

static void life_004(const struct an_ctx *c)
{
	const struct an_state *st = c->st;

	if (!c->m) {
		/* At the end: a successful handshake that was never completed. */
		if (st->init_answer_seq && !st->initialized_seq)
			an_report_at(c, -1, st->init_answer_seq, NULL, 0,
				     "the client never sent notifications/initialized after the "
				     "initialize result");
		return;
	}
	if (c->m->dir != AN_C2S)
		return;
	if (st->phase == AN_PH_START || st->phase == AN_PH_INITIALIZING)
		an_report(c, -1, "notifications/initialized sent before the initialize result");
	else if (st->phase == AN_PH_FAILED)
		an_report(c, -1, "notifications/initialized sent after initialize failed");
	else if (st->initialized_seq)
		an_report(c, AN_WARNING, "notifications/initialized sent again (first at #%lld)",
			  (long long)st->initialized_seq);
}

const struct an_rule an_rules_life[] = {
	{"SPEC-001", AN_INFO, AN_SEV_FIXED, AN_EVERY, AN_ON_END, NULL, spec_001,
	 "the session's protocol revision is unknown or missing; it is checked against the "
	 "nearest known one (or 2025-11-25)",
	 "mcptap; MCP-RULES §0"},
	{"LIFE-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_MESSAGE, NULL, life_001,
	 "initialization must be the first interaction: the first message is the client's "
	 "initialize request",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-002", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, "initialize", life_002,
	 "initialize carries protocolVersion, capabilities and clientInfo{name,version}",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-003", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE, "initialize", life_003,
	 "the initialize result carries protocolVersion, capabilities and serverInfo{name,version}",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-004", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_NOTIFICATION | AN_ON_END,
	 "notifications/initialized", life_004,
	 "notifications/initialized follows a successful initialize result, once",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};
