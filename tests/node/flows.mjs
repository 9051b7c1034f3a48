// tests/node/flows.mjs - the "full", "long" and "memory" flows of sdk-client.mjs.
//
// Each flow runs against a live server (server-everything or server-memory,
// pinned in package-lock.json) AND against `mcptap replay --as server` playing a
// recording of that same flow, so every request has fixed arguments (the SDK's own
// request ids and progress tokens aside) and every step checks exact values.
//
// Besides each answer, every step checks the order of what came before it: a
// notification the wire delivered before an answer must have reached its handler
// by the time the answer resolves the call (ctx.call below), and every progress
// notification of a call must have fired the call's progress callback.
//
// ctx (from sdk-client.mjs): client, reqOpts, wire (every {dir, message} so far),
// seen (what the client's handlers saw), without (capabilities not declared),
// step(name), lateTokens (progress tokens of cancelled requests), allProgress
// (--all-progress: every progress notification must fire its callback),
// progressSeen (callbacks/steps of each progress call, for the summary line).

import { gunzipSync } from "node:zlib";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";

class StepError extends Error {}
export { StepError };

export function fail(step, msg) {
	throw new StepError(`${step}: ${msg}`);
}

export function textOf(content) {
	if (!Array.isArray(content)) return "";
	return content
		.filter((c) => c && c.type === "text" && typeof c.text === "string")
		.map((c) => c.text)
		.join("\n");
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function eq(ctx, what, expected, actual) {
	const e = JSON.stringify(expected);
	const a = JSON.stringify(actual);
	if (e !== a) fail(ctx.name, `${what}: expected ${e}, got ${a}`);
}

// Runs fn (one or more requests) and checks that every notification received on
// the wire before the last answer to those requests was dispatched to a handler
// before fn's promise resolved.
async function call(ctx, name, fn) {
	ctx.step(name);
	const mark = ctx.wire.length;
	const result = await fn();
	const ids = new Set(
		ctx.wire.slice(mark).filter((r) => r.dir === "c2s" && r.message.method && r.message.id !== undefined)
			.map((r) => JSON.stringify(r.message.id)),
	);
	let last = -1;
	ctx.wire.forEach((r, i) => {
		if (r.dir === "s2c" && !r.message.method && ids.has(JSON.stringify(r.message.id))) last = i;
	});
	if (last >= 0) {
		const before = ctx.wire.slice(0, last).filter((r) => r.dir === "s2c" && r.message.method && r.message.id === undefined).length;
		if (ctx.seen.dispatched < before)
			fail(name, `${before} notifications came before the answer, only ${ctx.seen.dispatched} reached a handler before it resolved`);
	}
	return result;
}

// A tools/call with a progress callback: every notifications/progress of the
// call must fire the callback, in order, before the result.
async function progressCall(ctx, name, args, expectSteps) {
	const got = [];
	const res = await call(ctx, `tools/call ${name} ${JSON.stringify(args)}`, () =>
		ctx.client.callTool({ name, arguments: args }, CallToolResultSchema, {
			...ctx.reqOpts,
			onprogress: (p) => got.push(p),
		}),
	);
	const req = [...ctx.wire].reverse().find((r) => r.dir === "c2s" && r.message.method === "tools/call" && r.message.params.name === name);
	const token = req.message.params._meta && req.message.params._meta.progressToken;
	if (token === undefined) fail(ctx.name, "the request carried no _meta.progressToken");
	const wire = ctx.wire.filter((r) => r.dir === "s2c" && r.message.method === "notifications/progress" && r.message.params.progressToken === token);
	eq(ctx, "notifications/progress on the wire", expectSteps, wire.length);
	// A live server writes its last notification and the result at once, and the
	// SDK drops a notification read together with its call's result: live, the
	// last callback may be lost. A mock (--all-progress) must deliver them all.
	const want = Array.from({ length: expectSteps }, (_, i) => [i + 1, expectSteps]);
	if (ctx.allProgress || got.length !== expectSteps - 1)
		eq(ctx, "progress callbacks fired before the result", expectSteps, got.length);
	eq(ctx, "progress values", want.slice(0, got.length), got.map((p) => [p.progress, p.total]));
	ctx.progressSeen.push(`${got.length}/${expectSteps}`);
	if (got.length === expectSteps - 1) ctx.lostLast.add(`${JSON.stringify(token)}:${expectSteps}`);
	eq(ctx, "result", `Long running operation completed. Duration: ${args.duration} seconds, Steps: ${args.steps}.`, textOf(res.content));
	return res;
}

// ---- server-everything 2026.8.31 ----

// With sampling, roots and elicitation (form and url) declared. A --without
// client runs against the mock of a recording made with all of them, so its
// lists are the same.
export const EVERYTHING_TOOLS = [
	"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
	"get-roots-list", "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
	"simulate-research-query", "toggle-simulated-logging", "toggle-subscriber-updates",
	"trigger-elicitation-request", "trigger-long-running-operation",
	"trigger-sampling-request", "trigger-url-elicitation",
];
export const SAMPLING_REPLY = "mcptap fixed sampling reply: the tap sees everything";
export const ELICIT_CHOICE = "snake";
const ECHO_TEXT = "hello through the tap \u00e9\u4e16 \"quoted\" \\ tab\t";
const CANCEL_REASON = "mcptap e2e: cancelled after the first progress";
const URL_ELICIT = { url: "https://example.com/mcptap-consent", message: "mcptap e2e: open this link" };
const GZ_TEXT = "mcptap gzip test: the same bytes every run\n";

export async function full(ctx) {
	const { client, reqOpts, seen } = ctx;
	const has = (c) => !ctx.without.has(c);
	const caps = client.getServerCapabilities() || {};
	eq(ctx, "server capabilities", ["completions", "logging", "prompts", "resources", "tasks", "tools"], Object.keys(caps).sort());

	await call(ctx, "ping", () => client.ping(reqOpts));
	await call(ctx, "logging/setLevel debug", () => client.setLoggingLevel("debug", reqOpts));

	const tools = (await call(ctx, "tools/list", () => client.listTools({}, reqOpts))).tools;
	eq(ctx, "tool names", EVERYTHING_TOOLS, tools.map((t) => t.name).sort());

	const echo = await call(ctx, "tools/call echo", () => client.callTool({ name: "echo", arguments: { message: ECHO_TEXT } }, CallToolResultSchema, reqOpts));
	eq(ctx, "echo", `Echo: ${ECHO_TEXT}`, textOf(echo.content));

	await progressCall(ctx, "trigger-long-running-operation", { duration: 1, steps: 4 }, 4);

	// A cancelled request: abort after the first progress notification.
	{
		const name = "tools/call trigger-long-running-operation (cancelled)";
		ctx.step(name);
		const ac = new AbortController();
		let fired = 0;
		let err = null;
		try {
			await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 2, steps: 4 } }, CallToolResultSchema, {
				...reqOpts,
				signal: ac.signal,
				onprogress: () => {
					if (fired++ === 0) ac.abort(CANCEL_REASON);
				},
			});
		} catch (e) {
			err = e;
		}
		if (!err) fail(name, "the aborted call resolved");
		if (fired !== 1) fail(name, `progress callbacks before the abort: expected 1, got ${fired} (the call ended: ${err.message})`);
		const req = [...ctx.wire].reverse().find((r) => r.dir === "c2s" && r.message.method === "tools/call");
		const cancels = ctx.wire.filter((r) => r.dir === "c2s" && r.message.method === "notifications/cancelled");
		eq(ctx, "notifications/cancelled sent", [{ requestId: req.message.id, reason: CANCEL_REASON }], cancels.map((r) => r.message.params));
		ctx.cancelled = { token: req.message.params._meta.progressToken, late: 3 };
		ctx.lateTokens.add(req.message.params._meta.progressToken);
	}

	if (caps.tools) {
		const r = await call(ctx, "tools/call trigger-sampling-request", () =>
			client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "say something for mcptap", maxTokens: 64 } }, CallToolResultSchema, reqOpts));
		eq(ctx, "sampling/createMessage requests received", has("sampling") ? 1 : 0, seen.sampling);
		eq(ctx, "sampling/createMessage on the wire", has("sampling") ? 1 : 0, ctx.wire.filter((x) => x.dir === "s2c" && x.message.method === "sampling/createMessage").length);
		if (!textOf(r.content).includes(SAMPLING_REPLY)) fail(ctx.name, `no sampling reply in ${JSON.stringify(r.content)}`);
	}

	// A task: simulate-research-query, ambiguous, so the server asks (elicitation/create,
	// delivered through tasks/result) which interpretation is meant.
	{
		const topic = "python";
		const created = await call(ctx, "tools/call simulate-research-query (task)", () =>
			client.request({ method: "tools/call", params: { name: "simulate-research-query", arguments: { topic, ambiguous: true } } },
				CreateTaskResultSchema, { ...reqOpts, task: { ttl: 60000 } }));
		const taskId = created.task && created.task.taskId;
		if (typeof taskId !== "string" || !taskId) fail(ctx.name, `no task id in ${JSON.stringify(created)}`);
		eq(ctx, "created task status", "working", created.task.status);
		// Poll half-way between the server's 1 s stages: working, working, then
		// input_required (the clarification question at the third stage).
		await sleep(500);
		const statuses = [];
		for (let i = 0; i < 10; i++) {
			const t = await call(ctx, "tasks/get", () => client.experimental.tasks.getTask(taskId, reqOpts));
			statuses.push(t.status);
			if (t.status !== "working") break;
			await sleep(1000);
		}
		if (statuses[statuses.length - 1] !== "input_required" || statuses.slice(0, -1).some((s) => s !== "working"))
			fail(ctx.name, `task statuses ${JSON.stringify(statuses)}: expected working... then input_required`);
		const res = await call(ctx, "tasks/result", () => client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, reqOpts));
		eq(ctx, "elicitation/create requests (form)", [`The research query "${topic}" could have multiple interpretations. Please clarify what you're looking for:`],
			seen.elicit.filter((e) => e.mode !== "url").map((e) => e.message));
		const text = textOf(res.content);
		if (!text.includes(`- **Clarification**: ${ELICIT_CHOICE}`) || !text.startsWith(`# Research Report: ${topic} (${ELICIT_CHOICE})`))
			fail(ctx.name, `the report does not carry the clarification '${ELICIT_CHOICE}': ${text.slice(0, 200)}`);
		const done = await call(ctx, "tasks/get (done)", () => client.experimental.tasks.getTask(taskId, reqOpts));
		eq(ctx, "final task status", "completed", done.status);
	}

	// URL elicitation: the server mints the elicitation id.
	{
		const r = await call(ctx, "tools/call trigger-url-elicitation", () =>
			client.callTool({ name: "trigger-url-elicitation", arguments: URL_ELICIT }, CallToolResultSchema, reqOpts));
		const urls = seen.elicit.filter((e) => e.mode === "url");
		eq(ctx, "url elicitations", [[URL_ELICIT.url, URL_ELICIT.message]], urls.map((e) => [e.url, e.message]));
		const id = urls[0].elicitationId;
		eq(ctx, "url elicitation result", `\u2705 User completed the URL elicitation flow.\nElicitation ID: ${id}\nURL: ${URL_ELICIT.url}`,
			r.content[0] && r.content[0].text);
	}

	// resources/list, following nextCursor to the end.
	const resources = [];
	{
		let cursor;
		let pages = 0;
		do {
			const page = await call(ctx, `resources/list${cursor ? " (cursor)" : ""}`, () => client.listResources(cursor ? { cursor } : {}, reqOpts));
			resources.push(...page.resources);
			cursor = page.nextCursor;
			pages++;
		} while (cursor && pages < 100);
		eq(ctx, "resources listed", 7, resources.length);
	}
	const res = resources.find((r) => r.mimeType && r.mimeType.startsWith("text/")) || resources[0];
	const read = await call(ctx, `resources/read ${res.uri}`, () => client.readResource({ uri: res.uri }, reqOpts));
	eq(ctx, "resources/read contents[0].uri", res.uri, read.contents[0] && read.contents[0].uri);
	if (typeof read.contents[0].text !== "string" || !read.contents[0].text) fail(ctx.name, "no text");

	// resources/subscribe: the server logs it, before its answer.
	const logsBefore = seen.logs.length;
	await call(ctx, `resources/subscribe ${res.uri}`, () => client.subscribeResource({ uri: res.uri }, reqOpts));
	eq(ctx, "log messages the subscription sent", [`Received Subscribe Resource request for URI: ${res.uri} `],
		seen.logs.slice(logsBefore).map((l) => l.data).filter((d) => /Subscribe/.test(d)));
	await call(ctx, `resources/unsubscribe ${res.uri}`, () => client.unsubscribeResource({ uri: res.uri }, reqOpts));

	const templates = (await call(ctx, "resources/templates/list", () => client.listResourceTemplates({}, reqOpts))).resourceTemplates;
	eq(ctx, "resource templates", 2, templates.length);

	const prompts = (await call(ctx, "prompts/list", () => client.listPrompts({}, reqOpts))).prompts;
	eq(ctx, "prompts listed", 4, prompts.length);
	const got = await call(ctx, "prompts/get simple-prompt", () => client.getPrompt({ name: "simple-prompt" }, reqOpts));
	eq(ctx, "simple-prompt", "This is a simple prompt without arguments.", got.messages[0] && got.messages[0].content.text);

	const env = await call(ctx, "tools/call get-env", () => client.callTool({ name: "get-env", arguments: {} }, CallToolResultSchema, reqOpts));
	if (!("PATH" in JSON.parse(textOf(env.content)))) fail(ctx.name, "get-env has no PATH");

	const ref = await call(ctx, "tools/call get-resource-reference", () =>
		client.callTool({ name: "get-resource-reference", arguments: { resourceType: "Text", resourceId: 2 } }, CallToolResultSchema, reqOpts));
	eq(ctx, "get-resource-reference", ["Returning resource reference for Resource 2:", "demo://resource/dynamic/text/2"],
		[ref.content[0].text, ref.content[1].resource.uri]);

	// gzip-file-as-resource from a data: URI (no network), then read the resource back.
	{
		const data = "data:text/plain;base64," + Buffer.from(GZ_TEXT).toString("base64");
		const r = await call(ctx, "tools/call gzip-file-as-resource", () =>
			client.callTool({ name: "gzip-file-as-resource", arguments: { name: "mcptap.txt.gz", data, outputType: "resourceLink" } }, CallToolResultSchema, reqOpts));
		eq(ctx, "gzip resource link", ["resource_link", "demo://resource/session/mcptap.txt.gz"], [r.content[0].type, r.content[0].uri]);
		const rr = await call(ctx, "resources/read gzip", () => client.readResource({ uri: r.content[0].uri }, reqOpts));
		eq(ctx, "gunzipped resource", GZ_TEXT, gunzipSync(Buffer.from(rr.contents[0].blob, "base64")).toString());
	}

	// What the server sent on its own: roots/list (asked once after initialization,
	// when the client declares roots) and the log message that follows the answer.
	ctx.step("roots/list");
	for (let i = 0; i < 20 && has("roots") && seen.roots === 0; i++) await sleep(100);
	eq(ctx, "roots/list requests", has("roots") ? 1 : 0, seen.roots);
	eq(ctx, "roots/list on the wire", has("roots") ? 1 : 0, ctx.wire.filter((x) => x.dir === "s2c" && x.message.method === "roots/list").length);
	if (has("roots")) {
		for (let i = 0; i < 20 && !seen.logs.some((l) => /^Roots updated/.test(l.data)); i++) await sleep(100);
		eq(ctx, "the roots log message", ["Roots updated: 1 root(s) received from client"], seen.logs.map((l) => l.data).filter((d) => /^Roots/.test(d)));
	}

	// The cancelled call's server went on: its last 3 progress notifications came
	// after the cancellation (the SDK reports them as for an unknown token).
	ctx.step("late progress of the cancelled call");
	const late = () => ctx.wire.filter((r) => r.dir === "s2c" && r.message.method === "notifications/progress" && r.message.params.progressToken === ctx.cancelled.token).length - 1;
	for (let i = 0; i < 30 && late() < ctx.cancelled.late; i++) await sleep(100);
	eq(ctx, "late progress notifications of the cancelled call", ctx.cancelled.late, late());
	return `progress ${ctx.progressSeen.join(" ")}, ${seen.elicit.length} elicitations, ${resources.length} resources`;
}

