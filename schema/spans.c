/*
 * spans.c - OpenTelemetry spans of a session's messages (see spans.h): OTLP/JSON
 * objects, ids in lowercase hex, enums as integers, 64-bit integers as
 * decimal strings, named and attributed as the OpenTelemetry semantic
 * conventions for MCP say (semantic-conventions-genai, docs/gen-ai/mcp.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/spans.h"

#include "schema/map.h"
#include "schema/message.h"
#include "schema/redact.h"

#define OTLP_OPEN_MAX 100000 /* open requests kept at once (as the tap pairs them) */
#define OTLP_TEXT_MAX 1024   /* bytes of a tool error's text in its status */

/* The key of the ids' hashes: fixed, so that every export of a file gives the same ids. */
static const unsigned char id_key[16] = {0x6d, 0x63, 0x70, 0x74, 0x61, 0x70, 0x2d, 0x6f,
					 0x74, 0x6c, 0x70, 0x2d, 0x69, 0x64, 0x73, 0x31};

/* A request awaiting its end: what its span needs (strings owned, NULL: none). */
struct req {
	struct req *prev, *next; /* the open requests, in seq order */
	char *key;               /* its key in the map (NULL: not in it) */
	size_t key_len;
	int64_t seq;        /* its message's seq */
	int elem;           /* 0, or its place in a batch (from 1) */
	int c2s;            /* the client sent it */
	int64_t t_ns, wall; /* when it was sent: session ns, wall µs */
	char *method;
	char *id;                   /* jsonrpc.request.id: the id's text (NULL: a null id) */
	char *subject;              /* the tool (tools/call) or prompt (prompts/get) named */
	char *uri;                  /* mcp.resource.uri */
	char *args;                 /* --otlp-content: a tool's arguments, compact JSON */
	char trace[33], parent[17]; /* a traceparent's trace and parent ids ("": none) */
	char *tracestate;
};

/* How a request ended. */
struct outcome {
	const char *type; /* error.type, or NULL: no error */
	int has_code;     /* rpc.response.status_code: code */
	int64_t code;
	char code_text[24]; /* error.type of a JSON-RPC error: its code */
	const char *msg;    /* the status's message (msg_len bytes), or NULL */
	size_t msg_len;
	const char *result; /* gen_ai.tool.call.result: compact JSON, or NULL */
	size_t result_len;
};

struct mt_spans {
	struct mt_map open; /* key -> struct req * */
	struct req *first, *last;
	size_t nopen;   /* requests on that list */
	unsigned spans; /* MT_SPANS_* */
	int notifications, content;
	mt_span_fn emit; /* where a span goes, with ctx */
	void *ctx;
	/* The session's. */
	struct mt_buf ident;     /* what its ids hash: the capture's and the session's identity */
	char trace[33];          /* its trace id */
	struct mt_buf resource;  /* its resource's JSON object */
	struct mt_buf common;    /* attributes of all its spans, each after a ',' */
	struct mt_buf to_server; /* those of a client request's CLIENT span (server.*) */
	struct mt_buf to_client; /* those of its SERVER span (client.*) */
	int64_t last_t;          /* the latest t_ns seen */
	/* Scratch: what is read, keys and hashes, a span, its attributes and name, the
	 * text of put_str, an outcome's message and result, a parsed address. */
	struct mt_buf text, key, span, attrs, name, lossy, msg, result, url;
};

/* ---- JSON output ---- */

/* s (n bytes) as a JSON string into b; bytes that are not UTF-8 become U+FFFD. */
static void put_str(struct mt_spans *o, struct mt_buf *b, const char *s, size_t n)
{
	size_t run = 0;

	if (mt_utf8_invalid(s, n) >= 0) {
		mt_utf8_lossy(s, n, &o->lossy);
		s = o->lossy.data ? o->lossy.data : "";
		n = o->lossy.len;
	}
	mt_buf_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		mt_buf_append(b, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\')
			mt_buf_printf(b, "\\%c", c);
		else if (c == '\n')
			mt_buf_puts(b, "\\n");
		else if (c == '\r')
			mt_buf_puts(b, "\\r");
		else if (c == '\t')
			mt_buf_puts(b, "\\t");
		else
			mt_buf_printf(b, "\\u%04x", c);
	}
	mt_buf_append(b, s + run, n - run);
	mt_buf_putc(b, '"');
}

