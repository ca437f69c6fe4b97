# test/t/153_policy_imported_snapshot.pl
#    A policy binds every call after its commit, in a transaction whose
#    snapshot was imported from an older one too (src/policy/effect_policies.c;
#    test/specs/effect_policy_snapshots.spec has REPEATABLE READ and
#    SERIALIZABLE snapshots of the caller's own, isolationtester cannot
#    pass a snapshot's name between sessions). A holder exports its
#    snapshot before set_effect_policy('tp_refund', requires_approval =>
#    true) commits; a client imports it (REPEATABLE READ, then SERIALIZABLE
#    from a serializable holder), still cannot see the policy row, and its
#    enqueue_effect of a refund is refused (42501) and writes nothing.
#    Before 1.3 the imported snapshot let the refund out.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = dispatch_node('snapimport');

# query_err runs $sql in background session $s; returns (stdout, stderr).
sub query_err
{
	my ($s, $sql) = @_;
	$s->{stderr} = '';
	my ($out) = $s->query($sql);
	return ($out, $s->{stderr});
}

my $claim = q{SELECT outcome FROM idemgate.claim('%s', '{}', '1 hour', NULL, '%s')};
my $enqueue = q{SELECT cardinality(effect_ids) FROM idemgate.enqueue_effect('%s', '%s', 0,
  jsonb_build_object('type', 'tp_refund', 'target', 'acme', 'payload', 1))};
my %owner = (
	'imp-control' => '00000000-0000-4000-8000-0000000000c0',
	'imp-rr'      => '00000000-0000-4000-8000-0000000000c1',
	'imp-ser'     => '00000000-0000-4000-8000-0000000000c2');
$node->safe_psql('app', sprintf($claim, $_, $owner{$_})) for sort keys %owner;

# Without a policy the refund is accepted: the refusals below are the policy's.
is($node->safe_psql('app', sprintf($enqueue, 'imp-control', $owner{'imp-control'})),
	'1', 'without a policy the refund is enqueued');

for my $level ('REPEATABLE READ', 'SERIALIZABLE')
{
	my $key = $level eq 'SERIALIZABLE' ? 'imp-ser' : 'imp-rr';
	$node->safe_psql('app', "DELETE FROM idemgate.effect_type_policies WHERE effect_type = 'tp_refund'");

	my $holder = $node->background_psql('app');
	$holder->query_safe("BEGIN ISOLATION LEVEL $level");
	my $snapshot = $holder->query_safe('SELECT pg_export_snapshot()');
	like($snapshot, qr/^[0-9A-F]+-[0-9A-F]+-\d+$/, "$level: the holder exported its snapshot");

	$node->safe_psql('app',
		"SELECT idemgate.set_effect_policy('tp_refund', requires_approval => true, actor => 'ops')");

	my $client = $node->background_psql('app', on_error_stop => 0);
	my ($out, $err) = query_err($client,
		"BEGIN ISOLATION LEVEL $level; SET TRANSACTION SNAPSHOT '$snapshot';");
	is($err, '', "$level: the client imported the old snapshot");
	($out) = query_err($client,
		"SELECT count(*) FROM idemgate.effect_type_policies WHERE effect_type = 'tp_refund'");
	is($out, '0', "$level: in that snapshot the policy does not exist yet");
	($out, $err) = query_err($client, sprintf($enqueue, $key, $owner{$key}));
	like($err, qr/requires approval/, "$level: enqueue_effect of a refund is refused");
	($out, $err) = query_err($client, q{SELECT 1});
	like($err, qr/current transaction is aborted/, "$level: and its transaction cannot go on");
	$client->query('ROLLBACK');
	$client->quit;
	$holder->query_safe('COMMIT');
	$holder->quit;

	is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE idempotency_key = '$key'"),
		'0', "$level: nothing of that enqueue was written");
}

# The SQLSTATE, from a plain session under the policy.
my ($rc, $stdout, $stderr) = $node->psql('app',
	"\\set VERBOSITY verbose\n" . sprintf($enqueue, 'imp-rr', $owner{'imp-rr'}));
like($stderr, qr/ERROR:\s+42501/, 'the refusal is 42501');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE effect_type = 'tp_refund'"),
	'1', 'only the control refund is in the outbox');

$node->stop;
done_testing();
