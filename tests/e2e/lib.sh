# tests/e2e/lib.sh - sourced by every end-to-end test script (tNNNN-*.sh).
#
# A script runs the built binary for real; it calls `check` for each assertion and
# ends with `finish`. It runs in its own scratch directory ($T), removed on success.
# MCPTAP is the binary under test (an absolute path); PEERS and BENCH are the helper
# programs' folders.
set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
MCPTAP=${MCPTAP:-$TOP/mcptap}
PEERS=$TOP/tests/peers
BENCH=$TOP/tests/bench
NODEDIR=$TOP/tests/node
NAME=$(basename "$0" .sh)
T=$(mktemp -d "${TMPDIR:-/tmp}/mcptap-$NAME.XXXXXX")
_fails=0
_U_OWN=
_checks=0
# record's redaction key goes beside the scratch directory (some tests list what
# is in it), not in the user's home; finish removes it.
export MCPTAP_REDACT_KEY_FILE="${MCPTAP_REDACT_KEY_FILE:-$T.key}"

# check DESCRIPTION COMMAND...: run COMMAND; a non-zero status is a failed check.
check() {
	_d=$1; shift
	_checks=$((_checks + 1))
	if "$@"; then
		echo "ok - $_d"
	else
		echo "not ok - $_d"
		_fails=$((_fails + 1))
	fi
}

# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() {
	_checks=$((_checks + 1))
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1: expected '$2', got '$3'"
		_fails=$((_fails + 1))
	fi
}

# sql DB QUERY: run a query with the sqlite3 shell, one value per line.
sql() {
	sqlite3 -batch -noheader "$1" "$2"
}

die() {
	echo "not ok - $*"
	exit 1
}

finish() {
	if [ "$_checks" -eq 0 ]; then
		echo "not ok - $NAME made no checks"
		exit 1
	fi
	if [ "$_fails" -ne 0 ]; then
		echo "# $NAME: $_fails of $_checks checks failed; scratch kept in $T"
		exit 1
	fi
	rm -rf "$T" "$T.key" ${_U_OWN:+"$_U_OWN"}
	exit 0
}

# need_npm PACKAGE...: dies unless each pinned npm peer is installed (by
# tests/setup.sh: npm ci in tests/node) and mcptap is built.
need_npm() {
	for _p in "$@"; do
		[ -f "$NODEDIR/node_modules/$_p/package.json" ] ||
			die "the pinned MCP peer $_p is not installed: run tests/setup.sh node (npm ci)"
	done
	[ -x "$MCPTAP" ] || die "$MCPTAP is not built: run make"
}

# npm_entry PACKAGE: the path of an npm peer's entry point (its bin); dies (in
# the caller's subshell: ENTRY=$(npm_entry P) || exit) when need_npm does.
npm_entry() {
	need_npm "$1"
	_pkg=$NODEDIR/node_modules/$1
	node -e 'const d=process.argv[1],p=require(d+"/package.json");const b=typeof p.bin==="string"?p.bin:Object.values(p.bin)[0];console.log(require("path").resolve(d,b))' "$_pkg" ||
		die "cannot find $1's entry point"
}

# shq WORD: WORD as mcptap prints it in a command line or a path it names
# (mt_shell_quote): as it is when every character is safe, else in single
# quotes (a quote inside as '\''). A test comparing such output builds the
# expected text with it, so that it passes from a checkout whose path has a
# space in it.
shq() {
	case $1 in
	'' | *[!A-Za-z0-9@%_+=:,./-]*)
		printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*) printf '%s' "$1" ;;
	esac
}

# other_user PEER...: get ready to run commands as another user (uid and gid
# 65534) without depending on the folders above the checkout, which that user
# may not be allowed to enter (a clone in /root, or in a `mktemp -d` folder,
# is mode 0700). Sets AS, the command prefix that runs as that user; U, an
# empty scratch folder that user can enter and read (mode 0755: inside $T
# when every folder above $T lets it in, else a folder of its own under /tmp
# that finish removes); U_MCPTAP, a copy of the mcptap under test in U/bin;
# and copies of the C peers named (tests/peers/PEER) beside it, in U_PEERS.
# Returns 1, having said why on a "# skipped" line, when this user cannot be
# another (not root, or no setpriv), or no folder that user can enter exists.
other_user() {
	if [ "$(id -u)" -ne 0 ] || ! command -v setpriv > /dev/null; then
		echo "# skipped: being another user needs root and setpriv"
		return 1
	fi
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	chmod 0755 "$T"
	if $AS sh -c 'cd "$1"' sh "$T" 2> /dev/null; then
		U=$T/u
		mkdir "$U"
	elif _U_OWN=$(mktemp -d "/tmp/mcptap-$NAME-u.XXXXXX") &&
		$AS sh -c 'cd "$1"' sh "$(dirname "$_U_OWN")" 2> /dev/null; then
		U=$_U_OWN
		echo "# (user 65534 cannot enter $T: its files are in $U)"
	else
		echo "# skipped: no folder that user 65534 can enter ($T and /tmp are closed to it)"
		return 1
	fi
	chmod 0755 "$U"
	mkdir "$U/bin"
	cp "$MCPTAP" "$U/bin/mcptap"
	for _p in "$@"; do
		cp "$PEERS/$_p" "$U/bin/$_p"
	done
	chmod 0755 "$U/bin" "$U/bin"/*
	U_MCPTAP=$U/bin/mcptap
	U_PEERS=$U/bin
	return 0
}
