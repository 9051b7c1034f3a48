/*
 * test-facts.c - pairing and the handshake read from classified messages
 * (schema/facts.h): answers paired with requests each way, ids of two types
 * and two senders kept apart, a cancel naming an open request, answers to
 * nothing; the client and server of an initialize exchange (an escaped
 * method name too), a 2026-07-28 client named in _meta once, and what is not
 * a handshake.
 */
#include "tests/unit/unit.h"

#include <string.h>

#include "schema/facts.h"

/* The message as the writer sees it: classified, then paired at seq. */
static int64_t pair(struct mt_facts *f, int c2s, const char *json, int64_t seq)
{
	struct mt_class c;

	mt_classify(json, strlen(json), &c);
	return mt_facts_pair(f, c2s, &c, seq);
}

/* Pair, then read the handshake: 1 with h filled, or 0. */
static int shake(struct mt_facts *f, int c2s, const char *json, int64_t seq, struct mt_handshake *h)
{
	struct mt_class c;
	int64_t req;

	mt_classify(json, strlen(json), &c);
	req = mt_facts_pair(f, c2s, &c, seq);
	return mt_facts_handshake(f, c2s, &c, json, strlen(json), seq, req, h);
}

static void test_pairing(void **state)
{
	struct mt_facts f;

	(void)state;
	mt_facts_init(&f);
	assert_int_equal(pair(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 10), 0);
	assert_int_equal(pair(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"ping\"}", 11), 0);
	/* The server's own request with the same id is its own. */
	assert_int_equal(pair(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}", 12), 0);
	/* Each answer takes its own request: by direction, id and id type. */
	assert_int_equal(pair(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}", 13), 11);
	assert_int_equal(pair(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"roots\":[]}}", 14), 12);
	assert_int_equal(
		pair(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"x\"}}", 15),
		10);
	/* A second answer answers nothing; nor does a notification. */
	assert_int_equal(pair(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 16), 0);
	assert_int_equal(pair(&f, 1, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 17),
			 0);
	mt_facts_release(&f);
}

static int64_t pair_post(struct mt_facts *f, int c2s, const char *json, int64_t seq, int64_t x)
{
	struct mt_class c;
	int64_t req;

	mt_classify(json, strlen(json), &c);
	req = mt_facts_pair(f, c2s, &c, seq);
	return req ? req : mt_facts_pair_post(f, c2s, &c, seq, x);
}

/* An error without an id in a POST's response body answers that POST's request. */
static void test_post_pairing(void **state)
{
	struct mt_facts f;
	const char *nul = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"x\"},\"id\":null}";
	const char *none = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"x\"}}";

	(void)state;
	mt_facts_init(&f);
	assert_int_equal(pair_post(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 2, 1),
			 0);
	assert_int_equal(pair_post(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", 5, 4), 0);
	/* Each by its own exchange, in any order. */
	assert_int_equal(pair_post(&f, 0, nul, 6, 4), 5);
	assert_int_equal(pair_post(&f, 0, none, 3, 1), 2);
	/* Taken: the id is free again, and a second id-less error answers nothing. */
	assert_int_equal(pair_post(&f, 0, nul, 7, 4), 0);
	assert_int_equal(pair_post(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 9, 8), 0);
	assert_int_equal(pair_post(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 10, 8), 9);
	/* A POST with two requests: which one an id-less error answers is not known. */
	assert_int_equal(pair_post(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}", 12, 11), 0);
	assert_int_equal(pair_post(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", 13, 11), 0);
	assert_int_equal(pair_post(&f, 0, nul, 14, 11), 0);
	/* Not a body (exchange 0), or a request answered by its id already. */
	assert_int_equal(pair_post(&f, 0, nul, 15, 0), 0);
	mt_facts_release(&f);
}

static void test_cancel(void **state)
{
	struct mt_facts f;

	(void)state;
	mt_facts_init(&f);
	pair(&f, 1,
	     "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}",
	     3);
	assert_int_equal(pair(&f, 1,
			      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			      "\"params\":{\"requestId\":\"r-7\"}}",
			      4),
			 3);
	/* The request stays open: its answer may still come, and pairs. */
	assert_int_equal(pair(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"result\":{}}", 5), 3);
	/* A cancel of nothing open, of a number, or without a requestId. */
	assert_int_equal(pair(&f, 1,
			      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			      "\"params\":{\"requestId\":\"r-7\"}}",
			      6),
			 0);
	assert_int_equal(pair(&f, 1,
			      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			      "\"params\":{\"requestId\":7}}",
			      7),
			 0);
	assert_int_equal(pair(&f, 1,
			      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			      "\"params\":{}}",
			      8),
			 0);
	mt_facts_release(&f);
}

static void test_initialize(void **state)
{
	struct mt_facts f;
	struct mt_handshake h;

	(void)state;
	mt_facts_init(&f);
	assert_int_equal(shake(&f, 1,
			       "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initi\\u0061lize\","
			       "\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":"
			       "{\"sampling\":{},\"roots\":{\"listChanged\":true}},\"clientInfo\":"
			       "{\"name\":\"c\",\"version\":\"1.2\"}}}",
			       1, &h),
			 1);
	assert_int_equal(h.side, MT_SIDE_CLIENT);
	assert_string_equal(h.protocol_version, "2025-06-18");
	assert_string_equal(h.name, "c");
	assert_string_equal(h.version, "1.2");
	assert_string_equal(h.caps_json, "{\"roots\":{\"listChanged\":true},\"sampling\":{}}");
	mt_handshake_release(&h);
	assert_int_equal(f.init_seq, 1);
	/* Another answer first is no handshake; the initialize's answer is the server's. */
	assert_int_equal(shake(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}", 2, &h), 0);
	assert_int_equal(shake(&f, 0, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", 3, &h), 0);
	assert_int_equal(shake(&f, 0,
			       "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":"
			       "\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"serverInfo\":"
			       "{\"name\":\"s\"}}}",
			       4, &h),
			 1);
	assert_int_equal(h.side, MT_SIDE_SERVER);
	assert_string_equal(h.protocol_version, "2025-06-18");
	assert_string_equal(h.name, "s");
	assert_null(h.version);
	assert_string_equal(h.caps_json, "{\"tools\":{}}");
	mt_handshake_release(&h);
	assert_int_equal(f.init_seq, 0);
	/* An answer with the id again is no longer the initialize's. */
	assert_int_equal(shake(&f, 0,
			       "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"serverInfo\":"
			       "{\"name\":\"t\"}}}",
			       5, &h),
			 0);
	mt_facts_release(&f);
}

static void test_initialize_without_params(void **state)
{
	struct mt_facts f;
	struct mt_handshake h;

	(void)state;
	mt_facts_init(&f);
	/* The client is known (no _meta client is looked for after), though its params say nothing. */
	assert_int_equal(shake(&f, 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}", 1, &h), 0);
	assert_int_equal(f.client_known, 1);
	assert_int_equal(shake(&f, 1,
			       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":"
			       "{\"_meta\":{\"io.modelcontextprotocol/clientInfo\":{\"name\":\"m\"}}}}",
			       2, &h),
			 0);
	mt_facts_release(&f);
}

static void test_meta_client(void **state)
{
	struct mt_facts f;
	struct mt_handshake h;

	(void)state;
	mt_facts_init(&f);
	/* Any other _meta (a progress token) is no client. */
	assert_int_equal(shake(&f, 1,
			       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			       "{\"name\":\"x\",\"_meta\":{\"progressToken\":1}}}",
			       1, &h),
			 0);
	assert_int_equal(shake(&f, 1,
			       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":"
			       "{\"_meta\":{\"io.modelcontextprotocol/clientInfo\":{\"name\":\"a\","
			       "\"version\":\"9\"},\"io.modelcontextprotocol/protocolVersion\":"
			       "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":"
			       "{\"b\":1,\"a\":2}}}}",
			       2, &h),
			 1);
	assert_int_equal(h.side, MT_SIDE_CLIENT);
	assert_string_equal(h.name, "a");
	assert_string_equal(h.version, "9");
	assert_string_equal(h.protocol_version, "2026-07-28");
	assert_string_equal(h.caps_json, "{\"a\":2,\"b\":1}");
	mt_handshake_release(&h);
	/* Once: a later request naming another client changes nothing. */
	assert_int_equal(shake(&f, 1,
			       "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":"
			       "{\"_meta\":{\"io.modelcontextprotocol/clientInfo\":{\"name\":\"b\"}}}}",
			       3, &h),
			 0);
	mt_facts_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pairing),     cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_initialize),  cmocka_unit_test(test_initialize_without_params),
		cmocka_unit_test(test_meta_client), cmocka_unit_test(test_post_pairing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
