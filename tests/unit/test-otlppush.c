/*
 * test-otlppush.c - tap/otlppush.h against a scripted OTLP/HTTP receiver on
 * loopback (a thread here): the endpoint a URL names, batches grouped by
 * resource and gzip-coded, retries on 503 and 429 with what each POST
 * carried, a 400 given up at once, a receiver that is not there, a partial
 * success, a full queue and a stop that does not wait past its deadline.
 * Every span is counted once: sent, failed or dropped.
 */
#include "tests/unit/unit.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <zlib.h>

#include "tap/otlppush.h"

/* The receiver: answers POST n with status[n] (the last one after), body[n]. */
struct receiver {
	int fd, port;
	pthread_t thread;
	int statuses[8], nstatuses;
	const char *answer; /* the 2xx body, or NULL: "{}" */
	int hang;           /* read requests, never answer */
	int posts;
	int spans;            /* spans in the bodies answered 2xx */
	int max_batch;        /* the most spans in one body */
	int resources;        /* resourceSpans in the first body */
	int gzip_ok, json_ok; /* every body gunzips; and is TracesData JSON */
	char content_type[64], encoding[64], custom[64];
	pthread_mutex_t mu;
};

static int gunzip(const char *p, size_t n, struct mt_buf *out)
{
	z_stream z;
	char buf[65536];
	int rc;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	z.next_in = (Bytef *)p;
	z.avail_in = (uInt)n;
	do {
		z.next_out = (Bytef *)buf;
		z.avail_out = sizeof(buf);
		rc = inflate(&z, Z_NO_FLUSH);
		mt_buf_append(out, buf, sizeof(buf) - z.avail_out);
	} while (rc == Z_OK);
	inflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

/* A header's value from the head (any case), into out. */
static void header(const char *head, const char *name, char *out, size_t max)
{
	const char *h = head;
	size_t n = strlen(name);

	out[0] = 0;
	while ((h = strchr(h, '\n'))) {
		h++;
		if (!strncasecmp(h, name, n) && h[n] == ':') {
			const char *v = h + n + 1, *e;
			while (*v == ' ')
				v++;
			e = strpbrk(v, "\r\n");
			snprintf(out, max, "%.*s", (int)(e ? e - v : (long)strlen(v)), v);
			return;
		}
	}
}

static void count_body(struct receiver *r, const struct mt_buf *json, int counted)
{
	json_t *v = json_loadb(json->data, json->len, 0, NULL);
	json_t *rs = json_object_get(v, "resourceSpans"), *x;
	size_t i;
	int n = 0;

	if (!json_is_array(rs)) {
		r->json_ok = 0;
		json_decref(v);
		return;
	}
	json_array_foreach(rs, i, x)
	{
		json_t *ss = json_array_get(json_object_get(x, "scopeSpans"), 0);
		if (!json_object_get(x, "resource") ||
		    strcmp(json_string_value(json_object_get(json_object_get(ss, "scope"), "name")) ?: "",
			   "mcptap"))
			r->json_ok = 0;
		n += (int)json_array_size(json_object_get(ss, "spans"));
	}
	if (r->posts == 1)
		r->resources = (int)json_array_size(rs);
	if (n > r->max_batch)
		r->max_batch = n;
	if (counted)
		r->spans += n;
	json_decref(v);
}

static void serve_one(struct receiver *r, int c)
{
	struct mt_buf in = {0}, json = {0};
	char buf[65536], len[32], resp[512];
	ssize_t got;
	char *end = NULL;

	for (;;) {
		while (!(end = in.data ? strstr(in.data, "\r\n\r\n") : NULL)) {
			if ((got = read(c, buf, sizeof(buf))) <= 0)
				goto out;
			mt_buf_append(&in, buf, (size_t)got);
		}
		size_t head = (size_t)(end - in.data) + 4;
		header(in.data, "Content-Length", len, sizeof(len));
		size_t body = (size_t)strtoul(len, NULL, 10);
		while (in.len < head + body) {
			if ((got = read(c, buf, sizeof(buf))) <= 0)
				goto out;
			mt_buf_append(&in, buf, (size_t)got);
		}
		pthread_mutex_lock(&r->mu);
		int k = r->posts++;
		header(in.data, "Content-Type", r->content_type, sizeof(r->content_type));
		header(in.data, "Content-Encoding", r->encoding, sizeof(r->encoding));
		header(in.data, "X-Tenant", r->custom, sizeof(r->custom));
		int status = r->statuses[k < r->nstatuses ? k : r->nstatuses - 1];
		mt_buf_reset(&json);
		if (gunzip(in.data + head, body, &json))
			r->gzip_ok = 0;
		else
			count_body(r, &json, status / 100 == 2);
		int hang = r->hang;
		pthread_mutex_unlock(&r->mu);
		if (hang) {
			while (read(c, buf, sizeof(buf)) > 0)
				;
			goto out;
		}
		const char *b = status / 100 == 2 ? (r->answer ? r->answer : "{}") : "no";
		int n = snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s\r\n%s",
				 status, strlen(b), status == 429 ? "Retry-After: 1\r\n" : "", b);
		if (write(c, resp, (size_t)n) != n)
			goto out;
		/* The rest of the buffer is the next request's. */
		memmove(in.data, in.data + head + body, in.len - head - body);
		in.len -= head + body;
		in.data[in.len] = 0;
	}
out:
	close(c);
	mt_buf_release(&in);
	mt_buf_release(&json);
}

