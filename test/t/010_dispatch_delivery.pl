# test/t/010_dispatch_delivery.pl
#    The dispatcher delivers: 1,000 effects exactly once each, the documented
#    request (body, headers, Idempotency-Key = effect id), the provider id
#    from the response, a new effect promptly after commit even with a 60 s
#    poll interval (the latch, not polling), and a 3xx is a rejected
#    failure that is never followed.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = dispatch_node('delivery', 'idemgate.poll_interval' => '60s');
my $sink = start_sink('delivery', 240);
my $base = $sink->{base};

register_endpoint($node, 'bulk', "$base/ok",
	headers => '{"X-Trace-Id": "trace-1"}');
register_endpoint($node, 'named', "$base/ok?field=message_id",
	provider_id_field => 'message_id');
register_endpoint($node, 'redirect',
	"$base/status/307?location=$base/ok%3Fredirected%3D1");

# 1,000 effects in one transaction: all completed, each sent exactly once.
enqueue_effects($node, 'bulk', 1000, 'bulk');
ok( wait_until(
		$node,
		"SELECT count(*) = 1000 FROM idemgate.outbox WHERE effect_type = 'bulk' AND state = 'completed'",
		120),
	'1000 effects completed');
is( $node->safe_psql(
		'app', "SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'bulk-%' AND state = 'completed'"),
	'1000',
	'their runs completed');

my $by_key = requests_by_key($sink);
my @bulk = grep { $_->{path} eq '/ok' } @{ sink_requests($sink) };
is(scalar(@bulk), 1000, 'the sink got 1000 requests');
my %keys = map { $_->{idempotency_key} => 1 } @bulk;
is(scalar(keys %keys), 1000, '1000 distinct Idempotency-Keys');
is(sink_stats($sink)->{keys_2xx_more_than_once}, 0, 'no key delivered twice');
cmp_ok(sink_stats($sink)->{connections}, '<=', 70,
	'keep-alive: 1000 requests over about max_in_flight (64) connections');

my $ids = $node->safe_psql('app',
	"SELECT string_agg(effect_id::text, ',') FROM idemgate.outbox WHERE effect_type = 'bulk'");
is_deeply([ sort keys %keys ], [ sort split /,/, $ids ],
	'the Idempotency-Keys are the effect ids');

# The request is the documented one.
my $one = $node->safe_psql('app',
	"SELECT effect_id || '|' || idempotency_key || '|' || target || '|' || provider_id FROM idemgate.outbox WHERE idempotency_key = 'bulk-7'");
my ($eid, $ikey, $target, $provider) = split /\|/, $one;
my $req = $by_key->{$eid}[0];
is($req->{method}, 'POST', 'POST');
is($req->{content_type}, 'application/json', 'Content-Type: application/json');
is($req->{headers}{'X-Trace-Id'}, 'trace-1', "the endpoint's headers are sent");
is_deeply(
	[ sort keys %{ $req->{body} } ],
	[qw(attempt effect_id effect_type idempotency_key payload target)],
	'body has exactly the documented fields');
is($req->{body}{effect_id}, $eid, 'body effect_id');
is($req->{body}{idempotency_key}, 'bulk-7', 'body idempotency_key');
is($req->{body}{effect_type}, 'bulk', 'body effect_type');
is($req->{body}{target}, 'target-7', 'body target');
is($req->{body}{payload}{i}, 7, 'body payload');
is($req->{body}{attempt}, 1, 'body attempt');
is($provider, "prov-$req->{n}", 'provider id taken from the response body field id');

# Headers an endpoint may hold from before register_endpoint refused the
# dispatcher's own names (written here straight into the table): those are
# dropped, the others sent, each as "Name: value".
register_endpoint($node, 'legacy', "$base/ok");
$node->safe_psql('app',
	q{UPDATE idemgate.endpoints SET headers = '{"IDEMPOTENCY-KEY": "forged", "content-type": "text/plain", "Expect": "100-continue", "X-Two": "2"}' WHERE effect_type = 'legacy'});
enqueue_effects($node, 'legacy', 1, 'legacy');
ok( wait_until(
		$node,
		"SELECT count(*) = 1 FROM idemgate.outbox WHERE effect_type = 'legacy' AND state = 'completed'",
		60),
	'the effect of an endpoint with stored reserved headers completed');
my $legacy_id = $node->safe_psql('app',
	"SELECT effect_id FROM idemgate.outbox WHERE effect_type = 'legacy'");
my $legacy = requests_by_key($sink)->{$legacy_id} // [];
is(scalar(@$legacy), 1, "sent once, under the effect id's Idempotency-Key (not the stored one)");
is($legacy->[0]{content_type}, 'application/json', "the dispatcher's Content-Type, not the stored one");
is($legacy->[0]{headers}{'X-Two'}, '2', 'the other stored headers are sent');
is(scalar(grep { $_->{idempotency_key} eq 'forged' } @{ sink_requests($sink) }), 0,
	'no request carried the stored Idempotency-Key');

# provider_id_field names another field.
enqueue_effects($node, 'named', 1, 'named');
ok( wait_until(
		$node, "SELECT state = 'completed' FROM idemgate.outbox WHERE effect_type = 'named'", 30),
	'named effect completed');
like($node->safe_psql('app', "SELECT provider_id FROM idemgate.outbox WHERE effect_type = 'named'"),
	qr/^prov-\d+$/, 'provider id read from provider_id_field');

# Prompt pick-up: the poll interval is 60 s and the dispatcher is idle now,
# so only the wake-up at commit can deliver within 10 s.
sleep 1;
my $t0 = time;
enqueue_effects($node, 'prompt', 1, 'bulk');
ok( wait_until(
		$node,
		"SELECT state = 'completed' FROM idemgate.outbox WHERE idempotency_key = 'prompt-1'",
		10),
	'a new effect is delivered within 10 s although poll_interval is 60 s');
