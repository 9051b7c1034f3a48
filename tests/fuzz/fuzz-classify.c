/*
 * fuzz-classify.c - libFuzzer target for the JSON-RPC classifier.
 *
 * Runs mt_classify() on the input and checks it against Jansson, an
 * independent JSON parser:
 *  - what mt_classify calls JSON (anything but MT_INVALID) Jansson must load,
 *    except where Jansson has a limit of its own: numbers it cannot represent,
 *    nesting deeper than its parser allows, NUL bytes in object keys;
 *  - what mt_classify calls MT_INVALID Jansson must refuse, except for a NUL
 *    byte right after a number or literal, which Jansson skips;
 *  - when both load it, the kind, id type, method, error code, _meta flag,
 *    progress token and batch size must be what the tree says.
 * Also checks that every span lies inside the input and that the helpers
 * (mt_json_string, mt_json_member, mt_json_int64) agree with the tree.
 * A disagreement aborts with both sides printed.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *cur;
static size_t cur_size;

static void die(const char *what, const struct mt_class *c)
{
	fprintf(stderr, "fuzz-classify: %s\n  kind %s, idtype %d, error %s\n  input (%zu bytes): ", what,
		mt_kind_name(c->kind), (int)c->idtype, c->error ? c->error : "-", cur_size);
	for (size_t i = 0; i < cur_size && i < 400; i++)
		fprintf(stderr, (cur[i] >= 0x20 && cur[i] < 0x7f) ? "%c" : "\\x%02x", cur[i]);
	fputc('\n', stderr);
	abort();
}

static void check_span(struct mt_span sp, const struct mt_class *c, const char *name)
{
	if (sp.n == 0)
		return;
	if (!sp.p || (const uint8_t *)sp.p < cur || (const uint8_t *)sp.p + sp.n > cur + cur_size) {
		char why[64];
		snprintf(why, sizeof(why), "%s span outside the input", name);
		die(why, c);
	}
}

/* Does the JSON string token tok decode to the same bytes as Jansson's string s? */
static int same_string(struct mt_span tok, const json_t *s)
{
	struct mt_buf b = MT_BUF_INIT;
	int same;

	if (!json_is_string(s))
		return 0;
	same = mt_json_string(tok, &b) == 0 && b.len == json_string_length(s) &&
	       (b.len == 0 || memcmp(b.data, json_string_value(s), b.len) == 0);
	mt_buf_release(&b);
	return same;
}

static enum mt_idtype type_of(const json_t *v)
{
	if (json_is_string(v))
		return MT_ID_STRING;
	if (json_is_number(v))
		return MT_ID_NUMBER;
	if (json_is_null(v))
		return MT_ID_NULL;
	return MT_ID_NONE;
}

static int is_str(const json_t *v, const char *s)
{
	return json_is_string(v) && json_string_length(v) == strlen(s) &&
	       memcmp(json_string_value(v), s, strlen(s)) == 0;
}

/* The kind mt_classify should give a loaded object (see message.c's rules). */
static enum mt_kind expected_kind(json_t *root, int *either_error)
{
	json_t *id, *method, *result, *error;

	*either_error = 0;
	if (json_is_array(root))
		return json_array_size(root) ? MT_BATCH : MT_NOTJSONRPC;
	if (!json_is_object(root))
		return MT_NOTJSONRPC;
	if (!is_str(json_object_get(root, "jsonrpc"), "2.0"))
		return MT_NOTJSONRPC;
	id = json_object_get(root, "id");
	method = json_object_get(root, "method");
	result = json_object_get(root, "result");
	error = json_object_get(root, "error");
	if (id && type_of(id) == MT_ID_NONE)
		return MT_NOTJSONRPC;
	if (method)
		return !json_is_string(method) ? MT_NOTJSONRPC : id ? MT_REQUEST : MT_NOTIFICATION;
	if (result && error)
		return MT_NOTJSONRPC;
	if (result)
		return id ? MT_RESPONSE : MT_NOTJSONRPC;
	if (error) {
		if (!json_is_object(error))
			return MT_NOTJSONRPC;
		/* An error response without an id: JSON-RPC says id is required, the
		 * classifier currently says MT_ERROR; either is accepted here. */
		*either_error = !id;
		return MT_ERROR;
	}
	return MT_NOTJSONRPC;
}

