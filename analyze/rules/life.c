/*
 * rules/life.c - lifecycle rules (MCP-RULES §3.1): the handshake, its order,
 * the negotiated revision, timeouts; and SPEC-001, the revision the session
 * is checked against.
 *
 * Rules on the first initialize request run before the engine has read its
 * protocolVersion, i.e. against the default revision; the rules that depend
 * on the revision (LIFE-007, LIFE-010, LIFE-015) therefore judge the session
 * at its end, when the negotiated revision is known, from what the engine
 * still holds (the open requests) and what the tracker noted on the way, and
 * report at most END_REPORTS findings each.
 *
 * The tracker keeps, under st->ext "life" (a few numbers, whatever the
 * session's length):
 *   "at": the init_answer_seq the next two were noted after (a retried
 *         handshake starts them over);
 *   "carry": the client's first request after that answer other than ping
 *         and initialize; "switch": [seq, method, batch] of its first request
 *         that carries on in the revision it asked for when the server
 *         answered another (LIFE-010);
 *   "binit": the first END_REPORTS client initialize requests sent inside a
 *         batch, "binit_n" how many there were (LIFE-007);
 *   "late": the END_REPORTS earliest requests answered after --timeout-ms
 *         without a cancel, as [seq, dir, method, ms, answer seq], in seq
 *         order, and "late_n" how many there were (LIFE-015).
 *
 * LIFE-004 and LIFE-016 read the answers to later initialize requests from the
 * tracker in rules/flow.c (st->ext "flow": "init_ok", "init_error"), since the
 * engine follows only the first initialize.
 */
#include <stdio.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/methods.h"

/* At most this many findings per end-of-session rule, then one that counts the rest. */
#define END_REPORTS 20

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

/* The session's first initialize request (the one the engine negotiated with), or NULL. */
static const struct an_request *init_request(const struct an_state *st)
{
	return st->init_request;
}

static json_t *life_ext(const struct an_state *st)
{
	return json_object_get(st->ext, "life");
}

static int64_t life_int(const struct an_state *st, const char *key)
{
	return json_integer_value(json_object_get(life_ext(st), key));
}

/* The protocolVersion the first initialize asked for (borrowed), or NULL. */
static const char *asked_version(const struct an_state *st)
{
	const struct an_request *r = init_request(st);

	return r ? json_string_value(json_object_get(an_req_params(r), "protocolVersion")) : NULL;
}

/*
 * Did the client carry on after the first initialize result: the seq of its
 * notifications/initialized, or of its first request other than ping and
 * initialize after that result; 0 when it sent neither.
 */
static int64_t carried_on(const struct an_state *st)
{
	if (!st->init_answer_seq)
		return 0;
	if (st->initialized_seq > st->init_answer_seq)
		return st->initialized_seq;
	if (life_int(st, "at") != st->init_answer_seq)
		return 0;
	return life_int(st, "carry");
}

/* Did the server answer another version than the first initialize asked for? */
static int version_switched(const struct an_state *st)
{
	const char *asked = asked_version(st);

	return asked && st->negotiated && strcmp(asked, st->negotiated) != 0;
}

static void spec_001(const struct an_ctx *c)
{
	const struct an_state *st = c->st;

	if (!strcmp(st->version_source, "nearest"))
		an_report(c, -1, "protocol revision '%s' is unknown; checked against the nearest, %s",
			  st->negotiated  ? st->negotiated
			  : st->requested ? st->requested
					  : "?",
			  an_version_name(st->version));
	else if (!strcmp(st->version_source, "default") && st->rpc_messages)
		an_report(c, -1,
			  "no initialize and no revision in _meta; checked against %s "
			  "(choose another with --spec)",
			  an_version_name(st->version));
}

