/*
 * facts.h - what a session's messages say about the session, read as they
 * are stored, whatever carried them (stdio lines, HTTP bodies, SSE events):
 *   - pairing: which request an answer answers (by direction and id), and
 *     which open request a notifications/cancelled names;
 *   - the handshake: the client and capabilities an initialize request
 *     names, the server its answer names, or (2026-07-28, no initialize) the
 *     client the first request naming one in its _meta gives.
 * Pure: classified messages in (schema/message.h), facts out; the caller
 * stores them. One mt_facts per session; not thread-safe.
 */
#ifndef MCPTAP_FACTS_H
#define MCPTAP_FACTS_H

#include <stddef.h>
#include <stdint.h>

#include "schema/map.h"
#include "schema/message.h"
#include "schema/util.h"

/* The most requests remembered while they await an answer. */
#define MT_FACTS_OPEN_MAX 100000

/* A POST's request, for the answer without an id its response body may hold. */
#define MT_FACTS_POSTS 64
struct mt_facts_post {
	int64_t exchange; /* 0: a free slot */
	int64_t seq;      /* -1: the POST held more than one request */
	size_t n;
	char key[48]; /* its id key in open (a longer one is not kept) */
};

struct mt_facts {
	struct mt_map open;                         /* requests awaiting an answer: id key -> seq */
	struct mt_facts_post posts[MT_FACTS_POSTS]; /* the latest POSTs' requests */
	unsigned next_post;
	int64_t init_seq;  /* the initialize request's seq, until it is answered */
	int client_known;  /* the client was named (initialize, or _meta) */
	struct mt_buf key; /* scratch for the map's keys */
};

void mt_facts_init(struct mt_facts *f);
/* Free what f holds; it may be initialized again. */
void mt_facts_release(struct mt_facts *f);

/*
 * A message of direction c2s (1: client to server) with classification c,
 * stored as seq: a request is remembered (up to MT_FACTS_OPEN_MAX); an
 * answer in the other direction with its id takes it. Returns the request's
 * seq for an answer or for a notifications/cancelled (the request it names,
 * which stays open), else 0. A server's replay after Last-Event-ID is not
 * given here: it would answer a request twice.
 */
int64_t mt_facts_pair(struct mt_facts *f, int c2s, const struct mt_class *c, int64_t seq);

/*
 * Over HTTP, a message in a body of exchange (a POST's request, or its JSON
 * response) that mt_facts_pair did not pair: a request is remembered as the
 * POST's; an error without an id, or with a null one, answers it (the POST
 * carried one request, still open). Returns that request's seq, else 0.
 */
int64_t mt_facts_pair_post(struct mt_facts *f, int c2s, const struct mt_class *c, int64_t seq,
			   int64_t exchange);

/* What a handshake message says of one side. */
enum mt_side { MT_SIDE_CLIENT = 1, MT_SIDE_SERVER };
struct mt_handshake {
	enum mt_side side;
	char *protocol_version; /* owned, or NULL: each as the message has it */
	char *name;
	char *version;
	char *caps_json; /* the capabilities as compact JSON, keys sorted */
};
void mt_handshake_release(struct mt_handshake *h);

/*
 * A request or answer (c, p: n bytes as stored; seq; request_seq: what
 * mt_facts_pair returned for it): 1 with h filled (release it) when it names
 * a side of the session (an initialize request, the answer to it, or the
 * first request whose _meta names the client when no initialize did), else
 * 0. An initialize whose params are no object still counts as the client's
 * (with nothing in h but side: 0 is returned).
 */
int mt_facts_handshake(struct mt_facts *f, int c2s, const struct mt_class *c, const char *p, size_t n,
		       int64_t seq, int64_t request_seq, struct mt_handshake *h);

#endif
