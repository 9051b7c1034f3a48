/*
 * test-httplog.c - what httplog stores of HTTP exchanges whose bodies come in
 * a Content-Encoding (tap/http/httplog.h), driven as the tap and pcap import
 * drive it, into a real capture file written synchronously (each record
 * committed before its call returns) and read back with SQL:
 *   - a gzip JSON response in one piece and in 1-byte pieces: the same one
 *     JSON-RPC message, its headers stored as sent (Content-Encoding kept);
 *   - a gzip SSE stream of three events, flushed after each, fed whole, in
 *     1-byte pieces and cut at awkward places: each event stored as soon as
 *     its bytes were fed (counted after every feed, before hl_end), in order;
 *     zlib's memory counted while the stream is open, given back at its end;
 *   - deflate as zlib's format and as raw deflate, x-gzip, a gzip body of two
 *     members, identity alone, a gzip body without its trailer;
 *   - corrupt data: what was decoded before kept (a JSON body's start as the
 *     exchange's body, an SSE stream's first events as messages), the rest a
 *     gap row, the error "cannot decode the gzip body: <zlib's reason>"; an
 *     SSE event cut by the failure said;
 *   - bytes not captured in a gzip SSE stream: the gap as in a plain stream,
 *     what follows (which cannot be decoded) a gap row at the end;
 *   - a decompression bomb (10 MB of zeros, gzip): a JSON body is a gap as a
 *     big plain body is, not decoded past --max-message, the memory counted
 *     staying under 256 KiB; an SSE event of it an oversized event's gap;
 *   - a coding that is not decoded (br, zstd, a list of two): kept as sent,
 *     never a message even when it reads as JSON-RPC, the error says so;
 *   - a gzip request body: its message decoded; one that cannot be decoded
 *     stored as sent and said; one too big once decoded a gap.
 * And plain exchanges, each row checked (messages, exchange, session) and
 * what hl_opts.on_end is told:
 *   - a JSON answer to a POST, whole and in pieces; an SSE answer (a chunked
 *     body's data) cut at every offset and at awkward places: each event
 *     stored once its blank line is in, not before;
 *   - a batch, a notification answered 202, a 401 page, a 500 JSON-RPC
 *     error, an exchange the client left before its response;
 *   - a session's GET stream resumed with Last-Event-ID: the event sent again
 *     flagged replayed, its DELETE;
 *   - credentials in headers and the target stored as the redactor's markers.
 */
#include "tests/unit/unit.h"

#include <sqlite3.h>
#include <zlib.h>

#include "tap/http/httplog.h"

#define GZIP 31 /* deflateInit2's windowBits: gzip */
#define ZLIB 15 /* zlib's format */
#define RAW -15 /* raw deflate */

struct fx {
	char *dir;
	char *db;
	struct writer *w;
	struct hl_log *l;
	struct mt_mem mem;
	int64_t conn;
	struct mt_buf done; /* what on_end was told: one line per exchange (fx_open_ex) */
};

static void on_end(void *ctx, const struct hl_done *d);

/* The fixture with a redactor (NULL: none) and, when ends is set, on_end told. */
static void fx_open_ex(struct fx *f, size_t max_message, const struct mt_redact *red, int ends)
{
	struct writer_opts o;
	struct hl_opts lo;

	memset(f, 0, sizeof(*f));
	f->dir = unit_tmpdir();
	assert_non_null(f->dir);
	f->db = mt_asprintf("%s/h.db", f->dir);
	writer_opts_default(&o);
	o.sync = 1; /* (every record committed when its put returns: read at once) */
	o.label = "'test'";
	o.redact = red;
	f->w = writer_open_shared(f->db, &o, NULL);
	memset(&lo, 0, sizeof(lo));
	lo.w = f->w;
	lo.upstream = "http://127.0.0.1:3001/mcp";
	lo.max_message = max_message;
	lo.mem = &f->mem;
	if (ends) {
		lo.on_end = on_end;
		lo.on_end_ctx = f;
	}
	f->l = hl_new(&lo);
	f->conn = hl_conn_new(f->l);
}

static void fx_open_max(struct fx *f, size_t max_message)
{
	fx_open_ex(f, max_message, NULL, 0);
}

static void fx_open(struct fx *f)
{
	fx_open_max(f, 1u << 20);
}

/* The log and the writer finished: what was counted is all given back. */
static void fx_finish(struct fx *f)
{
	hl_free(f->l);
	f->l = NULL;
	assert_int_equal(writer_finish(f->w, NULL, NULL), 0);
	assert_int_equal(f->mem.used, 0);
}

static void fx_free(struct fx *f)
{
	mt_buf_release(&f->done);
	free(f->db);
	unit_rmdir(f->dir);
}

/* The rows a query gives, "|" between columns, "\n" after each row. */
static char *q(struct fx *f, const char *sql)
{
	return unit_rows(f->db, sql);
}

/* The query's rows are want. */
static void q_is(struct fx *f, const char *sql, const char *want)
{
	char *got = q(f, sql);

	assert_string_equal(got, want);
	free(got);
}

static int count_messages(struct fx *f)
{
	char *got = q(f, "select count(*) from message");
	int n = (int)strtol(got, NULL, 10);

	free(got);
	return n;
}

#define MSGS                                                                                  \
	"select seq, dir, channel, kind, coalesce(sse_id, '~'), exchange, cast(raw as text) " \
	"from message order by seq"
#define GAPS "select seq, dir, bytes, reason from gap order by seq"
#define XCHG                                                                                    \
	"select seq, status, resp_type, resp_headers, coalesce(cast(resp_body as text), '~'), " \
	"outcome, coalesce(error, '~') from http_exchange order by seq"

/* A compressed buffer: data[len]; ends[i] where piece i's flushed bytes end. */
struct zout {
	unsigned char *data;
	size_t len;
	size_t ends[8];
};

/*
 * The n pieces compressed in one stream (bits: GZIP, ZLIB or RAW), each flushed
 * (Z_SYNC_FLUSH: a server writing each event at once), the last finishing it.
 */
