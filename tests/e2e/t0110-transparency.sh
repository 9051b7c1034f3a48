#!/bin/sh
# Transparency proof: random bytes both ways through `mcptap record` come out
# exactly as they went in (sha256 compared), and everything is also stored,
# non-JSON lines as non-JSON. Data: binary with NULs and invalid UTF-8 and no
# final newline, a 64 MiB single line, 100k tiny lines.
. "$(dirname "$0")/lib.sh"

gen() { # gen NAME: writes $T/NAME.c2s and $T/NAME.s2c
	case $1 in
	binary)
		head -c 3000000 /dev/urandom > "$T/binary.c2s"
		head -c 2000000 /dev/urandom > "$T/binary.s2c"
		printf 'tail without newline \377\376\000' >> "$T/binary.c2s" ;;
	huge)
		# One line of 64 MiB (newline included) each way.
		head -c 67108863 /dev/zero | tr '\0' 'a' > "$T/huge.c2s"
		printf '\n' >> "$T/huge.c2s"
		head -c 33554432 /dev/urandom | od -An -v -tx1 | tr -d ' \n' | head -c 67108863 > "$T/huge.s2c"
		printf '\n' >> "$T/huge.s2c" ;;
	tiny)
		seq 1 100000 | sed 's/^/{"jsonrpc":"2.0","method":"n","params":{"i":/; s/$/}}/' > "$T/tiny.c2s"
		seq 1 100000 | sed 's/^/x/' > "$T/tiny.s2c" ;;
	esac
}

for name in binary huge tiny; do
	gen $name
	# The child copies its stdin to a file and writes its own data to stdout at
	# the same time: both directions carry independent data (fd 3: a background
	# job's stdin would otherwise be /dev/null).
	"$MCPTAP" record -w "$T/$name.db" -- sh -c 'exec 3<&0; cat <&3 > "$1" & cat "$2"; wait' sh \
		"$T/$name.got-c2s" "$T/$name.s2c" < "$T/$name.c2s" > "$T/$name.got-s2c" 2> "$T/$name.err"
	check_eq "$name: exit status" 0 $?
	check_eq "$name: c2s bytes unchanged" "$(sha256sum < "$T/$name.c2s")" "$(sha256sum < "$T/$name.got-c2s")"
	check_eq "$name: s2c bytes unchanged" "$(sha256sum < "$T/$name.s2c")" "$(sha256sum < "$T/$name.got-s2c")"
	check_eq "$name: nothing on stderr" "" "$(cat "$T/$name.err")"
	check_eq "$name: c2s stored bytes" "$(wc -c < "$T/$name.c2s" | tr -d ' ')" \
		"$(sql "$T/$name.db" "select coalesce(sum(length(raw)),0) from message where dir='c2s'")"
	check_eq "$name: s2c stored bytes" "$(wc -c < "$T/$name.s2c" | tr -d ' ')" \
		"$(sql "$T/$name.db" "select coalesce(sum(length(raw)),0) from message where dir='s2c'")"
	check_eq "$name: stored c2s stream is byte-identical" "$(sha256sum < "$T/$name.c2s")" \
		"$(sql "$T/$name.db" "select writefile('$T/$name.st-c2s', coalesce((select group_concat(raw, '') from (select raw from message where dir='c2s' order by seq)), ''))" >/dev/null; sha256sum < "$T/$name.st-c2s")"
	check_eq "$name: no gap" 0 "$(sql "$T/$name.db" "select count(*) from gap")"
done

check_eq "binary: the unterminated last c2s line is stored as incomplete" 1 \
	"$(sql "$T/binary.db" "select incomplete from message where dir='c2s' order by seq desc limit 1")"
check_eq "binary: non-JSON is stored as invalid" 0 \
	"$(sql "$T/binary.db" "select count(*) from message where kind not in ('invalid','notjsonrpc')")"
check_eq "huge: one c2s row of 64 MiB" "1 67108864" \
	"$(sql "$T/huge.db" "select count(*), max(size) from message where dir='c2s'" | tr '|' ' ')"
check_eq "huge: kind is invalid" invalid "$(sql "$T/huge.db" "select kind from message where dir='c2s'")"
check_eq "tiny: 100000 notifications c2s" 100000 \
	"$(sql "$T/tiny.db" "select count(*) from message where dir='c2s' and kind='notification' and method='n'")"
check_eq "tiny: 100000 invalid lines s2c" 100000 \
	"$(sql "$T/tiny.db" "select count(*) from message where dir='s2c' and kind='invalid'")"
check_eq "tiny: seq is dense" "$(sql "$T/tiny.db" "select count(*) from message")" \
	"$(sql "$T/tiny.db" "select max(seq) - min(seq) + 1 from message")"

finish
