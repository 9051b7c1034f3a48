/*
 * test-sse.c - the Server-Sent Events parser (tap/http/sse.h): CR, LF and CRLF
 * line ends, a CRLF cut between pushes, the BOM, data lines joined, the one
 * leading space, ids with a NUL, retry values, comment-only and priming
 * blocks, oversized blocks, exact sizes and offsets, close with an unfinished
 * block, and the same blocks whatever the pushes' sizes.
 */
#include "tests/unit/unit.h"

#include <limits.h>

#include "tap/http/sse.h"

/* A copy of one reported block. */
struct got_ev {
	char *data, *event, *id, *last_id;
	size_t data_len, event_len, id_len, last_id_len;
	int has_id, has_data, has_event, oversized;
	long long retry;
	unsigned comments, ignored;
	size_t raw_len;
	int64_t offset;
};

struct got {
	struct got_ev v[256];
	size_t n;
};

static char *dup_n(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	assert_non_null(p);
	/* The parser promises a NUL after each value. */
	assert_int_equal(p[n], '\0');
	memcpy(s, p, n + 1);
	return s;
}

static void collect(void *ctx, const struct mt_sse_event *ev)
{
	struct got *g = ctx;
	struct got_ev *e;

	if (g->n >= sizeof(g->v) / sizeof(g->v[0]))
		fail_msg("too many events");
	e = &g->v[g->n++];
	e->data = dup_n(ev->data, ev->data_len);
	e->event = dup_n(ev->event, ev->event_len);
	e->id = dup_n(ev->id, ev->id_len);
	e->last_id = dup_n(ev->last_id, ev->last_id_len);
	e->data_len = ev->data_len;
	e->event_len = ev->event_len;
	e->id_len = ev->id_len;
	e->last_id_len = ev->last_id_len;
	e->has_id = ev->has_id;
	e->has_data = ev->has_data;
	e->has_event = ev->has_event;
	e->oversized = ev->oversized;
	e->retry = ev->retry;
	e->comments = ev->comments;
	e->ignored = ev->ignored;
	e->raw_len = ev->raw_len;
	e->offset = ev->offset;
}

static struct got *got_new(void)
{
	struct got *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	return g;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].data);
		free(g->v[i].event);
		free(g->v[i].id);
		free(g->v[i].last_id);
	}
	g->n = 0;
}

static void got_delete(struct got *g)
{
	got_free(g);
	free(g);
}

static void assert_same_events(const struct got *a, const struct got *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct got_ev *x = &a->v[i], *y = &b->v[i];
		assert_int_equal(x->data_len, y->data_len);
		assert_memory_equal(x->data, y->data, x->data_len);
		assert_int_equal(x->event_len, y->event_len);
		assert_memory_equal(x->event, y->event, x->event_len);
		assert_int_equal(x->id_len, y->id_len);
		assert_memory_equal(x->id, y->id, x->id_len);
		assert_int_equal(x->last_id_len, y->last_id_len);
		assert_memory_equal(x->last_id, y->last_id, x->last_id_len);
		assert_int_equal(x->has_id, y->has_id);
		assert_int_equal(x->has_data, y->has_data);
		assert_int_equal(x->has_event, y->has_event);
		assert_int_equal(x->oversized, y->oversized);
		assert_int_equal(x->retry, y->retry);
		assert_int_equal(x->comments, y->comments);
		assert_int_equal(x->ignored, y->ignored);
		assert_int_equal(x->raw_len, y->raw_len);
		assert_int_equal(x->offset, y->offset);
	}
}

/* A block's data (with its length), offset and raw size. */
#define assert_data(g, i, text, off, raw)                                \
	do {                                                             \
		const struct got_ev *e_ = &(g)->v[(i)];                  \
		assert_true((i) < (g)->n);                               \
		assert_int_equal(e_->data_len, sizeof(text) - 1);        \
		assert_memory_equal(e_->data, (text), sizeof(text) - 1); \
		assert_int_equal(e_->offset, (off));                     \
		assert_int_equal(e_->raw_len, (raw));                    \
	} while (0)

#define assert_str(field, len, text)                                    \
	do {                                                            \
		assert_int_equal((len), sizeof(text) - 1);              \
		assert_memory_equal((field), (text), sizeof(text) - 1); \
	} while (0)

/* Feed a whole stream (n bytes) in one push, then close; returns close's value. */
static size_t feed(struct got *g, size_t max, const char *s, size_t n)
{
	struct mt_sse p;
	size_t left;

	mt_sse_init(&p, max);
	mt_sse_push(&p, s, n, collect, g);
	left = mt_sse_close(&p, collect, g);
	mt_sse_release(&p);
	return left;
}

