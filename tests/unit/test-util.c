/*
 * test-util.c - the small parsers of schema/util.h that the commands' options
 * go through: listening addresses, sizes and integers; mt_open_private,
 * which every file mcptap makes is opened with; the memory budget's counter.
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

int main(void)
{
	const struct CMUnitTest util[] = {
		cmocka_unit_test(test_split_listen),
		cmocka_unit_test(test_split_listen_long_host),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_int64),
		cmocka_unit_test(test_open_private),
		cmocka_unit_test(test_mem),
	};

	return cmocka_run_group_tests(util, NULL, NULL);
}
