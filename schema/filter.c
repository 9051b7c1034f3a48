/*
 * filter.c - the display filter: a small expression language parsed once
 * (recursive descent) into a tree, and written out as an SQL condition over
 * one row of the message table. See filter.h and FILTERS in mcptap.1.
 *
 *   expr    := and ( ("or" | "||") and )*
 *   and     := unary ( ("and" | "&&") unary )*
 *   unary   := ("not" | "!") unary | "(" expr ")" | field [ op literal ]
 *   op      := == | = | != | < | <= | > | >= | contains | matches | ~
 *              | eq | ne | lt | le | gt | ge
 *   literal := "string" | 'string' | word (a number, a duration, a bare name)
 */
#include <ctype.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/filter.h"
#include "schema/message.h"

/* What a field's values are, which decides the literals it is compared with. */
enum ftype {
	FT_NUM,  /* an integer: session, seq, code, size, status */
	FT_TEXT, /* a string */
	FT_ID,   /* a JSON-RPC id: a number or a string, never equal to each other */
	FT_DUR,  /* nanoseconds; literals need a unit (100ms) */
	FT_TIME, /* since the session's start (a duration), or a date ("2026-11-27 10:00") */
	FT_BOOL, /* 0 or 1 */
};

/*
 * One field: its SQL, where '@' stands for the message row's alias. v4: the
 * SQL needs the columns and tables of a version 4 file (HTTP); without them
 * the field is NULL (or 0 for a flag).
 */
struct field {
	const char *name;
	enum ftype type;
	int v4;
	const char *sql;
	const char *values; /* the values it can take, when they are few (checked) */
	int req;            /* an answer's is its request's (sql is a request's own) */
	const char *gate;   /* sql holds a value only where this holds (NULL: always) */
};

static const struct field fields[] = {
	{"session", FT_NUM, 0, "@.session", NULL, 0, NULL},
	{"seq", FT_NUM, 0, "@.seq", NULL, 0, NULL},
	{"dir", FT_TEXT, 0, "@.dir", "c2s s2c", 0, NULL},
	{"kind", FT_TEXT, 0, "@.kind", "request notification response error batch invalid notjsonrpc", 0,
	 NULL},
	{"channel", FT_TEXT, 0, "@.channel", "stdio body sse", 0, NULL},
	{"method", FT_TEXT, 0, "@.method", NULL, 1, NULL},
	{"tool", FT_TEXT, 0, "mcptap_param(@.raw, 'name')", NULL, 1, "@.method = 'tools/call'"},
	{"prompt", FT_TEXT, 0, "mcptap_param(@.raw, 'name')", NULL, 1, "@.method = 'prompts/get'"},
	{"uri", FT_TEXT, 0, "mcptap_param(@.raw, 'uri')", NULL, 1,
	 "@.method IN ('resources/read', 'resources/subscribe', 'resources/unsubscribe',"
	 " 'notifications/resources/updated')"},
	{"id", FT_ID, 0, "@.id", NULL, 0, NULL},
	{"error", FT_TEXT, 0, "mcptap_error(@.raw, @.kind)", NULL, 0, "@.kind IN ('error', 'response')"},
	{"code", FT_NUM, 0, "@.error_code", NULL, 0, NULL},
	{"duration", FT_DUR, 0,
	 "(CASE WHEN @.kind = 'request' THEN (SELECT min(fr.t_ns) FROM message fr WHERE"
	 " fr.session = @.session AND fr.request_seq = @.seq AND fr.kind IN ('response', 'error'))"
	 " - @.t_ns WHEN @.kind IN ('response', 'error') THEN @.t_ns - (SELECT fq.t_ns FROM message"
	 " fq WHERE fq.session = @.session AND fq.seq = @.request_seq) END)",
	 NULL, 0, NULL},
	{"size", FT_NUM, 0, "@.size", NULL, 0, NULL},
	{"status", FT_NUM, 1,
	 "(SELECT fx.status FROM http_exchange fx WHERE fx.session = @.session AND fx.seq ="
	 " @.exchange)",
	 NULL, 0, NULL},
	{"path", FT_TEXT, 1,
	 "(SELECT CASE WHEN instr(fx.target, '?') > 0 THEN substr(fx.target, 1, instr(fx.target,"
	 " '?') - 1) ELSE fx.target END FROM http_exchange fx WHERE fx.session = @.session AND"
	 " fx.seq = @.exchange)",
	 NULL, 0, NULL},
	{"time", FT_TIME, 0, "@.t_ns", NULL, 0, NULL},
	{"text", FT_TEXT, 0, "CAST(@.raw AS TEXT)", NULL, 0, NULL},
	{"replayed", FT_BOOL, 1, "@.replayed", NULL, 0, NULL},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

enum op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_CONTAINS, OP_MATCHES };

enum node_type { N_OR, N_AND, N_NOT, N_HAS, N_CMP };

struct node {
	enum node_type type;
	struct node *a, *b;    /* N_OR, N_AND (a, b), N_NOT (a) */
	const struct field *f; /* N_HAS, N_CMP */
	enum op op;            /* N_CMP */
	int param;             /* N_CMP: the literal's index */
	int wall;              /* N_CMP on time: the literal is a date (compared with wall) */
	int list;              /* a request-given field's test: its list's index, or -1 */
};