#define FEED(g, max, lit) feed((g), (max), (lit), sizeof(lit) - 1)

static void test_lf(void **state)
{
	struct got *g = got_new();

	(void)state;
	assert_int_equal(FEED(g, 0, "data: a\n\ndata:b\ndata: c\n\nevent: up\ndata: {}\n\n"), 0);
	assert_int_equal(g->n, 3);
	assert_data(g, 0, "a", 0, 9);
	assert_int_equal(g->v[0].has_data, 1);
	assert_int_equal(g->v[0].has_id, 0);
	assert_int_equal(g->v[0].has_event, 0);
	assert_int_equal(g->v[0].retry, -1);
	assert_str(g->v[0].event, g->v[0].event_len, "");
	assert_data(g, 1, "b\nc", 9, 16);
	assert_data(g, 2, "{}", 25, 20);
	assert_int_equal(g->v[2].has_event, 1);
	assert_str(g->v[2].event, g->v[2].event_len, "up");
	got_delete(g);
}

static void test_cr_and_crlf(void **state)
{
	struct got *g = got_new();

	(void)state;
	/* CR only: the last block waits for the byte after its CR, here the close. */
	assert_int_equal(FEED(g, 0, "data: a\rdata: b\r\rid: 1\r\r"), 0);
	assert_int_equal(g->n, 2);
	assert_data(g, 0, "a\nb", 0, 17);
	assert_data(g, 1, "", 17, 7);
	assert_str(g->v[1].id, g->v[1].id_len, "1");
	got_free(g);

	/* CRLF, and mixed ends: CR LF is one end, LF CR two. */
	assert_int_equal(FEED(g, 0, "data: a\r\ndata: b\r\n\r\ndata: c\n\rdata: d\r\n\n"), 0);
	assert_int_equal(g->n, 3);
	assert_data(g, 0, "a\nb", 0, 20);
	/* "\n\r" is a line end then a blank line: "data: c" is a block alone. */
	assert_data(g, 1, "c", 20, 9);
	assert_data(g, 2, "d", 29, 10);
	got_free(g);
	assert_int_equal(FEED(g, 0, "data: c\n\rdata: d\r\n\n"), 0);
	assert_int_equal(g->n, 2);
	assert_data(g, 0, "c", 0, 9);
	assert_data(g, 1, "d", 9, 10);
	got_delete(g);
}

static void test_crlf_split(void **state)
{
	struct got *g = got_new();
	struct mt_sse p;

	(void)state;
	mt_sse_init(&p, 0);
	mt_sse_push(&p, "data: x\r", 8, collect, g);
	mt_sse_push(&p, "\ndata: y\r\n\r", 11, collect, g);
	/* The block ended with a CR: it is reported at the next byte. */
	assert_int_equal(g->n, 0);
	mt_sse_push(&p, "\n", 1, collect, g);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "x\ny", 0, 20);
	/* A CR then a byte that is not LF: reported before that byte is looked at. */
	mt_sse_push(&p, "data: z\r\r", 9, collect, g);
	assert_int_equal(g->n, 1);
	mt_sse_push(&p, "d", 1, collect, g);
	assert_int_equal(g->n, 2);
	assert_data(g, 1, "z", 20, 9);
	mt_sse_push(&p, "ata: w\r\n\r", 9, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	assert_int_equal(g->n, 3);
	assert_data(g, 2, "w", 29, 10);
	mt_sse_release(&p);
	got_delete(g);
}

/* A stream touching every rule. */
static const char rich[] = "\xEF\xBB\xBF: hello\r\n\r\n"
			   "id: 1\ndata: a\r\ndata\rdata:  b\n\n"
			   "\r\n\n"
			   "event: e\revent:f\nretry: 1500\nretry: 9x\nfoo: bar\nid: 2\0z\n\n"
			   "id\r\r"
			   "data:\xff\xfe\0x\r\n:\n\r"
			   "data: tail";

/* The stream's blocks pushed in the pieces starts[0..k). */
static void feed_pieces(struct got *g, const char *s, size_t n, const size_t *cuts, size_t k, size_t *left)
{
	struct mt_sse p;
	size_t at = 0;

	mt_sse_init(&p, 0);
	for (size_t i = 0; i <= k; i++) {
		size_t end = i < k ? cuts[i] : n;
		mt_sse_push(&p, s + at, end - at, collect, g);
		at = end;
	}
	*left = mt_sse_close(&p, collect, g);
	mt_sse_release(&p);
}

