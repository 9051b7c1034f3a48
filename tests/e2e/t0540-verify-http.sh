#!/bin/sh
# t0540-verify-http: `mcptap replay --as client --url`, the recorded client
# against a live server over HTTP, with the real peers.
#
# 1. The SDK client's full flow (tests/node/http-client.mjs) against
#    server-everything on Streamable HTTP, recorded through the HTTP tap, then
#    verified against a fresh server-everything, itself seen through a second
#    tap: it passes (the counts derived from the recording), and that tap shows
#    each run a session of its own, the live Mcp-Session-Id and the negotiated
#    MCP-Protocol-Version on every later request, Accept listing JSON and SSE,
#    the GET stream, the server's requests answered by POSTs taking 202, the
#    recorded DELETE and the refused request after it (HTTP 400, as recorded).
# 2. The same on legacy HTTP+SSE (chosen from the recording), and the legacy
#    recording forced onto Streamable HTTP (--streamable-http).
# 3. A stdio recording (the SDK client's stdio flow, as t0532) verified over
#    Streamable HTTP. A server without the GET stream (405): fine for the
#    stdio recording; a NOTE for the HTTP one, which had a GET stream.
# 4. A real change is caught: a front (tests/node/verify-peers.mjs) that
#    changes the echo tool's answers gives exactly one DIFF, naming echo.
# 5. https: stunnel with a test CA: refused without --cacert (the GONE line
#    says why and what to do), passed with it, and with --insecure (said on
#    stderr).
# 6. --header NAME=env:VAR reaches the server on every request (the front logs
#    them) and is nowhere in the capture file; a value on the command line is
#    refused.
# 7. A server that dies in the middle of a run: GONE once, the requests after
#    it MISSING without waiting a timeout each, exit 1, no hang; an unreachable
#    server likewise.
# 8. Bad answers, each its request's result with a clear line (a scripted
#    server, verify-peers.mjs): an HTTP 500, a body that is not JSON, text/html,
#    an SSE stream that ends or breaks before the answer, an event that is not
#    JSON, a stream resumed with Last-Event-ID (passes), a GET stream the server
#    ends (opened again: its roots/list still answered), and a 404 for the
#    session (GONE, once; the rest MISSING).
# e2e: long
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/http-client.mjs
VP=$NODEDIR/verify-peers.mjs
_vp_pids=""
stop_all() {
	for _p in $_vp_pids; do _stop_pid "$_p"; done
	stop_http_peers
}
trap stop_all EXIT

# start_vp MODE ARGS...: verify-peers.mjs MODE (front or server) on a free port,
# VP_PORT, in the background (its pid VP_PID); its output $T/vp-PORT.log.
start_vp() {
	_mode=$1
	shift
	VP_PORT=$(free_port)
	node "$VP" "$_mode" --port "$VP_PORT" "$@" > "$T/vp-$VP_PORT.log" 2>&1 &
	VP_PID=$!
	_vp_pids="$_vp_pids $VP_PID"
	wait_port "$VP_PORT" 15 || die "verify-peers $_mode did not listen"
}

# requests DB: the client requests of session 1; cancelled DB: those it cancelled.
requests() { sql "$1" "select count(*) from message where session = 1 and dir = 'c2s' and kind = 'request'"; }
cancelled() { sql "$1" "select count(*) from message where session = 1 and dir = 'c2s' and method = 'notifications/cancelled'"; }
# summary N PASSED DIFFERED MISSING CANCELLED UNANSWERED: the closing line's start.
summary() {
	echo "replay: $1 requests: $2 passed, $3 differed, $4 missing, $5 cancelled, $6 unanswered;"
}
# closing OUT: the closing line of a verify's output, up to its ';'.
closing() { sed -n 's/^\(replay: .*unanswered;\).*/\1/p' "$1"; }
# verify LABEL DB URL [OPTION...]: replay --as client --url; output $T/LABEL.out,
# stderr $T/LABEL.err, status in RC.
verify() {
	_l=$1
	_db=$2
	_u=$3
	shift 3
	timeout 300 "$MCPTAP" replay -r "$_db" --as client --url "$_u" "$@" > "$T/$_l.out" 2> "$T/$_l.err"
	RC=$?
	grep -v '^PASS' "$T/$_l.out" | sed "s/^/# $_l: /"
	sed "s/^/# $_l (stderr): /" "$T/$_l.err"
}

