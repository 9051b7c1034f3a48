/*
 * test-tcpflow.c - the TCP reassembler of pcap import (tap/pcap/tcpflow.h), on
 * packets crafted in memory (tests/peers/pktcraft.h): segments in order (and
 * delivered in place), reordered, retransmitted and overlapping (the first
 * copy wins), lost (a gap of its exact size), across the sequence number
 * wrap, seen from the middle and swapped, FIN, RST, idle in capture time, the
 * per-flow bound, the memory budget (connections, held bytes and the
 * handler's state counted in one counter, room made in its order, the count
 * back to 0 when all is freed) and max_flows with their exact counts, IPv4 and
 * IPv6 fragments (in order, out of order, overlapping, one missing, bounded),
 * truncated packets, every link type, and garbage of every length.
 */
#include "tests/unit/unit.h"

#include <sys/socket.h>

#include "schema/util.h"
#include "tap/pcap/tcpflow.h"
#include "tests/peers/pktcraft.h"

#define MAXC 16 /* connections recorded; later ones share slot 0 */
#define SLOT(num) ((num) < MAXC ? (num) : 0)

/* What the handler was told. */
struct rec {
	struct mt_buf log;         /* every call, one line each */
	struct mt_buf s[MAXC][2];  /* each connection's streams, gaps as {N} */
	struct tf_conn conn[MAXC]; /* as opened */
	int closed[MAXC];
	enum tf_end_how how[MAXC];
	struct tf *t;
	uint64_t swap_at; /* tf_swap this connection at its first data */
	int verbose;      /* the log says acks and times too */
	unsigned copies;  /* data not delivered from the packet handed in */
	unsigned calls;
	struct mt_mem mem;         /* the budget's counter (tf_handler.mem) */
	size_t per_conn, per_byte; /* what the handler holds per connection and per byte
				    * delivered (counted in mem until the close) */
	size_t charged[MAXC];      /* ... by connection */
};

static struct rec *R;
static const uint8_t *cur_pkt; /* the packet being handed to tf_packet */
static size_t cur_len;

static const char *how_name(enum tf_end_how h)
{
	static const char *const n[] = {"fin", "rst", "idle", "evicted", "eof", "reused", "memory"};
	return n[h];
}

static void *on_open(void *ctx, const struct tf_conn *c)
{
	struct rec *r = ctx;

	assert_true(c->num > 0);
	r->conn[SLOT(c->num)] = *c;
	r->charged[SLOT(c->num)] += r->per_conn;
	mt_mem_add(&r->mem, r->per_conn);
	mt_buf_printf(&r->log, "open %llu %u>%u%s\n", (unsigned long long)c->num, c->client.port,
		      c->server.port, c->saw_syn ? "" : " mid");
	return r;
}

/* " ack=N @US" (ack=- when unknown) when the log is verbose, else "". */
static const char *extra(const struct rec *r, int with_ack, uint64_t ack, int64_t us)
{
	static char b[64];

	b[0] = '\0';
	if (!r->verbose)
		return b;
	if (!with_ack)
		snprintf(b, sizeof(b), " @%lld", (long long)us);
	else if (ack == TF_ACK_UNKNOWN)
		snprintf(b, sizeof(b), " ack=- @%lld", (long long)us);
	else
		snprintf(b, sizeof(b), " ack=%llu @%lld", (unsigned long long)ack, (long long)us);
	return b;
}

static void on_data(void *state, const struct tf_conn *c, enum tf_dir d, const uint8_t *p, size_t n,
		    int64_t us, uint64_t ack)
{
	struct rec *r = state;

	assert_true(n > 0);
	assert_false(r->closed[SLOT(c->num)]);
	r->charged[SLOT(c->num)] += r->per_byte * n;
	mt_mem_add(&r->mem, r->per_byte * n);
	mt_buf_append(&r->s[SLOT(c->num)][d], p, n);
	mt_buf_printf(&r->log, "data %llu %s %zu%s\n", (unsigned long long)c->num, d ? "s2c" : "c2s", n,
		      extra(r, 1, ack, us));
	if (!(cur_pkt && p >= cur_pkt && p + n <= cur_pkt + cur_len))
		r->copies++;
	r->calls++;
	if (r->swap_at == c->num) {
		r->swap_at = 0;
		tf_swap(r->t, c);
	}
}

static void on_gap(void *state, const struct tf_conn *c, enum tf_dir d, uint64_t n, int64_t us)
{
	struct rec *r = state;

	assert_true(n > 0);
	assert_false(r->closed[SLOT(c->num)]);
	mt_buf_printf(&r->s[SLOT(c->num)][d], "{%llu}", (unsigned long long)n);
	mt_buf_printf(&r->log, "gap %llu %s %llu%s\n", (unsigned long long)c->num, d ? "s2c" : "c2s",
		      (unsigned long long)n, extra(r, 0, 0, us));
}

static void on_close(void *state, const struct tf_conn *c, enum tf_end_how how, int64_t us)
{
	struct rec *r = state;

	assert_false(r->closed[SLOT(c->num)]);
	mt_mem_sub(&r->mem, r->charged[SLOT(c->num)]);
	r->charged[SLOT(c->num)] = 0;
	if (SLOT(c->num))
		r->closed[c->num] = 1;
	r->how[SLOT(c->num)] = how;
	mt_buf_printf(&r->log, "close %llu %s%s\n", (unsigned long long)c->num, how_name(how),
		      extra(r, 0, 0, us));
}

static struct tf_limits L;

static struct tf *mk(void)
{
	struct tf_handler h = {NULL, on_open, on_data, on_gap, on_close, NULL};

	R = calloc(1, sizeof(*R));
	assert_non_null(R);
	h.ctx = R;
	h.mem = &R->mem;
	R->t = tf_new(&L, &h);
	return R->t;
}

static void done(struct tf *t)
{
	size_t open = 0;

	for (int i = 0; i < MAXC; i++)
		open += R->charged[i];
	tf_free(t);
	/* Whatever a test did, what the reassembler counted it took off again
	 * (the handler's charges of connections never closed stay). */
	assert_int_equal(R->mem.used, open);
	mt_buf_release(&R->log);
	for (int i = 0; i < MAXC; i++) {
		mt_buf_release(&R->s[i][0]);
		mt_buf_release(&R->s[i][1]);
	}
	free(R);
	R = NULL;
}

static int setup(void **state)
{
	(void)state;
	tf_limits_default(&L);
	return 0;
}

/* A stream so far, "" when none. */
static const char *S(int num, enum tf_dir d)
{
	return R->s[num][d].data ? R->s[num][d].data : "";
}

static const char *LOG(void)
{
	return R->log.data ? R->log.data : "";
}

/* The conversation the helpers below speak. */
static struct {
	int linktype, tags, v6, ext;
	uint8_t cli[16], srv[16];
	uint16_t cport, sport;
} C;

static void conv(int linktype, int v6)
{
	memset(&C, 0, sizeof(C));
	C.linktype = linktype;
	C.v6 = v6;
	if (v6) {
		C.cli[0] = C.srv[0] = 0xfd;
		C.cli[15] = 1;
		C.srv[15] = 2;
	} else {
		C.cli[0] = C.srv[0] = 10;
		C.cli[3] = 1;
		C.srv[3] = 2;
	}
	C.cport = 40000;
	C.sport = 3001;
}

static void hand(struct tf *t, int64_t us, const uint8_t *f, size_t n, size_t caplen)
{
	cur_pkt = f;
	cur_len = n;
	tf_packet(t, C.linktype, us, n, f, caplen);
	cur_pkt = NULL;
}

/* A segment from the client (c2s) or the server, at time us (ms). */
static void seg_n(struct tf *t, int c2s, uint32_t seq, uint32_t ack, uint8_t fl, const void *data, size_t len,
		  int64_t ms)
{
	static uint8_t f[PK_MAX];
	struct pk_seg s;
	size_t n;

	memset(&s, 0, sizeof(s));
	s.v6 = C.v6;
	s.v6_ext = C.ext;
	memcpy(s.src, c2s ? C.cli : C.srv, 16);
	memcpy(s.dst, c2s ? C.srv : C.cli, 16);
	s.sport = c2s ? C.cport : C.sport;
	s.dport = c2s ? C.sport : C.cport;
	s.seq = seq;
	s.ack = ack;
	s.flags = fl;
	s.data = data;
	s.len = len;
	n = pk_segment(f, C.linktype, C.tags, &s);
	hand(t, ms * 1000, f, n, n);
}

static void seg(struct tf *t, int c2s, uint32_t seq, uint8_t fl, const char *data, int64_t ms)
{
	seg_n(t, c2s, seq, 0, fl | (fl & PK_SYN && !c2s ? PK_ACK : 0), data, data ? strlen(data) : 0, ms);
}

/* SYN (client ISN ci), SYN-ACK (server ISN si), ACK. */
static void handshake(struct tf *t, uint32_t ci, uint32_t si)
{
	seg_n(t, 1, ci, 0, PK_SYN, NULL, 0, 0);
	seg_n(t, 0, si, ci + 1, PK_SYN | PK_ACK, NULL, 0, 0);
	seg_n(t, 1, ci + 1, si + 1, PK_ACK, NULL, 0, 0);
}

static struct tf_stats ST(struct tf *t) {
	struct tf_stats s;

