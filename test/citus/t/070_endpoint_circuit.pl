# test/citus/t/070_endpoint_circuit.pl
#    Endpoint health on a distributed install (SPEC §22, docs/citus.md): the
#    effects of one type live on both workers and each worker's dispatcher
#    sends its own; a provider down for 20 s opens the type's circuit, one
#    row of a reference table that every node reads, so both workers hold
#    their effects; one node's probe closes it for all once the provider is
#    back. 0 dead letters, each effect answered 200 exactly once, the
#    circuit's events recorded once each, endpoint_health read on the
#    coordinator.
use strict;
use warnings;

use lib 'test/citus';
use lib 'test/t';
use CitusCluster;
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $cl = citus_cluster('circ', distribute => 1, conf => { 'idemgate.max_in_flight' => 8 });
my $coord = $cl->{coord};
my $sink = start_sink('circ', 300);
my $base = $sink->{base};
my $outage_s = 20;

register_endpoint($coord, 'crm', "$base/outage/" . ($outage_s * 1000), timeout => '2 seconds', max_attempts => 3);
enqueue_effects($coord, 'circ', 60, 'crm');

my $opened = 0;
my $t0 = time;
while (time - $t0 < 30)
{
	$opened = 1 if $coord->safe_psql('app', "SELECT count(*) FROM idemgate.endpoint_circuits") eq '1';
	last if $opened;
	usleep(200_000);
}
ok($opened, 'the circuit opened (a row of the reference table, read on the coordinator)');
my $health = $coord->safe_psql('app',
	"SELECT state <> 'closed', waiting > 0 FROM idemgate.endpoint_health WHERE effect_type = 'crm'");
is($health, 't|t', 'endpoint_health on the coordinator: open, effects waiting');
my @stored = split /\n/, $coord->safe_psql('app', q{
SELECT n.nodeport FROM idemgate.outbox o
  JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('idemgate.outbox', o.bucket)
  JOIN pg_dist_node n USING (groupid)
 WHERE o.effect_type = 'crm' GROUP BY n.nodeport});
is(scalar(@stored), 2, 'the effects live on both workers');

ok(poll_app($coord, "SELECT count(*) = 60 FROM idemgate.outbox WHERE effect_type = 'crm' AND state = 'completed'", 240),
	'all 60 effects delivered once the provider is back, without an operator');
is($coord->safe_psql('app', 'SELECT count(*) FROM idemgate.dead_letters'), '0', '0 dead letters');
is($coord->safe_psql('app', 'SELECT count(*) FROM idemgate.endpoint_circuits'), '0', 'the circuit closed');

my @reqs = sort { $a->{rx} <=> $b->{rx} } grep { defined $_->{rx} } @{ sink_requests($sink) };
my %ok;
$ok{ $_->{idempotency_key} }++ for grep { ($_->{status} // 0) == 200 } @reqs;
is(scalar(keys %ok), 60, '60 effects answered 200');
is(scalar(grep { $_ != 1 } values %ok), 0, 'each exactly once');
my $start = $reqs[0]{rx};
my @probes = grep { $_->{rx} >= $start + 2 && $_->{rx} < $start + $outage_s } @reqs;
diag(sprintf('outage: %d requests in all, %d after the first burst and before the provider came back',
	scalar(@reqs), scalar(@probes)));
cmp_ok(scalar(@probes), '<=', 4, 'after the burst, probes only (5 s, 10 s steps), whichever node sends them');

my %events = map { split /\|/ } split /\n/, $coord->safe_psql('app', q{
SELECT kind, count(*) FROM idemgate.events WHERE kind LIKE 'endpoint_circuit_%' GROUP BY kind});
is($events{endpoint_circuit_opened}, 1, 'opened once for the cluster');
is($events{endpoint_circuit_closed}, 1, 'closed once');

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
