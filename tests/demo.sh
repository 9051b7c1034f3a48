#!/bin/sh
# tests/demo.sh - `make demo`: record a bundled example session, show it,
# analyze it and its statistics, record and analyze a misbehaving server, and
# replay the first session both ways.
# The example: the C test client (tests/peers/mcp-client) runs a whole MCP flow
# (initialize, tools, progress, a sampling request back to the client,
# resources, prompts, logging) against the C test server, with mcptap recording
# in between, exactly as a client's configuration would put it.
set -eu
cd "$(dirname "$0")/.."
mkdir -p demo
db=demo/demo.db
rm -f "$db" "$db-wal" "$db-shm"

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
else
	say() { printf '\n$ %s\n' "$*"; }
fi

say "tests/peers/mcp-client -- ./mcptap record -w $db -- tests/peers/mcp-server --stderr-lines 1"
tests/peers/mcp-client -- ./mcptap record -w "$db" -- tests/peers/mcp-server --stderr-lines 1

say "./mcptap sessions -r $db"
./mcptap sessions -r "$db"

say "./mcptap show -r $db"
./mcptap show -r "$db"

say "./mcptap analyze -r $db"
./mcptap analyze -r "$db"

say "./mcptap stats -r $db"
./mcptap stats -r "$db"

# A second session from a server that breaks a rule the seeds warn about: it
# prints a banner on stdout, the protocol channel, before the handshake.
say "tests/peers/mcp-client --flow basic -- ./mcptap record -w $db -- tests/peers/mcp-server --noise"
tests/peers/mcp-client --flow basic -- ./mcptap record -w "$db" -- tests/peers/mcp-server --noise || true

say "./mcptap analyze -r $db --all --fail-on never"
./mcptap analyze -r "$db" --all --fail-on never

# Replay: the same client against a mock of the recorded server, then the
# recorded client against the real server (a regression test).
say "tests/peers/mcp-client -- ./mcptap replay -r $db -s 1 --as server"
tests/peers/mcp-client -- ./mcptap replay -r "$db" -s 1 --as server

say "./mcptap replay -r $db -s 1 --as client -- tests/peers/mcp-server"
./mcptap replay -r "$db" -s 1 --as client -- tests/peers/mcp-server

say "sqlite3 $db 'select method, count(*), round(avg(latency_ns) / 1e3, 1) as avg_us from exchange group by method'"
if command -v sqlite3 > /dev/null; then
	sqlite3 -header -column "$db" \
		"select method, count(*) as n, round(avg(latency_ns) / 1e3, 1) as avg_us from exchange group by method"
else
	echo "(the sqlite3 shell is not installed: apt-get install sqlite3)"
fi
printf '\nThe capture is in %s; try: ./mcptap show -r %s -T json\n' "$db" "$db"
