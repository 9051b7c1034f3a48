#!/bin/sh
# Durations on the command line (issue 22): every option that takes one takes
# a number with a unit, ns, us, ms, s, m or h (500ms, 1.5s, 2m), and a bare
# number in the option's old unit, so that old command lines keep working.
# Options whose name carried a unit have a name without one (--timeout,
# --batch, --drain-timeout, --stop-timeout); the old names still work.
#   1. replay --as client: --timeout 300ms, 0.3s, 300 and --timeout-ms 300 each
#      give up on an answer after 300 ms, and say so; --timeout 1.5s after 1.5 s;
#   2. analyze: --timeout 2s is --timeout-ms 2000 (LIFE-015's threshold), and
#      the threshold is exact to the nanosecond;
#   3. import --idle: 5ms, 0.005 (a bare number is seconds) and 5000us close
#      the same connections, 10ms fewer, 2 and 2s none;
#   4. record: --drain-timeout 300ms and --drain-ms 300 wait 300 ms of quiet,
#      1.5s and 1500 wait 1.5 s; the HTTP tap's --client-timeout 1.5s answers a
#      trickled head 408 at 1.5 s, --stop-timeout 300ms gives an open exchange
#      300 ms after SIGINT;
#   5. sniff --duration 300ms stops after 300 ms (where it may capture);
#   6. a bad value, malformed, negative, empty, overflowing or out of range, is
#      a usage error (2) saying which option, what it takes and what a bare
#      number is, in one line, and where the help is; nothing on stdout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"
LOAD=$PEERS/fixture-load

ms_since() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

# 1. A server that reads every request and never answers.
cat > "$T/deaf.fx" <<'EOF'
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}
< {"jsonrpc":"2.0","id":1,"result":{"content":[]}}
EOF
"$LOAD" "$T/deaf.fx" "$T/deaf.db" || die "cannot load the deaf server's recording"
deaf="sh -c 'cat > /dev/null'"
for v in "--timeout 300ms" "--timeout 0.3s" "--timeout 300" "--timeout-ms 300" "--timeout 1.5s"; do
	want=300
	[ "$v" = "--timeout 1.5s" ] && want=1500
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	"$MCPTAP" replay -r "$T/deaf.db" --as client --runs 1 --no-store $v -- sh -c 'cat > /dev/null' \
		> "$T/r.out" 2> "$T/r.err"
	rc=$?
	ms=$(ms_since "$t0")
	check_eq "replay $v: the request MISSING after $want ms, exit 1" \
		"1|MISSING #1 tools/call t: no answer within $want ms
replay: 1 request: 0 passed, 0 differed, 1 missing, 0 cancelled, 0 unanswered; 0 paths set aside as noise over 1 run (session 1 against $deaf)|" \
		"$rc|$(cat "$T/r.out")|$(cat "$T/r.err")"
	check "replay $v: it waited $want ms, not much more ($ms ms)" \
		test "$ms" -ge "$want" -a "$ms" -lt $((want + 1200))
done
# The name given is the one a mode error names.
"$MCPTAP" replay -r "$T/deaf.db" --as server --timeout 1s < /dev/null > "$T/out" 2> "$T/err"
check_eq "replay --as server --timeout: 2, and it says --timeout is for the client" \
	"2|mcptap: --timeout is for --as client, not --as server|" "$?|$(head -n 1 "$T/err")|$(cat "$T/out")"
"$MCPTAP" replay -r "$T/deaf.db" --as server --timeout-ms 1000 < /dev/null > "$T/out" 2> "$T/err"
check_eq "replay --as server --timeout-ms: 2, and it names --timeout-ms" \
	"2|mcptap: --timeout-ms is for --as client, not --as server" "$?|$(head -n 1 "$T/err")"
"$MCPTAP" replay -r "$T/deaf.db" --as client --client-timeout 2s -- true > "$T/out" 2> "$T/err"
check_eq "replay --as client --client-timeout 2s: 2, it is for the server" \
	"2|mcptap: --client-timeout is for --as server, not --as client" "$?|$(head -n 1 "$T/err")"

