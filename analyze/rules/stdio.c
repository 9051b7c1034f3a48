/*
 * rules/stdio.c - the stdio transport (MCP-RULES §6.1): one message per line,
 * nothing but MCP messages on the server's stdout and stdin, UTF-8 on stderr.
 *
 * The tracker keeps, per direction, the run of consecutive lines that are not
 * JSON-RPC messages (so that STDIO-001 can tell when they join into one JSON
 * value: a message split across lines) and how many unreadable messages each
 * side sent that no id-less error answered yet (read by RPC-012; a batch in a
 * revision without batches counts as one).
 *
 * One cause, one finding: a line that may be part of a split value is held
 * back in its run; when the lines join, STDIO-001 says so once and the engine
 * follows the joined message (its answer answers it); the held lines that do
 * not join are said by STDIO-002/003 when the run ends (a message, the
 * candidates closing into nothing, the end of the session).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"

/* A run of non-message lines follows at most this many of its lines that may
 * open a value at a time, and is dropped past these sizes. */
#define RUN_CANDIDATES 8
#define RUN_MAX_LINES 100000
#define RUN_MAX_BYTES (4 * 1024 * 1024)

static const char *const run_key[2] = {"run0", "run1"}; /* by enum an_dir */
static const char *const unread_key[2] = {"unread0", "unread1"};

static const char *stream_name(enum an_dir d)
{
	return d == AN_C2S ? "stdin" : "stdout";
}

static const char *side_name(enum an_dir d)
{
	return d == AN_C2S ? "client" : "server";
}

/* The line without its terminator ("\n", "\r\n"). */
static size_t line_len(const struct an_msg *m)
{
	size_t n = m->raw_len;

	if (n && m->raw[n - 1] == '\n')
		n--;
	if (n && m->raw[n - 1] == '\r')
		n--;
	return n;
}

/*
 * A printable excerpt of a line's n bytes: at most 60 characters, control
 * bytes and bytes that are not UTF-8 shown as '?', "..." when cut.
 */
static void excerpt(const char *raw, size_t n, char *out, size_t outsz)
{
	const unsigned char *p = (const unsigned char *)raw;
	size_t i = 0, o = 0, chars = 0;

	while (i < n && chars < 60 && o + 8 < outsz) {
		unsigned char ch = p[i];
		if (ch >= 0x80) {
			size_t k = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : 2;
			if (i + k <= n && mt_utf8_invalid((const char *)p + i, k) < 0) {
				memcpy(out + o, p + i, k);
				o += k;
				i += k;
			} else {
				out[o++] = '?';
				i++;
			}
		} else {
			out[o++] = ch < 0x20 || ch == 0x7F ? '?' : (char)ch;
			i++;
		}
		chars++;
	}
	if (i < n && o + 4 <= outsz) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* ---- STDIO-001: one message per line ---- */

/*
 * The run of a direction is kept in ext.stdio.run0/run1 as
 *   {"at": rpc_messages when it began, "bytes": n,
 *    "lines": [[seq, "bytes "], ...], "cands": [[line index, state], ...]}
 * with each line's bytes (its terminator replaced by a blank) and, for the
 * lines that may open a value split across lines (at most RUN_CANDIDATES at a
 * time), the state of a small scanner over the value from that line on:
 * depth * 4 + 2 (in a string) + 1 (after a backslash). When the depth comes
 * back to 0 the joined lines are classified once: a JSON value, or a dead
 * candidate.
 */

struct joined {
	enum mt_kind kind;
	char method[80];
	size_t first; /* index of the run's line where the value starts */
};

/* Candidates' states after this line (for the tracker), in line order. */
struct step {
	size_t n;
	json_int_t idx[RUN_CANDIDATES];
	json_int_t state[RUN_CANDIDATES]; /* -1: dead */
};

/*
 * Advance a scanner state over p[0..n). Returns the new state, or -1 when the
 * value closes.
 */
static json_int_t scan_value(json_int_t st, const char *p, size_t n)
{
	json_int_t depth = st >> 2;
	int instr = (st & 2) != 0, esc = (st & 1) != 0;

	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (instr) {
			if (esc)
				esc = 0;
			else if (ch == '\\')
				esc = 1;
			else if (ch == '"')
				instr = 0;
			continue;
		}
		if (ch == '"')
			instr = 1;
		else if (ch == '{' || ch == '[')
			depth++;
		else if ((ch == '}' || ch == ']') && --depth <= 0)
			return -1;
	}
	return depth * 4 + instr * 2 + esc;
}

