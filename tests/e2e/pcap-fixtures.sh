#!/bin/sh
# tests/e2e/pcap-fixtures.sh - remake tests/fixtures/pcap/ (not a test: run.sh runs
# only tNNNN-*.sh). Run it as root (tcpdump needs CAP_NET_RAW) after make and
# tests/setup.sh test:
#
#   sh tests/e2e/pcap-fixtures.sh
#
# For each transport, the official SDK client's full flow (tests/node/http-client.mjs)
# goes through the HTTP tap (mcptap record --upstream) to server-everything, while
# tcpdump captures the client's side of the tap on loopback:
#
#   http.pcap   Streamable HTTP, captured on lo (Ethernet frames, pcap)
#   sse.pcap    legacy HTTP+SSE, captured on any (Linux cooked SLL2 frames, pcap)
#
# and tls.pcap: two initialize POSTs by curl over https to stunnel (test CA) in front
# of server-everything, which import must report as TLS it cannot decode.
#
# and what the tap stored of the same run is written beside each capture, as the
# end-to-end test compares it (tests/e2e/pcap.sh): NAME.tap (dump_sessions: every
# message, exchange and session) and NAME.findings (dump_findings: analyze's
# findings). tests/e2e/t0700-import-real.sh imports each capture and expects both.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/pcap.sh"

OUT=$TOP/tests/fixtures/pcap
can_capture || die "tcpdump cannot capture here: run as root (or give tcpdump CAP_NET_RAW)"
[ -f "$NODEDIR/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
	die "the pinned MCP peers are not installed: run tests/setup.sh node (npm ci)"

# one NAME MODE TRANSPORT PATH IFACE
one() {
	p=$(free_port)
	start_everything "$2" "$p"
	start_tap "$T/$1.db" "http://127.0.0.1:$p"
	port=${TAP_URL##*:}
	capture_start "$5" "$T/$1.pcap" "tcp port $port"
	timeout 100 node "$NODEDIR/http-client.mjs" --transport "$3" --log "$T/$1.jsonl" \
		"$TAP_URL$4" > "$T/$1.out" 2>&1 || { cat "$T/$1.out"; die "the $1 client failed"; }
	capture_stop
	stop_tap INT
	stop_everything
	cp "$T/$1.pcap" "$OUT/$1.pcap"
	dump_sessions "$T/$1.db" > "$OUT/$1.tap"
	dump_findings "$T/$1.db" > "$OUT/$1.findings"
	check_eq "$1: $(wc -c < "$OUT/$1.pcap") bytes captured, $(grep -c '^msg' "$OUT/$1.tap") messages stored by the tap" 0 0
}

one http streamableHttp http /mcp lo
one sse sse sse /sse any

# TLS: what import cannot read, said with its count.
p=$(free_port)
start_everything streamableHttp "$p"
make_test_ca "$T/ca" || die "cannot make a test CA"
tp=$(free_port)
start_tls_front "$tp" "$p" "$T/ca"
capture_start lo "$T/tls.pcap" "tcp port $tp"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
for k in 1 2; do
	curl -sS --cacert "$T/ca/ca.pem" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -d "$init" \
		"https://127.0.0.1:$tp/mcp" > "$T/tls-$k.out" || die "curl over TLS failed"
done
capture_stop
stop_tls_front
stop_everything
cp "$T/tls.pcap" "$OUT/tls.pcap"
echo "$tp" > "$OUT/tls.port"
check_eq "tls: $(wc -c < "$OUT/tls.pcap") bytes captured" 0 0
finish
