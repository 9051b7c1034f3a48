#!/bin/sh
# tests/bench/bench.sh - mcptap's benchmarks. Figures are ratios measured side
# by side in one run; absolute times on a shared machine are noise.
#
# Every configuration is pinned the same way. The ping and the first flood run
# on one CPU (taskset -c $BENCH_CPU, default 0): the load client, the relay or
# tap, the tap's writer thread and the echo server all share it, so no
# configuration gains from a second core and no wake-up crosses CPUs. The
# second flood runs every configuration (and the floor) on CPUs 0 and 1, where
# the tap's writer thread can do the storing beside the relay, which is what
# it is for. Each figure is the median of $BENCH_RUNS runs (3).
#
#   (a) ping round trip p50/p99: direct pipes, a plain byte relay, mcptap record
#   (b) flood: pipelined small requests, messages/s both ways counted, timed from
#       the start to the exit of the tap, so every message is stored when it ends
#   (c) the storage floor: rows/s of a tight loop inserting parsed rows in batches
#   (d) mcptap's peak RSS over 1M messages (and over 200k, to show it is flat)
#   (e) the analyzer's messages/s; (f) the mock's ping and flood
#   (g) 8 taps flooding one capture file at once, against the same 8 into 8 files
#   (h) the relay's worst stall while another program holds the file's write
#       lock for 5 s: a line every millisecond, the largest gap the client sees,
#       against the same tap with no lock and a direct pipe
#   (i) peak RSS of analyze and stats at 1M and 10M messages ($BENCH_BIG), and
#       analyze against a scan that checks each message's JSON in SQLite
#   (j) sessions on a 20M-message file ($BENCH_HUGE)
#   (k) the HTTP tap: ping p50/p99 against a direct connection (JSON and SSE
#       answers), requests/s of 32 connections with every message stored, and
#       mcp-proxy (npm) as a reference, where node is there; beside them nginx as
#       a plain HTTP relay, the tap not storing (-w /dev/null) and the tap storing
#       on a tmpfs (/dev/shm), so that relaying, storing and the disk show apart;
#       and the tap's peak RSS in a burst of 30 bodies of 15 MiB, and once stored
#   (l) the HTTP mock (replay --as server --listen) of a recording of the same echo
#       server: ping p50 against the echo server itself, and requests/s of 32
#       connections, each its own session
#   (m) pcap import of a generated capture of MCP sessions over HTTP ($BENCH_PCAP_MB,
#       200 MB): against tshark -Y http -T json on the same file, against the
#       storage floor of the same rows, and peak RSS importing half the file and all
#   (n) show -Y on a 1M-message session against a plain show of the rows it passes
#   (o) show --follow's delay behind a tap that writes
#   (p) export of a 1M-message capture in each format against show -T json of it,
#       and export's peak RSS at 200k and 1M messages
#   (q) live push: the HTTP tap's flood with --otlp against the same without it
#   (r) diff of two 1M-message captures (the same flow twice; and against one whose
#       answers differ) against show -T json of one of them, and diff's peak RSS
#   (s) report of a 100k- and a 1M-message session against show -T json of it,
#       its peak RSS and size, and headless Chromium opening the 100k report
# BENCH_ONLY=k, l, m, n, o, p, q, r or s runs that section alone.
set -eu
cd "$(dirname "$0")/../.."
B=tests/bench
CPU=${BENCH_CPU:-0}
RUNS=${BENCH_RUNS:-3}
PINGS=${BENCH_PINGS:-20000}
FLOOD=${BENCH_FLOOD:-300000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcptap-bench.XXXXXX")
SHM="" # section (k): a directory on a tmpfs, when /dev/shm is one
# Servers, taps and nginx started in the background (section (k)) are stopped on any exit.
cleanup() {
	for _p in ${BG_PIDS:-}; do kill "$_p" 2> /dev/null || :; done
	rm -rf "$TMP"
	[ -z "$SHM" ] || rm -rf "$SHM"
}
trap cleanup EXIT
pin() { taskset -c "$CPU" "$@"; }
pin2() { taskset -c 0,1 "$@"; }

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# field NAME: the value of NAME=... in the line on stdin
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

now_ns() { date +%s%N; }

# The summary table printed at the end: the headline figure of each section
# run, against its target. headline SECTION FIGURE MEASURED TARGET adds a row;
# calc EXPR [NAME=VALUE]... prints what awk's EXPR prints with those variables.
headline() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$TMP/headlines"; }
calc() {
	_e=$1
	shift
	for _v; do
		set -- "$@" -v "$_v"
		shift
	done
	awk "$@" "BEGIN { $_e }"
}
summary() {
	[ -s "$TMP/headlines" ] || return 0
	echo
	echo "summary: the headline figure of each section run, against its target"
	awk -F '\t' '{ s[NR] = $1; f[NR] = $2; m[NR] = $3; t[NR] = $4
			if (length($2) > w) w = length($2)
			if (length($3) > v) v = length($3) }
		END {
			fmt = "    %-4s %-" w "s  %-" v "s  %s\n"
			printf fmt, "", "figure", "measured", "target"
			for (i = 1; i <= NR; i++)
				printf fmt, "(" s[i] ")", f[i], m[i], t[i]
		}' "$TMP/headlines"
}

ping_run() { # ping_run CONFIG -> "p50 p99"
	case $1 in
	direct) pin $B/load-client ping "$PINGS" -- $B/echo-server ;;
	relay) pin $B/load-client ping "$PINGS" -- $B/byte-relay -- $B/echo-server ;;
	tap) rm -f "$TMP/p.db"*; pin $B/load-client ping "$PINGS" -- ./mcptap record -w "$TMP/p.db" -- $B/echo-server ;;
	esac
}

flood_run() { # flood_run CONFIG N PIN -> messages/s, timed until the process tree exits
	t0=$(now_ns)
	case $1 in
	direct) $3 $B/load-client flood "$2" -- $B/echo-server >/dev/null ;;
	relay) $3 $B/load-client flood "$2" -- $B/byte-relay -- $B/echo-server >/dev/null ;;
	tap) rm -f "$TMP/f.db"*; $3 $B/load-client flood "$2" -- ./mcptap record -w "$TMP/f.db" -- $B/echo-server >/dev/null ;;
	esac
	t1=$(now_ns)
	awk -v n="$2" -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f\n", 2 * n / (ns / 1e9)}'
}

# (k) The HTTP tap in front of tests/bench/http-echo (a Streamable HTTP echo server
# on evhttp), driven by tests/bench/http-load (keep-alive HTTP/1.1, one MCP session
# per connection: initialize, notifications/initialized, then requests):
#   - ping: HPINGS sequential round trips on one connection, everything on CPU $CPU,
#     direct and through a tap, the upstream answering JSON and then SSE
#   - flood: HFLOOD requests over 32 connections on CPUs 0,1, direct and through a
#     tap, timed until the tap has exited after SIGINT (so every message is stored)
#   - where mcp-proxy (npm, pinned in tests/node) is installed, the same ping through
#     it: mcp-proxy bridges HTTP to stdio only, so it spawns tests/bench/echo-server,
#     and since it answers ping itself the requests are tools/call (--call); its
#     added latency is against a direct tools/call ping of http-echo in the same run
#   - the same ping and flood through references, pinned as the tap is:
#     nginx (a plain HTTP relay: one worker, HTTP/1.1 with keep-alive to http-echo,
#     proxy_buffering off as a streaming proxy needs, no access log), run as the
#     current user with its configuration and temp files in $TMP/nginx;
#     the tap with -w /dev/null (not a capture: it relays without logging, its
#     writer thread still taking a copy of everything), the cost of relaying alone;
#     the tap storing into a file on a tmpfs (/dev/shm), SQLite without the disk
# Each capture file must hold exactly what was sent: per connection, initialize and
# its answer and the notification (3), and a request and an answer per ping (2).
HPINGS=${BENCH_HTTP_PINGS:-5000}
HFLOOD=${BENCH_HTTP_FLOOD:-50000}
HCONNS=32
MCP_PROXY=tests/node/node_modules/.bin/mcp-proxy
BG_PIDS=""

# start_echo CPUS [--sse]: runs http-echo on CPUS; ECHO_PID, ECHO_ORIGIN, ECHO_URL
# (taskset itself, not pin: a function run in the background would be a subshell,
# and its pid not the server's)
start_echo() {
	_cpus=$1
	shift
	rm -f "$TMP/echo.port"
	taskset -c "$_cpus" $B/http-echo "$@" 0 > "$TMP/echo.port" &
	ECHO_PID=$!
	BG_PIDS="$BG_PIDS $ECHO_PID"
	_n=0
	while [ ! -s "$TMP/echo.port" ] && [ $_n -lt 200 ]; do sleep 0.05; _n=$((_n + 1)); done
	[ -s "$TMP/echo.port" ] || { echo "bench: http-echo did not start" >&2; exit 1; }
	ECHO_ORIGIN=http://127.0.0.1:$(cat "$TMP/echo.port")
	ECHO_URL=$ECHO_ORIGIN/mcp
}

# stop_bg PID: SIGTERM, and its exit status must be 0
stop_bg() {
	kill "$1"
	_st=0
	wait "$1" || _st=$?
	[ $_st -eq 0 ] || { echo "bench: process $1 exited with status $_st" >&2; exit 1; }
}

# start_tap CPUS DB [OPTION...]: a tap on CPUS in front of ECHO_ORIGIN; TAP_PID, TAP_URL
# (DB /dev/null: the tap relays without logging)
start_tap() {
	_cpus=$1 _db=$2
	shift 2
	[ "$_db" = /dev/null ] || rm -f "$_db" "$_db"-*
	: > "$TMP/tap.err" # (not the last tap's line: read before this one's shell truncates it)
	taskset -c "$_cpus" ./mcptap record -w "$_db" --listen 127.0.0.1:0 --upstream "$ECHO_ORIGIN" "$@" < /dev/null > /dev/null 2> "$TMP/tap.err" &
	TAP_PID=$!
	BG_PIDS="$BG_PIDS $TAP_PID"
	_n=0
	TAP_URL=""
	while [ -z "$TAP_URL" ] && [ $_n -lt 200 ]; do
		TAP_URL=$(sed -n 's/^mcptap: listening on \(http:[^,]*\),.*/\1/p' "$TMP/tap.err")
		[ -n "$TAP_URL" ] || sleep 0.05
		_n=$((_n + 1))
	done
	[ -n "$TAP_URL" ] || { cat "$TMP/tap.err" >&2; echo "bench: the HTTP tap did not start" >&2; exit 1; }
	TAP_URL=$TAP_URL/mcp
}

