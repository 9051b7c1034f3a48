/*
 * lineio.c - newline-delimited channel over two descriptors (see lineio.h).
 */
#include "tap/stdio/lineio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
#define AHEAD_MAX ((size_t)4 << 20) /* input lio_wait_read reads ahead, at most */

/* What lio_unread can ask about fd (see enum lio_outq). */
static int outq_kind(int fd)
{
	struct stat st;
	int v = 0, domain = 0, type = 0;
	socklen_t len = sizeof(domain);

	if (fd < 0 || fstat(fd, &st) < 0)
		return LIO_OUTQ_NONE;
	if (S_ISFIFO(st.st_mode))
		return ioctl(fd, FIONREAD, &v) == 0 ? LIO_OUTQ_PIPE : LIO_OUTQ_NONE;
	if (!S_ISSOCK(st.st_mode) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    domain != AF_UNIX)
		return LIO_OUTQ_NONE;
	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
		return LIO_OUTQ_NONE;
	return ioctl(fd, SIOCOUTQ, &v) == 0 ? LIO_OUTQ_SOCKET : LIO_OUTQ_NONE;
}

void lio_init(struct lio *l, int rfd, int wfd, size_t max_line)
{
	memset(l, 0, sizeof(*l));
	l->rfd = rfd;
	l->wfd = wfd;
	l->max_line = max_line ? max_line : (size_t)256 << 20;
	l->outq = outq_kind(wfd);
}

void lio_release(struct lio *l)
{
	free(l->buf);
	mt_buf_release(&l->out);
	mt_buf_release(&l->ahead);
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
	if (!lio_pending(l)) {
		mt_buf_reset(&l->out);
		l->out_off = 0;
		return l->write_failed ? -1 : 0;
	}
	if (l->write_failed) {
		/* dropped */
	} else if (!l->nonblock) {
		if (mt_write_all(l->wfd, l->out.data + l->out_off, l->out.len - l->out_off) < 0)
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

/* Move the partial line to the front of buf and make room for need more bytes. */
static void make_room(struct lio *l, size_t need)
{
	if (l->start) {
		memmove(l->buf, l->buf + l->start, l->end - l->start);
		l->end -= l->start;
		l->start = 0;
	}
	if (l->cap - l->end < need) {
		size_t cap = l->cap ? l->cap : 2 * READ_CHUNK;
		while (cap - l->end < need)
			cap *= 2;
		l->cap = cap;
		l->buf = mt_realloc(l->buf, l->cap);
	}
}

int lio_next(struct lio *l, int timeout_ms, const char **line, size_t *n)
{
	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;

	for (;;) {
		if (take_line(l, line, n))
			return LIO_LINE;
		if (l->ahead.len || l->ahead_eof) {
			/* What lio_wait_read read ahead comes after what buf holds. */
			make_room(l, l->ahead.len);
			if (l->ahead.len)
				memcpy(l->buf + l->end, l->ahead.data, l->ahead.len);
			l->end += l->ahead.len;
			l->eof |= l->ahead_eof;
			mt_buf_reset(&l->ahead);
			l->ahead_eof = 0;
			continue;
		}
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
		make_room(l, READ_CHUNK);
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

long lio_unread(const struct lio *l)
{
	int n = 0;

	switch (l->outq) {
	case LIO_OUTQ_PIPE: return ioctl(l->wfd, FIONREAD, &n) < 0 ? -1 : n;
	case LIO_OUTQ_SOCKET: return ioctl(l->wfd, SIOCOUTQ, &n) < 0 ? -1 : n;
	default: return -1;
	}
}

/* Read once what the peer sent (rfd is readable) into ahead, for lio_next. */
static void read_ahead(struct lio *l)
{
	char tmp[16384];
	ssize_t got = read(l->rfd, tmp, sizeof(tmp));

	if (got > 0)
		mt_buf_append(&l->ahead, tmp, (size_t)got);
	else if (got == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
		l->ahead_eof = 1; /* lio_next's own read will say which */
}

/* Write once, no more than a pipe takes without blocking when poll said POLLOUT. */
static void write_some(struct lio *l)
{
	size_t n = lio_pending(l);
	ssize_t w = write(l->wfd, l->out.data + l->out_off, n < PIPE_BUF ? n : PIPE_BUF);

	if (w > 0)
		l->out_off += (size_t)w;
	else if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
		l->write_failed = 1;
	if (!lio_pending(l) || l->write_failed) {
		mt_buf_reset(&l->out);
		l->out_off = 0;
	}
}

int lio_wait_read(struct lio *l, int timeout_ms, const volatile sig_atomic_t *stop)
{
	int64_t deadline = now_ms() + timeout_ms;
	long pause_ns = 20000;

	if (l->outq == LIO_OUTQ_NONE)
		return lio_flush(l) < 0 ? -1 : 0;
	for (;;) {
		int pending = lio_pending(l) > 0;
		int reading = !l->eof && !l->ahead_eof && l->ahead.len < AHEAD_MAX;
		struct pollfd pfd[2] = {{l->wfd, pending ? POLLOUT : 0, 0}, {l->rfd, POLLIN, 0}};
		struct timespec ts = {0, 0};
		int64_t left;

		if ((stop && *stop) || l->write_failed)
			return -1;
		if (!pending && lio_unread(l) <= 0)
			return 0;
		left = deadline - now_ms();
		if (left <= 0)
			return 1;
		/* Room to write wakes us; reading the output does not, so look again soon
		 * (20 µs, doubling up to 1 ms: a peer that reads at once costs little). */
		ts.tv_nsec = pending ? 10000000 : pause_ns;
		if (ts.tv_nsec > left * 1000000)
			ts.tv_nsec = (long)left * 1000000;
		if (!pending && pause_ns < 1000000)
			pause_ns *= 2;
		if (ppoll(pfd, reading ? 2 : 1, &ts, NULL) <= 0)
			continue;
		if (pfd[0].revents & (POLLERR | POLLHUP)) {
			l->write_failed = 1; /* the read end is closed */
			return -1;
		}
		if (pfd[0].revents & POLLOUT)
			write_some(l);
		if (reading && pfd[1].revents)
			read_ahead(l);
	}
}
