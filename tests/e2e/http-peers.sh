# tests/e2e/http-peers.sh - real HTTP peers for the end-to-end tests of the HTTP tap.
# Sourced after lib.sh (it uses T, NODEDIR and die); not a test itself (run.sh runs
# only tNNNN-*.sh).
#
#   free_port                      prints a free TCP port (free on every address, as
#                                  server-everything listens on all of them)
#   wait_port PORT [SECONDS]       waits until 127.0.0.1:PORT accepts (default 10 s);
#                                  non-zero on timeout
#   start_everything MODE PORT     starts @modelcontextprotocol/server-everything in
#                                  MODE (streamableHttp: endpoint /mcp; sse: GET /sse,
#                                  POST /message) on PORT and waits for it; its pid is
#                                  EVERYTHING_PID, its output $T/everything-MODE-PORT.log
#   stop_everything [PID]          stops that server (default: every one started)
#   make_test_ca DIR               a test CA (DIR/ca.pem) and a server certificate
#                                  for 127.0.0.1 and localhost signed by it
#                                  (DIR/server.pem, DIR/server.key)
#   start_tls_front LISTEN BACKEND DIR
#                                  stunnel as a TLS server on 127.0.0.1:LISTEN with
#                                  DIR's certificate, in front of plain
#                                  127.0.0.1:BACKEND, in the foreground; its pid is
#                                  TLS_FRONT_PID, its log DIR/stunnel-LISTEN.log
#   stop_tls_front [PID]           stops it (default: every one started)
#   stop_http_peers                stops everything started here; it runs on exit
#
# Processes are stopped by the pids recorded here, never by name. A test that sets
# its own EXIT trap must call stop_http_peers from it.

_everything_pids=""
_tls_pids=""

# _stop_pid PID: TERM, then KILL after 5 s; reaps it when it is our child.
_stop_pid() {
	kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
	kill -TERM "$1" 2>/dev/null
	_n=0
	while kill -0 "$1" 2>/dev/null && [ "$_n" -lt 50 ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	kill -0 "$1" 2>/dev/null && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# _without LIST PID: LIST without PID.
_without() {
	_out=""
	for _p in $1; do [ "$_p" = "$2" ] || _out="$_out $_p"; done
	echo "$_out"
}

free_port() {
	node -e 'const s = require("net").createServer(); s.listen(0, () => { console.log(s.address().port); s.close(); });'
}

wait_port() {
	node -e '
const net = require("net");
const port = Number(process.argv[1]), until = Date.now() + 1000 * Number(process.argv[2]);
(function attempt() {
	const s = net.connect(port, "127.0.0.1");
	s.on("connect", () => { s.destroy(); process.exit(0); });
	s.on("error", () => { if (Date.now() > until) process.exit(1); setTimeout(attempt, 50); });
})();' "$1" "${2:-10}"
}

start_everything() {
	case $1 in
	streamableHttp | sse) ;;
	*) die "start_everything: mode '$1' is not streamableHttp or sse" ;;
	esac
	_se=$NODEDIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
	[ -f "$_se" ] || die "server-everything is not installed: run tests/setup.sh node (npm ci)"
	PORT=$2 node "$_se" "$1" >"$T/everything-$1-$2.log" 2>&1 &
	EVERYTHING_PID=$!
	_everything_pids="$_everything_pids $EVERYTHING_PID"
	wait_port "$2" 15 || {
		sed 's/^/# /' "$T/everything-$1-$2.log"
		die "server-everything $1 did not listen on port $2"
	}
	kill -0 "$EVERYTHING_PID" 2>/dev/null || die "server-everything $1 on port $2 exited (the port was taken?)"
}

