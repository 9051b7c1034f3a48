#!/bin/sh
# t0366-otlp-push: `mcptap record --otlp URL` over stdio pushes each request's
# spans to an OTLP/HTTP receiver (tests/node/otlp-receiver.mjs, which decodes
# them with the official OTLP definitions) as its answer is stored.
#
# 1. The scripted client's full flow: the receiver gets every span once, and
#    exactly what `export -T otlp` makes of the capture afterwards (ids,
#    times, attributes, resource), also with --otlp-spans both; the headers
#    of --otlp-header NAME=env:VAR arrive, and their values are nowhere in the
#    capture nor on stderr; nothing is said and no gap is recorded. The spans
#    carry what the file keeps: a tool's name redacted there is redacted in them.
# 2. A receiver answering 503, then 429 (with Retry-After): the batch is sent
#    again after the wait, and taken once.
# 3. A receiver refusing every batch (400): each span is counted, said in one
#    line on stderr, and recorded as a gap row of its session, which show
#    shows and analyze does not take for traffic missing.
# 4. Usage errors: a bad URL, a user:password in it, a header whose variable
#    is not set, --otlp-header or --otlp-spans without --otlp, a bad
#    --otlp-spans.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/otlp-push.sh"

need_npm protobufjs @opentelemetry/otlp-transformer
CLIENT=$PEERS/mcp-client
SERVER=$PEERS/mcp-server
[ -x "$CLIENT" ] && [ -x "$SERVER" ] || die "the test peers are not built: run make"

# ---- 1. Spans as export makes them; headers from the environment ----
start_recv "$T/r1.jsonl" --headers x-tenant,authorization --header-log "$T/r1.hdr"
TENANT_KEY=tenant-s3cr3t-4711 AUTH_KEY='Bearer tok-9f8e7d6c' \
	"$CLIENT" --flow full -- "$MCPTAP" record -w "$T/a.db" --otlp "$RECV_URL" \
	--otlp-header X-Tenant=env:TENANT_KEY --otlp-header Authorization=env:AUTH_KEY \
	-- "$SERVER" > /dev/null 2> "$T/a.err"
check_eq "the full flow recorded with --otlp: exit 0" 0 $?
"$MCPTAP" export -r "$T/a.db" -T otlp -o "$T/a.otlp"
N=$(nspans "$T/a.otlp")
NREQ=$(sql "$T/a.db" "select count(*) from message where kind = 'request'")
check_eq "export -T otlp: a CLIENT span per request" "$NREQ" "$N"
check "the receiver got them" wait_spans "$T/r1.jsonl" "$N"
check_eq "the spans pushed live are export -T otlp's (ids, times, attributes, resource)" \
	"$(spans "$T/a.otlp")" "$(spans "$T/r1.jsonl")"
check_eq "no span arrived twice" "" "$(node "$NODEDIR/otlp-spans.mjs" --ids "$T/r1.jsonl" | sort | uniq -d)"
check_eq "--otlp-header: the values from the environment arrive with each POST" \
	"authorization: Bearer tok-9f8e7d6c
x-tenant: tenant-s3cr3t-4711" "$(cut -d' ' -f2- "$T/r1.hdr" | sort -u)"
check_eq "... on every POST" "$(grep -c ' 200 ' "$RECV_ERR")" "$(grep -c x-tenant "$T/r1.hdr")"
check_eq "... and are not in the capture" "" \
	"$(cat "$T"/a.db* | grep -aoE 'tenant-s3cr3t-4711|tok-9f8e7d6c' | sort -u)"
check_eq "... nor in its dump" "0" "$(sqlite3 "$T/a.db" .dump | grep -cE 's3cr3t-4711|9f8e7d6c')"
check_eq "... nor on stderr" "0" "$(grep -cE 's3cr3t|9f8e7d6c' "$T/a.err")"
check_eq "all sent: nothing said" "" "$(grep -v '^mcp-client:' "$T/a.err")"
check_eq "... no gap recorded" "0" "$(sql "$T/a.db" "select count(*) from gap")"

