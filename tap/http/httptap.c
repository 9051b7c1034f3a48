/*
 * httptap.c - the HTTP tap (see httptap.h).
 *
 * Each request from a client is one exchange: a curl transfer to the same
 * path on the upstream, its response streamed back through evhttp. The tap
 * reads what it forwards: the request body (one JSON-RPC message or batch),
 * a JSON response body, each SSE event. Headers pass unchanged but those
 * that are hop-by-hop (RFC 9110 7.6.1); the upstream is asked for identity
 * encoding; Host names the upstream.
 *
 * What is stored of each exchange (its session, its messages, its row) is
 * tap/http/httplog.c's business, shared with pcap import: this file says what it
 * reads as it forwards it.
 *
 * Flow control: a response chunk goes to the client's output buffer at once;
 * while that buffer holds more than OUT_HIGH bytes the curl transfer is
 * paused, and it resumes when the buffer has drained. Memory per exchange
 * is bounded by that, by the SSE parser's event limit and by --max-message.
 */
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <jansson.h>

#include "schema/cli.h"
#include "schema/message.h"
#include "schema/redact.h"
#include "tap/http/httphdr.h"
#include "tap/http/httplisten.h"
#include "tap/http/httplog.h"
#include "tap/http/httpserve.h"
#include "tap/http/httpsess.h"
#include "tap/http/httptap.h"

/* A client's output buffer above this pauses the upstream transfer. */
#define OUT_HIGH (256 * 1024)
/* An exchange with a body this big makes the tap give freed memory back once idle. */
#define TRIM_AFTER (1u << 20)
/* How often the control loop looks (ms). */
#define TRIM_EVERY_MS 1000

/* A legacy SSE stream's first event is held up to this, waiting to be whole. */
#define HOLD_MAX (64 * 1024)

struct tap;
struct loop;
struct hconn;

/*
 * A list of header fields. The response's are copied into one buffer as they
 * come (hdr_add), their pointers made when the head is whole (hdr_fix); the
 * request's are borrowed from evhttp for the handler's duration.
 */
struct hdr_list {
	struct mt_hdr *h;
	size_t *off;          /* copied fields: name and value offsets in text */
	size_t n, cap;
	struct mt_buf text;   /* "name\0value\0"... */
};
/* One request and its response; it lives on its connection's loop. */
struct exch {
	struct loop *loop;
	struct hconn *conn;
	struct exch *next_in_conn, *prev_all, *next_all;
	struct evhttp_request *req; /* NULL once the client is gone */
	CURL *easy;
	struct curl_slist *hdrs; /* one block (upstream_list) */
	struct hl_exch *hx;   /* what is stored of it (httplog) */
	char method[16];
	char *body;           /* the request body (curl reads it) */
	size_t body_len;
	size_t resp_bytes;    /* of the response body, so far */
	int big;              /* counted in big_open */
	/* The response. */
	int status;
	char reason[64];
	struct hdr_list rh;
	int head_sent;
	int is_sse, is_json;
	int paused;
	int resume;           /* the client's buffer drained: unpause (from l->unpause) */
	int done;
	/* A legacy SSE stream's start is held until its first event is whole: an
	 * endpoint event with an absolute URI is rewritten to name the tap. */
	int hold;
	struct mt_buf held;
	struct event *idle;   /* the upstream's silence (not on SSE streams) */
	char *host;           /* the request's Host: the tap as the client names it */
	char *rewrite_from;   /* the endpoint's scheme://authority, and the tap's */
	char *rewrite_to;
};

struct hconn {
	struct loop *loop;
	struct evhttp_connection *evcon;
	int64_t num;
	char addr[80];
	struct exch *xs;
	struct hconn *next, *prev;
};

/*
 * One event loop, in a thread of its own: its evhttp accepts from the shared
 * listening socket, its curl multi talks to the upstream. A connection and
 * its exchanges stay on the loop that accepted it.
 */
struct loop {
	struct tap *tap;
	int idx;
	pthread_t thread;
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	struct hln_watch *watch;  /* pauses accepting at the descriptor limit */
	CURLM *multi;
	struct event *curl_timer;
	struct event *stop_timer;
	struct event *unpause;  /* resumes paused transfers, outside libevent's write callback */
	struct event *stop_ev;  /* the stop is said through stop_fd (an eventfd) */
	int stop_fd;
	struct hconn *conns;
	struct exch *all;
	int stopping;         /* this loop's copy of the tap's */
	int exchanges;        /* in flight on this loop */
	struct mt_buf scratch2;
	struct evbuffer *chunk;  /* a response chunk on its way to evhttp */
	CURL *pool[64];       /* easy handles of ended transfers, reset, for the next ones */
	int npool;
};

/* What the loops share: the sessions and the store. */
struct tap {
	const struct httptap_opts *o;
	char origin[512];     /* the upstream's scheme://authority */
	const char *query;    /* the upstream URL's query (after '?'), or NULL */
	char shown[512];      /* origin as said: its credentials redacted */
	char capath[512];
	struct hln_guard guard; /* on loopback: the Host and Origin let in */
	struct hln_pace *pace;  /* refused accepts, said at most once a second for all loops */
	struct writer *w;     /* stores every session, on one connection */
	struct hl_log *log;   /* the sessions, and what is stored of each exchange */
	struct loop *loops;
	int nloops;
	/* The control loop, in the thread that called httptap_run: the signals,
	 * and the loops' ends (through done_fd, an eventfd). */
	struct event_base *ctl;
	struct event *sig_int, *sig_term, *done_ev;
	int done_fd;
	int loops_done;
	/* Under mu: */
	pthread_mutex_t mu;
	int stopping;         /* 1: stop accepting and end; 2: end now */
	int upstream_down;    /* the upstream's failure was said: said again when it answers
			       * (read without mu on the hot path: __atomic) */
	int big_since_trim;   /* a body of TRIM_AFTER or more ended since the last trim (__atomic) */
	int big_open;         /* exchanges open with such a body (__atomic): streams that stay
			       * open all session do not keep the memory of others */
	struct event *trim_ev; /* the control loop's look at whether to give memory back */
};

