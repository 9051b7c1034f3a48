/*
 * export.h - what every export format is given (`mcptap export`): the
 * sessions of a capture file one after the other, each item of a session in
 * seq order, already redacted. A format writes to x->out and says nothing
 * on stderr: it returns -1 with x->err set, and the command says it.
 */
#ifndef MCPTAP_EXPORT_H
#define MCPTAP_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "schema/filter.h"
#include "schema/redact.h"
#include "schema/store.h"
#include "schema/util.h"

struct ex_format;

/* What export's format options say (x->o); zero is every default. */
enum { EX_SPANS_CLIENT = 1, EX_SPANS_SERVER = 2 };
struct ex_opts {
	unsigned spans;     /* otlp --spans: EX_SPANS_* (0: EX_SPANS_CLIENT) */
	int notifications;  /* otlp --notifications: a span per notification too */
	int content;        /* otlp --otlp-content: tools' arguments and results */
};

struct ex_sink {
	FILE *out;
	const char *out_name;            /* as said in errors */
	struct store *st;
	const char *path;                /* the capture file */
	const struct mt_redact *redact;  /* NULL: --keep-secrets */
	struct mt_filter *filter;        /* -Y (borrowed; set on the store), or NULL */
	int filtered;                    /* -Y: only the messages it passes come */
	const struct store_session_row *session; /* the session being written (&row) */
	struct store_session_row row;
	const struct ex_format *format;
	const struct ex_opts *o;         /* the format options (never NULL) */
	void *priv;                      /* the format's own state */
	struct mt_err err;
	/* Scratch for the redaction of an item (ex_redact_*). */
	struct mt_buf red, red2, xb[6];
	struct store_exchange_row xcopy;
	struct store_item icopy;
	int pem;                         /* a stderr line inside a private key */
};

struct ex_format {
	const char *name;
	const char *what;   /* for --help: one line */
	unsigned flags;     /* store_each_item_ex's (STORE_ITEMS_*) */
	unsigned filter;    /* how -Y picks messages (store_set_filter's STORE_FILTER_*) */
	int binary;         /* never written to a terminal */
	/* Each may be NULL; each returns 0, or -1 with x->err set. */
	int (*begin)(struct ex_sink *x);
	int (*session)(struct ex_sink *x);
	int (*item)(struct ex_sink *x, const struct store_item *it);
	int (*session_end)(struct ex_sink *x);
	int (*end)(struct ex_sink *x);
	/* What the format holds, freed: after end, or after a failure anywhere. */
	void (*release)(struct ex_sink *x);
};

extern const struct ex_format ex_jsonl;
extern const struct ex_format ex_har;
extern const struct ex_format ex_otlp;
extern const struct ex_format ex_pcapng;
extern const struct ex_format ex_html; /* `mcptap report`'s, not one of -T */

/* report --diff: how a side's exchange compares with the other side's. */
enum ex_html_mark { EX_HTML_CHANGED = 1, EX_HTML_ADDED, EX_HTML_MISSING };
struct mt_map;
/*
 * The sessions written next through ex_html are one side of a diff: pfx goes
 * before their ids ("a-"), title before their heading, and the messages
 * whose seq (or whose request's) marks maps (int64 -> enum ex_html_mark) are
 * marked so on the diagram. After ex_html's begin; borrowed while in use.
 */
void ex_html_side(struct ex_sink *x, const char *pfx, const char *title, const struct mt_map *marks);

/*
 * it with its bytes redacted as the tap redacts what it stores (a message,
 * a stderr line, an exchange's target, headers and bodies); it itself when
 * there is nothing to redact or no redactor. Valid until the next call.
 */
const struct store_item *ex_redact_item(struct ex_sink *x, const struct store_item *it);

/*
 * A request target, a URL or a legacy endpoint, redacted as the tap redacts
 * a target (mt_target_redact); other text (a command line), as it redacts
 * text. s itself when there is nothing to redact, no redactor or s is NULL;
 * else buf's text (reset first).
 */
const char *ex_redact_target(const struct ex_sink *x, const char *s, struct mt_buf *buf);
const char *ex_redact_text(const struct ex_sink *x, const char *s, struct mt_buf *buf);

/* What ex_redact_item kept. */
void ex_sink_release(struct ex_sink *x);

/* ---- for the commands that write a format: cmd-export.c (where it lives), cmd-report.c ---- */

struct cmd_entry;

#define EX_MAX_RULES 64

/* What their shared options say. */
struct ex_args {
	const char *path, *sid, *expr, *out; /* -r, -s, -Y, -o (NULL: not given) */
	const char *rules[EX_MAX_RULES];     /* --redact-key, -path, -value, in order */
	char kinds[EX_MAX_RULES];            /* 'K', 'P' or 'V' for each */
	size_t nrules;
	int keep;                            /* --keep-secrets */
	struct ex_opts opts;                 /* the format's options */
};

/*
 * getopt's c (arg: its optarg) when it is one of the shared options (-r, -s,
 * -Y, -o; --redact-key, -path, -value as 'K', 'P', 'V'; --keep-secrets as
 * 'k'): 1, taken into a; 0 when it is not; EXIT_ERROR (said) when it cannot be.
 */
int ex_arg(const struct cmd_entry *cmd, struct ex_args *a, int c, const char *arg);

/*
 * Check a, open the capture and write its sessions (every one unless -s)
 * through f, redacted unless --keep-secrets, to a->out: standard output
 * (NULL or "-"); a regular file replaced whole at the end through a temporary
 * file beside it (a failure or SIGINT, SIGTERM or SIGHUP leaves the old one
 * and no temporary file); a device or FIFO as it is; never the capture
 * itself. Says what fails. Returns the command's exit status.
 */
int ex_run(const struct cmd_entry *cmd, const struct ex_format *f, struct ex_args *a);

/*
 * Its parts, for a command that writes sessions of more than one capture
 * (report --diff): the output opened as ex_run opens it (out, cmd: as there;
 * the capture checked against is x->path), body(x, ctx) called to write, and
 * the output closed or left as it was. EXIT_OK or EXIT_ERROR (said).
 */
int ex_output(struct ex_sink *x, const struct cmd_entry *cmd, const char *out,
	      int (*body)(struct ex_sink *x, void *ctx), void *ctx);
/* In body: the format's beginning, one session of x->st, the end. 0, or -1 (said). */
int ex_begin(struct ex_sink *x);
int ex_session(struct ex_sink *x, int64_t id);
int ex_end(struct ex_sink *x);

#endif
