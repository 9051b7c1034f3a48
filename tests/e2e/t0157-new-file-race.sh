#!/bin/sh
# Eight taps starting at once on a capture file that does not exist yet: each
# gets its session, none says anything (issue 8, item 2: some used to fail with
# "table meta already exists" and lose their whole session). The test-only
# MCPTAP_TEST_CREATE_PAUSE_MS widens the window between seeing the file empty
# and creating it, so that every round meets the race.
. "$(dirname "$0")/lib.sh"

for round in 1 2 3; do
	rm -f "$T/race.db" "$T/race.db-wal" "$T/race.db-shm"
	: > "$T/err.$round"
	for i in 1 2 3 4 5 6 7 8; do
		echo '{"jsonrpc":"2.0","id":1,"method":"ping"}' |
			MCPTAP_TEST_CREATE_PAUSE_MS=300 "$MCPTAP" record -w "$T/race.db" -- cat > /dev/null 2>> "$T/err.$round" &
	done
	wait
	check_eq "round $round: 8 taps at once on a new file, 8 sessions" 8 "$(sql "$T/race.db" "select count(*) from session")"
	check_eq "round $round: each with its message" 8 "$(sql "$T/race.db" "select count(*) from message where dir = 'c2s'")"
	check_eq "round $round: not a word on stderr" "" "$(cat "$T/err.$round")"
done
check_eq "the file is sound" ok "$(sql "$T/race.db" "pragma integrity_check")"

finish
