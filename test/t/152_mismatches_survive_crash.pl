# test/t/152_mismatches_survive_crash.pl
#    The critical payload_mismatch alert survives a crash restart and a
#    killed postmaster (src/ledger/payload_mismatches.c): a claim refused with
#    IG001 rolls back, so its count lives in shared memory, which a crash
#    resets; every change is also kept in a file of the data directory
#    that a new segment reads back.
#    - two IG001 refusals, then a server process killed with SIGKILL (the
#      postmaster resets shared memory): payload_mismatches() still
#      counts 2 with the first key, and the alert fires;
#    - the postmaster killed with SIGKILL and started again: the same;
#    - clear_payload_mismatches() survives a restart too (no count comes
#      back after it).
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node('mismatches_crash', 'restart_after_crash' => 'on');

# mismatches returns "count first_keys firing" for workflow mm-wf.
sub mismatches
{
	return $node->safe_psql('app',
		"SELECT mismatches || ' ' || first_keys::text || ' ' || firing FROM idemgate.payload_mismatches() WHERE workflow = 'mm-wf'");
}

$node->safe_psql('app', "SELECT idemgate.claim('mm-1', '{\"a\": 1}', workflow => 'mm-wf')");
for my $p (2, 3)
{
	my ($rc, $out, $err) = $node->psql('app', "SELECT idemgate.claim('mm-1', '{\"a\": $p}', workflow => 'mm-wf')");
	like($err, qr/already used with a different payload/, "IG001 for payload $p");
}
is(mismatches(), '2 {mm-1} true', 'two refusals counted');

# A server process dies (the dispatcher, killed): the postmaster resets
# shared memory and restarts every process.
my $pid = $node->safe_psql('app', 'SELECT pid FROM idemgate.dispatcher_status() WHERE pid IS NOT NULL LIMIT 1');
ok($pid > 0, 'a dispatcher to kill');
kill 'KILL', $pid;
ok($node->poll_query_until('app', 'SELECT 1', '1'), 'the server is back after the crash');
like(slurp_file($node->logfile), qr/all server processes terminated; reinitializing/, 'it was a crash restart');
is(mismatches(), '2 {mm-1} true', 'after the crash restart: still two, with the key');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.alerts WHERE alert = 'payload_mismatch' AND severity = 'critical'"),
	'1', 'the critical alert still fires');

# The postmaster itself is killed (its zombie holds postmaster.pid until
# it is reaped, and its children exit on its death: wait for both).
my $pm = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
ok(kill('KILL', $pm), 'SIGKILL the postmaster');
my $killed_at = time;
while (kill(0, $pm) && time - $killed_at < 10) { select(undef, undef, undef, 0.05); }
delete $node->{_pid};
sleep 2;
$node->start;
is(mismatches(), '2 {mm-1} true', 'after the postmaster was killed: still two');

# Cleared counts stay cleared.
is($node->safe_psql('app', 'SELECT idemgate.clear_payload_mismatches()'), '2', 'cleared by an operator');
$node->restart;
is(mismatches(), '', 'after a restart nothing comes back');

$node->stop;
done_testing();
