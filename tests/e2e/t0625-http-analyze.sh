#!/bin/sh
# The analyzer on real HTTP sessions: the official SDK client's full flow
# (tests/node/http-client.mjs) against server-everything through the HTTP tap,
# on Streamable HTTP and on legacy HTTP+SSE, then `mcptap analyze` on what the
# tap stored. The tap's sessions give no HTTP, SSE or AUTH finding but the
# true ones of the peers, asserted exactly:
#   - HTTP-026: server-everything answers a request that names the session id
#     it just deleted with 400 (its "No valid session ID provided"), not 404;
#   - TASK-008: the SDK client's elicitation/create result inside a task lacks
#     _meta["io.modelcontextprotocol/related-task"] (on both transports).
# Its 400 body, a JSON-RPC error without an id, is the HTTP layer's refusal:
# neither RPC-012 nor an unanswered ping (LIFE-015).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
CLIENT=$NODEDIR/http-client.mjs

# findings DB: "RULE SEVERITY" per finding, sorted (session 1 only has them).
findings() {
	"$MCPTAP" analyze -r "$1" --all --no-store --fail-on never -T json > "$T/an.json" 2> "$T/an.err" &&
		node -e '
			const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
			const out = [];
			for (const s of r.sessions) for (const f of s.findings) out.push(f.rule + " " + f.severity);
			console.log(out.sort().join(","));
		' "$T/an.json"
}

# seq_of DB RULE: the seq of that rule's finding.
seq_of() {
	node -e '
		const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		for (const s of r.sessions) for (const f of s.findings) if (f.rule === process.argv[2]) console.log(f.seq);
	' "$T/an.json" "$2"
}

# 1. Streamable HTTP.
p1=$(free_port)
start_everything streamableHttp "$p1"
start_tap "$T/h.db" "http://127.0.0.1:$p1"
timeout 100 node "$CLIENT" --transport http --log "$T/http.jsonl" "$TAP_URL/mcp" > "$T/http.out" 2> "$T/http.err"
check_eq "streamable HTTP through the tap: the client exits 0" 0 $?
stop_tap INT
stop_everything
check_eq "its session is one http session" "1|http" "$(sql "$T/h.db" "select count(*), transport from session")"
check_eq "analyze: exactly HTTP-026 (400 for a deleted session id) and TASK-008" \
	"HTTP-026 error,TASK-008 error" "$(findings "$T/h.db")"
s=$(seq_of "$T/h.db" HTTP-026)
check_eq "HTTP-026 is about the POST after the DELETE, answered 400" "POST|400|1" \
	"$(sql "$T/h.db" "select method, status, seq > (select seq from http_exchange where method = 'DELETE') from http_exchange where seq = ${s:-0}")"
check "the analysis ran the HTTP rules on it" grep -q '"spec": "2025-11-25"' "$T/an.json"
"$MCPTAP" analyze -r "$T/h.db" --no-store --rules HTTP,SSE,AUTH --fail-on warning > /dev/null 2>&1
check_eq "--rules HTTP,SSE,AUTH --fail-on warning: findings (HTTP-026)" 1 $?

# 2. Legacy HTTP+SSE.
p2=$(free_port)
start_everything sse "$p2"
start_tap "$T/s.db" "http://127.0.0.1:$p2"
timeout 100 node "$CLIENT" --transport sse --log "$T/sse.jsonl" "$TAP_URL/sse" > "$T/sse.out" 2> "$T/sse.err"
check_eq "legacy SSE through the tap: the client exits 0" 0 $?
stop_tap TERM
stop_everything
check_eq "its session is one sse session" "1|sse" "$(sql "$T/s.db" "select count(*), transport from session")"
check_eq "analyze: exactly TASK-008, no SSE, HTTP or AUTH finding" "TASK-008 error" "$(findings "$T/s.db")"
"$MCPTAP" analyze -r "$T/s.db" --no-store --rules HTTP,SSE,AUTH,STDIO --fail-on info > /dev/null 2>&1
check_eq "--rules HTTP,SSE,AUTH,STDIO --fail-on info: no finding" 0 $?

finish
