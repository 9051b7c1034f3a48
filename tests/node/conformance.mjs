#!/usr/bin/env node
// tests/node/conformance.mjs - runs the pinned conformance suite's CLI
// (@modelcontextprotocol/conformance, its bin dist/index.js) on the Node this
// project's machines have (20).
//
// Usage: node conformance.mjs ARGS...   (ARGS as for `conformance`, e.g.
//        server --url URL [--scenario NAME] [--spec-version V])
//
// The suite's bundle imports globSync from node:fs, which Node 22 added; on
// Node 20 the import alone fails, although only its tier-check command calls
// it. A module resolve hook (conformance-hooks.mjs) gives that bundle, and only
// it, node:fs plus a globSync that throws when called. Nothing else of the suite
// is changed: its scenarios, client and checks run as published.
import { register } from "node:module";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";

const require = createRequire(import.meta.url);
const dir = path.dirname(require.resolve("@modelcontextprotocol/conformance/package.json"));
const pkg = require("@modelcontextprotocol/conformance/package.json");
const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin.conformance;

register("./conformance-hooks.mjs", import.meta.url);
await import(pathToFileURL(path.resolve(dir, bin)).href);
