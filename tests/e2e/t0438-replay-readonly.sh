#!/bin/sh
# t0438-replay-readonly: replay on a capture this user may read but not write
# (another user's file, in a folder this user may not write). --as client
# says once on stderr that its run is not stored and why, prints its line per
# request and its summary, and exits as usual (0, or 1 on a DIFF); the mock
# answers, writes its --report, says once that its run is not stored, and
# exits as usual. The file is left as it was, and nothing is made beside it.
# (Being another user needs root and setpriv: without them it is skipped,
# saying so. That user runs copies of mcptap and the peer, on files in a
# folder it can enter, whatever the modes of the folders above the checkout.)
. "$(dirname "$0")/lib.sh"

"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "recorded the C peers" 0 $?

other_user mcp-server || finish
mkdir "$U/ro" "$U/out"
cp "$T/c.db" "$U/ro/c.db"
chmod 644 "$U/ro/c.db"
chmod 555 "$U/ro"
chown 65534 "$U/out"
cp "$U/ro/c.db" "$T/before.db"
DB=$U/ro/c.db
SRV=$U_PEERS/mcp-server
not_stored="mcptap: warning: replay: the run is not stored in '$DB': Permission denied"

# The recorded client, one run: every line, the summary, exit 0, one warning.
$AS "$U_MCPTAP" replay -r "$DB" --as client --runs 1 -- "$SRV" > "$T/v.out" 2> "$T/v.err"
check_eq "--as client on a file it may not write: exit 0" 0 $?
check_eq "stderr: once, that the run is not stored and why" "$not_stored" "$(cat "$T/v.err")"
check_eq "a PASS line per recorded request" 11 "$(grep -c '^PASS #' "$T/v.out")"
check_eq "and the summary (one run)" \
	"replay: 11 requests: 11 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; 0 paths set aside as noise over 1 run (session 1 against $(shq "$SRV"))" \
	"$(tail -n 1 "$T/v.out")"

# A changed answer: DIFF and exit 1, as with a file it may write.
changed="$(shq "$SRV") | sed -u 's/\"text\":\"hello\"/\"text\":\"HELLO\"/'"
$AS "$U_MCPTAP" replay -r "$DB" --as client -- sh -c "$changed" > "$T/d.out" 2> "$T/d.err"
check_eq "a changed answer: exit 1" 1 $?
check_eq "the DIFF line" "DIFF #8 tools/call echo: result.content[0].text" "$(grep '^DIFF' "$T/d.out")"
check_eq "stderr: the same one warning" "$not_stored" "$(cat "$T/d.err")"

# The mock: answers, its report, one warning, exit 0.
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
echo_req='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
printf '%s\n' "$init" "$echo_req" |
	$AS "$U_MCPTAP" replay -r "$DB" --as server --report "$U/out/r.json" > "$T/m.out" 2> "$T/m.err"
check_eq "the mock on a file it may not write: exit 0" 0 $?
check_eq "stderr: once, that its run is not stored and why" "$not_stored" "$(cat "$T/m.err")"
check_eq "both requests answered" \
	'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hello"}]}}' "$(sed -n 2p "$T/m.out")"
check_eq "the report: 2 requests, 2 answered, no miss, ok" '2|2|0|true' \
	"$(sed -n 's/^  "\(requests\|answered\|missed\|ok\)": \([0-9a-z]*\),\{0,1\}$/\2/p' "$U/out/r.json" | tr '\n' '|' | sed 's/|$//')"

# --strict and a miss: the summary, the warning, exit 1; a report it may not
# write: a warning of its own.
printf '%s\n' "$init" '{"jsonrpc":"2.0","id":3,"method":"no/such"}' |
	$AS "$U_MCPTAP" replay -r "$DB" --as server --strict --report "$U/ro/r.json" > /dev/null 2> "$T/s.err"
check_eq "--strict with a miss: exit 1" 1 $?
check_eq "stderr: the summary, the report's warning, the run's" \
	"mcptap: replay: 1 request answered from the recording (0 again), 1 without a recording, 10 recorded requests never asked for
mcptap: warning: replay: cannot write the report '$U/ro/r.json': Permission denied
$not_stored" "$(cat "$T/s.err")"

check "the file is as it was" cmp "$T/before.db" "$DB"
check_eq "and nothing was made beside it" "c.db" "$(ls -A "$U/ro")"
finish
