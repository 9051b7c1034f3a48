/*
 * analyze.h - the rule engine: what a rule is, what it sees, how it reports.
 *
 * The engine walks one session once, in seq order. For each message it first
 * works out what the message is in context (the request an answer answers,
 * the negotiated revision, both sides' capabilities), then runs the rules
 * hooked to that kind of message, then updates its state (open requests, ids
 * used, progress tokens, subscriptions, tools, tasks ...). Rules read the
 * state and the message; they never write the state, never touch SQL and do
 * no I/O. A rule reports through an_report().
 *
 * Rules are rows: each family file (rules/life.c, rules/cap.c, ...) holds one
 * table of struct an_rule, listed in an_rule_tables[] (rules.c).
 */
#ifndef MCPTAP_ANALYZE_H
#define MCPTAP_ANALYZE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/map.h"
#include "schema/message.h"
#include "schema/util.h"

struct store_item;

/* Protocol revisions, oldest first. */
enum an_version {
	AN_V2024_11_05,
	AN_V2025_03_26,
	AN_V2025_06_18,
	AN_V2025_11_25,
	AN_V2026_07_28,
	AN_VERSION_COUNT
};

/* Bitmasks of revisions, for an_rule.versions. */
#define AN_V(v) (1u << (v))
#define AN_ALL4 (AN_V(AN_V2024_11_05) | AN_V(AN_V2025_03_26) | AN_V(AN_V2025_06_18) | AN_V(AN_V2025_11_25))
#define AN_FROM_0326 (AN_V(AN_V2025_03_26) | AN_V(AN_V2025_06_18) | AN_V(AN_V2025_11_25))
#define AN_FROM_0618 (AN_V(AN_V2025_06_18) | AN_V(AN_V2025_11_25))
#define AN_ONLY_1125 AN_V(AN_V2025_11_25)
#define AN_V26 AN_V(AN_V2026_07_28)
#define AN_EVERY (AN_ALL4 | AN_V26)

/* "2025-06-18" for a revision; NULL for an invalid one. */
const char *an_version_name(enum an_version v);
/* The revision named s: 0 and *v when known, -1 otherwise. */
int an_version_parse(const char *s, enum an_version *v);
/* The known revision nearest to a date-like string s (YYYY-MM-DD); unknown
 * shapes map to the newest of the four stateful revisions. */
enum an_version an_version_nearest(const char *s);

enum an_severity { AN_INFO, AN_WARNING, AN_ERROR, AN_SEVERITY_COUNT };
const char *an_severity_name(enum an_severity s);

/* Severity policies of a rule (an_rule.sev_policy). */
enum an_sev_policy {
	AN_SEV_FIXED,     /* always an_rule.sev */
	AN_SEV_MUST_0618, /* warning up to 2025-03-26, error from 2025-06-18 (LIFE-011: SHOULD -> MUST) */
	AN_SEV_MUST_0326, /* info in 2024-11-05, an_rule.sev from 2025-03-26 */
};

enum an_dir { AN_C2S, AN_S2C };

/* What a rule hooks: bits of an_rule.hooks. */
enum {
	AN_ON_REQUEST = 1 << 0,
	AN_ON_NOTIFICATION = 1 << 1,
	AN_ON_RESPONSE = 1 << 2,   /* a result */
	AN_ON_ERROR = 1 << 3,      /* an error response */
	AN_ON_BATCH = 1 << 4,      /* the array itself; its elements come as messages too */
	AN_ON_INVALID = 1 << 5,    /* not JSON */
	AN_ON_NOTJSONRPC = 1 << 6, /* JSON, but not a JSON-RPC message */
	AN_ON_STDERR = 1 << 7,
	AN_ON_END = 1 << 8,         /* the session is over: m is NULL */
	AN_ON_GAP = 1 << 9,         /* a capture gap: m->gap says what is missing */
	AN_ON_UNREADABLE = 1 << 10, /* JSON beyond the parser's limits: m->unreadable says which */
	AN_ON_HTTP = 1 << 11,       /* HTTP sessions: an exchange begins or is done, or a message
				     * is a copy no other rule reads (m->http says which) */
	AN_ON_ANSWER = AN_ON_RESPONSE | AN_ON_ERROR,
	AN_ON_MESSAGE = AN_ON_REQUEST | AN_ON_NOTIFICATION | AN_ON_RESPONSE | AN_ON_ERROR,
	/*
	 * Not a hook: the rule judges a message's form (framing, ids, encoding),
	 * not its meaning, so it also runs on the messages the engine does not
	 * judge by meaning (an_msg.unjudged).
	 */
	AN_FRAMING = 1 << 16,
};

