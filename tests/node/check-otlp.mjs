#!/usr/bin/env node
// tests/node/check-otlp.mjs - validates what `mcptap export -T otlp` wrote, with
// the official OTLP definitions: the protobufjs classes generated from
// opentelemetry-proto that @opentelemetry/otlp-transformer ships
// (build/src/generated/root.js), run on the pinned protobufjs.
//
// Usage: node check-otlp.mjs --registry NAME,NAME... [--list] FILE
//
// Each line of FILE must be one TracesData in OTLP/JSON: it is turned into the
// protobuf message (OTLP/JSON writes ids in hex where the protobuf JSON mapping
// has base64), verified (verify()), encoded, decoded and turned back into JSON
// (64-bit integers as decimal strings, enums as integers): that must give the
// line's object again, so a misspelt or misplaced field, a wrong type or a
// value out of range shows. Then what OTLP and the MCP semantic conventions
// ask of each span: ids of 32 and 16 lowercase hex digits, not all zeros,
// span ids unique; a kind; start <= end; the name "{mcp.method.name} {target}";
// attributes named once each, every name in the registry (--registry), and
// every registry name one of @opentelemetry/semantic-conventions' attribute
// names; status ERROR exactly when error.type is set; a parent in the file is
// the CLIENT span of the same request (--spans both).
//
// Output: a summary, one fact per line, sorted (the test compares it exactly):
//   lines N / spans N / traces N
//   KIND METHOD N          spans per kind (CLIENT, SERVER) and method
//   error KIND TYPE N      spans per error.type
//   parent KIND WHAT N     WHAT: none, client (a CLIENT span in the file), remote
// With --list instead: one line per span, in the file's order, tab-separated:
// KIND NAME jsonrpc.request.id error.type status.message parent trace-id start
// duration span-id (parent: -, client, or the remote parent's id; "-" for
// what is absent; start and duration in ns).
// Problems go to stderr, and the exit status is 1.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");
const semconv = require("@opentelemetry/semantic-conventions/incubating");
const TracesData = root.opentelemetry.proto.trace.v1.TracesData;
const KINDS = { 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER" };

let problems = 0;
function bad(where, what) {
	problems++;
	if (problems <= 30) process.stderr.write(`check-otlp: ${where}: ${what}\n`);
}

function usage() {
	process.stderr.write("usage: node check-otlp.mjs --registry NAME,NAME... [--list] FILE\n");
	process.exit(2);
}

const args = process.argv.slice(2);
let registry = null, list = false, file = null;
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--registry" && i + 1 < args.length) registry = new Set(args[++i].split(","));
	else if (args[i] === "--list") list = true;
	else if (!file && !args[i].startsWith("--")) file = args[i];
	else usage();
}
if (!registry || !file) usage();

// Every name of the registry must be an attribute the semantic conventions name.
const known = new Set(Object.entries(semconv).filter(([k]) => k.startsWith("ATTR_")).map(([, v]) => v));
for (const name of registry)
	if (!known.has(name)) bad("--registry", `'${name}' is no attribute of @opentelemetry/semantic-conventions`);

