/*
 * test-sdiff.c - two recorded sessions compared (analyze/replay/sdiff.h), from
 * real capture files: pairs by key whatever the order and ids; leftovers by
 * method and subject (their params differ); added and missing; a minted value
 * followed into a later request and its answer; noise set aside; the callback
 * stopping the diff. And canon_value_at, which finds each side's value.
 */
#include "tests/unit/unit.h"

#include "analyze/replay/sdiff.h"
#include "tap/writer.h"

#define INIT                                                                                               \
	">{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-" \
	"06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",                 \
		"<{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\","           \
		"\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}"

/* Session 1 (A). */
static const char *const sa[] = {
	INIT,
	">{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"start\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"taskId\":\"T-A\",\"at\":1}}",
	">{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"T-A\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"taskId\":\"T-A\",\"status\":\"done\"}}",
	">{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
	"call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1}}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"n\":1}}",
	">{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}",
	"<{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[]}}",
	NULL,
};

/* Session 2 (B): another task id, add's params changed, tools/list gone, ping added. */
static const char *const sb[] = {
	INIT,
	">{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}",
	"<{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}",
	">{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"tools/"
	"call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":2}}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"result\":{\"n\":2}}",
	">{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":\"start\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"result\":{\"taskId\":\"T-B\",\"at\":2}}",
	">{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"tasks/get\",\"params\":{\"taskId\":\"T-B\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"result\":{\"taskId\":\"T-B\",\"status\":\"done\"}}",
	NULL,
};

/* Session 3: A's side again, its time stamp (at) another. */
static const char *const sc[] = {
	INIT,
	">{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"start\"}}",
	"<{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"taskId\":\"T-C\",\"at\":3}}",
	NULL,
};

struct fix {
	char *dir;
	char path[4200];
	struct store *st;
};