/* ,{"key":KEY,"value":{"stringValue":S}} into b (the key is plain ASCII). */
static void attr_str(struct mt_spans *o, struct mt_buf *b, const char *key, const char *s, size_t n)
{
	mt_buf_puts(b, ",{\"key\":\"");
	mt_buf_puts(b, key);
	mt_buf_puts(b, "\",\"value\":{\"stringValue\":");
	put_str(o, b, s, n);
	mt_buf_puts(b, "}}");
}

static void attr_cstr(struct mt_spans *o, struct mt_buf *b, const char *key, const char *s)
{
	if (s)
		attr_str(o, b, key, s, strlen(s));
}

/* An int attribute: OTLP/JSON writes a 64-bit integer as a decimal string. */
static void attr_int(struct mt_buf *b, const char *key, int64_t v)
{
	mt_buf_printf(b, ",{\"key\":\"%s\",\"value\":{\"intValue\":\"%lld\"}}", key, (long long)v);
}

/* ---- reading the messages ---- */

/* The string member key of obj, decoded into out: its bytes, or NULL. */
static const char *member_str(struct mt_span obj, const char *key, struct mt_buf *out)
{
	struct mt_span v;

	if (!obj.p || mt_json_member(obj, key, &v) != 1 || !v.n || v.p[0] != '"' || mt_json_string(v, out))
		return NULL;
	return out->data ? out->data : "";
}

static char *dup_buf(const struct mt_buf *b)
{
	return mt_strndup(b->data ? b->data : "", b->len);
}

/* n lowercase hex digits? */
static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int all_zeros(const char *s, size_t n)
{
	return strspn(s, "0") >= n;
}

/*
 * A W3C traceparent, "VERSION-TRACEID-PARENTID-FLAGS" in lowercase hex: its
 * ids into r. Version ff and ids of zeros are invalid; version 00 is exactly
 * this, a later one may add fields after a '-'. Anything else is left out.
 */
static void read_traceparent(struct req *r, const char *s, size_t n)
{
	if (n < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || !is_hex(s, 2) || !memcmp(s, "ff", 2) ||
	    !is_hex(s + 53, 2))
		return;
	if (n > 55 && (!memcmp(s, "00", 2) || s[55] != '-'))
		return;
	if (!is_hex(s + 3, 32) || all_zeros(s + 3, 32) || !is_hex(s + 36, 16) || all_zeros(s + 36, 16))
		return;
	memcpy(r->trace, s + 3, 32);
	r->trace[32] = '\0';
	memcpy(r->parent, s + 36, 16);
	r->parent[16] = '\0';
}

/* params._meta's trace context (traceparent, tracestate) into r. */
static void read_context(struct mt_spans *o, struct req *r, struct mt_span params)
{
	struct mt_span meta;

	if (!params.p || mt_json_member(params, "_meta", &meta) != 1)
		return;
	if (member_str(meta, "traceparent", &o->text))
		read_traceparent(r, o->text.data, o->text.len);
	if (r->trace[0] && member_str(meta, "tracestate", &o->text) && o->text.len)
		r->tracestate = dup_buf(&o->text);
}

/* Does the method name a resource in params.uri (mcp.resource.uri)? */
static int names_uri(const char *m)
{
	return !strcmp(m, "resources/read") || !strcmp(m, "resources/subscribe") ||
	       !strcmp(m, "resources/unsubscribe") || !strcmp(m, "notifications/resources/updated");
}

