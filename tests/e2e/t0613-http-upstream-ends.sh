#!/bin/sh
# Sessions end when they end, and a failing upstream is said:
#   1. an upstream that dies is said once on the tap's stderr, however many
#      requests it fails; that it answers again is said when it does, and a
#      second outage is said again; analyze reports (TAP-003) each request
#      the tap answered itself because the upstream was gone, naming its id;
#   2. a legacy HTTP+SSE session ends in the store when its GET stream closes,
#      while the tap runs on (not when the tap stops);
#   3. a Streamable HTTP session its client leaves without a DELETE is shown,
#      while the tap runs, with its last activity (its last exchange) and how
#      long it has been idle.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

# A scripted upstream: Streamable HTTP on /mcp (an initialize gets session S1,
# a notification 202, a request an empty result) and legacy HTTP+SSE on /sse:
# the endpoint event, then each request POSTed to /message answered on the
# stream, which the server closes 200 ms after its first answer.
cat > "$T/up.mjs" <<'JS'
import http from "node:http";
let stream = null;
const srv = http.createServer((req, res) => {
	let body = "";
	req.on("data", (d) => (body += d));
	req.on("end", () => {
		const m = body ? JSON.parse(body) : {};
		if (req.method === "GET" && req.url === "/sse") {
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.write("event: endpoint\ndata: /message?sessionId=L1\n\n");
			stream = res;
			return;
		}
		if (req.url.startsWith("/message")) {
			res.writeHead(202);
			res.end();
			if (m.id !== undefined && stream) {
				const result = m.method === "initialize"
					? { protocolVersion: "2024-11-05", capabilities: {}, serverInfo: { name: "u", version: "1" } }
					: {};
				stream.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: m.id, result })}\n\n`);
				if (m.method !== "initialize") {
					const s = stream;
					stream = null;
					setTimeout(() => s.end(), 200);
				}
			}
			return;
		}
		if (m.method === "initialize") {
			res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "S1" });
			res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "u", version: "1" } } }));
		} else if (m.id === undefined) {
			res.writeHead(202);
			res.end();
		} else {
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }));
		}
	});
});
srv.listen(Number(process.argv[2]), "127.0.0.1", () => console.error("up ready"));
JS
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
up() { bg_start UP 's/^up \(ready\)$/\1/p' "the upstream" node "$T/up.mjs" "$port"; }
post() { # post ID METHOD: a request of session S1 through the tap; its answer's text
	curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-H 'Mcp-Session-Id: S1' -H 'MCP-Protocol-Version: 2025-06-18' \
		--data "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"$2\"}" "$TAP_URL/mcp"
}

# 1. Outages.
up
start_tap "$T/u.db" "http://127.0.0.1:$port"
curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	--data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' "$TAP_URL/mcp"
curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	-H 'Mcp-Session-Id: S1' -H 'MCP-Protocol-Version: 2025-06-18' \
	--data '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$TAP_URL/mcp"
check_eq "the upstream answers through the tap" '{"jsonrpc":"2.0","id":2,"result":{}}' "$(post 2 ping)"
bg_stop UP KILL
for i in 3 4 5; do post $i ping > "$T/r$i"; done
check_eq "with the upstream dead, the tap answers 502 with a JSON-RPC error" \
	'{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"mcptap: the upstream could not be reached: Connection refused"}}' \
	"$(cat "$T/r5")"
up
check_eq "the upstream back: answered again" '{"jsonrpc":"2.0","id":6,"result":{}}' "$(post 6 ping)"
bg_stop UP KILL
post 7 ping > /dev/null
stop_tap
check_eq "stderr: each outage once, and the return" \
	"mcptap: listening on $TAP_URL, forwarding to http://127.0.0.1:$port
mcptap: warning: the upstream cannot be reached (Connection refused): clients get the tap's 502 or 504, or a cut response, until it answers again
mcptap: the upstream answers again
mcptap: warning: the upstream cannot be reached (Connection refused): clients get the tap's 502 or 504, or a cut response, until it answers again" \
	"$(cat "$TAP_ERR")"
"$MCPTAP" analyze -r "$T/u.db" > "$T/a.txt"
check_eq "analyze: exit 0 (warnings)" 0 $?
check_eq "TAP-003 names each request the server never answered, and nothing else is said" \
	"3
4
5
7
session 1: 0 errors, 4 warnings, 0 info (checked against 2025-06-18, negotiated)" \
	"$(sed -n 's/^session 1 #[0-9]* c→s: TAP-003 warning: the tap answered the POST (exchange [0-9]*) with 502 itself: the upstream could not be reached (Connection refused); request id \([0-9]*\) never got the server.s answer (mcptap, 2025-06-18)$/\1/p; /^session 1:/p' "$T/a.txt")"
check_eq "every line of the report is one of those, then the count by rule" "7|by rule:|  TAP-003 ×4, first at session 1 #$(sed -n 's/^session 1 #\([0-9]*\) .*/\1/p' "$T/a.txt" | head -n 1)" \
	"$(wc -l < "$T/a.txt" | tr -d ' ')|$(tail -n 2 "$T/a.txt" | paste -sd '|')"

# 2. A legacy session ends with its stream.
up
start_tap "$T/l.db" "http://127.0.0.1:$port"
curl -s -N "$TAP_URL/sse" > "$T/stream" &
curlpid=$!
n=0
while ! grep -q '^data: /message' "$T/stream" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
lpost() {
	curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data "$1" "$TAP_URL/message?sessionId=L1"
}
check_eq "the legacy initialize: 202" 202 "$(lpost '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')"
check_eq "a call: 202" 202 "$(lpost '{"jsonrpc":"2.0","id":2,"method":"ping"}')"
wait $curlpid
check_eq "the server closed the stream after both answers" 2 "$(grep -c '^event: message' "$T/stream")"
n=0 # (the tap commits every 20 ms)
while [ "$(sql "$T/l.db" "select ended_wall is not null from session where id = 1" 2> /dev/null)" != 1 ] && [ $n -lt 50 ]; do
	sleep 0.1
	n=$((n + 1))
done
check_eq "while the tap runs on, the session is ended" "ended" \
	"$("$MCPTAP" sessions -r "$T/l.db" -T json | node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).state)')"
check "its duration is the stream's (under 2 s), not the tap's" test \
	"$(sql "$T/l.db" "select duration_ns < 2000000000 from session where id = 1")" = 1
sleep 1
stop_tap
check_eq "the tap stopped a second later: the duration did not grow" 1 \
	"$(sql "$T/l.db" "select duration_ns < 2000000000 from session where id = 1")"

# 3. A Streamable session left without a DELETE: its last activity.
start_tap "$T/s.db" "http://127.0.0.1:$port"
curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	--data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' "$TAP_URL/mcp"
check_eq "a call in it" '{"jsonrpc":"2.0","id":2,"result":{}}' "$(post 2 ping)"
n=0
while [ "$(sql "$T/s.db" "select count(*) from http_exchange where outcome = 'complete'" 2> /dev/null)" != 2 ] && [ $n -lt 50 ]; do
	sleep 0.1
	n=$((n + 1))
done
sleep 2
"$MCPTAP" sessions -r "$T/s.db" -T json > "$T/s.json"
"$MCPTAP" sessions -r "$T/s.db" > "$T/s.txt"
check_eq "running, its last activity the end of its last exchange or its last message" \
	"running|$(sql "$T/s.db" "select max((select wall + (end_ns - t_ns) / 1000 from http_exchange order by seq desc limit 1), (select wall from message order by seq desc limit 1))")" \
	"$(node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const d = new Date(o.last_activity); console.log(`${o.state}|${d.getTime() * 1000 + Number(o.last_activity.match(/\.\d{3}(\d{3})/)[1])}`)' "$T/s.json")"
check "the text says it, idle 2 s or more" grep -q ', last activity [0-9-]* [0-9:]* (idle [2-9][.0-9]*s)$' "$T/s.txt"
stop_tap
check_eq "once the tap stopped, no idle time is said" 0 "$("$MCPTAP" sessions -r "$T/s.db" | grep -c 'idle')"
bg_stop UP TERM
finish
