/*
 * otlp.c - export -T otlp: OpenTelemetry traces, as the OpenTelemetry
 * Collector's otlpjsonfile receiver reads them: JSON Lines, each line a
 * TracesData in OTLP/JSON (ids in lowercase hex, enums as integers, 64-bit
 * integers as decimal strings), one resource per session, up to
 * OTLP_LINE_SPANS spans a line.
 *
 * The spans are schema/spans.c's, as the tap's --otlp pushes them: a span
 * per request and its answer, with ids that a second export of the same
 * file, and the tap that recorded it, give again. This file only cuts them
 * into lines. Streaming: a span is written when its request ends (its
 * answer, its cancel, the session's end); only the open requests are kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export/export.h"
#include "schema/spans.h"

#define OTLP_LINE_SPANS 512 /* spans a line at most */

struct otlp {
	struct mt_spans *spans;
	struct ex_sink *x;
	struct mt_buf head; /* a line's opening, up to its spans' '[' */
	int in_line;        /* a line is open */
	size_t line_spans;  /* spans in it */
};

static int put_out(struct ex_sink *x, const void *p, size_t n)
{
	if (fwrite(p, 1, n, x->out) != n) {
		mt_err_set(&x->err, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

static int end_line(struct otlp *o)
{
	static const char tail[] = "]}]}]}\n";

	if (!o->in_line)
		return 0;
	o->in_line = 0;
	o->line_spans = 0;
	return put_out(o->x, tail, sizeof(tail) - 1);
}

/* A span made (mt_span_fn), written as the next of its line. */
static int put_span(void *ctx, const char *resource, const char *span, size_t n)
{
	struct otlp *o = ctx;

	(void)resource; /* (the session's, in the line's head) */
	if (o->in_line ? put_out(o->x, ",", 1) : put_out(o->x, o->head.data, o->head.len))
		return -1;
	o->in_line = 1;
	if (put_out(o->x, span, n))
		return -1;
	return ++o->line_spans == OTLP_LINE_SPANS ? end_line(o) : 0;
}

static int otlp_item(struct ex_sink *x, const struct store_item *it)
{
	struct otlp *o = x->priv;

	return mt_spans_item(o->spans, it);
}

static int otlp_session(struct ex_sink *x)
{
	struct otlp *o = x->priv;

	mt_spans_session(o->spans, x->session);
	mt_buf_reset(&o->head);
	mt_buf_puts(&o->head, "{\"resourceSpans\":[{\"resource\":");
	mt_buf_puts(&o->head, mt_spans_resource(o->spans));
	mt_buf_printf(&o->head,
		      ",\"scopeSpans\":[{\"scope\":{\"name\":\"mcptap\",\"version\":\"%s\"},"
		      "\"spans\":[",
		      MCPTAP_VERSION);
	return 0;
}

/* The requests still open end with the session, unanswered; its last line ends. */
static int otlp_session_end(struct ex_sink *x)
{
	struct otlp *o = x->priv;

	if (mt_spans_session_end(o->spans, x->session->duration_ns))
		return -1;
	return end_line(o);
}

static int otlp_begin(struct ex_sink *x)
{
	struct otlp *o = calloc(1, sizeof(*o));
	struct mt_spans_opts so;

	if (!o) {
		mt_err_set(&x->err, "out of memory");
		return -1;
	}
	memset(&so, 0, sizeof(so));
	so.spans = (x->o->spans & EX_SPANS_CLIENT ? MT_SPANS_CLIENT : 0) |
		   (x->o->spans & EX_SPANS_SERVER ? MT_SPANS_SERVER : 0);
	so.notifications = x->o->notifications;
	so.content = x->o->content;
	o->x = x;
	o->spans = mt_spans_new(&so, put_span, o);
	x->priv = o;
	return 0;
}

static void otlp_release(struct ex_sink *x)
{
	struct otlp *o = x->priv;

	if (!o)
		return;
	mt_spans_free(o->spans);
	mt_buf_release(&o->head);
	free(o);
	x->priv = NULL;
}

const struct ex_format ex_otlp = {
	.name = "otlp",
	.what = "OpenTelemetry traces (OTLP/JSON Lines): a span per request",
	.flags = 0,
	.filter = STORE_FILTER_PAIRS,
	.begin = otlp_begin,
	.session = otlp_session,
	.item = otlp_item,
	.session_end = otlp_session_end,
	.release = otlp_release,
};
