#!/bin/sh
# tests/bench/gen-session.sh N [varied] - print a fixture (see
# tests/peers/fixture-load.c) of a clean 2025-06-18 session with about N
# messages: the handshake, then a mix of tools/call (some with progress),
# resources/read, prompts/get and resources/list, each answered 1 ms later.
# varied: answers come 1 to 97 ms later (a spread for percentiles), one
# request in 13 is answered with an error, and the last 5 requests of about N
# messages are never answered.
n=${1:-1000000}
awk -v n="$n" -v varied="${2:-}" '
function later(id) { if (varied != "") print "@t +" ((id * 37) % 97) }
function answer(id, line) {
	later(id)
	if (varied != "" && id >= last)
		return
	if (varied != "" && id % 13 == 0)
		print "< {\"jsonrpc\":\"2.0\",\"id\":" id ",\"error\":{\"code\":-32602,\"message\":\"bad arguments " id "\"}}"
	else
		print line
}
BEGIN {
	last = int(n / 2.1) - 5
	print "> {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"sampling\":{}},\"clientInfo\":{\"name\":\"gen\",\"version\":\"1\"}}}"
	print "< {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{},\"resources\":{},\"prompts\":{}},\"serverInfo\":{\"name\":\"gen\",\"version\":\"1\"}}}"
	print "> {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
	m = 3; id = 1
	while (m < n) {
		k = id % 10
		if (k < 6) {
			print "> {\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello " id "\"}}}"
			answer(id, "< {\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello " id "\"}]}}")
			m += 2
		} else if (k == 6) {
			print "> {\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":\"t" id "\"}}}"
			print "< {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t" id "\",\"progress\":1,\"total\":2}}"
			answer(id, "< {\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"content\":[]}}")
			m += 3
		} else if (k == 7) {
			print "> {\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///r/" id "\"}}"
			answer(id, "< {\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"contents\":[{\"uri\":\"file:///r/" id "\",\"text\":\"x\"}]}}")
			m += 2
		} else if (k == 8) {
			print "> {\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"prompts/get\",\"params\":{\"name\":\"p\"}}"
			answer(id, "< {\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}]}}")
			m += 2
		} else {
			print "> {\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"resources/list\"}"
			answer(id, "< {\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"resources\":[]}}")
			m += 2
		}
		id++
	}
}'
