/*
 * cli.c - helpers shared by the command files (see cli.h).
 */
#include "cli.h"
#include "schema/filter.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

void cli_help(const struct cmd_entry *e, FILE *f)
{
	const char *u = e->usage;

	fprintf(f, "usage: ");
	while (*u) {
		const char *nl = strchr(u, '\n');
		size_t n = nl ? (size_t)(nl - u) : strlen(u);
		fprintf(f, "%s%.*s\n", u == e->usage ? "" : "   or: ", (int)n, u);
		u += n + (nl ? 1 : 0);
	}
	fprintf(f, "\n%s\n", e->summary);
	if (e->options && *e->options)
		fprintf(f, "\n%s", e->options);
}

int cli_usage_error(const struct cmd_entry *e, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mt_error("%s", msg);
	/* One line on where the help is: the error stays readable above the prompt. */
	fprintf(stderr, "mcptap: see 'mcptap %s --help', or man mcptap\n", e->name);
	return EXIT_ERROR;
}

int cli_bad_option(const struct cmd_entry *e, int c, char **argv)
{
	if (c == ':')
		return cli_usage_error(e, "option '%s' needs a value", argv[optind - 1]);
	return cli_usage_error(e, "unknown option '%s'", argv[optind - 1]);
}

struct mt_filter *cli_filter(const struct cmd_entry *e, const char *arg)
{
	struct mt_filter_err fe;
	struct mt_filter *f = mt_filter_parse(arg, &fe);
	int col = 0;

	if (f)
		return f;
	/* The column on a terminal: UTF-8 continuation bytes take none. */
	for (int i = 0; i < fe.column - 1 && arg[i]; i++)
		col += ((unsigned char)arg[i] & 0xc0) != 0x80;
	mt_error("bad filter (-Y), at column %d: %s", col + 1, fe.msg);
	fputs("  ", stderr);
	for (const char *p = arg; *p; p++)
		fputc(*p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p, stderr);
	fprintf(stderr, "\n  %*s^\n", col, "");
	fprintf(stderr, "mcptap: see FILTERS in man mcptap, or 'mcptap %s --help'\n", e->name);
	return NULL;
}

int cli_duration_ms(const struct cmd_entry *e, const char *opt, const char *arg, int64_t hi,
		    const char *range, int *ms)
{
	int64_t ns;

	if (mt_parse_duration(arg, MT_MS, &ns) || ns < MT_MS || ns > hi)
		return cli_usage_error(e, "bad --%s '%s' (a duration, %s: 500ms, 2s; a bare number is ms)",
				       opt, arg, range);
	*ms = (int)mt_duration_in(ns, MT_MS);
	return 0;
}

int cli_check_listen(const struct cmd_entry *e, const char *arg)
{
	char host[256];
	const char *at = strrchr(arg, '@');
	int port;

	if (at)
		return cli_usage_error(e,
				       "bad --listen '[redacted]@%s': an address to listen on "
				       "holds no user name or password",
				       at + 1);
	if (mt_split_listen(arg, host, sizeof(host), &port))
		return cli_usage_error(e, "bad --listen '%s': HOST:PORT, [V6]:PORT or PORT", arg);
	return 0;
}

int cli_check_upstream(const struct cmd_entry *e, const char *arg, const struct mt_redact *r,
		       struct mt_buf *shown)
{
	const char *auth, *end;

	const char *colon = strchr(arg, ':'), *host_end;

	mt_buf_reset(shown);
	if (!r || !mt_redact_url(r, arg, strlen(arg), shown))
		mt_buf_puts(shown, arg);
	/* A user name or password is looked for first, whatever the scheme: it
	 * is not printed, even in the message saying the scheme is wrong. */
	auth = colon ? colon + 1 : arg;
	while (*auth == '/')
		auth++;
	end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', (size_t)(end - auth)))
		return cli_usage_error(e, "--upstream URL: a user name or password in it "
					  "(user:password@) is neither sent nor stored; send the "
					  "credential with --upstream-header Authorization=env:VAR");
	if (strncasecmp(arg, "http://", 7) && strncasecmp(arg, "https://", 8))
		return cli_usage_error(e, "bad --upstream '%s': an http:// or https:// URL", shown->data);
	/* The host: up to a port's colon (a [V6] literal's own colons aside). */
	host_end = *auth == '[' ? memchr(auth, ']', (size_t)(end - auth)) : NULL;
	if (!host_end)
		host_end = memchr(auth, ':', (size_t)(end - auth));
	if (!host_end)
		host_end = end;
	if (host_end == auth)
		return cli_usage_error(e, "bad --upstream '%s': no host", shown->data);
	return 0;
}

