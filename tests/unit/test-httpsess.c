/*
 * test-httpsess.c - which capture session an HTTP request belongs to
 * (tap/http/httpsess.h): Streamable HTTP by Mcp-Session-Id (the initialize joining
 * the id its answer names), legacy SSE by its endpoint, servers without
 * sessions by connection, equal ids of two clients kept apart, an ended
 * session's id still its own, and request targets of absolute URIs.
 */
#include "tests/unit/unit.h"

#include "tap/http/httpsess.h"

static int64_t req(struct hs_tracker *t, int64_t conn, const char *method, const char *target,
		   const char *sid, int init, int *created, enum hs_kind *kind)
{
	struct hs_request r = {conn, method, target, sid, init, NULL};

	return hs_request(t, &r, created, kind);
}

static void test_streamable(void **state)
{
	struct hs_tracker t;
	enum hs_kind kind;
	int created;
	int64_t a, b;

	(void)state;
	hs_init(&t);
	/* Client A initializes on connection 1; the server names "sid-a". */
	a = req(&t, 1, "POST", "/mcp", NULL, 1, &created, &kind);
	assert_int_equal(a, 1);
	assert_int_equal(created, 1);
	assert_int_equal(kind, HS_HTTP);
	assert_int_equal(hs_named(&t, a, "sid-a"), a);
	/* Client B does the same at once on connection 2: "sid-b". */
	b = req(&t, 2, "POST", "/mcp", NULL, 1, &created, &kind);
	assert_int_equal(b, 2);
	assert_int_equal(created, 1);
	assert_int_equal(hs_named(&t, b, "sid-b"), b);
	/* Their later requests, on any connection, go by the id alone. */
	assert_int_equal(req(&t, 3, "POST", "/mcp", "sid-b", 0, &created, &kind), b);
	assert_int_equal(created, 0);
	assert_int_equal(req(&t, 4, "GET", "/mcp", "sid-a", 0, &created, &kind), a);
	assert_int_equal(created, 0);
	assert_int_equal(req(&t, 1, "DELETE", "/mcp", "sid-b", 0, &created, &kind), b);
	/* An id the tap never saw named: a session of its own, made once. */
	assert_int_equal(req(&t, 5, "POST", "/mcp", "sid-late", 0, &created, &kind), 3);
	assert_int_equal(created, 1);
	assert_int_equal(req(&t, 6, "POST", "/mcp", "sid-late", 0, &created, &kind), 3);
	assert_int_equal(created, 0);
	/* A second session naming an id another already has: that one's. */
	int64_t c = req(&t, 7, "POST", "/mcp", NULL, 1, &created, &kind);
	assert_int_equal(c, 4);
	assert_int_equal(hs_named(&t, c, "sid-a"), a);
	/* An ended session keeps its id: a client that missed the end is still it;
	 * its new initialize is a new session. */
	hs_end(&t, b);
	assert_int_equal(req(&t, 2, "POST", "/mcp", "sid-b", 0, &created, &kind), b);
	assert_int_equal(created, 0);
	assert_int_equal(req(&t, 2, "POST", "/mcp", NULL, 1, &created, &kind), 5);
	assert_int_equal(created, 1);
	hs_release(&t);
}

static void test_legacy(void **state)
{
	struct hs_tracker t;
	enum hs_kind kind;
	int created;
	int64_t s1, s2;

	(void)state;
	hs_init(&t);
	s1 = req(&t, 1, "GET", "/sse", NULL, 0, &created, &kind);
	assert_int_equal(created, 1);
	assert_int_equal(kind, HS_SSE);
	s2 = req(&t, 2, "GET", "/sse", NULL, 0, &created, &kind);
	assert_int_equal(created, 1);
	assert_int_equal(kind, HS_SSE);
	assert_int_not_equal(s1, s2);
	hs_endpoint(&t, s1, "/messages?sessionId=one");
	hs_endpoint(&t, s2, "http://upstream.example:8080/messages?sessionId=two");
	/* POSTs go by their target, whatever the connection. */
	assert_int_equal(req(&t, 9, "POST", "/messages?sessionId=two", NULL, 0, &created, &kind), s2);
	assert_int_equal(created, 0);
	assert_int_equal(req(&t, 8, "POST", "/messages?sessionId=one", NULL, 1, &created, &kind), s1);
	assert_int_equal(created, 0);
	/* Another query is another session's, or none's. */
	assert_int_equal(req(&t, 10, "POST", "/messages?sessionId=three", NULL, 0, &created, &kind), 3);
	assert_int_equal(created, 1);
	assert_int_equal(kind, HS_HTTP);
	hs_release(&t);
}

