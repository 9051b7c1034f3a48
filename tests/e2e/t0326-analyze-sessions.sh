#!/bin/sh
# Every command takes the same -s: an id, a comma-separated list of ids and
# ranges, or all. analyze checks every session unless told (it checked only the
# newest: a capture of three clients said "0 errors" while session 1 had some),
# ends its text with the run's totals and a per-rule summary, and caps repeats
# with --max-per-rule (every finding still counted, stored and in the exit
# status). show and stats print each session named in turn.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load
DB=$T/s.db

# Session 1: RPC-001 four times (messages not JSON-RPC 2.0); session 2: clean;
# session 3: RPC-001 once.
hs='> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}'
bad='> {"jsonrpc":"1.0","method":"notifications/x"}'
{ echo "$hs"; for i in 1 2 3 4; do echo "$bad"; done; } > "$T/one.fx"
{ echo "$hs"; echo '> {"jsonrpc":"2.0","id":1,"method":"tools/list"}'; echo '< {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'; } > "$T/two.fx"
{ echo "$hs"; echo "$bad"; } > "$T/three.fx"
for f in one two three; do "$LOAD" "$T/$f.fx" "$DB" || die "cannot load $f"; done

"$MCPTAP" analyze -r "$DB" --no-store > "$T/all.txt" 2> "$T/all.err"
check_eq "analyze with no -s: findings, exit 1" 1 $?
check_eq "analyze with no -s: every session, then the totals and the rules" \
"session 1 #4 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 1 #5 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 1 #6 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 1 #7 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 1: 4 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)
session 2: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)
session 3 #4 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 3: 1 error, 0 warnings, 0 info (checked against 2025-06-18, negotiated)
3 sessions: 5 errors, 0 warnings, 0 info
by rule:
  RPC-001 ×5, first at session 1 #4" "$(cat "$T/all.txt")"
check_eq "analyze with no -s: nothing on stderr" "" "$(cat "$T/all.err")"
for s in all 1-3 1,2,3 3,1-2 1-2,2-3; do
	"$MCPTAP" analyze -r "$DB" --no-store -s "$s" > "$T/s.txt" 2>&1
	check "-s $s: the same report" cmp -s "$T/all.txt" "$T/s.txt"
done
"$MCPTAP" analyze -r "$DB" --no-store --all > "$T/s.txt" 2>&1
check "--all: the same report" cmp -s "$T/all.txt" "$T/s.txt"

"$MCPTAP" analyze -r "$DB" --no-store -s 2 > "$T/two.txt"
check_eq "-s 2: that session alone, clean, exit 0" "0|session 2: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)" \
	"$?|$(cat "$T/two.txt")"
"$MCPTAP" analyze -r "$DB" --no-store -s 2-3 -T json > "$T/r.json"
check_eq "-s 2-3 -T json: sessions 2 and 3, counts and the rules" '[2,3] [0,1] [{"rule":"RPC-001","count":1,"shown":1,"first":{"session":3,"seq":4}}]' \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
		console.log(JSON.stringify(r.sessions.map((s) => s.session)), JSON.stringify(r.sessions.map((s) => s.counts.error)), JSON.stringify(r.by_rule))' "$T/r.json")"

# --max-per-rule: at most N of each rule shown, in every format; all counted.
"$MCPTAP" analyze -r "$DB" --no-store --max-per-rule 2 > "$T/cap.txt"
check_eq "--max-per-rule 2: still exit 1" 1 $?
check_eq "--max-per-rule 2: 2 findings of RPC-001 shown, the rest counted" \
"session 1 #4 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 1 #5 c→s: RPC-001 error: c→s message is JSON but not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\" (MCP-RULES §4, 2025-06-18)
session 1: 4 errors, 0 warnings, 0 info (2 not shown: --max-per-rule 2) (checked against 2025-06-18, negotiated)
session 2: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)
session 3: 1 error, 0 warnings, 0 info (1 not shown: --max-per-rule 2) (checked against 2025-06-18, negotiated)
3 sessions: 5 errors, 0 warnings, 0 info
by rule:
  RPC-001 ×5, first at session 1 #4 (3 not shown)" "$(cat "$T/cap.txt")"
"$MCPTAP" analyze -r "$DB" --no-store --max-per-rule 2 -T json > "$T/cap.json"
check_eq "--max-per-rule 2 -T json: 2 findings listed, 5 counted, 3 not shown" '2 5 3 {"rule":"RPC-001","count":5,"shown":2,"first":{"session":1,"seq":4}}' \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
		let n = 0, c = 0, h = 0; for (const s of r.sessions) { n += s.findings.length; c += s.counts.error; h += s.not_shown; }
		console.log(n, c, h, JSON.stringify(r.by_rule[0]))' "$T/cap.json")"
