/*
 * engine.c - the rule engine (see analyze.h): one pass over a session, a
 * lifecycle state machine, and rule dispatch by hook and method.
 */
#include "analyze/analyze.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/store.h"

static const char *const version_names[AN_VERSION_COUNT] = {
	"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28",
};

const char *an_version_name(enum an_version v)
{
	return (unsigned)v < AN_VERSION_COUNT ? version_names[v] : NULL;
}

int an_version_parse(const char *s, enum an_version *v)
{
	for (int i = 0; s && i < AN_VERSION_COUNT; i++) {
		if (!strcmp(s, version_names[i])) {
			*v = (enum an_version)i;
			return 0;
		}
	}
	return -1;
}

/* Days since 0000-03-01 for a YYYY-MM-DD string; -1 when it is not one. */
static long day_number(const char *s)
{
	int y, m, d, n = 0;

	if (!s || sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 || s[10] ||
	    m < 1 || m > 12 || d < 1 || d > 31)
		return -1;
	/* A civil-from-days style count; exactness does not matter, order does. */
	if (m <= 2) {
		y--;
		m += 12;
	}
	return 365L * y + y / 4 - y / 100 + y / 400 + (153 * (m - 3) + 2) / 5 + d;
}

enum an_version an_version_nearest(const char *s)
{
	long want = day_number(s), best = -1;
	enum an_version nearest = AN_V2025_11_25;

	if (want < 0)
		return nearest;
	for (int i = 0; i < AN_VERSION_COUNT; i++) {
		long dist = labs(day_number(version_names[i]) - want);
		if (best < 0 || dist < best) {
			best = dist;
			nearest = (enum an_version)i;
		}
	}
	return nearest;
}

const char *an_severity_name(enum an_severity s)
{
	switch (s) {
	case AN_ERROR: return "error";
	case AN_WARNING: return "warning";
	default: return "info";
	}
}

enum an_severity an_rule_severity(const struct an_rule *r, enum an_version v)
{
	switch (r->sev_policy) {
	case AN_SEV_MUST_0618:
		return v >= AN_V2025_06_18 ? AN_ERROR : AN_WARNING;
	case AN_SEV_MUST_0326:
		return v >= AN_V2025_03_26 ? r->sev : AN_INFO;
	default:
		return r->sev;
	}
}

const char *an_dir_arrow(enum an_dir d)
{
	return d == AN_C2S ? "c→s" : "s→c";
}

int an_rule_listed(const char *list, const char *id)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && *p == ' ')
			p++, n--;
		while (n && p[n - 1] == ' ')
			n--;
		/* An id, or a prefix ending at a '-' boundary ("CAP" matches CAP-004). */
		if (n && strncmp(id, p, n) == 0 && (id[n] == '\0' || id[n] == '-' || p[n - 1] == '-'))
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

const struct an_rule *const *an_rules(size_t *n)
{
	static const struct an_rule **all;
	static size_t count;

	if (!all) {
		size_t cap = 0;
		for (size_t t = 0; an_rule_tables[t]; t++)
			for (const struct an_rule *r = an_rule_tables[t]; r->id; r++)
				cap++;
		all = mt_calloc(cap + 1, sizeof(*all));
		for (size_t t = 0; an_rule_tables[t]; t++)
			for (const struct an_rule *r = an_rule_tables[t]; r->id; r++)
				all[count++] = r;
	}
	*n = count;
	return all;
}

/* ---- the engine ---- */

#define HOOK_COUNT 9

struct rule_list {
	const struct an_rule **v;
	size_t n, cap;
};

/* The trackers of one hook, each with its family's object in st.ext (borrowed). */
struct tracker_list {
	struct {
		const struct an_tracker *k;
		json_t *ext;
		int64_t method_id; /* the tracker's method's record, or -1 for any */
	} *v;
	size_t n;
};

struct method_rec {
	char *name;                 /* owned; stable while the engine lives */
	size_t len;
	int64_t list[HOOK_COUNT];   /* index into lists[] per hook, or -1 */
	int keep;                   /* keep_params(name) */
	int engine;                 /* the engine's own state depends on it */
};

struct an_engine {
	struct an_state st;
	struct tracker_list trackers[HOOK_COUNT]; /* per hook bit */
	struct an_options o;
	/* Per hook bit: rules for any method, and rules by method. */
	struct rule_list any[HOOK_COUNT];
	/* Methods seen or named by rules: each with its rule list per hook. */
	struct method_rec *recs;
	size_t nrecs, caprecs;
	struct mt_map rec_by_name;           /* name -> index into recs */
	struct rule_list *lists;
	size_t nlists;
	/* The findings (owned), or where they go. */
	struct an_finding *findings;
	size_t nfindings, capfindings;
	void (*sink)(const struct an_finding *f, void *ctx);
	void *sink_ctx;
	/* The current message. */
	struct {
		const char *key;   /* a rule's literal */
		json_t *value;     /* owned */
	} members[4];              /* an_params_member's cache */
	int nmembers;
	json_t *cur_json;
	int cur_parsed;
	const struct an_msg *cur;
	int64_t last_rec;        /* the last method record found: a cache */
	struct mt_buf key;
	struct mt_buf idkey, idkey2, scratch; /* per message (idkey2: inside a batch) */
};

