#!/bin/sh
# t0560-diff-exchanges: `mcptap diff A B` on fixture recordings, whole outputs
# compared. A is a small stdio session; each B differs from it in one way:
#   - the same exchanges in another order, with other JSON-RPC ids, progress
#     tokens, "arguments": {} for none and no _meta: the same (exit 0);
#   - added and missing exchanges, params, a result and an error changed, an
#     answer that turned from result to error, a value turned from 1 to 1.0
#     (the same number): each on one line, the paths with both values (exit 1);
#   - -T json of the same: one document;
#   - the same flow recorded over Streamable HTTP (JSON and SSE answers, a
#     session id, event ids, a GET stream, a DELETE and a request refused
#     after it): the same;
#   - the server's requests (sampling, elicitation, roots), paired whatever
#     their ids, the client's answers compared;
#   - two sessions of one file (FILE:ID), and FILE alone for its newest.
. "$(dirname "$0")/lib.sh"

LOAD=$PEERS/fixture-load
INIT='> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}'

cat > "$T/a.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":1,"method":"tools/list"}
< {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"add"}]}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p-1"}}}
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}
> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}
< {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"}],"n":1}}
> {"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"simple"}}
< {"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"no such prompt"}}
> {"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///a"}}
< {"jsonrpc":"2.0","id":5,"result":{"contents":[{"uri":"file:///a","text":"A"}]}}
> {"jsonrpc":"2.0","id":6,"method":"ping","params":{}}
< {"jsonrpc":"2.0","id":6,"result":{}}
FX

# The same, reordered, other ids and tokens, {} and no params alike.
cat > "$T/same.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":"x9","method":"resources/read","params":{"uri":"file:///a"}}
< {"jsonrpc":"2.0","id":"x9","result":{"contents":[{"text":"A","uri":"file:///a"}]}}
> {"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"add","arguments":{"b":2,"a":1}}}
< {"jsonrpc":"2.0","id":"x1","result":{"n":1.0,"content":[{"type":"text","text":"3"}]}}
> {"jsonrpc":"2.0","id":"x2","method":"ping"}
< {"jsonrpc":"2.0","id":"x2","result":{}}
> {"jsonrpc":"2.0","id":"x3","method":"tools/list","params":{"_meta":{"progressToken":7}}}
< {"jsonrpc":"2.0","id":"x3","result":{"tools":[{"name":"echo"},{"name":"add"}]}}
> {"jsonrpc":"2.0","id":"x4","method":"prompts/get","params":{"name":"simple","arguments":{}}}
< {"jsonrpc":"2.0","id":"x4","error":{"code":-32602,"message":"no such prompt"}}
> {"jsonrpc":"2.0","id":"x5","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"zz"}}}
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"zz","progress":1}}
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"zz","progress":2}}
< {"jsonrpc":"2.0","id":"x5","result":{"content":[{"type":"text","text":"hi"}],"_meta":{"t":1}}}
FX

