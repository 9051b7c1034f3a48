/*
 * httpclient.c - an MCP client's HTTP transport (see httpclient.h).
 *
 * Every transfer is a struct xfer: the sends (POST, DELETE) wait in
 * c->waiting until the order rule lets them start; the streams (the GET
 * stream, a resumption, the legacy stream) and the probe start at once. What
 * the transfers read becomes events in c->q, handed out one by one by
 * hc_next. A transfer that broke after it connected holds its consequence in
 * c->held until the probe (a fresh connection) says whether the server lives.
 */
#include "tap/http/httpclient.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "schema/message.h"
#include "tap/http/httphdr.h"
#include "tap/http/sse.h"

#define EXCERPT 200           /* bytes of a body quoted in a message */
#define ODD_BODY_MAX 4096     /* of an error's (or an unexpected) body, kept for its excerpt */
#define GET_QUIET_MAX 3       /* GET stream ends in a row without a message, then no more */
#define GET_AGAIN_MS 500      /* before opening it again, when the server set no retry: */
#define GET_AGAIN_MAX_MS 5000 /* and at most this, whatever it set */
#define EV_REOPEN_GET 100     /* c->held only: open the GET stream again */

enum xkind {
	X_POST,   /* a message */
	X_DELETE, /* the session's end */
	X_GET,    /* Streamable HTTP's GET stream */
	X_RESUME, /* a POST's stream resumed with GET and Last-Event-ID */
	X_LEGACY, /* legacy HTTP+SSE's stream (the session) */
	X_PROBE,  /* a fresh connection: does the server live? */
};

/* An event waiting for hc_next (strings owned). */
struct ev {
	int type;
	int64_t tag;
	int status;
	enum hc_why why;
	int expired, cert;
	char *data;
	size_t len;
	char *text;
};

struct xfer {
	struct hc *c;      /* borrowed: its client */
	struct xfer *next; /* in c->running or c->waiting */
	CURL *e;           /* owned; NULL until started */
	enum xkind kind;
	int64_t tag;
	struct curl_slist *hdrs; /* owned */
	char *body;              /* owned: a POST's body */
	size_t body_len;
	char *id; /* owned: a request's id (JSON text), to know its answer */
	unsigned is_request : 1, is_initialized : 1, answered : 1, head : 1, sse : 1, json : 1, sid_sent : 1,
		paused : 1, over : 1, parser_on : 1;
	long status;               /* of the last status line */
	struct mt_buf reason;      /* its reason phrase */
	struct mt_buf ctype;       /* Content-Type */
	struct mt_buf sid;         /* Mcp-Session-Id */
	struct mt_buf location;    /* Location */
	struct mt_sse parser;      /* an SSE body's (parser_on) */
	struct mt_buf in;          /* a JSON body, or the start of another body */
	struct mt_buf last_id;     /* SSE: the last event id */
	long long retry;           /* SSE: the last retry: (ms), or -1 */
	unsigned events, bad;      /* SSE: messages read; events that were not JSON-RPC */
	struct mt_buf bad_excerpt; /* the first of those */
	int resumes;               /* X_RESUME: how many so far for this request */
	int64_t started;           /* mt_mono_ns() when it started */
	char errbuf[CURL_ERROR_SIZE];
};

struct hc {
	struct hc_opts o;     /* strings borrowed */
	CURLM *multi;         /* owned */
	char capath[512];     /* curl's default CA directory, kept with --cacert */
	struct xfer *running; /* owned: the transfers in multi */
	struct xfer *waiting; /* owned: the sends not started yet, in order */
	struct xfer **wtail;
	struct xfer *gate;         /* borrowed: the send started last, until its answer's head */
	struct xfer *get;          /* borrowed: the GET stream, while it runs */
	char *sid;                 /* owned: the live Mcp-Session-Id, or NULL */
	char *version;             /* owned: the negotiated protocol version, or NULL */
	char *endpoint;            /* owned: legacy: where messages are POSTed, or NULL */
	char *init_id;             /* owned: the id of the initialize request sent (JSON text) */
	int get_on;                /* the GET stream is wanted */
	int64_t get_at;            /* when to open it (0: not planned) */
	int get_quiet;             /* its ends in a row that brought nothing */
	struct mt_buf get_last_id; /* its last event id */
	struct ev *q;              /* owned: the events for hc_next, q[qhead .. qhead + qlen) */
	size_t qhead, qlen, qcap;
	size_t qbytes;   /* their data bytes */
	struct ev *held; /* owned: consequences of broken transfers, until the probe */
	size_t nheld, heldcap;
	int probing;     /* a probe runs */
	struct ev cur;   /* the event hc_next handed out last */
	int gone;        /* HC_GONE queued: nothing more is sent */
	int gone_out;    /* and handed out */
	char *gone_text; /* owned */
	int gone_cert;
	int reached;  /* an answer's head came */
	int deleted;  /* a DELETE was sent */
	int deleting; /* DELETEs running */
	int npaused;  /* transfers paused for the queue */
};

/* ---- helpers ---- */

