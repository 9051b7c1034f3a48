/*
 * fuzz-store.c - libFuzzer target for the capture-file reader.
 *
 * Writes the input as a file, opens it with store_open(STORE_READ) and, when
 * that succeeds, walks everything a reader can: the sessions, each session by
 * id, the last session, and every item of every session. Nothing may crash,
 * and what is read back must be consistent (strings NUL-terminated, raw
 * bytes present when their length says so).
 *
 * With MCPTAP_FUZZ_STORE_SEED=PATH in the environment, it first writes a small
 * valid capture (512-byte pages, a few sessions, messages, stderr lines and
 * gaps) to PATH when that file does not exist, as a seed for the corpus.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/store.h"
#include "schema_sql.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096];
static char db[4200], wal[4210], shm[4210], journal[4210];

static void clean(void)
{
	unlink(db);
	unlink(wal);
	unlink(shm);
	unlink(journal);
}

static void bye(void)
{
	clean();
	rmdir(dir);
}

static int exec_ok(sqlite3 *h, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "fuzz-store: seed: %s\n", msg ? msg : sqlite3_errmsg(h));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* A small valid capture at path (the embedded schema, then a few rows). */
static void write_seed(const char *path)
{
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	sqlite3 *h = NULL;

	if (access(path, F_OK) == 0)
		return;
	if (sqlite3_open(path, &h) != SQLITE_OK)
		goto fail;
	if (exec_ok(h, "PRAGMA page_size = 512; PRAGMA journal_mode = DELETE;") ||
	    exec_ok(h, mcptap_schema_sql) ||
	    exec_ok(h, "INSERT INTO meta VALUES ('created_by', 'mcptap fuzz');"
		       "INSERT INTO session (transport, started_wall, command, pid, protocol_version,"
		       " client_name, server_name, client_caps, mcptap_version)"
		       " VALUES ('stdio', 1700000000000000, 'srv --x', 42, '2025-06-18', 'c', 's',"
		       " '{}', 'fuzz');"
		       "INSERT INTO session (started_wall, mcptap_version, ended_wall, duration_ns,"
		       " exit_status, exit_signal, error) VALUES (1, 'fuzz', 2, 3, -1, 9, 'killed');"
		       "INSERT INTO message (session, seq, t_ns, wall, dir, kind, id, idtype, method,"
		       " has_meta, size, raw) VALUES"
		       " (1, 1, 10, 1, 'c2s', 'request', 1, 'number', 'initialize', 0, 5, x'7b7d0d0a00'),"
		       " (1, 3, 30, 3, 's2c', 'response', 1, 'number', NULL, 1, 2, x'7b7d'),"
		       " (1, 4, 40, 4, 's2c', 'error', '1', 'string', NULL, 0, 1, x'ff'),"
		       " (1, 5, 50, 5, 'c2s', 'request', 2.5, 'number', 'tools/call', 0, 0, x''),"
		       " (2, 1, 1, 1, 'c2s', 'invalid', NULL, NULL, NULL, 0, 3, x'616263');"
		       "UPDATE message SET error_code = -32601 WHERE seq = 4;"
		       "INSERT INTO stderr_line VALUES (1, 2, 20, 2, 0, x'6c6f670a'),"
		       " (1, 6, 60, 6, 1, x'');"
		       "INSERT INTO gap VALUES (1, 7, 's2c', 2, 100, 'too big'),"
		       " (1, NULL, NULL, 1, 1, 'unknown');"
		       "INSERT INTO session (transport, started_wall, mcptap_version, upstream,"
		       " client_addr, http_session_id) VALUES ('http', 1, 'fuzz', 'http://h/mcp',"
		       " '127.0.0.1:1', 'abc');"
		       "INSERT INTO http_exchange (session, seq, conn, method, target, req_headers,"
		       " status, resp_headers, resp_type, t_ns, wall, first_byte_ns, end_ns, outcome)"
		       " VALUES (3, 1, 1, 'POST', '/mcp', '[[\"a\",\"b\"]]', 200, '[]', 'sse', 1, 1, 2,"
		       " 9, 'complete');"
		       "INSERT INTO http_exchange (session, seq, conn, method, target, req_headers,"
		       " req_body, t_ns, wall, resp_body, last_event_id) VALUES (3, 4, 2, 'GET', '/',"
		       " '[]', x'00', 5, 5, x'ff', 'e1');"
		       "INSERT INTO message (session, seq, t_ns, wall, dir, channel, kind, size, raw,"
		       " exchange, sse_id, sse_event, replayed) VALUES"
		       " (3, 2, 2, 2, 'c2s', 'body', 'notification', 2, x'7b7d', 1, NULL, NULL, 0),"
		       " (3, 3, 3, 3, 's2c', 'sse', 'notification', 2, x'7b7d', 1, 'e1', 'message', 1);"))
		goto fail;
	if (sqlite3_close(h) != SQLITE_OK)
		goto fail;
	h = NULL;
	/* It must be a capture that mcptap reads. */
	if (store_open(path, STORE_READ, &st, &err)) {
		fprintf(stderr, "fuzz-store: seed refused: %s\n", err.msg);
		goto fail;
	}
	store_close(st);
	return;
fail:
	sqlite3_close(h);
	unlink(path);
	fprintf(stderr, "fuzz-store: cannot write the seed %s\n", path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("TMPDIR"), *seed = getenv("MCPTAP_FUZZ_STORE_SEED");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/mcptap-fuzz-store.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz-store: mkdtemp");
		exit(1);
	}
	snprintf(db, sizeof(db), "%s/c.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	snprintf(shm, sizeof(shm), "%s-shm", db);
	snprintf(journal, sizeof(journal), "%s-journal", db);
	atexit(bye);
	if (seed && *seed)
		write_seed(seed);
	return 0;
}

struct walk {
	size_t items;
	uint64_t sum; /* touches every byte read back */
};

static void touch(struct walk *w, const char *s)
{
	if (s)
		w->sum += strlen(s);
}

static int on_exchange(const struct store_exchange_row *x, void *ctx)
{
	struct walk *w = ctx;
	const unsigned char *rq = x->req_body, *rs = x->resp_body;

	touch(w, x->method);
	touch(w, x->target);
	touch(w, x->req_headers_json);
	touch(w, x->resp_headers_json);
	touch(w, x->resp_type);
	touch(w, x->outcome);
	touch(w, x->error);
	touch(w, x->last_event_id);
	if ((x->req_body_len && !x->req_body) || (x->resp_body_len && !x->resp_body))
		abort();
	for (size_t i = 0; i < x->req_body_len; i++)
		w->sum += rq[i];
	for (size_t i = 0; i < x->resp_body_len; i++)
		w->sum += rs[i];
	w->sum += (uint64_t)x->seq + (uint64_t)x->status + (uint64_t)x->messages;
	return ++w->items >= 100000 ? 1 : 0;
}

static int on_item(const struct store_item *it, void *ctx)
{
	struct walk *w = ctx;
	const unsigned char *raw = it->raw;

	if ((unsigned)it->type > STORE_ITEM_EXCHANGE || (it->type == STORE_ITEM_EXCHANGE) != !!it->x)
		abort();
	if (it->x)
		on_exchange(it->x, w);
	touch(w, it->dir);
	touch(w, it->channel);
	touch(w, it->kind);
	touch(w, it->id_text);
	touch(w, it->idtype);
	touch(w, it->method);
	touch(w, it->gap_reason);
	touch(w, it->sse_id);
	touch(w, it->sse_event);
	if (it->raw_len && !raw)
		abort();
	for (size_t i = 0; i < it->raw_len; i++)
		w->sum += raw[i];
	w->sum += (uint64_t)it->seq + (uint64_t)it->size + (uint64_t)it->error_code;
	/* Stop a huge walk early: the reader's stop path is worth running too. */
	return ++w->items >= 100000 ? 1 : 0;
}

static void touch_row(struct walk *w, const struct store_session_row *r)
{
	touch(w, r->transport);
	touch(w, r->command);
	touch(w, r->error);
	touch(w, r->protocol_version);
	touch(w, r->client_name);
	touch(w, r->client_version);
	touch(w, r->server_name);
	touch(w, r->server_version);
	touch(w, r->client_caps);
	touch(w, r->server_caps);
	touch(w, r->tap_id);
	touch(w, r->http_session_id);
	touch(w, r->upstream);
	touch(w, r->client_addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_session_row *rows = NULL, row;
	struct mt_err err = {"", 0};
	struct store *st = NULL;
	struct walk w = {0, 0};
	size_t n = 0;
	int64_t last;
	int fd;

	clean();
	fd = open(db, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
		perror("fuzz-store: write");
		abort();
	}
	close(fd);

	if (store_open(db, STORE_READ, &st, &err) != 0) {
		if (st || !err.msg[0])
			abort(); /* refused: no handle, and a reason */
		clean();
		return 0;
	}
	if (store_sessions(st, &rows, &n, &err) == 0) {
		for (size_t i = 0; i < n && i < 64; i++) {
			touch_row(&w, &rows[i]);
			if (store_session_get(st, rows[i].id, &row, &err) == 0) {
				touch_row(&w, &row);
				store_session_row_release(&row);
			}
			w.items = 0;
			store_each_item(st, rows[i].id, on_item, &w, &err);
			w.items = 0;
			store_each_item_ex(st, rows[i].id, STORE_ITEMS_EXCHANGES, on_item, &w, &err);
			w.items = 0;
			store_each_exchange(st, rows[i].id, on_exchange, &w, &err);
		}
		store_sessions_free(rows, n);
	}
	if (store_last_session(st, &last, &err) == 0)
		store_each_item(st, last, on_item, &w, &err);
	if (store_session_get(st, -1, &row, &err) == 0)
		store_session_row_release(&row);
	store_close(st);
	clean();
	return 0;
}
