/*
 * tcpflow.c - TCP streams rebuilt from captured packets (see tcpflow.h).
 *
 * A packet goes down the layers once: link header, IPv4 or IPv6 (extension
 * headers walked, fragments put together), TCP. A segment that continues its
 * stream is handed to the data callback where it lies in the packet, with no
 * copy and no allocation; only segments that come before the bytes they
 * follow, and IP fragments, are copied and held.
 *
 * Where the header leaves room, this is what it does:
 *
 *   - A connection is opened by a SYN, a SYN-ACK (its receiver is the
 *     client) or a segment carrying payload; a packet without payload for an
 *     unknown connection (an ACK, a FIN, a RST after the connection closed) is
 *     ignored. A SYN (no ACK) on an open connection whose ISN differs from the
 *     one known is a new connection on the same 4-tuple: the old one is
 *     closed first (TF_REUSED, counted in reused).
 *   - Seen from the middle, the client is the end with the higher port, then
 *     the higher address (bytes compared in network order).
 *   - A connection is closed (TF_FIN) when both FINs came and no byte before
 *     either is missing, or at a RST (TF_RST); what it holds then is
 *     delivered, its holes as gaps. When bytes before a FIN are missing (a
 *     FIN captured before the data it follows), it waits for them: a segment
 *     that fills the hole or an ACK past it (a gap) ends the wait, or at
 *     most FIN_WAIT_US of capture time, after which the holes, and the one
 *     between the last byte seen and a FIN, are gaps; whatever ends a
 *     waiting connection, it ends as TF_FIN (not counted as idle, evicted or
 *     reused).
 *   - A connection closed by FIN or RST is remembered (struct gone: its
 *     4-tuple, initial sequence numbers and the offsets its streams ended
 *     at) for GONE_KEEP_US of capture time, at most max_flows of them (the
 *     oldest is forgotten first). A segment on its 4-tuple is its own, and
 *     dropped: retransmitted when it brings nothing past the ends, late when
 *     it does (sent after the FIN, or in flight at the RST); an ACK, FIN or
 *     RST, or its own SYN again, is ignored. A SYN with another ISN, or
 *     payload more than LATE_WINDOW away from its ranges, starts a new
 *     connection and the record is forgotten; so does any segment once it
 *     is.
 *   - Bytes past a FIN are not part of the stream and are dropped; a FIN
 *     before bytes already delivered is ignored (the first FIN stays).
 *   - Held bytes (flow_bytes) count each held segment's payload plus
 *     SEG_COST for its bookkeeping. A segment that would take a flow past
 *     flow_bytes makes the flow give up its first hole (a gap, then the
 *     bytes that follow it), again until it fits, or until the segment itself
 *     is next; flow_limit_hits counts the segments that did this.
 *   - The budget (total_bytes) counts held bytes so, and every connection,
 *     closed connection remembered, fragment (FRAG_COST each, as frag_bytes
 *     does), datagram and hash table as allocated (MT_MEM_CHUNK more each),
 *     with what the handler counts in tf_handler.mem. It is checked when a
 *     connection is made, when a segment would be held, and after each
 *     packet (for what the handler's state grew by). When it is passed
 *     (total_limit_hits counts the times), room is made down to
 *     TF_ROOM_SLACK below it (room for what comes next too): closed
 *     connections remembered are forgotten (oldest first), mem->reclaim is
 *     asked for the handler's memory kept apart from any connection,
 *     fragments are dropped (oldest first), then the connections seen
 *     longest ago are closed (TF_MEMORY, evicted_memory), never the one
 *     whose segment is being read. A segment that still does not fit makes
 *     the flows holding bytes give up their oldest holes (by then, its own
 *     connection's), and is not held when none is left (its hole a gap at
 *     once). What one packet adds between two checks (its payload, the bytes
 *     held before it that it releases, what the handler keeps of them) may
 *     pass the budget until the packet's end. Connections are also closed to
 *     make room for max_flows (TF_EVICTED; a limit of 0 is taken as 1).
 *   - A segment cut by the snap length: if it continues the stream, its
 *     captured part is delivered and the rest is a gap at once; if it comes
 *     early, only its captured part is held (the rest is a hole as any other).
 *   - A segment whose ACK covers bytes of the other direction not yet
 *     delivered (they reached that end; the capture missed them) gives them
 *     up at once, before its own payload: a gap up to the first byte held
 *     (ack_gaps counts it), the held bytes, again up to what it acknowledged.
 *     An ACK more than ACK_TAIL_MAX past every byte seen of that direction is
 *     not believed: nothing is given up and the data call says
 *     TF_ACK_UNKNOWN. So a data call's ack is never more than the data and
 *     gap calls of the other direction added up to when it is made.
 *   - A data call's ack is the ACK number of the segment that brought the
 *     bytes (bytes held keep their segment's), as an offset in the other
 *     direction: its FIN not counted, 0 for a number before its start;
 *     TF_ACK_UNKNOWN when the segment has no ACK flag or no byte of the other
 *     direction (nor its SYN) was seen yet.
 *   - retransmitted counts segments with payload of which at least one byte
 *     was delivered or held before; out_of_order counts segments with payload
 *     that came past a hole (held, or dropped when nothing of them was
 *     captured).
 *   - Times: the callbacks are given each packet's own capture time (bytes
 *     that waited keep the time of the packet that brought them; a gap has
 *     the time of the packet it was given up at, or the clock's when a
 *     timeout gave it up: idle, a FIN's wait). Times are clamped to
 *     +-INT64_MAX / 4.
 *     Idleness and the timeouts (FIN waits, closed connections remembered,
 *     fragments) are judged by a clock: the latest time seen, except that a
 *     packet more than JUMP_US ahead of it or behind it is doubted (one
 *     wrong timestamp, or an unsorted merge of captures, would close every
 *     connection as idle): the clock goes there only when JUMP_CONFIRM
 *     packets in a row are that far on the same side, to the one nearest to
 *     it; what those packets touched counts as seen at the new time, and
 *     after a jump back nothing counts as seen later than it. A small step
 *     back leaves it where it is. A connection is idle when more than
 *     idle_ms of the clock passed since its last packet; it is closed when
 *     the next packet (of any connection) comes. idle_ms <= 0 turns idle
 *     closing off. tf_finish closes at its time, or, when that is more than
 *     JUMP_US past the clock, at the clock (at a connection's own latest
 *     time when that is later).
 *   - IP fragments are held at most FRAG_TIMEOUT_US of capture time from the
 *     first one of their datagram; frag_bytes counts the captured bytes held
 *     plus FRAG_COST per piece; room is made by dropping the oldest
 *     datagrams. Overlapping fragments: the first copy wins. A fragment of a
 *     protocol other than TCP is counted in not_tcp, not held. A datagram
 *     whose fragments were cut by the snap length is put together from the
 *     captured bytes up to the first cut; TCP then sees the rest as cut.
 *     fragments counts the fragments taken for reassembly; each of them ends
 *     in a reassembled datagram or in frag_dropped.
 *   - IP and TCP checksums are not checked (offloading makes captured ones
 *     wrong). An IPv4 total length or IPv6 payload length of 0 (segmentation
 *     offload) means the rest of the frame.
 *   - packets counts every call of tf_packet, bytes their captured bytes,
 *     truncated those captured shorter than they were on the wire.
 *   - When a connection ends, the client's direction is flushed first.
 *   - Each packet that cannot be used is counted once, in the first of
 *     bad_link, not_ip, not_tcp, malformed that applies; a packet cut before
 *     the headers it needs is counted in truncated only.
 *   - A NULL link header's family is read in this machine's order, and in
 *     the other when that is not a known family (a file from a machine of the
 *     other byte order).
 *
 * Callbacks may call tf_swap, and nothing else of this module.
 */
#include "tap/pcap/tcpflow.h"

#include <arpa/inet.h>
#include <pcap/dlt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "schema/util.h"

