/*
 * frame.c - newline framing (see frame.h). Frames that arrive whole inside
 * one push are handed out without copying.
 */
#include "tap/stdio/frame.h"

#include <string.h>

/* Above this, the buffer of a finished frame is given back to the allocator. */
#define KEEP_CAPACITY (1u << 20)

void mt_framer_init(struct mt_framer *f, size_t max)
{
	memset(f, 0, sizeof(*f));
	f->max = max;
}

static void shrink(struct mt_framer *f)
{
	if (f->pending.cap > KEEP_CAPACITY)
		mt_buf_release(&f->pending);
	else
		mt_buf_reset(&f->pending);
}

/* Take n more bytes of the current (unfinished) frame. */
static void hold(struct mt_framer *f, const char *p, size_t n)
{
	if (f->skipped) {
		f->skipped += n;
		return;
	}
	if (f->max && f->pending.len + n > f->max) {
		f->skipped = f->pending.len + n;
		shrink(f);
		return;
	}
	mt_buf_append(&f->pending, p, n);
}

/* The current frame ends after n more bytes (n includes the newline). */
static void finish(struct mt_framer *f, const char *p, size_t n, unsigned flags, mt_frame_fn fn, void *ctx)
{
	if (f->skipped) {
		size_t total = f->skipped + n;
		f->skipped = 0;
		fn(ctx, NULL, total, flags | MT_FRAME_OVERSIZED);
		return;
	}
	if (f->pending.len == 0) {
		if (f->max && n > f->max)
			fn(ctx, NULL, n, flags | MT_FRAME_OVERSIZED);
		else
			fn(ctx, p, n, flags);
		return;
	}
	if (f->max && f->pending.len + n > f->max) {
		size_t total = f->pending.len + n;
		shrink(f);
		fn(ctx, NULL, total, flags | MT_FRAME_OVERSIZED);
		return;
	}
	mt_buf_append(&f->pending, p, n);
	fn(ctx, f->pending.data, f->pending.len, flags);
	shrink(f);
}

void mt_framer_push(struct mt_framer *f, const char *p, size_t n, mt_frame_fn fn, void *ctx)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		if (!nl) {
			hold(f, p, n);
			return;
		}
		size_t len = (size_t)(nl - p) + 1;
		finish(f, p, len, 0, fn, ctx);
		p += len;
		n -= len;
	}
}

void mt_framer_close(struct mt_framer *f, mt_frame_fn fn, void *ctx)
{
	if (f->pending.len || f->skipped)
		finish(f, "", 0, MT_FRAME_INCOMPLETE, fn, ctx);
}

size_t mt_framer_pending(const struct mt_framer *f)
{
	return f->skipped ? f->skipped : f->pending.len;
}

void mt_framer_release(struct mt_framer *f)
{
	mt_buf_release(&f->pending);
	f->skipped = 0;
}
