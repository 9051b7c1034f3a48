#!/bin/sh
# record -v (the HTTP tap): one line on stderr for each exchange as it ends,
# mitmdump's way: connection, method, path (a query shown as "?…", never its
# credential), what the body carried, status and type, messages, an ending
# that was not complete, the time. And -v without --upstream is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

# An upstream: initialize (JSON, session S1), notifications (202), tools/call
# answered on SSE with a progress notification first, anything else 404.
cat > "$T/up.mjs" <<'JS'
import http from "node:http";
http.createServer((req, res) => {
	let body = "";
	req.on("data", (d) => (body += d));
	req.on("end", () => {
		const m = body ? JSON.parse(body) : {};
		if (m.method === "initialize") {
			res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "S1" });
			res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "u", version: "1" } } }));
		} else if (m.method && m.id === undefined) {
			res.writeHead(202);
			res.end();
		} else if (m.method === "tools/call") {
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } })}\n\n`);
			res.end(`data: ${JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { content: [] } })}\n\n`);
		} else {
			res.writeHead(404);
			res.end();
		}
	});
}).listen(Number(process.argv[2]), "127.0.0.1", () => console.error("up ready"));
JS
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
bg_start UP 's/^up \(ready\)$/\1/p' "the upstream" node "$T/up.mjs" "$port"
start_tap "$T/v.db" "http://127.0.0.1:$port" -v
req() { # req DATA [PATH]: a POST through the tap, its status
	curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -H 'Mcp-Session-Id: S1' \
		--data "$1" "$TAP_URL${2:-/mcp}"
}
check_eq "initialize" 200 "$(req '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')"
check_eq "initialized" 202 "$(req '{"jsonrpc":"2.0","method":"notifications/initialized"}')"
check_eq "a tool call on SSE" 200 "$(req '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}')"
check_eq "a batch, to a path with a query holding a key" 404 "$(req '[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]' '/other?api_key=SECRET123')"
check_eq "a foreign Host: refused by the tap, before its body is read" 403 "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' -H 'Content-Type: application/json' --data '{"jsonrpc":"2.0","id":5,"method":"ping"}' "$TAP_URL/mcp")"
bg_stop UP KILL
check_eq "the upstream gone: 502" 502 "$(req '{"jsonrpc":"2.0","id":6,"method":"ping"}')"
stop_tap
check_eq "the tap exits 0" 0 "$TAP_STATUS"
# (times vary: masked)
check_eq "stderr: one line per exchange, in order" "mcptap: listening on $TAP_URL, forwarding to http://127.0.0.1:$port
mcptap: #1 POST /mcp initialize → 200 json, 2 messages, T
mcptap: #2 POST /mcp notifications/initialized → 202 empty, 1 message, T
mcptap: #3 POST /mcp tools/call echo → 200 sse, 3 messages, T
mcptap: #4 POST /other?… batch of 2 → 404 other, 1 message, T
mcptap: warning: refused a request for Host 'evil.example' (the tap listens on loopback: a DNS rebinding?); --allow-host NAME lets a name in
mcptap: #5 POST /mcp → 403 json, refused: Host is not a loopback name nor one given with --allow-host (a DNS rebinding?), T
mcptap: warning: the upstream cannot be reached (Connection refused): clients get the tap's 502 or 504, or a cut response, until it answers again
mcptap: #6 POST /mcp ping → 502 json, 1 message, unreachable: Connection refused, T" \
	"$(sed 's/, [0-9.]*\(us\|ms\|s\)$/, T/' "$TAP_ERR")"
check_eq "the query's key is never printed" 0 "$(grep -c SECRET123 "$TAP_ERR")"

# -v is the HTTP tap's.
"$MCPTAP" record -w "$T/s.db" -v -- true 2> "$T/e.err"
check_eq "record -v without --upstream: exit 2" 2 $?
check_eq "record -v without --upstream: why" "mcptap: -v needs --upstream (a line per HTTP exchange)" "$(head -n 1 "$T/e.err")"

finish