static void write_session(struct store *st, const char *const *lines)
{
	struct store_session_new sn = {"stdio", 1, "test", "/", 0, NULL, NULL};
	struct mt_err err = {"", 0};
	struct writer_opts wo;
	struct writer *w;
	int64_t session, t = 0;
	char line[1024];

	assert_int_equal(store_session_create(st, &sn, &session, &err), 0);
	writer_opts_default(&wo);
	w = writer_start(st, session, 0, &wo, NULL);
	for (int i = 0; lines[i]; i++) {
		int n = snprintf(line, sizeof(line), "%s\n", lines[i] + 1);
		t += 1000000;
		writer_put_at(w, lines[i][0] == '>' ? WS_C2S : WS_S2C, line, (size_t)n, t, t / 1000);
	}
	assert_int_equal(writer_finish(w, NULL, NULL), 0); /* closes the store */
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	const char *const *sessions[] = {sa, sb, sc};
	struct mt_err err = {"", 0};

	f->dir = unit_tmpdir();
	snprintf(f->path, sizeof(f->path), "%s/d.db", f->dir);
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(store_open(f->path, k ? STORE_UPDATE : STORE_WRITE, &f->st, &err), 0);
		write_session(f->st, sessions[k]);
	}
	assert_int_equal(store_open(f->path, STORE_READ, &f->st, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	store_close(f->st);
	unit_rmdir(f->dir);
	free(f);
	return 0;
}

/* What the callback saw: one line per item, "STATUS METHOD SUBJECT aSEQ bSEQ: paths / noise". */
struct seen {
	struct mt_buf text;
	int stop_after; /* stop after this many items (0: never) */
	int n;
};

static int collect(const struct sd_item *it, void *ctx)
{
	static const char *const word[] = {"same", "changed", "added", "missing"};
	struct seen *s = ctx;

	mt_buf_printf(&s->text, "%s %s %s %lld %lld:", word[it->status], it->method,
		      it->subject ? it->subject : "-", (long long)it->a_seq, (long long)it->b_seq);
	for (size_t k = 0; k < json_array_size(it->diffs); k++) {
		char *d = json_dumps(json_array_get(it->diffs, k), JSON_COMPACT | JSON_SORT_KEYS);
		mt_buf_printf(&s->text, " %s", d);
		free(d);
	}
	mt_buf_puts(&s->text, " /");
	for (size_t k = 0; k < json_array_size(it->noise); k++)
		mt_buf_printf(&s->text, " %s", json_string_value(json_array_get(it->noise, k)));
	mt_buf_putc(&s->text, '\n');
	return s->stop_after && ++s->n >= s->stop_after;
}

/* Diff session a against b of the fixture, noise from session c (0: none). */
static int run(struct fix *f, int64_t a, int64_t b, int64_t c, struct seen *seen, struct sd_totals *t,
	       struct mt_err *err)
{
	struct rp_script x, y;
	json_t *noise = json_object();
	int rc;

	if (c) {
		assert_int_equal(rp_load(f->st, a, NULL, &x, err), 0);
		assert_int_equal(rp_load(f->st, c, NULL, &y, err), 0);
		assert_int_equal(sd_noise(&x, &y, noise, err), 0);
		rp_release(&x);
		rp_release(&y);
	}
	assert_int_equal(rp_load(f->st, a, NULL, &x, err), 0);
	assert_int_equal(rp_load(f->st, b, NULL, &y, err), 0);
	rc = sd_run(&x, &y, noise, collect, seen, t, err);
	rp_release(&x);
	rp_release(&y);
	json_decref(noise);
	return rc;
}

static void test_diff(void **state)
{
	struct fix *f = *state;
	struct seen seen = {MT_BUF_INIT, 0, 0};
	struct mt_err err = {"", 0};
	struct sd_totals t;

	assert_int_equal(run(f, 1, 2, 0, &seen, &t, &err), 0);
	assert_string_equal(seen.text.data,
			    "same initialize - 1 1: /\n"
			    "added ping - -1 3: /\n"
			    "changed tools/call add 7 5: {\"a\":1,\"b\":2,\"path\":\"params.arguments.a\"} "
			    "{\"a\":1,\"b\":2,\"path\":\"result.n\"} /\n"
			    /* the task id each server minted: the answer differs only in its time */
			    "changed tools/call start 3 7: {\"a\":1,\"b\":2,\"path\":\"result.at\"} /\n"
			    "same tasks/get - 5 9: /\n"
			    "missing tools/list - 9 -1: /\n");
	assert_int_equal(t.a_exchanges, 5);
	assert_int_equal(t.b_exchanges, 5);
	assert_int_equal(t.same, 2);
	assert_int_equal(t.changed, 2);
	assert_int_equal(t.added, 1);
	assert_int_equal(t.missing, 1);
	assert_int_equal(t.noise, 0);
	mt_buf_release(&seen.text);
}

static void test_noise(void **state)
{
	struct fix *f = *state;
	struct seen seen = {MT_BUF_INIT, 0, 0};
	struct mt_err err = {"", 0};
	struct sd_totals t;

	assert_int_equal(run(f, 1, 2, 3, &seen, &t, &err), 0);
	/* start's time stamp differs between A's runs: noise; add's change stays. */
	assert_non_null(strstr(seen.text.data, "same tools/call start 3 7: / result.at\n"));
	assert_non_null(strstr(seen.text.data, "changed tools/call add 7 5:"));
	assert_int_equal(t.same, 3);
	assert_int_equal(t.changed, 1);
	assert_int_equal(t.noise, 1);
	mt_buf_release(&seen.text);
}

static void test_same_and_stop(void **state)
{
	struct fix *f = *state;
	struct seen seen = {MT_BUF_INIT, 0, 0};
	struct mt_err err = {"", 0};
	struct sd_totals t;

	assert_int_equal(run(f, 2, 2, 0, &seen, &t, &err), 0);
	assert_int_equal(t.same, 5);
	assert_int_equal(t.changed + t.added + t.missing, 0);
	mt_buf_reset(&seen.text);
	seen.stop_after = 2;
	assert_int_equal(run(f, 1, 2, 0, &seen, &t, &err), -1);
	assert_string_equal(err.msg, "stopped");
	assert_int_equal(seen.n, 2);
	mt_buf_release(&seen.text);
}

static void test_value_at(void **state)
{
	json_t *m = json_loads(
		"{\"result\":{\"content\":[{\"text\":\"a\"},{\"text\":\"b\"}],\"x\":{\"y\":null}}}", 0, NULL);

	(void)state;
	assert_string_equal(json_string_value(canon_value_at(m, "result.content[1].text")), "b");
	assert_true(json_is_null(canon_value_at(m, "result.x.y")));
	assert_null(canon_value_at(m, "result.content[2]"));
	assert_null(canon_value_at(m, "result.x.z"));
	assert_null(canon_value_at(m, "params"));
	assert_ptr_equal(canon_value_at(m, ""), m);
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_diff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_noise, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_and_stop, setup, teardown),
		cmocka_unit_test(test_value_at),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
