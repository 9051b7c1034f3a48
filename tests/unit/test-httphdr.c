/*
 * test-httphdr.c - the HTTP tap's header rules (tap/http/httphdr.h): hop-by-hop
 * fields and those a Connection header names, requests against responses,
 * duplicates and order kept, lookups and comma lists, the stored JSON with
 * redaction markers and bytes that are not UTF-8, and request targets.
 */
#include "tests/unit/unit.h"

#include <jansson.h>

#include "tap/http/httphdr.h"

static const unsigned char KEY[16] = "0123456789abcdef";
static struct mt_redact *R;

static int setup(void **state)
{
	(void)state;
	R = mt_redact_new(KEY);
	return R ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	mt_redact_free(R);
	return 0;
}

/* The marker for the secret s (caller frees). */
static char *mk(const char *s)
{
	char *m = malloc(MT_REDACT_MARKER_LEN + 1);

	assert_non_null(m);
	mt_redact_marker(R, s, strlen(s), m);
	return m;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_hop_by_hop(void **state)
{
	static const char *const yes[] = {
		"Connection", "connection", "PROXY-CONNECTION",  "Keep-Alive",        "keep-alive", "TE",
		"te",         "Trailer",    "Transfer-Encoding", "transfer-encoding", "Upgrade"};
	static const char *const no[] = {"",
					 "Connections",
					 "Keep-Alive2",
					 "T",
					 "TE ",
					 "Trailers",
					 "Host",
					 "Content-Length",
					 "Proxy-Authorization",
					 "Upgrade-Insecure-Requests",
					 "Mcp-Session-Id"};

	(void)state;
	for (size_t i = 0; i < N(yes); i++)
		assert_int_equal(mt_hdr_hop_by_hop(yes[i]), 1);
	for (size_t i = 0; i < N(no); i++)
		assert_int_equal(mt_hdr_hop_by_hop(no[i]), 0);
}

/* A request as a client sends it, with what the proxy keeps (1) or not (0). */
static const struct mt_hdr req[] = {
	{"Host", "localhost:8080"},          /* 0 */
	{"Connection", "keep-alive, X-Foo"}, /* 0 */
	{"Keep-Alive", "timeout=5"},         /* 0 */
	{"X-Foo", "1"},                      /* 0: named by Connection */
	{"x-foo", "2"},                      /* 0: in any case */
	{"X-Foobar", "3"},                   /* 1: a whole name only */
	{"Content-Length", "10"},            /* 0 */
	{"Expect", "100-continue"},          /* 0 */
	{"Accept-Encoding", "gzip, br"},     /* 0: reported */
	{"Accept", "application/json, text/event-stream"},
	{"Content-Type", "application/json"},
	{"Mcp-Session-Id", "s-1"},
	{"MCP-Protocol-Version", "2025-06-18"},
	{"Mcp-Method", "tools/call"},
	{"Mcp-Name", "search"},
	{"Mcp-Param-Region", "eu"},
	{"Last-Event-ID", "42"},
	{"Authorization", "Bearer tok"},
	{"Cookie", "a=1"},
	{"Origin", "http://localhost"},
	{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	{"TE", "trailers"},                 /* 0 */
	{"Transfer-Encoding", "chunked"},   /* 0 */
	{"Upgrade", "h2c"},                 /* 0 */
	{"Proxy-Connection", "keep-alive"}, /* 0 */
	{"Trailer", "X-Checksum"},          /* 0 */
	{"X-Dup", "1"},
	{"X-Custom", "  spaced\tvalue  "},
	{"X-Dup", "2"},
};
static const unsigned char req_keep[] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1,
					 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1};

static void test_filter_request(void **state)
{
	unsigned char keep[N(req)];
	struct mt_hdr_dropped d;

	(void)state;
	assert_int_equal(N(req_keep), N(req));
	memset(keep, 7, sizeof(keep));
	assert_int_equal(mt_hdr_filter(req, N(req), MT_HDR_REQUEST, keep, &d), 16);
	assert_memory_equal(keep, req_keep, N(req));
	assert_int_equal(d.count, 13);
	assert_int_equal(d.accept_encoding, 1);
	assert_non_null(d.content_length);
	assert_string_equal(d.content_length, "10");
	assert_ptr_equal(d.content_length, req[6].value); /* borrowed */
	assert_int_equal(d.content_lengths, 1);
	assert_int_equal(d.content_length_differs, 0);
	/* dropped may be NULL. */
	assert_int_equal(mt_hdr_filter(req, N(req), MT_HDR_REQUEST, keep, NULL), 16);
	/* Nothing in, nothing out. */
	assert_int_equal(mt_hdr_filter(req, 0, MT_HDR_REQUEST, keep, &d), 0);
	assert_int_equal(d.count, 0);
	assert_null(d.content_length);
}

static void test_filter_response(void **state)
{
	static const struct mt_hdr rsp[] = {
		{"Content-Type", "text/event-stream"},
		{"Cache-Control", "no-cache"},
		{"Connection", "close"},
		{"Content-Length", "5"},
		{"Mcp-Session-Id", "s-1"},
		{"Set-Cookie", "a=1; Path=/"},
		{"WWW-Authenticate", "Bearer resource_metadata=\"https://x/.well-known\""},
		{"Set-Cookie", "b=2"},
		{"Access-Control-Allow-Origin", "*"},
		{"Access-Control-Expose-Headers", "Mcp-Session-Id"},
		{"content-length", "6"},
		{"Host", "kept in a response"},
		{"Accept-Encoding", "kept in a response"},
		{"Expect", "kept in a response"},
		{"Transfer-Encoding", "chunked"},
		{"X-Unknown", ""},
	};
	static const unsigned char want[] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1};
	unsigned char keep[N(rsp)];
	struct mt_hdr_dropped d;

	(void)state;
	assert_int_equal(mt_hdr_filter(rsp, N(rsp), MT_HDR_RESPONSE, keep, &d), 12);
	assert_memory_equal(keep, want, N(rsp));
	assert_int_equal(d.count, 4);
	assert_int_equal(d.accept_encoding, 0);
	assert_string_equal(d.content_length, "5");
	assert_int_equal(d.content_lengths, 2);
	assert_int_equal(d.content_length_differs, 1);

	/* The request list as a response: Host, Expect, Accept-Encoding go on. */
	unsigned char k2[N(req)];
	assert_int_equal(mt_hdr_filter(req, N(req), MT_HDR_RESPONSE, k2, &d), 19);
	assert_int_equal(k2[0], 1);
	assert_int_equal(k2[6], 0);
	assert_int_equal(k2[7], 1);
	assert_int_equal(k2[8], 1);
	assert_int_equal(d.accept_encoding, 0);

	/* The same Content-Length twice does not differ. */
	static const struct mt_hdr two[] = {{"Content-Length", "7"}, {"Content-Length", "7"}};
	assert_int_equal(mt_hdr_filter(two, 2, MT_HDR_RESPONSE, keep, &d), 0);
	assert_int_equal(d.content_lengths, 2);
	assert_int_equal(d.content_length_differs, 0);
}