static void life_001(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (c->st->rpc_messages != 1 || m->in_batch)
		return;
	if (m->dir == AN_C2S && m->cls->kind == MT_REQUEST && !strcmp(m->method, "initialize"))
		return;
	/* The client's stream lost bytes before it: the initialize may be what the gap holds
	 * (TAP-001 says so). */
	if (c->st->gap_seq[AN_C2S])
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

/*
 * The seq of the latest first answer to a client initialize that was a result
 * (ok) or an error, as the tracker in rules/flow.c notes them under st->ext
 * "flow"; 0 when none. The engine follows only the first initialize, so to it a
 * retry after an error (which LIFE-012's example error invites) looks failed.
 */
static int64_t init_answer(const struct an_state *st, int ok)
{
	json_t *flow = json_object_get(st->ext, "flow");

	return json_integer_value(json_object_get(flow, ok ? "init_ok" : "init_error"));
}

static void life_004(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	int64_t ok = init_answer(st, 1), failed = init_answer(st, 0);

	if (!c->m) {
		int64_t result = ok ? ok : st->init_answer_seq;
		/* At the end: a successful handshake that was never completed. Not
		 * when the server answered another revision and the client then sent
		 * nothing: that is the disconnect LIFE-010 asks for. */
		/* (Nor when a gap in the client's messages came after it: it may hold it.) */
		if (result && !st->initialized_seq && !(version_switched(st) && !carried_on(st)) &&
		    st->gap_seq[AN_C2S] < result)
			an_report_at(c, -1, result, NULL, 0,
				     "the client never sent notifications/initialized after the "
				     "initialize result");
		return;
	}
	if (c->m->dir != AN_C2S)
		return;
	if (ok && ok > failed) {
		if (st->initialized_seq)
			an_report(c, AN_WARNING, "notifications/initialized sent again (first at #%lld)",
				  (long long)st->initialized_seq);
	} else if (failed) {
		an_report(c, -1, "notifications/initialized sent after initialize failed (#%lld)",
			  (long long)failed);
	} else {
		an_report(c, -1, "notifications/initialized sent before the initialize result");
	}
}

static void life_005(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (c->st->phase != AN_PH_INITIALIZING || m->dir != AN_C2S || !strcmp(m->method, "ping") ||
	    !strcmp(m->method, "initialize"))
		return;
	an_report(c, -1, "%s sent before the initialize request #%lld was answered; only ping may be",
		  m->method, (long long)c->st->init_seq);
}

static void life_006(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	/* No handshake at all is LIFE-001's finding; notifications/initialized may be
	 * in a gap in the client's messages (TAP-001). */
	if (m->dir != AN_S2C || c->st->initialized_seq || !c->st->init_seq ||
	    c->st->gap_seq[AN_C2S] > c->st->init_seq || !strcmp(m->method, "ping"))
		return;
	an_report(c, -1,
		  "the server sent %s before notifications/initialized; only ping and "
		  "logging may come before it",
		  m->method);
}

static void life_007(const struct an_ctx *c)
{
	json_t *seqs = json_object_get(life_ext(c->st), "binit"), *v;
	int64_t n = life_int(c->st, "binit_n");
	size_t i;

	json_array_foreach(seqs, i, v)
	{
		an_report_at(c, -1, json_integer_value(v), NULL, 0,
			     "initialize was sent inside a JSON-RPC batch");
	}
	if (n > END_REPORTS)
		an_report(c, -1, "%lld more initialize %s sent inside batches", (long long)(n - END_REPORTS),
			  n - END_REPORTS == 1 ? "request was" : "requests were");
}

static void life_008(const struct an_ctx *c)
{
	json_t *v = json_object_get(an_params(c), "protocolVersion");
	enum an_version known;

	/* Not a string: LIFE-002. */
	if (c->m->dir != AN_C2S || !json_is_string(v) || an_version_parse(json_string_value(v), &known) == 0)
		return;
	an_report(c, AN_INFO,
		  "initialize asks for protocolVersion '%s', which is not a known "
		  "revision (2024-11-05 ... 2026-07-28)",
		  json_string_value(v));
}

static void life_009(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	const struct an_request *r = c->m->req;
	json_t *v = json_object_get(an_result(c), "protocolVersion");
	const char *asked, *got;
	enum an_version known;

	/* A missing protocolVersion is LIFE-003's. */
	if (!r || r->dir != AN_C2S || !json_is_string(v))
		return;
	got = json_string_value(v);
	asked = json_string_value(json_object_get(an_req_params(r), "protocolVersion"));
	if (!asked || !strcmp(asked, got))
		return;
	if (r->seq != st->init_seq && st->negotiated && !strcmp(st->negotiated, asked)) {
		int64_t rel = st->init_answer_seq;
		an_report_at(c, AN_ERROR, c->m->seq, &rel, 1,
			     "the server answered %s to a request for %s, which it accepted at #%lld: a "
			     "server that supports the requested version must answer it",
			     got, asked, (long long)st->init_answer_seq);
	} else if (an_version_parse(got, &known) != 0) {
		an_report(c, AN_WARNING,
			  "the server answered protocolVersion '%s', not a known "
			  "revision, to a request for %s",
			  got, asked);
	} else {
		an_report(c, AN_INFO,
			  "the server answered %s to a request for %s: it does not support "
			  "%s; the session is checked against %s",
			  got, asked, asked, got);
	}
}

static void life_010(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	const char *asked = asked_version(st);
	const char *got = st->negotiated;
	enum an_version va, vg;
	int64_t first;

	if (!version_switched(st) || !(first = carried_on(st)))
		return;
	if (an_version_parse(got, &vg) != 0) {
		an_report_at(c, AN_WARNING, first, NULL, 0,
			     "the server answered unknown revision '%s' to a request for %s and the "
			     "client carried on instead of disconnecting",
			     got, asked);
		return;
	}
	if (an_version_parse(asked, &va) != 0)
		return;
	/* Carrying on in the version it asked for, not the one it got (the tracker
	 * noted the first request that does). */
	json_t *sw = json_object_get(life_ext(st), "switch");
	if (!sw || life_int(st, "at") != st->init_answer_seq)
		return;
	if (!json_integer_value(json_array_get(sw, 2)))
		an_report_at(c, AN_ERROR, json_integer_value(json_array_get(sw, 0)), NULL, 0,
			     "the client asked for %s, the server answered %s, and the client "
			     "carried on in %s: %s is not in %s",
			     asked, got, asked, json_string_value(json_array_get(sw, 1)), got);
	else
		an_report_at(c, AN_ERROR, json_integer_value(json_array_get(sw, 0)), NULL, 0,
			     "the client asked for %s, the server answered %s, and the client "
			     "carried on in %s: it sent a batch, which %s does not have",
			     asked, got, asked, got);
}

static void life_012(const struct an_ctx *c)
{
	json_t *err = an_error(c);
	json_t *code = json_object_get(err, "code");
	json_t *supported = an_path(err, "data.supported");
	char list[256] = "";

	if (!c->m->req || c->m->req->dir != AN_C2S)
		return;
	if (json_is_array(supported)) {
		size_t i, n = 0;
		json_t *v;
		json_array_foreach(supported, i, v)
		{
			if (json_is_string(v) && n + json_string_length(v) + 3 < sizeof(list))
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
						      json_string_value(v));
		}
	}
	an_report(c, -1, "initialize was refused with error %lld '%s'%s%s%s",
		  json_is_integer(code) ? (long long)json_integer_value(code) : 0LL,
		  json_is_string(json_object_get(err, "message"))
			  ? json_string_value(json_object_get(err, "message"))
			  : "",
		  json_is_array(supported) ? "; the server supports: " : "", list,
		  json_is_array(supported) && !*list ? "(none listed)" : "");
}

