#!/bin/sh
# tests/fuzz/run.sh SECONDS BIN... - run each libFuzzer binary for SECONDS.
#
# Each target NAME (the binary's file name) keeps its corpus in
# build/fuzz/corpus-NAME, seeded here from a few inline examples, and writes
# crash, leak and timeout inputs to build/fuzz/artifacts-NAME/. One line is
# printed per target; the exit status is non-zero when any target found a
# crash (or could not run). Reproduce a finding with: BIN ARTIFACT
set -u

usage() {
	echo "usage: tests/fuzz/run.sh SECONDS BIN..." >&2
	exit 2
}
[ $# -ge 2 ] || usage
secs=$1
shift
case $secs in '' | *[!0-9]*) usage ;; esac

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/fuzz
mkdir -p "$out" || exit 2

# seed DIR NAME PRINTF-FORMAT: one corpus file (printf escapes allowed, \000 too).
seed() {
	# shellcheck disable=SC2059
	printf "$3" > "$1/seed-$2"
}

# The client of fuzz-mock's recordings: its flow, and pieces of it.
seed_mock() {
	seed "$1" flow '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long","_meta":{"progressToken":7}}}\n{"jsonrpc":"2.0","id":1,"result":{"model":"m","role":"assistant","content":{"type":"text","text":"x"}}}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
	seed "$1" again '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"long"}}\n{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"long"}}\n{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}\n'
	seed "$1" odd '[1,2]\n{"jsonrpc":"2.0","id":null}\nnot json\n{"jsonrpc":"2.0","id":9,"result":{}}\n'
}

seed_classify() {
	d=$1
	seed "$d" request '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5e-3,true,null]},"_meta":{"progressToken":"p1"}}}\r\n'
	seed "$d" progress '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":10}}\n'
	seed "$d" response '{"jsonrpc":"2.0","id":"a\\u00e9\\ud83d\\ude00","result":{"content":[{"type":"text","text":"caf\303\251"}],"_meta":{}}}'
	seed "$d" error '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"code":1}}}'
	seed "$d" batch '[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},[],{}]'
	seed "$d" escapes '{"\\u006asonrpc":"2\\u002e0","i\\u0064":-0,"method":"\\"\\\\\\/\\b\\f\\n\\r\\t","id":9}'
	seed "$d" invalid '{"jsonrpc":"2.0","id":01,"method":"\355\240\200","x":tru}'
	seed "$d" deep '[[[[[[[[[[[[[[[[{"a":[[[[[[[[0]]]]]]]]}]]]]]]]]]]]]]]]'
	seed "$d" init '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}}\n'
}

# A session: the first byte of a line picks the side ('0' client, '1' server, '!' stderr).
seed_analyze() {
	d=$1
	seed "$d" session '0{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}}\n1{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"serverInfo":{"name":"s","version":"1"}}}\n0{"jsonrpc":"2.0","method":"notifications/initialized"}\n0{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}\n1{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n1{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}\n0{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}}\n1{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"y"}]}}\n!log\n0{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n'
	seed "$d" stateless '0{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\n1{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":0,"cacheScope":"public"}}\n'
	seed "$d" batch '0[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]\n1[{"jsonrpc":"2.0","id":1,"result":{}}]\n1 banner\n'
}

dict_classify() {
	cat > "$1" <<'EOF'
"\"jsonrpc\""
"\"2.0\""
"\"id\""
"\"method\""
"\"params\""
"\"result\""
"\"error\""
"\"code\""
"\"_meta\""
"\"progressToken\""
"\"notifications/progress\""
"\\u00"
"\\ud83d\\ude00"
"\\ud800"
"true"
"false"
"null"
"-0.5e+10"
"9223372036854775807"
"-9223372036854775808"
"\xf0\x9f\x98\x80"
"\xed\xa0\x80"
EOF
}

seed_frame() {
	d=$1
	seed "$d" lines '\020\007{"jsonrpc":"2.0","method":"n"}\nshort\n\r\n\n0123456789abcdefghij\nlast'
	seed "$d" nolimit '\000\003a\nbb\nccc\n\n'
	seed "$d" exact '\004\001abc\nabcd\nabcde\n\nab'
	seed "$d" binary '\011\377\000\001\n\377\376\375\n\n\n\000'
}

