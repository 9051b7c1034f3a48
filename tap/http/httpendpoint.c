/*
 * httpendpoint.c - a small HTTP/1.1 server endpoint (see httpendpoint.h).
 *
 * Each connection's input stays in its bufferevent until the request it
 * holds is whole: the reader is given a copy of the bytes as they come
 * (c2s_fed counts them), and the raw head is looked at where it lies
 * (c2s_base is the stream offset of the input's first byte). Once the
 * reader says a request whole, its bytes are drained, it is copied out and
 * handed to the application; the reader is given nothing more until its
 * reply has ended. Every call into the reader is in one place below ("the
 * reader"), so that its API can change without touching the rest.
 */
#include "tap/http/httpendpoint.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>

#include "schema/util.h"
#include "tap/http/httpsess.h"
#include "tap/http/httpstream.h"

/* Chunked framing allowed besides a body's bytes (size lines, extensions, trailers). */
#define CHUNK_SLACK(n) ((n) / 8 + 64 * 1024)

struct hconn;

struct hep_req {
	struct hconn *c;
	struct hep_req *next;
	char *method, *target; /* (point into text) */
	struct mt_hdr *h;      /* (owned; names and values point into text) */
	size_t nh;
	char *body; /* owned, NUL-terminated */
	size_t body_len;
	char *text; /* owned */
	int minor;
	int head;       /* a HEAD: no body in its reply */
	int keep;       /* the connection stays open after its reply */
	int dispatched; /* given to the application */
	int streaming;  /* hep_stream_start was called */
	int chunked;    /* its stream is chunked */
	int full;       /* hep_full said 1: writable is owed */
	void *arg;
};

struct hconn {
	struct hep *e;
	struct hconn *next, *prev;
	struct hx_conn_id tc; /* the reader's view of it */
	struct hx_stream *hs; /* the reader's state; NULL once closed */
	struct bufferevent *bev;
	char addr[80];
	uint64_t c2s_base; /* stream offset of the input's first byte */
	uint64_t c2s_fed;  /* bytes given to the reader */
	uint64_t drain_to; /* the end of the last request said whole */
	int head_seen;     /* the request being read has its head whole */
	size_t head_len;
	int minor;                  /* the last head's version: a refusal's */
	struct hep_req *q, *q_tail; /* requests whole: the first is answered */
	int refusing;               /* a refusal is owed: the reader is given nothing more */
	int refuse_status;          /* 0: close without an answer */
	char refuse_why[240];
	int closing; /* what is owed drains, then it is freed */
	int eof;     /* the client closed its side: no request is taken */
	struct event *head_timer, *next_ev, *free_ev;
};

struct hep {
	struct hep_opts o;
	struct hep_handler h;
	struct event_base *base;
	struct evconnlistener *lev;
	struct hln_watch *watch;
	struct hconn *conns;
	uint64_t next_num;
	struct hx_reader *hx;
};

void hep_opts_default(struct hep_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_body = 16u << 20;
	o->max_headers = 64 * 1024;
	o->client_timeout_ms = 60000;
	o->who = "endpoint";
}

static int64_t now_us(void)
{
	return mt_mono_ns() / 1000;
}

static void conn_close(struct hconn *c);
static void refuse(struct hconn *c, int status, const char *why);
static int head_check(struct hconn *c, const char *method, const char *target, const struct mt_hdr *h,
		      size_t nh, int major, int minor, uint64_t start, int chunked, uint64_t content_length);
static void request_whole(struct hconn *c, const char *method, const char *target, const struct mt_hdr *h,
			  size_t nh, int minor, const char *body, size_t body_len, uint64_t body_cut,
			  uint64_t end);
static void not_http(struct hconn *c, int head_whole, const char *why);

/* ---- the reader (tap/http/httpstream.h): every call into it is here ---- */

static struct hconn *conn_of_tc(const struct hx_conn_id *tc)
{
	return (struct hconn *)((char *)tc - offsetof(struct hconn, tc));
}

static void *sk_conn_open(void *ctx, const struct hx_conn_id *tc, int64_t us)
{
	(void)ctx;
	(void)us;
	return conn_of_tc(tc);
}

