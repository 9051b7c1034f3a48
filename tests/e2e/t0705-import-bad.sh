#!/bin/sh
# mcptap import on what it cannot read whole, and on crafted captures
# (tests/peers/pcap-gen: libpcap's dump API) of HTTP exchanges:
#   1. bad files: a capture cut in the middle of a packet (a warning, what came
#      before stored, exit 0), a wrong magic number, garbage, an empty file, a
#      missing one, a directory (exit 2 and a clear message each), a huge snap
#      length (said, read all the same), packets cut by the snap length (counted,
#      their loss stored as gaps), a link type mcptap cannot read (counted);
#   2. what is not HTTP/1.x: TLS (the real capture through stunnel: counted per
#      server, not decodable, SSLKEYLOGFILE future work), HTTP/2, another
#      protocol, each said in the summary with its count;
#   3. the same HTTP exchange over every link type, IPv6, pcapng, reordered,
#      retransmitted, overlapping, fragmented, from mid-stream: the same two
#      messages; lost segments: the exchange stored, the lost bodies as gaps;
#   4. credentials redacted as the HTTP tap does (--keep-secrets keeps them);
#      progress on a terminal only;
#   5. no crash anywhere (each run exits 0 or 2);
#   6. SIGINT in the middle of an import (exit 130, said, what was read stored),
#      a capture file that cannot be written (said before reading).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pcap.sh"

FIX=$TOP/tests/fixtures/pcap

# 1. Bad files.
size=$(wc -c < "$FIX/http.pcap")
head -c $((size - 100)) "$FIX/http.pcap" > "$T/cut.pcap"
imp cut "$T/cut.pcap"
check_eq "a file cut in a packet: exit 0" 0 "$RC"
check "it says where it was cut" grep -q "^mcptap: warning: cannot read '$T/cut.pcap' past packet [0-9]*: .*; what was read before is imported" "$T/cut.err"
check "what came before is stored" test "$(sql "$T/cut.db" "select count(*) from message")" -gt 60

printf 'GIF89a and then some bytes that are not a capture at all' > "$T/magic.pcap"
imp magic "$T/magic.pcap"
check_eq "a wrong magic number: exit 2" 2 "$RC"
check_eq "it says so" "mcptap: cannot read '$T/magic.pcap': not a pcap or pcapng file" "$(cat "$T/magic.err")"
check "and makes no capture file" test ! -e "$T/magic.db"

head -c 65536 /dev/urandom > "$T/garbage.pcap"
imp garbage "$T/garbage.pcap"
check_eq "garbage: exit 2" 2 "$RC"
check "it says it is not a capture" grep -q "^mcptap: cannot read '$T/garbage.pcap': " "$T/garbage.err"
: > "$T/empty.pcap"
imp empty "$T/empty.pcap"
check_eq "an empty file: exit 2, said" "2 mcptap: cannot read '$T/empty.pcap': empty file" "$RC $(cat "$T/empty.err")"
imp missing "$T/no-such.pcap"
check_eq "a missing file: exit 2, said" "2" "$RC"
check "it says why" grep -q "^mcptap: cannot open '$T/no-such.pcap': No such file or directory" "$T/missing.err"
imp dir "$T"
check_eq "a directory: exit 2" 2 "$RC"
"$MCPTAP" import -w "$T/x.db" < /dev/null > /dev/null 2> "$T/usage.err"
check_eq "no capture named: a usage error" 2 $?
"$MCPTAP" import -w "$T/x.db" -f 'tcp port nonsense' "$FIX/http.pcap" 2> "$T/filter.err"
check_eq "a bad filter: exit 2" 2 $?
check "it names the filter" grep -q "^mcptap: bad filter 'tcp port nonsense'" "$T/filter.err"

# A snap length of 2^31-1 in the file's header (bytes 16-19, little-endian).
cp "$FIX/http.pcap" "$T/snap.pcap"
printf '\377\377\377\177' | dd of="$T/snap.pcap" bs=1 seek=16 conv=notrunc 2> /dev/null
imp snap "$T/snap.pcap"
check_eq "a huge snap length: exit 0" 0 "$RC"
check "it is said" grep -q "snapshot length is 2147483647" "$T/snap.err"
check_eq "and the capture read all the same" "$(grep -c '^msg' "$FIX/http.tap")" "$(sql "$T/snap.db" "select count(*) from message")"

