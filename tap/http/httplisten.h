/*
 * httplisten.h - the listening side of the HTTP tap and the HTTP mock: what
 * both do with a connection before it is theirs, in one place, so that each
 * fix holds for both (and for whatever engine later reads their requests).
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
 */
#ifndef MCPTAP_HTTPLISTEN_H
#define MCPTAP_HTTPLISTEN_H

#include <stddef.h>

#include <event2/http.h>
#include <event2/listener.h>

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
 * Never NULL. Call it in the thread that runs the base or before that
 * thread starts.
 */
struct hln_watch *hln_watch_new(struct evconnlistener *lev, struct hln_pace *pace);

/* A connection was accepted: a pause that follows starts at HLN_PAUSE_MIN_MS again. */
void hln_watch_accepted(struct hln_watch *w);

/*
 * The watch of http's one listening socket, bound (its evconnlistener), as
 * hln_watch_new; the accepts are known through evhttp_set_bevcb (a hook that
 * lets evhttp make its own bufferevent), which http must not use otherwise.
 */
struct hln_watch *hln_watch_evhttp(struct evhttp *http, struct evhttp_bound_socket *bound,
				   struct hln_pace *pace);

/*
 * Stop watching: lev's error callback (and http's hook) is cleared, lev
 * left as it is (paused, if the watch had paused it: the caller is about to
 * free it). Free the watch before lev (evhttp_del_accept_socket,
 * evhttp_free), in the base's thread or once that thread has ended. NULL is
 * let be.
 */
void hln_watch_free(struct hln_watch *w);

/* ---- the listening address ---- */

/* The local port of socket fd, or -1. */
int hln_fd_port(int fd);

#endif
