#!/usr/bin/env node
// tests/node/http-log-summary.mjs - what a client log of http-client.mjs (or
// sdk-client.mjs) holds, counted, so that a test can check it against what the peers
// are known to do, or against what a tap stored.
//
// Usage: node http-log-summary.mjs LOG...
//
// Prints one line per LOG: the LOG's name, then key=value fields separated by spaces:
//   c2s, s2c          messages sent and received
//   requests          requests the client sent
//   answered_once     of those, answered by exactly one response
//   cancelled         requests the client cancelled (notifications/cancelled) and that
//                     got no response
//   unanswered        requests with no response, not cancelled
//   answered_twice    requests with more than one response
//   orphans           responses received for no request sent (either direction)
//   server_requests   requests the server sent; server_answered_once: of those,
//                     answered exactly once by the client
//   progress          notifications/progress received per progress token, in the
//                     order the tokens were sent, comma-separated (- when none)
//   methods           s2c request and notification methods with their counts,
//                     method:count, comma-separated, sorted
// Exit status: 0; 2 when a LOG cannot be read or parsed.

import { readFileSync } from "node:fs";

function die(msg) {
	process.stderr.write(`http-log-summary: ${msg}\n`);
	process.exit(2);
}

function summary(file) {
	let recs;
	try {
		recs = readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
	} catch (e) {
		die(`cannot read ${file}: ${e.message}`);
	}
	const key = (id) => JSON.stringify(id);
	const isReq = (m) => typeof m.method === "string" && m.id !== undefined;
	const isResp = (m) => m.method === undefined && m.id !== undefined;
	// Responses counted per request id, in the direction opposite to the request.
	const count = (reqDir) => {
		const reqs = new Map();
		let orphans = 0;
		for (const r of recs) {
			if (r.dir === reqDir && isReq(r.message)) reqs.set(key(r.message.id), 0);
		}
		for (const r of recs) {
			if (r.dir !== reqDir && isResp(r.message)) {
				const k = key(r.message.id);
				if (reqs.has(k)) reqs.set(k, reqs.get(k) + 1);
				else orphans++;
			}
		}
		return { reqs, orphans };
	};
	const c = count("c2s");
	const s = count("s2c");
	const cancelled = new Set(recs.filter((r) => r.dir === "c2s" && r.message.method === "notifications/cancelled")
		.map((r) => key(r.message.params.requestId)));
	const v = [...c.reqs.entries()];
	const tokens = [];
	for (const r of recs) {
		const t = r.dir === "c2s" && isReq(r.message) && r.message.params && r.message.params._meta && r.message.params._meta.progressToken;
		if (t !== undefined && t !== false && !tokens.includes(key(t))) tokens.push(key(t));
	}
	const progress = tokens.map((t) => recs.filter((r) => r.dir === "s2c" && r.message.method === "notifications/progress" &&
		key(r.message.params.progressToken) === t).length);
	const methods = {};
	for (const r of recs) {
		if (r.dir === "s2c" && r.message.method) methods[r.message.method] = (methods[r.message.method] || 0) + 1;
	}
	const out = {
		c2s: recs.filter((r) => r.dir === "c2s").length,
		s2c: recs.filter((r) => r.dir === "s2c").length,
		requests: v.length,
		answered_once: v.filter(([, n]) => n === 1).length,
		cancelled: v.filter(([k, n]) => n === 0 && cancelled.has(k)).length,
		unanswered: v.filter(([k, n]) => n === 0 && !cancelled.has(k)).length,
		answered_twice: v.filter(([, n]) => n > 1).length,
		orphans: c.orphans + s.orphans,
		server_requests: s.reqs.size,
		server_answered_once: [...s.reqs.values()].filter((n) => n === 1).length,
		progress: progress.length ? progress.join(",") : "-",
		methods: Object.keys(methods).sort().map((m) => `${m}:${methods[m]}`).join(",") || "-",
	};
	return `${file} ${Object.entries(out).map(([k, x]) => `${k}=${x}`).join(" ")}`;
}

if (process.argv.length < 3) die("usage: node http-log-summary.mjs LOG...");
for (const f of process.argv.slice(2)) process.stdout.write(summary(f) + "\n");
