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

# The HTTP mock of the recording. The client's first resumption is answered as
# the recorded one was: the elicitation again, with the event id and bytes the
# mock first sent it with, whatever stream the Last-Event-ID names (99-0: none
# of the mock's). A second one, past the recorded ones, as the spec says: the
# events of the stream it names after the id.
. "$(dirname "$0")/http-tap.sh"
trap 'bg_stop MOCK INT' EXIT
start_mock "$T/a.db" --no-store --report "$T/hm.json"
post() { # post FILE JSON: the status, the head into FILE.h, the body into FILE
	curl -sS -o "$1" -D "$1.h" -w '%{http_code}' -H 'Accept: application/json, text/event-stream' \
		-H 'Content-Type: application/json' ${SID:+-H "Mcp-Session-Id: $SID"} \
		${SID:+-H 'MCP-Protocol-Version: 2025-11-25'} --data-binary "$2" "$MOCK_URL"
}
# get FILE [LAST-EVENT-ID]: a GET stream into FILE until it holds an event with
# data (10 s at most), tried again while the stream before it is still open (409).
get() {
	_n=0
	while :; do
		curl -sS -N -o "$1" -w '%{http_code}' -H 'Accept: text/event-stream' -H "Mcp-Session-Id: $SID" \
			${2:+-H "Last-Event-ID: $2"} --max-time 20 "$MOCK_URL" > "$1.status" 2> /dev/null &
		_gp=$!
		while [ "$_n" -lt 100 ] && ! grep -q '^data:' "$1" 2> /dev/null && kill -0 "$_gp" 2> /dev/null; do
			sleep 0.1
			_n=$((_n + 1))
		done
		kill "$_gp" 2> /dev/null
		wait "$_gp" 2> /dev/null
		[ "$(cat "$1.status")" = 409 ] && [ "$_n" -lt 100 ] || break
		sleep 0.1
	done
}
SID=
check_eq "initialize through the HTTP mock: 200" 200 \
	"$(post "$T/p1" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}')"
SID=$(sed -n 's/^[Mm][Cc][Pp]-[Ss][Ee][Ss][Ss][Ii][Oo][Nn]-[Ii][Dd]: *\([^[:space:]]*\).*/\1/p' "$T/p1.h")
check_eq "notifications/initialized: 202" 202 "$(post "$T/p2" '{"jsonrpc":"2.0","method":"notifications/initialized"}')"
get "$T/g1"
EV=$(grep -A1 '^id: ' "$T/g1" | tr '\n' '|')
# (the mock gives its server requests ids of its own)
check_eq "the GET stream carries the elicitation, once, with an event id" \
	'|data: {"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}|' \
	"$(echo "$EV" | sed 's/^id: [^|]*//')"
GID=$(sed -n 's/^id: //p' "$T/g1")
check_eq "the client's answer: 202" 202 "$(post "$T/p3" '{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"x"}}}')"
get "$T/g2" 99-0
check_eq "the first resumption (Last-Event-ID 99-0): the elicitation again, its id and bytes as first sent" \
	"$EV" "$(grep -A1 '^id: ' "$T/g2" | tr '\n' '|')"
check_eq "the client's second answer: 202" 202 "$(post "$T/p4" '{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"x"}}}')"
get "$T/g3" "${GID%-*}-0"
check_eq "the second (past the recorded one), naming the first GET stream: its events after the id" \
	"$EV" "$(grep -A1 '^id: ' "$T/g3" | tr '\n' '|')"
check_eq "tools/list is still answered: 200, the recorded answer" \
	'200 {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}' \
	"$(post "$T/p5" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}') $(cat "$T/p5")"
bg_stop MOCK INT
check_eq "the mock: exit 0" 0 "$MOCK_STATUS"
check_eq "its report: the first resumption was the recorded one's (1 event), the second none" \
	"[{\"recorded\":$(sql "$T/a.db" "select seq from http_exchange where method = 'GET' and last_event_id is not null"),\"events\":1},{\"recorded\":null,\"events\":0}]" \
	"$(node -e 'console.log(JSON.stringify(require(process.argv[1]).sessions[0].resumed))' "$T/hm.json")"
finish
