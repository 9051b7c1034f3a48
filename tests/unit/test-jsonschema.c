/*
 * test-jsonschema.c - the bounded JSON Schema validator (analyze/jsonschema.h):
 * each keyword it checks, passing and failing, with the exact message and
 * JSON pointer; the keywords it skips and how it notes them; local $ref; the
 * depth and step limits at their edges; redacted strings; schemas it cannot
 * use; and JSON Schema equality.
 */
#include "tests/unit/unit.h"

#include <jansson.h>

#include "analyze/jsonschema.h"

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

	if (!j) {
		print_error("cannot parse %s: %s\n", text, e.text);
		fail();
	}
	return j;
}

/* Validate value x against schema s (both JSON text) into v; the result. */
static int run(struct jsv *v, const char *s, const char *x)
{
	json_t *schema = load(s), *value = load(x);
	int ok = jsv_validate(v, schema, value);

	json_decref(schema);
	json_decref(value);
	return ok;
}

static void expect(const char *s, const char *x, int want, const char *err, int line)
{
	struct jsv v;
	int ok = run(&v, s, x);

	if (ok != want || strcmp(v.err, err) || v.stopped) {
		print_error("line %d: schema %s, value %s: got %d \"%s\" (stopped %d), wanted %d \"%s\"\n",
			    line, s, x, ok, v.err, v.stopped, want, err);
		fail();
	}
}

/* x meets s, nothing stopped. */
#define PASS(s, x) expect(s, x, 1, "", __LINE__)
/* x does not meet s: the first failure is exactly err. */
#define FAIL(s, x, err) expect(s, x, 0, err, __LINE__)

static void test_type(void **state)
{
	(void)state;
	PASS("{\"type\":\"object\"}", "{}");
	PASS("{\"type\":\"array\"}", "[]");
	PASS("{\"type\":\"string\"}", "\"\"");
	PASS("{\"type\":\"boolean\"}", "false");
	PASS("{\"type\":\"null\"}", "null");
	PASS("{\"type\":\"number\"}", "1");
	PASS("{\"type\":\"number\"}", "1.5");
	PASS("{\"type\":\"integer\"}", "7");
	PASS("{\"type\":\"integer\"}", "2.0"); /* an integral real is an integer */
	FAIL("{\"type\":\"integer\"}", "2.5", "(top): expected integer, got a number");
	FAIL("{\"type\":\"object\"}", "[]", "(top): expected object, got an array");
	FAIL("{\"type\":\"array\"}", "{}", "(top): expected array, got an object");
	FAIL("{\"type\":\"string\"}", "1", "(top): expected string, got an integer");
	FAIL("{\"type\":\"boolean\"}", "null", "(top): expected boolean, got null");
	FAIL("{\"type\":\"null\"}", "true", "(top): expected null, got a boolean");
	FAIL("{\"type\":\"number\"}", "\"1\"", "(top): expected number, got a string");
	/* A list of types: any one; the message names them all. */
	PASS("{\"type\":[\"string\",\"null\"]}", "null");
	FAIL("{\"type\":[\"string\",\"null\"]}", "1", "(top): expected string|null, got an integer");
	/* What is not a type name is not judged. */
	PASS("{\"type\":\"date\"}", "1");
	PASS("{\"type\":[1,2]}", "1");
	PASS("{\"type\":[]}", "1");
	PASS("{\"type\":5}", "1");
}

static void test_enum_const(void **state)
{
	(void)state;
	PASS("{\"enum\":[\"a\",1,null]}", "null");
	PASS("{\"enum\":[1]}", "1.0"); /* numbers by value */
	PASS("{\"enum\":[{\"a\":1,\"b\":[2]}]}", "{\"b\":[2],\"a\":1}");
	FAIL("{\"enum\":[\"a\"]}", "\"b\"", "(top): value is not the enum's one value");
	FAIL("{\"enum\":[\"a\",1,null]}", "2", "(top): value is not one of the 3 enum values");
	FAIL("{\"enum\":[[1,2]]}", "[2,1]", "(top): value is not the enum's one value");
	FAIL("{\"enum\":[]}", "1", "(top): value is not one of the 0 enum values");
	PASS("{\"enum\":{\"a\":1}}", "1"); /* not an array: not checked */
	PASS("{\"const\":{\"x\":[1,\"y\"]}}", "{\"x\":[1.0,\"y\"]}");
	PASS("{\"const\":null}", "null");
	FAIL("{\"const\":\"a\"}", "\"A\"", "(top): value is not the const value");
	FAIL("{\"const\":0}", "false", "(top): value is not the const value");
	FAIL("{\"const\":{\"x\":1}}", "{\"x\":1,\"y\":2}", "(top): value is not the const value");
}