/*
 * What a request-given field's test said of each request of a session read so
 * far. A scan in seq order meets a request before its answers: the request's
 * row notes its verdict, and an answer's row reads it back (mcptap_pair), much
 * cheaper than a lookup of its request in the file. The verdicts are a byte a
 * seq from the first request noted (seqs are dense in a session): SEEN_NONE,
 * SEEN_FAIL or SEEN_PASS. An answer whose request was not noted (a test the
 * SQL did not reach on it, a read that began after it, a seq too far on) looks
 * it up. Kept across a follower's reads of the same session.
 */
enum { SEEN_NONE, SEEN_FAIL, SEEN_PASS };
#define SEEN_SPAN (1ll << 28) /* seqs past the first noted, at most (256 MiB) */
struct seqset {
	unsigned char *v;
	int64_t base;    /* the seq of v[0] */
	size_t cap;      /* 0: nothing noted yet */
	int64_t session; /* whose (0: none yet) */
};

/* A literal of the expression, bound as a parameter of the SQL. */
struct mt_filter_value {
	enum { MT_FV_TEXT, MT_FV_INT, MT_FV_REAL } type;
	const char *text;
	int64_t i;
	double r;
};

struct mt_filter {
	struct node *root;
	struct mt_filter_value *params;
	char **texts; /* the params' strings, owned */
	size_t nparams, cap;
	struct node **lists; /* the nodes with a list, by index */
	struct seqset *sets;
	size_t nlists;
};

/* ---- the lexer ---- */

enum tok { T_END, T_LP, T_RP, T_OP, T_WORD, T_STRING };

struct parser {
	const char *s;
	size_t pos;        /* of the next token */
	enum tok t;        /* the current token */
	size_t start, len; /* its place in s */
	char *str;         /* T_STRING: its value (owned) */
	struct mt_filter *f;
	struct mt_filter_err *e;
	int failed;
	int depth; /* parentheses and nots open */
	int terms;
};

/* (What SQLite's parser takes: its stack, and an expression's depth.) */
#define MAX_DEPTH 32
#define MAX_TERMS 256

static int fail(struct parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, size_t at, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return -1;
	p->failed = 1;
	p->e->column = (int)at + 1;
	va_start(ap, fmt);
	vsnprintf(p->e->msg, sizeof(p->e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static int word_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '/' || c == ':' || c == '-' || c == '+' ||
	       c >= 0x80;
}

/* The next token into p; -1 after an error. */
static int next(struct parser *p)
{
	const char *s = p->s;
	size_t i = p->pos;

	free(p->str);
	p->str = NULL;
	while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
		i++;
	p->start = i;
	if (!s[i]) {
		p->t = T_END;
		p->len = 0;
		p->pos = i;
		return 0;
	}
	if (s[i] == '(' || s[i] == ')') {
		p->t = s[i] == '(' ? T_LP : T_RP;
		p->len = 1;
	} else if (s[i] == '"' || s[i] == '\'') {
		char q = s[i];
		struct mt_buf b = MT_BUF_INIT;
		size_t j = i + 1;
		for (;; j++) {
			if (!s[j]) {
				mt_buf_release(&b);
				return fail(p, i, "a string not closed (%c missing)", q);
			}
			if (s[j] == q)
				break;
			if (s[j] == '\\' && s[j + 1]) {
				j++;
				char c = s[j] == 'n' ? '\n' : s[j] == 't' ? '\t' : s[j] == 'r' ? '\r' : s[j];
				mt_buf_putc(&b, c);
				continue;
			}
			mt_buf_putc(&b, s[j]);
		}
		mt_buf_putc(&b, '\0');
		p->str = b.data;
		p->t = T_STRING;
		p->len = j + 1 - i;
	} else if (strchr("=!<>~&|", s[i])) {
		static const char *const ops[] = {"==", "!=", "<=", ">=", "&&", "||",
						  "=",  "!",  "<",  ">",  "~"};
		size_t k;
		for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
			if (!strncmp(s + i, ops[k], strlen(ops[k])))
				break;
		if (k == sizeof(ops) / sizeof(ops[0]))
			return fail(p, i, "'%c' is no operator (&& and || are)", s[i]);
		p->t = T_OP;
		p->len = strlen(ops[k]);
	} else if (word_char((unsigned char)s[i])) {
		size_t j = i;
		while (word_char((unsigned char)s[j]))
			j++;
		p->t = T_WORD;
		p->len = j - i;
	} else {
		return fail(p, i, "unexpected character '%c'", s[i]);
	}
	p->pos = p->start + p->len;
	return 0;
}

/* Is the current token the word or operator w? */
static int is(const struct parser *p, const char *w)
{
	return (p->t == T_WORD || p->t == T_OP) && p->len == strlen(w) &&
	       !strncmp(p->s + p->start, w, p->len);
}

/* ---- literals ---- */

static int add_param(struct mt_filter *f, struct mt_filter_value v, const char *text)
{
	if (f->nparams == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 4;
		f->params = mt_realloc(f->params, f->cap * sizeof(*f->params));
		f->texts = mt_realloc(f->texts, f->cap * sizeof(*f->texts));
	}
	f->texts[f->nparams] = text ? mt_strdup(text) : NULL;
	v.text = f->texts[f->nparams];
	f->params[f->nparams] = v;
	return (int)f->nparams++;
}

/* An integer, the whole of s (a sign allowed). */
static int whole_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!*s ||
	    !(isdigit((unsigned char)*s) || ((*s == '-' || *s == '+') && isdigit((unsigned char)s[1]))))
		return -1;
	v = strtoll(s, &end, 10);
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* A number written as JSON writes one (no sign but '-', digits, a fraction, an exponent). */
static int whole_real(const char *s, double *out)
{
	char *end;

	if (!*s || !(isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1]))))
		return -1;
	*out = strtod(s, &end);
	return *end ? -1 : 0;
}

