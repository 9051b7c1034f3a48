# tools-server.pl: a stdio MCP server whose tool calls end every way: echo
# answers, fail is an isError result, boom a JSON-RPC error, slow answers only
# after a cancel of id 5, hang never; a prompt, a resource that is not found,
# and ping. (t0330, t0350)
$| = 1;
my %late;
while (my $l = <STDIN>) {
	my ($id) = $l =~ /"id":(\d+)/;
	if ($l =~ /"method":"initialize"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"t0330","version":"1"}}}\n);
	} elsif ($l =~ /"name":"echo"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"hi"}]}}\n);
	} elsif ($l =~ /"name":"fail"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{"content":[{"type":"text","text":"it failed"}],"isError":true}}\n);
	} elsif ($l =~ /"name":"boom"/) {
		print qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32602,"message":"unknown tool"}}\n);
	} elsif ($l =~ /"method":"notifications\/cancelled".*"requestId":5\b/) {
		print qq({"jsonrpc":"2.0","id":5,"result":{"content":[]}}\n);   # an answer after the cancel
	} elsif ($l =~ /"method":"prompts\/get"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{"messages":[]}}\n);
	} elsif ($l =~ /"method":"resources\/read"/) {
		print qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32002,"message":"not found"}}\n);
	} elsif ($l =~ /"method":"ping"/) {
		print qq({"jsonrpc":"2.0","id":$id,"result":{}}\n);
	}
	# slow, hang and other notifications: no answer
}
