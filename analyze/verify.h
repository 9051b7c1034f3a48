/*
 * verify.h - the recorded client against a live server (`mcptap replay --as
 * client`): every live answer compared with the recorded one. The matching
 * rules are in replay.h; the wire is tap/lineio.h (stdio lines).
 */
#ifndef MCPTAP_VERIFY_H
#define MCPTAP_VERIFY_H

#include "analyze/replay.h"

/* The most live runs (--runs). */
#define VERIFY_MAX_RUNS 100

struct verify_opts {
	char **argv;             /* the live server's command (borrowed) */
	int timeout_ms;          /* wait at most this long for each answer */
	struct store *st;        /* where the run is stored (borrowed), or NULL */
	const char *store_path;  /* its path, for messages */
	const char *ignore_json; /* the --ignore paths as a JSON array text, or NULL */
	int runs;                /* live runs (a fresh server each, VERIFY_MAX_RUNS at most); 2 or
				  * more tell noise from change */
	int fast;                /* send as fast as the answers allow, not at the recorded pace */
	int verbose;             /* -v: recorded and live values at each differing or noisy path */
};

/* Run the recorded client; prints one line per request; returns the exit status. */
int verify_run(struct rp_script *s, const struct verify_opts *o);

#endif
