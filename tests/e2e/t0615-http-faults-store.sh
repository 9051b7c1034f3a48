#!/bin/sh
# The HTTP tap when the store fails: the proxy goes on, every answer reaches
# its client, one warning is said, and the gap is recorded when the store
# allows. A full disk (a 512 KiB tmpfs in a private mount namespace) under a
# flood of 32 clients; an unwritable capture path; a body larger than
# --max-message (relayed whole, recorded as a gap).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

warnings() { grep -c "^mcptap: warning: cannot log to" "$1"; }

"$BENCH/http-echo" 0 > "$T/echo.port" 2> "$T/echo.err" &
echo_pid=$!
n=0
while [ ! -s "$T/echo.port" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
up=http://127.0.0.1:$(cat "$T/echo.port")

# 1. A full disk.
cat > "$T/full.sh" <<SH
mount -t tmpfs -o size=512k tmpfs "$T/mnt" || exit 99
"$MCPTAP" record -w "$T/mnt/full.db" --listen 127.0.0.1:0 --upstream "$up" 2> "$T/full.err" &
echo \$! > "$T/full.pid"
while [ ! -e "$T/stop" ]; do sleep 0.1; done
kill -INT \$(cat "$T/full.pid")
wait \$(cat "$T/full.pid")
echo \$? > "$T/full.rc"
sqlite3 "$T/mnt/full.db" 'pragma integrity_check' > "$T/integrity" 2>&1
sqlite3 "$T/mnt/full.db" "select count(*) from message; select coalesce(sum(messages), 0) > 0 from gap; select count(*) from http_exchange" > "$T/counts" 2>&1
"$MCPTAP" sessions -r "$T/mnt/full.db" > "$T/sessions" 2>&1
SH
mkdir "$T/mnt"
{ unshare -rm sh "$T/full.sh" 2> "$T/unshare.err" || { [ "$(id -u)" = 0 ] && unshare -m sh "$T/full.sh"; }; } &
ns=$!
n=0
while ! grep -q "listening on" "$T/full.err" 2> /dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
url=$(sed -n 's/^mcptap: listening on \(http:[^,]*\),.*/\1/p' "$T/full.err")
[ -n "$url" ] || die "the tap on a full disk did not start: $(cat "$T/unshare.err" "$T/full.err" 2> /dev/null)"
"$BENCH/http-load" flood 20000 32 "$url/mcp" > "$T/flood.out" 2>&1
check_eq "full disk: every one of 20000 requests of 32 clients answered right" 0 $?
touch "$T/stop"
wait $ns
check_eq "full disk: SIGINT, exit 0" 0 "$(cat "$T/full.rc")"
check_eq "full disk: one warning" 1 "$(warnings "$T/full.err")"
check_eq "full disk: the file is not corrupt" ok "$(cat "$T/integrity")"
check "full disk: some messages stored, the gap recorded ($(tr '\n' ' ' < "$T/counts"))" \
	sh -c '[ "$(sed -n 1p "$1")" -gt 0 ] && [ "$(sed -n 2p "$1")" = 1 ]' sh "$T/counts"
check "full disk: mcptap still reads it" grep -q "^   1 " "$T/sessions"

# 2. A capture path that cannot be written: relayed all the same.
start_tap /nonexistent-dir/x.db "$up"
"$BENCH/http-load" ping 200 "$TAP_URL/mcp" > "$T/ping.out" 2>&1
check_eq "unwritable path: 200 pings answered" 0 $?
stop_tap
check_eq "unwritable path: exit 0" 0 "$TAP_STATUS"
check_eq "unwritable path: one warning" 1 "$(warnings "$TAP_ERR")"

# 3. A body larger than --max-message: relayed whole, recorded as a gap.
start_tap "$T/big.db" "$up" --max-message 64k
big=$(node -e 'process.stdout.write(JSON.stringify({jsonrpc:"2.0",id:7,method:"tools/call",params:{name:"echo",arguments:{text:"x".repeat(100000)}}}))')
ans=$(printf '%s' "$big" | curl -s -H 'Content-Type: application/json' --data-binary @- "$TAP_URL/mcp")
check_eq "a 100 kB request through a 64k --max-message: answered" '{"jsonrpc":"2.0","id":7,"result":{}}' "$ans"
stop_tap
check_eq "exit 0" 0 "$TAP_STATUS"
check_eq "the request recorded as a gap of its size, its answer stored" "1|${#big}|0|response" \
	"$(sql "$T/big.db" "select g.messages, g.bytes, (select count(*) from message where kind = 'request'), (select group_concat(kind) from message) from gap g")"

kill "$echo_pid" 2> /dev/null
wait "$echo_pid" 2> /dev/null
finish
