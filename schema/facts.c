/*
 * facts.c - pairing and the handshake, read from classified messages (see
 * facts.h).
 */
#include "schema/facts.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void mt_facts_init(struct mt_facts *f)
{
	memset(f, 0, sizeof(*f));
	mt_map_init(&f->open, MT_FACTS_OPEN_MAX);
}

void mt_facts_release(struct mt_facts *f)
{
	mt_map_release(&f->open);
	mt_buf_release(&f->key);
	f->init_seq = 0;
	f->client_known = 0;
}

int64_t mt_facts_pair(struct mt_facts *f, int c2s, const struct mt_class *c, int64_t seq)
{
	int is_request = c->kind == MT_REQUEST;
	int64_t req = 0;

	if (c->kind == MT_NOTIFICATION && c->method.n == 25 &&
	    !memcmp(c->method.p, "\"notifications/cancelled\"", 25)) {
		/* A cancel names the request it cancels, while that is open (it stays open:
		 * an answer may still come). */
		struct mt_class id = *c;
		struct mt_span v;
		if (mt_json_member(c->params, "requestId", &v) != 1 || !v.n)
			return 0;
		id.id = v;
		id.idtype = v.p[0] == '"'                                       ? MT_ID_STRING
			    : v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9') ? MT_ID_NUMBER
										: MT_ID_NONE;
		if (id.idtype == MT_ID_NONE)
			return 0;
		mt_id_key(&id, c2s ? 'c' : 's', &f->key);
		return mt_map_get(&f->open, f->key.data, f->key.len, &req) ? req : 0;
	}
	if (c->idtype == MT_ID_NONE || c->idtype == MT_ID_NULL ||
	    !(is_request || c->kind == MT_RESPONSE || c->kind == MT_ERROR))
		return 0;
	/* A request's key is its sender's; an answer's, the other side's. */
	mt_id_key(c, c2s == is_request ? 'c' : 's', &f->key);
	if (is_request)
		(void)mt_map_put(&f->open, f->key.data, f->key.len, seq);
	else if (!mt_map_take(&f->open, f->key.data, f->key.len, &req))
		req = 0;
	return req;
}

int64_t mt_facts_pair_post(struct mt_facts *f, int c2s, const struct mt_class *c, int64_t seq,
			   int64_t exchange)
{
	struct mt_facts_post *p;
	int64_t open;

	if (exchange <= 0)
		return 0;
	if (c2s && c->kind == MT_REQUEST && c->idtype != MT_ID_NONE && c->idtype != MT_ID_NULL) {
		for (size_t i = 0; i < MT_FACTS_POSTS; i++)
			if (f->posts[i].exchange == exchange) {
				f->posts[i].seq = -1; /* a second one: which is answered is not known */
				return 0;
			}
		mt_id_key(c, 'c', &f->key);
		if (f->key.len > sizeof(f->posts[0].key))
			return 0;
		p = &f->posts[f->next_post++ % MT_FACTS_POSTS];
		p->exchange = exchange;
		p->seq = seq;
		p->n = f->key.len;
		memcpy(p->key, f->key.data, f->key.len);
		return 0;
	}
	if (c2s || c->kind != MT_ERROR || (c->idtype != MT_ID_NONE && c->idtype != MT_ID_NULL))
		return 0;
	for (size_t i = 0; i < MT_FACTS_POSTS; i++) {
		p = &f->posts[i];
		if (p->exchange != exchange)
			continue;
		p->exchange = 0;
		if (p->seq > 0 && mt_map_get(&f->open, p->key, p->n, &open) && open == p->seq) {
			(void)mt_map_take(&f->open, p->key, p->n, &open);
			return p->seq;
		}
		return 0;
	}
	return 0;
}

void mt_handshake_release(struct mt_handshake *h)
{
	free(h->protocol_version);
	free(h->name);
	free(h->version);
	free(h->caps_json);
	memset(h, 0, sizeof(*h));
}

static char *dup_str(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? mt_strdup(s) : NULL;
}

static char *dump_object(json_t *v)
{
	return json_is_object(v) ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
}

/* Is the request's method initialize (its name decoded only when it has escapes)? */
static int is_initialize(const struct mt_class *c)
{
	struct mt_buf m = MT_BUF_INIT;
	int yes;

	if (c->method.n == 12 && !memcmp(c->method.p, "\"initialize\"", 12))
		return 1;
	if (!memchr(c->method.p, '\\', c->method.n))
		return 0;
	yes = mt_json_string(c->method, &m) == 0 && m.len == 10 && !memcmp(m.data, "initialize", 10);
	mt_buf_release(&m);
	return yes;
}

/*
 * A session without initialize (the 2026-07-28 revision): its client as the
 * first request whose _meta names it says (clientInfo, clientCapabilities,
 * protocolVersion under io.modelcontextprotocol/).
 */
static int meta_client(struct mt_facts *f, const char *p, size_t n, struct mt_handshake *h)
{
	json_t *msg = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
	json_t *info = json_object_get(meta, "io.modelcontextprotocol/clientInfo");
	int rc = 0;

	if (json_is_object(info)) {
		f->client_known = 1;
		h->side = MT_SIDE_CLIENT;
		h->name = dup_str(info, "name");
		h->version = dup_str(info, "version");
		h->protocol_version = dup_str(meta, "io.modelcontextprotocol/protocolVersion");
		h->caps_json =
			dump_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"));
		rc = 1;
	}
	json_decref(msg);
	return rc;
}

int mt_facts_handshake(struct mt_facts *f, int c2s, const struct mt_class *c, const char *p, size_t n,
		       int64_t seq, int64_t request_seq, struct mt_handshake *h)
{
	int is_request = c2s && c->kind == MT_REQUEST;
	json_t *msg, *body;
	int rc = 0;

	memset(h, 0, sizeof(*h));
	if (is_request) {
		if (!is_initialize(c)) {
			/* 2026-07-28: no initialize; a request names its client in _meta
			 * (looked for in the spans first: any _meta, a progressToken's
			 * say, would not be worth decoding the message for). */
			struct mt_span meta, ci;
			if (!f->client_known && c->has_meta &&
			    mt_json_member(c->params, "_meta", &meta) == 1 &&
			    mt_json_member(meta, "io.modelcontextprotocol/clientInfo", &ci) == 1)
				return meta_client(f, p, n, h);
			return 0;
		}
		f->init_seq = seq;
		f->client_known = 1;
	} else if (!(!c2s && c->kind == MT_RESPONSE && f->init_seq && request_seq == f->init_seq)) {
		return 0;
	}
	msg = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	body = json_object_get(msg, is_request ? "params" : "result");
	if (json_is_object(body)) {
		json_t *info = json_object_get(body, is_request ? "clientInfo" : "serverInfo");
		h->side = is_request ? MT_SIDE_CLIENT : MT_SIDE_SERVER;
		h->protocol_version = dup_str(body, "protocolVersion");
		h->name = dup_str(info, "name");
		h->version = dup_str(info, "version");
		h->caps_json = dump_object(json_object_get(body, "capabilities"));
		rc = 1;
	}
	if (!is_request)
		f->init_seq = 0;
	json_decref(msg);
	return rc;
}
