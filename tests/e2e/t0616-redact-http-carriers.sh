#!/bin/sh
# Every credential carrier of HTTP stays out of the capture file's bytes: the
# database, its -wal and its -shm, copied while the tap runs and read again
# after it stops. One request per carrier goes through a real
# `record --upstream` tap to a real upstream on loopback, each with a secret
# of its own: the headers Authorization, Proxy-Authorization, Authentication
# (with a scheme and without), Cookie and credential-named ones (X-Api-Key,
# X-Auth-Token, X-Amz-Security-Token, X-Session-Token, X-Hub-Signature-256,
# Ocp-Apim-Subscription-Key), and the query parameters of signed URLs
# (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, X-Goog-Signature,
# X-Goog-Credential, Azure's sig, CloudFront's Signature) and the credential
# names (access_token, api_key, apikey, key, token, client_secret, password,
# code); the upstream answers with a Set-Cookie and a Location holding a
# presigned URL. An OAuth token request's form (code, client_secret,
# code_verifier) and its JSON answer (access_token, refresh_token), bodies no
# message holds, too. Each secret is found 0 times in the file, while each request's
# control value (a header and a query parameter that are no secret) is found,
# and the upstream got every secret as it was sent. The same carriers in a
# packet capture, through import; and replay --url's stored URL.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-tap.sh"
. "$(dirname "$0")/pcap.sh"

export MCPTAP_REDACT_KEY_FILE="$T/key"

# The upstream: logs what it got (method, target, raw headers) to $T/up.log,
# answers a JSON-RPC request with an empty result and anything else with 202,
# every answer with a Set-Cookie; GET /presign: 302 to a presigned URL; POST
# /token: a token response.
cat > "$T/up.js" <<'JS'
const http = require("http"), fs = require("fs");
const [log, cookie, locsig, tokresp, tokrefresh] = process.argv.slice(2);
const srv = http.createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks).toString();
		fs.appendFileSync(log, req.method + " " + req.url + "\n" + req.rawHeaders.join("\n") + "\n");
		const h = {"Set-Cookie": "sid=" + cookie + "; Path=/; HttpOnly", "X-Note": "ctl-resp-note"};
		if (req.url === "/token") {
			res.writeHead(200, {"Content-Type": "application/json", "Cache-Control": "no-store"});
			res.end(JSON.stringify({access_token: tokresp, token_type: "Bearer", expires_in: 3600,
				refresh_token: tokrefresh, scope: "ctl-scope"}));
			return;
		}
		if (req.url === "/presign") {
			h.Location = "https://b.s3.amazonaws.com/f.txt?X-Amz-Date=20240101T000000Z&X-Amz-Signature=" + locsig;
			res.writeHead(302, h);
			res.end();
			return;
		}
		let m = null;
		try { m = JSON.parse(body); } catch (e) { /* not JSON */ }
		if (m && m.id !== undefined) {
			res.writeHead(200, {...h, "Content-Type": "application/json"});
			res.end(JSON.stringify({jsonrpc: "2.0", id: m.id, result: {}}));
		} else {
			res.writeHead(202, h);
			res.end();
		}
	});
});
srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
JS
P=zKq7 # every secret starts with it
node "$T/up.js" "$T/up.log" "$P-setcookie" "$P-locsig" "$P-tokresp" "$P-tokrefresh" > "$T/up.port" 2> "$T/up.err" &
up_pid=$!
trap 'kill "$up_pid" ${TAP_PID:-} 2> /dev/null' EXIT
n=0
while [ ! -s "$T/up.port" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -s "$T/up.port" ] || die "the upstream did not start: $(cat "$T/up.err")"
UP=http://127.0.0.1:$(cat "$T/up.port")

