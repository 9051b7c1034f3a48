/*
 * httptap.c - the HTTP tap (see httptap.h): a byte relay.
 *
 * Each client connection gets one connection to the upstream, its own (no
 * pooling across clients: no desynchronisation can cross them). The tap
 * writes upstream the client's bytes and to the client the upstream's, and
 * reads a copy of each direction with the one strict HTTP/1.1 reader
 * (tap/http/httpstream.h, the same that reads pcap imports), which says what
 * it read to tap/http/httplog.c. It never re-serialises a message. The only
 * edits, each a reverse proxy's own:
 *
 *   - the Host field's value names the upstream (its authority in --upstream);
 *   - --upstream's query is added to each request target ('?' or '&');
 *   - a field given with --upstream-header replaces the client's fields of
 *     its name, as the head's last field;
 *   - a legacy HTTP+SSE stream's endpoint event with an absolute URI names
 *     the tap instead of the upstream (its chunk's size, or Content-Length,
 *     made to fit).
 *
 * A request is held until it is whole (head and body: the reader says it
 * then), checked, stored, and forwarded; a response goes to the client as
 * its bytes come, after the reader has read them (an SSE event is stored
 * before the client can answer it on another connection). What is wrong
 * with a request (its framing, its target, its head's bytes, a foreign Host
 * or Origin, its size) is refused with the tap's own answer (400, 403, 413,
 * 431) after the answers the client is owed, and the connection closed:
 * nothing of it goes upstream, and it is stored with outcome "refused" and
 * why. The tap's other own answers are a 502 (the upstream could not be
 * reached, or closed without answering) and a 504 (it was silent for
 * --upstream-timeout), with "Connection: close".
 *
 * Flow control: bufferevent watermarks both ways. While the upstream's
 * output holds more than OUT_HIGH bytes the client is not read; while the
 * client's does, the upstream is not read.
 *
 * Event loops in threads of their own, each with its own listening socket on
 * the same port (SO_REUSEPORT) and its own reader; they share the sessions
 * (httplog, under its lock) and one writer.
 */
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "schema/util.h"
#include "tap/http/httphdr.h"
#include "tap/http/httplisten.h"
#include "tap/http/httplog.h"
#include "tap/http/httpsess.h"
#include "tap/http/httpstream.h"
#include "tap/http/httptap.h"

/* An output above this stops the reading of the other side; below OUT_LOW it goes on. */
#define OUT_HIGH (256 * 1024)
#define OUT_LOW (64 * 1024)
/* An exchange with a body this big makes the tap give freed memory back once idle. */
#define TRIM_AFTER (1u << 20)
/* A request body from this size on takes its room (mem_count) once its head is read. */
#define RESERVE_FROM (64u << 10)
/* How often the control loop looks (ms). */
#define TRIM_EVERY_MS 1000
/* A legacy SSE stream's first event is held up to this, waiting to be whole. */
#define HOLD_MAX (64 * 1024)
/* Chunked framing allowed besides a body's bytes (size lines, extensions, trailers). */
#define CHUNK_SLACK(n) ((n) / 8 + 64 * 1024)

struct tap;
struct loop;
struct rconn;

/* One request forwarded (or being refused), until its response has ended. */
struct rx {
	struct rconn *c;
	struct rx *next;
	struct hl_exch *hx; /* what is stored of it */
	int answered;       /* its response's head came */
	int ended;          /* hl_end was called */
	int big;            /* counted in big_open */
	uint64_t resp_bytes;
};

/* A request the reader said whole, to forward once it has returned. */
struct fwd {
	struct rx *x;
	uint64_t start, end;
	size_t head_len;
	char *head; /* the head as edited (owned) */
	size_t head_n;
};

/* A client connection and its upstream connection. */
struct rconn {
	struct loop *loop;
	struct rconn *next, *prev;
	struct hx_conn_id tc; /* for the reader: its number and ends */
	struct hx_stream *hs; /* the reader's state (NULL once closed) */
	int64_t num;          /* httplog's connection number */
	char addr[80];
	struct bufferevent *cli, *up;
	int up_connected;
	uint64_t c2s_base; /* the client's stream offset of its input's first byte */
	uint64_t c2s_fed;  /* bytes of it given to the reader */
	uint64_t s2c_fed;
	/* The request being read: its head whole (its length, its edited form). */
	int head_seen;
	size_t head_len;
	int head_chunked;
	struct mt_buf edited;
	char host[256];   /* its Host, as the client named the tap */
	int major, minor; /* the last request's version: the tap's own answers' */
	/* Said by the reader while it reads, done once it returns. */
	struct fwd *fw;
	size_t nfw, capfw;
	struct rx *q, *q_tail; /* requests forwarded, awaiting their responses' ends */
	int open;              /* of them, not ended */
	int64_t idle_since;    /* when open last fell to 0 (µs, now_us) */
	/* The tap's own answer owed once the answers before it are sent, then the close. */
	int refuse_status;
	char refuse_why[200];
	int refusing; /* the client's stream is read no more */
	/* The legacy SSE stream being held for its endpoint event. */
	struct rx *hold;
	struct evbuffer *held;
	int hold_chunked, hold_cl;
	/* Ending. */
	int closing;             /* the client's output drains, then all is freed */
	const char *end_outcome; /* how exchanges the reader ends (not complete) end */
	char end_why[300];
	struct event *head_timer; /* a whole request head within --client-timeout */
	struct event *up_timer;   /* the upstream's silence, or its connect */
	struct event *free_ev;    /* frees it (close_after_output) */
	int connect_pending;
	int big;
	size_t counted; /* what it holds, as last added to the tap's held */
	size_t reserve; /* what the request being read will hold once whole (its
			 * Content-Length says it): counted while it is read */
	int mem_paused; /* not read: the tap's --memory is reached */
};

struct loop {
	struct tap *tap;
	int idx;
	pthread_t thread;
	struct event_base *base;
	struct evconnlistener *lev;
	struct hln_watch *watch;
	struct hx_reader *hx;
	struct event *stop_timer;
	struct event *stop_ev;
	int stop_fd;
	struct rconn *conns;
	int stopping;
	int exchanges; /* open on this loop */
	uint64_t next_num;
	struct evbuffer *scratch; /* a request on its way upstream (write_through) */
	struct event *mem_timer;  /* resumes those paused once there is room */
};

struct tap {
	const struct httptap_opts *o;
	char origin[512];    /* the upstream's scheme://authority */
	char authority[300]; /* what Host says upstream */
	char hostname[256];  /* for SNI and the certificate's check */
	const char *query;
	char shown[512];
	int https;
	struct sockaddr_storage up_addr;
	socklen_t up_len;
	SSL_CTX *ssl;
	struct hln_guard guard;
	struct hln_pace *pace;
	struct writer *w;
	struct hl_log *log;
	struct loop *loops;
	int nloops;
	struct event_base *ctl;
	struct event *sig_int, *sig_term, *done_ev, *trim_ev;
	int done_fd;
	int loops_done;
	pthread_mutex_t mu;
	int stopping;
	int upstream_down;
	int big_since_trim;
	int big_open;
	size_t held;          /* bytes the relay holds, all loops (__atomic) */
	size_t reader_max;    /* the most of a request body the reader keeps */
	struct rconn *runner; /* the one connection read on past --memory, all loops (__atomic) */
	int mem_said;         /* --memory reached was said (__atomic) */
};

static int64_t now_us(void)
{
	return mt_mono_ns() / 1000;
}

/* ---- the upstream's health, said once ---- */

static void upstream_failed(struct tap *t, const char *outcome, const char *why)
{
	int said;

	pthread_mutex_lock(&t->mu);
	said = t->upstream_down;
	__atomic_store_n(&t->upstream_down, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&t->mu);
	if (!said)
		mt_voice_warn(&t->o->voice,
			      "the upstream %s (%s): clients get the tap's 502 or 504, or a cut "
			      "response, until it answers again",
			      !strcmp(outcome, "unreachable") ? "cannot be reached"
			      : !strcmp(outcome, "timeout")   ? "is silent"
							      : "closed a connection without a whole answer",
			      why ? why : "no reason given");
}

