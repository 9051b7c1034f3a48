#!/bin/sh
# DNS rebinding: the HTTP tap and the HTTP mock, listening on loopback, refuse
# with 403 and a JSON-RPC error saying why a request whose Host is not a
# loopback name nor an --allow-host one, and a request whose Origin is not of
# such a host ("null" too); a request without Origin (any client that is not
# a browser) and one from a loopback origin are served. The tap refuses
# before anything goes upstream (a small upstream logs what reaches it) and
# stores nothing of a refusal; each server says the first refusal of each
# kind on stderr, once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

HOST_BODY='{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"mcptap: Host is not a loopback name nor one given with --allow-host (a DNS rebinding?)"}}'
ORIGIN_BODY='{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"mcptap: Origin is not of a loopback host nor of one given with --allow-host (a web page elsewhere?)"}}'

# get [CURL OPTION...] URL: prints "STATUS CONTENT-TYPE BODY" (a one-line body).
get() {
	curl -s --max-time 10 -w '\n%{http_code} %{content_type}' "$@" |
		awk '{ l[NR] = $0 } END { print l[NR], (NR > 1 ? l[1] : "") }'
}
# ask URL BODY [CURL OPTION...]: POST BODY as an MCP client does.
ask() {
	_u=$1 _b=$2
	shift 2
	get -H 'Accept: application/json, text/event-stream' -H 'Content-Type: application/json' \
		"$@" --data "$_b" "$_u"
}

# 1. The tap, in front of an upstream that answers every POST with an empty
#    result for its id and logs the id and Origin of each (an Origin the tap
#    let through reaches it as it came).
cat > "$T/upstream.js" << 'EOF'
const http = require("http"), fs = require("fs");
const s = http.createServer((q, r) => {
	let b = "";
	q.on("data", (d) => (b += d)).on("end", () => {
		const id = JSON.parse(b).id;
		fs.appendFileSync(process.argv[2], id + " " + (q.headers.origin || "-") + "\n");
		r.writeHead(200, { "content-type": "application/json" });
		r.end(JSON.stringify({ jsonrpc: "2.0", id, result: {} }));
	});
});
s.listen(0, "127.0.0.1", () => fs.writeFileSync(process.argv[3], s.address().port + "\n"));
EOF
: > "$T/upstream.log"
node "$T/upstream.js" "$T/upstream.log" "$T/upstream.port" &
UP_PID=$!
trap 'kill "$UP_PID" 2> /dev/null' EXIT
_n=0
while [ "$_n" -lt 100 ] && ! [ -s "$T/upstream.port" ]; do sleep 0.1; _n=$((_n + 1)); done
UP_PORT=$(cat "$T/upstream.port")
check "the upstream listens" test -n "$UP_PORT"

