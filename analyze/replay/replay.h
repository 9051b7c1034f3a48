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
 *
 * The script keeps what matching needs (see rp_load); the bytes of a message
 * are read from the capture file when they are about to be sent or compared,
 * and parsed then.
 */
#ifndef MCPTAP_REPLAY_H
#define MCPTAP_REPLAY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/replay/canon.h"
#include "schema/map.h"
#include "schema/message.h"
#include "schema/store.h"

/*
 * One recorded message, as little of it as matching needs (48 bytes): its
 * bytes stay in the capture file and are read back when they are sent or
 * compared (rp_read). Indexes are into rp_script.m, -1 for none.
 */
struct rp_msg {
	int64_t seq;
	int64_t t_ns;
	const char *method;   /* requests and notifications that parse: their method, interned
			       * (owned by the script; one pointer per name); else NULL */
	int32_t answer;       /* requests: their recorded answer */
	int32_t request;      /* answers: the request they answer */
	int32_t next_same;    /* client requests/notifications: the next one with the same key */
	int32_t cancelled_by; /* requests: the notifications/cancelled from the same side that
			       * names them */
	union {
		int32_t live;     /* the mock's: its slot of live ids for this client request */
		uint32_t id_hash; /* while loading, requests: a hash of their id (0: none) */
	};
	unsigned kind : 4;     /* enum mt_kind */
	unsigned c2s : 1;      /* client to server */
	unsigned used : 1;     /* client requests/notifications: matched already */
	unsigned redacted : 1; /* client messages: hold a value the tap redacted */
	unsigned pattern : 1;  /* client requests/notifications: redacted, so matched as a
				* pattern: a redacted value matches any live value at its place
				* (see rp_load) */
	unsigned token : 1;    /* client requests: carry a progress token (see tokens) */
	unsigned idless : 1;   /* answers: sent without an id, or with a null one (the store
				* paired them with their POST's request): the mock sends them so */
	unsigned refused : 1;  /* client requests of an HTTP recording: the server answered
				* their POST with an HTTP error and no JSON-RPC answer (a 401, say;
				* see rp_http_reply) */
};

/* A match key's place: its hash, and the client messages that have it. */
struct rp_key {
	uint64_t h[2]; /* SipHash-2-4 (128 bits) of the key */
	int32_t first; /* the first unused client message with it, -1 once all are used */
	int32_t last;  /* the last one with it; -1: an empty place */
};

/* The bytes of a few recorded messages in a row, read ahead from the store. */
struct rp_cache {
	size_t lo, n;      /* messages lo .. lo + n - 1 are held */
	size_t *off;       /* owned: where each starts in buf, n + 1 of them */
	struct mt_buf buf; /* their bytes, without newlines */
	size_t one;        /* a message read on its own (out of order) */
	int has_one;
	struct mt_buf one_buf; /* its bytes */
};

/*
 * An HTTP reply the recording holds that no JSON-RPC message carries: the
 * refusal of a client request's POST (msg: the request), or an exchange with
 * no JSON-RPC at all (msg -1: OAuth metadata under /.well-known, ...).
 */
struct rp_http_reply {
	int32_t msg;  /* the refused client request, or -1 */
	char *method; /* owned: the request's method (GET, POST, ...) */
	char *target; /* owned: its path and query, as stored (redacted) */
	int status;
	char *headers_json; /* owned: the response's headers as stored (JSON [[name, value]]) */
	char *body;         /* owned: the response's body as kept, or NULL */
	size_t body_len;
};

/*
 * A stream the recorded client resumed with Last-Event-ID (Streamable HTTP),
 * and what the recorded server sent on it again: the recorded messages the
 * copies were of (the script leaves copies out), in the order they came again.
 */
struct rp_resume {
	int64_t exchange; /* the resuming GET's exchange */
	int32_t *orig;    /* owned: the messages sent again, as script indexes */
	size_t n;
	size_t copies; /* the JSON-RPC copies it carried (those of no recorded
			* message the script holds are not in orig) */
};

/* How a recorded message travelled. */
enum rp_via {
	RP_VIA_STDIO, /* a line of a stdio session */
	RP_VIA_BODY,  /* an HTTP body: a POST's, or a JSON response's */
	RP_VIA_POST,  /* an SSE event on the stream a POST's response opened */
	RP_VIA_GET,   /* an SSE event on a GET stream (legacy HTTP+SSE: every reply) */
};

