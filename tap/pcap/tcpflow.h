/*
 * tcpflow.h - TCP streams rebuilt from captured packets (pcap import and live
 * capture): link layer, IP (fragments reassembled) and TCP (segments put in
 * order) taken off, each connection's two byte streams handed on in order,
 * with what is missing said as gaps. Pure: packets in, callbacks out, no I/O.
 *
 * The contract between the capture side (this module, tap/pcap/tcpflow.c) and the
 * HTTP side of pcap import (which reads HTTP/1.1 on the streams):
 *
 *   - Link types: Ethernet (802.1Q/802.1ad VLAN tags skipped), Linux cooked
 *     (SLL and SLL2), BSD loopback (NULL and LOOP), raw IP (v4 and v6). Any
 *     other is counted, never a crash.
 *   - IPv4 and IPv6; IPv4 fragments and IPv6 fragment headers reassembled
 *     (bounded, timed out); other protocols counted and skipped.
 *   - A connection is its 4-tuple. Its client is the side that sent the SYN;
 *     for a connection seen from its middle, the side whose port is the
 *     higher (an ephemeral port), ties broken by address: the HTTP side may
 *     swap them (tf_swap) once it sees which side sends requests.
 *   - Bytes are delivered in sequence order, once: out-of-order segments
 *     wait, retransmissions and overlaps are cut to what is new (the first
 *     copy wins), sequence numbers wrap. A hole the other end acknowledged
 *     (it received those bytes: the capture will never have them) is
 *     delivered as a gap of its size at once, and the bytes after it follow;
 *     so is a hole that is not filled within the limits (the data after it
 *     would pass the flow's memory bound, the connection ends, or it is
 *     idle).
 *   - A connection ends at its FINs (once nothing before them is missing, or
 *     after a short wait) or a RST; it is then remembered for a while, so
 *     that its segments captured late (reordered, in flight at a RST,
 *     retransmitted) are dropped and counted, not taken for a new
 *     connection. A SYN with a new initial sequence number on its 4-tuple
 *     starts a new one at once (and ends an open one: TF_REUSED).
 *   - Memory is bounded per connection (bytes held out of order), and in all
 *     by one budget (total_bytes) that counts every byte held across
 *     connections: this module's (connections, bytes out of order, closed
 *     connections remembered, fragments) and what the handler counts in the
 *     same counter (tf_handler.mem: its per-connection state). When it would
 *     be passed, room is made: the handler's memory kept apart from any
 *     connection and what this module remembers are given up first, then the
 *     connections idle longest (TF_MEMORY). So is the number of connections
 *     bounded (and of closed ones remembered); an idle connection is closed
 *     ("idle") after idle_ms of capture time. Every limit hit is counted in
 *     tf_stats.
 *   - Time is the capture's (each packet's timestamp), in µs since the epoch:
 *     what is delivered has the time of the packet that brought it. Idleness
 *     is judged by the capture's clock, which a packet stamped far from its
 *     neighbours (a wrong timestamp, captures merged out of order) does not
 *     move on its own.
 */
#ifndef MCPTAP_TCPFLOW_H
#define MCPTAP_TCPFLOW_H

#include <stddef.h>
#include <stdint.h>

struct mt_mem;

/* One side of a connection. */
struct tf_end {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network order; the first 4 bytes for IPv4 */
	uint16_t port;    /* host order */
};

/* An end as text: "ADDR:PORT", "[V6]:PORT"; url: "http://" before it. */
void tf_end_str(const struct tf_end *e, char *out, size_t n, int url);

/* A connection: its two ends, as the reassembler sees them. */
struct tf_conn {
	uint64_t num; /* 1, 2, ... in the order they were first seen */
	struct tf_end client, server;
	int saw_syn;      /* its start was captured */
	int64_t first_us; /* the capture time of its first packet */
};

enum tf_dir {
	TF_C2S, /* client to server */
	TF_S2C, /* server to client */
};

/* How a connection ended. */
enum tf_end_how {
	TF_FIN,     /* both sides closed (FIN) */
	TF_RST,     /* reset */
	TF_IDLE,    /* nothing for idle_ms: evicted */
	TF_EVICTED, /* the connection limit (max_flows) made room */
	TF_EOF,     /* the capture ended with it open */
	TF_REUSED,  /* a new connection on its 4-tuple (a SYN with another
		     * initial sequence number) ended it: no limit was hit */
	TF_MEMORY,  /* the memory budget (total_bytes) made room */
};