static void squeeze(int bits, const char *const *pieces, size_t n, struct zout *z)
{
	z_stream s;
	size_t cap = 1024;

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		cap += compressBound(strlen(pieces[i])) + 64;
	memset(&s, 0, sizeof(s));
	assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z->data = malloc(cap);
	assert_non_null(z->data);
	s.next_out = z->data;
	s.avail_out = (uInt)cap;
	for (size_t i = 0; i < n; i++) {
		s.next_in = (Bytef *)pieces[i];
		s.avail_in = (uInt)strlen(pieces[i]);
		int rc = deflate(&s, i + 1 == n ? Z_FINISH : Z_SYNC_FLUSH);
		assert_int_equal(rc, i + 1 == n ? Z_STREAM_END : Z_OK);
		assert_int_equal(s.avail_in, 0);
		z->ends[i] = s.total_out;
	}
	z->len = s.total_out;
	deflateEnd(&s);
}

static void squeeze1(int bits, const char *text, struct zout *z)
{
	squeeze(bits, &text, 1, z);
}

/* The buffer in hex (a static buffer, for SQL). */
static const char *hex(const struct zout *z)
{
	static char out[8192];

	assert_true(z->len * 2 < sizeof(out));
	for (size_t i = 0; i < z->len; i++)
		snprintf(out + 2 * i, 3, "%02x", z->data[i]);
	return out;
}

/* A POST of body (len bytes) with its headers, and its exchange. */
static struct hl_exch *post_h(struct fx *f, const char *body, size_t len, const struct mt_hdr *h, size_t nh)
{
	struct hl_request r;

	memset(&r, 0, sizeof(r));
	r.conn = f->conn;
	r.client_addr = "127.0.0.1:40000";
	r.method = "POST";
	r.target = "/mcp";
	r.h = h;
	r.nh = nh;
	r.body = body;
	r.body_len = len;
	return hl_request(f->l, &r);
}

static const struct mt_hdr req_h[] = {
	{"Host", "127.0.0.1:3001"},
	{"Content-Type", "application/json"},
	{"Accept", "application/json, text/event-stream"},
};

#define CALL "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"
#define ANSWER                                                                                \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":" \
	"\"hello hello hello hello hello\"}]}}"

static struct hl_exch *post(struct fx *f)
{
	return post_h(f, CALL, strlen(CALL), req_h, 3);
}

/* A response head: Content-Type ctype, Content-Encoding coding (NULL: none). */
static void head(struct fx *f, struct hl_exch *x, const char *ctype, const char *coding)
{
	struct mt_hdr h[3] = {
		{"Content-Type", ctype}, {"Content-Encoding", coding}, {"Vary", "Accept-Encoding"}};

	if (coding)
		hl_response_head(f->l, x, 200, h, 3);
	else
		hl_response_head(f->l, x, 200, h, 1);
}

/* p's n bytes as the body, in pieces of piece bytes (0: one). */
static void feed(struct fx *f, struct hl_exch *x, const void *p, size_t n, size_t piece)
{
	const char *c = p;

	while (n) {
		size_t k = piece && piece < n ? piece : n;
		hl_response_body(f->l, x, c, k);
		c += k;
		n -= k;
	}
}

/* One JSON response, its body compressed as bits and labelled coding, fed in pieces. */
static void json_run(int bits, const char *coding, size_t piece)
{
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	char want[1024];

	fx_open(&f);
	squeeze1(bits, ANSWER, &z);
	x = post(&f);
	head(&f, x, "application/json", coding);
	feed(&f, x, z.data, z.len, piece);
	/* (A JSON body is a message at its end.) */
	assert_int_equal(count_messages(&f), 1);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, MSGS,
	     "2|c2s|body|request|~|1|" CALL "\n"
	     "3|s2c|body|response|~|1|" ANSWER "\n");
	snprintf(want, sizeof(want),
		 "1|200|json|[[\"Content-Type\",\"application/json\"],[\"Content-Encoding\",\"%s\"],"
		 "[\"Vary\",\"Accept-Encoding\"]]|~|complete|~\n",
		 coding);
	q_is(&f, XCHG, want);
	q_is(&f, GAPS, "");
	fx_finish(&f);
	fx_free(&f);
	free(z.data);
}

/* A gzip JSON body: one message, whole or in 1-byte pieces; headers stored as sent. */
static void test_gzip_json(void **state)
{
	(void)state;
	json_run(GZIP, "gzip", 0);
	json_run(GZIP, "gzip", 1);
	json_run(GZIP, "gzip", 7);
	json_run(GZIP, "x-gzip", 0);
	json_run(GZIP, "GZIP", 3);
}

/* deflate: zlib's format, and raw deflate as some servers send it. */
static void test_deflate_json(void **state)
{
	(void)state;
	json_run(ZLIB, "deflate", 0);
	json_run(ZLIB, "deflate", 1);
	json_run(RAW, "deflate", 0);
	json_run(RAW, "deflate", 1);
	json_run(RAW, "deflate", 2);
	/* (gzip's auto-detection reads zlib's format too.) */
	json_run(ZLIB, "gzip", 1);
}

#define EV1                                                                                         \
	"id: e1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"," \
	"\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"
#define EV2                                                                                    \
	"id: e2\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"notifications/message\"," \
	"\"params\":{\"level\":\"info\",\"data\":\"x\"}}\r\n\r\n"
#define EV3 "id: e3\ndata: " ANSWER "\n\n"

#define SSE_MSGS                                                                                   \
	"2|c2s|body|request|~|1|" CALL "\n"                                                        \
	"3|s2c|sse|notification|e1|1|{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","  \
	"\"params\":{\"progressToken\":1,\"progress\":1}}\n"                                       \
	"4|s2c|sse|notification|e2|1|{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/message\"," \
	"\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n"                                        \
	"5|s2c|sse|response|e3|1|" ANSWER "\n"

/*
 * The three events compressed, each flushed, fed cut at the offsets cuts
 * (ascending, 0-terminated; none: in 1-byte pieces when bytewise). After
 * every feed, each event whose bytes were all fed is stored, and none whose
 * bytes had not begun.
 */
