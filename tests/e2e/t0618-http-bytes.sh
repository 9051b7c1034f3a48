#!/bin/sh
# The HTTP tap is a byte relay: the bytes on both sides of it are compared,
# never parsed values. A raw upstream (tests/node/raw-bytes.mjs) keeps every
# byte each of its connections brings and answers with canned bytes; a raw
# client keeps every byte it gets.
#   1. The upstream gets what the client sent but three edits: the Host
#      field's value becomes --upstream's authority (its name's spelling and
#      its place kept), --upstream-header's field replaces the client's fields
#      of that name and comes last, and --upstream's query is added to the
#      target (after '?', or '&' when it has one). No Date; Connection,
#      Keep-Alive, TE, Trailer and Upgrade pass; HTTP/1.0 stays 1.0; a chunked
#      body passes with its chunk extension and trailer; Accept-Encoding
#      passes; Expect: 100-continue passes (the client gets the tap's 100 first).
#   2. The client gets what the upstream sent: its status line and reason,
#      its fields in their order and case, chunked framing with extensions
#      and trailers, a 100 or 103 before the final answer, a gzip body still
#      compressed, an SSE stream written in pieces, a 202 without a body, a
#      close-delimited HTTP/1.0 body (and the close).
#   3. Each client connection has an upstream connection of its own: two
#      requests on one, sent apart or pipelined, reach the upstream on one,
#      in order, and their answers come back in order.
#   4. The store counts each exchange with its method and status.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"

RAW=$NODEDIR/raw-bytes.mjs
D=$T/up # the upstream's files: what it got, and its canned answers
mkdir "$D" "$T/c" "$T/x" "$T/want" "$T/got" "$T/l"
# (Should the script end early, nothing it started is left running.)
UP_PID='' TAP_PID=''
trap 'for _p in $TAP_PID $UP_PID; do kill "$_p" 2> /dev/null; done' EXIT

# same DESCRIPTION EXPECTED-FILE ACTUAL-FILE: the two files hold the same bytes
# (a missing file holds none); else where they part, and a diff of the two
# (escaped, a line per line).
same() {
	_checks=$((_checks + 1))
	_a=$3
	[ -f "$_a" ] || _a=/dev/null
	if cmp -s "$2" "$_a"; then
		echo "ok - $1"
		return
	fi
	echo "not ok - $1: $(wc -c < "$2" | tr -d ' ') bytes wanted, $(wc -c < "$_a" | tr -d ' ') came;" \
		"$(cmp "$2" "$_a" 2>&1 | sed -n 's/.* differ: /they differ from /p;s/.*EOF on .* after /one ends after /p')"
	LC_ALL=C sed -n l "$2" > "$T/l/want"
	LC_ALL=C sed -n l "$_a" > "$T/l/got"
	diff -u "$T/l/want" "$T/l/got" | sed '1,2d;s/^/#   /'
	_fails=$((_fails + 1))
}

# req NAME FORMAT ARG...: a request's bytes from printf FORMAT, the Host
# field's value first: as the client sends it (c/NAME, the tap's authority)
# and as the upstream must get it (x/NAME, the upstream's).
req() {
	_n=$1 _f=$2
	shift 2
	printf "$_f" "$TA" "$@" > "$T/c/$_n"
	printf "$_f" "$UA" "$@" > "$T/x/$_n"
}

# resp NAME I FORMAT ARG...: piece I of the upstream's answer to requests with
# X-Case NAME (0: written once their head is in; 1, 2, ...: once they are
# whole, 100 ms apart), and want/NAME, all of the answer so far.
resp() {
	_n=$1 _i=$2 _f=$3
	shift 3
	printf "$_f" "$@" > "$D/$_n.$_i"
	cat "$D/$_n".[0-9] > "$T/want/$_n"
}

# json ID: a JSON-RPC request's body (ping); result ID: its answer's.
json() { printf '{"jsonrpc":"2.0","id":%s,"method":"ping"}' "$1"; }
result() { printf '{"jsonrpc":"2.0","id":%s,"result":{}}' "$1"; }

# ok200 NAME ID: NAME's answer, 200 with ID's JSON result (Content-Length).
ok200() {
	_b=$(result "$2")
	resp "$1" 1 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#_b} "$_b"
}

