/*
 * cmd-export.c - `mcptap export`: a capture's sessions in another format
 * (analyze/export/), for the tools people already use. Streams: one session
 * and one item at a time, whatever the capture's size. Redacts as the tap
 * does unless --keep-secrets. Written to -o FILE through a temporary file
 * renamed at the end, so that a failed export leaves no half file behind.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/exportside.h"
#include "cli.h"
#include "schema/filter.h"

static int run_export(int argc, char **argv);

const struct cmd_entry cmd_export = {
	.name = "export",
	.summary = "write captured sessions as JSON Lines, HAR, OpenTelemetry traces or pcapng",
	.usage = "mcptap export -r FILE [-s LIST] [-Y EXPR] [-T jsonl|har|otlp|pcapng] "
		 "[--spans client|server|both] [--notifications] [--otlp-content] [-o FILE] "
		 "[--redact-key NAME] [--redact-path PATH] [--redact-value REGEX] [--keep-secrets]",
	.options = "  -r, --read FILE       the capture file ($MCPTAP_FILE)\n"
		   "  -s, --session LIST    the sessions: ids, ranges A-B, all, comma-separated\n"
		   "                        (default: every session)\n"
		   "  -Y, --filter EXPR     only the messages EXPR passes (FILTERS in mcptap.1)\n"
		   "  -T, --format FORMAT   jsonl (default): one JSON object per line, as\n"
		   "                        show -T json prints them; har: one HAR 1.2\n"
		   "                        document, an entry per HTTP exchange (stdio: per\n"
		   "                        request with its answer, per notification), for\n"
		   "                        HAR viewers; otlp: OpenTelemetry traces, a span\n"
		   "                        per request; pcapng: packets for Wireshark and\n"
		   "                        tshark (export in mcptap.1)\n"
		   "      --spans client|server|both\n"
		   "                        otlp: the requester's CLIENT spans (default), the\n"
		   "                        receiver's SERVER spans, or both\n"
		   "      --notifications   otlp: a span per notification too\n"
		   "      --otlp-content    otlp: tools' arguments and results in their spans\n"
		   "  -o, --output FILE     write FILE (replaced whole at the end); default: stdout\n"
		   "      --redact-key NAME, --redact-path PATH, --redact-value REGEX\n"
		   "                        more to redact, as for record\n"
		   "      --keep-secrets    write what the file holds as it is (no redaction)\n"
		   "  -h, --help            this text\n",
	.run = run_export,
};

static const struct ex_format *const formats[] = {&ex_jsonl, &ex_har, &ex_otlp, &ex_pcapng};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

/* The long options without a letter. */
enum { OPT_SPANS = 0x100, OPT_NOTIFICATIONS, OPT_OTLP_CONTENT };

/* A signal while writing -o FILE: stop, and take the temporary file away. */
static volatile sig_atomic_t export_stop;

static void on_stop(int sig)
{
	(void)sig;
	export_stop = 1;
}

static int each(const struct store_item *it, void *ctx)
{
	struct ex_sink *x = ctx;

	if (export_stop) {
		mt_err_set(&x->err, "stopped by a signal");
		return 1;
	}
	return x->format->item(x, ex_redact_item(x, it)) ? 1 : 0;
}

/* What a format's failure was, said. */
static void say_failed(struct ex_sink *x)
{
	if (ferror(x->out))
		mt_error("cannot write '%s': %s", x->out_name, x->err.msg);
	else
		mt_error("cannot export '%s' as %s: %s", x->path, x->format->name, x->err.msg);
}

int ex_session(struct ex_sink *x, int64_t id)
{
	const struct ex_format *f = x->format;
	struct mt_err err = {"", 0};
	int rc;

	if (export_stop) {
		mt_err_set(&x->err, "stopped by a signal");
		say_failed(x);
		return -1;
	}
	if (store_session_get(x->st, id, &x->row, &err)) {
		mt_error("cannot read '%s': %s", x->path, err.msg);
		return -1;
	}
	x->session = &x->row;
	x->pem = 0;
	rc = f->session ? f->session(x) : 0;
	if (!rc && f->item) {
		rc = store_each_item_ex(x->st, id, f->flags, each, x, &err);
		if (rc < 0) {
			mt_error("cannot read '%s': %s", x->path, err.msg);
			x->session = NULL;
			store_session_row_release(&x->row);
			return -1;
		}
	}
	if (!rc && f->session_end)
		rc = f->session_end(x);
	x->session = NULL;
	store_session_row_release(&x->row);
	if (rc)
		say_failed(x);
	return rc ? -1 : 0;
}

