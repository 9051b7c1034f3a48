/*
 * test-message.c - the JSON-RPC classifier and the JSON helpers of
 * schema/message.h: every kind, ids and their types, the columns the store
 * keeps (method, error code, progress token, _meta, batch size), and a
 * catalogue of malformed input (RFC 8259 and UTF-8 violations, deep nesting,
 * huge strings) that must come out MT_INVALID without a crash.
 */
#include "tests/unit/unit.h"

#include "schema/message.h"

/* A string literal with its length (it may hold NUL bytes). */
#define LIT(s) (s), (sizeof(s) - 1)

static enum mt_kind cls(const char *s, struct mt_class *c)
{
	return mt_classify(s, strlen(s), c);
}

static enum mt_kind cls_n(const char *s, size_t n, struct mt_class *c)
{
	return mt_classify(s, n, c);
}

/* Does the span hold exactly the text s? */
static int span_is(struct mt_span sp, const char *s)
{
	size_t n = strlen(s);

	return sp.n == n && sp.p && memcmp(sp.p, s, n) == 0;
}

#define assert_span(sp, s)                                                                \
	do {                                                                              \
		struct mt_span sp_ = (sp);                                                \
		if (!span_is(sp_, (s)))                                                   \
			fail_msg("span is '%.*s' (%zu bytes), expected '%s'", (int)sp_.n, \
				 sp_.p ? sp_.p : "", sp_.n, (s));                         \
	} while (0)

#define assert_kind(input, k)                                                                    \
	do {                                                                                     \
		struct mt_class c_;                                                              \
		enum mt_kind got_ = cls((input), &c_);                                           \
		if (got_ != (k))                                                                 \
			fail_msg("'%s': kind %s, expected %s (%s)", (input), mt_kind_name(got_), \
				 mt_kind_name(k), c_.error ? c_.error : "-");                    \
	} while (0)

/* ---- every kind, minimal ---- */

static void test_request(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &c), MT_REQUEST);
	assert_int_equal(c.kind, MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_NUMBER);
	assert_span(c.id, "1");
	assert_span(c.method, "\"ping\"");
	assert_false(c.has_error_code);
	assert_int_equal(c.token_type, MT_ID_NONE);
	assert_int_equal(c.progress_token.n, 0);
	assert_false(c.has_meta);
	assert_int_equal(c.batch_size, 0);
	assert_null(c.error);

	/* Member order does not matter; whitespace around tokens is fine. */
	assert_int_equal(cls(" { \"method\" : \"a/b\" , \"id\" : \"x\" , \"jsonrpc\" : \"2.0\" } ", &c),
			 MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_span(c.id, "\"x\"");
	assert_span(c.method, "\"a/b\"");
}

static void test_notification(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &c),
			 MT_NOTIFICATION);
	assert_int_equal(c.idtype, MT_ID_NONE);
	assert_int_equal(c.id.n, 0);
	assert_span(c.method, "\"notifications/initialized\"");
	assert_null(c.error);
}

static void test_response(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", &c), MT_RESPONSE);
	assert_int_equal(c.idtype, MT_ID_NUMBER);
	assert_span(c.id, "7");
	assert_int_equal(c.method.n, 0);
	assert_false(c.has_error_code);
	/* Any JSON value is a result, null included. */
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":null}", MT_RESPONSE);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":[1,2]}", MT_RESPONSE);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"s\"}", MT_RESPONSE);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":false}", MT_RESPONSE);
}

static void test_error(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
			     "{\"code\":-32700,\"message\":\"Parse error\"}}",
			     &c),
			 MT_ERROR);
	assert_int_equal(c.idtype, MT_ID_NULL);
	assert_span(c.id, "null");
	assert_true(c.has_error_code);
	assert_int_equal(c.error_code, -32700);

	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"error\":{\"code\":-32601,"
			     "\"message\":\"Method not found\",\"data\":{\"code\":5}}}",
			     &c),
			 MT_ERROR);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_true(c.has_error_code);
	assert_int_equal(c.error_code, -32601); /* not data.code */

	/* An error that is not an object is not JSON-RPC. */
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":[1]}", MT_NOTJSONRPC);
}

static void test_error_code(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":0}}", &c), MT_ERROR);
	assert_true(c.has_error_code);
	assert_int_equal(c.error_code, 0);

	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-9223372036854775808}}", &c);
	assert_true(c.has_error_code);
	assert_true(c.error_code == INT64_MIN);

	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":9223372036854775807}}", &c);
	assert_true(c.has_error_code);
	assert_true(c.error_code == INT64_MAX);

	/* Not an int64: the kind stays MT_ERROR, the code is absent. */
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":"
			     "{\"code\":99999999999999999999999}}",
			     &c),
			 MT_ERROR);
	assert_false(c.has_error_code);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-9223372036854775809}}", &c);
	assert_false(c.has_error_code);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600.5}}", &c);
	assert_false(c.has_error_code);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1e3}}", &c);
	assert_false(c.has_error_code);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"-32600\"}}", &c);
	assert_false(c.has_error_code);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"no code\"}}", &c);
	assert_int_equal(c.kind, MT_ERROR);
	assert_false(c.has_error_code);

	/* The last code wins; the key may be escaped; whitespace around it. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"code\":-2}}", &c);
	assert_true(c.has_error_code);
	assert_int_equal(c.error_code, -2);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{ \"\\u0063ode\" : -32000 }}", &c);
	assert_true(c.has_error_code);
	assert_int_equal(c.error_code, -32000);
}

static void test_batch(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},"
			     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"b\"}]",
			     &c),
			 MT_BATCH);
	assert_int_equal(c.batch_size, 2);
	assert_int_equal(c.idtype, MT_ID_NONE);
	assert_int_equal(c.method.n, 0);

	assert_int_equal(cls("[1]", &c), MT_BATCH);
	assert_int_equal(c.batch_size, 1);
	/* Nested arrays and objects count once. */
	assert_int_equal(cls(" [ [1,2,[3]] , {\"a\":[4,5]} , \"x,y\" , [] , {} ] ", &c), MT_BATCH);
	assert_int_equal(c.batch_size, 5);

	/* The empty array is JSON but not a batch. */
	assert_int_equal(cls("[]", &c), MT_NOTJSONRPC);
	assert_int_equal(c.batch_size, 0);
	assert_non_null(c.error);
	assert_int_equal(cls(" [ \t] \r\n", &c), MT_NOTJSONRPC);

	/* 1000 elements. */
	char big[4200];
	size_t n = 0;
	big[n++] = '[';
	for (int i = 0; i < 1000; i++) {
		if (i)
			big[n++] = ',';
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%d", i % 10);
	}
	big[n++] = ']';
	assert_int_equal(cls_n(big, n, &c), MT_BATCH);
	assert_int_equal(c.batch_size, 1000);
}