# A link type mcptap cannot read (IEEE 802.11, 105: bytes 20-23).
cp "$FIX/http.pcap" "$T/link.pcap"
printf 'i\000\000\000' | dd of="$T/link.pcap" bs=1 seek=20 conv=notrunc 2> /dev/null
imp link "$T/link.pcap"
check_eq "an unknown link type: exit 0" 0 "$RC"
packets=$(grep '^  packets' "$T/link.err" | awk '{print $2}')
check "every packet counted as of a link type it cannot read" grep -q "skipped: $packets packets of a link type mcptap cannot read (IEEE802_11)" "$T/link.err"

# 2. What is not HTTP/1.x.
imp tls "$FIX/tls.pcap"
check_eq "TLS: exit 0" 0 "$RC"
check "TLS: counted, not decodable, key logs future work" grep -q "^  skipped: TLS: 2 connections (.*), not decodable; decrypting with an SSLKEYLOGFILE-style key log is future work" "$T/tls.err"
check "TLS: per server" grep -q "^    to 127.0.0.1:$(cat "$FIX/tls.port"): 2 connections" "$T/tls.err"
check_eq "TLS: no session" "0" "$(sql "$T/tls.db" "select count(*) from session")"
printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\000\000\022\004\000\000\000\000\000' > "$T/h2.bin"
printf '\000\000\000\004\001\000\000\000\000' > "$T/h2s.bin"
"$GEN" -c "$T/h2.bin" -S "$T/h2s.bin" "$T/h2.pcap"
imp h2 "$T/h2.pcap"
check "HTTP/2: counted" grep -q "^  skipped: HTTP/2: 1 connection (.*): mcptap reads HTTP/1.x" "$T/h2.err"
"$GEN" "$T/other.pcap"
imp other "$T/other.pcap"
check "another protocol: counted, its bytes (2 x 2500 + 2 x 3000)" grep -q "^  skipped: not HTTP: 1 TCP connection (11.0 kB) of another protocol" "$T/other.err"

# 3. One exchange, every way it can travel.
pad=$(head -c 2400 /dev/zero | tr '\0' 'x')
body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"$pad\"}}}"
printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3001\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#body} "$body" > "$T/req.http"
printf '%s' "$body" > "$T/req.body"
rb="{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"$pad\"}]}}"
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: %d\r\n\r\n%s' ${#rb} "$rb" > "$T/resp.http"
printf '%s' "$rb" > "$T/resp.body"
want="1|s-1|c2s request tools/call 1|s2c response - 1"
for how in "-l en10mb" "-l vlan" "-l qinq" "-l sll" "-l sll2" "-l null" "-l loop" "-l raw" \
	"-l ipv4" "-6 -l ipv6" "-6" "-f pcapng" "-f pcap-ns" "-f pcapng-ns" "-m reorder" \
	"-m retransmit" "-m overlap" "-m frag" "-6 -m frag" "-m tcpopts" "-m rst" \
	"-m reorder,retransmit,overlap" "-M 7"; do
	# shellcheck disable=SC2086
	"$GEN" $how -c "$T/req.http" -S "$T/resp.http" "$T/x.pcap" || die "pcap-gen $how failed"
	imp x "$T/x.pcap"
	got="$(sql "$T/x.db" "select count(*), http_session_id from session")|$(sql "$T/x.db" "select dir, kind, coalesce(method, '-'), raw = readfile(case dir when 'c2s' then '$T/req.body' else '$T/resp.body' end) from message order by seq" | tr '|' ' ' | paste -sd '|')"
	check_eq "pcap-gen $how: the exchange's two messages, in their session" "$want" "$got"
