// tests/node/mock-report.test.mjs - a client's test against mcptap's mock server.
//
// The server was recorded once (a client calling its echo tool):
//   mcptap record -w echo.db -- npx @modelcontextprotocol/server-everything
// The test runs the client under test against the recording, then checks the
// mock's report: every request had a recorded answer, every recording was used.
//
//   MCPTAP_FILE=echo.db node --test mock-report.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const mcptap = process.env.MCPTAP ?? "mcptap";
const capture = process.env.MCPTAP_FILE ?? "echo.db";

test("my client against the recorded server", async () => {
	const report = join(mkdtempSync(join(tmpdir(), "mock-")), "report.json");
	const mock = new StdioClientTransport({
		command: mcptap,
		args: ["replay", "-r", capture, "--as", "server", "--report", report],
	});
	const client = new Client({ name: "my-client", version: "0.1.0" });
	await client.connect(mock);

	const result = await client.callTool({ name: "echo", arguments: { message: "hello" } });
	assert.equal(result.content[0].text, "Echo: hello");
	await client.close(); // the mock writes its report when the client is gone

	const r = JSON.parse(readFileSync(report, "utf8"));
	assert.deepEqual(r.misses, []); // no request without a recorded answer
	assert.deepEqual(r.unused, []); // no recorded request left unasked
	assert.equal(r.requests, 2); // initialize and tools/call
	assert.equal(r.answered, 2);
	assert.equal(r.ok, true);
});