static void test_required_properties(void **state)
{
	(void)state;
	PASS("{\"required\":[\"a\"]}", "{\"a\":null}");
	FAIL("{\"required\":[\"a\",\"b\"]}", "{\"a\":1}", "(top): required property 'b' is missing");
	PASS("{\"required\":[\"a\"]}", "[]"); /* only objects have properties */
	PASS("{\"required\":\"a\"}", "{}");
	PASS("{\"required\":[1]}", "{}");
	PASS("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":\"x\",\"b\":1}");
	FAIL("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":1}",
	     "/a: expected string, got an integer");
	FAIL("{\"properties\":{\"a\":{\"properties\":{\"b c\":{\"required\":[\"d\"]}}}}}",
	     "{\"a\":{\"b c\":{}}}", "/a/b c: required property 'd' is missing");
	/* The pointer's segments as they are (not escaped). */
	FAIL("{\"properties\":{\"a/b\":false}}", "{\"a/b\":1}",
	     "/a/b: no value is allowed here (schema false)");
	PASS("{\"properties\":[]}", "{\"a\":1}");
}

static void test_additional_properties(void **state)
{
	(void)state;
	PASS("{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1}");
	FAIL("{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1,\"x\":2}",
	     "(top): property 'x' is not allowed (additionalProperties: false)");
	PASS("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1}");
	FAIL("{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"integer\"}}",
	     "{\"a\":\"s\",\"x\":\"s\"}", "/x: expected integer, got a string");
	PASS("{\"additionalProperties\":true}", "{\"x\":1}");
	/* With patternProperties, what is additional is not known: not checked. */
	PASS("{\"patternProperties\":{\"^a\":{}},\"additionalProperties\":false}", "{\"x\":1}");
}

static void test_object_counts(void **state)
{
	(void)state;
	PASS("{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1,\"b\":2}");
	FAIL("{\"minProperties\":2}", "{\"a\":1}", "(top): 1 property, fewer than minProperties 2");
	FAIL("{\"minProperties\":1}", "{}", "(top): 0 properties, fewer than minProperties 1");
	FAIL("{\"maxProperties\":2}", "{\"a\":1,\"b\":2,\"c\":3}",
	     "(top): 3 properties, more than maxProperties 2");
	PASS("{\"maxProperties\":1.5}", "{\"a\":1,\"b\":2}"); /* not an integer: not checked */
}

static void test_property_names_dependent(void **state)
{
	(void)state;
	PASS("{\"propertyNames\":{\"maxLength\":2}}", "{\"ab\":1}");
	FAIL("{\"propertyNames\":{\"maxLength\":2}}", "{\"abc\":1}",
	     "(top): string of 3 characters is longer than maxLength 2");
	FAIL("{\"propertyNames\":{\"enum\":[\"a\",\"b\"]}}", "{\"a\":1,\"c\":1}",
	     "(top): value is not one of the 2 enum values");
	PASS("{\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"a\":1,\"b\":2}");
	PASS("{\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"b\":2}");
	FAIL("{\"dependentRequired\":{\"a\":[\"b\",\"c\"]}}", "{\"a\":1,\"b\":2}",
	     "(top): property 'a' requires 'c' (dependentRequired)");
}

