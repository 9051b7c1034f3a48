#!/bin/sh
# t0363-export-otlp: `mcptap export -T otlp`, OpenTelemetry traces in OTLP/JSON
# Lines, on real captures, validated with the official OTLP definitions
# (tests/node/check-otlp.mjs: protobufjs and the classes generated from
# opentelemetry-proto that @opentelemetry/otlp-transformer ships, pinned) and
# every attribute name checked against the registry below, itself checked
# against @opentelemetry/semantic-conventions.
#
# 1. The SDK client's full flow against server-everything through the HTTP tap
#    (Streamable HTTP): one CLIENT span per request, each with its method, id,
#    tool or prompt name, outcome (the JSON-RPC error's code and message, a
#    cancel's reason), start and duration as the capture says; the session's
#    attributes (Mcp-Session-Id, revision, transport, server address, client's
#    name) on every span; --spans server and both (the SERVER span the child
#    of the CLIENT one, with the client's address), --notifications; the same
#    ids from a second export and from a copy of the file.
# 2. The SDK client's full flow over stdio (through record): the same checks,
#    network.transport pipe, no HTTP attribute, and ids of its own.
# 3. A fixture of the edges (tests/fixtures/export/otlp-edges.fx): a
#    traceparent and tracestate kept, a tool error, a JSON-RPC error, escapes,
#    the server's requests, a cancelled request answered later, a batch, an
#    unanswered request, -Y, and --otlp-content (redacted unless
#    --keep-secrets); two sessions and two files give distinct ids.
# 4. HTTP fixtures: mcp.session.id on Streamable HTTP only, never on legacy
#    SSE (its endpoint) or 2026-07-28; 512 spans a line; memory flat.
# 5. Usage errors, a failed write, and the checker refusing broken files.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk protobufjs @opentelemetry/otlp-transformer @opentelemetry/semantic-conventions
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CHECK=$NODEDIR/check-otlp.mjs
VERSION=$(sed -n 's/^VERSION = //p' "$TOP/Makefile")
TAB=$(printf '\t')
# The attribute names the export may use: the MCP conventions' and the general ones.
REG=$(printf '%s,' mcp.method.name mcp.protocol.version mcp.session.id mcp.resource.uri \
	jsonrpc.request.id rpc.response.status_code error.type gen_ai.operation.name \
	gen_ai.tool.name gen_ai.prompt.name gen_ai.tool.call.arguments gen_ai.tool.call.result \
	network.transport network.protocol.name network.protocol.version server.address \
	server.port client.address client.port client.service.name service.name service.version |
	sed 's/,$//')

# valid FILE: the checker passes FILE (its summary in FILE.sum; complaints said).
valid() {
	node "$CHECK" --registry "$REG" "$1" > "$1.sum" 2> "$1.err"
	_rc=$?
	sed 's/^/# /' "$1.err"
	return $_rc
}
# listing FILE: the checker's line per span.
listing() { node "$CHECK" --registry "$REG" --list "$1"; }
# count FILE TEXT: how many times TEXT (a fixed string) is in FILE.
count() { grep -oF -- "$2" "$1" | wc -l | tr -d ' '; }
# tsv DB QUERY: the rows tab-separated.
tsv() { sqlite3 -batch -noheader -separator "$TAB" "$1" "$2"; }
# attr KEY VALUE: an attribute as the export writes it (string).
attr() { printf '{"key":"%s","value":{"stringValue":"%s"}}' "$1" "$2"; }

