#!/usr/bin/env node
// tests/node/die-after.mjs - a server that dies in the middle of a session, for
// mcptap's bad-input tests.
//
// Usage: node die-after.mjs TEXT STATUS -- CMD ARGS...
//
// Runs CMD ARGS as the real server, relaying stdin to it and its stdout back
// byte for byte. Once the first line holding TEXT has gone to the server, it
// waits 300 ms (so the answers to what came before can come back), then kills
// the server and exits with STATUS: that line's request is left unanswered
// when the server takes longer than that to answer it.
import { spawn } from "node:child_process";

const [text, status, sep, ...cmd] = process.argv.slice(2);
if (!text || !/^\d+$/.test(status || "") || sep !== "--" || cmd.length === 0) {
	process.stderr.write("usage: node die-after.mjs TEXT STATUS -- CMD ARGS...\n");
	process.exit(2);
}
const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
let pending = Buffer.alloc(0); // the start of a line not yet complete
let dying = false;
child.stdout.on("data", (b) => process.stdout.write(b));
process.stdin.on("data", (b) => {
	if (dying) return;
	let cut = b.length;
	let start = 0;
	for (let i = 0; i < b.length; i++) {
		if (b[i] !== 0x0a) continue;
		const line = Buffer.concat([pending, b.subarray(start, i)]);
		pending = Buffer.alloc(0);
		start = i + 1;
		if (line.includes(text)) {
			cut = i + 1;
			dying = true;
			break;
		}
	}
	if (!dying) pending = Buffer.concat([pending, b.subarray(start)]);
	child.stdin.write(b.subarray(0, cut));
	if (dying) {
		setTimeout(() => {
			child.kill("SIGKILL");
			process.stderr.write(`die-after: killed the server after the line with '${text}'; exiting ${status}\n`);
			process.stdout.write("", () => process.exit(Number(status)));
		}, 300);
	}
});
process.stdin.on("end", () => {
	if (!dying) child.stdin.end();
});
child.on("exit", (code, sig) => {
	if (!dying) process.exit(code === null ? 128 + 9 : code);
});
