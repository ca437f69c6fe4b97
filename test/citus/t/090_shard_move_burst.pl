# test/citus/t/090_shard_move_burst.pl
#    A shard move during a burst of completions (SPEC §23). Worker
#    dispatchers write their completions to their own shard placements as
#    local tables (src/citus/local_shards.c); a completion written to the
#    old placement after Citus copied it would be lost on the new one, and
#    the effect sent again. citus_move_shard_placement (block_writes, then
#    the default logical replication back) of a shard group while its
#    worker completes hundreds of effects a second: none lost, none sent
#    twice, every effect the sink answered 2xx is completed, and the worker
#    did use its placement directly.
use strict;
use warnings;

use lib 'test/citus';
use lib 'test/t';
use CitusCluster;
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

alarm(600);

my $cl = citus_cluster('moveburst', distribute => 1,
	conf => { 'idemgate.max_in_flight' => 16, 'log_min_messages' => 'debug1' });
my $coord = $cl->{coord};
my $sink = start_sink('moveburst', 400);
my $base = $sink->{base};
# 50 ms per request, 16 in flight: about 300 completions a second, so that
# 1,500 effects outlast the start of the move.
register_endpoint($coord, 'burst', "$base/delay/50", timeout => '5 seconds');

# The shard group: the runs shard holding the most of keys mb-1..mb-6000.
my $shard = $coord->safe_psql('app', q{
SELECT s FROM (SELECT get_shard_id_for_distribution_column('idemgate.runs', idemgate.key_bucket('mb-' || i)) s
                 FROM generate_series(1, 6000) i) x
 GROUP BY s ORDER BY count(*) DESC LIMIT 1});
my $where_sql = "SELECT n.nodeport FROM pg_dist_placement pl JOIN pg_dist_node n USING (groupid) WHERE pl.shardid = $shard";
my $src = $coord->safe_psql('app', $where_sql);
my ($src_node) = grep { $_->port == $src } @{ $cl->{workers} };
my ($dst_node) = grep { $_->port != $src } @{ $cl->{workers} };
my $dst = $dst_node->port;

# In the shard group, 1,500 effects per round, held by the kill switch
# until the burst starts.
my $moved_ids_sql = "SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'burst'"
  . " AND get_shard_id_for_distribution_column('idemgate.runs', bucket) = $shard";
my $round = 0;

sub burst_then_move
{
	my ($from, $to, $mode, $label) = @_;
	$round++;
	$coord->safe_psql('app', "SELECT idemgate.set_actions_enabled(false, 'tester', 'hold the burst')");
	$coord->safe_psql('app', qq{
DO \$\$
DECLARE c record; k text; n int := 0;
BEGIN
  FOR i IN 1..200000 LOOP
    k := 'mb$round-' || i;
    CONTINUE WHEN get_shard_id_for_distribution_column('idemgate.runs', idemgate.key_bucket(k)) <> $shard;
    n := n + 1;
    EXIT WHEN n > 1500;
    SELECT * INTO c FROM idemgate.claim(k, '{}');
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', 'burst', 'target', 't', 'payload', '{}'::jsonb));
  END LOOP;
END \$\$;});
	$coord->safe_psql('app', "SELECT idemgate.set_actions_enabled(true, 'tester', 'burst')");
	ok(poll_app($coord, "SELECT count(*) >= " . (($round - 1) * 1500 + 30)
		  . " FROM idemgate.outbox WHERE effect_type = 'burst' AND state = 'completed'", 60),
		"$label: completions under way");
	my $pending = $coord->safe_psql('app',
		"SELECT count(*) FROM idemgate.outbox WHERE effect_id IN ($moved_ids_sql) AND state IN ('pending', 'sending')");
	cmp_ok($pending, '>', 100, "$label: the shard group still has effects to complete when the move starts ($pending)");
	my ($ret, $out, $err) = psql_result($coord,
		"SELECT citus_move_shard_placement($shard, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode => '$mode')");
	is($ret, 0, "$label: citus_move_shard_placement ($mode) succeeded") or diag($err);
	is($coord->safe_psql('app', $where_sql), $to, "$label: the shard group is on port $to now");
	my $after = $coord->safe_psql('app',
		"SELECT count(*) FROM idemgate.outbox WHERE effect_id IN ($moved_ids_sql) AND state IN ('pending', 'sending')");
	diag("$label: $pending to complete when the move started, $after right after it");
	ok(poll_app($coord, "SELECT count(*) = 0 FROM idemgate.outbox WHERE effect_type = 'burst' AND state IN ('pending', 'sending')", 180),
		"$label: nothing left pending or sending");
}

burst_then_move($src, $dst, 'block_writes', 'move 1');
burst_then_move($dst, $src, 'force_logical', 'move 2');

my @ids = split /\n/, $coord->safe_psql('app', $moved_ids_sql);
is(scalar(@ids), 3000, 'none lost: 3,000 effects in the shard group');
my %state = map { split /\|/ } split /\n/, $coord->safe_psql('app',
	"SELECT effect_id || '|' || state FROM idemgate.outbox WHERE effect_type = 'burst'");
is(scalar(grep { $_ eq 'completed' } values %state), 3000, 'every effect completed');
my $by = requests_by_key($sink);
my @twice = grep { @{ $by->{$_} // [] } > 1 } keys %state;
is(scalar(@twice), 0, 'no effect sent twice');
diag("sent twice: @twice[0 .. ($#twice > 4 ? 4 : $#twice)]") if @twice;
my @lost = grep { $state{$_} ne 'completed' && grep { $_->{status} >= 200 && $_->{status} < 300 } @{ $by->{$_} // [] } }
  keys %state;
is(scalar(@lost), 0, 'no completion lost in a move (every 2xx answered is completed)');
is(sink_stats($sink)->{keys_2xx_more_than_once}, 0, 'sink: no key got two 2xx');

# Calls made on the worker that holds their key, each its own transaction:
# the claim's insert, the effect's insert (a column list after the table's
# name) and the completion run there on the shard tables.
my $holder = $coord->safe_psql('app', $where_sql);
my ($hnode) = grep { $_->port == $holder } @{ $cl->{workers} };
my $key = $coord->safe_psql('app', qq{
SELECT k FROM (SELECT 'mb-local-' || i AS k FROM generate_series(1, 100000) i) x
 WHERE get_shard_id_for_distribution_column('idemgate.runs', idemgate.key_bucket(k)) = $shard LIMIT 1});
my ($owner, $version) = split /\|/, $hnode->safe_psql('app',
	"SELECT lease_owner || '|' || version FROM idemgate.claim('$key', '{\"n\": 1}')");
ok($owner ne '', "claim on the worker holding the key ($key)");
my $eid = $hnode->safe_psql('app', "SELECT effect_ids[1] FROM idemgate.enqueue_effect('$key', '$owner', $version,"
	  . " '{\"type\": \"burst\", \"target\": \"local\", \"payload\": {}}')");
ok(poll_app($coord, "SELECT state = 'completed' FROM idemgate.outbox WHERE effect_id = '$eid'", 60),
	'an effect enqueued on that worker is delivered and completed');
is(scalar(@{ requests_by_key($sink)->{$eid} // [] }), 1, 'sent once');

# The path under test was taken: both workers' dispatchers found shards of
# runs placed on them and ran their statements there directly.
for my $w (@{ $cl->{workers} })
{
	like(slurp_file($w->logfile), qr/idemgate: [1-9]\d* of the \d+ shards of idemgate\.runs are placed on this node/,
		'worker on port ' . $w->port . ' ran statements on its own placements');
}

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
