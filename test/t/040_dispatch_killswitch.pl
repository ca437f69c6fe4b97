# test/t/040_dispatch_killswitch.pl
#    The kill switch holds effects, it does not lose them: switched off
#    during a backlog, the dispatcher sends nothing more (requests already
#    in flight finish), the queued effects stay pending with no attempt
#    counted, and after switching on again every effect is delivered exactly
#    once. The setting idemgate.actions_enabled works the same way.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node(
	'killswitch',
	'idemgate.poll_interval' => '100ms',
	'idemgate.max_in_flight' => '4');
my $sink = start_sink('killswitch', 240);
my $base = $sink->{base};

register_endpoint($node, 'slow', "$base/delay/200");

# A backlog: 60 effects, 4 at a time, 200 ms each.
enqueue_effects($node, 'ks', 60, 'slow');
ok(wait_until($node, "SELECT count(*) >= 8 FROM idemgate.outbox WHERE state = 'completed'", 30),
	'delivery under way');

$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(false, 'tester', 'drill')");
# Requests already in flight finish; nothing new is claimed.
ok(wait_until($node, "SELECT count(*) = 0 FROM idemgate.outbox WHERE state = 'sending'", 30),
	'in-flight requests drained');
my $n_requests = scalar(@{ sink_requests($sink) });
my $held = $node->safe_psql('app',
	"SELECT count(*) FROM idemgate.outbox WHERE state = 'pending'");
cmp_ok($held, '>', 0, "effects held while switched off ($held)");
sleep 2;    # a dozen poll intervals
is(scalar(@{ sink_requests($sink) }), $n_requests, 'no request while the switch is off');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE state = 'pending'"),
	$held, 'still held, none lost');
is( $node->safe_psql('app',
		"SELECT count(*) FROM idemgate.outbox WHERE state = 'pending' AND attempts > 0"),
	'0',
	'no attempt counted for a held effect');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE state IN ('failed', 'unknown')"),
	'0', 'nothing failed');

$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(true, 'tester', 'drill over')");
ok(wait_until($node, "SELECT count(*) = 60 FROM idemgate.outbox WHERE state = 'completed'", 60),
	'all 60 delivered after switching on');

# The setting: off → held, on → delivered.
$node->append_conf('postgresql.conf', 'idemgate.actions_enabled = off');
$node->reload;
sleep 1;
$n_requests = scalar(@{ sink_requests($sink) });
enqueue_effects($node, 'guc', 10, 'slow');
sleep 2;
is(scalar(@{ sink_requests($sink) }), $n_requests, 'no request while the setting is off');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE idempotency_key LIKE 'guc-%' AND state = 'pending'"),
	'10', 'effects held by the setting');
$node->append_conf('postgresql.conf', 'idemgate.actions_enabled = on');
$node->reload;
ok(wait_until($node, "SELECT count(*) = 70 FROM idemgate.outbox WHERE state = 'completed'", 60),
	'delivered after the setting is back on');

my $stats = sink_stats($sink);
is($stats->{requests}, 70, '70 requests in all');
is($stats->{distinct_keys}, 70, '70 distinct keys');
is($stats->{keys_2xx_more_than_once}, 0, 'none delivered twice');

# Clean shutdown with requests in flight: the dispatcher waits a few
# seconds, then aborts them and records them as "may have happened"
# (unknown) before exiting — nothing is left sending for a lease to settle.
register_endpoint($node, 'stuck', "$base/delay/60000", timeout => '30 seconds');
enqueue_effects($node, 'stuck', 3, 'stuck');
ok(wait_until($node, "SELECT count(*) = 3 FROM idemgate.outbox WHERE effect_type = 'stuck' AND state = 'sending'", 30),
	'three requests in flight');
sleep 1;
$node->stop('fast');
$node->start;
is( $node->safe_psql('app',
		"SELECT string_agg(state || ' ' || attempts, ',') FROM idemgate.outbox WHERE effect_type = 'stuck'"),
	'unknown 1,unknown 1,unknown 1',
	'after a clean shutdown the interrupted requests are unknown, not sending');

stop_sink($sink);
$node->stop;
done_testing();
