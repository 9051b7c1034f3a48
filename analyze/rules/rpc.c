/*
 * rules/rpc.c - JSON-RPC framing as MCP constrains it (MCP-RULES §4): message
 * shape, ids, answers, errors, batches, result and params types, UTF-8, _meta
 * keys, and methods valid for the sender's role and revision (the method
 * table is methods.c's, shared with the engine).
 *
 * The tracker keeps, under st->ext "rpc", "gap0" and "gap1": how many
 * messages capture gaps in that direction (0: client to server) hid that an
 * answer seen later may still answer. An answer to no known request, or an
 * error without an id, takes one of them instead of being reported (RPC-004,
 * RPC-012): a gap hides at most as many requests as it has messages.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/methods.h"
#include "schema/store.h"

static const char *json_type_name(char first)
{
	switch (first) {
	case '{': return "an object";
	case '[': return "an array";
	case '"': return "a string";
	case 't':
	case 'f': return "a boolean";
	case 'n': return "null";
	default: return "a number";
	}
}

/* ---- the rules ---- */

static const char *const gap_key[2] = {"gap0", "gap1"}; /* by enum an_dir */

/* How many hidden messages of direction d a later answer may still pair with. */
static json_int_t gap_left(const struct an_state *st, enum an_dir d)
{
	return json_integer_value(json_object_get(json_object_get(st->ext, "rpc"), gap_key[d]));
}

/* An answer with an id that no request the peer sent (open, kept or dropped) has. */
static int answers_unknown(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	enum an_dir sender = m->dir == AN_C2S ? AN_S2C : AN_C2S;

	return !m->req && m->cls->idtype != MT_ID_NULL && m->cls->idtype != MT_ID_NONE &&
	       an_id_fate(c->st, sender, m->id_key, m->id_key_len) == AN_ID_UNUSED;
}

/* An id-less (or null-id) error with nothing seen for it to answer. */
static int error_for_nothing(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	enum an_dir peer = m->dir == AN_C2S ? AN_S2C : AN_C2S;
	json_t *ext = json_object_get(c->st->ext, "stdio");

	return m->cls->kind == MT_ERROR && (m->cls->idtype == MT_ID_NULL || m->cls->idtype == MT_ID_NONE) &&
	       json_integer_value(json_object_get(ext, peer == AN_C2S ? "unread0" : "unread1")) <= 0 &&
	       !an_open_request(c->st, peer, "null", 4);
}

static void rpc_001(const struct an_ctx *c)
{
	const char *why = c->m->cls->error ? c->m->cls->error : "not a JSON-RPC message";

	/* The answer-shape and batch problems have their own rules; what is not
	 * JSON-RPC at all is STDIO-002's or STDIO-003's. */
	if (!strcmp(why, "both result and error") || !strcmp(why, "empty array") || !an_jsonrpc_like(c->m))
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
	} else if (!prev && an_id_fate(c->st, m->dir, m->id_key, m->id_key_len) != AN_ID_UNUSED) {
		an_report(c, -1, "request id %.*s was already used by an earlier request of the session",
			  (int)m->cls->id.n, m->cls->id.p);
	}
}