static void test_rich(void **state)
{
	struct got *g = got_new();
	const size_t n = sizeof(rich) - 1;

	(void)state;
	assert_int_equal(feed(g, 0, rich, n), 10);
	assert_int_equal(g->n, 5);
	/* The BOM is skipped but counted in offsets. */
	assert_data(g, 0, "", 3, 11);
	assert_int_equal(g->v[0].comments, 1);
	assert_int_equal(g->v[0].has_data, 0);
	assert_data(g, 1, "a\n\n b", 14, 30);
	assert_str(g->v[1].id, g->v[1].id_len, "1");
	assert_str(g->v[1].last_id, g->v[1].last_id_len, "1");
	/* The blank lines between blocks belong to none. */
	assert_data(g, 2, "", 47, 57);
	assert_str(g->v[2].event, g->v[2].event_len, "f");
	assert_int_equal(g->v[2].retry, 1500);
	assert_int_equal(g->v[2].ignored, 3); /* retry: 9x, foo, the id with a NUL */
	assert_int_equal(g->v[2].has_id, 0);
	assert_str(g->v[2].last_id, g->v[2].last_id_len, "1");
	/* "id" alone: an empty id, which resets the last one. */
	assert_data(g, 3, "", 104, 4);
	assert_int_equal(g->v[3].has_id, 1);
	assert_int_equal(g->v[3].id_len, 0);
	assert_int_equal(g->v[3].last_id_len, 0);
	assert_data(g, 4, "\xff\xfe\0x", 108, 14);
	assert_int_equal(g->v[4].comments, 1);
	assert_int_equal(g->v[4].has_data, 1);

	/* Byte at a time, every 2-way split, and some 3-way ones: the same. */
	struct got *h = got_new();
	size_t cuts[sizeof(rich)], left;
	for (size_t i = 0; i < n; i++)
		cuts[i] = i + 1;
	feed_pieces(h, rich, n, cuts, n - 1, &left);
	assert_int_equal(left, 10);
	assert_same_events(g, h);
	got_free(h);
	for (size_t i = 0; i <= n; i++) {
		cuts[0] = i;
		feed_pieces(h, rich, n, cuts, 1, &left);
		assert_int_equal(left, 10);
		assert_same_events(g, h);
		got_free(h);
		for (size_t j = i; j <= n; j += 7) {
			cuts[1] = j;
			feed_pieces(h, rich, n, cuts, 2, &left);
			assert_int_equal(left, 10);
			assert_same_events(g, h);
			got_free(h);
		}
	}
	got_delete(h);
	got_delete(g);
}

static void test_bom(void **state)
{
	struct got *g = got_new();
	struct mt_sse p;

	(void)state;
	/* Cut inside the BOM. */
	mt_sse_init(&p, 0);
	mt_sse_push(&p, "\xEF", 1, collect, g);
	mt_sse_push(&p, "\xBB", 1, collect, g);
	mt_sse_push(&p,
		    "\xBF"
		    "data: x\n\n",
		    10, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "x", 3, 9);
	mt_sse_release(&p);
	got_free(g);

	/* Only at the very start: a second BOM makes the field name unknown. */
	assert_int_equal(FEED(g, 0,
			      "\xEF\xBB\xBF\xEF\xBB\xBF"
			      "data: x\n\n"),
			 0);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "", 3, 12);
	assert_int_equal(g->v[0].ignored, 1);
	assert_int_equal(g->v[0].has_data, 0);
	got_free(g);

	/* Half a BOM is line content. */
	assert_int_equal(FEED(g, 0,
			      "\xEF\xBB"
			      "data: x\n\n"),
			 0);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "", 0, 11);
	assert_int_equal(g->v[0].ignored, 1);
	got_free(g);

	/* Half a BOM, then the end: an unfinished block of two bytes. */
	mt_sse_init(&p, 0);
	mt_sse_push(&p, "\xEF\xBB", 2, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 2);
	assert_int_equal(g->n, 0);
	/* A BOM alone is no block. */
	mt_sse_push(&p, "\xEF\xBB\xBF\n\n", 5, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	assert_int_equal(g->n, 0);
	/* A BOM, then a blank line, then a block. */
	mt_sse_push(&p, "\xEF\xBB\xBF\ndata: 1\n\n", 13, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "1", 4, 9);
	mt_sse_release(&p);
	got_delete(g);
}

