/*
 * tests/bench/echo-server.c - the fastest minimal MCP server, for benchmarks.
 *
 * Reads newline-delimited JSON-RPC from stdin in large reads. Every request (an object
 * with top-level "method" and "id") is answered with
 *   {"jsonrpc":"2.0","id":<id>,"result":{}}
 * where <id> is the request's id token copied byte for byte; initialize gets a proper
 * InitializeResult (the client's protocol version when known, else 2025-06-18).
 * Notifications, responses and lines that are not JSON objects get no answer.
 *
 * Lines are not parsed with a JSON library: a scanner walks the top-level object and
 * notes where the "id" and "method" values lie, skipping nested values and strings
 * (with their escapes). Only initialize is decoded with Jansson. Answers are buffered
 * and written whenever the input read so far has been consumed, that is before
 * blocking on the next read, so a pipelined flood is answered in batches and a
 * ping-pong exchange is not delayed.
 *
 * Usage: echo-server (no options). Exit status: 0 at stdin EOF, 1 on an I/O error.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/bench/jscan.h"

#define PROG "echo-server"
#define READ_SIZE ((size_t)1 << 20)   /* input buffer to start with, and read size */
#define MAX_LINE ((size_t)64 << 20)   /* longer lines are skipped unanswered */
#define OUT_FLUSH ((size_t)256 << 10) /* write out earlier when this much is buffered */

/* A growable output buffer written to fd 1. */
struct out {
	char *buf;  /* owned */
	size_t len; /* bytes waiting */
	size_t cap; /* size of buf */
};

/* Writes out what o holds. Returns 0, or -1 with errno set. */
static int out_flush(struct out *o)
{
	int rc = 0;
	size_t done = 0;
	ssize_t n;

	while (done < o->len) {
		n = write(STDOUT_FILENO, o->buf + done, o->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -1;
			break;
		}
		done += (size_t)n;
	}
	o->len = 0;
	return rc;
}

/* Appends len bytes to o. Returns 0, or -1 when out of memory. */
static int out_put(struct out *o, const char *s, size_t len)
{
	int rc = -1;
	size_t ncap;
	char *nbuf;

	if (o->cap - o->len < len) {
		ncap = o->cap > 0 ? o->cap : 4096;
		while (ncap - o->len < len)
			ncap *= 2;
		nbuf = realloc(o->buf, ncap);
		if (nbuf == NULL)
			goto out;
		o->buf = nbuf;
		o->cap = ncap;
	}
	memcpy(o->buf + o->len, s, len);
	o->len += len;
	rc = 0;
out:
	return rc;
}

/* Appends the InitializeResult answer to the initialize request in line. id is the
 * id token from the line. Returns 0 or -1 (out of memory). */
static int answer_initialize(struct out *o, const char *line, size_t len, const char *id, size_t id_len)
{
	static const char *const known[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
	int rc = -1;
	json_t *req, *result = NULL;
	json_error_t jerr;
	const char *want, *version = "2025-06-18";
	char *text = NULL;
	size_t i;

	req = json_loadb(line, len, 0, &jerr);
	want = json_string_value(json_object_get(json_object_get(req, "params"), "protocolVersion"));
	for (i = 0; want != NULL && i < sizeof known / sizeof known[0]; i++)
		if (strcmp(want, known[i]) == 0)
			version = known[i];
	result = json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}", "protocolVersion", version, "capabilities",
			   "tools", "serverInfo", "name", "mcptap-echo-server", "version", "1.0.0");
	if (result == NULL)
		goto out;
	text = json_dumps(result, JSON_COMPACT);
	if (text == NULL)
		goto out;
	if (out_put(o, "{\"jsonrpc\":\"2.0\",\"id\":", 22) != 0 || out_put(o, id, id_len) != 0 ||
	    out_put(o, ",\"result\":", 10) != 0 || out_put(o, text, strlen(text)) != 0 ||
	    out_put(o, "}\n", 2) != 0)
		goto out;
	rc = 0;
out:
	free(text);
	json_decref(result);
	json_decref(req);
	return rc;
}

/* Appends the answer to one line, if it is a request. Returns 0, or -1 when out of
 * memory. */
static int answer_line(struct out *o, const char *line, size_t len)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char tail[] = ",\"result\":{}}\n";
	int rc = 0;
	struct top t;

	if (scan_top(line, len, &t) != 0 || t.id == NULL || t.method == NULL)
		goto out;
	if (t.method_len == 12 && memcmp(t.method, "\"initialize\"", 12) == 0) {
		rc = answer_initialize(o, line, len, t.id, t.id_len);
		goto out;
	}
	if (out_put(o, head, sizeof head - 1) != 0 || out_put(o, t.id, t.id_len) != 0 ||
	    out_put(o, tail, sizeof tail - 1) != 0)
		rc = -1;
out:
	return rc;
}

int main(void)
{
	int status = 1, skipping = 0;
	char *buf = NULL, *nbuf, *p, *nl, *end;
	size_t cap = READ_SIZE, have = 0, scanned = 0, ncap;
	ssize_t n;
	struct out o = {NULL, 0, 0};

	signal(SIGPIPE, SIG_IGN);
	buf = malloc(cap);
	if (buf == NULL)
		goto oom;
	for (;;) {
		if (have == cap) {
			/* One line fills the buffer: grow it, or skip the line. */
			ncap = cap * 2;
			if (ncap > MAX_LINE) {
				if (!skipping)
					fprintf(stderr, "%s: skipping a line longer than %zu bytes\n", PROG,
						MAX_LINE);
				skipping = 1;
				have = scanned = 0;
			} else {
				nbuf = realloc(buf, ncap);
				if (nbuf == NULL)
					goto oom;
				buf = nbuf;
				cap = ncap;
			}
		}
		n = read(STDIN_FILENO, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: cannot read stdin: %s\n", PROG, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		p = buf;
		end = buf + have;
		while ((nl = memchr(p + scanned, '\n', (size_t)(end - p) - scanned)) != NULL) {
			scanned = 0;
			if (skipping)
				skipping = 0;
			else if (answer_line(&o, p, (size_t)(nl - p)) != 0)
				goto oom;
			p = nl + 1;
			if (o.len >= OUT_FLUSH && out_flush(&o) != 0)
				goto write_error;
		}
		have = (size_t)(end - p);
		scanned = have;
		if (p != buf && have > 0)
			memmove(buf, p, have);
		if (out_flush(&o) != 0)
			goto write_error;
	}
	/* A last line without a newline. */
	if (have > 0 && !skipping && answer_line(&o, buf, have) != 0)
		goto oom;
	if (out_flush(&o) != 0)
		goto write_error;
	status = 0;
	goto out;
write_error:
	if (errno != EPIPE)
		fprintf(stderr, "%s: cannot write stdout: %s\n", PROG, strerror(errno));
	goto out;
oom:
	fprintf(stderr, "%s: out of memory\n", PROG);
out:
	free(buf);
	free(o.buf);
	return status;
}
