/*
 * relay.h - the stdio tap: spawn a server command and relay the client's
 * stdin to it and its stdout back, byte for byte, handing a copy of every
 * chunk to the writer. The child's stderr passes through to the tap's stderr
 * and is stored too.
 */
#ifndef MCPTAP_RELAY_H
#define MCPTAP_RELAY_H

#include "tap/writer.h"

struct relay_opts {
	char *const *argv;   /* the command, argv[0] looked up in PATH (borrowed) */
	const char *db_path; /* the capture file; NULL: relay without logging */
	struct writer_opts wopts;
	int drain_ms;          /* after the child exits: wait this long for its output */
	struct mt_voice voice; /* where the relay says what goes wrong as it runs; zero: nowhere */
};

/* How the child ended. */
struct relay_result {
	int exit_status; /* its exit code, or -1 */
	int exit_signal; /* the signal that killed it, or 0 */
	int spawn_errno; /* why it could not be started, or 0 */
};

/*
 * Run the tap until the child has exited and its output is drained. Returns 0
 * with *res filled (also when the command could not be started: see
 * spawn_errno), or -1 on a failure of the tap itself before the child runs
 * (the reason in err). Returns -2 when a relay thread could not be started
 * once the child runs: err says so, and the caller aborts, as on running out
 * of memory (the other relay threads run on what this call leaves behind).
 * Nothing is ever written to stdout but the child's bytes.
 */
int relay_run(const struct relay_opts *o, struct relay_result *res, struct mt_err *err);

#endif
