/*
 * relay.c - the stdio tap (see relay.h).
 *
 * One thread per stream does read -> hand a copy to the writer -> write, with
 * blocking I/O, so the two directions never wait for each other (as with a
 * direct pipe). The copy is queued before the write so that the order of the
 * store is exactly the order of reading; the queue's lock is the only thing
 * the relay shares with the logger. Parsing and SQLite happen on the writer's
 * thread. The main thread waits for the child and forwards signals to it.
 */
#include "tap/stdio/relay.h"
#include "tap/stdio/child.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PUMP_BUF (64 * 1024)

struct relay;

struct pump {
	struct relay *r;
	enum writer_stream s;
	int in_fd;  /* read from (owned) */
	int out_fd; /* write to (the child's stdin is owned; 1 and 2 are not) */
	pthread_t thread;
	int started;
};

struct relay {
	pthread_rwlock_t wlock; /* read: inside writer_put; write: retiring the writer */
	struct writer *w;       /* NULL once retired (or never) */
	int devnull;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int done[WS_COUNT];    /* the pump has finished */
	int busy[WS_COUNT];    /* the pump holds bytes it read and has not written yet */
	int64_t last_activity; /* monotonic ns of the last read */
	struct pump pumps[WS_COUNT];
};

static volatile sig_atomic_t child_pid;

/* Forward a signal to the child, unless the kernel sent it to our whole
 * process group (a terminal's ^C), which the child got too. Once the child
 * is gone, a signal tells the tap to stop waiting for a locked capture file. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill((pid_t)child_pid, sig);
	else if (child_pid < 0)
		writer_give_up();
}

static void put(struct relay *r, enum writer_stream s, const char *p, size_t n)
{
	pthread_rwlock_rdlock(&r->wlock);
	if (r->w)
		writer_put(r->w, s, p, n);
	pthread_rwlock_unlock(&r->wlock);
}

/* Make fd a sink: the pipe that was there closes, so its writer sees EPIPE/EOF. */
static void retire_fd(struct relay *r, int fd)
{
	if (dup2(r->devnull, fd) < 0)
		close(fd);
}

