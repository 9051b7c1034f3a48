#!/bin/sh
# When a flood outruns the store, the tap applies backpressure: the relay
# waits for room in the writer's queue, so nothing is dropped and there is no
# gap. A tiny queue and slow commits force it to wait all the time.
. "$(dirname "$0")/lib.sh"

n=50000
"$BENCH/load-client" flood $n -- "$MCPTAP" record -w "$T/bp.db" --queue 4k --batch-ms 50 -- \
	"$BENCH/echo-server" > "$T/out"
check_eq "the flood completes through a 4 KiB queue" 0 $?
check_eq "every message is stored (the flood, the handshake)" $((2 * n + 3)) \
	"$(sql "$T/bp.db" "select count(*) from message")"
check_eq "no gap" 0 "$(sql "$T/bp.db" "select count(*) from gap")"
check_eq "every request has its response" 0 \
	"$(sql "$T/bp.db" "select count(*) from exchange where response_seq is null")"
check_eq "seq is dense" $((2 * n + 3)) "$(sql "$T/bp.db" "select max(seq) - min(seq) + 1 from message")"

# The same with --sync: every chunk committed before it is forwarded.
"$BENCH/load-client" flood 2000 -- "$MCPTAP" record -w "$T/sync.db" --sync -- "$BENCH/echo-server" > /dev/null
check_eq "--sync: the flood completes" 0 $?
check_eq "--sync: every message is stored" 4003 "$(sql "$T/sync.db" "select count(*) from message")"

finish
