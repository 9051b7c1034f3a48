/*
 * test-httpclient.c - the HTTP client of verify (tap/http/httpclient.h): its pure
 * helpers (resolving a legacy endpoint, excerpts made safe for a terminal),
 * and the client against a canned server in a child process (one connection
 * at a time, each answered by the scenario its path names): a batch in a JSON
 * body, a JSON body over the maximum, SSE with bare CR line ends and a
 * priming event, the session id and the negotiated protocol version on the
 * next request, an error status with its body, and a server that is not there.
 */
#include "tests/unit/unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "tap/http/httpclient.h"

static pid_t server_pid = -1;
static int server_port;

static void test_resolve(void **state)
{
	char *u;

	(void)state;
	u = hc_resolve("http://127.0.0.1:8000/sse", "/message?sessionId=abc");
	assert_string_equal(u, "http://127.0.0.1:8000/message?sessionId=abc");
	free(u);
	u = hc_resolve("http://127.0.0.1:8000/a/sse", "messages?x=1");
	assert_string_equal(u, "http://127.0.0.1:8000/a/messages?x=1");
	free(u);
	u = hc_resolve("http://127.0.0.1:8000/sse", "https://other.example/m");
	assert_string_equal(u, "https://other.example/m");
	free(u);
	assert_null(hc_resolve("http://127.0.0.1:8000/sse", "file:///etc/passwd"));
	assert_null(hc_resolve("not a url", "/x"));
}

static void test_excerpt(void **state)
{
	struct mt_buf b = MT_BUF_INIT;

	(void)state;
	hc_excerpt("a\x1b[31mb\nc\xc3\xa9", 11, 100, &b);
	assert_string_equal(b.data, "a\\x1b[31mb\\nc\\xc3\\xa9");
	mt_buf_reset(&b);
	hc_excerpt("abcdef", 6, 3, &b);
	assert_string_equal(b.data, "abc...");
	mt_buf_release(&b);
}

/* ---- the canned server ---- */

static void put(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Read one request (head and Content-Length body) into buf; 0 or -1. */
static int read_request(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	char *end = NULL;
	long body = 0;

	while (!end) {
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	const char *cl = strcasestr(buf, "content-length:");
	if (cl)
		body = strtol(cl + 15, NULL, 10);
	while ((long)(len - (size_t)(end + 4 - buf)) < body) {
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = '\0';
	}
	return 0;
}

static void respond(int fd, const char *req)
{
	char line[512];
	const char *json = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
	const char *sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

	if (!strncmp(req, "POST /batch ", 12)) {
		put(fd, json);
		put(fd, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},"
			"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}]");
	} else if (!strncmp(req, "POST /big ", 10)) {
		put(fd, json);
		put(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"pad\":\"");
		for (int i = 0; i < 40; i++)
			put(fd, "0123456789012345678901234567890123456789012345678901234567890123456789");
		put(fd, "\"}}");
	} else if (!strncmp(req, "POST /cr ", 9)) {
		put(fd, sse);
		put(fd, "id: p1\rdata:\r\r: keep-alive\r\rdata: {\"jsonrpc\":\"2.0\",\r"
			"data: \"id\":1,\"result\":{}}\r\r");
	} else if (!strncmp(req, "POST /init ", 11)) {
		if (strstr(req, "\"initialize\"")) {
			put(fd,
			    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-42\r\n"
			    "Connection: close\r\n\r\n");
			put(fd,
			    "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\","
			    "\"capabilities\":{},\"serverInfo\":{\"name\":\"x\",\"version\":\"1\"}}}");
		} else {
			int ok = strcasestr(req, "\r\nmcp-session-id: s-42\r\n") &&
				 strcasestr(req, "\r\nmcp-protocol-version: 2025-06-18\r\n") &&
				 strcasestr(req, "\r\naccept: application/json, text/event-stream\r\n");
			put(fd, json);
			snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":%s}}",
				 ok ? "true" : "false");
			put(fd, line);
		}
	} else if (!strncmp(req, "POST /teapot ", 13)) {
		put(fd, "HTTP/1.1 418 I'm a teapot\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
			"short and \x1b[1mstout");
	} else {
		put(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	}
}

static int setup(void **state)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 16) ||
	    getsockname(s, (struct sockaddr *)&a, &len))
		return -1;
	server_port = ntohs(a.sin_port);
	server_pid = fork();
	if (server_pid < 0)
		return -1;
	if (server_pid == 0) {
		static char req[1 << 16];
		alarm(60);
		for (;;) {
			int c = accept(s, NULL, NULL);
			if (c < 0)
				continue;
			if (!read_request(c, req, sizeof(req)))
				respond(c, req);
			close(c);
		}
	}
	close(s);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (server_pid > 0) {
		kill(server_pid, SIGKILL);
		waitpid(server_pid, NULL, 0);
	}
	return 0;
}

