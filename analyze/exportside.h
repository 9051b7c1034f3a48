/*
 * exportside.h - for the commands that write sessions out through an export
 * format: cmd-export.c (where it lives) and cmd-report.c (the HTML report).
 * The formats themselves are analyze/export/export.h; this is what the
 * command line says of them.
 */
#ifndef MCPTAP_EXPORTSIDE_H
#define MCPTAP_EXPORTSIDE_H

#include "analyze/export/export.h"
#include "cli.h"

/* What their options say: the readers' shared ones, the format's own. */
struct ex_args {
	struct cli_read rd;  /* -r, -s, -Y, -T, -o, --redact-*, --keep-secrets */
	struct ex_opts opts; /* the format's options */
};

/*
 * Check a, open the capture and write its sessions (every one unless -s)
 * through f, redacted unless --keep-secrets, to a->rd.out: standard output
 * (NULL or "-"); a regular file replaced whole at the end through a temporary
 * file beside it (a failure or SIGINT, SIGTERM or SIGHUP leaves the old one
 * and no temporary file); a device or FIFO as it is; never the capture
 * itself. Says what fails. Returns the command's exit status.
 */
int ex_run(const struct cmd_entry *cmd, const struct ex_format *f, struct ex_args *a);

/*
 * Its parts, for a command that writes sessions of more than one capture
 * (report --diff): the output opened as ex_run opens it (out, cmd: as there;
 * the capture checked against is x->path), body(x, ctx) called to write, and
 * the output closed or left as it was. EXIT_OK or EXIT_ERROR (said).
 */
int ex_output(struct ex_sink *x, const struct cmd_entry *cmd, const char *out,
	      int (*body)(struct ex_sink *x, void *ctx), void *ctx);
/* In body: the format's beginning, one session of x->st, the end. 0, or -1 (said). */
int ex_begin(struct ex_sink *x);
int ex_session(struct ex_sink *x, int64_t id);
int ex_end(struct ex_sink *x);

#endif
