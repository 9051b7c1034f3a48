/*
 * replay.c - loading a session for replay, matching live messages to
 * recorded ones, and rewriting recorded messages for sending (see replay.h).
 */
#include "analyze/replay.h"

#include <stdlib.h>
#include <string.h>

#include "schema/redact.h"

struct loader {
	struct rp_script *s;
	size_t cap;
	int64_t last_client;  /* index of the last client message, -1 before any */
};

json_t *rp_parse(const char *p, size_t n)
{
	json_t *v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	return v ? v : json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
}

static int load_item(const struct store_item *it, void *ctx)
{
	struct loader *l = ctx;
	struct rp_script *s = l->s;
	struct rp_msg *m;
	size_t len = it->raw_len;

	if (it->type != STORE_ITEM_MESSAGE)
		return 0;
	if (s->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		s->m = mt_realloc(s->m, l->cap * sizeof(*s->m));
	}
	m = &s->m[s->n];
	memset(m, 0, sizeof(*m));
	while (len && (((const char *)it->raw)[len - 1] == '\n' || ((const char *)it->raw)[len - 1] == '\r'))
		len--;
	m->seq = it->seq;
	m->t_ns = it->t_ns;
	m->c2s = it->dir && !strcmp(it->dir, "c2s");
	m->raw = mt_malloc(len + 1);
	memcpy(m->raw, it->raw, len);
	m->raw[len] = '\0';
	m->len = len;
	m->answer = m->request = m->anchor = m->next_same = m->cancelled_by = -1;
	mt_classify(m->raw, m->len, &m->cls);
	if (m->cls.kind <= MT_ERROR)
		m->json = rp_parse(m->raw, m->len);
	m->method = json_string_value(json_object_get(m->json, "method"));
	if (m->cls.kind == MT_REQUEST)
		m->subject = rp_subject(json_object_get(m->json, "params"));
	if (m->c2s) {
		l->last_client = (int64_t)s->n;
		if (m->cls.kind == MT_REQUEST)
			s->requests++;
	} else {
		m->anchor = l->last_client;
		s->server_msgs++;
	}
	s->n++;
	return 0;
}

/* Add the paths (under path) of strings in v holding a marker, to set (keys). */
static void marker_paths(json_t *v, struct mt_buf *path, json_t *set);

void rp_marker_paths(json_t *v, const char *base, json_t *set)
{
	struct mt_buf path = MT_BUF_INIT;

	mt_buf_puts(&path, base);
	marker_paths(v, &path, set);
	mt_buf_release(&path);
}

static void marker_paths(json_t *v, struct mt_buf *path, json_t *set)
{
	size_t mark = path->len, i;
	const char *k;
	json_t *e;

	if (json_is_string(v)) {
		if (mt_redact_find_marker(json_string_value(v), json_string_length(v)))
			json_object_set_new(set, path->data ? path->data : "", json_true());
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, e) {
			mt_buf_printf(path, ".%s", k);
			marker_paths(e, path, set);
			path->len = mark;
			path->data[mark] = '\0';
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e) {
			mt_buf_printf(path, "[%zu]", i);
			marker_paths(e, path, set);
			path->len = mark;
			path->data[mark] = '\0';
		}
	}
}