static void life_015(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	int64_t limit = st->timeout_ns;
	json_t *late = json_object_get(life_ext(st), "late");
	size_t reported = 0, more = 0, li = 0;
	const struct an_request *r = st->open_first;

	/* The open requests and those answered late (noted by the tracker), in seq order. */
	for (;;) {
		json_t *l = json_array_get(late, li);
		int64_t waited;
		if (r && (!l || r->seq <= json_integer_value(json_array_get(l, 0)))) {
			const struct an_request *q = r;
			r = r->open_next;
			/* initialize must not be cancelled (CANCEL-002); a cancelled request is
			 * done; a ping never answered is PING-001's. */
			if (q->cancel_seq || !strcmp(q->method, "initialize") ||
			    an_ping_never_answered(st, q))
				continue;
			waited = st->last_t_ns - q->t_ns;
			if (limit && waited <= limit)
				continue;
			if (reported == END_REPORTS) {
				more++;
				continue;
			}
			reported++;
			an_report_at(c, -1, q->seq, NULL, 0,
				     "%s %s got no answer and no notifications/cancelled by the end of "
				     "the capture (%lld ms later)",
				     an_dir_arrow(q->dir), q->method, (long long)(waited / 1000000));
			continue;
		}
		if (!l)
			break;
		li++;
		if (reported == END_REPORTS) {
			more++;
			continue;
		}
		reported++;
		an_report_at(c, -1, json_integer_value(json_array_get(l, 0)), NULL, 0,
			     "%s %s was answered after %lld ms (at #%lld), beyond the %lld ms "
			     "timeout, and was never cancelled",
			     an_dir_arrow((enum an_dir)json_integer_value(json_array_get(l, 1))),
			     json_string_value(json_array_get(l, 2)),
			     (long long)json_integer_value(json_array_get(l, 3)),
			     (long long)json_integer_value(json_array_get(l, 4)),
			     (long long)(limit / 1000000));
	}
	/* The late answers the tracker only counted. */
	more += (size_t)(life_int(st, "late_n") - (int64_t)json_array_size(late));
	if (more)
		an_report(c, -1, "%zu more %s unanswered or late without a notifications/cancelled", more,
			  more == 1 ? "request went" : "requests went");
}

