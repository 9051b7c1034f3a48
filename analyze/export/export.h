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
	unsigned spans;    /* otlp --spans: EX_SPANS_* (0: EX_SPANS_CLIENT) */
	int notifications; /* otlp --notifications: a span per notification too */
	int content;       /* otlp --otlp-content: tools' arguments and results */
};

struct ex_sink {
	FILE *out;
	const char *out_name; /* as said in errors */
	struct store *st;
	const char *path;                        /* the capture file */
	const struct mt_redact *redact;          /* NULL: --keep-secrets */
	struct mt_filter *filter;                /* -Y (borrowed; set on the store), or NULL */
	int filtered;                            /* -Y: only the messages it passes come */
	const struct store_session_row *session; /* the session being written (&row) */
	struct store_session_row row;
	const struct ex_format *format;
	const struct ex_opts *o; /* the format options (never NULL) */
	void *priv;              /* the format's own state */
	struct mt_err err;
	/* Scratch for the redaction of an item (ex_redact_*). */
	struct mt_buf red, red2, xb[6];
	struct store_exchange_row xcopy;
	struct store_item icopy;
	int pem; /* a stderr line inside a private key */
};

struct ex_format {
	const char *name;
	const char *what; /* for --help: one line */
	unsigned flags;   /* store_each_item_ex's (STORE_ITEMS_*) */
	unsigned filter;  /* how -Y picks messages (store_set_filter's STORE_FILTER_*) */
	int binary;       /* never written to a terminal */
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

#endif