# 2. A tools/call answered 1500 ms after it was sent, never cancelled.
cat > "$T/late.fx" <<'EOF'
> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}
@t +1499
< {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}
EOF
"$LOAD" "$T/late.fx" "$T/late.db" || die "cannot load the late answer's recording"
# late OPTION...: analyze's exit status, and what LIFE-015 says, if anything.
late() {
	"$MCPTAP" analyze -r "$T/late.db" --no-store --rules LIFE-015 "$@" > "$T/a.out" 2>&1
	echo "$?|$(grep -o 'answered after [0-9]* ms (at #5), beyond the [0-9]* ms timeout' "$T/a.out")"
}
beyond() {
	echo "0|answered after 1500 ms (at #5), beyond the $1 ms timeout"
}
check_eq "analyze --timeout 2s: not late" "0|" "$(late --timeout 2s)"
check_eq "analyze --timeout-ms 2000: the same" "0|" "$(late --timeout-ms 2000)"
check_eq "analyze --timeout 1.4s: late, beyond 1400 ms" "$(beyond 1400)" "$(late --timeout 1.4s)"
check_eq "analyze --timeout-ms 1400: the same" "$(beyond 1400)" "$(late --timeout-ms 1400)"
check_eq "analyze --timeout 1400 (a bare number is ms): the same" "$(beyond 1400)" "$(late --timeout 1400)"
check_eq "analyze --timeout 1500ms: answered at the timeout, not beyond it" "0|" "$(late --timeout 1500ms)"
check_eq "analyze --timeout 1499999999ns: beyond it by a nanosecond" "$(beyond 1499)" \
	"$(late --timeout 1499999999ns)"
check_eq "analyze --timeout 0.025m (1.5 s): not late" "0|" "$(late --timeout 0.025m)"

# 3. 100 connections one after another, none closed, 20 µs a packet: those
# silent longer than --idle before the capture ends are closed after it.
"$BENCH/pcap-mcp-gen" -o 100 "$T/o.pcap" > /dev/null || die "pcap-mcp-gen -o 100 failed"
idled() {
	rm -f "$T/i.db" "$T/i.db-wal" "$T/i.db-shm"
	"$MCPTAP" import -w "$T/i.db" --idle "$1" "$T/o.pcap" > /dev/null 2> "$T/i.err"
	echo "$?|$(sed -n 's/^  limits: \([0-9]*\) connections closed after --idle$/\1/p' "$T/i.err")"
}
five=$(idled 5ms)
n=${five#0|}
case $five in 0\|[0-9]*) ;; *) n=-1 ;; esac
check "import --idle 5ms: exit 0, some connections closed, not all ($five)" test "$n" -gt 0 -a "$n" -lt 100
check_eq "import --idle 0.005 (a bare number is seconds): the same ones" "$five" "$(idled 0.005)"
check_eq "import --idle 5000us: the same ones" "$five" "$(idled 5000us)"
ten=$(idled 10ms)
check "import --idle 10ms: fewer ($ten)" test "${ten#0|}" -lt "${five#0|}"
check_eq "import --idle 2: none" "0|" "$(idled 2)"
check_eq "import --idle 2s: none" "0|" "$(idled 2s)"

# 4. record: a command that exits while a grandchild keeps its output open,
# silent: the tap waits for quiet that long, then ends.
for v in "--drain-timeout 300ms" "--drain-ms 300" "--drain-timeout 1.5s" "--drain-timeout 1500"; do
	want=300
	case $v in *1.5s | *1500) want=1500 ;; esac
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	"$MCPTAP" record -w "$T/d.db" $v -- sh -c 'sleep 3 & echo x' < /dev/null > "$T/d.out" 2> "$T/d.err"
	rc=$?
	ms=$(ms_since "$t0")
	check_eq "record $v: exit 0, the output relayed" "0|x|" "$rc|$(cat "$T/d.out")|$(cat "$T/d.err")"
	check "record $v: it waited $want ms of quiet ($ms ms)" \
		test "$ms" -ge "$want" -a "$ms" -lt $((want + 1200))
