/*
 * httplisten.c - the listening side of the HTTP tap and the HTTP mock (see
 * httplisten.h).
 *
 * libevent calls a listener's error callback with the argument of its accept
 * callback, which is its owner's: a watch is found again by its listener in
 * a small registry (a list under a mutex; it is looked at only when accept
 * fails).
 */
#include "tap/http/httplisten.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/util.h>

#include "schema/util.h"

/* ---- the descriptor limit ---- */

struct hln_pace {
	pthread_mutex_t mu;
	hln_say_fn say;
	void *arg;
	/* Under mu: */
	int64_t said_ns;            /* when a line was said last (monotonic); 0: never */
	unsigned long long refused; /* accepts refused since */
};

struct hln_watch {
	struct hln_watch *next;     /* in the registry */
	struct evconnlistener *lev; /* borrowed */
	struct hln_pace *pace;      /* borrowed */
	struct event *timer;        /* ends a pause */
	int pause_ms;               /* the last pause's length; 0: none yet */
	int64_t resumed_ns;         /* when lev was enabled again last */
	int accepted;               /* a connection was taken since the last pause */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct hln_watch *reg;

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
	case ECONNABORTED:
	case EPERM:
	case EPROTO:
	case ENOPROTOOPT:
	case ENETDOWN:
	case ENETUNREACH:
	case EHOSTDOWN:
	case EHOSTUNREACH:
	case ENONET:
	case EOPNOTSUPP: return 1;
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

	(void)arg; /* (the listener's owner's: the watch is found by its listener) */
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

struct hln_watch *hln_watch_new(struct evconnlistener *lev, struct hln_pace *pace, struct mt_err *err)
{
	struct hln_watch *w = mt_calloc(1, sizeof(*w));

