# test/t/120_dispatch_stats_error_body.pl
#    Two dispatcher duties that nobody sees until they are missing:
#    - it reports table statistics after its transactions, so autovacuum
#      sees the outbox churn while it runs (without pgstat_report_stat a
#      PostgreSQL 15 background worker's updates stay invisible until it
#      exits: n_tup_upd = 0 after hundreds of deliveries);
#    - a failed attempt keeps the first 1024 bytes of the provider's error
#      body in last_error after the status, cut at a character boundary.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node('stats_errbody', 'idemgate.poll_interval' => '100ms');
my $sink = start_sink('stats_errbody', 120);
my $base = $sink->{base};

# 1. Statistics. 50 deliveries = at least 100 outbox updates (claim, complete).
register_endpoint($node, 'ok', "$base/ok");
enqueue_effects($node, 'st', 50, 'ok');
ok(wait_until($node, "SELECT count(*) = 50 FROM idemgate.outbox WHERE state = 'completed'", 60),
	'50 delivered');
my $pid = $node->safe_psql('app', 'SELECT pid FROM idemgate.dispatcher_status() WHERE slot = 0');
ok( wait_until(
		$node,
		"SELECT n_tup_upd >= 100 FROM pg_stat_user_tables WHERE relid = 'idemgate.outbox'::regclass",
		15),
	'outbox n_tup_upd counts the dispatcher updates while it runs');
is($node->safe_psql('app', 'SELECT pid FROM idemgate.dispatcher_status() WHERE slot = 0'),
	$pid, 'same dispatcher process (the figures did not come from its exit)');

# 2. Error body. "éx" is 3 bytes; 400 of them are 1200 bytes, and byte 1024
#    is the first byte of the 342nd "é": the excerpt stops before it.
register_endpoint($node, 'bad', "$base/status/400?error_body=%C3%A9x&error_repeat=400",
	max_attempts => 1);
# A short body is kept whole.
register_endpoint($node, 'busy', "$base/status/422?error_body=%7B%22error%22%3A%22quota%22%7D",
	max_attempts => 1);
enqueue_effects($node, 'eb', 1, 'bad');
enqueue_effects($node, 'eq', 1, 'busy');
ok(wait_until($node, "SELECT count(*) = 2 FROM idemgate.outbox WHERE state = 'failed'", 30),
	'both failed (4xx)');
is( $node->safe_psql('app',
		"SELECT last_error = 'HTTP 400: ' || repeat('éx', 341) FROM idemgate.outbox WHERE effect_type = 'bad'"),
	't', 'first 1024 bytes of the body, cut at a character boundary (1023 bytes)');
is( $node->safe_psql('app',
		"SELECT octet_length(last_error) FROM idemgate.outbox WHERE effect_type = 'bad'"),
	length('HTTP 400: ') + 1023, 'excerpt is 1023 bytes');
is($node->safe_psql('app', "SELECT last_error FROM idemgate.outbox WHERE effect_type = 'busy'"),
	'HTTP 422: {"error":"quota"}', 'a short body is kept whole');
is( $node->safe_psql('app',
		"SELECT error FROM idemgate.dead_letters d JOIN idemgate.outbox o USING (effect_id) WHERE o.effect_type = 'busy'"),
	'HTTP 422: {"error":"quota"}', 'the dead letter carries it too');

stop_sink($sink);
$node->stop;
done_testing();
