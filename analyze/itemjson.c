/*
 * itemjson.c - a captured item as one line of JSON: what `show -T json` prints
 * and `export -T jsonl` writes. A message's bytes and its id's token are
 * copied as they were sent, never parsed and written again.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/itemjson.h"
#include "schema/message.h"
#include "schema/util.h"

/* The id as JSON: its original type. NULL when there is none. */
json_t *itemjson_id(const struct store_item *it)
{
	if (!it->idtype)
		return NULL;
	if (!strcmp(it->idtype, "null"))
		return json_null();
	if (!strcmp(it->idtype, "string"))
		return json_string(it->id_text ? it->id_text : "");
	if (it->id_sqltype == 1 /* SQLITE_INTEGER */)
		return json_integer(it->id_int);
	if (it->id_sqltype == 2 /* SQLITE_FLOAT */)
		return json_real(it->id_real);
	/* An integer too big for int64, kept as its digits. */
	return it->id_text ? json_loads(it->id_text, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, NULL) : NULL;
}

/* o[key] = the bytes as a string (not UTF-8: made so); nothing when p is NULL. */
static void set_lossy_n(struct itemjson *sh, json_t *o, const char *key, const void *p, size_t n)
{
	if (!p)
		return;
	mt_utf8_lossy(p, n, &sh->text);
	json_object_set_new(o, key, json_stringn(sh->text.data ? sh->text.data : "", sh->text.len));
}

static void set_lossy(struct itemjson *sh, json_t *o, const char *key, const char *s)
{
	if (s)
		set_lossy_n(sh, o, key, s, strlen(s));
}

/* o[key] = the headers, when the text is a JSON array (as mcptap stores them). */
static void set_headers(json_t *o, const char *key, const char *text)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	if (json_is_array(v))
		json_object_set_new(o, key, v);
	else
		json_decref(v);
}

void itemjson_exchange(struct itemjson *sh, int64_t session, const struct store_exchange_row *x)
{
	json_t *o = json_object();
	char t[32], *s;

	json_object_set_new(o, "session", json_integer(session));
	json_object_set_new(o, "seq", json_integer(x->seq));
	json_object_set_new(o, "t_ns", json_integer(x->t_ns));
	mt_format_wall(x->wall, t);
	json_object_set_new(o, "time", json_string(t));
	json_object_set_new(o, "type", json_string("exchange"));
	json_object_set_new(o, "kind", json_string("exchange"));
	json_object_set_new(o, "conn", json_integer(x->conn));
	set_lossy(sh, o, "method", x->method);
	set_lossy(sh, o, "target", x->target);
	set_headers(o, "request_headers", x->req_headers_json);
	set_lossy(sh, o, "last_event_id", x->last_event_id);
	set_lossy_n(sh, o, "request_body", x->req_body, x->req_body_len);
	if (x->status)
		json_object_set_new(o, "status", json_integer(x->status));
	set_headers(o, "response_headers", x->resp_headers_json);
	set_lossy(sh, o, "response_type", x->resp_type);
	set_lossy_n(sh, o, "response_body", x->resp_body, x->resp_body_len);
	if (x->first_byte_ns >= 0)
		json_object_set_new(o, "first_byte_ns", json_integer(x->first_byte_ns));
	if (x->end_ns >= 0)
		json_object_set_new(o, "end_ns", json_integer(x->end_ns));
	set_lossy(sh, o, "outcome", x->outcome);
	set_lossy(sh, o, "error", x->error);
	json_object_set_new(o, "messages", json_integer(x->messages));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	mt_buf_reset(&sh->line);
	mt_buf_puts(&sh->line, s ? s : "{}");
	mt_buf_putc(&sh->line, '\n');
	free(s);
	json_decref(o);
}

/*
 * 1 when the bytes are one JSON value in UTF-8 (as JSON text must be),
 * classified into c: its numbers may be beyond what a JSON library reads
 * (an integer over 64 bits, 1e400), since they are copied, not read.
 */
static int exact_json(const char *p, size_t n, struct mt_class *c)
{
	return mt_classify(p, n, c) != MT_INVALID && mt_utf8_invalid(p, n) < 0;
}

/*
 * o on one line into sh->line, its members in order; a member whose value is the
 * placeholder raw: the message's bytes (key "message") or its id's token
 * (key "id"), copied, never written again by a JSON library.
 */
