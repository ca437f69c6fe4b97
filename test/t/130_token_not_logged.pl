# test/t/130_token_not_logged.pl
#    An approval token never reaches the server log through a failing call
#    (README.md, "Approval tokens"). Tools such as n8n's Postgres node
#    paste parameters into the statement text, so every failing
#    peek_approval / consume_approval would log the token with
#    "STATEMENT: ..." or in a JSON error's CONTEXT. grant_role gives client
#    and approver roles settings that keep statement text and parameters
#    out of the log; this test logs everything it can cluster-wide
#    (log_statement = all, log_min_duration_statement = 0, verbose errors)
#    and greps the log for the token after each failing call:
#    - as the approver role: a too-long reason (700 Japanese characters,
#      2,100 bytes), a NULL approver, a malformed jsonb form, an unknown
#      field, a statement failing after the call, and a successful
#      decision, all with the token pasted;
#    - as the client role: request_approval's answer (the token) and a
#      failing call carrying it;
#    - 1.3: the same failing calls (and a succeeding peek) by a member of
#      a group role holding approver, an operator and the superuser, whom
#      no role setting reaches: the token is nowhere in the log (the log
#      hook of src/core/token_log_redaction.c, with the library preloaded);
#    - a statement naming no token function does log its text, so the
#      grep would catch a leak;
#    - revoke_role takes the settings away once the role holds neither
#      client nor approver;
#    - ALTER EXTENSION UPDATE gives them to roles granted before 1.2.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('tokenlog');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'idemgate'
idemgate.dispatchers = 0
log_statement = 'all'
log_min_duration_statement = 0
log_error_verbosity = verbose
log_min_error_statement = error
log_parameter_max_length = -1
log_parameter_max_length_on_error = -1
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION idemgate');
$node->safe_psql('postgres', 'CREATE ROLE approver_app LOGIN; CREATE ROLE client_app LOGIN; CREATE ROLE plain_app LOGIN');
$node->safe_psql('postgres', "SELECT idemgate.grant_role('approver_app', 'approver')");
$node->safe_psql('postgres', "SELECT idemgate.grant_role('client_app', 'client')");
$node->safe_psql('postgres', 'GRANT USAGE ON SCHEMA idemgate TO plain_app');

is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(s, ',' ORDER BY s) FROM pg_db_role_setting, unnest(setconfig) s
 WHERE setrole = 'approver_app'::regrole}),
	'log_error_verbosity=terse,log_min_duration_statement=-1,log_min_error_statement=panic,'
	  . 'log_parameter_max_length=0,log_parameter_max_length_on_error=0,log_statement=none',
	'grant_role(approver) sets the role\'s logging settings');

# as_role runs SQL as a login role; returns stderr (errors are expected).
sub as_role
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	return $err;
}

# The client asks for an approval; the token comes back in its answer.
my $token = $node->safe_psql(
	'postgres', q{
SET ROLE client_app;
SELECT a.token FROM idemgate.claim('tok-1', '{}') c,
  LATERAL idemgate.request_approval('tok-1', c.lease_owner, c.version,
    '{"type": "mail", "target": "t", "payload": {}}') a});
is(length($token), 43, 'a token');
# request_approval again as the client's own login: its answer is not logged.
my $token2 = $node->safe_psql(
	'postgres', q{
SELECT a.token FROM idemgate.claim('tok-2', '{}') c,
  LATERAL idemgate.request_approval('tok-2', c.lease_owner, c.version,
    '{"type": "mail", "target": "t", "payload": {}}') a},
	extra_params => [ '-U', 'client_app' ]);
is(length($token2), 43, 'a second token, asked for by the client login');

my $long_reason = "\x{5BE9}" x 700;    # 700 CJK characters, 2,100 bytes in UTF-8
utf8::encode($long_reason);
my $offset = -s $node->logfile;
my %failing = (
	'a too-long reason' =>
	  "SELECT * FROM idemgate.consume_approval('$token', 'approve', 'maria', '$long_reason')",
	'a NULL approver' => "SELECT * FROM idemgate.consume_approval('$token', 'approve', NULL)",
	'a malformed jsonb form' =>
	  qq{SELECT * FROM idemgate.consume_approval('{"token": "$token", "decision": }')},
	'an unknown field in the jsonb form' =>
	  qq{SELECT * FROM idemgate.consume_approval('{"token": "$token", "decision": "approve", "approver": "maria", "x": 1}')},
	'a peek that fails after the call' => qq{SELECT 1/0 FROM idemgate.peek_approval('{"token": "$token"}')},
	'a division by zero after the call' =>
	  "SELECT outcome, 1/0 FROM idemgate.consume_approval('$token2', 'approve', 'maria')",);
