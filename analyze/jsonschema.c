/*
 * jsonschema.c - a bounded JSON Schema validator (see jsonschema.h): one
 * recursive check per keyword family (type, numbers, strings, arrays,
 * objects, combinators), each failing with the first problem and its path.
 * Every step and level counts against JSV_STEPS and JSV_DEPTH.
 */
#include "analyze/jsonschema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/redact.h"

/* Keywords skipped and noted (see jsonschema.h). */
static const char *const jsv_unsupported[] = {
	"pattern",          "patternProperties", "dependentSchemas", "dependencies", "unevaluatedProperties",
	"unevaluatedItems", "$dynamicRef",       "$recursiveRef",    NULL,
};

const char *jsv_type_name(json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* A string the tap redacted (it holds a marker): its value is not known. */
static int redacted(const char *s, size_t n)
{
	return s && mt_redact_find_marker(s, n) != NULL;
}

/* Numbers compare by value (1 == 1.0), as JSON Schema does. Parsed values are
 * at most 2048 deep (jansson's limit); deeper than JEQ_DEPTH counts as unequal. */
#define JEQ_DEPTH 2048

static int jeq(json_t *a, json_t *b, int depth)
{
	const char *k;
	json_t *v;
	size_t i;

	if (depth > JEQ_DEPTH || !a || !b)
		return 0;
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach(a, k, v)
		{
			if (!jeq(v, json_object_get(b, k), depth + 1))
				return 0;
		}
		return 1;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		json_array_foreach(a, i, v)
		{
			if (!jeq(v, json_array_get(b, i), depth + 1))
				return 0;
		}
		return 1;
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
	default: return 1;
	}
}

int jsv_equal(json_t *a, json_t *b)
{
	return jeq(a, b, 0);
}

static void jsv_note(struct jsv *v, const char *kw)
{
	for (size_t i = 0; i < v->nskipped; i++)
		if (!strcmp(v->skipped[i], kw))
			return;
	if (v->nskipped < JSV_SKIPS)
		v->skipped[v->nskipped++] = kw;
}

static size_t jsv_push(struct jsv *v, const char *key, size_t index)
{
	size_t old = v->plen;
	int n = key ? snprintf(v->path + old, sizeof(v->path) - old, "/%s", key)
		    : snprintf(v->path + old, sizeof(v->path) - old, "/%zu", index);

	if (n > 0)
		v->plen = old + (size_t)n < sizeof(v->path) ? old + (size_t)n : sizeof(v->path) - 1;
	return old;
}

static void jsv_pop(struct jsv *v, size_t old)
{
	v->plen = old;
	v->path[old] = '\0';
}