static void test_without_sessions(void **state)
{
	struct hs_tracker t;
	enum hs_kind kind;
	int created;
	int64_t s, u;

	(void)state;
	hs_init(&t);
	/* A server that names no session: the initialize's connection, then any
	 * connection of the newest such session. */
	s = req(&t, 1, "POST", "/mcp", NULL, 1, &created, &kind);
	hs_idless(&t, s);
	assert_int_equal(req(&t, 1, "POST", "/mcp", NULL, 0, &created, &kind), s);
	assert_int_equal(created, 0);
	assert_int_equal(req(&t, 2, "POST", "/mcp", NULL, 0, &created, &kind), s);
	assert_int_equal(created, 0);
	/* A GET on a connection of its own is a legacy stream; on the session's
	 * connection it is the session's. */
	assert_int_equal(req(&t, 1, "GET", "/mcp", NULL, 0, &created, &kind), s);
	assert_int_equal(created, 0);
	u = req(&t, 3, "GET", "/sse", NULL, 0, &created, &kind);
	assert_int_equal(created, 1);
	assert_int_equal(kind, HS_SSE);
	/* A second initialize starts a second session, which becomes the newest. */
	int64_t s2 = req(&t, 4, "POST", "/mcp", NULL, 1, &created, &kind);
	assert_int_equal(created, 1);
	hs_idless(&t, s2);
	assert_int_equal(req(&t, 5, "POST", "/mcp", NULL, 0, &created, &kind), s2);
	/* A closed connection is forgotten. */
	hs_conn_closed(&t, 1);
	assert_int_equal(req(&t, 1, "POST", "/mcp", NULL, 0, &created, &kind), s2);
	/* With no session without ids left, a plain POST starts one. */
	hs_end(&t, s2);
	assert_int_equal(req(&t, 6, "POST", "/mcp", NULL, 0, &created, &kind), u + 2);
	assert_int_equal(created, 1);
	hs_release(&t);
}

static void test_stateless_clients(void **state)
{
	struct hs_tracker t;
	enum hs_kind kind;
	int created;
	struct hs_request r = {1, "POST", "/mcp", NULL, 0, "agent-a 1.0"};
	int64_t a, b;

	(void)state;
	hs_init(&t);
	/* 2026-07-28: no initialize, no id; each request names its client. */
	a = hs_request(&t, &r, &created, &kind);
	assert_int_equal(created, 1);
	r.conn = 2; /* a second connection of the same client */
	assert_int_equal(hs_request(&t, &r, &created, &kind), a);
	assert_int_equal(created, 0);
	r.client = "agent-b 2.0"; /* another client, on a connection of its own */
	r.conn = 3;
	b = hs_request(&t, &r, &created, &kind);
	assert_int_equal(created, 1);
	assert_int_not_equal(a, b);
	r.conn = 1; /* a connection first used by a, now by b: b's */
	assert_int_equal(hs_request(&t, &r, &created, &kind), b);
	r.client = "agent-a 1.0";
	r.conn = 4;
	assert_int_equal(hs_request(&t, &r, &created, &kind), a);
	/* A request naming no client on a connection goes with that connection. */
	r.client = NULL;
	assert_int_equal(hs_request(&t, &r, &created, &kind), a);
	hs_release(&t);
}

static void test_targets(void **state)
{
	(void)state;
	assert_string_equal(hs_uri_target("/messages?sessionId=1"), "/messages?sessionId=1");
	assert_string_equal(hs_uri_target("http://h:1/messages?sessionId=1"), "/messages?sessionId=1");
	assert_string_equal(hs_uri_target("HTTPS://h/m"), "/m");
	assert_string_equal(hs_uri_target("http://h"), "/");
	assert_string_equal(hs_uri_target("http://h?q=1"), "?q=1");
	assert_string_equal(hs_uri_target("http://h#frag"), "/");
	assert_string_equal(hs_uri_target("messages?x"), "messages?x");
	assert_string_equal(hs_uri_target("urn:x:y"), "urn:x:y");
	assert_string_equal(hs_uri_target(""), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_streamable),       cmocka_unit_test(test_legacy),
		cmocka_unit_test(test_without_sessions), cmocka_unit_test(test_stateless_clients),
		cmocka_unit_test(test_targets),
	};

	return cmocka_run_group_tests_name("httpsess", tests, NULL, NULL);
}
