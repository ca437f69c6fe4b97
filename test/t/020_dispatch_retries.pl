# test/t/020_dispatch_retries.pl
#    How the dispatcher classifies outcomes and retries:
#    - Retry-After (delta-seconds and HTTP-date) is honoured: no attempt
#      before it (sink arrival times);
#    - backoff without Retry-After: gaps of at least 1 s then 4 s
#      (lower bounds only), then exhaustion → failed + dead letter →
#      reinject → delivered with the same Idempotency-Key;
#    - a timeout after the request was sent → unknown, never re-sent;
#      with honors_idempotency_key → retried and delivered, same key;
#    - 500 → unknown; 400 → failed at once; a refused connection →
#      retried; a connection reset after the server read the request, or
#      closed without a (complete) response → lost_after_send: unknown
#      after one request to an endpoint that cannot dedupe, retried with
#      the same key by one that can; in every case libcurl never re-sends
#      a request by itself.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node('retries', 'idemgate.poll_interval' => '100ms');
my $sink = start_sink('retries', 240);
my $base = $sink->{base};

register_endpoint($node, 'ra_secs', "$base/seq/503,200?retry_after=3");
register_endpoint($node, 'ra_date', "$base/seq/429,200?retry_after_date=4");
register_endpoint($node, 'backoff', "$base/status/503", max_attempts => 3);
register_endpoint($node, 'tmo', "$base/delay/3000", timeout => '1 second');
register_endpoint($node, 'tmo_key', "$base/seq/delay3000,200",
	timeout => '1 second', honors => 1);
register_endpoint($node, 's500', "$base/status/500");
register_endpoint($node, 's400', "$base/status/400");
register_endpoint($node, 'refused', 'http://127.0.0.1:1/nothing-listens',
	max_attempts => 2);
register_endpoint($node, 'reset', "$base/reset", max_attempts => 2);
register_endpoint($node, 'drop', "$base/drop");
register_endpoint($node, 'partial', "$base/partial");
register_endpoint($node, 'reset_key', "$base/seq/reset,partial,200", honors => 1);

for my $t (qw(ra_secs ra_date backoff tmo tmo_key s500 s400 refused reset drop partial reset_key))
{
	enqueue_effects($node, $t, 1, $t);
}

# effect_state returns "state attempts" of the one effect of type $t.
sub effect_state
{
	my ($t) = @_;
	return $node->safe_psql('app',
		"SELECT state || ' ' || attempts FROM idemgate.outbox WHERE effect_type = '$t'");
}

