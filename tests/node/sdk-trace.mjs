#!/usr/bin/env node
// tests/node/sdk-trace.mjs - the official SDK client's own trace of the bytes it
// sent and read over stdio, for comparing with what mcptap shows (t0336).
//
// Usage: node sdk-trace.mjs TRACE -- CMD ARGS...
//
// Spawns CMD ARGS as an MCP server (server-everything, or `mcptap record ... --`
// in front of it) through the SDK's StdioClientTransport, and runs: initialize
// (+ notifications/initialized), tools/call get-sum with a = 0.1 and b = 0.7
// (numbers a JSON library that prints doubles in full writes otherwise), and
// tools/call echo with a message holding escapes and non-ASCII text. TRACE gets
// one line per message, in order: "c2s " and the exact line the SDK wrote (its
// serializeMessage: JSON.stringify), or "s2c " and the exact line it read from
// the server's standard output (taken off the pipe beside the SDK's own reader).
import fs from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const dd = argv.indexOf("--");
if (dd !== 1 || argv.length < 3) {
	console.error("usage: sdk-trace.mjs TRACE -- CMD ARGS...");
	process.exit(2);
}
const trace = fs.openSync(argv[0], "w");
const transport = new StdioClientTransport({ command: argv[2], args: argv.slice(3), stderr: "inherit" });
const send = transport.send.bind(transport);
transport.send = (message, options) => {
	fs.writeSync(trace, "c2s " + JSON.stringify(message) + "\n");
	return send(message, options);
};
const start = transport.start.bind(transport);
let partial = "";
transport.start = async () => {
	await start();
	transport._process.stdout.on("data", (chunk) => {
		partial += chunk.toString("utf8");
		let nl;
		while ((nl = partial.indexOf("\n")) >= 0) {
			fs.writeSync(trace, "s2c " + partial.slice(0, nl) + "\n");
			partial = partial.slice(nl + 1);
		}
	});
};
const client = new Client({ name: "sdk-trace", version: "1.0.0" });
await client.connect(transport);
const sum = await client.callTool({ name: "get-sum", arguments: { a: 0.1, b: 0.7 } });
if (!JSON.stringify(sum).includes("0.7999999999999999")) throw new Error("get-sum: " + JSON.stringify(sum));
const echo = await client.callTool({ name: "echo", arguments: { message: "é \"quoted\" \\ tab\t €" } });
if (!JSON.stringify(echo).includes("quoted")) throw new Error("echo: " + JSON.stringify(echo));
await client.close();
fs.closeSync(trace);
