# test/citus/t/060_operator_reads.pl
#    SPEC §16 "Reads for operators" and purge on a distributed install,
#    proved against a single node: the same scripted history is played on
#    a plain node and on the coordinator of a distributed install, and what
#    the operator sees must be the same.
#    - test/citus/alert_history.sql raises 13 kinds of alert: the alerts
#      view and prometheus()'s alert and per-type lines are identical.
#    - test/citus/purge_history.sql: purge('1 day') deletes the same runs
#      with the same rows on both, leaves nothing behind, and metrics(),
#      run_metrics() and effect_type_metrics() read the same before and
#      after it.
#    - A refused claim (IG001) raises payload_mismatch on the coordinator.
#    - The coordinator's dispatcher publishes the alerts (alert_state, a
#      reference table) every 30 s: a pause appears there and goes away
#      after the resume.
#    - purge() in a REPEATABLE READ transaction is refused with 0A000.
#    - Roles keep least privilege: readers and operators (granted before
#      or after distribute()) read the alerts, effect_types, key_history,
#      events, prometheus() ...; a reader still cannot read the outbox, a
#      client reads none of it, a revoked reader nothing.
use strict;
use warnings;

use lib 'test/citus';
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $cl = citus_cluster('reads');
my $coord = $cl->{coord};
# A reader granted before distribute(), the others after.
query($coord, q{CREATE ROLE early_reader LOGIN; SELECT idemgate.grant_role('early_reader', 'reader')});
distribute($cl);
my $single = plain_node('reads_single');

