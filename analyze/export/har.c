/*
 * har.c - export -T har: one HAR 1.2 document (the HTTP Archive format of
 * browsers' developer tools and HTTP debuggers), an entry per HTTP exchange
 * of a session the HTTP tap recorded (or pcap import read), and for stdio an
 * entry per JSON-RPC request with its answer, per notification and per
 * message nothing answers (the convention in doc/export-formats.md).
 *
 * Written as it is read: an entry is written when its messages have all
 * come (an exchange row says how many name it) and every entry that started
 * before it has been written. The exchanges still open are held in memory;
 * an entry complete behind one still open (every POST behind a GET stream
 * that lasts the whole session) is written at once to a temporary file, and
 * copied from there to its place when the entries before it are out. With
 * -Y the exchange rows do not come: the messages that pass are kept (their
 * bytes in the temporary file) until the session's end, where the rows are
 * read here in order (store_each_exchange, redacted as the command redacts
 * what it gives) and each row whose messages passed makes an entry of them.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

#include "analyze/export/export.h"
#include "analyze/export/textstream.h"
#include "schema/message.h"

/*
 * An exchange that holds more than this many messages or bytes (a GET
 * stream open for the whole session) keeps them in files of its own, not in
 * memory, and its entry is written from them (struct big); at most BIG_MAX
 * at a time. MCPTAP_HAR_BIG_MESSAGES sets the first, for the tests.
 */
#define BIG_MESSAGES 4096
#define BIG_BYTES ((size_t)4 << 20)
#define BIG_MAX 32

/* A message of an entry, copied. */
struct hmsg {
	int64_t seq, t_ns, wall;
	int c2s;      /* 1: client to server */
	char channel; /* 'b' body, 's' SSE, 'o' stdio (or none) */
	char *kind, *method;
	char *sse_id, *sse_event;
	int replayed;
	int answer; /* a response or an error */
	int is_error;
	char *raw; /* NULL while in the spill file (-Y), at off */
	size_t raw_len;
	off_t off;
};

/* A copy of an exchange row (its strings owned). */
struct xrow {
	struct store_exchange_row r;
	char *endpoint; /* legacy SSE: its GET stream's endpoint event's data */
};

/*
 * The messages of a big exchange, in four temporary files: the request
 * body's bytes, the response body's text (SSE events as their lines), the
 * _sseEvents objects and the seqs, the last two as JSON separated by ','.
 */
struct big {
	FILE *post, *body, *events, *seqs;
	int64_t post_len, body_len, nevents, nseq;
	int64_t sent, last; /* as http_entry reckons them from the messages */
	int has_post, has_body;
	int post_bad, body_bad; /* not UTF-8 (found when the entry is written) */
	int *count;             /* struct har's nbig */
};

/* An entry being made, or made and waiting for the ones before it. */
struct pent {
	int64_t key;      /* its place: the exchange's seq, or its first message's */
	struct xrow *x;   /* an HTTP exchange; NULL: a message by the stdio convention */
	int64_t expect;   /* an exchange: messages still to come */
	int open_request; /* stdio: a request waiting for its answer */
	int pending;      /* -Y: the messages of exchange key, its row read at the end */
	int done;
	int64_t cancelled_by; /* stdio: the notifications/cancelled that named it */
	struct hmsg *m;
	size_t nm, cap;
	size_t held;     /* the bytes of m's messages */
	struct big *big; /* past BIG_MESSAGES or BIG_BYTES: the messages are there, not in m */
	/* Written to the spill file: where. */
	int spilled;
	off_t off;
	size_t len;
};

struct har {
	int first;       /* no entry written yet */
	int hold;        /* -Y: write at the session's end */
	struct pent **q; /* the entries not written, in key order from head */
	size_t head, n, cap;
	FILE *spill;
	off_t spill_end;
	json_t *pages; /* a page per session, written after the entries */
	struct mt_buf text, text2, b64, json;
	/* The session being written: */
	const char *scheme; /* http | https */
	const char *fallback_host;
	char *fallback_alloc;
	const char *transport;
	int64_t session;
	const char *endpoint; /* legacy SSE: the session's endpoint, until its GET stream is met */
	struct mt_buf red_id, red_cmd, red_up; /* the session's id, command and upstream, redacted */
	size_t big_messages;                   /* BIG_MESSAGES, or the tests' */
	int nbig;                              /* entries with a struct big */
	char nonce[17];                        /* in the placeholders of a big entry's texts */
	struct mt_buf scratch;
};

/*
 * The endpoint event's data when r is the first SSE GET stream of a legacy
 * session (which carried it), else NULL; asked of each row in order.
 */
static const char *endpoint_of(struct har *h, const struct store_exchange_row *r)
{
	const char *e = h->endpoint;

	if (!e || !r->method || strcmp(r->method, "GET") || !r->resp_type || strcmp(r->resp_type, "sse"))
		return NULL;
	h->endpoint = NULL;
	return e;
}

/* A copy of r with its endpoint (endpoint_of); NULL when out of memory. */
static struct xrow *xrow_copy(const struct store_exchange_row *r);
static void xrow_free(struct xrow *c);
static struct xrow *xrow_with(struct har *h, const struct store_exchange_row *r)
{
	const char *ep = endpoint_of(h, r);
	struct xrow *c = xrow_copy(r);

	if (c && ep && !(c->endpoint = strdup(ep))) {
		xrow_free(c);
		return NULL;
	}
	return c;
}

/* ---- small helpers ---- */

static void *xcalloc(size_t n, size_t s)
{
	return calloc(n ? n : 1, s);
}

static char *dupn(const void *p, size_t n)
{
	char *s;

	if (!p)
		return NULL;
	s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static char *dups(const char *s)
{
	return s ? dupn(s, strlen(s)) : NULL;
}

/* The bytes as a JSON string (not UTF-8: made so, U+FFFD for each bad byte). */
static json_t *jstrn(struct har *h, const void *p, size_t n)
{
	if (!p)
		return json_string("");
	if (mt_utf8_invalid(p, n) < 0)
		return json_stringn(p, n);
	mt_utf8_lossy(p, n, &h->text2);
	return json_stringn(h->text2.data ? h->text2.data : "", h->text2.len);
}

static json_t *jstr(struct har *h, const char *s)
{
	return jstrn(h, s, s ? strlen(s) : 0);
}

/* a - b and a + b without overflow (the file's clocks are not to be trusted): saturated. */
static int64_t sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* Milliseconds from nanoseconds, never negative. */
static double ms(int64_t ns)
{
	return ns > 0 ? (double)ns / 1e6 : 0.0;
}

static const char *status_text(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 203: return "Non-Authoritative Information";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "";
	}
}

/* ---- entries: made, freed ---- */

static void xrow_free(struct xrow *c)
{
	if (!c)
		return;
	free((char *)c->r.method);
	free((char *)c->r.target);
	free((char *)c->r.req_headers_json);
	free((void *)c->r.req_body);
	free((char *)c->r.resp_headers_json);
	free((char *)c->r.resp_type);
	free((void *)c->r.resp_body);
	free((char *)c->r.outcome);
	free((char *)c->r.error);
	free((char *)c->r.last_event_id);
	free(c->endpoint);
	free(c);
}