	tf_stats(t, &s);
	return s;
}

static void
test_in_order(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	handshake(t, 1000, 5000);
	seg(t, 1, 1001, PK_ACK, "GET / HTTP/1.1\r\n", 1);
	seg(t, 1, 1017, PK_ACK, "\r\n", 2);
	seg(t, 0, 5001, PK_ACK, "HTTP/1.1 200 OK\r\n", 3);
	seg(t, 1, 1019, PK_ACK | PK_FIN, NULL, 4);
	seg(t, 0, 5018, PK_ACK | PK_FIN, "x", 5);
	seg(t, 1, 1020, PK_ACK, NULL, 6); /* the last ACK: the connection is gone, ignored */
	assert_string_equal(S(1, TF_C2S), "GET / HTTP/1.1\r\n\r\n");
	assert_string_equal(S(1, TF_S2C), "HTTP/1.1 200 OK\r\nx");
	assert_string_equal(LOG(), "open 1 40000>3001\n"
				   "data 1 c2s 16\n"
				   "data 1 c2s 2\n"
				   "data 1 s2c 17\n"
				   "data 1 s2c 1\n"
				   "close 1 fin\n");
	assert_int_equal(R->copies, 0); /* in order: delivered where it lay */
	assert_int_equal(R->conn[1].saw_syn, 1);
	assert_int_equal(R->conn[1].client.family, AF_INET);
	assert_memory_equal(R->conn[1].client.addr, C.cli, 4);
	assert_memory_equal(R->conn[1].server.addr, C.srv, 4);
	assert_int_equal(R->conn[1].first_us, 0);
	s = ST(t);
	assert_int_equal(s.packets, 9);
	assert_int_equal(s.connections, 1);
	assert_int_equal(s.midstream, 0);
	assert_int_equal(s.retransmitted + s.out_of_order + s.gaps + s.truncated + s.malformed, 0);
	assert_int_equal(s.bad_link + s.not_ip + s.not_tcp, 0);
	tf_finish(t, 10000);
	assert_int_equal(R->calls, 4);
	done(t);
}

static void test_reordered(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	handshake(t, 100, 900);
	seg(t, 1, 101, PK_ACK, "aaaa", 1);
	seg(t, 1, 109, PK_ACK, "cccc", 2); /* before bbbb */
	seg(t, 1, 117, PK_ACK, "eeee", 3); /* before dddd */
	assert_string_equal(S(1, TF_C2S), "aaaa");
	seg(t, 1, 105, PK_ACK, "bbbb", 4);
	assert_string_equal(S(1, TF_C2S), "aaaabbbbcccc");
	seg(t, 1, 113, PK_ACK, "dddd", 5);
	assert_string_equal(S(1, TF_C2S), "aaaabbbbccccddddeeee");
	s = ST(t);
	assert_int_equal(s.out_of_order, 2);
	assert_int_equal(s.retransmitted, 0);
	assert_int_equal(s.gaps, 0);
	tf_finish(t, 10000);
	assert_string_equal(LOG() + strlen(LOG()) - strlen("close 1 eof\n"), "close 1 eof\n");
	done(t);
}

static void test_retransmit_overlap(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	handshake(t, 0, 0);
	seg(t, 1, 1, PK_ACK, "01234", 1);
	seg(t, 1, 1, PK_ACK, "01234", 2); /* a retransmission: nothing new */
	seg(t, 1, 4, PK_ACK, "XXxyz", 3); /* overlaps: only "xyz" is new */
	assert_string_equal(S(1, TF_C2S), "01234xyz");
	s = ST(t);
	assert_int_equal(s.retransmitted, 2);
	/* Held bytes win over a later copy of them. */
	seg(t, 1, 11, PK_ACK, "KLM", 4);      /* [10,13) held */
	seg(t, 1, 15, PK_ACK, "PQ", 5);       /* [14,16) held */
	seg(t, 1, 9, PK_ACK, "9abcdefgh", 6); /* [8,17): new: [8,10) "9a", [13,14) "e", [16,17) "h" */
	assert_string_equal(S(1, TF_C2S), "01234xyz9aKLMePQh");
	s = ST(t);
	assert_int_equal(s.retransmitted, 3);
	assert_int_equal(s.out_of_order, 2);
	/* An early segment overlapping held ones keeps only what they lack. */
	seg(t, 1, 21, PK_ACK, "uv", 7);    /* [20,22) */
	seg(t, 1, 19, PK_ACK, "stUVw", 8); /* [18,23): new [18,20) and [22,23) */
	seg(t, 1, 19, PK_ACK, "ST", 9);    /* all held already */
	seg(t, 1, 18, PK_ACK, "r", 10);
	assert_string_equal(S(1, TF_C2S), "01234xyz9aKLMePQhrstuvw");
	s = ST(t);
	assert_int_equal(s.retransmitted, 5);
	assert_int_equal(s.out_of_order, 5); /* ST too: early, though nothing of it was new */
	assert_int_equal(s.gaps, 0);
	assert_int_equal(R->copies, 5); /* KLM, PQ, st, uv and w came from held copies */
	tf_finish(t, 10000);
	done(t);
}

static void test_lost(void **state)
{
	struct tf *t;
	struct tf_stats s;
	char big[1461];

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	handshake(t, 7, 70);
	memset(big, 'b', 1460);
	big[1460] = '\0';
	seg(t, 1, 8, PK_ACK, "first ", 1);
	/* [6, 1466) lost */
	seg(t, 1, 8 + 1466, PK_ACK, "after", 2);
	seg(t, 1, 8 + 1471, PK_ACK, " more", 3);
	seg(t, 0, 71, PK_ACK, "reply", 4);
	assert_string_equal(S(1, TF_C2S), "first ");
	/* Both FINs with a hole before one: it may still come, for a second of capture time. */
	seg(t, 1, 8 + 1476, PK_ACK | PK_FIN, NULL, 5);
	seg(t, 0, 76, PK_ACK | PK_FIN, NULL, 6);
	assert_string_equal(S(1, TF_C2S), "first ");
	assert_int_equal(R->closed[1], 0);
	seg(t, 1, 8 + 1477, PK_ACK, NULL, 1006); /* (the last ACK, ACKs no data) */
	assert_int_equal(R->closed[1], 0);
	seg(t, 1, 8 + 1477, PK_ACK, NULL, 1007); /* then the hole is given up */
	assert_string_equal(S(1, TF_C2S), "first {1460}after more");
	assert_string_equal(S(1, TF_S2C), "reply");
	s = ST(t);
	assert_int_equal(s.gaps, 1);
	assert_int_equal(s.gap_bytes, 1460);
	assert_int_equal(s.out_of_order, 2);
	assert_int_equal(R->how[1], TF_FIN);
	/* A lost last segment before a FIN: a gap up to the FIN, at once when the FIN is ACKed. */
	C.cport = 40001;
	handshake(t, 1, 1);
	seg(t, 1, 2, PK_ACK, "abc", 10);
	seg(t, 1, 2 + 10, PK_ACK | PK_FIN, NULL, 11);
	seg_n(t, 0, 2, 2 + 11, PK_ACK | PK_FIN, NULL, 0, 12);
	assert_string_equal(S(2, TF_C2S), "abc{7}");
	assert_int_equal(R->how[2], TF_FIN);
	/* Found later: nothing is given up while the connection lives. */
	C.cport = 40002;
	handshake(t, 1, 1);
	seg(t, 1, 2, PK_ACK, "abc", 20);
	seg(t, 1, 8, PK_ACK, "ghi", 21);
	seg(t, 1, 5, PK_ACK, big, 22); /* a retransmission that covers the hole and more */
	assert_int_equal(R->s[3][TF_C2S].len, 1463);
	assert_memory_equal(S(3, TF_C2S), "abcbbbghibbb", 12);
	s = ST(t);
	assert_int_equal(s.gaps, 2);
	assert_int_equal(s.retransmitted, 1); /* ghi was held: the first copy won */
	tf_finish(t, 100000);
	done(t);
}

static void test_wraparound(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	handshake(t, 0xfffffff8u, 0x7ffffff0u);
	seg(t, 1, 0xfffffff9u, PK_ACK, "0123456789", 1); /* across the wrap */
	seg(t, 1, 0x00000003u, PK_ACK, "abc", 2);
	seg(t, 1, 0x00000009u, PK_ACK, "ghi", 3); /* early, past the wrap */
	seg(t, 1, 0xfffffffbu, PK_ACK, "23", 4);  /* old, from before it */
	seg(t, 1, 0x00000006u, PK_ACK, "def", 5);
	seg(t, 0, 0x7ffffff1u, PK_ACK, "ok", 6); /* the server's side passes 2^31 */
	seg(t, 0, 0x7ffffff3u, PK_ACK, "!", 7);
	assert_string_equal(S(1, TF_C2S), "0123456789abcdefghi");
	assert_string_equal(S(1, TF_S2C), "ok!");
	s = ST(t);
	assert_int_equal(s.out_of_order, 1);
	assert_int_equal(s.retransmitted, 1);
	assert_int_equal(s.gaps, 0);
	tf_finish(t, 10000);
	done(t);
}