# What a capture's requests say each span must be (session 1): name, id,
# error.type, status message, start, duration; '-' for none.
REQ_LIST="
select q.method || coalesce(' ' || case when q.method in ('tools/call', 'prompts/get')
         then json_extract(cast(q.raw as text), '\$.params.name') end, ''),
       coalesce(cast(q.id as text), '-'),
       case when e.outcome = 'cancelled' then 'cancelled'
            when e.outcome = 'error' then coalesce(cast(r.error_code as text), '_OTHER')
            when e.outcome is null then 'unanswered'
            when q.method = 'tools/call' and json_extract(cast(r.raw as text), '\$.result.isError') = 1
            then 'tool_error' else '-' end,
       case when e.outcome = 'cancelled'
            then coalesce(json_extract(cast(c.raw as text), '\$.params.reason'), 'cancelled')
            when e.outcome = 'error' then coalesce(json_extract(cast(r.raw as text), '\$.error.message'), '-')
            when e.outcome is null then 'no answer before the session ended' else '-' end,
       q.wall * 1000,
       case when e.outcome = 'cancelled' then c.t_ns - q.t_ns else r.t_ns - q.t_ns end
from message q join exchange e on e.session = q.session and e.request_seq = q.seq
left join message r on r.session = q.session and r.seq = e.response_seq
left join message c on c.session = q.session and c.seq = e.cancel_seq
where q.session = 1 and q.kind = 'request' and q.replayed = 0"

# summary DB KIND: the checker's summary of DB's export with spans of KIND
# (CLIENT, SERVER or both) and notifications when NOTIF=1.
summary() {
	_db=$1 _k=$2
	_n=$(sql "$_db" "select count(*) from message where session = 1 and kind = 'request' and replayed = 0")
	_m=0
	[ "${NOTIF:-0}" = 1 ] &&
		_m=$(sql "$_db" "select count(*) from message where session = 1 and kind = 'notification' and replayed = 0")
	_per=1
	[ "$_k" = both ] && _per=2
	_spans=$(((_n + _m) * _per))
	echo "lines $(((_spans + 511) / 512))"
	echo "spans $_spans"
	echo "traces 1"
	{
		for k in CLIENT SERVER; do
			[ "$_k" = both ] || [ "$_k" = "$k" ] || continue
			sql "$_db" "select '$k ' || method || ' ' || count(*) from message where session = 1 and replayed = 0
				and (kind = 'request' or (${NOTIF:-0} and kind = 'notification')) group by method"
			tsv "$_db" "$REQ_LIST" | awk -F"$TAB" -v k="$k" '$3 != "-" { n[$3]++ } END { for (t in n) print "error " k " " t " " n[t] }'
			_p=none
			[ "$_k" = both ] && [ $k = SERVER ] && _p=client
			echo "parent $k $_p $((_n + _m))"
		done
	} | LC_ALL=C sort
}
# spans_of FILE KIND: name, id, error.type, message, start, duration of FILE's KIND spans, sorted.
spans_of() { listing "$1" | awk -F"$TAB" -v k="$2" '$1 == k' | cut -f2-5,8,9 | LC_ALL=C sort; }
# ids FILE KIND: the span ids of FILE's KIND spans, sorted.
ids() { listing "$1" | awk -F"$TAB" -v k="$2" '$1 == k { print $10 }' | LC_ALL=C sort; }

# ---- 1. The SDK client through the HTTP tap (Streamable HTTP) ----
p1=$(free_port)
start_everything streamableHttp "$p1"
start_tap "$T/h.db" "http://127.0.0.1:$p1"
timeout 100 node "$NODEDIR/http-client.mjs" --transport http --log "$T/h.jsonl" "$TAP_URL/mcp" > "$T/h.rec" 2>&1
check_eq "recorded the SDK client's full flow through the HTTP tap" 0 $?
check "its messages are committed" wait_committed "$T/h.db" 1 "$T/h.jsonl"
stop_tap
stop_everything
NH=$(sql "$T/h.db" "select count(*) from message where session = 1 and kind = 'request' and replayed = 0")
NHC=$(sql "$T/h.db" "select count(*) from message where session = 1 and kind = 'request' and dir = 'c2s'")
echo "# the capture: $NH requests ($NHC from the client), $(sql "$T/h.db" "select count(*) from message where kind = 'error'") JSON-RPC errors"
check "it has requests both ways, a JSON-RPC error and a cancel" test "$NH" -gt 20 -a "$NHC" -lt "$NH" -a \
	"$(sql "$T/h.db" "select count(*) from exchange where outcome = 'error'")" = 1 -a \
	"$(sql "$T/h.db" "select count(*) from message where method = 'notifications/cancelled'")" = 1

