/*
 * tests/peers/mcp-client.c - a scripted MCP client over stdio, for mcptap's tests.
 *
 * Usage: mcp-client [--log FILE] [--flow basic|full] [--timeout SEC] [--name NAME]
 *                   [--version VERSION] [--protocol REVISION] [--caps JSON] -- CMD ARGS...
 *
 * Spawns CMD ARGS (no shell) with pipes on its stdin and stdout (stderr inherited),
 * runs a fixed flow of requests as an MCP client and checks that each answer is a
 * successful, well-formed result. Requests from the server are answered:
 * sampling/createMessage with a fixed "mock reply", roots/list with no roots, ping with
 * {}; other server requests get -32601. Notifications are taken note of where a step
 * awaits them (progress, log messages) and otherwise ignored.
 *
 * Flow "full" (the default): initialize, notifications/initialized, ping, tools/list,
 * tools/call echo, tools/call progress (with a progress token; three notifications
 * expected), tools/call sample (the sampling request is answered; the result must hold
 * the reply), resources/list, resources/read, prompts/list, prompts/get, tools/call log.
 * Flow "basic": initialize, notifications/initialized, tools/list, tools/call echo, ping.
 * Then the child's stdin is closed, its output drained and the child waited for.
 *
 * The initialize request says clientInfo {name: --name (mcptap-test-client), version:
 * --version (1.0.0)}, protocolVersion --protocol (2025-06-18) and capabilities --caps (a
 * JSON object; {"sampling":{},"roots":{"listChanged":true}}). A server request the
 * capabilities do not allow (sampling/createMessage without sampling, roots/list without
 * roots, elicitation/create without elicitation) is a failed check; without sampling,
 * the step "tools/call sample" expects no sampling request and a result all the same.
 *
 * With --log FILE every message sent or received is written, in order, one per line:
 * {"dir":"c2s","message":<msg>} or {"dir":"s2c","message":<msg>}. Lines from the server
 * that are not JSON are reported on stderr and not logged.
 *
 * Exit status: 0 when every step succeeded and the child exited 0; 1 otherwise (a step
 * failed, an answer timed out, the child exited non-zero or was killed); 2 on a usage
 * error.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/peers/spawn.h"

#define PROG "mcp-client"
#define PROTOCOL_VERSION "2025-06-18"
#define MAX_LINE ((size_t)256 << 20) /* longest line accepted from the server */
#define READ_CHUNK 65536
#define KILL_GRACE_MS 2000 /* after SIGTERM, before SIGKILL */

/* Results of linebuf_next(). */
enum lb_status {
	LB_LINE = 1,     /* a line was returned */
	LB_EOF = 0,      /* end of input */
	LB_ERROR = -1,   /* read error, errno set */
	LB_TOOLONG = -2, /* a line longer than MAX_LINE was skipped */
	LB_TIMEOUT = -3  /* the deadline passed */
};

/* Buffered reader of newline-terminated lines from a file descriptor, with a deadline. */
struct linebuf {
	int fd;         /* owned; -1 once closed */
	char *buf;      /* owned; unread bytes are buf[start..end) */
	size_t cap;     /* size of buf */
	size_t start;   /* first unread byte */
	size_t end;     /* one past the last byte read */
	size_t scanned; /* bytes after start known to hold no '\n' */
	int eof;        /* read() returned 0 */
	int skipping;   /* discarding the rest of an overlong line */
};

/* The client's state. */
struct client {
	pid_t pid;                  /* the child, or -1 once reaped */
	int to_child;               /* owned write end of the child's stdin, or -1 */
	struct linebuf from;        /* the child's stdout */
	FILE *log;                  /* owned, or NULL */
	int timeout_ms;             /* for each answer */
	long next_id;               /* next request id */
	int dead;                   /* the server is gone or timed out: stop the flow */
	int timed_out;              /* an answer timed out */
	int failures;               /* failed checks */
	const char *step;           /* borrowed name of the running step */
	const char *progress_token; /* borrowed token whose progress is counted, or NULL */
	int progress_seen;          /* notifications/progress for progress_token */
	int progress_bad;           /* ... of which not increasing or ill-formed */
	int samplings;              /* sampling/createMessage requests answered */
	double last_progress;       /* the last progress value counted */
	int log_messages;           /* notifications/message received */
	long sent, received;        /* messages logged in each direction */
	char *first_uri;            /* owned uri of the first listed resource, or NULL */
	json_t *first_prompt;       /* owned first listed prompt, or NULL */
	const char *name;           /* borrowed clientInfo.name */
	const char *version;        /* borrowed clientInfo.version */
	const char *protocol;       /* borrowed protocolVersion asked for */
	json_t *caps;               /* owned capabilities declared */
};

