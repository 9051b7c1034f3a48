/*
 * test-tcpflow.c - the TCP reassembler of pcap import (tap/tcpflow.h), on
 * packets crafted in memory (tests/peers/pktcraft.h): segments in order (and
 * delivered in place), reordered, retransmitted and overlapping (the first
 * copy wins), lost (a gap of its exact size), across the sequence number
 * wrap, seen from the middle and swapped, FIN, RST, idle in capture time, the
 * per-flow and total bounds and max_flows with their exact counts, IPv4 and
 * IPv6 fragments (in order, out of order, overlapping, one missing, bounded),
 * truncated packets, every link type, and garbage of every length.
 */
#include "tests/unit/unit.h"

#include <sys/socket.h>

#include "schema/util.h"
#include "tap/tcpflow.h"
#include "tests/peers/pktcraft.h"

#define MAXC 16

/* What the handler was told. */
struct rec {
	struct mt_buf log;              /* every call, one line each */
	struct mt_buf s[MAXC][2];       /* each connection's streams, gaps as {N} */
	struct tf_conn conn[MAXC];      /* as opened */
	int closed[MAXC];
	enum tf_end_how how[MAXC];
	struct tf *t;
	uint64_t swap_at;               /* tf_swap this connection at its first data */
	unsigned copies;                /* data not delivered from the packet handed in */
	unsigned calls;
};

static struct rec *R;
static const uint8_t *cur_pkt; /* the packet being handed to tf_packet */
static size_t cur_len;

static const char *how_name(enum tf_end_how h)
{
	static const char *const n[] = {"fin", "rst", "idle", "evicted", "eof"};
	return n[h];
}

static void *on_open(void *ctx, const struct tf_conn *c)
{
	struct rec *r = ctx;

	assert_true(c->num > 0 && c->num < MAXC);
	r->conn[c->num] = *c;
	mt_buf_printf(&r->log, "open %llu %u>%u%s\n", (unsigned long long)c->num, c->client.port,
		      c->server.port, c->saw_syn ? "" : " mid");
	return r;
}

static void on_data(void *state, const struct tf_conn *c, enum tf_dir d, const uint8_t *p, size_t n,
		    int64_t us)
{
	struct rec *r = state;

	(void)us;
	assert_true(n > 0);
	assert_false(r->closed[c->num]);
	mt_buf_append(&r->s[c->num][d], p, n);
	mt_buf_printf(&r->log, "data %llu %s %zu\n", (unsigned long long)c->num, d ? "s2c" : "c2s", n);
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

	(void)us;
	assert_true(n > 0);
	assert_false(r->closed[c->num]);
	mt_buf_printf(&r->s[c->num][d], "{%llu}", (unsigned long long)n);
	mt_buf_printf(&r->log, "gap %llu %s %llu\n", (unsigned long long)c->num, d ? "s2c" : "c2s",
		      (unsigned long long)n);
}

static void on_close(void *state, const struct tf_conn *c, enum tf_end_how how, int64_t us)
{
	struct rec *r = state;

	(void)us;
	assert_false(r->closed[c->num]);
	r->closed[c->num] = 1;
	r->how[c->num] = how;
	mt_buf_printf(&r->log, "close %llu %s\n", (unsigned long long)c->num, how_name(how));
}

static struct tf_limits L;

static struct tf *mk(void)
{
	struct tf_handler h = {NULL, on_open, on_data, on_gap, on_close};

	R = calloc(1, sizeof(*R));
	assert_non_null(R);
	h.ctx = R;
	R->t = tf_new(&L, &h);
	return R->t;
}

static void done(struct tf *t)
{
	tf_free(t);
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
static void seg_n(struct tf *t, int c2s, uint32_t seq, uint32_t ack, uint8_t fl, const void *data,
		  size_t len, int64_t ms)
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
	seg_n(t, c2s, seq, 0, fl | (fl & PK_SYN && !c2s ? PK_ACK : 0),
	      data, data ? strlen(data) : 0, ms);
}

