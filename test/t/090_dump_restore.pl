# pg_dump of a database using idemgate restores into a fresh database
# (pg_dump | psql): the rows of every extension table come back once (no
# duplicate control row or bundle_members), event and dead letter ids go on
# from the restored ones, the kill switch keeps its state, bundle grants
# still work, and DROP EXTENSION + CREATE EXTENSION works with the
# dispatcher running.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'idemgate'
idemgate.database = 'src'
idemgate.poll_interval = 200
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->safe_psql('postgres', 'CREATE ROLE dump_client');
$node->safe_psql('src', q{
	CREATE EXTENSION idemgate;
	SELECT idemgate.grant_role('dump_client', 'client');
	SELECT idemgate.watch_workflow('orders', '1 hour');
	SELECT * FROM idemgate.claim('dump-1', '{"n": 1}');
	SELECT * FROM idemgate.claim('dump-1', '{"n": 1}');
	SELECT idemgate.fail('dump-1', lease_owner, version, 'model', 'bad', false)
	  FROM idemgate.runs WHERE idempotency_key = 'dump-1';
	SELECT idemgate.set_actions_enabled(false, 'ops', 'incident');
});

my $tables = "runs events dead_letters approvals outbox endpoints control watched_workflows bundle_members granted_bundles";
my $counts = sub {
	my $db = shift;
	return join(' ', map { $node->safe_psql($db, "SELECT count(*) FROM idemgate.$_") } split(/ /, $tables));
};
my $before = $counts->('src');

my ($stdout, $stderr);
my $dump = '';
IPC::Run::run([ 'pg_dump', '-d', $node->connstr('src') ], '>', \$dump, '2>', \$stderr)
  or die "pg_dump failed: $stderr";
$node->psql('dst', $dump, stdout => \$stdout, stderr => \$stderr, on_error_stop => 0);
unlike($stderr, qr/ERROR/, 'restore runs without errors');
is($counts->('dst'), $before, 'every extension table has the same rows after restore');
is($node->safe_psql('dst', 'SELECT idemgate.actions_enabled()'), 'f', 'the kill switch stays off');

# New events and dead letters get fresh ids.
$node->safe_psql('dst', q{SELECT * FROM idemgate.claim('dump-1', '{"n": 1}')});
$node->safe_psql('dst', q{
	SELECT * FROM idemgate.claim('dump-2', '{"n": 2}');
	SELECT idemgate.fail('dump-2', lease_owner, version, 'model', 'bad', false)
	  FROM idemgate.runs WHERE idempotency_key = 'dump-2'});
is($node->safe_psql('dst', 'SELECT count(*) = count(DISTINCT id) FROM idemgate.events'), 't', 'events keep going');
is($node->safe_psql('dst', 'SELECT count(*) FROM idemgate.dead_letters'), '2', 'a second dead letter');

# The bundle grants came with the dump.
is($node->safe_psql('dst', q{SET ROLE dump_client; SELECT outcome FROM idemgate.claim('dump-3', '{}')}),
	'claimed', 'a client of the dumped database can claim in the restored one');

# DROP and CREATE again with the dispatcher running in src.
$node->safe_psql('src', 'DROP EXTENSION idemgate');
$node->safe_psql('src', 'CREATE EXTENSION idemgate');
is($node->safe_psql('src', q{SELECT outcome FROM idemgate.claim('dump-1', '{"n": 1}')}), 'claimed',
	'the extension works again after DROP and CREATE');
is($node->safe_psql('src', 'SELECT count(*) FROM idemgate.control'), '1', 'one control row');

$node->stop;
done_testing();