/* A duration with its unit, "100ms", "1.5s", "2m", into ns: a bare number is none. */
static int duration_ns(const char *s, int64_t *out)
{
	size_t n = strlen(s);

	if (!n || isdigit((unsigned char)s[n - 1]) || s[n - 1] == '.')
		return -1;
	return mt_parse_duration(s, 1, out);
}

/*
 * A date and time, "YYYY-MM-DD[( |T)HH:MM[:SS[.frac]]][Z|(+|-)HH:MM]", as µs
 * since the epoch; local time when no zone is given.
 */
static int date_us(const char *s, int64_t *out)
{
	struct tm tm;
	int y, mo, d, h = 0, mi = 0, n = 0, zh = 0, zm = 0;
	double sec = 0;
	const char *r;
	int zone = 0;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
		return -1;
	r = s + n;
	if (*r == ' ' || *r == 'T') {
		int m = 0;
		if (sscanf(r + 1, "%2d:%2d%n", &h, &mi, &m) != 2 || m != 5)
			return -1;
		r += 1 + m;
		if (*r == ':') {
			char *end;
			if (!isdigit((unsigned char)r[1]))
				return -1;
			sec = strtod(r + 1, &end);
			r = end;
		}
	}
	if (*r == 'Z') {
		zone = 1;
		r++;
	} else if (*r == '+' || *r == '-') {
		int m = 0;
		if (sscanf(r + 1, "%2d:%2d%n", &zh, &zm, &m) != 2 || m != 5)
			return -1;
		zone = 1;
		if (r[0] == '-') {
			zh = -zh;
			zm = -zm;
		}
		r += 1 + m;
	}
	if (*r || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = (int)sec;
	tm.tm_isdst = -1;
	t = zone ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1)
		return -1;
	t -= (time_t)zh * 3600 + (time_t)zm * 60;
	*out = (int64_t)t * 1000000 + (int64_t)((sec - (int)sec) * 1e6 + 0.5);
	return 0;
}

/*
 * A quantifier right after another (a++, a*{2}): POSIX leaves it undefined,
 * and glibc's compiler takes memory exponential in their number.
 */
static int stacked_quantifiers(const char *p)
{
	int after_q = 0;

	while (*p) {
		if (*p == '\\' && p[1]) {
			p += 2;
			after_q = 0;
		} else if (*p == '[') {
			/* A bracket expression: ] first is a member, [:class:] holds a ]. */
			p++;
			if (*p == '^')
				p++;
			if (*p == ']')
				p++;
			while (*p && *p != ']') {
				if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
					char c = p[1];
					p += 2;
					while (*p && !(*p == c && p[1] == ']'))
						p++;
					if (*p)
						p += 2;
				} else {
					p++;
				}
			}
			if (*p)
				p++;
			after_q = 0;
		} else if (*p == '*' || *p == '+' || *p == '?' || *p == '{') {
			if (after_q)
				return 1;
			if (*p == '{')
				while (*p && *p != '}')
					p++;
			if (*p)
				p++;
			after_q = 1;
		} else {
			p++;
			after_q = 0;
		}
	}
	return 0;
}

/* Why pattern is no POSIX extended regular expression (0: it is one). */
static int regex_problem(const char *pattern, char *why, size_t n)
{
	regex_t re;
	int rc;

	if (strlen(pattern) > 1024) {
		snprintf(why, n, "over 1024 bytes");
		return -1;
	}
	if (stacked_quantifiers(pattern)) {
		snprintf(why, n,
			 "a repetition of a repetition (a++): put the inner one in "
			 "parentheses, (a+)+");
		return -1;
	}
	rc = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		regerror(rc, &re, why, n);
		return -1;
	}
	regfree(&re);
	return 0;
}

static int op_is_text(enum op op)
{
	return op == OP_CONTAINS || op == OP_MATCHES;
}

