/*
 * test-capture.c - capture files and live capture (tap/pcap/capture.h) into the
 * TCP reassembler: the captures tests/peers/pcap-gen writes (every link
 * type, IPv6, pcap and pcapng in µs and ns, reordering, retransmits,
 * overlaps, loss, fragments, mid-stream, RST, a snap length, many
 * connections, a filter) give the exact streams; bad files (missing, a
 * directory, empty, a wrong magic, a cut header, a cut packet, a huge snap
 * length, a packet over the maximum, garbage) give clear errors and keep
 * what came before; progress, stopping, a packet count; on loopback, live
 * (as root), no such interface, and no CAP_NET_RAW.
 */
#include "tests/unit/unit.h"

#include <arpa/inet.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "schema/util.h"
#include "tap/pcap/capture.h"
#include "tap/pcap/tcpflow.h"

#define GEN "tests/peers/pcap-gen"
#define MAXC 8 /* connections recorded; later ones share slot 0 */
#define SLOT(num) ((num) < MAXC ? (num) : 0)

static char *DIR_;

struct rec {
	struct mt_buf s[MAXC][2]; /* streams, gaps as {N} */
	int closed[MAXC];
	enum tf_end_how how[MAXC];
	uint64_t conns;
};

static void *on_open(void *ctx, const struct tf_conn *c)
{
	struct rec *r = ctx;

	r->conns = c->num;
	return r;
}

static void on_data(void *st, const struct tf_conn *c, enum tf_dir d, const uint8_t *p, size_t n, int64_t us,
		    uint64_t ack)
{
	(void)ack;
	(void)us;
	mt_buf_append(&((struct rec *)st)->s[SLOT(c->num)][d], p, n);
}

static void on_gap(void *st, const struct tf_conn *c, enum tf_dir d, uint64_t n, int64_t us)
{
	(void)us;
	mt_buf_printf(&((struct rec *)st)->s[SLOT(c->num)][d], "{%llu}", (unsigned long long)n);
}

static void on_close(void *st, const struct tf_conn *c, enum tf_end_how how, int64_t us)
{
	struct rec *r = st;

	(void)us;
	r->closed[SLOT(c->num)] = 1;
	r->how[SLOT(c->num)] = how;
}

static struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	return r;
}

static void rec_free(struct rec *r)
{
	for (int i = 0; i < MAXC; i++) {
		mt_buf_release(&r->s[i][0]);
		mt_buf_release(&r->s[i][1]);
	}
	free(r);
}

static struct tf *tf_for(struct rec *r)
{
	struct tf_handler h = {r, on_open, on_data, on_gap, on_close, NULL};
	struct tf_limits l;

	tf_limits_default(&l);
	return tf_new(&l, &h);
}

static int setup(void **state)
{
	(void)state;
	if (access(GEN, X_OK) != 0) {
		fprintf(stderr, "test-capture: %s is not built (make)\n", GEN);
		return -1;
	}
	DIR_ = unit_tmpdir();
	return DIR_ ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	unit_rmdir(DIR_);
	return 0;
}

/* A path in the scratch directory (static: one at a time). */
static const char *P(const char *name)
{
	static char path[4200];

	snprintf(path, sizeof(path), "%s/%s", DIR_, name);
	return path;
}

/* Run pcap-gen ARGS writing P(name); fails the test when it fails. */
static void gen(const char *name, const char *args)
{
	char cmd[8400];

	snprintf(cmd, sizeof(cmd), "%s %s '%s'", GEN, args, P(name));
	assert_int_equal(system(cmd), 0);
}

/* The default messages of pcap-gen: 'a' + i % 26 (client), 'A' + i % 26 (server). */
static void pattern(struct mt_buf *b, int client, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		mt_buf_putc(b, (char)((client ? 'a' : 'A') + i % 26));
}

/* What the default conversation gives, each side's first message with a hole [h0, h1) (none when equal). */
static void expect(struct mt_buf *c2s, struct mt_buf *s2c, size_t h0, size_t h1)
{
	pattern(c2s, 1, 0, h0);
	if (h1 > h0)
		mt_buf_printf(c2s, "{%zu}", h1 - h0);
	pattern(c2s, 1, h1, 2500);
	pattern(c2s, 1, 0, 2500);
	pattern(s2c, 0, 0, h0);
	if (h1 > h0)
		mt_buf_printf(s2c, "{%zu}", h1 - h0);
	pattern(s2c, 0, h1, 3000);
	pattern(s2c, 0, 0, 3000);
}

