#!/usr/bin/env node
// tests/node/verify-peers.mjs - HTTP peers for the end-to-end tests of
// `mcptap replay --as client --url` (verify over HTTP, t0540).
//
// Usage:
//   node verify-peers.mjs front --port P --upstream URL [--rewrite FROM=TO]
//        [--log-headers FILE] [--die-on TEXT] [--no-get]
//     A reverse proxy on 127.0.0.1:P in front of the server at URL (its origin:
//     every path goes there). --rewrite: FROM becomes TO in every response body
//     (SSE streams line by line), a server whose answers changed. --log-headers:
//     each request's method, path and raw headers, one JSON line each, to FILE.
//     --die-on: when a request body holds TEXT, the proxy exits at once (status
//     3), every connection cut: a server that dies in the middle of a session.
//     --no-get: a GET is answered 405 (a server without the GET stream).
//
//   node verify-peers.mjs server --port P [--fault TOOL=KIND]... [--get-dies]
//     A scripted MCP server on Streamable HTTP at http://127.0.0.1:P/mcp:
//     initialize (JSON, an Mcp-Session-Id minted), notifications and answers
//     202, tools/list, and tools/call of: echo (an SSE stream: a log message,
//     then the answer), roots (waits, up to 10 s, for the client's answer to the
//     roots/list the server sends on the GET stream once the client is
//     initialized, and returns its roots), and any other name (a JSON answer
//     "fine: NAME"). The GET stream starts with a priming event; DELETE ends
//     the session; an unknown session gets 404. A --fault makes the call of
//     TOOL answer with KIND instead:
//       status500  HTTP 500 with a JSON-RPC error without an id
//       notjson    HTTP 200, application/json, a body that is not JSON
//       html       HTTP 200, text/html
//       cut        an SSE stream with a log message, ended without the answer
//       garbage    an SSE stream with an event that is not JSON, then its end
//       resume     an SSE stream with a log message (event id r1), ended; the
//                  answer comes on the GET that resumes it (Last-Event-ID: r1)
//       reset      an SSE stream with a log message, then its connection reset
//       expire     HTTP 404 for this request, and the session is forgotten
//     --get-dies: the first GET stream is ended after its priming event (with
//     retry: 100); the roots/list goes on the next one (Last-Event-ID).
//
//   node verify-peers.mjs client --url URL --calls A,B,... [--log FILE]
//     The official SDK client against URL: initialize (declaring roots, and
//     answering the server's roots/list), tools/list, tools/call of each name
//     with {"text": NAME}, DELETE. Prints "ok - ..." / "not ok - ..."; exit 1
//     when one failed. --log: every message as http-client.mjs logs them.

