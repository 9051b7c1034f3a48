#!/bin/sh
# tests/stress.sh - many taps flooding one capture file at once, with random
# SIGKILLs of taps, readers beside them and a foreign lock holder; then every
# session is checked against what its client received.
#
#   tests/stress.sh [-n TAPS] [-m MESSAGES] [-s SIZES] [-k KILLS] [-K KILL_MS] [-r READERS]
#                   [-l LOCK_MS] [-d DIR] [-- RECORD_OPTIONS...]
#
# TAPS taps (default 8) start together on a new file, each wrapping a server
# that writes MESSAGES JSON-RPC lines (default 5000) of one of SIZES bytes
# (a comma list, default 200,2048, dealt round robin) and exits. KILLS of the
# taps (default 2) get a SIGKILL at a random moment in their first KILL_MS
# (default 1500; a tap that ended before is checked as any other). READERS
# loops (default 2) run `mcptap sessions` and `stats` and count rows while it
# goes on. With LOCK_MS > 0 (default 0), another program holds the file's
# write lock for LOCK_MS at a time, again and again.
#
# Checks, for every tap that was not killed: its session stores exactly the
# lines and bytes its client received, in order, with dense seqs, it ended
# with the server's exit status, and the file has no gap at all. For a killed
# tap: what its client received and the file lacks is within the bound the
# man page states (--queue: 1 MiB and 4096 lines, or one 64 KiB read, for a
# tap alone with the file whose server floods once its session is made; --hold, 16 MiB,
# while the file was locked by another tap or program), and its session
# shows as aborted (or there is none: killed before it was made).
#
# Prints "ok - ..." / "not ok - ..." lines and a summary; exits 0 when all
# checks passed. MCPTAP names the binary (default: ./mcptap at the top).
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
MCPTAP=${MCPTAP:-$TOP/mcptap}
taps=8 msgs=5000 sizes=200,2048 kills=2 kill_ms=1500 readers=2 lock_ms=0 dir=""
while getopts n:m:s:k:K:r:l:d: o; do
	case $o in
	n) taps=$OPTARG ;;
	m) msgs=$OPTARG ;;
	s) sizes=$OPTARG ;;
	k) kills=$OPTARG ;;
	K) kill_ms=$OPTARG ;;
	r) readers=$OPTARG ;;
	l) lock_ms=$OPTARG ;;
	d) dir=$OPTARG ;;
	*) echo "usage: $0 [-n TAPS] [-m MESSAGES] [-s SIZES] [-k KILLS] [-K KILL_MS] [-r READERS] [-l LOCK_MS] [-d DIR] [-- RECORD_OPTIONS...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "$kills" -le "$taps" ] || { echo "stress: more kills than taps" >&2; exit 2; }
keep=0
if [ -z "$dir" ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mcptap-stress.XXXXXX")
else
	mkdir -p "$dir" && keep=1
fi
db=$dir/s.db
rm -f "$db" "$db-wal" "$db-shm"
fails=0 checks=0
ok() { checks=$((checks + 1)); echo "ok - $*"; }
notok() { checks=$((checks + 1)); fails=$((fails + 1)); echo "not ok - $*"; }
rand() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }
sql() { sqlite3 -batch -noheader -cmd ".timeout 60000" "$db" "$1"; }

# The server: MESSAGES lines of SIZE bytes (newline included), tagged with the
# tap's number, then exit 0. With a GO path, it waits for that file first.
flood='my ($tap, $m, $size, $go) = @ARGV;
select(undef, undef, undef, 0.01) while (defined $go && !-e $go);
my $head = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"tap\":$tap,\"i\":";
for my $i (1 .. $m) {
	my $l = $head . $i . ",\"pad\":\"";
	my $pad = $size - length($l) - 4;
	print $l, "x" x ($pad > 0 ? $pad : 0), "\"}}\n";
}'

echo "# stress: $taps taps x $msgs messages of $sizes bytes into $db; $kills killed, $readers readers, foreign lock ${lock_ms} ms"

# A tap alone with the file is killed mid-flood once its session is made and
# the flood began after that: the --queue bound is for a tap storing into its
# session. Before the session is made, and while the file is locked, the relay
# goes on and --hold bounds what is held (and then drained).
alone=0
[ "$taps" -eq 1 ] && [ "$lock_ms" -eq 0 ] && alone=1

