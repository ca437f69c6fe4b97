# test/t/140_rerun_retry_after.pl
#    With the dispatcher and a loopback sink (src/operations/rerun.c, docs/outbox.md):
#    - reinjecting a run's dead letter re-posts its stored input to the
#      workflow's re-run endpoint (register_rerun) exactly once: one
#      request, its body the input itself, an Idempotency-Key that is the
#      re-post's effect id; the input then recovers the run through claim,
#      as the workflow's webhook would; a second reinject sends nothing;
#    - a workflow without a re-run endpoint is only moved back to
#      failed_retryable, as before: nothing is sent;
#    - a Retry-After longer than idemgate.max_backoff (1 hour) is honoured:
#      the effect is not due before it (one request only), and one longer
#      than 24 hours fails the effect with a dead letter instead of an
#      early retry.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node('rerun', 'idemgate.poll_interval' => '100ms');
my $sink = start_sink('rerun', 240);
my $base = $sink->{base};

# A run of workflow "invoices" and one of "others" fail for good.
my $input = '{"invoice": 4471, "customer": "ACME", "lines": [{"sku": "A-1", "qty": 2}]}';
$node->safe_psql('app', qq{
SELECT idemgate.register_rerun('invoices', '$base/webhook/invoices-rerun', '{"X-Rerun-Auth": "t0k"}');
DO \$\$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('inv-4471', '$input', '1 hour', 'invoices');
  PERFORM idemgate.fail(c.idempotency_key, c.lease_owner, c.version, 'model', 'schema drift', false);
  SELECT * INTO c FROM idemgate.claim('oth-1', '{"n": 1}', '1 hour', 'others');
  PERFORM idemgate.fail(c.idempotency_key, c.lease_owner, c.version, 'model', 'schema drift', false);
END \$\$;
});
my $dl = $node->safe_psql('app', "SELECT id FROM idemgate.dead_letters WHERE idempotency_key = 'inv-4471'");
my $dl_other = $node->safe_psql('app', "SELECT id FROM idemgate.dead_letters WHERE idempotency_key = 'oth-1'");
is($node->safe_psql('app', 'SELECT count(*) FROM idemgate.runs WHERE state = \'failed_terminal\''),
	'2', 'two runs failed for good, each with a dead letter');

# Reinject: the input goes out once, through the outbox.
is($node->safe_psql('app', "SELECT idemgate.reinject($dl, 'ops')"), 't', 'reinject the run dead letter');
ok( wait_until(
		$node,
		"SELECT state = 'completed' FROM idemgate.outbox WHERE idempotency_key = 'idemgate.rerun:$dl'", 30),
	'the re-post is delivered');
my $effect_id = $node->safe_psql('app',
	"SELECT effect_id FROM idemgate.outbox WHERE idempotency_key = 'idemgate.rerun:$dl'");
my @reposts = grep { $_->{path} eq '/webhook/invoices-rerun' } @{ sink_requests($sink) };
is(scalar(@reposts), 1, 'exactly one request reached the re-run endpoint');
is_deeply($reposts[0]->{body}, decode_json($input), 'its body is the stored input, as first received');
is($reposts[0]->{idempotency_key}, $effect_id, 'its Idempotency-Key is the re-post\'s effect id');
is($reposts[0]->{content_type}, 'application/json', 'as JSON');
is($reposts[0]->{headers}->{'X-Rerun-Auth'}, 't0k', 'with the registered headers');
is($node->safe_psql('app', "SELECT state FROM idemgate.runs WHERE idempotency_key = 'idemgate.rerun:$dl'"),
	'completed', 'the carrier run completed with its effect');

# The workflow's webhook claims what it received: the run recovers.
my $body = encode_json($reposts[0]->{body});
is( $node->safe_psql('app',
		"SELECT outcome || ' ' || state FROM idemgate.claim('inv-4471', '$body', '1 hour', 'invoices')"),
	'recovered processing', 'the re-posted input recovers the run through claim');

# Nothing more is sent: not by the dispatcher later, not by a second reinject.
is($node->safe_psql('app', "SELECT idemgate.reinject($dl, 'ops')"), 'f', 'a second reinject: false');
# The other workflow has no re-run endpoint: back to failed_retryable only.
is($node->safe_psql('app', "SELECT idemgate.reinject($dl_other, 'ops')"), 't', 'reinject the other run');
is($node->safe_psql('app', "SELECT state FROM idemgate.runs WHERE idempotency_key = 'oth-1'"),
	'failed_retryable', 'the other run is failed_retryable');
sleep 2;
@reposts = grep { $_->{path} eq '/webhook/invoices-rerun' } @{ sink_requests($sink) };
is(scalar(@reposts), 1, 'still one request after two more seconds');
is(scalar(@{ sink_requests($sink) }), 1, 'and nothing at all for the other workflow');

# Retry-After beyond max_backoff (1 hour): 429 with Retry-After 7200 s →
# pending, not due for two hours; Retry-After 90000 s (25 hours) → failed
# with a dead letter; one request each.
register_endpoint($node, 'ra_2h', "$base/status/429?retry_after=7200");
register_endpoint($node, 'ra_25h', "$base/status/503?retry_after=90000");
enqueue_effects($node, 'ra-2h', 1, 'ra_2h');
enqueue_effects($node, 'ra-25h', 1, 'ra_25h');
ok( wait_until(
		$node,
		"SELECT count(*) = 2 FROM idemgate.outbox WHERE effect_type IN ('ra_2h', 'ra_25h') AND attempts = 1 AND state IN ('pending', 'failed')",
		30),
	'both answered once');
is( $node->safe_psql('app',
		"SELECT state || ' ' || (next_attempt_at - updated_at >= interval '2 hours') FROM idemgate.outbox WHERE effect_type = 'ra_2h'"),
	'pending true', 'Retry-After 7200 s: pending, not due before two hours (max_backoff is 1 hour)');
is( $node->safe_psql('app',
		"SELECT state || ' ' || (SELECT error FROM idemgate.dead_letters d WHERE d.effect_id = o.effect_id) FROM idemgate.outbox o WHERE effect_type = 'ra_25h'"),
	'failed HTTP 503: {"error":"injected"} (Retry-After 90000 s is longer than the 86400 s a retry may wait; reinject it once the provider is ready)',
	'Retry-After 90000 s: failed with a dead letter that says why');
sleep 2;
my %n;
$n{ $_->{path} }++ for @{ sink_requests($sink) };
is($n{'/status/429?retry_after=7200'}, 1, 'one request to the 7200 s endpoint: no early retry');
is($n{'/status/503?retry_after=90000'}, 1, 'one request to the 90000 s endpoint');

stop_sink($sink);
$node->stop;
done_testing();