/* A copy of r; NULL when out of memory. */
static struct xrow *xrow_copy(const struct store_exchange_row *r)
{
	struct xrow *c = xcalloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->r = *r;
	c->r.method = dups(r->method);
	c->r.target = dups(r->target);
	c->r.req_headers_json = dups(r->req_headers_json);
	c->r.req_body = dupn(r->req_body, r->req_body_len);
	c->r.resp_headers_json = dups(r->resp_headers_json);
	c->r.resp_type = dups(r->resp_type);
	c->r.resp_body = dupn(r->resp_body, r->resp_body_len);
	c->r.outcome = dups(r->outcome);
	c->r.error = dups(r->error);
	c->r.last_event_id = dups(r->last_event_id);
	if ((r->method && !c->r.method) || (r->target && !c->r.target) ||
	    (r->req_headers_json && !c->r.req_headers_json) || (r->req_body && !c->r.req_body) ||
	    (r->resp_headers_json && !c->r.resp_headers_json) || (r->resp_type && !c->r.resp_type) ||
	    (r->resp_body && !c->r.resp_body) || (r->outcome && !c->r.outcome) || (r->error && !c->r.error) ||
	    (r->last_event_id && !c->r.last_event_id)) {
		xrow_free(c);
		return NULL;
	}
	return c;
}

static void msgs_free(struct pent *e)
{
	for (size_t i = 0; i < e->nm; i++) {
		struct hmsg *m = &e->m[i];
		free(m->kind);
		free(m->method);
		free(m->sse_id);
		free(m->sse_event);
		free(m->raw);
	}
	free(e->m);
	e->m = NULL;
	e->nm = e->cap = 0;
}

static void big_free(struct pent *e)
{
	struct big *b = e->big;

	if (!b)
		return;
	if (b->post)
		fclose(b->post);
	if (b->body)
		fclose(b->body);
	if (b->events)
		fclose(b->events);
	if (b->seqs)
		fclose(b->seqs);
	--*b->count;
	free(b);
	e->big = NULL;
}

static void pent_free(struct pent *e)
{
	if (!e)
		return;
	msgs_free(e);
	big_free(e);
	xrow_free(e->x);
	free(e);
}

static int spill_write(struct ex_sink *x, struct har *h, const void *p, size_t n, off_t *at);
static void sse_lines(struct mt_buf *b, const char *id, const char *event, const char *data, size_t n);
static json_t *sse_event_json(struct har *h, const char *id, const char *event, const char *data, size_t n,
			      int64_t wall, int64_t seq, int replayed);

/* The message of it, its strings borrowed from it. */
static void msg_view(struct hmsg *m, const struct store_item *it)
{
	memset(m, 0, sizeof(*m));
	m->seq = it->seq;
	m->t_ns = it->t_ns;
	m->wall = it->wall;
	m->c2s = it->dir && !strcmp(it->dir, "c2s");
	m->channel = !it->channel                   ? 'o'
		     : !strcmp(it->channel, "body") ? 'b'
		     : !strcmp(it->channel, "sse")  ? 's'
						    : 'o';
	m->answer = it->kind && (!strcmp(it->kind, "response") || !strcmp(it->kind, "error"));
	m->is_error = it->kind && !strcmp(it->kind, "error");
	m->replayed = it->replayed;
	m->kind = (char *)(it->kind ? it->kind : "");
	m->method = (char *)it->method;
	m->sse_id = (char *)it->sse_id;
	m->sse_event = (char *)it->sse_event;
	m->raw = (char *)(it->raw ? it->raw : "");
	m->raw_len = it->raw_len;
}

static int put_to(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -1 : 0;
}