static void test_data_lines(void **state)
{
	struct got *g = got_new();

	(void)state;
	/* "data" without colon, "data:" and "data: " are all an empty line of data. */
	assert_int_equal(FEED(g, 0, "data\n\ndata:\n\ndata: \n\ndata\ndata\n\n"), 0);
	assert_int_equal(g->n, 4);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(g->v[i].has_data, 1);
		assert_int_equal(g->v[i].data_len, 0);
	}
	assert_data(g, 3, "\n", 21, 11);
	got_free(g);

	/* Only one space goes; tabs stay; a colon in the value stays. */
	assert_int_equal(FEED(g, 0, "data:x\ndata: x\ndata:  x\ndata:\tx\ndata: a:b: c\n\n"), 0);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "x\nx\n x\n\tx\na:b: c", 0, 46);
	got_free(g);

	/* Field names are case-sensitive; a name with a space is another name. */
	assert_int_equal(FEED(g, 0, "Data: x\ndata : y\nDATA\n\n"), 0);
	assert_int_equal(g->n, 1);
	assert_int_equal(g->v[0].has_data, 0);
	assert_int_equal(g->v[0].ignored, 3);
	got_delete(g);
}

static void test_ids(void **state)
{
	struct got *g = got_new();

	(void)state;
	static const char in[] = "id: 1\ndata: a\n\n"
				 "id: 2\0x\ndata: b\n\n"
				 "id: 3\nid: 4\0\n\n"
				 "data: c\n\n"
				 "id:\n\n"
				 "id: 7\nid: 8\n\n";
	assert_int_equal(feed(g, 0, in, sizeof(in) - 1), 0);
	assert_int_equal(g->n, 6);
	assert_str(g->v[0].id, g->v[0].id_len, "1");
	assert_str(g->v[0].last_id, g->v[0].last_id_len, "1");
	/* An id with a NUL is ignored: the last id stays. */
	assert_int_equal(g->v[1].has_id, 0);
	assert_int_equal(g->v[1].id_len, 0);
	assert_int_equal(g->v[1].ignored, 1);
	assert_str(g->v[1].last_id, g->v[1].last_id_len, "1");
	/* Only the ignored one is: "3" is kept. */
	assert_int_equal(g->v[2].has_id, 1);
	assert_str(g->v[2].id, g->v[2].id_len, "3");
	assert_str(g->v[2].last_id, g->v[2].last_id_len, "3");
	/* No id here: the stream's last id goes on. */
	assert_int_equal(g->v[3].has_id, 0);
	assert_str(g->v[3].last_id, g->v[3].last_id_len, "3");
	/* An empty id resets it. */
	assert_int_equal(g->v[4].has_id, 1);
	assert_int_equal(g->v[4].last_id_len, 0);
	assert_str(g->v[5].id, g->v[5].id_len, "8");
	assert_str(g->v[5].last_id, g->v[5].last_id_len, "8");
	got_delete(g);
}

static void test_retry(void **state)
{
	struct got *g = got_new();

	(void)state;
	assert_int_equal(FEED(g, 0,
			      "retry: 1000\n\nretry: 10a\n\nretry:\n\nretry: -5\n\n"
			      "retry:  5\n\nretry:0\n\nretry: 99999999999999999999999\n\n"
			      "retry: 5\nretry: x\n\nretry: 007\n\nretry: 1e3\n\n"),
			 0);
	assert_int_equal(g->n, 10);
	static const long long want[] = {1000, -1, -1, -1, -1, 0, LLONG_MAX, 5, 7, -1};
	static const unsigned ign[] = {0, 1, 1, 1, 1, 0, 0, 1, 0, 1};
	for (size_t i = 0; i < 10; i++) {
		assert_int_equal(g->v[i].retry, want[i]);
		assert_int_equal(g->v[i].ignored, ign[i]);
		assert_int_equal(g->v[i].has_data, 0);
	}
	/* The largest value that fits is kept exactly. */
	got_free(g);
	assert_int_equal(FEED(g, 0, "retry: 9223372036854775807\n\nretry: 9223372036854775808\n\n"), 0);
	assert_int_equal(g->v[0].retry, LLONG_MAX);
	assert_int_equal(g->v[1].retry, LLONG_MAX);
	got_delete(g);
}

