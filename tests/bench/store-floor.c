/*
 * store-floor.c - the storage floor for the benchmark: how many message rows
 * per second SQLite takes when a tight loop inserts them, already classified,
 * through the same store code, schema and batch size as `mcptap record`,
 * timed up to the closed file (the final checkpoint included), as the tap's
 * flood is timed up to its exit.
 *
 * usage: store-floor N FILE   (N rows; FILE is created fresh)
 * prints: floor rows=N secs=S rows_per_s=R
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/store.h"
#include "tap/writer.h"

int main(int argc, char **argv)
{
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":123456,\"method\":\"ping\"}\n";
	static const char resp[] = "{\"jsonrpc\":\"2.0\",\"id\":123456,\"result\":{}}\n";
	struct writer_opts wo;
	struct store *st = NULL;
	struct mt_err err = {"", 0};
	struct mt_class creq, cresp;
	struct store_session_new sn = {"stdio", 0, "store-floor", "/", 0, NULL, NULL};
	int64_t n, session, t0, t1;
	int rc = 1;

	if (argc != 3 || mt_parse_int64(argv[1], &n) || n <= 0) {
		fprintf(stderr, "usage: store-floor N FILE\n");
		return 2;
	}
	unlink(argv[2]);
	writer_opts_default(&wo);
	sn.started_wall = mt_wall_us();
	if (store_open(argv[2], STORE_WRITE, &st, &err) ||
	    store_session_create(st, &sn, &session, &err)) {
		fprintf(stderr, "store-floor: %s\n", err.msg);
		goto out;
	}
	/* Parsed once, outside the loop: the floor is the store alone. */
	mt_classify(req, sizeof(req) - 1, &creq);
	mt_classify(resp, sizeof(resp) - 1, &cresp);
	t0 = mt_mono_ns();
	for (int64_t i = 0; i < n; i++) {
		struct store_msg m = {session, i + 1, mt_mono_ns() - t0, mt_wall_us(),
				      i % 2 ? "s2c" : "c2s", "stdio", i % 2 ? &cresp : &creq,
				      i % 2 ? resp : req, i % 2 ? sizeof(resp) - 1 : sizeof(req) - 1, 0,
				      i % 2 ? i : 0 /* a response answers the request before it */, 0,
				      0, NULL, NULL, 0};
		if (i % (int64_t)wo.batch_rows == 0 && store_begin(st, &err))
			goto fail;
		if (store_add_message(st, &m, &err))
			goto fail;
		if ((i + 1) % (int64_t)wo.batch_rows == 0 && store_commit(st, &err))
			goto fail;
	}
	if (n % (int64_t)wo.batch_rows && store_commit(st, &err))
		goto fail;
	/* Closing checkpoints the log into the file, as the tap's exit does. */
	store_close(st);
	st = NULL;
	t1 = mt_mono_ns();
	printf("floor rows=%lld secs=%.3f rows_per_s=%.0f\n", (long long)n, (double)(t1 - t0) / 1e9,
	       (double)n / ((double)(t1 - t0) / 1e9));
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "store-floor: %s\n", err.msg);
out:
	store_close(st);
	return rc;
}
