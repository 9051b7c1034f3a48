/*
 * tests/bench/http-load.c - a cheap Streamable HTTP MCP load generator, for benchmarks.
 *
 * Usage: http-load [--call] ping N URL
 *        http-load [--call] flood N C URL
 *
 * URL is http://HOST:PORT/PATH (no TLS). Every connection is a keep-alive HTTP/1.1
 * connection of its own and an MCP session of its own: it POSTs initialize (id 0),
 * keeps the Mcp-Session-Id of the answer (when there is one) for what follows, POSTs
 * notifications/initialized, then requests, one at a time (no pipelining):
 *   ping   one connection, N sequential requests (ids 1..N), each round trip timed
 *          with CLOCK_MONOTONIC; prints "ping n=N p50_us=X p99_us=Y mean_us=Z"
 *   flood  C connections sharing N requests (ids 1..N) as fast as they are answered;
 *          prints "flood n=N conns=C secs=S req_per_s=R", S from the first connect to
 *          the last answer (handshakes included), R = N / S
 * The request is ping; with --call it is tools/call of a tool "echo" with no arguments
 * (for a proxy that answers ping itself instead of forwarding it).
 *
 * Every answer is checked: a request must get 200 with its own id and a result, as a
 * JSON body or in an SSE stream (events carrying a method are skipped; the first
 * other one must be the answer); the notification must get 202. Bodies are found by
 * Content-Length or chunked transfer coding; a response with neither has none.
 * Nothing is decoded: the scanner of jscan.h finds the top-level "id" and "result".
 *
 * Exit status: 0 on success; 1 on a wrong or missing answer, a closed connection, an
 * I/O error, or no progress for IDLE_SECS seconds; 2 on a usage error.
 */

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/jscan.h"

#define PROG "http-load"
#define MAX_CONNS 4096
#define MAX_N 100000000L
#define IN_START ((size_t)16 << 10) /* a connection's input buffer to start with */
#define IN_MAX ((size_t)16 << 20)   /* the largest response accepted */
#define MAX_SID 256                 /* the longest Mcp-Session-Id kept */
#define IDLE_SECS 30                /* give up after this long without progress */

#include "tests/bench/clock.h"

enum state {
	ST_INIT,  /* initialize sent */
	ST_NOTIF, /* notifications/initialized sent */
	ST_REQ,   /* a request sent */
	ST_DONE,  /* nothing left to send */
};

/* One keep-alive connection, one MCP session. */
struct conn {
	int fd; /* owned */
	enum state st;
	uint64_t id;       /* the id of the request in flight */
	uint64_t t0;       /* when it was sent */
	char sid[MAX_SID]; /* Mcp-Session-Id, or "" */
	char *in;          /* owned; received bytes are in[0..len) */
	size_t len, cap;
};

/* A response, as parsed. */
struct resp {
	int status;
	int sse;          /* Content-Type: text/event-stream */
	const char *body; /* borrowed: in the connection's buffer or in the scratch one */
	size_t body_len;
	const char *sid; /* Mcp-Session-Id, borrowed, or NULL */
	size_t sid_len;
};

/* What every connection shares. */
struct load {
	const char *host; /* borrowed, the URL's authority for Host */
	size_t host_len;
	const char *path; /* borrowed */
	int call;         /* send tools/call instead of ping */
	long n;           /* requests to send */
	long sent, done;  /* requests sent, answered */
	long finished;    /* connections with nothing left to send or wait for */
	uint64_t *rtt;    /* owned, n round trips (ping) or NULL */
	char *scratch;    /* owned, a decoded chunked body */
	size_t scratch_cap;
	char out[2048]; /* the request being built */
};

/* Writes all of buf to fd (a blocking socket). Returns 0, or -1 with errno set. */
static int write_all(int fd, const char *buf, size_t len)
{
	int rc = 0;
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -1;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	return rc;
}