for fmt in sarif junit; do
	"$MCPTAP" analyze -r "$DB" --no-store --max-per-rule 1 -T $fmt > "$T/cap.$fmt"
	check_eq "--max-per-rule 1 -T $fmt: exit 1" 1 $?
done
check_eq "--max-per-rule 1 -T sarif: one result" 1 \
	"$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(r.runs[0].results.length)' "$T/cap.sarif")"
check_eq "--max-per-rule 1 -T junit: one failure" 1 "$(grep -c '<failure' "$T/cap.junit")"
"$MCPTAP" analyze -r "$DB" --max-per-rule 1 > /dev/null
check_eq "--max-per-rule: every finding stored in the file" 5 \
	"$(sql "$DB" "select count(*) from latest_finding where rule = 'RPC-001'")"

# Bad lists: usage errors before the file is read; names that are not there: errors.
for s in "" 0 x 1-x 3-1 1,,2 -2 1-; do
	"$MCPTAP" analyze -r "$DB" --no-store -s "$s" > /dev/null 2> "$T/bad.err"
	check_eq "-s '$s': a usage error" "2|mcptap: bad session list '$s'" \
		"$?|$(head -n 1 "$T/bad.err" | sed 's/: [^:]*$//')"
done
"$MCPTAP" analyze -r "$DB" --no-store -s 2,9 > /dev/null 2> "$T/bad.err"
check_eq "-s 2,9: no session 9" "2|mcptap: '$DB': no session 9" "$?|$(cat "$T/bad.err")"
"$MCPTAP" stats -r "$DB" -s 7-9 > /dev/null 2> "$T/bad.err"
check_eq "stats -s 7-9: none in it" "2|mcptap: '$DB': no session in 7-9" "$?|$(cat "$T/bad.err")"
"$MCPTAP" analyze -r "$DB" --no-store -s 1 --all > /dev/null 2> "$T/bad.err"
check_eq "-s with --all: a usage error" 2 $?

# show and stats: one session by default (the newest), a list in turn.
check_eq "show: the newest by default, no heading" "$("$MCPTAP" show -r "$DB" -s 3)" "$("$MCPTAP" show -r "$DB")"
"$MCPTAP" show -r "$DB" -s 1,3 --full > "$T/show.txt"
check_eq "show -s 1,3: each under its heading" "session 1|7|session 3|4" \
	"$(awk '/^session /{if (h) printf "%s|%d|", h, n; h = $0; n = 0; next} /^$/{next} {n++} END {printf "%s|%d", h, n}' "$T/show.txt")"
check_eq "show -s 1,3 -T json: the lines of both, each naming its session" "1 7
3 4" "$("$MCPTAP" show -r "$DB" -s 3,1 -T json | node -e 'const c = {}; for (const l of require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)) { const s = JSON.parse(l).session; c[s] = (c[s] || 0) + 1 } for (const k of Object.keys(c)) console.log(k, c[k])')"
check_eq "stats -s all -T json: a line per session" "1 6 1
2 3 2
3 3 1" "$("$MCPTAP" stats -r "$DB" -s all -T json | node -e 'for (const l of require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)) { const s = JSON.parse(l); console.log(s.session, s.messages.c2s, s.messages.s2c) }')"
check_eq "stats -s 2,3: two reports, a blank line between" 2 \
	"$("$MCPTAP" stats -r "$DB" -s 2,3 | grep -c '^session [23]: ')"

# sessions: every one by default, or those -s names.
check_eq "sessions: every session by default" "1 2 3" \
	"$("$MCPTAP" sessions -r "$DB" -T json | node -e 'console.log(require("fs").readFileSync(0, "utf8").trim().split("\n").map((l) => JSON.parse(l).id).join(" "))')"
check_eq "sessions -s 3,1-1: those named, in the file's order" "1 3" \
	"$("$MCPTAP" sessions -r "$DB" -s 3,1-1 -T json | node -e 'console.log(require("fs").readFileSync(0, "utf8").trim().split("\n").map((l) => JSON.parse(l).id).join(" "))')"
check_eq "sessions -s 2, as text: the heading and one row" "2|   2" \
	"$("$MCPTAP" sessions -r "$DB" -s 2 | wc -l | tr -d ' ')|$("$MCPTAP" sessions -r "$DB" -s 2 | sed -n 2p | cut -c1-4)"
"$MCPTAP" sessions -r "$DB" -s 4 > /dev/null 2> "$T/bad.err"
check_eq "sessions -s 4: no such session" "2|mcptap: '$DB': no session 4" "$?|$(cat "$T/bad.err")"

# replay: one session, but for the HTTP mock.
"$MCPTAP" replay -r "$DB" -s 1-2 --as server < /dev/null > /dev/null 2> "$T/bad.err"
check_eq "replay --as server -s 1-2 on stdio: a usage error" "2|mcptap: -s with more than one session is for --as server --listen (each client's session a run of one of them)" \
	"$?|$(head -n 1 "$T/bad.err")"
finish
