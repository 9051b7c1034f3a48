/*
 * tests/bench/byte-relay.c - the floor for any stdio interposer, for benchmarks.
 *
 * Usage: byte-relay -- CMD ARGS...
 *
 * Spawns CMD ARGS (no shell) with pipes on its stdin and stdout (stderr inherited) and
 * relays our stdin to the child's stdin and the child's stdout to our stdout, byte for
 * byte, with no parsing and no logging: one thread per direction, blocking reads and
 * writes of up to 64 KiB. Our stdin's EOF closes the child's stdin. When the child's
 * stdout reaches EOF the relay waits for the child and exits with its status (128 + the
 * signal number when it was killed). SIGINT, SIGTERM and SIGHUP are passed on to the
 * child.
 *
 * Exit status: the child's; 2 on a usage error; 127 when CMD cannot be run.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/peers/spawn.h"

#define PROG "byte-relay"
#define CHUNK ((size_t)64 << 10)

/* The child, for the signal handler; set before the handler is installed. */
static volatile pid_t child_pid = -1;

/* One direction of the relay. */
struct pump {
	int from;     /* borrowed descriptor read from */
	int to;       /* borrowed descriptor written to */
	int close_to; /* close `to` when `from` ends */
};

/* Passes a terminating signal on to the child. */
static void forward_signal(int sig)
{
	int saved = errno;

	if (child_pid > 0)
		kill(child_pid, sig);
	errno = saved;
}

/* Copies p->from to p->to until EOF or an error. Returns 0 at EOF, -1 on an error. */
static int pump_run(const struct pump *p)
{
	int rc = -1;
	char *buf;
	ssize_t n, w;
	size_t done;

	buf = malloc(CHUNK);
	if (buf == NULL)
		goto out;
	for (;;) {
		n = read(p->from, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n == 0 ? 0 : -1;
			break;
		}
		for (done = 0; done < (size_t)n; done += (size_t)w) {
			w = write(p->to, buf + done, (size_t)n - done);
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w < 0)
				goto out;
		}
	}
out:
	free(buf);
	return rc;
}

/* Thread body: runs a pump, then closes its destination when asked. */
static void *pump_thread(void *arg)
{
	struct pump *p = arg;

	pump_run(p);
	if (p->close_to)
		close(p->to);
	return NULL;
}

int main(int argc, char **argv)
{
	int status = 2, err, wstatus, to_child = -1, from_child = -1;
	pid_t pid, w;
	pthread_t th;
	struct pump up, down;
	struct sigaction sa;

	if (argc < 3 || strcmp(argv[1], "--") != 0) {
		fprintf(stderr, "usage: %s -- CMD ARGS...\n", PROG);
		goto out;
	}
	status = 127;
	signal(SIGPIPE, SIG_IGN);
	if (spawn_child(argv + 2, &pid, &to_child, &from_child) != 0) {
		fprintf(stderr, "%s: cannot run '%s': %s\n", PROG, argv[2], strerror(errno));
		goto out;
	}
	child_pid = pid;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	up.from = STDIN_FILENO;
	up.to = to_child;
	up.close_to = 1;
	err = pthread_create(&th, NULL, pump_thread, &up);
	if (err != 0) {
		fprintf(stderr, "%s: cannot start a thread: %s\n", PROG, strerror(err));
		close(to_child);
	} else {
		/* It may stay blocked reading our stdin after the child is gone. */
		pthread_detach(th);
	}
	down.from = from_child;
	down.to = STDOUT_FILENO;
	down.close_to = 0;
	if (pump_run(&down) != 0 && errno != EPIPE)
		fprintf(stderr, "%s: relaying the child's output: %s\n", PROG, strerror(errno));
	/* Our stdout is gone or the child's ended: the child sees EPIPE from now on. */
	close(from_child);
	do
		w = waitpid(pid, &wstatus, 0);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		status = 1;
	else if (WIFEXITED(wstatus))
		status = WEXITSTATUS(wstatus);
	else if (WIFSIGNALED(wstatus))
		status = 128 + WTERMSIG(wstatus);
	else
		status = 1;
out:
	return status;
}
