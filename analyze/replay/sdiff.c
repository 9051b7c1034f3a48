/*
 * sdiff.c - two recorded sessions compared offline (see sdiff.h).
 */
#include "analyze/replay/sdiff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/replay/mint.h"

/* One side (x) aligned with a. */
struct align {
	struct rp_script *a, *x;
	int *ast, *xst;         /* owned: rp_error_statuses of a and x (NULL: stdio) */
	int32_t *x2a;           /* owned: per message of x, its client request's partner in a, or -1 */
	int32_t *a2x;           /* owned: the same the other way */
	unsigned char *by_name; /* owned: per message of x, 1 when paired by method and subject
				 * (not by key: its params differ) */
	json_t *origins;        /* x's minted values (mint_index), made at the first request
				 * that does not match as it is; NULL before */
	json_t *subs;           /* x's minted values -> a's at the same places */
	struct mt_err *err;     /* borrowed: why reading stopped */
};

/*
 * Is message i of s (st: rp_error_statuses of s, or NULL) an exchange's
 * request, the client's or the server's? Not a client request whose POST an
 * HTTP server refused with an error status (one sent after the session's
 * DELETE, say): the transport's business, which a stdio recording of the same
 * flow has no counterpart of.
 */
static int is_request(const struct rp_script *s, const int *st, size_t i)
{
	const struct rp_msg *m = &s->m[i];

	return m->kind == MT_REQUEST && m->method && (!m->c2s || (!m->refused && !(st && st[i])));
}

/* How many exchanges s holds. */
static size_t exchanges(const struct rp_script *s, const int *st)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += is_request(s, st, i);
	return n;
}

/*
 * a's message standing for x's server message j (an answer to a paired
 * client request: a's answer; a paired server request: a's), or NULL.
 */
static json_t *counterpart(void *ctx, size_t j)
{
	struct align *al = ctx;
	const struct rp_msg *m = &al->x->m[j];
	json_t *v = NULL;
	int32_t q;

	if (m->c2s)
		return NULL;
	if (m->kind == MT_REQUEST) {
		q = al->x2a[j];
		return q >= 0 && !rp_json(al->a, (size_t)q, &v, NULL) ? v : NULL;
	}
	if ((m->kind != MT_RESPONSE && m->kind != MT_ERROR) || m->request < 0)
		return NULL;
	q = al->x2a[m->request];
	if (q < 0 || al->a->m[q].answer < 0 || rp_json(al->a, (size_t)al->a->m[q].answer, &v, NULL))
		return NULL;
	return v;
}

/* x's message v with its minted values taken for a's: a new reference (v itself when none are). */
static json_t *follow(const struct align *al, json_t *v)
{
	return json_object_size(al->subs) ? mint_apply(v, al->subs) : json_incref(v);
}

/* "D method\nsubject" of a parsed request (D: c or s, whose it is), into out. */
static void pair_key(int c2s, const char *method, json_t *msg, struct mt_buf *out)
{
	const char *subject = rp_subject(json_object_get(msg, "params"));

	mt_buf_reset(out);
	mt_buf_puts(out, c2s ? "c " : "s ");
	mt_buf_puts(out, method ? method : "");
	mt_buf_putc(out, '\n');
	if (subject) {
		mt_buf_putc(out, '=');
		mt_buf_puts(out, subject);
	}
}

/* The match key of a server request (method, params) as a's ignore paths say, into out. */
static void server_key(const struct align *al, const char *method, json_t *params, struct mt_buf *out)
{
	struct canon_ignore ig;

	rp_ignore_for(al->a, method, params, &ig);
	canon_key(method, params, &ig, out);
	free((void *)ig.paths);
}

/* Take the next index from a queue [next, q, q, ...] of the object queues under key; -1: none. */
static int64_t queue_take(json_t *queues, const char *key)
{
	json_t *list = json_object_get(queues, key);
	json_int_t next = list ? json_integer_value(json_array_get(list, 0)) : 0;

	if (next <= 0 || (size_t)next >= json_array_size(list))
		return -1;
	json_integer_set(json_array_get(list, 0), next + 1);
	return (int64_t)json_integer_value(json_array_get(list, (size_t)next));
}

/* Add index q to the queue under key of the object queues. */
static void queue_add(json_t *queues, const char *key, size_t q)
{
	json_t *list = json_object_get(queues, key);

	if (!list) {
		list = json_pack("[i]", 1);
		json_object_set_new(queues, key, list);
	}
	json_array_append_new(list, json_integer((json_int_t)q));
}

/*
 * Pair x's requests with a's: the client's by the replay key (x's minted
 * values followed), the server's by their own key (method and canonical
 * params), in order; then the leftovers by method and subject. 0, or -1
 * (al->err set).
 */