static int jsv_fail(struct jsv *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jsv_fail(struct jsv *v, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (v->mute || v->err[0])
		return 0;
	n = snprintf(v->err, sizeof(v->err), "%s: ", v->plen ? v->path : "(top)");
	if (n < 0 || (size_t)n >= sizeof(v->err))
		return 0;
	va_start(ap, fmt);
	vsnprintf(v->err + n, sizeof(v->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return 0;
}

static int is_integral(double d)
{
	return d >= -9e15 && d <= 9e15 && d == (double)(long long)d;
}

static int jsv_is_type(const char *t, json_t *x)
{
	if (!strcmp(t, "object"))
		return json_is_object(x);
	if (!strcmp(t, "array"))
		return json_is_array(x);
	if (!strcmp(t, "string"))
		return json_is_string(x);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(x);
	if (!strcmp(t, "null"))
		return json_is_null(x);
	if (!strcmp(t, "number"))
		return json_is_number(x);
	if (!strcmp(t, "integer"))
		return json_is_integer(x) || (json_is_real(x) && is_integral(json_real_value(x)));
	return 1; /* not a type name: not ours to judge */
}

/* A local reference ("#", "#/$defs/x"), or NULL. */
static json_t *jsv_ref(json_t *root, const char *ref)
{
	char tok[128];
	json_t *cur = root;
	const char *p = ref + 1;

	if (ref[0] != '#')
		return NULL;
	if (*p && *p != '/')
		return NULL; /* an anchor */
	while (*p == '/' && cur) {
		size_t n = 0;
		for (p++; *p && *p != '/'; p++) {
			char ch = *p;
			if (ch == '~' && (p[1] == '0' || p[1] == '1'))
				ch = *++p == '0' ? '~' : '/';
			if (n + 1 >= sizeof(tok))
				return NULL;
			tok[n++] = ch;
		}
		tok[n] = '\0';
		if (json_is_array(cur)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);
			cur = *end || !n ? NULL : json_array_get(cur, i);
		} else {
			cur = json_object_get(cur, tok);
		}
	}
	return cur;
}

static int jsv_check(struct jsv *v, json_t *s, json_t *x, int depth);

static int jsv_type(struct jsv *v, json_t *s, json_t *x)
{
	json_t *t = json_object_get(s, "type"), *e;
	char want[96] = "";
	size_t i;
	int ok = 0;

	if (json_is_string(t)) {
		ok = jsv_is_type(json_string_value(t), x);
		snprintf(want, sizeof(want), "%s", json_string_value(t));
	} else if (json_is_array(t)) {
		json_array_foreach(t, i, e)
		{
			if (!json_is_string(e))
				continue;
			ok |= jsv_is_type(json_string_value(e), x);
			size_t l = strlen(want);
			snprintf(want + l, sizeof(want) - l, "%s%s", l ? "|" : "", json_string_value(e));
		}
		if (!want[0])
			return 1;
	} else {
		return 1;
	}
	return ok ? 1 : jsv_fail(v, "expected %s, got %s", want, jsv_type_name(x));
}

static int jsv_number(struct jsv *v, json_t *s, double x)
{
	json_t *k;
	double lim;

	if (json_is_number(k = json_object_get(s, "minimum"))) {
		lim = json_number_value(k);
		if (x < lim || (json_is_true(json_object_get(s, "exclusiveMinimum")) && x <= lim))
			return jsv_fail(v, "%g is below the minimum %g", x, lim);
	}
	if (json_is_number(k = json_object_get(s, "maximum"))) {
		lim = json_number_value(k);
		if (x > lim || (json_is_true(json_object_get(s, "exclusiveMaximum")) && x >= lim))
			return jsv_fail(v, "%g is above the maximum %g", x, lim);
	}
	if (json_is_number(k = json_object_get(s, "exclusiveMinimum")) && x <= json_number_value(k))
		return jsv_fail(v, "%g is not above the exclusiveMinimum %g", x, json_number_value(k));
	if (json_is_number(k = json_object_get(s, "exclusiveMaximum")) && x >= json_number_value(k))
		return jsv_fail(v, "%g is not below the exclusiveMaximum %g", x, json_number_value(k));
	if (json_is_number(k = json_object_get(s, "multipleOf")) && json_number_value(k) > 0) {
		double q = x / json_number_value(k);
		if (q > -9e15 && q < 9e15) {
			double r = q - (double)(long long)q;
			if (r < 0)
				r = -r;
			if (r > 1e-9 && r < 1 - 1e-9)
				return jsv_fail(v, "%g is not a multiple of %g", x, json_number_value(k));
		}
	}
	return 1;
}

static int jsv_string(struct jsv *v, json_t *s, json_t *x)
{
	const char *p = json_string_value(x);
	size_t n = 0, len = json_string_length(x);
	json_t *k;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)p[i] & 0xC0) != 0x80)
			n++;
	if (json_is_integer(k = json_object_get(s, "minLength")) && (json_int_t)n < json_integer_value(k))
		return jsv_fail(v, "string of %zu character%s is shorter than minLength %lld", n,
				n == 1 ? "" : "s", (long long)json_integer_value(k));
	if (json_is_integer(k = json_object_get(s, "maxLength")) && (json_int_t)n > json_integer_value(k))
		return jsv_fail(v, "string of %zu character%s is longer than maxLength %lld", n,
				n == 1 ? "" : "s", (long long)json_integer_value(k));
	return 1;
}