/* A client of the canned server's path (the URL is kept here: hc_open borrows it). */
static struct hc *open_path(const char *path, size_t max_message)
{
	static char urls[16][128];
	static int k;
	struct hc_opts o;
	struct hc *c = NULL;
	struct mt_err err = {"", 0};
	char *url = urls[k++ % 16];

	snprintf(url, sizeof(urls[0]), "http://127.0.0.1:%d%s", server_port, path);
	memset(&o, 0, sizeof(o));
	o.url = url;
	o.max_message = max_message;
	assert_int_equal(hc_open(&o, &c, &err), 0);
	return c;
}

static const char REQ[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";

static void test_batch(void **state)
{
	struct hc *c = open_path("/batch", 0);
	struct hc_event ev;

	(void)state;
	hc_post(c, REQ, strlen(REQ), 7);
	assert_int_equal(hc_next(c, 10000, &ev), HC_MESSAGE);
	assert_string_equal(ev.data, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	assert_int_equal(hc_next(c, 10000, &ev), HC_MESSAGE);
	assert_non_null(strstr(ev.data, "notifications/message"));
	assert_int_equal(hc_next(c, 200, &ev), HC_TIMEOUT);
	hc_free(c);
}

static void test_big(void **state)
{
	struct hc *c = open_path("/big", 1000);
	struct hc_event ev;

	(void)state;
	hc_post(c, REQ, strlen(REQ), 7);
	assert_int_equal(hc_next(c, 10000, &ev), HC_FAILED);
	assert_int_equal(ev.tag, 7);
	assert_int_equal(ev.why, HC_BODY);
	assert_string_equal(ev.text, "HTTP 200 with a JSON body of more than 1000 bytes");
	hc_free(c);
}

static void test_sse_cr(void **state)
{
	struct hc *c = open_path("/cr", 0);
	struct hc_event ev;

	(void)state;
	hc_post(c, REQ, strlen(REQ), 7);
	assert_int_equal(hc_next(c, 10000, &ev), HC_MESSAGE);
	assert_string_equal(ev.data, "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"result\":{}}");
	assert_int_equal(hc_next(c, 300, &ev), HC_TIMEOUT);
	hc_free(c);
}

static void test_session_headers(void **state)
{
	static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}";
	struct hc *c = open_path("/init", 0);
	struct hc_event ev;

	(void)state;
	hc_post(c, init, strlen(init), 0);
	assert_int_equal(hc_next(c, 10000, &ev), HC_MESSAGE);
	assert_string_equal(hc_session_id(c), "s-42");
	hc_post(c, REQ, strlen(REQ), 1);
	assert_int_equal(hc_next(c, 10000, &ev), HC_MESSAGE);
	assert_string_equal(ev.data, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}");
	hc_free(c);
}

static void test_status(void **state)
{
	struct hc *c = open_path("/teapot", 0);
	struct hc_event ev;

	(void)state;
	hc_post(c, REQ, strlen(REQ), 3);
	assert_int_equal(hc_next(c, 10000, &ev), HC_FAILED);
	assert_int_equal(ev.tag, 3);
	assert_int_equal(ev.status, 418);
	assert_int_equal(ev.why, HC_STATUS);
	assert_int_equal(ev.expired, 0);
	assert_string_equal(ev.text, "HTTP 418 I'm a teapot: short and \\x1b[1mstout");
	hc_free(c);
}

static void test_unreachable(void **state)
{
	struct hc_opts o;
	struct hc *c = NULL;
	struct hc_event ev;
	struct mt_err err = {"", 0};

	(void)state;
	memset(&o, 0, sizeof(o));
	o.url = "http://127.0.0.1:1/mcp";
	assert_int_equal(hc_open(&o, &c, &err), 0);
	hc_post(c, REQ, strlen(REQ), 1);
	assert_int_equal(hc_next(c, 10000, &ev), HC_GONE);
	assert_non_null(strstr(ev.text, "could not be reached ("));
	assert_int_equal(hc_next(c, 10, &ev), HC_GONE); /* and it stays so */
	hc_post(c, REQ, strlen(REQ), 2);                /* (dropped) */
	assert_int_equal(hc_flush(c, 10), -1);
	hc_free(c);
	o.url = "ftp://127.0.0.1/x";
	assert_int_equal(hc_open(&o, &c, &err), -1);
	assert_non_null(strstr(err.msg, "not an http:// or https:// URL"));
}

int main(void)
{
	const struct CMUnitTest httpclient[] = {
		cmocka_unit_test(test_resolve), cmocka_unit_test(test_excerpt),
		cmocka_unit_test(test_batch),   cmocka_unit_test(test_big),
		cmocka_unit_test(test_sse_cr),  cmocka_unit_test(test_session_headers),
		cmocka_unit_test(test_status),  cmocka_unit_test(test_unreachable),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(httpclient, setup, teardown);
}
