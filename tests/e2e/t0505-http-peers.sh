#!/bin/sh
# t0500-http-peers: the real HTTP peers, directly, without the tap: what the tap tests
# will see through it. The official SDK client (tests/node/http-client.mjs) runs its
# full flow against the official server-everything (both pinned in
# tests/node/package-lock.json) in streamableHttp mode, in sse mode, and through a
# TLS front (stunnel, with a test CA trusted through NODE_EXTRA_CA_CERTS), then 50
# clients at once against streamableHttp. Every step must pass, and each client log
# must hold each request's response exactly once (the cancelled call's: none), the
# exact progress notifications, and the server's requests answered once.
#
# What the peers do (server-everything 2026.8.31, SDK 1.32.2), checked below:
# - streamableHttp: endpoint /mcp; POST answers are SSE streams; a DELETE is
#   answered 200; an unknown or deleted session id gets 400 (not 404) with a
#   JSON-RPC error -32000 that has no "id" member.
# - sse: GET /sse, whose first event names a relative endpoint
#   (/message?sessionId=ID); POSTs are answered 202.
# - the server sends roots/list once, 350 ms after initialization; in
#   streamableHttp mode it goes on the GET stream, and it is lost when that stream
#   is not open yet (so under the 50 clients some may never get one: not counted).
#   The same holds for the notifications/tools/list_changed sent during
#   initialization: the sse client gets 5, the streamableHttp one none.
# - a cancelled trigger-long-running-operation is never answered, but the tool goes
#   on and its later progress notifications still arrive.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"

command -v node >/dev/null 2>&1 || die "node is not installed: run tests/setup.sh test"
need_npm @modelcontextprotocol/sdk
command -v openssl >/dev/null 2>&1 || die "openssl is not installed"
command -v stunnel4 >/dev/null 2>&1 || command -v stunnel >/dev/null 2>&1 ||
	die "stunnel is not installed: run tests/setup.sh test"

CLIENT=$NODEDIR/http-client.mjs
SUMMARY=$NODEDIR/http-log-summary.mjs
# The full flow's steps (http adds the DELETE and the refused session id).
STEPS_SSE=16
STEPS_HTTP=18

