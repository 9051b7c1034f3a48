#!/bin/sh
# The mock server over HTTP (replay --as server --listen) with the official SDK
# client (tests/node/http-client.mjs, its full flow: progress, sampling,
# elicitation, tasks, cancellation, roots, DELETE):
#   1. against the mock of its own Streamable HTTP recording (made through the
#      HTTP tap in front of server-everything): every step passes, the 4
#      progress notifications of the progress call included, every answer is
#      the recorded one, and the report counts exactly what the client sent;
#   2. the same client against the HTTP mock of a stdio recording of the same
#      flow, and over stdio against the stdio mock of the HTTP recording;
#   3. over legacy HTTP+SSE against the mock of a legacy recording;
#   4. 50 clients at once against one mock, each its own session and run;
#   5. each run stored in the capture file as a server run.
# e2e: long
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
CLIENT=$NODEDIR/http-client.mjs
EVERYTHING=$NODEDIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js

# The number of requests a client log holds (the after-delete ping aside: the mock
# refuses it before the recording is asked).
nreq() {
	node -e '
const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
console.log(l.filter((r) => r.dir === "c2s" && r.message.method && r.message.id !== undefined && r.message.id !== "after-delete").length)' "$1"
}

# 1. Streamable HTTP: record the full flow through the tap, then the mock of it.
port=$(free_port)
start_everything streamableHttp "$port"
start_tap "$T/h.db" "http://127.0.0.1:$port"
timeout 100 node "$CLIENT" --transport http --log "$T/rec.jsonl" "$TAP_URL/mcp" > "$T/rec.out" 2>&1
check_eq "recorded the full flow through the tap" 0 $?
stop_tap INT
stop_everything
n=$(nreq "$T/rec.jsonl")
check_eq "it sent 20 requests" 20 "$n"

start_mock "$T/h.db" --report "$T/h.report"
check_eq "the mock serves the recording's endpoint" "/mcp" "${MOCK_URL##*[0-9]}"
timeout 100 node "$CLIENT" --transport http --deleted-status 404 --log "$T/mock.jsonl" "$MOCK_URL" > "$T/mock.out" 2>&1
check_eq "the SDK client against the mock: exit 0" 0 $?
grep '^not ok' "$T/mock.out"
check_eq "all 18 steps pass (the deleted session's id: 404)" 18 "$(grep -c '^ok - ' "$T/mock.out")"
check "the progress call got its 4 notifications" grep -q '^ok - tools/call trigger-long-running-operation with progress (4 notifications)$' "$T/mock.out"
check "every answer is the recorded one" same_results "$T/rec.jsonl" "$T/mock.jsonl"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"
check "its report: one run, 20 requests answered, no miss, the after-delete ping unused" \
	report_is "$T/h.report" 1 20 1
check_eq "the run stored as a server run, ended by the DELETE: 20 answered, no miss, 1 unused" \
	"server|deleted|20|0|1" \
	"$(sql "$T/h.db" "select mode, json_extract(summary, '\$.ended'), passed, differed, missing from replay_run order by id desc limit 1")"
check_eq "the mock said where it listened (the other transport too), and nothing else (no miss, no --strict)" \
	"mcptap: replay: the mock server listens on $MOCK_URL
mcptap: replay: the mock server listens also on ${MOCK_URL%/mcp}/sse (the legacy HTTP+SSE transport)" "$(cat "$MOCK_ERR")"

# 1b. The same HTTP recording served on stdio, to the same flow over stdio.
timeout 100 node "$CLIENT" --transport stdio --log "$T/hstdio.jsonl" -- \
	"$MCPTAP" replay -r "$T/h.db" --as server --report "$T/hstdio.report" > "$T/hstdio.out" 2> "$T/hstdio.err"
check_eq "the SDK client over stdio against the stdio mock of the HTTP recording: exit 0" 0 $?
grep '^not ok' "$T/hstdio.out"
check_eq "all 16 steps pass" 16 "$(grep -c '^ok - ' "$T/hstdio.out")"
check "every answer is the recorded one" same_results "$T/rec.jsonl" "$T/hstdio.jsonl"
check_eq "its report: 20 requests answered, no miss; the DELETE's ping never asked for" "20 20 0 1 true" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(r.requests, r.answered, r.missed, r.unused_count, r.ok)' "$T/hstdio.report")"

