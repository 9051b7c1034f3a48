/*
 * tests/peers/mcp-server.c - a small, correct MCP server over stdio, for mcptap's tests.
 *
 * Reads newline-delimited JSON-RPC 2.0 on stdin and writes one message per line on
 * stdout, flushed after each. It speaks protocol revisions 2024-11-05, 2025-03-26,
 * 2025-06-18 and 2025-11-25 and offers a few tools (echo, add, progress, sample, log,
 * fail), two static resources and a resource template, two prompts, logging and a
 * minimal completion/complete. The "sample" tool sends a sampling/createMessage
 * request to the client and waits for its answer; requests that arrive meanwhile are
 * queued (ping is answered at once) and handled afterwards.
 *
 * Options for fault tests:
 *   --stderr-lines N  write N lines "server log line K" to stderr at start
 *   --noise           write "hello from server" (not JSON) on stdout before the
 *                     first initialize answer
 *   --crash-after N   abort() after answering N requests
 *   --exit N          exit with status N at stdin EOF
 *   --ignore-term     ignore SIGTERM
 *   --hang            at stdin EOF, sleep forever instead of exiting
 *
 * Diagnostics go to stderr only. Exit status: 0 at stdin EOF (or the --exit value),
 * 1 on an I/O error, 2 on a usage error.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#define PROG "mcp-server"
#define SERVER_NAME "mcptap-test-server"
#define SERVER_VERSION "1.0.0"
#define DEFAULT_VERSION "2025-06-18"
#define MAX_LINE ((size_t)256 << 20) /* longest input line accepted */
#define READ_CHUNK 65536

/* JSON-RPC and MCP error codes. */
#define E_PARSE (-32700)
#define E_INVALID_REQUEST (-32600)
#define E_NO_METHOD (-32601)
#define E_INVALID_PARAMS (-32602)
#define E_INTERNAL (-32603)
#define E_NO_RESOURCE (-32002)

static const char *const versions[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};

/* RFC 5424 levels as MCP names them, lowest first. */
static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
					 "error", "critical", "alert",  "emergency"};
#define LEVEL_INFO 1

/* Results of linebuf_next(). */
enum lb_status {
	LB_LINE = 1,    /* a line was returned */
	LB_EOF = 0,     /* end of input, nothing left */
	LB_ERROR = -1,  /* read error, errno set */
	LB_TOOLONG = -2 /* a line longer than MAX_LINE was skipped */
};

/* Buffered reader of newline-terminated lines from a file descriptor. */
struct linebuf {
	int fd;         /* borrowed */
	char *buf;      /* owned; unread bytes are buf[start..end) */
	size_t cap;     /* size of buf */
	size_t start;   /* first unread byte */
	size_t end;     /* one past the last byte read */
	size_t scanned; /* bytes after start known to hold no '\n' */
	int eof;        /* read() returned 0 */
	int skipping;   /* discarding the rest of an overlong line */
};

/* A JSON-RPC error to send back. */
struct rpc_error {
	int code;
	char message[256];
};

/* Command-line settings. */
struct options {
	long stderr_lines;
	long crash_after; /* 0: never */
	int exit_status;
	int noise;
	int ignore_term;
	int hang;
};

/* The server's state. */
struct server {
	struct options opt;
	struct linebuf in;
	json_t *pending;       /* owned array of requests queued during sampling */
	char version[16];      /* negotiated protocol version */
	int client_sampling;   /* the client declared the sampling capability */
	int log_level;         /* index in log_levels[] of the least severe level sent */
	long answered;         /* responses sent to requests */
	unsigned long next_id; /* for server-to-client request ids "srv-N" */
	int noise_done;        /* the --noise line was written */
	int io_failed;         /* writing to stdout failed */
};

/* One request method: fills *result (new reference) and returns 0, or fills *err and
 * returns -1. params is borrowed and always an object. */
struct method {
	const char *name;
	int (*fn)(struct server *s, json_t *params, json_t **result, struct rpc_error *err);
};