/* Parses an id token that is a plain non-negative decimal. Returns 0 with *v, or -1. */
static int parse_id(const char *p, size_t len, uint64_t *v)
{
	int rc = -1;
	size_t i;
	uint64_t x = 0;

	if (len == 0 || len > 18)
		goto out;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			goto out;
		x = x * 10 + (uint64_t)(p[i] - '0');
	}
	*v = x;
	rc = 0;
out:
	return rc;
}

/* Sends the next POST of c: initialize, the notification or request c->id. Returns 0,
 * or -1 (reported). */
static int send_next(struct load *l, struct conn *c)
{
	char body[256];
	int blen, hlen;

	if (c->st == ST_INIT)
		blen = snprintf(body, sizeof body, "%s",
				"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
				"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
				"\"clientInfo\":{\"name\":\"mcptap-http-load\",\"version\":\"1.0.0\"}}}");
	else if (c->st == ST_NOTIF)
		blen = snprintf(body, sizeof body, "%s",
				"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	else if (l->call)
		blen = snprintf(body, sizeof body,
				"{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"tools/call\",\"params\":"
				"{\"name\":\"echo\",\"arguments\":{}}}",
				(unsigned long long)c->id);
	else
		blen = snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"ping\"}",
				(unsigned long long)c->id);
	hlen = snprintf(l->out, sizeof l->out,
			"POST %s HTTP/1.1\r\nHost: %.*s\r\nContent-Type: application/json\r\n"
			"Accept: application/json, text/event-stream\r\n%s%s%s%s"
			"Content-Length: %d\r\n\r\n%s",
			l->path, (int)l->host_len, l->host, c->sid[0] ? "Mcp-Session-Id: " : "", c->sid,
			c->sid[0] ? "\r\n" : "",
			c->st == ST_INIT ? "" : "MCP-Protocol-Version: 2025-06-18\r\n", blen, body);
	c->t0 = now_ns();
	if (write_all(c->fd, l->out, (size_t)hlen) != 0) {
		fprintf(stderr, "%s: cannot send: %s\n", PROG, strerror(errno));
		return -1;
	}
	return 0;
}

/* Returns the first occurrence of the n bytes of s in p[0..len), or NULL. */
static const char *find(const char *p, size_t len, const char *s, size_t n)
{
	return memmem(p, len, s, n);
}

/* Is the header line p[0..len) the header name (case-insensitive)? Sets *v, *vlen to
 * its value, trimmed. */
