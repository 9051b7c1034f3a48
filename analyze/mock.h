/*
 * mock.h - the mock server: a recorded session answering a live client
 * (`mcptap replay --as server`). The matching rules are in replay.h; the wire
 * is tap/lineio.h (stdio lines).
 */
#ifndef MCPTAP_MOCK_H
#define MCPTAP_MOCK_H

#include "analyze/replay.h"

/*
 * The mock's JSON-RPC error code for "no recorded answer". It lies outside
 * JSON-RPC's reserved range (-32768..-32000), where the SDKs put their own
 * codes (-32001 is the TypeScript SDK's RequestTimeout).
 */
#define MOCK_MISS_CODE (-30900)

struct mock_opts {
	double scale;            /* recorded gaps times scale; 0: none */
	int ordered;             /* an answer waits until the client has read what the
				  * server sent before it (every --timing but none) */
	int strict;              /* exit 1 on a miss or an unused recording */
	const char *report;      /* --report FILE: the run's summary as JSON, or NULL */
	const char *store_path;  /* the capture file to store the run in; NULL: --no-store */
	const char *command;     /* the mock's own command line, for the stored run */
	const char *ignore_json; /* the --ignore paths as a JSON array text, or NULL */
};

/*
 * Serve s on stdin/stdout until the client closes stdin, stops reading, or
 * SIGTERM, SIGINT or SIGHUP comes (caught while it serves: the run then ends
 * the same way, stdin and stdout turned to /dev/null). Then the summary goes
 * to o->report and the run into o->store_path (see NOTES on the summary's
 * members). Returns the exit status (EXIT_OK, or EXIT_FINDINGS under strict
 * when a request missed or a recorded one was never asked for).
 */
int mock_serve(struct rp_script *s, const struct mock_opts *o);

#endif
