#!/bin/sh
# tests/run-all.sh BUILD_DIR - run every unit test binary in BUILD_DIR/tests, then
# every end-to-end script, and print one closing line "N passed, N failed".
# MCPTAP (the binary the end-to-end tests run) may be set by the caller.
# MCPTAP_TEST_JOBS is how many end-to-end scripts run at once (tests/e2e/run.sh).
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build/rel}
cd "$top" || exit 2
pass=0
fail=0
failed=""
for t in "$build"/tests/test-*; do
	[ -x "$t" ] || continue
	if "$t"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed="$failed $(basename "$t")"
	fi
done
echo "unit: $pass passed, $fail failed"
out=$(mktemp)
MCPTAP=${MCPTAP:-$top/mcptap} sh tests/e2e/run.sh | tee "$out"
line=$(tail -n 1 "$out")
rm -f "$out"
epass=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
efail=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -z "$epass" ]; then
	epass=0
	efail=1
	failed="$failed e2e-runner"
fi
pass=$((pass + epass))
fail=$((fail + efail))
[ -z "$failed" ] || echo "failed unit tests:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
