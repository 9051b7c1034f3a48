#!/bin/sh
# mcptap import under --memory (issue 20): one budget bounds every byte the
# import holds across connections, however many there are.
#   1. 100000 keep-alive connections (tests/bench/pcap-mcp-gen -o), none of
#      them closed, each with an exchange left open (odd ones an SSE stream
#      stopped inside its second event; even ones a JSON body half sent, then
#      a second request stopped in its body): imported with --memory 32M, the
#      peak RSS (GNU time) stays under what a capture of 10 such connections
#      takes, plus the budget, plus the writer's bound of what it holds for
#      the store (64M, the import's, while the store lags: not --memory's),
#      plus 16M for the allocator's own (its headers, freed memory not given
#      back). Before the budget counted it all, the same import took 540 MB
#      whatever --memory said;
#   2. the summary says how many times the budget was reached and how many
#      connections were given up on: exactly those are stored stopped, with
#      why, and they are the ones seen longest ago (1 to N: the connections
#      come one after another); every other one is stored whole (its request,
#      its whole event), ended with the capture;
#   3. a budget smaller than one connection: every connection given up on,
#      said, exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pcap.sh"

TIME=/usr/bin/time
[ -x "$TIME" ] || die "GNU time is not installed: run tests/setup.sh test"
MCPGEN=$BENCH/pcap-mcp-gen
[ -x "$MCPGEN" ] || die "tests/bench/pcap-mcp-gen is not built: run make"

# imp_mem NAME MEMORY FILE: import FILE into $T/NAME.db with --memory MEMORY
# under GNU time: exit status in RC, stderr in $T/NAME.err, peak RSS (kB) in RSS.
imp_mem() {
	rm -f "$T/$1.db" "$T/$1.db-wal" "$T/$1.db-shm"
	"$TIME" -f 'rss=%M' -o "$T/$1.time" "$MCPTAP" import -w "$T/$1.db" --memory "$2" "$3" \
		> /dev/null 2> "$T/$1.err"
	RC=$?
	RSS=$(sed -n 's/^rss=\([0-9]*\)$/\1/p' "$T/$1.time")
}

N=100000
"$MCPGEN" -o 10 "$T/small.pcap" > /dev/null || die "pcap-mcp-gen -o 10 failed"
"$MCPGEN" -o $N "$T/open.pcap" > "$T/gen.out" || die "pcap-mcp-gen -o $N failed"
check_eq "the capture: $N connections" "connections=$N messages=$((N * 3 / 2))" \
	"$(sed 's/ bytes=.*//' "$T/gen.out")"

# 1. Peak RSS.
imp_mem small 32M "$T/small.pcap"
check_eq "10 connections: exit 0" 0 "$RC"
base=$RSS
imp_mem open 32M "$T/open.pcap"
check_eq "$N connections under --memory 32M: exit 0" 0 "$RC"
bound=$((base + (32 + 64 + 16) * 1024))
echo "# peak RSS: $RSS kB ($N connections), $base kB (10); bound $bound kB"
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# peak RSS not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check "peak RSS $RSS kB under $bound kB (10 connections' $base kB + 32M + 64M + 16M)" \
		test "$RSS" -lt "$bound"
fi

# 2. What the summary says, and what is stored.
line=$(grep '^  limits: --memory' "$T/open.err")
times=$(printf '%s' "$line" | sed -n 's/^  limits: --memory reached \([0-9]*\) times: \([0-9]*\) connections given up on to make room (their exchanges stopped)$/\1/p')
gone=$(printf '%s' "$line" | sed -n 's/^  limits: --memory reached \([0-9]*\) times: \([0-9]*\) connections given up on to make room (their exchanges stopped)$/\2/p')
check "the summary says the budget was reached, and what it gave up: '$line'" test -n "$times"
check "many connections go each time (room is made a sixteenth below it): $times times, $gone connections" \
	test "${times:-0}" -ge 1 -a "$((${times:-0} * 100))" -le "${gone:-0}"
check_eq "no other limit" "" "$(grep -e '--max-flows\|--idle\|--flow-memory' "$T/open.err")"
why="the connection was given up on to make room: the memory budget was reached (--memory)"
check_eq "those given up on are the ones seen longest ago, stopped, with why" "$gone|1|$gone" \
	"$(sql "$T/open.db" "select count(*), min(conn), max(conn) from http_exchange where outcome = 'stopped' and error = '$why'")"
check_eq "every other one is stored, ended with the capture" "$((N - gone))|$((gone + 1))|$N" \
	"$(sql "$T/open.db" "select count(*), min(conn), max(conn) from http_exchange where outcome = 'stopped' and error = 'the capture ended'")"
check_eq "one exchange per connection, no other" "$N|$N" \
	"$(sql "$T/open.db" "select count(*), count(distinct conn) from http_exchange")"
check_eq "every request and whole event stored" "c2s request $N|s2c notification $((N / 2))" \
	"$(sql "$T/open.db" "select dir || ' ' || kind || ' ' || count(*) from message group by dir, kind order by 1" | paste -sd '|')"
check_eq "the second requests, cut, are lost (said)" 1 \
	"$(grep -c "^  HTTP: .* $((N / 2)) requests lost$" "$T/open.err")"

# 3. A budget smaller than one connection: each is given up on as soon as it is
# seen (its later packets a connection from the middle, given up on in turn).
imp_mem tiny 4k "$T/small.pcap"
check_eq "--memory 4k: exit 0" 0 "$RC"
conns=$(sed -n 's/^  connections  \([0-9]*\) .*/\1/p' "$T/tiny.err")
check "every connection given up on, said" \
	grep -q "^  limits: --memory reached [0-9]* times: $conns connections given up on" "$T/tiny.err"
check_eq "no exchange ended with the capture" 0 \
	"$(sql "$T/tiny.db" "select count(*) from http_exchange where error = 'the capture ended'")"
finish
