/*
 * unit.h - what every cmocka unit test includes: cmocka's headers in the order
 * it needs, and small helpers for scratch files.
 */
#ifndef MCPTAP_UNIT_H
#define MCPTAP_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "schema/util.h"

/*
 * A fresh scratch directory under $TMPDIR (or /tmp); the caller removes it
 * with unit_rmdir. The test fails when none can be made.
 */
static inline char *unit_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = mt_asprintf("%s/mcptap-unit.XXXXXX", base && *base ? base : "/tmp");

	if (!mkdtemp(dir))
		fail_msg("cannot make a scratch directory in %s", base && *base ? base : "/tmp");
	return dir;
}

/* Remove a scratch directory and what is in it (one level). */
static inline void unit_rmdir(char *dir)
{
	char cmd[4200];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	free(dir);
}

/*
 * The rows a query of capture file db gives, "|" between columns, "\n" after
 * each row (NULL as "NULL"); malloc'd. Waits up to 5 s for a writer's lock.
 */
static inline char *unit_rows(const char *db, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	struct mt_buf out = MT_BUF_INIT;

	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(h, 5000);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			const unsigned char *t = sqlite3_column_text(st, i);
			if (i)
				mt_buf_putc(&out, '|');
			mt_buf_puts(&out, t ? (const char *)t : "NULL");
		}
		mt_buf_putc(&out, '\n');
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
	mt_buf_putc(&out, '\0');
	return out.data;
}

#endif
