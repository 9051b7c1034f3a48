#!/bin/sh
# t0541-verify-resumed: a Streamable HTTP recording with a resumption, made by
# the official SDK client against server-everything through the HTTP tap, and
# played back: verify against the same server, the mock on stdio and on HTTP.
#
# The client (http-client.mjs --resume) cuts its GET stream after the
# elicitation step and the SDK resumes it with Last-Event-ID.
# server-everything's event store sends again every event it stored after that
# id, of every stream: answers, progress, its sampling/createMessage and
# elicitation/create (which the client answers again), and the priming events
# of the POST streams opened since as "{}". The tap marks the copies replayed.
#
# 1. The recording: one resumed GET; its replayed messages are as many as the
#    client says came again, each a copy (same event id, same bytes) of an
#    event sent on another stream, each stream's copies in that stream's
#    order; the store matches the client's log, copies included.
# 2. analyze: one HTTP-020 per copy (each from another stream), each "{}"
#    HTTP-007, and the client's second answers are no second answer (no RPC-004).
# 3. verify against a fresh server-everything: every request passes but the
#    cancelled one, nothing MISSING or DIFF, no server request waited for.
# 4. The stdio mock of the recording: each server message once (the copies are
#    not sent again), the "{}" as the server sent them.
# 5. The HTTP mock of the recording, with a client that resumes the same way,
#    through the tap: the flow passes, the "{}" come (once in all), and the
#    resumption is answered as the server answered it: the same messages again,
#    in the same order, each with the event id and bytes the mock first sent
#    it with (so the tap marks them replayed too).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"

need_npm @modelcontextprotocol/sdk
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
CLIENT=$NODEDIR/http-client.mjs
stop_all() {
	bg_stop MOCK INT
	stop_http_peers
}
trap stop_all EXIT

# ---- 1. The recording ----
p1=$(free_port)
start_everything streamableHttp "$p1"
start_tap "$T/h.db" "http://127.0.0.1:$p1"
timeout 100 node "$CLIENT" --transport http --resume --not-jsonrpc any --log "$T/h.jsonl" "$TAP_URL/mcp" > "$T/h.rec" 2>&1
check_eq "the SDK client's full flow with a resumption, through the tap: exit 0" 0 $?
grep '^not ok' "$T/h.rec"
check "its messages are committed" wait_committed "$T/h.db" 1 "$T/h.jsonl"
stop_tap
stop_everything
RESUMED=$(sed -n 's/^# resumed: \([0-9]*\) JSON-RPC messages came again (\([0-9]*\) sampling\/createMessage, \([0-9]*\) elicitation\/create, each answered again), \([0-9]*\) events not JSON-RPC$/\1 \2 \3 \4/p' "$T/h.rec")
echo "# the client: $RESUMED (messages again, sampling, elicitation, not JSON-RPC)"
set -- $RESUMED
AGAIN=$1 NOTRPC=$4
check_eq "the server's sampling/createMessage and elicitation/create came again, once each" "1 1" "$2 $3"
# (How many POST streams the server opened after the Last-Event-ID, each
# priming event sent again as "{}", is the machine's timing: 2 on an idle
# one, more when it is loaded. The checks below take the client's count.)
check "and answers, notifications, and priming events as \"{}\"" test "$AGAIN" -gt 2 -a "$NOTRPC" -ge 1

RX=$(sql "$T/h.db" "select seq from http_exchange where method = 'GET' and exists (select 1 from json_each(req_headers) h where lower(json_extract(h.value, '\$[0]')) = 'last-event-id')")
LEI=$(sql "$T/h.db" "select json_extract(h.value, '\$[1]') from http_exchange x, json_each(x.req_headers) h where x.seq = '$RX' and lower(json_extract(h.value, '\$[0]')) = 'last-event-id'")
check_eq "one GET resumed with Last-Event-ID, answered 200 as SSE" "1|200|sse" \
	"$(sql "$T/h.db" "select count(*), status, resp_type from http_exchange where seq = '$RX'")"
