#!/usr/bin/env node
// tests/node/http-faults.mjs - a scripted upstream and its client, for the HTTP tap's
// transparency and fault tests. The upstream listens on --upstream-port; the client
// talks to it through the tap at --tap URL (the tap forwards to the upstream).
//
// Usage: node http-faults.mjs --upstream-port PORT --tap URL CHECK...
// CHECKs:
//   stream    an SSE stream whose second event is sent only once the client has the
//             first (a tap that buffers deadlocks it: the check times out); every
//             byte arrives as sent (CR, LF and CRLF line ends, comments, id:, retry:)
//   headers   end-to-end headers reach the upstream unchanged (Authorization, Cookie,
//             Mcp-Param-*, unknown ones), a query's api_key too; so do hop-by-hop
//             ones (the tap's upstream connection is the client's own) and
//             Accept-Encoding; Host names the upstream
//   status    a 418 with its body and headers, and a 202 without a body, pass as they are
//   die       the upstream dies after one event: the client sees the stream cut
//   unanswered  a JSON-RPC request the upstream never answers is cut by the tap's stop
//             (the test stops the tap meanwhile)
//   endpoint  legacy HTTP+SSE whose endpoint event is an absolute URI naming the
//             upstream: the client gets the tap's origin instead, POSTs there, and the
//             answer comes on the GET stream
//   resume    a GET stream resumed with Last-Event-ID: the server sends an event again
//             (stored once more, flagged as a replay) and a new one
//   disconnect  a client that closes an SSE stream makes the tap close it upstream
//   batch     a 2025-03-26 batch POSTed, answered by a JSON array: both pass as sent
//   oauth     a 401 with WWW-Authenticate and the protected-resource metadata under
//             /.well-known pass as sent; with --upstream-header the upstream gets the
//             tap's credential (the test checks what the upstream saw: /whoami)
//   idle      an SSE stream silent for 3 s lives (the tap runs with timeouts of 1 s)
//   silent    a JSON answer that never comes: the tap's 504 with a JSON-RPC error
//   stall     a client that reads nothing of a flood: the tap closes it after
//             --client-timeout, the upstream sees it, and what the upstream could
//             write meanwhile stays small (flow control)
//   stateless the 2026-07-28 revision: two clients, each on two connections, their
//             requests naming them in _meta; Mcp-Method, Mcp-Name and Mcp-Param-*
//             reach the server; a subscriptions/listen stream the client closes is
//             closed upstream (cancellation)
// Prints "ok - ..." or "not ok - ..." per check; exits 1 when one failed.

import http from "node:http";

const args = process.argv.slice(2);
let port = 0;
let tap = "";
const checks = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--upstream-port") port = Number(args[++i]);
	else if (args[i] === "--tap") tap = args[++i];
	else checks.push(args[i]);
}
if (!port || !tap || !checks.length) {
	process.stderr.write("usage: node http-faults.mjs --upstream-port PORT --tap URL CHECK...\n");
	process.exit(2);
}
const tapUrl = new URL(tap);
let failed = 0;
const ok = (cond, what) => {
	console.log(`${cond ? "ok" : "not ok"} - ${what}`);
	if (!cond) failed++;
};

// The stream the upstream sends: every kind of line end, a comment, a priming event,
// retry:, multi-line data.
const EVENT1 = 'id: 1\r\nevent: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"one"}}\r\n\r\n';
const EVENT2 = ': keep-alive\n\nretry: 500\rid: 2\rdata: {"jsonrpc":"2.0",\rdata: "method":"notifications/message","params":{"level":"info","data":"two"}}\r\r';
const EVENT3 = 'id: 3\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n';

let firstSeen;
const firstSeenP = new Promise((r) => (firstSeen = r));
let seenHeaders = null;
let legacy = null;
let floodWritten = 0;
let floodClosed;
const floodClosedP = new Promise((r) => (floodClosed = r));
const v26Seen = [];
let listenClosed;
const listenClosedP = new Promise((r) => (listenClosed = r));
let sawClose;
const sawCloseP = new Promise((r) => (sawClose = r));