/* ---- headers ---- */

static void hdr_grow(struct hdr_list *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->h = mt_realloc(l->h, l->cap * sizeof(*l->h));
		l->off = mt_realloc(l->off, 2 * l->cap * sizeof(*l->off));
	}
}

/* Copy a field in (its pointers are made by hdr_fix). */
static void hdr_add(struct hdr_list *l, const char *name, size_t nn, const char *value, size_t vn)
{
	hdr_grow(l);
	l->off[2 * l->n] = l->text.len;
	mt_buf_append(&l->text, name, nn);
	mt_buf_putc(&l->text, '\0');
	l->off[2 * l->n + 1] = l->text.len;
	mt_buf_append(&l->text, value, vn);
	mt_buf_putc(&l->text, '\0');
	l->n++;
}

/* The copied fields' pointers, once they are all in. */
static void hdr_fix(struct hdr_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		l->h[i].name = l->text.data + l->off[2 * i];
		l->h[i].value = l->text.data + l->off[2 * i + 1];
	}
}

static void hdr_clear(struct hdr_list *l)
{
	l->n = 0;
	mt_buf_reset(&l->text);
}

static void hdr_free(struct hdr_list *l)
{
	free(l->h);
	free(l->off);
	mt_buf_release(&l->text);
	memset(l, 0, sizeof(*l));
}

/* The request's headers as a list (borrowed from evhttp). */
static void req_headers(struct evhttp_request *req, struct hdr_list *l)
{
	struct evkeyvalq *q = evhttp_request_get_input_headers(req);

	for (struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		hdr_grow(l);
		l->h[l->n].name = kv->key;
		l->h[l->n].value = kv->value;
		l->n++;
	}
}

/* ---- the exchange's end ---- */

static void exch_unlink(struct exch *x)
{
	struct loop *l = x->loop;

	if (x->conn) {
		for (struct exch **pp = &x->conn->xs; *pp; pp = &(*pp)->next_in_conn)
			if (*pp == x) {
				*pp = x->next_in_conn;
				break;
			}
		x->conn = NULL;
	}
	if (x->prev_all)
		x->prev_all->next_all = x->next_all;
	else if (l->all == x)
		l->all = x->next_all;
	if (x->next_all)
		x->next_all->prev_all = x->prev_all;
	x->prev_all = x->next_all = NULL;
}

static void maybe_stop(struct loop *l);
static void check_done(struct loop *l);
static void send_held(struct exch *x);
static void on_upstream_silent(evutil_socket_t fd, short what, void *arg);

/* Record how the exchange ended and free it (the client side is dealt with). */
/*
 * The upstream failed an exchange (outcome unreachable, upstream-gone or
 * timeout, why the error): said once on stderr, until it answers again
 * (upstream_back). Whatever the clients do, one line per outage.
 */
static void upstream_failed(struct tap *t, const char *outcome, const char *why)
{
	int said;

	pthread_mutex_lock(&t->mu);
	said = t->upstream_down;
	__atomic_store_n(&t->upstream_down, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&t->mu);
	if (!said)
		mt_warn("the upstream %s (%s): clients get the tap's 502 or 504, or a cut "
			"response, until it answers again",
			!strcmp(outcome, "unreachable")	  ? "cannot be reached"
			: !strcmp(outcome, "timeout") ? "is silent"
						      : "closed a connection without a whole answer",
			why ? why : "no reason given");
}

/* A response head came from the upstream: after a failure said, that it is back. */
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
		fprintf(stderr, "mcptap: the upstream answers again\n");
}

static void exch_end(struct exch *x, const char *outcome, const char *error)
{
	struct loop *l = x->loop;
	struct tap *t = l->tap;

	if (x->done)
		return;
	x->done = 1;
	if (!strcmp(outcome, "unreachable") || !strcmp(outcome, "upstream-gone") ||
	    !strcmp(outcome, "timeout"))
		upstream_failed(t, outcome, error);
	if (x->big) {
		__atomic_store_n(&t->big_since_trim, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&t->big_open, 1, __ATOMIC_RELAXED);
	}
	if (x->easy) {
		curl_multi_remove_handle(l->multi, x->easy);
		/* A handle is costly to make; its connection stays in the multi's cache. */
		if (l->npool < (int)(sizeof(l->pool) / sizeof(l->pool[0]))) {
			curl_easy_reset(x->easy);
			l->pool[l->npool++] = x->easy;
		} else {
			curl_easy_cleanup(x->easy);
		}
		x->easy = NULL;
	}
	if (x->idle) {
		event_free(x->idle);
		x->idle = NULL;
	}
	hl_end(t->log, x->hx, outcome, error);
	x->hx = NULL;
	l->exchanges--;
	exch_unlink(x);
	free(x->hdrs); /* (one block: upstream_list) */
	hdr_free(&x->rh);
	mt_buf_release(&x->held);
	free(x->host);
	free(x->rewrite_from);
	free(x->rewrite_to);
	free(x->body);
	free(x);
	maybe_stop(l);
}

/* ---- the response, from curl ---- */