	w->lev = lev;
	w->pace = pace;
	w->timer = evtimer_new(evconnlistener_get_base(lev), on_resume, w);
	if (!w->timer) {
		free(w);
		mt_err_set(err, "out of memory");
		return NULL;
	}
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

void hln_watch_free(struct hln_watch *w)
{
	if (!w)
		return;
	evconnlistener_set_error_cb(w->lev, NULL);
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

int hln_fd_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return 0;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

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

/* ---- Host and Origin ---- */

/*
 * The length of h's host (n bytes: "name", "[v6]", either with ":PORT"), or
 * -1 when what follows the host is not ":" and digits (an empty port is
 * RFC 3986's).
 */
static long host_len(const char *h, size_t n)
{
	size_t hn;

	if (n && h[0] == '[') {
		const char *close = memchr(h, ']', n);
		if (!close)
			return -1;
		hn = (size_t)(close - h) + 1;
	} else {
		const char *colon = memchr(h, ':', n);
		hn = colon ? (size_t)(colon - h) : n;
	}
	if (hn < n) {
		if (h[hn] != ':')
			return -1;
		for (size_t i = hn + 1; i < n; i++)
			if (h[i] < '0' || h[i] > '9')
				return -1;
	}
	return (long)hn;
}

int hln_loopback_name(const char *h, size_t n)
{
	long hn = host_len(h, n);

	if (hn < 0)
		return 0;
	if (hn == 5 && !memcmp(h, "[::1]", 5))
		return 1;
	if (hn == 9 && !strncasecmp(h, "localhost", 9))
		return 1;
	if (hn > 4 && !memcmp(h, "127.", 4)) {
		for (long i = 4; i < hn; i++)
			if (!((h[i] >= '0' && h[i] <= '9') || h[i] == '.'))
				return 0;
		return 1;
	}
	return 0;
}

/* Does h (n bytes, host and optional port) name this server: loopback, or allowed? */
static int host_ok(const struct hln_guard *g, const char *h, size_t n)
{
	long hn = host_len(h, n);

	if (hn <= 0)
		return 0;
	if (hln_loopback_name(h, n))
		return 1;
	for (size_t i = 0; i < g->n_allow; i++) {
		size_t an = strlen(g->allow[i]);
		/* (an allowed "name" lets in any port of it; "name:port" that port) */
		if ((an == (size_t)hn || an == n) && !strncasecmp(h, g->allow[i], an))
			return 1;
	}
	return 0;
}

/* Is origin ("scheme://host[:port]") one of a host that names this server? "null" is not. */
static int origin_ok(const struct hln_guard *g, const char *origin)
{
	const char *sep = strstr(origin, "://"), *a;
	size_t an;

	if (!sep || sep == origin)
		return 0;
	for (const char *p = origin; p < sep; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '+' || *p == '-' || *p == '.'))
			return 0;
	a = sep + 3;
	an = strcspn(a, "/?#");
	if (!an || memchr(a, '@', an))
		return 0;
	return host_ok(g, a, an);
}

enum hln_verdict hln_guard_check(const struct hln_guard *g, const char *host, const char *origin)
{
	if (!g->loopback)
		return HLN_PASS;
	if (host && !host_ok(g, host, strlen(host)))
		return HLN_FOREIGN_HOST;
	if (origin && !origin_ok(g, origin))
		return HLN_FOREIGN_ORIGIN;
	return HLN_PASS;
}

void hln_refusal_line(enum hln_verdict v, const char *value, const char *who, char *out, size_t n)
{
	char shown[101];
	size_t i;
	const char *at = value ? strrchr(value, '@') : NULL;

	/* (A user name or password before an '@' is not said: "[redacted]@" is.) */
	if (at) {
		snprintf(shown, sizeof(shown), "[redacted]@");
		value = at + 1;
	}
	size_t o = at ? strlen(shown) : 0;
	for (i = 0; value && value[i] && o < sizeof(shown) - 1; i++, o++) {
		unsigned char c = (unsigned char)value[i];
		shown[o] = c < 0x20 || c >= 0x7f || c == '\'' ? '?' : (char)c;
	}
	shown[o] = '\0';
	if (v == HLN_FOREIGN_ORIGIN)
		snprintf(out, n,
			 "refused a request from Origin '%s' (the %s listens on loopback: a web page "
			 "elsewhere?); --allow-host NAME lets its host in",
			 shown, who);
	else
		snprintf(out, n,
			 "refused a request for Host '%s' (the %s listens on loopback: a DNS "
			 "rebinding?); --allow-host NAME lets a name in",
			 shown, who);
}

void hln_addr_str(const struct sockaddr *sa, char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(out, n, "%s:%u", a, (unsigned)ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(out, n, "[%s]:%u", a, (unsigned)ntohs(s6->sin6_port));
	} else {
		snprintf(out, n, "?");
	}
}

int hln_listen(const char *host, int port, int reuseport, int *bound_port)
{
	struct evutil_addrinfo hints, *ai = NULL;
	char ps[16];
	int fd, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG;
	snprintf(ps, sizeof(ps), "%d", port);
	if (evutil_getaddrinfo(host, ps, &hints, &ai) || !ai) {
		errno = EADDRNOTAVAIL;
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    bind(fd, ai->ai_addr, (socklen_t)ai->ai_addrlen) || listen(fd, 128)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		evutil_freeaddrinfo(ai);
		errno = e;
		return -1;
	}
	evutil_freeaddrinfo(ai);
	if (bound_port) {
		*bound_port = hln_fd_port(fd);
		if (*bound_port < 0)
			*bound_port = port;
	}
	return fd;
}

enum hln_verdict hln_guard_fields(const struct hln_guard *g, const struct mt_hdr *h, size_t nh,
				  const char **value)
{
	const char *host = mt_hdr_get(h, nh, "Host");
	enum hln_verdict v = hln_guard_check(g, host, NULL);

	*value = host;
	for (size_t i = 0; i < nh && v == HLN_PASS; i++)
		if (!strcasecmp(h[i].name, "Origin")) {
			v = hln_guard_check(g, NULL, h[i].value);
			*value = h[i].value;
		}
	return v;
}

const char *hln_refusal_reason(enum hln_verdict v)
{
	return v == HLN_FOREIGN_ORIGIN
		       ? "Origin is not of a loopback host nor of one given with --allow-host (a "
			 "web page elsewhere?)"
		       : "Host is not a loopback name nor one given with --allow-host (a DNS "
			 "rebinding?)";
}
