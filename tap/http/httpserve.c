/*
 * httpserve.c - an MCP server endpoint over HTTP (see httpserve.h).
 *
 * The endpoint (tap/http/httpendpoint.h: the HTTP tap's listening side and
 * strict reader) reads the requests and writes the replies. A session
 * holds its output channels: one per POST whose request waits for its answer
 * (JSON, or an SSE stream once something went out on it before the answer),
 * and its GET stream. What the application sends goes through the session's
 * queue of actions, pumped in order; a barrier or a delay holds the queue on
 * a timer. A client that goes away ends its channels: what would have gone on
 * them is dropped (a GET stream's messages wait for the next GET).
 */
#include "tap/http/httpserve.h"

#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/util.h>
#include <jansson.h>

#include "schema/message.h"
#include "schema/util.h"
#include "tap/http/httpendpoint.h"
#include "tap/http/httphdr.h"
#include "tap/http/httplisten.h"
#include "tap/http/httpsess.h"

/* Events kept per session for Last-Event-ID, at most (bytes). */
#define KEPT_MAX (1u << 20)
/* Messages held for a GET stream that is not open, at most (and bytes). */
#define HELD_MAX 1000
#define HELD_BYTES_MAX (4u << 20)
/* How often a barrier looks whether the bytes before it have left. */
#define BARRIER_POLL_MS 1
/* The fields of one reply, at most. */
#define FIELDS_MAX 72

struct srv;

/* A reply's fields (borrowed strings). */
struct fields {
	struct mt_hdr h[FIELDS_MAX];
	size_t n;
};

static void fields_add(struct fields *f, const char *name, const char *value)
{
	if (f->n < FIELDS_MAX) {
		f->h[f->n].name = name;
		f->h[f->n].value = value;
		f->n++;
	}
}

/* An event kept for a resumption. */
struct kept {
	struct kept *next;
	uint64_t n;     /* its number on its stream */
	uint64_t order; /* its place among the session's events */
	int64_t tag;    /* the application's (hsv_send), or -1 */
	size_t len;
	char text[]; /* the whole event, as sent */
};

/* Where the session's output goes: a POST's reply (req), or the GET stream (req 0). */
struct chan {
	struct chan *next;
	struct hsv_sess *sess;
	int64_t req;          /* the request's handle; 0: a GET stream */
	int num;              /* the stream's number in event ids */
	struct hep_req *http; /* the client's request while its reply is under way (its
			       * arg is this channel); NULL: answered, or gone */
	int sse;              /* the SSE stream's head went out */
	int done;             /* answered (a POST) or ended */
	uint64_t nev;         /* events sent on it */
	struct kept *kept, *kept_tail;
};

enum act_kind { A_SEND, A_ANSWER, A_BARRIER, A_DELAY, A_REFUSE };

struct act {
	struct act *next;
	enum act_kind kind;
	int64_t req;
	int sse; /* A_ANSWER: as an SSE stream; A_REFUSE: the status */
	int64_t ns;
	int64_t tag;       /* A_SEND, A_ANSWER: the application's, or -1 */
	size_t n;          /* p's bytes; A_REFUSE: the message's, then headers and body follow */
	size_t hlen, blen; /* A_REFUSE: the headers' JSON (NUL-terminated after p) and body */
	char p[];
};

struct held {
	struct held *next;
	int64_t tag;
	size_t n;
	char p[];
};

struct hsv_sess {
	struct srv *srv;
	struct hsv_sess *next, *prev;
	void *state;        /* the application's */
	char id[40];        /* Mcp-Session-Id or sessionId; "" when none */
	enum hsv_mode mode; /* its transport (a mock may serve both stateful ones) */
	char *client;       /* stateless: the client it is for (its _meta clientInfo) */
	struct chan *chans;
	struct chan *get;       /* the GET stream, while one is open */
	int next_num;           /* the next stream's number */
	int64_t next_req;       /* the last request handle given */
	int refused_first;      /* its first request was refused: it ends */
	struct act *q, *q_tail; /* what the application sent, not yet out */
	int holding;            /* the queue waits for a timer */
	int barrier_gap;        /* a barrier saw the bytes leave: now its gap */
	int sent_since_answer;  /* legacy: messages queued since the last answer */
	struct event *timer;
	struct held *held, *held_tail; /* messages for a GET stream not open */
	size_t nheld, held_bytes;
	size_t kept_bytes;
	uint64_t kept_order; /* the events sent so far on its streams */
	int closed;
};

struct srv {
	const struct hsv_opts *o;
	const struct hsv_app *app;
	struct event_base *base;
	struct hep *ep;         /* the endpoint: accepts, reads, writes */
	struct hln_pace *pace;  /* refused accepts, said at most once a second */
	struct hln_guard guard; /* on loopback: the Host and Origin let in */
	struct hsv_sess *sessions;
	struct hsv_sess *newest; /* without session ids: the one that takes the requests */
	struct event *sig_int, *sig_term, *stop_timer;
	int stopping;
	int64_t stop_deadline; /* monotonic ns */
	char post_path[256];
};

/* ---- sessions ---- */

static void mint(char *out, size_t n)
{
	unsigned char r[16];
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* (never in practice: fall back on the clock and the address) */
		uint64_t t = (uint64_t)mt_mono_ns() ^ (uint64_t)(uintptr_t)out;
		memcpy(r, &t, sizeof(t));
		memcpy(r + 8, &t, sizeof(t));
	}
	for (i = 0; i < sizeof(r) && 2 * i + 2 < n; i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[2 * i] = '\0';
}

static struct hsv_sess *sess_new(struct srv *v, enum hsv_mode mode)
{
	struct hsv_sess *s = mt_calloc(1, sizeof(*s));

	s->srv = v;
	s->mode = mode;
	s->next_num = 1;
	s->next = v->sessions;
	if (v->sessions)
		v->sessions->prev = s;
	v->sessions = s;
	if (mode != HSV_LEGACY)
		v->newest = s; /* (a legacy session is named by its sessionId) */
	return s;
}