/* The reader took the client for a server (it sent a response first). */
static void sk_swap(void *ctx, const struct hx_conn_id *tc)
{
	(void)ctx;
	refuse(conn_of_tc(tc), 400, "a response where a request was awaited");
}

static int sk_request_head(void *ctx, void *conn, const struct hx_head *hd, int64_t us)
{
	(void)ctx;
	(void)us;
	return head_check(conn, hd->method, hd->target, hd->h, hd->nh, hd->major, hd->minor, hd->start,
			  hd->chunked, hd->content_length);
}

static void *sk_request(void *ctx, void *conn, const struct hx_request *r, int64_t us)
{
	(void)ctx;
	(void)us;
	request_whole(conn, r->method, r->target, r->h, r->nh, r->major == 1 ? r->minor : 0, r->body,
		      r->body_len, r->body_cut, r->end);
	return conn; /* (no exchange: responses are not read) */
}

static void sk_request_error(void *ctx, void *conn, const struct hx_head *hd, const char *why, int64_t us)
{
	(void)ctx;
	(void)us;
	not_http(conn, hd != NULL, why);
}

static struct hx_reader *rd_new(struct hep *e)
{
	struct hx_opts ho;
	struct hx_sink sink = {
		.ctx = e,
		.conn_open = sk_conn_open,
		.swap = sk_swap,
		.request_head = sk_request_head,
		.request = sk_request,
		.request_error = sk_request_error,
	};

	hx_opts_default(&ho);
	ho.max_body = e->o.max_body;
	e->hx = hx_new(&ho, &sink);
	return e->hx;
}

/* A connection begins: its ends as the reader sees them (sa: the client's). */
static void rd_open(struct hconn *c, const struct sockaddr *sa)
{
	struct hx_end *end = &c->tc.client;

	memset(end, 0, sizeof(*end));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		end->family = AF_INET;
		memcpy(end->addr, &s->sin_addr, 4);
		end->port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		end->family = AF_INET6;
		memcpy(end->addr, &s->sin6_addr, 16);
		end->port = ntohs(s->sin6_port);
	}
	c->tc.num = ++c->e->next_num;
	c->tc.saw_start = 1;
	c->tc.first_us = now_us();
	hln_addr_str(sa, c->addr, sizeof(c->addr));
	c->hs = hx_open(c->e->hx, &c->tc);
}

/* n bytes more of the client's stream. */
static void rd_feed(struct hconn *c, const void *p, size_t n)
{
	hx_data(c->hs, &c->tc, HX_C2S, p, n, now_us(), HX_ACK_UNKNOWN);
}

/* Is the client's stream still read as HTTP requests? 1 or 0 (not HTTP, or switched). */
static int rd_reading(const struct hconn *c)
{
	return c->hs && hx_reading(c->hs, HX_C2S) == HX_READING;
}

/* Is it not HTTP at all (as opposed to switched by a CONNECT or an Upgrade)? */
static int rd_not_http(const struct hconn *c)
{
	return c->hs && hx_reading(c->hs, HX_C2S) == HX_NOT_HTTP;
}

static void rd_close(struct hconn *c)
{
	struct hx_stream *hs = c->hs;

	c->hs = NULL;
	if (hs)
		hx_close(hs, &c->tc, HX_FIN, now_us());
}

static void rd_free(struct hep *e)
{
	if (e->hx)
		hx_free(e->hx);
	e->hx = NULL;
}

/* ---- requests ---- */

/* The bytes of c's client stream from offset at (up to n) copied into out; what was copied. */
static size_t client_bytes(struct hconn *c, uint64_t at, char *out, size_t n)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer_ptr ptr;
	ev_ssize_t k;

	if (at < c->c2s_base || evbuffer_ptr_set(in, &ptr, (size_t)(at - c->c2s_base), EVBUFFER_PTR_SET))
		return 0;
	k = evbuffer_copyout_from(in, &ptr, out, n);
	return k < 0 ? 0 : (size_t)k;
}

