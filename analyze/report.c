/*
 * report.c - the analyzer's report writers (see report.h).
 */
#include "analyze/report.h"

#include <stdlib.h>
#include <string.h>

void report_section(const struct an_rule *r, char *out, size_t n)
{
	const char *src = r->source ? r->source : "";
	const char *semi = strchr(src, ';');
	size_t len = semi ? (size_t)(semi - src) : strlen(src);

	snprintf(out, n, "%.*s", (int)len, src);
}

static void counts(const struct report_session *s, size_t c[AN_SEVERITY_COUNT])
{
	memset(c, 0, AN_SEVERITY_COUNT * sizeof(*c));
	for (size_t i = 0; i < s->nfindings; i++)
		c[s->findings[i].sev]++;
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void report_text(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o)
{
	static const char *const col[AN_SEVERITY_COUNT] = {"\033[36m", "\033[33m", "\033[31m"};

	for (size_t k = 0; k < n; k++) {
		const struct report_session *rs = &s[k];
		const char *ver = an_version_name(rs->st->version);
		size_t c[AN_SEVERITY_COUNT];

		for (size_t i = 0; i < rs->nfindings; i++) {
			const struct an_finding *fd = &rs->findings[i];
			char sect[64];
			report_section(fd->rule, sect, sizeof(sect));
			fprintf(f, "session %lld", (long long)rs->session);
			if (fd->seq > 0)
				fprintf(f, " #%lld", (long long)fd->seq);
			if (fd->have_msg) {
				fprintf(f, " %s", an_dir_arrow(fd->dir));
				if (fd->method)
					fprintf(f, " %s", fd->method);
				if (fd->id)
					fprintf(f, " id=%s", fd->id);
			}
			fprintf(f, ": %s %s%s%s: %s (%s, %s)\n", fd->rule->id,
				o->color ? col[fd->sev] : "", an_severity_name(fd->sev),
				o->color ? "\033[0m" : "", fd->text, sect, ver);
		}
		counts(rs, c);
		fprintf(f, "session %lld: %zu %s, %zu %s, %zu info (checked against %s, %s)\n",
			(long long)rs->session, c[AN_ERROR], plural(c[AN_ERROR], "error", "errors"),
			c[AN_WARNING], plural(c[AN_WARNING], "warning", "warnings"), c[AN_INFO], ver,
			rs->st->version_source);
	}
}

static json_t *finding_json(const struct an_finding *fd)
{
	json_t *o = json_object(), *rel = json_array();
	char sect[64];

	report_section(fd->rule, sect, sizeof(sect));
	json_object_set_new(o, "rule", json_string(fd->rule->id));
	json_object_set_new(o, "severity", json_string(an_severity_name(fd->sev)));
	json_object_set_new(o, "seq", fd->seq > 0 ? json_integer(fd->seq) : json_null());
	if (fd->have_msg) {
		json_object_set_new(o, "dir", json_string(fd->dir == AN_C2S ? "c2s" : "s2c"));
		if (fd->method)
			json_object_set_new(o, "method", json_string(fd->method));
		if (fd->id) {
			json_t *id = json_loads(fd->id, JSON_DECODE_ANY, NULL);
			json_object_set_new(o, "id", id ? id : json_string(fd->id));
		}
	}
	for (size_t i = 0; i < fd->nrelated; i++)
		json_array_append_new(rel, json_integer(fd->related[i]));
	json_object_set_new(o, "related", rel);
	json_object_set_new(o, "text", json_string(fd->text));
	json_object_set_new(o, "source", json_string(sect));
	return o;
}

void report_json(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o)
{
	json_t *root = json_object(), *arr = json_array();

	json_object_set_new(root, "tool", json_string("mcptap"));
	json_object_set_new(root, "version", json_string(MCPTAP_VERSION));
	json_object_set_new(root, "file", json_string(o->path));
	for (size_t k = 0; k < n; k++) {
		const struct report_session *rs = &s[k];
		json_t *js = json_object(), *fa = json_array(), *cnt = json_object();
		size_t c[AN_SEVERITY_COUNT];
		counts(rs, c);
		json_object_set_new(js, "session", json_integer(rs->session));
		json_object_set_new(js, "spec", json_string(an_version_name(rs->st->version)));
		json_object_set_new(js, "spec_source", json_string(rs->st->version_source));
		if (rs->st->negotiated)
			json_object_set_new(js, "negotiated", json_string(rs->st->negotiated));
		for (size_t i = 0; i < rs->nfindings; i++)
			json_array_append_new(fa, finding_json(&rs->findings[i]));
		json_object_set_new(cnt, "error", json_integer((json_int_t)c[AN_ERROR]));
		json_object_set_new(cnt, "warning", json_integer((json_int_t)c[AN_WARNING]));
		json_object_set_new(cnt, "info", json_integer((json_int_t)c[AN_INFO]));
		json_object_set_new(js, "counts", cnt);
		json_object_set_new(js, "findings", fa);
		json_array_append_new(arr, js);
	}
	json_object_set_new(root, "sessions", arr);
	json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', f);
	json_decref(root);
}

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

void report_sarif(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o)
{
	size_t nrules;
	const struct an_rule *const *rules = an_rules(&nrules);
	json_t *root = json_object(), *run = json_object(), *driver = json_object();
	json_t *jrules = json_array(), *results = json_array(), *index = json_object();

	json_object_set_new(root, "$schema", json_string("https://json.schemastore.org/sarif-2.1.0.json"));
	json_object_set_new(root, "version", json_string("2.1.0"));
	json_object_set_new(driver, "name", json_string("mcptap"));
	json_object_set_new(driver, "version", json_string(MCPTAP_VERSION));
	json_object_set_new(driver, "semanticVersion", json_string(MCPTAP_VERSION));
	json_object_set_new(driver, "informationUri",
			    json_string("https://modelcontextprotocol.io/specification"));
	for (size_t i = 0; i < nrules; i++) {
		const struct an_rule *r = rules[i];
		json_t *jr = json_object(), *props = json_object(), *vers = json_array();
		char sect[64];
		report_section(r, sect, sizeof(sect));
		json_object_set_new(jr, "id", json_string(r->id));
		json_object_set_new(jr, "shortDescription", json_pack("{s:s}", "text", r->summary));
		json_object_set_new(jr, "fullDescription",
				    json_pack("{s:s}", "text", r->source ? r->source : ""));
		json_object_set_new(jr, "defaultConfiguration",
				    json_pack("{s:s,s:b}", "level", sarif_level(r->sev), "enabled",
					      rule_enabled(r, o->an)));
		for (int v = 0; v < AN_VERSION_COUNT; v++)
			if (r->versions & AN_V(v))
				json_array_append_new(vers, json_string(an_version_name((enum an_version)v)));
		json_object_set_new(props, "revisions", vers);
		json_object_set_new(props, "section", json_string(sect));
		json_object_set_new(props, "checked", json_boolean(r->check != NULL));
		json_object_set_new(jr, "properties", props);
		json_array_append_new(jrules, jr);
		json_object_set_new(index, r->id, json_integer((json_int_t)i));
	}
	json_object_set_new(driver, "rules", jrules);
	json_object_set_new(run, "tool", json_pack("{s:o}", "driver", driver));
	json_object_set_new(run, "artifacts",
			    json_pack("[{s:{s:s},s:s}]", "location", "uri", o->path, "description",
				      "mcptap capture file (SQLite)"));
	for (size_t k = 0; k < n; k++) {
		const struct report_session *rs = &s[k];
		for (size_t i = 0; i < rs->nfindings; i++) {
			const struct an_finding *fd = &rs->findings[i];
			json_t *res = json_object(), *loc = json_object(), *props = json_object();
			char name[64], fq[96];
			if (fd->seq > 0) {
				snprintf(name, sizeof(name), "session %lld #%lld", (long long)rs->session,
					 (long long)fd->seq);
				snprintf(fq, sizeof(fq), "session/%lld/message/%lld",
					 (long long)rs->session, (long long)fd->seq);
			} else {
				snprintf(name, sizeof(name), "session %lld", (long long)rs->session);
				snprintf(fq, sizeof(fq), "session/%lld", (long long)rs->session);
			}
			json_object_set_new(res, "ruleId", json_string(fd->rule->id));
			json_object_set(res, "ruleIndex", json_object_get(index, fd->rule->id));
			json_object_set_new(res, "level", json_string(sarif_level(fd->sev)));
			json_object_set_new(res, "message", json_pack("{s:s}", "text", fd->text));
			json_object_set_new(loc, "physicalLocation",
					    json_pack("{s:{s:s,s:i}}", "artifactLocation", "uri", o->path,
						      "index", 0));
			json_object_set_new(loc, "logicalLocations",
					    json_pack("[{s:s,s:s,s:s}]", "name", name,
						      "fullyQualifiedName", fq, "kind",
						      fd->seq > 0 ? "message" : "session"));
			json_object_set_new(res, "locations", json_pack("[o]", loc));
			json_object_set_new(props, "session", json_integer(rs->session));
			if (fd->seq > 0)
				json_object_set_new(props, "seq", json_integer(fd->seq));
			if (fd->method)
				json_object_set_new(props, "method", json_string(fd->method));
			json_object_set_new(props, "revision",
					    json_string(an_version_name(rs->st->version)));
			json_object_set_new(res, "properties", props);
			json_array_append_new(results, res);
		}
	}
	json_object_set_new(run, "results", results);
	json_object_set_new(root, "runs", json_pack("[o]", run));
	json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', f);
	json_decref(root);
	json_decref(index);
}

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 has no place for most control characters. */
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputc('?', f);
			else
				fputc(*s, f);
		}
	}
}

