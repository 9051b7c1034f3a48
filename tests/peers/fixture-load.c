/*
 * fixture-load.c - load a rule fixture into a capture file as one session, so
 * that `mcptap analyze` can be run on it.
 *
 * usage: fixture-load FIXTURE FILE
 *
 * A fixture is text, one line per item:
 *   > MESSAGE     a line the client sent (stored as written, plus a newline)
 *   < MESSAGE     a line the server sent
 *   ! TEXT        a line of the server's stderr
 *   @t +N         the next item comes N ms later than it would (each item is
 *                 1 ms after the last otherwise)
 *   @args ...     extra `mcptap analyze` options (read by the test, ignored here)
 *   @max-message N  lines over N bytes are a capture gap, as with record's
 *                 --max-message (before the first item: the file is read once,
 *                 and may be a pipe)
 *   # ...         a comment; blank lines are ignored
 * Messages go through the same classifier and store code as `mcptap record`,
 * and answers are paired with requests the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/store.h"
#include "tap/writer.h"

int main(int argc, char **argv)
{
	struct store *st = NULL;
	struct writer_opts wo;
	struct writer *w;
	struct store_session_new sn = {"stdio", 0, "fixture", "/", 0, NULL, NULL};
	struct mt_err err = {"", 0};
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int64_t session, lineno = 0;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: fixture-load FIXTURE FILE\n");
		return 2;
	}
	if (!(f = fopen(argv[1], "r"))) {
		perror(argv[1]);
		return 1;
	}
	sn.started_wall = mt_wall_us();
	sn.command = argv[1];
	if (store_open(argv[2], STORE_WRITE, &st, &err) ||
	    store_session_create(st, &sn, &session, &err)) {
		fprintf(stderr, "fixture-load: %s: %s\n", argv[2], err.msg);
		fclose(f);
		return 1;
	}
	writer_opts_default(&wo);
	wo.label = argv[2];
	/* (Started at the first item, so that @max-message before it applies; the
	 * fixture is read once: it may be a pipe.) */
	w = NULL;
	int64_t t_ns = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		if (!strncmp(line, "@t +", 4)) {
			t_ns += atoll(line + 4) * 1000000;
			continue;
		}
		if (!strncmp(line, "@max-message ", 13)) {
			if (w) {
				fprintf(stderr, "%s:%lld: @max-message after the first item\n", argv[1],
					(long long)lineno);
				return 2;
			}
			wo.max_message = strtoull(line + 13, NULL, 10);
			continue;
		}
		if (line[0] == '@')
			continue;
		if (n < 2 || (line[0] != '>' && line[0] != '<' && line[0] != '!') || line[1] != ' ') {
			fprintf(stderr, "%s:%lld: expected '> ', '< ', '! ', '@' or '#'\n", argv[1],
				(long long)lineno);
			return 2;
		}
		if (!w)
			w = writer_start(st, session, mt_mono_ns(), &wo);
		enum writer_stream s = line[0] == '>' ? WS_C2S : line[0] == '<' ? WS_S2C : WS_STDERR;
		line[n] = '\n';
		/* One item per chunk, 1 ms apart, plus what @t asked for. */
		t_ns += 1000000;
		writer_put_at(w, s, line + 2, (size_t)n - 1, t_ns, sn.started_wall + t_ns / 1000);
		/* One chunk per item: frames stay apart in time and order. */
		line[n] = '\0';
	}
	free(line);
	fclose(f);
	if (!w)
		w = writer_start(st, session, mt_mono_ns(), &wo);
	if (writer_finish(w, NULL, NULL)) {
		fprintf(stderr, "fixture-load: cannot store everything\n");
		return 1;
	}
	return 0;
}