/* The checks of the tap, in its order: nonzero refuses the head (said through refuse). */
static int head_check(struct hconn *c, const char *method, const char *target, const struct mt_hdr *h,
		      size_t nh, int major, int minor, uint64_t start, int chunked, uint64_t content_length)
{
	struct hep *e = c->e;
	size_t want = e->o.max_headers + 4, got, len = 0;
	char small[8192], *raw;
	const char *bad;
	int rc = 1, status;

	c->minor = major == 1 ? minor : 0;
	if (c->refusing)
		return 1;
	if (c->c2s_fed - start < want)
		want = (size_t)(c->c2s_fed - start); /* (those held, up to the limit) */
	raw = want <= sizeof(small) ? small : mt_malloc(want);
	got = client_bytes(c, start, raw, want);
	bad = mt_request_refusal(raw, got, &len, method, target, h, nh, major == 1 && minor >= 1, &status);
	if (!bad && !len) {
		refuse(c, 431, "a request head above --max-headers");
		goto out;
	}
	if (bad) {
		refuse(c, status, bad);
		goto out;
	}
	if (e->o.guard) {
		/* A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding). */
		const char *value;
		enum hln_verdict v = hln_guard_fields(e->o.guard, h, nh, &value);
		if (v != HLN_PASS) {
			struct hln_guard *g = e->o.guard;
			if (!g->said[v] && e->h.say) {
				char line[400];
				hln_refusal_line(v, value, e->o.who, line, sizeof(line));
				e->h.say(e->h.ctx, line);
			}
			g->said[v] = 1;
			refuse(c, HLN_REFUSED_STATUS, hln_refusal_reason(v));
			goto out;
		}
	}
	if (content_length != UINT64_MAX && content_length > e->o.max_body) {
		refuse(c, 413, "a request body above --max-body");
		goto out;
	}
	c->head_seen = 1;
	c->head_len = len;
	if (c->head_timer)
		evtimer_del(c->head_timer);
	{
		/* A client that waits for 100 Continue before sending its body. */
		uint64_t have = c->c2s_fed - start;
		if (mt_hdr_expects_continue(h, nh, major, minor) && !c->q &&
		    (chunked || (content_length != UINT64_MAX && have < len + content_length)))
			evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
	}
	rc = 0;
out:
	if (raw != small)
		free(raw);
	return rc;
}

/*
 * The reader refused the client's bytes (why: its words). When the head was
 * not parsed whole, it is split leniently and the reason said is the tap's
 * own check's when one finds it (the same words as for a head parsed whole).
 */
static void not_http(struct hconn *c, int head_whole, const char *why)
{
	char msg[200];
	const char *bad = NULL;

	if (!head_whole) {
		size_t want = c->e->o.max_headers + 4, got;
		char *raw = mt_malloc(want);
		struct mt_head_split sp;
		got = client_bytes(c, c->drain_to, raw, want);
		bad = mt_head_split_refusal(raw, got, &sp);
		mt_head_split_free(&sp);
		free(raw);
	}
	snprintf(msg, sizeof(msg), "not a valid HTTP/1.1 request: %s", why);
	refuse(c, 400, bad ? bad : msg);
}

/* Does the comma list of every Connection field hold token? */
static int connection_has(const struct mt_hdr *h, size_t nh, const char *token)
{
	for (size_t i = 0; i < nh; i++)
		if (!strcasecmp(h[i].name, "Connection") && mt_hdr_has_token(h[i].value, token))
			return 1;
	return 0;
}

