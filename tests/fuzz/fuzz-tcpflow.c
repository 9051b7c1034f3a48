/*
 * fuzz-tcpflow.c - libFuzzer target for the TCP reassembler (tap/pcap/tcpflow.h).
 *
 * The first two bytes choose the limits (small ones, so that every bound is
 * hit); the rest is a list of steps. Raw steps hand a packet of input bytes
 * on one of the link types (or an unknown one), cut or not, to a first
 * reassembler. Crafted steps make TCP segments (tests/peers/pktcraft.h) on 4
 * connections, IPv4 or IPv6, any flags, sequence numbers near a base the
 * input picks (the wrap included), payloads cut or not, whole or as IP
 * fragments in any order, and time steps (small ones, jumps of hours, and
 * one packet now and then stamped years away) and swaps, for a second one.
 * A crafted payload byte is its sequence number's low byte plus a salt of
 * its direction, so every stream delivered must go up by one a byte, and by
 * n over a gap of n: the bytes come in order, once, the first copy winning.
 *
 * Checks, for both: connections open once, numbered 1, 2, ...; nothing is
 * delivered for a closed one and nothing is empty; each is closed once; the
 * counts of gaps and connections agree with what the handler saw, and so do
 * the counts of connections closed as idle, evicted (for max_flows or the
 * memory budget) and reused; a data call's ack is unknown or no more than
 * the other direction's data and gaps added up to; every time given is one
 * a packet (or tf_finish) had; after each packet, what is counted against
 * the budget is within it unless no connection is left open; once freed,
 * nothing is counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/util.h"
#include "tap/pcap/tcpflow.h"
#include "tests/peers/pktcraft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXN 4096 /* connections followed (numbers past it are only counted) */

struct run {
	int crafted; /* check the bytes */
	uint64_t opened, closed, gaps, gap_bytes;
	uint64_t how[TF_MEMORY + 1];      /* closes of each kind */
	uint8_t state[MAXN];              /* 0 unknown, 1 open, 2 closed */
	struct tf_end first_client[MAXN]; /* the client as opened (a swap changes c->client) */
	uint64_t sent[MAXN][2];           /* data and gap bytes of each end: 0 the first client */
	int64_t tmin, tmax;               /* the times handed in, clamped as tcpflow does */
	int timed;
	int known[MAXN][2]; /* expect holds the next byte's value */
	uint8_t expect[MAXN][2];
	struct tf *t;
	int swap_next;
	uint16_t ip_id;
	struct mt_mem mem; /* the budget's counter (tf_handler.mem) */
	size_t budget;     /* tf_limits.total_bytes */
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-tcpflow: %s\n", what);
	abort();
}

static void *on_open(void *ctx, const struct tf_conn *c)
{
	struct run *r = ctx;

	if (c->num != ++r->opened)
		fail("connections not numbered in order");
	if (c->num < MAXN) {
		r->state[c->num] = 1;
		r->first_client[c->num] = c->client;
	}
	return r;
}

/* Which end sends direction d of c: 0 the client as it was opened, 1 the other. */
static int end_of(const struct run *r, const struct tf_conn *c, enum tf_dir d)
{
	const struct tf_end *e = d == TF_C2S ? &c->client : &c->server;
	const struct tf_end *f = &r->first_client[c->num];

	return !(e->port == f->port && !memcmp(e->addr, f->addr, sizeof(e->addr)));
}

static void check_time(const struct run *r, int64_t us)
{
	if (!r->timed || us < r->tmin || us > r->tmax)
		fail("a time no packet had");
}

static void check_open(struct run *r, const struct tf_conn *c)
{
	if (c->num == 0 || c->num > r->opened)
		fail("a call for a connection never opened");
	if (c->num < MAXN && r->state[c->num] != 1)
		fail("a call for a closed connection");
}

/* Whether the bytes of direction d come from port 3001 (a swap changes d, not this). */
static int sender_is_server(const struct tf_conn *c, enum tf_dir d)
{
	return (d == TF_C2S ? c->client.port : c->server.port) == 3001;
}

static void on_data(void *st, const struct tf_conn *c, enum tf_dir d, const uint8_t *p, size_t n, int64_t us,
		    uint64_t ack)
{
	struct run *r = st;

	check_open(r, c);
	check_time(r, us);
	if (!n)
		fail("empty data");
	if (c->num < MAXN) {
		int k = end_of(r, c, d);
		if (ack != TF_ACK_UNKNOWN && ack > r->sent[c->num][!k])
			fail("an ack past what the other direction delivered");
		r->sent[c->num][k] += n;
	}
	if (r->crafted && c->num < MAXN) {
		int side = sender_is_server(c, d);
		uint8_t *e = &r->expect[c->num][side];
		if (!r->known[c->num][side]) {
			*e = p[0];
			r->known[c->num][side] = 1;
		}
		for (size_t i = 0; i < n; i++, (*e)++)
			if (p[i] != *e)
				fail("a stream out of order");
	}
	if (r->swap_next) {
		r->swap_next = 0;
		tf_swap(r->t, c);
	}
}