done

# The HTTP tap: an upstream that reads and never answers; a client that
# trickles its request head, a byte every 200 ms.
cat > "$T/up.mjs" <<'JS'
import net from "node:net";
const srv = net.createServer((s) => { s.on("data", () => {}); s.on("error", () => {}); });
srv.listen(0, "127.0.0.1", () => console.error(`up ${srv.address().port}`));
setTimeout(() => process.exit(0), 60000); // (gone by itself should the test die)
JS
bg_start UP 's/^up \([0-9]*\)$/\1/p' "the upstream" node "$T/up.mjs"
start_tap "$T/h.db" "http://127.0.0.1:$UP_URL" --client-timeout 1.5s --stop-timeout 300ms --batch 10ms
r=$(node -e '
const t0 = Date.now(), s = require("net").connect(Number(process.argv[1]), "127.0.0.1",
	() => { s.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"); setInterval(() => s.write("X"), 200); });
let got = "";
s.on("data", (d) => (got += d));
s.on("error", () => {});
s.on("close", () => { console.log(got.split("\r\n")[0] + "|" + (Date.now() - t0)); process.exit(0); });
setTimeout(() => { console.log("open|8000"); process.exit(0); }, 8000);' "${TAP_URL##*:}")
check_eq "record --client-timeout 1.5s: a trickled head gets 408, and is closed" \
	"HTTP/1.1 408 Request Timeout" "${r%|*}"
check "(after 1.5 s: ${r#*|} ms)" test "${r#*|}" -ge 1400 -a "${r#*|}" -lt 3500
curl -s -o /dev/null --max-time 20 -H 'Content-Type: application/json' \
	--data '{"jsonrpc":"2.0","id":1,"method":"ping"}' "$TAP_URL/never" &
client=$!
n=0 # (until the tap has stored the request: it is open)
while [ "$(sql "$T/h.db" "select count(*) from http_exchange where target = '/never'" 2> /dev/null)" != 1 ] &&
	[ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
t0=$(date +%s%N)
stop_tap INT
ms=$(ms_since "$t0")
wait "$client"
check_eq "record --stop-timeout 300ms: SIGINT with an exchange open, exit 0" 0 "$TAP_STATUS"
check "it gave the exchange 300 ms, not the default 2 s ($ms ms)" test "$ms" -ge 300 -a "$ms" -lt 1800
bg_stop UP TERM
check_eq "stored: the trickled head refused within 1500 ms, the open exchange stopped" \
	"POST /mcp 408 refused a request head not whole within 1500 ms (--client-timeout)
POST /never stopped the tap was stopped" \
	"$(sql "$T/h.db" "select method || ' ' || target || ' ' || coalesce(status || ' ', '') || outcome || coalesce(' ' || error, '') from http_exchange order by wall")"

# Every duration option of record, in its old form and with a unit: all taken
# (the error is the bad --threads after them).
for form in "--batch-ms 50 --drain-ms 100 --connect-timeout 1000 --upstream-timeout 1000 --client-timeout 1000 --stop-ms 300" \
	"--batch 50ms --drain-timeout 0.1s --connect-timeout 1m --upstream-timeout 1h --client-timeout 1500us --stop-timeout 2s"; do
	# shellcheck disable=SC2086
	"$MCPTAP" record -w "$T/x.db" --upstream http://127.0.0.1:1 $form --threads 0 > /dev/null 2> "$T/err"
	check_eq "record $form: taken" "2|mcptap: bad --threads '0' (1 to 64)" "$?|$(head -n 1 "$T/err")"
done

# 5. sniff --duration, where this user may capture.
t0=$(date +%s%N)
"$MCPTAP" sniff -w "$T/s.db" -i lo -f 'tcp port 9' --duration 300ms > /dev/null 2> "$T/s.err"
rc=$?
ms=$(ms_since "$t0")
if [ "$rc" -eq 2 ] && grep -q 'needs root or CAP_NET_RAW' "$T/s.err"; then
	echo "# skipped sniff --duration: this user may not capture"
else
	check_eq "sniff --duration 300ms: exit 0" 0 "$rc"
	check "it stopped after 300 ms ($ms ms)" test "$ms" -ge 300 -a "$ms" -lt 1500
fi

# 6. Bad values: CMD|OPTION|WHAT IT TAKES (the message's parenthesis).
ms_24h="a duration, 1ms to 24h: 500ms, 2s; a bare number is ms"
secs="a duration, 1ms to 8760h: 500ms, 2m; a bare number is seconds"
while IFS='|' read -r cmd opt what; do
	for v in -1 5x 1.5.2s "" 99999999999h; do
		case $cmd in
		record) set -- record -w "$T/x.db" "--$opt" "$v" -- true ;;
		analyze) set -- analyze -r "$T/late.db" --no-store "--$opt" "$v" ;;
		replay) set -- replay -r "$T/deaf.db" --as client "--$opt" "$v" -- true ;;
		import) set -- import -w "$T/x.db" "--$opt" "$v" "$T/o.pcap" ;;
		sniff) set -- sniff -w "$T/x.db" -i lo "--$opt" "$v" ;;
		esac
		"$MCPTAP" "$@" < /dev/null > "$T/out" 2> "$T/err"
		check_eq "$cmd --$opt '$v': 2, one line saying why and one where the help is" \
			"2|mcptap: bad --$opt '$v' ($what)|mcptap: see 'mcptap $cmd --help', or man mcptap|" \
			"$?|$(paste -sd '|' "$T/err")|$(cat "$T/out")"
	done
