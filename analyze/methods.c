/*
 * methods.c - the MCP method table (see methods.h): one row per method and
 * era, sorted by name, looked up by bsearch behind a small memo.
 */
#include "analyze/methods.h"

#include <stdlib.h>
#include <string.h>

enum { M_REQ = 1, M_NOTIF = 2 };
enum { D_C2S = 1, D_S2C = 2, D_BOTH = 3 };

struct method_row {
	const char *name;
	unsigned char kind; /* M_REQ or M_NOTIF */
	unsigned char dirs; /* who may send it: D_* bits */
	unsigned versions;  /* AN_V() bits of the revisions whose schema has it */
};

/* Sorted by name (strcmp order); a name may have one row per era. */
static const struct method_row methods[] = {
	{"completion/complete", M_REQ, D_C2S, AN_EVERY},
	{"elicitation/create", M_REQ, D_S2C, AN_FROM_0618},
	{"initialize", M_REQ, D_C2S, AN_ALL4},
	{"logging/setLevel", M_REQ, D_C2S, AN_ALL4},
	{"notifications/cancelled", M_NOTIF, D_BOTH, AN_EVERY},
	{"notifications/elicitation/complete", M_NOTIF, D_S2C, AN_ONLY_1125},
	{"notifications/initialized", M_NOTIF, D_C2S, AN_ALL4},
	{"notifications/message", M_NOTIF, D_S2C, AN_EVERY},
	{"notifications/progress", M_NOTIF, D_BOTH, AN_ALL4},
	{"notifications/progress", M_NOTIF, D_S2C, AN_V26},
	{"notifications/prompts/list_changed", M_NOTIF, D_S2C, AN_EVERY},
	{"notifications/resources/list_changed", M_NOTIF, D_S2C, AN_EVERY},
	{"notifications/resources/updated", M_NOTIF, D_S2C, AN_EVERY},
	{"notifications/roots/list_changed", M_NOTIF, D_C2S, AN_ALL4},
	{"notifications/subscriptions/acknowledged", M_NOTIF, D_S2C, AN_V26},
	{"notifications/tasks/status", M_NOTIF, D_BOTH, AN_ONLY_1125},
	{"notifications/tools/list_changed", M_NOTIF, D_S2C, AN_EVERY},
	{"ping", M_REQ, D_BOTH, AN_ALL4},
	{"prompts/get", M_REQ, D_C2S, AN_EVERY},
	{"prompts/list", M_REQ, D_C2S, AN_EVERY},
	{"resources/list", M_REQ, D_C2S, AN_EVERY},
	{"resources/read", M_REQ, D_C2S, AN_EVERY},
	{"resources/subscribe", M_REQ, D_C2S, AN_ALL4},
	{"resources/templates/list", M_REQ, D_C2S, AN_EVERY},
	{"resources/unsubscribe", M_REQ, D_C2S, AN_ALL4},
	{"roots/list", M_REQ, D_S2C, AN_ALL4},
	{"sampling/createMessage", M_REQ, D_S2C, AN_ALL4},
	{"server/discover", M_REQ, D_C2S, AN_V26},
	{"subscriptions/listen", M_REQ, D_C2S, AN_V26},
	{"tasks/cancel", M_REQ, D_BOTH, AN_ONLY_1125},
	{"tasks/get", M_REQ, D_BOTH, AN_ONLY_1125},
	{"tasks/list", M_REQ, D_BOTH, AN_ONLY_1125},
	{"tasks/result", M_REQ, D_BOTH, AN_ONLY_1125},
	{"tools/call", M_REQ, D_C2S, AN_EVERY},
	{"tools/list", M_REQ, D_C2S, AN_EVERY},
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

static int row_cmp(const void *key, const void *row)
{
	return strcmp(key, ((const struct method_row *)row)->name);
}

/*
 * The rows of `method`: *first and the count (0 when the method is in no
 * revision's table).
 */
static size_t method_rows(const char *method, const struct method_row **first)
{
	/* Several rules ask about each message: answers are kept, found
	 * and checked by the name (one engine's interned names may be another's addresses). */
	static struct {
		char name[48];
		const struct method_row *first;
		size_t n;
	} memo[16];
	const struct method_row *r, *end = methods + NMETHODS;
	size_t n = 0;

	if (!method)
		return 0;
	/* A slot picked by the name's length and two of its letters; the name decides. */
	size_t len = strlen(method);
	unsigned slot = (unsigned)(len * 7 + (unsigned char)method[len / 2] +
				   (unsigned char)method[len ? len - 1 : 0]) %
			16;
	if (memo[slot].name[0] && !strcmp(method, memo[slot].name)) {
		*first = memo[slot].first;
		return memo[slot].n;
	}
	r = bsearch(method, methods, NMETHODS, sizeof(methods[0]), row_cmp);
	if (r) {
		while (r > methods && !strcmp(r[-1].name, method))
			r--;
		while (r + n < end && !strcmp(r[n].name, method))
			n++;
	}
	*first = r;
	if (len < sizeof(memo[slot].name)) {
		memcpy(memo[slot].name, method, len + 1);
		memo[slot].first = r;
		memo[slot].n = n;
	}
	return n;
}

int an_method_known(const char *method)
{
	const struct method_row *r = NULL;

	return method_rows(method, &r) != 0;
}

int an_method_in(const char *method, enum an_version v)
{
	const struct method_row *r = NULL;
	size_t n = method_rows(method, &r);

	for (size_t i = 0; i < n; i++)
		if (r[i].versions & AN_V(v))
			return 1;
	return 0;
}

unsigned an_method_revisions(const char *method)
{
	const struct method_row *rows = NULL;
	size_t n = method_rows(method, &rows);
	unsigned v = 0;

	for (size_t i = 0; i < n; i++)
		v |= rows[i].versions;
	return n ? v : AN_EVERY;
}

const char *an_method_role_problem(enum an_version v, enum an_dir dir, enum mt_kind kind, const char *method)
{
	const struct method_row *rows = NULL, *r;
	size_t n = method_rows(method, &rows);

	if (!n)
		return NULL;
	r = rows;
	for (size_t i = 0; i < n; i++)
		if (rows[i].versions & AN_V(v))
			r = &rows[i];
	if (kind == MT_NOTIFICATION && r->kind == M_REQ)
		return "a request, without an id";
	if (kind == MT_REQUEST && r->kind == M_NOTIF)
		return NULL;
	if (!(r->dirs & (dir == AN_C2S ? D_C2S : D_S2C))) {
		if (r->kind == M_REQ)
			return dir == AN_C2S ? "a request only the server sends"
					     : "a request only the client sends";
		return dir == AN_C2S ? "a notification only the server sends"
				     : "a notification only the client sends";
	}
	return NULL;
}
