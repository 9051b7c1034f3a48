/*
 * test-replay.c - replay's matching (analyze/replay/replay.h): a recording loaded
 * from a real capture file; requests matched by method and canonical params,
 * FIFO per key, idempotent reuse; notifications in order; the closest
 * recording of a miss; answers paired; rendering with spliced ids and tokens;
 * initialize matched whatever its params; which recorded server requests a
 * live client's capabilities allow; the ordering barrier's wire part
 * (tap/stdio/lineio.h: what the peer has not read yet, waiting until it has).
 */
#include "tests/unit/unit.h"

#include <fcntl.h>
#include <sys/socket.h>

#include "analyze/replay/replay.h"
#include "tap/stdio/lineio.h"
#include "tap/writer.h"

static const char *const recording[] = {
	">{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-"
	"18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{"
	"\"tools\":{}},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}",
	">{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	">{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/"
	"call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"}}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}}",
	">{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
	"call\",\"params\":{\"arguments\":{\"text\":\"a\"},\"name\":\"echo\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a again\"}]}}",
	">{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"tools/"
	"call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":\"tok\"}}}",
	"<{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
	"progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1}}",
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
	struct store_session_new sn = {"stdio", 1, "test", "/", 0, NULL, NULL};
	struct writer_opts wo;
	struct mt_err err = {"", 0};
	struct writer *w;
	int64_t session, t = 0;
	char line[1024];

	f->dir = unit_tmpdir();
	snprintf(f->path, sizeof(f->path), "%s/r.db", f->dir);
	assert_int_equal(store_open(f->path, STORE_WRITE, &f->st, &err), 0);
	assert_int_equal(store_session_create(f->st, &sn, &session, &err), 0);
	writer_opts_default(&wo);
	w = writer_start(f->st, session, 0, &wo, NULL);
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

	struct mt_err err = {"", 0};
	struct mt_class c;
	struct mt_buf what = MT_BUF_INIT;
	const char *p;
	size_t n;
	json_t *j;

	assert_int_equal(s->n, 12);
	assert_int_equal(s->requests, 5);
	assert_int_equal(s->server_msgs, 6);
	assert_int_equal(sizeof(struct rp_msg), 48);
	/* Answers paired with requests. */
	assert_int_equal(s->m[3].answer, 4);
	assert_int_equal(s->m[4].request, 3);
	assert_int_equal(s->m[9].request, 7);
	assert_int_equal(s->m[0].answer, 1);
	assert_int_equal(s->m[2].answer, -1);
	/* Names interned once; answers have none; the progress token noted. */
	assert_string_equal(s->m[3].method, "tools/call");
	assert_ptr_equal(s->m[3].method, s->m[5].method);
	assert_ptr_equal(rp_name(s, "tools/call"), s->m[3].method);
	assert_null(rp_name(s, "tools/list"));
	assert_null(s->m[4].method);
	assert_true(s->m[7].token);
	assert_false(s->m[3].token);
	/* Identical keys chained in order; one key per distinct request. */
	assert_int_equal(s->m[3].next_same, 5);
	assert_int_equal(s->m[5].next_same, -1);
	assert_int_equal(s->keys_len, 5);
	/* The bytes come back from the store, as recorded, classified. */
	assert_int_equal(rp_read(s, 11, &p, &n, &c, &err), 0);
	assert_int_equal(n, strlen(recording[11] + 1));
	assert_memory_equal(p, recording[11] + 1, n);
	assert_int_equal(c.kind, MT_RESPONSE);
	assert_int_equal(rp_read(s, 0, &p, &n, NULL, &err), 0); /* behind the window */
	assert_memory_equal(p, recording[0] + 1, n);
	assert_int_equal(rp_json(s, 7, &j, &err), 0);
	assert_string_equal(json_string_value(json_object_get(j, "id")), "p");
	json_decref(j);
	rp_describe(s, 7, &what);
	assert_string_equal(what.data, "tools/call slow");
	rp_describe(s, 10, &what);
	assert_string_equal(what.data, "ping");
	mt_buf_release(&what);
	assert_int_equal(s->read_errors, 0);
	/* Every message, in any order. */
	for (size_t i = 12; i-- > 0;) {
		assert_int_equal(rp_read(s, (i * 5) % 12, &p, &n, NULL, &err), 0);
		assert_memory_equal(p, recording[(i * 5) % 12] + 1, n);
	}
}

