/*
 * jscan.h - for the bench peers (header-only): the top-level members of a
 * JSON-RPC line found without parsing it, trusting it to be well formed. Kept
 * apart from mcptap's classifier so that the baselines run no mcptap code.
 */
#ifndef MCPTAP_TESTS_JSCAN_H
#define MCPTAP_TESTS_JSCAN_H

#include <string.h>

/* The members of a message's top-level object that the bench peers look at. */
struct top {
	const char *id;     /* first byte of the id value, or NULL */
	size_t id_len;      /* its length */
	const char *method; /* first byte of the method value (its '"'), or NULL */
	size_t method_len;  /* its length, quotes included */
	int has_result;     /* a "result" member is present */
};

/* Returns the first byte at or after p that is not JSON whitespace (or end). */
static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* p is at a '"': returns the byte after the closing quote, or NULL when the string
 * does not end before end. */
static const char *skip_string(const char *p, const char *end)
{
	const char *q = p + 1, *r = NULL, *b;

	while (q < end) {
		q = memchr(q, '"', (size_t)(end - q));
		if (q == NULL)
			break;
		/* The quote is escaped when an odd number of backslashes precede it. */
		for (b = q; b > p + 1 && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0) {
			r = q + 1;
			break;
		}
		q++;
	}
	return r;
}

/* Returns the byte after the JSON value starting at p, or NULL when it is cut short.
 * Nested values are skipped by bracket depth; scalars end at a delimiter. */
static const char *skip_value(const char *p, const char *end)
{
	const char *r = NULL;
	long depth = 0;

	if (p >= end)
		goto out;
	if (*p == '"') {
		r = skip_string(p, end);
		goto out;
	}
	if (*p == '{' || *p == '[') {
		while (p != NULL && p < end) {
			if (*p == '"') {
				p = skip_string(p, end);
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if (*p == '}' || *p == ']')
				depth--;
			p++;
			if (depth == 0) {
				r = p;
				break;
			}
		}
		goto out;
	}
	r = p;
	while (r < end && *r != ',' && *r != '}' && *r != ']' && *r != ' ' && *r != '\t' && *r != '\r' &&
	       *r != '\n')
		r++;
	if (r == p)
		r = NULL;
out:
	return r;
}

/* Walks the top-level object in line[0..len) and fills *t. Returns 0, or -1 when the
 * line is not a JSON object. */
static int scan_top(const char *line, size_t len, struct top *t)
{
	int rc = -1;
	const char *p = line, *end = line + len, *key, *v;
	size_t klen;

	memset(t, 0, sizeof *t);
	p = skip_ws(p, end);
	if (p >= end || *p != '{')
		goto out;
	p = skip_ws(p + 1, end);
	if (p < end && *p == '}') {
		rc = 0;
		goto out;
	}
	while (p < end && *p == '"') {
		key = p + 1;
		p = skip_string(p, end);
		if (p == NULL)
			goto out;
		klen = (size_t)(p - key) - 1;
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			goto out;
		v = skip_ws(p + 1, end);
		p = skip_value(v, end);
		if (p == NULL)
			goto out;
		if (klen == 2 && memcmp(key, "id", 2) == 0) {
			t->id = v;
			t->id_len = (size_t)(p - v);
		} else if (klen == 6 && memcmp(key, "method", 6) == 0) {
			t->method = v;
			t->method_len = (size_t)(p - v);
		} else if (klen == 6 && memcmp(key, "result", 6) == 0) {
			t->has_result = 1;
		}
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}')
			rc = 0;
		break;
	}
out:
	return rc;
}

#endif