static void test_midstream_and_swap(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	/* No handshake: the server speaks first; the higher port is the client. */
	seg(t, 0, 5000, PK_ACK, "data: 1\n\n", 1);
	seg(t, 1, 9000, PK_ACK, NULL, 2); /* a bare ACK opens nothing, sets nothing */
	seg(t, 1, 9000, PK_ACK, "POST", 3);
	seg(t, 0, 5009, PK_ACK, "data: 2\n\n", 4);
	assert_string_equal(S(1, TF_S2C), "data: 1\n\ndata: 2\n\n");
	assert_string_equal(S(1, TF_C2S), "POST");
	assert_int_equal(R->conn[1].saw_syn, 0);
	assert_int_equal(R->conn[1].client.port, 40000);
	/* A client on the lower port: guessed wrong, swapped by the handler. */
	C.cport = 1000;
	C.sport = 8080;
	R->swap_at = 2;
	seg(t, 1, 1, PK_ACK, "GET /", 10); /* reported s2c, then swapped */
	seg(t, 1, 6, PK_ACK, " HTTP", 11); /* c2s from now on */
	seg(t, 0, 1, PK_ACK, "200", 12);
	assert_string_equal(S(2, TF_S2C), "GET /200");
	assert_string_equal(S(2, TF_C2S), " HTTP");
	assert_int_equal(R->conn[2].client.port, 8080);
	s = ST(t);
	assert_int_equal(s.connections, 2);
	assert_int_equal(s.midstream, 2);
	tf_finish(t, 20000);
	assert_string_equal(LOG(), "open 1 40000>3001 mid\n"
				   "data 1 s2c 9\n"
				   "data 1 c2s 4\n"
				   "data 1 s2c 9\n"
				   "open 2 8080>1000 mid\n"
				   "data 2 s2c 5\n"
				   "data 2 c2s 5\n"
				   "data 2 s2c 3\n"
				   "close 1 eof\n"
				   "close 2 eof\n");
	/* A swap from the closing connection or of one no longer known does nothing. */
	tf_swap(t, &R->conn[1]);
	done(t);
}

/* A segment with payload and an ACK of the other direction's sequence number ack. */
static void sa(struct tf *t, int c2s, uint32_t seq, uint32_t ack, const char *data, int64_t ms)
{
	seg_n(t, c2s, seq, ack, PK_ACK, data, data ? strlen(data) : 0, ms);
}

static void test_acks(void **state)
{
	const uint32_t ci = 0xfffffff8u, si = 0xfffffffau; /* both streams and their ACKs wrap */
	struct tf *t;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	R->verbose = 1;
	handshake(t, ci, si);
	sa(t, 1, ci + 1, si + 1, "GET /a", 1); /* client [0, 6): the SYN-ACK's ACK is offset 0 */
	sa(t, 0, si + 1, ci + 7, "OK-a", 2);
	sa(t, 0, si + 5, ci + 7, "more", 3);        /* server [4, 8) across the wrap */
	sa(t, 1, ci + 11, si + 9, "HELD", 4);       /* client [10, 14), held with its own ACK (8) */
	sa(t, 1, ci + 7, si + 5, "abcd", 5);        /* [6, 10), ACK 4: then HELD as it came */
	seg_n(t, 1, ci + 15, 0, PK_PSH, "x", 1, 6); /* no ACK flag */
	seg_n(t, 1, ci + 16, si + 9, PK_ACK | PK_FIN, NULL, 0, 7);
	sa(t, 0, si + 9, ci + 17, "bye", 8); /* ACKs the FIN: the stream's 15 bytes */
	/* Seen from the middle, the client guessed wrong and swapped at its first data. */
	C.cport = 1000;
	C.sport = 8080;
	R->swap_at = 2;
	sa(t, 1, 1, 500, "GET /", 10); /* the other side's start is not known yet */
	sa(t, 0, 500, 6, "200", 11);
	sa(t, 1, 6, 503, " HTTP", 12);
	sa(t, 0, 505, 11, "ZZ", 13); /* held after a hole of 2 */
	sa(t, 0, 503, 8, "YY", 14);
	tf_finish(t, 20000);
	assert_string_equal(S(1, TF_C2S), "GET /aabcdHELDx");
	assert_string_equal(S(1, TF_S2C), "OK-amorebye");
	assert_string_equal(S(2, TF_C2S), " HTTP");
	assert_string_equal(S(2, TF_S2C), "GET /200YYZZ");
	assert_string_equal(LOG(), "open 1 40000>3001\n"
				   "data 1 c2s 6 ack=0 @1000\n"
				   "data 1 s2c 4 ack=6 @2000\n"
				   "data 1 s2c 4 ack=6 @3000\n"
				   "data 1 c2s 4 ack=4 @5000\n"
				   "data 1 c2s 4 ack=8 @4000\n"
				   "data 1 c2s 1 ack=- @6000\n"
				   "data 1 s2c 3 ack=15 @8000\n"
				   "open 2 8080>1000 mid\n"
				   "data 2 s2c 5 ack=- @10000\n"
				   "data 2 s2c 3 ack=5 @11000\n"
				   "data 2 c2s 5 ack=3 @12000\n"
				   "data 2 s2c 2 ack=7 @14000\n"
				   "data 2 s2c 2 ack=10 @13000\n"
				   "close 1 eof @20000\n"
				   "close 2 eof @20000\n");
	done(t);
}

static void test_ack_gives_up(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	R->verbose = 1;
	handshake(t, 100, 500);
	sa(t, 1, 101, 501, "req1;", 1);
	/* req2; [5, 10) lost */
	sa(t, 1, 111, 501, "req3;", 3); /* held */
	sa(t, 0, 501, 106, "resp1", 4); /* ACKs up to the hole: nothing given up */
	sa(t, 0, 506, 116, "resp2", 5); /* ACKs past it: a gap, req3;, then resp2 */
	assert_string_equal(S(1, TF_C2S), "req1;{5}req3;");
	/* An ACK into a hole gives up only what it covers. */
	sa(t, 1, 121, 511, "req5;", 6);            /* [20, 25) held; [15, 20) missing */
	seg_n(t, 0, 511, 118, PK_ACK, NULL, 0, 7); /* up to 17 */
	sa(t, 1, 116, 511, "req4;", 8);            /* [15, 17) given up already: "q4;" is new */
	/* Nothing held: what was acknowledged and never seen is a gap before the reply. */
	sa(t, 0, 511, 131, "resp6", 9); /* req6; [25, 30) was never captured */
	/* An ACK far past all that was seen is not believed. */
	sa(t, 0, 516, 131 + (1u << 21), "x", 10);
	seg_n(t, 1, 131, 517, PK_ACK | PK_FIN, NULL, 0, 11);
	seg_n(t, 0, 517, 132, PK_ACK | PK_FIN, NULL, 0, 12);
	assert_string_equal(S(1, TF_C2S), "req1;{5}req3;{2}q4;req5;{5}");
	assert_string_equal(S(1, TF_S2C), "resp1resp2resp6x");
	assert_string_equal(LOG(), "open 1 40000>3001\n"
				   "data 1 c2s 5 ack=0 @1000\n"
				   "data 1 s2c 5 ack=5 @4000\n"
				   "gap 1 c2s 5 @5000\n"
				   "data 1 c2s 5 ack=0 @3000\n"
				   "data 1 s2c 5 ack=15 @5000\n"
				   "gap 1 c2s 2 @7000\n"
				   "data 1 c2s 3 ack=10 @8000\n"
				   "data 1 c2s 5 ack=10 @6000\n"
				   "gap 1 c2s 5 @9000\n"
				   "data 1 s2c 5 ack=30 @9000\n"
				   "data 1 s2c 1 ack=- @10000\n"
				   "close 1 fin @12000\n");
	s = ST(t);
	assert_int_equal(s.gaps, 3);
	assert_int_equal(s.gap_bytes, 12);
	assert_int_equal(s.ack_gaps, 3);
	assert_int_equal(s.retransmitted, 1);
	assert_int_equal(s.out_of_order, 2);
	assert_int_equal(s.connections, 1);
	/* The server's stream too (an SSE stream goes on after a lost segment), held bytes and all. */
	C.cport = 40001;
	handshake(t, 1, 1);
	sa(t, 0, 2, 1, "data: 1\n\n", 20);
	/* "data: 2\n\n" lost */
	sa(t, 0, 20, 1, "data: 3\n\n", 22);
	sa(t, 0, 29, 1, "data: 4\n\n", 23);
	assert_string_equal(S(2, TF_S2C), "data: 1\n\n");
	seg_n(t, 1, 1, 38, PK_ACK, NULL, 0, 24); /* the client's ACK of all of it */
	assert_string_equal(S(2, TF_S2C), "data: 1\n\n{9}data: 3\n\ndata: 4\n\n");
	assert_int_equal(R->closed[2], 0);
	assert_int_equal(ST(t).ack_gaps, 4);
	tf_finish(t, 30000);
	done(t);
}

