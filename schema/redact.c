/*
 * redact.c - keeping credentials out of capture files (see redact.h).
 *
 * Every entry point finds the spans to redact first (a list of edits, in
 * order), then writes the input again with each span replaced by its marker:
 * bytes outside the spans stay exactly as they were.
 */
#include "schema/redact.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct mt_redact {
	unsigned char key[16];
	char **names; /* user member names, normalized */
	size_t nnames;
	char **paths; /* user JSON paths */
	size_t npaths;
	regex_t *res; /* user value patterns */
	size_t nres;
};

/* ---- the keyed hash ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                   \
	do {                       \
		v0 += v1;          \
		v1 = ROTL(v1, 13); \
		v1 ^= v0;          \
		v0 = ROTL(v0, 32); \
		v2 += v3;          \
		v3 = ROTL(v3, 16); \
		v3 ^= v2;          \
		v0 += v3;          \
		v3 = ROTL(v3, 21); \
		v3 ^= v0;          \
		v2 += v1;          \
		v1 = ROTL(v1, 17); \
		v1 ^= v2;          \
		v2 = ROTL(v2, 32); \
	} while (0)

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t mt_siphash24(const unsigned char key[16], const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t k0 = le64(key), k1 = le64(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	uint64_t b = (uint64_t)n << 56;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t m = le64(p + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < n; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

void mt_redact_marker(const struct mt_redact *r, const char *s, size_t n, char *out)
{
	uint64_t h = mt_siphash24(r->key, s, n);

	snprintf(out, MT_REDACT_MARKER_LEN + 1, "[redacted:%08x]", (unsigned)(h >> 32));
}

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int mt_redact_is_marker(const char *s, size_t n)
{
	if (n != MT_REDACT_MARKER_LEN || memcmp(s, "[redacted:", 10) || s[18] != ']')
		return 0;
	for (int i = 10; i < 18; i++)
		if (!is_hex((unsigned char)s[i]))
			return 0;
	return 1;
}

const char *mt_redact_find_marker(const char *s, size_t n)
{
	const char *end = s + n;

	while (s < end && (s = memmem(s, (size_t)(end - s), "[redacted:", 10)) != NULL) {
		if ((size_t)(end - s) >= MT_REDACT_MARKER_LEN && mt_redact_is_marker(s, MT_REDACT_MARKER_LEN))
			return s;
		s++;
	}
	return NULL;
}

/* ---- building one ---- */

struct mt_redact *mt_redact_new(const unsigned char key[16])
{
	struct mt_redact *r = mt_calloc(1, sizeof(*r));

	memcpy(r->key, key, 16);
	return r;
}

void mt_redact_free(struct mt_redact *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i]);
	for (size_t i = 0; i < r->npaths; i++)
		free(r->paths[i]);
	for (size_t i = 0; i < r->nres; i++)
		regfree(&r->res[i]);
	free(r->names);
	free(r->paths);
	free(r->res);
	free(r);
}

/* Lower case, with "_", "-", "." and spaces left out, into out (at most cap - 1). */
static size_t normalize(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '_' || c == '-' || c == '.' || c == ' ')
			continue;
		out[k++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	out[k] = '\0';
	return k;
}

int mt_redact_add_key(struct mt_redact *r, const char *name)
{
	char norm[256];

	normalize(name, strlen(name), norm, sizeof(norm));
	r->names = mt_realloc(r->names, (r->nnames + 1) * sizeof(*r->names));
	r->names[r->nnames++] = mt_strdup(norm);
	return 0;
}

int mt_redact_add_path(struct mt_redact *r, const char *path, struct mt_err *err)
{
	const char *p = path;

	if (!*p || *p == '.' || *p == '[')
		return mt_err_set(err,
				  "--redact-path '%s': a path starts with a member name "
				  "(params.arguments.token)",
				  path);
	/* Segments: names (or *) after dots, [N] or [*] after anything. */
	while (*p) {
		if (*p == '[') {
			const char *q = strchr(p, ']');
			if (!q || q == p + 1 ||
			    (strspn(p + 1, "0123456789") != (size_t)(q - p - 1) &&
			     !(q == p + 2 && p[1] == '*')))
				return mt_err_set(err, "--redact-path '%s': a [ ] holds an index or *", path);
			p = q + 1;
		} else if (*p == '.') {
			if (p[1] == '\0' || p[1] == '.' || p[1] == '[')
				return mt_err_set(err, "--redact-path '%s': an empty member name", path);
			p++;
		} else {
			p += strcspn(p, ".[");
		}
	}
	r->paths = mt_realloc(r->paths, (r->npaths + 1) * sizeof(*r->paths));
	r->paths[r->npaths++] = mt_strdup(path);
	return 0;
}

int mt_redact_add_value(struct mt_redact *r, const char *regex, struct mt_err *err)
{
	regex_t re;
	int rc = regcomp(&re, regex, REG_EXTENDED);

	if (rc) {
		char why[200];
		regerror(rc, &re, why, sizeof(why));
		return mt_err_set(err, "--redact-value '%s': %s", regex, why);
	}
	r->res = mt_realloc(r->res, (r->nres + 1) * sizeof(*r->res));
	r->res[r->nres++] = re;
	return 0;
}

/* ---- the key ---- */

static int make_dirs(char *path)
{
	for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		int rc = mkdir(path, 0700);
		*s = '/';
		if (rc && errno != EEXIST)
			return -1;
	}
	return 0;
}

static int read_key(const char *path, unsigned char key[16])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, key, 16);
	close(fd);
	return got == 16 ? 0 : -2;
}

