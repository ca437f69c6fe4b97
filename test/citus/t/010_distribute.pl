# test/citus/t/010_distribute.pl
#    idemgate.distribute() (SPEC §16) on a database that already holds data:
#    claims, an enqueued effect, an approval, a dead letter, events,
#    endpoints, a pause and a watched workflow are made on the coordinator
#    first. After distribute() every row is still there (read on the
#    coordinator), the per-run tables are hash-distributed by bucket in one
#    colocation group with shards on both workers, the configuration tables
#    are reference tables, and ids and tokens made before still work. A
#    second call only says so (NOTICE); on a worker, and on a server
#    without Citus, it is refused with 0A000. Every node's dispatcher polls
#    every 10 ms through it, and no node logs a deadlock.
use strict;
use warnings;

use lib 'test/citus';
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

# Dispatchers that poll every 10 ms on every node: distribute() must not
# deadlock with their rounds (it locks every table at once or waits, and a
# worker's dispatcher leaves its tables alone until distribute() is done).
my $cl = citus_cluster('dist', conf => { 'idemgate.poll_interval' => '10ms' });
my $coord = $cl->{coord};

my @per_run = qw(runs outbox approvals dead_letters events tombstones);
my @reference = qw(endpoints control watched_workflows bundle_members granted_bundles
  paused_effect_types alert_state effect_type_grants effect_type_policies
  effect_type_rollup metrics_rollup run_metrics_rollup installation_secret endpoint_circuits);

# --- data before distribute ----------------------------------------------
$coord->safe_psql('app', q{
SELECT idemgate.register_endpoint('pre_sent', 'http://127.0.0.1:9/none');
SELECT idemgate.pause_effect_type('pre_sent', 'tester', 'kept paused');
SELECT idemgate.watch_workflow('pre-wf', '1 hour');
SELECT (idemgate.claim('pre-' || i, jsonb_build_object('i', i), workflow => 'pre-wf')).outcome
  FROM generate_series(1, 20) i;
SELECT outcome FROM idemgate.claim('pre-1', '{"i": 1}');   -- a duplicate (an event)
});
# An enqueued effect of a type nobody sends (it stays pending).
my ($owner, $version) = split /\|/, $coord->safe_psql('app',
	"SELECT lease_owner, version FROM idemgate.runs WHERE idempotency_key = 'pre-2'");
my $pre_effect = $coord->safe_psql('app',
	"SELECT effect_ids[1] FROM idemgate.enqueue_effect('pre-2', '$owner', $version,"
	  . " '{\"type\": \"pre_pull\", \"target\": \"t-2\", \"payload\": {\"x\": 2}}')");
like($pre_effect, qr/^[0-9a-f-]{36}$/, 'effect enqueued before distribute');
# An approval.
($owner, $version) = split /\|/, $coord->safe_psql('app',
	"SELECT lease_owner, version FROM idemgate.runs WHERE idempotency_key = 'pre-3'");
my $pre_token = $coord->safe_psql('app',
	"SELECT token FROM idemgate.request_approval('pre-3', '$owner', $version,"
	  . " '{\"type\": \"pre_pull\", \"target\": \"t-3\", \"payload\": {\"x\": 3}}', requested_by => 'alice')");
is(length($pre_token), 43, 'single-node token before distribute: 43 characters');
# A dead letter (terminal failure of a run).
($owner, $version) = split /\|/, $coord->safe_psql('app',
	"SELECT lease_owner, version FROM idemgate.runs WHERE idempotency_key = 'pre-4'");
is($coord->safe_psql('app',
	"SELECT idemgate.fail('pre-4', '$owner', $version, 'bad_input', 'broken', false)"),
	'failed_terminal', 'run failed terminally before distribute');

# A run finished and purged (1.3: its tombstone stays).
($owner, $version) = split /\|/, $coord->safe_psql('app',
	"SELECT lease_owner, version FROM idemgate.runs WHERE idempotency_key = 'pre-20'");
$coord->safe_psql('app', "SELECT idemgate.cas_transition('pre-20', '$owner', $version, 'completed')");
$coord->safe_psql('app', "UPDATE idemgate.runs SET updated_at = now() - interval '2 days', created_at = now() - interval '2 days'"
	  . " WHERE idempotency_key = 'pre-20'");
is($coord->safe_psql('app', "SELECT idemgate.purge('1 day')"), '1', 'a run purged before distribute');
my $count_sql = join(' || \' \' || ',
	map { "(SELECT count(*) FROM idemgate.$_)" } @per_run, @reference);