# The carriers: TAG|HEADER (NAME: VALUE, or -)|QUERY (NAME=VALUE, or -); each
# secret is $P-TAG (no tag the start of another: grep -F finds each alone).
cat > "$T/carriers" <<EOF
authz|Authorization: Bearer $P-authz|-
proxyauth|Proxy-Authorization: Basic $P-proxyauth|-
authn|Authentication: Token $P-authn|-
bareauthn|Authentication: $P-bareauthn|-
cookie|Cookie: sid=$P-cookie|-
xapikey|X-Api-Key: $P-xapikey|-
xauthtoken|X-Auth-Token: $P-xauthtoken|-
hdramzsectok|X-Amz-Security-Token: $P-hdramzsectok|-
sesstok|X-Session-Token: $P-sesstok|-
hubsig|X-Hub-Signature-256: sha256=$P-hubsig|-
apimkey|Ocp-Apim-Subscription-Key: $P-apimkey|-
amzsig|-|X-Amz-Signature=$P-amzsig
amzcred|-|X-Amz-Credential=$P-amzcred
amzsectok|-|X-Amz-Security-Token=$P-amzsectok
googsig|-|X-Goog-Signature=$P-googsig
googcred|-|X-Goog-Credential=$P-googcred
azsig|-|sig=$P-azsig
cfsig|-|Signature=$P-cfsig
accesstoken|-|access_token=$P-accesstoken
api_key|-|api_key=$P-api_key
apikey|-|apikey=$P-apikey
key|-|key=$P-key
token|-|token=$P-token
clientsecret|-|client_secret=$P-clientsecret
password|-|password=$P-password
code|-|code=$P-code
EOF

db=$T/t.db
start_tap "$db" "$UP"
i=0
while IFS='|' read -r tag hdr q; do
	i=$((i + 1))
	url="$TAP_URL/mcp?$( [ "$q" = - ] || echo "$q&")X-Amz-Date=20240101T000000Z&q=ctl-q-$tag"
	set -- -H "X-Trace-Note: ctl-h-$tag"
	[ "$hdr" = - ] || set -- "$@" -H "$hdr"
	got=$(curl -s "$@" -H 'Content-Type: application/json' --data "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"ping\"}" "$url")
	[ "$got" = "{\"jsonrpc\":\"2.0\",\"id\":$i,\"result\":{}}" ] || echo "# $tag: the answer was '$got'"
done < "$T/carriers"
ncar=$i
# The same secret in a header and a query parameter; the upstream's redirect.
curl -s -o /dev/null -H "X-Api-Key: $P-same" -H 'Content-Type: application/json' \
	--data '{"jsonrpc":"2.0","id":"same","method":"ping"}' "$TAP_URL/mcp?access_token=$P-same"
code=$(curl -s -o /dev/null -w '%{http_code}' "$TAP_URL/presign")
check_eq "the upstream's redirect passes" 302 "$code"
tok=$(curl -s --data "code=$P-fcode&grant_type=authorization_code&client_id=ctl-client&client_secret=$P-fsecret&code_verifier=$P-fverifier" "$TAP_URL/token")
check "the token response passes as it was" test "$tok" = "{\"access_token\":\"$P-tokresp\",\"token_type\":\"Bearer\",\"expires_in\":3600,\"refresh_token\":\"$P-tokrefresh\",\"scope\":\"ctl-scope\"}"
total=$((ncar + 3))

n=0
while [ "$(sql "$db" "select count(*) from http_exchange where outcome is not null" 2> /dev/null)" != "$total" ] && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
check_eq "every exchange stored while the tap runs" "$total" "$(sql "$db" "select count(*) from http_exchange")"
mkdir "$T/live"
for f in "$db" "$db-wal" "$db-shm"; do
	[ -e "$f" ] && cp "$f" "$T/live/"
done
check "the -wal and -shm files are there to read while the tap runs" test -s "$T/live/t.db-wal" -a -s "$T/live/t.db-shm"

# in_bytes STRING FILE...: how many lines of the files' raw bytes hold STRING.
in_bytes() {
	_s=$1
	shift
	cat "$@" 2> /dev/null | grep -a -c -F -- "$_s"
}

