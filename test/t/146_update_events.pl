# test/t/146_update_events.pl
#    Updating 1.1 to 1.2 while claims go on (README.md, "Upgrading"):
#      - with this library on the 1.1 schema, claims keep working (new key,
#        duplicate, takeover; origin is accepted and has nowhere to go yet),
#        and so do publish_alerts, prometheus() and purge;
#      - the update rewrites the endpoint_registered events written under
#        1.1, which named the endpoint's host, to a fingerprint of it
#        (readers see the events: no internal host names there);
#      - after it, claims keep their origin and takeovers their cause.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('update_events');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'idemgate'\nidemgate.database = 'app'\nidemgate.dispatchers = 0\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', "CREATE EXTENSION idemgate VERSION '1.1'");

# An endpoint registered under 1.1 left its host in the event (written
# here as 1.1's library wrote it).
$node->safe_psql('app', q{
	INSERT INTO idemgate.events (kind, actor, details)
	VALUES ('endpoint_registered', 'ops',
	        '{"effect_type": "crm_note", "created": true, "scheme": "https", "host": "crm.corp.internal"}');
});

# The 1.1 schema, this library.
is($node->safe_psql('app', q{
	SELECT string_agg(outcome, ',' ORDER BY n) FROM (
	  SELECT 1 AS n, outcome FROM idemgate.claim('u-1', '{"a": 1}', '1 second', 'wf')
	  UNION ALL
	  SELECT 2, outcome FROM idemgate.claim('{"key": "u-2", "payload": {}, "origin": "webhook"}'::jsonb)) c}),
	'claimed,claimed', 'on the 1.1 schema: claims, with and without origin');
is($node->safe_psql('app', "SELECT outcome FROM idemgate.claim('u-1', '{\"a\": 1}')"), 'duplicate', 'a duplicate');
sleep 2;
is($node->safe_psql('app', "SELECT outcome FROM idemgate.claim('u-1', '{\"a\": 1}', '1 minute')"), 'recovered',
	'a takeover of the expired lease');
my ($ret, $out, $err) = $node->psql('app', "SELECT * FROM idemgate.claim('u-1', '{\"a\": 2}')");
like($err, qr/IG001|different payload/, 'a different payload: IG001');
is($node->safe_psql('app', q{
	SELECT idemgate.cas_transition('u-1', lease_owner, version, 'completed') FROM idemgate.runs WHERE idempotency_key = 'u-1'}),
	'2', 'a transition');
is($node->safe_psql('app', 'SELECT idemgate.publish_alerts() >= 0'), 't', 'publish_alerts works');
like($node->safe_psql('app', 'SELECT idemgate.prometheus()'), qr/idemgate_claims\{window="7d"\} \d+/, 'prometheus() works');
is($node->safe_psql('app', q{
	UPDATE idemgate.runs SET updated_at = now() - interval '2 days', created_at = now() - interval '2 days'
	 WHERE idempotency_key = 'u-1';
	SELECT idemgate.purge('1 day')}), '1', 'purge works');

# The update.
$node->safe_psql('app', "ALTER EXTENSION idemgate UPDATE TO '1.2'");
is($node->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'idemgate'"), '1.2', 'updated to 1.2');
is($node->safe_psql('app', q{
	SELECT details::text FROM idemgate.events WHERE kind = 'endpoint_registered'}),
	'{"scheme": "https", "created": true, "effect_type": "crm_note", "host_sha256": "'
	  . $node->safe_psql('app', "SELECT left(encode(sha256('crm.corp.internal'), 'hex'), 16)") . '"}',
	'the event written under 1.1 keeps a fingerprint of the host, not the host');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.events WHERE details::text LIKE '%corp.internal%'"), '0',
	'no event names the host');

# 1.2: origin and the takeover's cause are kept.
$node->safe_psql('app', "SELECT idemgate.claim('u-3', '{}', '1 second', 'wf', origin => 'webhook:erp')");
sleep 2;
$node->safe_psql('app', "SELECT idemgate.claim('u-3', '{}', '1 minute', 'wf', origin => 'redelivery')");
is($node->safe_psql('app', q{
	SELECT r.origin || ' ' || r.recovered_from || ' ' || (e.details->>'origin')
	  FROM idemgate.runs r JOIN idemgate.events e USING (idempotency_key)
	 WHERE r.idempotency_key = 'u-3' AND e.kind = 'recovered'}),
	'webhook:erp processing redelivery', 'after the update: origin and the takeover from an expired lease');

$node->stop;
done_testing();