/* A step of a flow: returns 0 when it succeeded, -1 after reporting a failure. */
struct step {
	const char *name;
	int (*fn)(struct client *c);
};

/* Aborts on a NULL from an allocating call: out of memory or a broken invariant.
 * Returns p. */
static json_t *must(json_t *p)
{
	if (p == NULL) {
		fprintf(stderr, "%s: out of memory or bad JSON construction\n", PROG);
		abort();
	}
	return p;
}

/* Returns CLOCK_MONOTONIC in milliseconds. */
static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reports a failed check of the running step; returns -1 for the caller to pass on. */
static int __attribute__((format(printf, 2, 3))) fail(struct client *c, const char *fmt, ...)
{
	va_list ap;

	c->failures++;
	fprintf(stderr, "%s: FAIL: %s: ", PROG, c->step != NULL ? c->step : "setup");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* Prepares lb to read fd (taken). Returns 0, or -1 when out of memory. */
static int linebuf_init(struct linebuf *lb, int fd)
{
	int rc = -1;

	memset(lb, 0, sizeof *lb);
	lb->fd = fd;
	lb->cap = READ_CHUNK;
	lb->buf = malloc(lb->cap);
	if (lb->buf == NULL)
		goto out;
	rc = 0;
out:
	return rc;
}

/* Releases what lb owns, closing its descriptor; lb may be zeroed with fd -1. */
static void linebuf_release(struct linebuf *lb)
{
	if (lb->fd >= 0)
		close(lb->fd);
	lb->fd = -1;
	free(lb->buf);
	lb->buf = NULL;
}

/* Makes room for at least one more read into lb. Returns 0, or -1 when out of memory. */
static int linebuf_room(struct linebuf *lb)
{
	int rc = -1;
	char *nbuf;
	size_t ncap;

	if (lb->start > 0) {
		memmove(lb->buf, lb->buf + lb->start, lb->end - lb->start);
		lb->end -= lb->start;
		lb->start = 0;
	}
	if (lb->cap - lb->end < READ_CHUNK / 2) {
		ncap = lb->cap * 2;
		nbuf = realloc(lb->buf, ncap);
		if (nbuf == NULL)
			goto out;
		lb->buf = nbuf;
		lb->cap = ncap;
	}
	rc = 0;
out:
	return rc;
}

/* Waits until lb's descriptor is readable or the deadline (CLOCK_MONOTONIC ms) passes.
 * Returns 1 when readable, 0 on timeout, -1 on error. */
static int wait_readable(int fd, long long deadline)
{
	int rc = -1, n;
	long long left;
	struct pollfd p;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0) {
			rc = 0;
			break;
		}
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 0) {
			rc = n > 0 ? 1 : -1;
			break;
		}
	}
	return rc;
}

/* Returns the next line of lb in *line (borrowed, NUL-terminated, valid until the next
 * call) and its length in *len, without the "\n" or "\r\n". A last line without a
 * newline is returned at EOF. Waits no later than deadline (CLOCK_MONOTONIC ms).
 * Returns an enum lb_status. */
static int linebuf_next(struct linebuf *lb, long long deadline, char **line, size_t *len)
{
	int rc = LB_ERROR, w;
	char *nl;
	ssize_t n;

	for (;;) {
		nl = memchr(lb->buf + lb->start + lb->scanned, '\n', lb->end - lb->start - lb->scanned);
		if (nl != NULL) {
			*line = lb->buf + lb->start;
			*len = (size_t)(nl - *line);
			*nl = '\0';
			lb->start = (size_t)(nl - lb->buf) + 1;
			lb->scanned = 0;
			rc = lb->skipping ? LB_TOOLONG : LB_LINE;
			lb->skipping = 0;
			break;
		}
		lb->scanned = lb->end - lb->start;
		if (lb->eof) {
			rc = lb->skipping ? LB_TOOLONG : lb->end == lb->start ? LB_EOF : LB_LINE;
			lb->skipping = 0;
			/* linebuf_room() always leaves a spare byte for this NUL. */
			*line = lb->buf + lb->start;
			*len = lb->end - lb->start;
			lb->buf[lb->end] = '\0';
			lb->start = lb->end = lb->scanned = 0;
			break;
		}
		if (lb->scanned >= MAX_LINE) {
			lb->skipping = 1;
			lb->start = lb->end = lb->scanned = 0;
		}
		if (linebuf_room(lb) != 0) {
			errno = ENOMEM;
			break;
		}
		w = wait_readable(lb->fd, deadline);
		if (w <= 0) {
			rc = w == 0 ? LB_TIMEOUT : LB_ERROR;
			break;
		}
		n = read(lb->fd, lb->buf + lb->end, lb->cap - lb->end - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0)
			lb->eof = 1;
		lb->end += (size_t)n;
	}
	if (rc == LB_LINE && *len > 0 && (*line)[*len - 1] == '\r')
		(*line)[--*len] = '\0';
	return rc;
}

