#!/bin/sh
# show in a real terminal (tmux, capture-pane) at 80 and 120 columns: every
# line within the width, the columns in line whatever the names' length (a
# tool name over the method column is cut with "…"), the body without the
# envelope, colour on the terminal and none with NO_COLOR, -t a's time of day.
. "$(dirname "$0")/lib.sh"

command -v tmux > /dev/null || { echo "# skipped: no tmux"; finish; }
cat > "$T/s.fx" <<'FX'
> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}
> {"jsonrpc":"2.0","method":"notifications/initialized"}
> {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a_tool_whose_name_is_longer_than_the_column","arguments":{"q":"x"}}}
< {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a long answer that does not fit on one line of eighty columns, nor of a hundred and twenty: it goes on and on"}]}}
> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e","arguments":{}}}
< {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}
FX
"$PEERS/fixture-load" "$T/s.fx" "$T/s.db"

# pane COLS [ENV...] -- ARGS: show's screen in a tmux window COLS wide (escapes kept with -e)
pane() {
	_cols=$1
	shift
	_env=""
	while [ "$1" != -- ]; do _env="$_env $1"; shift; done
	shift
	PANES=$((${PANES:-0} + 1))
	_sock=mcptap-t0354-$$-$PANES
	tmux -L "$_sock" new-session -d -x "$_cols" -y 40 \
		"env -u COLUMNS TERM=xterm-256color $_env '$MCPTAP' show -r '$T/s.db' $*; sleep 30"
	_n=0
	until [ "$(tmux -L "$_sock" capture-pane -p | grep -c '^ *[0-9]')" -ge 7 ] || [ $_n -ge 50 ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
	tmux -L "$_sock" capture-pane -p $CAPTURE_E > "$T/pane"
	tmux -L "$_sock" kill-server
}

# (At 80 columns every line is cut, the notification's in its method column;
# at 120, the four with a long body.)
for w in 80 120; do
	cut=$([ $w = 80 ] && echo 7 || echo 4)
	CAPTURE_E="" pane $w NO_COLOR=1 --
	check_eq "$w columns: 7 lines" 7 "$(grep -c '^ *[0-9]' "$T/pane")"
	check_eq "$w columns: none wider" "$w" "$(perl -CSD -ne 'chomp; $m = length if length > $m; END { print $m + 0 }' "$T/pane")"
	check_eq "$w columns: the lines cut end with …" "$cut" "$(grep -c '…$' "$T/pane")"
	check_eq "$w columns: the long tool name cut in its column" 2 \
		"$(grep -c 'tools/call a_tool_w[a-z_]*… ' "$T/pane")"
	# Every body (what follows the latency column) starts at one column.
	check_eq "$w columns: the bodies start in one column" 1 \
		"$(perl -CSD -ne 'print index($_, "{") , "\n" if /^ *[0-9]+ .*\{/' "$T/pane" | sort -u | wc -l)"
	check_eq "$w columns: the body is the params, not the envelope" 0 "$(grep -c '"jsonrpc"' "$T/pane")"
done
check_eq "120 columns: the error's body is its error object" 1 "$(grep -c '← error  *3  *tools/call e  *[0-9.]*[µm]*s  {"code":-32602,"message":"no"}$' "$T/pane")"
check_eq "120 columns: the full columns" "     3    0.003000 → notification          notifications/initialized" "$(sed -n 3p "$T/pane")"

CAPTURE_E=-e pane 120 --
check "colour on a terminal: the request's kind in cyan" grep -q "$(printf '\033')\[36m→ request" "$T/pane"
CAPTURE_E=-e pane 120 NO_COLOR=1 --
check_eq "NO_COLOR: no colour" 0 "$(grep -c "$(printf '\033')\[3" "$T/pane")"
CAPTURE_E="" pane 120 NO_COLOR=1 -- -t a
check_eq "-t a: the time of day in every line" 7 "$(grep -c '^ *[0-9]* [0-2][0-9]:[0-5][0-9]:[0-5][0-9]\.[0-9]\{6\} ' "$T/pane")"
CAPTURE_E="" pane 80 NO_COLOR=1 -- -t a
check_eq "-t a at 80 columns: to the millisecond" 7 "$(grep -c '^ *[0-9]* [0-2][0-9]:[0-5][0-9]:[0-5][0-9]\.[0-9]\{3\} ' "$T/pane")"
# -t d: since the line before (the fixture's items are 1 ms apart); -t r: since the start.
check_eq "-t d: each line 1 ms after the one before" "0.001000 0.001000 0.001000 0.001000 0.001000 0.001000 0.001000" \
	"$("$MCPTAP" show -r "$T/s.db" -t d | awk '{print $2}' | paste -sd ' ')"
check_eq "-t r: since the session began" "0.001000 0.002000 0.003000 0.004000 0.005000 0.006000 0.007000" \
	"$("$MCPTAP" show -r "$T/s.db" -t r | awk '{print $2}' | paste -sd ' ')"
"$MCPTAP" show -r "$T/s.db" -t x > /dev/null 2> "$T/t.err"
check_eq "-t x: a usage error" "2 mcptap: bad -t 'x' (r, a or d)" "$? $(head -n 1 "$T/t.err")"
CAPTURE_E="" pane 80 NO_COLOR=1 --
check_eq "80 columns: the compact columns" "    3     0.003 → notif        notifications/initi…" "$(sed -n 3p "$T/pane")"

finish
