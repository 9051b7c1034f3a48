/*
 * lineio.h - a newline-delimited JSON-RPC channel over a pair of file
 * descriptors: the mock peer's stdio transport. Reads are buffered and cut
 * into lines (without the newline; a trailing "\r" is dropped too); writes
 * are queued and flushed before the channel waits for input, so a pipelined
 * burst goes out in few writes and a ping-pong is never held back.
 */
#ifndef MCPTAP_LINEIO_H
#define MCPTAP_LINEIO_H

#include <signal.h>
#include <stddef.h>

#include "schema/util.h"

/* How lio_unread learns what the peer has not read yet of wfd (found by lio_init). */
enum lio_outq {
	LIO_OUTQ_NONE,   /* a file, a tty, a network socket: it cannot be known */
	LIO_OUTQ_PIPE,   /* FIONREAD: Linux counts a pipe's unread bytes on either end */
	LIO_OUTQ_SOCKET, /* SIOCOUTQ: the bytes a Unix stream socket sent that its peer
			  * has not read yet (node spawns children with socketpairs) */
};

struct lio {
	int rfd, wfd; /* borrowed */
	char *buf;    /* owned: read-ahead */
	size_t start, end, cap;
	size_t max_line;   /* a longer line is an error */
	struct mt_buf out; /* queued output */
	int eof;
	int write_failed;    /* the peer stopped reading */
	int nonblock;        /* wfd is ours and non-blocking: output waits in out */
	size_t out_off;      /* the part of out already written */
	int outq;            /* enum lio_outq, for wfd */
	struct mt_buf ahead; /* input read while lio_wait_read waited, not yet in buf
			      * (buf holds the line lio_next lent out) */
	int ahead_eof;       /* the input ended while lio_wait_read waited */
};

enum {
	LIO_LINE = 1, /* *line holds one */
	LIO_TIMEOUT = 0,
	LIO_EOF = -1,   /* the input ended (a last line without a newline came first) */
	LIO_ERROR = -2, /* a read error, or a line longer than max_line (errno: EMSGSIZE) */
};

/* A channel reading rfd and writing wfd; lines up to max_line bytes. */
void lio_init(struct lio *l, int rfd, int wfd, size_t max_line);
void lio_release(struct lio *l);

/*
 * The next line: *line and *n are borrowed until the next call. Waits up to
 * timeout_ms (-1: for ever), flushing queued output first. Returns LIO_*.
 */
int lio_next(struct lio *l, int timeout_ms, const char **line, size_t *n);

/* Queue n bytes for the peer (add the newline yourself). */
void lio_put(struct lio *l, const char *p, size_t n);
/*
 * Write what is queued; 0, or -1 when the peer is gone (further output is
 * dropped). In non-blocking mode it writes what the pipe takes now and keeps
 * the rest for lio_next, which writes it while it waits for input.
 */
int lio_flush(struct lio *l);

/*
 * Make wfd non-blocking (it must be the caller's own pipe): a peer that stops
 * reading can no longer hold up lio_next and its timeout. Returns 0 or -1.
 */
int lio_nonblock(struct lio *l);
/* Bytes queued and not yet written. */
size_t lio_pending(const struct lio *l);
/* Wait up to timeout_ms for the queued output to go out; 0 when it did, else -1. */
int lio_drain(struct lio *l, int timeout_ms);

/*
 * Bytes written to wfd that the peer has not read yet: 0 once it has read
 * everything, -1 when that cannot be known (l->outq is LIO_OUTQ_NONE, or the
 * query failed).
 */
long lio_unread(const struct lio *l);

/*
 * Write what is queued, then wait until the peer has read all of it (see
 * lio_unread), for up to timeout_ms. Meanwhile the input is read ahead (up to
 * a few MiB, kept for lio_next; the line lio_next lent out stays valid), so
 * that a peer blocked writing to us, before it reads, cannot deadlock with us.
 * stop (borrowed, may be NULL) ends the wait once it is nonzero. Returns 0
 * when the peer has read everything or there is no way to know, 1 when it has
 * not within timeout_ms (what is still queued goes out with the next flush),
 * -1 when the peer stopped reading (its end is closed) or stop was set.
 */
int lio_wait_read(struct lio *l, int timeout_ms, const volatile sig_atomic_t *stop);

#endif
