/*
 * test-mint.c - following server-minted values and telling noise from change
 * (analyze/replay/mint.h): a task id from an answer, a cursor, an elicitation id from
 * a server request; a value the server merely moved, one the client sent
 * first and one the live server still holds are kept; the comparison with
 * values followed; noise paths and what lies below them.
 */
#include "tests/unit/unit.h"

#include <string.h>

#include "analyze/replay/mint.h"
#include "tap/writer.h"

/* A recording written to a capture file: "> JSON" from the client, "< JSON" from the server. */
struct fake {
	char *dir;
	struct store *st;
	struct rp_script s;
	json_t *live[32]; /* the live message standing for recorded message i */
};

static void fake_init(struct fake *f, const char *const *lines, size_t n)
{
	struct store_session_new sn = {"stdio", 1, "test", "/", 0, NULL, NULL};
	struct mt_err err = {"", 0};
	struct writer_opts wo;
	struct writer *w;
	int64_t session;
	char path[4200];

	memset(f, 0, sizeof(*f));
	f->dir = unit_tmpdir();
	snprintf(path, sizeof(path), "%s/m.db", f->dir);
	assert_int_equal(store_open(path, STORE_WRITE, &f->st, &err), 0);
	assert_int_equal(store_session_create(f->st, &sn, &session, &err), 0);
	writer_opts_default(&wo);
	w = writer_start(f->st, session, 0, &wo, NULL);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(lines[i] + 2);
		char *line = malloc(len + 1);
		assert_non_null(line);
		memcpy(line, lines[i] + 2, len);
		line[len] = '\n';
		writer_put_at(w, lines[i][0] == '>' ? WS_C2S : WS_S2C, line, len + 1,
			      (int64_t)(i + 1) * 1000000, (int64_t)(i + 1) * 1000);
		free(line);
	}
	assert_int_equal(writer_finish(w, NULL, NULL), 0); /* closes the store */
	assert_int_equal(store_open(path, STORE_READ, &f->st, &err), 0);
	assert_int_equal(rp_load(f->st, session, NULL, &f->s, &err), 0);
	assert_int_equal(f->s.n, n);
}

static void fake_release(struct fake *f)
{
	for (size_t i = 0; i < f->s.n; i++)
		json_decref(f->live[i]);
	rp_release(&f->s);
	store_close(f->st);
	unit_rmdir(f->dir);
}

/* Recorded message i, parsed (a new reference). */
static json_t *recorded(struct fake *f, size_t i)
{
	json_t *j = NULL;

	assert_int_equal(rp_json(&f->s, i, &j, NULL), 0);
	assert_non_null(j);
	return j;
}

static json_t *live_of(void *ctx, size_t j)
{
	struct fake *f = ctx;

	return json_incref(f->live[j]);
}

/* Substitute in a copy of recorded message i; returns it as compact text. */
static char *sent(struct fake *f, json_t *origins, size_t i, json_t *subs, size_t *done)
{
	json_t *v = recorded(f, i);
	char *text;

	*done = mint_substitute(origins, i, v, live_of, f, subs);
	text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(v);
	return text;
}

