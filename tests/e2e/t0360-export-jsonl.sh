#!/bin/sh
# t0360-export-jsonl: `mcptap export -T jsonl` writes the lines of `show -T
# json`, byte for byte, for every session (or -s's, or -Y's messages), to
# stdout or to -o FILE through a temporary file; it redacts as the tap does
# unless --keep-secrets.
#
# 1. A file of three sessions (two stdio, one HTTP): export equals show -T json
#    of each session in turn; -s and -Y as show's.
# 2. -o FILE: the same bytes, mode 0600, no temporary file left; a full disk
#    (/dev/full's directory cannot be used: a tmpfs of 64 KiB) or a folder
#    that does not exist: exit 2, the file as it was, nothing left behind.
# 3. A capture recorded with --keep-secrets (a credential member, a Bearer
#    token on stderr, a key on the command line's environment is not stored
#    anyway): the export holds markers, the same markers the tap writes for
#    the same secrets; --keep-secrets writes them as they are; an Authorization
#    header of an HTTP exchange is redacted too; a capture the tap redacted
#    exports unchanged.
# 4. Usage errors.
. "$(dirname "$0")/lib.sh"

# ---- 1. Three sessions ----
cat > "$T/a.fx" << 'EOF'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
! the server says something
> {"jsonrpc": "2.0", "id": 18446744073709551616, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"b": 0.7, "a": 0.1}}}
< {"jsonrpc":"2.0","id":18446744073709551616,"result":{"content":[{"type":"text","text":"0.7999999999999999"}],"v":1e400}}
> {"jsonrpc":"2.0","id":"p","method":"ping"}
< {"jsonrpc":"2.0","id":"p","error":{"code":-32601,"message":"no"}}
EOF
cat > "$T/h.fx" << 'EOF'
@transport http
@session-id 5f0c
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
<= 200 sse
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}
=> POST /mcp
> {"jsonrpc":"2.0","id":2,"method":"ping"}
<= 200 json
< {"jsonrpc":"2.0","id":2,"result":{}}
EOF
"$PEERS/fixture-load" "$T/a.fx" "$T/m.db" && "$PEERS/fixture-load" "$T/h.fx" "$T/m.db" &&
	"$PEERS/fixture-load" "$T/a.fx" "$T/m.db" || die "cannot load the fixtures"
check_eq "three sessions" "1 2 3" "$(sql "$T/m.db" "select group_concat(id, ' ') from session")"
for s in 1 2 3; do "$MCPTAP" show -r "$T/m.db" -s $s -T json; done > "$T/show.jsonl"
"$MCPTAP" export -r "$T/m.db" > "$T/all.jsonl"
check_eq "export: exit 0" 0 $?
check "every session, each as show -T json prints it, byte for byte" cmp "$T/show.jsonl" "$T/all.jsonl"
check_eq "its lines: 7 messages and a stderr line in sessions 1 and 3, 4 messages and 2 exchanges in 2" 22 "$(wc -l < "$T/all.jsonl")"
check "the big id and the numbers as sent" grep -q '"id":18446744073709551616,.*"arguments": {"b": 0.7, "a": 0.1}}}}$' "$T/all.jsonl"
"$MCPTAP" export -r "$T/m.db" -T jsonl -s 2-3 > "$T/s.jsonl"
check_eq "-s 2-3: sessions 2 and 3" "$(grep -v '^{"session":1,' "$T/show.jsonl")" "$(cat "$T/s.jsonl")"
"$MCPTAP" export -r "$T/m.db" -Y 'method == ping' > "$T/y.jsonl"
"$MCPTAP" show -r "$T/m.db" -s all -Y 'method == ping' -T json > "$T/yshow.jsonl"
check "-Y: the messages show -Y passes" cmp "$T/yshow.jsonl" "$T/y.jsonl"
check_eq "6 of them: a ping and its answer in each session" 6 "$(wc -l < "$T/y.jsonl")"

# ---- 2. -o FILE ----
"$MCPTAP" export -r "$T/m.db" -o "$T/out.jsonl"
check_eq "-o: exit 0" 0 $?
check "-o: the same bytes" cmp "$T/all.jsonl" "$T/out.jsonl"
check_eq "mode 0600, and no temporary file left" "600 out.jsonl" \
	"$(stat -c %a "$T/out.jsonl") $(ls "$T" | grep '^out\.jsonl')"
