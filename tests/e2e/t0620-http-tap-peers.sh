#!/bin/sh
# The HTTP tap between the real peers: the official SDK client's full flow
# (tests/node/http-client.mjs: sampling, elicitation, tasks, progress,
# cancellation, roots, DELETE) against server-everything through the tap, on
# Streamable HTTP, on legacy HTTP+SSE, and to an https upstream (stunnel with a
# test CA: refused without --cacert, passed with it and with --insecure); then
# 50 clients at once through one tap. Every step passes as it does without the
# tap (t0505), and every message each client saw is stored exactly once, in
# its own session (check-store.mjs --http).
# e2e: long
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
CLIENT=$NODEDIR/http-client.mjs

# flow LABEL TRANSPORT URL: the full flow; its log $T/LABEL.jsonl, output $T/LABEL.out.
flow() {
	timeout 100 node "$CLIENT" --transport "$2" --log "$T/$1.jsonl" "$3" > "$T/$1.out" 2> "$T/$1.err"
}

# stored LABEL DB ID: the client's log against the session's messages.
stored() {
	"$MCPTAP" show -r "$2" -s "$3" -T json > "$T/$1.show" &&
		node "$NODEDIR/check-store.mjs" --http "$T/$1.jsonl" "$T/$1.show" > "$T/$1.check" 2>&1
	_rc=$?
	[ $_rc -eq 0 ] || cat "$T/$1.check"
	return $_rc
}

# 1. Streamable HTTP.
p1=$(free_port)
start_everything streamableHttp "$p1"
start_tap "$T/h.db" "http://127.0.0.1:$p1"
flow http http "$TAP_URL/mcp"
check_eq "streamable HTTP through the tap: the client exits 0" 0 $?
grep '^not ok' "$T/http.out"
check_eq "every one of its 18 steps passed" 18 "$(grep -c '^ok - ' "$T/http.out")"
sid=$(sed -n 's/^# session 1 //p' "$T/http.out")
check_eq "one session for its MCP session (the request after its DELETE included), named by its id" \
	"1|http|$sid|2025-11-25|mcptap-http-client|mcp-servers/everything" \
	"$(sql "$T/h.db" "select count(*), transport, http_session_id, protocol_version, client_name, server_name from session")"
check "its messages are committed while the tap runs (within 10 s)" wait_committed "$T/h.db" 1 "$T/http.jsonl"
check "every message the client saw stored once, in that session" stored http "$T/h.db" 1
check_eq "its exchanges: every one complete; the GET stream, the DELETE, the refused id" \
	"GET 200 sse,DELETE 200,POST 400 json" \
	"$(sql "$T/h.db" "select group_concat(x, ',') from (select distinct method || ' ' || status || case when method = 'POST' and status = 400 then ' json' when method = 'GET' then ' sse' else '' end as x from http_exchange where method != 'POST' or status not in (200, 202) order by seq)")"
check_eq "no exchange left open or ended badly" 0 \
	"$(sql "$T/h.db" "select count(*) from http_exchange where outcome is not 'complete'")"
check_eq "POSTs of notifications and responses got 202 with no body" 0 \
	"$(sql "$T/h.db" "select count(*) from http_exchange x join message m on m.exchange = x.seq and m.dir = 'c2s' where m.kind in ('notification', 'response') and not (x.status = 202 and x.resp_type = 'empty')")"

check_eq "readers work while the tap runs: sessions sees it ended (its DELETE)" "ended" \
	"$("$MCPTAP" sessions -r "$T/h.db" -T json | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')"
check_eq "and show prints all its messages (the client's, and the answer refusing its request after the DELETE) and exchanges" \
	"$(($(wc -l < "$T/http.jsonl") + 1)) $(sql "$T/h.db" "select count(*) from http_exchange")" \
	"$("$MCPTAP" show -r "$T/h.db" -s 1 -T json | awk '/"type":"exchange"/ { x++; next } /"dir":"(c2s|s2c)"/ { m++ } END { print m + 0, x + 0 }')"

