// check-har.mjs - what `mcptap export -T har` wrote, checked by real HAR readers.
//
//   node check-har.mjs FILE.har [--rows ROWS.json] [--messages MSGS.json] [--curl OUT.jsonl]
//
// FILE.har must pass har-validator (the HAR 1.2 schema, pinned in package.json)
// and what the schema leaves loose: send, wait and receive never negative,
// time their sum, startedDateTime a date, the entries of a session in order of
// it and of their seq. Exits 1 with every error found, one a line.
//
//   --rows ROWS.json      the http_exchange rows the entries come from (sqlite3
//                         -json: session, seq, method, status): one entry per row,
//                         the same method and status (0: no response)
//   --messages MSGS.json  the message rows (session, seq, exchange, channel, dir,
//                         kind, raw as text): each in the _messageSeqs of exactly
//                         one entry, that of its exchange when it has one, and its
//                         bytes there exactly once: a request body in postData, a
//                         JSON answer in the content, an SSE event's data in
//                         _sseEvents (whose content is the stream they rebuild);
//                         stdio: the request in postData, its answer in the content
//   --curl OUT.jsonl      httpsnippet (a second HAR reader) turns each entry's
//                         request into a curl command; the command's method, URL,
//                         headers and body, read back from its words, must be the
//                         entry's; a line per entry in OUT ({session, seq, curl})
// Prints "ok: N entries" (and what each option checked) when all is well.
import fs from "node:fs";
import validator from "har-validator";
import { HTTPSnippet } from "httpsnippet";

const args = process.argv.slice(2);
const file = args.shift();
const opts = {};
while (args.length) {
	const a = args.shift();
	if (!["--rows", "--messages", "--curl"].includes(a) || !args.length) {
		console.error(`check-har: bad argument '${a}'`);
		process.exit(2);
	}
	opts[a.slice(2)] = args.shift();
}
const errors = [];
const err = (s) => errors.push(s);
let har;
try {
	har = JSON.parse(fs.readFileSync(file, "utf8"));
} catch (e) {
	console.error(`check-har: ${file}: not JSON: ${e.message}`);
	process.exit(1);
}
try {
	await validator.har(har);
} catch (e) {
	for (const x of e.errors || [e]) err(`har-validator: ${x.dataPath || ""} ${x.message}`);
}
const entries = har?.log?.entries || [];
const said = [];
const where = (e) => `entry session ${e._session} #${e._seq}`;

// ---- what the schema leaves loose ----
let prev = null;
for (const e of entries) {
	const t = e.timings || {};
	for (const k of ["send", "wait", "receive"])
		if (!(typeof t[k] === "number" && t[k] >= 0)) err(`${where(e)}: timings.${k} is ${t[k]}`);
	for (const k of ["blocked", "dns", "connect", "ssl"])
		if (k in t && !(t[k] === -1 || t[k] >= 0)) err(`${where(e)}: timings.${k} is ${t[k]}`);
	if (Math.abs(e.time - (t.send + t.wait + t.receive)) > 0.001)
		err(`${where(e)}: time ${e.time} is not send + wait + receive`);
	if (Number.isNaN(Date.parse(e.startedDateTime))) err(`${where(e)}: startedDateTime ${e.startedDateTime}`);
	if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(e.startedDateTime))
		err(`${where(e)}: startedDateTime ${e.startedDateTime} is not ISO 8601 in UTC`);
	if (prev && prev._session === e._session &&
	    (Date.parse(prev.startedDateTime) > Date.parse(e.startedDateTime) || prev._seq >= e._seq))
		err(`${where(e)}: after ${where(prev)}`);
	if (prev && prev._session > e._session) err(`${where(e)}: session after ${prev._session}`);
	if (!Array.isArray(e._messageSeqs)) err(`${where(e)}: no _messageSeqs`);
	if (!e._outcome) err(`${where(e)}: no _outcome`);
	if (e._sseEvents) {
		let text = "";
		for (const ev of e._sseEvents) {
			if (ev.id != null) text += `id: ${ev.id}\n`;
			if (ev.event != null) text += `event: ${ev.event}\n`;
			for (const l of ev.data.split("\n")) text += `data: ${l.replace(/\r$/, "")}\n`;
			text += "\n";
			if (typeof ev.time !== "number") err(`${where(e)}: an SSE event without time`);
		}
		if (e.response.content.text !== text) err(`${where(e)}: the content is not the stream its _sseEvents make`);
	}
	const pd = e.request.postData;
	if (pd && e.request.bodySize !== Buffer.byteLength(pd.text)) err(`${where(e)}: request.bodySize ${e.request.bodySize}`);
	const c = e.response.content;
	if (c.text != null && c.encoding !== "base64" && c.size !== Buffer.byteLength(c.text))
		err(`${where(e)}: content.size ${c.size}`);
	prev = e;
}
const pages = new Set((har?.log?.pages || []).map((p) => p.id));
for (const e of entries) if (!pages.has(e.pageref)) err(`${where(e)}: pageref ${e.pageref} names no page`);

