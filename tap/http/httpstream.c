/*
 * httpstream.c - HTTP/1.1 on captured TCP streams (see httpstream.h).
 *
 * Each connection has two halves, one per direction (indexed as the
 * reassembler names them: HX_C2S, HX_S2C). A half is in one of five modes:
 * FIRST (nothing read yet), PARSE (http_parser reads it), SCAN (looking for
 * the line that opens a message: after a gap, an error, or from the middle
 * of a connection), CHUNK (after a gap in a chunked body: looking for the
 * next chunk's size line, the bytes before it the cut chunk's data), DEAD
 * (not HTTP: its bytes are only counted). A chunked body found again is
 * parsed on by a parser put in its state by a made-up head (chunk_restart).
 *
 * Requests wait for their responses in a queue (pipelining); an entry is
 * made when a request's head is whole, so that a response that comes early
 * still finds it, and the request is said to the sink when its body is.
 * Stretches of the client's stream not read (a gap, a head cut) have their
 * entries among them, in stream order. Each entry knows where it begins and
 * ends in the client's stream (offsets: the bytes of its data and gap calls
 * counted), so that a response's ack (how much of that stream the server
 * had received) says which request it can answer (pair_response).
 *
 * http_parser is paused at each message's end (on_message_complete), so
 * that where a message ends is known to the byte.
 */
#include "tap/http/httpstream.h"

#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/util.h"

/* Requests waiting for their responses on one connection, at most. */
#define PENDING_MAX 4096
/* The largest chunk whose size line, first after a gap, waits for its data to bear it out. */
#define CHUNK_PEEK_MAX (64 * 1024)
/* A request body's buffer kept for the next request (a bigger one is freed when it is said). */
#define BODY_KEEP (64 * 1024)

enum mode { M_FIRST, M_PARSE, M_SCAN, M_CHUNK, M_DEAD };

/* What a connection carries. */
enum klass { K_NEW, K_HTTP, K_TLS, K_H2, K_OTHER };

/* What a line opens. */
enum start { S_NONE, S_REQUEST, S_RESPONSE };

/* What an entry of the queue stands for. */
enum entry {
	E_REQ,  /* a request (said, or its body still being read) */
	E_LOST, /* a stretch of the client's stream not read that holds a
		 * request's start (a gap between requests, a head cut) */
	E_REST, /* one that may hold only the rest of a request (the
		 * stream's start lost, bytes lost while resynchronising) */
};

/* A request waiting for its response, or a stretch of the client's stream not read. */
struct pending {
	struct pending *next;
	enum entry kind;
	void *x;             /* the sink's exchange; NULL until said, or lost */
	int said;            /* said to the sink */
	int head, connect;   /* a HEAD, a CONNECT */
	uint64_t start, end; /* where it lies in the client's stream; end UINT64_MAX
			      * until known (a body being read, a stretch not closed) */
};

struct hx_stream;

struct half {
	struct hx_stream *conn;
	http_parser p;
	enum mode mode;
	int in_msg;    /* a message has begun and not ended */
	int head_done; /* its head is whole */
	int in_body;   /* its body is being read */
	int chunked;
	uint64_t body_left;  /* a Content-Length body: bytes to come (UINT64_MAX: none) */
	uint64_t chunk_left; /* a chunked body: bytes of the chunk's data to come */
	int eof_body;        /* a body read to the connection's close */
	int filling;         /* a gap is being skipped: the body bytes are filler */
	/* The head being read. */
	struct mt_buf url;
	struct mt_buf text; /* "name\0value\0"... */
	size_t *off;        /* name and value offsets in text */
	size_t nf, capf;
	int in_value; /* the last callback was a value's */
	struct mt_hdr *hv;
	size_t caphv;
	/* A request's body. */
	struct mt_buf body;
	uint64_t body_lost, body_cut;
	struct pending *req; /* a request's entry in the queue */
	/* A response's exchange. */
	struct pending *cur; /* its request's entry (taken off the queue) */
	int interim;         /* a 1xx */
	int orphan;          /* no request for it: skipped */
	/* Scanning. */
	struct mt_buf carry;     /* a line that may open a message, until its end */
	uint64_t gap_pending;    /* bytes not captured since reading stopped (counted at resume) */
	uint64_t skipped;        /* bytes passed over meanwhile */
	uint64_t unsaid;         /* bytes not captured before the connection was known to carry
				  * HTTP: said when it is */
	uint64_t unsaid_n;       /* ... in so many gaps */
	uint64_t unsaid_seq;     /* (the first of them, in the connection's order) */
	int64_t us;              /* the time of the data being read */
	unsigned char first[16]; /* the first bytes, until the connection is classified */
	size_t nfirst;
	/* Where things are in this half's stream. */
	uint64_t fed;         /* bytes of its data and gap calls so far */
	uint64_t msg_start;   /* where the message being read (or the next) begins */
	struct pending *done; /* a request whose end the parser just reached */
	unsigned method;      /* a request's method (http_parser's, kept at its head) */
	int major, minor;     /* its HTTP version */
	int refused;          /* the sink refused the request's head (request_head) */
	/* A response's pairing. */
	uint64_t ack;     /* the data call's ack: the client's stream received */
	uint64_t msg_ack; /* ... when the response being read began */
	int gapped;       /* responses may have been lost since the last one */
	int first_lost;   /* bytes were lost before which side is the client was known */
	int read_one;     /* a message of it was read (begun) */
	int synth;        /* the parser reads a made-up head (chunk_restart): said to no one */
	/* Looking for a chunk's size line (M_CHUNK); the line so far is in carry. */
	int cs_first;     /* the line is the first after the gap (where it began is not known) */
	int cs_crlf;      /* the last line's CRLF is held back (framing, if a size line follows) */
	int cs_long;      /* the line is too long to be a size line: data to its end */
	int cs_peek;      /* the first line is a size line if what follows bears it
			   * out: it and what follows wait in carry */
	size_t cs_line;   /* ... the line's length */
	size_t cs_need;   /* ... the bytes carry must hold to tell */
	size_t cs_ls;     /* ... where the last line begun after it begins in carry */
	uint64_t cs_size; /* ... its size */
};

struct hx_stream {
	struct hx_reader *r;
	const struct hx_conn_id *c; /* the reassembler's, for this call */
	enum klass klass;
	int decided;   /* which side is the client is known */
	int midstream; /* the start of its streams was not captured */
	void *sink_conn;
	struct half h[2];
	struct pending *q, *q_tail;
	size_t nq;
	uint64_t c2s_at_gap; /* the client's stream read when the server's last lost bytes */
	uint64_t ngaps;      /* gaps so far (the order of those not said yet) */
	uint64_t bytes;      /* all its bytes (for the counts of what is not HTTP) */
	int counted_tls;
	int switched;     /* the protocol was switched (101, CONNECT) */
	int connect_wait; /* the client asked for a tunnel (CONNECT): its stream waits
			   * for the answer */
	size_t counted;   /* what it holds, as last counted in hx_opts.mem (conn_bytes) */
};

struct hx_reader {
	struct hx_opts o;
	struct hx_sink s;
	struct hx_stats st;
};

static const char filler[4096];

/* ---- what a connection holds ---- */

/*
 * What c holds now, as allocated: itself, the requests waiting (and the
 * entries a response or a request being read took off the queue), each
 * half's head buffers, body and scanning text. A few fields are read,
 * nothing is walked: it is recounted after each call of the reassembler.
 */
static size_t conn_bytes(const struct hx_stream *c)
{
	size_t n = sizeof(*c) + MT_MEM_CHUNK;
	size_t np = c->nq + (c->h[0].cur != NULL) + (c->h[1].cur != NULL);

	n += np * (sizeof(struct pending) + MT_MEM_CHUNK);
	for (int i = 0; i < 2; i++) {
		const struct half *h = &c->h[i];
		n += mt_buf_bytes(&h->url) + mt_buf_bytes(&h->text) + mt_buf_bytes(&h->body) +
		     mt_buf_bytes(&h->carry);
		if (h->capf)
			n += 2 * h->capf * sizeof(*h->off) + MT_MEM_CHUNK;
		if (h->caphv)
			n += h->caphv * sizeof(*h->hv) + MT_MEM_CHUNK;
	}
	return n;
}

/* What c holds is counted again: the difference goes to the budget's counter. */
static void recount(struct hx_stream *c)
{
	size_t now = conn_bytes(c);

	if (now > c->counted)
		mt_mem_add(c->r->o.mem, now - c->counted);
	else
		mt_mem_sub(c->r->o.mem, c->counted - now);
	c->counted = now;
}

