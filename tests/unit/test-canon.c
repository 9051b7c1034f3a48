/*
 * test-canon.c - canonical keys and structural diffs for replay
 * (analyze/replay/canon.h): key order and spacing do not matter, _meta never does,
 * ignore paths with * and [*], numbers by value, paths of differences.
 */
#include "tests/unit/unit.h"

#include "analyze/replay/canon.h"

static json_t *J(const char *s)
{
	json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);

	assert_non_null(v);
	return v;
}

static void key_of(const char *method, const char *params, const struct canon_ignore *ig, struct mt_buf *out)
{
	json_t *p = params ? J(params) : NULL;

	canon_key(method, p, ig, out);
	json_decref(p);
}

static void test_key(void **state)
{
	struct mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
	static const char *const paths[] = {"params.arguments.when", "params.list[*].id"};
	struct canon_ignore ig = {paths, 2};

	(void)state;
	key_of("tools/call", "{\"name\":\"x\",\"arguments\":{\"b\":1,\"a\":[1,2]}}", NULL, &a);
	key_of("tools/call",
	       "{ \"arguments\" : { \"a\":[1,2], \"b\":1 }, \"name\":\"x\",\"_meta\":{\"progressToken\":5}}",
	       NULL, &b);
	assert_string_equal(a.data, b.data);
	assert_string_equal(a.data, "tools/call\n{\"arguments\":{\"a\":[1,2],\"b\":1},\"name\":\"x\"}");
	/* A different method or a different argument is a different key. */
	key_of("tools/list", "{\"name\":\"x\",\"arguments\":{\"b\":1,\"a\":[1,2]}}", NULL, &b);
	assert_string_not_equal(a.data, b.data);
	key_of("tools/call", "{\"name\":\"x\",\"arguments\":{\"b\":2,\"a\":[1,2]}}", NULL, &b);
	assert_string_not_equal(a.data, b.data);
	/* No params, {} and params with only _meta are one key. */
	key_of("ping", NULL, NULL, &a);
	key_of("ping", "{}", NULL, &b);
	assert_string_equal(a.data, b.data);
	key_of("ping", "{\"_meta\":{\"x\":1}}", NULL, &b);
	assert_string_equal(a.data, b.data);
	/* Ignore paths, with [*]. */
	key_of("m", "{\"arguments\":{\"when\":1,\"k\":2},\"list\":[{\"id\":1,\"v\":3}]}", &ig, &a);
	key_of("m", "{\"arguments\":{\"when\":9,\"k\":2},\"list\":[{\"id\":7,\"v\":3}]}", &ig, &b);
	assert_string_equal(a.data, b.data);
	key_of("m", "{\"arguments\":{\"when\":9,\"k\":3},\"list\":[{\"id\":7,\"v\":3}]}", &ig, &b);
	assert_string_not_equal(a.data, b.data);
	mt_buf_release(&a);
	mt_buf_release(&b);
}

/* An empty object says nothing: {"arguments": {}} is the request without arguments. */
static void test_key_empty_members(void **state)
{
	struct mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;

	(void)state;
	key_of("prompts/get", "{\"name\":\"simple-prompt\"}", NULL, &a);
	key_of("prompts/get", "{\"name\":\"simple-prompt\",\"arguments\":{}}", NULL, &b);
	assert_string_equal(a.data, b.data);
	assert_string_equal(a.data, "prompts/get\n{\"name\":\"simple-prompt\"}");
	/* Also when it is empty once its _meta is gone, at any depth. */
	key_of("prompts/get", "{\"name\":\"simple-prompt\",\"arguments\":{\"x\":{\"_meta\":{}}}}", NULL, &b);
	assert_string_equal(a.data, b.data);
	/* But an empty array, an empty string or null is a value. */
	key_of("prompts/get", "{\"name\":\"simple-prompt\",\"arguments\":[]}", NULL, &b);
	assert_string_not_equal(a.data, b.data);
	key_of("prompts/get", "{\"name\":\"simple-prompt\",\"arguments\":null}", NULL, &b);
	assert_string_not_equal(a.data, b.data);
	mt_buf_release(&a);
	mt_buf_release(&b);
}