# ---- 1. Streamable HTTP ----
p1=$(free_port)
start_everything streamableHttp "$p1"
start_tap "$T/h.db" "http://127.0.0.1:$p1"
timeout 100 node "$CLIENT" --transport http --log "$T/h.jsonl" "$TAP_URL/mcp" > "$T/h.rec" 2>&1
check_eq "recorded the SDK client's full flow through the tap (Streamable HTTP)" 0 $?
check "its messages are committed" wait_committed "$T/h.db" 1 "$T/h.jsonl"
stop_tap
stop_everything
NH=$(requests "$T/h.db")
CH=$(cancelled "$T/h.db")
AFTER_DELETE=$(sql "$T/h.db" "select m.seq from message m join http_exchange x on x.session = m.session and x.seq = m.exchange where m.dir = 'c2s' and m.kind = 'request' and x.status = 400")
echo "# the recording: $NH requests, $CH cancelled, the one after the DELETE #$AFTER_DELETE"
check "the recording has requests, a cancelled one, and one refused after the DELETE" \
	test "$NH" -gt 10 -a "$CH" -eq 1 -a -n "$AFTER_DELETE"

p2=$(free_port)
start_everything streamableHttp "$p2"
start_tap "$T/live.db" "http://127.0.0.1:$p2"
verify h "$T/h.db" "$TAP_URL/mcp"
check_eq "verify over Streamable HTTP: exit 0" 0 "$RC"
check_eq "every request passes but the cancelled one" "$(summary "$NH" $((NH - CH)) 0 0 "$CH" 0)" "$(closing "$T/h.out")"
check_eq "one PASS line per passed request" $((NH - CH)) "$(grep -c '^PASS' "$T/h.out")"
check "the request after the DELETE: refused with 400, as recorded" grep -qx "PASS #$AFTER_DELETE ping (HTTP 400, as recorded)" "$T/h.out"
check_eq "no NOTE, GONE, DIFF or MISSING line" 0 "$(grep -c '^NOTE\|^GONE\|^DIFF\|^MISSING' "$T/h.out")"
check_eq "nothing on stderr" 0 "$(wc -l < "$T/h.err")"
check_eq "the run is stored: mode, runs, passed, differed, missing, and the URL" \
	"client|2|$((NH - CH))|0|0|$TAP_URL/mcp" \
	"$(sql "$T/h.db" "select mode, runs, passed, differed, missing, command from replay_run order by id desc limit 1")"
stop_tap
stop_everything
# What the live server saw (through the second tap).
check_eq "two runs: two MCP sessions, each with its own session id, revision 2025-11-25" "2|2|2025-11-25" \
	"$(sql "$T/live.db" "select count(*), count(distinct http_session_id), group_concat(distinct protocol_version) from session")"
HDR="(select json_extract(h.value, '\$[1]') from json_each(x.req_headers) h where lower(json_extract(h.value, '\$[0]')) ="
check_eq "every request after the initialize carries the live session id" 0 \
	"$(sql "$T/live.db" "select count(*) from http_exchange x join session s on s.id = x.session where x.seq > (select min(seq) from http_exchange where session = x.session) and $HDR 'mcp-session-id') is not s.http_session_id")"
check_eq "and the negotiated protocol version" 0 \
	"$(sql "$T/live.db" "select count(*) from http_exchange x join session s on s.id = x.session where x.seq > (select min(seq) from http_exchange where session = x.session) and $HDR 'mcp-protocol-version') is not s.protocol_version")"
check_eq "the initialize carries neither" "0|0" \
	"$(sql "$T/live.db" "select count($HDR 'mcp-session-id')), count($HDR 'mcp-protocol-version')) from http_exchange x where x.seq = (select min(seq) from http_exchange where session = x.session)")"
check_eq "every POST accepts JSON and SSE" 0 \
	"$(sql "$T/live.db" "select count(*) from http_exchange x where method = 'POST' and $HDR 'accept') is not 'application/json, text/event-stream'")"