# The secrets and the controls, in the files as the tap left them while it ran.
live="$T/live/t.db $T/live/t.db-wal $T/live/t.db-shm"
# shellcheck disable=SC2086
while IFS='|' read -r tag hdr q; do
	check_eq "while running: '$P-$tag' is in neither the database, the -wal nor the -shm" 0 "$(in_bytes "$P-$tag" $live)"
	check "while running: its request's controls are stored (ctl-h-$tag, ctl-q-$tag)" \
		test "$(in_bytes "ctl-h-$tag" $live)" -gt 0 -a "$(in_bytes "ctl-q-$tag" $live)" -gt 0
	check_eq "the upstream got '$P-$tag' as it was sent" 1 "$(grep -c -F -- "$P-$tag" "$T/up.log")"
done < "$T/carriers"
for s in same setcookie locsig fcode fsecret fverifier tokresp tokrefresh; do
	# shellcheck disable=SC2086
	check_eq "while running: '$P-$s' is in none of the files" 0 "$(in_bytes "$P-$s" $live)"
done

stop_tap
check_eq "the tap exits 0" 0 "$TAP_STATUS"
final="$db"
for f in "$db-wal" "$db-shm"; do
	[ -e "$f" ] && final="$final $f"
done
# shellcheck disable=SC2086
check_eq "after it stops: no '$P' at all in the files ($(echo $final | wc -w) of them)" 0 "$(in_bytes "$P" $final)"
# shellcheck disable=SC2086
check "and the controls are there" test "$(in_bytes ctl-q-code $final)" -gt 0 -a "$(in_bytes ctl-h-code $final)" -gt 0

# What is stored in their place: markers, the rest of each value as it was.
# (X: any marker.)
stored() {
	sql "$db" "$1" | sed 's/\[redacted:[0-9a-f]\{8\}\]/[redacted:X]/g'
}
check_eq "Authentication: the scheme word kept; a value of one word all marker" \
	'["Authentication","Token [redacted:X]"]|["Authentication","[redacted:X]"]' \
	"$(stored "select j.value from http_exchange x, json_each(x.req_headers) j where json_extract(j.value, '\$[0]') = 'Authentication' order by x.seq" | paste -sd '|')"
check_eq "Proxy-Authorization and X-Hub-Signature-256" \
	'["Proxy-Authorization","Basic [redacted:X]"]|["X-Hub-Signature-256","[redacted:X]"]' \
	"$(stored "select j.value from http_exchange x, json_each(x.req_headers) j where json_extract(j.value, '\$[0]') in ('Proxy-Authorization', 'X-Hub-Signature-256') order by x.seq" | paste -sd '|')"
check_eq "signed-URL parameters: the signature, credential and token markers; X-Amz-Date and the control kept" \
	"/mcp?X-Amz-Signature=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-amzsig|/mcp?X-Amz-Credential=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-amzcred|/mcp?X-Amz-Security-Token=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-amzsectok|/mcp?X-Goog-Signature=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-googsig|/mcp?X-Goog-Credential=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-googcred|/mcp?sig=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-azsig|/mcp?Signature=[redacted:X]&X-Amz-Date=20240101T000000Z&q=ctl-q-cfsig" \
	"$(stored "select target from http_exchange where substr(target, instr(target, '&q=ctl-q-') + 9) in ('amzsig', 'amzcred', 'amzsectok', 'googsig', 'googcred', 'azsig', 'cfsig') order by seq" | paste -sd '|')"
check_eq "the Location of a presigned URL: its signature a marker" \
	'["Location","https://b.s3.amazonaws.com/f.txt?X-Amz-Date=20240101T000000Z&X-Amz-Signature=[redacted:X]"]' \
	"$(stored "select j.value from http_exchange x, json_each(x.resp_headers) j where json_extract(j.value, '\$[0]') = 'Location'")"
check_eq "Set-Cookie: its value a marker, its attributes kept" \
	"sid=[redacted:X]; Path=/; HttpOnly" \
	"$(stored "select distinct json_extract(j.value, '\$[1]') from http_exchange x, json_each(x.resp_headers) j where json_extract(j.value, '\$[0]') = 'Set-Cookie'")"
check_eq "equal secrets, equal markers: the header's and the query parameter's" 1 \
	"$(sql "$db" "select substr(target, instr(target, '=') + 1) = (select json_extract(j.value, '\$[1]') from json_each(req_headers) j where json_extract(j.value, '\$[0]') = 'X-Api-Key') and target glob '*=[[]redacted:????????]' from http_exchange where target glob '/mcp[?]access_token=[[]redacted:????????]'")"
