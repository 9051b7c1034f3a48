/*
 * frame.h - newline framing for stdio streams: bytes in, frames out, no I/O.
 *
 * A frame is the bytes up to and including '\n' (a trailing "\r" stays in the
 * frame). Bytes left without a newline when the stream closes make one final
 * frame flagged incomplete. A frame longer than the framer's maximum is not
 * kept: it is reported once, flagged oversized, with its length, when its
 * newline (or the end of the stream) arrives. Memory held is bounded by the
 * maximum.
 */
#ifndef MCPTAP_FRAME_H
#define MCPTAP_FRAME_H

#include <stddef.h>

#include "schema/util.h"

enum {
	MT_FRAME_INCOMPLETE = 1, /* the stream closed before its newline */
	MT_FRAME_OVERSIZED = 2,  /* longer than the maximum: p is NULL, len is its size */
};

/*
 * Called for each frame. p/len are borrowed for the call only. Frames come in
 * stream order.
 */
typedef void (*mt_frame_fn)(void *ctx, const char *p, size_t len, unsigned flags);

struct mt_framer {
	struct mt_buf pending; /* an unfinished frame's bytes (owned) */
	size_t max;            /* the largest frame kept, newline included */
	size_t skipped;        /* > 0: bytes of an oversized frame seen so far */
};

/* Initialize with a maximum frame size (0: no limit). */
void mt_framer_init(struct mt_framer *f, size_t max);
/* Feed n bytes; complete frames go to fn. */
void mt_framer_push(struct mt_framer *f, const char *p, size_t n, mt_frame_fn fn, void *ctx);
/* The stream ended: an unfinished frame goes to fn flagged incomplete. */
void mt_framer_close(struct mt_framer *f, mt_frame_fn fn, void *ctx);
/* Bytes held for an unfinished frame. */
size_t mt_framer_pending(const struct mt_framer *f);
/* Free the memory; the framer may be initialized again. */
void mt_framer_release(struct mt_framer *f);

#endif