static void test_items(void **state)
{
	(void)state;
	PASS("{\"items\":{\"type\":\"integer\"}}", "[1,2]");
	FAIL("{\"items\":{\"type\":\"integer\"}}", "[1,\"x\"]", "/1: expected integer, got a string");
	FAIL("{\"items\":{\"items\":{\"type\":\"null\"}}}", "[[],[null,0]]",
	     "/1/1: expected null, got an integer");
	/* draft-07 tuples: items as an array, then additionalItems. */
	PASS("{\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "[\"a\",1,true]");
	FAIL("{\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}", "[\"a\",1]",
	     "/1: no value is allowed here (schema false)");
	FAIL("{\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
	     "[\"a\",\"b\",3]", "/2: expected string, got an integer");
	/* 2020-12: prefixItems, then items. */
	PASS("{\"prefixItems\":[{\"const\":1}],\"items\":{\"type\":\"string\"}}", "[1,\"a\"]");
	FAIL("{\"prefixItems\":[{\"const\":1}],\"items\":false}", "[1,2]",
	     "/1: no value is allowed here (schema false)");
	FAIL("{\"prefixItems\":[{\"const\":1}]}", "[2]", "/0: value is not the const value");
	PASS("{\"items\":{\"type\":\"integer\"}}", "{\"a\":\"x\"}"); /* not an array */
}

static void test_array_counts(void **state)
{
	(void)state;
	PASS("{\"minItems\":1,\"maxItems\":2}", "[1,2]");
	FAIL("{\"minItems\":2}", "[1]", "(top): 1 item, fewer than minItems 2");
	FAIL("{\"minItems\":1}", "[]", "(top): 0 items, fewer than minItems 1");
	FAIL("{\"maxItems\":2}", "[1,2,3]", "(top): 3 items, more than maxItems 2");
	PASS("{\"uniqueItems\":true}", "[1,\"1\",[1],{\"a\":1},{\"a\":2}]");
	FAIL("{\"uniqueItems\":true}", "[1,2,1.0]", "(top): items 0 and 2 are equal (uniqueItems)");
	FAIL("{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]",
	     "(top): items 0 and 1 are equal (uniqueItems)");
	PASS("{\"uniqueItems\":false}", "[1,1]");
}

static void test_contains(void **state)
{
	(void)state;
	PASS("{\"contains\":{\"type\":\"string\"}}", "[1,\"a\"]");
	FAIL("{\"contains\":{\"type\":\"string\"}}", "[1,2]",
	     "(top): 0 items match contains, wanted 1 to any");
	FAIL("{\"contains\":{\"type\":\"string\"},\"minContains\":2}", "[\"a\",1]",
	     "(top): 1 item matches contains, wanted 2 to any");
	FAIL("{\"contains\":{\"type\":\"string\"},\"maxContains\":1}", "[\"a\",\"b\"]",
	     "(top): 2 items match contains, wanted 1 to maxContains");
	PASS("{\"contains\":{\"type\":\"string\"},\"minContains\":0}", "[]");
	PASS("{\"contains\":{\"type\":\"string\"},\"minContains\":1,\"maxContains\":2}", "[\"a\",1,\"b\"]");
}

static void test_numbers(void **state)
{
	(void)state;
	PASS("{\"minimum\":2,\"maximum\":4}", "2");
	PASS("{\"minimum\":2,\"maximum\":4}", "4.0");
	FAIL("{\"minimum\":2}", "1", "(top): 1 is below the minimum 2");
	FAIL("{\"minimum\":0.5}", "0.25", "(top): 0.25 is below the minimum 0.5");
	FAIL("{\"maximum\":4}", "5", "(top): 5 is above the maximum 4");
	/* draft-04: exclusiveMinimum and exclusiveMaximum are booleans on the bounds. */
	FAIL("{\"minimum\":2,\"exclusiveMinimum\":true}", "2", "(top): 2 is below the minimum 2");
	FAIL("{\"maximum\":4,\"exclusiveMaximum\":true}", "4", "(top): 4 is above the maximum 4");
	PASS("{\"minimum\":2,\"exclusiveMinimum\":false}", "2");
	/* 2020-12: they are bounds of their own. */
	PASS("{\"exclusiveMinimum\":2,\"exclusiveMaximum\":4}", "3");
	FAIL("{\"exclusiveMinimum\":2}", "2", "(top): 2 is not above the exclusiveMinimum 2");
	FAIL("{\"exclusiveMaximum\":4}", "4.0", "(top): 4 is not below the exclusiveMaximum 4");
	PASS("{\"multipleOf\":3}", "-9");
	PASS("{\"multipleOf\":0.1}", "0.3"); /* within the rounding of doubles */
	FAIL("{\"multipleOf\":3}", "7", "(top): 7 is not a multiple of 3");
	FAIL("{\"multipleOf\":0.5}", "1.25", "(top): 1.25 is not a multiple of 0.5");
	PASS("{\"multipleOf\":0}", "7"); /* not a valid divisor: not checked */
	PASS("{\"multipleOf\":-3}", "7");
	PASS("{\"minimum\":\"5\"}", "1"); /* not a number: not checked */
	PASS("{\"minimum\":5}", "\"1\""); /* only numbers have a minimum */
}

static void test_strings(void **state)
{
	(void)state;
	PASS("{\"minLength\":2,\"maxLength\":3}", "\"abc\"");
	FAIL("{\"minLength\":3}", "\"ab\"", "(top): string of 2 characters is shorter than minLength 3");
	FAIL("{\"minLength\":2}", "\"a\"", "(top): string of 1 character is shorter than minLength 2");
	FAIL("{\"maxLength\":2}", "\"abc\"", "(top): string of 3 characters is longer than maxLength 2");
	/* Characters, not bytes: "é" is two bytes, "€" three. */
	PASS("{\"maxLength\":1}", "\"\\u00e9\"");
	PASS("{\"minLength\":2,\"maxLength\":2}", "\"\\u20ac\\u00e9\"");
	FAIL("{\"maxLength\":1}", "\"\\u20ac\\u00e9\"",
	     "(top): string of 2 characters is longer than maxLength 1");
	PASS("{\"maxLength\":\"1\"}", "\"abc\"");
}

static void test_all_any_one_not(void **state)
{
	(void)state;
	PASS("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":1}]}", "1");
	FAIL("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":1}]}", "0", "(top): 0 is below the minimum 1");
	PASS("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "1");
	/* The branches' own failures are not the message. */
	FAIL("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "true",
	     "(top): matches none of the 2 anyOf schemas");
	FAIL("{\"anyOf\":[{\"type\":\"string\"}]}", "true", "(top): does not match its one anyOf schema");
	PASS("{\"anyOf\":[]}", "true");
	PASS("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "1");
	FAIL("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1",
	     "(top): matches 2 of the oneOf schemas, not exactly one");
	FAIL("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "1",
	     "(top): matches 0 of the oneOf schemas, not exactly one");
	PASS("{\"not\":{\"type\":\"string\"}}", "1");
	FAIL("{\"not\":{\"type\":\"string\"}}", "\"a\"", "(top): matches the schema under not");
	FAIL("{\"properties\":{\"a\":{\"anyOf\":[{\"const\":1},{\"const\":2}]}}}", "{\"a\":3}",
	     "/a: matches none of the 2 anyOf schemas");
}

static void test_if_then_else(void **state)
{
	static const char *const s =
		"{\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":2},\"else\":{\"minimum\":10}}";

	(void)state;
	PASS(s, "\"ab\"");
	PASS(s, "10");
	FAIL(s, "\"a\"", "(top): string of 1 character is shorter than minLength 2");
	FAIL(s, "9", "(top): 9 is below the minimum 10");
	PASS("{\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":2}}", "9");
	PASS("{\"then\":{\"minLength\":2}}", "\"a\""); /* no if: then is not used */
}

