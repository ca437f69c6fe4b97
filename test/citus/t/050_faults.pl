# test/citus/t/050_faults.pl
#    Faults on a distributed install (SPEC §16, "Faults"):
#    1. kill -9 of one worker's postmaster while requests to an endpoint
#       that cannot dedupe (honors_idempotency_key false, /delay/300) are in
#       flight, then a restart: no effect lost (each ends completed, or
#       unknown after at most one request), none sent twice, and the other
#       worker kept delivering while the first was down.
#    2. citus_move_shard_placement (block_writes) of a shard group holding
#       pending effects, from one worker to the other, while delivering:
#       none lost, none sent twice, and the moved effects are delivered.
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

alarm(600);    # this file needs more than the default limit

my $cl = citus_cluster('faults', distribute => 1, conf => { 'idemgate.max_in_flight' => 8 });
my $coord = $cl->{coord};
my ($w1, $w2) = @{ $cl->{workers} };
my $sink = start_sink('faults', 500);
my $base = $sink->{base};

# placement($type) → { effect_id => worker port } for effects of $type.
sub placement
{
	my ($type) = @_;
	return { map { split /\|/ } split /\n/, $coord->safe_psql('app', qq{
SELECT o.effect_id || '|' || n.nodeport FROM idemgate.outbox o
  JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('idemgate.outbox', o.bucket)
  JOIN pg_dist_node n USING (groupid)
 WHERE o.effect_type = '$type'}) };
}

# outcome($type) → (total, completed, unknown, other) read on the coordinator.
sub outcome
{
	my ($type) = @_;
	return split / /, $coord->safe_psql('app', qq{
SELECT count(*) || ' ' || count(*) FILTER (WHERE state = 'completed') || ' ' || count(*) FILTER (WHERE state = 'unknown')
       || ' ' || count(*) FILTER (WHERE state NOT IN ('completed', 'unknown'))
  FROM idemgate.outbox WHERE effect_type = '$type'});
}