/*
 * Did the classifier stop only because the bytes ran out, so that more lines
 * may complete the value: an unterminated string, or an error at the very end?
 */
static int ends_early(const struct mt_class *k, size_t len)
{
	if (k->kind != MT_INVALID || !k->error)
		return 0;
	return !strcmp(k->error, "unterminated string") || k->error_offset >= len;
}

/*
 * The scanner state after a line that may open a value split across lines:
 * it opens an object or array, is valid JSON as far as it goes, and does not
 * close what it opens. -1 when it is not such a line.
 */
static json_int_t opening_state(const struct an_msg *m)
{
	size_t n = line_len(m), i = 0;
	struct mt_class k;

	while (i < n && (m->raw[i] == ' ' || m->raw[i] == '\t'))
		i++;
	if (i == n || (m->raw[i] != '{' && m->raw[i] != '['))
		return -1;
	/* Without its line end, which would be a control character inside a string. */
	mt_classify(m->raw, n, &k);
	if (!ends_early(&k, n))
		return -1;
	return scan_value(0, m->raw + i, n - i);
}

/* The run of direction d, if it is still going on (no message came since). */
static json_t *live_run(const struct an_state *st, enum an_dir d)
{
	json_t *run = json_object_get(json_object_get(st->ext, "stdio"), run_key[d]);

	if (!run || json_integer_value(json_object_get(run, "at")) != (json_int_t)st->rpc_messages)
		return NULL;
	return run;
}

/* The run's lines from index first on plus this line's first n bytes, into b. */
static void join_bytes(json_t *lines, size_t first, const struct an_msg *m, size_t n, struct mt_buf *b)
{
	for (size_t i = first; i < json_array_size(lines); i++) {
		json_t *t = json_array_get(json_array_get(lines, i), 1);
		mt_buf_append(b, json_string_value(t), json_string_length(t));
	}
	mt_buf_append(b, m->raw, n);
	mt_buf_putc(b, ' ');
}

/* Classify the run's lines from index first on plus this line's first n bytes. */
static enum mt_kind classify_join(json_t *lines, size_t first, const struct an_msg *m, size_t n,
				  struct joined *j)
{
	struct mt_buf b = MT_BUF_INIT;
	struct mt_class k;

	join_bytes(lines, first, m, n, &b);
	j->kind = mt_classify(b.data, b.len, &k);
	j->first = first;
	j->method[0] = '\0';
	if (j->kind != MT_INVALID && k.method.n) {
		struct mt_buf s = MT_BUF_INIT;
		if (mt_json_string(k.method, &s) == 0 && s.len && s.len < sizeof(j->method) &&
		    mt_utf8_invalid(s.data, s.len) < 0 && !memchr(s.data, '\0', s.len)) {
			memcpy(j->method, s.data, s.len);
			j->method[s.len] = '\0';
		}
		mt_buf_release(&s);
	}
	mt_buf_release(&b);
	return j->kind;
}

/*
 * Run this line through the run's candidates: 1 and *j when, from one of
 * them, the lines join into one JSON value that no earlier candidate still
 * encloses. *sp gets the candidates' new states (the tracker stores them; a
 * rule only reads).
 */
static int run_step(const struct an_msg *m, json_t *run, struct joined *j, struct step *sp)
{
	json_t *lines = json_object_get(run, "lines"), *cands = json_object_get(run, "cands"), *cd;
	size_t n = line_len(m), i;
	int enclosed = 0;

	sp->n = 0;
	json_array_foreach(cands, i, cd)
	{
		json_int_t idx = json_integer_value(json_array_get(cd, 0));
		json_int_t st = scan_value(json_integer_value(json_array_get(cd, 1)), m->raw, n);
		if (sp->n == RUN_CANDIDATES)
			break;
		if (st < 0) {
			/* The value closes on this line: is it one, with nothing after it? A
			 * value inside one still open is a member of it, not a message. */
			if (!enclosed && classify_join(lines, (size_t)idx, m, n, j) != MT_INVALID)
				return 1;
		} else {
			/* The line break (a blank now) may sit inside a string: still open. */
			st = scan_value(st, " ", 1);
			enclosed = 1;
		}
		sp->idx[sp->n] = idx;
		sp->state[sp->n++] = st;
	}
	return 0;
}

