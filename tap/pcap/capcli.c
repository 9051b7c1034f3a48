/*
 * capcli.c - what `mcptap import` and `mcptap sniff` share (see capcli.h).
 */
#include "tap/pcap/capcli.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/store.h"

void capcli_init(struct capcli *o, const struct cmd_entry *e, int argc)
{
	memset(o, 0, sizeof(*o));
	o->e = e;
	mt_import_opts_default(&o->io);
	o->rules = mt_calloc((size_t)argc + 1, sizeof(*o->rules));
	o->kinds = mt_calloc((size_t)argc + 1, 1);
	otlp_cli_init(&o->otlp, e, argc);
}

void capcli_release(struct capcli *o)
{
	mt_redact_free(o->red);
	free(o->rules);
	free(o->kinds);
	otlp_cli_release(&o->otlp);
	memset(o, 0, sizeof(*o));
}

int capcli_option(struct capcli *o, int c, const char *arg)
{
	uint64_t size;
	int64_t n, ns;

	switch (c) {
	case 'w': o->path = arg; return 1;
	case 'f': o->filter = arg; return 1;
	case 0x100:
		if (mt_parse_size(arg, &size) || size == 0 || size > (1ULL << 31) - 1) {
			cli_usage_error(o->e, "bad --max-message '%s' (1 byte to 2G less one)", arg);
			return -1;
		}
		o->io.wopts.max_message = size;
		o->io.hx.max_body = size;
		return 1;
	case 0x101:
	case 0x102:
		if (mt_parse_size(arg, &size) || size < 4096 || size > (1ULL << 40)) {
			cli_usage_error(o->e, "bad --%s '%s' (4k to 1T)",
					c == 0x101 ? "flow-memory" : "memory", arg);
			return -1;
		}
		*(c == 0x101 ? &o->io.limits.flow_bytes : &o->io.limits.total_bytes) = size;
		o->flow_set |= c == 0x101;
		return 1;
	case 0x103:
		if (mt_parse_duration(arg, MT_SEC, &ns) || ns < MT_MS || ns > 365 * 24 * MT_HOUR) {
			cli_usage_error(o->e,
					"bad --idle '%s' (a duration, 1ms to 8760h: 500ms, 2m; a "
					"bare number is seconds)",
					arg);
			return -1;
		}
		o->io.limits.idle_ms = mt_duration_in(ns, MT_MS);
		return 1;
	case 0x104:
		if (mt_parse_int64(arg, &n) || n < 1 || n > 100000000) {
			cli_usage_error(o->e, "bad --max-flows '%s' (1 to 100000000)", arg);
			return -1;
		}
		o->io.limits.max_flows = (size_t)n;
		return 1;
	case 'K':
	case 'P':
	case 'V':
		o->kinds[o->nrules] = (char)c;
		o->rules[o->nrules++] = arg;
		return 1;
	case 'k': o->keep = 1; return 1;
	}
	return otlp_cli_option(&o->otlp, c, arg);
}

int capcli_ready(struct capcli *o)
{
	int bad = 0;

	o->path = cli_capture_path(o->path);
	if (!o->path) {
		cli_usage_error(o->e, "no capture file to write: give -w FILE or set MCPTAP_FILE");
		return -1;
	}
	if (o->keep && o->nrules) {
		cli_usage_error(o->e, "--keep-secrets and --redact-* contradict each other");
		return -1;
	}
	if (o->io.limits.flow_bytes > o->io.limits.total_bytes) {
		if (o->flow_set) {
			cli_usage_error(o->e, "--flow-memory is larger than --memory");
			return -1;
		}
		/* (--memory alone, below the default --flow-memory: one connection may take it all) */
		o->io.limits.flow_bytes = o->io.limits.total_bytes;
	}
	if (!o->keep) {
		o->red = cli_redactor(o->e, o->kinds, o->rules, o->nrules, &bad);
		if (bad)
			return -1;
	}
	snprintf(o->label, sizeof(o->label), "'%s'", o->path);
	o->io.wopts.redact = o->red;
	o->io.wopts.label = o->label;
	o->io.wopts.goes_on = "what is read is not stored";
	o->io.db_path = o->path;
	return otlp_cli_apply(&o->otlp, &o->io.wopts);
}

