/*
 * rules/res.c - result and payload shape rules (MCP-RULES §7.1): what each
 * answer must look like for its request's method, content blocks per
 * revision, tool output schemas, pagination cursors, log levels, annotations
 * and resource URIs.
 *
 * Content blocks appear in tools/call results, prompts/get messages and
 * sampling messages; one walker (walk_content) finds them for RES-004,
 * RES-021 and RES-022. RES-006 and RES-018 use the bounded JSON Schema
 * validator of jsonschema.c, which says which keywords it skipped.
 *
 * The tracker keeps, under st->ext "res": the prompts of the latest complete
 * prompts/list ("prompts": name -> [required argument names], "complete")
 * and the log level of the last successful logging/setLevel ("level").
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyze/analyze.h"
#include "analyze/jsonschema.h"
#include "schema/redact.h"

/* ---- small helpers ---- */

/* At most this many findings per rule and message; the rest are counted. */
#define MAX_SAY 5

struct rep {
	const struct an_ctx *c;
	unsigned n, more;
};

static void say(struct rep *r, int sev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct rep *r, int sev, const char *fmt, ...)
{
	char text[768];
	va_list ap;

	if (r->n >= MAX_SAY) {
		r->more++;
		return;
	}
	r->n++;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	an_report(r->c, sev, "%s", text);
}

/* Report how many findings were left out, if any. */
static void said(struct rep *r)
{
	if (r->more)
		an_report(r->c, -1, "and %u more %s of this kind in the message", r->more,
			  r->more == 1 ? "problem" : "problems");
}

static int is_method(const struct an_ctx *c, const char *name)
{
	return c->m && c->m->method && !strcmp(c->m->method, name);
}

static int at_least(const struct an_ctx *c, enum an_version v)
{
	return c->st->version >= v;
}

/* A CreateTaskResult (2025-11-25) in place of the method's own result: TASK-* check it. */
static int is_create_task(const struct an_ctx *c, json_t *result)
{
	return c->st->version == AN_V2025_11_25 && json_is_object(json_object_get(result, "task")) &&
	       !json_object_get(result, "content");
}

/* Is member k of o absent or a string? */
static int opt_string(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return !v || json_is_string(v);
}

static int opt_bool(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return !v || json_is_boolean(v);
}

/*
 * A string the tap redacted (it holds a marker) is never malformed: its
 * real value was not stored, so nothing can be said of its format.
 */
static int redacted(const char *s, size_t n)
{
	return s && mt_redact_find_marker(s, n) != NULL;
}

static int is_base64(const char *s, size_t n)
{
	size_t pad = 0;

	if (redacted(s, n))
		return 1;

	if (n % 4)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '=') {
			if (i + 2 < n)
				return 0;
			pad++;
		} else if (pad || !(isalnum(ch) || ch == '+' || ch == '/')) {
			return 0;
		}
	}
	return 1;
}

/* type "/" subtype, RFC 6838 token characters, parameters after ';' allowed. */
static int is_mime(const char *s)
{
	int parts = 0;
	size_t n = 0;

	for (;; s++) {
		unsigned char ch = (unsigned char)*s;
		if (isalnum(ch) || (ch && strchr("!#$&^_.+-", ch))) {
			n++;
			continue;
		}
		if (!n)
			return 0;
		parts++;
		n = 0;
		if (ch == '/' && parts == 1)
			continue;
		return parts == 2 && (ch == '\0' || ch == ';' || ch == ' ');
	}
}

/* YYYY-MM-DD, optionally followed by THH:MM[:SS[.frac]][Z|+HH:MM|-HH:MM|+HHMM]. */
static int is_iso8601(const char *s)
{
	int y, mo, d, h, mi, n = 0;

	if (redacted(s, strlen(s)))
		return 1;

	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10 || mo < 1 || mo > 12 || d < 1 ||
	    d > 31)
		return 0;
	s += 10;
	if (!*s)
		return 1;
	if (*s != 'T' && *s != 't')
		return 0;
	s++;
	n = 0;
	if (sscanf(s, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5 || h > 24 || mi > 59)
		return 0;
	s += 5;
	if (*s == ':') {
		if (!isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]))
			return 0;
		s += 3;
		if (*s == '.' || *s == ',') {
			if (!isdigit((unsigned char)*++s))
				return 0;
			while (isdigit((unsigned char)*s))
				s++;
		}
	}
	if (!*s || ((*s == 'Z' || *s == 'z') && !s[1]))
		return 1;
	if (*s != '+' && *s != '-')
		return 0;
	s++;
	for (int i = 0; i < 4; i++, s++) {
		if (i == 2 && *s == ':')
			s++;
		if (!isdigit((unsigned char)*s))
			return 0;
	}
	return *s == '\0';
}

/* Why s is not an RFC 3986 URI (templates may hold {expressions}); NULL if it is one. */
static const char *uri_problem(const char *s, int tmpl)
{
	const char *p = s;

	if (redacted(s, strlen(s)))
		return NULL;

	if (!isalpha((unsigned char)*p))
		return "does not start with a scheme";
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	if (*p != ':')
		return "has no valid scheme (ALPHA *( ALPHA / DIGIT / \"+\" / \"-\" / \".\" ) \":\")";
	for (p++; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (isalnum(ch) || strchr("-._~:/?#[]@!$&'()*+,;=", ch))
			continue;
		if (ch == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
			p += 2;
			continue;
		}
		if (tmpl && (ch == '{' || ch == '}'))
			continue;
		if (ch == '%')
			return "has a '%' that is not a percent-encoding";
		if (ch == ' ')
			return "contains a space";
		if (ch >= 0x80)
			return "contains non-ASCII characters that are not percent-encoded";
		return "contains a character RFC 3986 does not allow";
	}
	return NULL;
}

/* ---- content blocks (RES-004, RES-021, RES-022) ---- */

enum block_ctx {
	IN_TOOL,        /* CallToolResult.content */
	IN_PROMPT,      /* PromptMessage.content */
	IN_SAMPLING,    /* SamplingMessage.content, CreateMessageResult.content */
	IN_TOOL_RESULT, /* ToolResultContent.content inside sampling (2025-11-25) */
};

typedef void (*block_fn)(struct rep *r, json_t *b, const char *where, enum block_ctx ctx);

static void walk_one(struct rep *r, json_t *b, const char *where, enum block_ctx ctx, block_fn fn)
{
	json_t *inner, *e;
	size_t i;
	char w[96];

	fn(r, b, where, ctx);
	if (ctx != IN_SAMPLING || !json_is_object(b))
		return;
	if (!json_is_string(json_object_get(b, "type")) ||
	    strcmp(json_string_value(json_object_get(b, "type")), "tool_result"))
		return;
	inner = json_object_get(b, "content");
	json_array_foreach(inner, i, e)
	{
		snprintf(w, sizeof(w), "%s.content[%zu]", where, i);
		fn(r, e, w, IN_TOOL_RESULT);
	}
}

/* A content array, or (sampling) one block or an array of blocks. */
static void walk_list(struct rep *r, json_t *v, const char *where, enum block_ctx ctx, block_fn fn)
{
	json_t *e;
	size_t i;
	char w[96];

	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
		{
			snprintf(w, sizeof(w), "%s[%zu]", where, i);
			walk_one(r, e, w, ctx, fn);
		}
	} else if (v && ctx == IN_SAMPLING) {
		walk_one(r, v, where, ctx, fn);
	}
}

/* Call fn on every content block of the current message, by its method. */
/*
 * The plain-result scans below are worked out once per message (several rules
 * ask about the same one): a one-message memo per scan. The analyzer runs one
 * engine at a time, on one thread.
 */
enum plain_kind { PLAIN_TOOL, PLAIN_PROMPT, PLAIN_READ, PLAIN_LIST, PLAIN_KINDS };

static int memo(const struct an_ctx *c, enum plain_kind kind, int (*scan)(const struct an_ctx *))
{
	/* By the message's serial: an address and a seq may come back in another session. */
	static struct {
		uint64_t serial;
		int value;
	} cache[PLAIN_KINDS];

	if (!c->m->serial || cache[kind].serial != c->m->serial) {
		cache[kind].serial = c->m->serial;
		cache[kind].value = scan(c);
	}
	return cache[kind].value;
}

/* Is the token the JSON string literal lit (quotes included in lit)? */
static int token_is(struct mt_span t, const char *lit)
{
	size_t n = strlen(lit);

	return t.n == n && !memcmp(t.p, lit, n);
}

/*
 * A response whose result holds the array member key and nothing else but,
 * optionally, the member opt whose value starts with opt_first (e.g. '"' for
 * a string, 't'/'f' read as "tf" for a boolean). *arr gets the array.
 */
static int result_array(const struct an_ctx *c, const char *key, const char *opt, const char *opt_first,
			struct mt_span *arr)
{
	struct mt_span res = c->m->cls->result, k, v;
	size_t pos = 0;

	arr->p = NULL;
	/* (The classifier found the result, the last of duplicates as a parser would.) */
	if (c->m->cls->kind != MT_RESPONSE || !res.p || !res.n || res.p[0] != '{')
		return 0;
	while (mt_json_next_member(res, &pos, &k, &v) == 1) {
		if (token_is(k, key) && v.p[0] == '[')
			*arr = v;
		else if (!(opt && token_is(k, opt) && strchr(opt_first, v.p[0])))
			return 0;
	}
	return arr->p != NULL;
}

