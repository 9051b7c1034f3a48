/*
 * diffside.h - for the commands that compare two recorded sessions: cmd-diff.c
 * (where it lives) and cmd-report.c (report --diff). The comparing itself is
 * analyze/replay/sdiff.h; this is what the command line says of it.
 */
#ifndef MCPTAP_DIFFSIDE_H
#define MCPTAP_DIFFSIDE_H

#include <jansson.h>
#include <stdint.h>

#include "analyze/replay/sdiff.h"
#include "cli.h"

/* A FILE[:ID] argument: the file and the session. */
struct diff_side {
	char *path;       /* owned */
	const char *sid;  /* into path's allocation, or NULL: the newest */
	struct store *st; /* owned */
	int64_t id;
};

/* --ignore and --noise, in order (the arrays owned, the strings argv's). */
struct diff_args {
	const char **ignore;
	size_t nignore;
	const char **noise;
	size_t nnoise;
	json_t *noise_sides; /* set by diff_compare: [{file, session}] of the noise (owned) */
};

/* getopt's 'i' (--ignore) or 'n' (--noise) into da: 1; 0 for another option. */
int diff_arg(struct diff_args *da, int c, const char *arg);

/*
 * Open A and B (FILE[:ID], the newest session without :ID) and the noise,
 * and compare them (sd_noise, sd_run) with da's ignore paths, each exchange
 * to each(ctx), the counts into t. The sides stay open in *a and *b
 * (diff_side_release them, also after a failure). 0, or the exit status to
 * return after saying why.
 */
int diff_compare(const struct cmd_entry *cmd, const char *arg_a, const char *arg_b, struct diff_args *da,
		 struct diff_side *a, struct diff_side *b, sd_each_fn each, void *ctx, struct sd_totals *t);

void diff_side_release(struct diff_side *s);

#endif