static void *receiver_main(void *arg)
{
	struct receiver *r = arg;
	int c;

	while ((c = accept(r->fd, NULL, NULL)) >= 0)
		serve_one(r, c);
	return NULL;
}

static void receiver_start(struct receiver *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof(a);

	r->gzip_ok = r->json_ok = 1;
	pthread_mutex_init(&r->mu, NULL);
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(r->fd >= 0);
	assert_int_equal(bind(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(r->fd, 16), 0);
	assert_int_equal(getsockname(r->fd, (struct sockaddr *)&a, &n), 0);
	r->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&r->thread, NULL, receiver_main, r), 0);
}

static void receiver_stop(struct receiver *r)
{
	shutdown(r->fd, SHUT_RDWR);
	close(r->fd);
	pthread_join(r->thread, NULL);
	pthread_mutex_destroy(&r->mu);
}

static char *url_of(int port, const char *path)
{
	char *u = malloc(128);
	snprintf(u, 128, "http://127.0.0.1:%d%s", port, path);
	return u;
}

/* n spans, alternating between two resources. */
static int push_n(struct otlp_push *p, int n)
{
	char span[128];
	int dropped = 0;

	for (int i = 0; i < n; i++) {
		snprintf(span, sizeof(span), "{\"name\":\"ping\",\"spanId\":\"%016x\"}", i);
		dropped +=
			otlp_push_span(
				p,
				i % 2 ? "{\"attributes\":[{\"key\":\"k\",\"value\":{\"stringValue\":\"b\"}}]}"
				      : "{\"attributes\":[]}",
				span) != 0;
	}
	return dropped;
}

static void test_url(void **state)
{
	static const char *const cases[][2] = {
		{"http://h:4318", "http://h:4318/v1/traces"},
		{"http://h:4318/", "http://h:4318/v1/traces"},
		{"https://h/otlp/", "https://h/otlp/v1/traces"},
		{"http://h/v1/traces", "http://h/v1/traces"},
		{"http://h:4318/x/v1/traces", "http://h:4318/x/v1/traces"},
	};
	struct mt_err err = {"", 0};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *u = otlp_push_url(cases[i][0], &err);
		assert_non_null(u);
		assert_string_equal(u, cases[i][1]);
		free(u);
	}
	assert_null(otlp_push_url("ftp://h/", &err));
	assert_string_equal(err.msg, "not an http:// or https:// URL");
	assert_null(otlp_push_url("not a url", &err));
}

static void test_batches(void **state)
{
	struct receiver r = {.statuses = {200}, .nstatuses = 1};
	char *hdr[] = {"X-Tenant: team-a"};
	struct otlp_push_stats st;
	struct mt_err err = {"", 0};

	(void)state;
	receiver_start(&r);
	char *u = url_of(r.port, "");
	struct otlp_push_opts o = {
		.url = u, .headers = hdr, .nheaders = 1, .batch_spans = 100, .batch_ms = 50};
	struct otlp_push *p = otlp_push_start(&o, &err);
	assert_non_null(p);
	assert_int_equal(push_n(p, 1000), 0);
	otlp_push_stop(p, 5000, &st);
	receiver_stop(&r);
	assert_int_equal(st.queued, 1000);
	assert_int_equal(st.sent, 1000);
	assert_int_equal(st.failed + st.dropped_full + st.retries, 0);
	assert_int_equal(r.spans, 1000);
	assert_true(r.max_batch <= 100);
	assert_int_equal(st.posts, r.posts);
	assert_true(r.posts >= 10);
	assert_int_equal(r.resources, 2);
	assert_true(r.gzip_ok && r.json_ok);
	assert_string_equal(r.content_type, "application/json");
	assert_string_equal(r.encoding, "gzip");
	assert_string_equal(r.custom, "team-a");
	free(u);
}

static void test_retry(void **state)
{
	struct receiver r = {.statuses = {503, 429, 200}, .nstatuses = 3};
	struct otlp_push_stats st;
	struct mt_err err = {"", 0};

	(void)state;
	receiver_start(&r);
	char *u = url_of(r.port, "/");
	struct otlp_push_opts o = {.url = u, .batch_spans = 512, .batch_ms = 20};
	struct otlp_push *p = otlp_push_start(&o, &err);
	assert_non_null(p);
	assert_int_equal(push_n(p, 10), 0);
	otlp_push_stop(p, 10000, &st);
	receiver_stop(&r);
	/* 503, then 429 (Retry-After: 1 s), then taken. */
	assert_int_equal(st.posts, 3);
	assert_int_equal(st.retries, 2);
	assert_int_equal(st.sent, 10);
	assert_int_equal(st.failed, 0);
	assert_int_equal(r.spans, 10);
	char want[128];
	snprintf(want, sizeof(want), "HTTP 429 from http://127.0.0.1:%d/v1/traces", r.port);
	assert_string_equal(st.last_error, want);
	free(u);
}