static int plain_tool_result_scan(const struct an_ctx *c);
static int plain_prompt_result_scan(const struct an_ctx *c);
static int plain_read_result_scan(const struct an_ctx *c);
static int plain_list_result_scan(const struct an_ctx *c);

static int plain_tool_result(const struct an_ctx *c)
{
	return memo(c, PLAIN_TOOL, plain_tool_result_scan);
}

static int plain_prompt_result(const struct an_ctx *c)
{
	return memo(c, PLAIN_PROMPT, plain_prompt_result_scan);
}

static int plain_read_result(const struct an_ctx *c)
{
	return memo(c, PLAIN_READ, plain_read_result_scan);
}

/* Only resources/list has a plain form here. */
static int plain_list_result(const struct an_ctx *c)
{
	return !strcmp(c->m->method, "resources/list") && memo(c, PLAIN_LIST, plain_list_result_scan);
}

/* Is obj a plain text block, {"type":"text","text":"..."} and nothing else (on the bytes)? */
static int text_block(struct mt_span obj)
{
	struct mt_span k, v;
	size_t pos = 0;
	int type_text = 0, text = 0;

	if (obj.p[0] != '{')
		return 0;
	while (mt_json_next_member(obj, &pos, &k, &v) == 1) {
		if (token_is(k, "\"type\"") && token_is(v, "\"text\""))
			type_text = 1;
		else if (token_is(k, "\"text\"") && v.p[0] == '"')
			text = 1;
		else
			return 0;
	}
	return type_text && text;
}

/*
 * A tools/call result that holds only text blocks, the common case:
 * {"content":[{"type":"text","text":"..."},...]} with an optional boolean
 * isError. Judged on the bytes, with no parse; anything else returns 0 and
 * gets the full checks. (No rule of this family has anything to say about such
 * a result, but RES-006 when the tool declares an outputSchema.)
 */
static int plain_tool_result_scan(const struct an_ctx *c)
{
	struct mt_span content, el;
	size_t epos = 0;

	if (!result_array(c, "\"content\"", "\"isError\"", "tf", &content))
		return 0;
	while (mt_json_next_element(content, &epos, &el) == 1)
		if (!text_block(el))
			return 0;
	return 1;
}

/*
 * A prompts/get result of plain text messages, the common case:
 * {"description"?:"...","messages":[{"role":"user"|"assistant",
 * "content":{"type":"text","text":"..."}},...]}. Judged on the bytes; anything
 * else returns 0 and gets the full checks (RES-004, RES-012, RES-021, RES-022).
 */
static int plain_prompt_result_scan(const struct an_ctx *c)
{
	struct mt_span msgs, k, v, el;
	size_t epos = 0;

	if (!result_array(c, "\"messages\"", "\"description\"", "\"", &msgs))
		return 0;
	while (mt_json_next_element(msgs, &epos, &el) == 1) {
		int role = 0, content = 0;
		size_t mpos = 0;
		if (el.p[0] != '{')
			return 0;
		while (mt_json_next_member(el, &mpos, &k, &v) == 1) {
			if (token_is(k, "\"role\"") &&
			    (token_is(v, "\"user\"") || token_is(v, "\"assistant\""))) {
				role = 1;
			} else if (token_is(k, "\"content\"") && text_block(v)) {
				content = 1;
			} else {
				return 0;
			}
		}
		if (!role || !content)
			return 0;
	}
	return 1;
}

static void walk_content(struct rep *r, block_fn fn)
{
	const struct an_ctx *c = r->c;
	json_t *msgs, *e, *res;
	size_t i;
	char w[64];

	if (!c->m->method)
		return;
	if (c->m->cls->kind == MT_REQUEST) {
		if (strcmp(c->m->method, "sampling/createMessage"))
			return;
		json_array_foreach(json_object_get(an_params(c), "messages"), i, e)
		{
			snprintf(w, sizeof(w), "messages[%zu].content", i);
			walk_list(r, json_object_get(e, "content"), w, IN_SAMPLING, fn);
		}
		return;
	}
	if (c->m->cls->kind != MT_RESPONSE ||
	    (strcmp(c->m->method, "tools/call") && strcmp(c->m->method, "prompts/get") &&
	     strcmp(c->m->method, "sampling/createMessage")))
		return;
	if (!strcmp(c->m->method, "tools/call") && plain_tool_result(c))
		return; /* text blocks only: nothing for a block rule to see */
	if (!strcmp(c->m->method, "prompts/get") && plain_prompt_result(c))
		return;
	res = an_result(c);
	if (!json_is_object(res) || is_create_task(c, res))
		return;
	if (!strcmp(c->m->method, "tools/call")) {
		walk_list(r, json_object_get(res, "content"), "content", IN_TOOL, fn);
	} else if (!strcmp(c->m->method, "prompts/get")) {
		msgs = json_object_get(res, "messages");
		json_array_foreach(msgs, i, e)
		{
			json_t *b = json_object_get(e, "content");
			snprintf(w, sizeof(w), "messages[%zu].content", i);
			if (b)
				walk_one(r, b, w, IN_PROMPT, fn);
		}
	} else if (!strcmp(c->m->method, "sampling/createMessage")) {
		walk_list(r, json_object_get(res, "content"), "content", IN_SAMPLING, fn);
	}
}

/* ---- RES-001 ---- */

/*
 * The optional members of Implementation (clientInfo/serverInfo) per revision.
 * The handshake has not set the revision yet when its rules run: the message's
 * own protocolVersion says which one applies.
 */
static void implementation_extras(struct rep *r, json_t *obj, const char *key, const char *what)
{
	json_t *impl = json_object_get(obj, key), *icons, *e;
	const char *pv = json_string_value(json_object_get(obj, "protocolVersion"));
	enum an_version v = r->c->st->version;
	size_t i;

	if (!json_is_object(impl))
		return; /* LIFE-002 / LIFE-003 */
	if (pv && an_version_parse(pv, &v))
		v = an_version_nearest(pv);
	if (v >= AN_V2025_06_18 && !opt_string(impl, "title"))
		say(r, -1, "%s.title is %s, not a string", what,
		    jsv_type_name(json_object_get(impl, "title")));
	if (v < AN_V2025_11_25)
		return;
	if (!opt_string(impl, "description"))
		say(r, -1, "%s.description is %s, not a string", what,
		    jsv_type_name(json_object_get(impl, "description")));
	if (!opt_string(impl, "websiteUrl"))
		say(r, -1, "%s.websiteUrl is %s, not a string", what,
		    jsv_type_name(json_object_get(impl, "websiteUrl")));
	icons = json_object_get(impl, "icons");
	if (icons && !json_is_array(icons))
		say(r, -1, "%s.icons is %s, not an array", what, jsv_type_name(icons));
	json_array_foreach(icons, i, e)
	{
		json_t *sizes = json_object_get(e, "sizes");
		if (!json_is_object(e) || !json_is_string(json_object_get(e, "src")))
			say(r, -1, "%s.icons[%zu] has no string src", what, i);
		else if (!opt_string(e, "mimeType") || (sizes && !json_is_array(sizes)))
			say(r, -1, "%s.icons[%zu] has a mimeType or sizes of the wrong type", what, i);
	}
}

static void res_001(const struct an_ctx *c)
{
	struct rep r = {c, 0, 0};

	if (c->m->cls->kind == MT_REQUEST) {
		if (c->m->dir == AN_C2S)
			implementation_extras(&r, an_params(c), "clientInfo", "params.clientInfo");
	} else if (c->m->req && c->m->req->dir == AN_C2S) {
		implementation_extras(&r, an_result(c), "serverInfo", "result.serverInfo");
	}
	said(&r);
}

/* ---- RES-002 ---- */

static void res_002(const struct an_ctx *c)
{
	json_t *res = an_result(c), *tools = json_object_get(res, "tools"), *t;
	struct rep r = {c, 0, 0};
	size_t i;

	if (!json_is_array(tools)) {
		an_report(c, -1, "the tools/list result has %s for tools, not an array",
			  jsv_type_name(tools));
		return;
	}
	json_array_foreach(tools, i, t)
	{
		json_t *in = json_object_get(t, "inputSchema"), *out = json_object_get(t, "outputSchema");
		const char *name = json_string_value(json_object_get(t, "name"));
		char who[96];
		if (!json_is_object(t)) {
			say(&r, -1, "tools[%zu] is %s, not a Tool object", i, jsv_type_name(t));
			continue;
		}
		if (name)
			snprintf(who, sizeof(who), "tool '%.60s'", name);
		else
			snprintf(who, sizeof(who), "tools[%zu]", i);
		if (!name)
			say(&r, -1, "%s has no string name", who);
		if (!json_is_object(in)) {
			say(&r, -1, "%s inputSchema is %s, not a JSON Schema object", who, jsv_type_name(in));
		} else {
			json_t *ty = json_object_get(in, "type"), *p = json_object_get(in, "properties");
			json_t *rq = json_object_get(in, "required"), *e;
			size_t j;
			if (!json_is_string(ty) || strcmp(json_string_value(ty), "object"))
				say(&r, -1, "%s inputSchema.type is not \"object\"", who);
			if (p && !json_is_object(p))
				say(&r, -1, "%s inputSchema.properties is %s, not an object", who,
				    jsv_type_name(p));
			if (rq && !json_is_array(rq))
				say(&r, -1, "%s inputSchema.required is %s, not an array", who,
				    jsv_type_name(rq));
			json_array_foreach(rq, j, e)
			{
				if (!json_is_string(e)) {
					say(&r, -1, "%s inputSchema.required holds %s, not only strings", who,
					    jsv_type_name(e));
					break;
				}
			}
		}
		if (!opt_string(t, "description"))
			say(&r, -1, "%s description is not a string", who);
		if (at_least(c, AN_V2025_03_26) && json_object_get(t, "annotations") &&
		    !json_is_object(json_object_get(t, "annotations")))
			say(&r, -1, "%s annotations is not an object", who);
		if (!at_least(c, AN_V2025_06_18))
			continue;
		if (!opt_string(t, "title"))
			say(&r, -1, "%s title is not a string", who);
		if (out && (!json_is_object(out) || !json_is_string(json_object_get(out, "type")) ||
			    strcmp(json_string_value(json_object_get(out, "type")), "object")))
			say(&r, -1, "%s outputSchema is not a JSON Schema object with type \"object\"", who);
		if (at_least(c, AN_V2025_11_25)) {
			json_t *ts = an_path(t, "execution.taskSupport");
			const char *v = json_string_value(ts);
			if (ts && (!v || (strcmp(v, "forbidden") && strcmp(v, "optional") &&
					  strcmp(v, "required"))))
				say(&r, -1, "%s execution.taskSupport is not forbidden, optional or required",
				    who);
		}
	}
	said(&r);
}

