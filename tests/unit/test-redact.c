/*
 * test-redact.c - the redaction module (schema/redact.h): SipHash-2-4 against
 * its published vectors, markers, every built-in rule with its exact output,
 * ordinary text and MCP's own names left alone, JSON rewritten only where a
 * secret was, escaped secrets, user rules, command lines, headers, URLs, the
 * key file, and hostile input.
 */
#include "tests/unit/unit.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "schema/redact.h"

static const unsigned char KEY[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static struct mt_redact *R;

static int setup(void **state)
{
	(void)state;
	R = mt_redact_new(KEY);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mt_redact_free(R);
	return 0;
}

/* The marker of a secret, as a new string. */
static char *mk(const char *secret)
{
	char m[MT_REDACT_MARKER_LEN + 1];

	mt_redact_marker(R, secret, strlen(secret), m);
	return mt_strdup(m);
}

/* Redact text (text: 1) or a JSON message, and return the result (or NULL: untouched). */
static char *red(const struct mt_redact *r, const char *in, int text)
{
	struct mt_buf out = MT_BUF_INIT;
	struct mt_class c;
	int rc;

	if (text) {
		rc = mt_redact_text(r, in, strlen(in), &out);
	} else {
		mt_classify(in, strlen(in), &c);
		rc = mt_redact_message(r, in, strlen(in), c.kind, &out);
	}
	if (!rc) {
		assert_null(out.data);
		return NULL;
	}
	return out.data ? out.data : mt_strdup("");
}

/* in redacts to want, where each %s in want is the marker of the matching secret. */
static void expect(int text, const char *in, const char *want_fmt, const char *s1, const char *s2)
{
	char *m1 = s1 ? mk(s1) : NULL, *m2 = s2 ? mk(s2) : NULL;
	char *want = mt_asprintf(want_fmt, m1 ? m1 : "", m2 ? m2 : "");
	char *got = red(R, in, text);

	if (!got)
		fail_msg("'%s' was left as it is; want '%s'", in, want);
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(m1);
	free(m2);
}

static void untouched(int text, const char *in)
{
	char *got = red(R, in, text);

	if (got)
		fail_msg("'%s' became '%s'", in, got);
}

/* ---- the hash and the marker ---- */

static void test_siphash_vectors(void **state)
{
	unsigned char msg[64];

	(void)state;
	for (int i = 0; i < 64; i++)
		msg[i] = (unsigned char)i;
	/* From the SipHash paper (Aumasson, Bernstein), appendix A, and the
	 * reference implementation's vectors: key 00..0f, messages 00..(n-1). */
	assert_int_equal(mt_siphash24(KEY, msg, 15), 0xa129ca6149be45e5ULL);
	assert_int_equal(mt_siphash24(KEY, msg, 0), 0x726fdb47dd0e0e31ULL);
	assert_int_equal(mt_siphash24(KEY, msg, 1), 0x74f839c593dc67fdULL);
	assert_int_equal(mt_siphash24(KEY, msg, 8), 0x93f5f5799a932462ULL);
}

static void test_marker(void **state)
{
	char a[MT_REDACT_MARKER_LEN + 1], b[MT_REDACT_MARKER_LEN + 1], c[MT_REDACT_MARKER_LEN + 1];
	unsigned char other[16];
	struct mt_redact *r2;

	(void)state;
	mt_redact_marker(R, "hunter2", 7, a);
	mt_redact_marker(R, "hunter2", 7, b);
	mt_redact_marker(R, "hunter3", 7, c);
	assert_int_equal(strlen(a), MT_REDACT_MARKER_LEN);
	assert_string_equal(a, b);     /* equal secrets, equal markers */
	assert_string_not_equal(a, c); /* different ones differ */
	assert_true(mt_redact_is_marker(a, strlen(a)));
	assert_memory_equal(a, "[redacted:", 10);
	/* The hash is keyed: another key, another marker. */
	memset(other, 7, sizeof(other));
	r2 = mt_redact_new(other);
	mt_redact_marker(r2, "hunter2", 7, c);
	assert_string_not_equal(a, c);
	mt_redact_free(r2);
	assert_false(mt_redact_is_marker("[redacted:0123456g]", 19));
	assert_false(mt_redact_is_marker("[redacted:0123456]", 18));
	assert_false(mt_redact_is_marker("[redacted:01234567)", 19));
	assert_true(mt_redact_is_marker("[redacted:0123abcd]", 19));
	const char *t = "x [redacted:x] [redacted:0123abcd] y";
	assert_ptr_equal(mt_redact_find_marker(t, strlen(t)), t + 15);
	assert_null(mt_redact_find_marker("no marker", 9));
}

/* ---- text (stderr lines) ---- */

static void test_text_bearer(void **state)
{
	(void)state;
	expect(1, "Authorization: Bearer abcdef123456\n", "Authorization: Bearer %s\n", "abcdef123456", NULL);
	expect(1, "curl -H 'authorization: bearer eyJhbGciOi.x'", "curl -H 'authorization: bearer %s'",
	       "eyJhbGciOi.x", NULL);
	expect(1, "using Basic dXNlcjpwYXNz for the proxy", "using Basic %s for the proxy", "dXNlcjpwYXNz",
	       NULL);
	/* Too short to be a credential: "bearer of news". */
	untouched(1, "a bearer of bad news\n");
}

static void test_text_assignments(void **state)
{
	(void)state;
	expect(1, "API_KEY=abc123 started\n", "API_KEY=%s started\n", "abc123", NULL);
	expect(1, "token: s3cr3t-value, user: bob", "token: %s, user: bob", "s3cr3t-value", NULL);
	expect(1, "config {\"apiKey\": \"k-1\", \"name\": \"x\"}",
	       "config {\"apiKey\": \"%s\", \"name\": \"x\"}", "k-1", NULL);
	expect(1, "--password=hunter2", "--password=%s", "hunter2", NULL);
	expect(1, "GET /v1?access_token=abc&x=1", "GET /v1?access_token=%s&x=1", "abc", NULL);
	expect(1, "Cookie: sid=1; theme=dark\r\n", "Cookie: %s\r\n", "sid=1; theme=dark", NULL);
	expect(1, "STRIPE_SECRET_KEY=sk_live_x and DB_PASSWORD='p w'",
	       "STRIPE_SECRET_KEY=%s and DB_PASSWORD='%s'", "sk_live_x", "p w");
	/* MCP's own names, and counts, are not credentials. */
	untouched(1, "progressToken: 42 nextPageToken=abc max_tokens=100 cursor=7\n");
	/* PWD is the working directory; BYPASS is no password. */
	untouched(1, "PWD=/home/me NO_BYPASS=1 \"PWD\": \"/srv\"\n");
	expect(1, "DB_PASS=a1 DB_PWD=b2", "DB_PASS=%s DB_PWD=%s", "a1", "b2");
	/* A key named in prose, with no value: nothing. */
	untouched(1, "the api key is set in the config file\n");
	/* A marker already there stays as it is. */
	untouched(1, "token=[redacted:0123abcd]");
}

static void test_text_formats(void **state)
{
	(void)state;
	expect(1, "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012 used", "key %s used",
	       "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012", NULL);
	expect(1, "push with ghp_0123456789abcdefghijklmnopqrstuvwxyzAB!", "push with %s!",
	       "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", NULL);
	expect(1, "slack xoxb-1234567890-abcdef", "slack %s", "xoxb-1234567890-abcdef", NULL);
	expect(1, "aws AKIAIOSFODNN7EXAMPLE done", "aws %s done", "AKIAIOSFODNN7EXAMPLE", NULL);
	expect(1, "g AIzaSyA-1234567890abcdefghijklmnopqrstu", "g %s",
	       "AIzaSyA-1234567890abcdefghijklmnopqrstu", NULL);
	expect(1, "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk_XYZ end", "jwt %s end",
	       "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk_XYZ", NULL);
	expect(1, "gitlab glpat-abcdefghij0123456789", "gitlab %s", "glpat-abcdefghij0123456789", NULL);
	expect(1, "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nnext", "%s\nnext",
	       "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", NULL);
	/* Lookalikes: too short, inside a word, a public certificate. */
	untouched(1,
		  "task-1 sk-short ghp_short xoxb- AKIA123 eyJx.eyJy.z risk-assessment-framework-v2-final\n");
	untouched(1, "mask-abcdefghijklmnopqrstuvwxyz0123456789\n");
	untouched(1, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
}

static void test_text_ordinary(void **state)
{
	static const char *const lines[] = {
		"Server started on port 3000\n",
		"[info] tools/list returned 12 tools\n",
		"Processing request 7: {\"name\":\"search\",\"arguments\":{\"q\":\"cats\"}}\n",
		"warning: the cache key space is 90% full\n",
		"passed 10 tests, 0 failed\n",
		"Authentication succeeded for user bob\n",
		"",
		"\xff\xfe invalid utf-8 \xc3\x28 token\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		untouched(1, lines[i]);
}

/* ---- JSON messages ---- */

static void test_json_members(void **state)
{
	(void)state;
	expect(0,
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"q\","
	       "\"arguments\":{\"apiKey\":\"k1\",\"query\":\"x\",\"auth\":{\"password\":\"p\"}}}}\n",
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"q\","
	       "\"arguments\":{\"apiKey\":\"%s\",\"query\":\"x\",\"auth\":{\"password\":\"%s\"}}}}\n",
	       "k1", "p");
	/* Every spelling of a name; numbers, booleans and objects under it are left. */
	expect(0, "{\"API-KEY\":\"a\",\"Access_Token\":7,\"client_secret\":\"c\",\"token\":true}",
	       "{\"API-KEY\":\"%s\",\"Access_Token\":7,\"client_secret\":\"%s\",\"token\":true}", "a", "c");
	/* An array of credentials is credentials. */
	expect(0, "{\"tokens\":1,\"refresh_token\":[\"r1\",\"r2\"]}",
	       "{\"tokens\":1,\"refresh_token\":[\"%s\",\"%s\"]}", "r1", "r2");
	/* Equal secrets, equal markers, wherever they are. */
	char *m = mk("same");
	char *got = red(R, "{\"token\":\"same\",\"x\":{\"password\":\"same\"}}", 0);
	char *want = mt_asprintf("{\"token\":\"%s\",\"x\":{\"password\":\"%s\"}}", m, m);
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(m);
}

static void test_json_escaped(void **state)
{
	(void)state;
	/* The hash is of the decoded secret: an escaped spelling gives the same marker. */
	expect(0, "{\"token\":\"s\\u0065cret\"}", "{\"token\":\"%s\"}", "secret", NULL);
	/* A key format spelled with escapes is found, and the string is quoted again. */
	expect(0, "{\"text\":\"use \\u0073k-abcdefghijklmnopqrstuvwxyz01\\n\\\"ok\\\"\"}",
	       "{\"text\":\"use %s\\n\\\"ok\\\"\"}", "sk-abcdefghijklmnopqrstuvwxyz01", NULL);
	/* A key name spelled with escapes. */
	expect(0, "{\"p\\u0061ssword\":\"x\"}", "{\"p\\u0061ssword\":\"%s\"}", "x", NULL);
}

static void test_json_mcp_names(void **state)
{
	(void)state;
	untouched(0, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
		     "{\"progressToken\":\"abc\",\"progress\":1}}");
	untouched(0, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[],\"nextCursor\":\"c2\"}}");
	untouched(0, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\",\"params\":"
		     "{\"maxTokens\":100,\"messages\":[]}}");
	untouched(0, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"usage\":{\"input_tokens\":3,"
		     "\"output_tokens\":4},\"pageToken\":\"p\",\"keys\":[\"a\"]}}");
	untouched(0,
		  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		  "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}");
	/* A marker under a credential key stays as it is (redacting twice changes nothing). */
	untouched(0, "{\"token\":\"[redacted:0123abcd]\"}");
}

static void test_json_bytes_kept(void **state)
{
	/* Whitespace, key order, number spelling and the line end stay byte for byte. */
	(void)state;
	expect(0, "  { \"b\" : 1.50e+2 ,\n \"password\" :\t\"x\" , \"a\":[ ] }\r\n",
	       "  { \"b\" : 1.50e+2 ,\n \"password\" :\t\"%s\" , \"a\":[ ] }\r\n", "x", NULL);
}

static void test_json_invalid_is_text(void **state)
{
	(void)state;
	/* Not JSON: the text rules. */
	expect(0, "{\"token\": \"abc\", oops", "{\"token\": \"%s\", oops", "abc", NULL);
	untouched(0, "{\"a\": [1, 2,");
}

/* ---- user rules ---- */

static void test_user_rules(void **state)
{
	struct mt_err err = {"", 0};
	struct mt_redact *r = mt_redact_new(KEY);
	char *got, *want, *m1, *m2, *m3;

	(void)state;
	assert_int_equal(mt_redact_add_key(r, "X-Customer-Ref"), 0);
	assert_int_equal(mt_redact_add_path(r, "params.arguments.query", &err), 0);
	assert_int_equal(mt_redact_add_path(r, "result.content[*].data", &err), 0);
	assert_int_equal(mt_redact_add_value(r, "ACCT-[0-9]{6}", &err), 0);
	got = red(r,
		  "{\"params\":{\"arguments\":{\"query\":\"q1\",\"queryx\":\"keep\",\"customer_ref\":\"c\","
		  "\"xcustomerref\":\"c2\",\"note\":\"see ACCT-123456 and ACCT-12\"}}}",
		  0);
	m1 = mk("q1");
	m2 = mk("c2");
	m3 = mk("ACCT-123456");
	want = mt_asprintf(
		"{\"params\":{\"arguments\":{\"query\":\"%s\",\"queryx\":\"keep\",\"customer_ref\":\"c\","
		"\"xcustomerref\":\"%s\",\"note\":\"see %s and ACCT-12\"}}}",
		m1, m2, m3);
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(m1);
	got = red(r, "{\"result\":{\"content\":[{\"data\":\"d0\"},{\"data\":\"d1\",\"x\":\"d\"}]}}", 0);
	m1 = mk("d0");
	free(m2);
	m2 = mk("d1");
	want = mt_asprintf("{\"result\":{\"content\":[{\"data\":\"%s\"},{\"data\":\"%s\",\"x\":\"d\"}]}}", m1,
			   m2);
	assert_string_equal(got, want);
	free(got);
	free(want);
	/* A path covers what is under it. */
	assert_int_equal(mt_redact_add_path(r, "params.blob", &err), 0);
	got = red(r, "{\"params\":{\"blob\":{\"a\":\"1\",\"b\":[\"2\"]}}}", 0);
	assert_non_null(got);
	assert_null(strstr(got, "\"1\""));
	assert_null(strstr(got, "\"2\""));
	free(got);
	/* The regex in text too. */
	got = red(r, "moved ACCT-000001 to ACCT-000002\n", 1);
	assert_non_null(got);
	assert_null(strstr(got, "ACCT-0"));
	free(got);
	free(m1);
	free(m2);
	free(m3);
	/* Bad rules are refused with the reason. */
	assert_int_equal(mt_redact_add_value(r, "a(b", &err), -1);
	assert_non_null(strstr(err.msg, "--redact-value 'a(b'"));
	assert_int_equal(mt_redact_add_path(r, ".a", &err), -1);
	assert_int_equal(mt_redact_add_path(r, "a..b", &err), -1);
	assert_int_equal(mt_redact_add_path(r, "a[x]", &err), -1);
	assert_int_equal(mt_redact_add_path(r, "a[0].b[*].*", &err), 0);
	mt_redact_free(r);
}

/* ---- command lines ---- */

static void test_command(void **state)
{
	char *const argv[] = {"node",
			      "srv.js",
			      "--api-key=k1",
			      "--token",
			      "t1",
			      "--port",
			      "3000",
			      "OPENAI_API_KEY=sk-x",
			      "DEBUG=1",
			      "--verbose",
			      "--password",
			      "p w",
			      "--url=https://u:pw@h/x?token=abc",
			      NULL};
	char *got = mt_redact_command(R, argv);
	char *k1 = mk("k1"), *t1 = mk("t1"), *sk = mk("sk-x"), *pw = mk("p w"), *abc = mk("abc"),
	     *upw = mk("pw");
	char *want = mt_asprintf("node srv.js '--api-key=%s' --token '%s' --port 3000 'OPENAI_API_KEY=%s' "
				 "DEBUG=1 --verbose --password '%s' '--url=https://u:%s@h/x?token=%s'",
				 k1, t1, sk, pw, upw, abc);

	(void)state;
	assert_string_equal(got, want);
	free(got);
	free(want);
	/* No redactor: the plain quoted command line. */
	got = mt_redact_command(NULL, argv);
	assert_non_null(strstr(got, "--api-key=k1"));
	free(got);
	free(k1);
	free(t1);
	free(sk);
	free(pw);
	free(abc);
	free(upw);
}

/* What a review found left in the clear, each kept out now. */
static void test_review_cases(void **state)
{
	(void)state;
	/* Authorization: whatever the scheme, the rest of the line. */
	expect(1, "Authorization: token SECRET30aaaa\n", "Authorization: token %s\n", "SECRET30aaaa", NULL);
	expect(1, "Authorization: Bearer abc123\n", "Authorization: Bearer %s\n", "abc123", NULL);
	expect(1, "proxy-authorization: Negotiate YII and more", "proxy-authorization: Negotiate %s",
	       "YII and more", NULL);
	expect(1, "Authorization: opaque-credential", "Authorization: %s", "opaque-credential", NULL);
	expect(1, "{\"Authorization\": \"Basic dXNlcjpw\", \"x\": 1}",
	       "{\"Authorization\": \"Basic %s\", \"x\": 1}", "dXNlcjpw", NULL);
	/* URL passwords, in text and in JSON strings. */
	expect(1, "connect postgres://app:hunter2@db:5432/x ok", "connect postgres://app:%s@db:5432/x ok",
	       "hunter2", NULL);
	expect(0, "{\"url\":\"https://u:pw9@example.com/x\"}", "{\"url\":\"https://u:%s@example.com/x\"}",
	       "pw9", NULL);
	untouched(1, "see http://example.com:8080/a@b and mailto:me@x\n");
	/* Everything under a credential's name, not only its strings at the top. */
	expect(0, "{\"credentials\":{\"pw\":\"x1\"},\"password\":[{\"v\":\"y2\"}]}",
	       "{\"credentials\":{\"pw\":\"%s\"},\"password\":[{\"v\":\"%s\"}]}", "x1", "y2");
	/* Environment-style names as JSON members. */
	expect(0, "{\"env\":{\"STRIPE_KEY\":\"s1\",\"HOME\":\"/root\",\"GITHUB_PAT\":\"g3\"}}",
	       "{\"env\":{\"STRIPE_KEY\":\"%s\",\"HOME\":\"/root\",\"GITHUB_PAT\":\"%s\"}}", "s1", "g3");
	/* The header-list shape. */
	expect(0,
	       "{\"h\":[{\"name\":\"Authorization\",\"value\":\"token "
	       "X\"},{\"name\":\"Accept\",\"value\":\"a\"}]}",
	       "{\"h\":[{\"name\":\"Authorization\",\"value\":\"%s\"},{\"name\":\"Accept\",\"value\":\"a\"}]"
	       "}",
	       "token X", NULL);
	/* Plurals; counts under token-like names stay (usage.inputTokens). */
	expect(0, "{\"tokens\":[\"a1\"],\"apiKeys\":[\"b2\"],\"usage\":{\"inputTokens\":5}}",
	       "{\"tokens\":[\"%s\"],\"apiKeys\":[\"%s\"],\"usage\":{\"inputTokens\":5}}", "a1", "b2");
	expect(1, "GITHUB_PAT=ghx1 --pat=p2", "GITHUB_PAT=%s --pat=%s", "ghx1", "p2");
}

/* A private key on stderr, line by line: its body too. */
static void test_pem_lines(void **state)
{
	const char *lines[] = {"starting\n",         "-----BEGIN PRIVATE KEY-----\n", "MIIEvQIBADANBgkq\n",
			       "hkiG9w0BAQEFAASC\n", "-----END PRIVATE KEY-----\n",   "listening on 3000\n"};
	struct mt_buf out = MT_BUF_INIT;
	int st = 0, changed[6];

	(void)state;
	for (int i = 0; i < 6; i++) {
		changed[i] = mt_redact_line(R, &st, lines[i], strlen(lines[i]), &out);
		if (i == 2 || i == 3) {
			char *m = mk(i == 2 ? "MIIEvQIBADANBgkq" : "hkiG9w0BAQEFAASC");
			char *want = mt_asprintf("%s\n", m);
			assert_string_equal(out.data, want);
			free(want);
			free(m);
		}
	}
	assert_int_equal(changed[0], 0);
	assert_int_equal(changed[1], 0); /* the BEGIN and END lines hold no secret */
	assert_int_equal(changed[2], 1);
	assert_int_equal(changed[3], 1);
	assert_int_equal(changed[4], 0);
	assert_int_equal(changed[5], 0);
	assert_int_equal(st, 0);
	mt_buf_release(&out);
}

/* The user's own names and paths take numbers too; the built-in names do not. */
static void test_user_numbers(void **state)
{
	struct mt_redact *r = mt_redact_new(KEY);
	struct mt_err err = {"", 0};
	char m1[MT_REDACT_MARKER_LEN + 1], m2[MT_REDACT_MARKER_LEN + 1];

	(void)state;
	mt_redact_add_key(r, "pin");
	assert_int_equal(mt_redact_add_path(r, "params.card", &err), 0);
	mt_redact_marker(r, "1234", 4, m1);
	mt_redact_marker(r, "4111", 4, m2);
	char *got = red(r, "{\"params\":{\"pin\":1234,\"card\":{\"n\":4111},\"token\":7}}", 0);
	char *want = mt_asprintf("{\"params\":{\"pin\":\"%s\",\"card\":{\"n\":\"%s\"},\"token\":7}}", m1, m2);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	free(want);
	mt_redact_free(r);
}

/* A script on the command line: only what follows a credential's name, not the rest. */
static void test_command_script(void **state)
{
	char *const argv[] = {"sh", "-c", "echo --password=x1 done; node -e \"const token='t2'; run()\"",
			      NULL};
	char *got = mt_redact_command(R, argv);
	char *x1 = mk("x1"), *t2 = mk("t2");
	char *want = mt_asprintf(
		"sh -c 'echo --password=%s done; node -e \"const token='\\''%s'\\''; run()\"'", x1, t2);

	(void)state;
	assert_string_equal(got, want);
	free(got);
	free(want);
	free(x1);
	free(t2);
}

/* ---- HTTP ---- */

static void test_header_url(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	char *m = mk("abc123"), *want;

	(void)state;
	assert_int_equal(mt_redact_header(R, "Authorization", "Bearer abc123", 13, &out), 1);
	want = mt_asprintf("Bearer %s", m);
	assert_string_equal(out.data, want);
	free(want);
	assert_int_equal(mt_redact_header(R, "X-Api-Key", "abc123", 6, &out), 1);
	assert_string_equal(out.data, m);
	free(m);
	assert_int_equal(mt_redact_header(R, "Cookie", "a=1; b=2", 8, &out), 1);
	m = mk("1");
	char *m2 = mk("2");
	want = mt_asprintf("a=%s; b=%s", m, m2);
	assert_string_equal(out.data, want);
	free(want);
	free(m2);
	assert_int_equal(mt_redact_header(R, "Set-Cookie", "sid=1; Path=/; HttpOnly", 23, &out), 1);
	want = mt_asprintf("sid=%s; Path=/; HttpOnly", m);
	assert_string_equal(out.data, want);
	free(want);
	/* A cookie without a name: its whole value. */
	assert_int_equal(mt_redact_header(R, "Cookie", "abc; b=2", 8, &out), 1);
	m2 = mk("abc");
	char *m3 = mk("2");
	want = mt_asprintf("%s; b=%s", m2, m3);
	assert_string_equal(out.data, want);
	free(want);
	free(m2);
	free(m3);
	assert_int_equal(mt_redact_header(R, "Cookie", "", 0, &out), 0);
	assert_int_equal(mt_redact_header(R, "Content-Type", "application/json", 16, &out), 0);
	assert_int_equal(mt_redact_header(R, "Mcp-Session-Id", "abc-123", 7, &out), 0);
	/* A challenge is not a credential: its scheme's parameters stay (a client
	 * needs resource_metadata to find the authorization server). */
	{
		static const char *const challenges[] = {
			"Bearer "
			"resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/"
			"mcp\"",
			"Bearer realm=\"mcp\", error=\"invalid_token\", error_description=\"expired\"",
			"Basic realm=\"staging\"",
		};
		for (size_t i = 0; i < sizeof(challenges) / sizeof(challenges[0]); i++) {
			assert_int_equal(mt_redact_header(R, "WWW-Authenticate", challenges[i],
							  strlen(challenges[i]), &out),
					 0);
			assert_int_equal(mt_redact_header(R, "Proxy-Authenticate", challenges[i],
							  strlen(challenges[i]), &out),
					 0);
		}
		/* (a key format in one is still found) */
		const char *leak = "Bearer realm=\"ghp_abcdefghijklmnopqrstuvwxyz0123456789\"";
		assert_int_equal(mt_redact_header(R, "WWW-Authenticate", leak, strlen(leak), &out), 1);
		assert_null(strstr(out.data, "ghp_abcdef"));
	}
	const char *u = "https://user:pw@example.com/mcp?key=AIz&x=1&access_token=t#frag";
	assert_int_equal(mt_redact_url(R, u, strlen(u), &out), 1);
	char *a = mk("pw"), *b = mk("AIz"), *c = mk("t");
	want = mt_asprintf("https://user:%s@example.com/mcp?key=%s&x=1&access_token=%s#frag", a, b, c);
	assert_string_equal(out.data, want);
	free(want);
	free(a);
	free(b);
	free(c);
	free(m);
	assert_int_equal(mt_redact_url(R, "/mcp?session=1", 14, &out), 0);
	mt_buf_release(&out);
}

/*
 * mt_redact_header(name, value) gives want, each %s in want the marker of the
 * matching secret (up to three); want NULL: the value is left as it is.
 */
static void hdr(const char *name, const char *value, const char *want_fmt, const char *s1, const char *s2,
		const char *s3)
{
	struct mt_buf out = MT_BUF_INIT;
	int rc = mt_redact_header(R, name, value, strlen(value), &out);

	if (!want_fmt) {
		if (rc)
			fail_msg("%s: '%s' became '%.*s'", name, value, (int)out.len, out.data);
		mt_buf_release(&out);
		return;
	}
	char *m1 = mk(s1), *m2 = s2 ? mk(s2) : NULL, *m3 = s3 ? mk(s3) : NULL;
	char *want = mt_asprintf(want_fmt, m1, m2 ? m2 : "", m3 ? m3 : "");
	if (!rc)
		fail_msg("%s: '%s' was left as it is; want '%s'", name, value, want);
	mt_buf_putc(&out, '\0');
	assert_string_equal(out.data, want);
	free(want);
	free(m1);
	free(m2);
	free(m3);
	mt_buf_release(&out);
}

/* The same for mt_redact_url. */
static void url(const char *in, const char *want_fmt, const char *s1, const char *s2, const char *s3)
{
	struct mt_buf out = MT_BUF_INIT;
	int rc = mt_redact_url(R, in, strlen(in), &out);

	if (!want_fmt) {
		if (rc)
			fail_msg("'%s' became '%.*s'", in, (int)out.len, out.data);
		mt_buf_release(&out);
		return;
	}
	char *m1 = mk(s1), *m2 = s2 ? mk(s2) : NULL, *m3 = s3 ? mk(s3) : NULL;
	char *want = mt_asprintf(want_fmt, m1, m2 ? m2 : "", m3 ? m3 : "");
	if (!rc)
		fail_msg("'%s' was left as it is; want '%s'", in, want);
	mt_buf_putc(&out, '\0');
	assert_string_equal(out.data, want);
	free(want);
	free(m1);
	free(m2);
	free(m3);
	mt_buf_release(&out);
}

/* Headers that carry credentials, each with its exact stored form. */
static void test_header_carriers(void **state)
{
	(void)state;
	/* The scheme word stays; a value of one word is all credential. */
	hdr("Authentication", "Bearer authn-s3cret", "Bearer %s", "authn-s3cret", NULL, NULL);
	hdr("authentication", "authn-opaque-1", "%s", "authn-opaque-1", NULL, NULL);
	hdr("Proxy-Authorization", "Basic cHJveHk6cHc=", "Basic %s", "cHJveHk6cHc=", NULL, NULL);
	hdr("PROXY-AUTHORIZATION", "opaque-proxy-cred", "%s", "opaque-proxy-cred", NULL, NULL);
	hdr("Authorization",
	    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/s3/aws4_request, "
	    "SignedHeaders=host;x-amz-date, "
	    "Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
	    "AWS4-HMAC-SHA256 %s",
	    "Credential=AKIDEXAMPLE/20240101/us-east-1/s3/aws4_request, "
	    "SignedHeaders=host;x-amz-date, "
	    "Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
	    NULL, NULL);
	hdr("X-Forwarded-Authorization", "Bearer fwd-tok", "Bearer %s", "fwd-tok", NULL, NULL);
	hdr("X-Authorization", "xauth-1", "%s", "xauth-1", NULL, NULL);
	/* Cookies: each value, the names and Set-Cookie's attributes kept. */
	hdr("COOKIE", "sid=c1; csrftoken=c2", "sid=%s; csrftoken=%s", "c1", "c2", NULL);
	hdr("set-cookie", "__Host-sid=c3; Secure; Path=/", "__Host-sid=%s; Secure; Path=/", "c3", NULL, NULL);
	/* Credential-named headers: the whole value, whatever the case. */
	hdr("x-api-key", "ak-1", "%s", "ak-1", NULL, NULL);
	hdr("Api-Key", "ak-2", "%s", "ak-2", NULL, NULL);
	hdr("X-Goog-Api-Key", "ak-3", "%s", "ak-3", NULL, NULL);
	hdr("X-Auth-Token", "at-1", "%s", "at-1", NULL, NULL);
	hdr("X-Access-Token", "at-2", "%s", "at-2", NULL, NULL);
	hdr("Private-Token", "at-3", "%s", "at-3", NULL, NULL);
	hdr("X-Amz-Security-Token", "FwoGZXIvYXdzE-st", "%s", "FwoGZXIvYXdzE-st", NULL, NULL);
	hdr("X-Session-Token", "st-2", "%s", "st-2", NULL, NULL);
	hdr("X-Client-Secret", "cs-1", "%s", "cs-1", NULL, NULL);
	hdr("X-Password", "pw-1", "%s", "pw-1", NULL, NULL);
	hdr("X-Amz-Signature", "sig-1", "%s", "sig-1", NULL, NULL);
	hdr("X-Hub-Signature-256", "sha256=abc", "%s", "sha256=abc", NULL, NULL);
	hdr("Signature", "sig1=:dGVzdA==:", "%s", "sig1=:dGVzdA==:", NULL, NULL);
	hdr("X-Goog-Credential", "cred-1", "%s", "cred-1", NULL, NULL);
	hdr("X-Auth-Key", "cf-1", "%s", "cf-1", NULL, NULL);
	hdr("Ocp-Apim-Subscription-Key", "az-1", "%s", "az-1", NULL, NULL);
	hdr("x-functions-key", "az-2", "%s", "az-2", NULL, NULL);
	hdr("DD-Application-Key", "dd-1", "%s", "dd-1", NULL, NULL);
	/* A URL in a header: its credential-named query parameters. */
	hdr("Location",
	    "https://b.s3.amazonaws.com/"
	    "f.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20240101"
	    "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=abc123",
	    "https://b.s3.amazonaws.com/f.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s"
	    "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=%s",
	    "AKID%2F20240101", "abc123", NULL);
	hdr("Location", "https://app.example/cb?code=ac-1&state=xyz",
	    "https://app.example/cb?code=%s&state=xyz", "ac-1", NULL, NULL);
	/* Ordinary headers, and those the analyzer and replay read, stay. */
	hdr("Accept", "application/json, text/event-stream", NULL, NULL, NULL, NULL);
	hdr("Content-Type", "application/json", NULL, NULL, NULL, NULL);
	hdr("Mcp-Session-Id", "1868a90c-session", NULL, NULL, NULL, NULL);
	hdr("MCP-Protocol-Version", "2025-06-18", NULL, NULL, NULL, NULL);
	hdr("Last-Event-ID", "stream-1:42", NULL, NULL, NULL, NULL);
	hdr("Idempotency-Key", "ik-1", NULL, NULL, NULL, NULL);
	hdr("X-Amz-Date", "20240101T000000Z", NULL, NULL, NULL, NULL);
	hdr("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD", NULL, NULL, NULL, NULL);
	hdr("Signature-Input", "sig1=(\"@method\");keyid=\"k\"", NULL, NULL, NULL, NULL);
	hdr("Location", "/mcp?sessionId=abc&cursor=c2", NULL, NULL, NULL, NULL);
}

/* Query parameters that carry credentials, each with its exact stored form. */
static void test_query_carriers(void **state)
{
	(void)state;
	/* AWS SigV4 presigned: the signature, the credential and the session token;
	 * the algorithm, date, expiry and signed header names stay. */
	url("/mcp?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20240101%2Fus-east-1%2Fs3%2Faws4_"
	    "request"
	    "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-Security-Token=FwoG-st&X-Amz-SignedHeaders="
	    "host"
	    "&X-Amz-Signature=fe5f80f7",
	    "/mcp?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s"
	    "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-Security-Token=%s&X-Amz-SignedHeaders=host"
	    "&X-Amz-Signature=%s",
	    "AKID%2F20240101%2Fus-east-1%2Fs3%2Faws4_request", "FwoG-st", "fe5f80f7");
	url("/o?x-amz-signature=lower1", "/o?x-amz-signature=%s", "lower1", NULL, NULL);
	/* Google Cloud Storage V4. */
	url("/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=svc%40p.iam&X-Goog-Date=20240101T000000Z"
	    "&X-Goog-Signature=9a8b7c",
	    "/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=%s&X-Goog-Date=20240101T000000Z"
	    "&X-Goog-Signature=%s",
	    "svc%40p.iam", "9a8b7c", NULL);
	/* Azure SAS: sig only. */
	url("/c/b?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01&sig=AbC%2Bd%3D",
	    "/c/b?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01&sig=%s", "AbC%2Bd%3D", NULL, NULL);
	/* CloudFront and the older S3 and GCS signed URLs. */
	url("/f?Expires=1700000000&Signature=cf~sig&Key-Pair-Id=K2JCJMDEHXQW5F",
	    "/f?Expires=1700000000&Signature=%s&Key-Pair-Id=K2JCJMDEHXQW5F", "cf~sig", NULL, NULL);
	url("/f?GoogleAccessId=svc&Expires=1&SIGNATURE=v2sig", "/f?GoogleAccessId=svc&Expires=1&SIGNATURE=%s",
	    "v2sig", NULL, NULL);
	/* The credential names, in any spelling. */
	url("/mcp?access_token=q1&API_KEY=q2&apikey=q3", "/mcp?access_token=%s&API_KEY=%s&apikey=%s", "q1",
	    "q2", "q3");
	url("/mcp?key=q4&Token=q5&client-secret=q6", "/mcp?key=%s&Token=%s&client-secret=%s", "q4", "q5",
	    "q6");
	url("/mcp?password=q7&secret=q8&session_token=q9", "/mcp?password=%s&secret=%s&session_token=%s",
	    "q7", "q8", "q9");
	url("/mcp?authorization=q10&credential=q11&auth=q12", "/mcp?authorization=%s&credential=%s&auth=%s",
	    "q10", "q11", "q12");
	url("/cb?code=q13&state=s&pass=q14", "/cb?code=%s&state=s&pass=%s", "q13", "q14", NULL);
	/* MCP's own and ordinary parameters stay. */
	url("/message?sessionId=1868a90c", NULL, NULL, NULL, NULL);
	url("/mcp?cursor=c2&page=3&q=cats&keyword=k&signed=1&nextPageToken=p", NULL, NULL, NULL, NULL);
}

/* The same carriers in text: a presigned URL on stderr or in a message. */
static void test_text_query_carriers(void **state)
{
	(void)state;
	expect(1, "GET https://b.s3.amazonaws.com/f?X-Amz-Date=1&X-Amz-Signature=abc123 200\n",
	       "GET https://b.s3.amazonaws.com/f?X-Amz-Date=1&X-Amz-Signature=%s 200\n", "abc123", NULL);
	expect(1, "redirect to /cb?code=ac-9&state=xyz", "redirect to /cb?code=%s&state=xyz", "ac-9", NULL);
	expect(0, "{\"result\":{\"url\":\"https://x.blob.core.windows.net/c/b?sv=2022-11-02&sig=AbC%2B\"}}",
	       "{\"result\":{\"url\":\"https://x.blob.core.windows.net/c/b?sv=2022-11-02&sig=%s\"}}",
	       "AbC%2B", NULL);
	/* Redacting again changes nothing: a scheme word before a marker is no
	 * credential (found by fuzz-redact; "token: Bearer [redacted:...]" lost its
	 * Bearer to a second marker before). */
	untouched(1, "token: Bearer [redacted:0123abcd]\n");
	untouched(1, "/cb?code= Basic [redacted:0123abcd]&state=x");
	/* Outside a query, such names are words. */
	untouched(1, "the signature was checked: code=200 sig ok\n");
	untouched(1, "/message?sessionId=1868a90c\n");
}

/* mt_redact_body(in) gives want (each %s the marker of the matching secret); NULL: untouched. */
static void body(const char *in, const char *want_fmt, const char *s1, const char *s2, const char *s3)
{
	struct mt_buf out = MT_BUF_INIT;
	int rc = mt_redact_body(R, in, strlen(in), &out);

	if (!want_fmt) {
		if (rc)
			fail_msg("'%s' became '%.*s'", in, (int)out.len, out.data);
		mt_buf_release(&out);
		return;
	}
	char *m1 = mk(s1), *m2 = s2 ? mk(s2) : NULL, *m3 = s3 ? mk(s3) : NULL;
	char *want = mt_asprintf(want_fmt, m1, m2 ? m2 : "", m3 ? m3 : "");
	if (!rc)
		fail_msg("'%s' was left as it is; want '%s'", in, want);
	assert_memory_equal(out.data, want, strlen(want));
	assert_int_equal(out.len, strlen(want));
	/* Redacting it again changes nothing. */
	struct mt_buf again = MT_BUF_INIT;
	assert_int_equal(mt_redact_body(R, out.data, out.len, &again), 0);
	free(want);
	free(m1);
	free(m2);
	free(m3);
	mt_buf_release(&out);
}

/* Bodies no message holds: an OAuth token request's form, its JSON answer, text. */
static void test_body_carriers(void **state)
{
	(void)state;
	/* A form: its first field too, named as a query parameter is. */
	body("code=ac-1&grant_type=authorization_code&client_id=c1&client_secret=cs-1&code_verifier=v-1",
	     "code=%s&grant_type=authorization_code&client_id=c1&client_secret=%s&code_verifier=%s", "ac-1",
	     "cs-1", "v-1");
	body("grant_type=refresh_token&refresh_token=rt-1&scope=mcp\r\n",
	     "grant_type=refresh_token&refresh_token=%s&scope=mcp\r\n", "rt-1", NULL, NULL);
	body("grant_type=password&username=bob&password=p%20w",
	     "grant_type=password&username=bob&password=%s", "p%20w", NULL, NULL);
	/* Whatever the values hold (a '#' is data in a body, not a fragment). */
	body("code=ac-2&note=caf\xc3\xa9 au lait&state=a#b&client_secret=cs-3",
	     "code=%s&note=caf\xc3\xa9 au lait&state=a#b&client_secret=%s", "ac-2", "cs-3", NULL);
	/* (Found by fuzz-redact: a byte that made the body no form hid its first field.) */
	body("code=ac-3&client_secret=c\377s&?x=v", "code=%s&client_secret=%s&?x=v", "ac-3", "c\377s", NULL);
	/* JSON, not JSON-RPC: the values under credential names. */
	body("{\"access_token\":\"at-1\",\"token_type\":\"Bearer\",\"expires_in\":3600,\"refresh_token\":"
	     "\"rt-2\","
	     "\"scope\":\"mcp\"}",
	     "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":3600,\"refresh_token\":\"%"
	     "s\","
	     "\"scope\":\"mcp\"}",
	     "at-1", "rt-2", NULL);
	body("{\"client_id\":\"c1\",\"client_secret\":\"cs-2\",\"registration_access_token\":\"rat-1\"}",
	     "{\"client_id\":\"c1\",\"client_secret\":\"%s\",\"registration_access_token\":\"%s\"}", "cs-2",
	     "rat-1", NULL);
	/* Text: the text rules (a field's name is a plain one: "error: code" is none). */
	body("<p>bad request: token=tk-1 expired</p>", "<p>bad request: token=%s expired</p>", "tk-1", NULL,
	     NULL);
	body("error: code=400 and more", NULL, NULL, NULL, NULL);
	/* Nothing to redact. */
	body("short and stout", NULL, NULL, NULL, NULL);
	body("grant_type=client_credentials&scope=mcp&resource=https%3A%2F%2Fmcp.example", NULL, NULL, NULL,
	     NULL);
	body("{\"resource\":\"https://mcp.example/mcp\",\"authorization_servers\":[\"https://as.example\"],"
	     "\"token_endpoint\":\"https://as.example/token\"}",
	     NULL, NULL, NULL, NULL);
	body("", NULL, NULL, NULL, NULL);
	body("/x?a=1&sig=q;b=1&sig=q#f", "/x?a=1&sig=%s&sig=%s", "q;b=1", "q#f", NULL);
	/* (Found by fuzz-redact: the second pass found a field's value holding a marker
	 * and more, dropped it, and still said it had redacted something.) */
	body("token=\"a&b\"&code=c", "token=%s\"&code=%s", "\"a&b", "c", NULL);
}

/* ---- the key file ---- */

static void test_key_file(void **state)
{
	char *dir = unit_tmpdir(), *path, *old = getenv("MCPTAP_REDACT_KEY_FILE");
	unsigned char k1[16], k2[16];
	struct mt_err err = {"", 0};
	struct stat sb;

	(void)state;
	old = old ? mt_strdup(old) : NULL;
	path = mt_asprintf("%s/a/b/redact.key", dir);
	setenv("MCPTAP_REDACT_KEY_FILE", path, 1);
	assert_int_equal(mt_redact_load_key(k1, &err), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, 16);
	char *a = mt_asprintf("%s/a", dir);
	assert_int_equal(stat(a, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	free(a);
	/* Made once, then read: the same key again. */
	assert_int_equal(mt_redact_load_key(k2, &err), 0);
	assert_memory_equal(k1, k2, 16);
	/* A file too short is refused with the reason. */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("short", f);
	fclose(f);
	assert_int_equal(mt_redact_load_key(k2, &err), -1);
	assert_non_null(strstr(err.msg, "not a redaction key"));
	if (old)
		setenv("MCPTAP_REDACT_KEY_FILE", old, 1);
	else
		unsetenv("MCPTAP_REDACT_KEY_FILE");
	free(old);
	free(path);
	unit_rmdir(dir);
}

/* ---- hostile input ---- */

static void test_hostile(void **state)
{
	struct mt_buf out = MT_BUF_INIT, big = MT_BUF_INIT;

	(void)state;
	/* Deep nesting: walked to a bound, no crash; a secret at the top still found. */
	mt_buf_puts(&big, "{\"token\":\"t\",\"a\":");
	for (int i = 0; i < 100000; i++)
		mt_buf_putc(&big, '[');
	for (int i = 0; i < 100000; i++)
		mt_buf_putc(&big, ']');
	mt_buf_putc(&big, '}');
	struct mt_class c;
	mt_classify(big.data, big.len, &c);
	assert_int_equal(mt_redact_message(R, big.data, big.len, c.kind, &out), 1);
	assert_int_equal(out.len, big.len - 3 + MT_REDACT_MARKER_LEN + 2);
	/* A 4 MB value under a credential key: one marker. */
	mt_buf_reset(&big);
	mt_buf_puts(&big, "{\"secret\":\"");
	for (int i = 0; i < 4 << 20; i++)
		mt_buf_putc(&big, 'x');
	mt_buf_puts(&big, "\"}");
	mt_classify(big.data, big.len, &c);
	assert_int_equal(mt_redact_message(R, big.data, big.len, c.kind, &out), 1);
	assert_int_equal(out.len, strlen("{\"secret\":\"\"}") + MT_REDACT_MARKER_LEN);
	/* NUL bytes in text. */
	assert_int_equal(mt_redact_text(R, "a\0token=x\0b", 11, &out), 1);
	assert_int_equal(out.len, 11 - 1 + MT_REDACT_MARKER_LEN);
	mt_buf_release(&out);
	mt_buf_release(&big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_vectors),
		cmocka_unit_test(test_marker),
		cmocka_unit_test(test_text_bearer),
		cmocka_unit_test(test_text_assignments),
		cmocka_unit_test(test_text_formats),
		cmocka_unit_test(test_text_ordinary),
		cmocka_unit_test(test_json_members),
		cmocka_unit_test(test_json_escaped),
		cmocka_unit_test(test_json_mcp_names),
		cmocka_unit_test(test_json_bytes_kept),
		cmocka_unit_test(test_json_invalid_is_text),
		cmocka_unit_test(test_user_rules),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_review_cases),
		cmocka_unit_test(test_pem_lines),
		cmocka_unit_test(test_user_numbers),
		cmocka_unit_test(test_command_script),
		cmocka_unit_test(test_header_url),
		cmocka_unit_test(test_header_carriers),
		cmocka_unit_test(test_query_carriers),
		cmocka_unit_test(test_text_query_carriers),
		cmocka_unit_test(test_body_carriers),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
