/*
 * fuzz-canon.c - canonical keys and structural diffs (analyze/replay/canon.h) on
 * arbitrary JSON: the input is split at its first NUL into two documents; the
 * key of each must be stable (computing it twice gives the same bytes), a
 * value differs from itself nowhere, and a diff never crashes, whatever the
 * ignore paths (taken from the input's tail when it has a second NUL).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/replay/canon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *nul = memchr(p, '\0', size);
	size_t na = nul ? (size_t)(nul - p) : size;
	json_t *a = json_loadb(p, na, JSON_DECODE_ANY, NULL), *b = NULL, *paths = json_array();
	const char *rest = nul ? nul + 1 : p + size;
	size_t nrest = (size_t)(p + size - rest);
	const char *nul2 = memchr(rest, '\0', nrest);
	char *ignore = NULL;
	const char *ig[1];
	struct canon_ignore set = {ig, 0};
	struct mt_buf k1 = MT_BUF_INIT, k2 = MT_BUF_INIT;

	if (nul2) {
		ignore = mt_strndup(nul2 + 1, (size_t)(p + size - nul2 - 1));
		ig[0] = ignore;
		set.n = 1;
		nrest = (size_t)(nul2 - rest);
	}
	b = json_loadb(rest, nrest, JSON_DECODE_ANY, NULL);
	canon_key("m", a, &set, &k1);
	canon_key("m", a, &set, &k2);
	if (k1.len != k2.len || memcmp(k1.data, k2.data, k1.len))
		abort();
	if (a && canon_diff(a, a, "params", &set, 4, paths) != 0)
		abort();
	(void)canon_diff(a, b, "result", &set, 4, paths);
	(void)canon_ignored(&set, "result.content[3].text");
	json_decref(a);
	json_decref(b);
	json_decref(paths);
	mt_buf_release(&k1);
	mt_buf_release(&k2);
	free(ignore);
	return 0;
}