/* ---- RES-003 ---- */

static void res_003(const struct an_ctx *c)
{
	json_t *res, *content, *v;

	if (plain_tool_result(c))
		return; /* a content array of text blocks, and nothing else */
	res = an_result(c);
	if (!json_is_object(res) || is_create_task(c, res))
		return;
	content = json_object_get(res, "content");
	if (!json_is_array(content))
		an_report(c, -1, "the tools/call result has %s for content, not an array (required)",
			  jsv_type_name(content));
	if (!opt_bool(res, "isError"))
		an_report(c, -1, "the tools/call result's isError is %s, not a boolean",
			  jsv_type_name(json_object_get(res, "isError")));
	v = json_object_get(res, "structuredContent");
	if (at_least(c, AN_V2025_06_18) && v && !json_is_object(v))
		an_report(c, -1, "the tools/call result's structuredContent is %s, not an object",
			  jsv_type_name(v));
}

/* ---- RES-004 ---- */

static const char *block_types(const struct an_ctx *c, enum block_ctx ctx)
{
	enum an_version v = c->st->version;

	if (ctx == IN_SAMPLING)
		return v >= AN_V2025_11_25   ? "text, image, audio, tool_use, tool_result"
		       : v >= AN_V2025_03_26 ? "text, image, audio"
					     : "text, image";
	return v >= AN_V2025_06_18   ? "text, image, audio, resource_link, resource"
	       : v >= AN_V2025_03_26 ? "text, image, audio, resource"
				     : "text, image, resource";
}

static void need_string(struct rep *r, json_t *b, const char *k, const char *where, const char *type)
{
	if (!json_is_string(json_object_get(b, k)))
		say(r, -1, "%s (%s) has %s for %s, not a string", where, type,
		    jsv_type_name(json_object_get(b, k)), k);
}

static void res_004_block(struct rep *r, json_t *b, const char *where, enum block_ctx ctx)
{
	enum an_version v = r->c->st->version;
	const char *type;
	int ok;

	if (!json_is_object(b)) {
		say(r, -1, "%s is %s, not a content block", where, jsv_type_name(b));
		return;
	}
	type = json_string_value(json_object_get(b, "type"));
	if (!type) {
		say(r, -1, "%s has no string type", where);
		return;
	}
	if (!strcmp(type, "text"))
		ok = 1;
	else if (!strcmp(type, "image"))
		ok = 1;
	else if (!strcmp(type, "audio"))
		ok = v >= AN_V2025_03_26;
	else if (!strcmp(type, "resource"))
		ok = ctx != IN_SAMPLING;
	else if (!strcmp(type, "resource_link"))
		ok = ctx != IN_SAMPLING && v >= AN_V2025_06_18;
	else if (!strcmp(type, "tool_use") || !strcmp(type, "tool_result"))
		ok = ctx == IN_SAMPLING && v >= AN_V2025_11_25;
	else
		ok = 0;
	if (!ok) {
		say(r, -1, "%s has type '%.40s', not one of %s (%s)", where, type, block_types(r->c, ctx),
		    an_version_name(v));
		return;
	}
	if (!strcmp(type, "text")) {
		need_string(r, b, "text", where, type);
	} else if (!strcmp(type, "image") || !strcmp(type, "audio")) {
		json_t *d = json_object_get(b, "data");
		const char *mt = json_string_value(json_object_get(b, "mimeType"));
		if (!json_is_string(d))
			need_string(r, b, "data", where, type);
		else if (!is_base64(json_string_value(d), json_string_length(d)))
			say(r, -1, "%s (%s) data is not base64", where, type);
		if (!mt)
			need_string(r, b, "mimeType", where, type);
		else if (!is_mime(mt))
			say(r, -1, "%s (%s) mimeType '%.60s' is not a valid MIME type", where, type, mt);
	} else if (!strcmp(type, "resource")) {
		json_t *res = json_object_get(b, "resource"), *blob;
		if (!json_is_object(res)) {
			say(r, -1, "%s (resource) has %s for resource, not an object", where,
			    jsv_type_name(res));
			return;
		}
		if (!json_is_string(json_object_get(res, "uri")))
			say(r, -1, "%s.resource has no string uri", where);
		blob = json_object_get(res, "blob");
		if (json_is_string(blob) && !is_base64(json_string_value(blob), json_string_length(blob)))
			say(r, -1, "%s.resource.blob is not base64", where);
		else if (!json_is_string(json_object_get(res, "text")) && !json_is_string(blob))
			say(r, -1, "%s.resource has neither a string text nor a string blob", where);
	} else if (!strcmp(type, "resource_link")) {
		need_string(r, b, "uri", where, type);
		need_string(r, b, "name", where, type);
	} else if (!strcmp(type, "tool_use")) {
		need_string(r, b, "id", where, type);
		need_string(r, b, "name", where, type);
		if (!json_is_object(json_object_get(b, "input")))
			say(r, -1, "%s (tool_use) has %s for input, not an object", where,
			    jsv_type_name(json_object_get(b, "input")));
	} else { /* tool_result */
		json_t *sc = json_object_get(b, "structuredContent");
		need_string(r, b, "toolUseId", where, type);
		if (!json_is_array(json_object_get(b, "content")))
			say(r, -1, "%s (tool_result) has %s for content, not an array", where,
			    jsv_type_name(json_object_get(b, "content")));
		if ((sc && !json_is_object(sc)) || !opt_bool(b, "isError"))
			say(r, -1, "%s (tool_result) structuredContent or isError has the wrong type", where);
	}
}

static void res_004(const struct an_ctx *c)
{
	struct rep r = {c, 0, 0};

	walk_content(&r, res_004_block);
	said(&r);
}

/* ---- RES-005, RES-006 ---- */

/* The tool a tools/call answer is for, from the latest tools/list (borrowed), or NULL. */
static json_t *called_tool(const struct an_ctx *c, const char **name)
{
	*name = NULL;
	if (!json_object_size(c->st->tools))
		return NULL; /* no tools/list seen: no tool to look up (and no parse) */
	*name = c->m->req ? json_string_value(json_object_get(an_req_params(c->m->req), "name")) : NULL;
	return *name ? json_object_get(c->st->tools, *name) : NULL;
}

static void res_005(const struct an_ctx *c)
{
	json_t *res, *sc, *b;
	size_t i;

	if (plain_tool_result(c))
		return; /* no structuredContent */
	res = an_result(c);
	sc = json_object_get(res, "structuredContent");
	if (!json_is_object(sc) || is_create_task(c, res))
		return;
	json_array_foreach(json_object_get(res, "content"), i, b)
	{
		json_t *text = json_object_get(b, "text"), *parsed;
		int same;
		if (!json_is_string(text))
			continue;
		parsed = json_loadb(json_string_value(text), json_string_length(text), JSON_DECODE_ANY, NULL);
		same = parsed && jsv_equal(parsed, sc);
		json_decref(parsed);
		if (same)
			return;
	}
	an_report(c, AN_WARNING,
		  "the result has structuredContent but no text block holding it as "
		  "serialized JSON (for backwards compatibility)");
}

static void res_006_list(const struct an_ctx *c)
{
	json_t *t;
	size_t i;
	struct rep r = {c, 0, 0};

	json_array_foreach(json_object_get(an_result(c), "tools"), i, t)
	{
		json_t *os = json_object_get(t, "outputSchema");
		struct jsv v;
		char kw[200];
		if (!json_is_object(os))
			continue;
		jsv_scan(&v, os);
		if (!v.nskipped)
			continue;
		jsv_skipped_text(&v, kw, sizeof(kw));
		say(&r, AN_INFO,
		    "tool '%.60s' outputSchema uses keywords the analyzer does not check "
		    "(skipped): %s",
		    json_string_value(json_object_get(t, "name"))
			    ? json_string_value(json_object_get(t, "name"))
			    : "?",
		    kw);
	}
	said(&r);
}