static void upstream_back(struct tap *t)
{
	int said;

	if (!__atomic_load_n(&t->upstream_down, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&t->mu);
	said = t->upstream_down;
	__atomic_store_n(&t->upstream_down, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&t->mu);
	if (said)
		mt_voice_say(&t->o->voice, "mcptap: the upstream answers again\n");
}

/* ---- exchanges ---- */

static void maybe_stop(struct loop *l)
{
	if (l->stopping && !l->exchanges)
		event_base_loopbreak(l->base);
}

/* x's exchange ends (stored); it stays on its connection's queue until the reader lets go. */
static void rx_end(struct rx *x, const char *outcome, const char *why)
{
	struct rconn *c = x->c;
	struct tap *t = c->loop->tap;

	if (x->ended)
		return;
	x->ended = 1;
	if (!strcmp(outcome, "unreachable") || !strcmp(outcome, "upstream-gone") ||
	    !strcmp(outcome, "timeout"))
		upstream_failed(t, outcome, why);
	if (x->big) {
		__atomic_store_n(&t->big_since_trim, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&t->big_open, 1, __ATOMIC_RELAXED);
		x->big = 0;
	}
	hl_end(t->log, x->hx, outcome, why);
	x->hx = NULL;
	c->open--;
	c->loop->exchanges--;
	if (!c->open && c->cli && !c->closing) {
		/* An idle connection's time starts now, not at the client's last byte. */
		c->idle_since = now_us();
		struct timeval tv = {t->o->client_timeout_ms / 1000, (t->o->client_timeout_ms % 1000) * 1000};
		bufferevent_set_timeouts(c->cli, &tv, &tv);
	}
	maybe_stop(c->loop);
}

/* x leaves its connection's queue and is freed (ended first if it was not). */
static void rx_free(struct rx *x)
{
	struct rconn *c = x->c;

	rx_end(x, c->end_outcome ? c->end_outcome : "closed",
	       c->end_outcome ? c->end_why : "the connection closed");
	for (struct rx **pp = &c->q, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			if (c->q_tail == x)
				c->q_tail = prev;
			break;
		}
	if (c->hold == x)
		c->hold = NULL;
	free(x);
}

static struct rx *rx_new(struct rconn *c)
{
	struct rx *x = mt_calloc(1, sizeof(*x));

	x->c = c;
	if (c->q_tail)
		c->q_tail->next = x;
	else
		c->q = x;
	c->q_tail = x;
	c->open++;
	c->loop->exchanges++;
	return x;
}

/* The first exchange not ended, or NULL. */
static struct rx *rx_first_open(struct rconn *c)
{
	for (struct rx *x = c->q; x; x = x->next)
		if (!x->ended)
			return x;
	return NULL;
}

/* ---- the tap's own answers ---- */

/* A JSON-RPC error answer (naming id when known), with Connection: close, to c's client. */
static void own_answer(struct rconn *c, int status, const char *reason, const char *rpc_id, const char *why)
{
	json_t *msg = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", -32000,
				"message", why);
	char *text;

	if (rpc_id) {
		json_t *id = json_loads(rpc_id, JSON_DECODE_ANY, NULL);
		if (id)
			json_object_set_new(msg, "id", id);
	}
	text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text && c->cli)
		evbuffer_add_printf(bufferevent_get_output(c->cli),
				    "HTTP/1.%d %d %s\r\nContent-Type: application/json\r\n"
				    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				    c->major == 1 && c->minor == 0 ? 0 : 1, status, reason, strlen(text),
				    text);
	free(text);
	json_decref(msg);
}

/* The tap answered x itself: stored as its response. */
static void own_stored(struct rconn *c, struct rx *x, int status)
{
	static const struct mt_hdr ct = {"Content-Type", "application/json"};

	x->answered = 1;
	hl_response_head(c->loop->tap->log, x->hx, status, &ct, 1);
}

static void conn_free(struct rconn *c);
static void conn_close(struct rconn *c, const char *outcome, const char *why);
static void mem_count(struct rconn *c);
static void mem_check(struct rconn *c);

/*
 * c's client is sent what it is owed, then closed. (c is freed by its
 * free_ev, never inside a callback that may still use it.)
 */
static void close_after_output(struct rconn *c)
{
	c->closing = 1;
	if (!c->cli || !evbuffer_get_length(bufferevent_get_output(c->cli))) {
		event_active(c->free_ev, EV_TIMEOUT, 0);
		return;
	}
	bufferevent_disable(c->cli, EV_READ);
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
}

/* The refusal owed, once every answer before it has ended. */
static void maybe_refuse(struct rconn *c)
{
	if (!c->refuse_status || c->open || c->closing)
		return;
	{
		const char *reason = mt_http_reason(c->refuse_status);
		char msg[260];
		snprintf(msg, sizeof(msg), "mcptap: %s%s",
			 c->refuse_status == 403 ? "" : "refused: ", c->refuse_why);
		own_answer(c, c->refuse_status, reason, NULL, msg);
	}
	conn_close(c, "refused", c->refuse_why);
}

/*
 * The client's request is refused (status, why), stored as an exchange when
 * its head is known (hd): the client is read no more.
 */
static void refuse(struct rconn *c, int status, const char *why, const struct hx_head *hd)
{
	struct tap *t = c->loop->tap;

	if (c->refusing)
		return;
	c->refusing = 1;
	c->reserve = 0; /* (the request is read no more) */
	c->refuse_status = status;
	snprintf(c->refuse_why, sizeof(c->refuse_why), "%s", why);
	if (hd) {
		struct hl_request hr;
		struct rx *x = rx_new(c);
		memset(&hr, 0, sizeof(hr));
		hr.conn = c->num;
		hr.client_addr = c->addr;
		hr.method = hd->method;
		hr.target = hd->target;
		hr.h = hd->h;
		hr.nh = hd->nh;
		x->hx = hl_request(t->log, &hr);
		own_stored(c, x, status);
		rx_end(x, "refused", why);
	}
	if (c->cli)
		bufferevent_disable(c->cli, EV_READ);
	if (c->head_timer)
		evtimer_del(c->head_timer);
}

/* ---- the reader's sink (ctx: the loop) ---- */

static struct rconn *conn_of_tc(const struct hx_conn_id *tc)
{
	return (struct rconn *)((char *)tc - offsetof(struct rconn, tc));
}

static void *sk_conn_open(void *ctx, const struct hx_conn_id *tc, int64_t us)
{
	(void)ctx;
	(void)us;
	return conn_of_tc(tc);
}

/* The reader took the client for a server (it sent a response): not HTTP requests. */
static void sk_swap(void *ctx, const struct hx_conn_id *tc)
{
	(void)ctx;
	refuse(conn_of_tc(tc), 400, "a response where a request was awaited", NULL);
}

/* The edited head of the request at hd (its raw bytes p, n) into c->edited. */
static void edit_head(struct rconn *c, const char *p, size_t n)
{
	struct tap *t = c->loop->tap;
	const struct httptap_opts *o = t->o;
	struct mt_buf *b = &c->edited;
	const char *sp1 = memchr(p, ' ', n), *eol = memchr(p, '\r', n), *sp2;
	const char *line;

	mt_buf_reset(b);
	/* The request line: the query added to its target. */
	sp2 = eol ? eol : p + n;
	while (sp2 > sp1 && sp2[-1] != ' ')
		sp2--;
	sp2--;
	if (sp1 && sp2 > sp1 + 1 && sp1[1] != '/' && sp1[1] != '*') {
		/* An absolute form names the tap: its path goes (origin form). */
		const char *tg = sp1 + 1, *path;
		char *tmp = mt_strndup(tg, (size_t)(sp2 - tg));
		path = hs_uri_target(tmp);
		mt_buf_append(b, p, (size_t)(tg - p));
		mt_buf_puts(b, path);
		if (t->query) {
			mt_buf_putc(b, strchr(path, '?') ? '&' : '?');
			mt_buf_puts(b, t->query);
		}
		mt_buf_append(b, sp2, (size_t)(eol + 2 - sp2));
		free(tmp);
	} else if (t->query && sp1 && sp2 > sp1 + 1 && !(sp2 - sp1 == 2 && sp1[1] == '*')) {
		mt_buf_append(b, p, (size_t)(sp2 - p));
		mt_buf_putc(b, memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1)) ? '&' : '?');
		mt_buf_puts(b, t->query);
		mt_buf_append(b, sp2, (size_t)(eol + 2 - sp2));
	} else {
		mt_buf_append(b, p, (size_t)(eol + 2 - p));
	}
	/* The fields: Host's value replaced, --upstream-header names dropped. */
	for (line = eol + 2; line < p + n;) {
		const char *end = memchr(line, '\n', (size_t)(p + n - line));
		size_t ln = (size_t)(end + 1 - line);
		const char *colon = memchr(line, ':', ln);
		if (ln == 2) {
			/* The blank line: --upstream-header's fields before it. */
			for (size_t i = 0; i < o->n_upstream_headers; i++) {
				mt_buf_puts(b, o->upstream_headers[i]);
				mt_buf_puts(b, "\r\n");
			}
			mt_buf_append(b, line, ln);
			break;
		}
		size_t nn = colon ? (size_t)(colon - line) : 0;
		int drop = 0;
		for (size_t i = 0; colon && i < o->n_upstream_headers; i++) {
			const char *u = o->upstream_headers[i], *uc = strchr(u, ':');
			size_t un = uc ? (size_t)(uc - u) : strlen(u);
			if (un == nn && !strncasecmp(u, line, nn))
				drop = 1;
		}
		if (drop) {
			/* (dropped) */
		} else if (colon && nn == 4 && !strncasecmp(line, "Host", 4)) {
			const char *v = colon + 1;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			mt_buf_append(b, line, (size_t)(v - line));
			mt_buf_puts(b, t->authority);
			mt_buf_puts(b, "\r\n");
		} else {
			mt_buf_append(b, line, ln);
		}
		line = end + 1;
	}
}