// The long one: 10 s, 5 steps.
export async function long(ctx) {
	await progressCall(ctx, "trigger-long-running-operation", { duration: 10, steps: 5 }, 5);
	return `progress ${ctx.progressSeen.join(" ")}`;
}

// ---- server-memory 2026.8.31 (MEMORY_FILE_PATH names its store) ----

const MEM_TOOLS = ["add_observations", "create_entities", "create_relations", "delete_entities", "delete_observations",
	"delete_relations", "open_nodes", "read_graph", "search_nodes"];

export async function memory(ctx) {
	const { client, reqOpts, seen } = ctx;
	const tool = async (name, args) => {
		const r = await call(ctx, `tools/call ${name}`, () => client.callTool({ name, arguments: args }, CallToolResultSchema, reqOpts));
		if (r.isError) fail(ctx.name, `tool error: ${textOf(r.content)}`);
		return r;
	};
	const graph = async (name, args) => (await tool(name, args)).structuredContent;
	const tools = (await call(ctx, "tools/list", () => client.listTools({}, reqOpts))).tools;
	eq(ctx, "tool names", MEM_TOOLS, tools.map((t) => t.name).sort());

	const start = await graph("read_graph", {});
	eq(ctx, "the store starts empty", { entities: [], relations: [] }, start);

	const uri = "memory://knowledge-graph";
	await call(ctx, "resources/subscribe", () => client.subscribeResource({ uri }, reqOpts));
	const updated = () => seen.updated.filter((u) => u === uri).length;

	const ada = { name: "Ada", entityType: "person", observations: ["wrote the first program"] };
	const engine = { name: "Analytical Engine", entityType: "machine", observations: ["designed by Babbage"] };
	eq(ctx, "create_entities", { entities: [ada, engine] }, await graph("create_entities", { entities: [ada, engine] }));
	eq(ctx, "resources/updated before the answer", 1, updated());
	eq(ctx, "create_entities again: nothing new", { entities: [] }, await graph("create_entities", { entities: [ada] }));
	eq(ctx, "add_observations", { results: [{ entityName: "Ada", addedObservations: ["born 1815"] }] },
		await graph("add_observations", { observations: [{ entityName: "Ada", contents: ["born 1815", "wrote the first program"] }] }));
	const rel = { from: "Ada", to: "Analytical Engine", relationType: "programmed" };
	eq(ctx, "create_relations", { relations: [rel] }, await graph("create_relations", { relations: [rel] }));
	const adaNow = { ...ada, observations: ["wrote the first program", "born 1815"] };
	eq(ctx, "read_graph", { entities: [adaNow, engine], relations: [rel] }, await graph("read_graph", {}));
	eq(ctx, "search_nodes Babbage", { entities: [engine], relations: [rel] }, await graph("search_nodes", { query: "Babbage" }));
	eq(ctx, "open_nodes Ada", { entities: [adaNow], relations: [rel] }, await graph("open_nodes", { names: ["Ada"] }));
	const rd = await call(ctx, "resources/read", () => client.readResource({ uri }, reqOpts));
	eq(ctx, "the graph resource", { entities: [adaNow, engine], relations: [rel] }, JSON.parse(rd.contents[0].text));

	eq(ctx, "delete_observations", { success: true, message: "Observations deleted successfully" },
		await graph("delete_observations", { deletions: [{ entityName: "Ada", observations: ["born 1815"] }] }));
	eq(ctx, "delete_relations", { success: true, message: "Relations deleted successfully" },
		await graph("delete_relations", { relations: [rel] }));
	eq(ctx, "open_nodes after the deletions", { entities: [ada], relations: [] }, await graph("open_nodes", { names: ["Ada"] }));
	// The store ends empty, so the next run (verify's second) starts as this one did.
	eq(ctx, "delete_entities", { success: true, message: "Entities deleted successfully" },
		await graph("delete_entities", { entityNames: ["Ada", "Analytical Engine"] }));
	eq(ctx, "the store ends empty", { entities: [], relations: [] }, await graph("read_graph", {}));
	await call(ctx, "resources/unsubscribe", () => client.unsubscribeResource({ uri }, reqOpts));
	eq(ctx, "resources/updated notifications (one per change)", 7, updated());
	return `memory: ${updated()} resources/updated`;
}

// The smallest: one echo call (the recording mock-report.test.mjs runs against).
export async function echo(ctx) {
	const r = await call(ctx, "tools/call echo", () =>
		ctx.client.callTool({ name: "echo", arguments: { message: "hello" } }, CallToolResultSchema, ctx.reqOpts));
	eq(ctx, "echo", "Echo: hello", textOf(r.content));
	return "echo";
}
