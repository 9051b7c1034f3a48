#!/bin/sh
# mcptap analyze and stats from the command line: every format is well formed
# (JSON, SARIF 2.1.0, JUnit XML), exit statuses follow --fail-on, findings are
# stored and queryable, --all/-s/--spec/--rules/--skip-rules do what they say.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load
FIX=$TOP/tests/fixtures/rules

# Session 1: clean (the C peers through the tap); session 2: a client that
# skips the handshake (an error finding).
"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/a.db" -- "$PEERS/mcp-server" 2> /dev/null
check_eq "a clean session recorded" 0 $?
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | "$MCPTAP" record -w "$T/a.db" -- \
	sh -c 'read -r l; echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}"' > /dev/null

"$MCPTAP" analyze -r "$T/a.db" -s 1 > "$T/clean.txt"
check_eq "clean session: exit 0" 0 $?
check "clean session: summary" grep -q "^session 1: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)$" "$T/clean.txt"

"$MCPTAP" analyze -r "$T/a.db" > "$T/bad.txt"
check_eq "newest session by default, with an error: exit 1" 1 $?
check "the finding reads like a compiler's" grep -q "^session 2 #1 c→s tools/list id=1: LIFE-001 error: .* (MCP-RULES §3.1, 2025-11-25)$" "$T/bad.txt"
"$MCPTAP" analyze -r "$T/a.db" --fail-on never > /dev/null
check_eq "--fail-on never: exit 0" 0 $?
"$MCPTAP" analyze -r "$T/a.db" --rules CAP > /dev/null
check_eq "--rules CAP leaves LIFE out: exit 0" 0 $?
"$MCPTAP" analyze -r "$T/a.db" --skip-rules LIFE-001 --fail-on error > "$T/skip.txt"
check "--skip-rules LIFE-001" sh -c "! grep -q LIFE-001 '$T/skip.txt'"
"$MCPTAP" analyze -r "$T/a.db" --rules "CAP,LIFE-0O1" > /dev/null 2> "$T/typo.err"
check_eq "--rules with an item that names no rule: a usage error" 2 $?
check "--rules typo: names the item" grep -q "'LIFE-0O1' names no rule" "$T/typo.err"
"$MCPTAP" analyze -r "$T/a.db" --skip-rules "NOPE" > /dev/null 2>&1
check_eq "--skip-rules with an item that names no rule: a usage error" 2 $?
"$MCPTAP" analyze -r "$T/a.db" --spec 2024-11-05 -T json > "$T/spec.json"
check "--spec sets the revision" grep -q '"spec": "2024-11-05"' "$T/spec.json"
check "--spec is the source" grep -q '"spec_source": "option"' "$T/spec.json"

# --all: both sessions; JSON is one document.
"$MCPTAP" analyze -r "$T/a.db" --all -T json > "$T/all.json"
check_eq "--all: exit 1 (session 2)" 1 $?
check "--all: JSON with two sessions and typed fields" node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
if (r.sessions.length !== 2) process.exit(1);
const f = r.sessions[1].findings.find(x => x.rule === "LIFE-001");
if (!f || f.severity !== "error" || f.seq !== 1 || f.id !== 1 || f.dir !== "c2s" || f.method !== "tools/list") process.exit(2);
if (r.sessions[0].counts.error !== 0) process.exit(3);' "$T/all.json"

# SARIF 2.1.0: the rule table, results located at the line of their message
# in the session's export and, logically, at the session and the message.
"$MCPTAP" analyze -r "$T/a.db" --all -T sarif > "$T/r.sarif"
check "SARIF has version, rules and located results" node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
if (s.version !== "2.1.0" || !s.$schema.includes("sarif-2.1.0")) process.exit(1);
const run = s.runs[0], rules = run.tool.driver.rules;
if (run.tool.driver.name !== "mcptap" || rules.length < 10) process.exit(2);
const res = run.results.find(r => r.ruleId === "LIFE-001");
if (!res || res.level !== "error" || rules[res.ruleIndex].id !== "LIFE-001") process.exit(3);
const loc = res.locations[0];
const pl = loc.physicalLocation;
if (pl.artifactLocation.uri !== "mcptap-session-2.jsonl" || pl.artifactLocation.uriBaseId !== "%SRCROOT%" ||
    run.artifacts[pl.artifactLocation.index].location.uri !== "mcptap-session-2.jsonl" || pl.region.startLine !== 1) process.exit(4);
