# tests/e2e/otlp-push.sh - the OTLP receiver of the --otlp tests. Sourced after
# lib.sh and http-tap.sh (bg_start, bg_stop); not a test itself.
#
#   start_recv OUT [OPTION...]
#                  runs tests/node/otlp-receiver.mjs --out OUT OPTION... in the
#                  background and waits for it to listen: RECV_PID, RECV_URL (its
#                  http://127.0.0.1:PORT), RECV_ERR (its stderr: a line per POST)
#   stop_recv      SIGTERM, and its exit status in RECV_STATUS
#   spans [--traces-of FILE] FILE...
#                  the spans of OTLP/JSON Lines files, one canonical line each,
#                  sorted (tests/node/otlp-spans.mjs); a missing file has none
#   nspans FILE... how many
#   wait_spans FILE N
#                  waits (30 s at most) until FILE holds N spans or more; non-zero
#                  when it does not
#   otlp_gaps DB   the capture's gap rows of spans not pushed: "SESSION REASON"

start_recv() {
	_out=$1
	shift
	: >> "$_out"
	bg_start RECV 's/^otlp-receiver listening on \(http:.*\)$/\1/p' "the OTLP receiver" \
		node "$NODEDIR/otlp-receiver.mjs" --out "$_out" "$@"
}

stop_recv() {
	bg_stop RECV TERM
}

spans() {
	for _f in "$@"; do
		case $_f in --*) ;; *) [ -f "$_f" ] || : > "$_f" ;; esac
	done
	node "$NODEDIR/otlp-spans.mjs" "$@"
}

nspans() {
	spans "$@" | wc -l | tr -d ' '
}

wait_spans() {
	_n=0
	while [ "$_n" -lt 300 ]; do
		[ "$(nspans "$1")" -ge "$2" ] && return 0
		sleep 0.1
		_n=$((_n + 1))
	done
	return 1
}

otlp_gaps() {
	sqlite3 -batch -noheader -separator ' ' "$1" \
		"select session, reason from gap where reason like 'otlp:%' order by session"
}
