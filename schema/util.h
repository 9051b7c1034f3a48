/*
 * util.h - small helpers every layer of mcptap uses: the error struct that
 * modules fill for their callers, allocation that treats running out of memory
 * as fatal, a growable byte buffer with a hard maximum, and the two clocks.
 */
#ifndef MCPTAP_UTIL_H
#define MCPTAP_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>

/* A module's reason for failing, filled by the callee and read by the caller. */
struct mt_err {
	char msg[512]; /* lowercase, no full stop; "" when nothing was set */
	int busy;      /* the store: another connection held the lock (try again later) */
};

/* Set err's message (printf-style); err may be NULL. Always returns -1. */
int mt_err_set(struct mt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "mcptap: MESSAGE" on stderr (the command layer's voice). Returns -1. */
int mt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "mcptap: warning: MESSAGE" on stderr. */
void mt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * How a module below the command layer speaks while it runs (a warning from
 * a thread, a peer's refusal): it hands whole lines, "mcptap: ...\n", to
 * say(ctx, text), and the command prints them. A voice without say is mute.
 * What ends a call goes back in a struct mt_err instead.
 */
struct mt_voice {
	void (*say)(void *ctx, const char *text);
	void *ctx;
};

/* Hand v text as it is (a whole line, or a progress line redrawn in place); v may be NULL. */
void mt_voice_say(const struct mt_voice *v, const char *text);

/* Hand v "mcptap: MESSAGE\n" / "mcptap: warning: MESSAGE\n"; v may be NULL. */
void mt_voice_error(const struct mt_voice *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mt_voice_warn(const struct mt_voice *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A say for the command layer: text on stderr, in one write (ctx unused). */
void mt_say_stderr(void *ctx, const char *text);

/*
 * Exit statuses of every subcommand but record (which exits as its child
 * did), also returned by the modes that run a command's whole work (the
 * mock servers, replay --verify, the HTTP tap).
 */
enum {
	EXIT_OK = 0,
	EXIT_FINDINGS = 1, /* analyze: findings at or above --fail-on */
	EXIT_ERROR = 2,    /* a usage error, or a file that cannot be read */
};

/* Allocation that aborts with a message when memory runs out; never NULL. */
void *mt_malloc(size_t n);
void *mt_calloc(size_t n, size_t size);
void *mt_realloc(void *p, size_t n);
char *mt_strdup(const char *s);
char *mt_strndup(const char *s, size_t n);
/* A formatted, newly allocated string (caller frees). */
char *mt_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
char *mt_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable byte buffer; data is NUL-terminated for convenience (not counted). */
struct mt_buf {
	char *data; /* owned; NULL until the first append */
	size_t len;
	size_t cap;
};
#define MT_BUF_INIT        \
	{                  \
		NULL, 0, 0 \
	}
void mt_buf_append(struct mt_buf *b, const void *p, size_t n);
void mt_buf_puts(struct mt_buf *b, const char *s);
void mt_buf_putc(struct mt_buf *b, char c);
void mt_buf_printf(struct mt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mt_buf_reset(struct mt_buf *b);             /* len = 0, keeps the memory */
void mt_buf_reserve(struct mt_buf *b, size_t n); /* room for n more bytes (and a NUL) */
void mt_buf_release(struct mt_buf *b);           /* frees the memory */

/*
 * Bytes held against a budget (pcap import's --memory). Each module that
 * holds some counts them as it allocates, grows or frees them, so that the
 * sum is known at once, never found by walking what is held; whoever holds
 * the budget decides what to give up when it is passed. An allocation is
 * counted with MT_MEM_CHUNK bytes more, the allocator's own. One thread; a
 * NULL counter counts nothing.
 */
#define MT_MEM_CHUNK 16
struct mt_mem {
	size_t used; /* bytes counted now */
	size_t peak; /* the most counted at once */
	/*
	 * Asked, before connections are given up, to free what is held apart
	 * from any of them (may be NULL): need is what is wanted; returns the
	 * bytes freed, 0 when nothing more can be.
	 */
	size_t (*reclaim)(void *ctx, size_t need);
	void *reclaim_ctx;
};
/* n bytes more, or fewer, counted as they are (bookkeeping that says its own cost). */
void mt_mem_add(struct mt_mem *m, size_t n);
void mt_mem_sub(struct mt_mem *m, size_t n);
/* An allocation went from was bytes to now (0: none), a buffer's capacity say. */
void mt_mem_size(struct mt_mem *m, size_t was, size_t now);
/* What a buffer holds as a counter counts it: its capacity, and MT_MEM_CHUNK (0: none). */
size_t mt_buf_bytes(const struct mt_buf *b);

/*
 * The 64-bit FNV-1a hash of n bytes (offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3): "" hashes to the basis, "a" to 0xaf63dc4c8601ec8c. Stored
 * and compared values depend on it; it never changes.
 */
uint64_t mt_fnv1a(const void *p, size_t n);

/* Monotonic nanoseconds (CLOCK_MONOTONIC) and wall-clock microseconds. */
int64_t mt_mono_ns(void);
int64_t mt_wall_us(void);

/* Format wall-clock µs as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (UTC) into out[32]. */
void mt_format_wall(int64_t wall_us, char out[32]);

/*
 * Parse a size such as "64M", "512k", "1G" or "1000" (bytes) into *out.
 * Returns 0, or -1 on a malformed or overflowing value.
 */
int mt_parse_size(const char *s, uint64_t *out);
/* Parse a non-negative decimal integer that fits in int64; returns 0 or -1. */
int mt_parse_int64(const char *s, int64_t *out);

/* Nanoseconds in a microsecond, a millisecond, a second, a minute and an hour. */
#define MT_US INT64_C(1000)
#define MT_MS INT64_C(1000000)
#define MT_SEC INT64_C(1000000000)
#define MT_MIN (60 * MT_SEC)
#define MT_HOUR (3600 * MT_SEC)

/*
 * Parse a duration, "500ms", "1.5s", "2m", into nanoseconds: a non-negative
 * decimal number (digits, then perhaps a point and more digits) and a unit,
 * ns, us (or \xc2\xb5s, U+00B5), ms, s, m or h; a bare number is in units of
 * unit_ns (> 0), the option's own. A fraction is rounded to the nearest
 * nanosecond (a half up). Returns 0, or -1 on a malformed, negative or
 * overflowing value (*ns untouched).
 */
int mt_parse_duration(const char *s, int64_t unit_ns, int64_t *ns);
/* ns (>= 0) in units of unit_ns (> 0): rounded to the nearest, a half up. */
int64_t mt_duration_in(int64_t ns, int64_t unit_ns);
/* A duration in ns as "812µs", "12.3ms", "4.20s", "3m12s" ("?" when negative). */
void mt_format_duration(int64_t ns, char out[32]);
/*
 * Split a listening address, "HOST:PORT", "[V6]:PORT" or a bare "PORT" (which
 * listens on loopback, as does an empty HOST), into host and port (0 to 65535).
 * Returns 0, or -1 when it is none of these (a HOST with an '@' is none).
 */
int mt_split_listen(const char *s, char *host, size_t hn, int *port);

/*
 * A process's identity, "BOOT-ID:START-TICKS" (the kernel's boot id and the
 * process's start time in clock ticks since boot), which no other process
 * shares, even after its pid is reused or the machine restarted. Into out;
 * returns 0, or -1 when no such process lives (or /proc cannot tell).
 */
int mt_process_identity(int64_t pid, char *out, size_t n);

/* Wait until fd is ready for events (POLLIN, POLLOUT); 0, or -1 (errno). */
int mt_wait_fd(int fd, short events);
/*
 * Write all n bytes to fd, retrying on EINTR and short writes, and waiting
 * when the descriptor was made non-blocking by someone else; 0 or -1 (errno).
 */
int mt_write_all(int fd, const void *p, size_t n);

/*
 * Open path for writing as every file mcptap makes is opened (capture files,
 * reports, the redaction key): created with mode 0600 whatever the umask, and
 * an existing file opened (with O_TRUNC, say) made 0600 too; never through a
 * symbolic link. flags: more open(2) flags (O_EXCL, O_TRUNC). Returns the
 * descriptor (close-on-exec), or -1 with errno set.
 */
int mt_open_private(const char *path, int flags);

/*
 * A temporary file in $TMPDIR (/tmp when unset or empty), already unlinked
 * and private (0600), open for reading and writing ("w+b"; the caller
 * fcloses it). tmpfile(3) would ignore $TMPDIR, where a user puts what does
 * not fit in /tmp. NULL with err saying why (the directory in it).
 */
FILE *mt_tmpfile(struct mt_err *err);

/* Append s to b quoted for a POSIX shell when it needs quoting. */
void mt_shell_quote(struct mt_buf *b, const char *s);

#endif