static int stdio_says(const struct an_ctx *c, const struct an_msg *m);

static void stdio_001(const struct an_ctx *c)
{
	const struct an_msg *m = c->m;
	size_t n = line_len(m);
	struct joined j;
	struct step sp;
	json_t *run;

	if (m->in_batch)
		return;
	/* (A partial line that is not JSON-RPC is STDIO-002/003's.) */
	if (m->incomplete && !stdio_says(c, m))
		an_report(c, AN_WARNING,
			  "the last %zu byte%s the %s wrote to %s end%s without a "
			  "newline: every message ends with one",
			  m->raw_len, m->raw_len == 1 ? "" : "s", side_name(m->dir), stream_name(m->dir),
			  m->raw_len == 1 ? "s" : "");
	if (m->cls->kind != MT_INVALID && m->cls->kind != MT_NOTJSONRPC)
		return;
	if (m->cls->kind == MT_INVALID && m->cls->error &&
	    !strcmp(m->cls->error, "control character in string") && memchr(m->raw, '\r', n)) {
		an_report(c, -1,
			  "a literal carriage return inside a JSON string on %s: a message "
			  "holds no raw CR or LF (escape it as \\r)",
			  stream_name(m->dir));
		return;
	}
	run = live_run(c->st, m->dir);
	if (run && run_step(m, run, &j, &sp)) {
		json_t *lines = json_object_get(run, "lines");
		size_t nlines = json_array_size(lines) - j.first + 1;
		int64_t rel[16];
		size_t nrel = 0;
		const char *what = j.kind == MT_NOTJSONRPC ? "JSON but not a JSON-RPC message"
				   : j.kind == MT_BATCH    ? "a batch"
							   : mt_kind_name(j.kind);
		for (size_t i = j.first; i < json_array_size(lines) && nrel < 16; i++)
			rel[nrel++] = json_integer_value(json_array_get(json_array_get(lines, i), 0));
		an_report_at(c, -1, m->seq, rel, nrel,
			     "a JSON value is split across %zu lines of %s (#%lld to #%lld): joined, "
			     "it is %s%s%s%s%s; a message is one line with no embedded newline",
			     nlines, stream_name(m->dir), (long long)rel[0], (long long)m->seq,
			     j.kind <= MT_ERROR ? "a " : "", what, j.method[0] ? " (" : "", j.method,
			     j.method[0] ? ")" : "");
	}
}

/* ---- STDIO-002 / STDIO-003: nothing but MCP messages on stdout and stdin ---- */

/*
 * Is this line STDIO-002's (or 003's): not JSON-RPC at all? A JSON-RPC
 * message that breaks a rule (its role, its envelope, its encoding, a batch)
 * gets that rule's finding instead, and so does a raw CR (STDIO-001).
 */
static int stdio_says(const struct an_ctx *c, const struct an_msg *m)
{
	const char *why = m->cls->error;

	if (m->in_batch || (m->cls->kind != MT_INVALID && m->cls->kind != MT_NOTJSONRPC) ||
	    (m->cls->kind == MT_NOTJSONRPC && an_jsonrpc_like(m)))
		return 0;
	if (m->cls->kind == MT_INVALID && why &&
	    ((!strcmp(why, "control character in string") && memchr(m->raw, '\r', line_len(m))) ||
	     (!strcmp(why, "invalid UTF-8") && an_version_in(c->st, AN_FROM_0326 | AN_V26))))
		return 0;
	return 1;
}

