#!/bin/sh
# t0369-otlp-import-sniff: --otlp on the pcap paths. `mcptap import --otlp`
# of the committed captures (Streamable HTTP and legacy HTTP+SSE) pushes the
# spans that export -T otlp makes of the imported file, ids included, with
# the packets' times; `mcptap sniff --otlp` on loopback (as root, or with
# CAP_NET_RAW; skipped otherwise) pushes those of the sessions it captures.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/pcap.sh"
. "$(dirname "$0")/otlp-push.sh"

need_npm protobufjs @opentelemetry/otlp-transformer
FIX=$TOP/tests/fixtures/pcap

# ---- import ----
start_recv "$T/r.jsonl"
for n in http sse; do
	: > "$T/r.jsonl"
	"$MCPTAP" import -w "$T/$n.db" --otlp "$RECV_URL" --otlp-spans both "$FIX/$n.pcap" 2> "$T/$n.sum"
	check_eq "import --otlp of $n.pcap: exit 0" 0 $?
	"$MCPTAP" export -r "$T/$n.db" -T otlp --spans both -o "$T/$n.otlp"
	N=$(nspans "$T/$n.otlp")
	check "$n.pcap: export makes spans of it" [ "$N" -ge 10 ]
	check "$n.pcap: the receiver got as many" wait_spans "$T/r.jsonl" "$N"
	check_eq "$n.pcap: every span once, as export -T otlp --spans both makes them" \
		"$(spans "$T/$n.otlp")" "$(spans "$T/r.jsonl")"
	check_eq "$n.pcap: no span not pushed" "" "$(grep 'not pushed' "$T/$n.sum")"
done
stop_recv

# ---- sniff ----
if [ "$(id -u)" -ne 0 ] && ! getcap "$MCPTAP" 2> /dev/null | grep -q cap_net_raw; then
	echo "# skipped sniff --otlp: it needs root or CAP_NET_RAW (setcap cap_net_raw+ep mcptap)"
	finish
fi
[ -x "$BENCH/http-echo" ] && [ -x "$BENCH/http-load" ] || die "the bench peers are not built: run make"
"$BENCH/http-echo" 0 > "$T/echo.port" 2> "$T/echo.err" &
echo_pid=$!
n=0
while [ ! -s "$T/echo.port" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
p=$(cat "$T/echo.port")
start_recv "$T/s.jsonl"
"$MCPTAP" sniff -w "$T/s.db" -i lo -f "tcp port $p" --otlp "$RECV_URL" > /dev/null 2> "$T/sniff.err" &
sniff=$!
n=0
while ! grep -q "^mcptap: capturing on interface 'lo'" "$T/sniff.err" && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
check "sniff --otlp captures" grep -q "^mcptap: capturing on interface 'lo'" "$T/sniff.err"
sleep 0.5
"$BENCH/http-load" ping 30 "http://127.0.0.1:$p/mcp" > "$T/load.out" 2>&1
check_eq "30 requests to the server sniffed" 0 $?
check "the receiver gets the 31 spans while sniff runs" wait_spans "$T/s.jsonl" 31
kill -INT $sniff
wait $sniff
check_eq "SIGINT: sniff exits 0" 0 $?
"$MCPTAP" export -r "$T/s.db" -T otlp -o "$T/s.otlp"
check_eq "sniff: the spans pushed are export -T otlp's" "$(spans "$T/s.otlp")" "$(spans "$T/s.jsonl")"
check_eq "sniff: none not pushed" "" "$(grep 'not pushed' "$T/sniff.err")"
stop_recv
kill "$echo_pid" 2> /dev/null
wait "$echo_pid" 2> /dev/null
finish
