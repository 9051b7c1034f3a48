/*
 * clock.h - for the bench load clients (header-only): the monotonic clock and
 * the watchdog that ends a run which makes no progress. Include after
 * defining PROG (the program's name) and IDLE_SECS.
 */
#ifndef MCPTAP_TESTS_CLOCK_H
#define MCPTAP_TESTS_CLOCK_H

#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* Exits with a message when no progress was made for IDLE_SECS (SIGALRM). */
static void on_alarm(int sig)
{
	static const char msg[] = PROG ": no progress for " STR(IDLE_SECS) " s; giving up\n";
	ssize_t ignored;

	(void)sig;
	ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
	(void)ignored;
	_exit(1);
}

/* Returns CLOCK_MONOTONIC in nanoseconds. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