# The taps, started together on a file that does not exist yet.
i=1
while [ "$i" -le "$taps" ]; do
	n=$(( (i - 1) % $(echo "$sizes" | tr ',' '\n' | wc -l) + 1 ))
	size=$(echo "$sizes" | cut -d, -f"$n")
	(
		"$MCPTAP" record -w "$db" "$@" -- perl -e "$flood" "$i" "$msgs" "$size" \
			$([ "$alone" = 1 ] && echo "$dir/go") < /dev/null \
			2> "$dir/err.$i" &
		echo $! > "$dir/pid.$i"
		wait $! 2> /dev/null
		echo $? > "$dir/rc.$i"
	) | wc -lc > "$dir/got.$i" &
	i=$((i + 1))
done
i=1
while [ "$i" -le "$taps" ]; do
	while [ ! -s "$dir/pid.$i" ]; do sleep 0.01; done
	i=$((i + 1))
done

# The killer: KILLS taps, each at a random moment within its first KILL_MS
# (alone: of its flood).
i=1
while [ "$i" -le "$kills" ]; do
	ms=$(( $(rand) % kill_ms + 20 ))
	(
		if [ "$alone" = 1 ]; then
			# (sqlite3 must not make the file first: -s waits for the tap's)
			while ! [ -s "$db" ] || [ "$(sql "select count(*) from session" 2> /dev/null)" != 1 ]; do
				sleep 0.01
			done
			touch "$dir/go"
		fi
		sleep "$(awk "BEGIN { printf \"%.3f\", $ms / 1000 }")"
		kill -9 "$(cat "$dir/pid.$i")" 2> /dev/null
	) &
	i=$((i + 1))
done

# Readers and the lock holder run until the taps are done.
: > "$dir/running"
r=1
while [ "$r" -le "$readers" ]; do
	(
		n=0
		while [ -e "$dir/running" ]; do
			"$MCPTAP" sessions -r "$db" > /dev/null 2>> "$dir/reader.err" ||
				echo "sessions failed" >> "$dir/reader.err"
			"$MCPTAP" stats -r "$db" > /dev/null 2>> "$dir/reader.err" ||
				echo "stats failed" >> "$dir/reader.err"
			sql "select count(*) from message" > /dev/null 2>> "$dir/reader.err"
			n=$((n + 1))
		done
		echo "$n" > "$dir/reads.$r"
	) &
	r=$((r + 1))
done
if [ "$lock_ms" -gt 0 ]; then
	(
		n=0
		secs=$(awk "BEGIN { printf \"%.3f\", $lock_ms / 1000 }")
		while [ -e "$dir/running" ]; do
			printf 'BEGIN IMMEDIATE;\n.shell sleep %s\nCOMMIT;\n' "$secs" |
				sqlite3 -batch -cmd ".timeout 60000" "$db" > /dev/null 2>> "$dir/lock.err" && n=$((n + 1))
			sleep 0.05
		done
		echo "$n" > "$dir/locks"
	) &
fi

# Wait for every tap's client to have seen its end.
i=1
while [ "$i" -le "$taps" ]; do
	while [ ! -s "$dir/got.$i" ] || [ ! -s "$dir/rc.$i" ]; do sleep 0.05; done
	i=$((i + 1))
done
rm -f "$dir/running"
wait