static void send_head(struct exch *x)
{
	struct tap *t = x->loop->tap;
	const struct hl_info *info = hl_info(x->hx);

	x->head_sent = 1;
	/* What the session is, as the response says, and the head stored. */
	hl_response_head(t->log, x->hx, x->status, x->rh.h, x->rh.n);
	x->is_sse = info->is_sse;
	x->is_json = info->is_json;
	if (x->is_sse && x->idle)
		evtimer_del(x->idle);
	x->hold = info->endpoint_stream;
	if (!x->req)
		return;
	struct evkeyvalq *out = evhttp_request_get_output_headers(x->req);
	struct mt_hdr_dropped dropped;
	unsigned char keep_small[64], *keep = x->rh.n < 64 ? keep_small : mt_malloc(x->rh.n);
	mt_hdr_filter(x->rh.h, x->rh.n, MT_HDR_RESPONSE, keep, &dropped);
	for (size_t i = 0; i < x->rh.n; i++)
		if (keep[i])
			evhttp_add_header(out, x->rh.h[i].name, x->rh.h[i].value);
	if (keep != keep_small)
		free(keep);
	/* A length the upstream gave is kept (the bytes are the same): the reply is
	 * not re-chunked then. (curl has taken a chunked body apart already.) */
	if (dropped.content_length && !dropped.content_length_differs &&
	    !mt_hdr_get(x->rh.h, x->rh.n, "Transfer-Encoding"))
		evhttp_add_header(out, "Content-Length", dropped.content_length);
	evhttp_send_reply_start(x->req, x->status, x->reason[0] ? x->reason : NULL);
	if (x->is_sse) {
		/* An SSE stream may be idle for as long as it likes, both ways; a
		 * client that does not take what is sent to it is still timed out. */
		struct evhttp_connection *evcon = evhttp_request_get_connection(x->req);
		struct timeval wtv = {t->o->client_timeout_ms / 1000,
				      (t->o->client_timeout_ms % 1000) * 1000};
		if (evcon)
			bufferevent_set_timeouts(evhttp_connection_get_bufferevent(evcon), NULL, &wtv);
	}
}

/* The upstream said something: its silence starts again (not on SSE streams). */
static void upstream_alive(struct exch *x)
{
	struct timeval tv = {x->loop->tap->o->upstream_timeout_ms / 1000,
			     (x->loop->tap->o->upstream_timeout_ms % 1000) * 1000};

	if (x->idle && !x->is_sse)
		evtimer_add(x->idle, &tv);
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct exch *x = ud;
	size_t n = size * nitems, m = n;

	if (x->done)
		return 0;
	upstream_alive(x);
	while (m && (buf[m - 1] == '\n' || buf[m - 1] == '\r'))
		m--;
	if (n >= 5 && !memcmp(buf, "HTTP/", 5)) {
		/* A status line: "HTTP/1.1 200 OK", "HTTP/2 200". */
		const char *p = memchr(buf, ' ', m);
		hdr_clear(&x->rh);
		x->status = 0;
		x->reason[0] = '\0';
		if (p) {
			x->status = atoi(p + 1);
			const char *r = memchr(p + 1, ' ', m - (size_t)(p + 1 - buf));
			if (r) {
				size_t rn = m - (size_t)(r + 1 - buf);
				if (rn >= sizeof(x->reason))
					rn = sizeof(x->reason) - 1;
				memcpy(x->reason, r + 1, rn);
				x->reason[rn] = '\0';
			}
		}
		return n;
	}
	if (m == 0) {
		/* The head's end. Interim (1xx) heads are the hop's business. */
		if (x->status >= 200 && !x->head_sent) {
			hdr_fix(&x->rh);
			upstream_back(x->loop->tap);
			send_head(x);
		}
		return n;
	}
	if (x->head_sent)
		return n; /* trailers */
	const char *colon = memchr(buf, ':', m);
	if (!colon)
		return n;
	const char *v = colon + 1, *e = buf + m;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	hdr_add(&x->rh, buf, (size_t)(colon - buf), v, (size_t)(e - v));
	return n;
}

/* The client's output buffer drained: its paused transfers may go on. */
static void on_drained(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *c = arg;
	int any = 0;

	(void)evcon;
	for (struct exch *x = c->xs; x; x = x->next_in_conn)
		if (x->paused) {
			x->resume = 1;
			any = 1;
		}
	if (any)
		event_active(c->loop->unpause, EV_TIMEOUT, 0);
}

/* (curl_easy_pause may deliver data, end the transfer and free the exchange.) */
static void on_unpause(evutil_socket_t fd, short what, void *arg)
{
	struct loop *l = arg;
	int again = 1;

	(void)fd;
	(void)what;
	while (again) {
		again = 0;
		for (struct exch *x = l->all; x; x = x->next_all)
			if (x->resume && x->easy) {
				x->resume = 0;
				x->paused = 0;
				curl_easy_pause(x->easy, CURLPAUSE_CONT);
				again = 1; /* the list may have changed: walk it again */
				break;
			}
	}
	check_done(l);
}

static size_t on_body(char *buf, size_t size, size_t nitems, void *ud)
{
	struct exch *x = ud;
	size_t n = size * nitems;

	if (x->done)
		return 0;
	upstream_alive(x);
	x->resp_bytes += n;
	if (!x->big && x->resp_bytes >= TRIM_AFTER) {
		x->big = 1;
		__atomic_add_fetch(&x->loop->tap->big_open, 1, __ATOMIC_RELAXED);
	}
	if (!x->head_sent) {
		hdr_fix(&x->rh);
		send_head(x); /* (a head without its blank line: HTTP/0.9) */
	}
	if (x->hold) {
		const struct hl_info *info = hl_info(x->hx);
		mt_buf_append(&x->held, buf, n);
		hl_response_body(x->loop->tap->log, x->hx, buf, n);
		if (info->endpoint && !x->rewrite_from && x->host) {
			/* An absolute URI names the upstream: the client would go round
			 * the tap. It is given the tap's origin instead (what is stored is
			 * what the server said). */
			const char *target = hs_uri_target(info->endpoint);
			if (target != info->endpoint) {
				x->rewrite_from = mt_strndup(info->endpoint,
							     (size_t)(target - info->endpoint));
				x->rewrite_to = mt_asprintf("http://%s", x->host);
			}
		}
		if (!info->events && x->held.len < HOLD_MAX)
			return n;
		x->hold = 0;
		send_held(x);
		return n;
	}
	if (x->req) {
		struct evhttp_connection *evcon = evhttp_request_get_connection(x->req);
		struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
		if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > OUT_HIGH) {
			x->paused = 1;
			return CURL_WRITEFUNC_PAUSE; /* (curl gives the same bytes again) */
		}
	}
	/* Read what is forwarded. An SSE event is logged before its bytes go to
	 * the client (who may answer it on a connection of another loop: the
	 * answer must come after it in the session's order). */
	if (x->is_sse)
		hl_response_body(x->loop->tap->log, x->hx, buf, n);
	if (x->req) {
		/* (evhttp moves what the buffer holds: it is empty again after.) */
		evbuffer_add(x->loop->chunk, buf, n);
		evhttp_send_reply_chunk_with_cb(x->req, x->loop->chunk, on_drained, x->conn);
	}
	if (!x->is_sse)
		hl_response_body(x->loop->tap->log, x->hx, buf, n); /* (kept, bounded) */
	return n;
}

