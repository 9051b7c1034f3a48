/*
 * report.c - the analyzer's report writers (see report.h).
 *
 * The formats that write at the end keep their findings in a spool: a private
 * temporary SQLite database (an empty file name: SQLite makes it on disk and
 * deletes it at close). It is no capture file and nothing outside this file
 * sees it; schema/store.c stays the only code that speaks SQL to capture
 * files. Its page cache is small and its sorts spill to disk, so reading the
 * findings back in another order (by rule for JUnit) or numbering them
 * (SARIF's occurrences) takes bounded memory. What a report keeps in memory
 * is per session (its revision and counts) and per rule, never per finding.
 */
#include "analyze/report.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "schema/redact.h"

/* A rule's findings over the run. */
struct rtally {
	size_t n, shown;
	int64_t session, seq; /* its first finding's */
};

/* One session of the report. */
struct rsess {
	int64_t session;
	enum an_version version;
	char *source;                /* owned: how the revision was chosen */
	char *negotiated;            /* owned: the server's protocolVersion, or NULL */
	size_t c[AN_SEVERITY_COUNT]; /* its findings by severity (every one) */
	size_t hidden;               /* of them, not reported (--max-per-rule) */
	int64_t first, last;         /* its spool rows (none when last < first) */
};

struct report {
	FILE *f; /* borrowed */
	struct report_opts o;
	const struct an_rule *const *rules; /* the rule table (borrowed) */
	size_t nrules;
	struct mt_map rule_index; /* rule id -> its index in rules */
	struct rtally *tally;     /* owned: by the rule's index */
	sqlite3 *db;              /* the spool; NULL for text */
	sqlite3_stmt *ins;        /* a finding into the spool */
	sqlite3_stmt *run;        /* a run of seqs into the spool (SARIF) */
	int64_t rows;             /* spool rows so far (their rowids are 1..rows) */
	struct rsess *s;          /* owned: the sessions so far */
	size_t ns, caps;
	const struct an_state *st; /* the current session's state (borrowed) */
	/* SARIF: where the current session's items are in its export. Consecutive
	 * seqs on consecutive lines form a run; a run starts where the seqs jump
	 * (messages the tap could not store) or repeat. */
	int64_t line, last_seq, run_seq, run_line;
	struct mt_buf b1, b2, b3; /* scratch */
	struct mt_err err;        /* the first failure */
	int failed;
};

static const char *const spool_sql =
	"PRAGMA journal_mode = OFF;"
	"PRAGMA synchronous = OFF;"
	"PRAGMA cache_size = -2048;"
	"PRAGMA temp_store = FILE;"
	/* One row per finding, rowid in the order they came. */
	"CREATE TABLE f (session INTEGER, rule INTEGER, sev INTEGER, seq INTEGER,"
	" dir INTEGER, method TEXT, id TEXT, related TEXT, text TEXT, key TEXT);"
	/* Items from seq on are on consecutive lines from line on. */
	"CREATE TABLE run (session INTEGER, seq INTEGER, line INTEGER,"
	" PRIMARY KEY (session, seq)) WITHOUT ROWID;";