FROM=$(sql "$T/h.db" "select seq from message where sse_id = '$LEI' and replayed = 0")
check_eq "its Last-Event-ID is the last event of the first GET stream" \
	"$(sql "$T/h.db" "select max(seq) from message where exchange = (select min(seq) from http_exchange where method = 'GET')")" "$FROM"
check_eq "the messages replayed on it: as many as the client says came again" "$AGAIN" \
	"$(sql "$T/h.db" "select count(*) from message where exchange = $RX and replayed = 1")"
# Each copy is an event the tap saw earlier on another stream, same id, same
# bytes, and the copies of one stream come in that stream's order. (Across
# streams the server's store order need not be the order the tap saw them in
# when the machine is loaded.)
COPIES="select c.seq cseq, o.seq oseq, o.exchange ox from message c join message o on o.sse_id = c.sse_id and o.raw = c.raw and o.replayed = 0 and o.exchange != $RX and o.seq < $RX where c.exchange = $RX and c.replayed = 1"
check_eq "each a copy, same id and bytes, of an event the server sent on another stream" "$AGAIN" \
	"$(sql "$T/h.db" "select count(distinct cseq) from ($COPIES)")"
check_eq "the copies of each stream in that stream's order" 0 \
	"$(sql "$T/h.db" "with p as ($COPIES) select count(*) from p a join p b on a.ox = b.ox and a.cseq < b.cseq and a.oseq > b.oseq")"
check_eq "and the \"{}\" on it are new to the tap (priming events carry no data)" "$NOTRPC|{}" \
	"$(sql "$T/h.db" "select count(*), group_concat(distinct raw) from message where exchange = $RX and kind = 'notjsonrpc' and replayed = 0")"
check_eq "the client answered each server request twice" "2|2" \
	"$(sql "$T/h.db" "select sum(json_extract(raw, '\$.id') = (select json_extract(raw, '\$.id') from message where method = 'sampling/createMessage' and replayed = 0)), sum(json_extract(raw, '\$.id') = (select json_extract(raw, '\$.id') from message where method = 'elicitation/create' and replayed = 0 and seq < $RX)) from message where dir = 'c2s' and kind = 'response'")"
"$MCPTAP" show -r "$T/h.db" -T json > "$T/h.show" 2> "$T/h.show.err"
check "the store matches the client's log, the copies included" \
	node "$NODEDIR/check-store.mjs" --http --replays-seen "$T/h.jsonl" "$T/h.show"

# ---- 2. analyze ----
"$MCPTAP" analyze -r "$T/h.db" > "$T/a.out" 2>&1
check_eq "analyze: exit 1 (errors)" 1 $?
FIRST=$(sql "$T/h.db" "select min(seq) from message where exchange = $RX and replayed = 1")
check_eq "one HTTP-020 per copy, the \"{}\" HTTP-007" "  HTTP-020 ×$AGAIN, first at session 1 #$FIRST
  HTTP-007 ×$NOTRPC" \
	"$(sed -n 's/^\(  HTTP-0[02][07] ×[0-9]*\)\(, first at session 1 #[0-9]*\)\?$/&/p' "$T/a.out" | sed 's/\(HTTP-007 ×[0-9]*\),.*/\1/')"
check_eq "the client's second answers are no second answer" 0 "$(grep -c 'RPC-004' "$T/a.out")"

# ---- 3. verify ----
NR=$(sql "$T/h.db" "select count(*) from message where session = 1 and dir = 'c2s' and kind = 'request'")
p2=$(free_port)
start_everything streamableHttp "$p2"
timeout 300 "$MCPTAP" replay -r "$T/h.db" --as client --no-store --url "http://127.0.0.1:$p2/mcp" > "$T/v.out" 2> "$T/v.err"
check_eq "verify against a fresh server-everything: exit 0" 0 $?
grep -v '^PASS' "$T/v.out" | sed 's/^/# verify: /'
check_eq "every request passes but the cancelled one" \
	"replay: $NR requests: $((NR - 1)) passed, 0 differed, 0 missing, 1 cancelled, 0 unanswered;" \
	"$(sed -n 's/^\(replay: .*unanswered;\).*/\1/p' "$T/v.out")"
