#!/bin/sh
# mcptap replay --as client: the recorded client against a live server. PASS
# when every answer matches, DIFF with the paths that differ (exit 1), --ignore
# (also scoped to a tool), MISSING when the server dies, and the run stored.
. "$(dirname "$0")/lib.sh"

"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "recorded the C peers" 0 $?

"$MCPTAP" replay -r "$T/c.db" --as client -- "$PEERS/mcp-server" > "$T/same.out" 2> "$T/same.err"
check_eq "the same server: exit 0" 0 $?
check_eq "a PASS line per recorded request" 11 "$(grep -c '^PASS #' "$T/same.out")"
check "the sampling request was answered from the recording" grep -q '^PASS #[0-9]* tools/call sample$' "$T/same.out"
check "the summary" grep -q "^replay: 11 requests: 11 passed, 0 differed, 0 missing" "$T/same.out"
check_eq "the run is stored" "1|11|0|0" "$(sql "$T/c.db" "select session, passed, differed, missing from replay_run")"
check_eq "with a row per request" 11 "$(sql "$T/c.db" "select count(*) from replay_result where run = 1 and status = 'pass'")"

# A server whose answers changed: DIFF with the paths.
changed="'$PEERS/mcp-server' | sed -u 's/\"text\":\"hello\"/\"text\":\"HELLO\"/'"
"$MCPTAP" replay -r "$T/c.db" --as client -- sh -c "$changed" > "$T/diff.out" 2> /dev/null
check_eq "a changed answer: exit 1" 1 $?
check "DIFF names the request and the path" grep -q '^DIFF #[0-9]* tools/call echo: result.content\[0\].text$' "$T/diff.out"
check "the rest pass" grep -q "^replay: 11 requests: 10 passed, 1 differed, 0 missing" "$T/diff.out"
check_eq "the diff is stored with its paths" '["result.content[0].text"]' \
	"$(sql "$T/c.db" "select diff from replay_result where run = 2 and status = 'diff'")"
check "and with both answers" test "$(sql "$T/c.db" "select count(*) from replay_result where run = 2 and status = 'diff' and instr(live, 'HELLO') and instr(recorded, 'hello')")" = 1
"$MCPTAP" replay -r "$T/c.db" --as client --ignore 'result.content[*].text' -- sh -c "$changed" > "$T/ign.out" 2> /dev/null
check_eq "--ignore result.content[*].text: exit 0" 0 $?
"$MCPTAP" replay -r "$T/c.db" --as client --ignore 'echo=result.content[0].text' -- sh -c "$changed" > /dev/null 2>&1
check_eq "--ignore scoped to the echo tool: exit 0" 0 $?
"$MCPTAP" replay -r "$T/c.db" --as client --ignore 'progress=result.content[0].text' -- sh -c "$changed" > /dev/null 2>&1
check_eq "--ignore scoped to another tool does not hide it: exit 1" 1 $?
"$MCPTAP" replay -r "$T/c.db" --as client --ignore 'add=result.content[0].text' -- sh -c "$changed" > /dev/null 2> "$T/bad.err"
check_eq "--ignore scoped to a name never recorded: a usage error" 2 $?
check "which says so" grep -q "never called a method, tool or prompt named 'add'" "$T/bad.err"
"$MCPTAP" replay -r "$T/c.db" --as client --ignore 'content[0].text' -- sh -c "$changed" > /dev/null 2> "$T/bad.err"
check_eq "--ignore outside params, result and error: a usage error" 2 $?
check "which says so" grep -q "a path starts at params, result or error" "$T/bad.err"

# A server that dies mid-way: the rest is MISSING, quickly.
start=$(date +%s)
"$MCPTAP" replay -r "$T/c.db" --as client --timeout-ms 2000 -- "$PEERS/mcp-server" --crash-after 3 > "$T/crash.out" 2> /dev/null
check_eq "a crashing server: exit 1" 1 $?
end=$(date +%s)
check "MISSING lines" grep -q '^MISSING #' "$T/crash.out"
check "the summary counts them" grep -q "^replay: 11 requests: 3 passed, 0 differed, 8 missing" "$T/crash.out"
check "no timeout per missing request ($((end - start)) s)" test $((end - start)) -lt 8
check_eq "the server's end is said once, with its signal" 1 "$(grep -c '^GONE the server was killed by signal 6 (Aborted) after #8 tools/call echo (run 1 of 2): 8 requests left without an answer$' "$T/crash.out")"
check_eq "and the requests it owed are MISSING, the server gone" 8 "$(grep -c '^MISSING #[0-9]* .*the server had gone$' "$T/crash.out")"

# A command that does not exist: 127.
"$MCPTAP" replay -r "$T/c.db" --as client -- /no/such/server > /dev/null 2> "$T/nf.err"
check_eq "a missing server command: 127" 127 $?
check "it says so" grep -q "cannot run '/no/such/server'" "$T/nf.err"
"$MCPTAP" replay -r "$T/c.db" --as client < /dev/null 2> /dev/null
check_eq "--as client without a command: 2" 2 $?
"$MCPTAP" replay -r "$T/c.db" --as client --no-store -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "--no-store stores no run" 6 "$(sql "$T/c.db" "select count(*) from replay_run")"

# A server that never reads: 8 requests of 10 kB fill the pipe. The run keeps to its
# timeouts instead of blocking in a write for as long as the server lives.
pad=$(head -c 10000 /dev/zero | tr '\0' a)
: > "$T/deaf.fx"
for i in 1 2 3 4 5 6 7 8; do
	echo "> {\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"arguments\":{\"p\":\"$pad\"}}}"
	echo "< {\"jsonrpc\":\"2.0\",\"id\":$i,\"result\":{\"content\":[]}}"
done >> "$T/deaf.fx"
"$PEERS/fixture-load" "$T/deaf.fx" "$T/deaf.db"
timeout 60 "$MCPTAP" replay -r "$T/deaf.db" --as client --timeout-ms 300 --no-store -- sleep 120 \
	> "$T/deaf.out" 2> "$T/deaf.err"
check_eq "a server that never reads: the run ends on its timeouts (exit 1, not killed)" 1 $?
check "a server that never reads: every request MISSING" grep -q "8 requests: 0 passed, 0 differed, 8 missing" "$T/deaf.out"
check "a server that never reads: says the requests were not read" grep -q "did not read all the requests" "$T/deaf.err"

finish