/* m to the files of e's big entry. 0, or -1 with x->err set. */
static int big_add(struct ex_sink *x, struct har *h, struct pent *e, const struct hmsg *m)
{
	struct big *b = e->big;
	int rc;

	rc = fprintf(b->seqs, b->nseq ? ",%lld" : "%lld", (long long)m->seq) < 0;
	b->nseq++;
	if (m->t_ns > b->last)
		b->last = m->t_ns;
	if (m->c2s) {
		rc |= put_to(b->post, m->raw, m->raw_len);
		b->post_len += (int64_t)m->raw_len;
		b->has_post = 1;
		if (m->t_ns > b->sent)
			b->sent = m->t_ns;
	} else if (m->channel == 's') {
		json_t *ev = sse_event_json(h, m->sse_id, m->sse_event, m->raw, m->raw_len, m->wall, m->seq,
					    m->replayed);
		char *d = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
		json_decref(ev);
		mt_buf_reset(&h->scratch);
		sse_lines(&h->scratch, m->sse_id, m->sse_event, m->raw, m->raw_len);
		rc |= put_to(b->body, h->scratch.data, h->scratch.len);
		b->body_len += (int64_t)h->scratch.len;
		rc |= !d || (b->nevents && put_to(b->events, ",", 1)) || put_to(b->events, d, strlen(d));
		free(d);
		b->nevents++;
		b->has_body = 1;
	} else {
		rc |= put_to(b->body, m->raw, m->raw_len);
		b->body_len += (int64_t)m->raw_len;
		b->has_body = 1;
	}
	if (rc) {
		mt_err_set(&x->err, "a temporary file: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

/* e holds too much to keep in memory: its messages go to files (struct big). 0 or -1. */
static int to_big(struct ex_sink *x, struct har *h, struct pent *e)
{
	struct big *b = xcalloc(1, sizeof(*b));

	if (!b) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	b->count = &h->nbig;
	h->nbig++;
	e->big = b;
	if (!(b->post = mt_tmpfile(&x->err)) || !(b->body = mt_tmpfile(&x->err)) ||
	    !(b->events = mt_tmpfile(&x->err)) || !(b->seqs = mt_tmpfile(&x->err)))
		return -1; /* (e, in the queue, is freed with it) */
	b->sent = b->last = e->x->r.t_ns;
	for (size_t i = 0; i < e->nm; i++)
		if (big_add(x, h, e, &e->m[i]))
			return -1;
	msgs_free(e);
	e->held = 0;
	return 0;
}

/* Add the message to e (with -Y, its bytes to the spill file). 0, or -1 with x->err set. */
static int add_msg(struct ex_sink *x, struct har *h, struct pent *e, const struct store_item *it)
{
	struct hmsg *m, v;

	msg_view(&v, it);
	if (e->big)
		return big_add(x, h, e, &v);
	if (e->nm == e->cap) {
		size_t c = e->cap ? e->cap * 2 : 2;
		struct hmsg *nm = realloc(e->m, c * sizeof(*nm));
		if (!nm) {
			mt_err_set(&x->err, "out of memory");
			return -1;
		}
		e->m = nm;
		e->cap = c;
	}
	m = &e->m[e->nm];
	*m = v;
	m->raw = NULL;
	m->kind = dups(it->kind ? it->kind : "");
	m->method = dups(it->method);
	m->sse_id = dups(it->sse_id);
	m->sse_event = dups(it->sse_event);
	m->raw_len = it->raw_len;
	e->nm++;
	if (h->hold) {
		if (spill_write(x, h, it->raw, it->raw_len, &m->off))
			return -1;
	} else if (!(m->raw = dupn(it->raw ? it->raw : "", it->raw_len))) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	if (!m->kind || (it->method && !m->method) || (it->sse_id && !m->sse_id) ||
	    (it->sse_event && !m->sse_event)) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	e->held += it->raw_len;
	if (!h->hold && e->x && (e->nm > h->big_messages || e->held > BIG_BYTES) && h->nbig < BIG_MAX)
		return to_big(x, h, e);
	return 0;
}

/* ---- the queue of entries not written ---- */

/* The index in h->q of the entry whose key is key, or (size_t)-1. */
static size_t find(struct har *h, int64_t key)
{
	size_t lo = h->head, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->q[mid]->key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->n && h->q[lo]->key == key ? lo : (size_t)-1;
}

/* Put e in its place (by key). 0, or -1 (out of memory). */
static int enqueue(struct har *h, struct pent *e)
{
	size_t i;

	if (h->head == h->n)
		h->head = h->n = 0;
	if (h->n == h->cap) {
		if (h->head > 0) {
			memmove(h->q, h->q + h->head, (h->n - h->head) * sizeof(*h->q));
			h->n -= h->head;
			h->head = 0;
		}
		if (h->n == h->cap) {
			size_t c = h->cap ? h->cap * 2 : 64;
			struct pent **nq = realloc(h->q, c * sizeof(*nq));
			if (!nq)
				return -1;
			h->q = nq;
			h->cap = c;
		}
	}
	/* (Keys come in order but with -Y, where an exchange's entry is made
	 * when its first message passes.) */
	i = h->n;
	while (i > h->head && h->q[i - 1]->key > e->key)
		i--;
	memmove(h->q + i + 1, h->q + i, (h->n - i) * sizeof(*h->q));
	h->q[i] = e;
	h->n++;
	return 0;
}

/* ---- an entry as JSON ---- */

/* [{name, value}] of a stored header array; also the cookies of one header. */
static json_t *headers(struct har *h, const char *json, json_t *cookies, const char *cookie_header,
		       int set_cookie, const char **host, const char **ctype, const char **location)
{
	json_t *a = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	json_t *out = json_array(), *v;
	size_t i;

	if (json_is_array(a)) {
		json_array_foreach(a, i, v)
		{
			const char *name = json_string_value(json_array_get(v, 0));
			json_t *val = json_array_get(v, 1);
			json_t *o;
			if (!name || !json_is_string(val))
				continue;
			o = json_object();
			json_object_set_new(o, "name", jstr(h, name));
			json_object_set_new(o, "value",
					    jstrn(h, json_string_value(val), json_string_length(val)));
			json_array_append_new(out, o);
			if (host && !*host && !strcasecmp(name, "host"))
				*host = json_string_value(json_object_get(o, "value"));
			if (ctype && !*ctype && !strcasecmp(name, "content-type"))
				*ctype = json_string_value(json_object_get(o, "value"));
			if (location && !*location && !strcasecmp(name, "location"))
				*location = json_string_value(json_object_get(o, "value"));
			if (cookies && !strcasecmp(name, cookie_header)) {
				/* Cookie: a=b; c=d. Set-Cookie: a=b; Path=/ (the first pair). */
				const char *s = json_string_value(json_object_get(o, "value"));
				while (s && *s) {
					const char *end = strchr(s, ';'), *eq;
					size_t n;
					while (*s == ' ')
						s++;
					n = end ? (size_t)(end - s) : strlen(s);
					eq = memchr(s, '=', n);
					if (eq && eq > s) {
						json_t *c = json_object();
						json_object_set_new(c, "name",
								    json_stringn(s, (size_t)(eq - s)));
						json_object_set_new(
							c, "value",
							json_stringn(eq + 1, n - (size_t)(eq + 1 - s)));
						json_array_append_new(cookies, c);
					}
					if (set_cookie || !end)
						break;
					s = end + 1;
				}
			}
		}
	}
	json_decref(a);
	/* (The strings handed back live in out, which the caller keeps.) */
	return out;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* s's n bytes percent-decoded ('+' as a space) as a JSON string. */
static json_t *decoded(struct har *h, const char *s, size_t n)
{
	struct mt_buf b = {0};
	json_t *j;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n + 0 && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			mt_buf_putc(&b, (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2])));
			i += 2;
		} else {
			mt_buf_putc(&b, s[i] == '+' ? ' ' : s[i]);
		}
	}
	j = jstrn(h, b.data ? b.data : "", b.len);
	mt_buf_release(&b);
	return j;
}

/* [{name, value}] of a target's query. */
static json_t *query(struct har *h, const char *target)
{
	json_t *out = json_array();
	const char *q = target ? strchr(target, '?') : NULL;

	if (!q)
		return out;
	q++;
	while (*q && *q != '#') {
		size_t n = strcspn(q, "&#");
		const char *eq = memchr(q, '=', n);
		if (n) {
			json_t *o = json_object();
			size_t kn = eq ? (size_t)(eq - q) : n;
			json_object_set_new(o, "name", decoded(h, q, kn));
			json_object_set_new(o, "value",
					    eq ? decoded(h, eq + 1, n - kn - 1) : json_string(""));
			json_array_append_new(out, o);
		}
		q += n;
		if (*q == '&')
			q++;
	}
	return out;
}

/* A content or postData text: its bytes, or base64 (encoding) when they are not UTF-8. */
static void set_text(struct har *h, json_t *o, const char *key, const char *p, size_t n, int may_b64)
{
	if (mt_utf8_invalid(p, n) < 0) {
		json_object_set_new(o, key, json_stringn(p, n));
		return;
	}
	if (may_b64) {
		ts_base64((const unsigned char *)p, n, &h->b64);
		json_object_set_new(o, key, json_stringn(h->b64.data ? h->b64.data : "", h->b64.len));
		json_object_set_new(o, "encoding", json_string("base64"));
		return;
	}
	/* postData has no encoding: the text as UTF-8, the bytes in _base64 */
	json_object_set_new(o, key, jstrn(h, p, n));
	ts_base64((const unsigned char *)p, n, &h->b64);
	json_object_set_new(o, "_base64", json_stringn(h->b64.data ? h->b64.data : "", h->b64.len));
}

/* An SSE event's lines (id:, event:, data: a line each of the data's), into b. */
static void sse_lines(struct mt_buf *b, const char *id, const char *event, const char *data, size_t n)
{
	if (id)
		mt_buf_printf(b, "id: %s\n", id);
	if (event)
		mt_buf_printf(b, "event: %s\n", event);
	for (;;) {
		const char *nl = memchr(data, '\n', n);
		size_t k = nl ? (size_t)(nl - data) : n;
		size_t kk = k && data[k - 1] == '\r' ? k - 1 : k;
		mt_buf_puts(b, "data: ");
		mt_buf_append(b, data, kk);
		mt_buf_putc(b, '\n');
		if (!nl)
			break;
		data += k + 1;
		n -= k + 1;
	}
	mt_buf_putc(b, '\n');
}