/* ---- small things ---- */

static int is_tchar_upper(char c)
{
	return (c >= 'A' && c <= 'Z') || c == '-';
}

/*
 * What a whole line (n bytes, its LF included) opens: a request line
 * "METHOD SP target SP HTTP/1.x", or a status line "HTTP/1.x SP ddd ...".
 */
static enum start start_line(const char *p, size_t n)
{
	size_t i = 0;

	if (n && p[n - 1] == '\n')
		n--;
	if (n && p[n - 1] == '\r')
		n--;
	if (n >= 12 && !memcmp(p, "HTTP/1.", 7) && (p[7] == '0' || p[7] == '1') && p[8] == ' ' &&
	    p[9] >= '1' && p[9] <= '5' && p[10] >= '0' && p[10] <= '9' && p[11] >= '0' && p[11] <= '9' &&
	    (n == 12 || p[12] == ' '))
		return S_RESPONSE;
	while (i < n && i < 16 && is_tchar_upper(p[i]))
		i++;
	if (i < 3 || i >= n || p[i] != ' ')
		return S_NONE;
	/* ... SP target SP HTTP/1.x */
	if (n < i + 1 + 1 + 9 || memcmp(p + n - 9, " HTTP/1.", 8) || (p[n - 1] != '0' && p[n - 1] != '1'))
		return S_NONE;
	for (size_t j = i + 1; j < n - 9; j++)
		if (p[j] == ' ' || (unsigned char)p[j] < 0x21)
			return S_NONE;
	return S_REQUEST;
}

/* A TLS record header: handshake, alert, change cipher spec or data, version 3.x. */
static int tls_record(const unsigned char *p, size_t n)
{
	return n >= 3 && p[0] >= 0x14 && p[0] <= 0x17 && p[1] == 3 && p[2] <= 4;
}

static const char h2_preface[] = "PRI * HTTP/2.0\r\n";

static enum hx_dir dir_of(const struct half *h)
{
	return h == &h->conn->h[HX_C2S] ? HX_C2S : HX_S2C;
}

/*
 * n bytes of h's stream not captured, outside any exchange's body (what
 * says more, or NULL): said to the connection now, or when it is known to
 * carry HTTP.
 */
static void say_gap(struct half *h, uint64_t n, const char *what)
{
	struct hx_stream *c = h->conn;
	struct hx_reader *r = c->r;
	char why[200];

	if (!n)
		return;
	if (c->klass != K_HTTP) {
		if (!h->unsaid)
			h->unsaid_seq = c->ngaps;
		c->ngaps++;
		h->unsaid += n;
		h->unsaid_n++;
		return;
	}
	snprintf(why, sizeof(why), "%llu bytes of the %s's stream were not captured%s%s",
		 (unsigned long long)n, dir_of(h) == HX_C2S ? "client" : "server", what ? ": " : "",
		 what ? what : "");
	if (r->s.conn_gap)
		r->s.conn_gap(r->s.ctx, c->sink_conn, dir_of(h), n, why, h->us);
}

/* ---- the queue ---- */

static struct pending *queue_push(struct hx_stream *c)
{
	struct pending *e = mt_calloc(1, sizeof(*e));

	e->end = UINT64_MAX;
	if (c->q_tail)
		c->q_tail->next = e;
	else
		c->q = e;
	c->q_tail = e;
	c->nq++;
	return e;
}

static struct pending *queue_pop(struct hx_stream *c)
{
	struct pending *e = c->q;

	if (!e)
		return NULL;
	c->q = e->next;
	if (!c->q)
		c->q_tail = NULL;
	c->nq--;
	e->next = NULL;
	return e;
}

static void pending_free(struct hx_stream *c, struct pending *e);
static void parser_start(struct half *h);

/* Entry e taken off the queue, wherever it is, and freed. */
static void queue_drop(struct hx_stream *c, struct pending *e)
{
	struct pending *prev = NULL;

	for (struct pending *p = c->q; p; prev = p, p = p->next)
		if (p == e) {
			if (prev)
				prev->next = e->next;
			else
				c->q = e->next;
			if (c->q_tail == e)
				c->q_tail = prev;
			c->nq--;
			e->next = NULL;
			break;
		}
	pending_free(c, e);
}

/*
 * Free entry e, taken off the queue: a request still being read for it (its
 * body not whole) is read no more as its, and counted as lost.
 */
static void pending_free(struct hx_stream *c, struct pending *e)
{
	struct half *q = &c->h[HX_C2S];

	if (!e)
		return;
	if (q->req == e) {
		q->req = NULL;
		c->r->st.lost_requests++;
	}
	if (q->done == e)
		q->done = NULL;
	free(e);
}

/* ---- saying things to the sink ---- */

static void sink_end(struct hx_stream *c, struct pending *e, const char *outcome, const char *error,
		     int64_t us)
{
	if (e->x && c->r->s.end)
		c->r->s.end(c->r->s.ctx, e->x, outcome, error, us);
	e->x = NULL;
}

/* Room for one more entry: a client that never hears back has its oldest given up on. */
static void queue_room(struct hx_stream *c, int64_t us)
{
	while (c->nq >= PENDING_MAX) {
		struct pending *old = queue_pop(c);
		if (old->x) {
			sink_end(c, old, "stopped", "too many requests waiting for their responses", us);
			c->r->st.unanswered++;
		}
		pending_free(c, old);
	}
}

/*
 * The client's stream is not read from start on (a gap, a head cut): a
 * stretch of kind k, unless the last entry is one still open (it grows).
 */
static void stretch_open(struct hx_stream *c, enum entry k, uint64_t start, int64_t us)
{
	struct pending *e = c->q_tail;

	if (e && e->kind != E_REQ && e->end == UINT64_MAX) {
		if (k == E_LOST)
			e->kind = E_LOST;
		return;
	}
	queue_room(c, us);
	e = queue_push(c);
	e->kind = k;
	e->start = start;
}

/* Reading the client's stream starts again at end: a stretch open ends there. */
static void stretch_close(struct hx_stream *c, uint64_t end)
{
	struct pending *e = c->q_tail;

	if (e && e->kind != E_REQ && e->end == UINT64_MAX)
		e->end = end;
}

/* A request whose response was lost in a gap of the server's stream: it ends so. */
static void response_lost(struct hx_stream *c, struct pending *e, int64_t us)
{
	if (!e->x)
		return;
	c->r->st.lost_responses++;
	sink_end(c, e, "gap", "its response was not captured (a gap in the server's stream)", us);
}

/*
 * The entry a final response on half h answers, taken off the queue; NULL
 * when its request was not captured (the response is then skipped).
 *
 * In order when the response's ack is not known, or when no gap is about
 * (no response lost since the last one, the first entry a request): HTTP/1.1
 * answers in order, pipelined or not, and an early answer (before the
 * request's body was whole) is its request's. Otherwise by the ack, the
 * client's stream the server had received when it began the response: the
 * request it answers is the first one it had not received whole, if it had
 * begun to (an early answer, or a stretch not read: a request lost there),
 * else the last one it had received whole. Requests passed over end as "gap"
 * (their responses were in the server's lost bytes), unless none was lost:
 * then the first request waiting answers all the same (pipelining).
 * Stretches passed over are dropped; one answered stays (it may hold more).
 */
static struct pending *pair_response(struct hx_stream *c, struct half *h)
{
	struct hx_reader *r = c->r;
	uint64_t a = h->msg_ack, fed = c->h[HX_C2S].fed;
	int gapped = h->gapped;
	struct pending *e, *t, *prev = NULL;

