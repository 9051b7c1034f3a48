#!/bin/sh
# The HTTP tap and the HTTP mock at their descriptor limit (ulimit -n 64): 100
# connections held open (tests/peers/hold-conns) take every descriptor, the
# rest wait in the kernel's queue. Each server then pauses accepting instead
# of calling accept again at once: over 2 s it uses under 5% of a CPU, says
# at most a line a second on stderr (how many accepts were refused since the
# last line), and once the connections are closed it answers a real MCP
# request (curl: initialize, as recorded) within 2 s. The tap runs 2 event
# loops, each with a listener of its own; the mock is its upstream (with the
# usual limit), and then itself the server at its limit.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

LIMIT=64
WINDOW_MS=2000

# A recording: the C peers over stdio (the mock serves it over HTTP).
"$PEERS/mcp-client" --log "$T/rec.jsonl" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" 2> /dev/null
check_eq "recorded the C peers" 0 $?
INIT=$(sql "$T/c.db" "select cast(raw as text) from message where dir = 'c2s' and method = 'initialize'")
ANSWER=$(sql "$T/c.db" "select cast(raw as text) from message where dir = 's2c' and request_seq = (select seq from message where dir = 'c2s' and method = 'initialize')")
check "the recorded initialize and its answer" test -n "$INIT" -a -n "$ANSWER"

# ticks PID: the process's CPU time (user and system, every thread), in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# fds_below PID: how many of its descriptors are under LIMIT (all of them: at the limit).
fds_below() { ls "/proc/$1/fd" | awk -v n="$LIMIT" '$1 < n' | wc -l; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

WARN_RE="^mcptap: warning: cannot accept connections: Too many open files (ulimit -n $LIMIT); [0-9]* accepts\{0,1\} refused since the last line, trying again in [0-9]* ms$"

# at_limit WHAT PID ERR URL: bring the server to its limit and measure it.
at_limit() {
	_what=$1 _pid=$2 _err=$3 _url=$4
	_port=${_url#http://127.0.0.1:}
	_port=${_port%%/*}
	_held=$T/held-$_pid
	"$PEERS/hold-conns" 127.0.0.1 "$_port" 100 > "$_held" 2> "$_held.err" &
	_hold=$!
	_n=0
	while [ "$_n" -lt 50 ] && ! grep -q '^held' "$_held" 2> /dev/null; do sleep 0.1; _n=$((_n + 1)); done
	check_eq "$_what: 100 connections made (those not accepted wait in the queue)" "held 100" "$(cat "$_held")"
	_n=0
	while [ "$_n" -lt 30 ] && [ "$(fds_below "$_pid")" -lt "$LIMIT" ]; do sleep 0.1; _n=$((_n + 1)); done
	check_eq "$_what: at its limit (every descriptor under $LIMIT in use)" "$LIMIT" "$(fds_below "$_pid")"

	_l0=$(wc -l < "$_err")
	_c0=$(ticks "$_pid")
	_w0=$(now_ms)
	sleep "$((WINDOW_MS / 1000))"
	_c1=$(ticks "$_pid")
	_w1=$(now_ms)
	_l1=$(wc -l < "$_err")
	_tck=$(getconf CLK_TCK)
	# CPU in tenths of a percent of the wall time.
	_cpu=$(((_c1 - _c0) * 1000 * 1000 / _tck / (_w1 - _w0)))
	_lines=$((_l1 - _l0))
	echo "# $_what at its limit: CPU $((_cpu / 10)).$((_cpu % 10))% over $((_w1 - _w0)) ms ($((_c1 - _c0)) ticks), $_lines lines on stderr"
	check "$_what: under 5% of a CPU at its limit" test "$_cpu" -lt 50
	check "$_what: at most a line a second on stderr, and one more" \
		test "$_lines" -le "$(((_w1 - _w0) / 1000 + 1))"
	check_eq "$_what: the first line says the limit, one refusal and the first pause" \
		"mcptap: warning: cannot accept connections: Too many open files (ulimit -n $LIMIT); 1 accept refused, trying again in 50 ms" \
		"$(grep -v '^mcptap: .*listen' "$_err" | sed -n 1p)"
	check_eq "$_what: every later line counts the refusals since the one before" "" \
		"$(grep -v '^mcptap: .*listen' "$_err" | sed 1d | grep -v "$WARN_RE" | head -3)"
	# (A server that spins writes megabytes a second: keep a failure's scratch small.)
	if [ "$(wc -c < "$_err")" -gt 65536 ]; then
		head -c 65536 "$_err" > "$_err.cut"
		cat "$_err.cut" > "$_err"
	fi

	kill "$_hold"
	wait "$_hold" 2> /dev/null
	_t0=$(now_ms)
	_got=$(curl -s --max-time 5 -H 'Accept: application/json, text/event-stream' \
		-H 'Content-Type: application/json' --data "$INIT" "$_url")
	_took=$(($(now_ms) - _t0))
	echo "# $_what: answered $_took ms after the connections were closed"
	check_eq "$_what: the connections closed, initialize is answered as recorded" "$ANSWER" "$_got"
	check "$_what: within 2 s" test "$_took" -lt 2000
}

# The mock with the usual limit: the tap's upstream.
start_mock "$T/c.db"
UP_URL=$MOCK_URL UP_PID=$MOCK_PID

# 1. The tap, 2 event loops, at 64 descriptors.
bg_start TAP 's/^mcptap: listening on \(http:[^,]*\),.*/\1/p' "the HTTP tap" \
	sh -c 'ulimit -n "$0" && exec "$@"' "$LIMIT" "$MCPTAP" record -w "$T/t.db" --threads 2 \
	--listen 127.0.0.1:0 --upstream "$UP_URL"
at_limit "the tap" "$TAP_PID" "$TAP_ERR" "$TAP_URL/mcp"
stop_tap INT
check_eq "SIGINT: the tap exits 0" 0 "$TAP_STATUS"
check_eq "the tap stored the one exchange it relayed" "POST|/mcp|200|complete" \
	"$(sql "$T/t.db" "select method, target, status, outcome from http_exchange")"

# 2. The mock at 64 descriptors.
bg_start MOCK 's/^mcptap: replay: the mock server listens on \(http:[^ ]*\)$/\1/p' "the HTTP mock" \
	sh -c 'ulimit -n "$0" && exec "$@"' "$LIMIT" "$MCPTAP" replay -r "$T/c.db" --as server \
	--listen 127.0.0.1:0
at_limit "the mock" "$MOCK_PID" "$MOCK_ERR" "$MOCK_URL"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"

MOCK_PID=$UP_PID
stop_mock
check_eq "SIGINT: the upstream mock exits 0" 0 "$MOCK_STATUS"

finish
