#!/bin/sh
# t0501-sdk-direct: the control for t0500. The official SDK client (tests/node/
# sdk-client.mjs) runs its whole flow against the official server-everything
# directly, with no mcptap in between: proves the flow and the pinned peers work,
# so that a t0500 failure points at the tap.
. "$(dirname "$0")/lib.sh"

need_npm @modelcontextprotocol/sdk @modelcontextprotocol/server-everything
command -v node >/dev/null 2>&1 || die "node is not installed: run tests/setup.sh test"
# server-everything's stdio entry point, from its package.json "bin".
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }

timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/client.jsonl" -- node "$ENTRY" stdio 2>"$T/client.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/client.err"
check_eq "sdk-client flow against server-everything exits 0" 0 "$rc"
check "the client reports success" grep -q '^sdk-client: ok:' "$T/client.err"
check "the server wrote its startup line to stderr" grep -qx 'Starting default (STDIO) server...' "$T/client.err"

# The log: every line a {"dir","message"} record, both directions present, and the
# flow's methods on the wire.
check "the client log is well formed and covers the flow" node -e '
const fs = require("fs");
const recs = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const want = ["c2s initialize", "c2s notifications/initialized", "c2s ping", "c2s tools/list",
  "c2s tools/call", "s2c notifications/progress", "s2c sampling/createMessage", "s2c roots/list",
  "c2s resources/list", "c2s resources/read", "c2s resources/templates/list",
  "c2s prompts/list", "c2s prompts/get"];
const have = new Set(recs.map((r) => r.dir + " " + r.message.method));
const missing = want.filter((w) => !have.has(w));
if (missing.length) { console.error("missing:", missing.join(", ")); process.exit(1); }
if (!recs.every((r) => (r.dir === "c2s" || r.dir === "s2c") && r.message.jsonrpc === "2.0")) process.exit(1);
' "$T/client.jsonl"

# check-store accepts a store view made from the log itself, and rejects one with
# an id that changed its JSON type (1 vs "1").
node -e '
const fs = require("fs");
const recs = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const k = (m) => typeof m.method === "string" ? ("id" in m ? "request" : "notification") : ("result" in m ? "response" : "error");
const rows = recs.map((r, i) => { const o = { session: 1, seq: i + 1, t_ns: i, time: "", dir: r.dir, channel: "stdio", kind: k(r.message), size: 0, message: r.message };
  if ("id" in r.message) o.id = r.message.id; if (r.message.method) o.method = r.message.method; return o; });
fs.writeFileSync(process.argv[2], rows.map((o) => JSON.stringify(o)).join("\n") + "\n");
const j = rows.findIndex((o) => o.kind === "response" && typeof o.id === "number");
rows[j].id = String(rows[j].id); rows[j].message = { ...rows[j].message, id: rows[j].id };
fs.writeFileSync(process.argv[3], rows.map((o) => JSON.stringify(o)).join("\n") + "\n");
' "$T/client.jsonl" "$T/self.jsonl" "$T/bad.jsonl"
check "check-store accepts the log's own messages" node "$NODEDIR/check-store.mjs" "$T/client.jsonl" "$T/self.jsonl"
check "check-store rejects an id whose JSON type changed" \
	sh -c '! node "$1" "$2" "$3" >/dev/null' sh "$NODEDIR/check-store.mjs" "$T/client.jsonl" "$T/bad.jsonl"

finish