/* SipHash-2-4, 128 bits out: the reference's vectors (key 00..0f, messages 00 01 .. n-1). */
static void test_hash(void **state)
{
	static const unsigned char want0[16] = {0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6,
						0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93};
	unsigned char msg[64], got[16];
	uint64_t h[2];

	(void)state;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)i;
	rp_hash(msg, 0, h);
	for (int i = 0; i < 16; i++)
		got[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
	assert_memory_equal(got, want0, 16);
	/* Every length gives another hash, whatever its tail. */
	uint64_t prev[2] = {h[0], h[1]};
	for (size_t n = 1; n < sizeof(msg); n++) {
		rp_hash(msg, n, h);
		assert_false(h[0] == prev[0] && h[1] == prev[1]);
		prev[0] = h[0];
		prev[1] = h[1];
	}
}

static void test_match(void **state)
{
	struct fix *f = *state;
	struct rp_script *s = &f->s;
	int reused = 0;

	/* Key order and _meta do not matter; the N-th identical request gets the N-th recording. */
	assert_int_equal(req(s, "tools/call",
			     "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"},\"_meta\":{\"x\":1}}",
			     &reused),
			 3);
	assert_false(reused);
	assert_int_equal(req(s, "tools/call", "{\"arguments\":{\"text\":\"a\"},\"name\":\"echo\"}", &reused),
			 5);
	/* Used up, and tools/call is not idempotent: a miss. */
	assert_int_equal(req(s, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\"}}", &reused),
			 -1);
	/* Other params: a miss. */
	assert_int_equal(req(s, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"b\"}}", &reused),
			 -1);
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
	json_t *p = J("{\"name\":\"echo\",\"arguments\":{\"text\":\"zzz\",\"more\":1}}"),
	       *diffs = json_array(), *was = json_array();
	char *w;

	assert_int_equal(rp_closest(&f->s, "tools/call", p, diffs, was), 3);
	assert_int_equal(json_array_size(diffs), 2);
	assert_string_equal(json_string_value(json_array_get(diffs, 0)), "params.arguments.text");
	assert_string_equal(json_string_value(json_array_get(diffs, 1)), "params.arguments.more");
	/* The recorded value at each path: [value], or [] where the recording has none. */
	w = json_dumps(was, JSON_COMPACT);
	assert_string_equal(w, "[[\"a\"],[]]");
	free(w);
	json_array_clear(diffs);
	assert_int_equal(rp_closest(&f->s, "tools/call", p, diffs, NULL), 3);
	assert_int_equal(json_array_size(diffs), 2);
	json_array_clear(diffs);
	assert_int_equal(rp_closest(&f->s, "prompts/get", p, diffs, was), -1);
	json_decref(p);
	json_decref(diffs);
	json_decref(was);
}

static void test_render(void **state)
{
	struct fix *f = *state;
	struct mt_buf out = MT_BUF_INIT;

	/* The answer to id 2 under the live id "x-9", the rest byte for byte. */
	assert_int_equal(rp_render(&f->s, 4, "\"x-9\"", 5, NULL, 0, &out, NULL), 0);
	assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":\"x-9\",\"result\":{\"content\":[{"
				      "\"type\":\"text\",\"text\":\"a\"}]}}\n");
	mt_buf_reset(&out);
	/* Progress under the live token. */
	assert_int_equal(rp_render(&f->s, 8, NULL, 0, "77", 2, &out, NULL), 0);
	assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
				      "progress\",\"params\":{\"progressToken\":77,\"progress\":1}}\n");
	mt_buf_reset(&out);
	/* Nothing to replace: as recorded. */
	assert_int_equal(rp_render(&f->s, 11, NULL, 0, NULL, 0, &out, NULL), 0);
	assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n");
	mt_buf_release(&out);
}

