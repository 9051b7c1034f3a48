/*
 * child.c - starting a peer process on pipes (see child.h).
 */
#include "tap/stdio/child.h"

#include <spawn.h>

extern char **environ;

int child_spawn(char *const *argv, const int fds[3], const sigset_t *reset, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, empty;
	int rc;

	sigemptyset(&none);
	sigemptyset(&empty);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0)
			posix_spawn_file_actions_adddup2(&fa, fds[i], i);
		else if (fds[i] == CHILD_CLOSED)
			posix_spawn_file_actions_addclose(&fa, i);
	}
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, reset ? reset : &empty);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return rc;
}