static void test_fin_rst(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	/* Half close: the server goes on after the client's FIN; bytes past a FIN are not the stream. */
	handshake(t, 10, 20);
	seg(t, 1, 11, PK_ACK | PK_FIN, "req", 1);
	seg(t, 1, 14, PK_ACK, "zzz", 2);
	seg(t, 0, 21, PK_ACK, "resp", 3);
	assert_int_equal(R->closed[1], 0);
	seg(t, 0, 25, PK_ACK | PK_FIN, "onse", 4);
	assert_string_equal(S(1, TF_C2S), "req");
	assert_string_equal(S(1, TF_S2C), "response");
	assert_int_equal(R->how[1], TF_FIN);
	/* A RST: what is held goes out, the hole as a gap; a RST's payload is not data. */
	C.cport = 40001;
	handshake(t, 10, 20);
	seg(t, 1, 11, PK_ACK, "ab", 10);
	seg(t, 1, 15, PK_ACK, "ef", 11);
	seg(t, 0, 21, PK_ACK | PK_RST, "reset reason", 12);
	assert_string_equal(S(2, TF_C2S), "ab{2}ef");
	assert_string_equal(S(2, TF_S2C), "");
	assert_int_equal(R->how[2], TF_RST);
	/* A RST for no connection, and after it: nothing. */
	seg(t, 0, 21, PK_ACK | PK_RST, NULL, 13);
	/* A SYN with a new ISN on an open 4-tuple: a new connection; the same ISN: a retransmission. */
	C.cport = 40002;
	handshake(t, 100, 200);
	seg(t, 1, 101, PK_ACK, "one", 20);
	seg_n(t, 1, 100, 0, PK_SYN, NULL, 0, 21);
	seg_n(t, 1, 7777, 0, PK_SYN, NULL, 0, 22);
	seg_n(t, 0, 300, 7778, PK_SYN | PK_ACK, NULL, 0, 23);
	seg(t, 1, 7778, PK_ACK, "two", 24);
	assert_string_equal(S(3, TF_C2S), "one");
	assert_int_equal(R->how[3], TF_REUSED); /* no limit was hit */
	assert_string_equal(S(4, TF_C2S), "two");
	/* A capture that starts at the SYN-ACK: its receiver is the client. */
	C.cport = 40003;
	seg_n(t, 0, 50, 1001, PK_SYN | PK_ACK, NULL, 0, 30);
	seg(t, 1, 1001, PK_ACK, "x", 31);
	seg(t, 0, 51, PK_ACK, "y", 32);
	assert_int_equal(R->conn[5].saw_syn, 1);
	assert_int_equal(R->conn[5].client.port, 40003);
	assert_string_equal(S(5, TF_C2S), "x");
	assert_string_equal(S(5, TF_S2C), "y");
	s = ST(t);
	assert_int_equal(s.connections, 5);
	assert_int_equal(s.midstream, 0);
	assert_int_equal(s.evicted_full, 0);
	assert_int_equal(s.reused, 1);
	assert_int_equal(s.gaps, 1);
	tf_finish(t, 100000);
	assert_int_equal(R->how[4], TF_EOF);
	assert_int_equal(R->how[5], TF_EOF);
	done(t);
}

/* Segments that come after a connection closed are its own, not a new connection's. */
static void test_closed(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	t = mk();
	R->verbose = 1;
	/* The server's FIN captured before its last data: it waits for it, then closes. */
	handshake(t, 100, 500);
	sa(t, 1, 101, 501, "req", 1);
	seg_n(t, 1, 104, 501, PK_ACK | PK_FIN, NULL, 0, 2);
	seg_n(t, 0, 505, 105, PK_ACK | PK_FIN, NULL, 0, 3); /* past [0, 4), not captured yet */
	assert_int_equal(R->closed[1], 0);
	sa(t, 0, 501, 105, "resp", 4);
	assert_int_equal(R->how[1], TF_FIN);
	seg_n(t, 1, 105, 506, PK_ACK, NULL, 0, 5); /* the last ACK */
	sa(t, 0, 501, 105, "resp", 200);           /* sent again after the close */
	sa(t, 0, 505, 105, "zz", 201);             /* past its FIN */
	s = ST(t);
	assert_int_equal(s.connections, 1);
	assert_int_equal(s.retransmitted, 1);
	assert_int_equal(s.late, 1);
	/* A RST, with the server's segments in flight. */
	C.cport = 40001;
	handshake(t, 1000, 2000);
	sa(t, 1, 1001, 2001, "GET", 300);
	sa(t, 0, 2001, 1004, "ev1", 301);
	seg_n(t, 1, 1004, 2004, PK_RST | PK_ACK, NULL, 0, 302);
	sa(t, 0, 2004, 1004, "ev2", 303);
	sa(t, 0, 2007, 1004, "ev3", 304);
	s = ST(t);
	assert_int_equal(s.connections, 2);
	assert_int_equal(s.late, 3);
	/* The first 4-tuple: its SYN again is its own; a SYN with another ISN is a new connection. */
	C.cport = 40000;
	seg_n(t, 1, 100, 0, PK_SYN, NULL, 0, 400);
	assert_int_equal(ST(t).connections, 2);
	seg_n(t, 1, 7000, 0, PK_SYN, NULL, 0, 401);
	seg_n(t, 0, 9000, 7001, PK_SYN | PK_ACK, NULL, 0, 402);
	sa(t, 1, 7001, 9001, "new", 403);
	seg_n(t, 0, 9001, 7004, PK_RST | PK_ACK, NULL, 0, 404);
	/* Payload far from the ranges of the one that closed: another connection, seen mid-stream. */
	sa(t, 1, 7004 + 0x40000000u, 9001, "far", 405);
	/* The RST's 4-tuple: its own for 60 s of capture time, then forgotten. */
	C.cport = 40001;
	sa(t, 0, 2010, 1004, "ev4", 60302);
	assert_int_equal(ST(t).connections, 4);
	sa(t, 0, 2010, 1004, "ev4", 60303);
	assert_int_equal(ST(t).connections, 5);
	/* A FIN past a hole, then the ACK of that FIN: the hole is a gap and the connection closes. */
	C.cport = 40002;
	handshake(t, 1, 1);
	sa(t, 1, 2, 2, "req", 60400);
	seg_n(t, 1, 5, 2, PK_ACK | PK_FIN, NULL, 0, 60401);
	seg_n(t, 0, 6, 6, PK_ACK | PK_FIN, NULL, 0, 60402);
	seg_n(t, 1, 6, 7, PK_ACK, NULL, 0, 60403);
	sa(t, 0, 2, 6, "resp", 60404); /* too late: given up already */
	tf_finish(t, 70000000);
	assert_string_equal(LOG(), "open 1 40000>3001\n"
				   "data 1 c2s 3 ack=0 @1000\n"
				   "data 1 s2c 4 ack=3 @4000\n"
				   "close 1 fin @4000\n"
				   "open 2 40001>3001\n"
				   "data 2 c2s 3 ack=0 @300000\n"
				   "data 2 s2c 3 ack=3 @301000\n"
				   "close 2 rst @302000\n"
				   "open 3 40000>3001\n"
				   "data 3 c2s 3 ack=0 @403000\n"
				   "close 3 rst @404000\n"
				   "open 4 40000>3001 mid\n"
				   "data 4 c2s 3 ack=- @405000\n"
				   "open 5 40001>3001 mid\n"
				   "data 5 s2c 3 ack=- @60303000\n"
				   "open 6 40002>3001\n"
				   "data 6 c2s 3 ack=0 @60400000\n"
				   "gap 6 s2c 4 @60403000\n"
				   "close 6 fin @60403000\n"
				   "close 4 eof @70000000\n"
				   "close 5 eof @70000000\n");
	s = ST(t);
	assert_int_equal(s.connections, 6);
	assert_int_equal(s.midstream, 2);
	assert_int_equal(s.late, 4);
	assert_int_equal(s.retransmitted, 2);
	assert_int_equal(s.gaps, 1);
	assert_int_equal(s.ack_gaps, 1);
	assert_int_equal(s.reused + s.evicted_full + s.evicted_idle, 0);
	done(t);

	/* Remembered closed connections are bounded by max_flows: the oldest is forgotten. */
	L.max_flows = 2;
	t = mk();
	for (int k = 0; k < 3; k++) {
		C.cport = (uint16_t)(40010 + k);
		handshake(t, 1, 1);
		sa(t, 1, 2, 2, "x", 1);
		seg_n(t, 1, 3, 2, PK_RST | PK_ACK, NULL, 0, 2);
	}
	sa(t, 0, 2, 3, "y", 3); /* 40012: its own */
	C.cport = 40010;
	sa(t, 0, 2, 3, "y", 3); /* forgotten: a new connection */
	s = ST(t);
	assert_int_equal(s.connections, 4);
	assert_int_equal(s.late, 1);
	assert_int_equal(R->conn[4].client.port, 40010);
	assert_int_equal(R->conn[4].saw_syn, 0);
	tf_finish(t, 10000);
	done(t);
}