static void test_refused(void **state)
{
	struct receiver r = {.statuses = {400}, .nstatuses = 1};
	struct otlp_push_stats st;
	struct mt_err err = {"", 0};
	char want[128];

	(void)state;
	receiver_start(&r);
	char *u = url_of(r.port, "/v1/traces");
	struct otlp_push_opts o = {.url = u, .batch_ms = 20};
	struct otlp_push *p = otlp_push_start(&o, &err);
	assert_non_null(p);
	assert_int_equal(push_n(p, 7), 0);
	otlp_push_stop(p, 5000, &st);
	receiver_stop(&r);
	assert_int_equal(st.posts, 1);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.failed, 7);
	snprintf(want, sizeof(want), "HTTP 400 from %s", u);
	assert_string_equal(st.last_error, want);
	free(u);
}

static void test_absent(void **state)
{
	struct receiver r = {.statuses = {200}, .nstatuses = 1};
	struct otlp_push_stats st;
	struct mt_err err = {"", 0};

	(void)state;
	/* A port nothing listens on: the receiver's, once it is gone. */
	receiver_start(&r);
	receiver_stop(&r);
	char *u = url_of(r.port, "");
	struct otlp_push_opts o = {.url = u, .batch_ms = 20, .give_up_ms = 400};
	struct otlp_push *p = otlp_push_start(&o, &err);
	assert_int_equal(push_n(p, 5), 0);
	otlp_push_stop(p, 5000, &st);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.failed, 5);
	assert_true(st.posts >= 2 && st.retries == st.posts - 1);
	assert_non_null(strstr(st.last_error, "onnect"));
	free(u);
}

static void test_partial(void **state)
{
	struct receiver r = {.statuses = {200},
			     .nstatuses = 1,
			     .answer =
				     "{\"partialSuccess\":{\"rejectedSpans\":\"3\",\"errorMessage\":\"x\"}}"};
	struct otlp_push_stats st;
	struct mt_err err = {"", 0};

	(void)state;
	receiver_start(&r);
	char *u = url_of(r.port, "");
	struct otlp_push_opts o = {.url = u, .batch_ms = 20};
	struct otlp_push *p = otlp_push_start(&o, &err);
	assert_int_equal(push_n(p, 10), 0);
	otlp_push_stop(p, 5000, &st);
	receiver_stop(&r);
	assert_int_equal(st.sent, 7);
	assert_int_equal(st.failed, 3);
	assert_string_equal(st.last_error, "the Collector rejected 3 spans");
	free(u);
}

static void test_full_and_deadline(void **state)
{
	struct receiver r = {.statuses = {200}, .nstatuses = 1, .hang = 1};
	struct otlp_push_stats st;
	struct mt_err err = {"", 0};

	(void)state;
	receiver_start(&r);
	char *u = url_of(r.port, "");
	/* A small queue, batches of 10, a receiver that never answers. */
	struct otlp_push_opts o = {.url = u, .batch_spans = 10, .batch_ms = 10, .queue_bytes = 4096};
	struct otlp_push *p = otlp_push_start(&o, &err);
	int dropped = push_n(p, 2000);
	otlp_push_stop(p, 300, &st);
	receiver_stop(&r);
	assert_true(dropped > 0);
	assert_int_equal(st.dropped_full, dropped);
	assert_int_equal(st.queued + st.dropped_full, 2000);
	/* What was queued was given up on once the deadline passed, POST under way included. */
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.failed, st.queued);
	free(u);
}

static void test_lost_by_tag(void **state)
{
	struct receiver r = {.statuses = {200, 400}, .nstatuses = 2};
	struct otlp_push_stats st;
	struct otlp_push_lost *lost;
	size_t nlost;
	struct mt_err err = {"", 0};

	(void)state;
	receiver_start(&r);
	char *u = url_of(r.port, "");
	/* A first batch taken, then a second one refused: its spans are lost, by tag. */
	struct otlp_push_opts o = {.url = u, .batch_spans = 4, .batch_ms = 10000};
	struct otlp_push *p = otlp_push_start(&o, &err);
	for (int i = 0; i < 8; i++)
		assert_int_equal(otlp_push_span_tagged(p, i < 5 ? 7 : 9, "{\"attributes\":[]}", "{}"), 0);
	otlp_push_finish(p, 5000, &st, &lost, &nlost);
	receiver_stop(&r);
	assert_int_equal(st.sent, 4);
	assert_int_equal(st.failed, 4);
	assert_int_equal(nlost, 2);
	assert_int_equal(lost[0].tag, 7);
	assert_int_equal(lost[0].spans, 1);
	assert_int_equal(lost[1].tag, 9);
	assert_int_equal(lost[1].spans, 3);
	free(lost);
	free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_retry),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_full_and_deadline),
		cmocka_unit_test(test_lost_by_tag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
