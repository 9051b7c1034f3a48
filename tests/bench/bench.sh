#!/bin/sh
# tests/bench/bench.sh - mcptap's benchmarks. Figures are ratios measured side
# by side in one run; absolute times on a shared machine are noise.
#
# Every configuration is pinned the same way. The ping and the first flood run
# on one CPU (taskset -c $BENCH_CPU, default 0): the load client, the relay or
# tap, the tap's writer thread and the echo server all share it, so no
# configuration gains from a second core and no wake-up crosses CPUs. The
# second flood runs every configuration (and the floor) on CPUs 0 and 1, where
# the tap's writer thread can do the storing beside the relay, which is what
# it is for. Each figure is the median of $BENCH_RUNS runs (3).
#
#   (a) ping round trip p50/p99: direct pipes, a plain byte relay, mcptap record
#   (b) flood: pipelined small requests, messages/s both ways counted, timed from
#       the start to the exit of the tap, so every message is stored when it ends
#   (c) the storage floor: rows/s of a tight loop inserting parsed rows in batches
#   (d) mcptap's peak RSS over 1M messages (and over 200k, to show it is flat)
#   (e) the analyzer's messages/s; (f) the mock's ping and flood
#   (g) 8 taps flooding one capture file at once, against the same 8 into 8 files
#   (h) the relay's worst stall while another program holds the file's write
#       lock for 5 s: a line every millisecond, the largest gap the client sees,
#       against the same tap with no lock and a direct pipe
#   (i) peak RSS of analyze and stats at 1M and 10M messages ($BENCH_BIG), and
#       analyze against a scan that checks each message's JSON in SQLite
#   (j) sessions on a 20M-message file ($BENCH_HUGE)
set -eu
cd "$(dirname "$0")/../.."
B=tests/bench
CPU=${BENCH_CPU:-0}
RUNS=${BENCH_RUNS:-3}
PINGS=${BENCH_PINGS:-20000}
FLOOD=${BENCH_FLOOD:-300000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcptap-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pin() { taskset -c "$CPU" "$@"; }
pin2() { taskset -c 0,1 "$@"; }

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# field NAME: the value of NAME=... in the line on stdin
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

now_ns() { date +%s%N; }

ping_run() { # ping_run CONFIG -> "p50 p99"
	case $1 in
	direct) pin $B/load-client ping "$PINGS" -- $B/echo-server ;;
	relay) pin $B/load-client ping "$PINGS" -- $B/byte-relay -- $B/echo-server ;;
	tap) rm -f "$TMP/p.db"*; pin $B/load-client ping "$PINGS" -- ./mcptap record -w "$TMP/p.db" -- $B/echo-server ;;
	esac
}

flood_run() { # flood_run CONFIG N PIN -> messages/s, timed until the process tree exits
	t0=$(now_ns)
	case $1 in
	direct) $3 $B/load-client flood "$2" -- $B/echo-server >/dev/null ;;
	relay) $3 $B/load-client flood "$2" -- $B/byte-relay -- $B/echo-server >/dev/null ;;
	tap) rm -f "$TMP/f.db"*; $3 $B/load-client flood "$2" -- ./mcptap record -w "$TMP/f.db" -- $B/echo-server >/dev/null ;;
	esac
	t1=$(now_ns)
	awk -v n="$2" -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f\n", 2 * n / (ns / 1e9)}'
}

echo "mcptap benchmarks: $(nproc) CPUs; ping and flood pinned to CPU $CPU, flood also to CPUs 0,1; median of $RUNS runs"
echo

for c in direct relay tap; do : > "$TMP/ping50.$c"; : > "$TMP/ping99.$c"; : > "$TMP/flood.$c"; : > "$TMP/flood2.$c"; done
: > "$TMP/floor"
: > "$TMP/floor2"
i=0
while [ $i -lt "$RUNS" ]; do
	for c in direct relay tap; do
		out=$(ping_run $c)
		echo "$out" | field p50_us >> "$TMP/ping50.$c"
		echo "$out" | field p99_us >> "$TMP/ping99.$c"
		flood_run $c "$FLOOD" pin >> "$TMP/flood.$c"
		flood_run $c "$FLOOD" pin2 >> "$TMP/flood2.$c"
	done
	pin $B/store-floor $((2 * FLOOD)) "$TMP/floor.db" | field rows_per_s >> "$TMP/floor"
	pin2 $B/store-floor $((2 * FLOOD)) "$TMP/floor.db" | field rows_per_s >> "$TMP/floor2"
	i=$((i + 1))
done
stored=$(sqlite3 "$TMP/f.db" "select count(*) from message")