: > "$T/r1.jsonl"
"$CLIENT" --flow full -- "$MCPTAP" record -w "$T/b.db" --otlp "$RECV_URL" --otlp-spans both \
	-- "$SERVER" > /dev/null 2> "$T/b.err"
check_eq "--otlp-spans both: exit 0" 0 $?
"$MCPTAP" export -r "$T/b.db" -T otlp --spans both -o "$T/b.otlp"
check_eq "--otlp-spans both: two spans a request" "$((2 * NREQ))" "$(nspans "$T/b.otlp")"
check "... the receiver got them" wait_spans "$T/r1.jsonl" "$((2 * NREQ))"
check_eq "... as export --spans both makes them" "$(spans "$T/b.otlp")" "$(spans "$T/r1.jsonl")"

# Redaction: the spans carry what the file keeps.
: > "$T/r1.jsonl"
"$CLIENT" --flow full -- "$MCPTAP" record -w "$T/e.db" --otlp "$RECV_URL" --redact-path params.name \
	-- "$SERVER" > /dev/null 2> "$T/e.err"
check_eq "--redact-path params.name with --otlp: exit 0" 0 $?
"$MCPTAP" export -r "$T/e.db" -T otlp -o "$T/e.otlp"
check "... the receiver got the spans" wait_spans "$T/r1.jsonl" "$(nspans "$T/e.otlp")"
check_eq "... as export makes them" "$(spans "$T/e.otlp")" "$(spans "$T/r1.jsonl")"
NCALL=$(grep -o '"name":"tools/call[^"]*"' "$T/r1.jsonl" | wc -l | tr -d ' ')
check "... tools were called" [ "$NCALL" -ge 3 ]
check_eq "... each tool's name is the stored marker, not the name relayed" "$NCALL" \
	"$(grep -o '"key":"gen_ai.tool.name","value":{"stringValue":"\[redacted:[0-9a-f]*\]"}' "$T/r1.jsonl" | wc -l | tr -d ' ')"
check_eq "... the name relayed is in no span" "0" "$(grep -c '"stringValue":"echo"' "$T/r1.jsonl")"
stop_recv

# ---- 2. 503, then 429 with Retry-After: sent again, taken once ----
start_recv "$T/r2.jsonl" --status 503,429
"$CLIENT" --flow basic -- "$MCPTAP" record -w "$T/c.db" --otlp "$RECV_URL" \
	-- "$SERVER" > /dev/null 2> "$T/c.err"
check_eq "recorded against a receiver answering 503 then 429: exit 0" 0 $?
"$MCPTAP" export -r "$T/c.db" -T otlp -o "$T/c.otlp"
N=$(nspans "$T/c.otlp")
check "the receiver got every span" wait_spans "$T/r2.jsonl" "$N"
check_eq "... each once, as export makes them" "$(spans "$T/c.otlp")" "$(spans "$T/r2.jsonl")"
FIRST=$(sed -n 's/^POST 1 503 //p' "$RECV_ERR")
check "the first POST was answered 503" [ -n "$FIRST" ]
check_eq "the same batch again, answered 429, then taken" "POST 2 429 $FIRST
POST 3 200 $FIRST" "$(sed -n '/^POST [23] /p' "$RECV_ERR")"
check_eq "taken in the end: nothing said" "" "$(grep -v '^mcp-client:' "$T/c.err")"
check_eq "... no gap recorded" "0" "$(sql "$T/c.db" "select count(*) from gap")"
stop_recv

# ---- 3. Refused for good (400): counted, said, recorded ----
start_recv "$T/r3.jsonl" --status 400,400,400,400,400,400,400,400
"$CLIENT" --flow basic -- "$MCPTAP" record -w "$T/d.db" --otlp "$RECV_URL/" \
	-- "$SERVER" > /dev/null 2> "$T/d.err"
