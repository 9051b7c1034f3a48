#!/bin/sh
# The conformance suite through the HTTP tap, and held against the analyzer.
# The pinned @modelcontextprotocol/conformance (tests/node/conformance.mjs runs
# its CLI) runs the server scenarios of its frozen requirement sets 2025-11-25
# and 2026-07-28 (--requirements) against server-everything in streamableHttp
# mode, first directly, then through the tap in front of the same server.
#
# 1. The suite's verdicts (each scenario's checks, INFO ones aside, with their
#    status) are the same scenario by scenario directly and through the tap,
#    but for one check that the tap makes pass: listening on loopback, it
#    refuses a request for a Host that is not a loopback name (a DNS
#    rebinding: localhost-host-rebinding-rejected), which server-everything
#    accepts in 2025-11-25; the tap says once on stderr why.
# 2. The capture: the tap exits 0 on SIGINT, one stored session for each MCP
#    session the server opened, one initialize in each, no exchange left
#    without an outcome, no message stored as invalid.
# 3. The suite against the analyzer (tests/node/conformance-agree.mjs): for
#    every check the suite fails, the analyzer reports an error in the same
#    scenario (the table below names the rule), or the table says why nothing
#    on the wire breaks a rule; for every error the analyzer reports, the suite
#    fails a check there too, or the table quotes the spec. A failure or an
#    error the table does not explain, and a line of it that matches nothing,
#    fail the test: a new difference is looked at, not let through.
# 4. The HTTP mock of the capture (replay --as server --listen -s all) in place
#    of the server for 2025-11-25: the suite's verdicts are those it gave
#    through the tap (but two known differences, asserted), and the mock
#    answers every request from the recording.
#    (Not 2026-07-28: its requests carry ids made from the clock, which no
#    recording holds again.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/conformance
REVS="2025-11-25 2026-07-28"

# The agreements and known differences (format: tests/node/conformance-agree.mjs).
cat > "$T/table" <<'TABLE'
# 2025-11-25. server-everything has none of the suite's test fixtures (tools,
# prompts and resources named test_*): the suite's calls for them fail, and
# server-everything's answers to them break no rule.
suite 2025-11-25 completion-complete completion-complete -- no prompt test_prompt_with_arguments to complete: its -32602 is the spec's answer
suite 2025-11-25 prompts-get-* prompts-get-* -- none of the test_* prompts: -32602 for an unknown prompt is the spec's answer
suite 2025-11-25 resources-*read* resources-*read* -- no test:// resources: its -32602 "not found" is allowed (RES-011 warns that 2025-11-25 says -32002)
suite 2025-11-25 tools-call-* tools-call-* -- none of the test_* tools it calls (image, audio, logging, progress, sampling, elicitation): an unknown tool's answer is the server's to choose
suite 2025-11-25 elicitation-sep* elicitation-sep*-general -- the test_* tool that would elicit is not there
suite 2025-11-25 json-schema-2020-12 json-schema-2020-12-tool-found -- no json_schema_2020_12_tool
suite 2025-11-25 server-sse-polling incoming-sse-event -- the suite's polling tool is not there ("Tool call failed")
# A real fault of server-everything: a terminated session's id gets 400.
agree 2025-11-25 server-session-lifecycle server-session-terminated-returns-404 HTTP-026
# The suite's own client breaks a rule on purpose (or does not care).
analyzer? 2025-11-25 * HTTP-026 -- in some runs the SDK client's GET stream comes back after its DELETE, and server-everything answers it 400; transports.mdx: a request with the id of a terminated session gets "404 Not Found"
analyzer 2025-11-25 server-initialize LIFE-004 -- its client stops after initialize; lifecycle.mdx: "After successful initialization, the client MUST send an initialized notification"

