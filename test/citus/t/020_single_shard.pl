# test/citus/t/020_single_shard.pl
#    Routing (SPEC §16): after distribute(), every per-key call touches one
#    shard group, found from its arguments alone, with no two-phase commit.
#    The client session sets citus.multi_task_query_log_level = 'error', so
#    Citus refuses any statement that would visit more than one shard; the
#    coordinator keeps its 2PC records (citus.recover_2pc_interval = -1), so
#    pg_dist_transaction counts every two-phase commit made. The calls:
#    claim (both forms), claim_lease, enqueue_effect (delivered by a
#    worker's dispatcher; the run completes), request_approval,
#    peek_approval, consume_approval, cas_transition, renew_lease, fail,
#    record_validation, complete_effect (both forms), fail_effect,
#    cancel_effect, resolve_effect, reinject, and a claim of a purged key
#    (its tombstone, on the key's shard). Also: the claim is in the
#    distributed table (the direct-insert fast path is off), approval tokens
#    are 48 characters ending in '.' and the bucket in 4 hex digits, and
#    effect and approval ids are version-8 uuids starting with the bucket.
use strict;
use warnings;

use lib 'test/citus';
use lib 'test/t';
use CitusCluster;
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $cl = citus_cluster('single', distribute => 1);
my $coord = $cl->{coord};
my $sink = start_sink('single', 300);
register_endpoint($coord, 'sent', "$sink->{base}/ok");
$coord->safe_psql('app', q{
ALTER SYSTEM SET citus.recover_2pc_interval = -1;
SELECT pg_reload_conf();
});
$coord->poll_query_until('app', "SELECT current_setting('citus.recover_2pc_interval') = '-1'")
  or die 'citus.recover_2pc_interval not applied';
$coord->safe_psql('app', 'SELECT recover_prepared_transactions()');
is($coord->safe_psql('app', 'SELECT count(*) FROM pg_dist_transaction'), '0',
	'no 2PC record before the calls');

# single($label, $sql): runs $sql in a session where multi-shard statements
# are errors, then counts the two-phase commits this session made. Returns
# the result lines of $sql.
sub single
{
	my ($label, $sql) = @_;
	my ($ret, $out, $err) = psql_result($coord,
		"SET citus.multi_task_query_log_level = 'error';\n$sql;\n"
		  . "SELECT 'TX:' || count(*) FROM pg_dist_transaction"
		  . " WHERE gid LIKE 'citus\\_%\\_' || pg_backend_pid() || '\\_%';");
	my @lines = split /\n/, $out;
	my $tx = @lines && $lines[-1] =~ /^TX:(\d+)$/ ? (pop(@lines), $1)[1] : 'none';
	ok($ret == 0, "$label: single-shard") or diag("$label: $err");
	is($tx, '0', "$label: no two-phase commit");
	return @lines;
}

# pull($sql): claim_effects may visit every shard (docs/citus.md), so
# leasing effects of two shards on two workers is a two-phase commit; the
# ones it makes are counted apart. Returns the result lines of $sql.
my $pull_tx = 0;
sub pull
{
	my ($sql) = @_;
	my ($ret, $out, $err) = psql_result($coord,
		"$sql;\n"
		  . "SELECT 'TX:' || count(*) FROM pg_dist_transaction"
		  . " WHERE gid LIKE 'citus\\_%\\_' || pg_backend_pid() || '\\_%';");
	my @lines = split /\n/, $out;
	$pull_tx += $1 if @lines && $lines[-1] =~ /^TX:(\d+)$/;
	pop @lines if @lines && $lines[-1] =~ /^TX:/;
	diag("pull: $err") if $ret != 0;
	return @lines;
}

# run_of($key) → (owner, version) read with a multi-shard statement.
sub run_of
{
	my ($key) = @_;
	return split /\|/, query($coord,
		"SELECT lease_owner, version FROM idemgate.runs WHERE idempotency_key = '$key'");
}

