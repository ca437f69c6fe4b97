# test/t/121_postmaster_death.pl
#    The postmaster is SIGKILLed while the dispatcher works through a
#    backlog (requests in flight, claims and recordings in between). The
#    dispatcher must notice on whichever path it is on and exit within one
#    second — no request may reach the sink after that — and nothing of the
#    old server life may hold its shared memory, so the cluster starts again
#    at once (no "pre-existing shared memory block is still in use").
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = dispatch_node(
	'pmdeath',
	'idemgate.poll_interval' => '100ms',
	'idemgate.max_in_flight' => '20');
my $sink = start_sink('pmdeath', 240);
my $base = $sink->{base};

register_endpoint($node, 'slow', "$base/delay/20");
enqueue_effects($node, 'pm', 3000, 'slow');
ok(wait_until($node, "SELECT count(*) >= 200 FROM idemgate.outbox WHERE state = 'completed'", 60),
	'backlog being delivered');
my $dpid = $node->safe_psql('app', 'SELECT pid FROM idemgate.dispatcher_status() WHERE slot = 0');
my $left = $node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE state IN ('pending', 'sending')");
cmp_ok($left, '>', 1000, "a backlog of $left remains");

# alive tells whether a process runs (a zombie waiting to be reaped by
# whatever adopted it does not).
sub alive
{
	my ($pid) = @_;
	return 0 unless kill(0, $pid);
	open(my $fh, '<', "/proc/$pid/stat") or return 0;
	my $stat = <$fh>;
	close $fh;
	return ($stat // '') !~ /^\d+ \(.*\) [ZX] /;
}

my $pm = (split /\n/, PostgreSQL::Test::Utils::slurp_file($node->data_dir . '/postmaster.pid'))[0];
ok(kill('KILL', $pm), "SIGKILL postmaster $pm");
my $killed_at = time;

# The dispatcher must be gone within a second.
my $gone_at;
while (time - $killed_at < 10)
{
	if (!alive($dpid)) { $gone_at = time; last; }
	usleep(5_000);
}
ok(defined $gone_at, 'dispatcher exited');
my $exit_ms = defined $gone_at ? int(($gone_at - $killed_at) * 1000) : -1;
diag("dispatcher exited ${exit_ms} ms after the postmaster was killed");
cmp_ok($exit_ms, '<', 1000, 'dispatcher gone within 1 s of the postmaster death');
cmp_ok($exit_ms, '>=', 0, 'measured');

# No request reached the sink after that second (sink 't' is the arrival time).
sleep 1;
my @late = grep { $_->{t} > $killed_at + 1 } @{ sink_requests($sink) };
is(scalar(@late), 0, 'no request arrived more than 1 s after the postmaster death');
my @after = grep { $_->{t} > $killed_at } @{ sink_requests($sink) };
diag(scalar(@after) . ' requests completed at the sink after the kill (in flight at that moment)');

# The cluster starts again at once: nothing holds the old shared memory.
# (The killed postmaster is reaped by whatever adopted it; until then its
# zombie still "owns" postmaster.pid, so wait for that first.)
while (kill(0, $pm) && time - $killed_at < 10) { usleep(5_000); }
delete $node->{_pid};    # the killed postmaster's
my $started = $node->start(fail_ok => 1);
my $restart_ms = int((time - $killed_at) * 1000);
ok($started, "cluster restarted at the first attempt (${restart_ms} ms after the kill)");
diag("cluster restarted ${restart_ms} ms after the postmaster was killed");
unlike(PostgreSQL::Test::Utils::slurp_file($node->logfile),
	qr/pre-existing shared memory block/, 'no start was refused for shared memory in use');
ok($node->poll_query_until('app', 'SELECT count(*) = 1 FROM idemgate.dispatcher_status()'),
	'a new dispatcher runs');

stop_sink($sink);
$node->stop;
done_testing();
