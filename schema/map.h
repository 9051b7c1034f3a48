/*
 * map.h - a hash map from byte strings to int64 values, for the small
 * bookkeeping that pairs JSON-RPC requests with their answers. Open
 * addressing; keys are copied; memory grows with the entries it holds and
 * is bounded by the caller's limit.
 */
#ifndef MCPTAP_MAP_H
#define MCPTAP_MAP_H

#include <stddef.h>
#include <stdint.h>

struct mt_map_slot;

struct mt_map {
	struct mt_map_slot *slots; /* owned */
	size_t cap;                /* a power of two, or 0 */
	size_t len;                /* live entries */
	size_t used;               /* live entries and tombstones */
	size_t limit;              /* the most live entries (0: no limit) */
	size_t key_bytes;          /* bytes of the keys kept outside the slots */
};

/* An empty map holding at most limit entries (0: no limit). */
void mt_map_init(struct mt_map *m, size_t limit);
/* Free what the map holds; it may be initialized again. */
void mt_map_release(struct mt_map *m);

/*
 * Set key to value (replacing an existing value). Returns 0, or -1 when the
 * key is new and the map already holds its limit (nothing is stored).
 */
int mt_map_put(struct mt_map *m, const void *key, size_t n, int64_t value);
/* Look key up: 1 and *value when found, else 0. */
int mt_map_get(const struct mt_map *m, const void *key, size_t n, int64_t *value);
/* Look key up and remove it: 1 and *value when found, else 0. */
int mt_map_take(struct mt_map *m, const void *key, size_t n, int64_t *value);
/*
 * The bytes the map holds now (its slots and the keys kept apart from
 * them), as allocated: what an owner counts against a budget.
 */
size_t mt_map_bytes(const struct mt_map *m);

#endif