	h->gapped = 0;
	if (r->s.request_head) {
		/* A live relay forwards a request once it is whole, and has no gaps:
		 * a response answers the first request said, in order; one that
		 * comes before any (an upstream answering what it was not asked)
		 * answers nothing. */
		e = c->q;
		if (e && e->kind == E_REQ && e->said)
			return queue_pop(c);
		r->st.orphans++;
		return NULL;
	}
	if (a != HX_ACK_UNKNOWN && a > fed)
		a = fed; /* (never: a caller gives no ack past what it delivered) */
	if (a == HX_ACK_UNKNOWN || (!gapped && c->q && c->q->kind == E_REQ)) {
		/* A stretch holding a request's start takes this response with it,
		 * unless the server's stream lost bytes too (it may have been there). */
		while ((e = c->q) != NULL) {
			enum entry k = e->kind;
			if (k == E_REQ)
				return queue_pop(c);
			pending_free(c, queue_pop(c));
			if (k == E_LOST && !gapped) {
				r->st.orphans++;
				r->st.unpaired++;
				return NULL;
			}
		}
		r->st.orphans++;
		return NULL;
	}
	for (e = c->q; e && e->end != UINT64_MAX && e->end <= a; e = e->next)
		prev = e;
	t = e && e->start < a ? e : prev;
	if (!gapped && t)
		for (e = c->q; e != t; e = e->next)
			if (e->kind == E_REQ) {
				t = e;
				break;
			}
	if (!t) {
		/* It answers what came before everything waiting: not captured. */
		r->st.orphans++;
		return NULL;
	}
	while (c->q != t) {
		e = queue_pop(c);
		if (e->kind == E_REQ)
			response_lost(c, e, h->us);
		pending_free(c, e);
	}
	if (t->kind == E_REQ)
		return queue_pop(c);
	r->st.orphans++;
	r->st.unpaired++;
	return NULL;
}

/* The head's fields as a list (their pointers made now that text is whole). */
static const struct mt_hdr *head_fields(struct half *h)
{
	if (h->nf > h->caphv) {
		h->caphv = h->nf;
		h->hv = mt_realloc(h->hv, h->caphv * sizeof(*h->hv));
	}
	for (size_t i = 0; i < h->nf; i++) {
		h->hv[i].name = h->text.data + h->off[2 * i];
		h->hv[i].value = h->text.data + h->off[2 * i + 1];
	}
	return h->hv;
}

/* Say the request of h (its entry e), with what its body has. */
static void say_request(struct hx_stream *c, struct half *h, struct pending *e)
{
	struct hx_request r;

	if (e->said || e->kind != E_REQ)
		return;
	memset(&r, 0, sizeof(r));
	r.method = http_method_str((enum http_method)h->method);
	r.target = h->url.data ? h->url.data : "/";
	r.h = head_fields(h);
	r.nh = h->nf;
	r.body = h->body.len ? h->body.data : NULL;
	r.body_len = h->body.len;
	r.body_lost = h->body_lost;
	r.body_cut = h->body_cut;
	r.major = h->major;
	r.minor = h->minor;
	r.start = e->start;
	r.end = e->end;
	if (h->body_cut)
		c->r->st.body_cut++;
	e->said = 1;
	e->x = c->r->s.request(c->r->s.ctx, c->sink_conn, &r, h->us);
	c->r->st.requests++;
	if (h->body.cap > BODY_KEEP)
		mt_buf_release(&h->body); /* (said: not kept for a connection gone idle) */
}

/* ---- http_parser's callbacks ---- */

static void head_reset(struct half *h)
{
	mt_buf_reset(&h->url);
	mt_buf_reset(&h->text);
	h->nf = 0;
	h->in_value = 0;
	if (h->body.cap > BODY_KEEP)
		mt_buf_release(&h->body);
	else
		mt_buf_reset(&h->body);
	h->body_lost = h->body_cut = 0;
	h->head_done = h->in_body = h->chunked = h->eof_body = 0;
	h->body_left = UINT64_MAX;
	h->chunk_left = 0;
	h->interim = h->orphan = 0;
}

static int on_message_begin(http_parser *p)
{
	struct half *h = p->data;

	if (h->synth)
		return 0;
	head_reset(h);
	h->in_msg = 1;
	h->read_one = 1;
	h->msg_ack = h->ack;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct half *h = p->data;

	if (h->synth)
		return 0;
	mt_buf_append(&h->url, at, n);
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
	struct half *h = p->data;

	if (h->synth)
		return 0;
	if (h->in_value || !h->nf) {
		/* A new field: the last one's value ends. */
		if (h->nf)
			mt_buf_putc(&h->text, '\0');
		if (h->nf == h->capf) {
			h->capf = h->capf ? h->capf * 2 : 16;
			h->off = mt_realloc(h->off, 2 * h->capf * sizeof(*h->off));
		}
		h->off[2 * h->nf] = h->text.len;
		h->off[2 * h->nf + 1] = h->text.len; /* (set at its value) */
		h->nf++;
		h->in_value = 0;
	}
	mt_buf_append(&h->text, at, n);
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	struct half *h = p->data;

	if (h->synth || !h->nf)
		return 0;
	if (!h->in_value) {
		mt_buf_putc(&h->text, '\0');
		h->off[2 * h->nf - 1] = h->text.len;
		h->in_value = 1;
	}
	mt_buf_append(&h->text, at, n);
	return 0;
}

/* The head is whole: its last value ended, its fields' text fixed. */
static void head_end(struct half *h)
{
	if (h->nf) {
		if (!h->in_value) {
			/* (a field without a value: an empty one) */
			mt_buf_putc(&h->text, '\0');
			h->off[2 * h->nf - 1] = h->text.len;
		}
		mt_buf_putc(&h->text, '\0');
	}
	mt_buf_putc(&h->url, '\0');
	h->url.len--;
	h->head_done = 1;
	h->method = h->p.method;
	h->major = h->p.http_major;
	h->minor = h->p.http_minor;
	h->chunked = !!(h->p.flags & F_CHUNKED);
	h->body_left = (h->p.flags & F_CONTENTLENGTH) && !h->chunked ? h->p.content_length : UINT64_MAX;
}

/* A request's head, whole, as the sink is told it. */
static void fill_head(struct half *h, struct hx_head *hd)
{
	memset(hd, 0, sizeof(*hd));
	hd->method = http_method_str((enum http_method)h->method);
	hd->target = h->url.data ? h->url.data : "/";
	hd->h = head_fields(h);
	hd->nh = h->nf;
	hd->major = h->major;
	hd->minor = h->minor;
	hd->start = h->msg_start;
	hd->chunked = h->chunked;
	hd->content_length = h->body_left;
}

static int on_request_head(struct half *h)
{
	struct hx_stream *c = h->conn;
	struct hx_reader *r = c->r;
	struct pending *e;

	if (r->s.request_head) {
		struct hx_head hd;
		fill_head(h, &hd);
		if (r->s.request_head(r->s.ctx, c->sink_conn, &hd, h->us)) {
			h->refused = 1;
			return -1; /* (parse stops: the half is dead) */
		}
	}
	queue_room(c, h->us);
	e = queue_push(c);
	e->kind = E_REQ;
	e->start = h->msg_start;
	e->head = h->p.method == HTTP_HEAD;
	e->connect = h->p.method == HTTP_CONNECT;
	h->req = e;
	return 0;
}

static int on_response_head(struct half *h)
{
	struct hx_stream *c = h->conn;
	int status = (int)h->p.status_code;
	struct pending *e;

	if (status >= 100 && status < 200 && status != 101) {
		h->interim = 1;
		c->r->st.interim++;
		return 1; /* (no body) */
	}
	c->r->st.responses++;
	e = pair_response(c, h);
	if (!e) {
		/* Its request was not captured (or was cut): the response is skipped. */
		h->orphan = 1;
		return status == 204 || status == 304 || status == 101 ? 1 : 0;
	}
	h->cur = e;
	if (!e->said) {
		/* An answer before the request's body was whole (an early answer, or the
		 * rest of the body waits behind a hole in the capture): the request is
		 * said as it is, what its body lacks counted as not captured. */
		struct half *q = &c->h[HX_C2S];
		if (q->req == e) {
			q->body_lost += q->body_left != UINT64_MAX && q->body_left ? q->body_left
					: q->chunked && q->chunk_left              ? q->chunk_left
										   : 1;
			say_request(c, q, e);
			q->req = NULL;
		}
	}
	if (e->x && c->r->s.response_head)
		c->r->s.response_head(c->r->s.ctx, e->x, status, head_fields(h), h->nf, h->us);
	if (e->connect && status >= 200 && status < 300)
		return 2; /* a tunnel: the rest is not HTTP */
	if (e->connect && c->connect_wait) {
		/* Refused: the client's stream is HTTP again, from its next request line. */
		c->connect_wait = 0;
		parser_start(&c->h[HX_C2S]);
		c->h[HX_C2S].mode = M_SCAN;
	}
	return e->head || status == 204 || status == 304 ? 1 : 0;
}

