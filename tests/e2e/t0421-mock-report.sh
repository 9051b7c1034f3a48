#!/bin/sh
# mcptap replay --as server: the run's verdict. --report FILE holds the summary
# when the client goes away (stdin EOF) and when a signal ends the mock, even in
# a blocking read or write; the run is stored in the capture (replay_run of
# mode server, a replay_result row per miss, unused recording and left-out
# server request); a capture that cannot be written is a warning. Bad input: a
# recording cut mid-request, requests never recorded, garbage.
. "$(dirname "$0")/lib.sh"
LOAD=$PEERS/fixture-load

# A recording that ends with a request the server never answered (it was cut).
cat > "$T/rep.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rec","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a"}]}}
> {"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///x"}}
< {"jsonrpc":"2.0","id":3,"result":{"contents":[{"uri":"file:///x","text":"x"}]}}
> {"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"p"}}
< {"jsonrpc":"2.0","id":4,"result":{"messages":[]}}
> {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"}}
FX
"$LOAD" "$T/rep.fx" "$T/rep.db"
printf '%s\n' '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"2"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}' \
	'{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///x"}}' \
	'{"jsonrpc":"2.0","id":9,"method":"no/such"}' \
	'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"slow"}}' \
	'garbage' > "$T/in"
"$MCPTAP" replay -r "$T/rep.db" --as server --report "$T/r.json" < "$T/in" > "$T/r.out" 2> "$T/r.err"
check_eq "misses without --strict: exit 0" 0 $?
cat > "$T/r.want" <<'EOF'
{
  "session": 1,
  "protocol": {
    "asked": "2025-06-18",
    "answered": "2025-06-18"
  },
  "client": {
    "name": "x",
    "version": "2"
  },
  "requests": 5,
  "answered": 2,
  "reused": 0,
  "missed": 3,
  "misses": [
    {
      "method": "tools/call",
      "name": "echo",
      "id": 7,
      "closest": {
        "seq": 4,
        "params": {
          "name": "echo",
          "arguments": {
            "text": "a"
          }
        }
      },
      "differs": [
        "params.arguments.text"
      ]
    },
    {
      "method": "no/such",
      "name": null,
      "id": 9,
      "closest": null,
      "differs": []
    },
    {
      "method": "tools/call",
      "name": "slow",
      "id": 10,
      "closest": {
        "seq": 10,
        "params": {
          "name": "slow"
        }
      },
      "differs": []
    }
  ],
  "unused_count": 2,
  "unused": [
    {
      "seq": 4,
      "method": "tools/call",
      "name": "echo"
    },
    {
      "seq": 8,
      "method": "prompts/get",
      "name": "p"
    }
  ],
  "skipped": [],
  "ordered_waits": 0,
  "ordered_timeouts": 0,
  "garbage": 1,
  "ended": "eof",
  "ok": false
}
EOF
check "the report after EOF, exactly" cmp "$T/r.json" "$T/r.want"
check "no temporary file is left" test ! -e "$T/r.json.tmp"
check "a request cut from the recording: a clear error under its id" \
	grep -q '^{"jsonrpc":"2.0","id":10,"error":{"code":-30900,"message":"mcptap replay: the recorded server never answered this request"}}$' "$T/r.out"
check_eq "every request and the garbage got an answer" 6 "$(wc -l < "$T/r.out" | tr -d ' ')"
check "stderr sums it up" grep -q "2 requests answered from the recording (0 again), 3 without a recording, 2 recorded requests never asked for" "$T/r.err"

# The run is stored: one replay_run of mode server, a row per miss and unused recording.
check_eq "one stored run: mode, passed = answered, differed = misses, missing = unused" \
	"server|2|3|2" "$(sql "$T/rep.db" "select mode, passed, differed, missing from replay_run")"
check "its command: the mock's own" test "$(sql "$T/rep.db" "select count(*) from replay_run where command = 'mcptap replay -r $T/rep.db --as server --report $T/r.json'")" = 1
check_eq "its summary is the report's" "$(tr -d ' \n' < "$T/r.json")" \
	"$(sql "$T/rep.db" "select summary from replay_run")"
check_eq "its rows: misses (closest seq or 0, the live line, the paths), then unused (recorded answer)" \
	'4|tools/call|echo|miss|{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}||["params.arguments.text"]
0|no/such||miss|{"jsonrpc":"2.0","id":9,"method":"no/such"}||[]
10|tools/call|slow|miss|{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"slow"}}||[]
4|tools/call|echo|unused||{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a"}]}}|
8|prompts/get|p|unused||{"jsonrpc":"2.0","id":4,"result":{"messages":[]}}|' \
	"$(sql "$T/rep.db" "select seq, method, name, status, sent, recorded, diff from replay_result order by rowid")"

# --strict: unused recordings alone make it fail; ok says so too.
head -n 1 "$T/in" | "$MCPTAP" replay -r "$T/rep.db" --as server --strict --no-store --report "$T/s.json" > /dev/null 2>&1
check_eq "--strict with unused recordings: exit 1" 1 $?
check "--strict: not ok" grep -q '"ok": false' "$T/s.json"
check "--strict: no miss" grep -q '"missed": 0,' "$T/s.json"
head -n 1 "$T/in" | "$MCPTAP" replay -r "$T/rep.db" --as server --no-store --report "$T/ns.json" > /dev/null 2>&1
check "without --strict, unused recordings are ok" grep -q '"ok": true' "$T/ns.json"
check_eq "--no-store: no run added" 1 "$(sql "$T/rep.db" "select count(*) from replay_run")"

# A signal while the mock waits for input: the report all the same, exit 0.
mkfifo "$T/fifo"
"$MCPTAP" replay -r "$T/rep.db" --as server --report "$T/t.json" < "$T/fifo" > "$T/t.out" 2> "$T/t.err" &
pid=$!
exec 3> "$T/fifo"
head -n 1 "$T/in" >&3
i=0
while [ $i -lt 600 ] && ! grep -q '"id":"i"' "$T/t.out"; do sleep 0.1; i=$((i + 1)); done
check "answered before the signal" grep -q '"id":"i"' "$T/t.out"
kill -TERM $pid
wait $pid
check_eq "SIGTERM in a blocking read: a normal exit" 0 $?
exec 3>&-
check "SIGTERM: the report says so" grep -q '^  "ended": "SIGTERM",$' "$T/t.json"
check "SIGTERM: and what came before" grep -q '^  "answered": 1,$' "$T/t.json"
check "SIGTERM: the run is stored" test "$(sql "$T/rep.db" "select json_extract(summary, '$.ended') from replay_run order by id desc limit 1")" = SIGTERM
check "SIGTERM: no temporary file is left" test ! -e "$T/t.json.tmp"

# SIGHUP likewise (SIGINT too, but a background job of sh starts with it ignored).
"$MCPTAP" replay -r "$T/rep.db" --as server --no-store --report "$T/h.json" < "$T/fifo" > "$T/h.out" 2>&1 &
pid=$!
exec 3> "$T/fifo"
head -n 1 "$T/in" >&3
i=0
while [ $i -lt 600 ] && ! grep -q '"id":"i"' "$T/h.out"; do sleep 0.1; i=$((i + 1)); done
kill -HUP $pid
wait $pid
check_eq "SIGHUP: a normal exit" 0 $?
exec 3>&-
check "SIGHUP: the report says so" grep -q '"ended": "SIGHUP",' "$T/h.json"

# A signal while the mock is blocked writing to a client that stopped reading.
i=0
: > "$T/pings"
while [ $i -lt 3000 ]; do
	echo '{"jsonrpc":"2.0","id":'$i',"method":"ping"}' >> "$T/pings"
	i=$((i + 1))
done
printf '> {"jsonrpc":"2.0","id":1,"method":"ping"}\n< {"jsonrpc":"2.0","id":1,"result":{}}\n' > "$T/ping.fx"
"$LOAD" "$T/ping.fx" "$T/ping.db"
mkfifo "$T/out"
sleep 600 < "$T/out" & # holds the read end open, never reads
holder=$!
"$MCPTAP" replay -r "$T/ping.db" --as server --report "$T/w.json" < "$T/pings" > "$T/out" 2> "$T/w.err" &
pid=$!
# Wait until it blocks in the write (where the kernel says so), or a while.
i=0
while [ $i -lt 100 ] && ! grep -q pipe_write "/proc/$pid/wchan" 2> /dev/null; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
wait $pid
check_eq "SIGTERM in a blocked write: a normal exit" 0 $?
kill $holder 2> /dev/null
check "SIGTERM in a blocked write: the report says so" grep -q '"ended": "SIGTERM",' "$T/w.json"
check "SIGTERM in a blocked write: some pings were answered, not all" \
	sh -c "n=\$(sed -n 's/^  \"reused\": \([0-9]*\),$/\1/p' '$T/w.json'); test \"\$n\" -gt 0 && test \"\$n\" -lt 2999"
check_eq "SIGTERM in a blocked write: stored" SIGTERM \
	"$(sql "$T/ping.db" "select json_extract(summary, '$.ended') from replay_run")"

# A capture that cannot be written when the run ends: a warning, the run goes on.
"$LOAD" "$T/rep.fx" "$T/gone.db"
"$MCPTAP" replay -r "$T/gone.db" --as server --report "$T/g.json" < "$T/fifo" > "$T/g.out" 2> "$T/g.err" &
pid=$!
exec 3> "$T/fifo"
head -n 1 "$T/in" >&3
i=0
while [ $i -lt 600 ] && ! grep -q '"id":"i"' "$T/g.out"; do sleep 0.1; i=$((i + 1)); done
rm -f "$T/gone.db" "$T/gone.db-wal" "$T/gone.db-shm"
sed -n 4p "$T/in" >&3
exec 3>&-
wait $pid
check_eq "a capture removed meanwhile: exit 0" 0 $?
check "the answers came" grep -q '"id":8,"result"' "$T/g.out"
check_eq "one warning" 1 "$(grep -c "warning: replay: the run is not stored in '$T/gone.db'" "$T/g.err")"
check "the capture is not made again" test ! -e "$T/gone.db"
check "the report is written all the same" grep -q '"answered": 2,' "$T/g.json"
"$LOAD" "$T/rep.fx" "$T/junk.db"
"$MCPTAP" replay -r "$T/junk.db" --as server < "$T/fifo" > "$T/j.out" 2> "$T/j.err" &
pid=$!
exec 3> "$T/fifo"
head -n 1 "$T/in" >&3
i=0
while [ $i -lt 600 ] && ! grep -q '"id":"i"' "$T/j.out"; do sleep 0.1; i=$((i + 1)); done
echo "not a capture" > "$T/junk.db"
rm -f "$T/junk.db-wal" "$T/junk.db-shm"
exec 3>&-
wait $pid
check_eq "a capture replaced by another file: exit 0" 0 $?
check "a warning" grep -q "warning: replay: the run is not stored in '$T/junk.db'" "$T/j.err"
check_eq "that file is left as it was" "not a capture" "$(cat "$T/junk.db")"

# A recording cut mid-line (the server died in the middle of an answer, the
# capture ended in the middle of a client request): the cut bytes are played as
# recorded, on a line of their own, and the request gets a clear error.
cat > "$T/cut.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"jsonrpc":"2.0","id":1,"result":{}}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"te
> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"na
FX
"$LOAD" "$T/cut.fx" "$T/cut.db"
printf '%s\n' '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}' \
	'{"jsonrpc":"2.0","id":9,"method":"ping"}' |
	"$MCPTAP" replay -r "$T/cut.db" --as server --no-store --report "$T/cut.json" > "$T/cut.out" 2> /dev/null
check_eq "a recording cut mid-line: exit 0" 0 $?
check_eq "a recording cut mid-line: the cut bytes, the error, and the next answer intact" \
	'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"te
{"jsonrpc":"2.0","id":7,"error":{"code":-30900,"message":"mcptap replay: the recorded server never answered this request"}}
{"jsonrpc":"2.0","id":9,"result":{}}' "$(cat "$T/cut.out")"
check "a recording cut mid-line: one miss" grep -q '^  "missed": 1,$' "$T/cut.json"

# A report that cannot be written: a warning, the run goes on.
head -n 1 "$T/in" | "$MCPTAP" replay -r "$T/rep.db" --as server --no-store --report "$T/no/such/dir/r.json" > "$T/nr.out" 2> "$T/nr.err"
check_eq "an unwritable report path: exit 0" 0 $?
check "an unwritable report path: a warning" grep -q "warning: replay: cannot write the report '$T/no/such/dir/r.json'" "$T/nr.err"

finish