"$MCPTAP" export -r "$T/h.db" -T otlp -o "$T/h.otlp" 2> "$T/h.err"
check_eq "export -T otlp: exit 0, nothing on stderr" "0|" "$?|$(cat "$T/h.err")"
check "the OTLP decodes with the official definitions and keeps the conventions" valid "$T/h.otlp"
check_eq "a CLIENT span per request, per method; the errors and the cancel" "$(summary "$T/h.db" CLIENT)" "$(cat "$T/h.otlp.sum")"
check_eq "each span: its name (tool, prompt), id, outcome, message, start and duration" \
	"$(tsv "$T/h.db" "$REQ_LIST" | LC_ALL=C sort)" "$(spans_of "$T/h.otlp" CLIENT)"
check_eq "the tools/call spans name the tools the requests named" \
	"$(sql "$T/h.db" "select 'tools/call ' || json_extract(cast(raw as text), '\$.params.name') from message where kind = 'request' and method = 'tools/call'" | LC_ALL=C sort)" \
	"$(listing "$T/h.otlp" | cut -f2 | grep '^tools/call ' | LC_ALL=C sort)"
SID=$(sql "$T/h.db" "select http_session_id from session where id = 1")
check_eq "every span: the Mcp-Session-Id, the revision, tcp, http 1.1, the client's name" \
	"$NH $NH $NH $NH $NH $NH" \
	"$(count "$T/h.otlp" "$(attr mcp.session.id "$SID")") $(count "$T/h.otlp" "$(attr mcp.protocol.version 2025-11-25)") $(count "$T/h.otlp" "$(attr network.transport tcp)") $(count "$T/h.otlp" "$(attr network.protocol.name http)") $(count "$T/h.otlp" "$(attr network.protocol.version 1.1)") $(count "$T/h.otlp" "$(attr client.service.name mcptap-http-client)")"
check_eq "the client's requests' spans: the server's address and port (the upstream)" "$NHC $NHC" \
	"$(count "$T/h.otlp" "$(attr server.address 127.0.0.1),{\"key\":\"server.port\",\"value\":{\"intValue\":\"$p1\"}}") $(count "$T/h.otlp" '"key":"server.address"')"
check_eq "the resource: the server's name and version; the scope: mcptap" 1 \
	"$(count "$T/h.otlp" "{\"resourceSpans\":[{\"resource\":{\"attributes\":[$(attr service.name mcp-servers/everything),$(attr service.version 2.0.0)]},\"scopeSpans\":[{\"scope\":{\"name\":\"mcptap\",\"version\":\"$VERSION\"},\"spans\":[{")"
check_eq "no tool arguments or results without --otlp-content" 0 "$(count "$T/h.otlp" gen_ai.tool.call.)"

"$MCPTAP" export -r "$T/h.db" -T otlp > "$T/h2.otlp"
cp "$T/h.db" "$T/copy.db"
"$MCPTAP" export -r "$T/copy.db" -T otlp > "$T/h3.otlp"
check "a second export: the same bytes (the same ids)" cmp -s "$T/h.otlp" "$T/h2.otlp"
check "an export of a copy of the file: the same bytes" cmp -s "$T/h.otlp" "$T/h3.otlp"

"$MCPTAP" export -r "$T/h.db" -T otlp --spans both -o "$T/hb.otlp"
check "--spans both: valid" valid "$T/hb.otlp"
check_eq "--spans both: a CLIENT and a SERVER span per request, the SERVER one its child" \
	"$(summary "$T/h.db" both)" "$(cat "$T/hb.otlp.sum")"