void hc_excerpt(const char *p, size_t n, size_t max, struct mt_buf *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char ch = (unsigned char)p[i];
		if (ch == '\n') {
			mt_buf_puts(out, "\\n");
		} else if (ch >= 0x20 && ch < 0x7f) {
			mt_buf_putc(out, (char)ch);
		} else {
			char esc[4] = {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
			mt_buf_append(out, esc, 4);
		}
	}
	if (n > max)
		mt_buf_puts(out, "...");
}

static int http_scheme(CURLU *u)
{
	char *scheme = NULL;
	int ok = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && scheme &&
		 (!strcasecmp(scheme, "http") || !strcasecmp(scheme, "https"));

	curl_free(scheme);
	return ok;
}

char *hc_resolve(const char *base, const char *ref)
{
	CURLU *u = curl_url();
	char *out = NULL, *res = NULL;

	if (u && curl_url_set(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_URL, ref, 0) == CURLUE_OK && http_scheme(u) &&
	    curl_url_get(u, CURLUPART_URL, &out, 0) == CURLUE_OK && out)
		res = mt_strdup(out);
	curl_free(out);
	curl_url_cleanup(u);
	return res;
}

static void ev_release(struct ev *e)
{
	free(e->data);
	free(e->text);
	memset(e, 0, sizeof(*e));
}

static void push(struct hc *c, struct ev *e)
{
	if (c->qhead + c->qlen == c->qcap) {
		if (c->qhead) {
			memmove(c->q, c->q + c->qhead, c->qlen * sizeof(*c->q));
			c->qhead = 0;
		} else {
			c->qcap = c->qcap ? 2 * c->qcap : 64;
			c->q = mt_realloc(c->q, c->qcap * sizeof(*c->q));
		}
	}
	c->q[c->qhead + c->qlen++] = *e;
	c->qbytes += e->len;
	memset(e, 0, sizeof(*e));
}

/* Queue an event of type for x (may be NULL) with a text (printf-style). */
static void say(struct hc *c, int type, const struct xfer *x, enum hc_why why, int status, const char *fmt,
		...) __attribute__((format(printf, 6, 7)));
static void say(struct hc *c, int type, const struct xfer *x, enum hc_why why, int status, const char *fmt,
		...)
{
	struct ev e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.tag = x ? x->tag : -1;
	e.status = status;
	e.why = why;
	e.expired = type == HC_FAILED && status == 404 && x && x->sid_sent;
	va_start(ap, fmt);
	e.text = mt_vasprintf(fmt, ap);
	va_end(ap);
	push(c, &e);
}

static void xfer_free(struct xfer *x)
{
	if (!x)
		return;
	if (x->e)
		curl_easy_cleanup(x->e);
	curl_slist_free_all(x->hdrs);
	free(x->body);
	free(x->id);
	mt_buf_release(&x->reason);
	mt_buf_release(&x->ctype);
	mt_buf_release(&x->sid);
	mt_buf_release(&x->location);
	if (x->parser_on)
		mt_sse_release(&x->parser);
	mt_buf_release(&x->in);
	mt_buf_release(&x->last_id);
	mt_buf_release(&x->bad_excerpt);
	free(x);
}

/* Nothing more is sent: the server is gone (said once). */
static void go_gone(struct hc *c, int cert, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void go_gone(struct hc *c, int cert, const char *fmt, ...)
{
	struct ev e;
	va_list ap;

	if (c->gone)
		return;
	c->gone = 1;
	memset(&e, 0, sizeof(e));
	e.type = HC_GONE;
	e.cert = cert;
	va_start(ap, fmt);
	e.text = mt_vasprintf(fmt, ap);
	va_end(ap);
	free(c->gone_text);
	c->gone_text = mt_strdup(e.text);
	c->gone_cert = cert;
	push(c, &e);
	while (c->waiting) {
		struct xfer *x = c->waiting;
		c->waiting = x->next;
		xfer_free(x);
	}
	c->wtail = &c->waiting;
	for (size_t i = 0; i < c->nheld; i++)
		ev_release(&c->held[i]);
	c->nheld = 0;
}

static const char *err_text(const struct xfer *x, CURLcode rc)
{
	return x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);
}

/* "HTTP 404 Not Found" (the reason phrase made safe), into out. */
static void status_text(const struct xfer *x, struct mt_buf *out)
{
	mt_buf_printf(out, "HTTP %ld", x->status);
	if (x->reason.len) {
		mt_buf_putc(out, ' ');
		hc_excerpt(x->reason.data, x->reason.len, 80, out);
	}
}

/* ---- reading ---- */

