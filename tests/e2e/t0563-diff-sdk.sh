#!/bin/sh
# t0563-diff-sdk: `mcptap diff` on real recordings: the official SDK client's
# full flow (tests/node/http-client.mjs: sampling, elicitation, a task, a
# cancelled call, progress) against @modelcontextprotocol/server-everything,
# recorded by the stdio tap and by the HTTP tap.
#
# 1. Two stdio runs of the flow: without noise only the task's time stamps
#    differ (its id, minted by each server, is followed); with a third run as
#    --noise they are the same.
# 2. Two Streamable HTTP runs: the same, with noise.
# 3. A stdio run against an HTTP one, both ways, and against a legacy HTTP+SSE
#    one: the same, with noise (ids, session ids, event ids, progress tokens
#    and transport are never differences; the HTTP flow's request after its
#    DELETE, refused with 400, is the transport's).
# 4. A server changed in one tool's result (its echo answers altered on the way
#    by a real child process): reported on that exchange only, with its path
#    and both values, in text and -T json; exit 1.
# e2e: long
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/http-client.mjs
trap stop_http_peers EXIT

# stdio_run DB [SERVER...]: the flow over stdio, recorded into DB.
stdio_run() {
	_db=$1
	shift
	[ $# -gt 0 ] || set -- node "$ENTRY" stdio
	timeout 120 node "$CLIENT" --transport stdio --log "$_db.jsonl" -- \
		"$MCPTAP" record -w "$_db" -- "$@" > "$_db.out" 2>&1
	_rc=$?
	[ $_rc -eq 0 ] || sed 's/^/# /' "$_db.out"
	return $_rc
}

# http_run DB [sse]: the flow over Streamable HTTP (or legacy HTTP+SSE) through the
# tap, recorded into DB.
http_run() {
	_p=$(free_port)
	if [ "${2:-}" = sse ]; then
		start_everything sse "$_p"
		_how="--transport sse" _end=/sse
	else
		start_everything streamableHttp "$_p"
		_how="--transport http" _end=/mcp
	fi
	start_tap "$1" "http://127.0.0.1:$_p"
	# shellcheck disable=SC2086 # (two words)
	timeout 120 node "$CLIENT" $_how --log "$1.jsonl" "$TAP_URL$_end" > "$1.out" 2>&1
	_rc=$?
	[ $_rc -eq 0 ] || sed 's/^/# /' "$1.out"
	wait_committed "$1" 1 "$1.jsonl" || _rc=1
	stop_tap
	stop_everything
	return $_rc
}

# same N NOISE: the closing line of a diff of N exchanges on each side, all the same.
same() {
	echo "diff: $1 exchanges in A, $1 in B: $1 same, 0 changed, 0 added, 0 missing; $2 paths set aside as noise"
}
# diff_is LABEL STATUS EXPECTED ARG...: mcptap diff ARG... exits STATUS and prints EXPECTED.
diff_is() {
	_l=$1 _st=$2 _exp=$3
	shift 3
	"$MCPTAP" diff "$@" > "$T/$_l.out" 2> "$T/$_l.err"
	_rc=$?
	check_eq "$_l: exit $_st" "$_st" "$_rc"
	check_eq "$_l: the whole output" "$_exp" "$(cat "$T/$_l.out")"
	check_eq "$_l: nothing on stderr" "" "$(cat "$T/$_l.err")"
}
# seq_of DB METHOD NAME: the seq of the client's request METHOD whose params name NAME.
seq_of() {
	sql "$1" "select seq from message where session = 1 and dir = 'c2s' and kind = 'request' and method = '$2' and json_extract(cast(raw as text), '\$.params.name') = '$3'"
}
# exchanges DB: the requests of session 1, the server's and the client's but
# those whose POST an HTTP server refused with an error status.
exchanges() {
	sql "$1" "select count(*) from message m where session = 1 and kind = 'request' and not (dir = 'c2s' and exists (select 1 from http_exchange x where x.session = m.session and x.seq = m.exchange and x.status >= 400))"
}

check "stdio run 1" stdio_run "$T/s1.db"
check "stdio run 2" stdio_run "$T/s2.db"
check "stdio run 3" stdio_run "$T/s3.db"
check "HTTP run 1" http_run "$T/h1.db"
check "HTTP run 2" http_run "$T/h2.db"
check "HTTP run 3" http_run "$T/h3.db"
check "legacy HTTP+SSE run" http_run "$T/l1.db" sse
N=$(exchanges "$T/s1.db")
check_eq "the HTTP flow has as many exchanges (its request after the DELETE refused)" "$N" "$(exchanges "$T/h1.db")"
check "the flow has a task (the server mints its id)" test -n "$(seq_of "$T/s1.db" tools/call simulate-research-query)"

# 1. stdio against stdio: without noise, only the task's time stamps differ.
"$MCPTAP" diff "$T/s1.db" "$T/s2.db" > "$T/ss0.out" 2>&1
check_eq "stdio runs without noise: exit 1" 1 $?
sed 's/^/# /' "$T/ss0.out"
check_eq "without noise: only time stamps differ (createdAt, lastUpdatedAt)" 0 \
	"$(grep '^CHANGED' "$T/ss0.out" | sed 's/^[^:]*: //; s/, /\n/g' | grep -cv '^result\.\(task\.\)\{0,1\}\(createdAt\|lastUpdatedAt\) "20')"
check "without noise: the task is found by the id each server minted, not ADDED or MISSING" \
	sh -c '! grep -q "^ADDED\|^MISSING" "$1"' sh "$T/ss0.out"
diff_is "stdio runs, with noise" 0 "$(same "$N" 10)" --noise "$T/s3.db" "$T/s1.db" "$T/s2.db"

# 2. HTTP against HTTP.
diff_is "HTTP runs, with noise" 0 "$(same "$N" 10)" --noise "$T/h3.db:1" "$T/h1.db:1" "$T/h2.db"

# 3. Across transports, both ways.
diff_is "stdio against HTTP, with noise" 0 "$(same "$N" 10)" --noise "$T/s3.db" "$T/s1.db" "$T/h1.db"
diff_is "HTTP against stdio, with noise" 0 "$(same "$N" 10)" --noise "$T/h2.db" "$T/h1.db" "$T/s2.db"
check_eq "the legacy HTTP+SSE flow has as many exchanges" "$N" "$(exchanges "$T/l1.db")"
diff_is "stdio against legacy HTTP+SSE, the noise a third session" 0 "$(same "$N" 10)" "$T/s1.db" "$T/l1.db" "$T/s3.db"

# 4. A server changed in one tool's result: its echo answers altered on the way
# (the client's own check of the echo fails; the recording is what counts).
stdio_run "$T/c.db" sh -c 'node "$1" stdio | sed -u "s/\"text\":\"Echo: /\"text\":\"Echo; /"' sh "$ENTRY" > /dev/null
check_eq "recorded the flow against the changed echo" "$N" "$(exchanges "$T/c.db")"
A=$(seq_of "$T/s1.db" tools/call echo)
B=$(seq_of "$T/c.db" tools/call echo)
# (the values cut after 40 bytes: the client's fixed text, as JSON)
diff_is "the changed echo" 1 "CHANGED tools/call echo (A #$A, B #$B): result.content[0].text \"Echo: hello through the http tap é世 ... -> \"Echo; hello through the http tap é世 ...
diff: $N exchanges in A, $N in B: $((N - 1)) same, 1 changed, 0 added, 0 missing; 10 paths set aside as noise" \
	--noise "$T/s3.db" "$T/s1.db" "$T/c.db"
"$MCPTAP" diff -T json --noise "$T/s3.db" "$T/s1.db" "$T/c.db" > "$T/c.json"
check_eq "-T json of the changed echo: exit 1" 1 $?
TEXT=$(sql "$T/s1.db" "select json_extract(cast(raw as text), '\$.params.arguments.message') from message where session = 1 and seq = $A")
check_eq "-T json: one document, the one exchange with its path and both values" ok \
	"$(node -e 'const [, file, a, b, n, text] = process.argv;
		const d = JSON.parse(require("fs").readFileSync(file, "utf8"));
		const at = (f) => file.replace(/c\.json$/, f);
		const want = {a: {file: at("s1.db"), session: 1}, b: {file: at("c.db"), session: 1},
			noise: [{file: at("s3.db"), session: 1}],
			exchanges: [{status: "changed", dir: "c2s", method: "tools/call", subject: "echo", a: +a, b: +b,
				diffs: [{path: "result.content[0].text", a: "Echo: " + text, b: "Echo; " + text}], noise: []}],
			exchanges_a: +n, exchanges_b: +n, same: n - 1, changed: 1, added: 0, missing: 0, noise_paths: 10};
		console.log(JSON.stringify(d) === JSON.stringify(want) ? "ok" : JSON.stringify(d) + " != " + JSON.stringify(want))' \
		"$T/c.json" "$A" "$B" "$N" "$TEXT")"

finish