/* The literal after field f's operator: checked against f, added as a parameter. */
static int literal(struct parser *p, struct node *n)
{
	const struct field *f = n->f;
	size_t at = p->start;
	char word[256];
	struct mt_filter_value v;
	const char *text;

	memset(&v, 0, sizeof(v));
	if (p->t == T_STRING) {
		text = p->str;
	} else if (p->t == T_WORD) {
		if (p->len >= sizeof(word))
			return fail(p, at, "a value too long: quote it");
		memcpy(word, p->s + p->start, p->len);
		word[p->len] = '\0';
		text = word;
		if (!strcmp(word, "and") || !strcmp(word, "or") || !strcmp(word, "not"))
			return fail(p, at, "a value expected after %s's operator, not '%s'", f->name, word);
	} else {
		return fail(p, at, "a value expected after %s's operator", f->name);
	}
	if (op_is_text(n->op)) {
		if (f->type != FT_TEXT && f->type != FT_ID)
			return fail(p, at, "%s is %s: 'contains' and 'matches' take text fields", f->name,
				    f->type == FT_BOOL ? "a flag" : "a number");
		if (n->op == OP_MATCHES) {
			char why[160];
			if (regex_problem(text, why, sizeof(why)))
				return fail(p, at, "a bad regular expression: %s", why);
		}
		v.type = MT_FV_TEXT;
		n->param = add_param(p->f, v, text);
		return next(p);
	}
	switch (f->type) {
	case FT_TEXT:
		if (f->values && (n->op == OP_EQ || n->op == OP_NE)) {
			const char *vs = f->values;
			size_t len = strlen(text);
			int found = 0;
			while (*vs) {
				size_t k = strcspn(vs, " ");
				if (k == len && !strncmp(vs, text, k))
					found = 1;
				vs += k + (vs[k] == ' ');
			}
			if (!found)
				return fail(p, at, "%s is one of %s, not '%s'", f->name, f->values, text);
		}
		v.type = MT_FV_TEXT;
		break;
	case FT_ID:
		if (p->t == T_WORD && !whole_int(text, &v.i))
			v.type = MT_FV_INT;
		else if (p->t == T_WORD && !whole_real(text, &v.r))
			v.type = MT_FV_REAL;
		else
			v.type = MT_FV_TEXT;
		break;
	case FT_NUM:
		if (p->t != T_WORD || whole_int(text, &v.i)) {
			uint64_t sz;
			if (!strcmp(f->name, "size") && p->t == T_WORD && !mt_parse_size(text, &sz) &&
			    sz <= INT64_MAX) {
				v.i = (int64_t)sz;
			} else {
				return fail(p, at, "%s is a number: '%s' is not an integer%s", f->name, text,
					    !strcmp(f->name, "size") ? " (or a size, 10k)" : "");
			}
		}
		v.type = MT_FV_INT;
		break;
	case FT_DUR:
		if (p->t != T_WORD || duration_ns(text, &v.i))
			return fail(p, at, "%s is a duration: '%s' needs a unit (250us, 100ms, 2s, 1m)",
				    f->name, text);
		v.type = MT_FV_INT;
		break;
	case FT_TIME:
		if (p->t == T_WORD && !duration_ns(text, &v.i)) {
			v.type = MT_FV_INT;
		} else if (!date_us(text, &v.i)) {
			v.type = MT_FV_INT;
			n->wall = 1;
		} else {
			return fail(p, at,
				    "time is a duration since the session's start (2s, 1.5m) or a "
				    "date (\"2026-11-27 10:00:00\"), not '%s'",
				    text);
		}
		break;
	case FT_BOOL:
		if (!strcmp(text, "true") || !strcmp(text, "1"))
			v.i = 1;
		else if (!strcmp(text, "false") || !strcmp(text, "0"))
			v.i = 0;
		else
			return fail(p, at, "%s is a flag: true or false, not '%s'", f->name, text);
		if (n->op != OP_EQ && n->op != OP_NE)
			return fail(p, at, "%s is a flag: compare it with == or !=", f->name);
		v.type = MT_FV_INT;
		break;
	}
	n->param = add_param(p->f, v, v.type == MT_FV_TEXT ? text : NULL);
	return next(p);
}

/* ---- the grammar ---- */

static struct node *node_new(enum node_type t)
{
	struct node *n = mt_calloc(1, sizeof(*n));

	n->type = t;
	return n;
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	node_free(n->a);
	node_free(n->b);
	free(n);
}

static struct node *expr(struct parser *p);

static const struct field *field_named(const char *s, size_t n)
{
	for (size_t k = 0; k < NFIELDS; k++)
		if (strlen(fields[k].name) == n && !strncmp(fields[k].name, s, n))
			return &fields[k];
	return NULL;
}

static int take_op(struct parser *p, enum op *op)
{
	static const struct {
		const char *w;
		enum op op;
	} ops[] = {{"==", OP_EQ},           {"=", OP_EQ},
		   {"eq", OP_EQ},           {"!=", OP_NE},
		   {"ne", OP_NE},           {"<", OP_LT},
		   {"lt", OP_LT},           {"<=", OP_LE},
		   {"le", OP_LE},           {">", OP_GT},
		   {"gt", OP_GT},           {">=", OP_GE},
		   {"ge", OP_GE},           {"contains", OP_CONTAINS},
		   {"matches", OP_MATCHES}, {"~", OP_MATCHES}};

	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (is(p, ops[k].w)) {
			*op = ops[k].op;
			return 1;
		}
	return 0;
}

static struct node *primary(struct parser *p)
{
	struct node *n;