# 2. A stdio recording of the same flow, served over HTTP.
timeout 100 node "$CLIENT" --transport stdio --log "$T/srec.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$EVERYTHING" stdio > "$T/srec.out" 2> "$T/srec.err"
check_eq "recorded the same flow over stdio" 0 $?
start_mock "$T/s.db" --report "$T/s.report"
check_eq "a stdio recording is served on /mcp" "/mcp" "${MOCK_URL##*[0-9]}"
timeout 100 node "$CLIENT" --transport http --deleted-status 404 --log "$T/smock.jsonl" "$MOCK_URL" > "$T/smock.out" 2>&1
check_eq "the SDK client over HTTP against the mock of a stdio recording: exit 0" 0 $?
grep '^not ok' "$T/smock.out"
check_eq "all 18 steps pass" 18 "$(grep -c '^ok - ' "$T/smock.out")"
check "every answer is the recorded one" same_results "$T/srec.jsonl" "$T/smock.jsonl"
stop_mock
check "its report: one run, 20 requests, nothing unused" report_is "$T/s.report" 1 20 0

# 3. Legacy HTTP+SSE.
port=$(free_port)
start_everything sse "$port"
start_tap "$T/l.db" "http://127.0.0.1:$port"
timeout 100 node "$CLIENT" --transport sse --log "$T/lrec.jsonl" "$TAP_URL/sse" > "$T/lrec.out" 2>&1
check_eq "recorded the flow over legacy SSE through the tap" 0 $?
stop_tap INT
stop_everything
start_mock "$T/l.db" --report "$T/l.report"
check_eq "a legacy recording is served on its /sse" "/sse" "${MOCK_URL##*[0-9]}"
timeout 100 node "$CLIENT" --transport sse --log "$T/lmock.jsonl" "$MOCK_URL" > "$T/lmock.out" 2>&1
check_eq "the SDK client over legacy SSE against the mock: exit 0" 0 $?
grep '^not ok' "$T/lmock.out"
check_eq "all 16 steps pass" 16 "$(grep -c '^ok - ' "$T/lmock.out")"
check "every answer is the recorded one" same_results "$T/lrec.jsonl" "$T/lmock.jsonl"
stop_mock
check "its report: one run, 20 requests, nothing unused" report_is "$T/l.report" 1 20 0

# 4. 50 clients at once against one mock of one client's short flow.
port=$(free_port)
start_everything streamableHttp "$port"
start_tap "$T/one.db" "http://127.0.0.1:$port"
timeout 100 node "$CLIENT" --transport http --sessions 1 --log "$T/one.jsonl" "$TAP_URL/mcp" > "$T/one.out" 2>&1
check_eq "recorded one client's short flow" 0 $?
stop_tap INT
stop_everything
start_mock "$T/one.db" --report "$T/many.report"
timeout 100 node "$CLIENT" --transport http --sessions 50 --same-echo --log "$T/many.jsonl" "$MOCK_URL" > "$T/many.out" 2>&1
check_eq "50 clients at once against the mock: exit 0" 0 $?
grep '^not ok' "$T/many.out"
check_eq "each step passed for the 50" 6 "$(grep -c '^ok - .*: 50/50 clients$' "$T/many.out")"
check "50 distinct session ids" grep -q '^ok - 50 distinct session ids$' "$T/many.out"
bad=0
for k in $(seq 1 50); do same_results "$T/one.jsonl.1" "$T/many.jsonl.$k" || bad=$((bad + 1)); done
check_eq "each client got the recorded answers" 0 "$bad"
stop_mock
check "the report: 50 runs of 4 requests, each answered" report_is "$T/many.report" 50 4 0
check_eq "50 server runs stored" 50 "$(sql "$T/one.db" "select count(*) from replay_run where mode = 'server'")"

finish
