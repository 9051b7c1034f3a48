# tests/e2e/pcap.sh - packet captures in end-to-end tests of import and sniff.
# Sourced after lib.sh; not a test itself (run.sh runs only tNNNN-*.sh).
#
#   can_capture            0 when tcpdump is there and this user may capture (root,
#                          or CAP_NET_RAW on tcpdump)
#   capture_start IFACE FILE FILTER
#                          tcpdump -i IFACE -w FILE FILTER in the background, once it
#                          listens: CAPTURE_PID
#   capture_stop           stops it (SIGINT) once what it caught is written
#   dump_sessions DB       each session's messages (dir, kind, method, id, idtype,
#                          raw bytes in hex) and exchanges (method, target, status,
#                          request headers), keyed by the session's Mcp-Session-Id or
#                          legacy endpoint, sorted: two stores of the same run dump
#                          the same text whatever order concurrent streams were read in
#   dump_findings DB       analyze --all's findings, one per line, keyed the same way,
#                          message numbers (#N) left out, sorted
#   imp NAME FILE          mcptap import FILE into $T/NAME.db (made anew): its exit
#                          status in RC, its stdout and stderr in $T/NAME.out, .err
#   GEN                    tests/peers/pcap-gen (crafted captures), checked built

GEN=$PEERS/pcap-gen
[ -x "$GEN" ] || die "tests/peers/pcap-gen is not built: run make"

imp() {
	rm -f "$T/$1.db" "$T/$1.db-wal" "$T/$1.db-shm"
	"$MCPTAP" import -w "$T/$1.db" "$2" > "$T/$1.out" 2> "$T/$1.err"
	RC=$?
}

can_capture() {
	command -v tcpdump > /dev/null 2>&1 || return 1
	[ "$(id -u)" -eq 0 ] && return 0
	command -v getcap > /dev/null 2>&1 && getcap "$(command -v tcpdump)" | grep -q cap_net_raw
}

capture_start() {
	_cerr=$T/tcpdump-$$-$(date +%s%N).err
	tcpdump -i "$1" -w "$2" -U --immediate-mode -s 0 -n "$3" 2> "$_cerr" &
	CAPTURE_PID=$!
	_n=0
	while [ "$_n" -lt 100 ]; do
		grep -q "listening on" "$_cerr" && return 0
		kill -0 "$CAPTURE_PID" 2> /dev/null || break
		sleep 0.1
		_n=$((_n + 1))
	done
	cat "$_cerr" >&2
	die "tcpdump did not start"
}

capture_stop() {
	sleep 0.5 # (each packet is handed over at once and written at once: --immediate-mode, -U)
	kill -INT "$CAPTURE_PID" 2> /dev/null
	wait "$CAPTURE_PID" 2> /dev/null
	return 0
}

dump_sessions() {
	sqlite3 -batch -noheader -separator ' ' "$1" "
select 'msg', coalesce(s.http_session_id, '-'), m.dir, m.kind, coalesce(m.method, '-'),
       coalesce(m.id, '-'), coalesce(m.idtype, '-'), coalesce(m.sse_event, '-'), hex(m.raw)
  from message m join session s on s.id = m.session
union all
select 'exchange', coalesce(s.http_session_id, '-'), x.method, x.target, coalesce(x.status, '-'),
       x.req_headers, '', '', ''
  from http_exchange x join session s on s.id = x.session
union all
select 'session', coalesce(http_session_id, '-'), transport, coalesce(protocol_version, '-'),
       coalesce(client_name, '-'), coalesce(server_name, '-'), msgs_c2s, msgs_s2c, ''
  from session
order by 1, 2, 3, 4, 5, 6, 7, 8, 9"
}

dump_findings() {
	"$MCPTAP" analyze -r "$1" --all --no-store -T json --fail-on never > "$T/findings.json" || return 1
	for s in $(sqlite3 "$1" "select id from session"); do
		printf '%s %s\n' "$s" "$(sqlite3 "$1" "select coalesce(http_session_id, '-') from session where id = $s")"
	done > "$T/sessions.map"
	node -e '
const fs = require("fs");
const map = new Map(fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => l.split(" ")).map(([k, v]) => [Number(k), v]));
const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const out = [];
for (const s of r.sessions)
	for (const f of s.findings)
		out.push([map.get(s.session), f.rule, f.severity, f.dir || "-", f.method || "-", JSON.stringify(f.id ?? null), f.text.replace(/#[0-9]+/g, "#N")].join(" "));
console.log(out.sort().join("\n"));' "$T/findings.json" "$T/sessions.map"
}
