#!/bin/sh
# analyze -T sarif: SARIF 2.1.0 that the official validator (Sarif.Multitool
# 5.7.0, pinned in tests/node, with its SARIF and GitHub rule sets) accepts with
# no error and no warning, on real sessions: the SDK client against
# server-everything, the C peers, a misbehaving server (stderr lines, text on
# stdout, a line over --max-message, a second answer, a request left open) and
# every rule's failing fixture. Each result points at the line of its message
# (TAP-001: of its gap) in the session's export (`mcptap show -T json`, one line per message, stderr
# line and gap), also when seqs jump, repeat or are unknown; its fingerprint is
# the same in a second run and in a new recording of the same traffic.
. "$(dirname "$0")/lib.sh"

MT=$NODEDIR/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
[ -f "$MT" ] || die "the SARIF validator is not installed: run tests/setup.sh node (npm ci)"
# npm may not have run the package's postinstall (chmod u+x); its bin.js
# passes arguments through a shell unquoted, so the binary is called directly.
[ -x "$MT" ] || chmod u+x "$MT" || die "cannot make $MT executable"
SE=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$SE"; exit 1; }

# validate NAME: run the validator on $T/NAME.sarif; print each error and
# warning it reports (a result's level, else its rule's, else warning), one a line.
validate() {
	rm -f "$T/$1.out.sarif"
	(cd "$T" && "$MT" validate "$1.sarif" --rule-kind "Sarif;Gh" --level "Error;Warning;Note" \
		-o "$1.out.sarif" --log ForceOverwrite > "$1.validator" 2>&1)
	[ -f "$T/$1.out.sarif" ] || { echo "no validator output: $(cat "$T/$1.validator")"; return; }
	node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const run = s.runs[0], rules = run.tool.driver.rules || [];
for (const r of run.results || []) {
	const rule = rules.find((x) => x.id === r.ruleId) || {};
	const level = r.level || (rule.defaultConfiguration || {}).level || "warning";
	if (level !== "error" && level !== "warning") continue;
	let text = r.message.text;
	if (!text && rule.messageStrings && rule.messageStrings[r.message.id])
		text = rule.messageStrings[r.message.id].text.replace(/\{(\d+)\}/g, (m, i) => (r.message.arguments || [])[i]);
	console.log(level + " " + r.ruleId + ": " + text);
}' "$T/$1.out.sarif"
}

# exports NAME DB: each session's export, as the man page says to make it.
exports() {
	mkdir -p "$T/$1"
	for s in $(sql "$2" "select id from session"); do
		"$MCPTAP" show -r "$2" -s "$s" -T json > "$T/$1/mcptap-session-$s.jsonl" || return 1
	done
}

# lines NAME: every result of $T/NAME.sarif names its session's export and
# the line there of the message with its seq (line 1 for a finding about the
# whole session). Prints what does not hold.
lines() {
	node -e '
const fs = require("fs"), dir = process.argv[2];
const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), run = s.runs[0];
const cache = {};
for (const [i, r] of run.results.entries()) {
	const loc = r.locations[0].physicalLocation, p = r.properties, want = "mcptap-session-" + p.session + ".jsonl";
	if (loc.artifactLocation.uri !== want || loc.artifactLocation.uriBaseId !== "%SRCROOT%" ||
	    run.artifacts[loc.artifactLocation.index].location.uri !== want) {
		console.log("result " + i + ": artifact " + JSON.stringify(loc.artifactLocation));
		continue;
	}
	const lines = cache[want] || (cache[want] = fs.readFileSync(dir + "/" + want, "utf8").split("\n"));
	const n = loc.region.startLine;
	if (p.seq === undefined) {
		if (n !== 1) console.log("result " + i + ": a session finding at line " + n);
		continue;
	}
	const item = n >= 1 && n < lines.length ? JSON.parse(lines[n - 1]) : null;
	if (!item || item.seq !== p.seq || item.session !== p.session || (item.kind === "gap" && r.ruleId !== "TAP-001"))
		console.log("result " + i + " (" + r.ruleId + " #" + p.seq + "): line " + n + " is " + JSON.stringify(item && [item.seq, item.kind]));
}' "$T/$1.sarif" "$T/$1"
}

# fingerprints NAME [SESSION]: "session rule fingerprint" per result, in order.
fingerprints() {
	node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
for (const r of s.runs[0].results)
	if (!process.argv[2] || r.properties.session === +process.argv[2])
		console.log((process.argv[2] ? "" : r.properties.session + " ") + r.ruleId + " " + r.partialFingerprints["mcptapFinding/v1"]);' "$T/$1.sarif" "${2:-}"
}

# 1. Real traffic: the SDK client against server-everything, the C peers, and a
# misbehaving server recorded twice; the second time it says one more line on
# stderr first, so that every seq after it moves.
timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/client.jsonl" -- \
	"$MCPTAP" record -w "$T/real.db" -- node "$SE" stdio 2> "$T/client.err"
check_eq "the SDK client's flow through the tap" 0 $?
"$PEERS/mcp-client" -- "$MCPTAP" record -w "$T/real.db" -- "$PEERS/mcp-server" 2> /dev/null
check_eq "the C peers through the tap" 0 $?
cat > "$T/client.in" <<'EOF'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}
{"jsonrpc":"2.0","id":4,"method":"ping"}
EOF
cat > "$T/bad.sh" <<'EOF'
[ -z "${EXTRA:-}" ] || { echo "starting" >&2; sleep 0.1; }
read -r l
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'
sleep 0.1; echo "log line one" >&2; sleep 0.1
read -r l
read -r l
echo 'hello from server'
echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}'
read -r l
printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%0300d"}}\n' 0
echo '{"jsonrpc":"2.0","id":3,"result":{"content":[]}}'
echo '{"jsonrpc":"2.0","id":3,"result":{"content":[]}}'
read -r l
sleep 0.1; echo "bye" >&2
EOF
for extra in "" 1; do
	EXTRA=$extra "$MCPTAP" record -w "$T/real.db" --max-message 200 -- sh "$T/bad.sh" < "$T/client.in" > /dev/null 2>&1