static void list_add(struct rule_list *l, const struct an_rule *r)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = mt_realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = r;
}

static int hook_index(unsigned bit)
{
	for (int i = 0; i < HOOK_COUNT; i++)
		if (bit == 1u << i)
			return i;
	return -1;
}

static int64_t method_record(struct an_engine *e, const char *s, size_t n);
static int keep_params(const char *method);
static int engine_method(const char *method);

struct an_engine *an_engine_new(int64_t session, const struct an_options *o)
{
	struct an_engine *e = mt_calloc(1, sizeof(*e));
	const struct an_rule *const *all;
	size_t n;

	e->o = *o;
	e->st.session = session;
	e->st.version = o->force_version ? o->version : AN_V2025_11_25;
	e->st.version_source = o->force_version ? "option" : "default";
	e->st.timeout_ns = o->timeout_ns;
	for (int i = 0; i < 2; i++) {
		mt_map_init(&e->st.open[i], 0);
		mt_map_init(&e->st.used[i], 0);
		mt_map_init(&e->st.tokens[i], 0);
	}
	e->st.last_progress = json_object();
	e->st.subscriptions = json_object();
	e->st.tools = json_object();
	e->st.cursors = json_object();
	e->st.tasks = json_object();
	mt_map_init(&e->rec_by_name, 0);
	e->last_rec = -1;
	e->st.ext = json_object();
	for (size_t t = 0; an_tracker_tables[t]; t++) {
		for (const struct an_tracker *k = an_tracker_tables[t]; k->update; k++) {
			json_t *ext = json_object_get(e->st.ext, k->family);
			if (!ext) {
				ext = json_object();
				json_object_set_new(e->st.ext, k->family, ext);
			}
			for (int h = 0; h < HOOK_COUNT; h++) {
				struct tracker_list *l = &e->trackers[h];
				if (!(k->hooks & (1u << h)))
					continue;
				l->v = mt_realloc(l->v, (l->n + 1) * sizeof(*l->v));
				l->v[l->n].k = k;
				l->v[l->n].ext = ext;
				l->v[l->n].method_id = k->method ? method_record(e, k->method, strlen(k->method)) : -1;
				l->n++;
			}
		}
	}
	all = an_rules(&n);
	for (size_t i = 0; i < n; i++) {
		const struct an_rule *r = all[i];
		if (!r->check)
			continue;
		if (o->only && !an_rule_listed(o->only, r->id))
			continue;
		if (o->skip && an_rule_listed(o->skip, r->id))
			continue;
		for (int h = 0; h < HOOK_COUNT; h++) {
			if (!(r->hooks & (1u << h)))
				continue;
			/* The end of a session has no method: every rule hooked to it runs. */
			if (!r->method || (1u << h) == AN_ON_END) {
				list_add(&e->any[h], r);
				continue;
			}
			/* "a|b|c": the rule is listed under each of the methods. */
			for (const char *p = r->method; *p;) {
				size_t len = strcspn(p, "|");
				int64_t id = method_record(e, p, len);
				struct method_rec *mr = &e->recs[id];
				if (mr->list[h] < 0) {
					e->lists = mt_realloc(e->lists, (e->nlists + 1) * sizeof(*e->lists));
					memset(&e->lists[e->nlists], 0, sizeof(*e->lists));
					mr->list[h] = (int64_t)e->nlists++;
				}
				list_add(&e->lists[mr->list[h]], r);
				p += len + (p[len] == '|');
			}
		}
	}
	return e;
}

void an_engine_free(struct an_engine *e)
{
	struct an_state *st;

	if (!e)
		return;
	st = &e->st;
	for (size_t i = 0; i < st->nrequests; i++) {
		json_decref(st->requests[i].params);
		free(st->requests[i].raw);
		json_decref(st->requests[i].progress_token);
	}
	free(st->requests);
	for (int i = 0; i < 2; i++) {
		mt_map_release(&st->open[i]);
		mt_map_release(&st->used[i]);
		mt_map_release(&st->tokens[i]);
	}
	json_decref(st->last_progress);
	json_decref(st->subscriptions);
	json_decref(st->tools);
	json_decref(st->cursors);
	json_decref(st->tasks);
	json_decref(st->ext);
	json_decref(st->client_caps);
	json_decref(st->server_caps);
	free(st->negotiated);
	free(st->requested);
	for (size_t i = 0; i < e->nfindings; i++) {
		free(e->findings[i].related);
		free(e->findings[i].text);
		free(e->findings[i].method);
		free(e->findings[i].id);
	}
	free(e->findings);
	for (int h = 0; h < HOOK_COUNT; h++) {
		free(e->trackers[h].v);
		free(e->any[h].v);
	}
	for (size_t i = 0; i < e->nlists; i++)
		free(e->lists[i].v);
	free(e->lists);
	for (size_t i = 0; i < e->nrecs; i++)
		free(e->recs[i].name);
	free(e->recs);
	mt_map_release(&e->rec_by_name);
	mt_buf_release(&e->key);
	mt_buf_release(&e->idkey);
	mt_buf_release(&e->idkey2);
	mt_buf_release(&e->scratch);
	free(e);
}

