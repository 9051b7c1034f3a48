/*
 * store.c - open, create, migrate, append to and read the capture file.
 *
 * A statement run once goes through sql_run() (no rows) or sql_query() (rows
 * to step); one of the hot paths, prepared once and kept, through stmt_run().
 * Each binds its values from a short format, one letter a parameter (vbind).
 */
#include "schema/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/filter.h"
#include "schema_sql.h"

enum stmt_id {
	S_MSG,
	S_STDERR,
	S_GAP,
	S_BEGIN,
	S_COMMIT,
	S_COUNTS,
	S_FINDING,
	S_RAW,
	S_XBEGIN,
	S_XHEAD,
	S_XEND,
	S_STMT_COUNT
};

static const char *const stmt_sql[S_STMT_COUNT] = {
	[S_MSG] = "INSERT INTO message (session, seq, t_ns, wall, dir, channel, kind, id, idtype,"
		  " method, error_code, progress_token, has_meta, batch_size, incomplete, size, raw,"
		  " request_seq, exchange, sse_id, sse_event, replayed)"
		  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,"
		  "?21,?22)",
	[S_STDERR] = "INSERT INTO stderr_line (session, seq, t_ns, wall, incomplete, raw)"
		     " VALUES (?1,?2,?3,?4,?5,?6)",
	[S_GAP] = "INSERT INTO gap (session, seq, dir, messages, bytes, reason)"
		  " VALUES (?1,?2,?3,?4,?5,?6)",
	[S_BEGIN] = "BEGIN IMMEDIATE", /* the write lock now: inserts never meet it held */
	[S_COMMIT] = "COMMIT",
	[S_COUNTS] = "UPDATE session SET msgs_c2s = msgs_c2s + ?2, msgs_s2c = msgs_s2c + ?3,"
		     " stderr_lines = stderr_lines + ?4, bytes_c2s = bytes_c2s + ?5,"
		     " bytes_s2c = bytes_s2c + ?6 WHERE id = ?1",
	[S_FINDING] = "INSERT INTO finding (analysis, session, rule, severity, seq, related, text)"
		      " VALUES (?1,?2,?3,?4,?5,?6,?7)",
	[S_RAW] = "SELECT seq, raw FROM message WHERE session = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
	[S_XBEGIN] = "INSERT INTO http_exchange (session, seq, conn, method, target, req_headers,"
		     " req_body, t_ns, wall, last_event_id, status, resp_headers, resp_type,"
		     " first_byte_ns, end_ns, outcome, error, resp_body)"
		     " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)",
	[S_XHEAD] = "UPDATE http_exchange SET status = ?3, resp_headers = ?4, resp_type = ?5,"
		    " first_byte_ns = ?6 WHERE session = ?1 AND seq = ?2",
	[S_XEND] = "UPDATE http_exchange SET end_ns = ?3, outcome = ?4, error = ?5, resp_body = ?6"
		   " WHERE session = ?1 AND seq = ?2",
};

/* What the open transaction added to a session (session's counters, version 3). */
struct counts {
	int64_t session;
	int64_t msgs[2], bytes[2], stderr_lines; /* [0] c2s, [1] s2c */
};

struct store {
	sqlite3 *db;
	char *path;
	int64_t version; /* the file's schema version (a reader may keep an old one) */
	dev_t dev;       /* the file opened: the path named it then */
	ino_t ino;
	sqlite3_stmt *stmt[S_STMT_COUNT]; /* prepared on first use */
	struct mt_buf scratch;            /* decoded strings */
	struct mt_buf scratch2;
	struct mt_buf scratch3;
	int lock_ms;                /* how long a lock held elsewhere is waited for */
	int64_t busy_since;         /* monotonic ns: when the current wait began */
	unsigned seed;              /* for the waits' jitter */
	int64_t txn_started;        /* monotonic ns: store_begin */
	void (*on_wait)(void *ctx); /* told when a wait begins */
	void *wait_ctx;
	struct counts *counts; /* the open transaction's, per session */
	size_t ncounts, capcounts;
	ino_t wal_ino, shm_ino;   /* this connection's -wal and -shm, once seen (0: not yet) */
	struct mt_filter *filter; /* store_set_filter's (not owned) */
	int64_t data_version;     /* store_data_changed's last (-1: none yet) */
	unsigned filter_how;
	int without_wal; /* read as unchanging while a -wal it cannot use is beside it */
};

/*
 * Forward migrations: each step turns schema version `from` into from + 1. A
 * new version appends its step here and bumps STORE_SCHEMA_VERSION and the
 * user_version in mcptap.sql, which always describes the newest schema.
 */
static const struct {
	int from;
	const char *sql;
} migrations[] = {
	{0, NULL}, /* version 1 is the first release: nothing to migrate yet */
	/* 2: replay runs of the mock too, live runs and noise, names of tools. */
	{1, "ALTER TABLE replay_run ADD COLUMN mode TEXT NOT NULL DEFAULT 'client';"
	    "ALTER TABLE replay_run ADD COLUMN runs INTEGER NOT NULL DEFAULT 1;"
	    "ALTER TABLE replay_run ADD COLUMN noise INTEGER NOT NULL DEFAULT 0;"
	    "ALTER TABLE replay_run ADD COLUMN summary TEXT;"
	    "ALTER TABLE replay_result ADD COLUMN name TEXT;"
	    "ALTER TABLE replay_result ADD COLUMN noise TEXT;"
	    "ALTER TABLE session ADD COLUMN tap_pid INTEGER;"
	    "ALTER TABLE session ADD COLUMN tap_id TEXT;"},
	/* 3: analyses stored in slices are complete only at their end, and say
	 * which rules ran; sessions count what they hold; a cancel names the
	 * request it cancels. (The views are made anew after every migration.) */
	{2, "ALTER TABLE analysis ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;"
	    "ALTER TABLE analysis ADD COLUMN rules TEXT;"
	    "ALTER TABLE session ADD COLUMN msgs_c2s INTEGER NOT NULL DEFAULT 0;"
	    "ALTER TABLE session ADD COLUMN msgs_s2c INTEGER NOT NULL DEFAULT 0;"
	    "ALTER TABLE session ADD COLUMN stderr_lines INTEGER NOT NULL DEFAULT 0;"
	    "ALTER TABLE session ADD COLUMN bytes_c2s INTEGER NOT NULL DEFAULT 0;"
	    "ALTER TABLE session ADD COLUMN bytes_s2c INTEGER NOT NULL DEFAULT 0;"
	    "UPDATE session SET"
	    " msgs_c2s = (SELECT count(*) FROM message m WHERE m.session = session.id AND m.dir = 'c2s'),"
	    " msgs_s2c = (SELECT count(*) FROM message m WHERE m.session = session.id AND m.dir = 's2c'),"
	    " stderr_lines = (SELECT count(*) FROM stderr_line e WHERE e.session = session.id),"
	    " bytes_c2s = (SELECT coalesce(sum(size), 0) FROM message m"
	    "   WHERE m.session = session.id AND m.dir = 'c2s'),"
	    " bytes_s2c = (SELECT coalesce(sum(size), 0) FROM message m"
	    "   WHERE m.session = session.id AND m.dir = 's2c');"
	    "UPDATE message SET request_seq = (SELECT max(q.seq) FROM message q"
	    "   WHERE q.session = message.session AND q.dir = message.dir AND q.kind = 'request'"
	    "   AND q.seq < message.seq AND q.idtype IS NOT NULL"
	    "   AND q.id IS json_extract(CAST(message.raw AS TEXT), '$.params.requestId'))"
	    " WHERE kind = 'notification' AND method = 'notifications/cancelled'"
	    "   AND json_valid(CAST(raw AS TEXT));"},
	/* 4: HTTP taps: their exchanges, the messages' place in them, the
	 * session's upstream and client. (Columns are added at the end of their
	 * tables, where a new file has them too; the new table is made as
	 * mcptap.sql makes it, comments aside.) */
	{3, "CREATE TABLE http_exchange ("
	    " session INTEGER NOT NULL REFERENCES session(id), seq INTEGER NOT NULL,"
	    " conn INTEGER NOT NULL, method TEXT NOT NULL, target TEXT NOT NULL,"
	    " req_headers TEXT NOT NULL, req_body BLOB, status INTEGER, resp_headers TEXT,"
	    " resp_type TEXT, resp_body BLOB, t_ns INTEGER NOT NULL, wall INTEGER NOT NULL,"
	    " first_byte_ns INTEGER, end_ns INTEGER, outcome TEXT, error TEXT, last_event_id TEXT,"
	    " PRIMARY KEY (session, seq)) WITHOUT ROWID;"
	    "ALTER TABLE message ADD COLUMN exchange INTEGER;"
	    "ALTER TABLE message ADD COLUMN sse_id TEXT;"
	    "ALTER TABLE message ADD COLUMN sse_event TEXT;"
	    "ALTER TABLE message ADD COLUMN replayed INTEGER NOT NULL DEFAULT 0;"
	    "CREATE INDEX message_by_exchange ON message(session, exchange) WHERE exchange IS NOT NULL;"
	    "ALTER TABLE session ADD COLUMN upstream TEXT;"
	    "ALTER TABLE session ADD COLUMN client_addr TEXT;"},
};

/* Was the last failure a lock another connection holds (not a fault of the file)? */
static void note_busy(struct store *st, struct mt_err *err)
{
	int code = sqlite3_errcode(st->db);

	if (err)
		err->busy = code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

/* "what: SQLite's reason" in err (what NULL: the reason alone). Returns -1. */
static int db_fail(struct store *st, struct mt_err *err, const char *what)
{
	if (what)
		mt_err_set(err, "%s: %s", what, sqlite3_errmsg(st->db));
	else
		mt_err_set(err, "%s", sqlite3_errmsg(st->db));
	note_busy(st, err);
	return -1;
}

/*
 * Bind the parameters of s, ?1 on, one a letter of fmt, from ap:
 *   i  int64_t
 *   n  int, int64_t: the value when the int is not 0, else NULL
 *   t  const char *: text; NULL binds NULL
 *   b  const void *, size_t: a blob (empty when the size is 0); NULL binds NULL
 * What a pointer points to is borrowed until the statement has run. Returns
 * SQLITE_OK, or the first failing bind's code (the handle's message says why).
 */
static int vbind(sqlite3_stmt *s, const char *fmt, va_list ap)
{
	int rc = SQLITE_OK;

	for (int col = 1; *fmt && rc == SQLITE_OK; fmt++, col++) {
		const void *p;
		int64_t v;
		int has;
		size_t n;

		switch (*fmt) {
		case 'i': rc = sqlite3_bind_int64(s, col, va_arg(ap, int64_t)); break;
		case 'n':
			has = va_arg(ap, int);
			v = va_arg(ap, int64_t);
			rc = has ? sqlite3_bind_int64(s, col, v) : sqlite3_bind_null(s, col);
			break;
		case 't':
			p = va_arg(ap, const char *);
			rc = p ? sqlite3_bind_text(s, col, p, -1, SQLITE_STATIC) : sqlite3_bind_null(s, col);
			break;
		case 'b':
			p = va_arg(ap, const void *);
			n = va_arg(ap, size_t);
			rc = p ? sqlite3_bind_blob64(s, col, n ? p : "", n, SQLITE_STATIC)
			       : sqlite3_bind_null(s, col);
			break;
		default: abort(); /* a letter vbind does not know: the caller's bug */
		}
	}
	return rc;
}

/* sql prepared on db, its parameters bound (vbind): SQLITE_OK or the failure's code. */
static int vprepare(sqlite3 *db, sqlite3_stmt **out, const char *sql, const char *fmt, va_list ap)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, out, NULL);

	return rc == SQLITE_OK ? vbind(*out, fmt, ap) : rc;
}