	if (++p->depth > MAX_DEPTH) {
		fail(p, p->start, "an expression nested too deep (%d parentheses or nots)", MAX_DEPTH);
		return NULL;
	}
	if (++p->terms > MAX_TERMS) {
		fail(p, p->start, "an expression too long (%d terms at most)", MAX_TERMS);
		return NULL;
	}
	if (p->t == T_LP) {
		size_t at = p->start;
		if (next(p))
			return NULL;
		n = expr(p);
		if (!n)
			return NULL;
		if (p->t != T_RP) {
			node_free(n);
			fail(p, p->t == T_END ? at : p->start,
			     p->t == T_END ? "'(' not closed" : "')' expected here");
			return NULL;
		}
		if (next(p)) {
			node_free(n);
			return NULL;
		}
		p->depth--;
		return n;
	}
	if (is(p, "not") || is(p, "!")) {
		if (next(p))
			return NULL;
		struct node *a = primary(p);
		if (!a)
			return NULL;
		n = node_new(N_NOT);
		n->a = a;
		p->depth--;
		return n;
	}
	if (p->t == T_END) {
		fail(p, p->start, "a field expected (%s)", mt_filter_fields());
		return NULL;
	}
	if (p->t != T_WORD) {
		fail(p, p->start, "a field expected, not '%.*s'", (int)p->len, p->s + p->start);
		return NULL;
	}
	const struct field *f = field_named(p->s + p->start, p->len);
	if (!f) {
		fail(p, p->start, "unknown field '%.*s' (fields: %s)", (int)p->len, p->s + p->start,
		     mt_filter_fields());
		return NULL;
	}
	if (next(p))
		return NULL;
	n = node_new(N_HAS);
	n->f = f;
	if (take_op(p, &n->op)) {
		n->type = N_CMP;
		if (next(p) || literal(p, n)) {
			node_free(n);
			return NULL;
		}
	} else if ((p->t == T_WORD && !is(p, "and") && !is(p, "or")) || p->t == T_STRING) {
		fail(p, p->start,
		     "an operator expected after %s (==, !=, <, >, contains, matches, "
		     "and, or)",
		     f->name);
		node_free(n);
		return NULL;
	}
	p->depth--;
	return n;
}

static struct node *binary(struct parser *p, int or)
{
	struct node *l = or ? binary(p, 0) : primary(p);

	if (!l)
		return NULL;
	while (or ? (is(p, "or") || is(p, "||")) : (is(p, "and") || is(p, "&&"))) {
		struct node *r, *n;
		if (next(p)) {
			node_free(l);
			return NULL;
		}
		r = or ? binary(p, 0) : primary(p);
		if (!r) {
			node_free(l);
			return NULL;
		}
		n = node_new(or ? N_OR : N_AND);
		n->a = l;
		n->b = r;
		l = n;
	}
	return l;
}

static struct node *expr(struct parser *p)
{
	return binary(p, 1);
}

/* Give each request-given field's test its list. */
static void number_lists(struct mt_filter *f, struct node *n)
{
	if (!n)
		return;
	n->list = -1;
	if ((n->type == N_HAS || n->type == N_CMP) && n->f->req) {
		f->lists = mt_realloc(f->lists, (f->nlists + 1) * sizeof(*f->lists));
		n->list = (int)f->nlists;
		f->lists[f->nlists++] = n;
	}
	number_lists(f, n->a);
	number_lists(f, n->b);
}

struct mt_filter *mt_filter_parse(const char *s, struct mt_filter_err *e)
{
	struct parser p;
	struct mt_filter *f = mt_calloc(1, sizeof(*f));

	memset(&p, 0, sizeof(p));
	memset(e, 0, sizeof(*e));
	p.s = s;
	p.f = f;
	p.e = e;
	if (!next(&p)) {
		f->root = expr(&p);
		if (f->root && p.t != T_END) {
			if (p.t == T_RP)
				fail(&p, p.start, "')' without its '('");
			else
				fail(&p, p.start, "'and' or 'or' expected before '%.*s'", (int)p.len,
				     p.s + p.start);
		}
	}
	free(p.str);
	if (p.failed || !f->root) {
		if (!p.failed)
			fail(&p, 0, "an empty filter");
		mt_filter_free(f);
		return NULL;
	}
	number_lists(f, f->root);
	f->sets = mt_calloc(f->nlists ? f->nlists : 1, sizeof(*f->sets));
	return f;
}

void mt_filter_free(struct mt_filter *f)
{
	if (!f)
		return;
	node_free(f->root);
	for (size_t i = 0; i < f->nparams; i++)
		free(f->texts[i]);
	for (size_t i = 0; f->sets && i < f->nlists; i++)
		free(f->sets[i].v);
	free(f->sets);
	free(f->lists);
	free(f->texts);
	free(f->params);
	free(f);
}

const char *mt_filter_fields(void)
{
	static char names[400];

	if (!names[0])
		for (size_t k = 0; k < NFIELDS; k++) {
			size_t len = strlen(names);
			snprintf(names + len, sizeof(names) - len, "%s%s", k ? ", " : "", fields[k].name);
		}
	return names;
}

/* ---- SQL ---- */

/* SQL text with '@' for the row's alias, into out. */
static void put_sql(const char *sql, const char *alias, struct mt_buf *out)
{
	for (const char *s = sql; *s; s++)
		if (*s == '@')
			mt_buf_puts(out, alias);
		else
			mt_buf_putc(out, *s);
}

/* The field's value (gated: NULL where its gate does not hold). ungated: without the gate. */
static void field_sql_gated(const struct field *f, const char *alias, int http, int wall, int ungated,
			    struct mt_buf *out)
{
	if (f->v4 && !http) {
		mt_buf_puts(out, f->type == FT_BOOL ? "0" : "NULL");
		return;
	}
	if (wall) {
		mt_buf_printf(out, "%s.wall", alias);
		return;
	}
	if (f->gate && !ungated) {
		mt_buf_puts(out, "(CASE WHEN ");
		put_sql(f->gate, alias, out);
		mt_buf_puts(out, " THEN ");
		put_sql(f->sql, alias, out);
		mt_buf_puts(out, " END)");
		return;
	}
	put_sql(f->sql, alias, out);
}

static void field_sql(const struct field *f, const char *alias, int http, int wall, struct mt_buf *out)
{
	field_sql_gated(f, alias, http, wall, 0, out);
}