static json_t *sse_event_json(struct har *h, const char *id, const char *event, const char *data, size_t n,
			      int64_t wall, int64_t seq, int replayed)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", id ? jstr(h, id) : json_null());
	json_object_set_new(o, "event", event ? jstr(h, event) : json_null());
	json_object_set_new(o, "data", jstrn(h, data, n));
	json_object_set_new(o, "time", json_real((double)wall / 1e6));
	if (seq >= 0)
		json_object_set_new(o, "seq", json_integer(seq));
	if (replayed)
		json_object_set_new(o, "replayed", json_true());
	return o;
}

static json_t *timings(double send, double wait, double receive)
{
	json_t *t = json_object();

	json_object_set_new(t, "blocked", json_integer(-1));
	json_object_set_new(t, "dns", json_integer(-1));
	json_object_set_new(t, "connect", json_integer(-1));
	json_object_set_new(t, "ssl", json_integer(-1));
	json_object_set_new(t, "send", json_real(send));
	json_object_set_new(t, "wait", json_real(wait));
	json_object_set_new(t, "receive", json_real(receive));
	return t;
}

/* ISO 8601 of a stored wall clock (a value no calendar holds: the epoch). */
static void iso_time(int64_t wall, char t[32])
{
	mt_format_wall(wall, t);
	if (*t == '?')
		mt_format_wall(0, t);
}

static void common_head(struct har *h, json_t *o, int64_t wall, double time)
{
	char t[32];

	iso_time(wall, t);
	json_object_set_new(o, "pageref", json_sprintf("session-%lld", (long long)h->session));
	json_object_set_new(o, "startedDateTime", json_string(t));
	json_object_set_new(o, "time", json_real(time));
}

/* The _sseEvents object of a legacy SSE stream's endpoint event. */
static json_t *endpoint_event(struct har *h, const struct xrow *x)
{
	const struct store_exchange_row *r = &x->r;
	int64_t at = r->first_byte_ns >= r->t_ns ? sub_sat(r->first_byte_ns, r->t_ns) : 0;

	return sse_event_json(h, NULL, "endpoint", x->endpoint, strlen(x->endpoint),
			      add_sat(r->wall, at / 1000), -1, 0);
}

/* A big entry's placeholder for what its files hold (what: a letter, write_big). */
static json_t *placeholder(struct har *h, char what)
{
	return json_sprintf("\x01%s%c", h->nonce, what);
}

/*
 * A big entry's text in o: placeholders for the bytes' JSON (what), their
 * U+FFFD-made text (lossy) and base64 (b64), as set_text sets them.
 */
static void set_text_big(struct har *h, json_t *o, int bad, int may_b64, char what, char lossy, char b64)
{
	if (!bad) {
		json_object_set_new(o, "text", placeholder(h, what));
	} else if (may_b64) {
		json_object_set_new(o, "text", placeholder(h, b64));
		json_object_set_new(o, "encoding", json_string("base64"));
	} else {
		json_object_set_new(o, "text", placeholder(h, lossy));
		json_object_set_new(o, "_base64", placeholder(h, b64));
	}
}

static json_t *seqs(const struct pent *e)
{
	json_t *a = json_array();

	for (size_t i = 0; i < e->nm; i++)
		json_array_append_new(a, json_integer(e->m[i].seq));
	return a;
}

