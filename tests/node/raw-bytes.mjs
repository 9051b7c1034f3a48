#!/usr/bin/env node
// tests/node/raw-bytes.mjs - a raw HTTP/1.x upstream and a raw client, on plain
// sockets (no http module: nothing parsed away, nothing added), for tests that
// compare the bytes either side of the HTTP tap. No npm dependency.
//
//   node raw-bytes.mjs server DIR
//       Listens on 127.0.0.1 (any free port) and says "up PORT" on stderr. Each
//       accepted connection K (1, 2, ... in order of accept) has every byte it
//       brings appended to DIR/upK. Requests on it are framed as HTTP/1.x
//       requests are (Content-Length, chunked with its extensions and trailer,
//       or no body), one after another (pipelined ones too), and each is
//       appended to DIR/req-CASE, CASE being its X-Case field's value. Its
//       answer is in files the test wrote beforehand: DIR/CASE.0, when it
//       exists, is written as soon as the request's head is in (an interim
//       100 Continue); DIR/CASE.1, DIR/CASE.2, ... once the whole request is,
//       100 ms apart; DIR/CASE.close, when it exists, closes the connection
//       after them. A connection's answers go in the order of its requests.
//       "K CASE" is appended to DIR/log for each request (CASE "?" without the
//       field). Runs until killed.
//
//   node raw-bytes.mjs client PORT OUT [-b N] ACTION...
//       Connects to 127.0.0.1:PORT and runs each ACTION in turn: w:FILE writes
//       FILE's bytes, p:MS pauses, n:N waits until N bytes have come in all.
//       Then reads on until N bytes (-b N) have come, and 150 ms more (any
//       byte beyond them is kept: a comparison shows it), or until the peer
//       closes. Whatever came is written to OUT; prints "closed" (the peer
//       closed), "open" or "refused" (no connection). Gives up waiting after
//       3 s without a byte.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

const IDLE_MS = 3000;
const PAUSE_MS = 100;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// frame(buf, at): where the request starting at buf[at] ends, its head's end
// and its X-Case value ({head, end, kase}); end is -1 while the body is not
// all in, head -1 while the head is not. Throws on what it cannot frame.
function frame(buf, at) {
	const h = buf.indexOf("\r\n\r\n", at);
	if (h < 0) return { head: -1, end: -1, kase: null };
	const head = h + 4;
	let kase = null;
	let len = 0;
	let chunked = false;
	for (const line of buf.subarray(at, h).toString("latin1").split("\r\n").slice(1)) {
		const c = line.indexOf(":");
		if (c < 0) continue;
		const name = line.slice(0, c).trim().toLowerCase();
		const value = line.slice(c + 1).trim();
		if (name === "x-case") kase = value;
		else if (name === "content-length") len = Number(value);
		else if (name === "transfer-encoding") chunked = value.toLowerCase() === "chunked";
	}
	if (!chunked) return { head, end: buf.length - head >= len ? head + len : -1, kase };
	let p = head;
	for (;;) {
		const eol = buf.indexOf("\r\n", p);
		if (eol < 0) return { head, end: -1, kase };
		const size = parseInt(buf.subarray(p, eol).toString("latin1").split(";")[0], 16);
		if (Number.isNaN(size)) throw new Error("a bad chunk size line");
		if (size === 0) { // the trailer section: lines up to an empty one
			if (buf.length >= eol + 4 && buf.subarray(eol + 2, eol + 4).toString() === "\r\n")
				return { head, end: eol + 4, kase };
			const t = buf.indexOf("\r\n\r\n", eol + 2);
			return { head, end: t < 0 ? -1 : t + 4, kase };
		}
		p = eol + 2 + size + 2;
		if (p > buf.length) return { head, end: -1, kase };
	}
}