# stop_tap DB EXPECTED: SIGINT, wait for its exit (0), and DB must hold EXPECTED messages
# (DB /dev/null: the tap must have said it relays without logging)
stop_tap() {
	kill -INT "$TAP_PID"
	_st=0
	wait "$TAP_PID" || _st=$?
	[ $_st -eq 0 ] || { cat "$TMP/tap.err" >&2; echo "bench: mcptap exited with status $_st" >&2; exit 1; }
	if [ "$1" = /dev/null ]; then
		grep -q "the relay goes on without logging" "$TMP/tap.err" ||
			{ cat "$TMP/tap.err" >&2; echo "bench: FAILED: the tap did not say it relays without logging" >&2; exit 1; }
		return 0
	fi
	TAP_STORED=$(sqlite3 "$1" "select count(*) from message")
	if [ "$TAP_STORED" != "$2" ]; then
		echo "bench: FAILED: the capture file holds $TAP_STORED messages, not $2" >&2
		exit 1
	fi
}

# free_port: FREE_PORT, a port free now: an http-echo takes one, says which, and
# gives it back (run it before start_echo: it starts and stops one)
free_port() {
	start_echo "$CPU"
	FREE_PORT=$(cat "$TMP/echo.port")
	stop_bg "$ECHO_PID"
}

# start_mcp_proxy: mcp-proxy on CPU $CPU in front of the stdio echo-server; MP_PID, MP_URL
start_mcp_proxy() {
	free_port
	_port=$FREE_PORT
	taskset -c "$CPU" "$MCP_PROXY" --port "$_port" --server stream -- $B/echo-server > "$TMP/mp.out" 2> "$TMP/mp.err" &
	MP_PID=$!
	BG_PIDS="$BG_PIDS $MP_PID"
	MP_URL=http://127.0.0.1:$_port/mcp
	_n=0
	until $B/http-load --call ping 1 "$MP_URL" > /dev/null 2>&1; do
		_n=$((_n + 1))
		if [ $_n -ge 100 ] || ! kill -0 "$MP_PID" 2> /dev/null; then
			cat "$TMP/mp.err" >&2
			MP_URL=""
			return 1
		fi
		sleep 0.2
	done
}

# find_nginx: NGINX, its path, or NGX_WHY; installs it (tests/setup.sh bench) when
# apt-get can run without asking for a password
find_nginx() {
	NGINX=""
	NGX_WHY=""
	for _c in "$(command -v nginx 2> /dev/null || :)" /usr/sbin/nginx; do
		[ -n "$_c" ] && [ -x "$_c" ] && { NGINX=$_c; return 0; }
	done
	if [ "$(id -u)" -eq 0 ] || sudo -n true 2> /dev/null; then
		sh tests/setup.sh bench || echo "bench: tests/setup.sh bench failed" >&2
		[ -x /usr/sbin/nginx ] && { NGINX=/usr/sbin/nginx; return 0; }
		NGX_WHY="nginx is not installed, and tests/setup.sh bench could not install it"
	else
		NGX_WHY="nginx is not installed (tests/setup.sh bench, as root or with sudo)"
	fi
	return 1
}