# 2026-07-28. server-everything has no 2026-07-28: it answers every request
# with HTTP 400 and "-32000 Bad Request: Server not initialized", its id null.
agree 2026-07-28 * wire-schema-valid RPC-012 ~JSONRPCErrorResponse/id
agree 2026-07-28 server-stateless sep-2575-http-server-error-jsonrpc-id RPC-012
agree 2026-07-28 * * RPC-012 ~Server not initialized
agree 2026-07-28 server-stateless sep-2575-server-unsupported-version-error V26-002
agree 2026-07-28 server-stateless sep-2575-request-meta-invalid-* V26-001
agree 2026-07-28 server-stateless sep-2575-http-server-method-not-found-404* V26-008
agree 2026-07-28 tasks-dispatch-and-envelope *removed* V26-008
# (the exchange whose headers disagree: the analyzer names the suite's mismatch, the suite the -32000 where -32020 is due)
agree 2026-07-28 server-stateless sep-2575-http-server-header-mismatch-400 V26-008
agree 2026-07-28 tasks-request-headers tasks-headers-reject-mismatched-method V26-008
# (the answer the check looked at is the -32000 error with a null id)
agree 2026-07-28 server-stateless sep-2575-server-implements-discover RPC-012
agree 2026-07-28 server-stateless sep-2575-server-sends-subscription-ack RPC-012
agree 2026-07-28 server-sse-multiple-streams server-accepts-multiple-post-streams RPC-012
agree 2026-07-28 dns-rebinding-protection localhost-host-valid-accepted RPC-012
agree 2026-07-28 * * RPC-012 ~got -32000|error code -32000
agree 2026-07-28 input-required-result-multi-round sep-2322-multi-round-r1 RPC-012
agree 2026-07-28 tasks-capability-negotiation scenario-run RPC-012
suite 2026-07-28 * * ~^(Not testable|Check was not observed|Prerequisite failed|routing-task fixture) -- a check the suite could not run once an earlier step failed
suite 2026-07-28 server-stateless sep-2575-server-declares-prompts-in-discover -- read from server/discover's answer, which was an error: nothing more on the wire
suite 2026-07-28 server-stateless sep-2575-discover-capabilities-match-handlers -- read from server/discover's answer, which was an error: nothing more on the wire
suite 2026-07-28 server-stateless sep-2575-server-tags-subscription-id -- no subscription stream was opened, so no frame to tag
suite 2026-07-28 caching sep-2549-* ~^no endpoints returned -- no list returned a result, so there is no ttlMs or cacheScope to check (V26-013 checks results)
analyzer 2026-07-28 server-stateless LIFE-002 -- its probe of the removed initialize sends _meta only; an initialize selects 2025-11-25 (V26-014), whose lifecycle.mdx requires protocolVersion, capabilities and clientInfo
analyzer 2026-07-28 input-required-result-validate-input RPC-012 -- the suite passes this scenario on the -32000 answers it gets (it expects an error) without looking at their null id; SEP-2575: every error response carries the request's id
TABLE

# suite LABEL REV URL: the scenarios REV requires against URL; checks.json of
# each in $T/LABEL/server-SCENARIO-TIMESTAMP/, output in $T/LABEL.out. The
# suite exits 1 when a scenario fails, which they do against server-everything.
suite() {
	(cd "$T" && timeout 120 node "$NODEDIR/conformance.mjs" server --url "$3" \
		--requirements "$2" -o "$T/$1") > "$T/$1.out" 2>&1
	_rc=$?
	[ $_rc -le 1 ] || { sed 's/^/# /' "$T/$1.out" | tail -20; return 1; }
	return 0
}

# verdicts LABEL: one line per scenario, in name order, "SCENARIO: CHECK=STATUS ..."
# (its checks in id order, the INFO ones left out; "(stopped)" for a scenario
# that threw before writing its checks); to $T/LABEL.verdicts.
verdicts() {
	node -e '
const fs = require("fs"), path = require("path"), dir = process.argv[1];
const out = [];
for (const d of fs.readdirSync(dir)) {
	const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
	if (!m) throw new Error("unexpected results folder " + d);
	const f = path.join(dir, d, "checks.json");
	if (!fs.existsSync(f)) { out.push(m[1] + ": (stopped)"); continue; }
	const v = JSON.parse(fs.readFileSync(f, "utf8")).filter((c) => c.status !== "INFO")
		.map((c) => c.id + "=" + c.status).sort();
	out.push(m[1] + ": " + (v.length ? v.join(" ") : "(no checks)"));
}
out.sort();
console.log(out.join("\n"));' "$T/$1" > "$T/$1.verdicts"
}

# scenarios LABEL: how many scenarios the suite's summary lists.
scenarios() { sed -n '/=== SUMMARY ===/,/^Total:/p' "$T/$1.out" | grep -c '^[✓✗] '; }

# The server's sessions, as it logs them, one id a line.
server_sessions() {
	sed -n 's/^Session initialized with ID: //p' "$T/everything-streamableHttp-$port.log"
}

port=$(free_port)
start_everything streamableHttp "$port"

# 1. Directly, then through the tap.
for rev in $REVS; do
	suite "direct-$rev" "$rev" "http://127.0.0.1:$port/mcp"
	check_eq "$rev: the suite ran against server-everything directly" 0 $?
	verdicts "direct-$rev"
	check_eq "$rev: every results folder is read" 0 $?
	check_eq "$rev: a results folder for each scenario of the summary" "$(scenarios "direct-$rev")" \
		"$(wc -l < "$T/direct-$rev.verdicts")"
