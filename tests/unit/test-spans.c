/*
 * test-spans.c - the OTLP span builder (schema/spans.h) that export -T otlp
 * and the tap's --otlp share: a request and its answer make one CLIENT span
 * (two with MT_SPANS_SERVER, the SERVER one the child), made when the answer
 * comes; the ids depend on the session's identity and the request's place
 * only, so that a second builder fed the same items gives the same ids and a
 * session updated midway (its handshake learnt) keeps them; the resource
 * follows the update; open requests end with the session, unanswered; a
 * callback's -1 stops the builder.
 */
#include "tests/unit/unit.h"

#include <string.h>

#include "schema/spans.h"

struct got {
	char spans[8][2048];
	char resources[8][512];
	int n;
	int fail_at; /* the callback returns -1 on this span (1-based; 0: never) */
};

static int on_span(void *ctx, const char *resource, const char *span, size_t n)
{
	struct got *g = ctx;

	assert_int_equal(strlen(span), n);
	if (g->n < 8) {
		snprintf(g->spans[g->n], sizeof(g->spans[0]), "%s", span);
		snprintf(g->resources[g->n], sizeof(g->resources[0]), "%s", resource);
	}
	g->n++;
	return g->fail_at && g->n == g->fail_at ? -1 : 0;
}

static void row_init(struct store_session_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = 3;
	r->transport = "stdio";
	r->started_wall = 1700000000000000;
	r->duration_ns = -1;
	r->tap_id = "boot:1234";
}

/* A message item of seq, dir, at t_ns, with raw (the request it answers: rq). */
static void item(struct mt_spans *s, int64_t seq, const char *dir, int64_t t_ns, const char *raw, int64_t rq,
		 int expect_rc)
{
	struct store_item it;

	memset(&it, 0, sizeof(it));
	it.type = STORE_ITEM_MESSAGE;
	it.seq = seq;
	it.t_ns = t_ns;
	it.wall = 1700000000000000 + t_ns / 1000;
	it.dir = dir;
	it.raw = raw;
	it.raw_len = strlen(raw);
	it.request_seq = rq;
	assert_int_equal(mt_spans_item(s, &it), expect_rc);
}

/* The value of "key":"..." in a span's text, into out. */
static const char *field(const char *span, const char *key, char *out, size_t max)
{
	char pat[64];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(span, pat);
	assert_non_null(p);
	p += strlen(pat);
	n = strcspn(p, "\"");
	assert_true(n < max);
	memcpy(out, p, n);
	out[n] = 0;
	return out;
}

static const char req[] =
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}";
static const char ans[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}";

static void test_pair(void **state)
{
	struct mt_spans_opts o = {0, 0, 0};
	struct got g = {0}, g2 = {0};
	struct store_session_row r;
	struct mt_spans *s = mt_spans_new(&o, on_span, &g), *s2 = mt_spans_new(&o, on_span, &g2);
	char a[64], b[64];

	(void)state;
	row_init(&r);
	mt_spans_session(s, &r);
	assert_string_equal(
		mt_spans_resource(s),
		"{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"mcp-server\"}}]}");
	item(s, 1, "c2s", 1000, req, 0, 0);
	assert_int_equal(g.n, 0); /* (made when its answer comes) */
	item(s, 2, "s2c", 5000, ans, 1, 0);
	assert_int_equal(g.n, 1);
	assert_non_null(strstr(g.spans[0], "\"name\":\"tools/call echo\",\"kind\":3,"));
	assert_non_null(strstr(g.spans[0], "\"startTimeUnixNano\":\"1700000000000001000\""));
	assert_non_null(strstr(g.spans[0], "\"endTimeUnixNano\":\"1700000000000005000\""));
	assert_non_null(
		strstr(g.spans[0], "{\"key\":\"network.transport\",\"value\":{\"stringValue\":\"pipe\"}}"));
	assert_null(strstr(g.spans[0], "parentSpanId"));

	/* The same items, a second builder: the same ids. Another tap: others. */
	mt_spans_session(s2, &r);
	item(s2, 1, "c2s", 1000, req, 0, 0);
	item(s2, 2, "s2c", 5000, ans, 1, 0);
	assert_string_equal(g.spans[0], g2.spans[0]);
	r.tap_id = "boot:1235";
	mt_spans_session(s2, &r);
	item(s2, 1, "c2s", 1000, req, 0, 0);
	item(s2, 2, "s2c", 5000, ans, 1, 0);
	assert_string_not_equal(field(g.spans[0], "spanId", a, sizeof(a)),
				field(g2.spans[1], "spanId", b, sizeof(b)));
	assert_string_not_equal(field(g.spans[0], "traceId", a, sizeof(a)),
				field(g2.spans[1], "traceId", b, sizeof(b)));
	mt_spans_free(s);
	mt_spans_free(s2);
}