static int jsv_array(struct jsv *v, json_t *s, json_t *x, int depth)
{
	size_t n = json_array_size(x), i, nprefix = 0;
	json_t *k, *prefix = NULL, *rest = NULL, *items = json_object_get(s, "items"), *e;

	if (json_is_integer(k = json_object_get(s, "minItems")) && (json_int_t)n < json_integer_value(k))
		return jsv_fail(v, "%zu item%s, fewer than minItems %lld", n, n == 1 ? "" : "s",
				(long long)json_integer_value(k));
	if (json_is_integer(k = json_object_get(s, "maxItems")) && (json_int_t)n > json_integer_value(k))
		return jsv_fail(v, "%zu item%s, more than maxItems %lld", n, n == 1 ? "" : "s",
				(long long)json_integer_value(k));
	if (json_is_true(json_object_get(s, "uniqueItems"))) {
		for (i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++) {
				if (++v->steps > JSV_STEPS) {
					v->stopped = 1;
					return 1;
				}
				if (jeq(json_array_get(x, i), json_array_get(x, j), 0))
					return jsv_fail(v, "items %zu and %zu are equal (uniqueItems)", i, j);
			}
	}
	if (json_is_array(k = json_object_get(s, "prefixItems"))) {
		prefix = k;
		rest = items;
	} else if (json_is_array(items)) {
		prefix = items;
		rest = json_object_get(s, "additionalItems");
	} else {
		rest = items;
	}
	nprefix = json_array_size(prefix);
	json_array_foreach(x, i, e)
	{
		json_t *sub = i < nprefix ? json_array_get(prefix, i) : rest;
		if (!sub)
			continue;
		size_t old = jsv_push(v, NULL, i);
		int ok = jsv_check(v, sub, e, depth + 1);
		jsv_pop(v, old);
		if (!ok)
			return 0;
	}
	if ((k = json_object_get(s, "contains"))) {
		json_int_t found = 0, lo = 1, hi = -1;
		if (json_is_integer(json_object_get(s, "minContains")))
			lo = json_integer_value(json_object_get(s, "minContains"));
		if (json_is_integer(json_object_get(s, "maxContains")))
			hi = json_integer_value(json_object_get(s, "maxContains"));
		v->mute++;
		json_array_foreach(x, i, e)
		{
			found += jsv_check(v, k, e, depth + 1);
		}
		v->mute--;
		if (found < lo || (hi >= 0 && found > hi))
			return jsv_fail(v, "%lld %s contains, wanted %lld to %s", (long long)found,
					found == 1 ? "item matches" : "items match", (long long)lo,
					hi >= 0 ? "maxContains" : "any");
	}
	return 1;
}

