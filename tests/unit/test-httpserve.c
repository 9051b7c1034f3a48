/*
 * test-httpserve.c - the HTTP listening side of the mock server
 * (tap/http/httpserve.h): hsv_run in a forked process on 127.0.0.1, port 0,
 * with a small application that answers each request as its body asks and
 * writes what it is told (sessions opened and closed, messages) to a log;
 * a client written here on plain sockets sends exact bytes and checks the
 * exact bytes it gets back (Date and the minted session id masked):
 *   - a POST answered with JSON (the initialize that starts a session), one
 *     answered on an SSE stream (a message before the answer), 202 for a
 *     notification, a GET stream carrying what the application sends outside
 *     a request, 409 for a second one, a DELETE and what follows it;
 *   - bad requests: bytes that are not HTTP, another path, another method,
 *     Accept, Content-Type, a body that is not JSON, a batch, no session id,
 *     an unknown one, a foreign Host or Origin (403);
 *   - keep-alive, pipelined requests answered in order, HTTP/1.0;
 *   - a client gone in the middle of a body: no message, the server goes on;
 *   - a GET with Last-Event-ID: the events after it again, and those
 *     hsv_app.resume names by their tags;
 *   - SIGTERM: every session closed ("stopped"), hsv_run returns 0.
 */
#include "tests/unit/unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "schema/message.h"
#include "schema/util.h"
#include "tap/http/httpserve.h"

/* ---- the server, in its own process ---- */

struct app {
	FILE *log;
};

static void say(struct app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct app *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(a->log, fmt, ap);
	va_end(ap);
	fputc('\n', a->log);
	fflush(a->log);
}

static void *app_open(void *ctx, struct hsv_sess *s)
{
	say(ctx, "open %s", hsv_session_id(s)[0] ? "SID" : "-");
	return ctx;
}

/*
 * A request is answered {"jsonrpc":"2.0","id":ID,"result":{}}, as its
 * method says: "sse": a progress notification on its stream first (tag 1),
 * the answer tagged 2; "push": a message for the GET stream (tag 3) first;
 * "hold": not answered.
 */
static void app_message(void *state, struct hsv_sess *s, int64_t req, const char *p, size_t n)
{
	struct mt_class c;
	char *ans;

	say(state, "message %lld %.*s", (long long)req, (int)n, p);
	if (!req)
		return;
	mt_classify(p, n, &c);
	ans = mt_asprintf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{}}", (int)c.id.n, c.id.p);
	if (c.method.n == 5 && !memcmp(c.method.p, "\"sse\"", 5)) {
		static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
					   "\"params\":{\"progressToken\":1,\"progress\":1}}";
		hsv_send(s, req, note, strlen(note), 1);
		hsv_answer(s, req, ans, strlen(ans), 0, 2);
	} else if (c.method.n == 6 && !memcmp(c.method.p, "\"push\"", 6)) {
		static const char note[] =
			"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
		hsv_send(s, 0, note, strlen(note), 3);
		hsv_answer(s, req, ans, strlen(ans), 0, -1);
	} else if (!(c.method.n == 6 && !memcmp(c.method.p, "\"hold\"", 6))) {
		hsv_answer(s, req, ans, strlen(ans), 0, -1);
	}
	free(ans);
}

static void app_close(void *state, struct hsv_sess *s, const char *why)
{
	(void)s;
	say(state, "close %s", why);
}

/* A Last-Event-ID of "tags" names the events tagged 1 and 2. */
static int app_resume(void *state, struct hsv_sess *s, const char *lei, const int64_t **tags, size_t *n)
{
	static const int64_t t[] = {1, 2};

	(void)s;
	say(state, "resume %s", lei);
	if (strcmp(lei, "tags"))
		return 0;
	*tags = t;
	*n = 2;
	return 1;
}

/* The server running, for the teardown of a test that failed (0: none). */
static pid_t live;

/* A running server: its process, its port, its stderr, its application's log. */
struct srv {
	pid_t pid;
	int port;
	int err_fd;
	char *dir;
	char *log;
};

/* What hsv_run says (its address lines): on stderr, where the test reads them. */
static void say_stderr(void *ctx, const char *text)
{
	(void)ctx;
	fputs(text, stderr);
	fflush(stderr);
}

