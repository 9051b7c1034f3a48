/*
 * fuzz-httpstream.c - libFuzzer target for the HTTP/1.1 reader
 * (tap/http/httpstream.h), both directions of one connection fed through
 * hx_open, hx_data, hx_gap and hx_close as its two users feed it.
 *
 * The input: a byte of mode, a byte of options, then records. Mode bit 0
 * picks the live relay's way (tap/http/httptap.c: a sink with request_head
 * and request_error, bytes in order, no gaps, no acks, the start seen) or
 * pcap import's (no such callbacks: gaps, acks, a start seen or not); bits
 * 1-3 name a request head the sink refuses (the first, second, ...; 0
 * none); bit 4 the start seen (pcap). Options: bits 0-2 how the connection
 * ends, bits 3-4 max_body. A record is a byte (bit 0: the real client's
 * bytes, else the server's; bit 1: a gap, pcap only; bits 2-7 a length, 63
 * meaning two more bytes say it), for pcap data a byte of ack (0 unknown,
 * else how far short of all the other side sent), then the bytes.
 *
 * Checks, besides ASan and UBSan: the connection is opened once, before
 * anything is said of it, and nothing is said after it is closed; a swap
 * only before that; every exchange the sink made gets one end, before the
 * close returns, and a head at most once; body bytes (and a resync) come
 * only between its head and its end, a gap before its end; no interim
 * status (a 1xx but 101) is said. Each request said lies after the one
 * before (offsets strictly increasing), within the client's bytes fed so
 * far, and begins with its method. Live: no gap is ever said; each request
 * is said once its end is known, its head checked first at the same place,
 * and it begins where the one before ended (or at 0); a Content-Length body
 * is the stream's bytes before its end, cut at max_body; after a refusal or
 * a request_error (once) nothing more is said of the client's stream, and
 * the reader says it reads it no more. A direction no longer read is never
 * read again, and only the server's bytes switch the protocol (a 101, a
 * CONNECT's 2xx); once freed, nothing is counted against the memory budget.
 *
 * MCPTAP_FUZZ_TRACE=1 BIN ARTIFACT prints what was fed and said.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "schema/util.h"
#include "tap/http/httphdr.h"
#include "tap/http/httpstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum xstate { X_NONE, X_SAID, X_HEAD, X_ENDED };

struct run {
	int live;
	int refuse_at; /* the head refused (1, 2, ...; 0 none) */
	size_t max_body;
	struct hx_conn_id c;
	struct hx_end a;         /* the real client (the reassembler's first guess) */
	struct mt_buf stream[2]; /* each real side's bytes ([1]: the client's); gaps as NULs */
	void *state;
	int opened, closed, swapped;
	int heads;           /* request_head calls */
	int accepted;        /* ... that returned 0 */
	int error_heads;     /* request_error calls with a head */
	int head_pending;    /* a head accepted, its request not said yet */
	uint64_t head_start; /* ... where it began */
	char head_method[32];
	int head_chunked;
	uint64_t head_cl;
	size_t head_len; /* its bytes, when the tap would forward it (0: it would not) */
	int client_done; /* refused, or request_error: the client's stream is over */
	int errors;      /* request_error calls */
	int said;        /* requests said */
	uint64_t prev_start, prev_end;
	uint8_t *x; /* each exchange's enum xstate (owned) */
	size_t nx, capx;
	int dead[2]; /* hx_reading said a direction is no longer read */
	struct mt_mem mem;
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-httpstream: %s\n", what);
	abort();
}

/* With MCPTAP_FUZZ_TRACE set, what is fed and said goes to stderr (to read an artifact). */
static int tracing = -1;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
	va_list ap;

	if (tracing < 0)
		tracing = getenv("MCPTAP_FUZZ_TRACE") != NULL;
	if (!tracing)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Bytes as a C string's text (escaped), for the trace. */
static void trace_bytes(const char *what, const uint8_t *p, size_t n)
{
	struct mt_buf b = MT_BUF_INIT;

	if (tracing < 0)
		tracing = getenv("MCPTAP_FUZZ_TRACE") != NULL;
	if (!tracing)
		return;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\r')
			mt_buf_puts(&b, "\\r");
		else if (p[i] == '\n')
			mt_buf_puts(&b, "\\n");
		else if (p[i] == '\\' || p[i] == '"')
			mt_buf_printf(&b, "\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			mt_buf_printf(&b, "\\%03o", p[i]);
		else
			mt_buf_putc(&b, (char)p[i]);
	}
	trace("%s \"%s\"", what, b.data ? b.data : "");
	mt_buf_release(&b);
}

