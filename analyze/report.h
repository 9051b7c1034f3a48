/*
 * report.h - the analyzer's report writers: text like a compiler's, JSON,
 * SARIF 2.1.0 and JUnit XML. Pure formatting: they write to the FILE given.
 */
#ifndef MCPTAP_REPORT_H
#define MCPTAP_REPORT_H

#include <stdio.h>

#include "analyze/analyze.h"

/* One analyzed session (all borrowed). */
struct report_session {
	int64_t session;
	const struct an_state *st;
	const struct an_finding *findings;
	size_t nfindings;
};

struct report_opts {
	const char *path;            /* the capture file, as given */
	enum an_severity fail_on;    /* junit: at or above this a testcase fails */
	int fail_never;              /* --fail-on never */
	int color;                   /* text: ANSI colours */
	const struct an_options *an; /* which rules ran */
};

void report_text(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o);
void report_json(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o);
void report_sarif(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o);
void report_junit(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o);

/* The part of a rule's source before ';' ("MCP-RULES §3.1"), into out. */
void report_section(const struct an_rule *r, char *out, size_t n);

#endif