/* The entry of an HTTP exchange. */
static json_t *http_entry(struct har *h, const struct pent *e)
{
	const struct store_exchange_row *r = &e->x->r;
	json_t *o = json_object(), *req = json_object(), *resp = json_object(), *content = json_object();
	json_t *rq_cookies = json_array(), *rs_cookies = json_array(), *rq_h, *rs_h, *events = NULL;
	const char *host = NULL, *rq_type = NULL, *rs_type = NULL, *location = NULL;
	const char *target = r->target ? r->target : "/";
	int64_t sent = r->t_ns;
	int64_t last = sent;
	double send, wait, receive;
	int has_post = 0, has_resp_text = 0, has_events;
	struct mt_buf *post = &h->text, *body = &h->json;
	const struct big *b = e->big;
	size_t post_len, body_len;

	rq_h = headers(h, r->req_headers_json, rq_cookies, "cookie", 0, &host, &rq_type, NULL);
	rs_h = headers(h, r->resp_headers_json, rs_cookies, "set-cookie", 1, NULL, &rs_type, &location);

	mt_buf_reset(post);
	mt_buf_reset(body);
	if (e->x->endpoint) {
		/* (Legacy SSE: the endpoint event, not a message, kept as the session's endpoint.) */
		sse_lines(body, NULL, "endpoint", e->x->endpoint, strlen(e->x->endpoint));
		events = json_array();
		json_array_append_new(events, endpoint_event(h, e->x));
		has_resp_text = 1;
	}
	if (b) {
		/* (Its messages are in files: write_big writes their texts.) */
		sent = b->sent;
		last = b->last;
		has_post = b->has_post;
		has_resp_text |= b->has_body;
	}
	for (size_t i = 0; i < e->nm; i++) {
		const struct hmsg *m = &e->m[i];
		if (m->t_ns > last)
			last = m->t_ns;
		if (m->c2s) {
			mt_buf_append(post, m->raw, m->raw_len);
			has_post = 1;
			if (m->t_ns > sent)
				sent = m->t_ns;
		} else if (m->channel == 's') {
			sse_lines(body, m->sse_id, m->sse_event, m->raw, m->raw_len);
			if (!events)
				events = json_array();
			json_array_append_new(events,
					      sse_event_json(h, m->sse_id, m->sse_event, m->raw, m->raw_len,
							     m->wall, m->seq, m->replayed));
			has_resp_text = 1;
		} else {
			mt_buf_append(body, m->raw, m->raw_len);
			has_resp_text = 1;
		}
	}
	if (r->req_body) {
		mt_buf_append(post, r->req_body, r->req_body_len);
		has_post = 1;
	}
	if (r->resp_body) {
		mt_buf_append(body, r->resp_body, r->resp_body_len);
		has_resp_text = 1;
	}
	post_len = post->len + (b ? (size_t)b->post_len : 0);
	body_len = body->len + (b ? (size_t)b->body_len : 0);
	has_events = events || (b && b->nevents);

	/* Timings: send up to the request body's last message, wait to the
	 * response's head, receive to the end (what is not known: 0). */
	if (r->first_byte_ns >= 0 && sent > r->first_byte_ns)
		sent = r->first_byte_ns;
	send = ms(sub_sat(sent, r->t_ns));
	if (r->first_byte_ns >= 0) {
		wait = ms(sub_sat(r->first_byte_ns, sent));
		receive = ms(sub_sat(r->end_ns >= 0 ? r->end_ns : last, r->first_byte_ns));
	} else {
		wait = ms(sub_sat(r->end_ns >= 0 ? r->end_ns : last, sent));
		receive = 0;
	}
	common_head(h, o, r->wall, send + wait + receive);

	/* The request. */
	json_object_set_new(req, "method", jstr(h, r->method ? r->method : "GET"));
	mt_buf_reset(&h->text2);
	if (!strncasecmp(target, "http://", 7) || !strncasecmp(target, "https://", 8)) {
		json_object_set_new(req, "url", jstr(h, target));
	} else {
		char *u = mt_asprintf("%s://%s%s%s", h->scheme, host ? host : h->fallback_host,
				      *target == '/' ? "" : "/", target);
		json_object_set_new(req, "url", jstr(h, u ? u : ""));
		free(u);
	}
	json_object_set_new(req, "httpVersion", json_string("HTTP/1.1"));
	json_object_set_new(req, "cookies", rq_cookies);
	json_object_set_new(req, "headers", rq_h); /* (after url: host lives in rq_h) */
	json_object_set_new(req, "queryString", query(h, target));
	if (has_post) {
		json_t *pd = json_object();
		json_object_set_new(pd, "mimeType", json_string(rq_type ? rq_type : "application/json"));
		if (b)
			set_text_big(h, pd, b->post_bad, 0, 'P', 'L', 'B');
		else
			set_text(h, pd, "text", post->data ? post->data : "", post->len, 0);
		json_object_set_new(req, "postData", pd);
	}
	json_object_set_new(req, "headersSize", json_integer(-1));
	json_object_set_new(req, "bodySize", json_integer(has_post ? (json_int_t)post_len : 0));
	json_object_set_new(o, "request", req);

	/* The response. */
	json_object_set_new(resp, "status", json_integer(r->status > 0 ? r->status : 0));
	json_object_set_new(resp, "statusText", json_string(status_text(r->status)));
	json_object_set_new(resp, "httpVersion", json_string(r->status > 0 ? "HTTP/1.1" : ""));
	json_object_set_new(resp, "cookies", rs_cookies);
	json_object_set_new(resp, "headers", rs_h);
	json_object_set_new(content, "size", json_integer(has_resp_text ? (json_int_t)body_len : 0));
	json_object_set_new(content, "mimeType",
			    json_string(rs_type                         ? rs_type
					: !r->resp_type                 ? ""
					: !strcmp(r->resp_type, "json") ? "application/json"
					: !strcmp(r->resp_type, "sse")  ? "text/event-stream"
									: ""));
	if (has_resp_text && b)
		set_text_big(h, content, b->body_bad, 1, 'T', 0, 'E');
	else if (has_resp_text)
		set_text(h, content, "text", body->data ? body->data : "", body->len, 1);
	json_object_set_new(resp, "content", content);
	json_object_set_new(resp, "redirectURL", location ? jstr(h, location) : json_string(""));
	json_object_set_new(resp, "headersSize", json_integer(-1));
	/* (An SSE stream is rebuilt from its events: its bytes on the wire are not known.) */
	json_object_set_new(resp, "bodySize",
			    json_integer(r->status <= 0  ? -1
					 : has_events    ? -1
					 : has_resp_text ? (json_int_t)body_len
							 : 0));
	json_object_set_new(o, "response", resp);
	json_object_set_new(o, "cache", json_object());
	json_object_set_new(o, "timings", timings(send, wait, receive));
	json_object_set_new(o, "connection", json_sprintf("%lld", (long long)r->conn));

	/* mcptap's own fields. */
	json_object_set_new(o, "_session", json_integer(h->session));
	json_object_set_new(o, "_seq", json_integer(r->seq));
	json_object_set_new(o, "_messageSeqs", b ? placeholder(h, 'S') : seqs(e));
	if (h->hold && r->messages > (int64_t)e->nm)
		json_object_set_new(o, "_messagesLeftOut", json_integer(r->messages - (int64_t)e->nm));
	json_object_set_new(o, "_outcome", r->outcome ? jstr(h, r->outcome) : json_string("open"));
	if (r->error)
		json_object_set_new(o, "_error", jstr(h, r->error));
	if (r->last_event_id)
		json_object_set_new(o, "_lastEventId", jstr(h, r->last_event_id));
	if (b && has_events) {
		json_decref(events); /* (the endpoint's, written again by write_big) */
		json_object_set_new(o, "_sseEvents", placeholder(h, 'V'));
	} else if (events) {
		json_object_set_new(o, "_sseEvents", events);
	}
	return o;
}

/* The path of a synthetic URL for the message: its method, else its kind. */
static void syn_url(struct har *h, const struct hmsg *m, struct mt_buf *b)
{
	const char *name = m->method && *m->method ? m->method : m->answer ? "response" : m->kind;

	mt_buf_reset(b);
	mt_buf_printf(b, "mcp+%s://session-%lld/", h->transport, (long long)h->session);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~/", *p))
			mt_buf_putc(b, (char)*p);
		else
			mt_buf_printf(b, "%%%02X", *p);
	}
}

/* The entry of messages by the stdio convention: a message, and its answer when it is a request. */
static json_t *syn_entry(struct har *h, const struct pent *e)
{
	const struct hmsg *q = &e->m[0], *a = e->nm > 1 ? &e->m[1] : NULL;
	json_t *o = json_object(), *req = json_object(), *resp = json_object(), *content = json_object();
	json_t *pd = json_object();
	double wait = a ? ms(sub_sat(a->t_ns, q->t_ns)) : 0;
	int status;
	const char *outcome;

	if (a) {
		status = a->is_error ? 500 : 200;
		outcome = a->is_error ? "error" : "result";
	} else if (e->open_request) {
		status = 0;
		outcome = e->cancelled_by ? "cancelled" : "unanswered";
	} else {
		status = 202;
		outcome = !strcmp(q->kind, "notification") ? "notification"
			  : q->answer                      ? "unpaired"
							   : q->kind;
	}
	common_head(h, o, q->wall, wait);
	json_object_set_new(req, "method", json_string("POST"));
	syn_url(h, q, &h->text);
	json_object_set_new(req, "url", jstrn(h, h->text.data, h->text.len));
	json_object_set_new(req, "httpVersion", json_string(h->transport));
	json_object_set_new(req, "cookies", json_array());
	json_object_set_new(req, "headers", json_array());
	json_object_set_new(req, "queryString", json_array());
	json_object_set_new(pd, "mimeType", json_string("application/json"));
	set_text(h, pd, "text", q->raw, q->raw_len, 0);
	json_object_set_new(req, "postData", pd);
	json_object_set_new(req, "headersSize", json_integer(-1));
	json_object_set_new(req, "bodySize", json_integer((json_int_t)q->raw_len));
	json_object_set_new(o, "request", req);

	json_object_set_new(resp, "status", json_integer(status));
	json_object_set_new(resp, "statusText",
			    json_string(status == 200   ? "OK"
					: status == 500 ? "JSON-RPC error"
					: status == 202 ? "Accepted"
							: ""));
	json_object_set_new(resp, "httpVersion", json_string(status ? h->transport : ""));
	json_object_set_new(resp, "cookies", json_array());
	json_object_set_new(resp, "headers", json_array());
	json_object_set_new(content, "size", json_integer(a ? (json_int_t)a->raw_len : 0));
	json_object_set_new(content, "mimeType", json_string(a ? "application/json" : ""));
	if (a)
		set_text(h, content, "text", a->raw, a->raw_len, 1);
	json_object_set_new(resp, "content", content);
	json_object_set_new(resp, "redirectURL", json_string(""));
	json_object_set_new(resp, "headersSize", json_integer(-1));
	json_object_set_new(resp, "bodySize", json_integer(a ? (json_int_t)a->raw_len : status ? 0 : -1));
	json_object_set_new(o, "response", resp);
	json_object_set_new(o, "cache", json_object());
	json_object_set_new(o, "timings", timings(0, wait, 0));

	json_object_set_new(o, "_session", json_integer(h->session));
	json_object_set_new(o, "_seq", json_integer(q->seq));
	json_object_set_new(o, "_messageSeqs", seqs(e));
	json_object_set_new(o, "_direction", json_string(q->c2s ? "c2s" : "s2c"));
	json_object_set_new(o, "_outcome", json_string(outcome));
	if (e->cancelled_by)
		json_object_set_new(o, "_cancelledBy", json_integer(e->cancelled_by));
	return o;
}

