#!/bin/sh
# mcptap report --diff A B: the two sessions side by side, what diff finds
# listed and marked on the arrows, read in headless Chromium.
#
# 1. Fixtures: B answers echo otherwise (changed), lacks A's tools/list
#    (missing) and pings once more (added). Exactly the request and answer
#    arrows of those exchanges are marked, on the side that has them; the
#    list is diff -T json's, each row linking to the arrows.
# 2. Real SDK client runs against server-everything over stdio, one of them
#    through a process that alters echo's answers on the way: only that
#    exchange is marked; a screenshot that is not blank.
# 3. Bad use: -r with --diff, one session, --ignore without --diff.
. "$(dirname "$0")/lib.sh"

command -v chromium > /dev/null || die "chromium is missing (tests/setup.sh test installs it)"
dom() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$1" 2> /dev/null > "$1.dom" &&
		node "$NODEDIR/report-dom.mjs" "$1.dom" > "$2"
}
js() {
	node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$1" "$2"
}
INIT='> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}'
cat > "$T/a.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":1,"method":"tools/list"}
< {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}
> {"jsonrpc":"2.0","id":3,"method":"ping"}
< {"jsonrpc":"2.0","id":3,"result":{}}
FX
cat > "$T/b.fx" <<FX
$INIT
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"HI"}]}}
> {"jsonrpc":"2.0","id":3,"method":"ping"}
< {"jsonrpc":"2.0","id":3,"result":{}}
> {"jsonrpc":"2.0","id":4,"method":"ping"}
< {"jsonrpc":"2.0","id":4,"result":{}}
FX
"$PEERS/fixture-load" "$T/a.fx" "$T/a.db" && "$PEERS/fixture-load" "$T/b.fx" "$T/b.db" || die "cannot load the fixtures"

# ---- 1. fixtures ----
"$MCPTAP" report --diff "$T/a.db" "$T/b.db" -o "$T/d.html" 2> "$T/d.err"
check_eq "report --diff: exit 0, nothing on stderr" "0|" "$?|$(cat "$T/d.err")"
dom "$T/d.html" "$T/d.json"
check_eq "two sessions, A's and B's" "a-1,b-1" "$(js "$T/d.json" 'o.sessions.join(",")')"
check_eq "both sides drawn whole" "$(sql "$T/a.db" "select count(*) from message") $(sql "$T/b.db" "select count(*) from message")" \
	"$(grep -o '<a href="#a-s1-m[0-9]*" class="arrow' "$T/d.html.dom" | wc -l) $(grep -o '<a href="#b-s1-m[0-9]*" class="arrow' "$T/d.html.dom" | wc -l)"
marked() { # marked SIDE: "seq:mark" of the side's marked arrows, in order
	grep -o "<a href=\"#$1-s1-m[0-9]*\" class=\"arrow [^\"]*diff-[a-z]*\"" "$T/d.html.dom" |
		sed 's/.*-m\([0-9]*\)".*diff-\([a-z]*\)"/\1:\2/' | tr '\n' ' '
}
A_LIST=$(sql "$T/a.db" "select seq from message where method = 'tools/list'")
A_ECHO=$(sql "$T/a.db" "select seq from message where method = 'tools/call'")
B_ECHO=$(sql "$T/b.db" "select seq from message where method = 'tools/call'")
B_PING2=$(sql "$T/b.db" "select max(seq) from message where method = 'ping'")
check_eq "A: tools/list missing, echo changed (request and answer)" \
	"$A_LIST:missing $((A_LIST + 1)):missing $A_ECHO:changed $((A_ECHO + 1)):changed " "$(marked a)"
check_eq "B: echo changed, the second ping added" \
	"$B_ECHO:changed $((B_ECHO + 1)):changed $B_PING2:added $((B_PING2 + 1)):added " "$(marked b)"
"$MCPTAP" diff -T json "$T/a.db" "$T/b.db" > "$T/d.diff"
check_eq "the list is diff's: status, exchange, A, B, paths" \
	"$(js "$T/d.diff" 'o.exchanges.map(e => [e.status, e.method + (e.subject ? " " + e.subject : ""), e.a === undefined ? "" : "#" + e.a, e.b === undefined ? "" : "#" + e.b, (e.diffs || []).map(d => d.path).join(", ")].join("|")).join("\n")')" \
	"$(sed -n 's|^<tr class="d-[a-z]*"><td class="[a-z]*">\([a-z]*\)</td><td>\([^<]*\)</td><td>\(<a href="#a-s1-m[0-9]*">\)\{0,1\}\(#[0-9]*\)\{0,1\}\(</a>\)\{0,1\}</td><td>\(<a href="#b-s1-m[0-9]*">\)\{0,1\}\(#[0-9]*\)\{0,1\}\(</a>\)\{0,1\}</td><td>\(.*\)</td></tr>$|\1\|\2\|\4\|\7\|\9|p' "$T/d.html" | sed 's|</\{0,1\}code>||g')"
