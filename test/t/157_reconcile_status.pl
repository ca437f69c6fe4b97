# test/t/157_reconcile_status.pl
#    Reconciliation of unknown effects through the provider's status URL
#    (SPEC §22, src/outbox/outbox_lookups.c): a loopback provider answers every
#    first POST 500 (so each effect becomes unknown: the endpoint cannot
#    dedupe), and its status URL answers the dispatcher's GET:
#    - 200 → completed with the provider id of the answer, the run
#      completes, event effect_reconciled; no second POST;
#    - 404 → pending, sent again once with the same Idempotency-Key;
#    - 503 → still unknown, asked again only after the backoff (20 s after
#      the first ask), status_checks counting;
#    - a template with {provider_id} for an effect without one: never asked;
#    - paused type, kill switch off: no GET until resumed / switched on.
#    Every look-up is a GET naming the effect id, with no body.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = dispatch_node('reconcile', 'idemgate.poll_interval' => '100ms');
my $sink = start_sink('reconcile', 300);
my $base = $sink->{base};

sub endpoint
{
	my ($type, $url, $status_url) = @_;
	$node->safe_psql('app',
		"SELECT idemgate.register_endpoint('$type', '$url', timeout => '2 seconds', max_attempts => 3,"
		  . " status_url => '$status_url')");
}
endpoint('rc_found', "$base/status/500", "$base/ok?q={effect_id}");
endpoint('rc_lost', "$base/seq/500,200", "$base/status/404?q={effect_id}");
endpoint('rc_asks', "$base/status/500", "$base/status/503?q={effect_id}");
endpoint('rc_pid', "$base/status/500", "$base/ok?p={provider_id}&q={effect_id}");
endpoint('rc_paused', "$base/status/500", "$base/ok?q={effect_id}");

enqueue_effects($node, 'found', 3, 'rc_found');
enqueue_effects($node, 'lost', 3, 'rc_lost');
enqueue_effects($node, 'asks', 2, 'rc_asks');
enqueue_effects($node, 'pid', 1, 'rc_pid');
enqueue_effects($node, 'paused', 1, 'rc_paused');

ok(wait_until($node, "SELECT count(*) = 10 FROM idemgate.outbox WHERE state = 'unknown'", 30),
	'every effect is unknown after its POST got a 500');
$node->safe_psql('app', "SELECT idemgate.pause_effect_type('rc_paused', 'ops', 'look-ups wait too')");

my %id_of;    # effect id => type
for (split /\n/, $node->safe_psql('app', 'SELECT effect_id, effect_type FROM idemgate.outbox'))
{
	my ($id, $type) = split /\|/;
	$id_of{$id} = $type;
}

ok( wait_until(
		$node,
		"SELECT count(*) = 6 FROM idemgate.outbox WHERE effect_type IN ('rc_found', 'rc_lost') AND state = 'completed'",
		60),
	'found and lost effects completed without an operator');
ok(wait_until($node, "SELECT bool_and(status_checks = 1) FROM idemgate.outbox WHERE effect_type = 'rc_asks'", 30),
	'503 answers: each asking effect counted one status check');

