/*
 * rules-flow.c - (being written) a family of analyzer rules; see analyze.h.
 */
#include "analyze/analyze.h"

const struct an_rule an_rules_flow[] = {
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_flow[] = {
	{0, NULL, NULL, NULL},
};