static void sse_run(const size_t *cuts, int bytewise)
{
	static const char *const ev[] = {EV1, EV2, EV3};
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	size_t at = 0, ci = 0, open_mem = 0;

	fx_open(&f);
	squeeze(GZIP, ev, 3, &z);
	x = post(&f);
	head(&f, x, "text/event-stream", "gzip");
	while (at < z.len) {
		size_t to = bytewise ? at + 1 : cuts[ci] && cuts[ci] < z.len ? cuts[ci++] : z.len;
		int done = 0, begun = 0, n;
		hl_response_body(f.l, x, (const char *)z.data + at, to - at);
		at = to;
		for (int i = 0; i < 3; i++) {
			done += z.ends[i] <= at;
			begun += (i ? z.ends[i - 1] : 0) < at;
		}
		n = count_messages(&f) - 1; /* (the request's) */
		if (n < done || n > begun)
			fail_msg("after %zu of %zu bytes: %d events stored, %d to %d expected", at, z.len, n,
				 done, begun);
		if (at < z.len && f.mem.used > open_mem)
			open_mem = f.mem.used;
	}
	/* zlib's state and window were counted while the stream was open (fed in
	 * more than one piece); its end gave them back. */
	if (bytewise || cuts[0])
		assert_true(open_mem > f.mem.used + 32 * 1024);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, MSGS, SSE_MSGS);
	q_is(&f, "select resp_type, outcome, coalesce(error, '~') from http_exchange", "sse|complete|~\n");
	q_is(&f, GAPS, "");
	fx_finish(&f);
	fx_free(&f);
	free(z.data);
}

static void test_gzip_sse(void **state)
{
	static const size_t none[] = {0};
	static const size_t awkward[] = {1, 9, 10, 11, 40, 41, 97, 130, 131, 170, 171, 0};
	struct zout z;
	static const char *const ev[] = {EV1, EV2, EV3};
	size_t around[16], n = 0;

	(void)state;
	sse_run(none, 0);
	sse_run(none, 1);
	sse_run(awkward, 0);
	/* Cut just before, at and after each event's flushed end. */
	squeeze(GZIP, ev, 3, &z);
	for (int i = 0; i < 2; i++) {
		around[n++] = z.ends[i] - 2;
		around[n++] = z.ends[i] - 1;
		around[n++] = z.ends[i];
		around[n++] = z.ends[i] + 1;
	}
	around[n] = 0;
	free(z.data);
	sse_run(around, 0);
}

/* Two gzip members one after the other (RFC 1952 2.2): one body. */
static void test_gzip_members(void **state)
{
	struct fx f;
	struct zout a, b;
	struct hl_exch *x;
	size_t half = strlen(ANSWER) / 2;
	char first[512];

	(void)state;
	snprintf(first, sizeof(first), "%.*s", (int)half, ANSWER);
	squeeze1(GZIP, first, &a);
	squeeze1(GZIP, ANSWER + half, &b);
	for (size_t piece = 0; piece < 3; piece++) {
		fx_open(&f);
		x = post(&f);
		head(&f, x, "application/json", "gzip");
		feed(&f, x, a.data, a.len, piece);
		feed(&f, x, b.data, b.len, piece);
		hl_end(f.l, x, "complete", NULL);
		q_is(&f, "select kind, cast(raw as text) from message where dir = 's2c'",
		     "response|" ANSWER "\n");
		q_is(&f, "select coalesce(error, '~') from http_exchange", "~\n");
		fx_finish(&f);
		fx_free(&f);
	}
	free(a.data);
	free(b.data);
}

/* identity alone is no coding; a gzip body without its trailer is decoded and said short. */
static void test_identity_and_short(void **state)
{
	struct fx f;
	struct zout z;
	struct hl_exch *x;

	(void)state;
	fx_open(&f);
	x = post(&f);
	head(&f, x, "application/json", "identity");
	feed(&f, x, ANSWER, strlen(ANSWER), 0);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select kind from message where dir = 's2c'", "response\n");
	q_is(&f, "select coalesce(error, '~') from http_exchange", "~\n");
	fx_finish(&f);
	fx_free(&f);

	fx_open(&f);
	squeeze1(GZIP, ANSWER, &z);
	x = post(&f);
	head(&f, x, "application/json", "gzip");
	feed(&f, x, z.data, z.len - 8, 0); /* (no CRC and length) */
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select kind, cast(raw as text) from message where dir = 's2c'", "response|" ANSWER "\n");
	q_is(&f, "select coalesce(error, '~') from http_exchange",
	     "the gzip body ended before its compressed data did\n");
	fx_finish(&f);
	fx_free(&f);
	free(z.data);
}

/* The block that begins at off made invalid (BTYPE 11: "invalid block type"). */
static void corrupt(struct zout *z, size_t off)
{
	assert_true(off < z->len);
	z->data[off] |= 0x06;
}

/* A JSON body corrupt half way: its first half kept, the rest a gap, the error says why. */
static void test_corrupt_json(void **state)
{
	static const char *const parts[] = {"{\"jsonrpc\":\"2.0\",\"id\":2,", "\"result\":{}}"};
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	char want[512];

	(void)state;
	squeeze(GZIP, parts, 2, &z);
	corrupt(&z, z.ends[0]);
	for (size_t piece = 0; piece < 2; piece++) {
		fx_open(&f);
		x = post(&f);
		head(&f, x, "application/json", "gzip");
		feed(&f, x, z.data, z.len, piece);
		hl_end(f.l, x, "complete", NULL);
		q_is(&f, "select count(*) from message where dir = 's2c'", "0\n");
		q_is(&f, "select cast(resp_body as text), outcome, error from http_exchange",
		     "{\"jsonrpc\":\"2.0\",\"id\":2,|complete|cannot decode the gzip body: invalid "
		     "block type\n");
		/* (The byte of the bad block's header was read: what follows it is not.) */
		snprintf(want, sizeof(want),
			 "3|s2c|%zu|cannot decode the gzip body: invalid block type: %zu bytes of "
			 "it (as sent) are not stored\n",
			 z.len - z.ends[0] - 1, z.len - z.ends[0] - 1);
		q_is(&f, GAPS, want);
		fx_finish(&f);
		fx_free(&f);
	}
	free(z.data);
}

/*
 * A gzip SSE stream corrupt inside its third event: the first two stored, the
 * third lost with the rest, said at once (a gap row, before hl_end) and at the
 * end for what came after; the caller's error and the decoder's both said.
 */
