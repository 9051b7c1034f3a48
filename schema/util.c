/*
 * util.c - errors, allocation, buffers, clocks and parsing helpers shared by
 * every layer (see util.h).
 */
#include "schema/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int mt_err_set(struct mt_err *err, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* "mcptap: PREFIXMESSAGE\n" into line (cut to fit); its length, or 0. */
static size_t vline(char *line, size_t size, const char *prefix, const char *fmt, va_list ap)
{
	int n;

	n = snprintf(line, size, "mcptap: %s", prefix);
	if (n < 0 || (size_t)n >= size - 1)
		return 0;
	vsnprintf(line + n, size - (size_t)n - 1, fmt, ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	line[n] = '\0';
	return (size_t)n;
}

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	char line[2048];
	size_t n = vline(line, sizeof(line), prefix, fmt, ap);

	/* One write, so that lines from threads do not interleave mid-line. */
	if (n)
		(void)mt_write_all(STDERR_FILENO, line, n);
}

static void vvoice(const struct mt_voice *v, const char *prefix, const char *fmt, va_list ap)
{
	char line[2048];

	if (v && v->say && vline(line, sizeof(line), prefix, fmt, ap))
		mt_voice_say(v, line);
}

void mt_voice_say(const struct mt_voice *v, const char *text)
{
	if (v && v->say)
		v->say(v->ctx, text);
}

void mt_voice_error(const struct mt_voice *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vvoice(v, "", fmt, ap);
	va_end(ap);
}

void mt_voice_warn(const struct mt_voice *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vvoice(v, "warning: ", fmt, ap);
	va_end(ap);
}

void mt_say_stderr(void *ctx, const char *text)
{
	(void)ctx;
	(void)mt_write_all(STDERR_FILENO, text, strlen(text));
}

int mt_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
	return -1;
}

void mt_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

static void out_of_memory(size_t n)
{
	char msg[96];
	int len = snprintf(msg, sizeof(msg), "mcptap: out of memory (%zu bytes)\n", n);

	if (len > 0)
		(void)mt_write_all(STDERR_FILENO, msg, (size_t)len);
	abort();
}

void *mt_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		out_of_memory(n);
	return p;
}

void *mt_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory(n * size);
	return p;
}

void *mt_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		out_of_memory(n);
	return q;
}

char *mt_strndup(const char *s, size_t n)
{
	char *p = mt_malloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *mt_strdup(const char *s)
{
	return mt_strndup(s, strlen(s));
}

char *mt_vasprintf(const char *fmt, va_list ap)
{
	va_list again;
	int n;
	char *s;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, again);
	va_end(again);
	if (n < 0)
		return mt_strdup("");
	s = mt_malloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *mt_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = mt_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

static void buf_grow(struct mt_buf *b, size_t extra)
{
	size_t want = b->len + extra + 1;

	if (want <= b->cap)
		return;
	if (want < b->len)
		out_of_memory(SIZE_MAX);
	size_t cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	b->data = mt_realloc(b->data, cap);
	b->cap = cap;
}

void mt_buf_reserve(struct mt_buf *b, size_t n)
{
	buf_grow(b, n);
}

void mt_buf_append(struct mt_buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mt_buf_puts(struct mt_buf *b, const char *s)
{
	mt_buf_append(b, s, strlen(s));
}

void mt_buf_putc(struct mt_buf *b, char c)
{
	buf_grow(b, 1);
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}

void mt_buf_printf(struct mt_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void mt_buf_reset(struct mt_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void mt_buf_release(struct mt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void mt_mem_add(struct mt_mem *m, size_t n)
{
	if (!m)
		return;
	m->used += n;
	if (m->used > m->peak)
		m->peak = m->used;
}

void mt_mem_sub(struct mt_mem *m, size_t n)
{
	if (!m)
		return;
	if (n > m->used)
		abort(); /* (more freed than was counted: a module's bookkeeping is wrong) */
	m->used -= n;
}

void mt_mem_size(struct mt_mem *m, size_t was, size_t now)
{
	size_t a = was ? was + MT_MEM_CHUNK : 0, b = now ? now + MT_MEM_CHUNK : 0;

	if (b > a)
		mt_mem_add(m, b - a);
	else
		mt_mem_sub(m, a - b);
}

size_t mt_buf_bytes(const struct mt_buf *b)
{
	return b->cap ? b->cap + MT_MEM_CHUNK : 0;
}

uint64_t mt_fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int64_t mt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mt_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void mt_format_wall(int64_t wall_us, char out[32])
{
	time_t secs = (time_t)(wall_us / 1000000);
	unsigned usec = (unsigned)((wall_us % 1000000 + 1000000) % 1000000);
	struct tm tm;
	char date[24];

	if (!gmtime_r(&secs, &tm) || !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(out, 32, "?");
		return;
	}
	snprintf(out, 32, "%.19s.%06uZ", date, usec % 1000000u);
}

int mt_parse_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int mt_parse_duration(const char *s, int64_t unit_ns, int64_t *ns)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {{"ns", 1},     {"us", MT_US}, {"\xc2\xb5s", MT_US}, {"ms", MT_MS},
		     {"s", MT_SEC}, {"m", MT_MIN}, {"h", MT_HOUR}};
	const char *p = s, *frac = NULL, *frac_end = NULL;
	int64_t whole = 0, unit = unit_ns, part = 0;

	if (!s || *s < '0' || *s > '9' || unit_ns <= 0)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > (INT64_MAX - (*p - '0')) / 10)
			return -1;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		frac = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p == frac)
			return -1; /* ("1.": a point with no digits after it) */
		frac_end = p;
	}
	if (*p) {
		size_t k;
		for (k = 0; k < sizeof(units) / sizeof(units[0]); k++)
			if (!strcmp(p, units[k].name))
				break;
		if (k == sizeof(units) / sizeof(units[0]))
			return -1;
		unit = units[k].ns;
	}
	if (frac) {
		/*
		 * unit times 0.d1d2...dn, exactly: from the last digit to the
		 * first, q = d * unit + q / 10 is the floor of unit times
		 * d.dd...; never above 10 units, so it cannot overflow. The last
		 * division's remainder is the tenths of a nanosecond to round by.
		 */
		int64_t q = 0;
		if (unit > INT64_MAX / 10)
			return -1;
		for (const char *d = frac_end; d > frac; d--)
			q = (d[-1] - '0') * unit + q / 10;
		part = q / 10 + (q % 10 >= 5);
	}
	if (whole > (INT64_MAX - part) / unit)
		return -1;
	*ns = whole * unit + part;
	return 0;
}

int64_t mt_duration_in(int64_t ns, int64_t unit_ns)
{
	return ns / unit_ns + (ns % unit_ns >= unit_ns - ns % unit_ns);
}

void mt_format_duration(int64_t ns, char out[32])
{
	if (ns < 0)
		snprintf(out, 32, "?");
	else if (ns < 1000000)
		snprintf(out, 32, "%lldµs", (long long)(ns / 1000));
	else if (ns < 1000000000)
		snprintf(out, 32, "%.1fms", (double)ns / 1e6);
	else if (ns < 60LL * 1000000000)
		snprintf(out, 32, "%.2fs", (double)ns / 1e9);
	else
		snprintf(out, 32, "%lldm%02llds", (long long)(ns / 60000000000LL),
			 (long long)(ns / 1000000000 % 60));
}

int mt_split_listen(const char *s, char *host, size_t hn, int *port)
{
	const char *digits = s, *colon;
	size_t hostlen = 0;
	long p = 0;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':' || close == s + 1)
			return -1;
		snprintf(host, hn, "%.*s", (int)(close - s - 1), s + 1);
		hostlen = (size_t)(close - s - 1);
		digits = close + 2;
	} else if ((colon = strrchr(s, ':')) != NULL) {
		snprintf(host, hn, "%.*s", (int)(colon - s), s);
		hostlen = (size_t)(colon - s);
		digits = colon + 1;
	}
	/* (A user name or password has no place in an address to listen on.) */
	if (memchr(s, '@', hostlen + (s[0] == '[' ? 2 : 0)))
		return -1;
	if (!hostlen)
		snprintf(host, hn, "127.0.0.1");
	else if (hostlen >= hn)
		return -1;
	if (!*digits)
		return -1;
	for (; *digits; digits++) {
		if (*digits < '0' || *digits > '9')
			return -1;
		p = p * 10 + (*digits - '0');
		if (p > 65535)
			return -1;
	}
	*port = (int)p;
	return 0;
}

