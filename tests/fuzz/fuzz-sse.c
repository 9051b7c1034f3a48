/*
 * fuzz-sse.c - libFuzzer target for the Server-Sent Events parser.
 *
 * The first byte chooses the maximum block size (0: no limit), the next two
 * a split point and a seed for piece sizes; the rest is the stream. It is
 * parsed three ways: whole, cut in two at the split point, and in small
 * pieces. Checks: the three give the same blocks and the same unfinished
 * size; every value is NUL-terminated; a kept block is at most the maximum
 * and an oversized one above it, with empty fields; blocks come in stream
 * order without overlapping, within the stream; data is no longer than the
 * block; the unfinished block fits in what is left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap/http/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A digest of the blocks, for comparing the ways of feeding. */
struct run {
	struct mt_buf log; /* every field of every block, appended */
	size_t max;
	size_t n;    /* stream size */
	int64_t end; /* the previous block's end */
	size_t blocks;
};

static void fail(const char *what, const struct run *r)
{
	fprintf(stderr, "fuzz-sse: %s (max %zu, stream %zu, block %zu)\n", what, r->max, r->n, r->blocks);
	abort();
}

static void put(struct run *r, const char *p, size_t n)
{
	if (!p || p[n] != '\0')
		fail("a value without its NUL", r);
	mt_buf_append(&r->log, &n, sizeof(n));
	mt_buf_append(&r->log, p, n);
}

static void on_event(void *ctx, const struct mt_sse_event *ev)
{
	struct run *r = ctx;

	put(r, ev->data, ev->data_len);
	put(r, ev->event, ev->event_len);
	put(r, ev->id, ev->id_len);
	put(r, ev->last_id, ev->last_id_len);
	mt_buf_printf(&r->log, "|%d%d%d%d %lld %u %u %zu %lld\n", ev->has_id, ev->has_data, ev->has_event,
		      ev->oversized, ev->retry, ev->comments, ev->ignored, ev->raw_len,
		      (long long)ev->offset);
	if (ev->offset < r->end || ev->raw_len == 0 || ev->offset + (int64_t)ev->raw_len > (int64_t)r->n)
		fail("block outside the stream or overlapping", r);
	if (r->max && (ev->raw_len > r->max) != !!ev->oversized)
		fail("oversized flag does not match the size", r);
	if (ev->oversized && (ev->data_len || ev->event_len || ev->id_len || ev->has_id || ev->has_data ||
			      ev->retry != -1 || ev->comments))
		fail("oversized block with fields", r);
	if (ev->data_len >= ev->raw_len || ev->id_len >= ev->raw_len || ev->event_len >= ev->raw_len)
		fail("a value longer than its block", r);
	if (ev->has_id && (ev->id_len != ev->last_id_len || memcmp(ev->id, ev->last_id, ev->id_len) != 0))
		fail("the block's id is not the last id", r);
	if (memchr(ev->last_id, '\0', ev->last_id_len))
		fail("a last id holding a NUL", r);
	if (ev->retry < -1)
		fail("negative retry", r);
	r->end = ev->offset + (int64_t)ev->raw_len;
	r->blocks++;
}

/* Push [p, p + n) as a copy of exactly those bytes, so that ASan sees reads past it. */
static void push(struct mt_sse *s, const char *p, size_t n, struct run *r)
{
	char *copy = malloc(n ? n : 1);

	if (n)
		memcpy(copy, p, n);
	mt_sse_push(s, copy, n, on_event, r);
	free(copy);
	if (r->max && s->line.len + s->data.len + s->event.len + s->id.len > r->max)
		fail("memory above the maximum", r);
}

static size_t finish(struct mt_sse *s, struct run *r)
{
	size_t left = mt_sse_close(s, on_event, r);

	if (r->end + (int64_t)left > (int64_t)r->n)
		fail("unfinished block larger than what is left", r);
	mt_sse_release(s);
	return left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r[3];
	struct mt_sse s;
	size_t left[3], cut, n;
	const char *in;
	unsigned seed;

	if (size < 3)
		return 0;
	in = (const char *)data + 3;
	n = size - 3;
	cut = n ? data[1] % (n + 1) : 0;
	seed = data[2] | 1u;
	for (int k = 0; k < 3; k++) {
		memset(&r[k], 0, sizeof(r[k]));
		r[k].max = data[0] % 80;
		r[k].n = n;
	}

	mt_sse_init(&s, r[0].max);
	push(&s, in, n, &r[0]);
	left[0] = finish(&s, &r[0]);

	mt_sse_init(&s, r[1].max);
	push(&s, in, cut, &r[1]);
	push(&s, in + cut, n - cut, &r[1]);
	left[1] = finish(&s, &r[1]);

	mt_sse_init(&s, r[2].max);
	for (size_t i = 0; i < n;) {
		seed = seed * 1103515245u + 12345u;
		size_t piece = (seed >> 16) % 9;
		if (piece > n - i)
			piece = n - i;
		push(&s, in + i, piece, &r[2]);
		i += piece;
	}
	left[2] = finish(&s, &r[2]);

	for (int k = 1; k < 3; k++)
		if (left[k] != left[0] || r[k].log.len != r[0].log.len ||
		    (r[0].log.len && memcmp(r[k].log.data, r[0].log.data, r[0].log.len) != 0))
			fail(k == 1 ? "a cut in two changes the blocks" : "pieces change the blocks", &r[k]);
	for (int k = 0; k < 3; k++)
		mt_buf_release(&r[k].log);
	return 0;
}
