#!/bin/sh
# mcptap replay --as client against a server that mints values anew each run
# (tests/peers/mint-server.mjs, recorded in tests/fixtures/replay/minted.fx):
# values the recorded client got from the server and sent back (a task id, a
# pagination cursor) follow what the live server minted; a cancelled call is
# sent and cancelled as recorded and costs no timeout; the recorded pace makes a
# polled task complete as it did; what differs between two live runs (time
# stamps) is noise, set aside and counted; a real change is a DIFF, shown with
# -v; a tool merely moved in tools/list is still called by its name.
. "$(dirname "$0")/lib.sh"

SRV=$TOP/tests/peers/mint-server.mjs
command -v node > /dev/null || die "node is not installed: run tests/setup.sh test"
"$PEERS/fixture-load" "$TOP/tests/fixtures/replay/minted.fx" "$T/m.db" || die "cannot load the fixture"

# Two runs (the default). A huge --timeout-ms: waiting for the cancelled call's
# answer would outlast `timeout`.
timeout 60 "$MCPTAP" replay -r "$T/m.db" --as client --timeout-ms 120000 -v -- node "$SRV" > "$T/v.out" 2> "$T/v.err"
check_eq "the unchanged server passes: exit 0" 0 $?
check_eq "every request but the cancelled one passes" 10 "$(grep -c '^PASS #' "$T/v.out")"
check "the task id the client sent back followed the live one: both polls pass" \
	test "$(grep -c '^PASS #\(8\|10\) tools/call status$' "$T/v.out")" = 2
check "the echoed task id too" grep -qx 'PASS #20 tools/call echo' "$T/v.out"
check "the recorded cursor followed the live one: page 2 passes" grep -qx 'PASS #14 resources/list' "$T/v.out"
check "the cancelled call is CANCELLED, named" grep -qx 'CANCELLED #16 tools/call slow: cancelled as recorded' "$T/v.out"
check_eq "nothing MISSING or DIFF" 0 "$(grep -c '^\(MISSING\|DIFF\)' "$T/v.out")"
check "the summary" grep -qx "replay: 11 requests: 10 passed, 0 differed, 0 missing, 1 cancelled, 0 unanswered; 2 paths set aside as noise over 2 runs (session 1 against node $(shq "$SRV"))" "$T/v.out"
check "the time stamps are the noise, shown with -v" sh -c '
	grep -A1 "^PASS #6 tools/call start (1 noisy path set aside)$" "$1" | grep -q "^    noise result.task.createdAt: recorded \"2026-01-01T00:00:00.000Z\" run 1 \"20" &&
	grep -A1 "^PASS #18 tools/call clock (1 noisy path set aside)$" "$1" | grep -q "^    noise result.content\[0\].text: recorded "' sh "$T/v.out"
check_eq "stored: mode, runs, totals, noise" "client|2|10|0|0|2" \
	"$(sql "$T/m.db" "select mode, runs, passed, differed, missing, noise from replay_run where id = 1")"
check_eq "stored: a row per request, with its status and name" \
	"$(printf '6|tools/call|start|pass|["result.task.createdAt"]\n16|tools/call|slow|cancelled|~\n18|tools/call|clock|pass|["result.content[0].text"]')" \
	"$(sql "$T/m.db" "select seq, method, name, status, coalesce(noise, '~') from replay_result where run = 1 and (noise is not null or status <> 'pass') order by seq")"

# One run: nothing tells noise from change, so the time stamps are DIFFs; and
# --fast polls the task at once, which the server has not finished yet.
timeout 60 "$MCPTAP" replay -r "$T/m.db" --as client --runs 1 --fast --no-store -- node "$SRV" > "$T/f.out" 2>&1
check_eq "--runs 1 --fast: exit 1" 1 $?
check_eq "the DIFFs: the two time stamps, and the poll that came too early" \
	"$(printf 'DIFF #6 tools/call start: result.task.createdAt\nDIFF #10 tools/call status: result.task.status\nDIFF #18 tools/call clock: result.content[0].text')" \
	"$(grep '^DIFF' "$T/f.out")"

# A real change: both live runs agree with each other, not with the recording.
timeout 60 env MINT_VERSION=2 "$MCPTAP" replay -r "$T/m.db" --as client -v --no-store -- node "$SRV" > "$T/c.out" 2>&1
check_eq "a changed answer: exit 1" 1 $?
check_eq "exactly that DIFF, with both values under -v" \
	"$(printf 'DIFF #22 tools/call version: result.content[0].text\n    result.content[0].text: recorded "version 1" live "version 2"')" \
	"$(grep -A1 '^DIFF' "$T/c.out")"
check "still 2 noisy paths set aside" grep -q '^replay: 11 requests: 9 passed, 1 differed, 0 missing, 1 cancelled, 0 unanswered; 2 paths set aside' "$T/c.out"

# Tools listed in another order: tools/list differs, but every call still goes
# to the tool it named (a value the server merely moved is not swapped).
timeout 60 env MINT_REORDER=1 "$MCPTAP" replay -r "$T/m.db" --as client --no-store -- node "$SRV" > "$T/r.out" 2>&1
check_eq "reordered tools: exit 1" 1 $?
check_eq "only tools/list differs" "DIFF #4 tools/list" "$(grep '^DIFF' "$T/r.out" | cut -d: -f1)"
check_eq "every call passes (the slow one is cancelled)" 6 "$(grep -c '^PASS #.* tools/call' "$T/r.out")"

# A live server that also writes what is not JSON-RPC: a line of text, a
# 300 kB line of garbage before its first answer, and a cut-off line at its
# end. Verify reads past them; nothing changes.
timeout 60 "$MCPTAP" replay -r "$T/m.db" --as client --no-store -- \
	sh -c 'echo "starting up, not JSON"; head -c 300000 /dev/zero | tr "\0" x; echo; node "$1"; printf "{\"jsonrpc\":"' \
	sh "$SRV" > "$T/g.out" 2>&1
check_eq "a server that writes garbage around its answers: exit 0" 0 $?
check "and the same verdict" grep -q '^replay: 11 requests: 10 passed, 0 differed, 0 missing, 1 cancelled, 0 unanswered; 2 paths set aside' "$T/g.out"

finish
