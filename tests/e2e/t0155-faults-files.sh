#!/bin/sh
# Faults around the capture file and the standard streams (issue 8, item 5):
# a special file is refused before anything is created beside it; an existing
# capture readable by others gets a warning (its mode is left alone); a
# capture deleted or replaced while recording is said once on stderr; a
# standard stream closed when the tap starts is closed for the server too,
# with the same outcome as without the tap.
. "$(dirname "$0")/lib.sh"

msg='{"jsonrpc":"2.0","id":1,"method":"ping"}'

# A FIFO and /dev/null: refused, nothing beside them, the relay intact.
mkfifo "$T/fifo"
out=$(echo "$msg" | "$MCPTAP" record -w "$T/fifo" -- cat 2> "$T/fifo.err")
check_eq "a FIFO as capture: the relay is intact" "$msg" "$out"
check "and the tap says why" grep -q "cannot log to '$T/fifo': not a regular file (a device, a FIFO or a socket)" "$T/fifo.err"
check_eq "nothing is created beside it" "fifo fifo.err" "$(cd "$T" && ls | tr '\n' ' ' | sed 's/ $//')"
rm -f /dev/null-journal /dev/null-wal /dev/null-shm 2> /dev/null
out=$(echo "$msg" | "$MCPTAP" record -w /dev/null -- cat 2> "$T/null.err")
check_eq "/dev/null as capture: the relay is intact" "$msg" "$out"
check "and the tap says why" grep -q "not a regular file" "$T/null.err"
check "no /dev/null-journal, -wal or -shm appears" sh -c '! ls /dev/null-journal /dev/null-wal /dev/null-shm 2> /dev/null'

# An existing capture readable by others: a warning, the mode left as it was.
echo "$msg" | "$MCPTAP" record -w "$T/m.db" -- cat > /dev/null 2> "$T/m1.err"
check_eq "a new capture: no warning" "" "$(cat "$T/m1.err")"
chmod 644 "$T/m.db"
echo "$msg" | "$MCPTAP" record -w "$T/m.db" -- cat > /dev/null 2> "$T/m2.err"
check_eq "a capture others can read: one warning" \
	"mcptap: warning: '$T/m.db' can be read by other users (mode 0644), and so can its -wal and -shm files: traffic may hold secrets; chmod 600 it" \
	"$(cat "$T/m2.err")"
check_eq "its mode is left alone" 644 "$(stat -c %a "$T/m.db")"
check_eq "and the session is stored" 2 "$(sql "$T/m.db" "select count(*) from session")"

# Deleted, then replaced, while recording: said once each.
server='for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo "{\"jsonrpc\":\"2.0\",\"method\":\"n$i\"}"; sleep 0.2; done'
(sleep 0.5; rm -f "$T/d.db" "$T/d.db-wal" "$T/d.db-shm"; sleep 3) |
	"$MCPTAP" record -w "$T/d.db" -- sh -c "$server" > "$T/d.out" 2> "$T/d.err"
check_eq "deleted while recording: the relay is intact" 15 "$(wc -l < "$T/d.out" | tr -d ' ')"
check_eq "deleted while recording: said once" \
	"mcptap: warning: '$T/d.db' was deleted while recording: this session is logged into a file that is gone and is lost when the tap exits" \
	"$(cat "$T/d.err")"
echo "$msg" | "$MCPTAP" record -w "$T/other.db" -- cat > /dev/null 2>&1
(sleep 0.5; mv "$T/other.db" "$T/r.db"; sleep 3) |
	"$MCPTAP" record -w "$T/r.db" -- sh -c "$server" > /dev/null 2> "$T/r.err"
check_eq "replaced while recording: said once" \
	"mcptap: warning: '$T/r.db' was replaced by another file while recording: this session is logged into a file that is gone and is lost when the tap exits" \
	"$(cat "$T/r.err")"

# Standard streams closed at start: the server's own outcome, as without the tap.
w='echo "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"; echo "write: $?" >&2; exit 7'
sh -c "$w" >&- 2> "$T/direct.err"
direct=$?
"$MCPTAP" record -w "$T/s.db" -- sh -c "$w" >&- 2> "$T/tap.err"
check_eq "stdout closed: the exit status of a direct run" "$direct" $?
check_eq "stdout closed: the server's write fails as in a direct run" "$(cat "$T/direct.err")" "$(cat "$T/tap.err")"
r='read x; echo "read: $?"'
check_eq "stdin closed: the server's read fails as in a direct run" "$(sh -c "$r" <&- 2>&1)" \
	"$("$MCPTAP" record -w "$T/s.db" -- sh -c "$r" <&- 2>&1)"
e='echo out; echo err >&2; echo "stderr: $?"; exit 3'
sh -c "$e" 2>&- > "$T/e.direct"
direct=$?
"$MCPTAP" record -w "$T/s.db" -- sh -c "$e" 2>&- > "$T/e.tap"
check_eq "stderr closed: the exit status of a direct run" "$direct" $?
check_eq "stderr closed: the same output" "$(cat "$T/e.direct")" "$(cat "$T/e.tap")"

finish