# start_nginx CPUS: nginx on CPUS, listening on NGX_PORT, in front of ECHO_ORIGIN;
# NGX_PID (its master process: taskset execs it, and daemon off keeps it ours), NGX_URL
start_nginx() {
	_d=$TMP/nginx
	mkdir -p "$_d"
	rm -f "$_d/nginx.pid"
	# As root the worker would become nobody, who cannot enter $TMP: it stays root.
	_user=""
	[ "$(id -u)" -ne 0 ] || _user="user root;"
	cat > "$_d/nginx.conf" <<-EOF
		$_user
		worker_processes 1;
		events { worker_connections 1024; }
		http {
			access_log off;
			client_body_temp_path $_d/client_body;
			proxy_temp_path $_d/proxy;
			fastcgi_temp_path $_d/fastcgi;
			uwsgi_temp_path $_d/uwsgi;
			scgi_temp_path $_d/scgi;
			upstream echo {
				server ${ECHO_ORIGIN#http://};
				keepalive 64;
				keepalive_requests 1000000;
			}
			server {
				listen 127.0.0.1:$NGX_PORT;
				keepalive_requests 1000000;
				location / {
					proxy_pass http://echo;
					proxy_http_version 1.1;
					proxy_set_header Connection "";
					proxy_buffering off;
				}
			}
		}
	EOF
	taskset -c "$1" "$NGINX" -e stderr -p "$_d/" -c "$_d/nginx.conf" \
		-g "daemon off; pid $_d/nginx.pid; error_log stderr;" > /dev/null 2> "$TMP/nginx.err" &
	NGX_PID=$!
	BG_PIDS="$BG_PIDS $NGX_PID"
	NGX_URL=http://127.0.0.1:$NGX_PORT/mcp
	# The pid file is written once it listens.
	_n=0
	until [ "$(cat "$_d/nginx.pid" 2> /dev/null)" = "$NGX_PID" ]; do
		_n=$((_n + 1))
		if [ $_n -ge 200 ] || ! kill -0 "$NGX_PID" 2> /dev/null; then
			cat "$TMP/nginx.err" >&2
			echo "bench: nginx did not start" >&2
			exit 1
		fi
		sleep 0.05
	done
}

section_k() {
	# d direct, t tap, n nginx, u the tap not storing, m the tap storing on a tmpfs;
	# j JSON, s SSE answers; dc and mp: tools/call pings direct and through mcp-proxy
	for c in dj tj nj uj mj ds ts ns us ms dc mp; do : > "$TMP/k50.$c"; : > "$TMP/k99.$c"; done
	for c in d t n u m; do : > "$TMP/kfl.$c"; done
	# The references: nginx (on a port found free now) and a tmpfs.
	NGX_PORT=""
	if find_nginx; then
		free_port
		NGX_PORT=$FREE_PORT
		ngx_version=$("$NGINX" -v 2>&1 | sed 's|^nginx version: nginx/||')
	fi
	shm_why=""
	if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
		SHM=$(mktemp -d /dev/shm/mcptap-bench.XXXXXX)
	else
		shm_why="/dev/shm is not a tmpfs here"
	fi
	mp_why=""
	mp_version=""
	# mcp-proxy comes with the pinned node peers (npm ci in tests/node), when npm is there.
	if [ ! -x "$MCP_PROXY" ] && command -v npm > /dev/null 2>&1; then
		sh tests/setup.sh node || echo "bench: npm ci in tests/node failed" >&2
	fi
	if ! command -v node > /dev/null 2>&1; then
		mp_why="node is not installed"
	elif [ ! -x "$MCP_PROXY" ]; then
		mp_why="mcp-proxy is not installed (tests/setup.sh node: npm ci in tests/node)"
	else
		mp_version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' tests/node/node_modules/mcp-proxy/package.json)
		if start_mcp_proxy; then
			# Warm its JIT up before anything is timed.
			$B/http-load --call ping 2000 "$MP_URL" > /dev/null
		else
			mp_why="mcp-proxy $mp_version did not start or did not answer"
		fi
	fi
	i=0
	while [ $i -lt "$RUNS" ]; do
		for mode in j s; do
			if [ $mode = s ]; then start_echo "$CPU" --sse; else start_echo "$CPU"; fi
			out=$(pin $B/http-load ping "$HPINGS" "$ECHO_URL")
			echo "$out" | field p50_us >> "$TMP/k50.d$mode"
			echo "$out" | field p99_us >> "$TMP/k99.d$mode"
			start_tap "$CPU" "$TMP/k.db"
			out=$(pin $B/http-load ping "$HPINGS" "$TAP_URL")
			stop_tap "$TMP/k.db" $((3 + 2 * HPINGS))
			echo "$out" | field p50_us >> "$TMP/k50.t$mode"
			echo "$out" | field p99_us >> "$TMP/k99.t$mode"
			if [ -n "$NGX_PORT" ]; then
				start_nginx "$CPU"
				out=$(pin $B/http-load ping "$HPINGS" "$NGX_URL")
				stop_bg "$NGX_PID"
				echo "$out" | field p50_us >> "$TMP/k50.n$mode"
				echo "$out" | field p99_us >> "$TMP/k99.n$mode"
			fi
			start_tap "$CPU" /dev/null
			out=$(pin $B/http-load ping "$HPINGS" "$TAP_URL")
			stop_tap /dev/null
			echo "$out" | field p50_us >> "$TMP/k50.u$mode"
			echo "$out" | field p99_us >> "$TMP/k99.u$mode"
			if [ -n "$SHM" ]; then
				start_tap "$CPU" "$SHM/k.db"
				out=$(pin $B/http-load ping "$HPINGS" "$TAP_URL")
				stop_tap "$SHM/k.db" $((3 + 2 * HPINGS))
				echo "$out" | field p50_us >> "$TMP/k50.m$mode"
				echo "$out" | field p99_us >> "$TMP/k99.m$mode"
			fi
			if [ $mode = j ] && [ -n "${MP_URL:-}" ]; then
				out=$(pin $B/http-load --call ping "$HPINGS" "$ECHO_URL")
				echo "$out" | field p50_us >> "$TMP/k50.dc"
				echo "$out" | field p99_us >> "$TMP/k99.dc"
				out=$(pin $B/http-load --call ping "$HPINGS" "$MP_URL")
				echo "$out" | field p50_us >> "$TMP/k50.mp"
				echo "$out" | field p99_us >> "$TMP/k99.mp"
			fi
			stop_bg "$ECHO_PID"
		done
		start_echo 0,1
		t0=$(now_ns)
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$ECHO_URL" > /dev/null
		t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/kfl.d"
		start_tap 0,1 "$TMP/kf.db"
		t0=$(now_ns)
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$TAP_URL" > /dev/null
		stop_tap "$TMP/kf.db" $((3 * HCONNS + 2 * HFLOOD))
		t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/kfl.t"
		if [ -n "$NGX_PORT" ]; then
			start_nginx 0,1
			t0=$(now_ns)
			pin2 $B/http-load flood "$HFLOOD" $HCONNS "$NGX_URL" > /dev/null
			t1=$(now_ns)
			stop_bg "$NGX_PID"
			echo $((t1 - t0)) >> "$TMP/kfl.n"
		fi
		start_tap 0,1 /dev/null
		t0=$(now_ns)
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$TAP_URL" > /dev/null
		stop_tap /dev/null
		t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/kfl.u"
		if [ -n "$SHM" ]; then
			start_tap 0,1 "$SHM/kf.db"
			t0=$(now_ns)
			pin2 $B/http-load flood "$HFLOOD" $HCONNS "$TAP_URL" > /dev/null
			stop_tap "$SHM/kf.db" $((3 * HCONNS + 2 * HFLOOD))
			t1=$(now_ns)
			echo $((t1 - t0)) >> "$TMP/kfl.m"
			rm -f "$SHM"/k*.db*
		fi
		stop_bg "$ECHO_PID"
		i=$((i + 1))
	done
	if [ -n "${MP_PID:-}" ]; then
		kill "$MP_PID"
		wait "$MP_PID" || :
	fi
	# A burst: 30 bodies of 15 MiB at once (tests/bench/burst.mjs), every one
	# stored (the default limits), to an upstream that answers 202: the tap's
	# peak resident memory, and what it holds once all is stored (and 2 s more:
	# it looks every second whether to give memory back).
	burst_why=""
	flood_stored=$TAP_STORED
	if command -v node > /dev/null 2>&1; then
		node tests/bench/burst.mjs upstream 2> "$TMP/burst.err" &
		BURST_PID=$!
		BG_PIDS="$BG_PIDS $BURST_PID"
		_n=0
		while ! grep -q '^burst upstream' "$TMP/burst.err" && [ $_n -lt 100 ]; do sleep 0.05; _n=$((_n + 1)); done
		ECHO_ORIGIN=http://127.0.0.1:$(sed -n 's/^burst upstream //p' "$TMP/burst.err")
		start_tap 0,1 "$TMP/kb.db"
		burst_sent=$(node tests/bench/burst.mjs send "$(echo "$TAP_URL" | sed 's|^http://[^:]*:\([0-9]*\)/mcp$|\1|')" 30 15)
		_n=0
		while [ "$(sqlite3 "$TMP/kb.db" "select count(*) from message" 2> /dev/null)" != 30 ] && [ $_n -lt 600 ]; do
			sleep 0.1
			_n=$((_n + 1))
		done
		sleep 2
		burst_peak=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$TAP_PID/status")
		burst_after=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$TAP_PID/status")
		stop_tap "$TMP/kb.db" 30
		rm -f "$TMP"/kb.db*
		kill "$BURST_PID"
		wait "$BURST_PID" || :
	else
		burst_why="node is not installed"
	fi
	TAP_STORED=$flood_stored

	echo "(k) the HTTP tap in front of a Streamable HTTP echo server (tests/bench/http-echo, evhttp)"
	echo "    ping round trip, $HPINGS sequential requests on one keep-alive connection, CPU $CPU"
	for mode in j s; do
		if [ $mode = j ]; then name="JSON"; else name="SSE"; fi
		awk -v name="$name" -v d50="$(median < "$TMP/k50.d$mode")" -v d99="$(median < "$TMP/k99.d$mode")" \
			-v t50="$(median < "$TMP/k50.t$mode")" -v t99="$(median < "$TMP/k99.t$mode")" 'BEGIN {
			printf "    %-4s  direct p50 %7.1f µs p99 %7.1f µs   mcptap p50 %7.1f µs p99 %7.1f µs\n", name, d50, d99, t50, t99
			printf "          mcptap/direct p50 = %.2fx (target <= 1.2), p99 = %.2fx; added p50 = %.1f µs\n", t50 / d50, t99 / d99, t50 - d50 }'
	done
	headline k "HTTP tap ping p50 / direct, JSON" \
		"$(calc 'printf "%.2fx", t / d' t="$(median < "$TMP/k50.tj")" d="$(median < "$TMP/k50.dj")")" "<= 1.2x"
	headline k "HTTP tap flood, every message stored" \
		"$(calc 'printf "%.0f requests/s", n / (t / 1e9)' n="$HFLOOD" t="$(median < "$TMP/kfl.t")")" ">= 40000 requests/s"
	echo "    flood, $HFLOOD requests over $HCONNS connections (one session each), CPUs 0,1, until the tap has exited"
	awk -v n="$HFLOOD" -v d="$(median < "$TMP/kfl.d")" -v t="$(median < "$TMP/kfl.t")" 'BEGIN {
		printf "    direct %.0f requests/s   mcptap %.0f requests/s, every message stored (target >= 40000)   mcptap/direct = %.2fx\n", n / (d / 1e9), n / (t / 1e9), d / t }'
	echo "    every capture file held exactly what was sent; the last flood's: $TAP_STORED messages (3 x $HCONNS + 2 x $HFLOOD)"
	if [ -n "$mp_why" ]; then
		echo "    mcp-proxy: not measured: $mp_why"
	else
		awk -v v="$mp_version" -v d50="$(median < "$TMP/k50.dc")" -v m50="$(median < "$TMP/k50.mp")" -v m99="$(median < "$TMP/k99.mp")" \
			-v td="$(median < "$TMP/k50.dj")" -v tt="$(median < "$TMP/k50.tj")" 'BEGIN {
			printf "    mcp-proxy %s (HTTP to stdio: it spawns tests/bench/echo-server), tools/call pings (it answers ping itself):\n", v
			printf "          mcp-proxy p50 %.1f µs p99 %.1f µs; direct tools/call p50 %.1f µs; added p50 = %.1f µs\n", m50, m99, d50, m50 - d50
			printf "          added latency mcp-proxy / mcptap (JSON) = %.1fx (target >= 20)\n", (m50 - d50) / (tt - td) }'
		headline k "added p50, mcp-proxy / HTTP tap" "$(calc 'printf "%.1fx", (m - d) / (t - td)' \
			m="$(median < "$TMP/k50.mp")" d="$(median < "$TMP/k50.dc")" t="$(median < "$TMP/k50.tj")" \
			td="$(median < "$TMP/k50.dj")")" ">= 20x"
	fi
	# The references, measured beside the tap in each run; "added" is p50 - direct p50.
	echo "    references in the same runs, pinned as the tap (ping on CPU $CPU, flood on CPUs 0,1):"
	if [ -z "$NGX_PORT" ]; then
		echo "    nginx: not measured, the plain relay reference is missing: $NGX_WHY"
	else
		echo "    nginx $ngx_version, a plain HTTP relay: 1 worker, HTTP/1.1 keep-alive to http-echo, proxy_buffering off"
		for mode in j s; do
			if [ $mode = j ]; then name="JSON"; else name="SSE"; fi
			awk -v name="$name" -v d50="$(median < "$TMP/k50.d$mode")" -v d99="$(median < "$TMP/k99.d$mode")" \
				-v t50="$(median < "$TMP/k50.t$mode")" -v t99="$(median < "$TMP/k99.t$mode")" \
				-v n50="$(median < "$TMP/k50.n$mode")" -v n99="$(median < "$TMP/k99.n$mode")" 'BEGIN {
				printf "    %-4s  nginx p50 %7.1f µs p99 %7.1f µs   nginx/direct p50 = %.2fx, p99 = %.2fx   mcptap/nginx p50 = %.2fx, p99 = %.2fx\n", name, n50, n99, n50 / d50, n99 / d99, t50 / n50, t99 / n99
				printf "          added p50: nginx %.1f µs, mcptap %.1f µs; mcptap / nginx = %.2fx (target <= 1.0)\n", n50 - d50, t50 - d50, (t50 - d50) / (n50 - d50) }'
		done
		headline k "added p50, HTTP tap / nginx, JSON" "$(calc 'printf "%.2fx", (t - d) / (n - d)' \
			t="$(median < "$TMP/k50.tj")" n="$(median < "$TMP/k50.nj")" d="$(median < "$TMP/k50.dj")")" "<= 1.0x"
		awk -v n="$HFLOOD" -v d="$(median < "$TMP/kfl.d")" -v t="$(median < "$TMP/kfl.t")" -v x="$(median < "$TMP/kfl.n")" 'BEGIN {
			printf "    flood nginx %.0f requests/s   nginx/direct = %.2fx   mcptap/nginx = %.2fx\n", n / (x / 1e9), d / x, x / t }'
		# A relay adds two hops to the round trip (two more context switches
		# on one CPU, and a read and a write each way): the least any relay
		# adds is what nginx adds. The p50 target is read against that floor.
		awk -v d50="$(median < "$TMP/k50.dj")" -v n50="$(median < "$TMP/k50.nj")" -v t50="$(median < "$TMP/k50.tj")" 'BEGIN {
			printf "    the p50 target (1.2x direct) against the plain relay: nginx/direct = %.2fx, so no relay meets it on this machine;\n", n50 / d50
			printf "          mcptap adds %.1f µs where nginx adds %.1f µs (%.1fx)\n", t50 - d50, n50 - d50, (t50 - d50) / (n50 - d50) }'
	fi
	if [ -n "$burst_why" ]; then
		echo "    a burst of 30 bodies of 15 MiB: not measured: $burst_why"
	else
		awk -v sent="$burst_sent" -v p="$burst_peak" -v a="$burst_after" 'BEGIN {
			printf "    a burst of 30 bodies of 15 MiB at once, every one stored (%s):\n", sent
			printf "          peak RSS %.0f MiB (target <= 128), %.1f MiB once all was stored (target <= 32)\n", p / 1024, a / 1024 }'
		headline k "HTTP tap RSS, 30 bodies of 15 MiB: peak" "$((burst_peak / 1024)) MiB" "<= 128 MiB"
		headline k "HTTP tap RSS, 30 bodies of 15 MiB: once stored" "$((burst_after / 1024)) MiB" "<= 32 MiB"
	fi
	tmpfs=$(stat -f -c %T "$TMP")
	echo "    the tap not storing: -w /dev/null (no capture: it relays without logging; its writer thread still takes every copy)"
	if [ -n "$SHM" ]; then
		echo "    the tap storing on a tmpfs: -w /dev/shm/... (SQLite without the disk), beside the temp dir ($TMP: $tmpfs)"
	else
		echo "    the tap storing on a tmpfs: not measured: $shm_why"
	fi
	for mode in j s; do
		if [ $mode = j ]; then name="JSON"; else name="SSE"; fi
		awk -v name="$name" -v d50="$(median < "$TMP/k50.d$mode")" -v t50="$(median < "$TMP/k50.t$mode")" \
			-v t99="$(median < "$TMP/k99.t$mode")" -v u50="$(median < "$TMP/k50.u$mode")" -v u99="$(median < "$TMP/k99.u$mode")" \
			-v m50="$(median < "$TMP/k50.m$mode")" -v m99="$(median < "$TMP/k99.m$mode")" -v shm="$SHM" 'BEGIN {
			printf "    %-4s  not storing p50 %7.1f µs p99 %7.1f µs   mcptap/not storing p50 = %.2fx, p99 = %.2fx; added p50 = %.1f µs\n", name, u50, u99, t50 / u50, t99 / u99, u50 - d50
			if (shm != "") {
				printf "          tmpfs p50 %7.1f µs p99 %7.1f µs   mcptap/tmpfs p50 = %.2fx, p99 = %.2fx; added p50 = %.1f µs\n", m50, m99, t50 / m50, t99 / m99, m50 - d50
				printf "          mcptap added p50 %.1f µs = relaying %.1f + storing %.1f (SQLite %.1f, the disk %.1f)\n", t50 - d50, u50 - d50, t50 - u50, m50 - u50, t50 - m50
			} else
				printf "          mcptap added p50 %.1f µs = relaying %.1f + storing %.1f\n", t50 - d50, u50 - d50, t50 - u50 }'
	done
	awk -v n="$HFLOOD" -v t="$(median < "$TMP/kfl.t")" -v u="$(median < "$TMP/kfl.u")" -v m="$(median < "$TMP/kfl.m")" -v shm="$SHM" 'BEGIN {
		printf "    flood not storing %.0f requests/s   mcptap/not storing = %.2fx\n", n / (u / 1e9), u / t
		if (shm != "")
			printf "    flood tmpfs %.0f requests/s, every message stored   mcptap/tmpfs = %.2fx\n", n / (m / 1e9), m / t }'
}

