#!/bin/sh
# t0364-export-pcapng: `mcptap export -T pcapng`, checked by Wireshark's own tools
# (Debian's tshark and capinfos), by an independent reader of the blocks, and by
# `mcptap import` reading the file back.
#
# 1. The committed real captures (tests/fixtures/pcap: the SDK client's full flow
#    through the HTTP tap, Streamable HTTP and legacy SSE), imported, exported and
#    imported again: the same sessions, exchanges and messages, down to their seqs,
#    times and connections. In the export tshark reads every packet the file holds
#    (as many as capinfos and the block reader count), in time order, every IP and
#    TCP checksum right and no TCP analysis warning; a handshake and a FIN each way
#    per client connection; on each TCP stream the requests' methods and the
#    responses' statuses of that connection's exchanges, in order; the direction
#    flag of every packet right; every message named once in the comments, as
#    "session S: KIND #SEQ METHOD", and each request's packet saying its exchange.
# 2. The same flow recorded now through the HTTP tap (both transports): the same
#    checks, and the import of the export holds what the tap stored.
# 3. Exact bytes (fixture-load shapes), as tshark follows each TCP stream: a JSON
#    body whose stored Content-Length is not its length (the body's is written), an
#    SSE stream in chunks with each event's id and type, a 202 body kept on the
#    exchange, a gzip body stored decoded (its Content-Encoding left out), a request
#    never answered; the legacy GET stream beginning with its endpoint event.
# 4. stdio: the SDK client's stdio flow through `mcptap record`: one exported PDU
#    per message and stderr line, decoded by tshark's json dissector with each
#    request's and notification's method visible exactly once, in order; stderr as
#    text lines; directions and comments as stored.
# 5. A file with both kinds (two link types), -Y (messages of HTTP sessions as
#    PDUs), redaction (a capture made with --keep-secrets: no secret in the export,
#    and the import of it reads the redacted body whole), refusing a terminal,
#    the unknown-format message, a failed write, memory flat in the capture's size.
# e2e: long
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/pcap.sh"

need_npm @modelcontextprotocol/sdk @modelcontextprotocol/server-everything
command -v tshark > /dev/null && command -v capinfos > /dev/null ||
	die "tshark and capinfos are not installed: run tests/setup.sh test"
FIX=$TOP/tests/fixtures/pcap
LOAD=$PEERS/fixture-load
[ -x "$LOAD" ] || die "tests/peers/fixture-load is not built: run make"
export LC_ALL=C

# ts FILE ARG...: tshark -r FILE ARG...; its stderr in $T/ts.err, without the
# warning it prints to root.
ts() {
	_f=$1
	shift
	tshark -r "$_f" "$@" 2> "$T/ts.raw"
	_rc=$?
	grep -v '^Running as user "root"' "$T/ts.raw" > "$T/ts.err"
	return $_rc
}

# walk FILE: the file's blocks as an independent reader sees them: "SHBS LINKTYPES
# EPBS ok" (or what is wrong: a length not the same at both ends or not a multiple
# of 4, a packet before its interface, a block of another type, bytes left over).
walk() {
	node -e '
const b = require("fs").readFileSync(process.argv[1]);
let off = 0, shb = 0, epb = 0;
const lt = [], bad = [];
while (off < b.length && !bad.length) {
	if (off + 12 > b.length) { bad.push("a cut block at " + off); break; }
	const type = b.readUInt32LE(off), len = b.readUInt32LE(off + 4);
	if (len < 12 || len % 4 || off + len > b.length || b.readUInt32LE(off + len - 4) !== len) {
		bad.push("a bad length at " + off);
		break;
	}
	if (type === 0x0a0d0d0a) {
		shb++;
		if (off !== 0 || b.readUInt32LE(off + 8) !== 0x1a2b3c4d) bad.push("SHB at " + off);
	} else if (type === 1) {
		lt.push(b.readUInt16LE(off + 8));
	} else if (type === 6) {
		epb++;
		const cap = b.readUInt32LE(off + 20);
		if (b.readUInt32LE(off + 8) >= lt.length) bad.push("a packet before its interface at " + off);
		if (28 + Math.ceil(cap / 4) * 4 + 4 > len) bad.push("a packet past its block at " + off);
	} else {
		bad.push("block type " + type + " at " + off);
	}
	off += len;
}
console.log(shb, lt.join(",") || "-", epb, bad.join("; ") || "ok");' "$1"
}

