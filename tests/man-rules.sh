#!/bin/sh
# tests/man-rules.sh [MCPTAP] - rewrite the RULES section of mcptap.1 from
# `mcptap analyze --list-rules`, between its BEGIN RULES and END RULES marks.
# (make man-rules runs it; t0300-rules.sh checks every rule is in the page.)
set -eu
cd "$(dirname "$0")/.."
bin=${1:-./mcptap}
tmp=$(mktemp)
"$bin" analyze --list-rules | awk 'NR > 1 {
	id = $1; sev = $2; rev = $3
	$1 = $2 = $3 = ""; sub(/^ +/, "")
	gsub(/\\/, "\\\\"); gsub(/-/, "\\-")
	printf ".TP\n.B %s\n%s (%s; %s)\n", id, $0, sev, rev
}' > "$tmp"
awk -v gen="$tmp" '
	/^\.\\" BEGIN RULES/ { print; while ((getline line < gen) > 0) print line; skip = 1; next }
	/^\.\\" END RULES/ { skip = 0 }
	!skip { print }' mcptap.1 > mcptap.1.new
mv mcptap.1.new mcptap.1
rm -f "$tmp"
