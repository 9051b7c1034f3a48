#!/bin/sh
# The relay delivers a server's last bytes however slowly the client reads them:
# the server exits while its output still sits in the tap, and the client does
# not read for longer than --drain-ms. Quiet is measured on the server's
# output, never on a write blocked on a slow reader. Checked on stdout (bytes
# and sha256, and the store) and on stderr; a client that goes away still ends
# the tap.
. "$(dirname "$0")/lib.sh"

# The issue's reproduction: 100,001 bytes, the client reads 3 s after the end.
"$MCPTAP" record -w "$T/a.db" -- sh -c 'head -c 100000 /dev/zero | tr "\0" x; echo' < /dev/null |
	(sleep 3; wc -c | tr -d ' ') > "$T/a.n"
check_eq "a client that reads 3 s after the server exited gets every byte" 100001 "$(cat "$T/a.n")"
check_eq "and the store holds them" 100001 "$(sql "$T/a.db" "select sum(length(raw)) from message where dir = 's2c'")"

# 3 MB of random bytes; the client pauses 1 s (ten times --drain-ms) near the
# end, when the server has written everything and exited.
head -c 3000000 /dev/urandom > "$T/r.bin"
"$MCPTAP" record --drain-ms 100 -w "$T/b.db" -- cat "$T/r.bin" < /dev/null |
	perl -e 'binmode STDIN; binmode STDOUT; my ($b, $t) = ("", 0);
		while ($t < 2900000 && (my $n = sysread(STDIN, $b, 4096))) { print $b; $t += $n }
		select(undef, undef, undef, 1.0);
		while (sysread(STDIN, $b, 65536)) { print $b }' > "$T/b.out"
check_eq "a reader pausing 10 times --drain-ms mid-stream gets every byte, in order" \
	"$(sha256sum < "$T/r.bin")" "$(sha256sum < "$T/b.out")"
check_eq "and the store holds them" 3000000 "$(sql "$T/b.db" "select sum(length(raw)) from message where dir = 's2c'")"

# stderr: the tap's own stderr read 2 s late.
"$MCPTAP" record --drain-ms 100 -w "$T/c.db" -- sh -c 'head -c 150000 /dev/zero | tr "\0" e >&2' \
	< /dev/null 2>&1 > /dev/null | (sleep 2; wc -c | tr -d ' ') > "$T/c.n"
check_eq "stderr read 2 s after the server exited: every byte" 150000 "$(cat "$T/c.n")"

# A client that goes away ends the tap: nothing is left to deliver to it.
# (Its stdout closed, the tap ends the server's output, the server dies of
# SIGPIPE, and the tap exits as its child did: 128 + 13.)
{ timeout 20 "$MCPTAP" record --drain-ms 100 -w "$T/d.db" -- sh -c 'head -c 5000000 /dev/zero' < /dev/null
  echo $? > "$T/d.rc"; } | head -c 10 > /dev/null
check_eq "a client that stops reading and exits: the tap ends as its server did (SIGPIPE), not by timeout" 141 "$(cat "$T/d.rc")"

finish
