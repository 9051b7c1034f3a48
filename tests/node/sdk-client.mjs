#!/usr/bin/env node
// tests/node/sdk-client.mjs - an MCP client built on the official TypeScript SDK
// (Client + StdioClientTransport), for mcptap's end-to-end tests.
//
// Usage: node sdk-client.mjs --log FILE [--flow everything|wide|full|long|memory|echo]
//            [--without sampling,roots,elicitation] [--all-progress] -- CMD ARGS...
// (wide: the everything flow, then every other tool the server lists, called with
// arguments made from its input schema; tool errors are fine there. full, long,
// memory and echo: see flows.mjs. --without: do not declare those client capabilities, and
// expect the server never to send the requests that need them. --all-progress:
// every progress notification must fire the call's callback, which a mock can
// do and a live server, writing its last one with the result, may not.)
//
// Spawns CMD ARGS as an MCP server over stdio (CMD may be the real server or
// `mcptap record ... -- server`; the client does not care), runs a fixed flow of
// requests against it and checks each answer. Every JSON-RPC message the client
// sends or receives is appended, in order, to FILE as one JSON object per line:
//   {"dir":"c2s","message":<msg>}  or  {"dir":"s2c","message":<msg>}
// taken at the transport (its send() and its onmessage), so it is what the client
// put on and took off the wire, not something re-derived from API calls. (A received
// line is logged as the transport hands it on: JSON.parse'd and checked against the
// SDK's JSON-RPC schema, which keeps every member of a valid message except unknown
// ones inside an error object.)
//
// Flow "everything" (for @modelcontextprotocol/server-everything): initialize +
// notifications/initialized, ping, tools/list, tools/call echo, tools/call of the
// long-running-operation tool with a progress callback (so the request carries a
// progressToken) and a check that progress notifications arrived, tools/call of the
// tool that makes the server send sampling/createMessage (answered here with a fixed
// reply) and a check that the reply comes back in the result, resources/list,
// resources/read, resources/templates/list, prompts/list, prompts/get, close.
// The server's roots/list request (server-everything sends one after initialization
// when the client declares roots) is answered with a fixed root.
//
// Exit status: 0 when every step succeeded; 1 with a message on stderr otherwise;
// 2 for a usage error.