/* The bytes of c's client stream from offset at (up to n) copied into out; what was copied. */
static size_t client_bytes(struct rconn *c, uint64_t at, char *out, size_t n)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);
	struct evbuffer_ptr ptr;
	ev_ssize_t k;

	if (evbuffer_ptr_set(in, &ptr, (size_t)(at - c->c2s_base), EVBUFFER_PTR_SET))
		return 0;
	k = evbuffer_copyout_from(in, &ptr, out, n);
	return k < 0 ? 0 : (size_t)k;
}

static int sk_request_head(void *ctx, void *conn, const struct hx_head *hd, int64_t us)
{
	struct loop *l = ctx;
	struct tap *t = l->tap;
	const struct httptap_opts *o = t->o;
	struct rconn *c = conn;
	const char *bad;
	size_t want = o->max_headers + 4, got, len = 0;
	char small[8192], *raw;
	int status;

	(void)us;
	if (c->refusing)
		return 1; /* (what follows a refused request is never read) */
	c->major = hd->major;
	c->minor = hd->minor;
	if (l->stopping) {
		refuse(c, 400, "the tap is stopping", NULL);
		c->refuse_status = 0; /* (closed without an answer: as a server going away) */
		return 1;
	}
	/* The head's bytes as they came (those held, up to the limit): its end,
	 * and what a parser let pass. */
	if (c->c2s_fed - hd->start < want)
		want = (size_t)(c->c2s_fed - hd->start);
	raw = want <= sizeof(small) ? small : mt_malloc(want);
	got = client_bytes(c, hd->start, raw, want);
	bad = mt_request_refusal(raw, got, &len, hd->method, hd->target, hd->h, hd->nh,
				 hd->major == 1 && hd->minor >= 1, &status);
	if (!bad && !len) {
		free(raw != small ? raw : NULL);
		refuse(c, 431, "a request head above --max-headers", hd);
		return 1;
	}
	if (bad) {
		free(raw != small ? raw : NULL);
		refuse(c, status, bad, hd);
		return 1;
	}
	{
		/* A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) would
		 * reach the upstream with the tap's --upstream-header credential. */
		const char *value, *host = mt_hdr_get(hd->h, hd->nh, "Host");
		enum hln_verdict v = hln_guard_fields(&t->guard, hd->h, hd->nh, &value);
		if (v != HLN_PASS) {
			char line[400];
			pthread_mutex_lock(&t->mu);
			int said = t->guard.said[v];
			t->guard.said[v] = 1;
			pthread_mutex_unlock(&t->mu);
			hln_refusal_line(v, value, "tap", line, sizeof(line));
			if (!said)
				mt_voice_warn(&t->o->voice, "%s", line);
			free(raw != small ? raw : NULL);
			refuse(c, HLN_REFUSED_STATUS, hln_refusal_reason(v), hd);
			return 1;
		}
		snprintf(c->host, sizeof(c->host), "%s", host ? host : "");
	}
	if (hd->content_length != UINT64_MAX && hd->content_length > o->max_body) {
		free(raw != small ? raw : NULL);
		refuse(c, 413, "a request body above --max-body", hd);
		return 1;
	}
	c->head_seen = 1;
	c->head_len = len;
	/* Its body, held in the input and copied by the reader (in a buffer that
	 * grows by doubling): room for that is taken now, so that requests that
	 * cannot all be whole together are not all read halfway (mem_check). */
	if (hd->content_length != UINT64_MAX && hd->content_length >= RESERVE_FROM) {
		size_t n = (size_t)hd->content_length;
		c->reserve = len + n + 2 * (n < t->reader_max ? n : t->reader_max);
	}
	c->head_chunked = hd->chunked;
	edit_head(c, raw, len);
	{
		/* A client that waits for 100 Continue before its body would wait in
		 * vain (the request goes upstream whole): the tap says it, when no
		 * answer is owed before it (the upstream's own 100 may follow: a
		 * client takes any number of 1xx). */
		uint64_t have = c->c2s_fed - hd->start;
		if (mt_hdr_expects_continue(hd->h, hd->nh, hd->major, hd->minor) &&
		    (hd->chunked || (hd->content_length != UINT64_MAX && have < len + hd->content_length)) &&
		    !c->open && !c->nfw)
			evbuffer_add(bufferevent_get_output(c->cli), "HTTP/1.1 100 Continue\r\n\r\n", 25);
	}
	free(raw != small ? raw : NULL);
	if (c->head_timer)
		evtimer_del(c->head_timer);
	return 0;
}

static void *sk_request(void *ctx, void *conn, const struct hx_request *r, int64_t us)
{
	struct loop *l = ctx;
	struct tap *t = l->tap;
	struct rconn *c = conn;
	struct hl_request hr;
	struct rx *x;
	struct fwd *f;

	(void)us;
	if (c->refusing)
		return NULL;
	if (c->head_chunked) {
		/* http_parser lets other bytes pass where chunked framing belongs
		 * (any two bytes for a chunk's CRLF): the bytes to be forwarded as
		 * they came are read strictly first, as the upstream may read them. */
		size_t blen = (size_t)(r->end - r->start - c->head_len);
		unsigned char *b = mt_malloc(blen ? blen : 1);
		const char *bad = NULL;
		if (client_bytes(c, r->start + c->head_len, (char *)b, blen) != blen)
			bad = "a chunked body not all held";
		else
			bad = mt_chunked_problem(b, blen);
		free(b);
		if (bad) {
			struct hx_head hd;
			memset(&hd, 0, sizeof(hd));
			hd.method = r->method;
			hd.target = r->target;
			hd.h = r->h;
			hd.nh = r->nh;
			hd.major = r->major;
			hd.minor = r->minor;
			refuse(c, 400, bad, &hd);
			return NULL;
		}
	}
	memset(&hr, 0, sizeof(hr));
	hr.conn = c->num;
	hr.client_addr = c->addr;
	hr.method = r->method;
	hr.target = hs_uri_target(r->target);
	hr.h = r->h;
	hr.nh = r->nh;
	hr.body = r->body;
	hr.body_len = r->body_len;
	hr.body_cut = r->body_cut; /* (beyond --max-message: not kept) */
	x = rx_new(c);
	x->hx = hl_request(t->log, &hr);
	if (r->body_len >= TRIM_AFTER) {
		x->big = 1;
		__atomic_add_fetch(&t->big_open, 1, __ATOMIC_RELAXED);
	}
	if (c->nfw == c->capfw) {
		c->capfw = c->capfw ? 2 * c->capfw : 4;
		c->fw = mt_realloc(c->fw, c->capfw * sizeof(*c->fw));
	}
	f = &c->fw[c->nfw++];
	f->x = x;
	f->start = r->start;
	f->end = r->end;
	f->head_len = c->head_len;
	f->head = c->edited.data;
	f->head_n = c->edited.len;
	memset(&c->edited, 0, sizeof(c->edited)); /* (the fwd owns it) */
	c->head_seen = 0;
	c->head_len = 0;
	return x;
}

/*
 * Refuse the request being read, its head not parsed (status, why): what
 * came of it is split leniently for its record (when it has a request line).
 * check: the reason said is the tap's own check's when one finds it (the same
 * words as for a head parsed whole).
 */
static void refuse_raw(struct rconn *c, int status, const char *why, int check)
{
	uint64_t start = c->nfw ? c->fw[c->nfw - 1].end : c->c2s_base;
	size_t want = c->loop->tap->o->max_headers + 4, got;
	char *raw = mt_malloc(want);
	struct mt_head_split sp;
	struct hx_head h2;
	const char *bad;

	got = c->cli ? client_bytes(c, start, raw, want) : 0;
	bad = mt_head_split_refusal(raw, got, &sp);
	if (!check)
		bad = NULL;
	memset(&h2, 0, sizeof(h2));
	h2.method = sp.method;
	h2.target = sp.target;
	h2.h = sp.h;
	h2.nh = sp.nh;
	refuse(c, status, bad ? bad : why, sp.method[0] && sp.target[0] ? &h2 : NULL);
	mt_head_split_free(&sp);
	free(raw);
}

/*
 * The reader refused the client's bytes. A head it could not parse is split
 * leniently for the refusal's record, and the reason said is the tap's own
 * check's when one finds it (the same words as for a head parsed whole).
 */
static void sk_request_error(void *ctx, void *conn, const struct hx_head *hd, const char *why, int64_t us)
{
	struct rconn *c = conn;
	char msg[200];

	(void)ctx;
	(void)us;
	snprintf(msg, sizeof(msg), "not a valid HTTP/1.1 request: %s", why);
	if (!hd) {
		refuse_raw(c, 400, msg, 1);
		return;
	}
	refuse(c, 400, msg, hd);
}

