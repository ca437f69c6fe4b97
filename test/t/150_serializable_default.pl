# test/t/150_serializable_default.pl
#    The dispatcher's transactions do not depend on
#    default_transaction_isolation (src/delivery/worker_transactions.c, RunInTransaction):
#    every transaction it and the launcher start is READ COMMITTED. With
#    default_transaction_isolation = serializable for the whole cluster,
#    while a client keeps enqueueing in SERIALIZABLE transactions and a
#    SERIALIZABLE transaction stays open (so that PostgreSQL keeps the
#    predicate locks of every serializable transaction that overlaps it):
#    - no dispatcher ever holds a predicate lock (SIReadLock): none of its
#      transactions is serializable;
#    - every effect is delivered exactly once to the loopback sink, at its
#      first attempt, and every run, those with three effects too, ends
#      completed;
#    - the kill switch is still a barrier (test/t/122_killswitch_barrier.pl):
#      no request's first byte reaches the sink after
#      set_actions_enabled(false) has committed.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = dispatch_node(
	'serial',
	'default_transaction_isolation' => "'serializable'",
	'log_min_messages' => 'warning',    # errors in the log (see the end)
	'idemgate.poll_interval' => '100ms',
	'idemgate.max_in_flight' => '32');
is($node->safe_psql('app', 'SHOW default_transaction_isolation'), 'serializable',
	'the cluster default is serializable');
is($node->safe_psql('app', 'SHOW transaction_isolation'), 'serializable',
	'and a client transaction is serializable');

my $sink = start_sink('serial', 400);
my $base = $sink->{base};
register_endpoint($node, 'ser', "$base/delay/40?kind=ser");

my $flip = "$PostgreSQL::Test::Utils::tmp_check/flip_switch";
my $incdir = `pg_config --includedir`;
my $libdir = `pg_config --libdir`;
chomp($incdir, $libdir);
system('cc', '-O2', "-I$incdir", '-o', $flip, 'test/t/flip_switch.c', "-L$libdir", '-lpq') == 0
  or BAIL_OUT('cannot build test/t/flip_switch.c');

# A serializable transaction left open: the predicate locks of every
# serializable transaction that commits meanwhile are kept until it ends.
my $open = $node->background_psql('app');
$open->query_safe('BEGIN ISOLATION LEVEL SERIALIZABLE');
$open->query_safe('SELECT count(*) FROM idemgate.outbox');

# 3000 runs of one effect, enqueued at once; then a client enqueues 300
# runs of three effects each, one serializable transaction per run, while
# the dispatcher delivers.
enqueue_effects($node, 'one', 3000, 'ser');
my $script = "$PostgreSQL::Test::Utils::tmp_check/three.sql";
open(my $fh, '>', $script) or die;
for my $i (1 .. 300)
{
	print $fh "SELECT e.version FROM idemgate.claim('three-$i', '{\"i\": $i}') c,"
	  . " idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version, jsonb_build_array("
	  . " jsonb_build_object('type', 'ser', 'target', 'a-$i', 'payload', $i),"
	  . " jsonb_build_object('type', 'ser', 'target', 'b-$i', 'payload', $i),"
	  . " jsonb_build_object('type', 'ser', 'target', 'c-$i', 'payload', $i))) e;\n";
}
close $fh;
my ($cout, $cerr) = ('', '');
my $client = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('app'), '-f', $script ],
	'>', \$cout, '2>', \$cerr);

# While both run: sample the predicate locks of the dispatchers.
my $dispatcher_pids = 'SELECT pid FROM idemgate.dispatcher_status()';
my ($samples, $siread) = (0, 0);
for (1 .. 40)
{
	$siread += $node->safe_psql('app',
		"SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock' AND pid IN ($dispatcher_pids)");
	$samples++;
	usleep(50_000);
}
ok($client->finish, 'the serializable client enqueued its 300 runs') or diag($cerr);
my $others = $node->safe_psql('app',
	"SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock' AND pid NOT IN ($dispatcher_pids)");
cmp_ok($others, '>', 0, 'serializable client transactions hold predicate locks (the witness works)');
is($siread, 0, "no predicate lock held by a dispatcher in $samples samples");
$open->query_safe('COMMIT');
$open->quit;

ok(wait_until($node, "SELECT count(*) = 3900 FROM idemgate.outbox WHERE state = 'completed'", 120),
	'all 3900 effects delivered');

# The kill switch, 30 times under load (see test/t/122_killswitch_barrier.pl).
sub flips
{
	my ($n, $off_sql, $on_sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $flip, $node->connstr('app'), $n, 30, 120, $off_sql, $on_sql ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(180))
	  or die "flip_switch failed: $err";
	return [ map { my @f = split / /; [ @f[ 1 .. 4 ] ] } split /\n/, $out ];
}

enqueue_effects($node, 'ks', 6000, 'ser');
ok(wait_until($node, "SELECT count(*) >= 4000 FROM idemgate.outbox WHERE state = 'completed'", 60),
	'delivery of the second backlog under way');
my $w = flips(30,
	"SELECT idemgate.set_actions_enabled(false, 'tester', 'barrier drill')",
	"SELECT idemgate.set_actions_enabled(true, 'tester', 'barrier drill over')");
is(scalar(@$w), 30, '30 switch-offs');
my @reqs = grep { defined $_->{rx} && $_->{path} =~ /kind=ser/ } @{ sink_requests($sink) };
my ($late, $loaded) = (0, 0);
for my $win (@$w)
{
	my ($off_sent, $off_done, $on_sent) = @$win;
	$late += grep { $_->{rx} > $off_done && $_->{rx} < $on_sent } @reqs;
	$loaded++ if grep { $_->{rx} < $off_sent && $_->{rx} > $off_sent - 0.1 } @reqs;
}
diag("kill switch: $loaded of 30 switch-offs had a request start in the 100 ms before; $late late");
cmp_ok($loaded, '>=', 15, 'the switch-offs happened under load');
is($late, 0, 'no request started after a switch-off committed');

# Exactly once, at the first counted attempt; every run completed.
ok(wait_until($node, "SELECT count(*) = 9900 FROM idemgate.outbox WHERE state = 'completed'", 180),
	'all 9900 effects delivered');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE attempts <> 1"),
	'0', 'every effect delivered at its first counted attempt');
my $stats = sink_stats($sink);
is($stats->{distinct_keys}, 9900, '9900 distinct keys at the sink');
is($stats->{requests}, 9900, 'no request sent twice');
is($stats->{keys_2xx_more_than_once}, 0, 'none delivered twice');
ok(wait_until($node, "SELECT count(*) = 9300 FROM idemgate.runs WHERE state = 'completed'", 30),
	'every run completed, those with three effects too');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.runs WHERE state <> 'completed'"),
	'0', 'no run left approved');

# Nothing in the cluster failed with a serialization failure.
my $log = slurp_file($node->logfile);
unlike($log, qr/could not serialize access/, 'no serialization failure in the server log');

stop_sink($sink);
$node->stop;
done_testing();