#define SEG_COST 64                      /* a held segment's bookkeeping, in bytes */
#define FRAG_COST 64                     /* a held fragment piece's */
#define FRAG_TIMEOUT_US (30 * 1000000LL) /* Linux's ipfrag_time */
#define MAX_VLAN 8                       /* tags skipped in one frame */
#define MAX_EXT 16                       /* IPv6 extension headers walked */
#define FRAG_BUCKETS 1024
#define LINKTYPE_RAW 101         /* raw IP as pcap files say it */
#define TIME_MAX (INT64_MAX / 4) /* capture times are clamped to +-this */
#define ACK_TAIL_MAX \
	(1 << 20)                     /* bytes acknowledged past all seen of a direction
				       * that are taken as lost (more: a wrong number) */
#define GONE_KEEP_US (60 * 1000000LL) /* a closed connection is remembered (TIME_WAIT's) */
#define FIN_WAIT_US 1000000LL         /* both FINs seen, a hole before one: its wait */
#define LATE_WINDOW \
	(1 << 24)                /* bytes around a closed connection's ranges taken
				  * as its own */
#define JUMP_US (60 * 1000000LL) /* a packet this far from the clock is doubted */
#define JUMP_CONFIRM 3           /* packets in a row that far move the clock */

#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10

/* Bytes held out of order in one direction, sorted and not overlapping. */
struct seg {
	struct seg *next;
	int64_t start; /* stream offset of data[0] */
	size_t len;
	int64_t us;   /* when it was captured */
	uint64_t ack; /* what its segment acknowledged of the other direction (tf_handler.data) */
	uint8_t data[];
};

/* One direction of a connection: the bytes one end sends. */
struct half {
	struct conn *conn; /* borrowed: the connection it belongs to */
	uint32_t base;     /* the sequence number of stream offset 0 */
	int64_t next;      /* the stream offset of the next byte to deliver */
	int64_t fin_off;   /* the FIN's stream offset, when fin */
	int64_t hi;        /* the end of the furthest segment seen */
	unsigned based : 1, fin : 1;
	struct seg *head, *tail;    /* held segments (owned) */
	size_t held;                /* their payload + SEG_COST each */
	struct half *hprev, *hnext; /* in the tf's holding list while held > 0 */
};

struct conn {
	struct tf_conn c;   /* what the handler sees; client and server follow cli */
	struct tf_end e[2]; /* the ends in canonical order (port, then address) */
	int cli;            /* the index of the client in e */
	struct half h[2];   /* h[i]: the bytes e[i] sends */
	void *state;        /* the handler's */
	uint64_t hash;
	struct conn *chain;         /* next in the hash bucket */
	struct conn *lprev, *lnext; /* least recently seen first */
	int64_t last_us;            /* the clock at its last packet */
	uint64_t last_pkt;          /* the number of that packet (tf_stats.packets) */
	int64_t seen_us;            /* the latest capture time of its packets */
	unsigned waiting : 1;       /* both FINs seen, bytes before one still missing */
	int64_t wait_until;         /* when waiting: closed at this time, holes as gaps */
	struct conn *wprev, *wnext; /* when waiting: in the tf's waiting list, oldest first */
};

/*
 * A connection closed by FIN or RST, remembered for GONE_KEEP_US: segments
 * that come late on its 4-tuple are its own, not a new connection.
 */
struct gone {
	struct gone *chain;       /* next in the hash bucket */
	struct gone *prev, *next; /* oldest first */
	uint64_t hash;
	struct tf_end e[2]; /* as the connection's */
	uint32_t base[2];   /* as the connection's halves' */
	int64_t end[2];     /* the stream offset each direction ended at */
	unsigned based[2];
	int64_t until; /* forgotten at this clock time */
	uint64_t pkt;  /* the number of the packet that closed it */
};

/* A piece of an IP datagram being put together. */
struct fpiece {
	struct fpiece *next;
	uint32_t off, len; /* the bytes it covers in the datagram's payload */
	uint32_t cap;      /* of them, captured (from off on) */
	uint8_t data[];
};

struct dgram {
	struct dgram *chain;       /* next in the hash bucket */
	struct dgram *prev, *next; /* oldest first */
	uint64_t hash;
	int family;
	uint8_t src[16], dst[16];
	uint32_t id;
	uint8_t proto;    /* IPv4: the protocol; IPv6: the next header */
	int64_t first_us; /* the clock at its first fragment */
	uint64_t pkt;     /* the number of that packet */
	uint32_t total;   /* payload size, once the last fragment came */
	unsigned have_last : 1;
	struct fpiece *pieces; /* sorted, not overlapping (owned) */
	size_t cost;
	uint64_t nfrags; /* fragments taken into it */
};

struct tf {
	struct tf_limits lim;
	struct tf_handler h;
	struct tf_stats st;
	struct mt_mem own;  /* what is counted when the handler has no counter */
	struct mt_mem *mem; /* the handler's counter, or own: the budget's */
	int64_t now;        /* the clock: idleness and timeouts are judged by it */
	int has_now;
	int jumps, jump_dir; /* packets in a row far from the clock, and on which side
			      * (1 ahead, -1 behind) */
	int64_t jump_us;     /* of them, the time nearest to the clock */
	uint64_t jump_pkt;   /* the number of the first of them */
	uint64_t seed;
	struct conn **bucket; /* owned, nbucket entries (a power of two) */
	size_t nbucket, nconn;
	struct conn *lru_head, *lru_tail;
	struct half *hold_head, *hold_tail; /* halves holding bytes, oldest first */
	size_t held;                        /* all halves' held */
	struct dgram **fbucket;             /* owned, FRAG_BUCKETS entries, made at the first fragment */
	struct dgram *fhead, *ftail;        /* oldest first */
	size_t fheld;
	struct conn *wait_head, *wait_tail; /* waiting connections, oldest first */
	struct gone **gbucket;              /* owned, ngbucket entries (a power of two), made at the
					     * first closed connection */
	size_t ngbucket, ngone;             /* ngone <= max_flows */
	struct gone *ghead, *gtail;         /* oldest first (owned) */
};

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

static uint64_t mix_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = 0;
		memcpy(&v, p + i, n - i < 8 ? n - i : 8);
		h = mix(h, v);
	}
	return h;
}

void tf_limits_default(struct tf_limits *l)
{
	l->flow_bytes = 4u << 20;
	l->total_bytes = 256u << 20;
	l->max_flows = 100000;
	l->idle_ms = 300000;
	l->frag_bytes = 16u << 20;
}

struct tf *tf_new(const struct tf_limits *l, const struct tf_handler *h)
{
	struct tf *t = mt_calloc(1, sizeof(*t));

	t->lim = *l;
	if (!t->lim.max_flows)
		t->lim.max_flows = 1;
	t->h = *h;
	t->mem = h->mem ? h->mem : &t->own;
	t->seed = mix((uint64_t)(uintptr_t)t, (uint64_t)mt_mono_ns());
	t->nbucket = 256;
	t->bucket = mt_calloc(t->nbucket, sizeof(*t->bucket));
	mt_mem_size(t->mem, 0, t->nbucket * sizeof(*t->bucket));
	return t;
}

/* ---- delivery ---- */

static enum tf_dir dir_of(const struct conn *c, int i)
{
	return i == c->cli ? TF_C2S : TF_S2C;
}

static void emit_data(struct tf *t, struct conn *c, int i, const uint8_t *p, size_t n, int64_t us,
		      uint64_t ack)
{
	if (n && t->h.data)
		t->h.data(c->state, &c->c, dir_of(c, i), p, n, us, ack);
}

static void emit_gap(struct tf *t, struct conn *c, int i, uint64_t n, int64_t us)
{
	if (!n)
		return;
	t->st.gaps++;
	t->st.gap_bytes += n;
	if (t->h.gap)
		t->h.gap(c->state, &c->c, dir_of(c, i), n, us);
}