mkdir "$T/full"
if mount -t tmpfs -o size=64k tmpfs "$T/full" 2> /dev/null; then
	echo old > "$T/full/x.jsonl"
	head -c 60000 /dev/zero > "$T/full/ballast"
	for i in 1 2 3 4 5 6 7 8; do "$PEERS/fixture-load" "$T/a.fx" "$T/big.db"; done
	"$MCPTAP" export -r "$T/big.db" -o "$T/full/x.jsonl" 2> "$T/full.err"
	rc=$?
	check_eq "a full disk: exit 2, said" "2 mcptap: cannot write '$T/full/x.jsonl': No space left on device" \
		"$rc $(cat "$T/full.err")"
	check_eq "the file as it was, nothing left behind" "old|ballast x.jsonl" \
		"$(cat "$T/full/x.jsonl")|$(ls "$T/full" | tr '\n' ' ' | sed 's/ $//')"
	umount "$T/full"
else
	echo "# no tmpfs mount here (not root?): the full disk is not tried"
fi
"$MCPTAP" export -r "$T/m.db" -o "$T/no/such/dir/x.jsonl" 2> "$T/nodir.err"
check_eq "a folder that does not exist: exit 2, said" "2 mcptap: cannot write '$T/no/such/dir/x.jsonl': No such file or directory" \
	"$? $(cat "$T/nodir.err")"

cp "$T/m.db" "$T/same.db"
"$MCPTAP" export -r "$T/same.db" -o "$T/same.db" 2> "$T/same.err"
check_eq "-o the capture file itself: exit 2, said" "2 mcptap: -o '$T/same.db' is the capture file itself" "$? $(head -1 "$T/same.err")"
check "and the capture is as it was" cmp "$T/m.db" "$T/same.db"
# A signal in the middle of -o FILE: stopped, the temporary file taken away.
sh "$BENCH/gen-session.sh" 400000 | "$PEERS/fixture-load" /dev/stdin "$T/sig.db" || die "cannot make a capture"
echo old > "$T/sig.jsonl"
"$MCPTAP" export -r "$T/sig.db" -o "$T/sig.jsonl" 2> "$T/sig.err" &
_p=$!
_n=0
while ! ls "$T" | grep -q '^sig\.jsonl\.tmp-' && [ $_n -lt 300 ]; do sleep 0.02; _n=$((_n + 1)); done
kill -TERM $_p
wait $_p
check_eq "SIGTERM while writing: exit 2, said" "2 mcptap: cannot export '$T/sig.db' as jsonl: stopped by a signal" "$? $(cat "$T/sig.err")"
check_eq "the file as it was, no temporary file left" "old sig.jsonl" "$(cat "$T/sig.jsonl") $(ls "$T" | grep '^sig\.jsonl')"

# ---- 3. Redaction ----
export MCPTAP_REDACT_KEY_FILE="$T/key"
A=sekrit-alpha-123 B=sekrit-bravo-456
cat > "$T/server.sh" << 'SH'
echo "connecting with Authorization: Bearer $1" >&2
exec cat
SH
printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"f\",\"arguments\":{\"apiKey\":\"$A\",\"query\":\"cats\"}}}" > "$T/in"
"$MCPTAP" record -w "$T/k.db" --keep-secrets -- sh "$T/server.sh" "$B" < "$T/in" > /dev/null 2>&1
"$MCPTAP" record -w "$T/r.db" -- sh "$T/server.sh" "$B" < "$T/in" > /dev/null 2>&1
check_eq "the --keep-secrets capture holds both secrets" "1 1" \
	"$(sql "$T/k.db" "select count(*) from message where instr(raw, '$A') and dir = 'c2s'") $(sql "$T/k.db" "select count(*) from stderr_line where instr(raw, '$B')")"
