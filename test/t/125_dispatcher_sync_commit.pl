# test/t/125_dispatcher_sync_commit.pl
#    The dispatcher's commits are flushed even where synchronous_commit is
#    off for the cluster and for its database (docs/dispatcher.md: a claim
#    must be durable before its request is sent; bench/soak saw a crash
#    restart lose asynchronous claims and send those effects twice).
#    Measured by WAL syncs (pg_stat_wal.wal_sync on 15; on 18, which moved
#    them, pg_stat_io's fsyncs of object wal) with the WAL writer
#    slowed to one cycle per 10 s: 20 effects delivered one at a time
#    make at least 20 syncs (one per claim at least), while 20 client
#    transactions with synchronous_commit off make almost none.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = dispatch_node(
	'synccommit',
	'fsync' => 'on',    # test nodes run with fsync off: no syncs to count
	'synchronous_commit' => 'off',
	'wal_writer_delay' => '10s',
	'wal_writer_flush_after' => '1GB',
	'idemgate.poll_interval' => '100ms');
$node->safe_psql('app', 'ALTER DATABASE app SET synchronous_commit = off');
# A new dispatcher session reads the database setting.
my $old = $node->safe_psql('app', 'SELECT pid FROM idemgate.dispatcher_status() WHERE slot = 0');
$node->safe_psql('app', "SELECT pg_terminate_backend($old)");
ok( $node->poll_query_until('app',
		"SELECT count(*) = 1 FROM idemgate.dispatcher_status() WHERE pid IS NOT NULL AND pid <> $old"),
	'a dispatcher started under the database setting');
my $sink = start_sink('synccommit', 240);
register_endpoint($node, 'mail', "$sink->{base}/ok");
$node->safe_psql('app', 'CREATE TABLE scratch (i int)');
is($node->safe_psql('app', 'SHOW synchronous_commit'), 'off', 'clients commit asynchronously');

# wal_syncs reads the cluster's WAL syncs once every process has reported.
sub wal_syncs
{
	sleep 2;    # the dispatcher reports its statistics when idle
	$node->safe_psql('app', 'SELECT pg_stat_force_next_flush()');
	return $node->safe_psql('app',
		$node->safe_psql('app', 'SHOW server_version_num') >= 180000
		? q{SELECT sum(fsyncs)::bigint FROM pg_stat_io WHERE object = 'wal'}
		: 'SELECT wal_sync FROM pg_stat_wal');
}

my $s0 = wal_syncs();
$node->safe_psql('app', "INSERT INTO scratch VALUES ($_)") for 1 .. 20;
my $s1 = wal_syncs();
diag('20 client commits: ' . ($s1 - $s0) . ' WAL syncs');
cmp_ok($s1 - $s0, '<', 5, 'asynchronous client commits are not flushed one by one');

for my $i (1 .. 20)
{
	enqueue_effects($node, "sync$i", 1, 'mail');
	usleep(150_000);
}
ok( wait_until($node,
		"SELECT count(*) = 20 FROM idemgate.outbox WHERE state = 'completed'", 30),
	'20 effects delivered');
my $s2 = wal_syncs();
diag('20 deliveries, one at a time: ' . ($s2 - $s1) . ' WAL syncs');
cmp_ok($s2 - $s1, '>=', 20, 'every claim of the dispatcher was flushed at its commit');

stop_sink($sink);
$node->stop;
done_testing();