done
check "2025-11-25 requires more than 30 scenarios, 2026-07-28 more than 40" \
	test "$(wc -l < "$T/direct-2025-11-25.verdicts")" -gt 30 -a "$(wc -l < "$T/direct-2026-07-28.verdicts")" -gt 40
direct_sessions=$(server_sessions | wc -l)

start_tap "$T/c.db" "http://127.0.0.1:$port"
for rev in $REVS; do
	suite "tap-$rev" "$rev" "$TAP_URL/mcp"
	check_eq "$rev: the suite ran through the tap" 0 $?
	verdicts "tap-$rev"
	check_eq "$rev: every results folder is read" 0 $?
	check_eq "$rev: as many scenarios through the tap as directly" "$(wc -l < "$T/direct-$rev.verdicts")" \
		"$(wc -l < "$T/tap-$rev.verdicts")"
done
check_eq "2025-11-25: the tap refuses a DNS rebinding that server-everything lets in" \
	"dns-rebinding-protection: localhost-host-rebinding-rejected=FAILURE localhost-host-valid-accepted=SUCCESS|dns-rebinding-protection: localhost-host-rebinding-rejected=SUCCESS localhost-host-valid-accepted=SUCCESS" \
	"$(grep '^dns-rebinding-protection:' "$T/direct-2025-11-25.verdicts")|$(grep '^dns-rebinding-protection:' "$T/tap-2025-11-25.verdicts")"
check_eq "2026-07-28: server-everything refuses the rebinding too (and the valid Host: it has no 2026-07-28)" \
	"dns-rebinding-protection: localhost-host-rebinding-rejected=SUCCESS localhost-host-valid-accepted=FAILURE" \
	"$(grep '^dns-rebinding-protection:' "$T/direct-2026-07-28.verdicts")"
