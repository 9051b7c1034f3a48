#!/bin/sh
# The text report shows what came from the traffic without letting a terminal
# act on it (a method or a server name holding ESC ]0;title BEL and ESC [2J),
# while JSON, SARIF and JUnit keep it exact or, where XML cannot hold it, say
# so with '?'. And two rough edges of the command line: --list-rules -T json,
# and `mcptap help` of a name that is no command.
. "$(dirname "$0")/lib.sh"

# The server's name and a method hold a title change and a screen clear;
# a request's id and a log message's text too.
cat > "$T/esc.fx" <<'EOF'
> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s\u001b]0;title\u0007\u001b[2J","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":1,"method":"tools/\u001b]0;title\u0007\u001b[2J","params":{}}
< {"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}
> {"jsonrpc":"2.0","id":"\u001b[2J","method":"ping"}
EOF
printf '< \033]0;title\007 not json \033[2J\n' >> "$T/esc.fx"
"$PEERS/fixture-load" "$T/esc.fx" "$T/esc.db" || die "cannot load the fixture"
check_eq "the server's name is stored with its escapes" "s$(printf '\033')]0;title$(printf '\007')$(printf '\033')[2J" \
	"$(sql "$T/esc.db" "select server_name from session")"

"$MCPTAP" analyze -r "$T/esc.db" --no-store > "$T/esc.txt"
check_eq "text: exit 1 (the text line is an error)" 1 $?
check_eq "text: no ESC, no BEL, no other control character" 0 "$(tr -d '\n' < "$T/esc.txt" | tr -cd '\000-\037\177' | wc -c)"
check "text: the method is shown escaped" grep -qF 'c→s tools/\x1B]0;title\x07\x1B[2J id=1: RPC-017 warning: tools/\x1B]0;title\x07\x1B[2J is not an MCP method' "$T/esc.txt"
check "text: the line of text (which the rule quotes with ? for controls)" grep -qF "STDIO-002 error: the server wrote text that is not JSON to stdout (unexpected character): '?]0;title? not json ?[2J'" "$T/esc.txt"
"$MCPTAP" analyze -r "$T/esc.db" --no-store -T text > "$T/esc2.txt" 2>&1
check_eq "text: nothing on stderr either" "$(cat "$T/esc.txt")" "$(cat "$T/esc2.txt")"

"$MCPTAP" analyze -r "$T/esc.db" --no-store -T json > "$T/esc.json"
check_eq "json: the method and the text exactly" "ok" "$(node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
const f = r.sessions[0].findings, m = "tools/\u001b]0;title\u0007\u001b[2J";
const a = f.find((x) => x.rule === "RPC-017");
console.log(a && a.method === m && a.text.startsWith(m + " is not") ? "ok" : JSON.stringify(f))' "$T/esc.json")"
"$MCPTAP" analyze -r "$T/esc.db" --no-store -T sarif > "$T/esc.sarif"
check_eq "sarif: the text exactly" "ok" "$(node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
const r = s.runs[0].results.find((x) => x.ruleId === "RPC-017");
console.log(r && r.message.text.startsWith("tools/\u001b]0;title\u0007\u001b[2J is not") && r.properties.method === "tools/\u001b]0;title\u0007\u001b[2J" ? "ok" : "no")' "$T/esc.sarif")"
"$MCPTAP" analyze -r "$T/esc.db" --no-store -T junit > "$T/esc.xml"
check "junit: well formed" xmllint --noout "$T/esc.xml"
check "junit: what XML cannot hold is ?" grep -qF "warning: tools/?]0;title??[2J is not an MCP method" "$T/esc.xml"

# --list-rules -T json: one object per rule per line, the text table's rows.
"$MCPTAP" analyze --list-rules -T json > "$T/rules.jsonl"
check_eq "--list-rules -T json: exit 0" 0 $?
"$MCPTAP" analyze --list-rules > "$T/rules.txt"
check_eq "--list-rules -T json: a line per rule" "$(($(wc -l < "$T/rules.txt") - 1))" "$(wc -l < "$T/rules.jsonl")"
check_eq "--list-rules -T json: LIFE-001" \
	'{"id":"LIFE-001","severity":"error","revisions":["2024-11-05","2025-03-26","2025-06-18","2025-11-25"],"summary":"initialization must be the first interaction: the first message is the client'"'"'s initialize request","checked":true}' \
	"$(grep '"id":"LIFE-001"' "$T/rules.jsonl")"
check_eq "--list-rules -T json: the same ids, severities and checked flags as the table" "" "$(node -e '
const fs = require("fs");
const j = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const t = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").slice(1);
t.forEach((l, i) => {
	const [id, sev] = l.split(/ +/), o = j[i], keys = Object.keys(o).join();
	if (keys !== "id,severity,revisions,summary,checked" || o.id !== id || o.severity !== sev ||
	    o.checked === l.endsWith("[not checked on its own]") || !l.includes(" " + o.summary))
		console.log(l);
});' "$T/rules.jsonl" "$T/rules.txt")"
"$MCPTAP" analyze --list-rules -T sarif > /dev/null 2> "$T/ls.err"
check_eq "--list-rules -T sarif: a usage error" 2 $?
check "--list-rules -T sarif: says so" grep -qx "mcptap: --list-rules prints text or json" "$T/ls.err"

# mcptap help NAME.
"$MCPTAP" help bogus > "$T/h.out" 2> "$T/h.err"
check_eq "help bogus: exit 2" 2 $?
check_eq "help bogus: says so" "mcptap: 'bogus' is not a command; see 'mcptap --help'" "$(cat "$T/h.err")"
check_eq "help bogus: nothing on stdout" "" "$(cat "$T/h.out")"
"$MCPTAP" help analyze > "$T/h.out"
check_eq "help analyze: exit 0" 0 $?
check_eq "help analyze: analyze's help" "$("$MCPTAP" analyze --help)" "$(cat "$T/h.out")"
"$MCPTAP" help > /dev/null
check_eq "help alone: exit 0" 0 $?

finish
