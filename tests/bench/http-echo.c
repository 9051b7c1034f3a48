/*
 * tests/bench/http-echo.c - a minimal Streamable HTTP MCP echo server, for benchmarks.
 *
 * Usage: http-echo [--sse] PORT
 *
 * Listens on 127.0.0.1:PORT (0: any free port), prints the port it listens on as one
 * line on stdout, and serves until SIGTERM or SIGINT (then exits 0). Every POST
 * (whatever its path) holding a JSON-RPC request is answered 200 with
 *   {"jsonrpc":"2.0","id":<id>,"result":{}}
 * where <id> is the request's id token copied byte for byte; initialize gets a
 * minimal InitializeResult and an Mcp-Session-Id header (a new one per initialize).
 * The answer is a JSON body (Content-Type: application/json), or with --sse a
 * one-event stream (text/event-stream, "event: message\ndata: ...\n\n", sent
 * chunked as a streaming server would). A POST without a request (a notification or
 * a response) gets 202 with no body; anything else 405. Session ids are handed out
 * but not checked.
 *
 * Nothing is decoded: the scanner of jscan.h finds the top-level "id" and "method".
 *
 * Exit status: 0 after a signal, 1 when it cannot listen, 2 on a usage error.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "tests/bench/jscan.h"

#define PROG "http-echo"
#define MAX_BODY ((size_t)16 << 20) /* evhttp answers 413 beyond it */

/* What the request callback needs. */
struct echo {
	int sse;            /* answer requests as a one-event SSE stream */
	unsigned long next; /* the number in the next Mcp-Session-Id */
};

/* Stops the loop on SIGTERM or SIGINT. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopbreak(arg);
}

/* Appends the answer to a request with id token id[0..id_len) to b; initialize gets
 * a minimal InitializeResult. Returns 0, or -1 when out of memory. */
static int put_answer(struct evbuffer *b, const char *id, size_t id_len, int initialize)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char plain[] = ",\"result\":{}}";
	static const char init[] =
		",\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
		"\"serverInfo\":{\"name\":\"mcptap-http-echo\",\"version\":\"1.0.0\"}}}";
	int rc = -1;

	if (evbuffer_add(b, head, sizeof head - 1) != 0 || evbuffer_add(b, id, id_len) != 0)
		goto out;
	if (initialize ? evbuffer_add(b, init, sizeof init - 1) : evbuffer_add(b, plain, sizeof plain - 1))
		goto out;
	rc = 0;
out:
	return rc;
}

/* Answers one request (see the file's comment). */
static void on_request(struct evhttp_request *req, void *arg)
{
	struct echo *e = arg;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evbuffer *out = NULL;
	struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
	struct top t;
	const char *body;
	size_t len = evbuffer_get_length(in);
	int initialize;
	char sid[32];

	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		evhttp_add_header(oh, "Allow", "POST");
		evhttp_send_error(req, 405, "Method Not Allowed");
		goto out;
	}
	body = (const char *)evbuffer_pullup(in, -1);
	if (body == NULL || scan_top(body, len, &t) != 0 || t.id == NULL || t.method == NULL) {
		evhttp_send_reply(req, 202, "Accepted", NULL);
		goto out;
	}
	initialize = t.method_len == 12 && memcmp(t.method, "\"initialize\"", 12) == 0;
	out = evbuffer_new();
	if (out == NULL)
		goto oom;
	if (initialize) {
		snprintf(sid, sizeof sid, "echo-%lu", ++e->next);
		evhttp_add_header(oh, "Mcp-Session-Id", sid);
	}
	if (!e->sse) {
		if (put_answer(out, t.id, t.id_len, initialize) != 0)
			goto oom;
		evhttp_add_header(oh, "Content-Type", "application/json");
		evhttp_send_reply(req, 200, "OK", out);
		goto out;
	}
	if (evbuffer_add(out, "event: message\ndata: ", 21) != 0 ||
	    put_answer(out, t.id, t.id_len, initialize) != 0 || evbuffer_add(out, "\n\n", 2) != 0)
		goto oom;
	evhttp_add_header(oh, "Content-Type", "text/event-stream");
	evhttp_add_header(oh, "Cache-Control", "no-cache");
	evhttp_send_reply_start(req, 200, "OK");
	evhttp_send_reply_chunk(req, out);
	evhttp_send_reply_end(req);
	goto out;
oom:
	evhttp_send_error(req, 500, "out of memory");
out:
	if (out != NULL)
		evbuffer_free(out);
}

int main(int argc, char **argv)
{
	int status = 2, argi = 1;
	long port;
	char *end;
	struct echo e = {0, 0};
	struct event_base *base = NULL;
	struct evhttp *http = NULL;
	struct evhttp_bound_socket *bound;
	struct event *sigterm = NULL, *sigint = NULL;
	struct sockaddr_in sa;
	socklen_t salen = sizeof sa;

	if (argi < argc && strcmp(argv[argi], "--sse") == 0) {
		e.sse = 1;
		argi++;
	}
	if (argc - argi != 1)
		goto usage;
	errno = 0;
	port = strtol(argv[argi], &end, 10);
	if (errno != 0 || end == argv[argi] || *end != '\0' || port < 0 || port > 65535)
		goto usage;
	status = 1;
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	http = base != NULL ? evhttp_new(base) : NULL;
	if (http == NULL) {
		fprintf(stderr, "%s: cannot set up libevent\n", PROG);
		goto out;
	}
	evhttp_set_max_body_size(http, MAX_BODY);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_POST | EVHTTP_REQ_GET | EVHTTP_REQ_DELETE);
	evhttp_set_gencb(http, on_request, &e);
	bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", (ev_uint16_t)port);
	if (bound == NULL ||
	    getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&sa, &salen) != 0) {
		fprintf(stderr, "%s: cannot listen on 127.0.0.1:%ld: %s\n", PROG, port, strerror(errno));
		goto out;
	}
	sigterm = evsignal_new(base, SIGTERM, on_signal, base);
	sigint = evsignal_new(base, SIGINT, on_signal, base);
	if (sigterm == NULL || sigint == NULL || evsignal_add(sigterm, NULL) != 0 ||
	    evsignal_add(sigint, NULL) != 0) {
		fprintf(stderr, "%s: cannot catch signals\n", PROG);
		goto out;
	}
	printf("%u\n", (unsigned)ntohs(sa.sin_port));
	fflush(stdout);
	event_base_dispatch(base);
	status = 0;
	goto out;
usage:
	fprintf(stderr, "usage: %s [--sse] PORT\n", PROG);
out:
	if (sigterm != NULL)
		event_free(sigterm);
	if (sigint != NULL)
		event_free(sigint);
	if (http != NULL)
		evhttp_free(http);
	if (base != NULL)
		event_base_free(base);
	return status;
}