static void life_016(const struct an_ctx *c)
{
	if (c->m->dir != AN_C2S || c->st->init_count == 0)
		return;
	if (init_answer(c->st, 0) > init_answer(c->st, 1))
		an_report(c, -1, "initialize sent again after the last one was refused (#%lld)",
			  (long long)init_answer(c->st, 0));
	else
		an_report(c, -1, "a second initialize on the same connection (the first at #%lld)",
			  (long long)c->st->init_seq);
}

const struct an_rule an_rules_life[] = {
	{"SPEC-001", AN_INFO, AN_SEV_FIXED, AN_EVERY, AN_ON_END, NULL, spec_001,
	 "the session's protocol revision is unknown or missing; it is checked against the "
	 "nearest known one (or 2025-11-25)",
	 "mcptap; MCP-RULES §0"},
	{"LIFE-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_MESSAGE | AN_FRAMING, NULL, life_001,
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
	{"LIFE-005", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, NULL, life_005,
	 "the client sends no request but ping between initialize and its answer",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-006", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, NULL, life_006,
	 "the server sends no request but ping before notifications/initialized",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-007", AN_ERROR, AN_SEV_FIXED, AN_V(AN_V2025_03_26), AN_ON_END, NULL, life_007,
	 "initialize is not part of a JSON-RPC batch (2025-03-26; judged at the end, in the "
	 "negotiated revision)",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-008", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, "initialize", life_008,
	 "the client asks for a protocol version it supports: info when it is not a known revision "
	 "(a non-string is LIFE-002's; \"the latest\" cannot be seen)",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-009", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE, "initialize", life_009,
	 "the server answers the requested version when it supports it: info on another known "
	 "revision, warning on an unknown one, error on a version it accepted earlier",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-010", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_END, NULL, life_010,
	 "after a different version answer the client disconnects or carries on in it: error when "
	 "it uses its own revision's methods, warning when it carries on with an unknown one",
	 "MCP-RULES §3.1; basic/lifecycle.mdx, schema/<v>/schema.ts (InitializeResult)"},
	{"LIFE-011", AN_ERROR, AN_SEV_MUST_0618, AN_ALL4, 0, NULL, NULL,
	 "respect the negotiated version and capabilities: checked by CAP-* (capabilities) and "
	 "RPC-017 (methods outside the revision)",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-012", AN_INFO, AN_SEV_FIXED, AN_ALL4, AN_ON_ERROR, "initialize", life_012,
	 "an initialize error is noted with its code and data.supported; -32602 is only an "
	 "example, not required",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-013", AN_WARNING, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "stdio shutdown order (close stdin, then SIGTERM, then SIGKILL): the messages carry no "
	 "process events; the session row keeps only the exit status or signal",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-014", AN_INFO, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "HTTP only: shutdown is closing the HTTP connection(s); not visible in a stdio capture",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-015", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_END, NULL, life_015,
	 "every request is answered or cancelled: none left open at the end (or open beyond "
	 "--timeout-ms), none answered after --timeout-ms without a cancel",
	 "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{"LIFE-016", AN_INFO, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST, "initialize", life_016,
	 "one initialize per connection: a second one is noted", "MCP-RULES §3.1; basic/lifecycle.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

/* ---- the tracker ---- */

static void set_int(json_t *ext, const char *key, int64_t v)
{
	json_object_set_new(ext, key, json_integer((json_int_t)v));
}

/* The revisions the client asked for and got when they differ (else -1). */
static void switched_versions(const struct an_state *st, int *va, int *vg)
{
	enum an_version a, g;

	*va = *vg = -1;
	if (!version_switched(st) || an_version_parse(asked_version(st), &a) ||
	    an_version_parse(st->negotiated, &g))
		return;
	*va = (int)a;
	*vg = (int)g;
}

static void track_request(const struct an_ctx *c, json_t *ext)
{
	const struct an_state *st = c->st;
	const struct an_msg *m = c->m;
	const struct an_request *r = m->req;
	int va, vg;

	if (m->dir != AN_C2S || !r)
		return;
	if (r->in_batch && !strcmp(r->method, "initialize")) {
		json_t *seqs = json_object_get(ext, "binit");
		if (!seqs) {
			seqs = json_array();
			json_object_set_new(ext, "binit", seqs);
		}
		if (json_array_size(seqs) < END_REPORTS)
			json_array_append_new(seqs, json_integer(r->seq));
		set_int(ext, "binit_n", json_integer_value(json_object_get(ext, "binit_n")) + 1);
	}
	if (!st->init_answer_seq || r->seq <= st->init_answer_seq)
		return;
	if (json_integer_value(json_object_get(ext, "at")) != st->init_answer_seq) {
		/* After a (new) handshake answer: start over. */
		set_int(ext, "at", st->init_answer_seq);
		json_object_del(ext, "carry");
		json_object_del(ext, "switch");
		switched_versions(st, &va, &vg);
		set_int(ext, "va", va);
		set_int(ext, "vg", vg);
	}
	if (!json_object_get(ext, "carry") && strcmp(r->method, "ping") && strcmp(r->method, "initialize"))
		set_int(ext, "carry", r->seq);
	va = (int)json_integer_value(json_object_get(ext, "va"));
	vg = (int)json_integer_value(json_object_get(ext, "vg"));
	if (va < 0 || json_object_get(ext, "switch"))
		return;
	unsigned rev = an_method_revisions(r->method);
	if ((rev & AN_V(va)) && !(rev & AN_V(vg)))
		json_object_set_new(ext, "switch", json_pack("[I,s,i]", (json_int_t)r->seq, r->method, 0));
	else if (r->in_batch && va == AN_V2025_03_26 && vg != AN_V2025_03_26)
		json_object_set_new(ext, "switch", json_pack("[I,s,i]", (json_int_t)r->seq, r->method, 1));
}

/* A first answer later than --timeout-ms to a request never cancelled (LIFE-015). */
static void track_answer(const struct an_ctx *c, json_t *ext)
{
	const struct an_state *st = c->st;
	const struct an_request *r = c->m->req;
	int64_t waited;
	json_t *late, *row;
	size_t i;

	if (!st->timeout_ns || !r || r->answer_seq != c->m->seq || r->cancel_seq || r->flawed ||
	    !strcmp(r->method, "initialize"))
		return;
	waited = r->answer_t_ns - r->t_ns;
	if (waited <= st->timeout_ns)
		return;
	set_int(ext, "late_n", json_integer_value(json_object_get(ext, "late_n")) + 1);
	if (!(late = json_object_get(ext, "late"))) {
		late = json_array();
		json_object_set_new(ext, "late", late);
	}
	/* Keep the END_REPORTS earliest requests, in seq order. */
	for (i = json_array_size(late); i > 0; i--)
		if (json_integer_value(json_array_get(json_array_get(late, i - 1), 0)) <= r->seq)
			break;
	if (i >= END_REPORTS)
		return;
	row = json_pack("[I,i,s,I,I]", (json_int_t)r->seq, (int)r->dir, r->method,
			(json_int_t)(waited / 1000000), (json_int_t)r->answer_seq);
	json_array_insert_new(late, i, row);
	if (json_array_size(late) > END_REPORTS)
		json_array_remove(late, END_REPORTS);
}

const struct an_tracker an_trackers_life[] = {
	{AN_ON_REQUEST, NULL, track_request, "life"},
	{AN_ON_ANSWER, NULL, track_answer, "life"},
	{0, NULL, NULL, NULL},
};
