/*
 * fuzz-readers.c - libFuzzer target for the commands that read captures.
 *
 * The input is a recipe for a crafted capture file: mcptap's schema without
 * its NOT NULL constraints (what a file from elsewhere may hold), then rows
 * whose every column is NULL, an integer, a real, text or a blob as the input
 * says, and often a JSON-RPC message of a small set for raw. The readers then
 * run on it as a user runs them: sessions, show and stats (text and JSON),
 * analyze in every format (without storing), replay's loading, and the mock
 * with a short client script. Nothing may crash, hang or leak; every outcome
 * is an exit status.
 *
 * Recipe: a byte choosing which readers run (a bit each: sessions, show,
 * stats, analyze as text and JSON, analyze as SARIF and JUnit, replay's
 * loading, the mock; 0 runs them all), then a sequence of rows, each a byte
 * choosing the table (session,
 * message, stderr_line, gap), then one value per column: a tag byte (0 NULL,
 * 1 a small integer, 2 a real, 3 text, 4 a blob, 5 a message of the set,
 * 6 a direction, 7 a kind, 8 a method) and its bytes.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/replay/replay.h"
#include "cli.h"
#include "schema/store.h"
#include "schema_sql.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const struct cmd_entry cmd_sessions, cmd_show, cmd_stats, cmd_analyze, cmd_replay;

static char dir[4096], db[4200], sidecar[3][4220], script[4220];
static char *schema_sql; /* mcptap's schema without NOT NULL */

static const char *const messages[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}"
	"\n",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":"
	"{\"tools\":{}},\"serverInfo\":{\"name\":\"\\u001b]0;x\\u0007s\",\"version\":\"1\"}}}\n",
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	"\"arguments\":{\"t\":\"[redacted:0123abcd]\"},\"_meta\":{\"progressToken\":7}}}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[],\"isError\":true}}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"no\"}}\n",
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n",
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":7,"
	"\"progress\":1}}\n",
	"[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n",
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n",
	"{\"jsonrpc\":\"1.0\",\"id\":9,\"method\":\"tools/list\"}\n",
	"{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"x\"}\n",
	"not json at all\n",
	"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///a\"}}",
	"",
	"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[],"
	"\"maxTokens\":5}}\n",
};
#define NMESSAGES (sizeof(messages) / sizeof(messages[0]))

static const char *const words[] = {"c2s",
				    "s2c",
				    "stderr",
				    "request",
				    "notification",
				    "response",
				    "error",
				    "batch",
				    "invalid",
				    "notjsonrpc",
				    "tools/call",
				    "initialize",
				    "notifications/cancelled",
				    "x"};

static const struct {
	const char *table;
	const char *cols[18];
} tables[] = {
	{"session",
	 {"id", "transport", "started_wall", "ended_wall", "duration_ns", "command", "pid", "exit_status",
	  "exit_signal", "protocol_version", "client_name", "server_name", "client_caps", "server_caps",
	  "tap_pid", "tap_id", "msgs_c2s", NULL}},
	{"message",
	 {"session", "seq", "t_ns", "wall", "dir", "channel", "kind", "id", "idtype", "method", "error_code",
	  "request_seq", "progress_token", "incomplete", "size", "raw", NULL}},
	{"stderr_line", {"session", "seq", "t_ns", "wall", "incomplete", "raw", NULL}},
	{"gap", {"session", "seq", "dir", "messages", "bytes", "reason", NULL}},
};

struct in {
	const uint8_t *p;
	size_t n;
};

static int take(struct in *in)
{
	if (!in->n)
		return -1;
	in->n--;
	return *in->p++;
}