for c in direct relay tap; do
	eval "p50_$c=$(median < "$TMP/ping50.$c")"
	eval "p99_$c=$(median < "$TMP/ping99.$c")"
	eval "fl_$c=$(median < "$TMP/flood.$c")"
	eval "fl2_$c=$(median < "$TMP/flood2.$c")"
done
floor=$(median < "$TMP/floor")
floor2=$(median < "$TMP/floor2")

echo "(a) ping round trip, $PINGS sequential pings"
printf '    %-8s p50 %8s µs   p99 %8s µs\n' direct "$p50_direct" "$p99_direct" relay "$p50_relay" "$p99_relay" mcptap "$p50_tap" "$p99_tap"
awk -v t="$p50_tap" -v r="$p50_relay" -v d="$p50_direct" 'BEGIN {
	printf "    mcptap/relay p50 = %.2fx (target <= 1.15)   mcptap/direct p50 = %.2fx\n", t / r, t / d }'
echo
echo "(b) flood, $FLOOD pipelined requests ($((2 * FLOOD)) messages), until the tap has exited,"
echo "(c) against the storage floor: $((2 * FLOOD)) parsed rows inserted in batches, until the file is closed"
printf '    %-8s %14s %16s\n' "" "on CPU $CPU" "on CPUs 0,1"
printf '    %-8s %12s/s %14s/s\n' direct "$fl_direct" "$fl2_direct" relay "$fl_relay" "$fl2_relay" \
	mcptap "$fl_tap" "$fl2_tap" floor "$floor" "$floor2"
echo "    mcptap stored $stored of $((2 * FLOOD + 3)) messages (handshake included) in its last run"
awk -v t="$fl_tap" -v f="$floor" -v r="$fl_relay" -v t2="$fl2_tap" -v f2="$floor2" 'BEGIN {
	printf "    mcptap flood / storage floor = %.2fx on one CPU, %.2fx on two (target >= 0.8)\n", t / f, t2 / f2
	printf "    mcptap / plain relay = %.3fx on one CPU: SQLite, not the relay, is the limit\n", t / r }'
echo

# (d) RSS: mcptap's own peak, measured by GNU time around it.
rss() { # rss N -> KiB
	rm -f "$TMP/r.db"*
	pin $B/load-client flood "$1" -- /usr/bin/time -f '%M' -o "$TMP/rss" ./mcptap record -w "$TMP/r.db" -- $B/echo-server >/dev/null
	tail -n 1 "$TMP/rss"
}
if [ -x /usr/bin/time ]; then
	r200=$(rss 100000)
	r1m=$(rss 500000)
	echo "(d) peak RSS of mcptap record (its echo server included)"
	echo "    200k messages: $((r200 / 1024)) MiB   1M messages: $((r1m / 1024)) MiB   (target <= 32 MiB, flat)"
else
	echo "(d) peak RSS: skipped, /usr/bin/time is not installed (apt-get install time)"
fi

# (e) the analyzer: a generated clean session of ANALYZE_N messages (a mix of
# tools/call, progress, resources/read, prompts/get and resources/list), loaded through
# the writer, then analyzed with every rule on one CPU, findings not stored.
AN=${BENCH_ANALYZE:-1000000}
sh tests/bench/gen-session.sh "$AN" > "$TMP/gen.fx"
tests/peers/fixture-load "$TMP/gen.fx" "$TMP/gen.db"
rm -f "$TMP/gen.fx"
: > "$TMP/an"
i=0
while [ $i -lt "$RUNS" ]; do
	t0=$(now_ns)
	pin ./mcptap analyze -r "$TMP/gen.db" --no-store > "$TMP/an.out"
	t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/an"
	i=$((i + 1))
done
an_ns=$(median < "$TMP/an")
echo
echo "(e) analyze: $AN messages, every rule, one CPU"
awk -v n="$AN" -v ns="$an_ns" 'BEGIN {
	printf "    %.2f s, %.0f messages/s (target >= 1000000)\n", ns / 1e9, n / (ns / 1e9) }'
tail -n 1 "$TMP/an.out" | sed 's/^/    /'

