#!/bin/sh
# The tap exits as its child did: the same status; the same fatal signal
# (re-raised on itself); 127 and 126 when the command cannot be run, as a
# shell does, with a session row that records why.
. "$(dirname "$0")/lib.sh"

for code in 0 1 3 42 255; do
	"$MCPTAP" record -w "$T/s.db" -- sh -c "exit $code" < /dev/null
	check_eq "exit status $code passes through" "$code" $?
done
check_eq "each run is a session" 5 "$(sql "$T/s.db" "select count(*) from session")"
check_eq "exit statuses are stored" "0 1 3 42 255" \
	"$(sql "$T/s.db" "select exit_status from session order by id" | tr '\n' ' ' | sed 's/ $//')"

# A child killed by a signal: the tap dies of the same signal (the shell's 128+N).
for pair in TERM:15 KILL:9 SEGV:11; do
	sig=${pair%:*}
	num=${pair#*:}
	"$MCPTAP" record -w "$T/sig.db" -- sh -c "kill -$sig \$\$" < /dev/null 2> "$T/sig.err"
	rc=$?
	check_eq "child killed by SIG$sig: tap dies of it too" $((128 + num)) "$rc"
	check_eq "SIG$sig is stored" "$num" \
		"$(sql "$T/sig.db" "select exit_signal from session order by id desc limit 1")"
done
check "no core file left by the re-raised SIGSEGV" test ! -e core

# Not found: 127, a clear message, and a session row saying so.
"$MCPTAP" record -w "$T/nf.db" -- /nonexistent/server --flag < /dev/null 2> "$T/nf.err"
check_eq "command not found exits 127" 127 $?
check "the message names the command and the reason" \
	grep -q "mcptap: cannot run '/nonexistent/server': No such file or directory" "$T/nf.err"
check_eq "the session records the error" "127|cannot run '/nonexistent/server': No such file or directory" \
	"$(sql "$T/nf.db" "select exit_status, error from session")"
"$MCPTAP" record -w "$T/nf.db" -- no-such-command-mcptap < /dev/null 2>/dev/null
check_eq "a name not in PATH exits 127" 127 $?

# Not executable: 126.
printf '#!/bin/sh\necho hi\n' > "$T/noexec.sh"
chmod 0644 "$T/noexec.sh"
"$MCPTAP" record -w "$T/ne.db" -- "$T/noexec.sh" < /dev/null 2> "$T/ne.err"
check_eq "a file without x permission exits 126" 126 $?
check "the message says permission denied" grep -q "Permission denied" "$T/ne.err"
"$MCPTAP" record -w "$T/ne.db" -- "$T" < /dev/null 2>/dev/null
check_eq "a directory exits 126" 126 $?
check_eq "both recorded" "126 126" "$(sql "$T/ne.db" "select exit_status from session" | tr '\n' ' ' | sed 's/ $//')"

# Usage errors never run anything.
"$MCPTAP" record -w "$T/u.db" 2> "$T/u.err" < /dev/null
check_eq "no command is a usage error (2)" 2 $?
check "it says what is missing" grep -q "no command to run" "$T/u.err"
env -u MCPTAP_FILE "$MCPTAP" record -- true 2> "$T/u.err" < /dev/null
check_eq "no capture file is a usage error" 2 $?
check "the capture file was not created" test ! -e "$T/u.db"

finish
