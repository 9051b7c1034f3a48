/*
 * unit.h - what every cmocka unit test includes: cmocka's headers in the order
 * it needs, and small helpers for scratch files.
 */
#ifndef MCPTAP_UNIT_H
#define MCPTAP_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* A fresh scratch directory under $TMPDIR (or /tmp); the caller removes it with unit_rmdir. */
static inline char *unit_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = malloc(4096);

	snprintf(dir, 4096, "%s/mcptap-unit.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* Remove a scratch directory and what is in it (one level). */
static inline void unit_rmdir(char *dir)
{
	char cmd[4200];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	free(dir);
}

#endif
