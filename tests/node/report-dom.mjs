#!/usr/bin/env node
// tests/node/report-dom.mjs - what a `mcptap report` page holds, read from the
// DOM headless Chromium made of it (`chromium --headless --dump-dom`), for the
// tests (t0370). Prints one JSON object:
//   sessions: the session sections' ids ("a-1" for a side of report --diff);
//   arrows: per session, the seqs of its
//   arrows in order, with their classes; stderr, gaps: per session, counts;
//   findings: per session, [rule, severity, seq (0: the session)];
//   marks: per session, the finding numbers the diagram's dots link to;
//   panels: "session/seq" -> the text of the message's panel (entities decoded);
//   links: every href, src and url() value in the document.
// Usage: node report-dom.mjs DOM-FILE
import fs from "node:fs";

const dom = fs.readFileSync(process.argv[2], "utf8");
const decode = (s) =>
	s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'")
		.replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16)))
		.replace(/&amp;/g, "&");
const out = { sessions: [], arrows: {}, stderr: {}, gaps: {}, findings: {}, marks: {}, panels: {}, links: [] };
// (a session's key: its id, after "a-" or "b-" for a side of report --diff)
const parts = dom.split(/<section class="session" id="((?:[ab]-)?)s(\d+)">/);
for (let i = 1; i < parts.length; i += 3) {
	const s = parts[i] + parts[i + 1], body = parts[i + 2];
	out.sessions.push(s);
	out.arrows[s] = [...body.matchAll(/<a href="#(?:[ab]-)?s\d+-m(\d+)" class="arrow ([^"]*)" data-seq="(\d+)">/g)]
		.map((m) => [+m[1], m[2]]);
	out.stderr[s] = [...body.matchAll(/class="stderr"/g)].length;
	out.gaps[s] = [...body.matchAll(/<g class="gap">/g)].length;
	out.findings[s] = [...body.matchAll(/<li id="(?:[ab]-)?s\d+-f\d+" class="finding sev-(\w+)"><a href="#rule-[^"]*" class="rule">([^<]*)<\/a>.*?(?:<a href="#(?:[ab]-)?s\d+-m(\d+)" class="at">|<span class="at">)/g)]
		.map((m) => [m[2], m[1], m[3] ? +m[3] : 0]);
	out.marks[s] = [...body.matchAll(/<a href="#(?:[ab]-)?s\d+-f(\d+)" class="mark/g)].map((m) => +m[1]);
	for (const m of body.matchAll(/<div class="msg" id="((?:[ab]-)?)s(\d+)-m(\d+)">.*?<pre>([\s\S]*?)<\/pre><\/div>/g))
		out.panels[m[1] + m[2] + "/" + m[3]] = decode(m[4]);
}
for (const m of dom.matchAll(/\b(?:href|src|xlink:href)="([^"]*)"/g)) out.links.push(m[1]);
for (const m of dom.matchAll(/url\(([^)]*)\)/g)) out.links.push("url(" + m[1] + ")");
console.log(JSON.stringify(out));