static int on_headers_complete(http_parser *p)
{
	struct half *h = p->data;
	int rc;

	if (h->synth)
		return 0; /* (a chunked body follows) */
	head_end(h);
	rc = p->type == HTTP_REQUEST ? on_request_head(h) : on_response_head(h);
	/* Where a gap may be skipped: a body of known length, or one read to the close. */
	h->eof_body = rc == 0 && p->type == HTTP_RESPONSE && !h->chunked && h->body_left == UINT64_MAX &&
		      !h->interim;
	h->in_body =
		rc == 0 && (h->chunked || h->eof_body || (h->body_left != UINT64_MAX && h->body_left > 0));
	return rc;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct half *h = p->data;
	struct hx_stream *c = h->conn;

	h->in_body = 1;
	if (h->body_left != UINT64_MAX)
		h->body_left -= n < h->body_left ? n : h->body_left;
	if (h->chunked)
		h->chunk_left -= n < h->chunk_left ? n : h->chunk_left;
	if (h->filling)
		return 0;
	if (p->type == HTTP_REQUEST) {
		size_t room = c->r->o.max_body > h->body.len ? c->r->o.max_body - h->body.len : 0;
		size_t k = n < room ? n : room;
		mt_buf_append(&h->body, at, k);
		h->body_cut += n - k;
		return 0;
	}
	if (h->cur && h->cur->x && c->r->s.response_body)
		c->r->s.response_body(c->r->s.ctx, h->cur->x, at, n, h->us);
	return 0;
}

static int on_chunk_header(http_parser *p)
{
	struct half *h = p->data;

	h->in_body = 1;
	h->chunk_left = p->content_length;
	return 0;
}

static int on_chunk_complete(http_parser *p)
{
	struct half *h = p->data;

	h->chunk_left = 0;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct half *h = p->data;
	struct hx_stream *c = h->conn;

	h->in_msg = 0;
	if (p->type == HTTP_REQUEST) {
		if (h->req) {
			/* (said by parse, which finds the parser paused where it ends) */
			h->done = h->req;
			h->req = NULL;
		}
	} else if (!h->interim && h->cur) {
		sink_end(c, h->cur, "complete", NULL, h->us);
		pending_free(c, h->cur);
		h->cur = NULL;
	}
	h->head_done = h->in_body = 0;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
	.on_chunk_header = on_chunk_header,
	.on_chunk_complete = on_chunk_complete,
};

/* ---- reading, losing the thread, finding it again ---- */

static void parser_start(struct half *h)
{
	http_parser_init(&h->p, dir_of(h) == HX_C2S ? HTTP_REQUEST : HTTP_RESPONSE);
	h->p.data = h;
	h->in_msg = 0;
	head_reset(h);
}

/*
 * A half that has read nothing yet, once the connection is known to carry
 * HTTP: parsed from its first byte, or, from the middle of a stream, read
 * from the first line that opens a message.
 */
static void half_begin(struct hx_stream *c, struct half *h)
{
	if (h->mode != M_FIRST)
		return;
	if (c->midstream) {
		h->mode = M_SCAN;
	} else {
		parser_start(h);
		h->mode = M_PARSE;
	}
}

/* The connection carries HTTP: the sink knows it from now on. */
static void conn_http(struct hx_stream *c, int64_t us)
{
	if (c->klass == K_HTTP)
		return;
	c->klass = K_HTTP;
	c->r->st.http++;
	if (c->r->s.conn_open)
		c->sink_conn = c->r->s.conn_open(c->r->s.ctx, c->c, us);
	/* What was lost before is said now, in the order it was. */
	for (int i = 0; i < 2; i++) {
		struct half *a = &c->h[HX_C2S], *b = &c->h[HX_S2C];
		struct half *h = !b->unsaid || (a->unsaid && a->unsaid_seq < b->unsaid_seq) ? a : b;
		uint64_t n = h->unsaid;
		if (!n)
			break;
		c->r->st.gaps += h->unsaid_n;
		c->r->st.gap_bytes += n;
		h->unsaid = h->unsaid_n = 0;
		say_gap(h, n, "before any message of it was read");
	}
}

/* The reassembler's client is the server: the halves change places. */
static void conn_swap(struct hx_stream *c)
{
	struct half t = c->h[HX_C2S];

	c->h[HX_C2S] = c->h[HX_S2C];
	c->h[HX_S2C] = t;
	c->h[HX_C2S].p.data = &c->h[HX_C2S];
	c->h[HX_S2C].p.data = &c->h[HX_S2C];
	if (c->r->s.swap)
		c->r->s.swap(c->r->s.ctx, c->c);
}

/*
 * Which side is the client is known: what was lost before it was (the
 * stream's start, bytes while looking for a start line) is placed. The
 * client's lost start holds a request's start; the server's, or a start not
 * seen (a connection from its middle), may hold responses.
 */
static void roles_known(struct hx_stream *c)
{
	struct half *q = &c->h[HX_C2S], *s = &c->h[HX_S2C];

	if (q->first_lost)
		stretch_open(c, E_LOST, 0, q->us);
	if (s->first_lost || c->midstream) {
		s->gapped = 1;
		c->c2s_at_gap = q->fed;
	}
}

/*
 * The message in progress on h is lost (a gap of n bytes, or an error): what
 * it was is ended as well as it can be, the gap said (to the exchange it
 * cut, or to the connection), and h looks for the next start.
 */
static void lose_thread(struct half *h, const char *why, uint64_t lost)
{
	struct hx_stream *c = h->conn;
	struct hx_reader *r = c->r;

	if (dir_of(h) == HX_C2S) {
		if (h->req && h->head_done) {
			/* Its head is known: it is said, with what its body had (after
			 * an error: stored as it is, invalid; the gap counted in it). */
			h->body_lost += lost;
			say_request(c, h, h->req);
			h->req = NULL;
			/* (What is passed over until the next request may hold more.) */
			if (lost)
				stretch_open(c, E_REST, h->fed, h->us);
		} else if (h->in_msg) {
			/* A head cut before it was whole: its response, if it comes, is
			 * not paired with the next request. */
			if (h->req)
				h->req->kind = E_LOST;
			else
				stretch_open(c, E_LOST, h->msg_start, h->us);
			h->req = NULL;
			r->st.lost_requests++;
			say_gap(h, lost, "a request cut in its head is lost");
		} else if (lost) {
			/* Bytes lost between requests: they begin one (or more). */
			stretch_open(c, E_LOST, h->fed, h->us);
			say_gap(h, lost, "a request (or more) is lost");
		}
	} else {
		if (h->cur) {
			if (lost && h->cur->x && r->s.response_gap)
				r->s.response_gap(r->s.ctx, h->cur->x, lost, h->us);
			sink_end(c, h->cur, "gap", why, h->us);
			pending_free(c, h->cur);
			h->cur = NULL;
		} else if (h->in_msg && !h->head_done) {
			/* A response head cut: the request it answered gets no response. */
			struct pending *e = pair_response(c, h);
			if (e && e->x) {
				if (lost && r->s.response_gap)
					r->s.response_gap(r->s.ctx, e->x, lost, h->us);
				lost = 0;
			}
			if (e) {
				sink_end(c, e, "gap", why, h->us);
				pending_free(c, e);
			}
			say_gap(h, lost, "a response cut in its head is lost");
		} else {
			say_gap(h, lost,
				h->in_msg ? "in a response not stored" : "a response (or more) is lost");
		}
		if (lost) {
			/* Bytes of the server's stream lost: responses may have been. */
			h->gapped = 1;
			c->c2s_at_gap = c->h[HX_C2S].fed;
		}
	}
	h->mode = M_SCAN;
	h->in_msg = 0;
	h->head_done = h->in_body = 0;
	h->filling = 0;
	mt_buf_reset(&h->carry);
}

/*
 * Parse n bytes of h, the first at offset off of its stream. Returns the
 * bytes consumed: up to a message's end (the caller parses the rest), or
 * all; on an error, h is scanning and the rest is the scanner's.
 */
