/*
 * message.c - the JSON-RPC classifier: one validating pass over a frame that
 * remembers where the top-level members are, then targeted look-ups inside
 * the few members that matter (error.code, params._meta.progressToken).
 */
#include "schema/message.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum topkey { K_OTHER, K_JSONRPC, K_ID, K_METHOD, K_RESULT, K_ERROR, K_PARAMS, K_COUNT };

static const char *const kind_names[MT_KIND_COUNT] = {
	"request", "notification", "response", "error", "batch", "invalid", "notjsonrpc",
};

const char *mt_kind_name(enum mt_kind kind)
{
	return (unsigned)kind < MT_KIND_COUNT ? kind_names[kind] : "?";
}

const char *mt_idtype_name(enum mt_idtype t)
{
	switch (t) {
	case MT_ID_NUMBER: return "number";
	case MT_ID_STRING: return "string";
	case MT_ID_NULL: return "null";
	default: return NULL;
	}
}

static int is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
	while (p < end && is_ws(*p))
		p++;
	return p;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at p (p + 4 <= end checked by the caller); -1 when not hex. */
static long hex4(const unsigned char *p)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/*
 * The length of the valid UTF-8 multibyte sequence at p (its first byte is
 * 0x80 or more), or 0 when it is not one: overlongs, surrogates and code
 * points above U+10FFFF are not.
 */
static size_t utf8_seq(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0], lo = 0x80, hi = 0xBF;
	size_t more;

	if (c >= 0xC2 && c <= 0xDF)
		more = 1;
	else if (c == 0xE0)
		more = 2, lo = 0xA0;
	else if (c == 0xED)
		more = 2, hi = 0x9F;
	else if (c >= 0xE1 && c <= 0xEF)
		more = 2;
	else if (c == 0xF0)
		more = 3, lo = 0x90;
	else if (c >= 0xF1 && c <= 0xF3)
		more = 3;
	else if (c == 0xF4)
		more = 3, hi = 0x8F;
	else
		return 0;
	if (avail <= more || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i <= more; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return more + 1;
}

long mt_utf8_invalid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, seq;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (!(seq = utf8_seq(p + i, n - i)))
			return (long)i;
		i += seq;
	}
	return -1;
}

void mt_utf8_lossy(const char *s, size_t n, struct mt_buf *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	mt_buf_reset(out);
	while (i < n) {
		size_t seq = p[i] < 0x80 ? 1 : utf8_seq(p + i, n - i);
		if (seq) {
			mt_buf_append(out, p + i, seq);
			i += seq;
		} else {
			mt_buf_puts(out, "\xEF\xBF\xBD");
			i++;
		}
	}
}

const char *mt_subject_key(const char *method)
{
	if (!method)
		return NULL;
	if (!strcmp(method, "tools/call") || !strcmp(method, "prompts/get"))
		return "name";
	return !strcmp(method, "resources/read") ? "uri" : NULL;
}

int mt_request_subject(const struct mt_class *c, const char *method, struct mt_buf *out)
{
	const char *key = mt_subject_key(method);
	struct mt_span v;

	mt_buf_reset(out);
	if (!key || c->kind != MT_REQUEST || !c->params.p || mt_json_member(c->params, key, &v) != 1 ||
	    !v.n || v.p[0] != '"')
		return -1;
	return mt_json_string(v, out);
}