static void test_boolean_schemas(void **state)
{
	(void)state;
	PASS("true", "{\"anything\":[1]}");
	FAIL("false", "null", "(top): no value is allowed here (schema false)");
	PASS("{}", "1");
	FAIL("{\"properties\":{\"a\":false}}", "{\"a\":0}", "/a: no value is allowed here (schema false)");
	PASS("{\"properties\":{\"a\":false}}", "{\"b\":0}");
	FAIL("{\"not\":true}", "1", "(top): matches the schema under not");
}

static void test_ref(void **state)
{
	static const char *const tree =
		"{\"type\":\"object\",\"required\":[\"v\"],\"properties\":{\"v\":{\"type\":\"integer\"},"
		"\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}}}";
	struct jsv v;

	(void)state;
	PASS("{\"$defs\":{\"pos\":{\"minimum\":1}},\"$ref\":\"#/$defs/pos\"}", "1");
	FAIL("{\"$defs\":{\"pos\":{\"minimum\":1}},\"$ref\":\"#/$defs/pos\"}", "0",
	     "(top): 0 is below the minimum 1");
	FAIL("{\"definitions\":{\"s\":{\"type\":\"string\"}},"
	     "\"properties\":{\"a\":{\"$ref\":\"#/definitions/s\"}}}",
	     "{\"a\":1}", "/a: expected string, got an integer");
	/* ~1 is "/", ~0 is "~"; an array member by its index. */
	FAIL("{\"$defs\":{\"a/b~c\":{\"type\":\"null\"}},\"$ref\":\"#/$defs/a~1b~0c\"}", "1",
	     "(top): expected null, got an integer");
	FAIL("{\"allOf\":[{},{\"type\":\"null\"}],\"properties\":{\"x\":{\"$ref\":\"#/allOf/1\"}}}",
	     "{\"x\":1}", "/x: expected null, got an integer");
	/* "#" is the whole schema: a recursive tree. */
	PASS(tree, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}");
	FAIL(tree, "{\"v\":1,\"kids\":[{\"v\":2},{\"kids\":[]}]}",
	     "/kids/1: required property 'v' is missing");
	/* The $ref and the keywords beside it both apply. */
	FAIL("{\"$defs\":{\"i\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/i\",\"minimum\":5}", "3",
	     "(top): 3 is below the minimum 5");

	/* Not local, an anchor, a pointer to nothing: skipped and noted. */
	assert_int_equal(run(&v, "{\"$ref\":\"https://example.com/s.json\",\"type\":\"string\"}", "\"a\""),
			 1);
	assert_int_equal(v.nskipped, 1);
	assert_string_equal(v.skipped[0], "$ref (not local)");
	assert_int_equal(run(&v, "{\"$ref\":\"#anchor\"}", "1"), 1);
	assert_int_equal(v.nskipped, 1);
	assert_string_equal(v.skipped[0], "$ref (not local)");
	assert_int_equal(run(&v, "{\"$ref\":\"#/$defs/none\"}", "1"), 1);
	assert_int_equal(v.nskipped, 1);
	assert_string_equal(v.skipped[0], "$ref (not local)");
	assert_int_equal(run(&v, "{\"items\":[{}],\"$ref\":\"#/items/x\"}", "1"), 1);
	assert_int_equal(v.nskipped, 1);
	assert_int_equal(run(&v, "{\"$ref\":5}", "1"), 1);
	assert_int_equal(v.nskipped, 0);
}

