# test/citus/t/030_semantics.pl
#    SPEC §1-§7 through the coordinator of a distributed install: 20
#    concurrent claims of one key give one 'claimed'; 10 concurrent
#    consume_approval of one token give one 'approved' and one set of
#    outbox rows; an endpoint answering 503 ends in a dead letter after
#    max_attempts and reinject delivers it; a timeout after the request was
#    sent leaves the effect 'unknown' until resolve_effect; a paused type is
#    held until resumed; an effect cancelled before delivery is never sent;
#    no convoy: with a transaction that enqueued left open, set_effect_policy
#    fails with 55P03 after lock_timeout instead of queueing, and another
#    client's enqueue meanwhile takes its locks at once (lock_timeout 200ms).
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
use Time::HiRes qw(time usleep);

my $cl = citus_cluster('sem', distribute => 1);
my $coord = $cl->{coord};
my $sink = start_sink('sem', 400);
my $base = $sink->{base};

# concurrently($n, $sql): $n psql sessions on the coordinator run $sql at
# the same instant (each first sleeps until a common start time); returns
# their outputs.
sub concurrently
{
	my ($n, $sql) = @_;
	my $at = time + 3;
	my @h;
	for my $i (1 .. $n)
	{
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[
				'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $coord->connstr('app'),
				'-c', "SELECT pg_sleep(greatest(0, $at - extract(epoch FROM clock_timestamp())))",
				'-c', $sql
			],
			'>', \$out, '2>', \$err, IPC::Run::timeout(120));
		push @h, [ $h, \$out, \$err ];
	}
	my @res;
	for (@h)
	{
		my ($h, $out, $err) = @$_;
		$h->finish;
		diag("session error: $$err") if $$err ne '';
		my @l = grep { $_ ne '' } split /\n/, $$out;
		push @res, $l[-1] // '';
	}
	return @res;
}

sub count_of
{
	my ($list, $what) = @_;
	return scalar(grep { $_ eq $what } @$list);
}

sub run_of
{
	my ($key) = @_;
	return split /\|/, query($coord,
		"SELECT lease_owner, version FROM idemgate.runs WHERE idempotency_key = '$key'");
}

# enqueue($key, $type, $target): claims $key and enqueues one effect; its id.
sub enqueue
{
	my ($key, $type, $target) = @_;
	query($coord, "SELECT outcome FROM idemgate.claim('$key', '{}')");
	my ($owner, $version) = run_of($key);
	return query($coord,
		"SELECT effect_ids[1] FROM idemgate.enqueue_effect('$key', '$owner', $version,"
		  . " jsonb_build_object('type', '$type', 'target', '$target', 'payload', '{}'::jsonb))");
}