static void srv_start(struct srv *v)
{
	int ep[2];
	char line[256];
	size_t got = 0;

	memset(v, 0, sizeof(*v));
	v->dir = unit_tmpdir();
	assert_non_null(v->dir);
	v->log = mt_asprintf("%s/app.log", v->dir);
	assert_int_equal(pipe(ep), 0);
	fflush(NULL);
	v->pid = fork();
	assert_true(v->pid >= 0);
	if (v->pid == 0) {
		struct hsv_opts o;
		struct app a;
		struct hsv_app app = {.ctx = &a,
				      .open = app_open,
				      .message = app_message,
				      .close = app_close,
				      .resume = app_resume};
		int rc;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* (a test that failed leaves none behind) */
		dup2(ep[1], 2);
		close(ep[0]);
		close(ep[1]);
		a.log = fopen(v->log, "w");
		if (!a.log)
			_exit(3);
		hsv_opts_default(&o);
		o.listen = "127.0.0.1:0";
		o.name = "test";
		o.stop_ms = 200;
		o.client_timeout_ms = 5000;
		o.max_body = 4096;
		o.voice.say = say_stderr;
		rc = hsv_run(&o, &app, NULL);
		say(&a, "end %d", rc);
		fclose(a.log);
		exit(rc ? 1 : 0); /* (exit: a sanitizer checks the server for leaks) */
	}
	live = v->pid;
	close(ep[1]);
	v->err_fd = ep[0];
	/* "mcptap: test on http://127.0.0.1:PORT/mcp\n" */
	while (got < sizeof(line) - 1 && (got == 0 || line[got - 1] != '\n')) {
		ssize_t k = read(v->err_fd, line + got, 1);
		assert_int_equal(k, 1);
		got++;
	}
	line[got] = '\0';
	assert_int_equal(sscanf(line, "mcptap: test on http://127.0.0.1:%d/mcp\n", &v->port), 1);
	assert_true(v->port > 0);
}

/*
 * Stop it (SIGTERM): it must exit 0. Returns its application's log and, in
 * *err, what else it said on stderr (both owned by the caller).
 */
static char *srv_stop(struct srv *v, char **err)
{
	struct mt_buf e = MT_BUF_INIT, l = MT_BUF_INIT;
	char buf[4096];
	ssize_t k;
	int status;
	FILE *f;

	assert_int_equal(kill(v->pid, SIGTERM), 0);
	while ((k = read(v->err_fd, buf, sizeof(buf))) > 0)
		mt_buf_append(&e, buf, (size_t)k);
	close(v->err_fd);
	assert_int_equal(waitpid(v->pid, &status, 0), v->pid);
	live = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	f = fopen(v->log, "r");
	assert_non_null(f);
	while ((k = (ssize_t)fread(buf, 1, sizeof(buf), f)) > 0)
		mt_buf_append(&l, buf, (size_t)k);
	fclose(f);
	mt_buf_putc(&e, '\0');
	mt_buf_putc(&l, '\0');
	free(v->log);
	unit_rmdir(v->dir);
	*err = e.data;
	return l.data;
}

/* Stop it; its log is want and it said nothing more. */
static void srv_stop_is(struct srv *v, const char *want)
{
	char *err, *log = srv_stop(v, &err);

	assert_string_equal(log, want);
	assert_string_equal(err, "");
	free(log);
	free(err);
}

/* ---- the client ---- */

struct conn {
	int fd;
	struct mt_buf in; /* read, not yet taken */
	int eof;
};

static void conn_open(struct conn *c, const struct srv *v)
{
	struct sockaddr_in a;

	memset(c, 0, sizeof(*c));
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c->fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)v->port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	mt_buf_release(&c->in);
}

