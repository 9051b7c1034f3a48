#!/usr/bin/env node
// tests/bench/burst.mjs - a burst of big request bodies, for the memory a tap
// holds and gives back (bench (k), t0617).
//
//   node burst.mjs upstream            an HTTP server on a free loopback port that
//                                      reads each body whole and answers 202 (a GET:
//                                      an SSE stream left open); says "burst
//                                      upstream PORT" on stderr
//   node burst.mjs send PORT N MB      N POSTs at once to 127.0.0.1:PORT/mcp, each a
//                                      JSON-RPC notification of MB MiB, one
//                                      connection each; prints "sent N: S" (S: the
//                                      statuses, sorted and counted) when all ended
import http from "node:http";

const [mode, ...args] = process.argv.slice(2);
if (mode === "upstream") {
	const srv = http.createServer((req, res) => {
		req.on("data", () => {});
		req.on("end", () => {
			if (req.method !== "GET") {
				res.writeHead(202);
				res.end();
				return;
			}
			// A GET is a stream that stays open (a comment now and then), as a
			// Streamable HTTP client's standalone stream does all session.
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.write(": open\n\n");
			const t = setInterval(() => res.write(": still\n\n"), 1000);
			res.on("close", () => clearInterval(t));
		});
	});
	srv.listen(0, "127.0.0.1", () => console.error(`burst upstream ${srv.address().port}`));
} else if (mode === "send") {
	const [port, n, mb] = args.map(Number);
	const head = '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"';
	const body = Buffer.alloc(mb << 20, 0x61);
	body.write(head);
	body.write('"}}', body.length - 3);
	const statuses = [];
	let left = n;
	const done = (s) => {
		statuses.push(s);
		if (--left) return;
		const counts = {};
		for (const x of statuses) counts[x] = (counts[x] || 0) + 1;
		console.log(`sent ${n}: ${Object.keys(counts).sort().map((k) => `${counts[k]} x ${k}`).join(", ")}`);
	};
	for (let i = 0; i < n; i++) {
		const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/mcp", agent: false,
			headers: { "content-type": "application/json", "content-length": body.length } },
			(res) => { res.resume(); res.on("end", () => done(res.statusCode)); });
		req.on("error", (e) => done(e.code || "error"));
		req.end(body);
	}
} else {
	process.stderr.write("usage: node burst.mjs upstream | send PORT N MB\n");
	process.exit(2);
}
