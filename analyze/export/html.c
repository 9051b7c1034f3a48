/*
 * html.c - the format of `mcptap report` (not one of export's -T): one
 * self-contained HTML file a person opens in a browser. Nothing in it comes
 * from elsewhere (no script, font, style or image by URL), and it needs no
 * JavaScript: a message opens by following its arrow's link (CSS :target).
 *
 * Per session, two passes over the store: the first reads every item (the
 * filter set aside) into the analyzer and the tally of stats, for the
 * summary and the findings; the second draws the sequence diagram of the
 * items the filter passes, in pages of HTML_PAGE rows, each page an SVG
 * followed by its messages. Memory: the findings, the tally (in proportion
 * to the requests open at once) and one page.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/export/export.h"
#include "analyze/tally.h"
#include "schema/message.h"
#include "schema/util.h"

#define HTML_PAGE 500  /* rows of the diagram a page */
#define HTML_LABEL 72  /* characters of an arrow's label at most */
#define HTML_STDERR 90 /* characters of a stderr line on the diagram */
#define ROW_H 24       /* the diagram's geometry (px) */
#define TOP 48
#define X_TIME 8
#define X_CLIENT 170
#define X_TAP 480
#define X_SERVER 790
#define X_MARK 812
#define WIDTH 980

/* A finding, as the report shows it. */
struct hfinding {
	int64_t seq; /* 0: the session */
	size_t ord;  /* its place in the analyzer's order */
	enum an_severity sev;
	const struct an_rule *rule; /* borrowed: the rule table's */
	char *text;                 /* owned */
};

struct html {
	/* The session's, from the first pass. */
	struct tally tally;
	struct hfinding *f; /* owned, in seq order */
	size_t nf, capf;
	/* The rules any session's findings name, for the rules section. */
	const struct an_rule **rules;
	size_t nrules, caprules;
	/* The second pass. */
	size_t fi;  /* the first finding not drawn yet */
	int64_t t0; /* the session's first time (ns) */
	int have_t0;
	int64_t rows;                  /* rows drawn in the session */
	int64_t page_first, page_last; /* the seqs the page's rows span */
	size_t page_rows;
	size_t pages;            /* pages written in the session */
	struct mt_buf svg, msgs; /* the page being made */
	struct mt_buf page;      /* scratch: the page's HTML */
	struct mt_buf tmp, tmp2; /* scratch */
	struct mt_err err;
	/* The session's side, in a diff (ex_html_side); "" and NULL otherwise. */
	const char *pfx;            /* before every id: "a-", "b-" */
	const char *title;          /* before its heading: "A: " */
	const struct mt_map *marks; /* a request's seq -> enum ex_html_mark */
};

/* ---- text ---- */

/* p (n bytes, any bytes) into out as HTML text: escaped, invalid UTF-8 made U+FFFD. */
static void esc(struct html *h, struct mt_buf *out, const char *p, size_t n)
{
	mt_utf8_lossy(p, n, &h->tmp2);
	for (size_t i = 0; i < h->tmp2.len; i++) {
		unsigned char c = (unsigned char)h->tmp2.data[i];
		switch (c) {
		case '&': mt_buf_puts(out, "&amp;"); break;
		case '<': mt_buf_puts(out, "&lt;"); break;
		case '>': mt_buf_puts(out, "&gt;"); break;
		case '"': mt_buf_puts(out, "&quot;"); break;
		case '\'': mt_buf_puts(out, "&#39;"); break;
		default:
			if (c < 0x20 && c != '\n' && c != '\t')
				mt_buf_printf(out, "&#x%x;", 0x2400 + c); /* its control picture */
			else
				mt_buf_putc(out, (char)c);
		}
	}
}

static void esc_s(struct html *h, struct mt_buf *out, const char *s)
{
	if (s)
		esc(h, out, s, strlen(s));
}

/* At most max characters of s (n bytes), escaped, with "…" when cut. */
static void esc_cut(struct html *h, struct mt_buf *out, const char *s, size_t n, size_t max)
{
	size_t i = 0, chars = 0;

	while (i < n && chars < max) {
		i++;
		while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
		chars++;
	}
	esc(h, out, s, i);
	if (i < n)
		mt_buf_puts(out, "…");
}

