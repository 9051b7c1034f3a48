/*
 * methods.h - the MCP method table (MCP-RULES §1 and Appendix A): which
 * revisions have each request and notification method, and who may send it.
 * The engine asks it what a message may be before the rules run; the rules
 * (rpc.c, life.c) ask it what a revision has. Pure lookups, no state but a
 * small memo of the latest names.
 *
 * Prefix: an_method_ (the analyzer's an_; an_method_outside(), in analyze.h,
 * is the RPC rules').
 */
#ifndef MCPTAP_METHODS_H
#define MCPTAP_METHODS_H

#include "analyze/analyze.h"

/* The revisions whose schema has `method` (AN_V bits); AN_EVERY for one in no table. */
unsigned an_method_revisions(const char *method);
/* Is `method` in some revision's table (NULL: no)? */
int an_method_known(const char *method);
/* Is `method` in revision v's table? */
int an_method_in(const char *method, enum an_version v);
/*
 * Is a request or notification valid for the role of its sender? NULL when it
 * is, or when the method is in no revision's table; else what is wrong (static
 * text). The row of revision v decides; a method absent from v is judged by
 * the role it has in the revisions that have it. A notifications/... method
 * sent with an id is RPC-007's, not this.
 */
const char *an_method_role_problem(enum an_version v, enum an_dir dir, enum mt_kind kind, const char *method);

#endif
