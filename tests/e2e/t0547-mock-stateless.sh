#!/bin/sh
# The HTTP mock of a 2026-07-28 (stateless) recording is served statelessly:
# the scripted upstream of tests/node/http-faults.mjs ("stateless": two
# clients, agent-a and agent-b, two tools/call each with equal ids, and a
# subscriptions/listen), recorded through the HTTP tap (a session per client,
# by the clientInfo in _meta), then `replay --as server --listen -s all`: the
# recorded requests POSTed again with no session id get the recorded answers,
# each client from its own recorded session; no Mcp-Session-Id is minted; GET
# and DELETE get 405.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

RAW=$NODEDIR/raw-mcp.mjs

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
start_tap "$T/v.db" "http://127.0.0.1:$port"
timeout 60 node "$NODEDIR/http-faults.mjs" --upstream-port "$port" --tap "$TAP_URL" stateless > "$T/rec.out" 2>&1
check_eq "recorded the stateless clients through the tap" 0 $?
stop_tap INT
# (The clients call at once, on four connections: which session the tap made
# first is the scheduler's, so they are listed by name.)
check_eq "two sessions, one per client (named by its _meta clientInfo), no initialize in either" "2|0|agent-a 1.0 2026-07-28,agent-b 1.0 2026-07-28" \
	"$(sql "$T/v.db" "select count(*), (select count(*) from message where method = 'initialize'), group_concat(client_name || ' ' || client_version || ' ' || protocol_version, ',') from (select * from session order by client_name)")"

start_mock "$T/v.db" -s all --report "$T/mock.report"
check "the mock listens on the recorded endpoint" sh -c "echo '$MOCK_URL' | grep -q '/v26$'"

# The recorded tools/call requests of each client, POSTed again (as the recorded
# client did: no session id), in the order recorded; the answers as recorded, in
# the order of their requests (the two calls were recorded at once, on two
# connections: the server may have answered the second first).
acc='{"accept":"application/json, text/event-stream"}'
for who in agent-a agent-b; do
	sql "$T/v.db" "select cast(raw as text) from message where dir = 'c2s' and method = 'tools/call' and session = (select id from session where client_name = '$who') order by seq" > "$T/$who.sent"
	node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
console.log(JSON.stringify(lines.map((l) => ({ method: "POST", body: l, headers: JSON.parse(process.argv[2]) }))));' "$T/$who.sent" "$acc" > "$T/$who.script"
	node "$RAW" "$MOCK_URL" "$(cat "$T/$who.script")" > "$T/$who.got"
	check_eq "$who: its two calls answered" "0 2" "$? $(wc -l < "$T/$who.got")"
	check_eq "$who: 200 and JSON each, no session id minted" "200 application/json - 200 application/json -" \
		"$(node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")) { const r = JSON.parse(l); process.stdout.write(r.status + " " + r.headers["content-type"] + " " + (r.headers["mcp-session-id"] || "-") + " "); }' "$T/$who.got" | sed 's/ $//')"
	check_eq "$who: the answers are the recorded ones, under the live ids" \
		"$(sql "$T/v.db" "select cast(raw as text) from message where dir = 's2c' and kind = 'response' and session = (select id from session where client_name = '$who') order by request_seq")" \
		"$(node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")) console.log(JSON.parse(l).body)' "$T/$who.got")"
done
got=$(node "$RAW" "$MOCK_URL" '[{"method":"GET","headers":{"accept":"text/event-stream"}},{"method":"DELETE"}]')
check_eq "GET and DELETE: 405 each (no sessions on a stateless server)" "405 405" \
	"$(printf '%s\n' "$got" | node -e 'let t = ""; process.stdin.on("data", (d) => (t += d)).on("end", () => console.log(t.trim().split("\n").map((l) => JSON.parse(l).status).join(" ")))')"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"
check_eq "two runs, one per client, each of its own recorded session, no miss" "2 true 0" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
console.log(r.runs, r.ok, r.sessions.reduce((a, s) => a + s.missed, 0))' "$T/mock.report")"
check_eq "each run's client as recorded" "agent-a agent-b" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
console.log(r.sessions.map((s) => s.session).sort().map((id) => id === 1 ? "agent-a" : "agent-b").join(" "))' "$T/mock.report")"

finish