/* A request whole: copied out and queued for the application. */
static void request_whole(struct hconn *c, const char *method, const char *target, const struct mt_hdr *h,
			  size_t nh, int minor, const char *body, size_t body_len, uint64_t body_cut,
			  uint64_t end)
{
	struct hep_req *r;
	size_t size = strlen(method) + strlen(target) + 2, at = 0;

	c->head_seen = 0;
	c->head_len = 0;
	c->drain_to = end;
	if (c->refusing)
		return;
	if (body_cut) {
		refuse(c, 413, "a request body above --max-body");
		return;
	}
	for (size_t i = 0; i < nh; i++)
		size += strlen(h[i].name) + strlen(h[i].value) + 2;
	r = mt_calloc(1, sizeof(*r));
	r->c = c;
	r->text = mt_malloc(size);
	r->h = mt_calloc(nh ? nh : 1, sizeof(*r->h));
	r->nh = nh;
#define COPY(dst, s)                           \
	do {                                   \
		size_t l_ = strlen(s) + 1;     \
		memcpy(r->text + at, (s), l_); \
		(dst) = r->text + at;          \
		at += l_;                      \
	} while (0)
	COPY(r->method, method);
	COPY(r->target, target);
	for (size_t i = 0; i < nh; i++) {
		COPY(r->h[i].name, h[i].name);
		COPY(r->h[i].value, h[i].value);
	}
#undef COPY
	r->body = mt_malloc(body_len + 1);
	if (body_len)
		memcpy(r->body, body, body_len);
	r->body[body_len] = '\0';
	r->body_len = body_len;
	r->minor = minor;
	r->head = !strcmp(method, "HEAD");
	r->keep = minor >= 1 ? !connection_has(h, nh, "close")
			     : connection_has(h, nh, "keep-alive") && !connection_has(h, nh, "close");
	if (c->q_tail)
		c->q_tail->next = r;
	else
		c->q = r;
	c->q_tail = r;
}

static void req_free(struct hep_req *r)
{
	free(r->h);
	free(r->text);
	free(r->body);
	free(r);
}

const char *hep_method(const struct hep_req *r)
{
	return r->method;
}

const char *hep_target(const struct hep_req *r)
{
	return r->target;
}

const struct mt_hdr *hep_fields(const struct hep_req *r, size_t *n)
{
	*n = r->nh;
	return r->h;
}

const char *hep_field(const struct hep_req *r, const char *name)
{
	return mt_hdr_get(r->h, r->nh, name);
}

const char *hep_body(const struct hep_req *r, size_t *n)
{
	*n = r->body_len;
	return r->body;
}

const char *hep_peer(const struct hep_req *r)
{
	return r->c->addr;
}

int hep_minor(const struct hep_req *r)
{
	return r->minor;
}

void hep_set_arg(struct hep_req *r, void *arg)
{
	r->arg = arg;
}

/* ---- the connection's flow ---- */

/* c's client is sent what it is owed, then closed; c is freed by its free_ev. */
static void close_after_output(struct hconn *c)
{
	c->closing = 1;
	evtimer_del(c->head_timer);
	if (!evbuffer_get_length(bufferevent_get_output(c->bev))) {
		event_active(c->free_ev, EV_TIMEOUT, 0);
		return;
	}
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
}

/* Is reading the next request to wait (a request is answered, or a refusal owed)? */
static int held_back(const struct hconn *c)
{
	return c->q || c->refusing || c->closing;
}

/* What a client sends while it is held back is bounded (its close is still seen). */
static void read_mark(struct hconn *c)
{
	bufferevent_setwatermark(c->bev, EV_READ, 0, held_back(c) ? HEP_IN_HELD : 0);
}

/* The refusal owed, once every request before it is answered: then the close. */
static void maybe_refuse(struct hconn *c)
{
	if (!c->refusing || c->q || c->closing)
		return;
	if (c->refuse_status) {
		int st = c->refuse_status;
		const char *reason = mt_http_reason(st);
		char msg[300];
		json_t *m;
		char *text;
		snprintf(msg, sizeof(msg), "mcptap: %s%s", st == 403 ? "" : "refused: ", c->refuse_why);
		m = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", -32000,
			      "message", msg);
		text = m ? json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
		if (text)
			evbuffer_add_printf(bufferevent_get_output(c->bev),
					    "HTTP/1.%d %d %s\r\nContent-Type: application/json\r\n"
					    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
					    c->minor ? 1 : 0, st, reason, strlen(text), text);
		free(text);
		json_decref(m);
	}
	close_after_output(c);
}

/* The request being read is refused (status; 0: closed without an answer): nothing more is read. */
static void refuse(struct hconn *c, int status, const char *why)
{
	if (c->refusing)
		return;
	c->refusing = 1;
	c->refuse_status = status;
	snprintf(c->refuse_why, sizeof(c->refuse_why), "%s", why);
	evtimer_del(c->head_timer);
	/* (said once the reader has returned: maybe_refuse) */
}

