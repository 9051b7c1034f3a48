#!/bin/sh
# Another program holding the capture file's write lock (6 s, longer than
# SQLite's usual 5 s busy timeout) stalls neither the server's start nor the
# relay, and loses nothing: the tap holds what it relays and stores it all,
# in order, when the lock goes. At the end the tap waits for the lock, says
# so, and a signal ends that wait.
. "$(dirname "$0")/lib.sh"

# lock DB SECONDS: hold the write lock for that long, in the background; the
# holder's pid is in $lock, and "$T/locked" exists once it holds it.
lock() {
	rm -f "$T/locked"
	printf 'BEGIN IMMEDIATE;\n.shell touch %s/locked\n.shell sleep %s\nCOMMIT;\n' "$T" "$2" |
		setsid sqlite3 -batch "$1" > /dev/null &
	lock=$! # (a process group of its own: its .shell sleep goes with it)
	i=0
	while [ ! -e "$T/locked" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
held() { kill -0 "$lock" 2> /dev/null; }

echo '{}' | "$MCPTAP" record -w "$T/a.db" -- cat > /dev/null   # an existing capture, one session

# 1. Locked from the start: the server runs and answers at once.
lock "$T/a.db" 6
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"ping"}' |
	"$MCPTAP" record -w "$T/a.db" -- sh -c 'read l; echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"' \
	2> "$T/a.err" | { read -r line; echo "$line" > "$T/a.out"; if held; then echo yes; else echo no; fi > "$T/a.held"; cat > /dev/null; }
check_eq "locked at the start: the server's answer reaches the client while the lock is held" yes "$(cat "$T/a.held")"
check_eq "the answer is the server's" '{"jsonrpc":"2.0","id":1,"result":{}}' "$(cat "$T/a.out")"
check "the tap said it waits for the file at the end" grep -q "waiting for '$T/a.db', locked by another connection" "$T/a.err"
check "and never that it cannot log" sh -c '! grep -q "cannot log\|database is locked" "$1"' sh "$T/a.err"
check_eq "when the lock went, the session was stored whole" "2|0|ended" \
	"$(sql "$T/a.db" "select (select count(*) from message where session = 2), exit_status, 'ended' from session where id = 2 and ended_wall is not null")"
wait "$lock"

# 2. A flood while the lock is held: 5000 lines of 2 KB (10 MB, under --hold)
# all reach the client while the lock is still held, and all are stored.
perl -e 'print "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":$_,\"p\":\"", "x" x 2000, "\"}}\n" for 1 .. 5000' > "$T/flood"
lock "$T/a.db" 6
"$MCPTAP" record -w "$T/a.db" -- cat "$T/flood" < /dev/null 2> "$T/b.err" |
	{ cat > "$T/b.out"; if held; then echo yes; else echo no; fi > "$T/b.held"; }
check_eq "a 10 MB flood under a held lock reaches the client before the lock goes" yes "$(cat "$T/b.held")"
check_eq "byte for byte" "$(sha256sum < "$T/flood")" "$(sha256sum < "$T/b.out")"
check_eq "all 5000 lines are stored, in order, seqs dense" "5000|5000|5000" \
	"$(sql "$T/a.db" "select count(*), max(seq) - min(seq) + 1, sum(instr(raw, '\"i\":' || seq || ',') > 0) from message where session = 3")"
check_eq "no gap" 0 "$(sql "$T/a.db" "select count(*) from gap")"
wait "$lock"

# 3. More than --hold: the relay waits for the lock (backpressure), and loses
# nothing.
lock "$T/a.db" 3
"$MCPTAP" record -w "$T/a.db" --hold 1M -- cat "$T/flood" < /dev/null 2> "$T/c.err" > "$T/c.out"
check_eq "past --hold the relay waits, then delivers every byte" "$(sha256sum < "$T/flood")" "$(sha256sum < "$T/c.out")"
check "it said it waits at --hold" grep -q "is locked by another connection and the tap holds [0-9]* bytes for it (--hold): the relay waits for it now" "$T/c.err"
check_eq "and stored everything" 5000 "$(sql "$T/a.db" "select count(*) from message where session = 4")"
wait "$lock"

# 4. A lock that stays after the server exited: SIGTERM ends the wait; the tap
# says what it gave up and exits with the server's status.
lock "$T/a.db" 30
"$MCPTAP" record -w "$T/a.db" -- sh -c 'echo "{}"; exit 3' < /dev/null > /dev/null 2> "$T/d.err" &
tap=$!
i=0
while ! grep -q "waiting for" "$T/d.err" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
kill -TERM "$tap"
wait "$tap"
check_eq "SIGTERM while waiting for the file: the server's exit status" 3 $?
check "it says it stopped waiting" grep -q "stopped waiting for '$T/a.db', locked by another connection" "$T/d.err"
check "the lock holder was still there" held
kill -- "-$lock" 2> /dev/null
wait "$lock" 2> /dev/null

# 5. A long writer beside a tap: analyze stores 200,000 findings in 50 ms
# slices while a tap floods the same file; both store everything, and the
# analysis is complete (latest_finding) only when all of its findings are in.
perl -e 'print "not json $_\n" for 1 .. 200000' > "$T/garbage"
"$MCPTAP" record -w "$T/g.db" -- cat "$T/garbage" < /dev/null > /dev/null
"$MCPTAP" analyze -r "$T/g.db" -s 1 > /dev/null &
an=$!
"$MCPTAP" record -w "$T/g.db" -- cat "$T/flood" < /dev/null 2> "$T/e.err" > "$T/e.out"
wait "$an"
check_eq "analyze exits 1 (errors found)" 1 $?
check_eq "the tap beside it delivered every byte" "$(sha256sum < "$T/flood")" "$(sha256sum < "$T/e.out")"
check_eq "and stored every line" 5000 "$(sql "$T/g.db" "select count(*) from message where session = 2")"
check_eq "the analysis is complete with all its findings" "1|200000|200000" \
	"$(sql "$T/g.db" "select complete, errors, (select count(*) from latest_finding) from analysis")"
check_eq "nothing said" "" "$(cat "$T/e.err")"

finish