check_eq "per run: the GET stream, the recorded DELETE, the request after it refused (400)" "GET 200 sse|DELETE 200|POST 400" \
	"$(sql "$T/live.db" "select group_concat(x, '|') from (select distinct method || ' ' || status || case when method = 'GET' then ' ' || resp_type else '' end as x from http_exchange where method != 'POST' or status not in (200, 202) order by seq)")"
check_eq "the GET stream and the DELETE: one each per run" "2|2" \
	"$(sql "$T/live.db" "select sum(method = 'GET'), sum(method = 'DELETE') from http_exchange")"
REC_SREQ=$(sql "$T/h.db" "select count(*) from message where dir = 's2c' and kind = 'request'")
check_eq "the server's requests were answered from the recording, each POST answered 202" "$((2 * REC_SREQ))|$((2 * REC_SREQ))" \
	"$(sql "$T/live.db" "select count(*), sum(x.status = 202) from message m join http_exchange x on x.session = m.session and x.seq = m.exchange where m.dir = 'c2s' and m.kind = 'response'")"

# ---- 2. Legacy HTTP+SSE ----
p3=$(free_port)
start_everything sse "$p3"
start_tap "$T/s.db" "http://127.0.0.1:$p3"
timeout 100 node "$CLIENT" --transport sse --log "$T/s.jsonl" "$TAP_URL/sse" > "$T/s.rec" 2>&1
check_eq "recorded the SDK client's full flow through the tap (legacy SSE)" 0 $?
check "its messages are committed" wait_committed "$T/s.db" 1 "$T/s.jsonl"
stop_tap
stop_everything
NS=$(requests "$T/s.db")
CS=$(cancelled "$T/s.db")
p4=$(free_port)
start_everything sse "$p4"
start_tap "$T/slive.db" "http://127.0.0.1:$p4"
verify s "$T/s.db" "$TAP_URL/sse"
check_eq "verify over legacy SSE (the recording's transport): exit 0" 0 "$RC"
check_eq "every request passes but the cancelled one" "$(summary "$NS" $((NS - CS)) 0 0 "$CS" 0)" "$(closing "$T/s.out")"
stop_tap
check_eq "the live server saw two legacy sessions" "2|sse" \
	"$(sql "$T/slive.db" "select count(*), group_concat(distinct transport) from session")"
check_eq "every POST went to the endpoint the server named, and got 202" "0|0" \
	"$(sql "$T/slive.db" "select sum(target not like '/message?sessionId=%'), sum(status != 202) from http_exchange where method = 'POST'")"
stop_everything
p5=$(free_port)
start_everything streamableHttp "$p5"
verify s2 "$T/s.db" "http://127.0.0.1:$p5/mcp" --streamable-http
check_eq "the legacy recording forced onto Streamable HTTP: exit 0" 0 "$RC"
check_eq "and the same counts" "$(summary "$NS" $((NS - CS)) 0 0 "$CS" 0)" "$(closing "$T/s2.out")"
stop_everything

# ---- 3. A stdio recording over Streamable HTTP ----
timeout 120 node "$NODEDIR/sdk-client.mjs" --flow full --log "$T/o.jsonl" -- \
	"$MCPTAP" record -w "$T/o.db" -- node "$ENTRY" stdio 2> "$T/o.rec"
check_eq "recorded the SDK client's stdio flow" 0 $?
NO=$(requests "$T/o.db")
CO=$(cancelled "$T/o.db")
p6=$(free_port)
start_everything streamableHttp "$p6"
verify o "$T/o.db" "http://127.0.0.1:$p6/mcp" --ignore 'get-env=result.content[0].text'
check_eq "a stdio recording verified over HTTP: exit 0, with only the environment ignored" 0 "$RC"
check_eq "every request passes but the cancelled one" "$(summary "$NO" $((NO - CO)) 0 0 "$CO" 0)" "$(closing "$T/o.out")"

