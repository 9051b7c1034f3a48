/*
 * tests/bench/load-client.c - a cheap MCP load generator, for benchmarks.
 *
 * Usage: load-client ping|flood N -- CMD ARGS...
 *
 * Spawns CMD ARGS (no shell) with pipes on its stdin and stdout (stderr inherited),
 * does the initialize handshake and notifications/initialized, then:
 *   ping   N sequential pings, each round trip timed with CLOCK_MONOTONIC; prints
 *          "ping n=N p50_us=X p99_us=Y mean_us=Z"
 *   flood  N pings sent as fast as the pipe takes them by a writer thread while the
 *          main thread reads the answers; prints "flood n=N secs=S msgs_per_s=R" where
 *          R counts the messages of both directions (2N / S)
 * Then closes the child's stdin, drains its output and waits for it.
 *
 * The hot path decodes nothing: answers are split into lines and a scanner finds the
 * top-level "id" (and "result"). Every request id 1..N must be answered exactly once
 * with a result. Messages from the server that carry a "method" are ignored.
 *
 * Exit status: 0 on success; 1 on a wrong, missing or late answer (no progress for
 * IDLE_SECS seconds), an I/O error or a child that did not exit 0; 2 on a usage error.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/jscan.h"
#include "tests/peers/spawn.h"

#define PROG "load-client"
#define READ_SIZE ((size_t)256 << 10)  /* input buffer to start with, and read size */
#define MAX_LINE ((size_t)64 << 20)    /* longest answer line accepted */
#define WRITE_CHUNK ((size_t)64 << 10) /* the flood writer's batch */
#define IDLE_SECS 30                   /* give up after this long without progress */
#define MAX_N 100000000L

#include "tests/bench/clock.h"

/* Buffered reader of lines from the child's stdout. */
struct reader {
	int fd;         /* borrowed */
	char *buf;      /* owned; unread bytes are buf[start..end) */
	size_t cap;     /* size of buf */
	size_t start;   /* first unread byte */
	size_t end;     /* one past the last byte read */
	size_t scanned; /* bytes after start known to hold no '\n' */
};

/* What the flood writer thread needs. */
struct flood_writer {
	int fd;    /* borrowed write end of the child's stdin */
	long n;    /* requests to send, ids 1..n */
	int error; /* errno of a failed write, or 0 */
};

/* Writes all of buf to fd. Returns 0, or -1 with errno set. */
static int write_all(int fd, const char *buf, size_t len)
{
	int rc = 0;
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -1;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	return rc;
}

/* Writes v in decimal at p; returns the number of bytes written (at most 20). */
static size_t put_u64(char *p, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* Writes the ping request with id k at p; returns its length (at most 60). */
static size_t put_ping(char *p, uint64_t k)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char tail[] = ",\"method\":\"ping\"}\n";
	size_t n = 0;

	memcpy(p, head, sizeof head - 1);
	n += sizeof head - 1;
	n += put_u64(p + n, k);
	memcpy(p + n, tail, sizeof tail - 1);
	n += sizeof tail - 1;
	return n;
}

/* Parses an id token that is a plain non-negative decimal. Returns 0 with *v, or -1. */
static int parse_id(const char *p, size_t len, uint64_t *v)
{
	int rc = -1;
	size_t i;
	uint64_t x = 0;

	if (len == 0 || len > 18)
		goto out;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			goto out;
		x = x * 10 + (uint64_t)(p[i] - '0');
	}
	*v = x;
	rc = 0;
out:
	return rc;
}

/* Prepares r to read fd (borrowed). Returns 0, or -1 when out of memory. */
static int reader_init(struct reader *r, int fd)
{
	int rc = -1;

	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->cap = READ_SIZE;
	r->buf = malloc(r->cap);
	if (r->buf != NULL)
		rc = 0;
	return rc;
}

/* Returns the next line of r in *line (borrowed, valid until the next call) and its
 * length in *len, without the newline. Returns 1, 0 at EOF (a partial last line is
 * dropped), or -1 on an error (reported). */
static int reader_next(struct reader *r, const char **line, size_t *len)
{
	int rc = -1;
	char *nl, *nbuf;
	ssize_t n;

	for (;;) {
		nl = memchr(r->buf + r->start + r->scanned, '\n', r->end - r->start - r->scanned);
		if (nl != NULL) {
			*line = r->buf + r->start;
			*len = (size_t)(nl - *line);
			r->start = (size_t)(nl - r->buf) + 1;
			r->scanned = 0;
			rc = 1;
			break;
		}
		r->scanned = r->end - r->start;
		if (r->start > 0) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->end == r->cap) {
			nbuf = r->cap * 2 <= MAX_LINE ? realloc(r->buf, r->cap * 2) : NULL;
			if (nbuf == NULL) {
				fprintf(stderr, "%s: an answer line is too long\n", PROG);
				break;
			}
			r->buf = nbuf;
			r->cap *= 2;
		}
		n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: cannot read from the server: %s\n", PROG, strerror(errno));
			break;
		}
		if (n == 0) {
			rc = 0;
			break;
		}
		r->end += (size_t)n;
	}
	return rc;
}

