#!/usr/bin/env node
// tests/node/check-store.mjs - check that what mcptap stored is what the client saw.
//
// Usage: node check-store.mjs [--http [--replays-seen]] LOG.jsonl SHOW.jsonl
//
// LOG is sdk-client.mjs's log: one {"dir":"c2s"|"s2c","message":<msg>} per line, in
// the order the client sent and received them. SHOW is `mcptap show -r DB -T json`:
// one object per stored record, in seq order (see the format in the test scripts).
//
// The protocol records of SHOW (channel "stdio") must correspond one to one with the
// LOG, in the same order within each direction (across directions the tap and the
// client may see a different interleaving): same direction, same kind (request,
// notification, response, error), same id with the same JSON type, same method for
// requests and notifications, and deep-equal message content. The store must also
// be consistent with itself (kind and id agree with the stored message, seq strictly
// increasing) and every response must come after its request, whose method it names
// when it names one.
//
// With --http (a session recorded by the HTTP tap), the records are those of the
// channels "body" and "sse", each naming its exchange; exchange records are counted,
// and events a server sent again after a Last-Event-ID resumption ("replayed") are
// set aside (with --replays-seen they are compared too: a client whose transport
// hands on what a resumed stream carries logged them as well), and so are SSE
// events that are JSON but not JSON-RPC ("notjsonrpc"), which the SDK's transport
// refuses before they become messages. Messages of one direction may travel on several streams at once (a
// POST's SSE stream and the GET stream), whose interleaving the client and the tap
// may see differently: so the two sides are compared as multisets, each message
// exactly once. The JSON-RPC error body of a refused exchange (a 4xx or 5xx
// status) is what the client's transport reports as a failure rather than
// hands over as a message: those s2c messages are counted apart (the request
// the server refused was sent, and is compared).
//
// Prints "checked N c2s and M s2c messages"; on any mismatch prints the first few
// differences and exits 1. Exit 2 on a usage or unreadable-input error.

import { readFileSync } from "node:fs";

const PROG = "check-store";
const MAX_SHOWN = 8;

function die(msg, code = 2) {
	process.stderr.write(`${PROG}: ${msg}\n`);
	process.exit(code);
}

function readJsonl(path, what) {
	let text;
	try {
		text = readFileSync(path, "utf8");
	} catch (e) {
		die(`cannot read ${what} ${path}: ${e.message}`);
	}
	const out = [];
	const lines = text.split("\n");
	for (let i = 0; i < lines.length; i++) {
		const line = lines[i];
		if (line.trim() === "") continue;
		try {
			out.push({ line: i + 1, v: JSON.parse(line) });
		} catch (e) {
			die(`${what} ${path}:${i + 1}: not JSON: ${e.message}`);
		}
	}
	return out;
}

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

// The kind of a single JSON-RPC message, named as mcptap names it.
function kindOf(m) {
	if (Array.isArray(m)) return "batch";
	if (!isObj(m)) return "invalid";
	if (m.jsonrpc !== "2.0") return "notjsonrpc";
	if (typeof m.method === "string") return has(m, "id") ? "request" : "notification";
	if (has(m, "result")) return "response";
	if (has(m, "error")) return "error";
	return "invalid";
}

// The JSON type of an id, so that 1 and "1" differ.
function jtype(v) {
	if (v === null) return "null";
	if (Array.isArray(v)) return "array";
	return typeof v;
}

function idText(v) {
	return v === undefined ? "(none)" : `${JSON.stringify(v)} (${jtype(v)})`;
}

function sameId(a, b) {
	return jtype(a) === jtype(b) && a === b;
}

