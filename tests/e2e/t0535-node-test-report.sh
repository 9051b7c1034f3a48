#!/bin/sh
# t0535-node-test-report: the mock's --report reaches a client's own test. The
# SDK client records one echo call against server-everything (declaring no
# client capabilities); then tests/node/mock-report.test.mjs, the README's
# example, runs under node's built-in test runner: a different client (its own
# name and version) against `mcptap replay --as server --report FILE`, asserting
# on the report (no misses, nothing unused, 2 requests answered, ok).
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }

timeout 60 node "$NODEDIR/sdk-client.mjs" --flow echo --without sampling,roots,elicitation --log "$T/rec.jsonl" -- \
	"$MCPTAP" record -w "$T/echo.db" -- node "$ENTRY" stdio 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/rec.err"
check_eq "recorded one echo call" 0 $rc

(cd "$NODEDIR" && MCPTAP=$MCPTAP MCPTAP_FILE=$T/echo.db timeout 60 node --test mock-report.test.mjs) >"$T/test.out" 2>&1
rc=$?
sed 's/^/# /' "$T/test.out"
check_eq "node --test mock-report.test.mjs passes" 0 $rc
check "one test ran and passed" sh -c 'grep -q "^# pass 1$" "$1" && grep -q "^# fail 0$" "$1"' sh "$T/test.out"

finish
