/*
 * test-textstream.c - analyze/export/textstream.c: a byte stream fed in
 * pieces of any size is written exactly as the whole of it at once would be
 * (Jansson's escaping of the string, mt_utf8_lossy's text, base64), with
 * sequences of two to four bytes and bad bytes across the pieces' and the
 * chunks' edges.
 */
#include "tests/unit/unit.h"

#include <jansson.h>

#include "analyze/export/textstream.h"
#include "schema/message.h"

/* The stream p[0..n) fed in pieces of the sizes step gives, in mode: what it wrote (malloc'd). */
static char *streamed(enum ts_mode mode, const unsigned char *p, size_t n, size_t (*step)(size_t),
		      size_t *len, int *bad)
{
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	struct textstream *ts = malloc(sizeof(*ts));
	size_t at = 0, i = 0;

	assert_non_null(f);
	assert_non_null(ts);
	ts_init(ts, mode, mode == TS_CHECK ? NULL : f);
	while (at < n) {
		size_t k = step(i++);
		if (k > n - at)
			k = n - at;
		assert_int_equal(ts_feed(ts, p + at, k), 0);
		at += k;
	}
	assert_int_equal(ts_end(ts), 0);
	*bad = ts->bad;
	ts_release(ts);
	free(ts);
	fclose(f);
	*len = olen;
	return out;
}

/* The whole at once: Jansson's dump of the string, without its quotes. */
static char *json_whole(const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);
	char *d, *r;

	assert_non_null(s);
	d = json_dumps(s, JSON_ENCODE_ANY);
	json_decref(s);
	r = strndup(d + 1, strlen(d) - 2);
	free(d);
	return r;
}

static char *base64_whole(const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *r = malloc(4 * (n / 3 + 1) + 1), *o = r;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return r;
}

static size_t step_one(size_t i)
{
	(void)i;
	return 1;
}
static size_t step_odd(size_t i)
{
	return 1 + (i * 7919) % 9973;
}
static size_t step_big(size_t i)
{
	return i % 2 ? 3 : 100000;
}
static size_t step_all(size_t i)
{
	(void)i;
	return (size_t)-1;
}

static size_t (*const steps[])(size_t) = {step_one, step_odd, step_big, step_all};

/* n bytes of text: ASCII, quotes, controls, sequences of 2 to 4 bytes; bad: some bad bytes. */
static unsigned char *text(size_t n, int bad, unsigned seed)
{
	static const char *const bits[] = {
		"a", "\"",   "\\", "\n", "\x01", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9d\x84\x9e",
		"/", "\x7f", "\t"};
	unsigned char *p = malloc(n + 4);
	size_t at = 0;

	while (at < n) {
		seed = seed * 1103515245 + 12345;
		const char *b = bits[(seed >> 8) % (sizeof(bits) / sizeof(*bits))];
		size_t k = strlen(b);
		if (bad && (seed >> 20) % 97 == 0)
			b = (seed >> 3) % 2 ? "\xff" : "\xe6\x97", k = strlen(b); /* bad, or cut short */
		if (at + k > n)
			b = "a", k = 1;
		memcpy(p + at, b, k);
		at += k;
	}
	return p;
}

static void same_as_whole(const unsigned char *p, size_t n)
{
	int valid = mt_utf8_invalid((const char *)p, n) < 0;
	struct mt_buf lossy = {0};
	char *want_json, *want_b64;

	mt_utf8_lossy((const char *)p, n, &lossy);
	want_json = json_whole(lossy.data ? lossy.data : "", lossy.len);
	want_b64 = base64_whole(p, n);
	for (size_t s = 0; s < sizeof(steps) / sizeof(*steps); s++) {
		size_t len;
		int bad;
		char *got;

		free(streamed(TS_CHECK, p, n, steps[s], &len, &bad));
		assert_int_equal(bad, !valid);
		assert_int_equal(len, 0);
		got = streamed(valid ? TS_JSON : TS_LOSSY, p, n, steps[s], &len, &bad);
		assert_int_equal(len, strlen(want_json));
		assert_memory_equal(got, want_json, len);
		free(got);
		got = streamed(TS_BASE64, p, n, steps[s], &len, &bad);
		assert_int_equal(len, strlen(want_b64));
		assert_memory_equal(got, want_b64, len);
		free(got);
	}
	free(want_json);
	free(want_b64);
	mt_buf_release(&lossy);
}

static void test_valid(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 4; seed++) {
		size_t n = 3 * TS_CHUNK + seed * 5;
		unsigned char *p = text(n, 0, seed);
		assert_true(mt_utf8_invalid((const char *)p, n) < 0);
		same_as_whole(p, n);
		free(p);
	}
}

static void test_bad_bytes(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 4; seed++) {
		size_t n = 3 * TS_CHUNK + seed;
		unsigned char *p = text(n, 1, seed);
		assert_true(mt_utf8_invalid((const char *)p, n) >= 0);
		same_as_whole(p, n);
		free(p);
	}
}

/* A sequence across a chunk's edge, each byte of it: the cut waits for the rest. */
static void test_chunk_edges(void **state)
{
	static const char *const seqs[] = {"\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9d\x84\x9e",
					   "\xe6\x97", "\xf0\x9d\x84", "\xc3"};
	(void)state;
	for (size_t s = 0; s < sizeof(seqs) / sizeof(*seqs); s++) {
		size_t k = strlen(seqs[s]);
		for (size_t back = 0; back <= 4; back++) {
			size_t n = TS_CHUNK + 8;
			unsigned char *p = malloc(n);
			memset(p, 'x', n);
			memcpy(p + TS_CHUNK - back, seqs[s], k);
			same_as_whole(p, n);
			free(p);
		}
	}
}

static void test_empty_and_short(void **state)
{
	(void)state;
	same_as_whole((const unsigned char *)"", 0);
	same_as_whole((const unsigned char *)"a", 1);
	same_as_whole((const unsigned char *)"\xff", 1);
	same_as_whole((const unsigned char *)"ab", 2);
	same_as_whole((const unsigned char *)"\xe6\x97", 2);
}

/* A write that fails is said, not lost. */
static void test_write_fails(void **state)
{
	FILE *f = fopen("/dev/full", "w");
	struct textstream *ts = malloc(sizeof(*ts));
	unsigned char *p = text(2 * TS_CHUNK, 0, 9);
	int rc;

	(void)state;
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	ts_init(ts, TS_JSON, f);
	rc = ts_feed(ts, p, 2 * TS_CHUNK);
	if (!rc)
		rc = ts_end(ts);
	assert_int_equal(rc, -1);
	assert_int_equal(ts->failed, 1);
	ts_release(ts);
	free(ts);
	free(p);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),       cmocka_unit_test(test_bad_bytes),
		cmocka_unit_test(test_chunk_edges), cmocka_unit_test(test_empty_and_short),
		cmocka_unit_test(test_write_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