sub bucket_hex
{
	my ($key) = @_;
	return query($coord, "SELECT lpad(to_hex(idemgate.key_bucket('$key')), 4, '0')");
}

sub check_uuid
{
	my ($label, $id, $key) = @_;
	like($id, qr/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
		"$label: a version-8 uuid");
	is(substr($id, 0, 4), bucket_hex($key), "$label: starts with the bucket of '$key'");
}

# --- claim, enqueue_effect, delivery, the run completes -------------------
my ($c) = single('claim', "SELECT outcome || '|' || lease_owner || '|' || version FROM idemgate.claim('s-1', '{\"n\": 1}')");
my ($outcome, $owner, $version) = split /\|/, $c // '';
is($outcome, 'claimed', 'claim: claimed');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 's-1'"),
	'1', 'the claimed run is visible in a distributed SELECT (fast path not used)');
is(query($coord,
	"SELECT bucket = idemgate.key_bucket('s-1') FROM idemgate.runs WHERE idempotency_key = 's-1'"),
	't', 'its bucket is key_bucket(key)');
is(query($coord, "SELECT pg_relation_size('idemgate.runs')"), '0',
	"the coordinator's shell table stayed empty");
my ($dup) = single('claim duplicate', "SELECT outcome FROM idemgate.claim('s-1', '{\"n\": 1}')");
is($dup, 'duplicate', 'second claim: duplicate');

my ($e) = single('enqueue_effect', "SELECT effect_ids[1] || '|' || version FROM idemgate.enqueue_effect('s-1', '$owner', $version,"
	  . " '{\"type\": \"sent\", \"target\": \"t-1\", \"payload\": {\"n\": 1}}')");