#define TF_ACK_UNKNOWN UINT64_MAX

/* When the budget (tf_limits.total_bytes b) is passed, room is made down to this below it. */
#define TF_ROOM_SLACK(b) ((b) / 16)

struct tf_handler {
	void *ctx;
	/* A new connection: the handler's state for it (may be NULL). */
	void *(*open)(void *ctx, const struct tf_conn *c);
	/*
	 * n bytes of one direction, in order, captured at us. ack: how much of
	 * the other direction its sender had received when it sent these bytes,
	 * as an offset in that direction's stream (the same count the data and
	 * gap calls of that direction add up to), from the segment's ACK;
	 * TF_ACK_UNKNOWN when the segment carried none or the other direction's
	 * start is not known.
	 */
	void (*data)(void *state, const struct tf_conn *c, enum tf_dir d, const uint8_t *p, size_t n,
		     int64_t us, uint64_t ack);
	/* n bytes of one direction are missing here (not captured, or given up on). */
	void (*gap)(void *state, const struct tf_conn *c, enum tf_dir d, uint64_t n, int64_t us);
	/* The connection is over: the last call for it. */
	void (*close)(void *state, const struct tf_conn *c, enum tf_end_how how, int64_t us);
	/*
	 * Where the handler counts what it holds (borrowed; NULL: it counts
	 * nothing). The reassembler counts its own there too, and bounds the
	 * sum by total_bytes; it calls mem->reclaim at a safe point only (never
	 * from inside a callback), as it closes connections to make room.
	 */
	struct mt_mem *mem;
};

struct tf_limits {
	size_t flow_bytes;  /* bytes one connection holds out of order (default 4 MiB) */
	size_t total_bytes; /* every byte held, all connections together: the budget
			     * (default 256 MiB) */
	size_t max_flows;   /* connections tracked at once (default 100000) */
	int64_t idle_ms;    /* capture time after which an idle connection is closed
			     * (default 300000) */
	size_t frag_bytes;  /* IP fragments held at once (default 16 MiB) */
};

void tf_limits_default(struct tf_limits *l);

/* What the reassembler saw and did. */
struct tf_stats {
	uint64_t packets, bytes;             /* handed to tf_packet */
	uint64_t truncated;                  /* cut by the snap length: what was captured is used */
	uint64_t bad_link;                   /* a link type or frame it cannot read */
	uint64_t not_ip, not_tcp;            /* other network or transport protocols */
	uint64_t malformed;                  /* headers that do not add up */
	uint64_t fragments, reassembled;     /* IP fragments, and the datagrams they made */
	uint64_t frag_dropped;               /* fragments given up on (timed out, over frag_bytes) */
	uint64_t connections;                /* connections seen */
	uint64_t midstream;                  /* of them, seen without their SYN */
	uint64_t retransmitted;              /* segments, or parts of them, seen before */
	uint64_t out_of_order;               /* segments that came before bytes they follow */
	uint64_t gaps, gap_bytes;            /* holes delivered as gaps */
	uint64_t ack_gaps;                   /* of them, given up because the other end
					      * acknowledged past them */
	uint64_t flow_limit_hits;            /* a connection's out-of-order bound was reached */
	uint64_t total_limit_hits;           /* the budget (total_bytes) was reached: room made */
	uint64_t evicted_idle, evicted_full; /* connections closed as idle / for max_flows */
	uint64_t evicted_memory;             /* connections closed for the budget (TF_MEMORY) */
	uint64_t reused;                     /* connections ended by a new one on their 4-tuple */
	uint64_t late;                       /* segments of a closed connection with bytes it
					      * did not have (sent after its FIN or RST): dropped */
};

struct tf;

/* A reassembler calling h (copied; its mem borrowed, it must outlive the reassembler); never NULL. */
struct tf *tf_new(const struct tf_limits *l, const struct tf_handler *h);

/*
 * One captured packet: its link type (DLT_*), capture time, the length it had
 * on the wire, and the caplen bytes captured. Never fails; what it cannot
 * use is counted.
 */
void tf_packet(struct tf *t, int linktype, int64_t us, size_t wire_len, const uint8_t *p, size_t caplen);

/* The HTTP side found the client is the other end: client and server change places. */
void tf_swap(struct tf *t, const struct tf_conn *c);

/* The capture ended at us: every open connection is closed (TF_EOF, what it held as gaps). */
void tf_finish(struct tf *t, int64_t us);

void tf_stats(const struct tf *t, struct tf_stats *out);
void tf_free(struct tf *t);

#endif
