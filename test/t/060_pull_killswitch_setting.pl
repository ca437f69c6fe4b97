# test/t/060_pull_killswitch_setting.pl
#    The kill switch has two halves (docs/dispatcher.md): the audited row flipped by
#    set_actions_enabled and the setting idemgate.actions_enabled. This
#    checks the pull API against the setting, which a regress test cannot
#    change (it is reloadable, not settable per session): with the setting
#    off, actions_enabled() is false even though the row says on,
#    claim_effects hands out nothing and the queued effects stay pending
#    with no attempt counted; with the setting back on they are claimed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('pull_killswitch');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'idemgate'\nidemgate.dispatchers = 0\nclient_min_messages = warning");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION idemgate;
	SELECT e.effect_ids
	FROM idemgate.claim('pull-1', '{"n": 1}') c,
	     idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
	       '[{"type": "pull", "target": "a", "payload": 1},
	         {"type": "pull", "target": "b", "payload": 2},
	         {"type": "pull", "target": "c", "payload": 3}]') e;
});

is($node->safe_psql('postgres', 'SELECT idemgate.actions_enabled()'), 't', 'on by default');

$node->append_conf('postgresql.conf', 'idemgate.actions_enabled = off');
$node->reload;
$node->poll_query_until('postgres', "SELECT current_setting('idemgate.actions_enabled') = 'off'")
  or die 'setting not reloaded';

is($node->safe_psql('postgres', 'SELECT idemgate.actions_enabled()'), 'f',
	'setting off: actions_enabled() is false');
is($node->safe_psql('postgres', 'SELECT actions_enabled FROM idemgate.control'), 't',
	'while the audited switch still says on');
# Turning the audited switch on cannot override the setting.
$node->safe_psql('postgres', "SELECT idemgate.set_actions_enabled(true, 'tester', 'try to override')");
is($node->safe_psql('postgres', 'SELECT idemgate.actions_enabled()'), 'f',
	'set_actions_enabled(true) does not override the setting');
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.claim_effects('pull', 10)"), '0',
	'claim_effects returns nothing');
is( $node->safe_psql('postgres',
		"SELECT state || ':' || attempts || ':' || count(*) FROM idemgate.outbox GROUP BY state, attempts"),
	'pending:0:3',
	'effects held: pending, no attempt counted');
# Claims (the ledger) keep working.
is($node->safe_psql('postgres', q{SELECT outcome FROM idemgate.claim('pull-2', '{"n": 2}')}),
	'claimed', 'claims keep working while off');

$node->append_conf('postgresql.conf', 'idemgate.actions_enabled = on');
$node->reload;
$node->poll_query_until('postgres', "SELECT current_setting('idemgate.actions_enabled') = 'on'")
  or die 'setting not reloaded';
is($node->safe_psql('postgres', "SELECT count(*) FROM idemgate.claim_effects('pull', 10) WHERE attempt = 1"),
	'3', 'setting on again: the held effects are claimed, first attempt');

$node->stop;
done_testing();
