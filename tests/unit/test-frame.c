/*
 * test-frame.c - newline framing (tap/stdio/frame.h): frames split across pushes,
 * several per push, CRLF and empty lines kept as they are, the incomplete
 * final frame, the exact size limit and oversized frames, and a model check
 * over many split points.
 */
#include "tests/unit/unit.h"

#include "tap/stdio/frame.h"

struct got_frame {
	char *data; /* NULL for an oversized frame */
	size_t len;
	unsigned flags;
};

struct got {
	struct got_frame v[512];
	size_t n;
};

static void collect(void *ctx, const char *p, size_t len, unsigned flags)
{
	struct got *g = ctx;
	struct got_frame *f;

	if (g->n >= sizeof(g->v) / sizeof(g->v[0]))
		fail_msg("too many frames");
	f = &g->v[g->n++];
	f->len = len;
	f->flags = flags;
	if (flags & MT_FRAME_OVERSIZED) {
		assert_null(p);
		f->data = NULL;
		return;
	}
	assert_true(p != NULL || len == 0);
	f->data = malloc(len + 1);
	assert_non_null(f->data);
	if (len)
		memcpy(f->data, p, len);
	f->data[len] = '\0';
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].data);
	g->n = 0;
}

static struct got *got_new(void)
{
	struct got *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	return g;
}

static void got_delete(struct got *g)
{
	got_free(g);
	free(g);
}

#define assert_frame(g, i, text, fl)                                     \
	do {                                                             \
		const struct got_frame *f_ = &(g)->v[(i)];               \
		assert_true((i) < (g)->n);                               \
		assert_int_equal(f_->flags, (fl));                       \
		assert_int_equal(f_->len, sizeof(text) - 1);             \
		assert_memory_equal(f_->data, (text), sizeof(text) - 1); \
	} while (0)

#define assert_oversized(g, i, size, fl)                                \
	do {                                                            \
		const struct got_frame *f_ = &(g)->v[(i)];              \
		assert_true((i) < (g)->n);                              \
		assert_int_equal(f_->flags, MT_FRAME_OVERSIZED | (fl)); \
		assert_int_equal(f_->len, (size));                      \
		assert_null(f_->data);                                  \
	} while (0)

static void push_str(struct mt_framer *f, const char *s, struct got *g)
{
	mt_framer_push(f, s, strlen(s), collect, g);
}

