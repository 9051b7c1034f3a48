#!/bin/sh
# Text from the traffic never reaches a terminal raw: sessions, show and stats
# print names, versions, methods, tool names, stderr lines and command lines
# escaped (ESC ]0;title BEL, ESC [2J, the C1 CSI U+009B), while their JSON keeps
# the exact values. show cuts its lines to the terminal's width: TIOCGWINSZ,
# else $COLUMNS, else 80; never off a terminal or with --full.
. "$(dirname "$0")/lib.sh"

# A server whose name, version and stderr hold terminal escapes; a client whose
# name, methods and tool name do; a command line that does.
cat > "$T/server.pl" <<'PL'
$| = 1;
print STDERR "log \e]0;stderr-title\a \e[2J \xc2\x9b31m end\n";
while (<STDIN>) {
	my ($id) = /"id":(\d+)/;
	next unless defined $id;
	if (/"initialize"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"evil\\u001b]0;title\\u0007\\u001b[2J\\u009b31m","version":"1\xc2\x9b2"}}}\n);
	} elsif (/"tools\/call"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"\xc2\x9b2J\\u001b[2J"}],"isError":true}}\n);
	}
}
PL
perl -e 'print qq({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli\\u001b[31m","version":"2\\u0007"}}}\n),
	qq({"jsonrpc":"2.0","method":"notifications/initialized"}\n),
	qq({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool\\u001b]0;t\\u0007\\u009b","arguments":{}}}\n),
	qq({"jsonrpc":"2.0","id":3,"method":"x\\u001b[2Jy"}\n),
	qq(\e[2Jnot json \xc2\x9b \xff\n)' > "$T/client.in"
"$MCPTAP" record -w "$T/e.db" -- perl "$T/server.pl" "$(printf 'arg\033[2J')" < "$T/client.in" > /dev/null 2> "$T/record.err"
check_eq "the session was recorded" 1 "$(sql "$T/e.db" "select count(*) from session where msgs_c2s = 5 and msgs_s2c = 2 and stderr_lines = 1")"

# raw FILE: does FILE hold a control character (but newline) or a C1 control?
raw() {
	perl -ne '$n++ if /[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]/; END { exit($n ? 0 : 1) }' "$1"
}

"$MCPTAP" sessions -r "$T/e.db" > "$T/sessions.txt"
check "sessions: no raw ESC, BEL or C1 bytes" eval '! raw "$T/sessions.txt"'
check "sessions: the server's name and version, escaped" grep -qF 'evil\x1B]0;title\x07\x1B[2J\u009B31m 1\u009B2' "$T/sessions.txt"
check "sessions: the client's, escaped" grep -qF 'cli\x1B[31m 2\x07' "$T/sessions.txt"
check "sessions: the command line, escaped" grep -qF 'arg\x1B[2J' "$T/sessions.txt"
"$MCPTAP" sessions -r "$T/e.db" -T json > "$T/sessions.json"
check "sessions -T json: the exact values" node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const want = [r.server_name === "evil\u001b]0;title\u0007\u001b[2J\u009b31m", r.server_version === "1\u009b2",
	r.client_name === "cli\u001b[31m", r.client_version === "2\u0007", r.command.includes("arg\u001b[2J")];
if (want.includes(false)) { console.error(want, r); process.exit(1); }' "$T/sessions.json"

"$MCPTAP" show -r "$T/e.db" > "$T/show.txt"
check "show: no raw ESC, BEL or C1 bytes" eval '! raw "$T/show.txt"'
check "show: the stderr line, escaped" grep -qF 'log \x1B]0;stderr-title\x07 \x1B[2J \u009B31m end' "$T/show.txt"
check "show: the method, escaped" grep -qF 'x\x1B[2Jy' "$T/show.txt"
check "show: the tool's name, escaped, on the call and its answer" \
	test "$(grep -cF 'tools/call tool\x1B]0;t\x07\u009B' "$T/show.txt")" = 2
check "show: a line that is not JSON, escaped" grep -qF '\x1B[2Jnot json \u009B \xFF' "$T/show.txt"
check "show: the server's name in the answer's body, as sent (its escapes are text)" grep -qF '"name":"evil\u001b]0;title\u0007\u001b[2J\u009b31m"' "$T/show.txt"
"$MCPTAP" show -r "$T/e.db" -T json > "$T/show.json"
check "show -T json: the exact values, one line per item" node -e '
const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const init = l.find((m) => m.kind === "response" && m.id === 1), err = l.find((m) => m.kind === "stderr");
const want = [l.length === 8, init.message.result.serverInfo.name === "evil\u001b]0;title\u0007\u001b[2J\u009b31m",
	l.some((m) => m.method === "x\u001b[2Jy"), err.text === "log \u001b]0;stderr-title\u0007 \u001b[2J \u009b31m end",
	l.some((m) => m.kind === "request" && m.message.params && m.message.params.name === "tool\u001b]0;t\u0007\u009b")];
if (want.includes(false)) { console.error(want); process.exit(1); }' "$T/show.json"

"$MCPTAP" stats -r "$T/e.db" > "$T/stats.txt"
check "stats: no raw ESC, BEL or C1 bytes" eval '! raw "$T/stats.txt"'
check "stats: the method, escaped" grep -qE '^c→s  x\\x1B\[2Jy +1 +0 +- +0 +1( +-){4}$' "$T/stats.txt"
check "stats: the tool's name, escaped, with its isError" grep -qE '^c→s    tool\\x1B\]0;t\\x07\\u009B +1 +0 +1 +0 +0 ' "$T/stats.txt"
check "stats: never answered, escaped" grep -qE '^  #[0-9]+ c→s x\\x1B\[2Jy$' "$T/stats.txt"
"$MCPTAP" stats -r "$T/e.db" -T json > "$T/stats.json"
check "stats -T json: the exact values" node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const t = s.methods.find((m) => m.method === "tools/call");
const want = [s.methods.some((m) => m.method === "x\u001b[2Jy"), t.names.length === 1,
	t.names[0].name === "tool\u001b]0;t\u0007\u009b", t.names[0].is_error === 1,
	s.unanswered.length === 1 && s.unanswered[0].method === "x\u001b[2Jy"];
if (want.includes(false)) { console.error(want); process.exit(1); }' "$T/stats.json"

# The terminal's width. A session with long lines, wide characters and a stderr line.
cat > "$T/wide.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"漢字漢字","arguments":{"text":"漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字"}}}
< {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}}
! a stderr line that is longer than any terminal we test with: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
> {"jsonrpc":"2.0","method":"notifications/initialized"}
FX
"$PEERS/fixture-load" "$T/wide.fx" "$T/w.db"

# widths FILE: the widest line's columns (colours and \r stripped, wide
# characters two), then how many lines end with "…".
widths() {
	perl -CSD -ne 's/\r$//; s/\e\[[0-9;]*m//g; chomp; my $w = length($_) + (() = /\p{EA=W}/g);
		$max = $w if $w > $max; $cut++ if /\x{2026}$/; END { print $max + 0, " ", $cut + 0, "\n" }' "$1"
}
if command -v script > /dev/null; then
	env -u COLUMNS NO_COLOR=1 script -qc "'$MCPTAP' show -r '$T/w.db'" /dev/null < /dev/null > "$T/tty80"
	check_eq "a terminal with no size and no COLUMNS: 80 columns, each line cut (the notification's in its method column)" "80 4" "$(widths "$T/tty80")"
	NO_COLOR=1 COLUMNS=60 script -qc "'$MCPTAP' show -r '$T/w.db'" /dev/null < /dev/null > "$T/tty60"
	check_eq "COLUMNS=60: 60 columns" "60 4" "$(widths "$T/tty60")"
	check_eq "a wide character is never cut in half (the method column, 15 wide at 60: 14 then)" \
		"    1     0.001 → req   1      tools/call 漢…            {\"…" "$(sed -n 1p "$T/tty60" | tr -d '\r')"
	COLUMNS=60 script -qc "stty cols 47; '$MCPTAP' show -r '$T/w.db'" /dev/null < /dev/null > "$T/tty47"
	check_eq "the terminal's own size first (47), with colours" "47 4" "$(widths "$T/tty47")"
	check "a cut coloured line still ends its colour" test "$(grep -c "$(printf '\033')\[0m" "$T/tty47")" -ge 4
	COLUMNS=61 script -qc "'$MCPTAP' show -r '$T/w.db' | cat" /dev/null < /dev/null > "$T/pipe"
	check "not a terminal: nothing cut" sh -c "! grep -q '…' '$T/pipe'"
	NO_COLOR=1 COLUMNS=60 script -qc "'$MCPTAP' show -r '$T/w.db' --full" /dev/null < /dev/null > "$T/full"
	check_eq "--full on a terminal: nothing cut" "0" "$(widths "$T/full" | cut -d' ' -f2)"
	check "--full shows the whole body" grep -q 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}' "$T/full"
	NO_COLOR=1 COLUMNS=60 script -qc "'$MCPTAP' show -r '$T/e.db'" /dev/null < /dev/null > "$T/ettty"
	tr -d '\r' < "$T/ettty" > "$T/ettty.n"
	check "escaped text on a terminal too" eval '! raw "$T/ettty.n"'
fi
"$MCPTAP" show -r "$T/w.db" > "$T/plain"
check_eq "off a terminal: the whole lines" "0" "$(widths "$T/plain" | cut -d' ' -f2)"
check "off a terminal: the whole body" grep -q 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}$' "$T/plain"

finish