/* Bind the next value of the recipe to column i of q. */
static void bind_value(sqlite3_stmt *q, int i, struct in *in, int is_seq, int64_t *seq)
{
	int tag = take(in), b;

	switch (tag < 0 ? 0 : tag % 9) {
	case 0: sqlite3_bind_null(q, i); break;
	case 1:
		b = take(in);
		if (is_seq)
			sqlite3_bind_int64(q, i, ++*seq + (b < 0 ? 0 : b % 3)); /* mostly increasing */
		else
			sqlite3_bind_int64(q, i, b < 0 ? 1 : b % 8 - 1);
		break;
	case 2: sqlite3_bind_double(q, i, (take(in) - 128) / 3.0); break;
	case 3:
	case 4: {
		int len = take(in);
		len = len < 0 ? 0 : len % 48;
		if ((size_t)len > in->n)
			len = (int)in->n;
		if (tag % 9 == 3)
			sqlite3_bind_text(q, i, (const char *)in->p, len, SQLITE_TRANSIENT);
		else
			sqlite3_bind_blob(q, i, in->p, len, SQLITE_TRANSIENT);
		in->p += len;
		in->n -= (size_t)len;
		break;
	}
	case 5:
		b = take(in);
		sqlite3_bind_blob(q, i, messages[(size_t)(b < 0 ? 0 : b) % NMESSAGES],
				  (int)strlen(messages[(size_t)(b < 0 ? 0 : b) % NMESSAGES]), SQLITE_STATIC);
		break;
	default:
		b = take(in);
		sqlite3_bind_text(q, i, words[(size_t)(b < 0 ? 0 : b) % (sizeof(words) / sizeof(words[0]))],
				  -1, SQLITE_STATIC);
		break;
	}
}