static void test_byte_at_a_time(void **state)
{
	static const char in[] = "{\"a\":1}\nbc\r\n\n\xff\xfe\0x\n";
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 0);
	for (size_t i = 0; i < sizeof(in) - 1; i++) {
		size_t before = g->n;
		mt_framer_push(&f, in + i, 1, collect, g);
		/* A frame is handed out exactly when its newline arrives. */
		assert_int_equal(g->n, before + (in[i] == '\n'));
		if (in[i] == '\n')
			assert_int_equal(mt_framer_pending(&f), 0);
		else
			assert_true(mt_framer_pending(&f) > 0);
	}
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 4);
	assert_frame(g, 0, "{\"a\":1}\n", 0);
	assert_frame(g, 1, "bc\r\n", 0);
	assert_frame(g, 2, "\n", 0);
	assert_frame(g, 3, "\xff\xfe\0x\n", 0);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_several_in_one_push(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 1024);
	push_str(&f, "a\nbb\nccc\nrest", g);
	assert_int_equal(g->n, 3);
	assert_frame(g, 0, "a\n", 0);
	assert_frame(g, 1, "bb\n", 0);
	assert_frame(g, 2, "ccc\n", 0);
	assert_int_equal(mt_framer_pending(&f), 4);
	/* The held part joins the next push's first line. */
	push_str(&f, "-of-it\nx\n", g);
	assert_int_equal(g->n, 5);
	assert_frame(g, 3, "rest-of-it\n", 0);
	assert_frame(g, 4, "x\n", 0);
	assert_int_equal(mt_framer_pending(&f), 0);
	/* A frame spanning three pushes. */
	push_str(&f, "ab", g);
	push_str(&f, "c", g);
	push_str(&f, "d\nz", g);
	assert_int_equal(g->n, 6);
	assert_frame(g, 5, "abcd\n", 0);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 7);
	assert_frame(g, 6, "z", MT_FRAME_INCOMPLETE);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_crlf_and_empty_lines(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 0);
	push_str(&f, "x\r\n\n\n\r\na\rb\n\r", g);
	push_str(&f, "\n", g);
	assert_int_equal(g->n, 6);
	assert_frame(g, 0, "x\r\n", 0);
	assert_frame(g, 1, "\n", 0);
	assert_frame(g, 2, "\n", 0);
	assert_frame(g, 3, "\r\n", 0);
	assert_frame(g, 4, "a\rb\n", 0); /* a lone \r does not end a frame */
	assert_frame(g, 5, "\r\n", 0);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_incomplete_at_close(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 0);
	push_str(&f, "a\nbc", g);
	push_str(&f, "d\r", g);
	assert_int_equal(g->n, 1);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 2);
	assert_frame(g, 0, "a\n", 0);
	assert_frame(g, 1, "bcd\r", MT_FRAME_INCOMPLETE);
	assert_int_equal(mt_framer_pending(&f), 0);
	/* Closing again gives nothing more. */
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 2);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_close_with_nothing_pending(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 16);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 0);
	push_str(&f, "a\n", g);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 1);
	assert_frame(g, 0, "a\n", 0);
	/* A push of nothing is nothing. */
	mt_framer_push(&f, "", 0, collect, g);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 1);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_limit_boundary(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 4);
	/* len == max (newline included) is kept; max + 1 is not. */
	push_str(&f, "abc\nabcd\nx\n", g);
	assert_int_equal(g->n, 3);
	assert_frame(g, 0, "abc\n", 0);
	assert_oversized(g, 1, 5, 0);
	assert_frame(g, 2, "x\n", 0);
	got_free(g);

	/* The same, one byte at a time. */
	static const char in[] = "abc\nabcd\nx\n";
	for (size_t i = 0; i < sizeof(in) - 1; i++)
		mt_framer_push(&f, in + i, 1, collect, g);
	assert_int_equal(g->n, 3);
	assert_frame(g, 0, "abc\n", 0);
	assert_oversized(g, 1, 5, 0);
	assert_frame(g, 2, "x\n", 0);
	got_free(g);

	/* Held bytes exactly at the maximum, then the newline makes it one too many. */
	push_str(&f, "abcd", g);
	assert_int_equal(mt_framer_pending(&f), 4);
	push_str(&f, "\n", g);
	assert_int_equal(g->n, 1);
	assert_oversized(g, 0, 5, 0);
	assert_int_equal(mt_framer_pending(&f), 0);
	got_free(g);

	/* At close, an unterminated frame of exactly max bytes is kept. */
	push_str(&f, "wxyz", g);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 1);
	assert_frame(g, 0, "wxyz", MT_FRAME_INCOMPLETE);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_oversized_then_normal(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;
	char big[100];

	(void)state;
	memset(big, 'o', sizeof(big));
	mt_framer_init(&f, 10);
	push_str(&f, "ok\n", g);
	/* 100 bytes in 7-byte pieces, then the newline with the next frames. */
	for (size_t i = 0; i < sizeof(big); i += 7) {
		size_t n = sizeof(big) - i < 7 ? sizeof(big) - i : 7;
		mt_framer_push(&f, big + i, n, collect, g);
		assert_int_equal(g->n, 1); /* reported once, at its end */
		assert_int_equal(mt_framer_pending(&f), i + n);
		assert_true(f.pending.len <= 10); /* not kept */
	}
	push_str(&f, "\nnext\n0123456789", g);
	assert_int_equal(g->n, 3);
	assert_frame(g, 0, "ok\n", 0);
	assert_oversized(g, 1, 101, 0);
	assert_frame(g, 2, "next\n", 0);
	/* 10 bytes held is fine; the 11th makes it oversized. */
	assert_int_equal(mt_framer_pending(&f), 10);
	push_str(&f, "\n", g);
	assert_int_equal(g->n, 4);
	assert_oversized(g, 3, 11, 0);
	/* Two oversized frames in a row, in one push. */
	push_str(&f, "0123456789ab\n0123456789abc\n12\n", g);
	assert_int_equal(g->n, 7);
	assert_oversized(g, 4, 13, 0);
	assert_oversized(g, 5, 14, 0);
	assert_frame(g, 6, "12\n", 0);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_oversized_at_close(void **state)
{
	struct got *g = got_new();
	struct mt_framer f;

	(void)state;
	mt_framer_init(&f, 4);
	push_str(&f, "ab\nabcde", g);
	push_str(&f, "fg", g);
	assert_int_equal(g->n, 1);
	assert_int_equal(mt_framer_pending(&f), 7);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 2);
	assert_frame(g, 0, "ab\n", 0);
	assert_oversized(g, 1, 7, MT_FRAME_INCOMPLETE);
	assert_int_equal(mt_framer_pending(&f), 0);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 2);
	/* Five bytes in one push, no newline, then close. */
	push_str(&f, "abcde", g);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 3);
	assert_oversized(g, 2, 5, MT_FRAME_INCOMPLETE);
	/* The framer is usable after that. */
	push_str(&f, "ok\n", g);
	assert_int_equal(g->n, 4);
	assert_frame(g, 3, "ok\n", 0);
	mt_framer_release(&f);
	got_delete(g);
}