int mt_redact_load_key(unsigned char key[16], struct mt_err *err)
{
	const char *env = getenv("MCPTAP_REDACT_KEY_FILE"), *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char *path;
	int rc = -1;

	if (getrandom(key, 16, 0) != 16) /* the fallback; overwritten by the file's */
		for (int i = 0; i < 16; i++)
			key[i] = (unsigned char)(rand() ^ (int)mt_mono_ns());
	if (env && *env)
		path = mt_strdup(env);
	else if (state && *state == '/')
		path = mt_asprintf("%s/mcptap/redact.key", state);
	else if (home && *home == '/')
		path = mt_asprintf("%s/.local/state/mcptap/redact.key", home);
	else
		return mt_err_set(err, "no HOME to keep the redaction key in");
	int got = read_key(path, key);
	if (got == 0) {
		rc = 0;
	} else if (got == -2) {
		mt_err_set(err, "'%s' is not a redaction key (16 bytes or more)", path);
	} else if (errno != ENOENT) {
		mt_err_set(err, "cannot read '%s': %s", path, strerror(errno));
	} else {
		/* Made whole under another name, then linked in: two taps making it at
		 * once end with the same key. */
		char *tmp = mt_asprintf("%s.%ld", path, (long)getpid());
		int fd = -1;
		if (make_dirs(path) == 0 && (fd = mt_open_private(tmp, O_EXCL)) >= 0 &&
		    write(fd, key, 16) == 16 && fsync(fd) == 0 && close(fd) == 0) {
			fd = -1;
			if (link(tmp, path) == 0 || errno == EEXIST)
				rc = read_key(path, key) == 0 ? 0 : -1;
		}
		if (fd >= 0)
			close(fd);
		(void)unlink(tmp);
		if (rc)
			mt_err_set(err, "cannot make '%s': %s", path, strerror(errno));
		free(tmp);
	}
	free(path);
	return rc;
}

/* ---- names ---- */

enum name_use { USE_MEMBER, USE_ENV };

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* A word and its length, for the name tables below. */
struct word {
	const char *s;
	size_t n;
};
#define WORD(w)                  \
	{                        \
		w, sizeof(w) - 1 \
	}

/* Is s (n bytes) one of the words? */
static int is_word(const struct word *v, size_t nv, const char *s, size_t n)
{
	for (size_t i = 0; i < nv; i++)
		if (v[i].n == n && !memcmp(v[i].s, s, n))
			return 1;
	return 0;
}

/* Does s (n bytes) hold one of the words? */
static int holds_word(const struct word *v, size_t nv, const char *s, size_t n)
{
	for (size_t i = 0; i < nv; i++)
		for (size_t j = 0; j + v[i].n <= n; j++)
			if (s[j] == v[i].s[0] && !memcmp(s + j, v[i].s, v[i].n))
				return 1;
	return 0;
}

/* Does s (n bytes) end with one of the words? */
static int ends_with_word(const struct word *v, size_t nv, const char *s, size_t n)
{
	for (size_t i = 0; i < nv; i++)
		if (n >= v[i].n && !memcmp(s + n - v[i].n, v[i].s, v[i].n))
			return 1;
	return 0;
}

#define NWORDS(v) (sizeof(v) / sizeof((v)[0]))

/*
 * Is a value under this name a credential? (name: raw bytes, not normalized)
 * 0: no; 1: its strings are; 2: a name the user gave: its numbers are too.
 * (It runs on every header and JSON member name the tap stores: the tables
 * are compared by length first.)
 */
static int cred_name(const struct mt_redact *r, const char *name, size_t n, enum name_use use)
{
	static const struct word exact[] = {
		WORD("apikey"),
		WORD("xapikey"),
		WORD("token"),
		WORD("accesstoken"),
		WORD("refreshtoken"),
		WORD("idtoken"),
		WORD("authtoken"),
		WORD("bearertoken"),
		WORD("sessiontoken"),
		WORD("csrftoken"),
		WORD("xsrftoken"),
		WORD("xauthtoken"),
		WORD("apitoken"),
		WORD("password"),
		WORD("passwd"),
		WORD("passphrase"),
		WORD("secret"),
		WORD("clientsecret"),
		WORD("apisecret"),
		WORD("secretkey"),
		WORD("privatekey"),
		WORD("accesskey"),
		WORD("secretaccesskey"),
		WORD("authorization"),
		WORD("proxyauthorization"),
		WORD("cookie"),
		WORD("setcookie"),
		WORD("credentials"),
		WORD("credential"),
		WORD("auth"),
		WORD("pat"),
		WORD("personalaccesstoken"),
	};
	static const struct word suffixes[] = {
		WORD("token"),  WORD("apikey"),     WORD("secret"),    WORD("password"),
		WORD("passwd"), WORD("privatekey"), WORD("accesskey"), WORD("secretkey"),
	};
	/* Paging and progress tokens are not credentials. */
	static const struct word paging[] = {
		WORD("progress"),     WORD("page"), WORD("next"),  WORD("cursor"),
		WORD("continuation"), WORD("max"),  WORD("count"),
	};
	char s[128];
	size_t k;

	if (n >= sizeof(s))
		return 0;
	k = normalize(name, n, s, sizeof(s));
	if (!k)
		return 0;
	for (size_t i = 0; i < r->nnames; i++)
		if (!strcmp(s, r->names[i]))
			return 2; /* the user's own: any value under it, numbers too */
	if (is_word(exact, NWORDS(exact), s, k))
		return 1;
	if (holds_word(paging, NWORDS(paging), s, k))
		return 0;
	/* (A plural is a list of them: tokens, apiKeys, secrets.) */
	if (k > 1 && s[k - 1] == 's' && strcmp(s, "pass"))
		s[--k] = '\0';
	if (is_word(exact, NWORDS(exact), s, k))
		return 1;
	if (ends_with_word(suffixes, NWORDS(suffixes), s, k))
		return 1;
	/* DB_PASS, DB_PWD, STRIPE_KEY, GITHUB_PAT; not PWD (the working directory) nor BYPASS. */
	if (use == USE_ENV &&
	    (ends_with(name, n, "_KEY") || ends_with(name, n, "_PASS") || ends_with(name, n, "_PWD") ||
	     ends_with(name, n, "_PAT") || ends_with(name, n, "_KEYS") || !strcmp(s, "key")))
		return 1;
	return 0;
}

