#!/bin/sh
# show and sessions on an HTTP tap's session (schema version 4): the exchanges
# come among the messages at their request's seq, an abnormal end at its
# time; messages tell their SSE id, event and replay. (The rows are written
# with the sqlite3 shell, as the HTTP tap would write them.)
. "$(dirname "$0")/lib.sh"

printf '%s\n' '> {"jsonrpc":"2.0","id":1,"method":"ping"}' '< {"jsonrpc":"2.0","id":1,"result":{}}' > "$T/f.txt"
"$PEERS/fixture-load" "$T/f.txt" "$T/c.db" || die "could not load the fixture"
sqlite3 -batch "$T/c.db" "
INSERT INTO session (id, transport, started_wall, mcptap_version, upstream, client_addr, http_session_id)
 VALUES (2, 'http', 1700000000000000, '0.1.0', 'http://127.0.0.1:8080/mcp', '127.0.0.1:51000', 'sess-1');
INSERT INTO http_exchange (session, seq, conn, method, target, req_headers, status, resp_headers, resp_type,
 t_ns, wall, first_byte_ns, end_ns, outcome) VALUES (2, 1, 1, 'POST', '/mcp',
 '[[\"content-type\",\"application/json\"]]', 200, '[[\"content-type\",\"text/event-stream\"]]', 'sse',
 4000000, 1700000000004000, 5000000, 124000000, 'complete');
INSERT INTO message (session, seq, t_ns, wall, dir, channel, kind, id, idtype, method, size, raw, exchange)
 VALUES (2, 2, 4100000, 1700000000004100, 'c2s', 'body', 'request', 1, 'number', 'tools/call', 72,
 CAST('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}' AS BLOB), 1);
INSERT INTO message (session, seq, t_ns, wall, dir, channel, kind, method, size, raw, exchange, sse_id)
 VALUES (2, 3, 50000000, 1700000000050000, 's2c', 'sse', 'notification', 'notifications/progress', 51,
 CAST('{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}' AS BLOB), 1, 'e1');
INSERT INTO message (session, seq, t_ns, wall, dir, channel, kind, id, idtype, size, raw, exchange, sse_id,
 sse_event, request_seq) VALUES (2, 4, 120000000, 1700000000120000, 's2c', 'sse', 'response', 1, 'number', 36,
 CAST('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}' AS BLOB), 1, 'e2', 'message', 2);
INSERT INTO http_exchange (session, seq, conn, method, target, req_headers, status, resp_type, t_ns, wall,
 first_byte_ns, end_ns, outcome, error, last_event_id) VALUES (2, 5, 2, 'GET', '/mcp', '[]', 200, 'sse',
 130000000, 1700000000130000, 131000000, 300000000, 'upstream-gone', 'connection reset by peer', 'e1');
INSERT INTO message (session, seq, t_ns, wall, dir, channel, kind, id, idtype, size, raw, exchange, sse_id,
 sse_event, replayed) VALUES (2, 6, 140000000, 1700000000140000, 's2c', 'sse', 'response', 1, 'number', 36,
 CAST('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}' AS BLOB), 5, 'e2', 'message', 1);
INSERT INTO http_exchange (session, seq, conn, method, target, req_headers, t_ns, wall)
 VALUES (2, 7, 2, 'DELETE', '/mcp', '[]', 400000000, 1700000000400000);
INSERT INTO http_exchange (session, seq, conn, method, target, req_headers, req_body, status, resp_type,
 resp_body, t_ns, wall, first_byte_ns, end_ns, outcome) VALUES (2, 8, 3, 'POST', '/token', '[]',
 CAST('grant_type=x' AS BLOB), 401, 'other', CAST('denied' AS BLOB), 500000000, 1700000000500000, 501000000,
 502000000, 'complete');
INSERT INTO http_exchange (session, seq, conn, method, target, req_headers, t_ns, wall, end_ns, outcome, error)
 VALUES (2, 9, 4, 'POST', '/mcp', '[]', 600000000, 1700000000600000, 700000000, 'unreachable',
 'connection refused' || char(27) || '[31m');
" || die "could not write the HTTP session"