# capinfo NAME: the value capinfos gave for NAME ($T/capinfos.out).
capinfo() { sed -n "s/^$1: *//p" "$T/capinfos.out"; }

# npackets FILE: the packets tshark reads.
npackets() { ts "$1" -T fields -e frame.number | wc -l; }

# streams_want DB: per client connection of each session (in the order tshark numbers
# TCP streams: by their first packet), its exchanges' methods and statuses in order.
streams_want() {
	sql "$1" "select session, conn, method, coalesce(status, '') from http_exchange order by session, seq" |
		awk -F'|' '{ k = $1 " " $2; if (!(k in n)) { n[k] = c; o[c++] = k }
			r[k] = r[k] " " $3; if ($4 != "") s[k] = s[k] " " $4 }
			END { for (i = 0; i < c; i++) print i ":" r[o[i]] " |" s[o[i]] }'
}

# streams_seen PCAPNG: the same as tshark decodes them (each response at its head:
# not waiting for the end of a body, which an SSE stream cut by a FIN never has).
streams_seen() {
	ts "$1" -o http.desegment_body:FALSE -Y http -T fields -e tcp.stream \
		-e http.request.method -e http.response.code |
		awk -F'\t' '{ if (!($1 in n)) { n[$1] = 1; o[c++] = $1 }
			if ($2 != "") r[$1] = r[$1] " " $2; if ($3 != "") s[$1] = s[$1] " " $3 }
			END { for (i = 0; i < c; i++) print o[i] ":" r[o[i]] " |" s[o[i]] }'
}

# notes_want DB: each message as the comments name it, "session S: KIND #SEQ METHOD"
# (an answer: its request's method), sorted.
notes_want() {
	sql "$1" "select 'session ' || m.session || ': ' || m.kind || ' #' || m.seq ||
		coalesce(' ' || coalesce(m.method, (select q.method from message q
			where q.session = m.session and q.seq = m.request_seq)), '')
		from message m" | sort
}

# notes_seen PCAPNG: the messages the packets' comments name, the same way, sorted.
notes_seen() {
	ts "$1" -T fields -e frame.comment | sort -u |
		awk '{ s = $2; sub(/[,:]$/, "", s); sub(/^[^:]*: /, ""); n = split($0, part, ", ")
			for (i = 1; i <= n; i++)
				if (part[i] ~ /^(request|notification|response|error|batch|invalid|notjsonrpc) #[0-9]+/)
					print "session " s ": " part[i] }' | sort
}

# requests_want DB: the comment of each request's packets, in order.
requests_want() {
	sql "$1" "select 'session ' || x.session || ', exchange ' || x.seq || ': ' || x.method || ' ' ||
		x.target || coalesce((select ', ' || m.kind || ' #' || m.seq || coalesce(' ' ||
			coalesce(m.method, (select q.method from message q where q.session = m.session
				and q.seq = m.request_seq)), '')
			from message m where m.session = x.session and m.exchange = x.seq and
			m.dir = 'c2s'), '')
		from http_exchange x order by x.session, x.seq"
}

requests_seen() {
	ts "$1" -Y http.request -T fields -e frame.comment
}

# directions PCAPNG: packets whose direction flag is not what their TCP stream says
# (inbound to the port the stream's SYN went to, outbound from it), and streams not
# begun by a SYN; "0 0" when all is right.
directions() {
	ts "$1" -T fields -e tcp.stream -e tcp.flags -e tcp.dstport -e frame.packet_flags_direction |
		awk -F'\t' '{ if (!($1 in sp)) { sp[$1] = $3; if ($2 != "0x0002") nosyn++ }
			want = $3 == sp[$1] ? 1 : 2; if ($4 + 0 != want) bad++ }
			END { print bad + 0, nosyn + 0 }'
}