/* The session id names, of that transport (a legacy id is no Mcp-Session-Id). */
static struct hsv_sess *sess_by_id(struct srv *v, const char *id, enum hsv_mode mode)
{
	for (struct hsv_sess *s = v->sessions; s; s = s->next)
		if (id && s->id[0] && s->mode == mode && !strcmp(s->id, id))
			return s;
	return NULL;
}

/* Streamable HTTP sessions mint Mcp-Session-Id (always beside a legacy recording). */
static int mints_ids(const struct srv *v)
{
	return v->o->mode != HSV_STREAMABLE || v->o->session_ids;
}

static void chan_end(struct chan *c);
static void pump(struct hsv_sess *s);

static void deliver_send(struct hsv_sess *s, int64_t req, const char *p, size_t n, int64_t tag);
static void deliver_answer(struct hsv_sess *s, int64_t req, const char *p, size_t n, int sse, int64_t tag);
static void deliver_refusal(struct hsv_sess *s, const struct act *a);
static void chan_free(struct chan *c);

/* Unlink a session and free it (told, or never told, already). */
static void sess_free(struct hsv_sess *s)
{
	struct srv *v = s->srv;

	while (s->chans) {
		struct chan *c = s->chans;
		s->chans = c->next;
		chan_end(c);
		chan_free(c);
	}
	while (s->q) {
		struct act *a = s->q;
		s->q = a->next;
		free(a);
	}
	while (s->held) {
		struct held *h = s->held;
		s->held = h->next;
		free(h);
	}
	if (s->timer)
		event_free(s->timer);
	if (s->prev)
		s->prev->next = s->next;
	else
		v->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	if (v->newest == s) {
		v->newest = v->sessions;
		while (v->newest && v->newest->mode == HSV_LEGACY)
			v->newest = v->newest->next;
	}
	free(s->client);
	free(s);
}

/* End a session: what is queued goes out (without waiting), the application is told, its streams end. */
static void sess_close(struct hsv_sess *s, const char *why)
{
	struct srv *v = s->srv;

	if (s->closed)
		return;
	s->closed = 1;
	while (s->q) {
		struct act *a = s->q;
		s->q = a->next;
		if (a->kind == A_SEND)
			deliver_send(s, a->req, a->p, a->n, a->tag);
		else if (a->kind == A_ANSWER)
			deliver_answer(s, a->req, a->p, a->n, a->sse, a->tag);
		else if (a->kind == A_REFUSE)
			deliver_refusal(s, a);
		free(a);
	}
	s->q_tail = NULL;
	if (s->state && v->app->close)
		v->app->close(s->state, s, why);
	s->state = NULL;
	sess_free(s);
}

const char *hsv_session_id(const struct hsv_sess *s)
{
	return s->id;
}

/* ---- channels ---- */

static struct chan *chan_new(struct hsv_sess *s, int64_t req, struct hep_req *http)
{
	struct chan *c = mt_calloc(1, sizeof(*c));

	c->sess = s;
	c->req = req;
	c->num = s->next_num++;
	c->http = http;
	if (http)
		hep_set_arg(http, c);
	c->next = s->chans;
	s->chans = c;
	return c;
}

/* Free c (its reply ended or its client gone). */
static void chan_free(struct chan *c)
{
	while (c->kept) {
		struct kept *k = c->kept;
		c->kept = k->next;
		c->sess->kept_bytes -= k->len;
		free(k);
	}
	free(c);
}

/*
 * A POST's channel is answered: it goes, unless it keeps events for a
 * resumption; then the oldest answered ones beyond CHANS_KEPT go.
 */
#define CHANS_KEPT 64
static void chan_retire(struct chan *c)
{
	struct hsv_sess *s = c->sess;
	struct chan **pp, *last_kept = NULL;
	int kept = 0;

	for (pp = &s->chans; *pp; pp = &(*pp)->next) {
		struct chan *x = *pp;
		if (x == c && !c->kept) {
			*pp = c->next;
			chan_free(c);
			return;
		}
	}
	/* (newest first in the list: the ones past CHANS_KEPT answered ones are the oldest) */
	for (pp = &s->chans; *pp;) {
		struct chan *x = *pp;
		if (x->req && x->done && ++kept > CHANS_KEPT) {
			*pp = x->next;
			chan_free(x);
			continue;
		}
		last_kept = x;
		pp = &x->next;
	}
	(void)last_kept;
}

static struct chan *chan_of(struct hsv_sess *s, int64_t req)
{
	for (struct chan *c = s->chans; c; c = c->next)
		if (c->req == req && req)
			return c;
	return NULL;
}

/* The fields every reply of a session carries. */
static void session_headers(struct hsv_sess *s, struct fields *f)
{
	if (s->id[0] && s->mode == HSV_STREAMABLE)
		fields_add(f, "Mcp-Session-Id", s->id);
}

/*
 * Start the SSE stream of c. (A stream may be idle as long as it likes; a
 * client that does not take what is sent to it is closed by the endpoint.)
 */
static void sse_start(struct chan *c)
{
	struct fields f = {.n = 0};

	if (c->sse || !c->http)
		return;
	c->sse = 1;
	fields_add(&f, "Content-Type", "text/event-stream");
	fields_add(&f, "Cache-Control", "no-cache");
	session_headers(c->sess, &f);
	hep_stream_start(c->http, 200, "OK", f.h, f.n);
}

/* Forget what c kept beyond the session's bound (the oldest first, any stream). */
static void kept_trim(struct hsv_sess *s)
{
	while (s->kept_bytes > KEPT_MAX) {
		struct chan *oldest = NULL;
		for (struct chan *c = s->chans; c; c = c->next)
			if (c->kept && (!oldest || c->num < oldest->num))
				oldest = c;
		if (!oldest)
			break;
		struct kept *k = oldest->kept;
		oldest->kept = k->next;
		if (!oldest->kept)
			oldest->kept_tail = NULL;
		s->kept_bytes -= k->len;
		free(k);
	}
}

