#!/bin/sh
# tests/e2e/run.sh - run every end-to-end script (or those named) and count them.
# Prints "N passed, N failed" last; exits non-zero when any failed.
cd "$(dirname "$0")" || exit 2
pass=0
failn=0
failed=""
[ $# -gt 0 ] || set -- t[0-9]*.sh
for t in "$@"; do
	t=$(basename "$t")
	out=$(sh "./$t" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $t"
	else
		failn=$((failn + 1))
		failed="$failed $t"
		echo "FAIL $t (exit $rc)"
		# (the failed checks first: the tail may not reach back to them)
		echo "$out" | grep '^not ok' | sed 's/^/    /'
		echo "$out" | sed 's/^/    /' | tail -n 40
	fi
done
[ -z "$failed" ] || echo "failed:$failed"
echo "$pass passed, $failn failed"
[ $failn -eq 0 ]