static int align(struct align *al)
{
	struct rp_script *a = al->a, *x = al->x;
	struct mt_buf key = MT_BUF_INIT;
	json_t *msg = NULL, *left = NULL, *srv = json_object();
	int rc = -1;

	al->x2a = mt_malloc((x->n ? x->n : 1) * sizeof(*al->x2a));
	al->a2x = mt_malloc((a->n ? a->n : 1) * sizeof(*al->a2x));
	al->by_name = mt_calloc(x->n ? x->n : 1, 1);
	for (size_t i = 0; i < x->n; i++)
		al->x2a[i] = -1;
	for (size_t i = 0; i < a->n; i++)
		al->a2x[i] = -1;
	al->subs = json_object();
	if (rp_error_statuses(a, &al->ast, al->err) || rp_error_statuses(x, &al->xst, al->err))
		goto out;
	/* a's server requests by key, each key a queue in order. */
	for (size_t i = 0; i < a->n; i++) {
		if (a->m[i].c2s || !is_request(a, al->ast, i))
			continue;
		if (rp_json(a, i, &msg, al->err))
			goto out;
		server_key(al, a->m[i].method, json_object_get(msg, "params"), &key);
		queue_add(srv, key.data, i);
		json_decref(msg);
		msg = NULL;
	}
	for (size_t i = 0; i < x->n; i++) {
		const struct rp_msg *m = &x->m[i];
		int reused = 0;
		int64_t q;
		if (!is_request(x, al->xst, i))
			continue;
		if (rp_json(x, i, &msg, al->err))
			goto out;
		if (!msg)
			continue;
		if (!m->c2s) {
			json_t *sub = follow(al, msg);
			server_key(al, m->method, json_object_get(sub, "params"), &key);
			json_decref(sub);
			if ((q = queue_take(srv, key.data)) >= 0) {
				al->x2a[i] = (int32_t)q;
				al->a2x[q] = (int32_t)i;
			}
			json_decref(msg);
			msg = NULL;
			continue;
		}
		/*
		 * As it is first (most requests carry no minted value: no index is
		 * made for them); else with x's minted values taken for a's.
		 */
		q = rp_match_request(a, m->method, json_object_get(msg, "params"), &reused);
		if (q < 0 || reused) { /* (neither uses anything up) */
			if (!al->origins && !(al->origins = mint_index(x, al->err)))
				goto out;
			if (mint_substitute(al->origins, i, msg, counterpart, al, al->subs))
				q = rp_match_request(a, m->method, json_object_get(msg, "params"), &reused);
		}
		if (q >= 0 && !reused && is_request(a, al->ast, (size_t)q)) {
			al->x2a[i] = (int32_t)q;
			al->a2x[q] = (int32_t)i;
		}
		json_decref(msg);
		msg = NULL;
	}
	/* The leftovers: a's by method and subject, each a queue in order: [next, q, q, ...]. */
	left = json_object();
	for (size_t i = 0; i < a->n; i++) {
		if (!is_request(a, al->ast, i) || al->a2x[i] >= 0)
			continue;
		if (rp_json(a, i, &msg, al->err))
			goto out;
		pair_key(a->m[i].c2s, a->m[i].method, msg, &key);
		json_decref(msg);
		msg = NULL;
		queue_add(left, key.data, i);
	}
	for (size_t i = 0; i < x->n && json_object_size(left); i++) {
		json_t *sub;
		if (!is_request(x, al->xst, i) || al->x2a[i] >= 0)
			continue;
		if (rp_json(x, i, &msg, al->err))
			goto out;
		sub = follow(al, msg);
		pair_key(x->m[i].c2s, x->m[i].method, sub, &key);
		json_decref(sub);
		json_decref(msg);
		msg = NULL;
		int64_t q = queue_take(left, key.data);
		if (q >= 0) {
			al->x2a[i] = (int32_t)q;
			al->a2x[q] = (int32_t)i;
			al->by_name[i] = 1;
		}
	}
	rc = 0;
out:
	json_decref(msg);
	json_decref(left);
	json_decref(srv);
	mt_buf_release(&key);
	return rc;
}

static void align_release(struct align *al)
{
	free(al->ast);
	free(al->xst);
	free(al->by_name);
	free(al->x2a);
	free(al->a2x);
	json_decref(al->origins);
	json_decref(al->subs);
}

/* The answer's result or error (a new object holding the one it has; {} without an answer). */
static json_t *outcome(json_t *answer)
{
	json_t *o = json_object(), *v;

	if ((v = json_object_get(answer, "result")))
		json_object_set(o, "result", v);
	else if ((v = json_object_get(answer, "error")))
		json_object_set(o, "error", v);
	return o;
}

