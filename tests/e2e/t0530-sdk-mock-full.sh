#!/bin/sh
# t0530-sdk-mock-full: the official SDK client against the mock of its own
# recording, with the whole flow of tests/node/flows.mjs ("full": progress, a
# cancelled call, sampling, roots, a task whose clarification comes as an
# elicitation through tasks/result, a URL elicitation, subscriptions, logging...).
#
# - 10 runs in a row against `mcptap replay --as server` (default timing) pass,
#   with every progress notification firing the SDK's progress callback
#   (--all-progress), every notification handled before the answer it came
#   before, the same results as recorded, and a --report saying no misses;
# - --timing none (everything at once) is run once and what the client saw is
#   printed, not checked: it shows the loss the default timing avoids;
# - a client without sampling and roots gets neither request, and the mock's
#   report and summary list them as skipped;
# - a recorded 10 s call with 5 progress steps replays in under 5 s.
# e2e: long
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/sdk-client.mjs

# (The server runs with a bare environment: its get-env tool dumps it, and a
# credential in the machine's environment would be stored redacted, rightly,
# so that the mock's answer could not equal the live one.)
timeout 120 node "$CLIENT" --flow full --log "$T/rec.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- env -i PATH="$PATH" HOME="$HOME" node "$ENTRY" stdio 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rec.err"
check_eq "recorded the full flow against server-everything" 0 $rc

# The number of requests the client sent (each run sends the same ones).
NREQ=$(node -e '
const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
console.log(l.filter((r) => r.dir === "c2s" && r.message.method && r.message.id !== undefined).length)' "$T/rec.jsonl")
echo "# the full flow sends $NREQ requests"

# same_results REC REP: every answer the client got equals the recorded one.
same_results() {
	node -e '
const fs = require("fs");
const load = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
const res = (l) => l.filter((r) => r.dir === "s2c" && !r.message.method && (r.message.result || r.message.error))
	.map((r) => JSON.stringify(r.message.result || r.message.error));
const a = res(load(process.argv[1])), b = res(load(process.argv[2]));
if (a.length !== b.length) { console.error("# answers:", a.length, "recorded,", b.length, "replayed"); process.exit(1); }
for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) { console.error("# " + a[i].slice(0, 200) + "\n# " + b[i].slice(0, 200)); process.exit(2); }' "$1" "$2"
}

# report_ok FILE REQUESTS SKIPPED: the mock's report: REQUESTS requests, no
# misses, nothing unused or reused, and exactly the SKIPPED server requests
# (method:needs,...) left out. (Not "answered": whether the cancelled call, whose
# recording has no answer, counts as answered is the mock's to say.)
report_ok() {
	node -e '
const fs = require("fs");
const [file, n, skipped] = process.argv.slice(1);
let r;
try { r = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { console.error("# no report:", e.message); process.exit(1); }
const want = {
  requests: Number(n), reused: 0, misses: [], unused: [], garbage: 0, ok: true,
  skipped: skipped ? skipped.split(",").sort() : [],
};
const got = {
  requests: r.requests, reused: r.reused, misses: r.misses, unused: r.unused,
  garbage: r.garbage, ok: r.ok,
  skipped: Array.isArray(r.skipped) ? r.skipped.map((s) => s.method + ":" + s.needs).sort() : r.skipped,
};
if (JSON.stringify(got) !== JSON.stringify(want)) {
  console.error("# report: expected", JSON.stringify(want), "\n# got", JSON.stringify(got)); process.exit(1);
}
if (!r.protocol || r.protocol.asked !== "2025-11-25" || r.protocol.answered !== "2025-11-25") {
  console.error("# report protocol:", JSON.stringify(r.protocol)); process.exit(1);
}' "$1" "$2" "$3"
}

i=1
passed=0
while [ $i -le 10 ]; do
	timeout 120 node "$CLIENT" --flow full --all-progress --log "$T/rep$i.jsonl" -- \
		"$MCPTAP" replay -r "$T/s.db" --as server --report "$T/r$i.json" 2>"$T/rep$i.err"
	rc=$?
	if [ $rc -eq 0 ] && same_results "$T/rec.jsonl" "$T/rep$i.jsonl" && report_ok "$T/r$i.json" "$NREQ" ""; then
		passed=$((passed + 1))
	else
		echo "# run $i: exit $rc"
		grep -v '^Starting' "$T/rep$i.err" | sed 's/^/#   /'
	fi
	i=$((i + 1))
done
check_eq "10 runs in a row of the full flow against the mock pass (all progress, same results, report without misses)" 10 "$passed"
grep -h '^sdk-client: ok:' "$T"/rep*.err | sort | uniq -c | sed 's/^/# /'

# --timing none: the old way, everything at once. Not checked: print what the
# client saw.
timeout 120 node "$CLIENT" --flow full --all-progress --log "$T/none.jsonl" -- \
	"$MCPTAP" replay -r "$T/s.db" --as server --timing none 2>"$T/none.err"
echo "# --timing none: exit $?: $(grep '^sdk-client: \(ok\|FAIL\)' "$T/none.err")"

# A client without sampling and roots: the mock sends neither request (the flow
# checks none came over the wire) and says it skipped them.
timeout 120 node "$CLIENT" --flow full --all-progress --without sampling,roots --log "$T/bare.jsonl" -- \
	"$MCPTAP" replay -r "$T/s.db" --as server --report "$T/bare.json" 2>"$T/bare.err"
rc=$?
[ $rc -eq 0 ] || grep -v '^Starting' "$T/bare.err" | sed 's/^/# /'
check_eq "a client without sampling and roots runs the full flow against the mock" 0 $rc
check_eq "no sampling/createMessage or roots/list reached it" 0 \
	"$(node -e 'console.log(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
		.filter((r) => r.dir === "s2c" && /^(sampling|roots)\//.test(r.message.method || "")).length)' "$T/bare.jsonl")"
check "the report lists them skipped, and nothing else is amiss" \
	report_ok "$T/bare.json" "$NREQ" "sampling/createMessage:sampling,roots/list:roots"
check "the mock's summary on stderr says it left 2 server requests out, roots/list among them" sh -c \
	'grep "^mcptap" "$1" | grep "roots/list" | grep -qw 2' sh "$T/bare.err"

# A recorded 10 s call with 5 progress steps replays in a fraction of that.
timeout 120 node "$CLIENT" --flow long --log "$T/long.jsonl" -- \
	"$MCPTAP" record -w "$T/long.db" -- node "$ENTRY" stdio 2>"$T/long.err"
check_eq "recorded a 10 s call with 5 progress steps" 0 $?
t0=$(date +%s%N)
timeout 120 node "$CLIENT" --flow long --all-progress --log "$T/longrep.jsonl" -- \
	"$MCPTAP" replay -r "$T/long.db" --as server 2>"$T/longrep.err"
rc=$?
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
echo "# the 10 s call replayed in $ms ms: $(grep '^sdk-client: \(ok\|FAIL\)' "$T/longrep.err")"
check_eq "it replays with all 5 progress callbacks" 0 $rc
check "it replays in under 5 s (recorded: 10 s)" test "$rc" -eq 0 -a "$ms" -lt 5000

finish
