#!/bin/sh
# t0532-verify-everything: the recorded client against the live server. The SDK
# client's full flow (tests/node/flows.mjs) is recorded against server-everything
# and replayed with `mcptap replay --as client` against a fresh one, with only
# the server's environment (get-env) ignored: everything else the server mints
# (task ids, elicitation ids, time stamps) is followed or set aside as per-run
# noise by running twice, and the cancelled call is sent as recorded.
#
# Checks: exit 0; one PASS per request but the cancelled one; no DIFF, MISSING
# or UNANSWERED; CANCELLED 1; the noise count printed and stored; the stored run
# (replay_run: mode, runs, noise, totals; replay_result: statuses). Then a real
# change is caught: a wrapper that alters the echo tool's answer gives exactly
# one DIFF, naming the tool.
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/sdk-client.mjs

# requests LOG: how many requests the client sent.
requests() {
	node -e 'console.log(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
		.filter((r) => r.dir === "c2s" && r.message.method && r.message.id !== undefined).length)' "$1"
}

timeout 120 node "$CLIENT" --flow full --log "$T/rec.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rec.err"
check_eq "recorded the full flow against server-everything" 0 $rc
N=$(requests "$T/rec.jsonl")

timeout 200 "$MCPTAP" replay -r "$T/s.db" --as client --ignore 'get-env=result.content[0].text' -- \
	node "$ENTRY" stdio >"$T/v.out" 2>"$T/v.err"
rc=$?
grep -v '^PASS' "$T/v.out" | sed 's/^/# /'
grep -v '^Starting' "$T/v.err" | sed 's/^/# (stderr) /'
check_eq "verify of the full flow with only the get-env ignore exits 0" 0 $rc
check_eq "PASS: every request but the cancelled one" $((N - 1)) "$(grep -c '^PASS' "$T/v.out")"
check_eq "no DIFF" 0 "$(grep -c '^DIFF' "$T/v.out")"
check_eq "no MISSING" 0 "$(grep -c '^MISSING' "$T/v.out")"
check_eq "no UNANSWERED" 0 "$(grep -c '^UNANSWERED' "$T/v.out")"
check_eq "CANCELLED: the call the client cancelled" 1 "$(grep -c '^CANCELLED.*tools/call' "$T/v.out")"

RUN=$(sql "$T/s.db" "SELECT max(id) FROM replay_run WHERE mode = 'client'")
NOISE=$(sql "$T/s.db" "SELECT noise FROM replay_run WHERE id = ${RUN:-0}")
echo "# stored run ${RUN:-none}: $(sql "$T/s.db" "SELECT mode, runs, noise, passed, differed, missing FROM replay_run WHERE id = ${RUN:-0}")"
check_eq "stored run: mode, runs, passed, differed, missing" "client|2|$((N - 1))|0|0" \
	"$(sql "$T/s.db" "SELECT mode, runs, passed, differed, missing FROM replay_run WHERE id = ${RUN:-0}")"
check "stored run: some paths set aside as noise (the time stamps)" test "${NOISE:-0}" -gt 0
check "the noise count is printed" sh -c 'cat "$1" "$2" | grep -i "noise" | grep -qw -- "$3"' sh "$T/v.out" "$T/v.err" "${NOISE:-x}"
check_eq "stored results: statuses" "cancelled|1 pass|$((N - 1))" \
	"$(sql "$T/s.db" "SELECT status || '|' || count(*) FROM replay_result WHERE run = ${RUN:-0} GROUP BY status ORDER BY status" | tr '\n' ' ' | sed 's/ $//')"
check_eq "the cancelled result names the tool" "tools/call|trigger-long-running-operation" \
	"$(sql "$T/s.db" "SELECT method || '|' || name FROM replay_result WHERE run = ${RUN:-0} AND status = 'cancelled'")"
check_eq "noise is stored on the results it was found in" "$NOISE" \
	"$(sql "$T/s.db" "SELECT coalesce(sum(json_array_length(noise)), 0) FROM replay_result WHERE run = ${RUN:-0} AND noise IS NOT NULL")"

# A real change is caught: the same server, its echo answers altered on the way.
timeout 60 node "$CLIENT" --log "$T/e.jsonl" -- "$MCPTAP" record -w "$T/e.db" -- node "$ENTRY" stdio 2>"$T/e.err"
check_eq "recorded the everything flow" 0 $?
NE=$(requests "$T/e.jsonl")
timeout 120 "$MCPTAP" replay -r "$T/e.db" --as client -- \
	sh -c 'node "$1" stdio | sed -u "s/\"text\":\"Echo: /\"text\":\"Echo; /"' sh "$ENTRY" >"$T/c.out" 2>"$T/c.err"
rc=$?
grep -v '^PASS' "$T/c.out" | sed 's/^/# /'
check_eq "verify against a server whose echo changed exits 1" 1 $rc
check_eq "exactly one DIFF" 1 "$(grep -c '^DIFF' "$T/c.out")"
check "the DIFF names the echo tool and the path" sh -c 'grep "^DIFF" "$1" | grep -w "echo" | grep -qF "result.content[0].text"' sh "$T/c.out"
check_eq "everything else passes" $((NE - 1)) "$(grep -c '^PASS' "$T/c.out")"

finish
