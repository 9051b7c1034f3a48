#!/bin/sh
# t0562-diff-bad: `mcptap diff` given what it cannot compare: each exits 2 with
# one clear line on stderr (and, for a usage error, the pointer to --help),
# nothing on stdout. A missing file, a session the file does not hold, an id
# that is not one, a file that is not a capture (text, empty, a pcap), the same
# for --noise and a third session, the wrong number of sessions, an unknown
# format or option.
# Also: --help prints the usage and exits 0; a session with no exchange is
# compared all the same (every exchange of the other side added or missing).
. "$(dirname "$0")/lib.sh"

LOAD=$PEERS/fixture-load
cat > "$T/a.fx" <<'FX'
> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"jsonrpc":"2.0","id":1,"result":{}}
FX
"$LOAD" "$T/a.fx" "$T/a.db" || die "fixture-load a"
printf '! only stderr\n' > "$T/none.fx"
"$LOAD" "$T/none.fx" "$T/none.db" || die "fixture-load none"
echo hello > "$T/text.txt"
: > "$T/empty.db"
# a pcap file header (little endian, version 2.4, Ethernet)
printf '\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\377\377\000\000\001\000\000\000' > "$T/c.pcap"

USE="mcptap: see 'mcptap diff --help', or man mcptap"
# bad LABEL EXPECTED_STDERR ARG...: mcptap diff ARG... exits 2, prints EXPECTED_STDERR, no stdout.
bad() {
	_l=$1 _exp=$2
	shift 2
	(cd "$T" && "$MCPTAP" diff "$@") > "$T/out" 2> "$T/err"
	_rc=$?
	check_eq "$_l: exit 2" 2 "$_rc"
	check_eq "$_l: stderr" "$_exp" "$(cat "$T/err")"
	check_eq "$_l: nothing on stdout" "" "$(cat "$T/out")"
}

bad "a missing file (A)" "mcptap: cannot open 'nope.db': No such file or directory" nope.db a.db
bad "a missing file (B)" "mcptap: cannot open 'nope.db': No such file or directory" a.db nope.db
bad "a session the file does not hold" "mcptap: 'a.db': no session 9" a.db a.db:9
bad "session 0" "mcptap: bad session id '0'" a.db:0 a.db
bad "an id that is not one" "mcptap: bad session 'x' in 'a.db:x' (FILE:ID, ID a session id)
$USE" a.db:x a.db
bad "a text file" "mcptap: cannot open 'text.txt': file is not a database" a.db text.txt
bad "an empty file" "mcptap: cannot open 'empty.db': empty file, not an mcptap capture" empty.db a.db
bad "a pcap file" "mcptap: cannot open 'c.pcap': it is a pcap packet capture, not an mcptap capture file; store its MCP sessions first: mcptap import -w FILE c.pcap" \
	a.db c.pcap
bad "--noise: a missing file" "mcptap: cannot open 'nope.db': No such file or directory" --noise nope.db a.db a.db
bad "--noise: a session the file does not hold" "mcptap: 'a.db': no session 3" --noise a.db:3 a.db a.db
bad "one session" "mcptap: give two sessions, A and B, and perhaps a third of A's side: FILE[:ID] FILE[:ID] [FILE[:ID]]
$USE" a.db
bad "four sessions" "mcptap: give two sessions, A and B, and perhaps a third of A's side: FILE[:ID] FILE[:ID] [FILE[:ID]]
$USE" a.db a.db a.db a.db
bad "a third session: a missing file" "mcptap: cannot open 'nope.db': No such file or directory" a.db a.db nope.db
bad "an unknown format" "mcptap: unknown format 'xml' (text or json)
$USE" -T xml a.db a.db
bad "an unknown option" "mcptap: unknown option '--bogus'
$USE" --bogus a.db a.db
bad "--noise without its value" "mcptap: option '--noise' needs a value
$USE" a.db a.db --noise

"$MCPTAP" diff --help > "$T/out" 2> "$T/err"
check_eq "--help: exit 0" 0 $?
check "--help: the usage line first" grep -q '^usage: mcptap diff ' "$T/out"
check_eq "--help: nothing on stderr" "" "$(cat "$T/err")"

(cd "$T" && "$MCPTAP" diff none.db a.db) > "$T/out" 2> "$T/err"
check_eq "a session without exchanges against one with two: exit 1" 1 $?
check_eq "its output" "ADDED initialize (B #1)
ADDED ping (B #4)
diff: 0 exchanges in A, 2 in B: 0 same, 0 changed, 2 added, 0 missing" "$(cat "$T/out")"
(cd "$T" && "$MCPTAP" diff none.db none.db) > "$T/out" 2> "$T/err"
check_eq "two sessions without exchanges: exit 0" 0 $?
check_eq "its output" "diff: 0 exchanges in A, 0 in B: 0 same, 0 changed, 0 added, 0 missing" "$(cat "$T/out")"

finish