/* A pair's parts: the requests (x's minted values as a's) and their answers. */
struct pair {
	json_t *aq, *xq, *aa, *xa;
};

static void pair_release(struct pair *p)
{
	json_decref(p->aq);
	json_decref(p->xq);
	json_decref(p->aa);
	json_decref(p->xa);
}

/*
 * Do the params of pair (q, i) need comparing? Not when they matched by key
 * (the key is the canonical params: they are the same), unless the key left
 * them out (initialize), a's is a pattern (redacted values), or ignore paths
 * may be scoped by a name in them.
 */
static int params_differ(const struct align *al, size_t q, size_t i)
{
	const struct rp_msg *am = &al->a->m[q];

	return al->by_name[i] || am->pattern || al->a->ig.n ||
	       (am->method && !strcmp(am->method, "initialize"));
}

/*
 * Read the answers of a's request q and x's request i, and the requests
 * themselves when their params need comparing (else aq and xq stay NULL).
 * 0, or -1 (err set).
 */
static int pair_read(struct align *al, size_t q, size_t i, struct pair *p)
{
	const struct rp_msg *am = &al->a->m[q], *xm = &al->x->m[i];
	json_t *v = NULL;

	memset(p, 0, sizeof(*p));
	if (params_differ(al, q, i)) {
		if (rp_json(al->a, q, &p->aq, al->err) || rp_json(al->x, i, &v, al->err))
			return -1;
		p->xq = follow(al, v);
		json_decref(v);
		v = NULL;
	}
	if (am->answer >= 0 && rp_json(al->a, (size_t)am->answer, &p->aa, al->err))
		return -1;
	if (xm->answer >= 0) {
		if (rp_json(al->x, (size_t)xm->answer, &v, al->err))
			return -1;
		p->xa = follow(al, v);
		json_decref(v);
	}
	return 0;
}

/* {"params": P} of a request, P stripped as match keys strip it ({} and none alike). */
static json_t *params_of(json_t *msg, const struct canon_ignore *ig)
{
	json_t *o = json_object(), *p = canon_strip(json_object_get(msg, "params"), "params", ig);

	if (p && !(json_is_object(p) && !json_object_size(p)))
		json_object_set(o, "params", p);
	json_decref(p);
	return o;
}

/*
 * The paths where the pair differs (params, then result or error) into paths
 * (at most SD_MAX_PATHS), a's value at each into was ([v] or [], unless NULL),
 * and B's params as compared into *xparams (a new {"params": P}, NULL: not
 * wanted); the count.
 */
static size_t pair_diff(struct align *al, size_t q, size_t i, struct pair *p, json_t *paths, json_t *was,
			json_t **xparams)
{
	const struct rp_msg *am = &al->a->m[q], *xm = &al->x->m[i];
	struct canon_ignore ig;
	json_t *ap, *xp;
	size_t n;

	rp_ignore_for(al->a, am->method, json_object_get(p->aq, "params"), &ig);
	ap = params_of(p->aq, &ig);
	xp = params_of(p->xq, &ig);
	n = p->aq ? canon_diff_was(ap, xp, "", &ig, SD_MAX_PATHS, paths, was) : 0;
	/* A request cancelled on both sides: whether and how it was answered is a race. */
	if (am->cancelled_by < 0 || xm->cancelled_by < 0) {
		json_t *ao = outcome(p->aa), *xo = outcome(p->xa);
		size_t room = n < SD_MAX_PATHS ? SD_MAX_PATHS - n : 0;
		n += canon_diff_was(ao, xo, "", &ig, room, paths, was);
		json_decref(ao);
		json_decref(xo);
	}
	free((void *)ig.paths);
	json_decref(ap);
	if (xparams)
		*xparams = xp;
	else
		json_decref(xp);
	return n;
}

int sd_noise(struct rp_script *a, struct rp_script *c, json_t *noise, struct mt_err *err)
{
	struct align al = {.a = a, .x = c, .err = err};
	char k[32];
	int rc = -1;

	if (align(&al))
		goto out;
	for (size_t q = 0; q < a->n; q++) {
		struct pair p;
		json_t *paths, *list;
		if (al.a2x[q] < 0)
			continue;
		if (pair_read(&al, q, (size_t)al.a2x[q], &p)) {
			pair_release(&p);
			goto out;
		}
		paths = json_array();
		(void)pair_diff(&al, q, (size_t)al.a2x[q], &p, paths, NULL, NULL);
		pair_release(&p);
		snprintf(k, sizeof(k), "%zu", q);
		if (!json_array_size(paths)) {
			json_decref(paths);
			continue;
		}
		if ((list = json_object_get(noise, k))) {
			for (size_t e = 0; e < json_array_size(paths); e++)
				if (!mint_is_noise(list, json_string_value(json_array_get(paths, e))))
					json_array_append(list, json_array_get(paths, e));
			json_decref(paths);
		} else {
			json_object_set_new(noise, k, paths);
		}
	}
	rc = 0;
out:
	align_release(&al);
	return rc;
}

