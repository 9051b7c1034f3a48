/*
 * test-hash.c - mt_fnv1a (schema/util.h), the one hash of mcptap: the
 * published 64-bit FNV-1a test vectors, bytes after a NUL, and the hash of
 * a view's text that store.c compares against the views of old files.
 */
#include "tests/unit/unit.h"

#include <sqlite3.h>

#include "schema/util.h"

static void test_vectors(void **state)
{
	(void)state;
	assert_true(mt_fnv1a("", 0) == 0xcbf29ce484222325ULL);
	assert_true(mt_fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(mt_fnv1a("foobar", 6) == 0x85944171f73967e8ULL);
	/* (NULL with no bytes is the empty string.) */
	assert_true(mt_fnv1a(NULL, 0) == 0xcbf29ce484222325ULL);
}

static void test_length(void **state)
{
	(void)state;
	/* Every byte counts, a NUL and what follows it too. */
	assert_true(mt_fnv1a("a\0b", 3) == 0xe5d29919042666b2ULL);
	assert_true(mt_fnv1a("a\0b", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(mt_fnv1a("foobar", 3) != mt_fnv1a("foobar", 6));
}

/* The whole file at path (a new string; NULL when it cannot be read). */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		s = calloc(1, (size_t)n + 1);
		if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
			free(s);
			s = NULL;
		}
	}
	fclose(f);
	return s;
}

/*
 * The views of the files of versions 1 and 2 (the fixtures) hash to values
 * store.c's old_views holds: a reader of such a file compares its views'
 * text by these hashes.
 */
static void test_old_views(void **state)
{
	static const struct {
		const char *fixture, *name;
		uint64_t hash;
	} want[] = {
		{"tests/fixtures/schema-v1.sql", "exchange", 0x704bf839fecc98daULL},
		{"tests/fixtures/schema-v1.sql", "latest_finding", 0x3579ae4b2c1ed12eULL},
		{"tests/fixtures/schema-v1.sql", "method_stats", 0x945f65f20193a3afULL},
		{"tests/fixtures/schema-v2.sql", "exchange", 0x704bf839fecc98daULL},
		{"tests/fixtures/schema-v2.sql", "latest_finding", 0x3579ae4b2c1ed12eULL},
		{"tests/fixtures/schema-v2.sql", "method_stats", 0x945f65f20193a3afULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		sqlite3 *db = NULL;
		sqlite3_stmt *q = NULL;
		char *sql = read_file(want[i].fixture);

		assert_non_null(sql);
		assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db,
						    "SELECT sql FROM sqlite_master"
						    " WHERE type = 'view' AND name = ?1",
						    -1, &q, NULL),
				 SQLITE_OK);
		sqlite3_bind_text(q, 1, want[i].name, -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		const char *text = (const char *)sqlite3_column_text(q, 0);
		assert_non_null(text);
		assert_true(mt_fnv1a(text, strlen(text)) == want[i].hash);
		sqlite3_finalize(q);
		sqlite3_close(db);
		free(sql);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_length),
		cmocka_unit_test(test_old_views),
	};

	return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
