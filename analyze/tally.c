/*
 * tally.c - a session's per-method figures (see tally.h).
 */
#include "analyze/tally.h"

#include <stdlib.h>
#include <string.h>

#include "schema/message.h"

/* ---- latency histogram ---- */

/*
 * Buckets: values below HIST_SUB are exact; above, each power of two is cut
 * into HIST_SUB buckets, so a bucket is at most 1/HIST_SUB of its lower bound
 * wide and its middle within 1/(2 * HIST_SUB) = 0.8% of any value in it.
 */
#define HIST_SUB_BITS 6
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_BUCKETS (HIST_SUB + (63 - HIST_SUB_BITS) * HIST_SUB) /* int64 >= 0 */
#define HIST_SLACK 32 /* buckets added beyond the one needed, when growing */

static int hist_index(int64_t v)
{
	int e;

	if (v < HIST_SUB)
		return v < 0 ? 0 : (int)v;
	e = 63 - __builtin_clzll((unsigned long long)v);
	return HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB + (int)((v >> (e - HIST_SUB_BITS)) - HIST_SUB);
}

/* The middle of bucket i. */
int64_t tally_hist_value(int i)
{
	int e;
	int64_t w, sub;

	if (i < HIST_SUB)
		return i;
	e = (i - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
	sub = (i - HIST_SUB) % HIST_SUB;
	w = (int64_t)1 << (e - HIST_SUB_BITS);
	return (HIST_SUB + sub) * w + (w - 1) / 2;
}

void tally_hist_add(struct tally_hist *h, int64_t v)
{
	int i = hist_index(v);

	if (!h->nb || i < h->lo || i >= h->lo + h->nb) {
		int lo = h->nb && h->lo < i ? h->lo : i - HIST_SLACK;
		int hi = h->nb && h->lo + h->nb - 1 > i ? h->lo + h->nb - 1 : i + HIST_SLACK;
		if (lo < 0)
			lo = 0;
		if (hi >= HIST_BUCKETS)
			hi = HIST_BUCKETS - 1;
		uint64_t *b = mt_calloc((size_t)(hi - lo + 1), sizeof(*b));
		if (h->nb)
			memcpy(b + (h->lo - lo), h->b, (size_t)h->nb * sizeof(*b));
		free(h->b);
		h->b = b;
		h->lo = lo;
		h->nb = hi - lo + 1;
	}
	h->b[i - h->lo]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (!h->count || v > h->max)
		h->max = v;
	h->count++;
}

/* The p-th percentile (nearest rank), within 1%; -1 when empty. */
int64_t tally_percentile(const struct tally_hist *h, int p)
{
	int64_t rank, seen = 0, v;

	if (!h->count)
		return -1;
	rank = ((int64_t)p * h->count + 99) / 100;
	if (rank <= 1)
		return h->min;
	if (rank >= h->count)
		return h->max;
	for (int i = 0; i < h->nb; i++) {
		seen += (int64_t)h->b[i];
		if (seen >= rank) {
			v = tally_hist_value(h->lo + i);
			return v < h->min ? h->min : v > h->max ? h->max : v;
		}
	}
	return h->max;
}

/* ---- rows ---- */

/*
 * The key of a row: its direction, 'm' and its method (or 'o': the other
 * methods), then for a named row NUL, 'n' and its name (or 'o': the other
 * names). A method never holds a NUL (it is an SQLite text read as a C string).
 */
static void row_key(struct mt_buf *k, int c2s, const char *method, int named, const char *name, size_t n)
{
	mt_buf_reset(k);
	mt_buf_putc(k, c2s ? 'c' : 's');
	mt_buf_putc(k, method ? 'm' : 'o');
	if (method)
		mt_buf_puts(k, method);
	if (named) {
		mt_buf_putc(k, '\0');
		mt_buf_putc(k, name ? 'n' : 'o');
		if (name)
			mt_buf_append(k, name, n);
	}
}

static size_t row_new(struct tally *s)
{
	if (s->nrows == s->caprows) {
		s->caprows = s->caprows ? s->caprows * 2 : 16;
		s->rows = mt_realloc(s->rows, s->caprows * sizeof(*s->rows));
	}
	memset(&s->rows[s->nrows], 0, sizeof(s->rows[s->nrows]));
	mt_map_put(&s->by_key, s->key.data, s->key.len, (int64_t)s->nrows);
	return s->nrows++;
}

static size_t method_row(struct tally *s, int c2s, const char *method)
{
	int64_t idx;
	size_t i;

	row_key(&s->key, c2s, method, 0, NULL, 0);
	if (mt_map_get(&s->by_key, s->key.data, s->key.len, &idx))
		return (size_t)idx;
	if (s->methods >= TALLY_MAX_METHODS) {
		method = NULL;
		row_key(&s->key, c2s, NULL, 0, NULL, 0);
		if (mt_map_get(&s->by_key, s->key.data, s->key.len, &idx))
			return (size_t)idx;
	}
	i = row_new(s);
	s->methods++;
	s->rows[i].c2s = c2s;
	if (method) {
		s->rows[i].method = mt_strdup(method);
		s->rows[i].subject = mt_subject_key(method);
		s->rows[i].tool_call = !strcmp(method, "tools/call");
	}
	return i;
}

static size_t named_row(struct tally *s, size_t m, const char *name, size_t n)
{
	int64_t idx;
	size_t i;

	row_key(&s->key, s->rows[m].c2s, s->rows[m].method, 1, name, n);
	if (mt_map_get(&s->by_key, s->key.data, s->key.len, &idx))
		return (size_t)idx;
	if (s->rows[m].names >= TALLY_MAX_NAMES) {
		name = NULL;
		n = 0;
		row_key(&s->key, s->rows[m].c2s, s->rows[m].method, 1, NULL, 0);
		if (mt_map_get(&s->by_key, s->key.data, s->key.len, &idx))
			return (size_t)idx;
	}
	i = row_new(s);
	s->rows[m].names++;
	s->rows[i].c2s = s->rows[m].c2s;
	s->rows[i].method = s->rows[m].method ? mt_strdup(s->rows[m].method) : NULL;
	s->rows[i].named = 1;
	s->rows[i].parent = m;
	s->rows[i].tool_call = s->rows[m].tool_call;
	if (name) {
		s->rows[i].name = mt_malloc(n + 1);
		memcpy(s->rows[i].name, name, n);
		s->rows[i].name[n] = '\0';
		s->rows[i].name_len = n;
	}
	return i;
}

/* Is the answer a result whose result.isError is true? */
static int is_error_result(const struct store_item *it)
{
	struct mt_class c;
	struct mt_span v;

	if (mt_classify_trusted(it->raw, it->raw_len, &c) != MT_RESPONSE || !c.result.p)
		return 0;
	return mt_json_member(c.result, "isError", &v) == 1 && v.n == 4 && !memcmp(v.p, "true", 4);
}

static void open_request(struct tally *s, const struct store_item *it)
{
	struct mt_class c;
	size_t m = method_row(s, !strcmp(it->dir, "c2s"), it->method ? it->method : "");
	size_t named = SIZE_MAX, slot;

	s->rows[m].requests++;
	if (s->rows[m].subject && mt_classify_trusted(it->raw, it->raw_len, &c) == MT_REQUEST &&
	    !mt_request_subject(&c, s->rows[m].method, &s->text)) {
		named = named_row(s, m, s->text.data ? s->text.data : "", s->text.len);
		s->rows[named].requests++;
	}
	if (s->nfreed) {
		slot = s->freed[--s->nfreed];
	} else {
		if (s->nopen == s->capopen) {
			s->capopen = s->capopen ? s->capopen * 2 : 64;
			s->open = mt_realloc(s->open, s->capopen * sizeof(*s->open));
		}
		slot = s->nopen++;
	}
	s->open[slot] = (struct tally_open){it->seq, it->t_ns, m, named};
	mt_map_put(&s->by_seq, &it->seq, sizeof(it->seq), (int64_t)slot);
}

/* Take the open request seq out: its slot, or SIZE_MAX when it is not open. */
static size_t close_request(struct tally *s, int64_t seq)
{
	int64_t slot;

	if (!mt_map_take(&s->by_seq, &seq, sizeof(seq), &slot))
		return SIZE_MAX;
	if (s->nfreed == s->capfreed) {
		s->capfreed = s->capfreed ? s->capfreed * 2 : 64;
		s->freed = mt_realloc(s->freed, s->capfreed * sizeof(*s->freed));
	}
	s->freed[s->nfreed++] = (size_t)slot;
	s->open[slot].seq = -1; /* free */
	return (size_t)slot;
}

static void count_answer(struct tally_row *r, const struct store_item *it, int is_error, int64_t lat)
{
	r->answered++;
	if (!strcmp(it->kind, "error"))
		r->errors++;
	else if (is_error)
		r->is_error++;
	tally_hist_add(&r->lat, lat);
}

/* One more error answer with code. */
static void count_code(struct tally *s, int64_t code)
{
	size_t i = 0;

	while (i < s->ncodes && s->codes[i].code < code)
		i++;
	if (i < s->ncodes && s->codes[i].code == code) {
		s->codes[i].n++;
		return;
	}
	if (s->ncodes >= TALLY_MAX_CODES && code != TALLY_OTHER_CODES) {
		count_code(s, TALLY_OTHER_CODES);
		return;
	}
	if (s->ncodes == s->capcodes) {
		s->capcodes = s->capcodes ? s->capcodes * 2 : 8;
		s->codes = mt_realloc(s->codes, s->capcodes * sizeof(*s->codes));
	}
	memmove(&s->codes[i + 1], &s->codes[i], (s->ncodes - i) * sizeof(*s->codes));
	s->codes[i] = (struct tally_code){code, 1};
	s->ncodes++;
}

void tally_feed(struct tally *s, const struct store_item *it)
{
	size_t slot;
	int d;

	if (it->type == STORE_ITEM_STDERR) {
		s->stderr_lines++;
		return;
	}
	if (it->type != STORE_ITEM_MESSAGE)
		return;
	d = strcmp(it->dir, "c2s") ? 1 : 0;
	if (!s->msgs[0] && !s->msgs[1])
		s->first_t = it->t_ns;
	s->last_t = it->t_ns;
	s->msgs[d]++;
	s->bytes[d] += it->size;
	if (!strcmp(it->kind, "request")) {
		open_request(s, it);
	} else if (it->request_seq > 0) {
		if ((slot = close_request(s, it->request_seq)) == SIZE_MAX)
			return; /* answered before, or cancelled: counted then */
		struct tally_open *q = &s->open[slot];
		int is_error =
			s->rows[q->row].tool_call && !strcmp(it->kind, "response") && is_error_result(it);
		count_answer(&s->rows[q->row], it, is_error, it->t_ns - q->t_ns);
		if (q->named != SIZE_MAX)
			count_answer(&s->rows[q->named], it, is_error, it->t_ns - q->t_ns);
		tally_hist_add(&s->all, it->t_ns - q->t_ns);
		if (!strcmp(it->kind, "error"))
			count_code(s, it->has_error_code ? it->error_code : TALLY_NO_CODE);
	} else if (!strcmp(it->kind, "notification")) {
		s->notifications[d]++;
		if (it->cancels_seq > 0 && (slot = close_request(s, it->cancels_seq)) != SIZE_MAX) {
			s->rows[s->open[slot].row].cancelled++;
			if (s->open[slot].named != SIZE_MAX)
				s->rows[s->open[slot].named].cancelled++;
		}
	} else if (!strcmp(it->kind, "invalid") || !strcmp(it->kind, "notjsonrpc")) {
		s->invalid[d]++;
	}
}

void tally_init(struct tally *s)
{
	memset(s, 0, sizeof(*s));
	mt_map_init(&s->by_key, 0);
	mt_map_init(&s->by_seq, 0);
}

void tally_release(struct tally *s)
{
	for (size_t i = 0; i < s->nrows; i++) {
		free(s->rows[i].method);
		free(s->rows[i].name);
		free(s->rows[i].lat.b);
	}
	free(s->rows);
	free(s->open);
	free(s->freed);
	free(s->all.b);
	free(s->codes);
	mt_map_release(&s->by_key);
	mt_map_release(&s->by_seq);
	mt_buf_release(&s->key);
	mt_buf_release(&s->text);
	memset(s, 0, sizeof(*s));
}

/* ---- order ---- */

int64_t tally_unanswered(const struct tally_row *r)
{
	return r->requests - r->answered - r->cancelled;
}

/* NULL sorts after every string. */
static int cmp_str(const char *a, size_t an, const char *b, size_t bn)
{
	int c;

	if (!a || !b)
		return !a - !b;
	c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

static const struct tally_row *sort_rows; /* qsort's context */

/* Methods by direction (c→s first) and name; each followed by its names. */
static int cmp_row(const void *a, const void *b)
{
	const struct tally_row *x = &sort_rows[*(const size_t *)a], *y = &sort_rows[*(const size_t *)b];
	const struct tally_row *mx = x->named ? &sort_rows[x->parent] : x;
	const struct tally_row *my = y->named ? &sort_rows[y->parent] : y;
	int c;

	if (mx->c2s != my->c2s)
		return my->c2s - mx->c2s;
	if (mx != my) {
		c = cmp_str(mx->method, mx->method ? strlen(mx->method) : 0, my->method,
			    my->method ? strlen(my->method) : 0);
		return c ? c : (mx > my) - (mx < my);
	}
	if (x->named != y->named)
		return x->named - y->named;
	return cmp_str(x->name, x->name_len, y->name, y->name_len);
}

static int cmp_open(const void *a, const void *b)
{
	int64_t x = ((const struct tally_open *)a)->seq, y = ((const struct tally_open *)b)->seq;

	return (x > y) - (x < y);
}

/* The rows in output order: a new array of s->nrows indices (NULL when none). */
size_t *tally_order(const struct tally *s)
{
	size_t *order;

	if (!s->nrows)
		return NULL;
	order = mt_calloc(s->nrows, sizeof(*order));
	for (size_t i = 0; i < s->nrows; i++)
		order[i] = i;
	sort_rows = s->rows;
	qsort(order, s->nrows, sizeof(*order), cmp_row);
	return order;
}

/* The requests still open, in seq order, packed at the front of s->open; their count. */
size_t tally_unanswered_list(struct tally *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nopen; i++)
		if (s->open[i].seq >= 0)
			s->open[n++] = s->open[i];
	if (n)
		qsort(s->open, n, sizeof(*s->open), cmp_open);
	return n;
}