/* The recording's transport (the session row's). */
enum rp_transport { RP_STDIO, RP_HTTP, RP_SSE };

struct rp_script {
	int64_t session;
	enum rp_transport transport;
	char *path;       /* owned: HTTP recordings: the path of the first POST (the MCP
			   * endpoint), or of the legacy GET stream; NULL otherwise */
	struct store *st; /* borrowed: the capture, open while the script is used */
	struct rp_msg *m; /* owned, in seq order */
	size_t n;
	size_t requests;    /* recorded client requests */
	size_t server_msgs; /* recorded server messages */
	size_t replayed;    /* messages left out: events a server sent again on a resumed
			     * stream, and the client's answers to requests among them */
	struct canon_ignore ig;
	char *ig_named;      /* owned: per ignore path NAME=PATH: 1 when NAME is the method or
			      * params.name of a recorded client request */
	struct rp_key *keys; /* owned: open addressing, keys_cap places (a power of two) */
	size_t keys_cap, keys_len;
	int32_t *patterns; /* owned: the client messages that are patterns, in order */
	size_t npatterns, patterns_cap;
	struct mt_map names; /* method name -> its index in name */
	char **name;         /* owned: the interned method names */
	size_t nnames, names_cap;
	struct mt_map tokens; /* a client request's progress token (JSON text) -> the last
			       * client request with it */
	struct mt_buf keybuf; /* scratch for match keys */
	/* HTTP recordings (NULL for stdio ones), per message: */
	unsigned char *via; /* owned: enum rp_via */
	int32_t *on;        /* owned: the client message its exchange's POST carried
			     * (the request whose response stream it came on), or -1 */
	/*
	 * HTTP recordings' blocks (see rp_block_first): messages on different
	 * streams are concurrent, so a server message on a POST's stream follows
	 * the last client message of that POST's conversation (its request, the
	 * client's answers to server requests sent on its stream, its cancel),
	 * not the last client message of all. Per message: the next server
	 * message of its block, or -1; blocks[i + 1] the first of client
	 * message i's block ([0]: before any client message), or -1.
	 */
	int32_t *block_next;           /* owned */
	int32_t *blocks;               /* owned: n + 1 */
	struct rp_http_reply *replies; /* owned: an HTTP recording's replies no message carries */
	size_t nreplies, replies_cap;
	struct rp_resume *resumes; /* owned: the recorded resumptions, in order */
	size_t nresumes;
	struct rp_cache cache;
	size_t read_errors;     /* messages that could not be read back */
	struct mt_err read_err; /* why, the first time */
};

/*
 * Parse JSON the classifier accepted. Integers beyond 64 bits, which Jansson
 * refuses as integers, come back as reals; NULL only past Jansson's own limits
 * (nesting deeper than 2048).
 */
json_t *rp_parse(const char *p, size_t n);

/*
 * Load a session from the store st (borrowed: it must stay open until
 * rp_release, since message bytes are read from it when they are needed).
 * ig (borrowed, kept) says which params paths matching ignores. A recorded
 * client message that holds values the tap redacted is a pattern: a marker
 * matches any text at its place in a string (any string or number when it is
 * the whole value), and everything else must match as usual. What is kept
 * per message is struct rp_msg, per distinct key struct rp_key, and the
 * names, patterns and progress tokens of client requests; no message's bytes
 * or parsed JSON. Returns 0, or -1 with err set (no such session, a store
 * error, more than INT32_MAX messages). An empty session is loaded (n == 0):
 * the caller decides.
 */
int rp_load(struct store *st, int64_t session, const struct canon_ignore *ig, struct rp_script *s,
	    struct mt_err *err);
void rp_release(struct rp_script *s);

/*
 * Recorded message i's bytes (without the newline), read from the store, a
 * few messages ahead at a time: *p (borrowed until the next rp_read or a
 * function below that reads) and *n; and, when c is not NULL, its
 * classification (spans into *p). Returns 0, or -1 with err set when the
 * store fails or the capture no longer holds the message as loaded (then
 * also counted in read_errors, the first reason kept in read_err; err may
 * be NULL).
 */
int rp_read(struct rp_script *s, size_t i, const char **p, size_t *n, struct mt_class *c, struct mt_err *err);

/*
 * Recorded message i parsed: 0 and a new reference in *out (NULL when it
 * does not parse), or -1 as rp_read.
 */