# Without the GET stream (a front answering 405): server-everything's
# roots/list, sent on it, is lost (said, counted in the summary, and a finding:
# exit 1); the rest passes.
start_vp front --upstream "http://127.0.0.1:$p6" --no-get
verify og "$T/o.db" "http://127.0.0.1:$VP_PORT/mcp" --ignore 'get-env=result.content[0].text' --timeout-ms 3000
check_eq "a stdio recording against a server without GET stream: exit 1 (roots/list never came)" 1 "$RC"
check_eq "the summary counts the MISSING server request lines, one per run" \
	"$(grep -c '^MISSING server request roots/list ' "$T/og.out") 2" \
	"$(sed -n 's/.*; \([0-9]*\) server requests missing (the client.s answer not sent)$/\1/p' "$T/og.out") $(grep -c '^MISSING server request roots/list ' "$T/og.out")"
check_eq "the 405 is not worth a NOTE" 0 "$(grep -c '^NOTE' "$T/og.out")"
check_eq "every request passes but the cancelled one" "$(summary "$NO" $((NO - CO)) 0 0 "$CO" 0)" "$(closing "$T/og.out")"
verify hg "$T/h.db" "http://127.0.0.1:$VP_PORT/mcp" --timeout-ms 3000
check_eq "the HTTP recording, which had a GET stream: a NOTE, once" "NOTE the server offers no GET stream (HTTP 405)" "$(grep '^NOTE' "$T/hg.out")"
check "and its roots/list, never sent, is said" grep -q '^MISSING server request roots/list (recorded #[0-9]*): the client.s answer #[0-9]* was not sent$' "$T/hg.out"
_stop_pid "$VP_PID"

# ---- 4. A real change is caught ----
start_vp front --upstream "http://127.0.0.1:$p6" --rewrite '"text":"Echo: ="text":"Echo; '
verify c "$T/h.db" "http://127.0.0.1:$VP_PORT/mcp"
check_eq "verify against a server whose echo answers changed: exit 1" 1 "$RC"
check_eq "exactly one DIFF, the rest as before" "$(summary "$NH" $((NH - CH - 1)) 1 0 "$CH" 0)" "$(closing "$T/c.out")"
check "the DIFF names the echo tool and the path" grep -qx 'DIFF #[0-9]* tools/call echo: result.content\[0\].text' "$T/c.out"
_stop_pid "$VP_PID"

# ---- 5. https ----
# A short recording: http-client.mjs --sessions 1 (initialize, tools/list, echo,
# a progress call, DELETE).
start_tap "$T/q.db" "http://127.0.0.1:$p6"
timeout 100 node "$CLIENT" --transport http --sessions 1 --log "$T/q.jsonl" "$TAP_URL/mcp" > "$T/q.rec" 2>&1
check_eq "recorded a short flow" 0 $?
check "its messages are committed" wait_committed "$T/q.db" 1 "$T/q.jsonl.1"
stop_tap
NQ=$(requests "$T/q.db")
p7=$(free_port)
make_test_ca "$T/ca"
start_tls_front "$p7" "$p6" "$T/ca"
verify t0 "$T/q.db" "https://127.0.0.1:$p7/mcp"
check_eq "https without --cacert: exit 1" 1 "$RC"
check_eq "said once: the certificate, and what to do" 1 \
	"$(grep -c "^GONE the server at https://127.0.0.1:$p7/mcp could not be reached (SSL certificate problem: .*; --cacert FILE trusts its CA, --insecure skips the check) at #[0-9]* initialize (run 1 of 2): $NQ requests left without an answer$" "$T/t0.out")"
check_eq "every request MISSING" "$(summary "$NQ" 0 0 "$NQ" 0 0)" "$(closing "$T/t0.out")"
verify t1 "$T/q.db" "https://127.0.0.1:$p7/mcp" --cacert "$T/ca/ca.pem"
check_eq "https with --cacert: exit 0" 0 "$RC"
check_eq "every request passes" "$(summary "$NQ" "$NQ" 0 0 0 0)" "$(closing "$T/t1.out")"
verify t2 "$T/q.db" "https://localhost:$p7/mcp" --insecure
check_eq "https with --insecure: exit 0" 0 "$RC"
check_eq "every request passes" "$(summary "$NQ" "$NQ" 0 0 0 0)" "$(closing "$T/t2.out")"
check_eq "--insecure says so on stderr" "mcptap: warning: --insecure: the server's certificate and host name are not checked" "$(cat "$T/t2.err")"
stop_tls_front

