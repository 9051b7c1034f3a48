#!/bin/sh
# A second real client through the HTTP tap: the MCP inspector's CLI (pinned in
# tests/node) with --transport http, against server-everything in
# streamableHttp mode, directly and then through the tap. Each CLI run is an
# MCP session of its own (initialize, notifications/initialized,
# logging/setLevel as the server declares logging, then its request; before a
# tools/call, a tools/list). Then:
# - every run prints through the tap what it prints directly (the dynamic
#   resource's creation time aside);
# - the capture holds one session per run, in the order they ran, named by the
#   id the server logged, with exactly the client's requests and notifications,
#   each request answered, and the answer to the run's request is what the
#   CLI printed;
# - the echo text, unique to this run, is stored once in each direction, in
#   the echo run's session only;
# - the tap exits 0 on SIGINT, and no exchange is left without an outcome.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

INS=$NODEDIR/node_modules/@modelcontextprotocol/inspector-cli
need_npm @modelcontextprotocol/inspector-cli

ECHO="t0631 echo $$ $(date +%s%N)"

# The runs: NAME|the requests it sends after initialize|its CLI options
# (one word per ';'). Each ends with the request whose answer it prints.
cat > "$T/runs" << EOF
tools-list|logging/setLevel,tools/list|--method;tools/list
echo|logging/setLevel,tools/list,tools/call|--method;tools/call;--tool-name;echo;--tool-arg;message=$ECHO
sum|logging/setLevel,tools/list,tools/call|--method;tools/call;--tool-name;get-sum;--tool-arg;a=2;b=3
res-list|logging/setLevel,resources/list|--method;resources/list
res-templates|logging/setLevel,resources/templates/list|--method;resources/templates/list
res-read|logging/setLevel,resources/read|--method;resources/read;--uri;demo://resource/static/document/features.md
res-dynamic|logging/setLevel,resources/read|--method;resources/read;--uri;demo://resource/dynamic/text/7
prompts-list|logging/setLevel,prompts/list|--method;prompts/list
prompt|logging/setLevel,prompts/get|--method;prompts/get;--prompt-name;simple-prompt
prompt-args|logging/setLevel,prompts/get|--method;prompts/get;--prompt-name;args-prompt;--prompt-args;city=Paris;state=IDF
log-level|logging/setLevel,logging/setLevel|--method;logging/setLevel;--log-level;debug
EOF
RUNS=$(wc -l < "$T/runs")

# inspector LABEL URL OPTION...: one CLI run; stdout to $T/LABEL.out, stderr to
# $T/LABEL.err. (It finds its own package.json relative to the working
# directory: it runs from its build folder.)
inspector() {
	_l=$1
	_u=$2
	shift 2
	(cd "$INS/build" && timeout 30 node index.js "$_u" --transport http "$@") > "$T/$_l.out" 2> "$T/$_l.err"
}

# all WHERE URL: every run against URL; prints how many failed.
all() {
	_where=$1
	_url=$2
	_bad=0
	while IFS='|' read -r _name _reqs _opts; do
		_old=$IFS
		IFS=';'
		# shellcheck disable=SC2086 # one word per ';'
		set -- $_opts
		IFS=$_old
		inspector "$_where-$_name" "$_url" "$@" || {
			_bad=$((_bad + 1))
			sed "s/^/# $_where-$_name: /" "$T/$_where-$_name.err" | head -5 >&2
		}
	done < "$T/runs"
	echo "$_bad"
}

# The server's sessions, as it logs them, one id a line, in order.
server_sessions() {
	sed -n 's/^Session initialized with ID: //p' "$T/everything-streamableHttp-$port.log"
}

port=$(free_port)
start_everything streamableHttp "$port"
check_eq "every inspector run directly exits 0" 0 "$(all direct "http://127.0.0.1:$port/mcp")"
direct_sessions=$(server_sessions | wc -l)
check_eq "one server session for each run" "$RUNS" "$direct_sessions"

