#!/bin/sh
# The command line: usage text has one source, and the man page's SYNOPSIS
# says what --help says; every command is documented; errors read the same.
. "$(dirname "$0")/lib.sh"
MAN=$TOP/mcptap.1

# The SYNOPSIS is wrapped to 80 columns: a line that does not begin with
# "mcptap" goes on the usage above it (its indent, "\ " each, dropped).
synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$MAN" | sed -n 's/^\.B //p' |
	awk '/^mcptap / { if (u != "") print u; u = $0; next }
		{ sub(/^(\\ )+/, ""); u = u " " $0 } END { print u }')
wide=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$MAN" | sed -n 's/^\.B //p' |
	sed 's/\\ / /g' | awk 'length($0) + 7 > 80')
check_eq "no SYNOPSIS line is wider than 80 columns (7 of indent)" "" "$wide"
cmds=$("$MCPTAP" --help | awk '/^  [a-z]+ /{print $1}')
check "--help lists commands" test -n "$cmds"
for c in $cmds; do
	"$MCPTAP" "$c" --help > "$T/help"
	check_eq "$c --help exits 0" 0 $?
	# Every usage line (the first, and each "or:" after it) is a SYNOPSIS line.
	n=0
	for usage in $(sed -n 's/^usage: //p; s/^   or: //p' "$T/help" | tr ' ' '\037'); do
		usage=$(printf '%s' "$usage" | tr '\037' ' ')
		n=$((n + 1))
		check "$c: usage line $n is a line of the man page's SYNOPSIS" sh -c "printf '%s\n' \"\$1\" | grep -qxF -- \"\$2\"" sh "$synopsis" "$usage"
	done
	check "$c: it has a usage line" test "$n" -ge 1
	check "$c: the man page has a section for it" grep -q "^\.SS $c\$" "$MAN"
	# Each option of --help has an entry (a .TP tag) in the command's section,
	# and the entries come in --help's order.
	awk -v c="$c" '$0 == ".SS " c { p = 1; next } /^\.S[SH] / { p = 0 }
		p && tag { gsub(/\\-/, "-"); gsub(/\\f[BIRP]/, ""); print; tag = /\\$/ }
		p && /^\.TP/ { tag = 1 }' "$MAN" |
		grep -oE -- '(^|[^[:alnum:]-])--?[[:alpha:]][[:alnum:]-]*' |
		sed 's/^[^-]*//' | awk '!seen[$0]++' > "$T/tags"
	sed -n 's/^ \{2,6\}\(-.*\)/\1/p' "$T/help" | sed 's/  .*//' |
		grep -v -- '--help' | awk '!seen[$0]++' > "$T/opts"
	out_of_order="" undocumented="" last=0
	while read -r line; do
		first=0
		for o in $(printf '%s\n' "$line" | grep -oE -- '--?[[:alpha:]][[:alnum:]-]*'); do
			at=$(grep -nxF -- "$o" "$T/tags" | cut -d: -f1)
			[ -n "$at" ] && { [ "$first" -eq 0 ] || [ "$at" -lt "$first" ]; } && first=$at
		done
		if [ "$first" -eq 0 ]; then
			undocumented="$undocumented $line;"
		elif [ "$first" -lt "$last" ]; then
			out_of_order="$out_of_order $line;"
		else
			last=$first
		fi
	done < "$T/opts"
	check_eq "$c: every option of --help has an entry in the man page" "" "$undocumented"
	check_eq "$c: the entries come in --help's order" "" "$out_of_order"
	check "$c: the README mentions it" grep -q "mcptap $c" "$TOP/README.md"
	"$MCPTAP" "$c" --no-such-option < /dev/null > "$T/out" 2> "$T/err"
	check_eq "$c: an unknown option is a usage error" 2 $?
	check_eq "$c: it says which, and where the help is, in two lines" \
		"mcptap: unknown option '--no-such-option'|mcptap: see 'mcptap $c --help', or man mcptap" \
		"$(tr '\n' '|' < "$T/err" | sed 's/|$//')"
	check_eq "$c: and prints nothing on stdout" "" "$(cat "$T/out")"
done
check_eq "--version" "mcptap $(sed -n 's/^VERSION = //p' "$TOP/Makefile")" "$("$MCPTAP" --version)"
check "the man page carries the same version" grep -q "\"mcptap $(sed -n 's/^VERSION = //p' "$TOP/Makefile")\"" "$MAN"
"$MCPTAP" frobnicate 2> "$T/err"
check_eq "an unknown command: 2" 2 $?
check "an unknown command: says so" grep -q "^mcptap: 'frobnicate' is not a command" "$T/err"
"$MCPTAP" > /dev/null 2>&1
check_eq "no command: 2" 2 $?