# check_http LABEL PCAPNG DB: what tshark, capinfos and the block reader say of the
# export PCAPNG of DB's HTTP sessions.
check_http() {
	_n=$(npackets "$2")
	check_eq "$1: tshark reads the file to its end, saying nothing" "0|" \
		"$(ts "$2" -V > /dev/null; echo "$?|$(cat "$T/ts.err")")"
	check_eq "$1: the blocks: a section, a raw IP interface, $_n packets" "1 101 $_n ok" "$(walk "$2")"
	capinfos -M "$2" > "$T/capinfos.out"
	check_eq "$1: capinfos: as many packets, in time order, to the nanosecond, by mcptap" \
		"$_n|True|nanoseconds (9)|mcptap 0.1.0" "$(capinfo 'Number of packets')|$(capinfo 'Strict time order')|$(capinfo 'File timestamp precision')|$(capinfo 'Capture application')"
	check_eq "$1: every IP and TCP checksum right" "$_n" \
		"$(ts "$2" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
			-Y 'ip.checksum.status == 1 && tcp.checksum.status == 1' | wc -l)"
	check_eq "$1: no TCP analysis warning (lost, retransmitted, out of order, ACKed unseen)" 0 \
		"$(ts "$2" -Y tcp.analysis.flags | wc -l)"
	_c=$(sql "$3" "select count(*) from (select distinct session, conn from http_exchange)")
	check_eq "$1: a handshake and a FIN each way per client connection ($_c)" "$_c $_c $((2 * _c))" \
		"$(ts "$2" -Y 'tcp.flags == 0x002' | wc -l) $(ts "$2" -Y 'tcp.flags == 0x012' | wc -l) $(ts "$2" -Y 'tcp.flags.fin == 1' | wc -l)"
	check_eq "$1: each TCP stream: its exchanges' methods and statuses, in order" \
		"$(streams_want "$3")" "$(streams_seen "$2")"
	check_eq "$1: every packet's direction as its stream says, every stream begun by a SYN" "0 0" \
		"$(directions "$2")"
	check_eq "$1: every packet has a comment" "$_n" "$(ts "$2" -Y frame.comment | wc -l)"
	check_eq "$1: every message named in the comments, once ($(sql "$3" 'select count(*) from message') messages)" \
		"$(notes_want "$3")" "$(notes_seen "$2")"
	check_eq "$1: each request's packets name its session, exchange, method, target and message" \
		"$(requests_want "$3")" "$(requests_seen "$2")"
}

# rows DB: what an import of an import must give again, row for row.
rows() {
	sqlite3 -batch -noheader "$1" "
select 'session', transport, upstream, client_addr, http_session_id, started_wall, ended_wall,
       duration_ns, protocol_version, client_name, server_name, msgs_c2s, msgs_s2c, bytes_c2s, bytes_s2c
  from session order by id;
select 'message', session, seq, t_ns, wall, dir, channel, kind, method, id, idtype, request_seq,
       exchange, sse_id, sse_event, replayed, hex(raw) from message order by session, seq;
select 'exchange', session, seq, conn, method, target, req_headers, status, resp_headers, resp_type,
       hex(resp_body), hex(req_body), t_ns, wall, first_byte_ns, end_ns, outcome, error, last_event_id
  from http_exchange order by session, seq;
select 'gap', count(*) from gap;"
}

# same_as_tap TAPDB IMPDB: what the HTTP tap stored and an import of its export: the
# messages in order (bytes, kinds, SSE ids), the exchanges in order (all but times and
# the import's word for an end that was not complete).
same_as_tap() {
	for _db in "$1" "$2"; do
		sqlite3 -batch -noheader "$_db" "
select dir, kind, method, id, idtype, exchange - (select min(seq) from http_exchange), sse_id,
       sse_event, replayed, hex(raw) from message order by seq;
select method, target, req_headers, status, resp_headers, resp_type, hex(resp_body), hex(req_body),
       last_event_id, outcome = 'complete' from http_exchange order by seq;"
	done > "$T/same.txt"
	_h=$(($(wc -l < "$T/same.txt") / 2))
	[ "$(head -n "$_h" "$T/same.txt")" = "$(tail -n "$_h" "$T/same.txt")" ]
}

