#!/bin/sh
# stats on sessions made for it (tests/peers/fixture-load): percentiles from
# its histogram within 1% of the exact ones over latencies from 1 ms to 10 s,
# count, min and max exact; the names of a method past 256 counted together;
# sessions with no request, or with nothing answered.
. "$(dirname "$0")/lib.sh"

# 100 pings answered after i*i ms (i = 1..100): each item is 1 ms after the
# last, "@t +N" adds N ms.
awk 'BEGIN { for (i = 1; i <= 100; i++) {
	print "> {\"jsonrpc\":\"2.0\",\"id\":" i ",\"method\":\"ping\"}"
	if (i * i > 1) print "@t +" (i * i - 1)
	print "< {\"jsonrpc\":\"2.0\",\"id\":" i ",\"result\":{}}" } }' > "$T/lat.fx"
"$PEERS/fixture-load" "$T/lat.fx" "$T/lat.db"
check_eq "the latencies as stored" "100|1000000|10000000000" "$(sql "$T/lat.db" "select count(*), min(latency_ns), max(latency_ns) from exchange")"
"$MCPTAP" stats -r "$T/lat.db" -T json > "$T/lat.json"
check "percentiles within 1%; count, min and max exact" node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const m = s.methods[0], ms = 1e6;
const exact = {p50_ns: 50 * 50 * ms, p95_ns: 95 * 95 * ms, p99_ns: 99 * 99 * ms};
if (m.method !== "ping" || m.requests !== 100 || m.answered !== 100 || m.min_ns !== ms || m.max_ns !== 10000 * ms) process.exit(1);
for (const k in exact)
	if (Math.abs(m[k] - exact[k]) > exact[k] / 100) { console.error(k, m[k], exact[k]); process.exit(1); }' "$T/lat.json"
"$MCPTAP" stats -r "$T/lat.db" > "$T/lat.txt"
check "stats: the text row" grep -Eq '^c→s  ping +100 +0 +- +0 +0 +2\.[45][0-9]s +9\.[01][0-9]s +9\.[78][0-9]s +10\.00s$' "$T/lat.txt"

# 300 resources read by distinct uris: 256 rows of their own, then one for the rest.
awk 'BEGIN { for (i = 1; i <= 300; i++) {
	print "> {\"jsonrpc\":\"2.0\",\"id\":" i ",\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///r/" 1000 + i "\"}}"
	if (i % 3) print "< {\"jsonrpc\":\"2.0\",\"id\":" i ",\"result\":{\"contents\":[]}}" } }' > "$T/names.fx"
"$PEERS/fixture-load" "$T/names.fx" "$T/names.db"
"$MCPTAP" stats -r "$T/names.db" -T json > "$T/names.json"
check "names past 256: one row for the rest" node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const m = s.methods[0], n = m.names, last = n[n.length - 1];
const want = [m.requests === 300, m.answered === 200, m.unanswered === 100, n.length === 257,
	n[0].name === "file:///r/1001", n[255].name === "file:///r/1256",
	last.name === null && last.other === true && last.requests === 44 && last.unanswered === 15,
	n.reduce((a, r) => a + r.requests, 0) === 300, s.unanswered.length === 100,
	s.unanswered[0].seq === 5 && s.unanswered[0].name === "file:///r/1003",
	s.unanswered[99].name === undefined];
if (want.includes(false)) { console.error(want); process.exit(1); }' "$T/names.json"
"$MCPTAP" stats -r "$T/names.db" > "$T/names.txt"
check "names past 256 as text" grep -Eq '^c→s    \(other names\) +44 +0 +- +0 +15 ' "$T/names.txt"
check_eq "never answered: 100, with their names where kept" "101|  #425 c→s resources/read file:///r/1255|  #500 c→s resources/read" \
	"$(sed -n '/^never answered:/,$p' "$T/names.txt" | wc -l | tr -d ' ')|$(grep '^  #425 ' "$T/names.txt")|$(tail -n 1 "$T/names.txt")"

# No request at all; a request never answered: every count, nothing else.
printf '> {"jsonrpc":"2.0","method":"notifications/initialized"}\n! just a line\n< not json\n' > "$T/none.fx"
"$PEERS/fixture-load" "$T/none.fx" "$T/none.db"
check_eq "no request: the totals, an empty table" "session 1: 0 requests
DIR  METHOD                           REQUESTS  ERRORS ISERROR CANCELLED UNANSWERED       P50       P95       P99       MAX
not JSON-RPC: 0 lines c→s, 1 s→c" "$("$MCPTAP" stats -r "$T/none.db" | sed '1s/:.*/: 0 requests/')"
check_eq "no request, as JSON" '[] [] 1 {"c2s":1,"s2c":0}' "$("$MCPTAP" stats -r "$T/none.db" -T json | node -e '
const s = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(s.methods), JSON.stringify(s.unanswered), s.stderr_lines, JSON.stringify(s.notifications))')"
printf '> {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t"}}\n' > "$T/open.fx"
"$PEERS/fixture-load" "$T/open.fx" "$T/open.db"
check_eq "only a request never answered" "c→s  tools/call                              1       0       0         0          1         -         -         -         -
c→s    t                                     1       0       0         0          1         -         -         -         -
never answered:
  #1 c→s tools/call t" "$("$MCPTAP" stats -r "$T/open.db" | sed 1,2d)"
check_eq "only a request never answered, as JSON" '{"name":"t","requests":1,"errors":0,"is_error":0,"answered":0,"unanswered":1,"cancelled":0} [{"seq":1,"dir":"c2s","method":"tools/call","name":"t"}]' \
	"$("$MCPTAP" stats -r "$T/open.db" -T json | node -e '
const s = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(s.methods[0].names[0]), JSON.stringify(s.unanswered))')"

finish