import { openSync, writeSync, closeSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
	CallToolResultSchema,
	CreateMessageRequestSchema,
	ElicitRequestSchema,
	ListRootsRequestSchema,
	LoggingMessageNotificationSchema,
	ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import * as flows from "./flows.mjs";

const PROG = "sdk-client";
const SAMPLING_REPLY = "mcptap fixed sampling reply: the tap sees everything";
const SAMPLING_MODEL = "mcptap-fixed-model";
const ROOTS = [{ uri: "file:///tmp/mcptap-e2e-root", name: "mcptap e2e root" }];
const REQUEST_TIMEOUT_MS = 30000;
const WATCHDOG_MS = 90000;

function usage(msg) {
	if (msg) process.stderr.write(`${PROG}: ${msg}\n`);
	process.stderr.write(
		"usage: node sdk-client.mjs --log FILE [--flow everything|wide|full|long|memory|echo]\n" +
			"           [--without sampling,roots,elicitation] [--all-progress] -- CMD ARGS...\n",
	);
	process.exit(2);
}

function parseArgs(argv) {
	let log = null;
	let flow = "everything";
	const without = new Set();
	let allProgress = false;
	let i = 0;
	for (; i < argv.length; i++) {
		const a = argv[i];
		if (a === "--") {
			i++;
			break;
		} else if (a === "--log") {
			if (i + 1 >= argv.length) usage("--log needs a FILE");
			log = argv[++i];
		} else if (a === "--flow") {
			if (i + 1 >= argv.length) usage("--flow needs a NAME");
			flow = argv[++i];
		} else if (a === "--all-progress") {
			allProgress = true;
		} else if (a === "--without") {
			if (i + 1 >= argv.length) usage("--without needs a LIST");
			for (const c of argv[++i].split(",")) {
				if (!["sampling", "roots", "elicitation"].includes(c)) usage(`unknown capability '${c}'`);
				without.add(c);
			}
		} else {
			usage(`unknown argument '${a}'`);
		}
	}
	const cmd = argv.slice(i);
	if (!log) usage("--log FILE is required");
	if (cmd.length === 0) usage("no server command after --");
	if (!["everything", "wide", "full", "long", "memory", "echo"].includes(flow)) usage(`unknown flow '${flow}'`);
	return { log, flow, cmd, without, allProgress };
}

const { StepError, fail, textOf } = flows;

// Picks a tool by preferred exact names, then by a pattern, from a tools/list result.
function pickTool(tools, exact, pattern, exclude) {
	for (const n of exact) {
		if (tools.some((t) => t.name === n)) return n;
	}
	const t = tools.find((x) => pattern.test(x.name) && !(exclude && exclude.test(x.name)));
	return t ? t.name : null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
	const { log, flow, cmd, without, allProgress } = parseArgs(process.argv.slice(2));

	let logFd;
	try {
		logFd = openSync(log, "w");
	} catch (e) {
		process.stderr.write(`${PROG}: cannot open log ${log}: ${e.message}\n`);
		process.exit(1);
	}
	const counts = { c2s: 0, s2c: 0 };
	const wire = [];
	const record = (dir, message) => {
		counts[dir]++;
		wire.push({ dir, message });
		writeSync(logFd, JSON.stringify({ dir, message }) + "\n");
	};

	const transport = new StdioClientTransport({
		command: cmd[0],
		args: cmd.slice(1),
		// The whole environment, not the SDK's short safe list: the tap (and any
		// sanitizer or TMPDIR settings of the test run) must see what the test set.
		env: { ...process.env },
		stderr: "inherit",
	});

	// Log at the transport. send() serializes the very object it is given with
	// JSON.stringify, so logging that object is logging the line written.
	const origSend = transport.send.bind(transport);
	let longReq = null;
	transport.send = (message, options) => {
		record("c2s", message);
		if (message && message.method === "tools/call" && message.params && /long.?running/i.test(message.params.name))
			longReq = message;
		return origSend(message, options);
	};
	// Protocol.connect() assigns transport.onmessage; keep its handler and hand the
	// transport a wrapper that logs each parsed message before passing it on.
	let innerOnMessage;
	const wireProgress = [];
	const loggingOnMessage = (message, extra) => {
		record("s2c", message);
		if (message && message.method === "notifications/progress" && message.params)
			wireProgress.push(message.params);
		if (innerOnMessage) innerOnMessage(message, extra);
	};
	Object.defineProperty(transport, "onmessage", {
		configurable: true,
		enumerable: true,
		get: () => (innerOnMessage ? loggingOnMessage : undefined),
		set: (fn) => {
			innerOnMessage = fn;
		},
	});

	const own = flow === "everything" || flow === "wide" ? null : flows[flow];
	const capabilities = { sampling: {}, roots: { listChanged: true } };
	if (own) capabilities.elicitation = { form: {}, url: {} };
	for (const c of without) delete capabilities[c];
	const client = new Client({ name: "mcptap-sdk-client", version: "1.0.0" }, { capabilities });

	// dispatched: notifications that reached a handler (progress ones: the
	// callback, or the SDK's report of an unknown token).
	const seen = { sampling: 0, roots: 0, progress: [], elicit: [], logs: [], updated: [], dispatched: 0, unknownProgress: [] };
	const lateTokens = new Set();
	const transportErrors = [];
	client.onerror = (err) => {
		const msg = err instanceof Error ? err.message : String(err);
		// The SDK reports this when the last notifications/progress of a request is
		// dispatched after the request's response has removed its progress handler
		// (a known race inside the SDK, not a protocol error): ignore it for the
		// token this client sent, count everything else.
		const m = /^Received a progress notification for an unknown token: (.*)$/s.exec(msg);
		if (m) seen.dispatched++;
		// The own flows check these at the end (a cancelled call's late ones, a
		// live server's last one read with the result).
		if (m && own) {
			try {
				seen.unknownProgress.push(JSON.parse(m[1]).params);
				return;
			} catch {
				// fall through: count it
			}
		}
		if (m && longReq && !own) {
			try {
				const n = JSON.parse(m[1]);
				if (n.params && n.params.progressToken === longReq.params._meta.progressToken) return;
			} catch {
				// fall through: count it
			}
		}
		transportErrors.push(msg);
	};
	if (capabilities.sampling)
		client.setRequestHandler(CreateMessageRequestSchema, async () => {
			seen.sampling++;
			return {
				model: SAMPLING_MODEL,
				role: "assistant",
				content: { type: "text", text: SAMPLING_REPLY },
				stopReason: "endTurn",
			};
		});
	if (capabilities.roots)
		client.setRequestHandler(ListRootsRequestSchema, async () => {
			seen.roots++;
			return { roots: ROOTS };
		});
	if (capabilities.elicitation)
		client.setRequestHandler(ElicitRequestSchema, async (req) => {
			seen.elicit.push(req.params);
			if (req.params.mode === "url") return { action: "accept" };
			return { action: "accept", content: { interpretation: flows.ELICIT_CHOICE } };
		});
	if (own) {
		client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
			seen.dispatched++;
			seen.logs.push(n.params);
		});
		client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
			seen.dispatched++;
			seen.updated.push(n.params.uri);
		});
		// Everything else (list_changed, tasks/status...).
		client.fallbackNotificationHandler = async () => {
			seen.dispatched++;
		};
	}

	const reqOpts = { timeout: REQUEST_TIMEOUT_MS };
	let step = "connect";
	const watchdog = setTimeout(() => {
		process.stderr.write(`${PROG}: FAIL: step '${step}' still running after ${WATCHDOG_MS} ms\n`);
		process.exit(1);
	}, WATCHDOG_MS);
	watchdog.unref();

	try {
		// initialize + notifications/initialized
		try {
			await client.connect(transport, reqOpts);
		} catch (e) {
			fail(step, `initialize failed: ${e.message}`);
		}
		const sv = client.getServerVersion();
		const caps = client.getServerCapabilities() || {};
		if (!sv || !sv.name) fail(step, "initialize result has no serverInfo.name");
		process.stderr.write(`${PROG}: connected to ${sv.name} ${sv.version}\n`);

		if (own) {
			const ctx = {
				client, reqOpts, wire, seen, without, lateTokens, allProgress, progressSeen: [], lostLast: new Set(), name: "initialize",
				step: (n) => {
					step = n;
					ctx.name = n;
				},
			};
			// Progress callbacks count as dispatched notifications too.
			const origCall = client.callTool.bind(client);
			client.callTool = (params, schema, opts) =>
				origCall(params, schema, opts && opts.onprogress
					? { ...opts, onprogress: (p) => { seen.dispatched++; opts.onprogress(p); } } : opts);
			const what = await own(ctx);
			step = "progress for no call";
			for (const p of seen.unknownProgress) {
				if (!lateTokens.has(p.progressToken) && !ctx.lostLast.has(`${JSON.stringify(p.progressToken)}:${p.progress}`))
					fail(step, `a notifications/progress for no open call: ${JSON.stringify(p)}`);
			}
			if (transportErrors.length)
				fail("transport", `errors while running: ${transportErrors.join("; ")}`);
			step = "close";
			await client.close();
			clearTimeout(watchdog);
			closeSync(logFd);
			process.stderr.write(`${PROG}: ok: ${counts.c2s} messages sent, ${counts.s2c} received; flow ${flow}: ${what}\n`);
			process.exit(0);
		}

		step = "ping";
		await client.ping(reqOpts);

		step = "tools/list";
		if (!caps.tools) fail(step, "server declares no tools capability");
		let tools = (await client.listTools({}, reqOpts)).tools;
		if (!Array.isArray(tools) || tools.length === 0) fail(step, "no tools listed");
		let samplingTool = pickTool(tools, ["trigger-sampling-request", "sampleLLM"], /sampl/i, /async/i);
		if (!samplingTool) {
			// Tools that depend on client capabilities may be registered (and
			// announced with list_changed) only after initialization: list again.
			await sleep(500);
			tools = (await client.listTools({}, reqOpts)).tools;
			samplingTool = pickTool(tools, ["trigger-sampling-request", "sampleLLM"], /sampl/i, /async/i);
		}
		const echoTool = pickTool(tools, ["echo"], /^echo$/i);
		const longTool = pickTool(
			tools,
			["trigger-long-running-operation", "longRunningOperation"],
			/long.?running/i,
		);
		const names = tools.map((t) => t.name).join(", ");
		if (!echoTool) fail(step, `no echo tool among: ${names}`);
		if (!longTool) fail(step, `no long-running-operation tool among: ${names}`);
		if (!samplingTool) fail(step, `no sampling tool among: ${names}`);

		step = `tools/call ${echoTool}`;
		const echoText = "hello through the tap \u00e9\u4e16 \"quoted\" \\ tab\t";
		const echo = await client.callTool(
			{ name: echoTool, arguments: { message: echoText } },
			CallToolResultSchema,
			reqOpts,
		);
		if (echo.isError) fail(step, `tool error: ${textOf(echo.content)}`);
		if (!textOf(echo.content).includes(echoText))
			fail(step, `result does not echo the message: ${JSON.stringify(echo.content)}`);

		step = `tools/call ${longTool}`;
		const steps = 4;
		const long = await client.callTool(
			{ name: longTool, arguments: { duration: 1, steps } },
			CallToolResultSchema,
			{
				...reqOpts,
				onprogress: (p) => {
					seen.progress.push(p);
				},
			},
		);
		if (long.isError) fail(step, `tool error: ${textOf(long.content)}`);
		// The SDK drops its progress handler when the response arrives, and it may
		// dispatch the last notification after that: the callback must have fired,
		// and every step's notification, with the token the SDK sent, must have
		// come over the wire.
		if (seen.progress.length === 0) fail(step, "the onprogress callback never fired");
		const token = longReq && longReq.params && longReq.params._meta && longReq.params._meta.progressToken;
		if (token === undefined) fail(step, "the request carried no _meta.progressToken");
		const mine = wireProgress.filter((p) => p.progressToken === token);
		if (mine.length !== steps)
			fail(step, `expected ${steps} notifications/progress for token ${JSON.stringify(token)}, got ${mine.length}`);
		if (mine[mine.length - 1].progress !== steps)
			fail(step, `last progress is ${JSON.stringify(mine[mine.length - 1])}, expected progress ${steps}`);

		step = `tools/call ${samplingTool}`;
		const sampled = await client.callTool(
			{ name: samplingTool, arguments: { prompt: "say something for mcptap", maxTokens: 64 } },
			CallToolResultSchema,
			reqOpts,
		);
		if (sampled.isError) fail(step, `tool error: ${textOf(sampled.content)}`);
		if (seen.sampling !== 1)
			fail(step, `expected 1 sampling/createMessage request, got ${seen.sampling}`);
		if (!textOf(sampled.content).includes(SAMPLING_REPLY))
			fail(step, `result does not contain the sampling reply: ${JSON.stringify(sampled.content)}`);

		step = "resources/list";
		if (!caps.resources) fail(step, "server declares no resources capability");
		const resources = (await client.listResources({}, reqOpts)).resources;
		if (!Array.isArray(resources) || resources.length === 0) fail(step, "no resources listed");

		const res = resources.find((r) => r.mimeType && r.mimeType.startsWith("text/")) || resources[0];
		step = `resources/read ${res.uri}`;
		const read = await client.readResource({ uri: res.uri }, reqOpts);
		if (!Array.isArray(read.contents) || read.contents.length === 0) fail(step, "no contents");
		if (read.contents[0].uri !== res.uri)
			fail(step, `contents[0].uri is ${read.contents[0].uri}`);
		if (typeof read.contents[0].text !== "string" && typeof read.contents[0].blob !== "string")
			fail(step, "contents[0] has neither text nor blob");

		step = "resources/templates/list";
		const templates = (await client.listResourceTemplates({}, reqOpts)).resourceTemplates;
		if (!Array.isArray(templates)) fail(step, "no resourceTemplates array");

		step = "prompts/list";
		if (!caps.prompts) fail(step, "server declares no prompts capability");
		const prompts = (await client.listPrompts({}, reqOpts)).prompts;
		if (!Array.isArray(prompts) || prompts.length === 0) fail(step, "no prompts listed");
		const noArgs = (p) => !(p.arguments || []).some((a) => a.required);
		const prompt =
			prompts.find((p) => /simple/i.test(p.name) && noArgs(p)) || prompts.find(noArgs);
		if (!prompt) fail(step, "no prompt without required arguments");

		step = `prompts/get ${prompt.name}`;
		const got = await client.getPrompt({ name: prompt.name }, reqOpts);
		if (!Array.isArray(got.messages) || got.messages.length === 0) fail(step, "no messages");

		if (flow === "wide") {
			const done = new Set([echoTool, longTool, samplingTool]);
			const sample = (schema) => {
				const out = {};
				const props = (schema && schema.properties) || {};
				for (const k of (schema && schema.required) || []) {
					const p = props[k] || {};
					out[k] = p.enum ? p.enum[0] : p.default !== undefined ? p.default
						: p.type === "number" || p.type === "integer" ? 1
						: p.type === "boolean" ? false : p.type === "array" ? [] : p.type === "object" ? {} : "x";
				}
				return out;
			};
			// Tools that wait on the client or run long are left out.
			const skip = /research|roots|elicit|sampl|long.?running|toggle/i;
			for (const t of tools) {
				if (done.has(t.name) || skip.test(t.name)) continue;
				step = `tools/call ${t.name}`;
				try {
					await client.callTool({ name: t.name, arguments: sample(t.inputSchema) },
						CallToolResultSchema, reqOpts);
				} catch (e) {
					// An error answer is an answer: replay compares it too.
				}
			}
		}

		step = "roots/list";
		// server-everything asks for the roots shortly after initialization; the
		// flow above takes longer than that, but wait a little in case it is late.
		for (let i = 0; i < 20 && seen.roots === 0; i++) await sleep(100);
		if (seen.roots === 0) fail(step, "the server never sent roots/list");

		if (transportErrors.length)
			fail("transport", `errors while running: ${transportErrors.join("; ")}`);

		step = "close";
		await client.close();
		clearTimeout(watchdog);
		closeSync(logFd);
		process.stderr.write(
			`${PROG}: ok: ${counts.c2s} messages sent, ${counts.s2c} received; ` +
				`tools ${echoTool}, ${longTool} (${seen.progress.length} progress), ${samplingTool}\n`,
		);
		process.exit(0);
	} catch (e) {
		const msg = e instanceof StepError ? e.message : `${step}: ${e && e.message ? e.message : e}`;
		process.stderr.write(`${PROG}: FAIL: ${msg}\n`);
		try {
			await Promise.race([client.close(), sleep(3000)]);
		} catch {
			// ignore: already failing
		}
		process.exit(1);
	}
}

main().catch((e) => {
	process.stderr.write(`${PROG}: FAIL: ${e && e.stack ? e.stack : e}\n`);
	process.exit(1);
});
