/*
 * store.h - the capture file: the only code in mcptap that speaks SQL.
 *
 * A capture file is an SQLite database whose tables schema/mcptap.sql defines
 * (embedded in the binary). store_open() creates, checks and migrates it;
 * writers append sessions, messages, stderr lines, gaps and HTTP exchanges
 * inside explicit transactions; readers walk sessions and their messages back
 * in order.
 *
 * A store handle is used by one thread at a time.
 */
#ifndef MCPTAP_STORE_H
#define MCPTAP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "schema/message.h"
#include "schema/util.h"

#define STORE_SCHEMA_VERSION 4
#define STORE_APPLICATION_ID 0x4d435054 /* 'MCPT' */

struct store;

enum store_mode {
	STORE_READ,   /* the file must exist; nothing is written (unless it must migrate) */
	STORE_WRITE,  /* created 0600 when missing; WAL mode */
	STORE_UPDATE, /* the file must exist and be a capture; opened for writing */
};

/*
 * Open the capture file at path. A file that is not SQLite, is corrupt, is
 * another program's database, or was written by a newer mcptap is refused with
 * the reason in err and is never changed. Returns 0 and a new handle in *out
 * (free with store_close), or -1.
 */
int store_open(const char *path, enum store_mode mode, struct store **out, struct mt_err *err);

/*
 * The same, waiting at most lock_ms for a lock another connection holds
 * (store_open waits 5 s). A failure because of such a lock sets err->busy:
 * the file is fine, try again later.
 */
int store_open_wait(const char *path, enum store_mode mode, int lock_ms, struct store **out,
		    struct mt_err *err);

/*
 * How calls wait for a lock another connection holds: up to ms, looking again
 * every millisecond or so (fairly among many waiters), then failing with
 * err->busy set. on_wait(ctx), when not NULL, is called in the calling thread
 * when a wait begins.
 */
void store_set_lock_wait(struct store *st, int ms, void (*on_wait)(void *ctx), void *ctx);

/*
 * 1 when st (STORE_READ) reads its file as unchanging, without the -wal
 * journal beside it, which it cannot use from here (read-only media or
 * folder): what was written last may be missing. The caller says so.
 */
int store_read_without_wal(const struct store *st);

/* Close the handle; NULL is fine. Returns the SQLite result of closing (0 on success). */
int store_close(struct store *st);

/* synchronous=FULL when full, else NORMAL (the default). 0 or -1. */
int store_set_sync_full(struct store *st, int full, struct mt_err *err);

/* Explicit transactions around appends: 0 or -1. */
int store_begin(struct store *st, struct mt_err *err);
int store_commit(struct store *st, struct mt_err *err);
/* Roll back what is uncommitted; never fails visibly. */
void store_rollback(struct store *st);

/*
 * Move what the write-ahead log holds into the main file when no reader is in
 * the way (a passive checkpoint), so that the log can be reused from its start:
 * after a failed write on a full disk this frees room for a last small row.
 */
void store_checkpoint(struct store *st);

/* A new session (the borrowed strings are copied into the row). */
struct store_session_new {
	const char *transport; /* "stdio" | "http" | "sse" | "pcap"; NULL: "stdio" */
	int64_t started_wall;  /* µs */
	const char *command;   /* shell-quoted command line */
	const char *cwd;
	int64_t pid;             /* 0 when there is none */
	const char *upstream;    /* HTTP: the URL forwarded to; NULL on stdio */
	const char *client_addr; /* HTTP: the first client connection's address; NULL on stdio */
};
int store_session_create(struct store *st, const struct store_session_new *s, int64_t *id,
			 struct mt_err *err);

/* What the initialize exchange said; NULL fields are left as they are. */
struct store_session_init {
	const char *protocol_version;
	const char *name;
	const char *version;
	const char *caps_json;
};
int store_session_set_client(struct store *st, int64_t id, const struct store_session_init *in,
			     struct mt_err *err);
int store_session_set_server(struct store *st, int64_t id, const struct store_session_init *in,
			     struct mt_err *err);

/* The end of a session: how the child ended. exit_status/exit_signal < 0: unknown. */
struct store_session_end {
	int64_t ended_wall;
	int64_t duration_ns;
	int64_t pid;
	int exit_status;
	int exit_signal;
	const char *error; /* why the command could not run, or NULL */
};
int store_session_finish(struct store *st, int64_t id, const struct store_session_end *e, struct mt_err *err);

