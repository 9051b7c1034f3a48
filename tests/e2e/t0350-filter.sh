#!/bin/sh
# The display filter (-Y) on every reader: show, stats, sessions, analyze and
# replay, on a recorded stdio session whose tool calls end every way
# (tests/peers/tools-*.pl, the seqs of t0330) and on an HTTP session; and
# the errors a bad expression gets, with the column they point at.
. "$(dirname "$0")/lib.sh"

perl "$PEERS/tools-client.pl" "$MCPTAP" "$T/t.db" "$PEERS/tools-server.pl"
check_eq "the client's session ran" 0 $?
DB=$T/t.db

# seqs EXPR [ARGS...]: the seqs show prints for -Y EXPR, on one line
seqs() {
	_e=$1
	shift
	"$MCPTAP" show -r "$DB" -Y "$_e" "$@" | awk '$1 ~ /^[0-9]+$/ {printf "%s%s", s, $1; s=" "} END {print ""}'
}

# Fields, each alone and against its values, as the session's seqs:
#  1/2 initialize, 3 initialized, 4/5 echo, 6/7 fail (isError), 8/9 boom (-32602),
#  10 slow, 11 its cancel, 12 its late answer, 13 hang, 14/15 prompts/get greet,
#  16/17 resources/read file:///a (-32002), 18/19 echo, 20/21 ping, 22 slow, 23 its cancel
check_eq "method: requests and their answers" "4 5 6 7 8 9 10 12 13 18 19 22" "$(seqs 'method == tools/call')"
check_eq "method of a notification" "11 23" "$(seqs 'method == "notifications/cancelled"')"
check_eq "tool, on the request and its answer" "4 5 18 19" "$(seqs 'tool == echo')"
check_eq "tool matches a regular expression" "4 5 6 7 18 19" "$(seqs 'tool matches "^(ec|fa)"')"
check_eq "tool ~ is matches" "4 5 6 7 18 19" "$(seqs 'tool ~ "^(ec|fa)"')"
check_eq "prompt, uri contains" "14 15 16 17" "$(seqs 'prompt == greet or uri contains "file:"')"
check_eq "error: JSON-RPC errors and isError results" "7 9 17" "$(seqs 'error')"
check_eq "error's text" "7" "$(seqs 'error contains "it failed"')"
check_eq "error's message" "9" "$(seqs 'error == "unknown tool"')"
check_eq "code" "9" "$(seqs 'code == -32602')"
check_eq "code, compared" "9 17" "$(seqs 'code < -32000')"
check_eq "not, and, dir, kind" "2 5 7 12 15 19 21" "$(seqs 'not dir == c2s and kind == response')"
check_eq "kind notification" "3 11 23" "$(seqs 'kind == notification')"
check_eq "a numeric id is not a string id" "10 12" "$(seqs 'id == 5')"
check_eq "a string id matches none" "" "$(seqs 'id == "5"')"
check_eq "!= is true where the value is missing" "3 11 23" "$(seqs 'id != 5 and not id')"
check_eq "text contains" "10 11 22" "$(seqs 'text contains "slow"')"
check_eq "seq ranges, || and &&" "1 2 22 23" "$(seqs 'seq <= 2 || seq >= 22 && seq le 23')"
check_eq "duration: answered requests and their answers" "1 2 4 5 6 7 8 9 10 12 14 15 16 17 18 19 20 21" \
	"$(seqs 'duration >= 0ns')"
check_eq "duration never above an hour here" "" "$(seqs 'duration > 1h')"
check_eq "size, with a unit" "1 2" "$(seqs 'size > 100')"
check_eq "size 1k is 1024 bytes" "" "$(seqs 'size >= 1k')"
check_eq "time since the start" "" "$(seqs 'time > 1h')"
check_eq "time: a date long past" "23" "$(seqs 'time > "2020-01-01 00:00" and seq == 23')"
check_eq "time: a date to come" "" "$(seqs 'time > "2099-01-01T00:00:00Z"')"
check_eq "status and path: NULL on stdio" "" "$(seqs 'status == 200 or path == /mcp')"
check_eq "channel" "23" "$(seqs 'channel == stdio and seq == 23')"
check_eq "session" "1" "$(seqs 'session == 1 and seq == 1')"
check_eq "replayed: false on stdio" "1" "$(seqs 'replayed == false and seq == 1')"
check_eq "parentheses" "4 5 8 9 18 19" "$(seqs '(tool == echo or tool == boom) and (kind == request or kind == response or kind == error)')"

