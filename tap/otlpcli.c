/*
 * otlpcli.c - the --otlp options (see otlpcli.h).
 */
#include "tap/otlpcli.h"

#include <stdlib.h>
#include <string.h>

#include "schema/spans.h"

void otlp_cli_init(struct otlp_cli *o, const struct cmd_entry *e, int argc)
{
	memset(o, 0, sizeof(*o));
	o->e = e;
	o->headers = mt_calloc((size_t)argc + 1, sizeof(*o->headers));
}

void otlp_cli_release(struct otlp_cli *o)
{
	for (size_t i = 0; i < o->nheaders; i++)
		free(o->headers[i]);
	free(o->headers);
	o->headers = NULL;
	o->nheaders = 0;
}

int otlp_cli_option(struct otlp_cli *o, int c, const char *arg)
{
	switch (c) {
	case 0x300: o->url = arg; return 1;
	case 0x301:
		if (!(o->headers[o->nheaders] = cli_env_header(o->e, "--otlp-header", arg)))
			return -1;
		o->nheaders++;
		o->given = 1;
		return 1;
	case 0x302:
		if (!strcmp(arg, "client"))
			o->spans = MT_SPANS_CLIENT;
		else if (!strcmp(arg, "server"))
			o->spans = MT_SPANS_SERVER;
		else if (!strcmp(arg, "both"))
			o->spans = MT_SPANS_CLIENT | MT_SPANS_SERVER;
		else
			return cli_usage_error(o->e, "bad --otlp-spans '%s' (client, server or both)", arg),
			       -1;
		o->given = 1;
		return 1;
	default: return 0;
	}
}

/* Does the URL's authority hold a user name or password ("user:pass@host")? */
static int has_userinfo(const char *url)
{
	const char *p = strstr(url, "://");

	if (!p)
		return 0;
	p += 3;
	return memchr(p, '@', strcspn(p, "/?#")) != NULL;
}

int otlp_cli_apply(struct otlp_cli *o, struct writer_opts *w)
{
	struct mt_err err = {"", 0};
	char *u;

	if (!o->url) {
		if (o->given)
			return cli_usage_error(o->e, "--otlp-header and --otlp-spans need --otlp URL"), -1;
		return 0;
	}
	if (!(u = otlp_push_url(o->url, &err)))
		return cli_usage_error(o->e, "bad --otlp URL: %s", err.msg), -1;
	free(u);
	if (has_userinfo(o->url))
		return cli_usage_error(o->e, "bad --otlp URL: no user:password@ in it (send a "
					     "credential with --otlp-header NAME=env:VAR)"),
		       -1;
	memset(&o->push, 0, sizeof(o->push));
	o->push.url = o->url;
	o->push.headers = o->headers;
	o->push.nheaders = o->nheaders;
	w->otlp = &o->push;
	w->otlp_spans = o->spans;
	return 0;
}
