/*
 * textstream.h - a byte stream written as the inside of a JSON string (or as
 * base64), fed in pieces of any size: the output is byte for byte what the
 * whole stream at once would give. HAR's texts of an exchange too long to
 * hold in memory are written so (har.c).
 *
 * ts_ is this file's prefix.
 */
#ifndef MCPTAP_TEXTSTREAM_H
#define MCPTAP_TEXTSTREAM_H

#include <stddef.h>
#include <stdio.h>

#include "schema/util.h"

enum ts_mode {
	TS_CHECK,  /* write nothing; bad is set when the stream is not UTF-8 */
	TS_JSON,   /* UTF-8 (checked first): escaped as Jansson escapes a string */
	TS_LOSSY,  /* not UTF-8: U+FFFD for each bad byte (mt_utf8_lossy), then escaped */
	TS_BASE64, /* base64, padded at the end */
};

#define TS_CHUNK 65536

struct textstream {
	enum ts_mode mode;
	FILE *out;
	int bad;    /* TS_CHECK: not UTF-8 */
	int failed; /* a write failed or memory ran out */
	size_t n;   /* bytes waiting in buf */
	unsigned char buf[TS_CHUNK + 8];
	struct mt_buf tmp;
};

void ts_init(struct textstream *t, enum ts_mode mode, FILE *out);
/* n bytes more of the stream. 0, or -1 (failed set). */
int ts_feed(struct textstream *t, const void *p, size_t n);
/* The stream's end: what waits is written. 0, or -1 (failed set). */
int ts_end(struct textstream *t);
void ts_release(struct textstream *t);

/* The base64 of p[0..n), padded, into out (reset first). */
void ts_base64(const unsigned char *p, size_t n, struct mt_buf *out);

#endif
