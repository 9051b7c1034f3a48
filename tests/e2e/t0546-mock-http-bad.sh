#!/bin/sh
# The HTTP mock, byte for byte and against bad input (tests/node/raw-mcp.mjs
# speaks plain HTTP to it): the recorded client requests of one SDK session,
# sent twice as two sessions, get the same statuses, headers and bodies but
# the minted session id; every malformed or misdirected request gets its
# status (400, 404, 405, 406, 413, 415) and the mock goes on; a client that
# leaves in the middle of an SSE stream leaves the others served; --strict
# makes a miss the exit status.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
RAW=$NODEDIR/raw-mcp.mjs

# status LINE: the status of a raw-mcp output line; statuses: those of every line on stdin.
status() { node -e 'console.log(JSON.parse(process.argv[1]).status)' "$1"; }
statuses() {
	node -e 'let t = ""; process.stdin.on("data", (d) => (t += d)).on("end", () =>
	console.log(t.trim().split("\n").map((l) => JSON.parse(l).status).join(" ")))'
}

# The recording: one SDK client's short flow (initialize, tools/list, echo, a
# progress call with 4 notifications on its SSE stream), through the tap.
port=$(free_port)
start_everything streamableHttp "$port"
start_tap "$T/r.db" "http://127.0.0.1:$port"
timeout 100 node "$NODEDIR/http-client.mjs" --transport http --sessions 1 --log "$T/rec.jsonl" "$TAP_URL/mcp" > "$T/rec.out" 2>&1
check_eq "recorded one client's short flow" 0 $?
stop_tap INT
stop_everything

# The script: the client's requests and notifications as recorded (the DELETE
# aside), each POSTed as the SDK does.
sql "$T/r.db" "select cast(raw as text) from message where dir = 'c2s' and kind in ('request', 'notification') order by seq" > "$T/sent"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
const acc = { accept: "application/json, text/event-stream" };
console.log(JSON.stringify(lines.map((l, i) => ({ method: "POST", body: l, headers: acc, session: i > 0 }))));' "$T/sent" > "$T/script"
check_eq "the script: initialize, the notification, 3 requests" 5 "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).length)' "$T/script")"

# 1. The same requests twice: the same bytes, but the session id.
start_mock "$T/r.db" --report "$T/r.report"
node "$RAW" "$MOCK_URL" "$(cat "$T/script")" > "$T/run1"
check_eq "a first session: its 5 exchanges" "0 5" "$? $(wc -l < "$T/run1")"
node "$RAW" "$MOCK_URL" "$(cat "$T/script")" > "$T/run2"
check_eq "a second session" "0 5" "$? $(wc -l < "$T/run2")"
check "the two runs' statuses, headers and bodies are the same (the minted id aside)" cmp "$T/run1" "$T/run2"
check_eq "the statuses: 200, 202, 200, 200, 200" "200 202 200 200 200" "$(statuses < "$T/run1")"
check "initialize's answer names the minted session" \
	sh -c "head -1 '$T/run1' | grep -q '\"mcp-session-id\":\"<minted>\"'"
check "the progress call: an SSE stream of its 4 notifications, then the answer" node -e '
const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)[4];
const ev = l.body;
if (l.headers["content-type"] !== "text/event-stream" || ev.length !== 5) process.exit(1);
for (let i = 0; i < 4; i++) if (JSON.parse(ev[i].data).method !== "notifications/progress") process.exit(2);
if (JSON.parse(ev[4].data).result === undefined) process.exit(3);
if (ev.some((e, i) => e.id !== "4-" + (i + 1))) process.exit(4);' "$T/run1"
check "each answer is the recorded one" node -e '
const fs = require("fs");
const rec = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse).filter((r) => r.dir === "s2c" && !r.message.method).map((r) => JSON.stringify(r.message.result));
const got = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse).filter((r) => r.status === 200)
	.map((r) => Array.isArray(r.body) ? r.body[r.body.length - 1].data : r.body).map((t) => JSON.stringify(JSON.parse(t).result));
if (JSON.stringify(got) !== JSON.stringify(rec)) { console.error(got, rec); process.exit(1); }' "$T/run1" "$T/rec.jsonl.1"

