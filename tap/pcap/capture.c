/*
 * capture.c - capture files and live interfaces through libpcap (see
 * capture.h). libpcap's own words are kept at the end of a message; the
 * cases a user meets most are said plainly first.
 */
#include "tap/pcap/capture.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FILE_BATCH 256                    /* packets per pcap_dispatch from a file */
#define PROGRESS_STEP (256u << 10)        /* bytes read between progress reports */
#define LIVE_TICK_MS 100                  /* a live capture looks at stop and duration this often */
#define DRAIN_ROUNDS 64                   /* buffers read after a live capture is stopped */
#define MAX_SECONDS (INT64_MAX / 4000000) /* capture times are kept within a quarter of int64 µs */

struct mt_capture {
	pcap_t *p;  /* owned */
	FILE *f;    /* a file's stream: owned by p */
	char *name; /* owned: the file or interface, for messages */
	int live;
	int linktype;
	char warning[PCAP_ERRBUF_SIZE + 160];
	int fd;                            /* live: what poll waits on (-1: none, libpcap blocks) */
	volatile sig_atomic_t broken;      /* mt_capture_breakloop was called */
	volatile sig_atomic_t in_dispatch; /* in pcap_dispatch: breaking it is libpcap's business */
	struct tf *tf;                     /* borrowed during mt_capture_run */
	struct mt_capture_stats st;
	uint64_t reported; /* file bytes at the last progress report */
};

static struct mt_capture *cap_new(const char *name)
{
	struct mt_capture *c = mt_calloc(1, sizeof(*c));

	c->name = mt_strdup(name);
	c->fd = -1;
	return c;
}

/* Say what a file's header told libpcap, in the words of capture.h. */
static void open_error(const char *name, const char *why, uint64_t size, struct mt_err *err)
{
	if (size == 0)
		mt_err_set(err, "cannot read '%s': empty file", name);
	else if (strstr(why, "unknown file format") || size < 4)
		mt_err_set(err, "cannot read '%s': not a pcap or pcapng file", name);
	else
		mt_err_set(err, "cannot read '%s': %s", name, why);
}

/*
 * The snapshot length a classic pcap file's header says (bytes 16 to 19, in
 * the byte order its magic number shows), read from the file itself: libpcap
 * quietly replaces one it finds absurd (0, or past 2^31) by its own maximum.
 * 0 when it cannot be read here (a pipe, pcapng: one per interface block).
 */