/* Say that a line the side wrote is not JSON-RPC (raw: its n bytes, no line end). */
static void say_line(const struct an_ctx *c, enum an_dir d, int64_t seq, enum mt_kind kind, const char *why,
		     const char *raw, size_t n)
{
	char ex[256];

	excerpt(raw, n, ex, sizeof(ex));
	if (kind == MT_INVALID && why && !strcmp(why, "empty"))
		an_report_at(c, AN_WARNING, seq, NULL, 0, "the %s wrote an empty line to %s", side_name(d),
			     stream_name(d));
	else if (kind == MT_INVALID)
		an_report_at(c, -1, seq, NULL, 0, "the %s wrote text that is not JSON to %s (%s): '%s'",
			     side_name(d), stream_name(d), why ? why : "invalid", ex);
	else
		an_report_at(c, -1, seq, NULL, 0,
			     "the %s wrote JSON that is not a JSON-RPC message to %s (%s): '%s'",
			     side_name(d), stream_name(d), why ? why : "not JSON-RPC", ex);
}

/*
 * Say the lines of a run that were held back (up to index `end`): they were
 * not part of a value split across lines after all.
 */
static void say_held(const struct an_ctx *c, enum an_dir d, json_t *run, size_t end)
{
	json_t *lines = json_object_get(run, "lines"), *l;

	for (size_t i = 0; i < end && (l = json_array_get(lines, i)); i++) {
		json_t *t = json_array_get(l, 1);
		if (!json_is_true(json_array_get(l, 4)))
			continue;
		say_line(c, d, json_integer_value(json_array_get(l, 0)),
			 (enum mt_kind)json_integer_value(json_array_get(l, 2)),
			 json_string_value(json_array_get(l, 3)), json_string_value(t),
			 json_string_length(t) ? json_string_length(t) - 1 : 0);
	}
}

/* A run of direction d that a message (or the end) ended, not said yet, or NULL. */
static json_t *ended_run(const struct an_state *st, enum an_dir d, int at_end)
{
	json_t *run = json_object_get(json_object_get(st->ext, "stdio"), run_key[d]);

	if (!run ||
	    (!at_end && json_integer_value(json_object_get(run, "at")) == (json_int_t)st->rpc_messages))
		return NULL;
	return run;
}

/*
 * Will the line stay in the run (it may still be part of a split value)?
 * Mirrors run_add: the run continues when a candidate is still open and it
 * is not too big.
 */
static int run_keeps(json_t *run, const struct step *sp, size_t n)
{
	size_t open = 0;

	for (size_t i = 0; i < sp->n; i++)
		open += sp->state[i] >= 0;
	return open && json_array_size(json_object_get(run, "lines")) < RUN_MAX_LINES &&
	       json_integer_value(json_object_get(run, "bytes")) + (json_int_t)n + 1 <= RUN_MAX_BYTES;
}

/*
 * A line that is not a message may be part of a JSON value split across
 * lines (STDIO-001's): such lines are held back in the run, and said only
 * once it is clear they were not (the run ends without joining: a message
 * comes, the candidates close into nothing, or the session ends).
 */
static void not_a_message(const struct an_ctx *c, enum an_dir want)
{
	const struct an_msg *m = c->m;
	json_t *run;
	struct joined j;
	struct step sp;
	size_t n;

	if (!m) {
		if ((run = ended_run(c->st, want, 1)))
			say_held(c, want, run, SIZE_MAX);
		return;
	}
	if (m->in_batch)
		return;
	if (m->cls->kind != MT_INVALID && m->cls->kind != MT_NOTJSONRPC) {
		/* A message: it ends the runs (both directions). */
		if ((run = ended_run(c->st, want, 0)))
			say_held(c, want, run, SIZE_MAX);
		return;
	}
	if (m->dir != want)
		return;
	n = line_len(m);
	run = live_run(c->st, want);
	if (!run && (run = ended_run(c->st, want, 0)))
		say_held(c, want, run, SIZE_MAX);
	else if (run && run_step(m, run, &j, &sp)) {
		/* The line closes a split value (STDIO-001): the lines before it were not. */
		say_held(c, want, run, j.first);
		return;
	} else if (run && run_keeps(run, &sp, n)) {
		return; /* held back */
	} else if (run) {
		say_held(c, want, run, SIZE_MAX);
	}
	/* A line that may open a split value is held back in a new run. */
	if (opening_state(m) >= 0 && n + 1 <= RUN_MAX_BYTES)
		return;
	if (stdio_says(c, m))
		say_line(c, want, m->seq, m->cls->kind, m->cls->error, m->raw, n);
}