static void test_corrupt_sse(void **state)
{
	static const char ev3a[] = "id: e3\ndata: {\"jsonrpc\":";
	static const char *const ev[] = {EV1, EV2, ev3a, "\"2.0\",\"id\":2,\"result\":{}}\n\n"};
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	size_t bad;
	char want[1024];

	(void)state;
	squeeze(GZIP, ev, 4, &z);
	bad = z.ends[2];
	corrupt(&z, bad);
	fx_open(&f);
	x = post(&f);
	head(&f, x, "text/event-stream", "gzip");
	feed(&f, x, z.data, bad + 3, 0); /* (the bad byte and 2 after it) */
	q_is(&f, "select seq, coalesce(sse_id, '~') from message where dir = 's2c'", "3|e1\n4|e2\n");
	snprintf(want, sizeof(want),
		 "5|s2c|%zu|cannot decode the gzip body: invalid block type: 2 bytes of it (as "
		 "sent) are not stored, nor the event they cut\n",
		 2 + strlen(ev3a));
	q_is(&f, GAPS, want);
	feed(&f, x, z.data + bad + 3, z.len - bad - 3, 1);
	hl_end(f.l, x, "upstream-gone", "the upstream closed the connection");
	snprintf(want + strlen(want), sizeof(want) - strlen(want),
		 "6|s2c|%zu|%zu more bytes of the gzip body (as sent) that cannot be decoded are "
		 "not stored\n",
		 z.len - bad - 3, z.len - bad - 3);
	q_is(&f, GAPS, want);
	q_is(&f, "select outcome, error from http_exchange",
	     "upstream-gone|the upstream closed the connection; cannot decode the gzip body: invalid "
	     "block type\n");
	q_is(&f, "select count(*) from message", "3\n");
	fx_finish(&f);
	fx_free(&f);
	free(z.data);
}

/* Bytes not captured in a gzip SSE stream: the event before stored, what follows cannot be read. */
static void test_gap_sse(void **state)
{
	static const char *const ev[] = {EV1, EV2, EV3};
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	char want[512];
	size_t rest;

	(void)state;
	squeeze(GZIP, ev, 3, &z);
	fx_open(&f);
	x = post(&f);
	head(&f, x, "text/event-stream", "gzip");
	feed(&f, x, z.data, z.ends[0], 0);
	hl_response_gap(f.l, x, 10);
	hl_response_resync(f.l, x); /* (no resynchronising compressed data) */
	rest = z.len - z.ends[0] - 10;
	feed(&f, x, z.data + z.ends[0] + 10, rest, 0);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select seq, coalesce(sse_id, '~') from message where dir = 's2c'", "3|e1\n");
	snprintf(want, sizeof(want),
		 "4|s2c|10|10 bytes of an SSE stream were not captured\n"
		 "5|s2c|%zu|%zu bytes of the gzip body (as sent) after bytes not captured cannot be "
		 "decoded: they are not stored\n",
		 rest, rest);
	q_is(&f, GAPS, want);
	q_is(&f, "select coalesce(error, '~') from http_exchange", "~\n");
	fx_finish(&f);
	fx_free(&f);
	free(z.data);
}