# A tap alone with the file is bounded by --queue; taps sharing it, or a
# foreign lock, by --hold (see mcptap.1, record).
# (--hold as given to the taps after --, else its default.)
hold=16M prev=""
for a in "$@"; do
	case $a in --hold=*) hold=${a#--hold=} ;; esac
	[ "$prev" = --hold ] && hold=$a
	prev=$a
done
hold_bytes=$(echo "$hold" | awk '{ n = $0 + 0; u = toupper(substr($0, length($0)));
	if (u == "K") n *= 1024; else if (u == "M") n *= 1048576; else if (u == "G") n *= 1073741824;
	printf "%d", n }')
if [ "$alone" = 1 ]; then
	bound_bytes=$((1024 * 1024 + 65536)) bound_lines=4097
	bound_what="--queue (1M and 4096 lines, or one 64 KiB read)"
else
	bound_bytes=$((hold_bytes + 65536)) bound_lines=$((hold_bytes)) bound_what="--hold ($hold, or one 64 KiB read more)"
fi

# Every tap has its session; only a tap killed in its first moments, before
# its writer made the session, may have none (and then loses within the bound).
nsess=$(sql "select count(*) from session")
nokill=0
i=1
while [ "$i" -le "$taps" ]; do
	if [ "$i" -le "$kills" ] && [ "$(cat "$dir/rc.$i")" = 137 ] &&
		[ -z "$(sql "select id from session where command like '% $i $msgs %'")" ]; then
		nokill=$((nokill + 1))
	fi
	i=$((i + 1))
done
[ "$nsess" = $((taps - nokill)) ] && ok "$taps taps started at once on a new file: $nsess sessions ($nokill killed before theirs was made)" ||
	notok "$taps taps started at once on a new file: $nsess sessions, $nokill killed before theirs was made"
gaps=$(sql "select count(*) from gap")
[ "$gaps" = 0 ] && ok "no gap in the file" || notok "the file has $gaps gap rows: $(sql "select reason from gap limit 3")"
if [ -s "$dir/reader.err" ]; then
	notok "readers beside the taps: $(sort "$dir/reader.err" | uniq -c | head -5 | tr '\n' ' ')"
else
	ok "readers beside the taps read without an error ($(cat "$dir"/reads.* 2> /dev/null | awk "{ s += \$1 } END { print s + 0 }") reads)"
fi
[ "$lock_ms" -gt 0 ] && echo "# the foreign lock was held $(cat "$dir/locks" 2> /dev/null || echo 0) times"

"$MCPTAP" sessions -r "$db" -T json > "$dir/sessions.json"
i=1
while [ "$i" -le "$taps" ]; do
	set -- $(cat "$dir/got.$i")
	got_lines=$1 got_bytes=$2
	rc=$(cat "$dir/rc.$i")
	s=$(sql "select id from session where command like '% $i $msgs %'")
	set -- $(sql "select count(*), coalesce(sum(length(raw)), 0), coalesce(max(seq) - min(seq) + 1, 0)
		from message where session = ${s:-0} and dir = 's2c'" | tr '|' ' ')
	st_lines=$1 st_bytes=$2 span=$3
	# In order: the k-th stored line is the server's line k.
	in_order=$(sql "select count(*) from (select raw, row_number() over (order by seq) as k
		from message where session = ${s:-0} and dir = 's2c')
		where instr(raw, '\"tap\":$i,\"i\":' || k || ',') > 0")
	state=$(grep "^{\"id\":${s:-0}," "$dir/sessions.json" | sed 's/.*"state":"\([a-z]*\)".*/\1/')
	if [ "$i" -le "$kills" ] && [ "$rc" = 137 ]; then
		lost=$((got_bytes - st_bytes)) lost_lines=$((got_lines - st_lines))
		if [ "$st_bytes" -le "$got_bytes" ] && [ "$lost" -le "$bound_bytes" ] &&
			[ "$lost_lines" -le "$bound_lines" ] && [ "$in_order" = "$st_lines" ]; then
			ok "tap $i (killed): $st_lines of $got_lines lines stored in order, $lost_lines lines ($lost bytes) lost, within $bound_what"
		else
			notok "tap $i (killed): client got $got_lines lines/$got_bytes bytes, stored $st_lines/$st_bytes ($in_order in order): beyond $bound_what"
		fi
		# (killed after it stored the session's end: ended, and nothing lost;
		# killed before its session was made: none)
		if [ "$state" = aborted ] || { [ "$state" = ended ] && [ "$lost" = 0 ]; } ||
			{ [ -z "$s" ] && [ "$st_lines" = 0 ]; }; then
			[ -z "$s" ] && state="none (killed before its session was made)"
			ok "tap $i (killed): its session shows $state"
		else
			notok "tap $i (killed): its session shows '$state'"
		fi
	else
		[ "$i" -le "$kills" ] && echo "# tap $i ended before its kill (status $rc)"
		if [ "$got_lines" = "$msgs" ] && [ "$st_lines" = "$got_lines" ] && [ "$st_bytes" = "$got_bytes" ] &&
			[ "$span" = "$st_lines" ] && [ "$in_order" = "$st_lines" ]; then
			ok "tap $i: all $msgs lines ($got_bytes bytes) relayed and stored, in order, seqs dense"
		else
			notok "tap $i: client got $got_lines lines/$got_bytes bytes; stored $st_lines/$st_bytes, seq span $span, $in_order in order"
		fi
		[ "$rc" = 0 ] && [ "$state" = ended ] && ok "tap $i: exit 0, session ended" ||
			notok "tap $i: exit $rc, session '$state'"
		if grep -v "locked by another connection" "$dir/err.$i" | grep -q .; then
			notok "tap $i said: $(head -3 "$dir/err.$i")"
		fi
	fi
	i=$((i + 1))
done

echo "# stress: $fails of $checks checks failed"
if [ "$fails" -eq 0 ] && [ "$keep" = 0 ]; then
	rm -rf "$dir"
elif [ "$fails" -ne 0 ]; then
	echo "# scratch kept in $dir"
fi
[ "$fails" -eq 0 ]