static void hold_add(struct tf *t, struct half *h, size_t cost)
{
	if (!h->held) {
		h->hprev = t->hold_tail;
		h->hnext = NULL;
		if (t->hold_tail)
			t->hold_tail->hnext = h;
		else
			t->hold_head = h;
		t->hold_tail = h;
	}
	h->held += cost;
	t->held += cost;
	mt_mem_add(t->mem, cost);
}

static void hold_sub(struct tf *t, struct half *h, size_t cost)
{
	h->held -= cost;
	t->held -= cost;
	mt_mem_sub(t->mem, cost);
	if (h->held)
		return;
	if (h->hprev)
		h->hprev->hnext = h->hnext;
	else
		t->hold_head = h->hnext;
	if (h->hnext)
		h->hnext->hprev = h->hprev;
	else
		t->hold_tail = h->hprev;
	h->hprev = h->hnext = NULL;
}

/* Take the first held segment off the list (the caller frees it). */
static struct seg *seg_pop(struct tf *t, struct half *h)
{
	struct seg *s = h->head;

	h->head = s->next;
	if (!h->head)
		h->tail = NULL;
	hold_sub(t, h, s->len + SEG_COST);
	return s;
}

/* Deliver the held segments that now continue the stream. */
static void drain(struct tf *t, struct conn *c, int i)
{
	struct half *h = &c->h[i];
	struct seg *s;

	while (h->head && h->head->start <= h->next) {
		s = seg_pop(t, h);
		int64_t end = s->start + (int64_t)s->len;
		if (end > h->next) {
			size_t skip = (size_t)(h->next - s->start);
			h->next = end;
			emit_data(t, c, i, s->data + skip, s->len - skip, s->us, s->ack);
		}
		free(s);
	}
}

/* Give up on the first hole: a gap, then the bytes held after it. */
static void skip_hole(struct tf *t, struct conn *c, int i, int64_t us)
{
	struct half *h = &c->h[i];

	if (!h->head)
		return;
	if (h->head->start > h->next) {
		uint64_t n = (uint64_t)(h->head->start - h->next);
		h->next = h->head->start;
		emit_gap(t, c, i, n, us);
	}
	drain(t, c, i);
}

/* Everything held goes out, holes as gaps, and the hole up to a FIN. */
static void flush_half(struct tf *t, struct conn *c, int i, int64_t us)
{
	struct half *h = &c->h[i];

	while (h->head)
		skip_hole(t, c, i, us);
	if (h->fin && h->next < h->fin_off) {
		uint64_t n = (uint64_t)(h->fin_off - h->next);
		h->next = h->fin_off;
		emit_gap(t, c, i, n, us);
	}
}

/*
 * Bytes [s, e) at p that continue the stream (s <= next < e): what the held
 * segments do not already have goes out in place; held ones are delivered
 * where they fall (the first copy wins). Sets *seen when a byte was had before.
 */
static void deliver(struct tf *t, struct conn *c, int i, int64_t s, const uint8_t *p, int64_t e, int64_t us,
		    uint64_t ack, int *seen)
{
	struct half *h = &c->h[i];

	if (s < h->next) {
		*seen = 1;
		p += h->next - s;
		s = h->next;
	}
	while (s < e) {
		int64_t stop = e;
		if (h->head && h->head->start < e) {
			stop = h->head->start;
			*seen = 1;
		}
		if (stop > s) {
			h->next = stop;
			emit_data(t, c, i, p, (size_t)(stop - s), us, ack);
		}
		if (stop == e)
			break;
		drain(t, c, i);
		if (h->next >= e)
			break;
		p += h->next - s;
		s = h->next;
	}
	drain(t, c, i);
}

/* What holding [s, e) would cost: its parts no held segment has. */
static size_t hold_cost(const struct half *h, int64_t s, int64_t e, int *seen)
{
	size_t cost = 0;
	int64_t cur = s;

	if (!h->tail || h->tail->start + (int64_t)h->tail->len <= s)
		return (size_t)(e - s) + SEG_COST;
	for (const struct seg *q = h->head; q && cur < e; q = q->next) {
		int64_t qe = q->start + (int64_t)q->len;
		if (qe <= cur)
			continue;
		if (q->start >= e)
			break;
		if (q->start > cur)
			cost += (size_t)(q->start - cur) + SEG_COST;
		*seen = 1;
		cur = qe;
	}
	if (cur < e)
		cost += (size_t)(e - cur) + SEG_COST;
	return cost;
}

static struct seg *seg_new(int64_t start, const uint8_t *p, size_t n, int64_t us, uint64_t ack)
{
	struct seg *s = mt_malloc(sizeof(*s) + n);

	s->next = NULL;
	s->start = start;
	s->len = n;
	s->us = us;
	s->ack = ack;
	memcpy(s->data, p, n);
	return s;
}

/* Hold the parts of [s, e) (bytes at p) that no held segment has. */
static void hold(struct tf *t, struct half *h, int64_t s, const uint8_t *p, int64_t e, int64_t us,
		 uint64_t ack)
{
	struct seg **link = &h->head;
	int64_t cur = s;

	if (h->tail && h->tail->start + (int64_t)h->tail->len <= s)
		link = &h->tail->next;
	while (cur < e) {
		struct seg *q = *link;
		if (q && q->start + (int64_t)q->len <= cur) {
			link = &q->next;
			continue;
		}
		int64_t stop = q && q->start < e ? q->start : e;
		if (stop > cur) {
			struct seg *n = seg_new(cur, p + (cur - s), (size_t)(stop - cur), us, ack);
			n->next = q;
			*link = n;
			link = &n->next;
			if (!q)
				h->tail = n;
			hold_add(t, h, n->len + SEG_COST);
		}
		if (!q || q->start >= e)
			break;
		cur = q->start + (int64_t)q->len;
		link = &q->next;
	}
}

static int room(struct tf *t, const struct conn *keep, size_t need, int64_t us);

/*
 * A segment's payload in direction i: [s, s + len) in stream offsets, of
 * which the first cap bytes (at p) were captured; ack: what it acknowledged
 * of the other direction (tf_handler.data).
 */
static void segment(struct tf *t, struct conn *c, int i, int64_t s, const uint8_t *p, size_t cap, size_t len,
		    int64_t us, uint64_t ack)
{
	struct half *h = &c->h[i];
	int64_t e = s + (int64_t)len, ce = s + (int64_t)cap;
	int seen = 0, early = 0, flow_hit = 0, total_hit = 0;

	if (h->fin) {
		if (s >= h->fin_off)
			return;
		if (e > h->fin_off)
			e = h->fin_off;
		if (ce > e)
			ce = e;
	}
	if (e > h->hi)
		h->hi = e;
	if (e <= h->next) {
		t->st.retransmitted++;
		return;
	}
	for (;;) {
		if (s <= h->next) {
			if (ce > h->next)
				deliver(t, c, i, s, p, ce, us, ack, &seen);
			else if (s < h->next)
				seen = 1;
			/* The part not captured: known missing, a gap where nothing is held. */
			while (h->next < e) {
				int64_t stop = e;
				if (h->head && h->head->start < stop)
					stop = h->head->start;
				if (stop > h->next) {
					uint64_t n = (uint64_t)(stop - h->next);
					h->next = stop;
					emit_gap(t, c, i, n, us);
				}
				drain(t, c, i);
			}
			break;
		}
		early = 1;
		if (ce <= s)
			break; /* nothing of it captured: its range stays a hole */
		size_t cost = hold_cost(h, s, ce, &seen);
		if (!cost)
			break;
		if (h->held + cost > t->lim.flow_bytes) {
			if (!flow_hit) {
				flow_hit = 1;
				t->st.flow_limit_hits++;
			}
			if (h->head) {
				skip_hole(t, c, i, us);
			} else {
				uint64_t n = (uint64_t)(s - h->next);
				h->next = s;
				emit_gap(t, c, i, n, us);
			}
			continue;
		}
		if (t->mem->used + cost > t->lim.total_bytes) {
			if (!total_hit) {
				total_hit = 1;
				t->st.total_limit_hits++;
				if (room(t, c, cost, us))
					continue;
			}
			if (t->hold_head) {
				struct half *o = t->hold_head;
				skip_hole(t, o->conn, (int)(o - o->conn->h), us);
			} else {
				uint64_t n = (uint64_t)(s - h->next);
				h->next = s;
				emit_gap(t, c, i, n, us);
			}
			continue;
		}
		hold(t, h, s, p, ce, us, ack);
		break;
	}
	if (seen)
		t->st.retransmitted++;
	if (early)
		t->st.out_of_order++;
}

