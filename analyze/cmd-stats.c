/*
 * cmd-stats.c - `mcptap stats`: per-method counts, errors, cancels and latency
 * percentiles, requests never answered, and traffic each way, for a session;
 * tools/call, prompts/get and resources/read broken down by the tool, prompt
 * or resource they name.
 *
 * One pass over the session in seq order, with memory in proportion to the
 * requests still open, not to the session's length: an answer or a cancel
 * closes its request, and each row keeps its latencies in a log-bucketed
 * histogram (percentiles within 1%; count, min and max exact). Rows are
 * bounded too: past STATS_MAX_METHODS methods and STATS_MAX_NAMES names per
 * method, the rest are counted together in an "other" row.
 *
 * An answer is paired with its request as the tap recorded them; a request
 * is cancelled when its sender cancelled it before any answer came (as the
 * exchange view says), and an answer after the cancel counts nowhere.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/cli.h"
#include "schema/filter.h"
#include "schema/map.h"

#define STATS_MAX_METHODS 1024 /* (direction, method) rows; then one "other" row */
#define STATS_MAX_NAMES 256    /* names per method; then one "other" row */

static int run_stats(int argc, char **argv);

const struct cmd_entry cmd_stats = {
	.name = "stats",
	.summary = "per-method counts, errors and latency percentiles of a session",
	.usage = "mcptap stats -r FILE [-s LIST] [-Y EXPR] [-T text|json]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: the newest); each is counted on its own\n"
		   "  -Y, --filter EXPR     only the exchanges EXPR passes (a request, or its\n"
		   "                        answer): 'tool == search' (FILTERS in mcptap.1)\n"
		   "  -T, --format FORMAT   text (default) or json (one object on one line)\n"
		   "  -h, --help            this text\n"
		   "\n"
		   "Percentiles are within 1% of the exact value (a log-bucketed histogram);\n"
		   "counts, min and max are exact.\n",
	.run = run_stats,
};

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

struct hist {
	int64_t count, min, max; /* exact */
	uint64_t *b;             /* owned: counts of buckets lo .. lo + nb - 1 */
	int lo, nb;
};

static int hist_index(int64_t v)
{
	int e;

	if (v < HIST_SUB)
		return v < 0 ? 0 : (int)v;
	e = 63 - __builtin_clzll((unsigned long long)v);
	return HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB +
	       (int)((v >> (e - HIST_SUB_BITS)) - HIST_SUB);
}

/* The middle of bucket i. */
static int64_t hist_value(int i)
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

static void hist_add(struct hist *h, int64_t v)
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
static int64_t hist_percentile(const struct hist *h, int p)
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
			v = hist_value(h->lo + i);
			return v < h->min ? h->min : v > h->max ? h->max : v;
		}
	}
	return h->max;
}

/* ---- rows ---- */


/* One (direction, method), or one name under a method. */
struct row {
	int c2s;             /* the requester's direction */
	char *method;        /* owned; NULL: the methods past STATS_MAX_METHODS */
	char *name;          /* owned, name_len bytes; NULL on a method row, or the names
			      * past STATS_MAX_NAMES on a named row */
	size_t name_len;
	int named;           /* a row of one tool, prompt or resource */
	size_t parent;       /* named rows: their method's row */
	size_t names;        /* method rows: named rows under it so far */
	const char *subject;  /* method rows: the params member their requests name a tool,
			       * prompt or resource by (mt_subject_key), or NULL */
	int tool_call;       /* tools/call: results can say isError */
	int64_t requests, answered, errors, is_error, cancelled;
	struct hist lat;     /* the answered requests' latencies */
};

/* A request not yet answered or cancelled. */
struct open_req {
	int64_t seq, t_ns;
	size_t row;
	size_t named;        /* its named row, or SIZE_MAX */
};

