#!/bin/sh
# Bad input never crashes the analyzer; it becomes findings. Non-JSON lines, a
# session cut off mid-way, thousands of messages with no initialize, a 100 MB
# message, JSON nested 10,000 deep, duplicated ids.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load

init='> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}'

analyze() { # analyze NAME: load $T/NAME.fx, analyze as JSON into $T/NAME.json; prints the exit status
	"$LOAD" "$T/$1.fx" "$T/$1.db" || return 99
	"$MCPTAP" analyze -r "$T/$1.db" -T json > "$T/$1.json" 2> "$T/$1.err"
	echo $?
}
has() { grep -q "\"rule\": \"$2\"" "$T/$1.json"; }

# Non-JSON lines on the server's stdout around the handshake.
{ echo "< Server starting on stdio..."; echo "$init"; echo "< {broken json"; } > "$T/nonjson.fx"
check_eq "non-JSON: findings, exit 1" 1 "$(analyze nonjson)"
check "non-JSON: nothing on stderr" test ! -s "$T/nonjson.err"

# A session cut off mid-way: a request never answered, a last line without its end.
{ echo "$init"; echo '> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}'; echo '< {"jsonrpc":"2.0","id":2,"res'; } > "$T/cut.fx"
rc=$(analyze cut)
check "cut off: analyzed (exit $rc)" test "$rc" -le 1
check "cut off: the JSON report parses" node -e 'JSON.parse(require("fs").readFileSync(process.argv[1]))' "$T/cut.json"

# Thousands of messages with no initialize.
awk 'BEGIN { for (i = 1; i <= 5000; i++) printf "> {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\"}\n< {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"tools\":[]}}\n", i, i }' > "$T/noinit.fx"
check_eq "no initialize: findings, exit 1" 1 "$(analyze noinit)"
check "no initialize: LIFE-001 once" test "$(grep -c '"rule": "LIFE-001", "severity"' "$T/noinit.json")" -eq 1
check "no initialize: SPEC-001 says which revision" has noinit SPEC-001

# Duplicated ids.
{ echo "$init"; for i in 1 2 3; do echo '> {"jsonrpc":"2.0","id":7,"method":"tools/list"}'; echo '< {"jsonrpc":"2.0","id":7,"result":{"tools":[]}}'; done; } > "$T/dup.fx"
check_eq "duplicated ids: exit 1" 1 "$(analyze dup)"
check "duplicated ids: RPC-003" has dup RPC-003

# JSON nested 10,000 deep, as a request's params and as a whole line.
deep=$(awk 'BEGIN { for (i = 0; i < 10000; i++) printf "["; for (i = 0; i < 10000; i++) printf "]" }')
{ echo "$init"; echo "> {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"a\":$deep}}}"; echo "< $deep"; } > "$T/deep.fx"
rc=$(analyze deep)
check "10,000 deep: analyzed (exit $rc)" test "$rc" -le 1

# A 100 MB message (a tools/call result), through record so that it is real.
head -c 100000000 /dev/zero | tr '\0' x > "$T/big.txt"
cat > "$T/big-server.sh" <<SH
#!/bin/sh
read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'
read -r line
read -r line
printf '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"'
cat "$T/big.txt"
printf '"}]}}\n'
SH
chmod +x "$T/big-server.sh"
# (The client waits for the initialize result before it goes on, as a client must.)
{ echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
  sleep 0.5
  echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}'; } |
	"$MCPTAP" record -w "$T/big.db" -- "$T/big-server.sh" > /dev/null
check_eq "100 MB: stored" 1 "$(sql "$T/big.db" "select count(*) from message where size > 100000000")"
"$MCPTAP" analyze -r "$T/big.db" -T text > "$T/big.out" 2> "$T/big.err"
check_eq "100 MB: analyzed clean" 0 $?
check "100 MB: the summary line" grep -q "^session 1: 0 errors" "$T/big.out"
rm -f "$T/big.txt"

finish
