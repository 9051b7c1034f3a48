#!/usr/bin/env node
// tests/node/raw-mcp.mjs - plain HTTP exchanges with an MCP endpoint, byte for
// byte, for the end-to-end tests of the HTTP mock (no SDK in between).
//
// Usage: node raw-mcp.mjs URL SCRIPT
//
// SCRIPT is a JSON array of steps, run in order; each is
//   {"method": "POST", "body": {...} | "text", "headers": {...},
//    "session": true,      // send the Mcp-Session-Id the first answer named
//    "sse_events": N,      // read N SSE events, then close the connection
//    "path": "/other"}     // another path on the same origin
// and prints, per step, one JSON line: {status, headers: {content-type,
// mcp-session-id (as "<minted>" when it is the session's), allow, cache-control},
// body} where body is the text, or the list of SSE events (each {event, id,
// data}) for a stream. Exit status 0, or 1 when a step could not be run.
import http from "node:http";

const [url, scriptText] = process.argv.slice(2);
if (!url || !scriptText) {
	process.stderr.write("usage: node raw-mcp.mjs URL SCRIPT\n");
	process.exit(2);
}
const base = new URL(url);
const script = JSON.parse(scriptText);
let session = null;

function parseEvents(text) {
	const out = [];
	for (const block of text.split(/\r\n\r\n|\n\n|\r\r/)) {
		if (!block.trim()) continue;
		const ev = { event: null, id: null, data: [] };
		for (const line of block.split(/\r\n|\n|\r/)) {
			const m = /^([^:]*):? ?(.*)$/.exec(line);
			if (!m || m[1] === "") continue;
			if (m[1] === "data") ev.data.push(m[2]);
			else if (m[1] === "event") ev.event = m[2];
			else if (m[1] === "id") ev.id = m[2];
		}
		out.push({ event: ev.event, id: ev.id, data: ev.data.join("\n") });
	}
	return out;
}

function step(s) {
	return new Promise((resolve, reject) => {
		const headers = { ...(s.headers || {}) };
		if (s.session && session) headers["mcp-session-id"] = session;
		let body = s.body === undefined ? null : typeof s.body === "string" ? s.body : JSON.stringify(s.body);
		if (body !== null && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type"))
			headers["content-type"] = "application/json";
		const req = http.request({
			host: base.hostname, port: base.port, path: s.path || base.pathname + base.search,
			method: s.method || "POST", headers, agent: false,
		}, (res) => {
			let text = "";
			const sid = res.headers["mcp-session-id"];
			if (sid && !session) session = sid;
			const h = {};
			for (const k of ["content-type", "mcp-session-id", "allow", "cache-control"])
				if (res.headers[k] !== undefined) h[k] = k === "mcp-session-id" && res.headers[k] === session ? "<minted>" : res.headers[k];
			const sse = /text\/event-stream/.test(res.headers["content-type"] || "");
			res.setEncoding("utf8");
			res.on("data", (d) => {
				text += d;
				if (sse && s.sse_events && parseEvents(text).length >= s.sse_events && /(\r\n\r\n|\n\n|\r\r)$/.test(text)) {
					req.destroy();
					resolve({ status: res.statusCode, headers: h, body: parseEvents(text) });
				}
			});
			res.on("end", () => resolve({ status: res.statusCode, headers: h, body: sse ? parseEvents(text) : text }));
			res.on("error", reject);
		});
		req.on("error", reject);
		if (body !== null) req.write(body);
		req.end();
	});
}

try {
	for (const s of script) {
		const r = await step(s);
		if (typeof r.body === "string" && session) r.body = r.body.split(session).join("<minted>");
		else if (Array.isArray(r.body) && session)
			for (const e of r.body) e.data = e.data.split(session).join("<minted>");
		process.stdout.write(JSON.stringify(r) + "\n");
	}
} catch (e) {
	process.stderr.write(`raw-mcp: ${e.message}\n`);
	process.exit(1);
}