# ---- 1. The committed real captures ----
for n in http sse; do
	"$MCPTAP" import -w "$T/$n.db" "$FIX/$n.pcap" 2> "$T/$n.sum" || die "cannot import $n.pcap"
	"$MCPTAP" export -r "$T/$n.db" -T pcapng -o "$T/$n.pcapng" 2> "$T/$n.exp"
	check_eq "$n.pcap: export -T pcapng exits 0, saying nothing" "0|" "$?|$(cat "$T/$n.exp")"
	check_http "$n.pcap" "$T/$n.pcapng" "$T/$n.db"
	"$MCPTAP" import -w "$T/$n-2.db" "$T/$n.pcapng" 2> "$T/$n-2.sum"
	check_eq "$n.pcap: import reads the export, skipping nothing" "0|" \
		"$?|$(grep -E 'skipped|truncated|HTTP:|warning' "$T/$n-2.sum")"
	dump_sessions "$T/$n.db" > "$T/$n.dump"
	dump_sessions "$T/$n-2.db" > "$T/$n-2.dump"
	check_eq "$n.pcap: the same sessions, exchanges and messages ($(grep -c '^msg' "$T/$n.dump") messages)" \
		"$(cat "$T/$n.dump")" "$(cat "$T/$n-2.dump")"
	rows "$T/$n.db" > "$T/$n.rows"
	rows "$T/$n-2.db" > "$T/$n-2.rows"
	diff "$T/$n.rows" "$T/$n-2.rows" > "$T/$n.rdiff"
	check_eq "$n.pcap: row for row, seqs, times, connections, headers and outcomes too" 0 $?
	head -c 1500 "$T/$n.rdiff"
done
check_eq "the legacy session again keyed by its endpoint, from the event the export begins its stream with" \
	"sse|/message?sessionId=6d830ba7-15f1-4e85-b980-7194ccaa46f9" \
	"$(sql "$T/sse-2.db" 'select transport, http_session_id from session')"
check_eq "the same export twice: the same bytes" "$(cksum < "$T/http.pcapng")" \
	"$("$MCPTAP" export -r "$T/http.db" -T pcapng | cksum)"

# ---- 2. Recorded now through the HTTP tap ----
for n in http sse; do
	p=$(free_port)
	start_everything "$([ $n = http ] && echo streamableHttp || echo sse)" "$p"
	start_tap "$T/tap-$n.db" "http://127.0.0.1:$p"
	timeout 100 node "$NODEDIR/http-client.mjs" --transport $n --log "$T/tap-$n.jsonl" \
		"$TAP_URL$([ $n = http ] && echo /mcp || echo /sse)" > "$T/tap-$n.out" 2>&1
	check_eq "tap $n: the SDK client's full flow through the tap exits 0" 0 $?
	check "tap $n: its messages are committed" wait_committed "$T/tap-$n.db" 1 "$T/tap-$n.jsonl"
	stop_tap
	stop_everything
	"$MCPTAP" export -r "$T/tap-$n.db" -T pcapng -o "$T/tap-$n.pcapng"
	check_eq "tap $n: export exits 0" 0 $?
	check_http "tap $n" "$T/tap-$n.pcapng" "$T/tap-$n.db"
	"$MCPTAP" import -w "$T/tap-$n-2.db" "$T/tap-$n.pcapng" 2> /dev/null
	check_eq "tap $n: the import of the export holds what the tap stored ($(sql "$T/tap-$n.db" 'select count(*) from message') messages)" \
		"$(dump_sessions "$T/tap-$n.db")" "$(dump_sessions "$T/tap-$n-2.db")"
	check "tap $n: in the same order, with the same exchanges, headers and bodies" \
		same_as_tap "$T/tap-$n.db" "$T/tap-$n-2.db"
	check_eq "tap $n: the client's address and the upstream's, as the tap stored them" \
		"$(sql "$T/tap-$n.db" 'select client_addr, upstream from session')" \
		"$(sql "$T/tap-$n-2.db" 'select client_addr, upstream from session')"
done

