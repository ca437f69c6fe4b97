# test/citus/t/080_reconcile.pl
#    Reconciliation of unknown effects on a distributed install (SPEC §22,
#    docs/citus.md): effects of two types live on both workers, each
#    worker's dispatcher sends its own, every first POST gets a 500 (so the
#    effects become unknown), and each worker asks the status URL about the
#    unknown effects of its own shards: 200 → completed with the answer's
#    provider id, 404 → sent again once with the same key, then completed.
#    Each effect asked about exactly once, events effect_reconciled read on
#    the coordinator.
use strict;
use warnings;

use lib 'test/citus';
use lib 'test/t';
use CitusCluster;
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $cl = citus_cluster('recon', distribute => 1);
my $coord = $cl->{coord};
my $sink = start_sink('recon', 300);
my $base = $sink->{base};

$coord->safe_psql('app', qq{
SELECT idemgate.register_endpoint('rc_found', '$base/status/500', timeout => '2 seconds',
                                  status_url => '$base/ok?q={effect_id}');
SELECT idemgate.register_endpoint('rc_lost', '$base/seq/500,200', timeout => '2 seconds',
                                  status_url => '$base/status/404?q={effect_id}');
});
enqueue_effects($coord, 'found', 20, 'rc_found');
enqueue_effects($coord, 'lost', 20, 'rc_lost');

my @stored = split /\n/, $coord->safe_psql('app', q{
SELECT n.nodeport FROM idemgate.outbox o
  JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('idemgate.outbox', o.bucket)
  JOIN pg_dist_node n USING (groupid)
 GROUP BY n.nodeport});
is(scalar(@stored), 2, 'the effects live on both workers');

ok(poll_app($coord, "SELECT count(*) = 40 FROM idemgate.outbox WHERE state = 'completed'", 120),
	'all 40 effects completed after their look-ups, without an operator');
is($coord->safe_psql('app', q{
SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'rc_found' AND provider_id LIKE 'prov-%'}),
	'20', 'found: each completed with the provider id of its look-up');

my (%gets, %posts);
for my $r (@{ sink_requests($sink) })
{
	if ($r->{method} eq 'GET')
	{
		my ($id) = $r->{path} =~ /q=([0-9a-f-]{36})/;
		$gets{ $id // 'none' }++;
	}
	else
	{
		$posts{ $r->{idempotency_key} }++;
	}
}
is(scalar(keys %gets), 40, '40 effects asked about');
is(scalar(grep { $_ != 1 } values %gets), 0, 'each exactly once');
my %type_of = map { split /\|/ } split /\n/, $coord->safe_psql('app', 'SELECT effect_id, effect_type FROM idemgate.outbox');
is(join(',', map { $posts{$_} } grep { $type_of{$_} eq 'rc_found' } sort keys %type_of), join(',', ('1') x 20),
	'found: one POST each');
is(join(',', map { $posts{$_} } grep { $type_of{$_} eq 'rc_lost' } sort keys %type_of), join(',', ('2') x 20),
	'lost: sent again once each, with the same key');
is($coord->safe_psql('app', q{
SELECT count(*) FILTER (WHERE details->>'new_state' = 'completed') || ' '
       || count(*) FILTER (WHERE details->>'new_state' = 'pending')
  FROM idemgate.events WHERE kind = 'effect_reconciled'}),
	'20 20', 'events effect_reconciled (20 completed, 20 pending), read on the coordinator');
is($coord->safe_psql('app', q{
SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'found-%' AND state = 'completed'}),
	'20', 'the runs of the found effects completed');

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