# An answer shown without its request still names what the request named.
check_eq "answers alone: their requests' tool, prompt or uri" "7 tools/call fail
9 tools/call boom
17 resources/read file:///a" \
	"$("$MCPTAP" show -r "$DB" -Y error | awk '{print $1, $6, $7}')"

# -T json: the same messages, the bytes as stored.
check_eq "show -T json -Y: the objects of the messages passed" "4 5 18 19" \
	"$("$MCPTAP" show -r "$DB" -T json -Y 'tool == echo' | sed 's/.*"seq":\([0-9]*\),.*/\1/' | tr '\n' ' ' | sed 's/ $//')"
check_eq "show -T json -Y: the message as sent" '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}' \
	"$("$MCPTAP" show -r "$DB" -T json -Y 'tool == echo and kind == response and id == 2' | sed 's/.*"message"://; s/}$//')"

# stats: whole exchanges (a cancel with its request), and its figures.
out=$("$MCPTAP" stats -r "$DB" -T json -Y 'tool == slow or code == -32002')
check_eq "stats -Y: requests of the exchanges passed, cancels kept" \
	'"methods":[{"dir":"c2s","method":"resources/read","requests":1,"errors":1,' \
	"$(echo "$out" | grep -o '"methods":\[{"dir":"c2s","method":"resources/read","requests":1,"errors":1,')"
check_eq "stats -Y: the slow calls are cancelled, not answered" \
	'{"name":"slow","requests":2,"errors":0,"is_error":0,"answered":0,"unanswered":0,"cancelled":2}' \
	"$(echo "$out" | grep -o '{"name":"slow"[^}]*}')"
check_eq "stats -Y: messages counted are those passed" '"messages":{"c2s":5,"s2c":2}' \
	"$(echo "$out" | grep -o '"messages":{[^}]*}')"
check_eq "stats -Y text: one method, one tool" "c→s  tools/call 7
c→s    echo 2" "$("$MCPTAP" stats -r "$DB" -Y 'tool == echo or tool == fail or tool == boom or tool == slow or tool == hang' | awk '$2 == "tools/call" || $2 == "echo" {print $1, ($2 == "echo" ? "   echo" : " tools/call"), $3}' | sed 's/ \{1,\}tools/  tools/; s/    echo/    echo/')"

# A second session (initialize and a ping): sessions and show over both.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"two","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"ping"}' |
	"$MCPTAP" record -w "$DB" -- perl "$PEERS/tools-server.pl" > /dev/null
check_eq "sessions -Y: those with a message passed" "1" \
	"$("$MCPTAP" sessions -r "$DB" -T json -Y 'tool == echo' | sed 's/^{"id":\([0-9]*\),.*/\1/')"
check_eq "sessions -Y: both have a ping" "1 2" \
	"$("$MCPTAP" sessions -r "$DB" -T json -Y 'method == ping' | sed 's/^{"id":\([0-9]*\),.*/\1/' | tr '\n' ' ' | sed 's/ $//')"
check_eq "sessions -Y: none" "" "$("$MCPTAP" sessions -r "$DB" -T json -Y 'tool == nothing')"
check_eq "show -s all -Y: a session with nothing passed is left out" "1 4
1 5
1 18
1 19" "$("$MCPTAP" show -r "$DB" -s all -T json -Y 'tool == echo' | sed 's/^{"session":\([0-9]*\),"seq":\([0-9]*\),.*/\1 \2/')"
check_eq "show -s all -Y: the heading of each session shown" "session 1
session 2" "$("$MCPTAP" show -r "$DB" -s all -Y 'method == ping' | grep '^session')"