/* ---- connections ---- */

static int end_cmp(const struct tf_end *a, const struct tf_end *b)
{
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return memcmp(a->addr, b->addr, sizeof(a->addr));
}

static uint64_t conn_hash(const struct tf *t, int family, const struct tf_end *a, const struct tf_end *b)
{
	uint64_t h = mix(t->seed, (uint64_t)family);

	h = mix_bytes(h, a->addr, sizeof(a->addr));
	h = mix_bytes(h, b->addr, sizeof(b->addr));
	return mix(h, (uint64_t)a->port << 16 | b->port);
}

/* The connection of the ends (in canonical order), or NULL. */
static struct conn *conn_find(const struct tf *t, const struct tf_end *a, const struct tf_end *b,
			      uint64_t hash)
{
	for (struct conn *c = t->bucket[hash & (t->nbucket - 1)]; c; c = c->chain)
		if (c->hash == hash && c->e[0].family == a->family && !end_cmp(&c->e[0], a) &&
		    !end_cmp(&c->e[1], b))
			return c;
	return NULL;
}

static void lru_unlink(struct tf *t, struct conn *c)
{
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		t->lru_head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	else
		t->lru_tail = c->lprev;
	c->lprev = c->lnext = NULL;
}

static void lru_append(struct tf *t, struct conn *c)
{
	c->lprev = t->lru_tail;
	c->lnext = NULL;
	if (t->lru_tail)
		t->lru_tail->lnext = c;
	else
		t->lru_head = c;
	t->lru_tail = c;
}

static void grow(struct tf *t)
{
	size_t n = t->nbucket * 2;
	struct conn **b = mt_calloc(n, sizeof(*b));

	for (size_t k = 0; k < t->nbucket; k++) {
		struct conn *c = t->bucket[k], *next;
		for (; c; c = next) {
			next = c->chain;
			c->chain = b[c->hash & (n - 1)];
			b[c->hash & (n - 1)] = c;
		}
	}
	free(t->bucket);
	mt_mem_size(t->mem, t->nbucket * sizeof(*b), n * sizeof(*b));
	t->bucket = b;
	t->nbucket = n;
}

/* Free a connection's held segments without delivering them. */
static void conn_drop_held(struct tf *t, struct conn *c)
{
	for (int i = 0; i < 2; i++)
		while (c->h[i].head)
			free(seg_pop(t, &c->h[i]));
}

/* ---- closed connections, remembered ---- */

static struct gone *gone_find(const struct tf *t, const struct tf_end *a, const struct tf_end *b,
			      uint64_t hash)
{
	if (!t->gbucket)
		return NULL;
	for (struct gone *g = t->gbucket[hash & (t->ngbucket - 1)]; g; g = g->chain)
		if (g->hash == hash && g->e[0].family == a->family && !end_cmp(&g->e[0], a) &&
		    !end_cmp(&g->e[1], b))
			return g;
	return NULL;
}

static void gone_free(struct tf *t, struct gone *g)
{
	struct gone **link = &t->gbucket[g->hash & (t->ngbucket - 1)];

	while (*link != g)
		link = &(*link)->chain;
	*link = g->chain;
	if (g->prev)
		g->prev->next = g->next;
	else
		t->ghead = g->next;
	if (g->next)
		g->next->prev = g->prev;
	else
		t->gtail = g->prev;
	t->ngone--;
	free(g);
	mt_mem_size(t->mem, sizeof(*g), 0);
}

static void gone_grow(struct tf *t)
{
	size_t n = t->ngbucket * 2;
	struct gone **b = mt_calloc(n, sizeof(*b));

	for (struct gone *g = t->ghead; g; g = g->next) {
		g->chain = b[g->hash & (n - 1)];
		b[g->hash & (n - 1)] = g;
	}
	free(t->gbucket);
	mt_mem_size(t->mem, t->ngbucket * sizeof(*b), n * sizeof(*b));
	t->gbucket = b;
	t->ngbucket = n;
}

/* Remember c, closed (its halves flushed): the oldest record makes room past max_flows. */
static void gone_add(struct tf *t, const struct conn *c)
{
	struct gone *g = gone_find(t, &c->e[0], &c->e[1], c->hash);

	if (g)
		gone_free(t, g);
	while (t->ngone >= t->lim.max_flows)
		gone_free(t, t->ghead);
	if (!t->gbucket) {
		t->ngbucket = 256;
		t->gbucket = mt_calloc(t->ngbucket, sizeof(*t->gbucket));
		mt_mem_size(t->mem, 0, t->ngbucket * sizeof(*t->gbucket));
	} else if (t->ngone >= t->ngbucket) {
		gone_grow(t);
	}
	g = mt_calloc(1, sizeof(*g));
	mt_mem_size(t->mem, 0, sizeof(*g));
	g->hash = c->hash;
	g->e[0] = c->e[0];
	g->e[1] = c->e[1];
	for (int k = 0; k < 2; k++) {
		g->base[k] = c->h[k].base;
		g->end[k] = c->h[k].next;
		g->based[k] = c->h[k].based;
	}
	g->until = t->now + GONE_KEEP_US;
	g->pkt = t->st.packets;
	g->chain = t->gbucket[g->hash & (t->ngbucket - 1)];
	t->gbucket[g->hash & (t->ngbucket - 1)] = g;
	g->prev = t->gtail;
	if (t->gtail)
		t->gtail->next = g;
	else
		t->ghead = g;
	t->gtail = g;
	t->ngone++;
}

/*
 * A segment from e[i] on the 4-tuple of g: 1 when it is g's own, come late
 * (dropped: counted as retransmitted when g had all of it, else as late), 0
 * when it starts another connection (g is forgotten): a SYN with another
 * ISN, or payload far from g's ranges.
 */
static int gone_takes(struct tf *t, struct gone *g, int i, uint32_t seq, uint8_t fl, size_t plen)
{
	if (fl & TH_SYN) {
		if (g->based[i] && g->base[i] == seq + 1)
			return 1; /* its own handshake, again */
		gone_free(t, g);
		return 0;
	}
	if (!plen || (fl & TH_RST))
		return 1;
	if (g->based[i]) {
		int64_t end = g->end[i];
		int64_t off = end + (int32_t)(seq - (g->base[i] + (uint32_t)end));
		if (off < -(int64_t)LATE_WINDOW || off > end + LATE_WINDOW) {
			gone_free(t, g);
			return 0;
		}
		if (off + (int64_t)plen <= end) {
			t->st.retransmitted++;
			return 1;
		}
	}
	t->st.late++;
	return 1;
}

/* ---- closing ---- */

static void wait_unlink(struct tf *t, struct conn *c)
{
	if (c->wprev)
		c->wprev->wnext = c->wnext;
	else
		t->wait_head = c->wnext;
	if (c->wnext)
		c->wnext->wprev = c->wprev;
	else
		t->wait_tail = c->wprev;
	c->wprev = c->wnext = NULL;
	c->waiting = 0;
}

/*
 * Deliver what c holds, tell the handler how it ended, and forget it; one
 * closed by FIN or RST is remembered (struct gone). One waiting ends as
 * TF_FIN whatever ended it.
 */