struct mt_redact *cli_redactor(const struct cmd_entry *e, const char *kinds, const char **rules, size_t n,
			       int *bad)
{
	struct mt_err err = {"", 0};
	unsigned char key[16];
	struct mt_redact *r;

	*bad = 0;
	if (mt_redact_load_key(key, &err))
		mt_warn("redaction key: %s; markers of equal secrets match within this run only", err.msg);
	r = mt_redact_new(key);
	for (size_t i = 0; i < n; i++) {
		int rc = kinds[i] == 'K'   ? mt_redact_add_key(r, rules[i])
			 : kinds[i] == 'P' ? mt_redact_add_path(r, rules[i], &err)
					   : mt_redact_add_value(r, rules[i], &err);
		if (rc) {
			cli_usage_error(e, "%s", err.msg);
			mt_redact_free(r);
			*bad = 1;
			return NULL;
		}
	}
	return r;
}

const char *cli_capture_path(const char *arg)
{
	const char *env = getenv("MCPTAP_FILE");

	if (arg)
		return arg;
	return env && *env ? env : NULL;
}

int cli_read_option(const struct cmd_entry *e, struct cli_read *o, int c, const char *arg)
{
	switch (c) {
	case 'r': o->path = arg; return 1;
	case 's': o->sid = arg; return 1;
	case 'Y': o->expr = arg; return 1;
	case 'T': o->format = arg; return 1;
	case 'o': o->out = arg; return 1;
	case CLI_OPT_KEEP_SECRETS: o->keep = 1; return 1;
	case CLI_OPT_REDACT_KEY:
	case CLI_OPT_REDACT_PATH:
	case CLI_OPT_REDACT_VALUE:
		if (o->nrules == CLI_MAX_RULES)
			return cli_usage_error(e, "more than %d --redact-* rules", CLI_MAX_RULES);
		o->kinds[o->nrules] = c == CLI_OPT_REDACT_KEY ? 'K' : c == CLI_OPT_REDACT_PATH ? 'P' : 'V';
		o->rules[o->nrules++] = arg;
		return 1;
	default: return 0;
	}
}

int cli_read_check(const struct cmd_entry *e, struct cli_read *o)
{
	const char *bad;

	if (o->keep && o->nrules)
		return cli_usage_error(e, "--keep-secrets and --redact-* contradict each other");
	if (o->sid && (bad = cli_session_list_problem(o->sid)))
		return cli_usage_error(e, "bad session list '%s': %s", o->sid, bad);
	if (!(o->path = cli_capture_path(o->path)))
		return cli_usage_error(e, "no capture file: give -r FILE or set MCPTAP_FILE");
	if (o->out && !*o->out)
		return cli_usage_error(e, "-o needs a file name");
	return 0;
}

/* What a file is when it is a packet capture (by its first bytes), else NULL. */
static const char *packet_capture(const char *path)
{
	unsigned char b[4];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(b, 1, sizeof(b), f) : 0;
	uint32_t le;

	if (f)
		fclose(f);
	if (n < sizeof(b))
		return NULL;
	le = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	if (le == 0xa1b2c3d4 || le == 0xd4c3b2a1 || le == 0xa1b23c4d || le == 0x4d3cb2a1)
		return "a pcap packet capture";
	if (le == 0x0a0d0d0a)
		return "a pcapng packet capture";
	if (b[0] == 0x1f && b[1] == 0x8b)
		return "gzip-compressed (a packet capture?)";
	return NULL;
}

int cli_open_capture(const char *path, struct store **st)
{
	struct mt_err err = {"", 0};
	const char *what;

	if (store_open(path, STORE_READ, st, &err)) {
		if ((what = packet_capture(path))) {
			struct mt_buf q = MT_BUF_INIT;
			mt_shell_quote(&q, path);
			mt_error("cannot open '%s': it is %s, not an mcptap capture file; "
				 "store its MCP sessions first: mcptap import -w FILE %s",
				 path, what, q.data);
			mt_buf_release(&q);
			return -1;
		}
		return mt_error("cannot open '%s': %s", path, err.msg);
	}
	if (store_read_without_wal(*st))
		mt_warn("'%s' is read without its -wal journal (it cannot be used from here): "
			"what was written last may be missing",
			path);
	return 0;
}

int cli_pick_session(struct store *st, const char *path, const char *arg, int64_t *id)
{
	struct mt_err err = {"", 0};
	struct store_session_row row;

	if (!arg) {
		if (store_last_session(st, id, &err))
			return mt_error("'%s': %s", path, err.msg);
		return 0;
	}
	if (mt_parse_int64(arg, id) || *id <= 0)
		return mt_error("bad session id '%s'", arg);
	if (store_session_get(st, *id, &row, &err))
		return mt_error("'%s': %s", path, err.msg);
	store_session_row_release(&row);
	return 0;
}