const key = (s, q) => `${s}:${q}`;
const byKey = new Map(entries.map((e) => [key(e._session, e._seq), e]));

// ---- --rows ----
if (opts.rows) {
	const rows = JSON.parse(fs.readFileSync(opts.rows, "utf8") || "[]");
	const http = entries.filter((e) => !/^mcp\+/.test(e.request.url));
	if (http.length !== rows.length) err(`${http.length} HTTP entries, ${rows.length} exchange rows`);
	for (const r of rows) {
		const e = byKey.get(key(r.session, r.seq));
		if (!e) { err(`exchange session ${r.session} #${r.seq}: no entry`); continue; }
		if (e.request.method !== r.method) err(`${where(e)}: method ${e.request.method}, row ${r.method}`);
		if (e.response.status !== (r.status ?? 0)) err(`${where(e)}: status ${e.response.status}, row ${r.status}`);
	}
	said.push(`${rows.length} exchanges`);
}

// ---- --messages ----
if (opts.messages) {
	const msgs = JSON.parse(fs.readFileSync(opts.messages, "utf8") || "[]");
	const owner = new Map();
	for (const e of entries)
		for (const q of e._messageSeqs || []) {
			const k = key(e._session, q);
			if (owner.has(k)) err(`message session ${e._session} #${q}: in two entries`);
			owner.set(k, e);
		}
	const count = (hay, needle) => {
		let n = 0;
		for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + 1)) n++;
		return n;
	};
	for (const m of msgs) {
		const e = owner.get(key(m.session, m.seq));
		const w = `message session ${m.session} #${m.seq}`;
		if (!e) { err(`${w}: in no entry`); continue; }
		if (m.exchange && e._seq !== m.exchange) { err(`${w}: in ${where(e)}, not in #${m.exchange}'s`); continue; }
		const post = e.request.postData?.text ?? "";
		const content = e.response.content.encoding === "base64"
			? Buffer.from(e.response.content.text, "base64").toString("utf8")
			: e.response.content.text ?? "";
		let n;
		if (m.channel === "sse") {
			const same = (e._sseEvents || []).filter((ev) => ev.data === m.raw).length;
			const twins = msgs.filter((o) => o.session === m.session && owner.get(key(o.session, o.seq)) === e && o.raw === m.raw).length;
			const mine = (e._sseEvents || []).find((ev) => ev.seq === m.seq);
			n = mine && mine.data === m.raw && same === twins ? 1 : 0;
			if (count(post, m.raw)) n = 2;
		} else if (m.dir === "c2s" && m.exchange) {
			n = count(post, m.raw) + count(content, m.raw);
			if (post !== m.raw && count(post, m.raw) !== 1) n = 0;
		} else if (m.exchange) {
			n = count(content, m.raw) + count(post, m.raw);
			if (count(content, m.raw) !== 1) n = 0;
		} else {
			// stdio: the entry's first message is its request, a second its answer.
			const first = e._messageSeqs[0] === m.seq;
			n = first ? (post === m.raw ? 1 : 0) : (content === m.raw ? 1 : 0);
		}
		if (n !== 1) err(`${w} (${m.channel} ${m.dir} ${m.kind}): its bytes are ${n === 0 ? "not" : n + " times"} in ${where(e)}`);
	}
	said.push(`${msgs.length} messages`);
}