# shellcheck disable=SC2120 # the tests pass a pid
stop_everything() {
	if [ $# -gt 0 ]; then
		_stop_pid "$1"
		_everything_pids=$(_without "$_everything_pids" "$1")
		return 0
	fi
	for _p in $_everything_pids; do _stop_pid "$_p"; done
	_everything_pids=""
}

# _ossl DIR ARGS...: openssl ARGS, its output added to DIR/openssl.log.
_ossl() {
	_d=$1
	shift
	openssl "$@" >>"$_d/openssl.log" 2>&1 && return 0
	sed 's/^/# /' "$_d/openssl.log"
	return 1
}

make_test_ca() {
	mkdir -p "$1" || return 1
	printf '%s\n' 'basicConstraints = critical, CA:FALSE' \
		'keyUsage = critical, digitalSignature, keyEncipherment' \
		'extendedKeyUsage = serverAuth' \
		'subjectAltName = IP:127.0.0.1, DNS:localhost' >"$1/server.ext"
	_ossl "$1" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=mcptap test CA" -keyout "$1/ca.key" -out "$1/ca.pem" \
		-addext "basicConstraints = critical, CA:TRUE" \
		-addext "keyUsage = critical, keyCertSign, cRLSign" || return 1
	_ossl "$1" req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-subj "/CN=localhost" -keyout "$1/server.key" -out "$1/server.csr" || return 1
	_ossl "$1" x509 -req -in "$1/server.csr" -CA "$1/ca.pem" -CAkey "$1/ca.key" \
		-CAcreateserial -CAserial "$1/ca.srl" -days 2 -extfile "$1/server.ext" \
		-out "$1/server.pem"
}

start_tls_front() {
	_stunnel=$(command -v stunnel4 || command -v stunnel) || die "stunnel is not installed: run tests/setup.sh test"
	_conf=$3/stunnel-$1.conf
	# foreground: stays our child (its pid is $!) and logs to stderr; no pid file.
	printf '%s\n' 'foreground = yes' 'pid =' 'debug = notice' '' '[mcp]' \
		"accept = 127.0.0.1:$1" "connect = 127.0.0.1:$2" \
		"cert = $3/server.pem" "key = $3/server.key" >"$_conf"
	"$_stunnel" "$_conf" >"$3/stunnel-$1.log" 2>&1 &
	TLS_FRONT_PID=$!
	_tls_pids="$_tls_pids $TLS_FRONT_PID"
	wait_port "$1" 10 || {
		sed 's/^/# /' "$3/stunnel-$1.log"
		die "stunnel did not listen on port $1"
	}
}

# shellcheck disable=SC2120 # the tests pass a pid
stop_tls_front() {
	if [ $# -gt 0 ]; then
		_stop_pid "$1"
		_tls_pids=$(_without "$_tls_pids" "$1")
		return 0
	fi
	for _p in $_tls_pids; do _stop_pid "$_p"; done
	_tls_pids=""
}

stop_http_peers() {
	stop_tls_front
	stop_everything
}

trap stop_http_peers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the HTTP mock against the SDK client (tests/node/http-client.mjs) ----

# same_results REC REP: the answer to each request (by its id) the client got from
# the mock is the one it got when it was recorded; the requests are the same.
same_results() {
	node -e '
const fs = require("fs");
const load = (f) => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
const answers = (l) => {
	const sent = l.filter((r) => r.dir === "c2s" && r.message.method && r.message.id !== undefined && r.message.id !== "after-delete");
	const got = new Map(l.filter((r) => r.dir === "s2c" && !r.message.method).map((r) => [JSON.stringify(r.message.id), r.message]));
	return sent.map((r) => [r.message.method, JSON.stringify((got.get(JSON.stringify(r.message.id)) || {}).result ?? (got.get(JSON.stringify(r.message.id)) || {}).error ?? null)]);
};
const a = answers(load(process.argv[1])), b = answers(load(process.argv[2]));
if (a.length !== b.length) { console.error("# requests:", a.length, "recorded,", b.length, "replayed"); process.exit(1); }
for (let i = 0; i < a.length; i++)
	if (a[i][0] !== b[i][0] || a[i][1] !== b[i][1]) { console.error("# " + a[i].join(" ").slice(0, 300) + "\n# " + b[i].join(" ").slice(0, 300)); process.exit(2); }' "$1" "$2"
}

# report_is FILE RUNS REQUESTS UNUSED: the mock's report: RUNS runs, each with
# REQUESTS requests all answered, no miss, UNUSED recorded requests never asked
# for, no garbage, ok.
report_is() {
	node -e '
const fs = require("fs");
const [file, runs, n, unused] = process.argv.slice(1);
const r = JSON.parse(fs.readFileSync(file, "utf8"));
const got = JSON.stringify([r.runs, r.ok, r.sessions.map((s) => [s.requests, s.answered, s.missed, s.unused_count, s.garbage, s.ok])]);
const want = JSON.stringify([Number(runs), true, Array.from({ length: Number(runs) }, () => [Number(n), Number(n), 0, Number(unused), 0, true])]);
if (got !== want) { console.error("# report " + got + "\n# wanted " + want); process.exit(1); }' "$@"
}