/* The start of a legacy SSE stream, its endpoint rewritten when it must be. */
static void send_held(struct exch *x)
{
	struct evbuffer *eb;
	const char *p = x->held.data, *at = NULL;
	size_t n = x->held.len;

	if (!x->req || !n)
		return;
	eb = evbuffer_new();
	if (x->rewrite_from)
		at = memmem(p, n, x->rewrite_from, strlen(x->rewrite_from));
	if (at) {
		evbuffer_add(eb, p, (size_t)(at - p));
		evbuffer_add(eb, x->rewrite_to, strlen(x->rewrite_to));
		at += strlen(x->rewrite_from);
		evbuffer_add(eb, at, n - (size_t)(at - p));
	} else {
		evbuffer_add(eb, p, n);
	}
	evhttp_send_reply_chunk_with_cb(x->req, eb, on_drained, x->conn);
	evbuffer_free(eb);
	mt_buf_release(&x->held);
}

/* The tap's own answer (502, 504): a JSON-RPC error naming the request's id when it had one. */
static void send_error_body(struct exch *x, int status, const char *reason, const char *why)
{
	struct evbuffer *eb = evbuffer_new();
	json_t *msg = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code",
				-32000, "message", why);
	char *text;

	if (hl_info(x->hx)->rpc_id) {
		json_t *id = json_loads(hl_info(x->hx)->rpc_id, JSON_DECODE_ANY, NULL);
		if (id)
			json_object_set_new(msg, "id", id);
	}
	text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
	evbuffer_add(eb, text, strlen(text));
	evhttp_add_header(evhttp_request_get_output_headers(x->req), "Content-Type",
			  "application/json");
	evhttp_send_reply(x->req, status, reason, eb);
	x->req = NULL; /* evhttp frees it once sent */
	{
		static const struct mt_hdr ct = {"Content-Type", "application/json"};
		hl_response_head(x->loop->tap->log, x->hx, status, &ct, 1);
	}
	free(text);
	json_decref(msg);
	evbuffer_free(eb);
}

/* curl finished a transfer. */
static void transfer_done(struct exch *x, CURLcode res)
{
	char why[CURL_ERROR_SIZE + 64];
	const char *outcome = "complete";

	if (res == CURLE_URL_MALFORMAT && !x->head_sent) {
		/* The client's target makes no URL: its fault, not the upstream's. */
		if (x->req)
			send_error_body(x, 400, "Bad Request",
					"mcptap: refused: a request target that makes no URL");
		exch_end(x, "refused", "a request target that makes no URL");
		return;
	}
	if (res != CURLE_OK) {
		outcome = res == CURLE_OPERATION_TIMEDOUT ? "timeout"
			  : !x->head_sent && (res == CURLE_COULDNT_CONNECT ||
					      res == CURLE_COULDNT_RESOLVE_HOST ||
					      res == CURLE_PEER_FAILED_VERIFICATION ||
					      res == CURLE_SSL_CONNECT_ERROR ||
					      res == CURLE_SSL_CACERT_BADFILE)
			  ? "unreachable"
			  : "upstream-gone";
		snprintf(why, sizeof(why), "%s", curl_easy_strerror(res));
	}
	if (!x->head_sent) {
		if (x->req) {
			char msg[CURL_ERROR_SIZE + 128];
			snprintf(msg, sizeof(msg), "mcptap: the upstream %s: %s",
				 res == CURLE_OK ? "sent no response" : "could not be reached",
				 res == CURLE_OK ? "empty reply" : why);
			send_error_body(x, 502, "Bad Gateway", msg);
		}
		exch_end(x, res == CURLE_OK ? "upstream-gone" : outcome,
			 res == CURLE_OK ? "no response" : why);
		return;
	}
	if (x->hold) {
		x->hold = 0;
		send_held(x); /* (the stream ended before its first event did) */
	}
	if (res == CURLE_OK) {
		if (x->req)
			evhttp_send_reply_end(x->req);
		x->req = NULL;
		exch_end(x, outcome, NULL);
		return;
	}
	/* The upstream went away mid-response: so does the client's connection, so
	 * that the client sees a cut response, as it would without the tap. */
	struct hconn *c = x->conn;
	exch_end(x, outcome, why);
	if (c && c->evcon)
		evhttp_connection_free(c->evcon); /* (on_conn_close frees c) */
}

static void check_done(struct loop *l)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(l->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct exch *x = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (x)
			transfer_done(x, msg->data.result);
	}
}

/* ---- curl on libevent ---- */

static void on_curl_event(evutil_socket_t fd, short what, void *arg)
{
	struct loop *l = arg;
	int running;
	int action = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);

	curl_multi_socket_action(l->multi, fd, action, &running);
	check_done(l);
}

static void on_curl_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct loop *l = arg;
	int running;

	(void)fd;
	(void)what;
	curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(l);
}

static int curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct loop *l = userp;
	struct event *ev = socketp;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (ev) {
			event_free(ev);
			curl_multi_assign(l->multi, s, NULL);
		}
		return 0;
	}
	short kind = (short)((what & CURL_POLL_IN ? EV_READ : 0) |
			     (what & CURL_POLL_OUT ? EV_WRITE : 0) | EV_PERSIST);
	if (ev) {
		event_del(ev);
		event_assign(ev, l->base, s, kind, on_curl_event, l);
	} else {
		ev = event_new(l->base, s, kind, on_curl_event, l);
		curl_multi_assign(l->multi, s, ev);
	}
	event_add(ev, NULL);
	return 0;
}

