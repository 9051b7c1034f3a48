#!/bin/sh
# The conformance suite through the HTTP tap: the pinned
# @modelcontextprotocol/conformance (tests/node/conformance.mjs runs its CLI)
# runs every server scenario (--suite all: the active ones and the pending
# ones) against server-everything in streamableHttp mode, first directly, then
# through the tap in front of the same server. The verdicts (each scenario's
# checks, INFO ones aside, with their status) are the same scenario by
# scenario; many scenarios fail against server-everything itself (they call
# test tools, prompts and resources it does not have), which is not asserted,
# only the equality, but for one check that the tap makes pass: listening on
# loopback, it refuses a request for a Host that is not a loopback name (a DNS
# rebinding: dns-rebinding-protection's localhost-host-rebinding-rejected),
# which server-everything accepts; through the tap that check succeeds, and
# the tap says once on stderr why. Then the capture: the tap exits 0 on SIGINT, it holds one
# session for each MCP session the server opened during that run (named by
# the ids the server logged), one initialize in each, and no exchange left
# without an outcome. Last, the HTTP mock of that capture (replay --as server
# --listen -s all: each live session a run of the recorded one its client
# picks) in place of the server: the suite's verdicts are those it gave
# through the tap, scenario by scenario (the rebinding check included: the
# mock refuses it as the tap does, with the same shared check), and the mock
# answers every request from the recording.
#
# Not run: --spec-version 2026-07-28 (this version of the suite knows
# 2025-03-26, 2025-06-18, 2025-11-25, draft and extension only, and has no
# server scenario for draft).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/conformance

# The scenarios this suite version runs with --suite all (32 in 0.1.16): a run
# with fewer did not run them all.
MIN_SCENARIOS=32

# suite LABEL URL: every server scenario against URL; checks.json of each in
# $T/LABEL/server-SCENARIO-TIMESTAMP/, output in $T/LABEL.out. The suite exits
# 1 when a scenario fails, which they do against server-everything.
suite() {
	(cd "$T" && timeout 60 node "$NODEDIR/conformance.mjs" server --url "$2" --suite all \
		-o "$T/$1") > "$T/$1.out" 2>&1
	_rc=$?
	[ $_rc -le 1 ] || { sed 's/^/# /' "$T/$1.out" | tail -20; return 1; }
	return 0
}

# verdicts LABEL: one line per scenario, in name order, "SCENARIO: CHECK=STATUS ..."
# (its checks in id order, the INFO ones left out); to $T/LABEL.verdicts.
verdicts() {
	node -e '
const fs = require("fs"), path = require("path"), dir = process.argv[1];
const out = [];
for (const d of fs.readdirSync(dir)) {
	const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
	if (!m) throw new Error("unexpected results folder " + d);
	const checks = JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8"));
	const v = checks.filter((c) => c.status !== "INFO").map((c) => c.id + "=" + c.status).sort();
	out.push(m[1] + ": " + (v.length ? v.join(" ") : "(no checks)"));
}
out.sort();
console.log(out.join("\n"));' "$T/$1" > "$T/$1.verdicts"
}

# The server's sessions, as it logs them, one id a line.
server_sessions() {
	sed -n 's/^Session initialized with ID: //p' "$T/everything-streamableHttp-$port.log"
}

port=$(free_port)
start_everything streamableHttp "$port"

# 1. Directly.
suite direct "http://127.0.0.1:$port/mcp"
check_eq "the suite ran against server-everything directly" 0 $?
verdicts direct
check_eq "every results folder has its checks" 0 $?
n=$(wc -l < "$T/direct.verdicts")
check "at least $MIN_SCENARIOS scenarios ran directly (ran $n)" test "$n" -ge "$MIN_SCENARIOS"
direct_sessions=$(server_sessions | wc -l)
check "the direct run opened sessions ($direct_sessions)" test "$direct_sessions" -ge "$MIN_SCENARIOS"

# 2. Through the tap, in front of the same server.
start_tap "$T/c.db" "http://127.0.0.1:$port"
suite tap "$TAP_URL/mcp"
check_eq "the suite ran through the tap" 0 $?
verdicts tap
check_eq "every results folder has its checks" 0 $?
n=$(wc -l < "$T/tap.verdicts")
check "at least $MIN_SCENARIOS scenarios ran through the tap (ran $n)" test "$n" -ge "$MIN_SCENARIOS"
# (The one check the tap changes, and how.)
rebinding="dns-rebinding-protection: localhost-host-rebinding-rejected=SUCCESS localhost-host-valid-accepted=SUCCESS"
check_eq "the tap refuses a DNS rebinding that server-everything lets in" \
	"dns-rebinding-protection: localhost-host-rebinding-rejected=FAILURE localhost-host-valid-accepted=SUCCESS|$rebinding" \
	"$(grep '^dns-rebinding-protection:' "$T/direct.verdicts")|$(grep '^dns-rebinding-protection:' "$T/tap.verdicts")"
