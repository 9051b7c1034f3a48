#!/bin/sh
# Logging can fail; the session must not. An unwritable capture path, a file
# size limit, a full disk: the relay goes on byte for byte, one warning goes
# to stderr, and the gap is recorded when the store allows. A SIGKILL of the
# tap leaves a file that opens and holds every batch committed before it.
. "$(dirname "$0")/lib.sh"

# 20000 requests, about 1.3 MB.
seq 1 20000 | sed 's/.*/{"jsonrpc":"2.0","id":&,"method":"tools\/call","params":{"name":"echo","arguments":{"text":"x"}}}/' > "$T/in"
want=$(sha256sum < "$T/in")

warnings() { grep -c "^mcptap: warning: cannot log to" "$1"; }

# 1. Capture paths that cannot be written.
for path in /nonexistent-dir/x.db /sys/mcptap-test.db "$T"; do
	"$MCPTAP" record -w "$path" -- cat < "$T/in" > "$T/out" 2> "$T/err"
	check_eq "unwritable '$path': exit status" 0 $?
	check_eq "unwritable '$path': relay intact" "$want" "$(sha256sum < "$T/out")"
	check_eq "unwritable '$path': one warning" 1 "$(warnings "$T/err")"
	check_eq "unwritable '$path': nothing else on stderr" 1 "$(wc -l < "$T/err" | tr -d ' ')"
done

# 2. A file size limit (RLIMIT_FSIZE): the store fails mid-session.
# (The tap's stdout is a pipe: the limit is for files, and must hit the store only.)
{ sh -c 'ulimit -f 1024; exec "$@"' sh "$MCPTAP" record -w "$T/fsize.db" -- cat < "$T/in" 2> "$T/err"
  echo $? > "$T/rc"; } | cat > "$T/out"
check_eq "fsize: exit status" 0 "$(cat "$T/rc")"
check_eq "fsize: relay intact" "$want" "$(sha256sum < "$T/out")"
check_eq "fsize: one warning that logging stopped" 1 "$(warnings "$T/err")"
check "fsize: the file is a sound database" sh -c "[ \"\$(sqlite3 '$T/fsize.db' 'pragma integrity_check')\" = ok ]"
"$MCPTAP" sessions -r "$T/fsize.db" > /dev/null
check_eq "fsize: mcptap still reads it" 0 $?
stored=$(sql "$T/fsize.db" "select count(*) from message")
check "fsize: some messages were stored before the limit ($stored)" test "$stored" -gt 0
check "fsize: not all of them ($stored)" test "$stored" -lt 40000
gap=$(sql "$T/fsize.db" "select messages from gap")
check "fsize: the gap is recorded ($gap)" test -n "$gap"
check_eq "fsize: stored + gap = everything relayed" 40000 "$((stored + ${gap:-0}))"

# 3. A full disk: a 512 KiB tmpfs, mounted in a private mount namespace.
mnt="$T/mnt"
mkdir "$mnt"
cat > "$T/full.sh" <<SH
mount -t tmpfs -o size=512k tmpfs "$mnt" || exit 99
"$MCPTAP" record -w "$mnt/full.db" -- cat < "$T/in" > "$T/out" 2> "$T/err"
echo \$? > "$T/rc"
sqlite3 "$mnt/full.db" 'pragma integrity_check' > "$T/integrity" 2>&1
sqlite3 "$mnt/full.db" 'select count(*) from message' > "$T/count" 2>&1
"$MCPTAP" sessions -r "$mnt/full.db" > "$T/sessions" 2>&1
SH
if unshare -rm sh "$T/full.sh" 2> "$T/unshare.err" || { [ "$(id -u)" = 0 ] && unshare -m sh "$T/full.sh"; }; then
	check_eq "full disk: exit status" 0 "$(cat "$T/rc")"
	check_eq "full disk: relay intact" "$want" "$(sha256sum < "$T/out")"
	check_eq "full disk: one warning" 1 "$(warnings "$T/err")"
	check_eq "full disk: the file is not corrupt" ok "$(cat "$T/integrity")"
	check "full disk: some messages stored ($(cat "$T/count"))" test "$(cat "$T/count")" -gt 0
	check "full disk: mcptap still reads it" grep -q "^   1 " "$T/sessions"
else
	die "cannot mount a tmpfs for the full-disk test: $(cat "$T/unshare.err")"
fi

# 4. SIGKILL mid-session: everything committed before the kill is there.
mkfifo "$T/fifo"
"$MCPTAP" record -w "$T/kill.db" -- cat < "$T/fifo" > /dev/null 2>&1 &
tap=$!
exec 8> "$T/fifo"
head -n 5000 "$T/in" >&8
# Until all of it is committed (a batch is 5 ms; a slow machine or a sanitizer
# build may take longer), bounded: then the kill.
n=0
while [ "$(sql "$T/kill.db" "select count(*) from message" 2> /dev/null)" != 10000 ] && [ $n -lt 200 ]; do
	sleep 0.05
	n=$((n + 1))
done
kill -KILL $tap
wait $tap 2>/dev/null
exec 8>&-
check_eq "sigkill: the file is sound" ok "$(sqlite3 "$T/kill.db" 'pragma integrity_check')"
check_eq "sigkill: every committed message is there" 10000 "$(sql "$T/kill.db" "select count(*) from message")"
check_eq "sigkill: the session has no end" "" "$(sql "$T/kill.db" "select ended_wall from session")"
"$MCPTAP" show -r "$T/kill.db" > /dev/null
check_eq "sigkill: show reads it" 0 $?

# 5. A line larger than --max-message: relayed, recorded as a gap, the rest stored.
{ echo '{"jsonrpc":"2.0","method":"a"}'; head -c 100000 /dev/zero | tr '\0' x; echo; echo '{"jsonrpc":"2.0","method":"b"}'; } > "$T/big"
"$MCPTAP" record -w "$T/big.db" --max-message 64k -- cat < "$T/big" > "$T/out" 2> "$T/err"
check_eq "max-message: relay intact" "$(sha256sum < "$T/big")" "$(sha256sum < "$T/out")"
check_eq "max-message: both small messages stored" "a b" \
	"$(sql "$T/big.db" "select method from message where dir='c2s' order by seq" | tr '\n' ' ' | sed 's/ $//')"
check_eq "max-message: a gap of one message per direction" "2|200002" \
	"$(sql "$T/big.db" "select sum(messages), sum(bytes) from gap")"
check_eq "max-message: no warning (a gap is not a failure)" 0 "$(warnings "$T/err")"
# show places the gaps: by their seq as text, and as JSON without a clock they do not have.
# (The c2s gap comes right after "a" c2s; the echo of "a" may be read before it.)
gseq=$(sql "$T/big.db" "select seq from gap where dir = 'c2s'")
check_eq "max-message: the c2s gap's seq is between a and b" 1 \
	"$(sql "$T/big.db" "select (select seq from message where dir = 'c2s' and method = 'a') < $gseq and $gseq < (select seq from message where dir = 'c2s' and method = 'b')")"
check "max-message: show's text gives the gap its seq" \
	sh -c '"$1" show -r "$2" | grep -Eq "^ +$3 +✗ gap +1 messages, 100001 bytes not stored"' sh "$MCPTAP" "$T/big.db" "$gseq"
check_eq "max-message: show's JSON gap" "$gseq|c2s|1|100001|none" \
	"$("$MCPTAP" show -r "$T/big.db" -T json | node -e '
		const g = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse)
			.find(o => o.kind === "gap");
		console.log([g.seq, g.dir, g.messages, g.bytes, g.t_ns === undefined ? "none" : g.t_ns].join("|"));')"

finish
