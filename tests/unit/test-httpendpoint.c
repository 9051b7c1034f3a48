/*
 * test-httpendpoint.c - the HTTP/1.1 server endpoint (tap/http/httpendpoint.h)
 * over real loopback sockets: pipelined requests answered in order on a
 * kept-alive connection (Date and Content-Length added), a streamed reply
 * chunked in HTTP/1.1 and delimited by the close in HTTP/1.0, a smuggling
 * shape refused with 400 and the connection closed before the application
 * sees anything, and a client that leaves before its answer said through
 * gone.
 */
#include "tests/unit/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "schema/util.h"
#include "tap/http/httpendpoint.h"

struct app {
	int requests, gone;
	char seen[512];       /* "METHOD TARGET BODY;" for each request */
	struct hep_req *held; /* a request left unanswered (/hold) */
};

static void on_request(void *ctx, struct hep_req *r)
{
	struct app *a = ctx;
	size_t n, len = strlen(a->seen);
	const char *body = hep_body(r, &n);
	const char *t = hep_target(r);
	struct mt_hdr h = {"Content-Type", "text/plain"};

	a->requests++;
	snprintf(a->seen + len, sizeof(a->seen) - len, "%s %s %s;", hep_method(r), t, body);
	if (!strcmp(t, "/hold")) {
		a->held = r;
		hep_set_arg(r, a);
		return;
	}
	if (!strcmp(t, "/stream")) {
		hep_stream_start(r, 200, "OK", &h, 1);
		hep_stream_chunk(r, "a", 1);
		hep_stream_chunk(r, "b", 1);
		hep_stream_end(r);
		return;
	}
	hep_reply(r, 200, "OK", &h, 1, t, strlen(t));
}

static void on_gone(void *ctx, struct hep_req *r, void *arg)
{
	struct app *a = ctx;

	assert_ptr_equal(r, a->held);
	assert_ptr_equal(arg, a);
	a->held = NULL;
	a->gone++;
}

struct fixture {
	struct event_base *base;
	struct hep *e;
	struct hln_pace *pace;
	struct app app;
	int port;
};

static void say(void *arg, const char *text)
{
	(void)arg;
	(void)text;
}

static void up(struct fixture *f)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct hep_opts o;
	struct hep_handler h = {.ctx = &f->app, .request = on_request, .gone = on_gone};

	memset(f, 0, sizeof(*f));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	f->port = ntohs(sa.sin_port);
	f->base = event_base_new();
	f->pace = hln_pace_new(say, NULL);
	hep_opts_default(&o);
	o.max_body = 1024;
	o.client_timeout_ms = 2000;
	o.pace = f->pace;
	h.ctx = &f->app;
	f->e = hep_new(f->base, fd, &o, &h);
	assert_non_null(f->e);
}

static void down(struct fixture *f)
{
	hep_free(f->e);
	hln_pace_free(f->pace);
	event_base_free(f->base);
}

static int dial(struct fixture *f)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)f->port);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/*
 * Send text on fd, then run the loop for up to ms, reading what comes into
 * out (n bytes); returns 1 when the endpoint closed the connection.
 */
static int talk(struct fixture *f, int fd, const char *text, char *out, size_t n, int ms)
{
	size_t got = 0;
	int64_t end = mt_mono_ns() + (int64_t)ms * 1000000;

	if (text)
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	out[0] = '\0';
	while (mt_mono_ns() < end) {
		ssize_t k;
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		k = read(fd, out + got, n - 1 - got);
		if (k == 0)
			return 1;
		if (k > 0) {
			got += (size_t)k;
			out[got] = '\0';
		} else if (errno != EAGAIN) {
			return 1;
		}
		usleep(1000);
	}
	return 0;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static void test_pipelined(void **state)
{
	struct fixture f;
	char out[4096];
	int fd;

	(void)state;
	up(&f);
	fd = dial(&f);
	assert_int_equal(talk(&f, fd,
			      "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
			      "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz",
			      out, sizeof(out), 300),
			 0); /* (kept alive) */
	assert_string_equal(f.app.seen, "GET /a ;POST /b xyz;");
	assert_int_equal(count(out, "HTTP/1.1 200 OK\r\nDate: "), 2);
	assert_int_equal(count(out, "Content-Length: 2\r\n"), 2);
	assert_true(strstr(out, "/a") < strstr(out, "/b"));
	assert_null(strstr(out, "Connection:"));
	close(fd);
	down(&f);
}

static void test_stream(void **state)
{
	struct fixture f;
	char out[4096];
	int fd;

	(void)state;
	up(&f);
	fd = dial(&f);
	assert_int_equal(talk(&f, fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", out, sizeof(out), 200), 0);
	assert_non_null(strstr(out, "Transfer-Encoding: chunked\r\n"));
	assert_non_null(strstr(out, "\r\n\r\n1\r\na\r\n1\r\nb\r\n0\r\n\r\n"));
	close(fd);
	fd = dial(&f);
	assert_int_equal(talk(&f, fd, "GET /stream HTTP/1.0\r\n\r\n", out, sizeof(out), 2000), 1);
	assert_non_null(strstr(out, "HTTP/1.0 200 OK\r\n"));
	assert_non_null(strstr(out, "Connection: close\r\n"));
	assert_null(strstr(out, "chunked"));
	assert_non_null(strstr(out, "\r\n\r\nab"));
	close(fd);
	down(&f);
}

static void test_smuggling(void **state)
{
	struct fixture f;
	char out[4096];
	int fd;

	(void)state;
	up(&f);
	fd = dial(&f);
	assert_int_equal(talk(&f, fd,
			      "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 50\r\n"
			      "\r\nxyzGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
			      out, sizeof(out), 2000),
			 1);
	assert_int_equal(f.app.requests, 0);
	assert_int_equal(count(out, "HTTP/1.1 "), 1);
	assert_non_null(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
	assert_non_null(strstr(out, "Connection: close\r\n"));
	assert_non_null(strstr(out, "more than one Content-Length field"));
	close(fd);
	down(&f);
}

static void test_gone(void **state)
{
	struct fixture f;
	char out[256];
	int fd;

	(void)state;
	up(&f);
	fd = dial(&f);
	assert_int_equal(talk(&f, fd, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n", out, sizeof(out), 100), 0);
	assert_non_null(f.app.held);
	close(fd);
	for (int i = 0; i < 100 && !f.app.gone; i++) {
		event_base_loop(f.base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_int_equal(f.app.gone, 1);
	down(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_smuggling),
		cmocka_unit_test(test_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