static void test_idle(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	L.idle_ms = 1000;
	t = mk();
	seg(t, 1, 1, PK_ACK, "a", 0);
	seg(t, 1, 5, PK_ACK, "e", 0); /* held after a hole */
	C.cport = 40001;
	seg(t, 1, 1, PK_ACK, "b", 1000); /* exactly idle_ms later: still open */
	assert_int_equal(R->closed[1], 0);
	seg(t, 1, 2, PK_ACK, "c", 1001); /* now it has been idle longer */
	assert_int_equal(R->how[1], TF_IDLE);
	assert_string_equal(S(1, TF_C2S), "a{3}e");
	/* Time going back counts as the latest time seen. */
	seg(t, 1, 3, PK_ACK, "d", 500);
	assert_int_equal(R->closed[2], 0);
	/* Its 4-tuple again: a new connection. */
	C.cport = 40000;
	seg(t, 1, 6, PK_ACK, "f", 1500);
	assert_string_equal(S(3, TF_C2S), "f");
	seg(t, 1, 7, PK_ACK, "g", 2600); /* conn 2 (last seen at 1001) and 3 (1500) are idle */
	assert_int_equal(R->how[2], TF_IDLE);
	assert_int_equal(R->how[3], TF_IDLE);
	s = ST(t);
	assert_int_equal(s.evicted_idle, 3);
	assert_int_equal(s.connections, 4);
	tf_finish(t, 3000);
	done(t);
}

/* Times: each packet keeps its own; the clock that judges idleness doubts one far away. */
static void test_time(void **state)
{
	const int64_t b = 10000000;                         /* ms */
	const int64_t far = b + 100LL * 365 * 86400 * 1000; /* a century later */
	const int64_t p = b + 632001, q = b - 7200000;
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	L.idle_ms = 30000;
	t = mk();
	R->verbose = 1;
	sa(t, 1, 1, 1, "a", b + 1000);
	sa(t, 0, 1, 2, "b", b + 2000);
	/* One packet of another connection stamped a century ahead: its own time, nothing idle. */
	C.cport = 50000;
	sa(t, 1, 1, 1, "X", far);
	C.cport = 40000;
	sa(t, 1, 2, 2, "c", b + 3000);
	assert_int_equal(R->closed[1], 0);
	/* The clock went on from b + 2000 for it: idle 30 s later, as 1 is not yet. */
	sa(t, 0, 2, 3, "d", b + 32001);
	assert_int_equal(R->how[2], TF_IDLE);
	assert_int_equal(R->closed[1], 0);
	/* Three packets in a row 10 min on (a pause): the clock goes there, 1 is idle, not 3. */
	C.cport = 40002;
	sa(t, 1, 1, 1, "e", p);
	sa(t, 1, 2, 1, "f", p + 1);
	assert_int_equal(R->closed[1], 0);
	sa(t, 1, 3, 1, "g", p + 2);
	assert_int_equal(R->how[1], TF_IDLE);
	/* A capture 2 hours earlier merged after: three in a row bring the clock back. */
	C.cport = 40003;
	sa(t, 1, 1, 1, "h", q);
	sa(t, 1, 2, 1, "i", q + 1);
	sa(t, 1, 3, 1, "j", q + 2);
	sa(t, 1, 4, 1, "k", q + 20000);
	assert_int_equal(R->closed[3], 0);
	sa(t, 1, 5, 1, "l", q + 32003); /* 3 idle from q + 2 on */
	assert_int_equal(R->how[3], TF_IDLE);
	/* The end the capture says is the century-ahead time: not believed either. */
	tf_finish(t, far * 1000);
	assert_string_equal(LOG(), "open 1 40000>3001 mid\n"
				   "data 1 c2s 1 ack=- @10001000000\n"
				   "data 1 s2c 1 ack=1 @10002000000\n"
				   "open 2 50000>3001 mid\n"
				   "data 2 c2s 1 ack=- @3153610000000000\n"
				   "data 1 c2s 1 ack=1 @10003000000\n"
				   "close 2 idle @10032001000\n"
				   "data 1 s2c 1 ack=2 @10032001000\n"
				   "open 3 40002>3001 mid\n"
				   "data 3 c2s 1 ack=- @10632001000\n"
				   "data 3 c2s 1 ack=- @10632002000\n"
				   "close 1 idle @10632001000\n"
				   "data 3 c2s 1 ack=- @10632003000\n"
				   "open 4 40003>3001 mid\n"
				   "data 4 c2s 1 ack=- @2800000000\n"
				   "data 4 c2s 1 ack=- @2800001000\n"
				   "data 4 c2s 1 ack=- @2800002000\n"
				   "data 4 c2s 1 ack=- @2820000000\n"
				   "close 3 idle @2832003000\n"
				   "data 4 c2s 1 ack=- @2832003000\n"
				   "close 4 eof @2832003000\n");
	s = ST(t);
	assert_int_equal(s.connections, 4);
	assert_int_equal(s.evicted_idle, 3);
	done(t);
}

static void fill(char *b, size_t n, char c)
{
	memset(b, c, n);
	b[n] = '\0';
}

static void test_flow_bound(void **state)
{
	struct tf *t;
	struct tf_stats s;
	char a[101], b[101], c[101], big[301];

	(void)state;
	conv(DLT_EN10MB, 0);
	fill(a, 100, 'a');
	fill(b, 100, 'b');
	fill(c, 100, 'c');
	fill(big, 300, 'B');
	L.flow_bytes = 2 * (100 + 64); /* two held segments of 100 bytes */
	t = mk();
	handshake(t, 0, 0);
	/* [0, 10) lost, then three segments: the third passes the bound. */
	seg(t, 1, 11, PK_ACK, a, 1);
	seg(t, 1, 111, PK_ACK, b, 2);
	assert_int_equal(ST(t).flow_limit_hits, 0);
	seg(t, 1, 211, PK_ACK, c, 3);
	s = ST(t);
	assert_int_equal(s.flow_limit_hits, 1);
	assert_int_equal(s.gaps, 1);
	assert_int_equal(s.gap_bytes, 10);
	assert_int_equal(s.out_of_order, 3);
	assert_int_equal(R->s[1][TF_C2S].len, 4 + 300);
	assert_memory_equal(S(1, TF_C2S), "{10}aaa", 7);
	/* One segment bigger than the bound alone: a gap, and it goes straight out. */
	seg(t, 1, 321, PK_ACK, big, 4); /* hole [310, 320), then 300 bytes */
	s = ST(t);
	assert_int_equal(s.flow_limit_hits, 2);
	assert_int_equal(s.gaps, 2);
	assert_int_equal(s.gap_bytes, 20);
	assert_int_equal(R->s[1][TF_C2S].len, 4 + 300 + 4 + 300);
	/* Three holes: the first is given up on, the others stay while they fit. */
	seg(t, 1, 631, PK_ACK, a, 5); /* hole [620, 630) */
	seg(t, 1, 741, PK_ACK, b, 6); /* hole [730, 740) */
	seg(t, 1, 851, PK_ACK, c, 7); /* hole [840, 850): 3 held would pass */
	s = ST(t);
	assert_int_equal(s.flow_limit_hits, 3);
	assert_int_equal(s.gaps, 3);
	assert_int_equal(s.gap_bytes, 30);
	assert_int_equal(R->s[1][TF_C2S].len, 608 + 4 + 100);
	assert_memory_equal(S(1, TF_C2S) + 608, "{10}aaa", 7);
	tf_finish(t, 1000);
	s = ST(t);
	assert_int_equal(s.gaps, 5);
	assert_int_equal(s.gap_bytes, 50);
	assert_int_equal(R->s[1][TF_C2S].len, 608 + 4 + 100 + 4 + 100 + 4 + 100);
	assert_memory_equal(S(1, TF_C2S) + 712, "{10}bbb", 7);
	done(t);
}

/* What the reassembler counts of its own against the budget. */
struct costs {
	size_t start;  /* once made (its hash table) */
	size_t conn;   /* a connection */
	size_t gone;   /* a closed connection remembered */
	size_t gtable; /* the table of those, made at the first */
};

/* Measured on a reassembler of its own (R is made anew after). */
static struct costs measure(void)
{
	struct costs k;
	struct tf *t;
	size_t one;

	conv(DLT_EN10MB, 0);
	t = mk();
	k.start = R->mem.used;
	seg(t, 1, 1, PK_ACK, "x", 1);
	k.conn = R->mem.used - k.start;
	seg(t, 1, 2, PK_ACK | PK_FIN, NULL, 2);
	seg(t, 0, 1, PK_ACK | PK_FIN, NULL, 3);
	assert_int_equal(R->how[1], TF_FIN);
	one = R->mem.used;
	C.cport = 40001;
	seg(t, 1, 1, PK_ACK, "x", 4);
	seg(t, 1, 2, PK_ACK | PK_FIN, NULL, 5);
	seg(t, 0, 1, PK_ACK | PK_FIN, NULL, 6);
	k.gone = R->mem.used - one;
	k.gtable = one - k.start - k.gone;
	done(t);
	/* (What the tests below take for granted of these sizes.) */
	assert_true(k.conn > 164 && k.conn < 1500 && k.gone > 0 && k.gone < 1000);
	assert_int_equal(k.gtable, 256 * sizeof(void *) + MT_MEM_CHUNK);
	conv(DLT_EN10MB, 0);
	return k;
}

