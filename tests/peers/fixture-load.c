/*
 * fixture-load.c - load a rule fixture into a capture file as one session, so
 * that `mcptap analyze` can be run on it.
 *
 * usage: fixture-load FIXTURE FILE
 *
 * A fixture is text, one line per item:
 *   > MESSAGE     a line the client sent (stored as written, plus a newline)
 *   < MESSAGE     a line the server sent
 *   ! TEXT        a line of the server's stderr
 *   @t +N         the next item comes N ms later than it would (each item is
 *                 1 ms after the last otherwise)
 *   @args ...     extra `mcptap analyze` options (read by the test, ignored here)
 *   @max-message N  lines over N bytes are a capture gap, as with record's
 *                 --max-message (before the first item: the file is read once,
 *                 and may be a pipe)
 *   # ...         a comment; blank lines are ignored
 * Messages go through the same classifier and store code as `mcptap record`,
 * and answers are paired with requests the same way.
 *
 * An HTTP session (what `mcptap record --upstream` stores) is written through
 * the same writer calls as the HTTP tap: exchanges, messages tied to them,
 * the session's id. Its lines:
 *   @transport http|sse   the session's transport (before the first item)
 *   @session-id ID        the session's http_session_id: the Mcp-Session-Id, or
 *                         (sse) the endpoint's path and query that the tap
 *                         stores when the GET stream's first event is endpoint
 *   @headers [Name: value]...   headers every later request carries unless its
 *                         line names them (replaces the list; @headers alone
 *                         empties it); @headers+ adds to the list
 *   => METHOD TARGET [Name: value]...   a request arrives: a new exchange,
 *                         which becomes the current one; [-Name] leaves out a
 *                         default header; Last-Event-ID is also stored as the
 *                         exchange's last_event_id
 *   >! TEXT               right after =>: a request body that is not JSON-RPC
 *                         (stored on the exchange, as the tap does)
 *   <= STATUS TYPE [Name: value]...   the current exchange's response head;
 *                         TYPE is json | sse | empty | other, and a json or sse
 *                         TYPE adds its Content-Type unless one is given
 *   > MESSAGE             a client message: the current exchange's request body
 *   < MESSAGE             a server message: its JSON response body
 *   <@ [id=ID] [event=TYPE] [replayed] DATA   a server message: an SSE event's
 *                         data on the current exchange's stream (replayed: a
 *                         resent event id, as the tap marks it)
 *   <! TEXT               a response body that is not JSON-RPC (stored at the end)
 *   =| OUTCOME [ERROR]    the current exchange ends (complete, client-gone,
 *                         upstream-gone, timeout, unreachable, stopped);
 *                         exchanges not ended by the end of the file end complete
 *   ~ N                   the current exchange is the Nth opened (1 from the
 *                         first): a GET stream's events between POSTs
 * Each exchange and message takes the next seq, in the order of the lines.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "schema/store.h"
#include "tap/writer.h"

#define MAX_EXCHANGES 256

struct fx {
	int64_t seq;
	int ended;
	int head;
	char *body; /* <! TEXT, kept for the end (owned) */
	size_t body_len;
};

struct loader {
	const char *path;
	int64_t lineno;
	struct writer *w;
	int64_t seq; /* the last seq given */
	struct fx x[MAX_EXCHANGES];
	int nx, cur;      /* exchanges opened; the current one (index) or -1 */
	json_t *defaults; /* @headers: [[name, value], ...] */
	/* A request head not put yet: its body (>!) may follow. */
	int pending;
	struct writer_exchange pend;
	char pend_method[32];
	char *pend_target;
	json_t *pend_headers; /* [[name, value], ...] */
	char *pend_body;
	size_t pend_body_len;
};

static int fail(struct loader *l, const char *what)
{
	fprintf(stderr, "%s:%lld: %s\n", l->path, (long long)l->lineno, what);
	return 2;
}

/*
 * Parse "[Name: value] [-Name] ..." from p into out (an array of [name,
 * value]); a "-Name" goes to drop. 0, or -1 when malformed.
 */