/* Read file into a fresh reassembler; returns how the run ended. */
static enum mt_capture_end read_all(const char *file, struct rec *r, struct tf_stats *ts,
				    struct mt_capture_stats *cs, const char *filter, char *errmsg)
{
	struct mt_err err = {{0}, 0};
	struct mt_capture *c = mt_capture_open_file(file, &err);
	struct tf *t;
	enum mt_capture_end end;

	if (!c) {
		snprintf(errmsg, 512, "%s", err.msg);
		return (enum mt_capture_end) - 1;
	}
	if (filter)
		assert_int_equal(mt_capture_filter(c, filter, &err), 0);
	t = tf_for(r);
	end = mt_capture_run(c, t, NULL, &err);
	snprintf(errmsg, 512, "%s", err.msg);
	mt_capture_stats(c, cs);
	tf_finish(t, cs->last_us);
	tf_stats(t, ts);
	tf_free(t);
	mt_capture_free(c);
	return end;
}

/* pcap-gen ARGS gives the default conversation's streams exactly, connection 1 ending how. */
static void scenario(const char *args, size_t h0, size_t h1, enum tf_end_how how, struct tf_stats *ts)
{
	struct rec *r = rec_new();
	struct mt_buf c2s = MT_BUF_INIT, s2c = MT_BUF_INIT;
	struct mt_capture_stats cs;
	char msg[512];

	gen("s.cap", args);
	assert_int_equal(read_all(P("s.cap"), r, ts, &cs, NULL, msg), MT_CAPTURE_EOF);
	expect(&c2s, &s2c, h0, h1);
	if (r->s[1][0].len != c2s.len || memcmp(r->s[1][0].data, c2s.data, c2s.len))
		fail_msg("%s: the client's stream differs (%zu bytes, %zu expected)", args, r->s[1][0].len,
			 c2s.len);
	if (r->s[1][1].len != s2c.len || memcmp(r->s[1][1].data, s2c.data, s2c.len))
		fail_msg("%s: the server's stream differs (%zu bytes, %zu expected)", args, r->s[1][1].len,
			 s2c.len);
	assert_int_equal(r->conns, 1);
	assert_int_equal(r->how[1], how);
	assert_int_equal(cs.first_us, 1700000000LL * 1000000);
	assert_int_equal(cs.packets, ts->packets);
	assert_int_equal(ts->bad_link + ts->not_ip + ts->not_tcp + ts->malformed, 0);
	mt_buf_release(&c2s);
	mt_buf_release(&s2c);
	rec_free(r);
}

static void test_link_types_and_formats(void **state)
{
	static const char *const args[] = {
		"",
		"-l vlan",
		"-l qinq",
		"-l sll",
		"-l sll2",
		"-l null",
		"-l loop",
		"-l raw",
		"-l ipv4",
		"-6",
		"-6 -l ipv6",
		"-6 -l qinq",
		"-6 -l sll2",
		"-6 -l null",
		"-6 -l loop",
		"-6 -l raw",
		"-f pcap-ns",
		"-f pcapng",
		"-f pcapng-ns -6 -l sll",
		"-f pcapng -l raw",
		"-m tcpopts",
		"-i 0",
		"-M 1",
	};
	struct tf_stats ts;

	(void)state;
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		scenario(args[i], 0, 0, TF_FIN, &ts);
		assert_int_equal(ts.gaps + ts.retransmitted + ts.out_of_order + ts.truncated, 0);
		assert_int_equal(ts.midstream, 0);
	}
}