/* 10 MB of zeros, gzip-compressed (about 10 KB). */
static void bomb(const char *prefix, const char *suffix, struct zout *z)
{
	static char zeros[64 * 1024];
	z_stream s;
	size_t cap = 64 * 1024;

	memset(zeros, '0', sizeof(zeros));
	memset(&s, 0, sizeof(s));
	assert_int_equal(deflateInit2(&s, 9, Z_DEFLATED, GZIP, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z->data = malloc(cap);
	assert_non_null(z->data);
	s.next_out = z->data;
	s.avail_out = (uInt)cap;
	s.next_in = (Bytef *)prefix;
	s.avail_in = (uInt)strlen(prefix);
	assert_int_equal(deflate(&s, Z_NO_FLUSH), Z_OK);
	for (int i = 0; i < 160; i++) { /* 160 x 64 KiB: 10 MiB */
		s.next_in = (Bytef *)zeros;
		s.avail_in = sizeof(zeros);
		assert_int_equal(deflate(&s, Z_NO_FLUSH), Z_OK);
	}
	s.next_in = (Bytef *)suffix;
	s.avail_in = (uInt)strlen(suffix);
	assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
	z->len = s.total_out;
	deflateEnd(&s);
	assert_true(z->len < 20 * 1024);
}

/*
 * A decompression bomb: a JSON body of 10 MiB once decoded is a gap, as a plain
 * body above --max-message is; the memory counted stays far below it.
 */
static void test_bomb_json(void **state)
{
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	char want[512];

	(void)state;
	bomb("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"text\":\"", "\"}}", &z);
	for (size_t piece = 0; piece <= 1000; piece += 1000) {
		fx_open_max(&f, 64 * 1024);
		x = post(&f);
		head(&f, x, "application/json", "gzip");
		feed(&f, x, z.data, z.len, piece);
		hl_end(f.l, x, "complete", NULL);
		assert_true(f.mem.peak < 256 * 1024);
		q_is(&f, "select count(*) from message where dir = 's2c'", "0\n");
		snprintf(want, sizeof(want),
			 "3|s2c|%zu|a gzip response body (%zu bytes as sent) is larger than "
			 "--max-message (65536) once decoded\n",
			 z.len, z.len);
		q_is(&f, GAPS, want);
		q_is(&f,
		     "select coalesce(cast(resp_body as text), '~'), outcome, coalesce(error, '~') "
		     "from http_exchange",
		     "~|complete|~\n");
		fx_finish(&f);
		fx_free(&f);
	}
	free(z.data);
}

/* The same bomb as one SSE event: an oversized event's gap, the next event stored. */
static void test_bomb_sse(void **state)
{
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	char want[512];
	size_t ev = strlen("data: ") + 160 * 64 * 1024 + 2;

	(void)state;
	bomb("data: ", "\n\nid: e9\ndata: " ANSWER "\n\n", &z);
	fx_open_max(&f, 64 * 1024);
	x = post(&f);
	head(&f, x, "text/event-stream", "gzip");
	feed(&f, x, z.data, z.len, 512);
	assert_true(f.mem.peak < 256 * 1024);
	snprintf(want, sizeof(want), "3|s2c|%zu|an SSE event of %zu bytes is larger than the limit\n", ev,
		 ev);
	q_is(&f, GAPS, want);
	q_is(&f, "select seq, coalesce(sse_id, '~'), kind from message where dir = 's2c'", "4|e9|response\n");
	hl_end(f.l, x, "complete", NULL);
	fx_finish(&f);
	fx_free(&f);
	free(z.data);
}

/* A body in a coding not decoded: kept as sent, never a message, said. */
static void opaque_run(const char *ctype, const char *coding, const char *body, const char *error)
{
	struct fx f;
	struct hl_exch *x;
	char want[1024];

	fx_open(&f);
	x = post(&f);
	head(&f, x, ctype, coding);
	feed(&f, x, body, strlen(body), 5);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select count(*) from message where dir = 's2c'", "0\n");
	snprintf(want, sizeof(want), "%s|%s|complete|%s\n", ctype, body, error);
	q_is(&f,
	     "select json_extract(resp_headers, '$[0][1]'), cast(resp_body as text), outcome, error "
	     "from http_exchange",
	     want);
	q_is(&f, GAPS, "");
	fx_finish(&f);
	fx_free(&f);
}

static void test_unknown_coding(void **state)
{
	(void)state;
	/* (Bytes that read as JSON-RPC are not taken for it: the coding says they are not.) */
	opaque_run("application/json", "br", ANSWER,
		   "the response body's Content-Encoding (br) is not decoded: kept as sent");
	opaque_run("application/json", "gzip, br", ANSWER,
		   "the response body's Content-Encoding (gzip, br) is not decoded: kept as sent");
	opaque_run("application/json", "gzip,gzip", ANSWER,
		   "the response body's Content-Encoding (gzip, gzip) is not decoded: kept as sent");
	opaque_run("text/event-stream", "zstd", EV3,
		   "the response body's Content-Encoding (zstd) is not decoded: kept as sent");
}

/* A gzip request body: decoded for its message; one that cannot be, stored as sent; a bomb, a gap. */
static void test_gzip_request(void **state)
{
	static const struct mt_hdr h[] = {
		{"Host", "127.0.0.1:3001"},
		{"Content-Type", "application/json"},
		{"Content-Encoding", "gzip"},
	};
	struct fx f;
	struct zout z;
	struct hl_exch *x;
	char want[512];

	(void)state;
	squeeze1(GZIP, CALL, &z);
	fx_open(&f);
	x = post_h(&f, (const char *)z.data, z.len, h, 3);
	assert_string_equal(hl_info(x)->rpc_id, "2");
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, MSGS, "2|c2s|body|request|~|1|" CALL "\n");
	q_is(&f, "select req_headers, coalesce(req_body, '~'), coalesce(error, '~') from http_exchange",
	     "[[\"Host\",\"127.0.0.1:3001\"],[\"Content-Type\",\"application/json\"],"
	     "[\"Content-Encoding\",\"gzip\"]]|~|~\n");
	fx_finish(&f);
	fx_free(&f);

	/* Corrupt: stored as sent (nothing is lost), not a message, said. */
	corrupt(&z, 10);
	fx_open(&f);
	x = post_h(&f, (const char *)z.data, z.len, h, 3);
	assert_null(hl_info(x)->rpc_id);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select count(*) from message", "0\n");
	snprintf(want, sizeof(want),
		 "%zu|cannot decode the gzip request body: invalid block type (stored as sent)\n", z.len);
	q_is(&f, "select length(req_body), error from http_exchange", want);
	{
		char *sql = mt_asprintf("select count(*) from http_exchange where req_body = x'%s'", hex(&z));
		q_is(&f, sql, "1\n");
		free(sql);
	}
	fx_finish(&f);
	fx_free(&f);
	free(z.data);

	/* Larger than --max-message once decoded: a gap. */
	bomb("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":{\"a\":\"", "\"}}", &z);
	fx_open_max(&f, 64 * 1024);
	x = post_h(&f, (const char *)z.data, z.len, h, 3);
	hl_end(f.l, x, "complete", NULL);
	assert_true(f.mem.peak < 256 * 1024);
	q_is(&f, "select count(*) from message", "0\n");
	snprintf(want, sizeof(want),
		 "2|c2s|%zu|a gzip request body (%zu bytes as sent) is larger than --max-message "
		 "(65536) once decoded\n",
		 z.len, z.len);
	q_is(&f, GAPS, want);
	q_is(&f, "select coalesce(req_body, '~') from http_exchange", "~\n");
	fx_finish(&f);
	fx_free(&f);
	free(z.data);

	/* Another coding: stored as sent, said. */
	{
		static const struct mt_hdr hb[] = {
			{"Content-Type", "application/json"},
			{"Content-Encoding", "br"},
		};
		fx_open(&f);
		x = post_h(&f, CALL, strlen(CALL), hb, 2);
		hl_end(f.l, x, "complete", NULL);
		q_is(&f, "select count(*) from message", "0\n");
		q_is(&f, "select cast(req_body as text), error from http_exchange",
		     CALL "|the request body's Content-Encoding (br) is not decoded: stored as sent\n");
		fx_finish(&f);
		fx_free(&f);
	}
}

/* ---- Plain exchanges: what the tap hands on of each kind of exchange ---- */

/* Everything on_end is told but the time, one line per exchange ("~": NULL). */
static void on_end(void *ctx, const struct hl_done *d)
{
	struct fx *f = ctx;

	mt_buf_printf(&f->done, "#%lld %s %s%s %d %s %s %lld %s %s\n", (long long)d->conn, d->method, d->path,
		      d->has_query ? "?" : "", d->status, d->type ? d->type : "~", d->rpc ? d->rpc : "~",
		      (long long)d->messages, d->outcome, d->error ? d->error : "~");
}

static void done_is(struct fx *f, const char *want)
{
	assert_string_equal(f->done.data ? f->done.data : "", want);
}

#define XREQ                                                                                     \
	"select seq, conn, method, target, req_headers, coalesce(cast(req_body as text), '~'), " \
	"coalesce(last_event_id, '~') from http_exchange order by seq"
#define SMSGS                                                                                \
	"select seq, dir, kind, coalesce(sse_id, '~'), coalesce(sse_event, '~'), replayed, " \
	"exchange, cast(raw as text) from message order by seq"

/* A request of method to target with its headers and body (NULL: none). */
static struct hl_exch *req(struct fx *f, const char *method, const char *target, const struct mt_hdr *h,
			   size_t nh, const char *body)
{
	struct hl_request r;

	memset(&r, 0, sizeof(r));
	r.conn = f->conn;
	r.client_addr = "127.0.0.1:40000";
	r.method = method;
	r.target = target;
	r.h = h;
	r.nh = nh;
	r.body = body;
	r.body_len = body ? strlen(body) : 0;
	return hl_request(f->l, &r);
}

static void stats_are(struct fx *f, uint64_t sessions, uint64_t exchanges, uint64_t messages, uint64_t gaps)
{
	struct hl_stats st;

	hl_stats(f->l, &st);
	assert_int_equal(st.sessions, sessions);
	assert_int_equal(st.exchanges, exchanges);
	assert_int_equal(st.messages, messages);
	assert_int_equal(st.gaps, gaps);
}

/* A JSON answer to a POST, whole and in 1- and 5-byte pieces: one message each way. */
static void test_plain_json(void **state)
{
	static const size_t pieces[] = {0, 1, 5};
	static const struct mt_hdr rh[] = {{"Content-Type", "application/json"}, {"Content-Length", "102"}};

	(void)state;
	assert_int_equal(strlen(ANSWER), 102);
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		struct fx f;
		struct hl_exch *x;
		const struct hl_info *in;

		fx_open_ex(&f, 1u << 20, NULL, 1);
		x = post(&f);
		in = hl_info(x);
		assert_int_equal(in->sess, 1);
		assert_string_equal(in->rpc_id, "2");
		assert_int_equal(in->is_json, 0);
		hl_response_head(f.l, x, 200, rh, 2);
		assert_int_equal(hl_info(x)->is_json, 1);
		assert_int_equal(hl_info(x)->is_sse, 0);
		feed(&f, x, ANSWER, strlen(ANSWER), pieces[i]);
		/* (The request is stored at once; a JSON body at the exchange's end.) */
		assert_int_equal(count_messages(&f), 1);
		hl_end(f.l, x, "complete", NULL);
		q_is(&f, MSGS,
		     "2|c2s|body|request|~|1|" CALL "\n"
		     "3|s2c|body|response|~|1|" ANSWER "\n");
		q_is(&f, "select request_seq, id, method from message order by seq",
		     "NULL|2|tools/call\n2|2|NULL\n");
		q_is(&f, XREQ,
		     "1|1|POST|/mcp|[[\"Host\",\"127.0.0.1:3001\"],[\"Content-Type\",\"application/json\"],"
		     "[\"Accept\",\"application/json, text/event-stream\"]]|~|~\n");
		q_is(&f, XCHG,
		     "1|200|json|[[\"Content-Type\",\"application/json\"],[\"Content-Length\",\"102\"]]"
		     "|~|complete|~\n");
		q_is(&f, "select transport, client_addr, upstream from session",
		     "http|127.0.0.1:40000|http://127.0.0.1:3001/mcp\n");
		stats_are(&f, 1, 1, 2, 0);
		done_is(&f, "#1 POST /mcp 200 json tools/call t 2 complete ~\n");
		fx_finish(&f);
		fx_free(&f);
	}
}

#define P1                                                 \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/" \
	"progress\",\"params\":{\"progressToken\":1,\"progress\":1}}"
#define P2                                                 \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/" \
	"message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}"
/* Three events as a server writes them: LF, CRLF and a data field over two lines, a comment. */
#define S1 "id: e1\nevent: message\ndata: " P1 "\n\n"
#define S2                                                                    \
	": keep-alive\r\n\r\nid: e2\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: " \
	"\"method\":\"notifications/message\","                               \
	"\"params\":{\"level\":\"info\",\"data\":\"x\"}}\r\n\r\n"
#define S3 "id: e3\ndata: " ANSWER "\n\n"
#define SSE_PLAIN                                                                                  \
	"2|c2s|request|~|~|0|1|" CALL "\n"                                                         \
	"3|s2c|notification|e1|message|0|1|" P1 "\n"                                               \
	"4|s2c|notification|e2|~|0|1|{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/message\"," \
	"\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n"                                        \
	"5|s2c|response|e3|~|0|1|" ANSWER "\n"

/*
 * The stream fed in pieces ending at cuts[] (ascending, the last its length).
 * After each piece the events stored are exactly those whose blank line was
 * fed whole (a CRLF's LF included).
 */
static void sse_plain_run(const size_t *cuts, size_t ncuts)
{
	static const char body[] = S1 S2 S3;
	const size_t ends[] = {strlen(S1), strlen(S1 S2), strlen(S1 S2 S3)};
	struct fx f;
	struct hl_exch *x;
	static const struct mt_hdr rh[] = {{"Content-Type", "text/event-stream"},
					   {"Transfer-Encoding", "chunked"}};
	size_t at = 0;

	fx_open_ex(&f, 1u << 20, NULL, 1);
	x = post(&f);
	hl_response_head(f.l, x, 200, rh, 2);
	assert_int_equal(hl_info(x)->is_sse, 1);
	for (size_t i = 0; i < ncuts; i++) {
		int want = 1;

		hl_response_body(f.l, x, body + at, cuts[i] - at);
		at = cuts[i];
		for (size_t e = 0; e < 3; e++)
			want += ends[e] <= at;
		assert_int_equal(count_messages(&f), want);
	}
	assert_int_equal(at, sizeof(body) - 1);
	assert_int_equal(hl_info(x)->events, 4); /* (the comment's block too) */
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, SMSGS, SSE_PLAIN);
	q_is(&f, XCHG,
	     "1|200|sse|[[\"Content-Type\",\"text/event-stream\"],[\"Transfer-Encoding\",\"chunked\"]]"
	     "|~|complete|~\n");
	q_is(&f, GAPS, "");
	done_is(&f, "#1 POST /mcp 200 sse tools/call t 4 complete ~\n");
	fx_finish(&f);
	fx_free(&f);
}