static void check_fields(json_t *root, const struct mt_class *c)
{
	json_t *id = json_object_get(root, "id"), *params = json_object_get(root, "params");
	json_t *result = json_object_get(root, "result"), *error = json_object_get(root, "error");
	json_t *meta = NULL, *tok = NULL;
	int64_t v;

	if (c->kind == MT_BATCH) {
		if (c->batch_size != json_array_size(root))
			die("batch size differs from Jansson's", c);
		return;
	}
	if (c->kind != MT_REQUEST && c->kind != MT_NOTIFICATION && c->kind != MT_RESPONSE &&
	    c->kind != MT_ERROR)
		return;
	if (c->idtype != (id ? type_of(id) : MT_ID_NONE))
		die("id type differs from Jansson's", c);
	if (json_is_string(id) && !same_string(c->id, id))
		die("id string differs from Jansson's", c);
	if (json_is_integer(id) && (!mt_json_int64(c->id, &v) || v != (int64_t)json_integer_value(id)))
		die("id integer differs from Jansson's", c);
	if (c->kind == MT_REQUEST || c->kind == MT_NOTIFICATION) {
		if (!same_string(c->method, json_object_get(root, "method")))
			die("method differs from Jansson's", c);
	} else if (c->method.n) {
		die("a method span on a response", c);
	}
	if (c->kind == MT_ERROR) {
		json_t *code = json_object_get(error, "code");
		if (json_is_integer(code)) {
			if (!c->has_error_code || c->error_code != (int64_t)json_integer_value(code))
				die("error code differs from Jansson's", c);
		} else if (c->has_error_code) {
			die("an error code Jansson does not see as an integer", c);
		}
	} else if (c->has_error_code) {
		die("an error code outside an error", c);
	}

	/* _meta and the progress token. */
	int want_meta = (json_is_object(params) && json_object_get(params, "_meta")) ||
			(json_is_object(result) && json_object_get(result, "_meta"));
	if (!!c->has_meta != want_meta)
		die("has_meta differs from Jansson's", c);
	if (json_is_object(params)) {
		meta = json_object_get(params, "_meta");
		if (json_is_object(meta))
			tok = json_object_get(meta, "progressToken");
		if (!tok && c->kind == MT_NOTIFICATION &&
		    is_str(json_object_get(root, "method"), "notifications/progress"))
			tok = json_object_get(params, "progressToken");
	}
	if (!tok) {
		if (c->token_type != MT_ID_NONE || c->progress_token.n)
			die("a progress token Jansson does not see", c);
	} else {
		enum mt_idtype want = json_is_number(tok) ? MT_ID_NUMBER : MT_ID_STRING;
		if (c->token_type != want || !c->progress_token.n)
			die("progress token type differs from Jansson's", c);
		if (json_is_string(tok) && !same_string(c->progress_token, tok))
			die("progress token differs from Jansson's", c);
	}
}

/*
 * Jansson (2.14) skips one NUL byte that directly follows a number or a
 * literal ("[1\0]" loads), where RFC 8259 allows none. When the input has such
 * a NUL, Jansson's acceptance means: the input without those NULs is JSON.
 * Returns 1 when that explains the disagreement (mt_classify accepts the
 * stripped input), 0 otherwise.
 */
static int jansson_nul_quirk(const uint8_t *data, size_t size)
{
	struct mt_class c2;
	char *copy = malloc(size ? size : 1);
	size_t n = 0;
	int stripped = 0, ok;

	for (size_t i = 0; i < size; i++) {
		if (data[i] == 0 && i > 0 &&
		    ((data[i - 1] >= '0' && data[i - 1] <= '9') ||
		     (data[i - 1] >= 'a' && data[i - 1] <= 'z'))) {
			stripped = 1;
			continue;
		}
		copy[n++] = (char)data[i];
	}
	ok = stripped && mt_classify(copy, n, &c2) != MT_INVALID;
	free(copy);
	return ok;
}