# 2. 50 clients at once through the same tap.
timeout 120 node "$CLIENT" --transport http --sessions 50 --log "$T/many.jsonl" "$TAP_URL/mcp" > "$T/many.out" 2>&1
check_eq "50 clients at once: the client exits 0" 0 $?
grep '^not ok' "$T/many.out"
stop_tap INT
check_eq "SIGINT: the tap exits 0" 0 "$TAP_STATUS"
check_eq "the tap said nothing but where it listened" 1 "$(wc -l < "$TAP_ERR")"
check_eq "51 sessions, each with its own id" "51|51" "$(sql "$T/h.db" "select count(*), count(distinct http_session_id) from session")"
bad=0
k=1
while [ $k -le 50 ]; do
	id=$(sed -n "s/^# session $k //p" "$T/many.out")
	s=$(sql "$T/h.db" "select id from session where http_session_id = '$id'")
	cp "$T/many.jsonl.$k" "$T/m$k.jsonl"
	stored "m$k" "$T/h.db" "${s:-0}" || bad=$((bad + 1))
	k=$((k + 1))
done
check_eq "each of the 50 clients' messages stored once, in its own session" 0 "$bad"
check_eq "each echo text in one session only (the 50, and the first client's)" 51 \
	"$(sql "$T/h.db" "select count(distinct session) from message where method = 'tools/call' and cast(raw as text) like '%\"echo\"%'")"
stop_everything

# 3. Legacy HTTP+SSE.
p2=$(free_port)
start_everything sse "$p2"
start_tap "$T/s.db" "http://127.0.0.1:$p2"
flow sse sse "$TAP_URL/sse"
check_eq "legacy SSE through the tap: the client exits 0" 0 $?
grep '^not ok' "$T/sse.out"
check_eq "every one of its 16 steps passed" 16 "$(grep -c '^ok - ' "$T/sse.out")"
stop_tap TERM
check_eq "SIGTERM: the tap exits 0" 0 "$TAP_STATUS"
check_eq "one session, sse, keyed by its relative endpoint" "1|sse|/message?sessionId=" \
	"$(sql "$T/s.db" "select count(*), transport, substr(http_session_id, 1, 19) from session")"
check "every message the client saw stored once" stored sse "$T/s.db" 1
check_eq "the server's messages all came on the GET stream, as message events" "GET|message" \
	"$(sql "$T/s.db" "select distinct x.method || '|' || m.sse_event from message m join http_exchange x on x.seq = m.exchange where m.dir = 's2c'")"
check_eq "the GET stream ended when the client closed it" "client-gone" \
	"$(sql "$T/s.db" "select outcome from http_exchange where method = 'GET'")"
stop_everything

# 4. An https upstream: stunnel with a test CA in front of server-everything.
p3=$(free_port)
p4=$(free_port)
make_test_ca "$T/ca"
start_everything streamableHttp "$p3"
start_tls_front "$p4" "$p3" "$T/ca"
start_tap "$T/t0.db" "https://127.0.0.1:$p4"
flow tls0 http "$TAP_URL/mcp"
check "without --cacert, the client fails" test $? -ne 0
stop_tap
check_eq "the tap answered 502 and says why" "502|unreachable|1" \
	"$(sql "$T/t0.db" "select status, outcome, error like '%certificate%' from http_exchange limit 1")"
start_tap "$T/t1.db" "https://127.0.0.1:$p4" --cacert "$T/ca/ca.pem"
flow tls1 http "$TAP_URL/mcp"
check_eq "with --cacert, the full flow passes" 0 $?
check_eq "all 18 steps" 18 "$(grep -c '^ok - ' "$T/tls1.out")"
stop_tap
check "every message stored once" stored tls1 "$T/t1.db" 1
start_tap "$T/t2.db" "https://localhost:$p4" --insecure
check "--insecure says so on stderr" grep -q "^mcptap: warning: --insecure: the upstream's certificate and host name are not checked$" "$TAP_ERR"
flow tls2 http "$TAP_URL/mcp"
check_eq "with --insecure, the full flow passes" 0 $?
stop_tap
stop_tls_front
stop_everything

finish