# client NAME ACTION...: raw-bytes.mjs's client through the tap, what it got in
# got/NAME, "closed" or "open" on stdout; one more client connection (conn).
conn=0
client() {
	_n=$1
	shift
	conn=$((conn + 1))
	timeout 30 node "$RAW" client "$TP" "$T/got/$_n" "$@"
}

# bytes NAME CONN [REQ...]: the checks of case NAME, on client connection CONN
# whose requests were REQ... (NAME alone when none is said): each request as
# the upstream must have got it (but the edits, as sent), all of them on the
# upstream connection CONN and nothing else there (one upstream connection
# per client connection), and what the client got all that the upstream sent.
bytes() {
	_n=$1 _k=$2
	shift 2
	[ $# -gt 0 ] || set -- "$_n"
	_all=1
	: > "$T/x/conn$_k"
	: > "$T/want/conn$_k"
	for _r in "$@"; do
		same "$_n: the upstream got $_r as sent, but the edits" "$T/x/$_r" "$D/req-$_r"
		[ -s "$D/req-$_r" ] || _all=0
		cat "$D/req-$_r" >> "$T/x/conn$_k" 2> /dev/null
		cat "$T/want/$_r" >> "$T/want/conn$_k"
	done
	if [ $_all = 1 ]; then
		same "$_n: on an upstream connection of its own (up$_k), nothing else on it" "$T/x/conn$_k" "$D/up$_k"
	else
		check "$_n: on an upstream connection of its own (up$_k): not all its requests reached the upstream" false
	fi
	same "$_n: the client got the upstream's bytes as sent" "$T/want/conn$_k" "$T/got/$_n"
}

bg_start UP 's/^up \([0-9]*\)$/\1/p' "the raw upstream" node "$RAW" server "$D"
UA=127.0.0.1:$UP_URL
start_tap "$T/a.db" "http://$UA/mcp"
TP=${TAP_URL##*:}
TA=127.0.0.1:$TP

# A JSON POST answered with JSON: the reason phrase, field case and order as
# sent; the Host field not the first; no Date.
b=$(json 1)
req json 'POST /mcp HTTP/1.1\r\nX-Case: json\r\nHost: %s\r\ncontent-type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
b=$(result 1)
resp json 1 'HTTP/1.1 200 All Good\r\ncontent-type: application/json\r\nX-Lower-Upper: MiXeD\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
client json -b "$(wc -c < "$T/want/json")" "w:$T/c/json" > /dev/null
bytes json $conn

# A notification answered 202 without a body.
b='{"jsonrpc":"2.0","method":"notifications/initialized"}'
req accepted 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: accepted\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
resp accepted 1 'HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n'
client accepted -b "$(wc -c < "$T/want/accepted")" "w:$T/c/accepted" > /dev/null
bytes accepted $conn

# A GET answered by an SSE stream: chunked, three events written 100 ms
# apart, then the last chunk.
req sse 'GET /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: sse\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n'
resp sse 1 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n'
for i in 1 2 3; do
	ev=$(printf 'id: %s\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"event %s"}}' "$i" "$i")
	printf '%x\r\n%s\n\n\r\n' $((${#ev} + 2)) "$ev" >> "$D/sse.$i"
	cat "$D/sse".[0-9] > "$T/want/sse"
done
resp sse 4 '0\r\n\r\n'
client sse -b "$(wc -c < "$T/want/sse")" "w:$T/c/sse" > /dev/null
bytes sse $conn

# A chunked request body with a chunk extension and a trailer.
b1='{"jsonrpc":"2.0",' b2='"id":2,"method":"ping"}'
req chunked 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: chunked\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nTrailer: X-Req-T\r\n\r\n%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Req-T: t\r\n\r\n' ${#b1} "$b1" ${#b2} "$b2"
ok200 chunked 2
client chunked -b "$(wc -c < "$T/want/chunked")" "w:$T/c/chunked" > /dev/null
bytes chunked $conn

# A chunked answer with a chunk extension and a trailer, in two writes.
b=$(json 3)
req trailers 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: trailers\r\nContent-Type: application/json\r\nTE: trailers\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
b1='{"jsonrpc":"2.0","id":3,' b2='"result":{}}'
resp trailers 1 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n%x;name=value\r\n%s\r\n' ${#b1} "$b1"
resp trailers 2 '%x\r\n%s\r\n0\r\nX-T: v\r\n\r\n' ${#b2} "$b2"
client trailers -b "$(wc -c < "$T/want/trailers")" "w:$T/c/trailers" > /dev/null
bytes trailers $conn

# Accept-Encoding as sent, and a gzip body passed still compressed.
b=$(json 4)
req gzip 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: gzip\r\nContent-Type: application/json\r\nAccept-Encoding: gzip, deflate\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
node -e 'process.stdout.write(require("zlib").gzipSync(process.argv[1]))' "$(result 4)" > "$T/gz"
resp gzip 1 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nVary: Accept-Encoding\r\nContent-Length: %d\r\n\r\n' "$(wc -c < "$T/gz")"
cat "$T/gz" >> "$D/gzip.1"
cat "$D/gzip.1" > "$T/want/gzip"
client gzip -b "$(wc -c < "$T/want/gzip")" "w:$T/c/gzip" > /dev/null
bytes gzip $conn

# Keep-alive: a second request once the first is answered, on the same connection.
b=$(json 6)
req ka1 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: ka1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
ok200 ka1 6
b=$(json 7)
req ka2 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: ka2\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
ok200 ka2 7
client keepalive -b $(($(wc -c < "$T/want/ka1") + $(wc -c < "$T/want/ka2"))) \
	"w:$T/c/ka1" "n:$(wc -c < "$T/want/ka1")" "w:$T/c/ka2" > /dev/null
bytes keepalive $conn ka1 ka2

# Pipelining: a request and a notification in one write.
b=$(json 8)
req pl1 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: pl1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
ok200 pl1 8
b='{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}'
req pl2 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: pl2\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
resp pl2 1 'HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n'
cat "$T/c/pl1" "$T/c/pl2" > "$T/c/pipelined"
client pipelined -b $(($(wc -c < "$T/want/pl1") + $(wc -c < "$T/want/pl2"))) "w:$T/c/pipelined" > /dev/null
bytes pipelined $conn pl1 pl2

# Expect: 100-continue: the tap's own 100 Continue (the one documented edit
# toward the client: the request goes upstream whole, so the upstream's 100
# could not come first) lets the client send its body; then the upstream's
# 100 and its 200, as sent.
b=$(json 9)
req continue 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: continue\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
head -c $(($(wc -c < "$T/c/continue") - ${#b})) "$T/c/continue" > "$T/c/continue-head"
printf '%s' "$b" > "$T/c/continue-body"
resp continue 0 'HTTP/1.1 100 Continue\r\n\r\n'
ok200 continue 9
{ printf 'HTTP/1.1 100 Continue\r\n\r\n'; cat "$T/want/continue"; } > "$T/want/continue.tap"
mv "$T/want/continue.tap" "$T/want/continue"
client continue -b "$(wc -c < "$T/want/continue")" \
	"w:$T/c/continue-head" "n:$(wc -c < "$D/continue.0")" "w:$T/c/continue-body" > /dev/null
bytes continue $conn

# A 103 Early Hints, then the answer, in two writes.
b=$(json 10)
req hints 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: hints\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
resp hints 1 'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n'
b=$(result 10)
resp hints 2 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
client hints -b "$(wc -c < "$T/want/hints")" "w:$T/c/hints" > /dev/null
bytes hints $conn

# Hop-by-hop fields pass both ways (Upgrade too: Connection does not name it).
b=$(json 11)
req hop 'POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Case: hop\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: h2c\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
b=$(result 11)
resp hop 1 'HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
client hop -b "$(wc -c < "$T/want/hop")" "w:$T/c/hop" > /dev/null
bytes hop $conn

# HTTP/1.0 both ways, the answer's body delimited by the upstream's close.
b=$(json 5)
req http10 'POST /mcp HTTP/1.0\r\nHost: %s\r\nX-Case: http10\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#b} "$b"
b=$(result 5)
resp http10 1 'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n%s' "$b"
: > "$D/http10.close"
client http10 "w:$T/c/http10" > "$T/http10.end"
check_eq "http10: the client's connection closed after the body, as the upstream's was" closed "$(cat "$T/http10.end")"
bytes http10 $conn

stop_tap
TAP_PID=
check_eq "the tap exits 0" 0 "$TAP_STATUS"
# (Sorted: two pipelined requests can be read at the same instant.)
want=$(cut -d' ' -f2,3 <<'EOF' | LC_ALL=C sort | paste -sd, -
json POST 200
accepted POST 202
sse GET 200
chunked POST 200
trailers POST 200
gzip POST 200
ka1 POST 200
ka2 POST 200
pl1 POST 200
pl2 POST 202
continue POST 200
hints POST 200
hop POST 200
http10 POST 200
EOF
)
check_eq "14 exchanges stored, each with its method and status" "$want" \
	"$(sql "$T/a.db" "select group_concat(m, ',') from (select method || ' ' || coalesce(status, '-') as m from http_exchange order by 1)")"
check_eq "the JSON POST and its JSON answer stored as a JSON-RPC request and response, paired" "request|response" \
	"$(sql "$T/a.db" "select q.kind, r.kind from message q join message r on r.session = q.session and r.request_seq = q.seq where q.id = 1 and q.method = 'ping'")"

# The edits: a tap with a query in --upstream and an --upstream-header.
T0618_KEY=k1-t0618-secret start_tap "$T/b.db" "http://$UA/mcp?tenant=7" --upstream-header X-Api-Key=env:T0618_KEY
TP=${TAP_URL##*:}
TA=127.0.0.1:$TP

# A target without a query gets '?tenant=7'; a Host field spelt "host:" with
# no space keeps that; the client's X-Api-Key goes, the tap's comes last.
b=$(json 12)
printf 'POST /mcp HTTP/1.1\r\nX-Case: editq\r\nhost:%s\r\nx-api-key: from-client\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
	"$TA" ${#b} "$b" > "$T/c/editq"
printf 'POST /mcp?tenant=7 HTTP/1.1\r\nX-Case: editq\r\nhost:%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Api-Key: k1-t0618-secret\r\n\r\n%s' \
	"$UA" ${#b} "$b" > "$T/x/editq"
ok200 editq 12
client editq -b "$(wc -c < "$T/want/editq")" "w:$T/c/editq" > /dev/null
bytes editq $conn

# A target with a query gets '&tenant=7'; both X-Api-Key fields go (any case).
printf 'GET /mcp?session=a HTTP/1.1\r\nHOST: %s\r\nX-API-KEY: one\r\nX-Case: editamp\r\nAccept: application/json\r\nx-api-key: two\r\n\r\n' \
	"$TA" > "$T/c/editamp"
printf 'GET /mcp?session=a&tenant=7 HTTP/1.1\r\nHOST: %s\r\nX-Case: editamp\r\nAccept: application/json\r\nX-Api-Key: k1-t0618-secret\r\n\r\n' \
	"$UA" > "$T/x/editamp"
resp editamp 1 'HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n\r\n'
client editamp -b "$(wc -c < "$T/want/editamp")" "w:$T/c/editamp" > /dev/null
bytes editamp $conn

stop_tap
TAP_PID=
check_eq "the second tap exits 0" 0 "$TAP_STATUS"
check_eq "its 2 exchanges stored, each with its method and status" "GET 405,POST 200" \
	"$(sql "$T/b.db" "select group_concat(m, ',') from (select method || ' ' || coalesce(status, '-') as m from http_exchange order by 1)")"
check_eq "the tap's credential is not in its file" 0 "$(cat "$T/b.db" "$T/b.db-wal" 2> /dev/null | grep -ac 'k1-t0618-secret')"

bg_stop UP TERM
UP_PID=
n=0
for f in "$D"/up[0-9]*; do
	[ -e "$f" ] && n=$((n + 1))
done
check_eq "the upstream had one connection per client connection ($conn)" "$conn" "$n"
k=0 bad=
while [ $k -lt $conn ]; do
	k=$((k + 1))
	cmp -s "$T/x/conn$k" "$D/up$k" 2> /dev/null || bad="$bad up$k"
done
check_eq "at the end too, each upstream connection holds its client connection's requests only" "" "$bad"
finish