static void test_connection_tokens(void **state)
{
	static const struct mt_hdr h[] = {
		{"Connection", " , ,X-A ,\tX-B\t,,close"},
		{"X-A", "1"},
		{"X-B", "2"},
		{"X-C", "3"},
		{"Close", "4"},
		{"X-AB", "5"},
		{"connection", "x-c"},
		{"Mcp-Session-Id", "s"},
		{"CONNECTION", ""},
		{"X-Empty-Connection-Token", ""},
	};
	static const unsigned char want[] = {0, 0, 0, 0, 0, 1, 0, 1, 0, 1};
	unsigned char keep[N(h)];
	struct mt_hdr_dropped d;

	(void)state;
	assert_int_equal(mt_hdr_filter(h, N(h), MT_HDR_REQUEST, keep, &d), 3);
	assert_memory_equal(keep, want, N(h));
	assert_int_equal(d.count, 7);
	/* Connection naming a field the proxy keeps otherwise: dropped. */
	static const struct mt_hdr h2[] = {
		{"Connection", "Mcp-Session-Id"}, {"Mcp-Session-Id", "s"}, {"Authorization", "x"}};
	assert_int_equal(mt_hdr_filter(h2, N(h2), MT_HDR_RESPONSE, keep, &d), 1);
	assert_int_equal(keep[0], 0);
	assert_int_equal(keep[1], 0);
	assert_int_equal(keep[2], 1);
}

