#!/bin/sh
# The HTTP tap is transparent and says what happened: SSE bytes pass the moment
# they arrive and unchanged; end-to-end headers, statuses, reason phrases and
# bodies pass; hop-by-hop headers do not; the upstream is asked for identity
# encoding; an upstream that dies mid-stream cuts the client's stream; an
# unreachable upstream gives a 502 with a JSON-RPC error naming the request's
# id; limits give 413 and 431; credentials never reach the store; SIGINT ends an open
# request and the tap exits 0 with everything stored.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
db=$T/t.db
start_tap "$db" "http://127.0.0.1:$port" --max-body 4k --max-headers 2k
timeout 60 node "$NODEDIR/http-faults.mjs" --upstream-port "$port" --tap "$TAP_URL" \
	stream headers status die > "$T/faults.out" 2>&1
check_eq "the scripted upstream's checks through the tap all pass" 0 $?
grep -v '^ok' "$T/faults.out"
check_eq "21 checks ran" 21 "$(grep -c '^ok' "$T/faults.out")"

# A body over --max-body is refused with 413 and never reaches the upstream.
big=$(head -c 5000 /dev/zero | tr '\0' x)
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data "$big" "$TAP_URL/echo-headers")
check_eq "a body over --max-body: 413" 413 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 3000 /dev/zero | tr '\0' a)" "$TAP_URL/teapot")
check_eq "a head over --max-headers: 431" 431 "$code"
# Malformed HTTP from a client: 400, and the tap goes on.
resp=$(node -e '
const s = require("net").connect(Number(process.argv[1]), "127.0.0.1", () => s.write("GARBAGE\r\n\r\n"));
let got = ""; s.on("data", (d) => (got += d)); s.on("close", () => console.log(got.split("\r\n")[0]));
setTimeout(() => s.destroy(), 3000);' "${TAP_URL##*:}")
check_eq "malformed HTTP: 400" "HTTP/1.1 400 Bad Request" "$resp"
code=$(curl -s -o /dev/null -w '%{http_code}' "$TAP_URL/teapot")
check_eq "and the tap still answers (502: the scripted upstream has exited)" 502 "$code"

# SIGINT while a request waits for its answer: it ends, and the tap exits 0.
node "$NODEDIR/http-faults.mjs" --upstream-port "$port" --tap "$TAP_URL" unanswered > "$T/never.out" 2>&1 &
client=$!
n=0 # (until the tap has stored the request: it is open)
while [ "$(sql "$db" "select count(*) from http_exchange where target = '/never'" 2> /dev/null)" != 1 ] && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
stop_tap INT
check_eq "SIGINT with a request open: the tap exits 0 (within --stop-ms and a little)" 0 "$TAP_STATUS"
wait "$client"
check_eq "the open request ended for the client" 0 $?
check_eq "stderr: where it listened, and the upstream's death (it died mid-stream, then was gone) once" \
	"2|1" "$(wc -l < "$TAP_ERR" | tr -d ' ')|$(grep -c "^mcptap: warning: the upstream .*: clients get the tap's 502 or 504, or a cut response, until it answers again$" "$TAP_ERR")"

# What the store says.
# (Plain HTTP without MCP sessions: a GET on a fresh connection is taken for a
# legacy SSE stream, requests without one for a session without ids.)
check_eq "sessions, each ended" "1|sse|1 2|http|1 3|sse|1 4|sse|1" \
	"$(sql "$db" "select id || '|' || transport || '|' || (ended_wall is not null) from session" | tr '\n' ' ' | sed 's/ $//')"
check_eq "each exchange as it ended" \
	"GET /stream 200 sse complete
POST /echo-headers?api_key=[redacted]&x=1 200 json complete
GET /teapot 418 other complete
POST /accepted 202 empty complete
GET /die 200 sse upstream-gone
POST /echo-headers 413 json refused
GET /teapot 431 json refused
GET /teapot 502 json unreachable
POST /never - - stopped" \
	"$(sql "$db" "select method || ' ' || (case when instr(target, '[redacted:') then replace(target, substr(target, instr(target, '[redacted:'), 19), '[redacted]') else target end) || ' ' || coalesce(status, '-') || ' ' || coalesce(resp_type, '-') || ' ' || outcome from http_exchange order by wall")"
check_eq "the SSE events stored with their ids, one message each" "1 2 3 1" \
	"$(sql "$db" "select group_concat(sse_id, ' ') from (select sse_id from message where channel = 'sse' order by seq)")"
check_eq "a multi-line data field joined with a newline" 1 \
	"$(sql "$db" "select count(*) from message where sse_id = '2' and cast(raw as text) = '{\"jsonrpc\":\"2.0\",' || char(10) || '\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"two\"}}'")"
check_eq "the SSE response paired with the request it answers? (id 7: none was sent)" "" \
	"$(sql "$db" "select request_seq from message where sse_id = '3'")"
check_eq "the JSON-RPC request body and its JSON answer, paired" "request|response|1" \
	"$(sql "$db" "select q.kind, r.kind, r.request_seq = q.seq from message q join message r on r.exchange = q.exchange and r.dir = 's2c' where q.channel = 'body' and q.kind = 'request' and q.method = 'tools/call'")"
check_eq "a non-JSON-RPC body kept on its exchange" "short and stout" \
	"$(sql "$db" "select cast(resp_body as text) from http_exchange where target = '/teapot' limit 1")"
check_eq "the upstream's death said" "the upstream closed the connection" \
	"$(sql "$db" "select error from http_exchange where target = '/die'")"
check_eq "no credential in the file (Authorization, Cookie, Set-Cookie, api_key, a password argument)" 0 \
	"$(cat "$db" "$db-wal" 2> /dev/null | grep -ac 'secret-[12]')"
check_eq "each of them a marker (the password twice: the upstream echoed it)" 6 \
	"$(sql "$db" "select cast(raw as text) from message; select target, req_headers, resp_headers from http_exchange" | grep -o 'redacted:[0-9a-f]*' | wc -l)"

# Legacy HTTP+SSE with an absolute endpoint URI, a resumed stream, a client
# that leaves: in a capture of their own.
port2=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
start_tap "$T/l.db" "http://127.0.0.1:$port2"
timeout 60 node "$NODEDIR/http-faults.mjs" --upstream-port "$port2" --tap "$TAP_URL" \
	endpoint resume disconnect stateless > "$T/legacy.out" 2>&1
check_eq "endpoint, resume, disconnect and stateless through the tap" 0 $?
grep -v '^ok' "$T/legacy.out"
check_eq "8 checks ran" 8 "$(grep -c '^ok' "$T/legacy.out")"
stop_tap INT
check_eq "SIGINT: exit 0" 0 "$TAP_STATUS"
check_eq "the legacy session, keyed by its endpoint (as the server named it), and the POST in it" \
	"1|sse|/messages?sessionId=abc|GET /sse complete,POST /messages?sessionId=abc complete" \
	"$(sql "$T/l.db" "select s.id, s.transport, s.http_session_id, group_concat(x.method || ' ' || x.target || ' ' || x.outcome) from session s join http_exchange x on x.session = s.id where s.transport = 'sse' and x.target not like '/hold%' group by s.id")"
check_eq "its request and its answer (on the GET stream), paired" "request|response|1" \
	"$(sql "$T/l.db" "select q.kind, r.kind, r.request_seq = q.seq from message q join message r on r.session = q.session and r.request_seq = q.seq where q.id = 5 and q.method = 'tools/list'")"
check_eq "the resumed stream: Last-Event-ID stored, both GETs in the session of their Mcp-Session-Id" "resume-1|,r1" \
	"$(sql "$T/l.db" "select s.http_session_id, group_concat(coalesce(x.last_event_id, ''), ',') from session s join http_exchange x on x.session = s.id where x.target = '/resume' group by s.id")"
check_eq "the event sent again is stored once more, flagged as a replay; the others once" "r1 0,r2 0,r2 1,r3 0" \
	"$(sql "$T/l.db" "select group_concat(sse_id || ' ' || replayed, ',') from (select sse_id, replayed from message where sse_id like 'r%' order by seq)")"
check_eq "the stream the client left: client-gone" "GET /hold 200 client-gone" \
	"$(sql "$T/l.db" "select method || ' ' || target || ' ' || status || ' ' || outcome from http_exchange where target = '/hold'")"

# (The four calls are sent at once on four connections: the order in which the
# tap's loops read them is the scheduler's, so the ids are compared sorted.)
check_eq "2026-07-28: one session per client (by its _meta clientInfo, which names the session), whatever the connection; the listen in agent-a's" \
	"agent-a 1,2,sub-1|agent-b 1,2" \
	"$(sql "$T/l.db" "select group_concat(ids, '|') from (select client_name || ' ' || group_concat(id, ',') as ids from (select m.session, m.id, s.client_name from message m join session s on s.id = m.session where m.kind = 'request' and m.exchange in (select seq from http_exchange x where x.session = m.session and x.target = '/v26') order by s.client_name, m.id) group by session order by client_name)")"
check_eq "the listen stream the client closed: client-gone" "client-gone" \
	"$(sql "$T/l.db" "select x.outcome from http_exchange x join message m on m.session = x.session and m.exchange = x.seq where m.id = 'sub-1'")"

# A 2025-03-26 batch; OAuth passing through; a static credential sent upstream
# with --upstream-header (from the environment, never stored).
port4=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
MCPTAP_TEST_TOKEN="Bearer upstream-secret-9" start_tap "$T/o.db" "http://127.0.0.1:$port4" --upstream-header Authorization=env:MCPTAP_TEST_TOKEN
timeout 60 node "$NODEDIR/http-faults.mjs" --upstream-port "$port4" --tap "$TAP_URL" batch oauth > "$T/o.out" 2>&1
check_eq "batch and oauth through the tap" 0 $?
grep -v '^ok\|^#' "$T/o.out"
check_eq "4 checks ran" 4 "$(grep -c '^ok' "$T/o.out")"
check_eq "--upstream-header: the upstream got the credential from the environment" \
	"# upstream saw authorization: Bearer upstream-secret-9" "$(grep '^# upstream saw' "$T/o.out")"
stop_tap
check_eq "the batch and its answer stored as one message each" "c2s batch 3,s2c batch 2" \
	"$(sql "$T/o.db" "select group_concat(dir || ' ' || kind || ' ' || batch_size, ',') from (select * from message where exchange in (select seq from http_exchange x where x.session = message.session and x.target = '/batch') order by seq)")"
check_eq "the 401 stored with its WWW-Authenticate, its body kept on the exchange" "401|1|{\"error\":\"invalid_token\"}" \
	"$(sql "$T/o.db" "select status, instr(resp_headers, 'WWW-Authenticate') > 0, cast(resp_body as text) from http_exchange where target = '/mcp-auth'")"
check_eq "the metadata kept on its exchange" "200|http://127.0.0.1:$port4/mcp-auth" \
	"$(sql "$T/o.db" "select status, json_extract(cast(resp_body as text), '$.resource') from http_exchange where target like '/.well-known/%'")"
check_eq "the tap's own credential is not in the file" 0 "$(cat "$T/o.db" "$T/o.db-wal" 2> /dev/null | grep -ac 'upstream-secret-9')"

# Timeouts: an upstream silent on a JSON answer gets a 504, a client that
# reads nothing is closed; an idle SSE stream is let be.
port3=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
start_tap "$T/to.db" "http://127.0.0.1:$port3" --upstream-timeout 1500 --client-timeout 1000
timeout 60 node "$NODEDIR/http-faults.mjs" --upstream-port "$port3" --tap "$TAP_URL" idle silent stall > "$T/to.out" 2>&1
check_eq "timeouts through the tap" 0 $?
grep -v '^ok' "$T/to.out"
check_eq "4 checks ran" 4 "$(grep -c '^ok' "$T/to.out")"
stop_tap
check_eq "stored: the idle stream complete, the silent one a timeout, the stalled client gone" \
	"/idle complete,/never timeout,/flood client-gone" \
	"$(sql "$T/to.db" "select group_concat(target || ' ' || outcome, ',') from (select target, outcome from http_exchange order by wall)")"

# An upstream nobody listens on: 502 with a JSON-RPC error that names the request's id.
start_tap "$T/u.db" "http://127.0.0.1:$port" --connect-timeout 2000 --allow-host mcp.local
body=$(curl -s -w ' %{http_code} %{content_type}' -H 'Content-Type: application/json' \
	--data '{"jsonrpc":"2.0","id":"req-9","method":"tools/list"}' "$TAP_URL/mcp")
check "an unreachable upstream: 502 with a JSON-RPC error for id req-9" \
	sh -c 'printf "%s" "$1" | grep -q "^{\"jsonrpc\":\"2.0\",\"id\":\"req-9\",\"error\":{\"code\":-32000,\"message\":\"mcptap: the upstream could not be reached: .*\"}} 502 application/json$"' sh "$body"
# On loopback, a request must name the tap by a loopback name (DNS rebinding).
check_eq "Host localhost, 127.0.0.1 or an --allow-host name passes; another gets 403" "502 502 502 403" \
	"$(for h in "localhost:${TAP_URL##*:}" "127.0.0.1" "mcp.local:80" "evil.example.com"; do
		curl -s -o /dev/null -w '%{http_code} ' -H "Host: $h" "$TAP_URL/x"
	done | sed 's/ $//')"
stop_tap TERM
check_eq "SIGTERM: exit 0" 0 "$TAP_STATUS"
check_eq "stored as unreachable" "POST|502|unreachable" "$(sql "$T/u.db" "select method, status, outcome from http_exchange where target = '/mcp'")"
check_eq "the refused Host said once" 1 "$(grep -c "refused a request for Host 'evil.example.com'" "$TAP_ERR")"

finish
