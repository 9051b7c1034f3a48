/*
 * replay.c - loading a session for replay, matching live messages to
 * recorded ones, and rewriting recorded messages for sending (see replay.h).
 */
#include "analyze/replay/replay.h"

#include <stdlib.h>
#include <string.h>

#include "schema/redact.h"

/* rp_read: messages read ahead at most, and bytes after the first. */
#define READ_AHEAD 64
#define READ_BYTES ((size_t)256 << 10)
/* A read this close after the window (or a lone message) goes on from there. */
#define READ_SLACK 16
/* rp_load: the session row's message count is trusted up to this, to size the array. */
#define LOAD_HINT_MAX ((size_t)1 << 20)

/* ---- keys: SipHash-2-4 with 128 bits out, under a fixed key ---- */

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static void sip_rounds(uint64_t v[4], int r)
{
	while (r--) {
		v[0] += v[1];
		v[1] = rotl(v[1], 13);
		v[1] ^= v[0];
		v[0] = rotl(v[0], 32);
		v[2] += v[3];
		v[3] = rotl(v[3], 16);
		v[3] ^= v[2];
		v[0] += v[3];
		v[3] = rotl(v[3], 21);
		v[3] ^= v[0];
		v[2] += v[1];
		v[1] = rotl(v[1], 17);
		v[1] ^= v[2];
		v[2] = rotl(v[2], 32);
	}
}