static int header_is(const char *p, size_t len, const char *name, const char **v, size_t *vlen)
{
	size_t n = strlen(name);

	if (len <= n || p[n] != ':' || strncasecmp(p, name, n) != 0)
		return 0;
	p += n + 1;
	len -= n + 1;
	while (len > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	*v = p;
	*vlen = len;
	return 1;
}

/* Makes room for n more bytes in the scratch buffer. Returns 0, or -1. */
static int scratch_room(struct load *l, size_t used, size_t n)
{
	char *nb;
	size_t ncap = l->scratch_cap ? l->scratch_cap : 4096;

	while (ncap - used < n)
		ncap *= 2;
	if (ncap != l->scratch_cap) {
		nb = realloc(l->scratch, ncap);
		if (nb == NULL)
			return -1;
		l->scratch = nb;
		l->scratch_cap = ncap;
	}
	return 0;
}

/* Parses the response at the start of c's input. Returns the bytes it takes with *r
 * filled, 0 when it is not complete yet, or -1 (reported) when it is malformed. */
static long parse_response(struct load *l, struct conn *c, struct resp *r)
{
	const char *p = c->in, *end = c->in + c->len, *he, *line, *nl, *v;
	size_t vlen, used = 0, sz;
	long cl = -1;
	int chunked = 0;
	char *e;

	memset(r, 0, sizeof *r);
	he = find(p, c->len, "\r\n\r\n", 4);
	if (he == NULL)
		return 0;
	if (he - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
		goto bad;
	r->status = (int)strtol(p + 9, NULL, 10);
	line = find(p, (size_t)(he - p), "\r\n", 2);
	while (line != NULL && line < he) {
		line += 2;
		nl = find(line, (size_t)(he + 2 - line), "\r\n", 2);
		if (nl == NULL)
			break;
		if (header_is(line, (size_t)(nl - line), "Content-Length", &v, &vlen))
			cl = strtol(v, NULL, 10);
		else if (header_is(line, (size_t)(nl - line), "Transfer-Encoding", &v, &vlen))
			chunked = find(v, vlen, "chunked", 7) != NULL;
		else if (header_is(line, (size_t)(nl - line), "Content-Type", &v, &vlen))
			r->sse = vlen >= 17 && strncasecmp(v, "text/event-stream", 17) == 0;
		else if (header_is(line, (size_t)(nl - line), "Mcp-Session-Id", &v, &vlen)) {
			r->sid = v;
			r->sid_len = vlen;
		}
		line = nl;
	}
	p = he + 4;
	if (chunked) {
		for (;;) {
			nl = find(p, (size_t)(end - p), "\r\n", 2);
			if (nl == NULL)
				return 0;
			errno = 0;
			sz = strtoul(p, &e, 16);
			if (errno != 0 || e == p || sz > IN_MAX)
				goto bad;
			p = nl + 2;
			if (sz == 0) {
				/* No trailers expected: the empty line ends it. */
				if (end - p < 2)
					return 0;
				if (p[0] != '\r' || p[1] != '\n')
					goto bad;
				p += 2;
				break;
			}
			if ((size_t)(end - p) < sz + 2)
				return 0;
			if (scratch_room(l, used, sz) != 0)
				goto oom;
			memcpy(l->scratch + used, p, sz);
			used += sz;
			p += sz + 2;
		}
		r->body = l->scratch;
		r->body_len = used;
	} else {
		if (cl < 0)
			cl = 0;
		if (end - p < cl)
			return 0;
		r->body = p;
		r->body_len = (size_t)cl;
		p += cl;
	}
	return p - c->in;
bad:
	fprintf(stderr, "%s: a malformed response: %.200s\n", PROG, c->in);
	return -1;
oom:
	fprintf(stderr, "%s: out of memory\n", PROG);
	return -1;
}

/* Finds the answer in a response's body: the JSON body, or the first SSE event whose
 * data carries no method. Returns 0 with *t filled, or -1. */
static int find_answer(const struct resp *r, struct top *t)
{
	const char *p = r->body, *end = r->body + r->body_len, *nl, *d;
	size_t n;

	if (!r->sse)
		return scan_top(p, r->body_len, t);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (n >= 5 && memcmp(p, "data:", 5) == 0) {
			d = p + 5;
			if (d < p + n && *d == ' ')
				d++;
			if (scan_top(d, (size_t)(p + n - d), t) == 0 && t->method == NULL)
				return 0;
		}
		p += n + 1;
	}
	return -1;
}

/* Checks the response r to what c sent and sends what comes next. Returns 0, or -1
 * (reported). */
static int on_response(struct load *l, struct conn *c, const struct resp *r)
{
	struct top t;
	uint64_t id;

	if (c->st == ST_NOTIF) {
		if (r->status != 202) {
			fprintf(stderr, "%s: the notification got status %d, not 202\n", PROG, r->status);
			return -1;
		}
		goto next;
	}
	if (r->status != 200) {
		fprintf(stderr, "%s: request %llu got status %d: %.200s\n", PROG, (unsigned long long)c->id,
			r->status, r->body_len ? r->body : "");
		return -1;
	}
	if (find_answer(r, &t) != 0 || t.id == NULL || !t.has_result || parse_id(t.id, t.id_len, &id) != 0 ||
	    id != c->id) {
		fprintf(stderr, "%s: request %llu got a wrong answer: %.*s\n", PROG,
			(unsigned long long)c->id, (int)(r->body_len < 200 ? r->body_len : 200), r->body);
		return -1;
	}
	if (c->st == ST_INIT) {
		if (r->sid != NULL) {
			if (r->sid_len >= MAX_SID) {
				fprintf(stderr, "%s: the Mcp-Session-Id is too long\n", PROG);
				return -1;
			}
			memcpy(c->sid, r->sid, r->sid_len);
			c->sid[r->sid_len] = '\0';
		}
		c->st = ST_NOTIF;
		return send_next(l, c);
	}
	if (l->rtt != NULL)
		l->rtt[id - 1] = now_ns() - c->t0;
	l->done++;
next:
	if (l->sent == l->n) {
		c->st = ST_DONE;
		l->finished++;
		return 0;
	}
	c->st = ST_REQ;
	c->id = (uint64_t)++l->sent;
	return send_next(l, c);
}

/* Reads what c has and handles every complete response. Returns 0, or -1 (reported). */
static int on_readable(struct load *l, struct conn *c)
{
	char *nb;
	ssize_t n;
	long used;
	struct resp r;

	if (c->cap - c->len < 4096) {
		if (c->cap * 2 > IN_MAX || (nb = realloc(c->in, c->cap * 2)) == NULL) {
			fprintf(stderr, "%s: a response is too large\n", PROG);
			return -1;
		}
		c->in = nb;
		c->cap *= 2;
	}
	n = recv(c->fd, c->in + c->len, c->cap - c->len - 1, 0);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0) {
		fprintf(stderr, "%s: the connection %s\n", PROG, n == 0 ? "was closed" : strerror(errno));
		return -1;
	}
	c->len += (size_t)n;
	c->in[c->len] = '\0';
	while ((used = parse_response(l, c, &r)) > 0) {
		if (c->st == ST_DONE) {
			fprintf(stderr, "%s: a response that nothing asked for\n", PROG);
			return -1;
		}
		if (on_response(l, c, &r) != 0)
			return -1;
		memmove(c->in, c->in + used, c->len - (size_t)used);
		c->len -= (size_t)used;
		c->in[c->len] = '\0';
	}
	return used < 0 ? -1 : 0;
}

