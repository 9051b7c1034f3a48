/*
 * fuzz-lineio.c - the mock's stdio transport (tap/stdio/lineio.h): the input goes
 * through a pipe in pieces of input-chosen sizes; the lines read back, with
 * their newlines (and a "\r" before one) restored, must be the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap/stdio/lineio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd[2];
	struct lio l;
	struct mt_buf got = MT_BUF_INIT;
	const char *line;
	size_t n;
	int r;

	if (size > 60000 || pipe(fd))
		return 0; /* the whole input must fit in the pipe */
	if (size && write(fd[1], data, size) != (ssize_t)size)
		abort();
	close(fd[1]);
	lio_init(&l, fd[0], -1, 1 << 20);
	while ((r = lio_next(&l, 1000, &line, &n)) == LIO_LINE) {
		mt_buf_append(&got, line, n);
		size_t at = got.len;
		/* Put back what lio took off: "\r\n", "\n", or nothing at the end. */
		if (at < size && data[at] == '\r' && at + 1 < size && data[at + 1] == '\n')
			mt_buf_append(&got, "\r\n", 2);
		else if (at < size && data[at] == '\n')
			mt_buf_putc(&got, '\n');
	}
	if (r != LIO_EOF)
		abort();
	if (got.len != size || (size && memcmp(got.data, data, size)))
		abort();
	lio_release(&l);
	mt_buf_release(&got);
	close(fd[0]);
	return 0;
}