/* An environment-style name: upper case, digits and "_", with a letter first. */
static int env_style(const char *s, size_t n)
{
	if (!n || !(s[0] >= 'A' && s[0] <= 'Z'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* What an HTTP header or URL query parameter carries, by its name (http_name). */
enum http_cred {
	HTTP_PLAIN,      /* nothing by its name: the text rules only */
	HTTP_WHOLE,      /* a credential, the whole value */
	HTTP_SCHEME,     /* a credential after a scheme word (Bearer, Basic, AWS4-HMAC-SHA256) */
	HTTP_COOKIES,    /* cookies: each cookie's value */
	HTTP_SET_COOKIE, /* a cookie set: its value (its attributes stay) */
};

/*
 * What a header or query parameter named name (n bytes, raw) carries. The name
 * is compared as cred_name compares it, a version number at its end left out
 * (X-Hub-Signature-256):
 *   HTTP_COOKIES, HTTP_SET_COOKIE: Cookie, Set-Cookie;
 *   HTTP_SCHEME: names ending in authorization or authentication
 *     (Authorization, Proxy-Authorization, Authentication,
 *     X-Forwarded-Authorization);
 *   HTTP_WHOLE: the credential names (cred_name, the user's included), sig,
 *     key, code, pass, code_verifier, and names ending in signature,
 *     credential(s), auth_key, app_key, application_key, subscription_key,
 *     functions_key or master_key (X-Amz-Signature, X-Amz-Credential,
 *     X-Goog-Signature, Azure's sig, Ocp-Apim-Subscription-Key);
 *   HTTP_PLAIN: the rest (Accept, Mcp-Session-Id, Last-Event-ID, cursor, the
 *     legacy endpoint's sessionId, X-Amz-Date, X-Amz-SignedHeaders).
 * A query parameter takes any but HTTP_PLAIN for HTTP_WHOLE.
 */
static enum http_cred http_name(const struct mt_redact *r, const char *name, size_t n)
{
	static const struct word exact[] = {
		WORD("sig"), WORD("key"), WORD("code"), WORD("pass"), WORD("codeverifier"),
	};
	static const struct word schemes[] = {WORD("authorization"), WORD("authentication")};
	static const struct word suffixes[] = {
		WORD("signature"),       WORD("credential"),   WORD("credentials"),
		WORD("authkey"),         WORD("appkey"),       WORD("applicationkey"),
		WORD("subscriptionkey"), WORD("functionskey"), WORD("masterkey"),
	};
	char s[128];
	size_t k;

	/* (A version number after the name: X-Hub-Signature-256, key2.) */
	while (n && ((name[n - 1] >= '0' && name[n - 1] <= '9') || name[n - 1] == '-' || name[n - 1] == '_' ||
		     name[n - 1] == '.'))
		n--;
	if (!n || n >= sizeof(s))
		return HTTP_PLAIN;
	k = normalize(name, n, s, sizeof(s));
	if (!strcmp(s, "cookie") || !strcmp(s, "setcookie"))
		return s[0] == 's' ? HTTP_SET_COOKIE : HTTP_COOKIES;
	if (ends_with_word(schemes, NWORDS(schemes), s, k))
		return HTTP_SCHEME;
	if (cred_name(r, name, n, USE_MEMBER) || is_word(exact, NWORDS(exact), s, k) ||
	    ends_with_word(suffixes, NWORDS(suffixes), s, k))
		return HTTP_WHOLE;
	return HTTP_PLAIN;
}

/* ---- edits ---- */

struct edit {
	size_t start, end; /* the span of the input replaced */
	char *text;        /* what replaces it (owned) */
};

struct edits {
	struct edit *v;
	size_t n, cap;
};

static void edit_add(struct edits *e, size_t start, size_t end, char *text)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 8;
		e->v = mt_realloc(e->v, e->cap * sizeof(*e->v));
	}
	e->v[e->n++] = (struct edit){start, end, text};
}

static void edits_release(struct edits *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].text);
	free(e->v);
	memset(e, 0, sizeof(*e));
}

