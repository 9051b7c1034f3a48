#!/bin/sh
# Real traffic: the official SDK client against the official server-everything,
# recorded through the tap, then analyzed. It must yield no error findings;
# any that the peers really earn are named and explained in KNOWN below.
. "$(dirname "$0")/lib.sh"

ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }

timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/client.jsonl" -- \
	"$MCPTAP" record -w "$T/s.db" -- node "$ENTRY" stdio 2> "$T/client.err"
check_eq "the SDK client's flow through the tap succeeds" 0 $?

"$MCPTAP" analyze -r "$T/s.db" -T json --fail-on never > "$T/a.json"
check_eq "analyze runs" 0 $?
"$MCPTAP" analyze -r "$T/s.db" > "$T/a.txt"
rc=$?
sed 's/^/# /' "$T/a.txt"

# Real violations by these pinned peers, each explained. (Empty: none found.)
KNOWN=""

check "the session is checked against the negotiated revision" grep -q '"spec_source": "negotiated"' "$T/a.json"
errors=$(node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
const known = (process.argv[2] || "").split(" ").filter(Boolean);
const errs = r.sessions[0].findings.filter(f => f.severity === "error" && !known.includes(f.rule));
for (const f of errs) console.log(f.rule + " #" + f.seq + " " + f.text);' "$T/a.json" "$KNOWN")
check_eq "no error findings on real traffic (beyond the known ones)" "" "$errors"
[ -n "$KNOWN" ] || check_eq "analyze exits 0 (no errors)" 0 $rc

finish
