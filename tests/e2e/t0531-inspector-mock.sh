#!/bin/sh
# t0531-inspector-mock: any client can use the mock. The official SDK client's
# full flow is recorded against server-everything; then a second real client,
# the MCP inspector's CLI (pinned in tests/node), uses the mock of that
# recording. Each inspector call is a session of its own, with its own
# clientInfo and no client capabilities, which initializes, sets the log level
# (the server declares logging) and makes one request:
#
# - tools/list, tools/call echo with the recorded arguments, resources/list,
#   resources/read, prompts/list and prompts/get give exactly the recorded
#   results (as the SDK the inspector is built on parses them);
# - no server request (roots/list, sampling, elicitation) reaches it: it
#   declared no capability for them (the mock runs inside `mcptap record`, which
#   shows what it sent), also in a call whose recording has the server ask the
#   client (trigger-url-elicitation: the recorded result, without the question);
# - an unrecorded call gets -30900, and the error's data names the closest
#   recording (the recorded echo call).
. "$(dirname "$0")/lib.sh"

INS=$NODEDIR/node_modules/@modelcontextprotocol/inspector-cli
need_npm @modelcontextprotocol/server-everything @modelcontextprotocol/inspector-cli
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }

timeout 120 node "$NODEDIR/sdk-client.mjs" --flow full --log "$T/rec.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rec.err"
check_eq "recorded the SDK client's full flow" 0 $rc

# inspector NAME ARGS...: the inspector CLI against the mock, the mock inside
# `mcptap record -w $T/ins.db`; stdout to $T/NAME.out, stderr to $T/NAME.err.
# (The inspector finds its own package.json relative to the working directory:
# run it from its build folder.)
inspector() {
	_n=$1; shift
	# (The command's first word, its options, then -- and the rest of the command.)
	(cd "$INS/build" && timeout 60 node index.js "$MCPTAP" "$@" -- \
		record -w "$T/ins.db" -- "$MCPTAP" replay -r "$T/s.db" --as server --no-store) \
		>"$T/$_n.out" 2>"$T/$_n.err"
}

# same METHOD PREDICATE OUT: OUT is the recorded result (tests/node/recorded-result.mjs).
same() {
	node "$NODEDIR/recorded-result.mjs" "$T/rec.jsonl" "$@" || { sed 's/^/# /' "$T/$_n.err" | grep -v '^# *$' | head -5; return 1; }
}

inspector tools-list --method tools/list
check_eq "inspector tools/list exits 0" 0 $?
check "tools/list gives the recorded tools" same tools/list "" "$T/tools-list.out"

# The recorded echo text, passed as the inspector's key=value argument.
ECHO=$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
process.stdout.write(l.find((r)=>r.dir==="c2s"&&r.message.method==="tools/call"&&r.message.params.name==="echo").message.params.arguments.message)' "$T/rec.jsonl")
inspector echo --method tools/call --tool-name echo --tool-arg "message=$ECHO"
check_eq "inspector tools/call echo (the recorded arguments) exits 0" 0 $?
check "tools/call echo gives the recorded result" same tools/call 'p.name === "echo"' "$T/echo.out"

# A call whose recording has the server ask the client (elicitation/create): the
# inspector declared no elicitation, so it gets the recorded result without
# the question.
URLARG=$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
const a=l.find((r)=>r.dir==="c2s"&&r.message.method==="tools/call"&&r.message.params.name==="trigger-url-elicitation").message.params.arguments;
process.stdout.write("url="+a.url+"\n"+"message="+a.message)' "$T/rec.jsonl")
inspector url --method tools/call --tool-name trigger-url-elicitation \
	--tool-arg "$(echo "$URLARG" | sed -n 1p)" "$(echo "$URLARG" | sed -n 2p)"
check_eq "inspector tools/call trigger-url-elicitation exits 0" 0 $?
check "it gives the recorded result" same tools/call 'p.name === "trigger-url-elicitation"' "$T/url.out"

inspector res-list --method resources/list
check_eq "inspector resources/list exits 0" 0 $?
check "resources/list gives the recorded resources" same resources/list "" "$T/res-list.out"

URI=$(node -e 'const l=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
process.stdout.write(l.find((r)=>r.dir==="c2s"&&r.message.method==="resources/read").message.params.uri)' "$T/rec.jsonl")
inspector res-read --method resources/read --uri "$URI"
check_eq "inspector resources/read exits 0" 0 $?
check "resources/read gives the recorded contents" same resources/read "" "$T/res-read.out"

inspector prompts-list --method prompts/list
check_eq "inspector prompts/list exits 0" 0 $?
check "prompts/list gives the recorded prompts" same prompts/list "" "$T/prompts-list.out"

inspector prompt --method prompts/get --prompt-name simple-prompt
check_eq "inspector prompts/get simple-prompt exits 0" 0 $?
check "prompts/get gives the recorded messages" same prompts/get 'p.name === "simple-prompt"' "$T/prompt.out"

inspector miss --method tools/call --tool-name echo --tool-arg "message=never recorded"
rc=$?
check "an unrecorded call fails the inspector" test "$rc" -ne 0
check "its error is -30900" grep -q -- '-30900' "$T/miss.err"
# (The inspector prints the error's message, not its data: what differs must be there.)
check "the inspector shows where the call differs from the recording" \
	grep -q 'the closest recorded tools/call (#[0-9]*) differs at params.arguments.message (recorded ' "$T/miss.err"

# What the mock sent the inspector, session by session (one per call).
S=$(sql "$T/ins.db" 'SELECT count(*) FROM session')
check_eq "one stored session per inspector call" 8 "$S"
check_eq "every session initialized with the inspector's own clientInfo" 8 \
	"$(sql "$T/ins.db" "SELECT count(*) FROM message WHERE dir = 'c2s' AND method = 'initialize' AND CAST(raw AS TEXT) LIKE '%\"name\":\"inspector-cli\"%'")"
check_eq "and got an initialize result" 8 \
	"$(sql "$T/ins.db" "SELECT count(*) FROM exchange WHERE dir = 'c2s' AND method = 'initialize' AND outcome = 'response'")"
check_eq "no server request reached the inspector (it declared no capability)" 0 \
	"$(sql "$T/ins.db" "SELECT count(*) FROM message WHERE dir = 's2c' AND kind = 'request'")"
check_eq "one error answer in all: the unrecorded call's" 1 \
	"$(sql "$T/ins.db" "SELECT count(*) FROM message WHERE dir = 's2c' AND kind = 'error'")"
# The recorded echo call, by its sequence number in the capture.
ECHOSEQ=$(sql "$T/s.db" "SELECT seq FROM message WHERE dir = 'c2s' AND method = 'tools/call' AND CAST(raw AS TEXT) LIKE '%\"name\":\"echo\"%' ORDER BY seq LIMIT 1")
sql "$T/ins.db" "SELECT CAST(raw AS TEXT) FROM message WHERE dir = 's2c' AND kind = 'error' ORDER BY session DESC, seq DESC LIMIT 1" >"$T/miss.json"
check "the -30900 error's data names the closest recording: the echo call (#$ECHOSEQ) and the differing path" node -e '
const e = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).error;
const c = e && e.data && e.data.closest;
const seq = c && typeof c === "object" ? c.seq : c;
const differs = JSON.stringify(e && e.data && e.data.differs);
if (e.code !== -30900 || String(seq) !== process.argv[2] || !/arguments\.message/.test(differs)) {
	console.error("# " + JSON.stringify(e)); process.exit(1);
}' "$T/miss.json" "$ECHOSEQ"

finish
