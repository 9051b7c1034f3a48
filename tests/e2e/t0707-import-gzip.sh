#!/bin/sh
# mcptap import of captured responses in a Content-Encoding (crafted by
# tests/peers/pcap-gen, bodies made by gzip(1), cut in small segments):
#   1. a gzip JSON response (Content-Length): its JSON-RPC message stored as
#      decoded, the response's headers stored as sent (Content-Encoding kept),
#      no error; show prints the message;
#   2. a gzip SSE stream in chunked encoding, its chunks cut anywhere: its
#      three events stored in order;
#   3. a gzip body that cannot be decoded: no message, a gap row, the
#      exchange's error says zlib's reason;
#   4. a body in a coding that is not decoded (br): kept as sent, no message,
#      the error says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pcap.sh"

command -v gzip > /dev/null 2>&1 || die "gzip(1) is not installed"

# resp CTYPE CODING BODYFILE [chunked]: a response head and body.
resp() {
	if [ "${4:-}" = chunked ]; then
		printf 'HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Encoding: %s\r\nTransfer-Encoding: chunked\r\n\r\n' "$1" "$2"
		# Chunks of 37 bytes: cut anywhere in the compressed data.
		split -b 37 -d -a 4 "$3" "$T/part."
		for p in "$T"/part.*; do
			printf '%x\r\n' "$(wc -c < "$p")"
			cat "$p"
			printf '\r\n'
		done
		rm -f "$T"/part.*
		printf '0\r\n\r\n'
	else
		printf 'HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n' \
			"$1" "$2" "$(wc -c < "$3")"
		cat "$3"
	fi
}

printf 'POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 58\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}' > "$T/req.http"
answer='{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"compressed, compressed, compressed"}]}}'

# 1. A gzip JSON response.
printf '%s' "$answer" | gzip -n -c > "$T/json.gz"
resp application/json gzip "$T/json.gz" > "$T/json.http"
"$GEN" -M 40 -c "$T/req.http" -S "$T/json.http" "$T/json.pcap" || die "pcap-gen failed"
imp json "$T/json.pcap"
check_eq "a gzip JSON response: exit 0" 0 "$RC"
check_eq "its message is stored as decoded" "request|response $answer" \
	"$(sql "$T/json.db" "select kind || case when dir = 's2c' then ' ' || cast(raw as text) else '' end from message order by seq" | paste -sd '|')"
check_eq "its headers are stored as sent, its exchange complete with no error" \
	'gzip|json|complete|~' \
	"$(sql "$T/json.db" "select json_extract(resp_headers, '\$[1][1]'), resp_type, outcome, coalesce(error, '~') from http_exchange")"
check "show prints the decoded message" sh -c "'$MCPTAP' show -r '$T/json.db' 2>&1 | grep -q 'compressed, compressed'"

# 2. A gzip SSE stream, chunked, cut anywhere.
{
	printf 'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}\n\n'
	printf 'id: 2\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":2}}\n\n'
	printf 'id: 3\ndata: %s\n\n' "$answer"
} | gzip -n -c > "$T/sse.gz"
resp text/event-stream gzip "$T/sse.gz" chunked > "$T/sse.http"
"$GEN" -M 50 -c "$T/req.http" -S "$T/sse.http" "$T/sse.pcap" || die "pcap-gen failed"
imp sse "$T/sse.pcap"
check_eq "a gzip SSE stream: exit 0" 0 "$RC"
check_eq "its three events are stored in order" "request -|notification 1|notification 2|response 3" \
	"$(sql "$T/sse.db" "select kind || ' ' || coalesce(sse_id, '-') from message order by seq" | paste -sd '|')"
check_eq "the stream is complete, with no error" "sse|complete|~" \
	"$(sql "$T/sse.db" "select resp_type, outcome, coalesce(error, '~') from http_exchange")"

# 3. A gzip body that cannot be decoded: its first block's type made invalid.
cp "$T/json.gz" "$T/bad.gz"
printf '\377' | dd of="$T/bad.gz" bs=1 seek=10 conv=notrunc 2> /dev/null
resp application/json gzip "$T/bad.gz" > "$T/bad.http"
"$GEN" -c "$T/req.http" -S "$T/bad.http" "$T/bad.pcap" || die "pcap-gen failed"
imp bad "$T/bad.pcap"
check_eq "a corrupt gzip body: exit 0" 0 "$RC"
check_eq "no message of it, the exchange's error says why" \
	"request|complete|cannot decode the gzip body: invalid block type" \
	"$(sql "$T/bad.db" "select group_concat(kind) from message")|$(sql "$T/bad.db" "select outcome || '|' || error from http_exchange")"
check_eq "what could not be decoded is a gap row" \
	"s2c|cannot decode the gzip body: invalid block type: $(($(wc -c < "$T/bad.gz") - 11)) bytes of it (as sent) are not stored" \
	"$(sql "$T/bad.db" "select dir || '|' || reason from gap")"

# 4. A coding that is not decoded.
printf '%s' "$answer" > "$T/plain.br"
resp application/json br "$T/plain.br" > "$T/br.http"
"$GEN" -c "$T/req.http" -S "$T/br.http" "$T/br.pcap" || die "pcap-gen failed"
imp br "$T/br.pcap"
check_eq "a br body: exit 0" 0 "$RC"
check_eq "kept as sent, not taken for a message, the error says so" \
	"request|$answer|the response body's Content-Encoding (br) is not decoded: kept as sent" \
	"$(sql "$T/br.db" "select group_concat(kind) from message")|$(sql "$T/br.db" "select cast(resp_body as text) || '|' || error from http_exchange")"

finish