int rp_json(struct rp_script *s, size_t i, json_t **out, struct mt_err *err);

/*
 * SipHash-2-4 of n bytes with 128 bits out, under the key 00 01 .. 0f (the
 * reference's test key: a strong hash, not a secret), into out: what match
 * keys are kept as.
 */
void rp_hash(const void *data, size_t n, uint64_t out[2]);

/*
 * Add session's exchanges without JSON-RPC to s->replies (s: a script, or a
 * zeroed one kept for its replies alone; rp_release frees them). 0, or -1
 * with err set.
 */
int rp_add_other_replies(struct store *st, int64_t session, struct rp_script *s, struct mt_err *err);

/*
 * Per recorded message of an HTTP recording, the HTTP error status (400 to
 * 599) the POST that carried it got, else 0: a new array of s->n in *out
 * (free it); NULL for a stdio recording. 0, or -1 with err set.
 */
int rp_error_statuses(struct rp_script *s, int **out, struct mt_err *err);

/* The refusal of recorded client request i (its refused bit set), or NULL. */
const struct rp_http_reply *rp_refusal(const struct rp_script *s, int64_t i);

/*
 * The recorded reply to a request with no JSON-RPC (method, a path and query
 * as target): the first of s's with the same method and target, else with
 * the same method and path; NULL when none.
 */
const struct rp_http_reply *rp_other_reply(const struct rp_script *s, const char *method, const char *target);

/*
 * The server messages that follow client message a (-1: those before any
 * client message) in the recording, the block the mock plays when a's live
 * counterpart comes: the first (rp_block_first, -1 when none) and the next
 * after j (rp_block_next, -1 at the end). A stdio recording's block is the
 * server messages read after a up to the next client message.
 */
int64_t rp_block_first(const struct rp_script *s, int64_t a);
int64_t rp_block_next(const struct rp_script *s, int64_t j);

/* The interned name equal to method, or NULL when no recorded message has that method. */
const char *rp_name(const struct rp_script *s, const char *method);

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
void rp_ignore_for(const struct rp_script *s, const char *method, json_t *params, struct canon_ignore *out);

/* What a request's params name: a tool's or a prompt's name, else a resource's uri; borrowed. */
const char *rp_subject(json_t *params);

/*
 * Recorded request i's method and subject for people: "tools/call echo",
 * "resources/read file:///x", "ping" (the subject read from the store; the
 * method alone when it cannot be read). Into out (reset first).
 */
void rp_describe(struct rp_script *s, size_t i, struct mt_buf *out);

/*
 * Check the ignore paths against the recording: each PATH must start at
 * params, result or error, and the NAME of a NAME=PATH must be the method of
 * a recorded client request or the name in its params (as rp_load found).
 * Returns 0, or -1 with err saying which path is wrong and why.
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
 * *reused is set when it was used before. Marks it used. Patterns are read
 * from the store (one that cannot be read matches nothing: see read_errors).
 */
int64_t rp_match_request(struct rp_script *s, const char *method, json_t *params, int *reused);

/* Would rp_match_request find a recording for it? (Nothing is used up.) */
int rp_has_request(struct rp_script *s, const char *method, json_t *params);

/* The same for a live client notification (no reuse). */
int64_t rp_match_notification(struct rp_script *s, const char *method, json_t *params);

/*
 * For a miss: the recorded client request with the same method whose params
 * differ least (or -1 when the method was never recorded), and the paths
 * that differ into the JSON array diffs, and the recorded value at each into
 * was ([value], or [] where it has none; was may be NULL). Each candidate is read from
 * the store.
 */
int64_t rp_closest(struct rp_script *s, const char *method, json_t *params, json_t *diffs, json_t *was);

/*
 * A recorded message (p, n bytes, classified as c) rewritten for sending: its
 * id replaced by the JSON text id (idn bytes; NULL: keep), and, for
 * notifications/progress, its progress token by the JSON text token (NULL:
 * keep). The recorded bytes are kept otherwise, byte for byte. Appends the
 * result and a newline to out.
 */
void rp_splice(const char *p, size_t n, const struct mt_class *c, const char *id, size_t idn,
	       const char *token, size_t tokn, struct mt_buf *out);

/* The same for recorded message i, read from the store: 0, or -1 as rp_read. */
int rp_render(struct rp_script *s, size_t i, const char *id, size_t idn, const char *token, size_t tokn,
	      struct mt_buf *out, struct mt_err *err);

#endif