my @reqs = @{ sink_requests($sink) };
my (%posts, %gets);
for my $r (@reqs)
{
	if ($r->{method} eq 'GET')
	{
		my ($id) = $r->{path} =~ /q=([0-9a-f-]{36})/;
		push @{ $gets{ $id // 'none' } }, $r;
	}
	else
	{
		push @{ $posts{ $r->{idempotency_key} // 'none' } }, $r;
	}
}
ok(!exists $gets{none}, 'every look-up names its effect id');
is(scalar(grep { defined $_->{body} } map { @$_ } values %gets), 0, 'no look-up has a body');

for my $id (sort keys %id_of)
{
	my $type = $id_of{$id};
	my $g = scalar @{ $gets{$id} // [] };
	my $p = scalar @{ $posts{$id} // [] };
	if ($type eq 'rc_found')
	{
		is("$p $g", '1 1', "found $id: one POST, one look-up");
	}
	elsif ($type eq 'rc_lost')
	{
		is("$p $g", '2 1', "lost $id: one look-up (404), then one POST again with the same key");
		ok($gets{$id}[0]{t} < $posts{$id}[1]{t}, "lost $id: sent again after the look-up");
	}
	elsif ($type eq 'rc_asks')
	{
		is($g, 1, "asks $id: one look-up so far");
		cmp_ok($gets{$id}[0]{t} - $posts{$id}[0]{t}, '>=', 9.5, "asks $id: first asked 10 s after it became unknown");
	}
	else
	{
		is($g, 0, "$type $id: not asked (" . ($type eq 'rc_pid' ? 'no provider id' : 'paused') . ')');
	}
}

# Outcomes in the ledger.
is( $node->safe_psql('app', q{
SELECT string_agg(o.state || ':' || (o.provider_id LIKE 'prov-%') || ':' || r.state, ',')
  FROM idemgate.outbox o JOIN idemgate.runs r USING (idempotency_key)
 WHERE o.effect_type = 'rc_found'}),
	'completed:true:completed,completed:true:completed,completed:true:completed',
	'found: completed with the provider id of the look-up, and the runs completed');
is( $node->safe_psql('app', q{
SELECT string_agg(DISTINCT (e.details->>'delivered') || ' ' || (e.details->>'new_state') || ' ' || (e.details->>'status'), ',')
  FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)
 WHERE e.kind = 'effect_reconciled' AND o.effect_type = 'rc_found'}),
	'true completed 200', 'found: event effect_reconciled (delivered, completed, 200)');
is( $node->safe_psql('app', q{
SELECT string_agg(DISTINCT (e.details->>'delivered') || ' ' || (e.details->>'new_state') || ' ' || (e.details->>'status'), ',')
  FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)
 WHERE e.kind = 'effect_reconciled' AND o.effect_type = 'rc_lost'}),
	'false pending 404', 'lost: event effect_reconciled (not delivered, pending, 404)');
is($node->safe_psql('app', q{
SELECT count(*) FROM idemgate.events e JOIN idemgate.outbox o USING (effect_id)
 WHERE e.kind = 'effect_reconciled' AND o.effect_type = 'rc_asks'}), '0', 'asks: no event while it stays unknown');

# The backoff: the second ask comes 20 s after the first, not before.
ok(wait_until($node, "SELECT bool_and(status_checks = 2) FROM idemgate.outbox WHERE effect_type = 'rc_asks'", 40),
	'asks: asked a second time');
# The sink writes its log in batches, after its answers: the dispatcher can
# record the second answer before the sink's line for it is on disk.
my @asks = grep { $id_of{$_} eq 'rc_asks' } sort keys %id_of;
for (my $wait = 0; $wait < 100; $wait++)
{
	%gets = ();
	for my $r (@{ sink_requests($sink) })
	{
		next unless $r->{method} eq 'GET';
		my ($id) = $r->{path} =~ /q=([0-9a-f-]{36})/;
		push @{ $gets{$id} }, $r;
	}
	last unless grep { scalar(@{ $gets{$_} // [] }) < 2 } @asks;
	usleep(100_000);
}
for my $id (grep { $id_of{$_} eq 'rc_asks' } sort keys %id_of)
{
	cmp_ok($gets{$id}[1]{t} - $gets{$id}[0]{t}, '>=', 19.5, "asks $id: the second ask waited the backoff");
	is($node->safe_psql('app', "SELECT state FROM idemgate.outbox WHERE effect_id = '$id'"), 'unknown',
		"asks $id: still unknown");
}
is(scalar @{ $gets{ (grep { $id_of{$_} eq 'rc_paused' } keys %id_of)[0] } // [] }, 0, 'paused: still not asked');

# The kill switch holds look-ups: the paused type resumed while it is off.
$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(false, 'ops', 'hold everything')");
$node->safe_psql('app', "SELECT idemgate.resume_effect_type('rc_paused', 'ops')");
sleep 3;
my ($paused_id) = grep { $id_of{$_} eq 'rc_paused' } keys %id_of;
is(scalar(grep { $_->{method} eq 'GET' && $_->{path} =~ /\Q$paused_id\E/ } @{ sink_requests($sink) }),
	0, 'kill switch off: the resumed type is not asked');
$node->safe_psql('app', "SELECT idemgate.set_actions_enabled(true, 'ops', 'go on')");
ok(wait_until($node, "SELECT state = 'completed' FROM idemgate.outbox WHERE effect_id = '$paused_id'", 20),
	'switched on: asked and completed');

# An operator's resolve_effect still works on an effect that is asked about.
my ($ask_id) = grep { $id_of{$_} eq 'rc_asks' } sort keys %id_of;
is($node->safe_psql('app', "SELECT idemgate.resolve_effect('$ask_id', true, 'ops', 'p-1', 'seen in the dashboard')"),
	'completed', 'resolve_effect settles an asked-about effect');
my ($pid_id) = grep { $id_of{$_} eq 'rc_pid' } keys %id_of;
is(scalar(grep { $_->{method} eq 'GET' && $_->{path} =~ /\Q$pid_id\E/ } @{ sink_requests($sink) }),
	0, 'the template that needs a provider id never asked for the effect without one');

stop_sink($sink);
$node->stop;
done_testing();