/* One tool: like a method, given the tools/call params and the arguments object. */
struct tool {
	const char *name;
	const char *description;
	int (*fn)(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err);
	const char *schema; /* inputSchema as JSON text */
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

/* Fills err with code and a formatted message; returns -1 for the caller to pass on. */
static int __attribute__((format(printf, 3, 4)))
set_error(struct rpc_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* Prepares lb to read fd. Returns 0, or -1 when out of memory. */
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

/* Releases what lb owns; lb may be zeroed. */
static void linebuf_release(struct linebuf *lb)
{
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

/* Returns the next line of lb in *line (borrowed, NUL-terminated, valid until the next
 * call) and its length in *len, without the "\n" or "\r\n". A last line without a
 * newline is returned at EOF. Returns an enum lb_status. */
static int linebuf_next(struct linebuf *lb, char **line, size_t *len)
{
	int rc = LB_ERROR;
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
			if (lb->skipping) {
				lb->skipping = 0;
				rc = LB_TOOLONG;
				goto out;
			}
			rc = LB_LINE;
			break;
		}
		lb->scanned = lb->end - lb->start;
		if (lb->eof) {
			if (lb->skipping) {
				lb->skipping = 0;
				lb->start = lb->end = lb->scanned = 0;
				rc = LB_TOOLONG;
				goto out;
			}
			if (lb->end == lb->start) {
				rc = LB_EOF;
				goto out;
			}
			/* linebuf_room() always leaves a spare byte for this NUL. */
			*line = lb->buf + lb->start;
			*len = lb->end - lb->start;
			lb->buf[lb->end] = '\0';
			lb->start = lb->end = lb->scanned = 0;
			rc = LB_LINE;
			break;
		}
		if (lb->scanned >= MAX_LINE) {
			lb->skipping = 1;
			lb->start = lb->end = lb->scanned = 0;
		}
		if (linebuf_room(lb) != 0) {
			errno = ENOMEM;
			goto out;
		}
		n = read(lb->fd, lb->buf + lb->end, lb->cap - lb->end - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		if (n == 0)
			lb->eof = 1;
		lb->end += (size_t)n;
	}
	if (*len > 0 && (*line)[*len - 1] == '\r')
		(*line)[--*len] = '\0';
out:
	return rc;
}

/* Writes msg (borrowed) as one line on stdout and flushes. Returns 0, or -1 (and sets
 * s->io_failed) when stdout is gone. */
static int send_msg(struct server *s, json_t *msg)
{
	int rc = -1;
	char *text = NULL;

	text = json_dumps(msg, JSON_COMPACT);
	if (text == NULL) {
		fprintf(stderr, "%s: cannot encode a message\n", PROG);
		goto out;
	}
	if (fputs(text, stdout) == EOF || putchar('\n') == EOF || fflush(stdout) == EOF) {
		if (!s->io_failed)
			fprintf(stderr, "%s: cannot write to stdout: %s\n", PROG, strerror(errno));
		s->io_failed = 1;
		goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

/* Counts one answered request and aborts when --crash-after says so. */
static void count_answer(struct server *s)
{
	s->answered++;
	if (s->opt.crash_after > 0 && s->answered >= s->opt.crash_after) {
		fprintf(stderr, "%s: crashing after %ld answers as asked\n", PROG, s->answered);
		abort();
	}
}

/* Sends a result for request id (borrowed). result is stolen. Returns 0 or -1. */
static int send_result(struct server *s, json_t *id, json_t *result)
{
	int rc;
	json_t *msg;

	msg = must(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
	rc = send_msg(s, msg);
	json_decref(msg);
	count_answer(s);
	return rc;
}

/* Sends an error answer. id is borrowed and may be NULL (sent as null). Counts as an
 * answer when id is not NULL. Returns 0 or -1. */
static int send_error(struct server *s, json_t *id, int code, const char *message)
{
	int rc;
	json_t *msg;

	msg = must(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			     id != NULL ? id : json_null(), "error", "code", code, "message", message));
	rc = send_msg(s, msg);
	json_decref(msg);
	if (id != NULL)
		count_answer(s);
	return rc;
}

/* Sends a notification; params is stolen. Returns 0 or -1. */
static int send_notification(struct server *s, const char *method, json_t *params)
{
	int rc;
	json_t *msg;

	msg = must(json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params));
	rc = send_msg(s, msg);
	json_decref(msg);
	return rc;
}

/* Returns a new CallToolResult holding one text block, with isError when is_error. */
static json_t *text_result(const char *text, int is_error)
{
	json_t *r;

	r = must(json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text));
	if (is_error)
		json_object_set_new(r, "isError", json_true());
	return r;
}

/* Returns 1 when v is a valid JSON-RPC request id for MCP: a string or an integer. */
static int valid_id(const json_t *v)
{
	return json_is_string(v) || json_is_integer(v);
}

/* Returns 1 when the negotiated version is at least v (the dates sort as strings). */
static int version_at_least(const struct server *s, const char *v)
{
	return strcmp(s->version, v) >= 0;
}

/* initialize: negotiates the version and describes the server. */
static int m_initialize(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	const char *want;
	json_t *caps, *sampling;
	size_t i;

	want = json_string_value(json_object_get(params, "protocolVersion"));
	if (want == NULL) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: protocolVersion must be a string");
		goto out;
	}
	caps = json_object_get(params, "capabilities");
	if (caps != NULL && !json_is_object(caps)) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: capabilities must be an object");
		goto out;
	}
	snprintf(s->version, sizeof s->version, "%s", DEFAULT_VERSION);
	for (i = 0; i < sizeof versions / sizeof versions[0]; i++)
		if (strcmp(want, versions[i]) == 0)
			snprintf(s->version, sizeof s->version, "%s", versions[i]);
	sampling = json_object_get(caps, "sampling");
	s->client_sampling = json_is_object(sampling);

