/*
 * httplog.c - what is stored of HTTP exchanges (see httplog.h).
 */
#include "tap/http/httplog.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "schema/map.h"
#include "schema/message.h"
#include "tap/http/httpsess.h"
#include "tap/http/sse.h"

struct hdec;

/* A capture session: one MCP session (under the log's mu). */
struct hsess {
	int64_t num;
	int h;                      /* its handle in the writer */
	int64_t seq;                /* the last seq given */
	int64_t t0;                 /* monotonic ns (the writer's scale) */
	int64_t last_ns, last_wall; /* its last record's time (end_at_last) */
	enum hs_kind kind;
	char *http_id;               /* Mcp-Session-Id, once known */
	char *endpoint;              /* legacy SSE: the endpoint's URI */
	struct mt_map seen;          /* SSE event ids seen: a second one is a replay */
	size_t seen_counted;         /* its bytes, as counted in opts.mem */
	struct hsess *iprev, *inext; /* in the log's idle list: ids seen, nothing open */
	int idle;                    /* ... it is in that list */
	int open;                    /* exchanges in flight */
	int ended;                   /* DELETE answered, or 404 for its id */
	int end_stored;              /* ... and its end stored, once nothing of it was open */
};

struct hl_log {
	struct hl_opts o;
	pthread_mutex_t mu;
	/* Under mu: */
	struct hs_tracker tr;
	struct hsess **sess; /* by number; [0] unused */
	size_t nsess, capsess;
	int64_t next_conn;
	struct hl_stats st;
	struct hsess *idle_head, *idle_tail; /* sessions holding event ids with nothing open,
					      * the one idle longest first */
};

struct hl_exch {
	struct hl_info info;
	struct hsess *sess;
	int64_t seq; /* the exchange's seq in its session */
	char method[16];
	char *req_session_id; /* the Mcp-Session-Id it carried */
	char *rpc_id;
	char *endpoint; /* (info.endpoint) */
	int is_delete, is_head;
	int initialize;
	int status;
	int head_in;
	int no_body;     /* the response's head says Content-Length: 0 */
	int first_event; /* no SSE event seen yet on this stream */
	int skip_block;  /* after a gap: SSE bytes dropped up to a blank line */
	int skip_nl;     /* ... the last byte dropped ended a line (LF, or a CR) */
	int skip_cr;     /* ... and it was a CR */
	int resync;      /* ... and the body goes on at a chunk's start: a line an event
			  * begins with there ends the skipping (hl_response_resync) */
	char rs[8];      /* ... its first bytes, until they tell */
	size_t nrs;
	struct mt_sse sse;
	int sse_init;
	struct mt_buf rbody; /* a JSON body, or the start of another kept on the exchange */
	struct mt_buf red;   /* a message redacted (opts.redact) */
	struct mt_buf hjson; /* headers as stored (opts.redact) */
	size_t rbody_total;
	uint64_t body_lost;  /* response bytes not captured */
	size_t str_bytes;    /* its strings' bytes, as allocated */
	size_t counted;      /* what it holds, as last counted in opts.mem (exch_bytes) */
	int sse_on, json_on; /* its body read as SSE, as JSON (info.is_sse, is_json, unless
			      * its coding is not decoded) */
	struct hdec *dec;    /* a gzip or deflate response body's decoder (owned), or NULL */
	int opaque;          /* a response body in a coding not decoded: kept as sent */
	char coding[48];     /* ... that coding, as its head named it */
	char note[320];      /* what the exchange's error says of its bodies' codings, or "" */
	/* For hl_opts.on_end: */
	char rpc[96];     /* what its request body carried, or "" */
	int64_t messages; /* its messages stored */
	int64_t t0;       /* its session's clock at the request */
	char *path;       /* the target without its query (owned) */
	int has_query;
	int64_t conn;
};

/* A message as stored (redacted) is made in a buffer kept for the next up to this capacity. */
#define KEEP_BUF (64 * 1024)

/* ---- decoding (Content-Encoding) ---- */

/* A body's coding, as its head says (coding_of). */
enum hl_coding {
	HC_NONE,    /* none, or identity */
	HC_GZIP,    /* gzip or x-gzip */
	HC_DEFLATE, /* deflate: zlib's format, or raw deflate as some servers send */
	HC_OTHER,   /* anything else (br, zstd, ...), or more than one coding: not decoded */
};

/* Where a decoder is. */
enum dec_state {
	DEC_ON,     /* decoding (or nothing given yet) */
	DEC_END,    /* its compressed data ended (a gzip member may follow) */
	DEC_FAILED, /* the data cannot be decoded (why): the rest is not */
	DEC_CUT,    /* bytes were not captured: the rest cannot be decoded */
	DEC_ENOUGH, /* its reader wants no more (a body past what is kept of it) */
};

/*
 * A streaming inflater for one body. Its output goes to a sink in pieces of
 * at most HL_DECODE_BUF bytes, as it comes: it holds zlib's state (about 7 KiB)
 * and window (32 KiB) only, counted in mem as zlib allocates them, and lets
 * them go when the data ends, fails or is cut.
 */
struct hdec {
	z_stream z;
	int zinit;             /* z is initialized */
	enum hl_coding coding; /* HC_GZIP or HC_DEFLATE */
	enum dec_state st;
	unsigned char head[2];   /* deflate: its first bytes, until they tell zlib's header */
	size_t nhead;            /* ... from raw deflate */
	struct mt_mem *mem;      /* where zlib's memory is counted (borrowed; NULL: nowhere) */
	size_t zmem;             /* ... what it holds now */
	uint64_t in;             /* compressed bytes given */
	uint64_t out;            /* bytes decoded */
	uint64_t undecoded;      /* of in, not decoded (a failure, a gap, or enough) */
	uint64_t undecoded_said; /* ... of them, said in a gap row already */
	char why[128];           /* DEC_FAILED: zlib's reason */
};

/* What a decoder's output goes to. Returns 1 when it wants no more, else 0. */
typedef int (*dec_sink)(void *ctx, const char *p, size_t n);

/* zlib's allocations, with their size before them so that a free can count it. */
union zblock {
	size_t n;
	max_align_t align;
};

static voidpf dec_alloc(voidpf opaque, uInt items, uInt size)
{
	struct hdec *d = opaque;
	union zblock *b;
	size_t n;

	if (size && items > (SIZE_MAX - sizeof(*b)) / size)
		return Z_NULL;
	n = (size_t)items * size;
	b = mt_malloc(sizeof(*b) + n);
	b->n = n;
	d->zmem += sizeof(*b) + n + MT_MEM_CHUNK;
	mt_mem_add(d->mem, sizeof(*b) + n + MT_MEM_CHUNK);
	return b + 1;
}

static void dec_zfree(voidpf opaque, voidpf p)
{
	struct hdec *d = opaque;
	union zblock *b;

	if (!p)
		return;
	b = (union zblock *)p - 1;
	d->zmem -= sizeof(*b) + b->n + MT_MEM_CHUNK;
	mt_mem_sub(d->mem, sizeof(*b) + b->n + MT_MEM_CHUNK);
	free(b);
}

