#!/bin/sh
# t0561-diff-noise: what `mcptap diff` sets aside, on fixture recordings, whole
# outputs compared.
#   - Minted values: a task id and a cursor each server made up, sent back by
#     its client: the requests that carry them still pair, and the answers
#     that hand them out are the same.
#   - --noise FILE:ID (or a third FILE:ID): a recording of A's side; the paths where it
#     differs from A (a time stamp, a random id) are set aside on B's exchange,
#     with a count; a change at another path is still reported, with the noisy
#     ones counted on its line. Two --noise recordings add up.
#   - --ignore PATH and NAME=PATH, as replay's: left out of matching (a params
#     path: requests that differ there pair) and comparing; a NAME the A
#     recording never called is a usage error.
. "$(dirname "$0")/lib.sh"

LOAD=$PEERS/fixture-load
# fx NAME TASK CURSOR STAMP RID TEXT: a session whose server minted TASK and
# CURSOR, stamped STAMP, with a random id RID, and an echo answering TEXT; its
# client stamps its echo with cSTAMP.
fx() {
	cat > "$T/$1.fx" <<FX
> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start","arguments":{}}}
< {"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"$2","status":"working"}}}
> {"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"$2"}}
< {"jsonrpc":"2.0","id":2,"result":{"taskId":"$2","status":"completed","at":"$4"}}
> {"jsonrpc":"2.0","id":3,"method":"resources/list"}
< {"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"r://1"}],"nextCursor":"$3"}}
> {"jsonrpc":"2.0","id":4,"method":"resources/list","params":{"cursor":"$3"}}
< {"jsonrpc":"2.0","id":4,"result":{"resources":[{"uri":"r://2"}]}}
> {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","ts":"c$4"}}}
< {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"$6"}],"requestId":"$5"}}
FX
	"$LOAD" "$T/$1.fx" "$T/$1.db" || die "fixture-load $1"
}
fx a task-1 cur-1 2026-01-01T00:00:01Z r-1 hi
fx a2 task-2 cur-2 2026-01-01T00:00:02Z r-2 hi
fx a3 task-3 cur-3 2026-01-01T00:00:03Z r-3 hi
fx b task-9 cur-9 2026-01-01T00:00:09Z r-9 hi
fx c task-8 cur-8 2026-01-01T00:00:08Z r-8 HI

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

# Minted values followed; what every run stamps afresh differs without noise.
diff_is "without noise: only the time stamps and the random id differ" 1 \
	'CHANGED tasks/get (A #6, B #6): result.at "2026-01-01T00:00:01Z" -> "2026-01-01T00:00:09Z"
CHANGED tools/call echo (A #12, B #12): params.arguments.ts "c2026-01-01T00:00:01Z" -> "c2026-01-01T00:00:09Z", result.requestId "r-1" -> "r-9"
diff: 6 exchanges in A, 6 in B: 4 same, 2 changed, 0 added, 0 missing' a.db b.db
diff_is "with a noise recording: the same" 0 \
	'diff: 6 exchanges in A, 6 in B: 6 same, 0 changed, 0 added, 0 missing; 3 paths set aside as noise' \
	--noise a2.db a.db b.db
diff_is "a third session is one more --noise" 0 \
	'diff: 6 exchanges in A, 6 in B: 6 same, 0 changed, 0 added, 0 missing; 3 paths set aside as noise' \
	a.db b.db a2.db
diff_is "two noise recordings add up" 0 \
	'diff: 6 exchanges in A, 6 in B: 6 same, 0 changed, 0 added, 0 missing; 3 paths set aside as noise' \
	--noise a2.db:1 --noise=a3.db a.db b.db
diff_is "a change beside the noise is reported, the noise counted on its line" 1 \
	'CHANGED tools/call echo (A #12, B #12): result.content[0].text "hi" -> "HI" (2 noisy paths set aside)
diff: 6 exchanges in A, 6 in B: 5 same, 1 changed, 0 added, 0 missing; 3 paths set aside as noise' \
	--noise a2.db a.db c.db
diff_is "-T json: the noise on the exchange" 1 \
	'{"a":{"file":"a.db","session":1},"b":{"file":"c.db","session":1},"noise":[{"file":"a2.db","session":1}],"exchanges":[
{"status":"changed","dir":"c2s","method":"tools/call","subject":"echo","a":12,"b":12,"diffs":[{"path":"result.content[0].text","a":"hi","b":"HI"}],"noise":["params.arguments.ts","result.requestId"]}
],"exchanges_a":6,"exchanges_b":6,"same":5,"changed":1,"added":0,"missing":0,"noise_paths":3}' \
	-T json --noise a2.db a.db c.db
diff_is "noise of the other side does not hide the change" 1 \
	'CHANGED tasks/get (A #6, B #6): result.at "2026-01-01T00:00:01Z" -> "2026-01-01T00:00:08Z"
CHANGED tools/call echo (A #12, B #12): params.arguments.ts "c2026-01-01T00:00:01Z" -> "c2026-01-01T00:00:08Z", result.content[0].text "hi" -> "HI", result.requestId "r-1" -> "r-8"
diff: 6 exchanges in A, 6 in B: 4 same, 2 changed, 0 added, 0 missing; 0 paths set aside as noise' \
	--noise a.db a.db c.db

# --ignore, as replay's.
diff_is "--ignore: paths left out everywhere" 1 \
	'CHANGED tools/call echo (A #12, B #12): result.requestId "r-1" -> "r-9"
diff: 6 exchanges in A, 6 in B: 5 same, 1 changed, 0 added, 0 missing' \
	--ignore params.arguments.ts --ignore 'result.at' a.db b.db
diff_is "--ignore NAME=PATH: only for that tool or method" 0 \
	'diff: 6 exchanges in A, 6 in B: 6 same, 0 changed, 0 added, 0 missing' \
	--ignore echo=params.arguments.ts --ignore echo=result.requestId --ignore tasks/get=result.at a.db b.db
diff_is "--ignore of a params path: requests that differ only there pair by key" 1 \
	'CHANGED tools/call echo (A #12, B #12): result.content[0].text "hi" -> "HI"
diff: 6 exchanges in A, 6 in B: 5 same, 1 changed, 0 added, 0 missing' \
	--ignore params.arguments --ignore result.at --ignore result.requestId a.db c.db

# Bad --ignore: a usage error, exit 2.
(cd "$T" && "$MCPTAP" diff --ignore nope=result.x a.db b.db) > "$T/out" 2> "$T/err"
check_eq "--ignore NAME=PATH of a name never called: exit 2" 2 $?
check_eq "its error names the path and the name" \
	"mcptap: --ignore 'nope=result.x': the recorded client never called a method, tool or prompt named 'nope'" \
	"$(head -n 1 "$T/err")"
check_eq "and nothing on stdout" "" "$(cat "$T/out")"
(cd "$T" && "$MCPTAP" diff --ignore content a.db b.db) > "$T/out" 2> "$T/err"
check_eq "--ignore of a path outside params, result, error: exit 2" 2 $?
check_eq "its error" "mcptap: --ignore 'content': a path starts at params, result or error (NAME=PATH scopes it to a method, tool or prompt)" \
	"$(head -n 1 "$T/err")"

finish
