/*
 * test-engine.c - the analyzer's engine fed store items directly: two engines
 * in one process, whose messages share a buffer address and a seq, each judge
 * their own bytes (the rules' per-message memos must not carry one session's
 * answer into the next); the compact id sets; an engine's memory against a
 * long session (what it keeps follows the open requests).
 */
#include "tests/unit/unit.h"

#include "analyze/analyze.h"
#include "schema/store.h"

static const char *const handshake[][3] = {
	{"c2s", "request",
	 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
	 "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
	 "\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}\n"},
	{"s2c", "response",
	 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":"
	 "\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
	 "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n"},
	{"c2s", "notification", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"},
	{"c2s", "request",
	 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
	 "\"name\":\"echo\",\"arguments\":{}}}\n"},
};

/* One buffer for the answer of both sessions, as a reused read buffer would be. */
static char answer[256];

static void feed(struct an_engine *e, int64_t seq, const char *dir, const char *kind, const char *raw)
{
	struct store_item it;

	memset(&it, 0, sizeof(it));
	it.type = STORE_ITEM_MESSAGE;
	it.seq = seq;
	it.t_ns = seq * 1000000;
	it.dir = dir;
	it.kind = kind;
	it.raw = raw;
	it.raw_len = strlen(raw);
	it.size = (int64_t)it.raw_len;
	an_engine_feed(e, &it);
}

/* Run one session whose tools/call answer (seq 5) is `result`; its findings of `rule`. */
static size_t session(int64_t id, const char *result, const char *rule)
{
	struct an_options o;
	struct an_engine *e;
	const struct an_finding *f;
	size_t n, hits = 0;

	memset(&o, 0, sizeof(o));
	e = an_engine_new(id, &o);
	for (int i = 0; i < 4; i++)
		feed(e, i + 1, handshake[i][0], handshake[i][1], handshake[i][2]);
	snprintf(answer, sizeof(answer), "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":%s}\n", result);
	feed(e, 5, "s2c", "response", answer);
	an_engine_end(e);
	f = an_engine_findings(e, &n);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(f[i].rule->id, rule))
			hits++;
		else
			print_message("other finding: %s %s\n", f[i].rule->id, f[i].text);
	}
	an_engine_free(e);
	return hits;
}

