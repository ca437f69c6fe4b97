# test/t/110_destinations.pl
#    Destinations are checked on the address a request connects to (SPEC
#    §15), for every scheme, https included: a name that resolves to a
#    non-public address is refused before any connection unless the host is
#    listed in idemgate.allowed_http_hosts, and the effect is a rejected
#    failure (dead letter) naming the address.
#
#    Only loopback is used. Two listening sockets (127.0.0.1 and ::1) are
#    never accept()ed while the dispatcher works; afterwards every
#    connection the kernel completed is still in their backlogs, so
#    draining them counts exactly what reached them. The positive control
#    (the host listed) shows that a connection would be counted.
#    Before 1.1 the dispatcher opened a TLS connection to localhost
#    although it was not listed.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use IO::Socket::IP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Socket qw(SOMAXCONN);
use Test::More;

my $node = dispatch_node('destinations',
	'idemgate.poll_interval' => '100ms',
	'idemgate.allowed_http_hosts' => "'sink.example'");

# One port on both loopback addresses, so "localhost" (127.0.0.1 or ::1)
# always finds a listener.
my ($l4, $l6, $port);
for (1 .. 50)
{
	$l4 = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
		Listen => SOMAXCONN, ReuseAddr => 0) or die "listen 127.0.0.1: $@";
	$port = $l4->sockport;
	$l6 = IO::Socket::IP->new(LocalHost => '::1', LocalPort => $port,
		Listen => SOMAXCONN, ReuseAddr => 0);
	last if $l6;
	close $l4;
}
die 'no port free on both 127.0.0.1 and ::1' unless $l6;
$_->blocking(0) for ($l4, $l6);

# connections drains both backlogs and returns how many connections arrived.
sub connections
{
	my $n = 0;
	for my $l ($l4, $l6)
	{
		while (my $c = $l->accept)
		{
			$n++;
			close $c;
		}
	}
	return $n;
}

# outcome waits for the effect of type $type to settle and returns
# "state|error_class|error" of its dead letter (or its state).
sub outcome
{
	my ($type) = @_;
	wait_until($node,
		"SELECT state IN ('failed', 'unknown', 'completed') FROM idemgate.outbox WHERE effect_type = '$type'", 60)
	  or return 'not settled';
	return $node->safe_psql('app', qq{
		SELECT o.state || '|' || coalesce(d.error_class, '') || '|' || coalesce(d.error, o.last_error, '')
		FROM idemgate.outbox o LEFT JOIN idemgate.dead_letters d USING (effect_id)
		WHERE o.effect_type = '$type'});
}

# Registration: numeric non-public hosts are refused for https too, names
# are accepted (checked at connect time); plain http needs the host listed.
for my $url ("https://127.0.0.1:$port/", "https://[::1]:$port/",
	"https://[::ffff:127.0.0.1]:$port/", "https://127.1:$port/",
	"http://localhost:$port/", "http://127.0.0.1:$port/")
{
	my ($rc, $out, $err) = $node->psql('app',
		"SELECT idemgate.register_endpoint('probe', '$url')");
	like($err, qr/argument "url" is not allowed/, "register_endpoint refuses $url");
}
is(connections(), 0, 'registration connects nowhere');

# A name that resolves to loopback, not listed: https and a path, refused
# at connect time for every address of the name.
register_endpoint($node, 'by_name', "https://localhost:$port/hook",
	max_attempts => 1, timeout => '2 seconds');
enqueue_effects($node, 'by-name', 1, 'by_name');
like(outcome('by_name'),
	qr/^failed\|rejected\|destination address (127\.0\.0\.1|::1) is loopback; not listed in idemgate\.allowed_http_hosts/,
	'a name resolving to loopback over https is a rejected failure naming the address');
is($node->safe_psql('app', "SELECT attempts FROM idemgate.outbox WHERE effect_type = 'by_name'"),
	'1', 'rejected at once, not retried');
is(connections(), 0, 'nothing reached the loopback listeners');

# An endpoint registered while its numeric host was listed, then unlisted:
# refused before the send (the URL is checked again), no connection.
$node->append_conf('postgresql.conf', "idemgate.allowed_http_hosts = 'sink.example,127.0.0.1'\n");
$node->reload;
wait_until($node, "SELECT current_setting('idemgate.allowed_http_hosts') LIKE '%127.0.0.1%'", 10);
register_endpoint($node, 'unlisted', "https://127.0.0.1:$port/later",
	max_attempts => 1, timeout => '2 seconds');
$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(false, 'tap', 'unlist first')");
enqueue_effects($node, 'unlisted', 1, 'unlisted');
$node->append_conf('postgresql.conf', "idemgate.allowed_http_hosts = 'sink.example'\n");
$node->reload;
wait_until($node, "SELECT current_setting('idemgate.allowed_http_hosts') = 'sink.example'", 10);
sleep 1;    # the dispatcher reloads its configuration too
$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(true, 'tap', 'go')");
like(outcome('unlisted'), qr/^failed\|rejected\|endpoint URL no longer allowed: destination address 127\.0\.0\.1 is loopback/,
	'a numeric loopback host unlisted after registration is rejected before the send');
is(connections(), 0, 'still nothing reached the loopback listeners');

# Positive control: with localhost listed the same kind of endpoint does
# connect (the listener never answers the TLS handshake: a transport
# failure), so the count above would have seen a connection.
$node->append_conf('postgresql.conf', "idemgate.allowed_http_hosts = 'sink.example,localhost'\n");
$node->reload;
wait_until($node, "SELECT current_setting('idemgate.allowed_http_hosts') LIKE '%localhost%'", 10);
sleep 1;
register_endpoint($node, 'listed', "https://localhost:$port/ok",
	max_attempts => 1, timeout => '1 second');
enqueue_effects($node, 'listed', 1, 'listed');
like(outcome('listed'), qr/^failed\|transport\|/, 'a listed name is connected to (no TLS answer: transport)');
cmp_ok(connections(), '>=', 1, 'the listed host reached the loopback listener');

close $l4;
close $l6;
$node->stop;
done_testing();
