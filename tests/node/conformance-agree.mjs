#!/usr/bin/env node
// tests/node/conformance-agree.mjs - holds the conformance suite's verdicts
// against the analyzer's findings on the same traffic (t0630).
//
// Usage: node conformance-agree.mjs TABLE MESSAGES FINDINGS REV=DIR...
//   TABLE     the agreements and known differences (format below)
//   MESSAGES  "SESSION SEQ WALL_US" lines: every message of the capture
//   FINDINGS  `mcptap analyze -T json` of the capture
//   REV=DIR   the suite's results folder of a run of requirement set REV
//
// Each scenario of a run is a window of time: from its results folder's
// timestamp (when the suite began it) to the next one's (the suite runs them
// one after the other; two begun in the same millisecond go in the order of
// "=== Running scenario" in DIR.out, the suite's output, when it is there),
// or to the end of the millisecond of its last check's timestamp when that is
// later: the suite's clock counts whole milliseconds, and a scenario of 3 ms
// may have its last answer stored a fraction of one after the next began. A
// finding belongs to every scenario whose window holds its message's time
// (one, or two at such an edge); a finding on a whole session (no seq) to
// those of the session's first message. An error is explained when the table
// explains it in one of them.
//
// TABLE lines (# comments and blank lines aside), fields split by spaces,
// globs (*) in SCENARIO and CHECK (a scenario that stopped before writing its
// checks has one failing check, scenario-run); the first line that fits wins:
//   agree REV SCENARIO CHECK RULE[,RULE] [~REGEX]
//       the suite fails CHECK (its message matching REGEX, when given) and the
//       analyzer reports an error of one of RULEs in the same scenario; those
//       errors are explained by it
//   suite REV SCENARIO CHECK [~REGEX] -- WHY
//       the suite fails CHECK (its message matching REGEX, when given);
//       nothing on the wire breaks a rule (WHY)
//   analyzer REV SCENARIO RULE -- WHY
//       the analyzer reports an error of RULE that no failing check matches
//       (WHY: the spec's words)
//   analyzer? REV SCENARIO RULE -- WHY
//       the same for an error a race in the suite's client makes only in some
//       runs: a line of this kind that matches nothing is not a difference gone
//
// Prints one line per failing check and per analyzer error with what
// explains it, then every problem: a failure or an error no line explains
// (a new difference), an agree line whose rule the analyzer did not report,
// a line that matched nothing (a difference gone). Exits 1 on a problem.
import fs from "node:fs";
import path from "node:path";

const [tablePath, messagesPath, findingsPath, ...runs] = process.argv.slice(2);
if (!runs.length) {
	console.error("usage: conformance-agree.mjs TABLE MESSAGES FINDINGS REV=DIR...");
	process.exit(2);
}

