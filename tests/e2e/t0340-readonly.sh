#!/bin/sh
# Any capture a user may read can be read: a file they may not write, in a
# folder they may not write, on a read-only mount, or another user's file in
# a folder they may write. Every reader works, and none leaves a -wal or -shm
# file of its own beside it. (The first cases need root, to be another user
# and to mount; without it they are skipped, saying so.)
. "$(dirname "$0")/lib.sh"

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' |
	"$MCPTAP" record -w "$T/s.db" -- "$PEERS/mcp-server" > /dev/null 2>&1
check_eq "a capture: 1 session, 5 messages" "1|5" "$(sql "$T/s.db" "select count(*), (select count(*) from message) from session")"
"$MCPTAP" show -r "$T/s.db" -T json > "$T/want.show"

# readers AS BIN DB: every reader on DB, run by AS ("" for this user) with
# the mcptap BIN; prints "name:status" for each, then whether anything new
# appeared beside DB.
readers() {
	as=$1 bin=$2 db=$3 dir=$(dirname "$3")
	before=$(ls -a "$dir" | sort | tr '\n' ' ')
	for c in sessions show stats analyze replay; do
		if [ $c = replay ]; then set -- --as server; else set --; fi
		# shellcheck disable=SC2086
		printf '%s\n' "$init" | $as "$bin" $c -r "$db" "$@" > "$T/out.$c" 2> "$T/err.$c"
		printf '%s:%s ' "$c" "$?"
	done
	after=$(ls -a "$dir" | sort | tr '\n' ' ')
	[ "$before" = "$after" ] && echo "nothing new" || echo "new files: $after"
}
# (analyze exits 1: the client did not wait for the handshake's answer.)
want="sessions:0 show:0 stats:0 analyze:1 replay:0 nothing new"

# This user, a file it may read but not write, in a folder it may not write:
# as root, permissions do not stop writes, so the folder is a read-only mount.
if [ "$(id -u)" -eq 0 ] && command -v unshare > /dev/null; then
	if other_user; then
		# Another user's file (0644) in a folder anyone may write (/tmp's rules).
		mkdir "$U/shared"
		chmod 1777 "$U/shared"
		cp "$T/s.db" "$U/shared/s.db"
		chmod 644 "$U/shared/s.db"
		check_eq "another user's file in a folder they may write: every reader, nothing left beside it" \
			"$want" "$(readers "$AS" "$U_MCPTAP" "$U/shared/s.db")"
		check_eq "show gives the same items" "$(cat "$T/want.show")" \
			"$($AS "$U_MCPTAP" show -r "$U/shared/s.db" -T json)"
		check "analyze says it could not store its findings" grep -q "findings" "$T/err.analyze"
		check_eq "and the file is unchanged: no analysis in it" 0 \
			"$(sql "$U/shared/s.db" "select count(*) from analysis")"

		# A folder the user may not write.
		mkdir "$U/ro"
		cp "$T/s.db" "$U/ro/s.db"
		chmod 644 "$U/ro/s.db"
		chmod 555 "$U/ro"
		check_eq "a folder they may not write: every reader" "$want" \
			"$(readers "$AS" "$U_MCPTAP" "$U/ro/s.db")"
	fi

	# A read-only mount, the file the user's own.
	mkdir "$T/mnt"
	cp "$T/s.db" "$T/mnt/s.db"
	out=$(unshare -m sh -c '
		mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 9
		touch "$1/probe" 2> /dev/null && { echo "the mount is writable"; exit 9; }
		for c in sessions show stats analyze; do
			"$2" $c -r "$1/s.db" < /dev/null > /dev/null 2>> "$1.err"
			printf "%s:%s " "$c" "$?"
		done
		printf "%s\n" "$3" | "$2" replay -r "$1/s.db" --as server > /dev/null 2>> "$1.err"
		printf "replay:%s" "$?"' sh "$T/mnt" "$MCPTAP" "$init")
	check_eq "a read-only mount: every reader" "sessions:0 show:0 stats:0 analyze:1 replay:0" "$out"
	check_eq "nothing was made beside the file" "s.db" "$(ls -A "$T/mnt")"
	check "analyze said it could not store its findings" grep -q "findings" "$T/mnt.err"
else
	echo "# skipped: another user and a read-only mount need root and unshare"
fi

# The owner's own file, read-only (0400), in a folder it may write: read as
# usual; WAL's files may be made (they are its own), and go when it is done.
cp "$T/s.db" "$T/own.db"
chmod 400 "$T/own.db"
check_eq "the owner's read-only file: every reader" "sessions:0 show:0 stats:0 analyze:1 replay:0" \
	"$(readers "" "$MCPTAP" "$T/own.db" | sed 's/ nothing new$//; s/ new files:.*$//')"

finish