static void on_gap(void *st, const struct tf_conn *c, enum tf_dir d, uint64_t n, int64_t us)
{
	struct run *r = st;

	check_open(r, c);
	check_time(r, us);
	if (!n)
		fail("empty gap");
	r->gaps++;
	r->gap_bytes += n;
	if (c->num < MAXN)
		r->sent[c->num][end_of(r, c, d)] += n;
	if (r->crafted && c->num < MAXN) {
		int side = sender_is_server(c, d);
		r->expect[c->num][side] = (uint8_t)(r->expect[c->num][side] + n);
	}
}

static void on_close(void *st, const struct tf_conn *c, enum tf_end_how how, int64_t us)
{
	struct run *r = st;

	check_open(r, c);
	check_time(r, us);
	if ((unsigned)how > TF_MEMORY)
		fail("a close of no kind");
	r->how[how]++;
	if (c->num < MAXN)
		r->state[c->num] = 2;
	r->closed++;
}

static void end_run(struct run *r)
{
	struct tf_stats s;

	r->tmax = INT64_MAX / 4;
	tf_finish(r->t, INT64_MAX / 4);
	tf_stats(r->t, &s);
	if (r->closed != r->opened)
		fail("connections left open at the end");
	if (s.connections != r->opened || s.gaps != r->gaps || s.gap_bytes != r->gap_bytes)
		fail("counts that differ from what the handler saw");
	if (s.midstream > s.connections || s.evicted_full + s.evicted_idle > s.connections)
		fail("counts that do not add up");
	if (s.evicted_idle != r->how[TF_IDLE] || s.evicted_full != r->how[TF_EVICTED] ||
	    s.reused != r->how[TF_REUSED] || s.evicted_memory != r->how[TF_MEMORY])
		fail("closes that differ from their counts");
	if (s.ack_gaps > s.gaps)
		fail("more gaps for ACKs than gaps");
	if (s.reassembled > s.fragments)
		fail("more datagrams than fragments");
	tf_free(r->t);
	if (r->mem.used)
		fail("bytes still counted once all is freed");
}

/* After a packet: within the budget, or nothing left to give up. */
static void after_packet(struct run *r)
{
	if (r->mem.used > r->budget && r->opened != r->closed)
		fail("over the memory budget with connections open");
}

static const int links[] = {DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_NULL, DLT_LOOP,
			    DLT_RAW,    101,           DLT_IPV4,       DLT_IPV6, 147};
#define NLINKS (sizeof(links) / sizeof(links[0]))

/* A packet's time: tf_packet's clamping, remembered. */
static int64_t stamp(struct run *r, int64_t us)
{
	if (us > INT64_MAX / 4)
		us = INT64_MAX / 4;
	if (us < -(INT64_MAX / 4))
		us = -(INT64_MAX / 4);
	if (!r->timed || us < r->tmin)
		r->tmin = us;
	if (!r->timed || us > r->tmax)
		r->tmax = us;
	r->timed = 1;
	return us;
}

static int64_t skew; /* added to the next packet's time only */

/* The input, read from the front; zeros once it runs out. */
struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static uint16_t u16(struct in *in)
{
	uint16_t v = u8(in);

	return (uint16_t)(v << 8 | u8(in));
}

static void put_frame(struct run *r, int lt, int64_t us, const uint8_t *ip, size_t n, size_t cut, int tags)
{
	static uint8_t f[PK_MAX];
	size_t m = pk_frame(f, lt, tags, ip, n);
	size_t cap = cut && cut < m ? m - cut : m;
	/* an exact copy, so that ASan sees a read past what was captured */
	uint8_t *copy = malloc(cap ? cap : 1);

	memcpy(copy, f, cap);
	tf_packet(r->t, lt, stamp(r, us + skew), m, copy, cap);
	after_packet(r);
	skew = 0;
	free(copy);
}