/* One item of an -s list, from p to end: [lo, hi] (all: 1, INT64_MAX). -1 when malformed. */
static int session_item(const char *p, const char *end, int64_t *lo, int64_t *hi, int *range)
{
	char buf[48];
	const char *dash;
	size_t n = (size_t)(end - p);

	*range = 0;
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (!strcmp(buf, "all")) {
		*lo = 1;
		*hi = INT64_MAX;
		*range = 1;
		return 0;
	}
	dash = strchr(buf, '-');
	if (!dash)
		return mt_parse_int64(buf, lo) || *lo <= 0 ? -1 : (*hi = *lo, 0);
	buf[dash - buf] = '\0';
	*range = 1;
	if (mt_parse_int64(buf, lo) || *lo <= 0 || mt_parse_int64(dash + 1, hi) || *hi < *lo)
		return -1;
	return 0;
}

const char *cli_session_list_problem(const char *arg)
{
	const char *p = arg;

	if (!*p)
		return "an empty session list";
	for (;;) {
		const char *e = strchr(p, ',');
		int64_t lo, hi;
		int range;
		if (!e)
			e = p + strlen(p);
		if (session_item(p, e, &lo, &hi, &range))
			return "not an id, a range A-B, all, or a comma-separated list of them";
		if (!*e)
			return NULL;
		p = e + 1;
	}
}

int cli_pick_sessions(struct store *st, const char *path, const char *arg, enum cli_default dflt,
		      int64_t **ids, size_t *n)
{
	struct mt_err err = {"", 0};
	struct store_session_row *rows = NULL;
	size_t nrows = 0, k = 0;
	const char *p, *bad;
	int64_t *out;
	int rc = -1;

	*ids = NULL;
	*n = 0;
	if (!arg && dflt == CLI_NEWEST) {
		*ids = mt_malloc(sizeof(**ids));
		if (cli_pick_session(st, path, NULL, *ids)) {
			free(*ids);
			*ids = NULL;
			return -1;
		}
		*n = 1;
		return 0;
	}
	if (arg && (bad = cli_session_list_problem(arg)))
		return mt_error("bad session list '%s': %s", arg, bad);
	if (store_sessions(st, &rows, &nrows, &err))
		return mt_error("cannot read '%s': %s", path, err.msg);
	if (!nrows) {
		mt_error("'%s' holds no session", path);
		goto out;
	}
	/* (The file's sessions come in id order: a mark per row, then the marked ones.) */
	out = mt_calloc(nrows, sizeof(*out));
	p = arg ? arg : "all";
	for (;;) {
		const char *e = strchr(p, ',');
		int64_t lo, hi;
		int range, found = 0;
		if (!e)
			e = p + strlen(p);
		session_item(p, e, &lo, &hi, &range);
		for (size_t i = 0; i < nrows; i++) {
			if (rows[i].id < lo || rows[i].id > hi)
				continue;
			found = 1;
			out[i] = 1;
		}
		if (!found) {
			if (range)
				mt_error("'%s': no session in %.*s", path, (int)(e - p), p);
			else
				mt_error("'%s': no session %lld", path, (long long)lo);
			free(out);
			goto out;
		}
		if (!*e)
			break;
		p = e + 1;
	}
	for (size_t i = 0; i < nrows; i++)
		if (out[i])
			out[k++] = rows[i].id; /* (k <= i: the marks already read) */
	*ids = out;
	*n = k;
	rc = 0;
out:
	store_sessions_free(rows, nrows);
	return rc;
}

int cli_use_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");

	if (nc && *nc)
		return 0;
	return isatty(fileno(f));
}

int cli_term_width(FILE *f)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");
	int64_t cols;

	if (!isatty(fileno(f)))
		return 0;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (env && !mt_parse_int64(env, &cols) && cols > 0 && cols <= 100000)
		return (int)cols;
	return 80;
}

char *cli_env_header(const struct cmd_entry *e, const char *opt, const char *arg)
{
	const char *eq = strchr(arg, '=');
	const char *val;
	int nl;

	if (!eq || eq == arg || strncmp(eq + 1, "env:", 4) || !eq[5] ||
	    strcspn(arg, ": \t\r\n") < (size_t)(eq - arg)) {
		cli_usage_error(e,
				"bad %s '%s' (NAME=env:VAR: the value is taken from $VAR, never "
				"from the command line)",
				opt, arg);
		return NULL;
	}
	nl = (int)(eq - arg);
	if (!(val = getenv(eq + 5))) {
		cli_usage_error(e, "%s %.*s: $%s is not set", opt, nl, arg, eq + 5);
		return NULL;
	}
	if (strpbrk(val, "\r\n")) {
		cli_usage_error(e, "%s %.*s: $%s holds a line break", opt, nl, arg, eq + 5);
		return NULL;
	}
	return mt_asprintf("%.*s: %s", nl, arg, val);
}