static int parse_headers(const char *p, json_t *out, json_t *drop)
{
	while (*p) {
		const char *end, *colon;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (*p != '[')
			return -1;
		/* (The bracket that closes it: a value may hold brackets, "[redacted:...]".) */
		int depth = 0;
		for (end = p; *end; end++)
			if (*end == '[')
				depth++;
			else if (*end == ']' && --depth == 0)
				break;
		if (!*end)
			return -1;
		p++;
		if (*p == '-') {
			json_array_append_new(drop, json_stringn(p + 1, (size_t)(end - p - 1)));
		} else {
			if (!(colon = memchr(p, ':', (size_t)(end - p))))
				return -1;
			const char *v = colon + 1;
			while (*v == ' ')
				v++;
			json_array_append_new(
				out, json_pack("[s%,s%]", p, (size_t)(colon - p), v, (size_t)(end - v)));
		}
		p = end + 1;
	}
	return 0;
}

static int has_header(json_t *list, const char *name)
{
	size_t i;
	json_t *h;

	json_array_foreach(list, i,
			   h) if (!strcasecmp(json_string_value(json_array_get(h, 0)), name)) return 1;
	return 0;
}

/* A JSON list of [name, value] pairs as header fields (borrowed from it; free the array). */
static struct mt_hdr *header_fields(json_t *list, size_t *n)
{
	struct mt_hdr *h = calloc(json_array_size(list) + 1, sizeof(*h));
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e)
	{
		h[i].name = json_string_value(json_array_get(e, 0));
		h[i].value = json_string_value(json_array_get(e, 1));
	}
	*n = json_array_size(list);
	return h;
}

static void put_pending(struct loader *l)
{
	struct mt_hdr *h;

	if (!l->pending)
		return;
	l->pend.body = l->pend_body;
	l->pend.body_len = l->pend_body_len;
	h = header_fields(l->pend_headers, &l->pend.nh);
	l->pend.h = h;
	writer_put_exchange_begin(l->w, 0, &l->pend);
	free(h);
	free(l->pend_target);
	json_decref(l->pend_headers);
	free(l->pend_body);
	l->pend_target = l->pend_body = NULL;
	l->pend_headers = NULL;
	l->pend_body_len = 0;
	l->pending = 0;
}

static void end_exchange(struct loader *l, struct fx *f, const char *outcome, const char *error)
{
	writer_put_exchange_end(l->w, 0, f->seq, writer_clock(l->w), outcome, error, f->body, f->body_len);
	f->ended = 1;
	free(f->body);
	f->body = NULL;
}

