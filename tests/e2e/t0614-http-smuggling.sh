#!/bin/sh
# Request smuggling shapes through the HTTP tap: fields the upstream could
# frame otherwise than the tap did (two Content-Lengths, a Transfer-Encoding
# other than chunked alone, whitespace before a colon, both framings,
# Transfer-Encoding in HTTP/1.0, no Host or two) are refused with 400, the
# connection closed (the bytes after them, a second request, are never read),
# nothing sent upstream; each is stored as an exchange with outcome
# "refused" and the reason; so are targets that are no path (which would name
# another server), with a space or a fragment, and GET *. A sound request on
# a new connection still passes, and OPTIONS * is forwarded as it is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

# The upstream logs each request line it gets, and answers 200.
cat > "$T/up.mjs" <<'JS'
import http from "node:http";
import fs from "node:fs";
const srv = http.createServer((req, res) => {
	req.on("data", () => {});
	req.on("end", () => {
		fs.appendFileSync(process.argv[2], `${req.method} ${req.url}\n`);
		res.writeHead(200, { "content-type": "application/json" });
		res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
	});
});
srv.listen(0, "127.0.0.1", () => console.error(`up ${srv.address().port}`));
JS
# raw.mjs PORT: sends stdin's bytes on one connection, prints the first line
# of what comes back and "closed" or "open" (whether the tap closed it within 3 s).
cat > "$T/raw.mjs" <<'JS'
import net from "node:net";
const chunks = [];
process.stdin.on("data", (d) => chunks.push(d));
process.stdin.on("end", () => {
	let got = "";
	const s = net.connect(Number(process.argv[2]), "127.0.0.1", () => s.write(Buffer.concat(chunks)));
	let said = false;
	const say = (how) => { if (!said) console.log(`${got.split("\r\n")[0]}|${how}`); said = true; };
	const t = setTimeout(() => { say("open"); s.destroy(); }, 3000);
	s.on("data", (d) => (got += d));
	s.on("error", () => {});
	s.on("close", () => { clearTimeout(t); say("closed"); });
});
JS
: > "$T/up.log"
bg_start UP 's/^up \([0-9]*\)$/\1/p' "the upstream" node "$T/up.mjs" "$T/up.log"
start_tap "$T/s.db" "http://127.0.0.1:$UP_URL"
tport=${TAP_URL##*:}

body='{"jsonrpc":"2.0","id":1,"method":"ping"}'
smuggled='POST /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}'
n=0
try() { # try NAME REASON RAW: the shape's bytes (printf format) refused as it must be
	n=$((n + 1))
	printf "$3" | node "$T/raw.mjs" "$tport" > "$T/r$n"
	check_eq "$1: 400, the connection closed" "HTTP/1.$v 400 Bad Request|closed" "$(cat "$T/r$n")"
	[ -z "$2" ] || echo "$1|$2" >> "$T/want"
}
v=1
try "two Content-Lengths" "more than one Content-Length field" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\nContent-Length: 89\r\n\r\n$body$smuggled"
try "Transfer-Encoding: xchunked" "a Transfer-Encoding other than chunked alone" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: xchunked\r\n\r\n$smuggled"
try "Transfer-Encoding : chunked (space before the colon)" "whitespace in a header field's name (before its colon)" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding : chunked\r\nContent-Length: 0\r\n\r\n$smuggled"
try "Transfer-Encoding and Content-Length" "both Transfer-Encoding and Content-Length" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n$smuggled"
v=0 # (answered in the request's version)
try "Transfer-Encoding in HTTP/1.0" "Transfer-Encoding in an HTTP/1.0 request" \
	"POST /mcp HTTP/1.0\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n$body\r\n0\r\n\r\n"
v=1
try "no Host" "no Host field in an HTTP/1.1 request" \
	"POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n$body"
try "two Hosts" "more than one Host field" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n$body"

try "a space in the target" "a space or a control byte in the request target" \
	"GET /a b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
try "Transfer-Encoding: gzip, chunked (the tap decodes chunked alone)" "a Transfer-Encoding other than chunked alone" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
# Appended to the upstream's origin, "@host/x" would name another server (and
# --upstream's query and --upstream-header's value would go there).
try "a target that is no path: @127.0.0.1/x" "a request target that is not a path (origin form)" \
	"GET @127.0.0.1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
try "a fragment in the target" "a fragment ('#') in the request target" \
	"GET /mcp#x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
try "GET *" "an asterisk target for another method than OPTIONS" \
	"GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
# What http_parser lets pass but a strict server may read otherwise (found by
# fuzz-httpstream): any two bytes after a chunk's data, a CR and any byte
# ending a chunk size line, "H" and any four bytes for "HTTP/".
try "two bytes that are not CRLF after a chunk's data" "a chunk's data not followed by CRLF" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n$smuggled"
try "a chunk size line ended by CR and another byte" "a chunk size line not ended by CRLF" \
	"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3\rXabc\r\n0\r\n\r\n$smuggled"
try "a request line whose version is not HTTP/1.x" "a request line that is not METHOD SP target SP HTTP/1.x" \
	"GET /a H\r\n\r\n1.1\r\nHost: x\r\n\r\n"
printf "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n" | node "$T/raw.mjs" "$tport" > "$T/connect"
check_eq "CONNECT: 405, the connection closed (a tunnel is no reverse proxy's business)" \
	"HTTP/1.1 405 Method Not Allowed|closed" "$(cat "$T/connect")"

printf "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" | node "$T/raw.mjs" "$tport" > "$T/options"
check_eq "OPTIONS * is forwarded as it is, and answered" "HTTP/1.1 200 OK|open" "$(cat "$T/options")"
printf "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n$body" |
	node "$T/raw.mjs" "$tport" > "$T/ok"
check_eq "a sound request still passes (and the connection stays open)" "HTTP/1.1 200 OK|open" "$(cat "$T/ok")"
stop_tap
bg_stop UP TERM
check_eq "the upstream got the sound requests only" "OPTIONS *
POST /mcp" "$(cat "$T/up.log")"
# (Sorted: a connection's session is the order its first request was stored in.)
check_eq "each refusal stored: its exchange, 400, outcome refused and why" \
	"$(cut -d'|' -f2 "$T/want" | sed 's/^/400|refused|/' | sort)" \
	"$(sql "$T/s.db" "select status || '|' || outcome || '|' || error from http_exchange where outcome = 'refused' and status = 400" | sort)"
check_eq "and the CONNECT: 405, refused, why" "CONNECT|405|refused|CONNECT (a tunnel) through a reverse proxy" \
	"$(sql "$T/s.db" "select method || '|' || status || '|' || outcome || '|' || error from http_exchange where status = 405")"
check_eq "no message stored from a refused request's body: the sound one's only" 1 \
	"$(sql "$T/s.db" "select count(*) from message where dir = 'c2s'")"
finish