static void test_skipped(void **state)
{
	struct jsv v;
	char text[200];

	(void)state;
	/* pattern is not checked: the value passes, and pattern is noted once. */
	assert_int_equal(run(&v, "{\"type\":\"string\",\"pattern\":\"^a\",\"properties\":{}}", "\"b\""), 1);
	assert_int_equal(v.nskipped, 1);
	assert_string_equal(v.skipped[0], "pattern");
	assert_int_equal(run(&v, "{\"items\":{\"pattern\":\"^a\"}}", "[\"x\",\"y\"]"), 1);
	assert_int_equal(v.nskipped, 1);
	jsv_skipped_text(&v, text, sizeof(text));
	assert_string_equal(text, "pattern");
	/* Keywords met only where the value goes. */
	assert_int_equal(run(&v, "{\"properties\":{\"a\":{\"unevaluatedProperties\":false}}}", "{}"), 1);
	assert_int_equal(v.nskipped, 0);
	/* Skipped keywords do not hide the failures of checked ones. */
	FAIL("{\"pattern\":\"^a\",\"maxLength\":1}", "\"ab\"",
	     "(top): string of 2 characters is longer than maxLength 1");
	/* All eight, and a ninth distinct one past the list's room. */
	assert_int_equal(run(&v,
			     "{\"pattern\":1,\"patternProperties\":{},\"dependentSchemas\":{},"
			     "\"dependencies\":{},\"unevaluatedProperties\":true,\"unevaluatedItems\":true,"
			     "\"$dynamicRef\":\"#x\",\"$recursiveRef\":\"#\",\"$ref\":\"other.json\"}",
			     "{}"),
			 1);
	assert_int_equal(v.nskipped, JSV_SKIPS);
	jsv_skipped_text(&v, text, sizeof(text));
	assert_string_equal(text, "$ref (not local), pattern, patternProperties, dependentSchemas, "
				  "dependencies, unevaluatedProperties, unevaluatedItems, $dynamicRef");
	/* The text is cut to its buffer. */
	jsv_skipped_text(&v, text, 20);
	assert_string_equal(text, "$ref (not local), p");
	jsv_skipped_text(&v, text, 18);
	assert_string_equal(text, "$ref (not local),");
	assert_int_equal(run(&v, "{}", "1"), 1);
	jsv_skipped_text(&v, text, sizeof(text));
	assert_string_equal(text, "");
}