static void test_modes(void **state)
{
	struct tf_stats ts;

	(void)state;
	scenario("-m reorder", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.out_of_order, 4); /* each message's second segment, sent first */
	assert_int_equal(ts.retransmitted, 0);
	scenario("-m retransmit", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.retransmitted, 4); /* the second segment of each message, sent twice */
	assert_int_equal(ts.out_of_order, 0);
	scenario("-m overlap", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.retransmitted,
			 16); /* in each message: two overlapping ones, the two after them */
	scenario("-m frag", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.fragments, 2 * 12); /* 12 data segments, 1020 bytes of IP payload or 520 */
	assert_int_equal(ts.reassembled, 12);
	assert_int_equal(ts.frag_dropped, 0);
	scenario("-6 -m frag -l sll2", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.reassembled, 12);
	scenario("-m reorder,retransmit,overlap,frag,tcpopts -f pcapng", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.gaps, 0);
	scenario("-m midstream", 0, 0, TF_FIN, &ts);
	assert_int_equal(ts.midstream, 1);
	scenario("-m rst", 0, 0, TF_RST, &ts);
	scenario("-m loss", 1000, 2000, TF_FIN, &ts);
	assert_int_equal(ts.gaps, 2);
	assert_int_equal(ts.gap_bytes, 2000);
	scenario("-m loss,reorder -6", 1000, 2000, TF_FIN, &ts);
	assert_int_equal(ts.gaps, 2);
}