void an_engine_set_sink(struct an_engine *e, void (*sink)(const struct an_finding *f, void *ctx),
			void *ctx)
{
	e->sink = sink;
	e->sink_ctx = ctx;
}

const struct an_finding *an_engine_findings(const struct an_engine *e, size_t *n)
{
	*n = e->nfindings;
	return e->findings;
}

const struct an_state *an_engine_state(const struct an_engine *e)
{
	return &e->st;
}

/* ---- helpers for rules ---- */

json_t *an_json(const struct an_ctx *c)
{
	struct an_engine *e = c->engine;

	if (!c->m)
		return NULL;
	if (!e->cur_parsed) {
		e->cur_parsed = 1;
		e->cur_json = json_loadb(c->m->raw, c->m->raw_len,
					 JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	}
	return e->cur_json;
}

json_t *an_params_member(const struct an_ctx *c, const char *key)
{
	struct an_engine *e = c->engine;
	struct mt_span v;
	json_t *val;

	if (!c->m)
		return NULL;
	if (e->cur_parsed) /* the whole message is parsed already */
		return json_object_get(json_object_get(e->cur_json, "params"), key);
	for (int i = 0; i < e->nmembers; i++)
		if (!strcmp(e->members[i].key, key))
			return e->members[i].value;
	if (mt_json_member(c->m->cls->params, key, &v) != 1)
		return NULL;
	val = json_loadb(v.p, v.n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (e->nmembers == (int)(sizeof(e->members) / sizeof(e->members[0]))) {
		/* Full: parse the whole message instead, once. */
		json_decref(val);
		return json_object_get(an_params(c), key);
	}
	e->members[e->nmembers].key = key;
	e->members[e->nmembers++].value = val;
	return val;
}

json_t *an_params(const struct an_ctx *c)
{
	return json_object_get(an_json(c), "params");
}

json_t *an_result(const struct an_ctx *c)
{
	return json_object_get(an_json(c), "result");
}

json_t *an_error(const struct an_ctx *c)
{
	return json_object_get(an_json(c), "error");
}

json_t *an_path(json_t *obj, const char *path)
{
	char part[128];

	while (obj && path && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		obj = json_object_get(obj, part);
		path = dot ? dot + 1 : NULL;
	}
	return obj;
}

json_t *an_cap(const struct an_state *st, enum an_dir side, const char *path)
{
	return an_path(side == AN_C2S ? st->client_caps : st->server_caps, path);
}

int an_version_in(const struct an_state *st, unsigned mask)
{
	return (mask & AN_V(st->version)) != 0;
}

void an_key_of(json_t *v, struct mt_buf *out)
{
	mt_buf_reset(out);
	if (json_is_integer(v))
		mt_buf_printf(out, "n:%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		mt_buf_printf(out, "n:%.17g", json_real_value(v));
	else if (json_is_string(v)) {
		mt_buf_puts(out, "s:");
		mt_buf_append(out, json_string_value(v), json_string_length(v));
	} else if (json_is_null(v))
		mt_buf_puts(out, "null");
	else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		mt_buf_puts(out, "j:");
		if (s)
			mt_buf_puts(out, s);
		free(s);
	}
}

/* The key of an id token as the classifier found it (same shape as an_key_of). */
static void key_of_token(enum mt_idtype t, struct mt_span tok, struct mt_buf *out)
{
	int64_t v;

	mt_buf_reset(out);
	switch (t) {
	case MT_ID_STRING:
		mt_buf_puts(out, "s:");
		if (memchr(tok.p, '\\', tok.n)) {
			struct mt_buf s = MT_BUF_INIT;
			if (mt_json_string(tok, &s) == 0 && s.len)
				mt_buf_append(out, s.data, s.len);
			mt_buf_release(&s);
		} else {
			mt_buf_append(out, tok.p + 1, tok.n - 2);
		}
		break;
	case MT_ID_NUMBER:
		if (mt_json_int64(tok, &v) && v > INT64_MIN) {
			/* The digits as they are, without a leading zero or "-0" to normalize. */
			char tmp[24];
			int i = (int)sizeof(tmp);
			uint64_t u = v < 0 ? (uint64_t)-v : (uint64_t)v;
			do {
				tmp[--i] = (char)('0' + u % 10);
				u /= 10;
			} while (u);
			if (v < 0)
				tmp[--i] = '-';
			mt_buf_append(out, "n:", 2);
			mt_buf_append(out, tmp + i, sizeof(tmp) - (size_t)i);
		} else if (mt_json_int64(tok, &v)) {
			mt_buf_printf(out, "n:%lld", (long long)v);
		} else {
			char tmp[64];
			double d;
			snprintf(tmp, sizeof(tmp), "%.*s", (int)(tok.n < 63 ? tok.n : 63), tok.p);
			d = strtod(tmp, NULL);
			mt_buf_printf(out, "n:%.17g", d);
		}
		break;
	case MT_ID_NULL:
		mt_buf_puts(out, "null");
		break;
	default:
		break;
	}
}

struct an_request *an_find_request(const struct an_state *st, enum an_dir sender,
				   const char *key, size_t n)
{
	int64_t idx;

	if (mt_map_get(&st->open[sender], key, n, &idx) ||
	    mt_map_get(&st->used[sender], key, n, &idx))
		return &st->requests[idx];
	return NULL;
}

static void add_finding(struct an_engine *e, const struct an_rule *r, int sev, int64_t seq,
			const int64_t *related, size_t nrelated, const char *text)
{
	struct an_finding *f, one;
	const struct an_msg *m = e->cur;

	if (e->sink) {
		f = &one;
	} else {
		if (e->nfindings == e->capfindings) {
			e->capfindings = e->capfindings ? e->capfindings * 2 : 16;
			e->findings = mt_realloc(e->findings, e->capfindings * sizeof(*e->findings));
		}
		f = &e->findings[e->nfindings++];
	}
	memset(f, 0, sizeof(*f));
	f->rule = r;
	f->sev = sev >= 0 ? (enum an_severity)sev : an_rule_severity(r, e->st.version);
	f->seq = seq;
	if (nrelated) {
		f->related = mt_malloc(nrelated * sizeof(*related));
		memcpy(f->related, related, nrelated * sizeof(*related));
		f->nrelated = nrelated;
	}
	/* Quoted bytes, or a cut in the middle of a character, must not make the
	 * text unprintable in JSON and SARIF (Jansson refuses invalid UTF-8). */
	if (mt_utf8_invalid(text, strlen(text)) >= 0) {
		struct mt_buf b = MT_BUF_INIT;
		mt_utf8_lossy(text, strlen(text), &b);
		f->text = mt_strdup(b.data);
		mt_buf_release(&b);
	} else {
		f->text = mt_strdup(text);
	}
	if (m && seq == m->seq) {
		f->have_msg = 1;
		f->dir = m->dir;
		f->method = m->method ? mt_strdup(m->method) : NULL;
		if (m->cls && m->cls->idtype != MT_ID_NONE)
			f->id = mt_strndup(m->cls->id.p, m->cls->id.n);
	} else if (seq > 0) {
		/* Another message: a request we know, when it is one. Requests are
		 * kept in seq order, so a binary search finds it. */
		size_t lo = 0, hi = e->st.nrequests;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (e->st.requests[mid].seq < seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < e->st.nrequests && e->st.requests[lo].seq == seq) {
			f->have_msg = 1;
			f->dir = e->st.requests[lo].dir;
			f->method = mt_strdup(e->st.requests[lo].method);
		}
	}
	if (f == &one) {
		e->sink(f, e->sink_ctx);
		free(one.related);
		free(one.text);
		free(one.method);
		free(one.id);
	}
}

void an_report_at(const struct an_ctx *c, int sev, int64_t seq, const int64_t *related,
		  size_t nrelated, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	add_finding(c->engine, c->rule, sev, seq, related, nrelated, text);
}

void an_report(const struct an_ctx *c, int sev, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	add_finding(c->engine, c->rule, sev, c->m ? c->m->seq : 0, NULL, 0, text);
}

/* ---- dispatch ---- */

static void run_list(struct an_engine *e, const struct rule_list *l, const struct an_msg *m)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct an_rule *r = l->v[i];
		struct an_ctx c = {&e->st, m, r, e};
		if (!(r->versions & AN_V(e->st.version)))
			continue;
		r->check(&c);
	}
}

