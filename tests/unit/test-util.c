/*
 * test-util.c - the small parsers of schema/util.h that the commands' options
 * go through: listening addresses, sizes and integers.
 */
#include "tests/unit/unit.h"

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

int main(void)
{
	const struct CMUnitTest util[] = {
		cmocka_unit_test(test_split_listen),
		cmocka_unit_test(test_split_listen_long_host),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_int64),
	};

	return cmocka_run_group_tests(util, NULL, NULL);
}
