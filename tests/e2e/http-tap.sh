# tests/e2e/http-tap.sh - the HTTP tap in end-to-end tests. Sourced after lib.sh;
# not a test itself (run.sh runs only tNNNN-*.sh).
#
#   start_tap DB UPSTREAM [OPTION...]
#                  runs `mcptap record -w DB --listen 127.0.0.1:0 --upstream UPSTREAM`
#                  in the background and waits for it to listen: TAP_PID is its pid,
#                  TAP_URL its http://127.0.0.1:PORT, TAP_ERR its stderr's file
#   stop_tap [SIGNAL]
#                  sends SIGNAL (INT) and waits for it: TAP_STATUS is its exit status
#                  (124 when it did not exit within 15 s; it is then killed)
#   start_mock DB [OPTION...]
#                  runs `mcptap replay -r DB --as server --listen 127.0.0.1:0 OPTION...`
#                  (the HTTP mock) in the background and waits for it to listen:
#                  MOCK_PID, MOCK_URL (its endpoint), MOCK_ERR (its stderr's file)
#   stop_mock      SIGINT, and its exit status in MOCK_STATUS (124: not stopped in 15 s)
#   wait_committed DB SESSION LOG
#                  while the tap runs, waits (10 s at most) until session SESSION of
#                  DB counts at least as many messages each way as the client's log
#                  LOG ({"dir":...} lines) holds: the tap commits in batches (20 ms)

start_tap() {
	_db=$1
	_up=$2
	shift 2
	TAP_ERR=$T/tap-$$-$(date +%s%N).err
	: > "$TAP_ERR"
	"$MCPTAP" record -w "$_db" --listen 127.0.0.1:0 --upstream "$_up" "$@" < /dev/null > /dev/null 2> "$TAP_ERR" &
	TAP_PID=$!
	_n=0
	TAP_URL=""
	while [ "$_n" -lt 100 ]; do
		TAP_URL=$(sed -n 's/^mcptap: listening on \(http:[^,]*\),.*/\1/p' "$TAP_ERR")
		[ -n "$TAP_URL" ] && return 0
		kill -0 "$TAP_PID" 2> /dev/null || break
		sleep 0.1
		_n=$((_n + 1))
	done
	cat "$TAP_ERR" >&2
	die "the HTTP tap did not start"
}

stop_tap() {
	kill -"${1:-INT}" "$TAP_PID" 2> /dev/null
	_n=0
	while kill -0 "$TAP_PID" 2> /dev/null && [ "$_n" -lt 150 ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	if kill -0 "$TAP_PID" 2> /dev/null; then
		kill -KILL "$TAP_PID" 2> /dev/null
		wait "$TAP_PID" 2> /dev/null
		TAP_STATUS=124
		return
	fi
	wait "$TAP_PID"
	TAP_STATUS=$?
}

wait_committed() {
	_c2s=$(grep -c '^{"dir":"c2s"' "$3")
	_s2c=$(grep -c '^{"dir":"s2c"' "$3")
	_n=0
	while [ "$_n" -lt 100 ]; do
		_have=$(sqlite3 "$1" "select msgs_c2s >= $_c2s and msgs_s2c >= $_s2c from session where id = $2" 2> /dev/null)
		[ "$_have" = 1 ] && return 0
		sleep 0.1
		_n=$((_n + 1))
	done
	return 1
}

start_mock() {
	_db=$1
	shift
	MOCK_ERR=$T/mock-$$-$(date +%s%N).err
	: > "$MOCK_ERR"
	"$MCPTAP" replay -r "$_db" --as server --listen 127.0.0.1:0 "$@" < /dev/null > /dev/null 2> "$MOCK_ERR" &
	MOCK_PID=$!
	_n=0
	MOCK_URL=""
	while [ "$_n" -lt 100 ]; do
		MOCK_URL=$(sed -n 's/^mcptap: replay: the mock server listens on \(http:[^ ]*\)$/\1/p' "$MOCK_ERR")
		[ -n "$MOCK_URL" ] && return 0
		kill -0 "$MOCK_PID" 2> /dev/null || break
		sleep 0.1
		_n=$((_n + 1))
	done
	cat "$MOCK_ERR" >&2
	die "the HTTP mock did not start"
}

stop_mock() {
	kill -INT "$MOCK_PID" 2> /dev/null
	_n=0
	while kill -0 "$MOCK_PID" 2> /dev/null && [ "$_n" -lt 150 ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	if kill -0 "$MOCK_PID" 2> /dev/null; then
		kill -KILL "$MOCK_PID"
		wait "$MOCK_PID" 2> /dev/null
		MOCK_STATUS=124
		return
	fi
	wait "$MOCK_PID"
	MOCK_STATUS=$?
}
