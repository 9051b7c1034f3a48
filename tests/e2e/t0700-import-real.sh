#!/bin/sh
# mcptap import on real captures: the official SDK client's full flow
# (tests/node/http-client.mjs) through the HTTP tap to server-everything, captured
# on loopback by tcpdump on the client's side of the tap, on Streamable HTTP
# (Ethernet frames) and legacy HTTP+SSE (Linux cooked SLL2):
#   1. the committed captures (tests/fixtures/pcap/, made by tests/e2e/pcap-fixtures.sh)
#      give the very messages (direction, kind, method, id, bytes), exchanges (method,
#      target, status, request headers) and sessions the tap stored of the same run,
#      and analyze gives the same findings;
#   2. the reading commands work on them unchanged: sessions, show, stats, and the
#      mock of an imported session answers the same client's full flow, every step;
#   3. where tcpdump may capture (root or CAP_NET_RAW), the same with a run made now:
#      the tap's recording against the import of its capture.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/pcap.sh"

FIX=$TOP/tests/fixtures/pcap
CLIENT=$NODEDIR/http-client.mjs
[ -f "$NODEDIR/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
	die "the pinned MCP peers are not installed: run tests/setup.sh node (npm ci)"

# 1. The committed captures.
for n in http sse; do
	"$MCPTAP" import -w "$T/$n.db" "$FIX/$n.pcap" 2> "$T/$n.sum"
	check_eq "$n.pcap: import exits 0" 0 $?
	dump_sessions "$T/$n.db" > "$T/$n.imp"
	diff "$FIX/$n.tap" "$T/$n.imp" > "$T/$n.diff"
	check_eq "$n.pcap: the same messages, exchanges and sessions as the tap stored ($(grep -c '^msg' "$FIX/$n.tap") messages)" 0 $?
	head -c 2000 "$T/$n.diff"
	dump_findings "$T/$n.db" > "$T/$n.found"
	check_eq "$n.pcap: analyze finds what it found on the tap's recording" "$(cat "$FIX/$n.findings")" "$(cat "$T/$n.found")"
	check_eq "$n.pcap: the summary counts them" \
		"  messages     $(grep -c '^msg' "$FIX/$n.tap")" "$(grep '^  messages' "$T/$n.sum")"
	check_eq "$n.pcap: nothing skipped" "" "$(grep -E 'skipped|truncated|HTTP:' "$T/$n.sum")"
done
first=$(tcpdump -r "$FIX/http.pcap" -tt -n -c 1 2> /dev/null | sed 's/^\([0-9]*\)\.\([0-9]*\) .*/\1\2/')
last=$(tcpdump -r "$FIX/http.pcap" -tt -n 2> /dev/null | tail -n 1 | sed 's/^\([0-9]*\)\.\([0-9]*\) .*/\1\2/')
check_eq "the session's times are the packets' (its start and end within the capture's first and last)" \
	"http|1|1|1" \
	"$(sql "$T/http.db" "select transport, count(*), started_wall >= $first and started_wall <= $last, started_wall * 1000 + duration_ns <= $last * 1000 from session")"
check_eq "times within a session: from 0, in the order stored" "0|1" \
	"$(sql "$T/http.db" "select min(t_ns), (select count(*) = 0 from message a join message b on a.session = b.session and a.seq < b.seq and a.t_ns > b.t_ns) from message")"
check_eq "legacy SSE: the session keyed by its endpoint" "sse|1" \
	"$(sql "$T/sse.db" "select transport, http_session_id like '/message?sessionId=%' from session")"

# 2. The reading commands, unchanged.
check "sessions lists the imported session" sh -c "'$MCPTAP' sessions -r '$T/http.db' | grep -q 'http'"
"$MCPTAP" show -r "$T/http.db" -T json > "$T/show.json"
check_eq "show prints every message" "$(grep -c '^msg' "$FIX/http.tap")" \
	"$(grep -c '"dir":"\(c2s\|s2c\)"' "$T/show.json")"
"$MCPTAP" stats -r "$T/http.db" -T json > "$T/stats.json"
check_eq "stats: exit 0" 0 $?
check "stats counts the tools/call requests" grep -q '"tools/call"' "$T/stats.json"

# The mock of an imported session, to the same client.
for n in http sse; do
	"$MCPTAP" replay -r "$T/$n.db" --as server --listen 127.0.0.1:0 --no-store < /dev/null > /dev/null 2> "$T/mock-$n.err" &
	mock=$!
	url=""
	k=0
	while [ -z "$url" ] && [ $k -lt 100 ]; do
		url=$(sed -n 's/^mcptap: replay: the mock server listens on \(http:[^ ]*\)$/\1/p' "$T/mock-$n.err")
		sleep 0.1
		k=$((k + 1))
	done
	check_eq "the mock of the imported $n session serves its endpoint" "$([ $n = http ] && echo /mcp || echo /sse)" "${url##*[0-9]}"
	# (The mock answers a deleted session's id 404, as the spec says; server-everything 400.)
	timeout 100 node "$CLIENT" --transport "$n" --deleted-status 404 --log "$T/mock-$n.jsonl" "$url" > "$T/mock-$n.out" 2>&1
	check_eq "the mock of the imported $n session: the SDK client's full flow exits 0" 0 $?
	grep '^not ok' "$T/mock-$n.out"
	kill -INT $mock 2> /dev/null
	wait $mock 2> /dev/null
done

# 3. A run made now, where tcpdump may capture.
if can_capture; then
	p=$(free_port)
	start_everything streamableHttp "$p"
	start_tap "$T/live-tap.db" "http://127.0.0.1:$p"
	capture_start lo "$T/live.pcap" "tcp port ${TAP_URL##*:}"
	timeout 100 node "$CLIENT" --transport http --log "$T/live.jsonl" "$TAP_URL/mcp" > "$T/live.out" 2>&1
	check_eq "now: the client's full flow through the tap exits 0" 0 $?
	capture_stop
	stop_tap INT
	stop_everything
	"$MCPTAP" import -w "$T/live-imp.db" "$T/live.pcap" 2> "$T/live.sum"
	check_eq "now: import exits 0" 0 $?
	dump_sessions "$T/live-tap.db" > "$T/live.tap"
	dump_sessions "$T/live-imp.db" > "$T/live.imp"
	diff "$T/live.tap" "$T/live.imp" > "$T/live.diff"
	check_eq "now: the import of the capture holds what the tap stored ($(grep -c '^msg' "$T/live.tap") messages)" 0 $?
	head -c 2000 "$T/live.diff"
	check_eq "now: analyze finds the same on both" "$(dump_findings "$T/live-tap.db")" "$(dump_findings "$T/live-imp.db")"
else
	echo "# skipped the live capture: tcpdump needs root or CAP_NET_RAW"
fi
finish