	if (s->opt.noise && !s->noise_done) {
		s->noise_done = 1;
		fputs("hello from server\n", stdout);
		fflush(stdout);
	}
	*result = must(json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}},"
				 " s:{s:s, s:s}}",
				 "protocolVersion", s->version, "capabilities", "tools", "listChanged", 1,
				 "resources", "subscribe", 1, "listChanged", 1, "prompts", "listChanged", 0,
				 "logging", "serverInfo", "name", SERVER_NAME, "version", SERVER_VERSION));
	if (version_at_least(s, "2025-03-26"))
		json_object_set_new(json_object_get(*result, "capabilities"), "completions", json_object());
	rc = 0;
out:
	return rc;
}

/* ping: an empty result. */
static int m_ping(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	(void)s;
	(void)params;
	(void)err;
	*result = must(json_object());
	return 0;
}

/* Tool "echo": returns arguments.text. */
static int t_echo(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *text;

	(void)s;
	(void)params;
	text = json_object_get(args, "text");
	if (!json_is_string(text)) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: echo needs a string 'text'");
		goto out;
	}
	*result = must(json_pack("{s:[{s:s, s:O}]}", "content", "type", "text", "text", text));
	rc = 0;
out:
	return rc;
}

/* Formats the number x in buf as the shortest decimal that reads back the same. */
static void format_double(char *buf, size_t size, double x)
{
	snprintf(buf, size, "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, size, "%.17g", x);
}

/* Tool "add": the sum of the numbers a and b, as text. */
static int t_add(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *a, *b;
	json_int_t sum;
	char text[64];

	(void)s;
	(void)params;
	a = json_object_get(args, "a");
	b = json_object_get(args, "b");
	if (!json_is_number(a) || !json_is_number(b)) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: add needs numbers 'a' and 'b'");
		goto out;
	}
	if (json_is_integer(a) && json_is_integer(b) &&
	    !__builtin_add_overflow(json_integer_value(a), json_integer_value(b), &sum))
		snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, sum);
	else
		format_double(text, sizeof text, json_number_value(a) + json_number_value(b));
	*result = text_result(text, 0);
	rc = 0;
out:
	return rc;
}

/* Tool "progress": three notifications/progress when the request has a progress token,
 * then the result. */
static int t_progress(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *token;
	int k;

	(void)args;
	token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (token != NULL && !valid_id(token)) {
		set_error(err, E_INVALID_PARAMS,
			  "Invalid params: _meta.progressToken must be a string or an integer");
		goto out;
	}
	for (k = 1; token != NULL && k <= 3; k++)
		send_notification(s, "notifications/progress",
				  must(json_pack("{s:O, s:i, s:i}", "progressToken", token, "progress", k,
						 "total", 3)));
	*result = text_result(token != NULL ? "progress done (3 steps)" : "progress done (no progress token)",
			      0);
	rc = 0;
out:
	return rc;
}

/* Returns the first text of a sampling result's content (an object or, since
 * 2025-11-25, possibly an array of blocks), or NULL. The string is borrowed. */
static const char *sampled_text(json_t *result)
{
	const char *text = NULL;
	json_t *content, *block;
	size_t i;

	content = json_object_get(result, "content");
	if (json_is_object(content) &&
	    strcmp(json_string_value(json_object_get(content, "type")) ?: "", "text") == 0)
		text = json_string_value(json_object_get(content, "text"));
	json_array_foreach(content, i, block)
	{
		if (text == NULL &&
		    strcmp(json_string_value(json_object_get(block, "type")) ?: "", "text") == 0)
			text = json_string_value(json_object_get(block, "text"));
	}
	return text;
}