# field NAME LINE: a key=value field of an http-log-summary.mjs line.
field() {
	echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# run_flow LABEL TRANSPORT URL [CA]: the full flow in the background (its pid added
# to FLOWS), trusting CA (NODE_EXTRA_CA_CERTS) when given, its log $T/LABEL.jsonl,
# its output $T/LABEL.out, its exit status $T/LABEL.rc.
FLOWS=""
run_flow() {
	{
		[ -z "${4:-}" ] || export NODE_EXTRA_CA_CERTS="$4"
		timeout 100 node "$CLIENT" --transport "$2" --log "$T/$1.jsonl" "$3" >"$T/$1.out" 2>"$T/$1.err"
		echo $? >"$T/$1.rc"
	} &
	FLOWS="$FLOWS $!"
}

# check_flow LABEL STEPS REQUESTS UNANSWERED C2S: what the full flow printed and
# logged; sets sid (the session id) and s (the log's summary).
check_flow() {
	rc=$(cat "$T/$1.rc")
	[ "$rc" = 0 ] || sed 's/^/# /' "$T/$1.out" "$T/$1.err"
	check_eq "$1: the client exits 0" 0 "$rc"
	check_eq "$1: every step passed" "$2" "$(grep -c '^ok - ' "$T/$1.out")"
	check_eq "$1: no step failed" 0 "$(grep -c '^not ok' "$T/$1.out")"
	sid=$(sed -n 's/^# session 1 //p' "$T/$1.out")
	check "$1: a session id" test -n "$sid"
	s=$(node "$SUMMARY" "$T/$1.jsonl")
	# (http: the ping sent by hand after the DELETE is refused, never answered.)
	check_eq "$1: $3 requests, 19 answered exactly once, 1 cancelled, $4 unanswered" "$3 19 1 $4 0 0" \
		"$(field requests "$s") $(field answered_once "$s") $(field cancelled "$s") $(field unanswered "$s") $(field answered_twice "$s") $(field orphans "$s")"
	check_eq "$1: the server's 4 requests answered exactly once" "4 4" "$(field server_requests "$s") $(field server_answered_once "$s")"
	check_eq "$1: progress notifications (4 steps; the cancelled call's 4 too)" "4,4" "$(field progress "$s")"
	check_eq "$1: the server's requests" "elicitation/create:2 roots/list:1 sampling/createMessage:1" \
		"$(field methods "$s" | tr ',' '\n' | grep -E '^(elicitation/create|roots/list|sampling/createMessage):' | tr '\n' ' ' | sed 's/ $//')"
	check_eq "$1: notifications/progress received" "notifications/progress:8" \
		"$(field methods "$s" | tr ',' '\n' | grep '^notifications/progress:')"
	check_eq "$1: c2s messages" "$5" "$(field c2s "$s")"
}

# The servers and the TLS front (stunnel with a test CA in front of the
# streamableHttp server).
P=$(free_port)
start_everything streamableHttp "$P"
HTTP_PID=$EVERYTHING_PID
HTTP_LOG=$T/everything-streamableHttp-$P.log
PS=$(free_port)
start_everything sse "$PS"
SSE_PID=$EVERYTHING_PID
SSE_LOG=$T/everything-sse-$PS.log
make_test_ca "$T/ca" || die "cannot make the test CA"
PT=$(free_port)
start_tls_front "$PT" "$P" "$T/ca"

# The three full flows at once (each its own session).
run_flow http http "http://127.0.0.1:$P/mcp"
run_flow sse sse "http://127.0.0.1:$PS/sse"
run_flow tls http "https://127.0.0.1:$PT/mcp" "$T/ca/ca.pem"
for f in $FLOWS; do wait "$f"; done

# streamableHttp
check_flow http "$STEPS_HTTP" 21 1 27
check_eq "http: the server saw one DELETE, for the session" 1 \
	"$(grep -c "^Received session termination request for session $sid\$" "$HTTP_LOG")"
check_eq "http: no list_changed reached the client (sent before the GET stream opened)" "" \
	"$(field methods "$s" | tr ',' '\n' | grep list_changed)"
code=$(node -e '
fetch(process.argv[1], { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": "no-such-session" },
	body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }) }).then(async (r) => console.log(r.status, await r.text()));' "http://127.0.0.1:$P/mcp")
check_eq "http: an unknown session id gets 400, an error without id" \
	'400 {"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}' "$code"

# sse
check_flow sse "$STEPS_SSE" 20 0 26
check "sse: the server saw the client connect" grep -q "^Client Connected:  $sid\$" "$SSE_LOG"
n=0
while ! grep -q "^Client Disconnected:  $sid\$" "$SSE_LOG" && [ $n -lt 30 ]; do sleep 0.1; n=$((n + 1)); done
check "sse: and disconnect when it closed" grep -q "^Client Disconnected:  $sid\$" "$SSE_LOG"
check_eq "sse: the 5 list_changed of initialization reached the client" "notifications/tools/list_changed:5" \
	"$(field methods "$s" | tr ',' '\n' | grep list_changed)"
