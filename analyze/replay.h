/*
 * replay.h - a recorded session prepared for replay, and the matching logic:
 * which recorded message a live one stands for, and which recorded messages
 * follow it.
 *
 * The recording is cut into anchors and blocks: every client message is an
 * anchor, and the server messages read after it (up to the next client
 * message) are its block. Live client messages are matched to recorded client
 * messages, never by JSON-RPC id:
 *   - a request by its key (method + canonical params, see canon.h), the N-th
 *     identical live request to the N-th recorded one; when they run out, the
 *     last one is reused for idempotent methods (initialize, ping, *\/list);
 *   - an answer to a server request by that request (the mock gave it a fresh
 *     id and knows which recorded request it stands for);
 *   - a notification by its key, in order; unmatched ones are consumed.
 * When an anchor is matched, its block is played: answers get the live id of
 * the request they answer, progress notifications the live progress token,
 * server requests a fresh id.
 */
#ifndef MCPTAP_REPLAY_H
#define MCPTAP_REPLAY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/canon.h"
#include "schema/map.h"
#include "schema/message.h"
#include "schema/store.h"

/* One recorded message. */
struct rp_msg {
	int64_t seq;
	int64_t t_ns;
	int c2s;               /* 1: client to server */
	char *raw;             /* owned: the bytes without the newline */
	size_t len;
	struct mt_class cls;   /* spans into raw */
	const char *method;    /* borrowed from json (requests, notifications), or NULL */
	json_t *json;          /* owned: parsed, NULL when it does not parse */
	char *key;             /* owned: client requests and notifications: the match key */
	int64_t answer;        /* requests: index of their recorded answer, or -1 */
	int64_t request;       /* answers: index of the request they answer, or -1 */
	int64_t anchor;        /* server messages: index of the client message before
				* them (-1: before any) */
	int used;              /* client requests/notifications: matched already */
	int pattern;           /* client requests/notifications: holds values the tap redacted,
				* which match any live value at their place (see rp_load) */
	int64_t next_same;     /* client messages: the next one with the same key, or -1 */
	int64_t cancelled_by;  /* requests: index of the notifications/cancelled from the same
				* side that names them, or -1 */
	const char *subject;   /* requests: what they name (params.name of a tool or
				* prompt, params.uri of a resource), borrowed from json, or NULL */
	/* While replaying: */
	json_t *live_id;       /* client requests: the live id it was matched to (owned) */
	struct mt_buf live_id_text;    /* the same as JSON text (the mock's) */
	struct mt_buf live_token_text; /* its live progress token as JSON text, if any */
};

struct rp_script {
	int64_t session;
	struct rp_msg *m;      /* owned, in seq order */
	size_t n;
	struct mt_map by_key;  /* key -> index of the first unused client message with it
				* (-1 once all are used) */
	struct mt_map last_key;/* key -> index of the last client message with it */
	size_t requests;       /* recorded client requests */
	size_t server_msgs;    /* recorded server messages */
	struct canon_ignore ig;
	size_t npatterns;      /* client messages that hold redacted values */
	struct mt_buf keybuf;  /* scratch for match keys */
};

/*
 * Load a session from the store. ig (borrowed, kept) says which params
 * paths matching ignores. A recorded client message that holds values the
 * tap redacted is a pattern: a marker matches any text at its place in a
 * string (any string or number when it is the whole value), and everything
 * else must match as usual. Returns 0,
 * or -1 with err set (no such session, a store error). An empty session is
 * loaded (n == 0): the caller decides.
 */
/*
 * Parse JSON the classifier accepted. Integers beyond 64 bits, which Jansson
 * refuses as integers, come back as reals; NULL only past Jansson's own limits
 * (nesting deeper than 2048).
 */
json_t *rp_parse(const char *p, size_t n);

int rp_load(struct store *st, int64_t session, const struct canon_ignore *ig,
	    struct rp_script *s, struct mt_err *err);
void rp_release(struct rp_script *s);

/*
 * The paths (base, then ".member" and "[i]") of the strings in v that hold a
 * redaction marker, as the keys of the JSON object set.
 */
void rp_marker_paths(json_t *v, const char *base, json_t *set);

/*
 * The ignore paths that apply to a request: those without a scope, and those
 * written SCOPE=PATH whose SCOPE is the request's method or the name in its
 * params (a tool's or a prompt's name). The path strings are borrowed from s;
 * out->paths is a new array (free it).
 */
void rp_ignore_for(const struct rp_script *s, const char *method, json_t *params,
		   struct canon_ignore *out);

/* What a request's params name: a tool's or a prompt's name, else a resource's uri; borrowed. */
const char *rp_subject(json_t *params);

/*
 * A request's method and subject for people: "tools/call echo",
 * "resources/read file:///x", "ping". Into out (reset first).
 */
void rp_describe(const struct rp_msg *m, struct mt_buf *out);

/*
 * Check the ignore paths against the recording: each PATH must start at
 * params, result or error, and the NAME of a NAME=PATH must be the method of
 * a recorded client request or the name in its params. Returns 0, or -1 with
 * err saying which path is wrong and why.
 */
int rp_ignore_check(const struct rp_script *s, struct mt_err *err);

/*
 * The params a request's match key is made of: none for initialize (what the
 * client says of itself never decides the handshake), else params. Borrowed.
 */
json_t *rp_key_params(const char *method, json_t *params);

/*
 * May a recorded server request (method, params) go to a live client that
 * declared caps (the capabilities object of its initialize params, borrowed;
 * NULL or not an object: it declared none)? Returns NULL when it may, else
 * the capability the client lacks, as a static path under capabilities:
 *   sampling/createMessage  "sampling"
 *   roots/list              "roots"
 *   elicitation/create      "elicitation"; with params.mode "url":
 *                           "elicitation.url"; in form mode (the default),
 *                           "elicitation.form" when elicitation names only
 *                           other modes ({} or {"form":{}} allow form mode)
 * and a task-augmented one (params.task present) of the first or the third
 * also "tasks.requests.sampling.createMessage" or
 * "tasks.requests.elicitation.create". Other methods need nothing.
 */
const char *rp_missing_capability(const char *method, json_t *params, json_t *caps);

/* Is method idempotent, so that its last recording may answer it again? */
int rp_idempotent(const char *method);

/*
 * The recorded client request that a live request (method, params) stands
 * for: the first unused one with the same key; or, when all are used and the
 * method is idempotent, the last one with that key. Returns its index or -1.
 * *reused is set when it was used before. Marks it used.
 */
int64_t rp_match_request(struct rp_script *s, const char *method, json_t *params, int *reused);

/* The same for a live client notification (no reuse). */
int64_t rp_match_notification(struct rp_script *s, const char *method, json_t *params);

/*
 * For a miss: the recorded client request with the same method whose params
 * differ least (or -1 when the method was never recorded), and the paths
 * that differ into the JSON array diffs.
 */
int64_t rp_closest(const struct rp_script *s, const char *method, json_t *params, json_t *diffs);

/*
 * Rewrite recorded message i for sending: its id replaced by the JSON text id
 * (idn bytes; NULL: keep), and, for notifications/progress, its progress token
 * by the JSON text token (NULL: keep). The recorded bytes are kept otherwise,
 * byte for byte. Appends the result and a newline to out.
 */
void rp_render(const struct rp_script *s, size_t i, const char *id, size_t idn, const char *token,
	       size_t tokn, struct mt_buf *out);

#endif
