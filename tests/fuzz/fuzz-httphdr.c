/*
 * fuzz-httphdr.c - libFuzzer target for the HTTP tap's header rules.
 *
 * The input is lines "name: value" (a line without a colon is a name with an
 * empty value; the first line is also the request target). Checks: the
 * filter's count matches its keep[] and its report; no hop-by-hop field is
 * kept; a Content-Length is never kept; what is kept as a request is kept as
 * a response; mt_hdr_get finds what a plain scan finds; the JSON, with and
 * without redaction, loads in Jansson as an array of [name, value] pairs of
 * the list's length; a redacted target holds a marker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "tap/http/httphdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FIELDS 64

static struct mt_redact *R;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-httphdr: %s\n", what);
	abort();
}

/* The JSON must load, as an array of n pairs of strings. */
static void check_json(const struct mt_buf *b, size_t n)
{
	json_error_t jerr;
	json_t *j = json_loadb(b->data, b->len, 0, &jerr);

	if (!j)
		fail(jerr.text);
	if (!json_is_array(j) || json_array_size(j) != n)
		fail("not an array of the list's length");
	for (size_t i = 0; i < n; i++) {
		json_t *pair = json_array_get(j, i);
		if (json_array_size(pair) != 2 || !json_is_string(json_array_get(pair, 0)) ||
		    !json_is_string(json_array_get(pair, 1)))
			fail("not a [name, value] pair");
	}
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_hdr h[MAX_FIELDS];
	unsigned char keep[MAX_FIELDS], keep2[MAX_FIELDS];
	struct mt_hdr_dropped d;
	struct mt_buf out = MT_BUF_INIT;
	char *copy = malloc(size + 1), *p = copy, *end = copy + size;
	size_t n = 0, kept;

	if (!R) {
		static const unsigned char key[16] = "fuzz-httphdr-key";
		R = mt_redact_new(key);
	}
	/* C strings: a NUL in the input ends a line like a newline. */
	memcpy(copy, data, size);
	copy[size] = '\0';
	while (p < end && n < MAX_FIELDS) {
		char *nl = p;
		while (nl < end && *nl != '\n' && *nl != '\0')
			nl++;
		*nl = '\0';
		char *colon = strchr(p, ':');
		h[n].name = p;
		h[n].value = "";
		if (colon) {
			*colon = '\0';
			char *v = colon + 1;
			while (*v == ' ')
				v++;
			h[n].value = v;
		}
		n++;
		p = nl + 1;
	}

	kept = mt_hdr_filter(h, n, MT_HDR_REQUEST, keep, &d);
	size_t count = 0, cl = 0;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] > 1)
			fail("keep is not 0 or 1");
		count += keep[i];
		if (keep[i] && mt_hdr_hop_by_hop(h[i].name))
			fail("a hop-by-hop field kept");
		if (!strcasecmp(h[i].name, "Content-Length")) {
			if (keep[i])
				fail("a Content-Length kept");
			if (!cl++ && d.content_length != h[i].value)
				fail("the first Content-Length not reported");
		}
		if (keep[i] && (!strcasecmp(h[i].name, "Host") || !strcasecmp(h[i].name, "Accept-Encoding")))
			fail("a request's Host or Accept-Encoding kept");
	}
	if (count != kept || kept + d.count != n || cl != d.content_lengths)
		fail("the counts do not add up");
	mt_hdr_filter(h, n, MT_HDR_RESPONSE, keep2, NULL);
	for (size_t i = 0; i < n; i++)
		if (keep[i] && !keep2[i])
			fail("kept in a request but not in a response");

	for (size_t i = 0; i < n; i++) {
		const char *v = mt_hdr_get(h, n, h[i].name);
		size_t first = 0;
		while (strcasecmp(h[first].name, h[i].name))
			first++;
		if (v != h[first].value)
			fail("mt_hdr_get is not the first match");
		mt_hdr_has_token(h[i].value, h[i].name);
		mt_hdr_has_token(h[i].value, "text/event-stream");
	}

	mt_hdr_json(h, n, NULL, &out);
	check_json(&out, n);
	mt_hdr_json(h, n, R, &out);
	check_json(&out, n);

	/* The first line as a request target. */
	char *target = malloc(size + 1);
	size_t tn = 0;
	while (tn < size && data[tn] != '\n' && data[tn] != '\0')
		tn++;
	memcpy(target, data, tn);
	target[tn] = '\0';
	mt_buf_reset(&out);
	if (mt_target_redact(target, R, &out) && !mt_redact_find_marker(out.data, out.len))
		fail("a redacted target without a marker");
	free(target);
	mt_buf_release(&out);
	free(copy);
	return 0;
}