/* The transport a session was captured on (session.transport). */
enum an_transport { AN_T_STDIO, AN_T_HTTP, AN_T_SSE };

/*
 * One HTTP exchange (an http_exchange row) as the engine keeps it, owned by
 * the engine: from its row until the last message that names it (or the end
 * of the session). The row comes whole, before the messages its bodies hold,
 * so its status and response headers are known from the start. A rule may
 * hold it only for the call.
 */
struct an_exchange {
	int64_t seq, conn, t_ns;
	int64_t first_byte_ns, end_ns; /* -1 when none */
	char method[16];               /* GET, POST, DELETE ... (cut at 15 bytes) */
	char *target;                  /* owned: path and query as stored (redacted), never NULL */
	json_t *req_headers;           /* owned: [[name, value], ...]; an empty array when unreadable */
	json_t *resp_headers;          /* owned: the same, or an empty array */
	int status;                    /* 0: no response */
	char *resp_type;               /* owned: json | sse | empty | other, or NULL */
	char *outcome;                 /* owned, or NULL */
	char *error;                   /* owned, or NULL */
	char *last_event_id;           /* owned: the request's Last-Event-ID, or NULL */
	int has_req_body;              /* a request body no message holds (not JSON-RPC) */
	size_t req_body_len;
	int has_resp_body; /* a response body no message holds */
	size_t resp_body_len;
	int64_t messages; /* message rows that name it */
	/* What its messages were, counted as they come. */
	int64_t seen;                      /* message rows seen */
	int64_t c2s_requests, c2s_others;  /* requests; notifications and answers (batches counted
					    * by their elements) */
	int64_t s2c_messages, s2c_with_id; /* server messages, those of them with an event id */
	int64_t s2c_invalid;               /* server messages that were not JSON-RPC */
	char *req_key;                     /* owned: the id key of the request its body held alone */
	size_t req_key_len;
	struct an_exchange *next, *prev; /* the engine's: kept exchanges, oldest first */
};

/* An exchange's header value by name (case-insensitive; the first), or NULL. */
const char *an_hdr(json_t *headers, const char *name);
/* Does the comma-separated media-range list `accept` name this media type
 * (case-insensitive, parameters ignored; wildcards do not count)? */
int an_accepts(const char *accept, const char *type);
/* Is the Content-Type value of this media type (parameters ignored)? */
int an_media_is(const char *value, const char *type);

/*
 * One request the engine knows (owned by the engine): one still open, or one
 * settled lately (answered, cancelled a while ago, or cut off by a capture
 * gap). A settled request is kept only while it is among the AN_RECENT latest
 * ones (or while a task it created is not terminal, or when it is the
 * session's first initialize); after that only its id is remembered, in the
 * compact sets of struct an_state. A rule may hold a record only for the call.
 */