/*
 * sql prepared and its parameters bound, one a letter of fmt (see vbind): the
 * statement, to be stepped and finalized; or NULL with "what: reason" in err.
 */
static sqlite3_stmt *sql_query(struct store *st, struct mt_err *err, const char *what, const char *sql,
			       const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vprepare(st->db, &s, sql, fmt, ap);
	va_end(ap);
	if (rc != SQLITE_OK) {
		db_fail(st, err, what);
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

/*
 * Run sql once, a statement that returns no row, its parameters bound as
 * sql_query's: 0, or -1 with "what: reason" in err (and busy set when a lock held
 * elsewhere stopped it).
 */
static int sql_run(struct store *st, struct mt_err *err, const char *what, const char *sql, const char *fmt,
		   ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vprepare(st->db, &s, sql, fmt, ap);
	va_end(ap);
	if (rc == SQLITE_OK && sqlite3_step(s) != SQLITE_DONE)
		rc = SQLITE_ERROR;
	if (rc != SQLITE_OK)
		db_fail(st, err, what);
	sqlite3_finalize(s);
	return rc == SQLITE_OK ? 0 : -1;
}

static int exec(struct store *st, const char *sql, struct mt_err *err)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		mt_err_set(err, "%s", msg ? msg : sqlite3_errmsg(st->db));
		note_busy(st, err);
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/*
 * SQLite's busy handler, made fair and bounded. Its own (busy_timeout) sleeps
 * longer and longer, so that of several taps waiting on one file those that
 * waited least win; here every waiter looks again within 0.2 to 1.2 ms. After
 * lock_ms the call fails with the busy flag set, and the caller decides: a
 * tap keeps its data and tries again; a reader or a one-off writer reports it.
 */
static int on_busy(void *arg, int count)
{
	struct store *st = arg;
	int64_t now = mt_mono_ns();

	if (count == 0) {
		st->busy_since = now;
		if (st->on_wait)
			st->on_wait(st->wait_ctx);
	}
	if (now - st->busy_since >= (int64_t)st->lock_ms * 1000000)
		return 0;
	usleep(200 + (useconds_t)(rand_r(&st->seed) % 1000));
	return 1;
}

void store_set_lock_wait(struct store *st, int ms, void (*on_wait)(void *ctx), void *ctx)
{
	st->lock_ms = ms;
	st->on_wait = on_wait;
	st->wait_ctx = ctx;
	sqlite3_busy_handler(st->db, on_busy, st);
}

/* The integer in the first row of sql: 0, or -1 with SQLite's reason in err. */
static int pragma_int(struct store *st, const char *sql, int64_t *v, struct mt_err *err)
{
	sqlite3_stmt *s = sql_query(st, err, NULL, sql, "");
	int rc = -1;

	if (!s)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW) {
		*v = sqlite3_column_int64(s, 0);
		rc = 0;
	} else {
		db_fail(st, err, NULL);
	}
	sqlite3_finalize(s);
	return rc;
}

static int meta_text(struct store *st, const char *key, char *out, size_t n)
{
	sqlite3_stmt *s = sql_query(st, NULL, NULL, "SELECT value FROM meta WHERE key = ?1", "t", key);
	int rc = -1;

	out[0] = '\0';
	if (s && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
		snprintf(out, n, "%s", (const char *)sqlite3_column_text(s, 0));
		rc = 0;
	}
	sqlite3_finalize(s);
	return rc;
}

static int set_meta(struct store *st, const char *key, const char *value, struct mt_err *err)
{
	return sql_run(st, err, "cannot write meta",
		       "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", "tt", key, value);
}

/* ---- is it mcptap's schema? ---- */

/*
 * Columns that came with a later schema version: a file of an older version,
 * read as it is, lacks them.
 */
static const struct {
	int version;
	const char *table, *column;
} later_columns[] = {
	{2, "replay_run", "mode"},      {2, "replay_run", "runs"},    {2, "replay_run", "noise"},
	{2, "replay_run", "summary"},   {2, "replay_result", "name"}, {2, "replay_result", "noise"},
	{2, "session", "tap_pid"},      {2, "session", "tap_id"},     {3, "analysis", "complete"},
	{3, "analysis", "rules"},       {3, "session", "msgs_c2s"},   {3, "session", "msgs_s2c"},
	{3, "session", "stderr_lines"}, {3, "session", "bytes_c2s"},  {3, "session", "bytes_s2c"},
	{4, "message", "exchange"},     {4, "message", "sse_id"},     {4, "message", "sse_event"},
	{4, "message", "replayed"},     {4, "session", "upstream"},   {4, "session", "client_addr"},
};

/* Tables that came with a later schema version (a file of an older one has none). */
static const struct {
	int version;
	const char *table;
} later_tables[] = {
	{4, "http_exchange"},
};

/*
 * The views of the released versions before 3, by name and FNV-1a hash of
 * their SQL text: a file of such a version, read as it is, has these. (From
 * version 3 on, the views are those of mcptap.sql, made anew by a migration.)
 */
static const struct {
	const char *name;
	uint64_t hash;
} old_views[] = {
	{"exchange", 0x704bf839fecc98daULL},       {"exchange", 0xa1838df005bb7cfdULL},
	{"latest_finding", 0x3579ae4b2c1ed12eULL}, {"method_stats", 0x10f0df2acd3e8c00ULL},
	{"method_stats", 0x945f65f20193a3afULL},
};

/* The newest schema, made in a database of its own in memory (close it). */
static int reference_db(sqlite3 **out, struct mt_err *err)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	*out = NULL;
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, mcptap_schema_sql, NULL, NULL, &msg) != SQLITE_OK) {
		mt_err_set(err, "cannot make the reference schema: %s",
			   msg  ? msg
			   : db ? sqlite3_errmsg(db)
				: "out of memory");
		sqlite3_free(msg);
		sqlite3_close(db);
		return -1;
	}
	*out = db;
	return 0;
}