check_eq "--spans both: the same CLIENT spans as the default" "$(ids "$T/h.otlp" CLIENT)" "$(ids "$T/hb.otlp" CLIENT)"
check_eq "--spans both: the SERVER spans tell the same story" "$(spans_of "$T/h.otlp" CLIENT)" "$(spans_of "$T/hb.otlp" SERVER)"
CADDR=$(sql "$T/h.db" "select client_addr from session where id = 1")
check_eq "--spans both: the SERVER spans of the client's requests carry the client's address and port" "$NHC $NHC" \
	"$(count "$T/hb.otlp" "$(attr client.address "${CADDR%:*}"),{\"key\":\"client.port\",\"value\":{\"intValue\":\"${CADDR##*:}\"}}") $(count "$T/hb.otlp" '"key":"client.address"')"
"$MCPTAP" export -r "$T/h.db" -T otlp --spans server -o "$T/hs.otlp"
check "--spans server: valid" valid "$T/hs.otlp"
check_eq "--spans server: only SERVER spans, no parent" "$(summary "$T/h.db" SERVER)" "$(cat "$T/hs.otlp.sum")"
check_eq "--spans server: the SERVER spans of --spans both" "$(ids "$T/hb.otlp" SERVER)" "$(ids "$T/hs.otlp" SERVER)"
NOTIF=1
"$MCPTAP" export -r "$T/h.db" -T otlp --notifications -o "$T/hn.otlp"
check "--notifications: valid" valid "$T/hn.otlp"
check_eq "--notifications: a span per notification too" "$(summary "$T/h.db" CLIENT)" "$(cat "$T/hn.otlp.sum")"
NOTIF=0
check_eq "--notifications: they take nothing from the requests' spans" "$(spans_of "$T/h.otlp" CLIENT)" \
	"$(spans_of "$T/hn.otlp" CLIENT | grep -v '^notifications/')"

# ---- 2. The SDK client over stdio ----
timeout 120 node "$NODEDIR/sdk-client.mjs" --flow full --log "$T/o.jsonl" -- \
	"$MCPTAP" record -w "$T/o.db" -- node "$ENTRY" stdio 2> "$T/o.rec"
check_eq "recorded the SDK client's full flow over stdio" 0 $?
NO=$(sql "$T/o.db" "select count(*) from message where session = 1 and kind = 'request'")
"$MCPTAP" export -r "$T/o.db" -T otlp --spans both -o "$T/o.otlp"
check_eq "export -T otlp --spans both of the stdio capture: exit 0" 0 $?
check "valid" valid "$T/o.otlp"
check_eq "two spans per request, per method; the cancel" "$(summary "$T/o.db" both)" "$(cat "$T/o.otlp.sum")"
check_eq "each span: name, id, outcome, message, start, duration" \
	"$(tsv "$T/o.db" "$REQ_LIST" | LC_ALL=C sort)" "$(spans_of "$T/o.otlp" CLIENT)"
check_eq "every span: network.transport pipe, the revision, the client; nothing of HTTP" \
	"$((2 * NO)) $((2 * NO)) $((2 * NO)) 0 0 0 0" \
	"$(count "$T/o.otlp" "$(attr network.transport pipe)") $(count "$T/o.otlp" "$(attr mcp.protocol.version 2025-11-25)") $(count "$T/o.otlp" "$(attr client.service.name mcptap-sdk-client)") $(count "$T/o.otlp" mcp.session.id) $(count "$T/o.otlp" network.protocol) $(count "$T/o.otlp" server.address) $(count "$T/o.otlp" client.address)"