static int handle_message(struct server *s, json_t *msg);

/* Reads input until the answer to the request with id want arrives; answers ping and
 * queues other requests meanwhile. Returns 0 with *answer (new reference to the whole
 * response), or -1 at EOF or on an input error. */
static int await_answer(struct server *s, const char *want, json_t **answer)
{
	int rc = -1, st;
	char *line;
	size_t len;
	json_t *msg = NULL, *id, *method;
	json_error_t jerr;

	for (;;) {
		json_decref(msg);
		msg = NULL;
		st = linebuf_next(&s->in, &line, &len);
		if (st == LB_EOF || st == LB_ERROR)
			goto out;
		if (st == LB_TOOLONG) {
			send_error(s, NULL, E_PARSE, "Parse error: line too long");
			continue;
		}
		if (strspn(line, " \t") == len)
			continue;
		msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		if (msg == NULL) {
			send_error(s, NULL, E_PARSE, "Parse error");
			continue;
		}
		id = json_object_get(msg, "id");
		method = json_object_get(msg, "method");
		if (method == NULL && json_is_string(id) && strcmp(json_string_value(id), want) == 0) {
			*answer = msg;
			msg = NULL;
			rc = 0;
			goto out;
		}
		if (json_is_string(method) && (id == NULL || strcmp(json_string_value(method), "ping") == 0))
			handle_message(s, msg);
		else if (json_is_object(msg) && method == NULL &&
			 (json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL))
			fprintf(stderr, "%s: ignoring an answer to an unknown request\n", PROG);
		else
			json_array_append(s->pending, msg);
	}
out:
	json_decref(msg);
	return rc;
}

/* Tool "sample": asks the client for a completion of arguments.prompt with
 * sampling/createMessage and returns the reply's text. */
static int t_sample(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *prompt, *req, *answer = NULL, *res, *e;
	const char *text;
	char id[32], buf[320];

	(void)params;
	prompt = json_object_get(args, "prompt");
	if (!json_is_string(prompt)) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: sample needs a string 'prompt'");
		goto out;
	}
	if (!s->client_sampling) {
		*result = text_result("the client did not declare the sampling capability", 1);
		rc = 0;
		goto out;
	}
	snprintf(id, sizeof id, "srv-%lu", ++s->next_id);
	req = must(json_pack("{s:s, s:s, s:s, s:{s:[{s:s, s:{s:s, s:O}}], s:i}}", "jsonrpc", "2.0", "id", id,
			     "method", "sampling/createMessage", "params", "messages", "role", "user",
			     "content", "type", "text", "text", prompt, "maxTokens", 50));
	send_msg(s, req);
	json_decref(req);
	if (await_answer(s, id, &answer) != 0) {
		set_error(err, E_INTERNAL, "input ended before the sampling answer arrived");
		goto out;
	}
	res = json_object_get(answer, "result");
	e = json_object_get(answer, "error");
	text = sampled_text(res);
	if (json_is_object(e)) {
		snprintf(buf, sizeof buf, "sampling failed: %s",
			 json_string_value(json_object_get(e, "message")) ?: "(no message)");
		*result = text_result(buf, 1);
	} else if (text == NULL) {
		*result = text_result("sampling answer has no text content", 1);
	} else {
		*result = text_result(text, 0);
	}
	rc = 0;
out:
	json_decref(answer);
	return rc;
}

/* Tool "log": a notifications/message at level info (unless logging/setLevel raised
 * the level), then the result. */
static int t_log(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *data;

	(void)params;
	data = json_object_get(args, "message");
	if (data != NULL && !json_is_string(data)) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: 'message' must be a string");
		goto out;
	}
	data = data != NULL ? json_incref(data) : must(json_string("log tool called"));
	if (s->log_level <= LEVEL_INFO)
		send_notification(s, "notifications/message",
				  must(json_pack("{s:s, s:s, s:O}", "level", "info", "logger", SERVER_NAME,
						 "data", data)));
	json_decref(data);
	*result = text_result("logged", 0);
	rc = 0;
out:
	return rc;
}

/* Tool "fail": a result with isError. */
static int t_fail(struct server *s, json_t *params, json_t *args, json_t **result, struct rpc_error *err)
{
	(void)s;
	(void)params;
	(void)args;
	(void)err;
	*result = text_result("the tool failed, as asked", 1);
	return 0;
}