static uint64_t header_snaplen(FILE *f)
{
	unsigned char h[20];
	uint32_t magic;

	if (fileno(f) < 0 || pread(fileno(f), h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return 0;
	magic = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		return (uint32_t)h[16] | (uint32_t)h[17] << 8 | (uint32_t)h[18] << 16 | (uint32_t)h[19] << 24;
	if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
		return (uint32_t)h[19] | (uint32_t)h[18] << 8 | (uint32_t)h[17] << 16 | (uint32_t)h[16] << 24;
	return 0;
}

static void after_open(struct mt_capture *c, uint64_t said)
{
	int snap = pcap_snapshot(c->p);

	c->linktype = pcap_datalink(c->p);
	if (said > MT_CAPTURE_SNAPLEN || snap > MT_CAPTURE_SNAPLEN)
		snprintf(c->warning, sizeof(c->warning),
			 "'%s' says its snapshot length is %llu: packets above %d bytes cannot be "
			 "read",
			 c->name, (unsigned long long)(said > MT_CAPTURE_SNAPLEN ? said : (uint64_t)snap),
			 MT_CAPTURE_SNAPLEN);
}

struct mt_capture *mt_capture_open_stream(FILE *f, const char *name, struct mt_err *err)
{
	struct mt_capture *c = cap_new(name);
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	struct stat sb;
	uint64_t size = UINT64_MAX; /* unknown */

	if (fileno(f) >= 0 && fstat(fileno(f), &sb) == 0) {
		if (S_ISDIR(sb.st_mode)) {
			mt_err_set(err, "cannot read '%s': %s", name, strerror(EISDIR));
			goto fail;
		}
		if (S_ISREG(sb.st_mode))
			size = (uint64_t)sb.st_size;
	}
	c->p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, ebuf);
	if (!c->p) {
		if (size == UINT64_MAX) { /* a pipe or memory: was anything there? */
			long pos = ftell(f);
			size = pos > 0 ? (uint64_t)pos : ebuf[0] && strstr(ebuf, "only got 0") ? 0 : 4;
		}
		open_error(name, ebuf, size, err);
		goto fail;
	}
	c->f = f;
	c->st.file_size = size == UINT64_MAX ? 0 : size;
	after_open(c, header_snaplen(f));
	return c;
fail:
	fclose(f);
	free(c->name);
	free(c);
	return NULL;
}

struct mt_capture *mt_capture_open_file(const char *path, struct mt_err *err)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : fdopen(dup(0), "rb");

	if (!f) {
		mt_err_set(err, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	return mt_capture_open_stream(f, path, err);
}

struct mt_capture *mt_capture_open_live(const char *ifname, struct mt_err *err)
{
	struct mt_capture *c = cap_new(ifname);
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	int rc;

	c->live = 1;
	c->st.live = 1;
	c->p = pcap_create(ifname, ebuf);
	if (!c->p) {
		mt_err_set(err, "cannot capture on '%s': %s", ifname, ebuf);
		goto fail;
	}
	pcap_set_snaplen(c->p, MT_CAPTURE_SNAPLEN);
	pcap_set_promisc(c->p, 0);
	pcap_set_immediate_mode(c->p, 1);
	pcap_set_timeout(c->p, LIVE_TICK_MS);
	pcap_set_buffer_size(c->p, 16 << 20);
	pcap_set_tstamp_precision(c->p, PCAP_TSTAMP_PRECISION_MICRO);
	rc = pcap_activate(c->p);
	switch (rc) {
	case 0: break;
	case PCAP_ERROR_PERM_DENIED:
	case PCAP_ERROR_PROMISC_PERM_DENIED:
		mt_err_set(err, "cannot capture on '%s': needs root or CAP_NET_RAW (%s)", ifname,
			   pcap_geterr(c->p));
		goto fail;
	case PCAP_ERROR_NO_SUCH_DEVICE:
		mt_err_set(err, "cannot capture on '%s': no such interface", ifname);
		goto fail;
	case PCAP_ERROR_IFACE_NOT_UP:
		mt_err_set(err, "cannot capture on '%s': the interface is not up", ifname);
		goto fail;
	default:
		if (rc < 0) {
			mt_err_set(err, "cannot capture on '%s': %s", ifname,
				   rc == PCAP_ERROR ? pcap_geterr(c->p) : pcap_statustostr(rc));
			goto fail;
		}
		snprintf(c->warning, sizeof(c->warning), "capturing on '%s': %s", ifname,
			 rc == PCAP_WARNING ? pcap_geterr(c->p) : pcap_statustostr(rc));
		break;
	}
	/*
	 * libpcap's own wait goes on polling past its timeout when nothing
	 * comes, so it waits here, non-blocking, to see stop and the duration.
	 */
	c->fd = pcap_get_selectable_fd(c->p);
	if (c->fd >= 0 && pcap_setnonblock(c->p, 1, ebuf) < 0)
		c->fd = -1;
	after_open(c, 0);
	return c;
fail:
	mt_capture_free(c);
	return NULL;
}

int mt_capture_filter(struct mt_capture *c, const char *expr, struct mt_err *err)
{
	struct bpf_program prog;
	bpf_u_int32 net = 0, mask = PCAP_NETMASK_UNKNOWN;
	char ebuf[PCAP_ERRBUF_SIZE];
	int rc = -1;

	if (c->live && pcap_lookupnet(c->name, &net, &mask, ebuf) < 0)
		mask = PCAP_NETMASK_UNKNOWN;
	if (pcap_compile(c->p, &prog, expr, 1, mask) < 0) {
		mt_err_set(err, "bad filter '%s': %s", expr, pcap_geterr(c->p));
		goto out;
	}
	if (pcap_setfilter(c->p, &prog) < 0)
		mt_err_set(err, "cannot use filter '%s': %s", expr, pcap_geterr(c->p));
	else
		rc = 0;
	pcap_freecode(&prog);
out:
	return rc;
}

int mt_capture_linktype(const struct mt_capture *c)
{
	return c->linktype;
}

const char *mt_capture_linktype_name(const struct mt_capture *c)
{
	const char *n = pcap_datalink_val_to_name(c->linktype);

	return n ? n : "";
}

const char *mt_capture_warning(const struct mt_capture *c)
{
	return c->warning;
}

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
	struct mt_capture *c = (struct mt_capture *)(void *)user;
	int64_t us;

	/* (a pcapng time can be any 64-bit count: past 292,000 years, saturated) */
	if (h->ts.tv_sec > MAX_SECONDS)
		us = MAX_SECONDS * 1000000;
	else if (h->ts.tv_sec < -MAX_SECONDS)
		us = -MAX_SECONDS * 1000000;
	else
		us = (int64_t)h->ts.tv_sec * 1000000 + (int64_t)h->ts.tv_usec;

	if (!c->st.packets || us < c->st.first_us)
		c->st.first_us = us;
	if (!c->st.packets || us > c->st.last_us)
		c->st.last_us = us;
	c->st.packets++;
	tf_packet(c->tf, c->linktype, us, h->len, bytes, h->caplen);
}

static void progress(struct mt_capture *c, const struct mt_capture_opts *o, int last)
{
	long pos;

	if (c->live || !c->f)
		return;
	pos = ftell(c->f);
	if (pos >= 0)
		c->st.file_bytes = (uint64_t)pos;
	if (last && c->st.file_size && c->st.file_bytes < c->st.file_size)
		c->st.file_bytes = c->st.file_size; /* what libpcap's buffer took counts as read */
	if (o && o->progress && (last || c->st.file_bytes - c->reported >= PROGRESS_STEP)) {
		c->reported = c->st.file_bytes;
		o->progress(o->progress_ctx, c->st.file_bytes, c->st.file_size);
	}
}

/*
 * A live capture told to stop: the packets that came before, which libpcap's
 * buffer or the kernel's still hold, are read too (without waiting: the
 * descriptor is non-blocking), so that a sniff stopped by SIGINT keeps them.
 * Bounded, should traffic go on arriving as fast as it is read.
 */
static void drain(struct mt_capture *c)
{
	int i, r;

	for (i = 0; i < DRAIN_ROUNDS; i++) {
		c->in_dispatch = 1;
		r = pcap_dispatch(c->p, -1, on_packet, (u_char *)(void *)c);
		c->in_dispatch = 0;
		if (r <= 0)
			break;
	}
	c->broken = 0;
}

enum mt_capture_end mt_capture_run(struct mt_capture *c, struct tf *t, const struct mt_capture_opts *o,
				   struct mt_err *err)
{
	enum mt_capture_end end;
	int64_t start = mt_mono_ns();

	c->tf = t;
	for (;;) {
		int cnt = c->live ? -1 : FILE_BATCH, r;
		if (o && o->stop && *o->stop) {
			end = MT_CAPTURE_STOPPED;
			break;
		}
		if (o && o->max_packets) {
			uint64_t left;
			if (c->st.packets >= o->max_packets) {
				end = MT_CAPTURE_COUNT;
				break;
			}
			left = o->max_packets - c->st.packets;
			if (cnt < 0 || left < (uint64_t)cnt)
				cnt = left > FILE_BATCH ? FILE_BATCH : (int)left;
		}
		int64_t wait = LIVE_TICK_MS;
		if (o && o->duration_ms > 0) {
			int64_t left = o->duration_ms - (mt_mono_ns() - start) / 1000000;
			if (left <= 0) {
				end = MT_CAPTURE_DURATION;
				break;
			}
			if (left < wait)
				wait = left;
		}
		if (c->broken) {
			c->broken = 0;
			end = MT_CAPTURE_STOPPED;
			break;
		}
		if (c->live && c->fd >= 0) {
			struct pollfd pfd = {c->fd, POLLIN, 0};
			int pr = poll(&pfd, 1, (int)wait);
			if (pr < 0 && errno != EINTR) {
				mt_err_set(err, "capture on '%s' failed: %s", c->name, strerror(errno));
				end = MT_CAPTURE_ERROR;
				break;
			}
			if (pr <= 0)
				continue;
		}
		c->in_dispatch = 1;
		r = pcap_dispatch(c->p, cnt, on_packet, (u_char *)(void *)c);
		c->in_dispatch = 0;
		if (r == PCAP_ERROR_BREAK) {
			c->broken = 0;
			end = MT_CAPTURE_STOPPED;
			break;
		}
		if (r < 0 && ((o && o->stop && *o->stop) || c->broken)) {
			/* A read a stopping signal interrupted (a pipe): stopped, not damaged. */
			c->broken = 0;
			end = MT_CAPTURE_STOPPED;
			break;
		}
		if (r < 0) {
			if (c->live)
				mt_err_set(err, "capture on '%s' failed: %s", c->name, pcap_geterr(c->p));
			else
				mt_err_set(err, "cannot read '%s' past packet %llu: %s", c->name,
					   (unsigned long long)c->st.packets, pcap_geterr(c->p));
			end = MT_CAPTURE_ERROR;
			break;
		}
		if (r == 0 && !c->live) {
			end = MT_CAPTURE_EOF;
			break;
		}
		progress(c, o, 0);
	}
	if (end == MT_CAPTURE_STOPPED && c->live && c->fd >= 0)
		drain(c);
	progress(c, o, end == MT_CAPTURE_EOF);
	c->tf = NULL;
	return end;
}

void mt_capture_breakloop(struct mt_capture *c)
{
	c->broken = 1;
	if (c->in_dispatch)
		pcap_breakloop(c->p);
}

void mt_capture_stats(struct mt_capture *c, struct mt_capture_stats *out)
{
	struct pcap_stat ps;

	if (c->live && pcap_stats(c->p, &ps) == 0) {
		c->st.received = ps.ps_recv;
		c->st.dropped = ps.ps_drop;
		c->st.if_dropped = ps.ps_ifdrop;
	}
	*out = c->st;
}

void mt_capture_free(struct mt_capture *c)
{
	if (!c)
		return;
	if (c->p)
		pcap_close(c->p);
	free(c->name);
	free(c);
}