/* A rule id as an HTML id and fragment: letters, digits and '-' are all it holds. */
static void rule_anchor(struct mt_buf *out, const char *id)
{
	mt_buf_puts(out, "rule-");
	for (const char *p = id; *p; p++)
		mt_buf_putc(out, (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
						 (*p >= '0' && *p <= '9') || *p == '-'
					 ? *p
					 : '_');
}

static void duration(struct mt_buf *out, int64_t ns)
{
	char d[32];

	mt_format_duration(ns, d);
	mt_buf_puts(out, d);
}

/* A diff's mark on a message: its request's (or its own), as a class. */
static const char *diff_class(const struct html *h, const struct store_item *it)
{
	int64_t v = 0;

	if (!h->marks ||
	    !(mt_map_get(h->marks, &it->seq, sizeof(it->seq), &v) ||
	      (it->request_seq > 0 && mt_map_get(h->marks, &it->request_seq, sizeof(it->request_seq), &v))))
		return "";
	return v == EX_HTML_CHANGED   ? " diff-changed"
	       : v == EX_HTML_ADDED   ? " diff-added"
	       : v == EX_HTML_MISSING ? " diff-missing"
				      : "";
}

void ex_html_side(struct ex_sink *x, const char *pfx, const char *title, const struct mt_map *marks)
{
	struct html *h = x->priv;

	h->pfx = pfx ? pfx : "";
	h->title = title;
	h->marks = marks;
}

/* ---- the first pass: the analyzer, the tally ---- */

struct pass1 {
	struct ex_sink *x;
	struct html *h;
	struct an_engine *e;
};

static void on_finding(const struct an_finding *f, void *ctx)
{
	struct pass1 *p = ctx;
	struct html *h = p->h;
	struct mt_buf b = MT_BUF_INIT;
	size_t k;

	if (h->nf == h->capf) {
		h->capf = h->capf ? h->capf * 2 : 32;
		h->f = mt_realloc(h->f, h->capf * sizeof(*h->f));
	}
	h->f[h->nf].seq = f->seq;
	h->f[h->nf].ord = h->nf;
	h->f[h->nf].sev = f->sev;
	h->f[h->nf].rule = f->rule;
	h->f[h->nf].text = mt_strdup(ex_redact_text(p->x, f->text ? f->text : "", &b));
	h->nf++;
	mt_buf_release(&b);
	for (k = 0; k < h->nrules && h->rules[k] != f->rule; k++)
		;
	if (k == h->nrules) {
		if (h->nrules == h->caprules) {
			h->caprules = h->caprules ? h->caprules * 2 : 16;
			h->rules = mt_realloc(h->rules, h->caprules * sizeof(*h->rules));
		}
		h->rules[h->nrules++] = f->rule;
	}
}

static int pass1_item(const struct store_item *it, void *ctx)
{
	struct pass1 *p = ctx;

	an_engine_feed(p->e, it);
	tally_feed(&p->h->tally, ex_redact_item(p->x, it));
	return 0;
}

static int cmp_finding(const void *a, const void *b)
{
	const struct hfinding *x = a, *y = b;

	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	return (x->ord > y->ord) - (x->ord < y->ord);
}

static void findings_release(struct html *h)
{
	for (size_t i = 0; i < h->nf; i++)
		free(h->f[i].text);
	h->nf = 0;
}

static int pass1(struct ex_sink *x, struct html *h)
{
	const struct store_session_row *row = x->session;
	struct pass1 p = {x, h, NULL};
	struct an_options ao;
	int http = row->transport && (!strcmp(row->transport, "http") || !strcmp(row->transport, "sse"));
	int rc;

	memset(&ao, 0, sizeof(ao));
	p.e = an_engine_new(row->id, &ao);
	an_engine_set_sink(p.e, on_finding, &p);
	an_engine_set_session(p.e, row->transport, row->http_session_id);
	tally_init(&h->tally);
	store_set_filter(x->st, NULL, 0);
	rc = store_each_item_ex(x->st, row->id, http ? STORE_ITEMS_EXCHANGES : 0, pass1_item, &p, &h->err);
	store_set_filter(x->st, x->filter, x->format->filter);
	if (rc >= 0)
		an_engine_end(p.e);
	an_engine_free(p.e);
	if (rc < 0) {
		x->err = h->err;
		return -1;
	}
	/* (by message: the engine reports the session's end last; analyze's order within one) */
	if (h->nf > 1)
		qsort(h->f, h->nf, sizeof(*h->f), cmp_finding);
	return 0;
}

/* ---- the summary ---- */

static const char *code_name(int64_t code)
{
	switch (code) {
	case -32700: return "parse error";
	case -32600: return "invalid request";
	case -32601: return "method not found";
	case -32602: return "invalid params";
	case -32603: return "internal error";
	case -32002: return "resource not found";
	case -32042: return "URL elicitation required";
	case -32000: return "connection closed";
	case -32001: return "request timeout";
	default: return "";
	}
}

/* The latency histogram: answers by decade of latency, as bars. */
static void histogram(struct html *h, struct mt_buf *o)
{
	static const int64_t edge[] = {100000, 1000000, 10000000, 100000000, 1000000000, 10000000000LL};
	static const char *const label[] = {"< 100µs",  "100µs–1ms", "1–10ms", "10–100ms",
					    "100ms–1s", "1–10s",     "≥ 10s"};
	int64_t bin[7] = {0}, top = 0;
	const struct tally_hist *t = &h->tally.all;

	for (int i = 0; i < t->nb; i++) {
		int64_t v = tally_hist_value(t->lo + i);
		int k = 0;
		while (k < 6 && v >= edge[k])
			k++;
		bin[k] += (int64_t)t->b[i];
	}
	for (int k = 0; k < 7; k++)
		if (bin[k] > top)
			top = bin[k];
	mt_buf_puts(o, "<svg class=\"hist\" width=\"640\" height=\"186\" role=\"img\" "
		       "aria-label=\"latency histogram\">");
	for (int k = 0; k < 7; k++) {
		int hgt = top ? (int)(bin[k] * 120 / top) : 0;
		int x = 10 + k * 88;
		mt_buf_printf(o,
			      "<g class=\"bar\"><title>%s: %lld answers</title>"
			      "<rect x=\"%d\" y=\"%d\" width=\"70\" height=\"%d\"/>"
			      "<text x=\"%d\" y=\"%d\" class=\"n\">%lld</text>"
			      "<text x=\"%d\" y=\"176\">%s</text></g>",
			      label[k], (long long)bin[k], x, 146 - hgt, hgt, x + 35, 141 - hgt,
			      (long long)bin[k], x + 35, label[k]);
	}
	mt_buf_puts(o, "</svg>\n");
}

static void sev_counts(const struct html *h, int64_t n[AN_SEVERITY_COUNT])
{
	for (int s = 0; s < AN_SEVERITY_COUNT; s++)
		n[s] = 0;
	for (size_t i = 0; i < h->nf; i++)
		n[h->f[i].sev]++;
}

static void summary(struct ex_sink *x, struct html *h, struct mt_buf *o)
{
	const struct store_session_row *r = x->session;
	struct tally *t = &h->tally;
	size_t *order = tally_order(t);
	int64_t sev[AN_SEVERITY_COUNT];
	int64_t id = r->id;

	sev_counts(h, sev);
	mt_buf_printf(o, "<section class=\"session\" id=\"%ss%lld\">\n<h2>%sSession %lld</h2>\n", h->pfx,
		      (long long)id, h->title ? h->title : "", (long long)id);
	mt_buf_puts(o, "<table class=\"facts\">\n<tr><th>transport</th><td>");
	esc_s(h, o, r->transport ? r->transport : "stdio");
	mt_buf_puts(o, "</td></tr>\n<tr><th>client</th><td>");
	esc_s(h, o, r->client_name ? r->client_name : "(no initialize)");
	mt_buf_putc(o, ' ');
	esc_s(h, o, r->client_version);
	mt_buf_puts(o, "</td></tr>\n<tr><th>server</th><td>");
	esc_s(h, o, r->server_name ? r->server_name : "(no answer to initialize)");
	mt_buf_putc(o, ' ');
	esc_s(h, o, r->server_version);
	if (r->command || r->upstream) {
		mt_buf_puts(o, "</td></tr>\n<tr><th>");
		mt_buf_puts(o, r->command ? "command" : "upstream");
		mt_buf_puts(o, "</th><td><code>");
		esc_s(h, o, ex_redact_target(x, r->command ? r->command : r->upstream, &h->tmp));
		mt_buf_puts(o, "</code>");
	}
	mt_buf_puts(o, "</td></tr>\n<tr><th>protocol version</th><td>");
	esc_s(h, o, r->protocol_version ? r->protocol_version : "-");
	mt_buf_printf(o,
		      "</td></tr>\n<tr><th>messages</th><td>%lld client → server, %lld server → "
		      "client, %lld stderr lines",
		      (long long)t->msgs[0], (long long)t->msgs[1], (long long)t->stderr_lines);
	if (r->gap_messages || r->gap_bytes)
		mt_buf_printf(o, "; %lld messages (%lld bytes) lost", (long long)r->gap_messages,
			      (long long)r->gap_bytes);
	mt_buf_puts(o, "</td></tr>\n<tr><th>duration</th><td>");
	duration(o, r->duration_ns >= 0 ? r->duration_ns : t->last_t - t->first_t);
	mt_buf_printf(o,
		      "</td></tr>\n<tr><th>findings</th><td><a href=\"#%ss%lld-findings\">%lld errors, "
		      "%lld warnings, %lld notes</a></td></tr>\n</table>\n",
		      h->pfx, (long long)id, (long long)sev[AN_ERROR], (long long)sev[AN_WARNING],
		      (long long)sev[AN_INFO]);

	/* Per method and per tool, prompt or resource: stats's figures. */
	mt_buf_puts(o, "<h3>Requests</h3>\n<table class=\"methods\">\n<tr><th>dir</th><th>method</th>"
		       "<th>requests</th><th>errors</th><th>isError</th><th>cancelled</th>"
		       "<th>unanswered</th><th>p50</th><th>p95</th><th>p99</th><th>max</th></tr>\n");
	for (size_t k = 0; k < t->nrows; k++) {
		const struct tally_row *w = &t->rows[order[k]];
		static const int ps[4] = {50, 95, 99, 100};
		mt_buf_printf(o, "<tr class=\"%s\"><td>%s</td><td>", w->named ? "named" : "method",
			      w->c2s ? "c→s" : "s→c");
		if (!w->named)
			w->method ? esc_s(h, o, w->method) : mt_buf_puts(o, "(other methods)");
		else
			w->name ? esc(h, o, w->name, w->name_len) : mt_buf_puts(o, "(other names)");
		mt_buf_printf(o, "</td><td>%lld</td><td>%lld</td><td>", (long long)w->requests,
			      (long long)w->errors);
		if (w->tool_call)
			mt_buf_printf(o, "%lld", (long long)w->is_error);
		else
			mt_buf_puts(o, "-");
		mt_buf_printf(o, "</td><td>%lld</td><td>%lld</td>", (long long)w->cancelled,
			      (long long)tally_unanswered(w));
		for (int j = 0; j < 4; j++) {
			mt_buf_puts(o, "<td>");
			if (w->lat.count)
				duration(o, tally_percentile(&w->lat, ps[j]));
			else
				mt_buf_puts(o, "-");
			mt_buf_puts(o, "</td>");
		}
		mt_buf_puts(o, "</tr>\n");
	}
	mt_buf_puts(o, "</table>\n");
	free(order);

	mt_buf_puts(o, "<h3>Latency</h3>\n");
	histogram(h, o);
	mt_buf_puts(o, "<h3>Errors by code</h3>\n");
	if (!t->ncodes)
		mt_buf_puts(o, "<p>No error answers.</p>\n");
	else
		mt_buf_puts(o, "<table class=\"codes\">\n<tr><th>code</th><th>meaning</th>"
			       "<th>answers</th></tr>\n");
	for (size_t i = 0; i < t->ncodes; i++) {
		int64_t c = t->codes[i].code;
		if (c == TALLY_NO_CODE)
			mt_buf_puts(o, "<tr><td>(none)</td><td>no integer code</td>");
		else if (c == TALLY_OTHER_CODES)
			mt_buf_puts(o, "<tr><td>(others)</td><td>more codes</td>");
		else
			mt_buf_printf(o, "<tr><td>%lld</td><td>%s</td>", (long long)c, code_name(c));
		mt_buf_printf(o, "<td>%lld</td></tr>\n", (long long)t->codes[i].n);
	}
	if (t->ncodes)
		mt_buf_puts(o, "</table>\n");

	/* The findings. */
	mt_buf_printf(o, "<h3 id=\"%ss%lld-findings\">Findings</h3>\n", h->pfx, (long long)id);
	if (!h->nf)
		mt_buf_puts(o, "<p>None.</p>\n");
	else
		mt_buf_puts(o, "<ol class=\"findings\">\n");
	for (size_t i = 0; i < h->nf; i++) {
		const struct hfinding *f = &h->f[i];
		mt_buf_printf(o, "<li id=\"%ss%lld-f%zu\" class=\"finding sev-%s\"><a href=\"#", h->pfx,
			      (long long)id, i + 1, an_severity_name(f->sev));
		rule_anchor(o, f->rule->id);
		mt_buf_puts(o, "\" class=\"rule\">");
		esc_s(h, o, f->rule->id);
		mt_buf_printf(o, "</a> <span class=\"sev\">%s</span> ", an_severity_name(f->sev));
		esc_s(h, o, f->text);
		if (f->seq > 0)
			mt_buf_printf(o, " <a href=\"#%ss%lld-m%lld\" class=\"at\">#%lld</a>", h->pfx,
				      (long long)id, (long long)f->seq, (long long)f->seq);
		else
			mt_buf_puts(o, " <span class=\"at\">(the session)</span>");
		mt_buf_puts(o, "</li>\n");
	}
	if (h->nf)
		mt_buf_puts(o, "</ol>\n");
	mt_buf_printf(o, "<h3>Sequence</h3>\n<p class=\"note\">");
	if (x->filtered)
		mt_buf_printf(o, "The messages the filter passes, of %lld. ",
			      (long long)(h->tally.msgs[0] + h->tally.msgs[1]));
	mt_buf_puts(o, "Follow an arrow to open its message; a dot beside it to its finding.</p>\n");
}

/* ---- the second pass: the diagram ---- */

static void page_open(struct html *h)
{
	mt_buf_reset(&h->svg);
	mt_buf_reset(&h->msgs);
	h->page_rows = 0;
}

/* s (n bytes of HTML) as a JSON string that is safe inside a <script> element. */
static void json_html(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else if (c == '<' && i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '!'))
			fputs("\\u003c", f); /* (no "</script" nor "<!--" in the element's text) */
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/*
 * The page: its SVG, then its messages. The session's first page is HTML,
 * open; the others are the same HTML as a JSON string in a script element
 * (not run: the browser reads it as text, which is quick), that the page's
 * script turns into HTML when the page is opened (or a link leads into it).
 */
static void page_flush(struct ex_sink *x, struct html *h)
{
	int64_t id = x->session->id;
	int height = TOP + (int)h->page_rows * ROW_H + 12;
	const struct store_session_row *r = x->session;
	struct mt_buf *t = &h->page;

	if (!h->page_rows)
		return;
	h->pages++;
	mt_buf_reset(t);
	mt_buf_printf(t,
		      "<svg class=\"seq\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		      "aria-label=\"session %lld, messages #%lld to #%lld\">\n",
		      WIDTH, height, WIDTH, height, (long long)id, (long long)h->page_first,
		      (long long)h->page_last);
	mt_buf_printf(t,
		      "<line class=\"lane\" x1=\"%d\" y1=\"30\" x2=\"%d\" y2=\"%d\"/>"
		      "<line class=\"lane tap\" x1=\"%d\" y1=\"30\" x2=\"%d\" y2=\"%d\"/>"
		      "<line class=\"lane\" x1=\"%d\" y1=\"30\" x2=\"%d\" y2=\"%d\"/>\n",
		      X_CLIENT, X_CLIENT, height, X_TAP, X_TAP, height, X_SERVER, X_SERVER, height);
	mt_buf_printf(t, "<text class=\"lanehead\" x=\"%d\" y=\"20\">client ", X_CLIENT);
	esc_cut(h, t, r->client_name ? r->client_name : "", r->client_name ? strlen(r->client_name) : 0, 24);
	mt_buf_printf(t,
		      "</text><text class=\"lanehead\" x=\"%d\" y=\"20\">mcptap</text>"
		      "<text class=\"lanehead\" x=\"%d\" y=\"20\">server ",
		      X_TAP, X_SERVER);
	esc_cut(h, t, r->server_name ? r->server_name : "", r->server_name ? strlen(r->server_name) : 0, 24);
	mt_buf_puts(t, "</text>\n");
	mt_buf_append(t, h->svg.data ? h->svg.data : "", h->svg.len);
	mt_buf_puts(t, "</svg>\n");
	mt_buf_append(t, h->msgs.data ? h->msgs.data : "", h->msgs.len);
	fprintf(x->out,
		"<details class=\"page%s\" id=\"%ss%lld-p%zu\" data-first=\"%lld\" data-last=\"%lld\"%s>"
		"<summary>#%lld – #%lld (%zu rows)</summary>\n",
		h->pages > 1 ? " lazy" : "", h->pfx, (long long)id, h->pages, (long long)h->page_first,
		(long long)h->page_last, h->pages == 1 ? " open" : "", (long long)h->page_first,
		(long long)h->page_last, h->page_rows);
	if (h->pages == 1) {
		fwrite(t->data, 1, t->len, x->out);
	} else {
		fputs("<noscript><p class=\"note\">This page of the diagram needs JavaScript; the "
		      "first page does not.</p></noscript><script type=\"application/json\" "
		      "class=\"page-html\">",
		      x->out);
		json_html(x->out, t->data, t->len);
		fputs("</script>\n", x->out);
	}
	fputs("</details>\n", x->out);
	page_open(h);
}

/* What an arrow says: "tools/call echo · id 3", "result · id 3 · 12ms". */
static void label(struct html *h, const struct store_item *it, struct mt_buf *o)
{
	struct mt_class c;
	enum mt_kind k = mt_classify_trusted(it->raw, it->raw_len, &c);

	mt_buf_reset(o);
	switch (k) {
	case MT_REQUEST:
	case MT_NOTIFICATION:
		mt_buf_puts(o, it->method ? it->method : "?");
		if (k == MT_REQUEST && it->method && !mt_request_subject(&c, it->method, &h->tmp)) {
			mt_buf_putc(o, ' ');
			mt_buf_append(o, h->tmp.data ? h->tmp.data : "", h->tmp.len);
		}
		break;
	case MT_RESPONSE:
		mt_buf_puts(o, "result");
		if (it->method)
			mt_buf_printf(o, " (%s)", it->method);
		break;
	case MT_ERROR:
		if (c.has_error_code)
			mt_buf_printf(o, "error %lld", (long long)c.error_code);
		else
			mt_buf_puts(o, "error");
		if (it->method)
			mt_buf_printf(o, " (%s)", it->method);
		break;
	case MT_BATCH: mt_buf_printf(o, "batch of %zu", c.batch_size); break;
	case MT_INVALID: mt_buf_puts(o, "not JSON"); break;
	default: mt_buf_puts(o, "not JSON-RPC"); break;
	}
	if ((k == MT_REQUEST || k == MT_RESPONSE || k == MT_ERROR) && c.id.n) {
		mt_buf_puts(o, " · id ");
		mt_buf_append(o, c.id.p, c.id.n);
	}
	if ((k == MT_RESPONSE || k == MT_ERROR) && it->request_seq > 0 && it->latency_ns > 0) {
		mt_buf_puts(o, " · ");
		duration(o, it->latency_ns);
	}
	if (it->replayed)
		mt_buf_puts(o, " · sent again");
}

static const char *kind_class(const char *kind)
{
	return !strcmp(kind, "request") || !strcmp(kind, "notification") || !strcmp(kind, "response") ||
			       !strcmp(kind, "error")
		       ? kind
		       : "other";
}

/* The message's panel: the line as show's, then the message indented. */
static void panel(struct ex_sink *x, struct html *h, const struct store_item *it, const char *what)
{
	struct mt_buf *o = &h->msgs;
	int64_t id = x->session->id;

	mt_buf_printf(o,
		      "<div class=\"msg\" id=\"%ss%lld-m%lld\"><a class=\"close\" href=\"#%ss%lld\">close</a>"
		      "<h4>#%lld %s ",
		      h->pfx, (long long)id, (long long)it->seq, h->pfx, (long long)id, (long long)it->seq,
		      it->dir && !strcmp(it->dir, "c2s") ? "client → server" : "server → client");
	esc(h, o, what, strlen(what));
	mt_buf_puts(o, " · +");
	duration(o, it->t_ns - h->t0);
	mt_buf_puts(o, "</h4><pre>");
	if (it->type == STORE_ITEM_MESSAGE && strcmp(it->kind, "invalid")) {
		mt_buf_reset(&h->tmp);
		mt_json_pretty(it->raw, it->raw_len, &h->tmp);
		esc(h, o, h->tmp.data ? h->tmp.data : "", h->tmp.len);
	} else {
		esc(h, o, it->raw, it->raw_len);
	}
	mt_buf_puts(o, "</pre></div>\n");
}

static void row_time(struct html *h, const struct store_item *it, int y)
{
	mt_buf_printf(&h->svg, "<text class=\"t\" x=\"%d\" y=\"%d\">+", X_TIME, y + 4);
	duration(&h->svg, it->t_ns - h->t0);
	mt_buf_puts(&h->svg, "</text>");
}

/* The dots of the findings on seq, linking to them. */
static void marks(struct ex_sink *x, struct html *h, int64_t seq, int y)
{
	int k = 0;

	while (h->fi < h->nf && h->f[h->fi].seq < seq)
		h->fi++;
	for (; h->fi < h->nf && h->f[h->fi].seq == seq; h->fi++, k++) {
		const struct hfinding *f = &h->f[h->fi];
		if (k >= 10)
			continue; /* (the list has them all) */
		mt_buf_printf(&h->svg, "<a href=\"#%ss%lld-f%zu\" class=\"mark sev-%s\"><title>", h->pfx,
			      (long long)x->session->id, h->fi + 1, an_severity_name(f->sev));
		esc_s(h, &h->svg, f->rule->id);
		mt_buf_puts(&h->svg, ": ");
		esc_s(h, &h->svg, f->text);
		mt_buf_printf(&h->svg, "</title><circle cx=\"%d\" cy=\"%d\" r=\"5\"/></a>", X_MARK + k * 14,
			      y - 4);
	}
}

static int html_item(struct ex_sink *x, const struct store_item *it)
{
	struct html *h = x->priv;
	int64_t id = x->session->id;
	struct mt_buf lab = MT_BUF_INIT;
	int y;

	if (it->type == STORE_ITEM_EXCHANGE)
		return 0;
	if (!h->have_t0 && (it->type == STORE_ITEM_MESSAGE || it->type == STORE_ITEM_STDERR)) {
		h->t0 = it->t_ns;
		h->have_t0 = 1;
	}
	if (h->page_rows == HTML_PAGE)
		page_flush(x, h);
	if (!h->page_rows)
		h->page_first = it->seq;
	h->page_last = it->seq;
	y = TOP + (int)h->page_rows * ROW_H + 14;
	h->page_rows++;
	h->rows++;
	if (it->type == STORE_ITEM_GAP) {
		mt_buf_printf(&h->svg,
			      "<g class=\"gap\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
			      "<text x=\"%d\" y=\"%d\">gap: %lld messages (%lld bytes) lost",
			      X_CLIENT, y, X_SERVER, y, X_TAP, y - 5, (long long)it->gap_messages,
			      (long long)it->gap_bytes);
		if (it->gap_reason) {
			mt_buf_puts(&h->svg, ": ");
			esc_s(h, &h->svg, it->gap_reason);
		}
		mt_buf_puts(&h->svg, "</text></g>");
		if (it->seq > 0)
			marks(x, h, it->seq, y);
		mt_buf_putc(&h->svg, '\n');
	} else if (it->type == STORE_ITEM_STDERR) {
		row_time(h, it, y);
		mt_buf_printf(&h->svg,
			      "<a href=\"#%ss%lld-m%lld\" class=\"stderr\"><rect x=\"%d\" y=\"%d\" "
			      "width=\"%d\" height=\"%d\"/><text x=\"%d\" y=\"%d\">stderr: ",
			      h->pfx, (long long)id, (long long)it->seq, X_TAP + 20, y - 14,
			      WIDTH - X_TAP - 24, ROW_H - 6, X_TAP + 26, y + 1);
		esc_cut(h, &h->svg, it->raw, it->raw_len, HTML_STDERR);
		mt_buf_puts(&h->svg, "</text></a>");
		marks(x, h, it->seq, y);
		mt_buf_putc(&h->svg, '\n');
		panel(x, h, it, "stderr");
	} else if (it->type == STORE_ITEM_MESSAGE) {
		int c2s = it->dir && !strcmp(it->dir, "c2s");
		int x1 = c2s ? X_CLIENT : X_SERVER, x2 = c2s ? X_SERVER : X_CLIENT;
		label(h, it, &lab);
		row_time(h, it, y);
		mt_buf_printf(&h->svg,
			      "<a href=\"#%ss%lld-m%lld\" class=\"arrow k-%s d-%s%s%s\" data-seq=\"%lld\">",
			      h->pfx, (long long)id, (long long)it->seq, kind_class(it->kind),
			      c2s ? "c2s" : "s2c", it->replayed ? " again" : "", diff_class(h, it),
			      (long long)it->seq);
		if (lab.len > HTML_LABEL) {
			/* (cut on the diagram: whole in its tooltip) */
			mt_buf_puts(&h->svg, "<title>");
			esc(h, &h->svg, lab.data, lab.len);
			mt_buf_puts(&h->svg, "</title>");
		}
		mt_buf_printf(&h->svg,
			      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			      "marker-end=\"url(#ah)\"/><text x=\"%d\" y=\"%d\">",
			      x1, y, x2 + (c2s ? -4 : 4), y, (X_CLIENT + X_SERVER) / 2, y - 5);
		esc_cut(h, &h->svg, lab.data ? lab.data : "", lab.len, HTML_LABEL);
		mt_buf_puts(&h->svg, "</text></a>");
		marks(x, h, it->seq, y);
		mt_buf_putc(&h->svg, '\n');
		panel(x, h, it, lab.data ? lab.data : "");
	}
	mt_buf_release(&lab);
	return 0;
}

/* ---- the document ---- */

static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 4em;color:#1b1f24;background:#fff}"
	"h1{margin:.6em 0 .2em}h2{margin-top:2em;border-bottom:2px solid #d0d7de}"
	"table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;text-align:left;"
	"border-bottom:1px solid #eaeef2}table.methods td:nth-child(n+3){text-align:right}"
	"tr.named td:nth-child(2){padding-left:2em;color:#57606a}"
	"code,pre{font:12px/1.35 ui-monospace,monospace}"
	".note{color:#57606a}.finding .sev{font-weight:600}"
	".sev-error .sev{color:#cf222e}.sev-warning .sev{color:#9a6700}.sev-info .sev{color:#0969da}"
	"details.page{margin:.4em 0}details.page>summary{cursor:pointer;color:#0969da}"
	"svg.seq{display:block;background:#fff}svg.seq text{font:11px ui-monospace,monospace}"
	".lane{stroke:#afb8c1;stroke-width:1.5}.lane.tap{stroke-dasharray:4 3}"
	".lanehead{font-weight:700;text-anchor:middle}"
	".t{fill:#57606a}.arrow line{stroke-width:1.6}.arrow text{text-anchor:middle;"
	"paint-order:stroke;stroke:#fff;stroke-width:3px}"
	".k-request.d-c2s line{stroke:#0969da}.k-request.d-c2s text{fill:#0550ae}"
	".k-request.d-s2c line{stroke:#8250df}.k-request.d-s2c text{fill:#6639ba}"
	".k-response line{stroke:#1a7f37}.k-response text{fill:#116329}"
	".k-error line{stroke:#cf222e;stroke-width:2.2}.k-error text{fill:#a40e26}"
	".k-notification line{stroke:#6e7781;stroke-dasharray:5 3}.k-notification text{fill:#57606a}"
	".k-other line{stroke:#bc4c00}.k-other text{fill:#953800}"
	".arrow:hover line{stroke-width:3}.again{opacity:.55}"
	".stderr rect{fill:#fff8c5;stroke:#d4a72c}.stderr text{fill:#7d4e00}"
	".gap line{stroke:#cf222e;stroke-dasharray:2 2;stroke-width:3}.gap text{fill:#cf222e;"
	"text-anchor:middle;font-weight:700}"
	".mark circle{stroke:#fff}.mark.sev-error circle{fill:#cf222e}"
	".mark.sev-warning circle{fill:#d4a72c}.mark.sev-info circle{fill:#0969da}"
	".hist rect{fill:#0969da}.hist text{font-size:11px;text-anchor:middle}"
	".msg{display:none}.msg:target{display:block;position:fixed;top:1em;right:1em;width:46%;"
	"max-height:88vh;overflow:auto;background:#f6f8fa;border:1px solid #8c959f;"
	"box-shadow:0 4px 16px rgba(0,0,0,.25);padding:.5em 1em;z-index:9}"
	".msg h4{margin:.3em 0}.msg .close{float:right}"
	".rules dt{font-weight:700;margin-top:.6em}"
	".sbs{display:flex;gap:1.5em;align-items:flex-start}.sbs>.side{flex:1 1 0;min-width:0;"
	"overflow-x:auto}.sbs svg.seq{width:100%;height:auto}"
	".diff-changed line{stroke:#bf8700!important;stroke-width:4!important}"
	".diff-changed text{fill:#7d4e00!important;font-weight:700}"
	".diff-added line{stroke:#1a7f37!important;stroke-width:4!important;stroke-dasharray:none!important}"
	".diff-missing "
	"line{stroke:#cf222e!important;stroke-width:4!important;stroke-dasharray:none!important}"
	".diffs td.changed{color:#7d4e00}.diffs td.added{color:#1a7f37}.diffs td.missing{color:#cf222e}";

/*
 * The one script: a page after the first becomes HTML when it is opened, or
 * when a link (#sN-mSEQ, an arrow's message) leads into it.
 */
static const char lazy_script[] =
	"(function(){"
	"function fill(d){var s=d.querySelector('script.page-html');if(!s)return;"
	"var h=JSON.parse(s.textContent);s.remove();d.insertAdjacentHTML('beforeend',h);}"
	"document.querySelectorAll('details.lazy').forEach(function(d){"
	"d.addEventListener('toggle',function(){if(d.open)fill(d);});});"
	"function seek(){var id=decodeURIComponent(location.hash.slice(1));"
	"var m=/^((?:[ab]-)?s[0-9]+)-m([0-9]+)$/.exec(id);if(!m||document.getElementById(id))return;"
	"var q=+m[2],ds=document.querySelectorAll('#'+m[1]+' details.lazy');"
	"for(var i=0;i<ds.length;i++){var d=ds[i];"
	"if(+d.dataset.first<=q&&q<=+d.dataset.last){fill(d);d.open=true;"
	"location.replace('#');location.replace('#'+id);return;}}}"
	"window.addEventListener('hashchange',seek);seek();"
	"})();";

static int html_begin(struct ex_sink *x)
{
	struct html *h = mt_calloc(1, sizeof(*h));

	x->priv = h;
	h->pfx = "";
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"generator\" content=\"mcptap\">\n<title>mcptap report: ",
	      x->out);
	mt_buf_reset(&h->svg);
	esc_s(h, &h->svg, x->path);
	fwrite(h->svg.data, 1, h->svg.len, x->out);
	fprintf(x->out, "</title>\n<style>%s</style>\n</head>\n<body>\n", style);
	fputs("<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
	      "<marker id=\"ah\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"10\" "
	      "markerHeight=\"10\" markerUnits=\"userSpaceOnUse\" orient=\"auto-start-reverse\"><path "
	      "d=\"M0,0L10,5L0,10z\" "
	      "fill=\"context-stroke\"/></marker></defs></svg>\n",
	      x->out);
	fputs("<h1>mcptap report</h1>\n<p class=\"note\">", x->out);
	fwrite(h->svg.data, 1, h->svg.len, x->out);
	fputs("</p>\n", x->out);
	mt_buf_reset(&h->svg);
	return ferror(x->out) ? mt_err_set(&x->err, "write error") : 0;
}