/* ---- ids ---- */

static void test_id_types(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":-12.5e3,\"method\":\"m\"}", &c), MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_NUMBER);
	assert_span(c.id, "-12.5e3");

	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\"}", &c), MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_NUMBER);
	assert_span(c.id, "0");

	/* 1 and "1" differ by type; strings keep their quotes and escapes. */
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"m\"}", &c), MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_span(c.id, "\"1\"");
	cls("{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"method\":\"m\"}", &c);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_span(c.id, "\"a\\\"b\"");
	cls("{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"m\"}", &c);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_span(c.id, "\"\"");

	/* null: a request with a null id is a request (the analyzer judges it). */
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", &c), MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_NULL);
	assert_span(c.id, "null");
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}", &c), MT_RESPONSE);
	assert_int_equal(c.idtype, MT_ID_NULL);

	/* Absent: a notification. */
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"method\":\"m\"}", &c), MT_NOTIFICATION);
	assert_int_equal(c.idtype, MT_ID_NONE);
}

static void test_id_bad_types(void **state)
{
	static const char *const bad[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"m\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":false,\"method\":\"m\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"result\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{\"code\":1}}",
	};
	struct mt_class c;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_kind(bad[i], MT_NOTJSONRPC);
		cls(bad[i], &c);
		assert_non_null(c.error);
	}
}

static void test_method_not_string(void **state)
{
	(void)state;
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":1}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"method\":{\"a\":1}}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"method\":[\"a\"]}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"method\":true}", MT_NOTJSONRPC);
}

static void test_jsonrpc_member(void **state)
{
	struct mt_class c;

	(void)state;
	assert_kind("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0 \",\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2\",\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"\",\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":null,\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":[\"2.0\"],\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	assert_kind("{\"JSONRPC\":\"2.0\",\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	/* Nested "jsonrpc" members do not count. */
	assert_kind("{\"params\":{\"jsonrpc\":\"2.0\"},\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	/* An escaped "2.0" is "2.0". */
	assert_kind("{\"jsonrpc\":\"2\\u002e0\",\"id\":1,\"method\":\"m\"}", MT_REQUEST);
	/* The last of duplicate members wins. */
	assert_kind("{\"jsonrpc\":\"1.0\",\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}", MT_REQUEST);
	assert_kind("{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", MT_NOTJSONRPC);
	cls("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", &c);
	assert_non_null(c.error);
}

static void test_shape_errors(void **state)
{
	struct mt_class c;

	(void)state;
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1}}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"result\":1}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1}", MT_NOTJSONRPC);
	assert_kind("{\"jsonrpc\":\"2.0\"}", MT_NOTJSONRPC);
	assert_kind("{}", MT_NOTJSONRPC);
	/* Scalars are JSON, not JSON-RPC. */
	assert_kind("1", MT_NOTJSONRPC);
	assert_kind("-0.5e-3", MT_NOTJSONRPC);
	assert_kind("\"x\"", MT_NOTJSONRPC);
	assert_kind("null", MT_NOTJSONRPC);
	assert_kind("true", MT_NOTJSONRPC);
	assert_kind("false", MT_NOTJSONRPC);
	cls("{\"jsonrpc\":\"2.0\",\"result\":1}", &c);
	assert_non_null(c.error);
	assert_int_equal(c.idtype, MT_ID_NONE);
}

/*
 * JSON-RPC 2.0 section 5: "id: This member is REQUIRED" in a response object,
 * error responses included (null when the request's id could not be read). The
 * classifier refuses a result without an id; an error without one is the same
 * shape of mistake.
 */
/*
 * An error without an id stays an error: MCP 2025-11-25 allows it for a request
 * whose id could not be read, so the analyzer (RPC-012) judges it per revision.
 */
static void test_error_without_id(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"x\"}}", &c),
			 MT_ERROR);
	assert_int_equal(c.idtype, MT_ID_NONE);
	assert_int_equal(c.error_code, -32700);
}

/* ---- progress tokens and _meta ---- */

static void test_progress_token(void **state)
{
	struct mt_class c;

	(void)state;
	/* params._meta.progressToken of a request: a string ... */
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"x\",\"_meta\":{\"progressToken\":\"tok-1\"}}}",
			     &c),
			 MT_REQUEST);
	assert_int_equal(c.token_type, MT_ID_STRING);
	assert_span(c.progress_token, "\"tok-1\"");
	assert_true(c.has_meta);
	/* ... or a number. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"_meta\":{\"other\":[1,{\"progressToken\":9}],\"progressToken\":42},\"a\":{}}}",
	    &c);
	assert_int_equal(c.token_type, MT_ID_NUMBER);
	assert_span(c.progress_token, "42");

	/* notifications/progress carries it in params. */
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
			     "{\"progressToken\":7,\"progress\":1,\"total\":10}}",
			     &c),
			 MT_NOTIFICATION);
	assert_int_equal(c.token_type, MT_ID_NUMBER);
	assert_span(c.progress_token, "7");
	assert_false(c.has_meta);
	cls("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
	    "{\"progress\":1,\"progressToken\":\"abc\"}}",
	    &c);
	assert_int_equal(c.token_type, MT_ID_STRING);
	assert_span(c.progress_token, "\"abc\"");

	/* Elsewhere, params.progressToken is not a progress token. */
	cls("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":"
	    "{\"progressToken\":7}}",
	    &c);
	assert_int_equal(c.token_type, MT_ID_NONE);
	assert_int_equal(c.progress_token.n, 0);
	cls("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"progressToken\":7}}", &c);
	assert_int_equal(c.token_type, MT_ID_NONE);
	/* Nor in a deeper _meta. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
	    "{\"arguments\":{\"_meta\":{\"progressToken\":7}}}}",
	    &c);
	assert_int_equal(c.token_type, MT_ID_NONE);
	assert_false(c.has_meta);

	/* A token of another type is kept as its text. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\",\"params\":"
	    "{\"_meta\":{\"progressToken\":{\"x\":1}}}}",
	    &c);
	assert_int_not_equal(c.token_type, MT_ID_NONE);
	assert_span(c.progress_token, "{\"x\":1}");
}

/*
 * "notifications\/progress" is the same JSON string as "notifications/progress"
 * (PHP's json_encode escapes every '/' by default).
 */
