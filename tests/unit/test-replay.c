/*
 * test-replay.c - replay's matching (analyze/replay.h): a recording loaded
 * from a real capture file; requests matched by method and canonical params,
 * FIFO per key, idempotent reuse; notifications in order; the closest
 * recording of a miss; answers paired; rendering with spliced ids and tokens.
 */
#include "tests/unit/unit.h"

#include "analyze/replay.h"
#include "tap/writer.h"

static const char *const recording[] = {
	">{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}",
	">{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	">{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"}}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}}",
	">{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"arguments\":{\"text\":\"a\"},\"name\":\"echo\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a again\"}]}}",
	">{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":\"tok\"}}}",
	"<{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{\"content\":[]}}",
	">{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
	"<{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}",
	NULL,
};

struct fix {
	char *dir;
	char path[4200];
	struct store *st;
	struct rp_script s;
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct store_session_new sn = {"stdio", 1, "test", "/", 0};
	struct writer_opts wo;
	struct mt_err err = {""};
	struct writer *w;
	int64_t session, t = 0;
	char line[1024];

	f->dir = unit_tmpdir();
	snprintf(f->path, sizeof(f->path), "%s/r.db", f->dir);
	assert_int_equal(store_open(f->path, STORE_WRITE, &f->st, &err), 0);
	assert_int_equal(store_session_create(f->st, &sn, &session, &err), 0);
	writer_opts_default(&wo);
	w = writer_start(f->st, session, 0, &wo);
	for (int i = 0; recording[i]; i++) {
		int n = snprintf(line, sizeof(line), "%s\n", recording[i] + 1);
		t += 1000000;
		writer_put_at(w, recording[i][0] == '>' ? WS_C2S : WS_S2C, line, (size_t)n, t, t / 1000);
	}
	assert_int_equal(writer_finish(w, NULL, NULL), 0); /* closes the store */
	assert_int_equal(store_open(f->path, STORE_READ, &f->st, &err), 0);
	assert_int_equal(rp_load(f->st, 1, NULL, &f->s, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	rp_release(&f->s);
	store_close(f->st);
	unit_rmdir(f->dir);
	free(f);
	return 0;
}

static json_t *J(const char *s)
{
	return s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
}

static int64_t req(struct rp_script *s, const char *method, const char *params, int *reused)
{
	json_t *p = J(params);
	int64_t i = rp_match_request(s, method, p, reused);

	json_decref(p);
	return i;
}

static void test_load(void **state)
{
	struct fix *f = *state;
	struct rp_script *s = &f->s;

	assert_int_equal(s->n, 12);
	assert_int_equal(s->requests, 5);
	assert_int_equal(s->server_msgs, 6);
	/* Answers paired with requests, server messages anchored to the client message before. */
	assert_int_equal(s->m[3].answer, 4);
	assert_int_equal(s->m[4].request, 3);
	assert_int_equal(s->m[9].request, 7);
	assert_int_equal(s->m[8].anchor, 7);
	assert_int_equal(s->m[1].anchor, 0);
}

static void test_match(void **state)
{
	struct fix *f = *state;
	struct rp_script *s = &f->s;
	int reused = 0;

	/* Key order and _meta do not matter; the N-th identical request gets the N-th recording. */
	assert_int_equal(req(s, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"},\"_meta\":{\"x\":1}}", &reused), 3);
	assert_false(reused);
	assert_int_equal(req(s, "tools/call", "{\"arguments\":{\"text\":\"a\"},\"name\":\"echo\"}", &reused), 5);
	/* Used up, and tools/call is not idempotent: a miss. */
	assert_int_equal(req(s, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"}}", &reused), -1);
	/* Other params: a miss. */
	assert_int_equal(req(s, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"b\"}}", &reused), -1);
	/* ping is idempotent: reused once used up. */
	assert_int_equal(req(s, "ping", NULL, &reused), 10);
	assert_false(reused);
	assert_int_equal(req(s, "ping", "{}", &reused), 10);
	assert_true(reused);
	/* Notifications in order, never reused. */
	assert_int_equal(rp_match_notification(s, "notifications/initialized", NULL), 2);
	assert_int_equal(rp_match_notification(s, "notifications/initialized", NULL), -1);
	assert_true(rp_idempotent("initialize"));
	assert_true(rp_idempotent("resources/templates/list"));
	assert_false(rp_idempotent("tools/call"));
	assert_false(rp_idempotent(NULL));
}

static void test_closest(void **state)
{
	struct fix *f = *state;
	json_t *p = J("{\"name\":\"echo\",\"arguments\":{\"text\":\"zzz\"}}"), *diffs = json_array();

	assert_int_equal(rp_closest(&f->s, "tools/call", p, diffs), 3);
	assert_int_equal(json_array_size(diffs), 1);
	assert_string_equal(json_string_value(json_array_get(diffs, 0)), "params.arguments.text");
	json_array_clear(diffs);
	assert_int_equal(rp_closest(&f->s, "prompts/get", p, diffs), -1);
	json_decref(p);
	json_decref(diffs);
}

static void test_render(void **state)
{
	struct fix *f = *state;
	struct mt_buf out = MT_BUF_INIT;

	/* The answer to id 2 under the live id "x-9", the rest byte for byte. */
	rp_render(&f->s, 4, "\"x-9\"", 5, NULL, 0, &out);
	assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":\"x-9\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}}\n");
	mt_buf_reset(&out);
	/* Progress under the live token. */
	rp_render(&f->s, 8, NULL, 0, "77", 2, &out);
	assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":77,\"progress\":1}}\n");
	mt_buf_reset(&out);
	/* Nothing to replace: as recorded. */
	rp_render(&f->s, 11, NULL, 0, NULL, 0, &out);
	assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n");
	mt_buf_release(&out);
}

static void test_ignore_scope(void **state)
{
	struct fix *f = *state;
	static const char *const paths[] = {"params.arguments.text", "echo=result.x", "other=result.y",
					    "tools/call=result.z", "github.search=result.w",
					    "result.a=b"};
	struct canon_ignore ig = {paths, 6}, out;
	json_t *p = J("{\"name\":\"echo\"}");

	f->s.ig = ig;
	rp_ignore_for(&f->s, "tools/call", p, &out);
	assert_int_equal(out.n, 4);
	assert_string_equal(out.paths[0], "params.arguments.text");
	assert_string_equal(out.paths[1], "result.x");
	assert_string_equal(out.paths[2], "result.z");
	assert_string_equal(out.paths[3], "result.a=b"); /* a path, not a scope */
	free((void *)out.paths);
	/* A tool name with a dot is a scope all the same. */
	json_decref(p);
	p = J("{\"name\":\"github.search\"}");
	rp_ignore_for(&f->s, "tools/call", p, &out);
	assert_int_equal(out.n, 4);
	assert_string_equal(out.paths[2], "result.w");
	free((void *)out.paths);
	f->s.ig.n = 0;
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_render, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ignore_scope, setup, teardown),
	};

	return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
