#!/bin/sh
# replay --as server --listen with several sessions (-s all, a list) finds the
# recorded session a live one belongs to by its whole conversation so far, not
# by clientInfo alone: three recorded sessions of one client, each a different
# call, then live sessions making those calls in another order. Each is
# answered from the session that recorded that call (clientInfo alone took the
# first session not yet run: the third call got -30900), and --report says
# which recorded session each run followed. A call no session recorded is a
# miss against the session run least; -s restricts the sessions served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"
LOAD=$PEERS/fixture-load
RAW=$NODEDIR/raw-mcp.mjs

init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"runner","version":"1"}}}'
for w in one two three; do
	printf '%s\n' "> $init" \
		'< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}' \
		'> {"jsonrpc":"2.0","method":"notifications/initialized"}' \
		"> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"$w\"}}}" \
		"< {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"echo: $w\"}]}}" > "$T/$w.fx"
	"$LOAD" "$T/$w.fx" "$T/c.db" || die "cannot load $w"
done

# call WORD: a live session (initialize, initialized, the call); prints the call's answer text,
# or its error's message.
call() {
	node "$RAW" "$MOCK_URL" "$(node -e 'const h = {accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"};
		console.log(JSON.stringify([
			{method: "POST", body: JSON.parse(process.argv[1]), headers: h},
			{method: "POST", session: true, body: {jsonrpc: "2.0", method: "notifications/initialized"}, headers: h},
			{method: "POST", session: true, body: {jsonrpc: "2.0", id: 7, method: "tools/call", params: {name: "echo", arguments: {text: process.argv[2]}}}, headers: h},
			{method: "DELETE", session: true, headers: h}]))' "$init" "$1")" |
		node -e 'const l = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
			let b = l[2].body; if (Array.isArray(b)) b = b[0].data; const m = JSON.parse(b);
			console.log(m.result ? m.result.content[0].text : m.error.code + " " + m.error.message)'
}

start_mock "$T/c.db" -s all --report "$T/r.json" --no-store
check_eq "the third call first: answered from the third session" "echo: three" "$(call three)"
check_eq "then the first" "echo: one" "$(call one)"
check_eq "then the second" "echo: two" "$(call two)"
check_eq "the third again, in a session of its own: a run of the third again" "echo: three" "$(call three)"
check_eq "a call no session recorded: a miss, against the session run least" \
	"-30900 mcptap replay: no recorded answer for these params; the closest recorded tools/call (#4) differs at params.arguments.text (recorded \"one\")" "$(call four)"
stop_mock
check_eq "the report: each run and the recorded session it followed" "3 1 2 3 1" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(r.sessions.map((s) => s.session).join(" "))' "$T/r.json")"

# -s 1-2: the third session is not served; its call is a miss in both.
start_mock "$T/c.db" -s 1-2 --no-store
check_eq "-s 1-2: the third call misses" "-30900" "$(call three | cut -d' ' -f1)"
check_eq "-s 1-2: the second call is answered" "echo: two" "$(call two)"
stop_mock
finish