static int coding_is(const char *p, size_t n, const char *name)
{
	return n == strlen(name) && !strncasecmp(p, name, n);
}

/* One content coding's name (not identity), n bytes at p. */
static enum hl_coding coding_one(const char *p, size_t n)
{
	if (coding_is(p, n, "gzip") || coding_is(p, n, "x-gzip"))
		return HC_GZIP;
	if (coding_is(p, n, "deflate"))
		return HC_DEFLATE;
	return HC_OTHER;
}

/*
 * The coding of a body whose head is h: every Content-Encoding field read as
 * one list, identity elements left out. gzip (or x-gzip) or deflate alone is
 * decoded; anything else, or more than one coding, is HC_OTHER. name gets the
 * codings as sent, ", " between them (cut to nn).
 */
static enum hl_coding coding_of(const struct mt_hdr *h, size_t nh, char *name, size_t nn)
{
	enum hl_coding c = HC_NONE;
	unsigned codings = 0;
	size_t len = 0;

	name[0] = '\0';
	for (size_t i = 0; i < nh; i++) {
		const char *v = h[i].value;
		if (!h[i].name || !v || strcasecmp(h[i].name, "Content-Encoding"))
			continue;
		while (*v) {
			const char *e;
			size_t n;
			while (*v == ' ' || *v == '\t' || *v == ',')
				v++;
			e = v;
			while (*e && *e != ',')
				e++;
			n = (size_t)(e - v);
			while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			if (n) {
				int w = snprintf(name + len, nn - len, "%s%.*s", len ? ", " : "",
						 (int)(n < 64 ? n : 64), v);
				if (w > 0)
					len = (size_t)w < nn - len ? len + (size_t)w : nn - 1;
				if (!coding_is(v, n, "identity")) {
					codings++;
					c = coding_one(v, n);
				}
			}
			v = e;
		}
	}
	return codings > 1 ? HC_OTHER : c;
}

static const char *coding_str(enum hl_coding c)
{
	return c == HC_GZIP ? "gzip" : "deflate";
}

/* A decoder for coding (HC_GZIP or HC_DEFLATE); zlib's memory counted in mem. */
static struct hdec *dec_new(enum hl_coding coding, struct mt_mem *mem)
{
	struct hdec *d = mt_calloc(1, sizeof(*d));

	d->coding = coding;
	d->mem = mem;
	return d;
}

/* zlib's state let go (the data ended, failed or was cut). */
static void dec_zend(struct hdec *d)
{
	if (d->zinit)
		inflateEnd(&d->z);
	d->zinit = 0;
}

static void dec_free(struct hdec *d)
{
	if (!d)
		return;
	dec_zend(d);
	free(d);
}

static void dec_fail(struct hdec *d, const char *why)
{
	snprintf(d->why, sizeof(d->why), "%s", why);
	d->st = DEC_FAILED;
	dec_zend(d);
}

/*
 * Does a deflate body begin with zlib's header (RFC 1950: method 8, a window
 * of at most 32 KiB, the check bits)? Else it is read as raw deflate.
 */
static int zlib_header(const unsigned char *b)
{
	return (b[0] & 0x0f) == 8 && (b[0] >> 4) <= 7 && ((b[0] << 8) | b[1]) % 31 == 0;
}

/* Inflate n bytes at p (n <= UINT_MAX), the output to fn in pieces; see dec_push. */
static void dec_run(struct hdec *d, const unsigned char *p, size_t n, dec_sink fn, void *ctx)
{
	unsigned char out[HL_DECODE_BUF];

	while (n) {
		if (d->st == DEC_END) {
			/* More after the end: a gzip member that follows (RFC 1952 2.2), or
			 * bytes a deflate body cannot have. */
			if (d->coding != HC_GZIP) {
				dec_fail(d, "bytes after the end of the compressed data");
				break;
			}
			d->st = DEC_ON;
		}
		if (d->st != DEC_ON)
			break;
		if (!d->zinit) {
			int bits = d->coding == HC_GZIP   ? 15 + 32 /* gzip, or zlib's */
				   : zlib_header(d->head) ? 15
							  : -15;
			memset(&d->z, 0, sizeof(d->z));
			d->z.zalloc = dec_alloc;
			d->z.zfree = dec_zfree;
			d->z.opaque = d;
			if (inflateInit2(&d->z, bits) != Z_OK) {
				dec_fail(d, d->z.msg ? d->z.msg : "zlib cannot start");
				break;
			}
			d->zinit = 1;
		}
		d->z.next_in = (Bytef *)p;
		d->z.avail_in = (uInt)n;
		for (;;) {
			int rc;
			size_t got;
			d->z.next_out = out;
			d->z.avail_out = sizeof(out);
			rc = inflate(&d->z, Z_SYNC_FLUSH);
			got = sizeof(out) - d->z.avail_out;
			d->out += got;
			if (got && fn(ctx, (const char *)out, got)) {
				d->st = DEC_ENOUGH;
				dec_zend(d);
				break;
			}
			if (rc == Z_STREAM_END) {
				d->st = DEC_END;
				break;
			}
			if (rc == Z_NEED_DICT) {
				dec_fail(d, "a preset dictionary is needed");
				break;
			}
			if (rc != Z_OK && rc != Z_BUF_ERROR) {
				dec_fail(d, d->z.msg ? d->z.msg : zError(rc));
				break;
			}
			/* (Z_BUF_ERROR: no progress was possible, it needs more input.) */
			if (rc == Z_BUF_ERROR || (!d->z.avail_in && d->z.avail_out))
				break;
		}
		/* What it did not take: after its end, a gzip member may follow. */
		p = d->z.next_in;
		n = d->z.avail_in;
		if (d->st == DEC_END)
			dec_zend(d);
		else if (d->st == DEC_ON && n)
			dec_fail(d, "zlib took no more input"); /* (not seen: said, not lost) */
		else
			break;
	}
	if (d->st != DEC_ON && d->st != DEC_END)
		d->undecoded += n;
}

/*
 * n more compressed bytes of the body: what they decode to goes to fn at once,
 * in pieces of at most HL_DECODE_BUF bytes. Once the data failed, was cut or
 * fn wanted no more, bytes are only counted (undecoded).
 */
static void dec_push(struct hdec *d, const char *p, size_t n, dec_sink fn, void *ctx)
{
	const unsigned char *u = (const unsigned char *)p;

	d->in += n;
	if (d->st == DEC_FAILED || d->st == DEC_CUT || d->st == DEC_ENOUGH) {
		d->undecoded += n;
		return;
	}
	if (d->coding == HC_DEFLATE && !d->zinit && d->st == DEC_ON && d->nhead < 2) {
		/* Its first two bytes tell zlib's format from raw deflate. */
		while (n && d->nhead < 2) {
			d->head[d->nhead++] = *u++;
			n--;
		}
		if (d->nhead < 2)
			return;
		dec_run(d, d->head, 2, fn, ctx);
	}
	while (n) {
		size_t k = n < (1u << 30) ? n : (1u << 30);
		if (d->st != DEC_ON && d->st != DEC_END) {
			d->undecoded += n;
			break;
		}
		dec_run(d, u, k, fn, ctx);
		u += k;
		n -= k;
	}
}