sed -i "s/^dns-rebinding-protection:.*/$rebinding/" "$T/direct.verdicts"
same_verdicts() {
	cmp -s "$T/direct.verdicts" "$T/tap.verdicts" && return 0
	echo "# directly:"
	sed 's/^/#   /' "$T/direct.verdicts"
	echo "# through the tap:"
	sed 's/^/#   /' "$T/tap.verdicts"
	diff "$T/direct.verdicts" "$T/tap.verdicts" | sed 's/^/# /'
	return 1
}
check "the same verdicts, scenario by scenario, through the tap as directly (but that one)" same_verdicts
check_eq "the suite's summary lines are the same, but that one scenario's" \
	"$(sed -n '/=== SUMMARY ===/,/^$/p' "$T/direct.out" | sed 's/^✗ dns-rebinding-protection: 1 passed, 1 failed$/✓ dns-rebinding-protection: 2 passed, 0 failed/')" \
	"$(sed -n '/=== SUMMARY ===/,/^$/p' "$T/tap.out")"
totals() { sed -n 's/^Total: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$1"; }
set -- $(totals "$T/direct.out")
check_eq "and the totals: one check more passed" "$(($1 + 1)) $(($2 - 1))" "$(totals "$T/tap.out")"
stop_tap INT
check_eq "SIGINT: the tap exits 0" 0 "$TAP_STATUS"
check_eq "the tap said where it listened, and once why it refused the rebinding" \
	"mcptap: warning: refused a request for Host 'evil.example.com' (the tap listens on loopback: a DNS rebinding?); --allow-host NAME lets a name in" \
	"$(sed 1d "$TAP_ERR")"

# 3. The capture.
server_sessions | tail -n +"$((direct_sessions + 1))" | sort > "$T/server.sessions"
sql "$T/c.db" "select http_session_id from session order by 1" | sort > "$T/stored.sessions"
m=$(wc -l < "$T/server.sessions")
check_eq "the suite opened as many sessions through the tap as directly, but the refused rebinding's" "$((direct_sessions - 1))" "$m"
check "one stored session for each session the server opened, named by its id" \
	cmp "$T/server.sessions" "$T/stored.sessions"
check_eq "each session holds one initialize, answered" "$m|$m|$m" \
	"$(sql "$T/c.db" "select count(distinct session), count(*), sum((select count(*) from message r where r.session = m.session and r.request_seq = m.seq and r.kind = 'response')) from message m where dir = 'c2s' and method = 'initialize'")"
check_eq "every session names the suite's client and the server" "$m" \
	"$(sql "$T/c.db" "select count(*) from session where client_name like 'conformance-%' and server_name = 'mcp-servers/everything' and transport = 'http'")"
check_eq "no exchange without an outcome" 0 \
	"$(sql "$T/c.db" "select count(*) from http_exchange where outcome is null")"
check_eq "every exchange complete but the GET streams, which the clients closed, and the rebinding refused" \
	"complete|403 refused 1" \
	"$(sql "$T/c.db" "select group_concat(distinct outcome) from http_exchange where method != 'GET' and outcome != 'refused'")|$(sql "$T/c.db" "select status || ' ' || outcome || ' ' || count(*) from http_exchange where outcome = 'refused'")"
check_eq "no message stored as invalid" 0 \
	"$(sql "$T/c.db" "select count(*) from message where kind in ('invalid', 'notjsonrpc')")"
stop_everything

# 4. The mock of the capture, every session of it, in place of the server.
start_mock "$T/c.db" -s all --report "$T/mock.report"
check "the mock of the capture listens" test -n "$MOCK_URL"
suite mock "$MOCK_URL"
check_eq "the suite ran against the mock" 0 $?
verdicts mock
check_eq "every results folder has its checks" 0 $?
same_as_tap() {
	cmp -s "$T/tap.verdicts" "$T/mock.verdicts" && return 0
	diff "$T/tap.verdicts" "$T/mock.verdicts" | sed 's/^/# /'
	return 1
}
check "the same verdicts against the mock as through the tap, scenario by scenario" same_as_tap
check_eq "and the same totals" "$(totals "$T/tap.out")" "$(totals "$T/mock.out")"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"
check_eq "a run for each live session (not the refused rebinding's), no miss, every recorded request asked for" \
	"$m true 0 0" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
console.log(r.runs, r.ok, r.sessions.reduce((a, s) => a + s.missed, 0), r.sessions.reduce((a, s) => a + s.unused_count, 0))' "$T/mock.report")"

finish
