/*
 * otlppush.c - spans to an OpenTelemetry Collector over OTLP/HTTP (JSON,
 * gzip), from a thread of its own, so that neither the relay nor the store
 * ever waits for a Collector. See otlppush.h.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "tap/otlppush.h"

#include "schema/map.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define RETRY_AFTER_MAX_MS 30000
#define POST_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 5000

struct span {
	struct span *next;
	char *resource, *text; /* in data */
	size_t bytes;
	int64_t at_ns; /* when it was queued */
	int64_t tag;   /* the producer's (otlp_push_span_tagged) */
	char data[];   /* the resource's text, then the span's (one allocation a span) */
};

struct otlp_push {
	struct otlp_push_opts o;
	char *url;
	struct curl_slist *hdrs;
	CURL *e;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct span *head, *tail; /* the queue */
	size_t nq, qbytes;
	int stopping;
	int64_t deadline_ns; /* stopping: when to give up what is left */
	struct otlp_push_stats st;
	struct mt_map lost_at;       /* under mu: tag -> its index in lost */
	struct otlp_push_lost *lost; /* ... the spans of each tag not sent */
	size_t nlost;
	char errbuf[CURL_ERROR_SIZE];
	struct mt_buf resp; /* the last response's body */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void abs_time(int64_t mono_ns, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	int64_t t = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
	if (mono_ns > t)
		t = mono_ns;
	ts->tv_sec = t / 1000000000;
	ts->tv_nsec = t % 1000000000;
}

char *otlp_push_url(const char *url, struct mt_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *path = NULL, *out = NULL, *res = NULL;

	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
		mt_err_set(err, "not an http:// or https:// URL");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		path = NULL;
	size_t n = path ? strlen(path) : 0;
	static const char tail[] = "/v1/traces";
	if (n < sizeof(tail) - 1 || strcmp(path + n - (sizeof(tail) - 1), tail)) {
		struct mt_buf b = {0};
		mt_buf_append(&b, path ? path : "", n);
		while (b.len && b.data[b.len - 1] == '/')
			b.len--;
		mt_buf_puts(&b, tail);
		if (curl_url_set(u, CURLUPART_PATH, b.data, 0) != CURLUE_OK) {
			mt_buf_release(&b);
			mt_err_set(err, "cannot add %s to its path", tail);
			goto out;
		}
		mt_buf_release(&b);
	}
	if (curl_url_get(u, CURLUPART_URL, &out, 0) == CURLUE_OK)
		res = mt_strdup(out);
	else
		mt_err_set(err, "not a URL");
out:
	curl_free(scheme);
	curl_free(path);
	curl_free(out);
	curl_url_cleanup(u);
	return res;
}

/* A POST under way is cut short once the tap stops past its deadline. */
static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct otlp_push *p = ctx;

	(void)dt, (void)dn, (void)ut, (void)un;
	return __atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE) &&
	       now_ns() > __atomic_load_n(&p->deadline_ns, __ATOMIC_ACQUIRE);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct otlp_push *p_ = ctx;

	if (p_->resp.len < 65536)
		mt_buf_append(&p_->resp, p, size * n);
	return size * n;
}

/* The request body for the spans of list (n of them): one resource a group. */
static void make_body(struct span *list, struct mt_buf *out)
{
	struct group {
		const char *resource;
		struct mt_buf spans;
	} *g = NULL;
	size_t ng = 0;

	for (struct span *s = list; s; s = s->next) {
		size_t k = 0;
		while (k < ng && strcmp(g[k].resource, s->resource))
			k++;
		if (k == ng) {
			g = mt_realloc(g, (ng + 1) * sizeof(*g));
			g[ng].resource = s->resource;
			memset(&g[ng].spans, 0, sizeof(g[ng].spans));
			ng++;
		}
		if (g[k].spans.len)
			mt_buf_putc(&g[k].spans, ',');
		mt_buf_puts(&g[k].spans, s->text);
	}
	mt_buf_reset(out);
	mt_buf_puts(out, "{\"resourceSpans\":[");
	for (size_t k = 0; k < ng; k++) {
		mt_buf_printf(out,
			      "%s{\"resource\":%s,\"scopeSpans\":[{\"scope\":{\"name\":\"mcptap\","
			      "\"version\":\"%s\"},\"spans\":[",
			      k ? "," : "", g[k].resource, MCPTAP_VERSION);
		mt_buf_append(out, g[k].spans.data ? g[k].spans.data : "", g[k].spans.len);
		mt_buf_puts(out, "]}]}");
		mt_buf_release(&g[k].spans);
	}
	mt_buf_puts(out, "]}");
	free(g);
}