static int jsv_object(struct jsv *v, json_t *s, json_t *x, int depth)
{
	json_t *req = json_object_get(s, "required"), *props = json_object_get(s, "properties");
	json_t *addl = json_object_get(s, "additionalProperties"), *k, *e;
	const char *key;
	size_t i, n = json_object_size(x);

	json_array_foreach(req, i, e)
	{
		if (json_is_string(e) && !json_object_get(x, json_string_value(e)))
			return jsv_fail(v, "required property '%s' is missing", json_string_value(e));
	}
	if (json_is_integer(k = json_object_get(s, "minProperties")) && (json_int_t)n < json_integer_value(k))
		return jsv_fail(v, "%zu %s, fewer than minProperties %lld", n,
				n == 1 ? "property" : "properties", (long long)json_integer_value(k));
	if (json_is_integer(k = json_object_get(s, "maxProperties")) && (json_int_t)n > json_integer_value(k))
		return jsv_fail(v, "%zu %s, more than maxProperties %lld", n,
				n == 1 ? "property" : "properties", (long long)json_integer_value(k));
	/* With patternProperties, which members are "additional" is not known here. */
	if (json_object_get(s, "patternProperties"))
		addl = NULL;
	json_object_foreach(x, key, e)
	{
		json_t *sub = json_object_get(props, key);
		if (!sub && addl && json_is_false(addl))
			return jsv_fail(v, "property '%s' is not allowed (additionalProperties: false)", key);
		if (!sub)
			sub = addl;
		if (sub) {
			size_t old = jsv_push(v, key, 0);
			int ok = jsv_check(v, sub, e, depth + 1);
			jsv_pop(v, old);
			if (!ok)
				return 0;
		}
		if ((k = json_object_get(s, "propertyNames"))) {
			json_t *name = json_string(key);
			int ok = name ? jsv_check(v, k, name, depth + 1) : 1;
			json_decref(name);
			if (!ok)
				return 0;
		}
		if (json_is_array(k = json_object_get(json_object_get(s, "dependentRequired"), key))) {
			json_array_foreach(k, i, e)
			{
				if (json_is_string(e) && !json_object_get(x, json_string_value(e)))
					return jsv_fail(v, "property '%s' requires '%s' (dependentRequired)",
							key, json_string_value(e));
			}
		}
	}
	return 1;
}

static int jsv_combine(struct jsv *v, json_t *s, json_t *x, int depth)
{
	json_t *k, *e;
	size_t i;
	int n;

	json_array_foreach(json_object_get(s, "allOf"), i, e)
	{
		if (!jsv_check(v, e, x, depth + 1))
			return 0;
	}
	if (json_is_array(k = json_object_get(s, "anyOf")) && json_array_size(k)) {
		n = 0;
		v->mute++;
		json_array_foreach(k, i, e)
		{
			if ((n = jsv_check(v, e, x, depth + 1)))
				break;
		}
		v->mute--;
		if (!n)
			return jsv_fail(v,
					json_array_size(k) == 1 ? "does not match its one anyOf schema"
								: "matches none of the %zu anyOf schemas",
					json_array_size(k));
	}
	if (json_is_array(k = json_object_get(s, "oneOf")) && json_array_size(k)) {
		n = 0;
		v->mute++;
		json_array_foreach(k, i, e)
		{
			n += jsv_check(v, e, x, depth + 1);
		}
		v->mute--;
		if (n != 1)
			return jsv_fail(v, "matches %d of the oneOf schemas, not exactly one", n);
	}
	if ((k = json_object_get(s, "not"))) {
		v->mute++;
		n = jsv_check(v, k, x, depth + 1);
		v->mute--;
		if (n && !v->stopped)
			return jsv_fail(v, "matches the schema under not");
	}
	if ((k = json_object_get(s, "if"))) {
		v->mute++;
		n = jsv_check(v, k, x, depth + 1);
		v->mute--;
		e = json_object_get(s, n ? "then" : "else");
		if (e && !jsv_check(v, e, x, depth + 1))
			return 0;
	}
	return 1;
}