/* The bytes of the requests said whole are done with. */
static void drain(struct hconn *c)
{
	if (c->drain_to > c->c2s_base) {
		evbuffer_drain(bufferevent_get_input(c->bev), (size_t)(c->drain_to - c->c2s_base));
		c->c2s_base = c->drain_to;
	}
}

/* Give the application the first request waiting, when it has not got it yet. */
static void dispatch(struct hconn *c)
{
	struct hep_req *r = c->q;

	if (!r || r->dispatched || c->closing || c->eof)
		return;
	r->dispatched = 1;
	c->e->h.request(c->e->h.ctx, r);
}

/* Give the reader what came, until a request is whole or a refusal is owed; then act on it. */
static void feed(struct hconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	const struct hep_opts *o = &c->e->o;
	uint64_t have = c->c2s_base + evbuffer_get_length(in);

	while (!held_back(c) && rd_reading(c) && c->c2s_fed < have) {
		struct evbuffer_ptr ptr;
		struct evbuffer_iovec v;
		if (evbuffer_ptr_set(in, &ptr, (size_t)(c->c2s_fed - c->c2s_base), EVBUFFER_PTR_SET) ||
		    evbuffer_peek(in, -1, &ptr, &v, 1) < 1 || !v.iov_len)
			break;
		c->c2s_fed += v.iov_len;
		rd_feed(c, v.iov_base, v.iov_len);
	}
	drain(c);
	if (!c->refusing && rd_not_http(c))
		refuse(c, 400, "bytes that are not an HTTP/1.x request (TLS? HTTP/2?)");
	if (!c->refusing && !c->q && c->hs && !rd_reading(c)) {
		/* Switched (a CONNECT, say) and answered: nothing after it is read. */
		refuse(c, 0, "");
	}
	if (!c->refusing && !c->q) {
		/* What is held of a request not whole yet: bounded, and its head timed. */
		uint64_t held = c->c2s_fed - c->c2s_base;
		if (!c->head_seen && held > o->max_headers)
			refuse(c, 431, "a request head above --max-headers");
		else if (c->head_seen && held > c->head_len + o->max_body + CHUNK_SLACK(o->max_body))
			refuse(c, 413, "a request body above --max-body");
		else if (held && !c->head_seen && !evtimer_pending(c->head_timer, NULL)) {
			struct timeval tv = {o->client_timeout_ms / 1000,
					     (o->client_timeout_ms % 1000) * 1000};
			evtimer_add(c->head_timer, &tv);
		}
	}
	if (c->q)
		evtimer_del(c->head_timer);
	read_mark(c);
	maybe_refuse(c);
	dispatch(c);
}

/* After a reply ended: the next request, the refusal owed, or reading on. */
static void on_next(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *c = arg;

	(void)fd;
	(void)what;
	if (c->closing)
		return;
	if (c->q) {
		dispatch(c);
		return;
	}
	feed(c);
}

