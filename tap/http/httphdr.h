/*
 * httphdr.h - the header rules of the HTTP tap, a transparent reverse proxy:
 * which fields go on to the other side, a few lookups, and the JSON form in
 * which headers are stored. Pure functions over lists of (name, value)
 * pairs; no I/O.
 *
 * What the proxy does not forward: the hop-by-hop fields (RFC 9110 section
 * 7.6.1) and every field a Connection header names, since they describe one
 * connection, not the message; and the fields the proxy sets itself on its
 * own connection (the request's Host, Expect and Accept-Encoding, since it
 * asks the upstream for identity so that it can read the body, and
 * Content-Length both ways, since the body is framed again). Everything
 * else (Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, credentials,
 * cookies, CORS, unknown X- fields, ...) goes on in order, duplicates
 * included, byte for byte.
 */
#ifndef MCPTAP_HTTPHDR_H
#define MCPTAP_HTTPHDR_H

#include <stddef.h>

#include "schema/redact.h"
#include "schema/util.h"

/* One header field; both strings borrowed, NUL-terminated. */
struct mt_hdr {
	const char *name;
	const char *value;
};

/* Which message a list belongs to. */
enum mt_hdr_dir {
	MT_HDR_REQUEST,  /* client to upstream */
	MT_HDR_RESPONSE, /* upstream to client */
};

/* What the filter dropped that the proxy must act on. */
struct mt_hdr_dropped {
	unsigned count;             /* fields dropped */
	int accept_encoding;        /* a request: an Accept-Encoding was there */
	const char *content_length; /* the first Content-Length's value (borrowed), or NULL */
	unsigned content_lengths;   /* Content-Length fields seen (several that differ: a
				       framing error the caller reports) */
	int content_length_differs; /* two of them had different values */
};

/* Is name a hop-by-hop field of RFC 9110 (any case)? 1 or 0. */
int mt_hdr_hop_by_hop(const char *name);

/*
 * Decide for each of the n fields of h whether the proxy forwards it:
 * keep[i] is set to 1 or 0. dropped (may be NULL) is filled. Returns the
 * number kept. Connection tokens are compared in any case, with the blanks
 * around them and empty ones left out.
 */
size_t mt_hdr_filter(const struct mt_hdr *h, size_t n, enum mt_hdr_dir dir, unsigned char *keep,
		     struct mt_hdr_dropped *dropped);

/* The value of the first field called name (any case), or NULL. */
const char *mt_hdr_get(const struct mt_hdr *h, size_t n, const char *name);

/*
 * What RFC 9112 says a request's fields must not be, for a proxy that would
 * otherwise frame it differently from the server behind it (request
 * smuggling): a field name that is not a token (a space before the colon, a
 * control byte), a value with a control byte other than HTAB, more than one
 * Content-Length field or one that is not digits, Transfer-Encoding with
 * Content-Length, a Transfer-Encoding whose last coding is not chunked (or
 * in HTTP/1.0), no Host in HTTP/1.1, more than one Host. NULL when none, else
 * why (a constant). http11: the request's version is 1.1.
 */
const char *mt_hdr_framing_problem(const struct mt_hdr *h, size_t n, int http11);

/*
 * A request's head as it came on the wire, from its first byte: where it
 * ends (*len, the blank line's CRLF included) and what is wrong with its
 * bytes that a parser may let pass but a server behind a proxy could read
 * otherwise: a line not ended by CRLF (a bare LF or CR), an obsolete line
 * folding (a field line that begins with a space or HTAB), a field line
 * without a colon, a field name that is not a token (a space before the
 * colon), a control byte (NUL, ...) or DEL in a field line. NULL when the
 * head is sound, else why (a constant). Returns NULL with *len 0 when the
 * n bytes hold no whole head yet (no problem found so far).
 */
const char *mt_head_problem(const char *p, size_t n, size_t *len);

/*
 * A chunked body as it came (n bytes, from its first chunk's size line to
 * the blank line after its last chunk and trailers), read strictly: each
 * size line hex digits (at most 16), maybe ";" extensions without control
 * bytes, then CRLF; each chunk's data followed by CRLF exactly; trailer
 * lines ended by CRLF; nothing after the blank line. A parser may let other
 * bytes pass where these belong (any two bytes for a chunk's CRLF), and a
 * server behind a proxy read them otherwise. NULL when sound, else why.
 */