# ---- 3. Exact bytes ----
cat > "$T/exact.fx" << 'EOF'
@transport http
@session-id s-1
@headers [Host: 127.0.0.1:3001]
=> POST /mcp [Content-Type: application/json] [Content-Length: 58]
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}
<= 200 json [Mcp-Session-Id: s-1] [Content-Length: 37]
< {"jsonrpc":"2.0","id":1,"result":{}}
=| complete
=> POST /mcp [Content-Length: 40] [Mcp-Session-Id: s-1]
> {"jsonrpc":"2.0","id":2,"method":"ping"}
<= 200 sse [Transfer-Encoding: chunked]
<@ id=e1 event=message {"jsonrpc":"2.0","method":"notifications/message","params":{}}
<@ id=e2 {"jsonrpc":"2.0","id":2,"result":{}}
=| complete
=> POST /mcp [Content-Length: 54] [Mcp-Session-Id: s-1]
> {"jsonrpc":"2.0","method":"notifications/initialized"}
<= 202 empty [Transfer-Encoding: chunked]
<! Accepted
=| complete
=> POST /mcp [Content-Length: 40] [Mcp-Session-Id: s-1]
> {"jsonrpc":"2.0","id":3,"method":"ping"}
<= 200 json [Content-Encoding: gzip] [Content-Length: 30]
< {"jsonrpc":"2.0","id":3,"result":{}}
=| complete
=> POST /mcp [Content-Length: 40] [Mcp-Session-Id: s-1]
> {"jsonrpc":"2.0","id":4,"method":"ping"}
=| unreachable connection refused
EOF
cat > "$T/legacy.fx" << 'EOF'
@transport sse
@session-id /message?sessionId=abc
=> GET /sse [Accept: text/event-stream]
<= 200 sse [Transfer-Encoding: chunked]
=> POST /message?sessionId=abc [Content-Length: 40]
> {"jsonrpc":"2.0","id":1,"method":"ping"}
<= 202 empty [Content-Length: 8]
<! Accepted
=| complete
~ 1
<@ event=message {"jsonrpc":"2.0","id":1,"result":{}}
=| complete
EOF
"$LOAD" "$T/exact.fx" "$T/exact.db" && "$LOAD" "$T/legacy.fx" "$T/exact.db" || die "fixture-load failed"
"$MCPTAP" export -r "$T/exact.db" -T pcapng -o "$T/exact.pcapng"
check_eq "exact: export exits 0" 0 $?
# follow N: TCP stream N's bytes as tshark follows them, a line per segment, "C| " or
# "S| " before the client's and the server's, CR shown as ^M.
follow() {
	ts "$T/exact.pcapng" -q -z "follow,tcp,raw,$1" | sed -n '/^Node 1/,/^=====/p' | sed '1d;$d' |
		while IFS= read -r l; do
			case $l in
			"	"*) printf '%s' "${l#	}" | xxd -r -p | sed 's/^/S| /' ;;
			*) printf '%s' "$l" | xxd -r -p | sed 's/^/C| /' ;;
			esac
			echo
		done | sed 's/\r/^M/g'
}
REQ='C| POST /mcp HTTP/1.1^M
C| Host: 127.0.0.1:3001^M'
check_eq "exact: a JSON body, its length written (the stored 37 was not its length)" "$REQ
C| Content-Type: application/json^M
C| Content-Length: 58^M
C| ^M
C| {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}
S| HTTP/1.1 200 OK^M
S| Mcp-Session-Id: s-1^M
S| Content-Length: 36^M
S| Content-Type: application/json^M
S| ^M

S| {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}" "$(follow 0)"
check_eq "exact: SSE events in chunks, each with its id and type, and the last chunk" "$REQ
C| Content-Length: 40^M
C| Mcp-Session-Id: s-1^M
C| ^M
C| {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}
S| HTTP/1.1 200 OK^M
S| Transfer-Encoding: chunked^M
S| Content-Type: text/event-stream^M
S| ^M

S| 5c^M
S| id: e1
S| event: message
S| data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}
S| 
S| ^M

S| 33^M
S| id: e2
S| data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}
S| 
S| ^M

S| 0^M
S| ^M" "$(follow 1)"
check_eq "exact: a 202 with the body the exchange kept, chunked" "$REQ
C| Content-Length: 54^M
C| Mcp-Session-Id: s-1^M
C| ^M
C| {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}
S| HTTP/1.1 202 Accepted^M
S| Transfer-Encoding: chunked^M
S| ^M

S| 8^M
S| Accepted^M

S| 0^M
S| ^M" "$(follow 2)"
check_eq "exact: a gzip body stored decoded: written decoded, without its Content-Encoding" "$REQ
C| Content-Length: 40^M
C| Mcp-Session-Id: s-1^M
C| ^M
C| {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}
S| HTTP/1.1 200 OK^M
S| Content-Length: 36^M
S| Content-Type: application/json^M
S| ^M

S| {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}" "$(follow 3)"
check_eq "exact: a request never answered: the request, then the connection closes" "$REQ
C| Content-Length: 40^M
C| Mcp-Session-Id: s-1^M
C| ^M
C| {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}" "$(follow 4)"
check_eq "exact: its packets: the handshake, the request, a FIN each way (the client's first), the last ACK" \
	"0x0002 0x0012 0x0010 0x0018 0x0011 0x0011 0x0010" \
	"$(ts "$T/exact.pcapng" -Y 'tcp.stream == 4' -T fields -e tcp.flags | tr '\n' ' ' | sed 's/ $//')"
check_eq "exact: the legacy GET stream begins with its endpoint event" "C| GET /sse HTTP/1.1^M
C| Accept: text/event-stream^M
C| ^M