struct an_request {
	int64_t seq;
	int64_t t_ns;
	enum an_dir dir;    /* who sent it */
	const char *method; /* interned by the engine (lives as long as it) */
	int64_t method_id;  /* the engine's record of the method */
	json_t *params;     /* owned, kept for the methods answers are checked against
			     * (initialize, tools/call, the lists, elicitation/create, sampling,
			     * tasks/...); NULL for the others, and freed once the request
			     * is answered (but for the first initialize's) */
	char *raw;          /* owned: the request's bytes until its params are parsed */
	size_t raw_len;
	int64_t answer_seq; /* 0 until answered */
	int64_t answer_t_ns;
	int64_t cancel_seq; /* a notifications/cancelled for it, or 0 */
	int64_t cancel_t_ns;
	int has_token;
	json_t *progress_token;  /* owned: params._meta.progressToken (until it is settled) */
	json_t *last_progress;   /* owned: the last numeric progress for its token, or NULL */
	int is_task;             /* answered with a CreateTaskResult (2025-11-25) */
	char *task_id;           /* owned: that task's id, or NULL */
	const char *task_status; /* the task's status once it is terminal (static), else NULL */
	int in_batch;            /* arrived inside a batch */
	size_t batch_requests;   /* inside a batch: how many of its elements are requests */
	uint64_t number;         /* 1 for the session's first request, then 2, 3 ... */
	int flawed;              /* the engine does not wait for its answer: it is malformed,
				  * unreadable, or not valid for its sender's role (an answer
				  * still pairs with it) */
	int unreadable;          /* beyond the JSON parser's limits (TAP-002) */
	int64_t gap_seq;         /* settled by a capture gap at this seq, or 0 */
	int64_t exchange;        /* HTTP: the exchange its body came in, or 0 */
	int exchange_sse;        /* HTTP: that exchange's response was an SSE stream */
	int64_t answer_exchange; /* HTTP: the exchange its first answer came in, or 0 */
	/* The engine's bookkeeping; rules read only open_next. */
	struct an_request *open_next, *open_prev;     /* its list: open, flawed, pinned or free */
	struct an_request *cancel_next, *cancel_prev; /* open and cancelled: settling in order */
	char *key;                                    /* owned: its id key (see an_key_of) */
	size_t key_len;
	char *token_key; /* owned: its progress token's key, or NULL */
	size_t token_key_len;
	int where; /* engine's: which list holds it */
};

/* HTTP: the most SSE event ids (and server messages with an id, for HTTP-018)
 * remembered per session, and the most exchanges kept waiting for their
 * messages; past them, what is not tracked is counted (an_http.untracked_*). */
#define AN_HTTP_EVENT_IDS 65536
#define AN_HTTP_EXCHANGES 1024

/* How many settled requests are kept in full after they settle. */
#define AN_RECENT 4096

/*
 * A compact set of request ids (as keys from an_key_of), per sender. Integer
 * ids are kept as ranges, so the 0, 1, 2 ... that SDKs count take a few bytes
 * whatever their number; so are string ids made of a fixed prefix and a
 * counter ("req-17"), for a few prefixes. Counters with holes, once there are
 * too many ranges, go to bitmaps of 4096 ids (a bit each). Every other id is
 * kept as a 64-bit hash: two different ids with the same hash (about one
 * chance in 3x10^7 among 10^6 ids) count as one, so a new id could be taken for
 * a reused one (RPC-003), or an answer to it for a second answer.
 */
struct an_id_chunk {
	int64_t base;   /* a multiple of 4096 */
	uint64_t *bits; /* owned: 4096 bits */
};

struct an_idset {
	struct an_id_class {
		uint64_t prefix;           /* 0: JSON integers; else the hash of a string prefix */
		int64_t *r;                /* owned: sorted disjoint ranges, lo and hi in pairs */
		size_t n, cap;             /* ranges held, allocated */
		struct an_id_chunk *chunk; /* owned: sorted by base */
		size_t nchunk, capchunk;
		int64_t max; /* the largest id added */
	} cls[8];
	size_t ncls;
	uint64_t *hash; /* owned: open addressing table of hashes (0: empty) */
	size_t hcap, hlen;
};

void an_idset_init(struct an_idset *s);
void an_idset_release(struct an_idset *s);
/* Add an id key; returns 1 when it was already in the set, else 0. */
int an_idset_add(struct an_idset *s, const char *key, size_t n);
/* Is the id key in the set? */
int an_idset_has(const struct an_idset *s, const char *key, size_t n);
/* The bytes the set holds (its allocations). */
size_t an_idset_bytes(const struct an_idset *s);