/* The session's Mcp-Session-Id (borrowed, copied); NULL leaves it as it is. 0 or -1. */
int store_session_set_http(struct store *st, int64_t session, const char *http_session_id,
			   struct mt_err *err);

/* One protocol message to append (all borrowed). */
struct store_msg {
	int64_t session;
	int64_t seq;
	int64_t t_ns;
	int64_t wall;
	const char *dir;            /* "c2s" | "s2c" */
	const char *channel;        /* "stdio" */
	const struct mt_class *cls; /* the classifier's result for raw */
	const char *raw;
	size_t size;
	int incomplete;
	int64_t request_seq; /* answers: the request's seq, or 0 */
	size_t raw_len;      /* raw's length when it differs from size (redacted), else 0 */
	/* Over HTTP (zero on stdio): */
	int64_t exchange;      /* the seq of the http_exchange it came in, or 0 */
	const char *sse_id;    /* the SSE event's id, or NULL */
	const char *sse_event; /* the SSE event's type, or NULL */
	int replayed;          /* 1: sent again after a Last-Event-ID resumption */
};
int store_add_message(struct store *st, const struct store_msg *m, struct mt_err *err);
int store_add_stderr(struct store *st, int64_t session, int64_t seq, int64_t t_ns, int64_t wall,
		     const char *raw, size_t size, int incomplete, struct mt_err *err);
/*
 * How the reason of a gap row begins when it records spans the tap could not
 * push (--otlp), not traffic: such a row counts no message and no byte, and
 * the analyzer leaves it out of its judgement.
 */
#define STORE_GAP_OTLP "otlp:"
/* A logging gap: messages/bytes relayed but not stored, and why. seq < 0: unknown. */
int store_add_gap(struct store *st, int64_t session, int64_t seq, const char *dir, int64_t messages,
		  int64_t bytes, const char *reason, struct mt_err *err);

/*
 * An HTTP exchange, in up to three steps: its row is made with what is known
 * (store_exchange_begin: the request, and the response's head and end when
 * they came already), then the head (store_exchange_head) and the end
 * (store_exchange_end) are set when they come. Its seq is taken from the
 * session's order, like a message's; the messages its bodies carry name it
 * in store_msg.exchange. Like the other writers, inside store_begin and
 * store_commit. All pointers are borrowed (copied into the row).
 */
struct store_exchange {
	int64_t session, seq;
	int64_t conn;                 /* the client connection's number in the tap's run */
	int64_t t_ns, wall;           /* when the request's head was read */
	const char *method, *target;  /* target: the path and query, redacted */
	const char *req_headers_json; /* JSON array of [name, value], redacted */
	const char *last_event_id;    /* the request's Last-Event-ID, or NULL */
	const void *req_body;         /* a body no message holds (not JSON-RPC); NULL: none */
	size_t req_body_len;
	/* The response's head, when it came (status 0: not yet); as store_exchange_head. */
	int status;
	const char *resp_headers_json, *resp_type;
	int64_t first_byte_ns;
	/* Its end, when it came (outcome NULL: not yet); as store_exchange_end. */
	const char *outcome, *error;
	int64_t end_ns;
	const void *resp_body;
	size_t resp_body_len;
};
/* 0, or -1 (a second exchange with this seq, a store error). */
int store_exchange_begin(struct store *st, const struct store_exchange *x, struct mt_err *err);
/*
 * The response's head came: its status, headers (a JSON array of [name,
 * value]), type (json | sse | empty | other) and when. 0, or -1 (no such
 * exchange: "no exchange SEQ in session N").
 */
int store_exchange_head(struct store *st, int64_t session, int64_t seq, int status,
			const char *resp_headers_json, const char *resp_type, int64_t first_byte_ns,
			struct mt_err *err);
/*
 * It ended: when, how (complete | client-gone | upstream-gone | timeout |
 * unreachable | refused | stopped), why (error, or NULL), and the response
 * body when no message holds it (resp_body NULL: none). 0, or -1 as above.
 */
int store_exchange_end(struct store *st, int64_t session, int64_t seq, int64_t end_ns, const char *outcome,
		       const char *error, const void *resp_body, size_t resp_body_len, struct mt_err *err);