# analyze: every rule sees every message; only the findings on what passes
# are reported and fail the run. LIFE-015 (warning) is on #13 (hang).
"$MCPTAP" analyze -r "$DB" -s 1 --no-store --fail-on warning -Y 'tool == hang' > "$T/a1.out"
check_eq "analyze -Y: a finding on a message passed fails the run" 1 $?
check_eq "analyze -Y: the finding" "session 1 #13 c→s tools/call: LIFE-015" "$(grep -o '^session 1 #13 c→s tools/call: LIFE-015' "$T/a1.out")"
"$MCPTAP" analyze -r "$DB" -s 1 --no-store --fail-on warning -Y 'tool == echo' > "$T/a2.out"
check_eq "analyze -Y: no finding on what passes, exit 0" 0 $?
check_eq "analyze -Y: the summary counts what is reported" "session 1: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)" "$(cat "$T/a2.out")"
"$MCPTAP" analyze -r "$DB" -s 1 -Y 'tool == echo' --fail-on warning > /dev/null
check_eq "analyze -Y: stores every finding all the same" "LIFE-015|13" \
	"$(sql "$DB" "select rule, seq from finding where session = 1 order by seq")"

# replay: only the exchanges passed, and the lifecycle.
"$MCPTAP" replay -r "$DB" -s 1 --as client -Y 'tool == echo' -v --no-store -- perl "$PEERS/tools-server.pl" > "$T/v.out" 2>&1
check_eq "verify -Y: passes" 0 $?
check_eq "verify -Y: initialize and the echo calls, nothing else" "PASS #1 initialize
PASS #4 tools/call echo
PASS #18 tools/call echo" "$(grep -v '^replay:' "$T/v.out")"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{}}}' |
	"$MCPTAP" replay -r "$DB" -s 1 -Y 'tool == echo' --as server --no-store > "$T/m.out" 2> /dev/null
check_eq "mock -Y: the echo call answered as recorded" '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}' "$(sed -n 2p "$T/m.out")"
check_eq "mock -Y: a call left out has no recorded answer" '"code":-30900' "$(sed -n 3p "$T/m.out" | grep -o '"code":-30900')"

# An HTTP session: status and path. (Its exchanges take seqs 1, 4 and 6.)
cat > "$T/http.fx" <<'EOF'
@transport http
@session-id s-1
@headers [Accept: application/json, text/event-stream]
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
<= 200 json [Mcp-Session-Id: s-1]
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
@headers+ [Mcp-Session-Id: s-1] [MCP-Protocol-Version: 2025-11-25]
=> POST /mcp?x=1
> {"jsonrpc":"2.0","method":"notifications/initialized"}
<= 202 empty
=> POST /other
> {"jsonrpc":"2.0","id":2,"method":"tools/list"}
<= 404 json
< {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}
EOF
"$PEERS/fixture-load" "$T/http.fx" "$T/h.db"
DB=$T/h.db
check_eq "status" "7 8" "$(seqs 'status == 404')"
check_eq "status compared" "2 3 5" "$(seqs 'status < 300')"
check_eq "path, without the query" "2 3 5" "$(seqs 'path == /mcp')"
check_eq "channel body" "2 3 5 7 8" "$(seqs 'channel == body')"
check_eq "show -Y: no exchange line among the messages" "" "$("$MCPTAP" show -r "$DB" -Y 'seq > 0' | grep http)"

# Values written with escapes: the bytes do not hold them as written, and
# the filter reads them all the same.
cat > "$T/esc.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0065cho"}}
< {"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"caf\u00e9 closed"}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo2"}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"no \"quote\""}],"isError":true}}
FX
"$PEERS/fixture-load" "$T/esc.fx" "$T/esc.db"
DB=$T/esc.db
check_eq "an escaped tool name: its call and answer" "1 2" "$(seqs 'tool == echo')"
check_eq "contains, on an escaped name" "1 2 3 4" "$(seqs 'tool contains ech')"
check_eq "an escaped error message" "2" "$(seqs 'error contains "café"')"
check_eq "an isError text with escaped quotes" "4" "$(seqs 'error == "no \"quote\""')"
check_eq "text is the bytes as written" "" "$(seqs 'text contains "café"')"
DB=$T/h.db

# Bad expressions: the message, the expression, a caret under the column, a
# pointer to the help; exit 2, nothing on stdout.
bad() { # bad EXPR EXPECTED-STDERR
	"$MCPTAP" show -r "$DB" -Y "$1" > "$T/bad.out" 2> "$T/bad.err"
	check_eq "bad filter '$1': exit 2" 2 $?
	check_eq "bad filter '$1': nothing printed" "" "$(cat "$T/bad.out")"
	check_eq "bad filter '$1': the error" "$2
mcptap: see FILTERS in man mcptap, or 'mcptap show --help'" "$(cat "$T/bad.err")"
}
bad 'metod == x' "mcptap: bad filter (-Y), at column 1: unknown field 'metod' (fields: session, seq, dir, kind, channel, method, tool, prompt, uri, id, error, code, duration, size, status, path, time, text, replayed)
  metod == x
  ^"