/* Fill an item's method and subject from a parsed request. */
static void describe(struct sd_item *it, const char *method, json_t *msg)
{
	it->method = method ? method : "?";
	it->subject = rp_subject(json_object_get(msg, "params"));
}

int sd_run(struct rp_script *a, struct rp_script *b, json_t *noise, sd_each_fn each, void *ctx,
	   struct sd_totals *t, struct mt_err *err)
{
	struct align al = {.a = a, .x = b, .err = err};
	struct sd_item it;
	json_t *msg = NULL;
	char k[32];
	int rc = -1;

	memset(t, 0, sizeof(*t));
	if (align(&al))
		goto out;
	t->a_exchanges = exchanges(a, al.ast);
	t->b_exchanges = exchanges(b, al.xst);
	for (size_t i = 0; i < b->n; i++) {
		const struct rp_msg *m = &b->m[i];
		int stop;
		if (!is_request(b, al.xst, i))
			continue;
		memset(&it, 0, sizeof(it));
		it.s2c = !m->c2s;
		it.a_seq = -1;
		it.b_seq = m->seq;
		if (al.x2a[i] < 0) {
			if (rp_json(b, i, &msg, err))
				goto out;
			describe(&it, m->method, msg);
			it.status = SD_ADDED;
			t->added++;
			stop = each(&it, ctx);
			json_decref(msg);
			msg = NULL;
			if (stop)
				goto stopped;
			continue;
		}
		size_t q = (size_t)al.x2a[i];
		struct pair p;
		json_t *paths = json_array(), *was = json_array(), *nz, *xp = NULL;
		if (pair_read(&al, q, i, &p)) {
			pair_release(&p);
			json_decref(paths);
			json_decref(was);
			goto out;
		}
		(void)pair_diff(&al, q, i, &p, paths, was, &xp);
		snprintf(k, sizeof(k), "%zu", q);
		nz = noise ? json_object_get(noise, k) : NULL;
		it.a_seq = a->m[q].seq;
		if (!p.aq && json_array_size(paths) && rp_json(a, q, &p.aq, err)) {
			pair_release(&p);
			json_decref(paths);
			json_decref(was);
			json_decref(xp);
			goto out;
		}
		describe(&it, a->m[q].method, p.aq);
		it.diffs = json_array();
		it.noise = json_array();
		for (size_t e = 0; e < json_array_size(paths); e++) {
			json_t *path = json_array_get(paths, e),
			       *av = json_array_get(json_array_get(was, e), 0);
			const char *ps = json_string_value(path);
			if (nz && mint_is_noise(nz, ps)) {
				json_array_append(it.noise, path);
				continue;
			}
			json_t *bv = canon_value_at(!strncmp(ps, "params", 6) ? xp : p.xa, ps);
			json_t *d = json_pack("{s:O}", "path", path);
			if (av)
				json_object_set(d, "a", av);
			if (bv)
				json_object_set(d, "b", bv);
			json_array_append_new(it.diffs, d);
		}
		it.ndiffs = json_array_size(it.diffs);
		it.status = it.ndiffs ? SD_CHANGED : SD_SAME;
		t->noise += json_array_size(it.noise);
		if (it.ndiffs)
			t->changed++;
		else
			t->same++;
		stop = each(&it, ctx);
		json_decref(it.diffs);
		json_decref(it.noise);
		json_decref(paths);
		json_decref(was);
		json_decref(xp);
		pair_release(&p);
		if (stop)
			goto stopped;
	}
	for (size_t q = 0; q < a->n; q++) {
		const struct rp_msg *m = &a->m[q];
		int stop;
		if (!is_request(a, al.ast, q) || al.a2x[q] >= 0)
			continue;
		if (rp_json(a, q, &msg, err))
			goto out;
		memset(&it, 0, sizeof(it));
		it.s2c = !m->c2s;
		it.status = SD_MISSING;
		it.a_seq = m->seq;
		it.b_seq = -1;
		describe(&it, m->method, msg);
		t->missing++;
		stop = each(&it, ctx);
		json_decref(msg);
		msg = NULL;
		if (stop)
			goto stopped;
	}
	rc = 0;
	goto out;
stopped:
	mt_err_set(err, "stopped");
out:
	json_decref(msg);
	align_release(&al);
	return rc;
}