# play($node, $file) → the script's output lines (it rolls itself back).
sub play
{
	my ($n, $file) = @_;
	my $sql = slurp_file($file);
	my ($out, $err) = ('', '');
	my $ret = $n->psql('app', $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
	diag($n->name . " $file: $err") if $ret != 0;
	return grep { $_ ne '' } split /\n/, $out;
}

# --- alerts and prometheus() -----------------------------------------------
my @one = play($single, 'test/citus/alert_history.sql');
my @dist = play($coord, 'test/citus/alert_history.sql');
my @kinds = qw(dead_letters failure_rate kill_switch_off lease_takeovers silence
  stalled_runs stuck_effects terminal_failure type_paused unknown_effects unsettled_runs);
for my $k (@kinds)
{
	ok((grep { /^alert\|$k\|/ } @one), "single node: the history raises $k");
}
is(scalar(grep { /^alert\|/ } @one), 14, 'single node: 14 alerts (two each of failure_rate, silence, stuck_effects)');
ok((grep { /^prometheus\|idemgate_alerts_firing/ } @one), 'single node: prometheus() exports them');
is_deeply(\@dist, \@one,
	'Citus: the alerts view and prometheus() show what the single node shows for the same history');

# --- purge -----------------------------------------------------------------
@one = play($single, 'test/citus/purge_history.sql');
@dist = play($coord, 'test/citus/purge_history.sql');
ok((grep { $_ eq 'purged|26' } @one), 'single node: purge deletes the 26 finished runs');
ok((grep { $_ eq 'orphans|0|0' } @one), 'single node: no event or effect outlives its run');
my %before = map { /^(\w+) before\|(.*)$/ ? ("$1|$2" => 1) : () } @one;
my %after = map { /^(\w+) after\|(.*)$/ ? ("$1|$2" => 1) : () } @one;
ok(%before && eq_hash(\%before, \%after), 'single node: the figures are the same before and after');
is_deeply(\@dist, \@one,
	'Citus: purge deletes the same runs and rows shard by shard, and keeps the same figures');
my ($ret, $out, $err) = psql_result($coord,
	"BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT idemgate.purge(interval '1 day');");
like($err, qr/0A000.*READ COMMITTED/s, 'Citus: purge in REPEATABLE READ is refused (0A000)');

# --- least privilege, as on one node --------------------------------------
# Citus reads a view's tables as the querying role (citusdata/citus#1683);
# distribute() makes the bundle views read as their owner, and grant_role
# gives the workers the schema.
query($coord, q{CREATE ROLE reads_reader LOGIN; SELECT idemgate.grant_role('reads_reader', 'reader');
  CREATE ROLE reads_operator LOGIN; SELECT idemgate.grant_role('reads_operator', 'operator');
  CREATE ROLE reads_client LOGIN; SELECT idemgate.grant_role('reads_client', 'client');
  CREATE ROLE reads_gone LOGIN; SELECT idemgate.grant_role('reads_gone', 'reader');
  SELECT idemgate.revoke_role('reads_gone', 'reader')});
# can($role, $sql): 'ok' when the role may run $sql, else the error.
sub can
{
	my ($role, $sql) = @_;
	my $r = query($coord, "SET ROLE $role; $sql");
	return $r =~ /^ERROR/ ? $r : 'ok';
}
my @reader_reads = ('SELECT count(*) FROM idemgate.alerts', 'SELECT count(*) FROM idemgate.effect_types',
	"SELECT count(*) FROM idemgate.key_history WHERE idempotency_key = 'pm-1'",
	'SELECT count(*) FROM idemgate.approval_status', 'SELECT count(*) FROM idemgate.events',
	'SELECT count(*) FROM idemgate.dead_letters', 'SELECT length(idemgate.prometheus())',
	'SELECT count(*) FROM idemgate.metrics()', 'SELECT count(*) FROM idemgate.dispatcher_status()');
for my $role (qw(early_reader reads_reader reads_operator))
{
	is(can($role, $_), 'ok', "Citus: $role may $_") for @reader_reads;
}
is(can('reads_operator', 'SELECT count(*) FROM idemgate.outbox'), 'ok', 'Citus: the operator reads the outbox');
like(can('reads_reader', 'SELECT count(*) FROM idemgate.outbox'), qr/permission denied for table outbox/,
	'Citus: a reader still cannot read the outbox');
like(can('reads_reader', 'SELECT count(*) FROM idemgate.distributed_alerts'), qr/permission denied/,
	'Citus: nor the owner-only copy of the alerts view');
like(can('reads_client', 'SELECT count(*) FROM idemgate.alerts'), qr/permission denied for view alerts/,
	'Citus: a client may not read the alerts');
like(can('reads_client', 'SELECT count(*) FROM idemgate.distributed_alerts_read()'),
	qr/permission denied for function/, 'Citus: nor call the function the view reads through');
is(can('reads_client', q{SELECT outcome FROM idemgate.claim('rc-1', '{}')}), 'ok', 'Citus: a client claims');
like(can('reads_gone', 'SELECT count(*) FROM idemgate.events'), qr/permission denied/,
	'Citus: a revoked reader reads nothing');

# --- payload_mismatch ------------------------------------------------------
query($coord, "SELECT outcome FROM idemgate.claim('pm-1', '{\"a\": 1}', workflow => 'pm-wf')");
($ret, $out, $err) = psql_result($coord,
	"SELECT outcome FROM idemgate.claim('pm-1', '{\"a\": 2}', workflow => 'pm-wf')");
like($err, qr/IG001/, 'a second delivery with another payload is refused (IG001)');
is(query($coord, "SELECT count FROM idemgate.alerts WHERE alert = 'payload_mismatch'"),
	'1', 'Citus: payload_mismatch fires on the coordinator');

# --- publish_alerts by the coordinator's dispatcher ------------------------
query($coord, q{SELECT idemgate.register_endpoint('pub-t', 'http://127.0.0.1:9/none')});
query($coord, q{SELECT idemgate.pause_effect_type('pub-t', 'tester', 'published?')});
ok(poll_app($coord,
		"SELECT EXISTS (SELECT 1 FROM idemgate.alert_state WHERE alert = 'type_paused'"
		  . " AND subject = 'effect_type:pub-t')", 75),
	'Citus: the coordinator\'s dispatcher publishes a pause into alert_state');
query($coord, q{SELECT idemgate.resume_effect_type('pub-t', 'tester')});
ok(poll_app($coord,
		"SELECT NOT EXISTS (SELECT 1 FROM idemgate.alert_state WHERE alert = 'type_paused'"
		  . " AND subject = 'effect_type:pub-t')", 75),
	'Citus: and clears it after the resume');

done_testing();