start_tap "$T/t.db" "http://127.0.0.1:$UP_PORT" --allow-host mcp.local
TAP_PORT=${TAP_URL##*:}
ping() { echo "{\"jsonrpc\":\"2.0\",\"id\":\"$1\",\"method\":\"ping\"}"; }
ok() { echo "200 application/json {\"jsonrpc\":\"2.0\",\"id\":\"$1\",\"result\":{}}"; }
check_eq "tap: no Origin, Host 127.0.0.1:PORT: relayed" "$(ok t1)" "$(ask "$TAP_URL/mcp" "$(ping t1)")"
check_eq "tap: Host localhost:PORT, Origin http://localhost:3000: relayed" "$(ok t2)" \
	"$(ask "$TAP_URL/mcp" "$(ping t2)" -H "Host: localhost:$TAP_PORT" -H 'Origin: http://localhost:3000')"
check_eq "tap: Origin http://[::1]:6274: relayed" "$(ok t3)" \
	"$(ask "$TAP_URL/mcp" "$(ping t3)" -H 'Origin: http://[::1]:6274')"
check_eq "tap: a foreign Host: 403, and why" "403 application/json $HOST_BODY" \
	"$(ask "$TAP_URL/mcp" "$(ping t4)" -H 'Host: evil.example.com')"
check_eq "tap: a foreign Origin: 403, and why" "403 application/json $ORIGIN_BODY" \
	"$(ask "$TAP_URL/mcp" "$(ping t5)" -H 'Origin: http://evil.example.com')"
check_eq "tap: Origin null: 403" "403 application/json $ORIGIN_BODY" \
	"$(ask "$TAP_URL/mcp" "$(ping t6)" -H 'Origin: null')"
check_eq "tap: a loopback Host from a foreign Origin whose name looks alike: 403" \
	"403 application/json $ORIGIN_BODY" \
	"$(ask "$TAP_URL/mcp" "$(ping t7)" -H "Host: localhost:$TAP_PORT" -H 'Origin: http://localhost.evil.example.com')"
check_eq "tap: --allow-host mcp.local lets Host mcp.local:PORT in" "$(ok t8)" \
	"$(ask "$TAP_URL/mcp" "$(ping t8)" -H "Host: mcp.local:$TAP_PORT")"
check_eq "tap: and Origin https://mcp.local" "$(ok t9)" \
	"$(ask "$TAP_URL/mcp" "$(ping t9)" -H "Host: mcp.local" -H 'Origin: https://mcp.local')"
check_eq "tap: but not Host mcp.local.evil.example.com" "403 application/json $HOST_BODY" \
	"$(ask "$TAP_URL/mcp" "$(ping t10)" -H 'Host: mcp.local.evil.example.com')"
check_eq "tap: two Origins, the second foreign: 403 (every Origin is looked at)" \
	"403 application/json $ORIGIN_BODY" \
	"$(ask "$TAP_URL/mcp" "$(ping t11)" -H 'Origin: http://localhost:3000' -H 'Origin: http://evil.example.com')"
stop_tap INT
check_eq "SIGINT: the tap exits 0" 0 "$TAP_STATUS"
check_eq "the upstream got the requests let in, and only those, with their Origin" \
	"t1 -|t2 http://localhost:3000|t3 http://[::1]:6274|t8 -|t9 https://mcp.local" \
	"$(paste -sd '|' "$T/upstream.log")"
check_eq "the tap stored the messages of those requests only (a refusal's body is not stored)" "t1,t2,t3,t8,t9" \
	"$(sql "$T/t.db" "select group_concat(json_extract(cast(raw as text), '$.id'), ',') from (select raw from message where dir = 'c2s' order by session, seq)")"
check_eq "those complete, each refusal an exchange of its own: 403, refused, and why" \
	"5|200|complete 2|403|refused|Host is not a loopback name nor one given with --allow-host (a DNS rebinding?) 4|403|refused|Origin is not of a loopback host nor of one given with --allow-host (a web page elsewhere?)" \
	"$(sql "$T/t.db" "select count(*) || '|' || group_concat(distinct status) || '|' || group_concat(distinct outcome) from http_exchange where outcome = 'complete'") $(sql "$T/t.db" "select count(*) || '|' || status || '|' || outcome || '|' || error from http_exchange where outcome = 'refused' group by error order by error" | tr '\n' ' ' | sed 's/ $//')"
check_eq "the tap said the first refusal of each kind, once" \
	"mcptap: warning: refused a request for Host 'evil.example.com' (the tap listens on loopback: a DNS rebinding?); --allow-host NAME lets a name in
mcptap: warning: refused a request from Origin 'http://evil.example.com' (the tap listens on loopback: a web page elsewhere?); --allow-host NAME lets its host in" \
	"$(sed 1d "$TAP_ERR")"
kill "$UP_PID"
wait "$UP_PID" 2> /dev/null

# 2. The mock of a recording of the C peers, on loopback.
"$PEERS/mcp-client" --log "$T/rec.jsonl" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" 2> /dev/null
check_eq "recorded the C peers" 0 $?
INIT=$(sql "$T/c.db" "select cast(raw as text) from message where dir = 'c2s' and method = 'initialize'")
ANSWER="200 application/json $(sql "$T/c.db" "select cast(raw as text) from message where dir = 's2c' and request_seq = (select seq from message where dir = 'c2s' and method = 'initialize')")"
check "the recorded initialize and its answer" test -n "$INIT" -a "$ANSWER" != "200 application/json "

start_mock "$T/c.db"
MOCK_PORT=${MOCK_URL#http://127.0.0.1:}
MOCK_PORT=${MOCK_PORT%%/*}
check_eq "mock: no Origin: served" "$ANSWER" "$(ask "$MOCK_URL" "$INIT")"
check_eq "mock: Host localhost:PORT, Origin http://localhost:3000: served" "$ANSWER" \
	"$(ask "$MOCK_URL" "$INIT" -H "Host: localhost:$MOCK_PORT" -H 'Origin: http://localhost:3000')"
check_eq "mock: Origin http://127.0.0.1:8080: served" "$ANSWER" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Origin: http://127.0.0.1:8080')"
check_eq "mock: a foreign Host: 403, and why" "403 application/json $HOST_BODY" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Host: evil.example.com')"
check_eq "mock: a foreign Origin: 403, and why" "403 application/json $ORIGIN_BODY" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Origin: http://evil.example.com:8809')"
check_eq "mock: Origin null: 403" "403 application/json $ORIGIN_BODY" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Origin: null')"
check_eq "mock: a foreign Host on another path (a recorded OAuth document's, say): 403 all the same" \
	"403 application/json $HOST_BODY" \
	"$(get -H 'Host: evil.example.com' "http://127.0.0.1:$MOCK_PORT/.well-known/oauth-protected-resource")"
check_eq "mock: a foreign Host without --allow-host mcp.local" "403 application/json $HOST_BODY" \
	"$(ask "$MOCK_URL" "$INIT" -H "Host: mcp.local:$MOCK_PORT")"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"
check_eq "the mock said the first refusal of each kind, once" \
	"mcptap: warning: refused a request for Host 'evil.example.com' (the mock listens on loopback: a DNS rebinding?); --allow-host NAME lets a name in
mcptap: warning: refused a request from Origin 'http://evil.example.com:8809' (the mock listens on loopback: a web page elsewhere?); --allow-host NAME lets its host in" \
	"$(grep -v '^mcptap: replay: ' "$MOCK_ERR")"

start_mock "$T/c.db" --allow-host mcp.local --allow-host other.test:9000
check_eq "mock --allow-host: Host mcp.local:PORT served" "$ANSWER" \
	"$(ask "$MOCK_URL" "$INIT" -H "Host: mcp.local:$MOCK_PORT")"
check_eq "mock --allow-host: Origin http://MCP.local:3000 served" "$ANSWER" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Origin: http://MCP.local:3000')"
check_eq "mock --allow-host NAME:PORT: that port only" "$ANSWER 403 application/json $HOST_BODY" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Host: other.test:9000') $(ask "$MOCK_URL" "$INIT" -H 'Host: other.test:9001')"
check_eq "mock --allow-host: another name still 403" "403 application/json $ORIGIN_BODY" \
	"$(ask "$MOCK_URL" "$INIT" -H 'Origin: http://evil.example.com')"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"

# --allow-host is the HTTP mock's.
"$MCPTAP" replay -r "$T/c.db" --as server --allow-host mcp.local < /dev/null > /dev/null 2> "$T/usage.err"
check_eq "--allow-host without --listen: a usage error" 2 $?
check_eq "saying so" "mcptap: --path, --legacy-sse and --allow-host serve over HTTP: they need --listen" \
	"$(head -1 "$T/usage.err")"

finish