static void test_get(void **state)
{
	(void)state;
	assert_string_equal(mt_hdr_get(req, N(req), "x-dup"), "1");
	assert_string_equal(mt_hdr_get(req, N(req), "MCP-SESSION-ID"), "s-1");
	assert_string_equal(mt_hdr_get(req, N(req), "x-foo"), "1");
	assert_ptr_equal(mt_hdr_get(req, N(req), "Host"), req[0].value);
	assert_null(mt_hdr_get(req, N(req), "Mcp-Session"));
	assert_null(mt_hdr_get(req, N(req), ""));
	assert_null(mt_hdr_get(req, 0, "Host"));
}

static void test_has_token(void **state)
{
	static const char *acc = "application/json, text/event-stream;q=0.9";

	(void)state;
	assert_int_equal(mt_hdr_has_token(acc, "application/json"), 1);
	assert_int_equal(mt_hdr_has_token(acc, "text/event-stream"), 1);
	assert_int_equal(mt_hdr_has_token(acc, "TEXT/Event-Stream"), 1);
	assert_int_equal(mt_hdr_has_token(acc, "text/event"), 0);
	assert_int_equal(mt_hdr_has_token(acc, "application/json, text/event-stream"), 0);
	assert_int_equal(mt_hdr_has_token("Application/JSON ;charset=utf-8", "application/json"), 1);
	assert_int_equal(mt_hdr_has_token(",, application/json ,,", "application/json"), 1);
	assert_int_equal(mt_hdr_has_token("\tapplication/json\t", "application/json"), 1);
	/* q=0 refuses. */
	assert_int_equal(mt_hdr_has_token("application/json;q=0", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("application/json; Q=0.000", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("application/json;q=0.", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("application/json;a=1;q=0 ", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("application/json;q=0.001", "application/json"), 1);
	assert_int_equal(mt_hdr_has_token("application/json;q=1", "application/json"), 1);
	assert_int_equal(mt_hdr_has_token("application/json;q=0x", "application/json"), 1);
	assert_int_equal(mt_hdr_has_token("application/json;q=0, application/json", "application/json"), 1);
	/* A comma inside a quoted parameter does not split. */
	assert_int_equal(mt_hdr_has_token("text/plain;x=\"a, application/json\"", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("text/plain;x=\"a\\\", b\", application/json", "application/json"),
			 1);
	/* No wildcards. */
	assert_int_equal(mt_hdr_has_token("*/*", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("*/*", "*/*"), 1);
	assert_int_equal(mt_hdr_has_token("", "application/json"), 0);
	assert_int_equal(mt_hdr_has_token(NULL, "application/json"), 0);
	assert_int_equal(mt_hdr_has_token("keep-alive, Upgrade", "upgrade"), 1);
	assert_int_equal(mt_hdr_has_token("a,b", ""), 0);
}

static void test_json(void **state)
{
	static const struct mt_hdr h[] = {
		{"Content-Type", "text/plain"},
		{"X-Q", "say \"hi\"\\ \t\x01\x1f\x7f"},
		{"X-Dup", "1"},
		{"X-Dup", ""},
	};
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	assert_int_equal(mt_hdr_json(h, N(h), NULL, &out), 0);
	assert_string_equal(out.data, "[[\"Content-Type\",\"text/plain\"],"
				      "[\"X-Q\",\"say \\\"hi\\\"\\\\ \\u0009\\u0001\\u001f\x7f\"],"
				      "[\"X-Dup\",\"1\"],[\"X-Dup\",\"\"]]");
	assert_int_equal(mt_hdr_json(h, 0, NULL, &out), 0);
	assert_string_equal(out.data, "[]");
	/* With a redactor, nothing to redact. */
	assert_int_equal(mt_hdr_json(h, 1, R, &out), 0);
	assert_string_equal(out.data, "[[\"Content-Type\",\"text/plain\"]]");
	mt_buf_release(&out);
}

static void test_json_redacted(void **state)
{
	static const struct mt_hdr h[] = {
		{"Authorization", "Bearer tok"},
		{"Proxy-Authorization", "Basic dXNlcjpwdw=="},
		{"Cookie", "a=1; sid=xyz"},
		{"Set-Cookie", "sid=xyz; Path=/; HttpOnly"},
		{"X-Api-Key", "k-123"},
		{"Mcp-Session-Id", "s-1"},
		{"X-Note", "sk-abcdefghijklmnopqrstuvwx"},
	};
	struct mt_buf out = MT_BUF_INIT;
	char *tok = mk("tok"), *basic = mk("dXNlcjpwdw=="), *one = mk("1"), *xyz = mk("xyz"),
	     *key = mk("k-123"), *sk = mk("sk-abcdefghijklmnopqrstuvwx");

	(void)state;
	assert_int_equal(mt_hdr_json(h, N(h), R, &out), 1);
	char *want = mt_asprintf("[[\"Authorization\",\"Bearer %s\"],"
				 "[\"Proxy-Authorization\",\"Basic %s\"],"
				 "[\"Cookie\",\"a=%s; sid=%s\"],"
				 "[\"Set-Cookie\",\"sid=%s; Path=/; HttpOnly\"],"
				 "[\"X-Api-Key\",\"%s\"],"
				 "[\"Mcp-Session-Id\",\"s-1\"],"
				 "[\"X-Note\",\"%s\"]]",
				 tok, basic, one, xyz, xyz, key, sk);
	assert_string_equal(out.data, want);
	/* No secret is left. */
	assert_null(strstr(out.data, "tok\""));
	assert_null(strstr(out.data, "dXNlcjpwdw"));
	assert_null(strstr(out.data, "k-123"));
	/* Without the redactor, all as sent. */
	assert_int_equal(mt_hdr_json(h, 1, NULL, &out), 0);
	assert_string_equal(out.data, "[[\"Authorization\",\"Bearer tok\"]]");
	free(want);
	free(tok);
	free(basic);
	free(one);
	free(xyz);
	free(key);
	free(sk);
	mt_buf_release(&out);
}

static void test_json_not_utf8(void **state)
{
	static const struct mt_hdr h[] = {
		/* A stray byte, é, a surrogate, an emoji, an overlong '/', a cut é, U+10FFFF
		 * and one past it. */
		{"X-Bin", "a\xff"
			  "b \xc3\xa9 \xed\xa0\x80 \xf0\x9f\x98\x80 \xc0\xaf \xc3"},
		{"X-Max", "\xf4\x8f\xbf\xbf \xf4\x90\x80\x80"},
		{"\xfe"
		 "Name",
		 "x"},
	};
	struct mt_buf out = MT_BUF_INIT;
	json_error_t jerr;

	(void)state;
	assert_int_equal(mt_hdr_json(h, N(h), R, &out), 0);
	assert_string_equal(out.data,
			    "[[\"X-Bin\",\"a\\ufffdb \xc3\xa9 \\ufffd\\ufffd\\ufffd \xf0\x9f\x98\x80 "
			    "\\ufffd\\ufffd \\ufffd\"],"
			    "[\"X-Max\",\"\xf4\x8f\xbf\xbf \\ufffd\\ufffd\\ufffd\\ufffd\"],"
			    "[\"\\ufffdName\",\"x\"]]");
	json_t *j = json_loadb(out.data, out.len, 0, &jerr);
	assert_non_null(j);
	assert_int_equal(json_array_size(j), 3);
	assert_string_equal(json_string_value(json_array_get(json_array_get(j, 0), 1)),
			    "a\xef\xbf\xbd"
			    "b \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
			    "\xf0\x9f\x98\x80 \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd");
	json_decref(j);
	mt_buf_release(&out);
}

static void test_target(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	char *abc = mk("abc"), *t = mk("t"), *code = mk("xyz"), *gh = NULL, *want;
	static const char ghp[] = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";

	(void)state;
	assert_int_equal(mt_target_redact("/mcp?api_key=abc&x=1&token=t", R, &out), 1);
	want = mt_asprintf("/mcp?api_key=%s&x=1&token=%s", abc, t);
	assert_string_equal(out.data, want);
	free(want);
	/* OAuth's code in a callback; state stays. */
	assert_int_equal(mt_target_redact("/cb?code=xyz&state=s1", R, &out), 1);
	want = mt_asprintf("/cb?code=%s&state=s1", code);
	assert_string_equal(out.data, want);
	free(want);
	/* Nothing to redact: 0, out untouched. */
	mt_buf_reset(&out);
	mt_buf_puts(&out, "before");
	assert_int_equal(mt_target_redact("/mcp?session=1&cursor=abc", R, &out), 0);
	assert_string_equal(out.data, "before");
	assert_int_equal(mt_target_redact("/mcp", R, &out), 0);
	assert_int_equal(mt_target_redact("", R, &out), 0);
	assert_int_equal(mt_target_redact("*", R, &out), 0);
	/* A key format in the path. */
	gh = mk(ghp);
	want = mt_asprintf("/hooks/%s/x", ghp);
	assert_int_equal(mt_target_redact(want, R, &out), 1);
	free(want);
	want = mt_asprintf("/hooks/%s/x", gh);
	assert_string_equal(out.data, want);
	free(want);
	/* Both at once: a key in the path and a token in the query. */
	want = mt_asprintf("/hooks/%s?access_token=abc", ghp);
	assert_int_equal(mt_target_redact(want, R, &out), 1);
	free(want);
	want = mt_asprintf("/hooks/%s?access_token=%s", gh, abc);
	assert_string_equal(out.data, want);
	free(want);
	/* An absolute target: the password goes too. */
	assert_int_equal(mt_target_redact("http://u:abc@h/mcp?key=t", R, &out), 1);
	want = mt_asprintf("http://u:%s@h/mcp?key=%s", abc, t);
	assert_string_equal(out.data, want);
	free(want);
	free(abc);
	free(t);
	free(code);
	free(gh);
	mt_buf_release(&out);
}

/* Framing RFC 9112 says a proxy must refuse: each shape, and what passes. */
static void test_framing_problem(void **state)
{
	static const struct mt_hdr ok[] = {{"Host", "a"}, {"Content-Length", "12"}, {"X-Y", "a\tb"}};
	static const struct mt_hdr te[] = {{"Host", "a"}, {"transfer-encoding", " Chunked "}};
	static const struct mt_hdr te_two[] = {
		{"Host", "a"}, {"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}};
	static const struct mt_hdr te_gzip[] = {{"Host", "a"}, {"Transfer-Encoding", "gzip, chunked"}};
	static const struct mt_hdr user_host[] = {{"Host", "u:p@a"}};
	static const struct mt_hdr empty_host[] = {{"Host", ""}};
	static const struct mt_hdr two_cl[] = {
		{"Host", "a"}, {"Content-Length", "5"}, {"Content-Length", "5"}};
	static const struct mt_hdr list_cl[] = {{"Host", "a"}, {"Content-Length", "5, 5"}};
	static const struct mt_hdr xchunked[] = {{"Host", "a"}, {"Transfer-Encoding", "xchunked"}};
	static const struct mt_hdr te_last[] = {
		{"Host", "a"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "gzip"}};
	static const struct mt_hdr both[] = {
		{"Host", "a"}, {"Transfer-Encoding", "chunked"}, {"Content-Length", "0"}};
	static const struct mt_hdr space[] = {{"Host", "a"}, {"Transfer-Encoding ", "chunked"}};
	static const struct mt_hdr ctl_name[] = {{"Host", "a"}, {"X\001Y", "b"}};
	static const struct mt_hdr ctl_value[] = {{"Host", "a"}, {"X-Y", "b\rc"}};
	static const struct mt_hdr empty[] = {{"Host", "a"}, {"", "b"}};
	static const struct mt_hdr hosts[] = {{"Host", "a"}, {"host", "b"}};
	static const struct mt_hdr nohost[] = {{"Content-Length", "0"}};

	(void)state;
	assert_null(mt_hdr_framing_problem(ok, 3, 1));
	assert_null(mt_hdr_framing_problem(te, 2, 1));
	assert_null(mt_hdr_framing_problem(nohost, 1, 0)); /* (HTTP/1.0 needs no Host) */
	assert_string_equal(mt_hdr_framing_problem(two_cl, 3, 1), "more than one Content-Length field");
	assert_string_equal(mt_hdr_framing_problem(list_cl, 2, 1), "a Content-Length that is not one number");
	assert_string_equal(mt_hdr_framing_problem(xchunked, 2, 1),
			    "a Transfer-Encoding other than chunked alone");
	assert_string_equal(mt_hdr_framing_problem(te_last, 3, 1),
			    "a Transfer-Encoding other than chunked alone");
	assert_string_equal(mt_hdr_framing_problem(te_two, 3, 1),
			    "a Transfer-Encoding other than chunked alone");
	assert_string_equal(mt_hdr_framing_problem(te_gzip, 2, 1),
			    "a Transfer-Encoding other than chunked alone");
	assert_string_equal(mt_hdr_framing_problem(user_host, 1, 1), "a Host that is empty or names a user");
	assert_string_equal(mt_hdr_framing_problem(empty_host, 1, 1), "a Host that is empty or names a user");
	assert_string_equal(mt_hdr_framing_problem(both, 3, 1), "both Transfer-Encoding and Content-Length");
	assert_string_equal(mt_hdr_framing_problem(te, 2, 0), "Transfer-Encoding in an HTTP/1.0 request");
	assert_string_equal(mt_hdr_framing_problem(space, 2, 1),
			    "whitespace in a header field's name (before its colon)");
	assert_string_equal(mt_hdr_framing_problem(ctl_name, 2, 1),
			    "a header field name that is not a token");
	assert_string_equal(mt_hdr_framing_problem(ctl_value, 2, 1),
			    "a control byte in a header field's value");
	assert_string_equal(mt_hdr_framing_problem(empty, 2, 1), "a header field with an empty name");
	assert_string_equal(mt_hdr_framing_problem(hosts, 2, 1), "more than one Host field");
	assert_string_equal(mt_hdr_framing_problem(nohost, 1, 1), "no Host field in an HTTP/1.1 request");
	assert_null(mt_target_problem("/mcp?a=b%20c", "POST"));
	assert_null(mt_target_problem("*", "OPTIONS"));
	assert_string_equal(mt_target_problem("*", "GET"),
			    "an asterisk target for another method than OPTIONS");
	assert_string_equal(mt_target_problem("/a b", "GET"),
			    "a space or a control byte in the request target");
	assert_string_equal(mt_target_problem("/a\x7f", "GET"),
			    "a space or a control byte in the request target");
	assert_string_equal(mt_target_problem("", "GET"), "an empty request target");
	/* Appended to the upstream's origin, these would make another URL. */
	assert_string_equal(mt_target_problem("@evil.example/x", "GET"),
			    "a request target that is not a path (origin form)");
	assert_string_equal(mt_target_problem(".evil.example/", "GET"),
			    "a request target that is not a path (origin form)");
	assert_string_equal(mt_target_problem("/mcp#frag", "POST"), "a fragment ('#') in the request target");
}

/* A raw head's bytes: where it ends, and what is wrong with them. */
static void test_head_problem(void **state)
{
	static const struct {
		const char *raw;
		size_t len;      /* its length when sound and whole */
		const char *why; /* the start of the reason, or NULL */
	} cases[] = {
		{"GET /mcp HTTP/1.1\r\nHost: a\r\n\r\nBODY", 30, NULL},
		{"GET /mcp HTTP/1.1\r\nHost: a\r\n", 0, NULL}, /* (not whole yet) */
		{"GET /mcp HTTP/1.1\nHost: a\r\n\r\n", 0, "a line not ended by CRLF"},
		{"GET /mcp HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 0, "an obsolete line folding"},
		{"GET /mcp HTTP/1.1\r\nHost : a\r\n\r\n", 0, "a field name that is not a token"},
		{"GET /mcp HTTP/1.1\r\nHost\r\n\r\n", 0, "a field line without a colon"},
		{"GET /mcp HTTP/1.1\r\nX: a\001b\r\n\r\n", 0, "a control byte in the head"},
		{"GET /a H\r\n\r\n1.1\r\nHost: x\r\n\r\n", 0, "a request line that is not"},
		{"GET /a HTTP/2.0\r\nHost: x\r\n\r\n", 0, "a request line that is not"},
		{"GET  /a HTTP/1.1\r\nHost: x\r\n\r\n", 0, "a request line that is not"},
		{"\r\nGET /a HTTP/1.1\r\n\r\n", 0, "an empty line before the request line"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = 99;
		const char *why = mt_head_problem(cases[i].raw, strlen(cases[i].raw), &len);
		if (cases[i].why) {
			assert_non_null(why);
			assert_memory_equal(why, cases[i].why, strlen(cases[i].why));
		} else {
			assert_null(why);
			assert_int_equal(len, cases[i].len);
		}
	}
}

/* Chunked framing read strictly. */
static void test_chunked_problem(void **state)
{
	static const struct {
		const char *body;
		const char *why;
	} cases[] = {
		{"3\r\nabc\r\n0\r\n\r\n", NULL},
		{"3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: v\r\n\r\n", NULL},
		{"3\r\nabcXY0\r\n\r\n", "a chunk's data not followed by CRLF"},
		{"3\rXabc\r\n0\r\n\r\n", "a chunk size line not ended by CRLF"},
		{"zz\r\n", "a chunk size line that does not begin with hex digits"},
		{"10000000000000000\r\n", "a chunk size of more than 16 hex digits"},
		{"5\r\nabc\r\n", "a chunk shorter than its size"},
		{"0\r\nX T: v\r\n\r\n", "a trailer field whose name is not a token"},
		{"0\r\nX-T: v\n\r\n", "a trailer line not ended by CRLF"},
		{"0\r\n\r\nGET", "bytes after the chunked body's end"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why =
			mt_chunked_problem((const unsigned char *)cases[i].body, strlen(cases[i].body));
		if (cases[i].why)
			assert_string_equal(why, cases[i].why);
		else
			assert_null(why);
	}
}

/* What the tap and the mock refuse in a parsed head, in order, with its status. */
static void test_request_refusal(void **state)
{
	static const char ok[] = "GET /mcp HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char conn[] = "CONNECT a:22 HTTP/1.1\r\nHost: a:22\r\n\r\n";
	struct mt_hdr host = {"Host", "a"},
		      two_cl[] = {{"Host", "a"}, {"Content-Length", "1"}, {"Content-Length", "2"}};
	struct mt_head_split sp;
	size_t len = 0;
	int status = 0;

	(void)state;
	assert_null(mt_request_refusal(ok, strlen(ok), &len, "GET", "/mcp", &host, 1, 1, &status));
	assert_int_equal(len, strlen(ok));
	assert_string_equal(
		mt_request_refusal(conn, strlen(conn), &len, "CONNECT", "a:22", &host, 1, 1, &status),
		"CONNECT (a tunnel) through a reverse proxy");
	assert_int_equal(status, 405);
	assert_string_equal(mt_request_refusal(ok, strlen(ok), &len, "GET", "@evil/x", &host, 1, 1, &status),
			    "a request target that is not a path (origin form)");
	assert_int_equal(status, 400);
	assert_string_equal(
		mt_request_refusal(ok, strlen(ok), &len, "GET", "http://a/x#f", &host, 1, 1, &status),
		"a fragment ('#') in the request target");
	assert_string_equal(mt_request_refusal(ok, strlen(ok), &len, "POST", "/mcp", two_cl, 3, 1, &status),
			    "more than one Content-Length field");
	/* A head the parser refused: split, and said in the same words. */
	{
		static const char bad[] = "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : "
					  "chunked\r\nContent-Length: 0\r\n\r\n";
		assert_string_equal(mt_head_split_refusal(bad, strlen(bad), &sp),
				    "whitespace in a header field's name (before its colon)");
		assert_string_equal(sp.method, "POST");
		assert_string_equal(sp.target, "/mcp");
		assert_int_equal(sp.nh, 3);
		mt_head_split_free(&sp);
	}
	/* No version: the request line is wrong, not its target. */
	{
		static const char hello[] = "HELLO THERE\r\n\r\n",
				  empty[] = "GET  HTTP/1.1\r\nHost: a\r\n\r\n";
		assert_string_equal(mt_head_split_refusal(hello, strlen(hello), &sp),
				    "a request line that is not METHOD SP target SP HTTP/1.x");
		mt_head_split_free(&sp);
		assert_string_equal(mt_head_split_refusal(empty, strlen(empty), &sp),
				    "an empty request target");
		mt_head_split_free(&sp);
	}
	assert_string_equal(mt_http_reason(405), "Method Not Allowed");
	assert_string_equal(mt_http_reason(431), "Request Header Fields Too Large");
}

int main(void)
{
	const struct CMUnitTest httphdr[] = {
		cmocka_unit_test(test_hop_by_hop),
		cmocka_unit_test(test_framing_problem),
		cmocka_unit_test(test_filter_request),
		cmocka_unit_test(test_filter_response),
		cmocka_unit_test(test_connection_tokens),
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_has_token),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_redacted),
		cmocka_unit_test(test_json_not_utf8),
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_head_problem),
		cmocka_unit_test(test_chunked_problem),
		cmocka_unit_test(test_request_refusal),
	};

	return cmocka_run_group_tests(httphdr, setup, teardown);
}