# (l) The HTTP mock (replay --as server --listen) of a recording of http-echo: one
# http-load session (initialize, its notification, 10 pings) recorded through the
# tap; the mock answers every later ping with the last recorded one (ping is
# idempotent). In the same runs, pinned the same way:
#   - ping: HPINGS sequential requests on one connection, CPU $CPU, against the
#     echo server and against the mock: p50 and p99;
#   - flood: HFLOOD requests over HCONNS connections, each its own MCP session
#     (so each its own run through the recording), CPUs 0,1: requests/s as
#     http-load counts them (from the first connect to the last answer).
# start_mock CPUS DB: the mock on CPUS, not storing its runs; MOCK_PID, MOCK_URL.
start_mock() {
	taskset -c "$1" ./mcptap replay -r "$2" --as server --listen 127.0.0.1:0 --no-store \
		< /dev/null > /dev/null 2> "$TMP/mock.err" &
	MOCK_PID=$!
	BG_PIDS="$BG_PIDS $MOCK_PID"
	_n=0
	MOCK_URL=""
	while [ -z "$MOCK_URL" ] && [ $_n -lt 200 ]; do
		MOCK_URL=$(sed -n 's/^mcptap: replay: the mock server listens on \(http:[^ ]*\)$/\1/p' "$TMP/mock.err")
		[ -n "$MOCK_URL" ] || sleep 0.05
		_n=$((_n + 1))
	done
	[ -n "$MOCK_URL" ] || { cat "$TMP/mock.err" >&2; echo "bench: the HTTP mock did not start" >&2; exit 1; }
}

section_l() {
	for c in e m; do : > "$TMP/l50.$c"; : > "$TMP/l99.$c"; : > "$TMP/lfl.$c"; done
	start_echo "$CPU"
	start_tap "$CPU" "$TMP/l.db"
	$B/http-load ping 10 "$TAP_URL" > /dev/null
	stop_tap "$TMP/l.db" 23
	stop_bg "$ECHO_PID"
	i=0
	while [ $i -lt "$RUNS" ]; do
		start_echo "$CPU"
		out=$(pin $B/http-load ping "$HPINGS" "$ECHO_URL")
		echo "$out" | field p50_us >> "$TMP/l50.e"
		echo "$out" | field p99_us >> "$TMP/l99.e"
		stop_bg "$ECHO_PID"
		start_mock "$CPU" "$TMP/l.db"
		out=$(pin $B/http-load ping "$HPINGS" "$MOCK_URL")
		echo "$out" | field p50_us >> "$TMP/l50.m"
		echo "$out" | field p99_us >> "$TMP/l99.m"
		stop_bg "$MOCK_PID"
		start_echo 0,1
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$ECHO_URL" | field req_per_s >> "$TMP/lfl.e"
		stop_bg "$ECHO_PID"
		start_mock 0,1 "$TMP/l.db"
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$MOCK_URL" | field req_per_s >> "$TMP/lfl.m"
		stop_bg "$MOCK_PID"
		i=$((i + 1))
	done
	echo "(l) replay --as server --listen: the HTTP mock of a recording of the echo server, against the echo server itself"
	awk -v e50="$(median < "$TMP/l50.e")" -v e99="$(median < "$TMP/l99.e")" -v m50="$(median < "$TMP/l50.m")" \
		-v m99="$(median < "$TMP/l99.m")" -v ef="$(median < "$TMP/lfl.e")" -v mf="$(median < "$TMP/lfl.m")" \
		-v n="$HPINGS" -v fl="$HFLOOD" -v c="$HCONNS" 'BEGIN {
		printf "    ping, %d sequential requests on one connection, CPU 0: echo server p50 %.1f µs p99 %.1f µs, mock p50 %.1f µs p99 %.1f µs\n", n, e50, e99, m50, m99
		printf "          mock/echo server p50 = %.2fx (target <= 1.2), p99 = %.2fx\n", m50 / e50, m99 / e99
		printf "    flood, %d requests over %d connections (a session each), CPUs 0,1: echo server %.0f requests/s, mock %.0f requests/s (target >= 20000); mock/echo = %.2fx\n", fl, c, ef, mf, mf / ef }'
	headline l "HTTP mock ping p50 / echo server" \
		"$(calc 'printf "%.2fx", m / e' m="$(median < "$TMP/l50.m")" e="$(median < "$TMP/l50.e")")" "<= 1.2x"
	headline l "HTTP mock flood, a session a connection" "$(median < "$TMP/lfl.m") requests/s" ">= 20000 requests/s"
}

# (m) pcap import. tests/bench/pcap-mcp-gen writes a capture (libpcap's dump API)
# of PCAP_MB megabytes: MCP sessions over Streamable HTTP, each its own TCP
# connection, 16 at a time, each an initialize, its notification, 40 tools/call
# answered alternately in JSON and by an SSE stream of three progress
# notifications and the result, and a DELETE. In the same run, on CPUs 0,1 (the
# import's writer thread stores beside its reading, as the tap's does):
#   - mcptap import, the median of RUNS, against `tshark -r FILE -Y http -T json`
#     to /dev/null, once (it takes minutes), when tshark is installed;
#   - against the storage floor of the very rows the import stored (store-floor
#     --from the import's file: its message rows, parsed before the clock starts,
#     through mcptap's store code in the import's batches; --from-all: with its
#     http_exchange rows too);
#   - peak RSS (GNU time) importing the first half of the sessions and all of them.
section_m() {
	mb=${BENCH_PCAP_MB:-200}
	$B/pcap-mcp-gen -m "$mb" "$TMP/m.pcap" > "$TMP/m.gen"
	$B/pcap-mcp-gen -m $((mb / 2)) "$TMP/mh.pcap" > "$TMP/mh.gen"
	: > "$TMP/m.imp"
	: > "$TMP/m.floor"
	: > "$TMP/m.floorall"
	i=0
	while [ $i -lt "$RUNS" ]; do
		rm -f "$TMP/m.db"*
		t0=$(now_ns)
		pin2 ./mcptap import -w "$TMP/m.db" "$TMP/m.pcap" 2> "$TMP/m.err" || { cat "$TMP/m.err" >&2; exit 1; }
		t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/m.imp"
		pin2 $B/store-floor --from "$TMP/m.db" "$TMP/floor.db" | field secs >> "$TMP/m.floor"
		pin2 $B/store-floor --from-all "$TMP/m.db" "$TMP/floor.db" | field secs >> "$TMP/m.floorall"
		i=$((i + 1))
	done
	rows=$(sqlite3 "$TMP/m.db" "select count(*) from message")
	xrows=$(sqlite3 "$TMP/m.db" "select count(*) from http_exchange")
	sess=$(sqlite3 "$TMP/m.db" "select count(*) from session")
	rm -f "$TMP/m.db"*
	/usr/bin/time -f %M -o "$TMP/m.rss" ./mcptap import -w "$TMP/m.db" "$TMP/m.pcap" 2> /dev/null
	rm -f "$TMP/m.db"*
	/usr/bin/time -f %M -o "$TMP/mh.rss" ./mcptap import -w "$TMP/m.db" "$TMP/mh.pcap" 2> /dev/null
	rm -f "$TMP/m.db"*
	tshark_ns=""
	if command -v tshark > /dev/null; then
		t0=$(now_ns)
		pin2 tshark -r "$TMP/m.pcap" -Y http -T json > /dev/null 2> "$TMP/tshark.err"
		t1=$(now_ns)
		tshark_ns=$((t1 - t0))
	fi
	size=$(wc -c < "$TMP/m.pcap")
	echo "(m) mcptap import of a generated capture: $(cat "$TMP/m.gen" | tr ' ' '\n' | sed -n 's/^bytes=//p' | awk '{printf "%.0f MB", $1 / 1e6}'), $sess sessions, $rows messages, $xrows exchanges"
	awk -v imp="$(median < "$TMP/m.imp")" -v fl="$(median < "$TMP/m.floor")" -v fa="$(median < "$TMP/m.floorall")" \
		-v ts="$tshark_ns" -v size="$size" -v rows="$rows" -v rss="$(tail -n 1 "$TMP/m.rss")" \
		-v rssh="$(tail -n 1 "$TMP/mh.rss")" 'BEGIN {
		s = imp / 1e9
		printf "    import %.2f s: %.0f MB/s, %.0f messages/s, CPUs 0,1\n", s, size / 1e6 / s, rows / s
		if (ts != "")
			printf "    tshark -Y http -T json %.1f s: import is %.1fx faster (target >= 10x)\n", ts / 1e9, ts / imp
		else
			printf "    tshark is not installed (tests/setup.sh bench): no comparison\n"
		printf "    storage floor of its message rows %.2f s: import/floor = %.2fx (target <= 2x)\n", fl, s / fl
		printf "    storage floor of its message and exchange rows %.2f s: import/floor = %.2fx\n", fa, s / fa
		printf "    peak RSS: %.0f MB importing half the sessions, %.0f MB all of them (target flat)\n", rssh / 1024, rss / 1024 }'
	[ -z "$tshark_ns" ] || headline m "import faster than tshark -Y http -T json" \
		"$(calc 'printf "%.1fx", t / i' t="$tshark_ns" i="$(median < "$TMP/m.imp")")" ">= 10x"
	headline m "import / storage floor of its message rows" \
		"$(calc 'printf "%.2fx", i / 1e9 / f' i="$(median < "$TMP/m.imp")" f="$(median < "$TMP/m.floor")")" "<= 2x"
	headline m "import peak RSS, half / all of the capture" \
		"$(calc 'printf "%.0f / %.0f MB", h / 1024, a / 1024' h="$(tail -n 1 "$TMP/mh.rss")" a="$(tail -n 1 "$TMP/m.rss")")" "flat"
}

