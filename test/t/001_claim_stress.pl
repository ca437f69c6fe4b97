# Stress: 100 keys × 10 concurrent clients. Every key is claimed by ten
# pgbench transactions that run at about the same time (the key is derived
# from a shared sequence, ten consecutive values per key); exactly 100 must
# come back claimed and 900 duplicate, with one run and one owner per key.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stress');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'idemgate'\nidemgate.dispatchers = 0\nmax_connections = 40");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION idemgate;
	CREATE SEQUENCE stress_seq;
	CREATE TABLE stress_log (outcome text, idempotency_key text, lease_owner uuid);
});

my $script = $node->basedir . '/claim.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
INSERT INTO stress_log
SELECT outcome, idempotency_key, lease_owner
  FROM idemgate.claim('stress-' || ((nextval('stress_seq') - 1) / 10), '{"event": "webhook"}');
});

$node->command_ok(
	[ 'pgbench', '-n', '-c', '10', '-j', '2', '-t', '100', '-f', $script, 'postgres' ],
	'pgbench: 10 clients × 100 claims');

is($node->safe_psql('postgres', "SELECT count(*) FROM stress_log"), '1000', 'all 1000 calls answered');
is($node->safe_psql('postgres', "SELECT count(*) FROM stress_log WHERE outcome = 'claimed'"),
	'100', 'exactly 100 claimed');
is($node->safe_psql('postgres', "SELECT count(DISTINCT idempotency_key) FROM stress_log WHERE outcome = 'claimed'"),
	'100', 'each key claimed once');
is($node->safe_psql('postgres', "SELECT count(*) FROM stress_log WHERE outcome = 'duplicate'"),
	'900', 'the other 900 are duplicates');
is($node->safe_psql('postgres', "SELECT count(*) FROM stress_log WHERE outcome NOT IN ('claimed', 'duplicate')"),
	'0', 'no other outcome');
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.runs"), '100', '100 runs');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM idemgate.runs r JOIN stress_log l
	    ON l.idempotency_key = r.idempotency_key AND l.outcome = 'claimed'
	 WHERE r.lease_owner = l.lease_owner AND r.version = 0}),
	'100', 'each run is owned by its single claimer');
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.events WHERE kind = 'duplicate'"),
	'900', 'every duplicate is countable in the events');

$node->stop;
done_testing();
