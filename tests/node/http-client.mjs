#!/usr/bin/env node
// tests/node/http-client.mjs - an MCP client over HTTP built on the official
// TypeScript SDK (Client + StreamableHTTPClientTransport or SSEClientTransport), for
// mcptap's end-to-end tests of the HTTP tap.
//
// Usage: node http-client.mjs --transport http|sse [--log FILE] [--sessions N]
//            [--deleted-status N] [--resume] [--not-jsonrpc N|any] URL
//        node http-client.mjs --transport stdio [--log FILE] [--not-jsonrpc N] -- COMMAND [ARG...]
//
// URL is the server's MCP endpoint (http: the Streamable HTTP endpoint, e.g.
// http://127.0.0.1:PORT/mcp; sse: the 2024-11-05 GET endpoint, e.g. .../sse), or
// the tap in front of it; https works (trust a test CA with NODE_EXTRA_CA_CERTS).
//
// Without --sessions: one client runs the full flow against
// @modelcontextprotocol/server-everything 2026.8.31: initialize, ping,
// logging/setLevel, tools/list, prompts/list + get, resources/list + read, echo, a
// progress call (the notifications/progress on the wire are counted exactly), a
// sampling request the client answers, a form elicitation the client answers, a
// task-augmented tools/call (polled with tasks/get; its elicitation arrives through
// tasks/result), a call cancelled with an AbortController after its first progress
// notification, the server's roots/list, and for http a DELETE of the session
// (transport.terminateSession()), after which the old session id is refused.
//
// --same-echo (with --sessions): every client echoes the text the one client of a
// --sessions 1 run echoes (so that a mock of that run answers each of them).
//
// --resume (http): after the elicitation step, the GET stream is cut, as a
// network between the tap and the client would cut it, and the SDK resumes it
// with GET + Last-Event-ID. server-everything's event store then sends again
// every event it stored after that id, of every stream of the session: earlier
// answers, notifications, and its sampling/createMessage and elicitation/create,
// which the client answers a second time. The tap sees each of those events
// twice (the second copy "replayed"). The step waits for the replay to end and
// prints "# resumed: N JSON-RPC messages came again (S sampling/createMessage, E
// elicitation/create, each answered again), K events not JSON-RPC"; the
// client's errors about answers and progress it had already had, and the SDK's
// complaints about those K events, are expected. The rest of the flow is
// unchanged. (A server whose store keeps streams apart sends nothing again.)
//
// --not-jsonrpc N: N messages that are not JSON-RPC are expected to come in the
// whole flow (a mock of a --resume recording sends what the server sent): the
// SDK's complaints about them are counted, and must be exactly N, instead of
// failing the flow. --not-jsonrpc any: as many as come (a --resume recording
// of server-everything: its store sends again the priming event of each POST
// stream opened since the Last-Event-ID, as "{}", and how many is timing).
// The count is printed either way (with --resume: "# resumed: ...").
//
// --deleted-status N: the status the old session id gets after the DELETE (400 as
// server-everything answers; a server that follows the spec answers 404).
//
// --transport stdio: the same full flow over stdio against COMMAND (its
// server-everything in stdio mode, or a tap wrapping it), but the DELETE steps: a
// stdio recording of the very flow the http and sse runs do.
//
// With --sessions N: N clients at once, each its own session and log FILE.K
// (K = 1..N), run a short flow: initialize, tools/list, an echo of a text unique to
// the client, a progress call, and for http the DELETE.
//
// Output: one line per step on stdout, "ok - STEP" or "not ok - STEP: why" (with
// --sessions, one line per step for all the clients, naming the clients that
// failed), and "# session K ID" for each session id seen (http: the Mcp-Session-Id
// the transport holds; sse: the endpoint's sessionId). Exit status: 0 when every
// step passed, 1 otherwise, 2 for a usage error.
//
// --log FILE: every JSON-RPC message the client sent or received, in order, one
// JSON object per line: {"dir":"c2s","message":<msg>} or {"dir":"s2c","message":<msg>}
// (the format of sdk-client.mjs, which check-store.mjs reads), taken at the
// transport's send() and onmessage, so it is what went over the wire, not something
// re-derived from API calls. (A received message is logged as the transport hands
// it on: JSON.parse'd and checked against the SDK's JSON-RPC schema.)

