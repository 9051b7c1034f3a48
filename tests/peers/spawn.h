/*
 * spawn.h - for the test peers and bench programs (header-only, each is one
 * .c file): start a command with pipes on its stdin and stdout.
 */
#ifndef MCPTAP_TESTS_SPAWN_H
#define MCPTAP_TESTS_SPAWN_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern char **environ;

/* Starts argv[0] (looked up in PATH) with new pipes on its stdin and stdout. Fills
 * *pid, *to_child and *from_child (both owned by the caller, close-on-exec). Returns 0,
 * or -1 with errno set. */
static int spawn_child(char *const argv[], pid_t *pid, int *to_child, int *from_child)
{
	int rc = -1, err, in[2] = {-1, -1}, out[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t def;

	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		goto out;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	/* We ignore SIGPIPE; the child must not inherit that. */
	posix_spawnattr_init(&attr);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
	err = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (err != 0) {
		errno = err;
		goto out;
	}
	*to_child = in[1];
	*from_child = out[0];
	in[1] = out[0] = -1;
	rc = 0;
out:
	err = errno;
	if (in[0] >= 0)
		close(in[0]);
	if (in[1] >= 0)
		close(in[1]);
	if (out[0] >= 0)
		close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
	errno = err;
	return rc;
}

#endif
