#!/bin/sh
# The capture file: created 0600; marked with application_id and user_version;
# readable while record writes (WAL); a file that is not SQLite, is corrupt,
# is another program's database or comes from a newer mcptap is refused with
# a clear message and never changed.
. "$(dirname "$0")/lib.sh"

msg='{"jsonrpc":"2.0","id":1,"method":"ping"}'

# Mode 0600 whatever the umask, for the file and its WAL companions.
(umask 000; echo "$msg" | "$MCPTAP" record -w "$T/new.db" -- sh -c 'cat; sleep 0.2' > /dev/null)
check_eq "capture file is 0600" 600 "$(stat -c %a "$T/new.db")"
mkfifo "$T/fifo"
(umask 000; "$MCPTAP" record -w "$T/live.db" -- cat < "$T/fifo" > /dev/null) &
tap=$!
exec 7> "$T/fifo"
echo "$msg" >&7
i=0
# (Poll with mcptap, which never creates the file: the sqlite3 shell would.)
while [ $i -lt 100 ] && [ "$("$MCPTAP" show -r "$T/live.db" -T json 2>/dev/null | grep -c '"dir":"c2s"')" != 1 ]; do
	sleep 0.05; i=$((i + 1))
done
check_eq "WAL file is 0600" 600 "$(stat -c %a "$T/live.db-wal")"
check_eq "journal mode is WAL" wal "$(sql "$T/live.db" "pragma journal_mode")"
# Read while record is still writing.
"$MCPTAP" show -r "$T/live.db" -T json > "$T/live.json"
check_eq "show reads while record writes" 0 $?
check "show sees the committed message" grep -q '"method":"ping"' "$T/live.json"
echo "$msg" >&7
exec 7>&-
wait $tap
check_eq "both messages once record ended" 2 "$(sql "$T/live.db" "select count(*) from message where dir='c2s'")"

check_eq "application_id marks the file" 1296257108 "$(sql "$T/new.db" "pragma application_id")"
check_eq "user_version is the schema version" 4 "$(sql "$T/new.db" "pragma user_version")"
check_eq "created_by is recorded" "mcptap $("$MCPTAP" --version | cut -d' ' -f2)" \
	"$(sql "$T/new.db" "select value from meta where key='created_by'")"

refused() { # refused NAME FILE EXPECTED-REASON
	before=$(sha256sum < "$2")
	"$MCPTAP" show -r "$2" > "$T/out" 2> "$T/err"
	check_eq "$1: show fails with 2" 2 $?
	check "$1: show says why" grep -q "^mcptap: cannot open '$2': .*$3" "$T/err"
	check_eq "$1: nothing on stdout" "" "$(cat "$T/out")"
	"$MCPTAP" sessions -r "$2" > /dev/null 2> "$T/err"
	check_eq "$1: sessions fails with 2" 2 $?
	echo "$msg" | "$MCPTAP" record -w "$2" -- cat > "$T/out" 2> "$T/err"
	check_eq "$1: record still relays" "$msg" "$(cat "$T/out")"
	check "$1: record warns why" grep -q "^mcptap: warning: cannot log to '$2': .*$3" "$T/err"
	check_eq "$1: the file is unchanged" "$before" "$(sha256sum < "$2")"
	check "$1: no WAL left beside it" test ! -s "$2-wal"
}

printf 'hello, I am a text file\n' > "$T/text.db"
refused "text file" "$T/text.db" "file is not a database"

head -c 8192 /dev/urandom > "$T/random.db"
refused "random bytes" "$T/random.db" "file is not a database"

cp "$T/new.db" "$T/corrupt.db"
# Keep the SQLite header, destroy the pages after it.
dd if=/dev/urandom of="$T/corrupt.db" bs=1 seek=100 count=8000 conv=notrunc 2>/dev/null
refused "corrupt file" "$T/corrupt.db" "malformed\|not a database"

sqlite3 "$T/other.db" "create table t(x); insert into t values (1);"
refused "another program's database" "$T/other.db" "not an mcptap capture file"

cp "$T/new.db" "$T/newer.db"
sqlite3 "$T/newer.db" "pragma user_version = 99; update meta set value = 'mcptap 9.0.0' where key = 'migrated_by';"
refused "newer schema" "$T/newer.db" "written by mcptap 9.0.0 (schema version 99); this mcptap .* reads versions up to 4: upgrade mcptap"

: > "$T/empty.db"
"$MCPTAP" show -r "$T/empty.db" 2> "$T/err"
check_eq "an empty file is not a capture for show" 2 $?
check "empty: says so" grep -q "empty file, not an mcptap capture" "$T/err"
echo "$msg" | "$MCPTAP" record -w "$T/empty.db" -- cat > /dev/null
check_eq "an empty file becomes a capture for record" 1 "$(sql "$T/empty.db" "select count(*) from message where dir='c2s'")"

"$MCPTAP" show -r "$T/missing.db" 2> "$T/err"
check_eq "a missing file: 2" 2 $?
check "a missing file: says so" grep -q "cannot open '$T/missing.db': No such file or directory" "$T/err"
check "show does not create it" test ! -e "$T/missing.db"

# Many sessions in one file: a client starting the server again adds one.
for i in 1 2 3; do echo "$msg" | "$MCPTAP" record -w "$T/many.db" -- cat > /dev/null; done
check_eq "three sessions in one file" "1 2 3" "$(sql "$T/many.db" "select id from session" | tr '\n' ' ' | sed 's/ $//')"

finish
