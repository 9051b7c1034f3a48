#!/bin/sh
# Credentials stay out of the capture file, and the relayed bytes are never
# changed: the command line (--api-key=X, --token X, NAME_KEY=X), the server's
# stderr (Bearer tokens, key formats) and messages (values under credential
# members) are stored as markers, equal secrets as equal markers; the client
# and the terminal get every byte as it was. --redact-* add rules,
# --keep-secrets keeps everything, and analyze finds nothing malformed in a
# redacted value.
. "$(dirname "$0")/lib.sh"

export MCPTAP_REDACT_KEY_FILE="$T/key"
A=sekrit-alpha-123 B=sekrit-bravo-456 GH=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB
SK=sk-proj-abcdefghijklmnopqrstuvwxyz0123

# The server: says a Bearer token and a key on stderr, then echoes the client.
cat > "$T/server.sh" <<'SH'
echo "connecting with Authorization: Bearer $3" >&2
echo "github token $4 loaded; port 3000 ready" >&2
exec cat
SH
cat > "$T/in" <<JSON
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{"apiKey":"$A","query":"cats","password":"$B"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fetch","arguments":{"api_key":"$A","note":"use $SK please","customer_ref":"C-77","memo":"ACCT-123456"}}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-1","progress":1}}
JSON
env "OPENAI_API_KEY=$SK" "$MCPTAP" record -w "$T/r.db" -- sh "$T/server.sh" --api-key="$A" --token "$B" "$GH" \
	< "$T/in" > "$T/out" 2> "$T/err"
check_eq "the client gets every byte unchanged" "$(sha256sum < "$T/in")" "$(sha256sum < "$T/out")"
check "stderr passes through unchanged" grep -q "Authorization: Bearer $B\$" "$T/err"
check "with the key as it was" grep -q "github token $GH loaded" "$T/err"
check_eq "and the tap says nothing else" 2 "$(wc -l < "$T/err")"
for s in "$A" "$B" "$GH" "$SK"; do
	check_eq "the file holds no '$s'" 0 "$(cat "$T/r.db" "$T/r.db-wal" 2> /dev/null | grep -c -a -- "$s")"
done
mA=$(sql "$T/r.db" "select json_extract(raw, '\$.params.arguments.apiKey') from message where seq = (select min(seq) from message where dir = 'c2s')")
mB=$(sql "$T/r.db" "select json_extract(raw, '\$.params.arguments.password') from message where dir = 'c2s' and json_extract(raw, '\$.id') = 1")
check "a credential member becomes a marker" sh -c 'echo "$1" | grep -Eq "^\[redacted:[0-9a-f]{8}\]$"' sh "$mA"
check "different secrets, different markers" test "$mA" != "$mB"
check_eq "equal secrets, equal markers: api_key in request 2" "$mA" \
	"$(sql "$T/r.db" "select json_extract(raw, '\$.params.arguments.api_key') from message where dir = 'c2s' and json_extract(raw, '\$.id') = 2")"
check_eq "and in the server's echo" 2 \
	"$(sql "$T/r.db" "select count(*) from message where dir = 's2c' and instr(raw, '$mA') > 0")"
