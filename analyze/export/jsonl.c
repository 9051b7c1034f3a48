/*
 * jsonl.c - export -T jsonl: one JSON object per line, the lines of `show -T
 * json` (show in doc/capture-files.md) for every session given, its HTTP exchanges
 * among them: each message's bytes as they were sent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export/export.h"
#include "analyze/itemjson.h"

static int jsonl_begin(struct ex_sink *x)
{
	x->priv = calloc(1, sizeof(struct itemjson));
	if (!x->priv) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	return 0;
}

static int jsonl_item(struct ex_sink *x, const struct store_item *it)
{
	struct itemjson *j = x->priv;

	if (it->type == STORE_ITEM_EXCHANGE)
		itemjson_exchange(j, x->session->id, it->x);
	else
		itemjson_item(j, x->session->id, it);
	if (fwrite(j->line.data, 1, j->line.len, x->out) != j->line.len) {
		mt_err_set(&x->err, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

static void jsonl_release(struct ex_sink *x)
{
	struct itemjson *j = x->priv;

	if (j)
		itemjson_release(j);
	free(j);
	x->priv = NULL;
}

const struct ex_format ex_jsonl = {
	.name = "jsonl",
	.what = "one JSON object per line, as show -T json prints them",
	.flags = STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES,
	.begin = jsonl_begin,
	.item = jsonl_item,
	.release = jsonl_release,
};
