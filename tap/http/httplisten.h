/*
 * httplisten.h - the listening side of the HTTP tap and the HTTP mock: what
 * both do with a connection or a request before either is theirs, in one
 * place, so that each fix holds for both (and for whatever engine later
 * reads their requests).
 *
 *   - The descriptor limit. When accept fails for want of descriptors or
 *     memory (EMFILE, ENFILE, ENOBUFS, ENOMEM; or any error but a pending
 *     connection's own), a listener stops accepting and tries again after a
 *     pause that doubles from HLN_PAUSE_MIN_MS up to HLN_PAUSE_MAX_MS while
 *     accept keeps failing, back to the shortest once a connection is taken.
 *     The connections wait in the kernel's queue meanwhile, and are taken as
 *     soon as descriptors free up. Without it the loop would call accept
 *     again at once, forever: all of a CPU, and libevent's warning for every
 *     call. The refusals are counted and said through a callback at most
 *     once per HLN_SAY_MS, however many listeners (the tap's loops, in
 *     threads of their own) share the count.
 *   - DNS rebinding. On a loopback address, a request must name the server
 *     by a loopback name (or one the user allowed) in its Host, and, when it
 *     has an Origin, come from a loopback origin (or an allowed host): a web
 *     page elsewhere whose name is made to resolve to 127.0.0.1 would
 *     otherwise read what the server answers. A request without Origin (any
 *     client that is not a browser) is let in.
 */
#ifndef MCPTAP_HTTPLISTEN_H
#define MCPTAP_HTTPLISTEN_H

#include <stddef.h>

#include <event2/listener.h>

#include "tap/http/httphdr.h"

/* The first pause of a listener at the descriptor limit, and the longest (ms). */
#define HLN_PAUSE_MIN_MS 50
#define HLN_PAUSE_MAX_MS 1000
/* Refused accepts are said at most this often (ms). */
#define HLN_SAY_MS 1000

/* ---- the descriptor limit ---- */

/*
 * What is said of refused accepts: text is one line, without "mcptap: " or
 * an end of line, such as "cannot accept connections: Too many open files
 * (ulimit -n 64); 1 accept refused since the last line, trying again in 50
 * ms". Called in the thread of the listener that was refused.
 */
typedef void (*hln_say_fn)(void *arg, const char *text);

/* The count of refused accepts and the pace of saying it, for listeners of any thread. */
struct hln_pace;

/* A new pace; say(arg, text) says the lines. Never NULL. */
struct hln_pace *hln_pace_new(hln_say_fn say, void *arg);

/* Free a pace (its listeners' watches freed first; NULL is let be). */
void hln_pace_free(struct hln_pace *p);

/* A listener's watch: it pauses the listener at the descriptor limit. */
struct hln_watch;

/*
 * Watch lev (borrowed: it must outlive the watch) and count its refusals in
 * pace (borrowed, likewise): lev's error callback is set, and a timer made
 * on lev's event base. lev's accept callback must call hln_watch_accepted.
 * NULL ("out of memory" in err) when the timer cannot be made; lev is then
 * left as it was. Call it in the thread that runs the base or before that
 * thread starts.
 */
struct hln_watch *hln_watch_new(struct evconnlistener *lev, struct hln_pace *pace, struct mt_err *err);

/* A connection was accepted: a pause that follows starts at HLN_PAUSE_MIN_MS again. */
void hln_watch_accepted(struct hln_watch *w);

/*
 * Stop watching: lev's error callback is cleared, lev left as it is
 * (paused, if the watch had paused it: the caller is about to free it).
 * Free the watch before lev, in the base's thread or once that thread has
 * ended. NULL is let be.
 */
void hln_watch_free(struct hln_watch *w);

/* ---- the listening address ---- */

/* Is the local address of socket fd a loopback one (127.0.0.0/8, ::1, ::ffff:127.x)? 1 or 0. */
int hln_fd_loopback(int fd);

/* The local port of socket fd, or -1. */
int hln_fd_port(int fd);

/*
 * A listening socket on host:port (port 0: any free one), non-blocking,
 * close-on-exec, with SO_REUSEADDR (and SO_REUSEPORT when reuseport: event
 * loops each with a socket on the same port, the kernel spreading the
 * connections among them); *bound_port (when not NULL) its port. The socket,
 * or -1 with errno set.
 */
int hln_listen(const char *host, int port, int reuseport, int *bound_port);

/* A peer's address as text: "ADDR:PORT", "[V6]:PORT" ("?" for another family). */
struct sockaddr;
void hln_addr_str(const struct sockaddr *sa, char *out, size_t n);

/* ---- Host and Origin ---- */

enum hln_verdict {
	HLN_PASS,
	HLN_FOREIGN_HOST,   /* the Host is not a loopback name nor an allowed one */
	HLN_FOREIGN_ORIGIN, /* the Origin is "null", malformed, or not of a loopback or allowed host */
};

/* Who may name a server on loopback (zeroed, then these set). */
struct hln_guard {
	int loopback;             /* the server listens on loopback: 0 lets everything in */
	const char *const *allow; /* host names let in besides loopback ones (--allow-host);
				   * borrowed */
	size_t n_allow;
	int said[3]; /* a refusal of each verdict was said (set by the caller) */
};

/* The status a refused request gets (both verdicts). */
#define HLN_REFUSED_STATUS 403

/*
 * Is h (n bytes: a Host value, or an origin's host and port) a loopback
 * name: localhost (any case), an IPv4 address of 127.0.0.0/8, or [::1];
 * each with an optional :PORT of digits? 1 or 0.
 */
int hln_loopback_name(const char *h, size_t n);

/*
 * What g says of a request whose Host is host and whose Origin is origin
 * (either NULL when absent: a request without Host is HTTP/1.0's). A Host
 * passes when it is a loopback name or an allowed name (any case), with an
 * optional :PORT; an Origin ("scheme://host[:port]") when its host does.
 */
enum hln_verdict hln_guard_check(const struct hln_guard *g, const char *host, const char *origin);

/*
 * The line that says a refusal once (into out, n bytes): "refused a request
 * for Host 'VALUE' (the WHO listens on loopback: a DNS rebinding?);
 * --allow-host NAME lets a name in", or its Origin form. VALUE is cut at 100
 * bytes, its control bytes and quotes shown as '?'.
 */
/*
 * The guard's verdict on a request's fields: its Host, and every Origin
 * (two Origins, the second foreign, are refused); *value: the one refused.
 */
enum hln_verdict hln_guard_fields(const struct hln_guard *g, const struct mt_hdr *h, size_t nh,
				  const char **value);

/* Why a verdict refuses, as the tap and the mock answer it (a constant). */
const char *hln_refusal_reason(enum hln_verdict v);

void hln_refusal_line(enum hln_verdict v, const char *value, const char *who, char *out, size_t n);

#endif
