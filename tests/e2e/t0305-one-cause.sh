#!/bin/sh
# One cause, one finding: a catalogue of sessions (tests/fixtures/causes/NAME.jsonl,
# the rule fixtures' format: "> " client lines, "< " server lines, "@max-message N"
# for lines that become a capture gap) where one thing is wrong, each with the
# exact findings the analyzer must report (NAME.expected: "RULE SEQ" lines). Any
# finding more or less fails: a finding that only follows from another, a JSON-RPC
# message also called "not a valid MCP message", an answer taken for an answer to
# no request, a gap or a message beyond the parser's limits taken for missing data.
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures/causes
LOAD=$PEERS/fixture-load

n=0
for f in "$FIX"/*.jsonl; do
	name=$(basename "$f" .jsonl)
	check "$name has an expected file" test -f "$FIX/$name.expected"
	check "$name says what it shows" grep -q '^# ' "$f"
	grep -v '^#' "$FIX/$name.expected" | grep -q . || { check "$name expects a finding" false; continue; }
	db="$T/$name.db"
	"$LOAD" "$f" "$db" || { check "$name loads" false; continue; }
	"$MCPTAP" analyze -r "$db" --no-store --fail-on never -T json > "$T/$name.json" 2> "$T/$name.err"
	check_eq "$name: analyze runs" 0 $?
	node -e '
		const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		for (const s of r.sessions) for (const f of s.findings) console.log(f.rule + " " + f.seq);
	' "$T/$name.json" | sort > "$T/$name.got"
	grep -v '^#' "$FIX/$name.expected" | grep . | sort > "$T/$name.want"
	if cmp -s "$T/$name.want" "$T/$name.got"; then
		check "$name: exactly the expected findings" true
	else
		check_eq "$name: exactly the expected findings" "$(tr '\n' ',' < "$T/$name.want")" \
			"$(tr '\n' ',' < "$T/$name.got")"
	fi
	n=$((n + 1))
done
check "the catalogue is not empty" test "$n" -gt 0
echo "# ran $n cases"

finish