static void test_memo_per_message(void **state)
{
	(void)state;
	/* A plain text result: nothing to say. */
	assert_int_equal(session(1, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", "RES-003"), 0);
	/* Same address, same seq, other bytes: a content that is not an array. */
	assert_int_equal(session(2, "{\"content\":{\"type\":\"text\",\"text\":\"ok\"}}", "RES-003"), 1);
	/* And back: the plain one is plain again. */
	assert_int_equal(session(3, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", "RES-003"), 0);
}

/* How many findings of `rule` the engine holds. */
static size_t count(struct an_engine *e, const char *rule)
{
	size_t n, hits = 0;
	const struct an_finding *f = an_engine_findings(e, &n);

	for (size_t i = 0; i < n; i++)
		hits += !strcmp(f[i].rule->id, rule);
	return hits;
}

/* Every element of a batch is fed, an array element included: the request after it
 * is known, so its answer answers something. */
static void test_batch_elements(void **state)
{
	struct an_options o;
	struct an_engine *e;

	(void)state;
	memset(&o, 0, sizeof(o));
	e = an_engine_new(1, &o);
	for (int i = 0; i < 3; i++)
		feed(e, i + 1, handshake[i][0], handshake[i][1], handshake[i][2]);
	feed(e, 4, "c2s", "batch",
	     " [ [1, [2]] , {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"},"
	     "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"} ]\n");
	feed(e, 5, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n");
	feed(e, 6, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n");
	an_engine_end(e);
	assert_int_equal(count(e, "RPC-004"), 0);
	/* The array element is one element that is not JSON-RPC, not two. */
	assert_int_equal(count(e, "RPC-001"), 1);
	an_engine_free(e);
}

/* A rule that quotes 80 bytes of a string cuts "é" in two: the finding's text is
 * still UTF-8 (Jansson, and so the JSON and SARIF reports, refuse anything else). */
static void test_text_stays_utf8(void **state)
{
	struct an_options o;
	struct an_engine *e;
	const struct an_finding *f;
	char answer2[512];
	size_t n, hits = 0;

	(void)state;
	memset(&o, 0, sizeof(o));
	e = an_engine_new(1, &o);
	for (int i = 0; i < 3; i++)
		feed(e, i + 1, handshake[i][0], handshake[i][1], handshake[i][2]);
	feed(e, 4, "c2s", "request", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\"}\n");
	snprintf(answer2, sizeof(answer2),
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"resources\":[{\"uri\":\"x y%s"
		 "\xC3\xA9\xC3\xA9\",\"name\":\"r\"}]}}\n",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	feed(e, 5, "s2c", "response", answer2);
	an_engine_end(e);
	f = an_engine_findings(e, &n);
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_string(f[i].text);
		assert_non_null(s);
		json_decref(s);
		if (!strcmp(f[i].rule->id, "RES-022")) {
			hits++;
			assert_non_null(strstr(f[i].text, "\xEF\xBF\xBD"));
		}
	}
	assert_int_equal(hits, 1);
	an_engine_free(e);
}

/* ---- the compact id sets ---- */

static int idset_add_int(struct an_idset *s, int64_t v)
{
	char key[32];

	snprintf(key, sizeof(key), "n:%lld", (long long)v);
	return an_idset_add(s, key, strlen(key));
}

static int idset_has_int(const struct an_idset *s, int64_t v)
{
	char key[32];

	snprintf(key, sizeof(key), "n:%lld", (long long)v);
	return an_idset_has(s, key, strlen(key));
}

/* A million ids counted 0, 1, 2 ... take one range: a few bytes. */
static void test_idset_counter(void **state)
{
	struct an_idset s;

	(void)state;
	an_idset_init(&s);
	for (int64_t i = 0; i < 1000000; i++)
		assert_int_equal(idset_add_int(&s, i), 0);
	assert_int_equal(s.ncls, 1);
	assert_int_equal(s.cls[0].n, 1);
	assert_int_equal(s.hlen, 0);
	assert_true(an_idset_bytes(&s) <= 64);
	/* Every one is in, and a reuse is seen; the neighbours are not in. */
	for (int64_t i = 0; i < 1000000; i += 997)
		assert_int_equal(idset_add_int(&s, i), 1);
	assert_true(idset_has_int(&s, 999999));
	assert_false(idset_has_int(&s, 1000000));
	assert_false(idset_has_int(&s, -1));
	an_idset_release(&s);
}

/* Ranges merge from either side, in any order. */
static void test_idset_merge(void **state)
{
	struct an_idset s;

	(void)state;
	an_idset_init(&s);
	for (int64_t i = 100; i >= 0; i -= 2)
		assert_int_equal(idset_add_int(&s, i), 0);
	assert_int_equal(s.cls[0].n, 51);
	for (int64_t i = 1; i < 100; i += 2)
		assert_int_equal(idset_add_int(&s, i), 0);
	assert_int_equal(s.cls[0].n, 1);
	assert_int_equal(s.cls[0].r[0], 0);
	assert_int_equal(s.cls[0].r[1], 100);
	/* Negative ids and a gap. */
	assert_int_equal(idset_add_int(&s, -5), 0);
	assert_int_equal(idset_add_int(&s, -4), 0);
	assert_int_equal(s.cls[0].n, 2);
	assert_false(idset_has_int(&s, -3));
	assert_int_equal(idset_add_int(&s, -2), 0);
	assert_int_equal(idset_add_int(&s, -1), 0);
	assert_int_equal(idset_add_int(&s, -3), 0);
	assert_int_equal(s.cls[0].n, 1);
	assert_int_equal(idset_add_int(&s, -3), 1);
	an_idset_release(&s);
}

/* A counter with holes: past the ranges, bitmaps (a bit an id), never the table. */
static void test_idset_holes(void **state)
{
	struct an_idset s;

	(void)state;
	an_idset_init(&s);
	for (int64_t i = 0; i < 400000; i += 2)
		assert_int_equal(idset_add_int(&s, i), 0);
	assert_int_equal(s.hlen, 0);
	for (int64_t i = 0; i < 400000; i++)
		assert_int_equal(idset_has_int(&s, i), i % 2 == 0);
	assert_true(an_idset_bytes(&s) < 400000 / 8 + 64 * 1024);
	/* A hole filled later is a new id, not a reuse. */
	assert_int_equal(idset_add_int(&s, 300001), 0);
	assert_int_equal(idset_add_int(&s, 300001), 1);
	an_idset_release(&s);
}

/* String ids with a counter take ranges per prefix; the rest go to the table. */
static void test_idset_strings(void **state)
{
	struct an_idset s;
	char key[64];

	(void)state;
	an_idset_init(&s);
	for (int i = 1; i <= 100000; i++) {
		snprintf(key, sizeof(key), "s:req-%d", i);
		assert_int_equal(an_idset_add(&s, key, strlen(key)), 0);
	}
	assert_int_equal(s.ncls, 1);
	assert_int_equal(s.hlen, 0);
	assert_true(an_idset_has(&s, "s:req-7", 7));
	assert_false(an_idset_has(&s, "s:req-007", 9));
	assert_false(an_idset_has(&s, "s:reqx-7", 8));
	assert_false(an_idset_has(&s, "n:7", 3));
	/* UUID-like ids: 64-bit hashes, exact for all that were added. */
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "s:%08x-4b1d-9c2e-%012xa", i * 2654435761u, i);
		assert_int_equal(an_idset_add(&s, key, strlen(key)), 0);
	}
	assert_int_equal(s.hlen, 10000);
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "s:%08x-4b1d-9c2e-%012xa", i * 2654435761u, i);
		assert_int_equal(an_idset_add(&s, key, strlen(key)), 1);
	}
	assert_false(an_idset_has(&s, "s:00000000-4b1d-9c2e-000000000000b", 34));
	/* Integers far from 0 (no counter) and other keys go to the table too. */
	assert_int_equal(idset_add_int(&s, INT64_MAX), 0);
	assert_int_equal(idset_add_int(&s, INT64_MIN), 0);
	assert_int_equal(idset_add_int(&s, INT64_MIN), 1);
	assert_int_equal(an_idset_add(&s, "n:1.5", 5), 0);
	assert_int_equal(an_idset_add(&s, "null", 4), 0);
	assert_int_equal(an_idset_add(&s, "null", 4), 1);
	an_idset_release(&s);
}

