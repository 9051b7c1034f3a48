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

# Deleted, then replaced, while recording: said once each; the tap lets go of
# its -wal and -shm at once, so that a new file at that path is not harmed: a
# second tap records into a new file there, and a reader of a file moved
# over it reads that file, which stays whole.
server='for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo "{\"jsonrpc\":\"2.0\",\"method\":\"n$i\"}"; sleep 0.2; done'
said() {
	printf "mcptap: warning: '%s' was %s while recording: the tap stops logging this session (what it stored went with the old file) and lets go of its journal, so that the file now at that path is not harmed" "$1" "$2"
}
(sleep 0.5; rm -f "$T/d.db"; sleep 0.5
	echo '{"jsonrpc":"2.0","method":"second"}' | "$MCPTAP" record -w "$T/d.db" -- cat > "$T/d2.out" 2> "$T/d2.err"
	echo $? > "$T/d2.rc"; sleep 2) |
	"$MCPTAP" record -w "$T/d.db" -- sh -c "$server" > "$T/d.out" 2> "$T/d.err"
check_eq "deleted while recording: the relay is intact" 15 "$(wc -l < "$T/d.out" | tr -d ' ')"
check_eq "deleted while recording: said once" "$(said "$T/d.db" deleted)" "$(cat "$T/d.err")"
check_eq "a second tap on the path meanwhile: exit 0, nothing said" "0|" "$(cat "$T/d2.rc")|$(cat "$T/d2.err")"
check_eq "and its file holds its session alone, whole (the line each way)" "1|2|ok" \
	"$(sql "$T/d.db" "select count(*), (select count(*) from message where method = 'second'), (select * from pragma_integrity_check) from session")"
echo "$msg" | "$MCPTAP" record -w "$T/other.db" -- cat > /dev/null 2>&1
other=$(sql "$T/other.db" "select count(*), (select count(*) from message), 'ok' from session")
(sleep 0.5; mv "$T/other.db" "$T/r.db"; sleep 0.3
	"$MCPTAP" sessions -r "$T/r.db" -T json > "$T/r.sessions" 2>&1; sleep 2) |
	"$MCPTAP" record -w "$T/r.db" -- sh -c "$server" > /dev/null 2> "$T/r.err"
check_eq "replaced while recording: said once" "$(said "$T/r.db" "replaced by another file")" "$(cat "$T/r.err")"
check_eq "a reader of the file moved over it meanwhile sees that file's one session" 1 \
	"$(grep -c '"id":' "$T/r.sessions")"
check_eq "and that file stays whole: its one session, its messages ($other)" "$other" \
	"$(sql "$T/r.db" "select count(*), (select count(*) from message), (select * from pragma_integrity_check) from session")"
check "no -wal or -shm of the old file is left at the path" test ! -e "$T/r.db-wal" -a ! -e "$T/r.db-shm"

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