static void dispatch(struct an_engine *e, unsigned hook, const struct an_msg *m)
{
	int h = hook_index(hook);

	if (h < 0)
		return;
	e->cur = m;
	run_list(e, &e->any[h], m);
	if (m && m->method_id >= 0 && e->recs[m->method_id].list[h] >= 0)
		run_list(e, &e->lists[e->recs[m->method_id].list[h]], m);
}

/* Run the trackers hooked to this message, after the rules and the engine's update. */
static void track(struct an_engine *e, unsigned hook, const struct an_msg *m)
{
	int h = hook_index(hook);
	const struct tracker_list *l;

	if (h < 0)
		return;
	l = &e->trackers[h];
	for (size_t i = 0; i < l->n; i++) {
		const struct an_tracker *k = l->v[i].k;
		if (l->v[i].method_id >= 0 && (!m || m->method_id != l->v[i].method_id))
			continue;
		struct an_ctx c = {&e->st, m, NULL, e};
		k->update(&c, l->v[i].ext);
	}
}

static unsigned hook_of(enum mt_kind k)
{
	switch (k) {
	case MT_REQUEST: return AN_ON_REQUEST;
	case MT_NOTIFICATION: return AN_ON_NOTIFICATION;
	case MT_RESPONSE: return AN_ON_RESPONSE;
	case MT_ERROR: return AN_ON_ERROR;
	case MT_BATCH: return AN_ON_BATCH;
	case MT_INVALID: return AN_ON_INVALID;
	default: return AN_ON_NOTJSONRPC;
	}
}

/*
 * The record of a method name (created when new): its stable name and its
 * rule lists. A name with a NUL counts up to the NUL.
 */