void report_section(const struct an_rule *r, char *out, size_t n)
{
	const char *src = r->source ? r->source : "";
	const char *semi = strchr(src, ';');
	size_t len = semi ? (size_t)(semi - src) : strlen(src);

	snprintf(out, n, "%.*s", (int)len, src);
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Keep the first failure (what went wrong, and why); later calls that need
 * the spool do nothing. */
static void fail_why(struct report *r, const char *what, const char *why)
{
	if (r->failed)
		return;
	r->failed = 1;
	mt_err_set(&r->err, "%s: %s", what, why);
}

/* The same for a failure of the spool. */
static void fail(struct report *r, const char *what)
{
	fail_why(r, what, r->db ? sqlite3_errmsg(r->db) : "no database");
}

/* s as a JSON string; bytes that are not UTF-8 (a file name's) become U+FFFD. */
static json_t *jstr(const char *s)
{
	json_t *v = json_string(s ? s : "");

	if (!v) {
		struct mt_buf b = MT_BUF_INIT;
		mt_utf8_lossy(s, strlen(s), &b);
		v = json_string(b.data ? b.data : "");
		mt_buf_release(&b);
	}
	return v;
}

int report_new(FILE *f, const struct report_opts *o, struct report **out, struct mt_err *err)
{
	struct report *r = mt_calloc(1, sizeof(*r));
	int rc = -1;

	r->f = f;
	r->o = *o;
	r->rules = an_rules(&r->nrules);
	mt_map_init(&r->rule_index, 0);
	for (size_t i = 0; i < r->nrules; i++)
		mt_map_put(&r->rule_index, r->rules[i]->id, strlen(r->rules[i]->id), (int64_t)i);
	r->tally = mt_calloc(r->nrules ? r->nrules : 1, sizeof(*r->tally));
	if (o->format != REPORT_TEXT) {
		if (sqlite3_open_v2("", &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
			    SQLITE_OK ||
		    sqlite3_exec(r->db, spool_sql, NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_prepare_v2(r->db,
				       "INSERT INTO f (rowid, session, rule, sev, seq, dir, method, id,"
				       " related, text, key) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
				       -1, &r->ins, NULL) != SQLITE_OK ||
		    sqlite3_prepare_v2(r->db, "INSERT INTO run (session, seq, line) VALUES (?1,?2,?3)", -1,
				       &r->run, NULL) != SQLITE_OK ||
		    sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
			mt_err_set(err, "cannot make a temporary database for the report: %s",
				   r->db ? sqlite3_errmsg(r->db) : "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	if (rc) {
		report_free(r);
		r = NULL;
	}
	*out = r;
	return rc;
}

void report_free(struct report *r)
{
	if (!r)
		return;
	free(r->tally);
	sqlite3_finalize(r->ins);
	sqlite3_finalize(r->run);
	sqlite3_close(r->db);
	for (size_t i = 0; i < r->ns; i++) {
		free(r->s[i].source);
		free(r->s[i].negotiated);
	}
	free(r->s);
	mt_map_release(&r->rule_index);
	mt_buf_release(&r->b1);
	mt_buf_release(&r->b2);
	mt_buf_release(&r->b3);
	free(r);
}

static struct rsess *cur(struct report *r)
{
	return &r->s[r->ns - 1];
}

void report_session_begin(struct report *r, int64_t session, const struct an_state *st)
{
	struct rsess *s;

	if (r->ns == r->caps) {
		r->caps = r->caps ? r->caps * 2 : 8;
		r->s = mt_realloc(r->s, r->caps * sizeof(*r->s));
	}
	s = &r->s[r->ns++];
	memset(s, 0, sizeof(*s));
	s->session = session;
	s->first = r->rows + 1;
	s->last = r->rows;
	r->st = st;
	r->line = 0;
	r->last_seq = 0;
	r->run_seq = r->run_line = -1;
}

void report_item(struct report *r, int64_t seq)
{
	if (r->o.format != REPORT_SARIF || r->failed)
		return;
	r->line++;
	/* A gap whose place is unknown comes last; a repeated seq keeps its first line. */
	if (seq < 0 || seq <= r->last_seq)
		return;
	r->last_seq = seq;
	if (r->run_seq >= 0 && seq - r->run_seq == r->line - r->run_line)
		return;
	r->run_seq = seq;
	r->run_line = r->line;
	sqlite3_reset(r->run);
	sqlite3_bind_int64(r->run, 1, cur(r)->session);
	sqlite3_bind_int64(r->run, 2, seq);
	sqlite3_bind_int64(r->run, 3, r->line);
	if (sqlite3_step(r->run) != SQLITE_DONE)
		fail(r, "cannot keep the report's line numbers");
}

/* ---- fingerprints ---- */

/*
 * The finding's text made general, into out: the message's own id, when a
 * string (its JSON text), becomes "ID" and every run of digits "N" (seq
 * numbers, numeric ids, counts, times), so that the same finding in another
 * run or recording reads the same.
 */
static void general_text(const struct an_finding *f, struct mt_buf *out)
{
	const char *t = f->text;
	/* (A numeric id is left to the digits' rule: "2" must not take the 2 of "#2".) */
	size_t idn = f->id && f->id[0] == '"' ? strlen(f->id) : 0;

	mt_buf_reset(out);
	mt_buf_putc(out, '\0');
	mt_buf_reset(out);
	while (*t) {
		if (idn && !strncmp(t, f->id, idn)) {
			mt_buf_puts(out, "ID");
			t += idn;
		} else if (*t >= '0' && *t <= '9') {
			mt_buf_putc(out, 'N');
			while (*t >= '0' && *t <= '9')
				t++;
		} else {
			mt_buf_putc(out, *t++);
		}
	}
}

/* The fingerprint's key (before ":occurrence"), 16 hex digits into out. */
static void fingerprint_key(struct report *r, const struct an_finding *f, char out[17])
{
	static const unsigned char key[16] = "mcptap-finding-1";
	struct mt_buf *b = &r->b3;

	general_text(f, &r->b2);
	mt_buf_reset(b);
	mt_buf_printf(b, "%s%c%s%c%s%c", f->rule->id, 0,
		      f->have_msg ? (f->dir == AN_C2S ? "c2s" : "s2c") : "", 0, f->method ? f->method : "",
		      0);
	mt_buf_append(b, r->b2.data, r->b2.len);
	snprintf(out, 17, "%016llx", (unsigned long long)mt_siphash24(key, b->data, b->len));
}

/* ---- text ---- */

static void text_finding(struct report *r, const struct an_finding *fd)
{
	static const char *const col[AN_SEVERITY_COUNT] = {"\033[36m", "\033[33m", "\033[31m"};
	FILE *f = r->f;
	char sect[64];

	report_section(fd->rule, sect, sizeof(sect));
	fprintf(f, "session %lld", (long long)cur(r)->session);
	if (fd->seq > 0)
		fprintf(f, " #%lld", (long long)fd->seq);
	if (fd->have_msg) {
		fprintf(f, " %s", an_dir_arrow(fd->dir));
		/* What came from the wire is shown, never acted on by the terminal. */
		if (fd->method)
			fprintf(f, " %s", mt_printable(&r->b1, fd->method));
		if (fd->id)
			fprintf(f, " id=%s", mt_printable(&r->b1, fd->id));
	}
	fprintf(f, ": %s %s%s%s: %s (%s, %s)\n", fd->rule->id, r->o.color ? col[fd->sev] : "",
		an_severity_name(fd->sev), r->o.color ? "\033[0m" : "", mt_printable(&r->b1, fd->text), sect,
		an_version_name(r->st->version));
}

static void text_summary(struct report *r)
{
	const struct rsess *s = cur(r);

	fprintf(r->f, "session %lld: %zu %s, %zu %s, %zu info", (long long)s->session, s->c[AN_ERROR],
		plural(s->c[AN_ERROR], "error", "errors"), s->c[AN_WARNING],
		plural(s->c[AN_WARNING], "warning", "warnings"), s->c[AN_INFO]);
	if (s->hidden)
		fprintf(r->f, " (%zu not shown: --max-per-rule %zu)", s->hidden, r->o.max_per_rule);
	fprintf(r->f, " (checked against %s, %s)\n", an_version_name(s->version), s->source);
}

/* The rules that found something, most findings first (then by id): their indexes. */
static size_t rules_found(const struct report *r, size_t *out)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nrules; i++) {
		if (!r->tally[i].n)
			continue;
		size_t j = n++;
		/* (insertion: a run finds few rules) */
		while (j > 0 && (r->tally[out[j - 1]].n < r->tally[i].n ||
				 (r->tally[out[j - 1]].n == r->tally[i].n &&
				  strcmp(r->rules[out[j - 1]]->id, r->rules[i]->id) > 0))) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = i;
	}
	return n;
}

/*
 * After every session: the run's totals when it checked more than one, and
 * each rule that found something, with how many times and where first.
 */
static void text_run_summary(struct report *r)
{
	size_t c[AN_SEVERITY_COUNT] = {0};
	size_t *idx = mt_calloc(r->nrules ? r->nrules : 1, sizeof(*idx));
	size_t n = rules_found(r, idx);

	for (size_t k = 0; k < r->ns; k++)
		for (int v = 0; v < AN_SEVERITY_COUNT; v++)
			c[v] += r->s[k].c[v];
	if (r->ns > 1)
		fprintf(r->f, "%zu sessions: %zu %s, %zu %s, %zu info\n", r->ns, c[AN_ERROR],
			plural(c[AN_ERROR], "error", "errors"), c[AN_WARNING],
			plural(c[AN_WARNING], "warning", "warnings"), c[AN_INFO]);
	if (n)
		fprintf(r->f, "by rule:\n");
	for (size_t k = 0; k < n; k++) {
		const struct rtally *t = &r->tally[idx[k]];
		fprintf(r->f, "  %s \u00d7%zu, first at session %lld", r->rules[idx[k]]->id, t->n,
			(long long)t->session);
		if (t->seq > 0)
			fprintf(r->f, " #%lld", (long long)t->seq);
		if (t->shown < t->n)
			fprintf(r->f, " (%zu not shown)", t->n - t->shown);
		fputc('\n', r->f);
	}
	free(idx);
}

/* ---- the spool ---- */

static void spool_finding(struct report *r, const struct an_finding *fd)
{
	sqlite3_stmt *q = r->ins;
	int64_t idx = -1;
	char key[17];

	if (r->failed)
		return;
	if (!mt_map_get(&r->rule_index, fd->rule->id, strlen(fd->rule->id), &idx))
		return; /* (cannot be: every rule is in the table) */
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	sqlite3_bind_int64(q, 1, r->rows + 1);
	sqlite3_bind_int64(q, 2, cur(r)->session);
	sqlite3_bind_int64(q, 3, idx);
	sqlite3_bind_int(q, 4, (int)fd->sev);
	sqlite3_bind_int64(q, 5, fd->seq > 0 ? fd->seq : 0);
	sqlite3_bind_int(q, 6, fd->have_msg ? (int)fd->dir : -1);
	if (fd->method)
		sqlite3_bind_text(q, 7, fd->method, -1, SQLITE_STATIC);
	if (fd->id)
		sqlite3_bind_text(q, 8, fd->id, -1, SQLITE_STATIC);
	if (fd->nrelated) {
		mt_buf_reset(&r->b1);
		mt_buf_putc(&r->b1, '[');
		for (size_t j = 0; j < fd->nrelated; j++)
			mt_buf_printf(&r->b1, "%s%lld", j ? "," : "", (long long)fd->related[j]);
		mt_buf_putc(&r->b1, ']');
		sqlite3_bind_text(q, 9, r->b1.data, (int)r->b1.len, SQLITE_STATIC);
	}
	sqlite3_bind_text(q, 10, fd->text, -1, SQLITE_STATIC);
	if (r->o.format == REPORT_SARIF) {
		fingerprint_key(r, fd, key);
		sqlite3_bind_text(q, 11, key, -1, SQLITE_STATIC);
	}
	if (sqlite3_step(q) != SQLITE_DONE) {
		fail(r, "cannot keep a finding for the report");
		return;
	}
	r->rows++;
	cur(r)->last = r->rows;
}

void report_finding(struct report *r, const struct an_finding *f)
{
	int64_t idx = -1;

	cur(r)->c[f->sev]++;
	if (mt_map_get(&r->rule_index, f->rule->id, strlen(f->rule->id), &idx) && idx >= 0) {
		struct rtally *t = &r->tally[idx];
		if (!t->n++) {
			t->session = cur(r)->session;
			t->seq = f->seq;
		}
		if (r->o.max_per_rule && t->n > r->o.max_per_rule) {
			cur(r)->hidden++;
			return;
		}
		t->shown++;
	}
	if (r->o.format == REPORT_TEXT)
		text_finding(r, f);
	else
		spool_finding(r, f);
}

void report_session_end(struct report *r)
{
	struct rsess *s = cur(r);

	s->version = r->st->version;
	s->source = mt_strdup(r->st->version_source ? r->st->version_source : "default");
	s->negotiated = r->st->negotiated ? mt_strdup(r->st->negotiated) : NULL;
	r->st = NULL;
	if (r->o.format == REPORT_TEXT)
		text_summary(r);
}

/* A query on the spool, or NULL (the report failed). */
static sqlite3_stmt *query(struct report *r, const char *sql)
{
	sqlite3_stmt *q = NULL;

	if (r->failed)
		return NULL;
	if (sqlite3_prepare_v2(r->db, sql, -1, &q, NULL) != SQLITE_OK) {
		fail(r, "cannot read the report's findings back");
		sqlite3_finalize(q);
		return NULL;
	}
	return q;
}

/* The next row of q: 1, or 0 at the end or on a failure (recorded). */
static int next_row(struct report *r, sqlite3_stmt *q)
{
	int rc = q ? sqlite3_step(q) : SQLITE_DONE;

	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE)
		fail(r, "cannot read the report's findings back");
	return 0;
}

static const char *col_text(sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);

	return t ? (const char *)t : NULL;
}

/* Dump v (stolen) on one line, with ", " and ": " between members. (Into a
 * string first: json_dumpf writes each token with its own fwrite.) */
static void put_json(FILE *f, json_t *v)
{
	char *s = json_dumps(v, JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);

	if (s)
		fputs(s, f);
	free(s);
	json_decref(v);
}

/* ---- JSON ---- */

static json_t *json_finding(struct report *r, sqlite3_stmt *q)
{
	const struct an_rule *rule = r->rules[sqlite3_column_int64(q, 1)];
	json_t *o = json_object(), *rel = NULL;
	int64_t seq = sqlite3_column_int64(q, 3);
	int dir = sqlite3_column_int(q, 4);
	const char *method = col_text(q, 5), *id = col_text(q, 6), *related = col_text(q, 7);
	char sect[64];

	report_section(rule, sect, sizeof(sect));
	json_object_set_new(o, "rule", json_string(rule->id));
	json_object_set_new(o, "severity",
			    json_string(an_severity_name((enum an_severity)sqlite3_column_int(q, 2))));
	json_object_set_new(o, "seq", seq > 0 ? json_integer(seq) : json_null());
	if (dir >= 0) {
		json_object_set_new(o, "dir", json_string(dir == AN_C2S ? "c2s" : "s2c"));
		if (method)
			json_object_set_new(o, "method", jstr(method));
		if (id) {
			json_t *v = json_loads(id, JSON_DECODE_ANY, NULL);
			json_object_set_new(o, "id", v ? v : jstr(id));
		}
	}
	if (related)
		rel = json_loads(related, 0, NULL);
	json_object_set_new(o, "related", rel ? rel : json_array());
	json_object_set_new(o, "text", jstr(col_text(q, 8)));
	json_object_set_new(o, "source", json_string(sect));
	return o;
}

static void write_json(struct report *r)
{
	FILE *f = r->f;
	sqlite3_stmt *q = query(r, "SELECT session, rule, sev, seq, dir, method, id, related, text"
				   " FROM f ORDER BY rowid");
	int have = next_row(r, q);

	fputs("{\n  \"tool\": \"mcptap\",\n  \"version\": ", f);
	put_json(f, json_string(MCPTAP_VERSION));
	fputs(",\n  \"file\": ", f);
	put_json(f, jstr(r->o.path));
	fputs(",\n  \"sessions\": [", f);
	for (size_t k = 0; k < r->ns; k++) {
		const struct rsess *s = &r->s[k];
		size_t n = 0;
		fprintf(f,
			"%s\n    {\n      \"session\": %lld,\n      \"spec\": \"%s\",\n"
			"      \"spec_source\": ",
			k ? "," : "", (long long)s->session, an_version_name(s->version));
		put_json(f, jstr(s->source));
		if (s->negotiated) {
			fputs(",\n      \"negotiated\": ", f);
			put_json(f, jstr(s->negotiated));
		}
		fprintf(f,
			",\n      \"counts\": {\"error\": %zu, \"warning\": %zu, \"info\": %zu},\n"
			"      \"not_shown\": %zu,\n      \"findings\": [",
			s->c[AN_ERROR], s->c[AN_WARNING], s->c[AN_INFO], s->hidden);
		for (; have && sqlite3_column_int64(q, 0) == s->session; have = next_row(r, q)) {
			fputs(n++ ? ",\n        " : "\n        ", f);
			put_json(f, json_finding(r, q));
		}
		fputs(n ? "\n      ]\n    }" : "]\n    }", f);
	}
	fputs(r->ns ? "\n  ],\n  \"by_rule\": [" : "],\n  \"by_rule\": [", f);
	{
		size_t *idx = mt_calloc(r->nrules ? r->nrules : 1, sizeof(*idx));
		size_t n = rules_found(r, idx);
		for (size_t k = 0; k < n; k++) {
			const struct rtally *t = &r->tally[idx[k]];
			json_t *o = json_pack("{s:s, s:I, s:I, s:{s:I, s:I}}", "rule", r->rules[idx[k]]->id,
					      "count", (json_int_t)t->n, "shown", (json_int_t)t->shown,
					      "first", "session", (json_int_t)t->session, "seq",
					      (json_int_t)(t->seq > 0 ? t->seq : 0));
			fputs(k ? ",\n    " : "\n    ", f);
			put_json(f, o);
		}
		fputs(n ? "\n  ]\n}\n" : "]\n}\n", f);
		free(idx);
	}
	sqlite3_finalize(q);
}

/* ---- SARIF ---- */

static const char *sarif_level(enum an_severity s)
{
	return s == AN_ERROR ? "error" : s == AN_WARNING ? "warning" : "note";
}

/* A rule is reported on when it has a check and the options let it run. */
static int rule_enabled(const struct an_rule *r, const struct an_options *o)
{
	if (!r->check)
		return 0;
	if (o && o->only && !an_rule_listed(o->only, r->id))
		return 0;
	if (o && o->skip && an_rule_listed(o->skip, r->id))
		return 0;
	return 1;
}

/* The base the session exports' names are relative to (see mcptap.1). */
#define SARIF_BASE "%SRCROOT%"

/* The tool: mcptap and its rule table, one rule per line. */
static void sarif_tool(struct report *r)
{
	FILE *f = r->f;

	fputs("{\n        \"driver\": {\n          \"name\": \"mcptap\",\n          \"version\": ", f);
	put_json(f, json_string(MCPTAP_VERSION));
	fputs(",\n          \"semanticVersion\": ", f);
	put_json(f, json_string(MCPTAP_VERSION));
	fputs(",\n          \"informationUri\": \"https://modelcontextprotocol.io/specification\",\n"
	      "          \"rules\": [",
	      f);
	for (size_t i = 0; i < r->nrules; i++) {
		const struct an_rule *rule = r->rules[i];
		json_t *jr = json_object(), *props = json_object(), *vers = json_array();
		char sect[64];
		report_section(rule, sect, sizeof(sect));
		json_object_set_new(jr, "id", json_string(rule->id));
		json_object_set_new(jr, "shortDescription", json_pack("{s:s}", "text", rule->summary));
		json_object_set_new(jr, "fullDescription",
				    json_pack("{s:s}", "text", rule->source ? rule->source : ""));
		mt_buf_reset(&r->b1);
		mt_buf_printf(&r->b1,
			      "%s (%s). `mcptap analyze --list-rules` and mcptap-rules(7) "
			      "list every rule.",
			      rule->summary, rule->source ? rule->source : "");
		json_object_set_new(jr, "help", json_pack("{s:s}", "text", r->b1.data));
		json_object_set_new(jr, "defaultConfiguration",
				    json_pack("{s:s,s:b}", "level", sarif_level(rule->sev), "enabled",
					      rule_enabled(rule, r->o.an)));
		for (int v = 0; v < AN_VERSION_COUNT; v++)
			if (rule->versions & AN_V(v))
				json_array_append_new(vers, json_string(an_version_name((enum an_version)v)));
		json_object_set_new(props, "revisions", vers);
		json_object_set_new(props, "section", json_string(sect));
		json_object_set_new(props, "checked", json_boolean(rule->check != NULL));
		json_object_set_new(jr, "properties", props);
		fputs(i ? ",\n            " : "\n            ", f);
		put_json(f, jr);
	}
	fputs("\n          ]\n        }\n      }", f);
}

/* A session's export, as results and artifacts name it. */
static const char *export_name(struct mt_buf *b, int64_t session)
{
	mt_buf_reset(b);
	mt_buf_printf(b, "mcptap-session-%lld.jsonl", (long long)session);
	return b->data;
}

static json_t *sarif_result(struct report *r, sqlite3_stmt *q, const struct rsess *s, size_t k)
{
	int64_t ri = sqlite3_column_int64(q, 1), seq = sqlite3_column_int64(q, 3);
	int64_t line = sqlite3_column_type(q, 8) == SQLITE_INTEGER ? sqlite3_column_int64(q, 8) : 1;
	const struct an_rule *rule = r->rules[ri];
	const char *method = col_text(q, 4), *key = col_text(q, 6);
	json_t *res = json_object(), *loc = json_object(), *props = json_object();
	char name[64], fq[96];

	if (seq > 0) {
		snprintf(name, sizeof(name), "session %lld #%lld", (long long)s->session, (long long)seq);
		snprintf(fq, sizeof(fq), "session/%lld/message/%lld", (long long)s->session, (long long)seq);
	} else {
		snprintf(name, sizeof(name), "session %lld", (long long)s->session);
		snprintf(fq, sizeof(fq), "session/%lld", (long long)s->session);
	}
	json_object_set_new(res, "ruleId", json_string(rule->id));
	json_object_set_new(res, "ruleIndex", json_integer(ri));
	json_object_set_new(res, "level",
			    json_string(sarif_level((enum an_severity)sqlite3_column_int(q, 2))));
	json_object_set_new(res, "message", json_pack("{s:o}", "text", jstr(col_text(q, 5))));
	json_object_set_new(loc, "physicalLocation",
			    json_pack("{s:{s:s,s:s,s:I},s:{s:I}}", "artifactLocation", "uri",
				      export_name(&r->b1, s->session), "uriBaseId", SARIF_BASE, "index",
				      (json_int_t)k, "region", "startLine",
				      (json_int_t)(line > 0 ? line : 1)));
	json_object_set_new(loc, "logicalLocations",
			    json_pack("[{s:s,s:s,s:s}]", "name", name, "fullyQualifiedName", fq, "kind",
				      seq > 0 ? "message" : "session"));
	json_object_set_new(res, "locations", json_pack("[o]", loc));
	mt_buf_reset(&r->b2);
	mt_buf_printf(&r->b2, "%s:%lld", key ? key : "", (long long)sqlite3_column_int64(q, 7));
	json_object_set_new(res, "partialFingerprints", json_pack("{s:s}", "mcptapFinding/v1", r->b2.data));
	json_object_set_new(props, "session", json_integer(s->session));
	if (seq > 0)
		json_object_set_new(props, "seq", json_integer(seq));
	if (method)
		json_object_set_new(props, "method", jstr(method));
	json_object_set_new(props, "revision", json_string(an_version_name(s->version)));
	json_object_set_new(res, "properties", props);
	return res;
}

static void write_sarif(struct report *r)
{
	FILE *f = r->f;
	/* Occurrences number the findings that share a key within a session; a
	 * finding's line is its run's first line plus its distance from the
	 * run's first seq (line 1 for the session itself). */
	sqlite3_stmt *q = query(r, "SELECT session, rule, sev, seq, method, text, key,"
				   " row_number() OVER (PARTITION BY session, key ORDER BY rowid) - 1,"
				   " (SELECT u.line + f.seq - u.seq FROM run u WHERE u.session = f.session"
				   "  AND u.seq <= f.seq ORDER BY u.seq DESC LIMIT 1)"
				   " FROM f ORDER BY rowid");
	int have = next_row(r, q);
	size_t k = 0, n = 0;

	fputs("{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n"
	      "  \"version\": \"2.1.0\",\n  \"runs\": [\n    {\n      \"tool\": ",
	      f);
	sarif_tool(r);
	fputs(",\n      \"originalUriBaseIds\": ", f);
	put_json(f, json_pack("{s:{s:{s:s}}}", SARIF_BASE, "description", "text",
			      "where the sessions' exports are: mcptap show -r FILE -s ID -T json > "
			      "mcptap-session-ID.jsonl (for code scanning, the repository's root)"));
	fputs(",\n      \"artifacts\": [", f);
	for (size_t i = 0; i < r->ns; i++) {
		mt_buf_reset(&r->b2);
		mt_buf_printf(&r->b2,
			      "session %lld of %s, one line per message, stderr line and gap: "
			      "mcptap show -r FILE -s %lld -T json",
			      (long long)r->s[i].session, r->o.path, (long long)r->s[i].session);
		fputs(i ? ",\n        " : "\n        ", f);
		put_json(f, json_pack("{s:{s:s,s:s},s:{s:o}}", "location", "uri",
				      export_name(&r->b1, r->s[i].session), "uriBaseId", SARIF_BASE,
				      "description", "text", jstr(r->b2.data)));
	}
	fputs(r->ns ? "\n      ],\n      \"results\": [" : "],\n      \"results\": [", f);
	for (; have; have = next_row(r, q)) {
		while (k < r->ns && r->s[k].session != sqlite3_column_int64(q, 0))
			k++;
		if (k == r->ns)
			break; /* (cannot be: rows come in session order) */
		fputs(n++ ? ",\n        " : "\n        ", f);
		put_json(f, sarif_result(r, q, &r->s[k], k));
	}
	fputs(n ? "\n      ]\n    }\n  ]\n}\n" : "]\n    }\n  ]\n}\n", f);
	sqlite3_finalize(q);
}

/* ---- JUnit ---- */

/* s as XML text: escaped, and what XML 1.0 cannot hold at all made '?'. */
static void xml_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; p && *p; p++) {
		switch (*p) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* Controls but tab and newline; U+FFFE and U+FFFF. */
			if (*p < 0x20 && *p != '\n' && *p != '\t') {
				fputc('?', f);
			} else if (p[0] == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)) {
				fputc('?', f);
				p += 2;
			} else {
				fputc(*p, f);
			}
		}
	}
}