const char *mt_chunked_problem(const unsigned char *p, size_t n);

/*
 * A request head a parser refused, split leniently so that its refusal can
 * be recorded and said: the request line's method (its first word) and
 * target (what lies between it and the last word), and the field lines
 * split at their first colon, names and values as they are (blanks around a
 * value taken off). p holds n bytes from the head's first byte (to its
 * blank line, or as much as came). Free with mt_head_split_free.
 */
struct mt_head_split {
	char *method, *target;
	struct mt_hdr *h;
	size_t nh;
	char *text; /* (what they point into) */
};
void mt_head_split(const char *p, size_t n, struct mt_head_split *out);
void mt_head_split_free(struct mt_head_split *s);

/*
 * What the tap and the mock refuse in a request head a parser read whole
 * (method, target, fields h, http11 its version is 1.1), whose bytes as
 * they came are raw (n of them, from its first byte): a problem with those
 * bytes (mt_head_problem; *len: the head's length, 0 when not whole in n),
 * CONNECT (a tunnel is a forward proxy's business), the target
 * (mt_target_problem, an absolute form's path too), the framing
 * (mt_hdr_framing_problem), in that order. NULL when sound, else why, with
 * the status to answer in *status (400; 405 for CONNECT).
 */
const char *mt_request_refusal(const char *raw, size_t n, size_t *len, const char *method, const char *target,
			       const struct mt_hdr *h, size_t nh, int http11, int *status);

/*
 * A head a parser refused (raw, n bytes from its first): split leniently
 * into sp (free it with mt_head_split_free), and why as the checks of a
 * parsed head say it (target and framing, when the request line has a
 * target and a version; then the bytes), or NULL when none of them finds it
 * (the parser's words are then the reason).
 */
const char *mt_head_split_refusal(const char *raw, size_t n, struct mt_head_split *sp);

/* The reason phrase of a status the tap or the mock answers itself (RFC 9110). */
const char *mt_http_reason(int status);

/* The client waits for 100 Continue before its body (Expect: 100-continue, HTTP/1.1). */
int mt_hdr_expects_continue(const struct mt_hdr *h, size_t nh, int major, int minor);

/*
 * A request target (after an absolute form's scheme and authority are taken
 * off) that a reverse proxy must not pass on: empty; with a space, a control
 * byte or DEL (RFC 9112 3.2); not a path ("@host/x" would make another URL of
 * the upstream's origin); with a fragment; "*" for another method than
 * OPTIONS. NULL when it is sound.
 */
const char *mt_target_problem(const char *target, const char *method);

/*
 * Does the comma list value (Accept, Connection, ...) hold token? Each
 * element is compared in any case up to its first ';' (a media type without
 * its parameters), blanks around left out; commas inside quoted parameter
 * values do not split. An element whose q parameter is 0 is refused by the
 * sender (RFC 9110 section 12.4.2): it does not count. No wildcards: a
 * wildcard range matches only itself. 1 or 0; value may be NULL.
 */
int mt_hdr_has_token(const char *value, const char *token);

/*
 * The list as a compact JSON array of [name, value] pairs, into out (reset
 * first): [["Content-Type","text/plain"],["X-A","1"]]. With r, each value
 * goes through mt_redact_header (credentials of Authorization, cookie
 * values, credential-named fields, well-known key formats). Bytes that are
 * not UTF-8 become \ufffd, one per byte, so that out is always valid JSON.
 * Returns 1 when something was redacted, else 0.
 */
int mt_hdr_json(const struct mt_hdr *h, size_t n, const struct mt_redact *r, struct mt_buf *out);

/*
 * A request target ("/path?query", or an absolute URL) with credentials
 * redacted: the values of credential-named query parameters (as
 * mt_redact_url), then well-known key formats anywhere (mt_redact_text).
 * Returns 1 with the result in out (reset first), or 0 with out untouched.
 */
int mt_target_redact(const char *target, const struct mt_redact *r, struct mt_buf *out);

#endif
