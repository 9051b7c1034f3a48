#!/bin/sh
# t0564-diff-http-change: a server changed in one tool's result, over
# Streamable HTTP. The SDK client's full flow (tests/node/http-client.mjs) is
# recorded through the HTTP tap three times: twice against server-everything,
# once against a front (tests/node/verify-peers.mjs front, a real process)
# that rewrites the echo tool's answers on their way. `mcptap diff` of the
# first against the changed one, the second as noise, reports exactly that
# exchange, with its path and both values, and exits 1; the two unchanged runs
# are the same (exit 0, a stdio run as the noise); and a stdio recording of the
# flow against the changed one reports the same one exchange.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/http-client.mjs
VP=$NODEDIR/verify-peers.mjs
VP_PID=""
stop_all() {
	[ -z "$VP_PID" ] || _stop_pid "$VP_PID"
	stop_http_peers
}
trap stop_all EXIT

# record DB [rewrite]: the flow over Streamable HTTP through the tap into DB,
# against a fresh server-everything, or (rewrite) the front in front of it.
record() {
	_p=$(free_port)
	start_everything streamableHttp "$_p"
	_up="http://127.0.0.1:$_p"
	if [ "${2:-}" = rewrite ]; then
		_vp=$(free_port)
		node "$VP" front --port "$_vp" --upstream "$_up" --rewrite '"text":"Echo: ="text":"Echo; ' \
			> "$T/vp.log" 2>&1 &
		VP_PID=$!
		wait_port "$_vp" 15 || die "verify-peers front did not listen"
		_up="http://127.0.0.1:$_vp"
	fi
	start_tap "$1" "$_up"
	timeout 120 node "$CLIENT" --transport http --log "$1.jsonl" "$TAP_URL/mcp" > "$1.out" 2>&1
	_rc=$?
	wait_committed "$1" 1 "$1.jsonl" || _rc=1
	stop_tap
	if [ -n "$VP_PID" ]; then
		_stop_pid "$VP_PID"
		VP_PID=""
	fi
	stop_everything
	return $_rc
}

# seq_of DB METHOD NAME: the seq of the client's request METHOD whose params name NAME.
seq_of() {
	sql "$1" "select seq from message where session = 1 and dir = 'c2s' and kind = 'request' and method = '$2' and json_extract(cast(raw as text), '\$.params.name') = '$3'"
}
# exchanges DB: the requests of session 1, the server's and the client's but
# those whose POST an HTTP server refused with an error status.
exchanges() {
	sql "$1" "select count(*) from message m where session = 1 and kind = 'request' and not (dir = 'c2s' and exists (select 1 from http_exchange x where x.session = m.session and x.seq = m.exchange and x.status >= 400))"
}

check "HTTP run 1" record "$T/h1.db"
check "HTTP run 2" record "$T/h2.db"
# (the client's own check of the echo fails there; the recording is what counts)
record "$T/c.db" rewrite
check "the front rewrote the echo's answer" \
	sh -c 'sqlite3 "$1" "select cast(raw as text) from message where dir = '"'s2c'"'" | grep -q "\"text\":\"Echo; "' sh "$T/c.db"
timeout 120 node "$CLIENT" --transport stdio --log "$T/s.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio > "$T/s.out" 2>&1
check_eq "a stdio run" 0 $?
N=$(exchanges "$T/h1.db")
check_eq "as many exchanges in the changed run" "$N" "$(exchanges "$T/c.db")"

"$MCPTAP" diff "$T/h1.db" "$T/h2.db" "$T/s.db" > "$T/same.out" 2> "$T/same.err"
check_eq "the two unchanged runs, the stdio one as noise: exit 0" 0 $?
check_eq "all the same" \
	"diff: $N exchanges in A, $N in B: $N same, 0 changed, 0 added, 0 missing; 10 paths set aside as noise" \
	"$(cat "$T/same.out")"

A=$(seq_of "$T/h1.db" tools/call echo)
B=$(seq_of "$T/c.db" tools/call echo)
"$MCPTAP" diff --noise "$T/h2.db" "$T/h1.db" "$T/c.db" > "$T/c.out" 2> "$T/c.err"
check_eq "against the changed server: exit 1" 1 $?
check_eq "the one exchange, its path and both values (cut after 40 bytes)" \
	"CHANGED tools/call echo (A #$A, B #$B): result.content[0].text \"Echo: hello through the http tap é世 ... -> \"Echo; hello through the http tap é世 ...
diff: $N exchanges in A, $N in B: $((N - 1)) same, 1 changed, 0 added, 0 missing; 10 paths set aside as noise" \
	"$(cat "$T/c.out")"
check_eq "nothing on stderr" "" "$(cat "$T/c.err")"

S=$(seq_of "$T/s.db" tools/call echo)
"$MCPTAP" diff "$T/s.db" "$T/c.db" "$T/h2.db" > "$T/sc.out" 2> "$T/sc.err"
check_eq "a stdio recording against the changed HTTP one: exit 1" 1 $?
check_eq "the same one exchange" \
	"CHANGED tools/call echo (A #$S, B #$B): result.content[0].text \"Echo: hello through the http tap é世 ... -> \"Echo; hello through the http tap é世 ...
diff: $N exchanges in A, $N in B: $((N - 1)) same, 1 changed, 0 added, 0 missing; 10 paths set aside as noise" \
	"$(cat "$T/sc.out")"

finish
