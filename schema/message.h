/*
 * message.h - the message model: what one captured frame is, and the
 * classifier that turns raw bytes into a kind, an id with its type, a method
 * and the other columns every later step needs (DESIGN.md "Parse once").
 *
 * The classifier is a validating JSON scanner: bytes in, a struct out, no
 * allocation on the common path and no I/O. It accepts exactly RFC 8259 JSON
 * in UTF-8 (surrounding whitespace allowed, so a trailing "\r\n" is fine);
 * anything else is MT_INVALID. It never builds a tree: fields are returned as
 * spans into the caller's bytes.
 */
#ifndef MCPTAP_MESSAGE_H
#define MCPTAP_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "schema/util.h"

enum mt_kind {
	MT_REQUEST,      /* method and id */
	MT_NOTIFICATION, /* method, no id */
	MT_RESPONSE,     /* result and id */
	MT_ERROR,        /* error object (id may be null) */
	MT_BATCH,        /* a non-empty JSON array */
	MT_INVALID,      /* not JSON at all */
	MT_NOTJSONRPC,   /* JSON, but not a JSON-RPC 2.0 message */
	MT_KIND_COUNT
};

enum mt_idtype {
	MT_ID_NONE,   /* no "id" member */
	MT_ID_NUMBER, /* a JSON number */
	MT_ID_STRING, /* a JSON string */
	MT_ID_NULL,   /* "id": null */
};

/* A span of the caller's bytes (borrowed; valid as long as they are). */
struct mt_span {
	const char *p;
	size_t n;
};

struct mt_class {
	enum mt_kind kind;
	enum mt_idtype idtype;
	struct mt_span id;     /* the id's JSON token (strings keep their quotes) */
	struct mt_span method; /* the method's JSON string token, quotes included */
	int has_error_code;
	int64_t error_code;        /* error.code when it is an integer */
	enum mt_idtype token_type; /* progress token: MT_ID_NONE when absent */
	struct mt_span progress_token;
	int has_meta;          /* params._meta or result._meta present */
	int meta_anywhere;     /* a "_meta" member at any depth */
	struct mt_span params; /* the top-level params / result values, when present */
	struct mt_span result;
	size_t batch_size;   /* MT_BATCH: number of elements */
	size_t max_depth;    /* JSON: the deepest nesting of objects and arrays */
	int maybe_beyond;    /* JSON: a number of 19 characters or more, or with an
			      * exponent, or a member name holding \u0000: what a
			      * JSON parser may not read (an integer beyond int64, a
			      * number beyond a double, a NUL in a key) */
	size_t error_offset; /* MT_INVALID: byte offset of the first error */
	const char *error;   /* MT_INVALID / MT_NOTJSONRPC: why (static text) */
};

/*
 * Classify len bytes (one frame, newline included or not). Fills *out and
 * returns its kind. Never fails: malformed input is a kind, not an error.
 * Nesting depth is bounded only by the input's length.
 */
enum mt_kind mt_classify(const char *buf, size_t len, struct mt_class *out);

/*
 * The same for bytes already classified as JSON (read back from a capture):
 * the insides of strings are not validated again (UTF-8, escapes), which is
 * most of the work. On any other input it is memory-safe, and its answer is
 * what mt_classify would say or a plausible kind.
 */
enum mt_kind mt_classify_trusted(const char *buf, size_t len, struct mt_class *out);

/* The kind's name as stored: "request", "notification", ... */
const char *mt_kind_name(enum mt_kind kind);
/* The id type's name as stored: "number", "string", "null"; NULL for none. */
const char *mt_idtype_name(enum mt_idtype t);

/*
 * Decode a JSON string token (quotes included, already validated by
 * mt_classify) into out as UTF-8. Returns 0, or -1 when the span is not a
 * string token. A \u0000 escape decodes to a NUL byte inside out.
 */
int mt_json_string(struct mt_span tok, struct mt_buf *out);
/*
 * Append JSON text (p, n bytes; valid JSON) to out with the whitespace
 * between its tokens left out: every token is copied as it is (numbers,
 * string escapes, key order), never parsed and written again. MT_WS_LINES
 * leaves out only line breaks (the text fits on one line, its spaces kept);
 * MT_WS_ALL every space, tab and line break outside strings.
 */
enum mt_ws { MT_WS_LINES, MT_WS_ALL };
void mt_json_compact(const char *p, size_t n, enum mt_ws ws, struct mt_buf *out);
/*
 * Append valid JSON text to out indented for a person (two spaces a level, a
 * member or element a line; {} and [] kept whole), its tokens copied as they
 * are: numbers, escapes and key order unchanged.
 */
void mt_json_pretty(const char *p, size_t n, struct mt_buf *out);
/*
 * The key that pairs an answer with its request: side (the requester's:
 * 'c' or 's'), the id's type, then its value (a string's decoded bytes, a
 * number's token). Into out, reset first; c has an id that is not null.
 */
void mt_id_key(const struct mt_class *c, char side, struct mt_buf *out);

/*
 * Find member key of the JSON object token obj (already validated) and return
 * its value's span in *val. Returns 1 when found (the last one, when the key
 * repeats), 0 when not, -1 when obj is not an object.
 */
int mt_json_member(struct mt_span obj, const char *key, struct mt_span *val);

/*
 * Walk the members of a validated JSON object token: start with *pos = 0;
 * each call returns 1 with the next member's key token (quotes included) and
 * value span, or 0 at the end (and -1 when obj is not an object).
 */
int mt_json_next_member(struct mt_span obj, size_t *pos, struct mt_span *key, struct mt_span *val);
/* The same for the elements of a validated JSON array token. */
int mt_json_next_element(struct mt_span arr, size_t *pos, struct mt_span *el);

/*
 * What a request calls is named by one of its params: "name" for tools/call
 * and prompts/get, "uri" for resources/read. That member's name for method,
 * or NULL for other methods.
 */
const char *mt_subject_key(const char *method);
/*
 * The tool, prompt or resource a classified request of this method names,
 * decoded into out (reset first). 0, or -1 when it names none (another
 * method, or no such string member).
 */
int mt_request_subject(const struct mt_class *c, const char *method, struct mt_buf *out);

/* The offset of the first byte of s that is not valid UTF-8, or -1 when all is. */
long mt_utf8_invalid(const char *s, size_t n);
/* s as UTF-8 text in out (reset first), each invalid byte replaced by U+FFFD. */
void mt_utf8_lossy(const char *s, size_t n, struct mt_buf *out);
/*
 * Append n bytes of s to b as text safe to show on a terminal: what a terminal
 * would act on is made visible instead. C0 controls and DEL become \t, \n, \r
 * or \xNN; C1 controls (U+0080..U+009F) and the bidirectional overrides
 * (U+202A..U+202E, U+2066..U+2069) become \uNNNN; a byte that is not UTF-8
 * becomes \xNN. Everything else, non-ASCII text included, passes as it is.
 */
void mt_printable_append(struct mt_buf *b, const char *s, size_t n);
/* The same for a NUL-terminated string (NULL: nothing), into scratch (reset
 * first); returns scratch's text, valid until scratch changes. */
const char *mt_printable(struct mt_buf *scratch, const char *s);

/* Is the validated token a JSON integer that fits in int64? Stores it in *v. */
int mt_json_int64(struct mt_span tok, int64_t *v);

#endif