static const struct tool tools[] = {
	{"echo", "Returns the given text", t_echo,
	 "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
	 "\"required\":[\"text\"]}"},
	{"add", "Adds two numbers", t_add,
	 "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
	 "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}"},
	{"progress", "Sends three progress notifications when given a progress token", t_progress,
	 "{\"type\":\"object\",\"properties\":{}}"},
	{"sample", "Asks the client's model to answer a prompt", t_sample,
	 "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\"}},"
	 "\"required\":[\"prompt\"]}"},
	{"log", "Sends a log message notification", t_log,
	 "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}}}"},
	{"fail", "Always returns a tool error", t_fail, "{\"type\":\"object\",\"properties\":{}}"},
};

/* Returns 0 when a "cursor" in params is absent or a string, else fills err, -1. */
static int check_cursor(json_t *params, struct rpc_error *err)
{
	int rc = 0;
	json_t *cursor = json_object_get(params, "cursor");

	if (cursor != NULL && !json_is_string(cursor))
		rc = set_error(err, E_INVALID_PARAMS, "Invalid params: cursor must be a string");
	return rc;
}

/* tools/list: every tool with its input schema. */
static int m_tools_list(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *list, *schema;
	json_error_t jerr;
	size_t i;

	(void)s;
	if (check_cursor(params, err) != 0)
		goto out;
	list = must(json_array());
	for (i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		schema = must(json_loads(tools[i].schema, 0, &jerr));
		json_array_append_new(list,
				      must(json_pack("{s:s, s:s, s:o}", "name", tools[i].name, "description",
						     tools[i].description, "inputSchema", schema)));
	}
	*result = must(json_pack("{s:o}", "tools", list));
	rc = 0;
out:
	return rc;
}

/* tools/call: runs a tool; an unknown tool is an invalid-params error. */
static int m_tools_call(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	const char *name;
	json_t *args, *empty = NULL;
	size_t i;

	name = json_string_value(json_object_get(params, "name"));
	args = json_object_get(params, "arguments");
	if (name == NULL) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: name must be a string");
		goto out;
	}
	if (args != NULL && !json_is_object(args)) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: arguments must be an object");
		goto out;
	}
	if (args == NULL)
		args = empty = must(json_object());
	set_error(err, E_INVALID_PARAMS, "Unknown tool: %s", name);
	for (i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (strcmp(name, tools[i].name) == 0)
			rc = tools[i].fn(s, params, args, result, err);
out:
	json_decref(empty);
	return rc;
}

/* The static resources: uri, name, mimeType, text. */
static const char *const resources[][4] = {
	{"test://static/hello.txt", "hello.txt", "text/plain", "Hello from mcptap-test-server.\n"},
	{"test://static/data.json", "data.json", "application/json", "{\"answer\":42}"},
};
#define TEMPLATE_URI "test://dynamic/{name}"
#define TEMPLATE_PREFIX "test://dynamic/"

/* resources/list: the static resources. */
static int m_resources_list(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	json_t *list;
	size_t i;

	(void)s;
	if (check_cursor(params, err) != 0)
		goto out;
	list = must(json_array());
	for (i = 0; i < sizeof resources / sizeof resources[0]; i++)
		json_array_append_new(list, must(json_pack("{s:s, s:s, s:s}", "uri", resources[i][0], "name",
							   resources[i][1], "mimeType", resources[i][2])));
	*result = must(json_pack("{s:o}", "resources", list));
	rc = 0;
out:
	return rc;
}

/* resources/templates/list: one template, test://dynamic/{name}. */
static int m_templates_list(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;

	(void)s;
	if (check_cursor(params, err) != 0)
		goto out;
	*result = must(json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "resourceTemplates", "uriTemplate",
				 TEMPLATE_URI, "name", "dynamic", "description",
				 "A text resource made from its name", "mimeType", "text/plain"));
	rc = 0;
out:
	return rc;
}