import { openSync, writeSync, closeSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
	CallToolResultSchema,
	CreateMessageRequestSchema,
	CreateTaskResultSchema,
	ElicitRequestSchema,
	ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { EVERYTHING_TOOLS, ELICIT_CHOICE, SAMPLING_REPLY, textOf } from "./flows.mjs";

const PROG = "http-client";
const SAMPLING_MODEL = "mcptap-fixed-model";
const ROOTS = [{ uri: "file:///tmp/mcptap-e2e-root", name: "mcptap e2e root" }];
const ECHO_TEXT = "hello through the http tap \u00e9\u4e16 \"quoted\" \\ tab\t";
const ELICIT_NAME = "mcptap e2e";
const CANCEL_REASON = "mcptap e2e: cancelled after the first progress";
const PROGRESS = { duration: 1, steps: 4 }; // 4 notifications/progress, 0.25 s apart
const CANCELLED = { duration: 2, steps: 4 }; // 3 more come after the cancellation
const REQUEST_TIMEOUT_MS = 30000;
const WATCHDOG_MS = 90000;

// The SDK's complaint about a message that is not JSON-RPC: its schema's errors.
const NOT_JSONRPC = /^\[\s*\{\s*"code": "invalid_union"/;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function usage(msg) {
	if (msg) process.stderr.write(`${PROG}: ${msg}\n`);
	process.stderr.write("usage: node http-client.mjs --transport http|sse [--log FILE] [--sessions N] [--deleted-status N] [--resume] [--not-jsonrpc N|any] URL\n" +
		"       node http-client.mjs --transport stdio [--log FILE] [--not-jsonrpc N] -- COMMAND [ARG...]\n");
	process.exit(2);
}

function parseArgs(argv) {
	const o = { transport: null, log: null, sessions: 0, url: null, deletedStatus: 400, command: null };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const val = () => {
			if (i + 1 >= argv.length) usage(`${a} needs a value`);
			return argv[++i];
		};
		if (a === "--transport") o.transport = val();
		else if (a === "--log") o.log = val();
		else if (a === "--sessions") o.sessions = Number(val());
		else if (a === "--deleted-status") o.deletedStatus = Number(val());
		else if (a === "--same-echo") o.sameEcho = true;
		else if (a === "--resume") o.resume = true;
		else if (a === "--not-jsonrpc") {
			const v = val();
			o.notJsonRpc = v === "any" ? -1 : Number(v);
		}
		else if (a === "--") {
			o.command = argv.slice(i + 1);
			break;
		} else if (a.startsWith("-")) usage(`unknown option '${a}'`);
		else if (o.url === null) o.url = a;
		else usage(`unexpected argument '${a}'`);
	}
	if (o.transport !== "http" && o.transport !== "sse" && o.transport !== "stdio")
		usage("--transport must be http, sse or stdio");
	if (!Number.isInteger(o.sessions) || o.sessions < 0 || o.sessions > 1000) usage("--sessions takes 1..1000");
	if (o.notJsonRpc !== undefined && (!Number.isInteger(o.notJsonRpc) || o.notJsonRpc < -1 || o.sessions)) usage("--not-jsonrpc takes a count or any, without --sessions");
	if (o.resume && o.transport !== "http") usage("--resume is for --transport http");
	if (o.transport === "stdio") {
		if (!o.command || !o.command.length || o.url || o.sessions) usage("--transport stdio takes -- COMMAND [ARG...] (no URL, no --sessions)");
		return o;
	}
	if (o.resume && o.sessions) usage("--resume is for one client, without --sessions");
	if (!o.url) usage("no URL");
	try {
		o.url = new URL(o.url);
	} catch {
		usage(`not a URL: '${o.url}'`);
	}
	return o;
}

function eq(what, expected, actual) {
	const e = JSON.stringify(expected);
	const a = JSON.stringify(actual);
	if (e !== a) throw new Error(`${what}: expected ${e}, got ${a}`);
}

function need(cond, why) {
	if (!cond) throw new Error(why);
}

// One client: its transport wrapped so that every message sent and received is
// logged, every HTTP exchange noted, and the handlers for the server's requests.
class Peer {
	constructor(opts, k) {
		this.opts = opts;
		this.k = k;
		this.wire = []; // every {dir, message}, in order
		this.http = []; // every {method, status, body} the transport fetched
		this.errors = []; // what client.onerror reported
		this.seen = { sampling: [], elicit: [], roots: 0 };
		this.closing = false;
		this.logFd = null;
		const logName = opts.log && (opts.sessions ? `${opts.log}.${k}` : opts.log);
		if (logName) this.logFd = openSync(logName, "w");

		const fetchNoting = async (url, init) => {
			const r = await fetch(url, init);
			const method = (init && init.method) || "GET";
			const resumed = new Headers((init && init.headers) || {}).has("last-event-id");
			this.http.push({ method, status: r.status, body: init && init.body, resumed });
			if (opts.resume && method === "GET" && !resumed && r.ok && r.body && !this.cutGet) return this.cuttable(r);
			return r;
		};
		const t = opts.transport === "http"
			? new StreamableHTTPClientTransport(opts.url, {
				fetch: fetchNoting,
				// --resume: come back at once (the default waits a second).
				...(opts.resume ? { reconnectionOptions: { initialReconnectionDelay: 50, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 2, maxRetries: 2 } } : {}),
			})
			: opts.transport === "stdio"
			? new StdioClientTransport({ command: opts.command[0], args: opts.command.slice(1), stderr: "inherit" })
			: new SSEClientTransport(opts.url, { fetch: fetchNoting });
		this.transport = t;
		const origSend = t.send.bind(t);
		t.send = (message, o) => {
			this.record("c2s", message);
			return origSend(message, o);
		};
		// Protocol.connect() assigns transport.onmessage: keep its handler and hand
		// the transport a wrapper that logs each message before passing it on.
		let inner;
		const logging = (message, extra) => {
			this.record("s2c", message);
			if (inner) inner(message, extra);
		};
		Object.defineProperty(t, "onmessage", {
			configurable: true,
			enumerable: true,
			get: () => (inner ? logging : undefined),
			set: (fn) => {
				inner = fn;
			},
		});

		const client = new Client({ name: "mcptap-http-client", version: "1.0.0" }, {
			capabilities: { sampling: {}, roots: { listChanged: true }, elicitation: { form: {}, url: {} } },
		});
		this.client = client;
		client.onerror = (err) => {
			if (!this.closing) this.errors.push(err instanceof Error ? err.message : String(err));
		};
		client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
			this.seen.sampling.push(req.params);
			return { model: SAMPLING_MODEL, role: "assistant", content: { type: "text", text: SAMPLING_REPLY }, stopReason: "endTurn" };
		});
		client.setRequestHandler(ListRootsRequestSchema, async () => {
			this.seen.roots++;
			return { roots: ROOTS };
		});
		client.setRequestHandler(ElicitRequestSchema, async (req) => {
			this.seen.elicit.push(req.params);
			if (req.params.mode === "url") return { action: "accept" };
			const props = (req.params.requestedSchema && req.params.requestedSchema.properties) || {};
			if ("interpretation" in props) return { action: "accept", content: { interpretation: ELICIT_CHOICE } };
			return { action: "accept", content: { name: ELICIT_NAME, check: true, integer: 7 } };
		});
	}

	// --resume: a copy of the GET stream's response r, and this.cutGet(), which
	// ends it between two events and lets the connection go, as when a network
	// drops a stream.
	cuttable(r) {
		const src = r.body.getReader();
		let ctl = null;
		let ended = false;
		const end = () => {
			if (ended) return;
			ended = true;
			src.cancel().catch(() => {});
			try {
				ctl.close();
			} catch {
				// closed already
			}
		};
		const body = new ReadableStream({
			start(c) {
				ctl = c;
			},
			async pull(c) {
				if (ended) return;
				const { value, done } = await src.read().catch(() => ({ done: true }));
				if (ended) return;
				if (done) {
					ended = true;
					c.close();
				} else c.enqueue(value);
			},
			cancel(reason) {
				ended = true;
				return src.cancel(reason);
			},
		});
		this.cutGet = end;
		return new Response(body, { status: r.status, statusText: r.statusText, headers: r.headers });
	}

	// --resume: cut the GET stream, wait for the resumed one, and for the
	// server's requests sent again to be answered again; returns what came again.
	async cutAndResume() {
		need(this.cutGet, "no GET stream to cut");
		const before = { wire: this.wire.length, errors: this.errors.length, sampling: this.seen.sampling.length, elicit: this.seen.elicit.length };
		this.cutGet();
		for (let i = 0; i < 100 && !this.http.some((h) => h.resumed); i++) await sleep(50);
		const resumed = this.http.filter((h) => h.resumed);
		eq("resumed GETs (status)", [200], resumed.map((h) => h.status));
		// The replay is one burst: wait until nothing more comes for 300 ms.
		let n = -1;
		while (n !== this.wire.length) {
			n = this.wire.length;
			await sleep(300);
		}
		this.resumedAgain = this.wire.slice(before.wire).filter((r) => r.dir === "s2c").map((r) => r.message);
		// What the client said of the replay: answers to requests it had
		// finished, and the priming events the store sends again as "{}", which
		// are not JSON-RPC (the SDK reports its schema's complaint).
		const done = new Set(this.wire.slice(0, before.wire).filter((r) => r.dir === "s2c" && r.message.id !== undefined && !r.message.method).map((r) => r.message.id));
		this.replayErrors = new Set();
		this.notJsonRpc = 0;
		for (const msg of this.errors.slice(before.errors)) {
			const m = /^Received a response for an unknown message ID: (.*)$/s.exec(msg);
			let known = false;
			try {
				known = m && done.has(JSON.parse(m[1]).id);
			} catch {
				known = false;
			}
			if (!known && NOT_JSONRPC.test(msg)) {
				known = true;
				this.notJsonRpc++;
			}
			if (known) this.replayErrors.add(msg);
		}
		this.againRequests = [this.seen.sampling.length - before.sampling, this.seen.elicit.length - before.elicit];
	}

	record(dir, message) {
		this.wire.push({ dir, message });
		if (this.logFd !== null) writeSync(this.logFd, JSON.stringify({ dir, message }) + "\n");
	}

	// The session id: the Mcp-Session-Id for http, the endpoint's sessionId for sse.
	sessionId() {
		if (this.opts.transport === "http") return this.transport.sessionId;
		if (this.opts.transport === "stdio") return "stdio";
		const ep = this.transport._endpoint;
		return ep ? ep.searchParams.get("sessionId") : undefined;
	}

	lastRequest(method, name) {
		for (let i = this.wire.length - 1; i >= 0; i--) {
			const m = this.wire[i].message;
			if (this.wire[i].dir === "c2s" && m.method === method && (!name || (m.params && m.params.name === name))) return m;
		}
		return null;
	}

	progressOnWire(token) {
		return this.wire.filter((r) => r.dir === "s2c" && r.message.method === "notifications/progress" &&
			r.message.params.progressToken === token).map((r) => r.message.params);
	}

	s2cRequests(method) {
		return this.wire.filter((r) => r.dir === "s2c" && r.message.method === method && r.message.id !== undefined).length;
	}

	async connect() {
		await this.client.connect(this.transport, { timeout: REQUEST_TIMEOUT_MS });
		const sv = this.client.getServerVersion();
		eq("serverInfo.name", "mcp-servers/everything", sv && sv.name);
		need(this.sessionId(), "no session id");
	}

	// tools/list: the conditional tools (those needing sampling, roots or
	// elicitation) are registered when the server handles notifications/initialized;
	// should the list come first, list again.
	async listTools() {
		let tools = [];
		for (let i = 0; i < 10; i++) {
			tools = (await this.client.listTools({}, { timeout: REQUEST_TIMEOUT_MS })).tools.map((t) => t.name).sort();
			if (tools.length === EVERYTHING_TOOLS.length) break;
			await sleep(200);
		}
		eq("tool names", EVERYTHING_TOOLS, tools);
	}

	async echo(text) {
		const r = await this.client.callTool({ name: "echo", arguments: { message: text } }, CallToolResultSchema, { timeout: REQUEST_TIMEOUT_MS });
		eq("echo result", `Echo: ${text}`, textOf(r.content));
	}

	// A progress call: exactly `steps` notifications/progress with the request's
	// token on the wire, progress 1..steps of total steps, before the result.
	// (The SDK may drop the last callback when that notification and the result are
	// read together, so the wire is counted, not the callbacks.)
	async progress(args) {
		const got = [];
		const r = await this.client.callTool({ name: "trigger-long-running-operation", arguments: args }, CallToolResultSchema, {
			timeout: REQUEST_TIMEOUT_MS,
			onprogress: (p) => got.push(p),
		});
		eq("result", `Long running operation completed. Duration: ${args.duration} seconds, Steps: ${args.steps}.`, textOf(r.content));
		const req = this.lastRequest("tools/call", "trigger-long-running-operation");
		const token = req.params._meta && req.params._meta.progressToken;
		need(token !== undefined, "the request carried no _meta.progressToken");
		const wire = this.progressOnWire(token);
		eq("notifications/progress on the wire", args.steps, wire.length);
		eq("progress values", Array.from({ length: args.steps }, (_, i) => [i + 1, args.steps]), wire.map((p) => [p.progress, p.total]));
		need(got.length >= args.steps - 1, `only ${got.length} progress callbacks fired`);
		this.progressTokens = (this.progressTokens || new Set()).add(token);
		return args.steps;
	}

	async terminate() {
		if (this.opts.transport !== "http") return;
		const sid = this.sessionId();
		await this.transport.terminateSession();
		const del = this.http.filter((h) => h.method === "DELETE");
		eq("DELETE statuses", [200], del.map((h) => h.status));
		this.deleted = sid;
	}

	// Errors the client reported, but those that are expected: progress for a
	// call that already ended (its last notification read with its result, or a
	// cancelled call's late ones).
	unexpectedErrors() {
		const mine = new Set([...(this.progressTokens || []), ...(this.cancelledToken !== undefined ? [this.cancelledToken] : [])]);
		return this.errors.filter((msg) => {
			if (this.replayErrors && this.replayErrors.has(msg)) return false;
			if (this.opts.notJsonRpc !== undefined && NOT_JSONRPC.test(msg)) return false;
			const m = /^Received a progress notification for an unknown token: (.*)$/s.exec(msg);
			if (!m) return true;
			try {
				return !mine.has(JSON.parse(m[1]).params.progressToken);
			} catch {
				return true;
			}
		});
	}

	async close() {
		this.closing = true;
		try {
			await Promise.race([this.client.close(), sleep(3000)]);
		} catch {
			// closing anyway
		}
		if (this.logFd !== null) closeSync(this.logFd);
		this.logFd = null;
	}
}

