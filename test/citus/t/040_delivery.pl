# test/citus/t/040_delivery.pl
#    Delivery on a distributed install (SPEC §16): the effects are stored in
#    shards on the workers and each node's dispatcher delivers only the
#    effects on that node, so the coordinator (no shards) delivers none and
#    both workers deliver some; every effect reaches the sink exactly once.
#    Runs left approved with every effect settled are completed by the
#    safety net of the worker holding them, not by the coordinator.
#    Then the kill switch and a type pause, flipped 10 times each from the
#    coordinator under load (test/t/flip_switch.c, as in test/t/122): no
#    request's first byte reaches the sink after the switch-off (pause) call
#    returned and before the switch-on (resume) was sent, on any node.
use strict;
use warnings;

use lib 'test/citus';
use lib 'test/t';
use CitusCluster;
use DispatchHelpers;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $cl = citus_cluster('deliv', distribute => 1, conf => { 'idemgate.max_in_flight' => 32 });
my $coord = $cl->{coord};
my @workers = @{ $cl->{workers} };
my $sink = start_sink('deliv', 500);
my $base = $sink->{base};

# delivered_by($node): effects completed by the dispatchers running on
# $node (their pids, from the node's pg_stat_activity), read from
# dispatcher_status() on the node itself and on the coordinator.
sub delivered_by
{
	my ($n) = @_;
	my %pids = map { $_ => 1 } split /\n/, $n->safe_psql('app',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'idemgate dispatcher'");
	my %completed;
	for my $src ($n, $coord)
	{
		for (split /\n/, $src->safe_psql('app', 'SELECT pid, completed FROM idemgate.dispatcher_status()'))
		{
			my ($pid, $c) = split /\|/;
			$completed{$pid} = $c if $pids{$pid} && ($completed{$pid} // -1) < $c;
		}
	}
	my $sum = 0;
	$sum += $_ for values %completed;
	return $sum;
}

# --- 200 effects over 200 keys ----------------------------------------------
register_endpoint($coord, 'bulk', "$base/ok?kind=bulk");
enqueue_effects($coord, 'bulk', 200, 'bulk');
ok(poll_app($coord, "SELECT count(*) = 200 FROM idemgate.outbox WHERE effect_type = 'bulk' AND state = 'completed'", 120),
	'200 effects delivered');
my %ids = map { $_ => 1 } split /\n/, $coord->safe_psql('app',
	"SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'bulk'");
my $by = requests_by_key($sink);
is(scalar(grep { @{ $by->{$_} // [] } == 1 } keys %ids), 200, 'each of the 200 effects reached the sink exactly once');
is(scalar(grep { ($_->{path} // '') =~ /kind=bulk/ } @{ sink_requests($sink) }), 200, '200 requests in all');

diag('dispatcher_status() on the coordinator: '
	  . join('; ', split /\n/, $coord->safe_psql('app', 'SELECT * FROM idemgate.dispatcher_status()')));
my ($c_done, @w_done) = map { delivered_by($_) } $coord, @workers;
diag("completed by the coordinator's dispatcher: $c_done; by the workers': @w_done");
is($c_done, 0, "the coordinator's dispatcher delivered none");
cmp_ok($w_done[0], '>', 0, 'worker 1 delivered some');
cmp_ok($w_done[1], '>', 0, 'worker 2 delivered some');
is($w_done[0] + $w_done[1], 200, 'the workers delivered the 200 between them');
my @stored = split /\n/, $coord->safe_psql('app', q{
SELECT n.nodeport || ':' || count(*) FROM idemgate.outbox o
  JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('idemgate.outbox', o.bucket)
  JOIN pg_dist_node n USING (groupid)
 WHERE o.effect_type = 'bulk' GROUP BY n.nodeport ORDER BY 1});
diag("effects stored per worker port: @stored");
is(scalar(@stored), 2, 'the effects are stored on both workers');
my %stored_on = map { split /:/ } @stored;
is_deeply([ map { $stored_on{ $_->port } // 0 } @workers ], \@w_done,
	'each worker delivered exactly the effects stored on it');

# --- kill switch and pause under load ---------------------------------------
my $flip = "$PostgreSQL::Test::Utils::tmp_check/flip_switch";
my $incdir = `pg_config --includedir`;
my $libdir = `pg_config --libdir`;
chomp($incdir, $libdir);
system('cc', '-O2', "-I$incdir", '-o', $flip, 'test/t/flip_switch.c', "-L$libdir", '-lpq') == 0
  or BAIL_OUT('cannot build test/t/flip_switch.c');

sub flips
{
	my ($n, $off_sql, $on_sql, $on_ms) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $flip, $coord->connstr('app'), $n, 300, $on_ms // 400, $off_sql, $on_sql ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(180))
	  or die "flip_switch failed: $err";
	return [ map { my @f = split / /; [ @f[ 1 .. 4 ] ] } split /\n/, $out ];
}

sub late
{
	my ($windows, $kind) = @_;
	my @reqs = grep { defined $_->{rx} && ($_->{path} // '') =~ /kind=$kind/ } @{ sink_requests($sink) };
	my ($late, $loaded) = (0, 0);
	for my $w (@$windows)
	{
		my ($off_sent, $off_done, $on_sent) = @$w;
		$late += grep { $_->{rx} > $off_done && $_->{rx} < $on_sent } @reqs;
		# under load: a request started in the 0.5 s before the switch-off
		# was sent (a 0.1 s window missed flips made while sends were
		# flowing)
		$loaded++ if grep { $_->{rx} < $off_sent && $_->{rx} > $off_sent - 0.5 } @reqs;
	}
	return ($late, $loaded, scalar(@reqs));
}

# Each request takes 300 ms, so that 3,000 effects outlast the 10 flips
# (about 7 s): with the workers' dispatchers on their own shards
# (docs/citus.md, "Local shards"), 20 ms requests drained them in 3 s.
register_endpoint($coord, 'load', "$base/delay/300?kind=load");
register_endpoint($coord, 'paused', "$base/delay/300?kind=paused");
enqueue_effects($coord, "ks$_", 1000, 'load') for 1 .. 3;
ok(poll_app($coord, "SELECT count(*) >= 100 FROM idemgate.outbox WHERE effect_type = 'load' AND state = 'completed'", 60),
	'delivery under way');
my $w = flips(10,
	"SELECT idemgate.set_actions_enabled(false, 'tester', 'barrier drill')",
	"SELECT idemgate.set_actions_enabled(true, 'tester', 'barrier drill over')");
is(scalar(@$w), 10, '10 switch-offs');
my ($late, $loaded, $total) = late($w, 'load');
diag("kill switch: $total requests, $loaded of 10 switch-offs had a request start in the 500 ms before, $late late");
cmp_ok($loaded, '>=', 3, 'the switch-offs happened under load');
is($late, 0, 'no request started after a switch-off committed (any node)');

enqueue_effects($coord, "pz$_", 1000, 'paused') for 1 .. 3;
ok(poll_app($coord, "SELECT count(*) >= 100 FROM idemgate.outbox WHERE effect_type = 'paused' AND state = 'completed'", 60),
	'delivery of the paused type under way');
$w = flips(10,
	"SELECT idemgate.pause_effect_type('paused', 'tester', 'barrier drill')",
	"SELECT idemgate.resume_effect_type('paused', 'tester')");
($late, $loaded, $total) = late($w, 'paused');
diag("type pause: $total requests, $loaded of 10 pauses had a request start in the 500 ms before, $late late");
cmp_ok($loaded, '>=', 3, 'the pauses happened under load');
cmp_ok($total, '>', 0, 'the paused type was being delivered around the pauses');
is($late, 0, 'no request of the paused type started after the pause committed (any node)');

ok(poll_app($coord, "SELECT count(*) = 6200 FROM idemgate.outbox WHERE state = 'completed'", 240),
	'all 6200 effects delivered');
is($coord->safe_psql('app', 'SELECT count(*) FROM idemgate.outbox WHERE attempts <> 1'),
	'0', 'every effect delivered at its first counted attempt');
my $stats = sink_stats($sink);
is($stats->{distinct_keys}, 6200, '6200 distinct keys at the sink');
is($stats->{requests}, 6200, 'no request sent twice');
is($stats->{keys_2xx_more_than_once}, 0, 'none delivered twice');
is(delivered_by($coord), 0, "the coordinator's dispatcher still delivered none");

# --- settled runs: each worker completes those of its own shards ------------
# A run left approved with every effect settled (as a race before 1.2 could
# leave one) is completed by the safety net (docs/outbox.md) of the worker
# holding its shard, every 10 s, not by the coordinator's dispatcher.
my %log_at = map { $_->name => -s $_->logfile } @{ $cl->{nodes} };
register_endpoint($coord, 'settled', "$base/ok?kind=settled");
query($coord, q{SELECT idemgate.pause_effect_type('settled', 'tester', 'held for the safety net')});
is(query($coord, q{
SELECT count(*) FROM generate_series(1, 8) i,
  LATERAL idemgate.claim('settled-' || i, '{}') c,
  LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
    jsonb_build_object('type', 'settled', 'target', 't', 'payload', '{}'::jsonb)) e}), '8',
	'8 runs approved with one held effect each');
query($coord, q{UPDATE idemgate.outbox SET state = 'completed' WHERE effect_type = 'settled'});
ok(poll_app($coord, "SELECT count(*) = 8 FROM idemgate.runs WHERE idempotency_key LIKE 'settled-%'"
	  . " AND state = 'completed' AND result->'effects'->0->>'state' = 'completed'", 60),
	'the 8 runs whose effects were settled behind their backs are completed, with their result');
my %completed_in_log;
for my $n (@{ $cl->{nodes} })
{
	my $log = slurp_file($n->logfile, $log_at{ $n->name });
	my $sum = 0;
	$sum += $1 while $log =~ /idemgate: completed (\d+) approved runs? whose effects were all settled/g;
	$completed_in_log{ $n->name } = $sum;
}
diag('runs completed by the safety net, per node: '
	  . join(', ', map { "$_ $completed_in_log{$_}" } sort keys %completed_in_log));
is($completed_in_log{ $coord->name }, 0, "the coordinator's dispatcher completed none of them");
is($completed_in_log{ $workers[0]->name } + $completed_in_log{ $workers[1]->name }, 8,
	'the workers completed the 8 between them, each on its own shards');
is(sink_stats($sink)->{requests}, 6200, 'and sent nothing for them');

# --- a run whose effect failed for good, ended by its sibling's completion --
# Each run has an effect answered 400 (failed for good at once) and one
# answered 200 after 1.5 s. The second's completion is recorded on its
# shard's own tables with the rest of its batch on that shard
# (CompleteEffectsByShard), which ends the run failed_terminal with its
# state_changed event naming the failed effect, as on one node.
register_endpoint($coord, 'ft-bad', "$base/status/400?kind=ftbad", max_attempts => 1);
register_endpoint($coord, 'ft-good', "$base/delay/1500?kind=ftgood");
is(query($coord, q{
SELECT count(*) FROM generate_series(1, 6) i,
  LATERAL idemgate.claim('ft-' || i, '{}') c,
  LATERAL idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
    jsonb_build_array(
      jsonb_build_object('type', 'ft-bad', 'target', 't', 'payload', '{}'::jsonb),
      jsonb_build_object('type', 'ft-good', 'target', 't', 'payload', '{}'::jsonb))) e}), '6',
	'6 runs with a failing and a slow succeeding effect each');
ok(poll_app($coord, "SELECT count(*) = 6 FROM idemgate.runs WHERE idempotency_key LIKE 'ft-%'"
	  . " AND state = 'failed_terminal'", 60),
	'each run ends failed_terminal once its last effect completed');
is(query($coord, q{SELECT string_agg(o.effect_type || ':' || o.state, ',' ORDER BY o.effect_type)
  FROM idemgate.outbox o WHERE o.idempotency_key = 'ft-1'}), 'ft-bad:failed,ft-good:completed',
	'its effects: one failed, one completed');
is(query($coord, q{
SELECT count(*) FROM idemgate.events e
  JOIN idemgate.outbox o ON o.idempotency_key = e.idempotency_key AND o.bucket = e.bucket
                        AND o.effect_type = 'ft-bad'
 WHERE e.idempotency_key LIKE 'ft-%' AND e.kind = 'state_changed'
   AND e.details->>'to' = 'failed_terminal'
   AND e.details->'failed_effects' = jsonb_build_array(o.effect_id)}), '6',
	'and a state_changed event per run naming its failed effect');

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
