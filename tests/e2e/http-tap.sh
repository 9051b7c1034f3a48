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

# bg_start PREFIX SED_PATTERN WHAT COMMAND...: runs COMMAND in the background
# (stdin /dev/null, stderr in a file of its own) and waits (10 s at most) for the
# line SED_PATTERN picks its URL from: PREFIX_PID, PREFIX_URL and PREFIX_ERR are
# set; dies saying WHAT did not start when it exits or never says.
bg_start() {
	_pre=$1 _pat=$2 _what=$3
	shift 3
	_err=$T/$_pre-$$-$(date +%s%N).err
	: > "$_err"
	"$@" < /dev/null > /dev/null 2> "$_err" &
	_pid=$!
	eval "${_pre}_PID=$_pid ${_pre}_ERR=\$_err ${_pre}_URL="
	_n=0
	while [ "$_n" -lt 100 ]; do
		_url=$(sed -n "$_pat" "$_err")
		if [ -n "$_url" ]; then
			eval "${_pre}_URL=\$_url"
			return 0
		fi
		kill -0 "$_pid" 2> /dev/null || break
		sleep 0.1
		_n=$((_n + 1))
	done
	cat "$_err" >&2
	die "$_what did not start"
}

# bg_stop PREFIX SIGNAL: sends SIGNAL to PREFIX_PID and waits (15 s at most, then
# SIGKILL): PREFIX_STATUS is its exit status, 124 when it had to be killed.
bg_stop() {
	eval "_pid=\$${1}_PID"
	kill -"$2" "$_pid" 2> /dev/null
	_n=0
	while kill -0 "$_pid" 2> /dev/null && [ "$_n" -lt 150 ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	if kill -0 "$_pid" 2> /dev/null; then
		kill -KILL "$_pid" 2> /dev/null
		wait "$_pid" 2> /dev/null
		eval "${1}_STATUS=124"
		return
	fi
	wait "$_pid"
	eval "${1}_STATUS=$?"
}

start_tap() {
	_db=$1 _up=$2
	shift 2
	bg_start TAP 's/^mcptap: listening on \(http:[^,]*\),.*/\1/p' "the HTTP tap" \
		"$MCPTAP" record -w "$_db" --listen 127.0.0.1:0 --upstream "$_up" "$@"
}

stop_tap() {
	bg_stop TAP "${1:-INT}"
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
	bg_start MOCK 's/^mcptap: replay: the mock server listens on \(http:[^ ]*\)$/\1/p' "the HTTP mock" \
		"$MCPTAP" replay -r "$_db" --as server --listen 127.0.0.1:0 "$@"
}

stop_mock() {
	bg_stop MOCK INT
}