"$MCPTAP" show -r "$T/c.db" -s 2 --full > "$T/show.txt"
check_eq "show: exit 0" 0 $?
cat > "$T/want.txt" <<'WANT'
     1    0.004000 ⇄ http         #1       POST /mcp                     120.0ms  → 200 sse, 3 messages
     2    0.004100 → request      1        tools/call echo                        {"name":"echo"}
     3    0.050000 ← notification          notifications/progress
     4    0.120000 ← response     1        tools/call echo               115.9ms  {}
     5    0.130000 ⇄ http         #2       GET /mcp                      170.0ms  → 200 sse, 1 message, Last-Event-ID e1
     6    0.140000 ← response     1                                               (replayed) {}
     5    0.300000 ✗ http end     #2       GET /mcp                      170.0ms  upstream-gone: connection reset by peer
     7    0.400000 ⇄ http         #2       DELETE /mcp                            → …, open
     8    0.500000 ⇄ http         #3       POST /token                     2.0ms  → 401 other, request body 12 bytes, response body 6 bytes
     9    0.600000 ⇄ http         #4       POST /mcp                     100.0ms  → no response
     9    0.700000 ✗ http end     #4       POST /mcp                     100.0ms  unreachable: connection refused\x1B[31m
WANT
check "show: the exchanges among the messages, line for line" diff -u "$T/want.txt" "$T/show.txt"
# -v: each SSE event's id and type at its line's end.
"$MCPTAP" show -r "$T/c.db" -s 2 --full -v > "$T/show-v.txt"
check_eq "show -v: SSE ids and types at the lines' end" "     3    0.050000 ← notification          notifications/progress                   [id e1]
     4    0.120000 ← response     1        tools/call echo               115.9ms  {}  [id e2, event message]
     6    0.140000 ← response     1                                               (replayed) {}  [id e2, event message]" \
	"$(grep '\[id ' "$T/show-v.txt")"

"$MCPTAP" show -r "$T/c.db" -s 2 -T json > "$T/show.json"
check_eq "show -T json: exit 0" 0 $?
check_eq "show -T json: one line per exchange and message" 9 "$(wc -l < "$T/show.json")"
check_eq "show -T json: an exchange, its headers as arrays" \
	'{"session":2,"seq":1,"t_ns":4000000,"time":"2023-11-14T22:13:20.004000Z","type":"exchange","kind":"exchange","conn":1,"method":"POST","target":"/mcp","request_headers":[["content-type","application/json"]],"status":200,"response_headers":[["content-type","text/event-stream"]],"response_type":"sse","first_byte_ns":5000000,"end_ns":124000000,"outcome":"complete","messages":3}' \
	"$(sed -n 1p "$T/show.json")"
check_eq "show -T json: a replayed SSE event" \
	'{"session":2,"seq":6,"t_ns":140000000,"time":"2023-11-14T22:13:20.140000Z","dir":"s2c","channel":"sse","kind":"response","id":1,"exchange":5,"sse_id":"e2","sse_event":"message","replayed":true,"size":36,"message":{"jsonrpc":"2.0","id":1,"result":{}}}' \
	"$(sed -n 6p "$T/show.json")"
check_eq "show -T json: bodies no message holds" \
	'"request_body":"grant_type=x","status":401,"response_type":"other","response_body":"denied"' \
	"$(sed -n 8p "$T/show.json" | grep -o '"request_body".*"response_body":"denied"')"

"$MCPTAP" show -r "$T/c.db" -s 1 --full > "$T/stdio.txt"
check_eq "show of a stdio session: no exchange" 0 "$(grep -c 'http' "$T/stdio.txt")"

"$MCPTAP" sessions -r "$T/c.db" > "$T/sessions.txt"
check_eq "sessions: exit 0" 0 $?
# (The session has no end: its last activity is said, its last exchange's end
# at 1700000000.7 s, and how long ago, which changes from run to run.)
check_eq "sessions: the HTTP session's upstream, Mcp-Session-Id, client and last activity" \
	"      http: upstream http://127.0.0.1:8080/mcp, Mcp-Session-Id sess-1, client 127.0.0.1:51000, last activity $(date -d @1700000000 '+%Y-%m-%d %H:%M:%S') (idle" \
	"$(grep '^      http: ' "$T/sessions.txt" | sed 's/ [0-9m.]*s)$//')"
check_eq "sessions: one such line (none for stdio)" 1 "$(grep -c '^      http: ' "$T/sessions.txt")"
check_eq "sessions -T json: transport, upstream, client and Mcp-Session-Id" \
	'"transport":"http" "upstream":"http://127.0.0.1:8080/mcp" "client_addr":"127.0.0.1:51000" "http_session_id":"sess-1"' \
	"$("$MCPTAP" sessions -r "$T/c.db" -T json | tail -1 | grep -o '"\(transport\|upstream\|client_addr\|http_session_id\)":"[^"]*"' | tr '\n' ' ' | sed 's/ $//')"

finish
