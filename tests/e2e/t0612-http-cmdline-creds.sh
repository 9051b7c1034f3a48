#!/bin/sh
# No credential given on record's command line reaches the store, stdout or
# stderr: a credential-named query parameter of --upstream is forwarded with
# every request (after the client's own query) and stored and said redacted;
# an --upstream-header value (from the environment) goes upstream only, in
# place of the client's field of that name (not beside it); a user
# name or password in --upstream or --listen is refused, naming
# --upstream-header, without being printed. The file, its -wal and -shm are
# grepped while the tap runs and after it stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

Q=QSECRET-k7f3q
H=HSECRET-p9x2h
P=PSECRET-w4m8u

# The upstream: says each request it gets as "METHOD URL AUTHORIZATION" in
# up.log (with how many Authorization fields it had), and answers a JSON-RPC
# request with a result.
cat > "$T/up.mjs" <<'JS'
import http from "node:http";
import fs from "node:fs";
const log = process.argv[2];
const srv = http.createServer((req, res) => {
	let body = "";
	req.on("data", (d) => (body += d));
	req.on("end", () => {
		const auth = req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === "authorization");
		fs.appendFileSync(log, `${req.method} ${req.url} ${req.headers.authorization || "-"} (${auth.length})\n`);
		const id = body ? JSON.parse(body).id : null;
		res.writeHead(200, { "content-type": "application/json" });
		res.end(JSON.stringify({ jsonrpc: "2.0", id, result: {} }));
	});
});
srv.listen(0, "127.0.0.1", () => console.error(`up listening on ${srv.address().port}`));
JS
bg_start UP 's/^up listening on \([0-9]*\)$/\1/p' "the upstream" node "$T/up.mjs" "$T/up.log"
port=$UP_URL
up="http://127.0.0.1:$port/mcp?api_key=$Q&region=eu"

TOKEN="Bearer $H" start_tap "$T/c.db" "$up" --upstream-header Authorization=env:TOKEN
ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
curl -s -o "$T/r1" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	--data "$ping" "$TAP_URL/mcp"
curl -s -o "$T/r2" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	-H 'Authorization: Bearer the-clients-own' --data "$ping" "$TAP_URL/message?sessionId=s-1"
check_eq "the client gets the upstream's answer" '{"jsonrpc":"2.0","id":1,"result":{}}' "$(cat "$T/r1")"
check_eq "--upstream's query goes upstream after the client's; --upstream-header's value too, replacing the client's own" \
	"POST /mcp?api_key=$Q&region=eu Bearer $H (1)
POST /message?sessionId=s-1&api_key=$Q&region=eu Bearer $H (1)" "$(cat "$T/up.log")"
sleep 0.3 # (the tap commits every 20 ms)
cat "$T/c.db" "$T/c.db-wal" "$T/c.db-shm" > "$T/live.bytes" 2> /dev/null
stop_tap
check_eq "the tap exits 0" 0 "$TAP_STATUS"
bg_stop UP TERM

marker=$(sql "$T/c.db" "select upstream from session where id = 1")
check "the session's upstream is stored with the query's credential redacted" \
	sh -c 'printf "%s\n" "$1" | grep -qx "http://127.0.0.1:$2/mcp?api_key=\[redacted:[0-9a-f]*\]&region=eu"' sh "$marker" "$port"
check_eq "the tap's stderr: where it listens and forwards, nothing else" \
	"mcptap: listening on $TAP_URL, forwarding to http://127.0.0.1:$port" "$(cat "$TAP_ERR")"
"$MCPTAP" sessions -r "$T/c.db" > "$T/sessions.txt" 2>&1
"$MCPTAP" sessions -r "$T/c.db" -T json >> "$T/sessions.txt" 2>&1
"$MCPTAP" show -r "$T/c.db" -T json >> "$T/sessions.txt" 2>&1
check "sessions and show print the redacted upstream" grep -q "api_key=\[redacted:" "$T/sessions.txt"
cat "$T/c.db" "$T/c.db-wal" "$T/c.db-shm" > "$T/end.bytes" 2> /dev/null
for s in "$Q" "$H"; do
	check_eq "$s: not in the file, -wal or -shm while the tap ran" 0 "$(grep -ac -- "$s" "$T/live.bytes")"
	check_eq "$s: nor after it stopped" 0 "$(grep -ac -- "$s" "$T/end.bytes")"
	check_eq "$s: nor on the tap's stderr, or in what sessions and show print" 0 \
		"$(cat "$TAP_ERR" "$T/sessions.txt" | grep -c -- "$s")"
done
check_eq "the control value is stored (the grep can see the file)" 1 \
	"$(grep -ac 'region=eu' "$T/end.bytes" | sed 's/^[1-9][0-9]*$/1/')"

# A user name or password: refused, naming --upstream-header, never printed.
timeout 10 "$MCPTAP" record -w "$T/u.db" --listen 127.0.0.1:0 --upstream "http://user:$P@127.0.0.1:$port/mcp" \
	> "$T/u.out" 2> "$T/u.err"
check_eq "userinfo in --upstream: a usage error" 2 $?
check_eq "which names --upstream-header" \
	"mcptap: --upstream URL: a user name or password in it (user:password@) is neither sent nor stored; send the credential with --upstream-header Authorization=env:VAR" \
	"$(head -n 1 "$T/u.err")"
timeout 10 "$MCPTAP" record -w "$T/u.db" --listen "admin:$P@127.0.0.1:0" --upstream "http://127.0.0.1:$port" \
	>> "$T/u.out" 2>> "$T/u.err"
check_eq "userinfo in --listen: a usage error" 2 $?
check "which says so without it" grep -qx \
	"mcptap: bad --listen '\[redacted\]@127.0.0.1:0': an address to listen on holds no user name or password" "$T/u.err"
timeout 10 "$MCPTAP" replay -r "$T/c.db" --as server --listen "admin:$P@127.0.0.1:0" >> "$T/u.out" 2>> "$T/u.err"
check_eq "the mock's --listen too" 2 $?
timeout 10 "$MCPTAP" record -w "$T/u.db" --listen 127.0.0.1:0 --upstream "ftp://$P@127.0.0.1/x" \
	>> "$T/u.out" 2>> "$T/u.err"
check_eq "userinfo in a URL of another scheme: a usage error" 2 $?
check_eq "the password is nowhere in what was printed" 0 "$(cat "$T/u.out" "$T/u.err" | grep -c -- "$P")"
check "and no capture file was made" test ! -e "$T/u.db"
timeout 10 "$MCPTAP" record -w "$T/u.db" --upstream "ftp://127.0.0.1/x?token=$Q" > /dev/null 2> "$T/s.err"
check_eq "another scheme: a usage error" 2 $?
check "that prints the URL redacted" grep -q "^mcptap: bad --upstream 'ftp://127.0.0.1/x?token=\[redacted:[0-9a-f]*\]': an http:// or https:// URL$" "$T/s.err"
finish
