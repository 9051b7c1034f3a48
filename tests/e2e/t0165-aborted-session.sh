#!/bin/sh
# A session whose tap was killed (SIGKILL: no chance to write its end) shows as
# aborted, not running for ever; while its tap lives it shows running; one
# that ended shows its exit status. The session row names the tap's process
# (pid, boot, start time).
. "$(dirname "$0")/lib.sh"

mkfifo "$T/in"
# The client: keeps the tap's stdin open for a while.
sleep 60 > "$T/in" &
holder=$!
"$MCPTAP" record -w "$T/k.db" -- sleep 60 < "$T/in" > /dev/null 2>&1 &
tap=$!
i=0
# (sqlite3 must not create the file first: it would be the tap's no more.)
while ! { [ -s "$T/k.db" ] && [ "$(sql "$T/k.db" "select count(*) from session" 2> /dev/null)" = 1 ]; } &&
	[ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check_eq "while its tap lives: running" "running" "$("$MCPTAP" sessions -r "$T/k.db" | awk 'NR == 2 { print $6 }')"
check_eq "the row names the tap's process" "$tap" "$(sql "$T/k.db" "select tap_pid from session")"
check "with its boot id and start time" sh -c 'sqlite3 "$1" "select tap_id from session" | grep -q "^[0-9a-f-]*:[0-9][0-9]*$"' sh "$T/k.db"
kill -9 "$tap"
wait "$tap" 2> /dev/null
check_eq "its tap killed: aborted" "aborted" "$("$MCPTAP" sessions -r "$T/k.db" | awk 'NR == 2 { print $6 }')"
check "and so in JSON" sh -c '"$1" sessions -r "$2" -T json | grep -q "\"state\":\"aborted\""' sh "$MCPTAP" "$T/k.db"
kill "$holder" "$(sql "$T/k.db" "select pid from session")" 2> /dev/null # (the orphaned server too)

echo '{}' | "$MCPTAP" record -w "$T/k.db" -- cat > /dev/null 2> "$T/end.err"
check_eq "a capture the tap created: no warning about its mode" "" "$(cat "$T/end.err")"
check_eq "a session that ended: its exit status" "0" "$("$MCPTAP" sessions -r "$T/k.db" | awk 'NR == 3 { print $6 }')"
check "and state ended in JSON" sh -c '"$1" sessions -r "$2" -T json | sed -n 2p | grep -q "\"state\":\"ended\""' sh "$MCPTAP" "$T/k.db"

finish
