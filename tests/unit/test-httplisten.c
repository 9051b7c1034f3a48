/*
 * test-httplisten.c - the listening side of the HTTP tap and the HTTP mock
 * (tap/http/httplisten.h): a listener at the descriptor limit pauses, its
 * pauses doubling from 50 ms, its refusals said at most once a second with
 * their count; it takes a waiting connection once a descriptor is free, and
 * after a connection taken, or a quiet while, a pause starts at 50 ms again.
 * Loopback
 * names, Host and Origin verdicts (--allow-host names, "null", userinfo,
 * ports), and the line that says a refusal.
 */
#include "tests/unit/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "schema/util.h"
#include "tap/http/httplisten.h"

/* ---- the descriptor limit ---- */

struct said {
	char lines[8][256];
	int n;
};

static void say(void *arg, const char *text)
{
	struct said *s = arg;

	if (s->n < 8)
		snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s", text);
	s->n++;
}

struct accepted {
	int n;
	int fd;     /* the last one */
	int64_t at; /* when (monotonic ns) */
	struct hln_watch *w;
	struct event_base *base;
};

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int socklen,
		      void *arg)
{
	struct accepted *a = arg;

	(void)lev;
	(void)sa;
	(void)socklen;
	hln_watch_accepted(a->w);
	a->n++;
	a->fd = fd;
	a->at = mt_mono_ns();
	event_base_loopbreak(a->base);
}

