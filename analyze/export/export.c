/*
 * export.c - what the export formats share: redaction of what they are
 * given, as the tap redacts what it stores. A capture recorded with
 * --keep-secrets holds credentials; an export says none of them unless it is
 * asked to (export --keep-secrets). On a capture the tap redacted, this
 * finds nothing more: a marker is not a secret.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export/export.h"
#include "schema/message.h"
#include "tap/http/httphdr.h"

/* headers (a JSON array of [name, value]) with their values redacted, into out; 0 when unchanged. */
static int redact_headers(struct ex_sink *x, const char *json, struct mt_buf *out)
{
	json_t *a = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	size_t i;
	json_t *h;
	int changed = 0;

	if (!json_is_array(a)) {
		json_decref(a);
		return 0;
	}
	json_array_foreach(a, i, h)
	{
		const char *name = json_string_value(json_array_get(h, 0));
		json_t *v = json_array_get(h, 1);
		if (!name || !json_is_string(v))
			continue;
		if (mt_redact_header(x->redact, name, json_string_value(v), json_string_length(v),
				     &x->red2)) {
			json_array_set_new(h, 1, json_stringn(x->red2.data ? x->red2.data : "", x->red2.len));
			changed = 1;
		}
	}
	if (changed) {
		char *s = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
		mt_buf_reset(out);
		mt_buf_puts(out, s ? s : "[]");
		free(s);
	}
	json_decref(a);
	return changed;
}

static const struct store_item *redact_exchange(struct ex_sink *x, const struct store_item *it)
{
	const struct store_exchange_row *r = it->x;
	struct store_exchange_row *c = &x->xcopy;
	int changed = 0;

	*c = *r;
	if (r->target && mt_target_redact(r->target, x->redact, &x->xb[0])) {
		c->target = x->xb[0].data ? x->xb[0].data : "";
		changed = 1;
	}
	if (redact_headers(x, r->req_headers_json, &x->xb[1])) {
		c->req_headers_json = x->xb[1].data;
		changed = 1;
	}
	if (redact_headers(x, r->resp_headers_json, &x->xb[2])) {
		c->resp_headers_json = x->xb[2].data;
		changed = 1;
	}
	if (r->req_body && mt_redact_body(x->redact, r->req_body, r->req_body_len, &x->xb[3])) {
		c->req_body = x->xb[3].data ? x->xb[3].data : "";
		c->req_body_len = x->xb[3].len;
		changed = 1;
	}
	if (r->resp_body && mt_redact_body(x->redact, r->resp_body, r->resp_body_len, &x->xb[4])) {
		c->resp_body = x->xb[4].data ? x->xb[4].data : "";
		c->resp_body_len = x->xb[4].len;
		changed = 1;
	}
	if (r->error && mt_redact_text(x->redact, r->error, strlen(r->error), &x->xb[5])) {
		c->error = x->xb[5].data;
		changed = 1;
	}
	if (!changed)
		return it;
	x->icopy = *it;
	x->icopy.x = c;
	return &x->icopy;
}

const struct store_item *ex_redact_item(struct ex_sink *x, const struct store_item *it)
{
	int red;

	if (!x->redact)
		return it;
	switch (it->type) {
	case STORE_ITEM_EXCHANGE: return redact_exchange(x, it);
	case STORE_ITEM_STDERR:
		red = mt_redact_line(x->redact, &x->pem, it->raw, it->raw_len, &x->red);
		break;
	case STORE_ITEM_MESSAGE:
		/* (JSON is walked as JSON whatever its kind; the rest is text.) */
		red = mt_redact_message(x->redact, it->raw, it->raw_len,
					strcmp(it->kind, "invalid") ? MT_NOTJSONRPC : MT_INVALID, &x->red);
		break;
	default: return it;
	}
	if (!red)
		return it;
	x->icopy = *it;
	x->icopy.raw = x->red.data ? x->red.data : "";
	x->icopy.raw_len = x->red.len;
	/* (A message's size is what was relayed; a stderr line's, what is stored.) */
	if (it->type == STORE_ITEM_STDERR)
		x->icopy.size = (int64_t)x->red.len;
	return &x->icopy;
}

const char *ex_redact_target(const struct ex_sink *x, const char *s, struct mt_buf *buf)
{
	if (!s || !x->redact || !mt_target_redact(s, x->redact, buf))
		return s;
	return buf->data ? buf->data : "";
}

const char *ex_redact_text(const struct ex_sink *x, const char *s, struct mt_buf *buf)
{
	if (!s || !x->redact || !mt_redact_text(x->redact, s, strlen(s), buf))
		return s;
	return buf->data ? buf->data : "";
}

void ex_sink_release(struct ex_sink *x)
{
	mt_buf_release(&x->red);
	mt_buf_release(&x->red2);
	for (size_t i = 0; i < sizeof(x->xb) / sizeof(x->xb[0]); i++)
		mt_buf_release(&x->xb[i]);
}
