/*
 * spans.h - OpenTelemetry spans of a session's messages, as the semantic
 * conventions for MCP name and attribute them: the one span builder of
 * `export -T otlp` (spans written to a file) and of the tap's --otlp (spans
 * pushed as exchanges complete). Fed with store items in seq order, it
 * gives each span's OTLP/JSON object, with its resource's, to a callback;
 * it does no I/O.
 *
 * A span is a JSON-RPC request and its answer: a CLIENT span for the side
 * that sent the request, and with MT_SPANS_SERVER the SERVER span of the side
 * that received it. The ids are hashes of the session's identity (when it
 * started, the tap that recorded it, its number) and the request's place, so
 * that spans made live and an export of the same capture have the same ids;
 * a request whose params._meta carries a W3C traceparent joins that trace.
 * A span is made when its request ends (its answer, its cancel, the
 * session's end); only the open requests are kept, OTLP_OPEN_MAX of them.
 */
#ifndef MCPTAP_SPANS_H
#define MCPTAP_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "schema/store.h"

enum { MT_SPANS_CLIENT = 1, MT_SPANS_SERVER = 2 };

struct mt_spans_opts {
	unsigned spans;    /* MT_SPANS_* (0: MT_SPANS_CLIENT) */
	int notifications; /* a span per notification too */
	int content;       /* tools' arguments and results as attributes */
};

/*
 * A span made: its JSON object (span, n bytes, NUL-terminated) and its
 * resource's ({"attributes":[...]}, NUL-terminated), both borrowed for the
 * call. Returns 0, or -1 to stop (the callee keeps why).
 */
typedef int (*mt_span_fn)(void *ctx, const char *resource, const char *span, size_t n);

struct mt_spans;

/* A new builder (o copied; emit and ctx kept). Never NULL. */
struct mt_spans *mt_spans_new(const struct mt_spans_opts *opts, mt_span_fn emit, void *ctx);
/* Frees it, with the requests still open (no span is made of them). NULL: nothing. */
void mt_spans_free(struct mt_spans *o);

/*
 * A session begins (its row s borrowed for the call): its ids, attributes and
 * resource. Requests a previous session left open are forgotten.
 */
void mt_spans_session(struct mt_spans *o, const struct store_session_row *s);
/*
 * What the session's row says changed (its handshake, its Mcp-Session-Id):
 * the attributes and resource of the spans made from now on. Ids stay.
 */
void mt_spans_session_update(struct mt_spans *o, const struct store_session_row *s);
/* Its resource's JSON object, as given to the callback (valid until the next call). */
const char *mt_spans_resource(const struct mt_spans *o);

/*
 * One item of the session, in seq order (borrowed): a message opens or ends
 * a request; every item's time counts for the session's end. 0, or the
 * callback's -1.
 */
int mt_spans_item(struct mt_spans *o, const struct store_item *it);

/*
 * The session ends after duration_ns (-1: unknown): its requests still open
 * end then (or at the latest item), unanswered. 0, or the callback's -1.
 */
int mt_spans_session_end(struct mt_spans *o, int64_t duration_ns);

#endif