/* A response's head has been read. */
static void head_done(struct xfer *x)
{
	struct hc *c = x->c;

	x->head = 1;
	c->reached = 1;
	if (c->gate == x)
		c->gate = NULL;
	if (x->status < 200 || x->status > 299)
		return;
	x->sse = mt_hdr_has_token(x->ctype.data, "text/event-stream");
	x->json = !x->sse && mt_hdr_has_token(x->ctype.data, "application/json");
	if (x->sse) {
		mt_sse_init(&x->parser, c->o.max_message);
		x->parser_on = 1;
	}
	if (x->kind == X_POST && x->sid.len && !c->sid && !c->o.legacy)
		c->sid = mt_strndup(x->sid.data, x->sid.len);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n, ll = len;
	const char *colon, *v;

	while (ll && (p[ll - 1] == '\n' || p[ll - 1] == '\r'))
		ll--;
	if (ll >= 5 && !strncmp(p, "HTTP/", 5)) {
		/* A new response (after a 1xx, another one comes). */
		const char *sp = memchr(p, ' ', ll);
		x->status = 0;
		mt_buf_reset(&x->reason);
		mt_buf_reset(&x->ctype);
		mt_buf_reset(&x->sid);
		mt_buf_reset(&x->location);
		if (sp) {
			const char *end = p + ll;
			sp++;
			while (sp < end && *sp >= '0' && *sp <= '9' && x->status < 1000)
				x->status = x->status * 10 + (*sp++ - '0');
			while (sp < end && *sp == ' ')
				sp++;
			mt_buf_append(&x->reason, sp, (size_t)(end - sp));
		}
		return len;
	}
	if (ll == 0) {
		if (x->status >= 200)
			head_done(x);
		return len;
	}
	if (!(colon = memchr(p, ':', ll)))
		return len;
	v = colon + 1;
	while (v < p + ll && (*v == ' ' || *v == '\t'))
		v++;
#define IS(name) ((size_t)(colon - p) == strlen(name) && !strncasecmp(p, name, strlen(name)))
	if (IS("content-type")) {
		mt_buf_reset(&x->ctype);
		mt_buf_append(&x->ctype, v, (size_t)(p + ll - v));
	} else if (IS("mcp-session-id") && !x->sid.len) {
		mt_buf_append(&x->sid, v, (size_t)(p + ll - v));
	} else if (IS("location")) {
		mt_buf_reset(&x->location);
		mt_buf_append(&x->location, v, (size_t)(p + ll - v));
	}
#undef IS
	return len;
}

static void deliver_one(struct hc *c, struct xfer *x, const char *p, size_t n, const struct mt_class *cl)
{
	struct ev e;

	if ((cl->kind == MT_RESPONSE || cl->kind == MT_ERROR) && cl->id.p) {
		if (x->id && strlen(x->id) == cl->id.n && !memcmp(x->id, cl->id.p, cl->id.n))
			x->answered = 1;
		if (c->init_id && !c->version && strlen(c->init_id) == cl->id.n &&
		    !memcmp(c->init_id, cl->id.p, cl->id.n) && cl->result.p) {
			struct mt_span v;
			struct mt_buf b = MT_BUF_INIT;
			if (mt_json_member(cl->result, "protocolVersion", &v) == 1 &&
			    !mt_json_string(v, &b) && b.len && b.len < 64 && !memchr(b.data, '\0', b.len) &&
			    !strpbrk(b.data, "\r\n"))
				c->version = mt_strdup(b.data);
			mt_buf_release(&b);
		}
	}
	memset(&e, 0, sizeof(e));
	e.type = HC_MESSAGE;
	e.data = mt_malloc(n + 1);
	memcpy(e.data, p, n);
	e.data[n] = '\0';
	e.len = n;
	x->events++;
	push(c, &e);
}

/* A body or an event's data: one message, or a batch of them. */
static void deliver(struct hc *c, struct xfer *x, const char *p, size_t n)
{
	struct mt_class cl;
	enum mt_kind k = mt_classify(p, n, &cl);

	if (k == MT_BATCH) {
		struct mt_span arr = {p, n}, el;
		size_t pos = 0;
		while (arr.n && (arr.p[0] == ' ' || arr.p[0] == '\t' || arr.p[0] == '\r' || arr.p[0] == '\n'))
			arr.p++, arr.n--;
		while (arr.n && (arr.p[arr.n - 1] == ' ' || arr.p[arr.n - 1] == '\t' ||
				 arr.p[arr.n - 1] == '\r' || arr.p[arr.n - 1] == '\n'))
			arr.n--;
		while (mt_json_next_element(arr, &pos, &el) == 1) {
			struct mt_class ec;
			if (mt_classify(el.p, el.n, &ec) <= MT_ERROR) {
				deliver_one(c, x, el.p, el.n, &ec);
			} else {
				x->bad++;
				if (!x->bad_excerpt.len)
					hc_excerpt(el.p, el.n, EXCERPT, &x->bad_excerpt);
			}
		}
		return;
	}
	if (k > MT_ERROR) {
		x->bad++;
		if (!x->bad_excerpt.len)
			hc_excerpt(p, n, EXCERPT, &x->bad_excerpt);
		return;
	}
	deliver_one(c, x, p, n, &cl);
}

