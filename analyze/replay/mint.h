/*
 * mint.h - following what a server mints through a replay of its client, and
 * telling per-run noise from change. Pure: no I/O, no transport.
 *
 * A server hands its client values it made up: task ids, elicitation ids,
 * pagination cursors, subscription ids. The recorded client sent some of them
 * back; a live server mints others, so the recorded ones would be refused. A
 * string value the recorded client sent that it had first received from the
 * recorded server (in an answer to one of its requests, or in a request of the
 * server's) is replaced by the value the live server put at the same place of
 * the live message that stands for that recorded one, when:
 *   - the live message has a string there, other than the recorded value, and
 *   - the recorded value appears nowhere in the live message (a value the
 *     server merely moved, like a tool's name in a reordered tools/list, is
 *     still the live server's own and is kept).
 * No field names are listed: where a value came from decides.
 *
 * Noise: the recorded client is run against the live server more than once.
 * The paths where live runs differ from each other are per-run noise (time
 * stamps, random ids); a difference from the recording at such a path is set
 * aside, never reported as a change.
 */
#ifndef MCPTAP_MINT_H
#define MCPTAP_MINT_H

#include <jansson.h>
#include <stddef.h>

#include "analyze/replay/replay.h"

/*
 * Where each string value the recorded client sends first appeared in the
 * recording: a new object mapping the value to [index, steps, from_client],
 * where index is the recorded message, steps the path to the value inside it
 * (an array of member names and element indexes, from the message's top),
 * and from_client 1 when the client sent it first (such a value is the
 * client's own, never minted). Client requests, answers and notifications
 * count; of the server's messages, answers to client requests and server
 * requests (what a live counterpart can be found for). Strings holding NUL,
 * and strings over 1024 bytes (ids and cursors are short; file contents and
 * blobs are not minted ids), are left out. Only what the client sends is
 * indexed, so the index grows with that, not with the recording: messages
 * are read from the store (the client's, then the rest until every value
 * is placed) and parsed one at a time. NULL, with err set, when one cannot
 * be read.
 */
json_t *mint_index(struct rp_script *s, struct mt_err *err);

/*
 * The live message standing for recorded server message j in this run (an
 * answer: the live answer to the same request; a server request: the live
 * request the recorded client's answer went to): a new reference, or NULL.
 */
typedef json_t *(*mint_counterpart_fn)(void *ctx, size_t j);

/*
 * Substitute, in v (a copy of recorded client message i, changed in place),
 * every string value minted by the server as above. subs maps recorded values
 * to the live ones found so far in this run (an object; updated: a value once
 * followed is followed everywhere after). Returns how many values were
 * replaced.
 */
size_t mint_substitute(json_t *origins, size_t i, json_t *v, mint_counterpart_fn counterpart, void *ctx,
		       json_t *subs);

/* A deep copy of v with each string value that is a key of subs replaced by its value. */
json_t *mint_apply(json_t *v, json_t *subs);

/* The value at steps inside root (borrowed), or NULL. */
json_t *mint_at(json_t *root, json_t *steps);

/* Is the string (n bytes) a string value somewhere inside v? */
int mint_contains(json_t *v, const char *str, size_t n);

/*
 * Is path (as canon_diff writes it: "result.content[0].text") one of the
 * noise paths, or below one? noise is an array of path strings.
 */
int mint_is_noise(json_t *noise, const char *path);

#endif