static void on_head_timer(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *c = arg;
	char why[160];

	(void)fd;
	(void)what;
	if (c->q || c->refusing || c->closing || c->head_seen)
		return;
	snprintf(why, sizeof(why), "a request head not whole within %d ms (--client-timeout)",
		 c->e->o.client_timeout_ms);
	refuse(c, 408, why);
	read_mark(c);
	maybe_refuse(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct hconn *c = arg;

	if (c->closing) {
		evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
		return;
	}
	if (!held_back(c))
		feed(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct hconn *c = arg;
	struct hep_req *r = c->q;

	if (c->closing) {
		if (!evbuffer_get_length(bufferevent_get_output(bev)))
			event_active(c->free_ev, EV_TIMEOUT, 0);
		return;
	}
	if (r && r->dispatched && r->full &&
	    evbuffer_get_length(bufferevent_get_output(bev)) <= HEP_OUT_LOW) {
		r->full = 0;
		if (c->e->h.writable)
			c->e->h.writable(c->e->h.ctx, r, r->arg);
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct hconn *c = arg;

	if (c->closing) {
		/* (what it was owed is lost: the client is gone or does not read) */
		event_active(c->free_ev, EV_TIMEOUT, 0);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		if ((what & BEV_EVENT_READING) && c->q) {
			/* A reply under way may be idle as long as it likes. */
			bufferevent_enable(bev, EV_READ);
			return;
		}
		conn_close(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !c->q) {
		/* The client closed: what it sent before is read for a refusal owed
		 * (still sent), then it is taken for gone (an HTTP client does not
		 * half-close awaiting an answer). */
		c->eof = 1;
		if (evbuffer_get_length(bufferevent_get_input(bev)))
			feed(c);
		if (c->closing)
			return;
	}
	conn_close(c);
}

/* c ends: the application is told of the request it was answering; c freed once drained. */
static void conn_close(struct hconn *c)
{
	struct hep *e = c->e;

	rd_close(c);
	while (c->q) {
		struct hep_req *r = c->q;
		c->q = r->next;
		if (!c->q)
			c->q_tail = NULL;
		if (r->dispatched && e->h.gone)
			e->h.gone(e->h.ctx, r, r->arg);
		req_free(r);
	}
	c->closing = 1;
	evtimer_del(c->head_timer);
	event_active(c->free_ev, EV_TIMEOUT, 0);
}

static void conn_free(struct hconn *c)
{
	struct hep *e = c->e;

	if (c->hs || c->q)
		conn_close(c);
	bufferevent_free(c->bev);
	/* (a free_ev made active by conn_close is let go with it) */
	event_free(c->head_timer);
	event_free(c->next_ev);
	event_free(c->free_ev);
	if (c->prev)
		c->prev->next = c->next;
	else
		e->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static void on_free(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_free(arg);
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct hep *e = arg;
	struct hconn *c;
	struct timeval tv = {e->o.client_timeout_ms / 1000, (e->o.client_timeout_ms % 1000) * 1000};
	int one = 1;

	(void)lev;
	(void)salen;
	hln_watch_accepted(e->watch);
	c = mt_calloc(1, sizeof(*c));
	c->e = e;
	c->bev = bufferevent_socket_new(e->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->head_timer = evtimer_new(e->base, on_head_timer, c);
	c->next_ev = event_new(e->base, -1, 0, on_next, c);
	c->free_ev = event_new(e->base, -1, 0, on_free, c);
	if (!c->bev || !c->head_timer || !c->next_ev || !c->free_ev) {
		if (c->bev)
			bufferevent_free(c->bev);
		else
			evutil_closesocket(fd);
		if (c->head_timer)
			event_free(c->head_timer);
		if (c->next_ev)
			event_free(c->next_ev);
		if (c->free_ev)
			event_free(c->free_ev);
		free(c);
		return;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = e->conns;
	if (e->conns)
		e->conns->prev = c;
	e->conns = c;
	c->minor = 1;
	rd_open(c, sa);
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, HEP_OUT_LOW, 0);
	bufferevent_set_timeouts(c->bev, &tv, &tv);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* ---- replies ---- */

/* Is name one of the fields the endpoint writes itself? */
static int own_field(const char *name)
{
	return !strcasecmp(name, "Content-Length") || !strcasecmp(name, "Transfer-Encoding") ||
	       !strcasecmp(name, "Connection") || !strcasecmp(name, "Date") ||
	       !strcasecmp(name, "Keep-Alive");
}

/* A reply's head: status line, Date, the fields, framing (len: Content-Length; -1: a stream). */
static void put_head(struct hep_req *r, int status, const char *reason, const struct mt_hdr *h, size_t nh,
		     long long len)
{
	struct hconn *c = r->c;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char date[64];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	evbuffer_add_printf(out, "HTTP/1.%d %d %s\r\nDate: %s\r\n", r->minor ? 1 : 0, status, reason, date);
	for (size_t i = 0; i < nh; i++) {
		/* (a line end in a field would make another field, or end the head) */
		if (own_field(h[i].name) || strpbrk(h[i].name, "\r\n:") || strpbrk(h[i].value, "\r\n"))
			continue;
		evbuffer_add_printf(out, "%s: %s\r\n", h[i].name, h[i].value);
	}
	if (len >= 0) {
		if (status >= 200 && status != 204 && status != 304)
			evbuffer_add_printf(out, "Content-Length: %lld\r\n", len);
	} else if (r->minor >= 1) {
		r->chunked = 1;
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	} else {
		r->keep = 0; /* (HTTP/1.0: the stream ends with the connection) */
	}
	if (!r->keep)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (!r->minor)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
	evbuffer_add(out, "\r\n", 2);
}

/* r's reply has ended: it goes; the connection closes, or goes on to what follows. */
static void reply_ended(struct hep_req *r)
{
	struct hconn *c = r->c;
	int keep = r->keep;

	c->q = r->next;
	if (!c->q)
		c->q_tail = NULL;
	req_free(r);
	if (!keep) {
		rd_close(c);
		while (c->q) {
			struct hep_req *x = c->q;
			c->q = x->next;
			req_free(x);
		}
		c->q_tail = NULL;
		c->refusing = 0; /* (the close says it all) */
		close_after_output(c);
		return;
	}
	event_active(c->next_ev, EV_TIMEOUT, 0);
}

void hep_reply(struct hep_req *r, int status, const char *reason, const struct mt_hdr *h, size_t nh,
	       const char *body, size_t len)
{
	put_head(r, status, reason, h, nh, (long long)len);
	if (!r->head && len)
		evbuffer_add(bufferevent_get_output(r->c->bev), body, len);
	reply_ended(r);
}

void hep_stream_start(struct hep_req *r, int status, const char *reason, const struct mt_hdr *h, size_t nh)
{
	r->streaming = 1;
	put_head(r, status, reason, h, nh, -1);
}

void hep_stream_chunk(struct hep_req *r, const char *p, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(r->c->bev);

	if (r->head || !len)
		return;
	if (r->chunked)
		evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, p, len);
	if (r->chunked)
		evbuffer_add(out, "\r\n", 2);
}

void hep_stream_end(struct hep_req *r)
{
	if (r->chunked && !r->head)
		evbuffer_add(bufferevent_get_output(r->c->bev), "0\r\n\r\n", 5);
	reply_ended(r);
}

int hep_full(const struct hep_req *r)
{
	if (evbuffer_get_length(bufferevent_get_output(r->c->bev)) <= HEP_OUT_HIGH)
		return 0;
	((struct hep_req *)r)->full = 1;
	return 1;
}

int hep_flushed(const struct hep_req *r)
{
	struct bufferevent *bev = r->c->bev;
	int unsent = 0;

	if (evbuffer_get_length(bufferevent_get_output(bev)))
		return 0;
	return !(ioctl(bufferevent_getfd(bev), SIOCOUTQ, &unsent) == 0 && unsent > 0);
}

/* ---- the endpoint ---- */

struct hep *hep_new(struct event_base *base, evutil_socket_t fd, const struct hep_opts *o,
		    const struct hep_handler *h)
{
	struct hep *e = mt_calloc(1, sizeof(*e));

	e->o = *o;
	e->h = *h;
	e->base = base;
	e->lev = evconnlistener_new(base, on_accept, e, LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (!e->lev) {
		int err = errno;
		evutil_closesocket(fd);
		free(e);
		errno = err;
		return NULL;
	}
	e->watch = hln_watch_new(e->lev, o->pace, NULL);
	if (!e->watch) {
		evconnlistener_free(e->lev); /* (closes fd) */
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	rd_new(e);
	return e;
}

void hep_stop_accepting(struct hep *e)
{
	hln_watch_free(e->watch); /* (before its listener) */
	e->watch = NULL;
	if (e->lev)
		evconnlistener_free(e->lev);
	e->lev = NULL;
}

int hep_busy(const struct hep *e)
{
	for (const struct hconn *c = e->conns; c; c = c->next)
		if (evbuffer_get_length(bufferevent_get_output(c->bev)))
			return 1;
	return 0;
}

void hep_free(struct hep *e)
{
	if (!e)
		return;
	hep_stop_accepting(e);
	while (e->conns)
		conn_free(e->conns);
	rd_free(e);
	free(e);
}