# (n) the display filter: show -Y on a generated session of $BENCH_FILTER_N
# messages (1M), against a plain show of a copy of the file that holds only the
# messages the filter passes (the rest deleted in the sqlite3 shell); both must
# print the same lines. A filter on a column (method: an answer's from its request) and
# one that reads the JSON of each tools/call (tool).
section_n() {
	_n=${BENCH_FILTER_N:-1000000}
	# (a new file: the flood of (b) leaves its capture under the same name)
	rm -f "$TMP/f.db"*
	sh tests/bench/gen-session.sh "$_n" | tests/peers/fixture-load /dev/stdin "$TMP/f.db"
	echo "(n) show -Y on a session of $_n messages, one CPU, against show of a file of the rows it passes"
	for _f in method tool; do
		case $_f in
		method)
			_expr='method == resources/read'
			_keep="coalesce(m.method, (SELECT q.method FROM message q WHERE q.session = m.session AND q.seq = m.request_seq)) IS 'resources/read'" ;;
		tool)
			_expr='tool == slow'
			_keep="(SELECT json_extract(CAST(q.raw AS TEXT), '\$.params.name') FROM message q WHERE q.session = m.session AND q.seq = coalesce(m.request_seq, CASE WHEN m.kind = 'request' THEN m.seq END) AND q.method = 'tools/call') IS 'slow'" ;;
		esac
		cp "$TMP/f.db" "$TMP/fk.db"
		sqlite3 "$TMP/fk.db" "DELETE FROM message WHERE seq NOT IN (SELECT m.seq FROM message m WHERE m.session = 1 AND $_keep)" ||
			{ echo "bench: sqlite3 could not make the file of the rows passed" >&2; exit 1; }
		pin ./mcptap show -r "$TMP/f.db" -Y "$_expr" > "$TMP/fy.out"
		pin ./mcptap show -r "$TMP/fk.db" > "$TMP/fk.out"
		cmp -s "$TMP/fy.out" "$TMP/fk.out" ||
			{ echo "bench: FAILED: show -Y '$_expr' and show of the rows it passes differ" >&2; exit 1; }
		_rows=$(wc -l < "$TMP/fy.out")
		: > "$TMP/fy"; : > "$TMP/fk"
		i=0
		while [ $i -lt "$RUNS" ]; do
			t0=$(now_ns); pin ./mcptap show -r "$TMP/f.db" -Y "$_expr" > /dev/null; t1=$(now_ns)
			echo $((t1 - t0)) >> "$TMP/fy"
			t0=$(now_ns); pin ./mcptap show -r "$TMP/fk.db" > /dev/null; t1=$(now_ns)
			echo $((t1 - t0)) >> "$TMP/fk"
			i=$((i + 1))
		done
		awk -v e="$_expr" -v r="$_rows" -v y="$(median < "$TMP/fy")" -v k="$(median < "$TMP/fk")" 'BEGIN {
			printf "    -Y %s: %d rows, the same lines; %.2f s against %.2f s: %.2fx (target <= 2)\n",
				e, r, y / 1e9, k / 1e9, y / k }'
		headline n "show -Y '$_expr' / show of its rows" \
			"$(calc 'printf "%.2fx", y / k' y="$(median < "$TMP/fy")" k="$(median < "$TMP/fk")")" "<= 2x"
		rm -f "$TMP/fk.db" "$TMP/fy.out" "$TMP/fk.out"
	done
	rm -f "$TMP/f.db"
}

# (o) show --follow: a stdio tap records 1000 pings 5 ms apart (the C echo
# server) while show -F -T json follows the file; each message's delay is from
# when the tap read it (its "time") to when the follower's line arrives, which
# holds the writer's commit interval and the follower's poll.
section_o() {
	rm -f "$TMP/fo.db"*
	printf '{"jsonrpc":"2.0","id":0,"method":"ping"}\n' | ./mcptap record -w "$TMP/fo.db" -- $B/echo-server > /dev/null
	./mcptap show -r "$TMP/fo.db" -F -T json | perl -MTime::HiRes=time -ne '
		BEGIN { $| = 1 }
		printf "%.6f %s\n", time, $1 if /"time":"([^"]*)"/' > "$TMP/fo.out" &
	_f=$!
	sleep 0.5
	perl -MTime::HiRes=sleep -e '$| = 1; for my $i (1 .. 1000) { print qq({"jsonrpc":"2.0","id":$i,"method":"ping"}\n); sleep 0.005 } sleep 0.3' |
		./mcptap record -w "$TMP/fo.db" -- $B/echo-server > /dev/null
	sleep 0.5
	kill -INT $(pgrep -f "mcptap show -r $TMP/fo.db -F" | head -n 1) 2> /dev/null
	wait $_f 2> /dev/null
	echo "(o) show --follow while a stdio tap records 1000 pings 5 ms apart: from the tap's read to the follower's line"
	BENCH_FO_P99=$TMP/fo.p99 perl -MTime::Local=timegm -ne '
		my ($at, $t) = split;
		my ($Y, $M, $D, $h, $m, $s) = $t =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):([\d.]+)Z$/ or next;
		push @d, ($at - (timegm(0, $m, $h, $D, $M - 1, $Y) + $s)) * 1000;
		END {
			@d = sort { $a <=> $b } @d;
			my $n = @d;
			printf "    %d lines (of 2002 since it began); delay p50 %.1f ms, p99 %.1f ms, max %.1f ms (target <= 100 ms after the commit)\n",
				$n, $d[int($n / 2)], $d[int($n * 0.99)], $d[-1];
			open(my $o, ">", "$ENV{BENCH_FO_P99}") or die; printf $o "%.1f\n", $d[int($n * 0.99)]; close $o;
		}' "$TMP/fo.out"
	headline o "show -F delay behind the tap, p99" "$(cat "$TMP/fo.p99") ms" "<= 100 ms"
	rm -f "$TMP/fo.db"* "$TMP/fo.out" "$TMP/fo.p99"
}

# (p) export: each format of a 1M-message capture (gen-session.sh), against
# show -T json of the same capture (the same reads, one JSON line a message);
# and peak RSS (GNU time) exporting 200k and 1M messages: flat when it streams.
EXPORT_FORMATS="jsonl har otlp pcapng"
section_p() {
	_n=${BENCH_EXPORT_N:-1000000}
	sh tests/bench/gen-session.sh "$_n" | tests/peers/fixture-load /dev/stdin "$TMP/e.db"
	sh tests/bench/gen-session.sh $((_n / 5)) | tests/peers/fixture-load /dev/stdin "$TMP/e5.db"
	echo "(p) export of a session of $_n messages, one CPU, against show -T json of it"
	: > "$TMP/es"
	for _f in $EXPORT_FORMATS; do : > "$TMP/ex.$_f"; done
	i=0
	while [ $i -lt "$RUNS" ]; do
		t0=$(now_ns); pin ./mcptap show -r "$TMP/e.db" -T json > /dev/null; t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/es"
		for _f in $EXPORT_FORMATS; do
			t0=$(now_ns); pin ./mcptap export -r "$TMP/e.db" -T "$_f" -o "$TMP/e.out"; t1=$(now_ns)
			echo $((t1 - t0)) >> "$TMP/ex.$_f"
		done
		i=$((i + 1))
	done
	for _f in $EXPORT_FORMATS; do
		pin ./mcptap export -r "$TMP/e.db" -T "$_f" -o "$TMP/e.out"
		_size=$(du -m "$TMP/e.out" | cut -f1)
		_r5=$(/usr/bin/time -f %M ./mcptap export -r "$TMP/e5.db" -T "$_f" -o "$TMP/e.out" 2>&1 >/dev/null | tail -1)
		_r1=$(/usr/bin/time -f %M ./mcptap export -r "$TMP/e.db" -T "$_f" -o "$TMP/e.out" 2>&1 >/dev/null | tail -1)
		_target=1.5
		case $_f in har | pcapng) _target=3 ;; esac
		awk -v f="$_f" -v e="$(median < "$TMP/ex.$_f")" -v s="$(median < "$TMP/es")" -v t="$_target" \
			-v m="$_size" -v r5="$_r5" -v r1="$_r1" -v n5=$((_n / 5)) -v n="$_n" 'BEGIN {
			printf "    %-6s %.2f s against %.2f s: %.2fx (target <= %s); %d MB; peak RSS %.1f MiB at %d, %.1f MiB at %d messages\n",
				f, e / 1e9, s / 1e9, e / s, t, m, r5 / 1024, n5, r1 / 1024, n }'
		headline p "export -T $_f / show -T json" "$(calc 'printf "%.2fx", e / s' e="$(median < "$TMP/ex.$_f")" \
			s="$(median < "$TMP/es")")" "<= ${_target}x"
		headline p "export -T $_f peak RSS, $((_n / 5)) / $_n messages" "$((_r5 / 1024)) / $((_r1 / 1024)) MiB" "flat"
	done
	rm -f "$TMP/e.db"* "$TMP/e5.db"* "$TMP/e.out"
}