S| HTTP/1.1 200 OK^M
S| Transfer-Encoding: chunked^M
S| Content-Type: text/event-stream^M
S| ^M

S| 2e^M
S| event: endpoint
S| data: /message?sessionId=abc
S| 
S| ^M

S| 3b^M
S| event: message
S| data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}
S| 
S| ^M

S| 0^M
S| ^M" "$(follow 5)"
"$MCPTAP" import -w "$T/exact-2.db" "$T/exact.pcapng" 2> /dev/null
check_eq "exact: the import of it: both sessions, their exchanges and messages" \
	"$(dump_sessions "$T/exact.db")" "$(dump_sessions "$T/exact-2.db")"

# ---- 4. stdio: exported PDUs for the json dissector ----
ENTRY=$(npm_entry @modelcontextprotocol/server-everything) || { echo "$ENTRY"; exit 1; }
timeout 120 node "$NODEDIR/sdk-client.mjs" --log "$T/stdio.jsonl" -- \
	"$MCPTAP" record -w "$T/stdio.db" -- node "$ENTRY" stdio 2> "$T/stdio.err"
check_eq "stdio: the SDK client's flow through mcptap record exits 0" 0 $?
"$MCPTAP" export -r "$T/stdio.db" -T pcapng -o "$T/stdio.pcapng"
check_eq "stdio: export exits 0" 0 $?
NM=$(sql "$T/stdio.db" "select count(*) from message")
NE=$(sql "$T/stdio.db" "select count(*) from stderr_line")
check_eq "stdio: tshark reads it, saying nothing" "0|" "$(ts "$T/stdio.pcapng" -V > /dev/null; echo "$?|$(cat "$T/ts.err")")"
check_eq "stdio: the blocks: an upper-PDU interface, a packet per message and stderr line ($NM + $NE)" \
	"1 252 $((NM + NE)) ok" "$(walk "$T/stdio.pcapng")"
capinfos -M "$T/stdio.pcapng" > "$T/capinfos.out"
check_eq "stdio: tshark and capinfos count as many, capinfos in time order" "$((NM + NE)) $((NM + NE)) True" \
	"$(npackets "$T/stdio.pcapng") $(capinfo 'Number of packets') $(capinfo 'Strict time order')"
check_eq "stdio: each message decoded as JSON by tshark, each stderr line as text" "$NM $NE" \
	"$(ts "$T/stdio.pcapng" -Y json | wc -l) $(ts "$T/stdio.pcapng" -Y data-text-lines | wc -l)"
sql "$T/stdio.db" "select seq, case when kind in ('request', 'notification') then method else '-' end
	from (select seq, kind, method from message union all select seq, 'stderr', null from stderr_line)
	order by seq" | sed 's/^[0-9]*|//' > "$T/methods.want"
ts "$T/stdio.pcapng" -T fields -e json.path_with_value -E occurrence=a -E 'aggregator=|' |
	awk -F'|' '{ m = ""; for (i = 1; i <= NF; i++) if ($i ~ /^\/method:/) m = m (m == "" ? "" : " ") substr($i, 9)
		print m == "" ? "-" : m }' > "$T/methods.seen"
check_eq "stdio: each request's and notification's method visible once, in order ($(grep -vc '^-$' "$T/methods.want") of them)" \
	"$(cat "$T/methods.want")" "$(cat "$T/methods.seen")"
check_eq "stdio: directions: client to server inbound, the server's messages and stderr outbound" \
	"$(sql "$T/stdio.db" "select case dir when 'c2s' then 1 else 2 end from (select seq, dir from message
		union all select seq, 'stderr' from stderr_line) order by seq")" \
	"$(ts "$T/stdio.pcapng" -T fields -e frame.packet_flags_direction | sed 's/^0x0*//')"
check_eq "stdio: the comments: session, kind, seq and method (an answer: its request's)" \
	"$(sql "$T/stdio.db" "select 'session 1: ' || kind || ' #' || seq || coalesce(' ' || method, '') from (
		select m.seq, m.kind, coalesce(m.method, (select q.method from message q where
			q.session = m.session and q.seq = m.request_seq)) method from message m
		union all select seq, 'stderr', null from stderr_line) order by seq")" \
	"$(ts "$T/stdio.pcapng" -T fields -e frame.comment)"