// JSON with its object keys sorted, to compare two values whatever their key order.
function canon(v) {
	if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
	if (v && typeof v === "object")
		return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}`;
	return JSON.stringify(v);
}

const HEX32 = /^[0-9a-f]{32}$/, HEX16 = /^[0-9a-f]{16}$/, ZEROS = /^0+$/;
const ID_FIELDS = ["traceId", "spanId", "parentSpanId"];

// The line's object with its spans' (and links') hex ids as bytes, for fromObject.
function toProtoInput(doc) {
	const copy = JSON.parse(JSON.stringify(doc));
	for (const rs of copy.resourceSpans ?? [])
		for (const ss of rs.scopeSpans ?? [])
			for (const sp of ss.spans ?? []) {
				for (const f of ID_FIELDS)
					if (typeof sp[f] === "string") sp[f] = Buffer.from(sp[f], "hex");
				for (const l of sp.links ?? [])
					for (const f of ["traceId", "spanId"])
						if (typeof l[f] === "string") l[f] = Buffer.from(l[f], "hex");
			}
	return copy;
}

// The decoded message as OTLP/JSON: bytes (base64 from toObject) as hex.
function toOtlpJson(msg) {
	const o = TracesData.toObject(msg, { longs: String, enums: Number, bytes: String, defaults: false });
	for (const rs of o.resourceSpans ?? [])
		for (const ss of rs.scopeSpans ?? [])
			for (const sp of ss.spans ?? []) {
				for (const f of ID_FIELDS)
					if (typeof sp[f] === "string") sp[f] = Buffer.from(sp[f], "base64").toString("hex");
				for (const l of sp.links ?? [])
					for (const f of ["traceId", "spanId"])
						if (typeof l[f] === "string") l[f] = Buffer.from(l[f], "base64").toString("hex");
			}
	return o;
}

// The attributes as a map; each name once, in the registry, one value each.
function attributes(where, attrs) {
	const m = new Map();
	for (const a of attrs ?? []) {
		if (m.has(a.key)) bad(where, `attribute ${a.key} twice`);
		if (!registry.has(a.key)) bad(where, `attribute ${a.key} is not in the registry`);
		const vals = Object.entries(a.value ?? {});
		if (vals.length !== 1) bad(where, `attribute ${a.key} has ${vals.length} values`);
		else m.set(a.key, vals[0]);
	}
	return m;
}

function str(m, key) {
	const v = m.get(key);
	if (!v) return undefined;
	if (v[0] !== "stringValue") bad(key, `is a ${v[0]}, not a string`);
	return v[1];
}

const text = readFileSync(file, "utf8");
const lines = text.split("\n");
if (lines.pop() !== "") bad(file, "the last line has no newline");
const spans = [];
for (let n = 0; n < lines.length; n++) {
	const where = `line ${n + 1}`;
	let doc;
	try {
		doc = JSON.parse(lines[n]);
	} catch (e) {
		bad(where, `not JSON: ${e.message}`);
		continue;
	}
	const keys = Object.keys(doc);
	if (keys.length !== 1 || keys[0] !== "resourceSpans" || doc.resourceSpans.length !== 1)
		bad(where, "is not a TracesData of one resource");
	const msg = TracesData.fromObject(toProtoInput(doc));
	const err = TracesData.verify(msg);
	if (err) bad(where, `verify: ${err}`);
	const back = toOtlpJson(TracesData.decode(TracesData.encode(msg).finish()));
	if (canon(back) !== canon(doc)) bad(where, `does not survive the protobuf round trip:\n  ${canon(doc).slice(0, 400)}\n  ${canon(back).slice(0, 400)}`);
	for (const rs of doc.resourceSpans ?? []) {
		const res = attributes(`${where} resource`, rs.resource?.attributes);
		if (!str(res, "service.name")) bad(where, "the resource has no service.name");
		if ((rs.scopeSpans ?? []).length !== 1) bad(where, "not one scope");
		for (const ss of rs.scopeSpans ?? []) {
			if (ss.scope?.name !== "mcptap" || !/^\d+\.\d+\.\d+/.test(ss.scope?.version ?? ""))
				bad(where, `scope ${JSON.stringify(ss.scope)}`);
			if (!ss.spans?.length || ss.spans.length > 512) bad(where, `${ss.spans?.length} spans`);
			for (const sp of ss.spans ?? []) spans.push({ sp, where });
		}
	}
}

const byId = new Map();
for (const { sp, where } of spans) {
	if (!HEX32.test(sp.traceId ?? "") || ZEROS.test(sp.traceId)) bad(where, `traceId ${sp.traceId}`);
	if (!HEX16.test(sp.spanId ?? "") || ZEROS.test(sp.spanId)) bad(where, `spanId ${sp.spanId}`);
	if ("parentSpanId" in sp && (!HEX16.test(sp.parentSpanId) || ZEROS.test(sp.parentSpanId)))
		bad(where, `parentSpanId ${sp.parentSpanId}`);
	if (byId.has(sp.spanId)) bad(where, `span id ${sp.spanId} twice`);
	byId.set(sp.spanId, sp);
}

const counts = new Map();
const count = (k) => counts.set(k, (counts.get(k) ?? 0) + 1);
const out = [];
for (const { sp, where } of spans) {
	const w = `${where} span ${sp.spanId}`;
	const kind = KINDS[sp.kind];
	if (!kind) bad(w, `kind ${sp.kind}`);
	if (!/^[1-9]\d*$/.test(sp.startTimeUnixNano) || !/^[1-9]\d*$/.test(sp.endTimeUnixNano) ||
	    BigInt(sp.startTimeUnixNano) > BigInt(sp.endTimeUnixNano))
		bad(w, `times ${sp.startTimeUnixNano} ${sp.endTimeUnixNano}`);
	const a = attributes(w, sp.attributes);
	const method = str(a, "mcp.method.name");
	if (!method) bad(w, "no mcp.method.name");
	const target = str(a, "gen_ai.tool.name") ?? str(a, "gen_ai.prompt.name");
	if (sp.name !== (target === undefined ? method : `${method} ${target}`)) bad(w, `name '${sp.name}'`);
	if ((str(a, "gen_ai.operation.name") === "execute_tool") !== (method === "tools/call"))
		bad(w, "gen_ai.operation.name is execute_tool exactly on tools/call");
	const notification = method?.startsWith("notifications/");
	if (notification === a.has("jsonrpc.request.id")) bad(w, "jsonrpc.request.id on a notification, or none on a request");
	const etype = str(a, "error.type");
	const code = sp.status?.code ?? 0;
	if ((etype !== undefined) !== (code === 2)) bad(w, `error.type ${etype} with status ${code}`);
	if (a.has("rpc.response.status_code") && str(a, "rpc.response.status_code") !== etype)
		bad(w, "rpc.response.status_code is not error.type");
	for (const k of ["server.port", "client.port"])
		if (a.has(k) && (a.get(k)[0] !== "intValue" || !(Number(a.get(k)[1]) > 0 && Number(a.get(k)[1]) < 65536)))
			bad(w, `${k} ${a.get(k)}`);
	let parent = "none";
	if (sp.parentSpanId && byId.has(sp.parentSpanId)) {
		const p = byId.get(sp.parentSpanId);
		parent = "client";
		if (p.kind !== 3 || sp.kind !== 2 || p.traceId !== sp.traceId || p.name !== sp.name ||
		    p.startTimeUnixNano !== sp.startTimeUnixNano || p.endTimeUnixNano !== sp.endTimeUnixNano)
			bad(w, "its parent in the file is not the CLIENT span of its request");
	} else if (sp.parentSpanId) {
		parent = "remote";
	}
	count(`${kind} ${method}`);
	if (etype !== undefined) count(`error ${kind} ${etype}`);
	count(`parent ${kind} ${parent}`);
	out.push([kind, sp.name, str(a, "jsonrpc.request.id") ?? "-", etype ?? "-", sp.status?.message ?? "-",
		parent === "remote" ? sp.parentSpanId : parent === "client" ? "client" : "-", sp.traceId,
		sp.startTimeUnixNano, String(BigInt(sp.endTimeUnixNano) - BigInt(sp.startTimeUnixNano)), sp.spanId].join("\t"));
}

if (list) {
	for (const l of out) process.stdout.write(`${l}\n`);
} else {
	const summary = [`lines ${lines.length}`, `spans ${spans.length}`,
		`traces ${new Set(spans.map((s) => s.sp.traceId)).size}`,
		...[...counts].map(([k, v]) => `${k} ${v}`).sort()];
	process.stdout.write(summary.join("\n") + "\n");
}
process.exit(problems ? 1 : 0);
