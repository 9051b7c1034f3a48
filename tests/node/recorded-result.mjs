// tests/node/recorded-result.mjs - does a client's output equal a recorded result?
//
// Usage: node recorded-result.mjs LOG METHOD PREDICATE OUT
//
// LOG is an sdk-client.mjs log; the first METHOD request in it whose params
// satisfy PREDICATE (a JS expression on p, the params; empty: any) has a recorded
// result. OUT holds the JSON a client printed for the same request (the inspector
// CLI prints the result it got). Both must be equal once the recorded result is
// parsed by the SDK schema for METHOD, as the client's SDK parsed the live one.
// Exit 0 when equal, 1 (and both, cut short, on stderr) otherwise.
import { readFileSync } from "node:fs";
import * as types from "@modelcontextprotocol/sdk/types.js";
const [log, method, pred, out] = process.argv.slice(2);
const schema = {
	"tools/list": types.ListToolsResultSchema, "tools/call": types.CallToolResultSchema,
	"resources/list": types.ListResourcesResultSchema, "resources/read": types.ReadResourceResultSchema,
	"prompts/list": types.ListPromptsResultSchema, "prompts/get": types.GetPromptResultSchema,
}[method];
const recs = readFileSync(log, "utf8").trim().split("\n").map(JSON.parse);
const test = pred ? new Function("p", `return (${pred});`) : () => true;
const req = recs.find((r) => r.dir === "c2s" && r.message.method === method && test(r.message.params || {}));
const res = req && recs.find((r) => r.dir === "s2c" && !r.message.method && r.message.id === req.message.id);
if (!res) { console.error(`no recorded ${method}`); process.exit(1); }
const want = schema.parse(res.message.result);
let got;
try { got = JSON.parse(readFileSync(out, "utf8")); } catch (e) { console.error(`# inspector output: ${e.message}`); process.exit(1); }
if (JSON.stringify(got) !== JSON.stringify(want)) {
	console.error(`# expected ${JSON.stringify(want).slice(0, 300)}\n# got      ${JSON.stringify(got).slice(0, 300)}`);
	process.exit(1);
}