pre="sh $T/server.sh '--api-key=$mA' --token '$mB' '"
check_eq "the command line: --api-key=X, --token X and a key format are markers" 1 \
	"$(sql "$T/r.db" "select substr(command, 1, length('$(echo "$pre" | sed "s/'/''/g")')) = '$(echo "$pre" | sed "s/'/''/g")' and command glob '* ''[[]redacted:????????]''' from session")"
check_eq "stderr: the Bearer token is a marker" "connecting with Authorization: Bearer $mB" \
	"$(sql "$T/r.db" "select cast(raw as text) from stderr_line order by seq limit 1")"
check "stderr: the GitHub token is a marker" sh -c 'sqlite3 "$1" "select cast(raw as text) from stderr_line" | grep -Eq "^github token \[redacted:[0-9a-f]{8}\] loaded; port 3000 ready$"' sh "$T/r.db"
check_eq "a key format inside a string is a marker, the rest of it kept" 1 \
	"$(sql "$T/r.db" "select json_extract(raw, '\$.params.arguments.note') glob 'use [[]redacted:*] please' from message where dir = 'c2s' and json_extract(raw, '\$.id') = 2")"
check_eq "ordinary values and MCP's progressToken are kept" "cats|tok-1" \
	"$(sql "$T/r.db" "select (select json_extract(raw, '\$.params.arguments.query') from message where dir = 'c2s' and json_extract(raw, '\$.id') = 1), (select json_extract(raw, '\$.params.progressToken') from message where dir = 'c2s' and kind = 'notification')")"
check_eq "the size column keeps the relayed size" "$(wc -c < "$T/in")" \
	"$(sql "$T/r.db" "select sum(size) from message where dir = 'c2s'")"
check_eq "the stored messages are JSON of the same kinds" "request request notification" \
	"$(sql "$T/r.db" "select kind from message where dir = 'c2s' and json_valid(raw) order by seq" | tr '\n' ' ' | sed 's/ $//')"

# The same secret in another file (another run) gets the same marker: the key is the user's.
echo "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"token\":\"$A\"}}" | "$MCPTAP" record -w "$T/r2.db" -- cat > /dev/null
check_eq "another capture, the same key: the same marker" "$mA" \
	"$(sql "$T/r2.db" "select json_extract(raw, '\$.params.token') from message where dir = 'c2s'")"
check "the key file is the user's, 0600" sh -c 'test "$(stat -c %a "$1")" = 600' sh "$T/key"

# What a review found stored in the clear: an id and a progress token that are
# secrets (the columns hold markers too), a private key's body on stderr, a
# credential after "Authorization: token", and a URL's password.
JWT=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLWhlcmU
cat > "$T/leak.sh" <<'SH'
echo "Authorization: token opaque-$LEAK" >&2
echo "-----BEGIN PRIVATE KEY-----" >&2
echo "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ$LEAK" >&2
echo "-----END PRIVATE KEY-----" >&2
echo "ready" >&2
exec cat
SH
printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":\"$SK\",\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"_meta\":{\"progressToken\":\"$JWT\"}}}" \
	> "$T/leak.in"
env "LEAK=$B" "$MCPTAP" record -w "$T/l.db" -- sh "$T/leak.sh" "postgres://app:$A@db/x" < "$T/leak.in" > "$T/l.out" 2> "$T/l.err"
check_eq "the client still gets the bytes as they were" "$(sha256sum < "$T/leak.in")" "$(sha256sum < "$T/l.out")"
for s in "$A" "$B" "$SK" "$JWT" "MIIEvQIBADANBgkq"; do
	check_eq "the file holds no '$(echo "$s" | cut -c1-16)...'" 0 "$(cat "$T/l.db" "$T/l.db-wal" 2> /dev/null | grep -c -a -- "$s")"
done
check_eq "the id and progress_token columns hold the markers of the raw bytes" "1|1" \
	"$(sql "$T/l.db" "select id = json_extract(raw, '\$.id') and id glob '[[]redacted:*]', progress_token = json_extract(raw, '\$.params._meta.progressToken') and progress_token glob '[[]redacted:*]' from message where dir = 'c2s'")"
check_eq "stderr: the scheme kept, the rest a marker; the key's lines each a marker" \
	"Authorization: token [redacted:X]|-----BEGIN PRIVATE KEY-----|[redacted:X]|-----END PRIVATE KEY-----|ready" \
	"$(sql "$T/l.db" "select rtrim(cast(raw as text), char(10)) from stderr_line order by seq" | sed 's/\[redacted:[0-9a-f]*\]/[redacted:X]/g' | tr -d '\r' | paste -sd '|')"
check "the command line: the URL's password a marker" \
	sh -c 'sqlite3 "$1" "select command from session" | grep -Eq "postgres://app:\[redacted:[0-9a-f]{8}\]@db/x"' sh "$T/l.db"

# User rules.
"$MCPTAP" record -w "$T/u.db" --redact-key customer_ref --redact-path params.arguments.query \
	--redact-value 'ACCT-[0-9]{6}' -- cat < "$T/in" > /dev/null
check_eq "--redact-key, --redact-path, --redact-value" "1|1|1" \
	"$(sql "$T/u.db" "select json_extract(raw, '\$.params.arguments.customer_ref') glob '[[]redacted:*]', json_extract(raw, '\$.params.arguments.memo') glob '[[]redacted:*]', (select json_extract(raw, '\$.params.arguments.query') glob '[[]redacted:*]' from message where json_extract(raw, '\$.id') = 1 and dir = 'c2s') from message where dir = 'c2s' and json_extract(raw, '\$.id') = 2")"
"$MCPTAP" record -w "$T/bad.db" --redact-value 'a(b' -- cat < /dev/null > /dev/null 2> "$T/bad.err"
check_eq "a bad --redact-value is a usage error" 2 $?
check "naming it" grep -q "redact-value 'a(b'" "$T/bad.err"
check "and nothing was created" test ! -e "$T/bad.db"

# --keep-secrets: stored as they came.
env "OPENAI_API_KEY=$SK" "$MCPTAP" record -w "$T/k.db" --keep-secrets -- sh "$T/server.sh" --api-key="$A" --token "$B" "$GH" \
	< "$T/in" > /dev/null 2> /dev/null
check_eq "--keep-secrets keeps them" "1|1|1" \
	"$(sql "$T/k.db" "select instr(command, '$A') > 0, (select count(*) > 0 from stderr_line where instr(raw, '$B') > 0), (select count(*) > 0 from message where instr(raw, '$SK') > 0) from session")"

# analyze: a redacted resource URI and blob are not malformed. The server lists
# a resource; --redact-path takes its uri and a blob's data.
cat > "$T/res.sh" <<'SH'
while read -r l; do
	case $l in
	*'"initialize"'*) echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"s","version":"1"}}}' ;;
	*'"resources/list"'*) echo '{"jsonrpc":"2.0","id":2,"result":{"resources":[{"uri":"file:///srv/a.txt","name":"a"}]}}' ;;
	*'"resources/read"'*) echo '{"jsonrpc":"2.0","id":3,"result":{"contents":[{"uri":"file:///srv/a.txt","blob":"aGVsbG8="}]}}' ;;
	esac
done
SH
cat > "$T/res.in" <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"resources/list"}
{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///srv/a.txt"}}
JSON
"$MCPTAP" record -w "$T/a.db" -- sh "$T/res.sh" < "$T/res.in" > /dev/null
"$MCPTAP" record -w "$T/a.db" --redact-path 'result.resources[*].uri' --redact-path 'result.contents[*].blob' \
	--redact-path params.uri -- sh "$T/res.sh" < "$T/res.in" > /dev/null
check_eq "the second session's uri and blob are markers" 2 \
	"$(sql "$T/a.db" "select count(*) from message where session = 2 and dir = 's2c' and instr(raw, '[redacted:') > 0")"
"$MCPTAP" analyze -r "$T/a.db" -s 1 -T json > "$T/a1.json"
"$MCPTAP" analyze -r "$T/a.db" -s 2 -T json > "$T/a2.json"
check_eq "analyze finds in the redacted session exactly what it finds in the plain one" \
	"$(node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(j.sessions[0].findings.map(f => f.rule).sort().join(","))' "$T/a1.json")" \
	"$(node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(j.sessions[0].findings.map(f => f.rule).sort().join(","))' "$T/a2.json")"

finish