static void test_ignored(void **state)
{
	static const char *const paths[] = {"result.content[*].text", "result.*.ts", "params.x"};
	struct canon_ignore ig = {paths, 3};

	(void)state;
	assert_true(canon_ignored(&ig, "result.content[3].text"));
	assert_true(canon_ignored(&ig, "result.content[3].text.deeper"));
	assert_false(canon_ignored(&ig, "result.content[3].type"));
	assert_false(canon_ignored(&ig, "result.content.text"));
	assert_true(canon_ignored(&ig, "result.meta.ts"));
	assert_false(canon_ignored(&ig, "result.ts"));
	assert_true(canon_ignored(&ig, "params.x"));
	assert_true(canon_ignored(&ig, "params.x[0]"));
	assert_false(canon_ignored(&ig, "params.xy"));
	assert_false(canon_ignored(NULL, "params.x"));
}

static size_t diff_of(const char *a, const char *b, const struct canon_ignore *ig, json_t **paths)
{
	json_t *ja = J(a), *jb = J(b);
	size_t n;

	*paths = json_array();
	n = canon_diff(ja, jb, "result", ig, 8, *paths);
	json_decref(ja);
	json_decref(jb);
	return n;
}

static void test_diff(void **state)
{
	json_t *p;
	static const char *const paths[] = {"result.content[*].text"};
	struct canon_ignore ig = {paths, 1};

	(void)state;
	assert_int_equal(
		diff_of("{\"a\":1,\"b\":[1,2]}", "{\"b\":[1,2.0],\"a\":1.0,\"_meta\":{\"x\":1}}", NULL, &p),
		0);
	json_decref(p);
	assert_int_equal(diff_of("{\"a\":1,\"b\":[1,2],\"c\":\"x\"}",
				 "{\"a\":2,\"b\":[1],\"d\":null,\"c\":\"x\"}", NULL, &p),
			 3);
	assert_string_equal(json_string_value(json_array_get(p, 0)), "result.a");
	assert_string_equal(json_string_value(json_array_get(p, 1)), "result.b[1]");
	assert_string_equal(json_string_value(json_array_get(p, 2)), "result.d");
	json_decref(p);
	/* A type change is one difference at its path. */
	assert_int_equal(diff_of("{\"a\":{\"x\":1}}", "{\"a\":[1]}", NULL, &p), 1);
	assert_string_equal(json_string_value(json_array_get(p, 0)), "result.a");
	json_decref(p);
	/* Ignored paths. */
	assert_int_equal(diff_of("{\"content\":[{\"type\":\"text\",\"text\":\"12:00\"}]}",
				 "{\"content\":[{\"type\":\"text\",\"text\":\"12:01\"}]}", &ig, &p),
			 0);
	json_decref(p);
	/* More differences than max: all counted, max listed. */
	assert_int_equal(diff_of("[1,2,3,4,5,6,7,8,9,10]", "[0,0,0,0,0,0,0,0,0,0]", NULL, &p), 10);
	assert_int_equal(json_array_size(p), 8);
	json_decref(p);
	/* Integers past 2^53 differ by their last digit (a double would call them equal). */
	assert_int_equal(diff_of("{\"ns\":9007199254740993}", "{\"ns\":9007199254740992}", NULL, &p), 1);
	assert_string_equal(json_string_value(json_array_get(p, 0)), "result.ns");
	json_decref(p);
	/* Nothing against nothing is no difference. */
	p = json_array();
	assert_int_equal(canon_diff(NULL, NULL, "params", NULL, 4, p), 0);
	json_decref(p);
}

static void test_deep(void **state)
{
	struct mt_buf a = MT_BUF_INIT;
	struct mt_buf s = MT_BUF_INIT;
	json_t *v, *w, *p = json_array();

	(void)state;
	mt_buf_puts(&s, "{\"x\":");
	for (int i = 0; i < 2000; i++)
		mt_buf_putc(&s, '[');
	for (int i = 0; i < 2000; i++)
		mt_buf_putc(&s, ']');
	mt_buf_putc(&s, '}');
	v = json_loads(s.data, JSON_DECODE_ANY, NULL);
	if (!v) { /* Jansson's own depth limit: nothing to test past it */
		mt_buf_release(&s);
		json_decref(p);
		return;
	}
	w = json_deep_copy(v);
	canon_key("m", v, NULL, &a);
	assert_non_null(a.data);
	assert_int_equal(canon_diff(v, w, "params", NULL, 4, p), 0);
	json_decref(v);
	json_decref(w);
	json_decref(p);
	mt_buf_release(&a);
	mt_buf_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),     cmocka_unit_test(test_key_empty_members),
		cmocka_unit_test(test_ignored), cmocka_unit_test(test_diff),
		cmocka_unit_test(test_deep),
	};

	return cmocka_run_group_tests_name("canon", tests, NULL, NULL);
}