# A packet capture given to a reader: it says so, and how to import it.
printf '\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\377\377\000\000\001\000\000\000' > "$T/p.pcap"
printf '\012\015\015\012\034\000\000\000\115\074\053\032\001\000\000\000\377\377\377\377\377\377\377\377\034\000\000\000' > "$T/p it.pcapng"
for c in show sessions stats analyze "replay --as server"; do
	# shellcheck disable=SC2086
	"$MCPTAP" $c -r "$T/p.pcap" > /dev/null 2> "$T/err"
	check_eq "$c of a pcap: 2, and how to import it" \
		"2|mcptap: cannot open '$T/p.pcap': it is a pcap packet capture, not an mcptap capture file; store its MCP sessions first: mcptap import -w FILE $(shq "$T/p.pcap")" \
		"$?|$(cat "$T/err")"
done
"$MCPTAP" show -r "$T/p it.pcapng" 2> "$T/err"
check_eq "show of a pcapng (a space in its name): 2, and how" \
	"2|mcptap: cannot open '$T/p it.pcapng': it is a pcapng packet capture, not an mcptap capture file; store its MCP sessions first: mcptap import -w FILE $(shq "$T/p it.pcapng")" \
	"$?|$(cat "$T/err")"
printf '\037\213\010\000\000\000\000\000\000\003' > "$T/p.pcap.gz"
"$MCPTAP" stats -r "$T/p.pcap.gz" 2> "$T/err"
check_eq "stats of a gzip file: 2, and how" \
	"2|mcptap: cannot open '$T/p.pcap.gz': it is gzip-compressed (a packet capture?), not an mcptap capture file; store its MCP sessions first: mcptap import -w FILE $(shq "$T/p.pcap.gz")" \
	"$?|$(cat "$T/err")"
printf 'not a database, not a capture' > "$T/text"
"$MCPTAP" show -r "$T/text" 2> "$T/err"
check_eq "show of another file: 2, and SQLite's reason" "2|mcptap: cannot open '$T/text': file is not a database" \
	"$?|$(cat "$T/err")"

# MCPTAP_FILE stands in for -w and -r.
echo '{"jsonrpc":"2.0","id":7,"method":"ping"}' | MCPTAP_FILE="$T/env.db" "$MCPTAP" record -- cat > /dev/null
check_eq "MCPTAP_FILE for record" 1 "$(sql "$T/env.db" "select count(*) from session")"
check "MCPTAP_FILE for show" sh -c "MCPTAP_FILE='$T/env.db' '$MCPTAP' show | grep -q ping"
check "MCPTAP_FILE for sessions" sh -c "MCPTAP_FILE='$T/env.db' '$MCPTAP' sessions | grep -q '^   1 '"

# show: -s picks a session; a bad or missing one is an error.
echo '{"jsonrpc":"2.0","id":8,"method":"tools/list"}' | "$MCPTAP" record -w "$T/env.db" -- cat > /dev/null
check "show -s 1 shows the first session" sh -c "'$MCPTAP' show -r '$T/env.db' -s 1 | grep -q ping"
check "show without -s shows the newest" sh -c "'$MCPTAP' show -r '$T/env.db' | grep -q tools/list"
"$MCPTAP" show -r "$T/env.db" -s 9 2> "$T/err"
check_eq "show -s of a missing session: 2" 2 $?
check "it says which" grep -q "no session 9" "$T/err"
"$MCPTAP" show -r "$T/env.db" -s abc 2> "$T/err"
check_eq "show -s abc: 2" 2 $?
"$MCPTAP" show -r "$T/env.db" -T xml 2> "$T/err"
check_eq "an unknown format: 2" 2 $?

# JSON output is one valid object per line.
"$MCPTAP" sessions -r "$T/env.db" -T json > "$T/s.json"
check_eq "sessions -T json: one line per session" 2 "$(wc -l < "$T/s.json" | tr -d ' ')"
check "sessions -T json is JSON" node -e 'require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").forEach(l => JSON.parse(l))' "$T/s.json"
"$MCPTAP" show -r "$T/env.db" -T json > "$T/m.json"
check "show -T json is JSON with typed ids" node -e '
const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const req = l.find(m => m.kind === "request");
if (req.id !== 8 || req.method !== "tools/list" || req.dir !== "c2s") process.exit(1);' "$T/m.json"

# Colour: never with NO_COLOR, never off a terminal.
"$MCPTAP" show -r "$T/env.db" > "$T/plain"
check "no colour when not on a terminal" sh -c "! grep -q \"$(printf '\033')\" '$T/plain'"
if command -v script > /dev/null; then
	script -qc "'$MCPTAP' show -r '$T/env.db'" /dev/null > "$T/tty" < /dev/null
	check "colour on a terminal" grep -q "$(printf '\033')\[" "$T/tty"
	NO_COLOR=1 script -qc "'$MCPTAP' show -r '$T/env.db'" /dev/null > "$T/tty" < /dev/null
	check "no colour with NO_COLOR" sh -c "! grep -q \"$(printf '\033')\[\" '$T/tty'"
fi

# An option given without its value says so (not "unknown option"), in every command.
for args in "record -w" "sessions -r" "show -T" "analyze --fail-on" "stats -s" "replay -r"; do
	# shellcheck disable=SC2086
	"$MCPTAP" $args < /dev/null > /dev/null 2> "$T/nv.err"
	rc=$?
	check_eq "$args without a value: exit 2" 2 $rc
	check "$args without a value: says it needs one" grep -q "needs a value" "$T/nv.err"
done

finish
