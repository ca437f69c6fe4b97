# test/t/080_hostile_response.pl
#    A provider that answers 2xx with a deeply nested JSON body (hostile or
#    broken) must not lose the outcome: the provider-id parser used to hit
#    "stack depth limit exceeded", the outcome was never recorded and the
#    delivered effect ended up unknown when its lease expired.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# A one-process HTTP server: every POST gets 200 and 200,000 '['. It stops
# by itself after 120 s.
my $listener = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => 0,
	Listen => 16,
	ReuseAddr => 1) or die "listen: $!";
my $port = $listener->sockport;
my $pid = fork();
die "fork: $!" unless defined $pid;
if ($pid == 0)
{
	alarm 120;
	my $body = '[' x 200_000;
	while (my $c = $listener->accept)
	{
		my ($head, $len) = ('', 0);
		while (my $line = <$c>)
		{
			$len = $1 if $line =~ /^Content-Length:\s*(\d+)/i;
			last if $line eq "\r\n";
		}
		read($c, my $req, $len) if $len;
		print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		  . "Content-Length: " . length($body) . "\r\nConnection: close\r\n\r\n$body";
		close $c;
	}
	exit 0;
}
close $listener;

my $node = dispatch_node('hostile');
register_endpoint($node, 'deep', "http://127.0.0.1:$port/deep");
enqueue_effects($node, 'deep', 3, 'deep');
ok( wait_until(
		$node,
		"SELECT count(*) = 3 FROM idemgate.outbox WHERE effect_type = 'deep' AND state = 'completed'",
		60),
	'2xx with a deeply nested body: the effects are completed');
is( $node->safe_psql('app',
		"SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'deep' AND provider_id IS NOT NULL"),
	'0', 'no provider id taken from the body');
unlike(slurp_file($node->logfile), qr/stack depth limit exceeded/,
	'no stack depth error in the log');

kill 'TERM', $pid;
waitpid($pid, 0);
$node->stop;
done_testing();
