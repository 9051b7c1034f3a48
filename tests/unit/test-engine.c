/*
 * test-engine.c - the analyzer's engine fed store items directly: two engines
 * in one process, whose messages share a buffer address and a seq, each judge
 * their own bytes (the rules' per-message memos must not carry one session's
 * answer into the next).
 */
#include "tests/unit/unit.h"

#include "analyze/analyze.h"
#include "schema/store.h"

static const char *const handshake[][3] = {
	{"c2s", "request", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
			   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			   "\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}\n"},
	{"s2c", "response", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":"
			    "\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
			    "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n"},
	{"c2s", "notification", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"},
	{"c2s", "request", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
			   "\"name\":\"echo\",\"arguments\":{}}}\n"},
};

/* One buffer for the answer of both sessions, as a reused read buffer would be. */
static char answer[256];

static void feed(struct an_engine *e, int64_t seq, const char *dir, const char *kind,
		 const char *raw)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memo_per_message),
		cmocka_unit_test(test_batch_elements),
		cmocka_unit_test(test_text_stays_utf8),
	};

	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