static void test_task_and_cursor(void **state)
{
	static const char *const rec[] = {
		"> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"start\"}}",
		"< "
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"taskId\":\"T-rec\",\"status\":"
		"\"working\"}}}",
		"> {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"T-rec\"}}",
		"< {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"taskId\":\"T-rec\",\"status\":\"completed\"}}",
		"> {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\"}",
		"< {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"resources\":[],\"nextCursor\":\"C-rec\"}}",
		"> "
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/"
		"list\",\"params\":{\"cursor\":\"C-rec\",\"_meta\":{\"related\":\"T-rec\"}}}",
	};
	struct fake f;
	json_t *origins, *subs = json_object(), *rec_answer, *applied, *live_answer;
	size_t done;
	char *text;

	(void)state;
	fake_init(&f, rec, 7);
	origins = mint_index(&f.s, NULL);
	/* Only what the client sends is indexed: where it came from, the answers at their paths. */
	assert_int_equal(json_object_size(origins), 3);
	assert_null(json_object_get(origins, "working"));
	text = json_dumps(json_object_get(origins, "T-rec"), JSON_COMPACT);
	assert_string_equal(text, "[1,[\"result\",\"task\",\"taskId\"],false]");
	free(text);
	text = json_dumps(json_object_get(origins, "start"), JSON_COMPACT);
	assert_string_equal(text, "[0,[\"params\",\"name\"],true]");
	free(text);

	/* Before the live answer came, nothing is followed. */
	text = sent(&f, origins, 2, subs, &done);
	assert_int_equal(done, 0);
	free(text);
	f.live[1] = json_loads("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"taskId\":\"T-live\","
			       "\"status\":\"working\"}}}",
			       0, NULL);
	text = sent(&f, origins, 2, subs, &done);
	assert_int_equal(done, 1);
	assert_string_equal(
		text,
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"T-live\"}}");
	free(text);
	/* The cursor from the live first page; the task id, once known, everywhere (_meta too). */
	f.live[5] = json_loads(
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"resources\":[],\"nextCursor\":\"C-live\"}}", 0,
		NULL);
	text = sent(&f, origins, 6, subs, &done);
	assert_int_equal(done, 2);
	assert_string_equal(text,
			    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/"
			    "list\",\"params\":{\"cursor\":\"C-live\",\"_meta\":{\"related\":\"T-live\"}}}");
	free(text);

	/* The recorded answer, values followed, equals what the live server said. */
	rec_answer = recorded(&f, 3);
	applied = mint_apply(rec_answer, subs);
	live_answer = json_loads(
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"taskId\":\"T-live\",\"status\":\"completed\"}}",
		0, NULL);
	assert_true(json_equal(applied, live_answer));
	assert_false(json_equal(rec_answer, live_answer));
	json_decref(rec_answer);
	json_decref(applied);
	json_decref(live_answer);

	json_decref(subs);
	json_decref(origins);
	fake_release(&f);
}

/* Moved, not minted: a tool the live tools/list still names is called by its name. */
static void test_moved_and_own_values_kept(void **state)
{
	static const char *const rec[] = {
		"> "
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
		"call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"mine\"}}}",
		"< "
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"mine\"}"
		"]}}",
		"> {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
		"< "
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"add\"},{\"name\":\"sum\"}]}"
		"}",
		"> "
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
		"call\",\"params\":{\"name\":\"add\",\"arguments\":{\"text\":\"mine\"}}}",
	};
	struct fake f;
	json_t *origins, *subs = json_object();
	size_t done;
	char *text;

	(void)state;
	fake_init(&f, rec, 5);
	origins = mint_index(&f.s, NULL);
	f.live[1] = json_loads("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
			       "\"text\":\"other\"}]}}",
			       0, NULL);
	/* Reordered: "add" is still listed, only elsewhere. */
	f.live[3] = json_loads("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"sum\"},{"
			       "\"name\":\"add\"}]}}",
			       0, NULL);
	text = sent(&f, origins, 4, subs, &done);
	assert_int_equal(done, 0);
	assert_string_equal(text, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
				  "call\",\"params\":{\"name\":\"add\",\"arguments\":{\"text\":\"mine\"}}}");
	free(text);
	assert_int_equal(json_object_size(subs), 0);
	/* Gone from the live list: now it was the server's to mint, and it is followed. */
	json_decref(f.live[3]);
	f.live[3] = json_loads("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"plus\"},{"
			       "\"name\":\"sum\"}]}}",
			       0, NULL);
	text = sent(&f, origins, 4, subs, &done);
	assert_int_equal(done, 1);
	/* "mine" came from the client first: never swapped, even though the server echoed it. */
	assert_string_equal(text, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
				  "call\",\"params\":{\"name\":\"plus\",\"arguments\":{\"text\":\"mine\"}}}");
	free(text);
	json_decref(subs);
	json_decref(origins);
	fake_release(&f);
}

