#!/bin/sh
# t0365-export-clickhouse: export -T jsonl loaded into ClickHouse (Debian's
# clickhouse-server, on loopback) with the table and the command mcptap.1
# gives, on a capture of 1M messages whose answers come 1 to 97 ms after their
# requests, one in 13 an error, five never: the per-method counts ClickHouse
# computes equal `mcptap stats`, its maxima too, and its exact nearest-rank
# p50, p95 and p99 are within stats' 1%. A capture with a stderr line and a
# gap loads as well, every line a row.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-peers.sh"

SERVER=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
[ -x "$SERVER" ] && command -v clickhouse-client > /dev/null ||
	die "clickhouse-server and clickhouse-client are not installed (tests/setup.sh installs them)"

# The server, on free loopback ports, its files in $T.
mkdir -p "$T/ch/data" "$T/ch/tmp" "$T/ch/log"
TCP=$(free_port)
HTTP=$(free_port)
cat > "$T/ch/config.xml" << EOF
<?xml version="1.0"?>
<yandex>
	<logger><level>warning</level><log>$T/ch/log/server.log</log><errorlog>$T/ch/log/err.log</errorlog><console>0</console></logger>
	<listen_host>127.0.0.1</listen_host>
	<tcp_port>$TCP</tcp_port>
	<http_port>$HTTP</http_port>
	<path>$T/ch/data/</path>
	<tmp_path>$T/ch/tmp/</tmp_path>
	<users_config>/etc/clickhouse-server/users.xml</users_config>
	<default_profile>default</default_profile>
	<default_database>default</default_database>
	<mark_cache_size>67108864</mark_cache_size>
</yandex>
EOF
"$SERVER" --config-file="$T/ch/config.xml" > "$T/ch/out" 2>&1 &
CH_PID=$!
trap 'kill $CH_PID 2> /dev/null; wait $CH_PID 2> /dev/null' EXIT
ch() { clickhouse-client --port "$TCP" "$@"; }
_n=0
until ch -q 'SELECT 1' > /dev/null 2>&1; do
	_n=$((_n + 1))
	[ $_n -lt 300 ] || { cat "$T/ch/out" "$T/ch/log/err.log"; die "clickhouse-server did not start"; }
	kill -0 $CH_PID 2> /dev/null || { cat "$T/ch/out" "$T/ch/log/err.log"; die "clickhouse-server exited"; }
	sleep 0.1
done
echo "# ClickHouse $(ch -q 'SELECT version()')"

# The table and the load command, as mcptap.1 gives them.
MAN=$TOP/mcptap.1
TABLE=$(sed -n '/^\.\\" clickhouse-table-begin$/,/^\.\\" clickhouse-table-end$/p' "$MAN" | sed '1d;$d')
LOAD=$(sed -n '/^\.\\" clickhouse-load-begin$/,/^\.\\" clickhouse-load-end$/p' "$MAN" | sed '1d;$d' | sed 's/\\e/\\/g')
check "mcptap.1 gives the table and the load command" test -n "$TABLE" -a -n "$LOAD"
# load FILE: mcptap.1's command, on this server.
load() {
	_cmd=$(printf '%s\n' "$LOAD" | sed "s|^mcptap export -r FILE|\"\$MCPTAP\" export -r \"$1\"|; s|clickhouse-client |clickhouse-client --port $TCP |")
	MCPTAP=$MCPTAP sh -c "$_cmd"
}

# ---- 1M messages ----
sh "$BENCH/gen-session.sh" 1000000 varied | "$PEERS/fixture-load" /dev/stdin "$T/big.db" ||
	die "cannot make the capture"
ch -q "$TABLE" || die "the table does not take"
load "$T/big.db"
check_eq "mcptap.1's load command: exit 0" 0 $?
check_eq "every message is a row" "$(sql "$T/big.db" "select count(*) from message")" \
	"$(ch -q 'SELECT count() FROM mcptap_message')"
check_eq "the requests of each method, and their sizes' sum" \
	"$(sql "$T/big.db" "select dir || ' ' || method || ' ' || count(*) || ' ' || sum(size) from message where kind = 'request' group by dir, method order by dir, method")" \
	"$(ch -q "SELECT concat(dir, ' ', assumeNotNull(method), ' ', toString(count()), ' ', toString(sum(size))) FROM mcptap_message WHERE kind = 'request' GROUP BY dir, method ORDER BY dir, method")"