static void *pump_main(void *arg)
{
	struct pump *p = arg;
	struct relay *r = p->r;
	char *buf = mt_malloc(PUMP_BUF);
	int out_ok = 1;

	for (;;) {
		ssize_t n = read(p->in_fd, buf, PUMP_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		/* A client may hand us a non-blocking descriptor: wait, it is not an end. */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && mt_wait_fd(p->in_fd, POLLIN) == 0)
			continue;
		if (n <= 0)
			break;
		/* Bytes in hand are not quiet: the drain waits for them however slowly
		 * the reader takes them (it counts quiet again from when it last saw
		 * them held). */
		__atomic_store_n(&r->busy[p->s], 1, __ATOMIC_RELAXED);
		__atomic_store_n(&r->last_activity, mt_mono_ns(), __ATOMIC_RELAXED);
		put(r, p->s, buf, (size_t)n);
		int wrote = out_ok ? mt_write_all(p->out_fd, buf, (size_t)n) : 0;
		__atomic_store_n(&r->busy[p->s], 0, __ATOMIC_RELAXED);
		if (out_ok && wrote < 0) {
			out_ok = 0;
			if (p->s == WS_C2S) {
				/* The child closed its stdin: the client's writes fail from now on too. */
				retire_fd(r, STDIN_FILENO);
				break;
			}
			if (p->s == WS_S2C) {
				/* The client stopped reading: the child's writes fail from now on too. */
				break;
			}
			/* stderr: keep storing what the child says. */
		}
	}
	put(r, p->s, NULL, 0);
	switch (p->s) {
	case WS_C2S:
		close(p->out_fd); /* EOF on the child's stdin */
		break;
	case WS_S2C:
		retire_fd(r, STDOUT_FILENO); /* EOF for the client */
		close(p->in_fd);
		p->in_fd = -1;
		break;
	default:
		close(p->in_fd);
		p->in_fd = -1;
		break;
	}
	free(buf);
	pthread_mutex_lock(&r->mu);
	r->done[p->s] = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Signals the tap forwards, and those it ignores for itself. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
static const int ignored[] = {SIGPIPE, SIGXFSZ};

/*
 * Set the tap's signal handling; *reset gets the signals the child must have
 * back at their defaults (those the tap changed, not those it inherited as
 * ignored, which the child inherits too).
 */
static void setup_signals(sigset_t *reset, sigset_t *fwd)
{
	struct sigaction sa, old;

	sigemptyset(reset);
	sigemptyset(fwd);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = forward_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		sigaction(forwarded[i], &sa, NULL);
		sigaddset(reset, forwarded[i]);
		sigaddset(fwd, forwarded[i]);
	}
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		if (sigaction(ignored[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_IGN;
		sigaction(ignored[i], &sa, NULL);
		sigaddset(reset, ignored[i]);
	}
}

/*
 * After the child exited: wait for its stdout and stderr to end, or to go
 * quiet (a grandchild may keep them open). Quiet is measured on the server's
 * output only: while a pump still holds bytes for a reader that is slow to
 * take them, nothing is quiet, however long that takes (the reader going away
 * ends the write).
 */
static void drain(struct relay *r, int drain_ms)
{
	struct timespec ts;
	int64_t held = 0; /* when a pump was last seen holding bytes */

	pthread_mutex_lock(&r->mu);
	while (!(r->done[WS_S2C] && r->done[WS_STDERR])) {
		int64_t now = mt_mono_ns(), last = __atomic_load_n(&r->last_activity, __ATOMIC_RELAXED);
		if (__atomic_load_n(&r->busy[WS_S2C], __ATOMIC_RELAXED) ||
		    __atomic_load_n(&r->busy[WS_STDERR], __ATOMIC_RELAXED))
			held = now;
		if (now - (held > last ? held : last) >= (int64_t)drain_ms * 1000000)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&r->cond, &r->mu, &ts);
	}
	pthread_mutex_unlock(&r->mu);
}

int relay_run(const struct relay_opts *o, struct relay_result *res, struct mt_err *err)
{
	/* Pumps left blocked on a read when we return still point at it: it lives
	 * on the heap and is freed only when every pump was joined. */
	struct relay *rp = mt_calloc(1, sizeof(*rp));
	int64_t t0 = mt_mono_ns(), wall0 = mt_wall_us();
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
	sigset_t reset, fwd, old;
	/* The stored command line, credentials redacted (shell-quoted either way). */
	char *cmdline = mt_redact_command(o->wopts.redact, o->argv);
	char cwd[4096];
	pid_t pid = 0;
	int rc = -1, status = 0, detached = 0;

	memset(res, 0, sizeof(*res));
	res->exit_status = -1;
	/* A standard stream closed when we start stays closed for the child, as it
	 * would be without the tap; meanwhile /dev/null holds its number, so that
	 * no pipe or file of ours takes it. */
	int closed[3] = {0, 0, 0};
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int d = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (d >= 0 && d != fd) {
				(void)dup2(d, fd);
				close(d);
			}
			closed[fd] = 1;
		}
	}