import http from "node:http";
import { openSync, writeSync, appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";

const [mode, ...rest] = process.argv.slice(2);
const opts = { fault: {}, calls: [] };
for (let i = 0; i < rest.length; i++) {
	const a = rest[i];
	const val = () => rest[++i];
	if (a === "--port") opts.port = Number(val());
	else if (a === "--upstream") opts.upstream = new URL(val());
	else if (a === "--rewrite") {
		const v = val();
		const eq = v.indexOf("=");
		opts.rewrite = [v.slice(0, eq), v.slice(eq + 1)];
	} else if (a === "--log-headers") opts.logHeaders = val();
	else if (a === "--die-on") opts.dieOn = val();
	else if (a === "--no-get") opts.noGet = true;
	else if (a === "--fault") {
		const [tool, kind] = val().split("=");
		opts.fault[tool] = kind;
	} else if (a === "--get-dies") opts.getDies = true;
	else if (a === "--url") opts.url = val();
	else if (a === "--calls") opts.calls = val().split(",").filter(Boolean);
	else if (a === "--log") opts.log = val();
	else {
		process.stderr.write(`verify-peers: unknown argument '${a}'\n`);
		process.exit(2);
	}
}

function readBody(req) {
	return new Promise((resolve) => {
		const chunks = [];
		req.on("data", (c) => chunks.push(c));
		req.on("end", () => resolve(Buffer.concat(chunks)));
		req.on("error", () => resolve(Buffer.concat(chunks)));
	});
}

// ---- front ----

function front() {
	const server = http.createServer(async (req, res) => {
		const body = await readBody(req);
		if (opts.logHeaders) appendFileSync(opts.logHeaders, JSON.stringify({ method: req.method, url: req.url, headers: req.rawHeaders }) + "\n");
		if (opts.dieOn && body.includes(opts.dieOn)) {
			process.stderr.write(`verify-peers front: a request holds '${opts.dieOn}': dying\n`);
			process.exit(3);
		}
		if (opts.noGet && req.method === "GET") {
			res.writeHead(405, { Allow: "POST, DELETE" });
			return res.end();
		}
		const headers = { ...req.headers, host: opts.upstream.host };
		const up = http.request({ host: opts.upstream.hostname, port: opts.upstream.port, method: req.method, path: req.url, headers }, (ur) => {
			const h = { ...ur.headers };
			if (opts.rewrite) delete h["content-length"];
			res.writeHead(ur.statusCode, ur.statusMessage, h);
			if (typeof res.flushHeaders === "function") res.flushHeaders();
			let carry = "";
			const change = (s) => (opts.rewrite ? s.split(opts.rewrite[0]).join(opts.rewrite[1]) : s);
			ur.on("data", (c) => {
				if (!opts.rewrite) return res.write(c);
				carry += c.toString("utf8");
				const cut = carry.lastIndexOf("\n");
				if (cut < 0) return;
				res.write(change(carry.slice(0, cut + 1)));
				carry = carry.slice(cut + 1);
			});
			ur.on("end", () => res.end(change(carry)));
			ur.on("error", () => res.destroy());
		});
		up.on("error", () => {
			if (!res.headersSent) res.writeHead(502);
			res.end();
		});
		res.on("close", () => up.destroy());
		up.end(body);
	});
	server.listen(opts.port, "127.0.0.1");
}

// ---- server ----

function scriptedServer() {
	const sessions = new Map(); // id -> {get, initialized, rootsAsked, roots, waiters, getCount}
	const TOOLS = ["echo", "roots", "fine", ...Object.keys(opts.fault)].map((name) => ({
		name,
		description: `the ${name} tool`,
		inputSchema: { type: "object", properties: { text: { type: "string" } } },
	}));
	const resumable = new Map(); // event id -> the answer to send on the resuming GET
	const sse = (res) => {
		res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
		if (typeof res.flushHeaders === "function") res.flushHeaders();
	};
	const event = (msg, id) => `${id ? `id: ${id}\n` : ""}data: ${JSON.stringify(msg)}\n\n`;
	const json = (res, status, msg, extra = {}) => {
		res.writeHead(status, { "Content-Type": "application/json", ...extra });
		res.end(JSON.stringify(msg));
	};
	const log = (text) => ({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: text } });
	const askRoots = (s) => {
		if (!s.get || !s.initialized || s.rootsAsked) return;
		s.rootsAsked = true;
		s.get.write(event({ jsonrpc: "2.0", id: "roots-1", method: "roots/list" }, `g${++s.events}`));
	};

	const server = http.createServer(async (req, res) => {
		const u = new URL(req.url, "http://x");
		if (u.pathname !== "/mcp") {
			res.writeHead(404);
			return res.end();
		}
		const sid = req.headers["mcp-session-id"];
		const s = sid && sessions.get(sid);
		if (req.method === "GET") {
			if (!s) return json(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" } });
			const last = req.headers["last-event-id"];
			if (last && resumable.has(last)) {
				sse(res);
				res.end(event(resumable.get(last)));
				resumable.delete(last);
				return;
			}
			sse(res);
			s.getCount++;
			if (opts.getDies && s.getCount === 1) {
				res.end(`retry: 100\nid: g${++s.events}\ndata: \n\n`);
				return;
			}
			res.write(`id: g${++s.events}\ndata: \n\n`);
			s.get = res;
			res.on("close", () => {
				if (s.get === res) s.get = null;
			});
			askRoots(s);
			return;
		}
		if (req.method === "DELETE") {
			if (!s) return json(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" } });
			sessions.delete(sid);
			if (s.get) s.get.end();
			res.writeHead(200);
			return res.end();
		}
		if (req.method !== "POST") {
			res.writeHead(405, { Allow: "GET, POST, DELETE" });
			return res.end();
		}
		let m;
		try {
			m = JSON.parse((await readBody(req)).toString("utf8"));
		} catch {
			return json(res, 400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
		}
		if (m.method === "initialize") {
			const id = randomUUID();
			sessions.set(id, { get: null, initialized: false, rootsAsked: false, roots: null, waiters: [], getCount: 0, events: 0 });
			return json(res, 200, {
				jsonrpc: "2.0",
				id: m.id,
				result: {
					protocolVersion: "2025-11-25",
					capabilities: { tools: {}, logging: {} },
					serverInfo: { name: "verify-peers", version: "1.0.0" },
				},
			}, { "Mcp-Session-Id": id });
		}
		if (!s) return json(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" } });
		if (req.headers["mcp-protocol-version"] !== "2025-11-25")
			return json(res, 400, { jsonrpc: "2.0", error: { code: -32000, message: `Bad MCP-Protocol-Version: ${req.headers["mcp-protocol-version"]}` } });
		if (m.id === undefined || m.method === undefined) {
			// A notification, or the client's answer.
			if (m.method === "notifications/initialized") {
				s.initialized = true;
				askRoots(s);
			}
			if (m.id === "roots-1" && m.result) {
				s.roots = m.result.roots;
				for (const w of s.waiters.splice(0)) w();
			}
			res.writeHead(202);
			return res.end();
		}
		const answer = (result) => ({ jsonrpc: "2.0", id: m.id, result });
		if (m.method === "ping") return json(res, 200, answer({}));
		if (m.method === "tools/list") return json(res, 200, answer({ tools: TOOLS }));
		if (m.method !== "tools/call") return json(res, 200, { jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
		const name = m.params && m.params.name;
		const text = (t) => answer({ content: [{ type: "text", text: t }] });
		switch (opts.fault[name]) {
		case "status500":
			return json(res, 500, { jsonrpc: "2.0", error: { code: -32603, message: "Internal error: the database is down" } });
		case "notjson":
			res.writeHead(200, { "Content-Type": "application/json" });
			return res.end("this is not json");
		case "html":
			res.writeHead(200, { "Content-Type": "text/html" });
			return res.end("<html><body>Down for maintenance</body></html>");
		case "cut":
			sse(res);
			return res.end(event(log("cut: working")));
		case "garbage":
			sse(res);
			return res.end("data: garbage, not JSON\n\n");
		case "resume":
			sse(res);
			resumable.set("r1", text(`fine: ${name}`));
			return res.end(event(log("resume: working"), "r1"));
		case "reset":
			sse(res);
			res.write(event(log("reset: working")));
			return setTimeout(() => req.socket.destroy(), 100);
		case "expire":
			sessions.delete(sid);
			if (s.get) s.get.end();
			return json(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" } });
		default:
			break;
		}
		if (name === "echo") {
			sse(res);
			res.write(event(log(`echo: ${m.params.arguments && m.params.arguments.text}`)));
			return res.end(event(text(`echo: ${m.params.arguments && m.params.arguments.text}`)));
		}
		if (name === "roots") {
			const reply = () => json(res, 200, text(`roots: ${JSON.stringify(s.roots)}`));
			if (s.roots) return reply();
			const t = setTimeout(reply, 10000);
			s.waiters.push(() => {
				clearTimeout(t);
				reply();
			});
			return;
		}
		return json(res, 200, text(`fine: ${name}`));
	});
	server.listen(opts.port, "127.0.0.1");
}

// ---- client ----

async function client() {
	const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
	const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
	const { ListRootsRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
	const logFd = opts.log ? openSync(opts.log, "w") : null;
	const record = (dir, message) => {
		if (logFd !== null) writeSync(logFd, JSON.stringify({ dir, message }) + "\n");
	};
	let failures = 0;
	const step = async (name, fn) => {
		try {
			await fn();
			console.log(`ok - ${name}`);
		} catch (e) {
			failures++;
			console.log(`not ok - ${name}: ${String(e && e.message ? e.message : e).replace(/\n/g, " ")}`);
		}
	};
	const t = new StreamableHTTPClientTransport(new URL(opts.url));
	const send = t.send.bind(t);
	t.send = (message, o) => {
		record("c2s", message);
		return send(message, o);
	};
	let inner;
	Object.defineProperty(t, "onmessage", {
		configurable: true,
		get: () => (inner ? (msg, extra) => {
			record("s2c", msg);
			inner(msg, extra);
		} : undefined),
		set: (fn) => {
			inner = fn;
		},
	});
	const c = new Client({ name: "verify-peers-client", version: "1.0.0" }, { capabilities: { roots: {} } });
	c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///tmp/verify-peers", name: "verify peers" }] }));
	const o = { timeout: 20000 };
	await step("initialize", () => c.connect(t, o));
	await step("tools/list", () => c.listTools({}, o));
	for (const name of opts.calls)
		await step(`tools/call ${name}`, () => c.callTool({ name, arguments: { text: name } }, undefined, o));
	await step("DELETE", () => t.terminateSession());
	await c.close().catch(() => {});
	process.exit(failures ? 1 : 0);
}

const watchdog = setTimeout(() => {
	process.stderr.write("verify-peers: still running after 120 s\n");
	process.exit(1);
}, 120000);
if (mode === "front") front();
else if (mode === "server") scriptedServer();
else if (mode === "client") {
	watchdog.unref();
	client();
} else {
	process.stderr.write("usage: node verify-peers.mjs front|server|client ...\n");
	process.exit(2);
}
if (mode !== "client") watchdog.unref();