static void print_object(struct itemjson *sh, json_t *o, const json_t *raw, const struct store_item *it)
{
	const char *key;
	json_t *v;
	int first = 1;

	mt_buf_reset(&sh->line);
	mt_buf_putc(&sh->line, '{');
	/* (The keys are show's own names: plain ASCII, nothing to escape.) */
	json_object_foreach(o, key, v)
	{
		mt_buf_printf(&sh->line, "%s\"%s\":", first ? "" : ",", key);
		first = 0;
		if (raw && v == raw && !strcmp(key, "message")) {
			mt_json_compact(it->raw, it->raw_len, MT_WS_LINES, &sh->line);
		} else if (raw && v == raw && !strcmp(key, "id")) {
			mt_buf_append(&sh->line, sh->id_tok.p, sh->id_tok.n);
		} else {
			char *vs = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			mt_buf_puts(&sh->line, vs ? vs : "null");
			free(vs);
		}
	}
	mt_buf_puts(&sh->line, "}\n");
}

void itemjson_item(struct itemjson *sh, int64_t session, const struct store_item *it)
{
	json_t *o = json_object(), *msg = NULL;
	const char *method = it->method;
	char t[32];
	json_object_set_new(o, "session", json_integer(session));
	json_object_set_new(o, "seq", it->seq >= 0 ? json_integer(it->seq) : json_null());
	if (it->type != STORE_ITEM_GAP) { /* a gap has no clock of its own */
		json_object_set_new(o, "t_ns", json_integer(it->t_ns));
		mt_format_wall(it->wall, t);
		json_object_set_new(o, "time", json_string(t));
	}
	if (it->dir)
		json_object_set_new(o, "dir", json_string(it->type == STORE_ITEM_STDERR ? "s2c" : it->dir));
	if (it->channel)
		json_object_set_new(o, "channel", json_string(it->channel));
	json_object_set_new(o, "kind", json_string(it->kind));
	if (it->type == STORE_ITEM_GAP) {
		json_object_set_new(o, "messages", json_integer(it->gap_messages));
		json_object_set_new(o, "bytes", json_integer(it->gap_bytes));
		json_object_set_new(o, "reason", json_string(it->gap_reason ? it->gap_reason : ""));
		goto print;
	}
	json_t *id = itemjson_id(it);
	if (id)
		json_object_set_new(o, "id", id);
	if (method)
		json_object_set_new(o, "method", json_string(method));
	if (it->has_error_code)
		json_object_set_new(o, "error_code", json_integer(it->error_code));
	if (it->request_seq > 0)
		json_object_set_new(o, "latency_ns", json_integer(it->latency_ns));
	if (it->exchange > 0)
		json_object_set_new(o, "exchange", json_integer(it->exchange));
	set_lossy(sh, o, "sse_id", it->sse_id);
	set_lossy(sh, o, "sse_event", it->sse_event);
	if (it->replayed)
		json_object_set_new(o, "replayed", json_true());
	json_object_set_new(o, "size", json_integer(it->size));
	if (it->incomplete)
		json_object_set_new(o, "incomplete", json_true());
	if (it->type == STORE_ITEM_STDERR) {
		size_t n = it->raw_len;
		const unsigned char *p = it->raw;
		while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			n--;
		mt_utf8_lossy((const char *)p, n, &sh->text);
		json_object_set_new(o, "text",
				    json_stringn(sh->text.data ? sh->text.data : "", sh->text.len));
		goto print;
	}
	/* JSON: its bytes as they were sent, on one line (the id's token too);
	 * a placeholder now, spliced in when printed. */
	struct mt_class c;
	if (strcmp(it->kind, "invalid") && exact_json(it->raw, it->raw_len, &c)) {
		msg = json_true();
		json_object_set_new(o, "message", msg);
		if (id && c.id.n)
			json_object_set(o, "id", msg);
		sh->id_tok = c.id;
	} else {
		mt_utf8_lossy(it->raw, it->raw_len, &sh->text);
		json_object_set_new(o, "raw", json_stringn(sh->text.data ? sh->text.data : "", sh->text.len));
	}
print:
	print_object(sh, o, msg, it);
	json_decref(o);
}

void itemjson_release(struct itemjson *j)
{
	mt_buf_release(&j->text);
	mt_buf_release(&j->line);
}
