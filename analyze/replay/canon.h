/*
 * canon.h - canonical JSON for replay: the key a request is matched by, and
 * the structural differences between a recorded and a live answer.
 *
 * Paths name places in a message: "result.content[0].text". An ignore path
 * may use "*" for any member name and "[*]" for any array element
 * ("result.content[*].text", "result.*.timestamp"); a path also covers
 * everything below it.
 */
#ifndef MCPTAP_CANON_H
#define MCPTAP_CANON_H

#include <jansson.h>
#include <stddef.h>

#include "schema/util.h"

/* A set of ignore paths (borrowed strings). */
struct canon_ignore {
	const char *const *paths;
	size_t n;
};

/* Does path (concrete, "a.b[2].c") fall under one of the ignore paths? */
int canon_ignored(const struct canon_ignore *ig, const char *path);

/*
 * A deep copy of v (a whole message, or a part of one whose own path is base,
 * "" for the top) without the members under any ignore path and without every
 * "_meta" member (MCP's metadata never decides a match), and without the
 * members whose value is (or, so stripped, becomes) an empty object: clients
 * differ in sending "arguments": {} or nothing. Returns a new
 * reference (NULL when v is NULL).
 */
json_t *canon_strip(json_t *v, const char *base, const struct canon_ignore *ig);

/*
 * The match key of a request: method, a newline, and its params stripped as
 * above and encoded compact with sorted keys. Into out (reset first).
 */
void canon_key(const char *method, json_t *params, const struct canon_ignore *ig, struct mt_buf *out);

/*
 * The paths where a and b differ structurally (numbers compare by value:
 * 1 equals 1.0), ignoring "_meta" members and the ignore paths. Appends up to
 * max paths, as strings, to the JSON array out; returns the number of
 * differences (which may exceed max). base is the path of a and b ("result").
 */
size_t canon_diff(json_t *a, json_t *b, const char *base, const struct canon_ignore *ig, size_t max,
		  json_t *out);
/* The same, and for each path a's value there into was: [value], or [] where a has none. */
size_t canon_diff_was(json_t *a, json_t *b, const char *base, const struct canon_ignore *ig, size_t max,
		      json_t *out, json_t *was);

/*
 * The value at a path as canon_diff writes it ("result.content[0].text")
 * inside msg (a whole message: the path starts at one of its members), or NULL
 * when msg has none there. Borrowed from msg.
 */
json_t *canon_value_at(json_t *msg, const char *path);

#endif