note(sprintf('commit to completed: %.3f s', time - $t0));

# A 3xx is rejected: failed, dead letter, and the Location is never followed.
enqueue_effects($node, 'redir', 1, 'redirect');
ok( wait_until(
		$node, "SELECT state = 'failed' FROM idemgate.outbox WHERE effect_type = 'redirect'", 30),
	'3xx → failed');
is( $node->safe_psql(
		'app',
		"SELECT last_status || ' ' || attempts FROM idemgate.outbox WHERE effect_type = 'redirect'"),
	'307 1',
	'one attempt, status 307 recorded');
is( $node->safe_psql(
		'app',
		"SELECT error_class FROM idemgate.dead_letters WHERE idempotency_key = 'redir-1'"),
	'rejected',
	'dead letter with error_class rejected');
is(scalar(grep { ($_->{path} // '') =~ m{^/ok\?redirected} } @{ sink_requests($sink) }),
	0, 'the redirect target was never requested');

# Housekeeping: the first dispatcher expires approvals by itself.
$node->safe_psql('app', q{
SELECT r.* FROM idemgate.claim('appr-1', '{}') c,
  LATERAL idemgate.request_approval(c.idempotency_key, c.lease_owner, c.version,
    '{"type": "bulk", "target": "x", "payload": {}}', '1 second') r});
ok( wait_until(
		$node,
		"SELECT count(*) = 1 FROM idemgate.events WHERE idempotency_key = 'appr-1' AND kind = 'approval_expired'",
		20),
	'the dispatcher expired the approval (housekeeping)');

# A housekeeping error is logged and the loop goes on: publish_alerts() is
# swapped for a stand-in that fails (the real one is put back afterwards).
{
	my $log_offset = -s $node->logfile;
	my $real = $node->safe_psql('app',
		"SELECT to_regprocedure('idemgate.publish_alerts()') IS NOT NULL");
	$node->safe_psql('app',
		'ALTER FUNCTION idemgate.publish_alerts() RENAME TO publish_alerts_real')
	  if $real eq 't';
	$node->safe_psql('app', q{
CREATE FUNCTION idemgate.publish_alerts() RETURNS integer LANGUAGE plpgsql
AS $$ BEGIN RAISE EXCEPTION 'housekeeping stand-in fails'; END $$});
	ok($node->wait_for_log(qr/housekeeping stand-in fails/, $log_offset),
		'the housekeeping error is logged');
	enqueue_effects($node, 'after_error', 1, 'bulk');
	ok( wait_until(
			$node,
			"SELECT state = 'completed' FROM idemgate.outbox WHERE idempotency_key = 'after_error-1'",
			20),
		'the dispatcher still delivers after a housekeeping error');
	$node->safe_psql('app', 'DROP FUNCTION idemgate.publish_alerts()');
	$node->safe_psql('app',
		'ALTER FUNCTION idemgate.publish_alerts_real() RENAME TO publish_alerts')
	  if $real eq 't';
}

# The URL is checked again before each send: after 127.0.0.1 is removed
# from idemgate.allowed_http_hosts, the registered endpoint gets nothing
# and the effect fails as rejected.
$node->append_conf('postgresql.conf', "idemgate.allowed_http_hosts = 'localhost'");
$node->reload;
sleep 1;
my $before = scalar(@{ sink_requests($sink) });
enqueue_effects($node, 'denied', 1, 'bulk');
ok( wait_until(
		$node, "SELECT state = 'failed' FROM idemgate.outbox WHERE idempotency_key = 'denied-1'", 30),
	'effect to a no longer allowed URL failed');
like($node->safe_psql('app', "SELECT last_error FROM idemgate.outbox WHERE idempotency_key = 'denied-1'"),
	qr/allowed_http_hosts/, 'last_error names idemgate.allowed_http_hosts');
is(scalar(@{ sink_requests($sink) }), $before, 'no request was sent');

# Counters of the dispatcher.
my $st = $node->safe_psql('app',
	'SELECT sum(claimed), sum(completed) FROM idemgate.dispatcher_status()');
like($st, qr/^\d+\|\d+$/, 'dispatcher_status reports counters');

$node->stop;

# Two dispatchers share the work without ever sending an effect twice
# (SKIP LOCKED claims): 2,000 effects, 2,000 claims, 2,000 distinct keys.
my $two = dispatch_node('two', 'idemgate.dispatchers' => 2, 'idemgate.batch_size' => 50);
ok($two->poll_query_until('app', 'SELECT count(*) = 2 FROM idemgate.dispatcher_status()'),
	'two dispatchers run');
my $sink2 = start_sink('two', 120);
$two->safe_psql('app',
	"SELECT idemgate.register_endpoint('bulk', '$sink2->{base}/ok', '5 seconds')");
enqueue_effects($two, 'two', 2000, 'bulk');
ok( wait_until(
		$two, "SELECT count(*) = 2000 FROM idemgate.outbox WHERE state = 'completed'", 120),
	'2000 effects completed by two dispatchers');
is($two->safe_psql('app', 'SELECT sum(claimed) FROM idemgate.dispatcher_status()'),
	'2000', 'exactly 2000 claims in all');
my $st2 = sink_stats($sink2);
is($st2->{requests}, 2000, 'the sink got 2000 requests');
is($st2->{distinct_keys}, 2000, '2000 distinct keys');
is($st2->{keys_2xx_more_than_once}, 0, 'none twice');
stop_sink($sink2);
$two->stop;

stop_sink($sink);
done_testing();