int ex_begin(struct ex_sink *x)
{
	if (x->format->begin && x->format->begin(x)) {
		say_failed(x);
		return -1;
	}
	return 0;
}

int ex_end(struct ex_sink *x)
{
	if (x->format->end && x->format->end(x)) {
		say_failed(x);
		return -1;
	}
	return 0;
}

/* The sessions, one after the other, to x->out. 0, or -1 (said). */
struct all {
	const int64_t *ids;
	size_t n;
};

static int export_all(struct ex_sink *x, void *ctx)
{
	const struct all *a = ctx;

	if (ex_begin(x))
		return -1;
	for (size_t k = 0; k < a->n; k++)
		if (ex_session(x, a->ids[k]))
			return -1;
	return ex_end(x);
}

/* A temporary file beside out, for ex_output; NULL (said) when it cannot be made. */
static FILE *open_beside(const char *out, char **tmp)
{
	size_t n = strlen(out);
	char *t = mt_malloc(n + 16);
	int fd;
	FILE *f;

	snprintf(t, n + 16, "%s.tmp-XXXXXX", out);
	if ((fd = mkstemp(t)) < 0) {
		mt_error("cannot write '%s': %s", out, strerror(errno));
		free(t);
		return NULL;
	}
	/* (mkstemp makes it 0600: what a capture holds stays as private.) */
	if (!(f = fdopen(fd, "wb"))) {
		mt_error("cannot write '%s': %s", out, strerror(errno));
		close(fd);
		unlink(t);
		free(t);
		return NULL;
	}
	*tmp = t;
	return f;
}

int ex_output(struct ex_sink *x, const struct cmd_entry *cmd, const char *out,
	      int (*body)(struct ex_sink *x, void *ctx), void *ctx)
{
	char *tmp = NULL;
	FILE *direct = NULL;
	struct stat sb;
	int rc = EXIT_ERROR;

	x->out = stdout;
	x->out_name = out && strcmp(out, "-") ? out : "standard output";
	if (out && strcmp(out, "-") && stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
		struct stat cap;
		if (stat(x->path, &cap) == 0 && cap.st_dev == sb.st_dev && cap.st_ino == sb.st_ino) {
			rc = cli_usage_error(cmd, "-o '%s' is the capture file itself", out);
			goto out;
		}
	}
	if (out && strcmp(out, "-") && stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		/* A device or a pipe (/dev/null, a FIFO): written as it is, never replaced. */
		if (!(x->out = direct = fopen(out, "wb"))) {
			mt_error("cannot write '%s': %s", out, strerror(errno));
			goto out;
		}
	} else if (out && strcmp(out, "-")) {
		/* (Caught before the temporary file is made: none is ever left behind.) */
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		if (!(x->out = open_beside(out, &tmp)))
			goto out;
	}

	if (body(x, ctx) == 0) {
		int e = fflush(x->out) ? errno : ferror(x->out) ? EIO : 0;
		if (!e && tmp && fsync(fileno(x->out)))
			e = errno;
		if ((tmp || direct) && fclose(x->out) && !e)
			e = errno;
		if (tmp || direct)
			x->out = direct = NULL;
		if (e)
			mt_error("cannot write '%s': %s", x->out_name, strerror(e));
		else if (tmp && rename(tmp, out))
			mt_error("cannot write '%s': %s", out, strerror(errno));
		else
			rc = EXIT_OK;
	}
out:
	if (direct)
		fclose(direct);
	if (tmp) {
		if (x->out && x->out != stdout)
			fclose(x->out);
		if (rc != EXIT_OK)
			unlink(tmp);
		free(tmp);
	}
	x->out = NULL;
	return rc;
}

