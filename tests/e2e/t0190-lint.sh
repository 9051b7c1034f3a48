#!/bin/sh
# No warnings from cppcheck, and valgrind finds no errors or definite leaks in
# the commands on a real session (a record with the C peers, show, sessions,
# a command that cannot run, a file that is refused), and on pcap imports.
# e2e: long
. "$(dirname "$0")/lib.sh"

check "cppcheck finds nothing" cppcheck --enable=warning,performance,portability --error-exitcode=1 \
	--quiet --inline-suppr -I"$TOP" -D_GNU_SOURCE --std=c11 "$TOP/mcptap.c" "$TOP/cli.c" "$TOP/schema" \
	"$TOP/tap" "$TOP/analyze" "$TOP/tests/peers" "$TOP/tests/bench"

# The release binary (a sanitizer build does not run under valgrind).
BIN=$TOP/mcptap
vg() { valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$@"; }

"$PEERS/mcp-client" -- valgrind -q --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite "$BIN" record -w "$T/v.db" -- "$PEERS/mcp-server" --stderr-lines 2 2> "$T/err"
check_eq "record under valgrind: clean, and the flow succeeds" 0 $?
vg "$BIN" show -r "$T/v.db" > /dev/null
check_eq "show under valgrind" 0 $?
vg "$BIN" show -r "$T/v.db" -T json > /dev/null
check_eq "show -T json under valgrind" 0 $?
vg "$BIN" sessions -r "$T/v.db" -T json > /dev/null
check_eq "sessions under valgrind" 0 $?
vg "$BIN" record -w "$T/v.db" -- /no/such/command < /dev/null 2> /dev/null
check_eq "record of a missing command under valgrind: 127" 127 $?
echo hello > "$T/text"
echo '{}' | vg "$BIN" record -w "$T/text" -- cat > /dev/null 2>&1
check_eq "record with a refused file under valgrind" 0 $?
vg "$BIN" analyze -r "$T/v.db" -T sarif > /dev/null
check_eq "analyze under valgrind" 0 $?
vg "$BIN" stats -r "$T/v.db" > /dev/null
check_eq "stats under valgrind" 0 $?
vg "$BIN" stats -r "$T/v.db" -T json > /dev/null
check_eq "stats -T json under valgrind" 0 $?
vg "$BIN" sessions -r "$T/v.db" > /dev/null
check_eq "sessions as text under valgrind" 0 $?
"$PEERS/mcp-client" -- valgrind -q --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite "$BIN" replay -r "$T/v.db" -s 1 --as server 2> /dev/null
check_eq "replay --as server under valgrind: clean, and the flow succeeds" 0 $?
vg "$BIN" replay -r "$T/v.db" -s 1 --as client -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "replay --as client under valgrind" 0 $?

# pcap import: a real capture, one cut in a packet, one that is not a capture.
PCAP=$TOP/tests/fixtures/pcap/http.pcap
vg "$BIN" import -w "$T/i.db" "$PCAP" 2> /dev/null
check_eq "import under valgrind" 0 $?
head -c $(($(wc -c < "$PCAP") - 100)) "$PCAP" > "$T/cut.pcap"
vg "$BIN" import -w "$T/cut.db" "$T/cut.pcap" 2> /dev/null
check_eq "import of a cut capture under valgrind" 0 $?
vg "$BIN" import -w "$T/bad.db" "$T/text" 2> /dev/null
check_eq "import of what is not a capture under valgrind: 2" 2 $?
vg "$BIN" analyze -r "$T/i.db" --all > /dev/null
check_eq "analyze of an import under valgrind: its findings (1)" 1 $?

finish
