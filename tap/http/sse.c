/*
 * sse.c - the Server-Sent Events parser (see sse.h). Each byte is looked at
 * once: runs of line content are found with a scan for CR or LF and copied
 * only while the block is within the maximum.
 */
#include "tap/http/sse.h"

#include <limits.h>
#include <string.h>

/* Above this, a block's buffers are given back to the allocator when it ends. */
#define KEEP_CAPACITY (1u << 20)

static const char bom[3] = {'\xEF', '\xBB', '\xBF'};

void mt_sse_init(struct mt_sse *p, size_t max)
{
	memset(p, 0, sizeof(*p));
	p->max = max;
	p->retry = -1;
}

static void shrink(struct mt_buf *b)
{
	if (b->cap > KEEP_CAPACITY)
		mt_buf_release(b);
	else
		mt_buf_reset(b);
}

/* Forget the block's fields (a new block, or one gone over the maximum). */
static void drop_fields(struct mt_sse *p)
{
	shrink(&p->line);
	shrink(&p->data);
	shrink(&p->event);
	shrink(&p->id);
	p->has_id = p->has_data = p->has_event = 0;
	p->retry = -1;
	p->comments = p->ignored = 0;
}

/* k more stream bytes of the current block. */
static void count(struct mt_sse *p, size_t k)
{
	p->raw += k;
	if (p->max && p->raw > p->max && !p->oversized) {
		p->oversized = 1;
		drop_fields(p);
	}
}

/* Bytes of a line, up to but not including its end. */
static void take(struct mt_sse *p, const char *s, size_t k)
{
	if (!k)
		return;
	if (!p->in_block) {
		p->in_block = 1;
		p->start = p->offset;
		p->raw = 0;
	}
	p->offset += (int64_t)k;
	p->line_len += k;
	count(p, k);
	if (!p->oversized)
		mt_buf_append(&p->line, s, k);
}

static int is_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

/* One non-blank line of a block within the maximum: a comment or a field. */
static void field(struct mt_sse *p, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t name_len = colon ? (size_t)(colon - s) : n;
	const char *v = colon ? colon + 1 : s + n;
	size_t vn = colon ? n - name_len - 1 : 0;

	if (name_len == 0) {
		p->comments++;
		return;
	}
	if (vn && v[0] == ' ') {
		v++;
		vn--;
	}
#define IS(lit) (name_len == sizeof(lit) - 1 && !memcmp(s, lit, name_len))
	if (IS("data")) {
		mt_buf_append(&p->data, v, vn);
		mt_buf_putc(&p->data, '\n');
		p->has_data = 1;
	} else if (IS("event")) {
		mt_buf_reset(&p->event);
		mt_buf_append(&p->event, v, vn);
		p->has_event = 1;
	} else if (IS("id") && !memchr(v, '\0', vn)) {
		mt_buf_reset(&p->id);
		mt_buf_append(&p->id, v, vn);
		p->has_id = 1;
	} else if (IS("retry") && is_digits(v, vn)) {
		long long ms = 0;
		for (size_t i = 0; i < vn; i++) {
			int d = v[i] - '0';
			ms = ms > (LLONG_MAX - d) / 10 ? LLONG_MAX : ms * 10 + d;
		}
		p->retry = ms;
	} else {
		p->ignored++;
	}
#undef IS
}

/* "" for a buffer never appended to. */
static const char *str(const struct mt_buf *b)
{
	return b->data ? b->data : "";
}