static void test_progress_token_escaped_method(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"method\":\"notifications\\/progress\","
			     "\"params\":{\"progressToken\":7,\"progress\":1}}",
			     &c),
			 MT_NOTIFICATION);
	assert_int_equal(c.token_type, MT_ID_NUMBER);
	assert_span(c.progress_token, "7");
}

static void test_has_meta(void **state)
{
	struct mt_class c;

	(void)state;
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"_meta\":{\"a\":1}}}", &c);
	assert_int_equal(c.kind, MT_RESPONSE);
	assert_true(c.has_meta);
	assert_int_equal(c.token_type, MT_ID_NONE);
	cls("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"_meta\":{}}}", &c);
	assert_int_equal(c.kind, MT_NOTIFICATION);
	assert_true(c.has_meta);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":null}}", &c);
	assert_true(c.has_meta);
	/* Not at the top level, not under other members, not in an array. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"_meta\":{}}", &c);
	assert_false(c.has_meta);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":{\"_meta\":{}}}}", &c);
	assert_false(c.has_meta);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[{\"_meta\":{}}]}", &c);
	assert_false(c.has_meta);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[{\"_meta\":{}}]}", &c);
	assert_false(c.has_meta);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"x\":\"_meta\"}}", &c);
	assert_false(c.has_meta);
	/* An escaped key is the same key. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"\\u005fmeta\":{}}}", &c);
	assert_true(c.has_meta);
}

/* ---- lexical details ---- */

static void test_crlf_and_whitespace(void **state)
{
	struct mt_class c;

	(void)state;
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\r\n", MT_REQUEST);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n", MT_REQUEST);
	assert_kind(" \t\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \t\r\n", MT_REQUEST);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\r\n", &c);
	assert_span(c.method, "\"m\"");
	/* Other whitespace is not JSON whitespace. */
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\f", MT_INVALID);
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\v", MT_INVALID);
	assert_kind("\xc2\xa0{}", MT_INVALID);
}

static void test_escaped_keys(void **state)
{
	struct mt_class c;

	(void)state;
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"\\u006dethod\":\"ping\"}", &c), MT_REQUEST);
	assert_span(c.method, "\"ping\"");
	assert_int_equal(cls("{\"\\u006asonrpc\":\"2.0\",\"\\u0069\\u0064\":5,\"res\\u0075lt\":1}", &c),
			 MT_RESPONSE);
	assert_span(c.id, "5");
	assert_int_equal(cls("{\"jsonrpc\":\"2.0\",\"i\\/d\":5,\"method\":\"m\"}", &c),
			 MT_NOTIFICATION); /* "i/d" is not "id" */
	/* A key that only decodes to a prefix is not the key. */
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\\u0000\":1,\"method\":\"m\"}", MT_NOTIFICATION);
	assert_kind("{\"jsonrpc\":\"2.0\",\"method\\u0000\":\"m\"}", MT_NOTJSONRPC);
	/* A long escaped key is not mistaken for a short one. */
	assert_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"\\u006d\\u0065\\u0074\\u0068\\u006f\\u0064x\":"
		    "\"m\"}",
		    MT_NOTJSONRPC);
	/* An escaped method value keeps its escapes in the span. */
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\\u0069ng\"}", &c);
	assert_span(c.method, "\"p\\u0069ng\"");
}

static void test_duplicate_keys(void **state)
{
	struct mt_class c;

	(void)state;
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":\"x\",\"method\":\"a\"}", &c);
	assert_int_equal(c.kind, MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_span(c.id, "\"x\"");
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}", &c);
	assert_span(c.method, "\"b\"");
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":2}", &c);
	assert_int_equal(c.kind, MT_NOTJSONRPC);
	cls("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"id\":null,\"result\":{}}", &c);
	assert_int_equal(c.kind, MT_RESPONSE);
	assert_int_equal(c.idtype, MT_ID_NULL);
	cls("{\"jsonrpc\":\"2.0\",\"id\":1,\"\\u0069d\":2,\"method\":\"a\"}", &c);
	assert_span(c.id, "2");
}

/* ---- invalid input ---- */

struct bad {
	const char *s;
	size_t n;
};
#define BAD(x)                     \
	{                          \
		(x), sizeof(x) - 1 \
	}

static void check_all_invalid(const struct bad *v, size_t count)
{
	struct mt_class c;

	for (size_t i = 0; i < count; i++) {
		enum mt_kind k = cls_n(v[i].s, v[i].n, &c);
		if (k != MT_INVALID)
			fail_msg("case %zu ('%.*s'): %s, expected invalid", i, (int)v[i].n, v[i].s,
				 mt_kind_name(k));
		assert_non_null(c.error);
		assert_true(c.error_offset <= v[i].n);
		assert_int_equal(c.idtype, MT_ID_NONE);
		assert_int_equal(c.method.n, 0);
	}
}

