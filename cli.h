/*
 * cli.h - what the command files share: the command table's entry, usage
 * and error messages, and opening a capture file for reading. (The exit
 * statuses, EXIT_*, are in schema/util.h: the modes below return them too.)
 *
 * One subcommand is one file (tap/cmd-record.c, analyze/cmd-show.c, ...)
 * exporting a const struct cmd_entry; mcptap.c only looks names up.
 */
#ifndef MCPTAP_CLI_H
#define MCPTAP_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "schema/redact.h"
#include "schema/store.h"

struct cmd_entry {
	const char *name;
	const char *summary; /* one line, for `mcptap --help` */
	const char *usage;   /* SYNOPSIS lines, as in mcptap.1, "\n"-separated */
	const char *options; /* the option list printed by --help */
	int (*run)(int argc, char **argv);
};

/* Print the command's usage and options to f. */
void cli_help(const struct cmd_entry *e, FILE *f);

/* "mcptap: <message>" and the usage on stderr; returns EXIT_ERROR. */
int cli_usage_error(const struct cmd_entry *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * What getopt_long returned that no case took: c is ':' for an option given
 * without its value (the option string must start with ":"), else an unknown
 * option. Reports it as a usage error and returns EXIT_ERROR.
 */
int cli_bad_option(const struct cmd_entry *e, int c, char **argv);

/* The capture file: the argument, else $MCPTAP_FILE, else NULL. */
const char *cli_capture_path(const char *arg);

/*
 * The options the commands that read a capture share (sessions, show,
 * stats, analyze, export, report; replay takes -r, -s and -Y): -r, -s, -Y,
 * -T, -o, and the redaction options of those that write sessions out. The
 * command's own option table says which it takes; any of them is taken here.
 */
#define CLI_MAX_RULES 64
/* The redaction options' getopt_long values: long only, clear of any letter. */
enum {
	CLI_OPT_REDACT_KEY = 0x400,
	CLI_OPT_REDACT_PATH,
	CLI_OPT_REDACT_VALUE,
	CLI_OPT_KEEP_SECRETS,
};
#define CLI_REDACT_LONGOPTS                                                      \
	{"redact-key", required_argument, NULL, CLI_OPT_REDACT_KEY},             \
		{"redact-path", required_argument, NULL, CLI_OPT_REDACT_PATH},   \
		{"redact-value", required_argument, NULL, CLI_OPT_REDACT_VALUE}, \
	{                                                                        \
		"keep-secrets", no_argument, NULL, CLI_OPT_KEEP_SECRETS          \
	}
struct cli_read {
	const char *path;                 /* -r (NULL: not given; then $MCPTAP_FILE) */
	const char *sid;                  /* -s (NULL: the command's default sessions) */
	const char *expr;                 /* -Y */
	const char *format;               /* -T (the command's default until given) */
	const char *out;                  /* -o */
	const char *rules[CLI_MAX_RULES]; /* --redact-key, -path, -value, in order */
	char kinds[CLI_MAX_RULES];        /* 'K', 'P' or 'V' for each */
	size_t nrules;
	int keep; /* --keep-secrets */
};

/*
 * getopt_long's c and optarg when c is one of them (-r, -s, -Y, -T, -o,
 * CLI_REDACT_LONGOPTS): 1, taken into o; 0 when it is not; EXIT_ERROR after
 * a usage error.
 */
int cli_read_option(const struct cmd_entry *e, struct cli_read *o, int c, const char *arg);

/*
 * The options are all in: --keep-secrets without --redact-*, the session
 * list's syntax, the capture file (o->path set from $MCPTAP_FILE without
 * -r), -o not empty. 0, or EXIT_ERROR after a usage error.
 */
int cli_read_check(const struct cmd_entry *e, struct cli_read *o);

/*
 * An HTTP header option's NAME=env:VAR (opt: "--header", for messages): the
 * value is taken from $VAR, never from the command line. Returns "NAME: value"
 * (caller frees), or NULL after a usage error (a bad NAME, VAR not set, a line
 * break in the value).
 */
char *cli_env_header(const struct cmd_entry *e, const char *opt, const char *arg);

/*
 * A -Y EXPR: the filter (the caller frees it), or NULL after printing the
 * error, the expression and a caret under the column it concerns.
 */
struct mt_filter;
struct mt_filter *cli_filter(const struct cmd_entry *e, const char *arg);

/*
 * A duration option (--OPT ARG, ms when bare) between 1ms and hi (range: the
 * bounds in words, "1ms to 1h") into *ms: 0, or a usage error (EXIT_ERROR).
 */
int cli_duration_ms(const struct cmd_entry *e, const char *opt, const char *arg, int64_t hi,
		    const char *range, int *ms);

/*
 * A --listen ADDR: 0 when mt_split_listen takes it, else a usage error
 * (EXIT_ERROR) that prints no user name or password the value holds.
 */
int cli_check_listen(const struct cmd_entry *e, const char *arg);

/*
 * An --upstream URL (http:// or https://): 0 with shown set to the URL as it
 * may be printed and stored (the values of credential-named query parameters
 * redacted by r); else a usage error (EXIT_ERROR) for a URL of another scheme,
 * without a host, or with a user name or password (which it does not print:
 * the message names --upstream-header).
 */
int cli_check_upstream(const struct cmd_entry *e, const char *arg, const struct mt_redact *r,
		       struct mt_buf *shown);

/*
 * Open a capture file for reading; on failure print
 * "mcptap: cannot open 'PATH': REASON" and return -1.
 */
int cli_open_capture(const char *path, struct store **st);

/*
 * The session to show: arg parsed as an id (must exist), or the newest one
 * when arg is NULL. Prints the error and returns -1 on failure.
 */
int cli_pick_session(struct store *st, const char *path, const char *arg, int64_t *id);

/*
 * The sessions an -s argument names, in the file's order, each once: a
 * comma-separated list of ids (each must exist), ranges A-B (the sessions
 * of the file in it; at least one), and "all". NULL arg: dflt, one of
 * CLI_NEWEST or CLI_ALL. *ids is owned by the caller (free). Prints the
 * error and returns -1 on failure (a file with no session is one).
 */
enum cli_default { CLI_NEWEST, CLI_ALL };
int cli_pick_sessions(struct store *st, const char *path, const char *arg, enum cli_default dflt,
		      int64_t **ids, size_t *n);
/* The same syntax, checked before any file is opened: NULL when fine, else why. */
const char *cli_session_list_problem(const char *arg);

/*
 * The redactor of a command's --redact-key, --redact-path and --redact-value
 * options (kinds[i] 'K', 'P' or 'V' for rules[i]), keyed by the user's
 * redaction key (a warning when there is none). NULL with *bad set, and a
 * usage error of e printed, when a rule is bad. The caller frees it.
 */
struct mt_redact *cli_redactor(const struct cmd_entry *e, const char *kinds, const char **rules, size_t n,
			       int *bad);

/* Colour on f: only on a terminal, and never with NO_COLOR set. */
int cli_use_color(FILE *f);

/*
 * The width of the terminal f is, in columns: its size (TIOCGWINSZ), else
 * $COLUMNS, else 80. 0 when f is not a terminal.
 */
int cli_term_width(FILE *f);

#endif