const glob = (g) => new RegExp("^" + g.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$");

const table = [];
fs.readFileSync(tablePath, "utf8").split("\n").forEach((line, i) => {
	line = line.trim();
	if (!line || line.startsWith("#")) return;
	const [head, why] = line.split(" -- ");
	const f = head.split(/\s+/);
	const e = { line: i + 1, text: line, kind: f[0], rev: f[1], scen: glob(f[2]), used: 0 };
	if (e.kind === "agree") {
		e.check = glob(f[3]);
		e.rules = f[4].split(",");
		const re = f.slice(5).join(" ");
		e.re = re.startsWith("~") ? new RegExp(re.slice(1)) : null;
		e.seen = new Set();
	} else if (e.kind === "suite") {
		e.check = glob(f[3]);
		const re = f.slice(4).join(" ");
		e.re = re.startsWith("~") ? new RegExp(re.slice(1)) : null;
	} else if (e.kind === "analyzer" || e.kind === "analyzer?") {
		e.optional = e.kind === "analyzer?";
		e.kind = "analyzer";
		e.rule = f[3];
	} else {
		throw new Error(`${tablePath}:${i + 1}: unknown kind '${f[0]}'`);
	}
	if (e.kind !== "agree" && !why) throw new Error(`${tablePath}:${i + 1}: no '-- WHY'`);
	table.push(e);
});

// Scenario windows, all runs together, in time order.
const windows = [];
for (const run of runs) {
	const [rev, dir] = run.split("=");
	// Scenarios begun in the same millisecond go by the order the suite ran
	// them, as its output (DIR.out) says.
	const order = new Map();
	if (fs.existsSync(dir + ".out"))
		for (const m of fs.readFileSync(dir + ".out", "utf8").matchAll(/^=== Running scenario: (\S+) ===$/gm))
			if (!order.has(m[1])) order.set(m[1], order.size);
	for (const d of fs.readdirSync(dir)) {
		const m = /^server-(.+)-(\d{4}-\d\d-\d\d)T(\d\d)-(\d\d)-(\d\d)-(\d{3})Z$/.exec(d);
		if (!m) throw new Error(`unexpected results folder ${d}`);
		const start = Date.parse(`${m[2]}T${m[3]}:${m[4]}:${m[5]}.${m[6]}Z`) * 1000;
		const file = path.join(dir, d, "checks.json");
		// (A scenario that threw wrote none: it failed, as its summary line says.)
		const checks = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8"))
			: [{ id: "scenario-run", status: "FAILURE", errorMessage: "the scenario stopped before its checks (no checks.json)" }];
		windows.push({ rev, scenario: m[1], start, rank: order.get(m[1]) ?? order.size, checks, errors: [] });
	}
}
windows.sort((a, b) => a.start - b.start || a.rank - b.rank);
windows.forEach((w, i) => {
	const next = i + 1 < windows.length ? windows[i + 1].start : Infinity;
	const last = Math.max(w.start, ...w.checks.map((c) => (c.timestamp ? Date.parse(c.timestamp) * 1000 + 999 : 0)));
	w.end = Math.max(next, last + 1);
});
// (before the first window: none; the last one runs on to the end)
const windowsAt = (us) => windows.filter((x) => x.start <= us && us < x.end);

const wall = new Map(), first = new Map();
for (const line of fs.readFileSync(messagesPath, "utf8").split("\n")) {
	const [s, q, t] = line.split(/[\s|]+/);
	if (!t) continue;
	wall.set(`${s} ${q}`, Number(t));
	if (!first.has(s) || Number(t) < first.get(s)) first.set(s, Number(t));
}

const problems = [], errors = [];
const report = JSON.parse(fs.readFileSync(findingsPath, "utf8"));
for (const s of report.sessions) {
	for (const f of s.findings) {
		if (f.severity !== "error") continue;
		const t = f.seq != null ? wall.get(`${s.session} ${f.seq}`) : first.get(String(s.session));
		const ws = t != null ? windowsAt(t) : [];
		if (!ws.length) {
			problems.push(`session ${s.session} #${f.seq}: ${f.rule} error outside every scenario's time`);
			continue;
		}
		const err = { rule: f.rule, where: `session ${s.session} #${f.seq ?? "-"}`, message: f.text, windows: ws };
		errors.push(err);
		for (const w of ws) w.errors.push(err);
	}
}

const out = [];
for (const w of windows) {
	const failed = w.checks.filter((c) => c.status === "FAILURE");
	for (const c of failed) {
		const msg = c.errorMessage || "";
		let e = table.find((x) => x.kind === "agree" && x.rev === w.rev && x.scen.test(w.scenario) &&
			x.check.test(c.id) && (!x.re || x.re.test(msg)) && w.errors.some((r) => x.rules.includes(r.rule)));
		e ??= table.find((x) => x.kind === "suite" && x.rev === w.rev && x.scen.test(w.scenario) && x.check.test(c.id) &&
			(!x.re || x.re.test(msg)));
		const miss = table.find((x) => x.kind === "agree" && x.rev === w.rev && x.scen.test(w.scenario) &&
			x.check.test(c.id) && (!x.re || x.re.test(msg)));
		if (!e && miss) {
			miss.used++;
			problems.push(`${w.rev} ${w.scenario}: the suite fails ${c.id} ('${msg.slice(0, 100)}'), ` +
				`and the table (line ${miss.line}) says the analyzer agrees with ${miss.rules.join(" or ")}, but it reported none there`);
			continue;
		}
		if (!e) {
			problems.push(`${w.rev} ${w.scenario}: NEW: the suite fails ${c.id} ('${msg.slice(0, 120)}'), which no line of the table explains`);
			continue;
		}
		e.used++;
		if (e.kind === "agree") for (const r of w.errors) if (e.rules.includes(r.rule)) e.seen.add(`${w.scenario} ${r.where} ${r.rule}`);
		out.push(`${w.rev} ${w.scenario}: suite FAILURE ${c.id}: ${e.kind === "agree" ? "analyzer agrees (" + e.rules.join(",") + ")" : "suite only"} [table line ${e.line}]`);
	}
}
for (const r of errors) {
	// (an agreement in any of its scenarios first, then an analyzer line)
	let e = null, w = null;
	for (const x of r.windows) {
		const key = `${x.scenario} ${r.where} ${r.rule}`;
		e = table.find((t) => t.kind === "agree" && t.rev === x.rev && t.seen.has(key));
		if (e) {
			w = x;
			break;
		}
	}
	for (const x of e ? [] : r.windows) {
		e = table.find((t) => t.kind === "analyzer" && t.rev === x.rev && t.scen.test(x.scenario) && t.rule === r.rule);
		if (e) {
			w = x;
			break;
		}
	}
	if (!e) {
		const names = r.windows.map((x) => `${x.rev} ${x.scenario}`).join(" or ");
		problems.push(`${names}: NEW: the analyzer reports ${r.rule} at ${r.where} ('${r.message.slice(0, 120)}'), which no failing check or line of the table explains`);
		continue;
	}
	if (e.kind === "analyzer") e.used++;
	out.push(`${w.rev} ${w.scenario}: analyzer ${r.rule} at ${r.where}: ${e.kind === "agree" ? "the suite agrees" : "analyzer only"} [table line ${e.line}]`);
}
for (const e of table)
	if (!e.used && !e.optional) problems.push(`table line ${e.line} matched nothing (a difference gone?): ${e.text}`);

console.log(out.join("\n"));
const agreed = out.filter((l) => l.includes("analyzer agrees")).length;
const suiteOnly = out.filter((l) => l.includes("suite only")).length;
const analyzerOnly = out.filter((l) => l.includes("analyzer only")).length;
console.log(`summary: ${agreed} suite failures the analyzer agrees with, ${suiteOnly} suite only, ` +
	`${analyzerOnly} analyzer errors only the analyzer reports, ${problems.length} problems`);
for (const p of problems) console.log(`PROBLEM ${p}`);
process.exit(problems.length ? 1 : 0);
