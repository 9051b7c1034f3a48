/*
 * httphdr.c - the HTTP tap's header rules (see httphdr.h). Lists are short
 * (the HTTP library bounds their size), so lookups are plain scans.
 */
#include "tap/http/httphdr.h"
#include "tap/http/httpsess.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

int mt_hdr_hop_by_hop(const char *name)
{
	static const char *const hop[] = {"Connection", "Proxy-Connection",  "Keep-Alive", "TE",
					  "Trailer",    "Transfer-Encoding", "Upgrade"};

	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (!strcasecmp(name, hop[i]))
			return 1;
	return 0;
}

/*
 * The next element of the comma list at *s: [*b, *e) with the blanks around
 * it left out, *s moved past its comma. Commas inside a quoted string do not
 * end it. 0 when the list is done.
 */
static int next_element(const char **s, const char **b, const char **e)
{
	const char *p = *s;
	int quoted = 0;

	if (!*p)
		return 0;
	while (is_blank(*p))
		p++;
	*b = p;
	for (; *p && (quoted || *p != ','); p++) {
		if (quoted && *p == '\\' && p[1])
			p++;
		else if (*p == '"')
			quoted = !quoted;
	}
	*e = p;
	while (*e > *b && is_blank((*e)[-1]))
		(*e)--;
	*s = *p ? p + 1 : p;
	return 1;
}

/* Is name (whole) spelled [b, e) in any case? */
static int same_name(const char *name, const char *b, const char *e)
{
	size_t n = (size_t)(e - b);

	return n && strlen(name) == n && !strncasecmp(name, b, n);
}

/* Does a Connection field of h name the field called name? */
static int named_by_connection(const struct mt_hdr *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = h[i].value, *b, *e;
		if (strcasecmp(h[i].name, "Connection"))
			continue;
		while (next_element(&s, &b, &e))
			if (same_name(name, b, e))
				return 1;
	}
	return 0;
}

size_t mt_hdr_filter(const struct mt_hdr *h, size_t n, enum mt_hdr_dir dir, unsigned char *keep,
		     struct mt_hdr_dropped *dropped)
{
	struct mt_hdr_dropped d;
	size_t kept = 0;

	memset(&d, 0, sizeof(d));
	for (size_t i = 0; i < n; i++) {
		const char *name = h[i].name;
		int drop = mt_hdr_hop_by_hop(name) || named_by_connection(h, n, name);

		if (!strcasecmp(name, "Content-Length")) {
			/* The body is framed again on the other side, both ways. */
			drop = 1;
			if (!d.content_length)
				d.content_length = h[i].value;
			else if (strcmp(d.content_length, h[i].value))
				d.content_length_differs = 1;
			d.content_lengths++;
		} else if (dir == MT_HDR_REQUEST) {
			if (!strcasecmp(name, "Accept-Encoding")) {
				drop = 1;
				d.accept_encoding = 1;
			} else if (!strcasecmp(name, "Host") || !strcasecmp(name, "Expect")) {
				drop = 1;
			}
		}
		keep[i] = !drop;
		if (drop)
			d.count++;
		else
			kept++;
	}
	if (dropped)
		*dropped = d;
	return kept;
}

const char *mt_hdr_get(const struct mt_hdr *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(h[i].name, name))
			return h[i].value;
	return NULL;
}

/* The first byte of [p, e) that is not a blank, or e. */
static const char *skip_blanks(const char *p, const char *e)
{
	while (p < e && is_blank(*p))
		p++;
	return p;
}

