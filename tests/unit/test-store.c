/*
 * test-store.c - the capture file (schema/store.h): creation (mode 0600,
 * application_id, user_version), refusal of files that are not ours without
 * touching them, reopening, typed ids in SQL, the exchange and method_stats
 * views, and the readers (sessions, last session, items in seq order).
 */
#include "tests/unit/unit.h"

#include <pthread.h>

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "schema/store.h"

/* ---- helpers ---- */

/* A scratch directory (never NULL). */
static char *tmpdir(void)
{
	char *dir = unit_tmpdir();

	if (!dir) {
		fail_msg("cannot make a scratch directory");
		abort();
	}
	return dir;
}

static char *path_in(const char *dir, const char *name)
{
	return mt_asprintf("%s/%s", dir, name);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* The whole file, with a NUL after it (caller frees); *n is its size. */
static char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, len = 0, r;

	assert_non_null(f);
	do {
		if (len + 1 >= cap) {
			cap = cap ? cap * 2 : 4096;
			p = mt_realloc(p, cap);
		}
		r = fread(p + len, 1, cap - len - 1, f);
		len += r;
	} while (r > 0);
	fclose(f);
	p[len] = '\0';
	*n = len;
	return p;
}

static int exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

/* Run SQL on our own connection to path (not through the store). */
static void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s (in: %.200s)", msg ? msg : "?", sql);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

/* The first column of the first row of a query, as an integer (NULL: -999). */
static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -999 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* Every row of a query, columns joined with '|' and rows with '\n' (NULL shows as ~). */
static char *sql_rows(const char *path, const char *sql)
{
	struct mt_buf b = MT_BUF_INIT;
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	while (sqlite3_step(s) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(s); i++) {
			const unsigned char *t = sqlite3_column_text(s, i);
			if (i)
				mt_buf_putc(&b, '|');
			mt_buf_puts(&b, t ? (const char *)t : "~");
		}
		mt_buf_putc(&b, '\n');
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	if (!b.data)
		mt_buf_puts(&b, "");
	return b.data;
}

#define assert_rows(path, sql, want)                                                \
	do {                                                                        \
		char *got_ = sql_rows((path), (sql));                               \
		if (strcmp(got_, (want)) != 0)                                      \
			fail_msg("%s\ngot:\n%sexpected:\n%s", (sql), got_, (want)); \
		free(got_);                                                         \
	} while (0)

static struct store *open_new(const char *path)
{
	struct store *st = NULL;
	struct mt_err err = {"", 0};

	if (store_open(path, STORE_WRITE, &st, &err))
		fail_msg("store_open %s: %s", path, err.msg);
	assert_non_null(st);
	return st;
}

static int64_t new_session(struct store *st, const char *command)
{
	struct store_session_new sn = {"stdio", 1700000000000000LL, command, "/tmp", 4242, NULL, NULL};
	struct mt_err err = {"", 0};
	int64_t id = 0;

	if (store_session_create(st, &sn, &id, &err))
		fail_msg("store_session_create: %s", err.msg);
	assert_true(id > 0);
	return id;
}

/*
 * Classify and append one message (raw holds its newline, if any); answers
 * name the seq of the request they answer in request_seq (0: none).
 */
static void add_answer_n(struct store *st, int64_t session, int64_t seq, int64_t t_ns, const char *dir,
			 const char *raw, size_t n, int incomplete, int64_t request_seq)
{
	struct mt_class c;
	struct mt_err err = {"", 0};

	mt_classify(raw, n, &c);
	struct store_msg m = {
		.session = session,
		.seq = seq,
		.t_ns = t_ns,
		.wall = 1700000000000000LL + t_ns / 1000,
		.dir = dir,
		.channel = "stdio",
		.cls = &c,
		.raw = raw,
		.size = n,
		.incomplete = incomplete,
		.request_seq = request_seq,
	};
	if (store_add_message(st, &m, &err))
		fail_msg("store_add_message seq %lld: %s", (long long)seq, err.msg);
}

static void add_msg_n(struct store *st, int64_t session, int64_t seq, int64_t t_ns, const char *dir,
		      const char *raw, size_t n, int incomplete)
{
	add_answer_n(st, session, seq, t_ns, dir, raw, n, incomplete, 0);
}

static void add_msg(struct store *st, int64_t session, int64_t seq, int64_t t_ns, const char *dir,
		    const char *raw)
{
	add_answer_n(st, session, seq, t_ns, dir, raw, strlen(raw), 0, 0);
}

static void add_answer(struct store *st, int64_t session, int64_t seq, int64_t t_ns, const char *dir,
		       const char *raw, int64_t request_seq)
{
	add_answer_n(st, session, seq, t_ns, dir, raw, strlen(raw), 0, request_seq);
}

static void check_refused(const char *path, enum store_mode mode, const char *needle)
{
	struct store *st = (struct store *)&st; /* must be reset to NULL */
	struct mt_err err = {"", 0};

	assert_int_equal(store_open(path, mode, &st, &err), -1);
	assert_null(st);
	assert_true(err.msg[0] != '\0');
	if (needle && !strstr(err.msg, needle))
		fail_msg("'%s' does not say '%s'", err.msg, needle);
	/* Lowercase, no full stop (STYLE.md 10). */
	assert_false(err.msg[strlen(err.msg) - 1] == '.');
}

/* The directory holds exactly these names (NULL-terminated). */
static void assert_dir_holds(const char *dir, const char *const *names)
{
	size_t want = 0, got = 0;
	char *p;

	for (; names[want]; want++) {
		p = path_in(dir, names[want]);
		if (!exists(p))
			fail_msg("%s is missing", p);
		free(p);
	}
	char *cmd = mt_asprintf("ls -A '%s' | wc -l", dir);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%zu", &got), 1);
	pclose(f);
	free(cmd);
	if (got != want) {
		cmd = mt_asprintf("ls -lA '%s' >&2", dir);
		assert_int_equal(system(cmd), 0);
		free(cmd);
		fail_msg("%s holds %zu files, expected %zu", dir, got, want);
	}
}

/* ---- creating ---- */