static void conn_close(struct tf *t, struct conn *c, enum tf_end_how how, int64_t us)
{
	struct conn **link = &t->bucket[c->hash & (t->nbucket - 1)];
	int first = c->cli; /* (a callback may swap the roles) */

	if (c->waiting) {
		wait_unlink(t, c);
		how = TF_FIN;
	}
	flush_half(t, c, first, us);
	flush_half(t, c, !first, us);
	if (t->h.close)
		t->h.close(c->state, &c->c, how, us);
	if (how == TF_FIN || how == TF_RST)
		gone_add(t, c);
	while (*link != c)
		link = &(*link)->chain;
	*link = c->chain;
	t->nconn--;
	lru_unlink(t, c);
	free(c);
	mt_mem_size(t->mem, sizeof(*c), 0);
}

/*
 * Both ends sent their FIN: c is closed once nothing before them is
 * missing; until then it waits (FIN_WAIT_US at most) for the holes to be
 * filled or acknowledged.
 */
static void both_fins(struct tf *t, struct conn *c, int64_t us)
{
	if (c->h[0].next >= c->h[0].fin_off && c->h[1].next >= c->h[1].fin_off) {
		conn_close(t, c, TF_FIN, us);
		return;
	}
	if (c->waiting)
		return;
	c->waiting = 1;
	c->wait_until = t->now + FIN_WAIT_US;
	c->wprev = t->wait_tail;
	c->wnext = NULL;
	if (t->wait_tail)
		t->wait_tail->wnext = c;
	else
		t->wait_head = c;
	t->wait_tail = c;
}

static void set_roles(struct conn *c, int cli)
{
	c->cli = cli;
	c->c.client = c->e[cli];
	c->c.server = c->e[!cli];
}

/* A new connection of the ends a, b (canonical order), client cli. */
static struct conn *conn_new(struct tf *t, const struct tf_end *a, const struct tf_end *b, uint64_t hash,
			     int cli, int syn, int64_t us)
{
	struct conn *c;

	while (t->nconn >= t->lim.max_flows && t->lru_head) {
		if (!t->lru_head->waiting)
			t->st.evicted_full++;
		conn_close(t, t->lru_head, TF_EVICTED, us);
	}
	if (t->mem->used + sizeof(*c) + MT_MEM_CHUNK > t->lim.total_bytes) {
		t->st.total_limit_hits++;
		room(t, NULL, sizeof(*c) + MT_MEM_CHUNK, us);
	}
	if (t->nconn >= t->nbucket)
		grow(t);
	c = mt_calloc(1, sizeof(*c));
	mt_mem_size(t->mem, 0, sizeof(*c));
	c->e[0] = *a;
	c->e[1] = *b;
	set_roles(c, cli);
	c->h[0].conn = c->h[1].conn = c;
	c->hash = hash;
	c->last_us = t->now;
	c->seen_us = us;
	c->c.num = ++t->st.connections;
	c->c.saw_syn = syn;
	c->c.first_us = us;
	if (!syn)
		t->st.midstream++;
	c->chain = t->bucket[hash & (t->nbucket - 1)];
	t->bucket[hash & (t->nbucket - 1)] = c;
	t->nconn++;
	lru_append(t, c);
	if (t->h.open)
		c->state = t->h.open(t->h.ctx, &c->c);
	return c;
}

/* The stream offset of sequence number seq (within 2^31 of the next byte). */
static int64_t offset_of(const struct half *h, uint32_t seq)
{
	uint32_t next_seq = h->base + (uint32_t)h->next;

	return h->next + (int32_t)(seq - next_seq);
}

static void set_base(struct half *h, uint32_t seq)
{
	if (!h->based) {
		h->base = seq;
		h->based = 1;
	}
}

/*
 * The stream offset of h up to which an ACK number acknowledges it (its FIN
 * not counted, nothing before its start), or -1 when h's start is not known.
 */
static int64_t ack_offset(const struct half *h, uint32_t ack)
{
	int64_t a;

	if (!h->based)
		return -1;
	a = offset_of(h, ack);
	if (h->fin && a > h->fin_off)
		a = h->fin_off;
	return a < 0 ? 0 : a;
}

/*
 * The other end acknowledged direction j up to offset a: what it received
 * and the capture did not have is lost, a gap at once, and the bytes held
 * after it follow. Returns 0, giving nothing up, when a is more than
 * ACK_TAIL_MAX past every byte seen of j (a number not to be trusted).
 */
static int acked_to(struct tf *t, struct conn *c, int j, int64_t a, int64_t us)
{
	struct half *h = &c->h[j];
	int64_t top = h->hi > h->next ? h->hi : h->next;

	if (a <= h->next)
		return 1;
	if (h->fin && h->fin_off > top)
		top = h->fin_off;
	if (a - top > ACK_TAIL_MAX)
		return 0;
	while (h->next < a) {
		int64_t stop = h->head && h->head->start < a ? h->head->start : a;
		uint64_t n = (uint64_t)(stop - h->next);
		h->next = stop;
		t->st.ack_gaps++;
		emit_gap(t, c, j, n, us);
		drain(t, c, j);
	}
	return 1;
}

/* A FIN at stream offset f of direction i; bytes held past it are dropped. */
static void on_fin(struct tf *t, struct half *h, int64_t f)
{
	struct seg **link = &h->head;

	if (h->fin || f < h->next)
		return;
	h->fin = 1;
	h->fin_off = f;
	h->tail = NULL;
	while (*link) {
		struct seg *s = *link;
		if (s->start >= f) {
			*link = s->next;
			hold_sub(t, h, s->len + SEG_COST);
			free(s);
			continue;
		}
		if (s->start + (int64_t)s->len > f) {
			size_t cut = (size_t)(s->start + (int64_t)s->len - f);
			s->len -= cut;
			hold_sub(t, h, cut);
		}
		h->tail = s;
		link = &s->next;
	}
}

static void tcp(struct tf *t, int family, const uint8_t *src, const uint8_t *dst, const uint8_t *p,
		size_t cap, size_t len, int64_t us)
{
	struct tf_end a, b;
	struct conn *c;
	size_t hl, plen, pcap;
	uint32_t seq, ack;
	uint8_t fl;
	int swapped, i;
	uint64_t hash, acked = TF_ACK_UNKNOWN;

	if (len < 20) {
		t->st.malformed++;
		return;
	}
	if (cap < 13)
		return; /* cut by the snap length: counted in truncated */
	hl = (size_t)(p[12] >> 4) * 4;
	if (hl < 20 || hl > len) {
		t->st.malformed++;
		return;
	}
	if (cap < 20)
		return;
	plen = len - hl;
	pcap = cap > hl ? cap - hl : 0;
	seq = rd32(p + 4);
	ack = rd32(p + 8);
	fl = p[13];

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.family = b.family = family;
	memcpy(a.addr, src, family == AF_INET ? 4 : 16);
	memcpy(b.addr, dst, family == AF_INET ? 4 : 16);
	a.port = rd16(p);
	b.port = rd16(p + 2);
	swapped = end_cmp(&a, &b) > 0;
	if (swapped) {
		struct tf_end x = a;
		a = b;
		b = x;
	}
	i = swapped; /* the sender's index */
	hash = conn_hash(t, family, &a, &b);
	c = conn_find(t, &a, &b, hash);

	if (c && (fl & (TH_SYN | TH_ACK | TH_RST)) == TH_SYN && !(c->h[i].based && c->h[i].base == seq + 1)) {
		if (!c->waiting)
			t->st.reused++;
		conn_close(t, c, TF_REUSED, us);
		c = NULL;
	}
	if (!c) {
		struct gone *g = gone_find(t, &a, &b, hash);
		if (g && gone_takes(t, g, i, seq, fl, plen))
			return;
		if ((fl & TH_RST) || (!(fl & TH_SYN) && !plen))
			return;
		if (fl & TH_SYN)
			c = conn_new(t, &a, &b, hash, (fl & TH_ACK) ? !i : i, 1, us);
		else
			c = conn_new(t, &a, &b, hash, end_cmp(&a, &b) ? 1 : 0, 0, us);
	}
	c->last_us = t->now;
	c->last_pkt = t->st.packets;
	if (us > c->seen_us)
		c->seen_us = us;
	if (c != t->lru_tail) {
		lru_unlink(t, c);
		lru_append(t, c);
	}

	if (fl & TH_SYN) {
		set_base(&c->h[i], seq + 1);
		if (fl & TH_ACK)
			set_base(&c->h[!i], ack);
		seq++;
	}
	if (fl & TH_ACK) {
		int64_t off = ack_offset(&c->h[!i], ack);
		if (off >= 0 && acked_to(t, c, !i, off, us))
			acked = (uint64_t)off;
	}
	if (plen && !(fl & TH_RST)) { /* a RST's payload is a diagnostic, not the stream */
		set_base(&c->h[i], seq);
		segment(t, c, i, offset_of(&c->h[i], seq), p + hl, pcap, plen, us, acked);
	}
	if (fl & TH_FIN) {
		set_base(&c->h[i], seq);
		int64_t f = offset_of(&c->h[i], seq) + (int64_t)plen;
		on_fin(t, &c->h[i], f);
	}
	if (fl & TH_RST)
		conn_close(t, c, TF_RST, us);
	else if (c->h[0].fin && c->h[1].fin)
		both_fins(t, c, us);
}