struct stats {
	struct row *rows;        /* owned */
	size_t nrows, caprows;
	size_t methods;          /* method rows */
	struct mt_map by_key;    /* row key (see row_key) -> index into rows */
	struct open_req *open;   /* owned: a pool; by_seq points into it */
	size_t nopen, capopen;
	size_t *freed;           /* owned: free slots of open */
	size_t nfreed, capfreed;
	struct mt_map by_seq;    /* request seq -> index into open */
	int64_t msgs[2], bytes[2], notifications[2], stderr_lines, invalid[2];
	int64_t first_t, last_t;
	struct mt_buf key, text; /* scratch */
};

/*
 * The key of a row: its direction, 'm' and its method (or 'o': the other
 * methods), then for a named row NUL, 'n' and its name (or 'o': the other
 * names). A method never holds a NUL (it is an SQLite text read as a C string).
 */
static void row_key(struct mt_buf *k, int c2s, const char *method, int named, const char *name,
		    size_t n)
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

static size_t row_new(struct stats *s)
{
	if (s->nrows == s->caprows) {
		s->caprows = s->caprows ? s->caprows * 2 : 16;
		s->rows = mt_realloc(s->rows, s->caprows * sizeof(*s->rows));
	}
	memset(&s->rows[s->nrows], 0, sizeof(s->rows[s->nrows]));
	mt_map_put(&s->by_key, s->key.data, s->key.len, (int64_t)s->nrows);
	return s->nrows++;
}

