#!/bin/sh
# mcptap report: one self-contained HTML file, read as a person reads it: in
# headless Chromium (Debian's), its DOM taken apart by tests/node/report-dom.mjs
# and a screenshot checked for content.
#
# 1. A fixture with what a diagram must show: requests, answers, an error, a
#    notification, a stderr line, a gap, an answer to no request, and text
#    that is HTML (escaped, never markup). One arrow per message, in seq
#    order, each opening its message as show --seq prints it; the findings of
#    analyze, each with a dot on its row; the per-method figures of stats.
# 2. Nothing from elsewhere: every href is a fragment of the page, no src,
#    url() only of the page's own marker.
# 3. -Y draws the messages show -Y prints; the summary stays the session's.
#    A long session: the first page of the diagram is HTML, the later ones
#    are made when opened or when a link leads into them.
# 4. A real SDK client session (server-everything over stdio, through the tap):
#    one arrow per stored message, the findings of analyze; a screenshot that
#    is not blank.
# 5. Bad input: no capture, a bad filter, a file that is not a capture.
. "$(dirname "$0")/lib.sh"

command -v chromium > /dev/null || die "chromium is missing (tests/setup.sh test installs it)"
dom() { # dom HTML OUT: the DOM Chromium makes of HTML, taken apart
	timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$1" 2> /dev/null > "$1.dom" &&
		node "$NODEDIR/report-dom.mjs" "$1.dom" > "$2"
}
js() { # js FILE EXPR: EXPR of the JSON object in FILE (as o)
	node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$1" "$2"
}

# ---- 1. the fixture ----
"$PEERS/fixture-load" "$TOP/tests/fixtures/report-basic.fx" "$T/f.db" || die "cannot load the fixture"
"$MCPTAP" report -r "$T/f.db" -o "$T/f.html" 2> "$T/f.err"
check_eq "report: exit 0, nothing on stderr" "0|" "$?|$(cat "$T/f.err")"
dom "$T/f.html" "$T/f.json"
check_eq "Chromium reads it: one session" 1 "$(js "$T/f.json" 'o.sessions.join(",")')"
check_eq "one arrow per message, in seq order" \
	"$(sql "$T/f.db" "select group_concat(seq, ',') from (select seq from message order by seq)")" \
	"$(js "$T/f.json" 'o.arrows[1].map(a => a[0]).join(",")')"
check_eq "each arrow's kind and direction" \
	"k-request d-c2s,k-response d-s2c,k-notification d-c2s,k-request d-c2s,k-notification d-s2c,k-response d-s2c,k-request d-c2s,k-error d-s2c,k-response d-s2c,k-response d-s2c,k-request d-c2s,k-response d-s2c" \
	"$(js "$T/f.json" 'o.arrows[1].map(a => a[1]).join(",")')"
check_eq "the stderr line and the gap where they fell" "1 1" "$(js "$T/f.json" 'o.stderr[1] + " " + o.gaps[1]')"
"$MCPTAP" analyze -r "$T/f.db" -T json > "$T/f.analyze"
check_eq "the findings are analyze's: rule, severity, message" \
	"$(js "$T/f.analyze" 'o.sessions[0].findings.map(f => [f.rule, f.severity, f.seq || 0].join(" ")).join(",")')" \
	"$(js "$T/f.json" 'o.findings[1].map(f => f.join(" ")).join(",")')"
check_eq "which are CAP-007, TAP-001 (the gap) and RPC-004" "CAP-007 error 6,TAP-001 warning 10,RPC-004 error 12" \
	"$(js "$T/f.json" 'o.findings[1].map(f => f.join(" ")).join(",")')"
check_eq "a dot on the row of each, linking to it" "1,2,3" "$(js "$T/f.json" 'o.marks[1].join(",")')"
: > "$T/f.panels"
for seq in $(sql "$T/f.db" "select seq from message order by seq"); do
	"$MCPTAP" show -r "$T/f.db" --seq "$seq" | sed -n '2,$s/^    //p' > "$T/want"
	js "$T/f.json" "o.panels['1/$seq']" > "$T/got"
	cmp -s "$T/want" "$T/got" || echo "$seq" >> "$T/f.panels"
done
check_eq "each arrow opens its message, as show --seq prints it" "" "$(cat "$T/f.panels")"
check "HTML in a message is text, never markup" grep -q '&lt;script&gt;alert(1)&lt;/script&gt; 0.1' "$T/f.html"
check_eq "one script, inline, at the end; no other" "<script>(function(){" \
	"$(grep -o '<script[^>]*>.\{0,12\}' "$T/f.html")"
"$MCPTAP" stats -r "$T/f.db" -T json > "$T/f.stats"
check_eq "the requests table: stats's methods and tools, with their counts" \
	"$(js "$T/f.stats" 'o.methods.flatMap(m => [m.method + " " + m.requests + " " + m.errors].concat((m.names || []).map(n => n.name + " " + n.requests + " " + n.errors))).join(",")')" \
	"$(sed -n 's|^<tr class="[a-z]*"><td>[^<]*</td><td>\([^<]*\)</td><td>\([0-9]*\)</td><td>\([0-9]*\)</td>.*|\1 \2 \3|p' "$T/f.html" | tr '\n' ',' | sed 's/,$//')"
check_eq "errors by code: -32602 once" "-32602 invalid params 1" \
	"$(sed -n 's|^<tr><td>\(-[0-9]*\)</td><td>\([^<]*\)</td><td>\([0-9]*\)</td></tr>$|\1 \2 \3|p' "$T/f.html")"