static void test_scan(void **state)
{
	struct jsv v;
	char text[200];
	json_t *s;

	(void)state;
	memset(&v, 0x55, sizeof(v)); /* jsv_scan resets it */
	s = load("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/x\","
		 "\"$defs\":{\"x\":{}}}");
	jsv_scan(&v, s);
	json_decref(s);
	assert_int_equal(v.nskipped, 0);
	assert_int_equal(v.stopped, 0);
	/* Every place a subschema may be. */
	s = load("{\"properties\":{\"a\":{\"pattern\":\"x\"}},"
		 "\"$defs\":{\"d\":{\"$ref\":\"https://x/y\"}},"
		 "\"definitions\":{\"d\":{\"dependencies\":{}}},"
		 "\"items\":[{\"$dynamicRef\":\"#a\"}],"
		 "\"anyOf\":[{},{\"additionalProperties\":{\"unevaluatedItems\":false}}],"
		 "\"not\":{\"if\":{\"then\":{\"else\":{\"$recursiveRef\":\"#\"}}}}}");
	jsv_scan(&v, s);
	json_decref(s);
	jsv_skipped_text(&v, text, sizeof(text));
	/* (in the walk's order: the maps of subschemas, the single ones, the lists) */
	assert_string_equal(text, "pattern, $ref (not local), dependencies, $recursiveRef, "
				  "unevaluatedItems, $dynamicRef");
	/* A schema that is not an object has nothing to note. */
	s = load("true");
	jsv_scan(&v, s);
	json_decref(s);
	assert_int_equal(v.nskipped, 0);
}

/* {"properties":{"a": ... {"type":"string"} ...}} n levels deep, and the value
 * {"a": ... 1 ...} to go with it (both owned). */
static void nested(int n, json_t **schema, json_t **value)
{
	json_t *s = json_pack("{s:s}", "type", "string"), *x = json_integer(1);

	for (int i = 0; i < n; i++) {
		s = json_pack("{s:{s:o}}", "properties", "a", s);
		x = json_pack("{s:o}", "a", x);
	}
	*schema = s;
	*value = x;
}

static void test_depth_limit(void **state)
{
	struct jsv v;
	json_t *s, *x;
	char want[200];

	(void)state;
	/* JSV_DEPTH levels are checked: the failure at the bottom is found. */
	nested(JSV_DEPTH, &s, &x);
	assert_int_equal(jsv_validate(&v, s, x), 0);
	assert_int_equal(v.stopped, 0);
	for (int i = 0; i < JSV_DEPTH; i++)
		memcpy(want + 2 * i, "/a", 2);
	snprintf(want + 2 * JSV_DEPTH, sizeof(want) - 2 * JSV_DEPTH, ": expected string, got an integer");
	assert_string_equal(v.err, want);
	json_decref(s);
	json_decref(x);
	/* One more level: the check stops, and what was not checked passes. */
	nested(JSV_DEPTH + 1, &s, &x);
	assert_int_equal(jsv_validate(&v, s, x), 1);
	assert_int_equal(v.stopped, 1);
	assert_string_equal(v.err, "");
	json_decref(s);
	json_decref(x);
	/* A $ref to itself stops at the depth limit too. */
	assert_int_equal(run(&v, "{\"$ref\":\"#\"}", "1"), 1);
	assert_int_equal(v.stopped, 1);
	/* A not whose check stopped does not fail. */
	assert_int_equal(run(&v, "{\"not\":{\"$ref\":\"#\"}}", "1"), 1);
	assert_int_equal(v.stopped, 1);
	assert_string_equal(v.err, "");
}