/* resources/read: a static resource or one made from the template. */
static int m_resources_read(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	const char *uri;
	size_t i, plen = strlen(TEMPLATE_PREFIX);
	char text[512];

	(void)s;
	uri = json_string_value(json_object_get(params, "uri"));
	if (uri == NULL) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: uri must be a string");
		goto out;
	}
	*result = NULL;
	for (i = 0; *result == NULL && i < sizeof resources / sizeof resources[0]; i++)
		if (strcmp(uri, resources[i][0]) == 0)
			*result = must(json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
						 resources[i][2], "text", resources[i][3]));
	if (*result == NULL && strncmp(uri, TEMPLATE_PREFIX, plen) == 0 && uri[plen] != '\0' &&
	    strlen(uri) < 256) {
		snprintf(text, sizeof text, "dynamic resource %s", uri + plen);
		*result = must(json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
					 "text/plain", "text", text));
	}
	if (*result == NULL) {
		set_error(err, E_NO_RESOURCE, "Resource not found: %.200s", uri);
		goto out;
	}
	rc = 0;
out:
	return rc;
}

/* resources/subscribe and resources/unsubscribe: check the uri, answer {}. */
static int m_subscribe(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;

	(void)s;
	if (!json_is_string(json_object_get(params, "uri"))) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: uri must be a string");
		goto out;
	}
	*result = must(json_object());
	rc = 0;
out:
	return rc;
}

/* prompts/list: "greet" (one required argument) and "simple" (none). */
static int m_prompts_list(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;

	(void)s;
	if (check_cursor(params, err) != 0)
		goto out;
	*result = must(json_pack("{s:[{s:s, s:s, s:[{s:s, s:s, s:b}]}, {s:s, s:s}]}", "prompts", "name",
				 "greet", "description", "Greets someone by name", "arguments", "name",
				 "name", "description", "Who to greet", "required", 1, "name", "simple",
				 "description", "A prompt without arguments"));
	rc = 0;
out:
	return rc;
}

/* prompts/get: the messages of a prompt; a missing required argument is an error. */
static int m_prompts_get(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	const char *name, *who = NULL;
	json_t *args, *v;
	const char *key;
	char text[512];

	(void)s;
	name = json_string_value(json_object_get(params, "name"));
	args = json_object_get(params, "arguments");
	if (name == NULL || (args != NULL && !json_is_object(args))) {
		set_error(err, E_INVALID_PARAMS,
			  "Invalid params: name must be a string, arguments an object");
		goto out;
	}
	json_object_foreach(args, key, v)
	{
		if (!json_is_string(v)) {
			set_error(err, E_INVALID_PARAMS,
				  "Invalid params: prompt argument values must be strings");
			goto out;
		}
	}
	if (strcmp(name, "greet") == 0) {
		who = json_string_value(json_object_get(args, "name"));
		if (who == NULL) {
			set_error(err, E_INVALID_PARAMS,
				  "Invalid params: prompt 'greet' needs argument 'name'");
			goto out;
		}
		snprintf(text, sizeof text, "Please greet %.400s warmly.", who);
	} else if (strcmp(name, "simple") == 0) {
		snprintf(text, sizeof text, "Say hello.");
	} else {
		set_error(err, E_INVALID_PARAMS, "Unknown prompt: %.200s", name);
		goto out;
	}
	*result = must(json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}]}", "description",
				 who != NULL ? "Greets someone by name" : "A prompt without arguments",
				 "messages", "role", "user", "content", "type", "text", "text", text));
	rc = 0;
out:
	return rc;
}

/* logging/setLevel: sets the least severe level of the messages sent. */
static int m_set_level(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	int rc = -1;
	const char *level;
	size_t i;

	level = json_string_value(json_object_get(params, "level"));
	for (i = 0; level != NULL && i < sizeof log_levels / sizeof log_levels[0]; i++)
		if (strcmp(level, log_levels[i]) == 0)
			break;
	if (level == NULL || i == sizeof log_levels / sizeof log_levels[0]) {
		set_error(err, E_INVALID_PARAMS, "Invalid params: unknown logging level");
		goto out;
	}
	s->log_level = (int)i;
	*result = must(json_object());
	rc = 0;
out:
	return rc;
}

