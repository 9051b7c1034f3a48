#!/bin/sh
# t0534-replay-bad: replay with the real peers and bad input.
#
# - A recording that ends in the middle of a request (the server was killed
#   while a call ran): the SDK client replaying the same flow against its mock
#   gets an error for that call (-30900), not a hang until its own timeout.
# - A client that sends what was never recorded: the answer is -30900, and its
#   data and the mock's report name the closest recording (the recorded echo
#   call) and the path that differs.
# - A server that dies in the middle of a verify run: reported once, with its
#   exit status; the requests it never got are not waited for one by one.
# The server is killed by tests/node/die-after.mjs, which relays a live
# server-everything until the client sends a given request.
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/sdk-client.mjs
DIE=$NODEDIR/die-after.mjs

# 1. A recording cut in the middle of the long-running call.
timeout 60 node "$CLIENT" --log "$T/cut.jsonl" -- \
	"$MCPTAP" record -w "$T/cut.db" -- node "$DIE" trigger-long-running-operation 3 -- node "$ENTRY" stdio 2>"$T/cut.err"
check_eq "the client fails when the server dies during its call" 1 $?
check_eq "the recording ends with that call unanswered" "tools/call|" \
	"$(sql "$T/cut.db" "SELECT method || '|' || coalesce(outcome, '') FROM exchange WHERE dir = 'c2s' ORDER BY request_seq DESC LIMIT 1")"
timeout 60 node "$CLIENT" --log "$T/cutrep.jsonl" -- \
	"$MCPTAP" replay -r "$T/cut.db" --as server 2>"$T/cutrep.err"
rc=$?
grep -v '^Starting' "$T/cutrep.err" | sed 's/^/# /'
check_eq "against the mock of the cut recording the client fails, and does not hang" 1 $rc
check "the call gets the mock's -30900 error, not the client's own timeout" \
	grep -q '^sdk-client: FAIL: tools/call trigger-long-running-operation: MCP error -30900' "$T/cutrep.err"

# 2. What was never recorded. The recorded initialize, then an echo call with
# another message.
timeout 60 node "$CLIENT" --log "$T/e.jsonl" -- "$MCPTAP" record -w "$T/e.db" -- node "$ENTRY" stdio 2>"$T/e.err"
check_eq "recorded the everything flow" 0 $?
ECHOSEQ=$(sql "$T/e.db" "SELECT seq FROM message WHERE dir = 'c2s' AND method = 'tools/call' AND CAST(raw AS TEXT) LIKE '%\"name\":\"echo\"%' ORDER BY seq LIMIT 1")
{
	sql "$T/e.db" "SELECT CAST(raw AS TEXT) FROM message WHERE dir = 'c2s' AND method = 'initialize'" | tr -d '\r\n'
	printf '\n%s\n%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		'{"jsonrpc":"2.0","id":"miss-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"never recorded"}}}'
} >"$T/miss.in"
timeout 60 "$MCPTAP" replay -r "$T/e.db" --as server --report "$T/miss.json" <"$T/miss.in" >"$T/miss.out" 2>"$T/miss.err"
echo "# mock exit $?: $(tr '\n' ' ' <"$T/miss.err")"
check "the unrecorded call gets -30900 naming the closest recording (#$ECHOSEQ) and the differing path" node -e '
const fs = require("fs");
const lines = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const a = lines.find((m) => m.id === "miss-1");
const e = a && a.error;
const c = e && e.data && e.data.closest;
const seq = c && typeof c === "object" ? c.seq : c;
if (!e || e.code !== -30900 || String(seq) !== process.argv[2] || !/params\.arguments\.message/.test(JSON.stringify(e.data.differs))) {
	console.error("# " + JSON.stringify(a)); process.exit(1);
}' "$T/miss.out" "$ECHOSEQ"
check "the report lists the miss: tools/call echo, its id, the closest recording, the path" node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const m = r.misses;
const ok = Array.isArray(m) && m.length === 1 && m[0].method === "tools/call" && m[0].name === "echo" &&
	m[0].id === "miss-1" && String(typeof m[0].closest === "object" && m[0].closest ? m[0].closest.seq : m[0].closest) === process.argv[2] &&
	/params\.arguments\.message/.test(JSON.stringify(m[0].differs)) && r.ok === false;
if (!ok) { console.error("# " + JSON.stringify(r)); process.exit(1); }' "$T/miss.json" "$ECHOSEQ"

# 3. The server dies under verify, once the long-running call has gone to it.
timeout 120 "$MCPTAP" replay -r "$T/e.db" --as client --runs 1 -- \
	node "$DIE" trigger-long-running-operation 3 -- node "$ENTRY" stdio >"$T/v.out" 2>"$T/v.err"
rc=$?
sed 's/^/# /' "$T/v.out" "$T/v.err" | grep -v '^# PASS'
check_eq "verify against a server that dies exits 1" 1 $rc
check_eq "the server's end is reported once, with its exit status 3" 1 \
	"$(cat "$T/v.out" "$T/v.err" | grep -v '^die-after:' | grep -ic '\(exit\|status\)[^0-9]*3\b')"
check_eq "no request waits for its answer until a timeout" 0 "$(grep -c 'no answer within' "$T/v.out")"
check "the requests after it are reported missing, the server gone" grep -q '^MISSING .*gone' "$T/v.out"

finish