static void sk_response_head(void *ctx, void *xp, int status, const struct mt_hdr *h, size_t nh, int64_t us)
{
	struct loop *l = ctx;
	struct rx *x = xp;
	struct rconn *c = x->c;
	const struct hl_info *info;

	(void)us;
	if (x->ended)
		return;
	x->answered = 1;
	upstream_back(l->tap);
	hl_response_head(l->tap->log, x->hx, status, h, nh);
	info = hl_info(x->hx);
	if (info->endpoint_stream && c->host[0] && !c->hold) {
		c->hold = x;
		const char *te = mt_hdr_get(h, nh, "Transfer-Encoding");
		c->hold_chunked = te && mt_hdr_has_token(te, "chunked");
		c->hold_cl = mt_hdr_get(h, nh, "Content-Length") != NULL;
	}
}

static void sk_response_body(void *ctx, void *xp, const char *p, size_t n, int64_t us)
{
	struct loop *l = ctx;
	struct rx *x = xp;

	(void)us;
	if (x->ended)
		return;
	x->resp_bytes += n;
	if (!x->big && x->resp_bytes >= TRIM_AFTER) {
		x->big = 1;
		__atomic_add_fetch(&l->tap->big_open, 1, __ATOMIC_RELAXED);
	}
	hl_response_body(l->tap->log, x->hx, p, n);
}

static void sk_response_gap(void *ctx, void *xp, uint64_t n, int64_t us)
{
	struct loop *l = ctx;
	struct rx *x = xp;

	(void)us;
	if (!x->ended)
		hl_response_gap(l->tap->log, x->hx, n);
}

static void sk_end(void *ctx, void *xp, const char *outcome, const char *error, int64_t us)
{
	struct rx *x = xp;
	struct rconn *c = x->c;

	(void)ctx;
	(void)us;
	if (!strcmp(outcome, "complete"))
		rx_end(x, "complete", NULL);
	else if (c->end_outcome)
		rx_end(x, c->end_outcome, c->end_why);
	else
		rx_end(x, outcome, error);
	rx_free(x);
}

static void sk_conn_close(void *ctx, void *conn, int64_t us)
{
	struct loop *l = ctx;
	struct rconn *c = conn;

	(void)us;
	hl_conn_closed(l->tap->log, c->num);
}

/* ---- the upstream connection ---- */

static void up_read(struct bufferevent *bev, void *arg);
static void up_write(struct bufferevent *bev, void *arg);
static void up_event(struct bufferevent *bev, short what, void *arg);
static void on_up_timer(evutil_socket_t fd, short what, void *arg);

static void up_timer_arm(struct rconn *c, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(c->up_timer, &tv);
}

/* The upstream's silence is watched while an answer is owed and no SSE stream is its answer. */
static void up_watch(struct rconn *c)
{
	struct rx *x = rx_first_open(c);

	if (c->connect_pending)
		return;
	if (x && !(x->answered && x->hx && hl_info(x->hx)->is_sse))
		up_timer_arm(c, c->loop->tap->o->upstream_timeout_ms);
	else
		evtimer_del(c->up_timer);
}

static int up_open(struct rconn *c)
{
	struct tap *t = c->loop->tap;
	struct event_base *base = c->loop->base;
	if (t->https) {
		SSL *ssl = SSL_new(t->ssl);
		if (!ssl) {
			errno = ENOMEM;
			return -1;
		}
		SSL_set_tlsext_host_name(ssl, t->hostname);
		if (!t->o->insecure) {
			unsigned char ipbuf[16];
			if (inet_pton(AF_INET, t->hostname, ipbuf) == 1 ||
			    inet_pton(AF_INET6, t->hostname, ipbuf) == 1)
				X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), t->hostname);
			else
				SSL_set1_host(ssl, t->hostname);
		}
		c->up = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
						       BEV_OPT_CLOSE_ON_FREE);
	} else {
		c->up = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	}
	if (!c->up) {
		errno = ENOMEM;
		return -1;
	}
	bufferevent_setcb(c->up, up_read, up_write, up_event, c);
	bufferevent_setwatermark(c->up, EV_WRITE, OUT_LOW, 0);
	c->connect_pending = 1;
	up_timer_arm(c, t->o->connect_timeout_ms);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(c->up, (struct sockaddr *)&t->up_addr, (int)t->up_len)) {
		/* (a failure now: no socket; one later comes as an event) */
		int e = errno;
		bufferevent_free(c->up);
		c->up = NULL;
		c->connect_pending = 0;
		evtimer_del(c->up_timer);
		errno = e ? e : ECONNREFUSED;
		return -1;
	}
	return 0;
}

/* What an upstream connection's failure was, in words. */
static void up_error_text(struct rconn *c, char *out, size_t n)
{
	unsigned long e = c->up ? bufferevent_get_openssl_error(c->up) : 0;
	int se = EVUTIL_SOCKET_ERROR();

	if (e) {
		char buf[256];
		ERR_error_string_n(e, buf, sizeof(buf));
		SSL *ssl = c->up ? bufferevent_openssl_get_ssl(c->up) : NULL;
		long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
		if (vr != X509_V_OK)
			snprintf(out, n, "TLS: %s", X509_verify_cert_error_string(vr));
		else
			snprintf(out, n, "TLS: %s", buf);
		while (ERR_get_error())
			;
	} else if (se) {
		snprintf(out, n, "%s", evutil_socket_error_to_string(se));
	} else {
		snprintf(out, n, "the connection closed");
	}
}

/*
 * The upstream connection is over (outcome and why for what it leaves
 * unanswered): the first answer owed, when nothing of it came, is the tap's
 * own (status); the rest of the client's connection goes too, once what it
 * was sent has drained.
 */
static void up_over(struct rconn *c, int status, const char *outcome, const char *why)
{
	struct rx *x = rx_first_open(c);

	if (x && !x->answered && !(c->hs && hx_in_message(c->hs, HX_S2C)) && c->cli && !c->closing) {
		char msg[400];
		snprintf(msg, sizeof(msg),
			 status == 504                     ? "mcptap: %s"
			 : !strcmp(outcome, "unreachable") ? "mcptap: the upstream could not be reached: %s"
							   : "mcptap: the upstream sent no response: %s",
			 why);
		own_answer(c, status, mt_http_reason(status), hl_info(x->hx)->rpc_id, msg);
		own_stored(c, x, status);
		rx_end(x, outcome, why);
	}
	conn_close(c, outcome, why);
}

static void on_up_timer(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;
	const struct httptap_opts *o = c->loop->tap->o;
	char why[160];

	(void)fd;
	(void)what;
	if (c->connect_pending) {
		snprintf(why, sizeof(why), "no connection within %d ms (--connect-timeout)",
			 o->connect_timeout_ms);
		up_over(c, 502, "unreachable", why);
		return;
	}
	snprintf(why, sizeof(why), "the upstream sent nothing for %d ms (--upstream-timeout)",
		 o->upstream_timeout_ms);
	up_over(c, 504, "timeout", why);
}

static void relay_hold(struct rconn *c, struct evbuffer *from);

/*
 * n bytes of from (drained) to bev's peer. When nothing waits in bev's output
 * they are written at once, straight from from: a write event added for
 * them and taken off after (two epoll_ctl calls an exchange each way) only
 * when the socket takes less. via_output: through the output always (TLS,
 * a connection not made yet).
 */
static void write_through(struct bufferevent *bev, struct evbuffer *from, size_t n, int via_output)
{
	struct evbuffer *out = bufferevent_get_output(bev);

	if (!via_output && n && !evbuffer_get_length(out)) {
		int w = evbuffer_write_atmost(from, bufferevent_getfd(bev), (ev_ssize_t)n);
		if (w > 0)
			n -= (size_t)w; /* (drained from from) */
	}
	if (n)
		evbuffer_remove_buffer(from, out, n);
}

/* What the upstream sent: read by the reader (stored), then relayed to the client. */
static void up_read(struct bufferevent *bev, void *arg)
{
	struct rconn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v[16];
	int nv;

	while (evbuffer_get_length(in)) {
		size_t taken = 0;
		nv = evbuffer_peek(in, -1, NULL, v, 16);
		if (nv > 16)
			nv = 16;
		for (int i = 0; i < nv && c->hs; i++) {
			hx_data(c->hs, &c->tc, HX_S2C, v[i].iov_base, v[i].iov_len, now_us(), HX_ACK_UNKNOWN);
			c->s2c_fed += v[i].iov_len;
			taken += v[i].iov_len;
		}
		if (!c->cli || c->closing) {
			evbuffer_drain(in, taken ? taken : evbuffer_get_length(in));
		} else if (c->hold || c->held) {
			relay_hold(c, in);
		} else {
			write_through(c->cli, in, taken, 0);
		}
		if (!taken)
			break;
	}
	if (c->cli && evbuffer_get_length(bufferevent_get_output(c->cli)) > OUT_HIGH)
		bufferevent_disable(bev, EV_READ);
	up_watch(c);
	mem_check(c);
	maybe_refuse(c);
}

/* Its output drained: the client is read again. */
static void up_write(struct bufferevent *bev, void *arg)
{
	struct rconn *c = arg;

	(void)bev;
	mem_count(c);
	if (c->cli && !c->refusing && !c->closing && !c->mem_paused)
		bufferevent_enable(c->cli, EV_READ);
}