/* One message as an event on c's stream (started if need be), kept for a resumption. */
static void sse_event(struct chan *c, const char *p, size_t n, int64_t tag)
{
	struct mt_buf ev = MT_BUF_INIT;
	size_t i = 0;

	c->nev++;
	if (c->sess->mode == HSV_LEGACY) {
		mt_buf_puts(&ev, "event: message\n");
	} else {
		mt_buf_printf(&ev, "event: message\nid: %d-%llu\n", c->num, (unsigned long long)c->nev);
	}
	/* A line end inside the message would end its data field: each line its own. */
	for (;;) {
		size_t j = i;
		while (j < n && p[j] != '\n' && p[j] != '\r')
			j++;
		mt_buf_puts(&ev, "data: ");
		mt_buf_append(&ev, p + i, j - i);
		mt_buf_putc(&ev, '\n');
		if (j >= n)
			break;
		if (p[j] == '\r' && j + 1 < n && p[j + 1] == '\n')
			j++;
		i = j + 1;
	}
	mt_buf_putc(&ev, '\n');
	if (c->sess->mode != HSV_LEGACY) {
		struct kept *k = mt_malloc(sizeof(*k) + ev.len);
		k->next = NULL;
		k->n = c->nev;
		k->order = ++c->sess->kept_order;
		k->tag = tag;
		k->len = ev.len;
		memcpy(k->text, ev.data, ev.len);
		if (c->kept_tail)
			c->kept_tail->next = k;
		else
			c->kept = k;
		c->kept_tail = k;
		c->sess->kept_bytes += ev.len;
		kept_trim(c->sess);
	}
	if (c->http) {
		sse_start(c);
		hep_stream_chunk(c->http, ev.data, ev.len);
	}
	mt_buf_release(&ev);
}

/* c's reply is over: its stream ends (a JSON answer was sent whole). */
static void chan_end(struct chan *c)
{
	c->done = 1;
	if (c->http) {
		if (c->sse)
			hep_stream_end(c->http);
		else
			hep_reply(c->http, 202, "Accepted", NULL, 0, NULL, 0);
		c->http = NULL;
	}
}

/* A message for the GET stream: on it, or held until one opens. */
static void to_get(struct hsv_sess *s, const char *p, size_t n, int64_t tag)
{
	struct held *h;

	if (s->get && s->get->http) {
		sse_event(s->get, p, n, tag);
		return;
	}
	if (s->nheld >= HELD_MAX || s->held_bytes + n > HELD_BYTES_MAX) {
		if (s->nheld == HELD_MAX)
			mt_voice_warn(&s->srv->o->voice,
				      "%s: session %s: more than %d messages for a GET stream the client "
				      "does not open: the next ones are dropped",
				      s->srv->o->name, s->id[0] ? s->id : "-", HELD_MAX);
		s->nheld++;
		return;
	}
	h = mt_malloc(sizeof(*h) + n);
	h->next = NULL;
	h->tag = tag;
	h->n = n;
	memcpy(h->p, p, n);
	if (s->held_tail)
		s->held_tail->next = h;
	else
		s->held = h;
	s->held_tail = h;
	s->nheld++;
	s->held_bytes += n;
}

/* ---- the queue ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg);

static void hold_for(struct hsv_sess *s, int64_t ns)
{
	struct timeval tv = {(time_t)(ns / 1000000000), (suseconds_t)(ns % 1000000000 / 1000)};

	if (!s->timer)
		s->timer = evtimer_new(s->srv->base, on_timer, s);
	s->holding = 1;
	evtimer_add(s->timer, &tv);
}

/* Have the bytes of the session's open replies left the endpoint (and been taken by the peer's TCP)? */
static int drained(struct hsv_sess *s)
{
	for (struct chan *c = s->chans; c; c = c->next)
		if (c->http && !hep_flushed(c->http))
			return 0;
	return 1;
}

/* Is the output of one of the session's open replies full (flow control: the queue waits)? */
static int sess_full(struct hsv_sess *s)
{
	for (struct chan *c = s->chans; c; c = c->next)
		if (c->http && hep_full(c->http))
			return 1;
	return 0;
}

static void deliver_answer(struct hsv_sess *s, int64_t req, const char *p, size_t n, int sse, int64_t tag)
{
	struct chan *c = chan_of(s, req);

	if (!c || c->done)
		return; /* its POST is gone (or never was: what came got 202) */
	if (s->mode == HSV_LEGACY) {
		to_get(s, p, n, tag);
	} else if (!c->http) {
		/* its client went away */
	} else if (c->sse || sse) {
		sse_event(c, p, n, tag);
	} else {
		struct fields f = {.n = 0};
		fields_add(&f, "Content-Type", "application/json");
		session_headers(s, &f);
		hep_reply(c->http, 200, "OK", f.h, f.n, p, n);
		c->http = NULL;
	}
	chan_end(c);
	chan_retire(c);
}

/*
 * A recorded reply's headers (JSON [[name, value]]) into f: those a client
 * reads. Returns what their strings are borrowed from (json_decref it once the
 * reply is sent).
 */
static json_t *recorded_headers(struct fields *f, const char *json)
{
	json_t *a = json_loads(json ? json : "[]", 0, NULL), *e;
	struct mt_hdr h[64];
	unsigned char keep[64];
	size_t i, n = 0;

	json_array_foreach(a, i, e)
	{
		const char *name = json_string_value(json_array_get(e, 0));
		const char *value = json_string_value(json_array_get(e, 1));
		if (name && value && n < 64) {
			h[n].name = name;
			h[n].value = value;
			n++;
		}
	}
	mt_hdr_filter(h, n, MT_HDR_RESPONSE, keep, NULL);
	/* (A compressed body is stored decoded: it is sent so, without its coding.) */
	for (i = 0; i < n; i++)
		if (keep[i] && strcasecmp(h[i].name, "Date") && strcasecmp(h[i].name, "Mcp-Session-Id") &&
		    strcasecmp(h[i].name, "Content-Encoding"))
			fields_add(f, h[i].name, h[i].value);
	return a;
}