check_eq "no MISSING, DIFF or GONE line, no server request missing" 0 \
	"$(grep -c '^MISSING\|^DIFF\|^GONE\|server requests missing' "$T/v.out")"
check_eq "nothing on stderr" "" "$(cat "$T/v.err")"
stop_everything

# ---- 4. The stdio mock ----
timeout 100 node "$CLIENT" --transport stdio --not-jsonrpc "$NOTRPC" --log "$T/m.jsonl" -- \
	"$MCPTAP" replay -r "$T/h.db" --as server --no-store > "$T/m.out" 2> "$T/m.err"
check_eq "the SDK client's stdio flow against the mock: exit 0" 0 $?
grep '^not ok' "$T/m.out"
check_eq "it got every server message once: the recording's, without the copies and the refused ping's error" \
	"$(sql "$T/h.db" "select count(*) from message m join http_exchange x on x.session = m.session and x.seq = m.exchange where m.dir = 's2c' and m.replayed = 0 and m.kind != 'notjsonrpc' and x.status < 400")" \
	"$(grep -c '^{"dir":"s2c"' "$T/m.jsonl")"
check_eq "sampling/createMessage and elicitation/create (the form's) once each" "1 2" \
	"$(grep -c '"method":"sampling/createMessage"' "$T/m.jsonl") $(grep -c '"method":"elicitation/create"' "$T/m.jsonl")"

# ---- 5. The HTTP mock, through the tap ----
start_mock "$T/h.db" --no-store --report "$T/hm.json"
start_tap "$T/hm.db" "$MOCK_URL"
timeout 100 node "$CLIENT" --transport http --resume --not-jsonrpc "$NOTRPC" --deleted-status 404 --log "$T/hm.jsonl" "$TAP_URL/mcp" > "$T/hm.out" 2>&1
check_eq "the SDK client, resuming the same way, against the HTTP mock: exit 0" 0 $?
grep '^not ok' "$T/hm.out"
check "its messages are committed" wait_committed "$T/hm.db" 1 "$T/hm.jsonl"
stop_tap
stop_mock
check_eq "the mock answers the resumption as the server did: the same messages came again" \
	"$AGAIN JSON-RPC messages came again (1 sampling/createMessage, 1 elicitation/create" \
	"$(sed -n 's/^# resumed: \(.*elicitation\/create\).*/\1/p' "$T/hm.out")"
MX=$(sql "$T/hm.db" "select seq from http_exchange where method = 'GET' and last_event_id is not null")
# (an answer by its id; a request or notification by its method: the mock's server requests have ids of its own)
WHAT="select group_concat(kind || ' ' || coalesce(method, json_extract(raw, '\$.id')), ',') from (select kind, method, raw from message where exchange = %s and replayed = 1 order by seq)"
check_eq "the tap in front of the mock sees the same copies, in the same order, with the ids they first had" \
	"$(sql "$T/h.db" "$(printf "$WHAT" "$RX")")" "$(sql "$T/hm.db" "$(printf "$WHAT" "$MX")")"
check_eq "each one's bytes as the mock first sent them" \
	"$(sql "$T/hm.db" "select group_concat(hex(raw), ',') from (select (select raw from message o where o.sse_id = m.sse_id and o.replayed = 0) raw from message m where exchange = $MX and replayed = 1 order by seq)")" \
	"$(sql "$T/hm.db" "select group_concat(hex(raw), ',') from (select raw from message where exchange = $MX and replayed = 1 order by seq)")"
check_eq "the mock's report: one resumption, the recorded one's" \
	"[{\"recorded\":$RX,\"events\":$AGAIN}]" \
	"$(node -e 'console.log(JSON.stringify(require(process.argv[1]).sessions[0].resumed))' "$T/hm.json")"
finish