static void on_enough(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

/* Run base for ms milliseconds, or until an accept breaks it. */
static void run_for(struct event_base *base, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	struct event *t = evtimer_new(base, on_enough, base);

	assert_non_null(t);
	evtimer_add(t, &tv);
	event_base_dispatch(base);
	event_free(t);
}

/* Connect socket fd to port (the kernel queues it: nobody need accept). */
static void connect_to(int fd, int port)
{
	struct sockaddr_in sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

#define MS(t) ((t) * (int64_t)1000000)
#define LINE(rest) "cannot accept connections: Too many open files (ulimit -n 64); " rest

static void test_descriptor_limit(void **state)
{
	struct event_base *base = event_base_new();
	struct said said = {.n = 0};
	struct accepted acc = {0, -1, 0, NULL, base};
	struct sockaddr_in sa;
	struct rlimit old, low;
	struct evconnlistener *lev;
	struct hln_pace *pace;
	int fill[256], nfill = 0, c[3], port;
	int64_t t0, first;

	(void)state;
	assert_non_null(base);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lev = evconnlistener_new_bind(base, on_accept, &acc, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
				      (struct sockaddr *)&sa, sizeof(sa));
	assert_non_null(lev);
	port = hln_fd_port(evconnlistener_get_fd(lev));
	assert_true(port > 0);
	assert_int_equal(hln_fd_loopback(evconnlistener_get_fd(lev)), 1);
	pace = hln_pace_new(say, &said);
	acc.w = hln_watch_new(lev, pace, NULL);
	assert_non_null(acc.w);
	/* (the clients' sockets made now: a socket needs a descriptor, a connect none) */
	for (int i = 0; i < 3; i++)
		assert_true((c[i] = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	connect_to(c[0], port);
	connect_to(c[1], port);

	/* Every descriptor under a low limit taken: accept fails with EMFILE. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (int fd; nfill < 256 && (fd = open("/dev/null", O_RDONLY)) >= 0;)
		fill[nfill++] = fd;
	assert_int_equal(errno, EMFILE);

	/* 1 s at the limit: accept is tried at 0, 50, 150, 350 and 750 ms (the
	 * pause doubling), said once, at 0; nothing accepted. */
	t0 = mt_mono_ns();
	run_for(base, 1000);
	assert_int_equal(acc.n, 0);
	assert_int_equal(said.n, 1);
	assert_string_equal(said.lines[0], LINE("1 accept refused, trying again in 50 ms"));

	/* A descriptor free: the first client is taken at the next try (1550 ms);
	 * that took the last descriptor, the second client is refused (said: the
	 * five refusals since 0 ms), but the pause starts at 50 ms again. */
	close(fill[--nfill]);
	run_for(base, 2000);
	assert_int_equal(acc.n, 1);
	first = acc.at;
	assert_true(first - t0 > MS(1400) && first - t0 < MS(1900));
	assert_int_equal(said.n, 2);
	assert_string_equal(said.lines[1], LINE("5 accepts refused since the last line, trying "
						"again in 50 ms"));
	/* The first client's descriptor free: the second is taken 50 ms on. */
	close(acc.fd);
	run_for(base, 2000);
	assert_int_equal(acc.n, 2);
	assert_true(acc.at - first > MS(40) && acc.at - first < MS(300));
	assert_int_equal(said.n, 2);

	/* Nothing refused for more than a second (though at the limit: Linux
	 * refused the accept that looked for a third client at once): a new
	 * client starts a new shortage, at 50 ms, said at once (more than a
	 * second after the last line), with the refusal before it. */
	run_for(base, 1300);
	connect_to(c[2], port);
	run_for(base, 20);
	assert_int_equal(acc.n, 2);
	assert_int_equal(said.n, 3);
	assert_string_equal(said.lines[2], LINE("2 accepts refused since the last line, trying "
						"again in 50 ms"));
	first = mt_mono_ns();
	close(acc.fd);
	run_for(base, 2000);
	assert_int_equal(acc.n, 3);
	assert_true(acc.at - first < MS(300));
	close(acc.fd);

	while (nfill)
		close(fill[--nfill]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	hln_watch_free(acc.w);
	evconnlistener_free(lev);
	hln_pace_free(pace);
	event_base_free(base);
}

/* ---- Host and Origin ---- */

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_loopback_names(void **state)
{
	static const char *const yes[] = {
		"localhost",    "LocalHost", "localhost:8808",        "localhost:", "127.0.0.1",
		"127.0.0.1:80", "127.1",     "127.255.255.254:65535", "[::1]",      "[::1]:8808",
	};
	static const char *const no[] = {
		"",
		"localhost.",
		"localhost.evil.com",
		"evil.localhost",
		"localhostx",
		"127.",
		"127.0.0.1.evil.com",
		"127.0.0.1x",
		"128.0.0.1",
		"10.0.0.1",
		"0.0.0.0",
		"[::1",
		"[::2]",
		"[::1]x",
		"[0:0:0:0:0:0:0:1]",
		"localhost:80x",
		"localhost:-1",
		"localhost:80:80",
		"::1",
		"user@localhost",
	};

	(void)state;
	for (size_t i = 0; i < N(yes); i++)
		if (!hln_loopback_name(yes[i], strlen(yes[i])))
			fail_msg("'%s' is a loopback name", yes[i]);
	for (size_t i = 0; i < N(no); i++)
		if (hln_loopback_name(no[i], strlen(no[i])))
			fail_msg("'%s' is not a loopback name", no[i]);
	/* (n bytes only: what follows is not looked at) */
	assert_int_equal(hln_loopback_name("localhost.evil.com", 9), 1);
}

static void test_guard(void **state)
{
	static const char *const allow[] = {"mcp.local", "tap.example:9000"};
	static const struct hln_guard g = {.loopback = 1, .allow = allow, .n_allow = 2};
	static const struct {
		const char *host, *origin;
		enum hln_verdict want;
	} cases[] = {
		/* Host */
		{NULL, NULL, HLN_PASS}, /* (HTTP/1.0) */
		{"localhost:8808", NULL, HLN_PASS},
		{"127.0.0.1", NULL, HLN_PASS},
		{"[::1]:8808", NULL, HLN_PASS},
		{"mcp.local", NULL, HLN_PASS},
		{"MCP.Local:8808", NULL, HLN_PASS},
		{"tap.example:9000", NULL, HLN_PASS},
		{"tap.example:9001", NULL, HLN_FOREIGN_HOST},
		{"tap.example", NULL, HLN_FOREIGN_HOST},
		{"mcp.local.evil.com", NULL, HLN_FOREIGN_HOST},
		{"mcp.localx", NULL, HLN_FOREIGN_HOST},
		{"evil.example.com", NULL, HLN_FOREIGN_HOST},
		{"evil.example.com:8808", NULL, HLN_FOREIGN_HOST},
		{"", NULL, HLN_FOREIGN_HOST},
		{":8808", NULL, HLN_FOREIGN_HOST},
		/* Origin */
		{"localhost", "http://localhost:3000", HLN_PASS},
		{"localhost", "https://127.0.0.1", HLN_PASS},
		{"localhost", "http://[::1]:6274", HLN_PASS},
		{"localhost", "http://mcp.local", HLN_PASS},
		{"localhost", "https://tap.example:9000", HLN_PASS},
		{"localhost", "http://localhost:3000/", HLN_PASS},
		{"localhost", "null", HLN_FOREIGN_ORIGIN},
		{"localhost", "NULL", HLN_FOREIGN_ORIGIN},
		{"localhost", "", HLN_FOREIGN_ORIGIN},
		{"localhost", "http://evil.example.com", HLN_FOREIGN_ORIGIN},
		{"localhost", "http://localhost.evil.com", HLN_FOREIGN_ORIGIN},
		{"localhost", "http://evil.com@localhost", HLN_FOREIGN_ORIGIN},
		{"localhost", "http://localhost@evil.com", HLN_FOREIGN_ORIGIN},
		{"localhost", "localhost", HLN_FOREIGN_ORIGIN},
		{"localhost", "://localhost", HLN_FOREIGN_ORIGIN},
		{"localhost", "http://", HLN_FOREIGN_ORIGIN},
		{"localhost", "ht tp://localhost", HLN_FOREIGN_ORIGIN},
		{"localhost", "https://tap.example:9001", HLN_FOREIGN_ORIGIN},
		{NULL, "http://evil.example.com", HLN_FOREIGN_ORIGIN},
		/* both foreign: the Host says more */
		{"evil.example.com", "http://evil.example.com", HLN_FOREIGN_HOST},
	};
	static const struct hln_guard off = {.loopback = 0};

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		enum hln_verdict v = hln_guard_check(&g, cases[i].host, cases[i].origin);
		if (v != cases[i].want)
			fail_msg("Host '%s', Origin '%s': %d, not %d", cases[i].host ? cases[i].host : "-",
				 cases[i].origin ? cases[i].origin : "-", (int)v, (int)cases[i].want);
		/* Not on loopback: everything passes. */
		assert_int_equal(hln_guard_check(&off, cases[i].host, cases[i].origin), HLN_PASS);
	}
}

static void test_refusal_line(void **state)
{
	char line[400], longv[300];

	(void)state;
	hln_refusal_line(HLN_FOREIGN_HOST, "evil.example.com:8808", "tap", line, sizeof(line));
	assert_string_equal(line, "refused a request for Host 'evil.example.com:8808' (the tap "
				  "listens on loopback: a DNS rebinding?); --allow-host NAME lets a "
				  "name in");
	hln_refusal_line(HLN_FOREIGN_ORIGIN, "null", "mock", line, sizeof(line));
	assert_string_equal(line, "refused a request from Origin 'null' (the mock listens on "
				  "loopback: a web page elsewhere?); --allow-host NAME lets its host in");
	/* Control bytes, quotes and bytes above ASCII are not put on a terminal. */
	hln_refusal_line(HLN_FOREIGN_HOST, "a\033[2J'b\xc3\xa9\x7f", "tap", line, sizeof(line));
	assert_string_equal(line, "refused a request for Host 'a?[2J?b?"
				  "?"
				  "?' (the tap listens on "
				  "loopback: a DNS rebinding?); --allow-host NAME lets a name in");
	/* At most 100 bytes of it. */
	memset(longv, 'x', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	hln_refusal_line(HLN_FOREIGN_HOST, longv, "tap", line, sizeof(line));
	assert_int_equal(strspn(line + strlen("refused a request for Host '"), "x"), 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descriptor_limit),
		cmocka_unit_test(test_loopback_names),
		cmocka_unit_test(test_guard),
		cmocka_unit_test(test_refusal_line),
	};

	return cmocka_run_group_tests_name("httplisten", tests, NULL, NULL);
}
