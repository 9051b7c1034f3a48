#!/bin/sh
# A capture file is untrusted input: crafted files get a clear error from
# every reader, never a crash or a hang. The schema is checked before use (no
# trigger, no view or table that is not mcptap's, the tables as mcptap makes
# them); every column may be NULL or of another type.
. "$(dirname "$0")/lib.sh"

# A real capture to craft from.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' |
	"$MCPTAP" record -w "$T/good.db" -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "the capture to craft from: 5 messages" 5 "$(sql "$T/good.db" "select count(*) from message")"

# every_reader DB: run the eleven reader commands on DB, each under a 20 s
# limit; prints one "EXIT" status per line (124: it hung).
every_reader() {
	for c in "sessions" "sessions -T json" "show" "show -T json" "stats" "stats -T json" \
		"analyze --no-store" "analyze --no-store -T json" "analyze --no-store -T sarif" \
		"analyze --no-store -T junit" "replay --as server"; do
		# shellcheck disable=SC2086
		timeout 20 "$MCPTAP" $c -r "$1" < /dev/null > /dev/null 2>> "$T/every.err"
		echo $?
	done | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }'
}

# copy_with SQL [SQL2]: a copy of good.db into $db, then SQL (and SQL2, in a
# connection of its own) run on it by the sqlite3 shell.
n=0
copy_with() {
	n=$((n + 1))
	db=$T/c$n.db
	cp "$T/good.db" "$db"
	sqlite3 -batch "$db" "$1" || die "could not craft c$n.db"
	[ $# -lt 2 ] || sqlite3 -batch "$db" "$2" || die "could not craft c$n.db"
}

# 1. message a recursive view: refused at once by all eleven.
copy_with "ALTER TABLE message RENAME TO m2;
	CREATE VIEW message AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT * FROM m2, r;"
: > "$T/every.err"
check_eq "message a recursive view: every reader refuses it (exit 2), none hangs" "2 x11 " "$(every_reader "$db")"
check_eq "with one reason: a view (message, or exchange that the rename changed)" 1 \
	"$(sort -u "$T/every.err" | grep -c "^mcptap: cannot open '$db': not an mcptap capture: its view \(message\|exchange\) is not mcptap's$")"

# 2. A trigger: it would run when analyze stores its findings.
copy_with "CREATE TRIGGER t AFTER INSERT ON finding BEGIN DELETE FROM message; END;"
"$MCPTAP" analyze -r "$db" > /dev/null 2> "$T/trig.err"
check_eq "a trigger: analyze refuses the file" 2 $?
check_eq "saying why" "mcptap: cannot open '$db': not an mcptap capture: it holds a trigger (t), which mcptap never makes" \
	"$(cat "$T/trig.err")"
check_eq "and the messages are all there" 5 "$(sql "$db" "select count(*) from message")"

# 3. One of mcptap's views made to hang whoever reads it.
copy_with "DROP VIEW exchange; CREATE VIEW exchange AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r;"
: > "$T/every.err"
check_eq "a view that is not mcptap's: every reader refuses the file" "2 x11 " "$(every_reader "$db")"
check "saying which" grep -q "its view exchange is not mcptap's" "$T/every.err"

# 4. A table mcptap never makes, and a table with other columns.
copy_with "CREATE TABLE extra (x);"
check_eq "a foreign table: refused" "mcptap: cannot open '$db': not an mcptap capture: it holds a table (extra) mcptap never makes" \
	"$("$MCPTAP" sessions -r "$db" 2>&1 > /dev/null)"
copy_with "ALTER TABLE gap ADD COLUMN extra;"
check "a table with a column more: refused" sh -c '"$1" show -r "$2" 2>&1 | grep -q "table gap has the columns"' sh "$MCPTAP" "$db"

# 5. An index a user made on plain columns is fine; one on an expression is not.
copy_with "CREATE INDEX by_method ON message(method);"
check_eq "a user's index on a column: read as usual" 0 "$("$MCPTAP" show -r "$db" > /dev/null 2>&1; echo $?)"
copy_with "CREATE INDEX odd ON message(length(raw) * 2);"
check "an index on an expression: refused" sh -c '"$1" show -r "$2" 2>&1 | grep -q "its index odd is on an expression"' sh "$MCPTAP" "$db"

# 6. Columns NULL or of another type where mcptap's schema says NOT NULL: the
# shell's writable_schema drops the constraints, as a crafted file would.
craft_nulls() {
	copy_with "PRAGMA writable_schema = ON;
	UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name IN ('message', 'stderr_line', 'session', 'gap', 'http_exchange');
	PRAGMA writable_schema = OFF;" "$1"
}
craft_nulls "UPDATE message SET kind = NULL WHERE seq = 1; UPDATE message SET raw = NULL WHERE seq = 2;
	UPDATE message SET kind = 7, method = x'00ff', id = x'01' WHERE seq = 3;
	UPDATE message SET t_ns = 'soon', wall = NULL, size = NULL, channel = NULL WHERE seq = 4;
	UPDATE session SET client_name = 42, transport = NULL, started_wall = NULL;
	INSERT INTO gap (session, seq, dir, messages, bytes, reason) VALUES (1, NULL, 7, NULL, 'x', NULL);
	INSERT INTO stderr_line (session, seq, t_ns, wall, raw) VALUES (1, 99, NULL, NULL, NULL);"
check_eq "the crafted file passes sqlite's own integrity check" ok "$(sql "$db" "PRAGMA integrity_check")"
check_eq "NULLs and wrong types: every reader reads it (exit 0; analyze 1: findings)" \
	"0 x7 1 x4 " "$(every_reader "$db")"
"$MCPTAP" show -r "$db" -T json > "$T/n.json"
check_eq "show: a kind that is not mcptap's is worked out from the bytes (the request)" request \
	"$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse); console.log(l[0].kind)' "$T/n.json")"
check_eq "show: every stored item, the gap and the stderr line too" 7 "$(wc -l < "$T/n.json")"

# 6b. HTTP exchanges (schema version 4) NULL or of another type everywhere,
# and messages' HTTP columns too: read, never a crash.
craft_nulls "INSERT INTO http_exchange (session, seq) VALUES (1, 2);
	INSERT INTO http_exchange VALUES (1, 4, 'c', x'00ff', 7, 'not json', x'00', 'abc', '[1,', x'1b5b3331', x'',
	 'soon', NULL, 'x', 2.5, 9, x'ee', 3);
	INSERT INTO http_exchange (session, seq, status, req_headers, resp_headers, end_ns, outcome)
	 VALUES (1, 99, 99999999999, '[[\"a\"]]', '{}', -5, NULL);
	UPDATE message SET exchange = 'one', sse_id = x'00ff', sse_event = 5, replayed = NULL WHERE seq = 1;
	UPDATE message SET exchange = 4, sse_id = 7, replayed = 'yes' WHERE seq = 3;
	UPDATE session SET transport = 'http', upstream = x'1b5b33316d', client_addr = 42, http_session_id = x'ff';"
check_eq "crafted exchanges: the crafted file passes sqlite's own integrity check" ok "$(sql "$db" "PRAGMA integrity_check")"
check_eq "crafted exchanges: every reader reads it (exit 0; analyze 1: findings)" \
	"0 x7 1 x4 " "$(every_reader "$db")"
"$MCPTAP" show -r "$db" -T json > "$T/x.json"
check_eq "show -T json: the three exchanges among the messages" 3 "$(grep -c '"type":"exchange"' "$T/x.json")"
check_eq "show -T json: every line is JSON" "$(wc -l < "$T/x.json")" \
	"$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse); console.log(l.length)' "$T/x.json")"
"$MCPTAP" show -r "$db" > "$T/x.txt"
check_eq "show: no escape sequence from the file reaches the terminal" 0 "$(grep -c "$(printf '\033')" "$T/x.txt")"
"$MCPTAP" sessions -r "$db" > "$T/xs.txt"
check_eq "sessions: no escape sequence from the file reaches the terminal" 0 "$(grep -c "$(printf '\033')" "$T/xs.txt")"

# 7. A message with no direction cannot be read as a session: a clear error.
craft_nulls "UPDATE message SET dir = NULL WHERE seq = 3;"
"$MCPTAP" show -r "$db" > /dev/null 2> "$T/dir.err"
check_eq "no direction: show exits 2" 2 $?
check "saying which message" grep -q "^mcptap: cannot read .*'$db': damaged mcptap capture: message 3 of session 1 has no direction (c2s or s2c)$" "$T/dir.err"
: > "$T/every.err"
check_eq "and no reader of the session crashes" "0 x2 2 x9 " "$(every_reader "$db")"

# 8. Not a database at all, and a truncated one.
head -c 3000 "$T/good.db" > "$T/cut.db"
"$MCPTAP" sessions -r "$T/cut.db" > /dev/null 2> "$T/cut.err"
check_eq "a truncated file: exit 2" 2 $?
check "with SQLite's reason" grep -q "^mcptap: cannot open '$T/cut.db': " "$T/cut.err"

finish