static void test_comments_and_priming(void **state)
{
	struct got *g = got_new();

	(void)state;
	assert_int_equal(FEED(g, 0,
			      ": ping\n\n:\n:\n:x\n\n\n\n"
			      "id: 5\ndata:\n\n"
			      "id:5\n\n"
			      "retry: 3000\n\n"),
			 0);
	assert_int_equal(g->n, 5);
	assert_int_equal(g->v[0].comments, 1);
	assert_data(g, 0, "", 0, 8);
	assert_int_equal(g->v[0].has_data + g->v[0].has_id + g->v[0].has_event, 0);
	assert_int_equal(g->v[1].comments, 3);
	assert_data(g, 1, "", 8, 8);
	/* Two blank lines between blocks: not reported. */
	assert_data(g, 2, "", 18, 13);
	assert_int_equal(g->v[2].has_id, 1);
	assert_int_equal(g->v[2].has_data, 1);
	assert_str(g->v[2].id, g->v[2].id_len, "5");
	assert_data(g, 3, "", 31, 6);
	assert_int_equal(g->v[3].has_id, 1);
	assert_int_equal(g->v[3].has_data, 0);
	assert_str(g->v[3].id, g->v[3].id_len, "5");
	assert_data(g, 4, "", 37, 13);
	assert_int_equal(g->v[4].retry, 3000);
	assert_int_equal(g->v[4].comments, 0);
	assert_str(g->v[4].last_id, g->v[4].last_id_len, "5");
	got_free(g);

	/* Blank lines alone are nothing. */
	assert_int_equal(FEED(g, 0, "\n\r\n\r\r\n\n"), 0);
	assert_int_equal(g->n, 0);
	got_delete(g);
}

static void test_oversized(void **state)
{
	struct got *g = got_new();
	struct mt_sse p;

	(void)state;
	/* "data: abc\n\n" is 11 bytes: kept at 11, oversized at 10. */
	assert_int_equal(FEED(g, 11, "data: abc\n\n"), 0);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "abc", 0, 11);
	assert_int_equal(g->v[0].oversized, 0);
	got_free(g);
	assert_int_equal(FEED(g, 10, "data: abc\n\nid: 1\n\ndata: b\n\nid: 2\ndata: b\n\n"), 0);
	assert_int_equal(g->n, 4);
	assert_data(g, 0, "", 0, 11);
	assert_int_equal(g->v[0].oversized, 1);
	assert_int_equal(g->v[0].has_data, 0);
	assert_int_equal(g->v[0].retry, -1);
	assert_data(g, 1, "", 11, 7);
	assert_int_equal(g->v[1].oversized, 0);
	assert_str(g->v[1].last_id, g->v[1].last_id_len, "1");
	assert_data(g, 2, "b", 18, 9);
	assert_int_equal(g->v[2].oversized, 0);
	/* 15 bytes: oversized too, and its id is not taken. */
	assert_data(g, 3, "", 27, 15);
	assert_int_equal(g->v[3].oversized, 1);
	assert_str(g->v[3].last_id, g->v[3].last_id_len, "1");
	got_free(g);

	/* The ids of an oversized block are dropped: the last id stays. */
	assert_int_equal(FEED(g, 16, "id: 1\n\nid: 2\ndata: 0123456789\n\n: k\n\n"), 0);
	assert_int_equal(g->n, 3);
	assert_int_equal(g->v[1].oversized, 1);
	assert_int_equal(g->v[1].has_id, 0);
	assert_str(g->v[1].last_id, g->v[1].last_id_len, "1");
	assert_data(g, 1, "", 7, 24);
	assert_data(g, 2, "", 31, 5);
	assert_int_equal(g->v[2].oversized, 0);
	assert_int_equal(g->v[2].comments, 1);
	got_free(g);

	/* A CRLF blank line's LF can be the byte too many, even in the next push. */
	mt_sse_init(&p, 10);
	mt_sse_push(&p, "data: ab\r\n\r", 11, collect, g);
	assert_int_equal(g->n, 0);
	mt_sse_push(&p, "\ndata: c\n\n", 10, collect, g);
	assert_int_equal(g->n, 2);
	assert_data(g, 0, "", 0, 12);
	assert_int_equal(g->v[0].oversized, 1);
	assert_data(g, 1, "c", 12, 9);
	assert_int_equal(g->v[1].oversized, 0);

	/* A long block in small pieces: memory stays under the maximum. */
	mt_sse_push(&p, "data: ", 6, collect, g);
	for (int i = 0; i < 1000; i++) {
		mt_sse_push(&p, "xyz\n", 4, collect, g);
		assert_true(p.line.len + p.data.len <= 10);
	}
	mt_sse_push(&p, "\ndata: ok\n\n", 11, collect, g);
	assert_int_equal(g->n, 4);
	assert_data(g, 2, "", 21, 4007);
	assert_int_equal(g->v[2].oversized, 1);
	assert_data(g, 3, "ok", 4028, 10);
	/* Oversized and unfinished at close: its size. */
	mt_sse_push(&p, "data: 0123456789", 16, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 16);
	assert_int_equal(g->n, 4);
	mt_sse_release(&p);
	got_delete(g);
}

