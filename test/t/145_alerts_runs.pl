# test/t/145_alerts_runs.pl
#    Nothing fails silently: each alert about runs fires from a real
#    situation, published by the dispatcher, and its NOTIFY payload names
#    the business event (workflow, keys, count), not an internal id
#    (docs/operations.md, "Alerts"):
#      stalled_runs      a worker (a psql session) claims with a short lease
#                        and dies; another run fails retryably and nobody
#                        redelivers it;
#      terminal_failure  a run fails for good;
#      lease_takeovers   six expired leases of one workflow taken over;
#      payload_mismatch  a redelivery with another payload, in a
#                        transaction that is rolled back.
#    idemgate.alert_stalled_after is 2 s here, so the test takes seconds.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = dispatch_node('alerts_runs', 'idemgate.alert_stalled_after' => "'2s'");

# A listening psql fed through a pipe; psql prints the notifications it has
# received after each command, so each poll sends a marker query.
my ($in, $out, $err) = ('', '', '');
my $listener = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('app') ],
	\$in, \$out, \$err, IPC::Run::timeout(180));
my $marks = 0;
my @seen;

# notifications returns every notification received so far, decoded.
sub notifications
{
	$marks++;
	$in .= "LISTEN idemgate_alerts; SELECT 'mark-$marks';\n";
	$listener->pump until $out =~ /mark-$marks\n/;
	while ($out =~ s/^Asynchronous notification "idemgate_alerts" with payload "(.*)" received from server process with PID \d+\.\n//m)
	{
		push @seen, decode_json($1);
	}
	return @seen;
}

# wait_for_notice waits (up to 60 s) for a notification of $alert in state
# $state about $subject, and returns it.
sub wait_for_notice
{
	my ($alert, $state, $subject) = @_;
	my $end = time + 60;
	while (time < $end)
	{
		my @n = grep { $_->{alert} eq $alert && $_->{state} eq $state && $_->{subject} eq $subject }
		  notifications();
		return $n[0] if @n;
		usleep(200_000);
	}
	return undef;
}
notifications();

# ---------------------------------------------------------------------
# stalled_runs. A worker claims an invoice with a 1-second lease and dies
# holding it (its session is killed); nobody takes the run over.
my ($win, $wout, $werr) = ('', '', '');
my $worker = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('app') ],
	\$win, \$wout, \$werr, IPC::Run::timeout(60));
$win .= "SELECT outcome FROM idemgate.claim('invoice-2026-0918-ACME-4471', '{\"amount\": 129.5}', '1 second', 'tap-invoices', origin => 'webhook:erp');\n";
$worker->pump until $wout =~ /claimed\n/;
$worker->kill_kill;
is($node->safe_psql('app', "SELECT state || ' ' || origin FROM idemgate.runs WHERE idempotency_key = 'invoice-2026-0918-ACME-4471'"),
	'processing webhook:erp', 'the dead worker left its run processing');

my $n = wait_for_notice('stalled_runs', 'firing', 'workflow:tap-invoices');
ok($n, 'stalled_runs fired for the dead worker\'s run');
is($n->{severity}, 'warning', 'severity warning');
is_deeply($n->{keys}, ['invoice-2026-0918-ACME-4471'], 'the payload names the key');
is($n->{count}, 1, 'and the count');
like($n->{message},
	qr/^run invoice-2026-0918-ACME-4471 of workflow tap-invoices stalled since \d\d:\d\d \(lease expired, not taken over: is a worker down or a trigger off\?\)$/,
	'the message names the business event');

# A run that failed retryably, and was never redelivered, joins it.
$node->safe_psql('app', q{
	SELECT idemgate.claim('invoice-2026-0918-ACME-4472', '{"amount": 99}', '1 minute', 'tap-invoices');
	SELECT idemgate.fail(idempotency_key, lease_owner, version, 'provider_down', 'ERP unreachable', true)
	  FROM idemgate.runs WHERE idempotency_key = 'invoice-2026-0918-ACME-4472';
});
ok(wait_until($node, "SELECT count = 2 FROM idemgate.alert_state WHERE alert = 'stalled_runs'", 60),
	'the failed_retryable run is stalled too: the published count is 2');
is($node->safe_psql('app', "SELECT message ~ '^2 runs of workflow tap-invoices stalled since \\d\\d:\\d\\d \\(first: invoice-2026-0918-ACME-4471, invoice-2026-0918-ACME-4472; 1 with an expired lease, 1 failed_retryable not redelivered' FROM idemgate.alerts WHERE alert = 'stalled_runs'"),
	't', 'the view names both keys, oldest first');

# The redelivery takes both over: the alert clears, and says so.
$node->safe_psql('app', q{
	SELECT idemgate.claim('invoice-2026-0918-ACME-4471', '{"amount": 129.5}', '1 minute', 'tap-invoices', origin => 'redelivery');
	SELECT idemgate.claim('invoice-2026-0918-ACME-4472', '{"amount": 99}', '1 minute', 'tap-invoices');
});
$n = wait_for_notice('stalled_runs', 'cleared', 'workflow:tap-invoices');
ok($n, 'stalled_runs cleared once the runs were taken over');
is($node->safe_psql('app', "SELECT details->>'from' || ' ' || (details->>'origin') FROM idemgate.events WHERE kind = 'recovered' AND idempotency_key = 'invoice-2026-0918-ACME-4471'"),
	'processing redelivery', 'the takeover is recorded from an expired lease, with its origin');

