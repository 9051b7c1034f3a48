/*
 * fuzz-analyze.c - the rule engine on arbitrary sessions: the input is split
 * into lines; each line's first byte picks its direction (even: client to
 * server, odd: server to client; '!' a stderr line) and the rest is the
 * message. Every rule runs; nothing may crash, leak or trip a sanitizer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "schema/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_options o;
	struct an_engine *e;
	size_t i = 0;
	int64_t seq = 0;

	memset(&o, 0, sizeof(o));
	o.timeout_ns = 1000000;
	e = an_engine_new(1, &o);
	while (i < size) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t end = nl ? (size_t)(nl - data) + 1 : size;
		struct store_item it;

		memset(&it, 0, sizeof(it));
		it.seq = ++seq;
		it.t_ns = seq * 1000000;
		if (data[i] == '!') {
			it.type = STORE_ITEM_STDERR;
			it.dir = it.kind = "stderr";
		} else {
			it.type = STORE_ITEM_MESSAGE;
			it.dir = data[i] % 2 ? "s2c" : "c2s";
			it.kind = "request";
		}
		it.raw = data + i + 1;
		it.raw_len = end - i - 1;
		it.size = (int64_t)it.raw_len;
		an_engine_feed(e, &it);
		i = end;
	}
	an_engine_end(e);
	size_t n;
	(void)an_engine_findings(e, &n);
	an_engine_free(e);
	return 0;
}
