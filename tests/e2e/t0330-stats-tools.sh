#!/bin/sh
# stats, show and the capture file's views on a recorded session whose tool
# calls end every way: a result, a result with isError, a JSON-RPC error, a
# cancel (one answered after it, one never), and no answer at all. A perl
# client drives `mcptap record` in front of a perl server, waiting for each
# answer, so that the seqs are the same every run (tests/peers/tools-*.pl).
. "$(dirname "$0")/lib.sh"

perl "$PEERS/tools-client.pl" "$MCPTAP" "$T/t.db" "$PEERS/tools-server.pl"
check_eq "the client's session ran" 0 $?
DB=$T/t.db

# The views, as users query them.
check_eq "tool_call: each call with its tool, outcome and error code" "4|2|echo|result|
6|3|fail|isError|
8|4|boom|error|-32602
10|5|slow|cancelled|
13|6|hang|unanswered|
18|9|echo|result|
22|11|slow|cancelled|" "$(sql "$DB" "select request_seq, id, tool, outcome, error_code from tool_call where session = 1 order by request_seq")"
check_eq "tool_call: a latency where an answer came (after the cancel too)" "4|1
6|1
8|1
10|1
13|0
18|1
22|0" "$(sql "$DB" "select request_seq, latency_ns > 0 from tool_call order by request_seq" | sed 's/|$/|0/')"
check_eq "exchange: outcome, answer and cancel of each request" "1|initialize|2|response||
4|tools/call|5|response||
6|tools/call|7|response||
8|tools/call|9|error|-32602|
10|tools/call|12|cancelled||11
13|tools/call||||
14|prompts/get|15|response||
16|resources/read|17|error|-32002|
18|tools/call|19|response||
20|ping|21|response||
22|tools/call||cancelled||23" "$(sql "$DB" "select request_seq, method, response_seq, outcome, error_code, cancel_seq from exchange order by request_seq")"
check_eq "method_stats: requests, errors, cancelled, unanswered" "initialize|1|0|0|0
ping|1|0|0|0
prompts/get|1|0|0|0
resources/read|1|1|0|0
tools/call|7|1|2|1" "$(sql "$DB" "select method, requests, errors, cancelled, unanswered from method_stats order by method")"

# stats as text: every count exactly (the four latency columns vary).
"$MCPTAP" stats -r "$DB" > "$T/stats.txt"
check_eq "stats: exit 0" 0 $?
check_eq "stats: the methods, then each tool, prompt and resource" "session 1
DIR  METHOD                           REQUESTS  ERRORS ISERROR CANCELLED UNANSWERED
c→s  initialize                              1       0       -         0          0
c→s  ping                                    1       0       -         0          0
c→s  prompts/get                             1       0       -         0          0
c→s    greet                                 1       0       -         0          0
c→s  resources/read                          1       1       -         0          0
c→s    file:///a                             1       1       -         0          0
c→s  tools/call                              7       1       1         2          1
c→s    boom                                  1       1       0         0          0
c→s    echo                                  2       0       0         0          0
c→s    fail                                  1       0       1         0          0
c→s    hang                                  1       0       0         0          1
c→s    slow                                  2       0       0         2          0
never answered:
  #13 c→s tools/call hang" "$(sed -E -e '1s/:.*//' -e '2,/^never/{/^never/!s/( +[^ ]+){4}$//;}' "$T/stats.txt")"
check "stats: the header line's counts" grep -qx "session 1: [0-9.]*ms, 14 messages c→s (1185 bytes), 9 s→c (699 bytes), 0 stderr lines" "$T/stats.txt"
check_eq "stats: no latency for what was never answered" "- - - -
- - - -" "$(grep -E '^c→s +(hang|slow) ' "$T/stats.txt" | awk '{print $(NF-3), $(NF-2), $(NF-1), $NF}')"