static void up_event(struct bufferevent *bev, short what, void *arg)
{
	struct rconn *c = arg;
	char why[300];

	if (what & BEV_EVENT_CONNECTED) {
		int one = 1;
		(void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->connect_pending = 0;
		c->up_connected = 1;
		evtimer_del(c->up_timer);
		up_watch(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (evbuffer_get_length(bufferevent_get_input(bev)))
			up_read(bev, c);
		up_error_text(c, why, sizeof(why));
		if (!c->up_connected) {
			up_over(c, 502, "unreachable", why);
			return;
		}
		if (what & BEV_EVENT_EOF)
			snprintf(why, sizeof(why), "the upstream closed the connection");
		up_over(c, 502, "upstream-gone", why);
	}
}

/* ---- the memory budget ---- */

/*
 * What c holds now, added to the tap's count: its client's input, what waits
 * for either side, the legacy stream's start held, and what the reader holds
 * for it (its copy of a request body being read, as allocated); while it is
 * read, at least the room its request takes once whole.
 */
static void mem_count(struct rconn *c)
{
	struct tap *t = c->loop->tap;
	size_t now = hx_held(c->hs);

	if (c->cli)
		now += evbuffer_get_length(bufferevent_get_input(c->cli)) +
		       evbuffer_get_length(bufferevent_get_output(c->cli));
	if (c->up)
		now += evbuffer_get_length(bufferevent_get_output(c->up)) +
		       evbuffer_get_length(bufferevent_get_input(c->up));
	if (c->held)
		now += evbuffer_get_length(c->held);
	if (!c->mem_paused && now < c->reserve)
		now = c->reserve;
	if (now > c->counted)
		__atomic_add_fetch(&t->held, now - c->counted, __ATOMIC_RELAXED);
	else if (now < c->counted)
		__atomic_sub_fetch(&t->held, c->counted - now, __ATOMIC_RELAXED);
	c->counted = now;
}

/*
 * What the tap holds: the relay's bytes, and the writer's thrice (a message
 * waiting to be stored, and SQLite's two copies of it while it inserts it:
 * the record it builds, and the neighbour it reads whole to compare keys).
 */
static size_t mem_held(struct tap *t)
{
	return __atomic_load_n(&t->held, __ATOMIC_RELAXED) + 3 * writer_held(t->w);
}

/* c the runner, when there is none (1), or already it. */
static int mem_run(struct rconn *c)
{
	struct rconn *none = NULL;
	struct tap *t = c->loop->tap;

	return __atomic_compare_exchange_n(&t->runner, &none, c, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
	       none == c;
}

static void mem_run_done(struct rconn *c)
{
	struct rconn *me = c;

	__atomic_compare_exchange_n(&c->loop->tap->runner, &me, NULL, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/*
 * Past --memory, c is read no more until there is room, but for one
 * connection of all (the first to pass it: its request can be whole, so the
 * tap goes on; one only, so what the tap holds past --memory is at most one
 * request).
 */
static void mem_check(struct rconn *c)
{
	struct loop *l = c->loop;
	struct tap *t = l->tap;
	struct timeval tv = {0, 50 * 1000};

	mem_count(c);
	if (c->closing || c->mem_paused || mem_held(t) <= t->o->memory)
		return;
	/* (The runner is one whose request is being read: it frees its room
	 * once whole. Reading an answer makes none.) */
	if (c->c2s_fed > c->c2s_base && mem_run(c))
		return;
	c->mem_paused = 1;
	mem_count(c); /* (its room is not taken while it waits) */
	if (c->cli)
		bufferevent_disable(c->cli, EV_READ);
	if (c->up)
		bufferevent_disable(c->up, EV_READ);
	if (!evtimer_pending(l->mem_timer, NULL))
		evtimer_add(l->mem_timer, &tv);
	if (!__atomic_exchange_n(&t->mem_said, 1, __ATOMIC_RELAXED))
		mt_voice_warn(&t->o->voice,
			      "--memory (%zu MiB) reached: the tap reads its clients and the upstream "
			      "more slowly until it has room",
			      t->o->memory >> 20);
}

static int out_full(struct bufferevent *b)
{
	return b && evbuffer_get_length(bufferevent_get_output(b)) > OUT_HIGH;
}

static void mem_resume(struct rconn *c)
{
	c->mem_paused = 0;
	mem_count(c);
	if (c->cli && !c->refusing && !c->closing && !out_full(c->up))
		bufferevent_enable(c->cli, EV_READ);
	if (c->up && !out_full(c->cli))
		bufferevent_enable(c->up, EV_READ);
}

/* Room again (1/16 of --memory below it): the connections paused read on. */
static void on_mem_timer(evutil_socket_t fd, short what, void *arg)
{
	struct loop *l = arg;
	struct tap *t = l->tap;
	struct timeval tv = {0, 50 * 1000};

	(void)fd;
	(void)what;
	if (mem_held(t) > t->o->memory - t->o->memory / 16) {
		/* Still no room: the one that holds most reads on (its request is
		 * the nearest to whole), when none does. */
		struct rconn *best = NULL;
		for (struct rconn *c = l->conns; c; c = c->next)
			if (c->mem_paused && c->c2s_fed > c->c2s_base &&
			    (!best || c->counted > best->counted))
				best = c;
		if (best && mem_run(best))
			mem_resume(best);
		evtimer_add(l->mem_timer, &tv);
		return;
	}
	/* Those that fit, in turn: one whose request needs more room than is
	 * left waits on, but for the runner when there is none (a request that
	 * never fits goes alone). */
	for (struct rconn *c = l->conns; c; c = c->next) {
		if (!c->mem_paused)
			continue;
		if (mem_held(t) + c->reserve > t->o->memory && !mem_run(c)) {
			evtimer_add(l->mem_timer, &tv);
			break;
		}
		mem_resume(c);
	}
}

/* ---- the legacy endpoint event ---- */

/*
 * The bytes held (from the start of a legacy SSE stream's response) once
 * its first event is whole: an endpoint with an absolute URI (the upstream's
 * origin) names the tap instead, its framing made to fit.
 */
static void release_hold(struct rconn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->cli);
	size_t n = evbuffer_get_length(c->held);
	char *p = (char *)evbuffer_pullup(c->held, -1);
	const struct hl_info *info = c->hold && c->hold->hx ? hl_info(c->hold->hx) : NULL;
	const char *target = info && info->endpoint ? hs_uri_target(info->endpoint) : NULL;
	char *from = NULL, *to = NULL;
	const char *at = NULL, *body = NULL;

	if (target && target != info->endpoint) {
		from = mt_strndup(info->endpoint, (size_t)(target - info->endpoint));
		to = mt_asprintf("http://%s", c->host);
		at = memmem(p, n, from, strlen(from));
		body = n > 7 && !memcmp(p, "HTTP/1.", 7) ? memmem(p, n, "\r\n\r\n", 4) : NULL;
	}
	if (at && body && at > body) {
		long d = (long)strlen(to) - (long)strlen(from);
		const char *ck = body + 4, *end = p + n;
		body += 4;
		if (c->hold_chunked) {
			/* The chunk that holds it: its size line says the new size. */
			const char *data = NULL;
			unsigned long size = 0;
			while (ck < end) {
				const char *eol = memmem(ck, (size_t)(end - ck), "\r\n", 2);
				if (!eol)
					break;
				size = strtoul(ck, NULL, 16);
				data = eol + 2;
				if (at >= data && at < data + size)
					break;
				ck = data + size + 2;
				data = NULL;
			}
			if (data) {
				char line[32];
				const char *eol = data - 2, *ext = ck;
				while (ext < eol && *ext != ';')
					ext++;
				evbuffer_add(out, p, (size_t)(ck - p));
				snprintf(line, sizeof(line), "%lx", (unsigned long)((long)size + d));
				evbuffer_add(out, line, strlen(line));
				evbuffer_add(out, ext, (size_t)(at - ext));
				evbuffer_add(out, to, strlen(to));
				at += strlen(from);
				evbuffer_add(out, at, (size_t)(end - at));
				goto done;
			}
		} else if (c->hold_cl) {
			/* Content-Length says the new length. */
			const char *cl = strcasestr(p, "\r\nContent-Length:");
			if (cl && cl < body) {
				const char *v = cl + 17, *ve;
				while (*v == ' ' || *v == '\t')
					v++;
				ve = v;
				while (*ve >= '0' && *ve <= '9')
					ve++;
				evbuffer_add(out, p, (size_t)(v - p));
				evbuffer_add_printf(out, "%ld", strtol(v, NULL, 10) + d);
				evbuffer_add(out, ve, (size_t)(at - ve));
				evbuffer_add(out, to, strlen(to));
				at += strlen(from);
				evbuffer_add(out, at, (size_t)(end - at));
				goto done;
			}
		} else {
			evbuffer_add(out, p, (size_t)(at - p));
			evbuffer_add(out, to, strlen(to));
			at += strlen(from);
			evbuffer_add(out, at, (size_t)(end - at));
			goto done;
		}
	}
	evbuffer_add_buffer(out, c->held);
done:
	evbuffer_free(c->held);
	c->held = NULL;
	c->hold = NULL;
	free(from);
	free(to);
}

/* What came while holding goes to the held bytes; they go once the first event is whole. */
static void relay_hold(struct rconn *c, struct evbuffer *from)
{
	const struct hl_info *info = c->hold && !c->hold->ended ? hl_info(c->hold->hx) : NULL;

	if (!c->held)
		c->held = evbuffer_new();
	evbuffer_add_buffer(c->held, from);
	if (!info || info->events || evbuffer_get_length(c->held) >= HOLD_MAX)
		release_hold(c);
}

/* ---- the client connection ---- */

static void cli_read(struct bufferevent *bev, void *arg);
static void cli_write(struct bufferevent *bev, void *arg);
static void cli_event(struct bufferevent *bev, short what, void *arg);

/* Forward what the reader said whole: head edited, body as it came. */
static void forward(struct rconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);

	for (size_t i = 0; i < c->nfw; i++) {
		struct fwd *f = &c->fw[i];
		if (!c->up && !c->closing && up_open(c)) {
			char why[200];
			snprintf(why, sizeof(why), "cannot open a socket: %s", strerror(errno));
			free(f->head);
			for (size_t k = i + 1; k < c->nfw; k++)
				free(c->fw[k].head);
			c->nfw = 0;
			up_over(c, 502, "unreachable", why);
			return;
		}
		evbuffer_drain(in, f->head_len);
		if (c->up) {
			struct evbuffer *tmp = c->loop->scratch;
			evbuffer_add(tmp, f->head, f->head_n);
			evbuffer_remove_buffer(in, tmp, (size_t)(f->end - f->start - f->head_len));
			write_through(c->up, tmp, evbuffer_get_length(tmp),
				      c->loop->tap->https || !c->up_connected);
		} else {
			evbuffer_drain(in, (size_t)(f->end - f->start - f->head_len));
		}
		c->c2s_base = f->end;
		free(f->head);
	}
	c->nfw = 0;
	c->reserve = 0;
	mem_run_done(c); /* (its request is whole) */
	if (c->up) {
		up_watch(c);
		if (evbuffer_get_length(bufferevent_get_output(c->up)) > OUT_HIGH)
			bufferevent_disable(c->cli, EV_READ);
	}
}

static void on_head_timer(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;
	char why[160];

	(void)fd;
	(void)what;
	snprintf(why, sizeof(why), "a request head not whole within %d ms (--client-timeout)",
		 c->loop->tap->o->client_timeout_ms);
	refuse_raw(c, 408, why, 0);
	maybe_refuse(c);
}

static void cli_read(struct bufferevent *bev, void *arg)
{
	struct rconn *c = arg;
	struct tap *t = c->loop->tap;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint64_t have = c->c2s_base + evbuffer_get_length(in);

	if (c->hs && c->up && !c->nfw && hx_reading(c->hs, HX_C2S) == HX_SWITCHED) {
		/* Another protocol now (a 101, a CONNECT tunnel): its bytes pass, not read. */
		c->c2s_base = c->c2s_fed = have;
		evbuffer_add_buffer(bufferevent_get_output(c->up), in);
		if (evbuffer_get_length(bufferevent_get_output(c->up)) > OUT_HIGH)
			bufferevent_disable(c->cli, EV_READ);
		return;
	}
	while (c->hs && !c->refusing && c->c2s_fed < have) {
		struct evbuffer_ptr ptr;
		struct evbuffer_iovec v[16];
		int nv;
		if (evbuffer_ptr_set(in, &ptr, (size_t)(c->c2s_fed - c->c2s_base), EVBUFFER_PTR_SET))
			break;
		nv = evbuffer_peek(in, -1, &ptr, v, 16);
		if (nv > 16)
			nv = 16;
		if (nv <= 0)
			break;
		for (int i = 0; i < nv && c->hs && !c->refusing; i++) {
			c->c2s_fed += v[i].iov_len;
			hx_data(c->hs, &c->tc, HX_C2S, v[i].iov_base, v[i].iov_len, now_us(), HX_ACK_UNKNOWN);
		}
	}
	c->c2s_fed = have;
	if (c->nfw)
		forward(c);
	if (!c->refusing && c->hs && hx_reading(c->hs, HX_C2S) == HX_NOT_HTTP)
		refuse(c, 400, "bytes that are not an HTTP/1.x request (TLS? HTTP/2?)", NULL);
	if (c->refusing) {
		maybe_refuse(c);
		return;
	}
	{
		/* What is held of a request not whole yet: bounded. */
		uint64_t held = c->c2s_fed - c->c2s_base;
		if (!c->head_seen && held > t->o->max_headers) {
			refuse(c, 431, "a request head above --max-headers", NULL);
			maybe_refuse(c);
			return;
		}
		if (c->head_seen && held > c->head_len + t->o->max_body + CHUNK_SLACK(t->o->max_body)) {
			refuse(c, 413, "a request body above --max-body", NULL);
			maybe_refuse(c);
			return;
		}
		if (held && !c->head_seen && !evtimer_pending(c->head_timer, NULL)) {
			struct timeval tv = {t->o->client_timeout_ms / 1000,
					     (t->o->client_timeout_ms % 1000) * 1000};
			evtimer_add(c->head_timer, &tv);
		}
	}
	mem_check(c);
}

static void cli_write(struct bufferevent *bev, void *arg)
{
	struct rconn *c = arg;

	mem_count(c);
	if (c->closing) {
		if (!evbuffer_get_length(bufferevent_get_output(bev)))
			event_active(c->free_ev, EV_TIMEOUT, 0);
		return;
	}
	if (c->up && !c->mem_paused)
		bufferevent_enable(c->up, EV_READ);
}

static void cli_event(struct bufferevent *bev, short what, void *arg)
{
	struct rconn *c = arg;
	const struct httptap_opts *o = c->loop->tap->o;
	char why[160];

	if (c->closing) {
		/* (what it was owed is lost: the client is gone or does not read) */
		event_active(c->free_ev, EV_TIMEOUT, 0);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		if (what & BEV_EVENT_READING) {
			/*
			 * Silent: closed when it owes a request's bytes, or nothing is
			 * open. Not when its last exchange ended less than the timeout
			 * ago: the timeout was due in the same turn of the loop as that
			 * end, and the client may be sending its next request on the
			 * connection kept alive right now.
			 */
			int64_t idle_us = now_us() - c->idle_since;
			if ((c->open && c->c2s_fed == c->c2s_base) ||
			    (!c->open && c->c2s_fed == c->c2s_base &&
			     idle_us < (int64_t)o->client_timeout_ms * 1000)) {
				if (!c->mem_paused && !out_full(c->up))
					bufferevent_enable(bev, EV_READ);
				return;
			}
			snprintf(why, sizeof(why), "the client sent nothing for %d ms (--client-timeout)",
				 o->client_timeout_ms);
		} else {
			snprintf(why, sizeof(why), "the client read nothing for %d ms (--client-timeout)",
				 o->client_timeout_ms);
		}
		conn_close(c, "client-gone", why);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		/* The client closed: what it sent before is read, then it is taken
		 * for gone (an HTTP client does not half-close awaiting an answer). */
		if (evbuffer_get_length(bufferevent_get_input(bev)))
			cli_read(bev, c);
		if (c->closing)
			return;
	}
	conn_close(c, "client-gone", NULL);
}

/*
 * c ends: the reader closes its connection (what is open ends with outcome
 * and why, unless complete), the upstream goes, and the client once what it
 * is owed has drained.
 */
static void conn_close(struct rconn *c, const char *outcome, const char *why)
{
	if (c->hs) {
		c->end_outcome = outcome;
		snprintf(c->end_why, sizeof(c->end_why), "%s", why ? why : "");
		if (c->held && c->cli)
			release_hold(c);
		struct hx_stream *hs = c->hs;
		c->hs = NULL;
		hx_close(hs, &c->tc, HX_FIN, now_us());
	}
	while (c->q)
		rx_free(c->q);
	if (c->up) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	evtimer_del(c->up_timer);
	evtimer_del(c->head_timer);
	close_after_output(c);
}

/* Free c (its reader's connection closed first). */
static void conn_free(struct rconn *c)
{
	struct loop *l = c->loop;

	if (c->hs)
		conn_close(c, "client-gone", NULL);
	if (c->cli) {
		bufferevent_free(c->cli);
		c->cli = NULL;
	}
	if (c->up)
		bufferevent_free(c->up);
	c->up = NULL;
	if (c->held)
		evbuffer_free(c->held);
	c->held = NULL;
	c->reserve = 0;
	mem_count(c); /* (to 0) */
	mem_run_done(c);
	for (size_t i = 0; i < c->nfw; i++)
		free(c->fw[i].head);
	free(c->fw);
	mt_buf_release(&c->edited);
	event_free(c->head_timer);
	event_free(c->up_timer);
	event_free(c->free_ev);
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
	maybe_stop(l);
}

static void on_free(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_free(arg);
}

static void end_of_sockaddr(const struct sockaddr *sa, struct hx_end *e)
{
	memset(e, 0, sizeof(*e));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		e->family = AF_INET;
		memcpy(e->addr, &s->sin_addr, 4);
		e->port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		e->family = AF_INET6;
		memcpy(e->addr, &s->sin6_addr, 16);
		e->port = ntohs(s->sin6_port);
	}
}

static void on_free(evutil_socket_t fd, short what, void *arg);

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct loop *l = arg;
	struct tap *t = l->tap;
	struct rconn *c;
	struct timeval rtv = {t->o->client_timeout_ms / 1000, (t->o->client_timeout_ms % 1000) * 1000};

	(void)lev;
	(void)salen;
	hln_watch_accepted(l->watch);
	if (l->stopping) {
		evutil_closesocket(fd);
		return;
	}
	c = mt_calloc(1, sizeof(*c));
	c->loop = l;
	c->cli = bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->head_timer = evtimer_new(l->base, on_head_timer, c);
	c->up_timer = evtimer_new(l->base, on_up_timer, c);
	c->free_ev = event_new(l->base, -1, 0, on_free, c);
	if (!c->cli || !c->head_timer || !c->up_timer || !c->free_ev) {
		if (c->cli)
			bufferevent_free(c->cli);
		else
			evutil_closesocket(fd);
		if (c->head_timer)
			event_free(c->head_timer);
		if (c->up_timer)
			event_free(c->up_timer);
		if (c->free_ev)
			event_free(c->free_ev);
		free(c);
		return;
	}
	{
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	c->num = hl_conn_new(t->log);
	c->tc.num = ++l->next_num;
	c->tc.saw_start = 1;
	c->tc.first_us = now_us();
	end_of_sockaddr(sa, &c->tc.client);
	end_of_sockaddr((struct sockaddr *)&t->up_addr, &c->tc.server);
	hln_addr_str(sa, c->addr, sizeof(c->addr));
	c->major = c->minor = 1;
	c->hs = hx_open(l->hx, &c->tc);
	bufferevent_setcb(c->cli, cli_read, cli_write, cli_event, c);
	bufferevent_setwatermark(c->cli, EV_WRITE, OUT_LOW, 0);
	bufferevent_set_timeouts(c->cli, &rtv, &rtv);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
}

/* ---- starting and stopping ---- */

static void stop_now(struct loop *l)
{
	while (l->conns) {
		struct rconn *c = l->conns;
		if (c->hs)
			conn_close(c, "stopped", "the tap was stopped");
		conn_free(c);
	}
	event_base_loopbreak(l->base);
}

static void on_stop_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop_now(arg);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	struct loop *l = arg;
	struct tap *t = l->tap;
	struct timeval tv = {t->o->stop_ms / 1000, (t->o->stop_ms % 1000) * 1000};
	uint64_t v;
	int how;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&t->mu);
	how = t->stopping;
	pthread_mutex_unlock(&t->mu);
	if (how >= 2) {
		stop_now(l);
		return;
	}
	if (l->stopping)
		return;
	l->stopping = 1;
	hln_watch_free(l->watch);
	l->watch = NULL;
	if (l->lev) {
		evconnlistener_free(l->lev);
		l->lev = NULL;
	}
	/* Idle connections go now; those with exchanges open get stop_ms. */
	for (struct rconn *c = l->conns, *next; c; c = next) {
		next = c->next;
		if (!c->open && !c->closing && c->c2s_fed == c->c2s_base)
			conn_close(c, "stopped", "the tap was stopped");
	}
	if (!l->exchanges) {
		event_base_loopbreak(l->base);
		return;
	}
	l->stop_timer = evtimer_new(l->base, on_stop_timer, l);
	evtimer_add(l->stop_timer, &tv);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct tap *t = arg;
	uint64_t one = 1;
	int again;

	(void)what;
	pthread_mutex_lock(&t->mu);
	again = t->stopping > 0;
	t->stopping = again ? 2 : 1;
	pthread_mutex_unlock(&t->mu);
	if (again)
		mt_voice_warn(&t->o->voice, "%s again: stopping now", sig == SIGINT ? "SIGINT" : "SIGTERM");
	for (int i = 0; i < t->nloops; i++)
		if (write(t->loops[i].stop_fd, &one, sizeof(one)) < 0)
			mt_voice_warn(&t->o->voice, "cannot tell a loop to stop: %s", strerror(errno));
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	struct tap *t = l->tap;
	uint64_t one = 1;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	event_base_dispatch(l->base);
	while (l->conns) {
		struct rconn *c = l->conns;
		if (c->hs)
			conn_close(c, "stopped", "the tap was stopped");
		conn_free(c);
	}
	if (write(t->done_fd, &one, sizeof(one)) < 0)
		mt_voice_warn(&t->o->voice, "cannot say a loop has ended: %s", strerror(errno));
	return NULL;
}

