/*
 * cmd-show.c - `mcptap show`: a session's messages in the order they were
 * read, as text for people or as JSON lines for programs. The HTTP exchanges
 * of an HTTP tap's session come among them, at the seq of their request.
 */
#include <getopt.h>
#include <signal.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "schema/filter.h"
#include "analyze/itemjson.h"
#include "schema/map.h"

static int run_show(int argc, char **argv);

const struct cmd_entry cmd_show = {
	.name = "show",
	.summary = "print the messages of a session in order",
	.usage = "mcptap show -r FILE [-s LIST] [-Y EXPR] [--seq LIST] [-T text|json] [-t r|a|d] "
		 "[--full] [-v] [-F]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: the newest); one after the other\n"
		   "  -Y, --filter EXPR     only the messages EXPR passes (FILTERS in mcptap.1):\n"
		   "                        'method == tools/call and duration > 100ms'\n"
		   "  -T, --format FORMAT   text (default) or json (one object per line)\n"
		   "      --seq LIST        only these messages (seqs, ranges A-B, comma-separated),\n"
		   "                        each printed whole below its line, indented (text)\n"
		   "  -t FORMAT             text: the time column, r (seconds since the session\n"
		   "                        began; default), a (the time of day) or d (since the\n"
		   "                        line before)\n"
		   "      --full            text: do not cut lines to the terminal's width\n"
		   "  -v, --verbose         text: SSE event ids and types at the lines' end\n"
		   "  -F, --follow          then print what is written to the file, until\n"
		   "                        interrupted: the sessions named, or (no -s, or\n"
		   "                        -s all) the newest and those that begin\n"
		   "  -h, --help            this text\n",
	.run = run_show,
};

/*
 * The names of open requests that name a tool, a prompt or a resource, kept
 * for their answers' method column; past this many, answers show the method
 * alone.
 */
#define SHOW_MAX_OPEN 65536

struct subject {
	char *p; /* owned: the name, n bytes; NULL: a free slot */
	size_t n;
};

/* An exchange that ended abnormally, told at its end's time (text). */
struct ending {
	int64_t end_ns;
	char *line; /* owned: the line, printable, without its newline */
};