static void test_invalid_structure(void **state)
{
	static const struct bad v[] = {
		BAD(""),
		BAD(" "),
		BAD(" \t\r\n"),
		BAD("\n"),
		BAD("\r\n"),
		BAD("{"),
		BAD("["),
		BAD("}"),
		BAD("]"),
		BAD(":"),
		BAD(","),
		BAD("{\"a\"}"),
		BAD("{\"a\" 1}"),
		BAD("{\"a\":}"),
		BAD("{\"a\":1,}"),
		BAD("{,}"),
		BAD("{1:2}"),
		BAD("{a:1}"),
		BAD("{'a':1}"),
		BAD("[1,]"),
		BAD("[,1]"),
		BAD("[1 2]"),
		BAD("{\"a\":1]"),
		BAD("[1}"),
		BAD("[}"),
		BAD("{]"),
		BAD("{\"a\":1 \"b\":2}"),
		BAD("{\"a\"::1}"),
		BAD("{\"a\":1}}"),
		BAD("[[]"),
		/* trailing garbage */
		BAD("{}x"),
		BAD("{} {}"),
		BAD("{}\0"),
		BAD("1 2"),
		BAD("\"a\"\"b\""),
		BAD("[]]"),
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\r\nx"),
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n{}"),
		/* truncated */
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\""),
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m"),
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"),
		BAD("[1,2"),
		BAD("\"abc"),
		BAD("\"abc\\"),
		BAD("\"\\u00"),
		/* literals */
		BAD("tru"),
		BAD("nul"),
		BAD("fals"),
		BAD("True"),
		BAD("NULL"),
		BAD("nulll"),
		BAD("truefalse"),
		BAD("[tru]"),
		BAD("{\"a\":nul}"),
		BAD("undefined"),
		BAD("NaN"),
		BAD("Infinity"),
		BAD("-Infinity"),
		/* BOMs (RFC 8259 8.1: a BOM is not part of JSON text) */
		BAD("\xef\xbb\xbf{}"),
		BAD("\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"m\"}"),
		BAD("\xff\xfe{\0}\0"),
		BAD("\xfe\xff\0{\0}"),
		/* NUL outside strings */
		BAD("\0"),
		BAD("{\0}"),
		BAD("[1,\0 2]"),
	};

	(void)state;
	check_all_invalid(v, sizeof(v) / sizeof(v[0]));
}

static void test_invalid_numbers(void **state)
{
	static const struct bad v[] = {
		BAD("01"),
		BAD("-01"),
		BAD("00"),
		BAD("1."),
		BAD(".5"),
		BAD("-"),
		BAD("1e"),
		BAD("1e+"),
		BAD("1E-"),
		BAD("+1"),
		BAD("0x1"),
		BAD("1.e5"),
		BAD("--1"),
		BAD("-.5"),
		BAD("1.5."),
		BAD("1e5.0"),
		BAD("[01]"),
		BAD("{\"id\":1.}"),
		BAD("- 1"),
		BAD("1 .5"),
		BAD("\xd9\xa1"), /* an Arabic-Indic digit */
		BAD("{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"m\"}"),
	};
	static const char *const good[] = {
		"0",       "-0",
		"1.5",     "1e5",
		"1E+5",    "1e-5",
		"-0.0e0",  "123456789012345678901234567890",
		"1e99999", "[0,-0,0.0,10,1.0e1]",
	};

	(void)state;
	check_all_invalid(v, sizeof(v) / sizeof(v[0]));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_kind(good[i], good[i][0] == '[' ? MT_BATCH : MT_NOTJSONRPC);
}

static void test_invalid_strings(void **state)
{
	static const struct bad v[] = {
		/* bad escapes */
		BAD("{\"a\":\"\\x\"}"),
		BAD("{\"a\":\"\\'\"}"),
		BAD("{\"a\":\"\\U0041\"}"),
		BAD("{\"a\":\"\\u12\"}"),
		BAD("{\"a\":\"\\u12G4\"}"),
		BAD("{\"a\":\"\\u\"}"),
		BAD("{\"a\":\"\\ \"}"),
		BAD("{\"a\":\"\\0\"}"),
		BAD("{\"a\":\"\\\0\"}"),
		BAD("{\"a\":\"\\a\"}"),
		BAD("{\"a\\q\":1}"),
		/* lone surrogates */
		BAD("{\"a\":\"\\ud800\"}"),
		BAD("{\"a\":\"\\uDBFF\"}"),
		BAD("{\"a\":\"\\udc00\"}"),
		BAD("{\"a\":\"\\uDFFF\"}"),
		BAD("{\"a\":\"\\ud800\\u0041\"}"),
		BAD("{\"a\":\"\\ud800x\"}"),
		BAD("{\"a\":\"\\ud800\\ud800\"}"),
		BAD("{\"a\":\"\\udc00\\ud800\"}"),
		BAD("{\"a\":\"\\ud800\\n\"}"),
		BAD("{\"a\":\"\\ud800\\u\"}"),
		BAD("{\"\\ud800\":1}"),
		BAD("\"\\ud83d\""),
		/* control characters */
		BAD("{\"a\":\"x\ty\"}"),
		BAD("{\"a\":\"x\ny\"}"),
		BAD("{\"a\":\"\r\"}"),
		BAD("{\"a\":\"\x01\"}"),
		BAD("{\"a\":\"\x1f\"}"),
		BAD("{\"a\":\"\0\"}"),
		BAD("{\"a\x02\":1}"),
		/* invalid UTF-8: overlong forms */
		BAD("\"\xc0\xaf\""),
		BAD("\"\xc1\xbf\""),
		BAD("\"\xe0\x80\xaf\""),
		BAD("\"\xe0\x9f\xbf\""),
		BAD("\"\xf0\x80\x80\xaf\""),
		BAD("\"\xf0\x8f\xbf\xbf\""),
		BAD("\"\xc0\x80\""),
		/* surrogates encoded in UTF-8 */
		BAD("\"\xed\xa0\x80\""),
		BAD("\"\xed\xbf\xbf\""),
		BAD("\"\xed\xa0\xbd\xed\xb8\x80\""),
		/* above U+10FFFF */
		BAD("\"\xf4\x90\x80\x80\""),
		BAD("\"\xf5\x80\x80\x80\""),
		BAD("\"\xf7\xbf\xbf\xbf\""),
		BAD("\"\xf8\x88\x80\x80\x80\""),
		BAD("\"\xfc\x84\x80\x80\x80\x80\""),
		BAD("\"\xfe\""),
		BAD("\"\xff\""),
		/* truncated and stray sequences */
		BAD("\"\x80\""),
		BAD("\"\xbf\""),
		BAD("\"\xc3\""),
		BAD("\"\xe2\x82\""),
		BAD("\"\xf0\x9f\x98\""),
		BAD("\"\xc3"),
		BAD("\"\xe2\x82"),
		BAD("\"\xf0\x9f\x98"),
		BAD("\"\xc3\x28\""),
		BAD("\"\xe2\x28\xa1\""),
		BAD("\"\xe2\x82\x28\""),
		BAD("\"\xf0\x28\x8c\xbc\""),
		BAD("\"\xf0\x9f\x98\x28\""),
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xe9t\xe9\"}"), /* Latin-1 */
		BAD("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"\xff\":1}}"),
	};
	static const struct bad good[] = {
		BAD("\"\xc2\x80\""),         BAD("\"\xc3\xa9\""),
		BAD("\"\xdf\xbf\""),         BAD("\"\xe0\xa0\x80\""),
		BAD("\"\xe2\x82\xac\""),     BAD("\"\xed\x9f\xbf\""),
		BAD("\"\xee\x80\x80\""),     BAD("\"\xef\xbf\xbf\""),
		BAD("\"\xf0\x90\x80\x80\""), BAD("\"\xf0\x9f\x98\x80\""),
		BAD("\"\xf4\x8f\xbf\xbf\""), BAD("\"\x7f\""),
		BAD("\"\\ud83d\\ude00\""),   BAD("\"\\uDBFF\\uDFFF\""),
		BAD("\"\\u0000\""),          BAD("\"\\/\\\\\\\"\\b\\f\\n\\r\\t\""),
		BAD("\"\\uABCD\\uabcd\""),
	};
	struct mt_class c;

	(void)state;
	check_all_invalid(v, sizeof(v) / sizeof(v[0]));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		enum mt_kind k = cls_n(good[i].s, good[i].n, &c);
		if (k != MT_NOTJSONRPC)
			fail_msg("good string %zu: %s (%s)", i, mt_kind_name(k), c.error ? c.error : "-");
	}
}