static void dispatch(struct mt_sse *p, mt_sse_fn fn, void *ctx)
{
	struct mt_sse_event ev;

	if (p->has_id) {
		mt_buf_reset(&p->last_id);
		mt_buf_append(&p->last_id, str(&p->id), p->id.len);
	}
	/* Each data line added its "\n"; the last one is not the data's. */
	if (p->data.len)
		p->data.data[--p->data.len] = '\0';
	memset(&ev, 0, sizeof(ev));
	ev.data = str(&p->data);
	ev.data_len = p->data.len;
	ev.event = str(&p->event);
	ev.event_len = p->event.len;
	ev.id = str(&p->id);
	ev.id_len = p->id.len;
	ev.has_id = p->has_id;
	ev.has_data = p->has_data;
	ev.has_event = p->has_event;
	ev.retry = p->retry;
	ev.last_id = str(&p->last_id);
	ev.last_id_len = p->last_id.len;
	ev.comments = p->comments;
	ev.ignored = p->ignored;
	ev.oversized = p->oversized;
	ev.raw_len = p->raw;
	ev.offset = p->start;
	fn(ctx, &ev);

	drop_fields(p);
	p->in_block = p->oversized = p->ended = 0;
	p->raw = 0;
}

/* A line ends with the byte c (CR or LF), already known to be one. */
static void end_line(struct mt_sse *p, char c, mt_sse_fn fn, void *ctx)
{
	p->offset++;
	if (p->in_block)
		count(p, 1);
	p->cr = c == '\r';
	if (p->line_len == 0) {
		if (!p->in_block)
			return; /* a blank line between blocks */
		if (p->cr)
			p->ended = 1; /* an LF may follow: it is the block's */
		else
			dispatch(p, fn, ctx);
		return;
	}
	if (!p->oversized)
		field(p, str(&p->line), p->line.len);
	mt_buf_reset(&p->line);
	p->line_len = 0;
}

/* The BOM's matched bytes turned out not to be one: they are line content. */
static void bom_give_back(struct mt_sse *p)
{
	p->bom_done = 1;
	take(p, bom, p->bom);
}

void mt_sse_push(struct mt_sse *p, const char *buf, size_t n, mt_sse_fn fn, void *ctx)
{
	size_t i = 0;

	while (!p->bom_done && i < n) {
		if (buf[i] != bom[p->bom]) {
			bom_give_back(p);
			break;
		}
		i++;
		if (++p->bom == sizeof(bom)) {
			p->bom_done = 1;
			p->offset += sizeof(bom);
		}
	}
	while (i < n) {
		if (p->cr) {
			/* The byte after a CR line end: an LF is part of that end. */
			p->cr = 0;
			if (buf[i] == '\n') {
				p->offset++;
				if (p->in_block)
					count(p, 1);
				i++;
			}
			if (p->ended)
				dispatch(p, fn, ctx);
			continue;
		}
		size_t j = i;
		while (j < n && buf[j] != '\r' && buf[j] != '\n')
			j++;
		take(p, buf + i, j - i);
		if (j == n)
			break;
		end_line(p, buf[j], fn, ctx);
		i = j + 1;
	}
}

size_t mt_sse_close(struct mt_sse *p, mt_sse_fn fn, void *ctx)
{
	size_t left = 0;
	size_t max = p->max;

	if (!p->bom_done)
		bom_give_back(p);
	if (p->ended)
		dispatch(p, fn, ctx);
	else if (p->in_block)
		left = p->raw;
	drop_fields(p);
	shrink(&p->last_id);
	/* As after init, the memory kept. */
	struct mt_buf line = p->line, data = p->data, event = p->event, id = p->id, last_id = p->last_id;
	mt_sse_init(p, max);
	p->line = line;
	p->data = data;
	p->event = event;
	p->id = id;
	p->last_id = last_id;
	return left;
}

void mt_sse_release(struct mt_sse *p)
{
	mt_buf_release(&p->line);
	mt_buf_release(&p->data);
	mt_buf_release(&p->event);
	mt_buf_release(&p->id);
	mt_buf_release(&p->last_id);
	mt_sse_init(p, p->max);
}

size_t mt_sse_bytes(const struct mt_sse *p)
{
	return mt_buf_bytes(&p->line) + mt_buf_bytes(&p->data) + mt_buf_bytes(&p->event) +
	       mt_buf_bytes(&p->id) + mt_buf_bytes(&p->last_id);
}