if (loc.logicalLocations[0].fullyQualifiedName !== "session/2/message/1") process.exit(5);' "$T/r.sarif"

# JUnit XML: well formed, one testcase per rule, the failing rule failed.
"$MCPTAP" analyze -r "$T/a.db" --all -T junit > "$T/r.xml"
check "JUnit XML is well formed" xmllint --noout "$T/r.xml"
nrules=$("$MCPTAP" analyze --list-rules | tail -n +2 | wc -l)
check_eq "JUnit: a testcase per rule per session" $((2 * nrules)) "$(grep -c '<testcase ' "$T/r.xml")"
check "JUnit: LIFE-001 failed in session 2" sh -c "xmllint --xpath 'count(//testsuite[@name=\"session 2\"]/testcase[starts-with(@name,\"LIFE-001:\")]/failure)' '$T/r.xml' | grep -qx 1"
check "JUnit: nothing failed in session 1" sh -c "xmllint --xpath 'count(//testsuite[@name=\"session 1\"]//failure)' '$T/r.xml' | grep -qx 0"

# Stored findings, queryable with SQL.
check "findings stored" test "$(sql "$T/a.db" "select count(*) from finding where rule = 'LIFE-001' and session = 2 and seq = 1")" -ge 1
check_eq "the newest analysis per session in latest_finding" 1 \
	"$(sql "$T/a.db" "select count(*) from latest_finding where session = 2 and rule = 'LIFE-001'")"
"$MCPTAP" analyze -r "$T/a.db" -s 2 --no-store > /dev/null
n1=$(sql "$T/a.db" "select count(*) from analysis")
"$MCPTAP" analyze -r "$T/a.db" -s 2 --no-store > /dev/null
check_eq "--no-store stores nothing" "$n1" "$(sql "$T/a.db" "select count(*) from analysis")"
cp "$T/a.db" "$T/ro.db"
chmod 0444 "$T/ro.db"
if [ "$(id -u)" != 0 ]; then
	"$MCPTAP" analyze -r "$T/ro.db" > /dev/null 2> "$T/ro.err"
	check_eq "a read-only file: analyzed, with a warning" \
		"mcptap: warning: cannot store the findings in '$T/ro.db': Permission denied" "$(cat "$T/ro.err")"
fi

# Errors: 2.
"$MCPTAP" analyze -r "$T/missing.db" 2> /dev/null
check_eq "missing file: 2" 2 $?
"$MCPTAP" analyze -r "$T/a.db" --spec 1999-01-01 2> /dev/null
check_eq "unknown --spec: 2" 2 $?
"$MCPTAP" analyze -r "$T/a.db" --fail-on sometimes 2> /dev/null
check_eq "bad --fail-on: 2" 2 $?
"$MCPTAP" analyze -r "$T/a.db" -T yaml 2> /dev/null
check_eq "unknown format: 2" 2 $?
"$MCPTAP" analyze -r "$T/a.db" -s 1 --all 2> /dev/null
check_eq "-s with --all: 2" 2 $?

# --list-rules: one line per rule, with severity and revisions.
"$MCPTAP" analyze --list-rules > "$T/rules.txt"
check_eq "--list-rules: exit 0" 0 $?
check "--list-rules: LIFE-001 row" grep -q "^LIFE-001 *error *all4 " "$T/rules.txt"

# stats.
"$MCPTAP" stats -r "$T/a.db" -s 1 > "$T/stats.txt"
check_eq "stats: exit 0" 0 $?
check "stats: tools/call row with 4 requests, none failed, cancelled or unanswered" grep -Eq "^c→s  tools/call +4 +0 +0 +0 +0 " "$T/stats.txt"
check "stats: sampling from the server" grep -Eq "^s→c +sampling/createMessage +1 " "$T/stats.txt"
"$MCPTAP" stats -r "$T/a.db" -s 2 -T json > "$T/stats2.json"
check "stats -T json: the unanswered request" node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
const m = s.methods.find(m => m.method === "tools/list");
if (!m || m.requests !== 1 || m.unanswered !== 0 || s.messages.c2s !== 1) process.exit(1);' "$T/stats2.json"

finish
