#!/bin/sh
# t0362-export-har: `mcptap export -T har`, one HAR 1.2 document, on real
# captures, read by two real HAR readers: har-validator (the HAR 1.2 schema)
# validates every file exported, and httpsnippet turns each entry's request
# back into a curl command whose method, URL, headers and body must be the
# entry's (tests/node/check-har.mjs, both pinned in tests/node/package.json).
#
# 1. The SDK client's full flow through the HTTP tap against server-everything
#    on Streamable HTTP: an entry per http_exchange row, its method and status;
#    every message's bytes exactly once in its exchange's entry (the request
#    body in postData, a JSON answer in the content, an SSE event in
#    _sseEvents, whose content is the stream they rebuild); the URL from Host
#    and the target; -Y: the entries of the exchanges whose messages pass.
# 2. The same on legacy HTTP+SSE: the GET stream leads with its endpoint event.
#    The same flows from packet captures, through import.
# 3. A stdio capture (the SDK client's stdio flow) by the convention of
#    mcptap.1: an entry per request with its answer, per notification, the
#    server's requests with _direction s2c, a cancelled request status 0.
# 4. Crafted captures (fixture-load): an exchange with no response (reset),
#    one never ended, a body no message holds, a query string, cookies; stdio
#    answers that are errors, a request never answered, an answer whose
#    request is not in the file, a line that is not JSON; a crafted row that
#    is not what the tap writes still exports a valid file.
# 5. Redaction: a capture recorded with --keep-secrets through the tap with
#    Authorization: Bearer SECRET exports without it (-Y too), and keeps it
#    with export --keep-secrets.
# 6. Usage errors: exit 2 and a clear line. -o naming a FIFO writes through it.
# 7. Streaming: a GET stream open the whole session in front of 60 MB of
#    answers: the export's peak memory is the JSON Lines export's.
# e2e: long
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk har-validator httpsnippet
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/http-client.mjs
CHECK=$NODEDIR/check-har.mjs
trap stop_http_peers EXIT

# har DB NAME [OPTION...]: export DB as $T/NAME.har; its exit status in RC, stderr in $T/NAME.err.
har() {
	_db=$1 _n=$2
	shift 2
	"$MCPTAP" export -r "$_db" -T har -o "$T/$_n.har" "$@" 2> "$T/$_n.err"
	RC=$?
	sed "s/^/# $_n (stderr): /" "$T/$_n.err"
}
# rows DB NAME / msgs DB NAME: the rows check-har compares the entries with.
rows() { sql_json "$1" "select session, seq, method, status from http_exchange order by session, seq" > "$T/$2.rows.json"; }
msgs() {
	sql_json "$1" "select session, seq, exchange, channel, dir, kind, cast(raw as text) as raw from message order by session, seq" > "$T/$2.msgs.json"
}
sql_json() { sqlite3 -json "$1" "$2"; }
# checked NAME [OPTION...]: check-har.mjs on $T/NAME.har; its output in $T/NAME.check.
checked() {
	_n=$1
	shift
	node "$CHECK" "$T/$_n.har" "$@" > "$T/$_n.check" 2>&1
	_rc=$?
	sed "s/^/# $_n: /" "$T/$_n.check"
	return $_rc
}
# jqh NAME FILTER: jq -r FILTER over $T/NAME.har.
jqh() { jq -r "$2" "$T/$1.har"; }