int rp_load(struct store *st, int64_t session, const struct canon_ignore *ig,
	    struct rp_script *s, struct mt_err *err)
{
	struct loader l = {s, 0, -1};
	struct store_session_row row;
	struct mt_map open;
	struct mt_buf key = MT_BUF_INIT;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	s->session = session;
	if (ig)
		s->ig = *ig;
	mt_map_init(&s->by_key, 0);
	mt_map_init(&s->last_key, 0);
	mt_map_init(&open, 0);
	if (store_session_get(st, session, &row, err))
		goto out;
	store_session_row_release(&row);
	if (store_each_item_ex(st, session, STORE_ITEMS_LEAN, load_item, &l, err) < 0)
		goto out;
	/* Pair answers with requests (by side and id, in order), and key client messages. */
	for (size_t i = 0; i < s->n; i++) {
		struct rp_msg *m = &s->m[i];
		int64_t req;
		if (m->cls.kind == MT_REQUEST && m->cls.idtype != MT_ID_NULL) {
			mt_id_key(&m->cls, m->c2s ? 'c' : 's', &key);
			mt_map_put(&open, key.data, key.len, (int64_t)i);
		} else if ((m->cls.kind == MT_RESPONSE || m->cls.kind == MT_ERROR) &&
			   m->cls.idtype != MT_ID_NONE && m->cls.idtype != MT_ID_NULL) {
			mt_id_key(&m->cls, m->c2s ? 's' : 'c', &key);
			if (mt_map_take(&open, key.data, key.len, &req)) {
				m->request = req;
				s->m[req].answer = (int64_t)i;
			}
		}
		/* A cancellation names a request of its own side by id; the first one counts. */
		if (m->cls.kind == MT_NOTIFICATION && m->method &&
		    !strcmp(m->method, "notifications/cancelled")) {
			json_t *rid = json_object_get(json_object_get(m->json, "params"), "requestId");
			for (size_t q = i; rid && q-- > 0;) {
				struct rp_msg *r = &s->m[q];
				json_t *qid = json_object_get(r->json, "id");
				if (r->c2s == m->c2s && r->cls.kind == MT_REQUEST && qid &&
				    json_equal(qid, rid)) {
					if (r->cancelled_by < 0)
						r->cancelled_by = (int64_t)i;
					break;
				}
			}
		}
		if (m->c2s && (m->cls.kind == MT_REQUEST || m->cls.kind == MT_NOTIFICATION) && m->method) {
			struct canon_ignore mine;
			json_t *kp = rp_key_params(m->method, json_object_get(m->json, "params"));
			rp_ignore_for(s, m->method, kp, &mine);
			canon_key(m->method, kp, &mine, &key);
			free((void *)mine.paths);
			m->key = mt_strndup(key.data, key.len);
			m->pattern = mt_redact_find_marker(m->raw, m->len) != NULL;
			s->npatterns += (size_t)m->pattern;
			if (!mt_map_get(&s->by_key, key.data, key.len, &req))
				mt_map_put(&s->by_key, key.data, key.len, (int64_t)i);
			if (mt_map_get(&s->last_key, key.data, key.len, &req))
				s->m[req].next_same = (int64_t)i;
			mt_map_put(&s->last_key, key.data, key.len, (int64_t)i);
		}
	}
	rc = 0;
out:
	mt_map_release(&open);
	mt_buf_release(&key);
	if (rc)
		rp_release(s);
	return rc;
}

void rp_release(struct rp_script *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->m[i].raw);
		free(s->m[i].key);
		json_decref(s->m[i].json);
		json_decref(s->m[i].live_id);
		mt_buf_release(&s->m[i].live_id_text);
		mt_buf_release(&s->m[i].live_token_text);
	}
	free(s->m);
	mt_buf_release(&s->keybuf);
	mt_map_release(&s->by_key);
	mt_map_release(&s->last_key);
	memset(s, 0, sizeof(*s));
}

/* Does p start with a path's root member (params, result, error)? */
static int path_root(const char *p)
{
	static const char *const roots[] = {"params", "result", "error"};

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(roots[i]);
		if (!strncmp(p, roots[i], n) && (p[n] == '\0' || p[n] == '.' || p[n] == '['))
			return 1;
	}
	return 0;
}

void rp_ignore_for(const struct rp_script *s, const char *method, json_t *params,
		   struct canon_ignore *out)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const char **v;
	size_t n = 0;

	if (!s->ig.n) {
		out->paths = NULL;
		out->n = 0;
		return;
	}
	v = mt_calloc(s->ig.n, sizeof(*v));

	for (size_t i = 0; i < s->ig.n; i++) {
		const char *p = s->ig.paths[i], *eq = strchr(p, '=');
		/* NAME=PATH when PATH, not the whole, starts at params, result or error (a
		 * tool name may hold dots: github.search=result.x). */
		if (!eq || path_root(p) || !path_root(eq + 1)) {
			v[n++] = p;
			continue;
		}
		size_t len = (size_t)(eq - p);
		if ((method && strlen(method) == len && !strncmp(method, p, len)) ||
		    (name && strlen(name) == len && !strncmp(name, p, len)))
			v[n++] = eq + 1;
	}
	out->paths = v;
	out->n = n;
}