check_eq "stdio: the times as stored, to the nanosecond" \
	"$(sql "$T/stdio.db" "select (select started_wall from session) * 1000 + t_ns from (select seq, t_ns
		from message union all select seq, t_ns from stderr_line) order by seq")" \
	"$(ts "$T/stdio.pcapng" -T fields -e frame.time_epoch | tr -d .)"

# ---- 5. Both kinds, -Y, redaction, usage, a failed write, memory ----
cp "$T/stdio.db" "$T/mixed.db"
"$MCPTAP" import -w "$T/mixed.db" "$FIX/http.pcap" 2> /dev/null || die "cannot import into mixed.db"
"$MCPTAP" export -r "$T/mixed.db" -T pcapng -o "$T/mixed.pcapng"
NH=$(npackets "$T/http.pcapng")
check_eq "both kinds: an interface per link type, the packets of both" "1 252,101 $((NM + NE + NH)) ok" \
	"$(walk "$T/mixed.pcapng")"
check_eq "both kinds: tshark reads them all: the PDUs on one interface, the TCP packets on the other" \
	"$((NM + NE)) $NH" \
	"$(ts "$T/mixed.pcapng" -Y 'frame.interface_id == 0' | wc -l) $(ts "$T/mixed.pcapng" -Y 'frame.interface_id == 1 && tcp' | wc -l)"
check_eq "both kinds: each HTTP exchange still decoded on its stream" \
	"$(streams_want "$T/http.db")" "$(streams_seen "$T/mixed.pcapng")"

"$MCPTAP" export -r "$T/http.db" -T pcapng -Y 'method == "tools/call"' -o "$T/y.pcapng"
NY=$("$MCPTAP" show -r "$T/http.db" -Y 'method == "tools/call"' -T json | wc -l)
check_eq "-Y: the messages it passes ($NY), as PDUs (their exchanges are left out)" "1 252 $NY ok" \
	"$(walk "$T/y.pcapng")"
check_eq "-Y: their comments name them and their exchanges, as show -Y lists them" \
	"$("$MCPTAP" show -r "$T/http.db" -Y 'method == "tools/call"' -T json | node -e '
for (const l of require("fs").readFileSync(0, "utf8").trim().split("\n")) {
	const o = JSON.parse(l);
	console.log(`session ${o.session}, exchange ${o.exchange}: ${o.kind} #${o.seq} ${o.method}`);
}')" "$(ts "$T/y.pcapng" -T fields -e frame.comment)"

# Redaction: a capture made with --keep-secrets holds the secrets; its export does not.
p=$(free_port)
start_everything streamableHttp "$p"
start_tap "$T/secret.db" "http://127.0.0.1:$p" --keep-secrets
SECRET=hunter2-hunter2-hunter2
BODY='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"},"password":"'$SECRET'"}}'
curl -sS -N -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	-H 'Authorization: Bearer sk-live-abcdefghijklmnopqrstuvwx' -d "$BODY" "$TAP_URL/mcp" > "$T/curl.out"
check_eq "redaction: curl's initialize through the tap, --keep-secrets" 0 $?
stop_tap
stop_everything
check_eq "redaction: the capture holds the secrets" "1|1" \
	"$(sql "$T/secret.db" "select count(*) from message where cast(raw as text) like '%$SECRET%'")|$(sql "$T/secret.db" "select count(*) from http_exchange where req_headers like '%sk-live-abcdefghijklmnopqrstuvwx%'")"
"$MCPTAP" export -r "$T/secret.db" -T pcapng -o "$T/secret.pcapng"
check_eq "redaction: the export holds neither" "0 0" \
	"$(grep -ao "$SECRET" "$T/secret.pcapng" | wc -l) $(grep -ao 'sk-live-abcdefghijklmnopqrstuvwx' "$T/secret.pcapng" | wc -l)"
"$MCPTAP" import -w "$T/secret-2.db" "$T/secret.pcapng" 2> /dev/null
check_eq "redaction: its import reads the redacted body whole (Content-Length said its length): a marker for the secret" \
	"$(($(printf '%s' "$BODY" | wc -c) - ${#SECRET} + 19))|1|initialize" \
	"$(sql "$T/secret-2.db" "select length(raw), cast(raw as text) like '%\"password\":\"[redacted:%]\"%', method from message where dir = 'c2s'")"