/*
 * After big bodies, once none is open and the writer holds nothing, what
 * was freed goes back to the system: glibc keeps freed memory in its
 * arenas (30 bodies of 15 MB left 890 MB resident; 17 MB after a trim).
 */
static void on_trim_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tap *t = arg;

	(void)fd;
	(void)what;
	if (!__atomic_load_n(&t->big_since_trim, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&t->big_open, __ATOMIC_RELAXED))
		return;
	if (writer_reclaim(t->w))
		return;
	__atomic_store_n(&t->big_since_trim, 0, __ATOMIC_RELAXED);
	malloc_trim(0);
}

static void on_loop_done(evutil_socket_t fd, short what, void *arg)
{
	struct tap *t = arg;
	uint64_t v = 0;

	(void)what;
	if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		t->loops_done += (int)v;
	if (t->loops_done >= t->nloops)
		event_base_loopbreak(t->ctl);
}

static void say_refused(void *arg, const char *text)
{
	struct tap *t = arg;

	mt_voice_warn(&t->o->voice, "%s", text);
}

void httptap_opts_default(struct httptap_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:8808";
	o->max_headers = 64 * 1024;
	o->max_body = 16u << 20;
	o->connect_timeout_ms = 10000;
	o->upstream_timeout_ms = 300000;
	o->client_timeout_ms = 60000;
	o->stop_ms = 2000;
	o->memory = 64u << 20;
	{
		cpu_set_t cpus;
		int n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
		o->threads = n < 1 ? 1 : n > 8 ? 8 : n;
	}
	writer_opts_default(&o->wopts);
}

