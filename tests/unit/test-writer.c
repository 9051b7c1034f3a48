/*
 * test-writer.c - the writer thread and its bounded queue (tap/writer.h):
 * put order becomes seq order, concurrent producers lose nothing and keep each
 * stream's order, backpressure with a tiny queue, writer_stop releases a
 * waiting producer, the initialize exchange fills the session, answers are
 * paired with their requests, oversized lines become gaps, batches stay
 * bounded, sync mode commits before returning, and a store that fails for
 * good (a file size limit, in a child process) warns once, counts what it
 * lost and never blocks the relay.
 */
#include "tests/unit/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "schema/store.h"
#include "tap/writer.h"

/* ---- helpers ---- */

struct fixture {
	char *dir;
	char *db;
	struct store *st;
	int64_t session;
};

static void fixture_open(struct fixture *fx)
{
	struct store_session_new sn = {"stdio", 1700000000000000LL, "srv", "/", 1, NULL, NULL};
	struct mt_err err = {"", 0};

	fx->dir = unit_tmpdir();
	if (!fx->dir) {
		fail_msg("no scratch directory");
		abort();
	}
	fx->db = mt_asprintf("%s/w.db", fx->dir);
	if (store_open(fx->db, STORE_WRITE, &fx->st, &err) ||
	    store_session_create(fx->st, &sn, &fx->session, &err))
		fail_msg("%s", err.msg);
}

static void fixture_close(struct fixture *fx)
{
	free(fx->db);
	unit_rmdir(fx->dir);
}

/* One stored row, copied out of store_each_item. */
struct rec {
	enum store_item_type type;
	int64_t seq, t_ns;
	char dir[8];
	char kind[16];
	char *raw;
	size_t len;
	int incomplete;
	int64_t gap_messages, gap_bytes;
	char *reason;
};

struct recs {
	struct rec *v;
	size_t n, cap;
};

static int collect(const struct store_item *it, void *ctx)
{
	struct recs *rs = ctx;
	struct rec *r;

	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 64;
		rs->v = mt_realloc(rs->v, rs->cap * sizeof(*rs->v));
	}
	r = &rs->v[rs->n++];
	memset(r, 0, sizeof(*r));
	r->type = it->type;
	r->seq = it->seq;
	r->t_ns = it->t_ns;
	snprintf(r->dir, sizeof(r->dir), "%s", it->dir ? it->dir : "~");
	snprintf(r->kind, sizeof(r->kind), "%s", it->kind ? it->kind : "~");
	r->len = it->raw_len;
	r->raw = malloc(it->raw_len + 1);
	assert_non_null(r->raw);
	if (it->raw_len)
		memcpy(r->raw, it->raw, it->raw_len);
	r->raw[it->raw_len] = '\0';
	r->incomplete = it->incomplete;
	r->gap_messages = it->gap_messages;
	r->gap_bytes = it->gap_bytes;
	r->reason = it->gap_reason ? mt_strdup(it->gap_reason) : NULL;
	return 0;
}

static void recs_free(struct recs *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].raw);
		free(rs->v[i].reason);
	}
	free(rs->v);
	memset(rs, 0, sizeof(*rs));
}

/* Read a session back through a fresh STORE_READ handle. */
static void load(const char *db, int64_t session, struct recs *rs)
{
	struct mt_err err = {"", 0};
	struct store *st = NULL;

	memset(rs, 0, sizeof(*rs));
	if (store_open(db, STORE_READ, &st, &err))
		fail_msg("reopen: %s", err.msg);
	if (store_each_item(st, session, collect, rs, &err) != 0)
		fail_msg("each_item: %s", err.msg);
	assert_int_equal(store_close(st), 0);
}