int rp_ignore_check(const struct rp_script *s, struct mt_err *err)
{
	for (size_t i = 0; i < s->ig.n; i++) {
		const char *p = s->ig.paths[i], *eq = strchr(p, '=');
		size_t len;
		int seen = 0;

		if (path_root(p))
			continue;
		if (!eq || !path_root(eq + 1))
			return mt_err_set(err, "--ignore '%s': a path starts at params, result or error "
					  "(NAME=PATH scopes it to a method, tool or prompt)", p);
		len = (size_t)(eq - p);
		for (size_t k = 0; k < s->n && !seen; k++) {
			const struct rp_msg *m = &s->m[k];
			const char *name = json_string_value(
				json_object_get(json_object_get(m->json, "params"), "name"));
			if (!m->c2s || m->cls.kind != MT_REQUEST)
				continue;
			seen = (m->method && strlen(m->method) == len && !strncmp(m->method, p, len)) ||
			       (name && strlen(name) == len && !strncmp(name, p, len));
		}
		if (!seen)
			return mt_err_set(err, "--ignore '%s': the recorded client never called a method, "
					  "tool or prompt named '%.*s'", p, (int)len, p);
	}
	return 0;
}

const char *rp_subject(json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));

	return name ? name : json_string_value(json_object_get(params, "uri"));
}

void rp_describe(const struct rp_msg *m, struct mt_buf *out)
{
	mt_buf_reset(out);
	mt_buf_puts(out, m->method ? m->method : "?");
	if (m->subject) {
		mt_buf_putc(out, ' ');
		mt_buf_puts(out, m->subject);
	}
}

json_t *rp_key_params(const char *method, json_t *params)
{
	return method && !strcmp(method, "initialize") ? NULL : params;
}

/* Is there a member, not null, at the dotted path under caps? */
static int declared(json_t *caps, const char *path)
{
	char name[64];
	const char *p = path, *dot;

	while (caps && *p) {
		size_t n;
		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(name))
			return 0;
		memcpy(name, p, n);
		name[n] = '\0';
		caps = json_object_get(caps, name);
		p += n + (dot != NULL);
	}
	return caps != NULL && !json_is_null(caps);
}

const char *rp_missing_capability(const char *method, json_t *params, json_t *caps)
{
	int task = json_object_get(params, "task") != NULL;

	if (!method)
		return NULL;
	if (!json_is_object(caps))
		caps = NULL;
	if (!strcmp(method, "sampling/createMessage")) {
		if (!declared(caps, "sampling"))
			return "sampling";
		if (task && !declared(caps, "tasks.requests.sampling.createMessage"))
			return "tasks.requests.sampling.createMessage";
		return NULL;
	}
	if (!strcmp(method, "roots/list"))
		return declared(caps, "roots") ? NULL : "roots";
	if (!strcmp(method, "elicitation/create")) {
		json_t *e = json_object_get(caps, "elicitation");
		const char *mode = json_string_value(json_object_get(params, "mode"));
		if (!e || json_is_null(e))
			return "elicitation";
		if (mode && !strcmp(mode, "url")) {
			if (!declared(e, "url"))
				return "elicitation.url";
		} else if (json_is_object(e) && json_object_size(e) && !declared(e, "form")) {
			/* {} is form mode only (2025-11-25 keeps it for older clients). */
			return "elicitation.form";
		}
		if (task && !declared(caps, "tasks.requests.elicitation.create"))
			return "tasks.requests.elicitation.create";
		return NULL;
	}
	return NULL;
}

int rp_idempotent(const char *method)
{
	size_t n;

	if (!method)
		return 0;
	if (!strcmp(method, "initialize") || !strcmp(method, "ping"))
		return 1;
	n = strlen(method);
	return n > 5 && !strcmp(method + n - 5, "/list");
}

