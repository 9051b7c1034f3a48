/*
 * otlppush.h - spans pushed to an OpenTelemetry Collector as they are made:
 * OTLP/HTTP with JSON bodies (an ExportTraceServiceRequest, the TracesData
 * shape), gzip-coded, POSTed in batches from a thread of its own.
 *
 * The producer (the tap's writer) never waits: a span goes into a bounded
 * queue, or is counted as dropped when the queue is full. The thread sends a
 * batch when it holds batch_spans spans or its first span has waited
 * batch_ms; a batch refused for a while (HTTP 429, 502, 503 or 504, or any
 * failure of the POST itself: a connection refused or reset, a timeout, TLS)
 * is sent again after a backoff that
 * doubles from 100 ms up to 5 s (or what Retry-After says, up to 30 s), for
 * give_up_ms at most; then, or on another status (400: the Collector will
 * never take it), its spans are counted as failed. Nothing is dropped without
 * being counted, and the counts say why.
 */
#ifndef MCPTAP_OTLPPUSH_H
#define MCPTAP_OTLPPUSH_H

#include <stddef.h>
#include <stdint.h>

#include "schema/util.h"

struct otlp_push_opts {
	const char *url;      /* where to POST: an http(s) URL; see otlp_push_url */
	char *const *headers; /* "Name: value" lines added to every POST */
	size_t nheaders;
	size_t queue_bytes; /* the queue's bound; 0: 16 MiB */
	int batch_spans;    /* spans in a POST at most; 0: 512 */
	int batch_ms;       /* a span waits this long for its batch at most; 0: 1000 */
	int give_up_ms;     /* a batch is retried this long, then failed; 0: 30000 */
	const char *cacert; /* https: a CA file, or NULL */
	int insecure;       /* https: no certificate check */
};

struct otlp_push_stats {
	int64_t queued;       /* spans taken into the queue */
	int64_t sent;         /* spans the Collector took (2xx) */
	int64_t dropped_full; /* spans not queued: the queue was full */
	int64_t failed;       /* spans given up on: refused, or not taken in time */
	int64_t posts;        /* POSTs made, retries included */
	int64_t retries;      /* POSTs made again after a failure */
	char last_error[256]; /* the last failure, "" when none */
};

struct otlp_push;

/*
 * The endpoint for a URL given on the command line: the URL itself when its
 * path ends with /v1/traces, else the URL with /v1/traces appended to its path
 * (as OTEL_EXPORTER_OTLP_ENDPOINT is read). A new string, or NULL with err set
 * when the URL is not http(s).
 */
char *otlp_push_url(const char *url, struct mt_err *err);

/* Start the sending thread. NULL with err set when it cannot start. */
struct otlp_push *otlp_push_start(const struct otlp_push_opts *o, struct mt_err *err);

/*
 * Queue one span: its JSON object, and its resource's JSON object (spans of
 * equal resource texts go under one resource in a POST). Never blocks. 0, or
 * -1 when the queue is full (the span is counted in dropped_full).
 */
int otlp_push_span(struct otlp_push *p, const char *resource, const char *span);

/*
 * otlp_push_span with a tag of the producer's (the tap: the session's id in
 * its capture): the spans of a tag that are not sent are counted apart
 * (otlp_push_finish). otlp_push_span is this with tag 0.
 */
int otlp_push_span_tagged(struct otlp_push *p, int64_t tag, const char *resource, const char *span);

/* The counts so far (a copy). */
void otlp_push_stats(struct otlp_push *p, struct otlp_push_stats *st);

/*
 * Send what is queued, for deadline_ms at most (then what is left is counted
 * as failed), stop the thread and free p; st gets the last counts (may be
 * NULL).
 */
void otlp_push_stop(struct otlp_push *p, int deadline_ms, struct otlp_push_stats *st);

/* The spans of one tag that were not sent: dropped (queue full) or failed. */
struct otlp_push_lost {
	int64_t tag;
	int64_t spans;
};
/*
 * otlp_push_stop, and the spans not sent, by tag: *lost (owned by the
 * caller, free()) gets *nlost entries, in the order their tags first lost
 * one; NULL and 0 when nothing was lost. lost and nlost may be NULL.
 */
void otlp_push_finish(struct otlp_push *p, int deadline_ms, struct otlp_push_stats *st,
		      struct otlp_push_lost **lost, size_t *nlost);

#endif
