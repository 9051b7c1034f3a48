/*
 * test-util.c - the small parsers of schema/util.h that the commands' options
 * go through: listening addresses, sizes, integers and durations; mt_open_private,
 * which every file mcptap makes is opened with; the memory budget's counter;
 * the voice modules below the command layer speak through.
 */
#include "tests/unit/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/util.h"

static void listen_ok(const char *s, const char *host, int port)
{
	char h[64] = "unset";
	int p = -1;

	assert_int_equal(mt_split_listen(s, h, sizeof(h), &p), 0);
	assert_string_equal(h, host);
	assert_int_equal(p, port);
}

static void listen_bad(const char *s)
{
	char h[64];
	int p = -7;

	assert_int_equal(mt_split_listen(s, h, sizeof(h), &p), -1);
	assert_int_equal(p, -7);
}

static void test_split_listen(void **state)
{
	(void)state;
	listen_ok("127.0.0.1:8808", "127.0.0.1", 8808);
	listen_ok("0.0.0.0:0", "0.0.0.0", 0);
	listen_ok("localhost:65535", "localhost", 65535);
	listen_ok("[::1]:9000", "::1", 9000);
	listen_ok("[fe80::1%lo]:80", "fe80::1%lo", 80);
	listen_ok("8808", "127.0.0.1", 8808);
	listen_ok(":8808", "127.0.0.1", 8808);
	listen_ok("0", "127.0.0.1", 0);

	listen_bad("");
	listen_bad("host:");
	listen_bad("host:65536");
	listen_bad("host:99999999999999999999");
	listen_bad("host:-1");
	listen_bad("host:+80");
	listen_bad("host: 80");
	listen_bad("host:80x");
	listen_bad("[::1]");
	listen_bad("[::1]80");
	listen_bad("[]:80");
	listen_bad("[::1:80");
	listen_bad("port");
}

static void test_split_listen_long_host(void **state)
{
	char h[8];
	int p = -7;

	(void)state;
	assert_int_equal(mt_split_listen("a-very-long-host-name:80", h, sizeof(h), &p), -1);
	assert_int_equal(p, -7);
	assert_int_equal(mt_split_listen("short:80", h, sizeof(h), &p), 0);
	assert_string_equal(h, "short");
	assert_int_equal(p, 80);
}