sed -i 's/localhost-host-rebinding-rejected=FAILURE/localhost-host-rebinding-rejected=SUCCESS/' "$T/direct-2025-11-25.verdicts"
same_verdicts() {
	cmp -s "$T/direct-$1.verdicts" "$T/tap-$1.verdicts" && return 0
	diff "$T/direct-$1.verdicts" "$T/tap-$1.verdicts" | sed 's/^/# /'
	return 1
}
totals() { sed -n 's/^Total: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$T/$1.out"; }
for rev in $REVS; do
	check "$rev: the same verdicts, scenario by scenario, through the tap as directly (but the rebinding)" \
		same_verdicts "$rev"
done
set -- $(totals direct-2025-11-25)
check_eq "2025-11-25: and the totals, one check more passed" "$(($1 + 1)) $(($2 - 1))" "$(totals tap-2025-11-25)"
check_eq "2026-07-28: and the same totals" "$(totals direct-2026-07-28)" "$(totals tap-2026-07-28)"
stop_tap INT
check_eq "SIGINT: the tap exits 0" 0 "$TAP_STATUS"
check_eq "the tap said where it listened, and once why it refused the rebindings" \
	"mcptap: warning: refused a request for Host 'evil.example.com' (the tap listens on loopback: a DNS rebinding?); --allow-host NAME lets a name in" \
	"$(sed 1d "$TAP_ERR")"

# 2. The capture.
server_sessions | tail -n +"$((direct_sessions + 1))" | sort > "$T/server.sessions"
sql "$T/c.db" "select http_session_id from session where http_session_id is not null order by 1" |
	sort > "$T/stored.sessions"
m=$(wc -l < "$T/server.sessions")
check "the server opened sessions through the tap ($m)" test "$m" -gt 30
check "one stored session for each session the server opened, named by its id" \
	cmp "$T/server.sessions" "$T/stored.sessions"
check_eq "each holds one initialize, answered" "$m|$m|$m" \
	"$(sql "$T/c.db" "select count(distinct m.session), count(*), sum((select count(*) from message r where r.session = m.session and r.request_seq = m.seq and r.kind = 'response')) from message m join session s on s.id = m.session where s.http_session_id is not null and m.dir = 'c2s' and m.method = 'initialize'")"
check_eq "no exchange without an outcome" 0 \
	"$(sql "$T/c.db" "select count(*) from http_exchange where outcome is null")"
check_eq "the rebinding probes refused by the tap, with a 403: one per revision" "403 refused 2" \
	"$(sql "$T/c.db" "select status || ' ' || outcome || ' ' || count(*) from http_exchange where outcome = 'refused'")"
check_eq "no message stored as invalid" 0 \
	"$(sql "$T/c.db" "select count(*) from message where kind in ('invalid', 'notjsonrpc')")"
stop_everything

# 3. The suite against the analyzer.
"$MCPTAP" analyze -r "$T/c.db" --no-store --fail-on never -T json > "$T/findings.json" 2> "$T/analyze.err"
check_eq "analyze reads the capture" 0 $?
sql "$T/c.db" "select session, seq, wall from message union all select session, seq, wall from http_exchange" > "$T/times"
node "$NODEDIR/conformance-agree.mjs" "$T/table" "$T/times" "$T/findings.json" \
	"2025-11-25=$T/tap-2025-11-25" "2026-07-28=$T/tap-2026-07-28" > "$T/agree.out" 2>&1
rc=$?
grep '^PROBLEM ' "$T/agree.out" | sed 's/^/# /'
check_eq "every failure of the suite and every error of the analyzer explained by the table, and every line of it used" 0 $rc
echo "# $(grep '^summary: ' "$T/agree.out")"
check "the analyzer agrees with more than 100 of the suite's failures" \
	test "$(sed -n 's/^summary: \([0-9]*\) suite failures the analyzer agrees with.*/\1/p' "$T/agree.out")" -gt 100

# 4. The mock of the capture (2025-11-25), every session of it, in place of the server.
start_mock "$T/c.db" -s all --report "$T/mock.report"
check "the mock of the capture listens" test -n "$MOCK_URL"
suite mock-2025-11-25 2025-11-25 "$MOCK_URL"
check_eq "the suite ran against the mock" 0 $?
verdicts mock-2025-11-25
same_as_tap() {
	cmp -s "$T/tap-2025-11-25.verdicts" "$T/mock-2025-11-25.verdicts" && return 0
	diff "$T/tap-2025-11-25.verdicts" "$T/mock-2025-11-25.verdicts" | sed 's/^/# /'
	return 1
}
# Two known differences, each asserted: the mock's own HTTP session layer
# answers a terminated session's id with 404 as the spec says (the recorded
# server said 400: a status, not a message the mock replays), and the mock
# sends no SSE priming event (an event without data, which no stored message
# holds).
check_eq "the mock: 404 for a terminated session, and no priming event" \
	"server-session-terminated-returns-404=FAILURE server-sse-priming-event=SUCCESS|server-session-terminated-returns-404=SUCCESS server-sse-priming-event=WARNING" \
	"$(grep -o 'server-session-terminated-returns-404=[A-Z]*\|server-sse-priming-event=[A-Z]*' "$T/tap-2025-11-25.verdicts" | tr '\n' ' ' | sed 's/ $//')|$(grep -o 'server-session-terminated-returns-404=[A-Z]*\|server-sse-priming-event=[A-Z]*' "$T/mock-2025-11-25.verdicts" | tr '\n' ' ' | sed 's/ $//')"
sed -i 's/server-session-terminated-returns-404=SUCCESS/server-session-terminated-returns-404=FAILURE/; s/server-sse-priming-event=WARNING/server-sse-priming-event=SUCCESS/' \
	"$T/mock-2025-11-25.verdicts"
check "but those, the same verdicts against the mock as through the tap, scenario by scenario" same_as_tap
set -- $(totals tap-2025-11-25)
check_eq "and the totals: one failure fewer" "$1 $(($2 - 1))" "$(totals mock-2025-11-25)"
# A 2026-07-28 request beside those sessions (no initialize, no session id) is
# served statelessly, from the stateless part of the capture: the recorded
# answer to the suite's first tools/list.
sql "$T/c.db" "select m.raw from message m join session s on s.id = m.session where s.http_session_id is null and m.dir = 'c2s' and m.method = 'tools/list' order by m.session, m.seq limit 1" > "$T/v26.req"
curl -s -X POST "$MOCK_URL" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' --data-binary @"$T/v26.req" > "$T/v26.resp"
check_eq "a 2026-07-28 request gets the recorded answer, statelessly" \
	'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}' \
	"$(sed -n 's/^data: //p' "$T/v26.resp")$(grep -v '^data: \|^event: \|^id: \|^$' "$T/v26.resp")"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
console.log(r.runs, r.ok, r.sessions.reduce((a, s) => a + s.missed, 0))' "$T/mock.report" > "$T/mock.sum"
check_eq "a run for each live session (and the 2026-07-28 request's), none missed" "$((m + 1)) true 0" "$(cat "$T/mock.sum")"

finish