/* What a request or notification (classified as c) says that its span shows, into r. */
static void read_request(struct mt_spans *o, struct req *r, const struct mt_class *c)
{
	if (mt_json_string(c->method, &o->text) == 0)
		r->method = dup_buf(&o->text);
	else
		r->method = mt_strdup("");
	if (c->kind == MT_REQUEST && c->idtype == MT_ID_STRING && mt_json_string(c->id, &o->text) == 0)
		r->id = dup_buf(&o->text);
	else if (c->kind == MT_REQUEST && c->idtype == MT_ID_NUMBER)
		r->id = mt_strndup(c->id.p, c->id.n);
	if ((!strcmp(r->method, "tools/call") || !strcmp(r->method, "prompts/get")) &&
	    member_str(c->params, "name", &o->text))
		r->subject = dup_buf(&o->text);
	if (names_uri(r->method) && member_str(c->params, "uri", &o->text))
		r->uri = dup_buf(&o->text);
	if (o->content && !strcmp(r->method, "tools/call") && c->params.p) {
		struct mt_span v;
		if (mt_json_member(c->params, "arguments", &v) == 1) {
			mt_buf_reset(&o->text);
			mt_json_compact(v.p, v.n, MT_WS_ALL, &o->text);
			r->args = dup_buf(&o->text);
		}
	}
	read_context(o, r, c->params);
}

static void req_free(struct req *r)
{
	if (!r)
		return;
	free(r->key);
	free(r->method);
	free(r->id);
	free(r->subject);
	free(r->uri);
	free(r->args);
	free(r->tracestate);
	free(r);
}

/* ---- ids ---- */

/* 16 hex digits of the hash of the session's identity and what (never all zeros). */
static void hash_hex(struct mt_spans *o, const char *what, char out[17])
{
	uint64_t h;

	mt_buf_reset(&o->key);
	mt_buf_append(&o->key, o->ident.data, o->ident.len);
	mt_buf_puts(&o->key, what);
	h = mt_siphash24(id_key, o->key.data, o->key.len);
	snprintf(out, 17, "%016llx", (unsigned long long)(h ? h : 1));
}

/* The span id of r's side (side: 'c' its CLIENT span, 's' its SERVER span). */
static void span_id(struct mt_spans *o, const struct req *r, char side, char out[17])
{
	char what[64];

	snprintf(what, sizeof(what), "span %lld %d %c", (long long)r->seq, r->elem, side);
	hash_hex(o, what, out);
}

/* ---- spans ---- */

/*
 * One span of r, kind 3 (CLIENT: the sender's) or 2 (SERVER: the receiver's),
 * with its id and parent (NULL: none), from start to end (ns since the epoch).
 */
static int write_span(struct mt_spans *o, const struct req *r, int kind, const char *id, const char *parent,
		      int64_t start, int64_t end, const struct outcome *oc)
{
	struct mt_buf *b = &o->span, *a = &o->attrs;
	int tool = !strcmp(r->method, "tools/call");

	mt_buf_reset(b);
	mt_buf_puts(b, "{\"traceId\":\"");
	mt_buf_puts(b, r->trace[0] ? r->trace : o->trace);
	mt_buf_puts(b, "\",\"spanId\":\"");
	mt_buf_puts(b, id);
	mt_buf_putc(b, '"');
	if (r->tracestate) {
		mt_buf_puts(b, ",\"traceState\":");
		put_str(o, b, r->tracestate, strlen(r->tracestate));
	}
	if (parent)
		mt_buf_printf(b, ",\"parentSpanId\":\"%s\"", parent);
	/* The name: "{mcp.method.name} {target}", the target a tool's or a prompt's name. */
	mt_buf_reset(&o->name);
	mt_buf_puts(&o->name, r->method);
	if (r->subject) {
		mt_buf_putc(&o->name, ' ');
		mt_buf_puts(&o->name, r->subject);
	}
	mt_buf_puts(b, ",\"name\":");
	put_str(o, b, o->name.data, o->name.len);
	mt_buf_printf(b, ",\"kind\":%d,\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\"", kind,
		      (long long)start, (long long)end);
	/* The attributes, each after a ',' (the first one's left out). */
	mt_buf_reset(a);
	attr_cstr(o, a, "mcp.method.name", r->method);
	attr_cstr(o, a, "jsonrpc.request.id", r->id);
	attr_cstr(o, a, tool ? "gen_ai.tool.name" : "gen_ai.prompt.name", r->subject);
	if (tool)
		attr_cstr(o, a, "gen_ai.operation.name", "execute_tool");
	attr_cstr(o, a, "mcp.resource.uri", r->uri);
	mt_buf_append(a, o->common.data, o->common.len);
	/* Addresses: of the server on a client request's CLIENT span, of the client on its SERVER one. */
	if (r->c2s && kind == 3)
		mt_buf_append(a, o->to_server.data, o->to_server.len);
	else if (r->c2s)
		mt_buf_append(a, o->to_client.data, o->to_client.len);
	if (oc && oc->type)
		attr_cstr(o, a, "error.type", oc->type);
	if (oc && oc->has_code)
		attr_cstr(o, a, "rpc.response.status_code", oc->code_text);
	attr_cstr(o, a, "gen_ai.tool.call.arguments", r->args);
	if (oc && oc->result)
		attr_str(o, a, "gen_ai.tool.call.result", oc->result, oc->result_len);
	mt_buf_puts(b, ",\"attributes\":[");
	mt_buf_append(b, a->data + 1, a->len - 1);
	mt_buf_putc(b, ']');
	if (oc && oc->type) {
		/* Status ERROR (2), with the JSON-RPC error's message when there is one. */
		mt_buf_puts(b, ",\"status\":{");
		if (oc->msg && oc->msg_len) {
			mt_buf_puts(b, "\"message\":");
			put_str(o, b, oc->msg, oc->msg_len);
			mt_buf_putc(b, ',');
		}
		mt_buf_puts(b, "\"code\":2}");
	}
	mt_buf_putc(b, '}');
	return o->emit(o->ctx, o->resource.data, b->data, b->len);
}

