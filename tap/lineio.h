/*
 * lineio.h - a newline-delimited JSON-RPC channel over a pair of file
 * descriptors: the mock peer's stdio transport. Reads are buffered and cut
 * into lines (without the newline; a trailing "\r" is dropped too); writes
 * are queued and flushed before the channel waits for input, so a pipelined
 * burst goes out in few writes and a ping-pong is never held back.
 */
#ifndef MCPTAP_LINEIO_H
#define MCPTAP_LINEIO_H

#include <stddef.h>

#include "schema/util.h"

struct lio {
	int rfd, wfd;     /* borrowed */
	char *buf;        /* owned: read-ahead */
	size_t start, end, cap;
	size_t max_line;  /* a longer line is an error */
	struct mt_buf out;/* queued output */
	int eof;
	int write_failed; /* the peer stopped reading */
	int nonblock;     /* wfd is ours and non-blocking: output waits in out */
	size_t out_off;   /* the part of out already written (nonblock) */
};

enum {
	LIO_LINE = 1,     /* *line holds one */
	LIO_TIMEOUT = 0,
	LIO_EOF = -1,     /* the input ended (a last line without a newline came first) */
	LIO_ERROR = -2,   /* a read error, or a line longer than max_line (errno: EMSGSIZE) */
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

#endif