static int64_t method_record(struct an_engine *e, const char *s, size_t n)
{
	int64_t idx;
	const char *nul = memchr(s, '\0', n);

	if (nul)
		n = (size_t)(nul - s);
	if (e->last_rec >= 0 && e->recs[e->last_rec].len == n &&
	    !memcmp(e->recs[e->last_rec].name, s, n))
		return e->last_rec;
	if (!mt_map_get(&e->rec_by_name, s, n, &idx)) {
		if (e->nrecs == e->caprecs) {
			e->caprecs = e->caprecs ? e->caprecs * 2 : 32;
			e->recs = mt_realloc(e->recs, e->caprecs * sizeof(*e->recs));
		}
		struct method_rec *r = &e->recs[e->nrecs];
		r->name = mt_strndup(s, n);
		r->len = n;
		r->keep = keep_params(r->name);
		r->engine = engine_method(r->name);
		for (int h = 0; h < HOOK_COUNT; h++)
			r->list[h] = -1;
		idx = (int64_t)e->nrecs++;
		mt_map_put(&e->rec_by_name, s, n, idx);
	}
	e->last_rec = idx;
	return idx;
}

json_t *an_req_params(const struct an_request *rc)
{
	struct an_request *r = (struct an_request *)rc; /* a cache: logically const */

	if (!r)
		return NULL;
	if (!r->params && r->raw) {
		json_t *msg = json_loadb(r->raw, r->raw_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		r->params = json_incref(json_object_get(msg, "params"));
		json_decref(msg);
		free(r->raw);
		r->raw = NULL;
	}
	return r->params;
}

/* Methods whose messages change the engine's state (the rest skip its updates). */
static int engine_method(const char *method)
{
	static const char *const own[] = {
		"initialize", "server/discover", "tools/list",
		"resources/subscribe", "resources/unsubscribe", "notifications/initialized",
		"notifications/cancelled", "notifications/progress", "notifications/tasks/status",
		NULL,
	};

	if (!strncmp(method, "tasks/", 6))
		return 1;
	for (size_t i = 0; own[i]; i++)
		if (!strcmp(method, own[i]))
			return 1;
	return 0;
}

/* Methods whose params the answers are checked against. */
static int keep_params(const char *method)
{
	static const char *const keep[] = {
		"initialize", "tools/call", "tools/list", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "elicitation/create",
		"sampling/createMessage", "tasks/get", "tasks/result", "tasks/cancel",
		"tasks/list", "completion/complete", "logging/setLevel", "roots/list",
		"server/discover", "subscriptions/listen", NULL,
	};

	for (size_t i = 0; keep[i]; i++)
		if (!strcmp(method, keep[i]))
			return 1;
	return 0;
}

static struct an_request *new_request(struct an_state *st)
{
	if (st->nrequests == st->caprequests) {
		st->caprequests = st->caprequests ? st->caprequests * 2 : 64;
		st->requests = mt_realloc(st->requests, st->caprequests * sizeof(*st->requests));
	}
	struct an_request *r = &st->requests[st->nrequests++];
	memset(r, 0, sizeof(*r));
	return r;
}

static char *dup_string(json_t *v)
{
	return json_is_string(v) ? mt_strdup(json_string_value(v)) : NULL;
}

/*
 * Decide the revision from the handshake (unless --spec fixed it). A session
 * with an initialize is stateful: an unknown revision maps to the nearest of
 * the four stateful ones, never to 2026-07-28.
 */
static void set_version(struct an_engine *e, const char *name, const char *source)
{
	enum an_version v;

	if (e->o.force_version || !name)
		return;
	if (an_version_parse(name, &v) == 0) {
		e->st.version = v;
		e->st.version_source = source;
	} else {
		e->st.version = an_version_nearest(name);
		if (e->st.version == AN_V2026_07_28 && e->st.phase != AN_PH_STATELESS)
			e->st.version = AN_V2025_11_25;
		e->st.version_source = "nearest";
	}
}

/* Does the message's method (or its request's) matter to the engine's state? */
static int is_engine_method(const struct an_engine *e, const struct an_msg *m)
{
	return m->method_id >= 0 && e->recs[m->method_id].engine;
}

/* State changes that a request makes, after its rules ran. */
static void after_request(struct an_engine *e, struct an_msg *m, struct an_request *r)
{
	struct an_state *st = &e->st;
	size_t idx = (size_t)(r - st->requests);
	json_t *params = NULL;

	mt_map_put(&st->open[m->dir], m->id_key, m->id_key_len, (int64_t)idx);
	mt_map_put(&st->used[m->dir], m->id_key, m->id_key_len, (int64_t)idx);
	if (r->has_token) {
		/* The token's key from its bytes: the same key an_key_of makes (for a
		 * string or a number; anything else goes through an_key_of). */
		char first = m->cls->progress_token.p[0];
		if (first == '"' || first == '-' || (first >= '0' && first <= '9'))
			key_of_token(first == '"' ? MT_ID_STRING : MT_ID_NUMBER, m->cls->progress_token,
				     &e->key);
		else
			an_key_of(r->progress_token, &e->key);
		mt_map_put(&st->tokens[m->dir], e->key.data, e->key.len, (int64_t)idx);
	}
	if (!is_engine_method(e, m))
		return;
	if (!strcmp(r->method, "initialize") && m->dir == AN_C2S) {
		params = json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "params");
		st->init_count++;
		if (!st->init_seq)
			st->init_seq = m->seq;
		/* A handshake after stateless requests: the legacy protocol takes over. */
		if (st->phase == AN_PH_START || st->phase == AN_PH_STATELESS)
			st->phase = AN_PH_INITIALIZING;
		free(st->requested);
		st->requested = dup_string(json_object_get(params, "protocolVersion"));
		if (!st->negotiated)
			set_version(e, st->requested, "requested");
		json_decref(st->client_caps);
		st->client_caps = json_incref(json_object_get(params, "capabilities"));
	}
}