static int loop_init(struct tap *t, struct loop *l, int idx, evutil_socket_t fd, struct mt_err *err)
{
	struct event_config *cfg = event_config_new();
	struct hx_opts ho;
	struct hx_sink sink = {
		.ctx = l,
		.conn_open = sk_conn_open,
		.swap = sk_swap,
		.request_head = sk_request_head,
		.request = sk_request,
		.request_error = sk_request_error,
		.response_head = sk_response_head,
		.response_body = sk_response_body,
		.response_gap = sk_response_gap,
		.end = sk_end,
		.conn_close = sk_conn_close,
	};

	l->tap = t;
	l->idx = idx;
	l->stop_fd = -1;
	if (cfg) {
		event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		l->base = event_base_new_with_config(cfg);
		event_config_free(cfg);
	}
	if (!l->base)
		goto fail;
	hx_opts_default(&ho);
	/* (A body above --max-message is not stored: the reader keeps no more of it.) */
	ho.max_body = t->o->max_body < t->o->wopts.max_message ? t->o->max_body : t->o->wopts.max_message;
	t->reader_max = ho.max_body;
	l->hx = hx_new(&ho, &sink);
	l->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->stop_fd < 0)
		goto fail;
	l->lev = evconnlistener_new(l->base, on_accept, l, LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (!l->lev)
		goto fail;
	fd = -1;
	l->watch = hln_watch_new(l->lev, t->pace, err);
	if (!l->watch)
		return -1; /* (fd is the listener's) */
	l->stop_ev = event_new(l->base, l->stop_fd, EV_READ | EV_PERSIST, on_stop, l);
	l->mem_timer = evtimer_new(l->base, on_mem_timer, l);
	l->scratch = evbuffer_new();
	if (!l->stop_ev || !l->mem_timer || !l->scratch || event_add(l->stop_ev, NULL))
		goto fail;
	return 0;
fail:
	mt_err_set(err, "cannot set up event loop %d: %s", idx, strerror(errno));
	if (fd >= 0)
		evutil_closesocket(fd);
	return -1;
}

