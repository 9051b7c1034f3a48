#!/bin/sh
# Events a server sent again on a stream resumed with Last-Event-ID (replayed in
# the store) were delivered once: verify never waits for them from a live
# server, the mock never sends them again, and the client's answers to a
# request sent again are the replay's, not the script's. Before, verify printed
# MISSING for each (and waited --timeout-ms), while its summary said 0 missing.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load
FX=$TOP/tests/fixtures/replay/resumed.fx

"$LOAD" "$FX" "$T/a.db" || die "cannot load $FX"
# The same server, live: no resumption happens, so nothing is sent again.
awk '/Last-Event-ID: g0/ { skip = 4 } skip > 0 { skip--; next } { print }' "$FX" > "$T/live.fx"
"$LOAD" "$T/live.fx" "$T/live.db" || die "cannot load the live server's recording"
# A server that never sends the request at all.
awk '/^=> GET/ { skip = 6 } skip > 0 { skip--; next } { print }' "$FX" > "$T/none.fx"
"$LOAD" "$T/none.fx" "$T/none.db" || die "cannot load the third recording"
check_eq "the live recording holds one elicitation, the third none" "1 0" \
	"$(sql "$T/live.db" "select count(*) from message where method = 'elicitation/create'") $(sql "$T/none.db" "select count(*) from message where method = 'elicitation/create'")"

"$MCPTAP" replay -r "$T/a.db" --as client --no-store --timeout-ms 3000 -- \
	"$MCPTAP" replay -r "$T/live.db" --as server --no-store > "$T/v.out" 2> "$T/v.err"
check_eq "verify against the same server, live: exit 0" 0 $?
check_eq "every request passes, nothing missing, the summary says what was printed" \
"PASS #2 initialize
PASS #15 tools/list
replay: 2 requests: 2 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; 0 paths set aside as noise over 2 runs (session 1 against $(shq "$MCPTAP") replay -r $(shq "$T/live.db") --as server --no-store)" \
	"$(cat "$T/v.out")"

# The stdio mock of the recording: the request once, as the server sent it once.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"x"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
	"$MCPTAP" replay -r "$T/a.db" --as server --no-store > "$T/m.out" 2> "$T/m.err"
check_eq "the mock exits 0" 0 $?
check_eq "the mock sends the initialize answer, the request once, the tools/list answer" \
	"1 result|1 elicitation/create|2 result" \
	"$(node -e 'const o = []; for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean)) {
		const m = JSON.parse(l); o.push(m.id + " " + (m.method || (m.result ? "result" : "error"))) } console.log(o.join("|"))' "$T/m.out")"

# A server request the live server never sends: said, and counted.
"$MCPTAP" replay -r "$T/a.db" --as client --no-store --timeout-ms 300 -- \
	"$MCPTAP" replay -r "$T/none.db" --as server --no-store > "$T/n.out" 2> "$T/n.err"
check_eq "a server request never sent: exit 1" 1 $?
check_eq "one MISSING line per run, and the summary counts them" \
"MISSING server request elicitation/create (recorded #7): the client's answer #9 was not sent
MISSING server request elicitation/create (recorded #7): the client's answer #9 was not sent
PASS #2 initialize
PASS #15 tools/list
replay: 2 requests: 2 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; 0 paths set aside as noise over 2 runs (session 1 against $(shq "$MCPTAP") replay -r $(shq "$T/none.db") --as server --no-store); 2 server requests missing (the client's answer not sent)" \
	"$(cat "$T/n.out")"
finish