/*
 * An analysis of a session: its row (incomplete), then its findings, then
 * store_analysis_done; in one transaction, or in slices (store_slice).
 */
struct store_analysis {
	int64_t session;
	int64_t started_wall;
	const char *spec; /* the revision it was checked against */
	const char *spec_source;
	int64_t errors, warnings, infos;
	const char *rules; /* the rules that ran, comma-separated; NULL: every rule */
};
int store_add_analysis(struct store *st, const struct store_analysis *a, int64_t *id, struct mt_err *err);
/* related: a JSON array text of seqs, or NULL; seq <= 0: the whole session. */
int store_add_finding(struct store *st, int64_t analysis, int64_t session, const char *rule,
		      const char *severity, int64_t seq, const char *related, const char *text,
		      struct mt_err *err);

/* The analysis's findings are all stored: latest_finding shows it now. */
int store_analysis_done(struct store *st, int64_t analysis, struct mt_err *err);
/*
 * The same, first setting what an analysis that streams its findings knows
 * only at its end: a's spec, spec_source and counts (its other fields are
 * not used). 0 or -1.
 */
int store_analysis_finish(struct store *st, int64_t analysis, const struct store_analysis *a,
			  struct mt_err *err);

/*
 * Inside a transaction (store_begin): commit and begin again when it has held
 * the file for 50 ms. Long writers call it between rows, so that a tap never
 * waits longer than that for the file. 0, or -1 (the transaction is gone).
 */
int store_slice(struct store *st, struct mt_err *err);

/*
 * Does the path still name the file this store opened? 0: yes; 1: the path is
 * gone (the file was deleted); 2: it names another file (replaced).
 */
int store_file_moved(const struct store *st);

/*
 * Close a store whose file was deleted or replaced (store_file_moved): its
 * -wal and -shm files still sit under the path's names, where another
 * connection would take them for the new file's and write this file's pages
 * into it. They are removed when they are still this connection's own.
 */
void store_close_moved(struct store *st);

/* A replay run (mcptap replay, either mode) and its results. */
struct store_replay_run {
	int64_t session;
	int64_t started_wall;
	const char *command;
	const char *ignore_json; /* may be NULL */
	const char *mode;        /* "client" or "server"; NULL: "client" */
	int64_t runs;            /* live runs compared; 0: 1 */
};
int store_add_replay_run(struct store *st, const struct store_replay_run *r, int64_t *id, struct mt_err *err);
/* One row of replay_result (see mcptap.sql); every pointer may be NULL but status. */
struct store_replay_result {
	int64_t seq;
	const char *method;
	const char *name;   /* the tool, prompt or resource */
	const char *status; /* pass | diff | missing | cancelled | unanswered | miss | unused | skipped */
	const char *sent;
	size_t sent_len;
	const char *recorded;
	size_t recorded_len;
	const char *live;
	size_t live_len;
	const char *diff_json;  /* JSON array text */
	const char *noise_json; /* JSON array text */
};
int store_add_replay_result(struct store *st, int64_t run, const struct store_replay_result *r,
			    struct mt_err *err);
/* The run's totals (see replay_run in mcptap.sql); summary_json may be NULL. */
struct store_replay_totals {
	int64_t duration_ns;
	int64_t passed, differed, missing;
	int64_t noise;
	const char *summary_json;
};
int store_finish_replay_run(struct store *st, int64_t run, const struct store_replay_totals *t,
			    struct mt_err *err);

/* ---- reading ---- */

/* One session as `mcptap sessions` shows it (strings owned by the row). */
struct store_session_row {
	int64_t id;
	char *transport;
	int64_t started_wall;
	int64_t ended_wall;  /* 0 when not ended */
	int64_t duration_ns; /* -1 when unknown */
	char *command;
	int64_t pid;
	int exit_status; /* -1 when unknown */
	int exit_signal; /* 0 when none */
	char *error;
	char *protocol_version;
	char *client_name, *client_version;
	char *server_name, *server_version;
	char *client_caps, *server_caps;
	int64_t msgs_c2s, msgs_s2c, stderr_lines;
	int64_t bytes_c2s, bytes_s2c;
	int64_t gap_messages, gap_bytes;
	int64_t tap_pid;       /* the recording tap's pid, 0 when unknown */
	char *tap_id;          /* its identity (mt_process_identity), or NULL */
	char *http_session_id; /* HTTP: the Mcp-Session-Id, or NULL */
	char *upstream;        /* HTTP: the URL forwarded to, or NULL (version 4) */
	int64_t last_wall;     /* HTTP: its last activity (a message, an exchange's start
				* or end), µs since the epoch; 0 when none or not HTTP */
	char *client_addr;     /* HTTP: the first client's address, or NULL (version 4) */
};
/*
 * "ended"; "running" while the tap that records it lives (or when the file does
 * not say which tap it was); "aborted" when that tap is gone and the session
 * has no end (the tap was killed).
 */