static int curl_timer_cb(CURLM *m, long ms, void *userp)
{
	struct loop *l = userp;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	(void)m;
	if (ms < 0)
		evtimer_del(l->curl_timer);
	else
		evtimer_add(l->curl_timer, &tv);
	return 0;
}

/* ---- the client side ---- */

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *c = arg;
	struct loop *l = c->loop;
	struct tap *t = l->tap;

	(void)evcon;
	c->evcon = NULL;
	while (c->xs) {
		struct exch *x = c->xs;
		struct evhttp_request *req = x->req;
		x->req = NULL;
		/* A request libevent let go of is ours to free; one still on the
		 * connection is freed with it. */
		if (req && !evhttp_request_get_connection(req))
			evhttp_send_reply_end(req);
		exch_end(x, "client-gone", NULL); /* (closes the upstream transfer) */
	}
	hl_conn_closed(t->log, c->num);
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

/* The loop's record of a client connection (made on its first request). */
static struct hconn *conn_of(struct loop *l, struct evhttp_connection *evcon)
{
	struct tap *t = l->tap;

	for (struct hconn *c = l->conns; c; c = c->next)
		if (c->evcon == evcon) {
			if (c != l->conns) { /* (to the front: a busy connection is found at once) */
				c->prev->next = c->next;
				if (c->next)
					c->next->prev = c->prev;
				c->prev = NULL;
				c->next = l->conns;
				l->conns->prev = c;
				l->conns = c;
			}
			return c;
		}
	struct hconn *c = mt_calloc(1, sizeof(*c));
	char *host = NULL;
	ev_uint16_t port = 0;
	c->loop = l;
	c->evcon = evcon;
	c->num = hl_conn_new(t->log);
	evhttp_connection_get_peer(evcon, &host, &port);
	snprintf(c->addr, sizeof(c->addr), strchr(host ? host : "", ':') ? "[%s]:%u" : "%s:%u",
		 host ? host : "?", (unsigned)port);
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	evhttp_connection_set_closecb(evcon, on_conn_close, c);
	/* Small writes (a head, an SSE event) go at once, as the upstream's do. */
	{
		int one = 1;
		evutil_socket_t fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
		if (fd >= 0)
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return c;
}

/*
 * The headers curl sends upstream: the request's end-to-end fields as they
 * came, the --upstream-header ones, and identity encoding asked for; none
 * of curl's own defaults (Accept, Expect, a form's Content-Type). One block
 * holds the list and its strings (curl only reads it): free it whole.
 */
static struct curl_slist *upstream_list(const struct tap *t, const struct hdr_list *in)
{
	unsigned char keep_small[64], *keep = in->n < 64 ? keep_small : mt_malloc(in->n);
	const char *fixed[4];
	size_t nfixed = 0, count = 0, bytes = 0;
	struct curl_slist *list;
	char *p;

	mt_hdr_filter(in->h, in->n, MT_HDR_REQUEST, keep, NULL);
	/* An --upstream-header replaces the client's field of its name: sent once. */
	for (size_t i = 0; i < in->n; i++)
		for (size_t k = 0; keep[i] && k < t->o->n_upstream_headers; k++) {
			const char *u = t->o->upstream_headers[k], *colon = strchr(u, ':');
			size_t un = colon ? (size_t)(colon - u) : strlen(u);
			if (strlen(in->h[i].name) == un && !strncasecmp(in->h[i].name, u, un))
				keep[i] = 0;
		}
	/* (An empty value is sent as "Name;": "Name:" alone tells curl to drop it.) */
	for (size_t i = 0; i < in->n; i++)
		if (keep[i]) {
			count++;
			bytes += strlen(in->h[i].name) + strlen(in->h[i].value) + 3;
		}
	fixed[nfixed++] = "Accept-Encoding: identity";
	fixed[nfixed++] = "Expect:";
	if (!mt_hdr_get(in->h, in->n, "Accept"))
		fixed[nfixed++] = "Accept:";
	if (!mt_hdr_get(in->h, in->n, "Content-Type"))
		fixed[nfixed++] = "Content-Type:";
	for (size_t i = 0; i < t->o->n_upstream_headers; i++)
		bytes += strlen(t->o->upstream_headers[i]) + 1;
	for (size_t i = 0; i < nfixed; i++)
		bytes += strlen(fixed[i]) + 1;
	count += t->o->n_upstream_headers + nfixed;
	list = mt_malloc(count * sizeof(*list) + bytes);
	p = (char *)(list + count);
	count = 0;
	for (size_t i = 0; i < in->n; i++) {
		if (!keep[i])
			continue;
		size_t nn = strlen(in->h[i].name), vn = strlen(in->h[i].value);
		list[count].data = p;
		memcpy(p, in->h[i].name, nn);
		p += nn;
		if (vn) {
			memcpy(p, ": ", 2);
			memcpy(p + 2, in->h[i].value, vn);
			p += 2 + vn;
		} else {
			*p++ = ';';
		}
		*p++ = '\0';
		count++;
	}
	for (size_t i = 0; i < t->o->n_upstream_headers + nfixed; i++) {
		const char *f = i < t->o->n_upstream_headers ? t->o->upstream_headers[i]
							     : fixed[i - t->o->n_upstream_headers];
		size_t fn = strlen(f) + 1;
		list[count].data = memcpy(p, f, fn);
		p += fn;
		count++;
	}
	for (size_t i = 0; i < count; i++)
		list[i].next = i + 1 < count ? &list[i + 1] : NULL;
	if (keep != keep_small)
		free(keep);
	return list;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct loop *l = arg;
	struct tap *t = l->tap;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct hconn *c;
	struct exch *x;
	struct hdr_list in;
	struct hl_request hr;
	struct evbuffer *ib = evhttp_request_get_input_buffer(req);
	const char *uri = evhttp_request_get_uri(req);
	const char *target;