static void node_sql(const struct mt_filter *f, const struct node *n, const char *alias, int base, int http,
		     struct mt_buf *out);

/*
 * Can a value the field equals or holds be looked for in the message's bytes
 * first? Only for fields that are strings of its JSON, and a literal that
 * JSON writes as it is (no quote, backslash or control character): then, in
 * bytes with no backslash (no escape at all), the value is there as written.
 */
static int raw_prefilter(const struct mt_filter *f, const struct node *n)
{
	static const char *const names[] = {"tool", "prompt", "uri", "error", "text"};
	const struct mt_filter_value *v;
	int found = 0;

	if (n->type != N_CMP || (n->op != OP_EQ && n->op != OP_CONTAINS))
		return 0;
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		found |= !strcmp(n->f->name, names[k]);
	v = &f->params[n->param];
	if (!found || v->type != MT_FV_TEXT || !v->text[0])
		return 0;
	for (const unsigned char *p = (const unsigned char *)v->text; *p; p++)
		if (*p == '"' || *p == '\\' || *p < 0x20)
			return 0;
	return 1;
}

/* A field's test (N_HAS or N_CMP) on the row named alias, its own value. */
static void cond_sql(const struct mt_filter *f, const struct node *n, const char *alias, int base, int http,
		     struct mt_buf *out)
{
	static const char *const cmp[] = {"=", "IS NOT", "<", "<=", ">", ">="};

	if (raw_prefilter(f, n)) {
		/* Where the gate holds (a cheap test of a column first), the bytes
		 * must hold the value as written, or an escape: then the test. */
		/* (the gate tested once: NULL where it fails, as the field is) */
		if (n->f->gate) {
			mt_buf_puts(out, "(CASE WHEN ");
			put_sql(n->f->gate, alias, out);
			mt_buf_puts(out, " THEN ");
		}
		mt_buf_printf(out, "(CASE WHEN mcptap_has(%s.raw, ?%d) THEN ", alias, base + n->param + 1);
		if (n->op == OP_CONTAINS) {
			mt_buf_puts(out, "instr(");
			field_sql_gated(n->f, alias, http, 0, 1, out);
			mt_buf_printf(out, ", ?%d) > 0", base + n->param + 1);
		} else {
			field_sql_gated(n->f, alias, http, 0, 1, out);
			mt_buf_printf(out, " = ?%d", base + n->param + 1);
		}
		mt_buf_puts(out, " ELSE 0 END)");
		if (n->f->gate)
			mt_buf_puts(out, " END)");
		return;
	}
	mt_buf_putc(out, '(');
	if (n->type == N_HAS) {
		field_sql(n->f, alias, http, 0, out);
		mt_buf_puts(out, n->f->type == FT_BOOL ? " = 1" : " IS NOT NULL");
	} else if (n->op == OP_CONTAINS) {
		mt_buf_puts(out, "instr(");
		field_sql(n->f, alias, http, 0, out);
		mt_buf_printf(out, ", ?%d) > 0", base + n->param + 1);
	} else if (n->op == OP_MATCHES) {
		mt_buf_printf(out, "mcptap_matches(?%d, ", base + n->param + 1);
		field_sql(n->f, alias, http, 0, out);
		mt_buf_putc(out, ')');
	} else {
		field_sql(n->f, alias, http, n->wall, out);
		mt_buf_printf(out, " %s ?%d", cmp[n->op], base + n->param + 1);
	}
	mt_buf_putc(out, ')');
}

/* The terms of a chain of t (OR or AND), without parentheses between them. */
static void chain_sql(const struct mt_filter *f, const struct node *n, enum node_type t, const char *alias,
		      int base, int http, struct mt_buf *out)
{
	if (n->type != t) {
		node_sql(f, n, alias, base, http, out);
		return;
	}
	chain_sql(f, n->a, t, alias, base, http, out);
	mt_buf_puts(out, t == N_OR ? " OR " : " AND ");
	chain_sql(f, n->b, t, alias, base, http, out);
}

static void node_sql(const struct mt_filter *f, const struct node *n, const char *alias, int base, int http,
		     struct mt_buf *out)
{
	switch (n->type) {
	case N_OR:
	case N_AND:
		/* A chain of one operator is one level, not one per term. */
		mt_buf_putc(out, '(');
		chain_sql(f, n, n->type, alias, base, http, out);
		mt_buf_putc(out, ')');
		break;
	case N_NOT:
		/* (A comparison with NULL is NULL, and NOT NULL is NULL: every condition
		 * here is 1, 0 or NULL, and not is true on 0 and NULL.) */
		mt_buf_putc(out, '(');
		node_sql(f, n->a, alias, base, http, out);
		mt_buf_puts(out, " IS NOT 1)");
		break;
	case N_HAS:
	case N_CMP:
		if (!n->f->req) {
			cond_sql(f, n, alias, base, http, out);
			break;
		}
		/* An answer's value is its request's (see struct seqset, and
		 * mcptap_pair); others have a value of their own. An answer whose
		 * request was not noted looks it up. */
		mt_buf_printf(out, "coalesce(mcptap_pair(?%d, %s.kind, %s.seq, %s.request_seq, ",
			      base + (int)f->nparams + n->list + 1, alias, alias, alias);
		cond_sql(f, n, alias, base, http, out);
		mt_buf_puts(out, "), (SELECT ");
		cond_sql(f, n, "fq", base, http, out);
		mt_buf_printf(out,
			      " FROM message fq WHERE fq.session = %s.session AND fq.seq = %s"
			      ".request_seq AND fq.kind = 'request'))",
			      alias, alias);
		break;
	}
}