/*
 * r's spans, ending end_t (session ns) as oc says (NULL: a notification, or
 * a request that succeeded): the CLIENT span, the SERVER span, or both, the
 * SERVER span then the CLIENT span's child.
 */
static int write_spans(struct mt_spans *o, const struct req *r, int64_t end_t, const struct outcome *oc)
{
	char cid[17], sid[17];
	/* (Kept within int64 whatever the file says: it is untrusted.) */
	int64_t start = r->wall <= 0 ? 0 : r->wall > INT64_MAX / 1000 ? INT64_MAX : r->wall * 1000;
	uint64_t d = end_t > r->t_ns ? (uint64_t)end_t - (uint64_t)r->t_ns : 0;
	int64_t end = d > (uint64_t)(INT64_MAX - start) ? INT64_MAX : start + (int64_t)d;
	const char *up = r->parent[0] ? r->parent : NULL;

	span_id(o, r, 'c', cid);
	span_id(o, r, 's', sid);
	if ((o->spans & MT_SPANS_CLIENT) && write_span(o, r, 3, cid, up, start, end, oc))
		return -1;
	if ((o->spans & MT_SPANS_SERVER) &&
	    write_span(o, r, 2, sid, (o->spans & MT_SPANS_CLIENT) ? cid : up, start, end, oc))
		return -1;
	return 0;
}

/* ---- open requests ---- */

static void unlink_req(struct mt_spans *o, struct req *r)
{
	if (r->key) {
		int64_t v;
		/* (Only its own entry: a later request with the same id may have taken the key.) */
		if (mt_map_get(&o->open, r->key, r->key_len, &v) && v == (int64_t)(intptr_t)r)
			mt_map_take(&o->open, r->key, r->key_len, &v);
	}
	if (r->prev)
		r->prev->next = r->next;
	else
		o->first = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		o->last = r->prev;
	r->prev = r->next = NULL;
	o->nopen--;
}

/* The open request under key (n bytes), taken out of the open ones; NULL: none. */
static struct req *take(struct mt_spans *o, const char *key, size_t n)
{
	int64_t v;
	struct req *r;

	if (!mt_map_get(&o->open, key, n, &v))
		return NULL;
	r = (struct req *)(intptr_t)v;
	unlink_req(o, r);
	return r;
}

/* The key of a request by its seq (the tap's pairing) into o->key. */
static void seq_key(struct mt_spans *o, int64_t seq)
{
	mt_buf_reset(&o->key);
	mt_buf_printf(&o->key, "S%lld", (long long)seq);
}