static void res_006(const struct an_ctx *c)
{
	json_t *res, *tool, *os, *sc;
	const char *name;
	struct jsv v;

	if (is_method(c, "tools/list")) {
		res_006_list(c);
		return;
	}
	if (!is_method(c, "tools/call"))
		return;
	tool = called_tool(c, &name);
	os = json_object_get(tool, "outputSchema");
	if (!json_is_object(os))
		return; /* no schema to meet */
	res = an_result(c);
	if (!json_is_object(res) || is_create_task(c, res) || json_is_true(json_object_get(res, "isError")))
		return;
	sc = json_object_get(res, "structuredContent");
	if (!sc) {
		an_report(c, -1,
			  "tool '%.60s' declares an outputSchema but its result has no "
			  "structuredContent",
			  name);
		return;
	}
	if (!jsv_validate(&v, os, sc))
		an_report(c, -1, "tool '%.60s' structuredContent does not match its outputSchema: %s", name,
			  v.err);
	else if (v.stopped)
		an_report(c, AN_INFO,
			  "tool '%.60s' structuredContent: validation stopped at its depth or "
			  "work limit; the rest was not checked",
			  name);
}

/* ---- RES-007 ---- */

static void res_007(const struct an_ctx *c)
{
	const char *name;
	int64_t code = c->m->cls->error_code;

	if (!c->m->cls->has_error_code || !called_tool(c, &name))
		return;
	/* Protocol errors: parse, invalid request, no such method/task support, URL elicitation. */
	if (code == -32700 || code == -32600 || code == -32601 || code == -32042)
		return;
	if (code == -32602 && !at_least(c, AN_V2025_11_25))
		return;
	an_report(c, -1,
		  "tools/call of the listed tool '%.60s' answered with JSON-RPC error %lld: %s "
		  "should be a result with isError: true",
		  name, (long long)code,
		  code == -32602 ? "input validation errors (2025-11-25)" : "errors from the tool");
}

/* ---- RES-008 ---- */

static int tool_name_ok(const char *s, size_t n)
{
	if (n < 1 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!isalnum(ch) && ch != '_' && ch != '-' && ch != '.')
			return 0;
	}
	return 1;
}

static void res_008(const struct an_ctx *c)
{
	json_t *tools = json_object_get(an_result(c), "tools"), *t, *seen = json_object();
	int paged = c->m->req && json_object_get(an_req_params(c->m->req), "cursor");
	struct rep r = {c, 0, 0};
	size_t i;

	json_array_foreach(tools, i, t)
	{
		json_t *nm = json_object_get(t, "name");
		const char *name = json_string_value(nm);
		if (!name)
			continue;
		if (!tool_name_ok(name, json_string_length(nm)))
			say(&r, -1, "tool name '%.60s' is not 1-128 characters of A-Z a-z 0-9 _ - .", name);
		if (json_object_get(seen, name) || (paged && json_object_get(c->st->tools, name)))
			say(&r, -1, "tool name '%.60s' is listed more than once", name);
		json_object_set_new(seen, name, json_true());
	}
	json_decref(seen);
	said(&r);
}

/* ---- RES-009, RES-010 ---- */

static int paginated(const struct an_ctx *c)
{
	static const char *const m[] = {"tools/list", "prompts/list", "resources/list",
					"resources/templates/list", NULL};

	if (!c->m->method)
		return 0;
	for (size_t i = 0; m[i]; i++)
		if (!strcmp(c->m->method, m[i]))
			return 1;
	return at_least(c, AN_V2025_11_25) && !strcmp(c->m->method, "tasks/list");
}

/* Was cursor given as a nextCursor for method earlier in the session? */
static int cursor_given(const struct an_state *st, const char *method, json_t *cursor)
{
	return an_cursor_given(st, method, cursor);
}

static void res_009(const struct an_ctx *c)
{
	json_t *cur, *next;
	struct mt_span span;

	if (!paginated(c))
		return;
	switch (c->m->cls->kind) {
	case MT_REQUEST:
		/* No cursor, or a string one: nothing to say, and no parse. */
		if (mt_json_member(c->m->cls->params, "cursor", &span) != 1 || span.p[0] == '"')
			return;
		cur = json_object_get(an_params(c), "cursor");
		if (cur && !json_is_string(cur))
			an_report(c, -1, "%s params.cursor is %s, not a string", c->m->method,
				  jsv_type_name(cur));
		break;
	case MT_RESPONSE:
		if (mt_json_member(c->m->cls->result, "nextCursor", &span) != 1 || span.p[0] == '"')
			return;
		next = json_object_get(an_result(c), "nextCursor");
		if (next && !json_is_string(next))
			an_report(c, -1, "%s result's nextCursor is %s, not a string (omit it at the end)",
				  c->m->method, jsv_type_name(next));
		break;
	case MT_ERROR:
		cur = c->m->req ? json_object_get(an_req_params(c->m->req), "cursor") : NULL;
		if (json_is_string(cur) && !cursor_given(c->st, c->m->method, cur) &&
		    c->m->cls->has_error_code && c->m->cls->error_code != -32602)
			an_report(c, AN_WARNING,
				  "%s with an invalid cursor answered with error %lld, "
				  "not -32602 (invalid params)",
				  c->m->method, (long long)c->m->cls->error_code);
		break;
	default: break;
	}
}

static void res_010(const struct an_ctx *c)
{
	json_t *cur;

	struct mt_span span;

	if (!paginated(c))
		return;
	if (mt_json_member(c->m->cls->params, "cursor", &span) != 1)
		return; /* no cursor: the first page (and no parse) */
	cur = json_object_get(an_params(c), "cursor");
	if (json_is_string(cur) && !cursor_given(c->st, c->m->method, cur))
		an_report(c, -1, "%s cursor '%.60s' was never given as a nextCursor for %s in this session",
			  c->m->method, json_string_value(cur), c->m->method);
}

/* ---- RES-011 ---- */

static int contains_nocase(const char *s, const char *what)
{
	size_t n = strlen(what);

	for (; s && *s; s++)
		if (!strncasecmp(s, what, n))
			return 1;
	return 0;
}

/* A URI string token with no escapes and a well-formed URI (see uri_problem). */
static int span_uri_ok(struct mt_span v)
{
	char uri[2048];

	if (v.n < 2 || v.n - 2 >= sizeof(uri) || memchr(v.p, '\\', v.n))
		return 0;
	memcpy(uri, v.p + 1, v.n - 2);
	uri[v.n - 2] = '\0';
	return !uri_problem(uri, 0);
}

/*
 * A resources/read result of plain text contents, the common case:
 * {"contents":[{"uri":"...","text":"...","mimeType":"..."?},...]} with URIs
 * that are well formed. Judged on the bytes; anything else returns 0 and gets
 * the full checks of RES-011 and RES-022.
 */
static int plain_read_result_scan(const struct an_ctx *c)
{
	struct mt_span contents, k, v, el;
	size_t epos = 0;

	if (!result_array(c, "\"contents\"", NULL, NULL, &contents))
		return 0;
	while (mt_json_next_element(contents, &epos, &el) == 1) {
		int has_uri = 0, has_text = 0;
		size_t bpos = 0;
		if (el.p[0] != '{')
			return 0;
		while (mt_json_next_member(el, &bpos, &k, &v) == 1) {
			if (v.p[0] != '"')
				return 0;
			if (k.n == 5 && !memcmp(k.p, "\"uri\"", 5)) {
				if (!span_uri_ok(v))
					return 0;
				has_uri = 1;
			} else if (k.n == 6 && !memcmp(k.p, "\"text\"", 6)) {
				has_text = 1;
			} else if (!(k.n == 10 && !memcmp(k.p, "\"mimeType\"", 10))) {
				return 0;
			}
		}
		if (!has_uri || !has_text)
			return 0;
	}
	return 1;
}

/*
 * A resources/list result of plain entries, the common case:
 * {"resources":[{"uri":"...","name":"...", and optional string mimeType,
 * description, title},...], "nextCursor"?:"..."} with well-formed URIs.
 * Judged on the bytes; anything else gets the full checks (RES-011, 021, 022).
 */
static int plain_list_result_scan(const struct an_ctx *c)
{
	struct mt_span list, k, v, el;
	size_t epos = 0;

	if (!result_array(c, "\"resources\"", "\"nextCursor\"", "\"", &list))
		return 0;
	while (mt_json_next_element(list, &epos, &el) == 1) {
		int has_uri = 0, has_name = 0;
		size_t bpos = 0;
		if (el.p[0] != '{')
			return 0;
		while (mt_json_next_member(el, &bpos, &k, &v) == 1) {
			if (v.p[0] != '"')
				return 0;
			if (k.n == 5 && !memcmp(k.p, "\"uri\"", 5)) {
				if (!span_uri_ok(v))
					return 0;
				has_uri = 1;
			} else if (k.n == 6 && !memcmp(k.p, "\"name\"", 6)) {
				has_name = 1;
			} else if (!(k.n == 10 && !memcmp(k.p, "\"mimeType\"", 10)) &&
				   !(k.n == 13 && !memcmp(k.p, "\"description\"", 13)) &&
				   !(k.n == 7 && !memcmp(k.p, "\"title\"", 7))) {
				return 0;
			}
		}
		if (!has_uri || !has_name)
			return 0;
	}
	return 1;
}