let failures = 0;
function report(name, err) {
	if (err) {
		failures++;
		process.stdout.write(`not ok - ${name}: ${String(err.message || err).replace(/\n/g, " ")}\n`);
	} else {
		process.stdout.write(`ok - ${name}\n`);
	}
}

async function step(name, fn) {
	try {
		const r = await fn();
		report(name);
		return r;
	} catch (e) {
		report(name, e);
		return undefined;
	}
}

async function fullFlow(opts) {
	const p = new Peer(opts, 1);
	const o = { timeout: REQUEST_TIMEOUT_MS };
	const c = p.client;
	const connected = await step("initialize", () => p.connect().then(() => true));
	if (!connected) {
		await p.close();
		return;
	}
	process.stdout.write(`# session 1 ${p.sessionId()}\n`);
	await step("ping", () => c.ping(o));
	await step("logging/setLevel debug", () => c.setLoggingLevel("debug", o));
	await step("tools/list", () => p.listTools());
	await step("prompts/list", async () => {
		const prompts = (await c.listPrompts({}, o)).prompts;
		eq("prompt names", ["args-prompt", "completable-prompt", "resource-prompt", "simple-prompt"], prompts.map((x) => x.name).sort());
		const got = await c.getPrompt({ name: "simple-prompt" }, o);
		eq("simple-prompt", "This is a simple prompt without arguments.", got.messages[0] && got.messages[0].content.text);
	});
	await step("resources/list + read", async () => {
		const resources = [];
		let cursor;
		for (let pages = 0; pages < 100; pages++) {
			const page = await c.listResources(cursor ? { cursor } : {}, o);
			resources.push(...page.resources);
			cursor = page.nextCursor;
			if (!cursor) break;
		}
		eq("resources listed", 7, resources.length);
		const res = resources.find((r) => r.mimeType && r.mimeType.startsWith("text/"));
		need(res, "no text resource");
		const read = await c.readResource({ uri: res.uri }, o);
		eq("contents[0].uri", res.uri, read.contents[0] && read.contents[0].uri);
		need(typeof read.contents[0].text === "string" && read.contents[0].text, "no text");
	});
	await step("tools/call echo", () => p.echo(ECHO_TEXT));
	await step(`tools/call trigger-long-running-operation with progress (${PROGRESS.steps} notifications)`, () => p.progress(PROGRESS));
	await step("tools/call trigger-sampling-request (the client answers sampling/createMessage)", async () => {
		const r = await c.callTool({ name: "trigger-sampling-request", arguments: { prompt: "say something for mcptap", maxTokens: 64 } }, CallToolResultSchema, o);
		eq("sampling/createMessage requests", 1, p.seen.sampling.length);
		need(textOf(r.content).includes(SAMPLING_REPLY), `no sampling reply in ${JSON.stringify(r.content)}`);
	});
	await step("tools/call trigger-elicitation-request (the client answers elicitation/create)", async () => {
		const before = p.seen.elicit.length;
		const r = await c.callTool({ name: "trigger-elicitation-request", arguments: {} }, CallToolResultSchema, o);
		eq("elicitation/create requests", 1, p.seen.elicit.length - before);
		need(textOf(r.content).includes(`- Name: ${ELICIT_NAME}`), `the result does not carry the answer: ${textOf(r.content).slice(0, 200)}`);
	});

	if (opts.resume) {
		await step("--resume: the GET stream cut and resumed with Last-Event-ID; the server sends its events again", async () => {
			await p.cutAndResume();
			const [sampling, elicit] = p.againRequests;
			process.stdout.write(`# resumed: ${p.resumedAgain.length} JSON-RPC messages came again (${sampling} sampling/createMessage, ` +
				`${elicit} elicitation/create, each answered again), ${p.notJsonRpc} events not JSON-RPC\n`);
		});
	}

	// A cancelled call: abort after its first progress notification. The server
	// gets notifications/cancelled (its POST answered 202), never answers
	// the call, and, as this tool does not watch for cancellation, goes on sending
	// its progress (checked after the task below, to save time).
	await step("cancellation (AbortController after the first progress)", async () => {
		const ac = new AbortController();
		let fired = 0;
		let err = null;
		try {
			await c.callTool({ name: "trigger-long-running-operation", arguments: CANCELLED }, CallToolResultSchema, {
				...o,
				signal: ac.signal,
				onprogress: () => {
					if (fired++ === 0) ac.abort(CANCEL_REASON);
				},
			});
		} catch (e) {
			err = e;
		}
		need(err, "the aborted call resolved");
		eq("progress callbacks before the abort", 1, fired);
		const req = p.lastRequest("tools/call", "trigger-long-running-operation");
		p.cancelledId = req.id;
		p.cancelledToken = req.params._meta.progressToken;
		const cancels = p.wire.filter((r) => r.dir === "c2s" && r.message.method === "notifications/cancelled");
		eq("notifications/cancelled sent", [{ requestId: req.id, reason: CANCEL_REASON }], cancels.map((r) => r.message.params));
		// The POST that carried it was accepted (over HTTP).
		if (opts.transport === "stdio") return;
		for (let i = 0; i < 20 && !p.http.some((h) => h.body && h.body.includes('"notifications/cancelled"')); i++) await sleep(50);
		const post = p.http.filter((h) => h.body && h.body.includes('"notifications/cancelled"'));
		eq("the POST of notifications/cancelled answered", [202], post.map((h) => h.status));
	});

	// A task: simulate-research-query, ambiguous, so the server asks which
	// interpretation is meant; the elicitation/create arrives through tasks/result.
	await step("tasks: tools/call simulate-research-query as a task, tasks/get, tasks/result", async () => {
		const topic = "python";
		const caps = c.getServerCapabilities() || {};
		need(caps.tasks && caps.tasks.requests && caps.tasks.requests.tools, "the server declares no task-augmented tools/call");
		const before = p.seen.elicit.length;
		const created = await c.request({ method: "tools/call", params: { name: "simulate-research-query", arguments: { topic, ambiguous: true } } },
			CreateTaskResultSchema, { ...o, task: { ttl: 60000 } });
		const taskId = created.task && created.task.taskId;
		need(typeof taskId === "string" && taskId, `no task id in ${JSON.stringify(created)}`);
		eq("created task status", "working", created.task.status);
		const statuses = [];
		for (let i = 0; i < 20; i++) {
			await sleep(i === 0 ? 500 : 1000);
			const t = await c.experimental.tasks.getTask(taskId, o);
			statuses.push(t.status);
			if (t.status !== "working") break;
		}
		need(statuses[statuses.length - 1] === "input_required" && statuses.slice(0, -1).every((s) => s === "working"),
			`task statuses ${JSON.stringify(statuses)}: expected working... then input_required`);
		const res = await c.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, o);
		eq("elicitation/create requests through tasks/result", 1, p.seen.elicit.length - before);
		const text = textOf(res.content);
		need(text.startsWith(`# Research Report: ${topic} (${ELICIT_CHOICE})`), `the report does not carry the clarification: ${text.slice(0, 120)}`);
		const done = await c.experimental.tasks.getTask(taskId, o);
		eq("final task status", "completed", done.status);
	});

	await step("cancellation: no answer, and the server's later progress still came", async () => {
		need(p.cancelledToken !== undefined, "no cancelled call");
		const late = () => p.progressOnWire(p.cancelledToken).length;
		for (let i = 0; i < 40 && late() < CANCELLED.steps; i++) await sleep(100);
		eq("notifications/progress of the cancelled call", CANCELLED.steps, late());
		eq("responses to the cancelled call", 0, p.wire.filter((r) => r.dir === "s2c" && r.message.id === p.cancelledId && !r.message.method).length);
	});

	await step("roots/list (the server asks once, after initialization)", async () => {
		for (let i = 0; i < 20 && p.seen.roots === 0; i++) await sleep(100);
		eq("roots/list requests", 1, p.seen.roots);
		eq("roots/list on the wire", 1, p.s2cRequests("roots/list"));
	});
	await step("ping (again)", () => c.ping(o));
	await step("no unexpected client errors", () => {
		const bad = p.unexpectedErrors();
		need(bad.length === 0, bad.join("; "));
	});
	if (opts.notJsonRpc !== undefined && opts.notJsonRpc >= 0) {
		await step(`${opts.notJsonRpc} messages not JSON-RPC came`, () => {
			eq("the SDK's complaints", opts.notJsonRpc, p.errors.filter((m) => NOT_JSONRPC.test(m)).length);
		});
	}
	if (opts.transport === "http") {
		await step("DELETE (terminateSession)", () => p.terminate());
		await step(`the deleted session id is refused (HTTP ${opts.deletedStatus})`, async () => {
			const ping = { jsonrpc: "2.0", id: "after-delete", method: "ping" };
			p.record("c2s", ping); // (sent by hand, not by the transport: logged here)
			const r = await fetch(opts.url, {
				method: "POST",
				headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": p.deleted, "mcp-protocol-version": p.transport.protocolVersion },
				body: JSON.stringify(ping),
			});
			const body = await r.text();
			eq("status", opts.deletedStatus, r.status);
			if (opts.deletedStatus === 400) need(/No valid session ID/.test(body), `body: ${body}`);
		});
	}
	await p.close();
}