/* ---- running ---- */

static volatile sig_atomic_t stop_flag; /* the signal that stopped the run, or 0 */
static struct mt_capture *running;

static void on_stop_signal(int sig)
{
	if (!stop_flag)
		stop_flag = sig;
	if (running)
		mt_capture_breakloop(running);
}

/* What the run says, handed to the caller to print (r->voice). */
static void say(const struct capcli_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct capcli_run *r, const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	text = mt_vasprintf(fmt, ap);
	va_end(ap);
	mt_voice_say(&r->voice, text);
	free(text);
}

/* A size for people: "812 B", "12.3 kB", "4.2 MB". */
static void fmt_bytes(uint64_t n, char out[32])
{
	if (n < 1000)
		snprintf(out, 32, "%llu B", (unsigned long long)n);
	else if (n < 1000000)
		snprintf(out, 32, "%.1f kB", (double)n / 1e3);
	else if (n < 1000000000)
		snprintf(out, 32, "%.1f MB", (double)n / 1e6);
	else
		snprintf(out, 32, "%.2f GB", (double)n / 1e9);
}

/* Progress on a terminal. */
struct progress {
	int tty;
	int shown; /* a line is on the screen: cleared before anything else */
	int64_t last_ns;
	const char *what;
	struct mt_import *im;
	const struct capcli_run *r; /* where it is said */
};

/* A file's progress, at most every 200 ms, for files of 8 MB and more. */
static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	int64_t now = mt_mono_ns();
	char d[32], t[32];

	if (!p->tty || total < (8u << 20) || now - p->last_ns < 200000000)
		return;
	p->last_ns = now;
	fmt_bytes(done, d);
	fmt_bytes(total, t);
	{
		struct mt_import_stats st;
		mt_import_stats(p->im, &st);
		say(p->r, "\rmcptap: reading %s: %3d%% (%s of %s), %llu sessions, %llu messages\033[K",
		    p->what, (int)(done * 100 / total), d, t, (unsigned long long)st.hl.sessions,
		    (unsigned long long)st.hl.messages);
	}
	p->shown = 1;
}

/* A live capture's counts, after each slice of it. */
static void live_progress(struct progress *p, struct mt_capture *cap)
{
	struct mt_capture_stats cs;
	struct mt_import_stats st;

	if (!p->tty)
		return;
	mt_capture_stats(cap, &cs);
	mt_import_stats(p->im, &st);
	say(p->r,
	    "\rmcptap: capturing on %s: %llu packets, %llu connections, %llu sessions, %llu "
	    "messages\033[K",
	    p->what, (unsigned long long)cs.packets, (unsigned long long)st.tf.connections,
	    (unsigned long long)st.hl.sessions, (unsigned long long)st.hl.messages);
	p->shown = 1;
}