static void res_011(const struct an_ctx *c)
{
	const char *m = c->m->method;
	json_t *res, *list, *e;
	struct rep r = {c, 0, 0};
	size_t i;

	if (!m)
		return;
	if (c->m->cls->kind == MT_ERROR) {
		/* -32601 is the right answer from a server without resources (CAP-003). */
		if (!strcmp(m, "resources/read") && c->m->cls->has_error_code &&
		    c->m->cls->error_code != -32002 && c->m->cls->error_code != -32601 &&
		    contains_nocase(json_string_value(json_object_get(an_error(c), "message")), "not found"))
			an_report(c, AN_WARNING, "resource not found answered with error %lld, not -32002",
				  (long long)c->m->cls->error_code);
		return;
	}
	if (strcmp(m, "resources/read") && strcmp(m, "resources/list") &&
	    strcmp(m, "resources/templates/list"))
		return;
	if ((!strcmp(m, "resources/read") && plain_read_result(c)) || plain_list_result(c))
		return; /* text contents with a uri each, or plain listed resources */
	res = an_result(c);
	if (!strcmp(m, "resources/read")) {
		list = json_object_get(res, "contents");
		if (!json_is_array(list)) {
			an_report(c, -1, "the resources/read result has %s for contents, not an array",
				  jsv_type_name(list));
			return;
		}
		json_array_foreach(list, i, e)
		{
			json_t *blob = json_object_get(e, "blob");
			if (!json_is_object(e) || !json_is_string(json_object_get(e, "uri")))
				say(&r, -1, "contents[%zu] has no string uri", i);
			else if (json_is_string(blob) &&
				 !is_base64(json_string_value(blob), json_string_length(blob)))
				say(&r, -1, "contents[%zu].blob is not base64", i);
			else if (!json_is_string(json_object_get(e, "text")) && !json_is_string(blob))
				say(&r, -1, "contents[%zu] has neither a string text nor a string blob", i);
			else if (!opt_string(e, "mimeType"))
				say(&r, -1, "contents[%zu].mimeType is not a string", i);
		}
	} else if (!strcmp(m, "resources/list") || !strcmp(m, "resources/templates/list")) {
		int tmpl = m[10] == 't';
		const char *key = tmpl ? "resourceTemplates" : "resources";
		const char *uri = tmpl ? "uriTemplate" : "uri";
		list = json_object_get(res, key);
		if (!json_is_array(list)) {
			an_report(c, -1, "the %s result has %s for %s, not an array", m, jsv_type_name(list),
				  key);
			return;
		}
		json_array_foreach(list, i, e)
		{
			if (!json_is_object(e) || !json_is_string(json_object_get(e, uri)) ||
			    !json_is_string(json_object_get(e, "name")))
				say(&r, -1, "%s[%zu] needs string %s and name", key, i, uri);
			else if (!opt_string(e, "mimeType") || !opt_string(e, "description"))
				say(&r, -1, "%s[%zu] mimeType or description is not a string", key, i);
			else if (json_object_get(e, "size") && !json_is_number(json_object_get(e, "size")))
				say(&r, -1, "%s[%zu].size is not a number", key, i);
		}
	}
	said(&r);
}

/* ---- RES-012 ---- */

static int is_role(json_t *v)
{
	const char *s = json_string_value(v);
	return s && (!strcmp(s, "user") || !strcmp(s, "assistant"));
}

/* Why a prompts/get request is invalid by the latest complete prompts/list, or NULL. */
static const char *prompt_problem(const struct an_ctx *c, char *buf, size_t n)
{
	json_t *ext = json_object_get(c->st->ext, "res"), *prompts = json_object_get(ext, "prompts");
	json_t *params, *want, *e;
	const char *name;
	size_t i;

	/* Without a complete prompts/list there is nothing to compare with (and no parse). */
	if (!json_is_true(json_object_get(ext, "complete")) || !prompts)
		return NULL;
	params = c->m->req ? an_req_params(c->m->req) : NULL;
	name = json_string_value(json_object_get(params, "name"));
	if (!name)
		return NULL;
	if (!(want = json_object_get(prompts, name))) {
		snprintf(buf, n, "names prompt '%.60s', which prompts/list did not list", name);
		return buf;
	}
	json_array_foreach(want, i, e)
	{
		if (!json_object_get(json_object_get(params, "arguments"), json_string_value(e))) {
			snprintf(buf, n, "misses the required argument '%.60s' of prompt '%.60s'",
				 json_string_value(e), name);
			return buf;
		}
	}
	return NULL;
}

static void res_012(const struct an_ctx *c)
{
	const char *m = c->m->method, *why;
	json_t *res, *list, *e;
	struct rep r = {c, 0, 0};
	char buf[200];
	size_t i;

	if (!m || (strcmp(m, "prompts/get") && strcmp(m, "prompts/list")))
		return;
	if (!strcmp(m, "prompts/get") && (why = prompt_problem(c, buf, sizeof(buf)))) {
		if (c->m->cls->kind == MT_RESPONSE)
			an_report(c, AN_WARNING,
				  "prompts/get %s, yet it succeeded: it should fail with "
				  "-32602",
				  why);
		else if (c->m->cls->has_error_code && c->m->cls->error_code != -32602)
			an_report(c, AN_WARNING, "prompts/get %s: the error should be -32602, not %lld", why,
				  (long long)c->m->cls->error_code);
	}
	if (c->m->cls->kind != MT_RESPONSE)
		return;
	if (!strcmp(m, "prompts/get") && plain_prompt_result(c))
		return; /* text messages with a role each */
	res = an_result(c);
	if (!strcmp(m, "prompts/get")) {
		list = json_object_get(res, "messages");
		if (!json_is_array(list)) {
			an_report(c, -1, "the prompts/get result has %s for messages, not an array",
				  jsv_type_name(list));
			return;
		}
		if (!opt_string(res, "description"))
			say(&r, -1, "the prompts/get result's description is not a string");
		json_array_foreach(list, i, e)
		{
			if (!json_is_object(e))
				say(&r, -1, "messages[%zu] is %s, not a PromptMessage", i, jsv_type_name(e));
			else if (!is_role(json_object_get(e, "role")))
				say(&r, -1, "messages[%zu].role is not \"user\" or \"assistant\"", i);
			else if (!json_is_object(json_object_get(e, "content")))
				say(&r, -1, "messages[%zu].content is %s, not a content block", i,
				    jsv_type_name(json_object_get(e, "content")));
		}
	} else if (!strcmp(m, "prompts/list")) {
		list = json_object_get(res, "prompts");
		if (!json_is_array(list)) {
			an_report(c, -1, "the prompts/list result has %s for prompts, not an array",
				  jsv_type_name(list));
			return;
		}
		json_array_foreach(list, i, e)
		{
			json_t *args = json_object_get(e, "arguments"), *a;
			size_t j;
			if (!json_is_object(e) || !json_is_string(json_object_get(e, "name"))) {
				say(&r, -1, "prompts[%zu] has no string name", i);
				continue;
			}
			if (args && !json_is_array(args))
				say(&r, -1, "prompts[%zu].arguments is %s, not an array", i,
				    jsv_type_name(args));
			json_array_foreach(args, j, a)
			{
				if (!json_is_string(json_object_get(a, "name")) || !opt_bool(a, "required"))
					say(&r, -1,
					    "prompts[%zu].arguments[%zu] needs a string name and an "
					    "optional boolean required",
					    i, j);
			}
		}
	}
	said(&r);
}

/* ---- RES-013 ---- */

static void res_013(const struct an_ctx *c)
{
	json_t *comp = json_object_get(an_result(c), "completion"), *vals, *e;
	size_t i;

	if (!json_is_object(comp)) {
		an_report(c, -1, "the completion/complete result has %s for completion, not an object",
			  jsv_type_name(comp));
		return;
	}
	vals = json_object_get(comp, "values");
	if (!json_is_array(vals)) {
		an_report(c, -1, "completion.values is %s, not an array of strings", jsv_type_name(vals));
	} else {
		json_array_foreach(vals, i, e)
		{
			if (!json_is_string(e)) {
				an_report(c, -1, "completion.values[%zu] is %s, not a string", i,
					  jsv_type_name(e));
				break;
			}
		}
		if (json_array_size(vals) > 100)
			an_report(c, AN_WARNING, "completion.values has %zu items; it must not exceed 100",
				  json_array_size(vals));
	}
	if (json_object_get(comp, "total") && !json_is_number(json_object_get(comp, "total")))
		an_report(c, -1, "completion.total is not a number");
	if (!opt_bool(comp, "hasMore"))
		an_report(c, -1, "completion.hasMore is not a boolean");
}

/* ---- RES-014 ---- */