	if (l->stopping || !evcon) {
		evhttp_send_error(req, 503, "mcptap is stopping");
		return;
	}
	{
		/* A page elsewhere whose name now resolves to 127.0.0.1 (DNS rebinding)
		 * would reach the upstream through the tap under the upstream's own Host,
		 * with the tap's --upstream-header credential: the upstream's protection
		 * would never see the forged one. Refused before anything goes upstream,
		 * and not stored (nothing was relayed); said once for each kind. */
		char line[400];
		if (hln_guard_reply(&t->guard, req, "tap", line, sizeof(line))) {
			if (line[0])
				mt_warn("%s", line);
			return;
		}
	}
	/* evhttp refuses a head above its own (higher) limit with a 400; up to
	 * it, the tap answers one above --max-headers as RFC 6585 says. */
	{
		size_t head = strlen(uri ? uri : "") + 16;
		struct evkeyvalq *q = evhttp_request_get_input_headers(req);
		for (struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next)
			head += strlen(kv->key) + strlen(kv->value) + 4;
		if (head > t->o->max_headers) {
			evhttp_send_error(req, 431, "Request Header Fields Too Large");
			return;
		}
	}
	c = conn_of(l, evcon);
	memset(&in, 0, sizeof(in));
	x = mt_calloc(1, sizeof(*x));
	x->loop = l;
	x->req = req;
	snprintf(x->method, sizeof(x->method), "%s", hsv_method_name(evhttp_request_get_command(req)));
	target = hs_uri_target(uri ? uri : "/");
	req_headers(req, &in);
	x->body_len = evbuffer_get_length(ib);
	if (x->body_len) {
		x->body = mt_malloc(x->body_len);
		evbuffer_copyout(ib, x->body, x->body_len);
	}
	if (x->body_len >= TRIM_AFTER) {
		x->big = 1;
		__atomic_add_fetch(&t->big_open, 1, __ATOMIC_RELAXED);
	}
	const char *host = mt_hdr_get(in.h, in.n, "Host");
	x->host = host ? mt_strdup(host) : NULL;
	/* Fields the upstream could frame otherwise than evhttp did (request
	 * smuggling): the request is refused with 400, its connection closed
	 * (what follows on it is never read), nothing forwarded; its row says why,
	 * and a body read by a framing in doubt is not stored as a message. */
	/* (The target as sent, or an absolute form's path: what goes upstream.) */
	const char *bad = target != uri && uri && strpbrk(uri, " \t\r\n")
				  ? "a space or a control byte in the request target"
				  : mt_target_problem(target, x->method);
	if (!bad)
		bad = mt_hdr_framing_problem(in.h, in.n, req->major == 1 && req->minor >= 1);

	/* Its session, and the request stored (in the session's order). */
	memset(&hr, 0, sizeof(hr));
	hr.conn = c->num;
	hr.client_addr = c->addr;
	hr.method = x->method;
	hr.target = target;
	hr.h = in.h;
	hr.nh = in.n;
	hr.body = bad ? NULL : x->body;
	hr.body_len = bad ? 0 : x->body_len;
	x->hx = hl_request(t->log, &hr);
	l->exchanges++;
	x->conn = c;
	x->next_in_conn = c->xs;
	c->xs = x;
	x->next_all = l->all;
	if (l->all)
		l->all->prev_all = x;
	l->all = x;
	if (bad) {
		char msg[160];
		snprintf(msg, sizeof(msg), "mcptap: refused: %s", bad);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		send_error_body(x, 400, "Bad Request", msg);
		hdr_free(&in);
		exch_end(x, "refused", bad);
		return;
	}

	/* Forward it. */
	mt_buf_reset(&l->scratch2);
	mt_buf_puts(&l->scratch2, t->origin);
	/* (OPTIONS * asks about the server, not a resource: its target is "*".) */
	int asterisk = !strcmp(target, "*");
	mt_buf_puts(&l->scratch2, asterisk ? "/" : target);
	if (t->query && !asterisk) {
		/* --upstream's query goes with every request, after the client's. */
		mt_buf_putc(&l->scratch2, strchr(target, '?') ? '&' : '?');
		mt_buf_puts(&l->scratch2, t->query);
	}
	x->easy = l->npool ? l->pool[--l->npool] : curl_easy_init();
	CURL *e = x->easy;
	curl_easy_setopt(e, CURLOPT_URL, l->scratch2.data); /* (curl keeps a copy) */
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	if (asterisk)
		curl_easy_setopt(e, CURLOPT_REQUEST_TARGET, "*");
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)t->o->connect_timeout_ms);
	if (t->o->cacert) {
		curl_easy_setopt(e, CURLOPT_CAINFO, t->o->cacert);
		if (t->capath[0])
			curl_easy_setopt(e, CURLOPT_CAPATH, t->capath);
	}
	if (t->o->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (!strcmp(x->method, "HEAD"))
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	else if (strcmp(x->method, "GET") || x->body_len)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, x->method);
	if (x->body_len || !strcmp(x->method, "POST") || !strcmp(x->method, "PUT") ||
	    !strcmp(x->method, "PATCH")) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body ? x->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
	}
	x->hdrs = upstream_list(t, &in);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
	hdr_free(&in);
	x->idle = evtimer_new(l->base, on_upstream_silent, x);
	upstream_alive(x);
	curl_multi_add_handle(l->multi, e);
	/* Start it now rather than at the next turn of the loop (curl's 0 ms timer). */
	{
		int running;
		curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		check_done(l);
	}
}