static void test_no_limit(void **state)
{
	const size_t big = 3u << 20;
	struct got *g = got_new();
	struct mt_framer f;
	char *p = malloc(big + 1);

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < big; i++)
		p[i] = (char)('a' + i % 26);
	p[big] = '\n';
	mt_framer_init(&f, 0);
	for (size_t i = 0; i < big + 1; i += 65536) {
		size_t n = big + 1 - i < 65536 ? big + 1 - i : 65536;
		mt_framer_push(&f, p + i, n, collect, g);
	}
	assert_int_equal(g->n, 1);
	assert_int_equal(g->v[0].flags, 0);
	assert_int_equal(g->v[0].len, big + 1);
	assert_memory_equal(g->v[0].data, p, big + 1);
	/* Unterminated at close, no limit either. */
	mt_framer_push(&f, p, big, collect, g);
	mt_framer_close(&f, collect, g);
	assert_int_equal(g->n, 2);
	assert_int_equal(g->v[1].flags, MT_FRAME_INCOMPLETE);
	assert_int_equal(g->v[1].len, big);
	assert_memory_equal(g->v[1].data, p, big);
	mt_framer_release(&f);
	/* Released, it may be initialized again. */
	mt_framer_init(&f, 0);
	push_str(&f, "again\n", g);
	assert_int_equal(g->n, 3);
	assert_frame(g, 2, "again\n", 0);
	push_str(&f, "held but released", g);
	mt_framer_release(&f);
	free(p);
	got_delete(g);
}

/* A tiny deterministic generator, so that a failure can be reproduced. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * Random lines (some above the maximum, some empty, the last one maybe
 * unterminated) pushed in random pieces: the frames are exactly what a plain
 * split on '\n' says, oversized ones with their length.
 */
static void test_model(void **state)
{
	struct got *g = got_new();
	char in[600] = {0};
	uint32_t seed = 12345;

	(void)state;
	for (int round = 0; round < 3000; round++) {
		size_t n = rnd(&seed) % sizeof(in), max = rnd(&seed) % 24;
		struct mt_framer f;

		for (size_t i = 0; i < n; i++) {
			uint32_t r = rnd(&seed) % 16;
			in[i] = r == 0 ? '\n' : r == 1 ? '\r' : r == 2 ? '\0' : (char)('a' + r);
		}
		mt_framer_init(&f, max);
		for (size_t i = 0; i < n;) {
			size_t k = 1 + rnd(&seed) % 40;
			if (k > n - i)
				k = n - i;
			mt_framer_push(&f, in + i, k, collect, g);
			i += k;
			if (max)
				assert_true(f.pending.len <= max);
		}
		mt_framer_close(&f, collect, g);

		/* The model. */
		size_t fi = 0, start = 0;
		for (size_t i = 0; i <= n; i++) {
			int end = i < n && in[i] == '\n';
			int last = i == n && start < n;
			if (!end && !last)
				continue;
			size_t len = i - start + (end ? 1 : 0);
			unsigned fl = end ? 0 : MT_FRAME_INCOMPLETE;
			assert_true(fi < g->n);
			struct got_frame *gf = &g->v[fi++];
			if (max && len > max) {
				assert_int_equal(gf->flags, fl | MT_FRAME_OVERSIZED);
				assert_int_equal(gf->len, len);
			} else {
				assert_int_equal(gf->flags, fl);
				assert_int_equal(gf->len, len);
				assert_memory_equal(gf->data, in + start, len);
			}
			start = i + 1;
		}
		assert_int_equal(fi, g->n);
		got_free(g);
		mt_framer_release(&f);
	}
	got_delete(g);
}

int main(void)
{
	const struct CMUnitTest frame[] = {
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_several_in_one_push),
		cmocka_unit_test(test_crlf_and_empty_lines),
		cmocka_unit_test(test_incomplete_at_close),
		cmocka_unit_test(test_close_with_nothing_pending),
		cmocka_unit_test(test_limit_boundary),
		cmocka_unit_test(test_oversized_then_normal),
		cmocka_unit_test(test_oversized_at_close),
		cmocka_unit_test(test_no_limit),
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(frame, NULL, NULL);
}