# cpu_ticks PID: the user and system clock ticks PID has used so far
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# (q) Live push (--otlp) through the HTTP tap: the flood of section (k), HFLOOD
# requests over HCONNS connections on CPUs 0,1 with every message stored, through
# the tap with --otlp (a CLIENT span per request pushed to a sink: a second
# http-echo, which answers each POST 202 without decoding its gzip-coded batch)
# and without it, one after the other in each run; requests/s timed from the
# first connect until the tap has exited, so that every span was pushed too (the
# tap says so when one was not: the run fails then). The figure is the ratio of
# the two rates, whatever they are: --otlp may cost the relay 5% of it at most.
# Beside it, the tap's CPU time until the flood's end, which a busy machine
# disturbs less than a rate.
section_q() {
	: > "$TMP/q.n"
	: > "$TMP/q.o"
	: > "$TMP/q.cn"
	: > "$TMP/q.co"
	start_echo 0,1
	SINK_PID=$ECHO_PID
	SINK_ORIGIN=$ECHO_ORIGIN
	i=0
	while [ $i -lt "$RUNS" ]; do
		start_echo 0,1
		start_tap 0,1 "$TMP/q.db"
		t0=$(now_ns)
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$TAP_URL" > /dev/null
		cpu_ticks "$TAP_PID" >> "$TMP/q.cn"
		stop_tap "$TMP/q.db" $((3 * HCONNS + 2 * HFLOOD))
		t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/q.n"
		start_tap 0,1 "$TMP/q.db" --otlp "$SINK_ORIGIN"
		t0=$(now_ns)
		pin2 $B/http-load flood "$HFLOOD" $HCONNS "$TAP_URL" > /dev/null
		cpu_ticks "$TAP_PID" >> "$TMP/q.co"
		stop_tap "$TMP/q.db" $((3 * HCONNS + 2 * HFLOOD))
		t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/q.o"
		if grep -q "not pushed" "$TMP/tap.err"; then
			cat "$TMP/tap.err" >&2
			echo "bench: FAILED: the tap did not push every span" >&2
			exit 1
		fi
		stop_bg "$ECHO_PID"
		i=$((i + 1))
	done
	stop_bg "$SINK_PID"
	echo "(q) live push: the HTTP tap's flood, $HFLOOD requests over $HCONNS connections, CPUs 0,1, every message stored, until the tap has exited"
	awk -v n="$HFLOOD" -v c=$HCONNS -v a="$(median < "$TMP/q.n")" -v b="$(median < "$TMP/q.o")" 'BEGIN {
		printf "    no --otlp %.0f requests/s   --otlp %.0f requests/s, %d spans pushed   --otlp/no --otlp = %.3fx (target >= 0.95)\n", n / (a / 1e9), n / (b / 1e9), n + c, a / b }'
	headline q "HTTP tap flood, --otlp / no --otlp" \
		"$(calc 'printf "%.3fx", a / b' a="$(median < "$TMP/q.n")" b="$(median < "$TMP/q.o")")" ">= 0.95x"
	awk -v a="$(median < "$TMP/q.cn")" -v b="$(median < "$TMP/q.co")" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		printf "    the tap'"'"'s CPU time for the flood (user + system, to its end): no --otlp %.2f s   --otlp %.2f s   %.3fx\n", a / hz, b / hz, b / a }'
	rm -f "$TMP/q.db"*
}