/* The upstream said nothing for --upstream-timeout. */
static void on_upstream_silent(evutil_socket_t fd, short what, void *arg)
{
	struct exch *x = arg;
	char why[128];

	(void)fd;
	(void)what;
	snprintf(why, sizeof(why), "the upstream sent nothing for %d ms (--upstream-timeout)",
		 x->loop->tap->o->upstream_timeout_ms);
	if (!x->head_sent) {
		if (x->req) {
			char msg[200];
			snprintf(msg, sizeof(msg), "mcptap: %s", why);
			send_error_body(x, 504, "Gateway Timeout", msg);
		}
		exch_end(x, "timeout", why);
		return;
	}
	struct hconn *c = x->conn;
	exch_end(x, "timeout", why);
	if (c && c->evcon)
		evhttp_connection_free(c->evcon); /* (a cut response, as upstream-gone) */
}

/* ---- starting and stopping ---- */

/* End every exchange of the loop now, and the loop. */
static void stop_now(struct loop *l)
{
	while (l->all) {
		struct exch *x = l->all;
		struct hconn *c = x->conn;
		exch_end(x, "stopped", "the tap was stopped");
		if (c && c->evcon)
			evhttp_connection_free(c->evcon);
	}
	event_base_loopbreak(l->base);
}

static void maybe_stop(struct loop *l)
{
	if (l->stopping && !l->exchanges)
		event_base_loopbreak(l->base);
}

static void on_stop_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop_now(arg);
}

/*
 * The tap stops (in the loop's own thread, told through its stop_fd): it
 * accepts no more, and ends when its open exchanges have, or when stop_ms
 * has passed; at once when told a second time.
 */
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
	if (l->bound) {
		evhttp_del_accept_socket(l->http, l->bound);
		l->bound = NULL;
	}
	if (!l->exchanges) {
		event_base_loopbreak(l->base);
		return;
	}
	l->stop_timer = evtimer_new(l->base, on_stop_timer, l);
	evtimer_add(l->stop_timer, &tv);
}

/* SIGINT or SIGTERM (in the control thread): every loop is told. */
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
		mt_warn("%s again: stopping now", sig == SIGINT ? "SIGINT" : "SIGTERM");
	for (int i = 0; i < t->nloops; i++)
		if (write(t->loops[i].stop_fd, &one, sizeof(one)) < 0)
			mt_warn("cannot tell a loop to stop: %s", strerror(errno));
}

/* A loop's thread: relay until stopped, then end what is still open. */
static void *loop_main(void *arg)
{
	struct loop *l = arg;
	struct tap *t = l->tap;
	uint64_t one = 1;
	sigset_t set;

	/* The control thread takes the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	event_base_dispatch(l->base);
	while (l->all)
		exch_end(l->all, "stopped", "the tap was stopped");
	if (write(t->done_fd, &one, sizeof(one)) < 0)
		mt_warn("cannot say a loop has ended: %s", strerror(errno));
	return NULL;
}

/* A loop has ended (in the control thread): when all have, so does the tap. */
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
		return; /* (not all stored yet: at the next tick) */
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

/* Accepts refused at the descriptor limit (a loop's thread): said as the tap's own. */
static void say_refused(void *arg, const char *text)
{
	(void)arg;
	mt_warn("%s", text);
}

/* The scheme and authority of an http(s) URL. */
static int url_origin(const char *url, char *out, size_t n)
{
	const char *p;
	size_t len;

	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return -1;
	p = strchr(url, ':') + 3;
	len = strcspn(p, "/?#");
	if (!len)
		return -1;
	if ((size_t)snprintf(out, n, "%.*s", (int)(p - url + (long)len), url) >= n)
		return -1;
	return 0;
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
	{
		/* One loop per CPU the tap may run on, up to 8. */
		cpu_set_t cpus;
		int n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
		o->threads = n < 1 ? 1 : n > 8 ? 8 : n;
	}
	writer_opts_default(&o->wopts);
}

/*
 * Make loop l: its event base, evhttp accepting from the listening socket fd
 * (taken, closed on failure), its curl multi. 0, or -1 (said).
 */
static int loop_init(struct tap *t, struct loop *l, int idx, evutil_socket_t fd)
{
	const struct httptap_opts *o = t->o;
	struct event_config *cfg = event_config_new();

	l->tap = t;
	l->idx = idx;
	l->stop_fd = -1;
	if (!cfg)
		goto fail;
	if (cfg) {
		/* Interest changes within one turn of the loop (curl's and evhttp's
		 * many enable/disable calls per exchange) reach epoll as one call. */
		event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		l->base = event_base_new_with_config(cfg);
		event_config_free(cfg);
	}
	if (!l->base)
		goto fail;
	l->http = evhttp_new(l->base);
	l->chunk = evbuffer_new();
	l->multi = curl_multi_init();
	l->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!l->http || !l->chunk || !l->multi || l->stop_fd < 0)
		goto fail;
	evhttp_set_max_headers_size(l->http, (ev_ssize_t)(o->max_headers < (1u << 20) / 16
								? 1u << 20
								: o->max_headers * 16));
	evhttp_set_max_body_size(l->http, (ev_ssize_t)o->max_body);
	evhttp_set_default_content_type(l->http, NULL);
	evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
						    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	/* A client's connection times out reading a request or writing an answer;
	 * an SSE stream's reading is let be (send_head). */
	{
		struct timeval tv = {o->client_timeout_ms / 1000, (o->client_timeout_ms % 1000) * 1000};
		evhttp_set_timeout_tv(l->http, &tv);
	}
	evhttp_set_gencb(l->http, on_request, l);
	l->bound = evhttp_accept_socket_with_handle(l->http, fd);
	if (!l->bound)
		goto fail;
	fd = -1; /* (evhttp's now) */
	l->watch = hln_watch_evhttp(l->http, l->bound, t->pace);
	l->curl_timer = evtimer_new(l->base, on_curl_timeout, l);
	l->unpause = event_new(l->base, -1, 0, on_unpause, l);
	l->stop_ev = event_new(l->base, l->stop_fd, EV_READ | EV_PERSIST, on_stop, l);
	if (!l->curl_timer || !l->unpause || !l->stop_ev || event_add(l->stop_ev, NULL))
		goto fail;
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
	/* Keep the upstream connections of every client (curl's default keeps a few). */
	curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, 1024L);
	return 0;