/* ---- writing ---- */

static int write_all(struct ex_sink *x, FILE *f, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, f) != n) {
		mt_err_set(&x->err, "%s", strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

/* n bytes to the end of the spill file, made when first needed; where in *at. 0 or -1. */
static int spill_write(struct ex_sink *x, struct har *h, const void *p, size_t n, off_t *at)
{
	if (!h->spill && !(h->spill = mt_tmpfile(&x->err)))
		return -1;
	if (fseeko(h->spill, h->spill_end, SEEK_SET) || (n && fwrite(p, 1, n, h->spill) != n)) {
		mt_err_set(&x->err, "a temporary file: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	*at = h->spill_end;
	h->spill_end += (off_t)n;
	return 0;
}

/* n bytes at off in the spill file, to out (a FILE) or into buf (malloc'd). 0 or -1. */
static int spill_read(struct ex_sink *x, struct har *h, off_t off, size_t n, FILE *out, char **buf)
{
	char chunk[65536];

	if (buf && !(*buf = malloc(n + 1))) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	if (fflush(h->spill) || fseeko(h->spill, off, SEEK_SET)) {
		mt_err_set(&x->err, "a temporary file: %s", strerror(errno));
		return -1;
	}
	for (size_t got = 0; got < n;) {
		size_t want = n - got, k;
		if (!buf && want > sizeof(chunk))
			want = sizeof(chunk);
		k = fread(buf ? *buf + got : chunk, 1, want, h->spill);
		if (!k) {
			mt_err_set(&x->err, "a temporary file: %s",
				   ferror(h->spill) ? strerror(errno) : "cut short");
			return -1;
		}
		if (!buf && write_all(x, out, chunk, k))
			return -1;
		got += k;
	}
	if (buf)
		(*buf)[n] = '\0';
	return 0;
}

/* -Y: the bytes of e's messages, back from the spill file. 0 or -1. */
static int load_raws(struct ex_sink *x, struct har *h, struct pent *e)
{
	for (size_t i = 0; i < e->nm; i++)
		if (!e->m[i].raw && spill_read(x, h, e->m[i].off, e->m[i].raw_len, NULL, &e->m[i].raw))
			return -1;
	return 0;
}

/* e's JSON (no separator), a malloc'd string, or NULL. */
static char *entry_text(struct har *h, const struct pent *e)
{
	json_t *o = e->x ? http_entry(h, e) : syn_entry(h, e);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;

	json_decref(o);
	return s;
}

static int put_sep(struct ex_sink *x, struct har *h)
{
	const char *sep = h->first ? "\n" : ",\n";

	h->first = 0;
	return write_all(x, x->out, sep, strlen(sep));
}

/* f from its start to ts (or, ts NULL, copied to out). 0, or -1 (errno). */
static int copy_file(FILE *f, struct textstream *ts, FILE *out)
{
	char chunk[65536];
	size_t k;

	if (fflush(f) || fseeko(f, 0, SEEK_SET))
		return -1;
	while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (ts ? ts_feed(ts, chunk, k) : put_to(out, chunk, k))
			return -1;
	return ferror(f) ? -1 : 0;
}

/* A big entry's request body (post) or response body, into ts as one stream. 0 or -1. */
static int big_stream(struct har *h, const struct pent *e, int post, struct textstream *ts)
{
	const struct store_exchange_row *r = &e->x->r;

	if (post)
		return copy_file(e->big->post, ts, NULL) ||
				       (r->req_body && ts_feed(ts, r->req_body, r->req_body_len))
			       ? -1
			       : 0;
	if (e->x->endpoint) {
		mt_buf_reset(&h->scratch);
		sse_lines(&h->scratch, NULL, "endpoint", e->x->endpoint, strlen(e->x->endpoint));
		if (ts_feed(ts, h->scratch.data, h->scratch.len))
			return -1;
	}
	return copy_file(e->big->body, ts, NULL) ||
			       (r->resp_body && ts_feed(ts, r->resp_body, r->resp_body_len))
		       ? -1
		       : 0;
}

/* A big entry's stream, as mode writes it to out (TS_CHECK: *bad says if it is not UTF-8). */
static int big_text(struct har *h, const struct pent *e, int post, enum ts_mode mode, FILE *out, int *bad)
{
	struct textstream *ts = malloc(sizeof(*ts));
	int rc;

	if (!ts)
		return -1;
	ts_init(ts, mode, out);
	rc = big_stream(h, e, post, ts) || ts_end(ts) ? -1 : 0;
	if (bad)
		*bad = ts->bad;
	ts_release(ts);
	free(ts);
	return rc;
}

/* What a big entry's placeholder what stands for, to out. 0 or -1. */
static int big_part(struct har *h, const struct pent *e, char what, FILE *out)
{
	switch (what) {
	case 'S': return put_to(out, "[", 1) || copy_file(e->big->seqs, NULL, out) || put_to(out, "]", 1);
	case 'V':
		if (put_to(out, "[", 1))
			return -1;
		if (e->x->endpoint) {
			json_t *ev = endpoint_event(h, e->x);
			char *d = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
			int rc = !d || put_to(out, d, strlen(d)) || (e->big->nevents && put_to(out, ",", 1));
			json_decref(ev);
			free(d);
			if (rc)
				return -1;
		}
		return copy_file(e->big->events, NULL, out) || put_to(out, "]", 1);
	}
	return put_to(out, "\"", 1) ||
	       big_text(h, e, strchr("PLB", what) != NULL,
			what == 'P' || what == 'T' ? TS_JSON
			: what == 'L'              ? TS_LOSSY
						   : TS_BASE64,
			out, NULL) ||
	       put_to(out, "\"", 1);
}

/* A big entry, to out: its JSON with each placeholder's part written in its place. 0 or -1. */
static int write_big(struct ex_sink *x, struct har *h, struct pent *e, FILE *out)
{
	char pat[32], *s;
	const char *p, *q;
	size_t pl;
	int rc = 0;

	errno = 0;
	if (big_text(h, e, 1, TS_CHECK, NULL, &e->big->post_bad) ||
	    big_text(h, e, 0, TS_CHECK, NULL, &e->big->body_bad))
		goto fail;
	if (!(s = entry_text(h, e))) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	/* (Jansson writes the placeholders' U+0001 so; nothing else in s starts so: the nonce.) */
	pl = (size_t)snprintf(pat, sizeof(pat), "\"\\u0001%s", h->nonce);
	for (p = s; !rc && (q = strstr(p, pat)); p = q + pl + 2)
		rc = put_to(out, p, (size_t)(q - p)) || big_part(h, e, q[pl], out);
	rc = rc || put_to(out, p, strlen(p));
	free(s);
	if (!rc)
		return 0;
fail:
	mt_err_set(&x->err, "%s", strerror(errno ? errno : EIO));
	return -1;
}

/* Write e where it goes: out when it is next, else the spill file. */
static int emit(struct ex_sink *x, struct har *h, struct pent *e, int to_out)
{
	char *s;
	size_t n;
	int rc;

	if (to_out && e->spilled)
		return put_sep(x, h) || spill_read(x, h, e->off, e->len, x->out, NULL) ? -1 : 0;
	if (e->big && to_out)
		return put_sep(x, h) || write_big(x, h, e, x->out) ? -1 : 0;
	if (e->big) {
		if (spill_write(x, h, "", 0, &e->off) || write_big(x, h, e, h->spill))
			return -1;
		h->spill_end = ftello(h->spill);
		e->len = (size_t)(h->spill_end - e->off);
		e->spilled = 1;
		return 0;
	}
	if (load_raws(x, h, e))
		return -1;
	if (!(s = entry_text(h, e))) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	n = strlen(s);
	if (to_out) {
		rc = put_sep(x, h) || write_all(x, x->out, s, n);
	} else {
		rc = spill_write(x, h, s, n, &e->off);
		e->spilled = 1;
		e->len = n;
	}
	free(s);
	return rc ? -1 : 0;
}

/* Write the entries that are done at the head; spill the done ones behind an open one. */
static int flush(struct ex_sink *x, struct har *h)
{
	while (h->head < h->n && h->q[h->head]->done) {
		struct pent *e = h->q[h->head];
		if (emit(x, h, e, 1))
			return -1;
		h->q[h->head++] = NULL;
		pent_free(e);
	}
	if (h->head == h->n) {
		h->head = h->n = 0;
		h->spill_end = 0; /* (nothing in it is wanted any more) */
	}
	return 0;
}

/* e is done: written now when it is next, else kept aside in the spill file. */
static int finish(struct ex_sink *x, struct har *h, struct pent *e)
{
	e->done = 1;
	if (h->hold)
		return 0;
	if (h->q[h->head] == e)
		return flush(x, h);
	if (emit(x, h, e, 0))
		return -1;
	msgs_free(e);
	big_free(e);
	xrow_free(e->x);
	e->x = NULL;
	return 0;
}

/* ---- the hooks ---- */

static int har_begin(struct ex_sink *x)
{
	static const char head[] = "{\"log\":{\"version\":\"1.2\",\"creator\":{\"name\":\"mcptap\","
				   "\"version\":\"" MCPTAP_VERSION "\"},\"entries\":[";
	struct har *h = xcalloc(1, sizeof(*h));
	unsigned char rnd[8];
	const char *env;

	if (!h || !(h->pages = json_array())) {
		free(h);
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	h->first = 1;
	x->priv = h;
	h->big_messages = BIG_MESSAGES;
	if ((env = getenv("MCPTAP_HAR_BIG_MESSAGES")) && *env)
		h->big_messages = (size_t)strtoul(env, NULL, 10);
	if (getentropy(rnd, sizeof(rnd))) {
		mt_err_set(&x->err, "no random bytes: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(h->nonce + 2 * i, 3, "%02x", rnd[i]);
	return write_all(x, x->out, head, sizeof(head) - 1);
}

/* The authority of a URL (scheme://AUTHORITY/...), into a new string; NULL when none. */
static char *authority(const char *url)
{
	const char *p = url ? strstr(url, "://") : NULL;

	if (!p)
		return NULL;
	p += 3;
	return dupn(p, strcspn(p, "/?#"));
}

static int har_session(struct ex_sink *x)
{
	struct har *h = x->priv;
	const struct store_session_row *s = x->session;
	json_t *page;
	char t[32], *title;

	h->session = s->id;
	h->transport = s->transport && *s->transport ? s->transport : "stdio";
	/* The tap listens on plain HTTP; an import's server is named by its address. */
	h->scheme = s->upstream && !strncasecmp(s->upstream, "https:", 6) && !strcmp(h->transport, "pcap")
			    ? "https"
			    : "http";
	free(h->fallback_alloc);
	h->fallback_alloc = authority(s->upstream);
	h->fallback_host = h->fallback_alloc && *h->fallback_alloc ? h->fallback_alloc : "localhost";
	h->hold = x->filtered;
	/* (The session's id is a legacy session's endpoint: a target, redacted as one.) */
	const char *sid = ex_redact_target(x, s->http_session_id, &h->red_id);
	h->endpoint = !strcmp(h->transport, "sse") ? sid : NULL;

	iso_time(s->started_wall, t);
	if (s->upstream)
		title = mt_asprintf("session %lld: %s %s", (long long)s->id, h->transport,
				    ex_redact_target(x, s->upstream, &h->red_up));
	else
		title = mt_asprintf("session %lld: %s %s", (long long)s->id, h->transport,
				    s->command ? ex_redact_text(x, s->command, &h->red_cmd) : "");
	page = json_object();
	json_object_set_new(page, "startedDateTime", json_string(t));
	json_object_set_new(page, "id", json_sprintf("session-%lld", (long long)s->id));
	json_object_set_new(page, "title", jstr(h, title ? title : ""));
	json_object_set_new(page, "pageTimings", json_object());
	json_object_set_new(page, "_transport", jstr(h, h->transport));
	if (sid)
		json_object_set_new(page, "_httpSessionId", jstr(h, sid));
	if (s->client_name)
		json_object_set_new(
			page, "_client",
			json_sprintf("%s %s", s->client_name, s->client_version ? s->client_version : ""));
	if (s->server_name)
		json_object_set_new(
			page, "_server",
			json_sprintf("%s %s", s->server_name, s->server_version ? s->server_version : ""));
	if (s->protocol_version)
		json_object_set_new(page, "_protocolVersion", jstr(h, s->protocol_version));
	free(title);
	json_array_append_new(h->pages, page);
	return 0;
}

static struct pent *new_pent(int64_t key)
{
	struct pent *e = xcalloc(1, sizeof(*e));

	if (e)
		e->key = key;
	return e;
}

/* A message no exchange holds: by the stdio convention. */
static int syn_message(struct ex_sink *x, struct har *h, const struct store_item *it)
{
	struct pent *e;
	int answer = !strcmp(it->kind, "response") || !strcmp(it->kind, "error");

	if (answer && it->request_seq > 0) {
		size_t i = find(h, it->request_seq);
		if (i != (size_t)-1 && !h->q[i]->x && h->q[i]->open_request && !h->q[i]->done) {
			e = h->q[i];
			if (add_msg(x, h, e, it))
				return -1;
			e->open_request = 0;
			return finish(x, h, e);
		}
	}
	if (!strcmp(it->kind, "notification") && it->cancels_seq > 0 && it->method &&
	    !strcmp(it->method, "notifications/cancelled")) {
		size_t i = find(h, it->cancels_seq);
		if (i != (size_t)-1 && !h->q[i]->x && h->q[i]->open_request && !h->q[i]->cancelled_by)
			h->q[i]->cancelled_by = it->seq;
	}
	if (!(e = new_pent(it->seq)) || enqueue(h, e)) {
		free(e);
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	if (add_msg(x, h, e, it))
		return -1; /* (e is in the queue: released with it) */
	if (!strcmp(it->kind, "request")) {
		e->open_request = 1;
		return 0;
	}
	return finish(x, h, e);
}

static int har_item(struct ex_sink *x, const struct store_item *it)
{
	struct har *h = x->priv;
	struct pent *e;

	if (it->type == STORE_ITEM_EXCHANGE) {
		if (!(e = new_pent(it->seq)) || !(e->x = xrow_with(h, it->x)) || enqueue(h, e)) {
			pent_free(e);
			mt_err_set(&x->err, "out of memory");
			return -1;
		}
		e->expect = it->x->messages;
		return e->expect <= 0 ? finish(x, h, e) : 0;
	}
	if (it->type != STORE_ITEM_MESSAGE)
		return 0; /* (stderr lines and gaps: no HTTP in them) */
	if (it->exchange > 0 && h->hold) {
		/* (-Y: the exchange's row is read at the session's end.) */
		size_t i = find(h, it->exchange);
		if (i == (size_t)-1) {
			if (!(e = new_pent(it->exchange)) || enqueue(h, e)) {
				free(e);
				mt_err_set(&x->err, "out of memory");
				return -1;
			}
			e->pending = 1;
		} else if (!(e = h->q[i])->pending) {
			return syn_message(x, h, it);
		}
		return add_msg(x, h, e, it);
	} else if (it->exchange > 0) {
		size_t i = find(h, it->exchange);
		if (i != (size_t)-1 && h->q[i]->x && !h->q[i]->done) {
			e = h->q[i];
			if (add_msg(x, h, e, it))
				return -1;
			return --e->expect <= 0 ? finish(x, h, e) : 0;
		}
	}
	return syn_message(x, h, it);
}

/*
 * -Y: write the entries waiting before key (all: INT64_MAX). An exchange's
 * messages whose row was not found (a message naming an exchange the file
 * does not hold) are written by the stdio convention, an entry each.
 */
static int write_before(struct ex_sink *x, struct har *h, int64_t key)
{
	while (h->head < h->n && h->q[h->head]->key < key) {
		struct pent *e = h->q[h->head];
		int rc = 0;
		if (e->pending) {
			for (size_t i = 0; i < e->nm && !rc; i++) {
				struct pent one;
				memset(&one, 0, sizeof(one));
				one.key = e->m[i].seq;
				one.m = &e->m[i];
				one.nm = 1;
				rc = emit(x, h, &one, 1);
			}
		} else {
			rc = emit(x, h, e, 1);
		}
		if (rc)
			return -1;
		h->q[h->head++] = NULL;
		pent_free(e);
	}
	return 0;
}

/* -Y: an exchange row, in seq order: the entry of its messages that passed, in its place. */
static int held_row(const struct store_exchange_row *r, void *ctx)
{
	struct ex_sink *x = ctx;
	struct har *h = x->priv;
	struct store_item it;
	const struct store_item *red;
	struct pent *e;
	const char *ep = endpoint_of(h, r);

	if (write_before(x, h, r->seq))
		return 1;
	if (h->head == h->n || h->q[h->head]->key != r->seq || !h->q[h->head]->pending)
		return 0; /* (none of its messages passed) */
	e = h->q[h->head];
	/* (Redacted as the command redacts the items it gives.) */
	memset(&it, 0, sizeof(it));
	it.type = STORE_ITEM_EXCHANGE;
	it.seq = r->seq;
	it.t_ns = r->t_ns;
	it.wall = r->wall;
	it.kind = "exchange";
	it.raw = "";
	it.x = r;
	red = ex_redact_item(x, &it);
	if (!(e->x = xrow_copy(red->x)) || (ep && !(e->x->endpoint = strdup(ep)))) {
		mt_err_set(&x->err, "out of memory");
		return 1;
	}
	e->pending = 0;
	if (emit(x, h, e, 1))
		return 1;
	h->q[h->head++] = NULL;
	pent_free(e);
	return 0;
}

static int har_session_end(struct ex_sink *x)
{
	struct har *h = x->priv;
	int rc;

	/* What is still open stays so: an exchange that never ended, a request never answered. */
	for (size_t i = h->head; i < h->n; i++)
		h->q[i]->done = 1;
	if (h->hold) {
		struct mt_err err = {"", 0};
		rc = store_each_exchange(x->st, h->session, held_row, x, &err);
		if (rc < 0)
			mt_err_set(&x->err, "cannot read the exchanges: %s", err.msg);
		if (rc || write_before(x, h, INT64_MAX))
			return -1;
	}
	rc = flush(x, h);
	h->spill_end = 0;
	return rc;
}

static int har_end(struct ex_sink *x)
{
	struct har *h = x->priv;
	char *pages = json_dumps(h->pages, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc;

	if (!pages) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	rc = write_all(x, x->out, "\n],\"pages\":", 11) || write_all(x, x->out, pages, strlen(pages)) ||
	     write_all(x, x->out, "}}\n", 3);
	free(pages);
	return rc ? -1 : 0;
}

static void har_release(struct ex_sink *x)
{
	struct har *h = x->priv;

	if (!h)
		return;
	for (size_t i = h->head; i < h->n; i++)
		pent_free(h->q[i]);
	free(h->q);
	if (h->spill)
		fclose(h->spill);
	json_decref(h->pages);
	free(h->fallback_alloc);
	mt_buf_release(&h->text);
	mt_buf_release(&h->text2);
	mt_buf_release(&h->b64);
	mt_buf_release(&h->json);
	mt_buf_release(&h->red_id);
	mt_buf_release(&h->red_cmd);
	mt_buf_release(&h->red_up);
	mt_buf_release(&h->scratch);
	free(h);
	x->priv = NULL;
}

const struct ex_format ex_har = {
	.name = "har",
	.what = "one HAR 1.2 document: an entry per HTTP exchange (stdio: per request "
		"and its answer), for browsers' and HTTP tools' HAR viewers",
	.flags = STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES,
	.filter = STORE_FILTER_PAIRS,
	.begin = har_begin,
	.session = har_session,
	.item = har_item,
	.session_end = har_session_end,
	.end = har_end,
	.release = har_release,
};