static void test_snaplen_and_conns(void **state)
{
	struct rec *r = rec_new();
	struct tf_stats ts;
	struct mt_capture_stats cs;
	char msg[512];
	struct mt_buf want = MT_BUF_INIT;

	(void)state;
	/* Cut at 100 bytes: 46 bytes of each segment's payload, a gap for the rest. */
	gen("snap.pcap", "-s 100 -M 1000");
	assert_int_equal(read_all(P("snap.pcap"), r, &ts, &cs, NULL, msg), MT_CAPTURE_EOF);
	for (int m = 0; m < 2; m++)
		for (size_t off = 0; off < 2500; off += 1000) {
			size_t len = 2500 - off < 1000 ? 2500 - off : 1000;
			pattern(&want, 1, off, off + 46);
			mt_buf_printf(&want, "{%zu}", len - 46);
		}
	assert_int_equal(r->s[1][0].len, want.len);
	assert_memory_equal(r->s[1][0].data, want.data, want.len);
	assert_int_equal(ts.truncated, 12);
	assert_int_equal(ts.gaps, 12);
	assert_int_equal(ts.gap_bytes, 2 * 2500 + 2 * 3000 - 12 * 46);
	rec_free(r);
	mt_buf_release(&want);

	/* Three connections, and a filter that keeps the second. */
	r = rec_new();
	gen("k3.pcap", "-k 3");
	assert_int_equal(read_all(P("k3.pcap"), r, &ts, &cs, NULL, msg), MT_CAPTURE_EOF);
	assert_int_equal(ts.connections, 3);
	for (int i = 1; i <= 3; i++) {
		assert_int_equal(r->s[i][0].len, 5000);
		assert_int_equal(r->how[i], TF_FIN);
	}
	rec_free(r);
	r = rec_new();
	assert_int_equal(read_all(P("k3.pcap"), r, &ts, &cs, "tcp port 40001", msg), MT_CAPTURE_EOF);
	assert_int_equal(ts.connections, 1);
	assert_int_equal(r->s[1][1].len, 6000);
	assert_int_equal(cs.packets, 22); /* 3 + 4 messages of 3 segments and an ACK + 3 */
	rec_free(r);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	b = malloc((size_t)len + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return b;
}

/* The offset of record k (0, 1, ...) of a pcap file in memory. */
static size_t record(const uint8_t *b, size_t n, int k)
{
	size_t off = 24;

	for (int i = 0; i < k; i++) {
		uint32_t cap;
		assert_true(off + 16 <= n);
		memcpy(&cap, b + off + 8, 4);
		off += 16 + cap;
	}
	return off;
}

static void open_fails(const char *path, const char *want)
{
	struct mt_err err = {{0}, 0};
	struct mt_capture *c = mt_capture_open_file(path, &err);

	assert_null(c);
	if (!strstr(err.msg, want))
		fail_msg("'%s': got \"%s\", wanted \"%s\"", path, err.msg, want);
}

static void test_bad_files(void **state)
{
	struct rec *r;
	struct tf_stats ts;
	struct mt_capture_stats cs;
	struct mt_err err = {{0}, 0};
	struct mt_capture *c;
	char msg[512], want[4400];
	uint8_t *b;
	size_t n, at;

	(void)state;
	snprintf(want, sizeof(want), "cannot open '%s': No such file or directory", P("none.pcap"));
	open_fails(P("none.pcap"), want);
	snprintf(want, sizeof(want), "cannot read '%s': Is a directory", DIR_);
	open_fails(DIR_, want);
	write_file(P("empty"), "", 0);
	snprintf(want, sizeof(want), "cannot read '%s': empty file", P("empty"));
	open_fails(P("empty"), want);
	write_file(P("text"), "hello, this is not a capture at all\n", 36);
	snprintf(want, sizeof(want), "cannot read '%s': not a pcap or pcapng file", P("text"));
	open_fails(P("text"), want);
	write_file(P("two"), "\xd4\xc3", 2);
	open_fails(P("two"), "not a pcap or pcapng file");

	gen("good.pcap", "");
	b = slurp(P("good.pcap"), &n);
	/* A header cut short: libpcap's words. */
	write_file(P("head"), b, 10);
	open_fails(P("head"), "truncated dump file");
	/* Cut in the middle of the fifth packet: the four before it are read. */
	at = record(b, n, 4) + 16 + 30;
	write_file(P("cut.pcap"), b, at);
	r = rec_new();
	assert_int_equal(read_all(P("cut.pcap"), r, &ts, &cs, NULL, msg), MT_CAPTURE_ERROR);
	snprintf(want, sizeof(want), "cannot read '%s' past packet 4: truncated dump file", P("cut.pcap"));
	if (strncmp(msg, want, strlen(want)))
		fail_msg("got \"%s\"", msg);
	assert_int_equal(cs.packets, 4);
	assert_int_equal(r->s[1][0].len, 1000); /* the handshake and the first segment */
	rec_free(r);
	/* Cut in a record header. */
	write_file(P("cut2.pcap"), b, record(b, n, 3) + 7);
	r = rec_new();
	assert_int_equal(read_all(P("cut2.pcap"), r, &ts, &cs, NULL, msg), MT_CAPTURE_ERROR);
	assert_int_equal(cs.packets, 3);
	assert_non_null(strstr(msg, "truncated dump file"));
	rec_free(r);
	/* A huge snap length in the header: a warning; packets up to the maximum still read. */
	memcpy(b + 16, "\xff\xff\xff\x7f", 4);
	write_file(P("huge.pcap"), b, n);
	c = mt_capture_open_file(P("huge.pcap"), &err);
	assert_non_null(c);
	if (!strstr(mt_capture_warning(c), "snapshot length is 2147483647"))
		fail_msg("warning: \"%s\"", mt_capture_warning(c));
	mt_capture_free(c);
	r = rec_new();
	assert_int_equal(read_all(P("huge.pcap"), r, &ts, &cs, NULL, msg), MT_CAPTURE_EOF);
	assert_int_equal(r->s[1][0].len, 5000);
	rec_free(r);
	/* A packet over the maximum libpcap reads: an error after the ones before it. */
	at = record(b, n, 5);
	memcpy(b + at + 8, "\xe0\x93\x04\x00", 4); /* 300000 */
	memcpy(b + at + 12, "\xe0\x93\x04\x00", 4);
	write_file(P("big.pcap"), b, n);
	r = rec_new();
	assert_int_equal(read_all(P("big.pcap"), r, &ts, &cs, NULL, msg), MT_CAPTURE_ERROR);
	assert_int_equal(cs.packets, 5);
	if (!strstr(msg, "past packet 5") || !strstr(msg, "300000"))
		fail_msg("got \"%s\"", msg);
	rec_free(r);
	/* A record that says it holds more than it had on the wire, and garbage records. */
	free(b);
	b = slurp(P("good.pcap"), &n);
	at = record(b, n, 3);
	memcpy(b + at + 12, "\x01\x00\x00\x00", 4); /* len 1 < caplen: the capture length is used */
	uint32_t seed = 7;
	at = record(b, n, 8);
	for (size_t i = at; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
	write_file(P("garbage.pcap"), b, n);
	r = rec_new();
	read_all(P("garbage.pcap"), r, &ts, &cs, NULL, msg);
	assert_true(cs.packets >= 8);
	rec_free(r);
	free(b);
	/* pcapng cut short, and a bad filter. */
	gen("good.pcapng", "-f pcapng");
	b = slurp(P("good.pcapng"), &n);
	write_file(P("cut.pcapng"), b, n - 10);
	r = rec_new();
	assert_int_equal(read_all(P("cut.pcapng"), r, &ts, &cs, NULL, msg), MT_CAPTURE_ERROR);
	assert_non_null(strstr(msg, "past packet"));
	assert_true(cs.packets > 20);
	rec_free(r);
	free(b);
	/* A pcapng time of 2^64 - 1 µs: saturated (found by fuzzing: it overflowed). */
	b = slurp(P("good.pcapng"), &n);
	memcpy(b + 28 + 20 + 12, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
	write_file(P("far.pcapng"), b, n);
	free(b);
	r = rec_new();
	assert_int_equal(read_all(P("far.pcapng"), r, &ts, &cs, NULL, msg), MT_CAPTURE_EOF);
	assert_true(cs.last_us > 1700000000LL * 1000000);
	assert_int_equal(cs.first_us, 1700000000LL * 1000000 + 100);
	rec_free(r);
	c = mt_capture_open_file(P("good.pcapng"), &err);
	assert_non_null(c);
	assert_int_equal(mt_capture_linktype(c), DLT_EN10MB);
	assert_string_equal(mt_capture_linktype_name(c), "EN10MB");
	assert_int_equal(mt_capture_filter(c, "tcp port", &err), -1);
	assert_string_equal(err.msg, "bad filter 'tcp port': can't parse filter expression: syntax error");
	mt_capture_free(c);
}

static void test_streams(void **state)
{
	struct mt_err err = {{0}, 0};
	struct mt_capture *c;
	struct rec *r = rec_new();
	struct tf *t;
	uint8_t *b;
	size_t n;
	FILE *f;

	(void)state;
	/* From memory (a pipe has no size either). */
	gen("mem.pcap", "-f pcap-ns -l sll");
	b = slurp(P("mem.pcap"), &n);
	f = fmemopen(b, n, "rb");
	assert_non_null(f);
	c = mt_capture_open_stream(f, "memory", &err);
	assert_non_null(c);
	t = tf_for(r);
	assert_int_equal(mt_capture_run(c, t, NULL, &err), MT_CAPTURE_EOF);
	tf_finish(t, 0);
	assert_int_equal(r->s[1][1].len, 6000);
	tf_free(t);
	mt_capture_free(c);
	rec_free(r);
	f = fmemopen(b, 0 + 1, "rb");
	assert_non_null(f);
	assert_null(mt_capture_open_stream(f, "memory", &err));
	assert_string_equal(err.msg, "cannot read 'memory': not a pcap or pcapng file");
	free(b);
}

struct prog {
	uint64_t calls, done, total;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct prog *p = ctx;

	assert_true(done >= p->done);
	p->calls++;
	p->done = done;
	p->total = total;
}

static void test_progress_and_stop(void **state)
{
	struct mt_err err = {{0}, 0};
	struct mt_capture *c;
	struct mt_capture_stats cs;
	struct mt_capture_opts o;
	struct prog pr = {0, 0, 0};
	struct rec *r = rec_new();
	struct tf *t = tf_for(r);
	volatile sig_atomic_t stop = 1;
	struct stat sb;

	(void)state;
	gen("big.pcap", "-k 200");
	assert_int_equal(stat(P("big.pcap"), &sb), 0);
	c = mt_capture_open_file(P("big.pcap"), &err);
	assert_non_null(c);
	memset(&o, 0, sizeof(o));
	o.stop = &stop;
	assert_int_equal(mt_capture_run(c, t, &o, &err), MT_CAPTURE_STOPPED);
	mt_capture_stats(c, &cs);
	assert_int_equal(cs.packets, 0);
	stop = 0;
	o.max_packets = 5;
	assert_int_equal(mt_capture_run(c, t, &o, &err), MT_CAPTURE_COUNT);
	mt_capture_stats(c, &cs);
	assert_int_equal(cs.packets, 5);
	o.max_packets = 0;
	o.progress = on_progress;
	o.progress_ctx = &pr;
	assert_int_equal(mt_capture_run(c, t, &o, &err), MT_CAPTURE_EOF);
	mt_capture_stats(c, &cs);
	assert_true(pr.calls >= 2);
	assert_int_equal(pr.total, (uint64_t)sb.st_size);
	assert_int_equal(pr.done, (uint64_t)sb.st_size);
	assert_int_equal(cs.file_size, (uint64_t)sb.st_size);
	assert_int_equal(cs.packets, 200 * 22);
	assert_false(cs.live);
	tf_finish(t, cs.last_us);
	tf_free(t);
	mt_capture_free(c);
	rec_free(r);
}

/* ---- live ---- */

static struct mt_capture *alarm_cap;
static volatile sig_atomic_t alarm_stop;

static void on_alarm(int sig)
{
	(void)sig;
	alarm_stop = 1;
	mt_capture_breakloop(alarm_cap);
}

/* A TCP exchange over loopback on port: "hello over loopback" and "and back". */
static void talk(uint16_t port)
{
	struct sockaddr_in a;
	int l = socket(AF_INET, SOCK_STREAM, 0), s, k, one = 1;
	char buf[64];

	assert_true(l >= 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	s = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	k = accept(l, NULL, NULL);
	assert_true(k >= 0);
	assert_int_equal(write(s, "hello over loopback", 19), 19);
	assert_int_equal(read(k, buf, sizeof(buf)), 19);
	assert_int_equal(write(k, "and back", 8), 8);
	assert_int_equal(read(s, buf, sizeof(buf)), 8);
	close(s);
	assert_int_equal(read(k, buf, sizeof(buf)), 0);
	close(k);
	close(l);
}

static void test_live(void **state)
{
	struct mt_err err = {{0}, 0};
	struct mt_capture *c;
	struct mt_capture_stats cs;
	struct mt_capture_opts o;
	struct rec *r;
	struct tf *t;
	uint16_t port = (uint16_t)(20000 + getpid() % 20000);
	char filter[64];
	struct itimerval it;
	pid_t pid;
	int status;

	(void)state;
	c = mt_capture_open_live("nosuch0", &err);
	assert_null(c);
	if (geteuid() != 0) {
		assert_non_null(strstr(err.msg, "cannot capture on 'nosuch0'"));
		skip(); /* live capture needs root or CAP_NET_RAW */
	}
	assert_string_equal(err.msg, "cannot capture on 'nosuch0': no such interface");

	/* Without CAP_NET_RAW. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &h, d) != 0)
			_exit(3);
		d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
		d[CAP_NET_RAW / 32].permitted &= ~(1u << (CAP_NET_RAW % 32));
		if (syscall(SYS_capset, &h, d) != 0)
			_exit(4);
		c = mt_capture_open_live("lo", &err);
		if (c)
			_exit(5);
		_exit(strcmp(err.msg, "cannot capture on 'lo': needs root or CAP_NET_RAW") &&
				      !strstr(err.msg, "needs root or CAP_NET_RAW")
			      ? 6
			      : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* A real exchange on loopback. */
	c = mt_capture_open_live("lo", &err);
	if (!c)
		fail_msg("%s", err.msg);
	snprintf(filter, sizeof(filter), "tcp port %u", port);
	assert_int_equal(mt_capture_filter(c, filter, &err), 0);
	talk(port);
	r = rec_new();
	t = tf_for(r);
	memset(&o, 0, sizeof(o));
	o.duration_ms = 60000; /* a bound only: it ends at the count */
	o.max_packets = 3;     /* the handshake (the rest may be fewer packets: delayed ACKs) */
	assert_int_equal(mt_capture_run(c, t, &o, &err), MT_CAPTURE_COUNT);
	mt_capture_stats(c, &cs);
	assert_true(cs.live);
	assert_int_equal(cs.packets, 3);
	/* The rest, for a while. */
	o.max_packets = 0;
	o.duration_ms = 300;
	assert_int_equal(mt_capture_run(c, t, &o, &err), MT_CAPTURE_DURATION);
	mt_capture_stats(c, &cs);
	assert_true(cs.packets >= 7);
	assert_true(cs.received >= cs.packets);
	/* Stopped from a signal handler while waiting. */
	alarm_cap = c;
	signal(SIGALRM, on_alarm);
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = 200000;
	setitimer(ITIMER_REAL, &it, NULL);
	o.duration_ms = 0;
	o.stop = &alarm_stop;
	assert_int_equal(mt_capture_run(c, t, &o, &err), MT_CAPTURE_STOPPED);
	assert_int_equal(alarm_stop, 1);
	signal(SIGALRM, SIG_DFL);
	tf_finish(t, cs.last_us);
	assert_string_equal(r->s[1][0].data, "hello over loopback");
	assert_string_equal(r->s[1][1].data, "and back");
	assert_int_equal(r->how[1], TF_FIN);
	tf_free(t);
	mt_capture_free(c);
	rec_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_types_and_formats),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_snaplen_and_conns),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_streams),
		cmocka_unit_test(test_progress_and_stop),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
