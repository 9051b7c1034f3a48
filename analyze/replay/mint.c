/*
 * mint.c - server-minted values and per-run noise (see mint.h).
 */
#include "analyze/replay/mint.h"

#include <string.h>

/* JSON nested deeper than this is not searched (Jansson parses up to 2048). */
#define MINT_MAX_DEPTH 256
/*
 * Longer strings are never taken for minted values: ids, cursors and tokens
 * are short, while file contents and blobs would fill the index for nothing.
 */
#define MINT_MAX_STRING 1024

/* A string value that may be minted: not too long, no NUL inside (an object key). */
static int keyable(json_t *v)
{
	return json_is_string(v) && json_string_length(v) <= MINT_MAX_STRING &&
	       strlen(json_string_value(v)) == json_string_length(v);
}

/*
 * Note where each string below v that wanted holds first appeared (index,
 * steps, from_client), and take it out of wanted.
 */
static void index_walk(json_t *origins, json_t *wanted, json_t *v, size_t index, json_t *steps, int client,
		       int depth)
{
	if (depth > MINT_MAX_DEPTH)
		return;
	if (keyable(v)) {
		const char *s = json_string_value(v);
		if (json_object_get(wanted, s)) {
			json_object_set_new(
				origins, s,
				json_pack("[I,o,b]", (json_int_t)index, json_copy(steps), client));
			json_object_del(wanted, s);
		}
	} else if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x)
		{
			json_array_append_new(steps, json_string(k));
			index_walk(origins, wanted, x, index, steps, client, depth + 1);
			json_array_remove(steps, json_array_size(steps) - 1);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_array_append_new(steps, json_integer((json_int_t)i));
			index_walk(origins, wanted, json_array_get(v, i), index, steps, client, depth + 1);
			json_array_remove(steps, json_array_size(steps) - 1);
		}
	}
}

/* Add the non-empty strings below v (that may be minted) to set. */
static void collect(json_t *set, json_t *v, int depth)
{
	if (depth > MINT_MAX_DEPTH)
		return;
	if (keyable(v)) {
		if (*json_string_value(v))
			json_object_set(set, json_string_value(v), json_true());
	} else if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x)
		{
			collect(set, x, depth + 1);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			collect(set, json_array_get(v, i), depth + 1);
	}
}

/*
 * The member of recorded message m that the index looks into, or NULL: what
 * the client sends, and of the server's messages those a live counterpart
 * can be found for.
 */
static const char *part_of(const struct rp_msg *m)
{
	switch (m->kind) {
	case MT_REQUEST: return "params";
	case MT_NOTIFICATION:
		return m->c2s ? "params" : NULL; /* a server notification has no live counterpart */
	case MT_RESPONSE:
		/* A server answer counts only when paired with its client request. */
		return m->c2s || m->request >= 0 ? "result" : NULL;
	default: return NULL;
	}
}

json_t *mint_index(struct rp_script *s, struct mt_err *err)
{
	json_t *origins = json_object(), *wanted = json_object(), *j;

	/* What the client sends is all that is ever looked up: those strings first. */
	for (size_t i = 0; i < s->n; i++) {
		const char *part = s->m[i].c2s ? part_of(&s->m[i]) : NULL;
		if (!part)
			continue;
		if (rp_json(s, i, &j, err))
			goto fail;
		collect(wanted, json_object_get(j, part), 0);
		json_decref(j);
	}
	/* Then where each first appeared, until all are found. */
	for (size_t i = 0; i < s->n && json_object_size(wanted); i++) {
		const char *part = part_of(&s->m[i]);
		if (!part)
			continue;
		if (rp_json(s, i, &j, err))
			goto fail;
		json_t *steps = json_pack("[s]", part);
		index_walk(origins, wanted, json_object_get(j, part), i, steps, s->m[i].c2s, 0);
		json_decref(steps);
		json_decref(j);
	}
	json_decref(wanted);
	return origins;
fail:
	json_decref(wanted);
	json_decref(origins);
	return NULL;
}

json_t *mint_at(json_t *root, json_t *steps)
{
	json_t *v = root;

	for (size_t i = 0; v && i < json_array_size(steps); i++) {
		json_t *st = json_array_get(steps, i);
		if (json_is_string(st))
			v = json_is_object(v) ? json_object_get(v, json_string_value(st)) : NULL;
		else
			v = json_is_array(v) ? json_array_get(v, (size_t)json_integer_value(st)) : NULL;
	}
	return v;
}