static void sampling_request(struct rep *r, json_t *p)
{
	static const char *const prio[] = {"costPriority", "speedPriority", "intelligencePriority", NULL};
	json_t *msgs = json_object_get(p, "messages"), *e, *mp, *k;
	const char *ic;
	size_t i;

	if (!json_is_array(msgs))
		say(r, -1, "sampling/createMessage params.messages is %s, not an array", jsv_type_name(msgs));
	json_array_foreach(msgs, i, e)
	{
		json_t *content = json_object_get(e, "content");
		if (!is_role(json_object_get(e, "role")))
			say(r, -1, "messages[%zu].role is not \"user\" or \"assistant\"", i);
		if (!json_is_object(content) && !(json_is_array(content) && at_least(r->c, AN_V2025_11_25)))
			say(r, -1, "messages[%zu].content is %s, not a content block%s", i,
			    jsv_type_name(content),
			    at_least(r->c, AN_V2025_11_25) ? " or an array of them" : "");
	}
	if (!json_is_number(json_object_get(p, "maxTokens")))
		say(r, -1, "sampling/createMessage params.maxTokens is %s, not a number",
		    jsv_type_name(json_object_get(p, "maxTokens")));
	mp = json_object_get(p, "modelPreferences");
	for (i = 0; mp && prio[i]; i++) {
		k = json_object_get(mp, prio[i]);
		if (k && (!json_is_number(k) || json_number_value(k) < 0 || json_number_value(k) > 1))
			say(r, -1, "modelPreferences.%s is not a number in [0, 1]", prio[i]);
	}
	if ((k = json_object_get(mp, "hints")) && !json_is_array(k))
		say(r, -1, "modelPreferences.hints is not an array");
	ic = json_string_value(json_object_get(p, "includeContext"));
	if ((json_object_get(p, "includeContext") && !ic) ||
	    (ic && strcmp(ic, "none") && strcmp(ic, "thisServer") && strcmp(ic, "allServers")))
		say(r, -1, "includeContext is not none, thisServer or allServers");
	if (!opt_string(p, "systemPrompt"))
		say(r, -1, "systemPrompt is not a string");
	if ((k = json_object_get(p, "temperature")) && !json_is_number(k))
		say(r, -1, "temperature is not a number");
	if ((k = json_object_get(p, "stopSequences")) && !json_is_array(k))
		say(r, -1, "stopSequences is not an array of strings");
}

static void res_014(const struct an_ctx *c)
{
	struct rep r = {c, 0, 0};
	json_t *res, *content;

	if (c->m->cls->kind == MT_REQUEST) {
		sampling_request(&r, an_params(c));
		said(&r);
		return;
	}
	res = an_result(c);
	if (!json_is_object(res) || is_create_task(c, res))
		return;
	content = json_object_get(res, "content");
	if (!is_role(json_object_get(res, "role")))
		an_report(c, -1, "the sampling result's role is not \"user\" or \"assistant\"");
	if (!json_is_object(content) && !(json_is_array(content) && at_least(c, AN_V2025_11_25)))
		an_report(c, -1, "the sampling result's content is %s, not a content block",
			  jsv_type_name(content));
	if (!json_is_string(json_object_get(res, "model")))
		an_report(c, -1, "the sampling result's model is %s, not a string",
			  jsv_type_name(json_object_get(res, "model")));
	if (!opt_string(res, "stopReason"))
		an_report(c, -1, "the sampling result's stopReason is not a string");
}

/* ---- RES-015 ---- */

/* Count the blocks of an array and its tool_use / tool_result ones. */
static void count_blocks(json_t *content, size_t *all, size_t *uses, size_t *results)
{
	json_t *e;
	size_t i;

	*all = *uses = *results = 0;
	json_array_foreach(content, i, e)
	{
		const char *t = json_string_value(json_object_get(e, "type"));
		(*all)++;
		*uses += t && !strcmp(t, "tool_use");
		*results += t && !strcmp(t, "tool_result");
	}
}

static const char *block_type(json_t *b)
{
	return json_string_value(json_object_get(b, "type"));
}

static void res_015(const struct an_ctx *c)
{
	json_t *msgs = json_object_get(an_params(c), "messages"), *ids = json_object();
	struct rep r = {c, 0, 0};
	size_t i, n = json_array_size(msgs);

	for (i = 0; i < n; i++) {
		json_t *msg = json_array_get(msgs, i), *content = json_object_get(msg, "content"), *b;
		const char *role = json_string_value(json_object_get(msg, "role"));
		size_t all, uses, results, j;
		json_t *one = json_is_object(content) ? json_pack("[O]", content) : json_incref(content);

		count_blocks(one, &all, &uses, &results);
		if (role && !strcmp(role, "user") && results && results != all)
			say(&r, -1, "messages[%zu] mixes tool_result blocks with other content", i);
		json_array_foreach(one, j, b)
		{
			const char *t = block_type(b);
			const char *id;
			if (t && !strcmp(t, "tool_use") && (id = json_string_value(json_object_get(b, "id"))))
				json_object_set_new(ids, id, json_false());
			if (t && !strcmp(t, "tool_result") &&
			    (id = json_string_value(json_object_get(b, "toolUseId")))) {
				if (!json_object_get(ids, id))
					say(&r, -1,
					    "messages[%zu] tool_result toolUseId '%.60s' matches no earlier "
					    "tool_use",
					    i, id);
				else
					json_object_set_new(ids, id, json_true());
			}
		}
		if (role && !strcmp(role, "assistant") && uses) {
			json_t *next = json_array_get(msgs, i + 1), *nc;
			const char *nrole = json_string_value(json_object_get(next, "role"));
			size_t nall, nuses, nresults;
			nc = json_object_get(next, "content");
			nc = json_is_object(nc) ? json_pack("[O]", nc) : json_incref(nc);
			count_blocks(nc, &nall, &nuses, &nresults);
			if (!next || !nrole || strcmp(nrole, "user") || !nall || nresults != nall) {
				say(&r, -1,
				    "messages[%zu] has tool_use blocks but is not followed by a user "
				    "message of tool_result blocks only",
				    i);
			} else {
				json_array_foreach(one, j, b)
				{
					const char *t = block_type(b), *id;
					size_t k;
					json_t *rb;
					int found = 0;
					if (!t || strcmp(t, "tool_use") ||
					    !(id = json_string_value(json_object_get(b, "id"))))
						continue;
					json_array_foreach(nc, k, rb)
					{
						const char *rid =
							json_string_value(json_object_get(rb, "toolUseId"));
						found |= rid && !strcmp(rid, id);
					}
					if (!found)
						say(&r, -1,
						    "messages[%zu] tool_use '%.60s' has no tool_result in "
						    "messages[%zu]",
						    i, id, i + 1);
				}
			}
			json_decref(nc);
		}
		json_decref(one);
	}
	json_decref(ids);
	said(&r);
}

/* ---- RES-016 ---- */

static void res_016(const struct an_ctx *c)
{
	json_t *roots = json_object_get(an_result(c), "roots"), *e;
	struct rep r = {c, 0, 0};
	size_t i;

	if (!json_is_array(roots)) {
		an_report(c, -1, "the roots/list result has %s for roots, not an array",
			  jsv_type_name(roots));
		return;
	}
	json_array_foreach(roots, i, e)
	{
		const char *uri = json_string_value(json_object_get(e, "uri"));
		if (!uri)
			say(&r, -1, "roots[%zu] has no string uri", i);
		else if (strncmp(uri, "file://", 7))
			say(&r, -1, "roots[%zu].uri '%.80s' is not a file:// URI", i, uri);
		if (!opt_string(e, "name"))
			say(&r, -1, "roots[%zu].name is not a string", i);
	}
	said(&r);
}

/* ---- RES-017, RES-018 ---- */

static const char *elicit_mode(json_t *params)
{
	const char *mode = json_string_value(json_object_get(params, "mode"));
	return mode ? mode : "form";
}

static void elicit_request(struct rep *r, json_t *p)
{
	const struct an_ctx *c = r->c;
	const char *mode = elicit_mode(p), *key;
	json_t *rs = json_object_get(p, "requestedSchema"), *props, *e;

	if (!json_is_string(json_object_get(p, "message")))
		say(r, -1, "elicitation/create params.message is not a string");
	if (at_least(c, AN_V2025_11_25) && !strcmp(mode, "url")) {
		if (!json_is_string(json_object_get(p, "elicitationId")) ||
		    !json_is_string(json_object_get(p, "url")))
			say(r, -1, "URL-mode elicitation/create needs string elicitationId and url");
		return;
	}
	if (strcmp(mode, "form") || (json_object_get(p, "mode") && !at_least(c, AN_V2025_11_25))) {
		say(r, -1, "elicitation/create mode '%.30s' is not form%s", mode,
		    at_least(c, AN_V2025_11_25) ? " or url" : " (no mode before 2025-11-25)");
		return;
	}
	if (!json_is_object(rs) || !json_is_string(json_object_get(rs, "type")) ||
	    strcmp(json_string_value(json_object_get(rs, "type")), "object")) {
		say(r, -1, "requestedSchema is not an object schema with type \"object\"");
		return;
	}
	props = json_object_get(rs, "properties");
	if (!json_is_object(props))
		say(r, -1, "requestedSchema.properties is %s, not an object", jsv_type_name(props));
	json_object_foreach(props, key, e)
	{
		const char *t = json_string_value(json_object_get(e, "type"));
		int prim = t && (!strcmp(t, "string") || !strcmp(t, "number") || !strcmp(t, "integer") ||
				 !strcmp(t, "boolean"));
		if (t && !strcmp(t, "array") && at_least(c, AN_V2025_11_25))
			prim = json_is_object(json_object_get(e, "items")); /* multi-select enum */
		if (!prim)
			say(r, -1,
			    "requestedSchema property '%.60s' is not a primitive schema (string, "
			    "number, integer, boolean%s)",
			    key, at_least(c, AN_V2025_11_25) ? ", enum array" : "");
	}
}

