/*
 * httplisten.c - the listening side of the HTTP tap and the HTTP mock (see
 * httplisten.h).
 *
 * libevent calls a listener's error callback with the argument of its accept
 * callback, which is evhttp's own: a watch is found again by its listener in
 * a small registry (a list under a mutex; it is looked at only when accept
 * fails).
 */
#include "tap/http/httplisten.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/util.h>

#include "schema/util.h"

/* ---- the descriptor limit ---- */

struct hln_pace {
	pthread_mutex_t mu;
	hln_say_fn say;
	void *arg;
	/* Under mu: */
	int64_t said_ns;              /* when a line was said last (monotonic); 0: never */
	unsigned long long refused;   /* accepts refused since */
};

struct hln_watch {
	struct hln_watch *next;       /* in the registry */
	struct evconnlistener *lev;   /* borrowed */
	struct evhttp *http;          /* borrowed: its accept hook is ours; NULL when none */
	struct hln_pace *pace;        /* borrowed */
	struct event *timer;          /* ends a pause */
	int pause_ms;                 /* the last pause's length; 0: none yet */
	int64_t resumed_ns;           /* when lev was enabled again last */
	int accepted;                 /* a connection was taken since the last pause */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct hln_watch *reg;

/* (as mt_malloc does) */
static void out_of_memory(void)
{
	mt_error("out of memory");
	abort();
}

struct hln_pace *hln_pace_new(hln_say_fn say, void *arg)
{
	struct hln_pace *p = mt_calloc(1, sizeof(*p));

	pthread_mutex_init(&p->mu, NULL);
	p->say = say;
	p->arg = arg;
	return p;
}

void hln_pace_free(struct hln_pace *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* One more accept refused (err), the listener paused pause_ms: said when the pace allows. */
static void pace_refused(struct hln_pace *p, int err, int pause_ms)
{
	int64_t now = mt_mono_ns();
	char limit[48] = "";
	char text[256];

	pthread_mutex_lock(&p->mu);
	p->refused++;
	if (!p->said_ns || now - p->said_ns >= (int64_t)HLN_SAY_MS * 1000000) {
		struct rlimit rl;
		if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			snprintf(limit, sizeof(limit), " (ulimit -n %llu)", (unsigned long long)rl.rlim_cur);
		snprintf(text, sizeof(text),
			 "cannot accept connections: %s%s; %llu accept%s refused%s, trying again in %d ms",
			 strerror(err), limit, p->refused, p->refused == 1 ? "" : "s",
			 p->said_ns ? " since the last line" : "", pause_ms);
		p->say(p->arg, text);
		p->refused = 0;
		p->said_ns = now;
	}
	pthread_mutex_unlock(&p->mu);
}

/*
 * Errors of accept that are the pending connection's own (Linux passes a
 * network error already pending on it): that connection is gone, the next
 * one may be taken at once.
 */
static int connection_error(int err)
{
	switch (err) {
	case ECONNABORTED: case EPERM: case EPROTO: case ENOPROTOOPT: case ENETDOWN:
	case ENETUNREACH: case EHOSTDOWN: case EHOSTUNREACH: case ENONET: case EOPNOTSUPP:
		return 1;
	}
	return 0;
}

/* The pause is over: accept again (the pending connections first). */
static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct hln_watch *w = arg;

	(void)fd;
	(void)what;
	w->resumed_ns = mt_mono_ns();
	evconnlistener_enable(w->lev);
}

/*
 * accept failed (libevent has left out EAGAIN and EINTR). Out of descriptors
 * or memory (or anything else but a connection's own error): pause, longer
 * each time it fails again at once, so that the loop does not spin.
 */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();
	struct hln_watch *w;
	int64_t now;

	(void)arg; /* (evhttp's: the watch is found by its listener) */
	if (connection_error(err))
		return;
	pthread_mutex_lock(&reg_mu);
	for (w = reg; w && w->lev != lev; w = w->next)
		;
	pthread_mutex_unlock(&reg_mu);
	if (!w)
		return; /* (never: a watch is freed in the listener's thread) */
	now = mt_mono_ns();
	/* Taken a connection since, or had nothing to take for a while: a new shortage. */
	if (!w->pause_ms || w->accepted || now - w->resumed_ns > (int64_t)HLN_PAUSE_MAX_MS * 1000000)
		w->pause_ms = HLN_PAUSE_MIN_MS;
	else
		w->pause_ms = w->pause_ms * 2 > HLN_PAUSE_MAX_MS ? HLN_PAUSE_MAX_MS : w->pause_ms * 2;
	w->accepted = 0;
	evconnlistener_disable(lev);
	{
		struct timeval tv = {w->pause_ms / 1000, (w->pause_ms % 1000) * 1000};
		evtimer_add(w->timer, &tv);
	}
	pace_refused(w->pace, err, w->pause_ms);
}

struct hln_watch *hln_watch_new(struct evconnlistener *lev, struct hln_pace *pace)
{
	struct hln_watch *w = mt_calloc(1, sizeof(*w));

	w->lev = lev;
	w->pace = pace;
	w->timer = evtimer_new(evconnlistener_get_base(lev), on_resume, w);
	if (!w->timer)
		out_of_memory();
	pthread_mutex_lock(&reg_mu);
	w->next = reg;
	reg = w;
	pthread_mutex_unlock(&reg_mu);
	evconnlistener_set_error_cb(lev, on_accept_error);
	return w;
}

void hln_watch_accepted(struct hln_watch *w)
{
	w->accepted = 1;
}

/* evhttp took a connection: NULL lets it make its bufferevent as it does without the hook. */
static struct bufferevent *on_evhttp_accept(struct event_base *base, void *arg)
{
	(void)base;
	hln_watch_accepted(arg);
	return NULL;
}

struct hln_watch *hln_watch_evhttp(struct evhttp *http, struct evhttp_bound_socket *bound,
				   struct hln_pace *pace)
{
	struct hln_watch *w = hln_watch_new(evhttp_bound_socket_get_listener(bound), pace);

	w->http = http;
	evhttp_set_bevcb(http, on_evhttp_accept, w);
	return w;
}

void hln_watch_free(struct hln_watch *w)
{
	if (!w)
		return;
	evconnlistener_set_error_cb(w->lev, NULL);
	if (w->http)
		evhttp_set_bevcb(w->http, NULL, NULL);
	pthread_mutex_lock(&reg_mu);
	for (struct hln_watch **pp = &reg; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	pthread_mutex_unlock(&reg_mu);
	event_free(w->timer);
	free(w);
}

/* ---- the listening address ---- */

int hln_fd_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return -1;
}