/*
 * Does live text (ln bytes) fit recorded text r (rn bytes) that holds
 * redaction markers? Each marker stands for one byte or more of any kind; the
 * text between markers must be there as recorded, in order. Each piece is
 * taken at its leftmost place, which leaves the most room to the rest: linear
 * work, whatever the recording holds.
 */
static int fits_markers(const char *r, size_t rn, const char *l, size_t ln)
{
	const char *m = mt_redact_find_marker(r, rn), *last = m;
	size_t head, tail, pos, end;

	if (!m)
		return rn == ln && !memcmp(r, l, ln);
	for (const char *x = m; x; x = mt_redact_find_marker(x + MT_REDACT_MARKER_LEN,
						  rn - (size_t)(x + MT_REDACT_MARKER_LEN - r)))
		last = x;
	head = (size_t)(m - r);
	tail = rn - (size_t)(last + MT_REDACT_MARKER_LEN - r);
	if (head + tail >= ln || memcmp(r, l, head) || memcmp(r + rn - tail, l + ln - tail, tail))
		return 0;
	pos = head;
	end = ln - tail; /* the last marker ends here */
	/* The pieces between the first and the last marker, each after a byte or more. */
	for (const char *x = m; x != last;) {
		const char *from = x + MT_REDACT_MARKER_LEN;
		const char *next = mt_redact_find_marker(from, rn - (size_t)(from - r));
		size_t plen = (size_t)(next - from);
		if (pos + 1 + plen + 1 > end)
			return 0;
		const char *at = plen ? memmem(l + pos + 1, end - 1 - (pos + 1), from, plen) : l + pos + 1;
		if (!at)
			return 0;
		pos = (size_t)(at - l) + plen;
		x = next;
	}
	return pos + 1 <= end;
}

/*
 * Does live match recorded, where recorded's strings that hold markers are
 * patterns (a value that is a marker alone, any string or number: the tap
 * may have redacted a number)? Both are stripped as for a key.
 */
static int fits(json_t *rec, json_t *live, int depth)
{
	const char *k;
	json_t *x;
	size_t i;

	if (depth > 256)
		return json_equal(rec, live);
	if (json_is_string(rec) &&
	    mt_redact_find_marker(json_string_value(rec), json_string_length(rec))) {
		const char *r = json_string_value(rec);
		size_t rn = json_string_length(rec);
		if (mt_redact_is_marker(r, rn) && json_is_number(live))
			return 1;
		return json_is_string(live) &&
		       fits_markers(r, rn, json_string_value(live), json_string_length(live));
	}
	if (json_is_object(rec)) {
		if (!json_is_object(live) || json_object_size(rec) != json_object_size(live))
			return 0;
		json_object_foreach(rec, k, x)
			if (!json_object_get(live, k) || !fits(x, json_object_get(live, k), depth + 1))
				return 0;
		return 1;
	}
	if (json_is_array(rec)) {
		if (!json_is_array(live) || json_array_size(rec) != json_array_size(live))
			return 0;
		json_array_foreach(rec, i, x)
			if (!fits(x, json_array_get(live, i), depth + 1))
				return 0;
		return 1;
	}
	return json_equal(rec, live);
}

/*
 * The first unused recorded client message of this kind and method whose
 * params hold redacted values and fit the live params (see fits); with reuse,
 * the last such one when all are used.
 */
static int64_t match_pattern(struct rp_script *s, enum mt_kind kind, const char *method,
			     json_t *live, const struct canon_ignore *ig, int reuse, int *reused)
{
	json_t *l = live ? canon_strip(live, "params", ig) : NULL;
	int64_t found = -1, last = -1;

	for (size_t i = 0; i < s->n && found < 0; i++) {
		struct rp_msg *m = &s->m[i];
		if (!m->pattern || !m->c2s || m->cls.kind != kind || !m->method ||
		    strcmp(m->method, method))
			continue;
		json_t *rp = rp_key_params(method, json_object_get(m->json, "params"));
		json_t *r = rp ? canon_strip(rp, "params", ig) : NULL;
		int ok = (!r && !l) || (r && l && fits(r, l, 0));
		json_decref(r);
		if (!ok)
			continue;
		if (!m->used)
			found = (int64_t)i;
		last = (int64_t)i;
	}
	json_decref(l);
	if (found < 0 && reuse && last >= 0) {
		found = last;
		*reused = 1;
	}
	return found;
}

