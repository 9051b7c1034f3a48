#!/bin/sh
# Many taps, one file, nothing lost: tests/stress.sh run briefly. Eight taps
# start together on a new file and flood it (5000 lines of 200 B or 2 KB
# each), two of them are SIGKILLed at random moments, two readers run
# sessions/stats beside them, and another program takes the file's write lock
# for 300 ms again and again. --hold is 2M here, so that the bound a killed
# tap is held to is well under what it relays (10 MB). Every tap that lived stores exactly what its
# client received, in order, with no gap; a killed one loses no more than the
# man page states and shows as aborted. `make stress` runs it longer.
. "$(dirname "$0")/lib.sh"

sh "$TOP/tests/stress.sh" -n 8 -m 5000 -k 2 -K 400 -r 2 -l 300 -d "$T/stress" -- --hold 2M > "$T/out" 2>&1
rc=$?
sed 's/^/    /' "$T/out"
check_eq "the stress run passes every check" 0 "$rc"
check_eq "it checked 8 sessions" 8 "$(grep -c '^ok - tap [0-9]*\( (killed)\)\?: \(all\|[0-9]* of\)' "$T/out")"
check "no tap hit 'database is locked'" sh -c '! grep -l "database is locked" "$1"/err.* > /dev/null 2>&1' sh "$T/stress"

# A lone tap: 20000 lines of 2 KB, killed mid-flood: what the client received
# and the file lacks stays within --queue (1 MiB), or one 64 KiB read. (--hold
# is 1M too: on a loaded machine a commit may take over 50 ms, a stall, and
# the bound is then --hold's.)
sh "$TOP/tests/stress.sh" -n 1 -m 20000 -s 2048 -k 1 -K 150 -r 0 -d "$T/one" -- --hold 1M > "$T/one.out" 2>&1
rc=$?
sed 's/^/    /' "$T/one.out"
check_eq "a lone tap killed mid-flood: within the --queue bound" 0 "$rc"

# Light traffic: a line every 200 ms; a SIGKILL of the tap loses at most the
# line of its last 10 ms or so (one batch), never more than one here.
"$MCPTAP" record -w "$T/t.db" -- perl -e '$| = 1; for (1 .. 50) { print "{\"jsonrpc\":\"2.0\",\"method\":\"t\",\"params\":{\"i\":$_}}\n"; select(undef, undef, undef, 0.2) }' \
	< /dev/null > "$T/t.out" 2> /dev/null &
tap=$!
sleep 1.5
kill -9 "$tap"
wait "$tap" 2> /dev/null
got=$(wc -l < "$T/t.out")
stored=$(sql "$T/t.db" "select count(*) from message")
check "light traffic, a SIGKILL: the client got some lines ($got)" test "$got" -ge 2
check "and the file lacks at most one of them ($stored stored)" test "$stored" -le "$got" -a "$stored" -ge $((got - 1))
kill "$(sql "$T/t.db" "select pid from session")" 2> /dev/null # (its server, orphaned)

finish