# (s) report: the HTML of a 100k- and a 1M-message session (gen-session.sh)
# against show -T json of it, with the report's peak RSS and size; and how
# long headless Chromium takes to open the 100k report and take a screenshot,
# beside a report of 10 messages (what the browser's start costs).
section_s() {
	_n=${BENCH_REPORT_N:-1000000}
	command -v chromium > /dev/null || { echo "(s) skipped: no chromium (tests/setup.sh test installs it)"; return 0; }
	# (new files: the peak RSS runs of (d) leave their capture as r.db)
	rm -f "$TMP/r.db"* "$TMP/r10.db"* "$TMP/rs.db"*
	sh tests/bench/gen-session.sh "$_n" | tests/peers/fixture-load /dev/stdin "$TMP/r.db"
	sh tests/bench/gen-session.sh $((_n / 10)) | tests/peers/fixture-load /dev/stdin "$TMP/r10.db"
	sh tests/bench/gen-session.sh 10 | tests/peers/fixture-load /dev/stdin "$TMP/rs.db"
	echo "(s) report of sessions of $((_n / 10)) and $_n messages, one CPU, against show -T json of them"
	for _db in r10 r; do
		: > "$TMP/qs"; : > "$TMP/qr"
		i=0
		while [ $i -lt "$RUNS" ]; do
			t0=$(now_ns); pin ./mcptap show -r "$TMP/$_db.db" -T json > /dev/null; t1=$(now_ns)
			echo $((t1 - t0)) >> "$TMP/qs"
			t0=$(now_ns); pin ./mcptap report -r "$TMP/$_db.db" -o "$TMP/$_db.html"; t1=$(now_ns)
			echo $((t1 - t0)) >> "$TMP/qr"
			i=$((i + 1))
		done
		_rss=$(/usr/bin/time -f %M ./mcptap report -r "$TMP/$_db.db" -o "$TMP/$_db.html" 2>&1 >/dev/null | tail -1)
		awk -v n="$(sqlite3 "$TMP/$_db.db" 'SELECT count(*) FROM message')" -v r="$(median < "$TMP/qr")" \
			-v s="$(median < "$TMP/qs")" -v m="$(du -m "$TMP/$_db.html" | cut -f1)" -v k="$_rss" 'BEGIN {
			printf "    %d messages: %.2f s against %.2f s: %.2fx; %d MB of HTML; peak RSS %.1f MiB\n",
				n, r / 1e9, s / 1e9, r / s, m, k / 1024 }'
		headline s "report of $(sqlite3 "$TMP/$_db.db" 'SELECT count(*) FROM message') messages / show -T json; peak RSS" "$(calc 'printf "%.2fx; %.0f MiB", r / s, k / 1024' \
			r="$(median < "$TMP/qr")" s="$(median < "$TMP/qs")" k="$_rss")" "flat memory"
	done
	./mcptap report -r "$TMP/rs.db" -o "$TMP/rs.html"
	: > "$TMP/qb"; : > "$TMP/qc"
	i=0
	while [ $i -lt "$RUNS" ]; do
		for _h in rs r10; do
			t0=$(now_ns)
			timeout 600 chromium --headless --no-sandbox --disable-gpu --window-size=1280,1000 \
				--screenshot="$TMP/q.png" "file://$TMP/$_h.html" > /dev/null 2>&1
			t1=$(now_ns)
			[ "$_h" = rs ] && echo $((t1 - t0)) >> "$TMP/qb" || echo $((t1 - t0)) >> "$TMP/qc"
		done
		i=$((i + 1))
	done
	awk -v b="$(median < "$TMP/qb")" -v c="$(median < "$TMP/qc")" -v n=$((_n / 10)) 'BEGIN {
		printf "    headless Chromium, open and screenshot: %.2f s for %d messages, %.2f s for 10 (its start): %.2f s more\n",
			c / 1e9, n, b / 1e9, (c - b) / 1e9 }'
	rm -f "$TMP/r.db"* "$TMP/r10.db"* "$TMP/rs.db"* "$TMP"/*.html "$TMP/q.png"
}

# (r) diff: two captures of a 1M-message session (gen-session.sh), timed side by side
# with show -T json of the first (the same reads of one capture, one JSON line a
# message): the same flow twice (every exchange the same), and against the varied
# flow (one answer in 13 an error, the last ones unanswered: tens of thousands of
# CHANGED lines printed); and diff's peak RSS (GNU time) at 200k and 1M messages.
section_r() {
	_n=${BENCH_DIFF_N:-1000000}
	sh tests/bench/gen-session.sh "$_n" | tests/peers/fixture-load /dev/stdin "$TMP/da.db"
	sh tests/bench/gen-session.sh "$_n" | tests/peers/fixture-load /dev/stdin "$TMP/db.db"
	sh tests/bench/gen-session.sh "$_n" varied | tests/peers/fixture-load /dev/stdin "$TMP/dv.db"
	sh tests/bench/gen-session.sh $((_n / 5)) | tests/peers/fixture-load /dev/stdin "$TMP/d5a.db"
	sh tests/bench/gen-session.sh $((_n / 5)) | tests/peers/fixture-load /dev/stdin "$TMP/d5b.db"
	echo "(r) diff of two sessions of $_n messages, one CPU, against show -T json of one"
	: > "$TMP/qs"; : > "$TMP/qd"; : > "$TMP/qv"
	i=0
	while [ $i -lt "$RUNS" ]; do
		t0=$(now_ns); pin ./mcptap show -r "$TMP/da.db" -T json > /dev/null; t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/qs"
		t0=$(now_ns); pin ./mcptap diff "$TMP/da.db" "$TMP/db.db" > /dev/null; t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/qd"
		# (exit 1: they differ)
		t0=$(now_ns); pin ./mcptap diff "$TMP/da.db" "$TMP/dv.db" > "$TMP/dv.out" || :; t1=$(now_ns)
		echo $((t1 - t0)) >> "$TMP/qv"
		i=$((i + 1))
	done
	_changed=$(grep -c '^CHANGED' "$TMP/dv.out" || :)
	_r5=$(/usr/bin/time -f %M ./mcptap diff "$TMP/d5a.db" "$TMP/d5b.db" 2>&1 >/dev/null | tail -1)
	_r1=$(/usr/bin/time -f %M ./mcptap diff "$TMP/da.db" "$TMP/db.db" 2>&1 >/dev/null | tail -1)
	_rv=$(/usr/bin/time -f %M ./mcptap diff "$TMP/da.db" "$TMP/dv.db" 2>&1 >/dev/null | tail -1)
	awk -v s="$(median < "$TMP/qs")" -v d="$(median < "$TMP/qd")" -v v="$(median < "$TMP/qv")" \
		-v c="$_changed" -v r5="$_r5" -v r1="$_r1" -v rv="$_rv" -v n5=$((_n / 5)) -v n="$_n" 'BEGIN {
		printf "    show -T json %.2f s; diff, the same: %.2f s (%.2fx); diff, %d CHANGED: %.2f s (%.2fx)\n",
			s / 1e9, d / 1e9, d / s, c, v / 1e9, v / s
		printf "    diff peak RSS: %.1f MiB at %d, %.1f MiB at %d messages (%.1f MiB with the changes)\n",
			r5 / 1024, n5, r1 / 1024, n, rv / 1024 }'
	headline r "diff of the same flow twice / show -T json" \
		"$(calc 'printf "%.2fx", d / s' d="$(median < "$TMP/qd")" s="$(median < "$TMP/qs")")" "-"
	headline r "diff peak RSS, $((_n / 5)) / $_n messages" "$((_r5 / 1024)) / $((_r1 / 1024)) MiB" "-"
	rm -f "$TMP/da.db"* "$TMP/db.db"* "$TMP/dv.db"* "$TMP/d5a.db"* "$TMP/d5b.db"* "$TMP/dv.out"
}

if [ "${BENCH_ONLY:-}" = k ] || [ "${BENCH_ONLY:-}" = l ] || [ "${BENCH_ONLY:-}" = m ] || [ "${BENCH_ONLY:-}" = n ] || [ "${BENCH_ONLY:-}" = o ] || [ "${BENCH_ONLY:-}" = p ] || [ "${BENCH_ONLY:-}" = q ] || [ "${BENCH_ONLY:-}" = r ] || [ "${BENCH_ONLY:-}" = s ]; then
	echo "mcptap benchmarks: section ($BENCH_ONLY) only; $(nproc) CPUs; median of $RUNS runs"
	echo
	section_$BENCH_ONLY
	summary
	exit 0
fi

echo "mcptap benchmarks: $(nproc) CPUs; ping and flood pinned to CPU $CPU, flood also to CPUs 0,1; median of $RUNS runs"
echo

for c in direct relay tap; do : > "$TMP/ping50.$c"; : > "$TMP/ping99.$c"; : > "$TMP/flood.$c"; : > "$TMP/flood2.$c"; done
: > "$TMP/floor"
: > "$TMP/floor2"
i=0
while [ $i -lt "$RUNS" ]; do
	for c in direct relay tap; do
		out=$(ping_run $c)
		echo "$out" | field p50_us >> "$TMP/ping50.$c"
		echo "$out" | field p99_us >> "$TMP/ping99.$c"
		flood_run $c "$FLOOD" pin >> "$TMP/flood.$c"
		flood_run $c "$FLOOD" pin2 >> "$TMP/flood2.$c"
	done
	pin $B/store-floor $((2 * FLOOD)) "$TMP/floor.db" | field rows_per_s >> "$TMP/floor"
	pin2 $B/store-floor $((2 * FLOOD)) "$TMP/floor.db" | field rows_per_s >> "$TMP/floor2"
	i=$((i + 1))
done
stored=$(sqlite3 "$TMP/f.db" "select count(*) from message")

for c in direct relay tap; do
	eval "p50_$c=$(median < "$TMP/ping50.$c")"
	eval "p99_$c=$(median < "$TMP/ping99.$c")"
	eval "fl_$c=$(median < "$TMP/flood.$c")"
	eval "fl2_$c=$(median < "$TMP/flood2.$c")"
done
floor=$(median < "$TMP/floor")
floor2=$(median < "$TMP/floor2")

echo "(a) ping round trip, $PINGS sequential pings"
printf '    %-8s p50 %8s µs   p99 %8s µs\n' direct "$p50_direct" "$p99_direct" relay "$p50_relay" "$p99_relay" mcptap "$p50_tap" "$p99_tap"
awk -v t="$p50_tap" -v r="$p50_relay" -v d="$p50_direct" 'BEGIN {
	printf "    mcptap/relay p50 = %.2fx (target <= 1.15)   mcptap/direct p50 = %.2fx\n", t / r, t / d }'
headline a "ping p50, mcptap record / plain relay" "$(calc 'printf "%.2fx", t / r' t="$p50_tap" r="$p50_relay")" "<= 1.15x"
echo
echo "(b) flood, $FLOOD pipelined requests ($((2 * FLOOD)) messages), until the tap has exited,"
echo "(c) against the storage floor: $((2 * FLOOD)) parsed rows inserted in batches, until the file is closed"
printf '    %-8s %14s %16s\n' "" "on CPU $CPU" "on CPUs 0,1"
printf '    %-8s %12s/s %14s/s\n' direct "$fl_direct" "$fl2_direct" relay "$fl_relay" "$fl2_relay" \
	mcptap "$fl_tap" "$fl2_tap" floor "$floor" "$floor2"
echo "    mcptap stored $stored of $((2 * FLOOD + 3)) messages (handshake included) in its last run"
awk -v t="$fl_tap" -v f="$floor" -v r="$fl_relay" -v t2="$fl2_tap" -v f2="$floor2" 'BEGIN {
	printf "    mcptap flood / storage floor = %.2fx on one CPU, %.2fx on two (target >= 0.8)\n", t / f, t2 / f2
	printf "    mcptap / plain relay = %.3fx on one CPU: SQLite, not the relay, is the limit\n", t / r }'
headline b "flood, every message stored / storage floor, one CPU" "$(calc 'printf "%.2fx", t / f' t="$fl_tap" f="$floor")" ">= 0.8x"
headline b "flood, every message stored / storage floor, two CPUs" "$(calc 'printf "%.2fx", t / f' t="$fl2_tap" f="$floor2")" ">= 0.8x"
echo

# (d) RSS: mcptap's own peak, measured by GNU time around it.
rss() { # rss N -> KiB
	rm -f "$TMP/r.db"*
	pin $B/load-client flood "$1" -- /usr/bin/time -f '%M' -o "$TMP/rss" ./mcptap record -w "$TMP/r.db" -- $B/echo-server >/dev/null
	tail -n 1 "$TMP/rss"
}
if [ -x /usr/bin/time ]; then
	r200=$(rss 100000)
	r1m=$(rss 500000)
	echo "(d) peak RSS of mcptap record (its echo server included)"
	echo "    200k messages: $((r200 / 1024)) MiB   1M messages: $((r1m / 1024)) MiB   (target <= 32 MiB, flat)"
	headline d "record's peak RSS, 200k / 1M messages" "$((r200 / 1024)) / $((r1m / 1024)) MiB" "<= 32 MiB, flat"
else
	echo "(d) peak RSS: skipped, /usr/bin/time is not installed (apt-get install time)"
fi

# (e) the analyzer: a generated clean session of ANALYZE_N messages (a mix of
# tools/call, progress, resources/read, prompts/get and resources/list), loaded through
# the writer, then analyzed with every rule on one CPU, findings not stored.
AN=${BENCH_ANALYZE:-1000000}
sh tests/bench/gen-session.sh "$AN" > "$TMP/gen.fx"
tests/peers/fixture-load "$TMP/gen.fx" "$TMP/gen.db"
rm -f "$TMP/gen.fx"
: > "$TMP/an"
i=0
while [ $i -lt "$RUNS" ]; do
	t0=$(now_ns)
	pin ./mcptap analyze -r "$TMP/gen.db" --no-store > "$TMP/an.out"
	t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/an"
	i=$((i + 1))
done
an_ns=$(median < "$TMP/an")
echo
echo "(e) analyze: $AN messages, every rule, one CPU"
awk -v n="$AN" -v ns="$an_ns" 'BEGIN {
	printf "    %.2f s, %.0f messages/s (target >= 1000000)\n", ns / 1e9, n / (ns / 1e9) }'
tail -n 1 "$TMP/an.out" | sed 's/^/    /'
headline e "analyze, every rule, one CPU" "$(calc 'printf "%.0f messages/s", n / (ns / 1e9)' n="$AN" ns="$an_ns")" \
	">= 1000000 messages/s"

# (f) replay: the load client against `mcptap replay --as server` (a mock of a
# recorded echo server) and, in the same run, against the C echo server itself.
pin $B/load-client ping "$PINGS" -- ./mcptap record -w "$TMP/rp.db" -- $B/echo-server > /dev/null
pin $B/load-client flood "$FLOOD" -- ./mcptap record -w "$TMP/rf.db" -- $B/echo-server > /dev/null
: > "$TMP/m50"; : > "$TMP/e50"; : > "$TMP/mfl"; : > "$TMP/efl"
i=0
while [ $i -lt "$RUNS" ]; do
	pin $B/load-client ping "$PINGS" -- $B/echo-server | field p50_us >> "$TMP/e50"
	pin $B/load-client ping "$PINGS" -- ./mcptap replay -r "$TMP/rp.db" --as server | field p50_us >> "$TMP/m50"
	pin $B/load-client flood "$FLOOD" -- $B/echo-server | field msgs_per_s >> "$TMP/efl"
	pin $B/load-client flood "$FLOOD" -- ./mcptap replay -r "$TMP/rf.db" --as server | field msgs_per_s >> "$TMP/mfl"
	i=$((i + 1))
done
echo
echo "(f) replay --as server over stdio, $PINGS pings and a flood of $FLOOD requests, one CPU"
awk -v m="$(median < "$TMP/m50")" -v e="$(median < "$TMP/e50")" -v mf="$(median < "$TMP/mfl")" -v ef="$(median < "$TMP/efl")" 'BEGIN {
	printf "    ping p50: mock %.1f µs, echo server %.1f µs: %.2fx (target <= 1.2)\n", m, e, m / e
	printf "    flood: mock %.0f requests/s (target >= 100000), echo server %.0f requests/s\n", mf / 2, ef / 2 }'
headline f "mock ping p50 / echo server" "$(calc 'printf "%.2fx", m / e' m="$(median < "$TMP/m50")" e="$(median < "$TMP/e50")")" \
	"<= 1.2x"
headline f "mock flood" "$(calc 'printf "%.0f requests/s", m / 2' m="$(median < "$TMP/mfl")")" ">= 100000 requests/s"
if [ -x /usr/bin/time ]; then
	pin $B/load-client flood "$FLOOD" -- /usr/bin/time -f '%M' -o "$TMP/mrss" ./mcptap replay -r "$TMP/rf.db" --as server --no-store > /dev/null
	echo "    the mock's peak RSS over a recording of $((2 * FLOOD + 3)) messages: $(( $(tail -n 1 "$TMP/mrss") / 1024 )) MiB"
fi

# (g) 8 taps at once, each a flood of FLOOD/8 requests through its own tap:
# into one capture file, then into 8 files. Timed until every tap has exited
# (all stored); CPUs 0 and 1.
many() { # many ONE|EIGHT -> messages/s over all 8
	rm -f "$TMP"/m*.db*
	t0=$(now_ns)
	for k in 1 2 3 4 5 6 7 8; do
		if [ "$1" = ONE ]; then db="$TMP/m.db"; else db="$TMP/m$k.db"; fi
		pin2 $B/load-client flood $((FLOOD / 8)) -- ./mcptap record -w "$db" -- $B/echo-server > /dev/null &
	done
	wait
	t1=$(now_ns)
	awk -v n=$((2 * (FLOOD / 8) * 8)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.0f\n", n / (ns / 1e9)}'
}
: > "$TMP/one"; : > "$TMP/eight"
i=0
while [ $i -lt "$RUNS" ]; do
	many ONE >> "$TMP/one"
	one_stored=$(sqlite3 "$TMP/m.db" "select count(*) from message")
	one_gaps=$(sqlite3 "$TMP/m.db" "select count(*) from gap")
	many EIGHT >> "$TMP/eight"
	i=$((i + 1))
done
echo
echo "(g) 8 taps flooding at once, $((FLOOD / 8)) requests each, CPUs 0,1"
awk -v o="$(median < "$TMP/one")" -v e="$(median < "$TMP/eight")" 'BEGIN {
	printf "    into one file: %.0f messages/s; into 8 files: %.0f messages/s; one / eight = %.2fx\n", o, e, o / e }'
echo "    one file, last run: $one_stored of $((8 * (2 * (FLOOD / 8) + 3))) messages stored, $one_gaps gaps"
headline g "8 taps into one file / into 8 files" \
	"$(calc 'printf "%.2fx", o / e' o="$(median < "$TMP/one")" e="$(median < "$TMP/eight")")" "-"

# (h) A paced stream (a 2 KB line every ms for 7 s: 10 MB while the lock is
# held, more than --queue and less than --hold) and the largest gap between
# two lines at the client: a direct pipe, the tap, the tap while another
# program holds the file's write lock for 5 s (from 1 s on).
paced='use Time::HiRes "sleep"; $| = 1; my $p = "x" x 2000; for (1 .. 7000) { print "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":$_,\"p\":\"$p\"}}\n"; sleep 0.001 }'
gap='use Time::HiRes "time"; my ($last, $max, $n) = (undef, 0, 0); while (<STDIN>) { my $t = time; $max = $t - $last if defined $last && $t - $last > $max; $last = $t; $n++ } printf "%.1f %d\n", $max * 1000, $n'
perl -e "$paced" < /dev/null | perl -e "$gap" > "$TMP/g.direct"
rm -f "$TMP/l.db"*
./mcptap record -w "$TMP/l.db" -- perl -e "$paced" < /dev/null | perl -e "$gap" > "$TMP/g.tap"
(sleep 1; printf 'BEGIN IMMEDIATE;\n.shell date +%%s%%N > %s/l.t0\n.shell sleep 5\nCOMMIT;\n' "$TMP" |
	sqlite3 -cmd ".timeout 10000" "$TMP/l.db"; date +%s%N > "$TMP/l.t1") &
./mcptap record -w "$TMP/l.db" -- perl -e "$paced" < /dev/null 2> /dev/null | perl -e "$gap" > "$TMP/g.lock"
wait
echo
echo "(h) the relay's worst stall: a 2 KB line every ms for 7 s, the largest gap the client saw"
read -r gd nd < "$TMP/g.direct"; read -r gt nt < "$TMP/g.tap"; read -r gl nl < "$TMP/g.lock"
echo "    direct pipe: $gd ms ($nd lines)   tap: $gt ms ($nt lines)   tap, file locked 5 s: $gl ms ($nl lines)"
awk -v l="$gl" -v t="$gt" 'BEGIN { printf "    locked / unlocked = %.2fx (target: no stall beyond a few ms)\n", l / t }'
headline h "largest gap, file locked 5 s (unlocked: $gt ms)" "$gl ms" "a few ms"
echo "    the lock was held $(( ($(cat "$TMP/l.t1") - $(cat "$TMP/l.t0")) / 1000000 )) ms; $(sqlite3 "$TMP/l.db" "select count(*) from message where session = 2") of 7000 lines stored in the end"

# (i) Memory in proportion to what is open, not to the session's length: the
# peak RSS of analyze (every rule, findings not stored) and of stats on the
# clean generated sessions of (e) at 1M and at 10M messages; and analyze's
# pace against a bare scan of the same rows in the same SQLite that checks
# each message's JSON (the floor of any analyzer that reads every message).
BIG=${BENCH_BIG:-10000000}
sh tests/bench/gen-session.sh "$BIG" | tests/peers/fixture-load /dev/stdin "$TMP/big.db"
peak() { /usr/bin/time -f '%M' -o "$TMP/peak" "$@" > /dev/null; tail -n 1 "$TMP/peak"; }
if [ -x /usr/bin/time ]; then
	a1=$(peak taskset -c "$CPU" ./mcptap analyze -r "$TMP/gen.db" --no-store)
	a10=$(peak taskset -c "$CPU" ./mcptap analyze -r "$TMP/big.db" --no-store)
	s1=$(peak taskset -c "$CPU" ./mcptap stats -r "$TMP/gen.db")
	s10=$(peak taskset -c "$CPU" ./mcptap stats -r "$TMP/big.db")
	echo
	echo "(i) peak RSS over a clean session (target: flat; analyze under 64 MiB)"
	printf '    analyze: %s MiB at %s messages, %s MiB at %s\n' $((a1 / 1024)) "$AN" $((a10 / 1024)) "$BIG"
	printf '    stats:   %s MiB at %s messages, %s MiB at %s\n' $((s1 / 1024)) "$AN" $((s10 / 1024)) "$BIG"
	headline i "analyze peak RSS, $AN / $BIG messages" "$((a1 / 1024)) / $((a10 / 1024)) MiB" "flat, < 64 MiB"
fi
: > "$TMP/scan"; : > "$TMP/an2"
i=0
while [ $i -lt "$RUNS" ]; do
	t0=$(now_ns)
	pin sqlite3 "$TMP/gen.db" "SELECT count(*) FROM message WHERE json_valid(raw)" > /dev/null
	t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/scan"
	t0=$(now_ns)
	pin ./mcptap analyze -r "$TMP/gen.db" --no-store > /dev/null
	t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/an2"
	i=$((i + 1))
done
awk -v a="$(median < "$TMP/an2")" -v s="$(median < "$TMP/scan")" -v n="$AN" 'BEGIN {
	printf "    analyze / a json_valid scan of the same %d rows = %.2fx the time (target <= 2)\n", n, a / s }'
headline i "analyze / a json_valid scan of its rows" \
	"$(calc 'printf "%.2fx", a / s' a="$(median < "$TMP/an2")" s="$(median < "$TMP/scan")")" "<= 2x"

# (j) sessions on a 20M-message file: the session rows keep their counts, so
# it reads no message; against the sqlite3 shell counting the session rows.
HUGE=${BENCH_HUGE:-20000000}
sh tests/bench/gen-session.sh "$HUGE" | tests/peers/fixture-load /dev/stdin "$TMP/huge.db"
rm -f "$TMP/big.db"*
: > "$TMP/ss"; : > "$TMP/sq"
i=0
while [ $i -lt "$RUNS" ]; do
	t0=$(now_ns); ./mcptap sessions -r "$TMP/huge.db" > /dev/null; t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/ss"
	t0=$(now_ns); sqlite3 "$TMP/huge.db" "SELECT count(*) FROM session" > /dev/null; t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/sq"
	i=$((i + 1))
done
echo
echo "(j) sessions on a $HUGE-message file ($(du -m "$TMP/huge.db" | cut -f1) MB)"
awk -v a="$(median < "$TMP/ss")" -v s="$(median < "$TMP/sq")" 'BEGIN {
	printf "    %.1f ms; the sqlite3 shell counting its sessions: %.1f ms; %.2fx\n", a / 1e6, s / 1e6, a / s }'
headline j "sessions on a $HUGE-message file" "$(calc 'printf "%.1f ms", a / 1e6' a="$(median < "$TMP/ss")")" "-"

echo
section_k
echo
section_l
echo
section_m
echo
section_n
echo
section_o
echo
section_p
echo
section_q
echo
section_r
echo
section_s
summary