# check_once($type, $ids): none sent twice, completed ones sent once with a
# 2xx, unknown ones at most once.
sub check_once
{
	my ($type, $label) = @_;
	my $by = requests_by_key($sink);
	my %state = map { split /\|/ } split /\n/, $coord->safe_psql('app',
		"SELECT effect_id || '|' || state FROM idemgate.outbox WHERE effect_type = '$type'");
	my @twice = grep { @{ $by->{$_} // [] } > 1 } keys %state;
	is(scalar(@twice), 0, "$label: no Idempotency-Key sent twice");
	diag("$label: sent twice: @twice[0 .. ($#twice > 4 ? 4 : $#twice)]") if @twice;
	my @bad = grep { $state{$_} eq 'completed' && !grep { $_->{status} >= 200 && $_->{status} < 300 } @{ $by->{$_} // [] } }
	  keys %state;
	is(scalar(@bad), 0, "$label: every completed effect got its 2xx at the sink");
}

# --- 1. kill -9 of a worker's postmaster ------------------------------------
register_endpoint($coord, 'plain', "$base/delay/300", timeout => '5 seconds');
enqueue_effects($coord, 'crash', 300, 'plain');
my $where = placement('plain');
my @on_w1 = grep { $where->{$_} == $w1->port } keys %$where;
my @on_w2 = grep { $where->{$_} == $w2->port } keys %$where;
diag(scalar(@on_w1) . ' effects on worker 1, ' . scalar(@on_w2) . ' on worker 2');
ok(@on_w1 > 50 && @on_w2 > 50, 'effects stored on both workers');

ok(poll_app($coord, "SELECT count(*) >= 40 FROM idemgate.outbox WHERE effect_type = 'plain' AND state = 'completed'", 60),
	'delivery under way on the workers');
my $by_before = requests_by_key($sink);
my $w1_sent_before = grep { @{ $by_before->{$_} // [] } } @on_w1;
cmp_ok($w1_sent_before, '<', scalar(@on_w1), 'worker 1 still has effects to send');
$w1->kill9;
my $killed_at = time;
diag("worker 1 killed (-9) after it had sent $w1_sent_before of " . scalar(@on_w1));
# Worker 2 keeps delivering while worker 1 is down.
sleep 4;
my $down_until = time;
my $by_down = requests_by_key($sink);
my @during = grep { my $t = $_->{t}; $t > $killed_at + 0.5 && $t < $down_until }
  map { @{ $by_down->{$_} // [] } } @on_w2;
diag(scalar(@during) . " requests of worker 2's effects arrived while worker 1 was down");
cmp_ok(scalar(@during), '>', 0, 'worker 2 kept delivering while worker 1 was down');
my @w1_during = grep { my $t = $_->{t}; $t > $killed_at + 1.5 && $t < $down_until }
  map { @{ $by_down->{$_} // [] } } @on_w1;
diag(scalar(@w1_during) . " requests of worker 1's effects arrived more than 1.5 s after its postmaster died");

# Restart worker 1 (its orphaned backends may take a moment to exit).
my $started = 0;
for (1 .. 30)
{
	last if ($started = $w1->start(fail_ok => 1));
	sleep 1;
}
ok($started, 'worker 1 restarted');
ok(dispatchers_running($w1), "worker 1's dispatcher runs again");

ok(poll_app($coord, "SELECT count(*) = 0 FROM idemgate.outbox WHERE effect_type = 'plain' AND state IN ('pending', 'sending')", 180),
	'no effect left pending or sending');
my ($total, $done, $unknown, $other) = outcome('plain');
diag("after the crash: $total effects, $done completed, $unknown unknown, $other other");
is($total, 300, 'none lost: 300 effects');
is($done + $unknown, 300, 'every effect completed or unknown');
check_once('plain', 'crash');
my $by = requests_by_key($sink);
my @unknown_ids = split /\n/, $coord->safe_psql('app',
	"SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'plain' AND state = 'unknown'");
is(scalar(grep { @{ $by->{$_} // [] } <= 1 } @unknown_ids), scalar(@unknown_ids),
	'each unknown effect had at most one request');
is(scalar(grep { $where->{$_} == $w2->port } @unknown_ids), 0, "none of worker 2's effects is unknown");

# --- 2. a shard move during delivery ----------------------------------------
register_endpoint($coord, 'mv', "$base/delay/200", timeout => '5 seconds');
# The shard group to move: the runs shard holding the most buckets of keys
# mv-1..mv-4000; 150 of its keys get effects, plus 150 keys
# elsewhere that keep both dispatchers busy.
my $shard = $coord->safe_psql('app', q{
SELECT s FROM (SELECT get_shard_id_for_distribution_column('idemgate.runs', idemgate.key_bucket('mv-' || i)) s
                 FROM generate_series(1, 4000) i) x
 GROUP BY s ORDER BY count(*) DESC LIMIT 1});
my ($src, $dst) = split /\|/, $coord->safe_psql('app', qq{
SELECT n.nodeport || '|' || (SELECT nodeport FROM pg_dist_node WHERE groupid > 0 AND nodeport <> n.nodeport LIMIT 1)
  FROM pg_dist_placement pl JOIN pg_dist_node n USING (groupid) WHERE pl.shardid = $shard});
diag("moving shard group of runs shard $shard from port $src to $dst");
$coord->safe_psql('app', qq{
DO \$\$
DECLARE c record; k text; n_in int := 0; n_out int := 0;
BEGIN
  FOR i IN 1..4000 LOOP
    k := 'mv-' || i;
    IF get_shard_id_for_distribution_column('idemgate.runs', idemgate.key_bucket(k)) = $shard THEN
      CONTINUE WHEN n_in >= 150; n_in := n_in + 1;
    ELSE
      CONTINUE WHEN n_out >= 150; n_out := n_out + 1;
    END IF;
    SELECT * INTO c FROM idemgate.claim(k, '{}');
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', 'mv', 'target', 't', 'payload', '{}'::jsonb));
  END LOOP;
END \$\$;});
my $moved_ids_sql = "SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'mv'"
  . " AND get_shard_id_for_distribution_column('idemgate.runs', bucket) = $shard";
my @moved = split /\n/, $coord->safe_psql('app', $moved_ids_sql);
is(scalar(@moved), 150, '150 effects in the shard group to move');
ok(poll_app($coord, "SELECT count(*) >= 20 FROM idemgate.outbox WHERE effect_type = 'mv' AND state = 'completed'", 60),
	'delivery under way');
my $pending_in_shard = $coord->safe_psql('app',
	"SELECT count(*) FROM idemgate.outbox WHERE effect_id IN ($moved_ids_sql) AND state = 'pending'");
cmp_ok($pending_in_shard, '>', 0, "the shard holds pending effects when the move starts ($pending_in_shard)");
my ($ret, $out, $err) = psql_result($coord,
	"SELECT citus_move_shard_placement($shard, '127.0.0.1', $src, '127.0.0.1', $dst, shard_transfer_mode => 'block_writes')");
is($ret, 0, 'citus_move_shard_placement succeeded') or diag($err);
is($coord->safe_psql('app', "SELECT n.nodeport FROM pg_dist_placement pl JOIN pg_dist_node n USING (groupid) WHERE pl.shardid = $shard"),
	$dst, 'the shard group is on the other worker now');
my $pending_after = $coord->safe_psql('app',
	"SELECT count(*) FROM idemgate.outbox WHERE effect_id IN ($moved_ids_sql) AND state = 'pending'");
diag("pending in the moved shard group: $pending_in_shard before the move, $pending_after right after");

ok(poll_app($coord, "SELECT count(*) = 0 FROM idemgate.outbox WHERE effect_type = 'mv' AND state IN ('pending', 'sending')", 180),
	'no effect left pending or sending after the move');
($total, $done, $unknown, $other) = outcome('mv');
diag("after the move: $total effects, $done completed, $unknown unknown, $other other");
is($total, 300, 'none lost: 300 effects');
is($done + $unknown, 300, 'every effect completed or unknown');
check_once('mv', 'move');
$by = requests_by_key($sink);
my %mstate = map { split /\|/ } split /\n/, $coord->safe_psql('app',
	"SELECT effect_id || '|' || state FROM idemgate.outbox WHERE effect_type = 'mv'");
my @lost_result = grep { $mstate{$_} ne 'completed' && grep { $_->{status} >= 200 && $_->{status} < 300 } @{ $by->{$_} // [] } }
  keys %mstate;
is(scalar(@lost_result), 0, 'no delivery result lost in the move (every effect the sink answered 2xx is completed)');
diag("answered 2xx but recorded $mstate{$_}: $_") for @lost_result;
is(scalar(grep { @{ $by->{$_} // [] } == 1 } @moved), 150, 'each moved effect reached the sink exactly once');
is(sink_stats($sink)->{keys_2xx_more_than_once}, 0, 'sink: no key got two 2xx');

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