/* What became of a request id, as far as the engine can tell (an_id_fate). */
enum an_id_fate {
	AN_ID_UNUSED,    /* never used by that sender */
	AN_ID_KEPT,      /* its request is open or kept: an_find_request() finds it */
	AN_ID_ANSWERED,  /* its request was answered; the record is no longer kept */
	AN_ID_CANCELLED, /* cancelled and never answered; the record is no longer kept */
	AN_ID_LOST,      /* open when a capture gap came; the record is no longer kept */
};

enum an_phase {
	AN_PH_START,        /* nothing yet */
	AN_PH_INITIALIZING, /* initialize sent, no answer yet */
	AN_PH_INITIALIZED,  /* initialize answered with a result */
	AN_PH_OPERATING,    /* notifications/initialized sent */
	AN_PH_FAILED,       /* initialize answered with an error */
	AN_PH_STATELESS,    /* 2026-07-28: no handshake */
};

/* The engine's view of a session so far, read by rules. */
struct an_state {
	int64_t session;
	enum an_version version;    /* the revision rules are checked against */
	const char *version_source; /* negotiated | requested | option | nearest | default */
	char *negotiated;           /* the server's protocolVersion, as sent (owned) */
	char *requested;            /* the client's protocolVersion, as sent (owned) */
	enum an_phase phase;
	int64_t init_seq; /* the initialize request, or 0 */
	int64_t init_answer_seq;
	int64_t initialized_seq; /* notifications/initialized, or 0 */
	int init_count;          /* initialize requests seen */
	json_t *client_caps;     /* owned; NULL until declared */
	json_t *server_caps;

	/*
	 * Requests: the open ones in full, the settled ones for a while, and the
	 * ids of all (bounded by the requests still open, not by the session).
	 */
	const struct an_request *init_request; /* the first client initialize, kept for the session */
	struct an_request *open_first;         /* the open requests the engine waits an answer for,
						* in seq order (through open_next); not the flawed ones */
	size_t nopen;
	uint64_t nrequests;           /* requests seen so far */
	struct mt_map open[2];        /* per sender: id key -> open request (a pointer) */
	struct mt_map recent[2];      /* per sender: id key -> settled request still kept */
	struct mt_map tokens[2];      /* per sender of the request: progress token key -> request */
	struct an_idset ids[2];       /* per sender: every id it used */
	struct an_idset cancelled[2]; /* per sender: ids of requests dropped cancelled, unanswered */
	struct an_idset lost[2];      /* per sender: ids of requests dropped unanswered after a gap */
	int64_t last_answer_seq[2];   /* per sender: the latest first answer to one of its requests */
	int64_t gap_seq[2];           /* per direction: the seq of its latest capture gap, or 0 */
	uint64_t gaps;                /* capture gaps seen */
	int caps_unreadable[2];       /* per side: its capabilities were in a message the
				       * analyzer could not read (so they are unknown) */
	json_t *subscriptions;        /* uri -> seq of the resources/subscribe (owned) */
	json_t *tools;                /* name -> Tool object from the latest tools/list (owned) */
	struct an_idset cursors;      /* every "method\0cursor" received as a nextCursor */
	json_t *tasks;                /* taskId -> {"status":..., "seq":..., "dir":...} (owned):
				       * the tasks not yet terminal */
	int64_t last_t_ns;
	int64_t timeout_ns;    /* --timeout-ms, 0: none */
	uint64_t messages;     /* messages seen so far (the current one included) */
	uint64_t rpc_messages; /* of which requests, notifications and answers */
	json_t *ext;           /* owned: bookkeeping of the rule families' trackers,
				* one member per family ("cap", "res", ...); rules read it */
	/* HTTP sessions (an_engine_set_session); on stdio all zero. */
	enum an_transport transport;
	struct an_http {
		char *stored_id;        /* owned: session.http_session_id (legacy: the endpoint's
					 * path and query), or NULL */
		char *endpoint;         /* owned: the path (no query) of the first exchange, or NULL */
		char *session_id;       /* owned: the Mcp-Session-Id the server assigned, or NULL */
		int64_t session_id_seq; /* the exchange that assigned it */
		int64_t ended_seq;      /* the exchange after which that id is over (a 404, a
					 * successful DELETE), or 0 */
		int ended_by_404;
		int64_t reused_seq;        /* a request that used the id after a 404 (HTTP-027), or 0 */
		int64_t auth_seq;          /* the first request with an Authorization header, or 0 */
		int64_t get_streams;       /* GET exchanges seen */
		struct mt_map events;      /* SSE event id -> the exchange it came in (bounded) */
		struct mt_map sent;        /* hash of a server message with an id -> its exchange (bounded) */
		struct mt_map resent;      /* id key of a server request sent again -> the answers
					    * that may come again for it (bounded) */
		uint64_t untracked_events; /* event ids and messages past those bounds */
		uint64_t untracked_exchanges; /* exchanges let go before their messages came */
		size_t kept;                  /* exchanges kept now */
	} http;
};