# stats -T json: one line; the counts, and latencies that agree with the view.
"$MCPTAP" stats -r "$DB" -T json > "$T/stats.json"
check_eq "stats -T json: one line" 1 "$(wc -l < "$T/stats.json" | tr -d ' ')"
sql "$DB" "select coalesce(t.tool, e.method), e.latency_ns from exchange e left join tool_call t using (session, request_seq) where e.outcome in ('response', 'error') order by 1, 2" > "$T/lat.txt"
check "stats -T json: every count, and the latencies of the answers" node -e '
const fs = require("fs");
const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const lat = {};
for (const l of fs.readFileSync(process.argv[2], "utf8").trim().split("\n")) {
	const [k, v] = l.split("|");
	(lat[k] = lat[k] || []).push(Number(v));
}
const fail = (m) => { console.error(m); process.exit(1); };
const eq = (a, b, what) => { if (JSON.stringify(a) !== JSON.stringify(b)) fail(what + ": " + JSON.stringify(a) + " != " + JSON.stringify(b)); };
eq([s.session, s.messages, s.bytes, s.notifications, s.not_jsonrpc, s.stderr_lines],
   [1, {c2s: 14, s2c: 9}, {c2s: 1185, s2c: 699}, {c2s: 3, s2c: 0}, {c2s: 0, s2c: 0}, 0], "totals");
const counts = (r) => [r.requests, r.errors, r.is_error, r.answered, r.unanswered, r.cancelled];
eq(s.methods.map((m) => [m.dir, m.method, ...counts(m), (m.names || []).map((n) => [n.name, ...counts(n)])]), [
	["c2s", "initialize", 1, 0, undefined, 1, 0, 0, []],
	["c2s", "ping", 1, 0, undefined, 1, 0, 0, []],
	["c2s", "prompts/get", 1, 0, undefined, 1, 0, 0, [["greet", 1, 0, undefined, 1, 0, 0]]],
	["c2s", "resources/read", 1, 1, undefined, 1, 0, 0, [["file:///a", 1, 1, undefined, 1, 0, 0]]],
	["c2s", "tools/call", 7, 1, 1, 4, 1, 2, [
		["boom", 1, 1, 0, 1, 0, 0], ["echo", 2, 0, 0, 2, 0, 0], ["fail", 1, 0, 1, 1, 0, 0],
		["hang", 1, 0, 0, 0, 1, 0], ["slow", 2, 0, 0, 0, 0, 2]]],
].map((m) => JSON.parse(JSON.stringify(m))), "rows");
eq(s.unanswered, [{seq: 13, dir: "c2s", method: "tools/call", name: "hang"}], "unanswered");
// One or two answers: nearest rank gives the exact values (min and max).
// (The view names tools only: a prompt or a resource has its method'"'"'s latencies.)
const rows = [...s.methods.map((m) => [m, m.method]),
	...s.methods.flatMap((m) => (m.names || []).map((n) => [n, m.method === "tools/call" ? n.name : m.method]))];
for (const [r, k] of rows) {
	const v = lat[k];
	if (r.method === "tools/call") continue;
	if (!v) { if ("p50_ns" in r) fail(k + ": latencies without answers"); continue; }
	eq([r.min_ns, r.p50_ns, r.p95_ns, r.p99_ns, r.max_ns], [v[0], v[0], v[v.length - 1], v[v.length - 1], v[v.length - 1]], k);
}
// tools/call: four answers; p50 is the second, within 1%.
const t = s.methods.find((m) => m.method === "tools/call"), all = ["boom", "echo", "fail"].flatMap((k) => lat[k]).sort((a, b) => a - b);
eq([t.min_ns, t.p95_ns, t.p99_ns, t.max_ns], [all[0], all[3], all[3], all[3]], "tools/call");
if (Math.abs(t.p50_ns - all[1]) > all[1] / 100) fail("tools/call p50 " + t.p50_ns + " vs " + all[1]);
' "$T/stats.json" "$T/lat.txt"

# show names the tool, prompt or resource on requests and their answers.
"$MCPTAP" show -r "$DB" > "$T/show.txt"
check_eq "show: the method column names what was called" "request 2 tools/call echo
response 2 tools/call echo
request 3 tools/call fail
response 3 tools/call fail
request 4 tools/call boom
error 4 tools/call boom
request 5 tools/call slow
response 5 tools/call slow
request 6 tools/call hang
request 7 prompts/get greet
response 7 prompts/get greet
request 8 resources/read file:///a
error 8 resources/read file:///a" "$(awk '$6 ~ /^(tools|prompts|resources)\// {print $4, $5, $6, $7}' "$T/show.txt" | sed -n 1,13p)"
check_eq "show -T json: the method alone, one line per item" "23 tools/call" \
	"$("$MCPTAP" show -r "$DB" -T json | node -e '
const l = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
console.log(l.length, l.find((m) => m.seq === 4).method)')"

finish
