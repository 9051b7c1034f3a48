/*
 * rules.c - the list of rule tables. Each family of rules (lifecycle, JSON-RPC
 * framing, capabilities, stdio, result shapes, tasks, 2026-07-28) is one table
 * in its own file; `mcptap analyze --list-rules` prints them in this order.
 */
#include "analyze/analyze.h"

extern const struct an_rule an_rules_life[];
extern const struct an_rule an_rules_rpc[];

const struct an_rule *const an_rule_tables[] = {
	an_rules_life,
	an_rules_rpc,
	NULL,
};

const struct an_tracker *const an_tracker_tables[] = {
	NULL,
};
