#!/bin/sh
# t0500-sdk-everything: the real, official MCP peers through the tap. The official
# SDK client (tests/node/sdk-client.mjs: Client + StdioClientTransport) spawns
# `mcptap record` wrapping the official server-everything (both pinned in
# tests/node/package-lock.json) and runs its flow: initialize, ping, tools/list,
# echo, a long-running tool with progress notifications, a tool that makes the
# server send sampling/createMessage to the client, resources, templates, prompts,
# and the server's roots/list. Then the store must hold exactly what the client
# sent and received (check-store.mjs on `mcptap show -T json`), one session with
# the peers' names, the server's stderr, and every request answered.
. "$(dirname "$0")/lib.sh"

need_npm @modelcontextprotocol/sdk @modelcontextprotocol/server-everything
command -v node >/dev/null 2>&1 || die "node is not installed: run tests/setup.sh test"
# server-everything's stdio entry point, from its package.json "bin".
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
DB=$T/s.db

timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/client.jsonl" -- \
	"$MCPTAP" record -w "$DB" -- node "$ENTRY" stdio 2>"$T/client.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/client.err"
check_eq "sdk-client flow through mcptap record exits 0" 0 "$rc"
check "the client reports success" grep -q '^sdk-client: ok:' "$T/client.err"
check "the server's stderr passed through the tap" grep -qx 'Starting default (STDIO) server...' "$T/client.err"
check "mcptap record wrote the capture file" test -s "$DB"

"$MCPTAP" show -r "$DB" -T json >"$T/show.jsonl" 2>"$T/show.err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/show.err"
check_eq "mcptap show -T json exits 0" 0 "$rc"
check "the store holds exactly the messages the client sent and received" \
	node "$NODEDIR/check-store.mjs" "$T/client.jsonl" "$T/show.jsonl"

# What the client saw, for the SQL checks below.
node -e '
const fs = require("fs");
const recs = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const init = recs.find((r) => r.dir === "c2s" && r.message.method === "initialize");
const res = recs.find((r) => r.dir === "s2c" && init && r.message.id === init.message.id && r.message.result);
const lrq = recs.find((r) => r.dir === "c2s" && r.message.method === "tools/call" && /long.?running/i.test(r.message.params.name));
const out = {
  client_name: init ? init.message.params.clientInfo.name : "",
  client_version: init ? init.message.params.clientInfo.version : "",
  server_name: res ? res.message.result.serverInfo.name : "",
  server_version: res ? res.message.result.serverInfo.version : "",
  protocol_version: res ? res.message.result.protocolVersion : "",
  c2s: recs.filter((r) => r.dir === "c2s").length,
  s2c: recs.filter((r) => r.dir === "s2c").length,
  // as an SQL literal
  progress_token: lrq ? ((t) => typeof t === "string" ? "\x27" + t.replace(/\x27/g, "\x27\x27") + "\x27" : String(t))(lrq.message.params._meta.progressToken) : "NULL",
  progress: recs.filter((r) => r.dir === "s2c" && r.message.method === "notifications/progress").length,
};
for (const [k, v] of Object.entries(out)) console.log(k + "=" + v);
// The client wrote each of its messages as JSON.stringify(message) + "\n": the
// tap must have stored and relayed exactly those bytes.
fs.writeFileSync(process.argv[2], recs.filter((r) => r.dir === "c2s")
  .map((r) => Buffer.from(JSON.stringify(r.message) + "\n").toString("hex").toUpperCase()).join("\n") + "\n");
' "$T/client.jsonl" "$T/c2s.hex" >"$T/seen.txt"
seen() { sed -n "s/^$1=//p" "$T/seen.txt"; }

