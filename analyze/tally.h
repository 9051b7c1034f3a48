/*
 * tally.h - per-method counts, errors, cancels and latency percentiles of a
 * session, fed its items in seq order (`mcptap stats`, and the summary of
 * `mcptap report`). tools/call, prompts/get and resources/read are broken
 * down by the tool, prompt or resource they name.
 *
 * Memory is in proportion to the requests still open, not to the session's
 * length: an answer or a cancel closes its request, and each row keeps its
 * latencies in a log-bucketed histogram (percentiles within 1%; count, min
 * and max exact). Rows are bounded too: past TALLY_MAX_METHODS methods and
 * TALLY_MAX_NAMES names per method, the rest are counted together in an
 * "other" row.
 *
 * An answer is paired with its request as the tap recorded them; a request
 * is cancelled when its sender cancelled it before any answer came (as the
 * exchange view says), and an answer after the cancel counts nowhere.
 */
#ifndef MCPTAP_TALLY_H
#define MCPTAP_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "schema/map.h"
#include "schema/store.h"
#include "schema/util.h"

#define TALLY_MAX_METHODS 1024 /* (direction, method) rows; then one "other" row */
#define TALLY_MAX_NAMES 256    /* names per method; then one "other" row */
#define TALLY_MAX_CODES 64     /* error codes told apart; then counted as "other" */

/* Error answers with one code. */
struct tally_code {
	int64_t code; /* the code; TALLY_NO_CODE: none (or not an integer), or
		       * TALLY_OTHER_CODES: the codes past TALLY_MAX_CODES */
	int64_t n;
};
#define TALLY_NO_CODE INT64_MIN
#define TALLY_OTHER_CODES INT64_MAX

struct tally_hist {
	int64_t count, min, max; /* exact */
	uint64_t *b;             /* owned: counts of buckets lo .. lo + nb - 1 */
	int lo, nb;
};

/* One (direction, method), or one name under a method. */
struct tally_row {
	int c2s;      /* the requester's direction */
	char *method; /* owned; NULL: the methods past TALLY_MAX_METHODS */
	char *name;   /* owned, name_len bytes; NULL on a method row, or the names
		       * past TALLY_MAX_NAMES on a named row */
	size_t name_len;
	int named;           /* a row of one tool, prompt or resource */
	size_t parent;       /* named rows: their method's row */
	size_t names;        /* method rows: named rows under it so far */
	const char *subject; /* method rows: the params member their requests name a tool,
			      * prompt or resource by (mt_subject_key), or NULL */
	int tool_call;       /* tools/call: results can say isError */
	int64_t requests, answered, errors, is_error, cancelled;
	struct tally_hist lat; /* the answered requests' latencies */
};

/* A request not yet answered or cancelled. */
struct tally_open {
	int64_t seq, t_ns;
	size_t row;
	size_t named; /* its named row, or SIZE_MAX */
};

struct tally {
	struct tally_row *rows; /* owned */
	size_t nrows, caprows;
	size_t methods;          /* method rows */
	struct mt_map by_key;    /* row key (see row_key) -> index into rows */
	struct tally_open *open; /* owned: a pool; by_seq points into it */
	size_t nopen, capopen;
	size_t *freed; /* owned: free slots of open */
	size_t nfreed, capfreed;
	struct mt_map by_seq; /* request seq -> index into open */
	int64_t msgs[2], bytes[2], notifications[2], stderr_lines, invalid[2];
	int64_t first_t, last_t;
	struct tally_hist all;    /* every answered request's latency */
	struct tally_code *codes; /* owned: the error answers by code, the lowest first */
	size_t ncodes, capcodes;
	struct mt_buf key, text; /* scratch */
};

void tally_init(struct tally *s);
void tally_release(struct tally *s);
/* One item of the session (seq order; full items, not STORE_ITEMS_LEAN). */
void tally_feed(struct tally *s, const struct store_item *it);

void tally_hist_add(struct tally_hist *h, int64_t v);
/* The p-th percentile (nearest rank), within 1%; -1 when empty. */
int64_t tally_percentile(const struct tally_hist *h, int p);
/* The middle of histogram bucket i (h->lo + k for the k-th of h->b). */
int64_t tally_hist_value(int i);

/* A row's requests neither answered nor cancelled. */
int64_t tally_unanswered(const struct tally_row *r);
/*
 * The rows in output order (methods by direction, c→s first, and name; each
 * followed by its names): a new array of s->nrows indexes, NULL when none.
 */
size_t *tally_order(const struct tally *s);
/* The requests still open, in seq order, packed at the front of s->open; their count. */
size_t tally_unanswered_list(struct tally *s);

#endif