# ---- 2. nothing from elsewhere ----
check_eq "every link is a fragment of the page; url() only of its own marker" "" \
	"$(js "$T/f.json" 'o.links.filter(l => !/^#[A-Za-z0-9_-]+$/.test(l) && l !== "url(#ah)").join(" ")')"
check_eq "and the page has such links: arrows, findings, rules" yes \
	"$(js "$T/f.json" 'o.links.includes("#s1-m5") && o.links.includes("#s1-f1") && o.links.includes("#rule-CAP-007") ? "yes" : "no"')"

# ---- 3. -Y ----
"$MCPTAP" report -r "$T/f.db" -Y 'tool == echo' -o "$T/y.html"
check_eq "report -Y: exit 0" 0 $?
dom "$T/y.html" "$T/y.json"
check_eq "the arrows of the messages show -Y prints" \
	"$("$MCPTAP" show -r "$T/f.db" -Y 'tool == echo' -T json | sed -n 's/^{"session":1,"seq":\([0-9]*\),.*/\1/p' | tr '\n' ',' | sed 's/,$//')" \
	"$(js "$T/y.json" 'o.arrows[1].map(a => a[0]).join(",")')"
check_eq "the findings are still the session's" 3 "$(js "$T/y.json" 'o.findings[1].length')"

# ---- 3b. a session of several pages ----
# The first page is HTML; the others are HTML kept as text until opened, or
# until a link leads into them (the one script).
sh "$BENCH/gen-session.sh" 1200 | "$PEERS/fixture-load" /dev/stdin "$T/l.db" || die "cannot make the long session"
"$MCPTAP" report -r "$T/l.db" -o "$T/l.html"
check_eq "report of 1200 messages: exit 0" 0 $?
dom "$T/l.html" "$T/l.json"
check_eq "opened: the first page's 500 arrows, #1 to #500" "500 1 500" \
	"$(js "$T/l.json" 'o.arrows[1].length + " " + o.arrows[1][0][0] + " " + o.arrows[1][499][0]')"
check_eq "three pages, the later two kept as text" "3 2" \
	"$(grep -c '<details class="page' "$T/l.html") $(grep -c '<script type="application/json" class="page-html">' "$T/l.html")"
timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$T/l.html#s1-m1100" 2> /dev/null > "$T/l2.dom"
node "$NODEDIR/report-dom.mjs" "$T/l2.dom" > "$T/l2.json"
check_eq "a link to #1100: its page is made, and its message is there" "700 1001 1200 yes" \
	"$(js "$T/l2.json" 'const a = o.arrows[1]; a.length + " " + a[500][0] + " " + a[699][0] + " " + ("1/1100" in o.panels ? "yes" : "no")')"
"$MCPTAP" show -r "$T/l.db" --seq 1100 | sed -n '2,$s/^    //p' > "$T/want"
js "$T/l2.json" "o.panels['1/1100']" > "$T/got"
check "the message as show --seq prints it" cmp "$T/want" "$T/got"

# ---- 4. a real SDK client session ----
need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
timeout 100 node "$NODEDIR/http-client.mjs" --transport stdio --log "$T/s.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio > "$T/s.out" 2> "$T/s.err"
check_eq "the SDK client's full flow through the tap: exit 0" 0 $?
"$MCPTAP" report -r "$T/s.db" -o "$T/s.html"
check_eq "report: exit 0" 0 $?
dom "$T/s.html" "$T/s.json"
N=$(sql "$T/s.db" "select count(*) from message")
echo "# the SDK session: $N messages, $(wc -c < "$T/s.html") bytes of HTML"
check_eq "one arrow per stored message" \
	"$(sql "$T/s.db" "select group_concat(seq, ',') from (select seq from message order by seq)")" \
	"$(js "$T/s.json" 'o.arrows[1].map(a => a[0]).join(",")')"
check "more than 40 of them" test "$N" -gt 40
"$MCPTAP" analyze -r "$T/s.db" -T json > "$T/s.analyze"
check_eq "the findings of analyze" \
	"$(js "$T/s.analyze" 'o.sessions[0].findings.map(f => [f.rule, f.severity, f.seq || 0].join(" ")).join(",")')" \
	"$(js "$T/s.json" 'o.findings[1].map(f => f.join(" ")).join(",")')"
check_eq "as many stderr boxes as stderr lines" "$(sql "$T/s.db" "select count(*) from stderr_line")" \
	"$(js "$T/s.json" 'o.stderr[1]')"
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2400 \
	--screenshot="$T/s.png" "file://$T/s.html" > /dev/null 2>&1
check "a screenshot is made" test -s "$T/s.png"
set -- $(node "$NODEDIR/png-stats.mjs" "$T/s.png")
echo "# the screenshot: ${1}x$2, $3 colours, $4 pixels in a thousand not white"
check_eq "of the window's size" "1280x2400" "${1}x$2"
check "not blank: text, tables and the diagram's colours" test "$3" -ge 50 -a "$4" -ge 20

# ---- 5. bad input ----
"$MCPTAP" report -r "$T/none.db" -o "$T/x.html" 2> "$T/e1"
check_eq "a missing capture: exit 2" 2 $?
check "said" grep -q "none.db" "$T/e1"
check "and no file written" test ! -e "$T/x.html"
"$MCPTAP" report -r "$T/f.db" -Y 'tool ==' -o "$T/x.html" 2> "$T/e2"
check_eq "a bad filter: exit 2, the caret" "2 1" "$? $(grep -c '\^' "$T/e2")"
printf 'not a capture\n' > "$T/bad.db"
"$MCPTAP" report -r "$T/bad.db" -o "$T/x.html" 2> "$T/e3"
check_eq "a file that is not a capture: exit 2" 2 $?
check "and no file written" test ! -e "$T/x.html"
finish