static size_t parse(struct half *h, const char *p, size_t n, uint64_t off)
{
	struct hx_stream *c = h->conn;
	size_t k = http_parser_execute(&h->p, &settings, p, n);
	int ended = HTTP_PARSER_ERRNO(&h->p) == HPE_PAUSED;

	if (ended) {
		/* A message ended at off + k (on_message_complete paused the parser). */
		http_parser_pause(&h->p, 0);
		if (h->done) {
			struct pending *e = h->done;
			h->done = NULL;
			e->end = off + k;
			say_request(c, h, e);
		}
		h->msg_start = off + k;
	}
	if (h->p.upgrade && h->p.type == HTTP_REQUEST && h->p.method == HTTP_CONNECT) {
		/* A tunnel asked for: the client's next bytes are the tunnel's if the
		 * server agrees (2xx), else it goes on with HTTP. Its answer is read. */
		h->mode = M_DEAD;
		c->connect_wait = 1;
		return n;
	}
	if (h->p.upgrade && h->p.type == HTTP_REQUEST && h->p.method != HTTP_CONNECT) {
		/* A client asking to switch (Upgrade): HTTP goes on unless a 101 answers. */
		http_parser_init(&h->p, HTTP_REQUEST);
		return k;
	}
	if (h->p.upgrade) {
		/* A protocol switch (101, a CONNECT tunnel): what follows is not HTTP. */
		c->r->st.upgraded++;
		c->switched = 1;
		c->h[HX_C2S].mode = M_DEAD;
		c->h[HX_S2C].mode = M_DEAD;
		return n;
	}
	if (h->refused ||
	    (HTTP_PARSER_ERRNO(&h->p) != HPE_OK && dir_of(h) == HX_C2S && c->r->s.request_error)) {
		/* Refused by the sink, or not HTTP where a live relay reads: no more. */
		if (h->req) {
			/* (no response is paired with a request refused) */
			struct pending *e = h->req;
			h->req = NULL;
			queue_drop(c, e);
		}
		if (!h->refused) {
			struct hx_head hd;
			if (h->head_done)
				fill_head(h, &hd);
			c->r->st.parse_errors++;
			c->r->s.request_error(c->r->s.ctx, c->sink_conn, h->head_done ? &hd : NULL,
					      http_errno_description(HTTP_PARSER_ERRNO(&h->p)), h->us);
		}
		h->mode = M_DEAD;
		h->in_msg = 0;
		return n;
	}
	if (HTTP_PARSER_ERRNO(&h->p) != HPE_OK) {
		c->r->st.parse_errors++;
		lose_thread(h, http_errno_description(HTTP_PARSER_ERRNO(&h->p)), 0);
		h->gap_pending = 0;
		/* What follows is scanned; at least the byte refused is passed over. */
		return k ? k : 1;
	}
	return ended ? k : n;
}

/* Reading starts again on h at a start line, at offset off of its stream. */
static void resume(struct half *h, uint64_t off)
{
	struct hx_stream *c = h->conn;

	parser_start(h);
	h->mode = M_PARSE;
	h->msg_start = off;
	if (dir_of(h) == HX_C2S)
		stretch_close(c, off);
	if (h->gap_pending || h->skipped) {
		/* (The gaps were said as they came.) */
		c->r->st.resyncs++;
		c->r->st.skipped_bytes += h->skipped;
	}
	h->gap_pending = 0;
	h->skipped = 0;
}

/*
 * A start line of kind k was found on half *d: does it fit which side is
 * the client? The roles are decided by the first one (the halves swapped
 * when the reassembler guessed wrong: *d is then the other index).
 */
static int start_fits(struct hx_stream *c, enum hx_dir *d, enum start k)
{
	if (k == S_NONE)
		return 0;
	if (!c->decided) {
		c->decided = 1;
		if ((k == S_REQUEST) != (*d == HX_C2S)) {
			conn_swap(c);
			*d = *d == HX_C2S ? HX_S2C : HX_C2S;
		}
		roles_known(c);
		conn_http(c, c->h[*d].us);
		/* The other half, when it has read nothing yet, starts at its first byte. */
		half_begin(c, &c->h[*d == HX_C2S ? HX_S2C : HX_C2S]);
		return 1;
	}
	return (k == S_REQUEST) == (*d == HX_C2S);
}

/* The methods a request line found while resynchronising may have. */
static const char *const methods[] = {"GET",     "POST",  "DELETE",  "PUT",  "HEAD",
				      "OPTIONS", "PATCH", "CONNECT", "TRACE"};

/*
 * Where a message opens in the line L (n bytes, its LF included; at most
 * its last HX_SCAN_MAX bytes): a status line from an "HTTP/1." to the end,
 * or a request line that ends the line (what comes before its method is the
 * end of a body that had no line end). Of the kind want (S_NONE: either).
 * Returns the offset of its first byte with *kind set, or -1.
 */
static ssize_t find_start(const char *L, size_t n, enum start want, enum start *kind)
{
	ssize_t req = -1, resp = -1;
	size_t m = n;

	if (want != S_REQUEST) {
		const char *at = L, *end = L + n;
		while ((at = memmem(at, (size_t)(end - at), "HTTP/1.", 7)) != NULL) {
			if (start_line(at, (size_t)(end - at)) == S_RESPONSE) {
				resp = at - L;
				break;
			}
			at++;
		}
	}
	if (m && L[m - 1] == '\n')
		m--;
	if (m && L[m - 1] == '\r')
		m--;
	if (want != S_RESPONSE && m >= 9 && !memcmp(L + m - 9, " HTTP/1.", 8) &&
	    (L[m - 1] == '0' || L[m - 1] == '1')) {
		/* ... SP target SP HTTP/1.x: back over the target, then the method. */
		size_t t = m - 9, ts = t;
		while (ts > 0 && (unsigned char)L[ts - 1] > 0x20 && (unsigned char)L[ts - 1] < 0x7f)
			ts--;
		if (ts < t && ts >= 2 && L[ts - 1] == ' ') {
			size_t me = ts - 1; /* the method ends here */
			for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
				size_t ml = strlen(methods[i]);
				if (me >= ml && !memcmp(L + me - ml, methods[i], ml)) {
					req = (ssize_t)(me - ml);
					break;
				}
			}
		}
	}
	if (req >= 0 && (resp < 0 || req < resp)) {
		*kind = S_REQUEST;
		return req;
	}
	if (resp >= 0) {
		*kind = S_RESPONSE;
		return resp;
	}
	return -1;
}

/* Keep the tail of the line being scanned (its last HX_SCAN_MAX bytes). */
static void carry_keep(struct half *h, const char *p, size_t n)
{
	if (n >= HX_SCAN_MAX) {
		h->skipped += h->carry.len + n - HX_SCAN_MAX;
		mt_buf_reset(&h->carry);
		mt_buf_append(&h->carry, p + n - HX_SCAN_MAX, HX_SCAN_MAX);
		return;
	}
	mt_buf_append(&h->carry, p, n);
	if (h->carry.len > HX_SCAN_MAX) {
		size_t drop = h->carry.len - HX_SCAN_MAX;
		memmove(h->carry.data, h->carry.data + drop, HX_SCAN_MAX);
		h->carry.len = HX_SCAN_MAX;
		h->skipped += drop;
	}
}

/*
 * Look for a message's start in n bytes of half *d (scanning), the first at
 * offset off of its stream, line by line. Returns the bytes consumed: all of
 * them, or those before a start (the half then parses from it).
 */
static size_t scan(struct hx_stream *c, enum hx_dir *d, const char *p, size_t n, uint64_t off)
{
	struct half *h = &c->h[*d];
	size_t used = 0;

	while (used < n) {
		const char *q = p + used, *L;
		size_t left = n - used, ln;
		const char *nl = memchr(q, '\n', left);
		size_t take = nl ? (size_t)(nl - q) + 1 : left;
		int carried = h->carry.len > 0;
		enum start want = !c->decided ? S_NONE : *d == HX_C2S ? S_REQUEST : S_RESPONSE;
		enum start k = S_NONE;
		ssize_t at;

		if (!nl) {
			carry_keep(h, q, take); /* (the line goes on in the next piece) */
			return n;
		}
		if (carried) {
			carry_keep(h, q, take);
			L = h->carry.data;
			ln = h->carry.len;
		} else {
			ln = take > HX_SCAN_MAX ? HX_SCAN_MAX : take;
			L = q + take - ln;
			h->skipped += take - ln;
		}
		at = find_start(L, ln, want, &k);
		if (at >= 0 && start_fits(c, d, k)) {
			h = &c->h[*d];
			h->skipped += (size_t)at;
			if (carried) {
				/* (The line ends with this piece's part of it.) */
				struct mt_buf line = h->carry;
				size_t ln2 = line.len - (size_t)at;
				uint64_t at_off = off + used + take - ln2;
				h->carry = (struct mt_buf)MT_BUF_INIT;
				resume(h, at_off);
				for (size_t k2 = 0; k2 < ln2 && h->mode == M_PARSE;)
					k2 += parse(h, line.data + at + k2, ln2 - k2, at_off + k2);
				mt_buf_release(&line);
				return used + take;
			}
			resume(h, off + used + (size_t)(L + at - q));
			return used + (size_t)(L + at - q);
		}
		h->skipped += ln;
		mt_buf_reset(&h->carry);
		used += take;
	}
	return used;
}