done <<EOF
record|batch|a duration, 1ms to 1m: 500ms, 2s; a bare number is ms
record|batch-ms|a duration, 1ms to 1m: 500ms, 2s; a bare number is ms
record|drain-timeout|a duration, 1ms to 1h: 500ms, 2s; a bare number is ms
record|drain-ms|a duration, 1ms to 1h: 500ms, 2s; a bare number is ms
record|connect-timeout|$ms_24h
record|upstream-timeout|$ms_24h
record|client-timeout|$ms_24h
record|stop-timeout|$ms_24h
record|stop-ms|$ms_24h
analyze|timeout|a duration above 0: 500ms, 2s; a bare number is ms
analyze|timeout-ms|a duration above 0: 500ms, 2s; a bare number is ms
replay|timeout|a duration, 1ms to 1h: 500ms, 2s; a bare number is ms
replay|timeout-ms|a duration, 1ms to 1h: 500ms, 2s; a bare number is ms
replay|client-timeout|$ms_24h
import|idle|$secs
sniff|idle|$secs
sniff|duration|$secs
EOF
# Out of range: never a positive value made 0, never one past the limit.
# oor VALUE OPTION ARG...: mcptap ARG... OPTION VALUE is refused (2), naming both.
oor() {
	_v=$1 _o=$2
	shift 2
	"$MCPTAP" "$@" "$_o" "$_v" < /dev/null > /dev/null 2> "$T/err"
	check_eq "$1 $_o '$_v': out of range, 2" "2|bad $_o '$_v'" \
		"$?|$(sed -n "s/^mcptap: bad \(--[a-z-]* '[^']*'\) .*/bad \1/p" "$T/err")"
}
oor 0 --timeout analyze -r "$T/late.db" --no-store
oor 0.4ns --timeout-ms analyze -r "$T/late.db" --no-store
oor 500us --timeout replay -r "$T/deaf.db" --as client
oor 2h --timeout replay -r "$T/deaf.db" --as client
oor 0 --timeout-ms replay -r "$T/deaf.db" --as client
oor 61s --batch record -w "$T/x.db"
oor 0.9ms --stop-timeout record -w "$T/x.db"
oor 25h --client-timeout record -w "$T/x.db"
oor 0 --idle import -w "$T/x.db"
oor 8761h --idle import -w "$T/x.db"
oor 0.5ms --duration sniff -w "$T/x.db" -i lo
finish