const char *store_session_state(const struct store_session_row *r);
void store_session_row_release(struct store_session_row *r);

/* All sessions in id order; *rows is owned by the caller (store_sessions_free). */
int store_sessions(struct store *st, struct store_session_row **rows, size_t *n, struct mt_err *err);
void store_sessions_free(struct store_session_row *rows, size_t n);
/* One session; -1 with "no session N" when it does not exist. */
int store_session_get(struct store *st, int64_t id, struct store_session_row *row, struct mt_err *err);
/* The newest session's id; -1 when the file has none. */
int store_last_session(struct store *st, int64_t *id, struct mt_err *err);

enum store_item_type {
	STORE_ITEM_MESSAGE,
	STORE_ITEM_STDERR,
	STORE_ITEM_GAP,
	STORE_ITEM_EXCHANGE, /* only with STORE_ITEMS_EXCHANGES */
};

/*
 * One row of http_exchange, borrowed for the callback's duration. The file is
 * untrusted: every string and blob may be NULL (and a string may hold bytes
 * that are not UTF-8), and numbers may be anything.
 */
struct store_exchange_row {
	int64_t session, seq, conn, t_ns, wall;
	const char *method, *target;
	const char *req_headers_json; /* as stored: meant to be a JSON array of [name, value] */
	const void *req_body;         /* NULL: none */
	size_t req_body_len;
	int status; /* 100..999; 0: no response (or no status) */
	const char *resp_headers_json;
	const char *resp_type; /* json | sse | empty | other, or NULL */
	const void *resp_body; /* NULL: none */
	size_t resp_body_len;
	int64_t first_byte_ns; /* -1: no response head */
	int64_t end_ns;        /* -1: not ended */
	const char *outcome;   /* NULL while open */
	const char *error;
	const char *last_event_id;
	int64_t messages; /* the message rows that name it (their exchange) */
};

/*
 * Call cb for every HTTP exchange of a session in seq order (none in a file
 * older than version 4). cb returns 0 to go on, non-zero to stop. Returns 0,
 * the callback's value, or -1 on a store error.
 */
int store_each_exchange(struct store *st, int64_t session,
			int (*cb)(const struct store_exchange_row *x, void *ctx), void *ctx,
			struct mt_err *err);

/*
 * One row of a session in seq order, borrowed for the callback's duration.
 * Whatever the file holds, dir and kind are set for messages and stderr, raw
 * is never NULL, and the strings are NUL-terminated (but raw).
 */
struct store_item {
	enum store_item_type type;
	int64_t seq, t_ns, wall;
	const char *dir; /* c2s | s2c | stderr (gaps: may be NULL) */
	const char *channel;
	const char *kind; /* messages: the kind; stderr: "stderr"; gap: "gap" */
	int id_sqltype;   /* SQLITE_INTEGER / FLOAT / TEXT / NULL */
	int64_t id_int;
	double id_real;
	const char *id_text;
	const char *idtype; /* number | string | null | NULL */
	const char *method; /* answers: the method of their request */
	int has_error_code;
	int64_t error_code;
	int64_t size;
	int incomplete;
	const void *raw;
	size_t raw_len;
	int64_t gap_messages, gap_bytes; /* gaps */
	const char *gap_reason;
	int64_t request_seq; /* answers: the request's seq, or 0 */
	int64_t latency_ns;  /* answers: since their request (when request_seq) */
	int64_t cancels_seq; /* notifications/cancelled: the request it cancels, or 0 */
	/* Messages over HTTP (left 0 and NULL with STORE_ITEMS_LEAN, but exchange): */
	int64_t exchange;                   /* the seq of the http_exchange it came in, or 0 */
	const char *sse_id;                 /* the SSE event's id, or NULL */
	const char *sse_event;              /* its type, or NULL */
	int replayed;                       /* 1: sent again after a Last-Event-ID resumption */
	const struct store_exchange_row *x; /* STORE_ITEM_EXCHANGE: the exchange */
};