static void put(struct conn *c, const char *s)
{
	size_t n = strlen(s);

	assert_int_equal(send(c->fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Read more (up to 5 s); 0 at the end of the stream. */
static int more(struct conn *c)
{
	struct pollfd p = {c->fd, POLLIN, 0};
	char buf[8192];
	ssize_t k;

	if (c->eof)
		return 0;
	assert_int_equal(poll(&p, 1, 5000), 1);
	k = recv(c->fd, buf, sizeof(buf), 0);
	if (k < 0 && errno == ECONNRESET)
		k = 0;
	assert_true(k >= 0);
	if (k == 0) {
		c->eof = 1;
		return 0;
	}
	mt_buf_append(&c->in, buf, (size_t)k);
	return 1;
}

/* Where the first whole reply in p (n bytes) ends, or 0. */
static size_t reply_end(const char *p, size_t n, int eof)
{
	const char *end = memmem(p, n, "\r\n\r\n", 4), *cl, *body;

	if (!end)
		return 0;
	body = end + 4;
	cl = memmem(p, (size_t)(end - p), "Content-Length: ", 16);
	if (cl) {
		size_t len = strtoul(cl + 16, NULL, 10);
		return (size_t)(body - p) + len <= n ? (size_t)(body - p) + len : 0;
	}
	if (memmem(p, (size_t)(end - p), "Transfer-Encoding: chunked", 26)) {
		const char *z = memmem(body, n - (size_t)(body - p), "\r\n0\r\n\r\n", 7);
		if (!z && n - (size_t)(body - p) >= 5 && !memcmp(body, "0\r\n\r\n", 5))
			return (size_t)(body - p) + 5;
		return z ? (size_t)(z - p) + 7 : 0;
	}
	if (!strncmp(p, "HTTP/1.1 2", 10) && !strncmp(p + 9, "204", 3))
		return (size_t)(body - p);
	return eof ? n : 0; /* (read to the close) */
}

/*
 * The next whole reply, Date's value as "D" and the session id sid (when
 * not NULL) as "SID". The caller frees it.
 */
static char *masked(const char *p, size_t n, const char *sid)
{
	struct mt_buf o = MT_BUF_INIT;
	size_t sl = sid ? strlen(sid) : 0;

	for (size_t i = 0; i < n;) {
		if (n - i > 6 && !memcmp(p + i, "Date: ", 6)) {
			const char *e = memmem(p + i, n - i, "\r\n", 2);
			mt_buf_puts(&o, "Date: D");
			i = e ? (size_t)(e - p) : n;
		} else if (sl && n - i >= sl && !memcmp(p + i, sid, sl)) {
			mt_buf_puts(&o, "SID");
			i += sl;
		} else {
			mt_buf_putc(&o, p[i++]);
		}
	}
	mt_buf_putc(&o, '\0');
	return o.data;
}

static char *reply(struct conn *c, const char *sid)
{
	size_t end;
	char *r;

	while (!(end = reply_end(c->in.data ? c->in.data : "", c->in.len, c->eof)))
		assert_true(more(c) || reply_end(c->in.data ? c->in.data : "", c->in.len, 1));
	r = masked(c->in.data, end, sid);
	memmove(c->in.data, c->in.data + end, c->in.len - end);
	c->in.len -= end;
	return r;
}

static void reply_is(struct conn *c, const char *sid, const char *want)
{
	char *got = reply(c, sid);

	assert_string_equal(got, want);
	free(got);
}

/* What came until want was in (masked), all of it taken. */
static void until_is(struct conn *c, const char *sid, const char *want)
{
	char *got = NULL;

	for (;;) {
		free(got);
		got = masked(c->in.data ? c->in.data : "", c->in.len, sid);
		if (strlen(got) >= strlen(want))
			break;
		assert_true(more(c));
	}
	assert_string_equal(got, want);
	free(got);
	c->in.len = 0;
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Nothing more comes and the server closes the connection. */
static void closed(struct conn *c)
{
	assert_false(more(c));
	assert_int_equal(c->in.len, 0);
}

/* A POST of body to /mcp, with extra header lines (each ending in CRLF) before the body. */
static char *post_text(const char *extra, const char *body)
{
	return mt_asprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			   "Accept: application/json, text/event-stream\r\n"
			   "Content-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
			   extra ? extra : "", strlen(body), body);
}

static void post(struct conn *c, const char *extra, const char *body)
{
	char *t = post_text(extra, body);

	put(c, t);
	free(t);
}

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}"
#define ANS(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"result\":{}}"
#define NOTE "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
#define PROGRESS                                                      \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"," \
	"\"params\":{\"progressToken\":1,\"progress\":1}}"
#define CHANGED "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"

/* The heads of an SSE stream and of a JSON answer (len: its Content-Length), as masked. */
#define SSE_HEAD                                                            \
	"HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/event-stream\r\n" \
	"Cache-Control: no-cache\r\nMcp-Session-Id: SID\r\nTransfer-Encoding: chunked\r\n\r\n"
#define JSON_HEAD(len)                                                     \
	"HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/json\r\n" \
	"Mcp-Session-Id: SID\r\nContent-Length: " len "\r\n\r\n"
/* A GET of the session's stream (%s: its Mcp-Session-Id line), and one resuming after ID. */
#define GET_STREAM "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n%s\r\n"
#define GET_AFTER(id)                                                           \
	"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" \
	"Last-Event-ID: " id "\r\n%s\r\n"

/* The initialize that starts a session: its answer, and the session id it names (owned). */
static char *initialize(struct conn *c)
{
	char *r, *sid, *e;

	post(c, NULL, INIT);
	r = reply(c, NULL);
	sid = strstr(r, "Mcp-Session-Id: ");
	assert_non_null(sid);
	sid += 16;
	e = strstr(sid, "\r\n");
	assert_non_null(e);
	sid = mt_asprintf("%.*s", (int)(e - sid), sid);
	assert_int_equal(strlen(sid), 32);
	assert_int_equal(strspn(sid, "0123456789abcdef"), 32);
	{
		char *m = masked(r, strlen(r), sid);
		assert_string_equal(m, JSON_HEAD("36") ANS(1));
		free(m);
	}
	free(r);
	return sid;
}

static char *sid_line(const char *sid)
{
	return mt_asprintf("Mcp-Session-Id: %s\r\n", sid);
}

/*
 * Open the session's GET stream with request on a new connection c: while the
 * server has not yet seen the last one's client go (409), again, up to 5 s.
 * Its head is left in c for the caller to check.
 */
static void open_get(struct conn *c, const struct srv *v, const char *request)
{
	for (int i = 0;; i++) {
		conn_open(c, v);
		put(c, request);
		while (!c->in.data || !memmem(c->in.data, c->in.len, "\r\n\r\n", 4))
			assert_true(more(c));
		if (strncmp(c->in.data, "HTTP/1.1 409 ", 13))
			return;
		assert_true(i < 250);
		conn_close(c);
		usleep(20 * 1000);
	}
}

/* ---- the cases ---- */

/*
 * One session: a JSON answer, an SSE one (the message before it on its
 * stream), 202 for a notification, on one kept-alive connection; the
 * messages handed to the application in order, with their handles.
 */
static void test_post(void **state)
{
	struct srv v;
	struct conn c;
	char *sid, *sl;

	(void)state;
	srv_start(&v);
	conn_open(&c, &v);
	sid = initialize(&c);
	sl = sid_line(sid);
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	reply_is(&c, sid, JSON_HEAD("36") ANS(2));
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"sse\"}");
	reply_is(&c, sid,
		 SSE_HEAD "7c\r\nevent: message\nid: 3-1\ndata: " PROGRESS "\n\n\r\n"
			  "45\r\nevent: message\nid: 3-2\ndata: " ANS("s") "\n\n\r\n"
									   "0\r\n\r\n");
	post(&c, sl, NOTE);
	reply_is(&c, sid, "HTTP/1.1 202 Accepted\r\nDate: D\r\nContent-Length: 0\r\n\r\n");
	conn_close(&c);
	srv_stop_is(&v, "open SID\n"
			"message 1 " INIT "\n"
			"message 2 {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
			"message 3 {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"sse\"}\n"
			"message 0 " NOTE "\n"
			"close stopped\n"
			"end 0\n");
	free(sl);
	free(sid);
}

/*
 * The GET stream: what the application sends outside a request goes on it
 * (held until it opens); a second GET is 409; a DELETE ends the session,
 * its stream, and later requests naming it get 404.
 */
static void test_get_and_delete(void **state)
{
	struct srv v;
	struct conn c, g, g2;
	char *sid, *sl, *t;

	(void)state;
	srv_start(&v);
	conn_open(&c, &v);
	sid = initialize(&c);
	sl = sid_line(sid);
	/* Sent before any GET: held for it. */
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"push\"}");
	reply_is(&c, sid, JSON_HEAD("36") ANS(2));
	conn_open(&g, &v);
	t = mt_asprintf(GET_STREAM, sl);
	put(&g, t);
	until_is(&g, sid, SSE_HEAD "5c\r\nevent: message\nid: 3-1\ndata: " CHANGED "\n\n\r\n");
	/* Sent while it is open: on it at once. */
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"push\"}");
	until_is(&g, sid, "5c\r\nevent: message\nid: 3-2\ndata: " CHANGED "\n\n\r\n");
	reply_is(&c, sid, JSON_HEAD("36") ANS(3));
	/* One GET stream at a time. */
	conn_open(&g2, &v);
	put(&g2, t);
	reply_is(&g2, sid,
		 "HTTP/1.1 409 Conflict\r\nDate: D\r\nContent-Type: application/json\r\n"
		 "Content-Length: 104\r\n\r\n"
		 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
		 "\"message\":\"the session's GET stream is open already\"}}");
	free(t);
	/* DELETE: 200, the GET stream ends, the session is gone. */
	t = mt_asprintf("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", sl);
	put(&c, t);
	reply_is(&c, sid, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\n\r\n");
	until_is(&g, sid, "0\r\n\r\n");
	put(&c, t);
	reply_is(&c, sid,
		 "HTTP/1.1 404 Not Found\r\nDate: D\r\nContent-Type: application/json\r\n"
		 "Content-Length: 101\r\n\r\n"
		 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
		 "\"message\":\"no such session (ended, or never was)\"}}");
	free(t);
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
	reply_is(&c, sid,
		 "HTTP/1.1 404 Not Found\r\nDate: D\r\nContent-Type: application/json\r\n"
		 "Content-Length: 101\r\n\r\n"
		 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
		 "\"message\":\"no such session (ended, or never was)\"}}");
	conn_close(&g2);
	conn_close(&g);
	conn_close(&c);
	srv_stop_is(&v, "open SID\n"
			"message 1 " INIT "\n"
			"message 2 {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"push\"}\n"
			"message 3 {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"push\"}\n"
			"close deleted\n"
			"end 0\n");
	free(sl);
	free(sid);
}

