/*
 * httpsess.c - which capture session an HTTP request belongs to (see httpsess.h).
 */
#include <string.h>

#include <jansson.h>

#include "tap/http/httpsess.h"

void hs_init(struct hs_tracker *t)
{
	memset(t, 0, sizeof(*t));
	mt_map_init(&t->by_id, HS_MAX_KEYS);
	mt_map_init(&t->by_endpoint, HS_MAX_KEYS);
	mt_map_init(&t->by_conn, HS_MAX_KEYS);
	mt_map_init(&t->by_client, HS_MAX_KEYS);
	t->next = 1;
}

void hs_release(struct hs_tracker *t)
{
	mt_map_release(&t->by_id);
	mt_map_release(&t->by_endpoint);
	mt_map_release(&t->by_conn);
	mt_map_release(&t->by_client);
	mt_buf_release(&t->key);
}

static const char *key_str(struct hs_tracker *t, char tag, const char *s)
{
	mt_buf_reset(&t->key);
	mt_buf_putc(&t->key, tag);
	mt_buf_puts(&t->key, s);
	return t->key.data;
}

static const char *key_conn(struct hs_tracker *t, int64_t conn)
{
	mt_buf_reset(&t->key);
	mt_buf_printf(&t->key, "c%lld", (long long)conn);
	return t->key.data;
}

static int get(struct hs_tracker *t, struct mt_map *m, int64_t *v)
{
	return mt_map_get(m, t->key.data, t->key.len, v);
}

static void set(struct hs_tracker *t, struct mt_map *m, int64_t v)
{
	(void)mt_map_put(m, t->key.data, t->key.len, v); /* (full: that key is not tracked) */
}

const char *hs_uri_target(const char *uri)
{
	const char *p = uri, *slash;

	/* scheme ":" "//" authority path-abempty [ "?" query ] */
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '+' || *p == '-' || *p == '.')
		p++;
	if (p == uri || p[0] != ':' || p[1] != '/' || p[2] != '/')
		return uri;
	slash = strpbrk(p + 3, "/?#");
	return slash && *slash != '#' ? slash : "/";
}

int64_t hs_request(struct hs_tracker *t, const struct hs_request *r, int *created, enum hs_kind *kind)
{
	int64_t s = 0;
	int is_get = r->method && strcmp(r->method, "GET") == 0;

	*created = 0;
	*kind = HS_HTTP;
	if (r->session_id && *r->session_id) {
		key_str(t, 'i', r->session_id);
		if (!get(t, &t->by_id, &s)) {
			/* Joined mid-session (the tap started late), or an id the server will
			 * refuse: a session of its own, under that id. */
			s = t->next++;
			*created = 1;
			key_str(t, 'i', r->session_id);
			set(t, &t->by_id, s);
		}
		key_conn(t, r->conn);
		set(t, &t->by_conn, s);
		return s;
	}
	if (r->target) {
		key_str(t, 'e', r->target);
		if (get(t, &t->by_endpoint, &s))
			return s;
	}
	if (r->initialize) {
		s = t->next++;
		*created = 1;
		key_conn(t, r->conn);
		set(t, &t->by_conn, s);
		return s;
	}
	if (r->client && *r->client) {
		/* A stateless client: its session, on whatever connection. */
		key_str(t, 'k', r->client);
		if (!get(t, &t->by_client, &s)) {
			key_conn(t, r->conn);
			if (!get(t, &t->by_conn, &s)) {
				s = t->next++;
				*created = 1;
				set(t, &t->by_conn, s);
			}
			key_str(t, 'k', r->client);
			set(t, &t->by_client, s);
		}
		key_conn(t, r->conn);
		set(t, &t->by_conn, s);
		return s;
	}
	key_conn(t, r->conn);
	if (get(t, &t->by_conn, &s))
		return s;
	if (!is_get && t->idless) {
		/* A stateless client on a new connection: its newest session. */
		s = t->idless;
		key_conn(t, r->conn);
		set(t, &t->by_conn, s);
		return s;
	}
	/* A GET without an id on a fresh connection is a legacy SSE stream. */
	s = t->next++;
	*created = 1;
	*kind = is_get ? HS_SSE : HS_HTTP;
	key_conn(t, r->conn);
	set(t, &t->by_conn, s);
	if (!is_get)
		t->idless = s;
	return s;
}

int64_t hs_named(struct hs_tracker *t, int64_t sess, const char *session_id)
{
	int64_t s;

	if (!session_id || !*session_id)
		return sess;
	key_str(t, 'i', session_id);
	if (get(t, &t->by_id, &s))
		return s;
	set(t, &t->by_id, sess);
	if (t->idless == sess)
		t->idless = 0;
	return sess;
}

void hs_endpoint(struct hs_tracker *t, int64_t sess, const char *target)
{
	key_str(t, 'e', hs_uri_target(target));
	set(t, &t->by_endpoint, sess);
	if (t->idless == sess)
		t->idless = 0;
}

void hs_idless(struct hs_tracker *t, int64_t sess)
{
	t->idless = sess;
}

void hs_conn_closed(struct hs_tracker *t, int64_t conn)
{
	int64_t s;

	key_conn(t, conn);
	(void)mt_map_take(&t->by_conn, t->key.data, t->key.len, &s);
}

void hs_end(struct hs_tracker *t, int64_t sess)
{
	/* Its id and endpoint stay its own: a request that still names them (a
	 * client that missed the end) belongs with it, and a new initialize starts
	 * a new session anyway. */
	if (t->idless == sess)
		t->idless = 0;
}

/* "name version" of a clientInfo object; NULL without a name. */
static char *client_text(const json_t *ci)
{
	const char *name = json_string_value(json_object_get(ci, "name"));
	const char *version = json_string_value(json_object_get(ci, "version"));

	return name ? mt_asprintf("%s %s", name, version ? version : "") : NULL;
}

char *hs_meta_client(const char *p, size_t n)
{
	json_t *m = json_loadb(p, n, 0, NULL);
	char *out = client_text(json_object_get(json_object_get(json_object_get(m, "params"), "_meta"),
						"io.modelcontextprotocol/clientInfo"));

	json_decref(m);
	return out;
}

char *hs_client(const char *p, size_t n)
{
	json_t *m = json_loadb(p, n, 0, NULL);
	json_t *params = json_object_get(m, "params");
	json_t *ci = json_object_get(params, "clientInfo");
	char *out = client_text(
		ci ? ci
		   : json_object_get(json_object_get(params, "_meta"), "io.modelcontextprotocol/clientInfo"));

	json_decref(m);
	return out;
}
