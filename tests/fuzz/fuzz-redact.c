/*
 * fuzz-redact.c - the redaction module (schema/redact.h) on arbitrary bytes:
 * as a message (classified first, so JSON is walked as JSON), as text, as a
 * header value (under a fixed name, and under a name of its own), as a URL and
 * as an HTTP body, with a user path and regex rule. Whatever it is given,
 * redacting never crashes, a JSON message stays JSON of the same kind, and
 * redacting a JSON message or a body again changes nothing (markers are left
 * alone).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mt_redact *redactor(void)
{
	static struct mt_redact *r;
	static const unsigned char key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

	if (!r) {
		r = mt_redact_new(key);
		mt_redact_add_key(r, "ref");
		(void)mt_redact_add_path(r, "params.arguments.q", NULL);
		(void)mt_redact_add_path(r, "result.*[*].data", NULL);
		(void)mt_redact_add_value(r, "ACCT-[0-9]+", NULL);
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mt_redact *r = redactor();
	const char *p = (const char *)data;
	struct mt_buf out = MT_BUF_INIT, again = MT_BUF_INIT;
	struct mt_class c, c2;

	mt_classify(p, size, &c);
	if (mt_redact_message(r, p, size, c.kind, &out)) {
		mt_classify(out.data ? out.data : "", out.len, &c2);
		/* JSON stays JSON of the same kind. */
		if (c.kind != MT_INVALID && c2.kind != c.kind)
			abort();
		/* Once is enough: the markers are left as they are. */
		if (c.kind != MT_INVALID &&
		    mt_redact_message(r, out.data ? out.data : "", out.len, c2.kind, &again))
			abort();
	}
	(void)mt_redact_text(r, p, size, &out);
	if (size < 4096) {
		char *s = mt_strndup(p, size);
		(void)mt_redact_header(r, "Authorization", s, strlen(s), &out);
		(void)mt_redact_header(r, "Cookie", s, strlen(s), &out);
		(void)mt_redact_url(r, s, strlen(s), &out);
		/* A header of any name: the bytes before the first ':', the rest its value. */
		const char *colon = strchr(s, ':');
		if (colon) {
			char *name = mt_strndup(s, (size_t)(colon - s));
			(void)mt_redact_header(r, name, colon + 1, strlen(colon + 1), &out);
			free(name);
		}
		free(s);
	}
	/* A body: once is enough too, but where the markers made text into JSON
	 * (it is then walked as JSON, as a message would be). */
	if (mt_redact_body(r, p, size, &out)) {
		mt_classify(out.data ? out.data : "", out.len, &c2);
		if ((c.kind == MT_INVALID) == (c2.kind == MT_INVALID) &&
		    mt_redact_body(r, out.data ? out.data : "", out.len, &again))
			abort();
	}
	mt_buf_release(&out);
	mt_buf_release(&again);
	return 0;
}