done
"$GEN" -m midstream -c "$T/req.http" -S "$T/resp.http" -c "$T/req.http" -S "$T/resp.http" "$T/mid.pcap"
imp mid "$T/mid.pcap"
check_eq "from mid-stream: both exchanges read" "4" "$(sql "$T/mid.db" "select count(*) from message")"
"$GEN" -m loss -c "$T/req.http" -S "$T/resp.http" -c "$T/req.http" -S "$T/resp.http" "$T/loss.pcap"
imp loss "$T/loss.pcap"
check_eq "a segment lost in each body: exit 0" 0 "$RC"
check_eq "both exchanges stored, complete" "POST 200 complete|POST 200 complete" \
	"$(sql "$T/loss.db" "select method || ' ' || status || ' ' || outcome from http_exchange order by seq" | paste -sd '|')"
check_eq "the first exchange's bodies as gaps, the second's as messages" \
	"c2s request|c2s request body not stored|s2c response|s2c response body not stored" \
	"$(sql "$T/loss.db" "select dir || ' ' || x from (select dir, 'request body not stored' as x from gap where dir = 'c2s' and reason like '%request body were not captured%' union all select dir, 'response body not stored' from gap where dir = 's2c' and reason like '%response body were not captured%' union all select dir, kind from message) order by 1" | paste -sd '|')"
check "the summary says the TCP gaps" grep -q "^  reassembly: 2 gaps in TCP streams" "$T/loss.err"

# Credentials stay out of the file, as with the HTTP tap; --keep-secrets keeps them.
sb='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"apiKey":"secret-value-456"}}}'
printf 'POST /mcp?api_key=secret-query-789 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token-123\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#sb} "$sb" > "$T/sreq.http"
"$GEN" -c "$T/sreq.http" -S "$T/resp.http" "$T/secret.pcap"
imp secret "$T/secret.pcap"
check_eq "redaction: no credential in the file (header, query, JSON member)" 0 \
	"$(cat "$T/secret.db" "$T/secret.db-wal" 2> /dev/null | grep -ac 'secret-\(token-123\|query-789\|value-456\)')"
check_eq "each of them a marker" 3 \
	"$(sql "$T/secret.db" "select cast(raw as text) from message; select target, req_headers from http_exchange" | grep -o 'redacted:[0-9a-f]*' | wc -l)"
"$MCPTAP" import --keep-secrets -w "$T/keep.db" "$T/secret.pcap" 2> /dev/null
check_eq "--keep-secrets: kept" 3 \
	"$(sql "$T/keep.db" "select cast(raw as text) from message; select target, req_headers from http_exchange" | grep -o 'secret-[a-z]*-[0-9]*' | sort -u | wc -l)"