/* Does the parameter list [p, e) (after the media type) say q=0? */
static int q_zero(const char *p, const char *e)
{
	while (p < e) {
		const char *semi = memchr(p, ';', (size_t)(e - p));
		const char *end = semi ? semi : e;
		p = skip_blanks(p, end);
		if (end - p >= 2 && (*p == 'q' || *p == 'Q') && p[1] == '=') {
			const char *v = p + 2;
			const char *ve = end;
			while (ve > v && is_blank(ve[-1]))
				ve--;
			/* "0", "0.", "0.0", "0.000": RFC 9110's qvalue of nothing. */
			if (v < ve && *v == '0') {
				v++;
				if (v < ve && *v == '.')
					v++;
				while (v < ve && *v == '0')
					v++;
				return v == ve;
			}
			return 0;
		}
		p = semi ? semi + 1 : e;
	}
	return 0;
}

int mt_hdr_has_token(const char *value, const char *token)
{
	const char *s = value, *b, *e;

	if (!value || !token)
		return 0;
	while (next_element(&s, &b, &e)) {
		const char *semi = memchr(b, ';', (size_t)(e - b));
		const char *te = semi ? semi : e;
		while (te > b && is_blank(te[-1]))
			te--;
		if (same_name(token, b, te) && !(semi && q_zero(semi + 1, e)))
			return 1;
	}
	return 0;
}

/*
 * The length of the well-formed UTF-8 sequence at p (n bytes left), or 0:
 * no overlong forms, no surrogates, nothing above U+10FFFF.
 */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len;
	unsigned lo = 0x80, hi = 0xBF;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		len = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		len = 3;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	/* The second byte's range is what rules out overlongs and surrogates. */
	if (p[0] == 0xE0)
		lo = 0xA0;
	else if (p[0] == 0xED)
		hi = 0x9F;
	else if (p[0] == 0xF0)
		lo = 0x90;
	else if (p[0] == 0xF4)
		hi = 0x8F;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return len;
}

/*
 * A JSON string for s (n bytes) onto out. A byte that does not start a
 * well-formed UTF-8 sequence becomes \ufffd: JSON text is Unicode, and the
 * stored copy is for reading (the proxy forwards the bytes themselves).
 */
static void json_str(const char *s, size_t n, struct mt_buf *out)
{
	const unsigned char *p = (const unsigned char *)s;

	mt_buf_putc(out, '"');
	for (size_t i = 0; i < n;) {
		size_t start = i;
		/* A run of plain ASCII goes in one append. */
		while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
			i++;
		mt_buf_append(out, s + start, i - start);
		if (i == n)
			break;
		if (p[i] == '"' || p[i] == '\\') {
			mt_buf_putc(out, '\\');
			mt_buf_putc(out, (char)p[i++]);
		} else if (p[i] < 0x20) {
			static const char hex[] = "0123456789abcdef";
			char esc[7] = {'\\', 'u', '0', '0', hex[p[i] >> 4], hex[p[i] & 15], 0};
			mt_buf_append(out, esc, 6);
			i++;
		} else {
			size_t len = utf8_len(p + i, n - i);
			if (len) {
				mt_buf_append(out, s + i, len);
				i += len;
			} else {
				mt_buf_puts(out, "\\ufffd");
				i++;
			}
		}
	}
	mt_buf_putc(out, '"');
}

int mt_hdr_json(const struct mt_hdr *h, size_t n, const struct mt_redact *r, struct mt_buf *out)
{
	struct mt_buf red = MT_BUF_INIT;
	int any = 0;

	mt_buf_reset(out);
	mt_buf_putc(out, '[');
	for (size_t i = 0; i < n; i++) {
		const char *v = h[i].value;
		size_t vn = strlen(v);
		if (r && mt_redact_header(r, h[i].name, v, vn, &red)) {
			v = red.data;
			vn = red.len;
			any = 1;
		}
		if (i)
			mt_buf_putc(out, ',');
		mt_buf_putc(out, '[');
		json_str(h[i].name, strlen(h[i].name), out);
		mt_buf_putc(out, ',');
		json_str(v, vn, out);
		mt_buf_putc(out, ']');
	}
	mt_buf_putc(out, ']');
	mt_buf_release(&red);
	return any;
}

