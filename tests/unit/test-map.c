/*
 * test-map.c - the byte-string to int64 hash map (schema/map.h): put, get,
 * take, replace, growth across rehashes with tombstones, long and short keys,
 * keys with NULs, the entry limit, and the bytes it says it holds.
 */
#include "tests/unit/unit.h"

#include "schema/map.h"
#include "schema/util.h"

static void test_basic(void **state)
{
	struct mt_map m;
	int64_t v = 0;

	(void)state;
	mt_map_init(&m, 0);
	assert_int_equal(mt_map_get(&m, "a", 1, &v), 0);
	assert_int_equal(mt_map_put(&m, "a", 1, 10), 0);
	assert_int_equal(mt_map_put(&m, "b", 1, 20), 0);
	assert_int_equal(mt_map_get(&m, "a", 1, &v), 1);
	assert_int_equal(v, 10);
	assert_int_equal(mt_map_put(&m, "a", 1, 11), 0); /* replace */
	assert_int_equal(mt_map_get(&m, "a", 1, &v), 1);
	assert_int_equal(v, 11);
	assert_int_equal(m.len, 2);
	assert_int_equal(mt_map_take(&m, "a", 1, &v), 1);
	assert_int_equal(v, 11);
	assert_int_equal(mt_map_take(&m, "a", 1, &v), 0);
	assert_int_equal(mt_map_get(&m, "a", 1, &v), 0);
	assert_int_equal(m.len, 1);
	/* "" and keys that differ only after a NUL are distinct keys. */
	assert_int_equal(mt_map_put(&m, "", 0, 1), 0);
	assert_int_equal(mt_map_put(&m, "x\0y", 3, 2), 0);
	assert_int_equal(mt_map_put(&m, "x\0z", 3, 3), 0);
	assert_int_equal(mt_map_get(&m, "x\0y", 3, &v), 1);
	assert_int_equal(v, 2);
	assert_int_equal(mt_map_get(&m, "x", 1, &v), 0);
	assert_int_equal(mt_map_get(&m, "", 0, &v), 1);
	assert_int_equal(v, 1);
	mt_map_release(&m);
}

static void test_many(void **state)
{
	struct mt_map m;
	char key[64];
	int64_t v;

	(void)state;
	mt_map_init(&m, 0);
	/* Short (inline) and long (allocated) keys, with removals between growths. */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 20000; i++) {
			int n = snprintf(key, sizeof(key), i % 2 ? "k%d" : "a-much-longer-key-%d-xxxxxxxx",
					 i);
			assert_int_equal(mt_map_put(&m, key, (size_t)n, i + round), 0);
		}
		for (int i = 0; i < 20000; i += 3) {
			int n = snprintf(key, sizeof(key), i % 2 ? "k%d" : "a-much-longer-key-%d-xxxxxxxx",
					 i);
			assert_int_equal(mt_map_take(&m, key, (size_t)n, &v), 1);
			assert_int_equal(v, i + round);
		}
	}
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(key, sizeof(key), i % 2 ? "k%d" : "a-much-longer-key-%d-xxxxxxxx", i);
		assert_int_equal(mt_map_get(&m, key, (size_t)n, &v), i % 3 != 0);
		if (i % 3)
			assert_int_equal(v, i + 2);
	}
	assert_int_equal(m.len, 20000 - 6667);
	mt_map_release(&m);
}

static void test_limit(void **state)
{
	struct mt_map m;
	int64_t v;

	(void)state;
	mt_map_init(&m, 2);
	assert_int_equal(mt_map_put(&m, "a", 1, 1), 0);
	assert_int_equal(mt_map_put(&m, "b", 1, 2), 0);
	assert_int_equal(mt_map_put(&m, "c", 1, 3), -1); /* full: nothing stored */
	assert_int_equal(mt_map_get(&m, "c", 1, &v), 0);
	assert_int_equal(mt_map_put(&m, "a", 1, 9), 0); /* replacing still works */
	assert_int_equal(mt_map_take(&m, "b", 1, &v), 1);
	assert_int_equal(mt_map_put(&m, "c", 1, 3), 0); /* room again */
	mt_map_release(&m);
}

/* What the map holds, as a budget counts it: its slots, and long keys apart. */
static void test_bytes(void **state)
{
	struct mt_map m;
	size_t slots;
	int64_t v;
	char k[16];

	(void)state;
	mt_map_init(&m, 0);
	assert_int_equal(mt_map_bytes(&m), 0);
	assert_int_equal(mt_map_put(&m, "short", 5, 1), 0);
	slots = mt_map_bytes(&m); /* (16 slots at first) */
	assert_int_equal((slots - MT_MEM_CHUNK) % 16, 0);
	assert_int_equal(mt_map_put(&m, "a key that is longer than twenty", 32, 2), 0);
	assert_int_equal(mt_map_bytes(&m), slots + 32 + MT_MEM_CHUNK);
	assert_int_equal(mt_map_put(&m, "a key that is longer than twenty", 32, 3), 0);
	assert_int_equal(mt_map_bytes(&m), slots + 32 + MT_MEM_CHUNK); /* (replaced) */
	assert_int_equal(mt_map_take(&m, "a key that is longer than twenty", 32, &v), 1);
	assert_int_equal(mt_map_bytes(&m), slots);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		assert_int_equal(mt_map_put(&m, k, strlen(k), i), 0);
	}
	/* (grown four times for 101 keys: 256 slots) */
	assert_int_equal(mt_map_bytes(&m), (slots - MT_MEM_CHUNK) * 16 + MT_MEM_CHUNK);
	mt_map_release(&m);
	assert_int_equal(mt_map_bytes(&m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_bytes),
	};

	return cmocka_run_group_tests_name("map", tests, NULL, NULL);
}
