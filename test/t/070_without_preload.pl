# Without shared_preload_libraries every function works; effects wait for an
# external worker (the pull API). The whole path — claim, approval, enqueue,
# claim_effects, complete_effect, dead letter, reinject — runs on a cluster
# that never preloaded the library, and nothing is sent by anyone else.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('nopreload');
$node->init;
# A newcomer's postgresql.conf: the dispatcher's settings, but the preload
# forgotten.
$node->append_conf('postgresql.conf', "idemgate.database = 'postgres'\nidemgate.dispatchers = 2\n");
$node->start;
my ($cret, $cout, $cerr) = $node->psql('postgres', 'CREATE EXTENSION idemgate');
is($cret, 0, 'CREATE EXTENSION works without the preload');
like($cerr, qr/NOTICE:  idemgate is not in shared_preload_libraries: no dispatcher runs on this server/,
	'and says in one NOTICE that no dispatcher runs');
is(scalar(() = $cerr =~ /NOTICE/g), 1, 'one NOTICE only');
# Before 1.3 every session that used idemgate warned "invalid configuration
# parameter name "idemgate.database", removing it", which reads as a typo.
# (hash_payload loads the library in this session: that is when the
# placeholder used to be removed.)
my ($sret, $sout, $serr) = $node->psql('postgres',
	"SELECT octet_length(idemgate.hash_payload('{}')); SHOW idemgate.database");
is($sout, "32\npostgres", 'a session that loaded the library reads the settings');
unlike($serr, qr/invalid configuration parameter|WARNING/, 'with no warning about them');
my ($dret, $dout, $derr) = $node->psql('postgres',
	'SELECT count(*) FROM idemgate.dispatcher_status()');
is($dout, '0', 'dispatcher_status() lists no dispatcher');
like($derr, qr/NOTICE:  idemgate is not in shared_preload_libraries.*HINT:  Add idemgate to shared_preload_libraries/s,
	'and says why, with the fix');

is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'), '', 'library not preloaded');

my $claim = $node->safe_psql('postgres', q{
	SELECT outcome || ' ' || version FROM idemgate.claim('np-1', '{"order": 1}', '5 minutes', 'orders', '00000000-0000-4000-8000-000000000001')});
is($claim, 'claimed 0', 'claim works');

# Approval gate: request, consume, effects enqueued in one transaction.
my $token = $node->safe_psql('postgres', q{
	SELECT token FROM idemgate.request_approval('np-1', '00000000-0000-4000-8000-000000000001', 0,
	  '[{"type": "email", "target": "a@example.com", "payload": {"n": 1}},
	    {"type": "email", "target": "b@example.com", "payload": {"n": 2}}]')});
is(length($token), 43, 'a 43-character token');
is($node->safe_psql('postgres', "SELECT outcome || ' ' || cardinality(effect_ids) FROM idemgate.consume_approval('$token', 'approve', 'maria')"),
	'approved 2', 'approved, two effects enqueued');

# Nobody delivers them: no dispatcher without the preload.
sleep 1;
is($node->safe_psql('postgres', "SELECT string_agg(state, ',' ORDER BY target) FROM idemgate.outbox"),
	'pending,pending', 'effects wait for a worker');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'idemgate%'"),
	'0', 'no idemgate background worker');

# An external worker pulls them.
my $rows = $node->safe_psql('postgres', q{
	SELECT effect_id || ' ' || lease_owner FROM idemgate.claim_effects('email', 10) ORDER BY target});
my @claimed = map { [ split / / ] } split /\n/, $rows;
is(scalar(@claimed), 2, 'claim_effects hands out both');
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.claim_effects('email', 10)"),
	'0', 'a second worker gets nothing');
is($node->safe_psql('postgres', "SELECT idemgate.complete_effect('$claimed[0][0]', '$claimed[0][1]', 'prov-1')"),
	't', 'first effect completed');
is($node->safe_psql('postgres', "SELECT state FROM idemgate.runs WHERE idempotency_key = 'np-1'"),
	'approved', 'run waits for its last effect');
is($node->safe_psql('postgres', "SELECT idemgate.fail_effect('$claimed[1][0]', '$claimed[1][1]', 'rejected', 'HTTP 400')"),
	'failed', 'second effect rejected');
my $dl = $node->safe_psql('postgres', "SELECT id FROM idemgate.dead_letters WHERE kind = 'effect'");
ok($dl ne '', 'rejected effect dead-lettered');
is($node->safe_psql('postgres', "SELECT idemgate.reinject($dl, 'oncall')"), 't', 'reinjected');
$rows = $node->safe_psql('postgres', q{SELECT effect_id || ' ' || lease_owner FROM idemgate.claim_effects('email', 10)});
my ($eid, $owner) = split / /, $rows;
is($eid, $claimed[1][0], 'the same effect id comes back');
is($node->safe_psql('postgres', "SELECT idemgate.complete_effect('$eid', '$owner', 'prov-2')"), 't', 'delivered');
is($node->safe_psql('postgres', "SELECT state FROM idemgate.runs WHERE idempotency_key = 'np-1'"),
	'completed', 'run completed with its last effect');

# Kill switch, metrics and alerts work too.
$node->safe_psql('postgres', "SELECT idemgate.set_actions_enabled(false, 'oncall', 'test')");
$node->safe_psql('postgres', q{
	SELECT 1 FROM idemgate.claim('np-2', '{}', '5 minutes', NULL, '00000000-0000-4000-8000-000000000002');
	SELECT 1 FROM idemgate.enqueue_effect('np-2', '00000000-0000-4000-8000-000000000002', 0,
	  '{"type": "email", "target": "c@example.com", "payload": {}}')});
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.claim_effects('email')"), '0',
	'kill switch off: nothing handed out');
is($node->safe_psql('postgres', "SELECT claims || ' ' || human_approved || ' ' || auto_approved FROM idemgate.metrics()"),
	'2 1 1', 'metrics count the history');
ok(defined $node->safe_psql('postgres', 'SELECT count(*) FROM idemgate.alerts'), 'alerts view answers');

# The schema belongs to the extension: DROP EXTENSION removes it, and a
# schema created beforehand by someone else is never adopted.
$node->safe_psql('postgres', 'DROP EXTENSION idemgate');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_namespace WHERE nspname = 'idemgate'"),
	'0', 'DROP EXTENSION removes schema idemgate');
$node->safe_psql('postgres', q{
	CREATE ROLE squatter LOGIN;
	GRANT CREATE ON DATABASE postgres TO squatter;
	SET ROLE squatter;
	CREATE SCHEMA idemgate;
	RESET ROLE;});
my ($ret, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION idemgate');
isnt($ret, 0, 'CREATE EXTENSION refuses a schema someone else created');
like($err, qr/schema "idemgate" already exists/, '... saying why');
$node->safe_psql('postgres', 'DROP SCHEMA idemgate; CREATE EXTENSION idemgate');
is($node->safe_psql('postgres', "SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'idemgate'"),
	scalar($node->safe_psql('postgres', 'SELECT current_user')), 'then the extension owns its schema');

$node->stop;
done_testing();