int mt_target_redact(const char *target, const struct mt_redact *r, struct mt_buf *out)
{
	struct mt_buf url = MT_BUF_INIT;
	const char *s = target;
	size_t n = strlen(target);
	int rc = 0;

	if (mt_redact_url(r, target, n, &url)) {
		s = url.data;
		n = url.len;
		rc = 1;
	}
	/* Key formats in the path too (a webhook's /hooks/ghp_...). */
	if (mt_redact_text(r, s, n, out)) {
		rc = 1;
	} else if (rc) {
		mt_buf_reset(out);
		mt_buf_append(out, s, n);
	}
	mt_buf_release(&url);
	return rc;
}

/* RFC 9110 5.6.2's tchar. */
static int is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A Transfer-Encoding list that is chunked alone (case-insensitive, OWS about it). */
static int chunked_alone(const char *v)
{
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n == 7 && !strncasecmp(v, "chunked", 7);
}

const char *mt_hdr_framing_problem(const struct mt_hdr *h, size_t n, int http11)
{
	size_t hosts = 0, lengths = 0, te = 0;

	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = (const unsigned char *)h[i].name;
		if (!*p)
			return "a header field with an empty name";
		for (; *p; p++)
			if (!is_tchar(*p))
				return *p == ' ' || *p == '\t'
					       ? "whitespace in a header field's name (before its colon)"
					       : "a header field name that is not a token";
		for (p = (const unsigned char *)h[i].value; *p; p++)
			if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
				return "a control byte in a header field's value";
		if (!strcasecmp(h[i].name, "Host")) {
			hosts++;
			if (!*h[i].value || strchr(h[i].value, '@'))
				return "a Host that is empty or names a user";
		} else if (!strcasecmp(h[i].name, "Content-Length")) {
			const char *v = h[i].value;
			lengths++;
			if (!*v || strspn(v, "0123456789") != strlen(v))
				return "a Content-Length that is not one number";
		} else if (!strcasecmp(h[i].name, "Transfer-Encoding")) {
			/* The tap decodes chunked alone: a body coded otherwise (gzip,
			 * chunked) would go upstream decoded of its chunks only, its
			 * Transfer-Encoding dropped. */
			if (te++ || !chunked_alone(h[i].value))
				return "a Transfer-Encoding other than chunked alone";
		}
	}
	if (lengths > 1)
		return "more than one Content-Length field";
	if (te && lengths)
		return "both Transfer-Encoding and Content-Length";
	if (te && !http11)
		return "Transfer-Encoding in an HTTP/1.0 request";
	if (hosts > 1)
		return "more than one Host field";
	if (!hosts && http11)
		return "no Host field in an HTTP/1.1 request";
	return NULL;
}