/* The key of a request in a batch, by its side and id, into o->key. */
static void id_key_of(struct mt_spans *o, const struct mt_class *c, char side)
{
	mt_buf_reset(&o->text);
	mt_id_key(c, side, &o->text);
	mt_buf_reset(&o->key);
	mt_buf_putc(&o->key, 'B');
	mt_buf_append(&o->key, o->text.data, o->text.len);
}

/* The end of a request no answer ended. */
static const char unanswered_msg[] = "no answer before the session ended";
static const struct outcome unanswered = {
	.type = "unanswered", .msg = unanswered_msg, .msg_len = sizeof(unanswered_msg) - 1};
static const char evicted_msg[] = "not answered while 100000 later requests were open";
static const struct outcome evicted = {
	.type = "unanswered", .msg = evicted_msg, .msg_len = sizeof(evicted_msg) - 1};

/* End the oldest open request at t_ns, unanswered (to make room). 0, or the callback's -1. */
static int evict_oldest(struct mt_spans *o, int64_t t_ns)
{
	struct req *old = o->first;
	int rc;

	unlink_req(o, old);
	rc = write_spans(o, old, t_ns, &evicted);
	req_free(old);
	return rc;
}

/*
 * A request opens: kept until its end. Over OTLP_OPEN_MAX open at once (on
 * the list, or in the map of keys), the oldest ends at t_ns, unanswered. 0,
 * or the callback's -1.
 */
static int open_req(struct mt_spans *o, struct req *r, int keyed, int64_t t_ns)
{
	/* (The list is bounded too: requests no key can answer, a null id in a
	 * batch, or a key taken over by a later request, stay on it.) */
	while (o->nopen >= OTLP_OPEN_MAX && o->first)
		if (evict_oldest(o, t_ns))
			goto failed;
	if (keyed) {
		r->key = dup_buf(&o->key);
		r->key_len = o->key.len;
		while (mt_map_put(&o->open, r->key, r->key_len, (int64_t)(intptr_t)r) < 0) {
			if (!o->first) { /* (cannot be: the map is full of open requests) */
				free(r->key);
				r->key = NULL;
				break;
			}
			if (evict_oldest(o, t_ns))
				goto failed;
		}
	}
	r->prev = o->last;
	if (o->last)
		o->last->next = r;
	else
		o->first = r;
	o->last = r;
	o->nopen++;
	return 0;
failed:
	req_free(r);
	return -1;
}

/* A new request or notification of the item it (element elem of a batch, or 0). */
static struct req *new_req(struct mt_spans *o, const struct store_item *it, int elem,
			   const struct mt_class *c)
{
	struct req *r = mt_calloc(1, sizeof(*r));

	r->seq = it->seq;
	r->elem = elem;
	r->c2s = !strcmp(it->dir, "c2s");
	r->t_ns = it->t_ns;
	r->wall = it->wall;
	read_request(o, r, c);
	return r;
}

/* ---- answers ---- */

/* The first text of a tool result's content, cut to OTLP_TEXT_MAX bytes (whole characters). */
static const char *first_text(struct mt_spans *o, struct mt_span result, size_t *n)
{
	struct mt_span content, el, type;
	size_t pos = 0;

	if (mt_json_member(result, "content", &content) != 1 || !content.n || content.p[0] != '[')
		return NULL;
	while (mt_json_next_element(content, &pos, &el) == 1) {
		if (mt_json_member(el, "type", &type) != 1 || type.n != 6 || memcmp(type.p, "\"text\"", 6))
			continue;
		if (!member_str(el, "text", &o->msg))
			return NULL;
		*n = o->msg.len;
		if (*n > OTLP_TEXT_MAX) {
			*n = OTLP_TEXT_MAX;
			while (*n && ((unsigned char)o->msg.data[*n] & 0xc0) == 0x80)
				(*n)--;
		}
		return o->msg.data;
	}
	return NULL;
}

