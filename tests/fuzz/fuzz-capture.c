/*
 * fuzz-capture.c - libFuzzer target for pcap import's capture side as a
 * whole: the input is a capture file (pcap or pcapng, of any link type),
 * opened from memory (fmemopen) through tap/pcap/capture.h and read into the TCP
 * reassembler with small limits, up to its end or its first error.
 *
 * Checks: an open that fails says why; a run ends in EOF or in an error
 * that says why; the packets counted are the ones the reassembler got; every
 * connection opened is closed once at the end, and nothing comes for one
 * that is closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap/pcap/capture.h"
#include "tap/pcap/tcpflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
	uint64_t opened, closed;
	uint8_t state[1024]; /* per connection number (mod): 1 open, 2 closed */
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-capture: %s\n", what);
	abort();
}

static void *on_open(void *ctx, const struct tf_conn *c)
{
	struct run *r = ctx;

	if (c->num != ++r->opened)
		fail("connections not numbered in order");
	r->state[c->num % 1024] = 1;
	return r;
}

static void on_data(void *st, const struct tf_conn *c, enum tf_dir d, const uint8_t *p, size_t n, int64_t us,
		    uint64_t ack)
{
	(void)ack;
	struct run *r = st;
	volatile uint8_t sink = 0;

	(void)d;
	(void)us;
	if (r->state[c->num % 1024] != 1 || !n)
		fail("data for a closed connection, or none");
	for (size_t i = 0; i < n; i++) /* every byte delivered is readable */
		sink ^= p[i];
	(void)sink;
}

static void on_gap(void *st, const struct tf_conn *c, enum tf_dir d, uint64_t n, int64_t us)
{
	struct run *r = st;

	(void)d;
	(void)us;
	if (r->state[c->num % 1024] != 1 || !n)
		fail("a gap for a closed connection, or an empty one");
}

static void on_close(void *st, const struct tf_conn *c, enum tf_end_how how, int64_t us)
{
	struct run *r = st;

	(void)how;
	(void)us;
	if (r->state[c->num % 1024] != 1)
		fail("a connection closed twice");
	r->state[c->num % 1024] = 2;
	r->closed++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run r;
	struct tf_handler h = {&r, on_open, on_data, on_gap, on_close, NULL};
	struct mt_err err = {{0}, 0};
	struct mt_capture_stats cs;
	struct tf_stats ts;
	struct tf_limits l;
	struct mt_capture *c;
	struct tf *t;
	enum mt_capture_end end;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)(uintptr_t)data, size, "rb");
	if (!f)
		return 0;
	c = mt_capture_open_stream(f, "fuzz", &err);
	if (!c) {
		if (!err.msg[0])
			fail("an open that failed without a reason");
		return 0;
	}
	memset(&r, 0, sizeof(r));
	tf_limits_default(&l);
	l.flow_bytes = 4096;
	l.total_bytes = 16384;
	l.max_flows = 16;
	l.frag_bytes = 8192;
	l.idle_ms = 1000;
	t = tf_new(&l, &h);
	end = mt_capture_run(c, t, NULL, &err);
	if (end != MT_CAPTURE_EOF && end != MT_CAPTURE_ERROR)
		fail("a file that ended neither at its end nor in an error");
	if (end == MT_CAPTURE_ERROR && !err.msg[0])
		fail("an error without a reason");
	mt_capture_stats(c, &cs);
	tf_finish(t, cs.last_us);
	tf_stats(t, &ts);
	if (ts.packets != cs.packets)
		fail("packets counted twice or not handed on");
	if (r.closed != r.opened || ts.connections != r.opened)
		fail("connections left open");
	tf_free(t);
	mt_capture_free(c);
	return 0;
}
