# test/t/050_alerts_dispatcher.pl
#    The dispatcher publishes alerts: a listener on idemgate_alerts gets one
#    "firing" notification when an alert starts and one "cleared" when it
#    ends, however many times the dispatcher runs publish_alerts (about once
#    a second) and however many failures feed the alert. The payload names
#    the business event (subject, count, message), as the view does.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = dispatch_node('alerts', 'idemgate.circuit_failures' => 0);

# A listening psql fed through a pipe; psql prints the notifications it has
# received after each command, so each poll sends a marker query.
my ($in, $out, $err) = ('', '', '');
my $listener = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('app') ],
	\$in, \$out, \$err, IPC::Run::timeout(180));
my $marks = 0;
my @seen;

# notifications returns every notification received so far, as payloads.
sub notifications
{
	$marks++;
	$in .= "LISTEN idemgate_alerts; SELECT 'mark-$marks';\n";
	$listener->pump until $out =~ /mark-$marks\n/;
	while ($out =~ s/^Asynchronous notification "idemgate_alerts" with payload "(.*)" received from server process with PID \d+\.\n//m)
	{
		push @seen, $1;
	}
	return @seen;
}
notifications();

# Silence: a workflow expected hourly, watched since three hours ago.
$node->safe_psql('app', q{
	SELECT idemgate.watch_workflow('tap-wf', '1 hour');
	UPDATE idemgate.watched_workflows SET created_at = now() - interval '3 hours';
});
ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.alert_state WHERE alert = 'silence'", 60),
	'the dispatcher published the silence alert');
# Let the dispatcher publish a few more times: still one notification
# (the alert's count changes every hour, its message not at all).
sleep 3;
my @silence = grep { /"alert":"silence"/ } notifications();
is(scalar(@silence), 1, 'one notification for the silence, not one per publish');
like($silence[0], qr/^\{"alert":"silence","severity":"\w+","state":"firing","at":"[^"]+","subject":"workflow:tap-wf","count":\d+,"message":"workflow tap-wf silent since [^"]+ \(expected every 1 h\)"\}$/,
	'the payload says firing and names the business event: subject, count, message (docs/operations.md)');

# A claim of the workflow clears it: one "cleared".
$node->safe_psql('app', q{SELECT idemgate.claim('tap-wf-1', '{}', workflow => 'tap-wf')});
ok(wait_until($node, "SELECT count(*) = 0 FROM idemgate.alert_state WHERE alert = 'silence'", 60),
	'the dispatcher cleared the silence alert');
sleep 2;
@silence = grep { /"alert":"silence"/ } notifications();
is(scalar(@silence), 2, 'one more notification when it clears');
like($silence[1], qr/"state":"cleared".*"message":"workflow tap-wf silent/, 'it says cleared, and what it said');

# Failure rate: 11 effects to a provider that refuses connections. Each is
# attempted three times (transport errors, then dead letters): 33 failures,
# one alert, one notification. The endpoint's circuit would hold them after
# five (test/t/155): it is off on this node, so that every attempt is made.
register_endpoint($node, 'tap_down', 'http://127.0.0.1:1/down');
enqueue_effects($node, 'down', 11, 'tap_down');
ok(wait_until($node,
		"SELECT count(*) = 11 FROM idemgate.outbox WHERE effect_type = 'tap_down' AND state = 'failed'", 120),
	'the 11 effects failed three times each and were dead-lettered');
is($node->safe_psql('app',
		"SELECT count(*) FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)
		  WHERE e.kind = 'effect_failed' AND o.effect_type = 'tap_down'"),
	'33', '33 failed attempts');
ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.alert_state WHERE alert = 'failure_rate'", 60),
	'the failure-rate alert is published');
sleep 2;
my @failures = grep { /"alert":"failure_rate"/ } notifications();
is(scalar(@failures), 1, 'one notification for 33 failures');
like($failures[0], qr/"subject":"effect_type:tap_down","count":11,"message":"11 effects of type tap_down not delivered since /,
	'the notification names the effect type and the count');
is($node->safe_psql('app', "SELECT message ~ '^11 effects of type tap_down not delivered since \\d\\d:\\d\\d' FROM idemgate.alerts WHERE alert = 'failure_rate'"),
	't', 'the view names the effect type and the count');

$in .= "\\q\n";
$listener->finish;
$node->stop;
done_testing();