/* Little-endian bytes p[0..n) (n <= 8) as a number. */
static uint64_t le64(const unsigned char *p, size_t n)
{
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

void rp_hash(const void *data, size_t n, uint64_t out[2])
{
	static const uint64_t k0 = 0x0706050403020100ULL, k1 = 0x0f0e0d0c0b0a0908ULL;
	uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL ^ 0xee,
			 k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
	const unsigned char *p = data;
	size_t whole = n & ~(size_t)7;
	uint64_t m;

	for (size_t i = 0; i < whole; i += 8) {
		m = le64(p + i, 8);
		v[3] ^= m;
		sip_rounds(v, 2);
		v[0] ^= m;
	}
	m = le64(p + whole, n - whole) | (uint64_t)n << 56;
	v[3] ^= m;
	sip_rounds(v, 2);
	v[0] ^= m;
	v[2] ^= 0xee;
	sip_rounds(v, 4);
	out[0] = v[0] ^ v[1] ^ v[2] ^ v[3];
	v[1] ^= 0xdd;
	sip_rounds(v, 4);
	out[1] = v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* The place of key hash h: its own, or the empty one where it would go. */
static struct rp_key *key_place(struct rp_key *keys, size_t cap, const uint64_t h[2])
{
	for (size_t j = (size_t)h[0] & (cap - 1);; j = (j + 1) & (cap - 1))
		if (keys[j].last < 0 || (keys[j].h[0] == h[0] && keys[j].h[1] == h[1]))
			return &keys[j];
}

static struct rp_key *key_find(const struct rp_script *s, const uint64_t h[2])
{
	struct rp_key *k = s->keys_cap ? key_place(s->keys, s->keys_cap, h) : NULL;

	return k && k->last >= 0 ? k : NULL;
}

/* The place of h, made when new (*fresh: first and last are -1 then, to be set). */
static struct rp_key *key_add(struct rp_script *s, const uint64_t h[2], int *fresh)
{
	struct rp_key *k;

	if ((s->keys_len + 1) * 4 > s->keys_cap * 3) {
		size_t cap = s->keys_cap ? 2 * s->keys_cap : 64;
		struct rp_key *keys = mt_calloc(cap, sizeof(*keys));
		for (size_t j = 0; j < cap; j++)
			keys[j].last = -1;
		for (size_t j = 0; j < s->keys_cap; j++)
			if (s->keys[j].last >= 0)
				*key_place(keys, cap, s->keys[j].h) = s->keys[j];
		free(s->keys);
		s->keys = keys;
		s->keys_cap = cap;
	}
	k = key_place(s->keys, s->keys_cap, h);
	*fresh = k->last < 0;
	if (*fresh) {
		k->h[0] = h[0];
		k->h[1] = h[1];
		k->first = -1;
		s->keys_len++;
	}
	return k;
}

/* ---- names ---- */

/* The interned copy of name (NULL: NULL). */
static const char *intern(struct rp_script *s, const char *name)
{
	int64_t ix;
	size_t n;

	if (!name)
		return NULL;
	n = strlen(name);
	if (mt_map_get(&s->names, name, n, &ix))
		return s->name[ix];
	if (s->nnames == s->names_cap) {
		s->names_cap = s->names_cap ? 2 * s->names_cap : 8;
		s->name = mt_realloc(s->name, s->names_cap * sizeof(*s->name));
	}
	s->name[s->nnames] = mt_strndup(name, n);
	mt_map_put(&s->names, name, n, (int64_t)s->nnames);
	return s->name[s->nnames++];
}

const char *rp_name(const struct rp_script *s, const char *method)
{
	int64_t ix;

	return method && mt_map_get(&s->names, method, strlen(method), &ix) ? s->name[ix] : NULL;
}

json_t *rp_parse(const char *p, size_t n)
{
	json_t *v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	return v ? v : json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
}

/* ---- reading messages back ---- */

/* Bytes without the newline (and a carriage return) that ends them. */
static size_t unframed(const char *p, size_t n)
{
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	return n;
}

/* A message that cannot be read back: counted, the first reason kept. */
static int read_failed(struct rp_script *s, struct mt_err *err)
{
	if (!s->read_errors++)
		s->read_err = *err;
	return -1;
}

struct fill {
	struct rp_script *s;
	size_t next; /* the message the next row must be */
};

static int fill_window(int64_t seq, const void *raw, size_t n, void *ctx)
{
	struct fill *f = ctx;
	struct rp_cache *c = &f->s->cache;

	if (f->next >= f->s->n || seq != f->s->m[f->next].seq)
		return 1;
	mt_buf_append(&c->buf, raw, unframed(raw, n));
	c->off[++c->n] = c->buf.len;
	f->next++;
	return c->buf.len >= READ_BYTES;
}

static int fill_one(int64_t seq, const void *raw, size_t n, void *ctx)
{
	struct fill *f = ctx;
	struct rp_cache *c = &f->s->cache;

	if (seq != f->s->m[f->next].seq)
		return 1;
	mt_buf_reset(&c->one_buf);
	mt_buf_append(&c->one_buf, raw, unframed(raw, n));
	c->one = f->next;
	c->has_one = 1;
	return 1;
}

/* A buffer that once held a huge message gives its memory back. */
static void buf_trim(struct mt_buf *b)
{
	if (b->cap > 4 * READ_BYTES)
		mt_buf_release(b);
	mt_buf_reset(b);
}

int rp_read(struct rp_script *s, size_t i, const char **p, size_t *n, struct mt_class *cls,
	    struct mt_err *err)
{
	struct rp_cache *c = &s->cache;
	struct fill f = {s, i};
	const struct rp_msg *m;
	struct mt_err mine = {"", 0};

	if (!err)
		err = &mine;
	if (i >= s->n) {
		mt_err_set(err, "no recorded message %zu", i);
		return read_failed(s, err);
	}
	m = &s->m[i];
	if (i >= c->lo && i < c->lo + c->n) {
		*p = c->buf.data ? c->buf.data + c->off[i - c->lo] : "";
		*n = c->off[i - c->lo + 1] - c->off[i - c->lo];
	} else if (c->has_one && c->one == i) {
		*p = c->one_buf.data ? c->one_buf.data : "";
		*n = c->one_buf.len;
	} else {
		/* Read ahead from i when it goes on from what was read last (or
		 * nothing was); else this message alone, keeping the window. */
		int ahead = !c->n || (i >= c->lo + c->n && i < c->lo + 2 * c->n + READ_SLACK) ||
			    (c->has_one && i > c->one && i <= c->one + READ_SLACK);
		int r;
		if (ahead) {
			if (!c->off)
				c->off = mt_calloc(READ_AHEAD + 1, sizeof(*c->off));
			buf_trim(&c->buf);
			c->lo = i;
			c->n = 0;
			r = store_read_raw(s->st, s->session, m->seq, READ_AHEAD, fill_window, &f, err);
		} else {
			buf_trim(&c->one_buf);
			c->has_one = 0;
			r = store_read_raw(s->st, s->session, m->seq, 1, fill_one, &f, err);
		}
		if (r < 0) {
			c->n = 0;
			return read_failed(s, err);
		}
		if (ahead ? !c->n : !c->has_one) {
			mt_err_set(err, "message %lld of session %lld is no longer in the capture file",
				   (long long)m->seq, (long long)s->session);
			return read_failed(s, err);
		}
		return rp_read(s, i, p, n, cls, err);
	}
	if (!cls)
		return 0;
	if (m->kind > MT_ERROR) {
		memset(cls, 0, sizeof(*cls));
		cls->kind = m->kind;
		return 0;
	}
	/* The bytes were checked when the session was loaded. */
	if (mt_classify_trusted(*p, *n, cls) != (enum mt_kind)m->kind &&
	    mt_classify(*p, *n, cls) != (enum mt_kind)m->kind) {
		mt_err_set(err, "message %lld of session %lld changed in the capture file", (long long)m->seq,
			   (long long)s->session);
		return read_failed(s, err);
	}
	return 0;
}

int rp_json(struct rp_script *s, size_t i, json_t **out, struct mt_err *err)
{
	const char *p;
	size_t n;

	*out = NULL;
	if (rp_read(s, i, &p, &n, NULL, err))
		return -1;
	if (s->m[i].kind <= MT_ERROR)
		*out = rp_parse(p, n);
	return 0;
}

/* ---- loading ---- */

struct loader {
	struct rp_script *s;
	size_t cap;
	struct mt_map open;   /* side and id of a request not answered yet -> its index */
	struct mt_buf key;    /* scratch */
	struct mt_err *err;   /* borrowed: why loading stopped */
	struct mt_map resent; /* id of a server request replayed on a resumed stream -> the
			       * client answers to it that are the replay's, not the script's */
	struct copy *copies;  /* the server's JSON-RPC copies, in seq order */
	size_t ncopies, copies_cap;
};

/* A copy of a server message sent again on a resumed stream (see rp_resume). */
struct copy {
	int64_t seq, exchange;
	uint64_t h[2]; /* rp_hash of its bytes */
	size_t len;
	int32_t orig; /* the script's message it is a copy of, or -1 */
	int32_t next; /* the next copy with the same hash, or -1 */
};

/*
 * A hash of a JSON-RPC id (ids Jansson finds equal have one canonical text);
 * 0: none. Equal hashes are checked against the ids themselves.
 */
static uint32_t id_hash(json_t *id)
{
	char *text = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	uint64_t h[2] = {0, 0};

	if (!text)
		return 0;
	rp_hash(text, strlen(text), h);
	free(text);
	return (uint32_t)h[0] ? (uint32_t)h[0] : 1;
}

/* Is the notification classified as c a notifications/cancelled? */
static int is_cancel(const struct mt_class *c, struct mt_buf *scratch)
{
	return !mt_json_string(c->method, scratch) && scratch->data &&
	       scratch->len == strlen("notifications/cancelled") &&
	       !memcmp(scratch->data, "notifications/cancelled", scratch->len);
}

/*
 * Cancellation i names a request of its own side by id (rid): the nearest one
 * before it with that id; the first cancellation of a request counts.
 */
static void note_cancel(struct loader *l, size_t i, json_t *rid)
{
	struct rp_script *s = l->s;
	uint32_t h = id_hash(rid);
	struct mt_err err = {"", 0};

	for (size_t q = i; h && q-- > 0;) {
		struct rp_msg *r = &s->m[q];
		json_t *j;
		int same;
		if (r->c2s != s->m[i].c2s || r->kind != MT_REQUEST || r->id_hash != h)
			continue;
		if (rp_json(s, q, &j, &err))
			return;
		same = json_equal(json_object_get(j, "id"), rid);
		json_decref(j);
		if (same) {
			if (r->cancelled_by < 0)
				r->cancelled_by = (int32_t)i;
			return;
		}
	}
}

/* Which NAME=PATH ignore paths a recorded client request (method, params) names. */
static void note_named(struct rp_script *s, const char *method, json_t *params);

/* A client request or notification: its key, its place in the chains, a pattern? */
static void note_key(struct loader *l, size_t i, json_t *params)
{
	struct rp_script *s = l->s;
	struct rp_msg *m = &s->m[i];
	struct canon_ignore mine;
	struct rp_key *k;
	uint64_t h[2];
	int fresh;
	json_t *kp = rp_key_params(m->method, params);

	rp_ignore_for(s, m->method, kp, &mine);
	canon_key(m->method, kp, &mine, &l->key);
	free((void *)mine.paths);
	rp_hash(l->key.data, l->key.len, h);
	k = key_add(s, h, &fresh);
	if (fresh)
		k->first = (int32_t)i;
	else
		s->m[k->last].next_same = (int32_t)i;
	k->last = (int32_t)i;
	if (m->redacted) {
		m->pattern = 1;
		if (s->npatterns == s->patterns_cap) {
			s->patterns_cap = s->patterns_cap ? 2 * s->patterns_cap : 8;
			s->patterns = mt_realloc(s->patterns, s->patterns_cap * sizeof(*s->patterns));
		}
		s->patterns[s->npatterns++] = (int32_t)i;
	}
}

static int load_item(const struct store_item *it, void *ctx)
{
	struct loader *l = ctx;
	struct rp_script *s = l->s;
	const char *raw = it->raw;
	size_t len = unframed(it->raw, it->raw_len), i = s->n;
	struct mt_class c;
	enum mt_kind kind;
	struct rp_msg *m;
	json_t *j = NULL, *params;
	int64_t req;

	if (it->type != STORE_ITEM_MESSAGE)
		return 0;
	kind = mt_classify(raw, len, &c);
	if (it->replayed && it->dir && strcmp(it->dir, "c2s")) {
		/*
		 * An event a server sent again on a stream resumed with Last-Event-ID:
		 * delivered once by the recorded server, so neither sent again by the
		 * mock nor expected again from a live server (the mock's HTTP endpoint
		 * resumes streams from its own events). The client's answer to a
		 * request sent again is the replay's too.
		 */
		if (c.kind == MT_REQUEST && c.idtype != MT_ID_NULL && c.idtype != MT_ID_NONE) {
			int64_t v = 0;
			mt_id_key(&c, 's', &l->key);
			mt_map_get(&l->resent, l->key.data, l->key.len, &v);
			mt_map_put(&l->resent, l->key.data, l->key.len, v + 1);
		}
		if (kind <= MT_ERROR && it->exchange) {
			/* (kept, to find what it is a copy of once the routes are read) */
			struct copy *cp;
			if (l->ncopies == l->copies_cap) {
				l->copies_cap = l->copies_cap ? l->copies_cap * 2 : 16;
				l->copies = mt_realloc(l->copies, l->copies_cap * sizeof(*l->copies));
			}
			cp = &l->copies[l->ncopies++];
			cp->seq = it->seq;
			cp->exchange = it->exchange;
			rp_hash(raw, it->raw_len, cp->h);
			cp->len = it->raw_len;
			cp->orig = cp->next = -1;
		}
		s->replayed++;
		return 0;
	}
	if (it->dir && !strcmp(it->dir, "c2s") && l->resent.len) {
		int64_t v = 0, open;
		if ((c.kind == MT_RESPONSE || c.kind == MT_ERROR) && c.idtype != MT_ID_NONE &&
		    c.idtype != MT_ID_NULL) {
			mt_id_key(&c, 's', &l->key);
			if (!mt_map_get(&l->open, l->key.data, l->key.len, &open) &&
			    mt_map_get(&l->resent, l->key.data, l->key.len, &v) && v > 0) {
				mt_map_put(&l->resent, l->key.data, l->key.len, v - 1);
				s->replayed++;
				return 0;
			}
		}
	}
	if (i >= INT32_MAX) {
		mt_err_set(l->err, "the session has more than %d messages: too many to replay", INT32_MAX);
		return 1;
	}
	if (i == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		s->m = mt_realloc(s->m, l->cap * sizeof(*s->m));
	}
	m = &s->m[i];
	memset(m, 0, sizeof(*m));
	m->seq = it->seq;
	m->t_ns = it->t_ns;
	m->c2s = it->dir && !strcmp(it->dir, "c2s");
	m->answer = m->request = m->next_same = m->cancelled_by = -1;
	m->kind = kind;
	if (m->c2s)
		m->redacted = mt_redact_find_marker(raw, len) != NULL;
	/* Parsed: requests and client notifications (their method, key, id, subject),
	 * and the server's cancellations. Answers never are. */
	if (c.kind == MT_REQUEST || (c.kind == MT_NOTIFICATION && (m->c2s || is_cancel(&c, &l->key))))
		j = rp_parse(raw, len);
	m->method = intern(s, json_string_value(json_object_get(j, "method")));
	params = json_object_get(j, "params");
	s->n++;
	if (c.kind == MT_REQUEST && c.idtype != MT_ID_NULL) {
		mt_id_key(&c, m->c2s ? 'c' : 's', &l->key);
		mt_map_put(&l->open, l->key.data, l->key.len, (int64_t)i);
	} else if ((c.kind == MT_RESPONSE || c.kind == MT_ERROR) && c.idtype != MT_ID_NONE &&
		   c.idtype != MT_ID_NULL) {
		mt_id_key(&c, m->c2s ? 's' : 'c', &l->key);
		if (mt_map_take(&l->open, l->key.data, l->key.len, &req)) {
			m->request = (int32_t)req;
			s->m[req].answer = (int32_t)i;
		}
	} else if ((c.kind == MT_RESPONSE || c.kind == MT_ERROR) && it->request_seq > 0) {
		/* An answer without an id that the store paired (an HTTP error body
		 * answering its POST's request): the messages are in seq order. */
		size_t lo = 0, hi = i;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (s->m[mid].seq < it->request_seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < i && s->m[lo].seq == it->request_seq && s->m[lo].answer < 0 &&
		    s->m[lo].c2s != m->c2s) {
			m->request = (int32_t)lo;
			m->idless = 1;
			s->m[lo].answer = (int32_t)i;
		}
	}
	if (c.kind == MT_REQUEST)
		m->id_hash = id_hash(json_object_get(j, "id"));
	if (c.kind == MT_NOTIFICATION && m->method && !strcmp(m->method, "notifications/cancelled"))
		note_cancel(l, i, json_object_get(params, "requestId"));
	if (m->c2s && (c.kind == MT_REQUEST || c.kind == MT_NOTIFICATION) && m->method)
		note_key(l, i, params);
	if (m->c2s && c.kind == MT_REQUEST) {
		s->requests++;
		if (j)
			note_named(s, m->method, params);
		if (c.progress_token.n) {
			mt_map_put(&s->tokens, c.progress_token.p, c.progress_token.n, (int64_t)i);
			m->token = 1;
		}
	} else if (!m->c2s) {
		s->server_msgs++;
	}
	json_decref(j);
	return s->read_errors ? 1 : 0;
}

/* Building the route of an HTTP recording's messages (store_each_route). */
struct router {
	struct rp_script *s;
	size_t i;            /* the message the next route is for */
	struct mt_map posts; /* an exchange's seq -> the client message its POST carried */
};

static int route_one(const struct store_route *r, void *ctx)
{
	struct router *rt = ctx;
	struct rp_script *s = rt->s;
	size_t i = rt->i;
	int64_t c;

	/* Messages and routes come in the same order: a message the script left out
	 * has a route of no use; a script's message without one means the file
	 * changed under us. */
	if (i >= s->n || r->seq < s->m[i].seq)
		return 0;
	if (r->seq > s->m[i].seq)
		return 1;
	rt->i++;
	s->on[i] = -1;
	if (!r->channel || !strcmp(r->channel, "stdio")) {
		s->via[i] = RP_VIA_STDIO;
		return 0;
	}
	int post = r->method && !strcmp(r->method, "POST");
	if (s->m[i].c2s) {
		s->via[i] = RP_VIA_BODY;
		if (post && r->exchange)
			(void)mt_map_put(&rt->posts, &r->exchange, sizeof(r->exchange), (int64_t)i);
		return 0;
	}
	s->via[i] = !strcmp(r->channel, "sse") ? (post ? RP_VIA_POST : RP_VIA_GET) : RP_VIA_BODY;
	if (post && r->exchange && mt_map_get(&rt->posts, &r->exchange, sizeof(r->exchange), &c))
		s->on[i] = (int32_t)c;
	return 0;
}

/* Reading the exchanges of an HTTP recording (store_each_exchange). */
struct xreader {
	struct rp_script *s;
	struct mt_map *posts; /* an exchange's seq -> the client message its POST carried */
};

static void add_reply(struct xreader *xr, int32_t msg, const struct store_exchange_row *x)
{
	struct rp_script *s = xr->s;
	struct rp_http_reply *r;

	if (s->nreplies == s->replies_cap) {
		s->replies_cap = s->replies_cap ? 2 * s->replies_cap : 8;
		s->replies = mt_realloc(s->replies, s->replies_cap * sizeof(*s->replies));
	}
	r = &s->replies[s->nreplies++];
	r->msg = msg;
	r->method = mt_strdup(x->method);
	r->target = mt_strdup(x->target);
	r->status = x->status;
	r->headers_json = mt_strdup(x->resp_headers_json ? x->resp_headers_json : "[]");
	r->body = NULL;
	r->body_len = 0;
	if (x->resp_body) {
		r->body = mt_malloc(x->resp_body_len + 1); /* (bytes: NULs kept) */
		memcpy(r->body, x->resp_body, x->resp_body_len);
		r->body[x->resp_body_len] = '\0';
		r->body_len = x->resp_body_len;
	}
}

/*
 * The path of the recording's MCP endpoint (its first POST's; legacy: its
 * first GET's), and the replies no message carries: a POST of a client
 * request refused with an HTTP error (the request alone names the
 * exchange), and exchanges without JSON-RPC.
 */
static int read_exchange(const struct store_exchange_row *x, void *ctx)
{
	struct xreader *xr = ctx;
	struct rp_script *s = xr->s;
	const char *want = s->transport == RP_SSE ? "GET" : "POST";
	int64_t c;

	if (!x->method || !x->target)
		return 0;
	if (!s->path && !strcmp(x->method, want) && (x->messages || s->transport == RP_SSE)) {
		size_t n = strcspn(x->target, "?#");
		s->path = mt_strndup(x->target, n ? n : 1);
	}
	if (!strcmp(x->method, "GET") && x->last_event_id && *x->last_event_id) {
		s->resumes = mt_realloc(s->resumes, (s->nresumes + 1) * sizeof(*s->resumes));
		s->resumes[s->nresumes++] = (struct rp_resume){x->seq, NULL, 0, 0};
	}
	if (x->status >= 400 && x->messages == 1 && mt_map_get(xr->posts, &x->seq, sizeof(x->seq), &c) &&
	    s->m[c].kind == MT_REQUEST && s->m[c].answer < 0) {
		s->m[c].refused = 1;
		add_reply(xr, (int32_t)c, x);
	} else if (!x->messages && x->status > 0) {
		add_reply(xr, -1, x);
	}
	return 0;
}

static int read_other(const struct store_exchange_row *x, void *ctx)
{
	struct xreader *xr = ctx;

	if (x->method && x->target && !x->messages && x->status > 0)
		add_reply(xr, -1, x);
	return 0;
}

struct statuses {
	struct rp_script *s;
	struct mt_map errors; /* exchange seq (8 bytes) -> its error status */
	int *out;
};

static int status_exchange(const struct store_exchange_row *x, void *ctx)
{
	struct statuses *st = ctx;

	if (x->method && strcmp(x->method, "GET") && strcmp(x->method, "DELETE") && x->status >= 400 &&
	    x->status <= 599)
		mt_map_put(&st->errors, &x->seq, sizeof(x->seq), x->status);
	return 0;
}

/* The index in s->m of the message with seq, or -1. */
static int64_t index_of(const struct rp_script *s, int64_t seq)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->m[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n && s->m[lo].seq == seq ? (int64_t)lo : -1;
}

static int status_item(const struct store_item *it, void *ctx)
{
	struct statuses *st = ctx;
	int64_t status, i;

	if (it->type == STORE_ITEM_MESSAGE && it->exchange && it->dir && !strcmp(it->dir, "c2s") &&
	    mt_map_get(&st->errors, &it->exchange, sizeof(it->exchange), &status) &&
	    (i = index_of(st->s, it->seq)) >= 0)
		st->out[i] = (int)status;
	return 0;
}

int rp_error_statuses(struct rp_script *s, int **out, struct mt_err *err)
{
	struct statuses st = {s, {0}, NULL};
	int rc = -1;

	*out = NULL;
	if (s->transport == RP_STDIO)
		return 0;
	mt_map_init(&st.errors, 0);
	st.out = mt_calloc(s->n ? s->n : 1, sizeof(*st.out));
	if (store_each_exchange(s->st, s->session, status_exchange, &st, err) < 0 ||
	    store_each_item_ex(s->st, s->session, 0, status_item, &st, err) < 0) {
		free(st.out);
		goto out;
	}
	*out = st.out;
	rc = 0;
out:
	mt_map_release(&st.errors);
	return rc;
}

int rp_add_other_replies(struct store *st, int64_t session, struct rp_script *s, struct mt_err *err)
{
	struct xreader xr = {s, NULL};

	return store_each_exchange(st, session, read_other, &xr, err) < 0 ? -1 : 0;
}

const struct rp_http_reply *rp_refusal(const struct rp_script *s, int64_t i)
{
	for (size_t k = 0; i >= 0 && k < s->nreplies; k++)
		if (s->replies[k].msg == i)
			return &s->replies[k];
	return NULL;
}

const struct rp_http_reply *rp_other_reply(const struct rp_script *s, const char *method, const char *target)
{
	size_t path = strcspn(target, "?#");

	for (size_t k = 0; k < s->nreplies; k++)
		if (s->replies[k].msg < 0 && !strcmp(s->replies[k].method, method) &&
		    !strcmp(s->replies[k].target, target))
			return &s->replies[k];
	for (size_t k = 0; k < s->nreplies; k++)
		if (s->replies[k].msg < 0 && !strcmp(s->replies[k].method, method) &&
		    strcspn(s->replies[k].target, "?#") == path &&
		    !strncmp(s->replies[k].target, target, path))
			return &s->replies[k];
	return NULL;
}

/*
 * An HTTP recording's blocks (see rp_script.blocks): each server message goes
 * to the block of the last client message of its POST's conversation, or,
 * on a GET stream (or without a POST), of the last client message of all.
 */
static void make_blocks(struct rp_script *s)
{
	/* Per client request: the last client message of its conversation so far. */
	int32_t *rel = mt_malloc((s->n ? s->n : 1) * sizeof(*rel));
	int32_t *tail = mt_malloc((s->n + 1) * sizeof(*tail));
	int32_t last = -1;

	s->blocks = mt_malloc((s->n + 1) * sizeof(*s->blocks));
	s->block_next = mt_malloc((s->n ? s->n : 1) * sizeof(*s->block_next));
	int32_t *cancel_of = mt_malloc((s->n ? s->n : 1) * sizeof(*cancel_of));

	for (size_t i = 0; i <= s->n; i++)
		s->blocks[i] = tail[i] = -1;
	for (size_t i = 0; i < s->n; i++)
		cancel_of[i] = -1;
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].c2s && s->m[i].kind == MT_REQUEST && s->m[i].cancelled_by >= 0)
			cancel_of[s->m[i].cancelled_by] = (int32_t)i;
	for (size_t i = 0; i < s->n; i++) {
		const struct rp_msg *m = &s->m[i];
		int32_t a;
		rel[i] = -1;
		s->block_next[i] = -1;
		if (m->c2s) {
			last = (int32_t)i;
			if (m->kind == MT_REQUEST)
				rel[i] = (int32_t)i;
			if (cancel_of[i] >= 0 && rel[cancel_of[i]] >= 0)
				rel[cancel_of[i]] = (int32_t)i;
			/* The client's answer to a server request sent on a POST's stream,
			 * and the cancel of a request, go on with that POST's conversation. */
			if ((m->kind == MT_RESPONSE || m->kind == MT_ERROR) && m->request >= 0 &&
			    s->via[m->request] == RP_VIA_POST && s->on[m->request] >= 0)
				rel[s->on[m->request]] = (int32_t)i;
			continue;
		}
		a = (s->via[i] == RP_VIA_POST || s->via[i] == RP_VIA_BODY) && s->on[i] >= 0 &&
				    rel[s->on[i]] >= 0
			    ? rel[s->on[i]]
			    : last;
		if (tail[a + 1] < 0)
			s->blocks[a + 1] = (int32_t)i;
		else
			s->block_next[tail[a + 1]] = (int32_t)i;
		tail[a + 1] = (int32_t)i;
	}
	free(rel);
	free(tail);
	free(cancel_of);
}

