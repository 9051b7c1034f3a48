# tools-client.pl MCPTAP DB SERVER: records SERVER with `MCPTAP record -w DB`,
# sending the lines below and waiting for an answer where one comes, so that
# the seqs are the same every run. (t0330, t0350)
use IPC::Open2;
my ($mcptap, $db, $server) = @ARGV;
my $pid = open2(my $out, my $in, $mcptap, 'record', '-w', $db, '--', 'perl', $server);
$in->autoflush(1);
my @steps = (
	[1, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'],
	[0, '{"jsonrpc":"2.0","method":"notifications/initialized"}'],
	[1, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}'],
	[1, '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{}}}'],
	[1, '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"boom","arguments":{}}}'],
	[0, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}'],
	[1, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"too slow"}}'],
	[0, '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"hang","arguments":{}}}'],
	[1, '{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"greet"}}'],
	[1, '{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///a"}}'],
	[1, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{}}}'],
	[1, '{"jsonrpc":"2.0","id":10,"method":"ping"}'],
	[0, '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"slow","arguments":{}}}'],
	[0, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11}}'],
);
for my $s (@steps) {
	print $in "$s->[1]\n";
	if ($s->[0]) { defined(<$out>) or die "no answer to $s->[1]\n" }
}
close $in;
1 while <$out>;
waitpid $pid, 0;
exit($? >> 8);