static void stdio_002(const struct an_ctx *c)
{
	not_a_message(c, AN_S2C);
}

static void stdio_003(const struct an_ctx *c)
{
	not_a_message(c, AN_C2S);
}

/* ---- STDIO-004: stderr ---- */

static void stdio_004(const struct an_ctx *c)
{
	long bad = mt_utf8_invalid(c->m->raw, c->m->raw_len);

	if (bad >= 0)
		an_report(c, -1,
			  "a line the server wrote to stderr is not UTF-8 (byte %ld): stderr "
			  "is for UTF-8 log text",
			  bad);
}

/* ---- the tracker ---- */

/* Add this line to its direction's run, or start one. */
static void run_add(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	json_t *run = live_run(c->st, m->dir), *lines, *cands;
	size_t n = line_len(m);
	json_int_t open = opening_state(m);
	struct joined j;
	struct step sp;
	char *buf;

	if (run && run_step(m, run, &j, &sp)) {
		/* A message split across lines: the engine follows what it is. */
		struct mt_buf b = MT_BUF_INIT;
		join_bytes(json_object_get(run, "lines"), j.first, m, n, &b);
		an_follow_joined(c, b.data, b.len);
		mt_buf_release(&b);
		json_object_del(ext, run_key[m->dir]);
		return;
	}
	if (run) {
		/* Keep the candidates still open. */
		cands = json_array();
		for (size_t i = 0; i < sp.n; i++)
			if (sp.state[i] >= 0)
				json_array_append_new(cands, json_pack("[I,I]", sp.idx[i], sp.state[i]));
		json_object_set_new(run, "cands", cands);
		if (!json_array_size(cands) ||
		    json_array_size(json_object_get(run, "lines")) >= RUN_MAX_LINES ||
		    json_integer_value(json_object_get(run, "bytes")) + (json_int_t)n + 1 > RUN_MAX_BYTES)
			run = NULL; /* nothing in it can open a value any more, or too big */
	}
	if (!run) {
		/* A run is worth keeping only from a line that may open a value. */
		if (open < 0 || n + 1 > RUN_MAX_BYTES) {
			json_object_del(ext, run_key[m->dir]);
			return;
		}
		run = json_pack("{s:[],s:[],s:I,s:I}", "lines", "cands", "at",
				(json_int_t)c->st->rpc_messages, "bytes", (json_int_t)0);
		json_object_set_new(ext, run_key[m->dir], run);
	}
	lines = json_object_get(run, "lines");
	cands = json_object_get(run, "cands");
	if (open >= 0 && json_array_size(cands) < RUN_CANDIDATES)
		json_array_append_new(cands, json_pack("[I,I]", (json_int_t)json_array_size(lines),
						       scan_value(open, " ", 1)));
	buf = mt_malloc(n + 1);
	memcpy(buf, m->raw, n);
	buf[n] = ' ';
	/* The bytes may be anything: they are kept as bytes, never encoded. */
	json_array_append_new(lines,
			      json_pack("[I,o,i,s?,b]", (json_int_t)m->seq, json_stringn_nocheck(buf, n + 1),
					(int)m->cls->kind, m->cls->error, stdio_says(c, m)));
	free(buf);
	json_object_set_new(
		run, "bytes",
		json_integer(json_integer_value(json_object_get(run, "bytes")) + (json_int_t)n + 1));
}