static void res_017(const struct an_ctx *c)
{
	struct rep r = {c, 0, 0};
	json_t *res, *content, *e;
	const char *action, *key;

	if (c->m->cls->kind == MT_REQUEST) {
		elicit_request(&r, an_params(c));
		said(&r);
		return;
	}
	res = an_result(c);
	if (!json_is_object(res) || is_create_task(c, res))
		return;
	action = json_string_value(json_object_get(res, "action"));
	if (!action || (strcmp(action, "accept") && strcmp(action, "decline") && strcmp(action, "cancel")))
		say(&r, -1, "the elicitation result's action is not accept, decline or cancel");
	content = json_object_get(res, "content");
	if (content && !json_is_object(content)) {
		say(&r, -1, "the elicitation result's content is %s, not an object", jsv_type_name(content));
	} else if (content) {
		if (action && strcmp(action, "accept"))
			say(&r, AN_WARNING,
			    "the elicitation result has content with action '%s'; it is "
			    "only present when accepted",
			    action);
		else if (c->m->req && !strcmp(elicit_mode(an_req_params(c->m->req)), "url"))
			say(&r, AN_WARNING,
			    "the URL-mode elicitation result has content; it is omitted in "
			    "URL mode");
		json_object_foreach(content, key, e)
		{
			int ok = json_is_string(e) || json_is_number(e) || json_is_boolean(e);
			if (json_is_array(e) && at_least(c, AN_V2025_11_25)) {
				json_t *s;
				size_t i;
				ok = 1;
				json_array_foreach(e, i, s)
				{
					ok &= json_is_string(s);
				}
			}
			if (!ok)
				say(&r, -1, "content.%.60s is %s, not a string, number or boolean%s", key,
				    jsv_type_name(e),
				    at_least(c, AN_V2025_11_25) ? " (or string array)" : "");
		}
	}
	said(&r);
}

static void res_018(const struct an_ctx *c)
{
	json_t *res = an_result(c), *params = c->m->req ? an_req_params(c->m->req) : NULL, *rs, *content;
	const char *action = json_string_value(json_object_get(res, "action"));
	struct jsv v;
	int ok;

	if (!action || strcmp(action, "accept") || strcmp(elicit_mode(params), "form"))
		return;
	rs = json_object_get(params, "requestedSchema");
	if (!json_is_object(rs))
		return;
	content = json_object_get(res, "content");
	if (content && !json_is_object(content))
		return; /* RES-017 */
	if (!content) {
		content = json_object();
		ok = jsv_validate(&v, rs, content);
		json_decref(content);
	} else {
		ok = jsv_validate(&v, rs, content);
	}
	if (!ok)
		an_report(c, -1, "accepted elicitation content does not satisfy requestedSchema: %s", v.err);
}

/* ---- RES-019 ---- */

static const char *const levels[] = {"debug",    "info",  "notice",    "warning", "error",
				     "critical", "alert", "emergency", NULL};

static int level_rank(json_t *v)
{
	const char *s = json_string_value(v);

	for (int i = 0; s && levels[i]; i++)
		if (!strcmp(s, levels[i]))
			return i;
	return -1;
}

static void res_019(const struct an_ctx *c)
{
	const char *m = c->m->method;
	json_t *p, *lvl;
	int rank, set;

	if (!m)
		return;
	if (!strcmp(m, "notifications/message") && c->m->cls->kind == MT_NOTIFICATION) {
		p = an_params(c);
		lvl = json_object_get(p, "level");
		rank = level_rank(lvl);
		if (rank < 0)
			an_report(c, -1, "notifications/message level is %s%s%s, not a syslog level",
				  json_is_string(lvl) ? "'" : "",
				  json_is_string(lvl) ? json_string_value(lvl) : jsv_type_name(lvl),
				  json_is_string(lvl) ? "'" : "");
		if (!json_object_get(p, "data"))
			an_report(c, -1, "notifications/message has no data (required)");
		set = level_rank(json_object_get(json_object_get(c->st->ext, "res"), "level"));
		if (rank >= 0 && set > rank)
			an_report(c, AN_WARNING,
				  "a '%s' message after logging/setLevel '%s': the server "
				  "should send that level and above only",
				  levels[rank], levels[set]);
	} else if (!strcmp(m, "logging/setLevel")) {
		if (c->m->cls->kind == MT_REQUEST) {
			lvl = json_object_get(an_params(c), "level");
			if (level_rank(lvl) < 0)
				an_report(c, -1,
					  "logging/setLevel level is not a syslog level (debug, info, "
					  "notice, warning, error, critical, alert, emergency)");
		} else if (c->m->req && level_rank(json_object_get(an_req_params(c->m->req), "level")) < 0) {
			if (c->m->cls->kind == MT_RESPONSE)
				an_report(c, AN_WARNING,
					  "logging/setLevel with an invalid level succeeded; it "
					  "should fail with -32602");
			else if (c->m->cls->has_error_code && c->m->cls->error_code != -32602)
				an_report(c, AN_WARNING,
					  "logging/setLevel with an invalid level failed with "
					  "%lld, not -32602",
					  (long long)c->m->cls->error_code);
		}
	}
}

/* ---- RES-020 ---- */

static void res_020(const struct an_ctx *c)
{
	const char *m = c->m->method, *key;
	json_t *res, *v;

	if (!m || (strcmp(m, "resources/subscribe") && strcmp(m, "resources/unsubscribe") &&
		   strcmp(m, "logging/setLevel")))
		return;
	res = an_result(c);
	if (!json_is_object(res))
		return; /* RPC-011 */
	json_object_foreach(res, key, v)
	{
		if (strcmp(key, "_meta")) {
			an_report(c, -1,
				  "the %s result has member '%.60s'; it is an EmptyResult (only _meta)", m,
				  key);
			return;
		}
	}
}

/* ---- RES-021 ---- */

static void check_annotations(struct rep *r, json_t *o, const char *where)
{
	json_t *a = json_object_get(o, "annotations"), *k, *e;
	size_t i;

	if (!a)
		return;
	if (!json_is_object(a)) {
		say(r, -1, "%s.annotations is %s, not an object", where, jsv_type_name(a));
		return;
	}
	k = json_object_get(a, "priority");
	if (k && (!json_is_number(k) || json_number_value(k) < 0 || json_number_value(k) > 1))
		say(r, -1, "%s.annotations.priority is not a number in [0, 1]", where);
	k = json_object_get(a, "audience");
	if (k && !json_is_array(k))
		say(r, -1, "%s.annotations.audience is %s, not an array", where, jsv_type_name(k));
	json_array_foreach(k, i, e)
	{
		if (!is_role(e)) {
			say(r, -1, "%s.annotations.audience[%zu] is not \"user\" or \"assistant\"", where, i);
			break;
		}
	}
	k = json_object_get(a, "lastModified");
	if (k && at_least(r->c, AN_V2025_06_18) && (!json_is_string(k) || !is_iso8601(json_string_value(k))))
		say(r, -1, "%s.annotations.lastModified is not an ISO 8601 timestamp", where);
}

static void res_021_block(struct rep *r, json_t *b, const char *where, enum block_ctx ctx)
{
	(void)ctx;
	check_annotations(r, b, where);
}

static void res_021(const struct an_ctx *c)
{
	struct rep r = {c, 0, 0};
	const char *m = c->m->method;
	json_t *e;
	size_t i;
	char w[64];

	if (!m)
		return;
	if (c->m->cls->kind == MT_RESPONSE &&
	    (!strcmp(m, "resources/list") || !strcmp(m, "resources/templates/list"))) {
		const char *key = m[10] == 't' ? "resourceTemplates" : "resources";
		if (plain_list_result(c))
			return; /* no annotations */
		json_array_foreach(json_object_get(an_result(c), key), i, e)
		{
			snprintf(w, sizeof(w), "%s[%zu]", key, i);
			check_annotations(&r, e, w);
		}
	} else {
		walk_content(&r, res_021_block);
	}
	said(&r);
}

/* ---- RES-022 ---- */

static void check_uri(struct rep *r, json_t *uri, const char *where, int tmpl)
{
	const char *s = json_string_value(uri), *why;

	if (s && (why = uri_problem(s, tmpl)))
		say(r, -1, "%s '%.80s' %s (RFC 3986)", where, s, why);
}

static void res_022_block(struct rep *r, json_t *b, const char *where, enum block_ctx ctx)
{
	const char *t = json_string_value(json_object_get(b, "type"));
	char w[128];

	(void)ctx;
	if (!t)
		return;
	snprintf(w, sizeof(w), "%s uri", where);
	if (!strcmp(t, "resource_link"))
		check_uri(r, json_object_get(b, "uri"), w, 0);
	else if (!strcmp(t, "resource"))
		check_uri(r, an_path(b, "resource.uri"), w, 0);
}

static void res_022(const struct an_ctx *c)
{
	struct rep r = {c, 0, 0};
	const char *m = c->m->method;
	json_t *e, *res;
	size_t i;
	char w[64];

	if (!m)
		return;
	if (strcmp(m, "resources/list") && strcmp(m, "resources/templates/list") &&
	    strcmp(m, "resources/read")) {
		walk_content(&r, res_022_block);
		said(&r);
		return;
	}
	if ((!strcmp(m, "resources/read") && plain_read_result(c)) || plain_list_result(c))
		return; /* its URIs were checked on the bytes */
	res = an_result(c);
	if (!strcmp(m, "resources/list")) {
		json_array_foreach(json_object_get(res, "resources"), i, e)
		{
			snprintf(w, sizeof(w), "resources[%zu].uri", i);
			check_uri(&r, json_object_get(e, "uri"), w, 0);
		}
	} else if (!strcmp(m, "resources/templates/list")) {
		json_array_foreach(json_object_get(res, "resourceTemplates"), i, e)
		{
			snprintf(w, sizeof(w), "resourceTemplates[%zu].uriTemplate", i);
			check_uri(&r, json_object_get(e, "uriTemplate"), w, 1);
		}
	} else if (!strcmp(m, "resources/read")) {
		json_array_foreach(json_object_get(res, "contents"), i, e)
		{
			snprintf(w, sizeof(w), "contents[%zu].uri", i);
			check_uri(&r, json_object_get(e, "uri"), w, 0);
		}
	}
	said(&r);
}