/* The offset of the first error points at (or into) the token that is wrong. */
static void test_error_offset(void **state)
{
	static const struct {
		const char *s;
		size_t lo, hi; /* the offset must be in [lo, hi] */
	} v[] = {
		{"{} x", 3, 3},
		{"{\"a\" 1}", 5, 5},
		{"[1,]", 3, 3},
		{"{\"a\":tru,\"b\":1}", 5, 8},
		{"{\"a\":01,\"b\":1}", 6, 6},
		{"{\"a\":1.,\"b\":1}", 5, 7},
		{"{\"a\":\"x\ty\",\"b\":1}", 5, 7},
		{"{\"a\":\"\\x\",\"b\":1}", 5, 7},
		{"{\"a\":\"\\ud800\",\"b\":1}", 5, 12},
		{"{\"a\":\"\xff\",\"b\":1}", 5, 6},
	};
	struct mt_class c;
	int wrong = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(cls(v[i].s, &c), MT_INVALID);
		if (c.error_offset < v[i].lo || c.error_offset > v[i].hi) {
			print_error("'%s': error_offset %zu (%s), expected %zu..%zu\n", v[i].s,
				    c.error_offset, c.error, v[i].lo, v[i].hi);
			wrong++;
		}
	}
	assert_int_equal(wrong, 0);
}

/* Every proper prefix of a message is invalid, and none of them trips the scanner. */
static void test_every_prefix(void **state)
{
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":\"\\ud83d\\ude00\",\"method\":\"t\xc3\xa9st\",\"params\":"
		"{\"a\":[1,-2.5e+3,true,false,null,{}],\"_meta\":{\"progressToken\":\"\xe2\x82\xac\"}}}",
		"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}}]",
	};
	struct mt_class c;

	(void)state;
	for (size_t m = 0; m < sizeof(msgs) / sizeof(msgs[0]); m++) {
		size_t n = strlen(msgs[m]);
		assert_int_not_equal(cls_n(msgs[m], n, &c), MT_INVALID);
		for (size_t i = 0; i < n; i++) {
			/* A copy of exactly i bytes, so that ASan sees any overread. */
			char *p = malloc(i ? i : 1);
			assert_non_null(p);
			memcpy(p, msgs[m], i);
			if (cls_n(p, i, &c) != MT_INVALID)
				fail_msg("prefix of %zu bytes of message %zu: %s", i, m,
					 mt_kind_name(c.kind));
			assert_true(c.error_offset <= i);
			free(p);
		}
	}
}

/* ---- size and depth ---- */

static char *nested(size_t depth, const char *open, const char *close, const char *inner, size_t *len)
{
	size_t lo = strlen(open), lc = strlen(close), li = strlen(inner);
	size_t n = depth * (lo + lc) + li;
	char *p = malloc(n + 1), *q = p;

	assert_non_null(p);
	for (size_t i = 0; i < depth; i++, q += lo)
		memcpy(q, open, lo);
	memcpy(q, inner, li);
	q += li;
	for (size_t i = 0; i < depth; i++, q += lc)
		memcpy(q, close, lc);
	*q = '\0';
	*len = n;
	return p;
}

static void test_deep_nesting(void **state)
{
	struct mt_class c;
	size_t n;
	char *p;

	(void)state;
	/* 10,000 arrays deep: a batch of one element. */
	p = nested(10000, "[", "]", "", &n);
	assert_int_equal(cls_n(p, n, &c), MT_BATCH);
	assert_int_equal(c.batch_size, 1);
	/* One closing bracket short. */
	assert_int_equal(cls_n(p, n - 1, &c), MT_INVALID);
	free(p);

	/* 10,000 objects deep: JSON, not JSON-RPC. */
	p = nested(10000, "{\"a\":", "}", "1", &n);
	assert_int_equal(cls_n(p, n, &c), MT_NOTJSONRPC);
	free(p);

	/* 1,000,000 deep, balanced and unbalanced. */
	p = nested(1000000, "[", "]", "0", &n);
	assert_int_equal(cls_n(p, n, &c), MT_BATCH);
	assert_int_equal(c.batch_size, 1);
	assert_int_equal(cls_n(p, 1000000, &c), MT_INVALID);
	p[n - 1] = '}';
	assert_int_equal(cls_n(p, n, &c), MT_INVALID);
	free(p);

	p = nested(1000000, "{\"\":", "}", "null", &n);
	assert_int_equal(cls_n(p, n, &c), MT_NOTJSONRPC);
	free(p);
}