int64_t rp_block_first(const struct rp_script *s, int64_t a)
{
	if (s->blocks)
		return s->blocks[a + 1];
	return (size_t)(a + 1) < s->n && !s->m[a + 1].c2s ? a + 1 : -1;
}

int64_t rp_block_next(const struct rp_script *s, int64_t j)
{
	if (s->block_next)
		return s->block_next[j];
	return (size_t)(j + 1) < s->n && !s->m[j + 1].c2s ? j + 1 : -1;
}

/*
 * How an HTTP recording's messages travelled (via, on) and its endpoint's
 * path. 0, or -1 with err set.
 */
static int load_routes(struct rp_script *s, struct mt_err *err)
{
	struct router rt = {s, 0, {NULL, 0, 0, 0, 0, 0}};
	int r;

	s->via = mt_calloc(s->n ? s->n : 1, 1);
	s->on = mt_malloc((s->n ? s->n : 1) * sizeof(*s->on));
	mt_map_init(&rt.posts, 0);
	r = store_each_route(s->st, s->session, route_one, &rt, err);
	if (r >= 0 && (r > 0 || rt.i != s->n))
		r = mt_err_set(err, "the capture changed while it was read");
	if (r >= 0) {
		struct xreader xr = {s, &rt.posts};
		r = store_each_exchange(s->st, s->session, read_exchange, &xr, err);
	}
	mt_map_release(&rt.posts);
	if (r < 0)
		return -1;
	make_blocks(s);
	return 0;
}