static void stdio_track(const struct an_ctx *c, json_t *ext)
{
	const struct an_msg *m = c->m;
	enum an_dir peer = m->dir == AN_C2S ? AN_S2C : AN_C2S;

	/* Runs a message ended were said (STDIO-002/003): they go. */
	for (int d = 0; d < 2; d++) {
		json_t *run = json_object_get(ext, run_key[d]);
		if (run && json_integer_value(json_object_get(run, "at")) != (json_int_t)c->st->rpc_messages)
			json_object_del(ext, run_key[d]);
	}
	/* A batch in a revision without batches: a message the peer may refuse
	 * with an id-less error, as one it could not read. */
	if (m->cls->kind == MT_BATCH && !m->in_batch && c->st->version != AN_V2025_03_26)
		json_object_set_new(
			ext, unread_key[m->dir],
			json_integer(json_integer_value(json_object_get(ext, unread_key[m->dir])) + 1));
	if (m->cls->kind != MT_ERROR && m->cls->kind != MT_INVALID && m->cls->kind != MT_NOTJSONRPC)
		return;
	if (m->cls->kind == MT_ERROR) {
		json_int_t pending = json_integer_value(json_object_get(ext, unread_key[peer]));
		if ((m->cls->idtype == MT_ID_NONE || m->cls->idtype == MT_ID_NULL) && pending > 0)
			json_object_set_new(ext, unread_key[peer], json_integer(pending - 1));
		return;
	}
	/* An unreadable line or element: something the peer may answer without an id. */
	json_object_set_new(ext, unread_key[m->dir],
			    json_integer(json_integer_value(json_object_get(ext, unread_key[m->dir])) + 1));
	/* (Over HTTP a message is a whole body or event: nothing is split across lines.) */
	if (!m->in_batch && c->st->transport == AN_T_STDIO)
		run_add(c, ext);
}

const struct an_rule an_rules_stdio[] = {
	{"STDIO-001", AN_ERROR, AN_SEV_FIXED, AN_EVERY,
	 AN_ON_MESSAGE | AN_ON_BATCH | AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_FRAMING, NULL, stdio_001,
	 "one message per line: no JSON value split across lines, no raw CR or LF inside one "
	 "(a last line without its newline is a warning)",
	 "MCP-RULES §6.1; basic/transports.mdx"},
	{"STDIO-002", AN_ERROR, AN_SEV_FIXED, AN_EVERY,
	 AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_ON_MESSAGE | AN_ON_BATCH | AN_ON_END | AN_FRAMING, NULL,
	 stdio_002,
	 "the server writes nothing to stdout that is not JSON-RPC (no banner, log line or "
	 "partial JSON; an empty line is a warning); a JSON-RPC message that breaks a rule gets "
	 "that rule's finding (RPC-001, RPC-016 ...)",
	 "MCP-RULES §6.1; basic/transports.mdx"},
	{"STDIO-003", AN_ERROR, AN_SEV_FIXED, AN_EVERY,
	 AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_ON_MESSAGE | AN_ON_BATCH | AN_ON_END | AN_FRAMING, NULL,
	 stdio_003, "the client writes nothing to the server's stdin that is not JSON-RPC (as STDIO-002)",
	 "MCP-RULES §6.1; basic/transports.mdx"},
	{"STDIO-004", AN_INFO, AN_SEV_FIXED, AN_EVERY, AN_ON_STDERR, NULL, stdio_004,
	 "stderr is free-form log text, never a protocol violation, but it is UTF-8",
	 "MCP-RULES §6.1; basic/transports.mdx"},
	{"STDIO-005", AN_ERROR, AN_SEV_FIXED, AN_FROM_0326, 0, NULL, NULL,
	 "stdio messages are UTF-8: the same check as RPC-014", "MCP-RULES §6.1; basic/transports.mdx"},
	{"STDIO-006", AN_INFO, AN_SEV_FIXED, AN_FROM_0326, 0, NULL, NULL,
	 "a stdio message is one request, notification or response (or, in 2025-03-26, a batch): "
	 "see RPC-009 and RPC-010",
	 "MCP-RULES §6.1; basic/transports.mdx"},
	{"STDIO-007", AN_WARNING, AN_SEV_FIXED, AN_ALL4, 0, NULL, NULL,
	 "shutdown closes stdin, then SIGTERM, then SIGKILL: see LIFE-013 (the order of stdin "
	 "close and signals is not in the message stream)",
	 "MCP-RULES §6.1; basic/lifecycle.mdx"},
	{"STDIO-008", AN_WARNING, AN_SEV_FIXED, AN_FROM_0326, 0, NULL, NULL,
	 "stdio implementations take credentials from the environment, not HTTP authorization: "
	 "not observable in a stdio capture",
	 "MCP-RULES §6.1; basic/index.mdx"},
	{NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
};

const struct an_tracker an_trackers_stdio[] = {
	{AN_ON_INVALID | AN_ON_NOTJSONRPC | AN_ON_MESSAGE | AN_ON_BATCH, NULL, stdio_track, "stdio"},
	{0, NULL, NULL, NULL},
};