# ---------------------------------------------------------------------
# terminal_failure: at once, naming workflow and key.
$node->safe_psql('app', q{
	SELECT idemgate.claim('lead-2026-11-30-0042', '{"email": "ana@example.com"}', '1 minute', 'tap-leads');
	SELECT idemgate.fail(idempotency_key, lease_owner, version, 'invalid_output', 'schema still invalid after 2 repairs', false)
	  FROM idemgate.runs WHERE idempotency_key = 'lead-2026-11-30-0042';
});
$n = wait_for_notice('terminal_failure', 'firing', 'workflow:tap-leads');
ok($n, 'terminal_failure fired');
is_deeply($n->{keys}, ['lead-2026-11-30-0042'], 'the payload names the key');
like($n->{message},
	qr/^run lead-2026-11-30-0042 of workflow tap-leads failed for good since \d\d:\d\d \(invalid_output; its input is in the dead letter: reinject or supersede\)$/,
	'the message names workflow, key and error class');
unlike(encode_json($n), qr/ana\@example\.com|schema still invalid/, 'neither the input nor the error text');

# ---------------------------------------------------------------------
# lease_takeovers: six runs of one workflow whose leases expire and are
# taken over (more than idemgate.alert_lease_takeovers = 5 in 10 minutes).
$node->safe_psql('app', q{
	SELECT idemgate.claim('sync-' || i, '{}', '1 second', 'tap-crm-sync') FROM generate_series(1, 6) AS i;
});
sleep 2;
is($node->safe_psql('app', q{
	SELECT string_agg(outcome, ',') FROM generate_series(1, 6) AS i,
	       idemgate.claim('sync-' || i, '{}', '1 minute', 'tap-crm-sync') c}),
	'recovered,recovered,recovered,recovered,recovered,recovered', 'six expired leases taken over');
$n = wait_for_notice('lease_takeovers', 'firing', 'workflow:tap-crm-sync');
ok($n, 'lease_takeovers fired');
is($n->{count}, 6, 'the payload counts six takeovers');
is_deeply($n->{keys}, [ 'sync-1', 'sync-2', 'sync-3' ], 'and names the first keys');
like($n->{message}, qr/^6 expired leases of workflow tap-crm-sync taken over in 10 minutes since /,
	'the message names the workflow and the count');

# ---------------------------------------------------------------------
# payload_mismatch: the same key redelivered with another amount; the
# claim's transaction rolls back, the count stays.
$node->safe_psql('app', q{SELECT idemgate.claim('order-77', '{"amount": 10}', '1 minute', 'tap-orders')});
my ($ret, $stdout, $stderr) = $node->psql('app', q{
	BEGIN;
	SELECT idemgate.claim('order-77', '{"amount": 1000}', '1 minute', 'tap-orders');
	ROLLBACK;
});
like($stderr, qr/idempotency key "order-77" was already used with a different payload/, 'the redelivery is refused (IG001)');
is($node->safe_psql('app', q{
	SELECT (SELECT payload->>'amount' FROM idemgate.runs WHERE idempotency_key = 'order-77')
	       || ' ' || (SELECT count(*) FROM idemgate.events WHERE idempotency_key = 'order-77')}),
	'10 0', 'nothing of it was written');
$n = wait_for_notice('payload_mismatch', 'firing', 'workflow:tap-orders');
ok($n, 'payload_mismatch fired though the transaction rolled back');
is($n->{severity}, 'critical', 'severity critical');
is_deeply($n->{keys}, ['order-77'], 'the payload names the key');
like($n->{message},
	qr/^key order-77 of workflow tap-orders delivered again with a different payload since \d\d:\d\d \(IG001, refused: stop and investigate upstream\)$/,
	'the message names the business event');

# Every notification of this test named its subject and carried a message.
my @bare = grep { !defined $_->{subject} || !defined $_->{message} } notifications();
is(scalar(@bare), 0, 'no notification without subject and message');

# With idemgate.alert_notify_details off, payloads carry only name,
# severity, state and time: the operator ends the mismatch alert.
$node->append_conf('postgresql.conf', "idemgate.alert_notify_details = off\n");
$node->reload;
ok(wait_until($node, "SELECT current_setting('idemgate.alert_notify_details') = 'off'", 30), 'details off');
sleep 2;
$node->safe_psql('app', 'SELECT idemgate.clear_payload_mismatches()');
my @minimal;
for (1 .. 300)
{
	@minimal = grep { $_->{alert} eq 'payload_mismatch' && $_->{state} eq 'cleared' } notifications();
	last if @minimal;
	usleep(200_000);
}
is(scalar(@minimal), 1, 'one cleared notification');
is_deeply([ sort keys %{ $minimal[0] } ], [qw(alert at severity state)], 'with only alert, severity, state and time');

$in .= "\\q\n";
$listener->finish;
$node->stop;
done_testing();