/* Finding what each copy is a copy of: the last server message before it with its bytes. */
struct origins {
	struct rp_script *s;
	struct loader *l;
	struct mt_map by_hash; /* a hash -> the first copy with it */
	size_t j;              /* the script's message the next item may be */
	int64_t last;          /* the last copy's seq */
};

static int origin_of(const struct store_item *it, void *ctx)
{
	struct origins *o = ctx;
	struct rp_script *s = o->s;
	uint64_t h[2];
	int64_t c;

	if (it->seq >= o->last)
		return 1; /* (no copy comes after it) */
	if (it->type != STORE_ITEM_MESSAGE || it->replayed || !it->dir || strcmp(it->dir, "s2c"))
		return 0;
	while (o->j < s->n && s->m[o->j].seq < it->seq)
		o->j++;
	if (o->j == s->n || s->m[o->j].seq != it->seq)
		return 0;
	rp_hash(it->raw, it->raw_len, h);
	if (!mt_map_get(&o->by_hash, h, sizeof(h), &c))
		return 0;
	for (; c >= 0; c = o->l->copies[c].next) {
		struct copy *cp = &o->l->copies[c];
		if (cp->seq > it->seq && cp->len == it->raw_len)
			cp->orig = (int32_t)o->j;
	}
	return 0;
}

