/*
 * engine.c - the rule engine (see analyze.h): one pass over a session, a
 * lifecycle state machine, and rule dispatch by hook and method.
 *
 * Memory follows the requests still open, not the session's length: a request
 * is kept in full while open, then among the AN_RECENT latest settled ones,
 * then only as its id in compact sets (ranges for counters, 64-bit hashes for
 * the rest). What a rule needs later about a settled request lives in its
 * record (answer, cancel, task, last progress) for as long as it is kept.
 *
 * One cause, one finding: the engine decides what a message is before the
 * rules see it. A message beyond the JSON parser's limits is reported once
 * (TAP-002) and read by no rule; one refused only for its "jsonrpc"
 * member is followed for what it is (its answer answers it) while the rules
 * see it as not JSON-RPC; a request its sender may not send, a second answer
 * and the answer to a flawed request get only the rules on their form
 * (AN_FRAMING); a capture gap is reported once (TAP-001) and settles the
 * requests whose answer or cancel it may hold.
 */
#include "analyze/analyze.h"
#include "analyze/methods.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

	if (!s || sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 || s[10] || m < 1 || m > 12 ||
	    d < 1 || d > 31)
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
	case AN_SEV_MUST_0618: return v >= AN_V2025_06_18 ? AN_ERROR : AN_WARNING;
	case AN_SEV_MUST_0326: return v >= AN_V2025_03_26 ? r->sev : AN_INFO;
	default: return r->sev;
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

/* ---- compact id sets (see struct an_idset) ---- */

/* Ranges per class before new ids of that class go to bitmaps, and bitmap
 * chunks (of CHUNK_IDS ids) per class before they go to the hash table. */
#define IDSET_RANGES 1024
#define CHUNK_IDS 4096
#define CHUNK_WORDS (CHUNK_IDS / 64)
#define IDSET_CHUNKS 2048
#define IDSET_CLASSES (sizeof(((struct an_idset *)0)->cls) / sizeof(((struct an_idset *)0)->cls[0]))

/*
 * FNV-1a, then a final mix so that the low bits place well. Never 0. Ids that
 * are no counter are kept as this hash alone: two ids with the same hash
 * (about n^2 / 2^65 for n such ids) are one to the set, so the second would be
 * taken for a reuse of the first (RPC-003), or an answer to it for a second
 * answer (RPC-004), once their records are no longer kept.
 */
static uint64_t hash64(const void *key, size_t n)
{
	uint64_t h = mt_fnv1a(key, n);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;
}

/* A canonical decimal integer (no leading zero, no "-0", fits in int64): 1 and *v. */
static int canonical_int(const char *p, size_t n, int64_t *v)
{
	size_t i = p && n && p[0] == '-' ? 1 : 0;
	uint64_t acc = 0, limit = i ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (!p || i == n || n - i > 19 || (p[i] == '0' && (n - i > 1 || i)))
		return 0;
	for (size_t k = i; k < n; k++) {
		if (p[k] < '0' || p[k] > '9')
			return 0;
		unsigned d = (unsigned)(p[k] - '0');
		if (acc > (limit - d) / 10)
			return 0;
		acc = acc * 10 + d;
	}
	*v = i ? (int64_t)(0 - acc) : (int64_t)acc;
	return 1;
}

/*
 * Which range class an id key belongs to: 1 with *prefix and *v for an
 * integer ("n:17": prefix 0) or a string ending in a counter ("s:req-17": the
 * hash of "s:req-"), else 0 (the key goes to the hash table).
 */
static int id_class(const char *key, size_t n, uint64_t *prefix, int64_t *v)
{
	size_t d = 0;

	if (n > 2 && !memcmp(key, "n:", 2)) {
		*prefix = 0;
		/* Far from 0 an integer is no counter: the table (and no overflow near the ends). */
		return canonical_int(key + 2, n - 2, v) && *v > INT64_MIN / 2 && *v < INT64_MAX / 2;
	}
	if (n < 3 || memcmp(key, "s:", 2))
		return 0;
	while (d < n - 2 && key[n - 1 - d] >= '0' && key[n - 1 - d] <= '9')
		d++;
	if (!d || d > 18 || !canonical_int(key + n - d, d, v))
		return 0;
	*prefix = hash64(key, n - d);
	return 1;
}

/* The class for prefix (created when there is room, when add is set), or NULL. */
static struct an_id_class *class_of(struct an_idset *s, uint64_t prefix, int add)
{
	for (size_t i = 0; i < s->ncls; i++)
		if (s->cls[i].prefix == prefix)
			return &s->cls[i];
	if (!add || s->ncls == IDSET_CLASSES)
		return NULL;
	s->cls[s->ncls].prefix = prefix;
	return &s->cls[s->ncls++];
}

/* The index of the first range whose lo is above v. */
static size_t range_after(const struct an_id_class *k, int64_t v)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->r[2 * mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int range_has(const struct an_id_class *k, int64_t v)
{
	size_t i;

	if (!k || !k->n)
		return 0;
	if (v >= k->r[2 * (k->n - 1)]) /* the usual case: the latest range */
		return v <= k->r[2 * k->n - 1];
	i = range_after(k, v);
	return i > 0 && v <= k->r[2 * i - 1];
}

/* Add v to the class's ranges: 1 when it was in, 0 when added, -1 when full. */
static int range_add(struct an_id_class *k, int64_t v)
{
	size_t i;

	if (k->n && v >= k->r[2 * (k->n - 1)]) {
		/* The counting case: v is in or right after the latest range. */
		if (v <= k->r[2 * k->n - 1])
			return 1;
		if (v - 1 == k->r[2 * k->n - 1]) {
			k->r[2 * k->n - 1] = v;
			return 0;
		}
		i = k->n;
	} else {
		i = range_after(k, v);
		if (i > 0 && v <= k->r[2 * i - 1])
			return 1;
	}
	int joins_prev = i > 0 && k->r[2 * i - 1] == v - 1;
	int joins_next = i < k->n && k->r[2 * i] == v + 1;
	if (joins_prev && joins_next) {
		k->r[2 * i - 1] = k->r[2 * i + 1];
		memmove(&k->r[2 * i], &k->r[2 * i + 2], (k->n - i - 1) * 2 * sizeof(*k->r));
		k->n--;
		return 0;
	}
	if (joins_prev) {
		k->r[2 * i - 1] = v;
		return 0;
	}
	if (joins_next) {
		k->r[2 * i] = v;
		return 0;
	}
	if (k->n == IDSET_RANGES)
		return -1;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 4;
		k->r = mt_realloc(k->r, k->cap * 2 * sizeof(*k->r));
	}
	memmove(&k->r[2 * i + 2], &k->r[2 * i], (k->n - i) * 2 * sizeof(*k->r));
	k->r[2 * i] = k->r[2 * i + 1] = v;
	k->n++;
	return 0;
}

/* The chunk holding v, or NULL; *at gets where it would go. */
static struct an_id_chunk *chunk_of(const struct an_id_class *k, int64_t base, size_t *at)
{
	size_t lo = 0, hi = k->nchunk;

	if (hi && k->chunk[hi - 1].base <= base) /* the usual case: the latest */
		lo = hi - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k->chunk[mid].base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < k->nchunk && k->chunk[lo].base == base ? &k->chunk[lo] : NULL;
}

static int64_t chunk_base(int64_t v)
{
	int64_t mod = v % CHUNK_IDS;

	return mod < 0 ? v - mod - CHUNK_IDS : v - mod;
}

static int chunk_has(const struct an_id_class *k, int64_t v)
{
	size_t at;
	const struct an_id_chunk *c = k && k->nchunk ? chunk_of(k, chunk_base(v), &at) : NULL;
	uint64_t bit = (uint64_t)(v - chunk_base(v));

	return c && (c->bits[bit / 64] >> (bit % 64)) & 1;
}

/*
 * Add v to the class's bitmaps: 1 when it was in, 0 when added, -1 when it
 * does not go there (a new chunk only for an id near the top, the counting
 * case, and while there are fewer than IDSET_CHUNKS).
 */
static int chunk_add(struct an_id_class *k, int64_t v)
{
	int64_t base = chunk_base(v);
	uint64_t bit = (uint64_t)(v - base);
	size_t at;
	struct an_id_chunk *c = chunk_of(k, base, &at);

	if (!c) {
		if (k->nchunk == IDSET_CHUNKS || v < k->max - CHUNK_IDS)
			return -1;
		if (k->nchunk == k->capchunk) {
			k->capchunk = k->capchunk ? k->capchunk * 2 : 4;
			k->chunk = mt_realloc(k->chunk, k->capchunk * sizeof(*k->chunk));
		}
		memmove(&k->chunk[at + 1], &k->chunk[at], (k->nchunk - at) * sizeof(*k->chunk));
		c = &k->chunk[at];
		c->base = base;
		c->bits = mt_calloc(CHUNK_WORDS, sizeof(*c->bits));
		k->nchunk++;
	}
	if ((c->bits[bit / 64] >> (bit % 64)) & 1)
		return 1;
	c->bits[bit / 64] |= (uint64_t)1 << (bit % 64);
	return 0;
}

static int hash_has(const struct an_idset *s, uint64_t h)
{
	if (!s->hcap)
		return 0;
	for (size_t i = h & (s->hcap - 1);; i = (i + 1) & (s->hcap - 1)) {
		if (s->hash[i] == h)
			return 1;
		if (!s->hash[i])
			return 0;
	}
}