/*
 * An SSE answer (the body a chunked response's data makes, framing taken off
 * by the reader) cut everywhere: in 1-byte pieces, in two at every offset
 * next to a line end, and at the awkward places (inside "data:", between CR
 * and LF, inside the blank line).
 */
static void test_plain_sse(void **state)
{
	static const char body[] = S1 S2 S3;
	const size_t len = sizeof(body) - 1;
	size_t cuts[sizeof(body)];

	(void)state;
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	sse_plain_run(cuts, len);
	/* (In two at every offset next to a line end: a fresh capture file each, kept few.) */
	for (size_t k = 1; k < len; k++) {
		size_t two[2] = {k, len};
		if (strchr("\r\n", body[k - 1]) || strchr("\r\n", body[k]))
			sse_plain_run(two, 2);
	}
	{
		const size_t cr = strlen(S1) + strlen(": keep-alive\r"); /* between CR and LF */
		const size_t mid = strlen(S1 S2) - 3;                    /* "\r\n|\r\n" */
		size_t awk[] = {3, strlen("id: e1\nevent: message\nda"), cr, mid, mid + 1, len};
		sse_plain_run(awk, 6);
	}
}

#define B1 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}"
#define B2 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
#define BR "[{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}]"

/* A batch: one message of kind batch each way, its size kept; the live view says it. */
static void test_batch(void **state)
{
	static const struct mt_hdr rh[] = {{"Content-Type", "application/json"}};
	struct fx f;
	struct hl_exch *x;

	(void)state;
	fx_open_ex(&f, 1u << 20, NULL, 1);
	x = req(&f, "POST", "/mcp", req_h, 3, "[" B1 "," B2 "]");
	assert_null(hl_info(x)->rpc_id);
	hl_response_head(f.l, x, 200, rh, 1);
	feed(&f, x, BR, strlen(BR), 4);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select seq, dir, channel, kind, batch_size, cast(raw as text) from message order by seq",
	     "2|c2s|body|batch|2|[" B1 "," B2 "]\n"
	     "3|s2c|body|batch|1|" BR "\n");
	done_is(&f, "#1 POST /mcp 200 json batch of 2 2 complete ~\n");
	stats_are(&f, 1, 1, 2, 0);
	fx_finish(&f);
	fx_free(&f);
}