# ---- 6. --header NAME=env:VAR ----
start_vp front --upstream "http://127.0.0.1:$p6" --log-headers "$T/headers.jsonl"
SECRET=verify-secret-7d3f9a61
cp "$T/q.db" "$T/qh.db"
RUNS_BEFORE=$(sql "$T/qh.db" "select count(*) from replay_run")
VERIFY_TOKEN=$SECRET verify hd "$T/qh.db" "http://127.0.0.1:$VP_PORT/mcp" --header X-Verify-Token=env:VERIFY_TOKEN
check_eq "with --header: exit 0" 0 "$RC"
check "the server got requests" test "$(wc -l < "$T/headers.jsonl")" -gt "$NQ"
check_eq "every request carried the header, with the value from the environment" 0 \
	"$(node -e 'const fs = require("fs");
		const lines = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
		console.log(lines.filter((l) => { const h = l.headers; for (let i = 0; i < h.length; i += 2)
			if (h[i].toLowerCase() === "x-verify-token" && h[i + 1] === process.argv[2]) return false; return true; }).length);' \
		"$T/headers.jsonl" "$SECRET")"
check "the GET stream and the DELETE too" sh -c 'grep -q "\"method\":\"GET\"" "$1" && grep -q "\"method\":\"DELETE\"" "$1"' sh "$T/headers.jsonl"
check_eq "the value is nowhere in the capture file" 0 "$(cat "$T"/qh.db* | grep -c "$SECRET")"
check_eq "but the run is stored in it" $((RUNS_BEFORE + 1)) "$(sql "$T/qh.db" "select count(*) from replay_run")"
VERIFY_TOKEN=$SECRET "$MCPTAP" replay -r "$T/qh.db" --as client --url "http://127.0.0.1:$VP_PORT/mcp" --header "X-Verify-Token=$SECRET" > /dev/null 2> "$T/hbad.err"
check_eq "a value on the command line: a usage error" 2 $?
check "that says NAME=env:VAR" grep -q "bad --header 'X-Verify-Token=verify-secret-7d3f9a61' (NAME=env:VAR" "$T/hbad.err"
"$MCPTAP" replay -r "$T/qh.db" --as client --url "http://127.0.0.1:$VP_PORT/mcp" --header X-Verify-Token=env:MCPTAP_NO_SUCH_VAR > /dev/null 2> "$T/hbad2.err"
check_eq "an unset variable: a usage error" 2 $?
check "that names it" grep -q 'MCPTAP_NO_SUCH_VAR is not set' "$T/hbad2.err"
"$MCPTAP" replay -r "$T/qh.db" --as client --header X-Verify-Token=env:VERIFY_TOKEN -- true > /dev/null 2> "$T/hbad3.err"
check_eq "--header without --url: a usage error" 2 $?
NL_TOKEN="a
b" "$MCPTAP" replay -r "$T/qh.db" --as client --url "http://127.0.0.1:$VP_PORT/mcp" --header X-Verify-Token=env:NL_TOKEN > /dev/null 2> "$T/hbad4.err"
check_eq "a value with a line break: a usage error" 2 $?
check "that says so" grep -q 'NL_TOKEN holds a line break' "$T/hbad4.err"
# record's --upstream-header goes through the same parser.
NL_TOKEN="a
b" "$MCPTAP" record -w "$T/rh.db" --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$VP_PORT" --upstream-header X-Verify-Token=env:NL_TOKEN > /dev/null 2> "$T/rhbad.err"
check_eq "record: a value with a line break: a usage error" "2 mcptap: --upstream-header X-Verify-Token: \$NL_TOKEN holds a line break" "$? $(head -1 "$T/rhbad.err")"
VERIFY_TOKEN=x "$MCPTAP" record -w "$T/rh.db" --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$VP_PORT" --upstream-header "X-Bad:Name=env:VERIFY_TOKEN" > /dev/null 2> "$T/rhbad2.err"
check_eq "record: a header name with a colon: a usage error" 2 $?
check "that says NAME=env:VAR" grep -q "bad --upstream-header 'X-Bad:Name=env:VERIFY_TOKEN'" "$T/rhbad2.err"
_stop_pid "$VP_PID"