static void hash_put(struct an_idset *s, uint64_t h)
{
	if ((s->hlen + 1) * 2 > s->hcap) {
		uint64_t *old = s->hash;
		size_t oldcap = s->hcap;
		s->hcap = oldcap ? oldcap * 2 : 64;
		s->hash = mt_calloc(s->hcap, sizeof(*s->hash));
		for (size_t j = 0; j < oldcap; j++)
			if (old[j]) {
				size_t i = old[j] & (s->hcap - 1);
				while (s->hash[i])
					i = (i + 1) & (s->hcap - 1);
				s->hash[i] = old[j];
			}
		free(old);
	}
	size_t i = h & (s->hcap - 1);
	while (s->hash[i])
		i = (i + 1) & (s->hcap - 1);
	s->hash[i] = h;
	s->hlen++;
}

void an_idset_init(struct an_idset *s)
{
	memset(s, 0, sizeof(*s));
}

void an_idset_release(struct an_idset *s)
{
	for (size_t i = 0; i < s->ncls; i++) {
		free(s->cls[i].r);
		for (size_t j = 0; j < s->cls[i].nchunk; j++)
			free(s->cls[i].chunk[j].bits);
		free(s->cls[i].chunk);
	}
	free(s->hash);
	an_idset_init(s);
}

int an_idset_has(const struct an_idset *s, const char *key, size_t n)
{
	uint64_t prefix;
	int64_t v;
	const struct an_id_class *k;

	if (id_class(key, n, &prefix, &v) && (k = class_of((struct an_idset *)s, prefix, 0)) &&
	    (range_has(k, v) || chunk_has(k, v)))
		return 1;
	return hash_has(s, hash64(key, n));
}

int an_idset_add(struct an_idset *s, const char *key, size_t n)
{
	uint64_t prefix, h;
	int64_t v;
	struct an_id_class *k;
	int in = an_idset_has(s, key, n);

	if (in)
		return 1;
	/* Ranges first, then bitmaps, then the table: an id is in one of them. */
	if (id_class(key, n, &prefix, &v) && (k = class_of(s, prefix, 1))) {
		if (!k->n && !k->nchunk)
			k->max = v;
		if (range_add(k, v) >= 0 || chunk_add(k, v) >= 0) {
			if (v > k->max)
				k->max = v;
			return 0;
		}
		if (v > k->max)
			k->max = v;
	}
	h = hash64(key, n);
	hash_put(s, h);
	return 0;
}

size_t an_idset_bytes(const struct an_idset *s)
{
	size_t n = s->hcap * sizeof(*s->hash);

	for (size_t i = 0; i < s->ncls; i++)
		n += s->cls[i].cap * 2 * sizeof(*s->cls[i].r) +
		     s->cls[i].capchunk * sizeof(*s->cls[i].chunk) +
		     s->cls[i].nchunk * CHUNK_WORDS * sizeof(uint64_t);
	return n;
}

/* ---- the engine ---- */

#define HOOK_COUNT 12

/* A cancelled request still unanswered this long after its cancel is settled. */
#define SETTLE_NS 1000000000LL

struct rule_list {
	const struct an_rule **v;
	size_t n, cap;
};

/* The trackers of one hook, each with its family's object in st.ext (borrowed). */
struct tracker_ref {
	const struct an_tracker *k;
	json_t *ext;
	int64_t method_id; /* the tracker's method's record, or -1 for any */
};

struct tracker_list {
	struct tracker_ref *v;
	size_t n;
};

struct method_rec {
	char *name; /* owned; stable while the engine lives */
	size_t len;
	int64_t list[HOOK_COUNT]; /* index into lists[] per hook, or -1 */
	int keep;                 /* keep_params(name) */
	int engine;               /* the engine's own state depends on it */
};

/* Where a request record is (an_request.where). */
enum { W_NONE, W_OPEN, W_FLAWED, W_RING, W_PINNED, W_FREE };

