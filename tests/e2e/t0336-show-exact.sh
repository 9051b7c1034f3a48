#!/bin/sh
# show prints each message's JSON as it was sent: numbers, string escapes and
# key order unchanged. -T json wraps the stored bytes (line breaks between
# tokens left out, so that a message stays one line); the text view leaves out
# the whitespace between tokens, token by token. Jansson read 0.7 as
# 0.69999999999999996 and dropped what it could not read (an integer over 64
# bits, 1e400); none of it is read now.
#
# 1. A fixture with such numbers, escapes, spaces and a body over two lines.
# 2. The official SDK client over stdio through the tap (tests/node/sdk-trace.mjs
#    traces the lines it wrote and read): show -T json's message bytes are its
#    trace, line for line; the text view shows 0.1 and 0.7 as sent.
. "$(dirname "$0")/lib.sh"

# 1. The fixture.
cat > "$T/f.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc": "2.0", "id": 18446744073709551616, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"b": 0.7, "a": 0.1, "s": "\u00e9\/x\"y"}}}
< {"jsonrpc":"2.0","id":18446744073709551616,"result":{"content":[{"type":"text","text":"0.7999999999999999"}],"v":1e400,"w":-0.0}}
FX
"$PEERS/fixture-load" "$T/f.fx" "$T/f.db"
check_eq "the fixture loads" 0 $?
"$MCPTAP" show -r "$T/f.db" -T json > "$T/f.json"
check_eq "show -T json: exit 0" 0 $?
# The message member is last: its bytes, then the line's closing brace.
sed -n 's/.*,"message":\(.*\)}$/\1/p' "$T/f.json" > "$T/f.got"
sed -n 's/^[<>] //p' "$T/f.fx" > "$T/f.want"
check "show -T json: every message's bytes as stored, in order" cmp "$T/f.want" "$T/f.got"
check_eq "the id of the big integer is its token, not a double" \
	'"id":18446744073709551616,|"id":18446744073709551616,' \
	"$(sed -n 4p "$T/f.json" | grep -o '"id":18446744073709551616,' | head -1)|$(sed -n 5p "$T/f.json" | grep -o '"id":18446744073709551616,' | head -1)"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
for (const l of lines) JSON.parse(l);
console.log(lines.length)' "$T/f.json" > "$T/f.n"
check_eq "each line is JSON" 5 "$(cat "$T/f.n")"
"$MCPTAP" show -r "$T/f.db" --full > "$T/f.txt"
check_eq "the text view: the params' tokens as sent, the spaces between them left out" \
	'{"name":"get-sum","arguments":{"b":0.7,"a":0.1,"s":"\u00e9\/x\"y"}}' \
	"$(sed -n 4p "$T/f.txt" | grep -o '{.*')"
check "the text view: the id column is the token" grep -q '^ *4 .* request  *18446744073709551616 ' "$T/f.txt"
check "the text view: the result's 1e400 and -0.0 as sent" grep -q '"v":1e400,"w":-0.0}$' "$T/f.txt"
# --seq: the whole message, indented, its tokens as sent.
"$MCPTAP" show -r "$T/f.db" --seq 4 > "$T/f.seq"
check_eq "--seq: the line, then the message indented, token by token" "{
  \"jsonrpc\": \"2.0\",
  \"id\": 18446744073709551616,
  \"method\": \"tools/call\",
  \"params\": {
    \"name\": \"get-sum\",
    \"arguments\": {
      \"b\": 0.7,
      \"a\": 0.1,
      \"s\": \"\\u00e9\\/x\\\"y\"
    }
  }
}" "$(sed -n '2,$s/^    //p' "$T/f.seq")"
check "--seq: its line first" grep -q '^ *4 .* request  *18446744073709551616 *tools/call get-sum ' "$T/f.seq"

# An HTTP body over several lines: -T json leaves out its line breaks, not its spaces.
cat > "$T/h.fx" <<'FX'
@transport http
@session-id s-1
@headers [Accept: application/json, text/event-stream]
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
<= 200 json [Mcp-Session-Id: s-1]
< {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1.0"}, "x": 0.1}}
FX
"$PEERS/fixture-load" "$T/h.fx" "$T/h.db"
check_eq "the HTTP fixture loads" 0 $?
check_eq "an HTTP body's spaces kept" \
	'{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1.0"}, "x": 0.1}}' \
	"$("$MCPTAP" show -r "$T/h.db" -T json | sed -n 's/.*"kind":"response".*,"message":\(.*\)}$/\1/p')"

# 2. The SDK client's own trace.
need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
node "$NODEDIR/sdk-trace.mjs" "$T/trace" -- "$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio 2> "$T/sdk.err"
check_eq "the SDK client ran through the tap" 0 $?
"$MCPTAP" show -r "$T/s.db" -T json > "$T/s.json"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
for (const l of lines) {
	const o = JSON.parse(l);
	if (!("message" in o)) continue;
	const m = /,"message":(.*)\}$/.exec(l);
	console.log(o.dir + " " + m[1]);
}' "$T/s.json" > "$T/s.got"
# Each direction in its order. Across directions the order is the tap's: the
# server sends notifications/tools/list_changed on its own, and it may pass the
# client's tools/call in the pipe (what the client logged first, the tap may
# have read second).
for d in c2s s2c; do
	grep "^$d " "$T/trace" > "$T/trace.$d"
	grep "^$d " "$T/s.got" > "$T/s.got.$d"
	check "show -T json's $d message bytes are the SDK client's trace, line for line" cmp "$T/trace.$d" "$T/s.got.$d"
done
check_eq "as many lines as the trace" "$(wc -l < "$T/trace")" "$(wc -l < "$T/s.got")"
check_eq "the trace holds the three requests and the notification, and the three answers" "4 3" \
	"$(grep -c '^c2s ' "$T/trace") $(grep -c '^s2c {"result"\|^s2c .*"result":' "$T/trace")"
check "0.1 and 0.7 as the SDK wrote them" grep -q '"arguments":{"a":0.1,"b":0.7}' "$T/trace"
"$MCPTAP" show -r "$T/s.db" --full > "$T/s.txt"
check "the text view shows them so" grep -q '"arguments":{"a":0.1,"b":0.7}' "$T/s.txt"
check "and the sum as the server wrote it" grep -q '0.7999999999999999' "$T/s.txt"
finish