void mt_printable_append(struct mt_buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t start = i;
		/* The longest run that needs nothing done. */
		while (i < n && p[i] >= 0x20 && p[i] < 0x7F)
			i++;
		mt_buf_append(b, p + start, i - start);
		if (i == n)
			break;
		if (p[i] < 0x80) {
			if (p[i] == '\t')
				mt_buf_puts(b, "\\t");
			else if (p[i] == '\n')
				mt_buf_puts(b, "\\n");
			else if (p[i] == '\r')
				mt_buf_puts(b, "\\r");
			else
				mt_buf_printf(b, "\\x%02X", p[i]);
			i++;
			continue;
		}
		size_t seq = utf8_seq(p + i, n - i);
		if (!seq) {
			mt_buf_printf(b, "\\x%02X", p[i]);
			i++;
			continue;
		}
		unsigned cp =
			seq == 2   ? ((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu)
			: seq == 3 ? ((p[i] & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu)
				   : 0x10000;
		if ((cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
		    (cp >= 0x2066 && cp <= 0x2069))
			mt_buf_printf(b, "\\u%04X", cp);
		else
			mt_buf_append(b, p + i, seq);
		i += seq;
	}
}

const char *mt_printable(struct mt_buf *scratch, const char *s)
{
	mt_buf_reset(scratch);
	mt_buf_putc(scratch, '\0'); /* data is never NULL */
	mt_buf_reset(scratch);
	if (s)
		mt_printable_append(scratch, s, strlen(s));
	return scratch->data;
}

/*
 * Validate a string starting at the opening quote. Returns the byte after the
 * closing quote, or NULL with *why set. *escaped is set when it holds a '\'.
 */
static const unsigned char *scan_string(const unsigned char *p, const unsigned char *end, const char **why,
					int *escaped)
{
	p++; /* the opening quote */
	for (;;) {
		/* The common case: plain printable ASCII. */
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		if (p >= end) {
			*why = "unterminated string";
			return NULL;
		}
		unsigned char c = *p;
		if (c == '"')
			return p + 1;
		if (c < 0x20) {
			*why = "control character in string";
			return NULL;
		}
		if (c == '\\') {
			*escaped = 1;
			if (p + 1 >= end) {
				*why = "unterminated string";
				return NULL;
			}
			c = p[1];
			if (c == 'u') {
				if (end - p < 6 || hex4(p + 2) < 0) {
					*why = "bad \\u escape";
					return NULL;
				}
				long u = hex4(p + 2);
				p += 6;
				if (u >= 0xDC00 && u <= 0xDFFF) {
					*why = "lone low surrogate in \\u escape";
					return NULL;
				}
				if (u >= 0xD800 && u <= 0xDBFF) {
					long lo = (end - p >= 6 && p[0] == '\\' && p[1] == 'u') ? hex4(p + 2)
												: -1;
					if (lo < 0xDC00 || lo > 0xDFFF) {
						*why = "lone high surrogate in \\u escape";
						return NULL;
					}
					p += 6;
				}
				continue;
			}
			if (!strchr("\"\\/bfnrt", c) || c == '\0') {
				*why = "bad escape in string";
				return NULL;
			}
			p += 2;
			continue;
		}
		/* UTF-8: one multibyte sequence (no overlongs, surrogates, > U+10FFFF). */
		size_t seq = utf8_seq(p, (size_t)(end - p));
		if (!seq) {
			*why = "invalid UTF-8";
			return NULL;
		}
		p += seq;
	}
}

static const unsigned char *scan_digits(const unsigned char *p, const unsigned char *end)
{
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p;
}

static const unsigned char *scan_number(const unsigned char *p, const unsigned char *end, const char **why)
{
	const unsigned char *q;

	if (p < end && *p == '-')
		p++;
	if (p >= end) {
		*why = "bad number";
		return NULL;
	}
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p = scan_digits(p, end);
	else {
		*why = "bad number";
		return NULL;
	}
	if (p < end && *p == '.') {
		q = scan_digits(p + 1, end);
		if (q == p + 1) {
			*why = "bad number";
			return NULL;
		}
		p = q;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		q = scan_digits(p, end);
		if (q == p) {
			*why = "bad number";
			return NULL;
		}
		p = q;
	}
	return p;
}

static const unsigned char *scan_literal(const unsigned char *p, const unsigned char *end, const char **why)
{
	static const char *const lits[] = {"true", "false", "null"};

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(lits[i]);
		if ((size_t)(end - p) >= n && memcmp(p, lits[i], n) == 0)
			return p + n;
	}
	*why = "unexpected character";
	return NULL;
}

/* Does the string token (quotes included) equal the C string s? */
static int string_eq(struct mt_span tok, const char *s, int escaped)
{
	size_t n = strlen(s);

	if (!escaped)
		return tok.n == n + 2 && memcmp(tok.p + 1, s, n) == 0;
	struct mt_buf b = MT_BUF_INIT;
	int eq = mt_json_string(tok, &b) == 0 && b.len == n && memcmp(b.data, s, n) == 0;
	mt_buf_release(&b);
	return eq;
}

static enum topkey which_key(struct mt_span tok, int escaped)
{
	static const char *const names[K_COUNT] = {
		NULL, "jsonrpc", "id", "method", "result", "error", "params",
	};

	if (escaped) {
		for (int k = 1; k < K_COUNT; k++)
			if (string_eq(tok, names[k], 1))
				return (enum topkey)k;
		return K_OTHER;
	}
	/* Unescaped: the token's length picks the candidates (quotes included). */
	switch (tok.n) {
	case 4: return memcmp(tok.p, "\"id\"", 4) == 0 ? K_ID : K_OTHER;
	case 7: return memcmp(tok.p, "\"error\"", 7) == 0 ? K_ERROR : K_OTHER;
	case 8:
		if (memcmp(tok.p, "\"method\"", 8) == 0)
			return K_METHOD;
		if (memcmp(tok.p, "\"result\"", 8) == 0)
			return K_RESULT;
		return memcmp(tok.p, "\"params\"", 8) == 0 ? K_PARAMS : K_OTHER;
	case 9: return memcmp(tok.p, "\"jsonrpc\"", 9) == 0 ? K_JSONRPC : K_OTHER;
	default: return K_OTHER;
	}
}

struct scan {
	int trusted;                 /* strings were validated before: skip them fast */
	int meta_anywhere;           /* a "_meta" key at any depth */
	struct mt_span top[K_COUNT]; /* top-level object members of interest */
	int top_escaped[K_COUNT];    /* the value (a string) held an escape */
	size_t top_elems;            /* top-level array elements */
	unsigned char top_type;      /* '{', '[', or the first byte of a scalar */
	size_t max_depth;            /* the deepest nesting */
	int odd_number;              /* an integer of 19 digits or more, a big exponent */
	int nul_key;                 /* a member name holds \u0000 */
};

/*
 * Validate buf; on success fill sc and return NULL, else return the reason and
 * set *off to the offset of the error.
 */
static const char *skip_string(const char *p, const char *end);

/* A string known to be valid: its end by memchr, and, when escaped is not
 * NULL, whether it has escapes. */
static const unsigned char *skip_trusted(const unsigned char *p, const unsigned char *end, int *escaped)
{
	const unsigned char *q = (const unsigned char *)skip_string((const char *)p, (const char *)end);

	if (escaped && q - p > 2 && memchr(p + 1, '\\', (size_t)(q - p - 2)))
		*escaped = 1;
	return q;
}

static const char *validate(const char *buf, size_t len, struct scan *sc, size_t *off)
{
	const unsigned char *start = (const unsigned char *)buf;
	const unsigned char *end = start + len, *p, *vstart = NULL, *at = start;
	unsigned char small[256], *stack = small;
	size_t depth = 0, cap = sizeof(small);
	const char *why = NULL;
	enum topkey vkey = K_OTHER;
	int escaped = 0;

	p = skip_ws(start, end);
	if (p == end) {
		why = "empty";
		goto out;
	}
	sc->top_type = *p;
value:
	if (p >= end) {
		why = "unexpected end";
		goto out;
	}
	if (depth == 1)
		vstart = p;
	at = p; /* where a token that fails to scan began */
	escaped = 0;
	switch (*p) {
	case '{':
	case '[':
		if (depth == cap) {
			unsigned char *bigger = mt_malloc(cap * 2);
			memcpy(bigger, stack, depth);
			if (stack != small)
				free(stack);
			stack = bigger;
			cap *= 2;
		}
		stack[depth++] = *p;
		if (depth > sc->max_depth)
			sc->max_depth = depth;
		p = skip_ws(p + 1, end);
		if (p < end && (*p == '}' || *p == ']') && *p == (stack[depth - 1] == '{' ? '}' : ']')) {
			depth--;
			p++;
			goto after;
		}
		if (stack[depth - 1] == '{')
			goto key;
		goto value;
	case '"':
		/* (Whether a nested value string has escapes matters to no one.) */
		p = sc->trusted ? skip_trusted(p, end, depth > 1 ? NULL : &escaped)
				: scan_string(p, end, &why, &escaped);
		break;
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9': {
		const unsigned char *n0 = p;
		p = scan_number(p, end, &why);
		/* (Only a long number can be beyond a parser's int64 or double.) */
		size_t nlen = p ? (size_t)(p - n0) : 0;
		if (nlen >= 19 || (nlen >= 4 && (memchr(n0, 'e', nlen) || memchr(n0, 'E', nlen))))
			sc->odd_number = 1;
		break;
	}
	default: p = scan_literal(p, end, &why); break;
	}
	if (!p)
		goto out;
after:
	if (depth == 1) {
		if (stack[0] == '{') {
			if (vkey != K_OTHER) {
				sc->top[vkey].p = (const char *)vstart;
				sc->top[vkey].n = (size_t)(p - vstart);
				sc->top_escaped[vkey] = escaped;
			}
		} else {
			sc->top_elems++;
		}
	}
	p = skip_ws(p, end);
	if (depth == 0) {
		if (p != end)
			why = "trailing data after the JSON value";
		goto out;
	}
	if (p >= end) {
		why = "unexpected end";
		goto out;
	}
	if (*p == ',') {
		p = skip_ws(p + 1, end);
		if (stack[depth - 1] == '{')
			goto key;
		goto value;
	}
	if (*p == (stack[depth - 1] == '{' ? '}' : ']')) {
		depth--;
		p++;
		escaped = 0;
		goto after;
	}
	why = stack[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'";
	goto out;
key:
	if (p >= end || *p != '"') {
		why = "expected a member name";
		goto out;
	}
	{
		const unsigned char *k = p;
		int kesc = 0;
		at = p;
		p = sc->trusted ? skip_trusted(p, end, &kesc) : scan_string(p, end, &why, &kesc);
		if (!p)
			goto out;
		if (depth == 1) {
			struct mt_span tok = {(const char *)k, (size_t)(p - k)};
			vkey = which_key(tok, kesc);
		}
		/* (An escaped name might spell it: count it in, to be safe.) */
		if (kesc || (p - k == 7 && !memcmp(k, "\"_meta\"", 7)))
			sc->meta_anywhere = 1;
		if (kesc && memmem(k, (size_t)(p - k), "\\u0000", 6))
			sc->nul_key = 1;
	}
	p = skip_ws(p, end);
	if (p >= end || *p != ':') {
		why = "expected ':'";
		goto out;
	}
	p = skip_ws(p + 1, end);
	goto value;
out:
	if (stack != small)
		free(stack);
	if (why)
		*off = (size_t)((p ? p : at) - start);
	return why;
}

/* Bytes that end a number or a literal. */
static const unsigned char scalar_end[256] = {
	[','] = 1, [':'] = 1, [']'] = 1, ['}'] = 1, [' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\n'] = 1,
};

/* Skip a validated string at p (its opening quote); returns the byte after it. */
static const char *skip_string(const char *p, const char *end)
{
	const char *start = ++p;

	while (p < end) {
		/* Most strings are short: look at a few bytes before paying for a call. */
		const char *q = p, *lim = end - p > 24 ? p + 24 : end;
		size_t backslashes = 0;
		while (q < lim && *q != '"')
			q++;
		if (q == lim) {
			q = lim < end ? memchr(lim, '"', (size_t)(end - lim)) : NULL;
			if (!q)
				return end;
		}
		while (q - backslashes > start && q[-1 - (ptrdiff_t)backslashes] == '\\')
			backslashes++;
		p = q + 1;
		if (backslashes % 2 == 0)
			return p;
	}
	return end;
}

/* Skip one validated value at p; returns the byte after it. */
static const char *skip_value(const char *p, const char *end)
{
	size_t depth = 0;

	do {
		if (p >= end)
			return end;
		switch (*p) {
		case '"': p = skip_string(p, end); break;
		case '{':
		case '[':
			depth++;
			p++;
			break;
		case '}':
		case ']':
			depth--;
			p++;
			break;
		case ',':
		case ':':
		case ' ':
		case '\t':
		case '\r':
		case '\n': p++; break;
		default:
			while (p < end && !scalar_end[(unsigned char)*p])
				p++;
			break;
		}
	} while (depth > 0);
	return p;
}

static const char *skip_ws_c(const char *p, const char *end)
{
	return (const char *)skip_ws((const unsigned char *)p, (const unsigned char *)end);
}

void mt_id_key(const struct mt_class *c, char side, struct mt_buf *out)
{
	mt_buf_reset(out);
	mt_buf_putc(out, side);
	mt_buf_putc(out, (char)('0' + c->idtype));
	if (c->idtype == MT_ID_STRING && memchr(c->id.p, '\\', c->id.n)) {
		struct mt_buf v = MT_BUF_INIT;
		if (mt_json_string(c->id, &v) == 0 && v.len)
			mt_buf_append(out, v.data, v.len);
		mt_buf_release(&v);
	} else if (c->idtype == MT_ID_STRING) {
		/* The same bytes as the decoded value: the token without its quotes. */
		mt_buf_append(out, c->id.p + 1, c->id.n - 2);
	} else {
		mt_buf_append(out, c->id.p, c->id.n);
	}
}

int mt_json_member(struct mt_span obj, const char *key, struct mt_span *val)
{
	const char *p = obj.p, *end;
	int found = 0;

	if (!p || obj.n == 0 || *p != '{')
		return -1;
	end = obj.p + obj.n;
	p = skip_ws_c(p + 1, end);
	while (p < end && *p == '"') {
		const char *k = p;
		int esc = 0;
		p++;
		while (p < end && *p != '"') {
			if (*p == '\\')
				esc = 1, p++;
			p++;
		}
		p++;
		struct mt_span ktok = {k, (size_t)(p - k)};
		int match = string_eq(ktok, key, esc);
		p = skip_ws_c(p, end);
		p = skip_ws_c(p + 1, end); /* the ':' */
		const char *v = p;
		p = skip_value(p, end);
		if (match) {
			val->p = v;
			val->n = (size_t)(p - v);
			found = 1;
		}
		p = skip_ws_c(p, end);
		if (p < end && *p == ',')
			p = skip_ws_c(p + 1, end);
	}
	return found;
}

int mt_json_next_member(struct mt_span obj, size_t *pos, struct mt_span *key, struct mt_span *val)
{
	const char *p, *end;

	if (!obj.p || obj.n == 0 || obj.p[0] != '{')
		return -1;
	end = obj.p + obj.n;
	p = obj.p + (*pos ? *pos : 1);
	p = skip_ws_c(p, end);
	if (p < end && *p == ',')
		p = skip_ws_c(p + 1, end);
	if (p >= end || *p != '"')
		return 0;
	key->p = p;
	p = skip_value(p, end);
	key->n = (size_t)(p - key->p);
	p = skip_ws_c(p, end);
	p = skip_ws_c(p + 1, end); /* the ':' */
	val->p = p;
	p = skip_value(p, end);
	val->n = (size_t)(p - val->p);
	*pos = (size_t)(p - obj.p);
	return 1;
}

int mt_json_next_element(struct mt_span arr, size_t *pos, struct mt_span *el)
{
	const char *p, *end;

	if (!arr.p || arr.n == 0 || arr.p[0] != '[')
		return -1;
	end = arr.p + arr.n;
	p = arr.p + (*pos ? *pos : 1);
	p = skip_ws_c(p, end);
	if (p < end && *p == ',')
		p = skip_ws_c(p + 1, end);
	if (p >= end || *p == ']')
		return 0;
	el->p = p;
	p = skip_value(p, end);
	el->n = (size_t)(p - el->p);
	*pos = (size_t)(p - arr.p);
	return 1;
}

int mt_json_int64(struct mt_span tok, int64_t *v)
{
	int64_t acc = 0;
	size_t i = 0;
	int neg = 0;

	if (tok.n == 0)
		return 0;
	if (tok.p[0] == '-')
		neg = 1, i = 1;
	if (i >= tok.n)
		return 0;
	for (; i < tok.n; i++) {
		char c = tok.p[i];
		if (c < '0' || c > '9')
			return 0;
		int d = c - '0';
		if (acc > (INT64_MAX - d) / 10) {
			/* INT64_MIN has one more digit of room. */
			if (neg && acc == INT64_MAX / 10 + 0 && d == 8 && i + 1 == tok.n) {
				*v = INT64_MIN;
				return 1;
			}
			return 0;
		}
		acc = acc * 10 + d;
	}
	*v = neg ? -acc : acc;
	return 1;
}

static void put_utf8(struct mt_buf *out, unsigned long u)
{
	char b[4];
	size_t n;

	if (u < 0x80) {
		b[0] = (char)u;
		n = 1;
	} else if (u < 0x800) {
		b[0] = (char)(0xC0 | (u >> 6));
		b[1] = (char)(0x80 | (u & 0x3F));
		n = 2;
	} else if (u < 0x10000) {
		b[0] = (char)(0xE0 | (u >> 12));
		b[1] = (char)(0x80 | ((u >> 6) & 0x3F));
		b[2] = (char)(0x80 | (u & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | (u >> 18));
		b[1] = (char)(0x80 | ((u >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((u >> 6) & 0x3F));
		b[3] = (char)(0x80 | (u & 0x3F));
		n = 4;
	}
	mt_buf_append(out, b, n);
}

void mt_json_compact(const char *p, size_t n, enum mt_ws ws, struct mt_buf *out)
{
	size_t run = 0; /* the start of the bytes not appended yet */
	int in_string = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (in_string) {
			if (ch == '\\')
				i++; /* (the escaped byte: a quote does not end the string) */
			else if (ch == '"')
				in_string = 0;
			continue;
		}
		if (ch == '"') {
			in_string = 1;
			continue;
		}
		if (ch == '\n' || ch == '\r' || (ws == MT_WS_ALL && (ch == ' ' || ch == '\t'))) {
			mt_buf_append(out, p + run, i - run);
			run = i + 1;
		}
	}
	if (run < n)
		mt_buf_append(out, p + run, n - run);
}

static void indent(struct mt_buf *out, int depth)
{
	mt_buf_putc(out, '\n');
	for (int k = 0; k < depth; k++)
		mt_buf_puts(out, "  ");
}

void mt_json_pretty(const char *p, size_t n, struct mt_buf *out)
{
	int depth = 0, in_string = 0;
	size_t i = 0;

	while (i < n) {
		char ch = p[i];
		if (in_string) {
			size_t run = i;
			while (i < n && p[i] != '"' && p[i] != '\\')
				i++;
			mt_buf_append(out, p + run, i - run);
			if (i < n && p[i] == '\\') {
				mt_buf_append(out, p + i, i + 1 < n ? 2 : 1);
				i += 2;
			} else if (i < n) {
				mt_buf_putc(out, '"');
				in_string = 0;
				i++;
			}
			continue;
		}
		i++;
		switch (ch) {
		case ' ':
		case '\t':
		case '\n':
		case '\r': break;
		case '"':
			mt_buf_putc(out, '"');
			in_string = 1;
			break;
		case '{':
		case '[': {
			/* An empty one stays on its line: {} and []. */
			size_t j = i;
			while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\n' || p[j] == '\r'))
				j++;
			if (j < n && p[j] == (ch == '{' ? '}' : ']')) {
				mt_buf_putc(out, ch);
				mt_buf_putc(out, p[j]);
				i = j + 1;
				break;
			}
			mt_buf_putc(out, ch);
			indent(out, ++depth);
			break;
		}
		case '}':
		case ']':
			indent(out, depth > 0 ? --depth : 0);
			mt_buf_putc(out, ch);
			break;
		case ',':
			mt_buf_putc(out, ',');
			indent(out, depth);
			break;
		case ':': mt_buf_puts(out, ": "); break;
		default: mt_buf_putc(out, ch);
		}
	}
}

int mt_json_string(struct mt_span tok, struct mt_buf *out)
{
	const char *p, *end;

	if (tok.n < 2 || tok.p[0] != '"' || tok.p[tok.n - 1] != '"')
		return -1;
	p = tok.p + 1;
	end = tok.p + tok.n - 1;
	mt_buf_reset(out);
	while (p < end) {
		const char *q = p;
		while (q < end && *q != '\\')
			q++;
		mt_buf_append(out, p, (size_t)(q - p));
		if (q >= end)
			break;
		p = q + 1;
		if (p >= end)
			return -1;
		char c = *p++;
		switch (c) {
		case 'b': mt_buf_putc(out, '\b'); break;
		case 'f': mt_buf_putc(out, '\f'); break;
		case 'n': mt_buf_putc(out, '\n'); break;
		case 'r': mt_buf_putc(out, '\r'); break;
		case 't': mt_buf_putc(out, '\t'); break;
		case 'u': {
			if (end - p < 4)
				return -1;
			long u = hex4((const unsigned char *)p);
			if (u < 0)
				return -1;
			p += 4;
			if (u >= 0xD800 && u <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
				long lo = hex4((const unsigned char *)p + 2);
				if (lo >= 0xDC00 && lo <= 0xDFFF) {
					u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
					p += 6;
				}
			}
			put_utf8(out, (unsigned long)u);
			break;
		}
		default: mt_buf_putc(out, c); break;
		}
	}
	return 0;
}

static enum mt_idtype token_type(struct mt_span tok)
{
	if (tok.n == 0)
		return MT_ID_NONE;
	if (tok.p[0] == '"')
		return MT_ID_STRING;
	if (tok.p[0] == '-' || (tok.p[0] >= '0' && tok.p[0] <= '9'))
		return MT_ID_NUMBER;
	if (tok.p[0] == 'n')
		return MT_ID_NULL;
	return MT_ID_NONE;
}

static enum mt_kind not_rpc(struct mt_class *out, const char *why)
{
	out->kind = MT_NOTJSONRPC;
	out->error = why;
	return out->kind;
}

/* Fill has_meta and the progress token from params (or result) objects. */
static void look_inside(const struct scan *sc, struct mt_class *out)
{
	struct mt_span params = sc->top[K_PARAMS], result = sc->top[K_RESULT], meta, tok;

	if (params.n && params.p[0] == '{') {
		if (mt_json_member(params, "_meta", &meta) == 1) {
			out->has_meta = 1;
			if (meta.n && meta.p[0] == '{' && mt_json_member(meta, "progressToken", &tok) == 1)
				out->progress_token = tok;
		}
		if (!out->progress_token.n && out->kind == MT_NOTIFICATION &&
		    string_eq(out->method, "notifications/progress", sc->top_escaped[K_METHOD]) &&
		    mt_json_member(params, "progressToken", &tok) == 1)
			out->progress_token = tok;
	}
	if (result.n && result.p[0] == '{' && mt_json_member(result, "_meta", &meta) == 1)
		out->has_meta = 1;
	out->token_type = token_type(out->progress_token);
	if (out->token_type == MT_ID_NULL || (out->progress_token.n && out->token_type == MT_ID_NONE)) {
		/* A token that is neither a string nor a number is kept as its text. */
		out->token_type = MT_ID_STRING;
	}
}

static enum mt_kind classify(const char *buf, size_t len, struct mt_class *out, int trusted)
{
	struct scan sc;
	const char *why;
	size_t off = 0;

	memset(out, 0, sizeof(*out));
	memset(&sc, 0, sizeof(sc));
	sc.trusted = trusted;
	why = validate(buf, len, &sc, &off);
	if (why) {
		out->kind = MT_INVALID;
		out->error = why;
		out->error_offset = off;
		return out->kind;
	}
	out->meta_anywhere = sc.meta_anywhere;
	out->max_depth = sc.max_depth;
	out->maybe_beyond = sc.odd_number || sc.nul_key;
	if (sc.top_type == '{') {
		out->params = sc.top[K_PARAMS];
		out->result = sc.top[K_RESULT];
	}
	if (sc.top_type == '[') {
		out->batch_size = sc.top_elems;
		if (sc.top_elems == 0)
			return not_rpc(out, "empty array");
		out->kind = MT_BATCH;
		return out->kind;
	}
	if (sc.top_type != '{')
		return not_rpc(out, "not an object");
	struct mt_span v = sc.top[K_JSONRPC];
	if (!v.n)
		return not_rpc(out, "no \"jsonrpc\" member");
	if (v.p[0] != '"' || !(sc.top_escaped[K_JSONRPC] ? string_eq(v, "2.0", 1)
							 : v.n == 5 && memcmp(v.p, "\"2.0\"", 5) == 0))
		return not_rpc(out, "\"jsonrpc\" is not \"2.0\"");
	if (sc.top[K_ID].n) {
		out->id = sc.top[K_ID];
		out->idtype = token_type(out->id);
		if (out->idtype == MT_ID_NONE)
			return not_rpc(out, "id is not a string, number or null");
	}
	if (sc.top[K_METHOD].n) {
		out->method = sc.top[K_METHOD];
		if (out->method.p[0] != '"')
			return not_rpc(out, "method is not a string");
		out->kind = out->idtype == MT_ID_NONE ? MT_NOTIFICATION : MT_REQUEST;
	} else if (sc.top[K_RESULT].n && sc.top[K_ERROR].n) {
		return not_rpc(out, "both result and error");
	} else if (sc.top[K_RESULT].n) {
		if (out->idtype == MT_ID_NONE)
			return not_rpc(out, "response without id");
		out->kind = MT_RESPONSE;
	} else if (sc.top[K_ERROR].n) {
		struct mt_span err = sc.top[K_ERROR], code;
		if (err.p[0] != '{')
			return not_rpc(out, "error is not an object");
		if (mt_json_member(err, "code", &code) == 1)
			out->has_error_code = mt_json_int64(code, &out->error_code);
		out->kind = MT_ERROR;
	} else {
		return not_rpc(out, "neither method, result nor error");
	}
	look_inside(&sc, out);
	return out->kind;
}

enum mt_kind mt_classify(const char *buf, size_t len, struct mt_class *out)
{
	return classify(buf, len, out, 0);
}

enum mt_kind mt_classify_trusted(const char *buf, size_t len, struct mt_class *out)
{
	return classify(buf, len, out, 1);
}