static void progress_clear(struct progress *p)
{
	if (p->shown)
		say(p->r, "\r\033[K");
	p->shown = 0;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* The summary: what was read, what was stored, what was skipped and why. */
static void summary(const struct capcli *o, const struct capcli_run *r, struct mt_capture *cap,
		    const struct mt_import_stats *st, int stored)
{
	const struct tf_stats *t = &st->tf;
	const struct hx_stats *h = &st->hx;
	struct mt_capture_stats cs;
	char b[32], b2[32];

	mt_capture_stats(cap, &cs);
	fmt_bytes(t->bytes, b);
	if (stored)
		say(r, "mcptap: %s %s into %s\n", r->live ? "captured" : "imported", r->what, o->label);
	else
		say(r,
		    "mcptap: read %s, but storing into %s failed (said above): what "
		    "follows was found, not all of it stored\n",
		    r->what, o->label);
	say(r, "  packets      %llu (%s)\n", (unsigned long long)t->packets, b);
	say(r, "  connections  %llu (%llu HTTP/1.x)\n", (unsigned long long)t->connections,
	    (unsigned long long)h->http);
	say(r, "  sessions     %llu (%llu Streamable HTTP or plain JSON-RPC, %llu legacy SSE)\n",
	    (unsigned long long)st->hl.sessions, (unsigned long long)(st->hl.sessions - st->hl.sessions_sse),
	    (unsigned long long)st->hl.sessions_sse);
	say(r, "  exchanges    %llu\n", (unsigned long long)st->hl.exchanges);
	say(r, "  messages     %llu\n", (unsigned long long)st->hl.messages);
	fmt_bytes(st->hl.gap_bytes, b);
	say(r, "  gaps         %llu (%s not captured or not stored)\n", (unsigned long long)st->hl.gaps, b);
	if (cs.live)
		say(r, "  kernel       %llu received, %llu dropped, %llu dropped by the interface\n",
		    (unsigned long long)cs.received, (unsigned long long)cs.dropped,
		    (unsigned long long)cs.if_dropped);

	/* What was not read, and why. */
	if (h->tls) {
		fmt_bytes(h->tls_bytes, b);
		say(r,
		    "  skipped: TLS: %llu %s (%s), not decodable; decrypting with an "
		    "SSLKEYLOGFILE-style key log is future work\n",
		    (unsigned long long)h->tls, plural(h->tls, "connection", "connections"), b);
		for (size_t i = 0; i < h->n_tls_servers; i++) {
			char s[80];
			const struct hx_end *he = &h->tls_servers[i].server;
			struct tf_end e;
			memset(&e, 0, sizeof(e));
			e.family = he->family;
			memcpy(e.addr, he->addr, sizeof(e.addr));
			e.port = he->port;
			tf_end_str(&e, s, sizeof(s), 0);
			fmt_bytes(h->tls_servers[i].bytes, b);
			say(r, "    to %s: %llu %s, %s\n", s,
			    (unsigned long long)h->tls_servers[i].connections,
			    plural(h->tls_servers[i].connections, "connection", "connections"), b);
		}
		if (h->tls_servers_more)
			say(r, "    to other servers: %llu connections\n",
			    (unsigned long long)h->tls_servers_more);
	}
	if (h->h2) {
		fmt_bytes(h->h2_bytes, b);
		say(r, "  skipped: HTTP/2: %llu %s (%s): mcptap reads HTTP/1.x\n", (unsigned long long)h->h2,
		    plural(h->h2, "connection", "connections"), b);
	}
	if (h->other) {
		fmt_bytes(h->other_bytes, b);
		say(r, "  skipped: not HTTP: %llu TCP %s (%s) of another protocol\n",
		    (unsigned long long)h->other, plural(h->other, "connection", "connections"), b);
	}
	if (h->unsynced) {
		fmt_bytes(h->unsynced_bytes, b);
		say(r,
		    "  skipped: %llu %s seen from the middle (%s) where no HTTP message "
		    "began\n",
		    (unsigned long long)h->unsynced, plural(h->unsynced, "connection", "connections"), b);
	}
	if (h->upgraded)
		say(r, "  skipped: %llu %s switched to another protocol (101, CONNECT)\n",
		    (unsigned long long)h->upgraded, plural(h->upgraded, "connection", "connections"));
	if (t->bad_link)
		say(r, "  skipped: %llu %s of a link type mcptap cannot read (%s)\n",
		    (unsigned long long)t->bad_link, plural(t->bad_link, "packet", "packets"),
		    *mt_capture_linktype_name(cap) ? mt_capture_linktype_name(cap) : "unknown");
	if (t->not_ip || t->not_tcp)
		say(r, "  skipped: %llu %s not IP, %llu not TCP\n", (unsigned long long)t->not_ip,
		    plural(t->not_ip, "packet", "packets"), (unsigned long long)t->not_tcp);
	if (t->malformed)
		say(r, "  skipped: %llu malformed %s (headers that do not add up)\n",
		    (unsigned long long)t->malformed, plural(t->malformed, "packet", "packets"));
	if (t->truncated)
		say(r,
		    "  truncated: %llu %s cut by the snap length (what was captured was "
		    "used; what was cut is a gap)\n",
		    (unsigned long long)t->truncated, plural(t->truncated, "packet", "packets"));
	if (t->fragments)
		say(r, "  fragments:  %llu IP fragments made %llu datagrams (%llu given up on)\n",
		    (unsigned long long)t->fragments, (unsigned long long)t->reassembled,
		    (unsigned long long)t->frag_dropped);
	if (t->gaps) {
		fmt_bytes(t->gap_bytes, b);
		say(r,
		    "  reassembly: %llu %s in TCP streams (%s not captured; %llu known "
		    "at once from the other side's ACKs)\n",
		    (unsigned long long)t->gaps, plural(t->gaps, "gap", "gaps"), b,
		    (unsigned long long)t->ack_gaps);
	}
	if (t->late)
		say(r,
		    "  reassembly: %llu %s of closed connections with bytes past their "
		    "end (sent after a FIN or RST): dropped\n",
		    (unsigned long long)t->late, plural(t->late, "segment", "segments"));
	if (t->reused)
		say(r, "  reassembly: %llu %s ended by a new one on the same ports\n",
		    (unsigned long long)t->reused, plural(t->reused, "connection", "connections"));
	if (t->midstream)
		say(r, "  reassembly: %llu %s begun before the capture\n", (unsigned long long)t->midstream,
		    plural(t->midstream, "connection", "connections"));
	if (t->flow_limit_hits)
		say(r,
		    "  limits: --flow-memory reached %llu %s (a connection's first "
		    "hole given up on: a gap)\n",
		    (unsigned long long)t->flow_limit_hits, plural(t->flow_limit_hits, "time", "times"));
	if (t->total_limit_hits) {
		say(r,
		    "  limits: --memory reached %llu %s: %llu %s given up on to make room "
		    "(their exchanges stopped)",
		    (unsigned long long)t->total_limit_hits, plural(t->total_limit_hits, "time", "times"),
		    (unsigned long long)t->evicted_memory,
		    plural(t->evicted_memory, "connection", "connections"));
		if (st->hl.ids_forgotten)
			say(r, ", the SSE event ids of idle sessions forgotten %llu %s",
			    (unsigned long long)st->hl.ids_forgotten,
			    plural(st->hl.ids_forgotten, "time", "times"));
		say(r, "\n");
	}
	if (t->evicted_full)
		say(r, "  limits: --max-flows reached: %llu %s given up on to make room\n",
		    (unsigned long long)t->evicted_full,
		    plural(t->evicted_full, "connection", "connections"));
	if (t->evicted_idle)
		say(r, "  limits: %llu %s closed after --idle\n", (unsigned long long)t->evicted_idle,
		    plural(t->evicted_idle, "connection", "connections"));
	if (h->orphans || h->unanswered || h->lost_requests || h->lost_responses || h->parse_errors ||
	    h->resyncs) {
		fmt_bytes(h->skipped_bytes, b2);
		say(r,
		    "  HTTP: %llu responses without their request (%llu of them to a "
		    "request lost in a gap), %llu requests whose response was lost in a "
		    "gap, %llu without a response at the close, %llu requests lost\n",
		    (unsigned long long)h->orphans, (unsigned long long)h->unpaired,
		    (unsigned long long)h->lost_responses, (unsigned long long)h->unanswered,
		    (unsigned long long)h->lost_requests);
		say(r,
		    "  HTTP: %llu parse errors; reading resumed %llu %s (%llu at the "
		    "next chunk of the same body; %s passed over)\n",
		    (unsigned long long)h->parse_errors, (unsigned long long)h->resyncs,
		    plural(h->resyncs, "time", "times"), (unsigned long long)h->chunk_resyncs, b2);
	}
	if (st->hl.sessions_gaps)
		say(r, "  %llu %s of gaps alone (connections whose every exchange was lost)\n",
		    (unsigned long long)st->hl.sessions_gaps,
		    plural(st->hl.sessions_gaps, "session", "sessions"));
	if (h->body_cut || st->hl.over_max)
		say(r,
		    "  limits: %llu request %s and %llu response %s or SSE events above "
		    "--max-message (stored as gaps)\n",
		    (unsigned long long)h->body_cut, plural(h->body_cut, "body", "bodies"),
		    (unsigned long long)st->hl.over_max, plural(st->hl.over_max, "body", "bodies"));
	if (!st->hl.sessions)
		say(r, "  no MCP session found%s\n", o->filter ? " (the filter may leave them out)" : "");
}

/* Can the capture file be opened for writing? A lock another tap holds is fine: the writer waits. */
static int store_ready(const char *path, struct mt_err *err)
{
	struct store *st = NULL;

	if (store_open_wait(path, STORE_WRITE, 1000, &st, err) == 0) {
		store_close(st);
		return 0;
	}
	return err->busy ? 0 : -1;
}

/* " (X of Y bytes of the file)", or "" for a pipe. */
static const char *stopped_where(const struct mt_capture_stats *cs)
{
	static char buf[96];
	char a[32], b[32];

	if (!cs->file_size)
		return "";
	fmt_bytes(cs->file_bytes, a);
	fmt_bytes(cs->file_size, b);
	snprintf(buf, sizeof(buf), " (%s of %s)", a, b);
	return buf;
}

int capcli_run(struct capcli *o, struct mt_capture *cap, const struct capcli_run *r, struct mt_err *fail)
{
	struct mt_err err = {"", 0};
	struct mt_import *im;
	struct mt_import_stats st;
	struct mt_capture_opts co;
	struct progress pr;
	struct sigaction sa, old_int, old_term;
	enum mt_capture_end end = MT_CAPTURE_EOF;
	int rc = EXIT_ERROR, failed = 0, stored;
	int64_t start = mt_mono_ns();

	if (o->filter && mt_capture_filter(cap, o->filter, &err)) {
		mt_err_set(fail, "%s", err.msg);
		mt_capture_free(cap);
		return EXIT_ERROR;
	}
	if (*mt_capture_warning(cap))
		mt_voice_warn(&r->voice, "%s", mt_capture_warning(cap));
	if (store_ready(o->path, &err)) {
		/* Nothing is read into a file that cannot be written. */
		mt_err_set(fail, "cannot write to '%s': %s", o->path, err.msg);
		mt_capture_free(cap);
		return EXIT_ERROR;
	}
	if (!(im = mt_import_new(&o->io, fail))) {
		mt_capture_free(cap);
		return EXIT_ERROR;
	}
	memset(&pr, 0, sizeof(pr));
	pr.tty = isatty(2);
	pr.what = r->what;
	pr.im = im;
	pr.r = r;
	memset(&co, 0, sizeof(co));
	co.stop = &stop_flag;
	co.max_packets = r->max_packets;
	co.progress = on_progress;
	co.progress_ctx = &pr;

	stop_flag = 0;
	running = cap;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (r->live)
		say(r, "mcptap: capturing on %s%s%s%s; SIGINT (Ctrl-C) stops\n", r->what,
		    o->filter ? " (filter '" : "", o->filter ? o->filter : "", o->filter ? "')" : "");
	for (;;) {
		/* A live capture runs in slices of 500 ms, to show its counts between them. */
		int64_t left = 0;
		if (r->duration_ms) {
			left = r->duration_ms - (mt_mono_ns() - start) / 1000000;
			if (left <= 0) {
				end = MT_CAPTURE_DURATION;
				break;
			}
		}
		co.duration_ms = r->live ? (left && left < 500 ? left : 500) : 0;
		end = mt_capture_run(cap, mt_import_tf(im), &co, &err);
		if (r->live && end == MT_CAPTURE_DURATION && !stop_flag) {
			live_progress(&pr, cap);
			continue;
		}
		break;
	}
	/*
	 * The handler stays until everything is stored: a second Ctrl-C while
	 * the last rows go in is not the end of them.
	 */
	running = NULL;
	progress_clear(&pr);
	if (end == MT_CAPTURE_ERROR) {
		/* A file cut short: what came before it is stored all the same. */
		mt_voice_warn(&r->voice, "%s; what was read before is %s", err.msg,
			      r->live ? "stored" : "imported");
		failed = r->live;
	}
	{
		struct mt_capture_stats cs;
		mt_capture_stats(cap, &cs);
		stored = mt_import_finish(im, cs.last_us, &st) == 0;
		if (stored && !failed)
			rc = EXIT_OK;
		if (!r->live && end == MT_CAPTURE_STOPPED && stop_flag) {
			/* A file not read to its end is not an import that succeeded. */
			mt_voice_warn(
				&r->voice,
				"the import of %s was stopped by %s after %llu packets%s: what was read "
				"before is stored",
				r->what, stop_flag == SIGINT ? "SIGINT" : "SIGTERM",
				(unsigned long long)cs.packets, stopped_where(&cs));
			rc = 128 + stop_flag;
		}
	}
	summary(o, r, cap, &st, stored);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	mt_capture_free(cap);
	return rc;
}
