#!/bin/sh
# The HTTP tap gives memory back after a burst: 20 requests of 8 MiB at once
# through it (each body held until whole, copied by the reader; --memory 512M
# lets them all in), then, once they are done and stored, its resident memory
# falls back under 32 MiB (glibc kept over 300 MiB of freed arenas before:
# nothing gave them back),
# while an SSE stream stays open through it all. Every request was answered
# and stored as a gap (over --max-message). Then --memory bounds it: 30
# bodies of 15 MiB at once under --memory 16M all pass, the tap's peak stays
# under 128 MiB (it was 939 MB before any budget), and the budget is said once.
# Last, the same burst under the default limits, every body stored: the peak
# stays under 128 MiB (210 MB while a request whose body could not fit was
# read halfway beside the others, and the writer's copies were not counted),
# and once all is stored the tap is back under 32 MiB (45 MB while glibc
# served big buffers from its arenas).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

# vm NAME: the tap's VmHWM (its peak) or VmRSS, in kB.
vm() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB\$/\1/p" "/proc/$TAP_PID/status"; }

# burst DB LABEL TAP-OPTION...: a tap with those options into DB in front of an
# upstream that takes anything, and 30 bodies of 15 MiB sent through it at once.
burst() {
	_db=$1 _label=$2
	shift 2
	bg_start UP 's/^burst upstream \([0-9]*\)$/\1/p' "the upstream" node "$BENCH/burst.mjs" upstream
	start_tap "$_db" "http://127.0.0.1:$UP_URL" "$@"
	check_eq "$_label: 30 bodies of 15 MiB at once, every one answered" "sent 30: 30 x 202" \
		"$(node "$BENCH/burst.mjs" send "${TAP_URL##*:}" 30 15)"
}

bg_start UP 's/^burst upstream \([0-9]*\)$/\1/p' "the upstream" node "$BENCH/burst.mjs" upstream
start_tap "$T/m.db" "http://127.0.0.1:$UP_URL" --max-message 1M --memory 512M
# A stream open all along, as a Streamable HTTP client keeps one: it must not
# keep the memory of the others.
curl -s -N "$TAP_URL/mcp" > "$T/stream" &
curlpid=$!
check_eq "20 bodies of 8 MiB at once: every one answered" "sent 20: 20 x 202" \
	"$(node "$BENCH/burst.mjs" send "${TAP_URL##*:}" 20 8)"
peak=$(vm VmHWM)
n=0 # (the tap looks every second)
rss=$(vm VmRSS)
while [ "$rss" -ge 32768 ] && [ $n -lt 50 ]; do
	sleep 0.1
	n=$((n + 1))
	rss=$(vm VmRSS)
done
echo "# peak $peak kB, then $rss kB after $n tenths of a second"
check "the burst made the tap big (over 128 MiB at its peak: $peak kB)" test "$peak" -gt 131072
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# resident memory not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check "and its memory went back: under 32 MiB within 5 s ($rss kB)" test "$rss" -lt 32768
fi
check_eq "the stream was open all along" ": open" "$(head -n 1 "$T/stream")"
kill -0 $curlpid 2> /dev/null
check_eq "(and still is)" 0 $?
stop_tap
wait $curlpid
bg_stop UP TERM
check_eq "the tap exits 0" 0 "$TAP_STATUS"
check_eq "each body stored as a gap over --max-message" 20 \
	"$(sql "$T/m.db" "select count(*) from gap where reason like '%larger than --max-message%'")"

burst "$T/b.db" "--memory 16M" --max-message 1M --memory 16M --threads 2
peak=$(vm VmHWM)
echo "# peak $peak kB under --memory 16M"
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# resident memory not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check "the tap's peak under 128 MiB ($peak kB)" test "$peak" -lt 131072
fi
stop_tap
bg_stop UP TERM
check_eq "the tap exits 0" 0 "$TAP_STATUS"
check_eq "the budget said once" 1 \
	"$(grep -c '^mcptap: warning: --memory (16 MiB) reached: the tap reads its clients and the upstream more slowly until it has room$' "$TAP_ERR")"
check_eq "each body stored as a gap over --max-message" 30 \
	"$(sql "$T/b.db" "select count(*) from gap where reason like '%larger than --max-message%'")"

burst "$T/s.db" "the default limits" --threads 2
n=0
while [ "$(sql "$T/s.db" "select count(*) from message")" != 30 ] && [ $n -lt 300 ]; do
	sleep 0.1
	n=$((n + 1))
done
check_eq "every body stored whole" "30|30|0" \
	"$(sql "$T/s.db" "select count(*), sum(size = 15728640), (select count(*) from gap) from message")"
sleep 1.5 # (the tap looks every second whether to give memory back)
peak=$(vm VmHWM)
rss=$(vm VmRSS)
echo "# peak $peak kB storing every body, $rss kB once all was stored"
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# resident memory not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check "the tap's peak under 128 MiB storing every body ($peak kB)" test "$peak" -lt 131072
	check "and under 32 MiB once all was stored ($rss kB)" test "$rss" -lt 32768
fi
stop_tap
bg_stop UP TERM
check_eq "the tap exits 0" 0 "$TAP_STATUS"
finish