static size_t method_row(struct stats *s, int c2s, const char *method)
{
	int64_t idx;
	size_t i;

	row_key(&s->key, c2s, method, 0, NULL, 0);
	if (mt_map_get(&s->by_key, s->key.data, s->key.len, &idx))
		return (size_t)idx;
	if (s->methods >= STATS_MAX_METHODS) {
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

static size_t named_row(struct stats *s, size_t m, const char *name, size_t n)
{
	int64_t idx;
	size_t i;

	row_key(&s->key, s->rows[m].c2s, s->rows[m].method, 1, name, n);
	if (mt_map_get(&s->by_key, s->key.data, s->key.len, &idx))
		return (size_t)idx;
	if (s->rows[m].names >= STATS_MAX_NAMES) {
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

static void open_request(struct stats *s, const struct store_item *it)
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
	s->open[slot] = (struct open_req){it->seq, it->t_ns, m, named};
	mt_map_put(&s->by_seq, &it->seq, sizeof(it->seq), (int64_t)slot);
}

/* Take the open request seq out: its slot, or SIZE_MAX when it is not open. */
static size_t close_request(struct stats *s, int64_t seq)
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

static void count_answer(struct row *r, const struct store_item *it, int is_error, int64_t lat)
{
	r->answered++;
	if (!strcmp(it->kind, "error"))
		r->errors++;
	else if (is_error)
		r->is_error++;
	hist_add(&r->lat, lat);
}

static int each(const struct store_item *it, void *ctx)
{
	struct stats *s = ctx;
	size_t slot;
	int d;

	if (it->type == STORE_ITEM_STDERR) {
		s->stderr_lines++;
		return 0;
	}
	if (it->type != STORE_ITEM_MESSAGE)
		return 0;
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
			return 0; /* answered before, or cancelled: counted then */
		struct open_req *q = &s->open[slot];
		int is_error = s->rows[q->row].tool_call && !strcmp(it->kind, "response") &&
			       is_error_result(it);
		count_answer(&s->rows[q->row], it, is_error, it->t_ns - q->t_ns);
		if (q->named != SIZE_MAX)
			count_answer(&s->rows[q->named], it, is_error, it->t_ns - q->t_ns);
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
	return 0;
}

/* ---- output ---- */

static int64_t unanswered(const struct row *r)
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

static const struct row *sort_rows; /* qsort's context */

/* Methods by direction (c→s first) and name; each followed by its names. */
static int cmp_row(const void *a, const void *b)
{
	const struct row *x = &sort_rows[*(const size_t *)a], *y = &sort_rows[*(const size_t *)b];
	const struct row *mx = x->named ? &sort_rows[x->parent] : x;
	const struct row *my = y->named ? &sort_rows[y->parent] : y;
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
	int64_t x = ((const struct open_req *)a)->seq, y = ((const struct open_req *)b)->seq;

	return (x > y) - (x < y);
}

/* The rows in output order: a new array of s->nrows indices (NULL when none). */
static size_t *row_order(const struct stats *s)
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
static size_t unanswered_list(struct stats *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nopen; i++)
		if (s->open[i].seq >= 0)
			s->open[n++] = s->open[i];
	if (n)
		qsort(s->open, n, sizeof(*s->open), cmp_open);
	return n;
}

/* The columns text takes (a UTF-8 character is one). */
static int columns(const char *text)
{
	int cols = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		cols += (*p & 0xC0) != 0x80;
	return cols;
}

/* Print text padded with spaces to width columns, on the right (left: on the left). */
static void put_padded(const char *text, int width, int left)
{
	int pad = width - columns(text);

	for (; left && pad > 0; pad--)
		putchar(' ');
	fputs(text, stdout);
	for (; pad > 0; pad--)
		putchar(' ');
}

static const char *dir_text(int c2s)
{
	return c2s ? "c→s" : "s→c";
}

/* What a row names, escaped for a terminal: "tools/call", "  echo", "(other methods)". */
static const char *row_label(struct stats *s, const struct row *r)
{
	mt_buf_reset(&s->text);
	if (!r->named) {
		if (r->method)
			mt_printable_append(&s->text, r->method, strlen(r->method));
		else
			mt_buf_puts(&s->text, "(other methods)");
	} else {
		mt_buf_puts(&s->text, "  ");
		if (r->name)
			mt_printable_append(&s->text, r->name, r->name_len);
		else
			mt_buf_puts(&s->text, "(other names)");
	}
	mt_buf_putc(&s->text, '\0');
	return s->text.data;
}

static void print_text(struct stats *s, const struct store_session_row *row)
{
	char dur[32], v[5][32];
	size_t *order = row_order(s), nun;

	cli_format_duration(row->duration_ns >= 0 ? row->duration_ns : s->last_t - s->first_t, dur);
	printf("session %lld: %s, %lld messages c→s (%lld bytes), %lld s→c (%lld bytes), "
	       "%lld stderr lines\n",
	       (long long)row->id, dur, (long long)s->msgs[0], (long long)s->bytes[0],
	       (long long)s->msgs[1], (long long)s->bytes[1], (long long)s->stderr_lines);
	printf("DIR  %-32s %8s %7s %7s %9s %10s %9s %9s %9s %9s\n", "METHOD", "REQUESTS", "ERRORS",
	       "ISERROR", "CANCELLED", "UNANSWERED", "P50", "P95", "P99", "MAX");
	for (size_t k = 0; k < s->nrows; k++) {
		const struct row *r = &s->rows[order[k]];
		static const int ps[4] = {50, 95, 99, 100};
		for (int j = 0; j < 4; j++)
			cli_format_duration(hist_percentile(&r->lat, ps[j]), v[j]);
		if (r->tool_call)
			snprintf(v[4], sizeof(v[4]), "%lld", (long long)r->is_error);
		else
			snprintf(v[4], sizeof(v[4]), "-");
		put_padded(dir_text(r->c2s), 4, 0);
		putchar(' ');
		put_padded(row_label(s, r), 32, 0);
		printf(" %8lld %7lld %7s %9lld %10lld", (long long)r->requests, (long long)r->errors,
		       v[4], (long long)r->cancelled, (long long)unanswered(r));
		for (int j = 0; j < 4; j++) {
			putchar(' ');
			put_padded(r->lat.count ? v[j] : "-", 9, 1);
		}
		putchar('\n');
	}
	nun = unanswered_list(s);
	if (nun)
		printf("never answered:\n");
	for (size_t i = 0; i < nun; i++) {
		const struct open_req *q = &s->open[i];
		printf("  #%lld %s %s", (long long)q->seq, dir_text(s->rows[q->row].c2s),
		       row_label(s, &s->rows[q->row]));
		if (q->named != SIZE_MAX && s->rows[q->named].name)
			printf(" %s", row_label(s, &s->rows[q->named]) + 2);
		putchar('\n');
	}
	if (s->invalid[0] || s->invalid[1])
		printf("not JSON-RPC: %lld lines c→s, %lld s→c\n", (long long)s->invalid[0],
		       (long long)s->invalid[1]);
	free(order);
}

/* A JSON string of n bytes (invalid UTF-8, from a foreign file: made valid). */
static json_t *json_text(struct stats *s, const char *p, size_t n)
{
	json_t *j = json_stringn(p, n);

	if (!j) {
		mt_utf8_lossy(p, n, &s->key);
		j = json_stringn(s->key.data ? s->key.data : "", s->key.len);
	}
	return j;
}

static json_t *row_json(struct stats *s, const struct row *r)
{
	json_t *j = json_object();

	if (!r->named) {
		json_object_set_new(j, "dir", json_string(r->c2s ? "c2s" : "s2c"));
		json_object_set_new(j, "method", r->method ? json_text(s, r->method, strlen(r->method))
							   : json_null());
	} else {
		json_object_set_new(j, "name", r->name ? json_text(s, r->name, r->name_len) : json_null());
	}
	if ((r->named && !r->name) || (!r->named && !r->method))
		json_object_set_new(j, "other", json_true());
	json_object_set_new(j, "requests", json_integer(r->requests));
	json_object_set_new(j, "errors", json_integer(r->errors));
	if (r->tool_call)
		json_object_set_new(j, "is_error", json_integer(r->is_error));
	json_object_set_new(j, "answered", json_integer(r->answered));
	json_object_set_new(j, "unanswered", json_integer(unanswered(r)));
	json_object_set_new(j, "cancelled", json_integer(r->cancelled));
	if (r->lat.count) {
		json_object_set_new(j, "min_ns", json_integer(r->lat.min));
		json_object_set_new(j, "p50_ns", json_integer(hist_percentile(&r->lat, 50)));
		json_object_set_new(j, "p95_ns", json_integer(hist_percentile(&r->lat, 95)));
		json_object_set_new(j, "p99_ns", json_integer(hist_percentile(&r->lat, 99)));
		json_object_set_new(j, "max_ns", json_integer(r->lat.max));
	}
	return j;
}

static json_t *pair(int64_t c2s, int64_t s2c)
{
	return json_pack("{s:I,s:I}", "c2s", (json_int_t)c2s, "s2c", (json_int_t)s2c);
}

static void print_json(struct stats *s, const struct store_session_row *row)
{
	json_t *o = json_object(), *methods = json_array(), *un = json_array(), *m = NULL;
	size_t *order = row_order(s), nun;

	json_object_set_new(o, "session", json_integer(row->id));
	json_object_set_new(o, "duration_ns",
			    json_integer(row->duration_ns >= 0 ? row->duration_ns : s->last_t - s->first_t));
	json_object_set_new(o, "messages", pair(s->msgs[0], s->msgs[1]));
	json_object_set_new(o, "bytes", pair(s->bytes[0], s->bytes[1]));
	json_object_set_new(o, "notifications", pair(s->notifications[0], s->notifications[1]));
	json_object_set_new(o, "not_jsonrpc", pair(s->invalid[0], s->invalid[1]));
	json_object_set_new(o, "stderr_lines", json_integer(s->stderr_lines));
	for (size_t k = 0; k < s->nrows; k++) {
		const struct row *r = &s->rows[order[k]];
		if (!r->named) {
			m = row_json(s, r);
			if (r->subject)
				json_object_set_new(m, "names", json_array());
			json_array_append_new(methods, m);
		} else {
			json_array_append_new(json_object_get(m, "names"), row_json(s, r));
		}
	}
	json_object_set_new(o, "methods", methods);
	nun = unanswered_list(s);
	for (size_t i = 0; i < nun; i++) {
		const struct open_req *q = &s->open[i];
		const struct row *r = &s->rows[q->row];
		json_t *j = json_object();
		json_object_set_new(j, "seq", json_integer(q->seq));
		json_object_set_new(j, "dir", json_string(r->c2s ? "c2s" : "s2c"));
		json_object_set_new(j, "method", r->method ? json_text(s, r->method, strlen(r->method))
							   : json_null());
		if (q->named != SIZE_MAX && s->rows[q->named].name)
			json_object_set_new(j, "name", json_text(s, s->rows[q->named].name,
								 s->rows[q->named].name_len));
		json_array_append_new(un, j);
	}
	json_object_set_new(o, "unanswered", un);
	json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(o);
	free(order);
}

/* One session's figures, printed. 0, or -1 (said). */
static int stats_session(struct store *st, const char *path, int64_t id, int json, int more)
{
	struct stats s;
	struct store_session_row row;
	struct mt_err err = {"", 0};
	int rc = -1;

	memset(&s, 0, sizeof(s));
	memset(&row, 0, sizeof(row));
	mt_map_init(&s.by_key, 0);
	mt_map_init(&s.by_seq, 0);
	/* Unpaired: the latencies come from the open requests' clocks, with no join. */
	if (store_session_get(st, id, &row, &err) || store_each_item_ex(st, id, 0, each, &s, &err) < 0) {
		mt_error("cannot read '%s': %s", path, err.msg);
		goto out;
	}
	if (json) {
		print_json(&s, &row);
	} else {
		if (more)
			putchar('\n');
		print_text(&s, &row);
	}
	rc = 0;
out:
	for (size_t i = 0; i < s.nrows; i++) {
		free(s.rows[i].method);
		free(s.rows[i].name);
		free(s.rows[i].lat.b);
	}
	free(s.rows);
	free(s.open);
	free(s.freed);
	mt_map_release(&s.by_key);
	mt_map_release(&s.by_seq);
	mt_buf_release(&s.key);
	mt_buf_release(&s.text);
	store_session_row_release(&row);
	return rc;
}

static int run_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'},
		{"format", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct store *st = NULL;
	const char *path = NULL, *format = "text", *sid = NULL, *expr = NULL;
	struct mt_filter *filter = NULL;
	int64_t *ids = NULL;
	size_t nids = 0;
	int c, rc = EXIT_ERROR;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': path = optarg; break;
		case 's': sid = optarg; break;
		case 'Y': expr = optarg; break;
		case 'T': format = optarg; break;
		case 'h': cli_help(&cmd_stats, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_stats, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_stats, "unexpected argument '%s'", argv[optind]);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return cli_usage_error(&cmd_stats, "unknown format '%s' (text or json)", format);
	if (sid && cli_session_list_problem(sid))
		return cli_usage_error(&cmd_stats, "bad session list '%s': %s", sid,
				       cli_session_list_problem(sid));
	if (!(path = cli_capture_path(path)))
		return cli_usage_error(&cmd_stats, "no capture file: give -r FILE or set MCPTAP_FILE");
	if (expr && !(filter = cli_filter(&cmd_stats, expr)))
		return EXIT_ERROR;
	if (cli_open_capture(path, &st) || cli_pick_sessions(st, path, sid, CLI_NEWEST, &ids, &nids))
		goto out;
	store_set_filter(st, filter, STORE_FILTER_PAIRS);
	for (size_t k = 0; k < nids; k++)
		if (stats_session(st, path, ids[k], !strcmp(format, "json"), k > 0))
			goto out;
	rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out:
	free(ids);
	mt_filter_free(filter);
	store_close(st);
	return rc;
}