void mt_filter_sql(const struct mt_filter *f, const char *alias, int base, int http, struct mt_buf *out)
{
	node_sql(f, f->root, alias, base, http, out);
}

void mt_filter_bind(const struct mt_filter *f, void *stmtp, int base)
{
	sqlite3_stmt *s = stmtp;

	for (size_t i = 0; i < f->nparams; i++) {
		const struct mt_filter_value *v = &f->params[i];
		int n = base + (int)i + 1;
		if (v->type == MT_FV_TEXT)
			sqlite3_bind_text(s, n, v->text, -1, SQLITE_STATIC);
		else if (v->type == MT_FV_INT)
			sqlite3_bind_int64(s, n, v->i);
		else
			sqlite3_bind_double(s, n, v->r);
	}
	for (size_t i = 0; i < f->nlists; i++)
		sqlite3_bind_pointer(s, base + (int)(f->nparams + i) + 1, &f->sets[i], "mcptap_seqset", NULL);
}

void mt_filter_session(struct mt_filter *f, int64_t session)
{
	for (size_t i = 0; i < f->nlists; i++)
		if (f->sets[i].session != session) {
			free(f->sets[i].v);
			f->sets[i].v = NULL;
			f->sets[i].cap = 0;
			f->sets[i].session = session;
		}
}

/* ---- the SQL functions ---- */

static void free_regex(void *p)
{
	regfree(p);
	free(p);
}

/*
 * mcptap_matches(PATTERN, TEXT): 1 when the POSIX extended regular
 * expression matches somewhere in TEXT, NULL when TEXT is NULL. The
 * compiled pattern is kept with the statement.
 */
static void sql_matches(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	regex_t *re = sqlite3_get_auxdata(ctx, 0);
	const char *text;

	(void)argc;
	if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	if (!re) {
		const char *pat = (const char *)sqlite3_value_text(argv[0]);
		char why[8];
		re = mt_malloc(sizeof(*re));
		if (!pat || regex_problem(pat, why, sizeof(why)) ||
		    regcomp(re, pat, REG_EXTENDED | REG_NOSUB)) {
			free(re);
			sqlite3_result_error(ctx, "a bad regular expression", -1);
			return;
		}
		sqlite3_set_auxdata(ctx, 0, re, free_regex);
		re = sqlite3_get_auxdata(ctx, 0);
		if (!re) {
			sqlite3_result_error_nomem(ctx);
			return;
		}
	}
	text = (const char *)sqlite3_value_text(argv[1]);
	sqlite3_result_int(ctx, text && !regexec(re, text, 0, NULL, 0));
}

