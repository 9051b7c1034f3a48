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
 * Rules are rows: each family file (rules-life.c, rules-cap.c, ...) holds one
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
	AN_SEV_FIXED,      /* always an_rule.sev */
	AN_SEV_MUST_0618,  /* warning up to 2025-03-26, error from 2025-06-18 (LIFE-011: SHOULD -> MUST) */
	AN_SEV_MUST_0326,  /* info in 2024-11-05, an_rule.sev from 2025-03-26 */
};

enum an_dir { AN_C2S, AN_S2C };

/* What a rule hooks: bits of an_rule.hooks. */
enum {
	AN_ON_REQUEST = 1 << 0,
	AN_ON_NOTIFICATION = 1 << 1,
	AN_ON_RESPONSE = 1 << 2,     /* a result */
	AN_ON_ERROR = 1 << 3,        /* an error response */
	AN_ON_BATCH = 1 << 4,        /* the array itself; its elements come as messages too */
	AN_ON_INVALID = 1 << 5,      /* not JSON */
	AN_ON_NOTJSONRPC = 1 << 6,   /* JSON, but not a JSON-RPC message */
	AN_ON_STDERR = 1 << 7,
	AN_ON_END = 1 << 8,          /* the session is over: m is NULL */
	AN_ON_ANSWER = AN_ON_RESPONSE | AN_ON_ERROR,
	AN_ON_MESSAGE = AN_ON_REQUEST | AN_ON_NOTIFICATION | AN_ON_RESPONSE | AN_ON_ERROR,
};

/* One request the session has seen (owned by the state). */
struct an_request {
	int64_t seq;
	int64_t t_ns;
	enum an_dir dir;         /* who sent it */
	const char *method;      /* interned by the engine (lives as long as it) */
	int64_t method_id;       /* the engine's record of the method */
	json_t *params;          /* owned, kept for the methods answers are checked against
				  * (initialize, tools/call, the lists, elicitation/create, sampling,
				  * tasks/...); NULL for the others, and freed once the request
				  * is answered (but for initialize's) */
	char *raw;               /* owned: the request's bytes until its params are parsed */
	size_t raw_len;
	int64_t answer_seq;      /* 0 until answered */
	int64_t answer_t_ns;
	int64_t cancel_seq;      /* a notifications/cancelled for it, or 0 */
	int64_t cancel_t_ns;
	int has_token;
	json_t *progress_token;  /* owned: params._meta.progressToken */
	int is_task;             /* answered with a CreateTaskResult (2025-11-25) */
	int in_batch;            /* arrived inside a batch */
};

enum an_phase {
	AN_PH_START,       /* nothing yet */
	AN_PH_INITIALIZING,/* initialize sent, no answer yet */
	AN_PH_INITIALIZED, /* initialize answered with a result */
	AN_PH_OPERATING,   /* notifications/initialized sent */
	AN_PH_FAILED,      /* initialize answered with an error */
	AN_PH_STATELESS,   /* 2026-07-28: no handshake */
};

/* The engine's view of a session so far, read by rules. */
struct an_state {
	int64_t session;
	enum an_version version;     /* the revision rules are checked against */
	const char *version_source;  /* negotiated | requested | option | nearest | default */
	char *negotiated;            /* the server's protocolVersion, as sent (owned) */
	char *requested;             /* the client's protocolVersion, as sent (owned) */
	enum an_phase phase;
	int64_t init_seq;            /* the initialize request, or 0 */
	int64_t init_answer_seq;
	int64_t initialized_seq;     /* notifications/initialized, or 0 */
	int init_count;              /* initialize requests seen */
	json_t *client_caps;         /* owned; NULL until declared */
	json_t *server_caps;

	/* Every request, in order (owned); lookups go through the maps. */
	struct an_request *requests;
	size_t nrequests, caprequests;
	struct mt_map open[2];       /* per sender: id key -> request index, still unanswered */
	struct mt_map used[2];       /* per sender: id key -> request index, every id ever used */
	struct mt_map tokens[2];     /* per sender of the request: progress token key -> request index */
	json_t *last_progress;       /* token key -> last progress value (owned) */
	json_t *subscriptions;       /* uri -> seq of the resources/subscribe (owned) */
	json_t *tools;               /* name -> Tool object from the latest tools/list (owned) */
	json_t *cursors;             /* method -> [nextCursor ...] received (owned) */
	json_t *tasks;               /* taskId -> {"status":..., "seq":..., "dir":...} (owned) */
	int64_t last_t_ns;
	int64_t timeout_ns;          /* --timeout-ms, 0: none */
	uint64_t messages;           /* messages seen so far (the current one included) */
	uint64_t rpc_messages;       /* of which requests, notifications and answers */
	json_t *ext;                 /* owned: bookkeeping of the rule families' trackers,
				      * one member per family ("cap", "res", ...); rules read it */
};