static void deliver_refusal(struct hsv_sess *s, const struct act *a)
{
	struct chan *c = chan_of(s, a->req);
	const char *headers = a->p + a->n + 1, *body = headers + a->hlen + 1;
	char reason[32];
	struct fields f = {.n = 0};
	json_t *held;

	if (!c || c->done)
		return;
	if (s->mode == HSV_LEGACY || !c->http || c->sse) {
		/* Too late for a status: the message says it. */
		deliver_answer(s, a->req, a->p, a->n, 0, -1);
		return;
	}
	if (a->req == 1 && s->mode == HSV_STREAMABLE)
		s->refused_first = 1;
	held = recorded_headers(&f, headers);
	snprintf(reason, sizeof(reason), "%s",
		 a->sse == 401   ? "Unauthorized"
		 : a->sse == 403 ? "Forbidden"
				 : "Refused");
	hep_reply(c->http, a->sse, reason, f.h, f.n, body, a->blen);
	json_decref(held);
	c->http = NULL;
	chan_end(c);
	chan_retire(c);
}

static void deliver_send(struct hsv_sess *s, int64_t req, const char *p, size_t n, int64_t tag)
{
	struct chan *c = req ? chan_of(s, req) : NULL;

	if (s->mode != HSV_LEGACY && c && !c->done && c->http) {
		sse_event(c, p, n, tag);
		return;
	}
	to_get(s, p, n, tag);
}

/*
 * A barrier's gap once the bytes have left. A legacy client reads its one
 * stream in big gulps and the SDK's parser hands all the events of a read over
 * at once, its notifications then run after the answer that came in the same
 * read (their progress callbacks are lost): its gap is longer.
 */
#define LEGACY_BARRIER_MS 100
static int barrier_gap_ms(const struct hsv_sess *s)
{
	int ms = s->srv->o->barrier_ms;

	return s->mode == HSV_LEGACY && ms < LEGACY_BARRIER_MS ? LEGACY_BARRIER_MS : ms;
}

/* Send what the queue holds, up to a barrier or a delay that must wait. */
static void pump(struct hsv_sess *s)
{
	while (s->q && !s->holding && !sess_full(s)) {
		struct act *a = s->q;
		if (a->kind == A_BARRIER) {
			if (!s->barrier_gap) {
				if (!drained(s)) {
					hold_for(s, BARRIER_POLL_MS * 1000000LL);
					return;
				}
				s->barrier_gap = 1;
				if (s->srv->o->barrier_ms > 0) {
					hold_for(s, barrier_gap_ms(s) * 1000000LL);
					return;
				}
			}
			s->barrier_gap = 0;
		} else if (a->kind == A_DELAY) {
			if (a->ns > 0) {
				int64_t ns = a->ns;
				a->ns = 0;
				hold_for(s, ns);
				return;
			}
		} else if (a->kind == A_SEND) {
			deliver_send(s, a->req, a->p, a->n, a->tag);
		} else if (a->kind == A_REFUSE) {
			deliver_refusal(s, a);
		} else {
			deliver_answer(s, a->req, a->p, a->n, a->sse, a->tag);
		}
		s->q = a->next;
		if (!s->q)
			s->q_tail = NULL;
		free(a);
	}
}

static void sess_close(struct hsv_sess *s, const char *why);

/* A session whose first request was refused never began for its client: it ends. */
static void after_refusal(struct hsv_sess *s)
{
	if (s->refused_first && !s->closed)
		sess_close(s, "its initialize was refused, as recorded");
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct hsv_sess *s = arg;

	(void)fd;
	(void)what;
	s->holding = 0;
	pump(s);
	after_refusal(s);
}

static void enqueue(struct hsv_sess *s, enum act_kind kind, int64_t req, const char *p, size_t n, int sse,
		    int64_t ns, int64_t tag)
{
	struct act *a;

	if (s->closed)
		return;
	/*
	 * Legacy: its one stream carries the notifications and the answer after
	 * them. Written together, the client reads them together, and the SDK then
	 * runs the notifications after the answer (a progress callback is lost):
	 * the answer waits for a barrier, whatever the application asked.
	 */
	if (s->mode == HSV_LEGACY) {
		if (kind == A_SEND) {
			s->sent_since_answer++;
		} else if (kind == A_ANSWER || kind == A_REFUSE) {
			if (s->sent_since_answer) {
				s->sent_since_answer = 0;
				enqueue(s, A_BARRIER, 0, NULL, 0, 0, 0, -1);
			}
		} else if (kind == A_BARRIER) {
			s->sent_since_answer = 0;
		}
	}
	/* Nothing waits before it: out at once (the common case needs no copy). */
	if (!s->q && !s->holding && (kind == A_SEND || kind == A_ANSWER) && !sess_full(s)) {
		if (kind == A_SEND)
			deliver_send(s, req, p, n, tag);
		else
			deliver_answer(s, req, p, n, sse, tag);
		return;
	}
	a = mt_malloc(sizeof(*a) + n);
	a->next = NULL;
	a->kind = kind;
	a->req = req;
	a->sse = sse;
	a->ns = ns;
	a->tag = tag;
	a->n = n;
	if (n)
		memcpy(a->p, p, n);
	if (s->q_tail)
		s->q_tail->next = a;
	else
		s->q = a;
	s->q_tail = a;
	pump(s);
}

void hsv_send(struct hsv_sess *s, int64_t req, const char *p, size_t n, int64_t tag)
{
	enqueue(s, A_SEND, req, p, n, 0, 0, tag);
}

void hsv_answer(struct hsv_sess *s, int64_t req, const char *p, size_t n, int sse, int64_t tag)
{
	enqueue(s, A_ANSWER, req, p, n, sse, 0, tag);
}

