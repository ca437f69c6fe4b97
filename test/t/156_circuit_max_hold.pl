# test/t/156_circuit_max_hold.pl
#    Nothing waits for ever in silence (SPEC §22): with a provider that
#    never comes back (always 503) and idemgate.circuit_max_hold at its
#    floor (1 minute), the effects held behind the open circuit become dead
#    letters as unavailable, naming the setting, about a minute after the
#    circuit opened; none is sent meanwhile but the burst and the probes.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = dispatch_node('maxhold', 'idemgate.poll_interval' => '100ms', 'idemgate.max_in_flight' => 4,
	'idemgate.circuit_max_hold' => '1min');
my $sink = start_sink('maxhold', 300);
register_endpoint($node, 'fax', "$sink->{base}/status/503", timeout => '2 seconds', max_attempts => 3);
my $t0 = time;
enqueue_effects($node, 'mh', 20, 'fax');

ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.endpoint_circuits", 30), 'the circuit opened');
my $opened = time;
sleep(30);
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE state = 'pending'"), '20',
	'30 s later all 20 still wait, none dead-lettered');
ok(wait_until($node, "SELECT count(*) = 20 FROM idemgate.dead_letters", 150), 'all 20 dead-lettered');
my $dead_after = time - $opened;
diag(sprintf('dead-lettered %.0f s after the circuit opened', $dead_after));
cmp_ok($dead_after, '>=', 55, 'not before circuit_max_hold');
cmp_ok($dead_after, '<=', 90, 'nor long after (its checks run every 10 s), the probed effect too');
is($node->safe_psql('app', q{
SELECT count(*) FROM idemgate.dead_letters
 WHERE error_class = 'unavailable' AND error LIKE 'held by the open circuit of its endpoint for longer than idemgate.circuit_max_hold%'}),
	'20', 'as unavailable, naming circuit_max_hold');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE state = 'failed'"), '20', 'the effects failed');
my $reqs = scalar(@{ sink_requests($sink) });
diag("requests in all: $reqs");
cmp_ok($reqs, '<=', 12 + 5, 'sent: the burst (at most three claims of 4) and the probes only');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.alert_instances WHERE alert = 'endpoint_down'"), '1',
	'endpoint_down still says the endpoint is down');

stop_sink($sink);
$node->stop;
done_testing();