/* A doubly linked list of request records (through open_next / open_prev). */
struct req_list {
	struct an_request *first, *last;
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
	struct mt_map rec_by_name; /* name -> index into recs */
	struct rule_list *lists;
	size_t nlists;
	/* The findings (owned), or where they go. */
	struct an_finding *findings;
	size_t nfindings, capfindings;
	void (*sink)(const struct an_finding *f, void *ctx);
	void *sink_ctx;
	/* Request records (all owned): open ones (st.open_first is open.first),
	 * flawed open ones, the ring of the latest settled ones, the pinned ones
	 * (the first initialize, the requests of tasks not yet terminal), and a
	 * free list to reuse. */
	struct req_list open, flawed, pinned, spare;
	struct req_list cancels; /* open and cancelled, by cancel time (cancel_next) */
	struct an_request *ring[AN_RECENT];
	size_t ring_head, ring_len;
	struct mt_map by_seq;   /* seq -> the first kept request of that seq */
	struct mt_map task_req; /* "dir:taskId" -> pinned request that created it */
	/* The current message. */
	struct {
		const char *key; /* a rule's literal */
		json_t *value;   /* owned */
	} members[4];            /* an_params_member's cache */
	int nmembers;
	json_t *cur_json;
	int cur_parsed;
	const struct an_msg *cur;
	int64_t last_rec; /* the last method record found: a cache */
	struct mt_buf key;
	struct mt_buf idkey, idkey2, scratch; /* per message (idkey2: inside a batch) */
	struct mt_buf lossy;  /* a message that is JSON-RPC but for its encoding, made UTF-8 */
	struct mt_buf joined; /* a message split across lines, joined (an_follow_joined) */
	int has_joined;
	int batch_unreadable; /* the batch being fed was beyond the parser's limits */
	/* HTTP: the exchanges kept (oldest first), by seq in xs. */
	struct an_exchange *xfirst, *xlast;
	struct mt_map xs; /* exchange seq -> struct an_exchange */
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
		mt_map_init(&e->st.recent[i], 0);
		mt_map_init(&e->st.tokens[i], 0);
		an_idset_init(&e->st.ids[i]);
		an_idset_init(&e->st.cancelled[i]);
		an_idset_init(&e->st.lost[i]);
	}
	an_idset_init(&e->st.cursors);
	mt_map_init(&e->by_seq, 0);
	mt_map_init(&e->task_req, 0);
	e->st.subscriptions = json_object();
	e->st.tools = json_object();
	e->st.tasks = json_object();
	mt_map_init(&e->rec_by_name, 0);
	mt_map_init(&e->xs, 0);
	mt_map_init(&e->st.http.events, AN_HTTP_EVENT_IDS);
	mt_map_init(&e->st.http.sent, AN_HTTP_EVENT_IDS);
	mt_map_init(&e->st.http.resent, AN_HTTP_EVENT_IDS);
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
				l->v[l->n].method_id =
					k->method ? method_record(e, k->method, strlen(k->method)) : -1;
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
			/* The end of a session, a gap and an unreadable message have no
			 * method: every rule hooked to them runs. */
			if (!r->method || (1u << h) == AN_ON_END || (1u << h) == AN_ON_GAP ||
			    (1u << h) == AN_ON_UNREADABLE) {
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

/* ---- request records ---- */

static void exchange_free(struct an_exchange *x);

static int64_t ptr_value(const struct an_request *r)
{
	return (int64_t)(intptr_t)r;
}

static struct an_request *map_request(const struct mt_map *m, const char *key, size_t n)
{
	int64_t v;

	return key && mt_map_get(m, key, n, &v) ? (struct an_request *)(intptr_t)v : NULL;
}

/* Remove key from m when it still names r. */
static void map_drop(struct mt_map *m, const char *key, size_t n, const struct an_request *r)
{
	int64_t v;

	if (key && mt_map_get(m, key, n, &v) && v == ptr_value(r))
		(void)mt_map_take(m, key, n, &v);
}

static void req_list_push(struct req_list *l, struct an_request *r)
{
	r->open_next = NULL;
	r->open_prev = l->last;
	if (l->last)
		l->last->open_next = r;
	else
		l->first = r;
	l->last = r;
}

static void req_list_unlink(struct req_list *l, struct an_request *r)
{
	if (r->open_prev)
		r->open_prev->open_next = r->open_next;
	else
		l->first = r->open_next;
	if (r->open_next)
		r->open_next->open_prev = r->open_prev;
	else
		l->last = r->open_prev;
	r->open_next = r->open_prev = NULL;
}

static void cancels_unlink(struct an_engine *e, struct an_request *r)
{
	if (!r->cancel_prev && e->cancels.first != r)
		return; /* not in it */
	if (r->cancel_prev)
		r->cancel_prev->cancel_next = r->cancel_next;
	else
		e->cancels.first = r->cancel_next;
	if (r->cancel_next)
		r->cancel_next->cancel_prev = r->cancel_prev;
	else
		e->cancels.last = r->cancel_prev;
	r->cancel_next = r->cancel_prev = NULL;
}

/* The key of a request's seq in by_seq. */
static const char *seq_key(const int64_t *seq)
{
	return (const char *)seq;
}

static struct an_request *new_request(struct an_engine *e)
{
	struct an_request *r = e->spare.first;

	if (r)
		req_list_unlink(&e->spare, r);
	else
		r = mt_malloc(sizeof(*r));
	memset(r, 0, sizeof(*r));
	r->number = ++e->st.nrequests;
	return r;
}

/* What a record owns, but its keys (which the maps are cleared with). */
static void free_payload(struct an_request *r)
{
	json_decref(r->params);
	r->params = NULL;
	free(r->raw);
	r->raw = NULL;
	json_decref(r->progress_token);
	r->progress_token = NULL;
}

static void free_record(struct an_request *r)
{
	free_payload(r);
	json_decref(r->last_progress);
	free(r->task_id);
	free(r->key);
	free(r->token_key);
	free(r);
}

/* Forget a settled request: only its id stays, in the compact sets. */
static void drop_request(struct an_engine *e, struct an_request *r)
{
	struct an_state *st = &e->st;

	map_drop(&st->recent[r->dir], r->key, r->key_len, r);
	map_drop(&st->tokens[r->dir], r->token_key, r->token_key_len, r);
	map_drop(&e->by_seq, seq_key(&r->seq), sizeof(r->seq), r);
	if (!r->answer_seq && r->key) {
		if (r->cancel_seq)
			an_idset_add(&st->cancelled[r->dir], r->key, r->key_len);
		else
			an_idset_add(&st->lost[r->dir], r->key, r->key_len);
	}
	free_payload(r);
	json_decref(r->last_progress);
	free(r->task_id);
	free(r->key);
	free(r->token_key);
	memset(r, 0, sizeof(*r));
	r->where = W_FREE;
	req_list_push(&e->spare, r);
}

static void ring_push(struct an_engine *e, struct an_request *r)
{
	if (e->ring_len == AN_RECENT) {
		drop_request(e, e->ring[e->ring_head]);
		e->ring_head = (e->ring_head + 1) % AN_RECENT;
		e->ring_len--;
	}
	e->ring[(e->ring_head + e->ring_len) % AN_RECENT] = r;
	e->ring_len++;
	r->where = W_RING;
}

/* The "dir:taskId" key of a task a request created, into e->key. */
static void task_key(struct an_engine *e, int dir, const char *id)
{
	mt_buf_reset(&e->key);
	mt_buf_printf(&e->key, "%d:", dir);
	mt_buf_puts(&e->key, id);
}

static int terminal_status(const char *s)
{
	return s && (!strcmp(s, "completed") || !strcmp(s, "failed") || !strcmp(s, "cancelled"));
}

/* The static name of a terminal status. */
static const char *terminal_name(const char *s)
{
	return !strcmp(s, "completed") ? "completed" : !strcmp(s, "failed") ? "failed" : "cancelled";
}

/*
 * A request is settled: it leaves the open requests (answered, cancelled a
 * while ago, or cut off by a gap). Its params go, its record is kept among
 * the latest settled ones, or pinned while a task it created is not terminal
 * (and for the session's first initialize).
 */
static void settle(struct an_engine *e, struct an_request *r)
{
	struct an_state *st = &e->st;

	if (r->where == W_OPEN) {
		req_list_unlink(&e->open, r);
		st->open_first = e->open.first;
		st->nopen--;
	} else if (r->where == W_FLAWED) {
		req_list_unlink(&e->flawed, r);
	} else {
		return;
	}
	cancels_unlink(e, r);
	map_drop(&st->open[r->dir], r->key, r->key_len, r);
	if (r->key)
		mt_map_put(&st->recent[r->dir], r->key, r->key_len, ptr_value(r));
	if (r == st->init_request) {
		r->where = W_PINNED;
		req_list_push(&e->pinned, r);
		return;
	}
	free_payload(r);
	if (r->task_id && !r->task_status) {
		task_key(e, r->dir, r->task_id);
		mt_map_put(&e->task_req, e->key.data, e->key.len, ptr_value(r));
		r->where = W_PINNED;
		req_list_push(&e->pinned, r);
		return;
	}
	ring_push(e, r);
}

/* A task reached a terminal status: the request that created it settles for good. */
static void task_ended(struct an_engine *e, int dir, const char *id, const char *status)
{
	struct an_request *r;

	task_key(e, dir, id);
	r = map_request(&e->task_req, e->key.data, e->key.len);
	if (!r)
		return;
	(void)mt_map_take(&e->task_req, e->key.data, e->key.len, &(int64_t){0});
	r->task_status = terminal_name(status);
	if (r->where == W_PINNED && r != e->st.init_request) {
		req_list_unlink(&e->pinned, r);
		ring_push(e, r);
	}
}

/* Cancelled requests still unanswered SETTLE_NS after the cancel are settled. */
static void settle_cancelled(struct an_engine *e, int64_t now)
{
	while (e->cancels.first && now - e->cancels.first->cancel_t_ns > SETTLE_NS)
		settle(e, e->cancels.first);
}

/* Every open request settles at a capture gap: its answer, or its cancel, may be in it. */
static void settle_at_gap(struct an_engine *e, int64_t seq)
{
	while (e->open.first) {
		e->open.first->gap_seq = seq;
		settle(e, e->open.first);
	}
}

struct an_request *an_open_request(const struct an_state *st, enum an_dir sender, const char *key, size_t n)
{
	return map_request(&st->open[sender], key, n);
}

struct an_request *an_find_request(const struct an_state *st, enum an_dir sender, const char *key, size_t n)
{
	struct an_request *r = map_request(&st->open[sender], key, n);

	return r ? r : map_request(&st->recent[sender], key, n);
}

struct an_request *an_token_request(const struct an_state *st, enum an_dir sender, const char *key, size_t n)
{
	return map_request(&st->tokens[sender], key, n);
}

enum an_id_fate an_id_fate(const struct an_state *st, enum an_dir sender, const char *key, size_t n)
{
	if (!key)
		return AN_ID_UNUSED;
	if (an_find_request(st, sender, key, n))
		return AN_ID_KEPT;
	if (!an_idset_has(&st->ids[sender], key, n))
		return AN_ID_UNUSED;
	if (an_idset_has(&st->cancelled[sender], key, n))
		return AN_ID_CANCELLED;
	if (an_idset_has(&st->lost[sender], key, n))
		return AN_ID_LOST;
	return AN_ID_ANSWERED;
}

const char *an_req_task_status(const struct an_state *st, const struct an_request *r, const char **task_id)
{
	*task_id = r ? r->task_id : NULL;
	if (!*task_id)
		return NULL;
	if (r->task_status)
		return r->task_status;
	return json_string_value(json_object_get(json_object_get(st->tasks, *task_id), "status"));
}

/* The key of a cursor for method in st.cursors, into out. */
static void cursor_key(const char *method, json_t *cursor, struct mt_buf *out)
{
	mt_buf_reset(out);
	mt_buf_puts(out, method ? method : "");
	mt_buf_putc(out, '\0');
	mt_buf_append(out, json_string_value(cursor), json_string_length(cursor));
}

int an_cursor_given(const struct an_state *st, const char *method, json_t *cursor)
{
	struct mt_buf k = MT_BUF_INIT;
	int given;

	if (!json_is_string(cursor))
		return 0;
	cursor_key(method, cursor, &k);
	given = an_idset_has(&st->cursors, k.data, k.len);
	mt_buf_release(&k);
	return given;
}

void an_engine_free(struct an_engine *e)
{
	struct an_state *st;
	struct req_list *lists[4];

	if (!e)
		return;
	st = &e->st;
	lists[0] = &e->open;
	lists[1] = &e->flawed;
	lists[2] = &e->pinned;
	lists[3] = &e->spare;
	for (size_t i = 0; i < 4; i++)
		while (lists[i]->first) {
			struct an_request *r = lists[i]->first;
			req_list_unlink(lists[i], r);
			free_record(r);
		}
	for (size_t i = 0; i < e->ring_len; i++)
		free_record(e->ring[(e->ring_head + i) % AN_RECENT]);
	for (int i = 0; i < 2; i++) {
		mt_map_release(&st->open[i]);
		mt_map_release(&st->recent[i]);
		mt_map_release(&st->tokens[i]);
		an_idset_release(&st->ids[i]);
		an_idset_release(&st->cancelled[i]);
		an_idset_release(&st->lost[i]);
	}
	an_idset_release(&st->cursors);
	mt_map_release(&e->by_seq);
	mt_map_release(&e->task_req);
	json_decref(st->subscriptions);
	json_decref(st->tools);
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
	while (e->xfirst) {
		struct an_exchange *x = e->xfirst;
		e->xfirst = x->next;
		exchange_free(x);
	}
	mt_map_release(&e->xs);
	mt_map_release(&st->http.events);
	mt_map_release(&st->http.sent);
	mt_map_release(&st->http.resent);
	free(st->http.stored_id);
	free(st->http.endpoint);
	free(st->http.session_id);
	mt_buf_release(&e->key);
	mt_buf_release(&e->idkey);
	mt_buf_release(&e->idkey2);
	mt_buf_release(&e->scratch);
	mt_buf_release(&e->lossy);
	mt_buf_release(&e->joined);
	free(e);
}

void an_engine_set_sink(struct an_engine *e, void (*sink)(const struct an_finding *f, void *ctx), void *ctx)
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

	if (!c->m || c->m->unreadable)
		return NULL;
	if (!e->cur_parsed) {
		e->cur_parsed = 1;
		e->cur_json = json_loadb(c->m->raw, c->m->raw_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	}
	return e->cur_json;
}

json_t *an_params_member(const struct an_ctx *c, const char *key)
{
	struct an_engine *e = c->engine;
	struct mt_span v;
	json_t *val;

	if (!c->m || c->m->unreadable)
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

void an_key_text(const char *key, size_t n, struct mt_buf *out)
{
	int str = n > 2 && key[0] == 's';

	mt_buf_reset(out);
	if (n <= 2) {
		mt_buf_append(out, key, n);
		return;
	}
	if (str)
		mt_buf_putc(out, '"');
	mt_buf_append(out, key + 2, n - 2);
	if (str)
		mt_buf_putc(out, '"');
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
	case MT_ID_NULL: mt_buf_puts(out, "null"); break;
	default: break;
	}
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
	if (m && seq == m->seq && !m->gap) {
		f->have_msg = 1;
		f->dir = m->dir;
		f->method = m->method ? mt_strdup(m->method) : NULL;
		if (m->cls && m->cls->idtype != MT_ID_NONE)
			f->id = mt_strndup(m->cls->id.p, m->cls->id.n);
	} else if (seq > 0) {
		/* Another message: a request the engine still keeps, when it is one. */
		const struct an_request *q = map_request(&e->by_seq, seq_key(&seq), sizeof(seq));
		if (q) {
			f->have_msg = 1;
			f->dir = q->dir;
			f->method = mt_strdup(q->method);
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

void an_report_at(const struct an_ctx *c, int sev, int64_t seq, const int64_t *related, size_t nrelated,
		  const char *fmt, ...)
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
		/* A message whose meaning is moot: only the rules on its form. */
		if (m && m->unjudged && !(r->hooks & AN_FRAMING))
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
	if (e->last_rec >= 0 && e->recs[e->last_rec].len == n && !memcmp(e->recs[e->last_rec].name, s, n))
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
		"initialize",
		"server/discover",
		"tools/list",
		"resources/subscribe",
		"resources/unsubscribe",
		"notifications/initialized",
		"notifications/cancelled",
		"notifications/progress",
		"notifications/tasks/status",
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
		"initialize",
		"tools/call",
		"tools/list",
		"prompts/list",
		"prompts/get",
		"resources/list",
		"resources/templates/list",
		"resources/read",
		"resources/subscribe",
		"resources/unsubscribe",
		"elicitation/create",
		"sampling/createMessage",
		"tasks/get",
		"tasks/result",
		"tasks/cancel",
		"tasks/list",
		"completion/complete",
		"logging/setLevel",
		"roots/list",
		"server/discover",
		"subscriptions/listen",
		NULL,
	};

	for (size_t i = 0; keep[i]; i++)
		if (!strcmp(method, keep[i]))
			return 1;
	return 0;
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

/* The key of a progress token as the classifier found it, into e->key (as an_key_of makes it). */
static void token_key(struct an_engine *e, const struct an_msg *m, json_t *tok)
{
	char first = m->cls->progress_token.p[0];

	if (first == '"' || first == '-' || (first >= '0' && first <= '9'))
		key_of_token(first == '"' ? MT_ID_STRING : MT_ID_NUMBER, m->cls->progress_token, &e->key);
	else
		an_key_of(tok, &e->key);
}

/* State changes that a request makes, after its rules ran: it is open now. */
static void after_request(struct an_engine *e, struct an_msg *m, struct an_request *r)
{
	struct an_state *st = &e->st;
	json_t *params = NULL;

	r->key = mt_malloc(m->id_key_len + 1);
	memcpy(r->key, m->id_key, m->id_key_len);
	r->key[m->id_key_len] = '\0';
	r->key_len = m->id_key_len;
	mt_map_put(&st->open[m->dir], r->key, r->key_len, ptr_value(r));
	an_idset_add(&st->ids[m->dir], r->key, r->key_len);
	if (!map_request(&e->by_seq, seq_key(&r->seq), sizeof(r->seq)))
		mt_map_put(&e->by_seq, seq_key(&r->seq), sizeof(r->seq), ptr_value(r));
	if (r->flawed) {
		r->where = W_FLAWED;
		req_list_push(&e->flawed, r);
	} else {
		r->where = W_OPEN;
		req_list_push(&e->open, r);
		st->open_first = e->open.first;
		st->nopen++;
	}
	if (r->has_token) {
		token_key(e, m, r->progress_token);
		r->token_key = mt_malloc(e->key.len + 1);
		memcpy(r->token_key, e->key.data, e->key.len);
		r->token_key[e->key.len] = '\0';
		r->token_key_len = e->key.len;
		mt_map_put(&st->tokens[m->dir], r->token_key, r->token_key_len, ptr_value(r));
	}
	if (!is_engine_method(e, m))
		return;
	if (!strcmp(r->method, "initialize") && m->dir == AN_C2S) {
		if (!r->unreadable)
			params = json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "params");
		st->init_count++;
		if (!st->init_seq) {
			st->init_seq = m->seq;
			st->init_request = r;
		}
		/* A handshake after stateless requests: the legacy protocol takes over. */
		if (st->phase == AN_PH_START || st->phase == AN_PH_STATELESS)
			st->phase = AN_PH_INITIALIZING;
		free(st->requested);
		st->requested = dup_string(json_object_get(params, "protocolVersion"));
		if (!st->negotiated)
			set_version(e, st->requested, "requested");
		json_decref(st->client_caps);
		st->client_caps = json_incref(json_object_get(params, "capabilities"));
		st->caps_unreadable[AN_C2S] = r->unreadable;
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

/* A task's status changed: st->tasks keeps only the tasks not yet terminal. */
static void task_status_set(struct an_engine *e, const char *id, json_t *status, int64_t seq, int dir)
{
	struct an_state *st = &e->st;
	json_t *t = json_object_get(st->tasks, id);

	if (terminal_status(json_string_value(status))) {
		if (t) {
			dir = (int)json_integer_value(json_object_get(t, "dir"));
			json_object_del(st->tasks, id);
		}
		task_ended(e, dir, id, json_string_value(status));
		return;
	}
	if (t) {
		json_object_set(t, "status", status);
		return;
	}
	json_object_set_new(
		st->tasks, id,
		json_pack("{s:O?,s:I,s:i}", "status", status, "seq", (json_int_t)seq, "dir", dir));
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
		r->answer_exchange = m->exchange;
		st->last_answer_seq[r->dir] = m->seq;
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
	result = m->unreadable ? NULL : json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "result");
	if (json_is_object(result) && json_is_object(json_object_get(result, "task")) &&
	    !json_object_get(result, "content") && strcmp(r->method, "tasks/get")) {
		r->is_task = 1;
		const char *id = json_string_value(an_path(result, "task.taskId"));
		if (id && !r->task_id && r->answer_seq == m->seq)
			r->task_id = mt_strdup(id);
	}
	if (!strcmp(r->method, "initialize") && r->dir == AN_C2S &&
	    !(st->init_answer_seq && st->phase != AN_PH_FAILED && st->phase != AN_PH_INITIALIZING)) {
		/* The first successful handshake sets the session up; a retry after a
		 * refusal counts as the handshake too. */
		st->init_answer_seq = m->seq;
		if (st->phase == AN_PH_INITIALIZING || st->phase == AN_PH_FAILED || st->phase == AN_PH_START)
			st->phase = AN_PH_INITIALIZED;
		free(st->negotiated);
		st->negotiated = dup_string(json_object_get(result, "protocolVersion"));
		if (st->negotiated)
			set_version(e, st->negotiated, "negotiated");
		json_decref(st->server_caps);
		st->server_caps = json_incref(json_object_get(result, "capabilities"));
		st->caps_unreadable[AN_S2C] = m->unreadable != NULL;
	} else if (!strcmp(r->method, "server/discover") &&
		   json_is_object(json_object_get(result, "capabilities"))) {
		/* 2026-07-28: what the server offers is in its discover result. */
		json_decref(st->server_caps);
		st->server_caps = json_incref(json_object_get(result, "capabilities"));
	} else if (!strcmp(r->method, "tools/list") && json_is_array(json_object_get(result, "tools"))) {
		if (!json_object_get(an_req_params(r), "cursor"))
			json_object_clear(st->tools);
		size_t i;
		json_t *tool;
		json_array_foreach(json_object_get(result, "tools"), i, tool)
		{
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
	json_t *next = json_object_get(result, "nextCursor");
	if (json_is_string(next)) {
		cursor_key(r->method, next, &e->key);
		an_idset_add(&st->cursors, e->key.data, e->key.len);
	}
	json_t *task = json_object_get(result, "task");
	if (!json_is_object(task) && r->method && !strncmp(r->method, "tasks/", 6) &&
	    json_object_get(result, "taskId"))
		task = result;
	if (json_is_object(task) && json_is_string(json_object_get(task, "taskId"))) {
		const char *id = json_string_value(json_object_get(task, "taskId"));
		const char *status = json_string_value(json_object_get(task, "status"));
		task_status_set(e, id, json_object_get(task, "status"), m->seq, (int)r->dir);
		/* A task created already terminal: its request is not pinned for it. */
		if (r->task_id && !strcmp(r->task_id, id) && terminal_status(status))
			r->task_status = terminal_name(status);
	}
}

/* State changes that a notification makes, after its rules ran. */
static void after_notification(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	struct an_ctx ctx = {st, m, NULL, e};
	json_t *params = NULL;

	if (!is_engine_method(e, m) || m->unreadable)
		return;
	/* Only these need the params; progress reads its two members alone. */
	if (!strcmp(m->method, "notifications/cancelled") || !strcmp(m->method, "notifications/tasks/status"))
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
				if (r->where == W_OPEN || r->where == W_FLAWED) {
					/* It settles SETTLE_NS later, unless answered before. */
					r->cancel_prev = e->cancels.last;
					r->cancel_next = NULL;
					if (e->cancels.last)
						e->cancels.last->cancel_next = r;
					else
						e->cancels.first = r;
					e->cancels.last = r;
				}
			}
		}
	} else if (!strcmp(m->method, "notifications/progress")) {
		json_t *tok = an_params_member(&ctx, "progressToken");
		json_t *prog = an_params_member(&ctx, "progress");
		if (tok && json_is_number(prog)) {
			an_key_of(tok, &e->key);
			struct an_request *r = an_token_request(st, m->dir == AN_C2S ? AN_S2C : AN_C2S,
								e->key.data, e->key.len);
			if (r) {
				json_decref(r->last_progress);
				r->last_progress = json_incref(prog);
			}
		}
	} else if (!strcmp(m->method, "notifications/tasks/status")) {
		const char *id = json_string_value(json_object_get(params, "taskId"));
		/* The task's requestor is the receiver of the notification. */
		if (id && (json_object_get(st->tasks, id) ||
			   terminal_status(json_string_value(json_object_get(params, "status")))))
			task_status_set(e, id, json_object_get(params, "status"), m->seq,
					m->dir == AN_C2S ? AN_S2C : AN_C2S);
	}
}

/* 2026-07-28: no handshake; the first request carries its revision in _meta. */
static void detect_stateless(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	json_t *v, *meta;

	if (st->phase != AN_PH_START || m->cls->kind != MT_REQUEST || m->dir != AN_C2S || m->unreadable ||
	    !strcmp(m->method, "initialize"))
		return;
	meta = an_path(json_object_get(an_json(&(struct an_ctx){st, m, NULL, e}), "params"), "_meta");
	v = json_object_get(meta, "io.modelcontextprotocol/protocolVersion");
	if (!json_is_string(v)) {
		/*
		 * No revision, but what only a 2026-07-28 client sends first (its
		 * server/discover, or the other _meta keys every request of it
		 * carries): a stateless session whose request lacks its version
		 * (V26-001 says so), not an older one missing its initialize.
		 */
		if (strcmp(m->method, "server/discover") &&
		    !json_object_get(meta, "io.modelcontextprotocol/clientCapabilities") &&
		    !json_object_get(meta, "io.modelcontextprotocol/clientInfo"))
			return;
		st->phase = AN_PH_STATELESS;
		if (!e->o.force_version) {
			st->version = AN_V2026_07_28;
			st->version_source = "implied";
		}
		json_decref(st->client_caps);
		st->client_caps =
			json_incref(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"));
		return;
	}
	st->phase = AN_PH_STATELESS;
	free(st->requested);
	st->requested = mt_strdup(json_string_value(v));
	if (!e->o.force_version) {
		enum an_version ver;
		if (an_version_parse(st->requested, &ver) == 0 || strcmp(st->requested, "2026-07-28") > 0) {
			st->version = AN_V2026_07_28;
			st->version_source =
				an_version_parse(st->requested, &ver) == 0 ? "requested" : "nearest";
		} else {
			set_version(e, st->requested, "requested");
		}
	}
	json_decref(st->client_caps);
	st->client_caps = json_incref(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"));
}

/* Forget what was parsed of the current message (its bytes change). */
static void forget_parse(struct an_engine *e)
{
	for (int i = 0; i < e->nmembers; i++)
		json_decref(e->members[i].value);
	e->nmembers = 0;
	json_decref(e->cur_json);
	e->cur_json = NULL;
	e->cur_parsed = 0;
}

static void finish_message(struct an_engine *e)
{
	forget_parse(e);
	e->cur = NULL;
}

/* A number no other message fed to any engine of this process has (rules memoize by it). */
static uint64_t next_serial(void)
{
	static uint64_t serial;

	return ++serial;
}

/* ---- what the analyzer cannot read ---- */

#define LIMIT_STR2(x) #x
#define LIMIT_STR(x) LIMIT_STR2(x)

/*
 * Is the message beyond Jansson's limits? Returns which limit (static text)
 * or NULL when it reads. A message that reads is left parsed for the rules.
 */
static const char *beyond_limits(struct an_engine *e, const struct an_msg *m)
{
	json_error_t err;
	json_t *v;

	/* The classifier's pass says what could be (its numbers, member names and
	 * depth); the parser decides. */
	if (m->cls->kind == MT_INVALID ||
	    (!m->cls->maybe_beyond && m->cls->max_depth <= JSON_PARSER_MAX_DEPTH))
		return NULL;
	v = json_loadb(m->raw, m->raw_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (v) {
		json_decref(e->cur_json);
		e->cur_json = v;
		e->cur_parsed = 1;
		return NULL;
	}
	switch (json_error_code(&err)) {
	case json_error_stack_overflow:
		return "nesting deeper than " LIMIT_STR(JSON_PARSER_MAX_DEPTH) " levels";
	case json_error_numeric_overflow:
		return strstr(err.text, "real") ? "a number beyond the range of a double"
						: "an integer beyond 64 bits";
	case json_error_null_byte_in_key: return "a \\u0000 inside an object key";
	default: return "JSON the parser refuses";
	}
}

int an_jsonrpc_like(const struct an_msg *m)
{
	const struct mt_class *c = m->cls;
	struct mt_span obj = {m->raw, m->raw_len}, k, v;
	size_t pos = 0;
	static const char *const members[] = {"\"jsonrpc\"", "\"id\"",    "\"method\"", "\"params\"",
					      "\"result\"",  "\"error\"", NULL};

	if (m->in_batch || c->kind != MT_NOTJSONRPC)
		return 1;
	if (!c->error || strcmp(c->error, "no \"jsonrpc\" member"))
		return !c->error || strcmp(c->error, "not an object");
	while (obj.n && *obj.p != '{')
		obj.p++, obj.n--;
	while (obj.n && obj.p[obj.n - 1] != '}')
		obj.n--;
	while (mt_json_next_member(obj, &pos, &k, &v) == 1)
		for (size_t i = 0; members[i]; i++)
			if (k.n == strlen(members[i]) && !memcmp(k.p, members[i], k.n))
				return 1;
	return 0;
}

/* ---- messages that are JSON-RPC but for their envelope ---- */

/*
 * A JSON object the classifier refused only for its "jsonrpc" member (missing,
 * or not "2.0") is read as the request, notification or answer it otherwise
 * is, into *out: the engine pairs and follows it, while the rules see it as
 * what it is (not JSON-RPC 2.0: RPC-001). Returns 1 when it reads as one.
 */
static int reread_envelope(const struct an_msg *m, struct mt_class *out)
{
	const struct mt_class *c = m->cls;
	struct mt_span obj = {m->raw, m->raw_len}, k, v, id = {NULL, 0}, method = {NULL, 0},
		       params = {NULL, 0}, result = {NULL, 0}, error = {NULL, 0}, meta, tok, code;
	size_t pos = 0;
	int64_t ec;

	if (c->kind != MT_NOTJSONRPC || !c->error ||
	    (strcmp(c->error, "no \"jsonrpc\" member") && strcmp(c->error, "\"jsonrpc\" is not \"2.0\"")))
		return 0;
	while (obj.n && *obj.p != '{')
		obj.p++, obj.n--;
	while (obj.n && obj.p[obj.n - 1] != '}')
		obj.n--;
	while (mt_json_next_member(obj, &pos, &k, &v) == 1) {
		if (memchr(k.p, '\\', k.n))
			return 0; /* an escaped member name: not worth guessing */
		if (k.n == 4 && !memcmp(k.p, "\"id\"", 4))
			id = v;
		else if (k.n == 8 && !memcmp(k.p, "\"method\"", 8))
			method = v;
		else if (k.n == 8 && !memcmp(k.p, "\"params\"", 8))
			params = v;
		else if (k.n == 8 && !memcmp(k.p, "\"result\"", 8))
			result = v;
		else if (k.n == 7 && !memcmp(k.p, "\"error\"", 7))
			error = v;
	}
	memset(out, 0, sizeof(*out));
	out->meta_anywhere = c->meta_anywhere;
	if (id.n) {
		out->id = id;
		out->idtype = id.p[0] == '"'                                         ? MT_ID_STRING
			      : id.p[0] == 'n'                                       ? MT_ID_NULL
			      : id.p[0] == '-' || (id.p[0] >= '0' && id.p[0] <= '9') ? MT_ID_NUMBER
										     : MT_ID_NONE;
		if (out->idtype == MT_ID_NONE)
			return 0;
	}
	out->params = params;
	out->result = result;
	if (method.n) {
		if (method.p[0] != '"')
			return 0;
		out->method = method;
		out->kind = id.n ? MT_REQUEST : MT_NOTIFICATION;
		if (params.n && params.p[0] == '{' && mt_json_member(params, "_meta", &meta) == 1 && meta.n &&
		    meta.p[0] == '{' && mt_json_member(meta, "_meta", &tok) != 1 &&
		    mt_json_member(meta, "progressToken", &tok) == 1 &&
		    (tok.p[0] == '"' || tok.p[0] == '-' || (tok.p[0] >= '0' && tok.p[0] <= '9'))) {
			out->progress_token = tok;
			out->token_type = tok.p[0] == '"' ? MT_ID_STRING : MT_ID_NUMBER;
		}
		return 1;
	}
	if (!id.n || (result.n && error.n))
		return 0;
	if (result.n) {
		out->kind = MT_RESPONSE;
		return 1;
	}
	if (error.n && error.p[0] == '{') {
		out->kind = MT_ERROR;
		if (mt_json_member(error, "code", &code) == 1 && mt_json_int64(code, &ec)) {
			out->has_error_code = 1;
			out->error_code = ec;
		}
		return 1;
	}
	return 0;
}

/*
 * A line that is not JSON only for its bytes (not UTF-8, or a raw control
 * character inside a string): is it, with each bad byte made U+FFFD and each
 * control character a blank, a JSON-RPC request, notification or answer?
 * Then 1, and *out classifies e->lossy.
 */
static int reread_lossy(struct an_engine *e, const struct an_msg *m, struct mt_class *out)
{
	const char *why = m->cls->error;

	if (m->cls->kind != MT_INVALID || !why ||
	    (strcmp(why, "invalid UTF-8") && strcmp(why, "control character in string")))
		return 0;
	mt_utf8_lossy(m->raw, m->raw_len, &e->lossy);
	for (size_t i = 0; i < e->lossy.len; i++)
		if ((unsigned char)e->lossy.data[i] < 0x20)
			e->lossy.data[i] = ' ';
	return e->lossy.data && mt_classify(e->lossy.data, e->lossy.len, out) <= MT_ERROR;
}

/* ---- feeding ---- */

/* The message's method record, name and id key (m->cls decides). */
static void read_names(struct an_engine *e, struct an_msg *m)
{
	const struct mt_class *c = m->cls;
	struct mt_buf *idkey = m->in_batch ? &e->idkey2 : &e->idkey;

	/* Only a string is a method (a non-string one makes the message notjsonrpc). */
	m->method_id = -1;
	m->method = NULL;
	if (c->method.n >= 2 && c->method.p[0] == '"') {
		if (!memchr(c->method.p, '\\', c->method.n))
			m->method_id = method_record(e, c->method.p + 1, c->method.n - 2);
		else if (mt_json_string(c->method, &e->scratch) == 0)
			m->method_id =
				method_record(e, e->scratch.data ? e->scratch.data : "", e->scratch.len);
		if (m->method_id >= 0)
			m->method = e->recs[m->method_id].name;
	}
	key_of_token(c->idtype, c->id, idkey);
	m->id_key = idkey->data ? idkey->data : "";
	m->id_key_len = idkey->len;
}

/* The request an answer answers (and its method), or NULL. */
static struct an_request *pair_answer(struct an_engine *e, struct an_msg *m)
{
	const struct mt_class *c = m->cls;
	enum an_dir sender = m->dir == AN_C2S ? AN_S2C : AN_C2S;
	struct an_request *r = NULL;

	if (c->idtype == MT_ID_NULL)
		r = an_open_request(&e->st, sender, "null", 4); /* a null id answers a null id */
	else if (c->idtype != MT_ID_NONE)
		r = an_find_request(&e->st, sender, m->id_key, m->id_key_len);
	/* Over HTTP, an error without an id in the body answering a POST answers the
	 * request that POST carried: the HTTP layer's refusal of it (HTTP-006). */
	if (!r && (c->idtype == MT_ID_NONE || c->idtype == MT_ID_NULL) && m->x && !m->in_batch &&
	    m->dir == AN_S2C && m->channel && !strcmp(m->channel, "body") && m->x->req_key)
		r = an_open_request(&e->st, AN_C2S, m->x->req_key, m->x->req_key_len);
	m->req = r;
	if (r) {
		m->method = r->method;
		m->method_id = r->method_id;
	}
	return r;
}

/*
 * An element of a batch in a revision known to have none (RPC-009): its
 * meaning is moot, and nobody waits for its answer.
 */
static const char *batch_problem(const struct an_state *st, const struct an_msg *m)
{
	if (!m->in_batch || st->version == AN_V2025_03_26 || !strcmp(st->version_source, "default"))
		return NULL;
	return "an element of a batch, in a revision without batches";
}

/*
 * A client message whose POST the HTTP layer refused (a 4xx or 5xx status),
 * or that was answered with a body that is no JSON-RPC message: no JSON-RPC
 * answer is owed for it, or can come (HTTP-006, HTTP-007).
 */
static int http_refused(const struct an_msg *m)
{
	/* (A response body no message holds is not JSON-RPC: HTTP-007 says so.) */
	return m->x && m->dir == AN_C2S && (m->x->status >= 400 || m->x->has_resp_body);
}

/*
 * One request, notification or answer: its rules (all of them, only those on
 * its form, or none when `rules` is 0), the engine's update, the trackers.
 */
static void feed_rpc(struct an_engine *e, struct an_msg *m, int rules)
{
	struct an_state *st = &e->st;
	const struct mt_class *c = m->cls;
	unsigned hook = hook_of(c->kind);

	if (c->kind == MT_REQUEST) {
		struct an_request *r;
		const char *why = NULL;
		if (!m->method)
			m->method = ""; /* (a method that does not decode: a damaged file) */
		detect_stateless(e, m);
		r = new_request(e);
		r->seq = m->seq;
		r->t_ns = m->t_ns;
		r->dir = m->dir;
		r->method = m->method;
		r->method_id = m->method_id;
		r->in_batch = m->in_batch != 0;
		r->unreadable = m->unreadable != NULL;
		/* Not waited for: malformed or unreadable (no rules), a notification
		 * method or a request its sender may not send, a null id. A 2026-07-28
		 * server request is V26-005's, judged by meaning. */
		if (!strncmp(m->method, "notifications/", 14))
			why = "a notification sent as a request";
		else if (!(st->version == AN_V2026_07_28 && m->dir == AN_S2C))
			why = an_method_role_problem(st->version, m->dir, MT_REQUEST, m->method);
		if (!why && c->params.n && c->params.p[0] != '{')
			why = "params that are not an object"; /* RPC-011's */
		if (!why)
			why = batch_problem(st, m);
		if (why && rules)
			m->unjudged = why;
		r->flawed = !rules || why || c->idtype == MT_ID_NULL || http_refused(m);
		r->exchange = m->exchange;
		r->exchange_sse = m->x && m->x->resp_type && !strcmp(m->x->resp_type, "sse");
		if (m->method_id >= 0 && e->recs[m->method_id].keep && !m->unreadable) {
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
		if (m->dir == AN_C2S && !st->negotiated && is_engine_method(e, m) && !m->unreadable &&
		    !strcmp(m->method, "initialize"))
			set_version(e,
				    json_string_value(an_path(an_params(&(struct an_ctx){st, m, NULL, e}),
							      "protocolVersion")),
				    "requested");
		if (rules)
			dispatch(e, hook, m);
		after_request(e, m, r);
		track(e, hook, m);
	} else if (c->kind == MT_RESPONSE || c->kind == MT_ERROR) {
		struct an_request *r = pair_answer(e, m);
		int64_t again = 0;
		/* An answer again to a request the server sent again. */
		if (st->http.resent.len && m->dir == AN_C2S && c->idtype != MT_ID_NONE &&
		    (r ? r->answer_seq != 0
		       : an_id_fate(st, AN_S2C, m->id_key, m->id_key_len) == AN_ID_ANSWERED) &&
		    mt_map_get(&st->http.resent, m->id_key, m->id_key_len, &again) && again > 0) {
			m->resent_answer = 1;
			mt_map_put(&st->http.resent, m->id_key, m->id_key_len, again - 1);
		}
		if (c->kind == MT_RESPONSE && c->result.n && c->result.p[0] != '{')
			m->unjudged = "a result that is not an object"; /* RPC-011's */
		else
			m->unjudged = batch_problem(st, m);
		if (r) {
			if (r->answer_seq)
				m->unjudged = "a second answer";
			else if (r->unreadable)
				m->unjudged = "the answer to a request the analyzer could not read";
			else if (r->flawed && c->idtype != MT_ID_NULL)
				m->unjudged = "the answer to a flawed request";
		}
		if (rules)
			dispatch(e, hook, m);
		after_answer(e, m);
		track(e, hook, m);
		/* Answered: it settles (its params are not needed again). */
		if (r && r->answer_seq == m->seq)
			settle(e, r);
	} else {
		if (c->kind == MT_NOTIFICATION && rules)
			m->unjudged = an_method_role_problem(st->version, m->dir, MT_NOTIFICATION, m->method);
		if (!m->unjudged && rules)
			m->unjudged = batch_problem(st, m);
		if (!m->unjudged && c->params.n && c->params.p[0] != '{')
			m->unjudged = "params that are not an object"; /* RPC-011's */
		if (rules)
			dispatch(e, hook, m);
		after_notification(e, m);
		track(e, hook, m);
	}
}

static void feed_joined(struct an_engine *e, const struct an_msg *last);

/*
 * Follow a message as what it reads as (cls, over raw): the engine's update
 * and the trackers, no rules (they saw it as what it is).
 */
static void follow_as_read(struct an_engine *e, const struct an_msg *m, const struct mt_class *cls,
			   const char *raw, size_t n)
{
	struct an_msg as = *m;

	as.cls = cls;
	as.raw = raw;
	as.raw_len = n;
	read_names(e, &as);
	e->st.rpc_messages++;
	feed_rpc(e, &as, 0);
}

/* One JSON-RPC message (a line, or an element of a batch). */
static void feed_message(struct an_engine *e, struct an_msg *m)
{
	struct an_state *st = &e->st;
	const struct mt_class *c = m->cls;
	struct mt_class as_read;

	m->serial = next_serial();
	read_names(e, m);
	st->messages++;
	if (c->kind <= MT_ERROR)
		st->rpc_messages++;
	st->last_t_ns = m->t_ns;
	settle_cancelled(e, m->t_ns);

	if (c->kind != MT_INVALID && (m->unreadable = beyond_limits(e, m))) {
		/* One finding says the analyzer could not read it; no rule reads it. */
		if (c->kind == MT_RESPONSE || c->kind == MT_ERROR)
			pair_answer(e, m);
		/* (An element of a batch already said unreadable is not said again.) */
		if (!m->in_batch || !e->batch_unreadable)
			dispatch(e, AN_ON_UNREADABLE, m);
		if (c->kind <= MT_ERROR)
			feed_rpc(e, m, 0);
		else if (c->kind == MT_NOTJSONRPC && reread_envelope(m, &as_read))
			follow_as_read(e, m, &as_read, m->raw, m->raw_len);
	} else if (c->kind <= MT_ERROR) {
		feed_rpc(e, m, 1);
	} else if (c->kind == MT_NOTJSONRPC && reread_envelope(m, &as_read)) {
		/* Not JSON-RPC 2.0 for its envelope alone: the rules say so, and the
		 * engine follows what it is (its answer answers it, and so on). */
		dispatch(e, AN_ON_NOTJSONRPC, m);
		track(e, AN_ON_NOTJSONRPC, m);
		follow_as_read(e, m, &as_read, m->raw, m->raw_len);
	} else if (reread_lossy(e, m, &as_read)) {
		/* JSON-RPC but for its bytes: the same, on its bytes made good. */
		dispatch(e, AN_ON_INVALID, m);
		track(e, AN_ON_INVALID, m);
		forget_parse(e);
		follow_as_read(e, m, &as_read, e->lossy.data, e->lossy.len);
	} else {
		unsigned hook = hook_of(c->kind);
		dispatch(e, hook, m);
		track(e, hook, m);
	}
	finish_message(e);
	if (e->has_joined)
		feed_joined(e, m);
}

void an_follow_joined(const struct an_ctx *c, const char *raw, size_t n)
{
	mt_buf_reset(&c->engine->joined);
	mt_buf_append(&c->engine->joined, raw, n);
	c->engine->has_joined = 1;
}

/* The message a tracker joined from lines (an_follow_joined), followed without rules. */
static void feed_joined(struct an_engine *e, const struct an_msg *last)
{
	struct an_msg m;
	struct mt_class c, as_read;

	e->has_joined = 0;
	memset(&m, 0, sizeof(m));
	m.seq = last->seq;
	m.t_ns = last->t_ns;
	m.dir = last->dir;
	m.raw = e->joined.data ? e->joined.data : "";
	m.raw_len = e->joined.len;
	m.serial = next_serial();
	m.cls = &c;
	if (mt_classify(m.raw, m.raw_len, &c) > MT_ERROR) {
		if (!reread_envelope(&m, &as_read))
			return;
		m.cls = &as_read;
	}
	read_names(e, &m);
	e->st.rpc_messages++;
	m.unreadable = beyond_limits(e, &m);
	feed_rpc(e, &m, 0);
	finish_message(e);
}

/* A capture gap: said once; it settles what it could hide. */
static void feed_gap(struct an_engine *e, const struct store_item *it)
{
	struct an_state *st = &e->st;
	struct an_msg m;
	struct mt_class c;

	memset(&m, 0, sizeof(m));
	memset(&c, 0, sizeof(c));
	c.kind = MT_INVALID;
	m.cls = &c;
	m.method_id = -1;
	m.seq = it->seq;
	m.t_ns = st->last_t_ns;
	m.serial = next_serial();
	m.gap = it;
	m.dir = it->dir && !strcmp(it->dir, "c2s") ? AN_C2S : AN_S2C;
	st->gaps++;
	if (!it->dir || strcmp(it->dir, "stderr")) {
		/* Messages are missing (in one direction, or in either). */
		if (!it->dir || !strcmp(it->dir, "c2s"))
			st->gap_seq[AN_C2S] = it->seq;
		if (!it->dir || !strcmp(it->dir, "s2c"))
			st->gap_seq[AN_S2C] = it->seq;
		settle_at_gap(e, it->seq);
	}
	dispatch(e, AN_ON_GAP, &m);
	track(e, AN_ON_GAP, &m);
	finish_message(e);
}

/* ---- HTTP exchanges ---- */

const char *an_hdr(json_t *headers, const char *name)
{
	size_t i;
	json_t *h;

	json_array_foreach(headers, i, h)
	{
		const char *k = json_string_value(json_array_get(h, 0));
		const char *v = json_string_value(json_array_get(h, 1));
		if (k && v && !strcasecmp(k, name))
			return v;
	}
	return NULL;
}

int an_media_is(const char *value, const char *type)
{
	size_t n = strlen(type);

	if (!value)
		return 0;
	while (*value == ' ' || *value == '\t')
		value++;
	if (strncasecmp(value, type, n))
		return 0;
	value += n;
	while (*value == ' ' || *value == '\t')
		value++;
	return *value == '\0' || *value == ';' || *value == ',';
}

int an_accepts(const char *accept, const char *type)
{
	for (const char *p = accept; p && *p;) {
		if (an_media_is(p, type))
			return 1;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

void an_engine_set_session(struct an_engine *e, const char *transport, const char *http_session_id)
{
	struct an_state *st = &e->st;
	unsigned bit;

	st->transport = transport && !strcmp(transport, "http")  ? AN_T_HTTP
			: transport && !strcmp(transport, "sse") ? AN_T_SSE
								 : AN_T_STDIO;
	free(st->http.stored_id);
	st->http.stored_id = http_session_id ? mt_strdup(http_session_id) : NULL;
	/* The rules of another transport leave the lists, once. */
	bit = 1u << st->transport;
	for (size_t i = 0; i < HOOK_COUNT + e->nlists; i++) {
		struct rule_list *l = i < HOOK_COUNT ? &e->any[i] : &e->lists[i - HOOK_COUNT];
		size_t k = 0;
		for (size_t j = 0; j < l->n; j++)
			if (an_rule_transports(l->v[j]) & bit)
				l->v[k++] = l->v[j];
		l->n = k;
	}
}

static void exchange_free(struct an_exchange *x)
{
	if (!x)
		return;
	free(x->target);
	json_decref(x->req_headers);
	json_decref(x->resp_headers);
	free(x->resp_type);
	free(x->outcome);
	free(x->error);
	free(x->last_event_id);
	free(x->req_key);
	free(x);
}

static struct an_exchange *exchange_get(struct an_engine *e, int64_t seq)
{
	int64_t v;

	return seq > 0 && mt_map_get(&e->xs, &seq, sizeof(seq), &v) ? (struct an_exchange *)(intptr_t)v
								    : NULL;
}

/* Headers as stored: a JSON array of [name, value] (an empty one when not). */
static json_t *headers_of(const char *text)
{
	json_t *h = text ? json_loads(text, 0, NULL) : NULL;

	if (!json_is_array(h)) {
		json_decref(h);
		h = json_array();
	}
	return h;
}

static char *dup_or_null(const char *s)
{
	return s ? mt_strdup(s) : NULL;
}

/* A message for AN_ON_HTTP about exchange x. */
static void http_msg(struct an_msg *m, struct mt_class *c, const struct an_exchange *x, int64_t seq,
		     int64_t t_ns, enum an_http_event ev)
{
	memset(m, 0, sizeof(*m));
	memset(c, 0, sizeof(*c));
	c->kind = MT_INVALID;
	m->cls = c;
	m->method_id = -1;
	m->seq = seq;
	m->t_ns = t_ns;
	m->dir = AN_C2S;
	m->raw = "";
	m->serial = next_serial();
	m->x = x;
	m->exchange = x ? x->seq : 0;
	m->http = ev;
}

/* The exchange's messages are all seen (or the session ends): its rules, then it goes. */
static void exchange_done(struct an_engine *e, struct an_exchange *x)
{
	struct an_msg m;
	struct mt_class c;
	int64_t v;

	http_msg(&m, &c, x, x->seq, e->st.last_t_ns, AN_HTTP_DONE);
	dispatch(e, AN_ON_HTTP, &m);
	track(e, AN_ON_HTTP, &m);
	finish_message(e);
	if (x->prev)
		x->prev->next = x->next;
	else
		e->xfirst = x->next;
	if (x->next)
		x->next->prev = x->prev;
	else
		e->xlast = x->prev;
	(void)mt_map_take(&e->xs, &x->seq, sizeof(x->seq), &v);
	e->st.http.kept--;
	exchange_free(x);
}

/* One more message of x was fed. */
static void exchange_seen(struct an_engine *e, struct an_exchange *x)
{
	if (x && ++x->seen >= x->messages)
		exchange_done(e, x);
}

/* The session state an exchange changes (after its rules ran). */
static void http_update(struct an_engine *e, const struct an_exchange *x)
{
	struct an_http *h = &e->st.http;
	const char *sid = an_hdr(x->req_headers, "Mcp-Session-Id");
	const char *given = an_hdr(x->resp_headers, "Mcp-Session-Id");
	int ok = x->status >= 200 && x->status < 300;

	if (!h->endpoint)
		h->endpoint = mt_strndup(x->target, strcspn(x->target, "?#"));
	if (!strcmp(x->method, "GET"))
		h->get_streams++;
	if (!h->auth_seq && an_hdr(x->req_headers, "Authorization"))
		h->auth_seq = x->seq;
	if (!h->session_id && given && ok) {
		h->session_id = mt_strdup(given);
		h->session_id_seq = x->seq;
	}
	if (!h->session_id || !sid || strcmp(sid, h->session_id))
		return;
	if (h->ended_seq) {
		if (h->ended_by_404 && !h->reused_seq)
			h->reused_seq = x->seq;
	} else if (x->status == 404) {
		h->ended_seq = x->seq;
		h->ended_by_404 = 1;
	} else if (!strcmp(x->method, "DELETE") && ok) {
		h->ended_seq = x->seq;
	}
}

/* An http_exchange row: kept until its messages are fed, its rules run now. */
static void feed_exchange(struct an_engine *e, const struct store_item *it)
{
	const struct store_exchange_row *row = it->x;
	struct an_exchange *x;
	struct an_msg m;
	struct mt_class c;

	if (!row || exchange_get(e, it->seq))
		return; /* (a second row with one seq: a crafted file) */
	if (e->st.http.kept >= AN_HTTP_EXCHANGES) {
		/* Bounded: the oldest is judged as it is, and let go. */
		e->st.http.untracked_exchanges++;
		exchange_done(e, e->xfirst);
	}
	x = mt_calloc(1, sizeof(*x));
	x->seq = it->seq;
	x->conn = row->conn;
	x->t_ns = row->t_ns;
	x->first_byte_ns = row->first_byte_ns;
	x->end_ns = row->end_ns;
	snprintf(x->method, sizeof(x->method), "%s", row->method ? row->method : "");
	x->target = mt_strdup(row->target ? row->target : "");
	x->req_headers = headers_of(row->req_headers_json);
	x->resp_headers = headers_of(row->resp_headers_json);
	x->status = row->status;
	x->resp_type = dup_or_null(row->resp_type);
	x->outcome = dup_or_null(row->outcome);
	x->error = dup_or_null(row->error);
	x->last_event_id = dup_or_null(row->last_event_id);
	x->has_req_body = row->req_body != NULL;
	x->req_body_len = row->req_body_len;
	x->has_resp_body = row->resp_body != NULL;
	x->resp_body_len = row->resp_body_len;
	x->messages = row->messages;
	x->prev = e->xlast;
	if (e->xlast)
		e->xlast->next = x;
	else
		e->xfirst = x;
	e->xlast = x;
	(void)mt_map_put(&e->xs, &x->seq, sizeof(x->seq), (int64_t)(intptr_t)x);
	e->st.http.kept++;
	if (it->t_ns > e->st.last_t_ns)
		e->st.last_t_ns = it->t_ns;
	http_msg(&m, &c, x, x->seq, it->t_ns, AN_HTTP_BEGIN);
	dispatch(e, AN_ON_HTTP, &m);
	track(e, AN_ON_HTTP, &m);
	finish_message(e);
	http_update(e, x);
	if (x->messages <= 0)
		exchange_done(e, x);
}

/*
 * A server message on an HTTP session that is a copy: a replay on a stream
 * resumed with Last-Event-ID, or the same message with an id on a second
 * stream (HTTP-018). Only AN_ON_HTTP rules
 * see it: to the others it was said once. 0 when it is no copy.
 */
static int http_copy(struct an_engine *e, struct an_msg *m, const struct mt_class *c)
{
	struct an_http *h = &e->st.http;
	int64_t v = 0, key;

	if (m->dir != AN_S2C || e->st.transport == AN_T_STDIO)
		return 0;
	if (m->replayed) {
		if (!m->sse_id || !mt_map_get(&h->events, m->sse_id, strlen(m->sse_id), &v))
			v = 0;
		m->copy_of = v;
		/* The tap marks every event id it saw before: on a stream that resumes
		 * none it is a new message reusing an id (HTTP-019), followed as one. */
		return m->x && !strcmp(m->x->method, "GET") && m->x->last_event_id;
	}
	if ((c->kind != MT_REQUEST && c->kind != MT_RESPONSE && c->kind != MT_ERROR) ||
	    c->idtype == MT_ID_NONE || c->idtype == MT_ID_NULL || !m->exchange)
		return 0; /* (an answer without an id says nothing of which it is) */
	key = (int64_t)hash64(m->raw, m->raw_len);
	if (mt_map_get(&h->sent, &key, sizeof(key), &v) && v != m->exchange) {
		/* The same bytes answering a request still open are its answer: a
		 * revision that lets ids be reused once answered (2026-07-28) gets
		 * the same answer twice for the same question. */
		if (c->kind != MT_REQUEST) {
			read_names(e, m);
			if (an_open_request(&e->st, AN_C2S, m->id_key, m->id_key_len))
				return 0;
		}
		m->copy_of = v;
		return 1;
	}
	if (!v && mt_map_put(&h->sent, &key, sizeof(key), m->exchange) < 0)
		h->untracked_events++;
	return 0;
}

/* After a message of exchange x: what it tells of x, its event id. */
static void http_after(struct an_engine *e, const struct an_msg *m, struct an_exchange *x,
		       const struct mt_class *c)
{
	struct an_http *h = &e->st.http;
	int64_t v;

	if (m->sse_id && *m->sse_id && !m->replayed &&
	    !mt_map_get(&h->events, m->sse_id, strlen(m->sse_id), &v) &&
	    mt_map_put(&h->events, m->sse_id, strlen(m->sse_id), m->exchange) < 0)
		h->untracked_events++;
	if (!x)
		return;
	if (m->dir == AN_S2C) {
		x->s2c_messages++;
		x->s2c_with_id += m->sse_id && *m->sse_id;
		x->s2c_invalid += c->kind == MT_INVALID || c->kind == MT_NOTJSONRPC;
		return;
	}
	if (c->kind == MT_REQUEST) {
		x->c2s_requests++;
		if (!m->in_batch && m->id_key && !x->req_key) {
			x->req_key = mt_malloc(m->id_key_len ? m->id_key_len : 1);
			memcpy(x->req_key, m->id_key, m->id_key_len);
			x->req_key_len = m->id_key_len;
		}
	} else if (c->kind == MT_NOTIFICATION || c->kind == MT_RESPONSE || c->kind == MT_ERROR) {
		x->c2s_others++;
	}
}

void an_engine_feed(struct an_engine *e, const struct store_item *it)
{
	struct mt_class c;
	struct an_msg m;
	struct an_exchange *x = NULL;

	if (it->type == STORE_ITEM_GAP) {
		/* (Spans the tap could not push hide no traffic: nothing to judge.) */
		if (!it->gap_messages && !it->gap_bytes && it->gap_reason &&
		    !strncmp(it->gap_reason, STORE_GAP_OTLP, strlen(STORE_GAP_OTLP)))
			return;
		feed_gap(e, it);
		return;
	}
	if (it->type == STORE_ITEM_EXCHANGE) {
		feed_exchange(e, it);
		return;
	}
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
	if (c.method.n && memchr(c.method.p, '\\', c.method.n) && mt_json_string(c.method, &e->scratch))
		mt_classify(it->raw, it->raw_len, &c);
	m.cls = &c;
	if (it->exchange > 0 || (it->channel && strcmp(it->channel, "stdio"))) {
		m.exchange = it->exchange;
		m.x = x = exchange_get(e, it->exchange);
		m.channel = it->channel;
		m.sse_id = it->sse_id;
		m.sse_event = it->sse_event;
		m.replayed = it->replayed;
		if (http_copy(e, &m, &c)) {
			struct an_msg cm = m;
			cm.serial = next_serial();
			cm.http = AN_HTTP_COPY;
			read_names(e, &cm);
			if (c.kind == MT_REQUEST && c.idtype != MT_ID_NONE) {
				/* The client may answer it again: that answer is the replay's. */
				int64_t v = 0;
				mt_map_get(&e->st.http.resent, cm.id_key, cm.id_key_len, &v);
				if (mt_map_put(&e->st.http.resent, cm.id_key, cm.id_key_len, v + 1) < 0)
					e->st.http.untracked_events++;
			}
			dispatch(e, AN_ON_HTTP, &cm);
			track(e, AN_ON_HTTP, &cm);
			finish_message(e);
			exchange_seen(e, x);
			return;
		}
	}
	feed_message(e, &m);
	e->batch_unreadable = m.unreadable != NULL;
	if (m.channel)
		http_after(e, &m, x, &c);
	if (c.kind == MT_BATCH) {
		struct mt_span arr = {it->raw, it->raw_len}, el;
		size_t pos = 0, nreq = 0;
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
			em.unjudged = NULL;
			em.unreadable = NULL;
			nreq += ec.kind == MT_REQUEST;
			feed_message(e, &em);
			if (em.channel)
				http_after(e, &em, x, &ec);
		}
		/* Its open requests know how many requests the batch held. */
		for (struct an_request *r = e->open.last; r && r->seq == m.seq; r = r->open_prev)
			r->batch_requests = nreq;
	}
	exchange_seen(e, x);
}

void an_engine_end(struct an_engine *e)
{
	/* Exchanges whose messages did not all come (a gap, a damaged file) are done. */
	while (e->xfirst)
		exchange_done(e, e->xfirst);
	dispatch(e, AN_ON_END, NULL);
}
