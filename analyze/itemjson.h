/*
 * itemjson.h - a captured item (a message, a stderr line, a gap, an HTTP
 * exchange) as one line of JSON, the format of `show -T json` and `export -T
 * jsonl` (show in doc/capture-files.md). A message's bytes are copied as sent.
 */
#ifndef MCPTAP_ITEMJSON_H
#define MCPTAP_ITEMJSON_H

#include <jansson.h>
#include <stdint.h>

#include "schema/store.h"
#include "schema/util.h"

struct itemjson {
	struct mt_buf line;    /* the line made last, its newline included */
	struct mt_buf text;    /* scratch */
	struct mt_span id_tok; /* scratch: the current message's id token */
};

/* The line of a message, stderr line or gap of session, into j->line. */
void itemjson_item(struct itemjson *j, int64_t session, const struct store_item *it);

/* The line of an HTTP exchange of session, into j->line. */
void itemjson_exchange(struct itemjson *j, int64_t session, const struct store_exchange_row *x);

/* A message's id as JSON, of its original type; NULL when it has none. */
json_t *itemjson_id(const struct store_item *it);

void itemjson_release(struct itemjson *j);

#endif
