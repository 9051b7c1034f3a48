#!/bin/sh
# analyze stores its findings as they come: the analysis row says the revision,
# the counts and (with --rules/--skip-rules) the rules that ran, and
# latest_finding shows, per rule, the newest complete analysis that ran it. A
# capture it cannot write (another user's file, read-only media) is analyzed
# all the same, with one warning and nothing created beside it. Memory does not
# grow with the number of findings, whatever the format.
. "$(dirname "$0")/lib.sh"

cat > "$T/s.fx" <<'EOF'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":2,"method":"tools/list"}
< hello from server
< {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}
< {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}
> {"jsonrpc":"2.0","id":3,"method":"ping"}
EOF
"$PEERS/fixture-load" "$T/s.fx" "$T/s.db" || die "cannot load the fixture"

# 1. A full run, then one rule, then all but that rule.
"$MCPTAP" analyze -r "$T/s.db" > "$T/full.txt"
check_eq "a full run: exit 1 (errors)" 1 $?
check_eq "its row: the negotiated revision, the counts, every rule, complete" \
	"1|2025-06-18|negotiated|2|1|0|1|" \
	"$(sql "$T/s.db" "select id, spec, spec_source, errors, warnings, infos, complete, coalesce(rules, '') from analysis")"
check_eq "its findings" "LIFE-015|warning|8
RPC-004|error|7
STDIO-002|error|5" "$(sql "$T/s.db" "select rule, severity, seq from finding where analysis = 1 order by rule")"
"$MCPTAP" analyze -r "$T/s.db" --rules LIFE-015 --fail-on never > /dev/null
check_eq "--rules LIFE-015: exit 0 (--fail-on never)" 0 $?
check_eq "its row names the rule that ran" "2|0|1|0|1|LIFE-015" \
	"$(sql "$T/s.db" "select id, errors, warnings, infos, complete, rules from analysis where id = 2")"
