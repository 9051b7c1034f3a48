#!/bin/sh
# mcptap replay --as server: the mock of a recorded server. The C client's whole
# flow (progress, a sampling request back to the client, resources, prompts)
# runs against it; output is byte-identical run after run; matching is by
# method and params, never by id; misses name the closest recording; timing,
# --strict, and bad input.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load

# Record the C client against the C server, then run the same client against the mock.
"$PEERS/mcp-client" --log "$T/rec.jsonl" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" 2> /dev/null
check_eq "recorded the C peers" 0 $?
"$PEERS/mcp-client" --log "$T/rep.jsonl" -- "$MCPTAP" replay -r "$T/c.db" --as server 2> "$T/rep.err"
check_eq "the client's whole flow succeeds against the mock" 0 $?
check "the client saw the sampling request and progress" grep -q "0 failed checks" "$T/rep.err"
# What the client received is what it received from the real server, but for
# the id of the server's own request (the mock gives fresh ids).
norm() { sed 's/"id":"srv-1"/"id":1/; s/"dir":"[a-z2]*",//' "$1"; }
check_eq "same messages as with the real server" "$(norm "$T/rec.jsonl")" "$(norm "$T/rep.jsonl")"

# Determinism: the mock's output, twice (over a pipe: ordered waits for tee).
for i in 1 2; do
	"$PEERS/mcp-client" -- sh -c "'$MCPTAP' replay -r '$T/c.db' --as server | tee '$T/out$i'" > /dev/null 2>&1
done
check "the mock's output is byte-identical run after run" cmp "$T/out1" "$T/out2"
check "and not empty" test -s "$T/out1"