// First difference between two JSON values, as a path and a description; null if equal.
// Object key order does not matter; array order and value types do.
function firstDiff(a, b, path = "$") {
	if (jtype(a) !== jtype(b)) return `${path}: ${jtype(a)} vs ${jtype(b)}`;
	if (Array.isArray(a)) {
		if (a.length !== b.length) return `${path}: array length ${a.length} vs ${b.length}`;
		for (let i = 0; i < a.length; i++) {
			const d = firstDiff(a[i], b[i], `${path}[${i}]`);
			if (d) return d;
		}
		return null;
	}
	if (isObj(a)) {
		const ka = Object.keys(a).sort();
		const kb = Object.keys(b).sort();
		for (const k of ka) if (!has(b, k)) return `${path}.${k}: only in the client log`;
		for (const k of kb) if (!has(a, k)) return `${path}.${k}: only in the store`;
		for (const k of ka) {
			const d = firstDiff(a[k], b[k], `${path}.${k}`);
			if (d) return d;
		}
		return null;
	}
	if (a !== b) return `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
	return null;
}

function brief(m) {
	const s = JSON.stringify(m);
	return s === undefined ? "undefined" : s.length > 160 ? s.slice(0, 157) + "..." : s;
}

function main() {
	let args = process.argv.slice(2);
	const http = args[0] === "--http";
	if (http) args = args.slice(1);
	const replaysSeen = http && args[0] === "--replays-seen";
	if (replaysSeen) args = args.slice(1);
	if (args.length !== 2) die("usage: node check-store.mjs [--http [--replays-seen]] LOG.jsonl SHOW.jsonl");
	const [logPath, showPath] = args;

	const diffs = [];
	const diff = (msg) => diffs.push(msg);

	// The client's view.
	const log = { c2s: [], s2c: [] };
	for (const { line, v } of readJsonl(logPath, "log")) {
		if (!isObj(v) || (v.dir !== "c2s" && v.dir !== "s2c") || !has(v, "message"))
			die(`log ${logPath}:${line}: not a {"dir":"c2s"|"s2c","message":...} record`);
		log[v.dir].push({ line, m: v.message });
	}

	// The store's view.
	const show = readJsonl(showPath, "show output");
	const sessions = new Set();
	const store = { c2s: [], s2c: [] };
	const stdio = [];
	let stderrLines = 0;
	let exchanges = 0;
	let replayed = 0;
	let refused = 0;
	let notRpc = 0;
	const refusedExchanges = new Set();
	let prevSeq = -Infinity;
	for (const { line, v } of show) {
		const where = `show line ${line}`;
		if (!isObj(v)) {
			diff(`${where}: not a JSON object`);
			continue;
		}
		sessions.add(v.session);
		if (typeof v.seq !== "number") diff(`${where}: no numeric seq`);
		else if (v.seq <= prevSeq) diff(`${where}: seq ${v.seq} not after ${prevSeq} (show output not in seq order)`);
		else prevSeq = v.seq;
		if (v.channel === "stderr") {
			stderrLines++;
			if (v.kind !== "stderr") diff(`${where}: stderr channel record has kind ${JSON.stringify(v.kind)}`);
			continue;
		}
		if (http && v.type === "exchange") {
			exchanges++;
			if (typeof v.status === "number" && v.status >= 400) refusedExchanges.add(v.seq);
			continue;
		}
		if (http ? v.channel !== "body" && v.channel !== "sse" : v.channel !== "stdio") {
			diff(`${where}: unknown channel ${JSON.stringify(v.channel)}`);
			continue;
		}
		if (http && typeof v.exchange !== "number") diff(`${where}: seq ${v.seq}: no exchange`);
		if (http && v.replayed) {
			replayed++;
			if (!replaysSeen) continue;
		}
		if (http && v.dir === "s2c" && refusedExchanges.has(v.exchange)) {
			refused++;
			continue;
		}
		if (v.dir !== "c2s" && v.dir !== "s2c") {
			diff(`${where}: seq ${v.seq}: bad dir ${JSON.stringify(v.dir)}`);
			continue;
		}
		const rec = { line, seq: v.seq, dir: v.dir, kind: v.kind, hasId: has(v, "id"), id: v.id, method: v.method, v };
		if (!has(v, "message")) {
			diff(`${where}: seq ${v.seq} ${v.dir} ${v.kind}: no parsed message (raw ${brief(v.raw)})`);
		} else {
			// The record's own fields must agree with the message it stores.
			const m = v.message;
			const k = kindOf(m);
			if (k !== v.kind) diff(`${where}: seq ${v.seq}: kind ${JSON.stringify(v.kind)} but the stored message is a ${k}`);
			if (isObj(m)) {
				if (has(m, "id") !== rec.hasId || (rec.hasId && !sameId(m.id, v.id)))
					diff(`${where}: seq ${v.seq}: id field ${idText(v.id)} but message id ${idText(m.id)}`);
				if (typeof m.method === "string" && v.method !== m.method)
					diff(`${where}: seq ${v.seq}: method field ${JSON.stringify(v.method)} but message method ${JSON.stringify(m.method)}`);
			}
		}
		if (http && v.kind === "notjsonrpc") {
			notRpc++;
			continue;
		}
		store[v.dir].push(rec);
		stdio.push(rec);
	}
	if (sessions.size > 1)
		diff(`show output holds ${sessions.size} sessions (${[...sessions].join(", ")}); expected one`);

	// One to one, in order, per direction (over HTTP: in a canonical order).
	const canon = (v) =>
		Array.isArray(v) ? `[${v.map(canon).join(",")}]`
		: isObj(v) ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}`
		: JSON.stringify(v);
	const byContent = (x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0);
	for (const dir of ["c2s", "s2c"]) {
		let a = log[dir];
		let b = store[dir];
		if (http) {
			a = a.map((r) => ({ ...r, key: canon(r.m) })).sort(byContent);
			b = b.map((r) => ({ ...r, key: canon(r.v.message ?? r.v.raw) })).sort(byContent);
		}
		if (a.length !== b.length)
			diff(`${dir}: the client logged ${a.length} messages, the store has ${b.length}`);
		const n = Math.min(a.length, b.length);
		for (let i = 0; i < n; i++) {
			const lm = a[i].m;
			const s = b[i];
			const at = `${dir} #${i + 1} (log line ${a[i].line}, store seq ${s.seq})`;
			const lk = kindOf(lm);
			if (lk !== s.kind) {
				diff(`${at}: kind: log ${lk} ${brief(lm)}, store ${s.kind} ${brief(s.v.message ?? s.v.raw)}`);
				continue;
			}
			const lHasId = isObj(lm) && has(lm, "id");
			if (lHasId !== s.hasId || (lHasId && !sameId(lm.id, s.id))) {
				diff(`${at}: id: log ${idText(lHasId ? lm.id : undefined)}, store ${idText(s.hasId ? s.id : undefined)}`);
				continue;
			}
			if ((lk === "request" || lk === "notification") && lm.method !== s.method) {
				diff(`${at}: method: log ${JSON.stringify(lm.method)}, store ${JSON.stringify(s.method)}`);
				continue;
			}
			const d = firstDiff(lm, s.v.message);
			if (d) diff(`${at}: content differs (log vs store) at ${d}`);
		}
		for (let i = n; i < a.length; i++)
			diff(`${dir}: logged by the client but not in the store: ${brief(a[i].m)}`);
		for (let i = n; i < b.length; i++)
			diff(`${dir}: in the store (seq ${b[i].seq}) but not logged by the client: ${brief(b[i].v.message ?? b[i].v.raw)}`);
	}

	// Every response comes after its request (sent the other way), and names its method.
	const requests = { c2s: [], s2c: [] };
	const other = { c2s: "s2c", s2c: "c2s" };
	let responses = 0;
	for (const r of stdio) {
		if (r.kind === "request") {
			requests[r.dir].push(r);
		} else if (r.kind === "response" || r.kind === "error") {
			if (!r.hasId || r.id === null) {
				if (r.kind === "response") diff(`store seq ${r.seq}: ${r.dir} response without an id`);
				continue;
			}
			responses++;
			const reqs = requests[other[r.dir]];
			let req = null;
			for (let i = reqs.length - 1; i >= 0; i--) {
				if (sameId(reqs[i].id, r.id)) {
					req = reqs[i];
					break;
				}
			}
			if (!req) {
				diff(`store seq ${r.seq}: ${r.dir} ${r.kind} id ${idText(r.id)} has no earlier ${other[r.dir]} request`);
				continue;
			}
			if (r.method !== undefined && r.method !== req.method)
				diff(`store seq ${r.seq}: ${r.kind} id ${idText(r.id)} names method ${JSON.stringify(r.method)}, its request (seq ${req.seq}) is ${JSON.stringify(req.method)}`);
		}
	}

	const total = log.c2s.length + log.s2c.length;
	if (total === 0) diff("the client log is empty");

	console.log(
		`${PROG}: checked ${log.c2s.length} c2s and ${log.s2c.length} s2c messages ` +
			`(store: ${store.c2s.length} c2s, ${store.s2c.length} s2c, ` +
			(http ? `${exchanges} exchanges, ${replayed} replayed events${replaysSeen ? " (compared)" : ""}, ${notRpc} events not JSON-RPC, ${refused} error bodies of refused exchanges)`
			: `${responses} responses matched to requests, ${stderrLines} stderr lines)`),
	);
	if (diffs.length) {
		console.log(`${PROG}: ${diffs.length} difference(s)${diffs.length > MAX_SHOWN ? `, first ${MAX_SHOWN}` : ""}:`);
		for (const d of diffs.slice(0, MAX_SHOWN)) console.log(`  ${d}`);
		process.exit(1);
	}
	console.log(`${PROG}: ok`);
}

main();