my $before = $coord->safe_psql('app', "SELECT $count_sql");
my %before;
@before{ @per_run, @reference } = split / /, $before;
cmp_ok($before{$_}, '>', 0, "$_ has rows before distribute") for @per_run, qw(endpoints paused_effect_types watched_workflows);

# --- distribute ------------------------------------------------------------
# A transaction that wrote one table when distribute() began and reads
# another after, as the housekeeping's publish_alerts() does (alert_state,
# then the outbox): distribute() takes every table at once or none, so it
# never holds one such a transaction waits for. It used to lock the
# per-run tables first, then wait for the writer to make alert_state a
# reference table: a deadlock.
my $reader = $coord->background_psql('app');
$reader->query_safe('BEGIN');
$reader->query_safe('LOCK TABLE idemgate.alert_state IN ROW EXCLUSIVE MODE');
my ($dout, $derr) = ('', '');
my $dist = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $coord->connstr('app'),
		'-c', 'SELECT idemgate.distribute()' ],
	'>', \$dout, '2>', \$derr, IPC::Run::timeout(240));
usleep(1_500_000);	# distribute() is trying (past a deadlock_timeout)
my $later = eval { $reader->query_safe('SELECT count(*) FROM idemgate.outbox') };
like($later // $@, qr/^\d+$/, 'the reader goes on reading while distribute() waits for it');
$reader->query_safe('COMMIT');
$reader->quit;
my $ret = $dist->finish ? 0 : 1;
my ($out, $err);
is($ret, 0, 'distribute() succeeds on the coordinator once the reader is done') or diag($derr);
for my $n (@{ $cl->{nodes} })
{
	unlike(slurp_file($n->logfile), qr/deadlock/,
		'no deadlock between distribute() and the dispatchers on ' . $n->name);
}

my $after = $coord->safe_psql('app', "SELECT $count_sql");
my %after;
@after{ @per_run, @reference } = split / /, $after;
# alert_state and the rollups are kept up by the launcher meanwhile: rows
# may be added, none may go.
my %grows = map { $_ => 1 } qw(alert_state effect_type_rollup metrics_rollup run_metrics_rollup installation_secret);
for (@per_run, @reference)
{
	if ($grows{$_}) { cmp_ok($after{$_}, '>=', $before{$_}, "$_: rows kept ($before{$_})") }
	else { is($after{$_}, $before{$_}, "$_: rows kept ($before{$_})") }
}

my $part_sql = q{
SELECT c.relname || ':' || p.partmethod::text || ':' || coalesce(column_to_column_name(p.logicalrelid, p.partkey), '') || ':' || p.colocationid
  FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
 WHERE c.relnamespace = 'idemgate'::regnamespace ORDER BY 1};
my $part = $coord->safe_psql('app', $part_sql);
my %part = map { my @f = split /:/; ($f[0] => { method => $f[1], column => $f[2], coloc => $f[3] }) }
  split /\n/, $part;
for my $t (@per_run)
{
	is($part{$t}{method} // 'local', 'h', "$t is hash-distributed");
	is($part{$t}{column} // '', 'bucket', "$t is distributed by bucket");
}
my %coloc = map { ($part{$_}{coloc} // "none-$_") => 1 } @per_run;
is(scalar(keys %coloc), 1, 'the per-run tables are in one colocation group');
is($part{$_}{method} // 'local', 'n', "$_ is a reference table") for @reference;
my @local = split /\n/, $coord->safe_psql('app', q{
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'idemgate'::regnamespace AND c.relkind IN ('r', 'p')
   AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid) ORDER BY 1});
is_deeply(\@local, [], 'no idemgate table left local to the coordinator');

is($coord->safe_psql('app', q{
SELECT count(DISTINCT n.nodeport) || ' ' || count(*) FILTER (WHERE n.groupid = 0) || ' ' || count(DISTINCT s.shardid)
  FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid) JOIN pg_dist_node n USING (groupid)
 WHERE s.logicalrelid = 'idemgate.runs'::regclass}),
	'2 0 32', 'runs: 32 shards, placed on both workers, none on the coordinator');
my @spread = split /\n/, $coord->safe_psql('app', q{
SELECT n.nodeport || ':' || count(*)
  FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid) JOIN pg_dist_node n USING (groupid)
 WHERE s.logicalrelid = 'idemgate.runs'::regclass GROUP BY n.nodeport ORDER BY 1});
diag("runs shards per worker port: @spread");
is($coord->safe_psql('app', q{
SELECT count(DISTINCT n.nodeport) FROM idemgate.runs r
  JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('idemgate.runs', r.bucket)
  JOIN pg_dist_node n USING (groupid)}),
	'2', 'the 20 runs sit on both workers');

is($coord->safe_psql('app',
	'SELECT count(*) FROM idemgate.runs WHERE bucket IS DISTINCT FROM idemgate.key_bucket(idempotency_key)'),
	'0', 'runs.bucket = key_bucket(idempotency_key) for the rows kept');
is($coord->safe_psql('app', q{
SELECT count(*) FROM idemgate.outbox WHERE bucket IS DISTINCT FROM idemgate.key_bucket(idempotency_key)}),
	'0', 'outbox.bucket = key_bucket(idempotency_key) for the rows kept');
is($coord->safe_psql('app',
	"SELECT state FROM idemgate.runs WHERE idempotency_key = 'pre-3'"),
	'awaiting_human', 'run states kept');
is($coord->safe_psql('app', 'SELECT idemgate.actions_enabled()'), 't',
	'the kill switch (control) still reads on');
is($coord->safe_psql('app', "SELECT count(*) FROM idemgate.paused_effect_types WHERE effect_type = 'pre_sent'"),
	'1', 'the pause is kept');

# --- ids and tokens from before distribute still work ----------------------
is(query($coord, "SELECT status FROM idemgate.peek_approval('$pre_token')"),
	'pending', 'peek_approval of a token made before distribute');
is(query($coord,
	"SELECT outcome || ' ' || cardinality(effect_ids) FROM idemgate.consume_approval('$pre_token', 'approve', 'bob')"),
	'approved 1', 'consume_approval of a token made before distribute');
my $pulled = query($coord,
	"SELECT effect_id || '|' || lease_owner FROM idemgate.claim_effects('pre_pull', 10) WHERE effect_id = '$pre_effect'");
my ($eid, $eowner) = split /\|/, $pulled;
is($eid // '', $pre_effect, 'claim_effects hands out the effect enqueued before distribute');
$eowner = '00000000-0000-0000-0000-000000000000' unless ($eowner // '') =~ /^[0-9a-f-]{36}$/;
is(query($coord, "SELECT idemgate.complete_effect('$pre_effect', '$eowner', 'prov-pre')"),
	't', 'complete_effect of an effect id made before distribute');
is(query($coord, "SELECT state FROM idemgate.runs WHERE idempotency_key = 'pre-2'"),
	'completed', 'its run completed');

# --- a second call: NOTICE, nothing changes --------------------------------
my $counts2 = $coord->safe_psql('app', "SELECT $count_sql");
($ret, $out, $err) = psql_result($coord, 'SELECT idemgate.distribute()');
is($ret, 0, 'second distribute() does not fail');
like($err, qr/NOTICE/, 'second distribute() says so with a NOTICE');
diag("second call: $err");
is($coord->safe_psql('app', $part_sql), $part, 'pg_dist_partition unchanged');
is($coord->safe_psql('app', "SELECT (SELECT count(*) FROM idemgate.runs) || ' ' || (SELECT count(*) FROM idemgate.outbox) || ' ' || (SELECT count(*) FROM idemgate.endpoints)"),
	join(' ', (split / /, $counts2)[0, 1, scalar(@per_run)]), 'row counts unchanged');
is($coord->safe_psql('app', "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'idemgate.runs'::regclass"),
	'32', 'shards unchanged');

# --- refused on a worker and without Citus -------------------------------
($ret, $out, $err) = psql_result($cl->{workers}[0], 'SELECT idemgate.distribute()');
isnt($ret, 0, 'distribute() on a worker fails');
like($err, qr/ERROR:\s+0A000/, 'on a worker: SQLSTATE 0A000');
diag("on a worker: $err");

my $plain = plain_node('dist_plain');
($ret, $out, $err) = psql_result($plain, 'SELECT idemgate.distribute()');
isnt($ret, 0, 'distribute() without Citus fails');
like($err, qr/ERROR:\s+0A000/, 'without Citus: SQLSTATE 0A000');
like($err, qr/citus/i, 'without Citus: the message names Citus');
diag("without Citus: $err");
is($plain->safe_psql('app', "SELECT outcome FROM idemgate.claim('plain-1', '{}')"),
	'claimed', 'the plain server still works');
$plain->stop;

$_->stop for reverse @{ $cl->{nodes} };
done_testing();