static void test_total_bound(void **state)
{
	struct tf *t;
	struct tf_stats s;
	struct costs k;
	char a[101], big[2001], want[700];

	(void)state;
	k = measure();
	fill(a, 100, 'a');
	fill(big, 2000, 'B');
	/* Room for two connections and three held segments of 100 bytes, exactly. */
	L.total_bytes = k.start + 2 * k.conn + 3 * (100 + 64);
	t = mk();
	seg(t, 1, 1, PK_ACK, "x", 1); /* conn 1 */
	seg(t, 1, 11, PK_ACK, a, 2);  /* holds 164 */
	seg(t, 1, 111, PK_ACK, a, 3); /* 328 */
	C.cport = 40001;
	seg(t, 1, 1, PK_ACK, "y", 4); /* conn 2 */
	seg(t, 1, 11, PK_ACK, a, 5);  /* 492: all that fits */
	assert_int_equal(R->mem.used, L.total_bytes);
	assert_int_equal(ST(t).total_limit_hits, 0);
	/* One more to hold: the connection seen longest ago is given up (its
	 * hole a gap, what it held delivered), not conn 2's hole. */
	seg(t, 1, 111, PK_ACK, a, 6);
	s = ST(t);
	assert_int_equal(s.total_limit_hits, 1);
	assert_int_equal(s.evicted_memory, 1);
	assert_int_equal(s.flow_limit_hits + s.evicted_full + s.evicted_idle, 0);
	assert_int_equal(R->how[1], TF_MEMORY);
	snprintf(want, sizeof(want), "x{9}%s%s", a, a);
	assert_string_equal(S(1, TF_C2S), want);
	assert_int_equal(s.gaps, 1);
	assert_int_equal(R->closed[2], 0);
	assert_string_equal(S(2, TF_C2S), "y");
	assert_int_equal(R->mem.used, k.start + k.conn + 2 * 164);
	seg(t, 1, 211, PK_ACK, a, 7); /* fits: a connection costs more */
	seg(t, 1, 311, PK_ACK, a, 8);
	assert_int_equal(R->mem.used, k.start + k.conn + 4 * 164);
	assert_int_equal(ST(t).total_limit_hits, 1);
	/* A new connection that would pass it: conn 2, the only other, goes. */
	C.cport = 40002;
	seg(t, 1, 1, PK_ACK, "z", 9); /* conn 3 */
	s = ST(t);
	assert_int_equal(s.total_limit_hits, 2);
	assert_int_equal(s.evicted_memory, 2);
	assert_int_equal(R->how[2], TF_MEMORY);
	snprintf(want, sizeof(want), "y{9}%s%s%s%s", a, a, a, a);
	assert_string_equal(S(2, TF_C2S), want);
	assert_int_equal(R->mem.used, k.start + k.conn);
	/* Alone, a segment bigger than all the room there is: not held, its
	 * hole a gap at once, the segment delivered. */
	seg(t, 1, 11, PK_ACK, big, 10);
	s = ST(t);
	assert_int_equal(s.total_limit_hits, 3);
	assert_int_equal(s.evicted_memory, 2);
	assert_int_equal(s.gaps, 3);
	assert_int_equal(R->closed[3], 0);
	assert_int_equal(R->s[3][TF_C2S].len, 1 + 3 + 2000);
	assert_memory_equal(S(3, TF_C2S), "z{9}BBB", 7);
	assert_int_equal(R->mem.used, k.start + k.conn);
	tf_finish(t, 1000);
	assert_int_equal(R->how[3], TF_EOF);
	assert_int_equal(R->mem.used, k.start); /* (its hash table only) */
	assert_int_equal(R->mem.peak, L.total_bytes);
	done(t);
}

/* The test's stand-in for memory kept apart from connections (mt_mem.reclaim). */
static size_t spare;
static unsigned reclaims;

static size_t give_back(void *ctx, size_t need)
{
	struct mt_mem *m = ctx;
	size_t n = spare;

	(void)need;
	reclaims++;
	spare = 0;
	mt_mem_sub(m, n);
	return n;
}

/* The handler's memory in the same budget: what it frees apart from connections first. */
static void test_memory_budget(void **state)
{
	struct tf *t;
	struct tf_stats s;
	struct costs k;
	size_t unit, b, d;
	static char data[8192];

	(void)state;
	k = measure();
	unit = k.conn + 1000; /* a connection and what the handler holds for it */
	/* The handler's 300 bytes apart from connections, four connections, and 100 to spare. */
	b = L.total_bytes = k.start + 300 + 4 * unit + 100;
	t = mk();
	R->mem.reclaim = give_back;
	R->mem.reclaim_ctx = &R->mem;
	R->per_conn = 1000;
	spare = 300;
	reclaims = 0;
	mt_mem_add(&R->mem, 300);
	for (int i = 0; i < 4; i++) {
		C.cport = (uint16_t)(40000 + i);
		seg(t, 1, 1, PK_ACK, "c", 1 + i);
	}
	assert_int_equal(R->mem.used, b - 100);
	assert_int_equal(ST(t).total_limit_hits, 0);
	/*
	 * A fifth: the handler gives back its 300 first (asked again, it has
	 * nothing more), then conn 1, seen longest ago, goes; that is room
	 * enough (TF_ROOM_SLACK below the budget, the new connection counted).
	 */
	C.cport = 40004;
	seg(t, 1, 1, PK_ACK, "c", 5);
	s = ST(t);
	assert_int_equal(s.total_limit_hits, 1);
	assert_int_equal(s.evicted_memory, 1);
	assert_int_equal(reclaims, 2);
	assert_int_equal(spare, 0);
	assert_int_equal(R->how[1], TF_MEMORY);
	assert_int_equal(R->closed[2] + R->closed[3] + R->closed[4] + R->closed[5], 0);
	assert_int_equal(R->mem.used, k.start + 4 * unit);
	assert_true(R->mem.used <= b);
	/*
	 * The handler keeps what conn 5 sends: d bytes in one packet pass the
	 * budget, counted at the packet's end: conns 2, 3 and 4 go (d is
	 * halfway between what two and three of them free).
	 */
	R->per_byte = 1;
	d = 5 * unit / 2 + TF_ROOM_SLACK(b) - 400;
	assert_true(d <= sizeof(data));
	memset(data, 'd', d);
	seg_n(t, 1, 2, 0, PK_ACK, data, d, 6);
	s = ST(t);
	assert_int_equal(s.total_limit_hits, 2);
	assert_int_equal(s.evicted_memory, 4);
	assert_int_equal(reclaims, 3);
	for (int i = 2; i <= 4; i++)
		assert_int_equal(R->how[i], TF_MEMORY);
	assert_int_equal(R->closed[5], 0);
	assert_int_equal(R->s[5][TF_C2S].len, 1 + d);
	assert_int_equal(R->mem.used, k.start + unit + d);
	/* The most it counted: that packet's end, before room was made. */
	assert_int_equal(R->mem.peak, k.start + 4 * unit + d);
	s = ST(t);
	assert_int_equal(s.evicted_full + s.evicted_idle + s.flow_limit_hits, 0);
	tf_finish(t, 1000);
	assert_int_equal(R->how[5], TF_EOF);
	/* Every connection closed: nothing counted but the hash table. */
	assert_int_equal(R->mem.used, k.start);
	done(t); /* (and 0 once freed) */
}

/* Closed connections remembered are forgotten before any open one is given up. */
static void test_memory_gone_first(void **state)
{
	struct tf *t;
	struct tf_stats s;
	struct costs k;
	size_t b, d;
	static char data[8192];

	(void)state;
	k = measure();
	/* Ten closed connections remembered, one open, 100 bytes to spare. */
	b = L.total_bytes = k.start + k.gtable + 10 * k.gone + k.conn + 100;
	t = mk();
	for (int i = 0; i < 10; i++) {
		C.cport = (uint16_t)(40000 + i);
		seg(t, 1, 1, PK_ACK, "c", 1 + i);
		seg(t, 1, 2, PK_ACK | PK_FIN, NULL, 1 + i);
		seg(t, 0, 1, PK_ACK | PK_FIN, NULL, 1 + i);
	}
	C.cport = 40010;
	seg(t, 1, 1, PK_ACK, "c", 11); /* conn 11 */
	assert_int_equal(R->mem.used, b - 100);
	/* What it is then sent passes the budget by 5.5 records less the slack: six go. */
	R->per_byte = 1;
	d = 11 * k.gone / 2 + 100 - TF_ROOM_SLACK(b);
	assert_true(d > 100 && d <= sizeof(data));
	memset(data, 'd', d);
	seg_n(t, 1, 2, 0, PK_ACK, data, d, 12);
	s = ST(t);
	assert_int_equal(s.total_limit_hits, 1);
	assert_int_equal(s.evicted_memory, 0);
	assert_int_equal(R->closed[11], 0);
	assert_int_equal(R->mem.used, k.start + k.gtable + 4 * k.gone + k.conn + d);
	/* The oldest six are forgotten: a late segment of the first is a new
	 * connection; one of the seventh is still its own, late. */
	R->per_byte = 0;
	C.cport = 40006;
	seg(t, 1, 2, PK_ACK, "late", 13);
	s = ST(t);
	assert_int_equal(s.late, 1);
	assert_int_equal(s.connections, 11);
	C.cport = 40000;
	seg(t, 1, 2, PK_ACK, "late", 14);
	s = ST(t);
	assert_int_equal(s.late, 1);
	assert_int_equal(s.connections, 12);
	tf_finish(t, 1000);
	done(t);
}