/* The recorded resumptions' messages (s->resumes), from the copies l kept. */
static int load_resumes(struct rp_script *s, struct loader *l, struct mt_err *err)
{
	struct origins o = {s, l, {NULL, 0, 0, 0, 0, 0}, 0, 0};
	int r;

	if (!l->ncopies || !s->nresumes)
		return 0;
	mt_map_init(&o.by_hash, 0);
	for (size_t i = l->ncopies; i-- > 0;) {
		int64_t c = -1;
		mt_map_get(&o.by_hash, l->copies[i].h, sizeof(l->copies[i].h), &c);
		l->copies[i].next = (int32_t)c;
		mt_map_put(&o.by_hash, l->copies[i].h, sizeof(l->copies[i].h), (int64_t)i);
	}
	o.last = l->copies[l->ncopies - 1].seq;
	r = store_each_item_ex(s->st, s->session, STORE_ITEMS_LEAN, origin_of, &o, err);
	mt_map_release(&o.by_hash);
	if (r < 0)
		return -1;
	for (size_t i = 0, k = 0; i < l->ncopies; i++) {
		struct copy *cp = &l->copies[i];
		struct rp_resume *x;
		while (k < s->nresumes && s->resumes[k].exchange < cp->exchange)
			k++;
		if (k == s->nresumes || s->resumes[k].exchange != cp->exchange) {
			k = 0; /* (a copy on a stream no Last-Event-ID resumed: left out) */
			continue;
		}
		x = &s->resumes[k];
		x->copies++;
		if (cp->orig < 0)
			continue;
		x->orig = mt_realloc(x->orig, (x->n + 1) * sizeof(*x->orig));
		x->orig[x->n++] = cp->orig;
	}
	return 0;
}