/* One text column of the first row of sql with ?1 = a (a new string, or NULL). */
static char *query_text(sqlite3 *db, const char *sql, const char *a)
{
	sqlite3_stmt *q = NULL;
	char *v = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return NULL;
	if (a)
		sqlite3_bind_text(q, 1, a, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		v = mt_strdup((const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	return v;
}

/* A table's column names, sorted, comma-separated (a new string; "" when none). */
static const char cols_sql[] = "SELECT group_concat(name, ',') FROM"
			       " (SELECT name FROM pragma_table_info(?1) ORDER BY name)";

/*
 * mcptap's own schema objects (from mcptap.sql), worked out once per process:
 * what every file is checked against.
 */
struct ref_object {
	char *type, *name, *sql; /* sql: NULL for SQLite's own */
	char *cols;              /* tables: their columns (cols_sql) */
};

static struct {
	size_t n;
	struct ref_object *v;
	char reason[600]; /* why it could not be made, or "" */
} ref;

static void make_reference(void)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	struct mt_err err = {"", 0};

	if (reference_db(&db, &err)) {
		snprintf(ref.reason, sizeof(ref.reason), "%s", err.msg);
		return;
	}
	if (sqlite3_prepare_v2(db, "SELECT type, name, sql FROM sqlite_master", -1, &q, NULL) == SQLITE_OK) {
		while (sqlite3_step(q) == SQLITE_ROW) {
			ref.v = mt_realloc(ref.v, (ref.n + 1) * sizeof(*ref.v));
			struct ref_object *o = &ref.v[ref.n++];
			o->type = mt_strdup((const char *)sqlite3_column_text(q, 0));
			o->name = mt_strdup((const char *)sqlite3_column_text(q, 1));
			o->sql = sqlite3_column_text(q, 2)
					 ? mt_strdup((const char *)sqlite3_column_text(q, 2))
					 : NULL;
			o->cols = !strcmp(o->type, "table") ? query_text(db, cols_sql, o->name) : NULL;
		}
	}
	if (!ref.n)
		snprintf(ref.reason, sizeof(ref.reason), "cannot read the reference schema: %s",
			 sqlite3_errmsg(db));
	sqlite3_finalize(q);
	sqlite3_close(db);
}

/* The reference, made on first use: 0, or -1 with why in err. */
static int reference(struct mt_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, make_reference);
	return ref.n ? 0 : mt_err_set(err, "%s", ref.reason);
}

/* mcptap's object of this type and name, or NULL. */
static const struct ref_object *ref_find(const char *type, const char *name)
{
	for (size_t i = 0; i < ref.n; i++)
		if (!strcmp(ref.v[i].type, type) && !strcmp(ref.v[i].name, name))
			return &ref.v[i];
	return NULL;
}

/* Is the column one that a file of this version lacks? */
static int later_column(int64_t version, const char *table, const char *column)
{
	for (size_t i = 0; i < sizeof(later_columns) / sizeof(later_columns[0]); i++)
		if (later_columns[i].version > version && !strcmp(later_columns[i].table, table) &&
		    !strcmp(later_columns[i].column, column))
			return 1;
	return 0;
}

/* Is the table one that a file of this version lacks? */
static int later_table(int64_t version, const char *table)
{
	for (size_t i = 0; i < sizeof(later_tables) / sizeof(later_tables[0]); i++)
		if (later_tables[i].version > version && !strcmp(later_tables[i].table, table))
			return 1;
	return 0;
}

/* Table name of the file: exactly mcptap's columns, less those of later versions. */
static int check_table(struct store *st, const struct ref_object *t, int64_t version, struct mt_err *err)
{
	char *have = query_text(st->db, cols_sql, t->name);
	struct mt_buf w = MT_BUF_INIT;
	int rc = 0;

	/* mcptap's columns that a file of this version has. */
	for (const char *p = t->cols ? t->cols : ""; *p;) {
		size_t n = strcspn(p, ",");
		char *c = mt_strndup(p, n);
		if (!later_column(version, t->name, c)) {
			if (w.len)
				mt_buf_putc(&w, ',');
			mt_buf_puts(&w, c);
		}
		free(c);
		p += n + (p[n] == ',');
	}
	if (!have || strcmp(have, w.data ? w.data : ""))
		rc = mt_err_set(err,
				"not an mcptap capture: table %s has the columns (%s), not mcptap's (%s)",
				t->name, have ? have : "", w.data ? w.data : "");
	free(have);
	mt_buf_release(&w);
	return rc;
}

/* A view of the file: one of mcptap's, with mcptap's text for its version. */
static int check_view(int64_t version, const char *name, const char *sql, struct mt_err *err)
{
	const struct ref_object *v = ref_find("view", name);
	int ok = v && sql && v->sql && !strcmp(v->sql, sql);

	if (!ok && version < 3 && sql) {
		uint64_t h = mt_fnv1a(sql, strlen(sql));
		for (size_t i = 0; i < sizeof(old_views) / sizeof(old_views[0]) && !ok; i++)
			ok = !strcmp(old_views[i].name, name) && old_views[i].hash == h;
	}
	return ok ? 0 : mt_err_set(err, "not an mcptap capture: its view %s is not mcptap's", name);
}

/*
 * An index the file has: mcptap's own (with its text), SQLite's for a
 * constraint, or one a user made on plain columns (an expression in an
 * index would be evaluated when mcptap writes).
 */
static int check_index(struct store *st, const char *name, const char *sql, struct mt_err *err)
{
	const struct ref_object *x = ref_find("index", name);
	char *expr = NULL;
	int rc = 0;

	if (x) {
		/* (SQLite's own for a constraint have no text on either side.) */
		if ((sql || x->sql) && (!sql || !x->sql || strcmp(x->sql, sql)))
			rc = mt_err_set(err, "not an mcptap capture: its index %s is not mcptap's", name);
	} else if (sql) {
		expr = query_text(st->db, "SELECT 1 FROM pragma_index_xinfo(?1) WHERE key AND cid < 0", name);
		if (expr)
			rc = mt_err_set(err, "not an mcptap capture: its index %s is on an expression", name);
	}
	free(expr);
	return rc;
}

/*
 * Check that the file holds mcptap's schema of its version and nothing that
 * could run when it is read or written: its tables with mcptap's columns, no
 * trigger, no view but mcptap's own. A crafted file is refused here, before
 * anything else reads it.
 */
static int check_schema(struct store *st, int64_t version, struct mt_err *err)
{
	sqlite3_stmt *q = NULL;
	size_t tables = 0, want = 0;
	int rc = -1, r;

	if (reference(err))
		return -1;
	/* (Triggers and views first: what could run is the first reason given.) */
	if (!(q = sql_query(st, err, "cannot read the schema",
			    "SELECT type, name, sql FROM sqlite_master ORDER BY"
			    " CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1"
			    " WHEN 'table' THEN 2 ELSE 3 END, name",
			    "")))
		goto out;
	while ((r = sqlite3_step(q)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(q, 0);
		const char *name = (const char *)sqlite3_column_text(q, 1);
		const char *sql = (const char *)sqlite3_column_text(q, 2);
		const struct ref_object *t;

		if (!type || !name) {
			mt_err_set(err, "damaged mcptap capture: an unnamed schema entry");
			goto out;
		}
		if (!strcmp(type, "trigger")) {
			mt_err_set(err,
				   "not an mcptap capture: it holds a trigger (%s), which mcptap "
				   "never makes",
				   name);
			goto out;
		}
		if (!strcmp(type, "view")) {
			if (check_view(version, name, sql, err))
				goto out;
			continue;
		}
		if (!strcmp(type, "index")) {
			if (check_index(st, name, sql, err))
				goto out;
			continue;
		}
		if (strcmp(type, "table") || !strncmp(name, "sqlite_", 7))
			continue; /* SQLite's own (sqlite_stat1, sqlite_sequence) */
		if (!(t = ref_find("table", name)) || later_table(version, name)) {
			mt_err_set(err, "not an mcptap capture: it holds a table (%s) mcptap never makes%s",
				   name, t ? " in a file of its version" : "");
			goto out;
		}
		if (check_table(st, t, version, err))
			goto out;
		tables++;
	}
	if (r != SQLITE_DONE) {
		db_fail(st, err, "cannot read the schema");
		goto out;
	}
	/* Every table of mcptap's is there (each name once: a table is a table). */
	for (size_t i = 0; i < ref.n; i++)
		want += !strcmp(ref.v[i].type, "table") && !later_table(version, ref.v[i].name);
	if (tables != want) {
		for (size_t i = 0; i < ref.n; i++) {
			char *there;
			if (strcmp(ref.v[i].type, "table") || later_table(version, ref.v[i].name))
				continue;
			there = query_text(st->db, "SELECT type FROM sqlite_master WHERE name = ?1",
					   ref.v[i].name);
			int ok = there && !strcmp(there, "table");
			free(there);
			if (!ok) {
				mt_err_set(err, "damaged mcptap capture: the table %s is missing",
					   ref.v[i].name);
				goto out;
			}
		}
	}
	rc = 0;
out:
	sqlite3_finalize(q);
	return rc;
}

/* Make mcptap's views anew, from mcptap.sql (inside the caller's transaction). */
static int make_views(struct store *st, struct mt_err *err)
{
	if (reference(err))
		return -1;
	/* (Dropped first, in the other order: a view may use an earlier one.) */
	if (exec(st,
		 "DROP VIEW IF EXISTS tool_call; DROP VIEW IF EXISTS latest_finding;"
		 " DROP VIEW IF EXISTS method_stats; DROP VIEW IF EXISTS exchange;",
		 err))
		return -1;
	for (size_t i = 0; i < ref.n; i++) /* (in the order mcptap.sql makes them) */
		if (!strcmp(ref.v[i].type, "view") && exec(st, ref.v[i].sql, err))
			return -1;
	return 0;
}

/*
 * Create the schema in an empty file, in one transaction. Several taps may
 * start at once on a new file: each saw it empty, and the write lock lets one
 * create it; the others find it made once they hold the lock, and return 1
 * (look at the file again).
 */
static int create_schema(struct store *st, struct mt_err *err)
{
	int64_t tables = 0;

	if (exec(st, "BEGIN IMMEDIATE", err))
		return -1;
	if (pragma_int(st, "SELECT count(*) FROM sqlite_master", &tables, err)) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (tables) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return 1;
	}
	if (exec(st, mcptap_schema_sql, err) || set_meta(st, "created_by", "mcptap " MCPTAP_VERSION, err) ||
	    set_meta(st, "migrated_by", "mcptap " MCPTAP_VERSION, err) || exec(st, "COMMIT", err)) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

static int migrate(struct store *st, int64_t from, struct mt_err *err)
{
	char sql[64];

	if (exec(st, "BEGIN IMMEDIATE", err))
		return -1;
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
		if (migrations[i].from >= from && migrations[i].sql && exec(st, migrations[i].sql, err))
			goto fail;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
	if (make_views(st, err) || exec(st, sql, err) ||
	    set_meta(st, "migrated_by", "mcptap " MCPTAP_VERSION, err) || exec(st, "COMMIT", err))
		goto fail;
	return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* Check what the file is; create or migrate it when allowed. */
static int check_file(struct store *st, enum store_mode mode, struct mt_err *err)
{
	int64_t app = 0, ver = 0, tables = 0;
	char by[128];

	if (pragma_int(st, "SELECT count(*) FROM sqlite_master", &tables, err) ||
	    pragma_int(st, "PRAGMA application_id", &app, err) ||
	    pragma_int(st, "PRAGMA user_version", &ver, err))
		return -1;
	if (app == 0 && ver == 0 && tables == 0) {
		if (mode != STORE_WRITE)
			return mt_err_set(err, "empty file, not an mcptap capture");
		/* For tests only: widen the window between seeing the file empty
		 * and taking the write lock, so that a race is met every time. */
		const char *pause = getenv("MCPTAP_TEST_CREATE_PAUSE_MS");
		int64_t ms;
		if (pause && !mt_parse_int64(pause, &ms) && ms > 0 && ms < 10000)
			usleep((useconds_t)(ms * 1000));
		st->version = STORE_SCHEMA_VERSION;
		int made = create_schema(st, err);
		if (made != 1)
			return made;
		/* Another tap made it meanwhile: check it as any existing file. */
		if (pragma_int(st, "PRAGMA application_id", &app, err) ||
		    pragma_int(st, "PRAGMA user_version", &ver, err))
			return -1;
	}
	if (app != STORE_APPLICATION_ID)
		return mt_err_set(err, "not an mcptap capture file (SQLite application_id %lld)",
				  (long long)app);
	if (ver > STORE_SCHEMA_VERSION) {
		if (meta_text(st, "migrated_by", by, sizeof(by)))
			snprintf(by, sizeof(by), "a newer mcptap");
		return mt_err_set(err,
				  "written by %s (schema version %lld); this mcptap %s reads "
				  "versions up to %d: upgrade mcptap to read it",
				  by, (long long)ver, MCPTAP_VERSION, STORE_SCHEMA_VERSION);
	}
	if (ver < 1)
		return mt_err_set(err, "damaged mcptap capture (schema version %lld)", (long long)ver);
	if (check_schema(st, ver, err))
		return -1;
	st->version =
		ver < STORE_SCHEMA_VERSION && mode == STORE_READ && sqlite3_db_readonly(st->db, "main") == 1
			? ver
			: STORE_SCHEMA_VERSION;
	if (ver < STORE_SCHEMA_VERSION) {
		/* A reader of a file it may not change (read-only media, another
		 * user's file) reads the older version as it is: the columns readers
		 * use were all there in version 1. */
		if (mode == STORE_READ && sqlite3_db_readonly(st->db, "main") == 1)
			return 0;
		return migrate(st, ver, err);
	}
	return 0;
}

/*
 * Give a companion file (path + suffix) the capture file's permissions. SQLite
 * means to, but a reader (the sqlite3 shell, another mcptap) that creates the
 * log first does so under its own umask.
 */
static void same_mode(const char *path, const char *suffix)
{
	struct stat db, f;
	char *name = mt_asprintf("%s%s", path, suffix);

	if (stat(path, &db) == 0 && stat(name, &f) == 0 && (f.st_mode & 0777) != (db.st_mode & 0777))
		(void)chmod(name, db.st_mode & 0777);
	free(name);
}

/*
 * Each store handle is used by one thread at a time, so SQLite's own locks
 * (per connection, and around every allocation for its statistics) are not
 * needed; they cost a fifth of the writer's time. Done once, before SQLite
 * initializes; when something else initialized it first, the calls fail
 * harmlessly.
 */
static void configure_sqlite(void)
{
	sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int store_open(const char *path, enum store_mode mode, struct store **out, struct mt_err *err)
{
	return store_open_wait(path, mode, 5000, out, err);
}

/*
 * SQLite's defences for a database that came from elsewhere (its documentation's
 * "Defense Against The Dark Arts"): no schema code trusted to call functions
 * with side effects, no writes to the schema, no triggers; readers expand no
 * view at all (mcptap's own code reads none).
 */
static void defend(sqlite3 *db, int views)
{
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, views, NULL);
	sqlite3_exec(db, "PRAGMA cell_size_check = ON", NULL, NULL, NULL);
}

/* "file:PATH?immutable=1" with the characters a URI gives a meaning escaped. */
static char *immutable_uri(const char *path)
{
	struct mt_buf b = MT_BUF_INIT;

	mt_buf_puts(&b, "file:");
	for (const char *p = path; *p; p++) {
		if (*p == '%' || *p == '?' || *p == '#')
			mt_buf_printf(&b, "%%%02X", (unsigned char)*p);
		else
			mt_buf_putc(&b, *p);
	}
	mt_buf_puts(&b, "?immutable=1");
	return b.data;
}

/* Does the companion file path + suffix exist (with something in it, when full)? */
static int companion(const char *path, const char *suffix, int full)
{
	char *name = mt_asprintf("%s%s", path, suffix);
	struct stat sb;
	int there = stat(name, &sb) == 0 && (!full || sb.st_size > 0);

	free(name);
	return there;
}

/*
 * How a reader opens the file. Its owner, allowed to write it, opens it for
 * writing (an older schema is migrated). Anyone else opens it read-only and
 * never creates a -wal or -shm file beside it: with the writer's own when a
 * writer has them open, and as an unchanging file when there are none.
 */
enum read_how { READ_OWN, READ_SHARED, READ_IMMUTABLE };

static enum read_how read_how(const char *path, const struct stat *sb)
{
	if (sb->st_uid == geteuid() && access(path, W_OK) == 0)
		return READ_OWN;
	if (companion(path, "-shm", 0) && companion(path, "-wal", 0))
		return READ_SHARED;
	return READ_IMMUTABLE;
}

/* Is the error one of a file that may be read but not written beside (read-only media)? */
static int cannot_write_beside(sqlite3 *db)
{
	int code = sqlite3_errcode(db) & 0xff;

	return code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_IOERR ||
	       code == SQLITE_PERM;
}

static int open_db(struct store *st, const char *path, int flags, enum store_mode mode, int lock_ms,
		   struct mt_err *err)
{
	if (sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		mt_err_set(err, "%s", st->db ? sqlite3_errmsg(st->db) : "cannot open");
		return -1;
	}
	sqlite3_extended_result_codes(st->db, 0);
	defend(st->db, mode != STORE_READ);
	mt_filter_register(st->db);
	store_set_lock_wait(st, lock_ms, NULL, NULL);
	return 0;
}

int store_open_wait(const char *path, enum store_mode mode, int lock_ms, struct store **out,
		    struct mt_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct store *st;

	pthread_once(&once, configure_sqlite);
	st = mt_calloc(1, sizeof(*st));
	st->data_version = -1;
	int flags, rc = -1;
	enum read_how how = READ_OWN;
	struct stat sb;

	*out = NULL;
	st->path = mt_strdup(path);
	st->seed = (unsigned)getpid() ^ (unsigned)mt_mono_ns();
	/* A device, a FIFO or a socket cannot hold a database, and SQLite would
	 * create its journal beside it (/dev/null-journal): refused first. */
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		mt_err_set(err, S_ISDIR(sb.st_mode) ? "is a directory"
						    : "not a regular file (a device, a FIFO or a socket)");
		goto out;
	}
	if (mode == STORE_UPDATE) {
		if (access(path, F_OK) != 0) {
			mt_err_set(err, "%s", strerror(errno));
			goto out;
		}
		if (stat(path, &sb) == 0 && sb.st_size == 0) {
			mt_err_set(err, "empty file, not an mcptap capture");
			goto out;
		}
		/* (SQLite would open it read-only, and make a -wal and -shm of this
		 * user's beside another's file.) */
		if (access(path, W_OK) != 0) {
			mt_err_set(err, "%s", strerror(errno));
			goto out;
		}
		flags = SQLITE_OPEN_READWRITE;
	} else if (mode == STORE_WRITE) {
		/* Create it ourselves so that it is 0600 whatever the umask (SQLite gives the
		 * -wal and -shm files the same mode). An existing file is left as it is. */
		int fd = mt_open_private(path, O_EXCL);
		if (fd >= 0)
			close(fd);
		else if (errno != EEXIST) {
			mt_err_set(err, "%s", strerror(errno));
			goto out;
		}
		flags = SQLITE_OPEN_READWRITE;
	} else {
		if (stat(path, &sb) != 0 || access(path, R_OK) != 0) {
			mt_err_set(err, "%s", strerror(errno));
			goto out;
		}
		how = read_how(path, &sb);
		flags = how == READ_OWN ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
	}
	if (how == READ_IMMUTABLE) {
		char *uri = immutable_uri(path);
		int r = open_db(st, uri, flags | SQLITE_OPEN_URI, mode, lock_ms, err);
		free(uri);
		if (r)
			goto out;
	} else if (open_db(st, path, flags, mode, lock_ms, err)) {
		goto out;
	}
	if (stat(path, &sb) == 0) {
		st->dev = sb.st_dev;
		st->ino = sb.st_ino;
	}
	if (check_file(st, mode, err)) {
		/* The owner's file on read-only media or in a read-only folder: the
		 * write-ahead log's index cannot be made beside it. Read it as an
		 * unchanging file, without one. */
		if (mode != STORE_READ || how == READ_IMMUTABLE || !cannot_write_beside(st->db))
			goto out;
		sqlite3_close(st->db);
		st->db = NULL;
		how = READ_IMMUTABLE;
		char *uri = immutable_uri(path);
		int r = open_db(st, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, mode, lock_ms, err);
		free(uri);
		if (r || check_file(st, mode, err))
			goto out;
	}
	if (how == READ_IMMUTABLE && companion(path, "-wal", 1))
		st->without_wal = 1;
	if (mode == STORE_WRITE) {
		if (exec(st, "PRAGMA journal_mode = WAL", err) ||
		    exec(st, "PRAGMA synchronous = NORMAL", err))
			goto out;
		same_mode(path, "-wal");
		same_mode(path, "-shm");
	}
	rc = 0;
out:
	if (rc) {
		store_close(st);
		return -1;
	}
	*out = st;
	return 0;
}

int store_read_without_wal(const struct store *st)
{
	return st->without_wal;
}

int store_close(struct store *st)
{
	int rc = 0;

	if (!st)
		return 0;
	for (int i = 0; i < S_STMT_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	free(st->counts);
	if (st->db)
		rc = sqlite3_close(st->db);
	mt_buf_release(&st->scratch);
	mt_buf_release(&st->scratch2);
	mt_buf_release(&st->scratch3);
	free(st->path);
	free(st);
	return rc == SQLITE_OK ? 0 : -1;
}

static sqlite3_stmt *stmt(struct store *st, enum stmt_id id, struct mt_err *err)
{
	sqlite3_stmt *s = st->stmt[id];

	if (!s) {
		if (sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[id],
				       NULL) != SQLITE_OK) {
			db_fail(st, err, "cannot prepare");
			return NULL;
		}
		s = st->stmt[id];
	}
	sqlite3_reset(s);
	/* Appending a message binds every column itself: no clearing on that path. */
	if (id != S_MSG)
		sqlite3_clear_bindings(s);
	return s;
}

static int step_done(struct store *st, sqlite3_stmt *s, struct mt_err *err, const char *what)
{
	int r = sqlite3_step(s);

	sqlite3_reset(s);
	if (r != SQLITE_DONE)
		return db_fail(st, err, what);
	return 0;
}

/*
 * Run the prepared statement id (see stmt), its parameters bound as
 * sql_query's: 0, or -1 with "what: reason" in err.
 */
static int stmt_run(struct store *st, enum stmt_id id, struct mt_err *err, const char *what, const char *fmt,
		    ...)
{
	sqlite3_stmt *s = stmt(st, id, err);
	va_list ap;
	int rc;

	if (!s)
		return -1;
	va_start(ap, fmt);
	rc = vbind(s, fmt, ap);
	va_end(ap);
	if (rc != SQLITE_OK)
		return db_fail(st, err, what);
	return step_done(st, s, err, what);
}

int store_set_sync_full(struct store *st, int full, struct mt_err *err)
{
	return exec(st, full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", err);
}

/* The open transaction's counts for session (made when new). */
static struct counts *counts_of(struct store *st, int64_t session)
{
	for (size_t i = 0; i < st->ncounts; i++)
		if (st->counts[i].session == session)
			return &st->counts[i];
	if (st->ncounts == st->capcounts) {
		st->capcounts = st->capcounts ? st->capcounts * 2 : 4;
		st->counts = mt_realloc(st->counts, st->capcounts * sizeof(*st->counts));
	}
	struct counts *c = &st->counts[st->ncounts++];
	memset(c, 0, sizeof(*c));
	c->session = session;
	return c;
}

/* Add the open transaction's counts to its sessions' rows (version 3 on). */
static int flush_counts(struct store *st, struct mt_err *err)
{
	if (st->version < 3)
		goto done;
	for (size_t i = 0; i < st->ncounts; i++) {
		const struct counts *c = &st->counts[i];
		if (stmt_run(st, S_COUNTS, err, "cannot count the session's rows", "iiiiii", c->session,
			     c->msgs[0], c->msgs[1], c->stderr_lines, c->bytes[0], c->bytes[1]))
			return -1;
	}
done:
	st->ncounts = 0;
	return 0;
}

int store_begin(struct store *st, struct mt_err *err)
{
	st->txn_started = mt_mono_ns();
	return stmt_run(st, S_BEGIN, err, "cannot begin a transaction", "");
}

int store_slice(struct store *st, struct mt_err *err)
{
	if (mt_mono_ns() - st->txn_started < 50 * 1000000LL)
		return 0;
	if (store_commit(st, err))
		goto fail;
	/* Waiters look again every millisecond or so (on_busy): give them the
	 * file before taking it back (SQLite keeps no queue of waiters). */
	usleep(3000);
	if (store_begin(st, err)) {
fail:
		store_rollback(st);
		return -1;
	}
	return 0;
}

/* The inode of path + suffix, or 0. */
static ino_t companion_ino(const char *path, const char *suffix)
{
	char *name = mt_asprintf("%s%s", path, suffix);
	struct stat sb;
	ino_t ino = stat(name, &sb) == 0 ? sb.st_ino : 0;

	free(name);
	return ino;
}

int store_commit(struct store *st, struct mt_err *err)
{
	sqlite3_stmt *s = stmt(st, S_COMMIT, err);

	/* (Counted once: a commit tried again after a wait finds nothing to add.) */
	if (!s || flush_counts(st, err) || step_done(st, s, err, "cannot commit"))
		return -1;
	/* The journal files this connection writes, known once it wrote (while the
	 * path still names its file). */
	if (!st->wal_ino && !store_file_moved(st)) {
		st->wal_ino = companion_ino(st->path, "-wal");
		st->shm_ino = companion_ino(st->path, "-shm");
	}
	return 0;
}

void store_rollback(struct store *st)
{
	st->ncounts = 0;
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

void store_checkpoint(struct store *st)
{
	sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

int store_session_create(struct store *st, const struct store_session_new *s, int64_t *id, struct mt_err *err)
{
	/* The process that opens a session records it: a reader that finds it
	 * gone while the session has no end knows the session ended abnormally. */
	char me[128];
	int known = mt_process_identity((int64_t)getpid(), me, sizeof(me)) == 0;

	if (sql_run(st, err, "cannot add a session",
		    "INSERT INTO session (transport, started_wall, command, cwd, pid,"
		    " mcptap_version, tap_pid, tap_id, upstream, client_addr)"
		    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
		    "tittntittt", s->transport ? s->transport : "stdio", s->started_wall, s->command, s->cwd,
		    s->pid > 0, s->pid, MCPTAP_VERSION, (int64_t)getpid(), known ? me : NULL, s->upstream,
		    s->client_addr))
		return -1;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

static int set_init(struct store *st, int64_t id, const struct store_session_init *in, const char *sql,
		    struct mt_err *err)
{
	return sql_run(st, err, "cannot update the session", sql, "itttt", id, in->protocol_version, in->name,
		       in->version, in->caps_json);
}

int store_session_set_client(struct store *st, int64_t id, const struct store_session_init *in,
			     struct mt_err *err)
{
	/* The client's requested version is kept only until the server answers. */
	return set_init(st, id, in,
			"UPDATE session SET protocol_version = coalesce(protocol_version, ?2),"
			" client_name = coalesce(?3, client_name),"
			" client_version = coalesce(?4, client_version),"
			" client_caps = coalesce(?5, client_caps) WHERE id = ?1",
			err);
}

int store_session_set_server(struct store *st, int64_t id, const struct store_session_init *in,
			     struct mt_err *err)
{
	return set_init(st, id, in,
			"UPDATE session SET protocol_version = coalesce(?2, protocol_version),"
			" server_name = coalesce(?3, server_name),"
			" server_version = coalesce(?4, server_version),"
			" server_caps = coalesce(?5, server_caps) WHERE id = ?1",
			err);
}

int store_session_finish(struct store *st, int64_t id, const struct store_session_end *e, struct mt_err *err)
{
	return sql_run(st, err, "cannot end the session",
		       "UPDATE session SET ended_wall = ?2, duration_ns = ?3,"
		       " pid = coalesce(?4, pid), exit_status = ?5, exit_signal = ?6,"
		       " error = coalesce(?7, error) WHERE id = ?1",
		       "iiinnnt", id, e->ended_wall, e->duration_ns, e->pid > 0, e->pid, e->exit_status >= 0,
		       (int64_t)e->exit_status, e->exit_signal > 0, (int64_t)e->exit_signal, e->error);
}

int store_session_set_http(struct store *st, int64_t session, const char *http_session_id, struct mt_err *err)
{
	if (!http_session_id)
		return 0;
	return sql_run(st, err, "cannot update the session",
		       "UPDATE session SET http_session_id = ?2 WHERE id = ?1", "it", session,
		       http_session_id);
}

/*
 * Bind a JSON id-like token (number, string or null) so that its type survives:
 * integers as INTEGER, other numbers as REAL (or TEXT when they do not fit),
 * strings as TEXT, null as NULL. The binding may point into tok or scratch:
 * both must live until the statement has run.
 */
static void bind_token(sqlite3_stmt *s, int col, enum mt_idtype t, struct mt_span tok, struct mt_buf *scratch)
{
	int64_t v;

	switch (t) {
	case MT_ID_NUMBER:
		if (mt_json_int64(tok, &v)) {
			sqlite3_bind_int64(s, col, v);
		} else {
			char *end;
			mt_buf_reset(scratch);
			mt_buf_append(scratch, tok.p, tok.n);
			double d = strtod(scratch->data, &end);
			if (memchr(tok.p, '.', tok.n) || memchr(tok.p, 'e', tok.n) ||
			    memchr(tok.p, 'E', tok.n))
				sqlite3_bind_double(s, col, d);
			else /* an integer too big for int64: keep its digits */
				sqlite3_bind_text(s, col, scratch->data, (int)scratch->len, SQLITE_TRANSIENT);
		}
		break;
	case MT_ID_STRING:
		if (!memchr(tok.p, '\\', tok.n))
			sqlite3_bind_text(s, col, tok.p + 1, (int)tok.n - 2, SQLITE_STATIC);
		else if (mt_json_string(tok, scratch) == 0)
			sqlite3_bind_text(s, col, scratch->data ? scratch->data : "", (int)scratch->len,
					  SQLITE_STATIC);
		else
			sqlite3_bind_null(s, col);
		break;
	default: sqlite3_bind_null(s, col); break;
	}
}

int store_add_message(struct store *st, const struct store_msg *m, struct mt_err *err)
{
	const struct mt_class *c = m->cls;
	sqlite3_stmt *s = stmt(st, S_MSG, err);

	if (!s)
		return -1;
	size_t raw_len = m->raw_len ? m->raw_len : m->size;

	if (m->size > (size_t)INT32_MAX || raw_len > (size_t)INT32_MAX)
		return mt_err_set(err, "message of %zu bytes is too large to store", m->size);
	sqlite3_bind_int64(s, 1, m->session);
	sqlite3_bind_int64(s, 2, m->seq);
	sqlite3_bind_int64(s, 3, m->t_ns);
	sqlite3_bind_int64(s, 4, m->wall);
	sqlite3_bind_text(s, 5, m->dir, 3, SQLITE_STATIC); /* c2s | s2c */
	sqlite3_bind_text(s, 6, m->channel ? m->channel : "stdio", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, mt_kind_name(c->kind), -1, SQLITE_STATIC);
	bind_token(s, 8, c->idtype, c->id, &st->scratch);
	if (c->idtype != MT_ID_NONE)
		sqlite3_bind_text(s, 9, mt_idtype_name(c->idtype), -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 9);
	if (c->method.n && !memchr(c->method.p, '\\', c->method.n))
		sqlite3_bind_text(s, 10, c->method.p + 1, (int)c->method.n - 2, SQLITE_STATIC);
	else if (c->method.n && mt_json_string(c->method, &st->scratch2) == 0)
		sqlite3_bind_text(s, 10, st->scratch2.data ? st->scratch2.data : "", (int)st->scratch2.len,
				  SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 10);
	if (c->has_error_code)
		sqlite3_bind_int64(s, 11, c->error_code);
	else
		sqlite3_bind_null(s, 11);
	if (c->token_type != MT_ID_NONE && c->progress_token.p[0] != '"' && c->progress_token.p[0] != '-' &&
	    (c->progress_token.p[0] < '0' || c->progress_token.p[0] > '9'))
		/* Neither a string nor a number: kept as its JSON text. */
		sqlite3_bind_text(s, 12, c->progress_token.p, (int)c->progress_token.n, SQLITE_STATIC);
	else
		bind_token(s, 12, c->token_type, c->progress_token, &st->scratch3);
	sqlite3_bind_int(s, 13, c->has_meta);
	if (c->kind == MT_BATCH)
		sqlite3_bind_int64(s, 14, (int64_t)c->batch_size);
	else
		sqlite3_bind_null(s, 14);
	sqlite3_bind_int(s, 15, m->incomplete);
	sqlite3_bind_int64(s, 16, (int64_t)m->size);
	sqlite3_bind_blob(s, 17, raw_len ? m->raw : "", (int)raw_len, SQLITE_STATIC);
	if (m->request_seq > 0)
		sqlite3_bind_int64(s, 18, m->request_seq);
	else
		sqlite3_bind_null(s, 18);
	if (m->exchange > 0)
		sqlite3_bind_int64(s, 19, m->exchange);
	else
		sqlite3_bind_null(s, 19);
	if (m->sse_id)
		sqlite3_bind_text(s, 20, m->sse_id, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 20);
	if (m->sse_event)
		sqlite3_bind_text(s, 21, m->sse_event, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 21);
	sqlite3_bind_int(s, 22, !!m->replayed);
	if (step_done(st, s, err, "cannot store a message"))
		return -1;
	struct counts *k = counts_of(st, m->session);
	int d = strcmp(m->dir, "c2s") != 0;
	k->msgs[d]++;
	k->bytes[d] += (int64_t)m->size;
	return sqlite3_get_autocommit(st->db) ? flush_counts(st, err) : 0;
}

int store_add_stderr(struct store *st, int64_t session, int64_t seq, int64_t t_ns, int64_t wall,
		     const char *raw, size_t size, int incomplete, struct mt_err *err)
{
	if (size > (size_t)INT32_MAX)
		return mt_err_set(err, "stderr line of %zu bytes is too large to store", size);
	if (stmt_run(st, S_STDERR, err, "cannot store a stderr line", "iiiiib", session, seq, t_ns, wall,
		     (int64_t)incomplete, size ? raw : "", size))
		return -1;
	counts_of(st, session)->stderr_lines++;
	return sqlite3_get_autocommit(st->db) ? flush_counts(st, err) : 0;
}

int store_add_gap(struct store *st, int64_t session, int64_t seq, const char *dir, int64_t messages,
		  int64_t bytes, const char *reason, struct mt_err *err)
{
	return stmt_run(st, S_GAP, err, "cannot store a gap", "intiit", session, seq >= 0, seq, dir, messages,
			bytes, reason);
}

/* A body no larger than a blob may be (NULL: none): 0, or -1 with why in err. */
static int body_fits(const void *p, size_t n, struct mt_err *err)
{
	if (p && n > (size_t)INT32_MAX)
		return mt_err_set(err, "a body of %zu bytes is too large to store", n);
	return 0;
}

/* After an UPDATE of one exchange: "no exchange" when it changed no row. */
static int exchange_changed(struct store *st, int64_t session, int64_t seq, struct mt_err *err)
{
	if (sqlite3_changes(st->db) == 0)
		return mt_err_set(err, "no exchange %lld in session %lld", (long long)seq,
				  (long long)session);
	return 0;
}

int store_exchange_begin(struct store *st, const struct store_exchange *x, struct mt_err *err)
{
	/* The response's head and end, when they came already. */
	int head = x->status != 0, end = x->outcome != NULL;

	if (body_fits(x->req_body, x->req_body_len, err) ||
	    (end && body_fits(x->resp_body, x->resp_body_len, err)))
		return -1;
	return stmt_run(st, S_XBEGIN, err, "cannot store the exchange", "iiitttbiitnttnnttb", x->session,
			x->seq, x->conn, x->method ? x->method : "", x->target ? x->target : "",
			x->req_headers_json ? x->req_headers_json : "[]", x->req_body, x->req_body_len,
			x->t_ns, x->wall, x->last_event_id, head, (int64_t)x->status,
			head ? x->resp_headers_json : NULL, head ? x->resp_type : NULL, head,
			x->first_byte_ns, end, x->end_ns, x->outcome, end ? x->error : NULL,
			end ? x->resp_body : NULL, x->resp_body_len);
}

int store_exchange_head(struct store *st, int64_t session, int64_t seq, int status,
			const char *resp_headers_json, const char *resp_type, int64_t first_byte_ns,
			struct mt_err *err)
{
	if (stmt_run(st, S_XHEAD, err, "cannot store the exchange", "iiitti", session, seq, (int64_t)status,
		     resp_headers_json, resp_type, first_byte_ns))
		return -1;
	return exchange_changed(st, session, seq, err);
}

int store_exchange_end(struct store *st, int64_t session, int64_t seq, int64_t end_ns, const char *outcome,
		       const char *error, const void *resp_body, size_t resp_body_len, struct mt_err *err)
{
	if (body_fits(resp_body, resp_body_len, err) ||
	    stmt_run(st, S_XEND, err, "cannot store the exchange", "iiittb", session, seq, end_ns, outcome,
		     error, resp_body, resp_body_len))
		return -1;
	return exchange_changed(st, session, seq, err);
}

int store_add_analysis(struct store *st, const struct store_analysis *a, int64_t *id, struct mt_err *err)
{
	if (sql_run(st, err, "cannot store the analysis",
		    "INSERT INTO analysis (session, started_wall, mcptap_version, spec,"
		    " spec_source, errors, warnings, infos, complete, rules)"
		    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,0,?9)",
		    "iitttiiit", a->session, a->started_wall, MCPTAP_VERSION, a->spec, a->spec_source,
		    a->errors, a->warnings, a->infos, a->rules))
		return -1;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int store_analysis_done(struct store *st, int64_t analysis, struct mt_err *err)
{
	return sql_run(st, err, "cannot store the analysis", "UPDATE analysis SET complete = 1 WHERE id = ?1",
		       "i", analysis);
}

int store_analysis_finish(struct store *st, int64_t analysis, const struct store_analysis *a,
			  struct mt_err *err)
{
	return sql_run(st, err, "cannot store the analysis",
		       "UPDATE analysis SET spec = ?2, spec_source = ?3, errors = ?4,"
		       " warnings = ?5, infos = ?6, complete = 1 WHERE id = ?1",
		       "ittiii", analysis, a->spec, a->spec_source, a->errors, a->warnings, a->infos);
}

int store_add_finding(struct store *st, int64_t analysis, int64_t session, const char *rule,
		      const char *severity, int64_t seq, const char *related, const char *text,
		      struct mt_err *err)
{
	return stmt_run(st, S_FINDING, err, "cannot store a finding", "iittntt", analysis, session, rule,
			severity, seq > 0, seq, related, text);
}

void store_close_moved(struct store *st)
{
	char *path;
	ino_t wal, shm;

	if (!st)
		return;
	path = mt_strdup(st->path);
	wal = st->wal_ino;
	shm = st->shm_ino;
	store_rollback(st);
	store_close(st); /* (SQLite leaves the journal of a file that moved) */
	if (wal && companion_ino(path, "-wal") == wal) {
		char *name = mt_asprintf("%s-wal", path);
		(void)unlink(name);
		free(name);
	}
	if (shm && companion_ino(path, "-shm") == shm) {
		char *name = mt_asprintf("%s-shm", path);
		(void)unlink(name);
		free(name);
	}
	free(path);
}

int store_file_moved(const struct store *st)
{
	struct stat sb;

	if (stat(st->path, &sb) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 1 : 0;
	return sb.st_dev != st->dev || sb.st_ino != st->ino ? 2 : 0;
}

int store_add_replay_run(struct store *st, const struct store_replay_run *r, int64_t *id, struct mt_err *err)
{
	if (sql_run(st, err, "cannot store the replay run",
		    "INSERT INTO replay_run (session, started_wall, mcptap_version, command,"
		    " ignore, mode, runs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
		    "iitttti", r->session, r->started_wall, MCPTAP_VERSION, r->command ? r->command : "",
		    r->ignore_json, r->mode ? r->mode : "client", r->runs > 0 ? r->runs : (int64_t)1))
		return -1;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int store_add_replay_result(struct store *st, int64_t run, const struct store_replay_result *r,
			    struct mt_err *err)
{
	return sql_run(st, err, "cannot store a replay result",
		       "INSERT INTO replay_result (run, seq, method, status, sent, recorded, live,"
		       " diff, name, noise) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
		       "iittbbbttt", run, r->seq, r->method, r->status, r->sent, r->sent_len, r->recorded,
		       r->recorded_len, r->live, r->live_len, r->diff_json, r->name, r->noise_json);
}

int store_finish_replay_run(struct store *st, int64_t run, const struct store_replay_totals *t,
			    struct mt_err *err)
{
	return sql_run(st, err, "cannot store the replay run",
		       "UPDATE replay_run SET duration_ns = ?2, passed = ?3, differed = ?4,"
		       " missing = ?5, noise = ?6, summary = ?7 WHERE id = ?1",
		       "iiiiiit", run, t->duration_ns, t->passed, t->differed, t->missing, t->noise,
		       t->summary_json);
}

/* ---- reading ---- */

static char *col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? mt_strdup((const char *)t) : NULL;
}

static int64_t col_int(sqlite3_stmt *s, int i, int64_t null_value)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? null_value : sqlite3_column_int64(s, i);
}

#define SESSION_COLUMNS                                                                     \
	"SELECT s.id, s.transport, s.started_wall, s.ended_wall, s.duration_ns, s.command," \
	" s.pid, s.exit_status, s.exit_signal, s.error, s.protocol_version, s.client_name," \
	" s.client_version, s.server_name, s.server_version, s.client_caps, s.server_caps,"
/* What a session holds: kept in its row from version 3 on, counted before. */
#define SESSION_COUNTS_V3 " s.msgs_c2s, s.msgs_s2c, s.stderr_lines, s.bytes_c2s, s.bytes_s2c,"
#define SESSION_COUNTS_V1                                                                           \
	" (SELECT count(*) FROM message m WHERE m.session = s.id AND m.dir = 'c2s'),"               \
	" (SELECT count(*) FROM message m WHERE m.session = s.id AND m.dir = 's2c'),"               \
	" (SELECT count(*) FROM stderr_line e WHERE e.session = s.id),"                             \
	" (SELECT coalesce(sum(size), 0) FROM message m WHERE m.session = s.id AND m.dir = 'c2s')," \
	" (SELECT coalesce(sum(size), 0) FROM message m WHERE m.session = s.id AND m.dir = 's2c'),"
#define SESSION_GAPS                                                              \
	" (SELECT coalesce(sum(messages), 0) FROM gap g WHERE g.session = s.id)," \
	" (SELECT coalesce(sum(bytes), 0) FROM gap g WHERE g.session = s.id),"

/* The columns version 2 added, as a version 1 file read as it is lacks them. */
#define SESSION_COLUMNS_V2 " s.tap_pid, s.tap_id,"
#define SESSION_COLUMNS_V1 " NULL, NULL,"
/* And those of version 4. */
#define SESSION_COLUMNS_V4 " s.http_session_id, s.upstream, s.client_addr," SESSION_LAST " FROM session s"
#define SESSION_COLUMNS_V3 " s.http_session_id, NULL, NULL, NULL FROM session s"
/*
 * An HTTP session's last activity (version 4): its last message, or its last
 * exchange's start or end, whichever is later; each found by the primary
 * key's end, so a session of any size answers at once.
 */
#define SESSION_LAST                                                                          \
	" CASE WHEN s.transport IN ('http', 'sse') THEN (SELECT max(w) FROM ("                \
	"SELECT * FROM (SELECT m.wall AS w FROM message m WHERE m.session = s.id"             \
	" ORDER BY m.seq DESC LIMIT 1) UNION ALL SELECT * FROM (SELECT x.wall +"              \
	" (max(coalesce(x.end_ns, 0), coalesce(x.first_byte_ns, 0), x.t_ns) - x.t_ns) / 1000" \
	" AS w FROM http_exchange x WHERE x.session = s.id ORDER BY x.seq DESC LIMIT 1)))"    \
	" END"

static const char *session_sql(const struct store *st, const char *tail, struct mt_buf *b)
{
	mt_buf_reset(b);
	mt_buf_puts(b, SESSION_COLUMNS);
	mt_buf_puts(b, st->version >= 3 ? SESSION_COUNTS_V3 : SESSION_COUNTS_V1);
	mt_buf_puts(b, SESSION_GAPS);
	mt_buf_puts(b, st->version >= 2 ? SESSION_COLUMNS_V2 : SESSION_COLUMNS_V1);
	mt_buf_puts(b, st->version >= 4 ? SESSION_COLUMNS_V4 : SESSION_COLUMNS_V3);
	mt_buf_puts(b, tail);
	return b->data;
}

static void read_session(sqlite3_stmt *s, struct store_session_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(s, 0);
	r->transport = col_text(s, 1);
	r->started_wall = col_int(s, 2, 0);
	r->ended_wall = col_int(s, 3, 0);
	r->duration_ns = col_int(s, 4, -1);
	r->command = col_text(s, 5);
	r->pid = col_int(s, 6, 0);
	r->exit_status = (int)col_int(s, 7, -1);
	r->exit_signal = (int)col_int(s, 8, 0);
	r->error = col_text(s, 9);
	r->protocol_version = col_text(s, 10);
	r->client_name = col_text(s, 11);
	r->client_version = col_text(s, 12);
	r->server_name = col_text(s, 13);
	r->server_version = col_text(s, 14);
	r->client_caps = col_text(s, 15);
	r->server_caps = col_text(s, 16);
	r->msgs_c2s = col_int(s, 17, 0);
	r->msgs_s2c = col_int(s, 18, 0);
	r->stderr_lines = col_int(s, 19, 0);
	r->bytes_c2s = col_int(s, 20, 0);
	r->bytes_s2c = col_int(s, 21, 0);
	r->gap_messages = col_int(s, 22, 0);
	r->gap_bytes = col_int(s, 23, 0);
	r->tap_pid = col_int(s, 24, 0);
	r->tap_id = col_text(s, 25);
	r->http_session_id = col_text(s, 26);
	r->upstream = col_text(s, 27);
	r->client_addr = col_text(s, 28);
	r->last_wall = col_int(s, 29, 0);
}

const char *store_session_state(const struct store_session_row *r)
{
	char now[128];

	if (r->ended_wall)
		return "ended";
	if (!r->tap_id)
		return "running"; /* recorded before mcptap said which process it was */
	if (mt_process_identity(r->tap_pid, now, sizeof(now)) == 0 && !strcmp(now, r->tap_id))
		return "running";
	return "aborted";
}

void store_session_row_release(struct store_session_row *r)
{
	if (!r)
		return;
	free(r->transport);
	free(r->command);
	free(r->error);
	free(r->protocol_version);
	free(r->client_name);
	free(r->client_version);
	free(r->server_name);
	free(r->server_version);
	free(r->tap_id);
	free(r->client_caps);
	free(r->server_caps);
	free(r->http_session_id);
	free(r->upstream);
	free(r->client_addr);
	memset(r, 0, sizeof(*r));
}

void store_sessions_free(struct store_session_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_session_row_release(&rows[i]);
	free(rows);
}

int store_sessions(struct store *st, struct store_session_row **rows, size_t *n, struct mt_err *err)
{
	sqlite3_stmt *s = NULL;
	struct store_session_row *v = NULL;
	size_t len = 0, cap = 0;
	int r, rc = -1;

	if (!(s = sql_query(st, err, "cannot read sessions", session_sql(st, " ORDER BY s.id", &st->scratch),
			    "")))
		goto out;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? cap * 2 : 16;
			v = mt_realloc(v, cap * sizeof(*v));
		}
		read_session(s, &v[len++]);
	}
	if (r != SQLITE_DONE) {
		db_fail(st, err, "cannot read sessions");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	if (rc) {
		store_sessions_free(v, len);
		v = NULL;
		len = 0;
	}
	*rows = v;
	*n = len;
	return rc;
}

int store_session_get(struct store *st, int64_t id, struct store_session_row *row, struct mt_err *err)
{
	sqlite3_stmt *s = NULL;
	int r, rc = -1;

	memset(row, 0, sizeof(*row));
	if (!(s = sql_query(st, err, "cannot read the session",
			    session_sql(st, " WHERE s.id = ?1", &st->scratch), "i", id)))
		goto out;
	r = sqlite3_step(s);
	if (r == SQLITE_ROW) {
		read_session(s, row);
		rc = 0;
	} else if (r == SQLITE_DONE) {
		mt_err_set(err, "no session %lld", (long long)id);
	} else {
		db_fail(st, err, "cannot read the session");
	}
out:
	sqlite3_finalize(s);
	return rc;
}

int store_last_session(struct store *st, int64_t *id, struct mt_err *err)
{
	int64_t v = 0;

	if (pragma_int(st, "SELECT coalesce(max(id), 0) FROM session", &v, err))
		return -1;
	if (v == 0)
		return mt_err_set(err, "no sessions in the file");
	*id = v;
	return 0;
}

/* The streams of a session (messages, stderr, gaps, exchanges), each in seq
 * order; merged in C, which is much cheaper than a compound SELECT that copies
 * every row through a merge. A message's columns: those of every version,
 * then (15) those of version 4, and its FROM clause. */
static const char lean_sql[] =
	"SELECT seq, t_ns, NULL, dir, NULL, kind, NULL, NULL, NULL, NULL, request_seq, incomplete,"
	" raw, 0, 0";
static const char lean_v4_sql[] =
	"SELECT seq, t_ns, NULL, dir, NULL, kind, NULL, NULL, NULL, NULL, request_seq, incomplete,"
	" raw, replayed, exchange";
static const char msg_sql[] =
	"SELECT seq, t_ns, wall, dir, channel, kind, id, idtype, method, error_code, size,"
	" incomplete, raw, request_seq, NULL";
static const char msg_tail_sql[] = " FROM message m WHERE m.session = ?1";
static const char paired_sql[] =
	"SELECT m.seq, m.t_ns, m.wall, m.dir, m.channel, m.kind, m.id, m.idtype,"
	" coalesce(m.method, q.method), m.error_code, m.size, m.incomplete, m.raw, m.request_seq,"
	" m.t_ns - q.t_ns";
static const char paired_tail_sql[] = " FROM message m LEFT JOIN message q ON q.session = m.session"
				      " AND q.seq = m.request_seq WHERE m.session = ?1";
static const char msg_v4_sql[] = ", exchange, sse_id, sse_event, replayed";
static const char paired_v4_sql[] = ", m.exchange, m.sse_id, m.sse_event, m.replayed";
static const char msg_v3_sql[] = ", NULL, NULL, NULL, 0";
/* (?2: only what comes after that seq; a gap of no known place only when it is the least.) */
static const char stderr_sql[] =
	"SELECT seq, t_ns, wall, incomplete, raw FROM stderr_line WHERE session = ?1 AND seq > ?2"
	" ORDER BY seq";
static const char gap_sql[] =
	"SELECT coalesce(seq, 9223372036854775807), dir, messages, bytes, reason FROM gap"
	" WHERE session = ?1 AND (seq > ?2 OR (seq IS NULL AND ?2 = -9223372036854775808))"
	" ORDER BY 1";
/* (The count goes by message_by_exchange.) */
static const char exchange_sql[] =
	"SELECT x.seq, x.conn, x.method, x.target, x.req_headers, x.req_body, x.status,"
	" x.resp_headers, x.resp_type, x.resp_body, x.t_ns, x.wall, x.first_byte_ns, x.end_ns,"
	" x.outcome, x.error, x.last_event_id,"
	" (SELECT count(*) FROM message m WHERE m.session = x.session AND m.exchange = x.seq)"
	" FROM http_exchange x WHERE x.session = ?1 ORDER BY x.seq";
static const char exchange_item_sql[] =
	"SELECT x.seq, x.conn, x.method, x.target, x.req_headers, x.req_body, x.status,"
	" x.resp_headers, x.resp_type, x.resp_body, x.t_ns, x.wall, x.first_byte_ns, x.end_ns,"
	" x.outcome, x.error, x.last_event_id,"
	" (SELECT count(*) FROM message m WHERE m.session = x.session AND m.exchange = x.seq)"
	" FROM http_exchange x WHERE x.session = ?1 AND x.seq > ?2 ORDER BY x.seq";

/*
 * The filter's condition on the message row named alias. With
 * STORE_FILTER_PAIRS a request also passes when its answer does, and an
 * answer when its request does.
 */
static void filter_sql(const struct store *st, const char *alias, struct mt_buf *b)
{
	int http = st->version >= 4;

	mt_buf_putc(b, '(');
	mt_filter_sql(st->filter, alias, 2, http, b);
	if (st->filter_how & STORE_FILTER_PAIRS) {
		mt_buf_printf(b,
			      " OR (%s.kind = 'request' AND EXISTS (SELECT 1 FROM message fp"
			      " WHERE fp.session = %s.session AND fp.request_seq = %s.seq"
			      " AND fp.kind IN ('response', 'error') AND ",
			      alias, alias, alias);
		mt_filter_sql(st->filter, "fp", 2, http, b);
		/* (Answers, and the notifications/cancelled of a request.) */
		mt_buf_printf(b,
			      ")) OR (%s.kind IN ('response', 'error', 'notification')"
			      " AND %s.request_seq IS NOT NULL AND EXISTS (SELECT 1 FROM message fp"
			      " WHERE fp.session = %s.session AND fp.seq = %s.request_seq"
			      " AND fp.kind = 'request' AND ",
			      alias, alias, alias, alias);
		mt_filter_sql(st->filter, "fp", 2, http, b);
		mt_buf_puts(b, "))");
	}
	mt_buf_putc(b, ')');
}

/* The filter's literals (?3 on: ?1 is the session, ?2 the seq to read after) and lists. */
static void filter_bind(const struct store *st, sqlite3_stmt *s)
{
	if (st->filter)
		mt_filter_bind(st->filter, s, 2);
}

void store_set_filter(struct store *st, struct mt_filter *f, unsigned how)
{
	if (!st)
		return;
	st->filter = f;
	st->filter_how = how;
}

int store_data_changed(struct store *st)
{
	sqlite3_stmt *s = NULL;
	int64_t v = -1;

	if ((s = sql_query(st, NULL, NULL, "PRAGMA data_version", "")) && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (v == st->data_version && v >= 0)
		return 0;
	st->data_version = v;
	return 1;
}

int store_filter_count(struct store *st, int64_t session, int64_t *n, struct mt_err *err)
{
	struct mt_buf b = MT_BUF_INIT;
	sqlite3_stmt *s = NULL;
	int rc = -1;

	*n = 0;
	if (st->filter)
		mt_filter_session(st->filter, session);
	mt_buf_puts(&b, "SELECT count(*) FROM message m WHERE m.session = ?1 AND m.seq > ?2");
	if (st->filter) {
		mt_buf_puts(&b, " AND ");
		filter_sql(st, "m", &b);
	}
	if (!(s = sql_query(st, err, "cannot read messages", b.data, "ii", session, (int64_t)INT64_MIN)))
		goto out;
	filter_bind(st, s);
	if (sqlite3_step(s) != SQLITE_ROW) {
		db_fail(st, err, "cannot read messages");
		goto out;
	}
	*n = sqlite3_column_int64(s, 0);
	rc = 0;
out:
	sqlite3_finalize(s);
	mt_buf_release(&b);
	return rc;
}

/* The SQL of stream k (0 messages, 1 stderr, 2 gaps, 3 exchanges), into b. */
static const char *item_sql(const struct store *st, int k, unsigned flags, struct mt_buf *b)
{
	int paired = flags & STORE_ITEMS_PAIRED;

	switch (k) {
	case 0:
		mt_buf_reset(b);
		if (flags & STORE_ITEMS_LEAN) {
			mt_buf_puts(b, st->version < 4 ? lean_sql : lean_v4_sql);
			mt_buf_puts(b, msg_tail_sql);
		} else {
			mt_buf_puts(b, paired ? paired_sql : msg_sql);
			mt_buf_puts(b, st->version < 4 ? msg_v3_sql : paired ? paired_v4_sql : msg_v4_sql);
			mt_buf_puts(b, paired ? paired_tail_sql : msg_tail_sql);
		}
		mt_buf_puts(b, " AND m.seq > ?2");
		if (st->filter) {
			mt_buf_puts(b, " AND ");
			filter_sql(st, "m", b);
		}
		mt_buf_puts(b, " ORDER BY m.seq");
		return b->data;
	case 1: return stderr_sql;
	case 2: return gap_sql;
	default: return exchange_item_sql;
	}
}

/* A blob column as bytes: never NULL (an empty or NULL value is ""). */
static const void *col_blob(sqlite3_stmt *s, int i, size_t *n)
{
	const void *p = sqlite3_column_blob(s, i);

	*n = p ? (size_t)sqlite3_column_bytes(s, i) : 0;
	return p ? p : "";
}

/* A message's kind as stored, or NULL when it is none of mcptap's (a foreign file). */
static const char *known_kind(const unsigned char *k)
{
	static const char *const kinds[] = {"request", "notification", "response",  "error",
					    "batch",   "invalid",      "notjsonrpc"};

	for (size_t i = 0; k && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp((const char *)k, kinds[i]))
			return kinds[i];
	return NULL;
}

/*
 * One row into *it. Every column may be NULL or of another type in a file
 * from elsewhere: the item's dir and kind are always set (-1 when the
 * message's direction is neither c2s nor s2c: a damaged file), raw is never
 * NULL, and a kind that is not mcptap's is worked out from the bytes.
 */
/* A blob column as bytes: NULL when it is NULL ("" when empty). */
static const void *col_blob_or_null(sqlite3_stmt *s, int i, size_t *n)
{
	*n = 0;
	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		return NULL;
	return col_blob(s, i, n);
}

/* One row of exchange_sql into *x (every column untrusted). */
static void read_exchange(sqlite3_stmt *s, int64_t session, struct store_exchange_row *x)
{
	int64_t status;

	memset(x, 0, sizeof(*x));
	x->session = session;
	x->seq = sqlite3_column_int64(s, 0);
	x->conn = sqlite3_column_int64(s, 1);
	x->method = (const char *)sqlite3_column_text(s, 2);
	x->target = (const char *)sqlite3_column_text(s, 3);
	x->req_headers_json = (const char *)sqlite3_column_text(s, 4);
	x->req_body = col_blob_or_null(s, 5, &x->req_body_len);
	status = sqlite3_column_int64(s, 6);
	x->status = sqlite3_column_type(s, 6) == SQLITE_INTEGER && status >= 100 && status <= 999
			    ? (int)status
			    : 0;
	x->resp_headers_json = (const char *)sqlite3_column_text(s, 7);
	x->resp_type = (const char *)sqlite3_column_text(s, 8);
	x->resp_body = col_blob_or_null(s, 9, &x->resp_body_len);
	x->t_ns = sqlite3_column_int64(s, 10);
	x->wall = sqlite3_column_int64(s, 11);
	x->first_byte_ns = col_int(s, 12, -1);
	x->end_ns = col_int(s, 13, -1);
	x->outcome = (const char *)sqlite3_column_text(s, 14);
	x->error = (const char *)sqlite3_column_text(s, 15);
	x->last_event_id = (const char *)sqlite3_column_text(s, 16);
	x->messages = sqlite3_column_int64(s, 17);
}

static int read_item(sqlite3_stmt *s, enum store_item_type type, unsigned flags, int64_t session,
		     struct store_exchange_row *x, struct store_item *it)
{
	const unsigned char *t;

	memset(it, 0, sizeof(*it));
	it->type = type;
	it->id_sqltype = SQLITE_NULL;
	switch (type) {
	case STORE_ITEM_MESSAGE:
		it->seq = sqlite3_column_int64(s, 0);
		it->t_ns = sqlite3_column_int64(s, 1);
		t = sqlite3_column_text(s, 3);
		it->dir = t && !strcmp((const char *)t, "c2s")   ? "c2s"
			  : t && !strcmp((const char *)t, "s2c") ? "s2c"
								 : NULL;
		if (!it->dir)
			return -1;
		it->raw = col_blob(s, 12, &it->raw_len);
		it->incomplete = sqlite3_column_int(s, 11) != 0;
		if (!(it->kind = known_kind(sqlite3_column_text(s, 5)))) {
			struct mt_class c;
			mt_classify(it->raw, it->raw_len, &c);
			it->kind = mt_kind_name(c.kind);
		}
		if (flags & STORE_ITEMS_LEAN) {
			/* What a reader that classifies the bytes itself needs. */
			it->size = (int64_t)it->raw_len;
			it->replayed = sqlite3_column_int64(s, 13) != 0;
			it->exchange = sqlite3_column_int64(s, 14);
			it->request_seq = sqlite3_column_int64(s, 10);
			break;
		}
		it->wall = sqlite3_column_int64(s, 2);
		t = sqlite3_column_text(s, 4);
		it->channel = t ? (const char *)t : "stdio";
		it->id_sqltype = sqlite3_column_type(s, 6);
		if (it->id_sqltype == SQLITE_INTEGER)
			it->id_int = sqlite3_column_int64(s, 6);
		else if (it->id_sqltype == SQLITE_FLOAT)
			it->id_real = sqlite3_column_double(s, 6);
		else if (it->id_sqltype == SQLITE_TEXT)
			it->id_text = (const char *)sqlite3_column_text(s, 6);
		else
			it->id_sqltype = SQLITE_NULL; /* (a blob is no id) */
		it->idtype = (const char *)sqlite3_column_text(s, 7);
		if (it->id_sqltype == SQLITE_NULL && it->idtype && strcmp(it->idtype, "null"))
			it->idtype = NULL;
		it->method = (const char *)sqlite3_column_text(s, 8);
		it->has_error_code = sqlite3_column_type(s, 9) == SQLITE_INTEGER;
		it->error_code = it->has_error_code ? sqlite3_column_int64(s, 9) : 0;
		it->size = sqlite3_column_int64(s, 10);
		/* The request an answer answers, or a cancel cancels (version 3). */
		int64_t rq = sqlite3_column_int64(s, 13);
		if (rq > 0 && rq < it->seq && (!strcmp(it->kind, "response") || !strcmp(it->kind, "error"))) {
			it->request_seq = rq;
			it->latency_ns = sqlite3_column_int64(s, 14);
		} else if (rq > 0 && rq < it->seq && !strcmp(it->kind, "notification")) {
			it->cancels_seq = rq;
		}
		/* Over HTTP (version 4). */
		if (sqlite3_column_type(s, 15) == SQLITE_INTEGER && sqlite3_column_int64(s, 15) > 0)
			it->exchange = sqlite3_column_int64(s, 15);
		it->sse_id = (const char *)sqlite3_column_text(s, 16);
		it->sse_event = (const char *)sqlite3_column_text(s, 17);
		it->replayed = sqlite3_column_int64(s, 18) != 0;
		break;
	case STORE_ITEM_STDERR:
		it->seq = sqlite3_column_int64(s, 0);
		it->t_ns = sqlite3_column_int64(s, 1);
		it->wall = sqlite3_column_int64(s, 2);
		it->dir = it->channel = it->kind = "stderr";
		it->incomplete = sqlite3_column_int(s, 3) != 0;
		it->raw = col_blob(s, 4, &it->raw_len);
		it->size = (int64_t)it->raw_len;
		break;
	case STORE_ITEM_GAP:
		it->seq = sqlite3_column_int64(s, 0);
		if (it->seq == INT64_MAX)
			it->seq = -1;
		t = sqlite3_column_text(s, 1);
		it->dir = t && (!strcmp((const char *)t, "c2s") || !strcmp((const char *)t, "s2c") ||
				!strcmp((const char *)t, "stderr"))
				  ? (const char *)t
				  : NULL;
		it->kind = "gap";
		it->gap_messages = sqlite3_column_int64(s, 2);
		it->gap_bytes = sqlite3_column_int64(s, 3);
		it->size = it->gap_bytes;
		t = sqlite3_column_text(s, 4);
		it->gap_reason = t ? (const char *)t : "";
		break;
	case STORE_ITEM_EXCHANGE:
		read_exchange(s, session, x);
		it->seq = x->seq;
		it->t_ns = x->t_ns;
		it->wall = x->wall;
		it->kind = "exchange";
		it->x = x;
		break;
	}
	return 0;
}

int store_each_item_ex(struct store *st, int64_t session, unsigned flags,
		       int (*cb)(const struct store_item *it, void *ctx), void *ctx, struct mt_err *err)
{
	return store_each_item_after(st, session, INT64_MIN, flags, cb, ctx, err);
}

int store_each_item_after(struct store *st, int64_t session, int64_t after, unsigned flags,
			  int (*cb)(const struct store_item *it, void *ctx), void *ctx, struct mt_err *err)
{
	sqlite3_stmt *s[4] = {NULL, NULL, NULL, NULL};
	int live[4] = {0, 0, 0, 0};
	int64_t key[4];
	struct store_item it;
	struct store_exchange_row x;
	struct mt_buf sql = MT_BUF_INIT;
	/* (No exchanges before version 4.) */
	int streams = (flags & STORE_ITEMS_EXCHANGES) && st->version >= 4 ? 4 : 3;
	/* (A filter picks messages: stderr, gaps and exchanges are not.) */
	if (st->filter)
		streams = 1;
	int rc = -1;

	if (st->filter)
		mt_filter_session(st->filter, session);
	for (int k = 0; k < streams; k++) {
		if (!(s[k] = sql_query(st, err, "cannot read messages", item_sql(st, k, flags, &sql), "ii",
				       session, after)))
			goto out;
		if (k == 0)
			filter_bind(st, s[k]);
	}
	for (int k = 0; k < streams; k++) {
		int r = sqlite3_step(s[k]);
		if (r == SQLITE_ROW) {
			live[k] = 1;
			key[k] = sqlite3_column_int64(s[k], 0);
		} else if (r != SQLITE_DONE) {
			db_fail(st, err, "cannot read messages");
			goto out;
		}
	}
	for (;;) {
		int k = -1;
		/* (Of rows with one seq, which a crafted file may have, an exchange first.) */
		for (int j = 0; j < streams; j++)
			if (live[j] && (k < 0 || key[j] < key[k] || (j == 3 && key[j] == key[k])))
				k = j;
		if (k < 0)
			break;
		if (read_item(s[k], (enum store_item_type)k, flags, session, &x, &it)) {
			mt_err_set(err,
				   "damaged mcptap capture: message %lld of session %lld has no "
				   "direction (c2s or s2c)",
				   (long long)it.seq, (long long)session);
			goto out;
		}
		int c = cb(&it, ctx);
		if (c) {
			rc = c;
			goto out;
		}
		int r = sqlite3_step(s[k]);
		if (r == SQLITE_ROW) {
			key[k] = sqlite3_column_int64(s[k], 0);
		} else if (r == SQLITE_DONE) {
			live[k] = 0;
		} else {
			db_fail(st, err, "cannot read messages");
			goto out;
		}
	}
	rc = 0;
out:
	for (int k = 0; k < 4; k++)
		sqlite3_finalize(s[k]);
	mt_buf_release(&sql);
	return rc;
}

int store_each_exchange(struct store *st, int64_t session,
			int (*cb)(const struct store_exchange_row *x, void *ctx), void *ctx,
			struct mt_err *err)
{
	sqlite3_stmt *s = NULL;
	struct store_exchange_row x;
	int r, rc = -1;

	if (st->version < 4)
		return 0;
	if (!(s = sql_query(st, err, "cannot read exchanges", exchange_sql, "i", session)))
		goto out;
	while ((r = sqlite3_step(s)) == SQLITE_ROW) {
		int c;
		read_exchange(s, session, &x);
		if ((c = cb(&x, ctx)) != 0) {
			rc = c;
			goto out;
		}
	}
	if (r != SQLITE_DONE) {
		db_fail(st, err, "cannot read exchanges");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

int store_each_route(struct store *st, int64_t session, int (*cb)(const struct store_route *r, void *ctx),
		     void *ctx, struct mt_err *err)
{
	static const char sql[] = "SELECT m.seq, m.channel, m.exchange, x.method FROM message m"
				  " LEFT JOIN http_exchange x ON x.session = m.session AND x.seq = m.exchange"
				  " WHERE m.session = ?1 ORDER BY m.seq";
	sqlite3_stmt *s = NULL;
	struct store_route r;
	int step, rc = -1;

	if (st->version < 4)
		return 0;
	if (!(s = sql_query(st, err, "cannot read how messages travelled", sql, "i", session)))
		goto out;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		int c;
		r.seq = sqlite3_column_int64(s, 0);
		r.channel = (const char *)sqlite3_column_text(s, 1);
		r.exchange = sqlite3_column_type(s, 2) == SQLITE_INTEGER ? sqlite3_column_int64(s, 2) : 0;
		r.method = (const char *)sqlite3_column_text(s, 3);
		if ((c = cb(&r, ctx)) != 0) {
			rc = c;
			goto out;
		}
	}
	if (step != SQLITE_DONE) {
		db_fail(st, err, "cannot read how messages travelled");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(s);
	return rc;
}

int store_each_item(struct store *st, int64_t session, int (*cb)(const struct store_item *it, void *ctx),
		    void *ctx, struct mt_err *err)
{
	return store_each_item_ex(st, session, STORE_ITEMS_PAIRED, cb, ctx, err);
}

int store_read_raw(struct store *st, int64_t session, int64_t from, int64_t max,
		   int (*cb)(int64_t seq, const void *raw, size_t n, void *ctx), void *ctx,
		   struct mt_err *err)
{
	sqlite3_stmt *s = stmt(st, S_RAW, err);
	int rc = 0, r = SQLITE_DONE;

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, session);
	sqlite3_bind_int64(s, 2, from);
	sqlite3_bind_int64(s, 3, max);
	while (!rc && (r = sqlite3_step(s)) == SQLITE_ROW) {
		size_t n;
		const void *raw = col_blob(s, 1, &n);
		rc = cb(sqlite3_column_int64(s, 0), raw, n, ctx);
	}
	if (!rc && r != SQLITE_DONE)
		rc = db_fail(st, err, "cannot read messages");
	sqlite3_reset(s); /* no read transaction is left open */
	return rc;
}