# common A B COLUMN: how many values of a --list column two exports share.
common() {
	listing "$1" | cut -f"$3" | LC_ALL=C sort -u > "$T/common.a"
	listing "$2" | cut -f"$3" | LC_ALL=C sort -u > "$T/common.b"
	LC_ALL=C comm -12 "$T/common.a" "$T/common.b" | wc -l | tr -d ' '
}
check_eq "ids of its own: no trace id and no span id in common with the HTTP capture's" "0 0" \
	"$(common "$T/o.otlp" "$T/hb.otlp" 7) $(common "$T/o.otlp" "$T/hb.otlp" 10)"

# ---- 3. The edges (a fixture) ----
FX=$TOP/tests/fixtures/export/otlp-edges.fx
"$PEERS/fixture-load" "$FX" "$T/fx.db" || die "cannot load $FX"
check_eq "the fixture's file holds the credential of a tool's arguments" 1 \
	"$(sql "$T/fx.db" "select count(*) from message where cast(raw as text) like '%sk-live-0123456789abcdefghijklmnop%'")"
"$MCPTAP" export -r "$T/fx.db" -T otlp --notifications --otlp-content -o "$T/fx.otlp"
check_eq "export --notifications --otlp-content: exit 0" 0 $?
check "valid" valid "$T/fx.otlp"
# (kind, name, id, error.type, message, parent, duration; ^A: the \u0001 in a prompt's name)
cat > "$T/fx.want" <<'EOF'
CLIENT	initialize	1	-	-	-	1000000
CLIENT	notifications/initialized	-	-	-	-	0
CLIENT	tools/call get-weather	req-2	-	-	00f067aa0ba902b7	6000000
CLIENT	tools/call divide	3	tool_error	division by zero	-	1000000
CLIENT	tools/call nope	4	-32602	Unknown tool: nope	-	1000000
CLIENT	prompts/get review "this"^A	5	-	-	-	1000000
CLIENT	resources/read	6	-	-	-	1000000
CLIENT	resources/subscribe	7	-	-	-	1000000
CLIENT	notifications/resources/updated	-	-	-	-	0
CLIENT	sampling/createMessage	0	-1	User rejected sampling request	-	3000000
CLIENT	roots/list	1	-	-	-	1000000
CLIENT	ping	8	-	-	-	1000000
CLIENT	tools/call slow	9	cancelled	the user gave up	-	11000000
CLIENT	notifications/cancelled	-	-	-	-	0
CLIENT	tools/list	11	-	-	-	1000000
CLIENT	ping	10	-	-	-	1000000
CLIENT	ping	13	-	-	-	1000000
CLIENT	ping	14	-	-	-	1000000
CLIENT	ping	15	-	-	b7ad6b7169203331	1000000
CLIENT	tools/call forever	12	unanswered	no answer before the session ended	-	1000000
EOF
check_eq "each span as the fixture says: outcomes, messages, durations, the caller's parent" \
	"$(cat "$T/fx.want")" "$(listing "$T/fx.otlp" | cut -f1-6,9 | cat -v)"
TRACE=$(listing "$T/fx.otlp" | awk -F"$TAB" '$3 == 1 { print $7; exit }')
check_eq "one trace for the session, the callers' for the requests that named a valid one" \
	"0af7651916cd43dd8448eb211c80319c 1|4bf92f3577b34da6a3ce929d0e0e4736 1|$TRACE 18" \
	"$(listing "$T/fx.otlp" | cut -f7 | LC_ALL=C sort | uniq -c | awk '{ print $2 " " $1 }' | sort -k2n -k1 | tr '\n' '|' | sed 's/|$//')"
check_eq "the caller's tracestate, on that span only" "1 1" \
	"$(grep -oE '"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"[0-9a-f]{16}","traceState":"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE","parentSpanId":"00f067aa0ba902b7","name":"tools/call get-weather"' "$T/fx.otlp" | wc -l | tr -d ' ') $(count "$T/fx.otlp" traceState)"