/* Which real side sends direction d now (1: the real client; a swap changes it). */
static int side_of(const struct run *r, enum hx_dir d)
{
	int a_is_client = r->c.client.port == r->a.port;

	return (d == HX_C2S) == a_is_client;
}

static enum hx_dir dir_of_side(const struct run *r, int side)
{
	int a_is_client = r->c.client.port == r->a.port;

	return side == a_is_client ? HX_C2S : HX_S2C;
}

/* The reader's client's stream (the real side it now takes for the client). */
static const struct mt_buf *client_stream(const struct run *r)
{
	return &r->stream[side_of(r, HX_C2S)];
}

static void alive(struct run *r, const void *conn)
{
	if (!r->opened)
		fail("a call for a connection not opened");
	if (r->closed)
		fail("a call after the connection's close");
	if (conn != r)
		fail("a connection handle the sink did not make");
}

static size_t exchange(struct run *r, void *x)
{
	size_t i = (size_t)(uintptr_t)x;

	if (!i || i > r->nx)
		fail("an exchange handle the sink did not make");
	return i - 1;
}

static void *s_open(void *ctx, const struct hx_conn_id *c, int64_t us)
{
	struct run *r = ctx;

	(void)c;
	(void)us;
	trace("  conn_open");
	if (r->opened)
		fail("conn_open twice");
	r->opened = 1;
	return r;
}

static void s_swap(void *ctx, const struct hx_conn_id *c)
{
	struct run *r = ctx;
	struct hx_end t = r->c.client;

	(void)c;
	trace("  swap");
	if (r->opened || r->swapped)
		fail("a swap after the connection was known, or twice");
	r->swapped = 1;
	r->c.client = r->c.server;
	r->c.server = t;
}