static void on_event(void *ctx, const struct mt_sse_event *ev)
{
	struct xfer *x = ctx;
	struct hc *c = x->c;

	if (ev->has_id) {
		mt_buf_reset(&x->last_id);
		mt_buf_append(&x->last_id, ev->last_id, ev->last_id_len);
		if (x->kind == X_GET) {
			mt_buf_reset(&c->get_last_id);
			mt_buf_append(&c->get_last_id, ev->last_id, ev->last_id_len);
		}
	}
	if (ev->retry >= 0)
		x->retry = ev->retry;
	if (ev->oversized) {
		x->bad++;
		if (!x->bad_excerpt.len)
			mt_buf_printf(&x->bad_excerpt, "an event of more than %zu bytes", c->o.max_message);
		return;
	}
	if (x->kind == X_LEGACY && ev->event_len == 8 && !memcmp(ev->event, "endpoint", 8)) {
		if (!c->endpoint && !c->gone) {
			char *u = ev->data_len && !memchr(ev->data, '\0', ev->data_len)
					  ? hc_resolve(c->o.url, ev->data)
					  : NULL;
			if (!u) {
				struct mt_buf b = MT_BUF_INIT;
				hc_excerpt(ev->data, ev->data_len, EXCERPT, &b);
				go_gone(c, 0, "named an endpoint that is not an http(s) URL: '%s'",
					b.data ? b.data : "");
				mt_buf_release(&b);
			}
			c->endpoint = u;
		}
		return;
	}
	if (ev->event_len && !(ev->event_len == 7 && !memcmp(ev->event, "message", 7)))
		return; /* another type: not an MCP message */
	if (!ev->data_len)
		return; /* a priming event, a retry, a keep-alive */
	deliver(c, x, ev->data, ev->data_len);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct hc *c = x->c;
	size_t len = size * n;

	if (x->kind == X_PROBE)
		return len;
	if (c->qbytes > HC_QUEUE_MAX && !x->paused) {
		x->paused = 1;
		c->npaused++;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (x->head && x->status >= 200 && x->status <= 299 && x->sse) {
		mt_sse_push(&x->parser, p, len, on_event, x);
	} else if (x->head && x->status >= 200 && x->status <= 299 && x->json) {
		if (x->over || x->in.len + len > c->o.max_message)
			x->over = 1;
		else
			mt_buf_append(&x->in, p, len);
	} else if (x->in.len < ODD_BODY_MAX) {
		mt_buf_append(&x->in, p, len < ODD_BODY_MAX - x->in.len ? len : ODD_BODY_MAX - x->in.len);
	}
	return len;
}

/* ---- starting transfers ---- */

static struct xfer *xfer_new(struct hc *c, enum xkind kind, int64_t tag)
{
	struct xfer *x = mt_calloc(1, sizeof(*x));

	x->c = c;
	x->kind = kind;
	x->tag = tag;
	x->retry = -1;
	return x;
}

/* 0, or -1 when libcurl runs out of memory. */
static int add_header(struct xfer *x, const char *name, const char *value)
{
	char *line = mt_asprintf("%s: %s", name, value);
	struct curl_slist *l = curl_slist_append(x->hdrs, line);

	free(line);
	if (!l)
		return -1;
	x->hdrs = l;
	return 0;
}

/*
 * Start x (its fields set) on url: headers, options, into the multi. 0, or
 * -1 when libcurl runs out of memory: x is freed, and the caller says the
 * server cannot be reached any more (oom_gone) or fails its own call.
 */
static int xfer_start(struct hc *c, struct xfer *x, const char *url, const char *last_event_id)
{
	CURL *e = curl_easy_init();
	int bad = 0;

	if (!e) {
		xfer_free(x);
		return -1;
	}
	x->e = e;
	switch (x->kind) {
	case X_POST:
		bad |= add_header(x, "Content-Type", "application/json");
		bad |= add_header(x, "Accept", "application/json, text/event-stream");
		break;
	case X_GET:
	case X_RESUME:
	case X_LEGACY:
		bad |= add_header(x, "Accept", "text/event-stream");
		bad |= add_header(x, "Cache-Control", "no-cache");
		break;
	default: break;
	}
	if (x->kind != X_PROBE && x->kind != X_LEGACY) {
		if (c->sid && !c->o.legacy) {
			bad |= add_header(x, "Mcp-Session-Id", c->sid);
			x->sid_sent = 1;
		}
		if (c->version)
			bad |= add_header(x, "MCP-Protocol-Version", c->version);
	}
	if (last_event_id && *last_event_id)
		bad |= add_header(x, "Last-Event-ID", last_event_id);
	for (size_t i = 0; i < c->o.nheaders && !bad; i++) {
		struct curl_slist *l = curl_slist_append(x->hdrs, c->o.headers[i]);
		if (!l)
			bad = 1;
		else
			x->hdrs = l;
	}
	bad |= add_header(x, "Expect", "");
	if (bad) {
		xfer_free(x); /* (and its handle) */
		return -1;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(e, CURLOPT_USERAGENT, "mcptap/" MCPTAP_VERSION);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->o.connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
	if (c->o.cacert) {
		curl_easy_setopt(e, CURLOPT_CAINFO, c->o.cacert);
		if (c->capath[0])
			curl_easy_setopt(e, CURLOPT_CAPATH, c->capath);
	}
	if (c->o.insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (x->kind == X_POST) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
	} else if (x->kind == X_DELETE) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	} else if (x->kind == X_PROBE) {
		curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	}
	x->started = mt_mono_ns();
	x->next = c->running;
	c->running = x;
	if (x->kind == X_DELETE)
		c->deleting++;
	curl_multi_add_handle(c->multi, e);
	return 0;
}

/* A transfer could not be started (libcurl ran out of memory): nothing more is sent. */
static void oom_gone(struct hc *c)
{
	go_gone(c, 0, "could not be reached (out of memory)");
}

/* Start the sends the order rule lets go. */
static void pump(struct hc *c)
{
	int64_t now = mt_mono_ns();

	while (c->waiting && !c->gone) {
		struct xfer *x = c->waiting;
		if (c->o.legacy && !c->endpoint)
			break;
		if (c->gate && !c->gate->head && now - c->gate->started < (int64_t)HC_ORDER_MS * 1000000)
			break;
		c->waiting = x->next;
		if (!c->waiting)
			c->wtail = &c->waiting;
		if (x->kind == X_DELETE) {
			if (c->o.legacy || !c->sid) {
				xfer_free(x); /* no session to end */
				continue;
			}
			c->deleted = 1;
		}
		if (xfer_start(c, x, c->o.legacy ? c->endpoint : c->o.url, NULL)) {
			oom_gone(c);
			return;
		}
		c->gate = x;
	}
	if (c->get_on && !c->get && c->get_at && now >= c->get_at && !c->gone && !c->deleted) {
		struct xfer *g = xfer_new(c, X_GET, -1);
		c->get_at = 0;
		c->get = g;
		if (xfer_start(c, g, c->o.url, c->get_last_id.data)) {
			c->get = NULL;
			oom_gone(c);
		}
	}
}

static void probe(struct hc *c)
{
	if (c->probing || c->gone)
		return;
	c->probing = 1;
	if (xfer_start(c, xfer_new(c, X_PROBE, -1), c->o.url, NULL)) {
		c->probing = 0;
		oom_gone(c);
	}
}

/* Keep a broken transfer's consequence until the probe's word. */
static void hold(struct hc *c, struct ev *e)
{
	if (c->nheld == c->heldcap) {
		c->heldcap = c->heldcap ? 2 * c->heldcap : 8;
		c->held = mt_realloc(c->held, c->heldcap * sizeof(*c->held));
	}
	c->held[c->nheld++] = *e;
	memset(e, 0, sizeof(*e));
}

/* ---- transfers that ended ---- */

static int cannot_connect(CURLcode rc)
{
	switch (rc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT: /* (only connecting has a timeout) */
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_CRL_BADFILE: return 1;
	default: return 0;
	}
}

static void unreachable(struct hc *c, const struct xfer *x, CURLcode rc)
{
	int cert = rc == CURLE_PEER_FAILED_VERIFICATION;

	go_gone(c, cert, "%s (%s%s)", c->reached ? "went away" : "could not be reached", err_text(x, rc),
		cert ? "; --cacert FILE trusts its CA, --insecure skips the check" : "");
}

/* x broke after it connected: what it leaves is held while a probe looks. */
static void broken(struct hc *c, struct xfer *x, CURLcode rc)
{
	struct ev e;

	memset(&e, 0, sizeof(e));
	e.tag = x->tag;
	switch (x->kind) {
	case X_POST:
	case X_RESUME:
		if (!x->is_request || x->answered)
			break;
		e.type = HC_FAILED;
		e.why = HC_LOST;
		e.status = x->head ? (int)x->status : 0;
		e.text = mt_asprintf("the connection broke before the answer (%s)", err_text(x, rc));
		hold(c, &e);
		break;
	case X_GET:
		e.type = EV_REOPEN_GET;
		hold(c, &e);
		break;
	case X_LEGACY:
		e.type = HC_GONE;
		e.text = mt_asprintf("broke the session's SSE stream (%s)", err_text(x, rc));
		hold(c, &e);
		break;
	default: break;
	}
	probe(c);
}

static void probe_done(struct hc *c, struct xfer *x, CURLcode rc)
{
	c->probing = 0;
	if (rc != CURLE_OK) {
		go_gone(c, 0, "went away (%s)", err_text(x, rc));
		return;
	}
	for (size_t i = 0; i < c->nheld; i++) {
		struct ev *e = &c->held[i];
		if (e->type == EV_REOPEN_GET) {
			if (!c->deleted && c->get_on)
				c->get_at = mt_mono_ns() + (int64_t)GET_AGAIN_MS * 1000000;
			ev_release(e);
		} else if (e->type == HC_GONE) {
			go_gone(c, 0, "%s", e->text);
			ev_release(e);
		} else if (!c->gone) {
			push(c, e);
		} else {
			ev_release(e);
		}
	}
	c->nheld = 0;
}

/* A POST's (or a resumption's) SSE stream ended without its answer. */
static void stream_ended(struct hc *c, struct xfer *x)
{
	struct mt_buf b = MT_BUF_INIT;
	int resumes = x->kind == X_RESUME ? x->resumes : 0;

	if (c->deleted)
		return; /* the session's end ended its streams */
	if (x->last_id.len && resumes < HC_RESUMES && !c->gone) {
		struct xfer *r = xfer_new(c, X_RESUME, x->tag);
		r->is_request = 1;
		r->id = x->id ? mt_strdup(x->id) : NULL;
		r->resumes = resumes + 1;
		if (xfer_start(c, r, c->o.url, x->last_id.data))
			oom_gone(c);
		return;
	}
	mt_buf_printf(&b, "its SSE stream ended before the answer (%u message%s", x->events,
		      x->events == 1 ? "" : "s");
	if (x->bad) {
		mt_buf_printf(&b, "; %u event%s not JSON-RPC: '", x->bad, x->bad == 1 ? "" : "s");
		mt_buf_puts(&b, x->bad_excerpt.data ? x->bad_excerpt.data : "");
		mt_buf_putc(&b, '\'');
	}
	if (resumes)
		mt_buf_printf(&b, "; resumed %d time%s with Last-Event-ID", resumes, resumes == 1 ? "" : "s");
	mt_buf_putc(&b, ')');
	say(c, HC_FAILED, x, HC_LOST, (int)x->status, "%s", b.data);
	mt_buf_release(&b);
}

/* A POST that was answered with a status outside 2xx. */
static void refused(struct hc *c, struct xfer *x)
{
	struct mt_buf b = MT_BUF_INIT;

	status_text(x, &b);
	if (x->location.len) {
		mt_buf_puts(&b, " to ");
		hc_excerpt(x->location.data, x->location.len, EXCERPT, &b);
	}
	if (x->in.len) {
		mt_buf_puts(&b, ": ");
		hc_excerpt(x->in.data, x->in.len, EXCERPT, &b);
	}
	say(c, HC_FAILED, x, HC_STATUS, (int)x->status, "%s", b.data);
	mt_buf_release(&b);
}

static void post_done(struct hc *c, struct xfer *x)
{
	struct mt_buf b = MT_BUF_INIT;

	if (x->status < 200 || x->status > 299) {
		refused(c, x);
		return;
	}
	if (x->is_initialized && c->o.get_stream && !c->o.legacy && !c->get_on) {
		c->get_on = 1;
		c->get_at = mt_mono_ns();
	}
	if (c->o.legacy || x->status == 202 || x->status == 204) {
		/* Accepted: the answer comes on a stream (whatever the body says); for
		 * a request on Streamable HTTP, the GET stream, opened now if need be. */
		if (x->is_request && !c->o.legacy && !c->get_on) {
			c->get_on = 1;
			c->get_at = mt_mono_ns();
		}
	} else if (x->json && x->over) {
		if (x->is_request)
			say(c, HC_FAILED, x, HC_BODY, (int)x->status,
			    "HTTP %ld with a JSON body of more than %zu bytes", x->status, c->o.max_message);
	} else if (x->json && x->in.len) {
		deliver(c, x, x->in.data, x->in.len);
		if (x->is_request && !x->answered) {
			mt_buf_reset(&b);
			if (x->bad)
				hc_excerpt(x->in.data, x->in.len, EXCERPT, &b);
			if (x->bad)
				say(c, HC_FAILED, x, HC_BODY, (int)x->status,
				    "HTTP %ld with a body that is not JSON-RPC: '%s'", x->status, b.data);
			else
				say(c, HC_FAILED, x, HC_LOST, (int)x->status,
				    "HTTP %ld with a JSON body that holds no answer to it", x->status);
		}
	} else if (x->sse) {
		if (x->is_request && !x->answered)
			stream_ended(c, x);
	} else if (x->in.len && x->is_request) {
		mt_buf_printf(&b, "HTTP %ld with ", x->status);
		if (x->ctype.len) {
			mt_buf_puts(&b, "Content-Type ");
			hc_excerpt(x->ctype.data, x->ctype.len, 80, &b);
		} else {
			mt_buf_puts(&b, "no Content-Type");
		}
		mt_buf_puts(&b, ", not JSON or an SSE stream: '");
		hc_excerpt(x->in.data, x->in.len, EXCERPT, &b);
		mt_buf_putc(&b, '\'');
		say(c, HC_FAILED, x, HC_BODY, (int)x->status, "%s", b.data);
	}
	mt_buf_release(&b);
}

static void get_done(struct hc *c, struct xfer *x)
{
	struct mt_buf b = MT_BUF_INIT;

	c->get = NULL;
	if (c->deleted || c->gone)
		return;
	if (x->status == 405) {
		say(c, HC_NOTE, x, 0, 405, "the server offers no GET stream (HTTP 405)");
		return;
	}
	if (x->status < 200 || x->status > 299) {
		status_text(x, &b);
		if (x->in.len) {
			mt_buf_puts(&b, ": ");
			hc_excerpt(x->in.data, x->in.len, EXCERPT, &b);
		}
		say(c, HC_NOTE, x, 0, (int)x->status, "the server refused the GET stream: %s", b.data);
	} else if (!x->sse) {
		hc_excerpt(x->ctype.data ? x->ctype.data : "", x->ctype.len, 80, &b);
		say(c, HC_NOTE, x, 0, (int)x->status,
		    "the GET stream is not an SSE stream (Content-Type '%s')", b.data ? b.data : "");
	} else if (x->events || ++c->get_quiet < GET_QUIET_MAX) {
		long long ms = x->retry >= 0 ? x->retry : GET_AGAIN_MS;
		if (x->events)
			c->get_quiet = 0;
		if (ms > GET_AGAIN_MAX_MS)
			ms = GET_AGAIN_MAX_MS;
		c->get_at = mt_mono_ns() + (int64_t)ms * 1000000 + 1;
	} else {
		say(c, HC_NOTE, x, 0, (int)x->status,
		    "the server ended the GET stream %d times in a row without a message: not opened again",
		    GET_QUIET_MAX);
	}
	mt_buf_release(&b);
}

static void finish(struct hc *c, struct xfer *x, CURLcode rc)
{
	struct mt_buf b = MT_BUF_INIT;

	if (c->gate == x)
		c->gate = NULL;
	if (x->kind == X_DELETE)
		c->deleting--;
	if (x->parser_on)
		(void)mt_sse_close(&x->parser, on_event, x);
	if (x->kind == X_PROBE) {
		probe_done(c, x, rc);
		return;
	}
	if (x->kind == X_GET && c->get == x && rc != CURLE_OK)
		c->get = NULL;
	if (c->gone)
		return;
	if (rc != CURLE_OK) {
		if (cannot_connect(rc) && !x->head)
			unreachable(c, x, rc);
		else
			broken(c, x, rc);
		return;
	}
	switch (x->kind) {
	case X_POST: post_done(c, x); break;
	case X_RESUME:
		if (x->status < 200 || x->status > 299 || !x->sse) {
			status_text(x, &b);
			say(c, HC_FAILED, x, HC_LOST, (int)x->status,
			    "its SSE stream ended before the answer; resuming it with Last-Event-ID got %s",
			    b.data);
		} else if (!x->answered) {
			stream_ended(c, x);
		}
		break;
	case X_GET: get_done(c, x); break;
	case X_LEGACY:
		if (x->status == 200 && x->sse) {
			go_gone(c, 0, "ended the session's SSE stream");
		} else {
			status_text(x, &b);
			if (x->in.len) {
				mt_buf_puts(&b, ": ");
				hc_excerpt(x->in.data, x->in.len, EXCERPT, &b);
			}
			go_gone(c, 0, "refused the SSE stream: %s", b.data);
		}
		break;
	case X_DELETE:
		if ((x->status < 200 || x->status > 299) && x->status != 405)
			refused(c, x);
		break;
	default: break;
	}
	mt_buf_release(&b);
}

/* Run curl a step: start what may start, read, finish what ended. */
static void drive(struct hc *c)
{
	CURLMsg *m;
	int running = 0, left;

	pump(c);
	curl_multi_perform(c->multi, &running);
	while ((m = curl_multi_info_read(c->multi, &left))) {
		struct xfer *x, **pp;
		char *priv = NULL;
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
		x = (struct xfer *)priv;
		CURLcode rc = m->data.result;
		for (pp = &c->running; *pp && *pp != x; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = x->next;
		curl_multi_remove_handle(c->multi, x->e);
		if (x->paused)
			c->npaused--;
		finish(c, x, rc);
		xfer_free(x);
	}
	pump(c);
}

/* How long poll may wait, at most, for the timers of pump. */
static int next_timer_ms(const struct hc *c, int left_ms)
{
	int64_t now = mt_mono_ns(), t = left_ms < 0 ? 1000 : left_ms;

	if (c->waiting && c->gate && !c->gate->head) {
		int64_t due = (c->gate->started + (int64_t)HC_ORDER_MS * 1000000 - now) / 1000000 + 1;
		if (due < t)
			t = due;
	}
	if (c->get_on && !c->get && c->get_at) {
		int64_t due = (c->get_at - now) / 1000000 + 1;
		if (due < t)
			t = due;
	}
	if (t > 1000)
		t = 1000;
	return t < 0 ? 0 : (int)t;
}

static void unpause(struct hc *c)
{
	if (!c->npaused || c->qbytes > HC_QUEUE_MAX / 2)
		return;
	for (struct xfer *x = c->running; x; x = x->next) {
		if (x->paused) {
			x->paused = 0;
			c->npaused--;
			curl_easy_pause(x->e, CURLPAUSE_CONT);
		}
	}
}

/* ---- the interface ---- */

int hc_open(const struct hc_opts *o, struct hc **out, struct mt_err *err)
{
	struct hc *c = NULL;
	CURLU *u = curl_url();
	int ok = u && curl_url_set(u, CURLUPART_URL, o->url, 0) == CURLUE_OK && http_scheme(u);

	curl_url_cleanup(u);
	*out = NULL;
	if (!ok)
		return mt_err_set(err, "'%s' is not an http:// or https:// URL", o->url);
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return mt_err_set(err, "cannot initialise libcurl");
	c = mt_calloc(1, sizeof(*c));
	c->o = *o;
	if (!c->o.connect_timeout_ms)
		c->o.connect_timeout_ms = 10000;
	if (!c->o.max_message)
		c->o.max_message = (size_t)256 << 20;
	c->wtail = &c->waiting;
	if (!(c->multi = curl_multi_init())) {
		free(c);
		return mt_err_set(err, "cannot initialise libcurl");
	}
	{
		/* --cacert adds to the system's CAs: curl's default directory stays. */
		CURL *e = curl_easy_init();
		char *capath = NULL;
		if (e && curl_easy_getinfo(e, CURLINFO_CAPATH, &capath) == CURLE_OK && capath)
			snprintf(c->capath, sizeof(c->capath), "%s", capath);
		if (e)
			curl_easy_cleanup(e);
	}
	if (c->o.legacy && xfer_start(c, xfer_new(c, X_LEGACY, -1), c->o.url, NULL)) {
		hc_free(c);
		return mt_err_set(err, "out of memory");
	}
	*out = c;
	return 0;
}

void hc_free(struct hc *c)
{
	if (!c)
		return;
	while (c->running) {
		struct xfer *x = c->running;
		c->running = x->next;
		curl_multi_remove_handle(c->multi, x->e);
		xfer_free(x);
	}
	while (c->waiting) {
		struct xfer *x = c->waiting;
		c->waiting = x->next;
		xfer_free(x);
	}
	curl_multi_cleanup(c->multi);
	for (size_t i = 0; i < c->qlen; i++)
		ev_release(&c->q[c->qhead + i]);
	for (size_t i = 0; i < c->nheld; i++)
		ev_release(&c->held[i]);
	ev_release(&c->cur);
	free(c->q);
	free(c->held);
	free(c->sid);
	free(c->version);
	free(c->endpoint);
	free(c->init_id);
	free(c->gone_text);
	mt_buf_release(&c->get_last_id);
	free(c);
	curl_global_cleanup();
}

static void enqueue(struct hc *c, struct xfer *x)
{
	x->next = NULL;
	*c->wtail = x;
	c->wtail = &x->next;
}

void hc_post(struct hc *c, const char *msg, size_t n, int64_t tag)
{
	struct mt_class cl;
	struct xfer *x;

	if (c->gone)
		return;
	x = xfer_new(c, X_POST, tag);
	x->body = mt_malloc(n + 1);
	memcpy(x->body, msg, n);
	x->body[n] = '\0';
	x->body_len = n;
	mt_classify(msg, n, &cl);
	if (cl.kind == MT_REQUEST && cl.id.p) {
		x->is_request = 1;
		x->id = mt_strndup(cl.id.p, cl.id.n);
		if (cl.method.n == 12 && !memcmp(cl.method.p, "\"initialize\"", 12)) {
			free(c->init_id);
			c->init_id = mt_strdup(x->id);
		}
	} else if (cl.kind == MT_NOTIFICATION && cl.method.n == 27 &&
		   !memcmp(cl.method.p, "\"notifications/initialized\"", 27)) {
		x->is_initialized = 1;
	}
	enqueue(c, x);
}

void hc_delete(struct hc *c, int64_t tag)
{
	if (!c->gone)
		enqueue(c, xfer_new(c, X_DELETE, tag));
}

int hc_next(struct hc *c, int timeout_ms, struct hc_event *ev)
{
	int64_t deadline = timeout_ms < 0 ? -1 : mt_mono_ns() + (int64_t)timeout_ms * 1000000;

	ev_release(&c->cur);
	memset(ev, 0, sizeof(*ev));
	ev->tag = -1;
	ev->text = "";
	for (;;) {
		if (c->qlen) {
			c->cur = c->q[c->qhead++];
			c->qlen--;
			c->qbytes -= c->cur.len;
			if (!c->qlen)
				c->qhead = 0;
			unpause(c);
			ev->data = c->cur.data;
			ev->len = c->cur.len;
			ev->tag = c->cur.tag;
			ev->status = c->cur.status;
			ev->why = c->cur.why;
			ev->expired = c->cur.expired;
			ev->cert = c->cur.cert;
			ev->text = c->cur.text ? c->cur.text : "";
			if (c->cur.type == HC_GONE)
				c->gone_out = 1;
			return c->cur.type;
		}
		if (c->gone_out) {
			ev->text = c->gone_text ? c->gone_text : "";
			ev->cert = c->gone_cert;
			return HC_GONE;
		}
		drive(c);
		if (c->qlen)
			continue;
		int left = -1;
		if (deadline >= 0) {
			int64_t l = (deadline - mt_mono_ns()) / 1000000;
			if (l <= 0)
				return HC_TIMEOUT;
			left = l > 1000000 ? 1000000 : (int)l;
		}
		curl_multi_poll(c->multi, NULL, 0, next_timer_ms(c, left), NULL);
	}
}

int hc_flush(struct hc *c, int timeout_ms)
{
	int64_t deadline = mt_mono_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		drive(c);
		if (c->gone)
			return -1;
		if (!c->waiting && (!c->gate || c->gate->head) && !c->deleting)
			return 0;
		int64_t left = (deadline - mt_mono_ns()) / 1000000;
		if (left <= 0)
			return -1;
		curl_multi_poll(c->multi, NULL, 0, next_timer_ms(c, (int)(left > 1000 ? 1000 : left)), NULL);
	}
}

const char *hc_session_id(const struct hc *c)
{
	return c->sid;
}

int hc_deleted(const struct hc *c)
{
	return c->deleted;
}
