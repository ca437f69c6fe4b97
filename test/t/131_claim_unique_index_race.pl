# A user's second unique index on idempotency_key, and 8 clients racing to
# claim each new key (the key is derived from a shared sequence, eight
# consecutive values per key, so the eight calls of a key run at about the
# same time). The claim statement's ON CONFLICT takes every unique index on
# the key as an arbiter, so a loser of a race sees a conflict and answers
# duplicate; a claim that checked the primary key only would insert into
# the second index unchecked and abort with 23505 (src/ledger/claim_direct.c sends
# claims on such a table to the statement). Then the same race on the
# table as the extension creates it (the direct path).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('unique_race');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'idemgate'\nidemgate.dispatchers = 0\nmax_connections = 40");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION idemgate;
	CREATE SEQUENCE race_seq;
	CREATE TABLE race_log (round text, outcome text, idempotency_key text);
	CREATE UNIQUE INDEX runs_key_unique ON idemgate.runs (idempotency_key);
});

# race(round): 8 clients × 100 claims, 100 keys; the outcomes by key.
sub race
{
	my ($round) = @_;
	my $script = $node->basedir . "/claim_$round.sql";
	PostgreSQL::Test::Utils::append_to_file($script, qq{
INSERT INTO race_log
SELECT '$round', outcome, idempotency_key
  FROM idemgate.claim('$round-' || ((nextval('race_seq') - 1) / 8), '{"event": "webhook"}');
});
	$node->command_ok(
		[ 'pgbench', '-n', '-c', '8', '-j', '2', '-t', '100', '-f', $script, 'postgres' ],
		"$round: 8 clients × 100 claims, none aborted");
	is($node->safe_psql('postgres', qq{
		SELECT count(*), count(*) FILTER (WHERE outcome = 'claimed'),
		       count(DISTINCT idempotency_key) FILTER (WHERE outcome = 'claimed'),
		       count(*) FILTER (WHERE outcome = 'duplicate')
		  FROM race_log WHERE round = '$round'}),
		'800|100|100|700', "$round: 800 answers, each of the 100 keys claimed once, 700 duplicates");
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE '$round-%'}),
		'100', "$round: 100 runs");
}

race('unique');
$node->safe_psql('postgres', 'DROP INDEX idemgate.runs_key_unique');
$node->safe_psql('postgres', q{SELECT setval('race_seq', 1, false)});
race('direct');

$node->stop;
done_testing();