/* ---- an engine against a long session ---- */

static const struct an_finding *find_rule(struct an_engine *e, const char *rule, size_t *hits)
{
	size_t n;
	const struct an_finding *f = an_engine_findings(e, &n), *first = NULL;

	*hits = 0;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].rule->id, rule)) {
			if (!first)
				first = &f[i];
			(*hits)++;
		}
	return first;
}

/*
 * 200000 pings answered: the engine keeps no open request, the ids in one
 * range, and still sees an id reused, a second answer and a late cancelled
 * answer long after the records went (beyond AN_RECENT settled requests).
 */
static void test_engine_long_session(void **state)
{
	struct an_options o;
	struct an_engine *e;
	const struct an_state *st;
	const struct an_finding *f;
	char buf[160];
	int64_t seq = 0;
	size_t hits;

	(void)state;
	memset(&o, 0, sizeof(o));
	e = an_engine_new(1, &o);
	for (int i = 0; i < 3; i++)
		feed(e, ++seq, handshake[i][0], handshake[i][1], handshake[i][2]);
	/* id 3 is cancelled and never answered (the server honours the cancel). */
	feed(e, ++seq, "c2s", "request",
	     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	     "\"params\":{\"name\":\"slow\"}}\n");
	feed(e, ++seq, "c2s", "notification",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
	     "cancelled\",\"params\":{\"requestId\":3}}\n");
	for (int i = 4; i < 200000; i++) {
		snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", i);
		feed(e, ++seq, "c2s", "request", buf);
		snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n", i);
		feed(e, ++seq, "s2c", "response", buf);
	}
	st = an_engine_state(e);
	assert_int_equal(st->nopen, 0);
	assert_null(st->open_first);
	assert_true(an_idset_bytes(&st->ids[AN_C2S]) <= 64);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:10", 4), AN_ID_ANSWERED);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:3", 3), AN_ID_CANCELLED);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:200000", 8), AN_ID_UNUSED);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:199999", 8), AN_ID_KEPT);
	/* Long after: id 10 again, a second answer to 11, an answer to the cancelled 3. */
	feed(e, ++seq, "c2s", "request", "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}\n");
	feed(e, ++seq, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":10,\"result\":{}}\n");
	feed(e, ++seq, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":11,\"result\":{}}\n");
	feed(e, ++seq, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n");
	an_engine_end(e);
	f = find_rule(e, "RPC-003", &hits);
	assert_int_equal(hits, 1);
	assert_non_null(strstr(f->text, "already used by an earlier request"));
	f = find_rule(e, "RPC-004", &hits);
	assert_int_equal(hits, 1);
	assert_int_equal(f->seq, seq - 1);
	f = find_rule(e, "CANCEL-003", &hits);
	assert_int_equal(hits, 1);
	assert_int_equal(f->seq, seq);
	(void)find_rule(e, "LIFE-015", &hits);
	assert_int_equal(hits, 0);
	an_engine_free(e);
}

