#!/bin/sh
# Replaying a recording whose client sent credentials, which the tap stored as
# markers: the mock takes a redacted value for a wildcard (any live value at
# that place matches, only there); the recorded client does not send a request
# that carries one and says so (REDACTED), and sends initialize anyway (NOTE).
. "$(dirname "$0")/lib.sh"
export MCPTAP_REDACT_KEY_FILE="$T/key"

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello","apiKey":"SECRET-one-123"}}}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"plain"}}}' |
	"$MCPTAP" record -w "$T/r.db" -- "$PEERS/mcp-server" > "$T/rec.out" 2> /dev/null
check_eq "recorded: the server answered all three" 3 "$(grep -c '"result"' "$T/rec.out")"
check_eq "the stored request holds a marker, not the key" 1 \
	"$(sql "$T/r.db" "select count(*) from message where dir = 'c2s' and instr(raw, '\"apiKey\":\"[redacted:') > 0 and instr(raw, 'SECRET') = 0")"

# The mock: another key at that place matches; a different text does not.
printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello","apiKey":"another-key"}}}' \
	'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"text":"HELLO","apiKey":"another-key"}}}' \
	'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"plain"}}}' |
	"$MCPTAP" replay -r "$T/r.db" --as server > "$T/m.out" 2> "$T/m.err"
check_eq "the mock exits 0" 0 $?
check "a live key where the recording has a marker: the recorded answer" \
	grep -q '^{"jsonrpc":"2.0","id":10,"result":{"content":\[{"type":"text","text":"hello"}\]' "$T/m.out"
check "the wildcard is that place only: another text misses (-30900)" \
	grep -q '^{"jsonrpc":"2.0","id":11,"error":{"code":-30900' "$T/m.out"
check "a request without a marker matches as ever" \
	grep -q '^{"jsonrpc":"2.0","id":12,"result":{"content":\[{"type":"text","text":"plain"}\]' "$T/m.out"

# A marker inside a longer string stands for the secret only: the rest of the
# string must match as recorded (one recorded call with a key in its text
# made every echo call match before).
printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"use sk-proj-abcdefghijklmnopqrstuvwx0123 please"}}}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"pin","pin":1234}}}' |
	"$MCPTAP" record -w "$T/p.db" --redact-key pin -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "stored: the key inside the text and the number under pin are markers" 2 \
	"$(sql "$T/p.db" "select count(*) from message where dir = 'c2s' and (json_extract(raw, '\$.params.arguments.text') glob 'use [[]redacted:????????] please' or json_extract(raw, '\$.params.arguments.pin') glob '[[]redacted:????????]')")"
printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo","arguments":{"text":"something never recorded"}}}' \
	'{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","arguments":{"text":"use another-key-42 please"}}}' \
	'{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"echo","arguments":{"text":"use  please"}}}' \
	'{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"echo","arguments":{"text":"pin","pin":99}}}' \
	'{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"echo","arguments":{"text":"pin","pin":99,"more":1}}}' |
	"$MCPTAP" replay -r "$T/p.db" --as server > "$T/p.out" 2> /dev/null
check "another text is a miss, not the recorded answer" grep -q '^{"jsonrpc":"2.0","id":20,"error":{"code":-30900' "$T/p.out"
check "the same text around another key matches" grep -q '^{"jsonrpc":"2.0","id":21,"result":' "$T/p.out"
check "a marker stands for one byte or more: an empty key is a miss" grep -q '^{"jsonrpc":"2.0","id":22,"error":{"code":-30900' "$T/p.out"
check "another number where the recording has a redacted one matches" grep -q '^{"jsonrpc":"2.0","id":23,"result":' "$T/p.out"
check "but not with a member more" grep -q '^{"jsonrpc":"2.0","id":24,"error":{"code":-30900' "$T/p.out"

# The recorded client against the real server: the request with the marker is not sent.
"$MCPTAP" replay -r "$T/r.db" --as client -- "$PEERS/mcp-server" > "$T/v.out" 2> "$T/v.err"
check_eq "verify exits 0 (a redacted request is not a failure)" 0 $?
check "REDACTED names the request and the path" \
	grep -q '^REDACTED #[0-9]* tools/call echo: not sent: the tap stored params.arguments.apiKey redacted, so the value is not known$' "$T/v.out"
check "the others pass" grep -q '^PASS #[0-9]* tools/call echo$' "$T/v.out"
check "the summary counts it" grep -q '^replay: 3 requests: 2 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; .*; 1 not sent: it carries values the tap redacted$' "$T/v.out"
check_eq "stored as redacted, with its path" 'redacted|["params.arguments.apiKey"]' \
	"$(sql "$T/r.db" "select status, diff from replay_result where status = 'redacted'")"

# A credential in initialize: sent with the marker, and a NOTE says so.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"},"token":"tok-secret-9"}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' |
	"$MCPTAP" record -w "$T/i.db" -- "$PEERS/mcp-server" > /dev/null 2>&1
"$MCPTAP" replay -r "$T/i.db" --as client -- "$PEERS/mcp-server" > "$T/i.out" 2>&1
check_eq "initialize with a marker: verify exits 0" 0 $?
check "a NOTE says it was sent with the marker" \
	grep -q '^NOTE #1 initialize carries values the tap redacted (params.token): sent with the markers in their place' "$T/i.out"
check "and it passes" grep -q '^PASS #1 initialize' "$T/i.out"

finish