const server = http.createServer((req, res) => {
	const u = new URL(req.url, "http://x");
	if (u.pathname === "/stream") {
		res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
		res.write(EVENT1);
		firstSeenP.then(() => {
			res.write(EVENT2);
			res.end(EVENT3);
		});
	} else if (u.pathname === "/echo-headers") {
		seenHeaders = { url: req.url, headers: req.rawHeaders };
		let body = "";
		req.on("data", (d) => (body += d));
		req.on("end", () => {
			res.writeHead(200, { "Content-Type": "application/json", "X-Upstream": "yes" });
			res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { body } }));
		});
	} else if (u.pathname === "/teapot") {
		res.writeHead(418, "I'm a teapot", { "Content-Type": "text/plain", "X-Brew": "earl grey", "Set-Cookie": "s=cookie-secret-1; HttpOnly" });
		res.end("short and stout\n");
	} else if (u.pathname === "/accepted") {
		req.resume();
		req.on("end", () => {
			res.writeHead(202);
			res.end();
		});
	} else if (u.pathname === "/die") {
		res.writeHead(200, { "Content-Type": "text/event-stream" });
		res.write('id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
		setTimeout(() => req.socket.destroy(), 200);
	} else if (u.pathname === "/sse") {
		res.writeHead(200, { "Content-Type": "text/event-stream" });
		res.write(`event: endpoint\ndata: http://127.0.0.1:${port}/messages?sessionId=abc\n\n`);
		legacy = res;
	} else if (u.pathname === "/messages") {
		let body = "";
		req.on("data", (d) => (body += d));
		req.on("end", () => {
			res.writeHead(202);
			res.end();
			const m = JSON.parse(body);
			legacy.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { via: u.search } })}\n\n`);
		});
	} else if (u.pathname === "/resume") {
		res.writeHead(200, { "Content-Type": "text/event-stream" });
		const ev = (id) => `id: ${id}\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${id}"}}\n\n`;
		if (req.headers["last-event-id"] === "r1") res.end(ev("r2") + ev("r3"));
		else res.end(ev("r1") + ev("r2"));
	} else if (u.pathname === "/hold") {
		res.writeHead(200, { "Content-Type": "text/event-stream" });
		res.write('id: h1\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"h1"}}\n\n');
		res.on("close", () => sawClose());
	} else if (u.pathname === "/v26") {
		let body = "";
		req.on("data", (d) => (body += d));
		req.on("end", () => {
			const m = JSON.parse(body);
			v26Seen.push({ method: req.headers["mcp-method"], name: req.headers["mcp-name"], param: req.headers["mcp-param-region"], bodyMethod: m.method });
			if (m.method === "subscriptions/listen") {
				res.writeHead(200, { "Content-Type": "text/event-stream" });
				res.write(`data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":${JSON.stringify(m.id)}}}}\n\n`);
				res.on("close", () => listenClosed());
				return;
			}
			res.writeHead(200, { "Content-Type": "application/json" });
			res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { resultType: "complete", content: [] } }));
		});
	} else if (u.pathname === "/batch") {
		let body = "";
		req.on("data", (d) => (body += d));
		req.on("end", () => {
			const a = JSON.parse(body);
			res.writeHead(200, { "Content-Type": "application/json" });
			res.end(JSON.stringify(a.filter((m) => "id" in m).map((m) => ({ jsonrpc: "2.0", id: m.id, result: { method: m.method } }))));
		});
	} else if (u.pathname === "/mcp-auth") {
		req.resume();
		res.writeHead(401, { "WWW-Authenticate": `Bearer resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp-auth"`, "Content-Type": "application/json" });
		res.end('{"error":"invalid_token"}');
	} else if (u.pathname === "/.well-known/oauth-protected-resource/mcp-auth") {
		res.writeHead(200, { "Content-Type": "application/json" });
		res.end(JSON.stringify({ resource: `http://127.0.0.1:${port}/mcp-auth`, authorization_servers: ["https://auth.example.com"] }));
	} else if (u.pathname === "/whoami") {
		req.resume();
		res.writeHead(200, { "Content-Type": "application/json" });
		res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { authorization: req.headers.authorization ?? null } }));
	} else if (u.pathname === "/idle") {
		res.writeHead(200, { "Content-Type": "text/event-stream" });
		res.write(": open\n\n");
		setTimeout(() => res.end('data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"late"}}\n\n'), 3000);
	} else if (u.pathname === "/flood") {
		res.writeHead(200, { "Content-Type": "text/event-stream" });
		const ev = `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${"f".repeat(4000)}"}}\n\n`;
		const pump = () => {
			while (!res.destroyed && floodWritten < 200e6) {
				floodWritten += ev.length;
				if (!res.write(ev)) return res.once("drain", pump);
			}
		};
		res.on("close", () => floodClosed());
		pump();
	} else if (u.pathname === "/never") {
		req.resume(); // never answered
	} else {
		res.writeHead(404);
		res.end();
	}
});