check_eq "recorded against a receiver refusing everything: exit 0" 0 $?
"$MCPTAP" export -r "$T/d.db" -T otlp -o "$T/d.otlp"
N=$(nspans "$T/d.otlp")
check_eq "the receiver kept nothing" "0" "$(nspans "$T/r3.jsonl")"
check_eq "one line on stderr says how many spans were not pushed, and why" \
	"mcptap: warning: $N of $N spans were not pushed to $RECV_URL/v1/traces (HTTP 400 from $RECV_URL/v1/traces); the capture records them as gaps" \
	"$(grep -v '^mcp-client:' "$T/d.err")"
check_eq "a gap row of the session says it" \
	"1 otlp: $N spans not pushed to $RECV_URL/v1/traces: HTTP 400 from $RECV_URL/v1/traces" \
	"$(otlp_gaps "$T/d.db")"
check_eq "... counting no message or byte as lost" "0 0" \
	"$(sql "$T/d.db" "select messages || ' ' || bytes from gap")"
"$MCPTAP" analyze -r "$T/d.db" > "$T/d.an" 2>&1
check_eq "analyze takes it for no gap in the traffic: nothing reported" \
	"session 1: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)" "$(cat "$T/d.an")"
check "show shows it" sh -c '"$1" show -r "$2" | grep -q "otlp: $3 spans not pushed"' - "$MCPTAP" "$T/d.db" "$N"
stop_recv

# Nothing stored (-w /dev/null relays without logging): nothing to push, and that is said.
"$CLIENT" --flow basic -- "$MCPTAP" record -w /dev/null --otlp http://127.0.0.1:1 \
	-- "$SERVER" > /dev/null 2> "$T/n.err"
check_eq "-w /dev/null with --otlp: exit 0" 0 $?
check_eq "... it says no span was pushed, and why" \
	"mcptap: warning: no span was pushed to http://127.0.0.1:1/v1/traces: spans are made of what '/dev/null' stores, and it stored nothing" \
	"$(grep 'span' "$T/n.err")"

# ---- 4. Usage errors ----
usage() { # usage DESCRIPTION EXPECTED-MESSAGE ARG...
	_d=$1 _m=$2
	shift 2
	"$MCPTAP" record -w "$T/u.db" "$@" -- true > "$T/u.out" 2> "$T/u.err"
	check_eq "$_d: exit 2" 2 $?
	check_eq "$_d: said" "mcptap: $_m" "$(head -n 1 "$T/u.err")"
}
usage "--otlp ftp://" "bad --otlp URL: not an http:// or https:// URL" --otlp ftp://h/
usage "--otlp with a password" "bad --otlp URL: no user:password@ in it (send a credential with --otlp-header NAME=env:VAR)" \
	--otlp http://u:pw@127.0.0.1:1/
check_eq "... which is not said" "0" "$(grep -c 'pw@' "$T/u.err")"
usage "--otlp-header of an unset variable" '--otlp-header X-Key: $MCPTAP_T0366_UNSET is not set' \
	--otlp http://127.0.0.1:1 --otlp-header X-Key=env:MCPTAP_T0366_UNSET
usage "--otlp-header without --otlp" "--otlp-header and --otlp-spans need --otlp URL" \
	--otlp-header X-Key=env:HOME
usage "--otlp-spans without --otlp" "--otlp-header and --otlp-spans need --otlp URL" --otlp-spans both
usage "a bad --otlp-spans" "bad --otlp-spans 'sideways' (client, server or both)" \
	--otlp http://127.0.0.1:1 --otlp-spans sideways
check "no capture made by a usage error" [ ! -e "$T/u.db" ]
"$MCPTAP" import -w "$T/u.db" --otlp ftp://h/ /dev/null > /dev/null 2> "$T/u.err"
check_eq "import --otlp ftp://: exit 2" 2 $?
check_eq "... said" "mcptap: bad --otlp URL: not an http:// or https:// URL" "$(head -n 1 "$T/u.err")"

finish