/* How the answer c (to r) ended it, into oc (its strings in o's scratch). */
static void read_answer(struct mt_spans *o, const struct req *r, const struct mt_class *c, const char *raw,
			size_t raw_len, struct outcome *oc)
{
	struct mt_span msg = {raw, raw_len}, v;

	memset(oc, 0, sizeof(*oc));
	while (msg.n && *msg.p != '{' && *msg.p != '[') /* (leading whitespace) */
		msg.p++, msg.n--;
	if (c->kind == MT_ERROR) {
		/* error.type: the code as a string, as rpc.response.status_code. */
		oc->has_code = c->has_error_code;
		oc->code = c->error_code;
		snprintf(oc->code_text, sizeof(oc->code_text), "%lld", (long long)c->error_code);
		oc->type = c->has_error_code ? oc->code_text : "_OTHER";
		if (mt_json_member(msg, "error", &v) == 1 && member_str(v, "message", &o->msg)) {
			oc->msg = o->msg.data;
			oc->msg_len = o->msg.len;
		}
		return;
	}
	if (strcmp(r->method, "tools/call") || !c->result.p)
		return;
	if (mt_json_member(c->result, "isError", &v) == 1 && v.n == 4 && !memcmp(v.p, "true", 4)) {
		/* A tool's failure: its text says why, when contents are asked for. */
		oc->type = "tool_error";
		if (o->content)
			oc->msg = first_text(o, c->result, &oc->msg_len);
		return;
	}
	if (o->content) {
		mt_buf_reset(&o->result);
		mt_json_compact(c->result.p, c->result.n, MT_WS_ALL, &o->result);
		oc->result = o->result.data;
		oc->result_len = o->result.len;
	}
}

/* ---- the messages ---- */

/*
 * One JSON-RPC message (c, its bytes raw) of the item it: elem 0, or its
 * place in a batch. A request opens; an answer or a cancel ends its request;
 * a notification is a span of its own with --notifications.
 */
static int message(struct mt_spans *o, const struct store_item *it, int elem, const struct mt_class *c,
		   const char *raw, size_t raw_len)
{
	int c2s = !strcmp(it->dir, "c2s");
	struct req *r;
	struct outcome oc;
	int rc;

	switch (c->kind) {
	case MT_REQUEST:
		r = new_req(o, it, elem, c);
		/* Paired by its seq as the tap pairs (one message), by its id in a batch. */
		if (!elem)
			seq_key(o, it->seq);
		else if (c->idtype != MT_ID_NULL)
			id_key_of(o, c, c2s ? 'c' : 's');
		return open_req(o, r, !elem || c->idtype != MT_ID_NULL, it->t_ns);
	case MT_RESPONSE:
	case MT_ERROR:
		r = NULL;
		if (!elem && it->request_seq > 0) {
			seq_key(o, it->request_seq);
			r = take(o, o->key.data, o->key.len);
		} else if (c->idtype == MT_ID_NUMBER || c->idtype == MT_ID_STRING) {
			id_key_of(o, c, c2s ? 's' : 'c');
			r = take(o, o->key.data, o->key.len);
		}
		if (!r) /* (an answer to nothing open: one already ended, or never seen) */
			return 0;
		read_answer(o, r, c, raw, raw_len, &oc);
		rc = write_spans(o, r, it->t_ns, &oc);
		req_free(r);
		return rc;
	case MT_NOTIFICATION:
		if (!elem && it->cancels_seq > 0) {
			/* The sender gave up: the request ends here, however it is answered later. */
			seq_key(o, it->cancels_seq);
			if ((r = take(o, o->key.data, o->key.len))) {
				memset(&oc, 0, sizeof(oc));
				oc.type = "cancelled";
				oc.msg = member_str(c->params, "reason", &o->msg);
				oc.msg_len = oc.msg ? o->msg.len : 0;
				if (!oc.msg) {
					oc.msg = "cancelled";
					oc.msg_len = 9;
				}
				rc = write_spans(o, r, it->t_ns, &oc);
				req_free(r);
				if (rc)
					return -1;
			}
		}
		if (!o->notifications)
			return 0;
		r = new_req(o, it, elem, c);
		rc = write_spans(o, r, it->t_ns, NULL);
		req_free(r);
		return rc;
	default: return 0;
	}
}

