/*
 * capture.h - packets from a capture file (pcap or pcapng) or a live
 * interface, read through libpcap and handed to a TCP reassembler
 * (tap/pcap/tcpflow.h). It reports and never prints: errors and warnings in words
 * a user can act on, progress through a callback the command prints.
 *
 * A file is read with microsecond timestamps (nanosecond files too); a live
 * interface is opened with a snap length of MT_CAPTURE_SNAPLEN, not
 * promiscuous, in immediate mode. A BPF filter narrows either.
 */
#ifndef MCPTAP_CAPTURE_H
#define MCPTAP_CAPTURE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "schema/util.h"
#include "tap/pcap/tcpflow.h"

#define MT_CAPTURE_SNAPLEN 262144 /* libpcap's largest; a live capture's snap length */

struct mt_capture;

/*
 * Open a capture file, "-" for standard input. NULL with err set when it
 * cannot be read: "cannot open 'F': REASON", "cannot read 'F': not a pcap or
 * pcapng file", "cannot read 'F': empty file", or libpcap's reason.
 */
struct mt_capture *mt_capture_open_file(const char *path, struct mt_err *err);

/* The same from an open stream (taken: closed by mt_capture_free, or here on failure); name is for messages. */
struct mt_capture *mt_capture_open_stream(FILE *f, const char *name, struct mt_err *err);

/*
 * Open a live interface ("any" for all). NULL with err set: "cannot capture
 * on 'I': needs root or CAP_NET_RAW", "...: no such interface", "...: the
 * interface is not up", or libpcap's reason.
 */
struct mt_capture *mt_capture_open_live(const char *ifname, struct mt_err *err);

/* Keep only the packets BPF expression expr matches; 0, or -1 with err ("bad filter 'X': REASON"). */
int mt_capture_filter(struct mt_capture *c, const char *expr, struct mt_err *err);

/* The link type (a DLT_ value), and its name as libpcap says it ("EN10MB"; borrowed, "" when unknown). */
int mt_capture_linktype(const struct mt_capture *c);
const char *mt_capture_linktype_name(const struct mt_capture *c);

/* What the user should know though the capture opened (a huge snap length, libpcap's warning); "" when nothing. Borrowed. */
const char *mt_capture_warning(const struct mt_capture *c);

typedef void (*mt_capture_progress_fn)(void *ctx, uint64_t done, uint64_t total);

struct mt_capture_opts {
	const volatile sig_atomic_t *stop; /* borrowed; reading ends once it is non-zero (may be NULL) */
	uint64_t max_packets;              /* stop after this many packets (0: no limit) */
	int64_t duration_ms;               /* stop after this much wall-clock time (0: no limit) */
	mt_capture_progress_fn progress;   /* a file's bytes read of its size (0: unknown); may be NULL */
	void *progress_ctx;
};

enum mt_capture_end {
	MT_CAPTURE_EOF,      /* the file ended */
	MT_CAPTURE_STOPPED,  /* *stop was set, or mt_capture_breakloop called */
	MT_CAPTURE_COUNT,    /* max_packets were read */
	MT_CAPTURE_DURATION, /* duration_ms passed */
	MT_CAPTURE_ERROR,    /* reading failed: err says why (a truncated file, a packet
			      * libpcap cannot read, the interface gone); the packets
			      * before it were handed on */
};

/*
 * Hand every packet to t (tf_packet) until the capture ends or o says stop;
 * may be called again to go on. It does not call tf_finish. o may be NULL.
 */
enum mt_capture_end mt_capture_run(struct mt_capture *c, struct tf *t, const struct mt_capture_opts *o,
				   struct mt_err *err);

/* Make mt_capture_run return (MT_CAPTURE_STOPPED) soon; safe in a signal handler. */
void mt_capture_breakloop(struct mt_capture *c);

struct mt_capture_stats {
	uint64_t packets;                       /* handed to the reassembler */
	uint64_t file_bytes;                    /* of a file: bytes read so far */
	uint64_t file_size;                     /* and its size (0: unknown, a pipe) */
	int64_t first_us, last_us;              /* the first and latest packet's capture time (0: none) */
	int live;                               /* a live interface: the kernel's counts follow */
	uint64_t received, dropped, if_dropped; /* as pcap_stats says */
};

void mt_capture_stats(struct mt_capture *c, struct mt_capture_stats *out);

/* Close; NULL is fine. */
void mt_capture_free(struct mt_capture *c);

#endif
