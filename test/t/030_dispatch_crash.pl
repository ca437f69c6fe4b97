# test/t/030_dispatch_crash.pl
#    Crash safety: the dispatcher is SIGKILLed while requests are in flight
#    (the sink holds each for 4 s). The postmaster then restarts every
#    backend (crash recovery) and the launcher starts a new dispatcher.
#    Because the claim was committed before any byte was sent:
#    - effects for a NON-idempotent endpoint end completed or unknown —
#      none lost (count = total), none sent twice (no Idempotency-Key with
#      two requests, sink keys_2xx_more_than_once = 0);
#    - effects for an endpoint that honours the key go back to pending and
#      are all delivered, with the same key;
#    - the interrupted effects are settled as soon as the new dispatcher
#      starts (their leases belong to the previous server life), not when
#      their leases expire (endpoint timeout 6 s + 10 s): recovery time, from
#      the kill until none of them is still sending, is measured.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = dispatch_node(
	'crash',
	'idemgate.poll_interval' => '100ms',
	'idemgate.max_in_flight' => '40',
	'restart_after_crash' => 'on');
my $sink = start_sink('crash', 240);
my $base = $sink->{base};

# Endpoint timeouts of 6 s keep the leases (timeout + 10 s) short.
register_endpoint($node, 'plain', "$base/delay/4000", timeout => '6 seconds');
register_endpoint($node, 'keyed', "$base/delay/4000", timeout => '6 seconds', honors => 1);

# 40 slots: the 30 keyed effects and 10 plain ones are in flight when the
# dispatcher dies, the other 40 plain ones wait.
enqueue_effects($node, 'keyed', 30, 'keyed');
enqueue_effects($node, 'plain', 50, 'plain');

# Wait until requests are in flight at the sink (delayed, not answered yet).
ok( wait_until(
		$node, "SELECT count(*) = 40 FROM idemgate.outbox WHERE state = 'sending'", 30),
	'40 requests in flight');
sleep 1;
my $pid = $node->safe_psql('app', 'SELECT pid FROM idemgate.dispatcher_status() WHERE slot = 0');
my $interrupted = $node->safe_psql('app',
	"SELECT string_agg(quote_literal(effect_id), ',') FROM idemgate.outbox WHERE state = 'sending'");
ok(kill('KILL', $pid), "SIGKILL dispatcher $pid");
my $killed_at = time;

# Crash recovery: wait until the server accepts connections again and a new
# dispatcher runs.
$node->poll_query_until('app',
	"SELECT count(*) = 1 FROM idemgate.dispatcher_status() WHERE pid <> $pid")
  or die 'no new dispatcher after the crash';
pass('server recovered and a new dispatcher started');

# Recovery: the 40 interrupted effects leave 'sending' at once.
my $settled_at;
while (time - $killed_at < 60)
{
	my $still = $node->safe_psql('app',
		"SELECT count(*) FROM idemgate.outbox WHERE state = 'sending' AND effect_id IN ($interrupted)"
		  . " AND attempts = 1");
	if ($still eq '0') { $settled_at = time; last; }
	usleep(50_000);
}
ok(defined $settled_at, 'interrupted effects settled');
my $recovery_ms = defined $settled_at ? int(($settled_at - $killed_at) * 1000) : -1;
diag("recovery: interrupted effects settled ${recovery_ms} ms after the kill (leases would expire after 16 s)");
cmp_ok($recovery_ms, '<', 5000, 'settled within 5 s of the crash, not after lease expiry');
like(PostgreSQL::Test::Utils::slurp_file($node->logfile),
	qr/settled 40 effects leased by dispatchers that are gone/, 'the new dispatcher settled all 40');

# Everything settles: leases expire (6 s + margin), honoured ones retry.
ok( wait_until(
		$node,
		"SELECT count(*) = 0 FROM idemgate.outbox WHERE state IN ('pending', 'sending')",
		120),
	'no effect left pending or sending');

my $plain = $node->safe_psql('app',
	"SELECT count(*) FILTER (WHERE state = 'completed') || ' ' || count(*) FILTER (WHERE state = 'unknown') || ' ' || count(*)"
	  . " FROM idemgate.outbox WHERE effect_type = 'plain'");
my ($done, $unknown, $total) = split / /, $plain;
is($total, 50, 'non-idempotent: none lost');
is($done + $unknown, 50, 'non-idempotent: every effect completed or unknown');
cmp_ok($unknown, '>', 0, 'non-idempotent: the interrupted ones are unknown');
cmp_ok($done, '>', 0, 'non-idempotent: the queued ones were delivered after recovery');

my $by_key = requests_by_key($sink);
my %ids = map { $_ => 1 } split /,/,
  $node->safe_psql('app', "SELECT string_agg(effect_id::text, ',') FROM idemgate.outbox WHERE effect_type = 'plain'");
my @twice = grep { @{ $by_key->{$_} // [] } > 1 } keys %ids;
is(scalar(@twice), 0, 'non-idempotent: no Idempotency-Key sent twice');
my @unknown_ids = split /,/, $node->safe_psql('app',
	"SELECT string_agg(effect_id::text, ',') FROM idemgate.outbox WHERE effect_type = 'plain' AND state = 'unknown'");
is(scalar(grep { @{ $by_key->{$_} // [] } == 1 } @unknown_ids),
	scalar(@unknown_ids), 'each unknown effect had exactly one request (it may have happened)');

is( $node->safe_psql('app',
		"SELECT count(*) FILTER (WHERE state = 'completed') || ' ' || count(*) FROM idemgate.outbox WHERE effect_type = 'keyed'"),
	'30 30',
	'honoured key: all 30 delivered');
my @keyed = split /,/, $node->safe_psql('app',
	"SELECT string_agg(effect_id::text, ',') FROM idemgate.outbox WHERE effect_type = 'keyed'");
my @resent = grep { @{ $by_key->{$_} } > 1 } @keyed;
cmp_ok(scalar(@resent), '>', 0, 'honoured key: interrupted ones were sent again');
is(scalar(grep { (grep { $_->{status} == 200 } @{ $by_key->{$_} }) == 1 } @keyed),
	30, 'honoured key: exactly one 200 per Idempotency-Key');

is(sink_stats($sink)->{keys_2xx_more_than_once}, 0, 'sink: no key got two 2xx');

stop_sink($sink);
$node->stop;
done_testing();