/* Does a result object have a "task" or a "nextCursor" member (on the bytes)? */
static int result_has_task_or_cursor(struct mt_span result)
{
	struct mt_span k, v;
	size_t pos = 0;

	while (mt_json_next_member(result, &pos, &k, &v) == 1)
		if ((k.n == 6 && !memcmp(k.p, "\"task\"", 6)) ||
		    (k.n == 12 && !memcmp(k.p, "\"nextCursor\"", 12)) || memchr(k.p, '\\', k.n))
			return 1;
	return 0;
}

/* State changes that an answer makes, after its rules ran. */
static void after_answer(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	struct an_request *r = m->req;
	json_t *result;

	if (!r)
		return;
	if (!r->answer_seq) {
		r->answer_seq = m->seq;
		r->answer_t_ns = m->t_ns;
		int64_t idx;
		(void)mt_map_take(&st->open[r->dir], m->id_key, m->id_key_len, &idx);
	}
	if (m->cls->kind != MT_RESPONSE) {
		/* A refused handshake (the latest one: a client may try again). */
		if (is_engine_method(e, m) && !strcmp(r->method, "initialize") && r->dir == AN_C2S &&
		    st->phase == AN_PH_INITIALIZING)
			st->phase = AN_PH_FAILED;
		return;
	}
	/* Parse only answers that change the state: a cheap look at the bytes first. */
	if (!is_engine_method(e, m) && !result_has_task_or_cursor(m->cls->result))
		return;
	result = json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "result");
	if (json_is_object(result) && json_is_object(json_object_get(result, "task")) &&
	    !json_object_get(result, "content") && strcmp(r->method, "tasks/get"))
		r->is_task = 1;
	if (!strcmp(r->method, "initialize") && r->dir == AN_C2S &&
	    !(st->init_answer_seq && st->phase != AN_PH_FAILED && st->phase != AN_PH_INITIALIZING)) {
		/* The first successful handshake sets the session up; a retry after a
		 * refusal counts as the handshake too. */
		st->init_answer_seq = m->seq;
		if (st->phase == AN_PH_INITIALIZING || st->phase == AN_PH_FAILED ||
		    st->phase == AN_PH_START)
			st->phase = AN_PH_INITIALIZED;
		free(st->negotiated);
		st->negotiated = dup_string(json_object_get(result, "protocolVersion"));
		if (st->negotiated)
			set_version(e, st->negotiated, "negotiated");
		json_decref(st->server_caps);
		st->server_caps = json_incref(json_object_get(result, "capabilities"));
	} else if (!strcmp(r->method, "server/discover") && json_is_object(json_object_get(result, "capabilities"))) {
		/* 2026-07-28: what the server offers is in its discover result. */
		json_decref(st->server_caps);
		st->server_caps = json_incref(json_object_get(result, "capabilities"));
	} else if (!strcmp(r->method, "tools/list") && json_is_array(json_object_get(result, "tools"))) {
		if (!json_object_get(an_req_params(r), "cursor"))
			json_object_clear(st->tools);
		size_t i;
		json_t *tool;
		json_array_foreach(json_object_get(result, "tools"), i, tool) {
			const char *name = json_string_value(json_object_get(tool, "name"));
			if (name)
				json_object_set(st->tools, name, tool);
		}
	} else if (!strcmp(r->method, "resources/subscribe")) {
		const char *uri = json_string_value(json_object_get(an_req_params(r), "uri"));
		if (uri)
			json_object_set_new(st->subscriptions, uri, json_integer(m->seq));
	} else if (!strcmp(r->method, "resources/unsubscribe")) {
		const char *uri = json_string_value(json_object_get(an_req_params(r), "uri"));
		if (uri)
			json_object_del(st->subscriptions, uri);
	}
	const char *next = json_string_value(json_object_get(result, "nextCursor"));
	if (next) {
		json_t *list = json_object_get(st->cursors, r->method);
		if (!list) {
			list = json_array();
			json_object_set_new(st->cursors, r->method, list);
		}
		json_array_append_new(list, json_string(next));
	}
	json_t *task = json_object_get(result, "task");
	if (!json_is_object(task) && r->method && !strncmp(r->method, "tasks/", 6) &&
	    json_object_get(result, "taskId"))
		task = result;
	if (json_is_object(task) && json_is_string(json_object_get(task, "taskId"))) {
		json_t *t = json_pack("{s:O?,s:I,s:i}", "status", json_object_get(task, "status"),
				      "seq", (json_int_t)m->seq, "dir", (int)r->dir);
		json_object_set_new(st->tasks, json_string_value(json_object_get(task, "taskId")), t);
	}
}