for my $what (sort keys %failing)
{
	my $err = as_role('approver_app', $failing{$what});
	like($err, qr/ERROR/, "$what fails");
}
my $err = as_role('client_app', "SELECT * FROM idemgate.peek_approval('$token') WHERE 1/0 = 1");
like($err, qr/ERROR/, 'a failing call of the client carrying the token fails');
my $ok = $node->safe_psql('postgres',
	"SELECT outcome FROM idemgate.consume_approval('$token', 'approve', 'maria')",
	extra_params => [ '-U', 'approver_app' ]);
is($ok, 'approved', 'the decision itself succeeds');

my $log = slurp_file($node->logfile, $offset);
like($log, qr/ERROR/, 'the errors were logged');
unlike($log, qr/\Q$token\E/, 'the first token is nowhere in the server log');
unlike($log, qr/\Q$token2\E/, 'the second token is nowhere in the server log');

# 1.3: logins that no role setting reaches — a member of a group role
# that holds approver, an operator (its bundle has consume_approval) and
# the superuser — with every statement logged (log_statement = all): the
# library's log hook (src/core/token_log_redaction.c) replaces the token in
# every message that names a token function and hides its STATEMENT line,
# and the functions keep it out of their own error reports.
$node->safe_psql('postgres', q{
CREATE ROLE approvers NOLOGIN;
CREATE ROLE member_app LOGIN IN ROLE approvers;
CREATE ROLE operator_app LOGIN;
});
$node->safe_psql('postgres', "SELECT idemgate.grant_role('approvers', 'approver')");
$node->safe_psql('postgres', "SELECT idemgate.grant_role('operator_app', 'operator')");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_db_role_setting WHERE setrole IN ('member_app'::regrole, 'operator_app'::regrole)}),
	'0', 'no role settings reach the group member or the operator');
my $token3 = $node->safe_psql(
	'postgres', q{
SELECT a.token FROM idemgate.claim('tok-3', '{}') c,
  LATERAL idemgate.request_approval('tok-3', c.lease_owner, c.version,
    '{"type": "mail", "target": "t", "payload": {}}') a});
$offset = -s $node->logfile;
for my $who ('member_app', 'operator_app', 'postgres')
{
	for my $what (sort keys %failing)
	{
		(my $sql = $failing{$what}) =~ s/\Q$token\E|\Q$token2\E/$token3/g;
		like(as_role($who, $sql), qr/ERROR/, "$who: $what fails");
	}
	is($node->safe_psql('postgres', "SELECT status FROM idemgate.peek_approval('$token3')", extra_params => [ '-U', $who ]),
		'pending', "$who: a peek that succeeds");
}
$log = slurp_file($node->logfile, $offset);
like($log, qr/\[token\]/, 'the calls were logged, their token replaced');
unlike($log, qr/\Q$token3\E/, 'the token of the group member, the operator and the superuser is nowhere in the log');

# The grep would see a leak: a statement that names no token function
# keeps its text, a token-shaped value included.
my $fake = 'A' x 43;
$offset = -s $node->logfile;
as_role('plain_app', "SELECT '$fake'::int");
like(slurp_file($node->logfile, $offset), qr/\Q$fake\E/, 'another statement logs its text');

# revoke_role takes the settings away once the role holds neither bundle.
$node->safe_psql('postgres', "SELECT idemgate.grant_role('approver_app', 'client')");
$node->safe_psql('postgres', "SELECT idemgate.revoke_role('approver_app', 'approver')");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_db_role_setting WHERE setrole = 'approver_app'::regrole}),
	'1', 'kept while the role still holds client');
$node->safe_psql('postgres', "SELECT idemgate.revoke_role('approver_app', 'client')");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_db_role_setting WHERE setrole = 'approver_app'::regrole}),
	'0', 'reset when it holds neither');

# A role granted client under 1.1 (whose grant_role set nothing: reset
# here to stand for it) gets the settings from ALTER EXTENSION UPDATE.
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', "CREATE EXTENSION idemgate VERSION '1.1'");
$node->safe_psql('postgres', 'CREATE ROLE old_client LOGIN');
$node->safe_psql('old', "SELECT idemgate.grant_role('old_client', 'client')");
$node->safe_psql('old', 'ALTER ROLE old_client RESET ALL');
is($node->safe_psql('old', q{SELECT count(*) FROM pg_db_role_setting WHERE setrole = 'old_client'::regrole}),
	'0', 'a client role granted before 1.2 has no settings');
$node->safe_psql('old', 'ALTER EXTENSION idemgate UPDATE');
is( $node->safe_psql(
		'old', q{
SELECT string_agg(s, ',' ORDER BY s) FROM pg_db_role_setting, unnest(setconfig) s
 WHERE setrole = 'old_client'::regrole}),
	'log_error_verbosity=terse,log_min_duration_statement=-1,log_min_error_statement=panic,'
	  . 'log_parameter_max_length=0,log_parameter_max_length_on_error=0,log_statement=none',
	'the update gives it the settings');

$node->stop;
done_testing();
