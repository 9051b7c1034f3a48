/*
 * hold-conns.c - open many TCP connections to a server and hold them, to bring
 * the server to its descriptor limit (tests/e2e/t0635-listen-fd-limit.sh).
 *
 * usage: hold-conns HOST PORT N
 *
 * Connects N times to HOST:PORT (an IPv4 address), one after the other, each
 * connect given up after 1 s (a full backlog). Then prints "held K" (K: the
 * connections established) on stdout and holds them, sending nothing, until
 * it is killed (SIGTERM): the kernel closes them then. Exit status 2 on a
 * usage error or when not one connection could be made.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	struct timeval tv = {1, 0};
	char *end;
	long port, n, held = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: hold-conns HOST PORT N\n");
		return 2;
	}
	port = strtol(argv[2], &end, 10);
	if (*end || port < 1 || port > 65535)
		return fprintf(stderr, "hold-conns: bad port '%s'\n", argv[2]), 2;
	n = strtol(argv[3], &end, 10);
	if (*end || n < 1 || n > 100000)
		return fprintf(stderr, "hold-conns: bad count '%s'\n", argv[3]), 2;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1)
		return fprintf(stderr, "hold-conns: bad address '%s'\n", argv[1]), 2;
	{
		/* Room for them all (the soft limit up to the hard one). */
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 16 &&
		    rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = (rlim_t)n + 16 < rl.rlim_max ? (rlim_t)n + 16 : rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	for (long i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			fprintf(stderr, "hold-conns: socket: %s\n", strerror(errno));
			break;
		}
		/* (SO_SNDTIMEO bounds a blocking connect on Linux) */
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			fprintf(stderr, "hold-conns: connection %ld: %s\n", i + 1, strerror(errno));
			close(fd);
			break;
		}
		held++;
	}
	printf("held %ld\n", held);
	fflush(stdout);
	if (!held)
		return 2;
	for (;;)
		pause();
}
