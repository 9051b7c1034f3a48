#!/usr/bin/env node
// tests/node/otlp-spans.mjs - the spans of OTLP/JSON Lines files (what
// export -T otlp writes, what otlp-receiver.mjs keeps), one line each, for
// the tests to compare: "TRACEID SPANID RESOURCE SPAN", the resource's and
// the span's JSON with object keys sorted, lines sorted.
//
// Usage: node otlp-spans.mjs [--traces-of FILE] FILE...
//   --traces-of FILE: only the spans whose trace is one of FILE's spans' traces.
// With --ids, only "SPANID" per line, in the files' order (not sorted).

import { readFileSync } from "node:fs";

function canon(v) {
	if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
	if (v && typeof v === "object")
		return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}`;
	return JSON.stringify(v);
}

function spans(file) {
	const out = [];
	for (const line of readFileSync(file, "utf8").split("\n")) {
		if (!line) continue;
		for (const rs of JSON.parse(line).resourceSpans ?? [])
			for (const ss of rs.scopeSpans ?? [])
				for (const sp of ss.spans ?? []) out.push({ res: rs.resource ?? {}, scope: ss.scope ?? {}, sp });
	}
	return out;
}

const args = process.argv.slice(2);
let traces = null, ids = false;
const files = [];
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--traces-of" && i + 1 < args.length) traces = new Set(spans(args[++i]).map((s) => s.sp.traceId));
	else if (args[i] === "--ids") ids = true;
	else files.push(args[i]);
}
const lines = [];
for (const f of files)
	for (const s of spans(f))
		if (!traces || traces.has(s.sp.traceId))
			lines.push(ids ? s.sp.spanId : `${s.sp.traceId} ${s.sp.spanId} ${canon({ resource: s.res, scope: s.scope })} ${canon(s.sp)}`);
if (!ids) lines.sort();
process.stdout.write(lines.map((l) => l + "\n").join(""));