/* A string value's decoded text as the function's result (NULL: not a string). */
static void result_string(sqlite3_context *ctx, struct mt_span v)
{
	struct mt_buf b = MT_BUF_INIT;

	if (v.n && v.p[0] == '"' && !mt_json_string(v, &b)) {
		sqlite3_result_text(ctx, b.data ? b.data : "", (int)b.len, free);
		return;
	}
	mt_buf_release(&b);
	sqlite3_result_null(ctx);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * mcptap_has(RAW, TEXT): 1 when the bytes RAW hold TEXT as it is, or a
 * backslash (an escape, which may spell it otherwise); else 0.
 */
/*
 * Does p (n bytes) hold t (m bytes)? For a short t, memchr for its first byte
 * and a compare, which is quicker than glibc's memmem on the short messages
 * a filter scans; a long t (where that could take n * m) goes to memmem.
 */
static int contains(const char *p, size_t n, const char *t, size_t m)
{
	if (m > 16)
		return memmem(p, n, t, m) != NULL;
	if (!m)
		return 1;
	while (n >= m) {
		const char *q = memchr(p, t[0], n - m + 1);
		if (!q)
			return 0;
		if (!memcmp(q + 1, t + 1, m - 1))
			return 1;
		n -= (size_t)(q - p) + 1;
		p = q + 1;
	}
	return 0;
}

static void sql_has(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *p = sqlite3_value_blob(argv[0]);
	size_t n = (size_t)sqlite3_value_bytes(argv[0]);
	const char *t = (const char *)sqlite3_value_text(argv[1]);

	(void)argc;
	if (!p || !t) {
		sqlite3_result_int(ctx, 0);
		return;
	}
	sqlite3_result_int(ctx, memchr(p, '\\', n) || contains(p, n, t, strlen(t)));
}

/* A message's bytes as stored, classified; 0, or -1 when there are none. */
static int classify_arg(sqlite3_value *raw, struct mt_class *c)
{
	const char *p = sqlite3_value_blob(raw);
	int n = sqlite3_value_bytes(raw);

	if (!p || n <= 0)
		return -1;
	/* (stored bytes were classified when they were stored: their strings
	 * need no checking again; on a crafted file this is still memory-safe) */
	mt_classify_trusted(p, (size_t)n, c);
	return 0;
}

/* mcptap_param(RAW, KEY): the string params.KEY of a request or notification, or NULL. */
static void sql_param(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct mt_class c;
	struct mt_span v;
	const char *key = (const char *)sqlite3_value_text(argv[1]);

	(void)argc;
	if (!key || classify_arg(argv[0], &c) || (c.kind != MT_REQUEST && c.kind != MT_NOTIFICATION) ||
	    !c.params.p || mt_json_member(c.params, key, &v) != 1) {
		sqlite3_result_null(ctx);
		return;
	}
	result_string(ctx, v);
}

/*
 * mcptap_error(RAW, KIND): an error's error.message (or "" without one); a
 * result whose isError is true, its first content's text (or ""); else NULL.
 */
static void sql_error(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct mt_class c;
	struct mt_span err, v, content, first;
	const char *kind = (const char *)sqlite3_value_text(argv[1]);
	size_t pos = 0;

	(void)argc;
	if (!kind || classify_arg(argv[0], &c)) {
		sqlite3_result_null(ctx);
		return;
	}
	if (!strcmp(kind, "error") && c.kind == MT_ERROR) {
		/* (The message, validated: its object is the bytes less the spaces around.) */
		struct mt_span msg = {sqlite3_value_blob(argv[0]), (size_t)sqlite3_value_bytes(argv[0])};
		while (msg.n && is_space(msg.p[0])) {
			msg.p++;
			msg.n--;
		}
		while (msg.n && is_space(msg.p[msg.n - 1]))
			msg.n--;
		if (mt_json_member(msg, "error", &err) == 1 && mt_json_member(err, "message", &v) == 1 &&
		    v.n && v.p[0] == '"')
			result_string(ctx, v);
		else
			sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
		return;
	}
	if (strcmp(kind, "response") || c.kind != MT_RESPONSE || !c.result.p ||
	    mt_json_member(c.result, "isError", &v) != 1 || v.n != 4 || memcmp(v.p, "true", 4)) {
		sqlite3_result_null(ctx);
		return;
	}
	if (mt_json_member(c.result, "content", &content) == 1 &&
	    mt_json_next_element(content, &pos, &first) == 1 && mt_json_member(first, "text", &v) == 1 &&
	    v.n && v.p[0] == '"') {
		result_string(ctx, v);
		return;
	}
	sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
}

/* Note a request's verdict (a seq before the first noted, or too far on, is not). */
static void seen_note(struct seqset *set, int64_t seq, int pass)
{
	if (!set->cap) {
		set->base = seq;
	} else if (seq < set->base || seq - set->base >= SEEN_SPAN) {
		return;
	}
	size_t at = (size_t)(seq - set->base);
	if (at >= set->cap) {
		size_t cap = set->cap ? set->cap : 4096;
		while (cap <= at)
			cap *= 2;
		set->v = mt_realloc(set->v, cap);
		memset(set->v + set->cap, SEEN_NONE, cap - set->cap);
		set->cap = cap;
	}
	set->v[at] = pass ? SEEN_PASS : SEEN_FAIL;
}

/* A request's verdict as noted: SEEN_NONE, SEEN_FAIL or SEEN_PASS. */
static int seen_get(const struct seqset *set, int64_t seq)
{
	if (!set->cap || seq < set->base || seq - set->base >= (int64_t)set->cap)
		return SEEN_NONE;
	return set->v[seq - set->base];
}

/*
 * mcptap_pair(SET, KIND, SEQ, REQUEST_SEQ, VERDICT), a request-given field's
 * test on a row: a request's own VERDICT, noted in SET; an answer's, its
 * request's as noted (NULL when none was: the caller looks the request up);
 * another row's own. 1 or 0 (a NULL verdict is 0: the language treats them
 * alike).
 */
static void sql_pair(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct seqset *set = sqlite3_value_pointer(argv[0], "mcptap_seqset");
	const char *kind = (const char *)sqlite3_value_text(argv[1]);
	int pass = sqlite3_value_type(argv[4]) != SQLITE_NULL && sqlite3_value_int(argv[4]) != 0;

	(void)argc;
	if (!set || !kind) {
		sqlite3_result_int(ctx, pass);
		return;
	}
	/* (The kinds are a closed set: their first letters tell them apart.) */
	if (kind[0] == 'r' && !strcmp(kind, "request") && sqlite3_value_type(argv[2]) != SQLITE_NULL) {
		seen_note(set, sqlite3_value_int64(argv[2]), pass);
	} else if (((kind[0] == 'r' && !strcmp(kind, "response")) ||
		    (kind[0] == 'e' && !strcmp(kind, "error"))) &&
		   sqlite3_value_type(argv[3]) != SQLITE_NULL) {
		int v = seen_get(set, sqlite3_value_int64(argv[3]));
		if (v == SEEN_NONE) {
			sqlite3_result_null(ctx);
			return;
		}
		pass = v == SEEN_PASS;
	}
	sqlite3_result_int(ctx, pass);
}

void mt_filter_register(void *dbp)
{
	sqlite3 *db = dbp;
	int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY;

	sqlite3_create_function(db, "mcptap_matches", 2, flags, NULL, sql_matches, NULL, NULL);
	sqlite3_create_function(db, "mcptap_param", 2, flags, NULL, sql_param, NULL, NULL);
	sqlite3_create_function(db, "mcptap_error", 2, flags, NULL, sql_error, NULL, NULL);
	sqlite3_create_function(db, "mcptap_has", 2, flags, NULL, sql_has, NULL, NULL);
	/* (Not deterministic: they keep and read what a scan noted.) */
	sqlite3_create_function(db, "mcptap_pair", 5, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, sql_pair, NULL,
				NULL);
}
