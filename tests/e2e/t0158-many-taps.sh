#!/bin/sh
# Many taps, one file, nothing lost: tests/stress.sh run briefly. Eight taps
# start together on a new file and flood it (5000 lines of 200 B or 2 KB
# each), two of them are SIGKILLed at random moments, two readers run
# sessions/stats beside them, and another program takes the file's write lock
# for 300 ms again and again. Every tap that lived stores exactly what its
# client received, in order, with no gap; a killed one loses no more than the
# man page states and shows as aborted. `make stress` runs it longer.
. "$(dirname "$0")/lib.sh"

sh "$TOP/tests/stress.sh" -n 8 -m 5000 -k 2 -K 400 -r 2 -l 300 -d "$T/stress" > "$T/out" 2>&1
rc=$?
sed 's/^/    /' "$T/out"
check_eq "the stress run passes every check" 0 "$rc"
check_eq "it checked 8 sessions" 8 "$(grep -c '^ok - tap [0-9]*\( (killed)\)\?: \(all\|[0-9]* of\)' "$T/out")"
check "no tap hit 'database is locked'" sh -c '! grep -l "database is locked" "$1"/err.* > /dev/null 2>&1' sh "$T/stress"

# A lone tap: 20000 lines of 2 KB, killed mid-flood: what the client received
# and the file lacks stays within --queue (1 MiB), or one 64 KiB read.
sh "$TOP/tests/stress.sh" -n 1 -m 20000 -s 2048 -k 1 -K 150 -r 0 -d "$T/one" > "$T/one.out" 2>&1
rc=$?
sed 's/^/    /' "$T/one.out"
check_eq "a lone tap killed mid-flood: within the --queue bound" 0 "$rc"

finish
