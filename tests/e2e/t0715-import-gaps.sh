#!/bin/sh
# mcptap import of captures that lost segments or ended badly, as a user
# sees them through import and analyze (crafted by tests/peers/pcap-gen):
#   1. an SSE stream in chunked encoding whose lost segment runs across
#      chunks: the stream is read on at the next chunk, in the same exchange
#      ("complete"); the events after the gap are stored, the one the gap cut
#      is not (nor is the rest of another taken for an event); the gap is a
#      row between them, and analyze says TAP-001 there;
#   2. a response body read to the close: complete at a clean close (FIN);
#      "closed" (the connection was reset) when a reset ends it, its message
#      stored all the same when what came parses whole (as the HTTP tap does
#      when its upstream goes away).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pcap.sh"


# chunk FILE: FILE's bytes as one chunk of chunked encoding.
chunk() {
	printf '%x\r\n' "$(wc -c < "$1")"
	cat "$1"
	printf '\r\n'
}

printf 'POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 58\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}' > "$T/req.http"

# 1. Five events, a chunk each (as a server's writes make them); with segments
# of 150 bytes, the server's second (bytes 150 to 299) is lost: the end of
# event 1, all of 2, the start of 3.
{
	printf 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n'
	for i in 1 2 3 4; do
		printf 'id: %d\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}\n\n' "$i" "$i" > "$T/ev"
		chunk "$T/ev"
	done
	printf 'id: 5\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n' > "$T/ev"
	chunk "$T/ev"
	printf '0\r\n\r\n'
} > "$T/sse.http"
"$GEN" -M 150 -m loss -c "$T/req.http" -S "$T/sse.http" "$T/sse.pcap" || die "pcap-gen failed"
imp sse "$T/sse.pcap"
check_eq "a chunked SSE stream with a segment lost across chunks: exit 0" 0 "$RC"
check_eq "the exchange is read to its end" "200 sse complete" \
	"$(sql "$T/sse.db" "select status || ' ' || resp_type || ' ' || outcome from http_exchange")"
check_eq "the events after the gap are stored, the gap between, nothing of a cut event" \
	"request -|gap s2c|notification 4|response 5" \
	"$(sql "$T/sse.db" "select x from (select seq, kind || ' ' || coalesce(sse_id, '-') as x from message union all select seq, 'gap ' || dir from gap) order by seq" | paste -sd '|')"
check "the gap's row says what it held: the bytes lost and the event they cut" \
	grep -q "^216|150 bytes of an SSE stream were not captured (the event they cut is lost)$" \
	"$(sql "$T/sse.db" "select bytes || '|' || reason from gap" > "$T/gap.txt"; echo "$T/gap.txt")"
check "the summary says the chunked body was read on" grep -q "^  HTTP: 0 parse errors; reading resumed 1 time (1 at the next chunk of the same body; " "$T/sse.err"
"$MCPTAP" analyze -r "$T/sse.db" --all --fail-on never > "$T/sse.analyze" 2>&1
check "analyze says the capture has a gap there" grep -q "#3: TAP-001 warning: the capture has a gap" "$T/sse.analyze"
check "and judges no half event" sh -c "! grep -q 'RES-019\|CAP-007' '$T/sse.analyze'"

# 2. A body read to the close: complete at a FIN, cut by a reset.
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"jsonrpc":"2.0","id":1,"result":{"content":[]}}' > "$T/eof.http"
"$GEN" -c "$T/req.http" -S "$T/eof.http" "$T/fin.pcap" || die "pcap-gen failed"
imp fin "$T/fin.pcap"
check_eq "a body read to a clean close: complete, its message stored" "complete|request response" \
	"$(sql "$T/fin.db" "select outcome from http_exchange")|$(sql "$T/fin.db" "select kind from message order by seq" | paste -sd ' ')"
"$GEN" -m rst -c "$T/req.http" -S "$T/eof.http" "$T/rst.pcap" || die "pcap-gen failed"
imp rst "$T/rst.pcap"
check_eq "a body read to a reset: closed, not complete (what came, whole JSON-RPC, is stored)" \
	"closed the connection was reset|request response" \
	"$(sql "$T/rst.db" "select outcome || ' ' || error from http_exchange")|$(sql "$T/rst.db" "select kind from message order by seq" | paste -sd ' ')"

finish
