/*
 * store-floor.c - the storage floor for the benchmark: how many message rows
 * per second SQLite takes when a tight loop inserts them, already classified,
 * through the same store code, schema and batch size as `mcptap record`,
 * timed up to the closed file (the final checkpoint included), as the tap's
 * flood is timed up to its exit.
 *
 * usage: store-floor N FILE   (N rows; FILE is created fresh)
 *        store-floor --from DB FILE
 *        store-floor --from-all DB FILE
 * prints: floor rows=N secs=S rows_per_s=R
 *
 * --from DB: the message rows of DB (a capture file `mcptap import` wrote),
 * read and classified before the clock starts, are inserted into FILE in
 * DB's sessions and order, with their HTTP columns (exchange, SSE id and
 * type), in batches of the import's size: the floor for an import of them.
 * --from-all: its http_exchange rows too (headers JSON as stored), each in
 * its place among the messages: the floor of every row an import writes.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/store.h"
#include "tap/pcap/pcapimport.h"
#include "tap/writer.h"

/* A message row of the source file, classified, or an exchange row (x). */
struct row {
	int64_t session, seq, t_ns, wall, exchange;
	char dir[4];
	char *channel, *sse_id, *sse_event, *raw;
	size_t size;
	struct mt_class cls;
	struct store_exchange *x;
};

static int by_seq(const void *a, const void *b)
{
	const struct row *p = a, *q = b;

	if (p->session != q->session)
		return p->session < q->session ? -1 : 1;
	return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static char *dup_col(sqlite3_stmt *q, int i)
{
	const char *t = (const char *)sqlite3_column_text(q, i);
	return t ? mt_strdup(t) : NULL;
}

/* The floor for the message rows of src, inserted into dst. */
static int from_file(const char *src, const char *dst, int all)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	struct row *rows = NULL;
	size_t n = 0, cap = 0, batch;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct mt_import_opts io;
	int64_t *ids = NULL, nsess = 0, t0, t1;
	int rc = 1;

	mt_import_opts_default(&io);
	batch = io.wopts.batch_rows;
	if (sqlite3_open_v2(src, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT session, seq, t_ns, wall, dir, channel, exchange, sse_id,"
			       " sse_event, raw FROM message ORDER BY session, seq",
			       -1, &q, NULL) != SQLITE_OK) {
		fprintf(stderr, "store-floor: cannot read '%s': %s\n", src, sqlite3_errmsg(db));
		return 1;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			rows = mt_realloc(rows, cap * sizeof(*rows));
		}
		struct row *r = &rows[n++];
		memset(r, 0, sizeof(*r));
		r->session = sqlite3_column_int64(q, 0);
		r->seq = sqlite3_column_int64(q, 1);
		r->t_ns = sqlite3_column_int64(q, 2);
		r->wall = sqlite3_column_int64(q, 3);
		snprintf(r->dir, sizeof(r->dir), "%s", (const char *)sqlite3_column_text(q, 4));
		r->channel = dup_col(q, 5);
		r->exchange = sqlite3_column_int64(q, 6);
		r->sse_id = dup_col(q, 7);
		r->sse_event = dup_col(q, 8);
		r->size = (size_t)sqlite3_column_bytes(q, 9);
		r->raw = mt_malloc(r->size + 1);
		memcpy(r->raw, sqlite3_column_blob(q, 9), r->size);
		mt_classify(r->raw, r->size, &r->cls);
		if (r->session > nsess)
			nsess = r->session;
	}
	sqlite3_finalize(q);
	if (all && sqlite3_prepare_v2(db,
				      "SELECT session, seq, conn, t_ns, wall, method, target,"
				      " req_headers, last_event_id, status, resp_headers, resp_type,"
				      " first_byte_ns, outcome, error, end_ns FROM http_exchange",
				      -1, &q, NULL) == SQLITE_OK) {
		while (sqlite3_step(q) == SQLITE_ROW) {
			if (n == cap) {
				cap = cap ? cap * 2 : 65536;
				rows = mt_realloc(rows, cap * sizeof(*rows));
			}
			struct row *r = &rows[n++];
			struct store_exchange *x = mt_calloc(1, sizeof(*x));
			memset(r, 0, sizeof(*r));
			r->x = x;
			r->session = sqlite3_column_int64(q, 0);
			r->seq = x->seq = sqlite3_column_int64(q, 1);
			x->conn = sqlite3_column_int64(q, 2);
			x->t_ns = sqlite3_column_int64(q, 3);
			x->wall = sqlite3_column_int64(q, 4);
			x->method = dup_col(q, 5);
			x->target = dup_col(q, 6);
			x->req_headers_json = dup_col(q, 7);
			x->last_event_id = dup_col(q, 8);
			x->status = sqlite3_column_int(q, 9);
			x->resp_headers_json = dup_col(q, 10);
			x->resp_type = dup_col(q, 11);
			x->first_byte_ns = sqlite3_column_int64(q, 12);
			x->outcome = dup_col(q, 13);
			x->error = dup_col(q, 14);
			x->end_ns = sqlite3_column_int64(q, 15);
		}
		sqlite3_finalize(q);
		qsort(rows, n, sizeof(*rows), by_seq);
	}
	sqlite3_close(db);
	unlink(dst);
	ids = mt_calloc((size_t)nsess + 1, sizeof(*ids));
	t0 = mt_mono_ns();
	if (store_open(dst, STORE_WRITE, &st, &err))
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct row *r = &rows[i];
		if (i % batch == 0 && store_begin(st, &err))
			goto fail;
		if (!ids[r->session]) {
			struct store_session_new sn = {"http", r->wall, NULL, NULL, 0, "http://x", "y"};
			if (store_session_create(st, &sn, &ids[r->session], &err))
				goto fail;
		}
		if (r->x) {
			r->x->session = ids[r->session];
			if (store_exchange_begin(st, r->x, &err))
				goto fail;
		} else {
			struct store_msg m = {
				ids[r->session], r->seq,    r->t_ns,      r->wall, r->dir, r->channel,
				&r->cls,         r->raw,    r->size,      0,       0,      0,
				r->exchange,     r->sse_id, r->sse_event, 0};
			if (store_add_message(st, &m, &err))
				goto fail;
		}
		if ((i + 1) % batch == 0 && store_commit(st, &err))
			goto fail;
	}
	if (n % batch && store_commit(st, &err))
		goto fail;
	store_close(st);
	st = NULL;
	t1 = mt_mono_ns();
	printf("floor rows=%zu secs=%.3f rows_per_s=%.0f\n", n, (double)(t1 - t0) / 1e9,
	       (double)n / ((double)(t1 - t0) / 1e9));
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "store-floor: %s\n", err.msg);
out:
	store_close(st);
	for (size_t i = 0; i < n; i++) {
		free(rows[i].channel);
		free(rows[i].sse_id);
		free(rows[i].sse_event);
		free(rows[i].raw);
		if (rows[i].x) {
			struct store_exchange *x = rows[i].x;
			free((char *)x->method);
			free((char *)x->target);
			free((char *)x->req_headers_json);
			free((char *)x->last_event_id);
			free((char *)x->resp_headers_json);
			free((char *)x->resp_type);
			free((char *)x->outcome);
			free((char *)x->error);
			free(x);
		}
	}
	free(rows);
	free(ids);
	return rc;
}