/* The body ended while its compressed data had not (given bytes, none failed)? */
static int dec_short(const struct hdec *d)
{
	return d->in && d->st == DEC_ON;
}

/* bytes were not captured: the rest cannot be decoded. */
static void dec_cut(struct hdec *d)
{
	if (d->st == DEC_ON || d->st == DEC_END) {
		d->st = DEC_CUT;
		dec_zend(d);
	}
}

/* Add to what the exchange's error says of its bodies' codings. */
static void note_add(struct hl_exch *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_add(struct hl_exch *x, const char *fmt, ...)
{
	size_t len = strlen(x->note);
	va_list ap;

	if (len && len + 2 < sizeof(x->note)) {
		memcpy(x->note + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(x->note + len, sizeof(x->note) - len, fmt, ap);
	va_end(ap);
}

/* ---- memory ---- */

static size_t str_bytes(const char *s)
{
	return s ? strlen(s) + 1 + MT_MEM_CHUNK : 0;
}

/* What x holds now, as allocated (a few fields read, nothing walked). */
static size_t exch_bytes(const struct hl_exch *x)
{
	return sizeof(*x) + MT_MEM_CHUNK + x->str_bytes + mt_buf_bytes(&x->rbody) + mt_buf_bytes(&x->red) +
	       mt_buf_bytes(&x->hjson) + (x->sse_init ? mt_sse_bytes(&x->sse) : 0) +
	       (x->dec ? sizeof(*x->dec) + MT_MEM_CHUNK : 0); /* (zlib's own: counted as it
							       * allocates, dec_alloc) */
}

/* What x holds is counted again: the difference goes to opts.mem. */
static void exch_recount(struct hl_log *l, struct hl_exch *x)
{
	size_t now = exch_bytes(x);

	if (now > x->counted)
		mt_mem_add(l->o.mem, now - x->counted);
	else
		mt_mem_sub(l->o.mem, x->counted - now);
	x->counted = now;
}

/* A buffer used for one record at a time: kept for the next unless it grew big. */
static void buf_done(struct mt_buf *b)
{
	if (b->cap > KEEP_BUF)
		mt_buf_release(b);
}

static void idle_unlink(struct hl_log *l, struct hsess *s)
{
	if (!s->idle)
		return;
	if (s->iprev)
		s->iprev->inext = s->inext;
	else
		l->idle_head = s->inext;
	if (s->inext)
		s->inext->iprev = s->iprev;
	else
		l->idle_tail = s->iprev;
	s->iprev = s->inext = NULL;
	s->idle = 0;
}

/* s has no exchange open now (under mu): its event ids, if any, may be given back. */
static void idle_append(struct hl_log *l, struct hsess *s)
{
	if (s->idle || !s->seen.len)
		return;
	s->iprev = l->idle_tail;
	s->inext = NULL;
	if (l->idle_tail)
		l->idle_tail->inext = s;
	else
		l->idle_head = s;
	l->idle_tail = s;
	s->idle = 1;
}

/* The session's event ids are counted again (under mu). */
static void seen_recount(struct hl_log *l, struct hsess *s)
{
	size_t now = mt_map_bytes(&s->seen);

	if (now > s->seen_counted)
		mt_mem_add(l->o.mem, now - s->seen_counted);
	else
		mt_mem_sub(l->o.mem, s->seen_counted - now);
	s->seen_counted = now;
}

/* ---- sessions ---- */

static void now(struct hl_log *l, int64_t *ns, int64_t *wall)
{
	writer_now(l->o.w, ns, wall);
}

/* A new capture session (under mu). */
static struct hsess *session_new(struct hl_log *l, int64_t num, enum hs_kind kind, const char *client_addr,
				 const char *upstream)
{
	struct store_session_new sn;
	struct hsess *s = mt_calloc(1, sizeof(*s));
	int64_t wall;

	s->num = num;
	s->kind = kind;
	now(l, &s->t0, &wall);
	s->last_ns = s->t0;
	s->last_wall = wall;
	mt_map_init(&s->seen, 100000);
	memset(&sn, 0, sizeof(sn));
	sn.transport = kind == HS_SSE ? "sse" : "http";
	sn.started_wall = wall;
	sn.upstream = upstream ? upstream : l->o.upstream;
	sn.client_addr = client_addr;
	s->h = writer_session_new(l->o.w, &sn, s->t0);
	if ((size_t)num >= l->capsess) {
		size_t cap = l->capsess ? l->capsess * 2 : 64;
		while (cap <= (size_t)num)
			cap *= 2;
		l->sess = mt_realloc(l->sess, cap * sizeof(*l->sess));
		memset(l->sess + l->capsess, 0, (cap - l->capsess) * sizeof(*l->sess));
		l->capsess = cap;
	}
	l->sess[num] = s;
	if ((size_t)num >= l->nsess)
		l->nsess = (size_t)num + 1;
	l->st.sessions++;
	if (kind == HS_SSE)
		l->st.sessions_sse++;
	return s;
}

/* A record of s is stored now (under mu): its session's last time. */
static void touch(struct hl_log *l, struct hsess *s)
{
	if (l->o.end_at_last)
		now(l, &s->last_ns, &s->last_wall);
}

/* The session's end in the store: its duration and end time. */
static void session_end(struct hl_log *l, struct hsess *s)
{
	struct store_session_end e;
	int64_t ns, wall;

	if (s->end_stored)
		return;
	s->end_stored = 1;
	if (l->o.end_at_last) {
		ns = s->last_ns;
		wall = s->last_wall;
	} else {
		now(l, &ns, &wall);
	}
	memset(&e, 0, sizeof(e));
	e.ended_wall = wall;
	e.duration_ns = ns - s->t0;
	e.exit_status = -1;
	e.exit_signal = -1;
	writer_session_end(l->o.w, s->h, &e);
	/* Nothing of it is open: the event ids it saw need not be kept (memory
	 * stays flat over a capture of many sessions). */
	mt_map_release(&s->seen); /* (empty again, with its limit) */
	seen_recount(l, s);
	idle_unlink(l, s);
}

static void session_free(struct hl_log *l, struct hsess *s)
{
	mt_map_release(&s->seen);
	seen_recount(l, s);
	idle_unlink(l, s);
	free(s->http_id);
	free(s->endpoint);
	free(s);
}

struct hl_log *hl_new(const struct hl_opts *o)
{
	struct hl_log *l = mt_calloc(1, sizeof(*l));

	l->o = *o;
	pthread_mutex_init(&l->mu, NULL);
	hs_init(&l->tr);
	return l;
}

void hl_free(struct hl_log *l)
{
	if (!l)
		return;
	for (size_t i = 1; i < l->nsess; i++)
		if (l->sess[i]) {
			session_end(l, l->sess[i]);
			session_free(l, l->sess[i]);
		}
	free(l->sess);
	hs_release(&l->tr);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

int64_t hl_conn_new(struct hl_log *l)
{
	int64_t n;

	pthread_mutex_lock(&l->mu);
	n = ++l->next_conn;
	pthread_mutex_unlock(&l->mu);
	return n;
}

void hl_conn_closed(struct hl_log *l, int64_t conn)
{
	pthread_mutex_lock(&l->mu);
	hs_conn_closed(&l->tr, conn);
	pthread_mutex_unlock(&l->mu);
}

/* ---- what is stored ---- */

static int64_t next_seq(struct hsess *s)
{
	return ++s->seq;
}

/* ns since the session began. */
static int64_t clock_of(struct hl_log *l, const struct hsess *s)
{
	int64_t ns, wall;

	now(l, &ns, &wall);
	return ns - s->t0;
}

/* A message read in an exchange (under mu); cls: p classified already, or NULL. */
static void log_message(struct hl_log *l, struct hl_exch *x, enum writer_stream s, const char *channel,
			const char *p, size_t n, const char *sse_id, const char *sse_event, int replayed,
			const struct mt_class *cls)
{
	struct writer_http_msg m;

	memset(&m, 0, sizeof(m));
	x->messages++;
	m.sess = x->sess->h;
	m.seq = next_seq(x->sess);
	m.s = s;
	m.channel = channel;
	m.exchange = x->seq;
	m.sse_id = sse_id;
	m.sse_event = sse_event;
	m.replayed = replayed;
	m.p = p;
	m.n = n;
	struct mt_class c;
	if (l->o.redact) {
		/* (Classified and redacted here: the writer's thread does neither again.) */
		if (cls)
			c = *cls;
		else
			mt_classify(p, n, &c);
		m.redacted = 1;
		m.cls = &c;
		if (mt_redact_message(l->o.redact, p, n, c.kind, &x->red)) {
			m.stored = x->red.data;
			m.stored_n = x->red.len;
		}
	}
	writer_put_msg(l->o.w, &m);
	buf_done(&x->red);
	l->st.messages++;
	touch(l, x->sess);
}

/* A gap row of session s (under mu). */
static void log_gap(struct hl_log *l, struct hsess *s, enum writer_stream d, uint64_t bytes, const char *why)
{
	writer_put_gap(l->o.w, s->h, next_seq(s), d, (size_t)bytes, why);
	l->st.gaps++;
	l->st.gap_bytes += bytes;
	touch(l, s);
}

/* Does the body hold an initialize request (alone or in a batch)? */
static int holds_initialize(const char *p, size_t n, const struct mt_class *c)
{
	if (c->kind == MT_REQUEST)
		return c->method.n == 12 && !memcmp(c->method.p, "\"initialize\"", 12);
	if (c->kind != MT_BATCH)
		return 0;
	json_t *a = json_loadb(p, n, 0, NULL);
	size_t i;
	json_t *v;
	int found = 0;
	json_array_foreach(a, i, v)
	{
		const char *m = json_string_value(json_object_get(v, "method"));
		if (m && !strcmp(m, "initialize") && json_object_get(v, "id"))
			found = 1;
	}
	json_decref(a);
	return found;
}

/* ---- the request ---- */

/* A request body decoded into a buffer, up to max bytes. */
struct req_sink {
	struct mt_buf *b;
	size_t max;
	int over; /* it decodes to more than max */
};

static int req_put(void *ctx, const char *p, size_t n)
{
	struct req_sink *k = ctx;

	if (n > k->max - k->b->len) {
		k->over = 1;
		return 1;
	}
	mt_buf_append(k->b, p, n);
	return 0;
}

/*
 * A request body in coding (gzip, deflate) decoded into out, up to max
 * bytes (counted in mem while the caller holds it). Returns 0; 1 when it
 * decodes to more than max (out is then released); -1 when it cannot be
 * decoded, why said.
 */
static int req_decode(enum hl_coding coding, const char *p, size_t n, size_t max, struct mt_mem *mem,
		      struct mt_buf *out, char *why, size_t whyn)
{
	struct hdec *d = dec_new(coding, mem);
	struct req_sink k = {out, max, 0};
	int rc = -1;

	mt_mem_size(mem, 0, sizeof(*d));
	dec_push(d, p, n, req_put, &k);
	if (k.over) {
		rc = 1;
	} else if (d->st == DEC_FAILED) {
		snprintf(why, whyn, "%s", d->why);
	} else if (d->st != DEC_END) {
		snprintf(why, whyn, "the body ended before its compressed data did");
	} else {
		rc = 0;
	}
	mt_mem_size(mem, sizeof(*d), 0);
	dec_free(d);
	if (rc)
		mt_buf_release(out);
	mt_mem_add(mem, mt_buf_bytes(out));
	return rc;
}

void hl_done_text(const struct hl_done *d, struct mt_buf *out)
{
	struct mt_buf p = MT_BUF_INIT;
	double ms = (double)d->ns / 1e6;

	mt_buf_reset(out);
	mt_buf_printf(out, "#%lld %s %s%s", (long long)d->conn, d->method, mt_printable(&p, d->path),
		      d->has_query ? "?\xe2\x80\xa6" : "");
	if (d->rpc)
		mt_buf_printf(out, " %s", d->rpc);
	mt_buf_puts(out, " \xe2\x86\x92 ");
	if (d->status)
		mt_buf_printf(out, "%d%s%s", d->status, d->type ? " " : "", d->type ? d->type : "");
	else
		mt_buf_puts(out, "no response");
	if (d->messages)
		mt_buf_printf(out, ", %lld message%s", (long long)d->messages, d->messages == 1 ? "" : "s");
	if (strcmp(d->outcome, "complete")) {
		mt_buf_printf(out, ", %s", d->outcome);
		if (d->error)
			mt_buf_printf(out, ": %s", mt_printable(&p, d->error));
	}
	if (ms < 1)
		mt_buf_printf(out, ", %.0fus", ms * 1000);
	else if (ms < 1000)
		mt_buf_printf(out, ", %.1fms", ms);
	else
		mt_buf_printf(out, ", %.2fs", ms / 1000);
	mt_buf_release(&p);
}

/* What a request body carried, for a live view: "tools/call echo", "batch of 3". */
static void rpc_label(const struct mt_class *c, char *out, size_t cap)
{
	struct mt_buf m = MT_BUF_INIT, subj = MT_BUF_INIT;

	out[0] = '\0';
	if (c->kind == MT_BATCH) {
		snprintf(out, cap, "batch of %zu", c->batch_size);
	} else if ((c->kind == MT_REQUEST || c->kind == MT_NOTIFICATION) && c->method.p &&
		   !mt_json_string(c->method, &m)) {
		mt_buf_putc(&m, '\0');
		if (c->kind == MT_REQUEST && !mt_request_subject(c, m.data, &subj)) {
			/* (Both made printable: they cannot act on a terminal.) */
			struct mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
			mt_buf_putc(&subj, '\0');
			snprintf(out, cap, "%s %s", mt_printable(&a, m.data), mt_printable(&b, subj.data));
			mt_buf_release(&a);
			mt_buf_release(&b);
		} else {
			struct mt_buf a = MT_BUF_INIT;
			snprintf(out, cap, "%s", mt_printable(&a, m.data));
			mt_buf_release(&a);
		}
	} else if (c->kind == MT_RESPONSE || c->kind == MT_ERROR) {
		snprintf(out, cap, "%s", c->kind == MT_RESPONSE ? "a response" : "an error");
	}
	mt_buf_release(&m);
	mt_buf_release(&subj);
}

struct hl_exch *hl_request(struct hl_log *l, const struct hl_request *r)
{
	struct hl_exch *x = mt_calloc(1, sizeof(*x));
	struct hs_request hr;
	struct mt_class cls;
	const char *target = hs_uri_target(r->target ? r->target : "/");
	const char *sid = mt_hdr_get(r->h, r->nh, "Mcp-Session-Id");
	const char *body = r->body ? r->body : "";
	size_t body_len = r->body_len;
	char *client = NULL;
	int created, rpc;
	enum hs_kind kind;
	/* A body in a coding: decoded for storing (the bytes sent are not altered). */
	struct mt_buf decoded = MT_BUF_INIT;
	char coding[48], zwhy[128];
	enum hl_coding cd = coding_of(r->h, r->nh, coding, sizeof(coding));
	int whole = r->body_len && !r->body_lost && !r->body_cut;
	int opaque = 0;  /* a body in a coding not decoded: stored as sent */
	int too_big = 0; /* ... decoded, larger than max_message */

	snprintf(x->method, sizeof(x->method), "%s", r->method ? r->method : "GET");
	x->is_delete = !strcmp(x->method, "DELETE");
	x->is_head = !strcmp(x->method, "HEAD");
	if (whole && (cd == HC_GZIP || cd == HC_DEFLATE)) {
		int d = req_decode(cd, body, body_len, l->o.max_message, l->o.mem, &decoded, zwhy,
				   sizeof(zwhy));
		if (!d) {
			body = decoded.data ? decoded.data : "";
			body_len = decoded.len;
		} else if (d > 0) {
			too_big = 1;
		} else {
			opaque = 1;
			note_add(x, "cannot decode the %s request body: %s (stored as sent)", coding_str(cd),
				 zwhy);
		}
	} else if (whole && cd == HC_OTHER) {
		opaque = 1;
		note_add(x, "the request body's Content-Encoding (%s) is not decoded: stored as sent",
			 coding);
	}
	mt_classify(body, body_len, &cls);
	rpc = whole && !opaque && !too_big && body_len && cls.kind != MT_INVALID && cls.kind != MT_NOTJSONRPC;
	x->initialize = rpc && holds_initialize(body, body_len, &cls);
	if (rpc && cls.kind == MT_REQUEST && cls.id.n)
		x->rpc_id = mt_strndup(cls.id.p, cls.id.n);
	x->info.rpc_id = x->rpc_id;
	x->req_session_id = sid ? mt_strdup(sid) : NULL;
	x->conn = r->conn;
	if (l->o.on_end) {
		size_t q = strcspn(target, "?#");
		x->path = mt_strndup(target, q);
		x->has_query = target[q] == '?';
		if (rpc)
			rpc_label(&cls, x->rpc, sizeof(x->rpc));
	}

	memset(&hr, 0, sizeof(hr));
	hr.conn = r->conn;
	hr.method = x->method;
	hr.target = target;
	hr.session_id = sid;
	hr.initialize = x->initialize;
	/* 2026-07-28: no session; the request names its client in _meta. */
	if (!sid && rpc && !x->initialize && cls.kind == MT_REQUEST && cls.has_meta)
		client = hs_meta_client(body, body_len);
	hr.client = client;

	pthread_mutex_lock(&l->mu);
	int64_t num = hs_request(&l->tr, &hr, &created, &kind);
	x->sess = created || (size_t)num >= l->nsess || !l->sess[num]
			  ? session_new(l, num, kind, r->client_addr, r->upstream)
			  : l->sess[num];
	x->info.sess = x->sess->num;
	if (created && sid && *sid && !x->sess->http_id) {
		/* A session joined midway (or an id the server will refuse). */
		x->sess->http_id = mt_strdup(sid);
		writer_put_http_id(l->o.w, x->sess->h, sid);
	}
	x->sess->open++;
	idle_unlink(l, x->sess);
	l->st.exchanges++;
	if (l->o.on_end)
		x->t0 = clock_of(l, x->sess); /* (a clock read only for -v) */
	/* What its connection lost before it (no session had it then). */
	for (size_t i = 0; i < r->ngaps; i++)
		log_gap(l, x->sess, r->gaps[i].s, r->gaps[i].bytes, r->gaps[i].why);
	{
		/* The request, in the session's order, with its session's state. */
		struct writer_exchange we;
		memset(&we, 0, sizeof(we));
		x->seq = next_seq(x->sess);
		we.seq = x->seq;
		we.conn = r->conn;
		we.method = x->method;
		we.target = target;
		we.h = r->h;
		we.nh = r->nh;
		if (l->o.redact) {
			mt_hdr_json(r->h, r->nh, l->o.redact, &x->hjson);
			mt_buf_putc(&x->hjson, '\0');
			we.headers_json = x->hjson.data;
			we.last_event_id = mt_hdr_get(r->h, r->nh, "Last-Event-ID");
		}
		if (whole && !rpc && !too_big && body_len) {
			we.body = body;
			we.body_len = body_len;
		}
		writer_put_exchange_begin(l->o.w, x->sess->h, &we);
		mt_buf_release(&x->hjson); /* (copied: the response's head has its own) */
		touch(l, x->sess);
		if (rpc)
			log_message(l, x, WS_C2S, "body", body, body_len, NULL, NULL, 0, &cls);
		if (too_big) {
			char why[160];
			l->st.over_max++;
			snprintf(why, sizeof(why),
				 "a %s request body (%zu bytes as sent) is larger than --max-message "
				 "(%zu) once decoded",
				 coding_str(cd), r->body_len, l->o.max_message);
			log_gap(l, x->sess, WS_C2S, r->body_len, why);
		}
		if (r->body_lost || r->body_cut) {
			char why[160];
			if (r->body_lost)
				snprintf(why, sizeof(why),
					 "%llu bytes of a request body were not captured: it is not stored",
					 (unsigned long long)r->body_lost);
			else if (r->body_len + r->body_cut > l->o.max_message)
				snprintf(why, sizeof(why),
					 "a request body of %llu bytes is larger than --max-message (%zu)",
					 (unsigned long long)(r->body_len + r->body_cut), l->o.max_message);
			else
				snprintf(why, sizeof(why),
					 "a request body of %llu bytes is larger than the limit (%zu kept)",
					 (unsigned long long)(r->body_len + r->body_cut), r->body_len);
			log_gap(l, x->sess, WS_C2S, r->body_len + r->body_lost + r->body_cut, why);
		}
	}
	pthread_mutex_unlock(&l->mu);
	free(client);
	mt_mem_sub(l->o.mem, mt_buf_bytes(&decoded));
	mt_buf_release(&decoded);
	x->str_bytes = str_bytes(x->rpc_id) + str_bytes(x->req_session_id);
	exch_recount(l, x);
	return x;
}

/* ---- the response ---- */

static const char *resp_type(const struct hl_exch *x)
{
	if (x->info.is_sse)
		return "sse";
	if (x->info.is_json)
		return "json";
	if (x->status == 202 || x->status == 204 || x->status == 304 || x->is_head || x->no_body)
		return "empty";
	return "other";
}

void hl_response_head(struct hl_log *l, struct hl_exch *x, int status, const struct mt_hdr *h, size_t nh)
{
	struct hsess *s = x->sess;
	const char *sid = mt_hdr_get(h, nh, "Mcp-Session-Id");
	const char *ctype = mt_hdr_get(h, nh, "Content-Type"), *clen;
	int ok = status >= 200 && status < 300;

	x->head_in = 1;
	x->status = status;
	x->info.is_sse = mt_hdr_has_token(ctype, "text/event-stream");
	x->info.is_json = mt_hdr_has_token(ctype, "application/json");
	x->no_body = (clen = mt_hdr_get(h, nh, "Content-Length")) && !strcmp(clen, "0");
	if (status != 204 && status != 304 && !x->is_head) {
		/* A body in a coding is decoded for storing; one in a coding that is
		 * not decoded is kept as sent, never read as JSON or SSE. */
		enum hl_coding cd = coding_of(h, nh, x->coding, sizeof(x->coding));
		if (cd == HC_GZIP || cd == HC_DEFLATE)
			x->dec = dec_new(cd, l->o.mem);
		x->opaque = cd == HC_OTHER;
	}
	x->sse_on = x->info.is_sse && !x->opaque;
	x->json_on = x->info.is_json && !x->opaque;
	if (x->sse_on) {
		mt_sse_init(&x->sse,
			    l->o.max_message < HL_SSE_EVENT_MAX ? l->o.max_message : HL_SSE_EVENT_MAX);
		x->sse_init = 1;
		x->first_event = 1;
	}
	pthread_mutex_lock(&l->mu);
	if (x->info.is_sse)
		x->info.endpoint_stream = !strcmp(x->method, "GET") && s->kind == HS_SSE && !s->endpoint;
	/* What the session is, as the response says. */
	if (sid && !x->req_session_id && ok) {
		if (!s->http_id) {
			s->http_id = mt_strdup(sid);
			writer_put_http_id(l->o.w, s->h, sid);
		}
		hs_named(&l->tr, s->num, sid);
	} else if (x->initialize && !sid && !x->req_session_id && ok) {
		hs_idless(&l->tr, s->num); /* a server without sessions */
	}
	if ((x->is_delete && ok) || (x->req_session_id && status == 404)) {
		s->ended = 1;
		hs_end(&l->tr, s->num);
	}
	if (l->o.redact) {
		mt_hdr_json(h, nh, l->o.redact, &x->hjson);
		mt_buf_putc(&x->hjson, '\0');
		writer_put_exchange_head_json(l->o.w, s->h, x->seq, status, x->hjson.data, resp_type(x),
					      clock_of(l, s));
		mt_buf_release(&x->hjson);
	} else {
		writer_put_exchange_head(l->o.w, s->h, x->seq, status, h, nh, resp_type(x), clock_of(l, s));
	}
	touch(l, s);
	pthread_mutex_unlock(&l->mu);
	exch_recount(l, x);
}

/* An SSE event read on the stream (under mu). */
static void sse_event(struct hl_log *l, struct hl_exch *x, const struct mt_sse_event *ev)
{
	struct hsess *s = x->sess;
	const char *type = ev->event_len ? ev->event : NULL;
	int first = x->first_event;

	x->first_event = 0;
	x->info.events++;
	if (ev->oversized) {
		l->st.over_max++;
		char why[160];
		snprintf(why, sizeof(why), "an SSE event of %zu bytes is larger than the limit", ev->raw_len);
		log_gap(l, s, WS_S2C, ev->raw_len, why);
		return;
	}
	if (type && !strcmp(type, "endpoint")) {
		/* Legacy HTTP+SSE: the URI the session's POSTs go to. */
		if (first && s->kind == HS_SSE && !s->endpoint) {
			const char *target;
			s->endpoint = mt_strndup(ev->data, ev->data_len);
			target = hs_uri_target(s->endpoint);
			hs_endpoint(&l->tr, s->num, target);
			writer_put_http_id(l->o.w, s->h, target);
			touch(l, s);
			if (x->info.endpoint_stream) {
				x->endpoint = mt_strdup(s->endpoint);
				x->info.endpoint = x->endpoint;
				x->str_bytes += str_bytes(x->endpoint);
			}
		}
		return;
	}
	if (!ev->has_data || !ev->data_len)
		return; /* a priming event, retry: or a comment: nothing to store */
	int replayed = 0;
	if (ev->has_id && ev->id_len) {
		int64_t v;
		if (mt_map_get(&s->seen, ev->id, ev->id_len, &v)) {
			replayed = 1;
		} else {
			(void)mt_map_put(&s->seen, ev->id, ev->id_len, 1);
			seen_recount(l, s);
		}
	}
	log_message(l, x, WS_S2C, "sse", ev->data, ev->data_len, ev->has_id ? ev->id : NULL, type, replayed,
		    NULL);
}

struct sse_ctx {
	struct hl_log *l;
	struct hl_exch *x;
};

static void on_sse_event(void *ctx, const struct mt_sse_event *ev)
{
	struct sse_ctx *c = ctx;

	pthread_mutex_lock(&c->l->mu);
	sse_event(c->l, c->x, ev);
	pthread_mutex_unlock(&c->l->mu);
}

/*
 * After a gap in an SSE stream: the bytes up to and including the next blank
 * line belong to an event cut by it. Returns how many of p's n to drop.
 */
static size_t skip_cut_block(struct hl_exch *x, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '\n' && x->skip_cr) {
			x->skip_cr = 0; /* (a CRLF's LF: the same line end) */
			continue;
		}
		if (c == '\r' || c == '\n') {
			if (x->skip_nl) {
				/* A blank line: the cut block ends here. */
				x->skip_block = 0;
				x->skip_nl = 0;
				if (c == '\r' && i + 1 < n && p[i + 1] == '\n')
					i++;
				x->skip_cr = 0;
				return i + 1;
			}
			x->skip_nl = 1;
			x->skip_cr = c == '\r';
			continue;
		}
		x->skip_nl = 0;
		x->skip_cr = 0;
	}
	return n;
}

/*
 * Do the n bytes at b begin a line an SSE event may begin with (a field of
 * the spec's, a comment, a blank line)? 1 yes, 0 no, -1 too few to tell.
 */
static int sse_line_start(const char *b, size_t n)
{
	static const char *const fields[] = {"data:", "event:", "id:", "retry:"};
	int more = 0;

	if (!n)
		return -1;
	if (b[0] == ':' || b[0] == '\r' || b[0] == '\n')
		return 1;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t fl = strlen(fields[i]);
		if (!memcmp(b, fields[i], n < fl ? n : fl)) {
			if (n >= fl)
				return 1;
			more = 1;
		}
	}
	return more ? -1 : 0;
}

static void response_body(struct hl_log *l, struct hl_exch *x, const char *p, size_t n)
{
	if (!n)
		return;
	if (x->sse_on && x->resync) {
		/* At a chunk's start after a gap: does an event begin here? */
		size_t take = sizeof(x->rs) - x->nrs < n ? sizeof(x->rs) - x->nrs : n;
		char held[sizeof(x->rs)];
		size_t nh;
		int v;
		memcpy(x->rs + x->nrs, p, take);
		x->nrs += take;
		p += take;
		n -= take;
		v = sse_line_start(x->rs, x->nrs);
		if (v < 0 && x->nrs < sizeof(x->rs))
			return; /* (all taken: more is needed) */
		x->resync = 0;
		if (v > 0) {
			x->skip_block = 0;
			x->skip_nl = x->skip_cr = 0;
		}
		nh = x->nrs;
		memcpy(held, x->rs, nh);
		x->nrs = 0;
		response_body(l, x, held, nh);
		if (!n)
			return;
	}
	if (x->sse_on) {
		struct sse_ctx c = {l, x};
		if (x->skip_block) {
			size_t k = skip_cut_block(x, p, n);
			p += k;
			n -= k;
			if (!n)
				return;
			/* (A CR ended the blank line: an LF opening the next piece is its.) */
		}
		mt_sse_push(&x->sse, p, n, on_sse_event, &c);
		return;
	}
	size_t keep = x->json_on ? l->o.max_message : HL_KEEP_BODY_MAX;
	if (x->rbody.len < keep)
		mt_buf_append(&x->rbody, p, n < keep - x->rbody.len ? n : keep - x->rbody.len);
	x->rbody_total += n;
}

/* Decoded bytes of the body, as plain ones; 1 when a body kept whole has had enough. */
static int decoded_body(void *ctx, const char *p, size_t n)
{
	struct sse_ctx *c = ctx;
	struct hl_exch *x = c->x;

	response_body(c->l, x, p, n);
	/* (Past what is kept of it, a body is a gap or cut all the same: no more work.) */
	return !x->sse_on && x->rbody_total > (x->json_on ? c->l->o.max_message : HL_KEEP_BODY_MAX);
}

/*
 * Bytes a gzip or deflate body's decoder cannot decode (after a failure, or a
 * gap in an SSE stream) and no gap row said yet: one now (under mu).
 */
static void undecoded_gap(struct hl_log *l, struct hl_exch *x, size_t cut_event)
{
	struct hdec *d = x->dec;
	uint64_t n = d->undecoded - d->undecoded_said;
	char why[240];

	if (!n && !cut_event)
		return;
	if (d->st == DEC_FAILED && !d->undecoded_said)
		snprintf(why, sizeof(why),
			 "cannot decode the %s body: %s: %llu bytes of it (as sent) are not "
			 "stored%s",
			 coding_str(d->coding), d->why, (unsigned long long)n,
			 cut_event ? ", nor the event they cut" : "");
	else if (d->st == DEC_FAILED)
		snprintf(why, sizeof(why),
			 "%llu more bytes of the %s body (as sent) that cannot be decoded are not "
			 "stored",
			 (unsigned long long)n, coding_str(d->coding));
	else
		snprintf(why, sizeof(why),
			 "%llu bytes of the %s body (as sent) after bytes not captured cannot be "
			 "decoded: they are not stored",
			 (unsigned long long)n, coding_str(d->coding));
	d->undecoded_said = d->undecoded;
	log_gap(l, x->sess, WS_S2C, n + cut_event, why);
}

void hl_response_body(struct hl_log *l, struct hl_exch *x, const char *p, size_t n)
{
	struct hdec *d = x->dec;

	if (!d) {
		response_body(l, x, p, n);
	} else {
		struct sse_ctx c = {l, x};
		enum dec_state was = d->st;
		dec_push(d, p, n, decoded_body, &c);
		if (d->st == DEC_FAILED && was != DEC_FAILED) {
			note_add(x, "cannot decode the %s body: %s", coding_str(d->coding), d->why);
			if (x->sse_on) {
				/* The event in progress is lost with the rest: said now, as a
				 * gap in a stream is (what follows, at hl_end). */
				size_t left = x->skip_block ? 0 : mt_sse_close(&x->sse, on_sse_event, &c);
				x->skip_block = 1;
				pthread_mutex_lock(&l->mu);
				undecoded_gap(l, x, left);
				pthread_mutex_unlock(&l->mu);
			}
		}
	}
	exch_recount(l, x);
}

void hl_response_gap(struct hl_log *l, struct hl_exch *x, uint64_t n)
{
	char why[160];

	if (!n)
		return;
	x->body_lost += n;
	if (x->dec)
		dec_cut(x->dec); /* (compressed data cannot be read on after a gap) */
	if (x->sse_on) {
		/* The event in progress is cut: dropped, and what follows up to the
		 * next blank line with it. Even between events: where the gap ends
		 * is not known, and the rest of an event is no event (unless the body
		 * goes on at a chunk's start that begins one: hl_response_resync). */
		struct sse_ctx c = {l, x};
		size_t left = x->skip_block ? 0 : mt_sse_close(&x->sse, on_sse_event, &c);
		x->skip_block = 1;
		x->skip_nl = 0;
		x->skip_cr = 0;
		x->resync = 0;
		x->nrs = 0;
		snprintf(why, sizeof(why), "%llu bytes of an SSE stream were not captured%s",
			 (unsigned long long)n, left ? " (the event they cut is lost)" : "");
		pthread_mutex_lock(&l->mu);
		log_gap(l, x->sess, WS_S2C, n + left, why);
		pthread_mutex_unlock(&l->mu);
		exch_recount(l, x);
		return;
	}
	/* Another body: it is cut (stored as a gap at its end). */
}

void hl_response_resync(struct hl_log *l, struct hl_exch *x)
{
	(void)l;
	if (x->sse_on && x->skip_block && !x->dec) {
		x->resync = 1;
		x->nrs = 0;
	}
}

void hl_end(struct hl_log *l, struct hl_exch *x, const char *outcome, const char *error)
{
	const char *kept = NULL;
	size_t kept_len = 0;
	char why[240], err[600];
	struct mt_class rc;
	enum mt_kind rk;
	struct hdec *d = x->dec;
	/* The body's bytes as sent (a coded one's, compressed). */
	uint64_t sent = d ? d->in : x->rbody_total;

	if (x->sse_init) {
		struct sse_ctx c = {l, x};
		size_t left = x->skip_block ? 0 : mt_sse_close(&x->sse, on_sse_event, &c);
		if (left && !error)
			error = "the stream ended inside an event (no blank line after it)";
	}
	if (d && dec_short(d) && !x->body_lost && outcome && !strcmp(outcome, "complete"))
		note_add(x, "the %s body ended before its compressed data did", coding_str(d->coding));
	if (x->opaque && (x->rbody_total || x->body_lost))
		note_add(x, "the response body's Content-Encoding (%s) is not decoded: kept as sent",
			 x->coding);
	pthread_mutex_lock(&l->mu);
	if (!x->head_in && x->body_lost) {
		snprintf(why, sizeof(why), "%llu bytes of a response were not captured: its head is lost",
			 (unsigned long long)x->body_lost);
		log_gap(l, x->sess, WS_S2C, x->body_lost, why);
	} else if (x->head_in && x->sse_on && d) {
		undecoded_gap(l, x, 0); /* (after a failure or a gap, what came since) */
	} else if (x->head_in && !x->sse_on && (sent || x->body_lost)) {
		if (x->body_lost) {
			snprintf(why, sizeof(why),
				 "%llu bytes of a response body were not captured: it is not stored",
				 (unsigned long long)x->body_lost);
			log_gap(l, x->sess, WS_S2C, sent + x->body_lost, why);
		} else if (d && d->st == DEC_FAILED) {
			/* What was decoded is kept, the rest is a gap. */
			kept = x->rbody.data;
			kept_len = x->rbody.len < HL_KEEP_BODY_MAX ? x->rbody.len : HL_KEEP_BODY_MAX;
			undecoded_gap(l, x, 0);
		} else if (d && d->st == DEC_ENOUGH && x->json_on) {
			l->st.over_max++;
			snprintf(why, sizeof(why),
				 "a %s response body (%llu bytes as sent) is larger than --max-message "
				 "(%zu) once decoded",
				 coding_str(d->coding), (unsigned long long)sent, l->o.max_message);
			log_gap(l, x->sess, WS_S2C, sent, why);
		} else if (!x->opaque && x->rbody_total <= l->o.max_message &&
			   x->rbody.len == x->rbody_total &&
			   (rk = mt_classify(x->rbody.data, x->rbody.len, &rc)) != MT_INVALID &&
			   rk != MT_NOTJSONRPC) {
			log_message(l, x, WS_S2C, "body", x->rbody.data, x->rbody.len, NULL, NULL, 0, &rc);
		} else if (x->json_on && x->rbody_total > l->o.max_message) {
			l->st.over_max++;
			snprintf(why, sizeof(why),
				 "a response body of %zu bytes is larger than --max-message (%zu)",
				 x->rbody_total, l->o.max_message);
			log_gap(l, x->sess, WS_S2C, x->rbody_total, why);
		} else {
			kept = x->rbody.data;
			kept_len = x->rbody.len < HL_KEEP_BODY_MAX ? x->rbody.len : HL_KEEP_BODY_MAX;
		}
	}
	if (x->note[0]) {
		/* What its bodies' codings did, after what the caller says. */
		if (error)
			snprintf(err, sizeof(err), "%s; %s", error, x->note);
		error = error ? err : x->note;
	}
	int64_t end_ns = clock_of(l, x->sess);
	writer_put_exchange_end(l->o.w, x->sess->h, x->seq, end_ns, outcome, error, kept, kept_len);
	touch(l, x->sess);
	x->sess->open--;
	if (!x->sess->open)
		idle_append(l, x->sess);
	/* A legacy HTTP+SSE session lives as long as the GET stream that named its
	 * endpoint: it ends with it, whoever closed it. */
	if (x->info.endpoint_stream && !x->sess->ended) {
		x->sess->ended = 1;
		hs_end(&l->tr, x->sess->num);
	}
	/* A session the server ended (DELETE, 404) ends in the store when nothing
	 * of it is open (what still names it is stored with it all the same). */
	if (x->sess->ended && !x->sess->open)
		session_end(l, x->sess);
	pthread_mutex_unlock(&l->mu);
	if (l->o.on_end) {
		struct hl_done done;
		memset(&done, 0, sizeof(done));
		done.conn = x->conn;
		done.method = x->method;
		done.path = x->path ? x->path : "";
		done.has_query = x->has_query;
		done.status = x->head_in ? x->status : 0;
		done.type = x->head_in ? resp_type(x) : NULL;
		done.rpc = x->rpc[0] ? x->rpc : NULL;
		done.messages = x->messages;
		done.ns = end_ns - x->t0;
		done.outcome = outcome ? outcome : "complete";
		done.error = error;
		l->o.on_end(l->o.on_end_ctx, &done);
	}
	free(x->path);
	if (x->sse_init)
		mt_sse_release(&x->sse);
	dec_free(x->dec); /* (zlib's memory uncounted as it goes) */
	mt_buf_release(&x->rbody);
	mt_buf_release(&x->red);
	mt_buf_release(&x->hjson);
	free(x->req_session_id);
	free(x->rpc_id);
	free(x->endpoint);
	mt_mem_sub(l->o.mem, x->counted);
	free(x);
}

void hl_session_gap(struct hl_log *l, int64_t sess, enum writer_stream s, uint64_t n, const char *why)
{
	pthread_mutex_lock(&l->mu);
	if (sess > 0 && (size_t)sess < l->nsess && l->sess[sess])
		log_gap(l, l->sess[sess], s, n, why);
	pthread_mutex_unlock(&l->mu);
}

void hl_gap_session(struct hl_log *l, int64_t conn, const char *client_addr, const char *upstream,
		    const struct hl_gap *gaps, size_t ngaps)
{
	struct hs_request hr;
	struct hsess *s;
	enum hs_kind kind;
	int created;
	int64_t num;

	if (!ngaps)
		return;
	memset(&hr, 0, sizeof(hr));
	hr.conn = conn;
	hr.method = "POST";
	hr.initialize = 1; /* (a session of the connection's own, as an initialize starts) */
	pthread_mutex_lock(&l->mu);
	num = hs_request(&l->tr, &hr, &created, &kind);
	s = created || (size_t)num >= l->nsess || !l->sess[num]
		    ? session_new(l, num, HS_HTTP, client_addr, upstream)
		    : l->sess[num];
	if (created)
		l->st.sessions_gaps++;
	for (size_t i = 0; i < ngaps; i++)
		log_gap(l, s, gaps[i].s, gaps[i].bytes, gaps[i].why);
	pthread_mutex_unlock(&l->mu);
}

const struct hl_info *hl_info(const struct hl_exch *x)
{
	return &x->info;
}

size_t hl_reclaim(struct hl_log *l, size_t need)
{
	size_t freed = 0;

	pthread_mutex_lock(&l->mu);
	while (freed < need && l->idle_head) {
		struct hsess *s = l->idle_head;
		freed += s->seen_counted;
		idle_unlink(l, s);
		mt_map_release(&s->seen);
		seen_recount(l, s);
		l->st.ids_forgotten++;
	}
	pthread_mutex_unlock(&l->mu);
	return freed;
}

void hl_stats(struct hl_log *l, struct hl_stats *out)
{
	pthread_mutex_lock(&l->mu);
	*out = l->st;
	pthread_mutex_unlock(&l->mu);
}