/* ---- IP fragments ---- */

static void v6_walk(struct tf *t, const uint8_t *whole, uint8_t nh, const uint8_t *p, size_t have, size_t tot,
		    int64_t us, int inner);

static void dgram_free(struct tf *t, struct dgram *d)
{
	struct dgram **link = &t->fbucket[d->hash % FRAG_BUCKETS];

	while (*link != d)
		link = &(*link)->chain;
	*link = d->chain;
	if (d->prev)
		d->prev->next = d->next;
	else
		t->fhead = d->next;
	if (d->next)
		d->next->prev = d->prev;
	else
		t->ftail = d->prev;
	t->fheld -= d->cost;
	mt_mem_sub(t->mem, d->cost);
	while (d->pieces) {
		struct fpiece *f = d->pieces;
		d->pieces = f->next;
		free(f);
	}
	free(d);
	mt_mem_size(t->mem, sizeof(*d), 0);
}

static void dgram_drop(struct tf *t, struct dgram *d)
{
	t->st.frag_dropped += d->nfrags;
	dgram_free(t, d);
}

/* What holding [off, off + len) would cost: pieces no held one has, with the captured bytes. */
static size_t frag_cost(const struct dgram *d, uint32_t off, uint32_t len, uint32_t cap)
{
	size_t cost = 0;
	uint32_t cur = off, end = off + len, cend = off + cap;

	for (const struct fpiece *q = d->pieces; q && cur < end; q = q->next) {
		if (q->off + q->len <= cur)
			continue;
		if (q->off >= end)
			break;
		if (q->off > cur)
			cost += FRAG_COST + (cend > cur ? (cend < q->off ? cend : q->off) - cur : 0);
		cur = q->off + q->len;
	}
	if (cur < end)
		cost += FRAG_COST + (cend > cur ? cend - cur : 0);
	return cost;
}

static void frag_hold(struct tf *t, struct dgram *d, uint32_t off, uint32_t len, uint32_t cap,
		      const uint8_t *p)
{
	struct fpiece **link = &d->pieces;
	uint32_t cur = off, end = off + len, cend = off + cap;

	while (cur < end) {
		struct fpiece *q = *link;
		if (q && q->off + q->len <= cur) {
			link = &q->next;
			continue;
		}
		uint32_t stop = q && q->off < end ? q->off : end;
		if (stop > cur) {
			uint32_t c = cend > cur ? (cend < stop ? cend : stop) - cur : 0;
			struct fpiece *n = mt_malloc(sizeof(*n) + c);
			n->off = cur;
			n->len = stop - cur;
			n->cap = c;
			memcpy(n->data, p + (cur - off), c);
			n->next = q;
			*link = n;
			link = &n->next;
			d->cost += FRAG_COST + c;
			t->fheld += FRAG_COST + c;
			mt_mem_add(t->mem, FRAG_COST + c);
		}
		if (!q || q->off >= end)
			break;
		cur = q->off + q->len;
		link = &q->next;
	}
}

/* The datagram is whole (by the lengths): put it together and pass it on. */
static void dgram_done(struct tf *t, struct dgram *d, int64_t us)
{
	uint8_t *buf = mt_malloc(d->total ? d->total : 1);
	size_t have = 0;
	int family = d->family;
	uint8_t src[16], dst[16], proto = d->proto;
	uint32_t total = d->total;

	for (const struct fpiece *q = d->pieces; q; q = q->next) {
		memcpy(buf + q->off, q->data, q->cap);
		have = q->off + q->cap;
		if (q->cap < q->len)
			break;
	}
	memcpy(src, d->src, sizeof(src));
	memcpy(dst, d->dst, sizeof(dst));
	t->st.reassembled++;
	dgram_free(t, d);
	if (family == AF_INET) {
		tcp(t, AF_INET, src, dst, buf, have, total, us);
	} else {
		uint8_t hdr[40] = {0};
		memcpy(hdr + 8, src, 16);
		memcpy(hdr + 24, dst, 16);
		v6_walk(t, hdr, proto, buf, have, total, us, 1);
	}
	free(buf);
}

/*
 * One fragment: payload [off, off + len) of the datagram (src, dst, id,
 * proto), the first cap bytes at p captured; last when no more follow.
 */
static void fragment(struct tf *t, int family, const uint8_t *src, const uint8_t *dst, uint32_t id,
		     uint8_t proto, uint32_t off, const uint8_t *p, uint32_t cap, uint32_t len, int last,
		     int64_t us)
{
	size_t alen = family == AF_INET ? 4 : 16;
	struct dgram *d;
	uint64_t hash;
	size_t cost;

	if (off + len > 65535 || (!last && (len == 0 || len % 8))) {
		t->st.malformed++;
		return;
	}
	t->st.fragments++;
	if (!t->fbucket) {
		t->fbucket = mt_calloc(FRAG_BUCKETS, sizeof(*t->fbucket));
		mt_mem_size(t->mem, 0, FRAG_BUCKETS * sizeof(*t->fbucket));
	}
	hash = mix(mix_bytes(mix_bytes(mix(t->seed, (uint64_t)family), src, alen), dst, alen),
		   (uint64_t)id << 8 | (family == AF_INET ? proto : 0));
	for (d = t->fbucket[hash % FRAG_BUCKETS]; d; d = d->chain)
		if (d->hash == hash && d->family == family && d->id == id && !memcmp(d->src, src, alen) &&
		    !memcmp(d->dst, dst, alen) && (family != AF_INET || d->proto == proto))
			break;
	if (!d) {
		d = mt_calloc(1, sizeof(*d));
		mt_mem_size(t->mem, 0, sizeof(*d));
		d->hash = hash;
		d->family = family;
		memcpy(d->src, src, alen);
		memcpy(d->dst, dst, alen);
		d->id = id;
		d->proto = proto;
		d->first_us = t->now;
		d->pkt = t->st.packets;
		d->chain = t->fbucket[hash % FRAG_BUCKETS];
		t->fbucket[hash % FRAG_BUCKETS] = d;
		d->prev = t->ftail;
		if (t->ftail)
			t->ftail->next = d;
		else
			t->fhead = d;
		t->ftail = d;
	}
	d->nfrags++;
	if (last && !d->have_last) {
		for (const struct fpiece *q = d->pieces; q; q = q->next)
			if (q->off + q->len > off + len)
				return; /* at odds with a fragment before it: the first wins */
		d->have_last = 1;
		d->total = off + len;
	} else if (d->have_last && (off + len > d->total || (last && off + len != d->total))) {
		return;
	}
	cost = frag_cost(d, off, len, cap);
	if (cost > t->lim.frag_bytes) {
		dgram_drop(t, d);
		return;
	}
	while (t->fheld + cost > t->lim.frag_bytes && t->fhead != d)
		dgram_drop(t, t->fhead);
	while (t->fheld + cost > t->lim.frag_bytes && t->fhead->next)
		dgram_drop(t, t->fhead->next);
	if (t->fheld + cost > t->lim.frag_bytes) {
		dgram_drop(t, d);
		return;
	}
	frag_hold(t, d, off, len, cap, p);
	if (d->have_last) {
		uint32_t cur = 0;
		for (const struct fpiece *q = d->pieces; q && q->off == cur; q = q->next)
			cur = q->off + q->len;
		if (cur == d->total)
			dgram_done(t, d, us);
	}
}

