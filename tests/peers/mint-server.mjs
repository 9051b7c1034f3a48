#!/usr/bin/env node
// tests/peers/mint-server.mjs - an MCP server over stdio that mints values anew on
// every run, for the tests of `mcptap replay --as client`. Plain JSON-RPC lines, no SDK.
//
// Tools:
//   echo {text}      the text back
//   start            a task: result.task {taskId (random), status, createdAt (now)}
//   status {taskId}  result.task {taskId, status}: "working" for the task's first
//                    1000 ms, "completed" after; error -32602 "Task not found" for an
//                    id it never minted
//   clock            the current time as text
//   slow             answers after 1500 ms, unless notifications/cancelled named it
//   version          "version $MINT_VERSION" (default 1)
// resources/list pages: the first page names a random nextCursor; only that cursor
// gives the second page.
// Environment: MINT_VERSION; MINT_REORDER=1 lists the tools in reverse order.
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";

const version = process.env.MINT_VERSION || "1";
const tools = ["echo", "start", "status", "clock", "slow", "version"].map((name) => ({
	name,
	inputSchema: { type: "object" },
}));
if (process.env.MINT_REORDER === "1") tools.reverse();
const cursor = `cur-${randomUUID()}`;
const tasks = new Map();
const cancelled = new Set();
const timers = new Set();

const send = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
const text = (t) => ({ content: [{ type: "text", text: t }] });

function call(msg, ok, fail) {
	const args = (msg.params && msg.params.arguments) || {};
	switch (msg.params && msg.params.name) {
	case "echo":
		return ok(text(String(args.text)));
	case "start": {
		const taskId = `task-${randomUUID()}`;
		tasks.set(taskId, Date.now());
		return ok({ task: { taskId, status: "working", createdAt: new Date().toISOString() } });
	}
	case "status": {
		const t = tasks.get(args.taskId);
		if (t === undefined) return fail(-32602, "Task not found");
		return ok({ task: { taskId: args.taskId, status: Date.now() - t >= 1000 ? "completed" : "working" } });
	}
	case "clock":
		return ok(text(new Date().toISOString()));
	case "slow": {
		const key = JSON.stringify(msg.id);
		const timer = setTimeout(() => {
			timers.delete(timer);
			if (!cancelled.has(key)) ok(text("slow done"));
		}, 1500);
		timers.add(timer);
		return undefined;
	}
	case "version":
		return ok(text(`version ${version}`));
	default:
		return fail(-32602, "Unknown tool");
	}
}

createInterface({ input: process.stdin }).on("line", (line) => {
	let msg;
	try {
		msg = JSON.parse(line);
	} catch {
		return send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
	}
	if (msg.method === "notifications/cancelled") {
		cancelled.add(JSON.stringify(msg.params && msg.params.requestId));
		return undefined;
	}
	if (msg.id === undefined || !msg.method) return undefined;
	const ok = (result) => send({ jsonrpc: "2.0", id: msg.id, result });
	const fail = (code, message) => send({ jsonrpc: "2.0", id: msg.id, error: { code, message } });
	switch (msg.method) {
	case "initialize":
		return ok({
			protocolVersion: msg.params.protocolVersion,
			capabilities: { tools: {}, resources: {} },
			serverInfo: { name: "mint-server", version: "1.0.0" },
		});
	case "ping":
		return ok({});
	case "tools/list":
		return ok({ tools });
	case "tools/call":
		return call(msg, ok, fail);
	case "resources/list":
		if (!msg.params || msg.params.cursor === undefined)
			return ok({ resources: [{ uri: "mint://1", name: "one" }, { uri: "mint://2", name: "two" }], nextCursor: cursor });
		if (msg.params.cursor === cursor) return ok({ resources: [{ uri: "mint://3", name: "three" }] });
		return fail(-32602, "Invalid cursor");
	default:
		return fail(-32601, "Method not found");
	}
}).on("close", () => {
	for (const t of timers) clearTimeout(t);
	process.exit(0);
});