# SSE: the first byte is the maximum block size, the next two a cut and a seed.
seed_sse() {
	d=$1
	seed "$d" events '\000\021\005\357\273\277: hi\r\n\r\nid: 1\nevent: up\ndata: {"a":1}\ndata\r\rretry: 1500\n\nid:\n\n'
	seed "$d" priming '\000\006\003id: 5\ndata:\n\nid:5\n\n: keep-alive\n\nretry: 9x\nid: a\000b\nfoo\n\ndata: tail'
	seed "$d" limit '\020\012\007data: 0123456789abcdef\r\n\r\ndata: ok\r\n\r\n\r\n\n'
	seed "$d" crlf '\011\010\001data: ab\r\n\r\ndata: c\r\r\n\n'
}

# The session splitter: 4-byte steps (what happens, and its arguments).
seed_httpsess() {
	d=$1
	# initialize, named s1, a request naming s1, a legacy GET, its endpoint, a POST to it
	seed "$d" flow '\010\000\000\001\000\001\001\000\001\002\003\010\002\001\005\001\002\001\005\002\000\000\000\002'
	# without ids: initialize, idless, requests on other connections, a close, an end
	seed "$d" idless '\010\000\000\000\003\000\000\000\000\000\002\000\004\000\000\000\005\000\000\000\000\000\003\000'
}

# Header lines "name: value"; the first line is also a request target.
seed_httphdr() {
	d=$1
	seed "$d" request '/mcp?api_key=abc&x=1\nHost: h\nConnection: keep-alive, X-Foo ,, te\nX-Foo: 1\nTE: trailers\nContent-Length: 10\nAccept-Encoding: gzip\nAccept: application/json, text/event-stream;q=0.9\nMcp-Session-Id: s-1\nAuthorization: Bearer tok\nCookie: a=1; sid=x\nX-Dup: 1\nX-Dup: 2\n'
	seed "$d" response 'Content-Type: text/event-stream\nSet-Cookie: sid=x; Path=/\ncontent-length: 5\nContent-Length: 6\nTransfer-Encoding: chunked\nX-Bin: a\377b \355\240\200 \303\nWWW-Authenticate: Bearer realm="x"\nAccept: text/plain;x="a, text/event-stream";q=0\n'
	seed "$d" target '/hooks/ghp_0123456789abcdefghijklmnopqrstuvwxyz?token=t&code=c#f\nX-Api-Key: sk-abcdefghijklmnopqrstuvwx\n'
}

seed_store() {
	d=$1
	seed "$d" hello 'hello'
	seed "$d" header 'SQLite format 3\000\020\000\001\001\000@  \000\000\000\001'
	: > "$d/seed-empty"
}

# A recipe for a crafted capture (see fuzz-readers.c): a handshake, a tool
# call answered with isError, a cancel, a stderr line and a gap, with NULLs.
seed_readers() {
	d=$1
	# message rows: table 1, then session 1, seq, t_ns, wall, dir, channel, kind,
	# id, idtype, method, error_code, request_seq, progress_token, incomplete, size, raw
	printf '\377' > "$d/seed-session"
	m() { printf '\001\001\001\001\001%s\001\001\001\001\006%s\000\006%s\001\002\000\000\000\000\000\000\001\005\001\005%s' "$2" "$1" "$3" "$4"; }
	{ m '\000' '\003' '\013' '\000'; m '\001' '\005' '\000' '\001'; m '\000' '\004' '\000' '\003'
	  m '\001' '\005' '\000' '\004'; m '\000' '\004' '\000' '\006'
	  printf '\002\001\001\001\001\001\001\001\001\001\001\003\005ready'
	  printf '\003\001\001\001\001\006\001\001\002\001\100\003\003big'; } >> "$d/seed-session"
	printf '\000\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' > "$d/seed-nulls"
}

