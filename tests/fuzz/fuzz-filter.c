/*
 * fuzz-filter.c - the display filter's parser on arbitrary expressions. An
 * expression it takes must become SQL that SQLite prepares and runs over
 * the capture file's schema (every field, every operator); one it refuses
 * must say where (a column inside the expression, or just after it) and
 * why. Nothing may crash, leak or trip a sanitizer.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/filter.h"
#include "schema_sql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sqlite3 *db;

static void open_db(void)
{
	if (db)
		return;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, mcptap_schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db,
			 "INSERT INTO session (id, mcptap_version, started_wall) VALUES (1, 'x', 0);"
			 "INSERT INTO message (session, seq, t_ns, wall, dir, kind, method, id, size,"
			 " raw) VALUES (1, 1, 0, 0, 'c2s', 'request', 'tools/call', 1, 9,"
			 " '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}');"
			 "INSERT INTO message (session, seq, t_ns, wall, dir, kind, id, size, raw,"
			 " request_seq) VALUES (1, 2, 5, 0, 's2c', 'error', 1, 9, x'7b00ff', 1);"
			 "INSERT INTO message (session, seq, t_ns, wall, dir, kind, id, size, raw,"
			 " request_seq) VALUES (1, 3, 6, 0, 's2c', 'response', 1, 9, '{\"jsonrpc\":"
			 "\"2.0\",\"id\":1,\"result\":{\"isError\":true,\"content\":[{\"text\":"
			 "\"x\\u0000y\"}]}}', 1);",
			 NULL, NULL, NULL) != SQLITE_OK)
		abort();
	mt_filter_register(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *expr = malloc(size + 1);
	struct mt_filter_err e;
	struct mt_filter *f;

	open_db();
	memcpy(expr, data, size);
	expr[size] = '\0';
	f = mt_filter_parse(expr, &e);
	if (!f) {
		if (e.column < 1 || (size_t)e.column > strlen(expr) + 1 || !e.msg[0])
			abort();
		free(expr);
		return 0;
	}
	for (int http = 0; http < 2; http++) {
		struct mt_buf b = MT_BUF_INIT;
		sqlite3_stmt *s = NULL;
		mt_buf_puts(&b, "SELECT m.seq FROM message m WHERE m.session = ?1 AND ");
		/* (?1 the session, ?2 unused; the literals from ?3, then the lists.) */
		mt_filter_sql(f, "m", 2, http, &b);
		mt_buf_putc(&b, '\0');
		if (sqlite3_prepare_v2(db, b.data, -1, &s, NULL) != SQLITE_OK) {
			fprintf(stderr, "fuzz-filter: '%s' gave SQL SQLite refuses: %s\n%s\n", expr,
				sqlite3_errmsg(db), b.data);
			abort();
		}
		mt_filter_session(f, 1);
		sqlite3_bind_int64(s, 1, 1);
		mt_filter_bind(f, s, 2);
		while (sqlite3_step(s) == SQLITE_ROW)
			;
		sqlite3_finalize(s);
		mt_buf_release(&b);
	}
	mt_filter_free(f);
	free(expr);
	return 0;
}
