#!/bin/sh
# Limits of the HTTP tap's byte relay, and a protocol switch through it:
#   - a client trickling its request head (a byte every 200 ms) gets 408
#     once --client-timeout has passed since its first byte, and is closed;
#   - a client that stops in the middle of a body is closed after
#     --client-timeout of silence;
#   - bytes that are not HTTP/1.x (a TLS ClientHello) get 400 and a close;
#   - nothing of those three reaches the upstream;
#   - a client waiting for 100 Continue gets it from the tap (the request
#     goes upstream whole, so the upstream's would never come first);
#   - a 101 Switching Protocols answer makes the connection a byte tunnel:
#     what the client sends after it comes back from the upstream's echo.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

# The upstream: logs the first line of each connection's bytes; answers a GET
# /ws with 101 and then echoes every byte, anything else with 200.
cat > "$T/up.mjs" <<'JS'
import net from "node:net";
import fs from "node:fs";
const srv = net.createServer((s) => {
	let got = Buffer.alloc(0), tunnel = false;
	s.on("data", (d) => {
		if (tunnel) { s.write(d); return; }
		got = Buffer.concat([got, d]);
		const end = got.indexOf("\r\n\r\n");
		if (end < 0) return;
		const head = got.subarray(0, end).toString();
		fs.appendFileSync(process.argv[2], head.split("\r\n")[0] + "\n");
		if (head.startsWith("GET /ws ")) {
			tunnel = true;
			s.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n");
			const rest = got.subarray(end + 4);
			if (rest.length) s.write(rest);
		} else {
			s.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
		}
		got = Buffer.alloc(0);
	});
	s.on("error", () => {});
});
srv.listen(0, "127.0.0.1", () => console.error(`up ${srv.address().port}`));
JS
# client.mjs PORT MODE: prints what came back (its first line) and how the
# connection ended, with the seconds it took.
cat > "$T/client.mjs" <<'JS'
import net from "node:net";
const [port, mode] = [Number(process.argv[2]), process.argv[3]];
const t0 = Date.now();
let got = "";
const s = net.connect(port, "127.0.0.1");
const say = (how) => { console.log(`${got.split("\r\n")[0]}|${how}|${Math.round((Date.now() - t0) / 1000)}`); process.exit(0); };
s.on("error", () => {});
s.on("close", () => say("closed"));
setTimeout(() => say("open"), 8000);
s.on("data", (d) => {
	got += d;
	if (mode === "upgrade" && got.includes("\r\n\r\n") && !s.sent) {
		s.sent = true;
		s.write("ping through the tunnel");
	}
	if (mode === "expect" && got.startsWith("HTTP/1.1 100 Continue\r\n\r\n") && !s.sent) {
		s.sent = true;
		s.write("{}"); // the body, only once the 100 came
	}
	if (mode === "expect" && got.endsWith("{}")) {
		console.log(got.split("\r\n").filter((l) => l.startsWith("HTTP/")).join(","));
		process.exit(0);
	}
	if (mode === "upgrade" && got.endsWith("ping through the tunnel")) {
		console.log(`${got.split("\r\n")[0]}|echo:${got.slice(got.indexOf("\r\n\r\n") + 4)}`);
		process.exit(0);
	}
});
s.on("connect", () => {
	if (mode === "trickle") {
		s.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
		setInterval(() => s.write("X"), 200);
	} else if (mode === "body") {
		s.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"");
	} else if (mode === "tls") {
		s.write(Buffer.from("16030100a5010000a10303" + "00".repeat(40), "hex"));
	} else if (mode === "upgrade") {
		s.write("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n");
	} else if (mode === "expect") {
		s.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
	}
});
JS
: > "$T/up.log"
bg_start UP 's/^up \([0-9]*\)$/\1/p' "the upstream" node "$T/up.mjs" "$T/up.log"
start_tap "$T/l.db" "http://127.0.0.1:$UP_URL" --client-timeout 1500
tport=${TAP_URL##*:}

r=$(node "$T/client.mjs" "$tport" trickle)
check_eq "a trickled head: 408 and closed, after --client-timeout (1.5 s) and not at 8 s" \
	"HTTP/1.1 408 Request Timeout|closed" "${r%|*}"
check "(it took ${r##*|} s: under 5)" test "${r##*|}" -lt 5
r=$(node "$T/client.mjs" "$tport" body)
check_eq "a body that stops: closed after --client-timeout, no answer" "|closed" "${r%|*}"
r=$(node "$T/client.mjs" "$tport" tls)
check_eq "a TLS ClientHello: 400 and closed" "HTTP/1.1 400 Bad Request|closed" "${r%|*}"
check_eq "none of them reached the upstream" "" "$(cat "$T/up.log")"

check_eq "Expect: 100-continue: the tap's 100 before the body, the upstream's answer after it" \
	"HTTP/1.1 100 Continue,HTTP/1.1 200 OK" "$(node "$T/client.mjs" "$tport" expect)"
check_eq "a 101 answer: the connection is a tunnel both ways" \
	"HTTP/1.1 101 Switching Protocols|echo:ping through the tunnel" "$(node "$T/client.mjs" "$tport" upgrade)"
check_eq "the upstream got the POST once its body came, and the upgrade request" \
	"POST /mcp HTTP/1.1|GET /ws HTTP/1.1" "$(paste -sd '|' "$T/up.log")"
stop_tap
bg_stop UP TERM
check_eq "the tap exits 0" 0 "$TAP_STATUS"
check_eq "stored: the trickled request (its line) refused with why; the upgrade, 101; nothing else" \
	"POST /mcp 408 refused a request head not whole within 1500 ms (--client-timeout)
POST /mcp 200 complete 
GET /ws 101 complete " \
	"$(sql "$T/l.db" "select method || ' ' || target || ' ' || status || ' ' || outcome || ' ' || coalesce(error, '') from http_exchange order by wall")"
finish
