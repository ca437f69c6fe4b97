# test/t/155_endpoint_outage.pl
#    A provider down for two minutes (SPEC §22, src/policy/endpoint_circuits.c):
#    the loopback sink answers 503 for 120 s from the first request, while
#    200 effects of a type that cannot dedupe (3 attempts) are queued.
#    With no operator call: the first burst fails, the circuit opens, the
#    effects wait as pending with their attempts untouched, probes go out
#    at most one per backoff step (5 s doubling, jittered), the kill switch
#    flipped off in the middle of the outage still stops everything, the
#    first probe after the outage closes the circuit and the backlog
#    drains: 0 dead letters, each effect answered 200 exactly once, the
#    alert endpoint_down published once and cleared.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $outage_ms = 120_000;
my $node = dispatch_node('outage', 'idemgate.poll_interval' => '100ms', 'idemgate.max_in_flight' => 16);
my $sink = start_sink('outage', 420);
my $base = $sink->{base};

register_endpoint($node, 'crm', "$base/outage/$outage_ms", timeout => '2 seconds', max_attempts => 3);
my $t0 = time;
enqueue_effects($node, 'out', 200, 'crm');

# Watch while it runs: the published alert (alert_state, what NOTIFY and
# the relays saw), the circuit's state; the kill switch off from 30 s to
# 50 s into the outage.
my (@alert_seen, $off_done, $on_sent, $opened_seen);
my $done = 0;
while (time - $t0 < 330)
{
	my $elapsed = time - $t0;
	if (!defined $off_done && $elapsed >= 30)
	{
		$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(false, 'drill', 'switch off mid-outage')");
		$off_done = time;
	}
	if (defined $off_done && !defined $on_sent && $elapsed >= 50)
	{
		$on_sent = time;
		$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(true, 'drill', 'back on')");
	}
	my ($alert, $state, $completed) = split /\|/, $node->safe_psql('app', q{
SELECT EXISTS (SELECT 1 FROM idemgate.alert_state WHERE alert = 'endpoint_down'),
       (SELECT state FROM idemgate.endpoint_health WHERE effect_type = 'crm'),
       (SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'crm' AND state = 'completed')});
	push @alert_seen, $alert;
	$opened_seen = 1 if $state ne 'closed';
	if ($completed == 200 && $elapsed > $outage_ms / 1000)
	{
		$done = 1;
		last;
	}
	usleep(500_000);
}
ok($done, 'all 200 effects completed without an operator');
ok($opened_seen, 'the circuit opened');
# Let publish_alerts (every second) see the closed circuit.
ok(wait_until($node, "SELECT NOT EXISTS (SELECT 1 FROM idemgate.alert_state WHERE alert = 'endpoint_down')", 10),
	'endpoint_down cleared');
push @alert_seen, 'f';
my $fired = 0;
for my $i (1 .. $#alert_seen)
{
	$fired++ if $alert_seen[$i] eq 't' && $alert_seen[ $i - 1 ] ne 't';
}
$fired++ if $alert_seen[0] eq 't';
is($fired, 1, 'endpoint_down published once');

is($node->safe_psql('app', 'SELECT count(*) FROM idemgate.dead_letters'), '0', '0 dead letters');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE state <> 'completed'"), '0',
	'nothing failed, unknown or left pending');

my @reqs = sort { $a->{rx} <=> $b->{rx} } grep { defined $_->{rx} } @{ sink_requests($sink) };
my @failed = grep { ($_->{status} // 0) == 503 } @reqs;
my @ok = grep { ($_->{status} // 0) == 200 } @reqs;
my %ok_by_key;
$ok_by_key{ $_->{idempotency_key} }++ for @ok;
is(scalar(keys %ok_by_key), 200, '200 distinct effects answered 200');
is(scalar(grep { $_ != 1 } values %ok_by_key), 0, 'each exactly once');
is(scalar(@reqs), scalar(@ok) + scalar(@failed), 'every request was a 503 or a 200');

# The outage: from the first request, 120 s. The burst is what went out
# before the circuit opened: the first claim (max_in_flight, 16) and, when
# its answers are recorded in two rounds, one refill; after it,
# only probes, each at least a jittered backoff step (>= 4 s) after the
# one before.
my $start = $reqs[0]{rx};
my $outage_end = $start + $outage_ms / 1000;
my @during = grep { $_->{rx} < $outage_end } @reqs;
my @burst = grep { $_->{rx} < $start + 2 } @during;
my @probes = grep { $_->{rx} >= $start + 2 } @during;
diag(sprintf('outage: %d requests during it (%d in the first burst, %d probes), %d answered 503 in all',
	scalar(@during), scalar(@burst), scalar(@probes), scalar(@failed)));
cmp_ok(scalar(@burst), '<=', 32, 'the burst: at most two claims of max_in_flight (of 200 effects)');
cmp_ok(scalar(@probes), '<=', 5, 'then probes only: at most one per backoff step (5, 10, 20, 40, 80 s)');
cmp_ok(scalar(@probes), '>=', 2, 'and the probes went out');
my $min_gap = 1e9;
for my $i (1 .. $#probes)
{
	my $gap = $probes[$i]{rx} - $probes[ $i - 1 ]{rx};
	$min_gap = $gap if $gap < $min_gap;
}
cmp_ok($min_gap, '>=', 4, 'probes at least 4 s apart');
is(scalar(grep { $_->{rx} > $off_done && $_->{rx} < $on_sent } @reqs), 0,
	'nothing sent, not even a probe, while the kill switch was off');

# Recovery: the first 200 after the outage is the probe that closed the
# circuit; the backlog drains after it.
my @after = grep { $_->{rx} >= $outage_end } @ok;
my $closed_by = $after[0]{rx};
my $drained = $ok[-1]{rx};
diag(sprintf('recovery: first success %.1f s after the outage ended, backlog of %d drained %.1f s after that',
	$closed_by - $outage_end, scalar(@ok), $drained - $closed_by));
cmp_ok($closed_by - $outage_end, '<', 100, 'the first probe after the outage (next backoff step) closed it');

my %events = map { split /\|/ } split /\n/, $node->safe_psql('app', q{
SELECT kind, count(*) FROM idemgate.events WHERE kind LIKE 'endpoint_circuit_%' GROUP BY kind});
is($events{endpoint_circuit_opened}, 1, 'one endpoint_circuit_opened event');
is($events{endpoint_circuit_closed}, 1, 'one endpoint_circuit_closed event');
is($node->safe_psql('app', "SELECT details->>'by' FROM idemgate.events WHERE kind = 'endpoint_circuit_closed'"),
	'probe', 'closed by a probe');
is($node->safe_psql('app', "SELECT max(attempts) <= 3 FROM idemgate.outbox"), 't',
	'no effect went past its attempts');

stop_sink($sink);
$node->stop;
done_testing();