# (f) replay: the load client against `mcptap replay --as server` (a mock of a
# recorded echo server) and, in the same run, against the C echo server itself.
pin $B/load-client ping "$PINGS" -- ./mcptap record -w "$TMP/rp.db" -- $B/echo-server > /dev/null
pin $B/load-client flood "$FLOOD" -- ./mcptap record -w "$TMP/rf.db" -- $B/echo-server > /dev/null
: > "$TMP/m50"; : > "$TMP/e50"; : > "$TMP/mfl"; : > "$TMP/efl"
i=0
while [ $i -lt "$RUNS" ]; do
	pin $B/load-client ping "$PINGS" -- $B/echo-server | field p50_us >> "$TMP/e50"
	pin $B/load-client ping "$PINGS" -- ./mcptap replay -r "$TMP/rp.db" --as server | field p50_us >> "$TMP/m50"
	pin $B/load-client flood "$FLOOD" -- $B/echo-server | field msgs_per_s >> "$TMP/efl"
	pin $B/load-client flood "$FLOOD" -- ./mcptap replay -r "$TMP/rf.db" --as server | field msgs_per_s >> "$TMP/mfl"
	i=$((i + 1))
done
echo
echo "(f) replay --as server over stdio, $PINGS pings and a flood of $FLOOD requests, one CPU"
awk -v m="$(median < "$TMP/m50")" -v e="$(median < "$TMP/e50")" -v mf="$(median < "$TMP/mfl")" -v ef="$(median < "$TMP/efl")" 'BEGIN {
	printf "    ping p50: mock %.1f µs, echo server %.1f µs: %.2fx (target <= 1.2)\n", m, e, m / e
	printf "    flood: mock %.0f requests/s (target >= 100000), echo server %.0f requests/s\n", mf / 2, ef / 2 }'
if [ -x /usr/bin/time ]; then
	pin $B/load-client flood "$FLOOD" -- /usr/bin/time -f '%M' -o "$TMP/mrss" ./mcptap replay -r "$TMP/rf.db" --as server --no-store > /dev/null
	echo "    the mock's peak RSS over a recording of $((2 * FLOOD + 3)) messages: $(( $(tail -n 1 "$TMP/mrss") / 1024 )) MiB"
fi

# (g) 8 taps at once, each a flood of FLOOD/8 requests through its own tap:
# into one capture file, then into 8 files. Timed until every tap has exited
# (all stored); CPUs 0 and 1.
many() { # many ONE|EIGHT -> messages/s over all 8
	rm -f "$TMP"/m*.db*
	t0=$(now_ns)
	for k in 1 2 3 4 5 6 7 8; do
		if [ "$1" = ONE ]; then db="$TMP/m.db"; else db="$TMP/m$k.db"; fi
		pin2 $B/load-client flood $((FLOOD / 8)) -- ./mcptap record -w "$db" -- $B/echo-server > /dev/null &
	done
	wait
	t1=$(now_ns)
	awk -v n=$((2 * (FLOOD / 8) * 8)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f\n", n / (ns / 1e9)}'
}
: > "$TMP/one"; : > "$TMP/eight"
i=0
while [ $i -lt "$RUNS" ]; do
	many ONE >> "$TMP/one"
	one_stored=$(sqlite3 "$TMP/m.db" "select count(*) from message")
	one_gaps=$(sqlite3 "$TMP/m.db" "select count(*) from gap")
	many EIGHT >> "$TMP/eight"
	i=$((i + 1))
done
echo
echo "(g) 8 taps flooding at once, $((FLOOD / 8)) requests each, CPUs 0,1"
awk -v o="$(median < "$TMP/one")" -v e="$(median < "$TMP/eight")" 'BEGIN {
	printf "    into one file: %.0f messages/s; into 8 files: %.0f messages/s; one / eight = %.2fx\n", o, e, o / e }'
echo "    one file, last run: $one_stored of $((8 * (2 * (FLOOD / 8) + 3))) messages stored, $one_gaps gaps"

# (h) A paced stream (a 2 KB line every ms for 7 s: 10 MB while the lock is
# held, more than --queue and less than --hold) and the largest gap between
# two lines at the client: a direct pipe, the tap, the tap while another
# program holds the file's write lock for 5 s (from 1 s on).
paced='use Time::HiRes "sleep"; $| = 1; my $p = "x" x 2000; for (1 .. 7000) { print "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":$_,\"p\":\"$p\"}}\n"; sleep 0.001 }'
gap='use Time::HiRes "time"; my ($last, $max, $n) = (undef, 0, 0); while (<STDIN>) { my $t = time; $max = $t - $last if defined $last && $t - $last > $max; $last = $t; $n++ } printf "%.1f %d\n", $max * 1000, $n'
perl -e "$paced" < /dev/null | perl -e "$gap" > "$TMP/g.direct"
rm -f "$TMP/l.db"*
./mcptap record -w "$TMP/l.db" -- perl -e "$paced" < /dev/null | perl -e "$gap" > "$TMP/g.tap"
(sleep 1; printf 'BEGIN IMMEDIATE;\n.shell date +%%s%%N > %s/l.t0\n.shell sleep 5\nCOMMIT;\n' "$TMP" |
	sqlite3 -cmd ".timeout 10000" "$TMP/l.db"; date +%s%N > "$TMP/l.t1") &
