/*
 * jsonschema.h - a small, bounded JSON Schema validator: does a JSON value
 * meet a schema, and if not, where and why? The rules use it on a tool's
 * structuredContent against its outputSchema (RES-006) and on accepted
 * elicitation content against its requestedSchema (RES-018).
 *
 * Checked: type, enum, const, required, properties, additionalProperties,
 * minProperties, maxProperties, propertyNames, dependentRequired, items
 * (schema or draft-07 tuple), prefixItems, additionalItems, minItems,
 * maxItems, uniqueItems, contains/minContains/maxContains, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum (draft-04 booleans and 2020-12 numbers),
 * multipleOf, minLength, maxLength (in characters), allOf, anyOf, oneOf, not,
 * if/then/else, boolean schemas and local $ref ("#", "#/$defs/x").
 * Annotations (title, description, format, default, ...) are ignored, as the
 * 2020-12 default says. pattern, patternProperties, dependentSchemas,
 * dependencies, unevaluatedProperties, unevaluatedItems, $dynamicRef,
 * $recursiveRef and non-local $ref are skipped and noted (jsv.skipped). What
 * the validator cannot use is not judged: an unknown type name, a keyword of
 * the wrong type, a subschema that is neither an object nor a boolean (it
 * counts as true, so "not": 5 matches no value). A string that holds the
 * tap's redaction marker (schema/redact.h) has a known type but an unknown
 * value: only its type is checked.
 *
 * Work is bounded: past JSV_DEPTH levels or JSV_STEPS steps the check stops
 * (jsv.stopped) and what was not checked counts as valid.
 *
 * Prefix: jsv_ (JSON Schema validator).
 */
#ifndef MCPTAP_JSONSCHEMA_H
#define MCPTAP_JSONSCHEMA_H

#include <jansson.h>
#include <stddef.h>

#define JSV_DEPTH 32    /* schema levels followed (subschemas, $ref) */
#define JSV_STEPS 20000 /* subschemas checked, and item pairs compared for uniqueItems */
#define JSV_SKIPS 8     /* distinct skipped keywords kept */

/* One validation or scan: its outcome, and the validator's scratch. Needs no
 * release; the pointers it holds are borrowed from the schema, or static. */
struct jsv {
	json_t *root; /* the whole schema, for local $ref (borrowed) */
	unsigned steps;
	int mute;       /* > 0 while trying anyOf/oneOf/not/if branches */
	int stopped;    /* a limit was hit: the rest was not checked */
	char path[160]; /* JSON pointer of the value being checked */
	size_t plen;
	char err[320];                  /* the first failure: "path: reason" ("(top)" for the
					 * value itself) */
	const char *skipped[JSV_SKIPS]; /* keywords met and not checked (static text) */
	size_t nskipped;
};

/*
 * Does x meet schema (both borrowed)? 1 yes, or a limit was hit first
 * (v->stopped); 0 no, with the first failure in v->err. v is reset first; the
 * keywords met and not checked are in v->skipped.
 */
int jsv_validate(struct jsv *v, json_t *schema, json_t *x);

/* Note in v (reset first) the keywords a schema uses that jsv_validate would
 * skip, walking all its subschemas (within the same limits). */
void jsv_scan(struct jsv *v, json_t *schema);

/* v's skipped keywords as one line, "pattern, $ref (not local)", into out
 * (n bytes, cut to fit; "" when none). */
void jsv_skipped_text(const struct jsv *v, char *out, size_t n);

/* Are a and b equal as JSON Schema compares them (numbers by value: 1 equals
 * 1.0; objects whatever their member order)? Values nested deeper than 2048
 * levels compare unequal; so does NULL. */
int jsv_equal(json_t *a, json_t *b);

/* What a JSON value is, for a message: "an object", "a string", ...; "nothing" for NULL. */
const char *jsv_type_name(json_t *v);

#endif
