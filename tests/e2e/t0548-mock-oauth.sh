#!/bin/sh
# What an OAuth-protected server answered, the HTTP mock answers again: the
# scripted upstream of tests/node/http-faults.mjs ("oauth": an initialize
# refused with 401 and a WWW-Authenticate naming the protected-resource
# metadata, that metadata under /.well-known, a ping elsewhere), recorded
# through the HTTP tap, then `replay --as server --listen -s all`: the
# initialize gets the 401 with the recorded WWW-Authenticate (kept whole by
# the tap's redaction: a challenge is not a credential) and body, and no
# session id; the metadata path gets the recorded 200 and body; a path never
# recorded gets 404; the refused session ends, answered as recorded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
start_tap "$T/o.db" "http://127.0.0.1:$port"
timeout 60 node "$NODEDIR/http-faults.mjs" --upstream-port "$port" --tap "$TAP_URL" oauth > "$T/rec.out" 2>&1
check_eq "recorded the OAuth flow through the tap" 0 $?
stop_tap INT
challenge="Bearer resource_metadata=\"http://127.0.0.1:$port/.well-known/oauth-protected-resource/mcp-auth\""
check_eq "the tap stored the WWW-Authenticate whole" "$challenge" \
	"$(sql "$T/o.db" "select json_extract(h.value, '\$[1]') from http_exchange, json_each(resp_headers) h where status = 401 and json_extract(h.value, '\$[0]') = 'WWW-Authenticate'")"

start_mock "$T/o.db" -s all --report "$T/mock.report"
check_eq "the mock serves the refused initialize's endpoint" "/mcp-auth" "/${MOCK_URL#http://*/}"
base=${MOCK_URL%/mcp-auth}

curl -s -D "$T/h1" -o "$T/b1" -H 'Accept: application/json, text/event-stream' \
	-H 'Content-Type: application/json' --data '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}' "$MOCK_URL"
check_eq "the initialize: 401" "HTTP/1.1 401 Unauthorized" "$(head -1 "$T/h1" | tr -d '\r')"
check_eq "with the recorded WWW-Authenticate" "WWW-Authenticate: $challenge" \
	"$(grep -i '^WWW-Authenticate:' "$T/h1" | tr -d '\r')"
check_eq "and no session id" "" "$(grep -i '^Mcp-Session-Id:' "$T/h1")"
check_eq "and the recorded body" '{"error":"invalid_token"}' "$(cat "$T/b1")"
curl -s -D "$T/h2" -o "$T/b2" "$base/.well-known/oauth-protected-resource/mcp-auth"
check_eq "the metadata: 200" "HTTP/1.1 200 OK" "$(head -1 "$T/h2" | tr -d '\r')"
check_eq "the recorded metadata" "$(sql "$T/o.db" "select cast(resp_body as text) from http_exchange where target like '/.well-known/%'")" "$(cat "$T/b2")"
check_eq "its content type" "Content-Type: application/json" "$(grep -i '^Content-Type:' "$T/h2" | tr -d '\r')"
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/.well-known/oauth-authorization-server")
check_eq "a path never recorded: 404" 404 "$code"
stop_mock
check_eq "SIGINT: the mock exits 0" 0 "$MOCK_STATUS"
check_eq "one run: the refused initialize answered as recorded (no miss), and it ended there" \
	"1 1 0 its initialize was refused, as recorded" \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); const s = r.sessions[0];
console.log(r.runs, s.answered, s.missed, s.ended)' "$T/mock.report")"

finish