const char *mt_target_problem(const char *target, const char *method)
{
	if (!*target)
		return "an empty request target";
	for (const unsigned char *p = (const unsigned char *)target; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return "a space or a control byte in the request target";
	if (!strcmp(target, "*"))
		return strcmp(method, "OPTIONS") ? "an asterisk target for another method than OPTIONS"
						 : NULL;
	if (target[0] != '/')
		return "a request target that is not a path (origin form)";
	if (strchr(target, '#'))
		return "a fragment ('#') in the request target";
	return NULL;
}

/* "METHOD SP target SP HTTP/1.d" (n bytes, its CRLF not counted), exactly. */
static int request_line_sound(const char *p, size_t n)
{
	size_t i = 0, t;

	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (!i || i >= n || p[i] != ' ')
		return 0;
	t = ++i;
	while (i < n && p[i] != ' ' && (unsigned char)p[i] > 0x20 && p[i] != 0x7f)
		i++;
	if (i == t || i >= n || p[i] != ' ')
		return 0;
	i++;
	return n - i == 8 && !memcmp(p + i, "HTTP/1.", 7) && p[i + 7] >= '0' && p[i + 7] <= '9';
}

const char *mt_head_problem(const char *p, size_t n, size_t *len)
{
	size_t i = 0;
	int first = 1;

	*len = 0;
	while (i < n) {
		const char *line = p + i;
		const char *lf = memchr(line, '\n', n - i);
		size_t ln;
		if (!lf) {
			/* (a line not ended yet: its bytes so far are looked at) */
			ln = n - i;
		} else {
			if (lf == line || lf[-1] != '\r')
				return "a line not ended by CRLF";
			ln = (size_t)(lf - line) - 1;
		}
		if (lf && ln == 0) {
			if (first)
				return "an empty line before the request line";
			*len = (size_t)(lf + 1 - p);
			return NULL;
		}
		if (first && lf && !request_line_sound(line, ln))
			return "a request line that is not METHOD SP target SP HTTP/1.x";
		if (!first && (line[0] == ' ' || line[0] == '\t'))
			return "an obsolete line folding (a field line that begins with a blank)";
		for (size_t k = 0; k < ln; k++) {
			unsigned char ch = (unsigned char)line[k];
			if (ch == '\r')
				return "a CR not followed by LF";
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return "a control byte in the head";
		}
		if (!first && lf) {
			const char *colon = memchr(line, ':', ln);
			if (!colon)
				return "a field line without a colon";
			if (colon == line)
				return "an empty field name";
			for (const char *q = line; q < colon; q++)
				if (!is_tchar((unsigned char)*q))
					return "a field name that is not a token (a space before the colon?)";
		}
		if (!lf)
			return NULL;
		first = 0;
		i = (size_t)(lf + 1 - p);
	}
	return NULL;
}

void mt_head_split(const char *p, size_t n, struct mt_head_split *out)
{
	const char *end = memmem(p, n, "\r\n\r\n", 4);
	const char *q, *eol;
	char *t;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	if (end)
		n = (size_t)(end - p) + 2;
	/* Room for every string, NUL-ended: never more than the bytes and a NUL each. */
	t = out->text = mt_malloc(2 * n + 4);
	eol = memchr(p, '\n', n);
	eol = eol ? eol : p + n;
	{
		size_t ll = (size_t)(eol - p);
		const char *le, *sp, *last;
		if (ll && p[ll - 1] == '\r')
			ll--;
		le = p + ll;
		sp = memchr(p, ' ', ll);
		last = le;
		while (last > p && last[-1] != ' ')
			last--;
		out->method = t;
		if (sp) {
			memcpy(t, p, (size_t)(sp - p));
			t += sp - p;
		}
		*t++ = '\0';
		out->target = t;
		if (sp && last - 1 > sp) {
			memcpy(t, sp + 1, (size_t)(last - 1 - sp - 1));
			t += last - 1 - sp - 1;
		}
		*t++ = '\0';
	}
	for (q = eol < p + n ? eol + 1 : p + n; q < p + n;) {
		const char *le = memchr(q, '\n', (size_t)(p + n - q)), *colon;
		const char *ve;
		if (!le)
			le = p + n;
		ve = le > q && le[-1] == '\r' ? le - 1 : le;
		colon = memchr(q, ':', (size_t)(ve - q));
		if (ve > q && colon) {
			const char *v = colon + 1;
			if (out->nh == cap) {
				cap = cap ? 2 * cap : 16;
				out->h = mt_realloc(out->h, cap * sizeof(*out->h));
			}
			out->h[out->nh].name = t;
			memcpy(t, q, (size_t)(colon - q));
			t += colon - q;
			*t++ = '\0';
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			out->h[out->nh].value = t;
			memcpy(t, v, (size_t)(ve - v));
			t += ve - v;
			*t++ = '\0';
			out->nh++;
		}
		q = le + 1;
	}
}

void mt_head_split_free(struct mt_head_split *s)
{
	free(s->text);
	free(s->h);
	memset(s, 0, sizeof(*s));
}

const char *mt_chunked_problem(const unsigned char *p, size_t n)
{
	size_t i = 0;

	for (;;) {
		uint64_t size = 0;
		size_t digits = 0;
		while (i < n && isxdigit(p[i])) {
			if (++digits > 16)
				return "a chunk size of more than 16 hex digits";
			size = size * 16 + (uint64_t)(isdigit(p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
			i++;
		}
		if (!digits)
			return "a chunk size line that does not begin with hex digits";
		if (i < n && p[i] == ';')
			while (i < n && p[i] != '\r' && (p[i] >= 0x20 || p[i] == '\t') && p[i] != 0x7f)
				i++;
		if (i + 2 > n || p[i] != '\r' || p[i + 1] != '\n')
			return "a chunk size line not ended by CRLF";
		i += 2;
		if (!size)
			break;
		if (size > n - i || n - i - size < 2)
			return "a chunk shorter than its size";
		i += size;
		if (p[i] != '\r' || p[i + 1] != '\n')
			return "a chunk's data not followed by CRLF";
		i += 2;
	}
	/* The trailers, then the blank line that ends the body. */
	for (;;) {
		size_t s0 = i;
		while (i < n && p[i] != '\r' && p[i] != '\n' && (p[i] >= 0x20 || p[i] == '\t') &&
		       p[i] != 0x7f)
			i++;
		if (i + 2 > n || p[i] != '\r' || p[i + 1] != '\n')
			return "a trailer line not ended by CRLF";
		if (i > s0) {
			/* A trailer field: a token, a colon, its value. */
			size_t k = s0;
			while (k < i && is_tchar(p[k]))
				k++;
			if (k == s0 || k == i || p[k] != ':')
				return "a trailer field whose name is not a token";
		}
		i += 2;
		if (i - s0 == 2)
			break;
	}
	return i == n ? NULL : "bytes after the chunked body's end";
}

const char *mt_request_refusal(const char *raw, size_t n, size_t *len, const char *method, const char *target,
			       const struct mt_hdr *h, size_t nh, int http11, int *status)
{
	const char *bad = mt_head_problem(raw, n, len), *path = hs_uri_target(target);

	*status = 400;
	if (bad)
		return bad;
	if (!strcmp(method, "CONNECT")) {
		*status = 405;
		return "CONNECT (a tunnel) through a reverse proxy";
	}
	bad = mt_target_problem(path, method);
	if (!bad && path != target)
		bad = mt_target_problem(target + strcspn(target, "/"), method);
	return bad ? bad : mt_hdr_framing_problem(h, nh, http11);
}

/* Two spaces or more in the first line of raw? */
static int two_spaces(const char *raw, size_t n)
{
	int spaces = 0;

	for (size_t i = 0; i < n && raw[i] != '\n' && spaces < 2; i++)
		spaces += raw[i] == ' ';
	return spaces == 2;
}

const char *mt_head_split_refusal(const char *raw, size_t n, struct mt_head_split *sp)
{
	const char *bad = NULL;
	size_t len;

	mt_head_split(raw, n, sp);
	/* (Only a request line with a target and a version is read on: "HELLO
	 * THERE" has no empty target and no missing Host, but a bad line.) */
	if (sp->method[0] && (sp->target[0] || two_spaces(raw, n))) {
		bad = mt_target_problem(hs_uri_target(sp->target), sp->method);
		if (!bad)
			bad = mt_hdr_framing_problem(sp->h, sp->nh, 1);
	}
	return bad ? bad : mt_head_problem(raw, n, &len);
}

int mt_hdr_expects_continue(const struct mt_hdr *h, size_t nh, int major, int minor)
{
	const char *ex = mt_hdr_get(h, nh, "Expect");

	return ex && !strcasecmp(ex, "100-continue") && major == 1 && minor >= 1;
}

const char *mt_http_reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Payload Too Large";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}
