#!/bin/sh
# Every file mcptap makes is mode 0600 whatever the umask (000 here): the
# capture files of record (stdio and HTTP), import and sniff, with their -wal
# and -shm while they are written; the redaction key (its folders 0700); and
# replay --as server --report's file, from the stdio mock and the HTTP mock,
# also when a file of mode 0666 was there before it and when its FILE.tmp was
# left behind with that mode.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/pcap.sh"

umask 000
export MCPTAP_REDACT_KEY_FILE="$T/keys/a/redact.key"
mode() { stat -c %a "$1" 2> /dev/null || echo missing; }

# (A file made here under umask 000, for comparison: 666.)
: > "$T/plain"
check_eq "umask 000 is in force: a shell's new file is 666" 666 "$(mode "$T/plain")"

# record, stdio: the file, and its -wal and -shm while the tap still runs.
msg='{"jsonrpc":"2.0","id":1,"method":"ping"}'
mkfifo "$T/fifo"
"$MCPTAP" record -w "$T/r.db" -- cat < "$T/fifo" > /dev/null 2> "$T/r.err" &
tap=$!
exec 7> "$T/fifo"
echo "$msg" >&7
n=0
while [ "$("$MCPTAP" show -r "$T/r.db" -T json 2> /dev/null | grep -c '"dir":"c2s"')" != 1 ] && [ $n -lt 100 ]; do
	sleep 0.05
	n=$((n + 1))
done
check_eq "record: the capture file, -wal and -shm are 600 while it runs" "600 600 600" \
	"$(mode "$T/r.db") $(mode "$T/r.db-wal") $(mode "$T/r.db-shm")"
exec 7>&-
wait $tap
check_eq "record: the redaction key it made is 600" 600 "$(mode "$T/keys/a/redact.key")"
check_eq "record: the key's folders are 700" "700 700" "$(mode "$T/keys") $(mode "$T/keys/a")"

# record --upstream (the HTTP tap).
"$BENCH/http-echo" 0 > "$T/echo.port" 2> "$T/echo.err" &
echo_pid=$!
trap 'kill "$echo_pid" ${TAP_PID:-} ${MOCK_PID:-} 2> /dev/null' EXIT
n=0
while [ ! -s "$T/echo.port" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
start_tap "$T/h.db" "http://127.0.0.1:$(cat "$T/echo.port")"
curl -s -o /dev/null -H 'Content-Type: application/json' --data "$msg" "$TAP_URL/mcp"
n=0
while [ "$(sql "$T/h.db" "select count(*) from message" 2> /dev/null)" != 2 ] && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
check_eq "record --upstream: the capture file, -wal and -shm are 600 while it runs" "600 600 600" \
	"$(mode "$T/h.db") $(mode "$T/h.db-wal") $(mode "$T/h.db-shm")"
stop_tap
check_eq "record --upstream: exit 0" 0 "$TAP_STATUS"

# import.
body='{"jsonrpc":"2.0","id":1,"method":"ping"}'
printf 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#body} "$body" > "$T/req.http"
rb='{"jsonrpc":"2.0","id":1,"result":{}}'
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#rb} "$rb" > "$T/resp.http"
"$GEN" -c "$T/req.http" -S "$T/resp.http" "$T/c.pcap" || die "pcap-gen failed"
"$MCPTAP" import -w "$T/i.db" "$T/c.pcap" 2> "$T/i.err"
check_eq "import: exit 0" 0 $?
check_eq "import: the capture file is 600" 600 "$(mode "$T/i.db")"

# sniff (where this user may capture).
if can_capture; then
	"$MCPTAP" sniff -w "$T/s.db" -i lo --duration 1 > /dev/null 2> "$T/s.err"
	check_eq "sniff: the capture file is 600" 600 "$(mode "$T/s.db")"
else
	echo "# sniff skipped: this user may not capture"
fi

# replay --as server --report: the stdio mock.
"$MCPTAP" replay -r "$T/r.db" --as server --report "$T/rep1.json" < /dev/null > /dev/null 2>&1
check_eq "the stdio mock's --report file is 600" 600 "$(mode "$T/rep1.json")"
check "and it is the report" grep -q '"ended": "eof"' "$T/rep1.json"
echo old > "$T/rep2.json"
echo stale > "$T/rep2.json.tmp"
check_eq "(a report and its FILE.tmp left there are 666)" "666 666" "$(mode "$T/rep2.json") $(mode "$T/rep2.json.tmp")"
"$MCPTAP" replay -r "$T/r.db" --as server --report "$T/rep2.json" < /dev/null > /dev/null 2>&1
check_eq "a report written over them is 600, its FILE.tmp gone" "600 missing" \
	"$(mode "$T/rep2.json") $(mode "$T/rep2.json.tmp")"

# replay --as server --listen --report: the HTTP mock.
start_mock "$T/h.db" --report "$T/rep3.json"
curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	--data "$msg" "$MOCK_URL"
stop_mock
check_eq "the HTTP mock stops on SIGINT" 0 "$MOCK_STATUS"
check_eq "the HTTP mock's --report file is 600" 600 "$(mode "$T/rep3.json")"

finish