start_tap "$T/i.db" "http://127.0.0.1:$port"
check_eq "every inspector run through the tap exits 0" 0 "$(all tap "$TAP_URL/mcp")"
stop_tap INT
check_eq "SIGINT: the tap exits 0" 0 "$TAP_STATUS"
check_eq "the tap said nothing but where it listened" 1 "$(wc -l < "$TAP_ERR")"

# The outputs, the dynamic resource's creation time aside.
norm() { sed 's/created at [0-9][0-9:]* [AP]M/created at TIME/' "$1"; }
diffs=0
while IFS='|' read -r name _; do
	if [ "$(norm "$T/direct-$name.out")" != "$(norm "$T/tap-$name.out")" ]; then
		diffs=$((diffs + 1))
		echo "# $name differs:"
		diff "$T/direct-$name.out" "$T/tap-$name.out" | sed 's/^/#   /' | head -20
	fi
done < "$T/runs"
check_eq "every run prints through the tap what it prints directly" 0 "$diffs"
check "the echo came back" grep -q "\"text\": \"Echo: $ECHO\"" "$T/tap-echo.out"

# The capture: a session per run, in order.
server_sessions | tail -n +"$((direct_sessions + 1))" > "$T/server.sessions"
sql "$T/i.db" "select http_session_id from session order by id" > "$T/stored.sessions"
check "one stored session per run, in order, each named by the id the server gave it" \
	cmp "$T/server.sessions" "$T/stored.sessions"
check_eq "each an http session of the inspector with server-everything" "$RUNS" \
	"$(sql "$T/i.db" "select count(*) from session where transport = 'http' and client_name = 'inspector-cli' and server_name = 'mcp-servers/everything'")"
check_eq "every request answered, in its session" 0 \
	"$(sql "$T/i.db" "select count(*) from message q where q.kind = 'request' and (select count(*) from message r where r.session = q.session and r.request_seq = q.seq and r.kind in ('response', 'error')) != 1")"

# same_answer SESSION OUT: the answer to the session's last request, stored,
# is the result OUT holds (what the CLI printed).
same_answer() {
	sql "$T/i.db" "select cast(raw as text) from message where session = $1 and dir = 's2c' and kind = 'response' and request_seq = (select max(seq) from message where session = $1 and dir = 'c2s' and kind = 'request')" > "$T/answer.$1"
	node -e '
const fs = require("fs"), assert = require("assert");
const stored = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
assert.deepStrictEqual(stored.result, JSON.parse(fs.readFileSync(process.argv[2], "utf8")));' "$T/answer.$1" "$2" 2> "$T/answer.$1.err"
}
bad=0
s=1
while IFS='|' read -r name reqs _; do
	got=$(sql "$T/i.db" "select group_concat(method, ',') from (select method from message where session = $s and dir = 'c2s' order by seq)")
	if [ "$got" != "initialize,notifications/initialized,$reqs" ]; then
		echo "# session $s ($name): sent $got"
		bad=$((bad + 1))
	elif ! same_answer "$s" "$T/tap-$name.out"; then
		echo "# session $s ($name): the stored answer is not what the CLI printed"
		bad=$((bad + 1))
	fi
	s=$((s + 1))
done < "$T/runs"
check_eq "each session holds exactly its run's messages, and the answer the CLI printed" 0 "$bad"

echo_session=$(($(grep -n '^echo|' "$T/runs" | cut -d: -f1)))
check_eq "the echo text stored once each way, in the echo run's session only" \
	"$echo_session|c2s|request|tools/call|$ECHO,$echo_session|s2c|response||" \
	"$(sql "$T/i.db" "select group_concat(x, ',') from (select session || '|' || dir || '|' || kind || '|' || coalesce(method, '') || '|' || coalesce(json_extract(cast(raw as text), '$.params.arguments.message'), '') as x from message where instr(cast(raw as text), '$ECHO') > 0 order by session, seq)")"
check_eq "no exchange without an outcome" 0 "$(sql "$T/i.db" "select count(*) from http_exchange where outcome is null")"
check_eq "every exchange complete but the GET streams, which the CLI closed" \
	"GET client-gone,POST complete" \
	"$(sql "$T/i.db" "select group_concat(x, ',') from (select distinct method || ' ' || outcome as x from http_exchange order by 1)")"
stop_everything

finish