/* Deep params: the look-ups inside params still find their members. */
static void test_deep_params(void **state)
{
	struct mt_buf b = MT_BUF_INIT;
	struct mt_class c;
	size_t n;
	char *deep = nested(20000, "[{\"x\":", "}]", "\"}]\\\"\"", &n);

	(void)state;
	mt_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"deep\":");
	mt_buf_append(&b, deep, n);
	mt_buf_puts(&b, ",\"_meta\":{\"progressToken\":\"p\"}},\"extra\":");
	mt_buf_append(&b, deep, n);
	mt_buf_puts(&b, "}\n");
	free(deep);
	assert_int_equal(mt_classify(b.data, b.len, &c), MT_REQUEST);
	assert_span(c.id, "3");
	assert_span(c.method, "\"tools/call\"");
	assert_true(c.has_meta);
	assert_span(c.progress_token, "\"p\"");
	mt_buf_release(&b);
}

static void test_huge_string(void **state)
{
	const size_t big = 8u << 20;
	struct mt_buf b = MT_BUF_INIT;
	struct mt_class c;
	char *s = malloc(big);

	(void)state;
	assert_non_null(s);
	for (size_t i = 0; i < big; i++)
		s[i] = "abc\xc3\xa9xyz"[i % 8];
	mt_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"");
	mt_buf_append(&b, s, big);
	mt_buf_puts(&b, "\",\"_meta\":{}}}\r\n");
	assert_int_equal(mt_classify(b.data, b.len, &c), MT_RESPONSE);
	assert_true(c.has_meta);
	assert_span(c.id, "1");

	/* One bad byte near the end makes it all invalid. */
	b.data[b.len - 20] = '\x01';
	assert_int_equal(mt_classify(b.data, b.len, &c), MT_INVALID);
	mt_buf_release(&b);

	/* A huge id string keeps its whole span. */
	mt_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":\"");
	memset(s, 'i', big);
	mt_buf_append(&b, s, big);
	mt_buf_puts(&b, "\",\"method\":\"m\"}");
	assert_int_equal(mt_classify(b.data, b.len, &c), MT_REQUEST);
	assert_int_equal(c.idtype, MT_ID_STRING);
	assert_int_equal(c.id.n, big + 2);
	mt_buf_release(&b);
	free(s);
}

/* ---- names ---- */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(mt_kind_name(MT_REQUEST), "request");
	assert_string_equal(mt_kind_name(MT_NOTIFICATION), "notification");
	assert_string_equal(mt_kind_name(MT_RESPONSE), "response");
	assert_string_equal(mt_kind_name(MT_ERROR), "error");
	assert_string_equal(mt_kind_name(MT_BATCH), "batch");
	assert_string_equal(mt_kind_name(MT_INVALID), "invalid");
	assert_string_equal(mt_kind_name(MT_NOTJSONRPC), "notjsonrpc");
	assert_string_equal(mt_idtype_name(MT_ID_NUMBER), "number");
	assert_string_equal(mt_idtype_name(MT_ID_STRING), "string");
	assert_string_equal(mt_idtype_name(MT_ID_NULL), "null");
	assert_null(mt_idtype_name(MT_ID_NONE));
}

/* ---- mt_json_compact ---- */

static void check_compact(const char *in, enum mt_ws ws, const char *want)
{
	struct mt_buf b = MT_BUF_INIT;

	mt_json_compact(in, strlen(in), ws, &b);
	if (b.len != strlen(want) || (b.len && memcmp(b.data, want, b.len) != 0))
		fail_msg("compacting %s: got %.*s", in, (int)b.len, b.data ? b.data : "");
	mt_buf_release(&b);
}

static void test_json_compact(void **state)
{
	(void)state;
	/* Tokens copied: numbers, escapes, key order. */
	check_compact("{\"b\": 0.7, \"a\":\t1e400,\r\n \"s\": \"\\u00e9 \\\" x\"}\n", MT_WS_ALL,
		      "{\"b\":0.7,\"a\":1e400,\"s\":\"\\u00e9 \\\" x\"}");
	/* Lines: only the line breaks between tokens go. */
	check_compact("{\"b\": 0.7,\n \"a\": [1, 2]}\n", MT_WS_LINES, "{\"b\": 0.7, \"a\": [1, 2]}");
	/* Inside strings nothing changes, an escaped backslash before a quote included. */
	check_compact("[\"a \\\\\", \" b \"]", MT_WS_ALL, "[\"a \\\\\",\" b \"]");
	check_compact("18446744073709551616", MT_WS_ALL, "18446744073709551616");
	check_compact("", MT_WS_ALL, "");
}

/* ---- mt_json_string ---- */

static void check_decode(const char *tok, const char *want, size_t want_len)
{
	struct mt_buf b = MT_BUF_INIT;
	struct mt_span sp = {tok, strlen(tok)};

	assert_int_equal(mt_json_string(sp, &b), 0);
	if (b.len != want_len || (want_len && memcmp(b.data, want, want_len) != 0))
		fail_msg("decoding %s: got %zu bytes", tok, b.len);
	mt_buf_release(&b);
}

static void test_json_string(void **state)
{
	struct mt_buf b = MT_BUF_INIT;
	struct mt_span sp;

	(void)state;
	check_decode("\"abc\"", LIT("abc"));
	check_decode("\"\"", LIT(""));
	check_decode("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", LIT("a\"b\\c/d\b\f\n\r\t"));
	check_decode("\"\\u0041\\u00e9\\u20AC\"", LIT("A\xc3\xa9\xe2\x82\xac"));
	check_decode("\"\\u007f\\u0080\\u07ff\\u0800\\uffff\"",
		     LIT("\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"));
	check_decode("\"\\ud83d\\ude00\"", LIT("\xf0\x9f\x98\x80"));
	check_decode("\"\\uD800\\uDC00\"", LIT("\xf0\x90\x80\x80"));
	check_decode("\"\\udbff\\udfff\"", LIT("\xf4\x8f\xbf\xbf"));
	check_decode("\"x\\ud83d\\ude00y\\ud83d\\ude01\"", LIT("x\xf0\x9f\x98\x80y\xf0\x9f\x98\x81"));
	check_decode("\"\\u0000\"", LIT("\0"));
	check_decode("\"a\\u0000b\"", LIT("a\0b"));
	check_decode("\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", LIT("caf\xc3\xa9 \xf0\x9f\x98\x80"));

	/* The buffer is reset, not appended to. */
	sp.p = "\"first\"";
	sp.n = 7;
	assert_int_equal(mt_json_string(sp, &b), 0);
	sp.p = "\"2\"";
	sp.n = 3;
	assert_int_equal(mt_json_string(sp, &b), 0);
	assert_int_equal(b.len, 1);
	assert_memory_equal(b.data, "2", 1);
	assert_int_equal(b.data[1], '\0');

	/* Not string tokens. */
	sp.p = "abc";
	sp.n = 3;
	assert_int_equal(mt_json_string(sp, &b), -1);
	sp.p = "\"";
	sp.n = 1;
	assert_int_equal(mt_json_string(sp, &b), -1);
	sp.p = "\"abc";
	sp.n = 4;
	assert_int_equal(mt_json_string(sp, &b), -1);
	sp.p = "12";
	sp.n = 2;
	assert_int_equal(mt_json_string(sp, &b), -1);
	sp.p = "";
	sp.n = 0;
	assert_int_equal(mt_json_string(sp, &b), -1);
	mt_buf_release(&b);
}

