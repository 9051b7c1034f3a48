/*
 * sdiff.h - two recorded sessions compared offline (`mcptap diff`): the
 * conversations aligned by the replay engine's matching, not by position,
 * and each exchange judged as verify judges a live answer. Pure over the
 * stores: no printing.
 *
 * An exchange is a request and its answer: the client's (not one whose POST
 * an HTTP server refused with an error status, like one sent after the
 * session's DELETE: that is the transport's), or the server's (sampling,
 * elicitation, roots; the answer the client's). B's client requests are
 * matched to A's as a mock matches a live client's (replay.h: method +
 * canonical params, the N-th identical request to the N-th; no reuse): as
 * they are, else with the values B's server minted and B's client sent back
 * (task ids, cursors) replaced by those A's server minted at the same place
 * (mint.h), so that such requests still match. The server's requests are
 * matched among themselves by their own key (method + canonical params), in
 * order. A request left over on both sides with the same direction, method
 * and subject (tool, prompt, resource) pairs with the first such one of the
 * other side: its params differ. The rest are added (B only) or missing (A
 * only).
 *
 * A pair is the same when the params and the answers (result or error, at any
 * depth; numbers by value, "_meta" and the ignore paths left out) agree.
 * Never compared: JSON-RPC ids, progress tokens (in params._meta), session
 * ids, event ids, timing and transport (stdio and HTTP recordings of one flow
 * are the same), notifications, and the answers of a request both sides
 * cancelled (a race).
 *
 * Noise: a third recording of A's side (the same flow against the same server)
 * is aligned with A the same way; the paths where it differs from A are noise
 * for that exchange of A, and a difference at such a path is set aside.
 */
#ifndef MCPTAP_SDIFF_H
#define MCPTAP_SDIFF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/replay/replay.h"

/* How many differing paths are kept per exchange (the rest are counted). */
#define SD_MAX_PATHS 1000

enum sd_status { SD_SAME, SD_CHANGED, SD_ADDED, SD_MISSING };

/* One exchange, as judged. Every pointer is borrowed for the callback's time. */
struct sd_item {
	enum sd_status status;
	int s2c;              /* a server's request (its answer the client's), not a client's */
	const char *method;   /* the request's method */
	const char *subject;  /* its tool's or prompt's name, else its resource's uri, or NULL
			       * (SD_SAME: may be NULL, the request not read again) */
	int64_t a_seq, b_seq; /* the request's seq on each side, -1 where it has none */
	json_t *diffs;        /* SD_CHANGED: [{"path": P, "a": V, "b": V}], a side's value
			       * left out where it has none; at most SD_MAX_PATHS */
	size_t ndiffs;        /* the size of diffs (the first SD_MAX_PATHS differences
			       * looked at, noise set aside) */
	json_t *noise;        /* the paths that differ but were set aside as noise */
};

/* Counts over a whole diff. */
struct sd_totals {
	size_t a_exchanges, b_exchanges; /* exchanges on each side */
	size_t same, changed, added, missing;
	size_t noise; /* paths set aside as noise, over every exchange */
};

/* Called for each exchange: B's in order (same, changed, added), then A's missing ones.
 * Non-zero stops the diff (sd_run returns -1, err "stopped"). */
typedef int (*sd_each_fn)(const struct sd_item *it, void *ctx);

/*
 * Add to noise (an object: A's request index, in decimal -> an array of
 * paths) the paths where c, another recording of A's side, differs from a.
 * a and c are freshly loaded scripts (rp_load) and are used up: load a again
 * for the next call. 0, or -1 with err set when a recording cannot be read.
 */
int sd_noise(struct rp_script *a, struct rp_script *c, json_t *noise, struct mt_err *err);

/*
 * Compare b with a (freshly loaded, used up as above), noise as sd_noise made
 * it (NULL: none), calling each per exchange; the counts into t. 0, or -1 with
 * err set when a recording cannot be read.
 */
int sd_run(struct rp_script *a, struct rp_script *b, json_t *noise, sd_each_fn each, void *ctx,
	   struct sd_totals *t, struct mt_err *err);

#endif
