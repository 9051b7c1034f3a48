#!/bin/sh
# No cycles among the source files, in two graphs:
#   includes: a file -> each project header it #includes;
#   uses:     a .c file -> each .c file that defines (with external linkage) a
#             function or variable it names.
# The uses graph is the one that matters: analyze.h declared functions that
# rule files defined, so the engine called into rules/rpc.c while the rules
# called the engine, and no #include line showed it. The rule registry
# (rules/rules.c naming the an_rules_* and an_trackers_* tables) is how rules
# are plugged in, not a dependency: those names are left out.
# The definitions are read from the source with comments stripped by the
# compiler; a synthetic pair of files checks that a cycle is seen.
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
export LC_ALL=C

# deps.awk: for one C file without comments, "D name" per external definition
# at file scope, "S name" per static one, "U name" per identifier it uses
# (member names and struct, union and enum tags left out).
cat > "$T/deps.awk" << 'EOF'
function classify(s, opened,    st, name) {
	gsub(/^[ \t]+|[ \t]+$/, "", s)
	if (s == "" || s ~ /^(typedef|extern)[ \t]/)
		return "type"
	st = s ~ /^static[ \t]/
	if (s ~ /=/) {
		sub(/[ \t]*=.*/, "", s)
	} else if (s ~ /\(/) {
		if (!opened)
			return "proto"
		sub(/[ \t]*\(.*/, "", s)
	} else if (opened || s ~ /^(struct|union|enum)[ \t]+[A-Za-z_0-9]+$/) {
		return "type"
	}
	gsub(/[ \t]*\[[^]]*\]/, "", s)
	if (!match(s, /[A-Za-z_][A-Za-z0-9_]*$/))
		return "type"
	name = substr(s, RSTART, RLENGTH)
	print (st ? "S " : "D ") name
	return "def"
}
BEGIN { depth = 0; stmt = ""; kind = "" }
cont { cont = /\\$/; next }
/^[ \t]*#/ { cont = /\\$/; next }
{
	line = $0
	gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
	gsub(/'([^'\\]|\\.)*'/, "''", line)
	u = line
	gsub(/(\.|->)[ \t]*[A-Za-z_][A-Za-z0-9_]*/, " ", u)
	gsub(/(struct|union|enum)[ \t]+[A-Za-z_][A-Za-z0-9_]*/, " ", u)
	while (match(u, /[A-Za-z_][A-Za-z0-9_]*/)) {
		print "U " substr(u, RSTART, RLENGTH)
		u = substr(u, RSTART + RLENGTH)
	}
	for (i = 1; i <= length(line); i++) {
		ch = substr(line, i, 1)
		if (ch == "{") {
			if (depth == 0) {
				kind = classify(stmt, 1)
				saved = stmt
				stmt = ""
			}
			depth++
		} else if (ch == "}") {
			depth--
			if (depth == 0)
				stmt = kind == "type" ? saved " {} " : ""
		} else if (depth == 0) {
			if (ch == ";") {
				classify(stmt, 0)
				stmt = ""
			} else {
				stmt = stmt ch
			}
		}
	}
	if (depth == 0)
		stmt = stmt " "
}
EOF

# uses_edges DIR FILE...: "user definer" lines for the .c files (paths under DIR).
uses_edges() {
	_dir=$1; shift
	for _f in "$@"; do
		"$CC" -fpreprocessed -dD -E -P "$_dir/$_f" | awk -f "$T/deps.awk" | sed "s|\$| $_f|"
	done | awk '
		$1 == "D" { def[$2] = $3 }
		$1 != "U" { mine[$3 " " $2] = 1 }
		$1 == "U" { use[++n] = $3 " " $2 }
		END {
			for (i = 1; i <= n; i++) {
				split(use[i], a, " ")
				if (a[1] == "analyze/rules/rules.c" && a[2] ~ /^an_(rules|trackers)_/)
					continue
				if ((a[2] in def) && !(use[i] in mine))
					print a[1], def[a[2]]
			}
		}' | sort -u
}

