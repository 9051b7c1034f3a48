/*
 * redact.h - keeping credentials out of capture files: one module for the
 * stdio tap (command lines, stderr lines, messages), the HTTP tap and pcap
 * import (headers, request targets) and every export.
 *
 * A redacted value becomes a marker, "[redacted:1a2b3c4d]": eight hex digits
 * of a keyed hash (SipHash-2-4) of the secret, so equal secrets give equal
 * markers and a secret cannot be found from its marker without the key. The
 * key is the user's own, kept outside capture files (mt_redact_load_key).
 *
 * What is taken for a credential, unless the user says otherwise:
 *   - values named like one: api_key, apiKey, token, access_token, password,
 *     secret, client_secret, authorization, cookie, private_key, ... (the
 *     name compared in lower case with "_", "-" and "." left out; MCP's own
 *     progressToken, cursor and the paging tokens are not credentials);
 *   - in command lines, --NAME=VALUE and --NAME VALUE for such names, and
 *     NAME=VALUE for environment-style names ending in _KEY, _TOKEN, _SECRET,
 *     PASSWORD and the like;
 *   - in text, "Bearer X" and "Basic X", NAME=VALUE and NAME: VALUE for such
 *     names, and well-known key formats anywhere (sk-..., ghp_..., xoxb-...,
 *     AKIA..., AIza..., glpat-..., JWTs, PEM private keys);
 *   - in text, also a URL's query parameters named as mt_redact_url says
 *     (?X-Amz-Signature=X, &code=X);
 *   - in JSON messages, string values under such members, and the text rules
 *     inside every other string value.
 * Rules added by the user: member names (mt_redact_add_key), JSON paths
 * (mt_redact_add_path) and POSIX extended regular expressions
 * (mt_redact_add_value).
 *
 * A struct mt_redact is read-only once built: any number of threads may use
 * it at once.
 */
#ifndef MCPTAP_REDACT_H
#define MCPTAP_REDACT_H

#include <stddef.h>
#include <stdint.h>

#include "schema/message.h"
#include "schema/util.h"

#define MT_REDACT_MARKER_LEN 19 /* "[redacted:" + 8 hex + "]" */

struct mt_redact;

/* A redactor with the built-in rules and the given 16-byte key. */
struct mt_redact *mt_redact_new(const unsigned char key[16]);
void mt_redact_free(struct mt_redact *r);

/*
 * The user's key: $MCPTAP_REDACT_KEY_FILE, else $XDG_STATE_HOME/mcptap/redact.key,
 * else ~/.local/state/mcptap/redact.key; made (0600, its folders 0700) with
 * random bytes when missing. Returns 0 with key filled; -1 with why in err
 * when no key file can be read or made (key then holds random bytes: equal
 * secrets stay equal within this run only).
 */
int mt_redact_load_key(unsigned char key[16], struct mt_err *err);

/* Add a member name, a JSON path ("params.arguments.query", "*" and "[*]"
 * allowed) or an extended regular expression. 0, or -1 with why in err. */
int mt_redact_add_key(struct mt_redact *r, const char *name);
int mt_redact_add_path(struct mt_redact *r, const char *path, struct mt_err *err);
int mt_redact_add_value(struct mt_redact *r, const char *regex, struct mt_err *err);

/* The marker for the secret s (n bytes) into out[MT_REDACT_MARKER_LEN + 1]. */
void mt_redact_marker(const struct mt_redact *r, const char *s, size_t n, char *out);

/* Is s exactly a marker? */
int mt_redact_is_marker(const char *s, size_t n);
/* The first marker inside s, or NULL. */
const char *mt_redact_find_marker(const char *s, size_t n);

/*
 * Redact a captured frame. kind is the classifier's verdict on it: JSON (any
 * kind but MT_INVALID) is walked as JSON, anything else is text. Returns 1
 * with the redacted bytes in out (reset first) when something was redacted,
 * 0 when the frame holds nothing to redact (out is then untouched).
 */
int mt_redact_message(const struct mt_redact *r, const char *p, size_t n, enum mt_kind kind,
		      struct mt_buf *out);

/* The same for text. */
int mt_redact_text(const struct mt_redact *r, const char *p, size_t n, struct mt_buf *out);

/*
 * The same for one line of text read line by line (stderr). *state (0 at the
 * stream's start) carries what a line leaves open to the next: the body of a
 * PEM private key, whose lines are each redacted whole up to its END line.
 */
int mt_redact_line(const struct mt_redact *r, int *state, const char *p, size_t n, struct mt_buf *out);

/*
 * A command line, shell-quoted as mt_shell_quote does, with credential
 * arguments redacted (see above). A new string; the caller frees it.
 */
char *mt_redact_command(const struct mt_redact *r, char *const *argv);

/*
 * An HTTP header's value (name: its name, any case): the credential after the
 * scheme word of Authorization, Proxy-Authorization, Authentication and other
 * names ending in authorization or authentication (a value of one word: all
 * of it); each cookie's value of Cookie and Set-Cookie; the whole value of
 * headers named like a credential (X-Api-Key, X-Auth-Token, X-Amz-Signature,
 * X-Goog-Credential, Ocp-Apim-Subscription-Key, ...: see http_name in
 * redact.c); and the text rules elsewhere (a URL's credential-named query
 * parameters in Location, ...). Returns 1 with out set, or 0 (nothing to
 * redact).
 */
int mt_redact_header(const struct mt_redact *r, const char *name, const char *value, size_t n,
		     struct mt_buf *out);

/*
 * A URL or request target: the password in user:password@, and the values of
 * query parameters with a credential's name, as a header's is taken (sig,
 * key, code and pass too): the signed URLs' X-Amz-Signature,
 * X-Amz-Credential, X-Amz-Security-Token, X-Goog-Signature,
 * X-Goog-Credential, Signature, Azure's sig, access_token, api_key, ...; any
 * case. Returns 1 with out set, or 0.
 */
int mt_redact_url(const struct mt_redact *r, const char *url, size_t n, struct mt_buf *out);

/*
 * An HTTP body that no message holds, as it is stored beside its exchange (an
 * OAuth form, a token response, an error page): JSON (any JSON, JSON-RPC or
 * not) as mt_redact_message walks it ({"access_token": X}); else its
 * URL-encoded form fields with a plain name ([A-Za-z0-9_.-], up to "&"), each
 * named as a URL's query parameter is (code=X&client_secret=X), and the text
 * rules. Returns 1 with out set, or 0.
 */
int mt_redact_body(const struct mt_redact *r, const char *p, size_t n, struct mt_buf *out);

/* SipHash-2-4 of n bytes under a 16-byte key (exposed for its test vectors). */
uint64_t mt_siphash24(const unsigned char key[16], const void *p, size_t n);

#endif
