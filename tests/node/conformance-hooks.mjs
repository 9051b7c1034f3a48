// tests/node/conformance-hooks.mjs - module hooks for conformance.mjs (registered
// by it; not run by itself): node:fs with a globSync for the conformance
// suite's bundle on a Node older than 22. Other modules get node:fs unchanged.
const SHIM = "data:text/javascript," + encodeURIComponent(`
import fs from "node:fs";
export * from "node:fs";
export default fs;
export const globSync = fs.globSync ?? (() => {
	throw new Error("fs.globSync needs Node 22 (only the conformance suite's tier-check uses it)");
});`);

export async function resolve(specifier, context, next) {
	if ((specifier === "fs" || specifier === "node:fs") &&
	    context.parentURL && context.parentURL.includes("/@modelcontextprotocol/conformance/"))
		return { url: SHIM, shortCircuit: true };
	return next(specifier, context);
}