function server(dir) {
	let conns = 0;
	const srv = net.createServer((sock) => {
		const k = ++conns;
		const up = path.join(dir, `up${k}`);
		fs.writeFileSync(up, "");
		let buf = Buffer.alloc(0);
		let early = false; // the current request's head seen (and CASE.0 sent)
		let chain = Promise.resolve();
		const send = (kase, from) => {
			chain = chain.then(async () => {
				for (let i = from; ; i++) {
					const f = path.join(dir, `${kase}.${i}`);
					if (!fs.existsSync(f)) break;
					if (i > 1) await sleep(PAUSE_MS);
					if (!sock.destroyed) sock.write(fs.readFileSync(f));
					if (i === 0) break;
				}
				if (from && fs.existsSync(path.join(dir, `${kase}.close`))) sock.end();
			});
		};
		sock.on("error", () => {});
		sock.on("data", (d) => {
			fs.appendFileSync(up, d);
			buf = Buffer.concat([buf, d]);
			for (;;) {
				let r;
				try {
					r = frame(buf, 0);
				} catch (e) {
					fs.appendFileSync(path.join(dir, "log"), `${k} ? ${e.message}\n`);
					sock.destroy();
					return;
				}
				if (r.head < 0) return;
				if (!early) {
					early = true;
					if (r.kase) send(r.kase, 0);
				}
				if (r.end < 0) return;
				fs.appendFileSync(path.join(dir, "log"), `${k} ${r.kase ?? "?"}\n`);
				if (r.kase) {
					fs.appendFileSync(path.join(dir, `req-${r.kase}`), buf.subarray(0, r.end));
					send(r.kase, 1);
				}
				buf = buf.subarray(r.end);
				early = false;
			}
		});
	});
	srv.listen(0, "127.0.0.1", () => process.stderr.write(`up ${srv.address().port}\n`));
}

function client(port, out, args) {
	let want = -1;
	if (args[0] === "-b") {
		want = Number(args[1]);
		args = args.slice(2);
	}
	const got = [];
	let have = 0;
	let closed = false;
	let wake = null; // resolves a wait when bytes come or the peer closes
	let last = Date.now();
	const sock = net.connect(Number(port), "127.0.0.1");
	sock.on("error", () => {});
	sock.on("data", (d) => {
		got.push(d);
		have += d.length;
		last = Date.now();
		if (wake) wake();
	});
	let connected = false;
	sock.on("close", () => {
		closed = true;
		if (wake) wake();
		if (!connected) { // (refused: nothing came)
			fs.writeFileSync(out, "");
			console.log("refused");
		}
	});
	// until(cond): waits until cond() holds, the peer closes or IDLE_MS pass without a byte.
	const until = async (cond) => {
		while (!cond() && !closed && Date.now() - last < IDLE_MS)
			await new Promise((r) => {
				wake = r;
				setTimeout(r, 50);
			});
		wake = null;
	};
	sock.on("connect", async () => {
		connected = true;
		for (const a of args) {
			const c = a.indexOf(":");
			const what = a.slice(0, c);
			const arg = a.slice(c + 1);
			if (what === "w") {
				if (!closed) sock.write(fs.readFileSync(arg));
				last = Date.now();
			} else if (what === "p") {
				await sleep(Number(arg));
				last = Date.now();
			} else if (what === "n") {
				await until(() => have >= Number(arg));
			} else {
				throw new Error(`bad action ${a}`);
			}
		}
		await until(() => want >= 0 && have >= want);
		if (!closed && want >= 0 && have >= want) await sleep(150);
		const peerClosed = closed;
		sock.destroy();
		fs.writeFileSync(out, Buffer.concat(got));
		console.log(peerClosed ? "closed" : "open");
	});
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "server" && rest.length === 1) server(rest[0]);
else if (mode === "client" && rest.length >= 2) client(rest[0], rest[1], rest.slice(2));
else {
	process.stderr.write("usage: node raw-bytes.mjs server DIR | client PORT OUT [-b N] ACTION...\n");
	process.exit(2);
}