check_eq "the prompt's name escaped" 1 "$(count "$T/fx.otlp" '"name":"prompts/get review \"this\"\u0001"')"
check_eq "the resources' uri, the resource of the notification too" 3 \
	"$(count "$T/fx.otlp" "$(attr mcp.resource.uri file:///tmp/a%20b.txt)")"
check_eq "the JSON-RPC errors' codes as rpc.response.status_code" "1 1 2" \
	"$(count "$T/fx.otlp" "$(attr rpc.response.status_code -32602)") $(count "$T/fx.otlp" "$(attr rpc.response.status_code -1)") $(count "$T/fx.otlp" rpc.response.status_code)"
check_eq "execute_tool on the five tools/call spans" 5 "$(count "$T/fx.otlp" "$(attr gen_ai.operation.name execute_tool)")"
check "--otlp-content: a tool's arguments, its credential redacted" \
	grep -qE '\{"key":"gen_ai.tool.call.arguments","value":\{"stringValue":"\{\\"city\\":\\"Zürich\\",\\"api_key\\":\\"\[redacted:[0-9a-f]{8}\]\\"\}"\}\}' "$T/fx.otlp"
check_eq "--otlp-content: the credential nowhere" 0 "$(count "$T/fx.otlp" sk-live-)"
check_eq "--otlp-content: the result of the tool that succeeded, only" \
	"1 1" "$(count "$T/fx.otlp" "$(attr gen_ai.tool.call.result '{\"content\":[{\"type\":\"text\",\"text\":\"sunny, 21 °C\"}],\"isError\":false}')") $(count "$T/fx.otlp" gen_ai.tool.call.result)"
"$MCPTAP" export -r "$T/fx.db" -T otlp --otlp-content --keep-secrets -o "$T/fxk.otlp"
check_eq "--otlp-content --keep-secrets: the arguments as sent" 1 \
	"$(count "$T/fxk.otlp" "$(attr gen_ai.tool.call.arguments '{\"city\":\"Zürich\",\"api_key\":\"sk-live-0123456789abcdefghijklmnop\"}')")"
"$MCPTAP" export -r "$T/fx.db" -T otlp -o "$T/fxp.otlp"
check_eq "without --otlp-content: no contents, no tool error's text" "0 -" \
	"$(count "$T/fxp.otlp" gen_ai.tool.call.) $(listing "$T/fxp.otlp" | awk -F"$TAB" '$2 == "tools/call divide" { print $5 }')"
"$MCPTAP" export -r "$T/fx.db" -T otlp --spans server -o "$T/fxs.otlp"
check "--spans server: valid" valid "$T/fxs.otlp"
check_eq "--spans server: the caller's span is the parent of the server's, in the caller's trace" \
	"SERVER	tools/call get-weather	00f067aa0ba902b7	4bf92f3577b34da6a3ce929d0e0e4736" \
	"$(listing "$T/fxs.otlp" | grep -F 'get-weather' | cut -f1,2,6,7)"
"$MCPTAP" export -r "$T/fx.db" -T otlp -Y 'method == tools/call' -o "$T/fxy.otlp"
# (The fixture's session does not say when it ended: the unanswered request ends
# at the last item read, which -Y makes the request itself.)
check_eq "-Y: the requests it picks, answered, cancelled and unanswered as without it" \
	"$(listing "$T/fxp.otlp" | grep "${TAB}tools/call " | cut -f1-9 | sed "s/^\(.*${TAB}unanswered${TAB}.*${TAB}\)1000000\$/\10/")" \
	"$(listing "$T/fxy.otlp" | cut -f1-9)"

"$PEERS/fixture-load" "$FX" "$T/fx.db" || die "cannot load $FX again"
"$MCPTAP" export -r "$T/fx.db" -T otlp -o "$T/fx2.otlp"
check "two sessions of the same messages: valid (every span id its own)" valid "$T/fx2.otlp"
check_eq "two sessions: a trace each, the callers' shared" "lines 2|spans 34|traces 4" \
	"$(head -n 3 "$T/fx2.otlp.sum" | tr '\n' '|' | sed 's/|$//')"
"$PEERS/fixture-load" "$FX" "$T/fx3.db" || die "cannot load $FX into another file"
"$MCPTAP" export -r "$T/fx3.db" -T otlp -o "$T/fx3.otlp"
check_eq "the same fixture in another file: other span ids, other traces but the callers'" "0 2" \
	"$(common "$T/fx3.otlp" "$T/fx2.otlp" 10) $(common "$T/fx3.otlp" "$T/fx2.otlp" 7)"

# ---- 4. HTTP fixtures, long sessions ----
cat > "$T/h25.fx" <<'EOF'
@transport http
@session-id sess-25
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c25","version":"1"}}}
<= 200 json
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s25","version":"1"}}}
EOF
cat > "$T/h26.fx" <<'EOF'
@transport http
@session-id not-in-2026
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c26","version":"1"}}}}
<= 200 json
< {"jsonrpc":"2.0","id":1,"result":{"tools":[],"resultType":"complete"}}
EOF
cat > "$T/sse.fx" <<'EOF'
@transport sse
@session-id /message?sessionId=abc
=> GET /sse
<= 200 sse
=> POST /message?sessionId=abc
> {"jsonrpc":"2.0","id":1,"method":"ping"}
<= 202 empty
~ 1
<@ event=message {"jsonrpc":"2.0","id":1,"result":{}}
EOF
for f in h25 h26 sse; do "$PEERS/fixture-load" "$T/$f.fx" "$T/hx.db" || die "cannot load $f.fx"; done
"$MCPTAP" export -r "$T/hx.db" -T otlp -o "$T/hx.otlp"
check "HTTP fixtures: valid" valid "$T/hx.otlp"
check_eq "mcp.session.id: Streamable HTTP's only, not 2026-07-28's, not the legacy endpoint" "1 1 3 3" \
	"$(count "$T/hx.otlp" "$(attr mcp.session.id sess-25)") $(count "$T/hx.otlp" mcp.session.id) $(count "$T/hx.otlp" "$(attr network.transport tcp)") $(count "$T/hx.otlp" "$(attr network.protocol.version 1.1)")"
check_eq "a server that never named itself: service.name mcp-server" 2 \
	"$(count "$T/hx.otlp" "\"attributes\":[$(attr service.name mcp-server)]}")"