int mt_spans_item(struct mt_spans *o, const struct store_item *it)
{
	struct mt_class c;

	if (it->t_ns > o->last_t)
		o->last_t = it->t_ns;
	/* (A server's event sent again after a resumption: the same message again.) */
	if (it->type != STORE_ITEM_MESSAGE || it->replayed || !it->dir)
		return 0;
	mt_classify(it->raw, it->raw_len, &c);
	if (c.kind != MT_BATCH)
		return message(o, it, 0, &c, it->raw, it->raw_len);
	/* A batch (2025-03-26): each of its messages, paired by id. */
	struct mt_span arr = {it->raw, it->raw_len}, el;
	size_t pos = 0;
	int elem = 0;
	while (arr.n && *arr.p != '[')
		arr.p++, arr.n--;
	while (mt_json_next_element(arr, &pos, &el) == 1) {
		struct mt_class ec;
		elem++;
		if (mt_classify(el.p, el.n, &ec) == MT_BATCH) /* (batches do not nest) */
			continue;
		if (message(o, it, elem, &ec, el.p, el.n))
			return -1;
	}
	return 0;
}

/* ---- sessions ---- */

/*
 * An URL's host and port ("http://HOST:PORT/...", the port by its scheme when
 * it has none; an IPv6 host without its brackets) into host; the port, or -1
 * when the URL is none of these.
 */
static int url_host_port(const char *url, struct mt_buf *host)
{
	const char *p, *end, *colon;
	long port;

	if (!url)
		return -1;
	if (!strncmp(url, "http://", 7))
		port = 80, p = url + 7;
	else if (!strncmp(url, "https://", 8))
		port = 443, p = url + 8;
	else
		return -1;
	end = p + strcspn(p, "/?#");
	/* (A user name and password, which the tap refuses anyway.) */
	for (const char *at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (!close || close == p + 1)
			return -1;
		mt_buf_reset(host);
		mt_buf_append(host, p + 1, (size_t)(close - p - 1));
		colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
		if (!colon && close + 1 != end)
			return -1;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		if ((colon ? colon : end) == p)
			return -1;
		mt_buf_reset(host);
		mt_buf_append(host, p, (size_t)((colon ? colon : end) - p));
	}
	if (colon) {
		port = 0;
		if (colon + 1 == end || end - colon > 6)
			return -1;
		for (const char *d = colon + 1; d < end; d++) {
			if (*d < '0' || *d > '9')
				return -1;
			port = port * 10 + (*d - '0');
		}
		if (port > 65535)
			return -1;
	}
	return (int)port;
}

/* A client's "ADDR:PORT" ("[V6]:PORT") as an URL's authority, for url_host_port. */
static int addr_host_port(struct mt_spans *o, const char *addr, struct mt_buf *host)
{
	if (!addr)
		return -1;
	mt_buf_reset(&o->url);
	mt_buf_puts(&o->url, "http://");
	mt_buf_puts(&o->url, addr);
	return strchr(addr, ':') && !strchr(addr, '/') ? url_host_port(o->url.data, host) : -1;
}

/* The attributes every span of the session carries, and each side's addresses. */
static void session_attrs(struct mt_spans *o, const struct store_session_row *s)
{
	const char *t = s->transport ? s->transport : "stdio";
	int http = !strcmp(t, "http") || !strcmp(t, "sse") || !strcmp(t, "pcap");
	int port;

	mt_buf_reset(&o->common);
	mt_buf_reset(&o->to_server);
	mt_buf_reset(&o->to_client);
	attr_cstr(o, &o->common, "mcp.protocol.version", s->protocol_version);
	/* Mcp-Session-Id: Streamable HTTP's (sse keeps its endpoint there; 2026-07-28 has none). */
	if (!strcmp(t, "http") && s->http_session_id && s->http_session_id[0] &&
	    !(s->protocol_version && strcmp(s->protocol_version, "2026-07-28") >= 0))
		attr_cstr(o, &o->common, "mcp.session.id", s->http_session_id);
	if (http) {
		attr_cstr(o, &o->common, "network.transport", "tcp");
		attr_cstr(o, &o->common, "network.protocol.name", "http");
		attr_cstr(o, &o->common, "network.protocol.version", "1.1");
	} else if (!strcmp(t, "stdio")) {
		attr_cstr(o, &o->common, "network.transport", "pipe");
	}
	attr_cstr(o, &o->common, "client.service.name", s->client_name);
	if (http && (port = url_host_port(s->upstream, &o->text)) >= 0) {
		attr_str(o, &o->to_server, "server.address", o->text.data, o->text.len);
		attr_int(&o->to_server, "server.port", port);
	}
	if (http && (port = addr_host_port(o, s->client_addr, &o->text)) >= 0) {
		attr_str(o, &o->to_client, "client.address", o->text.data, o->text.len);
		attr_int(&o->to_client, "client.port", port);
	}
}

