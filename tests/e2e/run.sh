#!/bin/sh
# tests/e2e/run.sh - run every end-to-end script (or those named) and count them.
#
#   tests/e2e/run.sh [-j JOBS] [tNNNN-name.sh...]
#
# JOBS scripts run at once (default $MCPTAP_TEST_JOBS, else 4: most scripts
# wait on peers, sockets and sleeps more than they compute). A script with a
# line "# e2e: long" starts before the others, so that it does not end the
# run alone; one with "# e2e: alone" runs by itself after the others (it
# measures or floods the machine). When a script ends, one line says so:
# "PASS name 1.2s" (its wall time) or "FAIL name (exit N) 1.2s", then for a
# failure its "not ok" lines and the tail of its output. Prints
# "N passed, N failed" last; exits non-zero when any failed.
cd "$(dirname "$0")" || exit 2
jobs=${MCPTAP_TEST_JOBS:-4}
while getopts j: o; do
	case $o in
	j) jobs=$OPTARG ;;
	*) echo "usage: $0 [-j JOBS] [tNNNN-name.sh...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $jobs in
'' | *[!0-9]* | 0) echo "run.sh: bad job count '$jobs'" >&2; exit 2 ;;
esac
[ $# -gt 0 ] || set -- t[0-9]*.sh

# A job started with & from a script ignores SIGINT and SIGQUIT; a script run
# that way must see them as it does from a terminal (tests send them).
dflt="env --default-signal=INT,QUIT"
$dflt true 2> /dev/null || dflt=

out=$(mktemp -d "${TMPDIR:-/tmp}/mcptap-e2e.XXXXXX") || exit 2
mkfifo "$out/done" || exit 2
exec 3<> "$out/done"
pass=0
failn=0
failed=""
running=0

# start NAME: run the script in the background; when it ends, it writes
# "STATUS NAME TENTHS" (its wall time in tenths of a second) to fd 3.
start() {
	(
		t0=$(date +%s%N)
		$dflt sh "./$1" > "$out/$1.out" 2>&1 3>&-
		rc=$?
		t1=$(date +%s%N)
		echo "$rc $1 $(((t1 - t0) / 100000000))" >&3
	) &
	running=$((running + 1))
}

# reap: wait for one script to end and report it.
reap() {
	read -r rc name d <&3
	running=$((running - 1))
	secs=$((d / 10)).$((d % 10))s
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name $secs"
	else
		failn=$((failn + 1))
		failed="$failed $name"
		echo "FAIL $name (exit $rc) $secs"
		# (the failed checks first: the tail may not reach back to them)
		grep '^not ok' "$out/$name.out" | sed 's/^/    /'
		sed 's/^/    /' "$out/$name.out" | tail -n 40
	fi
	rm -f "$out/$name.out"
}

# The long scripts start first, so that none of them ends the run alone.
long="" rest="" alone=""
for t in "$@"; do
	t=$(basename "$t")
	case $(grep -s '^# e2e: ' "$t") in
	'# e2e: alone'*) alone="$alone $t" ;;
	'# e2e: long'*) long="$long $t" ;;
	*) rest="$rest $t" ;;
	esac
done
for t in $long $rest; do
	[ "$running" -lt "$jobs" ] || reap
	start "$t"
done
while [ "$running" -gt 0 ]; do
	reap
done
for t in $alone; do
	start "$t"
	reap
done
wait
exec 3>&-
rm -rf "$out"
[ -z "$failed" ] || echo "failed:$failed"
echo "$pass passed, $failn failed"
[ $failn -eq 0 ]
