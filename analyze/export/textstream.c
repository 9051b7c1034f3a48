/*
 * textstream.c - a byte stream as the inside of a JSON string, or base64,
 * in pieces (textstream.h).
 *
 * The stream is cut into chunks where a cut changes nothing: for UTF-8
 * before a sequence's lead byte whose sequence the chunk does not hold
 * whole (a decoder that reads left to right decides each byte the same on
 * either side of such a cut), for base64 at a multiple of three bytes.
 */
#include <jansson.h>
#include <string.h>

#include "analyze/export/textstream.h"
#include "schema/message.h"

void ts_init(struct textstream *t, enum ts_mode mode, FILE *out)
{
	t->mode = mode;
	t->out = out;
	t->bad = 0;
	t->failed = 0;
	t->n = 0;
	memset(&t->tmp, 0, sizeof(t->tmp));
}

void ts_release(struct textstream *t)
{
	mt_buf_release(&t->tmp);
}

/* The length of the sequence lead byte c starts (1 for a byte that leads none). */
static size_t seq_len(unsigned char c)
{
	return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

/* Where the first n bytes of p may be cut (UTF-8): n, or before an unfinished sequence. */
static size_t utf8_cut(const unsigned char *p, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = p[n - back];
		if (c < 0x80)
			return n;
		if (c >= 0xC0)
			return seq_len(c) > back ? n - back : n;
	}
	return n;
}

static int put(struct textstream *t, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, t->out) != n)
		t->failed = 1;
	return t->failed ? -1 : 0;
}

/* Jansson's escaping of the UTF-8 bytes p[0..n), without the quotes. */
static int put_json(struct textstream *t, const char *p, size_t n)
{
	json_t *s;
	char *d;
	int rc;

	if (!n)
		return 0;
	if (!(s = json_stringn_nocheck(p, n)) || !(d = json_dumps(s, JSON_ENCODE_ANY))) {
		json_decref(s);
		t->failed = 1;
		return -1;
	}
	json_decref(s);
	rc = put(t, d + 1, strlen(d) - 2);
	free(d);
	return rc;
}

void ts_base64(const unsigned char *p, size_t n, struct mt_buf *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	mt_buf_reset(out);
	for (i = 0; i + 2 < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		char c[4] = {tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63]};
		mt_buf_append(out, c, 4);
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		char c[4] = {tab[v >> 18], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=', '='};
		mt_buf_append(out, c, 4);
	}
}

/* The first k bytes of buf, which may be cut after. */
static int chunk(struct textstream *t, size_t k)
{
	const char *p = (const char *)t->buf;

	switch (t->mode) {
	case TS_CHECK:
		if (mt_utf8_invalid(p, k) >= 0)
			t->bad = 1;
		return 0;
	case TS_JSON: return put_json(t, p, k);
	case TS_LOSSY:
		mt_utf8_lossy(p, k, &t->tmp);
		return put_json(t, t->tmp.data ? t->tmp.data : "", t->tmp.len);
	case TS_BASE64: ts_base64(t->buf, k, &t->tmp); return put(t, t->tmp.data, t->tmp.len);
	}
	return 0;
}

/* buf is full: write what may be cut, keep the rest at its start. */
static int drain(struct textstream *t)
{
	size_t k = t->mode == TS_BASE64 ? t->n - t->n % 3 : utf8_cut(t->buf, t->n);

	if (!k)
		k = t->n; /* (cannot be: a chunk is longer than a sequence) */
	if (chunk(t, k))
		return -1;
	memmove(t->buf, t->buf + k, t->n - k);
	t->n -= k;
	return 0;
}

int ts_feed(struct textstream *t, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n && !t->failed) {
		size_t k = TS_CHUNK - t->n < n ? TS_CHUNK - t->n : n;
		memcpy(t->buf + t->n, s, k);
		t->n += k;
		s += k;
		n -= k;
		if (t->n == TS_CHUNK && drain(t))
			return -1;
	}
	return t->failed ? -1 : 0;
}

int ts_end(struct textstream *t)
{
	if (!t->failed && t->n && chunk(t, t->n))
		return -1;
	t->n = 0;
	return t->failed ? -1 : 0;
}