# Captures: the real ones of tests/fixtures/pcap, and crafted ones (pcap-gen).
seed_import() {
	d=$1
	for f in "$top"/tests/fixtures/pcap/*.pcap; do
		[ -f "$f" ] && cp "$f" "$d/seed-$(basename "$f")"
	done
	if [ -x "$top/tests/peers/pcap-gen" ]; then
		printf 'POST /mcp HTTP/1.1\r\nContent-Length: 40\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}' > "$d/req.tmp"
		printf 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n1c\r\ndata: {"jsonrpc":"2.0","id":1\r\n10\r\n,"result":{}}\n\n\r\n0\r\n\r\n' > "$d/resp.tmp"
		"$top/tests/peers/pcap-gen" -M 40 -m reorder,retransmit,loss -c "$d/req.tmp" -S "$d/resp.tmp" "$d/seed-gen.pcap"
		"$top/tests/peers/pcap-gen" -6 -l sll2 -f pcapng -m frag,midstream -c "$d/req.tmp" -S "$d/resp.tmp" "$d/seed-gen6.pcapng"
		# Three exchanges on one keep-alive connection, segments lost in both ways
		# (pairing by ACK after a gap, a chunked SSE body read on at the next chunk).
		"$top/tests/peers/pcap-gen" -M 24 -m loss -c "$d/req.tmp" -S "$d/resp.tmp" -c "$d/req.tmp" \
			-S "$d/resp.tmp" -c "$d/req.tmp" -S "$d/resp.tmp" "$d/seed-keepalive-loss.pcap"
		rm -f "$d/req.tmp" "$d/resp.tmp"
	fi
}

# The reassembler: two bytes of limits, eight 4-byte bases, then steps (see
# fuzz-tcpflow.c): crafted segments (op 1), raw packets (op 0), time (op 3).
seed_tcpflow() {
	d=$1
	seed "$d" crafted '\045\011\000\001\000\002\000\003\000\004\000\005\000\006\000\007\000\010\001\004\002\000\000\000\000\000\001\000\022\000\000\000\000\000\001\004\020\000\001\000\040\000\001\004\020\000\101\000\040\000\001\004\020\000\041\000\040\000\003\005\001\014\021\000\141\000\020\000\001\000\021\377\377\000\000\000'
	seed "$d" raw '\377\377\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\050\105\000\000\050\000\001\100\000\100\006\000\000\012\000\000\001\012\000\000\002\234\100\013\271\000\000\000\001\000\000\000\000\120\002\377\377\000\000\000\000'
}

# Whole capture files: what tests/peers/pcap-gen writes (when it is built), and a small pcap.
# shellcheck disable=SC2086 # $m is several words
seed_capture() {
	d=$1
	gen=$top/tests/peers/pcap-gen
	seed "$d" tiny '\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\000\000\004\000\145\000\000\000\000\000\000\000\000\000\000\000\050\000\000\000\050\000\000\000\105\000\000\050\000\001\100\000\100\006\000\000\012\000\000\001\012\000\000\002\234\100\013\271\000\000\000\001\000\000\000\000\120\002\377\377\000\000\000\000'
	[ -x "$gen" ] || return 0
	printf 'POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}' > "$d/.req"
	printf 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {}\n\n' > "$d/.resp"
	m="-c $d/.req -S $d/.resp -M 40"
	"$gen" $m "$d/seed-en10mb.pcap"
	"$gen" $m -f pcapng-ns -6 -l sll2 -m frag,reorder "$d/seed-v6.pcapng"
	"$gen" $m -l raw -m loss,retransmit,overlap -s 70 "$d/seed-raw.pcap"
	"$gen" $m -l null -f pcap-ns -m midstream,rst,tcpopts "$d/seed-null.pcap"
	"$gen" $m -l qinq -k 2 -m frag "$d/seed-qinq.pcap"
	rm -f "$d/.req" "$d/.resp"
}

# The HTTP reader (see fuzz-httpstream.c): a mode byte (1 live; 0 pcap, 16 its
# start seen; live 5 refuses the second head), an options byte (0: a FIN, no
# body limit), then records of one side's bytes (1 the client, 0 the server)
# or, pcap only, of a gap.
hs_oct() {
	# shellcheck disable=SC2059
	printf "\\$(printf %03o "$1")"
}
hs_new() {
	hs_file=$1
	hs_pcap=$(( $2 & 1 ? 0 : 1 ))
	{ hs_oct "$2"; hs_oct "$3"; } > "$hs_file"
}
# hs_head BITS N: a record's first byte (and the two of a length above 62).
hs_head() {
	if [ "$2" -lt 63 ]; then
		hs_oct $(( $2 * 4 + $1 ))
	else
		hs_oct $(( 63 * 4 + $1 )); hs_oct $(( $2 % 256 )); hs_oct $(( $2 / 256 ))
	fi
}
# hs_data SIDE PRINTF-FORMAT: bytes of one side (pcap: the ack unknown).
hs_data() {
	# shellcheck disable=SC2059
	printf "$2" > "$hs_file.tmp"
	n=$(wc -c < "$hs_file.tmp")
	{ hs_head "$1" "$n"; [ "$hs_pcap" -eq 0 ] || hs_oct 0; cat "$hs_file.tmp"; } >> "$hs_file"
	rm -f "$hs_file.tmp"
}
# hs_gap SIDE N: N bytes of one side not captured (pcap).
hs_gap() {
	hs_head $(( $1 + 2 )) "$2" >> "$hs_file"
}

# Smuggling shapes, pipelining, interim answers, SSE, a switch, a tunnel (live),
# gaps and a midstream start (pcap).
seed_httpstream() {
	d=$1
	ok='HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'
	hs_new "$d/seed-two-cl" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde'
	hs_data 0 "$ok"
	hs_new "$d/seed-te-xchunked" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nTransfer-Encoding: xchunked\r\nContent-Length: 3\r\n\r\nabc'
	hs_data 0 "$ok"
	hs_new "$d/seed-te-space" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'
	hs_data 0 "$ok"
	hs_new "$d/seed-te-cl" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n'
	hs_data 0 "$ok$ok"
	hs_new "$d/seed-obs-fold" 1 0
	hs_data 1 'GET / HTTP/1.1\r\nX-A: a\r\n b\r\nTransfer-Encoding: x,\r\n chunked\r\n\r\n0\r\n\r\n'
	hs_data 0 "$ok"
	hs_new "$d/seed-nul" 1 0
	hs_data 1 'GET / HTTP/1.1\r\nX-A: a\000b\r\n\r\nGET / HTTP/1.1\r\nHost\000: x\r\n\r\n'
	hs_new "$d/seed-chunk-size" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nab\r\n0\r\n\r\n'
	hs_new "$d/seed-chunk-ext" 1 0
	hs_data 1 "POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;$(printf '%0300d' 0)=1\r\nab\r\n0\r\nX-T: t\r\n\r\n"
	hs_data 0 "$ok"
	hs_new "$d/seed-chunked" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX-T: 1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n'
	hs_data 0 "$ok$ok"
	hs_new "$d/seed-pipelined" 1 0
	hs_data 1 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}HEAD /c HTTP/1.1\r\nHost: x\r\n\r\n'
	hs_data 0 "$ok$ok"'HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n'
	hs_new "$d/seed-refused" 5 0
	hs_data 1 'GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}'
	hs_data 0 "$ok"
	hs_data 1 'GET /c HTTP/1.1\r\n\r\n'
	hs_new "$d/seed-continue" 1 0
	hs_data 1 'POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n'
	hs_data 0 'HTTP/1.1 100 Continue\r\n\r\n'
	hs_data 1 '{}'
	hs_data 0 'HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n'"$ok"
	hs_new "$d/seed-sse" 1 1
	hs_data 1 'GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n'
	hs_data 0 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n1c\r\ndata: {"jsonrpc":"2.0","id":1\r\n'
	hs_data 0 '10\r\n,"result":{}}\n\n\r\n'
	hs_data 0 '0\r\n\r\n'
	hs_new "$d/seed-upgrade" 1 0
	hs_data 1 'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'
	hs_data 0 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\201\005hello'
	hs_data 1 '\201\205 maskedGET / HTTP/1.1\r\n\r\n'
	hs_new "$d/seed-connect" 1 0
	hs_data 1 'CONNECT up:443 HTTP/1.1\r\nHost: up:443\r\n\r\n'
	hs_data 0 'HTTP/1.1 200 Connection established\r\n\r\n\026\003\001'
	hs_new "$d/seed-head-close" 1 1
	hs_data 1 'HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n'
	hs_data 0 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1 200 OK\r\n\r\nread to the close'
	hs_new "$d/seed-pcap-gaps" 16 4
	hs_data 1 'GET /sse HTTP/1.1\r\n\r\nPOST /m HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}'
	hs_data 0 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab'
	hs_gap 0 12
	hs_data 0 '\r\n5\r\nhello\r\n0\r\n\r\n'"$ok"
	hs_data 1 'GET /x HT'
	hs_gap 1 9
	hs_data 1 '\r\n\r\nGET /y HTTP/1.1\r\n\r\n'
	hs_data 0 "$ok$ok"
	hs_new "$d/seed-pcap-midstream" 0 2
	hs_data 0 'lo"}\n\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'
	hs_data 1 'ngth: 2\r\n\r\n{}GET / HTTP/1.1\r\n\r\n'
	hs_data 0 "$ok"
}

dict_httpstream() {
	cat > "$1" <<'EOF'
"HTTP/1.1"
"HTTP/1.0"
" 200 OK\x0d\x0a"
"\x0d\x0a"
"\x0d\x0a\x0d\x0a"
"GET "
"POST "
"HEAD "
"CONNECT "
"Content-Length: "
"Transfer-Encoding: chunked"
"Connection: Upgrade"
"Upgrade: websocket"
"Expect: 100-continue"
"HTTP/1.1 100 Continue\x0d\x0a\x0d\x0a"
"HTTP/1.1 101 Switching Protocols\x0d\x0a"
"HTTP/1.1 204 No Content\x0d\x0a"
"0\x0d\x0a\x0d\x0a"
";ext=1"
"text/event-stream"
EOF
}

status=0
for bin in "$@"; do
	name=$(basename "$bin")
	corpus=$out/corpus-$name
	art=$out/artifacts-$name
	log=$out/$name.log
	tmp=$out/tmp-$name
	rm -rf "$tmp"
	mkdir -p "$corpus" "$art" "$tmp" || exit 2
	opts="-max_total_time=$secs -timeout=25 -print_final_stats=1"
	asan=""
	case $name in
	fuzz-classify)
		seed_classify "$corpus"
		dict_classify "$out/$name.dict"
		opts="$opts -max_len=16384 -dict=$out/$name.dict" ;;
	fuzz-frame)
		seed_frame "$corpus" ;;
	fuzz-store)
		seed_store "$corpus" ;;
	fuzz-sse)
		seed_sse "$corpus" ;;
	fuzz-httphdr)
		seed_httphdr "$corpus" ;;
	fuzz-httpsess)
		seed_httpsess "$corpus" ;;
	fuzz-tcpflow)
		seed_tcpflow "$corpus" ;;
	fuzz-capture)
		seed_capture "$corpus"
		opts="$opts -max_len=65536" ;;
	fuzz-readers)
		# (ASan's quarantine makes SQLite's many allocations fault in new pages:
		# four times slower. A small one still catches use after free.)
		asan="quarantine_size_mb=16:max_malloc_fill_size=256"
		seed_readers "$corpus" ;;
	fuzz-import)
		seed_import "$corpus"
		opts="$opts -max_len=131072" ;;
	fuzz-analyze)
		seed_analyze "$corpus"
		dict_classify "$out/$name.dict"
		opts="$opts -max_len=16384 -dict=$out/$name.dict" ;;
	fuzz-httpstream)
		seed_httpstream "$corpus"
		# (inputs it once failed on, fixed since: kept as seeds)
		cp "$top"/tests/fuzz/regress/httpstream/* "$corpus"/
		dict_httpstream "$out/$name.dict"
		opts="$opts -max_len=16384 -dict=$out/$name.dict" ;;
	fuzz-filter)
		seed "$corpus" fields 'method == tools/call and duration > 100ms or not (error || code != -32601)'
		seed "$corpus" text 'text contains "a\\\\"b" and tool matches "^x+$" and uri ~ \047f.*\047 and id == "5"'
		seed "$corpus" more 'time > "2026-11-27 10:00:00.5+02:00" and time < 2.5s and size >= 10k and status ge 400 and path eq /mcp and replayed == true and prompt and channel ne sse and session lt 3 and seq le 9 and dir == s2c and kind == error'
		opts="$opts -max_len=512" ;;
	fuzz-mock)
		seed_mock "$corpus"
		dict_classify "$out/$name.dict"
		opts="$opts -max_len=8192 -dict=$out/$name.dict" ;;
	esac
	if [ ! -x "$bin" ]; then
		echo "$name: FAILED: no such program $bin"
		status=1
		continue
	fi
	before=$(ls "$art" | wc -l)
	# shellcheck disable=SC2086
	TMPDIR=$tmp MCPTAP_FUZZ_STORE_SEED=$corpus/seed-capture.db \
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1${asan:+:$asan}} \
		"$bin" $opts -artifact_prefix="$art/" "$corpus" > "$log" 2>&1
	rc=$?
	after=$(ls "$art" | wc -l)
	rm -rf "$tmp"
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
	files=$(ls "$corpus" | wc -l)
	if [ $rc -eq 0 ] && [ "$after" -eq "$before" ]; then
		echo "$name: ok, ${runs:-?} runs in ${secs}s, corpus $files inputs"
	else
		newest=$(ls -t "$art" 2>/dev/null | head -n 1)
		echo "$name: FAILED (exit $rc${newest:+, input $art/$newest}), see $log"
		grep -m 3 -E 'ERROR|fuzz-[a-z]+:|runtime error' "$log" | sed 's/^/    /'
		status=1
	fi
done
exit $status