/* An array of n integers, the last one a string. */
static json_t *ints_then_string(size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i + 1 < n; i++)
		json_array_append_new(a, json_integer((json_int_t)i));
	json_array_append_new(a, json_string("x"));
	return a;
}

static void test_step_limit(void **state)
{
	struct jsv v;
	json_t *s = load("{\"items\":{\"type\":\"integer\"}}"), *x;
	char want[80];

	(void)state;
	/* The schema itself is a step, then each item: JSV_STEPS in all are checked. */
	x = ints_then_string(JSV_STEPS - 1);
	assert_int_equal(jsv_validate(&v, s, x), 0);
	assert_int_equal(v.stopped, 0);
	snprintf(want, sizeof(want), "/%d: expected integer, got a string", JSV_STEPS - 2);
	assert_string_equal(v.err, want);
	json_decref(x);
	x = ints_then_string(JSV_STEPS);
	assert_int_equal(jsv_validate(&v, s, x), 1);
	assert_int_equal(v.stopped, 1);
	assert_string_equal(v.err, "");
	json_decref(x);
	json_decref(s);
	/* uniqueItems counts the pairs it compares: 200 items are 19,900 pairs,
	 * 201 are 20,100; the equal pair is the last compared. */
	s = load("{\"uniqueItems\":true}");
	x = json_array();
	for (int i = 0; i < 199; i++)
		json_array_append_new(x, json_integer(i));
	json_array_append_new(x, json_integer(198));
	assert_int_equal(jsv_validate(&v, s, x), 0);
	assert_string_equal(v.err, "(top): items 198 and 199 are equal (uniqueItems)");
	json_array_set_new(x, 199, json_integer(199));
	json_array_append_new(x, json_integer(199));
	assert_int_equal(jsv_validate(&v, s, x), 1);
	assert_int_equal(v.stopped, 1);
	json_decref(x);
	json_decref(s);
}

static void test_redacted(void **state)
{
	(void)state;
	/* A redacted string's type is known, its value is not. */
	PASS("{\"type\":\"string\",\"enum\":[\"a\"],\"minLength\":30}", "\"[redacted:0123abcd]\"");
	PASS("{\"const\":\"secret\"}", "\"Bearer [redacted:0123abcd]\"");
	FAIL("{\"type\":\"integer\"}", "\"[redacted:0123abcd]\"", "(top): expected integer, got a string");
	FAIL("{\"enum\":[\"a\"]}", "\"[redacted:0123abcX]\"", "(top): value is not the enum's one value");
}

static void test_bad_schemas(void **state)
{
	(void)state;
	/* What is not a schema, or a keyword of the wrong type, is not judged. */
	PASS("5", "1");
	PASS("\"string\"", "1");
	PASS("null", "1");
	PASS("[{\"type\":\"string\"}]", "1");
	PASS("{\"items\":5,\"additionalItems\":5,\"contains\":5}", "[1]");
	PASS("{\"properties\":{\"a\":5},\"additionalProperties\":5}", "{\"a\":1,\"b\":2}");
	PASS("{\"allOf\":5,\"anyOf\":{},\"oneOf\":\"x\"}", "1");
	/* A subschema that is not one counts as true: under not nothing passes, and
	 * under if, then applies. */
	FAIL("{\"not\":5}", "1", "(top): matches the schema under not");
	FAIL("{\"if\":5,\"then\":false,\"else\":true}", "1",
	     "(top): no value is allowed here (schema false)");
	PASS("{\"not\":{\"not\":5}}", "1");
	PASS("{\"minItems\":\"2\",\"maxItems\":null,\"minContains\":\"x\"}", "[]");
	PASS("{\"dependentRequired\":{\"a\":\"b\"}}", "{\"a\":1}");
	/* Unknown keywords are annotations. */
	PASS("{\"title\":\"t\",\"format\":\"email\",\"x-custom\":{\"type\":\"null\"}}", "\"not an email\"");
}