/* completion/complete: names for the greet prompt's "name" and the template's {name}. */
static int m_complete(struct server *s, json_t *params, json_t **result, struct rpc_error *err)
{
	static const char *const people[] = {"Alice", "Bob", "Carol"};
	static const char *const things[] = {"hello", "world"};
	int rc = -1;
	json_t *ref, *arg, *values;
	const char *type, *ref_name, *ref_uri, *arg_name, *value;
	const char *const *pool = NULL;
	size_t n = 0, i;

	(void)s;
	ref = json_object_get(params, "ref");
	arg = json_object_get(params, "argument");
	type = json_string_value(json_object_get(ref, "type"));
	arg_name = json_string_value(json_object_get(arg, "name"));
	value = json_string_value(json_object_get(arg, "value"));
	if (type == NULL || arg_name == NULL || value == NULL) {
		set_error(err, E_INVALID_PARAMS,
			  "Invalid params: need ref.type, argument.name and argument.value");
		goto out;
	}
	ref_name = json_string_value(json_object_get(ref, "name"));
	ref_uri = json_string_value(json_object_get(ref, "uri"));
	if (strcmp(type, "ref/prompt") == 0 && ref_name != NULL && strcmp(ref_name, "greet") == 0 &&
	    strcmp(arg_name, "name") == 0) {
		pool = people;
		n = sizeof people / sizeof people[0];
	} else if (strcmp(type, "ref/resource") == 0 && ref_uri != NULL &&
		   strcmp(ref_uri, TEMPLATE_URI) == 0 && strcmp(arg_name, "name") == 0) {
		pool = things;
		n = sizeof things / sizeof things[0];
	}
	values = must(json_array());
	for (i = 0; i < n; i++)
		if (strncmp(pool[i], value, strlen(value)) == 0)
			json_array_append_new(values, must(json_string(pool[i])));
	*result = must(json_pack("{s:{s:o, s:I, s:b}}", "completion", "values", values, "total",
				 (json_int_t)json_array_size(values), "hasMore", 0));
	rc = 0;
out:
	return rc;
}

static const struct method methods[] = {
	{"initialize", m_initialize},
	{"ping", m_ping},
	{"tools/list", m_tools_list},
	{"tools/call", m_tools_call},
	{"resources/list", m_resources_list},
	{"resources/read", m_resources_read},
	{"resources/templates/list", m_templates_list},
	{"resources/subscribe", m_subscribe},
	{"resources/unsubscribe", m_subscribe},
	{"prompts/list", m_prompts_list},
	{"prompts/get", m_prompts_get},
	{"logging/setLevel", m_set_level},
	{"completion/complete", m_complete},
};

/* Consumes a notification from the client; none is ever answered. Returns 0. */
static int handle_notification(struct server *s, const char *method, json_t *params)
{
	(void)s;
	(void)params;
	if (strcmp(method, "notifications/initialized") != 0 &&
	    strcmp(method, "notifications/cancelled") != 0 &&
	    strcmp(method, "notifications/roots/list_changed") != 0 &&
	    strcmp(method, "notifications/progress") != 0)
		fprintf(stderr, "%s: ignoring notification %s\n", PROG, method);
	return 0;
}

/* Answers one request. id is borrowed. Returns 0, or -1 when stdout failed. */
static int handle_request(struct server *s, json_t *id, const char *method, json_t *params)
{
	int rc = -1, found = 0;
	json_t *result = NULL, *empty = NULL;
	struct rpc_error err = {0, ""};
	size_t i;

	if (params != NULL && !json_is_object(params)) {
		rc = send_error(s, id, E_INVALID_PARAMS, "Invalid params: params must be an object");
		goto out;
	}
	if (params == NULL)
		params = empty = must(json_object());
	for (i = 0; !found && i < sizeof methods / sizeof methods[0]; i++) {
		if (strcmp(method, methods[i].name) == 0) {
			found = 1;
			if (methods[i].fn(s, params, &result, &err) == 0)
				rc = send_result(s, id, result);
			else
				rc = send_error(s, id, err.code, err.message);
		}
	}
	if (!found)
		rc = send_error(s, id, E_NO_METHOD, "Method not found");
out:
	json_decref(empty);
	return rc;
}

/* Classifies one decoded message (borrowed) and handles it. Returns 0, or -1 when
 * stdout failed. */
static int handle_message(struct server *s, json_t *msg)
{
	int rc = 0;
	json_t *id, *method, *version;

	if (!json_is_object(msg)) {
		rc = send_error(s, NULL, E_INVALID_REQUEST,
				json_is_array(msg) ? "Invalid Request: batches are not supported"
						   : "Invalid Request: not an object");
		goto out;
	}
	id = json_object_get(msg, "id");
	method = json_object_get(msg, "method");
	version = json_object_get(msg, "jsonrpc");
	if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0 ||
	    (method != NULL && !json_is_string(method)) || (id != NULL && !valid_id(id))) {
		rc = send_error(s, valid_id(id) ? id : NULL, E_INVALID_REQUEST, "Invalid Request");
		goto out;
	}
	if (method != NULL && id == NULL)
		rc = handle_notification(s, json_string_value(method), json_object_get(msg, "params"));
	else if (method != NULL)
		rc = handle_request(s, id, json_string_value(method), json_object_get(msg, "params"));
	else if (id != NULL &&
		 (json_object_get(msg, "result") != NULL || json_object_get(msg, "error") != NULL))
		fprintf(stderr, "%s: ignoring an answer to an unknown request\n", PROG);
	else
		rc = send_error(s, valid_id(id) ? id : NULL, E_INVALID_REQUEST, "Invalid Request");
