#!/bin/sh
# mcptap replay --as server with clients other than the recorded one: the
# handshake is answered whatever the live clientInfo, capabilities and
# protocolVersion; the recorded server requests the live client declared no
# capability for are not sent, and the conversation goes on as if the recorded
# client had answered them; the summary says what was asked, answered and left
# out.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load

"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "recorded the C peers" 0 $?
sampling_seq=$(sql "$T/c.db" "select seq from message where method = 'sampling/createMessage'")

# Another client name and version, and another protocol revision asked for.
"$PEERS/mcp-client" --name other-client --version 9.9.9 --protocol 2025-11-25 -- \
	"$MCPTAP" replay -r "$T/c.db" --as server --report "$T/other.json" --no-store 2> "$T/other.err"
check_eq "another clientInfo and protocolVersion: the whole flow succeeds" 0 $?
check "the client saw the sampling request (it declared sampling)" grep -q "0 failed checks" "$T/other.err"
check_eq "the summary: asked 2025-11-25, answered the recorded 2025-06-18" \
	'"protocol": { "asked": "2025-11-25", "answered": "2025-06-18" },' \
	"$(sed -n '/"protocol"/,/}/p' "$T/other.json" | sed 's/^ *//' | paste -sd ' ')"
check "the summary names the live client" grep -q '"name": "other-client"' "$T/other.json"
check "and its version" grep -q '"version": "9.9.9"' "$T/other.json"
check "nothing left out" grep -q '"skipped": \[\],' "$T/other.json"
check "ok" grep -q '"ok": true' "$T/other.json"

# The same client without sampling: no sampling request comes (mcp-client fails a
# check if one does), and the tool's result arrives all the same.
"$PEERS/mcp-client" --caps '{"roots":{"listChanged":true}}' --log "$T/nos.jsonl" -- \
	"$MCPTAP" replay -r "$T/c.db" --as server --report "$T/nos.json" --no-store 2> "$T/nos.err"
check_eq "a client without sampling: the whole flow succeeds" 0 $?
check "no sampling/createMessage reached it" sh -c "! grep -q 'sampling/createMessage' '$T/nos.jsonl'"
check "the sample tool's result reached it" grep -q '"content":\[{"type":"text","text":"mock reply"}\]' "$T/nos.jsonl"
check "the mock says what it left out" grep -q "1 recorded server request not sent: the client did not declare the capability it needs (#$sampling_seq sampling/createMessage needs sampling)" "$T/nos.err"
check_eq "the summary lists it: seq, method, the capability" \
	"\"skipped\": [ { \"seq\": $sampling_seq, \"method\": \"sampling/createMessage\", \"needs\": \"sampling\" } ]," \
	"$(sed -n '/"skipped"/,/^  \],/p' "$T/nos.json" | sed 's/^ *//' | paste -sd ' ')"

# A crafted session: roots/list after initialized, then a tool that asks for a
# URL elicitation and, once answered, for sampling.
cat > "$T/cap.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"roots":{},"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"rec","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
< {"jsonrpc":"2.0","id":"r1","method":"roots/list"}
> {"jsonrpc":"2.0","id":"r1","result":{"roots":[]}}
< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"roots done"}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}
< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asking"}}
< {"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"mode":"url","message":"open","url":"https://x","elicitationId":"x1"}}
> {"jsonrpc":"2.0","id":"e1","result":{"action":"accept"}}
< {"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}
> {"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}
< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sampled"}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}
FX
"$LOAD" "$T/cap.fx" "$T/cap.db"
init() { # init CAPS PROTOCOL: an initialize from another client
	printf '{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"%s","capabilities":%s,"clientInfo":{"name":"inspector","version":"0.17"}}}\n' "$2" "$1"
}
call='{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"ask"}}'
initd='{"jsonrpc":"2.0","method":"notifications/initialized"}'

# A client with form elicitation only: nothing of it is sent, the rest plays on.
{ init '{"elicitation":{}}' 2025-03-26; echo "$initd"; echo "$call"; } |
	"$MCPTAP" replay -r "$T/cap.db" --as server --report "$T/a.json" > "$T/a.out" 2> "$T/a.err"
check_eq "form elicitation only: exit 0" 0 $?
cat > "$T/a.want" <<'EOF'
{"jsonrpc":"2.0","id":10,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"roots done"}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asking"}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sampled"}}
{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"done"}]}}
EOF
check "no server request; each left-out one taken as answered as recorded, in order" cmp "$T/a.out" "$T/a.want"
cat > "$T/a.json.want" <<'EOF'
{
  "session": 1,
  "protocol": {
    "asked": "2025-03-26",
    "answered": "2025-11-25"
  },
  "client": {
    "name": "inspector",
    "version": "0.17"
  },
  "requests": 2,
  "answered": 2,
  "reused": 0,
  "missed": 0,
  "misses": [],
  "unused_count": 0,
  "unused": [],
  "skipped": [
    {
      "seq": 4,
      "method": "roots/list",
      "needs": "roots"
    },
    {
      "seq": 9,
      "method": "elicitation/create",
      "needs": "elicitation.url"
    },
    {
      "seq": 11,
      "method": "sampling/createMessage",
      "needs": "sampling"
    }
  ],
  "ordered_waits": 0,
  "ordered_timeouts": 0,
  "garbage": 0,
  "ended": "eof",
  "ok": true
}
EOF
check "the summary, exactly (stdout is a file: no waits)" cmp "$T/a.json" "$T/a.json.want"
check "the stderr warning names the first left out" grep -q "3 recorded server requests not sent: the client did not declare the capability they need (#4 roots/list needs roots, ...)" "$T/a.err"
check_eq "the stored run lists them as skipped, with the path the client lacked" \
	"4|roots/list|[\"params.capabilities.roots\"]