check_eq "each row links to the arrows' messages, which are there" "yes" \
	"$(js "$T/d.json" 'o.links.includes("#a-s1-m'"$A_ECHO"'") && o.links.includes("#b-s1-m'"$B_PING2"'") ? "yes" : "no"')"
check "A's echo answer opens in its panel" grep -q "id=\"a-s1-m$((A_ECHO + 1))\"" "$T/d.html.dom"
check_eq "every link is a fragment of the page" "" \
	"$(js "$T/d.json" 'o.links.filter(l => !/^#[A-Za-z0-9_-]+$/.test(l) && l !== "url(#ah)").join(" ")')"

# ---- 2. real SDK client runs ----
need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
run() { # run DB [SERVER...]
	_db=$1
	shift
	[ $# -gt 0 ] || set -- node "$ENTRY" stdio
	timeout 120 node "$NODEDIR/http-client.mjs" --transport stdio --log "$_db.jsonl" -- \
		"$MCPTAP" record -w "$_db" -- "$@" > "$_db.out" 2>&1
}
run "$T/s1.db"
check_eq "the SDK client's flow, recorded: exit 0" 0 $?
run "$T/s2.db" sh -c 'node "$1" stdio | sed -u "s/\"text\":\"Echo: /\"text\":\"Echo; /"' sh "$ENTRY"
# (the client's own check of the echo fails, and only that one: the recording is what counts)
check_eq "again, through a process that alters echo's answers: the client sees that alone" \
	"1 tools/call echo" "$(grep -c '^not ok' "$T/s2.db.out") $(grep '^not ok' "$T/s2.db.out" | sed 's/^not ok - \(tools\/call echo\):.*/\1/')"
"$MCPTAP" diff -T json "$T/s1.db" "$T/s2.db" > "$T/s.diff"
"$MCPTAP" report --diff "$T/s1.db" "$T/s2.db" -o "$T/s.html"
check_eq "report --diff: exit 0" 0 $?
dom "$T/s.html" "$T/s.json"
grep -o '<a href="#[ab]-s1-m[0-9]*" class="arrow [^"]*diff-[a-z]*"' "$T/s.html.dom" |
	sed 's/.*#\([ab]\)-s1-m\([0-9]*\)".*diff-\([a-z]*\)"/\1 \2 \3/' > "$T/s.marks"
js "$T/s.diff" 'o.exchanges.flatMap(e => [e.a !== undefined ? "a " + e.a + " " + (e.status === "changed" ? "changed" : "missing") : null, e.b !== undefined ? "b " + e.b + " " + (e.status === "changed" ? "changed" : "added") : null]).filter(Boolean).join("\n")' |
	while read -r side seq how; do
		db=$T/s1.db
		[ "$side" = b ] && db=$T/s2.db
		echo "$side $seq $how"
		for q in $(sql "$db" "select seq from message where request_seq = $seq and kind in ('response', 'error')"); do
			echo "$side $q $how"
		done
	done | sort > "$T/s.want"
check_eq "the echo exchange is the one diff reports (beside the task's time stamps)" "changed tools/call echo" \
	"$(js "$T/s.diff" 'o.exchanges.filter(e => !/task|Time|At/.test(JSON.stringify(e.diffs || []))).map(e => e.status + " " + e.method + " " + e.subject).join(",")')"
check_eq "exactly the requests and answers of what diff reports are marked, each side" \
	"$(cat "$T/s.want")" "$(sort "$T/s.marks")"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,2400 \
	--screenshot="$T/s.png" "file://$T/s.html" > /dev/null 2>&1
set -- $(node "$NODEDIR/png-stats.mjs" "$T/s.png")
echo "# the screenshot: ${1}x$2, $3 colours, $4 pixels in a thousand not white"
check "not blank" test "$3" -ge 50 -a "$4" -ge 20

# ---- 3. bad use ----
"$MCPTAP" report --diff -r "$T/a.db" "$T/a.db" "$T/b.db" -o "$T/x.html" 2> "$T/e1"
check_eq "-r with --diff: exit 2, said" "2 1" "$? $(grep -c 'not -r, -s or -Y' "$T/e1")"
"$MCPTAP" report --diff "$T/a.db" -o "$T/x.html" 2> "$T/e2"
check_eq "one session: exit 2, said" "2 1" "$? $(grep -c 'needs two sessions' "$T/e2")"
"$MCPTAP" report -r "$T/a.db" --ignore result -o "$T/x.html" 2> "$T/e3"
check_eq "--ignore without --diff: exit 2, said" "2 1" "$? $(grep -c 'are for --diff' "$T/e3")"
"$MCPTAP" report --diff "$T/a.db" "$T/none.db" -o "$T/x.html" 2> "$T/e4"
check_eq "a missing capture: exit 2" 2 $?
check "no file written for any of them" test ! -e "$T/x.html"
finish