/* ---- the tracker ---- */

/* The prompts of the latest prompts/list, and whether the listing is complete. */
static void track_prompts(const struct an_ctx *c, json_t *ext)
{
	json_t *res = an_result(c), *prompts = json_object_get(ext, "prompts"), *e, *a;
	size_t i, j;

	if (!c->m->req || c->m->cls->kind != MT_RESPONSE || !json_is_array(json_object_get(res, "prompts")))
		return;
	if (!prompts || !json_object_get(an_req_params(c->m->req), "cursor")) {
		prompts = json_object();
		json_object_set_new(ext, "prompts", prompts);
	}
	json_array_foreach(json_object_get(res, "prompts"), i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		json_t *req = json_array();
		if (!name) {
			json_decref(req);
			continue;
		}
		json_array_foreach(json_object_get(e, "arguments"), j, a)
		{
			if (json_is_true(json_object_get(a, "required")) &&
			    json_is_string(json_object_get(a, "name")))
				json_array_append(req, json_object_get(a, "name"));
		}
		json_object_set_new(prompts, name, req);
	}
	json_object_set_new(ext, "complete", json_boolean(!json_object_get(res, "nextCursor")));
}

/* The level of the last logging/setLevel the server accepted. */
static void track_level(const struct an_ctx *c, json_t *ext)
{
	json_t *lvl = c->m->req ? json_object_get(an_req_params(c->m->req), "level") : NULL;

	if (c->m->cls->kind == MT_RESPONSE && level_rank(lvl) >= 0)
		json_object_set(ext, "level", lvl);
}

#define SRC_TOOLS "MCP-RULES §7.1; server/tools.mdx"

const struct an_rule an_rules_res[] = {
	{"RES-001", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_RESPONSE, "initialize", res_001,
	 "clientInfo/serverInfo optional members have their types (title from 2025-06-18; "
	 "description, websiteUrl, icons in 2025-11-25); required members and instructions: LIFE-002/003",
	 "MCP-RULES §7.1; schema/<v>/schema.json"},
	{"RES-002", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE, "tools/list", res_002,
	 "the tools/list result has a tools array of Tool{name, inputSchema{type: \"object\"}} with "
	 "well-typed optional members",
	 "MCP-RULES §7.1; schema/<v>/schema.ts"},
	{"RES-003", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE, "tools/call", res_003,
	 "the tools/call result has a content array, a boolean isError if any, an object "
	 "structuredContent if any",
	 "MCP-RULES §7.1; schema/<v>/schema.ts"},
	{"RES-004", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_RESPONSE,
	 "tools/call|prompts/get|sampling/createMessage", res_004,
	 "content blocks (tools/call, prompts/get, sampling) are of the revision's types with their "
	 "required members; image/audio data is base64 with a MIME type",
	 "MCP-RULES §7.1; schema/<v>/schema.json, server/prompts.mdx"},
	{"RES-005", AN_WARNING, AN_SEV_FIXED, AN_FROM_0618, AN_ON_RESPONSE, "tools/call", res_005,
	 "a result with structuredContent also carries it as serialized JSON in a text block (the MUST "
	 "to conform to the outputSchema is RES-006)",
	 SRC_TOOLS},
	{"RES-006", AN_ERROR, AN_SEV_FIXED, AN_FROM_0618, AN_ON_RESPONSE, "tools/call|tools/list", res_006,
	 "a successful call of a tool with an outputSchema returns structuredContent that validates "
	 "(bounded JSON Schema subset; skipped keywords are noted as info at tools/list)",
	 SRC_TOOLS "; basic/index.mdx"},
	{"RES-007", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_ERROR, "tools/call", res_007,
	 "errors of a listed tool are results with isError: true, not JSON-RPC errors (-32603 or "
	 "custom codes; -32602 too in 2025-11-25)",
	 "MCP-RULES §7.1; schema/<v>/schema.ts, server/tools.mdx"},
	{"RES-008", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_RESPONSE, "tools/list", res_008,
	 "tool names are 1-128 characters of A-Z a-z 0-9 _ - . and unique (inputSchema: RES-002)",
	 "MCP-RULES §7.1; server/tools.mdx"},
	{"RES-009", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_ANSWER,
	 "tools/list|prompts/list|resources/list|resources/templates/list|tasks/list", res_009,
	 "cursor and nextCursor are strings; an invalid cursor should fail with -32602 (warning)",
	 "MCP-RULES §7.1; server/utilities/pagination.mdx"},
	{"RES-010", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST,
	 "tools/list|prompts/list|resources/list|resources/templates/list|tasks/list", res_010,
	 "a cursor sent is a nextCursor received earlier in the session for the same method",
	 "MCP-RULES §7.1; server/utilities/pagination.mdx"},
	{"RES-011", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_ANSWER,
	 "resources/read|resources/list|resources/templates/list", res_011,
	 "resources/read contents, resources/list resources and templates have their required "
	 "members; a not-found error (message says so) should be -32002",
	 "MCP-RULES §7.1; schema/<v>/schema.json, server/resources.mdx"},
	{"RES-012", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_ANSWER, "prompts/get|prompts/list", res_012,
	 "prompts/get messages are {role, content}; prompts/list prompts have names; an unknown "
	 "prompt or missing required argument should fail with -32602",
	 "MCP-RULES §7.1; schema/<v>/schema.json, server/prompts.mdx"},
	{"RES-013", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE, "completion/complete", res_013,
	 "completion.values is a string array of at most 100 items; total a number, hasMore a boolean",
	 "MCP-RULES §7.1; server/utilities/completion.mdx"},
	{"RES-014", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_RESPONSE, "sampling/createMessage",
	 res_014,
	 "sampling requests carry messages and maxTokens (priorities in [0,1]); results carry role, "
	 "content and model",
	 "MCP-RULES §7.1; schema/<v>/schema.json"},
	{"RES-015", AN_ERROR, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_REQUEST, "sampling/createMessage", res_015,
	 "sampling tool use: tool_result-only user messages follow every tool_use, each matched by "
	 "toolUseId",
	 "MCP-RULES §7.1; client/sampling.mdx"},
	{"RES-016", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE, "roots/list", res_016,
	 "the roots/list result has roots with file:// uris", "MCP-RULES §7.1; client/roots.mdx"},
	{"RES-017", AN_ERROR, AN_SEV_FIXED, AN_FROM_0618, AN_ON_REQUEST | AN_ON_RESPONSE,
	 "elicitation/create", res_017,
	 "elicitation requests have a flat primitive requestedSchema (or url mode); results have an "
	 "action and flat primitive content",
	 "MCP-RULES §7.1; client/elicitation.mdx"},
	{"RES-018", AN_WARNING, AN_SEV_FIXED, AN_FROM_0618, AN_ON_RESPONSE, "elicitation/create", res_018,
	 "accepted elicitation content satisfies the requestedSchema",
	 "MCP-RULES §7.1; client/elicitation.mdx"},
	{"RES-019", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_REQUEST | AN_ON_NOTIFICATION | AN_ON_ANSWER,
	 "notifications/message|logging/setLevel", res_019,
	 "log levels are syslog levels and notifications/message has data; an invalid level should "
	 "fail with -32602 and messages below the set level are suspect (warnings)",
	 "MCP-RULES §7.1; server/utilities/logging.mdx"},
	{"RES-020", AN_ERROR, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE,
	 "resources/subscribe|resources/unsubscribe|logging/setLevel", res_020,
	 "resources/subscribe, resources/unsubscribe and logging/setLevel return an EmptyResult "
	 "(ping: PING-001)",
	 "MCP-RULES §7.1; schema/<v>/schema.ts"},
	{"RES-021", AN_ERROR, AN_SEV_FIXED, AN_FROM_0326, AN_ON_REQUEST | AN_ON_RESPONSE,
	 "resources/list|resources/templates/list|tools/call|prompts/get|sampling/createMessage", res_021,
	 "annotations: priority in [0,1], audience of user/assistant, lastModified ISO 8601 (from "
	 "2025-06-18)",
	 "MCP-RULES §7.1; schema/<v>/schema.json, server/resources.mdx"},
	{"RES-022", AN_WARNING, AN_SEV_FIXED, AN_ALL4, AN_ON_RESPONSE,
	 "resources/list|resources/templates/list|resources/read|tools/call|prompts/get|sampling/"
	 "createMessage",
	 res_022,
	 "resource URIs are RFC 3986 URIs (whether https fits the client cannot be seen in a capture)",
	 "MCP-RULES §7.1; server/resources.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_res[] = {
	{AN_ON_RESPONSE, "prompts/list", track_prompts, "res"},
	{AN_ON_RESPONSE, "logging/setLevel", track_level, "res"},
	{0, NULL, NULL, NULL},
};