# Matching is never by id: other ids (a string one too), same answers under them.
init='{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{},"roots":{"listChanged":true}},"clientInfo":{"name":"mcptap-test-client","version":"1.0.0"}}}'
printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"arguments":{"text":"hello"},"name":"echo","_meta":{"x":1}}}' \
	'{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}' \
	'{"jsonrpc":"2.0","id":79,"method":"tools/call","params":{"name":"echo","arguments":{"text":"bye"}}}' \
	'{"jsonrpc":"2.0","id":80,"method":"no/such"}' \
	'{"jsonrpc":"2.0","id":83,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello","x":1,"y":"a long value, longer than forty bytes: it is cut","z":3,"w":4}}}' \
	'{"jsonrpc":"2.0","id":81,"method":"ping"}' '{"jsonrpc":"2.0","id":82,"method":"ping"}' \
	'not json at all' |
	"$MCPTAP" replay -r "$T/c.db" --as server > "$T/m.out" 2> "$T/m.err"
check_eq "the mock exits 0 at EOF" 0 $?
check "initialize answered under the live string id" grep -q '^{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"2025-06-18"' "$T/m.out"
check "tools/call answered under the live id; key order and _meta do not matter" grep -q '"id":77,"result":{"content":\[{"type":"text","text":"hello"}\]}' "$T/m.out"
check "the recording had one such call: a second one misses (not idempotent)" grep -q '"id":78,"error":{"code":-30900' "$T/m.out"
check "that miss differs nowhere: the recording is used up" grep -q '"id":78,.*"differs":\[\]' "$T/m.out"
check "a miss is an error with code -30900" grep -q '"id":79,"error":{"code":-30900' "$T/m.out"
check "the miss names the closest recording and the differing path" grep -q '"differs":\["params.arguments.text"\]' "$T/m.out"
check "a method never recorded: -32601" grep -q '"id":80,"error":{"code":-32601' "$T/m.out"
# What a miss says in its message (clients and inspectors print that, not data).
msg() { node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n")) {
	try { const m = JSON.parse(l); if (m.id === Number(process.argv[2])) console.log(m.error.message) } catch (e) {} }' "$T/m.out" "$1"; }
check_eq "a miss's message: the closest recording, where it differs, the recorded value" \
	"mcptap replay: no recorded answer for these params; the closest recorded tools/call (#8) differs at params.arguments.text (recorded \"hello\")" "$(msg 79)"
check_eq "a used-up recording's message says so" \
	"mcptap replay: no recorded answer for these params; the closest recorded tools/call (#8) differs nowhere: its answers are all used up" "$(msg 78)"
check_eq "a miss on four paths: three said, values cut, the rest counted" \
	"mcptap replay: no recorded answer for these params; the closest recorded tools/call (#8) differs at params.arguments.x (not in the recording), params.arguments.y (not in the recording), params.arguments.z (not in the recording) and 1 more" "$(msg 83)"
check_eq "a method never recorded says which" "mcptap replay: no/such was never recorded" "$(msg 80)"
check "ping is answered again once its recordings run out" grep -q '"id":82,"result":{}' "$T/m.out"
check "garbage gets a parse error" grep -q '"id":null,"error":{"code":-32700' "$T/m.out"
check "garbage is reported on stderr" grep -q "replay: the client sent a line that is not JSON" "$T/m.err"
check "notifications are never answered" sh -c "! grep -q 'notifications/initialized' '$T/m.out'"
check "the misses are summed up on stderr" grep -q "4 without a recording" "$T/m.err"
check "the garbage line is quoted whole" grep -q "is not JSON: 'not json at all'$" "$T/m.err"

# --strict: misses and unused recordings fail.
printf '%s\n' "$init" | "$MCPTAP" replay -r "$T/c.db" --as server --strict > /dev/null 2> "$T/s.err"
check_eq "--strict with unused recordings: exit 1" 1 $?
check "--strict says how many were never asked for" grep -q "recorded requests never asked for" "$T/s.err"

# Server messages anchored to the client message before them, progress tokens
# substituted, the server's own requests with fresh ids, and the mock waits for
# the client's answer where the recording did.
cat > "$T/flow.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
< {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"rec-token"}}}
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"rec-token","progress":1}}
< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}
< {"jsonrpc":"2.0","id":"s-9","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}
> {"jsonrpc":"2.0","id":"s-9","result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"rec-token","progress":2}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}
FX
"$LOAD" "$T/flow.fx" "$T/flow.db"
printf '%s\n' '{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"live-token"}}}' > "$T/in1"
"$MCPTAP" replay -r "$T/flow.db" --as server < "$T/in1" > "$T/f1.out"
check_eq "before the client answers: initialize, list_changed, progress, log, the request" 5 "$(wc -l < "$T/f1.out" | tr -d ' ')"
check "list_changed comes after notifications/initialized" sed -n 2p "$T/f1.out" | grep -q list_changed
check "the live progress token replaces the recorded one" sed -n 3p "$T/f1.out" | grep -q '"progressToken":"live-token","progress":1'
check "the server's request gets a fresh id" sed -n 5p "$T/f1.out" | grep -q '^{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"'
check "the answer waits for the client's answer" sh -c "! grep -q '\"id\":11' '$T/f1.out'"
{ cat "$T/in1"; echo '{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"live"},"model":"x"}}'; } |
	"$MCPTAP" replay -r "$T/flow.db" --as server > "$T/f2.out"
check_eq "after it: the rest of the block" 7 "$(wc -l < "$T/f2.out" | tr -d ' ')"
check "progress 2 with the live token" sed -n 6p "$T/f2.out" | grep -q '"progressToken":"live-token","progress":2'
check "the result under the live id" sed -n 7p "$T/f2.out" | grep -q '"id":11,"result"'

# Timing: ordered (the default) and none play at once, whatever the gaps (an
# hour here: a mock that slept would be stopped by timeout); recorded and scaled
# gaps are kept (t0422 shows the order).
cat > "$T/slow.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"ping"}
@t +800
< {"jsonrpc":"2.0","id":1,"result":{}}
FX
"$LOAD" "$T/slow.fx" "$T/slow.db"
printf '> {"jsonrpc":"2.0","id":1,"method":"ping"}\n@t +3600000\n< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"late"}}\n@t +3600000\n< {"jsonrpc":"2.0","id":1,"result":{}}\n' > "$T/hour.fx"
"$LOAD" "$T/hour.fx" "$T/hour.db"
for timing in ordered none; do
	echo '{"jsonrpc":"2.0","id":5,"method":"ping"}' | timeout 60 "$MCPTAP" replay -r "$T/hour.db" --as server --timing $timing > "$T/hour.out"
	check_eq "--timing $timing: two hours of recorded gaps played at once" 0 $?
	check_eq "--timing $timing: the log message, then the answer" '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"late"}}
{"jsonrpc":"2.0","id":5,"result":{}}' "$(cat "$T/hour.out")"
done
echo '{"jsonrpc":"2.0","id":5,"method":"ping"}' | timeout 60 "$MCPTAP" replay -r "$T/hour.db" --as server > /dev/null
check_eq "the default timing plays at once too" 0 $?
ms() { date +%s%3N; }
t0=$(ms); echo '{"jsonrpc":"2.0","id":5,"method":"ping"}' | "$MCPTAP" replay -r "$T/slow.db" --as server --timing recorded > /dev/null; t1=$(ms)
check "--timing recorded keeps the 800 ms gap ($((t1 - t0)) ms)" test $((t1 - t0)) -ge 780
t0=$(ms); echo '{"jsonrpc":"2.0","id":5,"method":"ping"}' | "$MCPTAP" replay -r "$T/slow.db" --as server --timing scale=2 > /dev/null; t1=$(ms)
check "--timing scale=2 doubles it ($((t1 - t0)) ms)" test $((t1 - t0)) -ge 1580
"$MCPTAP" replay -r "$T/slow.db" --as server --timing fast < /dev/null 2> /dev/null
check_eq "a bad --timing is a usage error" 2 $?

# Bad recordings.
"$MCPTAP" record -w "$T/empty.db" -- true < /dev/null
"$MCPTAP" replay -r "$T/empty.db" --as server < /dev/null 2> "$T/e.err"
check_eq "an empty session: exit 2" 2 $?
check "an empty session: says so" grep -q "has no messages to replay" "$T/e.err"
# (with --listen too: its address checked first did not make the rest exit 0)
"$MCPTAP" replay -r "$T/empty.db" --as server --listen 127.0.0.1:0 < /dev/null 2> "$T/el.err"
check_eq "an empty session, over HTTP: exit 2, says so" "2 1" "$? $(grep -c "has no messages to replay" "$T/el.err")"
"$MCPTAP" replay -r "$T/empty.db" -s 7 --as server --listen 127.0.0.1:0 < /dev/null 2> "$T/el.err"
check_eq "no such session, over HTTP: exit 2" 2 $?
printf '> {"jsonrpc":"2.0","id":1,"method":"ping"}\n' > "$T/only.fx"
"$LOAD" "$T/only.fx" "$T/only.db"
echo '{"jsonrpc":"2.0","id":9,"method":"ping"}' | "$MCPTAP" replay -r "$T/only.db" --as server > "$T/o.out" 2> "$T/o.err"
check "only client traffic: a warning" grep -q "has no server messages" "$T/o.err"
check "only client traffic: the recorded server never answered" grep -q '"id":9,"error":{"code":-30900,"message":"mcptap replay: the recorded server never answered' "$T/o.out"
# A server that crashed mid-way: its last request unanswered.
"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/crash.db" -- "$PEERS/mcp-server" --crash-after 3 > /dev/null 2>&1
"$PEERS/mcp-client" -- "$MCPTAP" replay -r "$T/crash.db" --as server > /dev/null 2> "$T/cr.err"
check_eq "a crashed server's capture: the client fails as it did, no hang" 1 $?
# A client that goes away mid-stream: the mock ends quietly.
printf '%s\n' "$init" | head -c 40 | "$MCPTAP" replay -r "$T/c.db" --as server > "$T/cut.out" 2> "$T/cut.err"
check_eq "a client gone mid-line: exit 0" 0 $?
# Integers past 64 bits (JSON allows them, Jansson parses them only as reals) still
# match; a notification nested past Jansson's limit gets no reply (none is allowed).
printf '%s\n' '> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"n":123456789012345678901234567890}}}' \
	'< {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"big"}]}}' > "$T/big.fx"
"$LOAD" "$T/big.fx" "$T/bigint.db"
deep=$(awk 'BEGIN { for (i = 0; i < 3000; i++) printf "["; for (i = 0; i < 3000; i++) printf "]" }')
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/x","params":{"a":'"$deep"'}}' \
	'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"n":123456789012345678901234567890}}}' |
	"$MCPTAP" replay -r "$T/bigint.db" --as server > "$T/big.out" 2> "$T/big.err"
check "an integer past 64 bits matches its recording" grep -q '"id":7,"result":{"content":\[{"type":"text","text":"big"}\]}' "$T/big.out"
check_eq "a notification too deep to parse: no reply" 1 "$(wc -l < "$T/big.out")"
check "a notification too deep to parse: a warning" grep -q "nested too deep" "$T/big.err"
# A client that stops reading its answers: the mock says so and ends, not killed by SIGPIPE.
: > "$T/pings"
i=0
while [ $i -lt 3000 ]; do
	echo '{"jsonrpc":"2.0","id":'$i',"method":"ping"}' >> "$T/pings"
	i=$((i + 1))
done
{ "$MCPTAP" replay -r "$T/c.db" --as server --strict < "$T/pings" 2> "$T/sp.err"; echo $? > "$T/sp.rc"; } | head -c 10 > /dev/null
check "a client that stops reading: not killed by SIGPIPE (exit $(cat "$T/sp.rc"))" test "$(cat "$T/sp.rc")" -lt 128
check "a client that stops reading: says so" grep -q "the client stopped reading" "$T/sp.err"
check "a client that stops reading: the --strict summary still comes" grep -q "request[s]* answered from the recording" "$T/sp.err"
# The recording is read back while the mock serves: messages deleted from the
# file meanwhile cannot be sent. Said once, the answers that are gone become
# errors under the live ids, and the mock exits 2.
{
	echo '> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
	echo '< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'
	i=1
	while [ $i -le 100 ]; do
		echo '> {"jsonrpc":"2.0","id":'$((i + 1))',"method":"tools/call","params":{"name":"echo","arguments":{"n":'$i'}}}'
		echo '< {"jsonrpc":"2.0","id":'$((i + 1))',"result":{"content":[{"type":"text","text":"'$i'"}]}}'
		i=$((i + 1))
	done
} > "$T/gone.fx"
"$LOAD" "$T/gone.fx" "$T/gone.db"
mkfifo "$T/gone.in"
"$MCPTAP" replay -r "$T/gone.db" --as server --no-store < "$T/gone.in" > "$T/gone.out" 2> "$T/gone.err" &
pid=$!
exec 3> "$T/gone.in"
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' >&3
i=0
while [ ! -s "$T/gone.out" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sql "$T/gone.db" "delete from message where seq > 150"
i=1
while [ $i -le 100 ]; do
	echo '{"jsonrpc":"2.0","id":'$((i + 1))',"method":"tools/call","params":{"name":"echo","arguments":{"n":'$i'}}}' >&3
	i=$((i + 1))
done
exec 3>&-
wait $pid
check_eq "messages gone from the file meanwhile: exit 2" 2 $?
check_eq "said once, naming the first" \
	"mcptap: replay: cannot read the recording: message 152 of session 1 is no longer in the capture file" \
	"$(cat "$T/gone.err")"
check_eq "the answers still there went out (initialize and 74)" 75 "$(grep -c '"result"' "$T/gone.out")"
check_eq "the 26 gone: an error each, under the live id" 26 \
	"$(grep -c '^{"jsonrpc":"2.0","id":[0-9]*,"error":{"code":-30900,"message":"mcptap replay: the recorded answer cannot be read"}}$' "$T/gone.out")"
check_eq "the first of them" '{"jsonrpc":"2.0","id":76,"error":{"code":-30900,"message":"mcptap replay: the recorded answer cannot be read"}}' \
	"$(grep -m 1 error "$T/gone.out")"
"$MCPTAP" replay -r "$T/c.db" --as server --as-what 2> /dev/null < /dev/null
check_eq "an unknown option: 2" 2 $?
"$MCPTAP" replay -r "$T/c.db" < /dev/null 2> /dev/null
check_eq "no --as: 2" 2 $?

finish
