/*
 * map.c - the byte-string to int64 hash map (see map.h): linear probing,
 * FNV-1a hashes, tombstones for removed keys, rehashed at 3/4 full.
 */
#include "schema/map.h"

#include <stdlib.h>
#include <string.h>

#include "schema/util.h"

#define INLINE_KEY 20

/* 48 bytes: the low 32 bits of the hash are enough to place and compare by. */
struct mt_map_slot {
	char *key; /* NULL: empty; TOMBSTONE: removed; else inl or owned memory */
	size_t n;
	int64_t value;
	uint32_t hash;
	char inl[INLINE_KEY]; /* short keys live here, without an allocation */
};

static char tombstone;
#define TOMBSTONE (&tombstone)

static void free_key(struct mt_map *m, struct mt_map_slot *s)
{
	if (s->key && s->key != TOMBSTONE && s->key != s->inl) {
		m->key_bytes -= s->n + MT_MEM_CHUNK;
		free(s->key);
	}
}

void mt_map_init(struct mt_map *m, size_t limit)
{
	memset(m, 0, sizeof(*m));
	m->limit = limit;
}

void mt_map_release(struct mt_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free_key(m, &m->slots[i]);
	free(m->slots);
	mt_map_init(m, m->limit);
}

/* The slot holding key, or NULL. */
static struct mt_map_slot *find(const struct mt_map *m, const void *key, size_t n, uint64_t h)
{
	if (!m->cap)
		return NULL;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct mt_map_slot *s = &m->slots[i];
		if (!s->key)
			return NULL;
		if (s->key != TOMBSTONE && s->hash == (uint32_t)h && s->n == n && memcmp(s->key, key, n) == 0)
			return s;
	}
}

static void grow(struct mt_map *m)
{
	struct mt_map_slot *old = m->slots;
	size_t oldcap = m->cap;
	size_t cap = oldcap ? oldcap : 16;

	while (m->len * 2 >= cap)
		cap *= 2;
	m->slots = mt_calloc(cap, sizeof(*m->slots));
	m->cap = cap;
	m->used = m->len;
	for (size_t i = 0; i < oldcap; i++) {
		struct mt_map_slot *s = &old[i];
		if (!s->key || s->key == TOMBSTONE)
			continue;
		size_t j = s->hash & (cap - 1);
		while (m->slots[j].key)
			j = (j + 1) & (cap - 1);
		m->slots[j] = *s;
		if (s->key == s->inl)
			m->slots[j].key = m->slots[j].inl;
	}
	free(old);
}

int mt_map_put(struct mt_map *m, const void *key, size_t n, int64_t value)
{
	uint64_t h = mt_fnv1a(key, n);
	struct mt_map_slot *s = find(m, key, n, h);

	if (s) {
		s->value = value;
		return 0;
	}
	if (m->limit && m->len >= m->limit)
		return -1;
	if ((m->used + 1) * 4 >= m->cap * 3)
		grow(m);
	size_t i = h & (m->cap - 1);
	while (m->slots[i].key && m->slots[i].key != TOMBSTONE)
		i = (i + 1) & (m->cap - 1);
	if (!m->slots[i].key)
		m->used++;
	s = &m->slots[i];
	s->key = n <= INLINE_KEY ? s->inl : mt_malloc(n);
	if (n > INLINE_KEY)
		m->key_bytes += n + MT_MEM_CHUNK;
	if (n)
		memcpy(s->key, key, n);
	s->n = n;
	s->hash = (uint32_t)h;
	s->value = value;
	m->len++;
	return 0;
}

int mt_map_get(const struct mt_map *m, const void *key, size_t n, int64_t *value)
{
	struct mt_map_slot *s = find(m, key, n, mt_fnv1a(key, n));

	if (!s)
		return 0;
	*value = s->value;
	return 1;
}

int mt_map_take(struct mt_map *m, const void *key, size_t n, int64_t *value)
{
	struct mt_map_slot *s = find(m, key, n, mt_fnv1a(key, n));

	if (!s)
		return 0;
	*value = s->value;
	free_key(m, s);
	s->key = TOMBSTONE;
	m->len--;
	return 1;
}

size_t mt_map_bytes(const struct mt_map *m)
{
	return (m->cap ? m->cap * sizeof(struct mt_map_slot) + MT_MEM_CHUNK : 0) + m->key_bytes;
}
