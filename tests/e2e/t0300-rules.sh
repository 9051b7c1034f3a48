#!/bin/sh
# Every rule of the analyzer has a minimal session that triggers it (ID.fail*)
# and one that does not (ID.pass*) in tests/fixtures/rules, and is documented
# in mcptap-rules.7, which is what tests/man-rules.sh writes from the table.
# Each fixture is loaded into a capture file by the fixture loader (the same
# classifier and store as record) and analyzed for real.
# e2e: long
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures/rules
LOAD=$PEERS/fixture-load

# RULES=CAP,LIFE-001 limits the run to those ids or prefixes (while working on a family).
only=${RULES:-}
pick() { if [ -z "$only" ]; then cat; else grep -E "^($(echo "$only" | sed 's/,/|/g'))"; fi; }
rules=$("$MCPTAP" analyze --list-rules | awk 'NR > 1 && !/\[not checked on its own\]$/ {print $1}' | pick)
all=$("$MCPTAP" analyze --list-rules | awk 'NR > 1 {print $1}' | pick)
check "the rule table is not empty" test -n "$rules"

# Coverage: fixtures and the man page.
for id in $rules; do
	set -- "$FIX/$id".fail*
	check "$id has a failing fixture" test -f "$1"
	set -- "$FIX/$id".pass*
	check "$id has a passing fixture" test -f "$1"
done
for id in $all; do
	check "$id has its entry in mcptap-rules.7" \
		grep -qxF -- ".B $(printf '%s' "$id" | sed 's/-/\\-/g')" "$TOP/mcptap-rules.7"
done
if [ -z "$only" ]; then
	sh "$TOP/tests/man-rules.sh" "$MCPTAP" "$T/rules.7"
	check "mcptap-rules.7 is up to date with --list-rules (make man-rules)" \
		cmp -s "$T/rules.7" "$TOP/mcptap-rules.7"
	check_eq "it has one entry per rule" "$(printf '%s\n' "$all" | wc -l)" \
		"$(grep -c '^\.TP$' "$TOP/mcptap-rules.7")"
	check "mcptap.1 links to it" grep -q '^\.BR mcptap\\-rules (7)' "$TOP/mcptap.1"
fi
# No fixture for a rule that does not exist.
for f in "$FIX"/*.fail* "$FIX"/*.pass*; do
	[ -f "$f" ] || continue
	id=$(basename "$f" | sed 's/\.\(fail\|pass\).*//')
	[ -z "$only" ] || printf '%s\n' "$id" | pick > /dev/null || continue
	check "$(basename "$f") names a rule in the table" sh -c "printf '%s\n' \"\$1\" | grep -qx -- \"\$2\"" sh "$rules" "$id"
done

# Run them.
n=0
for f in "$FIX"/*.fail* "$FIX"/*.pass*; do
	[ -f "$f" ] || continue
	name=$(basename "$f")
	id=$(echo "$name" | sed 's/\.\(fail\|pass\).*//')
	[ -z "$only" ] || printf '%s\n' "$id" | pick > /dev/null || continue
	db="$T/$name.db"
	"$LOAD" "$f" "$db" || { check "$name loads" false; continue; }
	args=$(sed -n 's/^@args //p' "$f" | tr '\n' ' ')
	# shellcheck disable=SC2086
	"$MCPTAP" analyze -r "$db" --no-store --fail-on never -T json $args > "$T/$name.json" 2> "$T/$name.err"
	rc=$?
	check_eq "$name: analyze runs" 0 $rc
	if grep -q "\"rule\": \"$id\"" "$T/$name.json"; then found=1; else found=0; fi
	case $name in
	*.fail*) check_eq "$name: $id is reported" 1 $found ;;
	*.pass*) check_eq "$name: $id is not reported" 0 $found ;;
	esac
	n=$((n + 1))
done
echo "# ran $n fixtures"

# SARIF's help text and the HTML report's rule entries send the reader to
# mcptap-rules.7.
if [ -z "$only" ]; then
	"$LOAD" "$FIX/LIFE-001.fail" "$T/link.db"
	"$MCPTAP" analyze -r "$T/link.db" --no-store --fail-on never -T sarif > "$T/link.sarif"
	check "SARIF help names mcptap-rules(7)" grep -qF \
		"\`mcptap analyze --list-rules\` and mcptap-rules(7) list every rule." "$T/link.sarif"
	"$MCPTAP" report -r "$T/link.db" -o "$T/link.html"
	check "the HTML report's rules name mcptap-rules(7)" grep -qF \
		'. In mcptap-rules(7): LIFE-001.</span>' "$T/link.html"
fi

finish