# ---- 1. Streamable HTTP ----
p1=$(free_port)
start_everything streamableHttp "$p1"
start_tap "$T/h.db" "http://127.0.0.1:$p1"
timeout 100 node "$CLIENT" --transport http --log "$T/h.jsonl" "$TAP_URL/mcp" > "$T/h.rec" 2>&1
check_eq "recorded the SDK client's full flow through the tap (Streamable HTTP)" 0 $?
check "its messages are committed" wait_committed "$T/h.db" 1 "$T/h.jsonl"
stop_tap
stop_everything
TAP_HOSTPORT=${TAP_URL#http://}
har "$T/h.db" h
check_eq "export -T har: exit 0, nothing on stderr" "0 0" "$RC $(wc -l < "$T/h.err")"
rows "$T/h.db" h
msgs "$T/h.db" h
NX=$(sql "$T/h.db" "select count(*) from http_exchange")
NM=$(sql "$T/h.db" "select count(*) from message")
check "valid HAR 1.2 (har-validator); every exchange and message where it belongs; httpsnippet reads every request" \
	checked h --rows "$T/h.rows.json" --messages "$T/h.msgs.json" --curl "$T/h.curl"
check_eq "check-har counted them all" "ok: $NX entries; $NX exchanges, $NM messages, $NX curl commands" "$(cat "$T/h.check")"
check_eq "entries == http_exchange rows" "$NX" "$(jqh h '.log.entries | length')"
check_eq "the log: version 1.2, creator mcptap and its version" "1.2 mcptap $("$MCPTAP" --version | sed 's/^mcptap //')" \
	"$(jqh h '.log | "\(.version) \(.creator.name) \(.creator.version)"')"
check_eq "the methods, as the rows: POST, GET, DELETE" \
	"$(sql "$T/h.db" "select method || ' ' || count(*) from http_exchange group by method order by method" | tr '\n' ' ')" \
	"$(jqh h '[.log.entries[].request.method] | group_by(.) | map("\(.[0]) \(length)") | join(" ")') "
check_eq "every URL: http, the Host header, the target" "$NX" \
	"$(jqh h "[.log.entries[] | select(.request.url == \"http://$TAP_HOSTPORT/mcp\")] | length")"
check_eq "the SSE answers: text/event-stream, _sseEvents for each" \
	"$(sql "$T/h.db" "select count(*) from http_exchange where resp_type = 'sse'")" \
	"$(jqh h '[.log.entries[] | select(.response.content.mimeType == "text/event-stream" and (._sseEvents | length) > 0)] | length')"
check_eq "every SSE event is in _sseEvents, with its id and its seq" \
	"$(sql "$T/h.db" "select count(*) || ' ' || count(sse_id) from message where channel = 'sse'")" \
	"$(jqh h '[.log.entries[]._sseEvents // [] | .[]] | "\(length) \(map(select(.id != null)) | length)"')"
check_eq "the notifications POSTed: 202, no content" \
	"$(sql "$T/h.db" "select count(*) from http_exchange where status = 202")" \
	"$(jqh h '[.log.entries[] | select(.response.status == 202 and .response.content.size == 0)] | length')"
check_eq "the request after the DELETE: 400, its JSON error in the content" "400 Bad Request application/json" \
	"$(jqh h '.log.entries[] | select(.response.status == 400) | "\(.response.status) \(.response.statusText) \(.response.content.mimeType | split(";")[0])"')"
check_eq "the GET stream's request headers: the session id, as stored" \
	"$(sql "$T/h.db" "select http_session_id from session")" \
	"$(jqh h '.log.entries[] | select(.request.method == "GET") | .request.headers[] | select(.name | ascii_downcase == "mcp-session-id") | .value')"
check_eq "startedDateTime: the stored wall clock, ISO 8601" \
	"$(sql "$T/h.db" "select strftime('%Y-%m-%dT%H:%M:%S', wall / 1000000, 'unixepoch') || printf('.%06dZ', wall % 1000000) from http_exchange order by seq limit 1")" \
	"$(jqh h '.log.entries[0].startedDateTime')"
check_eq "the GET stream's time: from its request to its end (ms)" \
	"$(sql "$T/h.db" "select (end_ns - t_ns) / 1000000 from http_exchange where method = 'GET'")" \
	"$(jqh h '.log.entries[] | select(.request.method == "GET") | .time | floor')"
check_eq "every exchange completed, said in _outcome" "complete" "$(jqh h '[.log.entries[]._outcome] | unique | join(",")')"
check_eq "a page per session" "session-1 1" "$(jqh h '.log.pages | "\(.[0].id) \(length)"')"
check_eq "httpsnippet's curl for the first request" \
	"curl --request POST --url http://$TAP_HOSTPORT/mcp" \
	"$(head -1 "$T/h.curl" | jq -r .curl | head -2 | sed 's/ *\\$//; s/^ *//' | tr '\n' ' ' | sed 's/ $//')"

# -Y: the exchanges whose messages pass (with their answers: whole JSON-RPC exchanges).
har "$T/h.db" hy -Y 'method == tools/call'
check_eq "-Y: exit 0" 0 "$RC"
check "-Y: valid HAR; httpsnippet reads it" checked hy --curl "$T/hy.curl"
check_eq "-Y: an entry per exchange that carried a tools/call or its answer or cancel" \
	"$(sql "$T/h.db" "select group_concat(exchange, ' ') from (select distinct exchange from message where method = 'tools/call' or request_seq in (select seq from message where kind = 'request' and method = 'tools/call') order by exchange)")" \
	"$(jqh hy '[.log.entries[]._seq] | join(" ")')"
check_eq "-Y: in them, exactly those messages" \
	"$(sql "$T/h.db" "select group_concat(seq, ' ') from (select seq from message where method = 'tools/call' or request_seq in (select seq from message where kind = 'request' and method = 'tools/call') order by exchange, seq)")" \
	"$(jqh hy '[.log.entries[]._messageSeqs[]] | join(" ")')"
check_eq "-Y: the progress events left out, counted" \
	"$(sql "$T/h.db" "select sum(n) from (select (select count(*) from message m where m.exchange = x.seq) - (select count(*) from message m where m.exchange = x.seq and (m.method = 'tools/call' or m.request_seq in (select seq from message where kind = 'request' and method = 'tools/call'))) as n from http_exchange x where x.seq in (select exchange from message where method = 'tools/call'))")" \
	"$(jqh hy '[.log.entries[]._messagesLeftOut // 0] | add')"
har "$T/h.db" hall -Y 'seq > 0'
check_eq "-Y passing every message: the same entries, but for the exchanges that carried none" \
	"$(jq -c '[.log.entries[] | select((._messageSeqs | length) > 0)]' "$T/h.har" | md5sum)" "$(jq -c '.log.entries' "$T/hall.har" | md5sum)"
check_eq "-Y: each entry's method and status as its row" "" \
	"$(jqh hy '.log.entries[] | "\(._seq) \(.request.method) \(.response.status)"' | while read -r s m st; do
		[ "$(sql "$T/h.db" "select method || ' ' || status from http_exchange where seq = $s")" = "$m $st" ] || echo "#$s"; done)"

# ---- 2. Legacy HTTP+SSE ----
p2=$(free_port)
start_everything sse "$p2"
start_tap "$T/s.db" "http://127.0.0.1:$p2"
timeout 100 node "$CLIENT" --transport sse --log "$T/s.jsonl" "$TAP_URL/sse" > "$T/s.rec" 2>&1
check_eq "recorded the SDK client's full flow through the tap (legacy SSE)" 0 $?
check "its messages are committed" wait_committed "$T/s.db" 1 "$T/s.jsonl"
stop_tap
stop_everything
har "$T/s.db" s
check_eq "legacy SSE: exit 0" 0 "$RC"
rows "$T/s.db" s
msgs "$T/s.db" s
NX=$(sql "$T/s.db" "select count(*) from http_exchange")
NM=$(sql "$T/s.db" "select count(*) from message")
check "legacy SSE: valid; every exchange and message where it belongs; httpsnippet reads every request" \
	checked s --rows "$T/s.rows.json" --messages "$T/s.msgs.json" --curl "$T/s.curl"
check_eq "legacy SSE: check-har counted them all" "ok: $NX entries; $NX exchanges, $NM messages, $NX curl commands" "$(cat "$T/s.check")"
check_eq "the GET stream carries every answer, and leads with the endpoint event" \
	"$(sql "$T/s.db" "select count(*) from message where dir = 's2c'") event: endpoint|data: $(sql "$T/s.db" "select http_session_id from session")" \
	"$(jqh s '.log.entries[] | select(.request.method == "GET") | "\(._messageSeqs | length) \(.response.content.text | split("\n")[0:2] | join("|"))"')"
check_eq "the POSTs: to the endpoint (its query in queryString), 202 Accepted" \
	"$(sql "$T/s.db" "select count(*) from http_exchange where method = 'POST'") sessionId 202 Accepted" \
	"$(jqh s '[.log.entries[] | select(.request.method == "POST")] | "\(length) \(map(.request.queryString[0].name) | unique | join(",")) \(map("\(.response.status) \(.response.content.text)") | unique | join(","))"')"

# The same flows read from packet captures (tests/fixtures/pcap, import).
for f in http sse; do
	"$MCPTAP" import -w "$T/p$f.db" "$TOP/tests/fixtures/pcap/$f.pcap" > /dev/null 2>&1
	check_eq "import $f.pcap" 0 $?
	har "$T/p$f.db" "p$f"
	rows "$T/p$f.db" "p$f"
	msgs "$T/p$f.db" "p$f"
	NX=$(sql "$T/p$f.db" "select count(*) from http_exchange")
	NM=$(sql "$T/p$f.db" "select count(*) from message")
	checked "p$f" --rows "$T/p$f.rows.json" --messages "$T/p$f.msgs.json" --curl "$T/p$f.curl"
	check_eq "$f.pcap imported: exit 0; valid, every exchange and message where it belongs, httpsnippet reads each" \
		"0 ok: $NX entries; $NX exchanges, $NM messages, $NX curl commands" "$RC $(cat "$T/p$f.check")"
done

# ---- 3. stdio ----
timeout 120 node "$NODEDIR/sdk-client.mjs" --flow full --log "$T/o.jsonl" -- \
	"$MCPTAP" record -w "$T/o.db" -- node "$ENTRY" stdio 2> "$T/o.rec"
check_eq "recorded the SDK client's stdio flow" 0 $?
har "$T/o.db" o
check_eq "stdio: exit 0" 0 "$RC"
msgs "$T/o.db" o
NM=$(sql "$T/o.db" "select count(*) from message")
PAIRED=$(sql "$T/o.db" "select count(*) from message a join message q on q.session = a.session and q.seq = a.request_seq where a.kind in ('response', 'error') and q.kind = 'request'")
check "stdio: valid; each message in its entry (the request in postData, its answer in the content); httpsnippet reads every request" \
	checked o --messages "$T/o.msgs.json" --curl "$T/o.curl"
check_eq "stdio: an entry per message but the answers paired with their request" \
	"ok: $((NM - PAIRED)) entries; $NM messages, $((NM - PAIRED)) curl commands" "$(cat "$T/o.check")"
check_eq "stdio: every entry POST to mcp+stdio://session-1/ and its method" "$((NM - PAIRED))" \
	"$(jqh o '[.log.entries[] | select(.request.method == "POST" and .request.url == "mcp+stdio://session-1/" + (.request.postData.text | fromjson | .method))] | length')"
check_eq "stdio: 200 per answered request, 202 per notification, 0 per request not answered" \
	"200 $(sql "$T/o.db" "select count(*) from message where kind = 'response' and request_seq is not null") 202 $(sql "$T/o.db" "select count(*) from message where kind = 'notification'") 0 $(sql "$T/o.db" "select count(*) from message q where kind = 'request' and not exists (select 1 from message a where a.request_seq = q.seq and a.kind in ('response', 'error'))")" \
	"$(jqh o '[.log.entries[].response.status] | "200 \(map(select(. == 200)) | length) 202 \(map(select(. == 202)) | length) 0 \(map(select(. == 0)) | length)"')"
check_eq "stdio: the server's requests, s2c, answered by the client" \
	"$(sql "$T/o.db" "select group_concat(method, ' ') from (select method from message where kind = 'request' and dir = 's2c' order by seq)")" \
	"$(jqh o '[.log.entries[] | select(._direction == "s2c" and .response.status == 200) | .request.url | sub("mcp\\+stdio://session-1/"; "")] | join(" ")')"
check_eq "stdio: the cancelled request: status 0, _outcome cancelled, _cancelledBy its cancel" \
	"$(sql "$T/o.db" "select request_seq || ' 0 cancelled ' || seq from message where method = 'notifications/cancelled'")" \
	"$(jqh o '.log.entries[] | select(._outcome == "cancelled") | "\(._seq) \(.response.status) \(._outcome) \(._cancelledBy)"')"
check_eq "stdio: an answer's time: its latency (ms)" \
	"$(sql "$T/o.db" "select (a.t_ns - q.t_ns) / 1000000 from message q join message a on a.request_seq = q.seq where q.method = 'initialize'")" \
	"$(jqh o '.log.entries[0] | "\(.timings.wait | floor)"')"

# ---- 4. Crafted captures ----
cat > "$T/x.fix" <<'EOF'
@transport http
@session-id s-9
@headers [Host: mcp.example:8443] [Accept: application/json, text/event-stream]
=> POST /mcp?tenant=a%20b&flag [Cookie: theme=dark; lang=en]
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
<= 200 json [Mcp-Session-Id: s-9] [Set-Cookie: sid=abc; Path=/]
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}
=> POST /mcp [Mcp-Session-Id: s-9]
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}
=| upstream-gone connection reset by peer
=> POST /token [Content-Type: application/x-www-form-urlencoded]
>! grant_type=client_credentials&scope=mcp
<= 401 other [Content-Type: text/plain] [WWW-Authenticate: Bearer]
<! no such client
=> GET /mcp [Mcp-Session-Id: s-9] [Accept: text/event-stream]
<= 200 sse
<@ id=7 event=message {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a\nb"}}
=| stopped the tap stopped
EOF
"$PEERS/fixture-load" "$T/x.fix" "$T/x.db" || die "cannot load x.fix"
sql "$T/x.db" "update http_exchange set outcome = null, end_ns = null where target = '/token'"
har "$T/x.db" x
check_eq "crafted HTTP: exit 0" 0 "$RC"
rows "$T/x.db" x
msgs "$T/x.db" x
check "crafted HTTP: valid, every message where it belongs" checked x --rows "$T/x.rows.json" --messages "$T/x.msgs.json" --curl "$T/x.curl"
check_eq "the URL: the Host header's, the target with its query" "http://mcp.example:8443/mcp?tenant=a%20b&flag" "$(jqh x '.log.entries[0].request.url')"
check_eq "queryString: decoded, a name alone with an empty value" '[{"name":"tenant","value":"a b"},{"name":"flag","value":""}]' \
	"$(jqh x '.log.entries[0].request.queryString | tojson')"
check_eq "cookies: the request's Cookie, the response's Set-Cookie (their values redacted, as stored)" 'theme lang|sid 3' \
	"$(jqh x '.log.entries[0] | "\(.request.cookies | map(.name) | join(" "))|\(.response.cookies | map(.name) | join(" ")) \([.request.cookies[], .response.cookies[] | select(.value | startswith("[redacted:"))] | length)"')"
check_eq "an exchange with no response: status 0, its request, what happened" \
	'0 -1 tools/call upstream-gone connection reset by peer' \
	"$(jqh x '.log.entries[1] | "\(.response.status) \(.response.bodySize) \(.request.postData.text | fromjson | .method) \(._outcome) \(._error)"')"
check_eq "a body no message holds, both ways; an exchange never ended: _outcome open" \
	'application/x-www-form-urlencoded grant_type=client_credentials&scope=mcp 401 Unauthorized text/plain no such client open' \
	"$(jqh x '.log.entries[2] | "\(.request.postData.mimeType) \(.request.postData.text) \(.response.status) \(.response.statusText) \(.response.content.mimeType) \(.response.content.text) \(._outcome)"')"
check_eq "an SSE event: its id, its event type, its data; and in _sseEvents" \
	'"id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"a\\nb\"}}\n\n"|7 message 8' \
	"$(jqh x '.log.entries[3] | "\(.response.content.text | tojson)|\(._sseEvents[0].id) \(._sseEvents[0].event) \(._sseEvents[0].seq)"')"
check_eq "entries in order of startedDateTime" "$(jqh x '[.log.entries[].startedDateTime] | sort | join(" ")')" \
	"$(jqh x '[.log.entries[].startedDateTime] | join(" ")')"
# What the tap never writes: headers that are not JSON, a status out of range,
# more messages named than the rows hold, bytes that are not UTF-8.
cp "$T/x.db" "$T/xc.db"
sql "$T/xc.db" "update http_exchange set req_headers = 'not json', status = 99 where target = '/token';
	update http_exchange set resp_body = x'ff00fe' where target = '/token';
	update message set exchange = 999 where seq = 5;
	update message set raw = cast('{\"jsonrpc\":\"2.0\",' || char(10) || '\"method\":\"notifications/x\"}' as blob) where seq = 8"
har "$T/xc.db" xc
check_eq "crafted rows: exit 0" 0 "$RC"
check "crafted rows: still valid HAR" checked xc
check_eq "bytes that are not UTF-8: base64" "base64 /wD+" "$(jqh xc '.log.entries[] | select(.request.url | endswith("/token")) | "\(.response.content.encoding) \(.response.content.text)"')"
check_eq "an SSE event whose data has two lines: a data: line each" \
	'"id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/x\"}\n\n"' \
	"$(jqh xc '.log.entries[] | select(.request.method == "GET") | .response.content.text | tojson')"
check_eq "a message naming no exchange: an entry of its own (mcp+http://), in its place" "3 mcp+http://session-1/tools/call" \
	"$(jqh xc '.log.entries | to_entries[] | select(.value.request.url | startswith("mcp+")) | "\(.key + 1) \(.value.request.url)"')"

cat > "$T/y.fix" <<'EOF'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}
> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hang"}}
< {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: nope"}}
< {"jsonrpc":"2.0","id":42,"result":{}}
> this is not json
EOF
"$PEERS/fixture-load" "$T/y.fix" "$T/y.db" || die "cannot load y.fix"
har "$T/y.db" y
check_eq "crafted stdio: exit 0" 0 "$RC"
msgs "$T/y.db" y
check "crafted stdio: valid, each message in its entry" checked y --messages "$T/y.msgs.json"
check_eq "crafted stdio: result 200, error 500, unanswered 0, unpaired answer and non-JSON 202" \
	"initialize 200 result|tools/call 500 error|tools/call 0 unanswered|response 202 unpaired|invalid 202 invalid" \
	"$(jqh y '[.log.entries[] | "\(.request.url | sub("mcp\\+stdio://session-1/"; "")) \(.response.status) \(._outcome)"] | join("|")')"

# ---- 5. Redaction ----
SECRET=har-secret-5e1f0c2d
p3=$(free_port)
start_everything streamableHttp "$p3"
start_tap "$T/k.db" "http://127.0.0.1:$p3" --keep-secrets
curl -s -o "$T/k.out" -H "Authorization: Bearer $SECRET" -H 'Content-Type: application/json' \
	-H 'Accept: application/json, text/event-stream' --max-time 20 \
	--data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \
	"$TAP_URL/mcp"
check_eq "curl's initialize with Authorization: Bearer SECRET through the tap" 0 $?
_n=0
while [ "$(sql "$T/k.db" "select count(*) from message" 2> /dev/null)" != 2 ] && [ $_n -lt 100 ]; do sleep 0.1; _n=$((_n + 1)); done
stop_tap
stop_everything
check_eq "recorded with --keep-secrets: the capture holds it" 1 \
	"$(sql "$T/k.db" "select count(*) from http_exchange where req_headers like '%Bearer $SECRET%'")"
har "$T/k.db" k
check_eq "exported: exit 0" 0 "$RC"
check "valid" checked k
check_eq "without --keep-secrets: SECRET nowhere in the HAR, the header still there" "0 1" \
	"$(grep -c "$SECRET" "$T/k.har") $(jqh k '[.log.entries[0].request.headers[] | select(.name == "Authorization")] | length')"
har "$T/k.db" ky -Y 'method == initialize'
check_eq "-Y (the rows read by the format itself): SECRET nowhere either" "0 0 1" \
	"$RC $(grep -c "$SECRET" "$T/ky.har") $(jqh ky '.log.entries | length')"
har "$T/k.db" kk --keep-secrets
check_eq "export --keep-secrets: kept, as recorded" "0 Bearer $SECRET" \
	"$RC $(jqh kk '.log.entries[0].request.headers[] | select(.name == "Authorization") | .value')"
har "$T/k.db" kky --keep-secrets -Y 'method == initialize'
check_eq "export --keep-secrets -Y: kept" "0 Bearer $SECRET" \
	"$RC $(jqh kky '.log.entries[0].request.headers[] | select(.name == "Authorization") | .value')"

# ---- 7. Streaming ----
# A GET stream open the whole session, 3200 POSTs of 20 kB answers behind it
# (200 loaded, then copied in SQL): the export's peak memory is the JSON
# Lines export's, not the document's 60 MB; with -Y too.
PAD=$(head -c 20000 /dev/zero | tr '\0' x)
{
	echo '@transport http'
	echo '@headers [Host: h:1]'
	echo '=> GET /mcp'
	echo '<= 200 sse'
	i=1
	while [ $i -le 200 ]; do
		echo '=> POST /mcp'
		echo "> {\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}"
		echo '<= 200 json'
		echo "< {\"jsonrpc\":\"2.0\",\"id\":$i,\"result\":{\"pad\":\"$PAD\"}}"
		echo '=| complete'
		i=$((i + 1))
	done
	echo '~ 1'
	echo '<@ id=1 {"jsonrpc":"2.0","method":"notifications/message","params":{}}'
} > "$T/big.fix"
"$PEERS/fixture-load" "$T/big.fix" "$T/big.db" || die "cannot load big.fix"
COPY=""
for k in $(seq 1 15); do
	COPY="$COPY insert into http_exchange select session, seq + $k * 1000, conn, method, target, req_headers, req_body, status, resp_headers, resp_type, resp_body, t_ns + $k, wall + $k * 1000000, first_byte_ns + $k, end_ns + $k, outcome, error, last_event_id from http_exchange where method = 'POST' and seq < 1000;
	insert into message (session, seq, t_ns, wall, dir, channel, kind, id, idtype, method, request_seq, incomplete, size, raw, exchange) select session, seq + $k * 1000, t_ns + $k, wall + $k * 1000000, dir, channel, kind, id, idtype, method, request_seq + $k * 1000, incomplete, size, raw, exchange + $k * 1000 from message where channel = 'body' and seq < 1000;"
done
sql "$T/big.db" "update message set seq = 100000000 where channel = 'sse'; $COPY"
check_eq "the big capture: 3201 exchanges, the GET stream's event last" "3201 1" \
	"$(sql "$T/big.db" "select count(*) from http_exchange") $(sql "$T/big.db" "select exchange from message order by seq desc limit 1")"
msgs "$T/big.db" big
rss() { /usr/bin/time -f %M -o "$T/rss" "$MCPTAP" export -r "$T/big.db" -o "$T/big.out" "$@" 2> /dev/null; cat "$T/rss"; }
RJ=$(rss -T jsonl)
RH=$(rss -T har)
SIZE=$(wc -c < "$T/big.out")
mv "$T/big.out" "$T/big.har"
check "the big HAR: valid; every message where it belongs" checked big --messages "$T/big.msgs.json"
RY=$(rss -T har -Y 'seq > 0')
echo "# peak RSS: jsonl ${RJ} kB, har ${RH} kB, har -Y ${RY} kB; the HAR ${SIZE} bytes"
check "the HAR is large (over 60 MB)" test "$SIZE" -gt 60000000
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# peak RSS not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check "its export's peak memory: the JSON Lines export's, give or take 8 MB" test "$RH" -lt $((RJ + 8192))
	check "with -Y as well" test "$RY" -lt $((RJ + 8192))
fi

# ---- 8. A big exchange ----
# The GET stream itself holds 3200 events of 20 kB (64 MB), some with
# characters of two to four bytes, with 200 POSTs between them: its entry is
# written from files, not memory. The document is byte for byte the one
# written from memory (MCPTAP_HAR_BIG_MESSAGES past the count), and its
# export's peak memory is the JSON Lines export's. bigy: an event and a
# request body that are not UTF-8.
# bigfix N: the fixture, event N and request N not UTF-8 (0: none)
bigfix() {
	echo '@transport http'
	echo '@headers [Host: h:1]'
	echo '=> GET /mcp'
	echo '<= 200 sse'
	i=1
	while [ $i -le 200 ]; do
		echo '=> POST /mcp'
		if [ $i -eq "$1" ]; then
			printf '> {"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"\377"}}\n' $i
		else
			echo "> {\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}"
		fi
		echo '<= 200 json'
		echo "< {\"jsonrpc\":\"2.0\",\"id\":$i,\"result\":{}}"
		echo '=| complete'
		echo '~ 1'
		case $((i % 4)) in 0) c="" ;; 1) c="é" ;; 2) c="日本" ;; *) c="𝄞" ;; esac
		if [ $i -eq "$1" ]; then
			printf '<@ id=%d {"jsonrpc":"2.0","method":"notifications/message","params":{"b":"\377\376"}}\n' $i
		else
			echo "<@ id=$i {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"p\":\"$c$PAD$c\"}}"
		fi
		i=$((i + 1))
	done
}
bigfix 0 > "$T/bigx.fix"
bigfix 7 | head -n 400 > "$T/bigy.fix"
"$PEERS/fixture-load" "$T/bigy.fix" "$T/bigy.db" || die "cannot load bigy.fix"
"$PEERS/fixture-load" "$T/bigx.fix" "$T/bigx.db" || die "cannot load bigx.fix"
COPY=""
for k in $(seq 1 15); do
	COPY="$COPY insert into message (session, seq, t_ns, wall, dir, channel, kind, id, idtype, method, request_seq, incomplete, size, raw, exchange, sse_id) select session, seq + $k * 1000, t_ns + $k, wall + $k * 1000000, dir, channel, kind, id, idtype, method, request_seq, incomplete, size, raw, exchange, sse_id || '-$k' from message where channel = 'sse' and seq < 1000;"
