/*
 * sse.h - an incremental Server-Sent Events parser (WHATWG HTML, "Parsing an
 * event stream"): bytes in, blocks out, no I/O.
 *
 * The HTTP tap forwards every byte of a text/event-stream response at once
 * and feeds a copy here, in pieces of any size. Lines end with CRLF, LF or CR
 * (a CR ending one piece and an LF starting the next are one line end); a
 * UTF-8 BOM at the very start of the stream is skipped. Bytes are not decoded:
 * values are the bytes as sent, invalid UTF-8 included.
 *
 * Unlike a browser, which drops blocks without data, the tap reports every
 * block: a run of non-blank lines (fields or comments, known or not) ended by
 * a blank line, so that priming events ("id: 5" with no or empty data),
 * retry-only blocks and keep-alive comments are seen. A blank line with no
 * block before it reports nothing.
 *
 * A block ended by a lone CR is reported when the next byte arrives (or at
 * close), since only that byte tells whether an LF belongs to the block: so
 * the blocks and their sizes do not depend on where the pieces were cut.
 *
 * Memory is bounded by the maximum given at init: a block of more stream
 * bytes than that is reported with only its size and offset (oversized);
 * its fields are dropped, its ids too (so last_id may then differ from a
 * browser's), and parsing goes on at the next block.
 */
#ifndef MCPTAP_SSE_H
#define MCPTAP_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "schema/util.h"

/* One block. Every pointer is borrowed for the callback only and never NULL. */
struct mt_sse_event {
	const char *data; /* data lines joined with "\n" (no trailing "\n"); NUL-terminated */
	size_t data_len;
	const char *event; /* the last event: value; "" when none (the type is then "message") */
	size_t event_len;
	const char *id; /* the last accepted id: value of this block; NUL-terminated */
	size_t id_len;
	int has_id;          /* an accepted id: line was here (its value may be empty: a reset) */
	int has_data;        /* at least one data: line */
	int has_event;       /* at least one event: line */
	long long retry;     /* the last valid retry: in ms (saturated at LLONG_MAX), or -1 */
	const char *last_id; /* the stream's last event id after this block; NUL-terminated */
	size_t last_id_len;
	unsigned comments; /* lines starting with ':' */
	unsigned ignored;  /* lines the spec ignores: unknown fields, an id: holding a NUL,
			      a retry: that is not only ASCII digits (or is empty) */
	int oversized;     /* above the maximum: the fields above are empty, retry -1 */
	size_t raw_len;    /* stream bytes of the block, its blank line's end included */
	int64_t offset;    /* stream offset of its first byte (a BOM counts) */
};

typedef void (*mt_sse_fn)(void *ctx, const struct mt_sse_event *ev);

/* The parser's state; read its fields only through the functions below. */
struct mt_sse {
	size_t max;            /* the largest block kept, in stream bytes (0: no limit) */
	int64_t offset;        /* stream bytes consumed so far */
	struct mt_buf line;    /* the current line, until its end (owned) */
	struct mt_buf data;    /* the block's data lines, each with its "\n" (owned) */
	struct mt_buf event;   /* the block's event type (owned) */
	struct mt_buf id;      /* the block's accepted id (owned) */
	struct mt_buf last_id; /* the stream's last event id (owned) */
	size_t line_len;       /* bytes of the current line (also when not kept) */
	size_t raw;            /* stream bytes of the current block so far */
	int64_t start;         /* its first byte's offset */
	long long retry;
	unsigned comments, ignored;
	unsigned char bom; /* BOM bytes matched at the stream's start */
	unsigned in_block : 1, oversized : 1, has_id : 1, has_data : 1, has_event : 1;
	unsigned bom_done : 1; /* the stream's first bytes were looked at */
	unsigned cr : 1;       /* the last byte consumed was a CR ending a line */
	unsigned ended : 1;    /* the block ended with that CR: reported at the next byte */
};

/* Initialize with a maximum block size in stream bytes (0: no limit). */
void mt_sse_init(struct mt_sse *p, size_t max);

/* Feed n bytes; each block ended by a blank line goes to fn, in stream order. */
void mt_sse_push(struct mt_sse *p, const char *buf, size_t n, mt_sse_fn fn, void *ctx);

/*
 * The stream ended. A block waiting for the byte after its CR goes to fn. A
 * block not ended by a blank line is not reported (the spec drops it):
 * returns its stream bytes, 0 when there is none. The parser is then as
 * after init (offsets from 0 again), memory kept.
 */
size_t mt_sse_close(struct mt_sse *p, mt_sse_fn fn, void *ctx);

/* Free the memory; the parser may be initialized again. */
void mt_sse_release(struct mt_sse *p);

/* The bytes its buffers hold now, as allocated (what an owner counts against a budget). */
size_t mt_sse_bytes(const struct mt_sse *p);

#endif