/* ---- mt_json_member ---- */

static void test_json_member(void **state)
{
	const char *obj = "{ \"a\" : 1 , \"b\":{\"c\":[1,2,{\"d\":\"}\"}],\"a\":9},\"e\":\"x\\\"}y\","
			  "\"\\u0066\":true,\"g\\\"h\":null,\"a\\\\\":[],\"a\":-3.5 }";
	struct mt_span o = {obj, strlen(obj)}, v, inner;

	(void)state;
	/* The last "a" of this object, not the one inside "b". */
	assert_int_equal(mt_json_member(o, "a", &v), 1);
	assert_span(v, "-3.5");
	assert_int_equal(mt_json_member(o, "b", &v), 1);
	assert_span(v, "{\"c\":[1,2,{\"d\":\"}\"}],\"a\":9}");
	inner = v;
	assert_int_equal(mt_json_member(inner, "a", &v), 1);
	assert_span(v, "9");
	assert_int_equal(mt_json_member(inner, "c", &v), 1);
	assert_span(v, "[1,2,{\"d\":\"}\"}]");
	assert_int_equal(mt_json_member(inner, "d", &v), 0);
	assert_int_equal(mt_json_member(o, "e", &v), 1);
	assert_span(v, "\"x\\\"}y\"");
	/* Keys with escapes match their decoded text. */
	assert_int_equal(mt_json_member(o, "f", &v), 1);
	assert_span(v, "true");
	assert_int_equal(mt_json_member(o, "g\"h", &v), 1);
	assert_span(v, "null");
	assert_int_equal(mt_json_member(o, "a\\", &v), 1);
	assert_span(v, "[]");
	/* Absent keys, including nested ones and prefixes. */
	assert_int_equal(mt_json_member(o, "c", &v), 0);
	assert_int_equal(mt_json_member(o, "", &v), 0);
	assert_int_equal(mt_json_member(o, "ab", &v), 0);
	assert_int_equal(mt_json_member(o, "g", &v), 0);

	/* Empty objects and non-objects. */
	o.p = "{}";
	o.n = 2;
	assert_int_equal(mt_json_member(o, "a", &v), 0);
	o.p = "{ \t}";
	o.n = 4;
	assert_int_equal(mt_json_member(o, "a", &v), 0);
	o.p = "[{\"a\":1}]";
	o.n = 9;
	assert_int_equal(mt_json_member(o, "a", &v), -1);
	o.p = "\"a\"";
	o.n = 3;
	assert_int_equal(mt_json_member(o, "a", &v), -1);
	o.p = "1";
	o.n = 1;
	assert_int_equal(mt_json_member(o, "a", &v), -1);
	o.p = "";
	o.n = 0;
	assert_int_equal(mt_json_member(o, "a", &v), -1);

	/* An empty key is a key. */
	o.p = "{\"\":5}";
	o.n = 6;
	assert_int_equal(mt_json_member(o, "", &v), 1);
	assert_span(v, "5");
}

/* ---- mt_json_int64 ---- */

static int int64_of(const char *s, int64_t *v)
{
	struct mt_span sp = {s, strlen(s)};

	return mt_json_int64(sp, v);
}

static void test_json_int64(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(int64_of("0", &v), 1);
	assert_true(v == 0);
	assert_int_equal(int64_of("-0", &v), 1);
	assert_true(v == 0);
	assert_int_equal(int64_of("42", &v), 1);
	assert_true(v == 42);
	assert_int_equal(int64_of("-32768", &v), 1);
	assert_true(v == -32768);
	assert_int_equal(int64_of("9223372036854775807", &v), 1);
	assert_true(v == INT64_MAX);
	assert_int_equal(int64_of("-9223372036854775807", &v), 1);
	assert_true(v == -INT64_MAX);
	assert_int_equal(int64_of("-9223372036854775808", &v), 1);
	assert_true(v == INT64_MIN);
	assert_int_equal(int64_of("922337203685477580", &v), 1);
	assert_true(v == INT64_MAX / 10);

	/* Overflow either way. */
	assert_int_equal(int64_of("9223372036854775808", &v), 0);
	assert_int_equal(int64_of("9223372036854775810", &v), 0);
	assert_int_equal(int64_of("-9223372036854775809", &v), 0);
	assert_int_equal(int64_of("-9223372036854775818", &v), 0);
	assert_int_equal(int64_of("-92233720368547758080", &v), 0);
	assert_int_equal(int64_of("92233720368547758070", &v), 0);
	assert_int_equal(int64_of("18446744073709551616", &v), 0);
	assert_int_equal(int64_of("99999999999999999999999999999", &v), 0);

	/* Not integers. */
	assert_int_equal(int64_of("1.0", &v), 0);
	assert_int_equal(int64_of("1e3", &v), 0);
	assert_int_equal(int64_of("-", &v), 0);
	assert_int_equal(int64_of("", &v), 0);
	assert_int_equal(int64_of("\"1\"", &v), 0);
	assert_int_equal(int64_of("null", &v), 0);
	assert_int_equal(int64_of("true", &v), 0);
}