./mcptap record -w "$TMP/l.db" -- perl -e "$paced" < /dev/null 2> /dev/null | perl -e "$gap" > "$TMP/g.lock"
wait
echo
echo "(h) the relay's worst stall: a 2 KB line every ms for 7 s, the largest gap the client saw"
read -r gd nd < "$TMP/g.direct"; read -r gt nt < "$TMP/g.tap"; read -r gl nl < "$TMP/g.lock"
echo "    direct pipe: $gd ms ($nd lines)   tap: $gt ms ($nt lines)   tap, file locked 5 s: $gl ms ($nl lines)"
awk -v l="$gl" -v t="$gt" 'BEGIN { printf "    locked / unlocked = %.2fx (target: no stall beyond a few ms)\n", l / t }'
echo "    the lock was held $(( ($(cat "$TMP/l.t1") - $(cat "$TMP/l.t0")) / 1000000 )) ms; $(sqlite3 "$TMP/l.db" "select count(*) from message where session = 2") of 7000 lines stored in the end"

# (i) Memory in proportion to what is open, not to the session's length: the
# peak RSS of analyze (every rule, findings not stored) and of stats on the
# clean generated sessions of (e) at 1M and at 10M messages; and analyze's
# pace against a bare scan of the same rows in the same SQLite that checks
# each message's JSON (the floor of any analyzer that reads every message).
BIG=${BENCH_BIG:-10000000}
sh tests/bench/gen-session.sh "$BIG" | tests/peers/fixture-load /dev/stdin "$TMP/big.db"
peak() { /usr/bin/time -f '%M' -o "$TMP/peak" "$@" > /dev/null; tail -n 1 "$TMP/peak"; }
if [ -x /usr/bin/time ]; then
	a1=$(peak taskset -c "$CPU" ./mcptap analyze -r "$TMP/gen.db" --no-store)
	a10=$(peak taskset -c "$CPU" ./mcptap analyze -r "$TMP/big.db" --no-store)
	s1=$(peak taskset -c "$CPU" ./mcptap stats -r "$TMP/gen.db")
	s10=$(peak taskset -c "$CPU" ./mcptap stats -r "$TMP/big.db")
	echo
	echo "(i) peak RSS over a clean session (target: flat; analyze under 64 MiB)"
	printf '    analyze: %s MiB at %s messages, %s MiB at %s\n' $((a1 / 1024)) "$AN" $((a10 / 1024)) "$BIG"
	printf '    stats:   %s MiB at %s messages, %s MiB at %s\n' $((s1 / 1024)) "$AN" $((s10 / 1024)) "$BIG"
fi
: > "$TMP/scan"; : > "$TMP/an2"
i=0
while [ $i -lt "$RUNS" ]; do
	t0=$(now_ns)
	pin sqlite3 "$TMP/gen.db" "SELECT count(*) FROM message WHERE json_valid(raw)" > /dev/null
	t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/scan"
	t0=$(now_ns)
	pin ./mcptap analyze -r "$TMP/gen.db" --no-store > /dev/null
	t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/an2"
	i=$((i + 1))
done
awk -v a="$(median < "$TMP/an2")" -v s="$(median < "$TMP/scan")" -v n="$AN" 'BEGIN {
	printf "    analyze / a json_valid scan of the same %d rows = %.2fx the time (target <= 2)\n", n, a / s }'

# (j) sessions on a 20M-message file: the session rows keep their counts, so
# it reads no message; against the sqlite3 shell counting the session rows.
HUGE=${BENCH_HUGE:-20000000}
sh tests/bench/gen-session.sh "$HUGE" | tests/peers/fixture-load /dev/stdin "$TMP/huge.db"
rm -f "$TMP/big.db"*
: > "$TMP/ss"; : > "$TMP/sq"
i=0
while [ $i -lt "$RUNS" ]; do
	t0=$(now_ns); ./mcptap sessions -r "$TMP/huge.db" > /dev/null; t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/ss"
	t0=$(now_ns); sqlite3 "$TMP/huge.db" "SELECT count(*) FROM session" > /dev/null; t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/sq"
	i=$((i + 1))
done
echo
echo "(j) sessions on a $HUGE-message file ($(du -m "$TMP/huge.db" | cut -f1) MB)"
awk -v a="$(median < "$TMP/ss")" -v s="$(median < "$TMP/sq")" 'BEGIN {
	printf "    %.1f ms; the sqlite3 shell counting its sessions: %.1f ms; %.2fx\n", a / 1e6, s / 1e6, a / s }'