/* ---- a chunked body found again after a gap ---- */

/*
 * A gap of n bytes in a chunked body that does not end inside the chunk's
 * data: said to the exchange (or counted in the request's body), and the
 * next chunk's size line looked for.
 */
static void chunk_data(struct half *h, const char *p, size_t n, int line_end);

static void chunk_lost(struct hx_stream *c, struct half *h, uint64_t n, int64_t us)
{
	struct hx_reader *r = c->r;

	if (h->cs_peek) {
		/* (A line waiting to be borne out is not: its bytes are data.) */
		h->cs_peek = 0;
		chunk_data(h, h->carry.data, h->carry.len, 0);
		mt_buf_reset(&h->carry);
	}
	if (dir_of(h) == HX_S2C && h->cur && h->cur->x) {
		if (r->s.response_gap)
			r->s.response_gap(r->s.ctx, h->cur->x, n, us);
	} else if (dir_of(h) == HX_C2S && h->req) {
		h->body_lost += n;
	} else {
		say_gap(h, n, "in a body not stored");
	}
	h->gap_pending += n;
	h->skipped += h->carry.len; /* (a line cut by the gap) */
	mt_buf_reset(&h->carry);
	h->mode = M_CHUNK;
	h->cs_first = 1;
	h->cs_crlf = 0;
	h->cs_long = 0;
}

/* "hex [; ext]" CRLF: a chunk's size line (n bytes, its LF included), its size in *size. */
static int chunk_size_line(const char *L, size_t n, uint64_t *size)
{
	size_t i = 0;

	if (n < 3 || L[n - 1] != '\n' || L[n - 2] != '\r')
		return 0;
	n -= 2;
	*size = 0;
	for (; i < n && i < 16; i++) {
		int v = L[i] >= '0' && L[i] <= '9'   ? L[i] - '0'
			: L[i] >= 'a' && L[i] <= 'f' ? L[i] - 'a' + 10
			: L[i] >= 'A' && L[i] <= 'F' ? L[i] - 'A' + 10
						     : -1;
		if (v < 0)
			break;
		*size = *size << 4 | (uint64_t)v;
	}
	if (!i || (i < n && L[i] != ';'))
		return 0;
	for (; i < n; i++)
		if (L[i] == '\r' || L[i] == '\n')
			return 0;
	return 1;
}

/*
 * What the m bytes after a size line of size say of it: 1 they bear it out
 * (its data, then CRLF; for the last chunk, a CRLF or a trailer field), 0
 * they do not, -1 there are too few to tell.
 */
static int chunk_borne_out(uint64_t size, const char *a, size_t m)
{
	if (!size) {
		if (m < 2)
			return -1;
		return (a[0] == '\r' && a[1] == '\n') || is_tchar_upper((char)(a[0] & ~0x20)) ? 1 : 0;
	}
	if (m < 2 || size > m - 2)
		return -1;
	return a[size] == '\r' && a[size + 1] == '\n';
}

/*
 * Bytes of the cut chunk's data (up to the size line found next), said as
 * the body's; a line's CRLF (line_end) is held back: before a size line it
 * is framing.
 */
static void chunk_data(struct half *h, const char *p, size_t n, int line_end)
{
	if (h->cs_crlf) {
		h->cs_crlf = 0;
		on_body(&h->p, "\r\n", 2);
	}
	if (line_end && n >= 2 && p[n - 2] == '\r' && p[n - 1] == '\n') {
		n -= 2;
		h->cs_crlf = 1;
	}
	if (n)
		on_body(&h->p, p, n);
}

