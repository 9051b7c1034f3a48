/*
 * canon.c - canonical JSON keys and structural differences (see canon.h).
 */
#include "analyze/replay/canon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Below this depth, values are compared and copied whole (no recursion). */
#define MAX_DEPTH 256

/* Does the concrete path match the pattern, or lie below it? */
static int path_under(const char *pat, const char *path)
{
	while (*pat) {
		if (pat[0] == '[' && pat[1] == '*' && pat[2] == ']') {
			if (*path != '[')
				return 0;
			while (*path && *path != ']')
				path++;
			if (*path != ']')
				return 0;
			path++;
			pat += 3;
		} else if (*pat == '*' && (pat[1] == '\0' || pat[1] == '.' || pat[1] == '[')) {
			/* Any one member name. */
			while (*path && *path != '.' && *path != '[')
				path++;
			pat++;
		} else if (*pat == *path) {
			pat++;
			path++;
		} else {
			return 0;
		}
	}
	return *path == '\0' || *path == '.' || *path == '[';
}

int canon_ignored(const struct canon_ignore *ig, const char *path)
{
	for (size_t i = 0; ig && i < ig->n; i++)
		if (path_under(ig->paths[i], path))
			return 1;
	return 0;
}

static void child_path(struct mt_buf *b, const char *base, const char *key, size_t index, int is_index)
{
	char digits[24];
	size_t k = sizeof(digits);

	/* (no printf: this runs for every member of every message compared) */
	mt_buf_reset(b);
	mt_buf_puts(b, base);
	if (is_index) {
		do {
			digits[--k] = (char)('0' + index % 10);
			index /= 10;
		} while (index);
		mt_buf_putc(b, '[');
		mt_buf_append(b, digits + k, sizeof(digits) - k);
		mt_buf_putc(b, ']');
	} else {
		if (*base)
			mt_buf_putc(b, '.');
		mt_buf_puts(b, key);
	}
}

static json_t *strip(json_t *v, const char *base, const struct canon_ignore *ig, int depth)
{
	struct mt_buf p = MT_BUF_INIT;
	json_t *out;

	if (!v)
		return NULL;
	if (depth > MAX_DEPTH)
		return json_deep_copy(v);
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		out = json_object();
		json_object_foreach(v, k, x)
		{
			if (!strcmp(k, "_meta"))
				continue;
			child_path(&p, base, k, 0, 0);
			if (canon_ignored(ig, p.data))
				continue;
			json_t *y = strip(x, p.data, ig, depth + 1);
			/* A member that holds an empty object says nothing: "arguments": {}
			 * and no arguments are the same request, as clients differ there. */
			if (json_is_object(y) && !json_object_size(y))
				json_decref(y);
			else
				json_object_set_new(out, k, y);
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *x;
		out = json_array();
		json_array_foreach(v, i, x)
		{
			child_path(&p, base, NULL, i, 1);
			if (canon_ignored(ig, p.data))
				continue;
			json_array_append_new(out, strip(x, p.data, ig, depth + 1));
		}
	} else {
		out = json_incref(v);
	}
	mt_buf_release(&p);
	return out;
}

json_t *canon_strip(json_t *v, const char *base, const struct canon_ignore *ig)
{
	return strip(v, base ? base : "", ig, 0);
}

void canon_key(const char *method, json_t *params, const struct canon_ignore *ig, struct mt_buf *out)
{
	json_t *p;

	if (!params) {
		mt_buf_reset(out);
		mt_buf_puts(out, method ? method : "");
		mt_buf_putc(out, '\n');
		return;
	}
	p = canon_strip(params, "params", ig);
	char *s = p ? json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;

	mt_buf_reset(out);
	mt_buf_puts(out, method ? method : "");
	mt_buf_putc(out, '\n');
	/* No params and empty params ({}) are the same request. */
	if (s && strcmp(s, "{}"))
		mt_buf_puts(out, s);
	free(s);
	json_decref(p);
}

struct diffs {
	const struct canon_ignore *ig;
	size_t max, n;
	json_t *out, *was;
};

/* A difference at path, where a's value is v (NULL: a has none there). */
static void add(struct diffs *d, const char *path, json_t *v)
{
	if (d->n < d->max) {
		json_array_append_new(d->out, json_string(*path ? path : "(the whole value)"));
		if (d->was) /* (absent: [], else [v]) */
			json_array_append_new(d->was, v ? json_pack("[O]", v) : json_array());
	}
	d->n++;
}

static void diff(json_t *a, json_t *b, const char *base, struct diffs *d, int depth)
{
	const struct canon_ignore *ig = d->ig;
	struct mt_buf p = MT_BUF_INIT;

	if (canon_ignored(ig, base))
		return;
	if (!a && !b)
		return;
	/* By value, 1 and 1.0 alike; two integers exactly (a double holds 53 bits). */
	if (json_is_integer(a) && json_is_integer(b)) {
		if (json_integer_value(a) != json_integer_value(b))
			add(d, base, a);
		return;
	}
	if (json_is_number(a) && json_is_number(b)) {
		if (json_number_value(a) != json_number_value(b))
			add(d, base, a);
		return;
	}
	if (!a || !b || json_typeof(a) != json_typeof(b)) {
		add(d, base, a);
		return;
	}
	if (depth > MAX_DEPTH) {
		if (!json_equal(a, b))
			add(d, base, a);
		return;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *x;
		json_object_foreach(a, k, x)
		{
			if (!strcmp(k, "_meta"))
				continue;
			child_path(&p, base, k, 0, 0);
			diff(x, json_object_get(b, k), p.data, d, depth + 1);
		}
		json_object_foreach(b, k, x)
		{
			if (!strcmp(k, "_meta") || json_object_get(a, k))
				continue;
			child_path(&p, base, k, 0, 0);
			if (!canon_ignored(ig, p.data))
				add(d, p.data, NULL);
		}
	} else if (json_is_array(a)) {
		size_t na = json_array_size(a), nb = json_array_size(b);
		for (size_t i = 0; i < na || i < nb; i++) {
			child_path(&p, base, NULL, i, 1);
			if (i < na && i < nb)
				diff(json_array_get(a, i), json_array_get(b, i), p.data, d, depth + 1);
			else if (!canon_ignored(ig, p.data))
				add(d, p.data, json_array_get(a, i));
		}
	} else if (!json_equal(a, b)) {
		add(d, base, a);
	}
	mt_buf_release(&p);
}

size_t canon_diff(json_t *a, json_t *b, const char *base, const struct canon_ignore *ig, size_t max,
		  json_t *out)
{
	return canon_diff_was(a, b, base, ig, max, out, NULL);
}

size_t canon_diff_was(json_t *a, json_t *b, const char *base, const struct canon_ignore *ig, size_t max,
		      json_t *out, json_t *was)
{
	struct diffs d = {ig, max, 0, out, was};

	diff(a, b, base ? base : "", &d, 0);
	return d.n;
}

json_t *canon_value_at(json_t *msg, const char *path)
{
	json_t *v = msg;
	const char *p = path;

	while (v && *p) {
		if (*p == '.')
			p++;
		if (*p == '[') {
			char *end;
			unsigned long k = strtoul(p + 1, &end, 10);
			v = json_is_array(v) ? json_array_get(v, k) : NULL;
			p = *end == ']' ? end + 1 : end;
			continue;
		}
		size_t len = strcspn(p, ".[");
		char *name = mt_strndup(p, len);
		v = json_is_object(v) ? json_object_get(v, name) : NULL;
		free(name);
		p += len;
	}
	return v;
}