/* How a message travelled (store_each_route); strings borrowed for the callback. */
struct store_route {
	int64_t seq;
	const char *channel; /* stdio | body | sse (NULL: the file holds none) */
	int64_t exchange;    /* the seq of its HTTP exchange, or 0 */
	const char *method;  /* that exchange's method (GET, POST, ...), or NULL */
};

/*
 * Call cb for every message of a session in seq order with how it travelled
 * (none in a file older than version 4). cb returns 0 to go on; non-zero
 * stops, and is returned. 0, or -1 on a store error (err set).
 */
int store_each_route(struct store *st, int64_t session, int (*cb)(const struct store_route *r, void *ctx),
		     void *ctx, struct mt_err *err);

/*
 * Call cb for every message, stderr line and gap of a session in seq order.
 * cb returns 0 to go on, non-zero to stop (store_each_item then returns that
 * value). Returns 0, the callback's value, or -1 on a store error.
 */
int store_each_item(struct store *st, int64_t session, int (*cb)(const struct store_item *it, void *ctx),
		    void *ctx, struct mt_err *err);

/* Flags of store_each_item_ex(). */
enum {
	STORE_ITEMS_PAIRED = 1,    /* fill answers' method and latency_ns from their request */
	STORE_ITEMS_LEAN = 2,      /* messages: only seq, t_ns, dir, kind, incomplete, raw,
				    * replayed, exchange, request_seq */
	STORE_ITEMS_EXCHANGES = 4, /* HTTP exchanges too, as STORE_ITEM_EXCHANGE items */
};
/*
 * store_each_item with flags: without STORE_ITEMS_PAIRED, answers' method is
 * their own column (NULL) and latency_ns is 0, which is cheaper (the
 * analyzer pairs answers itself). store_each_item() is this with PAIRED.
 */
int store_each_item_ex(struct store *st, int64_t session, unsigned flags,
		       int (*cb)(const struct store_item *it, void *ctx), void *ctx, struct mt_err *err);

struct mt_filter;
/* How store_set_filter's filter picks messages. */
enum {
	STORE_FILTER_PAIRS = 1, /* also a request whose answer matches, and the answers and
				 * cancels of a request that matches: whole exchanges */
};
/*
 * From now on, store_each_item and store_each_item_ex give only the messages
 * that f (a display filter, -Y) passes, and no stderr line, gap or exchange.
 * f is borrowed until it is set again (NULL: every item again); the store
 * keeps lists of a session's requests in it as it reads.
 */
void store_set_filter(struct store *st, struct mt_filter *f, unsigned how);
/* How many of a session's messages the filter set passes (all, without one). */
int store_filter_count(struct store *st, int64_t session, int64_t *n, struct mt_err *err);

/* store_each_item_ex, for the items whose seq is above after (a follower's next read). */
int store_each_item_after(struct store *st, int64_t session, int64_t after, unsigned flags,
			  int (*cb)(const struct store_item *it, void *ctx), void *ctx, struct mt_err *err);
/*
 * Has another connection committed to the file since the last call (1 the
 * first time, and when it cannot tell)? For a follower's polls: it reads
 * nothing when nothing changed.
 */
int store_data_changed(struct store *st);

/*
 * The bytes of a session's messages whose seq is from or more, in seq order,
 * max of them at most: cb(seq, raw, n, ctx) for each, raw borrowed for the
 * call and never NULL (as in store_item); cb returns 0 to go on. For a reader
 * that keeps where messages are and reads their bytes back when it needs
 * them: the statement is prepared once per handle, and no read transaction
 * stays open between calls. cb must not call it again. Returns 0, the
 * callback's value, or -1 with err set.
 */
int store_read_raw(struct store *st, int64_t session, int64_t from, int64_t max,
		   int (*cb)(int64_t seq, const void *raw, size_t n, void *ctx), void *ctx,
		   struct mt_err *err);

#endif