/* What an AN_ON_HTTP call is about (an_msg.http). */
enum an_http_event {
	AN_HTTP_NONE,
	AN_HTTP_BEGIN, /* an exchange's row: m->x (its messages follow) */
	AN_HTTP_DONE,  /* its last message was seen (or the session ended): m->x */
	AN_HTTP_COPY,  /* a server message sent again: a replay on a stream resumed with
			* Last-Event-ID (m->replayed) or the same message on a second
			* stream (m->copy_of); the other rules do not see it */
};

/* The message a rule is run on (borrowed for the call). */
struct an_msg {
	int64_t seq;
	int64_t t_ns;
	enum an_dir dir;
	const struct mt_class *cls; /* kind, id span, method span, ... */
	const char *method;         /* requests/notifications: theirs; answers: their request's */
	int64_t method_id;          /* the engine's record of it, or -1 */
	const char *raw;
	size_t raw_len;
	int incomplete;
	int64_t in_batch; /* the batch's seq when it came inside one, else 0 */
	char *id_key;     /* the id as a map key, NUL-free length id_key_len */
	size_t id_key_len;
	struct an_request *req; /* answers: the request it answers (NULL if none, or
				 * when it is no longer kept: see an_id_fate);
				 * requests: its own record */
	uint64_t serial;        /* unique in the process, per message fed (memo keys) */
	/*
	 * Set when only the AN_FRAMING rules run on the message, because its
	 * meaning is moot: a request or notification its sender may not send, a
	 * second answer, an answer to a flawed or unreadable request. One cause,
	 * one finding: the framing rule says what is wrong, nothing follows.
	 */
	const char *unjudged;         /* why (static text), or NULL */
	const char *unreadable;       /* AN_ON_UNREADABLE: the parser's limit it is beyond */
	const struct store_item *gap; /* AN_ON_GAP: the gap (borrowed) */
	/* HTTP sessions: */
	const struct an_exchange *x;    /* the exchange it came in (or AN_ON_HTTP's), or NULL
					 * (stdio, or an exchange no longer kept) */
	int64_t exchange;               /* that exchange's seq, or 0 */
	const char *channel;            /* body | sse; NULL on stdio */
	const char *sse_id, *sse_event; /* its SSE event's id and type, or NULL */
	int replayed;                   /* its event id was used before (the tap's mark): a replay
					 * on a resumed stream (AN_HTTP_COPY), else a reused id */
	int64_t copy_of;                /* replayed, or AN_HTTP_COPY: the exchange the first came
					 * in, or 0 when unknown */
	enum an_http_event http;        /* AN_ON_HTTP: what it is about */
	int resent_answer;              /* a client's answer, again, to a request the server sent
					 * again (a replay on a resumed stream): not a second
					 * answer (RPC-004), the replay is the one cause */
};

/* What a rule function gets. */
struct an_ctx {
	const struct an_state *st;
	const struct an_msg *m; /* NULL for AN_ON_END */
	const struct an_rule *rule;
	struct an_engine *engine;
};

struct an_rule {
	const char *id;       /* "LIFE-001" */
	enum an_severity sev; /* default severity */
	enum an_sev_policy sev_policy;
	unsigned versions;                     /* AN_V() bits it applies to */
	unsigned hooks;                        /* AN_ON_* bits */
	const char *method;                    /* only messages with this method (answers: their request's),
						* or one of several: "a|b|c"; NULL: all */
	void (*check)(const struct an_ctx *c); /* NULL: documented, but a capture cannot show
						* it apart from another rule (see summary) */
	const char *summary;                   /* one line */
	const char *source;                    /* "MCP-RULES §3.1; basic/lifecycle.mdx" */
};

