#!/bin/sh
# t0368-otlp-fleet: many taps, one backend. Eight `mcptap record --otlp` taps
# run at once, each relaying the scripted client's full flow, all pushing to
# one OTLP receiver: six write a capture file of their own, two share one.
#
# Every span arrives once; span ids are unique across the taps (their
# sessions have the same number in different files, and the ids still
# differ: they hash the tap's identity and the session's start too); the
# receiver holds exactly what export -T otlp makes of the captures, and its
# view of any one session is that session's export.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/otlp-push.sh"

need_npm protobufjs @opentelemetry/otlp-transformer
CLIENT=$PEERS/mcp-client
SERVER=$PEERS/mcp-server
[ -x "$CLIENT" ] && [ -x "$SERVER" ] || die "the test peers are not built: run make"

start_recv "$T/r.jsonl"
pids=
for i in 1 2 3 4 5 6 7 8; do
	db=$T/tap$i.db
	[ "$i" -ge 7 ] && db=$T/shared.db
	"$CLIENT" --flow full --name "client-$i" -- "$MCPTAP" record -w "$db" --otlp "$RECV_URL" \
		-- "$SERVER" > /dev/null 2> "$T/tap$i.err" &
	pids="$pids $!"
done
failed=0
for p in $pids; do wait "$p" || failed=$((failed + 1)); done
check_eq "eight taps at once: each ran its client's full flow" 0 "$failed"

for f in 1 2 3 4 5 6 shared; do
	db=$T/tap$f.db
	[ "$f" = shared ] && db=$T/shared.db
	"$MCPTAP" export -r "$db" -T otlp -o "$T/e.$f.otlp"
done
check_eq "the shared file holds two sessions" 2 "$(sql "$T/shared.db" "select count(*) from session")"
ALL=$(nspans "$T"/e.*.otlp)
check "the captures make spans: 8 sessions' worth" [ "$ALL" -ge 80 ]
check "the receiver got as many" wait_spans "$T/r.jsonl" "$ALL"
check_eq "... no more" "$ALL" "$(nspans "$T/r.jsonl")"
check_eq "every span id once, across the eight taps" "" \
	"$(node "$NODEDIR/otlp-spans.mjs" --ids "$T/r.jsonl" | sort | uniq -d)"
check_eq "... and eight traces, one a session" 8 \
	"$(spans "$T/r.jsonl" | cut -d' ' -f1 | sort -u | wc -l | tr -d ' ')"
check_eq "the receiver holds exactly what export -T otlp makes of the eight captures" \
	"$(spans "$T"/e.*.otlp)" "$(spans "$T/r.jsonl")"
for f in 1 4 6; do
	check_eq "tap $f: the receiver's view of its session is that capture's export" \
		"$(spans "$T/e.$f.otlp")" "$(spans --traces-of "$T/e.$f.otlp" "$T/r.jsonl")"
done
for s in 1 2; do
	"$MCPTAP" export -r "$T/shared.db" -s "$s" -T otlp -o "$T/s.$s.otlp"
	check_eq "the shared file's session $s: the receiver's view is its export" \
		"$(spans "$T/s.$s.otlp")" "$(spans --traces-of "$T/s.$s.otlp" "$T/r.jsonl")"
done
check_eq "nothing said by any tap" "" "$(cat "$T"/tap*.err | grep -v '^mcp-client:')"
stop_recv
finish
