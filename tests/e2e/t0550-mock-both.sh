#!/bin/sh
# One mock, every transport: replay --as server --listen serves Streamable HTTP
# and the legacy HTTP+SSE transport at once, whatever the recording's (the
# recorded path, and /mcp and /sse), to many clients at once, each with its
# answers in order. A Streamable HTTP recording and a legacy one of the SDK
# client's short flow (tests/node/http-client.mjs: initialize, tools/list, an
# echo, a progress call) are each served to 4 SDK clients on each transport at
# once, 5 times over: every step passes, every progress callback fires (the
# client counts them against the notifications on the wire), every answer is
# the recorded one. A legacy session id is no Mcp-Session-Id, and the reverse.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
CLIENT=$NODEDIR/http-client.mjs
RAW=$NODEDIR/raw-mcp.mjs

for tr in http sse; do
	port=$(free_port)
	if [ $tr = http ]; then start_everything streamableHttp "$port"; path=/mcp; else start_everything sse "$port"; path=/sse; fi
	start_tap "$T/$tr.db" "http://127.0.0.1:$port"
	timeout 100 node "$CLIENT" --transport $tr --sessions 1 --log "$T/$tr.jsonl" "$TAP_URL$path" > "$T/$tr.rec" 2>&1
	check_eq "recorded one client's short flow over $tr" 0 $?
	stop_tap INT
	stop_everything
done
check_eq "the recordings' transports" "http sse" "$(sql "$T/http.db" "select transport from session") $(sql "$T/sse.db" "select transport from session")"

for rec in http sse; do
	start_mock "$T/$rec.db" --no-store --report "$T/$rec.report"
	base=${MOCK_URL%/*}
	check_eq "the $rec recording's mock also names the other transport" 1 \
		"$(grep -c "^mcptap: replay: the mock server listens also on $base/$([ $rec = http ] && echo sse || echo mcp) (" "$MOCK_ERR")"
	round=1
	fails=0
	while [ $round -le 5 ]; do
		timeout 100 node "$CLIENT" --transport http --sessions 2 --same-echo --log "$T/h$rec$round.jsonl" "$base/mcp" > "$T/h$rec$round.out" 2>&1 &
		hp=$!
		timeout 100 node "$CLIENT" --transport sse --sessions 2 --same-echo --log "$T/s$rec$round.jsonl" "$base/sse" > "$T/s$rec$round.out" 2>&1
		st=$?
		wait $hp
		ht=$?
		[ $st -eq 0 ] && [ $ht -eq 0 ] || { fails=$((fails + 1)); grep '^not ok' "$T/h$rec$round.out" "$T/s$rec$round.out" | head -3 | sed 's/^/# /'; }
		round=$((round + 1))
	done
	check_eq "the $rec recording: 2 Streamable HTTP and 2 legacy SSE clients at once, 5 rounds, all pass" 0 "$fails"
	check_eq "every step passed for the 2, each round, on each transport (progress included)" 55 \
		"$(cat "$T"/h"$rec"[1-5].out "$T"/s"$rec"[1-5].out | grep -c '^ok - .*: 2/2 clients$')"
	bad=0
	for r in 1 2 3 4 5; do
		for k in 1 2; do
			same_results "$T/$rec.jsonl.1" "$T/h$rec$r.jsonl.$k" || bad=$((bad + 1))
			same_results "$T/$rec.jsonl.1" "$T/s$rec$r.jsonl.$k" || bad=$((bad + 1))
		done
	done
	check_eq "each of the 20 clients got the recorded answers" 0 "$bad"
	# A legacy sessionId is not an Mcp-Session-Id.
	sid=$(sed -n 's/^# session 1 //p' "$T/s${rec}1.out" | head -n 1)
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: x$sid" \
		--data '{"jsonrpc":"2.0","id":1,"method":"ping"}' "$base/mcp")
	check_eq "an unknown Mcp-Session-Id on /mcp: 404" 404 "$code"
	stop_mock
	check "the $rec recording's report: 20 runs of 4 requests, each answered" report_is "$T/$rec.report" 20 4 0
done
finish