static void rpc_004(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;

	if (m->cls->idtype == MT_ID_NULL || m->cls->idtype == MT_ID_NONE)
		return; /* an error without an id: RPC-012 */
	if (m->resent_answer)
		return; /* the server sent its request again (HTTP-020 says so) */
	if (!m->req) {
		enum an_dir sender = m->dir == AN_C2S ? AN_S2C : AN_C2S;
		switch (an_id_fate(c->st, sender, m->id_key, m->id_key_len)) {
		case AN_ID_UNUSED:
			/* Its request may be in a capture gap (TAP-001 says it). */
			if (gap_left(c->st, sender) <= 0)
				an_report(c, -1, "%s %s with id %.*s answers no request the peer sent",
					  an_dir_arrow(m->dir), mt_kind_name(m->cls->kind), (int)m->cls->id.n,
					  m->cls->id.p);
			break;
		case AN_ID_ANSWERED:
			an_report(c, -1,
				  "another answer to id %.*s, whose request was answered earlier "
				  "in the session",
				  (int)m->cls->id.n, m->cls->id.p);
			break;
		default: break; /* cancelled (CANCEL-003), or open at a gap */
		}
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

/* RPC-009: batches exist only in 2025-03-26, where the receiver must answer them. */
static void rpc_009_end(const struct an_ctx *c)
{
	const struct an_state *st = c->st;
	const struct an_request *r = st->open_first;

	if (st->version != AN_V2025_03_26)
		return;
	/* The open elements of one batch are consecutive and share its seq. */
	while (r) {
		const struct an_request *first = r;
		size_t unanswered = 0, total = r->batch_requests;
		for (; r && r->seq == first->seq; r = r->open_next)
			if (r->in_batch && !r->answer_seq && !r->cancel_seq)
				unanswered++;
		/* Judged only when the peer answered later requests of this side. */
		if (!unanswered || st->last_answer_seq[first->dir] <= first->seq)
			continue;
		const char *side = first->dir == AN_C2S ? "client's" : "server's";
		const char *peer = first->dir == AN_C2S ? "server" : "client";
		if (total <= 1)
			an_report_at(c, -1, first->seq, NULL, 0,
				     "the request in the %s batch #%lld was never answered, though the "
				     "%s answered later requests",
				     side, (long long)first->seq, peer);
		else
			an_report_at(c, -1, first->seq, NULL, 0,
				     "%zu of the %zu requests in the %s batch #%lld %s never answered, "
				     "though the %s answered later requests",
				     unanswered, total, side, (long long)first->seq,
				     unanswered == 1 ? "was" : "were", peer);
	}
}

static void rpc_009(const struct an_ctx *c)
{
	const struct an_msg *m;

	if (!c->m) {
		rpc_009_end(c);
		return;
	}
	m = c->m;
	if (c->st->version == AN_V2025_03_26)
		return; /* their shape is RPC-010's */
	if (m->cls->kind == MT_BATCH)
		an_report(c, -1,
			  "the %s sent a JSON-RPC batch of %zu message%s: batches exist only in "
			  "2025-03-26",
			  m->dir == AN_C2S ? "client" : "server", m->cls->batch_size,
			  m->cls->batch_size == 1 ? "" : "s");
	else if (m->cls->error && !strcmp(m->cls->error, "empty array"))
		an_report(c, -1, "the %s sent an empty JSON array: batches exist only in 2025-03-26",
			  m->dir == AN_C2S ? "client" : "server");
}

static void rpc_010(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	json_t *batch, *el;
	size_t i, calls = 0, answers = 0, nested = 0, other = 0;

	if (m->cls->kind != MT_BATCH) {
		if (m->cls->error && !strcmp(m->cls->error, "empty array"))
			an_report(c, -1, "an empty batch: a batch holds one or more messages");
		return;
	}
	if (m->in_batch) {
		an_report(c, -1, "a batch inside batch #%lld: batches do not nest", (long long)m->in_batch);
		return;
	}
	batch = an_json(c);
	json_array_foreach(batch, i, el)
	{
		if (json_is_array(el))
			nested++;
		else if (json_object_get(el, "method"))
			calls++;
		else if (json_object_get(el, "result") || json_object_get(el, "error"))
			answers++;
		else
			other++;
	}
	(void)other; /* not messages at all: RPC-001 reports each */
	if (calls && answers)
		an_report(c, -1, "the batch mixes requests or notifications (%zu) with responses (%zu)",
			  calls, answers);
}

static void rpc_011(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	struct mt_span v;

	if (m->cls->kind == MT_RESPONSE) {
		v = m->cls->result;
		if (v.n && v.p[0] != '{')
			an_report(c, -1, "result is %s, not an object", json_type_name(v.p[0]));
	} else if ((v = m->cls->params).n && v.p[0] != '{') {
		an_report(c, -1, "%s params is %s, not an object", m->method ? m->method : "the",
			  json_type_name(v.p[0]));
	}
}

/* RPC-012: an error without an id answers only an unreadable message. */
static void rpc_012(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_state *st = c->st;
	enum an_dir peer = m->dir == AN_C2S ? AN_S2C : AN_C2S;
	json_t *ext = json_object_get(st->ext, "stdio");
	json_int_t pending = json_integer_value(json_object_get(ext, peer == AN_C2S ? "unread0" : "unread1"));
	const char *what = m->cls->idtype == MT_ID_NULL ? "a null id" : "no id";

	if (m->cls->idtype != MT_ID_NULL && m->cls->idtype != MT_ID_NONE)
		return;
	/* Over HTTP, an id-less error in a response body is the HTTP layer's refusal of
	 * the POST (HTTP-006 judges its status). Not in 2026-07-28, where a POST holds
	 * one request: an error to one whose id was read carries that id. */
	if (m->x && m->dir == AN_S2C && m->channel && !strcmp(m->channel, "body")) {
		const struct an_request *r = m->req;
		if (st->version == AN_V2026_07_28 && r && r->dir == AN_C2S && !r->unreadable && r->key &&
		    r->key_len > 2) {
			int64_t rel = r->seq;
			struct mt_buf id = MT_BUF_INIT;
			an_key_text(r->key, r->key_len, &id);
			an_report_at(c, -1, m->seq, &rel, 1,
				     "error with %s answering #%lld %s, whose "
				     "id %.*s was read: in 2026-07-28 an error "
				     "carries the id of the request it answers",
				     what, (long long)r->seq, r->method, (int)id.len, id.data);
			mt_buf_release(&id);
		}
		return;
	}
	/* (The unreadable message may be in a capture gap: TAP-001 says it.) */
	if (pending > 0 || an_open_request(st, peer, "null", 4) || gap_left(st, peer) > 0) {
		/* A reply to something the receiver could not read. */
		if (st->version < AN_V2025_11_25)
			an_report(c, AN_INFO,
				  "error response with %s answers an unreadable message; "
				  "the %s schema requires an id (JSON-RPC 2.0 says null)",
				  what, an_version_name(st->version));
		return;
	}
	an_report(c, -1,
		  "error response with %s, but the %s sent no unreadable message for it "
		  "to answer",
		  what, peer == AN_C2S ? "client" : "server");
}

static void rpc_013(const struct an_ctx *c)
{
	json_t *msg = json_object_get(an_error(c), "message");
	const char *s = json_string_value(msg);
	size_t n = json_string_length(msg);

	if (!s)
		return; /* RPC-006 */
	if (memchr(s, '\n', n))
		an_report(c, -1,
			  "error.message spans several lines (%zu byte%s): it should be one "
			  "concise sentence",
			  n, n == 1 ? "" : "s");
	else if (n > 200)
		an_report(c, -1,
			  "error.message is %zu bytes long: it should be one concise sentence "
			  "(at most 200 bytes)",
			  n);
}

static void rpc_014(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	long bad = mt_utf8_invalid(m->raw, m->raw_len);

	/* Only a line that is JSON but for its encoding: other text is STDIO-002's. */
	if (!m->cls->error || strcmp(m->cls->error, "invalid UTF-8"))
		return;
	if (bad < 0)
		bad = (long)m->cls->error_offset;
	an_report(c, -1, "the %s sent bytes that are not UTF-8 (at byte %ld)",
		  m->dir == AN_C2S ? "client" : "server", bad);
}

/* ---- RPC-015: _meta key names ---- */

/* How many bytes of s (at most max) to print without cutting a UTF-8 character. */
static int print_len(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return (int)n;
	while (max && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return (int)max;
}

static int is_alpha(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static int is_alnum(unsigned char ch)
{
	return is_alpha(ch) || (ch >= '0' && ch <= '9');
}

/*
 * Check a _meta key. Returns NULL when its grammar is right, else why. Sets
 * *reserved when its prefix is reserved for MCP in revision v and is not MCP's
 * own io.modelcontextprotocol/ (which the spec and its official extensions use).
 * need_prefix: capability extension ids must have one.
 */
static const char *meta_key_problem(const char *k, size_t n, enum an_version v, int need_prefix,
				    int *reserved)
{
	const char *slash = memchr(k, '/', n), *name = k, *p;
	size_t nn = n, nlabels = 0;
	int mcp_second = 0, mcp_before_last = 0, last_is_mcp = 0;

	*reserved = 0;
	if (slash) {
		const char *end = slash;
		name = slash + 1;
		nn = n - (size_t)(name - k);
		if (memchr(name, '/', nn))
			return "has more than one '/'";
		for (p = k; p <= end; p++) {
			const char *q = p;
			while (q < end && *q != '.')
				q++;
			size_t len = (size_t)(q - p);
			if (!len)
				return "has an empty label in its prefix";
			if (!is_alpha((unsigned char)p[0]) || !is_alnum((unsigned char)p[len - 1]))
				return "has a prefix label that does not start with a letter and end "
				       "with a letter or digit";
			for (size_t i = 1; i + 1 < len; i++)
				if (!is_alnum((unsigned char)p[i]) && p[i] != '-')
					return "has a character other than a letter, digit or '-' in a "
					       "prefix label";
			int mcp = (len == 3 && !strncasecmp(p, "mcp", 3)) ||
				  (len == 20 && !strncasecmp(p, "modelcontextprotocol", 20));
			nlabels++;
			if (nlabels == 2 && mcp)
				mcp_second = 1;
			mcp_before_last = last_is_mcp; /* the label before this one */
			last_is_mcp = mcp;
			p = q;
		}
		if (v >= AN_V2025_11_25) {
			if (mcp_second && !(slash - k == 23 && !strncmp(k, "io.modelcontextprotocol", 23)))
				*reserved = 1;
		} else if (nlabels >= 2 && mcp_before_last) {
			*reserved = 1;
		}
	} else if (need_prefix) {
		return "has no prefix (an extension id is 'reverse.dns/name')";
	}
	if (nn) {
		if (!is_alnum((unsigned char)name[0]) || !is_alnum((unsigned char)name[nn - 1]))
			return "has a name that does not begin and end with a letter or digit";
		for (size_t i = 1; i + 1 < nn; i++)
			if (!is_alnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
				return "has a character other than a letter, digit, '-', '_' or '.' in "
				       "its name";
	}
	return NULL;
}

struct meta_walk {
	const struct an_ctx *c;
	int reports; /* findings made for this message */
	int budget;  /* nodes left to visit */
};

#define META_MAX_REPORTS 4

static void meta_check_object(struct meta_walk *w, json_t *obj, const char *where, int need_prefix)
{
	const char *key;
	json_t *val;
	enum an_version v = w->c->st->version;

	json_object_foreach(obj, key, val)
	{
		size_t n = strlen(key);
		int reserved;
		const char *why = meta_key_problem(key, n, v, need_prefix, &reserved);
		if (w->reports >= META_MAX_REPORTS)
			return;
		if (why) {
			an_report(w->c, -1, "%s key '%.*s' %s", where, print_len(key, n, 80), key, why);
			w->reports++;
		} else if (reserved) {
			an_report(w->c, AN_WARNING, "%s key '%.*s' uses a prefix reserved for MCP", where,
				  print_len(key, n, 80), key);
			w->reports++;
		}
	}
}

/* Members whose values are user data or JSON Schemas, not MCP objects. */
static int meta_skip(const char *key)
{
	static const char *const skip[] = {
		"arguments", "structuredContent", "inputSchema", "outputSchema", "requestedSchema",
		"data",      "experimental",      "metadata",    "requestState", NULL,
	};

	for (size_t i = 0; skip[i]; i++)
		if (!strcmp(key, skip[i]))
			return 1;
	return 0;
}

static void meta_walk(struct meta_walk *w, json_t *v, const char *parent, int depth)
{
	if (depth > 32 || --w->budget < 0 || w->reports >= META_MAX_REPORTS)
		return;
	if (json_is_object(v)) {
		const char *key;
		json_t *val;
		json_object_foreach(v, key, val)
		{
			if (!strcmp(key, "_meta") && json_is_object(val)) {
				meta_check_object(w, val, "_meta", 0);
				/* 2026-07-28: the client's capabilities travel in _meta. */
				val = json_object_get(val, "io.modelcontextprotocol/clientCapabilities");
				if (json_is_object(val))
					meta_walk(w, val, "io.modelcontextprotocol/clientCapabilities",
						  depth + 1);
				continue;
			}
			if (!strcmp(key, "extensions") && json_is_object(val) && parent &&
			    (!strcmp(parent, "capabilities") ||
			     !strcmp(parent, "io.modelcontextprotocol/clientCapabilities"))) {
				if (w->c->st->version == AN_V2026_07_28)
					meta_check_object(w, val, "capabilities.extensions", 1);
				continue;
			}
			if (meta_skip(key))
				continue;
			if (json_is_object(val) || json_is_array(val))
				meta_walk(w, val, key, depth + 1);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *el;
		json_array_foreach(v, i, el)
		{
			if (json_is_object(el) || json_is_array(el))
				meta_walk(w, el, parent, depth + 1);
		}
	}
}

/*
 * The common case on the bytes: one _meta, the params' or the result's, whose
 * keys are all well formed and unreserved. Returns 1 when so (nothing to say).
 */
static int plain_meta(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const char *first = memmem(m->raw, m->raw_len, "\"_meta\"", 7);
	struct mt_span meta, k, v;
	size_t pos = 0;

	if (!first || memmem(first + 7, m->raw_len - (size_t)(first + 7 - m->raw), "\"_meta\"", 7))
		return 0;
	/* Capability extension ids are keys of their own kind: the full check. */
	if (memmem(m->raw, m->raw_len, "\"extensions\"", 12))
		return 0;
	if (mt_json_member(m->cls->params, "_meta", &meta) != 1 &&
	    mt_json_member(m->cls->result, "_meta", &meta) != 1)
		return 0;
	if (meta.p[0] != '{')
		return 0;
	while (mt_json_next_member(meta, &pos, &k, &v) == 1) {
		int reserved = 0;
		if (memchr(k.p, '\\', k.n) ||
		    meta_key_problem(k.p + 1, k.n - 2, c->st->version, 0, &reserved) || reserved)
			return 0;
		/* A _meta nested in the value would have been a second "_meta". */
	}
	return 1;
}

static void rpc_015(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	struct meta_walk w = {c, 0, 10000};

	if (m->in_batch || !m->cls->meta_anywhere || plain_meta(c))
		return;
	meta_walk(&w, an_json(c), NULL, 0);
}

/* ---- RPC-016 / RPC-017: methods ---- */

static void rpc_016(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const char *why;

	/* 2026-07-28: a server request is V26-005's. */
	if (c->st->version == AN_V2026_07_28 && m->dir == AN_S2C && m->cls->kind == MT_REQUEST)
		return;
	why = an_method_role_problem(c->st->version, m->dir, m->cls->kind, m->method);
	if (why) {
		an_report(c, -1, "the %s sent %s, %s", m->dir == AN_C2S ? "client" : "server", m->method,
			  why);
		return;
	}
	/* 2026-07-28: the server cancels only its subscriptions/listen streams. */
	if (c->st->version == AN_V2026_07_28 && m->dir == AN_S2C &&
	    !strcmp(m->method, "notifications/cancelled")) {
		json_t *rid = json_object_get(an_params(c), "requestId");
		struct mt_buf key = MT_BUF_INIT;
		struct an_request *r = NULL;
		if (rid) {
			an_key_of(rid, &key);
			r = an_find_request(c->st, AN_C2S, key.data ? key.data : "", key.len);
		}
		if (!r || strcmp(r->method, "subscriptions/listen"))
			an_report(c, -1,
				  "the server sent notifications/cancelled for %s: servers "
				  "cancel only subscriptions/listen streams",
				  r ? r->method : "no request the client sent");
		else if (r->answer_seq)
			an_report(c, -1,
				  "the server cancelled subscriptions/listen #%lld after it "
				  "had already ended (#%lld)",
				  (long long)r->seq, (long long)r->answer_seq);
		mt_buf_release(&key);
	}
}

/* Is a method outside the revision covered by a declared experimental feature
 * (or, in 2026-07-28, an extension) of either side? */
static int experimental_declared(const struct an_state *st)
{
	static const char *const keys[] = {"experimental", "extensions"};

	for (int side = 0; side < 2; side++)
		for (size_t k = 0; k < 2; k++) {
			json_t *v = an_cap(st, side ? AN_S2C : AN_C2S, keys[k]);
			if (json_is_object(v) && json_object_size(v))
				return 1;
		}
	/* 2026-07-28: the server's capabilities come from server/discover. */
	json_t *caps = an_path(json_object_get(st->ext, "v26"), "discover.caps");
	for (size_t k = 0; k < 2; k++) {
		json_t *v = json_object_get(caps, keys[k]);
		if (json_is_object(v) && json_object_size(v))
			return 1;
	}
	return 0;
}

int an_method_outside(const struct an_state *st, const char *method)
{
	/* (2026-07-28's initialize is the dual-era fallback to legacy: V26-014.) */
	return !an_method_in(method, st->version) && !experimental_declared(st) &&
	       !(st->version == AN_V2026_07_28 && !strcmp(method, "initialize"));
}

static void rpc_017(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	const struct an_state *st = c->st;
	int known;

	if (an_method_in(m->method, st->version))
		return;
	if (st->version == AN_V2026_07_28 && m->dir == AN_S2C && m->cls->kind == MT_REQUEST)
		return; /* V26-005 */
	if (st->version == AN_V2026_07_28 && m->dir == AN_C2S && !strcmp(m->method, "initialize"))
		return; /* a dual-era fallback: V26-014 */
	known = an_method_known(m->method);
	if (known && an_method_role_problem(st->version, m->dir, m->cls->kind, m->method))
		return; /* RPC-016 says it */
	if (m->cls->kind == MT_REQUEST && !strncmp(m->method, "notifications/", 14))
		return; /* RPC-007 */
	if (experimental_declared(st))
		return;
	/* (2026-07-28: what is not in the table may come with an extension.) */
	const char *none = st->version == AN_V2026_07_28 ? "no extension or experimental capability declared"
							 : "no experimental capability declared";
	if (known)
		an_report(c, -1, "%s is not part of %s (%s)", m->method, an_version_name(st->version), none);
	else
		an_report(c, -1, "%s is not an MCP method of %s (%s)", m->method,
			  an_version_name(st->version), none);
}

/* ---- the tracker ---- */

static void rpc_track(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	enum an_dir sender = m->dir == AN_C2S ? AN_S2C : AN_C2S;

	if (!m->gap && !json_object_size(ext))
		return; /* no gap so far: the usual case */
	if (m->gap) {
		const char *dir = m->gap->dir;
		for (int d = 0; d < 2; d++)
			if (!dir || !strcmp(dir, d == AN_C2S ? "c2s" : "s2c"))
				json_object_set_new(
					ext, gap_key[d],
					json_integer(gap_left(c->st, (enum an_dir)d) + m->gap->gap_messages));
		return;
	}
	/* An answer the rules took for the answer to a hidden message uses one up. */
	if (gap_left(c->st, sender) > 0 && (answers_unknown(c) || error_for_nothing(c)))
		json_object_set_new(ext, gap_key[sender], json_integer(gap_left(c->st, sender) - 1));
}

const struct an_rule an_rules_rpc[] = {
	{"RPC-001", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_NOTJSONRPC, NULL, rpc_001,
	 "every message is a JSON-RPC 2.0 request, notification or response (what is not "
	 "JSON-RPC at all is STDIO-002/STDIO-003's)",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-002", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST | AN_FRAMING, NULL, rpc_002,
	 "request ids are strings or integers, never null", "MCP-RULES §4; basic/index.mdx"},
	{"RPC-003", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_FRAMING, NULL, rpc_003,
	 "a sender never reuses a request id within the session", "MCP-RULES §4; basic/index.mdx"},
	{"RPC-004", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_ANSWER | AN_FRAMING, NULL, rpc_004,
	 "every answer carries the id of an outstanding request from the peer, and is its only answer",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-005", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_NOTJSONRPC | AN_FRAMING, NULL, rpc_005,
	 "a response sets exactly one of result and error", "MCP-RULES §4; basic/index.mdx"},
	{"RPC-006", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_ERROR | AN_FRAMING, NULL, rpc_006,
	 "an error carries an integer code and a string message", "MCP-RULES §4; basic/index.mdx"},
	{"RPC-007", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST | AN_FRAMING, NULL, rpc_007,
	 "notifications carry no id (a notifications/* method sent with an id)",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-008", AN_ERROR, AN_SEV_MUST_0326, AN_ALL4, 0, NULL, NULL,
	 "no response to a notification; on the wire it is an answer to no request: see RPC-004",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-009", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_BATCH | AN_ON_NOTJSONRPC | AN_ON_END, NULL,
	 rpc_009,
	 "a JSON array is a valid message only in 2025-03-26, where the receiver answers every "
	 "request in a batch (checked when it answered later requests)",
	 "MCP-RULES §4; basic/index.mdx, 2025-06-18/changelog.mdx"},
	{"RPC-010", AN_ERROR, AN_SEV_FIXED, AN_V(AN_V2025_03_26), AN_ON_BATCH | AN_ON_NOTJSONRPC, NULL,
	 rpc_010,
	 "a batch holds one or more requests and notifications, or one or more responses, "
	 "never both, and does not nest",
	 "MCP-RULES §4; schema/2025-03-26/schema.ts"},
	{"RPC-011", AN_ERROR, AN_SEV_FIXED, AN_EVERY,
	 AN_ON_REQUEST | AN_ON_NOTIFICATION | AN_ON_RESPONSE | AN_FRAMING, NULL, rpc_011,
	 "a result is a JSON object, and params, when present, is a JSON object",
	 "MCP-RULES §4; schema/<v>/schema.ts"},
	{"RPC-012", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_ERROR | AN_FRAMING, NULL, rpc_012,
	 "an error response has the id of its request, except in reply to a message whose id "
	 "could not be read (info before 2025-11-25, whose schemas require an id); an HTTP "
	 "error body without one refuses its POST, but in 2026-07-28 it answers the POST's "
	 "request and carries its id",
	 "MCP-RULES §4; 2025-11-25/basic/index.mdx; 2026-07-28 schema JSONRPCErrorResponse, SEP-2575"},
	{"RPC-013", AN_WARNING, AN_SEV_FIXED, AN_EVERY, AN_ON_ERROR | AN_FRAMING, NULL, rpc_013,
	 "an error message is a concise single sentence (heuristic: one line, at most 200 bytes)",
	 "MCP-RULES §4; schema/<v>/schema.ts"},
	{"RPC-014", AN_ERROR, AN_SEV_FIXED, AN_FROM_0326 | AN_V26, AN_ON_INVALID | AN_FRAMING, NULL, rpc_014,
	 "JSON-RPC messages are UTF-8 encoded", "MCP-RULES §4; basic/transports.mdx"},
	{"RPC-015", AN_ERROR, AN_SEV_FIXED, AN_FROM_0618 | AN_V26, AN_ON_MESSAGE | AN_FRAMING, NULL, rpc_015,
	 "_meta keys are [labels/]name with valid labels and name; a prefix reserved for MCP "
	 "is a warning (2026-07-28: extension ids too)",
	 "MCP-RULES §4; basic/index.mdx"},
	{"RPC-016", AN_ERROR, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST | AN_ON_NOTIFICATION | AN_FRAMING, NULL,
	 rpc_016,
	 "the method is valid for the sender's role (the schema's client and server unions); "
	 "requests carry an id",
	 "MCP-RULES §1, §4; schema/<v>/schema.ts"},
	{"RPC-017", AN_WARNING, AN_SEV_FIXED, AN_EVERY, AN_ON_REQUEST | AN_ON_NOTIFICATION, NULL, rpc_017,
	 "the method is in the negotiated revision's method table, unless either side declared "
	 "an experimental capability (or an extension)",
	 "MCP-RULES §1, §4; basic/lifecycle.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_rpc[] = {
	{AN_ON_GAP | AN_ON_ANSWER, NULL, rpc_track, "rpc"},
	{0, NULL, NULL, NULL},
};
