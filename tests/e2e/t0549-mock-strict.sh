#!/bin/sh
# The HTTP mock reads requests with the HTTP tap's strict reader and refuses
# what the tap refuses, the same way: request smuggling shapes (two
# Content-Lengths, a Transfer-Encoding other than chunked, whitespace before
# a colon, an obsolete line folding, both framings, no Host), bytes that are
# not HTTP, a head above the limit, a foreign Host, and a head trickled
# past --client-timeout (408) are each answered once with the refusal and
# the connection closed: the request smuggled after them is never answered.
# Sound requests still pass: pipelined ones in order on one kept-alive
# connection, HTTP/1.0 and "Connection: close" answered and closed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

# raw.mjs PORT [trickle]: sends stdin's bytes on one connection (trickle: a
# head's first lines, then a byte every 200 ms), prints the status lines of
# what came back, "closed" or "open" (whether the mock closed it within 3 s,
# or 8 s when trickling) and the time taken (ms); the answer goes to raw.out.
cat > "$T/raw.mjs" <<'JS'
import net from "node:net";
import fs from "node:fs";
const trickle = process.argv[3] === "trickle";
const chunks = [];
const t0 = Date.now();
const run = () => {
	let got = "";
	const s = net.connect(Number(process.argv[2]), "127.0.0.1", () => {
		if (!trickle) return s.write(Buffer.concat(chunks));
		s.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
		setInterval(() => s.writable && s.write("X"), 200).unref();
	});
	let said = false;
	const say = (how) => {
		if (said) return;
		said = true;
		fs.writeFileSync(process.env.T + "/raw.out", got);
		const st = (got.match(/HTTP\/1\.\d \d\d\d [A-Za-z ]*/g) || []).join(",");
		console.log(`${st}|${how}|${Date.now() - t0}`);
	};
	const t = setTimeout(() => { say("open"); s.destroy(); }, trickle ? 8000 : 3000);
	s.on("data", (d) => (got += d));
	s.on("error", () => {});
	s.on("close", () => { clearTimeout(t); say("closed"); process.exit(0); });
};
if (trickle) run();
else process.stdin.on("data", (d) => chunks.push(d)).on("end", run);
JS
export T

"$PEERS/mcp-client" --log "$T/rec.jsonl" -- "$MCPTAP" record -w "$T/c.db" -- "$PEERS/mcp-server" 2> /dev/null
check_eq "recorded the C peers" 0 $?
INIT=$(sql "$T/c.db" "select cast(raw as text) from message where dir = 'c2s' and method = 'initialize'")
check "the recorded initialize" test -n "$INIT"
ilen=$(printf '%s' "$INIT" | wc -c)

start_mock "$T/c.db" --client-timeout 1500
port=${MOCK_URL#http://127.0.0.1:}
port=${port%%/*}

acc='Accept: application/json, text/event-stream\r\nContent-Type: application/json'
body='{"jsonrpc":"2.0","id":1,"method":"ping"}'
smuggled='POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}'
try() { # try NAME WANT RAW [REASON]: the shape's bytes (printf format) answered WANT, then closed
	printf "$3" | node "$T/raw.mjs" "$port" > "$T/r"
	r=$(cat "$T/r")
	check_eq "$1: $2, once, the connection closed" "$2|closed" "${r%|*}"
	[ -z "${4:-}" ] || check "$1: the refusal says why" grep -q "mcptap: refused: ${4:-}" "$T/raw.out"
}
try "two Content-Lengths" "HTTP/1.1 400 Bad Request" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n$acc\r\nContent-Length: 40\r\nContent-Length: 89\r\n\r\n$body$smuggled" \
	"more than one Content-Length field"
try "Transfer-Encoding: xchunked" "HTTP/1.1 400 Bad Request" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: xchunked\r\n\r\n$smuggled" \
	"a Transfer-Encoding other than chunked alone"
try "Transfer-Encoding : chunked (space before the colon)" "HTTP/1.1 400 Bad Request" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding : chunked\r\nContent-Length: 0\r\n\r\n$smuggled"
try "an obsolete line folding" "HTTP/1.1 400 Bad Request" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Folded: a\r\n b\r\n$acc\r\nContent-Length: 40\r\n\r\n$body$smuggled"
try "Transfer-Encoding and Content-Length" "HTTP/1.1 400 Bad Request" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n$smuggled" \
	"both Transfer-Encoding and Content-Length"
try "no Host" "HTTP/1.1 400 Bad Request" \
	"POST /mcp HTTP/1.1\r\n$acc\r\nContent-Length: 40\r\n\r\n$body" \
	"no Host field in an HTTP/1.1 request"
try "a target that is no path" "HTTP/1.1 400 Bad Request" "GET @127.0.0.1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
try "bytes that are not HTTP (a TLS hello)" "HTTP/1.1 400 Bad Request" '\026\003\001\000\245\001\000\000\241\003\003'
try "CONNECT (a tunnel)" "HTTP/1.1 405 Method Not Allowed" "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n$smuggled"
try "a foreign Host" "HTTP/1.1 403 Forbidden" "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\n$acc\r\nContent-Length: 40\r\n\r\n$body$smuggled"
head -c 70000 /dev/zero | tr '\0' a > "$T/long"
try "a head above 64 KiB" "HTTP/1.1 431 Request Header Fields Too Large" \
	"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: $(cat "$T/long")\r\n\r\n"

r=$(node "$T/raw.mjs" "$port" trickle)
check_eq "a trickled head: 408, the connection closed" "HTTP/1.1 408 Request Timeout|closed" "${r%|*}"
ms=${r##*|}
check "after --client-timeout (1.5 s), not at 8 s ($ms ms)" test "$ms" -ge 1400 -a "$ms" -lt 6000

# Sound requests: two pipelined in one write, answered in order, the connection
# kept until it has been idle for --client-timeout.
printf "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n$acc\r\nContent-Length: $ilen\r\n\r\n%sGET /elsewhere HTTP/1.1\r\nHost: localhost\r\n\r\n" "$INIT" |
	node "$T/raw.mjs" "$port" > "$T/r"
r=$(cat "$T/r")
check_eq "two pipelined requests: answered in order" "HTTP/1.1 200 OK,HTTP/1.1 404 Not Found|closed" "${r%|*}"
ms=${r##*|}
check "kept alive, closed once idle for --client-timeout ($ms ms)" test "$ms" -ge 1400
check "each answer has a Date and a Content-Length" test "$(grep -c '^Date: \|^Content-Length: ' "$T/raw.out")" -eq 4
printf "GET /elsewhere HTTP/1.0\r\n\r\n" | node "$T/raw.mjs" "$port" > "$T/r"
r=$(cat "$T/r")
check_eq "HTTP/1.0: answered in 1.0, then closed" "HTTP/1.0 404 Not Found|closed" "${r%|*}"
printf "GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" | node "$T/raw.mjs" "$port" > "$T/r"
r=$(cat "$T/r")
check_eq "Connection: close: answered, then closed" "HTTP/1.1 404 Not Found|closed" "${r%|*}"
check "and it says so" grep -q '^Connection: close' "$T/raw.out"

check "the mock still runs" kill -0 "$MOCK_PID"
stop_mock
check_eq "SIGINT: exit 0" 0 "$MOCK_STATUS"
check_eq "it said the foreign Host once" 1 "$(grep -c "refused a request for Host 'evil.example.com'" "$MOCK_ERR")"
finish
