#!/bin/sh
# mcptap sniff: live capture on loopback during a real SDK session.
#   1. without CAP_NET_RAW (an unprivileged user): exit 2, and the message says
#      what is needed;
#   2. as root (or with the capability): sniff -i lo during the official SDK
#      client's full flow against server-everything on Streamable HTTP, stopped by
#      SIGINT: exit 0, every message the client saw stored once in its session
#      (check-store.mjs), the summary printed; -c COUNT and --duration stop it
#      by themselves. Skipped with a message where it cannot capture.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"
. "$(dirname "$0")/pcap.sh"

CLIENT=$NODEDIR/http-client.mjs
[ -f "$NODEDIR/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
	die "the pinned MCP peers are not installed: run tests/setup.sh node (npm ci)"

# 1. Without the capability.
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null && other_user; then
	$AS --inh-caps=-all "$U_MCPTAP" sniff -w "$T/np.db" -i lo > /dev/null 2> "$T/np.err"
	rc=$?
else
	"$MCPTAP" sniff -w "$T/np.db" -i lo > /dev/null 2> "$T/np.err"
	rc=$?
fi
if [ "$(id -u)" -ne 0 ] && can_capture; then
	echo "# (this user may capture: the no-permission case is not tried)"
else
	check_eq "without CAP_NET_RAW: exit 2" 2 "$rc"
	check "it says root or CAP_NET_RAW is needed" grep -q "^mcptap: cannot capture on 'lo': needs root or CAP_NET_RAW" "$T/np.err"
fi
"$MCPTAP" sniff -w "$T/x.db" > /dev/null 2> "$T/noif.err"
check_eq "no -i: a usage error" 2 $?
"$MCPTAP" sniff -w "$T/x.db" -i lo -c 5 --duration 5 > /dev/null 2> "$T/both.err"
check_eq "-c and --duration together: a usage error" 2 $?

if [ "$(id -u)" -ne 0 ] && ! getcap "$MCPTAP" 2> /dev/null | grep -q cap_net_raw; then
	echo "# skipped the live capture: it needs root or CAP_NET_RAW (setcap cap_net_raw+ep mcptap)"
	finish
fi

"$MCPTAP" sniff -w "$T/x.db" -i no-such-if0 > /dev/null 2> "$T/nosuch.err"
check_eq "an interface that does not exist: exit 2" 2 $?
check "it says so" grep -q "^mcptap: cannot capture on 'no-such-if0': no such interface" "$T/nosuch.err"

# 2. A real session, captured live.
p=$(free_port)
start_everything streamableHttp "$p"
"$MCPTAP" sniff -w "$T/s.db" -i lo -f "tcp port $p" -v > "$T/sniff.out" 2> "$T/sniff.err" &
sniff=$!
n=0
while ! grep -q "^mcptap: capturing on interface 'lo'" "$T/sniff.err" && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
check "it says it captures, and how to stop" grep -q "^mcptap: capturing on interface 'lo' (filter 'tcp port $p'); SIGINT (Ctrl-C) stops" "$T/sniff.err"
sleep 0.5
timeout 100 node "$CLIENT" --transport http --log "$T/http.jsonl" "http://127.0.0.1:$p/mcp" > "$T/http.out" 2>&1
check_eq "the SDK client's full flow: exit 0" 0 $?
sleep 0.5
kill -INT $sniff
wait $sniff
check_eq "SIGINT: sniff exits 0" 0 $?
check_eq "stdout stays empty" "" "$(cat "$T/sniff.out")"
sid=$(sed -n 's/^# session 1 //p' "$T/http.out")
check_eq "one session, named by its id, with the client's and server's names" \
	"1|http|$sid|mcptap-http-client|mcp-servers/everything" \
	"$(sql "$T/s.db" "select count(*), transport, http_session_id, client_name, server_name from session")"
"$MCPTAP" show -r "$T/s.db" -s 1 -T json > "$T/s.show"
node "$NODEDIR/check-store.mjs" --http "$T/http.jsonl" "$T/s.show" > "$T/check.out" 2>&1
check_eq "every message the client saw stored once, in its session" 0 $?
grep -v '^check-store: ok' "$T/check.out" | head -5
check_eq "-v: a line for each exchange stored" "$(sql "$T/s.db" "select count(*) from http_exchange")" \
	"$(grep -c '^mcptap: #[0-9]* [A-Z]* /' "$T/sniff.err")"
check_eq "-v: the initialize's line" 1 "$(grep -c '^mcptap: #[0-9]* POST /mcp initialize → 200 [a-z]*, 2 messages, [0-9.]*\(us\|ms\|s\)$' "$T/sniff.err")"
check "the summary: packets, connections, sessions, messages" sh -c "grep -q '^mcptap: captured interface .lo. into' '$T/sniff.err' && grep -q '^  sessions     1 ' '$T/sniff.err' && grep -q '^  messages     [1-9]' '$T/sniff.err' && grep -q '^  kernel ' '$T/sniff.err'"

# -c and --duration stop by themselves.
timeout 30 "$MCPTAP" sniff -w "$T/c.db" -i lo -f "tcp port $p" -c 10 > /dev/null 2> "$T/c.err" &
csniff=$!
sleep 1
timeout 30 node "$CLIENT" --transport http --sessions 1 --log "$T/c.jsonl" "http://127.0.0.1:$p/mcp" > /dev/null 2>&1
wait $csniff
check_eq "-c 10: exits 0 by itself" 0 $?
check "-c 10: ten packets" grep -q "^  packets      10 " "$T/c.err"
timeout 30 "$MCPTAP" sniff -w "$T/d.db" -i lo -f "tcp port $p" --duration 1 > /dev/null 2> "$T/d.err"
check_eq "--duration 1: exits 0 by itself" 0 $?
stop_everything
finish