fail:
	mt_error("cannot set up event loop %d: %s", idx, strerror(errno));
	if (fd >= 0)
		evutil_closesocket(fd);
	return -1;
}

/* Free what loop_init made (its thread has ended; NULL parts are let be). */
static void loop_release(struct loop *l)
{
	hln_watch_free(l->watch); /* (before its listener) */
	if (l->http)
		evhttp_free(l->http); /* (closes the connections: on_conn_close) */
	while (l->all)
		exch_end(l->all, "stopped", "the tap was stopped");
	while (l->conns) {
		struct hconn *c = l->conns;
		l->conns = c->next;
		free(c);
	}
	while (l->npool)
		curl_easy_cleanup(l->pool[--l->npool]);
	if (l->multi)
		curl_multi_cleanup(l->multi);
	if (l->curl_timer)
		event_free(l->curl_timer);
	if (l->unpause)
		event_free(l->unpause);
	if (l->stop_timer)
		event_free(l->stop_timer);
	if (l->stop_ev)
		event_free(l->stop_ev);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	if (l->base)
		event_base_free(l->base);
	if (l->chunk)
		evbuffer_free(l->chunk);
	mt_buf_release(&l->scratch2);
}

/*
 * A listening socket on host:port (port 0: any free one), and the port it
 * has. Each loop has one on the same port (SO_REUSEPORT): the kernel spreads
 * the connections among them.
 */
static evutil_socket_t listen_on(const char *host, int port, int *bound_port)
{
	struct evutil_addrinfo hints, *ai = NULL;
	char ps[16];
	evutil_socket_t fd = -1;
	int one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG;
	snprintf(ps, sizeof(ps), "%d", port);
	if (evutil_getaddrinfo(host, ps, &hints, &ai) || !ai) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, (socklen_t)ai->ai_addrlen) || listen(fd, 128)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		evutil_freeaddrinfo(ai);
		errno = e;
		return -1;
	}
	evutil_freeaddrinfo(ai);
	*bound_port = hln_fd_port(fd);
	if (*bound_port < 0)
		*bound_port = port;
	return fd;
}

int httptap_run(const struct httptap_opts *o)
{
	struct tap t;
	char host[256], *query_owned = NULL;
	int port, bound_port = 0, rc = EXIT_ERROR, started = 0;
	sigset_t set;

	memset(&t, 0, sizeof(t));
	t.o = o;
	t.done_fd = -1;
	pthread_mutex_init(&t.mu, NULL);
	{
		const char *shown = o->upstream_shown ? o->upstream_shown : o->upstream;
		const char *q = strchr(o->upstream, '?');
		if (url_origin(o->upstream, t.origin, sizeof(t.origin)) ||
		    url_origin(shown, t.shown, sizeof(t.shown))) {
			mt_error("bad --upstream '%s': an http:// or https:// URL", shown);
			goto early;
		}
		if (q && q[1] && q[1] != '#') {
			size_t qn = strcspn(q + 1, "#");
			t.query = query_owned = mt_malloc(qn + 1);
			memcpy(query_owned, q + 1, qn);
			query_owned[qn] = '\0';
		}
	}
	if (mt_split_listen(o->listen, host, sizeof(host), &port)) {
		mt_error("bad --listen '%s': HOST:PORT", o->listen);
		goto early;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		mt_error("cannot initialise libcurl");
		goto early;
	}
	/* The signals come through the control loop; SIGPIPE is a write's error. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	{
		/* --cacert adds to the system's CAs: curl's default directory stays. */
		CURL *e = curl_easy_init();
		char *capath = NULL;
		if (e && curl_easy_getinfo(e, CURLINFO_CAPATH, &capath) == CURLE_OK && capath)
			snprintf(t.capath, sizeof(t.capath), "%s", capath);
		if (e)
			curl_easy_cleanup(e);
	}
	t.nloops = o->threads > 0 ? o->threads : 1;
	t.loops = mt_calloc((size_t)t.nloops, sizeof(*t.loops));
	t.pace = hln_pace_new(say_refused, NULL);
	t.guard.allow = o->allow_hosts;
	t.guard.n_allow = o->n_allow_hosts;
	for (int i = 0; i < t.nloops; i++) {
		evutil_socket_t fd = listen_on(host, i ? bound_port : port, &bound_port);
		if (fd < 0) {
			mt_error("cannot listen on %s: %s", o->listen, strerror(errno));
			t.nloops = i;
			goto out;
		}
		if (!i)
			t.guard.loopback = hln_fd_loopback(fd);
		if (loop_init(&t, &t.loops[i], i, fd)) {
			t.nloops = i + 1;
			goto out;
		}
	}
	t.ctl = event_base_new();
	t.done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!t.ctl || t.done_fd < 0) {
		mt_error("cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	{
		char name[300];
		snprintf(name, sizeof(name), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, bound_port);
		fprintf(stderr, "mcptap: listening on http://%s, forwarding to %s\n", name, t.shown);
	}
	if (o->insecure)
		mt_warn("--insecure: the upstream's certificate and host name are not checked");
	t.w = writer_open_shared(o->db_path, &o->wopts);
	{
		struct hl_opts lo;
		memset(&lo, 0, sizeof(lo));
		lo.w = t.w;
		lo.upstream = o->upstream_shown ? o->upstream_shown : o->upstream;
		lo.max_message = o->wopts.max_message;
		t.log = hl_new(&lo);
	}
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
			mt_error("cannot start a loop's thread: %s", strerror(e));
			/* Those started stop as after a signal. */
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
	/* Every loop has ended: what is still open ends here, then the sessions. */
	for (int i = 0; i < t.nloops; i++)
		loop_release(&t.loops[i]);
	free(t.loops);
	hln_pace_free(t.pace);
	hl_free(t.log); /* (the sessions' ends) */
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
	curl_global_cleanup();
early:
	free(query_owned);
	pthread_mutex_destroy(&t.mu);
	return rc;
}