// A request through the tap with node's http client (it lets a test set Connection).
function request(method, path, headers, body) {
	return new Promise((resolve, reject) => {
		const req = http.request({ host: tapUrl.hostname, port: tapUrl.port, method, path, headers }, (res) => {
			const chunks = [];
			res.on("data", (c) => {
				chunks.push(c);
				if (res.onChunk) res.onChunk(Buffer.concat(chunks).toString("latin1"));
			});
			res.on("end", () => resolve({ res, body: Buffer.concat(chunks).toString("latin1"), cut: false }));
			res.on("error", () => resolve({ res, body: Buffer.concat(chunks).toString("latin1"), cut: true }));
			res.on("aborted", () => resolve({ res, body: Buffer.concat(chunks).toString("latin1"), cut: true }));
			if (path === "/stream")
				res.onChunk = (sofar) => {
					if (sofar.includes('"one"')) firstSeen();
				};
		});
		req.on("error", reject);
		if (body) req.write(body);
		req.end();
	});
}

const withTimeout = (p, ms, what) =>
	Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${what}: no answer in ${ms} ms`)), ms))]);

async function main() {
	await new Promise((r) => server.listen(port, "127.0.0.1", r));
	for (const c of checks) {
		try {
			if (c === "stream") {
				const r = await withTimeout(request("GET", "/stream", { Accept: "text/event-stream" }), 10000, "stream");
				ok(true, "stream: the second event came after the client had the first (nothing held back)");
				ok(r.body === EVENT1 + EVENT2 + EVENT3, `stream: every byte as the upstream sent it (${r.body.length} of ${(EVENT1 + EVENT2 + EVENT3).length})`);
				ok(r.res.headers["content-type"] === "text/event-stream", "stream: Content-Type as sent");
			} else if (c === "headers") {
				const r = await request(
					"POST",
					"/echo-headers?api_key=query-secret-1&x=1",
					{
						"Content-Type": "application/json",
						Accept: "application/json, text/event-stream",
						Authorization: "Bearer bearer-secret-1",
						Cookie: "sid=cookie-secret-2",
						"Mcp-Param-Region": "eu-west",
						"X-Unknown-Thing": "kept",
						Connection: "keep-alive, X-Hop",
						"X-Hop": "dropped",
						"Keep-Alive": "timeout=5",
						"Accept-Encoding": "gzip, br",
					},
					'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"password":"arg-secret-1"}}}',
				);
				const h = {};
				for (let i = 0; i < seenHeaders.headers.length; i += 2) h[seenHeaders.headers[i].toLowerCase()] = seenHeaders.headers[i + 1];
				ok(r.res.statusCode === 200 && r.res.headers["x-upstream"] === "yes", "headers: the upstream's answer and its headers came back");
				ok(seenHeaders.url === "/echo-headers?api_key=query-secret-1&x=1", `headers: path and query unchanged (${seenHeaders.url})`);
				ok(h.authorization === "Bearer bearer-secret-1", "headers: Authorization forwarded unchanged");
				ok(h.cookie === "sid=cookie-secret-2", "headers: Cookie forwarded unchanged");
				ok(h["mcp-param-region"] === "eu-west", "headers: an unknown Mcp-Param-* forwarded");
				ok(h["x-unknown-thing"] === "kept", "headers: an unknown header forwarded");
				ok(h["x-hop"] === "dropped" && h.connection === "keep-alive, X-Hop", "headers: Connection and a header it names pass as sent");
				ok(h["keep-alive"] === "timeout=5", "headers: Keep-Alive passes as sent");
				ok(h["accept-encoding"] === "gzip, br", `headers: Accept-Encoding passes as sent (${h["accept-encoding"]})`);
				ok(h.host === `127.0.0.1:${port}`, `headers: Host names the upstream (${h.host})`);
				ok(h.accept === "application/json, text/event-stream", "headers: Accept unchanged");
				ok(!("expect" in h), "headers: no Expect added");
			} else if (c === "status") {
				const r = await request("GET", "/teapot", {});
				ok(r.res.statusCode === 418, `status: 418 passes (${r.res.statusCode} ${r.res.statusMessage})`);
				ok(r.res.statusMessage === "I'm a teapot", "status: its reason phrase too");
				ok(r.body === "short and stout\n" && r.res.headers["x-brew"] === "earl grey", "status: its body and headers too");
				const a = await request("POST", "/accepted", { "Content-Type": "application/json" }, '{"jsonrpc":"2.0","method":"notifications/initialized"}');
				ok(a.res.statusCode === 202 && a.body === "", "status: a 202 without a body");
			} else if (c === "die") {
				const r = await withTimeout(request("GET", "/die", { Accept: "text/event-stream" }), 10000, "die");
				ok(r.cut, "die: the client sees the stream cut, as without the tap");
				ok(r.body.includes('"progress":1'), "die: the event before it arrived");
			} else if (c === "endpoint") {
				let gotEndpoint;
				const endpointP = new Promise((r) => (gotEndpoint = r));
				const streamP = new Promise((resolve, reject) => {
					const req = http.request({ host: tapUrl.hostname, port: tapUrl.port, method: "GET", path: "/sse", headers: { Accept: "text/event-stream" } }, (res) => {
						let all = "";
						res.on("data", (d) => {
							all += d;
							const m = /event: endpoint\ndata: (.*)\n\n/.exec(all);
							if (m) gotEndpoint(m[1]);
						});
						res.on("end", () => resolve(all));
					});
					req.on("error", reject);
					req.end();
				});
				const endpoint = await withTimeout(endpointP, 10000, "endpoint");
				ok(endpoint === `http://${tapUrl.host}/messages?sessionId=abc`, `endpoint: the absolute URI names the tap (${endpoint})`);
				const ep = new URL(endpoint);
				const p = await request("POST", ep.pathname + ep.search, { "Content-Type": "application/json" }, '{"jsonrpc":"2.0","id":5,"method":"tools/list"}');
				ok(p.res.statusCode === 202, "endpoint: the POST to it is accepted");
				const all = await withTimeout(streamP, 10000, "endpoint stream");
				ok(all.endsWith('event: message\ndata: {"jsonrpc":"2.0","id":5,"result":{"via":"?sessionId=abc"}}\n\n'), "endpoint: the answer came on the GET stream, untouched");
			} else if (c === "resume") {
				const a = await request("GET", "/resume", { Accept: "text/event-stream", "Mcp-Session-Id": "resume-1" });
				const b = await request("GET", "/resume", { Accept: "text/event-stream", "Mcp-Session-Id": "resume-1", "Last-Event-ID": "r1" });
				ok(a.body.includes('"r1"') && a.body.includes('"r2"') && b.body.includes('"r2"') && b.body.includes('"r3"'), "resume: both streams as sent");
			} else if (c === "disconnect") {
				await withTimeout(
					new Promise((resolve, reject) => {
						const req = http.request({ host: tapUrl.hostname, port: tapUrl.port, method: "GET", path: "/hold", headers: { Accept: "text/event-stream" } }, (res) => {
							res.on("data", (d) => {
								if (String(d).includes("h1")) req.destroy();
							});
							res.on("error", () => {});
							resolve();
						});
						req.on("error", () => {});
						req.end();
					}).then(() => sawCloseP),
					10000,
					"disconnect",
				);
				ok(true, "disconnect: the upstream saw its stream closed when the client left");
			} else if (c === "batch") {
				const body = '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"two","method":"ping"}]';
				const r = await request("POST", "/batch", { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-03-26" }, body);
				ok(r.res.statusCode === 200 && r.body === '[{"jsonrpc":"2.0","id":1,"result":{"method":"tools/list"}},{"jsonrpc":"2.0","id":"two","result":{"method":"ping"}}]', "batch: a batch and its answers pass as sent");
			} else if (c === "oauth") {
				const r = await request("POST", "/mcp-auth", { "Content-Type": "application/json" }, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}');
				ok(r.res.statusCode === 401 && r.res.headers["www-authenticate"] === `Bearer resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp-auth"`, "oauth: the 401 and its WWW-Authenticate pass as sent");
				const m = await request("GET", "/.well-known/oauth-protected-resource/mcp-auth", {});
				ok(m.res.statusCode === 200 && JSON.parse(m.body).resource === `http://127.0.0.1:${port}/mcp-auth`, "oauth: the protected-resource metadata under /.well-known passes as sent");
				const w = await request("POST", "/whoami", { "Content-Type": "application/json" }, '{"jsonrpc":"2.0","id":1,"method":"ping"}');
				ok(w.res.statusCode === 200, `oauth: /whoami answered: ${w.body}`);
				console.log(`# upstream saw authorization: ${JSON.parse(w.body).result.authorization}`);
			} else if (c === "idle") {
				const t0 = Date.now();
				const r = await withTimeout(request("GET", "/idle", { Accept: "text/event-stream" }), 10000, "idle");
				ok(!r.cut && r.body.endsWith('"late"}}\n\n') && Date.now() - t0 >= 2900, "idle: an SSE stream silent for 3 s is not timed out");
			} else if (c === "silent") {
				const t0 = Date.now();
				const r = await withTimeout(request("POST", "/never", { "Content-Type": "application/json" }, '{"jsonrpc":"2.0","id":"s1","method":"tools/list"}'), 10000, "silent");
				ok(r.res.statusCode === 504 && /^\{"jsonrpc":"2.0","id":"s1","error":\{"code":-32000,"message":"mcptap: the upstream sent nothing for 1500 ms/.test(r.body), `silent: 504 with a JSON-RPC error for id s1 (${r.res.statusCode} after ${Date.now() - t0} ms)`);
			} else if (c === "stall") {
				await withTimeout(
					new Promise((resolve) => {
						const req = http.request({ host: tapUrl.hostname, port: tapUrl.port, method: "GET", path: "/flood", headers: { Accept: "text/event-stream" } }, (res) => {
							res.pause(); // reads nothing more
							res.on("error", () => {});
							resolve();
						});
						req.on("error", () => {});
						req.end();
					}).then(() => floodClosedP),
					15000,
					"stall",
				);
				ok(true, "stall: the tap closed a client that read nothing, and the upstream's stream");
				ok(floodWritten < 20e6, `stall: the upstream could write ${(floodWritten / 1e6).toFixed(1)} MB meanwhile (bounded)`);
			} else if (c === "stateless") {
				const meta = (who) => ({
					"io.modelcontextprotocol/protocolVersion": "2026-07-28",
					"io.modelcontextprotocol/clientCapabilities": {},
					"io.modelcontextprotocol/clientInfo": { name: who, version: "1.0" },
				});
				const call = (who, id, agent) =>
					new Promise((resolve, reject) => {
						const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "forecast", arguments: { region: "eu" }, _meta: meta(who) } });
						const req = http.request(
							{ host: tapUrl.hostname, port: tapUrl.port, method: "POST", path: "/v26", agent,
							  headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "forecast", "Mcp-Param-Region": "eu" } },
							(res) => {
								let b = "";
								res.on("data", (d) => (b += d));
								res.on("end", () => resolve(JSON.parse(b)));
							},
						);
						req.on("error", reject);
						req.end(body);
					});
				const agents = [0, 1, 2, 3].map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
				const answers = await Promise.all([call("agent-a", 1, agents[0]), call("agent-b", 1, agents[1]), call("agent-a", 2, agents[2]), call("agent-b", 2, agents[3])]);
				ok(answers.every((a, i) => a.id === [1, 1, 2, 2][i] && a.result.resultType === "complete"), "stateless: four calls, equal ids from two clients, each answered");
				ok(v26Seen.length === 4 && v26Seen.every((v) => v.method === "tools/call" && v.name === "forecast" && v.param === "eu"), "stateless: Mcp-Method, Mcp-Name and Mcp-Param-Region reached the server");
				await withTimeout(
					new Promise((resolve) => {
						const body = JSON.stringify({ jsonrpc: "2.0", id: "sub-1", method: "subscriptions/listen", params: { notifications: { toolsListChanged: true }, _meta: meta("agent-a") } });
						const req = http.request({ host: tapUrl.hostname, port: tapUrl.port, method: "POST", path: "/v26", headers: { "Content-Type": "application/json", Accept: "text/event-stream", "Mcp-Method": "subscriptions/listen" } }, (res) => {
							res.on("data", (d) => {
								if (String(d).includes("acknowledged")) req.destroy();
							});
							res.on("error", () => {});
							resolve();
						});
						req.on("error", () => {});
						req.end(body);
					}).then(() => listenClosedP),
					10000,
					"listen",
				);
				ok(true, "stateless: closing the subscriptions/listen stream closed it upstream (cancellation)");
				agents.forEach((a) => a.destroy());
			} else if (c === "unanswered") {
				const r = await withTimeout(
					request("POST", "/never", { "Content-Type": "application/json" }, '{"jsonrpc":"2.0","id":"q1","method":"tools/list"}').then(
						(x) => x,
						(e) => ({ error: e }),
					),
					15000,
					"unanswered",
				);
				ok(r.error || r.cut || (r.res && r.res.statusCode >= 500), "unanswered: the tap's stop ends the request");
			} else {
				ok(false, `unknown check ${c}`);
			}
		} catch (e) {
			ok(false, `${c}: ${e.message}`);
		}
	}
	server.close();
	server.closeAllConnections();
	process.exit(failed ? 1 : 0);
}

main();