int ex_run(const struct cmd_entry *cmd, const struct ex_format *f, struct ex_args *a)
{
	struct ex_sink x;
	struct mt_filter *filter = NULL;
	struct mt_redact *redact = NULL;
	int64_t *ids = NULL;
	size_t nids = 0;
	int rc = EXIT_ERROR, bad = 0;
	const char *path;

	memset(&x, 0, sizeof(x));
	if (f->binary && (!a->rd.out || !strcmp(a->rd.out, "-")) && isatty(STDOUT_FILENO))
		return cli_usage_error(cmd,
				       "will not write %s to a terminal: give -o FILE, "
				       "or redirect standard output",
				       f->name);
	if (cli_read_check(cmd, &a->rd))
		return EXIT_ERROR;
	path = a->rd.path;
	if (a->rd.expr && !(filter = cli_filter(cmd, a->rd.expr)))
		return EXIT_ERROR;
	if (!a->rd.keep && !(redact = cli_redactor(cmd, a->rd.kinds, a->rd.rules, a->rd.nrules, &bad)))
		goto out;
	if (cli_open_capture(path, &x.st) || cli_pick_sessions(x.st, path, a->rd.sid, CLI_ALL, &ids, &nids))
		goto out;
	x.format = f;
	store_set_filter(x.st, filter, f->filter);
	x.path = path;
	x.redact = redact;
	x.filter = filter;
	x.filtered = filter != NULL;
	x.o = &a->opts;
	{
		struct all all = {ids, nids};
		rc = ex_output(&x, cmd, a->rd.out, export_all, &all);
	}
out:
	if (x.format && x.format->release)
		x.format->release(&x);
	ex_sink_release(&x);
	free(ids);
	mt_filter_free(filter);
	mt_redact_free(redact);
	store_close(x.st);
	return rc;
}

static int run_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"read", required_argument, NULL, 'r'},
		{"session", required_argument, NULL, 's'},
		{"filter", required_argument, NULL, 'Y'},
		{"format", required_argument, NULL, 'T'},
		{"output", required_argument, NULL, 'o'},
		CLI_REDACT_LONGOPTS,
		{"spans", required_argument, NULL, OPT_SPANS},
		{"notifications", no_argument, NULL, OPT_NOTIFICATIONS},
		{"otlp-content", no_argument, NULL, OPT_OTLP_CONTENT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *otlp_opt = NULL; /* an option of -T otlp given */
	const struct ex_format *f = NULL;
	struct ex_args a;
	int c, r;

	memset(&a, 0, sizeof(a));
	a.rd.format = "jsonl";
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:s:Y:T:o:h", longopts, NULL)) != -1) {
		if ((r = cli_read_option(&cmd_export, &a.rd, c, optarg)) == 1)
			continue;
		if (r)
			return r;
		switch (c) {
		case OPT_SPANS:
			otlp_opt = "--spans";
			if (!strcmp(optarg, "client"))
				a.opts.spans = EX_SPANS_CLIENT;
			else if (!strcmp(optarg, "server"))
				a.opts.spans = EX_SPANS_SERVER;
			else if (!strcmp(optarg, "both"))
				a.opts.spans = EX_SPANS_CLIENT | EX_SPANS_SERVER;
			else
				return cli_usage_error(&cmd_export,
						       "bad --spans '%s' (client, server or both)", optarg);
			break;
		case OPT_NOTIFICATIONS:
			otlp_opt = "--notifications";
			a.opts.notifications = 1;
			break;
		case OPT_OTLP_CONTENT:
			otlp_opt = "--otlp-content";
			a.opts.content = 1;
			break;
		case 'h': cli_help(&cmd_export, stdout); return EXIT_OK;
		default: return cli_bad_option(&cmd_export, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cmd_export, "unexpected argument '%s'", argv[optind]);
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(a.rd.format, formats[i]->name))
			f = formats[i];
	if (!f)
		return cli_usage_error(&cmd_export, "unknown format '%s' (jsonl, har, otlp, pcapng)",
				       a.rd.format);
	if (otlp_opt && f != &ex_otlp)
		return cli_usage_error(&cmd_export, "%s is for -T otlp", otlp_opt);
	return ex_run(&cmd_export, f, &a);
}
