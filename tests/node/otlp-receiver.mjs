#!/usr/bin/env node
// tests/node/otlp-receiver.mjs - an OTLP/HTTP trace receiver for the tests of
// the live push (record, import and sniff --otlp), decoding what it is sent
// with the official OTLP definitions (the protobufjs classes generated from
// opentelemetry-proto that @opentelemetry/otlp-transformer ships), scripted to
// fail as a Collector may.
//
// Usage: node otlp-receiver.mjs --out FILE [--port N] [--status LIST]
//            [--exit-after N] [--headers NAME,NAME... --header-log FILE]
//
// POST /v1/traces, the body gzip-coded when Content-Encoding says gzip, as
// OTLP/JSON (Content-Type application/json; ids in hex) or protobuf
// (application/x-protobuf): it is decoded into an ExportTraceServiceRequest
// (fromObject or decode) and verified; a body that is neither is answered 400.
// What is taken is appended to FILE as one line, the request turned back into
// OTLP/JSON by the same classes (the TracesData of the OTLP JSON Lines file
// format, as export -T otlp writes), and answered 200 {}.
// --status LIST: the statuses of the first POSTs, comma-separated (503,429):
// such a POST is answered so (429 and 503 with Retry-After: 1) and not kept.
// --exit-after N: exit right after answering the Nth POST taken (a Collector
// gone mid-run). --headers: each POST's values of these headers go to the
// header log, a line "N NAME: VALUE" each. On stderr: a line once it listens,
// "otlp-receiver listening on http://127.0.0.1:PORT", then one per POST,
// "POST N STATUS SPANS".

import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { gunzipSync } from "node:zlib";

const require = createRequire(import.meta.url);
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

function usage(msg) {
	process.stderr.write(`otlp-receiver: ${msg}\n`);
	process.exit(2);
}

const o = { out: null, port: 0, status: [], exitAfter: 0, headers: [], headerLog: null };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
	const v = () => (i + 1 < args.length ? args[++i] : usage(`${args[i]} needs a value`));
	if (args[i] === "--out") o.out = v();
	else if (args[i] === "--port") o.port = Number(v());
	else if (args[i] === "--status") o.status = v().split(",").map(Number);
	else if (args[i] === "--exit-after") o.exitAfter = Number(v());
	else if (args[i] === "--headers") o.headers = v().toLowerCase().split(",");
	else if (args[i] === "--header-log") o.headerLog = v();
	else usage(`unknown argument '${args[i]}'`);
}
if (!o.out) usage("--out FILE is needed");
if (o.headers.length && !o.headerLog) usage("--headers needs --header-log FILE");

const ID_FIELDS = ["traceId", "spanId", "parentSpanId"];

// Each span's (and link's) ids, turned by f.
function eachId(doc, f) {
	for (const rs of doc.resourceSpans ?? [])
		for (const ss of rs.scopeSpans ?? [])
			for (const sp of ss.spans ?? []) {
				for (const k of ID_FIELDS) if (typeof sp[k] === "string") sp[k] = f(sp[k]);
				for (const l of sp.links ?? [])
					for (const k of ["traceId", "spanId"]) if (typeof l[k] === "string") l[k] = f(l[k]);
			}
	return doc;
}

// The request from the body: OTLP/JSON (hex ids where protobuf's JSON mapping has base64) or protobuf.
function decode(body, type) {
	let msg;
	if (type.startsWith("application/json")) {
		const doc = JSON.parse(body.toString("utf8"));
		if (!doc || !Array.isArray(doc.resourceSpans)) throw new Error("no resourceSpans");
		msg = Request.fromObject(eachId(doc, (h) => {
			if (!/^[0-9a-f]*$/.test(h)) throw new Error(`id '${h}' is not hex`);
			return Buffer.from(h, "hex");
		}));
	} else if (type.startsWith("application/x-protobuf")) {
		msg = Request.decode(body);
	} else {
		throw new Error(`Content-Type '${type}'`);
	}
	const err = Request.verify(msg);
	if (err) throw new Error(`verify: ${err}`);
	return msg;
}

// The request as OTLP/JSON (64-bit integers as decimal strings, enums as integers, ids in hex).
function toOtlpJson(msg) {
	const doc = Request.toObject(msg, { longs: String, enums: Number, bytes: String, defaults: false });
	return eachId(doc, (b) => Buffer.from(b, "base64").toString("hex"));
}

let posts = 0, taken = 0;
const server = createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		if (req.method !== "POST" || req.url !== "/v1/traces") {
			res.writeHead(404);
			res.end();
			return;
		}
		posts++;
		const answer = (status, body, spans) => {
			process.stderr.write(`POST ${posts} ${status} ${spans}\n`);
			const h = { "content-type": "application/json" };
			if (status === 429 || status === 503) h["retry-after"] = "1";
			res.writeHead(status, h);
			res.end(body, () => {
				if (status === 200 && o.exitAfter && taken >= o.exitAfter) {
					server.closeAllConnections?.();
					process.exit(0);
				}
			});
		};
		let doc;
		try {
			let body = Buffer.concat(chunks);
			if ((req.headers["content-encoding"] || "").toLowerCase() === "gzip") body = gunzipSync(body);
			doc = toOtlpJson(decode(body, (req.headers["content-type"] || "").toLowerCase()));
		} catch (e) {
			answer(400, JSON.stringify({ code: 3, message: String(e.message || e) }), 0);
			return;
		}
		const spans = (doc.resourceSpans ?? []).reduce((n, r) =>
			n + (r.scopeSpans ?? []).reduce((m, s) => m + (s.spans ?? []).length, 0), 0);
		for (const name of o.headers)
			if (req.headers[name] !== undefined) appendFileSync(o.headerLog, `${posts} ${name}: ${req.headers[name]}\n`);
		const scripted = o.status[posts - 1];
		if (scripted && scripted !== 200) {
			answer(scripted, JSON.stringify({ code: 14, message: "unavailable" }), spans);
			return;
		}
		taken++;
		appendFileSync(o.out, JSON.stringify(doc) + "\n");
		answer(200, "{}", spans);
	});
});
server.listen(o.port, "127.0.0.1", () => {
	process.stderr.write(`otlp-receiver listening on http://127.0.0.1:${server.address().port}\n`);
});
