/*
 * test-relay.c - the stdio tap (tap/stdio/relay.h) around real children
 * (/bin/cat, small sh scripts), each run in a forked process whose stdin,
 * stdout and stderr are pipes this test writes and reads; what was stored is
 * read back from the capture file with SQL:
 *   - bytes relayed both ways exactly: lines, a last line without its
 *     newline, a line written in pieces, the client's stdin EOF reaching
 *     the child;
 *   - a line of 3 MiB relayed whole and stored as one message; above
 *     --max-message relayed whole and stored as a gap;
 *   - the child's stderr passed through and stored line by line;
 *   - the child's exit status and the signal that killed it, in the result
 *     and in the session row;
 *   - a command that cannot run (127, the session's error), and a relay
 *     without a capture file.
 */
#include "tests/unit/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include "tap/stdio/relay.h"

/* What a relay run did, seen from the client's side and the tap's. */
struct run {
	struct mt_buf out; /* the tap's stdout */
	struct mt_buf err; /* the tap's stderr */
	int rc;            /* relay_run's */
	struct relay_result res;
};

static void run_release(struct run *r)
{
	mt_buf_release(&r->out);
	mt_buf_release(&r->err);
}

static void nonblock(int fd)
{
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/*
 * Run the tap on argv in a child process, db its capture file (NULL: none),
 * max_message the writer's (0: its default): write in (n bytes) to its stdin
 * then close it, read its stdout and stderr to their ends.
 */
static void relay(char *const *argv, const char *db, size_t max_message, const char *in, size_t n,
		  struct run *r)
{
	int pin[2], pout[2], perr[2], pres[2];
	size_t off = 0;
	int status;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	assert_int_equal(pipe(pin), 0);
	assert_int_equal(pipe(pout), 0);
	assert_int_equal(pipe(perr), 0);
	assert_int_equal(pipe(pres), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct relay_opts o;
		struct {
			int rc;
			struct relay_result res;
		} rr;

		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		close(perr[0]);
		close(perr[1]);
		close(pres[0]);
		memset(&o, 0, sizeof(o));
		o.argv = argv;
		o.db_path = db;
		writer_opts_default(&o.wopts);
		if (max_message)
			o.wopts.max_message = max_message;
		o.wopts.label = "'test'";
		o.drain_ms = 5000;
		memset(&rr, 0, sizeof(rr));
		rr.rc = relay_run(&o, &rr.res, NULL);
		if (write(pres[1], &rr, sizeof(rr)) != (ssize_t)sizeof(rr))
			_exit(3);
		exit(0); /* (exit: a sanitizer checks the tap for leaks) */
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	close(pres[1]);
	nonblock(pin[1]);
	nonblock(pout[0]);
	nonblock(perr[0]);
	if (n == 0) {
		close(pin[1]);
		pin[1] = -1;
	}
	while (pout[0] >= 0 || perr[0] >= 0) {
		struct pollfd p[3] = {{pin[1], POLLOUT, 0}, {pout[0], POLLIN, 0}, {perr[0], POLLIN, 0}};
		char buf[65536];

		assert_true(poll(p, 3, 20000) > 0);
		if (pin[1] >= 0 && (p[0].revents & (POLLOUT | POLLERR))) {
			ssize_t k = write(pin[1], in + off, n - off);
			assert_true(k > 0 || errno == EAGAIN);
			if (k > 0)
				off += (size_t)k;
			if (off == n) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
		for (int i = 1; i < 3; i++) {
			int *fd = i == 1 ? &pout[0] : &perr[0];
			if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
				continue;
			ssize_t k = read(*fd, buf, sizeof(buf));
			if (k > 0) {
				mt_buf_append(i == 1 ? &r->out : &r->err, buf, (size_t)k);
			} else if (k == 0) {
				close(*fd);
				*fd = -1;
			}
		}
	}
	if (pin[1] >= 0)
		close(pin[1]);
	{
		struct {
			int rc;
			struct relay_result res;
		} rr;
		assert_int_equal(read(pres[0], &rr, sizeof(rr)), (ssize_t)sizeof(rr));
		r->rc = rr.rc;
		r->res = rr.res;
	}
	close(pres[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	mt_buf_putc(&r->out, '\0');
	r->out.len--;
	mt_buf_putc(&r->err, '\0');
	r->err.len--;
}

/* The rows a query gives, "|" between columns, "\n" after each row. */
static char *q(const char *db, const char *sql)
{
	return unit_rows(db, sql);
}

static void q_is(const char *db, const char *sql, const char *want)
{
	char *got = q(db, sql);

	assert_string_equal(got, want);
	free(got);
}

#define MSGS "select seq, dir, kind, incomplete, size, cast(raw as text) from message order by seq"

#define L1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
#define L2 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n"
#define L3 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"

/* /bin/cat: every byte back as it came, the last line without its newline too. */
static void test_cat(void **state)
{
	static char *const argv[] = {"cat", NULL};
	static const char in[] = L1 L2 L3;
	char *dir = unit_tmpdir();
	char *db = mt_asprintf("%s/r.db", dir);
	struct run r;

	(void)state;
	relay(argv, db, 0, in, strlen(in), &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.res.exit_status, 0);
	assert_int_equal(r.res.exit_signal, 0);
	assert_int_equal(r.res.spawn_errno, 0);
	assert_int_equal(r.out.len, strlen(in));
	assert_memory_equal(r.out.data, in, strlen(in));
	assert_string_equal(r.err.data, "");
	/* Each line stored once each way, in order; the last one incomplete. */
	{
		char *got = q(db, "select dir, kind, incomplete, size, cast(raw as text) from message "
				  "order by dir, seq");
		assert_string_equal(got, "c2s|request|0|41|" L1 "\n"
					 "c2s|notification|0|56|" L2 "\n"
					 "c2s|request|1|46|" L3 "\n"
					 "s2c|request|0|41|" L1 "\n"
					 "s2c|notification|0|56|" L2 "\n"
					 "s2c|request|1|46|" L3 "\n");
		free(got);
	}
	/* c2s before its s2c copy: cat cannot echo a line before reading it. */
	q_is(db,
	     "select count(*) from message a join message b on a.raw = b.raw "
	     "where a.dir = 'c2s' and b.dir = 's2c' and a.seq < b.seq",
	     "3\n");
	q_is(db,
	     "select count(*), transport, command, exit_status, coalesce(exit_signal, '~'), "
	     "pid > 0, msgs_c2s, msgs_s2c, bytes_c2s, bytes_s2c, ended_wall is not null from session",
	     "1|stdio|cat|0|~|1|3|3|143|143|1\n");
	q_is(db, "select count(*) from gap", "0\n");
	q_is(db, "select count(*) from stderr_line", "0\n");
	run_release(&r);
	free(db);
	unit_rmdir(dir);
}

/*
 * The client's stdin ends: the child reads EOF (wc counts what came), the
 * child's output after it is relayed and stored, the status propagated.
 */
static void test_stdin_eof_and_status(void **state)
{
	static char *const argv[] = {"sh", "-c",
				     "n=$(wc -c); echo \"{\\\"n\\\":$n}\"; echo oops >&2; "
				     "printf 'no newline' >&2; exit 3",
				     NULL};
	static const char in[] = L1 "half a li";
	char *dir = unit_tmpdir();
	char *db = mt_asprintf("%s/r.db", dir);
	struct run r;

	(void)state;
	relay(argv, db, 0, in, strlen(in), &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.res.exit_status, 3);
	assert_int_equal(r.res.exit_signal, 0);
	assert_string_equal(r.out.data, "{\"n\":50}\n");
	assert_string_equal(r.err.data, "oops\nno newline");
	/* (stdout and stderr are read by two threads: their rows' order is the race's.) */
	q_is(db, "select dir, kind, incomplete, size, cast(raw as text) from message order by seq",
	     "c2s|request|0|41|" L1 "\n"
	     "c2s|invalid|1|9|half a li\n"
	     "s2c|notjsonrpc|0|9|{\"n\":50}\n\n");
	q_is(db, "select incomplete, cast(raw as text) from stderr_line order by seq",
	     "0|oops\n\n1|no newline\n");
	q_is(db,
	     "select group_concat(seq) from (select seq from message union all "
	     "select seq from stderr_line order by seq)",
	     "1,2,3,4,5\n");
	q_is(db, "select max(seq) from message where dir = 'c2s'", "2\n");
	q_is(db,
	     "select exit_status, coalesce(exit_signal, '~'), coalesce(error, '~'), stderr_lines "
	     "from session",
	     "3|~|~|2\n");
	run_release(&r);
	free(db);
	unit_rmdir(dir);
}

/* A child killed by a signal: the signal said, no exit status. */
static void test_signal(void **state)
{
	static char *const argv[] = {"sh", "-c", "echo '{}'; kill -TERM $$", NULL};
	char *dir = unit_tmpdir();
	char *db = mt_asprintf("%s/r.db", dir);
	struct run r;

	(void)state;
	relay(argv, db, 0, "", 0, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.res.exit_status, -1);
	assert_int_equal(r.res.exit_signal, SIGTERM);
	assert_string_equal(r.out.data, "{}\n");
	q_is(db, MSGS, "1|s2c|notjsonrpc|0|3|{}\n\n");
	q_is(db, "select coalesce(exit_status, '~'), exit_signal from session", "~|15\n");
	run_release(&r);
	free(db);
	unit_rmdir(dir);
}

/*
 * A line of 3 MiB through cat, with a short line after it: relayed whole both
 * ways and stored as one message each way; with --max-message 1 MiB relayed
 * whole just the same, and stored as a gap each way.
 */
static void test_huge_line(void **state)
{
	static char *const argv[] = {"cat", NULL};
	const size_t big = 3u << 20;
	const char pre[] = "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"s\":\"";
	const char post[] = "\"}}\n";
	size_t n = big + strlen(L1);
	char *in = malloc(n);
	char want[256];

	(void)state;
	assert_non_null(in);
	memcpy(in, pre, strlen(pre));
	memset(in + strlen(pre), 'a', big - strlen(pre) - strlen(post));
	memcpy(in + big - strlen(post), post, strlen(post));
	memcpy(in + big, L1, strlen(L1));
	for (int limited = 0; limited < 2; limited++) {
		char *dir = unit_tmpdir();
		char *db = mt_asprintf("%s/r.db", dir);
		struct run r;

		relay(argv, db, limited ? 1u << 20 : 0, in, n, &r);
		assert_int_equal(r.rc, 0);
		assert_int_equal(r.res.exit_status, 0);
		assert_int_equal(r.out.len, n);
		assert_memory_equal(r.out.data, in, n);
		if (!limited) {
			snprintf(want, sizeof(want),
				 "c2s|notification|%zu|1\nc2s|request|41|0\n"
				 "s2c|notification|%zu|1\ns2c|request|41|0\n",
				 big, big);
			/* (The big line's bytes are its input's exactly.) */
			q_is(db,
			     "select dir, kind, size, raw = (select raw from message where seq = 1) "
			     "from message order by dir, seq",
			     want);
			q_is(db, "select count(*) from gap", "0\n");
			q_is(db,
			     "select cast(substr(raw, 1, 46) as text), hex(substr(raw, -5)), "
			     "length(replace(cast(raw as text), 'a', '')) from message where seq = 1",
			     "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"s\":\"a|61227D7D0A|47\n");
		} else {
			q_is(db, "select dir, kind, size from message order by dir, seq",
			     "c2s|request|41\ns2c|request|41\n");
			snprintf(want, sizeof(want), "c2s|1|%zu\ns2c|1|%zu\n", big, big);
			q_is(db, "select dir, messages, bytes from gap order by dir", want);
		}
		run_release(&r);
		free(db);
		unit_rmdir(dir);
	}
	free(in);
}

/*
 * A line the child writes in three pieces, apart in time (three reads of
 * the tap): relayed as it comes, stored as one message once its newline is
 * in; then a line in one piece.
 */
static void test_line_in_pieces(void **state)
{
	static char *const argv[] = {"sh", "-c",
				     "printf '{\"jsonrpc\":'; sleep 0.2; "
				     "printf '\"2.0\",\"method\"'; sleep 0.2; printf ':\"x\"}\\n'; "
				     "printf '{}\\n'",
				     NULL};
	char *dir = unit_tmpdir();
	char *db = mt_asprintf("%s/r.db", dir);
	struct run r;

	(void)state;
	relay(argv, db, 0, "", 0, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.res.exit_status, 0);
	assert_string_equal(r.out.data, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n{}\n");
	q_is(db, MSGS,
	     "1|s2c|notification|0|31|{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"
	     "2|s2c|notjsonrpc|0|3|{}\n\n");
	run_release(&r);
	free(db);
	unit_rmdir(dir);
}

/* A command that cannot run: 127, the errno, the session's error; nothing relayed. */
static void test_cannot_run(void **state)
{
	static char *const argv[] = {"mcptap-no-such-command", "--x", NULL};
	const char *pre = getenv("LD_PRELOAD");
	char *dir, *db;
	struct run r;

	(void)state;
	/* Under valgrind posix_spawn's child is a fork: its exec failure comes back as exit 127. */
	if (pre && strstr(pre, "vgpreload"))
		skip();
	dir = unit_tmpdir();
	db = mt_asprintf("%s/r.db", dir);
	relay(argv, db, 0, L1, strlen(L1), &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.res.spawn_errno, ENOENT);
	assert_int_equal(r.res.exit_status, 127);
	assert_int_equal(r.res.exit_signal, 0);
	assert_string_equal(r.out.data, "");
	q_is(db, "select command, exit_status, error from session",
	     "mcptap-no-such-command --x|127|cannot run 'mcptap-no-such-command': "
	     "No such file or directory\n");
	q_is(db, "select count(*) from message", "0\n");
	run_release(&r);
	free(db);
	unit_rmdir(dir);
}

/* Without a capture file the bytes go through the same; no file is made. */
static void test_no_file(void **state)
{
	static char *const argv[] = {"cat", NULL};
	static const char in[] = L1 L3;
	struct run r;

	(void)state;
	relay(argv, NULL, 0, in, strlen(in), &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.res.exit_status, 0);
	assert_string_equal(r.out.data, in);
	run_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cat),
		cmocka_unit_test(test_stdin_eof_and_status),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_huge_line),
		cmocka_unit_test(test_line_in_pieces),
		cmocka_unit_test(test_cannot_run),
		cmocka_unit_test(test_no_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
