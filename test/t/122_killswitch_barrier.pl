# test/t/122_killswitch_barrier.pl
#    The kill switch and a type pause are barriers (README.md, "Security"): once
#    set_actions_enabled(false) / pause_effect_type has committed, no
#    request's first byte reaches the wire. Under load (a backlog, 32
#    requests in flight), a client flips the switch 100 times, then pauses
#    and resumes one type 100 times, timing each call (test/t/flip_switch.c).
#    The sink records the kernel receive time of each request's first byte
#    ("rx", SO_TIMESTAMPNS). A request is late when its first byte arrived
#    after the switch-off call had returned (so after its COMMIT; the
#    client-side time is later than the commit, so this undercounts only by
#    the client's own latency) and before the switch-on call was sent.
#    Late requests must be 0. Afterwards everything is delivered exactly
#    once, and nothing was counted as an attempt by a held request.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node(
	'barrier',
	'idemgate.poll_interval' => '100ms',
	'idemgate.max_in_flight' => '32');
my $sink = start_sink('barrier', 400);
my $base = $sink->{base};

my $flip = "$PostgreSQL::Test::Utils::tmp_check/flip_switch";
my $incdir = `pg_config --includedir`;
my $libdir = `pg_config --libdir`;
chomp($incdir, $libdir);
system('cc', '-O2', "-I$incdir", '-o', $flip, 'test/t/flip_switch.c', "-L$libdir", '-lpq') == 0
  or BAIL_OUT('cannot build test/t/flip_switch.c');

register_endpoint($node, 'load', "$base/delay/20?kind=load");
register_endpoint($node, 'paused', "$base/delay/20?kind=paused");

# flips runs flip_switch and returns [[off_sent, off_done, on_sent, on_done], ...].
sub flips
{
	my ($n, $off_sql, $on_sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $flip, $node->connstr('app'), $n, 30, 120, $off_sql, $on_sql ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(180))
	  or die "flip_switch failed: $err";
	return [ map { my @f = split / /; [ @f[ 1 .. 4 ] ] } split /\n/, $out ];
}

# late counts requests whose first byte arrived inside an "off" window.
sub late
{
	my ($windows, $kind) = @_;
	my @reqs = grep { defined $_->{rx} && $_->{path} =~ /kind=$kind/ } @{ sink_requests($sink) };
	my ($late, $ambiguous, $flips_with_late) = (0, 0, 0);
	my $during = 0;
	for my $w (@$windows)
	{
		my ($off_sent, $off_done, $on_sent) = @$w;
		my $l = grep { $_->{rx} > $off_done && $_->{rx} < $on_sent } @reqs;
		$late += $l;
		$flips_with_late++ if $l;
		$ambiguous += grep { $_->{rx} >= $off_sent && $_->{rx} <= $off_done } @reqs;
		# load right before the switch: requests started in the 100 ms before it
		$during++ if grep { $_->{rx} < $off_sent && $_->{rx} > $off_sent - 0.1 } @reqs;
	}
	return ($late, $ambiguous, $flips_with_late, $during, scalar(@reqs));
}

# 1. The kill switch, 100 times under load.
enqueue_effects($node, 'ks', 10000, 'load');
ok(wait_until($node, "SELECT count(*) >= 100 FROM idemgate.outbox WHERE state = 'completed'", 60),
	'delivery under way');
my $w = flips(100,
	"SELECT idemgate.set_actions_enabled(false, 'tester', 'barrier drill')",
	"SELECT idemgate.set_actions_enabled(true, 'tester', 'barrier drill over')");
is(scalar(@$w), 100, '100 switch-offs');
my ($late, $amb, $flips_late, $loaded, $total) = late($w, 'load');
diag("kill switch: $total requests, $loaded of 100 switch-offs had a request start in the 100 ms before; "
	  . "$late requests started after a switch-off had committed ($flips_late switch-offs), "
	  . "$amb started while the switch-off call was in progress");
cmp_ok($loaded, '>=', 50, 'the switch-offs happened under load');
is($late, 0, 'no request started after a switch-off committed');

# 2. A type pause, 100 times, while another type keeps going.
enqueue_effects($node, 'pz', 8000, 'paused');
ok(wait_until($node, "SELECT count(*) >= 100 FROM idemgate.outbox WHERE effect_type = 'paused' AND state = 'completed'", 60),
	'delivery of the paused type under way');
$w = flips(100,
	"SELECT idemgate.pause_effect_type('paused', 'tester', 'barrier drill')",
	"SELECT idemgate.resume_effect_type('paused', 'tester')");
($late, $amb, $flips_late, $loaded, $total) = late($w, 'paused');
diag("type pause: $total requests, $loaded of 100 pauses had a request start in the 100 ms before; "
	  . "$late requests started after a pause had committed ($flips_late pauses), "
	  . "$amb started while the pause call was in progress");
cmp_ok($loaded, '>=', 20, 'the pauses happened under load');
is($late, 0, 'no request of the paused type started after the pause committed');

# 3. Held, not lost: everything goes out exactly once, no attempt wasted.
ok(wait_until($node, "SELECT count(*) = 18000 FROM idemgate.outbox WHERE state = 'completed'", 180),
	'all 18000 delivered');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE attempts <> 1"),
	'0', 'every effect delivered at its first counted attempt');
my $stats = sink_stats($sink);
is($stats->{distinct_keys}, 18000, '18000 distinct keys at the sink');
is($stats->{requests}, 18000, 'no request sent twice');
is($stats->{keys_2xx_more_than_once}, 0, 'none delivered twice');
my $released = $node->safe_psql('app', 'SELECT sum(released) FROM idemgate.dispatcher_status()');
diag("$released claimed effects were held back (released unsent)");

stop_sink($sink);
$node->stop;
done_testing();
