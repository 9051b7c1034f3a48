/*
 * child.h - starting a peer process (a wrapped server, a live server to
 * replay against) with its standard streams on pipes, and no shell.
 */
#ifndef MCPTAP_CHILD_H
#define MCPTAP_CHILD_H

#include <signal.h>
#include <sys/types.h>

/*
 * Start argv[0] (looked up in PATH) with argv. fds[0..2] become the child's
 * stdin, stdout and stderr (-1: inherit the caller's; CHILD_CLOSED: closed in
 * the child). Signals in reset (may be
 * NULL) get their default action in the child, and its signal mask is empty.
 * Returns 0 with *pid, or an errno value (ENOENT, EACCES, ...) when the
 * command cannot run.
 */
#define CHILD_CLOSED (-2)

int child_spawn(char *const *argv, const int fds[3], const sigset_t *reset, pid_t *pid);

#endif