void hsv_refuse(struct hsv_sess *s, int64_t req, int status, const char *headers_json, const char *body,
		size_t body_len, const char *p, size_t n)
{
	size_t hlen = strlen(headers_json ? headers_json : "[]");
	struct act *a;

	if (s->closed)
		return;
	a = mt_malloc(sizeof(*a) + n + 1 + hlen + 1 + body_len + 1);
	a->next = NULL;
	a->kind = A_REFUSE;
	a->req = req;
	a->sse = status;
	a->ns = 0;
	a->tag = -1;
	a->n = n;
	a->hlen = hlen;
	a->blen = body_len;
	memcpy(a->p, p, n);
	a->p[n] = '\0';
	memcpy(a->p + n + 1, headers_json ? headers_json : "[]", hlen + 1);
	if (body_len)
		memcpy(a->p + n + 1 + hlen + 1, body, body_len);
	a->p[n + 1 + hlen + 1 + body_len] = '\0';
	if (s->q_tail)
		s->q_tail->next = a;
	else
		s->q = a;
	s->q_tail = a;
	pump(s);
}

void hsv_barrier(struct hsv_sess *s)
{
	enqueue(s, A_BARRIER, 0, NULL, 0, 0, 0, -1);
}

void hsv_delay(struct hsv_sess *s, int64_t ns)
{
	if (ns > 0)
		enqueue(s, A_DELAY, 0, NULL, 0, 0, ns, -1);
}

/* ---- the endpoint's calls ---- */

/* A request's client went away before its reply ended: its channel has no client now. */
static void on_gone(void *ctx, struct hep_req *r, void *arg)
{
	struct chan *c = arg;
	struct hsv_sess *s;

	(void)ctx;
	(void)r;
	if (!c || c->http != r)
		return;
	s = c->sess;
	c->http = NULL;
	if (s->get == c) {
		s->get = NULL;
		/* A legacy session is its stream. */
		if (s->mode == HSV_LEGACY && !s->closed) {
			sess_close(s, "the client closed its stream");
			return;
		}
	}
	pump(s); /* (it may have waited for that client's output to drain) */
}

/* A full output drained: the session's queue goes on. */
static void on_writable(void *ctx, struct hep_req *r, void *arg)
{
	struct chan *c = arg;

	(void)ctx;
	if (!c || c->http != r || c->sess->closed)
		return;
	pump(c->sess);
	after_refusal(c->sess);
}

/* What the endpoint says (a refused Host or Origin, refused accepts): the mock's own warning. */
static void on_say(void *ctx, const char *line)
{
	struct srv *v = ctx;

	mt_voice_warn(&v->o->voice, "%s", line);
}

/* ---- requests ---- */

/* A JSON-RPC error (id null) as the reply, with Allow when allow is not NULL. */
static void reply_error_allow(struct hep_req *req, int code, const char *reason, const char *text,
			      const char *allow)
{
	json_t *e = json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error", "code", -32000,
			      "message", text);
	char *s = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	struct fields f = {.n = 0};

	if (allow)
		fields_add(&f, "Allow", allow);
	fields_add(&f, "Content-Type", "application/json");
	hep_reply(req, code, reason, f.h, f.n, s, strlen(s));
	free(s);
	json_decref(e);
}

static void reply_error(struct hep_req *req, int code, const char *reason, const char *text)
{
	reply_error_allow(req, code, reason, text, NULL);
}

static const char *header(struct hep_req *req, const char *name)
{
	return hep_field(req, name);
}

/* Does Accept list type (or its wildcards)? */
static int accepts(struct hep_req *req, const char *type)
{
	const char *a = header(req, "Accept");

	return a && (mt_hdr_has_token(a, type) || mt_hdr_has_token(a, "*/*"));
}

/* The path of the request's target (without its query), into out. */
static void target_path(struct hep_req *req, char *out, size_t n)
{
	const char *uri = hs_uri_target(hep_target(req));
	size_t len = strcspn(uri ? uri : "/", "?#");

	snprintf(out, n, "%.*s", (int)len, uri ? uri : "/");
}

/* The query parameter name of the request's target, into out ("" when none). */
static void query_param(struct hep_req *req, const char *name, char *out, size_t n)
{
	const char *uri = hep_target(req), *q = uri ? strchr(uri, '?') : NULL;
	size_t nl = strlen(name);

	out[0] = '\0';
	while (q && *q) {
		q++;
		if (!strncmp(q, name, nl) && q[nl] == '=') {
			size_t len = strcspn(q + nl + 1, "&#");
			snprintf(out, n, "%.*s", (int)len, q + nl + 1);
			return;
		}
		q = strchr(q, '&');
	}
}

static struct hsv_sess *open_session(struct srv *v, struct hep_req *req, enum hsv_mode mode)
{
	struct hsv_sess *s = sess_new(v, mode);

	if (mode == HSV_LEGACY || (mode == HSV_STREAMABLE && mints_ids(v)))
		mint(s->id, sizeof(s->id));
	s->state = v->app->open(v->app->ctx, s);
	if (!s->state) {
		sess_free(s); /* (not told: it never was) */
		reply_error(req, 503, "Service Unavailable", "the mock cannot take another session");
		return NULL;
	}
	return s;
}

/* A client message: classified; a request waits for its answer, anything else gets 202. */
static void take_message(struct srv *v, struct hsv_sess *s, struct hep_req *req, const char *p, size_t n)
{
	struct mt_class c;
	enum mt_kind k = mt_classify(p, n, &c);
	void *state = s->state;

	if (k == MT_REQUEST && s->mode != HSV_LEGACY) {
		struct chan *ch = chan_new(s, ++s->next_req, req);
		v->app->message(state, s, ch->req, p, n);
		after_refusal(s);
		return;
	}
	if (s->mode == HSV_LEGACY && k == MT_REQUEST) {
		/* The answer goes on the stream; the POST itself is accepted. */
		struct chan *ch = chan_new(s, ++s->next_req, NULL);
		hep_reply(req, 202, "Accepted", NULL, 0, NULL, 0);
		v->app->message(state, s, ch->req, p, n);
		return;
	}
	hep_reply(req, 202, "Accepted", NULL, 0, NULL, 0);
	v->app->message(state, s, 0, p, n);
}