int rp_load(struct store *st, int64_t session, const struct canon_ignore *ig, struct rp_script *s,
	    struct mt_err *err)
{
	struct loader l = {.s = s, .key = MT_BUF_INIT, .err = err};
	struct store_session_row row;
	int rc = -1, r;

	memset(s, 0, sizeof(*s));
	s->session = session;
	s->st = st;
	if (ig)
		s->ig = *ig;
	if (s->ig.n)
		s->ig_named = mt_calloc(s->ig.n, 1);
	mt_map_init(&s->names, 0);
	mt_map_init(&s->tokens, 0);
	mt_map_init(&l.open, 0);
	mt_map_init(&l.resent, 0);
	if (store_session_get(st, session, &row, err))
		goto out;
	s->transport = !row.transport                   ? RP_STDIO
		       : !strcmp(row.transport, "http") ? RP_HTTP
		       : !strcmp(row.transport, "sse")  ? RP_SSE
							: RP_STDIO;
	/* The counts the row keeps size the array, when they are plausible. */
	if (row.msgs_c2s >= 0 && row.msgs_s2c >= 0 && (uint64_t)row.msgs_c2s + (uint64_t)row.msgs_s2c > 0 &&
	    (uint64_t)row.msgs_c2s + (uint64_t)row.msgs_s2c <= LOAD_HINT_MAX) {
		l.cap = (size_t)(row.msgs_c2s + row.msgs_s2c);
		s->m = mt_calloc(l.cap, sizeof(*s->m));
	}
	store_session_row_release(&row);
	r = store_each_item_ex(st, session, STORE_ITEMS_LEAN, load_item, &l, err);
	if (r < 0)
		goto out;
	if (r > 0) {
		if (s->read_errors)
			*err = s->read_err;
		goto out;
	}
	if (s->n && s->n < l.cap)
		s->m = mt_realloc(s->m, s->n * sizeof(*s->m));
	for (size_t i = 0; i < s->n; i++)
		s->m[i].live = -1;
	if (s->transport != RP_STDIO && (load_routes(s, err) || load_resumes(s, &l, err)))
		goto out;
	rc = 0;
out:
	mt_map_release(&l.open);
	mt_map_release(&l.resent);
	free(l.copies);
	mt_buf_release(&l.key);
	if (rc)
		rp_release(s);
	return rc;
}

void rp_release(struct rp_script *s)
{
	for (size_t i = 0; i < s->nnames; i++)
		free(s->name[i]);
	free(s->name);
	mt_map_release(&s->names);
	mt_map_release(&s->tokens);
	free(s->keys);
	free(s->patterns);
	free(s->ig_named);
	free(s->m);
	free(s->via);
	free(s->on);
	free(s->blocks);
	free(s->block_next);
	for (size_t k = 0; k < s->nreplies; k++) {
		free(s->replies[k].method);
		free(s->replies[k].target);
		free(s->replies[k].headers_json);
		free(s->replies[k].body);
	}
	free(s->replies);
	for (size_t k = 0; k < s->nresumes; k++)
		free(s->resumes[k].orig);
	free(s->resumes);
	free(s->path);
	free(s->cache.off);
	mt_buf_release(&s->cache.buf);
	mt_buf_release(&s->cache.one_buf);
	mt_buf_release(&s->keybuf);
	memset(s, 0, sizeof(*s));
}

/* Add the paths (under path) of strings in v holding a marker, to set (keys). */
static void marker_paths(json_t *v, struct mt_buf *path, json_t *set);

void rp_marker_paths(json_t *v, const char *base, json_t *set)
{
	struct mt_buf path = MT_BUF_INIT;

	mt_buf_puts(&path, base);
	marker_paths(v, &path, set);
	mt_buf_release(&path);
}

static void marker_paths(json_t *v, struct mt_buf *path, json_t *set)
{
	size_t mark = path->len, i;
	const char *k;
	json_t *e;

	if (json_is_string(v)) {
		if (mt_redact_find_marker(json_string_value(v), json_string_length(v)))
			json_object_set_new(set, path->data ? path->data : "", json_true());
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, e)
		{
			mt_buf_printf(path, ".%s", k);
			marker_paths(e, path, set);
			path->len = mark;
			path->data[mark] = '\0';
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e)
		{
			mt_buf_printf(path, "[%zu]", i);
			marker_paths(e, path, set);
			path->len = mark;
			path->data[mark] = '\0';
		}
	}
}

/* Does p start with a path's root member (params, result, error)? */
static int path_root(const char *p)
{
	static const char *const roots[] = {"params", "result", "error"};

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(roots[i]);
		if (!strncmp(p, roots[i], n) && (p[n] == '\0' || p[n] == '.' || p[n] == '['))
			return 1;
	}
	return 0;
}

void rp_ignore_for(const struct rp_script *s, const char *method, json_t *params, struct canon_ignore *out)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const char **v;
	size_t n = 0;

	if (!s->ig.n) {
		out->paths = NULL;
		out->n = 0;
		return;
	}
	v = mt_calloc(s->ig.n, sizeof(*v));

	for (size_t i = 0; i < s->ig.n; i++) {
		const char *p = s->ig.paths[i], *eq = strchr(p, '=');
		/* NAME=PATH when PATH, not the whole, starts at params, result or error (a
		 * tool name may hold dots: github.search=result.x). */
		if (!eq || path_root(p) || !path_root(eq + 1)) {
			v[n++] = p;
			continue;
		}
		size_t len = (size_t)(eq - p);
		if ((method && strlen(method) == len && !strncmp(method, p, len)) ||
		    (name && strlen(name) == len && !strncmp(name, p, len)))
			v[n++] = eq + 1;
	}
	out->paths = v;
	out->n = n;
}

/* The NAME of an ignore path NAME=PATH (its length in *len), or NULL for a path. */
static const char *scope_of(const char *p, size_t *len)
{
	const char *eq = strchr(p, '=');

	if (!eq || path_root(p) || !path_root(eq + 1))
		return NULL;
	*len = (size_t)(eq - p);
	return p;
}