static void test_path_bounds(void **state)
{
	char key[120], s[400], x[400], want[400];
	struct jsv v;

	(void)state;
	/* The pointer is cut to its buffer (159 bytes); the message to 319. */
	memset(key, 'k', 100);
	key[100] = '\0';
	snprintf(s, sizeof(s), "{\"properties\":{\"%s\":{\"properties\":{\"%s\":{\"type\":\"null\"}}}}}", key,
		 key);
	snprintf(x, sizeof(x), "{\"%s\":{\"%s\":1}}", key, key);
	assert_int_equal(run(&v, s, x), 0);
	snprintf(want, sizeof(want), "/%s/%.*s: expected null, got an integer", key, 57, key);
	assert_string_equal(v.err, want);
	assert_int_equal(strlen(v.err), 159 + strlen(": expected null, got an integer"));
	/* The pointer is back to its parent after a member: the next one's error is its own. */
	FAIL("{\"properties\":{\"long-member\":{},\"b\":{\"type\":\"null\"}}}", "{\"long-member\":1,\"b\":1}",
	     "/b: expected null, got an integer");
}

static void test_equal(void **state)
{
	json_t *a, *b;

	(void)state;
	a = load("{\"a\":[1,2.0,\"x\",null,true,{}],\"b\":{\"c\":false}}");
	b = load("{\"b\":{\"c\":false},\"a\":[1.0,2,\"x\",null,true,{}]}");
	assert_int_equal(jsv_equal(a, b), 1);
	json_decref(b);
	b = load("{\"b\":{\"c\":false},\"a\":[2,1,\"x\",null,true,{}]}");
	assert_int_equal(jsv_equal(a, b), 0); /* arrays in order */
	json_decref(b);
	b = load("{\"b\":{\"c\":true},\"a\":[1,2,\"x\",null,true,{}]}");
	assert_int_equal(jsv_equal(a, b), 0);
	json_decref(b);
	assert_int_equal(jsv_equal(a, NULL), 0);
	assert_int_equal(jsv_equal(NULL, NULL), 0);
	json_decref(a);
	/* Strings by their bytes, NUL included. */
	a = json_stringn("a\0b", 3);
	b = json_stringn("a\0c", 3);
	assert_int_equal(jsv_equal(a, b), 0);
	assert_int_equal(jsv_equal(a, a), 1);
	json_decref(a);
	json_decref(b);
	a = load("0");
	b = load("false");
	assert_int_equal(jsv_equal(a, b), 0);
	json_decref(a);
	json_decref(b);
	/* 2049 levels compare; 2050 are too deep and count as unequal. */
	for (int levels = 2049; levels <= 2050; levels++) {
		json_t *p = json_array(), *q = json_array();
		for (int i = 1; i < levels; i++) {
			json_t *np = json_array(), *nq = json_array();
			json_array_append_new(np, p);
			json_array_append_new(nq, q);
			p = np;
			q = nq;
		}
		assert_int_equal(jsv_equal(p, q), levels == 2049);
		json_decref(p);
		json_decref(q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type),
		cmocka_unit_test(test_enum_const),
		cmocka_unit_test(test_required_properties),
		cmocka_unit_test(test_additional_properties),
		cmocka_unit_test(test_object_counts),
		cmocka_unit_test(test_property_names_dependent),
		cmocka_unit_test(test_items),
		cmocka_unit_test(test_array_counts),
		cmocka_unit_test(test_contains),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_all_any_one_not),
		cmocka_unit_test(test_if_then_else),
		cmocka_unit_test(test_boolean_schemas),
		cmocka_unit_test(test_ref),
		cmocka_unit_test(test_skipped),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_step_limit),
		cmocka_unit_test(test_redacted),
		cmocka_unit_test(test_bad_schemas),
		cmocka_unit_test(test_path_bounds),
		cmocka_unit_test(test_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