/* A message whose params._meta names its protocol revision (2026-07-28 on). */
static int names_revision(const struct mt_class *c)
{
	struct mt_span meta, v;

	return mt_json_member(c->params, "_meta", &meta) == 1 && meta.n && meta.p[0] == '{' &&
	       mt_json_member(meta, "io.modelcontextprotocol/protocolVersion", &v) == 1 && v.n &&
	       v.p[0] == '"';
}

static void on_post(struct srv *v, struct hep_req *req, const char *path, enum hsv_mode mode)
{
	size_t n;
	const char *in = hep_body(req, &n);
	const char *ct = header(req, "Content-Type");
	char *body;
	struct hsv_sess *s = NULL;
	struct mt_class c;

	if (mode == HSV_LEGACY) {
		char sid[64];
		if (strcmp(path, v->post_path)) {
			reply_error(req, 404, "Not Found", "no such endpoint");
			return;
		}
		query_param(req, "sessionId", sid, sizeof(sid));
		if (!sid[0]) {
			reply_error(req, 400, "Bad Request", "sessionId is missing");
			return;
		}
		if (!(s = sess_by_id(v, sid, HSV_LEGACY))) {
			reply_error(req, 404, "Not Found", "no such session");
			return;
		}
	} else if (!accepts(req, "application/json") || !accepts(req, "text/event-stream")) {
		reply_error(req, 406, "Not Acceptable",
			    "Accept must list application/json and text/event-stream");
		return;
	}
	if (!ct || !mt_hdr_has_token(ct, "application/json")) {
		reply_error(req, 415, "Unsupported Media Type", "Content-Type must be application/json");
		return;
	}
	/* (a copy: the request is gone once answered, and a 202 goes before the message) */
	body = mt_malloc(n + 1);
	memcpy(body, in, n);
	body[n] = '\0';
	mt_classify(body, n, &c);
	if (c.kind == MT_INVALID || c.kind == MT_NOTJSONRPC || c.kind == MT_BATCH) {
		reply_error(req, 400, "Bad Request",
			    c.kind == MT_INVALID ? "the body is not JSON"
			    : c.kind == MT_BATCH ? "a batch is not served (one message per POST)"
						 : "the body is not a JSON-RPC message");
		goto out;
	}
	if (mode == HSV_STREAMABLE && v->o->also_stateless && !header(req, "Mcp-Session-Id") &&
	    !(c.kind == MT_REQUEST && c.method.n == 12 && !memcmp(c.method.p, "\"initialize\"", 12)) &&
	    names_revision(&c))
		mode = HSV_STATELESS; /* (a 2026-07-28 request beside the sessions) */
	if (mode == HSV_STREAMABLE) {
		const char *sid = header(req, "Mcp-Session-Id");
		int init =
			c.kind == MT_REQUEST && c.method.n == 12 && !memcmp(c.method.p, "\"initialize\"", 12);
		if (init && !sid) {
			if (!(s = open_session(v, req, HSV_STREAMABLE)))
				goto out;
		} else if (!mints_ids(v)) {
			s = v->newest;
			if (!s) {
				reply_error(req, 400, "Bad Request", "no session: initialize first");
				goto out;
			}
		} else if (!sid) {
			reply_error(req, 400, "Bad Request", "Mcp-Session-Id is missing");
			goto out;
		} else if (!(s = sess_by_id(v, sid, HSV_STREAMABLE))) {
			reply_error(req, 404, "Not Found", "no such session (ended, or never was)");
			goto out;
		}
	} else if (mode == HSV_STATELESS) {
		char *who = hs_meta_client(body, n);
		if (!who)
			who = mt_strdup("");
		for (s = v->sessions; s; s = s->next)
			if (s->client && !strcmp(s->client, who))
				break;
		if (!s) {
			if (!(s = open_session(v, req, HSV_STATELESS))) {
				free(who);
				goto out;
			}
			s->client = who;
		} else {
			free(who);
		}
	}
	take_message(v, s, req, body, n);
out:
	free(body);
}