/*
 * The next unused client message with this key and kind. Keys hold the method,
 * so requests and notifications never share one; the kind check is a guard.
 * A recorded message that holds redacted values matches as a pattern.
 */
static int64_t match(struct rp_script *s, enum mt_kind kind, const char *method, json_t *params,
		     int reuse, int *reused)
{
	struct mt_buf key = s->keybuf; /* reused: no allocation per request */
	int64_t head = -1, found = -1;

	struct canon_ignore ig;
	params = rp_key_params(method, params);
	rp_ignore_for(s, method, params, &ig);
	canon_key(method, params, &ig, &key);
	if (mt_map_get(&s->by_key, key.data, key.len, &head) && head >= 0 &&
	    s->m[head].cls.kind == kind) {
		found = head;
		mt_map_put(&s->by_key, key.data, key.len, s->m[head].next_same);
	} else if (s->npatterns &&
		   (found = match_pattern(s, kind, method, params, &ig, reuse, reused)) >= 0) {
		/* (found) */
	} else if (reuse && mt_map_get(&s->last_key, key.data, key.len, &head) &&
		   s->m[head].cls.kind == kind) {
		found = head;
		*reused = 1;
	}
	free((void *)ig.paths);
	if (found >= 0)
		s->m[found].used = 1;
	s->keybuf = key;
	return found;
}

int64_t rp_match_request(struct rp_script *s, const char *method, json_t *params, int *reused)
{
	*reused = 0;
	return match(s, MT_REQUEST, method, params, rp_idempotent(method), reused);
}

int64_t rp_match_notification(struct rp_script *s, const char *method, json_t *params)
{
	int reused = 0;

	return match(s, MT_NOTIFICATION, method, params, 0, &reused);
}

int64_t rp_closest(const struct rp_script *s, const char *method, json_t *params, json_t *diffs)
{
	int64_t best = -1;
	size_t best_n = 0;
	json_t *best_paths = NULL;

	for (size_t i = 0; i < s->n; i++) {
		const struct rp_msg *m = &s->m[i];
		if (!m->c2s || m->cls.kind != MT_REQUEST || !m->method || strcmp(m->method, method))
			continue;
		json_t *paths = json_array();
		struct canon_ignore ig;
		rp_ignore_for(s, method, params, &ig);
		size_t n = canon_diff(json_object_get(m->json, "params"), params, "params", &ig, 16,
				      paths);
		free((void *)ig.paths);
		if (best < 0 || n < best_n) {
			json_decref(best_paths);
			best = (int64_t)i;
			best_n = n;
			best_paths = paths;
		} else {
			json_decref(paths);
		}
	}
	if (best_paths) {
		json_array_extend(diffs, best_paths);
		json_decref(best_paths);
	}
	return best;
}

void rp_render(const struct rp_script *s, size_t i, const char *id, size_t idn, const char *token,
	       size_t tokn, struct mt_buf *out)
{
	const struct rp_msg *m = &s->m[i];
	struct {
		struct mt_span at;
		const char *text;
		size_t n;
	} r[2];
	int n = 0;
	size_t done = 0;

	if (id && m->cls.id.n)
		r[n].at = m->cls.id, r[n].text = id, r[n++].n = idn;
	if (token && m->cls.progress_token.n)
		r[n].at = m->cls.progress_token, r[n].text = token, r[n++].n = tokn;
	if (n == 2 && r[1].at.p < r[0].at.p) {
		r[0].at = m->cls.progress_token, r[0].text = token, r[0].n = tokn;
		r[1].at = m->cls.id, r[1].text = id, r[1].n = idn;
	}
	for (int k = 0; k < n; k++) {
		size_t off = (size_t)(r[k].at.p - m->raw);
		mt_buf_append(out, m->raw + done, off - done);
		mt_buf_append(out, r[k].text, r[k].n);
		done = off + r[k].at.n;
	}
	mt_buf_append(out, m->raw + done, m->len - done);
	mt_buf_putc(out, '\n');
}