/* SYN (client ISN ci), SYN-ACK (server ISN si), ACK. */
static void handshake(struct tf *t, uint32_t ci, uint32_t si)
{
	seg_n(t, 1, ci, 0, PK_SYN, NULL, 0, 0);
	seg_n(t, 0, si, ci + 1, PK_SYN | PK_ACK, NULL, 0, 0);
	seg_n(t, 1, ci + 1, si + 1, PK_ACK, NULL, 0, 0);
}

static struct tf_stats ST(struct tf *t)
{
	struct tf_stats s;

	tf_stats(t, &s);
	return s;
}

static void test_in_order(void **state)
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
	seg(t, 1, 109, PK_ACK, "cccc", 2);      /* before bbbb */
	seg(t, 1, 117, PK_ACK, "eeee", 3);      /* before dddd */
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
	seg(t, 1, 1, PK_ACK, "01234", 2);      /* a retransmission: nothing new */
	seg(t, 1, 4, PK_ACK, "XXxyz", 3);      /* overlaps: only "xyz" is new */
	assert_string_equal(S(1, TF_C2S), "01234xyz");
	s = ST(t);
	assert_int_equal(s.retransmitted, 2);
	/* Held bytes win over a later copy of them. */
	seg(t, 1, 11, PK_ACK, "KLM", 4);       /* [10,13) held */
	seg(t, 1, 15, PK_ACK, "PQ", 5);        /* [14,16) held */
	seg(t, 1, 9, PK_ACK, "9abcdefgh", 6);  /* [8,17): new: [8,10) "9a", [13,14) "e", [16,17) "h" */
	assert_string_equal(S(1, TF_C2S), "01234xyz9aKLMePQh");
	s = ST(t);
	assert_int_equal(s.retransmitted, 3);
	assert_int_equal(s.out_of_order, 2);
	/* An early segment overlapping held ones keeps only what they lack. */
	seg(t, 1, 21, PK_ACK, "uv", 7);        /* [20,22) */
	seg(t, 1, 19, PK_ACK, "stUVw", 8);     /* [18,23): new [18,20) and [22,23) */
	seg(t, 1, 19, PK_ACK, "ST", 9);        /* all held already */
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
	/* The end of the connection gives up on the hole. */
	seg(t, 1, 8 + 1476, PK_ACK | PK_FIN, NULL, 5);
	seg(t, 0, 76, PK_ACK | PK_FIN, NULL, 6);
	assert_string_equal(S(1, TF_C2S), "first {1460}after more");
	assert_string_equal(S(1, TF_S2C), "reply");
	s = ST(t);
	assert_int_equal(s.gaps, 1);
	assert_int_equal(s.gap_bytes, 1460);
	assert_int_equal(s.out_of_order, 2);
	assert_int_equal(R->how[1], TF_FIN);
	/* A lost last segment before a FIN: a gap up to the FIN. */
	C.cport = 40001;
	handshake(t, 1, 1);
	seg(t, 1, 2, PK_ACK, "abc", 10);
	seg(t, 1, 2 + 10, PK_ACK | PK_FIN, NULL, 11);
	seg(t, 0, 2, PK_ACK | PK_FIN, NULL, 12);
	assert_string_equal(S(2, TF_C2S), "abc{7}");
	assert_int_equal(R->how[2], TF_FIN);
	/* Found later: nothing is given up while the connection lives. */
	C.cport = 40002;
	handshake(t, 1, 1);
	seg(t, 1, 2, PK_ACK, "abc", 20);
	seg(t, 1, 8, PK_ACK, "ghi", 21);
	seg(t, 1, 5, PK_ACK, big, 22);  /* a retransmission that covers the hole and more */
	assert_int_equal(R->s[3][TF_C2S].len, 1463);
	assert_memory_equal(S(3, TF_C2S), "abcbbbghibbb", 12);
	s = ST(t);
	assert_int_equal(s.gaps, 2);
	assert_int_equal(s.retransmitted, 1); /* ghi was held: the first copy won */
	tf_finish(t, 100000);
	done(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_in_order, setup),
		cmocka_unit_test_setup(test_reordered, setup),
		cmocka_unit_test_setup(test_retransmit_overlap, setup),
		cmocka_unit_test_setup(test_lost, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