/* The JSON-RPC error the endpoint answers a bad request with. */
#define ERRB(text) "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"" text "\"}}"

/* One request on its own connection, and the reply it gets. */
static void one_is(const struct srv *v, const char *sid, const char *request, const char *want)
{
	struct conn c;

	conn_open(&c, v);
	put(&c, request);
	reply_is(&c, sid, want);
	conn_close(&c);
}

/* A JSON error reply of status and reason, with extra fields before Content-Type. */
static char *err_reply(const char *status, const char *extra, const char *body)
{
	return mt_asprintf("HTTP/1.1 %s\r\nDate: D\r\n%sContent-Type: application/json\r\n"
			   "Content-Length: %zu\r\n\r\n%s",
			   status, extra, strlen(body), body);
}

static void bad_is(const struct srv *v, const char *sid, const char *request, const char *status,
		   const char *extra, const char *body)
{
	char *want = err_reply(status, extra, body);

	one_is(v, sid, request, want);
	free(want);
}

/* Requests the endpoint answers itself, each status and body exact. */
static void test_bad_requests(void **state)
{
	struct srv v;
	struct conn c;
	char *sid, *sl, *t;

	(void)state;
	srv_start(&v);
	conn_open(&c, &v);
	sid = initialize(&c);
	sl = sid_line(sid);
	conn_close(&c);
	bad_is(&v, sid, "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "404 Not Found", "",
	       ERRB("no such endpoint"));
	bad_is(&v, sid, "PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
	       "405 Method Not Allowed", "Allow: GET, POST, DELETE\r\n", ERRB("not this method here"));
	t = mt_asprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
			"Content-Type: application/json\r\n%sContent-Length: 2\r\n\r\n{}",
			sl);
	bad_is(&v, sid, t, "406 Not Acceptable", "",
	       ERRB("Accept must list application/json and text/event-stream"));
	free(t);
	t = mt_asprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			"Accept: application/json, text/event-stream\r\nContent-Type: text/plain\r\n"
			"%sContent-Length: %zu\r\n\r\n%s",
			sl, strlen(NOTE), NOTE);
	bad_is(&v, sid, t, "415 Unsupported Media Type", "", ERRB("Content-Type must be application/json"));
	free(t);
	t = post_text(sl, "{\"jsonrpc\":");
	bad_is(&v, sid, t, "400 Bad Request", "", ERRB("the body is not JSON"));
	free(t);
	t = post_text(sl, "[" NOTE "]");
	bad_is(&v, sid, t, "400 Bad Request", "", ERRB("a batch is not served (one message per POST)"));
	free(t);
	t = post_text(sl, "{\"a\":1}");
	bad_is(&v, sid, t, "400 Bad Request", "", ERRB("the body is not a JSON-RPC message"));
	free(t);
	t = post_text(NULL, NOTE);
	bad_is(&v, sid, t, "400 Bad Request", "", ERRB("Mcp-Session-Id is missing"));
	free(t);
	t = post_text("Mcp-Session-Id: 00000000000000000000000000000000\r\n", NOTE);
	bad_is(&v, sid, t, "404 Not Found", "", ERRB("no such session (ended, or never was)"));
	free(t);
	bad_is(&v, sid, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
	       "400 Bad Request", "", ERRB("Mcp-Session-Id is missing"));
	bad_is(&v, sid, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n",
	       "406 Not Acceptable", "", ERRB("Accept must list text/event-stream"));
	bad_is(&v, sid, "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "400 Bad Request", "",
	       ERRB("Mcp-Session-Id is missing"));
	srv_stop_is(&v, "open SID\n"
			"message 1 " INIT "\n"
			"close stopped\n"
			"end 0\n");
	free(sl);
	free(sid);
}