# 2. Bad input: each gets its status, and the mock goes on.
acc='{"accept":"application/json, text/event-stream"}'
init=$(head -1 "$T/sent")
bad() { # bad LABEL STATUS STEP_JSON
	_got=$(node "$RAW" "$MOCK_URL" "[$3]")
	check_eq "$1: $2" "$2" "$(status "$_got")"
}
bad "another path" 404 '{"method":"GET","path":"/elsewhere","headers":{"accept":"text/event-stream"}}'
bad "PUT on the endpoint" 405 "{\"method\":\"PUT\",\"body\":\"{}\",\"headers\":$acc}"
got=$(node "$RAW" "$MOCK_URL" "[{\"method\":\"PUT\",\"body\":\"{}\",\"headers\":$acc}]")
check "and it names the methods allowed" sh -c "printf '%s' '$got' | grep -q '\"allow\":\"GET, POST, DELETE\"'"
bad "a POST that does not accept SSE" 406 "{\"method\":\"POST\",\"body\":$(node -e 'console.log(JSON.stringify(process.argv[1]))' "$init"),\"headers\":{\"accept\":\"application/json\"}}"
bad "a GET that does not accept SSE" 406 '{"method":"GET","headers":{"accept":"application/json"}}'
bad "a body that is not application/json" 415 "{\"method\":\"POST\",\"body\":\"{}\",\"headers\":{\"accept\":\"application/json, text/event-stream\",\"content-type\":\"text/plain\"}}"
bad "a body that is not JSON" 400 "{\"method\":\"POST\",\"body\":\"{not json\",\"headers\":$acc}"
bad "a batch" 400 "{\"method\":\"POST\",\"body\":\"[{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":1,\\\"method\\\":\\\"ping\\\"}]\",\"headers\":$acc}"
bad "a request without a session id" 400 "{\"method\":\"POST\",\"body\":\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":1,\\\"method\\\":\\\"ping\\\"}\",\"headers\":$acc}"
bad "an unknown session" 404 "{\"method\":\"POST\",\"body\":\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":1,\\\"method\\\":\\\"ping\\\"}\",\"headers\":{\"accept\":\"application/json, text/event-stream\",\"mcp-session-id\":\"no-such-session\"}}"
got=$(node "$RAW" "$MOCK_URL" "[{\"method\":\"POST\",\"body\":$(node -e 'console.log(JSON.stringify(process.argv[1]))' "$init"),\"headers\":$acc},{\"method\":\"DELETE\",\"session\":true},{\"method\":\"POST\",\"session\":true,\"body\":\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":1,\\\"method\\\":\\\"ping\\\"}\",\"headers\":$acc}]")
check_eq "initialize, DELETE, then the ended session: 200 200 404" "200 200 404" \
	"$(printf '%s\n' "$got" | statuses)"
resp=$(node -e '
const s = require("net").connect(Number(process.argv[1]), "127.0.0.1", () => s.write("GARBAGE\r\n\r\n"));
let got = ""; s.on("data", (d) => (got += d)); s.on("close", () => console.log(got.split("\r\n")[0]));
setTimeout(() => s.destroy(), 3000);' "$(echo "$MOCK_URL" | sed 's|.*:\([0-9]*\)/.*|\1|')")
check_eq "malformed HTTP: 400" "HTTP/1.1 400 Bad Request" "$resp"
head -c 17000000 /dev/zero | tr '\0' x > "$T/big"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	-H 'Accept: application/json, text/event-stream' --data-binary @"$T/big" "$MOCK_URL")
check_eq "a body over 16M: 413" 413 "$code"
node "$RAW" "$MOCK_URL" "$(cat "$T/script")" > "$T/run3"
check "after all that, a session is served as before" cmp "$T/run1" "$T/run3"
stop_mock
check_eq "SIGINT: exit 0" 0 "$MOCK_STATUS"
check_eq "the report: 4 runs (3 scripts and the one deleted), none with a miss" "4 true" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(r.runs, r.sessions.every((s) => s.missed === 0) && r.ok)' "$T/r.report")"

# 3. A client that leaves in the middle of a stream (the recorded gaps kept:
#    the progress call lasts a second): the mock goes on, and serves the next.
start_mock "$T/r.db" --timing recorded
leave=$(node -e '
const s = JSON.parse(process.argv[1]);
s[4].sse_events = 1;
console.log(JSON.stringify(s));' "$(cat "$T/script")")
node "$RAW" "$MOCK_URL" "$leave" > "$T/left"
check_eq "the client left after the first event of the progress stream" 1 \
	"$(tail -1 "$T/left" | node -e 'let t = ""; process.stdin.on("data", (d) => (t += d)).on("end", () => console.log(JSON.parse(t).body.length))')"
node "$RAW" "$MOCK_URL" "$(cat "$T/script")" > "$T/after"
check_eq "the next client gets everything" "0 5" "$? $(wc -l < "$T/after")"
check "the same as before" cmp "$T/run1" "$T/after"
check "the mock still runs" kill -0 "$MOCK_PID"
stop_mock
check_eq "SIGINT: exit 0" 0 "$MOCK_STATUS"

# 4. --strict: a request with no recording is a miss, and the exit status says so.
start_mock "$T/r.db" --strict
got=$(node "$RAW" "$MOCK_URL" "[{\"method\":\"POST\",\"body\":$(node -e 'console.log(JSON.stringify(process.argv[1]))' "$init"),\"headers\":$acc},{\"method\":\"POST\",\"session\":true,\"body\":\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":9,\\\"method\\\":\\\"tools/call\\\",\\\"params\\\":{\\\"name\\\":\\\"nope\\\"}}\",\"headers\":$acc}]")
check_eq "the miss: a JSON-RPC error -30900 for its id" "9 -30900" \
	"$(printf '%s\n' "$got" | tail -1 | node -e 'let t = ""; process.stdin.on("data", (d) => (t += d)).on("end", () => {
	const m = JSON.parse(JSON.parse(t).body); console.log(m.id, m.error.code); })')"
stop_mock
check_eq "--strict: exit 1" 1 "$MOCK_STATUS"

finish
