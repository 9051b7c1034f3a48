#!/bin/sh
# The README's quick start: every ```sh block in README.md, run as written, in
# order, from a folder that looks like the repository root after make (./mcptap
# and tests/ are links to the ones under test), each in a process group of its
# own that is stopped afterwards. A block is at most 10 lines; each one's output
# and capture files are checked. It runs alone: its blocks listen on the fixed
# ports the README gives (3001, 8808, 8809), as a reader would.
# e2e: alone
. "$(dirname "$0")/lib.sh"

for p in tests/peers/mcp-client tests/peers/mcp-server tests/bench/http-echo; do
	[ -x "$TOP/$p" ] || die "$p is not built: run make"
done
command -v curl > /dev/null || die "curl is not installed (apt-get install curl)"
command -v setsid > /dev/null || die "setsid is not installed (apt-get install util-linux)"

# free PORT: nothing listens on 127.0.0.1:PORT (curl: 7, could not connect).
free() {
	curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/"
	[ $? -eq 7 ]
}
for port in 3001 8808 8809; do
	free $port || die "port $port, which the quick start uses, is taken"
done

awk -v dir="$T" '
	/^\*\*[A-Za-z]+\*\*:/ { name = $0; sub(/^\*\*/, "", name); sub(/\*\*.*/, "", name) }
	/^```sh$/ { n++; f = sprintf("%s/block%d.sh", dir, n); print name > (dir "/block" n ".name"); inb = 1; next }
	/^```$/ && inb { inb = 0; close(f); next }
	inb { print > f }
	END { print n + 0 > (dir "/blocks") }
' "$TOP/README.md"
check_eq "README.md has five quick start blocks" 5 "$(cat "$T/blocks")"
names=""
for i in 1 2 3 4 5; do
	names="$names $(cat "$T/block$i.name" 2> /dev/null)"
	check "block $i has at most 10 lines" test "$(wc -l < "$T/block$i.sh")" -le 10
done
check_eq "one block per mode, in order" " stdio HTTP pcap mock verify" "$names"

mkdir "$T/root"
ln -s "$MCPTAP" "$T/root/mcptap"
ln -s "$TOP/tests" "$T/root/tests"

# run I: block I in $T/root; its exit status, output (stdout and stderr) in
# $T/outI; then whatever it left running is stopped.
run() {
	(cd "$T/root" && setsid -w sh -c 'echo $$ > "$1"; exec sh "$2"' sh "$T/pg$1" "$T/block$1.sh") \
		> "$T/out$1" 2>&1 < /dev/null
	_rc=$?
	kill -KILL -- "-$(cat "$T/pg$1")" 2> /dev/null && echo "# block $1 left processes running"
	return $_rc
}
has() { grep -qF -- "$2" "$T/out$1"; }

run 1
check_eq "stdio: exit status" 0 $?
check "stdio: the client's whole flow passed" has 1 "mcp-client: ok: 13 messages sent, 16 received, 0 failed checks"
check "stdio: sessions names the client and server" has 1 "2025-06-18  mcptap-test-client 1.0.0  mcptap-test-server 1.0.0  tests/peers/mcp-server"
check "stdio: show prints the echo call" has 1 "tools/call echo"
check "stdio: analyze finds nothing" has 1 "session 1: 0 errors, 0 warnings, 0 info (checked against 2025-06-18, negotiated)"
check "stdio: stats" has 1 "session 1: "
check_eq "stdio: one session, every message stored" "1|29" \
	"$(sql "$T/root/quick.db" "select (select count(*) from session) || '|' || (select count(*) from message)")"

run 2
check_eq "HTTP: exit status" 0 $?
check "HTTP: curl got the server's answer through the tap" has 2 '"serverInfo":{"name":"mcptap-http-echo","version":"1.0.0"}'
check "HTTP: show prints the exchange" has 2 "POST /mcp"
check "HTTP: and its two messages" has 2 "→ 200 json, 2 messages"
check_eq "HTTP: one session, one exchange, two messages stored" "1|1|2" \
	"$(sql "$T/root/http.db" "select (select count(*) from session) || '|' || (select count(*) from http_exchange) || '|' || (select count(*) from message)")"
check "HTTP: the tap is gone" free 8808
check "HTTP: the server is gone" free 3001

run 3
check_eq "pcap: analyze's exit status" 1 $?
check "pcap: import says what it stored" has 3 "sessions     1 (1 Streamable HTTP or plain JSON-RPC, 0 legacy SSE)"
check "pcap: sessions names the SDK client" has 3 "mcptap-http-client 1.0.0"
check "pcap: analyze finds server-everything's two errors" has 3 "session 1: 2 errors, 0 warnings, 0 info (checked against 2025-11-25, negotiated)"
check_eq "pcap: every message stored" 68 "$(sql "$T/root/pcap.db" "select count(*) from message")"

run 4
check_eq "mock: exit status" 0 $?
check "mock: the client's whole flow passed" has 4 "mcp-client: ok: 13 messages sent, 16 received, 0 failed checks"
check "mock: its report says ok" has 4 '  "ok": true'
check "mock: over HTTP it answers as the recorded server" has 4 '"serverInfo":{"name":"mcptap-test-server","version":"1.0.0"}'
check "mock: it is gone" free 8809

run 5
check_eq "verify: exit status" 0 $?
check "verify: every request passes over stdio" has 5 "replay: 11 requests: 11 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; 0 paths set aside as noise over 2 runs (session 1 against tests/peers/mcp-server)"
check "verify: and over HTTP" has 5 "replay: 1 request: 1 passed, 0 differed, 0 missing, 0 cancelled, 0 unanswered; 0 paths set aside as noise over 2 runs (session 1 against http://127.0.0.1:3001/mcp)"
check "verify: the server is gone" free 3001

finish