/* A byte a token may hold (RFC 9110 5.6.2). */
static int tchar(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int hexval(uint8_t c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/*
 * A line from p[*i] (n bytes in all) ended by CRLF, with no other CR or LF
 * nor a control byte but HTAB: 1 (*i past it, its length in *ln), 0 it is
 * not one, -1 it has not ended yet.
 */
static int crlf_line(const uint8_t *p, size_t n, size_t *i, size_t *ln)
{
	for (size_t k = *i; k < n; k++) {
		if (p[k] == '\r') {
			if (k + 1 >= n)
				return -1;
			if (p[k + 1] != '\n')
				return 0;
			*ln = k - *i;
			*i = k + 2;
			return 1;
		}
		if (p[k] == '\n' || (p[k] < 0x20 && p[k] != '\t') || p[k] == 0x7f)
			return 0;
	}
	return -1;
}

/*
 * A chunked body read strictly (RFC 9112 7.1) from p (n bytes): size lines
 * of hex digits and extensions ended by CRLF, each chunk's data followed by
 * CRLF, the last chunk, trailer fields (token, colon) and the blank line.
 * 1 with its length in *used and its data in body, 0 it is not one, -1 it
 * has not ended within n bytes.
 */
static int strict_chunked(const uint8_t *p, size_t n, size_t *used, struct mt_buf *body)
{
	size_t i = 0, ln, at;
	int rc;

	for (;;) {
		uint64_t size = 0;
		size_t digits = 0;
		at = i;
		if ((rc = crlf_line(p, n, &i, &ln)) != 1)
			return rc;
		while (digits < ln && hexval(p[at + digits]) >= 0) {
			if (size >> 56)
				return 0; /* (too big to be meant) */
			size = size << 4 | (uint64_t)hexval(p[at + digits]);
			digits++;
		}
		if (!digits ||
		    (digits < ln && p[at + digits] != ';' && p[at + digits] != ' ' && p[at + digits] != '\t'))
			return 0;
		if (!size)
			break;
		if (n - i < size + 2)
			return -1;
		mt_buf_append(body, p + i, (size_t)size);
		i += (size_t)size;
		if (p[i] != '\r' || p[i + 1] != '\n')
			return 0;
		i += 2;
	}
	for (;;) {
		at = i;
		if ((rc = crlf_line(p, n, &i, &ln)) != 1)
			return rc;
		if (!ln)
			break;
		size_t k = 0;
		while (k < ln && tchar(p[at + k]))
			k++;
		if (!k || k == ln || p[at + k] != ':')
			return 0;
	}
	*used = i;
	return 1;
}

static int s_request_head(void *ctx, void *conn, const struct hx_head *hd, int64_t us)
{
	struct run *r = ctx;

	(void)us;
	trace("  request_head %s %s HTTP/%d.%d at %llu, %zu fields, chunked %d, length %lld", hd->method,
	      hd->target, hd->major, hd->minor, (unsigned long long)hd->start, hd->nh, hd->chunked,
	      (long long)hd->content_length);
	alive(r, conn);
	if (!r->live)
		fail("request_head without one in the sink");
	if (r->client_done)
		fail("request_head after the client's stream was refused");
	if (r->head_pending)
		fail("request_head again before the request was said");
	if (hd->start != r->prev_end)
		fail("a head that does not begin where the last request ended");
	if (hd->start >= client_stream(r)->len)
		fail("a head beyond the client's bytes");
	if (!hd->method || !hd->target || (hd->nh && !hd->h))
		fail("a head without its method, target or fields");
	r->heads++;
	if (r->heads == r->refuse_at) {
		r->client_done = 1;
		return 1;
	}
	r->accepted++;
	r->head_pending = 1;
	r->head_start = hd->start;
	snprintf(r->head_method, sizeof(r->head_method), "%s", hd->method);
	/* (A CONNECT has no body whatever its fields say: a tunnel may follow.) */
	r->head_chunked = strcmp(hd->method, "CONNECT") ? hd->chunked : 0;
	r->head_cl = strcmp(hd->method, "CONNECT") ? hd->content_length : UINT64_MAX;
	{
		/* Would the tap forward it? (tap/http/httptap.c: sk_request_head) */
		const struct mt_buf *cs = client_stream(r);
		size_t len = 0;
		r->head_len = 0;
		if (!mt_head_problem(cs->data + hd->start, cs->len - hd->start, &len) && len &&
		    strcmp(hd->method, "CONNECT") &&
		    !mt_hdr_framing_problem(hd->h, hd->nh, hd->major == 1 && hd->minor >= 1))
			r->head_len = len;
	}
	return 0;
}

static void s_request_error(void *ctx, void *conn, const struct hx_head *hd, const char *why, int64_t us)
{
	struct run *r = ctx;

	(void)us;
	trace("  request_error %s: %s", hd ? hd->method : "(no head)", why ? why : "(null)");
	alive(r, conn);
	if (!r->live)
		fail("request_error without one in the sink");
	if (r->client_done)
		fail("request_error after the client's stream was refused");
	if (!why)
		fail("request_error without a reason");
	if (hd && (!r->head_pending || hd->start != r->head_start))
		fail("request_error with a head not the one accepted");
	if (!hd && r->head_pending)
		fail("request_error in a new head while the request accepted was never said");
	r->errors++;
	r->error_heads += hd != NULL;
	r->client_done = 1;
	r->head_pending = 0;
}

/* Bytes of s from offset at, after any CR and LF: the method, then a space. */
static int begins_with_method(const struct mt_buf *s, uint64_t at, const char *method)
{
	size_t m = strlen(method);

	while (at < s->len && (s->data[at] == '\r' || s->data[at] == '\n'))
		at++;
	return at + m < s->len && !memcmp(s->data + at, method, m) && s->data[at + m] == ' ';
}

/*
 * A request the tap would forward (its head sound): a strict reader frames
 * it the same, its end and its body (tap/http/httptap.c forwards it by its
 * offsets).
 */
static void check_forwarded(const struct run *r, const struct hx_request *q, const struct mt_buf *s)
{
	uint64_t want = q->start + r->head_len;
	struct mt_buf sb = MT_BUF_INIT;
	size_t used = 0;

	if (r->head_chunked && q->end >= want &&
	    mt_chunked_problem((const unsigned char *)s->data + want, (size_t)(q->end - want)))
		return; /* (the tap refuses it: sk_request reads its framing strictly) */
	if (r->head_chunked) {
		if (strict_chunked((const uint8_t *)s->data + want, s->len - (size_t)want, &used, &sb) != 1)
			fail("live: a chunked body forwarded that a strict reader refuses");
		want += used;
		if (sb.len != q->body_len + q->body_cut ||
		    (q->body_len && memcmp(sb.data, q->body, q->body_len)))
			fail("live: a chunked body not the one a strict reader reads");
	} else if (r->head_cl != UINT64_MAX) {
		want += r->head_cl;
	}
	mt_buf_release(&sb);
	if (q->end != want)
		fail("live: a request forwarded whose end a strict reader puts elsewhere");
}

/* Live: said whole, its head first, end to end with the one before, its body the stream's. */
static void check_live(struct run *r, const struct hx_request *q, const struct mt_buf *s)
{
	if (q->end == UINT64_MAX)
		fail("live: a request said before its end was known");
	if (!r->head_pending || q->start != r->head_start || strcmp(q->method, r->head_method))
		fail("live: a request not the one whose head was accepted");
	if (q->start != r->prev_end)
		fail("live: a request that does not begin where the one before ended");
	if (q->body_lost)
		fail("live: body bytes lost with no gap");
	if (!begins_with_method(s, q->start, q->method))
		fail("live: a request that does not begin with its method");
	if (!r->head_chunked && r->head_cl != UINT64_MAX) {
		uint64_t cl = r->head_cl;
		if (q->body_len + q->body_cut != cl || cl > q->end - q->start)
			fail("live: a Content-Length body of another length");
		if (q->body_len && memcmp(q->body, s->data + q->end - cl, q->body_len))
			fail("live: a Content-Length body not the stream's bytes");
	} else if (!r->head_chunked && (q->body_len || q->body_cut)) {
		fail("live: a body with neither Content-Length nor chunked");
	} else if (q->body_len + q->body_cut > q->end - q->start) {
		fail("live: a chunked body longer than the request");
	}
	if (r->head_len)
		check_forwarded(r, q, s);
	r->head_pending = 0;
	r->prev_end = q->end;
}

static void *s_request(void *ctx, void *conn, const struct hx_request *q, int64_t us)
{
	struct run *r = ctx;
	const struct mt_buf *s = client_stream(r);

	(void)us;
	trace("  request x%zu %s %s HTTP/%d.%d %llu..%lld, %zu fields, body %zu (lost %llu, "
	      "cut %llu)",
	      r->nx + 1, q->method, q->target, q->major, q->minor, (unsigned long long)q->start,
	      (long long)q->end, q->nh, q->body_len, (unsigned long long)q->body_lost,
	      (unsigned long long)q->body_cut);
	alive(r, conn);
	if (r->client_done)
		fail("a request said after the client's stream was refused");
	if (r->said && q->start <= r->prev_start)
		fail("a request that does not come after the one before");
	if (q->start >= s->len)
		fail("a request beginning beyond the client's bytes");
	if (q->end != UINT64_MAX && (q->end <= q->start || q->end > s->len))
		fail("a request's end before its start or beyond the client's bytes");
	if (q->body_len > r->max_body || (q->body_len && !q->body))
		fail("a request body above max_body, or without its bytes");
	if (!q->method || !q->target || (q->nh && !q->h))
		fail("a request without its method, target or fields");
	if (!r->live && q->body_lost == 0 && !begins_with_method(s, q->start, q->method))
		fail("a request that does not begin with its method");
	if (r->live)
		check_live(r, q, s);
	r->said++;
	r->prev_start = q->start;
	if (r->nx == r->capx) {
		r->capx = r->capx ? 2 * r->capx : 16;
		r->x = mt_realloc(r->x, r->capx);
	}
	r->x[r->nx++] = X_SAID;
	return (void *)(uintptr_t)r->nx;
}

static void s_response_head(void *ctx, void *x, int status, const struct mt_hdr *h, size_t nh, int64_t us)
{
	struct run *r = ctx;
	size_t i = exchange(r, x);

	(void)us;
	trace("  response_head x%zu %d, %zu fields", i + 1, status, nh);
	alive(r, r);
	if (r->x[i] != X_SAID)
		fail("a response head for an exchange that had one, or ended");
	/* (http_parser lets a status of one or two digits pass: not checked here) */
	if (status < 0 || status > 999 || (status >= 100 && status < 200 && status != 101))
		fail("a response head with an interim or impossible status");
	if (nh && !h)
		fail("a response head without its fields");
	r->x[i] = X_HEAD;
}

static void s_response_body(void *ctx, void *x, const char *p, size_t n, int64_t us)
{
	struct run *r = ctx;
	size_t i = exchange(r, x);

	(void)us;
	trace("  response_body x%zu %zu bytes", i + 1, n);
	alive(r, r);
	if (r->x[i] != X_HEAD)
		fail("response body bytes outside its head and its end");
	if (n && !p)
		fail("response body bytes without bytes");
}

static void s_response_gap(void *ctx, void *x, uint64_t n, int64_t us)
{
	struct run *r = ctx;
	size_t i = exchange(r, x);

	(void)us;
	trace("  response_gap x%zu %llu", i + 1, (unsigned long long)n);
	alive(r, r);
	if (r->live)
		fail("live: a response gap with no gap");
	if (r->x[i] != X_SAID && r->x[i] != X_HEAD)
		fail("a response gap for an exchange ended");
	if (!n)
		fail("an empty response gap");
}

static void s_response_resync(void *ctx, void *x, int64_t us)
{
	struct run *r = ctx;
	size_t i = exchange(r, x);

	(void)us;
	trace("  response_resync x%zu", i + 1);
	alive(r, r);
	if (r->live)
		fail("live: a response resync with no gap");
	if (r->x[i] != X_HEAD)
		fail("a response resync outside its head and its end");
}

static void s_end(void *ctx, void *x, const char *outcome, const char *error, int64_t us)
{
	struct run *r = ctx;
	size_t i = exchange(r, x);

	(void)us;
	trace("  end x%zu %s%s%s", i + 1, outcome, error ? ": " : "", error ? error : "");
	alive(r, r);
	if (r->x[i] != X_SAID && r->x[i] != X_HEAD)
		fail("an exchange ended twice");
	if (!outcome || (strcmp(outcome, "complete") && strcmp(outcome, "closed") && strcmp(outcome, "gap") &&
			 strcmp(outcome, "stopped")))
		fail("an end with an outcome not in the list");
	if (!strcmp(outcome, "complete") != !error)
		fail("an end complete with an error, or not complete without one");
	if (!strcmp(outcome, "complete") && r->x[i] != X_HEAD)
		fail("an exchange complete without its response's head");
	r->x[i] = X_ENDED;
}

static void s_conn_gap(void *ctx, void *conn, enum hx_dir d, uint64_t n, const char *why, int64_t us)
{
	struct run *r = ctx;

	(void)us;
	trace("  conn_gap %s %llu: %s", d == HX_C2S ? "c2s" : "s2c", (unsigned long long)n,
	      why ? why : "(null)");
	alive(r, conn);
	if (r->live)
		fail("live: a connection gap with no gap");
	if (!n || !why || (d != HX_C2S && d != HX_S2C))
		fail("a connection gap empty, without a reason or a direction");
}

static void s_conn_close(void *ctx, void *conn, int64_t us)
{
	struct run *r = ctx;

	(void)us;
	trace("  conn_close");
	alive(r, conn);
	for (size_t i = 0; i < r->nx; i++)
		if (r->x[i] != X_ENDED)
			fail("an exchange not ended at the connection's close");
	r->closed = 1;
}

/*
 * What the reader says of each direction after bytes of the real side
 * side: never read again once it is not; switched only by what the server
 * sent (a 101, a CONNECT's 2xx), never by the client's bytes alone.
 */
static void check_reading(struct run *r, int side)
{
	int was = r->dead[0] || r->dead[1];

	for (int d = 0; d < 2; d++) {
		enum hx_reading k = hx_reading(r->state, (enum hx_dir)d);
		int in = hx_in_message(r->state, (enum hx_dir)d);
		if (k != HX_READING && k != HX_NOT_HTTP && k != HX_SWITCHED)
			fail("hx_reading out of its values");
		if (in != 0 && in != 1)
			fail("hx_in_message not 0 or 1");
		/* (The client's stream waits for a CONNECT's answer: read again when
		 * it is a refusal.) */
		if (k == HX_READING && r->dead[d] == 2)
			fail("a direction read again after it was not");
		if (k != HX_READING)
			r->dead[d] = k == HX_NOT_HTTP && d == HX_C2S ? 1 : 2;
		else
			r->dead[d] = 0;
	}
	if (!was && hx_reading(r->state, HX_C2S) == HX_SWITCHED && side == side_of(r, HX_C2S))
		fail("the protocol switched by the client's bytes alone (before any answer)");
	if (r->live && r->client_done && hx_reading(r->state, HX_C2S) == HX_READING)
		fail("live: the client's stream still read after a refusal or an error");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t zeros[4096];
	static const enum hx_end_how hows[8] = {HX_FIN, HX_RST,    HX_IDLE,   HX_EVICTED,
						HX_EOF, HX_REUSED, HX_MEMORY, HX_FIN};
	static const size_t bodies[4] = {16u << 20, 0, 5, 100};
	struct run *r;
	struct hx_sink s;
	struct hx_opts o;
	struct hx_reader *rd;
	size_t i = 2;
	int64_t us = 1000;

	if (size < 2)
		return 0;
	r = mt_calloc(1, sizeof(*r));
	r->live = data[0] & 1;
	r->refuse_at = r->live ? (data[0] >> 1) & 7 : 0;
	r->max_body = bodies[(data[1] >> 3) & 3];
	memset(&s, 0, sizeof(s));
	s.ctx = r;
	s.conn_open = s_open;
	s.swap = s_swap;
	s.request = s_request;
	s.response_head = s_response_head;
	s.response_body = s_response_body;
	s.response_gap = s_response_gap;
	s.response_resync = s_response_resync;
	s.end = s_end;
	s.conn_gap = s_conn_gap;
	s.conn_close = s_conn_close;
	if (r->live) {
		s.request_head = s_request_head;
		s.request_error = s_request_error;
	}
	hx_opts_default(&o);
	o.max_body = r->max_body;
	o.mem = &r->mem;
	rd = hx_new(&o, &s);
	r->c.num = 1;
	r->c.client.family = r->c.server.family = AF_INET;
	r->c.client.port = 40000;
	r->c.server.port = 3001;
	r->c.saw_start = r->live || (data[0] & 16);
	r->c.first_us = us;
	r->a = r->c.client;
	trace("%s mode, max_body %zu, refusing head %d, start %sseen", r->live ? "live" : "pcap", r->max_body,
	      r->refuse_at, r->c.saw_start ? "" : "not ");
	r->state = hx_open(rd, &r->c);
	if (!r->state)
		fail("no state for a connection");

	while (i < size) {
		uint8_t h = data[i++];
		int side = h & 1, is_gap = !r->live && (h & 2);
		size_t n = h >> 2;
		uint64_t ack = HX_ACK_UNKNOWN;
		enum hx_dir d;

		if (n == 63) {
			if (i + 2 > size)
				break;
			n = (size_t)data[i] | (size_t)data[i + 1] << 8;
			i += 2;
		}
		us += 10;
		d = dir_of_side(r, side);
		if (is_gap) {
			if (!n)
				continue;
			for (size_t k = 0; k < n; k += sizeof(zeros))
				mt_buf_append(&r->stream[side], zeros,
					      n - k < sizeof(zeros) ? n - k : sizeof(zeros));
			trace("%s gap %zu (%s)", side ? "client" : "server", n, d == HX_C2S ? "c2s" : "s2c");
			hx_gap(r->state, &r->c, d, n, us);
			check_reading(r, side);
			continue;
		}
		if (!r->live) {
			if (i >= size)
				break;
			uint8_t a = data[i++];
			uint64_t other = r->stream[!side].len;
			if (a)
				ack = other > (uint64_t)(a - 1) ? other - (a - 1) : 0;
		}
		if (n > size - i)
			n = size - i;
		if (!n)
			continue;
		mt_buf_append(&r->stream[side], data + i, n);
		if (ack != HX_ACK_UNKNOWN)
			trace("(ack %llu)", (unsigned long long)ack);
		trace_bytes(side ? "client" : "server", data + i, n);
		hx_data(r->state, &r->c, d, data + i, n, us, ack);
		i += n;
		check_reading(r, side);
	}
	trace("close (how %d)", (int)hows[data[1] & 7]);
	hx_close(r->state, &r->c, hows[data[1] & 7], us + 10);
	if (r->opened && !r->closed)
		fail("a connection opened but never closed");
	for (size_t k = 0; k < r->nx; k++)
		if (r->x[k] != X_ENDED)
			fail("an exchange not ended when the connection closed");
	if (r->live && r->accepted != r->said + r->head_pending + r->error_heads)
		fail("live: a head accepted whose request was neither said, refused nor cut");
	if (r->errors > 1)
		fail("request_error more than once");
	if (r->mem.used)
		fail("memory still counted once the connection was closed");
	hx_free(rd);
	mt_buf_release(&r->stream[0]);
	mt_buf_release(&r->stream[1]);
	free(r->x);
	free(r);
	return 0;
}