/* Does x validate against schema s? 1 yes (or a limit was hit: v->stopped), 0 no (v->err). */
static int jsv_check(struct jsv *v, json_t *s, json_t *x, int depth)
{
	json_t *k, *e;
	size_t i;

	if (v->stopped)
		return 1;
	if (depth > JSV_DEPTH || ++v->steps > JSV_STEPS) {
		v->stopped = 1;
		return 1;
	}
	if (json_is_false(s))
		return jsv_fail(v, "no value is allowed here (schema false)");
	if (!json_is_object(s))
		return 1;
	if (json_is_string(k = json_object_get(s, "$ref"))) {
		json_t *t = jsv_ref(v->root, json_string_value(k));
		if (!t)
			jsv_note(v, "$ref (not local)");
		else if (!jsv_check(v, t, x, depth + 1))
			return 0;
	}
	if (!jsv_type(v, s, x))
		return 0;
	/* A redacted string: its type is known, its value is not. */
	if (json_is_string(x) && redacted(json_string_value(x), json_string_length(x)))
		return 1;
	if (json_is_array(k = json_object_get(s, "enum"))) {
		int found = 0;
		json_array_foreach(k, i, e)
		{
			if ((found = jeq(e, x, 0)))
				break;
		}
		if (!found)
			return jsv_fail(v,
					json_array_size(k) == 1 ? "value is not the enum's one value"
								: "value is not one of the %zu enum values",
					json_array_size(k));
	}
	if ((k = json_object_get(s, "const")) && !jeq(k, x, 0))
		return jsv_fail(v, "value is not the const value");
	if (json_is_number(x) && !jsv_number(v, s, json_number_value(x)))
		return 0;
	if (json_is_string(x) && !jsv_string(v, s, x))
		return 0;
	if (json_is_array(x) && !jsv_array(v, s, x, depth))
		return 0;
	if (json_is_object(x) && !jsv_object(v, s, x, depth))
		return 0;
	if (!jsv_combine(v, s, x, depth))
		return 0;
	for (i = 0; jsv_unsupported[i]; i++)
		if (json_object_get(s, jsv_unsupported[i]))
			jsv_note(v, jsv_unsupported[i]);
	return 1;
}

int jsv_validate(struct jsv *v, json_t *schema, json_t *x)
{
	memset(v, 0, sizeof(*v));
	v->root = schema;
	return jsv_check(v, schema, x, 0);
}

/* Note the unsupported keywords a schema uses, walking its subschemas. */
static void jsv_scan_at(struct jsv *v, json_t *s, int depth)
{
	static const char *const maps[] = {"properties",  "patternProperties", "$defs",
					   "definitions", "dependentSchemas",  NULL};
	static const char *const one[] = {"additionalProperties",
					  "items",
					  "additionalItems",
					  "contains",
					  "propertyNames",
					  "not",
					  "if",
					  "then",
					  "else",
					  "unevaluatedItems",
					  "unevaluatedProperties",
					  NULL};
	static const char *const lists[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items", NULL};
	json_t *k, *e;
	const char *key;
	size_t i;

	if (!json_is_object(s) || depth > JSV_DEPTH || ++v->steps > JSV_STEPS)
		return;
	for (i = 0; jsv_unsupported[i]; i++)
		if (json_object_get(s, jsv_unsupported[i]))
			jsv_note(v, jsv_unsupported[i]);
	if (json_is_string(k = json_object_get(s, "$ref")) && json_string_value(k)[0] != '#')
		jsv_note(v, "$ref (not local)");
	for (i = 0; maps[i]; i++)
		json_object_foreach(json_object_get(s, maps[i]), key, e)
		{
			jsv_scan_at(v, e, depth + 1);
		}
	for (i = 0; one[i]; i++)
		jsv_scan_at(v, json_object_get(s, one[i]), depth + 1);
	for (i = 0; lists[i]; i++) {
		size_t j;
		json_array_foreach(json_object_get(s, lists[i]), j, e)
		{
			jsv_scan_at(v, e, depth + 1);
		}
	}
}

void jsv_scan(struct jsv *v, json_t *schema)
{
	memset(v, 0, sizeof(*v));
	jsv_scan_at(v, schema, 0);
}

void jsv_skipped_text(const struct jsv *v, char *out, size_t n)
{
	size_t l = 0;

	out[0] = '\0';
	for (size_t i = 0; i < v->nskipped && l < n; i++) {
		int w = snprintf(out + l, n - l, "%s%s", i ? ", " : "", v->skipped[i]);
		if (w < 0)
			break;
		l += (size_t)w;
	}
}