/* Make the crafted capture at db from the recipe; 0, or -1 when SQLite would not. */
static int craft(struct in *in)
{
	sqlite3 *h = NULL;
	int64_t seq = 0;
	int rc = -1, rows = 0;

	for (int k = 0; k < 3; k++)
		unlink(sidecar[k]);
	unlink(db);
	if (sqlite3_open(db, &h) != SQLITE_OK ||
	    sqlite3_exec(h, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF;", NULL, NULL, NULL) ||
	    sqlite3_exec(h, schema_sql, NULL, NULL, NULL) ||
	    sqlite3_exec(h,
			 "INSERT INTO session (id, started_wall, mcptap_version) VALUES (1, 1, 'f');"
			 "BEGIN",
			 NULL, NULL, NULL))
		goto out;
	while (in->n && rows++ < 64) {
		int t = take(in) % 4;
		struct mt_buf sql = MT_BUF_INIT;
		sqlite3_stmt *q = NULL;
		int ncols = 0;
		mt_buf_printf(&sql, "INSERT OR IGNORE INTO %s (", tables[t].table);
		for (; tables[t].cols[ncols]; ncols++)
			mt_buf_printf(&sql, "%s%s", ncols ? "," : "", tables[t].cols[ncols]);
		mt_buf_puts(&sql, ") VALUES (");
		for (int i = 0; i < ncols; i++)
			mt_buf_printf(&sql, "%s?", i ? "," : "");
		mt_buf_puts(&sql, ")");
		if (sqlite3_prepare_v2(h, sql.data, -1, &q, NULL) == SQLITE_OK) {
			for (int i = 0; i < ncols; i++)
				bind_value(q, i + 1, in, !strcmp(tables[t].cols[i], "seq"), &seq);
			(void)sqlite3_step(q);
		}
		sqlite3_finalize(q);
		mt_buf_release(&sql);
	}
	if (sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		rc = 0;
out:
	sqlite3_close(h);
	return rc;
}

static void run(const struct cmd_entry *c, const char *a1, const char *a2, const char *a3, const char *a4)
{
	char *argv[10] = {(char *)c->name, "-r", db};
	int argc = 3;

	if (a1)
		argv[argc++] = (char *)a1;
	if (a2)
		argv[argc++] = (char *)a2;
	if (a3)
		argv[argc++] = (char *)a3;
	if (a4)
		argv[argc++] = (char *)a4;
	argv[argc] = NULL;
	(void)c->run(argc, argv);
	fflush(stdout);
}

static void bye(void)
{
	for (int k = 0; k < 3; k++)
		unlink(sidecar[k]);
	unlink(db);
	unlink(script);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("TMPDIR");
	struct mt_buf b = MT_BUF_INIT;

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/mcptap-fuzz-readers.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz-readers: mkdtemp");
		exit(1);
	}
	snprintf(db, sizeof(db), "%s/c.db", dir);
	snprintf(sidecar[0], sizeof(sidecar[0]), "%s-wal", db);
	snprintf(sidecar[1], sizeof(sidecar[1]), "%s-shm", db);
	snprintf(sidecar[2], sizeof(sidecar[2]), "%s-journal", db);
	snprintf(script, sizeof(script), "%s/client", dir);
	atexit(bye);
	/* The schema as a crafted file may hold it: no NOT NULL anywhere. */
	for (const char *p = mcptap_schema_sql; *p;) {
		const char *nn = strstr(p, " NOT NULL");
		/* ("IS NOT NULL" in the views and indexes stays.) */
		if (nn && !(nn >= mcptap_schema_sql + 3 && !strncmp(nn - 3, " IS", 3))) {
			mt_buf_append(&b, p, (size_t)(nn - p));
			p = nn + 9;
		} else if (nn) {
			mt_buf_append(&b, p, (size_t)(nn - p) + 9);
			p = nn + 9;
		} else {
			mt_buf_puts(&b, p);
			break;
		}
	}
	schema_sql = b.data;
	/* The mock's client: a handshake and a tool call. */
	FILE *f = fopen(script, "w");
	if (!f)
		exit(1);
	fputs(messages[0], f);
	fputs(messages[2], f);
	fputs(messages[3], f);
	fclose(f);
	/* What the commands print goes nowhere. */
	if (!freopen("/dev/null", "w", stdout))
		exit(1);
	setenv("NO_COLOR", "1", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	struct store *st = NULL;
	struct mt_err err = {"", 0};

	int which = take(&in);

	if (which <= 0)
		which = 0xff;
	if (craft(&in))
		return 0;
	if (which & 1) {
		run(&cmd_sessions, NULL, NULL, NULL, NULL);
		run(&cmd_sessions, "-T", "json", NULL, NULL);
	}
	if (which & 2) {
		run(&cmd_show, NULL, NULL, NULL, NULL);
		run(&cmd_show, "-T", "json", NULL, NULL);
	}
	if (which & 4) {
		run(&cmd_stats, NULL, NULL, NULL, NULL);
		run(&cmd_stats, "-T", "json", NULL, NULL);
	}
	if (which & 8) {
		run(&cmd_analyze, "--no-store", "--all", NULL, NULL);
		run(&cmd_analyze, "--no-store", "--all", "-T", "json");
	}
	if (which & 16) {
		run(&cmd_analyze, "--no-store", "--all", "-T", "sarif");
		run(&cmd_analyze, "--no-store", "--all", "-T", "junit");
	}
	if ((which & 32) && store_open(db, STORE_READ, &st, &err) == 0) {
		struct rp_script s;
		struct canon_ignore ig = {NULL, 0};
		memset(&s, 0, sizeof(s));
		if (rp_load(st, 1, &ig, &s, &err) == 0)
			rp_release(&s);
		store_close(st);
	}
	if (!(which & 64))
		return 0;
	/* The mock, its client's messages on stdin. */
	int saved = dup(0), fd = open(script, O_RDONLY);
	if (saved >= 0 && fd >= 0) {
		dup2(fd, 0);
		run(&cmd_replay, "--as", "server", "--timing", "none");
		dup2(saved, 0);
		clearerr(stdin);
	}
	if (fd >= 0)
		close(fd);
	if (saved >= 0)
		close(saved);
	return 0;
}