#define r (*rp)
	pthread_rwlock_init(&r.wlock, NULL);
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cond, NULL);
	r.devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';

	/* The writer opens the file and makes the session in its own thread: the
	 * server starts now, whatever the file's state (locked for long, even). */
	if (o->db_path) {
		struct store_session_new sn = {"stdio", wall0, cmdline, cwd, 0, NULL, NULL};
		r.w = writer_open(o->db_path, &sn, t0, &o->wopts, err);
	}

	setup_signals(&reset, &fwd);
	/* Forwarded signals wait until the child exists; threads never take them. */
	pthread_sigmask(SIG_BLOCK, &fwd, &old);

	if (o->db_path && !r.w)
		goto out; /* (its thread would not start: err says so) */

	if ((!closed[0] && pipe2(in, O_CLOEXEC)) || (!closed[1] && pipe2(out, O_CLOEXEC)) ||
	    (!closed[2] && pipe2(errp, O_CLOEXEC))) {
		mt_err_set(err, "cannot create pipes: %s", strerror(errno));
		goto out;
	}
	int child_fds[3] = {closed[0] ? CHILD_CLOSED : in[0], closed[1] ? CHILD_CLOSED : out[1],
			    closed[2] ? CHILD_CLOSED : errp[1]};
	int serr = child_spawn(o->argv, child_fds, &reset, &pid);
	if (in[0] >= 0)
		close(in[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	in[0] = out[1] = errp[1] = -1;
	if (serr) {
		res->spawn_errno = serr;
		res->exit_status = serr == ENOENT ? 127 : 126;
		if (r.w) {
			char *why = mt_asprintf("cannot run '%s': %s", o->argv[0], strerror(serr));
			struct store_session_end e = {mt_wall_us(), mt_mono_ns() - t0, 0, res->exit_status, 0,
						      why};
			(void)writer_finish(r.w, &e, NULL); /* (it reports its own failures) */
			r.w = NULL;
			free(why);
		}
		rc = 0;
		goto out;
	}
	child_pid = pid;

	r.last_activity = mt_mono_ns();
	struct pump init[WS_COUNT] = {
		[WS_C2S] = {&r, WS_C2S, STDIN_FILENO, in[1], 0, 0},
		[WS_S2C] = {&r, WS_S2C, out[0], STDOUT_FILENO, 0, 0},
		[WS_STDERR] = {&r, WS_STDERR, errp[0], STDERR_FILENO, 0, 0},
	};
	in[1] = out[0] = errp[0] = -1; /* the pumps own them */
	for (int i = 0; i < WS_COUNT; i++) {
		r.pumps[i] = init[i];
		/* No pump for a stream that was closed: the child has none either. */
		int std = i == WS_C2S ? 0 : i == WS_S2C ? 1 : 2;
		if (closed[std]) {
			r.done[i] = 1;
			continue;
		}
		int e = pthread_create(&r.pumps[i].thread, NULL, pump_main, &r.pumps[i]);
		if (e) {
			/* Other pumps run on r: nothing here is undone (the caller aborts). */
			mt_err_set(err, "cannot start a relay thread: %s", strerror(e));
			return -2;
		}
		r.pumps[i].started = 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			mt_voice_error(&o->voice, "cannot wait for the child: %s", strerror(errno));
			status = 0;
			break;
		}
	}
	child_pid = -1; /* gone: a signal now means "stop waiting for the file" */
	if (WIFEXITED(status))
		res->exit_status = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		res->exit_signal = WTERMSIG(status);

	drain(&r, o->drain_ms > 0 ? o->drain_ms : 1000);

	if (r.w) {
		struct writer *w = r.w;
		struct store_session_end e = {mt_wall_us(),     mt_mono_ns() - t0, pid,
					      res->exit_status, res->exit_signal,  NULL};
		writer_stop(w);
		pthread_rwlock_wrlock(&r.wlock);
		r.w = NULL; /* no pump touches it after this */
		pthread_rwlock_unlock(&r.wlock);
		(void)writer_finish(w, &e, NULL); /* (it reports its own failures) */
	}
	/* Pumps still blocked on the client's stdin (or on a grandchild's pipe) end
	 * with the process; those that finished are joined. */
	for (int i = 0; i < WS_COUNT; i++) {
		int done;
		pthread_mutex_lock(&r.mu);
		done = r.done[i];
		pthread_mutex_unlock(&r.mu);
		if (r.pumps[i].started && done)
			pthread_join(r.pumps[i].thread, NULL);
		else if (r.pumps[i].started) {
			pthread_detach(r.pumps[i].thread);
			detached = 1;
		}
	}
	rc = 0;
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	if (r.w) /* (pipes could not be made) */
		(void)writer_finish(r.w, NULL, NULL);
	free(cmdline);
	if (!detached) {
		close(r.devnull);
		pthread_rwlock_destroy(&r.wlock);
		pthread_mutex_destroy(&r.mu);
		pthread_cond_destroy(&r.cond);
		free(rp);
	}
#undef r
	return rc;
}