# Changed: add's params and result, echo's result, the prompt's error, the
# resource's answer now an error, tools/list gone, a second ping added. (The
# lines come in B's order, then A's missing ones.)
cat > "$T/changed.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}
> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":3}}}
< {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"4"}],"n":1}}
> {"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"simple"}}
< {"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"unknown prompt: simple, and a long reason that is cut"}}
> {"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///a"}}
< {"jsonrpc":"2.0","id":5,"error":{"code":-32002,"message":"gone"}}
> {"jsonrpc":"2.0","id":6,"method":"ping"}
< {"jsonrpc":"2.0","id":6,"result":{}}
> {"jsonrpc":"2.0","id":7,"method":"ping"}
< {"jsonrpc":"2.0","id":7,"result":{}}
FX

for f in a same changed; do
	"$LOAD" "$T/$f.fx" "$T/$f.db" || die "fixture-load $f"
done

# diff_is LABEL STATUS EXPECTED ARG...: mcptap diff ARG... exits STATUS and prints EXPECTED.
diff_is() {
	_l=$1 _st=$2 _exp=$3
	shift 3
	(cd "$T" && "$MCPTAP" diff "$@") > "$T/out" 2> "$T/err"
	_rc=$?
	check_eq "$_l: exit $_st" "$_st" "$_rc"
	check_eq "$_l: the whole output" "$_exp" "$(cat "$T/out")"
	check_eq "$_l: nothing on stderr" "" "$(cat "$T/err")"
}

diff_is "a session against itself" 0 \
	"diff: 7 exchanges in A, 7 in B: 7 same, 0 changed, 0 added, 0 missing" a.db a.db
diff_is "reordered, other ids and progress tokens, {} for none, _meta: the same" 0 \
	"diff: 7 exchanges in A, 7 in B: 7 same, 0 changed, 0 added, 0 missing" a.db same.db
diff_is "changed" 1 \
	'CHANGED tools/call echo (A #6, B #4): result.isError (absent) -> false
CHANGED tools/call add (A #9, B #6): params.arguments.b 2 -> 3, result.content[0].text "3" -> "4"
CHANGED prompts/get simple (A #11, B #8): error.message "no such prompt" -> "unknown prompt: simple, and a long reas...
CHANGED resources/read file:///a (A #13, B #10): result {"contents":[{"uri":"file:///a","text":"... -> (absent), error (absent) -> {"code":-32002,"message":"gone"}
ADDED ping (B #14)
MISSING tools/list (A #4)
diff: 7 exchanges in A, 7 in B: 2 same, 4 changed, 1 added, 1 missing' a.db changed.db
diff_is "changed, the other way" 1 \
	'ADDED tools/list (B #4)
CHANGED tools/call echo (A #4, B #6): result.isError false -> (absent)
CHANGED tools/call add (A #6, B #9): params.arguments.b 3 -> 2, result.content[0].text "4" -> "3"
CHANGED prompts/get simple (A #8, B #11): error.message "unknown prompt: simple, and a long reas... -> "no such prompt"
CHANGED resources/read file:///a (A #10, B #13): error {"code":-32002,"message":"gone"} -> (absent), result (absent) -> {"contents":[{"uri":"file:///a","text":"...
MISSING ping (A #14)
diff: 7 exchanges in A, 7 in B: 2 same, 4 changed, 1 added, 1 missing' changed.db a.db
diff_is "changed, -T json" 1 \
	'{"a":{"file":"a.db","session":1},"b":{"file":"changed.db","session":1},"noise":[],"exchanges":[
{"status":"changed","dir":"c2s","method":"tools/call","subject":"echo","a":6,"b":4,"diffs":[{"path":"result.isError","b":false}],"noise":[]},
{"status":"changed","dir":"c2s","method":"tools/call","subject":"add","a":9,"b":6,"diffs":[{"path":"params.arguments.b","a":2,"b":3},{"path":"result.content[0].text","a":"3","b":"4"}],"noise":[]},
{"status":"changed","dir":"c2s","method":"prompts/get","subject":"simple","a":11,"b":8,"diffs":[{"path":"error.message","a":"no such prompt","b":"unknown prompt: simple, and a long reason that is cut"}],"noise":[]},
{"status":"changed","dir":"c2s","method":"resources/read","subject":"file:///a","a":13,"b":10,"diffs":[{"path":"result","a":{"contents":[{"uri":"file:///a","text":"A"}]}},{"path":"error","b":{"code":-32002,"message":"gone"}}],"noise":[]},
{"status":"added","dir":"c2s","method":"ping","b":14},
{"status":"missing","dir":"c2s","method":"tools/list","a":4}
],"exchanges_a":7,"exchanges_b":7,"same":2,"changed":4,"added":1,"missing":1,"noise_paths":0}' -T json a.db changed.db
diff_is "the same, -T json" 0 \
	'{"a":{"file":"a.db","session":1},"b":{"file":"same.db","session":1},"noise":[],"exchanges":[],"exchanges_a":7,"exchanges_b":7,"same":7,"changed":0,"added":0,"missing":0,"noise_paths":0}' \
	--format=json a.db same.db

# The same flow over Streamable HTTP.
cat > "$T/http.fx" <<'FX'
@transport http
@session-id s-1
@headers [Accept: application/json, text/event-stream]
=> POST /mcp
> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
<= 200 json [Mcp-Session-Id: s-1]
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"s","version":"1"}}}
@headers+ [Mcp-Session-Id: s-1] [MCP-Protocol-Version: 2025-06-18]
=> POST /mcp
> {"jsonrpc":"2.0","method":"notifications/initialized"}
<= 202 empty
=> GET /mcp [Accept: text/event-stream]
<= 200 sse
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"tools/list"}
<= 200 sse
<@ id=e1 {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"},{"name":"add"}]}}
=> POST /mcp
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":2}}}
<= 200 sse
<@ id=e2 {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}
<@ id=e3 {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}
=> POST /mcp
> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}
<= 200 json
< {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"}],"n":1}}
=> POST /mcp
> {"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"simple"}}
<= 200 json
< {"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"no such prompt"}}
=> POST /mcp
> {"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///a"}}
<= 200 sse
<@ id=e4 {"jsonrpc":"2.0","id":5,"result":{"contents":[{"uri":"file:///a","text":"A"}]}}
=> POST /mcp
> {"jsonrpc":"2.0","id":6,"method":"ping"}
<= 200 json
< {"jsonrpc":"2.0","id":6,"result":{}}
=> DELETE /mcp
<= 200 empty
=> POST /mcp
> {"jsonrpc":"2.0","id":7,"method":"ping"}
<= 400 json
< {"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}
FX
"$LOAD" "$T/http.fx" "$T/http.db" || die "fixture-load http"
diff_is "stdio against the same flow over HTTP" 0 \
	"diff: 7 exchanges in A, 7 in B: 7 same, 0 changed, 0 added, 0 missing" a.db http.db
diff_is "HTTP against stdio" 0 \
	"diff: 7 exchanges in A, 7 in B: 7 same, 0 changed, 0 added, 0 missing" http.db same.db

# The server's requests are exchanges too (the client's answer compared), with
# their own ids; s→c marks them.
cat > "$T/srv-a.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}
< {"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi?"}}],"maxTokens":9}}
> {"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}}
< {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}
< {"jsonrpc":"2.0","id":"r1","method":"roots/list"}
> {"jsonrpc":"2.0","id":"r1","result":{"roots":[]}}
FX
cat > "$T/srv-b.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}
< {"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"maxTokens":9,"messages":[{"role":"user","content":{"type":"text","text":"hi?"}}]}}
> {"jsonrpc":"2.0","id":7,"result":{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}}
< {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi there"}]}}
< {"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}
> {"jsonrpc":"2.0","id":8,"result":{"action":"decline"}}
FX
"$LOAD" "$T/srv-a.fx" "$T/srv-a.db" && "$LOAD" "$T/srv-b.fx" "$T/srv-b.db" || die "fixture-load srv"
diff_is "server requests: paired by method and params whatever their ids" 1 \
	'CHANGED tools/call ask (A #4, B #4): result.content[0].text "hello" -> "hi there"
CHANGED s→c sampling/createMessage (A #5, B #5): result.content.text "hello" -> "hi there"
ADDED s→c elicitation/create (B #8)
MISSING s→c roots/list (A #8)
diff: 4 exchanges in A, 4 in B: 1 same, 2 changed, 1 added, 1 missing' srv-a.db srv-b.db
diff_is "server requests, -T json" 1 \
	'{"a":{"file":"srv-a.db","session":1},"b":{"file":"srv-b.db","session":1},"noise":[],"exchanges":[
{"status":"changed","dir":"c2s","method":"tools/call","subject":"ask","a":4,"b":4,"diffs":[{"path":"result.content[0].text","a":"hello","b":"hi there"}],"noise":[]},
{"status":"changed","dir":"s2c","method":"sampling/createMessage","a":5,"b":5,"diffs":[{"path":"result.content.text","a":"hello","b":"hi there"}],"noise":[]},
{"status":"added","dir":"s2c","method":"elicitation/create","b":8},
{"status":"missing","dir":"s2c","method":"roots/list","a":8}
],"exchanges_a":4,"exchanges_b":4,"same":1,"changed":2,"added":1,"missing":1,"noise_paths":0}' -T json srv-a.db srv-b.db

# Two sessions of one file: FILE:ID, and FILE alone for the newest.
"$LOAD" "$T/changed.fx" "$T/two.db" && "$LOAD" "$T/a.fx" "$T/two.db" || die "fixture-load two"
check_eq "two.db holds two sessions" 2 "$(sql "$T/two.db" "select count(*) from session")"
diff_is "FILE:ID against FILE:ID" 1 "$(cd "$T" && "$MCPTAP" diff changed.db a.db)" two.db:1 two.db:2
diff_is "FILE alone: its newest session" 0 \
	"diff: 7 exchanges in A, 7 in B: 7 same, 0 changed, 0 added, 0 missing" two.db:2 two.db
diff_is "FILE:ID the other way" 1 "$(cd "$T" && "$MCPTAP" diff a.db changed.db)" two.db two.db:1

finish
