/*
 * fuzz-frame.c - libFuzzer target for the newline framer.
 *
 * The first two bytes choose the maximum frame size (0: no limit) and a seed
 * for the split points; the rest is the stream, pushed in pieces whose sizes
 * come from the seed. Checks: the frames, laid end to end (oversized ones by
 * their length), are exactly the stream; every kept frame is at most the
 * maximum and every oversized one is above it; only the last frame may lack
 * its newline, and then it is flagged incomplete; a frame holds no newline
 * but its last byte; the held bytes never exceed the maximum.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap/stdio/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct check {
	const char *in; /* the stream */
	size_t n;
	size_t off; /* bytes accounted for so far */
	size_t max;
	int closed; /* a frame flagged incomplete was seen */
};

static void fail(const char *what, const struct check *k)
{
	fprintf(stderr, "fuzz-frame: %s (max %zu, offset %zu of %zu)\n", what, k->max, k->off, k->n);
	abort();
}

static void on_frame(void *ctx, const char *p, size_t len, unsigned flags)
{
	struct check *k = ctx;

	if (k->closed)
		fail("a frame after the incomplete one", k);
	if (len == 0)
		fail("an empty frame", k);
	if (len > k->n - k->off)
		fail("frames longer than the stream", k);
	if (flags & MT_FRAME_OVERSIZED) {
		if (p || !k->max || len <= k->max)
			fail("oversized frame that is not", k);
	} else {
		if (!p || (k->max && len > k->max))
			fail("kept frame above the maximum", k);
		if (memcmp(p, k->in + k->off, len) != 0)
			fail("frame bytes differ from the stream", k);
	}
	/* The frame's bytes in the stream: a newline only at its end. */
	const char *nl = memchr(k->in + k->off, '\n', len);
	if (flags & MT_FRAME_INCOMPLETE) {
		if (nl)
			fail("incomplete frame holding a newline", k);
		k->closed = 1;
	} else if (nl != k->in + k->off + len - 1) {
		fail("frame not ending at its first newline", k);
	}
	if (flags & ~(unsigned)(MT_FRAME_OVERSIZED | MT_FRAME_INCOMPLETE))
		fail("unknown flags", k);
	k->off += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_framer f;
	struct check k;
	unsigned seed;

	if (size < 2)
		return 0;
	k.max = (size_t)data[0] % 64;
	seed = data[1] | 1u;
	k.in = (const char *)data + 2;
	k.n = size - 2;
	k.off = 0;
	k.closed = 0;
	mt_framer_init(&f, k.max);
	for (size_t i = 0; i < k.n;) {
		seed = seed * 1103515245u + 12345u;
		size_t piece = 1 + (seed >> 16) % 97;
		if (piece > k.n - i)
			piece = k.n - i;
		/* A copy of exactly the piece, so that ASan sees any read past it. */
		char *copy = malloc(piece);
		memcpy(copy, k.in + i, piece);
		mt_framer_push(&f, copy, piece, on_frame, &k);
		free(copy);
		i += piece;
		if (k.max && f.pending.len > k.max)
			fail("held bytes above the maximum", &k);
		if (k.off + mt_framer_pending(&f) != i)
			fail("frames plus pending bytes are not what was pushed", &k);
	}
	mt_framer_close(&f, on_frame, &k);
	if (k.off != k.n)
		fail("frames do not add up to the stream", &k);
	if (mt_framer_pending(&f) != 0)
		fail("bytes pending after close", &k);
	mt_framer_release(&f);
	return 0;
}