static void get_session(const char *db, int64_t session, struct store_session_row *row)
{
	struct mt_err err = {"", 0};
	struct store *st = NULL;

	if (store_open(db, STORE_READ, &st, &err) || store_session_get(st, session, row, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(store_close(st), 0);
}

static void put_str(struct writer *w, enum writer_stream s, const char *text)
{
	writer_put(w, s, text, strlen(text));
}

#define assert_rec(rs, i, seq_, type_, kind_, text)                 \
	do {                                                        \
		const struct rec *r_ = &(rs)->v[(i)];               \
		assert_true((size_t)(i) < (rs)->n);                 \
		assert_int_equal(r_->seq, (seq_));                  \
		assert_int_equal(r_->type, (type_));                \
		assert_string_equal(r_->kind, (kind_));             \
		assert_int_equal(r_->len, strlen(text));            \
		assert_memory_equal(r_->raw, (text), strlen(text)); \
	} while (0)

/* ---- one producer ---- */

static void test_put_order(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct store_session_end e = {1700000001000000LL, 1000000000LL, 0, 0, 0, NULL};
	struct store_session_row row;
	struct recs rs;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.label = "test.db";
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
	put_str(w, WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	put_str(w, WS_STDERR, "log 1\n");
	put_str(w, WS_C2S, "{\"jsonrpc\":\"2.0\","); /* completed later */
	put_str(w, WS_S2C, "not json\r\n");
	put_str(w, WS_STDERR, "log "); /* completed later */
	put_str(w, WS_C2S, "\"method\":\"n\"}\n{\"a\":1}\n");
	put_str(w, WS_STDERR, "2\n");
	put_str(w, WS_S2C, "half");
	writer_put(w, WS_S2C, NULL, 0); /* the stream ends: "half" now */
	put_str(w, WS_C2S, "[1]\n");
	put_str(w, WS_C2S, "tail"); /* ends at writer_finish */
	assert_int_equal(writer_finish(w, &e, &stats), 0);

	assert_int_equal(stats.stored_messages, 8);
	assert_int_equal(stats.stored_stderr, 2);
	assert_int_equal(stats.lost_messages, 0);
	assert_int_equal(stats.lost_bytes, 0);
	assert_true(stats.commits >= 1);

	load(fx.db, fx.session, &rs);
	assert_int_equal(rs.n, 10);
	assert_rec(&rs, 0, 1, STORE_ITEM_MESSAGE, "request",
		   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
	assert_rec(&rs, 1, 2, STORE_ITEM_MESSAGE, "response",
		   "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	assert_rec(&rs, 2, 3, STORE_ITEM_STDERR, "stderr", "log 1\n");
	assert_rec(&rs, 3, 4, STORE_ITEM_MESSAGE, "invalid", "not json\r\n");
	assert_rec(&rs, 4, 5, STORE_ITEM_MESSAGE, "notification", "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
	assert_rec(&rs, 5, 6, STORE_ITEM_MESSAGE, "notjsonrpc", "{\"a\":1}\n");
	assert_rec(&rs, 6, 7, STORE_ITEM_STDERR, "stderr", "log 2\n");
	assert_rec(&rs, 7, 8, STORE_ITEM_MESSAGE, "invalid", "half");
	assert_true(rs.v[7].incomplete);
	assert_string_equal(rs.v[7].dir, "s2c");
	assert_rec(&rs, 8, 9, STORE_ITEM_MESSAGE, "batch", "[1]\n");
	assert_rec(&rs, 9, 10, STORE_ITEM_MESSAGE, "invalid", "tail");
	assert_true(rs.v[9].incomplete);
	assert_string_equal(rs.v[0].dir, "c2s");
	assert_string_equal(rs.v[1].dir, "s2c");
	for (size_t i = 0; i < rs.n; i++) {
		assert_true(rs.v[i].t_ns >= 0);
		if (i)
			assert_true(rs.v[i].t_ns >= rs.v[i - 1].t_ns);
		if (i != 7 && i != 9)
			assert_false(rs.v[i].incomplete);
	}
	recs_free(&rs);

	get_session(fx.db, fx.session, &row);
	assert_int_equal(row.ended_wall, 1700000001000000LL);
	assert_int_equal(row.duration_ns, 1000000000LL);
	assert_int_equal(row.exit_status, 0);
	assert_int_equal(row.msgs_c2s, 5);
	assert_int_equal(row.msgs_s2c, 3);
	assert_int_equal(row.stderr_lines, 2);
	assert_int_equal(row.gap_messages, 0);
	store_session_row_release(&row);
	fixture_close(&fx);
}

/* ---- several producers ---- */

struct producer {
	struct writer *w;
	enum writer_stream s;
	int lines;
	uint32_t seed;
	size_t pad; /* extra bytes per line */
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Puts lines "S<stream> <i> <pad>\n" in random pieces (lines split across chunks). */
static void *produce(void *arg)
{
	struct producer *pr = arg;
	struct mt_buf b = MT_BUF_INIT;
	size_t off = 0;

	for (int i = 0; i < pr->lines; i++) {
		mt_buf_printf(&b, "S%d %d ", (int)pr->s, i);
		for (size_t k = 0; k < pr->pad; k++)
			mt_buf_putc(&b, (char)('a' + k % 26));
		mt_buf_putc(&b, '\n');
		/* Hand over a random prefix of what is pending. */
		size_t avail = b.len - off;
		size_t n = 1 + rnd(&pr->seed) % (avail + 8);
		if (n > avail)
			n = avail;
		writer_put(pr->w, pr->s, b.data + off, n);
		off += n;
		if (off > 65536) {
			memmove(b.data, b.data + off, b.len - off);
			b.len -= off;
			off = 0;
		}
	}
	if (b.len > off)
		writer_put(pr->w, pr->s, b.data + off, b.len - off);
	writer_put(pr->w, pr->s, NULL, 0);
	mt_buf_release(&b);
	return NULL;
}

/* Every line of every producer is stored once, in its stream's order, with dense seqs. */
static void check_streams(const struct recs *rs, const struct producer *pr, size_t nprod)
{
	int next[WS_COUNT] = {0, 0, 0};
	size_t total = 0;

	for (size_t p = 0; p < nprod; p++)
		total += (size_t)pr[p].lines;
	assert_int_equal(rs->n, total);
	for (size_t i = 0; i < rs->n; i++) {
		const struct rec *r = &rs->v[i];
		int s = -1, k = -1;
		assert_int_equal(r->seq, (int64_t)i + 1);
		assert_int_not_equal(r->type, STORE_ITEM_GAP);
		assert_false(r->incomplete);
		if (sscanf(r->raw, "S%d %d ", &s, &k) != 2)
			fail_msg("row %zu: '%s'", i, r->raw);
		assert_true(s >= 0 && s < WS_COUNT);
		if (k != next[s])
			fail_msg("stream %d: line %d where %d was due (seq %lld)", s, k, next[s],
				 (long long)r->seq);
		next[s]++;
		assert_string_equal(r->dir, s == WS_C2S ? "c2s" : s == WS_S2C ? "s2c" : "stderr");
		assert_int_equal(r->type, s == WS_STDERR ? STORE_ITEM_STDERR : STORE_ITEM_MESSAGE);
		assert_int_equal(r->raw[r->len - 1], '\n');
	}
	for (size_t p = 0; p < nprod; p++)
		assert_int_equal(next[pr[p].s], pr[p].lines);
}

static void test_three_threads(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct producer pr[3];
	pthread_t th[3];
	struct recs rs;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.batch_rows = 100;
	o.batch_ms = 1;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	for (int i = 0; i < 3; i++) {
		pr[i] = (struct producer){w, (enum writer_stream)i, 3000, 1234u + (uint32_t)i, 10};
		assert_int_equal(pthread_create(&th[i], NULL, produce, &pr[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.stored_messages, 6000);
	assert_int_equal(stats.stored_stderr, 3000);
	assert_int_equal(stats.lost_messages, 0);
	assert_true(stats.commits >= 1);

	load(fx.db, fx.session, &rs);
	check_streams(&rs, pr, 3);
	recs_free(&rs);
	fixture_close(&fx);
}

/* A 4 KiB queue and two fast producers: they wait, and nothing is lost. */
static void test_backpressure(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct producer pr[2];
	pthread_t th[2];
	struct recs rs;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	pr[0] = (struct producer){w, WS_C2S, 15000, 99, 90};
	pr[1] = (struct producer){w, WS_S2C, 15000, 77, 90};
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, produce, &pr[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.stored_messages, 30000);
	assert_int_equal(stats.lost_messages, 0);
	assert_int_equal(stats.lost_bytes, 0);
	assert_true(stats.waits > 0); /* 3 MB through 4 KiB: the producers had to wait */

	load(fx.db, fx.session, &rs);
	check_streams(&rs, pr, 2);
	recs_free(&rs);
	fixture_close(&fx);
}

/* One chunk larger than the whole queue still goes through. */
static void test_chunk_above_queue(void **state)
{
	const size_t big = 64 * 1024;
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct recs rs;
	struct writer *w;
	char *p = malloc(big);

	(void)state;
	assert_non_null(p);
	memset(p, 'x', big);
	p[big - 1] = '\n';
	fixture_open(&fx);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_C2S, "a\n");
	writer_put(w, WS_C2S, p, big);
	writer_put(w, WS_C2S, p, big);
	put_str(w, WS_C2S, "b\n");
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.stored_messages, 4);
	load(fx.db, fx.session, &rs);
	assert_int_equal(rs.n, 4);
	assert_int_equal(rs.v[1].len, big);
	assert_memory_equal(rs.v[2].raw, p, big);
	assert_rec(&rs, 3, 4, STORE_ITEM_MESSAGE, "invalid", "b\n");
	recs_free(&rs);
	fixture_close(&fx);
	free(p);
}

/* ---- what the writer learns on the way ---- */

static void test_initialize_fills_session(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct store_session_row row;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_C2S,
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
		"\"protocolVersion\":\"2025-03-26\",\"capabilities\":{\"sampling\":{},"
		"\"roots\":{\"listChanged\":true}},\"clientInfo\":{\"name\":\"test-client\","
		"\"version\":\"1.2.3\"}}}\n");
	/* A response to another id says nothing about the server. */
	put_str(w, WS_S2C,
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":\"1999-01-01\","
		"\"capabilities\":{},\"serverInfo\":{\"name\":\"wrong\",\"version\":\"0\"}}}\n");
	put_str(w, WS_S2C,
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\","
		"\"capabilities\":{\"tools\":{\"listChanged\":false},\"logging\":{}},"
		"\"serverInfo\":{\"name\":\"test-server\",\"version\":\"9.8\"}}}\n");
	put_str(w, WS_C2S, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
	assert_int_equal(writer_finish(w, NULL, NULL), 0);

	get_session(fx.db, fx.session, &row);
	assert_string_equal(row.protocol_version, "2025-06-18");
	assert_string_equal(row.client_name, "test-client");
	assert_string_equal(row.client_version, "1.2.3");
	assert_string_equal(row.server_name, "test-server");
	assert_string_equal(row.server_version, "9.8");
	assert_string_equal(row.client_caps, "{\"roots\":{\"listChanged\":true},\"sampling\":{}}");
	assert_string_equal(row.server_caps, "{\"logging\":{},\"tools\":{\"listChanged\":false}}");
	assert_int_equal(row.msgs_c2s, 2);
	assert_int_equal(row.msgs_s2c, 2);
	assert_int_equal(row.ended_wall, 0); /* no end given */
	store_session_row_release(&row);
	fixture_close(&fx);
}

/* A method name with escapes is still initialize; capabilities that are not an
 * object are not capabilities (no "null" text in the row). */
static void test_initialize_escaped(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct store_session_row row;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_C2S,
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"\\u0069nitialize\",\"params\":{"
		"\"protocolVersion\":\"2025-03-26\",\"capabilities\":null,"
		"\"clientInfo\":{\"name\":\"esc\",\"version\":\"1\"}}}\n");
	assert_int_equal(writer_finish(w, NULL, NULL), 0);
	get_session(fx.db, fx.session, &row);
	assert_string_equal(row.client_name, "esc");
	assert_string_equal(row.protocol_version, "2025-03-26");
	assert_null(row.client_caps);
	store_session_row_release(&row);
	fixture_close(&fx);
}

/* The client's request alone: its version stands until a server answers. */
static void test_initialize_unanswered(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct store_session_row row;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_C2S,
		"{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":{"
		"\"protocolVersion\":\"2024-11-05\",\"clientInfo\":{\"name\":\"c\"}}}\n");
	/* Same id digits, but a number: not the answer. */
	put_str(w, WS_S2C,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"serverInfo\":"
		"{\"name\":\"no\"}}}\n");
	assert_int_equal(writer_finish(w, NULL, NULL), 0);
	get_session(fx.db, fx.session, &row);
	assert_string_equal(row.protocol_version, "2024-11-05");
	assert_string_equal(row.client_name, "c");
	assert_null(row.client_version);
	assert_null(row.client_caps);
	assert_null(row.server_name);
	store_session_row_release(&row);
	fixture_close(&fx);
}

/* ---- pairing answers with requests ---- */

struct line {
	enum writer_stream s;
	const char *text;
};

/* Put the lines through a writer; return "seq:request_seq;..." from the file (caller frees). */
static char *pairs_of(const struct line *v, size_t n)
{
	struct fixture fx;
	struct writer_opts o;
	struct mt_buf out = MT_BUF_INIT;
	struct writer *w;
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;

	fixture_open(&fx);
	writer_opts_default(&o);
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	for (size_t i = 0; i < n; i++)
		put_str(w, v[i].s, v[i].text);
	assert_int_equal(writer_finish(w, NULL, NULL), 0);
	assert_int_equal(sqlite3_open_v2(fx.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT m.seq, m.request_seq, m.t_ns - q.t_ns FROM message m"
					    " LEFT JOIN message q ON q.seq = m.request_seq"
					    " ORDER BY m.seq",
					    -1, &q, NULL),
			 SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (sqlite3_column_type(q, 1) == SQLITE_NULL) {
			mt_buf_printf(&out, "%d:-;", sqlite3_column_int(q, 0));
			continue;
		}
		mt_buf_printf(&out, "%d:%d;", sqlite3_column_int(q, 0), sqlite3_column_int(q, 1));
		assert_true(sqlite3_column_int64(q, 2) >= 0); /* answers come after requests */
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	fixture_close(&fx);
	return out.data;
}

static void test_pairing(void **state)
{
	static const struct line v[] = {
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n"},
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"tools/call\"}\n"},
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}\n"},
		/* 4: an answer in the same direction answers nothing */
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n"},
		/* 5, 6: 1 and "1" are different ids */
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"},
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"error\":{\"code\":-32601}}\n"},
		/* 7: a second answer to id 1 */
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"},
		/* 8, 9: a server-initiated request and the client's answer */
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}\n"},
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"roots\":[]}}\n"},
		/* 10: null ids pair with nothing */
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700}}\n"},
		/* 11, 12: an id reused after its answer pairs again */
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"},
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"},
		/* 13, 14: a stderr line takes a seq, the notification pairs with nothing */
		{WS_STDERR, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n"},
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n"},
		/* 15: the open request 3 is answered at last */
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n"},
	};
	char *got;

	(void)state;
	got = pairs_of(v, sizeof(v) / sizeof(v[0]));
	assert_string_equal(got, "1:-;2:-;3:-;4:-;5:1;6:2;7:-;8:-;9:8;10:-;11:-;12:11;14:-;15:3;");
	free(got);
}

/*
 * A string id is the same id however it is escaped ("a\u0062" is "ab"), and
 * different ids stay different ("x" is not "\"x\"").
 */
static void test_pairing_escaped_ids(void **state)
{
	static const struct line v[] = {
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0062\",\"method\":\"m\"}\n"},
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":\"ab\",\"result\":{}}\n"},
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":\"cd\",\"method\":\"m\"}\n"},
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":\"c\\u0064\",\"result\":{}}\n"},
		{WS_C2S, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"m\"}\n"},
		{WS_S2C, "{\"jsonrpc\":\"2.0\",\"id\":\"\\\"x\\\"\",\"result\":{}}\n"},
	};
	char *got;
	int same;

	(void)state;
	got = pairs_of(v, sizeof(v) / sizeof(v[0]));
	same = strcmp(got, "1:-;2:1;3:-;4:3;5:-;6:-;") == 0;
	if (!same)
		print_error("pairs: %s, expected 1:-;2:1;3:-;4:3;5:-;6:-;\n", got);
	free(got);
	assert_true(same);
}