/* The resource: the server (service.name: its serverInfo.name), and the attributes. */
static void session_text(struct mt_spans *o, const struct store_session_row *s)
{
	session_attrs(o, s);
	mt_buf_reset(&o->resource);
	mt_buf_reset(&o->attrs);
	attr_cstr(o, &o->attrs, "service.name",
		  s->server_name && s->server_name[0] ? s->server_name : "mcp-server");
	attr_cstr(o, &o->attrs, "service.version", s->server_version);
	mt_buf_puts(&o->resource, "{\"attributes\":[");
	mt_buf_append(&o->resource, o->attrs.data + 1, o->attrs.len - 1);
	mt_buf_puts(&o->resource, "]}");
}

/* Forget the open requests: no span is made of them. */
static void forget_open(struct mt_spans *o)
{
	while (o->first) {
		struct req *r = o->first;
		unlink_req(o, r);
		req_free(r);
	}
}

void mt_spans_session(struct mt_spans *o, const struct store_session_row *s)
{
	char hi[17], lo[17];

	forget_open(o);
	/* The identity: when it started, the tap that recorded it, its number. */
	mt_buf_reset(&o->ident);
	mt_buf_printf(&o->ident, "mcptap otlp\n%lld\n%s\n%lld\n", (long long)s->started_wall,
		      s->tap_id ? s->tap_id : "", (long long)s->id);
	hash_hex(o, "trace 1", hi);
	hash_hex(o, "trace 2", lo);
	snprintf(o->trace, sizeof(o->trace), "%s%s", hi, lo);
	o->last_t = 0;
	session_text(o, s);
}

void mt_spans_session_update(struct mt_spans *o, const struct store_session_row *s)
{
	session_text(o, s);
}

const char *mt_spans_resource(const struct mt_spans *o)
{
	return o->resource.data ? o->resource.data : "{\"attributes\":[]}";
}

int mt_spans_session_end(struct mt_spans *o, int64_t duration_ns)
{
	int64_t end = duration_ns > o->last_t ? duration_ns : o->last_t;

	while (o->first) {
		struct req *r = o->first;
		int rc;
		unlink_req(o, r);
		rc = write_spans(o, r, end, &unanswered);
		req_free(r);
		if (rc)
			return -1;
	}
	return 0;
}

struct mt_spans *mt_spans_new(const struct mt_spans_opts *opts, mt_span_fn emit, void *ctx)
{
	struct mt_spans *o = mt_calloc(1, sizeof(*o));

	mt_map_init(&o->open, OTLP_OPEN_MAX);
	o->spans = opts->spans ? opts->spans : MT_SPANS_CLIENT;
	o->notifications = opts->notifications;
	o->content = opts->content;
	o->emit = emit;
	o->ctx = ctx;
	return o;
}

void mt_spans_free(struct mt_spans *o)
{
	if (!o)
		return;
	forget_open(o);
	mt_map_release(&o->open);
	mt_buf_release(&o->ident);
	mt_buf_release(&o->resource);
	mt_buf_release(&o->common);
	mt_buf_release(&o->to_server);
	mt_buf_release(&o->to_client);
	mt_buf_release(&o->text);
	mt_buf_release(&o->key);
	mt_buf_release(&o->span);
	mt_buf_release(&o->attrs);
	mt_buf_release(&o->name);
	mt_buf_release(&o->lossy);
	mt_buf_release(&o->msg);
	mt_buf_release(&o->result);
	mt_buf_release(&o->url);
	free(o);
}