int mt_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k':
	case 'K':
		mult = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ULL << 30;
		end++;
		break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (v && mult > UINT64_MAX / v))
		return -1;
	*out = v * mult;
	return 0;
}

int mt_wait_fd(int fd, short events)
{
	struct pollfd pfd = {fd, events, 0};

	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int mt_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if ((errno == EAGAIN || errno == EWOULDBLOCK) && mt_wait_fd(fd, POLLOUT) == 0)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int mt_open_private(const char *path, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, 0600);

	/* (The umask may only have taken bits away; a file left there may have any mode.) */
	if (fd >= 0 && fchmod(fd, 0600) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

void mt_shell_quote(struct mt_buf *b, const char *s)
{
	const char *safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789@%_-+=:,./";

	if (*s && strspn(s, safe) == strlen(s)) {
		mt_buf_puts(b, s);
		return;
	}
	mt_buf_putc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			mt_buf_puts(b, "'\\''");
		else
			mt_buf_putc(b, *s);
	}
	mt_buf_putc(b, '\'');
}

/* Read a small file (of /proc) into buf, NUL-terminated; its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, buf, n - 1);
	close(fd);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	return got;
}

int mt_process_identity(int64_t pid, char *out, size_t n)
{
	char path[64], boot[64], stat[1024], *p;
	unsigned long long start = 0;

	if (pid <= 0 || read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) < 0)
		return -1;
	boot[strcspn(boot, "\n")] = '\0';
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	if (read_small(path, stat, sizeof(stat)) < 0)
		return -1;
	/* Field 22 (starttime); the second one (the name) may hold spaces and ')'. */
	p = strrchr(stat, ')');
	if (!p)
		return -1;
	p++;
	for (int field = 3; field <= 22 && p; field++) {
		p += strspn(p, " ");
		if (field == 22)
			start = strtoull(p, NULL, 10);
		p = strchr(p, ' ');
	}
	if (!start)
		return -1;
	/* A zombie has not quite gone, but nothing records any more. */
	if (strstr(stat, ") Z ") || strstr(stat, ") X "))
		return -1;
	snprintf(out, n, "%s:%llu", boot, start);
	return 0;
}

FILE *mt_tmpfile(struct mt_err *err)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	FILE *f = NULL;
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	path = mt_asprintf("%s/mcptap-XXXXXX", dir);
	if ((fd = mkostemp(path, O_CLOEXEC)) < 0) {
		mt_err_set(err, "cannot make a temporary file in '%s': %s", dir, strerror(errno));
		free(path);
		return NULL;
	}
	unlink(path);
	if (!(f = fdopen(fd, "w+b"))) {
		mt_err_set(err, "cannot make a temporary file in '%s': %s", dir, strerror(errno));
		close(fd);
	}
	free(path);
	return f;
}