check_eq "server-everything's serverInfo name is the one expected" "mcp-servers/everything" "$(seen server_name)"
check_eq "exactly one session" 1 "$(sql "$DB" 'SELECT count(*) FROM session')"
S=$(sql "$DB" 'SELECT id FROM session')
check_eq "session transport" stdio "$(sql "$DB" "SELECT transport FROM session WHERE id = $S")"
check_eq "session server_name is the serverInfo name" "$(seen server_name)" "$(sql "$DB" "SELECT server_name FROM session WHERE id = $S")"
check_eq "session server_version" "$(seen server_version)" "$(sql "$DB" "SELECT server_version FROM session WHERE id = $S")"
check_eq "session client_name" "$(seen client_name)" "$(sql "$DB" "SELECT client_name FROM session WHERE id = $S")"
check_eq "session client_version" "$(seen client_version)" "$(sql "$DB" "SELECT client_version FROM session WHERE id = $S")"
check_eq "session protocol_version is the negotiated one" "$(seen protocol_version)" "$(sql "$DB" "SELECT protocol_version FROM session WHERE id = $S")"
check "session command names the server" sh -c 'case "$1" in *server-everything*stdio*) ;; *) exit 1 ;; esac' sh \
	"$(sql "$DB" "SELECT command FROM session WHERE id = $S")"
check_eq "the server exited 0 when the client closed" 0 "$(sql "$DB" "SELECT exit_status FROM session WHERE id = $S")"

check_eq "stored c2s messages" "$(seen c2s)" "$(sql "$DB" "SELECT count(*) FROM message WHERE session = $S AND channel = 'stdio' AND dir = 'c2s'")"
check_eq "stored s2c messages" "$(seen s2c)" "$(sql "$DB" "SELECT count(*) FROM message WHERE session = $S AND channel = 'stdio' AND dir = 's2c'")"
check_eq "nothing stored but requests, notifications and responses" 0 \
	"$(sql "$DB" "SELECT count(*) FROM message WHERE session = $S AND kind NOT IN ('request', 'notification', 'response')")"
check_eq "every request answered, after it (exchange view)" 0 \
	"$(sql "$DB" "SELECT count(*) FROM exchange WHERE session = $S AND (outcome IS NULL OR latency_ns < 0)")"
check_eq "both peers' requests matched (sampling/createMessage, roots/list)" 2 \
	"$(sql "$DB" "SELECT count(*) FROM exchange WHERE session = $S AND dir = 's2c' AND outcome = 'response'")"
check_eq "ids kept as JSON numbers" 0 \
	"$(sql "$DB" "SELECT count(*) FROM message WHERE session = $S AND id IS NOT NULL AND (typeof(id) <> 'integer' OR idtype <> 'number')")"
check_eq "progress notifications stored with the request's progressToken" "$(seen progress)" \
	"$(sql "$DB" "SELECT count(*) FROM message WHERE session = $S AND method = 'notifications/progress' AND progress_token = $(seen progress_token)")"
sql "$DB" "SELECT hex(raw) FROM message WHERE session = $S AND dir = 'c2s' ORDER BY seq" >"$T/c2s.stored.hex"
check "the client's lines are stored byte for byte" cmp -s "$T/c2s.hex" "$T/c2s.stored.hex"
check_eq "no logging gaps" 0 "$(sql "$DB" "SELECT count(*) FROM gap WHERE session = $S")"

# stderr: server-everything writes one line at start; the tap stores each line and
# passes it through (it reached the client's stderr, checked above).
sql "$DB" "SELECT CAST(raw AS TEXT) FROM stderr_line WHERE session = $S ORDER BY seq" >"$T/stderr.stored"
check_eq "the server's stderr line is stored" "Starting default (STDIO) server..." "$(head -n 1 "$T/stderr.stored")"
check "every stored stderr line is one the server wrote" sh -c '
	while IFS= read -r l; do [ -z "$l" ] || grep -qxF -- "$l" "$1" || { echo "# not passed through: $l"; exit 1; }; done <"$2"' sh \
	"$T/client.err" "$T/stderr.stored"
check_eq "show -T json lists the stderr lines" \
	"$(sql "$DB" "SELECT count(*) FROM stderr_line WHERE session = $S")" \
	"$(node -e 'console.log(require("fs").readFileSync(process.argv[1], "utf8").split("\n")
		.filter((l) => l.trim() && JSON.parse(l).channel === "stderr").length)' "$T/show.jsonl")"

finish