static void junit_finding(FILE *f, long long session, sqlite3_stmt *q)
{
	int64_t seq = sqlite3_column_int64(q, 2);

	fprintf(f, "session %lld", session);
	if (seq > 0)
		fprintf(f, " #%lld", (long long)seq);
	fputs(": ", f);
	xml_text(f, an_severity_name((enum an_severity)sqlite3_column_int(q, 1)));
	fputs(": ", f);
	xml_text(f, col_text(q, 3));
	fputc('\n', f);
}

/* Why a rule is skipped in a session, or NULL when it applies. */
static const char *skip_reason(const struct report *r, const struct an_rule *rule, const struct rsess *s)
{
	if (!rule->check)
		return "not observable apart from another rule";
	if (!rule_enabled(rule, r->o.an))
		return "not selected";
	if (!(rule->versions & AN_V(s->version)))
		return "not part of this revision";
	return NULL;
}

/* Advance q (rows ordered by rule) to rule i: 1 when a row of rule i is current. */
static int at_rule(struct report *r, sqlite3_stmt *q, int *have, size_t i)
{
	while (*have && (size_t)sqlite3_column_int64(q, 0) < i)
		*have = next_row(r, q);
	return *have && (size_t)sqlite3_column_int64(q, 0) == i;
}

static void junit_session(struct report *r, const struct rsess *s, size_t *nfail, size_t *nother)
{
	FILE *f = r->f;
	int fail_at = r->o.fail_never ? AN_SEVERITY_COUNT : (int)r->o.fail_on;
	sqlite3_stmt *stats = query(r, "SELECT rule, sum(sev >= ?3), sum(sev < ?3) FROM f"
				       " WHERE rowid BETWEEN ?1 AND ?2 GROUP BY rule");
	sqlite3_stmt *qf = query(r, "SELECT rule, sev, seq, text FROM f WHERE rowid BETWEEN ?1 AND ?2"
				    " AND sev >= ?3 ORDER BY rule, rowid");
	sqlite3_stmt *qo = query(r, "SELECT rule, sev, seq, text FROM f WHERE rowid BETWEEN ?1 AND ?2"
				    " AND sev < ?3 ORDER BY rule, rowid");
	sqlite3_stmt *qs[3] = {stats, qf, qo};
	size_t tests = r->nrules, failures = 0, skipped = 0;
	int hf, ho;

	for (int j = 0; j < 3; j++) {
		if (!qs[j])
			continue;
		sqlite3_bind_int64(qs[j], 1, s->first);
		sqlite3_bind_int64(qs[j], 2, s->last);
		sqlite3_bind_int(qs[j], 3, fail_at);
	}
	memset(nfail, 0, r->nrules * sizeof(*nfail));
	memset(nother, 0, r->nrules * sizeof(*nother));
	while (next_row(r, stats)) {
		int64_t i = sqlite3_column_int64(stats, 0);
		if (i >= 0 && (size_t)i < r->nrules) {
			nfail[i] = (size_t)sqlite3_column_int64(stats, 1);
			nother[i] = (size_t)sqlite3_column_int64(stats, 2);
		}
	}
	for (size_t i = 0; i < r->nrules; i++) {
		if (skip_reason(r, r->rules[i], s))
			skipped++;
		else if (nfail[i])
			failures++;
	}
	fprintf(f,
		"  <testsuite name=\"session %lld\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
		"skipped=\"%zu\">\n",
		(long long)s->session, tests, failures, skipped);
	fprintf(f,
		"    <properties><property name=\"revision\" value=\"%s\"/>"
		"<property name=\"revision_source\" value=\"",
		an_version_name(s->version));
	xml_text(f, s->source);
	fputs("\"/></properties>\n", f);
	hf = next_row(r, qf);
	ho = next_row(r, qo);
	for (size_t i = 0; i < r->nrules; i++) {
		const struct an_rule *rule = r->rules[i];
		const char *why = skip_reason(r, rule, s);
		fprintf(f,
			"    <testcase classname=\"mcptap.session%lld\" name=\"%s: ", (long long)s->session,
			rule->id);
		xml_text(f, rule->summary);
		fputs("\">", f);
		if (why) {
			fprintf(f, "<skipped>%s</skipped></testcase>\n", why);
			continue;
		}
		if (nfail[i] && at_rule(r, qf, &hf, i)) {
			fprintf(f, "\n      <failure type=\"%s\" message=\"%zu finding%s\">", rule->id,
				nfail[i], nfail[i] == 1 ? "" : "s");
			for (; at_rule(r, qf, &hf, i); hf = next_row(r, qf))
				junit_finding(f, (long long)s->session, qf);
			fputs("</failure>\n    ", f);
		}
		if (nother[i] && at_rule(r, qo, &ho, i)) {
			fputs("<system-out>", f);
			for (; at_rule(r, qo, &ho, i); ho = next_row(r, qo))
				junit_finding(f, (long long)s->session, qo);
			fputs("</system-out>", f);
		}
		fputs("</testcase>\n", f);
	}
	fputs("  </testsuite>\n", f);
	for (int j = 0; j < 3; j++)
		sqlite3_finalize(qs[j]);
}

static void write_junit(struct report *r)
{
	size_t *nfail = mt_calloc(r->nrules ? r->nrules : 1, sizeof(*nfail));
	size_t *nother = mt_calloc(r->nrules ? r->nrules : 1, sizeof(*nother));

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcptap analyze\">\n", r->f);
	for (size_t k = 0; k < r->ns; k++)
		junit_session(r, &r->s[k], nfail, nother);
	fputs("</testsuites>\n", r->f);
	free(nfail);
	free(nother);
}

int report_finish(struct report *r, struct mt_err *err)
{
	if (r->db && !r->failed && sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		fail(r, "cannot keep the report's findings");
	if (!r->failed) {
		switch (r->o.format) {
		case REPORT_JSON: write_json(r); break;
		case REPORT_SARIF: write_sarif(r); break;
		case REPORT_JUNIT: write_junit(r); break;
		case REPORT_TEXT: text_run_summary(r); break;
		}
	}
	if (fflush(r->f) != 0 || ferror(r->f))
		fail_why(r, "cannot write the report", strerror(errno));
	if (r->failed) {
		mt_err_set(err, "%s", r->err.msg);
		return -1;
	}
	return 0;
}
