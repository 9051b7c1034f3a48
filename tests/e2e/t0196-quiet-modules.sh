#!/bin/sh
# Only the command layer prints: the cmd-*.c files, cli.c and mcptap.c. Every
# other object of libmcptap.a hands what it has to say up, as a struct mt_err
# result or through a struct mt_voice (schema/util.h), and names none of the
# functions or streams that print. Read from the symbols each object of the
# built archive leaves undefined (nm -u), so a call hidden in a macro counts;
# schema/util.o, which defines the printing helpers, is the one exception.
# A synthetic object that prints checks that the check sees it.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

AR=$TOP/build/rel/libmcptap.a
[ -f "$AR" ] || die "no $AR: run make first"
stale=$(cd "$TOP" && find schema tap analyze cli.c -name '*.[ch]' -newer "$AR" | head -n 3)
[ -z "$stale" ] || die "$AR is older than $(echo $stale): run make first"

# The symbols that print: the stdio streams themselves, the printf family
# (and its _FORTIFY_SOURCE forms), mt_error/mt_warn, and mt_say_stderr (a
# module that defaults its voice to stderr prints all the same).
PRINTS='^(stdout|stderr|printf|vprintf|puts|putchar|perror|psignal|err|errx|warn|warnx|verr|verrx|vwarn|vwarnx|__printf_chk|__vprintf_chk|mt_error|mt_warn|mt_say_stderr)$'

# printers ARCHIVE: "member symbol" for each printing symbol a module leaves undefined.
# (nm -u prints "MEMBER:" before each member's symbols; the archive's path,
# which may hold spaces, is not on those lines.)
printers() {
	nm -u "$1" 2> /dev/null | awk -v re="$PRINTS" '
		/^[^ ]+\.o:$/ { m = substr($0, 1, length($0) - 1); next }
		m ~ /^(cmd-[a-z-]+|cli|mcptap|util)\.o$/ { next }
		$1 == "U" && $2 ~ re { print m, $2 }'
}

nmem=$(ar t "$AR" | grep -c '\.o$')
nsrc=$(cd "$TOP" && ls schema/*.c tap/*.c tap/*/*.c analyze/*.c analyze/*/*.c cli.c | wc -l)
check_eq "the archive holds an object per library source (and the schema's)" $((nsrc + 1)) "$nmem"

printers "$AR" > "$T/found"
check "no module below the command layer prints" test ! -s "$T/found"
sed 's/^/# prints: /' "$T/found"

# The check sees a module that prints, and lets a command print.
cat > "$T/loud.c" << 'C'
#include <stdio.h>
void loud(int n);
void loud(int n) { fprintf(stderr, "%d\n", n); puts("x"); }
C
mkdir "$T/a space" # (where CI's clone is)
${CC:-cc} -O2 -c -o "$T/loud.o" "$T/loud.c" && cp "$T/loud.o" "$T/cmd-loud.o" &&
	ar rcs "$T/a space/t.a" "$T/loud.o" "$T/cmd-loud.o"
check_eq "a synthetic printing module is seen, in an archive whose path has a space" "loud.o puts
loud.o stderr" "$(printers "$T/a space/t.a" | sort)"
finish