static void note_named(struct rp_script *s, const char *method, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name")), *scope;
	size_t len;

	for (size_t i = 0; i < s->ig.n; i++) {
		if (s->ig_named[i] || !(scope = scope_of(s->ig.paths[i], &len)))
			continue;
		s->ig_named[i] = (method && strlen(method) == len && !strncmp(method, scope, len)) ||
				 (name && strlen(name) == len && !strncmp(name, scope, len));
	}
}

int rp_ignore_check(const struct rp_script *s, struct mt_err *err)
{
	for (size_t i = 0; i < s->ig.n; i++) {
		const char *p = s->ig.paths[i], *eq = strchr(p, '=');
		size_t len;

		if (path_root(p))
			continue;
		if (!eq || !path_root(eq + 1))
			return mt_err_set(err,
					  "--ignore '%s': a path starts at params, result or error "
					  "(NAME=PATH scopes it to a method, tool or prompt)",
					  p);
		len = (size_t)(eq - p);
		if (!s->ig_named || !s->ig_named[i])
			return mt_err_set(err,
					  "--ignore '%s': the recorded client never called a method, "
					  "tool or prompt named '%.*s'",
					  p, (int)len, p);
	}
	return 0;
}

const char *rp_subject(json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));

	return name ? name : json_string_value(json_object_get(params, "uri"));
}

void rp_describe(struct rp_script *s, size_t i, struct mt_buf *out)
{
	const struct rp_msg *m = &s->m[i];
	const char *subject;
	json_t *j = NULL;

	mt_buf_reset(out);
	mt_buf_puts(out, m->method ? m->method : "?");
	if (m->kind == MT_REQUEST && !rp_json(s, i, &j, NULL) &&
	    (subject = rp_subject(json_object_get(j, "params")))) {
		mt_buf_putc(out, ' ');
		mt_buf_puts(out, subject);
	}
	json_decref(j);
}

json_t *rp_key_params(const char *method, json_t *params)
{
	return method && !strcmp(method, "initialize") ? NULL : params;
}

/* Is there a member, not null, at the dotted path under caps? */
static int declared(json_t *caps, const char *path)
{
	char name[64];
	const char *p = path, *dot;

	while (caps && *p) {
		size_t n;
		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(name))
			return 0;
		memcpy(name, p, n);
		name[n] = '\0';
		caps = json_object_get(caps, name);
		p += n + (dot != NULL);
	}
	return caps != NULL && !json_is_null(caps);
}

const char *rp_missing_capability(const char *method, json_t *params, json_t *caps)
{
	int task = json_object_get(params, "task") != NULL;

	if (!method)
		return NULL;
	if (!json_is_object(caps))
		caps = NULL;
	if (!strcmp(method, "sampling/createMessage")) {
		if (!declared(caps, "sampling"))
			return "sampling";
		if (task && !declared(caps, "tasks.requests.sampling.createMessage"))
			return "tasks.requests.sampling.createMessage";
		return NULL;
	}
	if (!strcmp(method, "roots/list"))
		return declared(caps, "roots") ? NULL : "roots";
	if (!strcmp(method, "elicitation/create")) {
		json_t *e = json_object_get(caps, "elicitation");
		const char *mode = json_string_value(json_object_get(params, "mode"));
		if (!e || json_is_null(e))
			return "elicitation";
		if (mode && !strcmp(mode, "url")) {
			if (!declared(e, "url"))
				return "elicitation.url";
		} else if (json_is_object(e) && json_object_size(e) && !declared(e, "form")) {
			/* {} is form mode only (2025-11-25 keeps it for older clients). */
			return "elicitation.form";
		}
		if (task && !declared(caps, "tasks.requests.elicitation.create"))
			return "tasks.requests.elicitation.create";
		return NULL;
	}
	return NULL;
}

int rp_idempotent(const char *method)
{
	size_t n;

	if (!method)
		return 0;
	if (!strcmp(method, "initialize") || !strcmp(method, "ping"))
		return 1;
	n = strlen(method);
	return n > 5 && !strcmp(method + n - 5, "/list");
}

/*
 * Does live text (ln bytes) fit recorded text r (rn bytes) that holds
 * redaction markers? Each marker stands for one byte or more of any kind; the
 * text between markers must be there as recorded, in order. Each piece is
 * taken at its leftmost place, which leaves the most room to the rest: linear
 * work, whatever the recording holds.
 */
static int fits_markers(const char *r, size_t rn, const char *l, size_t ln)
{
	const char *m = mt_redact_find_marker(r, rn), *last = m;
	size_t head, tail, pos, end;

	if (!m)
		return rn == ln && !memcmp(r, l, ln);
	for (const char *x = m; x;
	     x = mt_redact_find_marker(x + MT_REDACT_MARKER_LEN, rn - (size_t)(x + MT_REDACT_MARKER_LEN - r)))
		last = x;
	head = (size_t)(m - r);
	tail = rn - (size_t)(last + MT_REDACT_MARKER_LEN - r);
	if (head + tail >= ln || memcmp(r, l, head) || memcmp(r + rn - tail, l + ln - tail, tail))
		return 0;
	pos = head;
	end = ln - tail; /* the last marker ends here */
	/* The pieces between the first and the last marker, each after a byte or more. */
	for (const char *x = m; x != last;) {
		const char *from = x + MT_REDACT_MARKER_LEN;
		const char *next = mt_redact_find_marker(from, rn - (size_t)(from - r));
		size_t plen = (size_t)(next - from);
		if (pos + 1 + plen + 1 > end)
			return 0;
		const char *at = plen ? memmem(l + pos + 1, end - 1 - (pos + 1), from, plen) : l + pos + 1;
		if (!at)
			return 0;
		pos = (size_t)(at - l) + plen;
		x = next;
	}
	return pos + 1 <= end;
}

/*
 * Does live match recorded, where recorded's strings that hold markers are
 * patterns (a value that is a marker alone, any string or number: the tap
 * may have redacted a number)? Both are stripped as for a key.
 */
static int fits(json_t *rec, json_t *live, int depth)
{
	const char *k;
	json_t *x;
	size_t i;

	if (depth > 256)
		return json_equal(rec, live);
	if (json_is_string(rec) && mt_redact_find_marker(json_string_value(rec), json_string_length(rec))) {
		const char *r = json_string_value(rec);
		size_t rn = json_string_length(rec);
		if (mt_redact_is_marker(r, rn) && json_is_number(live))
			return 1;
		return json_is_string(live) &&
		       fits_markers(r, rn, json_string_value(live), json_string_length(live));
	}
	if (json_is_object(rec)) {
		if (!json_is_object(live) || json_object_size(rec) != json_object_size(live))
			return 0;
		json_object_foreach(rec, k, x) if (!json_object_get(live, k) ||
						   !fits(x, json_object_get(live, k), depth + 1)) return 0;
		return 1;
	}
	if (json_is_array(rec)) {
		if (!json_is_array(live) || json_array_size(rec) != json_array_size(live))
			return 0;
		json_array_foreach(rec, i, x) if (!fits(x, json_array_get(live, i), depth + 1)) return 0;
		return 1;
	}
	return json_equal(rec, live);
}