check_eq "latest_finding: LIFE-015 from the new run, the others from the full one" "1|RPC-004|7
1|STDIO-002|5
2|LIFE-015|8" "$(sql "$T/s.db" "select analysis, rule, seq from latest_finding order by analysis, rule")"
"$MCPTAP" analyze -r "$T/s.db" --skip-rules LIFE-015 > /dev/null
checked=$("$MCPTAP" analyze --list-rules -T json | node -e '
const l = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
console.log(l.filter((r) => r.checked && r.id !== "LIFE-015").map((r) => r.id).join(","))')
check_eq "--skip-rules LIFE-015: its row lists every other checked rule" "$checked" \
	"$(sql "$T/s.db" "select rules from analysis where id = 3")"
check_eq "latest_finding: LIFE-015 still from the run that ran it" "2|LIFE-015
3|RPC-004
3|STDIO-002" "$(sql "$T/s.db" "select analysis, rule from latest_finding order by analysis, rule")"
"$MCPTAP" analyze -r "$T/s.db" --rules LIFE,RPC,STDIO,CAP,CANCEL,PING,PROG,RES,SPEC,TASK,V26,HTTP,SSE,AUTH,TAP > /dev/null
check_eq "--rules naming every rule: the row says every rule (NULL)" "4|1" \
	"$(sql "$T/s.db" "select id, rules is null from analysis where id = 4")"
check_eq "and latest_finding is that run's" "4|3" "$(sql "$T/s.db" "select min(analysis), count(*) from latest_finding")"

# 2. Captures it cannot write: the same report, one warning, nothing stored,
# nothing beside the file. Root runs the reader as another user on root's
# file (in a folder that user cannot write), and on a read-only bind mount.
mkdir "$T/ro"
cp "$T/s.db" "$T/ro/s.db"
"$MCPTAP" analyze -r "$T/ro/s.db" --no-store > "$T/want.txt"
"$MCPTAP" analyze -r "$T/ro/s.db" --no-store -T sarif > "$T/want.sarif"
if [ "$(id -u)" = 0 ]; then
	if other_user; then
		mkdir "$U/ro"
		cp "$T/ro/s.db" "$U/ro/s.db"
		chmod 0755 "$U/ro"
		chmod 0644 "$U/ro/s.db"
		"$MCPTAP" analyze -r "$U/ro/s.db" --no-store -T sarif > "$T/want-u.sarif"
		before=$(sql "$U/ro/s.db" "select count(*) from analysis")
		$AS "$U_MCPTAP" analyze -r "$U/ro/s.db" > "$T/u.txt" 2> "$T/u.err"
		check_eq "another user's file: exit 1 as usual" 1 $?
		check_eq "another user's file: the full report" "$(cat "$T/want.txt")" "$(cat "$T/u.txt")"
		check_eq "another user's file: one warning, with the reason" \
			"mcptap: warning: cannot store the findings in '$U/ro/s.db': the file belongs to another user" \
			"$(cat "$T/u.err")"
		$AS "$U_MCPTAP" analyze -r "$U/ro/s.db" -T sarif > "$T/u.sarif" 2> /dev/null
		check "another user's file: the full SARIF report" cmp -s "$T/want-u.sarif" "$T/u.sarif"
		check_eq "another user's file: nothing stored" "$before" "$(sql "$U/ro/s.db" "select count(*) from analysis")"
		check_eq "another user's file: nothing beside it" "s.db" "$(ls "$U/ro")"
	fi
	before=$(sql "$T/ro/s.db" "select count(*) from analysis")

	unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
		"$2" analyze -r "$1/s.db" > "$1/../m.txt" 2> "$1/../m.err"; echo $? > "$1/../m.rc"' sh "$T/ro" "$MCPTAP"
	check_eq "read-only media: exit 1 as usual" 1 "$(cat "$T/m.rc")"
	check_eq "read-only media: the full report" "$(cat "$T/want.txt")" "$(cat "$T/m.txt")"
	check_eq "read-only media: one warning, with the reason" \
		"mcptap: warning: cannot store the findings in '$T/ro/s.db': Read-only file system" \
		"$(cat "$T/m.err")"
	check_eq "read-only media: nothing beside it" "s.db" "$(ls "$T/ro")"
	check_eq "read-only media: nothing stored" "$before" "$(sql "$T/ro/s.db" "select count(*) from analysis")"
else
	echo "# skipped: another user's file and read-only media need root (setpriv, unshare -m)"
	chmod 0444 "$T/ro/s.db"
	"$MCPTAP" analyze -r "$T/ro/s.db" > "$T/u.txt" 2> "$T/u.err"
	check_eq "a read-only file: exit 1 as usual" 1 $?
	check_eq "a read-only file: the full report" "$(cat "$T/want.txt")" "$(cat "$T/u.txt")"
	check_eq "a read-only file: one warning, with the reason" \
		"mcptap: warning: cannot store the findings in '$T/ro/s.db': Permission denied" "$(cat "$T/u.err")"
	check_eq "a read-only file: nothing beside it" "s.db" "$(ls "$T/ro")"
fi
check_eq "a writable file: nothing left beside it either" "s.db" "$(cd "$T" && ls s.db*)"

# 3. Memory: peak RSS with 20,000 and 200,000 findings (a line of text on
# stdout each), stored, in each format: the same within 4 MiB.
[ -n "${ASAN_OPTIONS:-}" ] && echo "# peak RSS not compared under AddressSanitizer (its quarantine keeps freed memory)"
if [ -x /usr/bin/time ]; then
	for n in 20000 200000; do
		perl -e 'print "not json $_\n" for 1 .. $ARGV[0]' "$n" > "$T/g$n"
		"$MCPTAP" record -w "$T/g$n.db" -- cat "$T/g$n" < /dev/null > /dev/null
	done
	for fmt in text json sarif junit; do
		for n in 20000 200000; do
			cp "$T/g$n.db" "$T/m.db"
			/usr/bin/time -f %M -o "$T/rss$n" "$MCPTAP" analyze -r "$T/m.db" -T "$fmt" > "$T/m.out"
			check_eq "$fmt, $n findings: all stored" "1|$n|$n" \
				"$(sql "$T/m.db" "select complete, errors, (select count(*) from latest_finding) from analysis")"
			rm -f "$T/m.db"
		done
		small=$(tail -n 1 "$T/rss20000") big=$(tail -n 1 "$T/rss200000")
		# (Under AddressSanitizer, RSS follows what was ever allocated: its
		# quarantine keeps freed memory. make check runs the rest.)
		if [ -z "${ASAN_OPTIONS:-}" ]; then
			check "$fmt: peak RSS ${small} KiB with 20,000 findings, ${big} KiB with 200,000" \
				test $((big - small)) -lt 4096
		fi
	done
	check_eq "sarif: a result per finding" 200000 "$("$MCPTAP" analyze -r "$T/g200000.db" --no-store -T sarif | grep -c '"ruleId": "STDIO-002"')"
else
	echo "# skipped: the memory checks need GNU time (tests/setup.sh bench)"
fi

finish