static void test_ignore_scope(void **state)
{
	struct fix *f = *state;
	static const char *const paths[] = {"params.arguments.text",  "echo=result.x",
					    "other=result.y",         "tools/call=result.z",
					    "github.search=result.w", "result.a=b"};
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

static void test_initialize_any_params(void **state)
{
	struct fix *f = *state;
	struct rp_script *s = &f->s;
	int reused = 1;

	/* Another client, another version, other capabilities, another protocol. */
	assert_int_equal(
		req(s, "initialize",
		    "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"sampling\":{},\"elicitation\":{}"
		    "},\"clientInfo\":{\"name\":\"inspector\",\"version\":\"0.17.0\"}}",
		    &reused),
		0);
	assert_false(reused);
	/* No params at all: the same recording, again (initialize is idempotent). */
	assert_int_equal(req(s, "initialize", NULL, &reused), 0);
	assert_true(reused);
	assert_int_equal(req(s, "initialize", "{\"clientInfo\":{\"name\":\"c\",\"version\":\"2\"}}", &reused),
			 0);
	assert_true(reused);
	/* Its key holds no params; any other method's does. */
	json_t *p = J("{\"a\":1}");
	assert_null(rp_key_params("initialize", p));
	assert_ptr_equal(rp_key_params("tools/call", p), p);
	assert_ptr_equal(rp_key_params(NULL, p), p);
	json_decref(p);
	/* Other methods still match on their params. */
	assert_int_equal(req(s, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"b\"}}", &reused),
			 -1);
}

/* rp_missing_capability on JSON texts; "" for NULL. */
static const char *needs(const char *method, const char *params, const char *caps)
{
	json_t *p = J(params), *c = J(caps);
	const char *r = rp_missing_capability(method, p, c);

	json_decref(p);
	json_decref(c);
	return r ? r : "";
}

static void test_capability(void **state)
{
	const char *msg = "{\"messages\":[],\"maxTokens\":5}";
	const char *task_msg = "{\"messages\":[],\"maxTokens\":5,\"task\":{\"ttl\":1000}}";
	const char *form = "{\"message\":\"m\",\"requestedSchema\":{}}";
	const char *form2 = "{\"mode\":\"form\",\"message\":\"m\",\"requestedSchema\":{}}";
	const char *url =
		"{\"mode\":\"url\",\"message\":\"m\",\"url\":\"https://x\",\"elicitationId\":\"e\"}";
	const char *task_form = "{\"message\":\"m\",\"requestedSchema\":{},\"task\":{}}";

	(void)state;
	/* sampling/createMessage */
	assert_string_equal(needs("sampling/createMessage", msg, "{\"sampling\":{}}"), "");
	assert_string_equal(needs("sampling/createMessage", msg, "{\"roots\":{}}"), "sampling");
	assert_string_equal(needs("sampling/createMessage", msg, "{}"), "sampling");
	assert_string_equal(needs("sampling/createMessage", msg, NULL), "sampling");
	assert_string_equal(needs("sampling/createMessage", msg, "{\"sampling\":null}"), "sampling");
	assert_string_equal(needs("sampling/createMessage", msg, "[]"), "sampling");
	assert_string_equal(needs("sampling/createMessage", task_msg, "{\"sampling\":{}}"),
			    "tasks.requests.sampling.createMessage");
	assert_string_equal(
		needs("sampling/createMessage", task_msg,
		      "{\"sampling\":{},\"tasks\":{\"requests\":{\"elicitation\":{\"create\":{}}}}}"),
		"tasks.requests.sampling.createMessage");
	assert_string_equal(
		needs("sampling/createMessage", task_msg,
		      "{\"sampling\":{},\"tasks\":{\"requests\":{\"sampling\":{\"createMessage\":{}}}}}"),
		"");
	assert_string_equal(needs("sampling/createMessage", task_msg, "{}"), "sampling");
	/* roots/list */
	assert_string_equal(needs("roots/list", NULL, "{\"roots\":{\"listChanged\":true}}"), "");
	assert_string_equal(needs("roots/list", NULL, "{\"roots\":{}}"), "");
	assert_string_equal(needs("roots/list", NULL, "{\"sampling\":{}}"), "roots");
	/* elicitation/create: {} and {form:{}} allow form mode only; url mode needs url. */
	assert_string_equal(needs("elicitation/create", form, "{\"elicitation\":{}}"), "");
	assert_string_equal(needs("elicitation/create", form2, "{\"elicitation\":{}}"), "");
	assert_string_equal(needs("elicitation/create", form, "{\"elicitation\":{\"form\":{}}}"), "");
	assert_string_equal(needs("elicitation/create", form, "{\"elicitation\":{\"form\":{},\"url\":{}}}"),
			    "");
	assert_string_equal(needs("elicitation/create", form, "{\"elicitation\":{\"url\":{}}}"),
			    "elicitation.form");
	assert_string_equal(needs("elicitation/create", form, "{\"sampling\":{}}"), "elicitation");
	assert_string_equal(needs("elicitation/create", url, "{\"elicitation\":{}}"), "elicitation.url");
	assert_string_equal(needs("elicitation/create", url, "{\"elicitation\":{\"form\":{}}}"),
			    "elicitation.url");
	assert_string_equal(needs("elicitation/create", url, "{\"elicitation\":{\"url\":{}}}"), "");
	assert_string_equal(needs("elicitation/create", url, "{}"), "elicitation");
	assert_string_equal(needs("elicitation/create", task_form, "{\"elicitation\":{}}"),
			    "tasks.requests.elicitation.create");
	assert_string_equal(
		needs("elicitation/create", task_form,
		      "{\"elicitation\":{},\"tasks\":{\"requests\":{\"elicitation\":{\"create\":{}}}}}"),
		"");
	/* What needs nothing: ping, the tasks methods, anything else the server may ask. */
	assert_string_equal(needs("ping", NULL, "{}"), "");
	assert_string_equal(needs("tasks/get", "{\"taskId\":\"t\"}", "{}"), "");
	assert_string_equal(needs("x/unknown", NULL, NULL), "");
	assert_string_equal(needs(NULL, NULL, NULL), "");
}

/* The barrier's wire part over a pipe: unread bytes, waiting, reading ahead. */
static void test_lio_wait_pipe(void **state)
{
	int in[2], out[2];
	struct lio l;
	char buf[256];
	const char *line;
	size_t n;
	volatile sig_atomic_t stop = 0;

	(void)state;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	lio_init(&l, in[0], out[1], 0);
	assert_int_equal(l.outq, LIO_OUTQ_PIPE);
	assert_int_equal(lio_unread(&l), 0);
	lio_put(&l, "note\n", 5);
	/* Nothing is read: the wait ends at its timeout, after writing what was queued. */
	assert_int_equal(lio_wait_read(&l, 30, &stop), 1);
	assert_int_equal(lio_pending(&l), 0);
	assert_int_equal(lio_unread(&l), 5);
	/* The peer wrote meanwhile: read ahead, handed out by lio_next in order. */
	assert_int_equal(write(in[1], "a\nb", 3), 3);
	assert_int_equal(lio_wait_read(&l, 30, &stop), 1);
	assert_int_equal(read(out[0], buf, sizeof(buf)), 5);
	assert_int_equal(lio_unread(&l), 0);
	assert_int_equal(lio_wait_read(&l, 30, &stop), 0);
	/* A stop request ends a wait at once. */
	lio_put(&l, "x\n", 2);
	stop = 1;
	assert_int_equal(lio_wait_read(&l, 10000, &stop), -1);
	stop = 0;
	assert_int_equal(write(in[1], "c\n", 2), 2);
	close(in[1]);
	assert_int_equal(lio_next(&l, 1000, &line, &n), LIO_LINE);
	assert_int_equal(n, 1);
	assert_memory_equal(line, "a", 1);
	assert_int_equal(lio_next(&l, 1000, &line, &n), LIO_LINE);
	assert_memory_equal(line, "bc", 2);
	assert_int_equal(lio_next(&l, 1000, &line, &n), LIO_EOF);
	/* The reader goes away: the wait says so. */
	(void)lio_flush(&l);
	close(out[0]);
	lio_put(&l, "y\n", 2);
	assert_int_equal(lio_wait_read(&l, 10000, &stop), -1);
	assert_true(l.write_failed);
	lio_release(&l);
	close(in[0]);
	close(out[1]);
}

/* The same over a Unix socket pair (node's children get those), and a file. */
static void test_lio_wait_socket(void **state)
{
	int sv[2], fd;
	struct lio l;
	char buf[256], *dir = unit_tmpdir(), path[4200];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	lio_init(&l, sv[0], sv[0], 0);
	assert_int_equal(l.outq, LIO_OUTQ_SOCKET);
	lio_put(&l, "note\n", 5);
	assert_int_equal(lio_wait_read(&l, 30, NULL), 1);
	assert_true(lio_unread(&l) > 0);
	assert_int_equal(read(sv[1], buf, sizeof(buf)), 5);
	assert_int_equal(lio_unread(&l), 0);
	assert_int_equal(lio_wait_read(&l, 30, NULL), 0);
	lio_release(&l);
	close(sv[0]);
	close(sv[1]);
	/* A file: nothing to wait for, what is queued is written. */
	snprintf(path, sizeof(path), "%s/out", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	lio_init(&l, -1, fd, 0);
	assert_int_equal(l.outq, LIO_OUTQ_NONE);
	assert_int_equal(lio_unread(&l), -1);
	lio_put(&l, "note\n", 5);
	assert_int_equal(lio_wait_read(&l, 10000, NULL), 0);
	assert_int_equal(lio_pending(&l), 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 5);
	lio_release(&l);
	close(fd);
	unit_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
		cmocka_unit_test(test_hash),
		cmocka_unit_test_setup_teardown(test_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_render, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ignore_scope, setup, teardown),
		cmocka_unit_test_setup_teardown(test_initialize_any_params, setup, teardown),
		cmocka_unit_test(test_capability),
		cmocka_unit_test(test_lio_wait_pipe),
		cmocka_unit_test(test_lio_wait_socket),
	};

	return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