static void loop_release(struct loop *l)
{
	hln_watch_free(l->watch);
	if (l->lev)
		evconnlistener_free(l->lev);
	while (l->conns) {
		struct rconn *c = l->conns;
		if (c->hs)
			conn_close(c, "stopped", "the tap was stopped");
		conn_free(c);
	}
	if (l->hx)
		hx_free(l->hx);
	if (l->stop_timer)
		event_free(l->stop_timer);
	if (l->stop_ev)
		event_free(l->stop_ev);
	if (l->mem_timer)
		event_free(l->mem_timer);
	if (l->scratch)
		evbuffer_free(l->scratch);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	if (l->base)
		event_base_free(l->base);
}

/*
 * The upstream URL's parts: origin (scheme://authority), authority (what
 * Host says), host name, address (resolved once, now), query. 0, or -1 (err).
 */
static int upstream_parse(struct tap *t, const char *shown, char **query_owned, struct mt_err *err)
{
	const char *url = t->o->upstream, *p, *q;
	size_t alen;
	char port[16];
	struct addrinfo hints, *ai = NULL;
	int rc;

	t->https = !strncasecmp(url, "https://", 8);
	if (!t->https && strncasecmp(url, "http://", 7))
		goto bad;
	p = url + (t->https ? 8 : 7);
	alen = strcspn(p, "/?#");
	if (!alen || alen >= sizeof(t->authority) || memchr(p, '@', alen))
		goto bad;
	snprintf(t->authority, sizeof(t->authority), "%.*s", (int)alen, p);
	snprintf(t->origin, sizeof(t->origin), "%.*s", (int)(p - url + (long)alen), url);
	{
		const char *sp = strchr(shown, ':');
		size_t sl = sp ? strcspn(sp + 3, "/?#") : 0;
		snprintf(t->shown, sizeof(t->shown), "%.*s", sp ? (int)(sp + 3 - shown + (long)sl) : 0,
			 shown);
	}
	if (p[0] == '[') {
		const char *rb = memchr(p, ']', alen);
		if (!rb)
			goto bad;
		snprintf(t->hostname, sizeof(t->hostname), "%.*s", (int)(rb - p - 1), p + 1);
		q = rb + 1;
	} else {
		const char *colon = memchr(p, ':', alen);
		q = colon ? colon : p + alen;
		snprintf(t->hostname, sizeof(t->hostname), "%.*s", (int)(q - p), p);
	}
	if (q < p + alen && *q == ':')
		snprintf(port, sizeof(port), "%.*s", (int)(p + alen - q - 1), q + 1);
	else
		snprintf(port, sizeof(port), "%s", t->https ? "443" : "80");
	q = strchr(url, '?');
	if (q && q[1] && q[1] != '#') {
		size_t qn = strcspn(q + 1, "#");
		t->query = *query_owned = mt_strndup(q + 1, qn);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(t->hostname, port, &hints, &ai);
	if (rc || !ai) {
		return mt_err_set(err, "cannot resolve the upstream's host '%s': %s", t->hostname,
				  rc ? gai_strerror(rc) : "no address");
	}
	memcpy(&t->up_addr, ai->ai_addr, ai->ai_addrlen);
	t->up_len = (socklen_t)ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
bad:
	return mt_err_set(err, "bad --upstream '%s': an http:// or https:// URL", shown);
}

/* The TLS context for an https upstream: the system's CAs and --cacert, verification on. 0 or -1 (err). */
static int tls_init(struct tap *t, struct mt_err *err)
{
	static const unsigned char alpn[] = "\x08http/1.1";

	t->ssl = SSL_CTX_new(TLS_client_method());
	if (!t->ssl) {
		return mt_err_set(err, "cannot set up TLS");
	}
	SSL_CTX_set_min_proto_version(t->ssl, TLS1_2_VERSION);
	SSL_CTX_set_alpn_protos(t->ssl, alpn, sizeof(alpn) - 1);
	if (!t->o->insecure) {
		SSL_CTX_set_verify(t->ssl, SSL_VERIFY_PEER, NULL);
		if (SSL_CTX_set_default_verify_paths(t->ssl) != 1)
			mt_voice_warn(&t->o->voice, "cannot load the system's CA certificates");
		if (t->o->cacert && SSL_CTX_load_verify_locations(t->ssl, t->o->cacert, NULL) != 1) {
			return mt_err_set(err, "cannot read --cacert '%s'", t->o->cacert);
		}
	}
	return 0;
}

int httptap_run(const struct httptap_opts *o, struct mt_err *err)
{
	struct tap t;
	char host[256], *query_owned = NULL;
	int port, bound_port = 0, rc = EXIT_ERROR, started = 0;
	sigset_t set;

	memset(&t, 0, sizeof(t));
	t.o = o;
	t.done_fd = -1;
	pthread_mutex_init(&t.mu, NULL);
	if (upstream_parse(&t, o->upstream_shown ? o->upstream_shown : o->upstream, &query_owned, err))
		goto early;
	if (mt_split_listen(o->listen, host, sizeof(host), &port)) {
		mt_err_set(err, "bad --listen '%s': HOST:PORT", o->listen);
		goto early;
	}
	if (t.https && tls_init(&t, err))
		goto early;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	t.nloops = o->threads > 0 ? o->threads : 1;
	t.loops = mt_calloc((size_t)t.nloops, sizeof(*t.loops));
	t.pace = hln_pace_new(say_refused, &t);
	t.guard.allow = o->allow_hosts;
	t.guard.n_allow = o->n_allow_hosts;
	t.w = writer_open_shared(o->db_path, &o->wopts, err);
	if (!t.w) { /* (its thread would not start: nothing runs yet) */
		t.nloops = 0;
		goto out;
	}
	{
		struct hl_opts lo;
		memset(&lo, 0, sizeof(lo));
		lo.w = t.w;
		lo.upstream = o->upstream_shown ? o->upstream_shown : o->upstream;
		lo.max_message = o->wopts.max_message;
		lo.on_end = o->on_end;
		lo.on_end_ctx = o->on_end_ctx;
		t.log = hl_new(&lo);
	}
	for (int i = 0; i < t.nloops; i++) {
		evutil_socket_t fd = hln_listen(host, i ? bound_port : port, 1, &bound_port);
		if (fd < 0) {
			mt_err_set(err, "cannot listen on %s: %s", o->listen, strerror(errno));
			t.nloops = i;
			goto out;
		}
		if (!i)
			t.guard.loopback = hln_fd_loopback(fd);
		if (loop_init(&t, &t.loops[i], i, fd, err)) {
			t.nloops = i + 1;
			goto out;
		}
	}
	t.ctl = event_base_new();
	t.done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!t.ctl || t.done_fd < 0) {
		mt_err_set(err, "cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	{
		char name[300], *line;
		snprintf(name, sizeof(name), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, bound_port);
		line = mt_asprintf("mcptap: listening on http://%s, forwarding to %s\n", name, t.shown);
		mt_voice_say(&o->voice, line);
		free(line);
	}
	if (o->insecure)
		mt_voice_warn(&o->voice,
			      "--insecure: the upstream's certificate and host name are not checked");
	t.sig_int = evsignal_new(t.ctl, SIGINT, on_signal, &t);
	t.sig_term = evsignal_new(t.ctl, SIGTERM, on_signal, &t);
	t.done_ev = event_new(t.ctl, t.done_fd, EV_READ | EV_PERSIST, on_loop_done, &t);
	evsignal_add(t.sig_int, NULL);
	evsignal_add(t.sig_term, NULL);
	event_add(t.done_ev, NULL);
	t.trim_ev = event_new(t.ctl, -1, EV_PERSIST, on_trim_tick, &t);
	if (t.trim_ev) {
		struct timeval tv = {TRIM_EVERY_MS / 1000, (TRIM_EVERY_MS % 1000) * 1000};
		event_add(t.trim_ev, &tv);
	}
	for (started = 0; started < t.nloops; started++) {
		int e = pthread_create(&t.loops[started].thread, NULL, loop_main, &t.loops[started]);
		if (e) {
			/* (Said now, before the stop below says "again".) */
			mt_voice_error(&o->voice, "cannot start a loop's thread: %s", strerror(e));
			on_signal(SIGTERM, 0, &t);
			on_signal(SIGTERM, 0, &t);
			break;
		}
	}
	if (started)
		event_base_dispatch(t.ctl);
	for (int i = 0; i < started; i++)
		pthread_join(t.loops[i].thread, NULL);
	rc = started == t.nloops ? EXIT_OK : EXIT_ERROR;
out:
	for (int i = 0; i < t.nloops; i++)
		loop_release(&t.loops[i]);
	free(t.loops);
	hln_pace_free(t.pace);
	hl_free(t.log);
	if (t.w)
		writer_finish(t.w, NULL, NULL);
	if (t.sig_int)
		event_free(t.sig_int);
	if (t.sig_term)
		event_free(t.sig_term);
	if (t.done_ev)
		event_free(t.done_ev);
	if (t.trim_ev)
		event_free(t.trim_ev);
	if (t.done_fd >= 0)
		close(t.done_fd);
	if (t.ctl)
		event_base_free(t.ctl);
early:
	if (t.ssl)
		SSL_CTX_free(t.ssl);
	free(query_owned);
	pthread_mutex_destroy(&t.mu);
	return rc;
}
