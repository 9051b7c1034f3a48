/*
 * lineio.c - newline-delimited channel over two descriptors (see lineio.h).
 */
#include "tap/lineio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)

void lio_init(struct lio *l, int rfd, int wfd, size_t max_line)
{
	memset(l, 0, sizeof(*l));
	l->rfd = rfd;
	l->wfd = wfd;
	l->max_line = max_line ? max_line : (size_t)256 << 20;
}

void lio_release(struct lio *l)
{
	free(l->buf);
	mt_buf_release(&l->out);
	l->buf = NULL;
}

int lio_nonblock(struct lio *l)
{
	int fl = fcntl(l->wfd, F_GETFL);

	if (fl < 0 || fcntl(l->wfd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	l->nonblock = 1;
	return 0;
}

size_t lio_pending(const struct lio *l)
{
	return l->out.len - l->out_off;
}

int lio_flush(struct lio *l)
{
	if (!l->out.len)
		return l->write_failed ? -1 : 0;
	if (l->write_failed) {
		/* dropped */
	} else if (!l->nonblock) {
		if (mt_write_all(l->wfd, l->out.data, l->out.len) < 0)
			l->write_failed = 1;
	} else {
		while (l->out_off < l->out.len) {
			ssize_t w = write(l->wfd, l->out.data + l->out_off, l->out.len - l->out_off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0; /* the rest waits for room */
			if (w < 0) {
				l->write_failed = 1;
				break;
			}
			l->out_off += (size_t)w;
		}
	}
	mt_buf_reset(&l->out);
	l->out_off = 0;
	return l->write_failed ? -1 : 0;
}

int lio_drain(struct lio *l, int timeout_ms)
{
	int64_t deadline = mt_mono_ns() / 1000000 + timeout_ms;

	while (lio_flush(l) == 0 && lio_pending(l)) {
		struct pollfd pfd = {l->wfd, POLLOUT, 0};
		int64_t left = deadline - mt_mono_ns() / 1000000;
		if (left <= 0)
			return -1;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -1;
	}
	return l->write_failed ? -1 : 0;
}

void lio_put(struct lio *l, const char *p, size_t n)
{
	if (l->write_failed)
		return;
	mt_buf_append(&l->out, p, n);
	/* Keep the queue small: a large burst goes out as it grows. */
	if (l->out.len >= READ_CHUNK)
		(void)lio_flush(l);
}

/* A complete line in the buffer: returns it, else 0. */
static int take_line(struct lio *l, const char **line, size_t *n)
{
	char *p, *nl;
	size_t len;

	if (l->end == l->start)
		return 0;
	p = l->buf + l->start;
	nl = memchr(p, '\n', l->end - l->start);
	if (!nl)
		return 0;
	len = (size_t)(nl - p);
	l->start += len + 1;
	if (len && p[len - 1] == '\r')
		len--;
	*line = p;
	*n = len;
	return 1;
}

static int64_t now_ms(void)
{
	return mt_mono_ns() / 1000000;
}

int lio_next(struct lio *l, int timeout_ms, const char **line, size_t *n)
{
	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;

	for (;;) {
		if (take_line(l, line, n))
			return LIO_LINE;
		if (l->eof) {
			if (l->end > l->start) {
				/* The last line, without its newline. */
				*line = l->buf + l->start;
				*n = l->end - l->start;
				l->start = l->end;
				return LIO_LINE;
			}
			return LIO_EOF;
		}
		if (l->end - l->start > l->max_line) {
			errno = EMSGSIZE;
			return LIO_ERROR;
		}
		/* Make room: move the partial line to the front, grow when full. */
		if (l->start) {
			memmove(l->buf, l->buf + l->start, l->end - l->start);
			l->end -= l->start;
			l->start = 0;
		}
		if (l->cap - l->end < READ_CHUNK) {
			l->cap = l->cap ? l->cap * 2 : 2 * READ_CHUNK;
			l->buf = mt_realloc(l->buf, l->cap);
		}
		(void)lio_flush(l);
		if (timeout_ms >= 0 || lio_pending(l)) {
			/* Wait for input, and for room for what is still queued. */
			struct pollfd pfd[2] = {{l->rfd, POLLIN, 0}, {l->wfd, POLLOUT, 0}};
			int64_t left = deadline - now_ms();
			if (left < 0)
				left = 0;
			int r = poll(pfd, lio_pending(l) ? 2 : 1, timeout_ms >= 0 ? (int)left : -1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return LIO_ERROR;
			if (r == 0)
				return LIO_TIMEOUT;
			if (!pfd[0].revents)
				continue; /* only room to write: flush, then wait again */
		}
		ssize_t got = read(l->rfd, l->buf + l->end, l->cap - l->end);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return LIO_ERROR;
		if (got == 0)
			l->eof = 1;
		l->end += (size_t)got;
	}
}