/* Walking objects and arrays on spans, without a parse. */
static void test_iterators(void **state)
{
	const char *o = "{ \"a\" : 1, \"b\":\"x\\\"y,}\" ,\"c\":{\"d\":[1,{\"e\":2}]} , \"f\":[] }";
	const char *a = "[ 1, \"two\\\\\", {\"x\":[3]}, [], null ]";
	struct mt_span obj = {o, strlen(o)}, arr = {a, strlen(a)}, k, v, el;
	size_t pos = 0;
	int n = 0;

	(void)state;
	while (mt_json_next_member(obj, &pos, &k, &v) == 1) {
		switch (n++) {
		case 0:
			assert_int_equal(k.n, 3);
			assert_memory_equal(k.p, "\"a\"", 3);
			assert_int_equal(v.n, 1);
			assert_memory_equal(v.p, "1", 1);
			break;
		case 1:
			assert_memory_equal(k.p, "\"b\"", 3);
			assert_int_equal(v.n, 8);
			assert_memory_equal(v.p, "\"x\\\"y,}\"", 8);
			break;
		case 2:
			assert_memory_equal(k.p, "\"c\"", 3);
			assert_int_equal(v.n, 17);
			assert_memory_equal(v.p, "{\"d\":[1,{\"e\":2}]}", 17);
			break;
		case 3:
			assert_memory_equal(k.p, "\"f\"", 3);
			assert_int_equal(v.n, 2);
			assert_memory_equal(v.p, "[]", 2);
			break;
		}
	}
	assert_int_equal(n, 4);
	pos = 0;
	n = 0;
	while (mt_json_next_element(arr, &pos, &el) == 1) {
		static const char *const want[] = {"1", "\"two\\\\\"", "{\"x\":[3]}", "[]", "null"};
		assert_int_equal(el.n, strlen(want[n]));
		assert_memory_equal(el.p, want[n], el.n);
		n++;
	}
	assert_int_equal(n, 5);
	/* Empty containers, and the wrong kind. */
	struct mt_span eo = {"{}", 2}, ea = {"[ ]", 3};
	pos = 0;
	assert_int_equal(mt_json_next_member(eo, &pos, &k, &v), 0);
	pos = 0;
	assert_int_equal(mt_json_next_element(ea, &pos, &el), 0);
	pos = 0;
	assert_int_equal(mt_json_next_member(arr, &pos, &k, &v), -1);
	pos = 0;
	assert_int_equal(mt_json_next_element(obj, &pos, &el), -1);
}

/* The trusted scan, used on what the store says is JSON, agrees with the full one. */
static void test_trusted(void **state)
{
	static const char *const msgs[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"a\\\"b\","
		"\"_meta\":{\"progressToken\":\"t\\u0031\"},\"arguments\":{\"x\":[1,{\"y\":\"\\\\\"}]}}}\n",
		"{\"jsonrpc\":\"2.0\",\"\\u0069d\":\"s\",\"result\":{\"content\":[],\"_meta\":{}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"no \\\"x\\\"\"}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		"progress\",\"params\":{\"a\":{\"\\u005fmeta\":1}}}",
		"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]",
		"{\"jsonrpc\":\"1.0\",\"id\":null,\"method\":3}",
		"\"just a string with \\n in it\"",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\",\"method\":\"n\",\"params\":[]}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		struct mt_class a, b;
		size_t n = strlen(msgs[i]);
		assert_int_not_equal(mt_classify(msgs[i], n, &a), MT_INVALID);
		assert_int_equal(mt_classify_trusted(msgs[i], n, &b), a.kind);
		assert_int_equal(a.idtype, b.idtype);
		assert_ptr_equal(a.id.p, b.id.p);
		assert_int_equal(a.id.n, b.id.n);
		assert_ptr_equal(a.method.p, b.method.p);
		assert_int_equal(a.method.n, b.method.n);
		assert_ptr_equal(a.params.p, b.params.p);
		assert_int_equal(a.params.n, b.params.n);
		assert_ptr_equal(a.result.p, b.result.p);
		assert_int_equal(a.result.n, b.result.n);
		assert_int_equal(a.token_type, b.token_type);
		assert_ptr_equal(a.progress_token.p, b.progress_token.p);
		assert_int_equal(a.has_meta, b.has_meta);
		assert_int_equal(a.meta_anywhere, b.meta_anywhere);
		assert_int_equal(a.has_error_code, b.has_error_code);
		assert_int_equal(a.batch_size, b.batch_size);
	}
}

/* What the classifier's one pass tells of what a JSON parser may not read. */
static void test_depth_and_limits(void **state)
{
	static const struct {
		const char *json;
		size_t depth;
		int beyond;
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":[1,[2]]}}", 4, 0},
		{"[[[[]]]]", 4, 0},
		{"{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890,\"method\":\"x\"}", 1, 1},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":1e400}}", 2, 1},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\\u0000b\":1}}", 2, 1},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":\"\\u0000\",\"n\":-"
		 "12345678901234567}}",
		 2, 0},
	};
	struct mt_class c;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int trusted = 0; trusted < 2; trusted++) {
			if (trusted)
				mt_classify_trusted(cases[i].json, strlen(cases[i].json), &c);
			else
				mt_classify(cases[i].json, strlen(cases[i].json), &c);
			if (c.max_depth != cases[i].depth || c.maybe_beyond != cases[i].beyond)
				fail_msg("%s (%s): depth %zu, maybe_beyond %d", cases[i].json,
					 trusted ? "trusted" : "checked", c.max_depth, c.maybe_beyond);
		}
	}
}

int main(void)
{
	const struct CMUnitTest message[] = {
		cmocka_unit_test(test_depth_and_limits),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_notification),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_error),
		cmocka_unit_test(test_error_code),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_id_types),
		cmocka_unit_test(test_id_bad_types),
		cmocka_unit_test(test_method_not_string),
		cmocka_unit_test(test_jsonrpc_member),
		cmocka_unit_test(test_shape_errors),
		cmocka_unit_test(test_error_without_id),
		cmocka_unit_test(test_progress_token),
		cmocka_unit_test(test_progress_token_escaped_method),
		cmocka_unit_test(test_has_meta),
		cmocka_unit_test(test_crlf_and_whitespace),
		cmocka_unit_test(test_escaped_keys),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_invalid_structure),
		cmocka_unit_test(test_invalid_numbers),
		cmocka_unit_test(test_invalid_strings),
		cmocka_unit_test(test_error_offset),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_iterators),
		cmocka_unit_test(test_trusted),
		cmocka_unit_test(test_deep_params),
		cmocka_unit_test(test_huge_string),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_json_compact),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_json_member),
		cmocka_unit_test(test_json_int64),
	};

	return cmocka_run_group_tests(message, NULL, NULL);
}