struct show {
	int json;
	int width; /* text: cut lines to this many columns; 0: never */
	int color;
	int64_t session;
	struct mt_buf text, line; /* scratch */
	struct itemjson ij;       /* -T json: the lines */
	struct subject *subj;     /* owned: a pool; by_seq points into it */
	size_t nsubj, capsubj;
	size_t *freed; /* owned: free slots of subj */
	size_t nfreed, capfreed;
	struct mt_map by_seq; /* request seq -> index into subj */
	struct ending *ends;  /* owned: in end_ns order; at most SHOW_MAX_OPEN */
	size_t nends;
	char tmode;       /* -t: r relative, a absolute, d delta */
	int64_t prev_t;   /* -t d: the time of the item printed last */
	int verbose;      /* -v: SSE event ids and types */
	int pretty;       /* --seq: each message indented in full below its line */
	int narrow;       /* a terminal under 120 columns: the compact columns */
	struct store *st; /* borrowed: for an answer's request not printed */
	/* --follow: */
	int64_t last;  /* the greatest seq printed (INT64_MIN: none) */
	int heading;   /* text: name the session before its next item */
	int *printed;  /* shared: something was printed (a heading's blank line) */
	int64_t *said; /* shared: the session the last item printed was of */
};
/* Append up to max bytes of s (0: all) to out, escaped for a terminal. */
static void put_printable(struct mt_buf *out, const char *s, size_t n, size_t max)
{
	if (max && n > max) {
		/* Not in the middle of a character: it would be shown as \xNN. */
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	mt_printable_append(out, s, n);
}

/*
 * The body, on one line and escaped for a terminal: a JSON message's bytes
 * with the whitespace between its tokens left out (mt_json_compact: numbers
 * and escapes as sent), or the bytes. max: the bytes of it that can be shown
 * (0: all).
 */
static void body_text(struct show *sh, const struct store_item *it, int json, size_t max)
{
	if (json) {
		/* The bytes as sent, the whitespace between tokens left out. */
		mt_buf_reset(&sh->text);
		mt_json_compact(it->raw, it->raw_len, MT_WS_ALL, &sh->text);
		put_printable(&sh->line, sh->text.data ? sh->text.data : "", sh->text.len, max);
	} else {
		const unsigned char *p = it->raw;
		size_t n = it->raw_len;
		while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			n--;
		put_printable(&sh->line, it->raw, n, max);
	}
}

/* The columns a code point takes on a terminal: 0 (combining), 1 or 2 (wide). */
static int cp_width(unsigned cp)
{
	static const unsigned zero[][2] = {
		{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
		{0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF},
	};
	static const unsigned wide[][2] = {
		{0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF}, {0x3400, 0x4DBF},
		{0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
		{0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
		{0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD},
	};

	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		if (cp >= zero[i][0] && cp <= zero[i][1])
			return 0;
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
		if (cp >= wide[i][0] && cp <= wide[i][1])
			return 2;
	return 1;
}

/*
 * The character of line at i: its length in bytes and its columns in *w. The
 * line is UTF-8 (traffic text went through mt_printable); an escape sequence
 * (only our own colours) takes no column.
 */
static size_t char_at(const unsigned char *p, size_t n, size_t i, int *w)
{
	unsigned cp;
	size_t len;

	if (p[i] == 0x1B) {
		size_t j = i + 1;
		if (j < n && p[j] == '[')
			while (++j < n && !(p[j] >= 0x40 && p[j] <= 0x7E))
				;
		*w = 0;
		return (j < n ? j + 1 : n) - i;
	}
	if (p[i] < 0x80) {
		*w = 1;
		return 1;
	}
	len = p[i] >= 0xF0 ? 4 : p[i] >= 0xE0 ? 3 : p[i] >= 0xC0 ? 2 : 1;
	if (i + len > n)
		len = n - i;
	cp = len == 1 ? p[i] : (unsigned)(p[i] & (0x3F >> (len - 1)));
	for (size_t k = 1; k < len; k++)
		cp = (cp << 6) | (p[i + k] & 0x3Fu);
	*w = cp_width(cp);
	return len;
}

/* Add spaces to the line until what follows start takes width columns. */
static void pad_to(struct mt_buf *b, size_t start, int width)
{
	int cols = 0, w;

	for (size_t i = start; i < b->len; cols += w)
		i += char_at((const unsigned char *)b->data, b->len, i, &w);
	for (; cols < width; cols++)
		mt_buf_putc(b, ' ');
}

/* Print the line, cut to sh->width columns with a "…" when it is wider. */
static void put_line(struct show *sh)
{
	const unsigned char *p = (const unsigned char *)sh->line.data;
	size_t n, i = 0, cut = 0;
	int cols = 0, w;

	/* (No spaces at a line's end: a message without params ends at its columns.) */
	while (sh->line.len && sh->line.data[sh->line.len - 1] == ' ')
		sh->line.len--;
	n = sh->line.len;
	if (sh->width > 0) {
		while (i < n) {
			size_t len = char_at(p, n, i, &w);
			if (cols + w > sh->width)
				break;
			if (cols + w <= sh->width - 1)
				cut = i + len;
			cols += w;
			i += len;
		}
		if (i < n) {
			sh->line.len = cut;
			mt_buf_puts(&sh->line, "…");
			if (sh->color)
				mt_buf_puts(&sh->line, "\033[0m");
		}
	}
	mt_buf_putc(&sh->line, '\n');
	fwrite(sh->line.data, 1, sh->line.len, stdout);
}

static const char *arrow(const struct store_item *it)
{
	if (it->type == STORE_ITEM_STDERR)
		return "⇠";
	if (it->type == STORE_ITEM_GAP)
		return "✗";
	return !strcmp(it->dir, "c2s") ? "→" : "←";
}

static const char *kind_color(const struct store_item *it)
{
	if (it->type != STORE_ITEM_MESSAGE)
		return "\033[33m";
	if (!strcmp(it->kind, "error") || !strcmp(it->kind, "invalid") || !strcmp(it->kind, "notjsonrpc"))
		return "\033[31m";
	return !strcmp(it->dir, "c2s") ? "\033[36m" : "\033[32m";
}

/* What a tools/call or prompts/get request names, or a resources/read's uri, into out. */
static int request_subject(const struct store_item *it, struct mt_buf *out)
{
	struct mt_class c;

	if (!mt_subject_key(it->method))
		return -1;
	mt_classify_trusted(it->raw, it->raw_len, &c);
	return mt_request_subject(&c, it->method, out);
}

/* Keep a request's subject (in sh->text) for its answer. */
static void keep_subject(struct show *sh, int64_t seq)
{
	size_t slot;

	if (sh->by_seq.len >= SHOW_MAX_OPEN)
		return;
	if (sh->nfreed) {
		slot = sh->freed[--sh->nfreed];
	} else {
		if (sh->nsubj == sh->capsubj) {
			sh->capsubj = sh->capsubj ? sh->capsubj * 2 : 64;
			sh->subj = mt_realloc(sh->subj, sh->capsubj * sizeof(*sh->subj));
		}
		slot = sh->nsubj++;
	}
	sh->subj[slot].p = mt_malloc(sh->text.len + 1);
	memcpy(sh->subj[slot].p, sh->text.data ? sh->text.data : "", sh->text.len);
	sh->subj[slot].n = sh->text.len;
	mt_map_put(&sh->by_seq, &seq, sizeof(seq), (int64_t)slot); /* (no limit: never fails) */
}

/* An answer's request, read back for what it names. */
struct req_read {
	int64_t seq;
	struct mt_buf *out;
	int found;
};

static int read_subject(int64_t seq, const void *raw, size_t n, void *ctx)
{
	struct req_read *rr = ctx;
	struct mt_class c;
	struct mt_buf m = MT_BUF_INIT;

	if (seq != rr->seq)
		return 1;
	if (mt_classify_trusted(raw, n, &c) == MT_REQUEST && c.method.p && !mt_json_string(c.method, &m)) {
		mt_buf_putc(&m, '\0');
		rr->found = mt_request_subject(&c, m.data, rr->out) == 0;
	}
	mt_buf_release(&m);
	return 1;
}

/* The method column: the method, and what the request names (the request's, for an answer). */
static void method_text(struct show *sh, const struct store_item *it)
{
	int64_t slot;

	if (!it->method)
		return;
	mt_printable_append(&sh->line, it->method, strlen(it->method));
	if (!strcmp(it->kind, "request")) {
		if (request_subject(it, &sh->text) == 0) {
			mt_buf_putc(&sh->line, ' ');
			mt_printable_append(&sh->line, sh->text.data ? sh->text.data : "", sh->text.len);
			keep_subject(sh, it->seq);
		}
	} else if (it->request_seq > 0 &&
		   mt_map_take(&sh->by_seq, &it->request_seq, sizeof(it->request_seq), &slot)) {
		struct subject *sb = &sh->subj[slot];
		mt_buf_putc(&sh->line, ' ');
		mt_printable_append(&sh->line, sb->p, sb->n);
		free(sb->p);
		sb->p = NULL;
		if (sh->nfreed == sh->capfreed) {
			sh->capfreed = sh->capfreed ? sh->capfreed * 2 : 64;
			sh->freed = mt_realloc(sh->freed, sh->capfreed * sizeof(*sh->freed));
		}
		sh->freed[sh->nfreed++] = (size_t)slot;
	} else if (it->request_seq > 0 && sh->st && mt_subject_key(it->method)) {
		/* Its request was not printed (a filter, --seq): read it for its subject. */
		struct req_read rr = {it->request_seq, &sh->text, 0};
		struct mt_err err = {"", 0};
		if (store_read_raw(sh->st, sh->session, it->request_seq, 1, read_subject, &rr, &err) >= 0 &&
		    rr.found) {
			mt_buf_putc(&sh->line, ' ');
			mt_printable_append(&sh->line, sh->text.data ? sh->text.data : "", sh->text.len);
		}
	}
}

/* The latency column: right-aligned in 8 columns, then two spaces. */
static void put_latency(struct mt_buf *b, const char *lat)
{
	for (int pad = 8 - (int)strlen(lat) + (strstr(lat, "µ") ? 1 : 0); pad > 0; pad--)
		mt_buf_putc(b, ' '); /* (µ is two bytes, one column) */
	mt_buf_puts(b, lat);
	mt_buf_puts(b, "  ");
}

/* The id and method columns' widths. */
static int id_cols(const struct show *sh)
{
	return sh->narrow ? 6 : 8;
}

static int method_cols(const struct show *sh)
{
	return sh->narrow ? (sh->width / 4 > 10 ? sh->width / 4 : 10) : 28;
}

/* A kind in the compact columns (5 wide). */
static const char *short_kind(const char *kind)
{
	static const char *const map[][2] = {
		{"request", "req"}, {"notification", "notif"}, {"response", "resp"},   {"error", "error"},
		{"batch", "batch"}, {"invalid", "inval"},      {"notjsonrpc", "!rpc"}, {"gap", "gap"},
		{"stderr", "err"},  {"http", "http"},          {"http end", "end"},
	};

	for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
		if (!strcmp(kind, map[k][0]))
			return map[k][1];
	return kind;
}

static void time_col(struct show *sh, int64_t t_ns, int64_t wall);
static int time_width(const struct show *sh);

/* A line's first columns: seq (seq_text when seq < 0), time, the mark and kind. */
static void line_head(struct show *sh, int64_t seq, const char *seq_text, int timed, int64_t t_ns,
		      int64_t wall, const char *on, const char *mark, const char *kind, const char *off)
{
	int sw = sh->narrow ? 5 : 6;

	if (seq_text)
		mt_buf_printf(&sh->line, "%*s ", sw, seq_text);
	else
		mt_buf_printf(&sh->line, "%*lld ", sw, (long long)seq);
	if (timed)
		time_col(sh, t_ns, wall);
	else
		mt_buf_printf(&sh->line, "%*s", time_width(sh), "");
	mt_buf_printf(&sh->line, " %s%s %-*s%s ", on, mark, sh->narrow ? 5 : 12,
		      sh->narrow ? short_kind(kind) : kind, off);
}

/* The time column (-t) of an item at t_ns (wall: µs since the epoch), into sh->line. */
static void time_col(struct show *sh, int64_t t_ns, int64_t wall)
{
	/* (Compact: to the millisecond.) */
	if (sh->tmode == 'a') {
		time_t t = (time_t)(wall / 1000000);
		struct tm tm;
		char hms[16] = "??:??:??";
		if (localtime_r(&t, &tm))
			strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
		if (sh->narrow)
			mt_buf_printf(&sh->line, "%s.%03lld", hms, (long long)(wall % 1000000 / 1000));
		else
			mt_buf_printf(&sh->line, "%s.%06lld", hms, (long long)(wall % 1000000));
		return;
	}
	if (sh->tmode == 'd') {
		int64_t d = t_ns - sh->prev_t;
		sh->prev_t = t_ns;
		t_ns = d;
	}
	mt_buf_printf(&sh->line, sh->narrow ? "%9.3f" : "%11.6f", (double)t_ns / 1e9);
}

/* The time column's width. */
static int time_width(const struct show *sh)
{
	if (sh->tmode == 'a')
		return sh->narrow ? 12 : 15;
	return sh->narrow ? 9 : 11;
}

/*
 * On a terminal, what follows start is cut to cols columns with a "…" (the
 * columns after it stay in line whatever the names); elsewhere it is whole.
 */
static void fit_cols(struct show *sh, size_t start, int cols)
{
	const unsigned char *p = (const unsigned char *)sh->line.data;
	size_t i = start, cut = start;
	int used = 0, w;

	if (sh->width <= 0)
		return;
	while (i < sh->line.len) {
		size_t len = char_at(p, sh->line.len, i, &w);
		if (used + w > cols)
			break;
		if (used + w <= cols - 1)
			cut = i + len;
		used += w;
		i += len;
	}
	if (i < sh->line.len) {
		sh->line.len = cut;
		mt_buf_puts(&sh->line, "…");
	}
}

/*
 * An exchange's line up to its body, into sh->line: seq, time t_ns, the
 * arrow and kind, the client connection in the id column, method and target
 * in the method column, how long it took in the latency column.
 */
static void exchange_head(struct show *sh, const struct store_exchange_row *x, int64_t t_ns, const char *mark,
			  const char *kind, const char *color)
{
	char lat[32] = "", conn[32];
	size_t col;

	if (x->end_ns >= 0)
		mt_format_duration(x->end_ns - x->t_ns, lat);
	mt_buf_reset(&sh->line);
	line_head(sh, x->seq, NULL, 1, t_ns, x->wall + (t_ns - x->t_ns) / 1000, sh->color ? color : "", mark,
		  kind, sh->color ? "\033[0m" : "");
	col = sh->line.len;
	snprintf(conn, sizeof(conn), "#%lld", (long long)x->conn);
	mt_buf_puts(&sh->line, conn);
	fit_cols(sh, col, id_cols(sh));
	pad_to(&sh->line, col, id_cols(sh));
	mt_buf_putc(&sh->line, ' ');
	col = sh->line.len;
	put_printable(&sh->line, x->method ? x->method : "?", x->method ? strlen(x->method) : 1, 64);
	mt_buf_putc(&sh->line, ' ');
	put_printable(&sh->line, x->target ? x->target : "?", x->target ? strlen(x->target) : 1, 256);
	fit_cols(sh, col, method_cols(sh));
	pad_to(&sh->line, col, method_cols(sh));
	mt_buf_putc(&sh->line, ' ');
	put_latency(&sh->line, lat);
}

/* Print the abnormal ends due by t_ns (INT64_MAX: all of them). */
static void flush_ends(struct show *sh, int64_t t_ns)
{
	size_t i = 0;

	for (; i < sh->nends && sh->ends[i].end_ns <= t_ns; i++) {
		mt_buf_reset(&sh->line);
		mt_buf_puts(&sh->line, sh->ends[i].line);
		free(sh->ends[i].line);
		put_line(sh);
	}
	if (i && sh->nends > i) /* (ends is NULL while nothing was kept) */
		memmove(sh->ends, sh->ends + i, (sh->nends - i) * sizeof(*sh->ends));
	sh->nends -= i;
}

/* Keep the line in sh->line, told at end_ns: after what the session read before then. */
static void keep_end(struct show *sh, int64_t end_ns)
{
	size_t at;

	if (sh->nends == SHOW_MAX_OPEN) {
		/* (Bounded: the earliest is told now, a little early.) */
		struct mt_buf keep = sh->line;
		sh->line = (struct mt_buf)MT_BUF_INIT;
		flush_ends(sh, sh->ends[0].end_ns);
		mt_buf_release(&sh->line);
		sh->line = keep;
	}
	if (!sh->ends)
		sh->ends = mt_calloc(SHOW_MAX_OPEN, sizeof(*sh->ends));
	for (at = sh->nends; at > 0 && sh->ends[at - 1].end_ns > end_ns; at--)
		;
	memmove(sh->ends + at + 1, sh->ends + at, (sh->nends - at) * sizeof(*sh->ends));
	sh->ends[at].end_ns = end_ns;
	sh->ends[at].line = mt_strndup(sh->line.data, sh->line.len);
	sh->nends++;
}

/*
 * An exchange at its request's seq: what its response was (status and type),
 * how many messages it carried, the bodies no message holds; "open" when it
 * has not ended. One that ended otherwise than complete gets a line of its
 * own at its end, with the outcome and the error.
 */
static int show_exchange_text(struct show *sh, const struct store_exchange_row *x)
{
	exchange_head(sh, x, x->t_ns, "⇄", "http", "\033[35m");
	mt_buf_puts(&sh->line, "→ ");
	if (x->status) {
		mt_buf_printf(&sh->line, "%d", x->status);
		if (x->resp_type) {
			mt_buf_putc(&sh->line, ' ');
			put_printable(&sh->line, x->resp_type, strlen(x->resp_type), 32);
		}
	} else {
		mt_buf_puts(&sh->line, x->end_ns >= 0 ? "no response" : "…");
	}
	if (x->messages)
		mt_buf_printf(&sh->line, ", %lld message%s", (long long)x->messages,
			      x->messages == 1 ? "" : "s");
	if (x->req_body)
		mt_buf_printf(&sh->line, ", request body %zu bytes", x->req_body_len);
	if (x->resp_body)
		mt_buf_printf(&sh->line, ", response body %zu bytes", x->resp_body_len);
	if (x->last_event_id) {
		mt_buf_puts(&sh->line, ", Last-Event-ID ");
		put_printable(&sh->line, x->last_event_id, strlen(x->last_event_id), 64);
	}
	if (x->end_ns < 0)
		mt_buf_puts(&sh->line, ", open");
	put_line(sh);
	if (x->end_ns >= 0 && (!x->outcome || strcmp(x->outcome, "complete"))) {
		exchange_head(sh, x, x->end_ns, "✗", "http end", "\033[31m");
		put_printable(&sh->line, x->outcome ? x->outcome : "?", x->outcome ? strlen(x->outcome) : 1,
			      32);
		if (x->error) {
			mt_buf_puts(&sh->line, ": ");
			put_printable(&sh->line, x->error, strlen(x->error), 256);
		}
		keep_end(sh, x->end_ns);
	}
	return 0;
}

/* An SSE event's id and type (-v): "  [id 7, event message]", at the line's end. */
static void sse_text(struct show *sh, const struct store_item *it)
{
	const char *sep = "  [";

	if (it->sse_id) {
		mt_buf_printf(&sh->line, "%sid ", sep);
		put_printable(&sh->line, it->sse_id, strlen(it->sse_id), 64);
		sep = ", ";
	}
	if (it->sse_event) {
		mt_buf_printf(&sh->line, "%sevent ", sep);
		put_printable(&sh->line, it->sse_event, strlen(it->sse_event), 64);
		sep = ", ";
	}
	if (strcmp(sep, "  ["))
		mt_buf_puts(&sh->line, "]");
}

/*
 * What the body column shows of a JSON message: its params (a request or a
 * notification), result or error, the envelope (jsonrpc, id, method: in the
 * columns already) left out; a batch whole. 0 and *v, or -1: nothing to show.
 */
static int body_span(const struct store_item *it, const struct mt_class *c, struct mt_span *v)
{
	struct mt_span msg = {it->raw, it->raw_len};

	if (c->kind == MT_REQUEST || c->kind == MT_NOTIFICATION) {
		*v = c->params;
		return c->params.p ? 0 : -1;
	}
	if (c->kind == MT_RESPONSE) {
		*v = c->result;
		return c->result.p ? 0 : -1;
	}
	while (msg.n && (msg.p[0] == ' ' || msg.p[0] == '\t' || msg.p[0] == '\r' || msg.p[0] == '\n')) {
		msg.p++;
		msg.n--;
	}
	while (msg.n && (msg.p[msg.n - 1] == ' ' || msg.p[msg.n - 1] == '\t' || msg.p[msg.n - 1] == '\r' ||
			 msg.p[msg.n - 1] == '\n'))
		msg.n--;
	if (c->kind == MT_ERROR && mt_json_member(msg, "error", v) == 1)
		return 0;
	*v = msg;
	return 0;
}

static int show_text(struct show *sh, const struct store_item *it)
{
	const char *on = "", *off = "";
	char lat[32] = "";
	size_t col, max;
	struct mt_class c;
	int json;

	if (it->request_seq > 0)
		mt_format_duration(it->latency_ns, lat);
	if (sh->color) {
		on = kind_color(it);
		off = "\033[0m";
	}
	mt_buf_reset(&sh->line);
	if (it->type == STORE_ITEM_GAP) {
		char seq[24] = "-";
		if (it->seq >= 0)
			snprintf(seq, sizeof(seq), "%lld", (long long)it->seq);
		line_head(sh, 0, seq, 0, 0, 0, on, arrow(it), "gap", "");
		mt_buf_printf(&sh->line,
			      "%lld messages, %lld bytes not stored: ", (long long)it->gap_messages,
			      (long long)it->gap_bytes);
		put_printable(&sh->line, it->gap_reason ? it->gap_reason : "",
			      it->gap_reason ? strlen(it->gap_reason) : 0, 0);
		mt_buf_puts(&sh->line, off);
		put_line(sh);
		return 0;
	}
	line_head(sh, it->seq, NULL, 1, it->t_ns, it->wall, on, arrow(it), it->kind, off);
	col = sh->line.len;
	/* A message stored as JSON, read once for its id's token and its body. */
	json = it->type == STORE_ITEM_MESSAGE && strcmp(it->kind, "invalid") &&
	       mt_classify_trusted(it->raw, it->raw_len, &c) != MT_INVALID;
	if (it->type == STORE_ITEM_MESSAGE) {
		/* The id's token as sent; else what the store says of it. */
		json_t *id = NULL;
		char *s = NULL;
		if (json && it->idtype && c.id.n)
			mt_printable_append(&sh->line, c.id.p, c.id.n);
		else if ((id = itemjson_id(it)) && (s = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT)))
			mt_printable_append(&sh->line, s, strlen(s));
		else if (it->id_text)
			mt_printable_append(&sh->line, it->id_text, strlen(it->id_text));
		free(s);
		json_decref(id);
	}
	fit_cols(sh, col, id_cols(sh));
	pad_to(&sh->line, col, id_cols(sh));
	mt_buf_putc(&sh->line, ' ');
	col = sh->line.len;
	if (it->type == STORE_ITEM_MESSAGE)
		method_text(sh, it);
	fit_cols(sh, col, method_cols(sh));
	pad_to(&sh->line, col, method_cols(sh));
	mt_buf_putc(&sh->line, ' ');
	put_latency(&sh->line, lat);
	if (it->replayed)
		mt_buf_puts(&sh->line, "(replayed) ");
	/* A cut line needs no more of the body than its width could show. */
	max = sh->width > 0 ? (size_t)sh->width * 4 + 16 : 0;
	if (json && it->type == STORE_ITEM_MESSAGE) {
		struct mt_span v;
		if (body_span(it, &c, &v) == 0) {
			mt_buf_reset(&sh->text);
			mt_json_compact(v.p, v.n, MT_WS_ALL, &sh->text);
			put_printable(&sh->line, sh->text.data ? sh->text.data : "", sh->text.len, max);
		}
	} else {
		body_text(sh, it, json, max);
	}
	if (it->incomplete)
		mt_buf_puts(&sh->line, " [no newline]");
	if (sh->verbose && it->type == STORE_ITEM_MESSAGE)
		sse_text(sh, it);
	put_line(sh);
	if (sh->pretty && it->type == STORE_ITEM_MESSAGE) {
		/* The whole message, indented, each line escaped for the terminal. */
		size_t from = 0;
		mt_buf_reset(&sh->text);
		if (json)
			mt_json_pretty(it->raw, it->raw_len, &sh->text);
		else
			mt_buf_append(&sh->text, it->raw, it->raw_len);
		while (from < sh->text.len) {
			const char *nl = memchr(sh->text.data + from, '\n', sh->text.len - from);
			size_t end = nl ? (size_t)(nl - sh->text.data) : sh->text.len;
			mt_buf_reset(&sh->line);
			mt_buf_puts(&sh->line, "    ");
			put_printable(&sh->line, sh->text.data + from, end - from, 0);
			mt_buf_putc(&sh->line, '\n');
			fwrite(sh->line.data, 1, sh->line.len, stdout);
			from = end + 1;
		}
	}
	return 0;
}

static int each(const struct store_item *it, void *ctx)
{
	struct show *sh = ctx;

	if (it->type != STORE_ITEM_GAP && it->seq > sh->last)
		sh->last = it->seq;
	if (sh->said) {
		/* Following several sessions: a heading where another's items begin. */
		if (sh->heading && !sh->json && *sh->said != sh->session)
			printf("%ssession %lld\n", *sh->printed ? "\n" : "", (long long)sh->session);
		*sh->said = sh->session;
		*sh->printed = 1;
	}

	if (sh->json) {
		if (it->type == STORE_ITEM_EXCHANGE)
			itemjson_exchange(&sh->ij, sh->session, it->x);
		else
			itemjson_item(&sh->ij, sh->session, it);
		fwrite(sh->ij.line.data, 1, sh->ij.line.len, stdout);
		return 0;
	}
	/* (A gap has no time of its own.) */
	if (sh->nends && it->type != STORE_ITEM_GAP)
		flush_ends(sh, it->t_ns);
	return it->type == STORE_ITEM_EXCHANGE ? show_exchange_text(sh, it->x) : show_text(sh, it);
}

/* What sh kept for a session, released. */
static void show_release(struct show *sh)
{
	for (size_t i = 0; i < sh->nsubj; i++)
		free(sh->subj[i].p);
	free(sh->subj);
	sh->subj = NULL;
	sh->nsubj = sh->capsubj = 0;
	free(sh->freed);
	sh->freed = NULL;
	sh->nfreed = sh->capfreed = 0;
	for (size_t i = 0; i < sh->nends; i++)
		free(sh->ends[i].line);
	free(sh->ends);
	sh->ends = NULL;
	sh->nends = 0;
	mt_map_release(&sh->by_seq);
}

/* One session's items, printed; what sh kept for it released. 0, or -1 (said). */
static int show_session(struct show *sh, struct store *st, const char *path, int64_t id, int more)
{
	struct mt_err err = {"", 0};
	int rc = 0;

	sh->session = id;
	mt_map_init(&sh->by_seq, 0);
	if (more > 0 && !sh->json)
		printf("\n");
	if (!sh->json && more >= 0)
		printf("session %lld\n", (long long)id);
	if (store_each_item_ex(st, id, STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES, each, sh, &err) < 0) {
		mt_error("cannot read '%s': %s", path, err.msg);
		rc = -1;
	} else {
		flush_ends(sh, INT64_MAX);
	}
	show_release(sh);
	return rc;
}

/* --follow: print what each session gains, until a signal; 0, or -1 (said). */
static volatile sig_atomic_t follow_stop;

static void on_follow_stop(int sig)
{
	(void)sig;
	follow_stop = 1;
}

struct followed {
	struct show sh;
	int64_t id;
};

/* A show of session id like proto, added to the list. */
static void follow_add(struct followed **f, size_t *n, const struct show *proto, int64_t id, int *printed,
		       int64_t *said, int heading)
{
	struct followed *x;

	*f = mt_realloc(*f, (*n + 1) * sizeof(**f));
	x = &(*f)[(*n)++];
	memset(x, 0, sizeof(*x));
	x->id = id;
	x->sh.json = proto->json;
	x->sh.width = proto->width;
	x->sh.color = proto->color;
	x->sh.narrow = proto->narrow;
	x->sh.tmode = proto->tmode;
	x->sh.verbose = proto->verbose;
	x->sh.pretty = proto->pretty;
	x->sh.st = proto->st;
	x->sh.session = id;
	x->sh.last = INT64_MIN;
	x->sh.printed = printed;
	x->sh.said = said;
	x->sh.heading = heading;
	mt_map_init(&x->sh.by_seq, 0);
}

static int follow(const struct show *proto, struct store *st, const char *path, const int64_t *ids,
		  size_t nids, int new_sessions)
{
	struct followed *f = NULL;
	size_t n = 0;
	int printed = 0, rc = -1;
	int64_t said = 0, newest = 0;
	struct sigaction sa;
	struct mt_err err = {"", 0};

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_follow_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Headings when more than one session is, or may come to be, followed. */
	for (size_t k = 0; k < nids; k++) {
		follow_add(&f, &n, proto, ids[k], &printed, &said, nids > 1 || new_sessions);
		if (ids[k] > newest)
			newest = ids[k];
	}
	while (!follow_stop) {
		if (store_data_changed(st)) {
			int64_t last;
			if (new_sessions && store_last_session(st, &last, &err) == 0) {
				for (int64_t id = newest + 1; id <= last; id++) {
					struct store_session_row row;
					if (store_session_get(st, id, &row, &err) == 0) {
						follow_add(&f, &n, proto, id, &printed, &said, 1);
						store_session_row_release(&row);
					}
				}
				if (last > newest)
					newest = last;
			}
			for (size_t k = 0; k < n && !follow_stop; k++) {
				struct show *sh = &f[k].sh;
				if (store_each_item_after(st, f[k].id, sh->last,
							  STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES, each,
							  sh, &err) < 0) {
					mt_error("cannot read '%s': %s", path, err.msg);
					goto out;
				}
			}
			if (fflush(stdout) != 0 || ferror(stdout))
				goto out;
		}
		/* (A commit is seen within this, and a signal ends the wait.) */
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
	rc = 0;
out:
	for (size_t k = 0; k < n; k++) {
		flush_ends(&f[k].sh, INT64_MAX);
		show_release(&f[k].sh);
		mt_buf_release(&f[k].sh.text);
		mt_buf_release(&f[k].sh.line);
		itemjson_release(&f[k].sh.ij);
	}
	free(f);
	return rc;
}

/* --seq LIST as a filter's expression, into out: "(seq == 4 or seq >= 9 and seq <= 12)". */
static int seq_filter(const char *list, struct mt_buf *out)
{
	const char *p = list;

	mt_buf_putc(out, '(');
	while (*p) {
		int64_t a, b;
		char num[24];
		size_t n = strspn(p, "0123456789");
		if (!n || n >= sizeof(num))
			return -1;
		memcpy(num, p, n);
		num[n] = '\0';
		if (mt_parse_int64(num, &a))
			return -1;
		p += n;
		b = a;
		if (*p == '-') {
			p++;
			n = strspn(p, "0123456789");
			if (!n || n >= sizeof(num))
				return -1;
			memcpy(num, p, n);
			num[n] = '\0';
			if (mt_parse_int64(num, &b) || b < a)
				return -1;
			p += n;
		}
		if (out->len > 1)
			mt_buf_puts(out, " or ");
		if (a == b)
			mt_buf_printf(out, "seq == %lld", (long long)a);
		else
			mt_buf_printf(out, "seq >= %lld and seq <= %lld", (long long)a, (long long)b);
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -1;
	}
	mt_buf_putc(out, ')');
	return out->len > 2 ? 0 : -1;
}

static int run_show(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},   {"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'}, {"format", required_argument, NULL, 'T'},
		{"full", no_argument, NULL, 'U'},         {"follow", no_argument, NULL, 'F'},
		{"seq", required_argument, NULL, 'Q'},    {"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	struct show sh;
	struct store *st = NULL;
	const char *path;
	struct cli_read rd = {.format = "text"};
	const char *seqs = NULL, *tmode = "r";
	struct mt_buf both = MT_BUF_INIT;
	struct mt_filter *filter = NULL;
	int64_t *ids = NULL;
	size_t nids = 0, shown = 0;
	int c, full = 0, follow_on = 0, rc = EXIT_ERROR;

	memset(&sh, 0, sizeof(sh));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:T:t:Fvh", longopts, NULL)) != -1) {
		if (cli_read_option(&cmd_show, &rd, c, optarg))
			continue;
		switch (c) {
		case 'U': full = 1; break;
		case 'F': follow_on = 1; break;
		case 'Q': seqs = optarg; break;
		case 't': tmode = optarg; break;
		case 'v': sh.verbose = 1; break;
		case 'h': cli_help(&cmd_show, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_show, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_show, "unexpected argument '%s'", argv[optind]);
	if (strcmp(rd.format, "text") && strcmp(rd.format, "json"))
		return cli_usage_error(&cmd_show, "unknown format '%s' (text or json)", rd.format);
	if (cli_read_check(&cmd_show, &rd))
		return EXIT_ERROR;
	path = rd.path;
	if (strcmp(tmode, "r") && strcmp(tmode, "a") && strcmp(tmode, "d") && strcmp(tmode, "relative") &&
	    strcmp(tmode, "absolute") && strcmp(tmode, "delta"))
		return cli_usage_error(&cmd_show, "bad -t '%s' (r, a or d)", tmode);
	sh.tmode = tmode[0];
	if (rd.expr && !(filter = cli_filter(&cmd_show, rd.expr)))
		return EXIT_ERROR;
	if (seqs) {
		/* As a filter: seq == N or seq in A-B, and -Y's besides. */
		if (seq_filter(seqs, &both)) {
			mt_filter_free(filter);
			mt_buf_release(&both);
			return cli_usage_error(&cmd_show,
					       "bad --seq '%s' (seqs and ranges A-B, "
					       "comma-separated: 4,9-12)",
					       seqs);
		}
		if (rd.expr)
			mt_buf_printf(&both, " and (%s)", rd.expr);
		mt_filter_free(filter);
		filter = cli_filter(&cmd_show, both.data);
		mt_buf_release(&both);
		if (!filter)
			return EXIT_ERROR;
		sh.pretty = 1;
	}
	sh.json = !strcmp(rd.format, "json");
	sh.color = !sh.json && cli_use_color(stdout);
	sh.width = sh.json || full ? 0 : cli_term_width(stdout);
	sh.narrow = sh.width > 0 && sh.width < 120;
	if (cli_open_capture(path, &st) || cli_pick_sessions(st, path, rd.sid, CLI_NEWEST, &ids, &nids))
		goto out;
	store_set_filter(st, filter, 0);
	sh.st = st;
	if (follow_on) {
		rc = follow(&sh, st, path, ids, nids, !rd.sid || !strcmp(rd.sid, "all")) ? EXIT_ERROR
											 : EXIT_OK;
		goto out;
	}
	/* (A heading per session when more than one is shown: JSON lines say theirs.
	 * With a filter, a session none of whose messages pass is left out.) */
	for (size_t k = 0; k < nids; k++) {
		if (filter && nids > 1) {
			struct mt_err err = {"", 0};
			int64_t n;
			if (store_filter_count(st, ids[k], &n, &err)) {
				mt_error("cannot read '%s': %s", path, err.msg);
				goto out;
			}
			if (!n)
				continue;
		}
		if (show_session(&sh, st, path, ids[k], nids > 1 ? (int)(shown > 0) : -1))
			goto out;
		shown++;
	}
	rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out:
	free(ids);
	mt_filter_free(filter);
	mt_buf_release(&sh.text);
	mt_buf_release(&sh.line);
	itemjson_release(&sh.ij);
	store_close(st);
	return rc;
}