check_eq "the token request's form: code, client_secret and code_verifier markers, the rest kept" \
	"code=[redacted:X]&grant_type=authorization_code&client_id=ctl-client&client_secret=[redacted:X]&code_verifier=[redacted:X]" \
	"$(stored "select cast(req_body as text) from http_exchange where target = '/token'")"
check_eq "its JSON answer: the tokens markers, the rest kept" \
	'{"access_token":"[redacted:X]","token_type":"Bearer","expires_in":3600,"refresh_token":"[redacted:X]","scope":"ctl-scope"}' \
	"$(stored "select cast(resp_body as text) from http_exchange where target = '/token'")"
check_eq "the headers the analyzer and replay read are kept" "ctl-h-authz|application/json" \
	"$(sql "$db" "select json_extract(j.value, '\$[1]') from http_exchange x, json_each(x.req_headers) j where json_extract(j.value, '\$[0]') in ('X-Trace-Note', 'Content-Type') and x.target like '%ctl-q-authz' order by j.key" | paste -sd '|')"

# The same carriers in a packet capture, through import.
body='{"jsonrpc":"2.0","id":1,"method":"ping"}'
printf 'POST /mcp?X-Amz-Signature=%s-pamzsig&X-Goog-Credential=%s-pgoogcred&sig=%s-pazsig&q=ctl-pq HTTP/1.1\r\nHost: x\r\nAuthentication: Token %s-pauthn\r\nProxy-Authorization: Basic %s-pproxy\r\nOcp-Apim-Subscription-Key: %s-papim\r\nX-Trace-Note: ctl-ph\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
	"$P" "$P" "$P" "$P" "$P" "$P" ${#body} "$body" > "$T/req.http"
rb='{"jsonrpc":"2.0","id":1,"result":{}}'
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: sid=%s-pcookie; Path=/\r\nContent-Length: %d\r\n\r\n%s' "$P" ${#rb} "$rb" > "$T/resp.http"
form="grant_type=authorization_code&code=$P-pfcode&client_secret=$P-pfsecret&client_id=ctl-pc"
printf 'POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s' ${#form} "$form" > "$T/treq.http"
tb="{\"access_token\":\"$P-ptokresp\",\"token_type\":\"Bearer\"}"
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' ${#tb} "$tb" > "$T/tresp.http"
"$GEN" -c "$T/req.http" -S "$T/resp.http" -c "$T/treq.http" -S "$T/tresp.http" "$T/c.pcap" || die "pcap-gen failed"
imp c "$T/c.pcap"
check_eq "import exits 0" 0 "$RC"
check_eq "import: both exchanges stored" 2 "$(sql "$T/c.db" "select count(*) from http_exchange")"
for s in pamzsig pgoogcred pazsig pauthn pproxy papim pcookie pfcode pfsecret ptokresp; do
	check_eq "import: '$P-$s' is in none of the files" 0 "$(in_bytes "$P-$s" "$T/c.db" "$T/c.db-wal" "$T/c.db-shm")"
done
check_eq "import: the controls are stored" "2|1" \
	"$(sql "$T/c.db" "select sum(instr(target, 'q=ctl-pq') > 0) + sum(instr(req_headers, 'ctl-ph') > 0), sum(instr(cast(req_body as text), 'client_id=ctl-pc') > 0) from http_exchange")"

# replay --as client --url: the URL it stores (and says) has its signature redacted.
"$MCPTAP" replay -r "$db" -s 1 --as client --url "$UP/mcp?X-Amz-Signature=$P-replayurl&q=ctl-rq" > "$T/replay.out" 2> "$T/replay.err"
check "replay: the run stored" test "$(sql "$db" "select count(*) from replay_run where command like '%ctl-rq%'")" = 1
check_eq "replay: '$P-replayurl' is in none of the files, nor in what it said" 0 \
	"$(in_bytes "$P-replayurl" "$db" "$db-wal" "$db-shm" "$T/replay.out" "$T/replay.err")"

finish