static void test_update_keeps_ids(void **state)
{
	struct mt_spans_opts o = {MT_SPANS_CLIENT | MT_SPANS_SERVER, 0, 0};
	struct got g = {0}, g2 = {0};
	struct store_session_row r;
	struct mt_spans *s = mt_spans_new(&o, on_span, &g), *s2 = mt_spans_new(&o, on_span, &g2);
	char a[64], b[64];

	(void)state;
	row_init(&r);
	mt_spans_session(s, &r);
	mt_spans_session(s2, &r);
	/* What the handshake says, learnt midway: the attributes change, not the ids. */
	r.server_name = "srv";
	r.server_version = "1.2";
	r.client_name = "cli";
	mt_spans_session_update(s, &r);
	item(s, 1, "c2s", 1000, req, 0, 0);
	item(s, 2, "s2c", 5000, ans, 1, 0);
	item(s2, 1, "c2s", 1000, req, 0, 0);
	item(s2, 2, "s2c", 5000, ans, 1, 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.resources[0],
			    "{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"srv\"}},"
			    "{\"key\":\"service.version\",\"value\":{\"stringValue\":\"1.2\"}}]}");
	assert_non_null(strstr(g.spans[0], "\"client.service.name\""));
	assert_null(strstr(g2.spans[0], "\"client.service.name\""));
	for (int i = 0; i < 2; i++)
		assert_string_equal(field(g.spans[i], "spanId", a, sizeof(a)),
				    field(g2.spans[i], "spanId", b, sizeof(b)));
	/* The SERVER span is the CLIENT span's child. */
	assert_non_null(strstr(g.spans[1], "\"kind\":2,"));
	assert_string_equal(field(g.spans[1], "parentSpanId", a, sizeof(a)),
			    field(g.spans[0], "spanId", b, sizeof(b)));
	mt_spans_free(s);
	mt_spans_free(s2);
}

static void test_end_and_stop(void **state)
{
	struct mt_spans_opts o = {0, 0, 0};
	struct got g = {0};
	struct store_session_row r;
	struct mt_spans *s = mt_spans_new(&o, on_span, &g);
	static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	static const char ping2[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";

	(void)state;
	row_init(&r);
	mt_spans_session(s, &r);
	item(s, 1, "c2s", 1000, ping, 0, 0);
	item(s, 2, "c2s", 2000, ping2, 0, 0);
	/* Ended after 9 µs: both unanswered, ending then. */
	assert_int_equal(mt_spans_session_end(s, 9000), 0);
	assert_int_equal(g.n, 2);
	assert_non_null(strstr(g.spans[0], "\"endTimeUnixNano\":\"1700000000000009000\""));
	assert_non_null(
		strstr(g.spans[1], "{\"key\":\"error.type\",\"value\":{\"stringValue\":\"unanswered\"}}"));
	/* A callback's -1 stops the builder and is returned. */
	g.fail_at = 3;
	mt_spans_session(s, &r);
	item(s, 1, "c2s", 1000, ping, 0, 0);
	item(s, 2, "s2c", 2000, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 1, -1);
	mt_spans_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair),
		cmocka_unit_test(test_update_keeps_ids),
		cmocka_unit_test(test_end_and_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