/* State changes that a notification makes, after its rules ran. */
static void after_notification(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	struct an_ctx ctx = {st, m, NULL, e};
	json_t *params = NULL;

	if (!is_engine_method(e, m))
		return;
	/* Only these need the params; progress reads its two members alone. */
	if (!strcmp(m->method, "notifications/cancelled") ||
	    !strcmp(m->method, "notifications/tasks/status"))
		params = an_params(&ctx);

	if (!strcmp(m->method, "notifications/initialized") && m->dir == AN_C2S) {
		if (!st->initialized_seq)
			st->initialized_seq = m->seq;
		if (st->phase == AN_PH_INITIALIZED)
			st->phase = AN_PH_OPERATING;
	} else if (!strcmp(m->method, "notifications/cancelled")) {
		json_t *rid = json_object_get(params, "requestId");
		if (rid) {
			an_key_of(rid, &e->key);
			struct an_request *r = an_find_request(st, m->dir, e->key.data, e->key.len);
			if (r && !r->cancel_seq) {
				r->cancel_seq = m->seq;
				r->cancel_t_ns = m->t_ns;
			}
		}
	} else if (!strcmp(m->method, "notifications/progress")) {
		json_t *tok = an_params_member(&ctx, "progressToken");
		json_t *prog = an_params_member(&ctx, "progress");
		if (tok && json_is_number(prog)) {
			an_key_of(tok, &e->key);
			json_object_set(st->last_progress, e->key.data, prog);
		}
	} else if (!strcmp(m->method, "notifications/tasks/status")) {
		const char *id = json_string_value(json_object_get(params, "taskId"));
		json_t *t = id ? json_object_get(st->tasks, id) : NULL;
		if (t)
			json_object_set(t, "status", json_object_get(params, "status"));
	}
}

/* 2026-07-28: no handshake; the first request carries its revision in _meta. */
static void detect_stateless(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	json_t *v;

	if (st->phase != AN_PH_START || m->cls->kind != MT_REQUEST || m->dir != AN_C2S ||
	    !strcmp(m->method, "initialize"))
		return;
	v = an_path(json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "params"), "_meta");
	v = json_object_get(v, "io.modelcontextprotocol/protocolVersion");
	if (!json_is_string(v))
		return;
	st->phase = AN_PH_STATELESS;
	free(st->requested);
	st->requested = mt_strdup(json_string_value(v));
	if (!e->o.force_version) {
		enum an_version ver;
		if (an_version_parse(st->requested, &ver) == 0 || strcmp(st->requested, "2026-07-28") > 0) {
			st->version = AN_V2026_07_28;
			st->version_source = an_version_parse(st->requested, &ver) == 0 ? "requested" : "nearest";
		} else {
			set_version(e, st->requested, "requested");
		}
	}
	v = an_path(json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "params"), "_meta");
	json_decref(st->client_caps);
	st->client_caps = json_incref(json_object_get(v, "io.modelcontextprotocol/clientCapabilities"));
}

static void finish_message(struct an_engine *e)
{
	for (int i = 0; i < e->nmembers; i++)
		json_decref(e->members[i].value);
	e->nmembers = 0;
	json_decref(e->cur_json);
	e->cur_json = NULL;
	e->cur_parsed = 0;
	e->cur = NULL;
}

/* One JSON-RPC message (a line, or an element of a batch). */
/* A number no other message fed to any engine of this process has (rules memoize by it). */
static uint64_t next_serial(void)
{
	static uint64_t serial;

	return ++serial;
}