"$MCPTAP" export -r "$T/k.db" > "$T/k.jsonl"
check_eq "its export holds neither" "0 0" "$(grep -c -- "$A" "$T/k.jsonl") $(grep -c -- "$B" "$T/k.jsonl")"
"$MCPTAP" export -r "$T/r.db" > "$T/r.jsonl"
# (Lines without their clock, in order: stderr and stdout race in two runs.)
check_eq "but the markers the tap writes for them: the same lines as the redacted capture's" \
	"$(sed 's/"seq":[0-9]*,"t_ns":[0-9]*,"time":"[^"]*"//' "$T/r.jsonl" | sort)" \
	"$(sed 's/"seq":[0-9]*,"t_ns":[0-9]*,"time":"[^"]*"//' "$T/k.jsonl" | sort)"
"$MCPTAP" show -r "$T/r.db" -T json > "$T/r.show"
check "a capture the tap redacted exports as show prints it" cmp "$T/r.show" "$T/r.jsonl"
"$MCPTAP" export -r "$T/k.db" --keep-secrets > "$T/kk.jsonl"
check_eq "--keep-secrets: both, as stored" "2 1" "$(grep -c -- "$A" "$T/kk.jsonl") $(grep -c -- "$B" "$T/kk.jsonl")"
"$MCPTAP" show -r "$T/k.db" -T json > "$T/k.show"
check "--keep-secrets: as show prints it" cmp "$T/k.show" "$T/kk.jsonl"
"$MCPTAP" export -r "$T/r.db" --redact-key query > "$T/q.jsonl"
check_eq "--redact-key: one more member redacted" 0 "$(grep -c '"query":"cats"' "$T/q.jsonl")"
cat > "$T/auth.fx" << EOF
@transport http
=> POST /mcp?api_key=$A [Authorization: Bearer $B]
> {"jsonrpc":"2.0","id":2,"method":"ping"}
<= 200 json [Set-Cookie: sid=$A; Path=/]
< {"jsonrpc":"2.0","id":2,"result":{}}
EOF
"$PEERS/fixture-load" "$T/auth.fx" "$T/auth.db" || die "cannot load the HTTP fixture"
check_eq "an HTTP capture holding both in its exchange" 1 \
	"$(sql "$T/auth.db" "select instr(req_headers, '$B') > 0 and instr(target, '$A') > 0 and instr(resp_headers, '$A') > 0 from http_exchange")"
"$MCPTAP" export -r "$T/auth.db" > "$T/auth.jsonl"
check_eq "its export: neither, in the target, the request's and the response's headers" "0 0" \
	"$(grep -c -- "$A" "$T/auth.jsonl") $(grep -c -- "$B" "$T/auth.jsonl")"
check_eq "the scheme kept, the token a marker; the other headers as they were" "Bearer [redacted:" \
	"$(node -e 'const l = require("fs").readFileSync(process.argv[1], "utf8").split("\n")[0];
		const h = JSON.parse(l).request_headers.find((x) => x[0].toLowerCase() === "authorization");
		console.log(h[1].slice(0, 17))' "$T/auth.jsonl")"

# What no message holds, in every format: a key format in a target's path, a
# legacy session's endpoint with a credential in its query, and the command
# line of a capture recorded with --keep-secrets (the HAR page's title).
GH=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB
cat > "$T/ep.fx" << EOF
@transport sse
@session-id /message?sessionId=7&access_token=$A
=> GET /sse
<= 200 sse
=> POST /hooks/$GH?sessionId=7
> {"jsonrpc":"2.0","id":1,"method":"ping"}
<= 202 empty
EOF
"$PEERS/fixture-load" "$T/ep.fx" "$T/ep.db" || die "cannot load the endpoint fixture"
check_eq "the capture holds the endpoint's token and the path's key" "1 1" \
	"$(sql "$T/ep.db" "select count(*) from session where instr(http_session_id, '$A')") $(sql "$T/ep.db" "select count(*) from http_exchange where instr(target, '$GH')")"
for f in jsonl har otlp pcapng; do
	"$MCPTAP" export -r "$T/ep.db" -T $f -o "$T/ep.$f"
	check_eq "-T $f: neither the endpoint's token nor the path's key" "0 0" \
		"$(grep -a -c -- "$A" "$T/ep.$f") $(grep -a -c -- "$GH" "$T/ep.$f")"
done
check "-T har: the endpoint with its token as a marker" grep -q 'access_token=\[redacted:' "$T/ep.har"
"$MCPTAP" record -w "$T/cmd.db" --keep-secrets -- sh "$T/server.sh" --api-key=$A < /dev/null > /dev/null 2>&1
check_eq "a command line kept with --keep-secrets" 1 "$(sql "$T/cmd.db" "select count(*) from session where instr(command, '$A')")"
"$MCPTAP" export -r "$T/cmd.db" -T har -o "$T/cmd.har"
check_eq "-T har: the page's title without it" 0 "$(grep -c -- "$A" "$T/cmd.har")"

# ---- 4. Usage errors ----
"$MCPTAP" export -r "$T/m.db" -T xml > /dev/null 2> "$T/e1"
check_eq "an unknown format: exit 2, said, with the formats there are" "2 mcptap: unknown format 'xml' (jsonl," "$? $(head -1 "$T/e1" | cut -d, -f1),"
"$MCPTAP" export -r "$T/m.db" --keep-secrets --redact-key x > /dev/null 2> "$T/e2"
check_eq "--keep-secrets with --redact-key: exit 2" "2 mcptap: --keep-secrets and --redact-* contradict each other" "$? $(head -1 "$T/e2")"
"$MCPTAP" export -r "$T/m.db" -s 9 > /dev/null 2> "$T/e3"
check_eq "a session that is not there: exit 2" 2 $?
"$MCPTAP" export -r "$T/nothere.db" > /dev/null 2> "$T/e4"
check_eq "no such file: exit 2" 2 $?
"$MCPTAP" export -r "$T/m.db" -Y 'method ==' > /dev/null 2> "$T/e5"
check_eq "a bad filter: exit 2" 2 $?
"$MCPTAP" export -r "$T/m.db" extra > /dev/null 2> "$T/e6"
check_eq "an extra argument: exit 2, said" "2 mcptap: unexpected argument 'extra'" "$? $(head -1 "$T/e6")"
finish