/* ---- limits ---- */

static void test_oversized_becomes_gap(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct store_session_row row;
	struct recs rs;
	struct writer *w;
	char big[200];

	(void)state;
	memset(big, 'B', sizeof(big));
	fixture_open(&fx);
	writer_opts_default(&o);
	o.max_message = 64;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_C2S, "short\n");
	writer_put(w, WS_C2S, big, 70);
	writer_put(w, WS_C2S, big, 130);
	put_str(w, WS_C2S, "\nafter\n");
	writer_put(w, WS_S2C, big, 63);
	put_str(w, WS_S2C, "\n"); /* exactly 64: kept */
	writer_put(w, WS_STDERR, big, 100);
	put_str(w, WS_STDERR, "\n");
	writer_put(w, WS_S2C, big, 100); /* unterminated at the end */
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.lost_messages, 3);
	assert_int_equal(stats.lost_bytes, 201 + 101 + 100);
	assert_int_equal(stats.stored_messages, 3);

	load(fx.db, fx.session, &rs);
	assert_int_equal(rs.n, 6);
	assert_rec(&rs, 0, 1, STORE_ITEM_MESSAGE, "invalid", "short\n");
	assert_int_equal(rs.v[1].type, STORE_ITEM_GAP);
	assert_int_equal(rs.v[1].seq, 2);
	assert_string_equal(rs.v[1].dir, "c2s");
	assert_int_equal(rs.v[1].gap_messages, 1);
	assert_int_equal(rs.v[1].gap_bytes, 201);
	assert_non_null(rs.v[1].reason);
	assert_non_null(strstr(rs.v[1].reason, "201"));
	assert_rec(&rs, 2, 3, STORE_ITEM_MESSAGE, "invalid", "after\n");
	assert_int_equal(rs.v[3].type, STORE_ITEM_MESSAGE);
	assert_int_equal(rs.v[3].seq, 4);
	assert_int_equal(rs.v[3].len, 64);
	assert_int_equal(rs.v[4].type, STORE_ITEM_GAP);
	assert_int_equal(rs.v[4].seq, 5);
	assert_string_equal(rs.v[4].dir, "stderr");
	assert_int_equal(rs.v[4].gap_bytes, 101);
	assert_int_equal(rs.v[5].type, STORE_ITEM_GAP);
	assert_int_equal(rs.v[5].seq, 6);
	assert_string_equal(rs.v[5].dir, "s2c");
	assert_int_equal(rs.v[5].gap_bytes, 100);
	recs_free(&rs);

	get_session(fx.db, fx.session, &row);
	assert_int_equal(row.gap_messages, 3);
	assert_int_equal(row.gap_bytes, 402);
	store_session_row_release(&row);
	fixture_close(&fx);
}

