#!/bin/sh
# mcptap replay --as server delivers as the server did: under --timing ordered
# (the default) an answer is written only once the client has read the server
# messages before it (progress, log messages, list_changed), on a pipe and on a
# Unix socket pair (what node gives its children); --timing none sends the old
# burst; scale=X keeps the gaps and the order; long recorded gaps cost nothing
# by default; a client that does not read makes the wait give up (counted), and
# a client that writes before it reads cannot deadlock with the mock.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load

# The reader: runs the mock with INPUT written to its stdin at once (then
# closed), its stdout on a pipe or a socket pair, and reads it in separate
# read()s, each after a pause, so that what the mock writes without waiting
# piles up into one read. Prints "READ n" before each read's bytes. "late":
# reads only once the mock has exited.
cat > "$T/reader.pl" <<'PL'
use strict;
use warnings;
use Socket;
use Time::HiRes qw(sleep);
my ($mode, $input, $pause, @cmd) = @ARGV;
pipe(my $in_r, my $in_w) or die "pipe: $!";
my ($out_r, $out_w);
if ($mode eq 'socket') {
	socketpair($out_r, $out_w, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!";
} else {
	pipe($out_r, $out_w) or die "pipe: $!";
}
my $pid = fork() // die "fork: $!";
if (!$pid) {
	open(STDIN, '<&', $in_r) or die;
	open(STDOUT, '>&', $out_w) or die;
	close($in_w);
	close($out_r);
	exec(@cmd) or die "exec: $!";
}
close($in_r);
close($out_w);
my $data = do { local $/; open(my $f, '<', $input) or die; <$f> };
my $off = 0;
while ($off < length $data) {
	my $w = syswrite($in_w, $data, length($data) - $off, $off) // die "write: $!";
	$off += $w;
}
close($in_w);
waitpid($pid, 0) if $mode eq 'late';
my $n = 0;
for (;;) {
	my $rin = '';
	vec($rin, fileno($out_r), 1) = 1;
	select($rin, undef, undef, 120) or die "no output for 120 s";
	sleep($pause) if $pause > 0;
	my $got = sysread($out_r, my $buf, 1 << 20) // die "read: $!";
	last if !$got;
	$n++;
	print "READ $n\n$buf";
}
waitpid($pid, 0) if $mode ne 'late';
exit($? >> 8);
PL
reader() { timeout 120 perl "$T/reader.pl" "$@"; }

# Long gaps (60 s each): played at once by default, and never slept through.
cat > "$T/order.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
< {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"t"}}}
@t +60000
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}
@t +60000
< {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2}}
< {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"almost"}}
@t +60000
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}
> {"jsonrpc":"2.0","id":3,"method":"ping"}
< {"jsonrpc":"2.0","id":3,"result":{}}
FX
"$LOAD" "$T/order.fx" "$T/order.db"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"live"}}}' \
	'{"jsonrpc":"2.0","id":4,"method":"ping"}' > "$T/in"
init_out='{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"s","version":"1"}}}'
server_msgs='{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"live","progress":1}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"live","progress":2}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"almost"}}'
answers='{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"done"}]}}
{"jsonrpc":"2.0","id":4,"result":{}}'
ordered="READ 1
$init_out
$server_msgs
READ 2
$answers"

# The default, on a pipe: the first read holds the notifications, not the answer;
# the answer comes only in a later read.
reader pipe "$T/in" 0.3 "$MCPTAP" replay -r "$T/order.db" --as server --no-store --report "$T/p.json" > "$T/p.out" 2> "$T/p.err"
check_eq "ordered on a pipe: exit 0 (and no 60 s gap slept through)" 0 $?
check_eq "ordered on a pipe: the answer is not in the read that holds the notifications" "$ordered" "$(cat "$T/p.out")"
check "ordered on a pipe: one wait" grep -q '"ordered_waits": 1,' "$T/p.json"
check "ordered on a pipe: in time" grep -q '"ordered_timeouts": 0,' "$T/p.json"

# The same on a Unix socket pair (SIOCOUTQ).
reader socket "$T/in" 0.3 "$MCPTAP" replay -r "$T/order.db" --as server --no-store --report "$T/s.json" > "$T/s.out" 2> "$T/s.err"
check_eq "ordered on a socket pair: exit 0" 0 $?
check_eq "ordered on a socket pair: the answer after the notifications were read" "$ordered" "$(cat "$T/s.out")"
check "ordered on a socket pair: one wait" grep -q '"ordered_waits": 1,' "$T/s.json"