/* Opens a connection to ai and sends its initialize. Returns 0, or -1 (reported). */
static int conn_open(struct load *l, struct conn *c, const struct addrinfo *ai, int ep)
{
	int one = 1;
	struct epoll_event ev;

	c->fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
	if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		fprintf(stderr, "%s: cannot connect: %s\n", PROG, strerror(errno));
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->cap = IN_START;
	c->in = malloc(c->cap);
	if (c->in == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return -1;
	}
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
		fprintf(stderr, "%s: epoll: %s\n", PROG, strerror(errno));
		return -1;
	}
	c->st = ST_INIT;
	return send_next(l, c);
}

/* Orders two uint64_t for qsort. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Returns the nearest-rank percentile p (0..100) of the n sorted values. */
static uint64_t percentile(const uint64_t *sorted, long n, double p)
{
	long rank = (long)((p / 100.0) * (double)n + 0.999999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Splits URL into l's host and path and resolves it into *res (owned by the caller).
 * Returns 0, or -1 (reported). */
static int parse_url(struct load *l, const char *url, char *hostbuf, size_t hostcap, struct addrinfo **res)
{
	const char *h, *slash, *colon;
	struct addrinfo hints;
	int err;

	if (strncmp(url, "http://", 7) != 0)
		goto bad;
	h = url + 7;
	slash = strchr(h, '/');
	l->path = slash != NULL ? slash : "/";
	l->host = h;
	l->host_len = slash != NULL ? (size_t)(slash - h) : strlen(h);
	colon = memchr(h, ':', l->host_len);
	if (colon == NULL || (size_t)(colon - h) >= hostcap)
		goto bad;
	memcpy(hostbuf, h, (size_t)(colon - h));
	hostbuf[colon - h] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	{
		char port[16];
		size_t plen = l->host_len - (size_t)(colon + 1 - h);

		if (plen == 0 || plen >= sizeof port)
			goto bad;
		memcpy(port, colon + 1, plen);
		port[plen] = '\0';
		err = getaddrinfo(hostbuf, port, &hints, res);
	}
	if (err != 0) {
		fprintf(stderr, "%s: cannot resolve '%s': %s\n", PROG, hostbuf, gai_strerror(err));
		return -1;
	}
	return 0;
bad:
	fprintf(stderr, "%s: not an http://HOST:PORT/PATH URL: '%s'\n", PROG, url);
	return -1;
}

/* Parses a count in 1..max. Returns 0 with *v, or -1. */
static int parse_count(const char *s, long max, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' || *v < 1 || *v > max ? -1 : 0;
}

int main(int argc, char **argv)
{
	int status = 2, ep = -1, flood, argi = 1, k, nev;
	long nconns = 1, i;
	uint64_t t0, t1, sum = 0;
	char hostbuf[256];
	const char *url;
	struct addrinfo *ai = NULL;
	struct conn *conns = NULL;
	struct epoll_event evs[64];
	struct load l;

	memset(&l, 0, sizeof l);
	if (argi < argc && strcmp(argv[argi], "--call") == 0) {
		l.call = 1;
		argi++;
	}
	if (argc - argi < 3)
		goto usage;
	flood = strcmp(argv[argi], "flood") == 0;
	if (!flood && strcmp(argv[argi], "ping") != 0)
		goto usage;
	if (argc - argi != (flood ? 4 : 3) || parse_count(argv[argi + 1], MAX_N, &l.n) != 0 ||
	    (flood && parse_count(argv[argi + 2], MAX_CONNS, &nconns) != 0))
		goto usage;
	url = argv[argi + (flood ? 3 : 2)];
	status = 1;
	signal(SIGALRM, on_alarm);
	alarm(IDLE_SECS);
	if (parse_url(&l, url, hostbuf, sizeof hostbuf, &ai) != 0)
		goto out;
	conns = calloc((size_t)nconns, sizeof *conns);
	if (!flood)
		l.rtt = malloc((size_t)l.n * sizeof *l.rtt);
	ep = epoll_create1(0);
	if (conns == NULL || (!flood && l.rtt == NULL) || ep < 0) {
		fprintf(stderr, "%s: cannot set up: %s\n", PROG, strerror(errno));
		goto out;
	}
	for (i = 0; i < nconns; i++)
		conns[i].fd = -1;
	t0 = now_ns();
	for (i = 0; i < nconns; i++)
		if (conn_open(&l, &conns[i], ai, ep) != 0)
			goto out;
	while (l.finished < nconns) {
		nev = epoll_wait(ep, evs, (int)(sizeof evs / sizeof evs[0]), -1);
		if (nev < 0 && errno == EINTR)
			continue;
		if (nev < 0) {
			fprintf(stderr, "%s: epoll: %s\n", PROG, strerror(errno));
			goto out;
		}
		for (k = 0; k < nev; k++)
			if (on_readable(&l, evs[k].data.ptr) != 0)
				goto out;
		if ((l.done & 1023) == 0)
			alarm(IDLE_SECS);
	}
	t1 = now_ns();
	alarm(0);
	if (flood) {
		printf("flood n=%ld conns=%ld secs=%.3f req_per_s=%.0f\n", l.n, nconns,
		       (double)(t1 - t0) / 1e9, (double)l.n / ((double)(t1 - t0) / 1e9));
	} else {
		for (i = 0; i < l.n; i++)
			sum += l.rtt[i];
		qsort(l.rtt, (size_t)l.n, sizeof *l.rtt, cmp_u64);
		printf("ping n=%ld p50_us=%.1f p99_us=%.1f mean_us=%.1f\n", l.n,
		       (double)percentile(l.rtt, l.n, 50) / 1000.0,
		       (double)percentile(l.rtt, l.n, 99) / 1000.0, (double)sum / (double)l.n / 1000.0);
	}
	status = 0;
	goto out;
usage:
	fprintf(stderr, "usage: %s [--call] ping N URL\n       %s [--call] flood N CONNS URL\n", PROG, PROG);
out:
	for (i = 0; conns != NULL && i < nconns; i++) {
		if (conns[i].fd >= 0)
			close(conns[i].fd);
		free(conns[i].in);
	}
	free(conns);
	free(l.rtt);
	free(l.scratch);
	if (ep >= 0)
		close(ep);
	if (ai != NULL)
		freeaddrinfo(ai);
	return status;
}