/* With sync, a message is committed when writer_put returns. */
static void test_sync(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct writer *w;
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.sync = 1;
	o.batch_ms = 10000; /* the timer would never commit in time */
	o.batch_rows = 100000;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	assert_int_equal(sqlite3_open_v2(fx.db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM message", -1, &q, NULL), SQLITE_OK);
	for (int i = 1; i <= 20; i++) {
		put_str(w, WS_C2S, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(q, 0), i);
		sqlite3_reset(q);
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.stored_messages, 20);
	assert_true(stats.commits >= 20);
	fixture_close(&fx);
}

/* Without a store the writer only drains, and counts everything as not stored. */
static void test_no_store(void **state)
{
	struct writer_opts o;
	struct writer_stats stats;
	struct writer *w;

	(void)state;
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	w = writer_start(NULL, 0, mt_mono_ns(), &o, NULL);
	for (int i = 0; i < 2000; i++)
		put_str(w, i % 2 ? WS_S2C : WS_C2S, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
	put_str(w, WS_STDERR, "partial");
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.stored_messages, 0);
	assert_int_equal(stats.stored_stderr, 0);
	assert_int_equal(stats.lost_messages, 2001);
	assert_int_equal(stats.lost_bytes, 2000 * 31 + 7);
}

/* The defaults are the ones writer.h documents. */
static void test_opts_default(void **state)
{
	struct writer_opts o;

	(void)state;
	memset(&o, 0x55, sizeof(o));
	writer_opts_default(&o);
	assert_int_equal(o.batch_rows, 512);
	assert_int_equal(o.batch_ms, 5);
	assert_int_equal(o.max_message, 256u << 20);
	assert_int_equal(o.sync, 0);
	assert_non_null(o.label);
	assert_int_equal(o.queue_bytes, 1u << 20);
	assert_int_equal(o.queue_lines, 4096);
	assert_int_equal(o.hold_bytes, 16u << 20);
}

/*
 * batch_rows bounds a transaction: 200 rows that reach the writer in one go
 * are committed in batches of at most 10, not as one transaction.
 */
static void test_batch_rows(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct writer *w;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.batch_rows = 10;
	o.batch_ms = 1000;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	for (int i = 0; i < 200; i++)
		put_str(w, WS_C2S, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	fixture_close(&fx);
	assert_int_equal(stats.stored_messages, 200);
	if (stats.commits < 20)
		fail_msg("200 rows with batch_rows 10 took %llu commits", (unsigned long long)stats.commits);
}

/* ---- writer_stop ---- */

struct blocked {
	struct writer *w;
	int lines;
	int done; /* under mu */
	pthread_mutex_t mu;
};

static void *blocked_produce(void *arg)
{
	struct blocked *b = arg;
	char line[128];

	for (int i = 0; i < b->lines; i++) {
		int n = snprintf(line, sizeof(line),
				 "{\"jsonrpc\":\"2.0\",\"method\":\"n\","
				 "\"params\":{\"i\":%d,\"pad\":\"%060d\"}}\n",
				 i, i);
		writer_put(b->w, WS_C2S, line, (size_t)n);
	}
	pthread_mutex_lock(&b->mu);
	b->done = 1;
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static int blocked_done(struct blocked *b)
{
	int d;

	pthread_mutex_lock(&b->mu);
	d = b->done;
	pthread_mutex_unlock(&b->mu);
	return d;
}

/*
 * Another connection holds the write lock, so the writer thread waits for it
 * and the producer goes on up to the hold (8 KiB here), then waits for room.
 * writer_stop() must let it return at once; once the lock is gone everything
 * is stored.
 */
static void test_stop_releases_producer(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct blocked b;
	struct recs rs;
	pthread_t th;
	sqlite3 *lock = NULL;
	int waited_ms = 0;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	o.hold_bytes = 8192;
	o.batch_ms = 1;
	b.lines = 1000;
	b.done = 0;
	pthread_mutex_init(&b.mu, NULL);
	assert_int_equal(sqlite3_open(fx.db, &lock), SQLITE_OK);
	assert_int_equal(sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	b.w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	assert_int_equal(pthread_create(&th, NULL, blocked_produce, &b), 0);
	usleep(300 * 1000);
	/* 100 KB through an 8 KiB hold whose writer is stuck: the producer waits. */
	assert_false(blocked_done(&b));
	writer_stop(b.w);
	while (!blocked_done(&b) && waited_ms < 2000) {
		usleep(10 * 1000);
		waited_ms += 10;
	}
	int released = blocked_done(&b);
	/* Let the writer go on, whatever happened, so that the test can clean up. */
	sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(lock);
	assert_int_equal(pthread_join(th, NULL), 0);
	int rc = writer_finish(b.w, NULL, &stats);
	pthread_mutex_destroy(&b.mu);
	if (!released)
		fail_msg("writer_stop did not release the producer within 2 s");
	assert_int_equal(rc, 0);
	assert_int_equal(stats.stored_messages, 1000);
	assert_int_equal(stats.lost_messages, 0);
	assert_true(stats.waits > 0);
	load(fx.db, fx.session, &rs);
	assert_int_equal(rs.n, 1000);
	assert_int_equal(rs.v[999].seq, 1000);
	recs_free(&rs);
	fixture_close(&fx);
}

/*
 * The lock held elsewhere is waited out as long as it takes (here 1.5 s, far
 * beyond the writer's 50 ms waits), and meanwhile the relay does not wait: a
 * producer puts 1000 lines (100 KB) through a 4 KiB queue while the lock is
 * held, waiting at most once (until the writer meets the lock and says so).
 * When the lock goes, all of it is stored in order.
 */
static void test_lock_holds_not_waits(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct blocked b;
	struct recs rs;
	pthread_t th;
	sqlite3 *lock = NULL;
	int waited_ms = 0;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	o.batch_ms = 1;
	b.lines = 1000;
	b.done = 0;
	pthread_mutex_init(&b.mu, NULL);
	b.w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	/* A first line stored: the writer is running and has committed once. */
	put_str(b.w, WS_S2C, "{\"jsonrpc\":\"2.0\",\"method\":\"first\"}\n");
	usleep(100 * 1000);
	assert_int_equal(sqlite3_open(fx.db, &lock), SQLITE_OK);
	assert_int_equal(sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(pthread_create(&th, NULL, blocked_produce, &b), 0);
	while (!blocked_done(&b) && waited_ms < 1500) {
		usleep(10 * 1000);
		waited_ms += 10;
	}
	int released = blocked_done(&b);
	usleep(1500 * 1000 - waited_ms * 1000);
	/* Nothing of the 1000 is in the file while the lock is held. */
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(lock, "SELECT count(*) FROM message", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int during = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(lock);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(writer_finish(b.w, NULL, &stats), 0);
	pthread_mutex_destroy(&b.mu);
	if (!released)
		fail_msg("the producer waited for a locked store (held data is far below the hold)");
	assert_int_equal(during, 1);
	assert_true(stats.waits <= 1);
	assert_int_equal(stats.stored_messages, 1001);
	assert_int_equal(stats.lost_messages, 0);
	load(fx.db, fx.session, &rs);
	assert_int_equal(rs.n, 1001);
	for (size_t i = 0; i < rs.n; i++)
		assert_int_equal(rs.v[i].seq, (int64_t)i + 1);
	assert_non_null(strstr(rs.v[1000].raw, "\"i\":999,"));
	recs_free(&rs);
	fixture_close(&fx);
}

/*
 * After a lock, what was held meanwhile is stored while the relay goes on: a
 * producer that keeps talking when the lock goes does not wait for the
 * backlog (8 MB here, far above the queue's 4 KB), as long as it stays under
 * --hold. The old writer made it wait until the backlog was under the queue.
 */
static void test_backlog_does_not_stall(void **state)
{
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct recs rs;
	sqlite3 *lock = NULL;
	struct writer *w;
	char line[1100];
	int n = 0;

	(void)state;
	fixture_open(&fx);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	o.batch_ms = 1;
	w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
	put_str(w, WS_S2C, "{\"jsonrpc\":\"2.0\",\"method\":\"first\"}\n");
	usleep(100 * 1000);
	assert_int_equal(sqlite3_open(fx.db, &lock), SQLITE_OK);
	assert_int_equal(sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	put_str(w, WS_S2C, "{\"jsonrpc\":\"2.0\",\"method\":\"second\"}\n");
	usleep(100 * 1000); /* the writer met the lock with it */
	for (; n < 8000; n++) {
		int len = snprintf(line, sizeof(line),
				   "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":"
				   "{\"i\":%d,\"p\":\"%01000d\"}}\n",
				   n, 0);
		writer_put(w, WS_S2C, line, (size_t)len);
	}
	sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(lock);
	/* The lock is gone: go on talking, a line a millisecond, while the
	 * backlog is stored. */
	for (; n < 8200; n++) {
		int len = snprintf(line, sizeof(line),
				   "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":"
				   "{\"i\":%d}}\n",
				   n);
		writer_put(w, WS_S2C, line, (size_t)len);
		usleep(1000);
	}
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(stats.waits, 0);
	assert_int_equal(stats.stored_messages, 8202);
	load(fx.db, fx.session, &rs);
	assert_int_equal(rs.n, 8202);
	for (size_t i = 0; i < rs.n; i++)
		assert_int_equal(rs.v[i].seq, (int64_t)i + 1);
	recs_free(&rs);
	fixture_close(&fx);
}

/*
 * writer_open on a file another connection holds locked: the call returns at
 * once (the caller, the relay, starts the server now), puts go through, and
 * when the lock goes the session is created with the start time it was given
 * and holds every line.
 */
static void test_open_locked(void **state)
{
	struct store_session_new sn = {"stdio", 1700000000123456LL, "srv --flag", "/tmp", 0, NULL, NULL};
	struct fixture fx;
	struct writer_opts o;
	struct writer_stats stats;
	struct store_session_row row;
	struct recs rs;
	sqlite3 *lock = NULL;
	struct writer *w;

	(void)state;
	fixture_open(&fx); /* makes the file, with session 1 */
	store_close(fx.st);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	assert_int_equal(sqlite3_open(fx.db, &lock), SQLITE_OK);
	assert_int_equal(sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	int64_t before = mt_mono_ns();
	w = writer_open(fx.db, &sn, mt_mono_ns(), &o, NULL);
	for (int i = 0; i < 300; i++)
		put_str(w, i % 2 ? WS_S2C : WS_C2S, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
	int64_t took = mt_mono_ns() - before;
	usleep(400 * 1000);
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(lock, "SELECT count(*) FROM session", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int sessions_during = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(lock);
	assert_int_equal(writer_finish(w, NULL, &stats), 0);
	assert_int_equal(sessions_during, 1);
	/* 300 puts without waiting for the file: well under the 400 ms it stayed locked. */
	if (took > 300 * 1000000LL)
		fail_msg("300 puts took %lld ms while the file was locked", (long long)(took / 1000000));
	assert_int_equal(stats.waits, 0);
	assert_int_equal(stats.stored_messages, 300);
	get_session(fx.db, 2, &row);
	assert_int_equal(row.started_wall, 1700000000123456LL);
	assert_string_equal(row.command, "srv --flag");
	store_session_row_release(&row);
	load(fx.db, 2, &rs);
	assert_int_equal(rs.n, 300);
	assert_int_equal(rs.v[299].seq, 300);
	recs_free(&rs);
	fixture_close(&fx);
}

/*
 * writer_give_up ends a wait for a lock that never goes: the finish returns
 * -1, counts what it could not store, and says so. In a child process, since
 * giving up is for good.
 */
static void test_give_up(void **state)
{
	struct fixture fx;
	int pfd[2], status = 0;
	pid_t pid;

	(void)state;
	fixture_open(&fx);
	assert_int_equal(pipe(pfd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct writer_opts o;
		struct writer_stats stats;
		sqlite3 *lock = NULL;
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, STDERR_FILENO);
		alarm(20);
		writer_opts_default(&o);
		if (sqlite3_open(fx.db, &lock) != SQLITE_OK ||
		    sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
			_exit(9);
		struct writer *w = writer_start(fx.st, fx.session, mt_mono_ns(), &o, NULL);
		for (int i = 0; i < 50; i++)
			put_str(w, WS_C2S, "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
		usleep(300 * 1000);
		writer_give_up();
		int rc = writer_finish(w, NULL, &stats);
		uint64_t res[3] = {(uint64_t)(rc + 10), stats.stored_messages, stats.lost_messages};
		if (write(pfd[1], res, sizeof(res)) != (ssize_t)sizeof(res))
			_exit(8);
		_exit(0);
	}
	close(pfd[1]);
	uint64_t res[3] = {0, 0, 0};
	ssize_t got = read(pfd[0], res, sizeof(res));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(got, (ssize_t)sizeof(res));
	assert_int_equal(res[0], 9); /* writer_finish returned -1 */
	assert_int_equal(res[1], 0);
	assert_int_equal(res[2], 50);
	store_close(fx.st); /* (the child had the writer; this process's copy is closed here) */
	fixture_close(&fx);
}

/* ---- a store that fails for good ---- */

struct fail_result {
	int finish_rc;
	struct writer_stats stats;
	uint64_t put_lines;
	uint64_t put_bytes;
};

struct fail_producer {
	struct writer *w;
	enum writer_stream s;
	int lines;
	int oversized;  /* every 7th line above --max-message */
	uint64_t bytes; /* put */
};

static void *fail_produce(void *arg)
{
	struct fail_producer *fp = arg;
	char line[512];

	for (int i = 0; i < fp->lines; i++) {
		int n = snprintf(line, sizeof(line),
				 "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":%d,"
				 "\"pad\":\"%0*d\"}}\n",
				 i, fp->oversized && i % 7 == 0 ? 200 : 150, i);
		writer_put(fp->w, fp->s, line, (size_t)n);
		fp->bytes += (uint64_t)n;
	}
	return NULL;
}

static off_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? sb.st_size : 0;
}

/*
 * The child: open the store, then forbid its files to grow more than room
 * bytes past their current size (RLIMIT_FSIZE; SIGXFSZ ignored, so writes fail
 * with EFBIG), and relay lines from two threads (c2s, s2c) and, with_stderr,
 * a third (stderr) through a 4 KiB queue. Writes what happened to fd and exits 0; a watchdog alarm kills
 * it if the relay hangs.
 */
static void fail_child(const char *db, int fd, off_t room, int with_stderr, int oversized)
{
	struct store_session_new sn = {"stdio", 1, "srv", "/", 1, NULL, NULL};
	struct store_session_end e = {2, 1, 0, 0, 0, NULL};
	struct fail_result res;
	struct mt_err err = {"", 0};
	struct store *st = NULL;
	struct writer_opts o;
	struct fail_producer fp[3];
	pthread_t th[2];
	struct rlimit rl;
	int64_t session;
	char *wal = mt_asprintf("%s-wal", db);

	memset(&res, 0, sizeof(res));
	alarm(120);
	signal(SIGXFSZ, SIG_IGN);
	if (store_open(db, STORE_WRITE, &st, &err) || store_session_create(st, &sn, &session, &err))
		_exit(10);
	off_t cur = file_size(db) > file_size(wal) ? file_size(db) : file_size(wal);
	free(wal);
	rl.rlim_cur = rl.rlim_max = (rlim_t)(cur + room);
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		_exit(11);
	writer_opts_default(&o);
	o.queue_bytes = 4096;
	o.batch_rows = 50;
	o.label = "fail.db";
	o.voice.say = mt_say_stderr; /* (its warning is looked for on stderr) */
	if (oversized)
		o.max_message = 230;
	struct writer *w = writer_start(st, session, mt_mono_ns(), &o, NULL);
	for (int i = 0; i < 3; i++)
		fp[i] = (struct fail_producer){w, (enum writer_stream)i,
					       i == WS_STDERR && !with_stderr ? 0 : 2000, oversized, 0};
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, fail_produce, &fp[i]) != 0)
			_exit(12);
	fail_produce(&fp[2]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	res.put_lines = (uint64_t)(fp[0].lines + fp[1].lines + fp[2].lines);
	res.put_bytes = fp[0].bytes + fp[1].bytes + fp[2].bytes;
	res.finish_rc = writer_finish(w, &e, &res.stats);
	if (write(fd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(13);
	_exit(0);
}

static int count_of(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* What the failing child did, and what its capture file holds afterwards. */
struct fail_outcome {
	struct fail_result res;
	char err_text[8192];
	uint64_t msg_rows, stderr_rows, gap_rows;
	uint64_t stored_bytes; /* of the message and stderr rows */
	int64_t last_seq;      /* the last stored message or stderr row */
	int64_t gap_seq, gap_msgs, gap_bytes;
	int seq_dense;
};

static void run_failing_store(off_t room, int with_stderr, int oversized, struct fail_outcome *out)
{
	struct recs rs;
	int pfd[2], status = 0;
	char *dir = unit_tmpdir(), *db, *errpath;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	assert_non_null(dir);
	db = mt_asprintf("%s/fail.db", dir);
	errpath = mt_asprintf("%s/stderr.txt", dir);
	assert_int_equal(pipe(pfd), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (efd < 0 || dup2(efd, STDERR_FILENO) < 0)
			_exit(9);
		close(pfd[0]);
		fail_child(db, pfd[1], room, with_stderr, oversized);
	}
	close(pfd[1]);
	ssize_t got = read(pfd[0], &out->res, sizeof(out->res));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		fail_msg("the child died of signal %d (SIGALRM: the relay hung)",
			 WIFSIGNALED(status) ? WTERMSIG(status) : -1);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(got, (ssize_t)sizeof(out->res));

	FILE *f = fopen(errpath, "r");
	assert_non_null(f);
	size_t n = fread(out->err_text, 1, sizeof(out->err_text) - 1, f);
	fclose(f);
	out->err_text[n] = '\0';

	/* The file must still be a readable capture. */
	load(db, 1, &rs);
	out->seq_dense = 1;
	for (size_t i = 0; i < rs.n; i++) {
		const struct rec *r = &rs.v[i];
		if (r->type == STORE_ITEM_GAP) {
			out->gap_rows++;
			out->gap_seq = r->seq;
			out->gap_msgs = r->gap_messages;
			out->gap_bytes = r->gap_bytes;
			continue;
		}
		out->stored_bytes += r->len;
		if (r->type == STORE_ITEM_MESSAGE)
			out->msg_rows++;
		else
			out->stderr_rows++;
		if (r->seq != out->last_seq + 1)
			out->seq_dense = 0;
		out->last_seq = r->seq;
	}
	recs_free(&rs);
	free(db);
	free(errpath);
	unit_rmdir(dir);
}

static void check_failing_store(off_t room)
{
	struct fail_outcome out;
	const struct writer_stats *st = &out.res.stats;

	run_failing_store(room, 0, 0, &out);
	/* One warning about the store, naming the file. */
	if (count_of(out.err_text, "mcptap: warning: cannot log to fail.db") != 1)
		fail_msg("stderr:\n%s", out.err_text);
	/* The finish says something was not stored; the counters add up. */
	assert_int_equal(out.res.finish_rc, -1);
	assert_true(st->lost_messages > 0);
	assert_true(st->lost_bytes > 0);
	assert_int_equal(st->stored_messages + st->stored_stderr + st->lost_messages, out.res.put_lines);
	/* What was committed is there, in dense seq order from 1. */
	assert_true(out.seq_dense);
	assert_true(out.gap_rows <= 1);
	if (out.gap_rows) {
		assert_int_equal(out.gap_msgs, (int64_t)st->lost_messages);
		assert_int_equal(out.gap_bytes, (int64_t)st->lost_bytes);
	}
	assert_int_equal(out.msg_rows + out.stderr_rows, st->stored_messages + st->stored_stderr);
}

/* No room at all: the first batch that needs the file to grow fails. */
static void test_store_fails_at_once(void **state)
{
	(void)state;
	check_failing_store(0);
}

/* Some room: a few batches are stored, then the file cannot grow. */
static void test_store_fails_later(void **state)
{
	(void)state;
	check_failing_store(256 * 1024);
}

/*
 * The gap row says where the loss began: the seq of the first row that was
 * not stored (those of the rolled-back batch included), i.e. right after the
 * last stored row.
 */
static void test_store_fail_gap_seq(void **state)
{
	struct fail_outcome out;

	(void)state;
	run_failing_store(64 * 1024, 0, 0, &out);
	assert_int_equal(out.gap_rows, 1);
	if (out.gap_seq != out.last_seq + 1)
		fail_msg("gap seq %lld, but the last stored row is seq %lld", (long long)out.gap_seq,
			 (long long)out.last_seq);
}

/*
 * With stderr lines in the batch that was rolled back, the counters split by
 * table still match the rows the file holds, and still add up.
 */
static void test_store_fail_counters(void **state)
{
	struct fail_outcome out;

	(void)state;
	run_failing_store(64 * 1024, 1, 0, &out);
	assert_int_equal(out.res.finish_rc, -1);
	if (out.msg_rows != out.res.stats.stored_messages || out.stderr_rows != out.res.stats.stored_stderr)
		fail_msg("stats say %llu messages and %llu stderr lines stored; the file holds "
			 "%llu and %llu",
			 (unsigned long long)out.res.stats.stored_messages,
			 (unsigned long long)out.res.stats.stored_stderr, (unsigned long long)out.msg_rows,
			 (unsigned long long)out.stderr_rows);
	assert_int_equal(out.res.stats.stored_messages + out.res.stats.stored_stderr +
				 out.res.stats.lost_messages,
			 out.res.put_lines);
}

/* With oversized lines (gap rows) in the failing transactions: every byte put is
 * stored or counted lost, once. */
static void test_store_fail_bytes(void **state)
{
	struct fail_outcome out;

	(void)state;
	run_failing_store(64 * 1024, 1, 1, &out);
	assert_int_equal(out.res.finish_rc, -1);
	assert_true(out.gap_rows > 0);
	assert_int_equal(out.stored_bytes + out.res.stats.lost_bytes, out.res.put_bytes);
	assert_int_equal(out.res.stats.stored_messages + out.res.stats.stored_stderr +
				 out.res.stats.lost_messages,
			 out.res.put_lines);
}

/* ---- the HTTP tap's records ---- */

/* What one run of http_records stored: the exchanges and messages, as text
 * (but their times of arrival, taken when each record was put). */
static char *http_dump(const char *db)
{
	sqlite3 *d;
	sqlite3_stmt *q;
	struct mt_buf out = MT_BUF_INIT;

	assert_int_equal(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(
			d,
			"SELECT 'X', session, seq, conn, method, target, req_headers, quote(req_body),"
			" status, resp_headers, resp_type, first_byte_ns, end_ns, outcome, error,"
			" quote(resp_body), last_event_id FROM http_exchange"
			" UNION ALL SELECT 'M', session, seq, exchange, dir, channel, kind, sse_id, replayed,"
			" raw, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM message"
			" ORDER BY 2, 3",
			-1, &q, NULL),
		SQLITE_OK);
	while (sqlite3_step(q) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(q); i++) {
			const unsigned char *v = sqlite3_column_text(q, i);
			mt_buf_printf(&out, "%s%s", i ? "|" : "", v ? (const char *)v : "~");
		}
		mt_buf_putc(&out, '\n');
	}
	sqlite3_finalize(q);
	sqlite3_close(d);
	mt_buf_putc(&out, '\0');
	return out.data;
}

/*
 * Two sessions of exchanges as the HTTP tap writes them, times given so that
 * two runs store the same rows: a POST answered by an SSE stream, whole in
 * one batch; a GET stream still open at the end; a DELETE never answered.
 */
static char *http_records(size_t batch_rows, struct writer_stats *stats)
{
	static const struct mt_hdr req[] = {
		{"Host", "127.0.0.1:8808"},
		{"Authorization", "Bearer s3cr3t-token-value"},
		{"Last-Event-ID", "e7"},
		{"Content-Type", "application/json"},
	};
	static const struct mt_hdr rsp[] = {
		{"Content-Type", "text/event-stream"},
		{"Set-Cookie", "sid=c00k1e-value; Path=/"},
	};
	static const struct mt_hdr get[] = {{"Accept", "text/event-stream"}};
	static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}";
	static const char answer[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
	static const char raw_key[16] = "0123456789abcdef";
	struct store_session_new sn = {.transport = "http",
				       .started_wall = 1,
				       .upstream = "http://u/mcp",
				       .client_addr = "127.0.0.1:1"};
	struct writer_opts o;
	struct mt_redact *r = mt_redact_new((const unsigned char *)raw_key);
	char *dir = unit_tmpdir(), *db = mt_asprintf("%s/h.db", dir), *dump;
	struct writer *w;
	int h1, h2;

	writer_opts_default(&o);
	o.batch_rows = batch_rows;
	o.batch_ms = 60000;
	o.redact = r;
	w = writer_open_shared(db, &o, NULL);
	h1 = writer_session_new(w, &sn, 0);
	h2 = writer_session_new(w, &sn, 0);
	for (int h = h1; h <= h2; h++) {
		struct writer_exchange x = {.seq = 1,
					    .conn = h,
					    .method = "POST",
					    .target = "/mcp?api_key=k3y-in-the-url&x=1",
					    .h = req,
					    .nh = 4};
		struct writer_http_msg m = {.sess = h,
					    .seq = 2,
					    .s = WS_C2S,
					    .channel = "body",
					    .exchange = 1,
					    .p = call,
					    .n = strlen(call)};
		writer_put_exchange_begin(w, h, &x);
		writer_put_msg(w, &m);
		writer_put_exchange_head(w, h, 1, 200, rsp, 2, "sse", 1500);
		m.seq = 3;
		m.s = WS_S2C;
		m.channel = "sse";
		m.sse_id = "e8";
		m.p = answer;
		m.n = strlen(answer);
		writer_put_msg(w, &m);
		writer_put_exchange_end(w, h, 1, 3000, "complete", NULL, NULL, 0);
		struct writer_exchange g = {
			.seq = 4, .conn = h, .method = "GET", .target = "/mcp", .h = get, .nh = 1};
		writer_put_exchange_begin(w, h, &g);
		writer_put_exchange_head(w, h, 4, 200, NULL, 0, "sse", 4500);
		struct writer_exchange d = {.seq = 5,
					    .conn = h,
					    .method = "DELETE",
					    .target = "/mcp",
					    .body = "x",
					    .body_len = 1};
		writer_put_exchange_begin(w, h, &d);
	}
	assert_int_equal(writer_finish(w, NULL, stats), 0);
	dump = http_dump(db);
	mt_redact_free(r);
	free(db);
	unit_rmdir(dir);
	return dump;
}

/*
 * An exchange's row is the same whether its records come in one transaction
 * (one INSERT) or across many (an INSERT, then UPDATEs); credentials in the
 * target and headers are redacted by the writer.
 */
static void test_http_exchange_rows(void **state)
{
	struct writer_stats one, many;
	char *a, *b;

	(void)state;
	a = http_records(512, &one);
	b = http_records(1, &many);
	assert_string_equal(a, b);
	assert_int_equal(one.stored_messages, 4);
	assert_int_equal(many.stored_messages, 4);
	if (one.commits > 2 || many.commits < 10)
		fail_msg("commits: %llu in one batch, %llu with batch_rows 1",
			 (unsigned long long)one.commits, (unsigned long long)many.commits);
	/* Every exchange and message, and no secret. */
	assert_null(strstr(a, "s3cr3t"));
	assert_null(strstr(a, "c00k1e"));
	assert_null(strstr(a, "k3y-in-the-url"));
	assert_non_null(strstr(a, "&x=1"));
	for (int s = 1; s <= 2; s++) {
		char want[512];
		snprintf(want, sizeof(want), "X|%d|1|%d|POST|/mcp?api_key=[redacted:", s, s);
		assert_non_null(strstr(a, want));
		snprintf(want, sizeof(want),
			 "|200|[[\"Content-Type\",\"text/event-stream\"],[\"Set-Cookie\",\"sid=[redacted:");
		assert_non_null(strstr(a, want));
		snprintf(want, sizeof(want),
			 "|sse|1500|3000|complete|~|NULL|e7\n"
			 "M|%d|2|1|c2s|body|request|~|0|{",
			 s);
		assert_non_null(strstr(a, want));
		snprintf(want, sizeof(want), "M|%d|3|1|s2c|sse|response|e8|0|{", s);
		assert_non_null(strstr(a, want));
		snprintf(want, sizeof(want),
			 "X|%d|4|%d|GET|/mcp|[[\"Accept\",\"text/event-stream\"]]|"
			 "NULL|200|[]|sse|4500|~|~|~|NULL|~\n",
			 s, s);
		assert_non_null(strstr(a, want));
		snprintf(want, sizeof(want), "X|%d|5|%d|DELETE|/mcp|[]|X'78'|~|~|~|~|~|~|~|NULL|~\n", s, s);
		assert_non_null(strstr(a, want));
	}
	free(a);
	free(b);
}

/*
 * A 2026-07-28 session has no initialize: its client is the one its first
 * request names in _meta (a later one does not change it).
 */
static void test_http_meta_client(void **state)
{
	static const char first[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\","
		"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
		"\"io.modelcontextprotocol/clientCapabilities\":{\"b\":{},\"a\":1},"
		"\"io.modelcontextprotocol/clientInfo\":{\"name\":\"agent-a\",\"version\":\"1.0\"}}}}";
	static const char later[] =
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"x\","
		"\"_meta\":{\"io.modelcontextprotocol/clientInfo\":{\"name\":\"other\",\"version\":\"9\"}}}}";
	struct store_session_new sn = {.transport = "http", .started_wall = 1};
	struct writer_opts o;
	char *dir = unit_tmpdir(), *db = mt_asprintf("%s/m.db", dir);
	struct store_session_row row;
	struct writer *w;
	int h;

	(void)state;
	writer_opts_default(&o);
	w = writer_open_shared(db, &o, NULL);
	h = writer_session_new(w, &sn, 0);
	struct writer_http_msg m = {
		.sess = h, .seq = 1, .s = WS_C2S, .channel = "body", .p = first, .n = strlen(first)};
	writer_put_msg(w, &m);
	m.seq = 2;
	m.p = later;
	m.n = strlen(later);
	writer_put_msg(w, &m);
	assert_int_equal(writer_finish(w, NULL, NULL), 0);
	get_session(db, 1, &row);
	assert_string_equal(row.client_name, "agent-a");
	assert_string_equal(row.client_version, "1.0");
	assert_string_equal(row.protocol_version, "2026-07-28");
	assert_string_equal(row.client_caps, "{\"a\":1,\"b\":{}}");
	store_session_row_release(&row);
	free(db);
	unit_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest writer[] = {
		cmocka_unit_test(test_put_order),
		cmocka_unit_test(test_three_threads),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_chunk_above_queue),
		cmocka_unit_test(test_initialize_fills_session),
		cmocka_unit_test(test_initialize_escaped),
		cmocka_unit_test(test_initialize_unanswered),
		cmocka_unit_test(test_pairing),
		cmocka_unit_test(test_pairing_escaped_ids),
		cmocka_unit_test(test_oversized_becomes_gap),
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_no_store),
		cmocka_unit_test(test_stop_releases_producer),
		cmocka_unit_test(test_lock_holds_not_waits),
		cmocka_unit_test(test_backlog_does_not_stall),
		cmocka_unit_test(test_open_locked),
		cmocka_unit_test(test_give_up),
		cmocka_unit_test(test_opts_default),
		cmocka_unit_test(test_batch_rows),
		cmocka_unit_test(test_store_fails_at_once),
		cmocka_unit_test(test_store_fails_later),
		cmocka_unit_test(test_store_fail_gap_seq),
		cmocka_unit_test(test_store_fail_counters),
		cmocka_unit_test(test_store_fail_bytes),
		cmocka_unit_test(test_http_exchange_rows),
		cmocka_unit_test(test_http_meta_client),
	};

	return cmocka_run_group_tests(writer, NULL, NULL);
}