# --timing none: the burst, in one write, so one read may hold both.
reader pipe "$T/in" 0.3 "$MCPTAP" replay -r "$T/order.db" --as server --no-store --timing none --report "$T/n.json" > "$T/n.out" 2> "$T/n.err"
check_eq "--timing none: exit 0" 0 $?
check_eq "--timing none: the notifications and the answer in one read" "READ 1
$init_out
$server_msgs
$answers" "$(cat "$T/n.out")"
check "--timing none: no wait" grep -q '"ordered_waits": 0,' "$T/n.json"

# scale=X: the recorded gaps (scaled down here to 60 ms) and the order.
reader pipe "$T/in" 0.3 "$MCPTAP" replay -r "$T/order.db" --as server --no-store --timing scale=0.001 --report "$T/x.json" > "$T/x.out" 2> "$T/x.err"
check_eq "--timing scale: exit 0" 0 $?
check "--timing scale: the answer is never in a read with a notification" \
	awk '/^READ/ { n = 0; a = 0; next } /notifications\/progress/ { n = 1 } /"id":2,"result"/ { a = 1 } n && a { exit 1 }' "$T/x.out"
check_eq "--timing scale: everything, in order" "$init_out
$server_msgs
$answers" "$(grep -v '^READ' "$T/x.out")"
check "--timing scale: ordered too" grep -q '"ordered_waits": 1,' "$T/x.json"

# A client that does not read: the wait gives up (after 2 s), the answer goes out,
# in order, and the summary counts it.
reader late "$T/in" 0 "$MCPTAP" replay -r "$T/order.db" --as server --no-store --report "$T/l.json" > "$T/l.out" 2> "$T/l.err"
check_eq "a client that does not read: exit 0" 0 $?
check_eq "a client that does not read: everything, in order" "$init_out
$server_msgs
$answers" "$(grep -v '^READ' "$T/l.out")"
check "a client that does not read: the wait timed out" grep -q '"ordered_timeouts": 1,' "$T/l.json"
check "a client that does not read: a warning" grep -q "1 answer went out before the client had read the messages before it" "$T/l.err"

# A client that writes all it has before it reads (more than a pipe holds): the mock
# reads ahead while it waits, so the client's write ends, it reads, and nothing
# times out; every ping is answered after the tool's result.
cp "$T/in" "$T/big"
i=0
while [ $i -lt 3000 ]; do
	echo '{"jsonrpc":"2.0","id":'$((i + 100))',"method":"ping"}' >> "$T/big"
	i=$((i + 1))
done
reader pipe "$T/big" 0 "$MCPTAP" replay -r "$T/order.db" --as server --no-store --report "$T/b.json" > "$T/b.out" 2> "$T/b.err"
check_eq "a client that writes before it reads: exit 0" 0 $?
grep -v '^READ' "$T/b.out" | sed -n '1,5p;6,7p' > "$T/b.head"
check_eq "a client that writes before it reads: the flow, in order" "$init_out
$server_msgs
$answers" "$(cat "$T/b.head")"
check_eq "a client that writes before it reads: every ping answered" 3001 "$(grep -c '"result":{}}$' "$T/b.out")"
check "a client that writes before it reads: no timeout" grep -q '"ordered_timeouts": 0,' "$T/b.json"
check "a client that writes before it reads: 3001 pings, 3000 of them from the one recording" grep -q '"reused": 3000,' "$T/b.json"

# No server message before an answer: no wait at all.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"ping"}' '{"jsonrpc":"2.0","id":2,"method":"ping"}' > "$T/pings"
printf '> {"jsonrpc":"2.0","id":1,"method":"ping"}\n< {"jsonrpc":"2.0","id":1,"result":{}}\n' > "$T/ping.fx"
"$LOAD" "$T/ping.fx" "$T/ping.db"
reader pipe "$T/pings" 0 "$MCPTAP" replay -r "$T/ping.db" --as server --no-store --report "$T/q.json" > /dev/null 2>&1
check "answers with no server message before them: no wait" grep -q '"ordered_waits": 0,' "$T/q.json"

finish