sub sent
{
	my ($id) = @_;
	return scalar(@{ requests_by_key($sink)->{$id} // [] });
}

# --- 20 concurrent claims ------------------------------------------------
my @claims = concurrently(20, "SELECT outcome FROM idemgate.claim('race-1', '{\"x\": 1}')");
is(count_of(\@claims, 'claimed'), 1, '20 concurrent claims: exactly one claimed');
is(count_of(\@claims, 'duplicate'), 19, '20 concurrent claims: 19 duplicates');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'race-1'"),
	'1', 'one run row');

# --- 10 concurrent consume_approval ----------------------------------------
register_endpoint($coord, 'appr', "$base/ok?kind=appr");
query($coord, "SELECT outcome FROM idemgate.claim('appr-1', '{}')");
my ($owner, $version) = run_of('appr-1');
my $token = query($coord,
	"SELECT token FROM idemgate.request_approval('appr-1', '$owner', $version,"
	  . " '[{\"type\": \"appr\", \"target\": \"a\", \"payload\": {}}, {\"type\": \"appr\", \"target\": \"b\", \"payload\": {}}]',"
	  . " requested_by => 'alice')");
my @dec = concurrently(10, "SELECT outcome FROM idemgate.consume_approval('$token', 'approve', 'bob')");
is(count_of(\@dec, 'approved'), 1, '10 concurrent consume_approval: exactly one approved');
is(count_of(\@dec, 'invalid'), 9, '10 concurrent consume_approval: 9 invalid');
is(query($coord, "SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = 'appr-1'"),
	'2', 'one set of outbox rows (2 effects)');
ok(poll_app($coord, "SELECT state = 'completed' FROM idemgate.runs WHERE idempotency_key = 'appr-1'", 30),
	'both effects delivered, the run completed');
is(scalar(grep { ($_->{path} // '') =~ /kind=appr/ } @{ sink_requests($sink) }), 2,
	'the sink got 2 requests for the approved run');

# --- 503 until max_attempts → dead letter; reinject --------------------------
register_endpoint($coord, 'flaky', "$base/status/503", max_attempts => 3);
my $flaky = enqueue('flaky-1', 'flaky', 'f');
ok(poll_app($coord, "SELECT count(*) = 1 FROM idemgate.dead_letters WHERE effect_id = '$flaky'", 45),
	'503 three times: a dead letter');
is(query($coord, "SELECT state || ' ' || attempts FROM idemgate.outbox WHERE effect_id = '$flaky'"),
	'failed 3', 'the effect failed after 3 attempts');
is(sent($flaky), 3, 'the sink got 3 attempts');
register_endpoint($coord, 'flaky', "$base/ok?kind=flaky", max_attempts => 3);
my $dl = query($coord, "SELECT id FROM idemgate.dead_letters WHERE effect_id = '$flaky'");
is(query($coord, "SELECT idemgate.reinject($dl, 'tester')"), 't', 'reinject');
ok(poll_app($coord, "SELECT state = 'completed' FROM idemgate.outbox WHERE effect_id = '$flaky'", 30),
	'the reinjected effect was delivered');
is(scalar(grep { $_->{status} == 200 } @{ requests_by_key($sink)->{$flaky} // [] }), 1,
	'once, with the same Idempotency-Key');
is(query($coord, "SELECT idemgate.reinject($dl, 'tester')"), 'f', 'a second reinject: false');

# --- timeout after send → unknown; resolve_effect ----------------------------
register_endpoint($coord, 'slow', "$base/delay/4000", timeout => '1 second', max_attempts => 3);
my $slow = enqueue('slow-1', 'slow', 's');
ok(poll_app($coord, "SELECT state = 'unknown' FROM idemgate.outbox WHERE effect_id = '$slow'", 30),
	'a timeout after the request was sent: unknown');
is(query($coord, "SELECT idemgate.resolve_effect('$slow', true, 'tester', 'prov-slow', 'checked')"),
	'completed', 'resolve_effect delivered: completed');
ok(poll_app($coord, "SELECT state = 'completed' FROM idemgate.runs WHERE idempotency_key = 'slow-1'", 30),
	'its run completed');
is(sent($slow), 1, 'sent once, never again');

# --- pause holds, resume delivers; cancel before delivery --------------------
register_endpoint($coord, 'pz', "$base/ok?kind=pz");
register_endpoint($coord, 'ctl', "$base/ok?kind=ctl");
query($coord, "SELECT idemgate.pause_effect_type('pz', 'tester', 'hold')");
my @paused = map { enqueue("pz-$_", 'pz', 'p') } 1 .. 10;
my $cancelled = enqueue('pz-cancel', 'pz', 'p');
my $cancel_state = query($coord, "SELECT idemgate.cancel_effect('$cancelled', 'tester', 'not wanted')");
ok($cancel_state ne '', "cancel_effect before delivery: $cancel_state");
# Effects of another type enqueued after the paused ones, over many keys
# (both workers): once they are delivered the dispatchers have passed the
# paused effects by.
my @ctl = map { enqueue("ctl-$_", 'ctl', 'c') } 1 .. 10;
ok(poll_app($coord, "SELECT count(*) = 10 FROM idemgate.outbox WHERE effect_type = 'ctl' AND state = 'completed'", 30),
	'the other type was delivered meanwhile');
is(scalar(grep { sent($_) } @paused), 0, 'nothing of the paused type was sent');
is(query($coord, "SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'pz' AND state = 'pending'"),
	'10', 'the paused effects are held pending');
query($coord, "SELECT idemgate.resume_effect_type('pz', 'tester')");
ok(poll_app($coord, "SELECT count(*) = 10 FROM idemgate.outbox WHERE effect_type = 'pz' AND state = 'completed'", 30),
	'resumed: all 10 delivered');
is(scalar(grep { sent($_) == 1 } @paused), 10, 'each once');
my @late = map { enqueue("ctl-late-$_", 'ctl', 'c') } 1 .. 10;
ok(poll_app($coord, "SELECT count(*) = 20 FROM idemgate.outbox WHERE effect_type = 'ctl' AND state = 'completed'", 30),
	'later effects delivered');
is(sent($cancelled), 0, 'the cancelled effect was never sent');
isnt(query($coord, "SELECT state FROM idemgate.outbox WHERE effect_id = '$cancelled'"),
	'completed', 'the cancelled effect is not completed');

# --- no convoy behind an idle transaction ----------------------------------
# The idle client: it enqueued (holding ROW SHARE on the policy table) and
# left its transaction open.
query($coord, "SELECT outcome FROM idemgate.claim('idle-1', '{}')");
my ($idle_owner, $idle_version) = run_of('idle-1');
my $idle = $coord->background_psql('app');
$idle->query_safe('SET client_min_messages = warning');	# nc_refund is declared by no endpoint
$idle->query_safe('BEGIN');
$idle->query_safe("SELECT effect_ids[1] FROM idemgate.enqueue_effect('idle-1', '$idle_owner', $idle_version,"
	  . " jsonb_build_object('type', 'nc_refund', 'target', 't', 'payload', '{}'::jsonb))");
# The operator's policy change, in the background: it may wait 3 s.
my ($pout, $perr) = ('', '');
my $policy = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose', '-d', $coord->connstr('app'),
		'-c', "SET lock_timeout = '3s'",
		'-c', "SELECT idemgate.set_effect_policy('nc_refund', requires_approval => true, actor => 'ops')"
	],
	'>', \$pout, '2>', \$perr, IPC::Run::timeout(60));
usleep(500_000);	# the policy change is trying
query($coord, "SELECT outcome FROM idemgate.claim('busy-1', '{}')");
my ($busy_owner, $busy_version) = run_of('busy-1');
my ($brc, $bout, $berr) = $coord->psql('app',
	"SET lock_timeout = '200ms'; SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('busy-1', '$busy_owner', $busy_version,"
	  . " jsonb_build_object('type', 'nc_refund', 'target', 't', 'payload', '{}'::jsonb))");
is($bout, '1', 'another enqueue goes through while the policy change tries (no lock wait over 200 ms)')
  or diag($berr);
$policy->finish;
like($perr, qr/55P03.*could not change the effect policy: 1 transaction/s,
	'the policy change fails with 55P03 after lock_timeout, naming the one open transaction');
$idle->query_safe('COMMIT');
$idle->quit;
is(query($coord, "SELECT count(*) FROM idemgate.effect_type_policies WHERE effect_type = 'nc_refund'"),
	'0', 'no policy was written');
query($coord, "SELECT idemgate.set_effect_policy('nc_refund', requires_approval => true, actor => 'ops')");
is(query($coord, "SELECT requires_approval FROM idemgate.effect_type_policies WHERE effect_type = 'nc_refund'"),
	't', 'with the idle transaction ended the policy change goes through');

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
