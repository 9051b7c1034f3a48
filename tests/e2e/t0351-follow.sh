#!/bin/sh
# show --follow while a tap writes: every message printed once, in order, as
# the writer commits it; new sessions picked up; a filter applied; no lock
# held that a writer would wait for; SIGINT ends it with status 0.
. "$(dirname "$0")/lib.sh"

DB=$T/f.db
N=300

# client N PAUSE: N pings, one every PAUSE seconds, then a tools/call.
client() {
	perl -e 'use Time::HiRes qw(sleep); $| = 1;
		for my $i (1 .. $ARGV[0]) { print qq({"jsonrpc":"2.0","id":$i,"method":"ping"}\n); sleep $ARGV[1] }
		print qq({"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{}}}\n); sleep 0.2' "$1" "$2"
}

# A first session, so that the file exists; the follower starts on it.
client 2 0 | "$MCPTAP" record -w "$DB" -- perl "$PEERS/tools-server.pl" > /dev/null
"$MCPTAP" show -r "$DB" -F -T json > "$T/all.out" 2> "$T/all.err" &
F1=$!
"$MCPTAP" show -r "$DB" -F -Y 'tool == echo' > "$T/echo.out" 2> "$T/echo.err" &
F2=$!
sleep 0.3

# A second session, written while they follow.
client $N 0.002 | "$MCPTAP" record -w "$DB" -- perl "$PEERS/tools-server.pl" > /dev/null
check_eq "the tap's session ran" 0 $?
# Another connection takes the write lock at once, and a checkpoint runs whole:
# the followers hold no lock and no read transaction between their reads.
sleep 0.3
check_eq "a writer takes the lock, and checkpoints all, while show --follow reads" "0
0|0|0" \
	"$(sqlite3 "$DB" "PRAGMA busy_timeout = 0; BEGIN IMMEDIATE; COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")"
sleep 0.3
kill -INT $F1 $F2
wait $F1
check_eq "show --follow: SIGINT ends it with status 0" 0 $?
wait $F2
check_eq "show --follow -Y: SIGINT ends it with status 0" 0 $?
check_eq "show --follow: nothing on stderr" "" "$(cat "$T/all.err" "$T/echo.err")"

# Every message of both sessions once, in order: the same lines as show.
"$MCPTAP" show -r "$DB" -s all -T json > "$T/show.out"
check_eq "show --follow: the lines show prints of both sessions, once each, in order" \
	"$(wc -l < "$T/show.out")" "$(wc -l < "$T/all.out")"
cmp -s "$T/show.out" "$T/all.out"
check_eq "show --follow: the same bytes as show -s all" 0 $?
check_eq "show --follow: session 2's $((2 * N + 2)) messages" $((2 * N + 2)) \
	"$(grep -c '^{"session":2,' "$T/all.out")"

# The filter: only the echo calls, under a heading for each session, as
# show -s all -Y prints them.
"$MCPTAP" show -r "$DB" -s all -Y 'tool == echo' > "$T/echo-show.out"
check_eq "show -s all -Y: the echo calls of the two sessions (7 lines)" 7 "$(wc -l < "$T/echo-show.out")"
cmp -s "$T/echo-show.out" "$T/echo.out"
check_eq "show --follow -Y: the same lines" 0 $?

# A filter on what an answer takes from its request, the request and its
# answer read in different polls (a server that answers 300 ms later): the
# follower's list of the requests that pass grows with the session.
cat > "$T/slow.pl" <<'PL'
use Time::HiRes qw(sleep); $| = 1;
while (<STDIN>) { my ($id) = /"id":(\d+)/; next unless defined $id; sleep 0.3; print qq({"jsonrpc":"2.0","id":$id,"result":{}}\n) }
PL
"$MCPTAP" show -r "$DB" -F -T json -Y 'method == ping' > "$T/slow.out" &
F4=$!
sleep 0.3
perl -e 'use Time::HiRes qw(sleep); $| = 1; for my $i (1 .. 3) { print qq({"jsonrpc":"2.0","id":$i,"method":"ping"}\n); sleep 0.5 } sleep 0.5' |
	"$MCPTAP" record -w "$DB" -- perl "$T/slow.pl" > /dev/null
sleep 0.3
kill -INT $F4
wait $F4
check_eq "show --follow -Y method: each ping and its answer, read in other polls" \
	"request 1|response 1|request 2|response 2|request 3|response 3" \
	"$(grep '"session":3,' "$T/slow.out" | sed 's/.*"kind":"\([a-z]*\)","id":\([0-9]*\),.*/\1 \2/' | paste -sd '|')"

# -s names the sessions followed: a new one is not.
"$MCPTAP" show -r "$DB" -s 1 -F -T json > "$T/one.out" &
F3=$!
sleep 0.3
client 1 0 | "$MCPTAP" record -w "$DB" -- perl "$PEERS/tools-server.pl" > /dev/null
sleep 0.3
kill -INT $F3
wait $F3
check_eq "show -s 1 --follow: session 1 only" "6 6" \
	"$(wc -l < "$T/one.out") $(grep -c '^{"session":1,' "$T/one.out")"

finish