/* The message a rule is run on (borrowed for the call). */
struct an_msg {
	int64_t seq;
	int64_t t_ns;
	enum an_dir dir;
	const struct mt_class *cls;  /* kind, id span, method span, ... */
	const char *method;          /* requests/notifications: theirs; answers: their request's */
	int64_t method_id;           /* the engine's record of it, or -1 */
	const char *raw;
	size_t raw_len;
	int incomplete;
	int64_t in_batch;            /* the batch's seq when it came inside one, else 0 */
	char *id_key;                /* the id as a map key, NUL-free length id_key_len */
	size_t id_key_len;
	struct an_request *req;      /* answers: the request it answers (NULL if none);
				      * requests: its own record */
	uint64_t serial;             /* unique in the process, per message fed (memo keys) */
};

/* What a rule function gets. */
struct an_ctx {
	const struct an_state *st;
	const struct an_msg *m;      /* NULL for AN_ON_END */
	const struct an_rule *rule;
	struct an_engine *engine;
};

struct an_rule {
	const char *id;              /* "LIFE-001" */
	enum an_severity sev;        /* default severity */
	enum an_sev_policy sev_policy;
	unsigned versions;           /* AN_V() bits it applies to */
	unsigned hooks;              /* AN_ON_* bits */
	const char *method;          /* only messages with this method (answers: their request's),
				      * or one of several: "a|b|c"; NULL: all */
	void (*check)(const struct an_ctx *c); /* NULL: documented, but a capture cannot show
						 * it apart from another rule (see summary) */
	const char *summary;         /* one line */
	const char *source;          /* "MCP-RULES §3.1; basic/lifecycle.mdx" */
};

/* The rule tables, NULL-terminated lists of tables each ending with a {NULL} row. */
extern const struct an_rule *const an_rule_tables[];

/*
 * A tracker keeps state that a family's rules need and the engine does not
 * keep itself. It runs after the rules and the engine's own update, for the
 * messages it hooks, and writes only under its family's member of st->ext.
 */
struct an_tracker {
	unsigned hooks;           /* AN_ON_* bits */
	const char *method;       /* NULL: every method */
	void (*update)(const struct an_ctx *c, json_t *ext); /* ext: this family's object */
	const char *family;       /* its member of st->ext */
};
/* NULL-terminated list of tracker tables, each ending with a {0} row. */
extern const struct an_tracker *const an_tracker_tables[];

/* ---- for rules ---- */

/*
 * Report a finding about the current message (or the session at AN_ON_END).
 * sev < 0: the rule's severity for the session's revision. The text is
 * printf-style, one line, lowercase, no full stop.
 */
void an_report(const struct an_ctx *c, int sev, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same about another message seq (0: the session), with related seqs. */
void an_report_at(const struct an_ctx *c, int sev, int64_t seq, const int64_t *related,
		  size_t nrelated, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

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
/* The request sent by `sender` with this id key, or NULL (open ones first). */
struct an_request *an_find_request(const struct an_state *st, enum an_dir sender,
				   const char *key, size_t n);
/* A JSON value (an id or a token) as a map key, into out (reset first). */
void an_key_of(json_t *v, struct mt_buf *out);
/* "c→s" / "s→c" */
const char *an_dir_arrow(enum an_dir d);

/*
 * Shared by the rule families (rules-rpc.c defines it): why a message of this
 * kind and method may not be sent in this direction in revision v (the
 * schema's role unions), or NULL when it may.
 */
const char *an_rpc_role_problem(enum an_version v, enum an_dir dir, enum mt_kind kind,
				const char *method);
/* The revisions whose schema has `method` (AN_V bits); AN_EVERY for one in no table. */
unsigned an_method_revisions(const char *method);

/* ---- for the command ---- */

struct an_finding {
	const struct an_rule *rule;
	enum an_severity sev;
	int64_t seq;           /* 0: the session */
	int64_t *related;      /* owned */
	size_t nrelated;
	char *text;            /* owned */
	/* About the message, for reports. */
	enum an_dir dir;
	int have_msg;
	char *method;          /* owned; may be NULL */
	char *id;              /* owned: the id as JSON text; may be NULL */
};

struct an_options {
	int force_version;             /* --spec given */
	enum an_version version;
	int64_t timeout_ns;            /* --timeout-ms */
	const char *only;              /* --rules LIST (comma-separated ids or prefixes) */
	const char *skip;              /* --skip-rules LIST */
};

struct an_engine;

/* A new engine for session `session` (never NULL). */
struct an_engine *an_engine_new(int64_t session, const struct an_options *o);
void an_engine_free(struct an_engine *e);

/* Feed one item of the session, in seq order (borrowed). */
struct store_item;
void an_engine_feed(struct an_engine *e, const struct store_item *it);
/* The session is over: run the end-of-session rules. */
void an_engine_end(struct an_engine *e);

/*
 * Send each finding to sink as it is made, instead of keeping it: memory then
 * does not grow with the findings. The finding is borrowed for the call. Set
 * before the first feed; an_engine_findings() then returns none.
 */
void an_engine_set_sink(struct an_engine *e, void (*sink)(const struct an_finding *f, void *ctx),
			void *ctx);
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