static int html_session(struct ex_sink *x)
{
	struct html *h = x->priv;
	struct mt_buf o = MT_BUF_INIT;

	findings_release(h);
	if (pass1(x, h))
		return -1;
	summary(x, h, &o);
	fwrite(o.data, 1, o.len, x->out);
	mt_buf_release(&o);
	h->fi = 0;
	h->have_t0 = 0;
	h->rows = 0;
	h->pages = 0;
	page_open(h);
	return ferror(x->out) ? mt_err_set(&x->err, "write error") : 0;
}

static int html_session_end(struct ex_sink *x)
{
	struct html *h = x->priv;

	page_flush(x, h);
	if (!h->rows)
		fputs("<p>No message to draw.</p>\n", x->out);
	fputs("</section>\n", x->out);
	tally_release(&h->tally);
	return ferror(x->out) ? mt_err_set(&x->err, "write error") : 0;
}

static int html_end(struct ex_sink *x)
{
	struct html *h = x->priv;
	struct mt_buf o = MT_BUF_INIT;

	mt_buf_puts(&o, "<section id=\"rules\">\n<h2>Rules</h2>\n");
	if (!h->nrules)
		mt_buf_puts(&o, "<p>No finding names a rule.</p>\n");
	mt_buf_puts(&o, "<dl class=\"rules\">\n");
	for (size_t i = 0; i < h->nrules; i++) {
		const struct an_rule *r = h->rules[i];
		mt_buf_puts(&o, "<dt id=\"");
		rule_anchor(&o, r->id);
		mt_buf_puts(&o, "\">");
		esc_s(h, &o, r->id);
		mt_buf_printf(&o, " (%s)</dt><dd>", an_severity_name(r->sev));
		esc_s(h, &o, r->summary);
		mt_buf_puts(&o, "<br><span class=\"note\">Source: ");
		esc_s(h, &o, r->source);
		mt_buf_puts(&o, ". In mcptap-rules(7): ");
		esc_s(h, &o, r->id);
		mt_buf_puts(&o, ".</span></dd>\n");
	}
	mt_buf_puts(&o, "</dl>\n</section>\n<script>");
	mt_buf_puts(&o, lazy_script);
	mt_buf_puts(&o, "</script>\n</body>\n</html>\n");
	fwrite(o.data, 1, o.len, x->out);
	mt_buf_release(&o);
	return ferror(x->out) ? mt_err_set(&x->err, "write error") : 0;
}

static void html_release(struct ex_sink *x)
{
	struct html *h = x->priv;

	if (!h)
		return;
	findings_release(h);
	free(h->f);
	free(h->rules);
	tally_release(&h->tally);
	mt_buf_release(&h->svg);
	mt_buf_release(&h->msgs);
	mt_buf_release(&h->page);
	mt_buf_release(&h->tmp);
	mt_buf_release(&h->tmp2);
	free(h);
	x->priv = NULL;
}

const struct ex_format ex_html = {
	.name = "html",
	.what = "a self-contained HTML report",
	.flags = STORE_ITEMS_PAIRED,
	.filter = 0,
	.binary = 0,
	.begin = html_begin,
	.session = html_session,
	.item = html_item,
	.session_end = html_session_end,
	.end = html_end,
	.release = html_release,
};