/* ---- IP ---- */

static int upper_is_tcp_or_ext(uint8_t nh)
{
	return nh == 6 || nh == 0 || nh == 43 || nh == 60 || nh == 51;
}

/*
 * IPv6 headers from next header nh, at p: have bytes captured of tot. whole
 * is the fixed header (for the addresses); inner: p is a reassembled payload.
 */
static void v6_walk(struct tf *t, const uint8_t *whole, uint8_t nh, const uint8_t *p, size_t have, size_t tot,
		    int64_t us, int inner)
{
	size_t off = 0, hl;

	for (int k = 0; k < MAX_EXT; k++) {
		switch (nh) {
		case 6: tcp(t, AF_INET6, whole + 8, whole + 24, p + off, have - off, tot - off, us); return;
		case 0:
		case 43:
		case 60:
		case 51:
			if (off + 2 > tot)
				goto malformed;
			if (off + 2 > have)
				return;
			hl = nh == 51 ? ((size_t)p[off + 1] + 2) * 4 : ((size_t)p[off + 1] + 1) * 8;
			nh = p[off];
			off += hl;
			if (off > tot)
				goto malformed;
			if (off > have)
				return;
			break;
		case 44: {
			if (off + 8 > tot || inner)
				goto malformed;
			if (off + 8 > have)
				return;
			uint32_t fo = rd16(p + off + 2) & 0xfff8;
			int more = p[off + 3] & 1;
			uint8_t fnh = p[off];
			uint32_t id = rd32(p + off + 4);
			off += 8;
			if (!fo && !more) { /* an atomic fragment (RFC 6946): not one */
				nh = fnh;
				break;
			}
			if (!upper_is_tcp_or_ext(fnh)) {
				t->st.not_tcp++;
				return;
			}
			fragment(t, AF_INET6, whole + 8, whole + 24, id, fnh, fo, p + off,
				 (uint32_t)(have - off), (uint32_t)(tot - off), !more, us);
			return;
		}
		default: t->st.not_tcp++; return;
		}
	}
malformed:
	t->st.malformed++;
}

/* An IP datagram at p: cap bytes captured, wire bytes on the wire. */
static void ipv6(struct tf *t, const uint8_t *p, size_t cap, size_t wire, int64_t us)
{
	size_t tot, have;

	if (cap < 40) {
		if (cap < wire && wire >= 40)
			return;
		t->st.malformed++;
		return;
	}
	if (p[0] >> 4 != 6) {
		t->st.malformed++;
		return;
	}
	tot = 40 + (size_t)rd16(p + 4);
	if (tot == 40)
		tot = wire;
	if (tot > wire) {
		t->st.malformed++;
		return;
	}
	have = cap < tot ? cap : tot;
	v6_walk(t, p, p[6], p + 40, have - 40, tot - 40, us, 0);
}

static void ipv4(struct tf *t, const uint8_t *p, size_t cap, size_t wire, int64_t us)
{
	size_t ihl, tot, have;
	uint16_t frag;

	if (cap < 20) {
		if (cap < wire && wire >= 20)
			return;
		t->st.malformed++;
		return;
	}
	ihl = (size_t)(p[0] & 15) * 4;
	tot = rd16(p + 2);
	if (tot == 0)
		tot = wire;
	if (p[0] >> 4 != 4 || ihl < 20 || tot < ihl || tot > wire) {
		t->st.malformed++;
		return;
	}
	if (cap < ihl)
		return;
	have = cap < tot ? cap : tot;
	if (p[9] != 6) {
		t->st.not_tcp++;
		return;
	}
	frag = rd16(p + 6);
	if (frag & 0x3fff) {
		fragment(t, AF_INET, p + 12, p + 16, rd16(p + 4), p[9], (uint32_t)(frag & 0x1fff) * 8,
			 p + ihl, (uint32_t)(have - ihl), (uint32_t)(tot - ihl), !(frag & 0x2000), us);
		return;
	}
	tcp(t, AF_INET, p + 12, p + 16, p + ihl, have - ihl, tot - ihl, us);
}

/* ---- link layers ---- */

static int af_version(uint32_t af)
{
	if (af == 2)
		return 4;
	if (af == 24 || af == 28 || af == 30)
		return 6;
	return 0;
}

static uint32_t swap32(uint32_t v)
{
	return v >> 24 | (v >> 8 & 0xff00) | (v << 8 & 0xff0000) | v << 24;
}

static void link_layer(struct tf *t, int linktype, const uint8_t *p, size_t cap, size_t wire, int64_t us)
{
	size_t off = 0;
	uint16_t et = 0;
	int ver = 0, ether = 0;

	switch (linktype) {
	case DLT_EN10MB:
		if (cap < 14)
			goto bad_link;
		et = rd16(p + 12);
		off = 14;
		ether = 1;
		break;
	case DLT_LINUX_SLL:
		if (cap < 16)
			goto bad_link;
		et = rd16(p + 14);
		off = 16;
		ether = 1;
		break;
	case DLT_LINUX_SLL2:
		if (cap < 20)
			goto bad_link;
		et = rd16(p);
		off = 20;
		ether = 1;
		break;
	case DLT_NULL:
	case DLT_LOOP: {
		uint32_t af;
		if (cap < 4)
			goto bad_link;
		if (linktype == DLT_LOOP) {
			af = rd32(p);
		} else {
			memcpy(&af, p, 4);
			if (!af_version(af))
				af = swap32(af);
		}
		ver = af_version(af);
		if (!ver) {
			t->st.not_ip++;
			return;
		}
		off = 4;
		break;
	}
	case DLT_RAW:
	case LINKTYPE_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		if (cap < 1)
			goto bad_link;
		ver = p[0] >> 4;
		if ((ver != 4 && ver != 6) || (linktype == DLT_IPV4 && ver != 4) ||
		    (linktype == DLT_IPV6 && ver != 6)) {
			t->st.malformed++;
			return;
		}
		break;
	default: goto bad_link;
	}
	if (ether) {
		for (int n = 0; et == 0x8100 || et == 0x88a8 || et == 0x9100; n++) {
			if (n == MAX_VLAN || cap < off + 4)
				goto bad_link;
			et = rd16(p + off + 2);
			off += 4;
		}
		if (et == 0x0800) {
			ver = 4;
		} else if (et == 0x86dd) {
			ver = 6;
		} else {
			t->st.not_ip++;
			return;
		}
	}
	if (ver == 4)
		ipv4(t, p + off, cap - off, wire - off, us);
	else
		ipv6(t, p + off, cap - off, wire - off, us);
	return;
bad_link:
	t->st.bad_link++;
}

/* ---- the budget ---- */

/*
 * The budget is passed, or need bytes more would pass it: room is made down
 * to TF_ROOM_SLACK below it, need included (see the header for what goes
 * first); keep (may be NULL) is not closed. Returns 1 when anything was
 * freed.
 */
static int room(struct tf *t, const struct conn *keep, size_t need, int64_t us)
{
	size_t target = t->lim.total_bytes - TF_ROOM_SLACK(t->lim.total_bytes);
	int freed = 0, reclaim = t->mem->reclaim != NULL;

	target = need < target ? target - need : 0;
	while (t->mem->used > target) {
		if (t->ghead) {
			gone_free(t, t->ghead);
		} else if (reclaim && t->mem->reclaim(t->mem->reclaim_ctx, t->mem->used - target)) {
			/* (the handler's memory apart from connections: asked again while it frees) */
		} else if (t->fhead) {
			reclaim = 0;
			dgram_drop(t, t->fhead);
		} else if (t->lru_head && t->lru_head != keep) {
			reclaim = 0;
			if (!t->lru_head->waiting)
				t->st.evicted_memory++;
			conn_close(t, t->lru_head, TF_MEMORY, us);
		} else {
			break;
		}
		freed = 1;
	}
	return freed;
}

