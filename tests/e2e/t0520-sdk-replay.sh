#!/bin/sh
# Replay with the real peers. The official SDK client's flow, recorded against
# server-everything, runs again against `mcptap replay --as server`: it succeeds
# with the same results, the server's sampling request and the progress
# notifications included. Then the recorded client (a wider flow that calls
# every simple tool) runs against the live server-everything: no differences
# but the volatile fields the README lists as the --ignore set for it.
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }

timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/rec.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio 2> "$T/rec.err"
check_eq "recorded the SDK client against server-everything" 0 $?

timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/rep.jsonl" -- \
	"$MCPTAP" replay -r "$T/s.db" --as server --strict 2> "$T/rep.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rep.err"
check_eq "the SDK client's whole flow succeeds against the mock (--strict)" 0 $rc
check "sampling and progress came through" grep -q "trigger-sampling-request" "$T/rep.err"
# The same results: every answer the client got equals the recorded one but for
# the server's own request ids (fresh in the mock) and progress tokens (live).
check "the client received the same results" node -e '
const fs = require("fs");
const load = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
const res = (l) => l.filter(r => r.dir === "s2c" && (r.message.result || r.message.error))
	.map(r => JSON.stringify(r.message.result || r.message.error));
const a = res(load(process.argv[1])), b = res(load(process.argv[2]));
if (a.length !== b.length) { console.error(a.length, b.length); process.exit(1); }
for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) { console.error(a[i], "\n", b[i]); process.exit(2); }' \
	"$T/rec.jsonl" "$T/rep.jsonl"

# The wider flow, then the recorded client against the live server.
timeout 120 node "$NODEDIR/sdk-client.mjs" --flow wide --log "$T/wide.jsonl" -- \
	"$MCPTAP" record -w "$T/w.db" -- node "$ENTRY" stdio 2> /dev/null
check_eq "recorded the wide flow" 0 $?
# The --ignore set for server-everything (README): get-env returns the server's
# environment, which differs between the recording (under mcptap record) and a
# direct run. get-resource-reference embeds a resource stamped with the time it
# was made: it differs on every run, so two live runs set it aside as noise.
IGNORE="--ignore get-env=result.content[0].text"
# shellcheck disable=SC2086
"$MCPTAP" replay -r "$T/w.db" --as client $IGNORE -- node "$ENTRY" stdio > "$T/v.out" 2> /dev/null
rc=$?
grep -v '^PASS' "$T/v.out" | sed 's/^/# /'
check_eq "no differences but the environment" 0 $rc
check "every request passed, the time stamp set aside as noise" grep -q "^replay: \([0-9]*\) requests: \1 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; 1 path set aside as noise over 2 runs" "$T/v.out"
check "the noise is get-resource-reference's" grep -q "^PASS #[0-9]* tools/call get-resource-reference (1 noisy path set aside)$" "$T/v.out"
"$MCPTAP" replay -r "$T/w.db" --as client -- node "$ENTRY" stdio > "$T/v2.out" 2> /dev/null
check_eq "without the --ignore, the environment differs: exit 1" 1 $?
check_eq "the one DIFF is get-env's text" "tools/call get-env: result.content[0].text" "$(sed -n 's/^DIFF #[0-9]* //p' "$T/v2.out")"
"$MCPTAP" replay -r "$T/w.db" --as client --runs 1 $IGNORE -- node "$ENTRY" stdio > "$T/v3.out" 2> /dev/null
check_eq "one run cannot tell noise from change: the time stamp differs, exit 1" 1 $?
check_eq "the one DIFF is the time stamp" "tools/call get-resource-reference: result.content[1].resource.text" "$(sed -n 's/^DIFF #[0-9]* //p' "$T/v3.out")"

finish