static void test_create(void **state)
{
	char *dir = tmpdir(), *db, *wal, *shm;
	mode_t old = umask(0);
	struct store *st;
	struct stat sb;

	(void)state;
	assert_non_null(dir);
	db = path_in(dir, "new.db");
	wal = path_in(dir, "new.db-wal");
	shm = path_in(dir, "new.db-shm");
	st = open_new(db);
	new_session(st, "server --flag");
	/* Mode 0600 even with umask 0, for the file and its WAL companions. */
	assert_int_equal(stat(db, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_true(exists(wal));
	assert_int_equal(stat(wal, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(stat(shm, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	umask(old);

	assert_int_equal(sql_int(db, "PRAGMA application_id"), 0x4d435054);
	assert_int_equal(sql_int(db, "PRAGMA user_version"), 4);
	assert_int_equal(STORE_SCHEMA_VERSION, 4);
	assert_rows(db, "PRAGMA journal_mode", "wal\n");
	assert_rows(db, "SELECT value FROM meta WHERE key = 'created_by'", "mcptap " MCPTAP_VERSION "\n");
	/* The tables and views this module writes and reads (the schema may hold more). */
	assert_int_equal(sql_int(db, "SELECT count(*) FROM sqlite_master WHERE"
				     " (type = 'table' AND name IN ('meta', 'session', 'message',"
				     " 'stderr_line', 'gap', 'http_exchange')) OR (type = 'view' AND name IN"
				     " ('exchange', 'method_stats'))"),
			 8);
	assert_int_equal(store_close(st), 0);
	assert_int_equal(store_close(NULL), 0);

	free(db);
	free(wal);
	free(shm);
	unit_rmdir(dir);
}

static void test_missing_and_empty(void **state)
{
	char *dir = tmpdir(), *db;
	struct store *st;
	struct stat sb;

	(void)state;
	db = path_in(dir, "none.db");
	/* STORE_READ refuses a missing file and does not create it. */
	check_refused(db, STORE_READ, NULL);
	assert_false(exists(db));
	/* ... and an empty one, which it leaves empty. */
	write_file(db, "", 0);
	check_refused(db, STORE_READ, "empty");
	assert_int_equal(stat(db, &sb), 0);
	assert_int_equal(sb.st_size, 0);
	/* STORE_WRITE takes an empty file as a new capture. */
	st = open_new(db);
	new_session(st, NULL);
	assert_int_equal(store_close(st), 0);
	assert_int_equal(sql_int(db, "PRAGMA application_id"), 0x4d435054);
	/* A directory is refused. */
	check_refused(dir, STORE_WRITE, "directory");
	check_refused(dir, STORE_READ, "directory");
	/* A path in a missing directory is refused. */
	free(db);
	db = path_in(dir, "no/such/dir.db");
	check_refused(db, STORE_WRITE, NULL);
	free(db);
	unit_rmdir(dir);
}

/* A file that is not ours is refused in both modes, and not one byte of it changes. */
static void check_untouched(const char *dir, const char *name, const char *needle)
{
	char *path = path_in(dir, name);
	size_t n0, n1;
	char *before = read_all(path, &n0), *after;
	const char *const only[] = {name, NULL};

	check_refused(path, STORE_READ, needle);
	check_refused(path, STORE_WRITE, needle);
	after = read_all(path, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	assert_dir_holds(dir, only);
	free(before);
	free(after);
	free(path);
}

static void test_refuse_not_sqlite(void **state)
{
	char *dir = tmpdir(), *p;
	char junk[8192];

	(void)state;
	p = path_in(dir, "hello.txt");
	write_file(p, "hello", 5);
	free(p);
	check_untouched(dir, "hello.txt", "not a database");
	unit_rmdir(dir);

	dir = tmpdir();
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	p = path_in(dir, "junk.bin");
	write_file(p, junk, sizeof(junk));
	free(p);
	check_untouched(dir, "junk.bin", NULL);
	unit_rmdir(dir);

	/* Only the magic string of an SQLite header. */
	dir = tmpdir();
	p = path_in(dir, "magic.db");
	write_file(p, "SQLite format 3", 16);
	free(p);
	check_untouched(dir, "magic.db", NULL);
	unit_rmdir(dir);
}

static void test_refuse_other_application(void **state)
{
	char *dir = tmpdir(), *p;

	(void)state;
	/* Another program's database: application_id 0, a table with rows. */
	p = path_in(dir, "other.db");
	sql_exec(p, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
		    "INSERT INTO notes (body) VALUES ('keep me'), ('and me');");
	free(p);
	check_untouched(dir, "other.db", "not an mcptap capture");
	unit_rmdir(dir);

	/* Another application_id and nothing else. */
	dir = tmpdir();
	p = path_in(dir, "app.db");
	sql_exec(p, "PRAGMA application_id = 305419896; PRAGMA user_version = 1;");
	free(p);
	check_untouched(dir, "app.db", "not an mcptap capture");
	unit_rmdir(dir);

	/* A WAL-mode database of another program. */
	dir = tmpdir();
	p = path_in(dir, "walother.db");
	sql_exec(p, "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);");
	free(p);
	check_untouched(dir, "walother.db", "not an mcptap capture");
	unit_rmdir(dir);
}

/*
 * A version 1 file (the schema as first released, tests/fixtures/schema-v1.sql)
 * is migrated when opened for writing, keeping its rows; a reader that may not
 * write reads it as it is.
 */
struct waiter {
	const char *path;
	int rc;
	int64_t waited_ms;
};

/* A tap's write: waits for the lock (the store's own busy handler), writes. */
static void *wait_and_write(void *arg)
{
	struct waiter *wt = arg;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct store_session_new sn = {"stdio", 9, "waiter", "/", 1, NULL, NULL};
	int64_t t0 = mt_mono_ns(), id = 0;

	wt->rc = store_open(wt->path, STORE_UPDATE, &st, &err) || store_session_create(st, &sn, &id, &err);
	wt->waited_ms = (mt_mono_ns() - t0) / 1000000;
	store_close(st);
	return NULL;
}

/*
 * A long analysis commits its findings in slices: store_slice commits once the
 * transaction is 50 ms old (another connection sees the rows and may write),
 * not before; latest_finding shows an analysis only once it is complete.
 */
static void test_analysis_slices(void **state)
{
	char *dir = tmpdir(), *p;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct store_session_new sn = {"stdio", 1, "srv", "/", 1, NULL, NULL};
	struct store_analysis a = {0, 2, "2025-06-18", "default", 1, 0, 0, NULL};
	int64_t sid = 0, first = 0, second = 0;

	(void)state;
	p = path_in(dir, "slices.db");
	if (store_open(p, STORE_WRITE, &st, &err) || store_session_create(st, &sn, &sid, &err))
		fail_msg("%s", err.msg);
	a.session = sid;
	/* A complete analysis with one finding. */
	assert_int_equal(store_begin(st, &err), 0);
	assert_int_equal(store_add_analysis(st, &a, &first, &err), 0);
	assert_int_equal(store_add_finding(st, first, sid, "LIFE-001", "error", 1, NULL, "one", &err), 0);
	assert_int_equal(store_analysis_done(st, first, &err), 0);
	assert_int_equal(store_commit(st, &err), 0);
	/* A second one, under way: its first slice is not committed before 50 ms ... */
	assert_int_equal(store_begin(st, &err), 0);
	assert_int_equal(store_add_analysis(st, &a, &second, &err), 0);
	assert_int_equal(store_add_finding(st, second, sid, "LIFE-002", "error", 2, NULL, "two", &err), 0);
	assert_int_equal(store_slice(st, &err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM analysis"), 1);
	/* ... and is after: others see it, yet the view keeps the complete one. */
	usleep(60 * 1000);
	assert_int_equal(store_slice(st, &err), 0);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM analysis"), 2);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM finding"), 2);
	assert_rows(p, "SELECT text FROM latest_finding", "one\n");
	/* A writer waiting for the file gets it between slices: it waits while the
	 * slice is open, and is in before the next one begins. */
	pthread_t th;
	struct waiter wt = {p, 0, 0};
	assert_int_equal(pthread_create(&th, NULL, wait_and_write, &wt), 0);
	usleep(60 * 1000);
	assert_int_equal(store_add_finding(st, second, sid, "LIFE-002", "error", 4, NULL, "two b", &err), 0);
	assert_int_equal(store_slice(st, &err), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(wt.rc, 0);
	assert_true(wt.waited_ms >= 40);
	assert_int_equal(sql_int(p, "SELECT count(*) FROM session WHERE command = 'waiter'"), 1);
	assert_int_equal(store_add_finding(st, second, sid, "LIFE-003", "error", 3, NULL, "three", &err), 0);
	assert_int_equal(store_analysis_done(st, second, &err), 0);
	assert_int_equal(store_commit(st, &err), 0);
	assert_rows(p, "SELECT text FROM latest_finding ORDER BY seq", "two\nthree\ntwo b\n");
	/* An analysis that streams its findings learns its revision and counts at the end. */
	struct store_analysis end = {0, 0, "2025-11-25", "negotiated", 3, 2, 1, NULL};
	int64_t third = 0;
	assert_int_equal(store_begin(st, &err), 0);
	assert_int_equal(store_add_analysis(st, &a, &third, &err), 0);
	assert_int_equal(store_analysis_finish(st, third, &end, &err), 0);
	assert_int_equal(store_commit(st, &err), 0);
	assert_rows(p,
		    "SELECT spec, spec_source, errors, warnings, infos, complete, started_wall FROM analysis"
		    " WHERE id = (SELECT max(id) FROM analysis)",
		    "2025-11-25|negotiated|3|2|1|1|2\n");
	store_close(st);
	free(p);
	unit_rmdir(dir);
}

static void test_migrate_v1(void **state)
{
	char *dir = tmpdir(), *p, *sqltext;
	size_t n;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct store_replay_run run = {1, 1700000000000001LL, "server", NULL, "server", 1};
	struct store_replay_result res = {.seq = 3,
					  .method = "tools/call",
					  .name = "echo",
					  .status = "miss",
					  .noise_json = "[\"result.x\"]"};
	struct store_replay_totals tot = {5, 1, 2, 3, 4, "{\"k\":1}"};
	int64_t id = 0;

	(void)state;
	sqltext = read_all("tests/fixtures/schema-v1.sql", &n);
	p = path_in(dir, "v1.db");
	sql_exec(p, sqltext);
	sql_exec(p, "INSERT INTO session (id, started_wall, mcptap_version) VALUES (1, 1, '0.1.0');"
		    "INSERT INTO replay_run (session, started_wall, mcptap_version, command)"
		    " VALUES (1, 2, '0.1.0', 'srv');"
		    "INSERT INTO analysis (id, session, started_wall, mcptap_version, spec, spec_source)"
		    " VALUES (1, 1, 3, '0.1.0', '2025-06-18', 'default');"
		    "INSERT INTO finding (analysis, session, rule, severity, text)"
		    " VALUES (1, 1, 'LIFE-001', 'error', 'old');");
	free(sqltext);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), 1);

	/* A reader that cannot write reads version 1 as it is. */
	assert_int_equal(chmod(p, 0400), 0);
	if (geteuid() != 0) {
		if (store_open(p, STORE_READ, &st, &err))
			fail_msg("read-only v1: %s", err.msg);
		store_close(st);
		st = NULL;
		assert_int_equal(sql_int(p, "PRAGMA user_version"), 1);
	}
	assert_int_equal(chmod(p, 0600), 0);

	if (store_open(p, STORE_UPDATE, &st, &err))
		fail_msg("migrate v1: %s", err.msg);
	assert_int_equal(sql_int(p, "PRAGMA user_version"), 4);
	/* Version 3: an analysis of before is complete, and the view still shows it. */
	assert_rows(p, "SELECT id, complete FROM analysis", "1|1\n");
	assert_rows(p, "SELECT rule, text FROM latest_finding", "LIFE-001|old\n");
	assert_rows(p, "SELECT session, command, mode, runs, noise, summary FROM replay_run",
		    "1|srv|client|1|0|~\n");
	assert_int_equal(store_add_replay_run(st, &run, &id, &err), 0);
	assert_int_equal(id, 2);
	assert_int_equal(store_add_replay_result(st, id, &res, &err), 0);
	assert_int_equal(store_finish_replay_run(st, id, &tot, &err), 0);
	store_close(st);
	assert_rows(p, "SELECT mode, passed, differed, missing, noise, summary FROM replay_run WHERE id = 2",
		    "server|1|2|3|4|{\"k\":1}\n");
	assert_rows(p, "SELECT seq, method, name, status, noise FROM replay_result",
		    "3|tools/call|echo|miss|[\"result.x\"]\n");
	/* The migrated file has the shape of a new one. */
	assert_rows(p, "SELECT group_concat(name, ',') FROM pragma_table_info('replay_result')",
		    "run,seq,method,status,sent,recorded,live,diff,name,noise\n");
	assert_rows(p,
		    "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('session')"
		    " ORDER BY cid DESC LIMIT 8)",
		    "client_addr,upstream,bytes_s2c,bytes_c2s,stderr_lines,msgs_s2c,msgs_c2s,tap_id\n");
	/* Its views are a new file's, word for word. */
	{
		char *fresh = path_in(dir, "fresh.db");
		struct store *f = NULL;
		assert_int_equal(store_open(fresh, STORE_WRITE, &f, &err), 0);
		store_close(f);
		char *want = sql_rows(
			fresh, "SELECT group_concat(name || ':' || sql, ';;') FROM"
			       " (SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY name)");
		assert_rows(p,
			    "SELECT group_concat(name || ':' || sql, ';;') FROM"
			    " (SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY name)",
			    want);
		free(want);
		free(fresh);
	}
	/* The session of version 1 has no tap: it cannot be told aborted. */
	{
		struct store *rd = NULL;
		struct store_session_row row;
		if (store_open(p, STORE_READ, &rd, &err) || store_session_get(rd, 1, &row, &err))
			fail_msg("read the migrated session: %s", err.msg);
		assert_int_equal(row.tap_pid, 0);
		assert_null(row.tap_id);
		assert_string_equal(store_session_state(&row), "running");
		store_session_row_release(&row);
		store_close(rd);
	}
	free(p);
	unit_rmdir(dir);
}

/* A process's identity: ours is stable, a dead one has none. */
static void test_process_identity(void **state)
{
	char a[128], b[128];
	pid_t child;
	int status;

	(void)state;
	assert_int_equal(mt_process_identity((int64_t)getpid(), a, sizeof(a)), 0);
	assert_int_equal(mt_process_identity((int64_t)getpid(), b, sizeof(b)), 0);
	assert_string_equal(a, b);
	assert_non_null(strchr(a, ':'));
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(mt_process_identity((int64_t)child, b, sizeof(b)), -1);
	assert_int_equal(mt_process_identity(0, b, sizeof(b)), -1);
}

static void test_refuse_newer(void **state)
{
	char *dir = tmpdir(), *p;

	(void)state;
	p = path_in(dir, "newer.db");
	sql_exec(p, "PRAGMA application_id = 1296257108; PRAGMA user_version = 99;"
		    "CREATE TABLE session (id INTEGER PRIMARY KEY, future TEXT);");
	free(p);
	check_untouched(dir, "newer.db", "newer");
	check_untouched(dir, "newer.db", "upgrade");
	unit_rmdir(dir);

	/* When the file says which mcptap wrote it, the message names it. */
	dir = tmpdir();
	p = path_in(dir, "named.db");
	sql_exec(p, "PRAGMA application_id = 1296257108; PRAGMA user_version = 5;"
		    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
		    "INSERT INTO meta VALUES ('migrated_by', 'mcptap 7.1.0');");
	free(p);
	check_untouched(dir, "named.db", "mcptap 7.1.0");
	check_untouched(dir, "named.db", "upgrade");
	unit_rmdir(dir);

	/* Our id with no schema version at all is damaged, not ours to fix. */
	dir = tmpdir();
	p = path_in(dir, "zero.db");
	sql_exec(p, "PRAGMA application_id = 1296257108; CREATE TABLE x (y);");
	free(p);
	check_untouched(dir, "zero.db", NULL);
	unit_rmdir(dir);
}

static void test_refuse_corrupt(void **state)
{
	char *dir = tmpdir(), *p;
	struct store *st;
	size_t n;
	char *bytes;

	(void)state;
	p = path_in(dir, "corrupt.db");
	st = open_new(p);
	int64_t s = new_session(st, "x");
	for (int i = 1; i <= 50; i++)
		add_msg(st, s, i, i, "c2s", "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n");
	assert_int_equal(store_close(st), 0);
	/* Closing the last connection checkpoints and removes the WAL. */
	bytes = read_all(p, &n);
	assert_true(n >= 4096);
	/* Keep the 100-byte header (so it still looks like ours), wreck the schema page. */
	for (size_t i = 100; i < n && i < 4096; i++)
		bytes[i] = (char)0xA5;
	write_file(p, bytes, n);
	free(p);
	check_untouched(dir, "corrupt.db", NULL);
	unit_rmdir(dir);

	/* A capture cut short inside its first page. */
	dir = tmpdir();
	p = path_in(dir, "short.db");
	write_file(p, bytes, 1000);
	free(p);
	free(bytes);
	check_untouched(dir, "short.db", NULL);
	unit_rmdir(dir);
}

/* ---- reopening and sessions ---- */

static void test_reopen(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "re.db");
	struct store_session_row *rows = NULL, row;
	struct mt_err err = {"", 0};
	struct store *st;
	size_t n = 0;
	int64_t id = 0;

	(void)state;
	st = open_new(p);
	assert_int_equal(new_session(st, "one"), 1);
	assert_int_equal(new_session(st, "two"), 2);
	assert_int_equal(store_close(st), 0);

	st = open_new(p);
	assert_int_equal(new_session(st, "three"), 3);
	assert_int_equal(store_sessions(st, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].command, "one");
	assert_string_equal(rows[1].command, "two");
	assert_string_equal(rows[2].command, "three");
	store_sessions_free(rows, n);
	assert_int_equal(store_close(st), 0);

	/* STORE_READ reads the same, and the newest is the last one. */
	assert_int_equal(store_open(p, STORE_READ, &st, &err), 0);
	assert_int_equal(store_last_session(st, &id, &err), 0);
	assert_int_equal(id, 3);
	assert_int_equal(store_session_get(st, 2, &row, &err), 0);
	assert_int_equal(row.id, 2);
	assert_string_equal(row.command, "two");
	assert_string_equal(row.transport, "stdio");
	store_session_row_release(&row);
	assert_int_equal(store_close(st), 0);
	assert_rows(p, "SELECT count(*) FROM session", "3\n");
	free(p);
	unit_rmdir(dir);
}

static void test_no_sessions(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "empty.db");
	struct store_session_row *rows = (struct store_session_row *)&rows, row;
	struct mt_err err = {"", 0};
	struct store *st = open_new(p);
	size_t n = 99;
	int64_t id = 77;

	(void)state;
	assert_int_equal(store_last_session(st, &id, &err), -1);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(id, 77);
	err.msg[0] = '\0';
	assert_int_equal(store_session_get(st, 5, &row, &err), -1);
	assert_non_null(strstr(err.msg, "no session 5"));
	assert_int_equal(store_sessions(st, &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	store_sessions_free(rows, n);
	assert_int_equal(store_close(st), 0);
	/* Also in a file opened for reading. */
	assert_int_equal(store_open(p, STORE_READ, &st, &err), 0);
	assert_int_equal(store_last_session(st, &id, &err), -1);
	assert_int_equal(store_close(st), 0);
	free(p);
	unit_rmdir(dir);
}

static void test_session_fields(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "fields.db");
	struct store *st = open_new(p);
	struct store_session_row row;
	struct mt_err err = {"", 0};
	int64_t s, s2;

	(void)state;
	s = new_session(st, "srv 'a b'");
	s2 = new_session(st, "other");
	struct store_session_init cli = {"2025-03-26", "claude", "1.0", "{\"roots\":{}}"};
	struct store_session_init srv = {"2025-06-18", "everything", "2.1", "{\"tools\":{}}"};
	assert_int_equal(store_session_set_client(st, s, &cli, &err), 0);
	/* The client's version stands until the server answers. */
	assert_int_equal(store_session_get(st, s, &row, &err), 0);
	assert_string_equal(row.protocol_version, "2025-03-26");
	assert_null(row.server_name);
	assert_int_equal(row.ended_wall, 0);
	assert_int_equal(row.duration_ns, -1);
	assert_int_equal(row.exit_status, -1);
	assert_int_equal(row.exit_signal, 0);
	store_session_row_release(&row);
	assert_int_equal(store_session_set_server(st, s, &srv, &err), 0);
	/* NULL fields leave what is there. */
	struct store_session_init none = {NULL, NULL, NULL, NULL};
	assert_int_equal(store_session_set_client(st, s, &none, &err), 0);
	assert_int_equal(store_session_set_server(st, s, &none, &err), 0);

	assert_int_equal(store_begin(st, &err), 0);
	add_msg(st, s, 1, 10, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n");
	add_msg(st, s, 2, 20, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	add_msg(st, s, 3, 30, "c2s", "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n");
	assert_int_equal(store_add_stderr(st, s, 4, 40, 0, "log\n", 4, 0, &err), 0);
	assert_int_equal(store_add_gap(st, s, 5, "s2c", 2, 1000, "too big", &err), 0);
	add_msg(st, s2, 1, 10, "c2s", "x\n");
	assert_int_equal(store_commit(st, &err), 0);

	struct store_session_end e = {1700000009000000LL, 9000000000LL, 0, 3, 0, NULL};
	assert_int_equal(store_session_finish(st, s, &e, &err), 0);
	assert_int_equal(store_session_get(st, s, &row, &err), 0);
	assert_string_equal(row.transport, "stdio");
	assert_int_equal(row.started_wall, 1700000000000000LL);
	assert_int_equal(row.ended_wall, 1700000009000000LL);
	assert_int_equal(row.duration_ns, 9000000000LL);
	assert_string_equal(row.command, "srv 'a b'");
	assert_int_equal(row.pid, 4242); /* kept: the end gave none */
	assert_int_equal(row.exit_status, 3);
	assert_int_equal(row.exit_signal, 0);
	assert_null(row.error);
	assert_string_equal(row.protocol_version, "2025-06-18");
	assert_string_equal(row.client_name, "claude");
	assert_string_equal(row.client_version, "1.0");
	assert_string_equal(row.server_name, "everything");
	assert_string_equal(row.server_version, "2.1");
	assert_string_equal(row.client_caps, "{\"roots\":{}}");
	assert_string_equal(row.server_caps, "{\"tools\":{}}");
	assert_int_equal(row.msgs_c2s, 2);
	assert_int_equal(row.msgs_s2c, 1);
	assert_int_equal(row.stderr_lines, 1);
	assert_int_equal(row.bytes_c2s, 47 + 32);
	assert_int_equal(row.bytes_s2c, 37);
	assert_int_equal(row.gap_messages, 2);
	assert_int_equal(row.gap_bytes, 1000);
	store_session_row_release(&row);
	store_session_row_release(NULL);

	/* Killed by a signal, with a reason. */
	struct store_session_end k = {1700000010000000LL, 1, 99, -1, 9, "killed"};
	assert_int_equal(store_session_finish(st, s2, &k, &err), 0);
	assert_int_equal(store_session_get(st, s2, &row, &err), 0);
	assert_int_equal(row.exit_status, -1);
	assert_int_equal(row.exit_signal, 9);
	assert_int_equal(row.pid, 99);
	assert_string_equal(row.error, "killed");
	assert_int_equal(row.msgs_c2s, 1);
	assert_int_equal(row.gap_messages, 0);
	store_session_row_release(&row);
	assert_int_equal(store_close(st), 0);
	free(p);
	unit_rmdir(dir);
}

static void test_transactions(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "txn.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	struct mt_class c;
	struct store_msg m;
	int64_t s = new_session(st, NULL);

	(void)state;
	assert_int_equal(store_set_sync_full(st, 1, &err), 0);
	assert_int_equal(store_begin(st, &err), 0);
	add_msg(st, s, 1, 1, "c2s", "rolled back\n");
	store_rollback(st);
	store_rollback(st); /* nothing to roll back: harmless */
	assert_rows(p, "SELECT count(*) FROM message", "0\n");
	assert_int_equal(store_begin(st, &err), 0);
	add_msg(st, s, 1, 1, "c2s", "kept\n");
	assert_int_equal(store_commit(st, &err), 0);
	assert_rows(p, "SELECT count(*) FROM message", "1\n");
	assert_int_equal(store_set_sync_full(st, 0, &err), 0);

	/* A second row with the same seq is refused, with a reason. */
	mt_classify("dup\n", 4, &c);
	m = (struct store_msg){.session = s,
			       .seq = 1,
			       .t_ns = 2,
			       .wall = 3,
			       .dir = "c2s",
			       .channel = "stdio",
			       .cls = &c,
			       .raw = "dup\n",
			       .size = 4};
	assert_int_equal(store_add_message(st, &m, &err), -1);
	assert_true(err.msg[0] != '\0');
	err.msg[0] = '\0';
	assert_int_equal(store_add_stderr(st, s, 1, 0, 0, "x", 1, 0, &err), 0); /* other table */
	assert_int_equal(store_add_stderr(st, s, 1, 0, 0, "x", 1, 0, &err), -1);
	assert_true(err.msg[0] != '\0');
	/* COMMIT without BEGIN fails visibly. */
	assert_int_equal(store_commit(st, &err), -1);
	store_checkpoint(st);
	assert_int_equal(store_close(st), 0);
	free(p);
	unit_rmdir(dir);
}

/*
 * A statement that cannot run says which write failed and SQLite's reason:
 * one it cannot prepare (its table gone), one a constraint stops, one a
 * lock held elsewhere stops (busy set), and a read of what is not there.
 */
static void test_statement_errors(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "errors.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	struct store_analysis a = {.spec = "2025-06-18", .spec_source = "built-in"};
	struct store_replay_run run = {.command = "x"};
	struct store_replay_result res = {.seq = 1, .status = NULL};
	struct store_session_row row;
	sqlite3 *other = NULL;
	int64_t s = new_session(st, NULL), id = 0, rid = 0;

	(void)state;
	a.session = s;
	run.session = s;
	assert_int_equal(store_add_replay_run(st, &run, &rid, &err), 0);
	assert_true(rid > 0);

	/* A constraint: the result's status may not be NULL. */
	assert_int_equal(store_add_replay_result(st, rid, &res, &err), -1);
	assert_string_equal(err.msg, "cannot store a replay result: NOT NULL constraint failed: "
				     "replay_result.status");
	assert_int_equal(err.busy, 0);

	/* A lock another connection holds: busy, and the reason. */
	assert_int_equal(sqlite3_open(p, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	store_set_lock_wait(st, 20, NULL, NULL);
	assert_int_equal(store_add_analysis(st, &a, &id, &err), -1);
	assert_string_equal(err.msg, "cannot store the analysis: database is locked");
	assert_int_equal(err.busy, 1);
	assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);

	/* A table gone (dropped behind the store's back): it cannot be prepared. */
	assert_int_equal(sqlite3_exec(other, "DROP TABLE replay_result", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(other), SQLITE_OK);
	res.status = "pass";
	err.busy = 1;
	assert_int_equal(store_add_replay_result(st, rid, &res, &err), -1);
	assert_string_equal(err.msg, "cannot store a replay result: no such table: replay_result");
	assert_int_equal(err.busy, 0);

	/* What is not there. */
	assert_int_equal(store_session_get(st, s + 1, &row, &err), -1);
	assert_string_equal(err.msg, "no session 2");
	assert_int_equal(store_session_get(st, s, &row, &err), 0);
	assert_int_equal(row.id, s);
	store_session_row_release(&row);
	assert_int_equal(store_close(st), 0);
	free(p);
	unit_rmdir(dir);
}

/*
 * What the writers bind, column by column: a gap of no known place or
 * direction, a finding on the whole session, a replay result without
 * bytes, each with NULL where nothing was given.
 */
static void test_rows_as_bound(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "rows.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	struct store_analysis a = {.started_wall = 7,
				   .spec = "2025-06-18",
				   .spec_source = "file",
				   .errors = 1,
				   .warnings = 2,
				   .infos = 3,
				   .rules = NULL};
	struct store_replay_run run = {.started_wall = 8, .ignore_json = "[\"x\"]", .runs = 0};
	struct store_replay_result r1 = {
		.seq = 4, .status = "pass", .sent = "ab", .sent_len = 2, .recorded = "", .recorded_len = 0};
	int64_t s = new_session(st, NULL), an = 0, rid = 0;

	(void)state;
	a.session = s;
	run.session = s;
	assert_int_equal(store_add_gap(st, s, -1, NULL, 1, 10, "unknown", &err), 0);
	assert_int_equal(store_add_gap(st, s, 6, "c2s", 2, 20, "known", &err), 0);
	assert_rows(p,
		    "SELECT session, quote(seq), quote(dir), messages, bytes, reason FROM gap"
		    " ORDER BY rowid",
		    "1|NULL|NULL|1|10|unknown\n1|6|'c2s'|2|20|known\n");
	assert_int_equal(store_add_analysis(st, &a, &an, &err), 0);
	assert_int_equal(store_add_finding(st, an, s, "LIFE-001", "error", 0, NULL, "whole", &err), 0);
	assert_int_equal(store_add_finding(st, an, s, "LIFE-002", "warning", 3, "[1,3]", "one", &err), 0);
	assert_rows(p,
		    "SELECT analysis, session, rule, severity, quote(seq), quote(related), text"
		    " FROM finding ORDER BY rowid",
		    "1|1|LIFE-001|error|NULL|NULL|whole\n1|1|LIFE-002|warning|3|'[1,3]'|one\n");
	assert_rows(p,
		    "SELECT session, started_wall, spec, spec_source, errors, warnings, infos,"
		    " complete, quote(rules) FROM analysis",
		    "1|7|2025-06-18|file|1|2|3|0|NULL\n");
	assert_int_equal(store_add_replay_run(st, &run, &rid, &err), 0);
	assert_int_equal(store_add_replay_result(st, rid, &r1, &err), 0);
	assert_rows(p, "SELECT session, started_wall, command, ignore, mode, runs FROM replay_run",
		    "1|8||[\"x\"]|client|1\n");
	assert_rows(p,
		    "SELECT run, seq, quote(method), status, quote(sent), quote(recorded),"
		    " quote(live), quote(diff), quote(name), quote(noise) FROM replay_result",
		    "1|4|NULL|pass|X'6162'|X''|NULL|NULL|NULL|NULL\n");
	assert_int_equal(store_close(st), 0);
	free(p);
	unit_rmdir(dir);
}

/* ---- what the message columns hold ---- */

static void test_message_columns(void **state)
{
	static const char big_id[] =
		"{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234,\"method\":\"m\"}\n";
	static const char nul_raw[] = "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"m\"}\r\n";
	static const char bad_raw[] = "\xff\x00not json\r\n";
	char *dir = tmpdir(), *p = path_in(dir, "ids.db");
	struct store *st = open_new(p);
	int64_t s = new_session(st, NULL);

	(void)state;
	add_msg(st, s, 1, 1, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\\u0069ng\"}\n");
	add_msg(st, s, 2, 2, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"ping\"}\n");
	add_msg(st, s, 3, 3, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n");
	add_msg(st, s, 4, 4, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700}}\n");
	add_msg(st, s, 5, 5, "c2s", big_id);
	add_msg(st, s, 6, 6, "c2s",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
		"\"params\":{\"progressToken\":\"t\\u00e9\",\"progress\":1}}\n");
	add_msg(st, s, 7, 7, "c2s",
		"{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"tools/call\","
		"\"params\":{\"_meta\":{\"progressToken\":42}}}\n");
	add_msg(st, s, 8, 8, "s2c", "[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},1,2]\n");
	add_msg_n(st, s, 9, 9, "c2s", bad_raw, sizeof(bad_raw) - 1, 0);
	add_msg_n(st, s, 10, 10, "c2s", nul_raw, sizeof(nul_raw) - 1, 0);
	add_msg_n(st, s, 11, 11, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":9,\"res", 28, 1);
	add_msg(st, s, 12, 12, "c2s",
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\","
		"\"params\":{\"_meta\":{\"progressToken\":1e2}}}\n");
	assert_int_equal(store_close(st), 0);

	assert_rows(p,
		    "SELECT seq, kind, typeof(id), id, idtype, method, error_code,"
		    " typeof(progress_token), progress_token, has_meta, batch_size, incomplete"
		    " FROM message ORDER BY seq",
		    "1|request|integer|1|number|ping|~|null|~|0|~|0\n"
		    "2|request|text|1|string|ping|~|null|~|0|~|0\n"
		    "3|request|real|1.5|number|ping|~|null|~|0|~|0\n"
		    "4|error|null|~|null|~|-32700|null|~|0|~|0\n"
		    "5|request|text|123456789012345678901234|number|m|~|null|~|0|~|0\n"
		    "6|notification|null|~|~|notifications/progress|~|text|t\xc3\xa9|0|~|0\n"
		    "7|request|integer|-7|number|tools/call|~|integer|42|1|~|0\n"
		    "8|batch|null|~|~|~|~|null|~|0|3|0\n"
		    "9|invalid|null|~|~|~|~|null|~|0|~|0\n"
		    "10|request|text|a|string|m|~|null|~|0|~|0\n"
		    "11|invalid|null|~|~|~|~|null|~|0|~|1\n"
		    "12|request|integer|9|number|x|~|real|100.0|1|~|0\n");
	/* 1 and "1" stay apart in SQL. */
	assert_rows(p, "SELECT group_concat(seq) FROM message WHERE id = 1", "1\n");
	assert_rows(p, "SELECT group_concat(seq) FROM message WHERE id = '1'", "2\n");
	/* The raw bytes are exact (NUL, CR, invalid UTF-8), size counts them. */
	assert_rows(p, "SELECT size, length(raw), hex(raw) FROM message WHERE seq = 9",
		    "12|12|FF006E6F74206A736F6E0D0A\n");
	assert_int_equal(sql_int(p, "SELECT length(CAST(id AS BLOB)) FROM message WHERE seq = 10"),
			 3); /* "a\0b" */
	assert_int_equal(sql_int(p, "SELECT size FROM message WHERE seq = 10"), (int64_t)sizeof(nul_raw) - 1);
	assert_rows(p, "SELECT typeof(raw) FROM message WHERE seq = 1", "blob\n");
	free(p);
	unit_rmdir(dir);
}

/* ---- views ---- */

/*
 * The exchange view joins each request with the answer that names it in
 * request_seq (the writer pairs them as it reads), with the latency between
 * them; unanswered requests have NULLs. method_stats sums it per method.
 */
static void test_exchange_view(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "ex.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	int64_t s = new_session(st, NULL), s2;

	(void)state;
	s2 = new_session(st, NULL);
	assert_int_equal(store_begin(st, &err), 0);
	add_msg(st, s, 1, 1000, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n");
	add_msg(st, s, 2, 2000, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"tools/call\"}\n");
	add_msg(st, s, 3, 3000, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}\n");
	add_answer(st, s, 5, 5000, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", 1);
	add_answer(st, s, 6, 9000, "s2c",
		   "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"error\":{\"code\":-32601,\"message\":\"no\"}}\n", 2);
	/* An answer that pairs with nothing is no exchange. */
	add_msg(st, s, 7, 10000, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	/* A server-initiated request, answered by the client. */
	add_msg(st, s, 8, 11000, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}\n");
	add_answer(st, s, 9, 12500, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"roots\":[]}}\n", 8);
	/* Another session's seq 3 is not this session's. */
	add_msg(st, s2, 1, 100, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n");
	add_answer(st, s2, 2, 200, "s2c", "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n", 3);
	assert_int_equal(store_commit(st, &err), 0);
	assert_int_equal(store_close(st), 0);

	assert_rows(p,
		    "SELECT session, request_seq, dir, method, id, response_seq, outcome, error_code,"
		    " latency_ns FROM exchange ORDER BY session, request_seq",
		    "1|1|c2s|tools/call|1|5|response|~|4000\n"
		    "1|2|c2s|tools/call|1|6|error|-32601|7000\n"
		    "1|3|c2s|tools/call|2|~|~|~|~\n"
		    "1|8|s2c|roots/list|1|9|response|~|1500\n"
		    "2|1|c2s|ping|5|~|~|~|~\n");
	assert_rows(p, "SELECT seq, typeof(request_seq) FROM message WHERE session = 1 ORDER BY seq",
		    "1|null\n2|null\n3|null\n5|integer\n6|integer\n7|null\n8|null\n9|integer\n");
	assert_rows(p,
		    "SELECT session, dir, method, requests, errors, unanswered, mean_ms, max_ms"
		    " FROM method_stats WHERE session = 1 ORDER BY dir, method",
		    "1|c2s|tools/call|3|1|1|0.0055|0.007\n"
		    "1|s2c|roots/list|1|0|0|0.0015|0.0015\n");
	free(p);
	unit_rmdir(dir);
}

/* A method whose requests were never answered has 0 errors, not NULL. */
static void test_method_stats_unanswered(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "ms.db");
	struct store *st = open_new(p);
	int64_t s = new_session(st, NULL);

	(void)state;
	add_msg(st, s, 1, 100, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n");
	add_msg(st, s, 2, 200, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n");
	assert_int_equal(store_close(st), 0);
	char *got = sql_rows(p, "SELECT session, dir, method, requests, errors, unanswered,"
				" mean_ms, max_ms FROM method_stats");
	free(p);
	unit_rmdir(dir);
	/* Compared after the clean-up, so that a failure leaks nothing but this. */
	int same = strcmp(got, "1|c2s|ping|2|0|2|~|~\n") == 0;
	if (!same)
		print_error("method_stats: got %s", got);
	free(got);
	assert_true(same);
}

/* ---- reading items back ---- */

struct seen {
	int n;
	int stop_at;
	char log[2048];
};

static int each(const struct store_item *it, void *ctx)
{
	struct seen *sn = ctx;
	size_t len = strlen(sn->log);

	snprintf(sn->log + len, sizeof(sn->log) - len, "%d:%lld:%s:%s:%s:%lld:%d:%zu;", (int)it->type,
		 (long long)it->seq, it->kind ? it->kind : "~", it->dir ? it->dir : "~",
		 it->method ? it->method : "~", (long long)it->size, it->incomplete, it->raw_len);
	sn->n++;
	return sn->n == sn->stop_at ? 7 : 0;
}

static int check_item(const struct store_item *it, void *ctx)
{
	int *n = ctx;

	(*n)++;
	if (it->seq != 4)
		assert_int_equal(it->request_seq, 0);
	switch (it->seq) {
	case 1:
		assert_int_equal(it->type, STORE_ITEM_MESSAGE);
		assert_int_equal(it->t_ns, 100);
		assert_string_equal(it->channel, "stdio");
		assert_int_equal(it->id_sqltype, SQLITE_INTEGER);
		assert_int_equal(it->id_int, 3);
		assert_string_equal(it->idtype, "number");
		assert_false(it->has_error_code);
		assert_int_equal(it->raw_len, 41);
		assert_memory_equal(it->raw, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n", 41);
		break;
	case 2:
		assert_int_equal(it->type, STORE_ITEM_STDERR);
		assert_string_equal(it->dir, "stderr");
		assert_string_equal(it->kind, "stderr");
		assert_int_equal(it->id_sqltype, SQLITE_NULL);
		assert_null(it->idtype);
		assert_int_equal(it->raw_len, 8);
		assert_memory_equal(it->raw, "warn: x\n", 8);
		break;
	case 3:
		assert_int_equal(it->type, STORE_ITEM_GAP);
		assert_string_equal(it->kind, "gap");
		assert_string_equal(it->dir, "s2c");
		assert_int_equal(it->gap_messages, 4);
		assert_int_equal(it->gap_bytes, 4096);
		assert_string_equal(it->gap_reason, "disk full");
		assert_null(it->raw);
		break;
	case 4:
		assert_int_equal(it->type, STORE_ITEM_MESSAGE);
		assert_string_equal(it->kind, "error");
		assert_int_equal(it->id_sqltype, SQLITE_TEXT);
		assert_string_equal(it->id_text, "3");
		assert_string_equal(it->idtype, "string");
		assert_true(it->has_error_code);
		assert_int_equal(it->error_code, -32000);
		/* An answer carries its request's seq, method and the latency. */
		assert_int_equal(it->request_seq, 1);
		assert_int_equal(it->latency_ns, 300);
		assert_string_equal(it->method, "ping");
		break;
	case 5:
		assert_int_equal(it->type, STORE_ITEM_STDERR);
		assert_true(it->incomplete);
		break;
	case 6:
		assert_int_equal(it->type, STORE_ITEM_MESSAGE);
		assert_int_equal(it->id_sqltype, SQLITE_FLOAT);
		assert_true(it->id_real == 2.5);
		break;
	case -1:
		assert_int_equal(it->type, STORE_ITEM_GAP);
		assert_null(it->dir);
		assert_string_equal(it->gap_reason, "unknown place");
		break;
	default: fail_msg("unexpected seq %lld", (long long)it->seq);
	}
	return 0;
}

static void test_each_item(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "items.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	struct seen sn;
	int64_t s = new_session(st, NULL), other = new_session(st, NULL);
	int n = 0;

	(void)state;
	/* Written out of order and interleaved with another session's rows. */
	assert_int_equal(store_begin(st, &err), 0);
	assert_int_equal(store_add_gap(st, s, -1, NULL, 1, 10, "unknown place", &err), 0);
	assert_int_equal(store_add_stderr(st, s, 5, 500, 0, "tail", 4, 1, &err), 0);
	add_answer(st, s, 4, 400, "s2c",
		   "{\"jsonrpc\":\"2.0\",\"id\":\"3\",\"error\":{\"code\":-32000,\"message\":\"m\"}}\n", 1);
	add_msg(st, other, 2, 1, "c2s", "{\"jsonrpc\":\"2.0\",\"method\":\"elsewhere\"}\n");
	assert_int_equal(store_add_gap(st, s, 3, "s2c", 4, 4096, "disk full", &err), 0);
	assert_int_equal(store_add_stderr(st, s, 2, 200, 0, "warn: x\n", 8, 0, &err), 0);
	add_msg(st, s, 1, 100, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n");
	add_msg(st, s, 6, 600, "c2s", "{\"jsonrpc\":\"2.0\",\"id\":2.5,\"method\":\"ping\"}\n");
	assert_int_equal(store_add_stderr(st, other, 1, 1, 0, "o\n", 2, 0, &err), 0);
	assert_int_equal(store_commit(st, &err), 0);

	memset(&sn, 0, sizeof(sn));
	assert_int_equal(store_each_item(st, s, each, &sn, &err), 0);
	assert_string_equal(sn.log, "0:1:request:c2s:ping:41:0:41;"
				    "1:2:stderr:stderr:~:8:0:8;"
				    "2:3:gap:s2c:~:4096:0:0;"
				    "0:4:error:s2c:ping:65:0:65;"
				    "1:5:stderr:stderr:~:4:1:4;"
				    "0:6:request:c2s:ping:43:0:43;"
				    "2:-1:gap:~:~:10:0:0;");
	assert_int_equal(store_each_item(st, s, check_item, &n, &err), 0);
	assert_int_equal(n, 7);

	/* The callback stops the walk and its value comes back. */
	memset(&sn, 0, sizeof(sn));
	sn.stop_at = 2;
	assert_int_equal(store_each_item(st, s, each, &sn, &err), 7);
	assert_int_equal(sn.n, 2);

	/* The other session sees only its own rows; a missing one has none. */
	memset(&sn, 0, sizeof(sn));
	assert_int_equal(store_each_item(st, other, each, &sn, &err), 0);
	assert_string_equal(sn.log, "1:1:stderr:stderr:~:2:0:2;0:2:notification:c2s:elsewhere:39:0:39;");
	memset(&sn, 0, sizeof(sn));
	assert_int_equal(store_each_item(st, 999, each, &sn, &err), 0);
	assert_int_equal(sn.n, 0);
	assert_int_equal(store_close(st), 0);
	free(p);
	unit_rmdir(dir);
}

/* ---- version 4: HTTP exchanges ---- */

/*
 * The shape of a file's schema, as text: every table's columns (name, type,
 * NOT NULL, default, key), its indexes and whether it has a rowid, and the
 * text of every index and view. Two files with the same text are the same
 * to every reader and writer.
 */
static char *schema_shape(const char *path)
{
	char *a = sql_rows(path, "SELECT m.name, p.cid, p.name, p.type, p.\"notnull\", p.dflt_value,"
				 " p.pk, p.hidden FROM sqlite_master m, pragma_table_xinfo(m.name) p"
				 " WHERE m.type = 'table' ORDER BY m.name, p.cid");
	char *b = sql_rows(path, "SELECT m.name, l.name, l.\"unique\", l.origin, l.partial"
				 " FROM sqlite_master m, pragma_index_list(m.name) l"
				 " WHERE m.type = 'table' ORDER BY 1, 2");
	char *c = sql_rows(path, "SELECT l.name, l.type, l.ncol, l.wr, l.strict FROM pragma_table_list l"
				 " WHERE l.schema = 'main' AND l.name NOT LIKE 'sqlite_%' ORDER BY 1");
	char *d = sql_rows(path, "SELECT type, name, tbl_name, sql FROM sqlite_master"
				 " WHERE type IN ('index', 'view') ORDER BY name");
	char *all = mt_asprintf("%s--\n%s--\n%s--\n%s", a, b, c, d);

	free(a);
	free(b);
	free(c);
	free(d);
	return all;
}

/* A fresh capture file's schema shape. */
static char *fresh_shape(const char *dir)
{
	char *fresh = path_in(dir, "fresh-shape.db"), *shape;
	struct store *f = open_new(fresh);

	store_close(f);
	shape = schema_shape(fresh);
	free(fresh);
	return shape;
}

static int count_item(const struct store_item *it, void *ctx)
{
	(void)it;
	(*(int *)ctx)++;
	return 0;
}

static int count_exchange(const struct store_exchange_row *x, void *ctx)
{
	(void)x;
	(*(int *)ctx)++;
	return 0;
}

/*
 * A file of version 1, 2 or 3 (the schema each released, kept in
 * tests/fixtures) with a session, messages, stderr and an analysis: read as
 * it is by a reader that may not write (no exchanges), then migrated to
 * version 4 by a writer, keeping its rows, into a file whose schema is a new
 * file's to the last column, index and view; an HTTP session is then stored
 * into it.
 */
static void migrate_from(int version)
{
	char *dir = tmpdir(), *p, *sqltext, *fixture, *want, *got;
	size_t n;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct store_session_row row;
	int items = 0, xs = 0;

	fixture = mt_asprintf("tests/fixtures/schema-v%d.sql", version);
	sqltext = read_all(fixture, &n);
	p = path_in(dir, "old.db");
	sql_exec(p, sqltext);
	sql_exec(p, "INSERT INTO session (id, started_wall, mcptap_version, command)"
		    " VALUES (1, 1, '0.1.0', 'srv');"
		    "INSERT INTO message (session, seq, t_ns, wall, dir, kind, id, idtype, method,"
		    " size, raw) VALUES (1, 1, 10, 1, 'c2s', 'request', 1, 'number', 'ping', 41,"
		    " CAST('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}' || char(10) AS BLOB));"
		    "INSERT INTO message (session, seq, t_ns, wall, dir, kind, id, idtype, size, raw,"
		    " request_seq) VALUES (1, 3, 30, 1, 's2c', 'response', 1, 'number', 37,"
		    " CAST('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}' || char(10) AS BLOB), 1);"
		    "INSERT INTO stderr_line (session, seq, t_ns, wall, raw) VALUES (1, 2, 20, 1,"
		    " CAST('log' || char(10) AS BLOB));"
		    "INSERT INTO analysis (id, session, started_wall, mcptap_version, spec, spec_source)"
		    " VALUES (1, 1, 3, '0.1.0', '2025-06-18', 'default');"
		    "INSERT INTO finding (analysis, session, rule, severity, text)"
		    " VALUES (1, 1, 'LIFE-001', 'error', 'old');");
	if (version >= 3)
		sql_exec(p, "UPDATE session SET msgs_c2s = 1, msgs_s2c = 1, stderr_lines = 1,"
			    " bytes_c2s = 41, bytes_s2c = 37");
	assert_int_equal(sql_int(p, "PRAGMA user_version"), version);

	/* A reader that cannot write reads it as it is: no exchanges, no HTTP columns. */
	if (geteuid() != 0) {
		assert_int_equal(chmod(p, 0400), 0);
		if (store_open(p, STORE_READ, &st, &err))
			fail_msg("read-only v%d: %s", version, err.msg);
		assert_int_equal(store_each_item_ex(st, 1, STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES,
						    count_item, &items, &err),
				 0);
		assert_int_equal(items, 3);
		assert_int_equal(store_each_exchange(st, 1, count_exchange, &xs, &err), 0);
		assert_int_equal(xs, 0);
		assert_int_equal(store_session_get(st, 1, &row, &err), 0);
		assert_null(row.upstream);
		assert_null(row.client_addr);
		assert_null(row.http_session_id);
		assert_int_equal(row.msgs_c2s, 1);
		store_session_row_release(&row);
		store_close(st);
		st = NULL;
		assert_int_equal(sql_int(p, "PRAGMA user_version"), version);
		assert_int_equal(chmod(p, 0600), 0);
	}

	/* A writer migrates it. */
	if (store_open(p, STORE_UPDATE, &st, &err))
		fail_msg("migrate v%d: %s", version, err.msg);
	store_close(st);
	st = NULL;
	assert_int_equal(sql_int(p, "PRAGMA user_version"), 4);
	want = fresh_shape(dir);
	got = schema_shape(p);
	if (strcmp(want, got))
		fail_msg("v%d migrated:\n%s\nnot a new file's:\n%s", version, got, want);
	free(want);
	free(got);
	/* Its rows are kept, the new columns empty. */
	assert_rows(p,
		    "SELECT seq, dir, kind, size, length(raw), exchange, sse_id, sse_event, replayed"
		    " FROM message ORDER BY seq",
		    "1|c2s|request|41|41|~|~|~|0\n3|s2c|response|37|37|~|~|~|0\n");
	assert_rows(p,
		    "SELECT id, command, upstream, client_addr, msgs_c2s, msgs_s2c, stderr_lines,"
		    " bytes_c2s, bytes_s2c FROM session",
		    "1|srv|~|~|1|1|1|41|37\n");
	assert_rows(p, "SELECT rule, text FROM latest_finding", "LIFE-001|old\n");
	assert_rows(p, "SELECT request_seq, response_seq, outcome FROM exchange", "1|3|response\n");
	assert_int_equal(sql_int(p, "SELECT count(*) FROM http_exchange"), 0);

	/* It is checked as a new file is, and takes an HTTP session. */
	struct store_session_new sn = {"http", 5, NULL, "/", 0, "http://127.0.0.1:9/mcp", "127.0.0.1:40000"};
	struct store_exchange x = {.seq = 1,
				   .conn = 1,
				   .t_ns = 1,
				   .wall = 5,
				   .method = "POST",
				   .target = "/mcp",
				   .req_headers_json = "[]"};
	int64_t sid = 0;
	if (store_open(p, STORE_UPDATE, &st, &err) || store_session_create(st, &sn, &sid, &err) ||
	    store_begin(st, &err))
		fail_msg("v%d: %s", version, err.msg);
	x.session = sid;
	assert_int_equal(store_exchange_begin(st, &x, &err), 0);
	assert_int_equal(store_commit(st, &err), 0);
	xs = 0;
	assert_int_equal(store_each_exchange(st, sid, count_exchange, &xs, &err), 0);
	assert_int_equal(xs, 1);
	store_close(st);
	assert_rows(p, "SELECT id, transport, upstream, client_addr FROM session ORDER BY id",
		    "1|stdio|~|~\n2|http|http://127.0.0.1:9/mcp|127.0.0.1:40000\n");

	free(sqltext);
	free(fixture);
	free(p);
	unit_rmdir(dir);
}

static void test_migrate_v1_v2_v3(void **state)
{
	(void)state;
	migrate_from(1);
	migrate_from(2);
	migrate_from(3);
}

/*
 * The schema check knows http_exchange: a file of version 4 must have it
 * with mcptap's columns, and one of an older version must not have it.
 */
static void test_refuse_other_http_exchange(void **state)
{
	char *dir = tmpdir(), *p, *sqltext;
	size_t n;
	struct store *st;

	(void)state;
	p = path_in(dir, "x.db");
	st = open_new(p);
	new_session(st, "srv");
	store_close(st);
	sql_exec(p, "DROP TABLE http_exchange;"
		    "CREATE TABLE http_exchange (session INTEGER, seq INTEGER, conn INTEGER,"
		    " method TEXT, target TEXT, req_headers TEXT, req_body BLOB, status INTEGER,"
		    " resp_headers TEXT, resp_type TEXT, resp_body BLOB, t_ns INTEGER, wall INTEGER,"
		    " first_byte_ns INTEGER, end_ns INTEGER, outcome TEXT, error TEXT, cookie TEXT);");
	free(p);
	check_untouched(dir, "x.db", "table http_exchange has the columns");
	unit_rmdir(dir);

	dir = tmpdir();
	p = path_in(dir, "gone.db");
	st = open_new(p);
	store_close(st);
	sql_exec(p, "DROP TABLE http_exchange;");
	free(p);
	check_untouched(dir, "gone.db", "the table http_exchange is missing");
	unit_rmdir(dir);

	/* Version 3 with the table of version 4: not a file mcptap made. */
	dir = tmpdir();
	sqltext = read_all("tests/fixtures/schema-v3.sql", &n);
	p = path_in(dir, "v3x.db");
	sql_exec(p, sqltext);
	sql_exec(p, "CREATE TABLE http_exchange (session INTEGER NOT NULL, seq INTEGER NOT NULL,"
		    " conn INTEGER NOT NULL, method TEXT NOT NULL, target TEXT NOT NULL,"
		    " req_headers TEXT NOT NULL, req_body BLOB, status INTEGER, resp_headers TEXT,"
		    " resp_type TEXT, resp_body BLOB, t_ns INTEGER NOT NULL, wall INTEGER NOT NULL,"
		    " first_byte_ns INTEGER, end_ns INTEGER, outcome TEXT, error TEXT,"
		    " last_event_id TEXT, PRIMARY KEY (session, seq)) WITHOUT ROWID;");
	free(sqltext);
	free(p);
	check_untouched(dir, "v3x.db",
			"it holds a table (http_exchange) mcptap never makes in a file of its version");
	unit_rmdir(dir);

	/* Version 3 with message's columns of version 4. */
	dir = tmpdir();
	sqltext = read_all("tests/fixtures/schema-v3.sql", &n);
	p = path_in(dir, "v3m.db");
	sql_exec(p, sqltext);
	sql_exec(p, "ALTER TABLE message ADD COLUMN exchange INTEGER;");
	free(sqltext);
	free(p);
	check_untouched(dir, "v3m.db", "table message has the columns");
	unit_rmdir(dir);
}

/* A message of an HTTP session, classified and stored with its place in an exchange. */
static void add_http_msg(struct store *st, int64_t session, int64_t seq, int64_t t_ns, const char *dir,
			 const char *channel, const char *raw, int64_t request_seq, int64_t exchange,
			 const char *sse_id, const char *sse_event, int replayed)
{
	struct mt_class c;
	struct mt_err err = {"", 0};

	mt_classify(raw, strlen(raw), &c);
	struct store_msg m = {
		.session = session,
		.seq = seq,
		.t_ns = t_ns,
		.wall = 1700000000000000LL + t_ns / 1000,
		.dir = dir,
		.channel = channel,
		.cls = &c,
		.raw = raw,
		.size = strlen(raw),
		.request_seq = request_seq,
		.exchange = exchange,
		.sse_id = sse_id,
		.sse_event = sse_event,
		.replayed = replayed,
	};
	if (store_add_message(st, &m, &err))
		fail_msg("store_add_message seq %lld: %s", (long long)seq, err.msg);
}

/* What a walk saw, one line per item or exchange. */
struct http_seen {
	struct mt_buf log;
};

static const char *or_tilde(const char *s)
{
	return s ? s : "~";
}

static void log_exchange(struct mt_buf *b, const struct store_exchange_row *x)
{
	mt_buf_printf(b,
		      "X%lld s%lld c%lld %s %s h=%s q=%s/%zu st=%d rh=%s %s r=%s/%zu t=%lld w=%lld"
		      " fb=%lld end=%lld %s err=%s lei=%s m=%lld\n",
		      (long long)x->seq, (long long)x->session, (long long)x->conn, or_tilde(x->method),
		      or_tilde(x->target), or_tilde(x->req_headers_json),
		      x->req_body ? (const char *)x->req_body : "~", x->req_body_len, x->status,
		      or_tilde(x->resp_headers_json), or_tilde(x->resp_type),
		      x->resp_body ? (const char *)x->resp_body : "~", x->resp_body_len, (long long)x->t_ns,
		      (long long)x->wall, (long long)x->first_byte_ns, (long long)x->end_ns,
		      or_tilde(x->outcome), or_tilde(x->error), or_tilde(x->last_event_id),
		      (long long)x->messages);
}

static int http_each(const struct store_item *it, void *ctx)
{
	struct http_seen *hs = ctx;

	if (it->type == STORE_ITEM_EXCHANGE) {
		assert_non_null(it->x);
		assert_int_equal(it->seq, it->x->seq);
		log_exchange(&hs->log, it->x);
		return 0;
	}
	mt_buf_printf(&hs->log, "%lld %s %s %s x=%lld id=%s ev=%s r=%d\n", (long long)it->seq,
		      or_tilde(it->dir), or_tilde(it->channel), it->kind, (long long)it->exchange,
		      or_tilde(it->sse_id), or_tilde(it->sse_event), it->replayed);
	return 0;
}

static int http_each_exchange(const struct store_exchange_row *x, void *ctx)
{
	log_exchange(&((struct http_seen *)ctx)->log, x);
	return 0;
}

#define assert_log(hs, want)                                             \
	do {                                                             \
		const char *got_ = (hs).log.data ? (hs).log.data : "";   \
		if (strcmp(got_, (want)) != 0)                           \
			fail_msg("got:\n%sexpected:\n%s", got_, (want)); \
		mt_buf_reset(&(hs).log);                                 \
	} while (0)

/*
 * The writers of an HTTP session: a session with its upstream, client and
 * Mcp-Session-Id; exchanges begun, given their head and ended; messages tied
 * to them with their SSE id and type. Read back by store_each_item (with or
 * without the exchanges among the items) and store_each_exchange.
 */
static void test_http_exchanges(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "http.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	struct store_session_new sn = {
		"http", 1700000000000000LL, NULL, "/srv", 0, "https://example.com/mcp", "127.0.0.1:51000"};
	struct store_session_row row;
	struct http_seen hs = {MT_BUF_INIT};
	int64_t s = 0;

	(void)state;
	assert_int_equal(store_session_create(st, &sn, &s, &err), 0);
	assert_int_equal(store_session_set_http(st, s, "sess-1", &err), 0);
	assert_int_equal(store_session_set_http(st, s, NULL, &err), 0); /* leaves it */

	assert_int_equal(store_begin(st, &err), 0);
	/* 1: a POST whose answer is an SSE stream of two events. */
	struct store_exchange x1 = {.session = s,
				    .seq = 1,
				    .conn = 1,
				    .t_ns = 1000,
				    .wall = 1700000000000001LL,
				    .method = "POST",
				    .target = "/mcp",
				    .req_headers_json = "[[\"content-type\",\"application/json\"]]"};
	assert_int_equal(store_exchange_begin(st, &x1, &err), 0);
	add_http_msg(st, s, 2, 1100, "c2s", "body",
		     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", 0, 1, NULL, NULL, 0);
	assert_int_equal(store_exchange_head(st, s, 1, 200, "[[\"content-type\",\"text/event-stream\"]]",
					     "sse", 2000, &err),
			 0);
	add_http_msg(st, s, 3, 2500, "s2c", "sse",
		     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}", 0, 1, "e1", NULL, 0);
	add_http_msg(st, s, 4, 3000, "s2c", "sse", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 2, 1, "e2",
		     "message", 0);
	assert_int_equal(store_exchange_end(st, s, 1, 3500, "complete", NULL, NULL, 0, &err), 0);
	/* 5: a GET resuming a stream: one event sent again, then the upstream went away. */
	struct store_exchange x5 = {.session = s,
				    .seq = 5,
				    .conn = 2,
				    .t_ns = 4000,
				    .wall = 7,
				    .method = "GET",
				    .target = "/mcp?x=1",
				    .req_headers_json = "[]",
				    .last_event_id = "e1"};
	assert_int_equal(store_exchange_begin(st, &x5, &err), 0);
	assert_int_equal(store_exchange_head(st, s, 5, 200, "[]", "sse", 4100, &err), 0);
	add_http_msg(st, s, 6, 4200, "s2c", "sse", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 0, 5, "e2",
		     "message", 1);
	assert_int_equal(
		store_exchange_end(st, s, 5, 4300, "upstream-gone", "connection reset", NULL, 0, &err), 0);
	/* 7: an OAuth form, its bodies kept as bytes (one with a NUL); its row made
	 * whole at once, head and end with the request (as the writer does). */
	struct store_exchange x7 = {.session = s,
				    .seq = 7,
				    .conn = 3,
				    .t_ns = 5000,
				    .wall = 8,
				    .method = "POST",
				    .target = "/token",
				    .req_headers_json = "[]",
				    .req_body = "a=1&b=2",
				    .req_body_len = 7,
				    .status = 401,
				    .resp_headers_json = "[]",
				    .resp_type = "other",
				    .first_byte_ns = 5100,
				    .outcome = "complete",
				    .end_ns = 5200,
				    .resp_body = "no\0pe",
				    .resp_body_len = 5};
	assert_int_equal(store_exchange_begin(st, &x7, &err), 0);
	/* 8: still open, no head yet; 9: an empty body (not NULL). */
	struct store_exchange x8 = {.session = s,
				    .seq = 8,
				    .conn = 3,
				    .t_ns = 6000,
				    .wall = 9,
				    .method = "DELETE",
				    .target = "/mcp",
				    .req_headers_json = "[]"};
	assert_int_equal(store_exchange_begin(st, &x8, &err), 0);
	struct store_exchange x9 = {.session = s,
				    .seq = 9,
				    .conn = 4,
				    .t_ns = 7000,
				    .wall = 10,
				    .method = "POST",
				    .target = "/mcp",
				    .req_headers_json = "[]",
				    .req_body = ""};
	assert_int_equal(store_exchange_begin(st, &x9, &err), 0);
	/* A second exchange with one seq, and an update of none, fail with a reason. */
	assert_int_equal(store_exchange_begin(st, &x8, &err), -1);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(store_exchange_head(st, s, 99, 200, "[]", "json", 1, &err), -1);
	assert_string_equal(err.msg, "no exchange 99 in session 1");
	err.msg[0] = '\0';
	assert_int_equal(store_exchange_end(st, s + 1, 1, 1, "complete", NULL, NULL, 0, &err), -1);
	assert_string_equal(err.msg, "no exchange 1 in session 2");
	assert_int_equal(store_commit(st, &err), 0);

	/* The session's row and counters (HTTP messages count as stdio ones do). */
	assert_int_equal(store_session_get(st, s, &row, &err), 0);
	assert_string_equal(row.transport, "http");
	assert_string_equal(row.http_session_id, "sess-1");
	assert_string_equal(row.upstream, "https://example.com/mcp");
	assert_string_equal(row.client_addr, "127.0.0.1:51000");
	assert_null(row.command);
	assert_int_equal(row.msgs_c2s, 1);
	assert_int_equal(row.msgs_s2c, 3);
	assert_int_equal(row.bytes_c2s, 46);
	assert_int_equal(row.bytes_s2c, 51 + 36 + 36);
	store_session_row_release(&row);

	/* The items, without and with the exchanges among them. */
	assert_int_equal(store_each_item(st, s, http_each, &hs, &err), 0);
	assert_log(hs, "2 c2s body request x=1 id=~ ev=~ r=0\n"
		       "3 s2c sse notification x=1 id=e1 ev=~ r=0\n"
		       "4 s2c sse response x=1 id=e2 ev=message r=0\n"
		       "6 s2c sse response x=5 id=e2 ev=message r=1\n");
	static const char exchanges[] =
		"X1 s1 c1 POST /mcp h=[[\"content-type\",\"application/json\"]] q=~/0 st=200"
		" rh=[[\"content-type\",\"text/event-stream\"]] sse r=~/0 t=1000 w=1700000000000001"
		" fb=2000 end=3500 complete err=~ lei=~ m=3\n"
		"X5 s1 c2 GET /mcp?x=1 h=[] q=~/0 st=200 rh=[] sse r=~/0 t=4000 w=7 fb=4100 end=4300"
		" upstream-gone err=connection reset lei=e1 m=1\n"
		"X7 s1 c3 POST /token h=[] q=a=1&b=2/7 st=401 rh=[] other r=no/5 t=5000 w=8 fb=5100"
		" end=5200 complete err=~ lei=~ m=0\n"
		"X8 s1 c3 DELETE /mcp h=[] q=~/0 st=0 rh=~ ~ r=~/0 t=6000 w=9 fb=-1 end=-1 ~ err=~"
		" lei=~ m=0\n"
		"X9 s1 c4 POST /mcp h=[] q=/0 st=0 rh=~ ~ r=~/0 t=7000 w=10 fb=-1 end=-1 ~ err=~"
		" lei=~ m=0\n";
	assert_int_equal(store_each_exchange(st, s, http_each_exchange, &hs, &err), 0);
	assert_log(hs, exchanges);
	assert_int_equal(store_each_item_ex(st, s, STORE_ITEMS_EXCHANGES, http_each, &hs, &err), 0);
	assert_log(hs, "X1 s1 c1 POST /mcp h=[[\"content-type\",\"application/json\"]] q=~/0 st=200"
		       " rh=[[\"content-type\",\"text/event-stream\"]] sse r=~/0 t=1000 w=1700000000000001"
		       " fb=2000 end=3500 complete err=~ lei=~ m=3\n"
		       "2 c2s body request x=1 id=~ ev=~ r=0\n"
		       "3 s2c sse notification x=1 id=e1 ev=~ r=0\n"
		       "4 s2c sse response x=1 id=e2 ev=message r=0\n"
		       "X5 s1 c2 GET /mcp?x=1 h=[] q=~/0 st=200 rh=[] sse r=~/0 t=4000 w=7 fb=4100 end=4300"
		       " upstream-gone err=connection reset lei=e1 m=1\n"
		       "6 s2c sse response x=5 id=e2 ev=message r=1\n"
		       "X7 s1 c3 POST /token h=[] q=a=1&b=2/7 st=401 rh=[] other r=no/5 t=5000 w=8 fb=5100"
		       " end=5200 complete err=~ lei=~ m=0\n"
		       "X8 s1 c3 DELETE /mcp h=[] q=~/0 st=0 rh=~ ~ r=~/0 t=6000 w=9 fb=-1 end=-1 ~ err=~"
		       " lei=~ m=0\n"
		       "X9 s1 c4 POST /mcp h=[] q=/0 st=0 rh=~ ~ r=~/0 t=7000 w=10 fb=-1 end=-1 ~ err=~"
		       " lei=~ m=0\n");
	/* A lean walk leaves them empty, but replayed and the exchange (replay
	 * leaves the copies out, and ties them to their resumed GET). */
	assert_int_equal(store_each_item_ex(st, s, STORE_ITEMS_LEAN, http_each, &hs, &err), 0);
	assert_log(hs, "2 c2s ~ request x=1 id=~ ev=~ r=0\n"
		       "3 s2c ~ notification x=1 id=~ ev=~ r=0\n"
		       "4 s2c ~ response x=1 id=~ ev=~ r=0\n"
		       "6 s2c ~ response x=5 id=~ ev=~ r=1\n");
	/* The callback stops the walk. */
	assert_int_equal(store_each_exchange(st, 999, http_each_exchange, &hs, &err), 0);
	assert_log(hs, "");
	assert_int_equal(store_close(st), 0);
	assert_rows(p,
		    "SELECT typeof(req_body), typeof(resp_body), hex(resp_body) FROM http_exchange"
		    " WHERE seq IN (7, 9) ORDER BY seq",
		    "blob|blob|6E6F007065\nblob|null|\n");
	assert_rows(p, "SELECT seq, exchange, replayed FROM message WHERE exchange = 1 ORDER BY seq",
		    "2|1|0\n3|1|0\n4|1|0\n");
	mt_buf_release(&hs.log);
	free(p);
	unit_rmdir(dir);
}

/*
 * A crafted file: http_exchange and message's HTTP columns NULL or of another
 * type where mcptap's schema says otherwise. The readers read them, never crash.
 */
static void test_http_crafted(void **state)
{
	char *dir = tmpdir(), *p = path_in(dir, "crafted.db");
	struct store *st = open_new(p);
	struct mt_err err = {"", 0};
	struct http_seen hs = {MT_BUF_INIT};
	int64_t s = new_session(st, "srv");

	(void)state;
	add_http_msg(st, s, 2, 10, "c2s", "body", "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", 0, 1, NULL, NULL,
		     0);
	store_close(st);
	sql_exec(p, "PRAGMA writable_schema = ON;"
		    "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '')"
		    " WHERE name IN ('http_exchange', 'message');"
		    "PRAGMA writable_schema = OFF;");
	sql_exec(p, "INSERT INTO http_exchange (session, seq) VALUES (1, 1);"
		    "INSERT INTO http_exchange VALUES (1, 3, 'c', x'00ff', 7, x'5b', 'body', 'abc',"
		    " 42, x'01', 'resp', 'soon', NULL, 'x', 2.5, 9, x'ee', 3);"
		    "INSERT INTO http_exchange (session, seq, status, req_body, resp_body)"
		    " VALUES (1, 4, 99999999999, x'', 7);"
		    "UPDATE message SET exchange = 'one', sse_id = x'0001', sse_event = 5,"
		    " replayed = NULL;");
	if (store_open(p, STORE_READ, &st, &err))
		fail_msg("crafted: %s", err.msg);
	assert_int_equal(store_each_exchange(st, s, http_each_exchange, &hs, &err), 0);
	assert_log(hs, "X1 s1 c0 ~ ~ h=~ q=~/0 st=0 rh=~ ~ r=~/0 t=0 w=0 fb=-1 end=-1 ~ err=~ lei=~ m=0\n"
		       "X3 s1 c0  7 h=[ q=body/4 st=0 rh=42 \x01 r=resp/4 t=0 w=0 fb=0 end=2 9"
		       " err=\xee lei=3 m=0\n"
		       "X4 s1 c0 ~ ~ h=~ q=/0 st=0 rh=~ ~ r=7/1 t=0 w=0 fb=-1 end=-1 ~ err=~ lei=~ m=0\n");
	assert_int_equal(
		store_each_item_ex(st, s, STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES, http_each, &hs, &err),
		0);
	assert_true(strstr(hs.log.data, "2 c2s body notification x=0 id= ev=5 r=0\n") != NULL);
	mt_buf_release(&hs.log);
	store_close(st);
	free(p);
	unit_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest store[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_missing_and_empty),
		cmocka_unit_test(test_refuse_not_sqlite),
		cmocka_unit_test(test_refuse_other_application),
		cmocka_unit_test(test_refuse_newer),
		cmocka_unit_test(test_refuse_corrupt),
		cmocka_unit_test(test_reopen),
		cmocka_unit_test(test_no_sessions),
		cmocka_unit_test(test_session_fields),
		cmocka_unit_test(test_transactions),
		cmocka_unit_test(test_statement_errors),
		cmocka_unit_test(test_rows_as_bound),
		cmocka_unit_test(test_message_columns),
		cmocka_unit_test(test_exchange_view),
		cmocka_unit_test(test_method_stats_unanswered),
		cmocka_unit_test(test_each_item),
		cmocka_unit_test(test_migrate_v1),
		cmocka_unit_test(test_migrate_v1_v2_v3),
		cmocka_unit_test(test_refuse_other_http_exchange),
		cmocka_unit_test(test_http_exchanges),
		cmocka_unit_test(test_http_crafted),
		cmocka_unit_test(test_analysis_slices),
		cmocka_unit_test(test_process_identity),
	};

	return cmocka_run_group_tests(store, NULL, NULL);
}