static void junit_finding(FILE *f, long long session, const struct an_finding *fd)
{
	fprintf(f, "session %lld", session);
	if (fd->seq > 0)
		fprintf(f, " #%lld", (long long)fd->seq);
	fputs(": ", f);
	xml_text(f, an_severity_name(fd->sev));
	fputs(": ", f);
	xml_text(f, fd->text);
	fputc('\n', f);
}

void report_junit(FILE *f, const struct report_session *s, size_t n, const struct report_opts *o)
{
	size_t nrules;
	const struct an_rule *const *rules = an_rules(&nrules);

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcptap analyze\">\n");
	for (size_t k = 0; k < n; k++) {
		const struct report_session *rs = &s[k];
		size_t tests = 0, failures = 0, skipped = 0;
		for (size_t i = 0; i < nrules; i++) {
			const struct an_rule *r = rules[i];
			int applies = rule_enabled(r, o->an) && (r->versions & AN_V(rs->st->version));
			tests++;
			if (!applies) {
				skipped++;
				continue;
			}
			for (size_t j = 0; j < rs->nfindings; j++) {
				if (rs->findings[j].rule == r && !o->fail_never &&
				    rs->findings[j].sev >= o->fail_on) {
					failures++;
					break;
				}
			}
		}
		fprintf(f, "  <testsuite name=\"session %lld\" tests=\"%zu\" failures=\"%zu\" "
			   "errors=\"0\" skipped=\"%zu\">\n",
			(long long)rs->session, tests, failures, skipped);
		fprintf(f, "    <properties><property name=\"revision\" value=\"%s\"/>"
			   "<property name=\"revision_source\" value=\"%s\"/></properties>\n",
			an_version_name(rs->st->version), rs->st->version_source);
		for (size_t i = 0; i < nrules; i++) {
			const struct an_rule *r = rules[i];
			int applies = rule_enabled(r, o->an) && (r->versions & AN_V(rs->st->version));
			int failed = 0, other = 0;
			fprintf(f, "    <testcase classname=\"mcptap.session%lld\" name=\"%s: ",
				(long long)rs->session, r->id);
			xml_text(f, r->summary);
			fputs("\">", f);
			if (!applies) {
				fprintf(f, "<skipped message=\"%s\"/>",
					!r->check ? "not observable apart from another rule"
					: !rule_enabled(r, o->an) ? "not selected"
					: "not part of this revision");
				fputs("</testcase>\n", f);
				continue;
			}
			for (size_t j = 0; j < rs->nfindings; j++) {
				const struct an_finding *fd = &rs->findings[j];
				if (fd->rule != r)
					continue;
				if (!o->fail_never && fd->sev >= o->fail_on)
					failed++;
				else
					other++;
			}
			if (failed) {
				fprintf(f, "\n      <failure type=\"%s\" message=\"%d finding%s\">", r->id,
					failed, failed == 1 ? "" : "s");
				for (size_t j = 0; j < rs->nfindings; j++) {
					const struct an_finding *fd = &rs->findings[j];
					if (fd->rule == r && !o->fail_never && fd->sev >= o->fail_on)
						junit_finding(f, (long long)rs->session, fd);
				}
				fputs("</failure>\n    ", f);
			}
			if (other) {
				fputs("<system-out>", f);
				for (size_t j = 0; j < rs->nfindings; j++) {
					const struct an_finding *fd = &rs->findings[j];
					if (fd->rule == r && (o->fail_never || fd->sev < o->fail_on))
						junit_finding(f, (long long)rs->session, fd);
				}
				fputs("</system-out>", f);
			}
			fputs("</testcase>\n", f);
		}
		fputs("  </testsuite>\n", f);
	}
	fputs("</testsuites>\n", f);
}