int main(int argc, char **argv)
{
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":123456,\"method\":\"ping\"}\n";
	static const char resp[] = "{\"jsonrpc\":\"2.0\",\"id\":123456,\"result\":{}}\n";
	struct writer_opts wo;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct mt_class creq, cresp;
	struct store_session_new sn = {"stdio", 0, "store-floor", "/", 0, NULL, NULL};
	int64_t n, session, t0, t1;
	int rc = 1;

	if (argc == 4 && (!strcmp(argv[1], "--from") || !strcmp(argv[1], "--from-all")))
		return from_file(argv[2], argv[3], !strcmp(argv[1], "--from-all"));
	if (argc != 3 || mt_parse_int64(argv[1], &n) || n <= 0) {
		fprintf(stderr, "usage: store-floor N FILE\n       store-floor --from DB FILE\n"
				"       store-floor --from-all DB FILE\n");
		return 2;
	}
	unlink(argv[2]);
	writer_opts_default(&wo);
	sn.started_wall = mt_wall_us();
	if (store_open(argv[2], STORE_WRITE, &st, &err) || store_session_create(st, &sn, &session, &err)) {
		fprintf(stderr, "store-floor: %s\n", err.msg);
		goto out;
	}
	/* Parsed once, outside the loop: the floor is the store alone. */
	mt_classify(req, sizeof(req) - 1, &creq);
	mt_classify(resp, sizeof(resp) - 1, &cresp);
	t0 = mt_mono_ns();
	for (int64_t i = 0; i < n; i++) {
		struct store_msg m = {session,
				      i + 1,
				      mt_mono_ns() - t0,
				      mt_wall_us(),
				      i % 2 ? "s2c" : "c2s",
				      "stdio",
				      i % 2 ? &cresp : &creq,
				      i % 2 ? resp : req,
				      i % 2 ? sizeof(resp) - 1 : sizeof(req) - 1,
				      0,
				      i % 2 ? i : 0 /* a response answers the request before it */,
				      0,
				      0,
				      NULL,
				      NULL,
				      0};
		if (i % (int64_t)wo.batch_rows == 0 && store_begin(st, &err))
			goto fail;
		if (store_add_message(st, &m, &err))
			goto fail;
		if ((i + 1) % (int64_t)wo.batch_rows == 0 && store_commit(st, &err))
			goto fail;
	}
	if (n % (int64_t)wo.batch_rows && store_commit(st, &err))
		goto fail;
	/* Closing checkpoints the log into the file, as the tap's exit does. */
	store_close(st);
	st = NULL;
	t1 = mt_mono_ns();
	printf("floor rows=%lld secs=%.3f rows_per_s=%.0f\n", (long long)n, (double)(t1 - t0) / 1e9,
	       (double)n / ((double)(t1 - t0) / 1e9));
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "store-floor: %s\n", err.msg);
out:
	store_close(st);
	return rc;
}