static void test_close(void **state)
{
	struct got *g = got_new();
	struct mt_sse p;

	(void)state;
	mt_sse_init(&p, 0);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	/* A block without its blank line is not reported: its size is. */
	mt_sse_push(&p, "data: a\n\nid: 9\ndata: b\n", 23, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 14);
	assert_int_equal(g->n, 1);
	assert_data(g, 0, "a", 0, 9);
	/* After close, a new stream: offsets from 0, no last id, a BOM skipped again. */
	mt_sse_push(&p,
		    "\xEF\xBB\xBF"
		    "data: c",
		    10, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 7);
	mt_sse_push(&p, "data: d\r\n", 9, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 9);
	/* Ended by a CR: reported at close. */
	mt_sse_push(&p, "data: e\r\r", 9, collect, g);
	assert_int_equal(g->n, 1);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	assert_int_equal(g->n, 2);
	assert_data(g, 1, "e", 0, 9);
	assert_int_equal(g->v[1].last_id_len, 0);
	/* Only blank lines pending: nothing. */
	mt_sse_push(&p, "\r\n\r", 3, collect, g);
	assert_int_equal(mt_sse_close(&p, collect, g), 0);
	assert_int_equal(g->n, 2);
	mt_sse_release(&p);
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
 * Random streams made of SSE pieces, under random maximums: the blocks are
 * the same pushed whole or in random pieces, and they tile the stream (each
 * block's offset is past the previous one's end).
 */
static void test_random_splits(void **state)
{
	static const char *const parts[] = {"data",     "data:",     "data: x", "id: 1",        "id", "id:\0",
					    "event: e", "retry: 12", ":",       ": c",          "\r", "\n",
					    "\r\n",     "\n",        "\n",      "\xEF\xBB\xBF", "zz"};
	struct got *a = got_new(), *b = got_new();
	char in[400];
	uint32_t seed = 777;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		size_t n = 0, max = rnd(&seed) % 40, la, lb;
		while (n < sizeof(in) - 16) {
			const char *s = parts[rnd(&seed) % (sizeof(parts) / sizeof(parts[0]))];
			size_t k = strcmp(s, "id:") == 0 ? 4 : strlen(s);
			if (rnd(&seed) % 9 == 0)
				break;
			memcpy(in + n, s, k);
			n += k;
		}
		struct mt_sse p;
		mt_sse_init(&p, max);
		mt_sse_push(&p, in, n, collect, a);
		la = mt_sse_close(&p, collect, a);
		for (size_t i = 0; i < n;) {
			size_t k = rnd(&seed) % 6;
			if (k > n - i)
				k = n - i;
			mt_sse_push(&p, in + i, k, collect, b);
			i += k;
			if (max)
				assert_true(p.line.len + p.data.len <= max);
		}
		lb = mt_sse_close(&p, collect, b);
		mt_sse_release(&p);
		assert_int_equal(la, lb);
		assert_same_events(a, b);
		int64_t end = 0;
		for (size_t i = 0; i < a->n; i++) {
			assert_true(a->v[i].offset >= end);
			end = a->v[i].offset + (int64_t)a->v[i].raw_len;
			assert_true(end <= (int64_t)n);
			assert_true(!max || a->v[i].oversized == (a->v[i].raw_len > max));
		}
		assert_true(end + (int64_t)la <= (int64_t)n);
		got_free(a);
		got_free(b);
	}
	got_delete(a);
	got_delete(b);
}

int main(void)
{
	const struct CMUnitTest sse[] = {
		cmocka_unit_test(test_lf),
		cmocka_unit_test(test_cr_and_crlf),
		cmocka_unit_test(test_crlf_split),
		cmocka_unit_test(test_rich),
		cmocka_unit_test(test_bom),
		cmocka_unit_test(test_data_lines),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_retry),
		cmocka_unit_test(test_comments_and_priming),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_close),
		cmocka_unit_test(test_random_splits),
	};

	return cmocka_run_group_tests(sse, NULL, NULL);
}