awk 'BEGIN { for (i = 1; i <= 600; i++) printf("> {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n< {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n", i, i) }' > "$T/pings.fx"
"$PEERS/fixture-load" "$T/pings.fx" "$T/pings.db" || die "cannot load pings.fx"
"$MCPTAP" export -r "$T/pings.db" -T otlp -o "$T/pings.otlp"
check "600 spans: valid" valid "$T/pings.otlp"
check_eq "600 spans: two lines, 512 and 88 spans, each with its resource" "512 88 2" \
	"$(head -n 1 "$T/pings.otlp" | grep -o '"spanId"' | wc -l | tr -d ' ') $(tail -n 1 "$T/pings.otlp" | grep -o '"spanId"' | wc -l | tr -d ' ') $(grep -c '^{"resourceSpans":\[{"resource":' "$T/pings.otlp")"

# Memory: peak RSS for 300 and 30,000 tool calls (contents, both kinds): the same within 4 MiB.
[ -n "${ASAN_OPTIONS:-}" ] && echo "# peak RSS not compared under AddressSanitizer (its quarantine keeps freed memory)"
if [ -x /usr/bin/time ] && [ -z "${ASAN_OPTIONS:-}" ]; then
	for n in 300 30000; do
		awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++) printf("> {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"t%d\",\"arguments\":{\"x\":\"%0200d\"}}}\n< {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n", i, i % 7, i, i) }' > "$T/m$n.fx"
		"$PEERS/fixture-load" "$T/m$n.fx" "$T/m$n.db" || die "cannot load m$n.fx"
		/usr/bin/time -f %M -o "$T/rss$n" "$MCPTAP" export -r "$T/m$n.db" -T otlp --spans both --otlp-content -o "$T/m$n.otlp"
		check_eq "$n tool calls: $((2 * n)) spans" $((2 * n)) "$(grep -o '"spanId"' "$T/m$n.otlp" | wc -l | tr -d ' ')"
	done
	small=$(tail -n 1 "$T/rss300") big=$(tail -n 1 "$T/rss30000")
	check "peak RSS ${small} KiB for 300 tool calls, ${big} KiB for 30,000" test $((big - small)) -lt 4096