static int contains(json_t *v, const char *str, size_t n, int depth)
{
	if (depth > MINT_MAX_DEPTH)
		return 0;
	if (json_is_string(v))
		return json_string_length(v) == n && !memcmp(json_string_value(v), str, n);
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x)
		{
			if (contains(x, str, n, depth + 1))
				return 1;
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			if (contains(json_array_get(v, i), str, n, depth + 1))
				return 1;
	}
	return 0;
}

int mint_contains(json_t *v, const char *str, size_t n)
{
	return contains(v, str, n, 0);
}

struct subst {
	json_t *origins;
	size_t before;
	mint_counterpart_fn counterpart;
	void *ctx;
	json_t *subs;
	size_t done;
};

/* The live value for recorded string v, or NULL when it is not minted. Borrowed. */
static json_t *live_value(struct subst *x, json_t *v)
{
	const char *s = json_string_value(v);
	json_t *known = json_object_get(x->subs, s), *o, *live, *at;
	size_t j;

	if (known)
		return known;
	o = json_object_get(x->origins, s);
	if (!o || json_is_true(json_array_get(o, 2)))
		return NULL;
	j = (size_t)json_integer_value(json_array_get(o, 0));
	if (j >= x->before || !(live = x->counterpart(x->ctx, j)))
		return NULL;
	at = mint_at(live, json_array_get(o, 1));
	if (!json_is_string(at) || json_equal(at, v) || mint_contains(live, s, json_string_length(v))) {
		json_decref(live);
		return NULL;
	}
	json_object_set(x->subs, s, at);
	json_decref(live);
	return json_object_get(x->subs, s);
}

static void subst_walk(struct subst *x, json_t *v, int depth)
{
	if (depth > MINT_MAX_DEPTH)
		return;
	if (json_is_object(v)) {
		const char *k;
		json_t *c, *live;
		json_object_foreach(v, k, c)
		{
			if (keyable(c) && (live = live_value(x, c))) {
				json_object_set(v, k, live);
				x->done++;
			} else {
				subst_walk(x, c, depth + 1);
			}
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *c = json_array_get(v, i), *live;
			if (keyable(c) && (live = live_value(x, c))) {
				json_array_set(v, i, live);
				x->done++;
			} else {
				subst_walk(x, c, depth + 1);
			}
		}
	}
}

size_t mint_substitute(json_t *origins, size_t i, json_t *v, mint_counterpart_fn counterpart, void *ctx,
		       json_t *subs)
{
	struct subst x = {origins, i, counterpart, ctx, subs, 0};

	/* The id and the method are the client's own; what it carries is below them. */
	subst_walk(&x, json_object_get(v, "params"), 0);
	subst_walk(&x, json_object_get(v, "result"), 0);
	return x.done;
}

static json_t *apply(json_t *v, json_t *subs, int depth)
{
	json_t *live;

	if (keyable(v) && (live = json_object_get(subs, json_string_value(v))))
		return json_incref(live);
	if (depth > MINT_MAX_DEPTH || (!json_is_object(v) && !json_is_array(v)))
		return json_incref(v);
	if (json_is_object(v)) {
		json_t *out = json_object(), *c;
		const char *k;
		json_object_foreach(v, k, c)
		{
			json_object_set_new(out, k, apply(c, subs, depth + 1));
		}
		return out;
	}
	json_t *out = json_array();
	for (size_t i = 0; i < json_array_size(v); i++)
		json_array_append_new(out, apply(json_array_get(v, i), subs, depth + 1));
	return out;
}

json_t *mint_apply(json_t *v, json_t *subs)
{
	if (!v)
		return NULL;
	if (!json_object_size(subs))
		return json_incref(v);
	return apply(v, subs, 0);
}

int mint_is_noise(json_t *noise, const char *path)
{
	for (size_t i = 0; i < json_array_size(noise); i++) {
		const char *n = json_string_value(json_array_get(noise, i));
		size_t len = n ? strlen(n) : 0;
		if (n && !strncmp(path, n, len) &&
		    (path[len] == '\0' || path[len] == '.' || path[len] == '['))
			return 1;
	}
	return 0;
}