# times_of returns the sink arrival times of the requests for type $t.
sub times_of
{
	my ($t) = @_;
	my $id = $node->safe_psql('app',
		"SELECT effect_id FROM idemgate.outbox WHERE effect_type = '$t'");
	return [ map { $_->{t} } @{ requests_by_key($sink)->{$id} // [] } ];
}

ok( wait_until(
		$node,
		"SELECT count(*) = 0 FROM idemgate.outbox WHERE state IN ('pending', 'sending') AND effect_type NOT IN ('tmo', 'backoff')",
		60),
	'all but the slow cases settled');

# Retry-After in seconds: the retry comes no earlier than 3 s later.
is(effect_state('ra_secs'), 'completed 2', 'Retry-After seconds: 503 then 200');
my $ts = times_of('ra_secs');
cmp_ok($ts->[1] - $ts->[0], '>=', 3.0, 'no attempt before Retry-After (3 s)');

# Retry-After as an HTTP-date 4 s ahead (whole seconds: at least 3 s).
is(effect_state('ra_date'), 'completed 2', 'Retry-After date: 429 then 200');
$ts = times_of('ra_date');
cmp_ok($ts->[1] - $ts->[0], '>=', 3.0,
	'no attempt before the Retry-After date (longer than the 1.5 s backoff)');

# 500 → unknown, not retried; 400 → failed at once.
is(effect_state('s500'), 'unknown 1', '500 → unknown after one attempt');
is(effect_state('s400'), 'failed 1', '400 → failed after one attempt');
is( $node->safe_psql('app',
		"SELECT error_class FROM idemgate.dead_letters WHERE idempotency_key = 's400-1'"),
	'rejected',
	'400 → dead letter, rejected');

# A refused connection is retried until max_attempts.
is(effect_state('refused'), 'failed 2', 'refused connection retried, then failed');
# A reset after the server read the whole request (a proxy in front of a
# provider): it may have acted, so never sent again without the key.
is(effect_state('reset'), 'unknown 1', 'reset after the request was read → unknown')
  or diag('reset: ' . $node->safe_psql('app', "SELECT last_error FROM idemgate.outbox WHERE effect_type = 'reset'"));
is(scalar(@{ times_of('reset') }), 1, 'reset: one request, never re-sent');
is($node->safe_psql('app', "SELECT details->>'error_class' FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)"
	  . " WHERE o.effect_type = 'reset' AND e.kind = 'effect_failed'"), 'lost_after_send', 'reset: class lost_after_send');
# A close before a complete response (status line, part of the body).
is(effect_state('partial'), 'unknown 1', 'closed before a complete response → unknown');
is(scalar(@{ times_of('partial') }), 1, 'partial: one request, never re-sent');
# With the key honoured the provider dedupes: retried, delivered, same key.
is(effect_state('reset_key'), 'completed 3', 'reset then partial with the key honoured: retried, delivered');
is(scalar(@{ times_of('reset_key') }), 3, 'reset_key: one request per attempt, all under one key');
is( $node->safe_psql('app',
		"SELECT error_class FROM idemgate.dead_letters WHERE idempotency_key = 'refused-1'"),
	'transport',
	'refused → transport');

# Closed without a response after the request was sent: may have happened.
is(effect_state('drop'), 'unknown 1', 'connection closed without response → unknown')
  or diag('drop: ' . $node->safe_psql('app', "SELECT last_error FROM idemgate.outbox WHERE effect_type = 'drop'"));
is(scalar(@{ times_of('drop') }), 1, 'drop: one request, libcurl did not re-send it');

# Timeout after send, key honoured: retried with the same key, delivered.
is(effect_state('tmo_key'), 'completed 2', 'timeout after send, key honoured → retried → completed');
is(scalar(@{ times_of('tmo_key') }), 2, 'two requests with the same Idempotency-Key');

# Timeout after send, key not honoured: unknown and never re-sent.
ok(wait_until($node, "SELECT state <> 'sending' FROM idemgate.outbox WHERE effect_type = 'tmo'", 30),
	'timeout settled');
is(effect_state('tmo'), 'unknown 1', 'timeout after send → unknown');
like($node->safe_psql('app', "SELECT last_error FROM idemgate.outbox WHERE effect_type = 'tmo'"),
	qr/after the request was sent/, 'last_error says the request was sent');

# Backoff: 503 without Retry-After, three attempts, gaps ≥ 1 s and ≥ 4 s.
ok( wait_until($node, "SELECT state = 'failed' FROM idemgate.outbox WHERE effect_type = 'backoff'", 60),
	'backoff effect exhausted its attempts');
is(effect_state('backoff'), 'failed 3', 'failed after 3 attempts');
$ts = times_of('backoff');
is(scalar(@$ts), 3, 'three requests');
cmp_ok($ts->[1] - $ts->[0], '>=', 1.0, 'first retry ≥ 1 s later');
cmp_ok($ts->[2] - $ts->[1], '>=', 4.0, 'second retry ≥ 4 s later');
my $dl = $node->safe_psql('app',
	"SELECT id || ' ' || error_class || ' ' || attempts FROM idemgate.dead_letters WHERE idempotency_key = 'backoff-1'");
like($dl, qr/^\d+ unavailable 3$/, 'dead letter: unavailable, 3 attempts');
my ($dl_id) = split / /, $dl;

# Tmo was not re-sent meanwhile (several seconds have passed).
is(scalar(@{ times_of('tmo') }), 1, 'the unknown effect was never re-sent');

# Reinject after fixing the endpoint: delivered with the same key.
register_endpoint($node, 'backoff', "$base/ok", max_attempts => 3);
is($node->safe_psql('app', "SELECT idemgate.reinject($dl_id, 'tester')"), 't', 'reinjected');
ok( wait_until($node, "SELECT state = 'completed' FROM idemgate.outbox WHERE effect_type = 'backoff'", 30),
	'reinjected effect delivered');
my $id = $node->safe_psql('app', "SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'backoff'");
my $reqs = requests_by_key($sink)->{$id};
is(scalar(@$reqs), 4, 'four requests in all for the effect');
is($reqs->[3]{status}, 200, 'the last one succeeded');
is($reqs->[3]{path}, '/ok', 'at the fixed endpoint');
is($reqs->[3]{idempotency_key}, $reqs->[0]{idempotency_key}, 'with the same Idempotency-Key');

is(sink_stats($sink)->{keys_2xx_more_than_once}, 0, 'nothing delivered twice');

stop_sink($sink);
$node->stop;
done_testing();
