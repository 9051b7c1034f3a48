/*
 * capcli.h - what `mcptap import` and `mcptap sniff` share at the command
 * layer: their common options (the capture file, the filter, the
 * reassembly limits, redaction), running a capture into the importer with
 * progress on a terminal, and the summary printed at the end.
 */
#ifndef MCPTAP_CAPCLI_H
#define MCPTAP_CAPCLI_H

#include <getopt.h>
#include <stdint.h>

#include "cli.h"
#include "tap/pcap/capture.h"
#include "tap/otlpcli.h"
#include "tap/pcap/pcapimport.h"

/* The options both commands take, with getopt_long values from 0x100 on. */
#define CAPCLI_LONGOPTS                                                                                      \
	{"write", required_argument, NULL, 'w'}, {"filter", required_argument, NULL, 'f'},                   \
		{"max-message", required_argument, NULL, 0x100},                                             \
		{"flow-memory", required_argument, NULL, 0x101}, {"memory", required_argument, NULL, 0x102}, \
		{"idle", required_argument, NULL, 0x103}, {"max-flows", required_argument, NULL, 0x104},     \
		{"redact-key", required_argument, NULL, 'K'}, {"redact-path", required_argument, NULL, 'P'}, \
		{"redact-value", required_argument, NULL, 'V'}, {"keep-secrets", no_argument, NULL, 'k'},    \
		OTLPCLI_LONGOPTS,                                                                            \
	{                                                                                                    \
		"help", no_argument, NULL, 'h'                                                               \
	}

/* The option list's lines for --help (what CAPCLI_LONGOPTS are). */
#define CAPCLI_OPTIONS_HELP                                                                           \
	"  -w, --write FILE      the capture file to store into (created 0600 if\n"                   \
	"                        missing; $MCPTAP_FILE)\n"                                            \
	"  -f, --filter EXPR     only the packets this BPF expression matches (as\n"                  \
	"                        tcpdump's: 'tcp port 3001')\n"                                       \
	"      --max-message SIZE  a body or SSE event above SIZE is stored as a gap\n"               \
	"                        (default 16M)\n"                                                     \
	"      --flow-memory SIZE  what one connection holds out of order (default 4M,\n"             \
	"                        or --memory when that is less)\n"                                    \
	"      --memory SIZE     every byte held across connections: their state,\n"                  \
	"                        bytes out of order, bodies and events being read\n"                  \
	"                        (default 256M); past it, those idle longest are\n"                   \
	"                        given up on\n"                                                       \
	"      --max-flows N     connections followed at once (default 100000)\n"                     \
	"      --idle DURATION   a connection silent this long in capture time is\n"                  \
	"                        closed (default 5m)\n"                                               \
	"      --redact-key NAME   also redact JSON values under members named NAME\n"                \
	"      --redact-path PATH  also redact what is at this JSON path\n"                           \
	"      --redact-value REGEX  also redact what this extended regex matches\n"                  \
	"      --keep-secrets    store credentials as they are (no redaction)\n" OTLPCLI_OPTIONS_HELP \
	"  -h, --help            this text\n"                                                         \
	"\n"                                                                                          \
	"A DURATION is a number with a unit, ns, us, ms, s, m or h (500ms, 1.5s); a\n"                \
	"bare number is seconds.\n"

struct capcli {
	const struct cmd_entry *e; /* the command (for its usage errors) */
	const char *path;          /* -w */
	const char *filter;        /* -f */
	struct mt_import_opts io;
	const char **rules; /* --redact-* (owned array, borrowed strings) */
	char *kinds;
	size_t nrules;
	int keep;              /* --keep-secrets */
	int flow_set;          /* --flow-memory was given */
	struct mt_redact *red; /* owned, made by capcli_ready */
	struct otlp_cli otlp;  /* --otlp* */
	char label[600];
};

/* Defaults; argc bounds the redaction rules. */
void capcli_init(struct capcli *o, const struct cmd_entry *e, int argc);
void capcli_release(struct capcli *o);

/*
 * A shared option (getopt_long's c and optarg): 1 when taken, 0 when not
 * one of them, -1 after a usage error (printed).
 */
int capcli_option(struct capcli *o, int c, const char *arg);

/* The options are all in: the file named, the redactor made. 0, or -1 (printed). */
int capcli_ready(struct capcli *o);

/* What a run is to capture. */
struct capcli_run {
	const char *what; /* "'x.pcap'" or "interface 'lo'", for messages */
	int live;
	uint64_t max_packets; /* sniff -c (0: none) */
	int64_t duration_ms;  /* sniff --duration (0: none) */
	/*
	 * What the run says, for the caller to print on stderr as it comes: a
	 * live capture's first line, its warnings, the progress on a terminal
	 * (a line redrawn in place: "\r...\033[K"), the summary at the end.
	 */
	struct mt_voice voice;
};

/*
 * Filter cap (o->filter), import every packet into o->path until the
 * capture ends (or SIGINT/SIGTERM, -c, --duration), store everything and
 * say the summary (r->voice). Progress is said when stderr is a terminal.
 * Takes cap (freed). Returns the exit status; when the run could not start
 * (a bad filter, a file that cannot be written, a writer thread that would
 * not start), EXIT_ERROR with fail set.
 * Warnings are said (r->voice) as they come.
 */
int capcli_run(struct capcli *o, struct mt_capture *cap, const struct capcli_run *r, struct mt_err *fail);

#endif