out:
	return rc;
}

/* Decodes and handles one input line. Returns 0, or -1 when stdout failed. */
static int handle_line(struct server *s, const char *line, size_t len)
{
	int rc = 0;
	json_t *msg;
	json_error_t jerr;

	if (strspn(line, " \t") == len)
		goto out;
	msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (msg == NULL) {
		rc = send_error(s, NULL, E_PARSE, "Parse error");
		goto out;
	}
	rc = handle_message(s, msg);
	json_decref(msg);
out:
	return rc;
}

/* Serves until stdin ends. Returns 0 at EOF, -1 on an input or output error. */
static int serve(struct server *s)
{
	int rc = -1, st;
	char *line;
	size_t len;
	json_t *msg;

	while (!s->io_failed) {
		if (json_array_size(s->pending) > 0) {
			msg = json_incref(json_array_get(s->pending, 0));
			json_array_remove(s->pending, 0);
			handle_message(s, msg);
			json_decref(msg);
			continue;
		}
		st = linebuf_next(&s->in, &line, &len);
		if (st == LB_EOF) {
			rc = 0;
			break;
		}
		if (st == LB_ERROR) {
			fprintf(stderr, "%s: cannot read stdin: %s\n", PROG, strerror(errno));
			break;
		}
		if (st == LB_TOOLONG)
			send_error(s, NULL, E_PARSE, "Parse error: line too long");
		else
			handle_line(s, line, len);
	}
	return rc;
}

/* Parses a decimal in [min, max] into *out. Returns 0, or -1 when s is not one. */
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

/* Parses the command line into *opt. Returns 0, or -1 after printing a usage error. */
static int parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{"stderr-lines", required_argument, NULL, 's'},
		{"noise", no_argument, NULL, 'n'},
		{"crash-after", required_argument, NULL, 'c'},
		{"exit", required_argument, NULL, 'e'},
		{"ignore-term", no_argument, NULL, 't'},
		{"hang", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int rc = -1, ch;
	long v;

	memset(opt, 0, sizeof *opt);
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (parse_long(optarg, 0, LONG_MAX, &opt->stderr_lines) != 0)
				goto bad;
			break;
		case 'c':
			if (parse_long(optarg, 1, LONG_MAX, &opt->crash_after) != 0)
				goto bad;
			break;
		case 'e':
			if (parse_long(optarg, 0, 255, &v) != 0)
				goto bad;
			opt->exit_status = (int)v;
			break;
		case 'n': opt->noise = 1; break;
		case 't': opt->ignore_term = 1; break;
		case 'H': opt->hang = 1; break;
		default: goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	rc = 0;
	goto out;
bad:
	fprintf(stderr, "%s: bad number '%s'\n", PROG, optarg);
usage:
	fprintf(stderr,
		"usage: %s [--stderr-lines N] [--noise] [--crash-after N] [--exit N]"
		" [--ignore-term] [--hang]\n",
		PROG);
out:
	return rc;
}

int main(int argc, char **argv)
{
	int status = 2;
	struct server s;
	long k;

	memset(&s, 0, sizeof s);
	if (parse_options(argc, argv, &s.opt) != 0)
		goto out;
	status = 1;
	signal(SIGPIPE, SIG_IGN);
	if (s.opt.ignore_term)
		signal(SIGTERM, SIG_IGN);
	for (k = 1; k <= s.opt.stderr_lines; k++)
		fprintf(stderr, "server log line %ld\n", k);
	snprintf(s.version, sizeof s.version, "%s", DEFAULT_VERSION);
	s.log_level = 0;
	s.pending = must(json_array());
	if (linebuf_init(&s.in, STDIN_FILENO) != 0) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		goto out;
	}
	if (serve(&s) != 0)
		goto out;
	while (s.opt.hang)
		pause();
	status = s.opt.exit_status;
out:
	linebuf_release(&s.in);
	json_decref(s.pending);
	return status;
}