/* The rule tables, NULL-terminated lists of tables each ending with a {NULL} row. */
extern const struct an_rule *const an_rule_tables[];

/*
 * A tracker keeps state that a family's rules need and the engine does not
 * keep itself. It runs after the rules and the engine's own update, for the
 * messages it hooks, and writes only under its family's member of st->ext.
 */
struct an_tracker {
	unsigned hooks;                                      /* AN_ON_* bits */
	const char *method;                                  /* NULL: every method */
	void (*update)(const struct an_ctx *c, json_t *ext); /* ext: this family's object */
	const char *family;                                  /* its member of st->ext */
};
/*
 * For a tracker: the current line completes a message the peer sent split
 * across lines (raw: those lines joined, copied). Once the current message is
 * done, the engine follows it as the message it is (its answer answers it...),
 * without rules: the finding about the split is the tracker's family's.
 */
void an_follow_joined(const struct an_ctx *c, const char *raw, size_t n);
/* NULL-terminated list of tracker tables, each ending with a {0} row. */
extern const struct an_tracker *const an_tracker_tables[];

/* ---- for rules ---- */

/*
 * Report a finding about the current message (or the session at AN_ON_END).
 * sev < 0: the rule's severity for the session's revision. The text is
 * printf-style, one line, lowercase, no full stop.
 */
