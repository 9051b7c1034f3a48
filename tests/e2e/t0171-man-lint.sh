#!/bin/sh
# The man pages render without a warning: groff with every warning on, and
# mandoc's lint (tests/setup.sh installs mandoc). Each must print nothing.
. "$(dirname "$0")/lib.sh"
command -v mandoc > /dev/null || die "mandoc is not installed (tests/setup.sh test)"

for page in mcptap.1 mcptap-rules.7; do
	groff -ww -z -man "$TOP/$page" > "$T/groff" 2>&1
	check_eq "$page: groff -ww -z exits 0" 0 $?
	check_eq "$page: groff -ww -z warns of nothing" "" "$(cat "$T/groff")"
	mandoc -T lint "$TOP/$page" > "$T/mandoc" 2>&1
	check_eq "$page: mandoc -T lint exits 0" 0 $?
	check_eq "$page: mandoc -T lint finds nothing" "" "$(cat "$T/mandoc")"
done

# The test itself: mandoc does see a fault.
printf '.TH T 1\n.SH NAME\nt \\- t\n.PP\n.SH DESCRIPTION\nx\n' > "$T/bad.1"
mandoc -T lint "$T/bad.1" > "$T/mandoc" 2>&1
check "mandoc -T lint reports a page with faults" test -s "$T/mandoc"

finish