/* One line of an HTTP fixture (n bytes, NUL-terminated). 0, or 2 when malformed. */
static int http_line(struct loader *l, char *line, size_t n)
{
	struct fx *f = l->cur >= 0 ? &l->x[l->cur] : NULL;

	if (!strncmp(line, ">! ", 3)) {
		if (!l->pending)
			return fail(l, "'>!' comes right after '=>'");
		l->pend_body = strdup(line + 3);
		l->pend_body_len = n - 3;
		return 0;
	}
	put_pending(l);
	if (!strncmp(line, "=> ", 3)) {
		char method[32], target[2048];
		int used = 0;
		json_t *hs = json_array(), *drop = json_array(), *all = json_array(), *h;
		size_t i;
		if (sscanf(line + 3, "%31s %2047s%n", method, target, &used) < 2 ||
		    parse_headers(line + 3 + used, hs, drop) || l->nx == MAX_EXCHANGES) {
			json_decref(hs);
			json_decref(drop);
			json_decref(all);
			return fail(l, "expected '=> METHOD TARGET [Name: value]...'");
		}
		json_array_foreach(l->defaults, i, h)
		{
			const char *name = json_string_value(json_array_get(h, 0));
			size_t k;
			json_t *d;
			int dropped = 0;
			json_array_foreach(drop, k, d) dropped |= !strcasecmp(json_string_value(d), name);
			if (!dropped && !has_header(hs, name))
				json_array_append(all, h);
		}
		json_array_extend(all, hs);
		l->cur = l->nx++;
		memset(&l->x[l->cur], 0, sizeof(l->x[l->cur]));
		l->x[l->cur].seq = ++l->seq;
		memset(&l->pend, 0, sizeof(l->pend));
		snprintf(l->pend_method, sizeof(l->pend_method), "%s", method);
		l->pend_target = strdup(target);
		l->pend_headers = json_incref(all);
		l->pend.seq = l->x[l->cur].seq;
		l->pend.conn = l->cur + 1;
		l->pend.method = l->pend_method;
		l->pend.target = l->pend_target;
		l->pending = 1;
		json_decref(hs);
		json_decref(drop);
		json_decref(all);
		return 0;
	}
	if (!strncmp(line, "~ ", 2)) {
		int k = atoi(line + 2);
		if (k < 1 || k > l->nx)
			return fail(l, "'~ N' names no exchange opened so far");
		l->cur = k - 1;
		return 0;
	}
	if (!f)
		return fail(l, "no exchange is open: '=> METHOD TARGET' first");
	if (!strncmp(line, "<= ", 3)) {
		int status, used = 0;
		char type[16];
		json_t *hs = json_array(), *drop = json_array();
		if (sscanf(line + 3, "%d %15s%n", &status, type, &used) < 2 ||
		    parse_headers(line + 3 + used, hs, drop)) {
			json_decref(hs);
			json_decref(drop);
			return fail(l, "expected '<= STATUS TYPE [Name: value]...'");
		}
		if (!has_header(hs, "Content-Type") && !strcmp(type, "json"))
			json_array_append_new(hs, json_pack("[s,s]", "Content-Type", "application/json"));
		if (!has_header(hs, "Content-Type") && !strcmp(type, "sse"))
			json_array_append_new(hs, json_pack("[s,s]", "Content-Type", "text/event-stream"));
		size_t nh;
		struct mt_hdr *hv = header_fields(hs, &nh);
		writer_put_exchange_head(l->w, 0, f->seq, status, hv, nh, type, writer_clock(l->w));
		f->head = 1;
		free(hv);
		json_decref(hs);
		json_decref(drop);
		return 0;
	}
	if (!strncmp(line, "=| ", 3)) {
		char outcome[32];
		int used = 0;
		if (sscanf(line + 3, "%31s%n", outcome, &used) < 1)
			return fail(l, "expected '=| OUTCOME [ERROR]'");
		const char *err = line + 3 + used;
		while (*err == ' ')
			err++;
		end_exchange(l, f, outcome, *err ? err : NULL);
		return 0;
	}
	if (!strncmp(line, "<! ", 3)) {
		free(f->body);
		f->body = strdup(line + 3);
		f->body_len = n - 3;
		return 0;
	}
	struct writer_http_msg m;
	memset(&m, 0, sizeof(m));
	m.exchange = f->seq;
	if (!strncmp(line, "<@", 2) && (line[2] == ' ' || !line[2])) {
		char *p = line + 2;
		char *id = NULL, *ev = NULL;
		for (;;) {
			while (*p == ' ')
				p++;
			if (!strncmp(p, "id=", 3) || !strncmp(p, "event=", 6)) {
				char *v = strchr(p, '=') + 1, *e = v + strcspn(v, " ");
				if (*p == 'i')
					id = v;
				else
					ev = v;
				p = *e ? e + 1 : e;
				*e = '\0';
			} else if (!strncmp(p, "replayed", 8) && (p[8] == ' ' || !p[8])) {
				m.replayed = 1;
				p += 8;
			} else {
				break;
			}
		}
		m.s = WS_S2C;
		m.channel = "sse";
		m.sse_id = id;
		m.sse_event = ev;
		m.p = p;
		m.n = strlen(p);
	} else if ((line[0] == '>' || line[0] == '<') && line[1] == ' ') {
		m.s = line[0] == '>' ? WS_C2S : WS_S2C;
		m.channel = "body";
		m.p = line + 2;
		m.n = n - 2;
	} else {
		return fail(l, "expected '=>', '<=', '=|', '>', '<', '<@', '>!', '<!', '~', '@' or '#'");
	}
	m.seq = ++l->seq;
	writer_put_msg(l->w, &m);
	return 0;
}