static int cmp_edit(const void *a, const void *b)
{
	const struct edit *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Write p with the edits applied (sorted; overlapping ones merged into the first). */
static void apply(const char *p, size_t n, struct edits *e, struct mt_buf *out)
{
	size_t at = 0;

	qsort(e->v, e->n, sizeof(*e->v), cmp_edit);
	mt_buf_reset(out);
	for (size_t i = 0; i < e->n; i++) {
		if (e->v[i].start < at)
			continue; /* inside one already written */
		mt_buf_append(out, p + at, e->v[i].start - at);
		mt_buf_puts(out, e->v[i].text);
		at = e->v[i].end;
	}
	mt_buf_append(out, p + at, n - at);
}

static char *marker_of(const struct mt_redact *r, const char *s, size_t n)
{
	char *m = mt_malloc(MT_REDACT_MARKER_LEN + 1);

	mt_redact_marker(r, s, n, m);
	return m;
}

/* Redact p[start, end): a marker of those bytes (a marker already there stays). */
static void redact_span(const struct mt_redact *r, const char *p, size_t start, size_t end, struct edits *e)
{
	if (end <= start || mt_redact_is_marker(p + start, end - start))
		return;
	edit_add(e, start, end, marker_of(r, p + start, end - start));
}

/* ---- text ---- */

static int lc(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int word_start(const char *p, size_t i)
{
	return i == 0 || !(alnum((unsigned char)p[i - 1]) || p[i - 1] == '_');
}

static int prefix_ci(const char *p, size_t n, size_t i, const char *pre)
{
	size_t k = strlen(pre);

	if (i + k > n)
		return 0;
	for (size_t j = 0; j < k; j++)
		if (lc((unsigned char)p[i + j]) != pre[j])
			return 0;
	return 1;
}

/* How many bytes from i are in the set (a strspn bounded by n). */
static size_t run_of(const char *p, size_t n, size_t i, const char *set)
{
	size_t k = i;

	while (k < n && p[k] && strchr(set, p[k]))
		k++;
	return k - i;
}

#define B64URL "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define UPPERNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#define CRED_CHARS B64URL ".~+/="

/*
 * A well-known key format starting at i (at a word start): its length, or 0.
 */
static size_t key_format(const char *p, size_t n, size_t i)
{
	size_t k;

	switch (p[i]) {
	case 's':
		if (prefix_ci(p, n, i, "sk-") && (k = run_of(p, n, i + 3, B64URL)) >= 20)
			return 3 + k;
		break;
	case 'g':
		if (i + 4 <= n && p[i + 1] == 'h' && strchr("pousr", p[i + 2]) && p[i + 2] &&
		    p[i + 3] == '_' && (k = run_of(p, n, i + 4, ALNUM)) >= 30)
			return 4 + k;
		if (n - i >= 11 && !memcmp(p + i, "github_pat_", 11) &&
		    (k = run_of(p, n, i + 11, ALNUM "_")) >= 30)
			return 11 + k;
		if (n - i >= 6 && !memcmp(p + i, "glpat-", 6) && (k = run_of(p, n, i + 6, B64URL)) >= 20)
			return 6 + k;
		break;
	case 'x':
		if (n - i >= 5 && p[i + 1] == 'o' && p[i + 2] == 'x' && p[i + 3] &&
		    strchr("abprs", p[i + 3]) && p[i + 4] == '-' &&
		    (k = run_of(p, n, i + 5, ALNUM "-")) >= 10)
			return 5 + k;
		break;
	case 'A':
		if (n - i >= 20 && !memcmp(p + i, "AKIA", 4) && run_of(p, n, i + 4, UPPERNUM) == 16)
			return 20;
		if (n - i >= 39 && !memcmp(p + i, "AIza", 4) && run_of(p, n, i + 4, B64URL) >= 35)
			return 4 + run_of(p, n, i + 4, B64URL);
		break;
	case 'n':
		if (n - i >= 4 && !memcmp(p + i, "npm_", 4) && (k = run_of(p, n, i + 4, ALNUM)) >= 36)
			return 4 + k;
		break;
	case 'e': {
		/* A JWT: three base64url parts, the first a JSON object ("eyJ"). */
		size_t a, b, c;
		if (n - i < 3 || memcmp(p + i, "eyJ", 3))
			break;
		a = run_of(p, n, i, B64URL);
		if (a < 10 || i + a >= n || p[i + a] != '.')
			break;
		b = run_of(p, n, i + a + 1, B64URL);
		if (b < 10 || i + a + 1 + b >= n || p[i + a + 1 + b] != '.')
			break;
		c = run_of(p, n, i + a + 2 + b, B64URL);
		if (c >= 10)
			return a + b + c + 2;
		break;
	}
	case '-': {
		/* A PEM private key, to its END line (or the end of the text). */
		static const char begin[] = "-----BEGIN ";
		const char *q, *end;
		if (n - i < sizeof(begin) - 1 || memcmp(p + i, begin, sizeof(begin) - 1))
			break;
		q = memchr(p + i, '\n', n - i);
		end = q ? q : p + n;
		if (!memmem(p + i, (size_t)(end - p - (ptrdiff_t)i), "PRIVATE KEY-----", 16))
			break;
		q = memmem(p + i, n - i, "-----END ", 9);
		if (q) {
			const char *e2 = memmem(q + 9, (size_t)(p + n - q - 9), "-----", 5);
			return e2 ? (size_t)(e2 + 5 - (p + i)) : n - i;
		}
		return n - i;
	}
	default: break;
	}
	return 0;
}

/* The value after NAME= / NAME: at i: its span [*s, *e), or 0 when none. */
static int value_after(const char *p, size_t n, size_t i, int to_eol, size_t *s, size_t *e)
{
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (i < n && (p[i] == '"' || p[i] == '\'')) {
		char q = p[i];
		size_t j = i + 1;
		while (j < n && p[j] != q && p[j] != '\n') {
			if (p[j] == '\\' && j + 1 < n)
				j++;
			j++;
		}
		*s = i + 1;
		*e = j < n ? j : n;
	} else {
		size_t j = i;
		while (j < n && p[j] != '\n' && p[j] != '\r' && (to_eol || !strchr(" \t\"',;&)}]>", p[j])))
			j++;
		while (to_eol && j > i && (p[j - 1] == ' ' || p[j - 1] == '\t'))
			j--;
		*s = i;
		*e = j;
	}
	return *e > *s;
}

/* "Bearer X" / "Basic X" at i: the credential's span. */
static int auth_scheme(const char *p, size_t n, size_t i, size_t *s, size_t *e)
{
	size_t k;

	if (prefix_ci(p, n, i, "bearer"))
		k = i + 6;
	else if (prefix_ci(p, n, i, "basic"))
		k = i + 5;
	else
		return 0;
	if (k >= n || (p[k] != ' ' && p[k] != '\t'))
		return 0;
	while (k < n && (p[k] == ' ' || p[k] == '\t'))
		k++;
	size_t len = run_of(p, n, k, CRED_CHARS);
	if (len < 6)
		return 0;
	*s = k;
	*e = k + len;
	return 1;
}

/* Does a query parameter's NAME= start at i (a plain name of 1 to 65 bytes, then "=")? */
static int query_name(const char *p, size_t n, size_t i)
{
	size_t k = i;

	while (k < n && k - i <= 64 &&
	       (alnum((unsigned char)p[k]) || p[k] == '_' || p[k] == '-' || p[k] == '.'))
		k++;
	return k > i && k < n && p[k] == '=';
}

/*
 * A quick look: can the text hold anything the built-in text rules find?
 * (Each case tries only the prefixes that start with its letter: this runs
 * on every header value and message the HTTP tap stores.)
 */
static int text_candidate(const char *p, size_t n)
{
	for (size_t i = 0; i + 2 < n; i++) {
		int hit = 0;
		switch (lc((unsigned char)p[i])) {
		case 'k': hit = prefix_ci(p, n, i, "key"); break;
		case 't': hit = prefix_ci(p, n, i, "tok"); break;
		case 'p': hit = prefix_ci(p, n, i, "pass") || prefix_ci(p, n, i, "pwd"); break;
		case 's': hit = prefix_ci(p, n, i, "secret") || prefix_ci(p, n, i, "sk-"); break;
		case 'a':
			hit = prefix_ci(p, n, i, "auth") || prefix_ci(p, n, i, "akia") ||
			      prefix_ci(p, n, i, "aiza");
			break;
		case 'c': hit = prefix_ci(p, n, i, "cookie") || prefix_ci(p, n, i, "credential"); break;
		case 'b': hit = prefix_ci(p, n, i, "bearer") || prefix_ci(p, n, i, "basic"); break;
		case 'g': hit = prefix_ci(p, n, i, "gh") || prefix_ci(p, n, i, "glpat"); break;
		case 'x': hit = prefix_ci(p, n, i, "xox"); break;
		case 'e': hit = prefix_ci(p, n, i, "eyj"); break;
		case 'n': hit = prefix_ci(p, n, i, "npm_"); break;
		case '-': hit = prefix_ci(p, n, i, "-----"); break;
		case ':': hit = prefix_ci(p, n, i, "://"); break;
		case '?':
		case '&': hit = query_name(p, n, i + 1); break;
		default: break;
		}
		if (hit)
			return 1;
	}
	return 0;
}

/*
 * Tidy the text rules' spans: overlapping ones become one (its marker made
 * again from all its bytes), and none may touch a marker already in p, so
 * that redacting twice changes nothing.
 */
static void merge_spans(const struct mt_redact *r, const char *p, size_t n, struct edits *e)
{
	size_t k = 0;

	qsort(e->v, e->n, sizeof(*e->v), cmp_edit);
	for (size_t i = 0; i < e->n; i++) {
		struct edit *x = &e->v[i];
		const char *m = mt_redact_find_marker(p, n);
		int dropped = 0;
		for (; m && !dropped; m = mt_redact_find_marker(m + 1, n - (size_t)(m + 1 - p)))
			dropped =
				x->start < (size_t)(m - p) + MT_REDACT_MARKER_LEN && (size_t)(m - p) < x->end;
		if (dropped) {
			free(x->text);
			continue;
		}
		if (k && x->start < e->v[k - 1].end) {
			struct edit *y = &e->v[k - 1];
			if (x->end > y->end) {
				y->end = x->end;
				free(y->text);
				y->text = marker_of(r, p + y->start, y->end - y->start);
			}
			free(x->text);
			continue;
		}
		e->v[k++] = *x;
	}
	e->n = k;
}

/* The passwords of URLs with one (scheme://user:password@host), into e. */
static void url_passwords(const struct mt_redact *r, const char *p, size_t n, struct edits *e)
{
	for (const char *q = memmem(p, n, "://", 3); q;
	     q = memmem(q + 3, n - (size_t)(q + 3 - p), "://", 3)) {
		size_t a = (size_t)(q + 3 - p), end = a, colon = 0, at = 0;
		while (end < n && !strchr("/?#\"'<> \t\r\n", p[end]) && p[end])
			end++;
		for (size_t k = a; k < end; k++) {
			if (p[k] == ':' && !colon && !at)
				colon = k;
			else if (p[k] == '@')
				at = k;
		}
		if (colon && at > colon + 1)
			redact_span(r, p, colon + 1, at, e);
	}
}

/* Find the text rules' spans in p (n bytes) and add them to e. */
static void spans(const struct mt_redact *r, const char *p, size_t n, int challenge, struct edits *e);

static void text_spans(const struct mt_redact *r, const char *p, size_t n, struct edits *e)
{
	spans(r, p, n, 0, e);
}

/*
 * text_spans; with challenge, p is an authentication challenge
 * (WWW-Authenticate): its "Bearer" or "Basic" is a scheme followed by
 * parameters (realm, resource_metadata, ...), not a credential.
 */
static void spans(const struct mt_redact *r, const char *p, size_t n, int challenge, struct edits *e)
{
	size_t s, t, first = e->n;

	url_passwords(r, p, n, e);

	if (text_candidate(p, n)) {
		/* Key formats and Bearer/Basic credentials, wherever they are. */
		for (size_t i = 0; i < n; i++) {
			size_t k;
			if (!word_start(p, i))
				continue;
			if ((k = key_format(p, n, i)) > 0) {
				redact_span(r, p, i, i + k, e);
				i += k - 1;
			} else if (!challenge && auth_scheme(p, n, i, &s, &t)) {
				redact_span(r, p, s, t, e);
				i = t - 1;
			}
		}
		/* NAME=VALUE, NAME: VALUE, "NAME": "VALUE", --NAME=VALUE */
		for (size_t i = 0; i < n; i++) {
			if (!word_start(p, i))
				continue;
			size_t j = i;
			while (j < n &&
			       (alnum((unsigned char)p[j]) || p[j] == '_' || p[j] == '-' || p[j] == '.'))
				j++;
			if (j == i)
				continue;
			size_t name_end = j;
			if (j < n && (p[j] == '"' || p[j] == '\''))
				j++;
			while (j < n && (p[j] == ' ' || p[j] == '\t'))
				j++;
			if (j >= n || (p[j] != '=' && p[j] != ':')) {
				i = name_end - 1;
				continue;
			}
			const char *name = p + i;
			size_t nlen = name_end - i;
			/* A URL's query parameter (?NAME=VALUE, &NAME=VALUE): its
			 * name taken as mt_redact_url takes it. */
			int query = i && (p[i - 1] == '?' || p[i - 1] == '&') && j == name_end && p[j] == '=';
			while (nlen && *name == '-') {
				name++;
				nlen--;
			}
			if (query ? http_name(r, name, nlen) == HTTP_PLAIN
				  : !cred_name(r, name, nlen, env_style(name, nlen) ? USE_ENV : USE_MEMBER)) {
				i = name_end - 1;
				continue;
			}
			char norm[32];
			normalize(name, nlen < 31 ? nlen : 31, norm, sizeof(norm));
			int to_eol = !strcmp(norm, "cookie") || !strcmp(norm, "setcookie");
			if (!query &&
			    (!strcmp(norm, "authorization") || !strcmp(norm, "proxyauthorization"))) {
				/* Its value to the end of the line (or of its quotes), the
				 * scheme kept: "Bearer X", "token X", "Basic X", a bare X. */
				if (!value_after(p, n, j + 1, 1, &s, &t)) {
					i = j;
					continue;
				}
				/* (Within quotes around the whole header: -H 'Authorization: X'.) */
				for (size_t q = s; q < t; q++)
					if (p[q] == '\'' || p[q] == '"')
						t = q;
				size_t w0 = s;
				while (w0 < t &&
				       ((p[w0] >= 'a' && p[w0] <= 'z') || (p[w0] >= 'A' && p[w0] <= 'Z')))
					w0++;
				if (w0 > s && w0 - s <= 20 && w0 < t && (p[w0] == ' ' || p[w0] == '\t')) {
					s = w0;
					while (s < t && (p[s] == ' ' || p[s] == '\t'))
						s++;
				}
				if (t - s >= MT_REDACT_MARKER_LEN &&
				    mt_redact_is_marker(p + s, MT_REDACT_MARKER_LEN)) {
					i = t - 1;
					continue;
				}
				redact_span(r, p, s, t, e);
				i = t > i ? t - 1 : i;
				continue;
			}
			size_t v = j + 1;
			while (v < n && (p[v] == ' ' || p[v] == '\t' || p[v] == '"' || p[v] == '\''))
				v++;
			/* Redacted already: a marker, or "Bearer" or "Basic" and a marker. */
			size_t m = v + (prefix_ci(p, n, v, "bearer")  ? 6
					: prefix_ci(p, n, v, "basic") ? 5
								      : 0);
			while (m > v && m < n && (p[m] == ' ' || p[m] == '\t'))
				m++;
			if (n - m >= MT_REDACT_MARKER_LEN &&
			    mt_redact_is_marker(p + m, MT_REDACT_MARKER_LEN)) {
				i = m + MT_REDACT_MARKER_LEN - 1;
				continue;
			}
			if (!auth_scheme(p, n, v, &s, &t) && !value_after(p, n, j + 1, to_eol, &s, &t)) {
				i = j;
				continue;
			}
			redact_span(r, p, s, t, e);
			i = t > i ? t - 1 : i;
		}
	}
	for (size_t k = 0; k < r->nres; k++) {
		size_t at = 0;
		regmatch_t m;
		/* regexec needs a NUL-terminated string: matched piecewise over NUL-free runs. */
		while (at < n) {
			size_t len = strnlen(p + at, n - at);
			char *seg = mt_strndup(p + at, len);
			size_t off = 0;
			while (off <= len &&
			       regexec(&r->res[k], seg + off, 1, &m, off ? REG_NOTBOL : 0) == 0) {
				if (m.rm_eo == m.rm_so) {
					off += (size_t)m.rm_eo + 1;
					continue;
				}
				redact_span(r, p, at + off + (size_t)m.rm_so, at + off + (size_t)m.rm_eo, e);
				off += (size_t)m.rm_eo;
			}
			free(seg);
			at += len + 1;
		}
	}
	if (e->n > first) {
		struct edits mine = {e->v + first, e->n - first, e->n - first};
		merge_spans(r, p, n, &mine);
		e->n = first + mine.n;
	}
}

int mt_redact_text(const struct mt_redact *r, const char *p, size_t n, struct mt_buf *out)
{
	struct edits e = {NULL, 0, 0};
	int rc = 0;

	text_spans(r, p, n, &e);
	if (e.n) {
		apply(p, n, &e, out);
		rc = 1;
	}
	edits_release(&e);
	return rc;
}

int mt_redact_line(const struct mt_redact *r, int *state, const char *p, size_t n, struct mt_buf *out)
{
	static const char end_mark[] = "-----END ";
	const char *b, *e;

	if (*state) {
		/* Inside a private key: the whole line, its terminator kept; its END
		 * line ends it, and stays. */
		size_t body = n;
		e = memmem(p, n, end_mark, sizeof(end_mark) - 1);
		if (e) {
			*state = 0;
			body = (size_t)(e - p);
		}
		while (body && (p[body - 1] == '\n' || p[body - 1] == '\r'))
			body--;
		if (!body || mt_redact_is_marker(p, body))
			return 0;
		char m[MT_REDACT_MARKER_LEN + 1];
		mt_redact_marker(r, p, body, m);
		mt_buf_reset(out);
		mt_buf_puts(out, m);
		mt_buf_append(out, p + body, n - body);
		return 1;
	}
	b = memmem(p, n, "-----BEGIN ", 11);
	if (b && memmem(b, n - (size_t)(b - p), "PRIVATE KEY-----", 16) &&
	    !memmem(b, n - (size_t)(b - p), end_mark, sizeof(end_mark) - 1)) {
		/* Its body comes on the next lines; the BEGIN line says no secret. */
		*state = 1;
		size_t head = (size_t)(b - p);
		struct mt_buf pre = MT_BUF_INIT;
		int rc = mt_redact_text(r, p, head, &pre);
		if (rc) {
			mt_buf_reset(out);
			mt_buf_append(out, pre.data, pre.len);
			mt_buf_append(out, b, n - head);
		}
		mt_buf_release(&pre);
		return rc;
	}
	return mt_redact_text(r, p, n, out);
}

/* ---- JSON ---- */

struct walk {
	const struct mt_redact *r;
	const char *base; /* the message */
	struct edits *e;
	struct mt_buf path;
	struct mt_buf tmp;
	struct mt_buf tmp2;
};

/* Does the concrete path (a.b[2].c) fall under the rule (a.*[*], a prefix)? */
static int path_covers(const char *rule, const char *path)
{
	while (*rule) {
		if (*rule == '*' && rule[1] != ']') {
			/* any member name */
			if (*path == '[' || *path == '\0')
				return 0;
			path += strcspn(path, ".[");
			rule++;
		} else if (rule[0] == '[' && rule[1] == '*' && rule[2] == ']') {
			if (*path != '[')
				return 0;
			path = strchr(path, ']');
			if (!path)
				return 0;
			path++;
			rule += 3;
		} else {
			if (*rule != *path)
				return 0;
			rule++;
			path++;
		}
	}
	return *path == '\0' || *path == '.' || *path == '[';
}

static int path_listed(const struct walk *w)
{
	for (size_t i = 0; i < w->r->npaths; i++)
		if (path_covers(w->r->paths[i], w->path.data ? w->path.data : ""))
			return 1;
	return 0;
}

/* A JSON string token for the bytes s (n), into out. */
static void json_quote(const char *s, size_t n, struct mt_buf *out)
{
	mt_buf_putc(out, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = c == '"'    ? "\\\""
				  : c == '\\' ? "\\\\"
				  : c == '\n' ? "\\n"
				  : c == '\r' ? "\\r"
				  : c == '\t' ? "\\t"
				  : c == '\b' ? "\\b"
				  : c == '\f' ? "\\f"
					      : NULL;
		if (esc) {
			mt_buf_puts(out, esc);
		} else if (c < 0x20) {
			mt_buf_printf(out, "\\u%04x", c);
		} else {
			mt_buf_putc(out, (char)c);
		}
	}
	mt_buf_putc(out, '"');
}

/* A string value: all of it (named a credential, or a listed path), or the text rules inside. */
static void walk_string(struct walk *w, struct mt_span tok, int whole)
{
	size_t start = (size_t)(tok.p - w->base), end = start + tok.n;

	if (mt_json_string(tok, &w->tmp))
		return;
	if (whole || (w->r->npaths && path_listed(w))) {
		if (mt_redact_is_marker(w->tmp.data ? w->tmp.data : "", w->tmp.len))
			return;
		char m[MT_REDACT_MARKER_LEN + 1];
		mt_redact_marker(w->r, w->tmp.data ? w->tmp.data : "", w->tmp.len, m);
		edit_add(w->e, start, end, mt_asprintf("\"%s\"", m));
		return;
	}
	/* Inside: on the decoded text, then quoted again when anything was found. */
	if (!w->r->nres && !text_candidate(tok.p, tok.n) && !memchr(tok.p, '\\', tok.n))
		return;
	struct edits inner = {NULL, 0, 0};
	text_spans(w->r, w->tmp.data ? w->tmp.data : "", w->tmp.len, &inner);
	if (inner.n) {
		struct mt_buf red = MT_BUF_INIT;
		apply(w->tmp.data ? w->tmp.data : "", w->tmp.len, &inner, &red);
		mt_buf_reset(&w->tmp2);
		json_quote(red.data ? red.data : "", red.len, &w->tmp2);
		edit_add(w->e, start, end, mt_strndup(w->tmp2.data, w->tmp2.len));
		mt_buf_release(&red);
	}
	edits_release(&inner);
}

#define WALK_DEPTH 256

/* A member name's credential level (see cred_name), or -1 when its key does not decode. */
static int member_cred(struct walk *w, struct mt_span key)
{
	const char *name = key.p + 1;
	size_t n = key.n - 2;

	if (memchr(key.p, '\\', key.n)) {
		if (mt_json_string(key, &w->tmp))
			return -1;
		name = w->tmp.data ? w->tmp.data : "";
		n = w->tmp.len;
	}
	return cred_name(w->r, name, n, env_style(name, n) ? USE_ENV : USE_MEMBER);
}

/*
 * The header-list shape, {"name": "Authorization", "value": "..."}: does the
 * object name a credential in its "name" (or "key", "header") member?
 */
static int names_credential(struct walk *w, struct mt_span obj)
{
	struct mt_span key, val;
	size_t pos = 0;

	while (mt_json_next_member(obj, &pos, &key, &val) == 1) {
		if (!((key.n == 6 && !memcmp(key.p, "\"name\"", 6)) ||
		      (key.n == 5 && !memcmp(key.p, "\"key\"", 5)) ||
		      (key.n == 8 && !memcmp(key.p, "\"header\"", 8))) ||
		    !val.n || val.p[0] != '"' || mt_json_string(val, &w->tmp2))
			continue;
		const char *v = w->tmp2.data ? w->tmp2.data : "";
		if (cred_name(w->r, v, w->tmp2.len, env_style(v, w->tmp2.len) ? USE_ENV : USE_MEMBER))
			return 1;
	}
	return 0;
}

/*
 * Walk a value. cred: 0, or the level of the credential name it is under
 * (everything below a credential is one: {"credentials": {"pw": ...}}).
 */
static void walk_value(struct walk *w, struct mt_span v, int cred, int depth)
{
	struct mt_span key, val;
	size_t pos = 0, mark = w->path.len;

	if (!v.n || depth > WALK_DEPTH)
		return;
	switch (v.p[0]) {
	case '"': walk_string(w, v, cred); break;
	case '{': {
		int header = !cred && names_credential(w, v);
		while (mt_json_next_member(v, &pos, &key, &val) == 1) {
			int c = cred;
			if (key.n >= 2) {
				int mine = member_cred(w, key);
				if (mine < 0)
					continue;
				if (mine > c)
					c = mine;
				if (header && key.n == 7 && !memcmp(key.p, "\"value\"", 7))
					c = c ? c : 1;
				if (w->r->npaths) {
					if (mt_json_string(key, &w->tmp))
						continue;
					if (w->path.len)
						mt_buf_putc(&w->path, '.');
					mt_buf_append(&w->path, w->tmp.data ? w->tmp.data : "", w->tmp.len);
				}
			}
			walk_value(w, val, c, depth + 1);
			w->path.len = mark;
			if (w->path.data)
				w->path.data[mark] = '\0';
		}
		break;
	}
	case '[': {
		size_t i = 0;
		while (mt_json_next_element(v, &pos, &val) == 1) {
			if (w->r->npaths)
				mt_buf_printf(&w->path, "[%zu]", i);
			walk_value(w, val, cred, depth + 1); /* an array of credentials is one */
			w->path.len = mark;
			if (w->path.data)
				w->path.data[mark] = '\0';
			i++;
		}
		break;
	}
	default:
		/* A number where the user said a credential is (a PIN, a card number):
		 * a marker string in its place. The built-in names take strings only:
		 * numbers under them are counts (inputTokens). */
		if ((v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9')) &&
		    (cred >= 2 || (w->r->npaths && path_listed(w)))) {
			char m[MT_REDACT_MARKER_LEN + 1];
			size_t start = (size_t)(v.p - w->base);
			mt_redact_marker(w->r, v.p, v.n, m);
			edit_add(w->e, start, start + v.n, mt_asprintf("\"%s\"", m));
		}
		break;
	}
}

/* Could a JSON message hold anything to redact, with only the built-in rules? */
static int json_candidate(const struct mt_redact *r, const char *p, size_t n)
{
	/* (\u escapes can spell anything: such a message is looked at whole.) */
	return r->npaths || r->nres || r->nnames || text_candidate(p, n) || memmem(p, n, "\\u", 2);
}

int mt_redact_message(const struct mt_redact *r, const char *p, size_t n, enum mt_kind kind,
		      struct mt_buf *out)
{
	struct edits e = {NULL, 0, 0};
	int rc = 0;

	if (!r)
		return 0;
	if (kind == MT_INVALID)
		return mt_redact_text(r, p, n, out);
	if (!json_candidate(r, p, n))
		return 0;
	size_t a = 0, b = n;
	while (a < b && strchr(" \t\r\n", p[a]))
		a++;
	while (b > a && strchr(" \t\r\n", p[b - 1]))
		b--;
	struct walk w = {r, p, &e, MT_BUF_INIT, MT_BUF_INIT, MT_BUF_INIT};
	walk_value(&w, (struct mt_span){p + a, b - a}, 0, 0);
	if (e.n) {
		apply(p, n, &e, out);
		rc = 1;
	}
	mt_buf_release(&w.path);
	mt_buf_release(&w.tmp);
	mt_buf_release(&w.tmp2);
	edits_release(&e);
	return rc;
}

/* ---- command lines ---- */

char *mt_redact_command(const struct mt_redact *r, char *const *argv)
{
	struct mt_buf b = MT_BUF_INIT, red = MT_BUF_INIT;
	int next_secret = 0;

	for (size_t i = 0; argv[i]; i++) {
		const char *a = argv[i];
		size_t n = strlen(a);
		const char *arg = a;
		char m[MT_REDACT_MARKER_LEN + 1];

		if (i)
			mt_buf_putc(&b, ' ');
		if (r && next_secret && !mt_redact_is_marker(a, n)) {
			mt_redact_marker(r, a, n, m);
			arg = m;
		} else if (r) {
			const char *eq = strchr(a, '=');
			const char *name = a;
			while (*name == '-')
				name++;
			size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
			int opt = a[0] == '-' && a[1];
			/* --NAME=VALUE, NAME=VALUE or --NAME when NAME is a plain name; in
			 * anything else (a script: sh -c '... --password=x ...') the text
			 * rules find what follows a name, to its end. */
			int plain = nlen && nlen == strspn(name, "abcdefghijklmnopqrstuvwxyz"
								 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");
			int cred = plain && (name > a || eq)
					   ? cred_name(r, name, nlen,
						       !opt && env_style(name, nlen) ? USE_ENV : USE_MEMBER)
					   : 0;
			if (cred && eq && eq[1] && !mt_redact_is_marker(eq + 1, strlen(eq + 1))) {
				mt_buf_reset(&red);
				mt_buf_append(&red, a, (size_t)(eq + 1 - a));
				mt_redact_marker(r, eq + 1, strlen(eq + 1), m);
				mt_buf_puts(&red, m);
				arg = red.data;
			} else if (mt_redact_text(r, a, n, &red)) {
				arg = red.data;
			}
			next_secret = opt && !eq && cred;
			mt_shell_quote(&b, arg);
			continue;
		}
		next_secret = 0;
		mt_shell_quote(&b, arg);
	}
	mt_buf_release(&red);
	return b.data ? b.data : mt_strdup("");
}

/* ---- HTTP ---- */

int mt_redact_header(const struct mt_redact *r, const char *name, const char *value, size_t n,
		     struct mt_buf *out)
{
	enum http_cred what = http_name(r, name, strlen(name));
	struct edits e = {NULL, 0, 0};
	int rc = 0;

	if (what == HTTP_SCHEME) {
		/* The scheme stays: "Bearer [redacted:...]"; a value of one word is
		 * all credential. */
		size_t s = 0;
		while (s < n && value[s] != ' ')
			s++;
		while (s < n && value[s] == ' ')
			s++;
		redact_span(r, value, s < n ? s : 0, n, &e);
	} else if (what == HTTP_COOKIES || what == HTTP_SET_COOKIE) {
		/* name=value; name2=value2 (Set-Cookie: only the first pair is the cookie). */
		size_t i = 0;
		while (i < n) {
			const char *eq = memchr(value + i, '=', n - i);
			const char *semi = memchr(value + i, ';', n - i);
			size_t end = semi ? (size_t)(semi - value) : n;
			if (eq && (size_t)(eq - value) < end)
				redact_span(r, value, (size_t)(eq - value) + 1, end, &e);
			else /* a cookie without a name is all value (RFC 6265bis) */
				redact_span(r, value, i, end, &e);
			if (what == HTTP_SET_COOKIE)
				break;
			i = end + 1;
			while (i < n && value[i] == ' ')
				i++;
		}
	} else if (what == HTTP_WHOLE) {
		redact_span(r, value, 0, n, &e);
	} else {
		char norm[32];
		normalize(name, strnlen(name, 31), norm, sizeof(norm));
		spans(r, value, n, !strcmp(norm, "wwwauthenticate") || !strcmp(norm, "proxyauthenticate"),
		      &e);
	}
	if (e.n) {
		apply(value, n, &e, out);
		rc = 1;
	}
	edits_release(&e);
	return rc;
}

/*
 * The values of the credential-named parameters of a URL's query (url: up to
 * a "#") or of a body's URL-encoded form fields (a "#" is data; a field counts
 * only when its name is a plain one, [A-Za-z0-9_.-]: text is no form), from
 * i in p: NAME=VALUE pairs separated by "&".
 */
static void query_spans(const struct mt_redact *r, const char *p, size_t i, size_t n, int url,
			struct edits *e)
{
	while (i < n) {
		size_t amp = i;
		while (amp < n && p[amp] != '&' && !(url && p[amp] == '#'))
			amp++;
		const char *eq = memchr(p + i, '=', amp - i);
		if (eq && (url || query_name(p, n, i)) &&
		    http_name(r, p + i, (size_t)(eq - p) - i) != HTTP_PLAIN)
			redact_span(r, p, (size_t)(eq - p) + 1, amp, e);
		if (amp < n && p[amp] == '#')
			break;
		i = amp + 1;
	}
}

int mt_redact_url(const struct mt_redact *r, const char *url, size_t n, struct mt_buf *out)
{
	struct edits e = {NULL, 0, 0};
	const char *q = memchr(url, '?', n), *scheme = memmem(url, n, "://", 3);
	size_t end = q ? (size_t)(q - url) : n;
	int rc = 0;

	/* user:password@host */
	if (scheme) {
		size_t a = (size_t)(scheme - url) + 3, b = a;
		while (b < end && url[b] != '/' && url[b] != '@')
			b++;
		if (b < end && url[b] == '@') {
			const char *colon = memchr(url + a, ':', b - a);
			if (colon)
				redact_span(r, url, (size_t)(colon - url) + 1, b, &e);
		}
	}
	if (q)
		query_spans(r, url, end + 1, n, 1, &e);
	if (e.n) {
		apply(url, n, &e, out);
		rc = 1;
	}
	edits_release(&e);
	return rc;
}

int mt_redact_body(const struct mt_redact *r, const char *p, size_t n, struct mt_buf *out)
{
	struct mt_class c;
	struct edits e = {NULL, 0, 0};
	int rc = 0;

	if (!r)
		return 0;
	mt_classify(p, n, &c);
	if (c.kind != MT_INVALID)
		return mt_redact_message(r, p, n, c.kind, out);
	query_spans(r, p, 0, n, 0, &e);
	spans(r, p, n, 0, &e);
	if (e.n) /* (the form's and the text rules' spans as one) */
		merge_spans(r, p, n, &e);
	if (e.n) {
		apply(p, n, &e, out);
		rc = 1;
	}
	edits_release(&e);
	return rc;
}
