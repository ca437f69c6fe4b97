# test/t/151_purge_claim_race.pl
#    purge racing duplicate claims leaves nothing whose run is gone
#    (src/operations/retention.c; test/specs/purge_vs_claim.spec shows each order).
#    For 20 seconds, 5 clients claim 200 finished keys again and again
#    (duplicates, each writing a duplicate event while it holds the run),
#    while a sixth purges over and over, and a seventh puts finished runs
#    back in the past so that purge keeps taking them (a key purged, its
#    tombstone forgotten, is claimed afresh, and put back in the past in
#    turn). Afterwards no event, outbox row,
#    approval or dead letter of those keys is without its run. Before purge
#    locked its runs ahead of its snapshot, such a run left about one
#    orphan duplicate event every few seconds.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('purgerace');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 30\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION idemgate');

# 200 finished runs, each with a delivered effect and an earlier duplicate.
$node->safe_psql(
	'postgres', q{
DO $$
DECLARE c record; e record;
BEGIN
  FOR i IN 1..200 LOOP
    SELECT * INTO c FROM idemgate.claim('pr-' || i, '{}', '1 minute', 'pr');
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', 'pr', 'target', 't', 'payload', i));
  END LOOP;
  FOR e IN SELECT * FROM idemgate.claim_effects('pr', 1000) LOOP
    PERFORM idemgate.complete_effect(e.effect_id, e.lease_owner);
  END LOOP;
  FOR i IN 1..200 LOOP
    PERFORM idemgate.claim('pr-' || i, '{}', '1 minute', 'pr');
  END LOOP;
END $$;
UPDATE idemgate.runs SET updated_at = now() - interval '1 hour', created_at = now() - interval '1 hour';
});
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.runs WHERE state = 'completed'"),
	'200', '200 finished runs');

my $dir = $PostgreSQL::Test::Utils::tmp_check;
my %scripts = (
	'dup.sql' => "\\set k random(1, 200)\n"
	  . "SELECT outcome FROM idemgate.claim('pr-' || :k, '{}', '1 minute', 'pr');\n",
	# A run claimed afresh after its purge finishes, and is old at once.
	'age.sql' => "UPDATE idemgate.runs SET state = 'completed', lease_owner = NULL,"
	  . " updated_at = now() - interval '1 hour', created_at = now() - interval '1 hour'"
	  . " WHERE idempotency_key IN (SELECT idempotency_key FROM idemgate.runs"
	  . "  WHERE idempotency_key LIKE 'pr-%' AND (state = 'processing' OR updated_at > now() - interval '1 minute')"
	  . "  ORDER BY idempotency_key FOR UPDATE);\n",
	# Purge keeps a tombstone of each run (a purged key answers duplicate,
	# state purged); forgetting them at once lets a key be claimed afresh.
	'purge.sql' => "SELECT idemgate.purge('1 minute');\n"
	  . "SELECT idemgate.purge_tombstones('1 microsecond');\n");
for my $f (keys %scripts)
{
	open(my $fh, '>', "$dir/$f") or die;
	print $fh $scripts{$f};
	close $fh;
}
# Five clients claim, one ages, one purges (one purger, as in production).
my @common = ('pgbench', '-n', '-j', '1', '-T', '20', '--max-tries', '5',
	'-h', $node->host, '-p', $node->port);
my ($out, $err, $out2, $err2, $out3, $err3) = ('', '', '', '', '', '');
my $claimers = IPC::Run::start([ @common, '-c', '5', '-f', "$dir/dup.sql", 'postgres' ],
	'>', \$out, '2>', \$err);
my $ager = IPC::Run::start([ @common, '-c', '1', '-f', "$dir/age.sql", 'postgres' ],
	'>', \$out3, '2>', \$err3);
IPC::Run::run([ @common, '-c', '1', '-f', "$dir/purge.sql", 'postgres' ],
	'>', \$out2, '2>', \$err2);
$claimers->finish;
$ager->finish;
like($out3, qr/number of failed transactions: 0 /, 'no ageing failed') or diag($out3, $err3);
like($out2, qr/number of failed transactions: 0 /, 'no purge failed') or diag($out2, $err2);
like($out, qr/number of failed transactions: 0 /, 'no claim failed') or diag($out, $err);
my ($purges, $purged) = split /\|/, $node->safe_psql('postgres',
	"SELECT count(*), sum((details->>'runs')::int) FROM idemgate.events WHERE kind = 'purged'");
my $dups = $node->safe_psql('postgres',
	"SELECT count(*) FROM idemgate.events WHERE kind = 'duplicate' AND idempotency_key LIKE 'pr-%'");
diag("$purges purges took $purged runs; $dups duplicate events remain with their runs");
cmp_ok($purged, '>', 200, 'purge took runs again and again');

my $orphans = $node->safe_psql(
	'postgres', q{
SELECT coalesce(string_agg(what || ' ' || n, ', '), 'none') FROM (
  SELECT 'event ' || e.kind AS what, count(*) AS n FROM idemgate.events e
   WHERE e.idempotency_key IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM idemgate.runs r WHERE r.idempotency_key = e.idempotency_key)
   GROUP BY e.kind
  UNION ALL
  SELECT 'effect', count(*) FROM idemgate.outbox o
   WHERE NOT EXISTS (SELECT 1 FROM idemgate.runs r WHERE r.idempotency_key = o.idempotency_key)
  HAVING count(*) > 0
  UNION ALL
  SELECT 'approval', count(*) FROM idemgate.approvals a
   WHERE NOT EXISTS (SELECT 1 FROM idemgate.runs r WHERE r.idempotency_key = a.idempotency_key)
  HAVING count(*) > 0
  UNION ALL
  SELECT 'dead letter', count(*) FROM idemgate.dead_letters d
   WHERE NOT EXISTS (SELECT 1 FROM idemgate.runs r WHERE r.idempotency_key = d.idempotency_key)
  HAVING count(*) > 0) o});
is($orphans, 'none', 'no event, effect, approval or dead letter without its run');

$node->stop;
done_testing();