ep=$(node -e '
const ac = new AbortController();
fetch(process.argv[1], { headers: { accept: "text/event-stream" }, signal: ac.signal }).then(async (r) => {
	const rd = r.body.getReader(); let s = "";
	while (!/\n\n/.test(s)) { const { value, done } = await rd.read(); if (done) break; s += Buffer.from(value).toString(); }
	console.log(s.split("\n").slice(0, 2).join("|").replace(/sessionId=[0-9a-f-]+/, "sessionId=ID")); ac.abort(); process.exit(0);
});' "http://127.0.0.1:$PS/sse")
check_eq "sse: the endpoint event names a relative URI" "event: endpoint|data: /message?sessionId=ID" "$ep"
stop_everything "$SSE_PID"

# TLS
check_flow tls "$STEPS_HTTP" 21 1 27
check_eq "tls: the server saw the DELETE" 1 \
	"$(grep -c "^Received session termination request for session $sid\$" "$HTTP_LOG")"
check "the server certificate verifies against the test CA" sh -c \
	'openssl verify -CAfile "$1" "$2" >/dev/null' sh "$T/ca/ca.pem" "$T/ca/server.pem"
check "the server certificate names 127.0.0.1 and localhost" sh -c \
	'openssl x509 -in "$1" -noout -ext subjectAltName | grep -q "IP Address:127.0.0.1, DNS:localhost"' sh "$T/ca/server.pem"
probe='fetch(process.argv[1]).then((r) => console.log(r.status), (e) => console.log((e.cause && e.cause.code) || e.message));'
check_eq "https with NODE_EXTRA_CA_CERTS reaches the server (GET without a session: 400)" 400 \
	"$(NODE_EXTRA_CA_CERTS=$T/ca/ca.pem node -e "$probe" "https://127.0.0.1:$PT/mcp")"
check_eq "https to localhost too (the DNS name in the SAN)" 400 \
	"$(NODE_EXTRA_CA_CERTS=$T/ca/ca.pem node -e "$probe" "https://localhost:$PT/mcp")"
check_eq "https without the test CA fails with a certificate error" UNABLE_TO_VERIFY_LEAF_SIGNATURE \
	"$(env -u NODE_EXTRA_CA_CERTS node -e "$probe" "https://127.0.0.1:$PT/mcp")"
if command -v curl >/dev/null 2>&1; then
	check_eq "curl --cacert through the TLS front" 400 \
		"$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca/ca.pem" "https://127.0.0.1:$PT/mcp")"
	env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -s -o /dev/null "https://127.0.0.1:$PT/mcp"
	check_eq "curl without the test CA: exit 60 (peer certificate cannot be authenticated)" 60 $?
fi
stop_tls_front "$TLS_FRONT_PID"

# 50 clients at once, each its own session.
N=50
timeout 100 node "$CLIENT" --transport http --sessions $N --log "$T/many.jsonl" "http://127.0.0.1:$P/mcp" >"$T/many.out" 2>"$T/many.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/many.out" "$T/many.err"
check_eq "$N sessions: the client exits 0" 0 "$rc"
check_eq "$N sessions: every step passed for every client" 7 "$(grep -c "^ok - .*" "$T/many.out")"
check_eq "$N sessions: no step failed" 0 "$(grep -c '^not ok' "$T/many.out")"
check_eq "$N sessions: $N distinct session ids" $N "$(sed -n 's/^# session [0-9]* //p' "$T/many.out" | sort -u | wc -l | tr -d ' ')"
check_eq "$N sessions: the server saw $N DELETEs" $N \
	"$(sed -n 's/^# session [0-9]* //p' "$T/many.out" | while read -r id; do
		grep -c "^Received session termination request for session $id\$" "$HTTP_LOG"; done | grep -cx 1)"
k=1
own=0
: >"$T/many.summary"
while [ $k -le $N ]; do
	grep -qF "\"text\":\"Echo: client $k of $N: " "$T/many.jsonl.$k" && own=$((own + 1))
	k=$((k + 1))
done
check_eq "$N sessions: each client's echo came back with its own text" $N "$own"
k=1
set --
while [ $k -le $N ]; do set -- "$@" "$T/many.jsonl.$k"; k=$((k + 1)); done
node "$SUMMARY" "$@" >"$T/many.summary"
check_eq "$N sessions: every log has 4 requests answered exactly once and 4 progress" $N \
	"$(grep -c ' requests=4 answered_once=4 cancelled=0 unanswered=0 answered_twice=0 orphans=0 .* progress=4 ' "$T/many.summary")"
check_eq "$N sessions: no client got another's echo" 0 \
	"$(k=1; while [ $k -le $N ]; do grep -o '"text":"Echo: client [0-9]* of' "$T/many.jsonl.$k" | grep -vcx "\"text\":\"Echo: client $k of"; k=$((k + 1)); done | awk '{s += $1} END {print s + 0}')"

stop_everything "$HTTP_PID"
finish