check_eq "redaction: --keep-secrets writes them" "1 1" \
	"$("$MCPTAP" export -r "$T/secret.db" -T pcapng --keep-secrets > "$T/kept.pcapng"
		echo "$(grep -ao "$SECRET" "$T/kept.pcapng" | wc -l) $(grep -ao 'sk-live-abcdefghijklmnopqrstuvwx' "$T/kept.pcapng" | wc -l)")"

# Usage: a terminal is refused (a pty from script(1)); the formats are named.
# (stdin from /dev/null: the pty would echo what the test's own stdin holds.)
script -qec "'$MCPTAP' export -r '$T/http.db' -T pcapng" /dev/null < /dev/null > "$T/tty.out" 2>&1
check_eq "a terminal: refused, exit 2" "2|mcptap: will not write pcapng to a terminal: give -o FILE, or redirect standard output" \
	"$?|$(head -n 1 "$T/tty.out" | tr -d '\r')"
script -qec "'$MCPTAP' export -r '$T/http.db' -T pcapng -o -" /dev/null < /dev/null > "$T/tty.out" 2>&1
check_eq "-o - on a terminal: refused too" 2 $?
"$MCPTAP" export -r "$T/http.db" -T pcap > /dev/null 2> "$T/fmt.err"
check_eq "an unknown format names pcapng" "2|mcptap: unknown format 'pcap' (jsonl, har, otlp, pcapng)" \
	"$?|$(head -n 1 "$T/fmt.err")"
"$MCPTAP" export -r "$T/http.db" -T pcapng > /dev/full 2> "$T/full.err"
check_eq "a failed write (a full disk): exit 2, said" "2|1" "$?|$(grep -c 'No space left on device' "$T/full.err")"

# Memory: flat in the capture's size (10 times the messages, not more memory).
# stdio_fx N: N tools/call requests and answers of about 1 kB each.
stdio_fx() {
	awk -v n="$1" 'BEGIN { x = sprintf("%0900d", 0); for (i = 0; i < n; i++) {
		printf "> {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"%s\"}}}\n", i, x
		printf "< {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}}\n", i, x } }'
}
stdio_fx 2000 > "$T/small.fx"
stdio_fx 20000 > "$T/big.fx"
# One GET stream of 20000 SSE events of about 1 kB.
awk 'BEGIN { x = sprintf("%0900d", 0); print "@transport http"; print "=> GET /mcp [Accept: text/event-stream]"
	print "<= 200 sse [Transfer-Encoding: chunked]"
	for (i = 0; i < 20000; i++) printf "<@ id=e%d {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"%s\"}}\n", i, x
	print "=| complete" }' > "$T/bigsse.fx"
for f in small big bigsse; do
	"$LOAD" "$T/$f.fx" "$T/$f.db" || die "fixture-load $f failed"
	/usr/bin/time -f %M -o "$T/$f.rss" "$MCPTAP" export -r "$T/$f.db" -T pcapng -o "$T/$f.pcapng" ||
		die "export of $f failed"
done
RS=$(cat "$T/small.rss")
RB=$(cat "$T/big.rss")
RE=$(cat "$T/bigsse.rss")
echo "# peak RSS: ${RS} KB for $(wc -c < "$T/small.pcapng") bytes, ${RB} KB for $(wc -c < "$T/big.pcapng") (stdio), ${RE} KB for $(wc -c < "$T/bigsse.pcapng") (one SSE stream)"
if [ -n "${ASAN_OPTIONS:-}" ]; then
	echo "# peak RSS not compared under AddressSanitizer (its quarantine keeps freed memory)"
else
	check_eq "memory: 40000 stdio messages, or 20000 SSE events, take at most 2 MB more than 4000 messages" \
		"1 1" "$([ "$RB" -le $((RS + 2048)) ] && echo 1 || echo 0) $([ "$RE" -le $((RS + 2048)) ] && echo 1 || echo 0)"
fi
# (Counted by capinfos and the block reader: tshark's reassembly of one 20 MB
# chunked body takes minutes.)
check_eq "memory: ... and the big exports hold every packet (the SSE one: 20000 events, the GET, its head, its last chunk, 6 to open and close)" \
	"40000 1 252 40000 ok|20009 1 101 20009 ok" \
	"$(capinfos -c -M "$T/big.pcapng" | sed -n 's/^Number of packets: *//p') $(walk "$T/big.pcapng")|$(capinfos -c -M "$T/bigsse.pcapng" | sed -n 's/^Number of packets: *//p') $(walk "$T/bigsse.pcapng")"
finish