static int same_span(struct mt_span a, struct mt_span b)
{
	return a.p == b.p && a.n == b.n;
}

/* Field by field (spans by address: both scanned the same bytes). */
static int same_class(const struct mt_class *a, const struct mt_class *b)
{
	return a->kind == b->kind && a->idtype == b->idtype && same_span(a->id, b->id) &&
	       same_span(a->method, b->method) && a->has_error_code == b->has_error_code &&
	       (!a->has_error_code || a->error_code == b->error_code) && a->token_type == b->token_type &&
	       same_span(a->progress_token, b->progress_token) && a->has_meta == b->has_meta &&
	       a->meta_anywhere == b->meta_anywhere && same_span(a->params, b->params) &&
	       same_span(a->result, b->result) && a->batch_size == b->batch_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_class c;
	json_error_t jerr;
	json_t *root;
	enum mt_kind k;
	int either_error;

	cur = data;
	cur_size = size;
	k = mt_classify((const char *)data, size, &c);
	if (k != c.kind || (unsigned)k >= MT_KIND_COUNT)
		die("kind out of range", &c);
	check_span(c.id, &c, "id");
	check_span(c.method, &c, "method");
	check_span(c.progress_token, &c, "progress token");
	if (k == MT_INVALID) {
		if (!c.error || c.error_offset > size)
			die("invalid without a reason or with an offset past the end", &c);
		if (c.idtype != MT_ID_NONE || c.method.n || c.batch_size)
			die("invalid with fields", &c);
	}
	if ((k == MT_BATCH) != (c.batch_size > 0))
		die("batch size without a batch", &c);
	/* On what is JSON, the trusted scan (used on stored messages) must say the same. */
	if (k != MT_INVALID) {
		struct mt_class t;
		mt_classify_trusted((const char *)data, size, &t);
		if (!same_class(&c, &t))
			die("mt_classify_trusted disagrees with mt_classify", &t);
	}
	/* (A message that is not JSON-RPC may keep the span of a non-string method.) */
	if ((k == MT_REQUEST || k == MT_NOTIFICATION) &&
	    (c.method.n < 2 || c.method.p[0] != '"' || c.method.p[c.method.n - 1] != '"'))
		die("method span is not a string token", &c);

	root = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (k == MT_INVALID) {
		if (root) {
			json_decref(root);
			if (!jansson_nul_quirk(data, size))
				die("mt_classify says invalid, Jansson loads it", &c);
		}
		return 0;
	}
	if (!root) {
		enum json_error_code code = json_error_code(&jerr);
		/* Jansson's own limits, not JSON's. */
		if (code == json_error_numeric_overflow || code == json_error_stack_overflow ||
		    code == json_error_null_byte_in_key)
			return 0;
		fprintf(stderr, "jansson: %s (line %d, column %d, position %d)\n", jerr.text, jerr.line,
			jerr.column, jerr.position);
		die("mt_classify says JSON, Jansson refuses it", &c);
	}
	enum mt_kind want = expected_kind(root, &either_error);
	if (k != want && !(either_error && k == MT_NOTJSONRPC)) {
		json_decref(root);
		die("kind differs from what Jansson's tree says", &c);
	}
	check_fields(root, &c);

	/* mt_json_member on the top-level object agrees with Jansson for a few keys. */
	if (json_is_object(root)) {
		static const char *const keys[] = {"jsonrpc", "id", "method", "params", "x", ""};
		struct mt_span all = {(const char *)data, size}, val;
		while (all.n && (*all.p == ' ' || *all.p == '\t' || *all.p == '\r' || *all.p == '\n'))
			all.p++, all.n--;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			int r = mt_json_member(all, keys[i], &val);
			if (r != (json_object_get(root, keys[i]) != NULL))
				die("mt_json_member differs from Jansson's object", &c);
			if (r == 1)
				check_span(val, &c, "member");
		}
	}
	json_decref(root);
	return 0;
}
