/*
 * verify.h - the recorded client against a live server (`mcptap replay --as
 * client`): every live answer compared with the recorded one. The matching
 * rules are in replay.h; the wire is tap/stdio/lineio.h (a server command on stdio)
 * or tap/http/httpclient.h (a server at a URL, on Streamable HTTP or legacy
 * HTTP+SSE).
 */
#ifndef MCPTAP_VERIFY_H
#define MCPTAP_VERIFY_H

#include "analyze/replay/replay.h"

/* The most live runs (--runs). */
#define VERIFY_MAX_RUNS 100

/* How to talk to a server at a URL (verify_opts.transport). */
enum verify_transport {
	VERIFY_AUTO,       /* as the recording: legacy HTTP+SSE for a legacy one, else Streamable */
	VERIFY_STREAMABLE, /* Streamable HTTP */
	VERIFY_LEGACY,     /* legacy HTTP+SSE (the URL is the SSE endpoint) */
};

struct verify_opts {
	char **argv;             /* the live server's command (borrowed), when url is NULL */
	int timeout_ms;          /* wait at most this long for each answer (and, over HTTP, to
				  * connect) */
	struct store *st;        /* where the run is stored (borrowed), or NULL */
	const char *store_path;  /* its path, for messages */
	const char *ignore_json; /* the --ignore paths as a JSON array text, or NULL */
	int runs;                /* live runs (a fresh server, or session, each; VERIFY_MAX_RUNS at
				  * most); 2 or more tell noise from change */
	int fast;                /* send as fast as the answers allow, not at the recorded pace */
	int verbose;             /* -v: recorded and live values at each differing or noisy path */
	/* A live server at a URL instead of a command: */
	const char *url; /* http:// or https:// (borrowed), or NULL */
	enum verify_transport transport;
	const char *cacert;         /* a CA file trusted besides the system's (borrowed), or NULL */
	int insecure;               /* no certificate or host name verification */
	const char *const *headers; /* "Name: value" lines sent on every request (borrowed) */
	size_t nheaders;
	const char *reset; /* a shell command run before each run (--reset), or NULL */
	/*
	 * The report, as it comes: line(line_ctx, text) with each whole line (its
	 * "\n" included) for the caller to print; text NULL when what was said
	 * must be out before what follows (a --reset's output, the end).
	 */
	void (*line)(void *ctx, const char *text);
	void *line_ctx;
	struct mt_voice voice; /* the warnings while it runs, for the caller to print */
};

/*
 * Run the recorded client: one report line per request (and NOTE and GONE
 * lines as they come) to o->line, a summary line at the end; warnings to
 * o->voice. Returns the exit status; when an error ended the run (the server
 * could not be started or reached, a --reset failed, the recording could not
 * be read), fail says what (it is left alone otherwise).
 */
int verify_run(struct rp_script *s, const struct verify_opts *o, struct mt_err *fail);

#endif