static void test_max_flows(void **state)
{
	struct tf *t;
	struct tf_stats s;

	(void)state;
	conv(DLT_EN10MB, 0);
	L.max_flows = 2;
	t = mk();
	seg(t, 1, 1, PK_ACK, "1", 1);
	C.cport = 40001;
	seg(t, 1, 1, PK_ACK, "2", 2);
	C.cport = 40000;
	seg(t, 1, 2, PK_ACK, "1", 3); /* conn 1 seen last: conn 2 goes first */
	seg(t, 1, 5, PK_ACK, "h", 3); /* held: a gap when evicted */
	C.cport = 40002;
	seg(t, 1, 1, PK_ACK, "3", 4);
	assert_int_equal(R->how[2], TF_EVICTED);
	assert_int_equal(R->closed[1], 0);
	C.cport = 40003;
	seg(t, 1, 1, PK_ACK, "4", 5);
	assert_int_equal(R->how[1], TF_EVICTED);
	assert_string_equal(S(1, TF_C2S), "11{2}h");
	s = ST(t);
	assert_int_equal(s.evicted_full, 2);
	assert_int_equal(s.connections, 4);
	tf_finish(t, 1000);
	assert_int_equal(R->how[3], TF_EOF);
	assert_int_equal(R->how[4], TF_EOF);
	done(t);
}

/* The IP packet of a segment (into ip), for fragmenting. */
static size_t ip_of(uint8_t *ip, int c2s, uint32_t seq, const char *data, uint16_t id)
{
	struct pk_seg s;

	memset(&s, 0, sizeof(s));
	s.v6 = C.v6;
	s.v6_ext = C.ext;
	memcpy(s.src, c2s ? C.cli : C.srv, 16);
	memcpy(s.dst, c2s ? C.srv : C.cli, 16);
	s.sport = c2s ? C.cport : C.sport;
	s.dport = c2s ? C.sport : C.cport;
	s.seq = seq;
	s.flags = PK_ACK;
	s.data = (const uint8_t *)data;
	s.len = strlen(data);
	s.ip_id = id;
	return pk_ip(ip, &s);
}

/* Fragment [off, off + len) of ip, framed and handed at ms. */
static void frag(struct tf *t, const uint8_t *ip, size_t n, size_t off, size_t len, int more, uint32_t id,
		 int64_t ms)
{
	static uint8_t f[PK_MAX], fr[PK_MAX];
	size_t k = pk_frag(fr, ip, n, off, len, more, id);
	size_t m = pk_frame(f, C.linktype, C.tags, fr, k);

	hand(t, ms * 1000, f, m, m);
}

static void fragments(int v6)
{
	static uint8_t ip[PK_MAX], ip2[PK_MAX];
	const char *msg = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"; /* 48 */
	size_t hdr = v6 ? 16 : 0; /* the IPv6 extension headers, fragmented with the rest */
	size_t n, end;
	struct tf *t;
	struct tf_stats s;

	conv(DLT_EN10MB, v6);
	C.ext = v6;
	t = mk();
	handshake(t, 0, 0);
	n = ip_of(ip, 1, 1, msg, 7);
	end = hdr + 20 + 48; /* the fragmentable part */
	/* In order. */
	frag(t, ip, n, 0, 24, 1, 7, 1);
	frag(t, ip, n, 24, 24, 1, 7, 1);
	frag(t, ip, n, 48, end - 48, 0, 7, 1);
	assert_string_equal(S(1, TF_C2S), msg);
	/* Out of order, with an overlapping copy that differs: the first copy wins. */
	n = ip_of(ip, 1, 49, msg, 8);
	memcpy(ip2, ip, n);
	memset(ip2 + (v6 ? 40 : 20) + hdr + 32, 'X', 16); /* the payload's [12, 28) */
	frag(t, ip, n, hdr + 48, end - hdr - 48, 0, 8, 2);
	frag(t, ip2, n, hdr + 16, 32, 1, 8, 2); /* its X bytes */
	frag(t, ip, n, 0, hdr + 40, 1, 8, 2);   /* overlaps the one before: it loses */
	assert_int_equal(R->s[1][TF_C2S].len, 96);
	assert_memory_equal(S(1, TF_C2S) + 48, "0123456789abXXXXXXXXXXXXXXXXstuv", 32);
	s = ST(t);
	assert_int_equal(s.fragments, 6);
	assert_int_equal(s.reassembled, 2);
	assert_int_equal(s.frag_dropped, 0);
	/* One missing: held until 30 s of capture time passed, then dropped and counted. */
	n = ip_of(ip, 1, 97, msg, 9);
	frag(t, ip, n, 0, 24, 1, 9, 3);
	frag(t, ip, n, 48, end - 48, 0, 9, 4);
	seg(t, 0, 1, PK_ACK, "a", 30003);
	assert_int_equal(ST(t).frag_dropped, 0);
	seg(t, 0, 2, PK_ACK, "b", 30004); /* more than 30 s after the first */
	s = ST(t);
	assert_int_equal(s.frag_dropped, 2);
	assert_int_equal(s.fragments, 8);
	assert_int_equal(s.reassembled, 2);
	/* The same id again later: a new datagram. */
	frag(t, ip, n, 24, 24, 1, 9, 30005);
	frag(t, ip, n, 0, 24, 1, 9, 30005);
	frag(t, ip, n, 48, end - 48, 0, 9, 30005);
	assert_int_equal(R->s[1][TF_C2S].len, 144);
	s = ST(t);
	assert_int_equal(s.reassembled, 3);
	assert_int_equal(s.fragments, 11);
	assert_int_equal(s.malformed + s.not_tcp, 0);
	/* Fragments that do not add up: an offset past 65535, a middle one not a multiple of 8. */
	frag(t, ip, n, 65528, 16, 0, 10, 30006);
	frag(t, ip, n, 0, 20, 1, 10, 30006);
	s = ST(t);
	assert_int_equal(s.malformed, 2);
	assert_int_equal(s.fragments, 11);
	/* frag_bytes: the oldest datagram goes first. */
	tf_finish(t, 40000);
	done(t);

	L.frag_bytes = 2 * (64 + 24) + 64 + 16;
	t = mk();
	n = ip_of(ip, 1, 1, msg, 1);
	frag(t, ip, n, 0, 24, 1, 1, 1);  /* 88 */
	frag(t, ip, n, 0, 24, 1, 2, 1);  /* 176 */
	frag(t, ip, n, 24, 16, 1, 3, 1); /* 256: all that fits */
	assert_int_equal(ST(t).frag_dropped, 0);
	frag(t, ip, n, 24, 8, 1, 4, 1); /* datagram 1 goes */
	assert_int_equal(ST(t).frag_dropped, 1);
	frag(t, ip, n, 0, 200, 1, 5, 1); /* bigger than the bound alone: dropped */
	s = ST(t);
	assert_int_equal(s.frag_dropped, 2);
	assert_int_equal(s.fragments, 5);
	tf_finish(t, 2000);
	s = ST(t);
	assert_int_equal(s.frag_dropped, 5);
	done(t);
}

static void test_fragments_v4(void **state)
{
	(void)state;
	fragments(0);
}

static void test_fragments_v6(void **state)
{
	(void)state;
	fragments(1);
}

static void test_truncated(void **state)
{
	static uint8_t f[PK_MAX];
	char d[101];
	struct pk_seg sg;
	struct tf *t;
	struct tf_stats s;
	size_t n;

	(void)state;
	conv(DLT_EN10MB, 0);
	fill(d, 100, 'd');
	t = mk();
	handshake(t, 0, 0);
	memset(&sg, 0, sizeof(sg));
	memcpy(sg.src, C.cli, 4);
	memcpy(sg.dst, C.srv, 4);
	sg.sport = C.cport;
	sg.dport = C.sport;
	sg.flags = PK_ACK;
	sg.data = (const uint8_t *)d;
	sg.len = 100;
	/* In order, its payload cut after 60 bytes: 60 bytes, then a gap of 40. */
	sg.seq = 1;
	n = pk_segment(f, C.linktype, 0, &sg);
	hand(t, 1000, f, n, 14 + 20 + 20 + 60);
	assert_int_equal(R->s[1][TF_C2S].len, 60 + 4);
	assert_string_equal(S(1, TF_C2S) + 60, "{40}");
	/* Early and cut: only what was captured is held; the rest is a hole. */
	sg.seq = 201;
	n = pk_segment(f, C.linktype, 0, &sg);
	hand(t, 2000, f, n, 14 + 20 + 20 + 30);
	sg.seq = 101;
	n = pk_segment(f, C.linktype, 0, &sg);
	hand(t, 3000, f, n, n);
	assert_int_equal(R->s[1][TF_C2S].len, 64 + 100 + 30);
	/* Cut in the TCP header, in the IP header, in the link header: counted, nothing else. */
	sg.seq = 301;
	n = pk_segment(f, C.linktype, 0, &sg);
	hand(t, 4000, f, n, 14 + 20 + 10);
	hand(t, 4000, f, n, 14 + 10);
	hand(t, 4000, f, n, 10);
	s = ST(t);
	assert_int_equal(s.truncated, 5);
	assert_int_equal(s.gaps, 1);
	assert_int_equal(s.malformed, 0);
	assert_int_equal(s.bad_link, 1);
	/* Its TCP options cut: the whole payload is a gap. */
	sg.tcp_opts = 1;
	sg.seq = 301;
	sg.len = 70;
	n = pk_segment(f, C.linktype, 0, &sg);
	fill(d, 70, 'h');
	seg(t, 1, 231, PK_ACK, d, 5); /* fills [230, 300) */
	hand(t, 5000, f, n, 14 + 20 + 24);
	assert_int_equal(R->s[1][TF_C2S].len, 194 + 70 + 4);
	assert_string_equal(S(1, TF_C2S) + 194 + 70, "{70}");
	tf_finish(t, 6000);
	s = ST(t);
	assert_int_equal(s.truncated, 6);
	assert_int_equal(s.gaps, 2);
	assert_int_equal(s.gap_bytes, 110);
	done(t);
}