elif [ ! -x /usr/bin/time ]; then
	echo "# skipped: the memory check needs GNU time (tests/setup.sh test)"
fi

# ---- 5. Usage errors, a failed write, a checker that refuses ----
"$MCPTAP" export -r "$T/fx.db" -T otlp --spans sideways > "$T/u.out" 2> "$T/u.err"
check_eq "--spans sideways: a usage error" "2|mcptap: bad --spans 'sideways' (client, server or both)" "$?|$(head -n 1 "$T/u.err")"
"$MCPTAP" export -r "$T/fx.db" -T jsonl --spans both > "$T/u.out" 2> "$T/u.err"
check_eq "--spans with -T jsonl: a usage error" "2|mcptap: --spans is for -T otlp" "$?|$(head -n 1 "$T/u.err")"
"$MCPTAP" export -r "$T/fx.db" --otlp-content > "$T/u.out" 2> "$T/u.err"
check_eq "--otlp-content without -T otlp: a usage error, nothing written" "2|mcptap: --otlp-content is for -T otlp|0" \
	"$?|$(head -n 1 "$T/u.err")|$(wc -c < "$T/u.out" | tr -d ' ')"
"$MCPTAP" export -r "$T/fx.db" -T otel > "$T/u.out" 2> "$T/u.err"
check_eq "-T otel: names the formats" "2|mcptap: unknown format 'otel' (jsonl, har, otlp, pcapng)" "$?|$(head -n 1 "$T/u.err")"
"$MCPTAP" export -r "$T/pings.db" -T otlp > /dev/full 2> "$T/u.err"
check_eq "a full disk: exit 2, said" "2|mcptap: cannot write 'standard output': No space left on device" \
	"$?|$(cat "$T/u.err")"

# The checker refuses what breaks OTLP or the conventions.
broken() {
	sed "$1" "$T/fx.otlp" > "$T/broken.otlp"
	cmp -s "$T/fx.otlp" "$T/broken.otlp" && return 1 # (the change must change something)
	! node "$CHECK" --registry "$REG" "$T/broken.otlp" > /dev/null 2>&1
}
check "the checker refuses a misspelt field" broken 's/"startTimeUnixNano"/"startTimeUnixNanos"/'
check "the checker refuses a 64-bit integer written as a number" broken 's/"endTimeUnixNano":"\([0-9]*\)"/"endTimeUnixNano":\1/'
check "the checker refuses an enum by its name" broken 's/"kind":3/"kind":"SPAN_KIND_CLIENT"/'
check "the checker refuses an upper-case trace id" broken "s/\"traceId\":\"$TRACE\"/\"traceId\":\"$(echo "$TRACE" | tr a-f A-F)\"/"
check "the checker refuses an attribute outside the registry" broken 's/"key":"mcp.method.name"/"key":"mcp.method"/'
check "the checker refuses an error without status ERROR" broken 's/,"code":2}/,"code":1}/'
check "the checker refuses a registry name the conventions lack" \
	sh -c '! node "$1" --registry "$2,mcp.tool.name" "$3" > /dev/null 2>&1' sh "$CHECK" "$REG" "$T/fx.otlp"

finish
