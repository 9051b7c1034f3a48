/*
 * report.h - the analyzer's report writers: text like a compiler's, JSON,
 * SARIF 2.1.0 and JUnit XML.
 *
 * Findings come one at a time, as the engine makes them, and a report's
 * memory does not grow with them. Text is printed as they come. The other
 * formats need a session's findings, or the whole run's, before they can
 * write (counts come first, JUnit groups them by rule, SARIF numbers them):
 * they keep the findings in a private temporary SQLite database on disk,
 * deleted when the report is freed, and write the document at
 * report_finish(), reading them back in order.
 *
 * The calls come in this order: report_new; for each session
 * report_session_begin, then report_item for each item the walk reads and
 * report_finding for each finding, then report_session_end; then
 * report_finish and report_free.
 */
#ifndef MCPTAP_REPORT_H
#define MCPTAP_REPORT_H

#include <stdio.h>

#include "analyze/analyze.h"

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_SARIF, REPORT_JUNIT };

struct report_opts {
	enum report_format format;
	const char *path;            /* the capture file, as given (borrowed) */
	enum an_severity fail_on;    /* junit: at or above this a testcase fails */
	int fail_never;              /* --fail-on never */
	int color;                   /* text: ANSI colours */
	const struct an_options *an; /* which rules ran (borrowed) */
	size_t max_per_rule;         /* at most this many findings of a rule reported (0: all);
				      * every one is counted */
};

struct report;

/*
 * A new report written to f (borrowed), with the options o (copied; what its
 * pointers point to is borrowed for the report's life). Returns 0 and the
 * report in *out (free with report_free), or -1 with the reason in err when
 * the temporary database cannot be made.
 */
int report_new(FILE *f, const struct report_opts *o, struct report **out, struct mt_err *err);
/* Free the report and its temporary database; NULL is fine. */
void report_free(struct report *r);

/*
 * A session begins. st (borrowed until report_session_end) is the engine's
 * state: text findings say the revision it checks against at the time.
 */
void report_session_begin(struct report *r, int64_t session, const struct an_state *st);
/*
 * An item of the session (a message, stderr line or gap) as the walk reads
 * it, in seq order (seq < 0: a gap whose place is unknown). SARIF locates a
 * finding at the line of its message in the session's export, `mcptap show
 * -T json`, which prints one line per item in this order.
 */
void report_item(struct report *r, int64_t seq);
/* A finding of the current session (borrowed for the call). */
void report_finding(struct report *r, const struct an_finding *f);
/* The session is over: its state is final. */
void report_session_end(struct report *r);

/*
 * Write what is left of the report and flush f. Returns 0, or -1 with the
 * reason in err when writing or the temporary database failed (the first
 * such failure since report_new).
 */
int report_finish(struct report *r, struct mt_err *err);

/* The part of a rule's source before ';' ("MCP-RULES §3.1"), into out. */
void report_section(const struct an_rule *r, char *out, size_t n);

#endif