void an_report(const struct an_ctx *c, int sev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same about another message seq (0: the session), with related seqs. */
void an_report_at(const struct an_ctx *c, int sev, int64_t seq, const int64_t *related, size_t nrelated,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The current message parsed (borrowed, cached for the message; NULL when it
 * does not parse). */
json_t *an_json(const struct an_ctx *c);
/*
 * One member of the current message's params, parsed alone (borrowed, cached
 * for the message; NULL when absent): cheaper than an_params() when a rule
 * needs one small value of a large message.
 */
json_t *an_params_member(const struct an_ctx *c, const char *key);
/* Its params / result / error member (borrowed; NULL when absent). */
json_t *an_params(const struct an_ctx *c);
json_t *an_result(const struct an_ctx *c);
json_t *an_error(const struct an_ctx *c);

/*
 * A capability of the client (side AN_C2S) or the server (AN_S2C) by a dotted
 * path: "tools", "resources.subscribe", "tasks.requests.tools.call". Returns
 * the value (borrowed) or NULL when not declared.
 */
json_t *an_cap(const struct an_state *st, enum an_dir side, const char *path);
/* A JSON value at a dotted path inside obj ("_meta.progressToken"); borrowed or NULL. */
json_t *an_path(json_t *obj, const char *path);
/*
 * A request's params (borrowed; NULL when it had none, or when its method is
 * not one whose params are kept, or once it was answered). Parsed on first
 * use: prefer this to reading an_request.params.
 */
json_t *an_req_params(const struct an_request *r);
/* Is the session's revision one of the bits in mask? */
int an_version_in(const struct an_state *st, unsigned mask);
/* The request sent by `sender` with this id key, or NULL (open ones first, then
 * the settled ones still kept). */
struct an_request *an_find_request(const struct an_state *st, enum an_dir sender, const char *key, size_t n);
/* The same among the open requests only. */
struct an_request *an_open_request(const struct an_state *st, enum an_dir sender, const char *key, size_t n);
/* What became of the request `sender` sent with this id key. */
enum an_id_fate an_id_fate(const struct an_state *st, enum an_dir sender, const char *key, size_t n);
/* The latest request sent by `sender` with this progress token key (open, or
 * settled and still kept), or NULL. */
struct an_request *an_token_request(const struct an_state *st, enum an_dir sender, const char *key, size_t n);
/*
 * Is a message that is JSON but not JSON-RPC 2.0 still an attempt at one (an
 * element of a batch, an array, an object with a jsonrpc, id, method, params,
 * result or error member)? Those are RPC-001's (or RPC-005's, RPC-009's ...);
 * what is not JSON-RPC at all (a JSON log line, a bare value) is STDIO-002's
 * or STDIO-003's.
 */
int an_jsonrpc_like(const struct an_msg *m);
/* Was the string cursor received as a nextCursor for method in this session? */
int an_cursor_given(const struct an_state *st, const char *method, json_t *cursor);
/* The status of the task a request created (borrowed) and its id, or NULL. */
const char *an_req_task_status(const struct an_state *st, const struct an_request *r, const char **task_id);
/* A JSON value (an id or a token) as a map key, into out (reset first). */
void an_key_of(json_t *v, struct mt_buf *out);
/* An id's key (an_key_of's shape) as a person reads the id: 17, or "abc". */
void an_key_text(const char *key, size_t n, struct mt_buf *out);
/* "c→s" / "s→c" */
const char *an_dir_arrow(enum an_dir d);

/*
 * Shared by the rule families (rules/rpc.c defines it): 1 when method is not
 * part of the session's revision and no extension or experimental capability
 * declared may bring it.
 */
int an_method_outside(const struct an_state *st, const char *method);

/* Shared by rules/flow.c and rules/life.c: is r a ping PING-001 reports as never
 * answered (so that LIFE-015 does not say it again)? */
int an_ping_never_answered(const struct an_state *st, const struct an_request *r);
/* The 2026-07-28 revision's HTTP rules (rules/http.c), rows of rules/v26.c. */
void an_v26_007(const struct an_ctx *c);
void an_v26_008(const struct an_ctx *c);

/* ---- for the command ---- */

struct an_finding {
	const struct an_rule *rule;
	enum an_severity sev;
	int64_t seq;      /* 0: the session */
	int64_t *related; /* owned */
	size_t nrelated;
	char *text; /* owned */
	/* About the message, for reports. */
	enum an_dir dir;
	int have_msg;
	char *method; /* owned; may be NULL */
	char *id;     /* owned: the id as JSON text; may be NULL */
};

struct an_options {
	int force_version; /* --spec given */
	enum an_version version;
	int64_t timeout_ns; /* --timeout-ms */
	const char *only;   /* --rules LIST (comma-separated ids or prefixes) */
	const char *skip;   /* --skip-rules LIST */
};

struct an_engine;

/* A new engine for session `session` (never NULL). */
struct an_engine *an_engine_new(int64_t session, const struct an_options *o);
void an_engine_free(struct an_engine *e);

/*
 * The session's transport ("stdio", "http", "sse"; NULL: stdio) and
 * session.http_session_id (may be NULL), before the first feed. Rules of one
 * transport (STDIO, HTTP, SSE, AUTH, an_rule_transports) run only on it.
 */
void an_engine_set_session(struct an_engine *e, const char *transport, const char *http_session_id);
/* The transports a rule applies to: bits 1 << enum an_transport. */
unsigned an_rule_transports(const struct an_rule *r);

/* Feed one item of the session, in seq order (borrowed). */
void an_engine_feed(struct an_engine *e, const struct store_item *it);
/* The session is over: run the end-of-session rules. */
void an_engine_end(struct an_engine *e);

/*
 * Send each finding to sink as it is made, instead of keeping it: memory then
 * does not grow with the findings. The finding is borrowed for the call. Set
 * before the first feed; an_engine_findings() then returns none.
 */
void an_engine_set_sink(struct an_engine *e, void (*sink)(const struct an_finding *f, void *ctx), void *ctx);
/* The findings so far, in order (borrowed). */
const struct an_finding *an_engine_findings(const struct an_engine *e, size_t *n);
const struct an_state *an_engine_state(const struct an_engine *e);

/* All rules, in table order; *n gets the count (borrowed). */
const struct an_rule *const *an_rules(size_t *n);
/* The rule's severity for revision v. */
enum an_severity an_rule_severity(const struct an_rule *r, enum an_version v);
/* Does a comma-separated list of ids or prefixes ("CAP,LIFE-001") match id? */
int an_rule_listed(const char *list, const char *id);

#endif