/* An id minted in a server request (URL elicitation), echoed in a later client message. */
static void test_from_server_request(void **state)
{
	static const char *const rec[] = {
		"> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"login\"}}",
		"< "
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/"
		"create\",\"params\":{\"mode\":\"url\",\"elicitationId\":\"E-rec\",\"url\":\"https://x/"
		"E-rec\"}}",
		"> {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"action\":\"accept\"}}",
		"< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}",
		"> "
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/"
		"call\",\"params\":{\"name\":\"check\",\"arguments\":{\"id\":\"E-rec\"}}}",
	};
	struct fake f;
	json_t *origins, *subs = json_object();
	size_t done;
	char *text;

	(void)state;
	fake_init(&f, rec, 5);
	origins = mint_index(&f.s, NULL);
	f.live[1] = json_loads("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/"
			       "create\",\"params\":{\"mode\":\"url\",\"elicitationId\":\"E-live\",\"url\":"
			       "\"https://x/E-live\"}}",
			       0, NULL);
	text = sent(&f, origins, 4, subs, &done);
	assert_int_equal(done, 1);
	assert_string_equal(text,
			    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/"
			    "call\",\"params\":{\"name\":\"check\",\"arguments\":{\"id\":\"E-live\"}}}");
	free(text);
	json_decref(subs);
	json_decref(origins);
	fake_release(&f);
}

/* A long string (a file's contents) is never indexed nor swapped, even if the live one differs. */
static void test_long_strings_left_out(void **state)
{
	char big[1100], rec[1400], req[1400];
	const char *lines[3];
	struct fake f;
	json_t *origins, *subs = json_object();
	size_t done;
	char *text;

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(rec, sizeof(rec),
		 "< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"%s\",\"id\":\"R\"}}", big);
	snprintf(req, sizeof(req),
		 "> {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":{\"t\":\"%s\",\"i\":\"R\"}}",
		 big);
	lines[0] = "> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"read\"}";
	lines[1] = rec;
	lines[2] = req;
	fake_init(&f, lines, 3);
	origins = mint_index(&f.s, NULL);
	assert_null(json_object_get(origins, big));
	assert_non_null(json_object_get(origins, "R"));
	f.live[1] = json_loads("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"other\",\"id\":\"L\"}}",
			       0, NULL);
	text = sent(&f, origins, 2, subs, &done);
	assert_int_equal(done, 1); /* the short id only */
	assert_non_null(strstr(text, big));
	assert_non_null(strstr(text, "\"i\":\"L\""));
	free(text);
	json_decref(subs);
	json_decref(origins);
	fake_release(&f);
}

static void test_noise_paths(void **state)
{
	json_t *noise = json_pack("[s,s]", "result.content[0].text", "result.items");

	(void)state;
	assert_true(mint_is_noise(noise, "result.content[0].text"));
	assert_true(mint_is_noise(noise, "result.items[3]"));
	assert_true(mint_is_noise(noise, "result.items.x"));
	assert_false(mint_is_noise(noise, "result.items2"));
	assert_false(mint_is_noise(noise, "result.content[0]"));
	assert_false(mint_is_noise(noise, "result.content[1].text"));
	json_decref(noise);
}

static void test_at_and_contains(void **state)
{
	json_t *v = json_loads("{\"a\":[{\"b\":\"x\"},\"y\"],\"c\":{\"d\":\"z\"}}", 0, NULL);
	json_t *steps = json_pack("[s,i,s]", "a", 0, "b"), *bad = json_pack("[s,i]", "c", 0);

	(void)state;
	assert_string_equal(json_string_value(mint_at(v, steps)), "x");
	assert_null(mint_at(v, bad));
	assert_true(mint_contains(v, "z", 1));
	assert_true(mint_contains(v, "y", 1));
	assert_false(mint_contains(v, "d", 1)); /* a key is not a value */
	json_decref(v);
	json_decref(steps);
	json_decref(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_and_cursor),     cmocka_unit_test(test_moved_and_own_values_kept),
		cmocka_unit_test(test_from_server_request), cmocka_unit_test(test_long_strings_left_out),
		cmocka_unit_test(test_noise_paths),         cmocka_unit_test(test_at_and_contains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