/* Reads until the answer to a request arrives; messages with a method are skipped.
 * Returns 0 with its id in *id (0 for a non-numeric id), or -1 after reporting EOF,
 * an error or an error answer. */
static int read_answer(struct reader *r, uint64_t *id)
{
	int rc = -1, st;
	const char *line;
	size_t len;
	struct top t;

	for (;;) {
		st = reader_next(r, &line, &len);
		if (st <= 0) {
			if (st == 0)
				fprintf(stderr, "%s: the server's output ended early\n", PROG);
			break;
		}
		if (scan_top(line, len, &t) != 0) {
			fprintf(stderr, "%s: the server sent a line that is not a JSON object\n", PROG);
			break;
		}
		if (t.method != NULL)
			continue;
		if (t.id == NULL || !t.has_result) {
			fprintf(stderr, "%s: unexpected answer: %.200s\n", PROG, line);
			break;
		}
		if (parse_id(t.id, t.id_len, id) != 0)
			*id = 0;
		rc = 0;
		break;
	}
	return rc;
}

/* Sends initialize (id 0) and notifications/initialized once it is answered. Returns
 * 0 or -1 (reported). */
static int handshake(int to_child, struct reader *r)
{
	static const char init[] =
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"mcptap-load-client\",\"version\":\"1.0.0\"}}}\n";
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
	int rc = -1;
	uint64_t id = 1;

	if (write_all(to_child, init, sizeof init - 1) != 0) {
		fprintf(stderr, "%s: cannot write to the server: %s\n", PROG, strerror(errno));
		goto out;
	}
	if (read_answer(r, &id) != 0)
		goto out;
	if (id != 0) {
		fprintf(stderr, "%s: the initialize answer has the wrong id\n", PROG);
		goto out;
	}
	if (write_all(to_child, initialized, sizeof initialized - 1) != 0) {
		fprintf(stderr, "%s: cannot write to the server: %s\n", PROG, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	return rc;
}

/* Orders two uint64_t for qsort. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Returns the nearest-rank percentile p (0..100) of the n sorted values. */
static uint64_t percentile(const uint64_t *sorted, long n, double p)
{
	long rank = (long)((p / 100.0) * (double)n + 0.999999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Mode ping: n sequential round trips. Returns 0 or -1 (reported). */
static int run_ping(int to_child, struct reader *r, long n)
{
	int rc = -1;
	uint64_t *rtt, t0, id, sum = 0;
	long k;
	char line[64];
	size_t len;

	rtt = malloc((size_t)n * sizeof *rtt);
	if (rtt == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	for (k = 1; k <= n; k++) {
		if ((k & 1023) == 0)
			alarm(IDLE_SECS);
		len = put_ping(line, (uint64_t)k);
		t0 = now_ns();
		if (write_all(to_child, line, len) != 0) {
			fprintf(stderr, "%s: cannot write to the server: %s\n", PROG, strerror(errno));
			goto out;
		}
		if (read_answer(r, &id) != 0)
			goto out;
		rtt[k - 1] = now_ns() - t0;
		if (id != (uint64_t)k) {
			fprintf(stderr, "%s: expected the answer to id %ld, got id %llu\n", PROG, k,
				(unsigned long long)id);
			goto out;
		}
		sum += rtt[k - 1];
	}
	qsort(rtt, (size_t)n, sizeof *rtt, cmp_u64);
	printf("ping n=%ld p50_us=%.1f p99_us=%.1f mean_us=%.1f\n", n,
	       (double)percentile(rtt, n, 50) / 1000.0, (double)percentile(rtt, n, 99) / 1000.0,
	       (double)sum / (double)n / 1000.0);
	rc = 0;
out:
	free(rtt);
	return rc;
}

/* The flood writer thread: sends pings 1..n in WRITE_CHUNK batches. */
static void *flood_write(void *arg)
{
	struct flood_writer *w = arg;
	char *buf;
	size_t len = 0;
	long k;

	buf = malloc(WRITE_CHUNK);
	if (buf == NULL) {
		w->error = ENOMEM;
		goto out;
	}
	for (k = 1; k <= w->n; k++) {
		len += put_ping(buf + len, (uint64_t)k);
		if (len + 64 > WRITE_CHUNK || k == w->n) {
			if (write_all(w->fd, buf, len) != 0) {
				w->error = errno;
				break;
			}
			len = 0;
		}
	}
out:
	free(buf);
	return NULL;
}

/* Mode flood: n pipelined pings. Returns 0 or -1 (reported). */
static int run_flood(int to_child, struct reader *r, long n)
{
	int rc = -1, started = 0, err;
	unsigned char *seen;
	uint64_t t0, t1, id;
	long got;
	pthread_t th;
	struct flood_writer w = {to_child, n, 0};
	double secs;

	seen = calloc((size_t)n + 1, 1);
	if (seen == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	t0 = now_ns();
	err = pthread_create(&th, NULL, flood_write, &w);
	if (err != 0) {
		fprintf(stderr, "%s: cannot start a thread: %s\n", PROG, strerror(err));
		goto out;
	}
	started = 1;
	for (got = 0; got < n; got++) {
		if ((got & 4095) == 0)
			alarm(IDLE_SECS);
		if (read_answer(r, &id) != 0)
			goto out;
		if (id < 1 || id > (uint64_t)n || seen[id]) {
			fprintf(stderr, "%s: unexpected or repeated answer id %llu\n", PROG,
				(unsigned long long)id);
			goto out;
		}
		seen[id] = 1;
	}
	t1 = now_ns();
	secs = (double)(t1 - t0) / 1e9;
	printf("flood n=%ld secs=%.3f msgs_per_s=%.0f\n", n, secs, 2.0 * (double)n / secs);
	rc = 0;
out:
	if (started) {
		/* On an error the writer may be blocked on a full pipe: closing is up to the
		 * caller, which exits; only a finished writer is joined. */
		if (rc == 0)
			pthread_join(th, NULL);
		else
			pthread_detach(th);
	}
	if (rc == 0 && w.error != 0) {
		fprintf(stderr, "%s: cannot write to the server: %s\n", PROG, strerror(w.error));
		rc = -1;
	}
	free(seen);
	return rc;
}

/* Closes the child's stdin, drains its output and reaps it. Returns 0 when it exited
 * 0, else -1 (reported). */
static int finish_child(pid_t pid, int to_child, struct reader *r)
{
	int rc = -1, status, st;
	const char *line;
	size_t len;
	pid_t w;

	close(to_child);
	alarm(IDLE_SECS);
	do
		st = reader_next(r, &line, &len);
	while (st > 0);
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	alarm(0);
	if (w < 0)
		fprintf(stderr, "%s: cannot wait for the server: %s\n", PROG, strerror(errno));
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		fprintf(stderr, "%s: the server exited with status %d\n", PROG, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		fprintf(stderr, "%s: the server was killed by signal %d\n", PROG, WTERMSIG(status));
	else
		rc = 0;
	return rc;
}

int main(int argc, char **argv)
{
	int status = 2, flood, to_child = -1, from_child = -1;
	long n;
	char *end;
	pid_t pid = -1;
	struct reader r = {0};

	if (argc < 5 || strcmp(argv[3], "--") != 0 ||
	    (strcmp(argv[1], "ping") != 0 && strcmp(argv[1], "flood") != 0))
		goto usage;
	flood = strcmp(argv[1], "flood") == 0;
	errno = 0;
	n = strtol(argv[2], &end, 10);
	if (errno != 0 || end == argv[2] || *end != '\0' || n < 1 || n > MAX_N)
		goto usage;
	status = 1;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(IDLE_SECS);
	if (spawn_child(argv + 4, &pid, &to_child, &from_child) != 0) {
		fprintf(stderr, "%s: cannot run '%s': %s\n", PROG, argv[4], strerror(errno));
		goto out;
	}
	if (reader_init(&r, from_child) != 0) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	if (handshake(to_child, &r) != 0)
		goto out;
	if ((flood ? run_flood : run_ping)(to_child, &r, n) != 0)
		goto out;
	fflush(stdout);
	status = finish_child(pid, to_child, &r) == 0 ? 0 : 1;
	to_child = -1;
	pid = -1;
	goto out;
usage:
	fprintf(stderr, "usage: %s ping|flood N -- CMD ARGS...\n", PROG);
out:
	if (pid > 0) {
		/* A failure with the child still running: stop it. */
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	if (to_child >= 0)
		close(to_child);
	if (from_child >= 0)
		close(from_child);
	free(r.buf);
	return status;
}
