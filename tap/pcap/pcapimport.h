/*
 * pcapimport.h - the MCP sessions of captured packets, stored as the HTTP tap
 * stores them: `mcptap import` and `mcptap sniff`.
 *
 * One pipeline, each stage a module of its own: packets (tap/pcap/capture.h, the
 * caller's) -> TCP streams (tap/pcap/tcpflow.h) -> HTTP/1.1 exchanges
 * (tap/http/httpstream.h) -> what the HTTP tap stores of them (tap/http/httplog.h:
 * sessions, JSON-RPC messages, SSE events, gaps, exchange rows, redaction
 * by the writer) -> the capture file (tap/writer.h). Records are timed with
 * the packets' capture times (writer_set_time), not the import's.
 *
 * It reports and never prints: the counts of every stage come back in
 * struct mt_import_stats for the command to say.
 *
 * One memory budget (limits.total_bytes, --memory) bounds what every stage
 * holds across connections: each counts its own in one counter (struct
 * mt_mem) as it allocates and frees, and the reassembler makes room when it
 * is passed (tcpflow.h). The writer's queue has bounds of its own
 * (wopts.queue_bytes, hold_bytes).
 */
#ifndef MCPTAP_PCAPIMPORT_H
#define MCPTAP_PCAPIMPORT_H

#include <stdint.h>

#include "tap/http/httplog.h"
#include "tap/http/httpstream.h"
#include "tap/pcap/tcpflow.h"
#include "tap/writer.h"

struct mt_import_opts {
	const char *db_path;      /* the capture file written (as record's -w); NULL: a
				   * writer that stores nothing (the fuzz target) */
	struct writer_opts wopts; /* its writer's (redaction, --max-message, batches) */
	struct tf_limits limits;  /* the reassembler's bounds; total_bytes: the budget of
				   * every stage */
	struct hx_opts hx;        /* HTTP reading's */
	/* Told of each exchange as it ends (-v): hl_opts.on_end. */
	void (*on_end)(void *ctx, const struct hl_done *d);
	void *on_end_ctx;
};

/* Defaults: writer_opts_default with bigger batches, tf_limits_default, hx_opts_default. */
void mt_import_opts_default(struct mt_import_opts *o);

struct mt_import;

/*
 * An importer storing into o->db_path (opened by its writer's thread), or
 * NULL when that thread cannot be started (err says so).
 */
struct mt_import *mt_import_new(const struct mt_import_opts *o, struct mt_err *err);

/* The reassembler to hand packets to (mt_capture_run, or tf_packet). Borrowed. */
struct tf *mt_import_tf(struct mt_import *im);

/* What every stage counted so far (safe between packets). */
struct mt_import_stats {
	struct tf_stats tf;
	struct hx_stats hx;
	struct hl_stats hl;
	struct writer_stats w;     /* filled by mt_import_finish */
	size_t mem_used, mem_peak; /* bytes counted against the budget now, and at most */
	size_t mem_left;           /* by mt_import_finish: still counted once everything
				    * was freed (0 unless a stage's count is wrong) */
};
void mt_import_stats(struct mt_import *im, struct mt_import_stats *out);

/*
 * The capture ended at end_us (its last packet's time): every connection is
 * closed, every session ended, everything stored. Fills *out (may be NULL)
 * and frees im. Returns 0, or -1 when something could not be stored
 * (already said on stderr by the writer).
 */
int mt_import_finish(struct mt_import *im, int64_t end_us, struct mt_import_stats *out);

#endif
