/*
 * fuzz-import.c - libFuzzer target for pcap import as a whole: the input is a
 * capture file (pcap or pcapng), read by libpcap (tap/pcap/capture.c) into the TCP
 * reassembler (tap/pcap/tcpflow.c), HTTP/1.1 reading (tap/http/httpstream.c) and what
 * the HTTP tap stores of each exchange (tap/http/httplog.c), into a writer with no
 * store (every record is made and queued, nothing is written). Small limits
 * make the bounds, evictions and gaps happen.
 *
 * Checks, besides ASan and UBSan: the import ends (a capture that libpcap
 * refuses is an error with a message, never a crash), and the counts add up:
 * no more HTTP connections than connections, no more sessions than exchanges
 * (each session begins with one, but for those holding a connection's gaps
 * alone), no more responses paired than requests; once all is freed, no
 * stage's memory is still counted against the budget.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap/pcap/capture.h"
#include "tap/pcap/pcapimport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-import: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_err err = {"", 0};
	struct mt_import_opts o;
	struct mt_import_stats st;
	struct mt_capture_stats cs;
	struct mt_capture *cap;
	struct mt_import *im;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "rb");
	if (!f)
		return 0;
	cap = mt_capture_open_stream(f, "fuzz", &err);
	if (!cap) {
		if (!err.msg[0])
			fail("a capture refused without a reason");
		return 0;
	}
	mt_import_opts_default(&o);
	o.db_path = NULL; /* (a writer that stores nothing) */
	o.limits.flow_bytes = 8192;
	o.limits.total_bytes = 65536;
	o.limits.max_flows = 8;
	o.limits.idle_ms = 1000;
	o.limits.frag_bytes = 16384;
	o.hx.max_body = 4096;
	o.wopts.max_message = 4096;
	o.wopts.label = "'fuzz'";
	im = mt_import_new(&o, NULL);
	if (mt_capture_run(cap, mt_import_tf(im), NULL, &err) == MT_CAPTURE_ERROR && !err.msg[0])
		fail("a read error without a reason");
	mt_capture_stats(cap, &cs);
	mt_import_finish(im, cs.last_us, &st);
	mt_capture_free(cap);
	if (st.hx.http > st.tf.connections)
		fail("more HTTP connections than connections");
	if (st.hl.sessions_gaps > st.hl.sessions || st.hl.sessions - st.hl.sessions_gaps > st.hl.exchanges)
		fail("a session without an exchange (but for those of a connection's gaps)");
	if (st.hl.exchanges != st.hx.requests)
		fail("exchanges stored and requests read differ");
	if (st.hx.tls + st.hx.h2 + st.hx.other + st.hx.http > st.tf.connections)
		fail("connections counted twice");
	if (st.mem_left)
		fail("memory still counted once all was freed");
	if (st.tf.evicted_memory + st.tf.evicted_full + st.tf.evicted_idle > st.tf.connections)
		fail("more connections given up on than there were");
	return 0;
}