/* The endpoint's refusal: status, the JSON-RPC error saying why, the close. */
static char *refusal(const char *status, const char *why)
{
	char *body = mt_asprintf(ERRB("mcptap: %s"), why);
	char *r = mt_asprintf("HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
			      "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			      status, strlen(body), body);

	free(body);
	return r;
}

/* request on a connection of its own is refused (want) and the connection closed. */
static void refused_is(const struct srv *v, const char *request, const char *status, const char *why)
{
	struct conn c;
	char *want = refusal(status, why);

	conn_open(&c, v);
	put(&c, request);
	reply_is(&c, NULL, want);
	closed(&c);
	conn_close(&c);
	free(want);
}

/*
 * What the endpoint refuses before the application sees it, the connection
 * closed after: bytes that are not HTTP, a request smuggling shape, a body
 * above max_body, a foreign Host or Origin on loopback (said on stderr). A
 * loopback Origin is let in.
 */
static void test_refused(void **state)
{
	struct srv v;
	struct conn c;
	char *err, *log, *t;

	(void)state;
	srv_start(&v);
	refused_is(&v, "HELLO THERE\r\n\r\n", "400 Bad Request",
		   "refused: a request line that is not METHOD SP target SP HTTP/1.x");
	refused_is(&v,
		   "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
		   "Content-Length: 3\r\n\r\n{}",
		   "400 Bad Request", "refused: more than one Content-Length field");
	refused_is(&v,
		   "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		   "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
		   "Content-Length: 5000\r\n\r\n",
		   "413 Payload Too Large", "refused: a request body above --max-body");
	refused_is(&v, "GET /mcp HTTP/1.1\r\nHost: evil.example\r\nAccept: text/event-stream\r\n\r\n",
		   "403 Forbidden",
		   "Host is not a loopback name nor one given with --allow-host (a DNS rebinding?)");
	t = post_text("Origin: http://evil.example\r\n", INIT);
	refused_is(&v, t, "403 Forbidden",
		   "Origin is not of a loopback host nor of one given with --allow-host "
		   "(a web page elsewhere?)");
	free(t);
	/* A loopback Origin is let in: the initialize reaches the application. */
	conn_open(&c, &v);
	t = mt_asprintf("Origin: http://localhost:%d\r\n", v.port);
	post(&c, t, INIT);
	free(t);
	t = reply(&c, NULL);
	assert_true(starts(t, "HTTP/1.1 200 OK\r\n"));
	free(t);
	conn_close(&c);
	log = srv_stop(&v, &err);
	assert_string_equal(log, "open SID\nmessage 1 " INIT "\nclose stopped\nend 0\n");
	assert_string_equal(err, "mcptap: warning: refused a request for Host 'evil.example' (the mock "
				 "listens on loopback: a DNS rebinding?); --allow-host NAME lets a name in\n"
				 "mcptap: warning: refused a request from Origin 'http://evil.example' "
				 "(the mock listens on loopback: a web page elsewhere?); --allow-host NAME "
				 "lets its host in\n");
	free(log);
	free(err);
}

/*
 * Keep-alive and pipelining: three requests in one write answered in order
 * on the one connection; Connection: close ends it after its reply; HTTP/1.0
 * closes unless it asks to be kept alive; a request not answered holds back
 * those after it.
 */
static void test_keepalive_pipelining(void **state)
{
	struct srv v;
	struct conn c;
	char *sid, *sl, *a, *b, *d, *all;

	(void)state;
	srv_start(&v);
	conn_open(&c, &v);
	sid = initialize(&c);
	sl = sid_line(sid);
	a = post_text(sl, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"hold\"}");
	b = post_text(sl, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\"}");
	d = post_text(sl, NOTE);
	all = mt_asprintf("%s%s%s", b, d, b);
	put(&c, all);
	reply_is(&c, sid, JSON_HEAD("37") ANS(11));
	reply_is(&c, sid, "HTTP/1.1 202 Accepted\r\nDate: D\r\nContent-Length: 0\r\n\r\n");
	reply_is(&c, sid, JSON_HEAD("37") ANS(11));
	free(all);
	/* Connection: close: the reply says it, and the connection ends. */
	free(d);
	d = post_text(sl, "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/list\"}");
	all = mt_asprintf("%.*sConnection: close\r\n%s", (int)(strstr(d, "\r\n") + 2 - d), d,
			  strstr(d, "\r\n") + 2);
	put(&c, all);
	reply_is(&c, sid,
		 "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/json\r\n"
		 "Mcp-Session-Id: SID\r\nContent-Length: 37\r\nConnection: close\r\n\r\n" ANS(12));
	closed(&c);
	conn_close(&c);
	free(all);
	/* HTTP/1.0: closed after its reply; with keep-alive asked, kept. */
	conn_open(&c, &v);
	all = mt_asprintf("POST /mcp HTTP/1.0\r\nHost: 127.0.0.1\r\n"
			  "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
			  "%sContent-Length: %zu\r\n\r\n%s",
			  sl, strlen(NOTE), NOTE);
	put(&c, all);
	reply_is(&c, sid,
		 "HTTP/1.0 202 Accepted\r\nDate: D\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	closed(&c);
	conn_close(&c);
	free(all);
	conn_open(&c, &v);
	all = mt_asprintf("POST /mcp HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
			  "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
			  "%sContent-Length: %zu\r\n\r\n%s",
			  sl, strlen(NOTE), NOTE);
	put(&c, all);
	put(&c, all);
	reply_is(&c, sid,
		 "HTTP/1.0 202 Accepted\r\nDate: D\r\nContent-Length: 0\r\n"
		 "Connection: keep-alive\r\n\r\n");
	reply_is(&c, sid,
		 "HTTP/1.0 202 Accepted\r\nDate: D\r\nContent-Length: 0\r\n"
		 "Connection: keep-alive\r\n\r\n");
	conn_close(&c);
	free(all);
	/*
	 * A request not answered holds those pipelined after it: the next is not
	 * even handed to the application (nothing overtakes). Its client goes.
	 */
	conn_open(&c, &v);
	all = mt_asprintf("%s%s", a, b);
	put(&c, all);
	{
		struct pollfd p = {c.fd, POLLIN, 0};
		assert_int_equal(poll(&p, 1, 300), 0);
	}
	conn_close(&c);
	free(all);
	usleep(100 * 1000);
	srv_stop_is(&v, "open SID\n"
			"message 1 " INIT "\n"
			"message 2 {\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\"}\n"
			"message 0 " NOTE "\n"
			"message 3 {\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\"}\n"
			"message 4 {\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/list\"}\n"
			"message 0 " NOTE "\n"
			"message 0 " NOTE "\n"
			"message 0 " NOTE "\n"
			"message 5 {\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"hold\"}\n"
			"close stopped\n"
			"end 0\n");
	free(a);
	free(b);
	free(d);
	free(sl);
	free(sid);
}

/*
 * A client that goes away in the middle of a body: the application never
 * sees it, and the next client is served.
 */
static void test_gone_mid_body(void **state)
{
	struct srv v;
	struct conn c;
	char *sid, *sl, *t;

	(void)state;
	srv_start(&v);
	conn_open(&c, &v);
	sid = initialize(&c);
	sl = sid_line(sid);
	conn_close(&c);
	conn_open(&c, &v);
	t = post_text(sl, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	t[strlen(t) - 20] = '\0'; /* (20 bytes of the body never sent) */
	put(&c, t);
	free(t);
	usleep(100 * 1000);
	conn_close(&c);
	usleep(100 * 1000);
	conn_open(&c, &v);
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	reply_is(&c, sid, JSON_HEAD("36") ANS(3));
	conn_close(&c);
	srv_stop_is(&v, "open SID\n"
			"message 1 " INIT "\n"
			"message 2 {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}\n"
			"close stopped\n"
			"end 0\n");
	free(sl);
	free(sid);
}

/*
 * Resuming: a GET with Last-Event-ID "N-K" gets the events of stream N after
 * K again, as they went; with "tags" (see app_resume) the events the
 * application names by tag: the SSE POST's progress (tag 1) and answer (tag 2).
 */
static void test_resume(void **state)
{
	struct srv v;
	struct conn c, g;
	char *sid, *sl, *t;

	(void)state;
	srv_start(&v);
	conn_open(&c, &v);
	sid = initialize(&c);
	sl = sid_line(sid);
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"sse\"}");
	reply_is(&c, sid,
		 SSE_HEAD "7c\r\nevent: message\nid: 2-1\ndata: " PROGRESS "\n\n\r\n"
			  "43\r\nevent: message\nid: 2-2\ndata: " ANS(2) "\n\n\r\n"
									 "0\r\n\r\n");
	conn_open(&g, &v);
	t = mt_asprintf(GET_STREAM, sl);
	put(&g, t);
	until_is(&g, sid, SSE_HEAD);
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"push\"}");
	until_is(&g, sid, "5c\r\nevent: message\nid: 3-1\ndata: " CHANGED "\n\n\r\n");
	post(&c, sl, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"push\"}");
	until_is(&g, sid, "5c\r\nevent: message\nid: 3-2\ndata: " CHANGED "\n\n\r\n");
	reply_is(&c, sid, JSON_HEAD("36") ANS(3));
	reply_is(&c, sid, JSON_HEAD("36") ANS(4));
	conn_close(&g);
	free(t);
	/* After 3-1: 3-2 again, on the new stream (6), as it went. */
	t = mt_asprintf(GET_AFTER("3-1"), sl);
	open_get(&g, &v, t);
	until_is(&g, sid, SSE_HEAD "5c\r\nevent: message\nid: 3-2\ndata: " CHANGED "\n\n\r\n");
	conn_close(&g);
	free(t);
	/* The application names the SSE POST's events by their tags. */
	t = mt_asprintf(GET_AFTER("tags"), sl);
	open_get(&g, &v, t);
	until_is(&g, sid,
		 SSE_HEAD "7c\r\nevent: message\nid: 2-1\ndata: " PROGRESS "\n\n\r\n"
			  "43\r\nevent: message\nid: 2-2\ndata: " ANS(2) "\n\n\r\n");
	conn_close(&g);
	free(t);
	conn_close(&c);
	srv_stop_is(&v, "open SID\n"
			"message 1 " INIT "\n"
			"message 2 {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"sse\"}\n"
			"message 3 {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"push\"}\n"
			"message 4 {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"push\"}\n"
			"resume 3-1\n"
			"resume tags\n"
			"close stopped\n"
			"end 0\n");
	free(sl);
	free(sid);
}

/* After a test: a server a failed one left is stopped. */
static int teardown(void **state)
{
	(void)state;
	if (live > 0) {
		kill(live, SIGKILL);
		(void)waitpid(live, NULL, 0);
		live = 0;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_post, teardown),
		cmocka_unit_test_teardown(test_get_and_delete, teardown),
		cmocka_unit_test_teardown(test_bad_requests, teardown),
		cmocka_unit_test_teardown(test_refused, teardown),
		cmocka_unit_test_teardown(test_keepalive_pipelining, teardown),
		cmocka_unit_test_teardown(test_gone_mid_body, teardown),
		cmocka_unit_test_teardown(test_resume, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