# ---- 7. A server that dies in the middle of a run ----
# The front dies when the sampling call reaches it; the requests before it pass.
DIE_SEQ=$(sql "$T/h.db" "select min(seq) from message where dir = 'c2s' and kind = 'request' and cast(raw as text) like '%trigger-sampling-request%'")
BEFORE=$(sql "$T/h.db" "select count(*) from message where dir = 'c2s' and kind = 'request' and seq < $DIE_SEQ")
CAFTER=$(sql "$T/h.db" "select count(*) from message c join message q on q.seq = c.request_seq where c.dir = 'c2s' and c.method = 'notifications/cancelled' and q.seq > $DIE_SEQ")
start_vp front --upstream "http://127.0.0.1:$p6" --die-on trigger-sampling-request
verify d1 "$T/h.db" "http://127.0.0.1:$VP_PORT/mcp" --runs 1 --timeout-ms 60000
check_eq "a server that dies: exit 1" 1 "$RC"
check_eq "the requests before pass, the rest are MISSING" "$(summary "$NH" "$BEFORE" 0 $((NH - BEFORE - CAFTER)) "$CAFTER" 0)" "$(closing "$T/d1.out")"
check_eq "GONE once, after the request it died on" 1 \
	"$(grep -c "^GONE the server at http://127.0.0.1:$VP_PORT/mcp went away (.*) after #$DIE_SEQ tools/call trigger-sampling-request (run 1 of 1): $((NH - BEFORE - CAFTER)) requests left without an answer$" "$T/d1.out")"
check_eq "the request it died on: not answered, without a timeout" 1 "$(grep -c "^MISSING #$DIE_SEQ tools/call trigger-sampling-request: not answered, the server had gone$" "$T/d1.out")"
check_eq "the others: not sent" $((NH - BEFORE - CAFTER - 1)) "$(grep -c '^MISSING #[0-9]* .*: not sent, the server had gone$' "$T/d1.out")"
check_eq "no timeout waited for" 0 "$(grep -c 'no answer within' "$T/d1.out")"
# The default two runs: the second cannot reach it; still one GONE line.
verify d2 "$T/h.db" "http://127.0.0.1:$VP_PORT/mcp" --timeout-ms 60000
check_eq "the same with two runs: exit 1" 1 "$RC"
check_eq "GONE said once" 1 "$(grep -c '^GONE' "$T/d2.out")"
check_eq "no timeout waited for" 0 "$(grep -c 'no answer within' "$T/d2.out")"
verify d3 "$T/q.db" "http://127.0.0.1:$(free_port)/mcp" --timeout-ms 60000
check_eq "a server that cannot be reached: exit 1" 1 "$RC"
check_eq "said once" 1 "$(grep -c "^GONE the server at http://127.0.0.1:[0-9]*/mcp could not be reached (.*) at #[0-9]* initialize (run 1 of 2): $NQ requests left without an answer$" "$T/d3.out")"
check_eq "every request MISSING" "$(summary "$NQ" 0 0 "$NQ" 0 0)" "$(closing "$T/d3.out")"
stop_everything