/*
 * A notification answered 202 with no body: one message, the response empty;
 * so is a 200 whose head says Content-Length: 0, with no Content-Type.
 */
static void test_202(void **state)
{
	static const struct mt_hdr rh[] = {{"Content-Length", "0"}};
	struct fx f;
	struct hl_exch *x;

	(void)state;
	fx_open_ex(&f, 1u << 20, NULL, 1);
	x = req(&f, "POST", "/mcp?x=1", req_h, 3, B2);
	assert_null(hl_info(x)->rpc_id);
	hl_response_head(f.l, x, 202, rh, 1);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, MSGS, "2|c2s|body|notification|~|1|" B2 "\n");
	q_is(&f, XCHG, "1|202|empty|[[\"Content-Length\",\"0\"]]|~|complete|~\n");
	q_is(&f, "select target from http_exchange", "/mcp?x=1\n");
	done_is(&f, "#1 POST /mcp? 202 empty notifications/initialized 1 complete ~\n");
	x = req(&f, "POST", "/mcp", req_h, 3, B2);
	hl_response_head(f.l, x, 200, rh, 1);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, "select seq, status, resp_type from http_exchange order by seq",
	     "1|202|empty\n3|200|empty\n");
	stats_are(&f, 1, 2, 2, 0);
	fx_finish(&f);
	fx_free(&f);
}

#define ERR "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32603,\"message\":\"boom\"}}"

/*
 * Error statuses: a 401 with an HTML page (kept on the exchange, not a
 * message), a 500 whose body is JSON-RPC (a message), an exchange the client
 * left before any response (no status, its outcome and error kept).
 */
static void test_error_status(void **state)
{
	static const struct mt_hdr h401[] = {{"Content-Type", "text/html"},
					     {"WWW-Authenticate", "Bearer realm=\"mcp\""}};
	static const struct mt_hdr h500[] = {{"Content-Type", "application/json"}};
	static const char page[] = "<html>no</html>";
	struct fx f;
	struct hl_exch *x;

	(void)state;
	fx_open_ex(&f, 1u << 20, NULL, 1);
	x = post(&f);
	hl_response_head(f.l, x, 401, h401, 2);
	feed(&f, x, page, strlen(page), 4);
	hl_end(f.l, x, "complete", NULL);
	x = post(&f);
	hl_response_head(f.l, x, 500, h500, 1);
	feed(&f, x, ERR, strlen(ERR), 0);
	hl_end(f.l, x, "complete", NULL);
	x = post(&f);
	hl_end(f.l, x, "client-gone", "the client closed the connection");
	q_is(&f, MSGS,
	     "2|c2s|body|request|~|1|" CALL "\n"
	     "4|c2s|body|request|~|3|" CALL "\n"
	     "5|s2c|body|error|~|3|" ERR "\n"
	     "7|c2s|body|request|~|6|" CALL "\n");
	q_is(&f, "select error_code from message where kind = 'error'", "-32603\n");
	q_is(&f,
	     "select seq, coalesce(status, '~'), coalesce(resp_type, '~'), "
	     "coalesce(cast(resp_body as text), '~'), outcome, coalesce(error, '~') "
	     "from http_exchange order by seq",
	     "1|401|other|<html>no</html>|complete|~\n"
	     "3|500|json|~|complete|~\n"
	     "6|~|~|~|client-gone|the client closed the connection\n");
	done_is(&f, "#1 POST /mcp 401 other tools/call t 1 complete ~\n"
		    "#1 POST /mcp 500 json tools/call t 2 complete ~\n"
		    "#1 POST /mcp 0 ~ tools/call t 1 client-gone the client closed the connection\n");
	stats_are(&f, 1, 3, 4, 0);
	fx_finish(&f);
	fx_free(&f);
}

#define INIT                                                                                       \
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":" \
	"\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}"
#define INITR                                                                           \
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\"," \
	"\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"2\"}}}"
#define E(id, n) "id: " id "\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n" #n "\"}\n\n"

/*
 * A session named by Mcp-Session-Id: its GET stream cut by the client after
 * two events, resumed with Last-Event-ID: e1; the server sends e2 again (a
 * replay: flagged) and e3 (new). A DELETE answered 200 ends the session.
 */