/* The same conversation on every link type. */
static void test_link_types(void **state)
{
	static const struct {
		int lt, tags, v6;
	} k[] = {
		{DLT_EN10MB, 0, 0},
		{DLT_EN10MB, 1, 0},
		{DLT_EN10MB, 2, 0},
		{DLT_EN10MB, 2, 1},
		{DLT_LINUX_SLL, 0, 0},
		{DLT_LINUX_SLL, 0, 1},
		{DLT_LINUX_SLL2, 0, 0},
		{DLT_LINUX_SLL2, 0, 1},
		{DLT_NULL, 0, 0},
		{DLT_NULL, 0, 1},
		{DLT_LOOP, 0, 0},
		{DLT_LOOP, 0, 1},
		{DLT_RAW, 0, 0},
		{DLT_RAW, 0, 1},
		{101, 0, 0},
		{101, 0, 1},
		{DLT_IPV4, 0, 0},
		{DLT_IPV6, 0, 1},
	};
	static uint8_t f[PK_MAX], ip[PK_MAX];
	struct tf_stats s;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		struct tf *t;
		conv(k[i].lt, k[i].v6);
		C.tags = k[i].tags;
		t = mk();
		handshake(t, 1, 2);
		seg(t, 1, 2, PK_ACK, "ping", 1);
		seg(t, 0, 3, PK_ACK, "pong", 2);
		assert_string_equal(S(1, TF_C2S), "ping");
		assert_string_equal(S(1, TF_S2C), "pong");
		assert_int_equal(R->conn[1].client.family, k[i].v6 ? AF_INET6 : AF_INET);
		assert_memory_equal(R->conn[1].server.addr, C.srv, k[i].v6 ? 16 : 4);
		s = ST(t);
		assert_int_equal(s.bad_link + s.not_ip + s.not_tcp + s.malformed, 0);
		tf_finish(t, 1000);
		done(t);
	}
	/* NULL from a machine of the other byte order. */
	conv(DLT_NULL, 1);
	{
		struct tf *t = mk();
		struct pk_seg sg;
		memset(&sg, 0, sizeof(sg));
		sg.v6 = 1;
		memcpy(sg.src, C.cli, 16);
		memcpy(sg.dst, C.srv, 16);
		sg.sport = C.cport;
		sg.dport = C.sport;
		sg.flags = PK_ACK;
		sg.data = (const uint8_t *)"hi";
		sg.len = 2;
		n = pk_segment(f, DLT_NULL, 0, &sg);
		uint8_t x = f[0];
		f[0] = f[3];
		f[3] = x;
		x = f[1];
		f[1] = f[2];
		f[2] = x;
		hand(t, 0, f, n, n);
		assert_string_equal(S(1, TF_C2S), "hi");
		/* What is not read: another link type, ARP, UDP, IPv6 said to be IPv4, a family. */
		tf_packet(t, 147, 0, n, f, n);
		conv(DLT_EN10MB, 0);
		sg.v6 = 0;
		memcpy(sg.src, C.cli, 16);
		memcpy(sg.dst, C.srv, 16);
		n = pk_segment(f, DLT_EN10MB, 0, &sg);
		f[12] = 0x08;
		f[13] = 0x06;
		tf_packet(t, DLT_EN10MB, 0, n, f, n);
		n = pk_ip(ip, &sg);
		ip[9] = 17;
		tf_packet(t, DLT_RAW, 0, n, ip, n);
		sg.v6 = 1;
		n = pk_ip(ip, &sg);
		tf_packet(t, DLT_IPV4, 0, n, ip, n);
		tf_packet(t, DLT_RAW, 0, 0, ip, 0);
		n = pk_segment(f, DLT_LOOP, 0, &sg);
		f[3] = 7;
		tf_packet(t, DLT_LOOP, 0, n, f, n);
		n = pk_segment(f, DLT_EN10MB, 5, &sg);
		for (int j = 0; j < 9; j++) { /* nine VLAN tags: more than are skipped */
			memmove(f + 16, f + 12, n - 12);
			pk_put16(f + 12, 0x8100);
			pk_put16(f + 14, 1);
			n += 4;
		}
		tf_packet(t, DLT_EN10MB, 0, n, f, n);
		s = ST(t);
		assert_int_equal(s.bad_link, 3);
		assert_int_equal(s.not_ip, 2);
		assert_int_equal(s.not_tcp, 1);
		assert_int_equal(s.malformed, 1);
		tf_finish(t, 1000);
		done(t);
	}
}

/* Garbage of every length on every link type, and valid packets with bytes changed. */
static void test_garbage(void **state)
{
	static const int lts[] = {DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_NULL, DLT_LOOP, DLT_RAW,
				  101,        DLT_IPV4,      DLT_IPV6,       147,      -1};
	static uint8_t f[PK_MAX];
	uint32_t r = 12345;
	struct tf *t;
	struct tf_stats s;
	uint64_t count = 0;

	(void)state;
	L.flow_bytes = 2000;
	L.total_bytes = 5000;
	L.max_flows = 8;
	L.frag_bytes = 3000;
	L.idle_ms = 50;
	t = mk();
	for (size_t i = 0; i < sizeof(lts) / sizeof(lts[0]); i++) {
		for (size_t len = 0; len <= 160; len++) {
			for (int rep = 0; rep < 8; rep++) {
				for (size_t j = 0; j < len; j++) {
					r = r * 1103515245u + 12345u;
					f[j] = (uint8_t)(r >> 16);
				}
				/* Now and then a header that gets further. */
				if (rep & 1 && len > 20 && lts[i] == DLT_RAW) {
					f[0] = rep & 2 ? 0x45 : 0x60;
					f[9] = 6;
					f[6] = 6;
				}
				tf_packet(t, lts[i], (int64_t)count * 7, len + (rep & 4 ? 9 : 0), f, len);
				count++;
			}
		}
	}
	/* Valid segments of random sequence numbers, flags and sizes, bytes flipped. */
	conv(DLT_EN10MB, 0);
	for (int i = 0; i < 20000; i++) {
		struct pk_seg sg;
		size_t n;
		memset(&sg, 0, sizeof(sg));
		r = r * 1103515245u + 12345u;
		sg.v6 = r >> 31;
		memcpy(sg.src, C.cli, 16);
		memcpy(sg.dst, C.srv, 16);
		sg.sport = (uint16_t)(40000 + (r >> 8) % 5);
		sg.dport = 3001;
		sg.seq = (r >> 4) % 3000;
		sg.flags = (uint8_t)((r >> 12) & 0x17);
		sg.data = f + 30000;
		sg.len = (r >> 16) % 700;
		n = pk_segment(f, DLT_EN10MB, (r >> 20) % 3, &sg);
		r = r * 1103515245u + 12345u;
		if (r & 1)
			f[(r >> 8) % n] ^= (uint8_t)(r >> 24);
		tf_packet(t, DLT_EN10MB, (int64_t)i * 3, n, f, (r >> 4) & 1 ? n : (r >> 5) % (n + 1));
		count++;
	}
	/* Times at both ends of int64 (found by fuzzing: a difference of two overflowed). */
	seg(t, 1, 1, PK_ACK, "x", INT64_MIN / 1000);
	seg(t, 1, 2, PK_ACK, "y", INT64_MAX / 1000);
	seg(t, 1, 3, PK_ACK, "z", INT64_MIN / 1000);
	count += 3;
	tf_finish(t, INT64_MAX);
	s = ST(t);
	assert_int_equal(s.packets, count);
	assert_true(s.connections > 0);
	done(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_in_order, setup),
		cmocka_unit_test_setup(test_reordered, setup),
		cmocka_unit_test_setup(test_retransmit_overlap, setup),
		cmocka_unit_test_setup(test_lost, setup),
		cmocka_unit_test_setup(test_wraparound, setup),
		cmocka_unit_test_setup(test_midstream_and_swap, setup),
		cmocka_unit_test_setup(test_acks, setup),
		cmocka_unit_test_setup(test_ack_gives_up, setup),
		cmocka_unit_test_setup(test_fin_rst, setup),
		cmocka_unit_test_setup(test_closed, setup),
		cmocka_unit_test_setup(test_idle, setup),
		cmocka_unit_test_setup(test_time, setup),
		cmocka_unit_test_setup(test_flow_bound, setup),
		cmocka_unit_test_setup(test_total_bound, setup),
		cmocka_unit_test_setup(test_memory_budget, setup),
		cmocka_unit_test_setup(test_memory_gone_first, setup),
		cmocka_unit_test_setup(test_max_flows, setup),
		cmocka_unit_test_setup(test_fragments_v4, setup),
		cmocka_unit_test_setup(test_fragments_v6, setup),
		cmocka_unit_test_setup(test_truncated, setup),
		cmocka_unit_test_setup(test_link_types, setup),
		cmocka_unit_test_setup(test_garbage, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