int main(int argc, char **argv)
{
	struct store *st = NULL;
	struct writer_opts wo;
	struct store_session_new sn = {"stdio", 0, "fixture", "/", 0, NULL, NULL};
	struct mt_err err = {"", 0};
	struct loader l;
	char *line = NULL, *transport = NULL, *http_id = NULL;
	size_t cap = 0;
	ssize_t n;
	int64_t session = 0;
	int http = 0, rc = 0;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: fixture-load FIXTURE FILE\n");
		return 2;
	}
	if (!(f = fopen(argv[1], "r"))) {
		perror(argv[1]);
		return 1;
	}
	memset(&l, 0, sizeof(l));
	l.path = argv[1];
	l.cur = -1;
	l.defaults = json_array();
	sn.started_wall = mt_wall_us();
	sn.command = argv[1];
	if (store_open(argv[2], STORE_WRITE, &st, &err)) {
		fprintf(stderr, "fixture-load: %s: %s\n", argv[2], err.msg);
		fclose(f);
		return 1;
	}
	writer_opts_default(&wo);
	wo.label = argv[2];
	/* (The session and the writer start at the first item, so that @transport
	 * and @max-message before it apply; the fixture is read once: it may be a
	 * pipe.) */
	int64_t t_ns = 0;
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		l.lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		if (!strncmp(line, "@t +", 4)) {
			t_ns += atoll(line + 4) * 1000000;
			continue;
		}
		if (!strncmp(line, "@max-message ", 13) || !strncmp(line, "@transport ", 11)) {
			if (l.w) {
				rc = fail(&l, "@max-message and @transport come before the first item");
				break;
			}
			if (line[1] == 'm') {
				wo.max_message = strtoull(line + 13, NULL, 10);
			} else {
				free(transport);
				transport = strdup(line + 11);
				http = strcmp(transport, "stdio") != 0;
			}
			continue;
		}
		if (!strncmp(line, "@session-id ", 12)) {
			free(http_id);
			http_id = strdup(line + 12);
			if (l.w)
				writer_put_http_id(l.w, 0, http_id);
			continue;
		}
		if (!strncmp(line, "@headers", 8) && (line[8] == ' ' || line[8] == '+' || !line[8])) {
			json_t *drop = json_array();
			if (line[8] != '+')
				json_array_clear(l.defaults);
			if (parse_headers(line + 8 + (line[8] == '+'), l.defaults, drop))
				rc = fail(&l, "expected '@headers [Name: value]...'");
			json_decref(drop);
			continue;
		}
		if (line[0] == '@')
			continue;
		if (!l.w) {
			sn.transport = transport ? transport : "stdio";
			if (store_session_create(st, &sn, &session, &err)) {
				fprintf(stderr, "fixture-load: %s: %s\n", argv[2], err.msg);
				return 1;
			}
			l.w = writer_start(st, session, mt_mono_ns(), &wo, NULL);
			if (http_id)
				writer_put_http_id(l.w, 0, http_id);
		}
		if (http) {
			rc = http_line(&l, line, (size_t)n);
			continue;
		}
		if (n < 2 || (line[0] != '>' && line[0] != '<' && line[0] != '!') || line[1] != ' ') {
			rc = fail(&l, "expected '> ', '< ', '! ', '@' or '#'");
			break;
		}
		enum writer_stream s = line[0] == '>' ? WS_C2S : line[0] == '<' ? WS_S2C : WS_STDERR;
		line[n] = '\n';
		/* One item per chunk, 1 ms apart, plus what @t asked for. */
		t_ns += 1000000;
		writer_put_at(l.w, s, line + 2, (size_t)n - 1, t_ns, sn.started_wall + t_ns / 1000);
		/* One chunk per item: frames stay apart in time and order. */
		line[n] = '\0';
	}
	free(line);
	fclose(f);
	if (!l.w) {
		sn.transport = transport ? transport : "stdio";
		if (store_session_create(st, &sn, &session, &err)) {
			fprintf(stderr, "fixture-load: %s: %s\n", argv[2], err.msg);
			return 1;
		}
		l.w = writer_start(st, session, mt_mono_ns(), &wo, NULL);
	}
	put_pending(&l);
	for (int i = 0; i < l.nx; i++)
		if (!l.x[i].ended)
			end_exchange(&l, &l.x[i], "complete", NULL);
	json_decref(l.defaults);
	free(transport);
	free(http_id);
	if (writer_finish(l.w, NULL, NULL)) {
		fprintf(stderr, "fixture-load: cannot store everything\n");
		return 1;
	}
	return rc;
}