# Progress: on a terminal, for a big file; never off one.
if [ -x "$BENCH/pcap-mcp-gen" ] && command -v script > /dev/null; then
	"$BENCH/pcap-mcp-gen" -m 12 "$T/big.pcap" > /dev/null
	script -qc "'$MCPTAP' import -w '$T/big-tty.db' '$T/big.pcap'" /dev/null > "$T/tty.out" 2>&1
	check "on a terminal: progress while a 12 MB file is read" grep -q "mcptap: reading '$T/big.pcap': *[0-9]*% (.* of 12.[0-9] MB), [0-9]* sessions, [0-9]* messages" "$T/tty.out"
	imp big "$T/big.pcap"
	check_eq "off a terminal: no progress, the summary only" "" "$(grep reading "$T/big.err")"
	check_eq "the same sessions either way" "$(sql "$T/big-tty.db" "select count(*) from session")" "$(sql "$T/big.db" "select count(*) from session")"

	# SIGINT in the middle of an import from a pipe: stopped (not a damaged
	# file), said, exit 130, and what was read is stored.
	rm -f "$T/fifo" "$T/int.db"*
	mkfifo "$T/fifo"
	"$MCPTAP" import -w "$T/int.db" - < "$T/fifo" > /dev/null 2> "$T/int.err" &
	pid=$!
	exec 3> "$T/fifo"
	head -c 2000000 "$T/big.pcap" >&3
	i=0
	while [ "$(sql "$T/int.db" "select count(*) from message" 2> /dev/null || echo 0)" -eq 0 ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -INT $pid
	wait $pid
	rc=$?
	exec 3>&-
	check_eq "an import stopped by SIGINT: exit 130" 130 "$rc"
	check "it says it was stopped, and that what was read is stored" grep -q "^mcptap: warning: the import of '-' was stopped by SIGINT after [1-9][0-9]* packets: what was read before is stored" "$T/int.err"
	check_eq "not a damaged file" "" "$(grep -i 'interrupted\|cannot read' "$T/int.err")"
	check_eq "every message the summary counts is stored" \
		"$(sed -n 's/^  messages *\([0-9]*\)$/\1/p' "$T/int.err")" "$(sql "$T/int.db" "select count(*) from message")"
	check "and there are some" test "$(sql "$T/int.db" "select count(*) from message")" -gt 0
fi

# A capture file that cannot be written: said before anything is read.
"$MCPTAP" import -w "$T/no/such/dir/x.db" "$FIX/http.pcap" > /dev/null 2> "$T/nowrite.err"
check_eq "a capture file that cannot be written: exit 2" 2 $?
check_eq "said, and nothing read" "mcptap: cannot write to '$T/no/such/dir/x.db': No such file or directory" "$(cat "$T/nowrite.err")"

# A snap length libpcap would quietly replace (0xffffffff): said all the same.
cp "$FIX/http.pcap" "$T/snapmax.pcap"
printf '\377\377\377\377' | dd of="$T/snapmax.pcap" bs=1 seek=16 conv=notrunc 2> /dev/null
imp snapmax "$T/snapmax.pcap"
check_eq "a snap length of 2^32-1: exit 0" 0 "$RC"
check "it is said" grep -q "snapshot length is 4294967295" "$T/snapmax.err"

# Packets cut by the snap length: counted; what was cut is lost, said, never a crash.
"$GEN" -s 400 -c "$T/req.http" -S "$T/resp.http" -c "$T/req.http" -S "$T/resp.http" "$T/cut400.pcap"
imp cut400 "$T/cut400.pcap"
check_eq "a snap length of 400: exit 0" 0 "$RC"
check "the truncated packets counted" grep -q "^  truncated: [0-9]* packets cut by the snap length" "$T/cut400.err"
check "what was cut stored as gaps" test "$(sql "$T/cut400.db" "select count(*) from gap")" -ge 1

# The limits: --max-message on request and response bodies, counted and said;
# --memory alone below the default --flow-memory (16k: room for this one
# exchange, everything it holds counted); both given and contradictory.
pad=$(head -c 2500 /dev/zero | tr '\0' x)
bb='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"p":"'$pad'"}}}'
printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3001\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#bb} "$bb" > "$T/bigreq.http"
rb='{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'$pad'"}]}}'
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#rb} "$rb" > "$T/bigresp.http"
"$GEN" -c "$T/bigreq.http" -S "$T/bigresp.http" "$T/big2.pcap"
rm -f "$T/mm.db"*
"$MCPTAP" import -w "$T/mm.db" --max-message 1k "$T/big2.pcap" > /dev/null 2> "$T/mm.err"
check_eq "--max-message 1k: exit 0" 0 $?
check "the summary counts the request body and the response body above it" grep -q "^  limits: 1 request body and 1 response body or SSE events above --max-message (stored as gaps)" "$T/mm.err"
check_eq "both stored as gaps, no message" "c2s s2c|0" \
	"$(sql "$T/mm.db" "select group_concat(dir, ' ') from (select dir from gap order by seq)")|$(sql "$T/mm.db" "select count(*) from message")"
rm -f "$T/m4.db"*
"$MCPTAP" import -w "$T/m4.db" --memory 16k "$T/big2.pcap" > /dev/null 2> "$T/m4.err"
check_eq "--memory 16k alone (below the default --flow-memory): exit 0, both messages" "0 2" "$? $(sql "$T/m4.db" "select count(*) from message")"
"$MCPTAP" import -w "$T/m5.db" --memory 4k --flow-memory 8k "$T/big2.pcap" > /dev/null 2> "$T/m5.err"
check_eq "--flow-memory above --memory, both given: a usage error" 2 $?
check "that says so" grep -q "^mcptap: --flow-memory is larger than --memory" "$T/m5.err"
finish
