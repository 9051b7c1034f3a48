#!/bin/sh
# t0367-otlp-push-outage: the HTTP tap's --otlp when the receiver is not
# there. The relay never waits for it; spans are sent again with backoff
# while it is away, and what is never taken is counted, said and recorded.
#
# 1. Down at start: the tap relays a session while nothing listens at the
#    URL; the receiver comes up later, and gets every span once, as export
#    -T otlp makes them; nothing is said, no gap recorded.
# 2. Never up: every span is counted, said in one line when the tap stops,
#    and recorded as a gap row of its session.
# 3. Gone mid-run: the receiver takes one POST and exits; a second session
#    follows. What it took is export's; the spans of each session it did not
#    take are exactly that session's gap row, and the line on stderr.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/otlp-push.sh"

need_npm protobufjs @opentelemetry/otlp-transformer
[ -x "$BENCH/http-echo" ] && [ -x "$BENCH/http-load" ] || die "the bench peers are not built: run make"

"$BENCH/http-echo" 0 > "$T/echo.port" 2> "$T/echo.err" &
echo_pid=$!
n=0
while [ ! -s "$T/echo.port" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
UP=http://127.0.0.1:$(cat "$T/echo.port")

# session_spans DB SESSION: export -T otlp of one session, into DB.SESSION.otlp
session_spans() { "$MCPTAP" export -r "$1" -s "$2" -T otlp -o "$1.$2.otlp"; }

# ---- 1. Down at start ----
P=$(free_port)
start_tap "$T/a.db" "$UP" --otlp "http://127.0.0.1:$P"
"$BENCH/http-load" ping 20 "$TAP_URL/mcp" > "$T/a.load" 2>&1
check_eq "down at start: the relay answers all 20 requests" 0 $?
sleep 1 # (the tap tries meanwhile, and is refused)
start_recv "$T/r1.jsonl" --port "$P"
check "the receiver up later gets the 21 spans (initialize and 20 pings)" wait_spans "$T/r1.jsonl" 21
stop_tap
check_eq "the tap stops: exit 0" 0 "$TAP_STATUS"
"$MCPTAP" export -r "$T/a.db" -T otlp -o "$T/a.otlp"
check_eq "... every span once, as export -T otlp makes them" "$(spans "$T/a.otlp")" "$(spans "$T/r1.jsonl")"
check_eq "... all sent in the end: nothing said" "" "$(grep -v '^mcptap: listening on' "$TAP_ERR")"
check_eq "... no gap recorded" "0" "$(sql "$T/a.db" "select count(*) from gap")"
stop_recv

# ---- 2. Never up ----
P=$(free_port)
start_tap "$T/b.db" "$UP" --otlp "http://127.0.0.1:$P"
"$BENCH/http-load" ping 10 "$TAP_URL/mcp" > "$T/b.load" 2>&1
check_eq "never up: the relay answers all 10 requests" 0 $?
stop_tap
check_eq "the tap stops: exit 0" 0 "$TAP_STATUS"
LINE=$(grep -v '^mcptap: listening on' "$TAP_ERR")
check_eq "one line on stderr" 1 "$(printf '%s\n' "$LINE" | wc -l | tr -d ' ')"
check_eq "... counts the 11 spans not pushed" \
	"mcptap: warning: 11 of 11 spans were not pushed to http://127.0.0.1:$P/v1/traces" \
	"$(printf '%s' "$LINE" | sed 's/ (.*//')"
check "... says why (the connection refused) and where they are" \
	sh -c 'printf "%s" "$1" | grep -qE "onnect.*\); the capture records them as gaps$"' - "$LINE"
check_eq "a gap row of the session counts them" "1 otlp: 11 spans not pushed to http://127.0.0.1:$P/v1/traces:" \
	"$(otlp_gaps "$T/b.db" | cut -d' ' -f1-8)"
"$MCPTAP" export -r "$T/b.db" -T otlp -o "$T/b.otlp"
check_eq "... as many as export makes" 11 "$(nspans "$T/b.otlp")"
check_eq "the capture is whole otherwise: 11 requests, 11 answers, 1 notification" "11 11 1" \
	"$(sql "$T/b.db" "select count(*) filter (where kind = 'request') || ' ' ||
		count(*) filter (where kind = 'response') || ' ' ||
		count(*) filter (where kind = 'notification') from message")"

# ---- 3. Gone mid-run ----
start_recv "$T/r3.jsonl" --exit-after 1
start_tap "$T/c.db" "$UP" --otlp "$RECV_URL"
"$BENCH/http-load" ping 10 "$TAP_URL/mcp" > "$T/c1.load" 2>&1
check_eq "gone mid-run: session 1's 10 requests answered" 0 $?
n=0
while kill -0 "$RECV_PID" 2> /dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
check "the receiver took a POST and exited" sh -c '! kill -0 "$1" 2> /dev/null' - "$RECV_PID"
wait "$RECV_PID" 2> /dev/null
"$BENCH/http-load" ping 15 "$TAP_URL/mcp" > "$T/c2.load" 2>&1
check_eq "... session 2's 15 requests answered all the same" 0 $?
stop_tap
check_eq "the tap stops: exit 0" 0 "$TAP_STATUS"
session_spans "$T/c.db" 1
session_spans "$T/c.db" 2
"$MCPTAP" export -r "$T/c.db" -T otlp -o "$T/c.otlp"
GOT=$(nspans "$T/r3.jsonl")
spans "$T/c.otlp" > "$T/c.sorted"
spans "$T/r3.jsonl" > "$T/r3.sorted"
check_eq "what the receiver took is export's, span for span" "" "$(LC_ALL=C comm -13 "$T/c.sorted" "$T/r3.sorted")"
check "... at least one POST of it" [ "$GOT" -ge 1 ]
lost() { # lost SESSION: the spans its gap row counts (0: none)
	otlp_gaps "$T/c.db" | awk -v s="$1" '$1 == s { print $3; n = 1 } END { if (!n) print 0 }'
}
for s in 1 2; do
	want=$(($(nspans "$T/c.db.$s.otlp") - $(spans --traces-of "$T/c.db.$s.otlp" "$T/r3.jsonl" | wc -l)))
	check_eq "session $s: its gap row counts the spans not taken" "$want" "$(lost "$s")"
done
check_eq "session 2's 16 spans were all lost" 16 "$(lost 2)"
TOTAL=$(nspans "$T/c.otlp")
check_eq "... and the line on stderr counts them all" \
	"mcptap: warning: $((TOTAL - GOT)) of $TOTAL spans were not pushed to $RECV_URL/v1/traces" \
	"$(grep -v '^mcptap: listening on' "$TAP_ERR" | sed 's/ (.*//')"

kill "$echo_pid" 2> /dev/null
wait "$echo_pid" 2> /dev/null
finish
