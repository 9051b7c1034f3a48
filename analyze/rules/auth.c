/*
 * rules/auth.c - HTTP authorization (MCP-RULES §6.4), as far as a capture
 * shows it: the Authorization header on every request once OAuth is in use,
 * no token in a query string, 401 for invalid tokens, WWW-Authenticate on a
 * 401 (2025-06-18), 403 for insufficient scope (2025-11-25).
 *
 * The tap stores credentials redacted ("Bearer [redacted:HASH]"): the scheme
 * and the parameter names stay, which is all these rules read. They run on
 * http and sse sessions; requests under /.well-known/ (OAuth discovery) are
 * not MCP requests.
 */
#include <string.h>
#include <strings.h>

#include "analyze/analyze.h"

static const struct an_exchange *begin(const struct an_ctx *c)
{
	return c->m && c->m->http == AN_HTTP_BEGIN ? c->m->x : NULL;
}

static int mcp_request(const struct an_exchange *x)
{
	return (!strcmp(x->method, "POST") || !strcmp(x->method, "GET") || !strcmp(x->method, "DELETE")) &&
	       strncmp(x->target, "/.well-known/", 13);
}

static void auth_001(const struct an_ctx *c)
{
	const struct an_exchange *x = begin(c);
	const struct an_http *h = &c->st->http;
	const char *a;

	if (!x || !mcp_request(x))
		return;
	a = an_hdr(x->req_headers, "Authorization");
	if (!a && h->auth_seq && x->seq > h->auth_seq)
		an_report(c, -1,
			  "%s without Authorization: OAuth is in use since #%lld, and every "
			  "request carries the access token",
			  x->method, (long long)h->auth_seq);
	else if (a && !h->auth_seq && strncasecmp(a, "Bearer ", 7)) /* (said once) */
		an_report(c, -1,
			  "%s with Authorization scheme '%.*s': the access token goes as "
			  "'Bearer <token>'",
			  x->method, (int)strcspn(a, " "), a);
}

static void auth_002(const struct an_ctx *c)
{
	const struct an_exchange *x = begin(c);
	const char *q;

	if (!x || !(q = strchr(x->target, '?')))
		return;
	for (q++; *q;) {
		size_t n = strcspn(q, "=&#");
		if (n == 12 && !strncasecmp(q, "access_token", 12)) {
			an_report(c, -1,
				  "%s %.*s: an access token in the query string (access_token); "
				  "it goes in the Authorization header",
				  x->method, (int)strcspn(x->target, "?"), x->target);
			return;
		}
		q += strcspn(q, "&#");
		if (*q != '&')
			break;
		q++;
	}
}

/* The WWW-Authenticate of the response says error="<err>". */
static int says_error(const struct an_exchange *x, const char *err)
{
	const char *w = an_hdr(x->resp_headers, "WWW-Authenticate");
	const char *p = w ? strcasestr(w, "error=") : NULL;
	size_t n = strlen(err);

	if (!p)
		return 0;
	p += 6;
	if (*p == '"')
		p++;
	return !strncasecmp(p, err, n) && (p[n] == '"' || p[n] == ',' || p[n] == ' ' || !p[n]);
}

static void auth_003(const struct an_ctx *c)
{
	const struct an_exchange *x = begin(c);

	if (x && x->status && x->status != 401 && says_error(x, "invalid_token"))
		an_report(c, -1,
			  "%s answered %d with error=\"invalid_token\": an invalid or expired "
			  "token gets 401 Unauthorized",
			  x->method, x->status);
}

static void auth_004(const struct an_ctx *c)
{
	const struct an_exchange *x = begin(c);
	const char *w;
	int v0618 = c->st->version == AN_V2025_06_18;

	if (!x || x->status != 401)
		return;
	w = an_hdr(x->resp_headers, "WWW-Authenticate");
	if (!w)
		an_report(c, v0618 ? AN_ERROR : AN_INFO, "401 Unauthorized without WWW-Authenticate%s",
			  v0618 ? ": it names the resource server metadata URL (resource_metadata)"
				: " (2025-11-25: the server may serve its metadata at the well-known URI "
				  "instead)");
	else if (!strcasestr(w, "resource_metadata"))
		an_report(c, v0618 ? AN_ERROR : AN_INFO,
			  "401 Unauthorized whose WWW-Authenticate has no resource_metadata%s",
			  v0618 ? ": it names the resource server metadata URL"
				: " (2025-11-25: the well-known URI may serve instead)");
}

static void auth_005(const struct an_ctx *c)
{
	const struct an_exchange *x = begin(c);

	if (x && x->status && x->status != 403 && says_error(x, "insufficient_scope"))
		an_report(c, -1,
			  "%s answered %d with error=\"insufficient_scope\": insufficient "
			  "scope gets 403 Forbidden",
			  x->method, x->status);
}

#define SRC "MCP-RULES §6.4; basic/authorization.mdx"

const struct an_rule an_rules_auth[] = {
	{"AUTH-001", AN_ERROR, AN_SEV_FIXED, AN_FROM_0326, AN_ON_HTTP, NULL, auth_001,
	 "once a request carried Authorization, every later request does too, as 'Bearer <token>'", SRC},
	{"AUTH-002", AN_ERROR, AN_SEV_FIXED, AN_FROM_0326, AN_ON_HTTP, NULL, auth_002,
	 "no access token in a URI query string (access_token)", SRC},
	{"AUTH-003", AN_ERROR, AN_SEV_FIXED, AN_FROM_0326, AN_ON_HTTP, NULL, auth_003,
	 "an invalid or expired token (WWW-Authenticate error=\"invalid_token\") gets 401", SRC},
	{"AUTH-004", AN_ERROR, AN_SEV_FIXED, AN_FROM_0618, AN_ON_HTTP, NULL, auth_004,
	 "a 401 carries WWW-Authenticate with resource_metadata (2025-06-18; in 2025-11-25 the "
	 "well-known URI may serve instead: info)",
	 SRC},
	{"AUTH-005", AN_WARNING, AN_SEV_FIXED, AN_ONLY_1125, AN_ON_HTTP, NULL, auth_005,
	 "insufficient scope (error=\"insufficient_scope\") gets 403 Forbidden", SRC},
	{"AUTH-006", AN_WARNING, AN_SEV_FIXED, AN_FROM_0326, 0, NULL, NULL,
	 "HTTP transports follow the authorization spec: its observable parts are AUTH-001 to "
	 "AUTH-005",
	 SRC},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};
