#!/bin/sh
# stdin EOF from the client closes the child's stdin and the tap waits for the
# child; a child that exits first has its output drained and the tap exits with
# its status; nothing the tap says goes to stdout.
. "$(dirname "$0")/lib.sh"

# Client closes stdin: the child sees EOF, still writes after it, and its last words arrive.
out=$(printf 'a\nb\n' | "$MCPTAP" record -w "$T/s.db" -- sh -c 'cat; sleep 0.2; echo after-eof')
check_eq "the child saw EOF and its output after it arrived" "a
b
after-eof" "$out"
check_eq "stored in order" "a|b|after-eof" \
	"$(sql "$T/s.db" "select group_concat(trim(cast(raw as text), char(10)), '|') from (select raw from message where dir='s2c' order by seq)")"

# The child exits first while the client keeps stdin open: the tap drains and exits.
mkfifo "$T/in"
( sleep 3; echo late ) > "$T/in" &
feeder=$!
start=$(date +%s)
out=$("$MCPTAP" record -w "$T/s.db" -- sh -c 'echo one; echo two; exit 7' < "$T/in")
rc=$?
end=$(date +%s)
check_eq "child first: its status" 7 $rc
check_eq "child first: its output" "one
two" "$out"
check "child first: the tap did not wait for the client's stdin" test $((end - start)) -lt 3
kill $feeder 2>/dev/null
wait $feeder 2>/dev/null

# The tap never writes to stdout itself, even on errors.
out=$("$MCPTAP" record -w /nonexistent-dir/x.db -- true 2>/dev/null < /dev/null)
check_eq "nothing on stdout when logging fails" "" "$out"
out=$("$MCPTAP" record -w "$T/s.db" -- /no/such 2>/dev/null < /dev/null)
check_eq "nothing on stdout when the command is missing" "" "$out"

# The C peers end to end: the client's whole flow works through the tap, and
# the store agrees with the client's own log (direction, kind, id with its type, method).
"$PEERS/mcp-client" --log "$T/client.jsonl" -- "$MCPTAP" record -w "$T/peers.db" -- \
	"$PEERS/mcp-server" --stderr-lines 3 2> "$T/peers.err"
check_eq "C client through the tap succeeds" 0 $?
"$MCPTAP" show -r "$T/peers.db" -T json > "$T/show.jsonl"
check "the store matches the client's log" node "$NODEDIR/check-store.mjs" "$T/client.jsonl" "$T/show.jsonl"
check_eq "server stderr stored" 3 "$(sql "$T/peers.db" "select count(*) from stderr_line")"
check "server stderr also passed through" grep -q "server log line 3" "$T/peers.err"
check_eq "session knows both peers" "mcptap-test-client|1.0.0|mcptap-test-server|1.0.0|2025-06-18" \
	"$(sql "$T/peers.db" "select client_name, client_version, server_name, server_version, protocol_version from session")"
check_eq "capabilities stored as JSON" 1 \
	"$(sql "$T/peers.db" "select json_extract(server_caps, '\$.tools.listChanged') from session")"
check_eq "exchange view pairs every request" 0 \
	"$(sql "$T/peers.db" "select count(*) from exchange where response_seq is null")"
check_eq "ids keep their type" "integer text" \
	"$(sql "$T/peers.db" "select distinct typeof(id) from message where kind='request' order by 1" | tr '\n' ' ' | sed 's/ $//')"

# A client that hands over non-blocking pipes (O_NONBLOCK is shared with the
# tap): a read with nothing yet is not an end, a full pipe is not a dead reader.
nonblock() {
	perl -e 'use Fcntl; for my $fh (\*STDIN, \*STDOUT) {
		fcntl($fh, F_SETFL, fcntl($fh, F_GETFL, 0) | O_NONBLOCK) or die "fcntl: $!" }
		exec @ARGV or die "exec: $!"' -- "$@"
}
out=$( (sleep 0.3; echo one; sleep 0.3; echo two) | nonblock "$MCPTAP" record -w "$T/nb.db" -- cat | cat)
check_eq "non-blocking stdin: every line relayed" "one
two" "$out"
check_eq "non-blocking stdin: every line stored" 2 \
	"$(sql "$T/nb.db" "select count(*) from message where dir='c2s'")"
n=$(nonblock "$MCPTAP" record -w "$T/nb2.db" -- sh -c 'head -c 1000000 /dev/zero | tr "\0" a; echo' \
	< /dev/null | { sleep 0.5; wc -c; })
check_eq "non-blocking stdout, slow reader: every byte relayed" 1000001 "$n"

# Dead peers: a client that stops reading, a child that closes its stdin.
# The tap ends (no hang) and what it stored is sound.
yes '{"jsonrpc":"2.0","method":"notifications/x"}' | head -n 200000 > "$T/lines"
{ timeout 20 "$MCPTAP" record -w "$T/dead1.db" -- cat < "$T/lines"; echo $? > "$T/dead1.rc"; } | head -n 1 > /dev/null
check "client stops reading: the tap ends" test "$(cat "$T/dead1.rc")" != 124
check_eq "client stops reading: the file is sound" ok "$(sql "$T/dead1.db" "pragma integrity_check")"
check "client stops reading: what was read is stored" test "$(sql "$T/dead1.db" "select count(*) from message")" -gt 0
timeout 20 "$MCPTAP" record -w "$T/dead2.db" -- sh -c 'exec <&-; echo bye; sleep 0.2' < "$T/lines" > "$T/dead2.out"
rc=$?
check_eq "child closes its stdin: the tap ends with the child's status" 0 $rc
check_eq "child closes its stdin: its output arrives" bye "$(cat "$T/dead2.out")"
check_eq "child closes its stdin: the file is sound" ok "$(sql "$T/dead2.db" "pragma integrity_check")"

finish