// ---- --curl: httpsnippet ----
// The words of a shell command as httpsnippet writes them: 'single quoted',
// or bare; a backslash-newline between them.
function words(cmd) {
	const out = [];
	let i = 0;
	while (i < cmd.length) {
		while (i < cmd.length && /[\s\\]/.test(cmd[i]) && !(cmd[i] === "\\" && cmd[i + 1] !== "\n")) i++;
		if (i >= cmd.length) break;
		let w = "";
		while (i < cmd.length && !/\s/.test(cmd[i])) {
			if (cmd[i] === "'") {
				const j = cmd.indexOf("'", i + 1);
				w += cmd.slice(i + 1, j);
				i = j + 1;
			} else if (cmd[i] === "\\" && cmd[i + 1] !== "\n") {
				w += cmd[i + 1];
				i += 2;
			} else {
				w += cmd[i++];
			}
		}
		out.push(w);
	}
	return out;
}
function sameUrl(u) {
	try {
		const x = new URL(u);
		return `${x.protocol}//${x.host}${x.pathname}?${[...x.searchParams].map(([k, v]) => `${k}=${v}`).join("&")}`;
	} catch {
		return `bad URL ${u}`;
	}
}
if (opts.curl) {
	const lines = [];
	let n = 0;
	for (const e of entries) {
		let curl;
		try {
			curl = new HTTPSnippet(e.request).convert("shell", "curl");
		} catch (x) {
			err(`${where(e)}: httpsnippet: ${x.message}`);
			continue;
		}
		lines.push(JSON.stringify({ session: e._session, seq: e._seq, curl }));
		const w = words(curl);
		const got = { headers: [] };
		if (w[0] !== "curl") err(`${where(e)}: httpsnippet wrote no curl command: ${curl}`);
		for (let i = 1; i < w.length; i++) {
			if (w[i] === "--request") got.method = w[++i];
			else if (w[i] === "--url") got.url = w[++i];
			else if (w[i] === "--header") got.headers.push(w[++i]);
			else if (w[i] === "--data" || w[i] === "--data-raw") got.data = w[++i];
		}
		const want = e.request;
		const hs = (want.headers || []).map((h) => `${h.name.toLowerCase()}: ${h.value}`).sort();
		const gh = got.headers.map((h) => h.replace(/^[^:]*/, (k) => k.toLowerCase())).sort();
		const bad = [];
		if (got.method !== want.method) bad.push(`method ${got.method}`);
		// (httpsnippet writes the query again from its pairs: flag becomes flag=.)
		if (got.url !== want.url && sameUrl(got.url) !== sameUrl(want.url)) bad.push(`url ${got.url}`);
		if (JSON.stringify(gh) !== JSON.stringify(hs)) bad.push(`headers ${JSON.stringify(gh)}, not ${JSON.stringify(hs)}`);
		if ((got.data ?? "") !== (want.postData?.text ?? "")) bad.push(`body ${JSON.stringify(got.data)}`);
		if (bad.length) err(`${where(e)}: the curl command httpsnippet made from it: ${bad.join("; ")}`);
		else n++;
	}
	fs.writeFileSync(opts.curl, lines.map((l) => l + "\n").join(""));
	said.push(`${n} curl commands`);
}

if (errors.length) {
	for (const e of errors) console.log(`check-har: ${file}: ${e}`);
	process.exit(1);
}
console.log(`ok: ${entries.length} entries${said.length ? "; " + said.join(", ") : ""}`);