/* The compact sets lose nothing a rule needs while records are kept: a reuse
 * of a kept id names its first request. */
static void test_engine_reuse_kept(void **state)
{
	struct an_options o;
	struct an_engine *e;
	const struct an_finding *f;
	size_t hits;

	(void)state;
	memset(&o, 0, sizeof(o));
	e = an_engine_new(1, &o);
	for (int i = 0; i < 3; i++)
		feed(e, i + 1, handshake[i][0], handshake[i][1], handshake[i][2]);
	feed(e, 4, "c2s", "request", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
	feed(e, 5, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
	feed(e, 6, "c2s", "request", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
	feed(e, 7, "s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
	an_engine_end(e);
	f = find_rule(e, "RPC-003", &hits);
	assert_int_equal(hits, 1);
	assert_non_null(strstr(f->text, "already used by #4 (ping)"));
	(void)find_rule(e, "RPC-004", &hits);
	assert_int_equal(hits, 0);
	an_engine_free(e);
}

/* Feed n ping pairs from id `from` on; returns the next seq. */
static int64_t pings(struct an_engine *e, int64_t seq, int from, int n)
{
	char buf[160];

	for (int i = from; i < from + n; i++) {
		snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", i);
		feed(e, ++seq, "c2s", "request", buf);
		snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n", i);
		feed(e, ++seq, "s2c", "response", buf);
	}
	return seq;
}

/*
 * A request that created a task stays kept while the task is not terminal
 * (progress and cancels still name it), and goes like any other once it is;
 * one whose task was created already terminal is not kept for it.
 */
static void test_engine_task_pinned(void **state)
{
	struct an_options o;
	struct an_engine *e;
	const struct an_state *st;
	int64_t seq = 0;

	(void)state;
	memset(&o, 0, sizeof(o));
	e = an_engine_new(1, &o);
	st = an_engine_state(e);
	for (int i = 0; i < 3; i++)
		feed(e, ++seq, handshake[i][0], handshake[i][1], handshake[i][2]);
	feed(e, ++seq, "c2s", "request",
	     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	     "\"params\":{\"name\":\"slow\",\"task\":{}}}\n");
	feed(e, ++seq, "s2c", "response",
	     "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"task\":{"
	     "\"taskId\":\"t1\",\"status\":\"working\"}}}\n");
	feed(e, ++seq, "c2s", "request",
	     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	     "\"params\":{\"name\":\"fast\",\"task\":{}}}\n");
	feed(e, ++seq, "s2c", "response",
	     "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"task\":{"
	     "\"taskId\":\"t2\",\"status\":\"completed\"}}}\n");
	seq = pings(e, seq, 10, AN_RECENT + 10);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:2", 3), AN_ID_KEPT);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:3", 3), AN_ID_ANSWERED);
	feed(e, ++seq, "s2c", "notification",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/"
	     "status\",\"params\":{\"taskId\":\"t1\",\"status\":\"completed\"}}\n");
	assert_int_equal(an_id_fate(st, AN_C2S, "n:2", 3), AN_ID_KEPT);
	(void)pings(e, seq, 100000, AN_RECENT + 10);
	assert_int_equal(an_id_fate(st, AN_C2S, "n:2", 3), AN_ID_ANSWERED);
	assert_int_equal(json_object_size(st->tasks), 0);
	an_engine_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memo_per_message),  cmocka_unit_test(test_batch_elements),
		cmocka_unit_test(test_text_stays_utf8),   cmocka_unit_test(test_idset_counter),
		cmocka_unit_test(test_idset_merge),       cmocka_unit_test(test_idset_holes),
		cmocka_unit_test(test_idset_strings),     cmocka_unit_test(test_engine_long_session),
		cmocka_unit_test(test_engine_reuse_kept), cmocka_unit_test(test_engine_task_pinned),
	};

	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
