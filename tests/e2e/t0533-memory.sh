#!/bin/sh
# t0533-memory: a second real server, the official server-memory (pinned in
# tests/node), recorded, mocked and verified the way t0530/t0532 do it for
# server-everything. The SDK client's memory flow (tests/node/flows.mjs) builds
# a small knowledge graph, subscribes to it, reads, searches, opens and deletes,
# checking exact results, and leaves the store empty. server-memory keeps its
# store in the file MEMORY_FILE_PATH names: every server here gets a fresh one.
#
# Checks: the recording; the same flow against the mock (--strict) with the
# same results and a report without misses; verify against a fresh server-memory
# passes with no --ignore at all (one PASS per request, 0 DIFF, 0 MISSING), and
# the stored run says so.
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-memory) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/sdk-client.mjs

MEMORY_FILE_PATH=$T/rec-store.jsonl timeout 60 node "$CLIENT" --flow memory --log "$T/rec.jsonl" -- \
	"$MCPTAP" record -w "$T/m.db" -- node "$ENTRY" 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rec.err"
check_eq "recorded the memory flow against server-memory" 0 $rc
N=$(node -e 'console.log(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
	.filter((r) => r.dir === "c2s" && r.message.method && r.message.id !== undefined).length)' "$T/rec.jsonl")
check_eq "the recorded server's session" "memory-server" "$(sql "$T/m.db" 'SELECT server_name FROM session')"

# The mock: no server, no store file.
timeout 60 node "$CLIENT" --flow memory --all-progress --log "$T/rep.jsonl" -- \
	"$MCPTAP" replay -r "$T/m.db" --as server --strict --report "$T/r.json" 2>"$T/rep.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rep.err"
check_eq "the memory flow passes against the mock (--strict)" 0 $rc
check "the client received the recorded results" node -e '
const fs = require("fs");
const load = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
const res = (l) => l.filter((r) => r.dir === "s2c" && !r.message.method).map((r) => JSON.stringify(r.message.result || r.message.error));
const a = res(load(process.argv[1])), b = res(load(process.argv[2]));
process.exit(a.length === b.length && a.every((x, i) => x === b[i]) ? 0 : 1)' "$T/rec.jsonl" "$T/rep.jsonl"
check "the report: $N requests answered, no misses, nothing unused or skipped" node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const got = JSON.stringify([r.requests, r.answered, r.misses, r.unused, r.skipped, r.garbage, r.ok]);
const want = JSON.stringify([Number(process.argv[2]), Number(process.argv[2]), [], [], [], 0, true]);
if (got !== want) { console.error("# expected " + want + "\n# got      " + got); process.exit(1); }' "$T/r.json" "$N"

# Verify: the recorded client against a fresh server-memory, run twice (the
# flow leaves the store as it found it).
MEMORY_FILE_PATH=$T/verify-store.jsonl timeout 120 "$MCPTAP" replay -r "$T/m.db" --as client -- \
	node "$ENTRY" >"$T/v.out" 2>"$T/v.err"
rc=$?
grep -v '^PASS' "$T/v.out" | sed 's/^/# /'
check_eq "verify against a fresh server-memory exits 0" 0 $rc
check_eq "PASS: every request" "$N" "$(grep -c '^PASS' "$T/v.out")"
check_eq "no DIFF, MISSING, CANCELLED or UNANSWERED" 0 "$(grep -c '^\(DIFF\|MISSING\|CANCELLED\|UNANSWERED\)' "$T/v.out")"
check_eq "the stored run: two live runs, all passed" "client|2|$N|0|0" \
	"$(sql "$T/m.db" "SELECT mode, runs, passed, differed, missing FROM replay_run WHERE mode = 'client' ORDER BY id DESC LIMIT 1")"
check_eq "the store file is empty again after the runs" "" "$(tr -d '\n' <"$T/verify-store.jsonl" 2>/dev/null)"

# A stateful server whose data is not as the recording found it: an entity
# left from elsewhere shows in every read. One run cannot tell that from noise,
# and says so; --reset puts the data back before each run (and runs each time).
stale='{"type":"entity","name":"stale","entityType":"leftover","observations":[]}'
echo "$stale" > "$T/dirty.jsonl"
MEMORY_FILE_PATH=$T/dirty.jsonl timeout 120 "$MCPTAP" replay -r "$T/m.db" --as client --runs 1 --no-store -- \
	node "$ENTRY" >"$T/d1.out" 2>"$T/d1.err"
check_eq "a dirty store, one run: exit 1" 1 $?
check "and some DIFF" grep -q '^DIFF ' "$T/d1.out"
check_eq "one run: the hint, once, before the summary" \
	"NOTE one run cannot tell noise from a change: values that differ on every run (times, random ids) count as differences; --runs 2 or more sets them aside, and --reset CMD puts a stateful server's data back before each run" \
	"$(grep '^NOTE' "$T/d1.out")"
check_eq "(the hint comes right before the summary)" "NOTE|replay" "$(tail -n 2 "$T/d1.out" | cut -c1-6 | sed 's/ .*//' | paste -sd '|')"
echo "$stale" > "$T/dirty.jsonl"
MEMORY_FILE_PATH=$T/dirty.jsonl timeout 120 "$MCPTAP" replay -r "$T/m.db" --as client --no-store \
	--reset "echo reset >> '$T/resets'; : > '$T/dirty.jsonl'" -- node "$ENTRY" >"$T/d2.out" 2>"$T/d2.err"
check_eq "the same store with --reset: exit 0" 0 $?
check_eq "PASS: every request" "$N" "$(grep -c '^PASS' "$T/d2.out")"
check_eq "--reset ran before each of the two runs" "reset
reset" "$(cat "$T/resets")"
"$MCPTAP" replay -r "$T/m.db" --as client --no-store --reset 'echo failing >&2; exit 3' -- \
	node "$ENTRY" >"$T/d3.out" 2>"$T/d3.err"
check_eq "a --reset that fails: exit 2, said, no run" \
	"2|failing|mcptap: replay: --reset 'echo failing >&2; exit 3' exited with status 3 before run 1 of 2|" \
	"$?|$(cat "$T/d3.err" | paste -sd '|')|$(cat "$T/d3.out")"
"$MCPTAP" replay -r "$T/m.db" --as server --reset true < /dev/null > /dev/null 2> "$T/d4.err"
check_eq "--reset is for --as client" 2 $?

finish