static void test_resume(void **state)
{
	static const struct mt_hdr ih[] = {{"Content-Type", "application/json"}, {"Mcp-Session-Id", "S-1"}};
	static const struct mt_hdr gh[] = {{"Accept", "text/event-stream"}, {"Mcp-Session-Id", "S-1"}};
	static const struct mt_hdr gh2[] = {
		{"Accept", "text/event-stream"}, {"Mcp-Session-Id", "S-1"}, {"Last-Event-ID", "e1"}};
	static const struct mt_hdr sh[] = {{"Content-Type", "text/event-stream"}};
	static const char first[] = E("e1", 1) E("e2", 2);
	static const char again[] = E("e2", 2) E("e3", 3);
	struct fx f;
	struct hl_exch *x;

	(void)state;
	fx_open_ex(&f, 1u << 20, NULL, 1);
	x = req(&f, "POST", "/mcp", req_h, 3, INIT);
	hl_response_head(f.l, x, 200, ih, 2);
	feed(&f, x, INITR, strlen(INITR), 0);
	hl_end(f.l, x, "complete", NULL);
	x = req(&f, "GET", "/mcp", gh, 2, NULL);
	assert_int_equal(hl_info(x)->sess, 1);
	hl_response_head(f.l, x, 200, sh, 1);
	feed(&f, x, first, strlen(first), 3);
	hl_end(f.l, x, "client-gone", NULL);
	x = req(&f, "GET", "/mcp", gh2, 3, NULL);
	assert_int_equal(hl_info(x)->sess, 1);
	hl_response_head(f.l, x, 200, sh, 1);
	feed(&f, x, again, strlen(again), 0);
	hl_end(f.l, x, "complete", NULL);
	x = req(&f, "DELETE", "/mcp", gh + 1, 1, NULL);
	hl_response_head(f.l, x, 200, NULL, 0);
	hl_end(f.l, x, "complete", NULL);
	q_is(&f, SMSGS,
	     "2|c2s|request|~|~|0|1|" INIT "\n"
	     "3|s2c|response|~|~|0|1|" INITR "\n"
	     "5|s2c|notification|e1|~|0|4|{\"jsonrpc\":\"2.0\",\"method\":\"n1\"}\n"
	     "6|s2c|notification|e2|~|0|4|{\"jsonrpc\":\"2.0\",\"method\":\"n2\"}\n"
	     "8|s2c|notification|e2|~|1|7|{\"jsonrpc\":\"2.0\",\"method\":\"n2\"}\n"
	     "9|s2c|notification|e3|~|0|7|{\"jsonrpc\":\"2.0\",\"method\":\"n3\"}\n");
	q_is(&f,
	     "select seq, method, status, resp_type, outcome, coalesce(last_event_id, '~') "
	     "from http_exchange order by seq",
	     "1|POST|200|json|complete|~\n"
	     "4|GET|200|sse|client-gone|~\n"
	     "7|GET|200|sse|complete|e1\n"
	     "10|DELETE|200|other|complete|~\n");
	q_is(&f,
	     "select count(*), http_session_id, protocol_version, client_name, server_name, "
	     "ended_wall is not null from session",
	     "1|S-1|2025-06-18|c|s|1\n");
	done_is(&f, "#1 POST /mcp 200 json initialize 2 complete ~\n"
		    "#1 GET /mcp 200 sse ~ 2 client-gone ~\n"
		    "#1 GET /mcp 200 sse ~ 2 complete ~\n"
		    "#1 DELETE /mcp 200 other ~ 0 complete ~\n");
	fx_finish(&f);
	fx_free(&f);
}

/*
 * Credentials in headers and the target are redacted in the store (the
 * marker of the secret under the writer's key), the rest kept as sent; the
 * live view has the path without its query.
 */
static void test_redacted_headers(void **state)
{
	static const unsigned char key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	static const struct mt_hdr h[] = {
		{"Host", "127.0.0.1:3001"},           {"Authorization", "Bearer s3cr3t-t0ken"},
		{"X-Api-Key", "k3y-value"},           {"Cookie", "sid=c00kie; theme=dark"},
		{"Content-Type", "application/json"},
	};
	static const struct mt_hdr rh[] = {{"Content-Type", "application/json"},
					   {"Set-Cookie", "sid=n3w; Path=/"}};
	struct mt_redact *red = mt_redact_new(key);
	char m_tok[MT_REDACT_MARKER_LEN + 1], m_key[MT_REDACT_MARKER_LEN + 1];
	char m_sid[MT_REDACT_MARKER_LEN + 1], m_dark[MT_REDACT_MARKER_LEN + 1];
	char m_new[MT_REDACT_MARKER_LEN + 1], m_q[MT_REDACT_MARKER_LEN + 1];
	char want[2048];
	char *all;
	struct fx f;
	struct hl_exch *x;

	(void)state;
	mt_redact_marker(red, "s3cr3t-t0ken", 12, m_tok);
	mt_redact_marker(red, "k3y-value", 9, m_key);
	mt_redact_marker(red, "c00kie", 6, m_sid);
	mt_redact_marker(red, "dark", 4, m_dark);
	mt_redact_marker(red, "n3w", 3, m_new);
	mt_redact_marker(red, "qs3cret", 7, m_q);
	assert_int_equal(strlen(m_tok), MT_REDACT_MARKER_LEN);
	assert_string_not_equal(m_tok, m_key);
	fx_open_ex(&f, 1u << 20, red, 1);
	x = req(&f, "POST", "/mcp?access_token=qs3cret&v=1", h, 5, CALL);
	hl_response_head(f.l, x, 200, rh, 2);
	feed(&f, x, ANSWER, strlen(ANSWER), 0);
	hl_end(f.l, x, "complete", NULL);
	snprintf(want, sizeof(want),
		 "/mcp?access_token=%s&v=1|[[\"Host\",\"127.0.0.1:3001\"],[\"Authorization\",\"Bearer %s\"],"
		 "[\"X-Api-Key\",\"%s\"],[\"Cookie\",\"sid=%s; theme=%s\"],"
		 "[\"Content-Type\",\"application/json\"]]|[[\"Content-Type\",\"application/json\"],"
		 "[\"Set-Cookie\",\"sid=%s; Path=/\"]]\n",
		 m_q, m_tok, m_key, m_sid, m_dark, m_new);
	q_is(&f, "select target, req_headers, resp_headers from http_exchange", want);
	done_is(&f, "#1 POST /mcp? 200 json tools/call t 2 complete ~\n");
	/* No secret anywhere in the file's text columns. */
	all = q(&f, "select target || req_headers || resp_headers from http_exchange");
	assert_null(strstr(all, "s3cr3t"));
	assert_null(strstr(all, "k3y"));
	assert_null(strstr(all, "c00kie"));
	assert_null(strstr(all, "n3w"));
	assert_null(strstr(all, "qs3cret"));
	free(all);
	fx_finish(&f);
	fx_free(&f);
	mt_redact_free(red);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gzip_json),
		cmocka_unit_test(test_deflate_json),
		cmocka_unit_test(test_gzip_sse),
		cmocka_unit_test(test_gzip_members),
		cmocka_unit_test(test_identity_and_short),
		cmocka_unit_test(test_corrupt_json),
		cmocka_unit_test(test_corrupt_sse),
		cmocka_unit_test(test_gap_sse),
		cmocka_unit_test(test_bomb_json),
		cmocka_unit_test(test_bomb_sse),
		cmocka_unit_test(test_unknown_coding),
		cmocka_unit_test(test_gzip_request),
		cmocka_unit_test(test_plain_json),
		cmocka_unit_test(test_plain_sse),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_202),
		cmocka_unit_test(test_error_status),
		cmocka_unit_test(test_resume),
		cmocka_unit_test(test_redacted_headers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