# include_edges DIR FILE...: "includer included" lines for the project's headers.
include_edges() {
	_dir=$1; shift
	for _f in "$@"; do
		sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$_dir/$_f" |
			while read -r _h; do
				[ -f "$_dir/$_h" ] && echo "$_f $_h"
			done
	done | sort -u
}

# acyclic NAME EDGES: a check that the graph in file EDGES has no cycle
# (tsort names the files of each cycle it finds).
acyclic() {
	tsort "$2" > /dev/null 2> "$2.loops"
	_rc=$?
	sed 's/^/# /' "$2.loops"
	check "$1" test "$_rc" -eq 0 -a ! -s "$2.loops"
}

# The check sees a cycle: two files that call each other, two headers that
# include each other, and a registry left out only by its table names.
mkdir -p "$T/syn/analyze/rules"
cat > "$T/syn/a.c" << 'EOF'
#include "a.h"
/* fb() in a comment is not a use */
static int fc(void) { return '{'; }
int fa(int x) { return x ? fb(x - 1) + fc() : 0; }
EOF
cat > "$T/syn/b.c" << 'EOF'
#include "b.h"
int fb(int x)
{
	const char *s = "fa(} {";
	return fa(x) + s[0];
}
EOF
printf '#include "b.h"\nint fa(int);\n' > "$T/syn/a.h"
printf '#include "a.h"\nint fb(int);\n' > "$T/syn/b.h"
cat > "$T/syn/analyze/rules/rules.c" << 'EOF'
extern const int an_rules_x[];
const int *const an_rule_tables[] = {an_rules_x, 0};
EOF
cat > "$T/syn/analyze/rules/x.c" << 'EOF'
extern const int *const an_rule_tables[];
const int an_rules_x[] = {1};
int xf(void) { return an_rule_tables[0][0]; }
EOF
uses_edges "$T/syn" a.c b.c analyze/rules/rules.c analyze/rules/x.c > "$T/syn.uses"
check_eq "synthetic: the uses read, strings and comments aside" \
	"a.c b.c|analyze/rules/x.c analyze/rules/rules.c|b.c a.c" "$(paste -sd'|' "$T/syn.uses")"
tsort "$T/syn.uses" > /dev/null 2> "$T/syn.loops"
check "synthetic: a call cycle is seen" grep -q 'loop' "$T/syn.loops"
include_edges "$T/syn" a.c a.h b.h > "$T/syn.inc"
tsort "$T/syn.inc" > /dev/null 2> "$T/syn.incloops"
check "synthetic: an include cycle is seen" grep -q 'loop' "$T/syn.incloops"

# The project.
cd "$TOP" || die "cannot enter $TOP"
set -- mcptap.c schema/*.c tap/*.c tap/*/*.c analyze/*.c analyze/*/*.c
check "the sources are found" test -f analyze/engine.c -a -f analyze/rules/rules.c
uses_edges "$TOP" "$@" > "$T/uses"
# (a few edges known to be there: the graph is read at all)
check "uses: a rule file uses the engine" grep -qx 'analyze/rules/rpc.c analyze/engine.c' "$T/uses"
check "uses: the engine uses the rule registry" \
	grep -qx 'analyze/engine.c analyze/rules/rules.c' "$T/uses"
check_eq "uses: the engine uses no rule family" "" \
	"$(grep '^analyze/engine.c analyze/rules/' "$T/uses" | grep -v 'rules/rules.c$')"
acyclic "no cycle among the C files (what each uses of the others)" "$T/uses"
include_edges "$TOP" "$@" $(ls schema/*.h tap/*.h tap/*/*.h analyze/*.h analyze/*/*.h) > "$T/inc"
check "includes: the graph is read" grep -qx 'analyze/engine.c analyze/analyze.h' "$T/inc"
acyclic "no cycle among the #includes" "$T/inc"

finish
