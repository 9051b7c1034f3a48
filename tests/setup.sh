#!/bin/sh
# tests/setup.sh - install what building and testing mcptap needs, when it is missing.
#
# Usage: tests/setup.sh [build|test|bench|fuzz|node]...
#   build  the compiler, make, pkg-config, the -dev packages of the libraries, sqlite3;
#          then checks that pkg-config finds every library the Makefile's PKGS names
#   test   build, plus cmocka, sqlite3, tcpdump (captures of real sessions), GNU time
#          (an import's peak RSS), clickhouse-server and -client (export -T jsonl's
#          load), jq (an export's HAR), tshark and capinfos (what export -T pcapng
#          writes), chromium (report's HTML, headless), mandoc (mandoc -T lint of the
#          man pages), clang-format (the layout of the C files), and node/npm for the end-to-end tests
#   node   npm ci in tests/node (the pinned MCP peers from the npm registry)
#   bench  GNU time (peak RSS), taskset, nginx (the plain HTTP relay of section (k)),
#          tshark (pcap import's comparison, section (m)), chromium (the report
#          opened, section (s))
#   fuzz   clang with libFuzzer
# Debian packages come from apt-get (through sudo when not root); npm packages from
# `npm ci` and the committed lock file. Nothing is installed when it is already there.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
want=""

need_pkg() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed' || want="$want $1"
}

for what in "$@"; do
	case $what in
	build)
		for p in gcc make pkg-config libc6-dev libjansson-dev libsqlite3-dev libevent-dev libssl-dev zlib1g-dev libcurl4-openssl-dev libpcap-dev libhttp-parser-dev sqlite3; do need_pkg "$p"; done ;;
	test)
		for p in gcc make pkg-config libc6-dev libjansson-dev libsqlite3-dev libevent-dev libssl-dev zlib1g-dev libcurl4-openssl-dev libpcap-dev libhttp-parser-dev libcmocka-dev sqlite3 tcpdump stunnel4 openssl util-linux cppcheck valgrind perl libxml2-utils mandoc clang-format time jq tshark clickhouse-server clickhouse-client chromium; do
			need_pkg "$p"
		done
		command -v node >/dev/null 2>&1 || want="$want nodejs"
		command -v npm >/dev/null 2>&1 || want="$want npm" ;;
	bench)
		for p in time util-linux sqlite3 nginx tshark chromium; do need_pkg "$p"; done ;;
	fuzz)
		for p in clang libclang-rt-dev; do need_pkg "$p"; done
		command -v clang >/dev/null 2>&1 || want="$want clang" ;;
	node) ;;
	*) echo "setup.sh: unknown set '$what'" >&2; exit 2 ;;
	esac
done

if [ -n "$want" ]; then
	echo "setup: installing$want" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	# shellcheck disable=SC2086
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $want >&2
fi

# Every library the Makefile asks pkg-config for (PKGS) must be found now, or
# the build fails later with a less clear error. (libevent_openssl.pc comes
# with libevent-dev, openssl.pc with libssl-dev, zlib.pc with zlib1g-dev.)
for what in "$@"; do
	case $what in
	build | test)
		for p in $(sed -n 's/^PKGS = //p' "$here/../Makefile"); do
			pkg-config --exists "$p" || {
				echo "setup.sh: pkg-config finds no '$p' (the Makefile's PKGS): its -dev package is missing from the list above" >&2
				exit 1
			}
		done ;;
	esac
done

for what in "$@"; do
	if [ "$what" = node ] || [ "$what" = test ]; then
		lock="$here/node/package-lock.json"
		stamp="$here/node/node_modules/.mcptap-stamp"
		if [ -f "$lock" ] && { [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; }; then
			echo "setup: npm ci in tests/node" >&2
			(cd "$here/node" && npm ci --no-audit --no-fund --loglevel=error >&2)
			touch "$stamp"
		fi
	fi
done
exit 0