// --sessions N: N clients at once, a short flow each.
async function manyFlow(opts) {
	const n = opts.sessions;
	const peers = Array.from({ length: n }, (_, i) => new Peer(opts, i + 1));
	const results = {}; // step -> [client k that failed: why]
	const order = [];
	const run = async (p, name, fn) => {
		if (!results[name]) {
			results[name] = [];
			order.push(name);
		}
		if (p.dead) {
			results[name].push(`client ${p.k}: not run`);
			return;
		}
		try {
			await fn();
		} catch (e) {
			results[name].push(`client ${p.k}: ${String(e.message || e).replace(/\n/g, " ")}`);
			if (name === "initialize") p.dead = true;
		}
	};
	await Promise.all(peers.map(async (p) => {
		await run(p, "initialize", () => p.connect());
		await run(p, "tools/list", () => p.listTools());
		if (opts.sameEcho)
			await run(p, "tools/call echo (the one client's text of a --sessions 1 run)", () => p.echo(`client 1 of 1: ${ECHO_TEXT}`));
		else
			await run(p, "tools/call echo (a text unique to each client)", () => p.echo(`client ${p.k} of ${n}: ${ECHO_TEXT}`));
		await run(p, `tools/call trigger-long-running-operation with progress (${PROGRESS.steps} notifications)`, () => p.progress(PROGRESS));
		await run(p, "no unexpected client errors", () => {
			const bad = p.unexpectedErrors();
			need(bad.length === 0, bad.join("; "));
		});
		if (opts.transport === "http") await run(p, "DELETE (terminateSession)", () => p.terminate());
	}));
	for (const p of peers) {
		const sid = p.deleted || p.sessionId();
		if (sid) process.stdout.write(`# session ${p.k} ${sid}\n`);
	}
	for (const name of order) {
		const bad = results[name];
		report(`${name}: ${n - bad.length}/${n} clients`, bad.length ? new Error(bad.slice(0, 5).join("; ")) : null);
	}
	const ids = new Set(peers.map((p) => p.deleted || p.sessionId()).filter(Boolean));
	report(`${n} distinct session ids`, ids.size === n ? null : new Error(`only ${ids.size}`));
	await Promise.all(peers.map((p) => p.close()));
}

async function main() {
	const opts = parseArgs(process.argv.slice(2));
	const watchdog = setTimeout(() => {
		process.stdout.write(`not ok - the flow still running after ${WATCHDOG_MS} ms\n`);
		process.exit(1);
	}, WATCHDOG_MS);
	watchdog.unref();
	if (opts.sessions) await manyFlow(opts);
	else await fullFlow(opts);
	process.exit(failures ? 1 : 0);
}

main().catch((e) => {
	process.stdout.write(`not ok - ${PROG}: ${e && e.stack ? e.stack : e}\n`);
	process.exit(1);
});