static void feed_message(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	const struct mt_class *c = m->cls;
	struct mt_buf *idkey = m->in_batch ? &e->idkey2 : &e->idkey;
	unsigned hook = hook_of(c->kind);

	m->serial = next_serial();
	/* Only a string is a method (a non-string one makes the message notjsonrpc). */
	m->method_id = -1;
	if (c->method.n >= 2 && c->method.p[0] == '"') {
		if (!memchr(c->method.p, '\\', c->method.n))
			m->method_id = method_record(e, c->method.p + 1, c->method.n - 2);
		else if (mt_json_string(c->method, &e->scratch) == 0)
			m->method_id = method_record(e, e->scratch.data ? e->scratch.data : "",
						     e->scratch.len);
		if (m->method_id >= 0)
			m->method = e->recs[m->method_id].name;
	}
	key_of_token(c->idtype, c->id, idkey);
	m->id_key = idkey->data ? idkey->data : "";
	m->id_key_len = idkey->len;
	st->messages++;
	if (c->kind <= MT_ERROR)
		st->rpc_messages++;
	st->last_t_ns = m->t_ns;

	if (c->kind == MT_REQUEST) {
		detect_stateless(e, m);
		struct an_request *r = new_request(st);
		r->seq = m->seq;
		r->t_ns = m->t_ns;
		r->dir = m->dir;
		r->method = m->method;
		r->method_id = m->method_id;
		r->in_batch = m->in_batch != 0;
		if (m->method_id >= 0 && e->recs[m->method_id].keep) {
			/* The params are parsed when a rule asks (an_req_params); until then
			 * the request keeps its bytes. */
			r->raw = mt_malloc(m->raw_len ? m->raw_len : 1);
			memcpy(r->raw, m->raw, m->raw_len);
			r->raw_len = m->raw_len;
		}
		if (c->token_type != MT_ID_NONE && c->progress_token.n) {
			json_t *tok = json_loadb(c->progress_token.p, c->progress_token.n,
						 JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
			if (tok) {
				r->has_token = 1;
				r->progress_token = tok;
			}
		}
		m->req = r;
		/* The client's initialize says which revision it speaks: its own rules
		 * are checked against that one (until the server answers). */
		if (m->dir == AN_C2S && !st->negotiated && is_engine_method(e, m) &&
		    !strcmp(m->method, "initialize"))
			set_version(e, json_string_value(an_path(an_params(&(struct an_ctx){st, m, NULL, e}),
								 "protocolVersion")),
				    "requested");
		dispatch(e, hook, m);
		/* The array may have moved: find the record again by its index. */
		after_request(e, m, &st->requests[st->nrequests - 1]);
		m->req = &st->requests[st->nrequests - 1];
		track(e, hook, m);
	} else if (c->kind == MT_RESPONSE || c->kind == MT_ERROR) {
		int64_t idx;
		enum an_dir sender = m->dir == AN_C2S ? AN_S2C : AN_C2S;
		if (c->idtype != MT_ID_NONE && c->idtype != MT_ID_NULL &&
		    (mt_map_get(&st->open[sender], m->id_key, m->id_key_len, &idx) ||
		     mt_map_get(&st->used[sender], m->id_key, m->id_key_len, &idx)))
			m->req = &st->requests[idx];
		if (m->req) {
			m->method = m->req->method;
			m->method_id = m->req->method_id;
		}
		dispatch(e, hook, m);
		after_answer(e, m);
		track(e, hook, m);
		/* Answered: its params are not needed again (the handshake's are kept). */
		if (m->req && strcmp(m->req->method, "initialize")) {
			json_decref(m->req->params);
			m->req->params = NULL;
			free(m->req->raw);
			m->req->raw = NULL;
		}
	} else if (c->kind == MT_NOTIFICATION) {
		dispatch(e, hook, m);
		after_notification(e, m);
		track(e, hook, m);
	} else {
		dispatch(e, hook, m);
		track(e, hook, m);
	}
	finish_message(e);
}

void an_engine_feed(struct an_engine *e, const struct store_item *it)
{
	struct mt_class c;
	struct an_msg m;

	if (it->type == STORE_ITEM_GAP)
		return;
	memset(&m, 0, sizeof(m));
	m.method_id = -1;
	m.seq = it->seq;
	m.t_ns = it->t_ns;
	m.raw = it->raw;
	m.raw_len = it->raw_len;
	m.incomplete = it->incomplete;
	if (it->type == STORE_ITEM_STDERR) {
		m.serial = next_serial();
		m.dir = AN_S2C;
		memset(&c, 0, sizeof(c));
		c.kind = MT_INVALID;
		m.cls = &c;
		dispatch(e, AN_ON_STDERR, &m);
		track(e, AN_ON_STDERR, &m);
		finish_message(e);
		return;
	}
	m.dir = it->dir && !strcmp(it->dir, "c2s") ? AN_C2S : AN_S2C;
	/* What the tap stored as JSON was validated then: scan it, do not check it again. */
	if (it->kind && strcmp(it->kind, "invalid"))
		mt_classify_trusted(it->raw, it->raw_len, &c);
	else
		mt_classify(it->raw, it->raw_len, &c);
	/* A method with escapes that do not decode means the bytes were not what the
	 * store said (a damaged or foreign file): classify them for real. */
	if (c.method.n && memchr(c.method.p, '\\', c.method.n) &&
	    mt_json_string(c.method, &e->scratch))
		mt_classify(it->raw, it->raw_len, &c);
	m.cls = &c;
	feed_message(e, &m);
	if (c.kind == MT_BATCH) {
		struct mt_span arr = {it->raw, it->raw_len}, el;
		size_t pos = 0;
		while (arr.n && *arr.p != '[') /* leading whitespace */
			arr.p++, arr.n--;
		while (mt_json_next_element(arr, &pos, &el) == 1) {
			struct mt_class ec;
			struct an_msg em = m;
			mt_classify(el.p, el.n, &ec);
			if (ec.kind == MT_BATCH) { /* batches do not nest */
				ec.kind = MT_NOTJSONRPC;
				ec.batch_size = 0;
				ec.error = "an array inside a batch";
			}
			em.cls = &ec;
			em.raw = el.p;
			em.raw_len = el.n;
			em.in_batch = m.seq;
			em.method = NULL;
			em.req = NULL;
			feed_message(e, &em);
		}
	}
}

void an_engine_end(struct an_engine *e)
{
	dispatch(e, AN_ON_END, NULL);
}