/* Appends {"dir":dir,"message":msg} to the log, if any. msg is borrowed. */
static void log_message(struct client *c, const char *dir, json_t *msg)
{
	json_t *entry;

	if (dir[0] == 'c')
		c->sent++;
	else
		c->received++;
	if (c->log != NULL) {
		entry = must(json_pack("{s:s, s:O}", "dir", dir, "message", msg));
		if (json_dumpf(entry, c->log, JSON_COMPACT) != 0 || fputc('\n', c->log) == EOF ||
		    fflush(c->log) == EOF)
			fprintf(stderr, "%s: cannot write the log: %s\n", PROG, strerror(errno));
		json_decref(entry);
	}
}

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

/* Sends msg (borrowed) to the child as one line and logs it. Returns 0, or -1 (the
 * server is then taken for dead). */
static int send_msg(struct client *c, json_t *msg)
{
	int rc = -1;
	char *text = NULL;
	size_t len;

	if (c->to_child < 0) {
		fail(c, "cannot send: the server's input is closed");
		goto out;
	}
	text = json_dumps(msg, JSON_COMPACT);
	if (text == NULL) {
		fail(c, "cannot encode a message");
		goto out;
	}
	log_message(c, "c2s", msg);
	len = strlen(text);
	text[len] = '\n'; /* replaces the NUL: the line is written with its length */
	if (write_all(c->to_child, text, len + 1) != 0) {
		fail(c, "cannot write to the server: %s", strerror(errno));
		c->dead = 1;
		goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

/* Sends a notification; params (stolen) may be NULL. Returns 0 or -1. */
static int notify(struct client *c, const char *method, json_t *params)
{
	int rc;
	json_t *msg;

	msg = must(json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method));
	if (params != NULL)
		json_object_set_new(msg, "params", params);
	rc = send_msg(c, msg);
	json_decref(msg);
	return rc;
}

/* Notes a notification from the server that a step may be waiting for. */
static void on_notification(struct client *c, const char *method, json_t *params)
{
	json_t *token, *progress;

	if (strcmp(method, "notifications/message") == 0) {
		c->log_messages++;
	} else if (strcmp(method, "notifications/progress") == 0 && c->progress_token != NULL) {
		token = json_object_get(params, "progressToken");
		progress = json_object_get(params, "progress");
		if (json_is_string(token) && strcmp(json_string_value(token), c->progress_token) == 0) {
			if (c->progress_seen == 0)
				c->last_progress = -1;
			c->progress_seen++;
			if (!json_is_number(progress) || json_number_value(progress) <= c->last_progress)
				c->progress_bad++;
			else
				c->last_progress = json_number_value(progress);
		}
	}
}

/* Answers a request from the server. id and params are borrowed. Returns 0 or -1. */
static int on_request(struct client *c, json_t *id, const char *method, json_t *params)
{
	int rc = 0;
	json_t *msg;

	if (c->to_child < 0) {
		fprintf(stderr, "%s: not answering %s: the server's input is closed\n", PROG, method);
		goto out;
	}
	msg = must(json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", id));
	if ((strcmp(method, "sampling/createMessage") == 0 && json_object_get(c->caps, "sampling") == NULL) ||
	    (strcmp(method, "roots/list") == 0 && json_object_get(c->caps, "roots") == NULL) ||
	    (strcmp(method, "elicitation/create") == 0 && json_object_get(c->caps, "elicitation") == NULL))
		fail(c, "the server sent %s, which the client declared no capability for", method);
	if (strcmp(method, "sampling/createMessage") == 0 &&
	    json_is_array(json_object_get(params, "messages"))) {
		c->samplings++;
		json_object_set_new(msg, "result",
				    must(json_pack("{s:s, s:{s:s, s:s}, s:s, s:s}", "role", "assistant",
						   "content", "type", "text", "text", "mock reply", "model",
						   "mcptap-test-model", "stopReason", "endTurn")));
	} else if (strcmp(method, "sampling/createMessage") == 0) {
		json_object_set_new(msg, "error",
				    must(json_pack("{s:i, s:s}", "code", -32602, "message",
						   "Invalid params: messages must be an array")));
	} else if (strcmp(method, "roots/list") == 0) {
		json_object_set_new(msg, "result", must(json_pack("{s:[]}", "roots")));
	} else if (strcmp(method, "ping") == 0) {
		json_object_set_new(msg, "result", must(json_object()));
	} else {
		json_object_set_new(
			msg, "error",
			must(json_pack("{s:i, s:s}", "code", -32601, "message", "Method not found")));
	}
	rc = send_msg(c, msg);
	json_decref(msg);
out:
	return rc;
}

/* Reads one message from the server, handling it when it is a request or a
 * notification. Returns 2 with *msg (new reference) when it is a response, 1 when it
 * was handled (or was not JSON), else LB_EOF, LB_TIMEOUT or LB_ERROR. */
static int read_message(struct client *c, long long deadline, json_t **msg)
{
	int rc, st;
	char *line;
	size_t len;
	json_t *m = NULL, *method, *id;
	json_error_t jerr;

	st = linebuf_next(&c->from, deadline, &line, &len);
	rc = st;
	if (st == LB_TOOLONG) {
		rc = 1;
		fail(c, "a line from the server is longer than %zu bytes", MAX_LINE);
	}
	if (st != LB_LINE)
		goto out;
	rc = 1;
	if (strspn(line, " \t") == len)
		goto out;
	m = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (m == NULL) {
		fprintf(stderr, "%s: ignoring a line from the server that is not JSON: %.200s\n", PROG, line);
		goto out;
	}
	log_message(c, "s2c", m);
	method = json_object_get(m, "method");
	id = json_object_get(m, "id");
	if (!json_is_object(m) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")) ?: "", "2.0") != 0) {
		fail(c, "the server sent a message that is not a JSON-RPC 2.0 object");
	} else if (json_is_string(method) && id == NULL) {
		on_notification(c, json_string_value(method), json_object_get(m, "params"));
	} else if (json_is_string(method) && (json_is_string(id) || json_is_integer(id))) {
		on_request(c, id, json_string_value(method), json_object_get(m, "params"));
	} else if (method == NULL && id != NULL) {
		*msg = m;
		m = NULL;
		rc = 2;
	} else {
		fail(c, "the server sent an ill-formed message");
	}
out:
	json_decref(m);
	return rc;
}

/* Sends request method with params (stolen; NULL for none) and waits for its answer.
 * Returns 0 with *result (new reference) on a successful answer, or -1 after reporting
 * what went wrong (an error answer, an ill-formed answer, EOF, a timeout). */
static int call(struct client *c, const char *method, json_t *params, json_t **result)
{
	int rc = -1, st;
	long id = c->next_id++;
	long long deadline;
	json_t *req, *msg = NULL, *res, *err, *rid;

	*result = NULL;
	req = must(json_pack("{s:s, s:i, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method));
	if (params != NULL)
		json_object_set_new(req, "params", params);
	st = send_msg(c, req);
	json_decref(req);
	if (st != 0)
		goto out;
	deadline = now_ms() + c->timeout_ms;
	for (;;) {
		json_decref(msg);
		msg = NULL;
		st = read_message(c, deadline, &msg);
		if (st == LB_TIMEOUT) {
			fail(c, "timed out after %d s waiting for the answer to %s (id %ld)",
			     c->timeout_ms / 1000, method, id);
			c->dead = c->timed_out = 1;
			goto out;
		}
		if (st == LB_EOF || st == LB_ERROR) {
			fail(c, "the server's output %s while waiting for the answer to %s (id %ld)",
			     st == LB_EOF ? "ended" : "failed", method, id);
			c->dead = 1;
			goto out;
		}
		if (st != 2)
			continue;
		rid = json_object_get(msg, "id");
		if (json_is_integer(rid) && json_integer_value(rid) == id)
			break;
		fail(c, "an answer with an unexpected id arrived while waiting for id %ld", id);
	}
	res = json_object_get(msg, "result");
	err = json_object_get(msg, "error");
	if (res != NULL && err != NULL) {
		fail(c, "the answer has both result and error");
	} else if (err != NULL) {
		fail(c, "%s answered with error %" JSON_INTEGER_FORMAT ": %s", method,
		     json_integer_value(json_object_get(err, "code")),
		     json_string_value(json_object_get(err, "message")) ?: "(no message)");
	} else if (!json_is_object(res)) {
		fail(c, "the answer to %s has no result object", method);
	} else {
		*result = json_incref(res);
		rc = 0;
	}
out:
	json_decref(msg);
	return rc;
}

/* Returns the text of the first text block of a CallToolResult (borrowed), or NULL. */
static const char *result_text(json_t *result)
{
	const char *text = NULL;
	json_t *content, *block;
	size_t i;

	content = json_object_get(result, "content");
	for (i = 0; text == NULL && i < json_array_size(content); i++) {
		block = json_array_get(content, i);
		if (strcmp(json_string_value(json_object_get(block, "type")) ?: "", "text") == 0)
			text = json_string_value(json_object_get(block, "text"));
	}
	return text;
}

/* Calls tool name with arguments (stolen) and meta (stolen; NULL for none); checks
 * that the result is a CallToolResult without isError. Returns 0 with *text (borrowed
 * from *result, a new reference) or -1. */
static int call_tool(struct client *c, const char *name, json_t *args, json_t *meta, json_t **result,
		     const char **text)
{
	int rc = -1;
	json_t *params;

	params = must(json_pack("{s:s, s:o}", "name", name, "arguments", args));
	if (meta != NULL)
		json_object_set_new(params, "_meta", meta);
	if (call(c, "tools/call", params, result) != 0)
		goto out;
	*text = result_text(*result);
	if (!json_is_array(json_object_get(*result, "content"))) {
		fail(c, "the result has no content array");
	} else if (json_is_true(json_object_get(*result, "isError"))) {
		fail(c, "the tool reported an error: %s", *text ?: "(no text)");
	} else if (*text == NULL) {
		fail(c, "the result has no text content");
	} else {
		rc = 0;
	}
out:
	return rc;
}

/* Step: initialize, then notifications/initialized. */
static int step_initialize(struct client *c)
{
	int rc = -1;
	json_t *result = NULL, *info;
	const char *version;

	if (call(c, "initialize",
		 must(json_pack("{s:s, s:O, s:{s:s, s:s}}", "protocolVersion", c->protocol, "capabilities",
				c->caps, "clientInfo", "name", c->name, "version", c->version)),
		 &result) != 0)
		goto out;
	version = json_string_value(json_object_get(result, "protocolVersion"));
	info = json_object_get(result, "serverInfo");
	if (version == NULL || (strcmp(version, "2024-11-05") != 0 && strcmp(version, "2025-03-26") != 0 &&
				strcmp(version, "2025-06-18") != 0 && strcmp(version, "2025-11-25") != 0)) {
		fail(c, "unsupported or missing protocolVersion %s", version ?: "(none)");
		goto out;
	}
	if (!json_is_object(json_object_get(result, "capabilities")) ||
	    !json_is_string(json_object_get(info, "name")) ||
	    !json_is_string(json_object_get(info, "version"))) {
		fail(c, "the result lacks capabilities or serverInfo name and version");
		goto out;
	}
	rc = notify(c, "notifications/initialized", NULL);
out:
	json_decref(result);
	return rc;
}

/* Step: ping, answered with an empty object. */
static int step_ping(struct client *c)
{
	int rc = -1;
	json_t *result = NULL;

	if (call(c, "ping", NULL, &result) != 0)
		goto out;
	if (json_object_size(result) != 0) {
		fail(c, "the result is not empty");
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: tools/list; every tool has a name and an inputSchema, and echo is one. */
static int step_tools_list(struct client *c)
{
	int rc = -1, echo = 0;
	json_t *result = NULL, *tools, *t;
	const char *name;
	size_t i;

	if (call(c, "tools/list", must(json_object()), &result) != 0)
		goto out;
	tools = json_object_get(result, "tools");
	if (!json_is_array(tools) || json_array_size(tools) == 0) {
		fail(c, "no tools listed");
		goto out;
	}
	json_array_foreach(tools, i, t)
	{
		name = json_string_value(json_object_get(t, "name"));
		if (name == NULL || !json_is_object(json_object_get(t, "inputSchema"))) {
			fail(c, "tool %zu lacks a name or an inputSchema", i);
			goto out;
		}
		echo |= strcmp(name, "echo") == 0;
	}
	if (!echo) {
		fail(c, "no echo tool listed");
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: tools/call echo {text:"hello"} returns "hello". */
static int step_echo(struct client *c)
{
	int rc = -1;
	json_t *result = NULL;
	const char *text;

	if (call_tool(c, "echo", must(json_pack("{s:s}", "text", "hello")), NULL, &result, &text) != 0)
		goto out;
	if (strcmp(text, "hello") != 0) {
		fail(c, "expected \"hello\", got \"%.200s\"", text);
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: tools/call progress with progress token "tok-1"; three increasing progress
 * notifications for it must arrive before the answer. */
static int step_progress(struct client *c)
{
	int rc = -1;
	json_t *result = NULL;
	const char *text;

	c->progress_token = "tok-1";
	c->progress_seen = c->progress_bad = 0;
	if (call_tool(c, "progress", must(json_object()), must(json_pack("{s:s}", "progressToken", "tok-1")),
		      &result, &text) != 0)
		goto out;
	if (c->progress_seen != 3 || c->progress_bad != 0) {
		fail(c, "expected 3 increasing progress notifications, got %d (%d bad)", c->progress_seen,
		     c->progress_bad);
		goto out;
	}
	rc = 0;
out:
	c->progress_token = NULL;
	json_decref(result);
	return rc;
}

/* Step: tools/call sample; the server's sampling request is answered, and the result
 * must carry the reply. A client without sampling gets no such request, but a result. */
static int step_sample(struct client *c)
{
	int rc = -1, before = c->samplings;
	json_t *result = NULL;
	const char *text;

	if (call_tool(c, "sample", must(json_pack("{s:s}", "prompt", "hi")), NULL, &result, &text) != 0)
		goto out;
	if (json_object_get(c->caps, "sampling") == NULL) {
		rc = c->samplings == before ? 0 : -1; /* on_request failed the check already */
		goto out;
	}
	if (c->samplings == before) {
		fail(c, "no sampling/createMessage request arrived");
		goto out;
	}
	if (strstr(text, "mock reply") == NULL) {
		fail(c, "the result does not hold the sampling reply: \"%.200s\"", text);
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: resources/list; remembers the first resource's uri. */
static int step_resources_list(struct client *c)
{
	int rc = -1;
	json_t *result = NULL, *list, *r;
	const char *uri = NULL;
	size_t i;

	if (call(c, "resources/list", must(json_object()), &result) != 0)
		goto out;
	list = json_object_get(result, "resources");
	if (!json_is_array(list) || json_array_size(list) == 0) {
		fail(c, "no resources listed");
		goto out;
	}
	json_array_foreach(list, i, r)
	{
		if (!json_is_string(json_object_get(r, "uri")) ||
		    !json_is_string(json_object_get(r, "name"))) {
			fail(c, "resource %zu lacks a uri or a name", i);
			goto out;
		}
		if (uri == NULL)
			uri = json_string_value(json_object_get(r, "uri"));
	}
	free(c->first_uri);
	c->first_uri = strdup(uri);
	if (c->first_uri == NULL) {
		fail(c, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: resources/read of the first listed resource. */
static int step_resources_read(struct client *c)
{
	int rc = -1;
	json_t *result = NULL, *contents, *first;

	if (c->first_uri == NULL) {
		fail(c, "no resource uri to read");
		goto out;
	}
	if (call(c, "resources/read", must(json_pack("{s:s}", "uri", c->first_uri)), &result) != 0)
		goto out;
	contents = json_object_get(result, "contents");
	first = json_array_get(contents, 0);
	if (first == NULL) {
		fail(c, "no contents");
		goto out;
	}
	if (strcmp(json_string_value(json_object_get(first, "uri")) ?: "", c->first_uri) != 0 ||
	    (!json_is_string(json_object_get(first, "text")) &&
	     !json_is_string(json_object_get(first, "blob")))) {
		fail(c, "contents[0] lacks the uri, or both text and blob");
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: prompts/list; remembers the first prompt. */
static int step_prompts_list(struct client *c)
{
	int rc = -1;
	json_t *result = NULL, *list, *p;
	size_t i;

	if (call(c, "prompts/list", must(json_object()), &result) != 0)
		goto out;
	list = json_object_get(result, "prompts");
	if (!json_is_array(list) || json_array_size(list) == 0) {
		fail(c, "no prompts listed");
		goto out;
	}
	json_array_foreach(list, i, p)
	{
		if (!json_is_string(json_object_get(p, "name"))) {
			fail(c, "prompt %zu lacks a name", i);
			goto out;
		}
	}
	json_decref(c->first_prompt);
	c->first_prompt = json_incref(json_array_get(list, 0));
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: prompts/get of the first listed prompt, with "test" for each required
 * argument. */
static int step_prompts_get(struct client *c)
{
	int rc = -1;
	json_t *result = NULL, *args, *a, *messages;
	const char *name;
	size_t i;

	name = json_string_value(json_object_get(c->first_prompt, "name"));
	if (name == NULL) {
		fail(c, "no prompt to get");
		goto out;
	}
	args = must(json_object());
	json_array_foreach(json_object_get(c->first_prompt, "arguments"), i, a)
	{
		if (json_is_true(json_object_get(a, "required")) &&
		    json_is_string(json_object_get(a, "name")))
			json_object_set_new(args, json_string_value(json_object_get(a, "name")),
					    must(json_string("test")));
	}
	if (call(c, "prompts/get", must(json_pack("{s:s, s:o}", "name", name, "arguments", args)), &result) !=
	    0)
		goto out;
	messages = json_object_get(result, "messages");
	if (!json_is_array(messages) || json_array_size(messages) == 0) {
		fail(c, "no messages");
		goto out;
	}
	json_array_foreach(messages, i, a)
	{
		if (!json_is_string(json_object_get(a, "role")) ||
		    !json_is_object(json_object_get(a, "content"))) {
			fail(c, "message %zu lacks a role or a content", i);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

/* Step: tools/call log; a notifications/message must arrive before the answer. */
static int step_log(struct client *c)
{
	int rc = -1, before = c->log_messages;
	json_t *result = NULL;
	const char *text;

	if (call_tool(c, "log", must(json_object()), NULL, &result, &text) != 0)
		goto out;
	if (c->log_messages == before) {
		fail(c, "no notifications/message arrived");
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

static const struct step flow_full[] = {
	{"initialize", step_initialize},
	{"ping", step_ping},
	{"tools/list", step_tools_list},
	{"tools/call echo", step_echo},
	{"tools/call progress", step_progress},
	{"tools/call sample", step_sample},
	{"resources/list", step_resources_list},
	{"resources/read", step_resources_read},
	{"prompts/list", step_prompts_list},
	{"prompts/get", step_prompts_get},
	{"tools/call log", step_log},
	{NULL, NULL},
};

static const struct step flow_basic[] = {
	{"initialize", step_initialize},
	{"tools/list", step_tools_list},
	{"tools/call echo", step_echo},
	{"ping", step_ping},
	{NULL, NULL},
};

/* Waits for the child until deadline (CLOCK_MONOTONIC ms). Returns 1 and fills *status
 * when it was reaped, 0 when it is still running. */
static int reap_until(struct client *c, long long deadline, int *status)
{
	int rc = 0;
	pid_t r;

	for (;;) {
		r = waitpid(c->pid, status, WNOHANG);
		if (r == c->pid || (r < 0 && errno != EINTR)) {
			rc = r == c->pid;
			c->pid = -1;
			break;
		}
		if (now_ms() >= deadline)
			break;
		usleep(10000);
	}
	return rc;
}

/* Closes the child's stdin, drains its output until EOF and reaps it, within grace_ms
 * (then SIGTERM, then SIGKILL). Returns 0 when it exited with status 0, else -1. */
static int finish_child(struct client *c, int grace_ms)
{
	int rc = -1, st = 1, status = 0, reaped = 0;
	long long deadline = now_ms() + grace_ms;
	json_t *msg = NULL;

	if (c->to_child >= 0)
		close(c->to_child);
	c->to_child = -1;
	while (!c->timed_out && st > 0) {
		st = read_message(c, deadline, &msg);
		if (st == 2)
			fail(c, "an answer to no pending request arrived after the flow");
		json_decref(msg);
		msg = NULL;
	}
	if (c->pid > 0)
		reaped = reap_until(c, deadline, &status);
	if (!reaped && c->pid > 0) {
		fprintf(stderr, "%s: the server did not exit within %d s; sending SIGTERM\n", PROG,
			grace_ms / 1000);
		kill(c->pid, SIGTERM);
		reaped = reap_until(c, now_ms() + KILL_GRACE_MS, &status);
	}
	if (!reaped && c->pid > 0) {
		fprintf(stderr, "%s: the server ignored SIGTERM; sending SIGKILL\n", PROG);
		kill(c->pid, SIGKILL);
		reaped = reap_until(c, now_ms() + KILL_GRACE_MS, &status);
	}
	if (!reaped)
		fprintf(stderr, "%s: could not reap the server\n", PROG);
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		fprintf(stderr, "%s: the server exited with status %d\n", PROG, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		fprintf(stderr, "%s: the server was killed by signal %d (%s)\n", PROG, WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	else
		rc = 0;
	return rc;
}

/* Parses a decimal in [min, max] into *out. Returns 0, or -1 when str is not one. */
static int parse_long(const char *str, long min, long max, long *out)
{
	int rc = -1;
	char *end;
	long v;

	errno = 0;
	v = strtol(str, &end, 10);
	if (errno != 0 || end == str || *end != '\0' || v < min || v > max)
		goto out;
	*out = v;
	rc = 0;
out:
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"log", required_argument, NULL, 'l'},
		{"flow", required_argument, NULL, 'f'},
		{"timeout", required_argument, NULL, 't'},
		{"name", required_argument, NULL, 'N'},
		{"version", required_argument, NULL, 'V'},
		{"protocol", required_argument, NULL, 'P'},
		{"caps", required_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int status = 2, ch, to_child = -1, from_child = -1;
	const char *log_path = NULL;
	const struct step *flow = flow_full, *s;
	long timeout = 20;
	struct client c;

	memset(&c, 0, sizeof c);
	c.pid = -1;
	c.to_child = -1;
	c.from.fd = -1;
	c.next_id = 1;
	c.name = "mcptap-test-client";
	c.version = "1.0.0";
	c.protocol = PROTOCOL_VERSION;
	while ((ch = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l': log_path = optarg; break;
		case 'f':
			if (strcmp(optarg, "basic") == 0)
				flow = flow_basic;
			else if (strcmp(optarg, "full") == 0)
				flow = flow_full;
			else
				goto usage;
			break;
		case 't':
			if (parse_long(optarg, 1, 86400, &timeout) != 0)
				goto usage;
			break;
		case 'N': c.name = optarg; break;
		case 'V': c.version = optarg; break;
		case 'P': c.protocol = optarg; break;
		case 'C':
			json_decref(c.caps);
			c.caps = json_loads(optarg, 0, NULL);
			if (!json_is_object(c.caps)) {
				fprintf(stderr, "%s: --caps takes a JSON object\n", PROG);
				goto usage;
			}
			break;
		default: goto usage;
		}
	}
	if (optind >= argc)
		goto usage;
	if (c.caps == NULL)
		c.caps = must(json_pack("{s:{}, s:{s:b}}", "sampling", "roots", "listChanged", 1));
	status = 1;
	c.timeout_ms = (int)timeout * 1000;
	signal(SIGPIPE, SIG_IGN);
	if (log_path != NULL) {
		c.log = fopen(log_path, "we");
		if (c.log == NULL) {
			fprintf(stderr, "%s: cannot open '%s': %s\n", PROG, log_path, strerror(errno));
			goto out;
		}
	}
	if (spawn_child(argv + optind, &c.pid, &to_child, &from_child) != 0) {
		fprintf(stderr, "%s: cannot run '%s': %s\n", PROG, argv[optind], strerror(errno));
		goto out;
	}
	c.to_child = to_child;
	if (linebuf_init(&c.from, from_child) != 0) {
		close(from_child);
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	for (s = flow; s->name != NULL && !c.dead; s++) {
		c.step = s->name;
		s->fn(&c);
	}
	c.step = "shutdown";
	if (c.timed_out && c.pid > 0)
		kill(c.pid, SIGTERM);
	if (finish_child(&c, c.timed_out ? KILL_GRACE_MS : c.timeout_ms) == 0 && c.failures == 0)
		status = 0;
	fprintf(stderr, "%s: %s: %ld messages sent, %ld received, %d failed checks\n", PROG,
		status == 0 ? "ok" : "FAILED", c.sent, c.received, c.failures);
	goto out;
usage:
	fprintf(stderr,
		"usage: %s [--log FILE] [--flow basic|full] [--timeout SEC] [--name NAME] "
		"[--version VERSION] [--protocol REVISION] [--caps JSON] -- CMD ARGS...\n",
		PROG);
out:
	if (c.to_child >= 0)
		close(c.to_child);
	linebuf_release(&c.from);
	if (c.log != NULL)
		fclose(c.log);
	free(c.first_uri);
	json_decref(c.first_prompt);
	json_decref(c.caps);
	return status;
}
