/*
 * otlpcli.h - the --otlp options of `mcptap record`, `import` and `sniff`:
 * where the tap pushes the spans of what it stores (OTLP/HTTP, JSON, gzip),
 * the headers it sends (their values from the environment, never from the
 * command line, never stored), and which spans.
 */
#ifndef MCPTAP_OTLPCLI_H
#define MCPTAP_OTLPCLI_H

#include <getopt.h>

#include "cli.h"
#include "tap/otlppush.h"
#include "tap/writer.h"

/* The options, with getopt_long values from 0x300 on. */
#define OTLPCLI_LONGOPTS                                                                           \
	{"otlp", required_argument, NULL, 0x300}, {"otlp-header", required_argument, NULL, 0x301}, \
	{                                                                                          \
		"otlp-spans", required_argument, NULL, 0x302                                       \
	}

/* Their usage, and their lines for --help. */
#define OTLPCLI_USAGE "[--otlp URL] [--otlp-header NAME=env:VAR] [--otlp-spans client|server|both]"
#define OTLPCLI_OPTIONS_HELP                                                                 \
	"      --otlp URL        push each request's spans, as export -T otlp makes them,\n" \
	"                        to an OpenTelemetry Collector as its answer is stored\n"    \
	"                        (OTLP/HTTP JSON, gzip; URL/v1/traces unless it ends so)\n"  \
	"      --otlp-header NAME=env:VAR  send NAME with the value of $VAR with each\n"     \
	"                        push (a credential; never stored)\n"                        \
	"      --otlp-spans client|server|both  the requester's CLIENT spans (default),\n"   \
	"                        the receiver's SERVER spans, or both\n"

struct otlp_cli {
	const struct cmd_entry *e; /* the command (for its usage errors) */
	const char *url;           /* --otlp (borrowed from argv) */
	char **headers;            /* --otlp-header: "Name: value" lines, owned */
	size_t nheaders;
	unsigned spans;             /* --otlp-spans: MT_SPANS_* (0: the default) */
	int given;                  /* an --otlp-header or --otlp-spans was given */
	struct otlp_push_opts push; /* what otlp_cli_apply hands the writer */
};

/* Defaults; argc bounds the headers. */
void otlp_cli_init(struct otlp_cli *o, const struct cmd_entry *e, int argc);
void otlp_cli_release(struct otlp_cli *o);
/* One of the options (getopt_long's c and optarg): 1 taken, 0 not one of them, -1 after a
 * usage error (printed). */
int otlp_cli_option(struct otlp_cli *o, int c, const char *arg);
/*
 * The options are all in: check them and set the writer's (w->otlp points
 * into o, which must outlive the writer's start). 0, or -1 after a usage
 * error (printed).
 */
int otlp_cli_apply(struct otlp_cli *o, struct writer_opts *w);

#endif