/* The parser put where a chunk's size line is read, in the same message. */
static void chunk_restart(struct half *h)
{
	static const char req[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	int is_req = dir_of(h) == HX_C2S;

	http_parser_init(&h->p, is_req ? HTTP_REQUEST : HTTP_RESPONSE);
	h->p.data = h;
	h->synth = 1;
	http_parser_execute(&h->p, &settings, is_req ? req : resp, (is_req ? sizeof(req) : sizeof(resp)) - 1);
	h->synth = 0;
	h->chunk_left = 0;
}

static void feed(struct hx_stream *c, enum hx_dir *d, const char *p, size_t n, uint64_t off);

/* A chunk's size line found in the cut body: it is read on from there. */
static void chunk_found(struct hx_stream *c, struct half *h)
{
	struct hx_reader *r = c->r;

	h->cs_crlf = h->cs_first = 0;
	chunk_restart(h);
	h->mode = M_PARSE;
	r->st.resyncs++;
	r->st.chunk_resyncs++;
	r->st.skipped_bytes += h->skipped;
	h->skipped = h->gap_pending = 0;
	if (dir_of(h) == HX_S2C && h->cur && h->cur->x && r->s.response_resync)
		r->s.response_resync(r->s.ctx, h->cur->x, h->us);
}

/*
 * Bytes for a line waiting to be borne out (cs_peek), from n at p whose end
 * is at offset end of the stream. Returns those taken: up to what tells,
 * then the line and what followed it are read as they turned out to be.
 */
static size_t chunk_peek(struct hx_stream *c, enum hx_dir *d, const char *p, size_t n, uint64_t end)
{
	struct half *h = &c->h[*d];
	size_t take = h->cs_need - h->carry.len < n ? h->cs_need - h->carry.len : n;
	enum start want = *d == HX_C2S ? S_REQUEST : S_RESPONSE;
	int refuted = 0;
	struct mt_buf held;
	const char *nl;
	uint64_t at;

	mt_buf_append(&h->carry, p, take);
	/* A start line after it: it was no size line (the body's end was lost). */
	while (!refuted && (nl = memchr(h->carry.data + h->cs_ls, '\n', h->carry.len - h->cs_ls)) != NULL) {
		size_t e = (size_t)(nl - h->carry.data) + 1;
		refuted = start_line(h->carry.data + h->cs_ls, e - h->cs_ls) == want;
		h->cs_ls = e;
	}
	if (!refuted && h->carry.len < h->cs_need)
		return take;
	held = h->carry;
	h->carry = (struct mt_buf)MT_BUF_INIT;
	h->cs_peek = 0;
	at = end - (n - take) - held.len; /* (where the line began) */
	if (!refuted && chunk_borne_out(h->cs_size, held.data + h->cs_line, held.len - h->cs_line) == 1) {
		chunk_found(c, h);
		feed(c, d, held.data, held.len, at);
	} else {
		/* Not a size line: data; what followed it is looked at again. */
		chunk_data(h, held.data, h->cs_line, 1);
		h->cs_first = 0;
		feed(c, d, held.data + h->cs_line, held.len - h->cs_line, at + h->cs_line);
	}
	mt_buf_release(&held);
	return take;
}

/*
 * Look for the next chunk's size line in n bytes of half *d (M_CHUNK), the
 * first at offset off of its stream, line by line. Returns the bytes
 * consumed: all of them, or those before where the half reads on (parsing
 * the chunk, or scanning from a start line: the body's end was lost).
 */
static size_t chunk_scan(struct hx_stream *c, enum hx_dir *d, const char *p, size_t n, uint64_t off)
{
	struct half *h = &c->h[*d];
	enum start want = *d == HX_C2S ? S_REQUEST : S_RESPONSE;
	size_t used = 0;

	while (used < n) {
		const char *q = p + used, *L;
		size_t left = n - used, ln, had = h->carry.len;
		const char *nl = memchr(q, '\n', left);
		size_t take = nl ? (size_t)(nl - q) + 1 : left;
		uint64_t size = 0;
		int borne;

		if (h->cs_peek) {
			used += chunk_peek(c, d, q, left, off + n);
			return used; /* (the half may read on in another mode) */
		}
		if (h->cs_long) {
			/* A line too long to be a size line: data to its end. */
			chunk_data(h, q, take, nl != NULL);
			if (nl)
				h->cs_long = h->cs_first = 0;
			used += take;
			continue;
		}
		if (!nl) {
			if (had + take <= HX_CHUNK_LINE_MAX) {
				mt_buf_append(&h->carry, q, take); /* (the line goes on) */
				return n;
			}
			chunk_data(h, h->carry.data, had, 0);
			mt_buf_reset(&h->carry);
			chunk_data(h, q, take, 0);
			h->cs_long = 1;
			return n;
		}
		if (had) {
			mt_buf_append(&h->carry, q, take);
			L = h->carry.data;
			ln = h->carry.len;
		} else {
			L = q;
			ln = take;
		}
		if (start_line(L, ln) == want) {
			/* A message begins: this one's end was lost. It ends as cut, and
			 * the line is scanned again (its start kept in carry). */
			struct mt_buf keep = h->carry;
			h->carry = (struct mt_buf)MT_BUF_INIT;
			lose_thread(h, "bytes not captured cut the chunked body: its end was not found", 0);
			if (*d == HX_S2C) {
				h->gapped = 1;
				c->c2s_at_gap = c->h[HX_C2S].fed;
			}
			h->cs_crlf = 0;
			keep.len = had;
			h->carry = keep;
			return used;
		}
		borne = chunk_size_line(L, ln, &size) ? chunk_borne_out(size, q + take, left - take) : 0;
		/* A size line after a CRLF, unless what follows says otherwise; the
		 * first line after the gap (what came before it is not known) only
		 * when what follows bears it out: it waits for that (a chunk of at
		 * most CHUNK_PEEK_MAX), whatever the segments. */
		if (!h->cs_crlf && h->cs_first && borne < 0 && size <= CHUNK_PEEK_MAX) {
			if (!had)
				mt_buf_append(&h->carry, q, take);
			h->cs_peek = 1;
			h->cs_line = h->cs_ls = h->carry.len;
			h->cs_size = size;
			h->cs_need = h->cs_line + size + 2;
			used += take;
			continue;
		}
		if (h->cs_crlf ? borne != 0 : h->cs_first && borne == 1) {
			/* The next chunk: the body goes on there (the CRLF before it was
			 * the cut chunk's end). */
			chunk_found(c, h);
			if (had) {
				struct mt_buf line = h->carry;
				uint64_t at = off + used + take - line.len;
				h->carry = (struct mt_buf)MT_BUF_INIT;
				for (size_t k = 0; k < line.len && h->mode == M_PARSE;)
					k += parse(h, line.data + k, line.len - k, at + k);
				mt_buf_release(&line);
				return used + take;
			}
			return used;
		}
		chunk_data(h, L, ln, 1);
		mt_buf_reset(&h->carry);
		h->cs_first = 0;
		used += take;
	}
	return used;
}

/* Not HTTP: the connection's halves only count what they carry from now on. */
static void conn_not_http(struct hx_stream *c, enum klass k)
{
	c->klass = k;
	c->h[HX_C2S].mode = M_DEAD;
	c->h[HX_S2C].mode = M_DEAD;
	if (k == K_TLS)
		c->r->st.tls++;
	else if (k == K_H2)
		c->r->st.h2++;
	else
		c->r->st.other++;
}

/*
 * The first bytes of a half (its stream's start): what the connection
 * carries. Returns 1 when they tell, 0 when more are needed (kept in first).
 */
static int classify(struct hx_stream *c, enum hx_dir *d, const char *p, size_t n)
{
	struct half *h = &c->h[*d];
	size_t take = sizeof(h->first) - h->nfirst < n ? sizeof(h->first) - h->nfirst : n;
	const unsigned char *f = h->first;
	size_t fn;

	memcpy(h->first + h->nfirst, p, take);
	h->nfirst += take;
	fn = h->nfirst;
	if (tls_record(f, fn)) {
		conn_not_http(c, K_TLS);
		return 1;
	}
	if (fn < 3)
		return 0;
	if (!memcmp(f, h2_preface, fn < 16 ? fn : 16)) {
		if (fn < 16)
			return 0;
		conn_not_http(c, K_H2);
		return 1;
	}
	/* "METHOD " or "HTTP/1.": a start line (checked whole by the parser). */
	size_t i = 0;
	while (i < fn && is_tchar_upper((char)f[i]))
		i++;
	int req = i >= 3 && i < fn && f[i] == ' ';
	int resp = fn >= 7 && !memcmp(f, "HTTP/1.", 7);
	if (!req && !resp) {
		if (i == fn && fn < sizeof(h->first))
			return 0; /* (letters so far) */
		if (c->midstream)
			return -1; /* (from the middle of a stream: scanned) */
		conn_not_http(c, K_OTHER);
		return 1;
	}
	c->decided = 1;
	if (req != (*d == HX_C2S)) {
		conn_swap(c);
		*d = *d == HX_C2S ? HX_S2C : HX_C2S;
	}
	roles_known(c);
	conn_http(c, c->h[*d].us);
	half_begin(c, h);
	half_begin(c, &c->h[*d == HX_C2S ? HX_S2C : HX_C2S]);
	return 1;
}

/*
 * Read n bytes of half *d by its mode, the first at offset off of its
 * stream (the halves may swap: *d follows).
 */
static void feed(struct hx_stream *c, enum hx_dir *d, const char *p, size_t n, uint64_t off)
{
	while (n) {
		struct half *h = &c->h[*d];
		size_t k;
		switch (h->mode) {
		case M_FIRST: {
			size_t had = h->nfirst;
			unsigned char kept[sizeof(h->first)];
			int rc = 1;
			memcpy(kept, h->first, had);
			if (c->klass == K_NEW)
				rc = classify(c, d, p, n);
			else if (c->klass != K_HTTP)
				return; /* (both halves are dead) */
			h = &c->h[*d];
			if (rc == 0)
				return; /* (all kept in first: more is needed) */
			h->nfirst = 0;
			if (rc < 0) {
				/* From the middle of a stream: where a message starts is looked for. */
				h->mode = M_SCAN;
			} else if (h->mode == M_FIRST) {
				parser_start(h);
				h->mode = M_PARSE;
			}
			/* The bytes kept to classify come first. */
			if (had)
				feed(c, d, (const char *)kept, had, off - had);
			continue;
		}
		case M_PARSE: k = parse(h, p, n, off); break;
		case M_SCAN: k = scan(c, d, p, n, off); break;
		case M_CHUNK: k = chunk_scan(c, d, p, n, off); break;
		case M_DEAD:
		default: return;
		}
		p += k;
		n -= k;
		off += k;
	}
}

/* n bytes of direction d, in order; ack: the data call's. */
static void push(struct hx_stream *c, enum hx_dir d, const char *p, size_t n, int64_t us, uint64_t ack)
{
	c->bytes += n;
	c->h[HX_C2S].us = c->h[HX_S2C].us = us;
	c->h[d].ack = ack;
	feed(c, &d, p, n, c->h[d].fed);
	c->h[d].fed += n;
}

/*
 * n bytes of h's stream, from offset h->fed on, were not captured: those of
 * them it accounts for (all, but for a Content-Length body: up to its end,
 * the rest following it).
 */
static uint64_t gap_at(struct hx_stream *c, struct half *h, uint64_t n, int64_t us)
{
	struct hx_reader *r = c->r;
	int client = dir_of(h) == HX_C2S;

	if (h->mode == M_FIRST) {
		/* The stream's start is lost: what it is is looked for. */
		c->midstream = 1;
		h->nfirst = 0;
		h->mode = M_SCAN;
		h->gap_pending += n;
		h->first_lost = 1;
		say_gap(h, n, NULL);
		return n;
	}
	if (h->mode == M_SCAN) {
		h->skipped += h->carry.len;
		mt_buf_reset(&h->carry);
		h->gap_pending += n;
		say_gap(h, n,
			h->read_one ? "while reading looked for the next message"
				    : "before any message of it was read");
		if (!c->decided) {
			h->first_lost = 1; /* (placed when the roles are known) */
		} else if (client) {
			stretch_open(c, E_REST, h->fed, us);
		} else {
			h->gapped = 1;
			c->c2s_at_gap = c->h[HX_C2S].fed;
		}
		return n;
	}
	if (h->mode == M_CHUNK) {
		chunk_lost(c, h, n, us);
		return n;
	}
	/* Parsing: a body whose framing says how long it is skips the gap. */
	if (h->in_body && !h->filling) {
		void *x = !client && h->cur ? h->cur->x : NULL;
		/* (A body no exchange takes: a response skipped, a request said early.) */
		int kept = client ? h->req != NULL : x != NULL;
		uint64_t k = n;
		if (h->eof_body) {
			/* Read to the close: nothing to skip, the bytes are just missing. */
			if (x && r->s.response_gap)
				r->s.response_gap(r->s.ctx, x, n, us);
			else
				say_gap(h, n, "in a body not stored");
			return n;
		}
		if (h->body_left != UINT64_MAX && h->body_left)
			k = n < h->body_left ? n : h->body_left; /* (the rest is past its end) */
		else if (!h->chunked || !h->chunk_left || n > h->chunk_left)
			k = 0;
		if (k) {
			uint64_t off = h->fed;
			if (x && r->s.response_gap)
				r->s.response_gap(r->s.ctx, x, k, us);
			if (client)
				h->body_lost += k;
			if (!kept)
				say_gap(h, k, "in a body not stored");
			h->filling = 1;
			for (uint64_t left = k; left && h->mode == M_PARSE;) {
				size_t m = left < sizeof(filler) ? (size_t)left : sizeof(filler);
				size_t used = parse(h, filler, m, off);
				left -= used;
				off += used;
			}
			h->filling = 0;
			/* The gap ended where a chunk's data does: the next one begins
			 * the body's bytes that follow. */
			if (h->chunked && !h->chunk_left && x && r->s.response_resync)
				r->s.response_resync(r->s.ctx, x, us);
			return k;
		}
		if (h->chunked) {
			/* Past the chunk's data, or in its framing: the next chunk is looked for. */
			chunk_lost(c, h, n, us);
			return n;
		}
	}
	/* Anywhere else the thread is lost. */
	h->gap_pending += n;
	{
		char why[160];
		snprintf(why, sizeof(why), "%llu bytes not captured: the rest of the %s is lost",
			 (unsigned long long)n, client ? "request" : "response");
		lose_thread(h, why, n);
	}
	return n;
}

/* n bytes of direction d were not captured. */
static void gap(struct hx_stream *c, enum hx_dir d, uint64_t n, int64_t us)
{
	struct half *h = &c->h[d];
	struct hx_reader *r = c->r;

	c->h[HX_C2S].us = c->h[HX_S2C].us = us;
	if (h->mode != M_DEAD && c->klass == K_HTTP) {
		r->st.gaps++;
		r->st.gap_bytes += n;
	}
	while (n && h->mode != M_DEAD) {
		uint64_t k = gap_at(c, h, n, us);
		h->fed += k;
		n -= k;
	}
	h->fed += n;
}

size_t hx_held(const struct hx_stream *c)
{
	return c ? conn_bytes(c) : 0;
}

int hx_in_message(const struct hx_stream *c, enum hx_dir d)
{
	return c && c->h[d].in_msg;
}

enum hx_reading hx_reading(const struct hx_stream *c, enum hx_dir d)
{
	if (!c || c->h[d].mode != M_DEAD)
		return HX_READING;
	return c->switched ? HX_SWITCHED : HX_NOT_HTTP;
}

/* ---- what the caller says ---- */

struct hx_stream *hx_open(struct hx_reader *r, const struct hx_conn_id *tc)
{
	struct hx_stream *c = mt_calloc(1, sizeof(*c));

	c->r = r;
	c->c = tc;
	c->midstream = !tc->saw_start;
	for (int k = 0; k < 2; k++) {
		c->h[k].conn = c;
		c->h[k].mode = M_FIRST;
		c->h[k].body_left = UINT64_MAX;
	}
	recount(c);
	return c;
}

void hx_data(struct hx_stream *c, const struct hx_conn_id *tc, enum hx_dir d, const uint8_t *p, size_t n,
	     int64_t us, uint64_t ack)
{
	if (!c)
		return;
	c->c = tc;
	push(c, d, (const char *)p, n, us, ack);
	recount(c);
}

void hx_gap(struct hx_stream *c, const struct hx_conn_id *tc, enum hx_dir d, uint64_t n, int64_t us)
{
	if (!c)
		return;
	c->c = tc;
	gap(c, d, n, us);
	recount(c);
}

/* What a TLS connection's server was: counted in the list of TLS servers. */
static void count_tls(struct hx_reader *r, const struct hx_conn_id *tc, uint64_t bytes)
{
	struct hx_stats *st = &r->st;

	st->tls_bytes += bytes;
	for (size_t i = 0; i < st->n_tls_servers; i++) {
		struct hx_tls_server *s = &st->tls_servers[i];
		if (s->server.family == tc->server.family && s->server.port == tc->server.port &&
		    !memcmp(s->server.addr, tc->server.addr, sizeof(s->server.addr))) {
			s->connections++;
			s->bytes += bytes;
			return;
		}
	}
	if (st->n_tls_servers < HX_TLS_SERVERS) {
		struct hx_tls_server *s = &st->tls_servers[st->n_tls_servers++];
		s->server = tc->server;
		s->connections = 1;
		s->bytes = bytes;
		return;
	}
	st->tls_servers_more++;
}

static void half_release(struct half *h)
{
	mt_buf_release(&h->url);
	mt_buf_release(&h->text);
	mt_buf_release(&h->body);
	mt_buf_release(&h->carry);
	free(h->off);
	free(h->hv);
	free(h->cur);
}

void hx_close(struct hx_stream *c, const struct hx_conn_id *tc, enum hx_end_how how, int64_t us)
{
	struct hx_reader *r;
	const char *outcome, *why, *unanswered = "no response";
	char why_none[200];

	if (!c)
		return;
	r = c->r;
	c->c = tc;
	c->h[HX_C2S].us = c->h[HX_S2C].us = us;
	/* "closed": the connection is over on the wire; "stopped": the capture,
	 * or a limit of the import, left it open. */
	switch (how) {
	case HX_FIN:
		outcome = "closed";
		why = "the connection closed";
		break;
	case HX_RST:
		outcome = "closed";
		why = "the connection was reset";
		break;
	case HX_IDLE:
		outcome = "stopped";
		why = "the connection was idle too long (--idle)";
		break;
	case HX_EVICTED:
		outcome = "stopped";
		why = "the connection was given up on to make room (--max-flows)";
		break;
	case HX_MEMORY:
		outcome = "stopped";
		why = "the connection was given up on to make room: the memory budget was reached "
		      "(--memory)";
		break;
	case HX_EOF:
		outcome = "stopped";
		why = "the capture ended";
		break;
	case HX_REUSED:
		outcome = "closed";
		why = "the connection was replaced by a new one on the same ports";
		break;
	default:
		/* (An end this reader does not know by name: over, though its close was not seen.) */
		outcome = "closed";
		why = "the connection ended without a close captured";
		break;
	}
	if (how == HX_IDLE || how == HX_EVICTED || how == HX_MEMORY) {
		/* A limit of the import: a request waiting for its answer says which. */
		snprintf(why_none, sizeof(why_none), "no response: %s", why);
		unanswered = why_none;
	}
	if (c->klass == K_HTTP) {
		struct half *q = &c->h[HX_C2S], *s = &c->h[HX_S2C];
		/* A body read to the close ends here, complete, only at a clean close:
		 * after a reset, at the capture's end or an eviction, more of it may
		 * have been sent. */
		if (how == HX_FIN && s->mode == M_PARSE && s->in_msg)
			http_parser_execute(&s->p, &settings, NULL, 0);
		if (s->cur) {
			sink_end(c, s->cur, outcome, why, us);
			pending_free(c, s->cur);
			s->cur = NULL;
		}
		if (q->req) {
			/* A request not whole when it closed: never said. */
			q->req = NULL;
			r->st.lost_requests++;
		}
		while (c->q) {
			struct pending *e = queue_pop(c);
			if (e->x && s->gapped && e->start < c->c2s_at_gap) {
				/* The server's stream lost bytes after it came: its response
				 * may have been there. */
				response_lost(c, e, us);
			} else if (e->x) {
				r->st.unanswered++;
				sink_end(c, e, outcome, unanswered, us);
			}
			free(e);
		}
		if (r->s.conn_close)
			r->s.conn_close(r->s.ctx, c->sink_conn, us);
	} else if (c->klass == K_TLS) {
		count_tls(r, tc, c->bytes);
	} else if (c->klass == K_H2) {
		r->st.h2_bytes += c->bytes;
	} else if (c->klass == K_OTHER) {
		r->st.other_bytes += c->bytes;
	} else if (c->bytes) {
		r->st.unsynced++;
		r->st.unsynced_bytes += c->bytes;
	}
	while (c->q) {
		struct pending *e = queue_pop(c);
		free(e);
	}
	half_release(&c->h[HX_C2S]);
	half_release(&c->h[HX_S2C]);
	mt_mem_sub(r->o.mem, c->counted);
	free(c);
}

void hx_opts_default(struct hx_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_body = 16u << 20;
}

struct hx_reader *hx_new(const struct hx_opts *o, const struct hx_sink *sink)
{
	struct hx_reader *r = mt_calloc(1, sizeof(*r));

	r->o = *o;
	r->s = *sink;
	return r;
}

void hx_stats(const struct hx_reader *r, struct hx_stats *out)
{
	*out = r->st;
}

void hx_free(struct hx_reader *r)
{
	free(r);
}