9|elicitation/create|[\"params.capabilities.elicitation.url\"]
11|sampling/createMessage|[\"params.capabilities.sampling\"]" \
	"$(sql "$T/cap.db" "select seq, method, diff from replay_result where status = 'skipped' order by seq")"

# A client that declares everything gets every request, with fresh ids, and its
# answers lead on; the output is the same as for the recorded client.
{ init '{"sampling":{},"roots":{},"elicitation":{"url":{}}}' 2025-11-25; echo "$initd"
  echo '{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}'; echo "$call"
  echo '{"jsonrpc":"2.0","id":2,"result":{"action":"accept"}}'
  echo '{"jsonrpc":"2.0","id":3,"result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"x"}}'; } |
	"$MCPTAP" replay -r "$T/cap.db" --as server --report "$T/b.json" > "$T/b.out" 2> "$T/b.err"
cat > "$T/b.want" <<'EOF'
{"jsonrpc":"2.0","id":10,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
{"jsonrpc":"2.0","id":1,"method":"roots/list"}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"roots done"}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"asking"}}
{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"mode":"url","message":"open","url":"https://x","elicitationId":"x1"}}
{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sampled"}}
{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"done"}]}}
EOF
check "every capability declared: every server request is sent" cmp "$T/b.out" "$T/b.want"
check "nothing skipped" grep -q '"skipped": \[\],' "$T/b.json"
check "no warning" test ! -s "$T/b.err"

# url elicitation declared, form not: the url one goes out; no roots, no sampling.
{ init '{"elicitation":{"url":{}}}' 2025-11-25; echo "$initd"; echo "$call"
  echo '{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}'; } |
	"$MCPTAP" replay -r "$T/cap.db" --as server --report "$T/c.json" > "$T/c.out" 2> /dev/null
check "url mode declared: the url elicitation goes out under id 1" grep -q '^{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url"' "$T/c.out"
check "and after its answer the tool's result" sed -n '$p' "$T/c.out" | grep -q '"id":11,"result"'
check_eq "skipped: roots and sampling" '"needs": "roots" "needs": "sampling"' \
	"$(grep '"needs"' "$T/c.json" | sed 's/^ *//' | paste -sd ' ')"

# Two initializes with different params: both answered from the one recording.
{ init '{}' 2024-11-05; init '{"sampling":{}}' 2025-06-18 | sed 's/"id":10/"id":20/'; } |
	"$MCPTAP" replay -r "$T/cap.db" --as server --report "$T/d.json" > "$T/d.out" 2> /dev/null
check_eq "a second initialize is answered again" 2 "$(grep -c '"protocolVersion":"2025-11-25"' "$T/d.out")"
check "reused once" grep -q '"reused": 1,' "$T/d.json"
check "the summary keeps the last one asked" grep -q '"asked": "2025-06-18",' "$T/d.json"

finish
