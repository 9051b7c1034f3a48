#!/bin/sh
# SIGINT, SIGTERM and SIGHUP sent to the tap reach the child; the tap then exits
# as the child did. Signals the tap inherited as ignored stay ignored in the child.
. "$(dirname "$0")/lib.sh"

# A child that reports the signal it got on stderr and exits with a code per signal.
cat > "$T/child.sh" <<'SH'
#!/bin/sh
trap 'echo got-INT >&2; exit 10' INT
trap 'echo got-TERM >&2; exit 11' TERM
trap 'echo got-HUP >&2; exit 12' HUP
echo ready >&2
while :; do sleep 0.05; done
SH
chmod +x "$T/child.sh"

wait_for() { # wait_for FILE TEXT: up to 5 s
	i=0
	while [ $i -lt 100 ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

n=10
for sig in INT TERM HUP; do
	: > "$T/$sig.err"
	# A fifo keeps the tap's stdin open, as a client's pipe would be.
	mkfifo "$T/$sig.in"
	# A background job starts with SIGINT ignored: perl puts it back to its default,
	# as a client that spawns the tap would have it.
	perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' \
		"$MCPTAP" record -w "$T/s.db" -- "$T/child.sh" < "$T/$sig.in" 2> "$T/$sig.err" &
	pid=$!
	exec 7> "$T/$sig.in"
	check "child is running ($sig)" wait_for "$T/$sig.err" ready
	kill -$sig $pid
	wait $pid
	rc=$?
	exec 7>&-
	check_eq "SIG$sig forwarded: the tap exits as the child did" $n $rc
	check "the child saw SIG$sig" grep -q "got-$sig" "$T/$sig.err"
	n=$((n + 1))
done
check_eq "three sessions with their statuses" "10 11 12" \
	"$(sql "$T/s.db" "select exit_status from session order by id" | tr '\n' ' ' | sed 's/ $//')"
check_eq "the child's stderr was stored" 3 \
	"$(sql "$T/s.db" "select count(*) from stderr_line where cast(raw as text) like 'got-%'")"

# An ignored SIGINT is inherited as ignored (as without the tap).
out=$(sh -c 'trap "" INT; exec "$0" record -w "$1" -- sh -c "kill -INT \$\$; echo alive"' \
	"$MCPTAP" "$T/ign.db" < /dev/null)
check_eq "an ignored SIGINT stays ignored in the child" alive "$out"
out=$(perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' "$MCPTAP" record -w "$T/ign.db" -- \
	sh -c 'kill -INT $$; echo alive' < /dev/null)
check_eq "a default SIGINT is the default in the child" "" "$out"

finish
