#!/bin/sh
# t0191-format: every C file is laid out as .clang-format says (clang-format
# changes nothing), and every continued trailing comment keeps its "*" under
# its "/*" (which clang-format leaves alone).
. "$(dirname "$0")/lib.sh"

cd "$TOP" || die "no $TOP"
FILES=$(git ls-files '*.c' '*.h' 2> /dev/null) || FILES=$(find . -name '*.[ch]' ! -path './build/*' ! -path './tests/node/*')
n=0
bad=""
for f in $FILES; do
	n=$((n + 1))
	clang-format --style=file "$f" | cmp -s "$f" - || bad="$bad $f"
done
echo "# $n files"
check_eq "clang-format would change none of them" "" "$bad"
[ -z "$bad" ] || for f in $bad; do clang-format --style=file "$f" | diff "$f" - | head -n 20 | sed 's/^/# /'; done

# A continued trailing comment: each line after the one with code and "/*"
# starts with its "*" one column right of the "/" (tabs are 8 columns).
awk '
function col(s, n,   i, c) { c = 0; for (i = 1; i <= n; i++) c = substr(s, i, 1) == "\t" ? int(c / 8 + 1) * 8 : c + 1; return c }
FNR == 1 { want = -1 }
want >= 0 {
	if (match($0, /^[ \t]*\*/)) {
		if (col($0, RLENGTH - 1) != want) { print FILENAME ":" FNR; bad++ }
		if (index($0, "*/")) want = -1
		next
	}
	want = -1
}
{
	k = index($0, "/*")
	lead = $0; sub(/^[ \t]*/, "", lead)
	if (k > 1 && substr(lead, 1, 2) != "/*" && substr(lead, 1, 1) != "*" && !index(substr($0, k), "*/")) {
		pre = substr($0, 1, k - 1)
		if (gsub(/"/, "\"", pre) % 2 == 0) want = col($0, k - 1) + 1
	}
}
END { exit bad > 0 }' $FILES > "$T/misaligned"
check_eq "continued trailing comments aligned" "" "$(cat "$T/misaligned")"
finish