done
sql "$T/bigx.db" "$COPY"
check_eq "the big exchange: 3200 events on the GET stream, 200 POSTs" "3200 201" \
	"$(sql "$T/bigx.db" "select count(*) from message where exchange = 1") $(sql "$T/bigx.db" "select count(*) from http_exchange")"
msgs "$T/bigx.db" bigx
rssx() { /usr/bin/time -f %M -o "$T/rss" "$MCPTAP" export -r "$T/bigx.db" -o "$T/bigx.out" "$@" 2> "$T/bigx.err"; cat "$T/rss"; }
RJ=$(rssx -T jsonl)
RH=$(rssx -T har)
mv "$T/bigx.out" "$T/bigx.har"
check_eq "export: nothing on stderr" "" "$(cat "$T/bigx.err")"
MCPTAP_HAR_BIG_MESSAGES=100000 "$MCPTAP" export -r "$T/bigx.db" -T har -o "$T/bigx-mem.har"
check "the same bytes as the document made in memory" cmp "$T/bigx.har" "$T/bigx-mem.har"
check "the big HAR: valid; every message where it belongs" checked bigx --messages "$T/bigx.msgs.json"
check_eq "the GET stream's entry: 3200 events and their seqs, its text not base64" "3200 null 3200" \
	"$(jqh bigx '.log.entries[0] | "\(._sseEvents | length) \(.response.content.encoding) \(._messageSeqs | length)"')"
