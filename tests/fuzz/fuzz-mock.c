/*
 * fuzz-mock.c - the replay engine (analyze/replay/mock.h) fed what a live client
 * sends: the input's lines, one client message each, against two recordings
 * made once through the writer, as the taps make them: an HTTP session (an
 * initialize, a call whose progress came on its POST's stream, a sampling
 * request on the GET stream and the client's answer, a request refused with a
 * 401, OAuth metadata without JSON-RPC) and the same messages as a stdio
 * session. What the engine sends goes to a sink that checks each message is
 * whole and routed sanely; nothing may crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/replay/mock.h"
#include "tap/writer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char db[64];
static struct store *st;

static const char *const c2s[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-"
	"25\",\"capabilities\":{\"sampling\":{}},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
	"call\",\"params\":{\"name\":\"long\",\"_meta\":{\"progressToken\":7}}}",
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"model\":\"m\",\"role\":\"assistant\",\"content\":{"
	"\"type\":\"text\",\"text\":\"x\"}}}",
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
};

/* One message of the recordings: its direction, text, and for HTTP its exchange and channel. */
struct rec {
	int c2s;
	const char *text;
	int64_t exchange;
	const char *channel;
};

static const struct rec recs[] = {
	{1, NULL, 1, "body"}, /* c2s[0] */
	{0,
	 "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
	 "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}",
	 1, "body"},
	{1, NULL, 3, "body"}, /* c2s[1] */
	{1, NULL, 5, "body"}, /* c2s[2] */
	{0,
	 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
	 "progress\",\"params\":{\"progressToken\":7,\"progress\":1}}",
	 5, "sse"},
	{0,
	 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[]}}",
	 9, "sse"},
	{1, NULL, 11, "body"}, /* c2s[3] */
	{0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}", 5, "sse"},
	{1, NULL, 14, "body"}, /* c2s[4]: refused with a 401 */
};

static void put_exchange(struct writer *w, int h, int64_t seq, const char *method, const char *target,
			 int status, const char *type)
{
	static const struct mt_hdr ct[] = {{"WWW-Authenticate", "Bearer realm=\"x\""},
					   {"Content-Type", "application/json"}};
	struct writer_exchange x = {.seq = seq, .conn = 1, .method = method, .target = target};

	writer_put_exchange_begin(w, h, &x);
	writer_put_exchange_head(w, h, seq, status, ct, 2, type, 1);
}

/* The two recordings, into db: session 1 over HTTP, session 2 over stdio. */
static void record(void)
{
	struct writer_opts o;
	struct store_session_new http = {.transport = "http", .started_wall = 1};
	struct store_session_new stdio = {.transport = "stdio", .started_wall = 1};
	struct writer *w;
	int h, k = 0;
	int64_t seq = 0;

	writer_opts_default(&o);
	w = writer_open_shared(db, &o, NULL);
	h = writer_session_new(w, &http, 0);
	put_exchange(w, h, 1, "POST", "/mcp", 200, "json");
	put_exchange(w, h, 3, "POST", "/mcp", 202, "empty");
	put_exchange(w, h, 5, "POST", "/mcp", 200, "sse");
	put_exchange(w, h, 9, "GET", "/mcp", 200, "sse");
	put_exchange(w, h, 11, "POST", "/mcp", 202, "empty");
	put_exchange(w, h, 14, "POST", "/mcp", 401, "other");
	put_exchange(w, h, 16, "GET", "/.well-known/oauth-protected-resource", 200, "other");
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		const char *t = recs[i].c2s ? c2s[k++] : recs[i].text;
		struct writer_http_msg m = {.sess = h,
					    .seq = (seq += 2) + 100,
					    .s = recs[i].c2s ? WS_C2S : WS_S2C,
					    .channel = recs[i].channel,
					    .exchange = recs[i].exchange,
					    .p = t,
					    .n = strlen(t)};
		writer_put_msg(w, &m);
	}
	static const int64_t xs[] = {1, 3, 5, 9, 11, 14, 16};
	for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++)
		writer_put_exchange_end(w, h, xs[i], 2, "complete", NULL,
					xs[i] == 16 ? "{\"resource\":\"r\"}" : NULL, xs[i] == 16 ? 16 : 0);
	h = writer_session_new(w, &stdio, 0);
	k = 0;
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		const char *t = recs[i].c2s ? c2s[k++] : recs[i].text;
		struct writer_http_msg m = {.sess = h,
					    .seq = (int64_t)i + 1,
					    .s = recs[i].c2s ? WS_C2S : WS_S2C,
					    .channel = "stdio",
					    .p = t,
					    .n = strlen(t)};
		writer_put_msg(w, &m);
	}
	if (writer_finish(w, NULL, NULL))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct mt_err err = {"", 0};

	(void)argc;
	(void)argv;
	snprintf(db, sizeof(db), "/tmp/fuzz-mock-%d.db", (int)getpid());
	record();
	if (store_open(db, STORE_READ, &st, &err))
		abort();
	return 0;
}

/* The sink: every message whole (JSON text with no newline), answers to some id. */
static void send_one(void *ctx, const char *p, size_t n, const struct mock_out *o)
{
	(void)ctx;
	if (!n || memchr(p, '\n', n) || (o->answers && !o->answers_n) || (o->on && !o->on_n))
		abort();
	if (o->via != RP_VIA_STDIO && o->via != RP_VIA_BODY && o->via != RP_VIA_POST && o->via != RP_VIA_GET)
		abort();
}

static int barrier(void *ctx)
{
	(void)ctx;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mock_opts o = {0, 1, 0, NULL, NULL, "fuzz", NULL, {NULL, NULL}};
	struct mock_sink sink = {NULL, send_one, barrier, NULL};
	struct mt_err err = {"", 0};

	if (size > 1 << 16)
		return 0;
	for (int64_t session = 1; session <= 2; session++) {
		struct rp_script s;
		struct mock *k;
		json_t *sum = NULL;
		const char *p = (const char *)data, *end = p + size;
		if (rp_load(st, session, NULL, &s, &err))
			abort();
		k = mock_new(&s, &o, &sink, NULL);
		mock_begin(k);
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
			mock_feed(k, p, n);
			p += n + (nl ? 1 : 0);
		}
		(void)mock_end(k, "eof", &sum);
		json_decref(sum);
		mock_free(k);
		(void)rp_other_reply(&s, "GET", "/.well-known/oauth-protected-resource?x=1");
		rp_release(&s);
	}
	return 0;
}