/* One crafted step. */
static void crafted(struct run *r, struct in *in, uint32_t base[4][2], int64_t *now)
{
	static uint8_t ip[PK_MAX], fr[PK_MAX], pay[PK_MAX];
	struct pk_seg s;
	uint8_t a = u8(in), b = u8(in);
	int conn = a & 3, c2s = a >> 2 & 1, v6 = a >> 3 & 1, lt = links[(a >> 4) % 9];
	size_t n, len, cut;
	uint32_t seq;

	if (lt == DLT_IPV4 && v6)
		lt = DLT_IPV6;
	if (lt == DLT_IPV6 && !v6)
		lt = DLT_IPV4;
	memset(&s, 0, sizeof(s));
	s.v6 = v6;
	s.src[0] = s.dst[0] = v6 ? 0xfd : 10;
	s.src[3] = s.dst[3] = 9;
	s.src[15] = c2s ? 1 : 2;
	s.dst[15] = c2s ? 2 : 1;
	if (!v6) {
		s.src[3] = c2s ? 1 : 2;
		s.dst[3] = c2s ? 2 : 1;
	}
	s.sport = c2s ? (uint16_t)(40000 + conn) : 3001;
	s.dport = c2s ? 3001 : (uint16_t)(40000 + conn);
	s.flags = b & 0x17;
	seq = base[conn][c2s] + (uint32_t)(int16_t)u16(in);
	s.seq = seq;
	s.ack = base[conn][!c2s] + u8(in);
	len = (size_t)u8(in) * (b & 0x80 ? 16 : 1);
	s.tcp_opts = b >> 5 & 1;
	s.v6_ext = v6 && (b >> 6 & 1);
	s.ip_id = ++r->ip_id; /* one datagram per id: a clash would mix two */
	/* byte i: the low byte of its sequence number, salted by side */
	for (size_t i = 0; i < len; i++)
		pay[i] = (uint8_t)(seq + (s.flags & PK_SYN ? 1 : 0) + i + (c2s ? 0 : 0x55));
	s.data = pay;
	s.len = len;
	n = pk_ip(ip, &s);
	cut = u8(in);
	cut = cut < 200 ? 0 : cut - 200;
	if (b & 0x08 && n > 48) {
		/* fragments: up to 4 pieces of 8-byte steps, in an order the input picks */
		size_t hl = v6 ? 40 : 20, body = n - hl, pieces = 1 + (u8(in) & 3);
		size_t step = (body / pieces + 7) & ~(size_t)7;
		uint8_t order = u8(in);
		if (!step)
			step = 8;
		for (size_t j = 0; j < pieces; j++) {
			size_t i = (j + order) % pieces, off = i * step;
			if (off >= body)
				continue;
			size_t fl = body - off < step ? body - off : step;
			size_t k = pk_frag(fr, ip, n, off, fl, off + fl < body, s.ip_id);
			put_frame(r, lt, *now, fr, k, j == 0 ? cut : 0, 0);
		}
	} else {
		put_frame(r, lt, *now, ip, n, cut, a >> 6 & 3);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run raw, cr;
	struct tf_handler h = {NULL, on_open, on_data, on_gap, on_close, NULL};
	struct tf_limits l;
	struct in in = {data, size};
	uint32_t base[4][2];
	int64_t now = 0;
	uint8_t b0 = u8(&in), b1 = u8(&in);

	tf_limits_default(&l);
	l.flow_bytes = 64 + (size_t)(b0 & 15) * 96;
	/* (The hash tables take 2 kB, and 8 kB more at the first fragment.) */
	l.total_bytes = 11264 + (size_t)(b0 >> 4) * 400;
	l.max_flows = 1 + (b1 & 3);
	l.idle_ms = b1 & 4 ? 0 : 1 + (b1 >> 3);
	l.frag_bytes = 100 + (size_t)(b1 >> 3) * 64;
	memset(&raw, 0, sizeof(raw));
	memset(&cr, 0, sizeof(cr));
	skew = 0;
	cr.crafted = 1;
	raw.budget = cr.budget = l.total_bytes;
	h.ctx = &raw;
	h.mem = &raw.mem;
	raw.t = tf_new(&l, &h);
	h.ctx = &cr;
	h.mem = &cr.mem;
	cr.t = tf_new(&l, &h);
	for (int k = 0; k < 4; k++) {
		base[k][0] = (uint32_t)u16(&in) << 16 | 0xff00;
		base[k][1] = (uint32_t)u16(&in) << 16;
	}
	while (in.n) {
		uint8_t op = u8(&in);
		switch (op & 3) {
		case 0: { /* a raw packet */
			size_t len = u8(&in), extra = op & 4 ? u8(&in) : 0;
			if (len > in.n)
				len = in.n;
			uint8_t *copy = malloc(len ? len : 1);
			memcpy(copy, in.p, len);
			tf_packet(raw.t, links[(op >> 3) % NLINKS], stamp(&raw, now + skew), len + extra,
				  copy, len);
			after_packet(&raw);
			skew = 0;
			free(copy);
			in.p += len;
			in.n -= len;
			break;
		}
		case 1:
		case 2: crafted(&cr, &in, base, &now); break;
		default: { /* time goes on (or back), or the next packet is years away; a swap */
			int64_t step = (int64_t)(int8_t)u8(&in) * 1000 * (op & 4 ? 100 : 1);
			if (op & 32)
				skew = step * 1000000 * 365; /* (years: 127 at most) */
			else
				now += op & 16 ? step * 1000 : step; /* (hours: 3.5 at most) */
			if (op & 8)
				cr.swap_next = raw.swap_next = 1;
			break;
		}
		}
	}
	end_run(&raw);
	end_run(&cr);
	return 0;
}