static int by_order(const void *a, const void *b)
{
	const struct kept *x = *(const struct kept *const *)a, *y = *(const struct kept *const *)b;

	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * A resumption's events again on req, each as it went before, in the order
 * they went: those of stream num after its event after (num -1: none), and
 * those tags name (see hsv_app.resume; each the first kept one with its tag
 * after the one found for the tag before it).
 */
static void resend(struct hsv_sess *s, struct hep_req *req, int num, unsigned long long after,
		   const int64_t *tags, size_t ntags)
{
	const struct kept **out = NULL;
	size_t n = 0, cap = 0;
	uint64_t last = 0;

	for (const struct chan *c = s->chans; c; c = c->next)
		for (const struct kept *k = c->kept; k; k = k->next)
			if (c->num == num && k->n > after) {
				if (n == cap)
					out = mt_realloc(out, (cap = cap ? cap * 2 : 16) * sizeof(*out));
				out[n++] = k;
			}
	for (size_t i = 0; i < ntags; i++) {
		const struct kept *best = NULL;
		for (const struct chan *c = s->chans; c; c = c->next)
			for (const struct kept *k = c->kept; k; k = k->next)
				if (k->tag == tags[i] && k->order > last && (!best || k->order < best->order))
					best = k;
		if (!best)
			continue; /* (no longer kept, or never sent as an event) */
		last = best->order;
		if (n == cap)
			out = mt_realloc(out, (cap = cap ? cap * 2 : 16) * sizeof(*out));
		out[n++] = best;
	}
	if (n > 1)
		qsort(out, n, sizeof(*out), by_order);
	for (size_t i = 0; i < n; i++)
		if (!i || out[i] != out[i - 1])
			hep_stream_chunk(req, out[i]->text, out[i]->len);
	free(out);
}

static void on_get(struct srv *v, struct hep_req *req, enum hsv_mode mode)
{
	struct hsv_sess *s;
	const char *lei;

	if (mode == HSV_STATELESS) {
		reply_error_allow(req, 405, "Method Not Allowed", "no GET stream on a stateless server",
				  "POST");
		return;
	}
	if (!accepts(req, "text/event-stream")) {
		reply_error(req, 406, "Not Acceptable", "Accept must list text/event-stream");
		return;
	}
	if (mode == HSV_LEGACY) {
		struct chan *c;
		struct mt_buf ep = MT_BUF_INIT;
		if (!(s = open_session(v, req, HSV_LEGACY)))
			return;
		c = chan_new(s, 0, req);
		s->get = c;
		sse_start(c);
		mt_buf_printf(&ep, "event: endpoint\ndata: %s?sessionId=%s\n\n", v->post_path, s->id);
		hep_stream_chunk(req, ep.data, ep.len);
		mt_buf_release(&ep);
		/* (what the recorded server said before any client message) */
		while (s->held) {
			struct held *h = s->held;
			s->held = h->next;
			sse_event(c, h->p, h->n, h->tag);
			free(h);
		}
		s->held_tail = NULL;
		s->nheld = s->held_bytes = 0;
		return;
	}
	if (mints_ids(v)) {
		const char *sid = header(req, "Mcp-Session-Id");
		if (!sid) {
			reply_error(req, 400, "Bad Request", "Mcp-Session-Id is missing");
			return;
		}
		if (!(s = sess_by_id(v, sid, HSV_STREAMABLE))) {
			reply_error(req, 404, "Not Found", "no such session (ended, or never was)");
			return;
		}
	} else if (!(s = v->newest)) {
		reply_error(req, 400, "Bad Request", "no session: initialize first");
		return;
	}
	if (s->get && s->get->http) {
		reply_error(req, 409, "Conflict", "the session's GET stream is open already");
		return;
	}
	lei = header(req, "Last-Event-ID");
	struct chan *g = chan_new(s, 0, req);
	s->get = g;
	sse_start(g);
	if (lei) {
		/* The events of that stream after it, again (or those the application names). */
		const int64_t *tags = NULL;
		size_t ntags = 0;
		int num = 0, named = 0;
		unsigned long long after = 0;
		if (v->app->resume && s->state)
			named = v->app->resume(s->state, s, lei, &tags, &ntags);
		if (sscanf(lei, "%d-%llu", &num, &after) != 2)
			num = -1;
		resend(s, req, num, after, named ? tags : NULL, named ? ntags : 0);
		if (num >= 0) {
			for (struct chan *c = s->chans; c; c = c->next) {
				if (c->num != num)
					continue;
				/* A POST's stream not answered yet goes on here. */
				if (c->req && !c->done && !c->http) {
					c->http = req;
					c->sse = 1;
					hep_set_arg(req, c);
					s->get = NULL;
					g->http = NULL;
					g->done = 1;
					return;
				}
			}
		}
	}
	while (s->held) {
		struct held *h = s->held;
		s->held = h->next;
		sse_event(g, h->p, h->n, h->tag);
		free(h);
	}
	s->held_tail = NULL;
	s->nheld = s->held_bytes = 0;
}

static void on_delete(struct srv *v, struct hep_req *req, enum hsv_mode mode)
{
	const char *sid = header(req, "Mcp-Session-Id");
	struct hsv_sess *s;

	if (mode != HSV_STREAMABLE || !mints_ids(v)) {
		reply_error_allow(req, 405, "Method Not Allowed", "no sessions to delete",
				  mode == HSV_LEGACY ? "GET" : "POST");
		return;
	}
	if (!sid) {
		reply_error(req, 400, "Bad Request", "Mcp-Session-Id is missing");
		return;
	}
	if (!(s = sess_by_id(v, sid, HSV_STREAMABLE))) {
		reply_error(req, 404, "Not Found", "no such session (ended, or never was)");
		return;
	}
	sess_close(s, "deleted");
	hep_reply(req, 200, "OK", NULL, 0, NULL, 0);
}

/*
 * The transport a path serves: the main endpoint's, the other endpoints'
 * (hsv_opts.also_*), the legacy POST path. 0 when none.
 */
static int path_mode(const struct srv *v, const char *path, enum hsv_mode *mode, int *post)
{
	const struct hsv_opts *o = v->o;

	*post = 0;
	if (!strcmp(path, o->path)) {
		*mode = o->mode;
		return 1;
	}
	if (o->mode == HSV_STATELESS)
		return 0;
	if (o->also_streamable && !strcmp(path, o->also_streamable)) {
		*mode = HSV_STREAMABLE;
		return 1;
	}
	if (o->also_legacy && !strcmp(path, o->also_legacy)) {
		*mode = HSV_LEGACY;
		return 1;
	}
	if ((o->mode == HSV_LEGACY || o->also_legacy) && !strcmp(path, v->post_path)) {
		*mode = HSV_LEGACY;
		*post = 1;
		return 1;
	}
	return 0;
}

/* A request, whole and past the endpoint's checks (framing, size, Host and Origin). */
static void on_request(void *arg, struct hep_req *req)
{
	struct srv *v = arg;
	char path[1024];
	const char *method = hep_method(req);
	enum hsv_mode mode = v->o->mode;
	int ours, post;

	if (v->stopping) {
		reply_error(req, 503, "Service Unavailable", "the mock is stopping");
		return;
	}
	target_path(req, path, sizeof(path));
	ours = path_mode(v, path, &mode, &post);
	if (!ours && v->app->other) {
		/* Another path: what the recording answered there, if it did. */
		int status;
		const char *headers, *body;
		size_t blen;
		if (v->app->other(v->app->ctx, method, hs_uri_target(hep_target(req)), &status, &headers,
				  &body, &blen)) {
			struct fields f = {.n = 0};
			json_t *held = recorded_headers(&f, headers);
			hep_reply(req, status, status < 300 ? "OK" : "Recorded", f.h, f.n, body, blen);
			json_decref(held);
			return;
		}
	}
	if (!ours) {
		reply_error(req, 404, "Not Found", "no such endpoint");
		return;
	}
	if (mode == HSV_LEGACY) {
		if (!strcmp(method, "GET") && !post)
			on_get(v, req, HSV_LEGACY);
		else if (!strcmp(method, "POST") && post)
			on_post(v, req, path, HSV_LEGACY);
		else
			reply_error_allow(req, 405, "Method Not Allowed", "not this method here",
					  post ? "POST" : "GET");
		return;
	}
	if (!strcmp(method, "POST"))
		on_post(v, req, path, mode);
	else if (!strcmp(method, "GET"))
		on_get(v, req, mode);
	else if (!strcmp(method, "DELETE"))
		on_delete(v, req, mode);
	else
		reply_error_allow(req, 405, "Method Not Allowed", "not this method here",
				  mode == HSV_STATELESS ? "POST" : "GET, POST, DELETE");
}

/* ---- starting and stopping ---- */

/* Stopping: the loop ends once what was sent has left, or at stop_ms. */
static void on_stop_timer(evutil_socket_t fd, short what, void *arg)
{
	struct srv *v = arg;
	struct timeval tv = {0, 10000};
	int busy = 0;

	(void)fd;
	(void)what;
	busy = hep_busy(v->ep);
	if (!busy || mt_mono_ns() >= v->stop_deadline)
		event_base_loopbreak(v->base);
	else
		evtimer_add(v->stop_timer, &tv);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct srv *v = arg;
	struct timeval tv = {0, 100000};

	(void)sig;
	(void)what;
	if (v->stopping) {
		event_base_loopbreak(v->base);
		return;
	}
	v->stopping = 1;
	hep_stop_accepting(v->ep);
	while (v->sessions)
		sess_close(v->sessions, "stopped");
	/* What was sent gets up to stop_ms to leave. */
	v->stop_deadline = mt_mono_ns() + (int64_t)v->o->stop_ms * 1000000;
	tv.tv_usec = 0;
	v->stop_timer = evtimer_new(v->base, on_stop_timer, v);
	evtimer_add(v->stop_timer, &tv);
}

/* Accepts refused at the descriptor limit: said as the mock's own. */
static void say_refused(void *arg, const char *text)
{
	struct srv *v = arg;

	mt_voice_warn(&v->o->voice, "%s", text);
}

void hsv_opts_default(struct hsv_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:8809";
	o->path = "/mcp";
	o->post_path = "/message";
	o->mode = HSV_STREAMABLE;
	o->session_ids = 1;
	o->max_body = 16u << 20;
	o->barrier_ms = 2;
	o->stop_ms = 1000;
	o->client_timeout_ms = 60000;
	o->name = "replay";
}

int hsv_run(const struct hsv_opts *o, const struct hsv_app *app, struct mt_err *err)
{
	struct srv v;
	char host[256];
	int port, rc = -1;
	sigset_t set;
	evutil_socket_t fd;
	struct hep_opts eo;
	struct hep_handler eh = {
		.request = on_request, .gone = on_gone, .writable = on_writable, .say = on_say};

	memset(&v, 0, sizeof(v));
	v.o = o;
	v.app = app;
	eh.ctx = &v;
	snprintf(v.post_path, sizeof(v.post_path), "%s", o->post_path ? o->post_path : "/message");
	if (mt_split_listen(o->listen, host, sizeof(host), &port)) {
		return mt_err_set(err, "bad --listen '%s': HOST:PORT", o->listen);
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	v.base = event_base_new();
	if (!v.base) {
		mt_err_set(err, "cannot set up the event loop");
		goto out;
	}
	fd = hln_listen(host, port, 0, NULL);
	if (fd < 0) {
		mt_err_set(err, "cannot listen on %s: %s", o->listen, strerror(errno));
		goto out;
	}
	v.pace = hln_pace_new(say_refused, &v);
	v.guard.loopback = hln_fd_loopback(fd);
	v.guard.allow = o->allow_hosts;
	v.guard.n_allow = o->n_allow_hosts;
	{
		int p = hln_fd_port(fd);
		char *line;
		if (p < 0)
			p = port;
		hep_opts_default(&eo);
		eo.max_body = o->max_body;
		eo.client_timeout_ms = o->client_timeout_ms;
		eo.guard = &v.guard;
		eo.who = "mock";
		eo.pace = v.pace;
		v.ep = hep_new(v.base, fd, &eo, &eh); /* (fd taken) */
		if (!v.ep) {
			mt_err_set(err, "cannot listen on %s: %s", o->listen, strerror(errno));
			goto out;
		}
		line = mt_asprintf(strchr(host, ':') ? "mcptap: %s on http://[%s]:%d%s\n"
						     : "mcptap: %s on http://%s:%d%s\n",
				   o->name, host, p, o->path);
		mt_voice_say(&o->voice, line);
		free(line);
		/* (The other transport too, and the usual paths.) */
		for (int k = 0; k < 2 && o->mode != HSV_STATELESS; k++) {
			const char *x = k ? o->also_legacy : o->also_streamable;
			if (!x)
				continue;
			line = mt_asprintf(strchr(host, ':') ? "mcptap: %s also on http://[%s]:%d%s (%s)\n"
							     : "mcptap: %s also on http://%s:%d%s (%s)\n",
					   o->name, host, p, x,
					   k ? "the legacy HTTP+SSE transport" : "Streamable HTTP");
			mt_voice_say(&o->voice, line);
			free(line);
		}
	}
	v.sig_int = evsignal_new(v.base, SIGINT, on_signal, &v);
	v.sig_term = evsignal_new(v.base, SIGTERM, on_signal, &v);
	evsignal_add(v.sig_int, NULL);
	evsignal_add(v.sig_term, NULL);
	event_base_dispatch(v.base);
	rc = 0;
out:
	while (v.sessions)
		sess_close(v.sessions, "stopped");
	hep_free(v.ep); /* (closes the connections: on_gone for replies under way) */
	if (v.sig_int)
		event_free(v.sig_int);
	if (v.sig_term)
		event_free(v.sig_term);
	if (v.stop_timer)
		event_free(v.stop_timer);
	if (v.base)
		event_base_free(v.base);
	hln_pace_free(v.pace);
	return rc;
}