# ---- 8. Bad answers from a scripted server ----
CALLS=echo,roots,status500,notjson,html,cut,garbage,resume,reset,fine,expire,late
FAULTS="--fault status500=status500 --fault notjson=notjson --fault html=html --fault cut=cut --fault garbage=garbage --fault resume=resume --fault reset=reset --fault expire=expire"
# shellcheck disable=SC2086
start_vp server $(echo "$FAULTS" | sed 's/=[a-z0-9]*\( \|$\)/=none\1/g') --fault late=none
start_tap "$T/b.db" "http://127.0.0.1:$VP_PORT"
timeout 100 node "$VP" client --url "$TAP_URL/mcp" --calls "$CALLS" --log "$T/b.jsonl" > "$T/b.rec" 2>&1
check_eq "recorded the scripted server (no faults)" 0 $?
check "its messages are committed" wait_committed "$T/b.db" 1 "$T/b.jsonl"
stop_tap
_stop_pid "$VP_PID"
# shellcheck disable=SC2086
start_vp server $FAULTS --fault late=none --get-dies
verify b "$T/b.db" "http://127.0.0.1:$VP_PORT/mcp" --timeout-ms 30000
check_eq "bad answers: exit 1" 1 "$RC"
seq_of() { sql "$T/b.db" "select seq from message where dir = 'c2s' and kind = 'request' and cast(raw as text) like '%\"name\":\"$1\"%'"; }
line() { grep "^[A-Z]* #$(seq_of "$1") " "$T/b.out"; }
check_eq "the GET stream ended by the server is opened again: the roots/list on it answered" "PASS #$(seq_of roots) tools/call roots" "$(line roots)"
check_eq "an SSE answer after a notification" "PASS #$(seq_of echo) tools/call echo" "$(line echo)"
check_eq "HTTP 500" "DIFF #$(seq_of status500) tools/call status500: HTTP 500 Internal Server Error: {\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"Internal error: the database is down\"}}" "$(line status500)"
check_eq "a body that is not JSON" "DIFF #$(seq_of notjson) tools/call notjson: HTTP 200 with a body that is not JSON-RPC: 'this is not json'" "$(line notjson)"
check_eq "text/html" "DIFF #$(seq_of html) tools/call html: HTTP 200 with Content-Type text/html, not JSON or an SSE stream: '<html><body>Down for maintenance</body></html>'" "$(line html)"
check_eq "an SSE stream that ends before the answer" "MISSING #$(seq_of cut) tools/call cut: not answered: its SSE stream ended before the answer (1 message)" "$(line cut)"
check_eq "an event that is not JSON" "MISSING #$(seq_of garbage) tools/call garbage: not answered: its SSE stream ended before the answer (0 messages; 1 event not JSON-RPC: 'garbage, not JSON')" "$(line garbage)"
check_eq "a stream resumed with Last-Event-ID" "PASS #$(seq_of resume) tools/call resume" "$(line resume)"
check "a stream whose connection breaks (the server lives)" sh -c 'printf "%s\n" "$1" | grep -q "^MISSING #[0-9]* tools/call reset: not answered: the connection broke before the answer (.*)$"' sh "$(line reset)"
check_eq "and the server goes on" "PASS #$(seq_of fine) tools/call fine" "$(line fine)"
check_eq "a 404 for the session: its request" "MISSING #$(seq_of expire) tools/call expire: not answered, the session had ended (HTTP 404)" "$(line expire)"
check_eq "the request after it" "MISSING #$(seq_of late) tools/call late: not sent, the session had ended (HTTP 404)" "$(line late)"
check_eq "the session's end said once" 1 \
	"$(grep -c "^GONE the server at http://127.0.0.1:$VP_PORT/mcp no longer knows the session (HTTP 404 to its Mcp-Session-Id: it expired, or the server forgot it) after #$(seq_of expire) tools/call expire (run 1 of 2): 2 requests left without an answer$" "$T/b.out")"
NB=$(requests "$T/b.db")
check_eq "the counts" "$(summary "$NB" $((NB - 8)) 3 5 0 0)" "$(closing "$T/b.out")"
check_eq "the failures are stored as what came instead of an answer" "diff|3 missing|5 pass|$((NB - 8))" \
	"$(sql "$T/b.db" "select status || '|' || count(*) from replay_result where run = (select max(id) from replay_run) group by status order by status" | tr '\n' ' ' | sed 's/ $//')"
check_eq "the HTTP 500 among them" "HTTP 500 Internal Server Error" \
	"$(sql "$T/b.db" "select substr(cast(live as text), 1, 30) from replay_result where name = 'status500' and run = (select max(id) from replay_run)")"
verify bl "$T/b.db" "http://127.0.0.1:$VP_PORT/sse" --legacy-sse --runs 1
check_eq "--legacy-sse where there is no SSE endpoint: exit 1" 1 "$RC"
check_eq "said once" 1 "$(grep -c "^GONE the server at http://127.0.0.1:$VP_PORT/sse refused the SSE stream: HTTP 404 Not Found at #2 initialize (run 1 of 1): $NB requests left without an answer$" "$T/bl.out")"
_stop_pid "$VP_PID"

finish
