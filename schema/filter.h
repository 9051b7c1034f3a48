/*
 * filter.h - the display filter (-Y EXPR) every reader takes: one parser,
 * compiled to an SQL condition over the store's message table.
 *
 *   method == tools/call and duration > 100ms
 *   error or code == -32601
 *   not dir == c2s and (text contains "secret" or tool matches "^fs_")
 *
 * A field names a value of a message (its own, or for an answer that of the
 * request it answers: method, tool, prompt, uri); a field alone is true when
 * the message has that value. The literals are bound as parameters
 * (mt_filter_bind): no literal ever becomes SQL text.
 */
#ifndef MCPTAP_FILTER_H
#define MCPTAP_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "schema/util.h"

struct mt_filter;

/* Where and why an expression is bad: column is 1-based. */
struct mt_filter_err {
	int column;
	char msg[240];
};

/* Parse expr. NULL with *e set when it is not a filter. */
struct mt_filter *mt_filter_parse(const char *expr, struct mt_filter_err *e);
void mt_filter_free(struct mt_filter *f);

/*
 * The filter as an SQL condition, appended to out, over a row of the message
 * table named alias. Its literals are ?N parameters numbered from base + 1
 * (the same numbers each time it is appended); ?1 must be the session's id.
 * http: the file has the http_exchange table (without it, status and path
 * are NULL).
 */
void mt_filter_sql(const struct mt_filter *f, const char *alias, int base, int http, struct mt_buf *out);
/*
 * The SQL of a filter with a request-given field (method, tool, prompt, uri)
 * also uses a set per such test, bound after the literals, where a scan
 * notes each request's verdict for its answers. Before a
 * statement runs, mt_filter_session says the session it reads (the sets are
 * kept while it stays the same: a follower's reads); mt_filter_bind binds the
 * literals and the sets to a statement (a sqlite3_stmt *).
 */
void mt_filter_session(struct mt_filter *f, int64_t session);
void mt_filter_bind(const struct mt_filter *f, void *stmt, int base);

/*
 * Register the SQL functions the filter's SQL calls on a connection (a
 * sqlite3 *): mcptap_matches (a regular expression), mcptap_param (a string
 * member of a message's params), mcptap_error (an error's or isError's
 * text), mcptap_has (a prefilter on the bytes) and mcptap_pair (a
 * request-given field's verdict, noted and looked up).
 */
void mt_filter_register(void *db);

/* The field names, for help and messages: "session, seq, dir, ...". */
const char *mt_filter_fields(void);

#endif