/*
 * The first unused recorded client message of this kind and method whose
 * params hold redacted values and fit the live params (see fits); with reuse,
 * the last such one when all are used. Each candidate is read from the store
 * and parsed; one that cannot be read fits nothing.
 */
static int64_t match_pattern(struct rp_script *s, enum mt_kind kind, const char *method, json_t *live,
			     const struct canon_ignore *ig, int reuse, int *reused)
{
	const char *name = rp_name(s, method);
	json_t *l = live && name ? canon_strip(live, "params", ig) : NULL;
	int64_t found = -1, last = -1;

	for (size_t p = 0; name && p < s->npatterns && found < 0; p++) {
		size_t i = (size_t)s->patterns[p];
		struct rp_msg *m = &s->m[i];
		json_t *j;
		if (m->kind != kind || m->method != name || (m->used && !reuse))
			continue; /* (a used one only counts as the last, for reuse) */
		if (rp_json(s, i, &j, NULL))
			continue;
		json_t *rp = rp_key_params(method, json_object_get(j, "params"));
		json_t *r = rp ? canon_strip(rp, "params", ig) : NULL;
		int ok = (!r && !l) || (r && l && fits(r, l, 0));
		json_decref(r);
		json_decref(j);
		if (!ok)
			continue;
		if (!m->used)
			found = (int64_t)i;
		last = (int64_t)i;
	}
	json_decref(l);
	if (found < 0 && reuse && last >= 0) {
		found = last;
		*reused = 1;
	}
	return found;
}

/*
 * The next unused client message with this key and kind. Keys hold the method,
 * so requests and notifications never share one; the kind check is a guard.
 * A recorded message that holds redacted values matches as a pattern.
 */
static int64_t match(struct rp_script *s, enum mt_kind kind, const char *method, json_t *params, int reuse,
		     int *reused, int probe)
{
	struct mt_buf key = s->keybuf; /* reused: no allocation per request */
	struct canon_ignore ig;
	struct rp_key *k;
	uint64_t h[2];
	int64_t found = -1;

	params = rp_key_params(method, params);
	rp_ignore_for(s, method, params, &ig);
	canon_key(method, params, &ig, &key);
	rp_hash(key.data, key.len, h);
	k = key_find(s, h);
	if (k && k->first >= 0 && s->m[k->first].kind == kind) {
		found = k->first;
		if (!probe)
			k->first = s->m[found].next_same;
	} else if (s->npatterns &&
		   (found = match_pattern(s, kind, method, params, &ig, reuse, reused)) >= 0) {
		/* (found) */
	} else if (reuse && k && s->m[k->last].kind == kind) {
		found = k->last;
		*reused = 1;
	}
	free((void *)ig.paths);
	if (found >= 0 && !probe)
		s->m[found].used = 1;
	s->keybuf = key;
	return found;
}

int64_t rp_match_request(struct rp_script *s, const char *method, json_t *params, int *reused)
{
	*reused = 0;
	return match(s, MT_REQUEST, method, params, rp_idempotent(method), reused, 0);
}

int rp_has_request(struct rp_script *s, const char *method, json_t *params)
{
	int reused = 0;

	return match(s, MT_REQUEST, method, params, rp_idempotent(method), &reused, 1) >= 0;
}

int64_t rp_match_notification(struct rp_script *s, const char *method, json_t *params)
{
	int reused = 0;

	return match(s, MT_NOTIFICATION, method, params, 0, &reused, 0);
}

int64_t rp_closest(struct rp_script *s, const char *method, json_t *params, json_t *diffs, json_t *was)
{
	const char *name = rp_name(s, method);
	int64_t best = -1;
	size_t best_n = 0;
	json_t *best_paths = NULL, *best_was = NULL;
	struct canon_ignore ig;

	if (!name)
		return -1;
	rp_ignore_for(s, method, params, &ig);
	for (size_t i = 0; i < s->n; i++) {
		const struct rp_msg *m = &s->m[i];
		json_t *j;
		if (!m->c2s || m->kind != MT_REQUEST || m->method != name || rp_json(s, i, &j, NULL))
			continue;
		json_t *paths = json_array(), *vals = json_array();
		size_t n =
			canon_diff_was(json_object_get(j, "params"), params, "params", &ig, 16, paths, vals);
		json_decref(j);
		if (best < 0 || n < best_n) {
			json_decref(best_paths);
			json_decref(best_was);
			best = (int64_t)i;
			best_n = n;
			best_paths = paths;
			best_was = vals;
		} else {
			json_decref(paths);
			json_decref(vals);
		}
	}
	free((void *)ig.paths);
	if (best_paths) {
		json_array_extend(diffs, best_paths);
		if (was)
			json_array_extend(was, best_was);
		json_decref(best_paths);
		json_decref(best_was);
	}
	return best;
}

void rp_splice(const char *p, size_t len, const struct mt_class *c, const char *id, size_t idn,
	       const char *token, size_t tokn, struct mt_buf *out)
{
	struct {
		struct mt_span at;
		const char *text;
		size_t n;
	} r[2];
	int n = 0;
	size_t done = 0;

	if (id && c->id.n)
		r[n].at = c->id, r[n].text = id, r[n++].n = idn;
	if (token && c->progress_token.n)
		r[n].at = c->progress_token, r[n].text = token, r[n++].n = tokn;
	if (n == 2 && r[1].at.p < r[0].at.p) {
		r[0].at = c->progress_token, r[0].text = token, r[0].n = tokn;
		r[1].at = c->id, r[1].text = id, r[1].n = idn;
	}
	for (int k = 0; k < n; k++) {
		size_t off = (size_t)(r[k].at.p - p);
		mt_buf_append(out, p + done, off - done);
		mt_buf_append(out, r[k].text, r[k].n);
		done = off + r[k].at.n;
	}
	mt_buf_append(out, p + done, len - done);
	mt_buf_putc(out, '\n');
}

int rp_render(struct rp_script *s, size_t i, const char *id, size_t idn, const char *token, size_t tokn,
	      struct mt_buf *out, struct mt_err *err)
{
	struct mt_class c;
	const char *p;
	size_t n;

	if (rp_read(s, i, &p, &n, &c, err))
		return -1;
	rp_splice(p, n, &c, id, idn, token, tokn, out);
	return 0;
}