my ($eid) = split /\|/, $e // '';
check_uuid('effect id', $eid // '', 's-1');
ok(defined $eid && $eid =~ /^[0-9a-f-]{36}$/
	  && poll_app($coord, "SELECT state = 'completed' FROM idemgate.runs WHERE idempotency_key = 's-1'", 60),
	'the effect was delivered and the run completed');
is(scalar(@{ requests_by_key($sink)->{ $eid // '' } // [] }), 1, 'the sink got it once');

# --- claim (jsonb form), claim_lease ------------------------------------
my ($cj) = single('claim(jsonb)', q{SELECT outcome FROM idemgate.claim('{"key": "s-j", "payload": {"n": 2}}'::jsonb)});
is($cj, 'claimed', 'claim(jsonb): claimed');
my ($cl1) = single('claim_lease', "SELECT count(*) FROM idemgate.claim_lease('s-lease', idemgate.hash_payload('{}'), gen_random_uuid(), '1 minute')");
is($cl1, '1', 'claim_lease: one row');

# --- approvals ----------------------------------------------------------
single('claim', "SELECT outcome FROM idemgate.claim('s-2', '{\"n\": 2}')");
($owner, $version) = run_of('s-2');
my ($ra) = single('request_approval', "SELECT approval_id || '|' || token FROM idemgate.request_approval('s-2', '$owner', $version,"
	  . " '{\"type\": \"pulled\", \"target\": \"t-2\", \"payload\": {\"n\": 2}}', requested_by => 'alice')");
my ($aid, $token) = split /\|/, $ra // '';
$token //= '';
is(length($token), 48, 'token: 48 characters');
like($token, qr/^[A-Za-z0-9_-]{43}\.[0-9a-f]{4}$/, "token: 43 base64url characters, '.', 4 hex digits");
is(substr($token, 44), bucket_hex('s-2'), 'token: ends with the bucket');
check_uuid('approval id', $aid // '', 's-2');
my ($peek) = single('peek_approval', "SELECT status || '|' || idempotency_key FROM idemgate.peek_approval('$token')");
is($peek, 'pending|s-2', 'peek_approval: pending');
my ($ca) = single('consume_approval', "SELECT outcome || '|' || effect_ids[1] FROM idemgate.consume_approval('$token', 'approve', 'bob')");
my ($co, $aeid) = split /\|/, $ca // '';
is($co, 'approved', 'consume_approval: approved');
check_uuid('effect id from an approval', $aeid // '', 's-2');

# Pull: claim_effects may visit every shard (not under the restriction).
my ($peid, $powner) = split /\|/, query($coord,
	"SELECT effect_id || '|' || lease_owner FROM idemgate.claim_effects('pulled', 10)");
is($peid, $aeid, 'claim_effects hands out the approved effect');
my ($cmp) = single('complete_effect(jsonb)',
	"SELECT idemgate.complete_effect(jsonb_build_object('effect_id', '$aeid', 'owner', '$powner', 'provider_id', 'p-2'))");
is($cmp, 't', 'complete_effect(jsonb): true');
is(query($coord, "SELECT state FROM idemgate.runs WHERE idempotency_key = 's-2'"),
	'completed', 'the approved run completed');

# --- cas_transition, renew_lease, fail, record_validation ----------------
single('claim', "SELECT outcome FROM idemgate.claim('s-3', '{\"n\": 3}')");
($owner, $version) = run_of('s-3');
my ($rv) = single('record_validation', "SELECT valid || '|' || attempt FROM idemgate.record_validation('s-3', '$owner', $version, '{\"a\": 1}', '{\"type\": \"object\"}')");
is($rv, 'true|1', 'record_validation: valid, attempt 1');
my ($rl) = single('renew_lease', "SELECT idemgate.renew_lease('s-3', '$owner', $version, '1 minute') IS NOT NULL");
is($rl, 't', 'renew_lease: renewed');
my ($cas) = single('cas_transition', "SELECT idemgate.cas_transition('s-3', '$owner', $version, 'completed', '{\"ok\": true}')");
is($cas, $version + 1, 'cas_transition: new version');

single('claim', "SELECT outcome FROM idemgate.claim('s-4', '{\"n\": 4}')");
($owner, $version) = run_of('s-4');
my ($fl) = single('fail', "SELECT idemgate.fail('s-4', '$owner', $version, 'transient', 'try again', true)");
is($fl, 'failed_retryable', 'fail: failed_retryable');
my ($rec) = single('claim (recover)', "SELECT outcome FROM idemgate.claim('s-4', '{\"n\": 4}')");
is($rec, 'recovered', 'claim after fail: recovered');

# --- fail_effect, reinject, resolve_effect, cancel_effect ----------------
# Three runs with one 'pulled' effect each, pulled with claim_effects.
my %eff;
for my $k (qw(s-5 s-6 s-7))
{
	single('claim', "SELECT outcome FROM idemgate.claim('$k', '{}')");
	($owner, $version) = run_of($k);
	my $type = $k eq 's-7' ? 'held' : 'pulled';
	my ($x) = single('enqueue_effect', "SELECT effect_ids[1] FROM idemgate.enqueue_effect('$k', '$owner', $version,"
		  . " '{\"type\": \"$type\", \"target\": \"t\", \"payload\": {}}')");
	$eff{$k} = $x;
}
my %lease = map { split /\|/ } pull(
	"SELECT effect_id || '|' || lease_owner FROM idemgate.claim_effects('pulled', 10)");
ok(exists $lease{ $eff{'s-5'} } && exists $lease{ $eff{'s-6'} }, 'both pulled effects claimed')
  or diag('pulled: ' . join(', ', map { "$_=$lease{$_}" } sort keys %lease)
	  . '; enqueued: ' . join(', ', map { "$_=" . ($eff{$_} // 'undef') } sort keys %eff)
	  . '; outbox: ' . query($coord, "SELECT string_agg(effect_id || ' ' || state, ', ') FROM idemgate.outbox WHERE effect_type = 'pulled'"));

my ($fe) = single('fail_effect (rejected)', "SELECT idemgate.fail_effect('$eff{'s-5'}', '$lease{ $eff{'s-5'} }', 'rejected', '400 bad request')");
is($fe, 'failed', 'fail_effect rejected: failed');
my $dl = query($coord, "SELECT id FROM idemgate.dead_letters WHERE effect_id = '$eff{'s-5'}'");
like($dl, qr/^\d+$/, 'a dead letter was made');
my ($rj) = single('reinject', "SELECT idemgate.reinject($dl, 'tester')");
is($rj, 't', 'reinject: true');
is(query($coord, "SELECT state FROM idemgate.outbox WHERE effect_id = '$eff{'s-5'}'"),
	'pending', 'the reinjected effect is pending again');

my ($fu) = single('fail_effect (timeout)', "SELECT idemgate.fail_effect('$eff{'s-6'}', '$lease{ $eff{'s-6'} }', 'timeout_after_send', 'no answer')");
is($fu, 'unknown', 'fail_effect timeout_after_send: unknown');
my ($rs) = single('resolve_effect', "SELECT idemgate.resolve_effect('$eff{'s-6'}', true, 'tester', 'p-6')");
is($rs, 'completed', 'resolve_effect delivered: completed');

my ($cn) = single('cancel_effect', "SELECT idemgate.cancel_effect('$eff{'s-7'}', 'tester', 'not wanted')");
ok(defined $cn && $cn ne '', "cancel_effect: $cn");
isnt(query($coord, "SELECT state FROM idemgate.outbox WHERE effect_id = '$eff{'s-7'}'"),
	'pending', 'the cancelled effect is no longer pending');

# --- complete_effect (plain form) on a fresh pull --------------------------
single('claim', "SELECT outcome FROM idemgate.claim('s-8', '{}')");
($owner, $version) = run_of('s-8');
my ($e8) = single('enqueue_effect', "SELECT effect_ids[1] FROM idemgate.enqueue_effect('s-8', '$owner', $version,"
	  . " '{\"type\": \"pulled\", \"target\": \"t\", \"payload\": {}}')");
%lease = map { split /\|/ } pull(
	"SELECT effect_id || '|' || lease_owner FROM idemgate.claim_effects('pulled', 10)");
my ($ce) = single('complete_effect', "SELECT idemgate.complete_effect('$e8', '" . ($lease{ $e8 // '' } // '00000000-0000-0000-0000-000000000000') . "', 'p-8')");
is($ce, 't', 'complete_effect: true');

# --- A claim alone runs on its key's node: one round trip ----------------
# remote($sql): the statements Citus sends for $sql, run alone in its own
# transaction, as n8n sends a claim; returns (stdout, the commands issued).
sub remote
{
	my ($sql) = @_;
	my ($ret, $out, $err) = psql_result($coord, "SET citus.log_remote_commands = on;\n$sql");
	my @issued = $err =~ /NOTICE:\s+(?:\w+:\s+)?issuing (.*)/g;
	return ($out, $err, @issued);
}
my ($out, $err, @issued) = remote("SELECT outcome FROM idemgate.claim('d-1', '{\"n\": 1}')");
is($out, 'claimed', 'claim alone: claimed');
is(scalar(@issued), 1, 'claim alone: one command sent') or diag(join "\n", @issued);
like($issued[0] // '', qr/^SELECT .* FROM idemgate\.claim_in_bucket\(\d+, 'd-1'::text/,
	'claim alone: delegated to the node of its bucket as claim_in_bucket');
is(scalar(grep { /^(BEGIN|COMMIT|PREPARE)/ } @issued), 0, 'claim alone: no transaction block');
is(query($coord, "SELECT state || '|' || version FROM idemgate.runs WHERE idempotency_key = 'd-1'"),
	'processing|0', 'claim alone: the run is in the distributed table');

($out, $err, @issued) = remote("SELECT outcome FROM idemgate.claim('{\"key\": \"d-1\", \"payload\": {\"n\": 1}}'::jsonb)");
is($out, 'duplicate', 'claim(jsonb) alone of the same key: duplicate');
is(scalar(@issued), 1, 'claim(jsonb) alone: one command sent');
is(query($coord, "SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'd-1' AND kind = 'duplicate'"),
	'1', 'claim alone: the duplicate event is written');

($out, $err, @issued) = remote("SELECT outcome FROM idemgate.claim('d-1', '{\"n\": 2}')");
like($err, qr/ERROR:\s+IG001: idempotency key "d-1" was already used with a different payload/,
	'claim alone with another payload: IG001');
is(query($coord, "SELECT first_keys FROM idemgate.payload_mismatches()"), '{d-1}',
	'the mismatch is counted where claim was called (the coordinator)');

my ($d1owner) = run_of('d-1');
query($coord, "SELECT idemgate.fail('d-1', '$d1owner', 0, 'timeout', 'retry me', true)");
($out, $err, @issued) = remote("SELECT outcome || '|' || version FROM idemgate.claim('d-1', '{\"n\": 1}')");
is($out, 'recovered|2', 'claim alone of a failed_retryable run: taken over');
is(scalar(@issued), 1, 'the takeover: one command sent');
is(query($coord, "SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'd-1' AND kind = 'recovered'"),
	'1', 'the takeover and its recovered event commit together');

# Inside a bigger transaction the claim stays in it, and rolls back with it.
($out, $err, @issued) = remote("BEGIN;\nSELECT outcome FROM idemgate.claim('d-2', '{}');\nROLLBACK");
is(scalar(grep { /claim_in_bucket/ } @issued), 0, 'claim in BEGIN: not delegated');
ok(scalar(grep { /^BEGIN/ } @issued), 'claim in BEGIN: in a transaction block on the worker');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'd-2'"), '0',
	'claim in BEGIN ... ROLLBACK: no run');
($out, $err, @issued) = remote("DO \$\$ BEGIN PERFORM * FROM idemgate.claim('d-3', '{}'); RAISE EXCEPTION 'after the claim'; END \$\$");
like($err, qr/after the claim/, 'claim in a DO block that fails: the error');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'd-3'"), '0',
	'claim in a DO block that fails: no run');
# (made on the coordinator only: Citus would send it to the workers with a 2PC)
query($coord, "SET citus.enable_ddl_propagation = off;\n"
	  . "CREATE FUNCTION claim_then_fail() RETURNS void LANGUAGE plpgsql AS"
	  . " \$\$ BEGIN PERFORM * FROM idemgate.claim('d-4', '{}'); RAISE EXCEPTION 'after the claim'; END \$\$");
($out, $err, @issued) = remote("SELECT claim_then_fail()");
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'd-4'"), '0',
	'claim in a function whose statement fails: no run');
($out, $err, @issued) = remote("SELECT outcome FROM idemgate.claim('d-5', '{}') WHERE outcome = 'claimed'");
is($out, 'claimed', 'claim filtered: claimed');
is(scalar(grep { /claim_in_bucket/ } @issued), 0, 'claim that is not the whole statement: not delegated');

# In an extended-protocol pipeline, a claim after another statement is in
# the pipeline's transaction: not delegated, rolled back with it.
my $pipeline = PostgreSQL::Test::Utils::tempdir() . '/pipeline.sql';
PostgreSQL::Test::Utils::append_to_file($pipeline,
	"\\startpipeline\nSELECT 1;\nSELECT * FROM idemgate.claim('p-1', '{}');\nSELECT 1/0;\n\\endpipeline\n");
my ($pout, $perr) = ('', '');
IPC::Run::run([ 'pgbench', '-n', '-t', '1', '-M', 'extended', '-f', $pipeline,
		'-h', $coord->host, '-p', $coord->port, 'app' ], '>', \$pout, '2>', \$perr);
like($perr, qr/division by zero/, 'pipeline: the statement after the claim fails');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 'p-1'"), '0',
	'pipeline: the claim rolls back with it');

# A purged key keeps a tombstone in its run's shard (1.3): a late
# duplicate is duplicate/purged, found on one shard, through the
# coordinator and through a worker; a changed payload IG001.
$coord->safe_psql('app', q{
DO $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM idemgate.claim('t-old', '{"n": 1}');
  PERFORM idemgate.cas_transition('t-old', c.lease_owner, c.version, 'completed');
END $$;
UPDATE idemgate.runs SET updated_at = now() - interval '2 days', created_at = now() - interval '2 days'
 WHERE idempotency_key = 't-old' AND bucket = idemgate.key_bucket('t-old');
});
# purge visits every shard: its two-phase commits are counted apart, by
# its own backend as pull() counts (a count of every record before and
# after also took in the coordinator's dispatcher publishing a changed
# alert meanwhile, which the total below leaves out: -3).
is(join(',', pull("SELECT idemgate.purge('1 day')")), '1', 'purge on the coordinator');
is(query($coord, "SELECT count(*) || ' ' || min(bucket) FROM idemgate.tombstones"),
	'1 ' . query($coord, "SELECT idemgate.key_bucket('t-old')"), 'its tombstone, in the distributed table, with the run\'s bucket');
my ($tomb) = single('claim of a purged key', "SELECT outcome || '/' || state FROM idemgate.claim('t-old', '{\"n\": 1}')");
is($tomb, 'duplicate/purged', 'a late duplicate: duplicate/purged');
is(query($cl->{workers}[0], "SELECT outcome || '/' || state FROM idemgate.claim('t-old', '{\"n\": 1}')"), 'duplicate/purged',
	'through a worker too');
my ($tret, $tout, $terr) = psql_result($coord, "SELECT * FROM idemgate.claim('t-old', '{\"n\": 2}')");
like($terr, qr/already used with a different payload/, 'a changed payload: IG001');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key = 't-old'"), '0', 'no run was made again');

# Claims sent to a worker (Citus syncs the metadata to every node): the
# key's node runs them, local or delegated; the coordinator does nothing.
my ($w1, $w2) = @{ $cl->{workers} };
my @on_workers = map { query($w1, "SELECT outcome FROM idemgate.claim('w-$_', '{}')") } 1 .. 6;
is(join(',', @on_workers), 'claimed,claimed,claimed,claimed,claimed,claimed', 'claims sent to a worker: claimed');
is(join(',', map { query($w2, "SELECT outcome FROM idemgate.claim('w-$_', '{}')") } 1 .. 6),
	'duplicate,duplicate,duplicate,duplicate,duplicate,duplicate', 'the same keys sent to the other worker: duplicate');
is(query($coord, "SELECT count(*) FROM idemgate.runs WHERE idempotency_key LIKE 'w-%'"), '6',
	'one run per key, in the distributed table');
is(query($w1, 'SELECT count(*) FROM pg_dist_transaction') + query($w2, 'SELECT count(*) FROM pg_dist_transaction'),
	0, 'claims through the workers: no two-phase commit');

# Every session's two-phase commits but the dispatchers': the coordinator's
# publishes the alerts into alert_state, a reference table, when they
# change (an effect in doubt above, for instance).
my $not_dispatchers = "split_part(gid, '_', 3)::int NOT IN"
  . " (SELECT pid FROM pg_stat_activity WHERE backend_type = 'idemgate dispatcher')";
my $tx = query($coord, "SELECT count(*) FROM pg_dist_transaction WHERE $not_dispatchers");
is($tx - $pull_tx, 0,
	"pg_dist_transaction on the coordinator: 0 two-phase commits but claim_effects' and purge's ($pull_tx)");
diag('2PC records: ' . query($coord, 'SELECT string_agg(gid, \' \') FROM pg_dist_transaction')) if $tx ne '0';

stop_sink($sink);
$_->stop for reverse @{ $cl->{nodes} };
done_testing();