done
check_eq "four real sessions" 4 "$(sql "$T/real.db" "select count(*) from session")"
check_eq "the misbehaving server's long line is a gap" "1|1" \
	"$(sql "$T/real.db" "select count(*) = 2, min(seq) > 0 from gap where session in (3, 4)")"
check_eq "its stderr lines are stored" "2|3" \
	"$(sql "$T/real.db" "select group_concat(n, '|') from (select count(*) n from stderr_line where session in (3, 4) group by session order by session)")"

# 2. Every rule's failing fixture, one session each.
for f in "$TOP"/tests/fixtures/rules/*.fail*; do
	"$PEERS/fixture-load" "$f" "$T/rules.db" || die "cannot load $f"
done

# 3. The misbehaving session again, with its seqs made uneven: a stderr line
# taken out (a jump), a gap on a message's seq (a repeat) and a gap whose
# place is unknown (listed last).
cp "$T/real.db" "$T/odd.db"
sql "$T/odd.db" "delete from stderr_line where session = 3 and instr(CAST(raw AS TEXT), 'log line one') = 1;
insert into gap (session, seq, dir, messages, bytes, reason)
  select 3, seq, 's2c', 1, 10, 'test: on a message''s seq' from message where session = 3 and instr(CAST(raw AS TEXT), 'hello from server') = 1;
insert into gap (session, seq, dir, messages, bytes, reason) values (3, NULL, 'c2s', 2, 20, 'test: no seq');
delete from session where id <> 3;"

for name in real rules odd; do
	"$MCPTAP" analyze -r "$T/$name.db" --all --no-store --fail-on never -T sarif > "$T/$name.sarif"
	check_eq "$name: analyze -T sarif exits 0" 0 $?
	check_eq "$name: the validator finds no error and no warning" "" "$(validate "$name")"
	check "$name: the validator ran its rules on it (notes)" grep -q '"ruleId"' "$T/$name.out.sarif"
	exports "$name" "$T/$name.db"
	check_eq "$name: each result is at the line of its message in the export" "" "$(lines "$name")"
done
nres=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).runs[0].results.length)' "$T/rules.sarif")
check "rules: results from the fixtures ($nres)" test "$nres" -ge 200
check_eq "rules: a result per finding (as -T json lists them)" "$nres" \
	"$("$MCPTAP" analyze -r "$T/rules.db" --all --no-store -T json | node -e 'const r = JSON.parse(require("fs").readFileSync(0)); console.log(r.sessions.reduce((n, s) => n + s.findings.length, 0))')"
check_eq "rules: a result for every checked rule" \
	"$("$MCPTAP" analyze --list-rules -T json | node -e 'const l = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse); console.log(l.filter((r) => r.checked).map((r) => r.id).sort().join(" "))')" \
	"$(node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log([...new Set(s.runs[0].results.map((r) => r.ruleId))].sort().join(" "))' "$T/rules.sarif")"
check_eq "odd: the seqs jump and repeat" "1|1" \
	"$(sql "$T/odd.db" "with s(seq) as (select seq from message where session = 3 union select seq from stderr_line where session = 3
		  union select seq from gap where session = 3 and seq is not null)
		select (select max(seq) from s) > (select count(*) from s), (select count(*) from gap g join message m on m.session = g.session and m.seq = g.seq)")"
check "odd: a line that is not its seq (the jump and the repeat count)" node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
process.exit(s.runs[0].results.filter((r) => r.properties.seq && r.locations[0].physicalLocation.region.startLine !== r.properties.seq).length >= 1 ? 0 : 1)' "$T/odd.sarif"
check_eq "odd: the export ends with the gap of unknown place" '{"seq":null,"kind":"gap"}' \
	"$(tail -n 1 "$T/odd/mcptap-session-3.jsonl" | node -e 'const o = JSON.parse(require("fs").readFileSync(0)); console.log(JSON.stringify({seq: o.seq, kind: o.kind}))')"

# 4. Fingerprints: the same in a second run; the same in the re-recording
# (session 4) as in the first recording (session 3); never twice in a session.
"$MCPTAP" analyze -r "$T/real.db" --all --no-store --fail-on never -T sarif > "$T/again.sarif"
check_eq "a second run: the same fingerprints" "$(fingerprints real)" "$(fingerprints again)"
"$MCPTAP" analyze -r "$T/rules.db" --all --no-store --fail-on never -T sarif > "$T/again2.sarif"
check_eq "a second run of the fixtures: the same fingerprints" "$(fingerprints rules)" "$(fingerprints again2)"
check "the misbehaving server has findings" test -n "$(fingerprints real 3)"
check_eq "a new recording of the same traffic: the same fingerprints" \
	"$(fingerprints real 3 | sort)" "$(fingerprints real 4 | sort)"
check_eq "whose seqs moved" 1 "$(node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
const seqs = (n) => s.runs[0].results.filter((r) => r.properties.session === n && r.properties.seq).map((r) => r.properties.seq).sort().join();
console.log(seqs(3) !== seqs(4) ? 1 : 0)' "$T/real.sarif")"
check_eq "no fingerprint twice in a session" "" "$(fingerprints rules | sort | uniq -d)"

finish