/* ---- the interface ---- */

/* Close what has been idle, drop fragments held too long: at capture time now. */
static void expire(struct tf *t)
{
	int64_t idle_us = t->lim.idle_ms > 0 && t->lim.idle_ms < INT64_MAX / 1000 ? t->lim.idle_ms * 1000 : 0;

	while (t->wait_head && t->now > t->wait_head->wait_until)
		conn_close(t, t->wait_head, TF_FIN, t->now);
	while (idle_us && t->lru_head && t->now - t->lru_head->last_us > idle_us) {
		if (!t->lru_head->waiting)
			t->st.evicted_idle++;
		conn_close(t, t->lru_head, TF_IDLE, t->now);
	}
	while (t->ghead && t->now > t->ghead->until)
		gone_free(t, t->ghead);
	while (t->fhead && t->now - t->fhead->first_us > FRAG_TIMEOUT_US)
		dgram_drop(t, t->fhead);
}

/*
 * The clock jumped forward to t->now: what the packets of the jump touched
 * (stamped at the clock before it) was seen now.
 */
static void jumped_ahead(struct tf *t)
{
	for (struct conn *c = t->lru_tail; c && c->last_pkt >= t->jump_pkt; c = c->lprev)
		c->last_us = t->now;
	for (struct conn *c = t->wait_tail; c && c->last_pkt >= t->jump_pkt; c = c->wprev)
		c->wait_until = t->now + FIN_WAIT_US;
	for (struct gone *g = t->gtail; g && g->pkt >= t->jump_pkt; g = g->prev)
		g->until = t->now + GONE_KEEP_US;
	for (struct dgram *d = t->ftail; d && d->pkt >= t->jump_pkt; d = d->prev)
		d->first_us = t->now;
}

/*
 * The clock jumped back to t->now: nothing was seen after it (each list is
 * in the order of its times, so only its end is walked).
 */
static void jumped_back(struct tf *t)
{
	for (struct conn *c = t->lru_tail; c && c->last_us > t->now; c = c->lprev)
		c->last_us = t->now;
	for (struct conn *c = t->wait_tail; c && c->wait_until > t->now + FIN_WAIT_US; c = c->wprev)
		c->wait_until = t->now + FIN_WAIT_US;
	for (struct gone *g = t->gtail; g && g->until > t->now + GONE_KEEP_US; g = g->prev)
		g->until = t->now + GONE_KEEP_US;
	for (struct dgram *d = t->ftail; d && d->first_us > t->now; d = d->prev)
		d->first_us = t->now;
}

/*
 * The clock at a packet of capture time us: it follows the packets forward
 * and never goes back by a little. A packet more than JUMP_US from it (a
 * wrong timestamp, another capture merged in, a pause) moves it only when
 * JUMP_CONFIRM packets in a row are that far on the same side: to the one
 * of them nearest to it.
 */
static void tick(struct tf *t, int64_t us)
{
	int dir;

	if (!t->has_now) {
		t->now = us;
		t->has_now = 1;
		return;
	}
	if (us <= t->now + JUMP_US && us >= t->now - JUMP_US) {
		if (us > t->now)
			t->now = us;
		t->jumps = 0;
		return;
	}
	dir = us > t->now ? 1 : -1;
	if (!t->jumps || dir != t->jump_dir) {
		t->jumps = 0;
		t->jump_dir = dir;
		t->jump_us = us;
		t->jump_pkt = t->st.packets;
	} else if (dir > 0 ? us < t->jump_us : us > t->jump_us) {
		t->jump_us = us;
	}
	if (++t->jumps < JUMP_CONFIRM)
		return;
	t->jumps = 0;
	t->now = t->jump_us;
	if (dir > 0)
		jumped_ahead(t);
	else
		jumped_back(t);
}

/* A capture time within a quarter of int64's range, so that differences of two never overflow. */
static int64_t clamp_us(int64_t us)
{
	return us > TIME_MAX ? TIME_MAX : us < -TIME_MAX ? -TIME_MAX : us;
}

void tf_packet(struct tf *t, int linktype, int64_t us, size_t wire_len, const uint8_t *p, size_t caplen)
{
	us = clamp_us(us);
	if (!p)
		caplen = 0;
	t->st.packets++;
	t->st.bytes += caplen;
	if (wire_len < caplen)
		wire_len = caplen;
	if (caplen < wire_len)
		t->st.truncated++;
	tick(t, us);
	expire(t);
	link_layer(t, linktype, p, caplen, wire_len, us);
	/* What the packet made the handler hold (its state grew) is counted now. */
	if (t->mem->used > t->lim.total_bytes) {
		t->st.total_limit_hits++;
		room(t, NULL, 0, us);
	}
}

void tf_swap(struct tf *t, const struct tf_conn *c)
{
	struct tf_end a = c->client, b = c->server;
	struct conn *k;

	if (end_cmp(&a, &b) > 0) {
		a = c->server;
		b = c->client;
	}
	k = conn_find(t, &a, &b, conn_hash(t, a.family, &a, &b));
	if (k)
		set_roles(k, !k->cli);
}

static int by_num(const void *x, const void *y)
{
	const struct conn *a = *(const struct conn *const *)x, *b = *(const struct conn *const *)y;

	return a->c.num < b->c.num ? -1 : a->c.num > b->c.num;
}

void tf_finish(struct tf *t, int64_t us)
{
	struct conn **all;
	size_t n = 0;
	int far;

	us = clamp_us(us);
	if (!t->has_now) {
		t->now = us;
		t->has_now = 1;
	}
	far = us > t->now + JUMP_US;
	if (us > t->now && !far)
		t->now = us;
	while (t->fhead)
		dgram_drop(t, t->fhead);
	all = mt_malloc((t->nconn ? t->nconn : 1) * sizeof(*all));
	for (struct conn *c = t->lru_head; c; c = c->lnext)
		all[n++] = c;
	qsort(all, n, sizeof(*all), by_num);
	for (size_t k = 0; k < n; k++) {
		/* An end far past the clock (a packet's wrong time) is not believed. */
		int64_t at = t->now;
		if (far && all[k]->seen_us > at)
			at = all[k]->seen_us < us ? all[k]->seen_us : us;
		conn_close(t, all[k], TF_EOF, at);
	}
	free(all);
}

void tf_stats(const struct tf *t, struct tf_stats *out)
{
	*out = t->st;
}

void tf_free(struct tf *t)
{
	if (!t)
		return;
	while (t->lru_head) {
		struct conn *c = t->lru_head;
		conn_drop_held(t, c);
		lru_unlink(t, c);
		free(c);
		mt_mem_size(t->mem, sizeof(*c), 0);
	}
	while (t->fhead)
		dgram_free(t, t->fhead);
	while (t->ghead)
		gone_free(t, t->ghead);
	mt_mem_size(t->mem, t->ngbucket * sizeof(*t->gbucket), 0);
	mt_mem_size(t->mem, t->fbucket ? FRAG_BUCKETS * sizeof(*t->fbucket) : 0, 0);
	mt_mem_size(t->mem, t->nbucket * sizeof(*t->bucket), 0);
	free(t->gbucket);
	free(t->fbucket);
	free(t->bucket);
	free(t);
}

void tf_end_str(const struct tf_end *e, char *out, size_t n, int url)
{
	char a[INET6_ADDRSTRLEN] = "?";
	int v6 = e->family == AF_INET6;

	inet_ntop(v6 ? AF_INET6 : AF_INET, e->addr, a, sizeof(a));
	snprintf(out, n, "%s%s%s%s:%u", url ? "http://" : "", v6 ? "[" : "", a, v6 ? "]" : "", e->port);
}