# What stats says, and the same from ClickHouse: per request direction and
# method, requests, answered, errors, max; p50, p95, p99 apart.
"$MCPTAP" stats -r "$T/big.db" -T json > "$T/stats.json" || die "stats failed"
node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
for (const m of s.methods) if (m.answered)
	console.log([m.dir, m.method, m.requests, m.answered, m.errors, m.max_ns, m.p50_ns, m.p95_ns, m.p99_ns].join(" "));
' "$T/stats.json" | sort > "$T/stats.txt"
ch -q "
SELECT r.dir, r.method, r.n, a.answered, a.errors, a.mx, a.p50, a.p95, a.p99
FROM (SELECT dir, assumeNotNull(method) AS method, count() AS n FROM mcptap_message
      WHERE kind = 'request' GROUP BY dir, method) AS r
ALL INNER JOIN
     (SELECT if(dir = 's2c', 'c2s', 's2c') AS dir, assumeNotNull(method) AS method,
             count() AS answered, countIf(kind = 'error') AS errors,
             max(assumeNotNull(latency_ns)) AS mx,
             arraySort(groupArray(assumeNotNull(latency_ns))) AS l,
             l[toUInt64(ceil(0.50 * answered))] AS p50,
             l[toUInt64(ceil(0.95 * answered))] AS p95,
             l[toUInt64(ceil(0.99 * answered))] AS p99
      FROM mcptap_message WHERE kind IN ('response', 'error') AND latency_ns IS NOT NULL
      GROUP BY dir, method) AS a
USING (dir, method)" --format TSV | tr '\t' ' ' | sort > "$T/ch.txt"
sed 's/^/# stats: /' "$T/stats.txt"
sed 's/^/# clickhouse: /' "$T/ch.txt"
check_eq "the same methods, requests, answers, errors and maxima" \
	"$(cut -d' ' -f1-6 "$T/stats.txt")" "$(cut -d' ' -f1-6 "$T/ch.txt")"
check "the requests never answered are there (5)" test "$(awk '{ n += $3 - $4 } END { print n }' "$T/ch.txt")" -eq 5
check "errors are there (one in 13)" test "$(awk '{ n += $5 } END { print n }' "$T/ch.txt")" -gt 30000
check_eq "p50, p95 and p99: stats within 1% of ClickHouse's exact nearest rank" "" \
	"$(paste -d' ' "$T/stats.txt" "$T/ch.txt" | awk '{
		for (i = 7; i <= 9; i++) { d = $i - $(i + 9); if (d < 0) d = -d
			if (d > $(i + 9) / 100) print $2, i, $i, $(i + 9) } }')"
check "and they spread (p50 < p95 < p99)" awk '$7 < $8 && $8 < $9 || $2 == "initialize" { next } { exit 1 }' "$T/ch.txt"

# ---- stderr lines, gaps and an HTTP session load too ----
cat > "$T/small.fx" << 'EOF'
@max-message 200
> {"jsonrpc":"2.0","id":1,"method":"ping"}
! a line on stderr
< {"jsonrpc":"2.0","id":1,"result":{}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"t":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}
EOF
"$PEERS/fixture-load" "$T/small.fx" "$T/small.db" || die "cannot load the small fixture"
cat > "$T/http.fx" << 'EOF'
@transport http
=> POST /mcp
> {"jsonrpc":"2.0","id":1,"method":"ping"}
<= 200 json
< {"jsonrpc":"2.0","id":1,"result":{}}
EOF
"$PEERS/fixture-load" "$T/http.fx" "$T/http.db" || die "cannot load the HTTP fixture"
ch -q "DROP TABLE mcptap_message" && ch -q "$TABLE" || die "the table does not take"
load "$T/small.db" && load "$T/http.db"
check_eq "both load: exit 0" 0 $?
check_eq "every line a row: the messages, the stderr line, the gap and the exchange (both files are session 1)" \
	"exchange 1
gap 1
request 2
response 2
stderr 1" \
	"$(ch -q "SELECT kind, count() FROM mcptap_message GROUP BY kind ORDER BY kind" --format TSV | tr '\t' ' ')"
check_eq "the exchange's row: its HTTP method, target and status" "POST /mcp 200" \
	"$(ch -q "SELECT method, target, status FROM mcptap_message WHERE kind = 'exchange'" --format TSV | tr '\t' ' ')"
finish
