/*
 * fuzz-httpsess.c - libFuzzer target for the HTTP tap's session splitter
 * (tap/http/httpsess.h).
 *
 * The input is a program: each step takes a byte for what happens (a request,
 * an id named by a response, an endpoint event, a session without ids, a
 * connection closed, a session ended) and bytes for its arguments, drawn from
 * small alphabets so that ids, targets and connections meet again. A model
 * kept beside the tracker checks what it answers: sessions are numbered from
 * 1 without gaps, a new one is the next number, a request naming an id the
 * tracker knows gets that id's session, a POST to a known endpoint gets the
 * endpoint's, and no answer is a session that does not exist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap/http/httpsess.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define IDS 8
#define TARGETS 6

static const char *const targets[TARGETS] = {
	"/mcp",
	"/sse",
	"/messages?sessionId=a",
	"/messages?sessionId=b",
	"http://up:1/messages?sessionId=c",
	"/messages?sessionId=c",
};
static const char *const methods[4] = {"POST", "GET", "DELETE", "OPTIONS"};

static void fail(const char *what, int64_t got, int64_t want)
{
	fprintf(stderr, "fuzz-httpsess: %s (got %lld, expected %lld)\n", what, (long long)got,
		(long long)want);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hs_tracker t;
	int64_t by_id[IDS] = {0};         /* the model: which session holds each id */
	int64_t by_target[TARGETS] = {0}; /* and each endpoint target (by its path) */
	int64_t sessions = 0;
	char ids[IDS][8];
	size_t i = 0;

	for (int k = 0; k < IDS; k++)
		snprintf(ids[k], sizeof(ids[k]), "s%d", k);
	hs_init(&t);
	while (i + 4 <= size) {
		uint8_t op = data[i], a = data[i + 1], b = data[i + 2], c = data[i + 3];
		i += 4;
		switch (op % 6) {
		case 0: { /* a request */
			struct hs_request r;
			enum hs_kind kind;
			int created;
			int with_id = a & 1;
			r.conn = b % 5;
			r.method = methods[(a >> 1) % 4];
			r.target = hs_uri_target(targets[c % TARGETS]); /* (as the tap does) */
			r.session_id = with_id ? ids[(c >> 3) % IDS] : NULL;
			r.initialize = (a >> 3) & 1;
			r.client = (a >> 4) & 1 ? ((a >> 5) & 1 ? "agent-a 1" : "agent-b 2") : NULL;
			int64_t s = hs_request(&t, &r, &created, &kind);
			if (created) {
				if (s != sessions + 1)
					fail("a new session is not the next number", s, sessions + 1);
				sessions = s;
			} else if (s < 1 || s > sessions) {
				fail("a session that does not exist", s, sessions);
			}
			if (with_id) {
				int64_t *m = &by_id[(c >> 3) % IDS];
				if (*m && s != *m)
					fail("a known id went to another session", s, *m);
				if (!*m)
					*m = s;
			} else {
				/* A POST to an endpoint: its session (targets 4 and 5 are one). */
				int tg = c % TARGETS == 4 ? 5 : c % TARGETS;
				if (by_target[tg] && s != by_target[tg])
					fail("a known endpoint went to another session", s, by_target[tg]);
			}
			break;
		}
		case 1: /* a response names an id */
			if (sessions) {
				int64_t s = 1 + a % sessions;
				int64_t *m = &by_id[b % IDS];
				int64_t got = hs_named(&t, s, ids[b % IDS]);
				if (got != (*m ? *m : s))
					fail("hs_named", got, *m ? *m : s);
				if (!*m)
					*m = s;
			}
			break;
		case 2: /* an endpoint event */
			if (sessions) {
				int64_t s = 1 + a % sessions;
				int tg = b % TARGETS == 4 ? 5 : b % TARGETS;
				hs_endpoint(&t, s, targets[b % TARGETS]);
				by_target[tg] = s;
			}
			break;
		case 3:
			if (sessions)
				hs_idless(&t, 1 + a % sessions);
			break;
		case 4: hs_conn_closed(&t, a % 5); break;
		case 5:
			if (sessions)
				hs_end(&t, 1 + a % sessions);
			break;
		}
	}
	if (t.next != sessions + 1)
		fail("the tracker's count", t.next - 1, sessions);
	hs_release(&t);
	return 0;
}