/* in, gzip-coded, into out. 0, or -1. */
static int gzip(const struct mt_buf *in, struct mt_buf *out)
{
	z_stream z;
	uLong bound;

	memset(&z, 0, sizeof(z));
	/* (The fastest level: spans repeat themselves, and the tap's CPU is the relay's.) */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	bound = deflateBound(&z, (uLong)in->len) + 32;
	mt_buf_reset(out);
	mt_buf_reserve(out, bound);
	z.next_in = (Bytef *)(in->data ? in->data : "");
	z.avail_in = (uInt)in->len;
	z.next_out = (Bytef *)out->data;
	z.avail_out = (uInt)bound;
	int rc = deflate(&z, Z_FINISH);
	out->len = bound - z.avail_out;
	deflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

/* The spans the Collector says it rejected (partialSuccess.rejectedSpans). */
static int64_t rejected(const struct mt_buf *resp)
{
	json_t *v = resp->len ? json_loadb(resp->data, resp->len, 0, NULL) : NULL;
	json_t *r = json_object_get(json_object_get(v, "partialSuccess"), "rejectedSpans");
	int64_t n = 0;

	if (json_is_string(r))
		n = strtoll(json_string_value(r), NULL, 10);
	else if (json_is_integer(r))
		n = json_integer_value(r);
	json_decref(v);
	return n > 0 ? n : 0;
}

enum post_result { POST_OK, POST_RETRY, POST_FAIL };

/* One POST of body; *retry_ms: what Retry-After asked, or 0. */
static enum post_result post(struct otlp_push *p, const struct mt_buf *body, long *status, long *retry_ms)
{
	CURLcode rc;
	curl_off_t ra = -1;

	*status = 0;
	*retry_ms = 0;
	mt_buf_reset(&p->resp);
	p->errbuf[0] = 0;
	curl_easy_setopt(p->e, CURLOPT_POSTFIELDS, body->data);
	curl_easy_setopt(p->e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	rc = curl_easy_perform(p->e);
	if (rc != CURLE_OK) {
		pthread_mutex_lock(&p->mu);
		snprintf(p->st.last_error, sizeof(p->st.last_error), "%s",
			 p->errbuf[0] ? p->errbuf : curl_easy_strerror(rc));
		pthread_mutex_unlock(&p->mu);
		return POST_RETRY;
	}
	curl_easy_getinfo(p->e, CURLINFO_RESPONSE_CODE, status);
	if (curl_easy_getinfo(p->e, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		*retry_ms = ra > RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS : (long)ra * 1000;
	if (*status >= 200 && *status < 300)
		return POST_OK;
	pthread_mutex_lock(&p->mu);
	snprintf(p->st.last_error, sizeof(p->st.last_error), "HTTP %ld from %s", *status, p->url);
	pthread_mutex_unlock(&p->mu);
	if (*status == 429 || *status == 502 || *status == 503 || *status == 504)
		return POST_RETRY;
	return POST_FAIL;
}

/* Sleep ms, or less when p is told to stop past its deadline. 1 when it should give up. */
static int backoff(struct otlp_push *p, long ms, int64_t give_up_ns)
{
	struct timespec ts;
	int64_t until = now_ns() + (int64_t)ms * 1000000;
	int quit = 0;

	if (until > give_up_ns)
		return 1;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->stopping && until > p->deadline_ns) {
			quit = 1;
			break;
		}
		if (now_ns() >= until)
			break;
		abs_time(p->stopping && p->deadline_ns < until ? p->deadline_ns : until, &ts);
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	pthread_mutex_unlock(&p->mu);
	return quit;
}

/* A span of tag not sent (under mu). */
static void lost_one(struct otlp_push *p, int64_t tag)
{
	int64_t i;

	if (!mt_map_get(&p->lost_at, &tag, sizeof(tag), &i)) {
		i = (int64_t)p->nlost++;
		p->lost = mt_realloc(p->lost, p->nlost * sizeof(*p->lost));
		p->lost[i].tag = tag;
		p->lost[i].spans = 0;
		(void)mt_map_put(&p->lost_at, &tag, sizeof(tag), i);
	}
	p->lost[i].spans++;
}

/* The last n spans of list (nall of them) not sent (under mu). */
static void lost_last(struct otlp_push *p, struct span *list, int64_t nall, int64_t n)
{
	for (int64_t i = 0; list; list = list->next, i++)
		if (i >= nall - n)
			lost_one(p, list->tag);
}

/* Send the n spans of list, retrying as it may; count what came of them. */
static void send_batch(struct otlp_push *p, struct span *list, int64_t n)
{
	struct mt_buf body = {0}, gz = {0};
	int64_t give_up_ns = now_ns() + (int64_t)p->o.give_up_ms * 1000000;
	long wait = BACKOFF_MIN_MS, status, retry_ms;
	int64_t sent = 0, failed = n;

	make_body(list, &body);
	if (gzip(&body, &gz)) {
		pthread_mutex_lock(&p->mu);
		snprintf(p->st.last_error, sizeof(p->st.last_error), "cannot gzip a batch");
		pthread_mutex_unlock(&p->mu);
		goto out;
	}
	for (int tries = 0;; tries++) {
		enum post_result r = post(p, &gz, &status, &retry_ms);
		pthread_mutex_lock(&p->mu);
		p->st.posts++;
		p->st.retries += tries > 0;
		pthread_mutex_unlock(&p->mu);
		if (r == POST_OK) {
			int64_t rej = rejected(&p->resp);
			if (rej > n)
				rej = n;
			sent = n - rej;
			failed = rej;
			if (rej) {
				pthread_mutex_lock(&p->mu);
				snprintf(p->st.last_error, sizeof(p->st.last_error),
					 "the Collector rejected %lld spans", (long long)rej);
				pthread_mutex_unlock(&p->mu);
			}
			break;
		}
		if (r == POST_FAIL || backoff(p, retry_ms ? retry_ms : wait, give_up_ns))
			break;
		wait = wait * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : wait * 2;
	}
out:
	pthread_mutex_lock(&p->mu);
	p->st.sent += sent;
	p->st.failed += failed;
	lost_last(p, list, n, failed);
	pthread_mutex_unlock(&p->mu);
	mt_buf_release(&body);
	mt_buf_release(&gz);
}

static void free_spans(struct span *s)
{
	while (s) {
		struct span *next = s->next;
		free(s);
		s = next;
	}
}

static void *push_main(void *arg)
{
	struct otlp_push *p = arg;
	struct timespec ts;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		/* A batch is due when full, when its first span has waited enough, or at the end. */
		while (!p->stopping &&
		       (!p->nq || ((int)p->nq < p->o.batch_spans &&
				   now_ns() < p->head->at_ns + (int64_t)p->o.batch_ms * 1000000))) {
			if (p->nq) {
				abs_time(p->head->at_ns + (int64_t)p->o.batch_ms * 1000000, &ts);
				pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			} else {
				pthread_cond_wait(&p->cv, &p->mu);
			}
		}
		if (!p->nq)
			break; /* stopping, and nothing left */
		if (p->stopping && now_ns() >= p->deadline_ns) {
			/* Out of time: what is left is not sent. */
			p->st.failed += (int64_t)p->nq;
			lost_last(p, p->head, (int64_t)p->nq, (int64_t)p->nq);
			snprintf(p->st.last_error, sizeof(p->st.last_error),
				 "%zu spans still queued when the tap stopped", p->nq);
			free_spans(p->head);
			p->head = p->tail = NULL;
			p->nq = p->qbytes = 0;
			break;
		}
		struct span *list = p->head, *last = list;
		int64_t n = 1;
		while (n < p->o.batch_spans && last->next) {
			last = last->next;
			n++;
		}
		p->head = last->next;
		if (!p->head)
			p->tail = NULL;
		last->next = NULL;
		p->nq -= (size_t)n;
		for (struct span *s = list; s; s = s->next)
			p->qbytes -= s->bytes;
		pthread_mutex_unlock(&p->mu);
		send_batch(p, list, n);
		free_spans(list);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct otlp_push *otlp_push_start(const struct otlp_push_opts *o, struct mt_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct otlp_push *p;
	struct curl_slist *l;
	int e;

	/* (curl's global set-up is not thread-safe: once, before any handle.) */
	pthread_once(&once, curl_init_once);
	p = mt_calloc(1, sizeof(*p));
	p->o = *o;
	p->o.headers = NULL;
	if (!p->o.queue_bytes)
		p->o.queue_bytes = 16u << 20;
	if (p->o.batch_spans <= 0)
		p->o.batch_spans = 512;
	if (p->o.batch_ms <= 0)
		p->o.batch_ms = 1000;
	if (p->o.give_up_ms <= 0)
		p->o.give_up_ms = 30000;
	if (!(p->url = otlp_push_url(o->url, err)))
		goto fail;
	if (!(p->e = curl_easy_init())) {
		mt_err_set(err, "cannot set up an HTTP client");
		goto fail;
	}
	p->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if ((l = curl_slist_append(p->hdrs, "Content-Encoding: gzip")))
		p->hdrs = l;
	if ((l = curl_slist_append(p->hdrs, "Expect:")))
		p->hdrs = l;
	for (size_t i = 0; i < o->nheaders; i++)
		if ((l = curl_slist_append(p->hdrs, o->headers[i])))
			p->hdrs = l;
	curl_easy_setopt(p->e, CURLOPT_URL, p->url);
	curl_easy_setopt(p->e, CURLOPT_HTTPHEADER, p->hdrs);
	curl_easy_setopt(p->e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->e, CURLOPT_ERRORBUFFER, p->errbuf);
	curl_easy_setopt(p->e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(p->e, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(p->e, CURLOPT_TIMEOUT_MS, (long)POST_TIMEOUT_MS);
	curl_easy_setopt(p->e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(p->e, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->e, CURLOPT_USERAGENT, "mcptap/" MCPTAP_VERSION);
	curl_easy_setopt(p->e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(p->e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(p->e, CURLOPT_XFERINFODATA, p);
	if (o->cacert)
		curl_easy_setopt(p->e, CURLOPT_CAINFO, o->cacert);
	if (o->insecure) {
		curl_easy_setopt(p->e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(p->e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	pthread_mutex_init(&p->mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if ((e = pthread_create(&p->thread, NULL, push_main, p))) {
		mt_err_set(err, "cannot start a thread: %s", strerror(e));
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		goto fail;
	}
	return p;
fail:
	if (p->e)
		curl_easy_cleanup(p->e);
	curl_slist_free_all(p->hdrs);
	free(p->url);
	free(p);
	return NULL;
}

int otlp_push_span(struct otlp_push *p, const char *resource, const char *span)
{
	return otlp_push_span_tagged(p, 0, resource, span);
}

int otlp_push_span_tagged(struct otlp_push *p, int64_t tag, const char *resource, const char *span)
{
	size_t rn = strlen(resource) + 1, sn = strlen(span) + 1;
	size_t bytes = rn + sn + sizeof(struct span);
	struct span *s;

	/* (Copied before the lock: the thread takes spans meanwhile.) */
	s = mt_malloc(bytes);
	s->next = NULL;
	s->resource = s->data;
	s->text = s->data + rn;
	memcpy(s->resource, resource, rn);
	memcpy(s->text, span, sn);
	s->bytes = bytes;
	s->at_ns = now_ns();
	s->tag = tag;
	pthread_mutex_lock(&p->mu);
	if (p->stopping || p->qbytes + bytes > p->o.queue_bytes) {
		p->st.dropped_full++;
		lost_one(p, tag);
		pthread_mutex_unlock(&p->mu);
		free_spans(s);
		return -1;
	}
	if (p->tail)
		p->tail->next = s;
	else
		p->head = s;
	p->tail = s;
	p->nq++;
	p->qbytes += bytes;
	p->st.queued++;
	if (p->nq == 1 || (int)p->nq >= p->o.batch_spans)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void otlp_push_stats(struct otlp_push *p, struct otlp_push_stats *st)
{
	pthread_mutex_lock(&p->mu);
	*st = p->st;
	pthread_mutex_unlock(&p->mu);
}

void otlp_push_stop(struct otlp_push *p, int deadline_ms, struct otlp_push_stats *st)
{
	otlp_push_finish(p, deadline_ms, st, NULL, NULL);
}

void otlp_push_finish(struct otlp_push *p, int deadline_ms, struct otlp_push_stats *st,
		      struct otlp_push_lost **lost, size_t *nlost)
{
	if (lost)
		*lost = NULL;
	if (nlost)
		*nlost = 0;
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	__atomic_store_n(&p->deadline_ns, now_ns() + (int64_t)deadline_ms * 1000000, __ATOMIC_RELEASE);
	__atomic_store_n(&p->stopping, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	if (st)
		*st = p->st;
	if (lost && nlost) {
		*lost = p->lost;
		*nlost = p->nlost;
		p->lost = NULL;
	}
	free(p->lost);
	mt_map_release(&p->lost_at);
	free_spans(p->head);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	curl_easy_cleanup(p->e);
	curl_slist_free_all(p->hdrs);
	mt_buf_release(&p->resp);
	free(p->url);
	free(p);
}