echo "# peak RSS: jsonl ${RJ} kB, har ${RH} kB; the HAR $(wc -c < "$T/bigx.har") bytes"
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# peak RSS not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check "its export's peak memory: the JSON Lines export's, give or take 8 MB" test "$RH" -lt $((RJ + 8192))
fi
# Its files go to $TMPDIR, as every temporary file of mcptap's does: a
# directory that is not there fails the export whole, and says which.
mkdir "$T/tmpd"
TMPDIR=$T/tmpd "$MCPTAP" export -r "$T/bigx.db" -T har -o "$T/bigx-tmpd.har"
check "TMPDIR elsewhere: the same bytes" cmp "$T/bigx.har" "$T/bigx-tmpd.har"
TMPDIR=$T/notthere "$MCPTAP" export -r "$T/bigx.db" -T har -o "$T/bigx-no.har" 2> "$T/no.err"
check_eq "TMPDIR not there: exit 2, says where, writes nothing" \
	"2 1 no" "$? $(grep -c "cannot make a temporary file in '$T/notthere': No such file or directory" "$T/no.err") $(ls "$T"/bigx-no.har* > /dev/null 2>&1 && echo yes || echo no)"
# Every exchange written from files (past 0 messages) is written as from memory:
# the real captures of 1 and 2 (a legacy stream's endpoint event), the crafted ones of 4.
for db in "$T"/*.db; do
	[ "$db" = "$T/bigx.db" ] && continue
	"$MCPTAP" export -r "$db" -T har -o "$T/m.har" 2> /dev/null
	rc1=$?
	MCPTAP_HAR_BIG_MESSAGES=0 "$MCPTAP" export -r "$db" -T har -o "$T/f.har" 2> /dev/null
	rc2=$?
	check "$(basename "$db"): from files, the same bytes as from memory (exit $rc1)" \
		sh -c "[ $rc1 -eq $rc2 ] && cmp '$T/m.har' '$T/f.har'"
done

# ---- 6. Usage errors ----
bad() {
	_want=$1
	shift
	"$MCPTAP" export "$@" > "$T/bad.out" 2> "$T/bad.err"
	_rc=$?
	check_eq "$* : exit 2, says $_want" "2 1 0" "$_rc $(grep -c "$_want" "$T/bad.err") $(wc -c < "$T/bad.out")"
}
bad "unknown format 'hr' (jsonl, har, otlp, pcapng)" -r "$T/h.db" -T hr
bad "no session 9" -r "$T/h.db" -T har -s 9
bad "bad filter (-Y)" -r "$T/h.db" -T har -Y 'method =='
bad "cannot open" -r "$T/nothing.db" -T har
echo "not a capture" > "$T/notdb"
bad "file is not a database" -r "$T/notdb" -T har
bad "cannot write '$T/no/such/x.har'" -r "$T/h.db" -T har -o "$T/no/such/x.har"
bad "unexpected argument 'extra'" -r "$T/h.db" -T har extra
# -o naming a pipe (or a device): written through, never replaced by a file.
mkfifo "$T/fifo"
cat "$T/fifo" > "$T/fifo.har" &
"$MCPTAP" export -r "$T/h.db" -T har -o "$T/fifo"
check_eq "-o a FIFO: exit 0, the FIFO still one" "0 p" "$? $(ls -l "$T/fifo" | cut -c1)"
wait
check "and what came through it is the export" cmp -s "$T/fifo.har" "$T/h.har"
check "no temporary file left behind" test -z "$(find "$T" -name '*.tmp-*')"

finish