bad 'duration > 100' "mcptap: bad filter (-Y), at column 12: duration is a duration: '100' needs a unit (250us, 100ms, 2s, 1m)
  duration > 100
             ^"
bad 'kind == requests' "mcptap: bad filter (-Y), at column 9: kind is one of request notification response error batch invalid notjsonrpc, not 'requests'
  kind == requests
          ^"
bad '(tool == a' "mcptap: bad filter (-Y), at column 1: '(' not closed
  (tool == a
  ^"
bad 'tool == a)' "mcptap: bad filter (-Y), at column 10: ')' without its '('
  tool == a)
           ^"
bad 'tool == "a" foo' "mcptap: bad filter (-Y), at column 13: 'and' or 'or' expected before 'foo'
  tool == \"a\" foo
              ^"
bad 'tool matches "a("' "mcptap: bad filter (-Y), at column 14: a bad regular expression: Unmatched ( or \\(
  tool matches \"a(\"
               ^"
bad 'tool ~ "x++"' "mcptap: bad filter (-Y), at column 8: a bad regular expression: a repetition of a repetition (a++): put the inner one in parentheses, (a+)+
  tool ~ \"x++\"
         ^"
bad 'tool == "a' "mcptap: bad filter (-Y), at column 9: a string not closed (\" missing)
  tool == \"a
          ^"
bad 'tool ==' "mcptap: bad filter (-Y), at column 8: a value expected after tool's operator
  tool ==
         ^"
bad 'tool foo' "mcptap: bad filter (-Y), at column 6: an operator expected after tool (==, !=, <, >, contains, matches, and, or)
  tool foo
       ^"
bad 'code == x' "mcptap: bad filter (-Y), at column 9: code is a number: 'x' is not an integer
  code == x
          ^"
bad 'code contains 3' "mcptap: bad filter (-Y), at column 15: code is a number: 'contains' and 'matches' take text fields
  code contains 3
                ^"
bad 'time > yesterday' "mcptap: bad filter (-Y), at column 8: time is a duration since the session's start (2s, 1.5m) or a date (\"2026-11-27 10:00:00\"), not 'yesterday'
  time > yesterday
         ^"
bad 'replayed > 1' "mcptap: bad filter (-Y), at column 12: replayed is a flag: compare it with == or !=
  replayed > 1
             ^"
bad '' "mcptap: bad filter (-Y), at column 1: a field expected (session, seq, dir, kind, channel, method, tool, prompt, uri, id, error, code, duration, size, status, path, time, text, replayed)
  
  ^"
bad 'dir == c2s and' "mcptap: bad filter (-Y), at column 15: a field expected (session, seq, dir, kind, channel, method, tool, prompt, uri, id, error, code, duration, size, status, path, time, text, replayed)
  dir == c2s and
                ^"
bad 'text contains "µ" and µ' "mcptap: bad filter (-Y), at column 23: unknown field 'µ' (fields: session, seq, dir, kind, channel, method, tool, prompt, uri, id, error, code, duration, size, status, path, time, text, replayed)
  text contains \"µ\" and µ
                        ^"
for c in stats sessions analyze; do
	"$MCPTAP" $c -r "$DB" -Y 'nope' > /dev/null 2> "$T/bad.err"
	check_eq "$c: a bad filter is exit 2" 2 $?
	check_eq "$c: a bad filter's help line" "mcptap: see FILTERS in man mcptap, or 'mcptap $c --help'" "$(tail -1 "$T/bad.err")"
done
"$MCPTAP" replay -r "$DB" -Y 'nope' --as server < /dev/null > /dev/null 2> "$T/bad.err"
check_eq "replay: a bad filter is exit 2, its own columns" "2 mcptap: bad filter (-Y), at column 1: unknown field 'nope' (fields: session, seq, dir, kind, channel, method, tool, prompt, uri, id, error, code, duration, size, status, path, time, text, replayed)" \
	"$? $(head -1 "$T/bad.err")"

finish