static void test_parse_size(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(mt_parse_size("1000", &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(mt_parse_size("512k", &v), 0);
	assert_int_equal(v, 512u * 1024);
	assert_int_equal(mt_parse_size("64M", &v), 0);
	assert_int_equal(v, 64u * 1024 * 1024);
	assert_int_equal(mt_parse_size("1G", &v), 0);
	assert_int_equal(v, 1024u * 1024 * 1024);
	assert_int_equal(mt_parse_size("", &v), -1);
	assert_int_equal(mt_parse_size("12Q", &v), -1);
	assert_int_equal(mt_parse_size("-1", &v), -1);
	assert_int_equal(mt_parse_size("99999999999999999999G", &v), -1);
}

static void test_parse_int64(void **state)
{
	int64_t v = 0;

	(void)state;
	assert_int_equal(mt_parse_int64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(mt_parse_int64("9223372036854775807", &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(mt_parse_int64("9223372036854775808", &v), -1);
	assert_int_equal(mt_parse_int64("-1", &v), -1);
	assert_int_equal(mt_parse_int64("+1", &v), -1);
	assert_int_equal(mt_parse_int64(" 1", &v), -1);
	assert_int_equal(mt_parse_int64("1x", &v), -1);
	assert_int_equal(mt_parse_int64("", &v), -1);
}

static void duration_ok(const char *s, int64_t unit_ns, int64_t want)
{
	int64_t ns = -7;

	if (mt_parse_duration(s, unit_ns, &ns) != 0 || ns != want)
		fail_msg("'%s' (bare unit %lld ns): %lld ns, not %lld", s, (long long)unit_ns, (long long)ns,
			 (long long)want);
}

static void duration_bad(const char *s, int64_t unit_ns)
{
	int64_t ns = -7;

	if (mt_parse_duration(s, unit_ns, &ns) != -1 || ns != -7)
		fail_msg("'%s' was taken (%lld ns)", s, (long long)ns);
}

/* Every unit, a bare number in the option's own, fractions rounded exactly. */
static void test_parse_duration(void **state)
{
	(void)state;
	duration_ok("250", MT_MS, 250 * MT_MS);
	duration_ok("2", MT_SEC, 2 * MT_SEC);
	duration_ok("0", MT_MS, 0);
	duration_ok("7ns", MT_MS, 7);
	duration_ok("7us", MT_MS, 7000);
	duration_ok("7\xc2\xb5s", MT_SEC, 7000);
	duration_ok("500ms", MT_SEC, 500 * MT_MS);
	duration_ok("2s", MT_MS, 2 * MT_SEC);
	duration_ok("1m", MT_MS, 60 * MT_SEC);
	duration_ok("2h", MT_MS, 7200 * MT_SEC);
	duration_ok("007ms", 1, 7 * MT_MS);
	duration_ok("1.5s", MT_MS, 1500 * MT_MS);
	duration_ok("1.5", MT_SEC, 1500 * MT_MS);
	duration_ok("0.25", MT_MS, 250 * MT_US);
	duration_ok("0.001ms", 1, 1000);
	duration_ok("1.0000000000001h", 1, MT_HOUR);     /* 0.36 ns: down */
	duration_ok("1.0000000000002h", 1, MT_HOUR + 1); /* 0.72 ns: up */
	duration_ok("0.5ns", 1, 1);                      /* a half: up */
	duration_ok("0.4999999999999999999999ns", 1, 0);
	duration_ok("0.1h", 1, 360 * MT_SEC);
	duration_ok("0.333333333333333333333333333333h", 1, 1200 * MT_SEC);
	duration_ok("9223372036854775807ns", MT_MS, INT64_MAX);
	duration_ok("9223372036.854775807s", 1, INT64_MAX);
	duration_ok("2562047h", 1, 2562047 * MT_HOUR);

	duration_bad("", MT_MS);
	duration_bad("-1", MT_MS);
	duration_bad("+1", MT_MS);
	duration_bad(" 1", MT_MS);
	duration_bad("1 s", MT_MS);
	duration_bad("5x", MT_MS);
	duration_bad("1.5.2s", MT_MS);
	duration_bad("1.", MT_MS);
	duration_bad(".5s", MT_MS);
	duration_bad("1e3", MT_MS);
	duration_bad("1S", MT_MS);
	duration_bad("1sec", MT_MS);
	duration_bad("ms", MT_MS);
	duration_bad("1ms ", MT_MS);
	duration_bad("0x10", MT_MS);
	duration_bad("99999999999h", MT_MS);
	duration_bad("2562048h", MT_MS);
	duration_bad("9223372036854775808ns", MT_MS);
	duration_bad("9223372036.8547758075s", MT_MS);
	duration_bad("99999999999999999999", 1);
	duration_bad("9223372036854775807", MT_MS);
	duration_bad("1", 0);
	duration_bad(NULL, MT_MS);
}

static mode_t mode_of(const char *path)
{
	struct stat sb;

	assert_int_equal(lstat(path, &sb), 0);
	return sb.st_mode & 07777;
}

/* 0600 whatever the umask, and whatever mode a file left there had; no symlink followed. */
static void test_open_private(void **state)
{
	char *dir = unit_tmpdir();
	char *a = mt_asprintf("%s/a", dir), *b = mt_asprintf("%s/b", dir), *l = mt_asprintf("%s/l", dir);
	mode_t old = umask(0);
	int fd;

	(void)state;
	fd = mt_open_private(a, O_EXCL);
	assert_true(fd >= 0);
	assert_int_equal(mode_of(a), 0600);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	/* O_EXCL: an existing file is refused, and left as it is. */
	assert_int_equal(chmod(a, 0644), 0);
	assert_int_equal(mt_open_private(a, O_EXCL), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(mode_of(a), 0644);
	/* O_TRUNC over a file of mode 0666: emptied, and 0600. */
	fd = open(b, O_WRONLY | O_CREAT, 0666);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "old", 3), 3);
	close(fd);
	assert_int_equal(mode_of(b), 0666);
	fd = mt_open_private(b, O_TRUNC);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(b), 0600);
	struct stat sb;
	assert_int_equal(stat(b, &sb), 0);
	assert_int_equal(sb.st_size, 0);
	/* A symbolic link is not followed: its target keeps its mode and bytes. */
	assert_int_equal(chmod(a, 0644), 0);
	assert_int_equal(symlink(a, l), 0);
	assert_int_equal(mt_open_private(l, O_TRUNC), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(mode_of(a), 0644);
	assert_int_equal(stat(a, &sb), 0);
	assert_int_equal(sb.st_size, 1);
	umask(old);
	free(a);
	free(b);
	free(l);
	unit_rmdir(dir);
}

/* The budget's counter: sizes as allocated, the peak, NULL counting nothing. */
static void test_mem(void **state)
{
	struct mt_mem m;
	struct mt_buf b = MT_BUF_INIT;

	(void)state;
	memset(&m, 0, sizeof(m));
	mt_mem_size(&m, 0, 100);
	assert_int_equal(m.used, 100 + MT_MEM_CHUNK);
	mt_mem_size(&m, 100, 300);
	assert_int_equal(m.used, 300 + MT_MEM_CHUNK);
	mt_mem_add(&m, 64);
	assert_int_equal(m.used, 364 + MT_MEM_CHUNK);
	mt_mem_sub(&m, 64);
	mt_mem_size(&m, 300, 0);
	assert_int_equal(m.used, 0);
	assert_int_equal(m.peak, 364 + MT_MEM_CHUNK);
	mt_mem_add(NULL, 5);
	mt_mem_size(NULL, 0, 5);
	assert_int_equal(mt_buf_bytes(&b), 0);
	mt_buf_append(&b, "x", 1);
	assert_int_equal(mt_buf_bytes(&b), b.cap + MT_MEM_CHUNK);
	mt_buf_release(&b);
	assert_int_equal(mt_buf_bytes(&b), 0);
}

static void heard(void *ctx, const char *text)
{
	struct mt_buf *b = ctx;

	mt_buf_append(b, text, strlen(text));
	mt_buf_append(b, "|", 1);
}

static void test_voice(void **state)
{
	struct mt_buf b = MT_BUF_INIT;
	struct mt_voice v = {heard, &b};
	struct mt_voice mute = {NULL, &b};
	char big[3000];

	(void)state;
	mt_voice_error(&v, "cannot %s", "listen");
	mt_voice_warn(&v, "%d left", 3);
	mt_voice_warn(&mute, "unheard");
	mt_voice_error(NULL, "unheard");
	mt_voice_say(&v, "\rmcptap: 5%\033[K");
	mt_voice_say(&mute, "unheard");
	mt_voice_say(NULL, "unheard");
	assert_string_equal(b.data, "mcptap: cannot listen\n|mcptap: warning: 3 left\n|\rmcptap: 5%\033[K|");
	/* A message too long for a line is cut, and still ends the line. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	b.len = 0;
	mt_voice_warn(&v, "%s", big);
	assert_int_equal(b.len, 2048);
	assert_memory_equal(b.data, "mcptap: warning: xxx", 20);
	assert_memory_equal(b.data + 2045, "x\n|", 3);
	mt_buf_release(&b);
}

static void test_tmpfile(void **state)
{
	char *dir = unit_tmpdir(), *gone = mt_asprintf("%s/gone", dir), buf[8] = "";
	struct mt_err err = {"", 0};
	FILE *f;

	(void)state;
	setenv("TMPDIR", dir, 1);
	f = mt_tmpfile(&err);
	assert_non_null(f);
	assert_int_equal(fwrite("abc", 1, 3, f), 3);
	rewind(f);
	assert_int_equal(fread(buf, 1, sizeof(buf), f), 3);
	assert_string_equal(buf, "abc");
	assert_int_equal(rmdir(dir), 0); /* (empty: already unlinked) */
	fclose(f);
	setenv("TMPDIR", gone, 1);
	assert_null(mt_tmpfile(&err));
	assert_non_null(strstr(err.msg, "cannot make a temporary file in '"));
	assert_non_null(strstr(err.msg, "/gone': No such file or directory"));
	unsetenv("TMPDIR");
	free(gone);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest util[] = {
		cmocka_unit_test(test_split_listen),
		cmocka_unit_test(test_split_listen_long_host),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_int64),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_open_private),
		cmocka_unit_test(test_mem),
		cmocka_unit_test(test_voice),
		cmocka_unit_test(test_tmpfile),
	};

	return cmocka_run_group_tests(util, NULL, NULL);
}
