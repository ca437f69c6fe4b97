# test/t/123_endpoint_limits.pl
#    Per-endpoint limits (docs/operations.md), kept together by two dispatchers:
#    - rate_limit 20 and 50: 200 effects take at least 9.5 s (3.9 s), and
#      no one-second window at the sink (first-byte kernel receive times)
#      holds more than 20 (50) requests, although two dispatchers share
#      the endpoint (at 50/s they once let 51 into 0.9993 s);
#    - max_in_flight 3: never more than 3 requests at the sink at once
#      (each is held 300 ms), although 2 dispatchers could send 64;
#    - bad values are refused with 22023 and change nothing; the limits are
#      stored and audited, and re-registering without them clears them.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = dispatch_node(
	'limits',
	'idemgate.poll_interval' => '100ms',
	'idemgate.dispatchers' => '2',
	'idemgate.max_in_flight' => '32');
my $sink = start_sink('limits', 300);
my $base = $sink->{base};
$node->poll_query_until('app', 'SELECT count(*) = 2 FROM idemgate.dispatcher_status()')
  or die 'two dispatchers expected';

# sqlstate runs a statement and returns the SQLSTATE it raised ('' if none).
sub sqlstate
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('app',
		"DO \$do\$ BEGIN EXECUTE \$q\$$sql\$q\$; RAISE NOTICE 'sqlstate=none'; "
		  . "EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'sqlstate=%', SQLSTATE; END \$do\$");
	return $err =~ /sqlstate=(\w+)/ ? $1 : "?$err";
}

# 1. Arguments.
my $reg = "SELECT idemgate.register_endpoint('lim', '$base/ok', '5 seconds', 3, false, '{}', 'id'";
is(sqlstate("$reg, -1)"), '22023', 'negative rate_limit: 22023');
is(sqlstate("$reg, 0)"), '22023', 'zero rate_limit: 22023');
is(sqlstate("$reg, 'NaN')"), '22023', 'NaN rate_limit: 22023');
is(sqlstate("$reg, 'Infinity')"), '22023', 'infinite rate_limit: 22023');
is(sqlstate("$reg, NULL, 0)"), '22023', 'max_in_flight 0: 22023');
is(sqlstate("$reg, NULL, 100000)"), '22023', 'max_in_flight above the cap: 22023');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.endpoints WHERE effect_type = 'lim'"),
	'0', 'nothing written by a refused call');
$node->safe_psql('app', "$reg, 2.5, 7)");
is( $node->safe_psql('app',
		"SELECT rate_limit || ' ' || max_in_flight FROM idemgate.endpoints WHERE effect_type = 'lim'"),
	'2.5 7', 'limits stored');
like( $node->safe_psql('app',
		"SELECT details::text FROM idemgate.events WHERE kind = 'endpoint_registered' ORDER BY id DESC LIMIT 1"),
	qr/"max_in_flight": 7.*|"rate_limit": "2.5"/, 'limits audited');
$node->safe_psql('app', "$reg)");
is( $node->safe_psql('app',
		"SELECT rate_limit IS NULL AND max_in_flight IS NULL FROM idemgate.endpoints WHERE effect_type = 'lim'"),
	't', 're-registering without limits clears them');
$node->safe_psql('app', "SELECT idemgate.register_endpoint('named', '$base/ok', rate_limit => 5, max_in_flight => 2)");
is($node->safe_psql('app', "SELECT rate_limit || ' ' || max_in_flight FROM idemgate.endpoints WHERE effect_type = 'named'"),
	'5 2', 'named arguments work');

# 2. rate_limit 20 and 50 requests/s: 200 effects each, one rate at a time.
sub max_per_second	# the most requests of @rx (sorted) in a half-open second
{
	my @rx = @_;
	my $max = 0;
	for my $i (0 .. $#rx)
	{
		my $j = $i;
		$j++ while $j + 1 <= $#rx && $rx[ $j + 1 ] < $rx[$i] + 1.0;
		$max = $j - $i + 1 if $j - $i + 1 > $max;
	}
	return $max;
}
for my $rate (20, 50)
{
	my $type = "rated$rate";
	$node->safe_psql('app',
		"SELECT idemgate.register_endpoint('$type', '$base/ok?kind=$type', rate_limit => $rate)");
	enqueue_effects($node, "rate$rate", 200, $type);
	ok(wait_until($node, "SELECT count(*) = 200 FROM idemgate.outbox WHERE effect_type = '$type' AND state = 'completed'", 120),
		"200 effects at rate_limit $rate delivered");
	my @rx = sort { $a <=> $b } map { $_->{rx} } grep { $_->{path} =~ /kind=$type\b/ } @{ sink_requests($sink) };
	is(scalar(@rx), 200, "200 requests at rate_limit $rate at the sink");
	my $span = $rx[-1] - $rx[0];
	my $max_window = max_per_second(@rx);
	diag(sprintf('rate_limit %d: 200 requests over %.2f s (first to last), at most %d in any one-second window',
			$rate, $span, $max_window));
	cmp_ok($span, '>=', 199.0 / $rate, "rate_limit $rate: delivery took at least 199/$rate s");
	cmp_ok($max_window, '<=', $rate, "rate_limit $rate: at most $rate requests in any one second at the sink");
	is($node->safe_psql('app', "SELECT count(*) FROM idemgate.outbox WHERE effect_type = '$type' AND attempts <> 1"),
		'0', "rate_limit $rate: no attempt counted twice while waiting for the rate");
}

# 3. max_in_flight 3, each request held 300 ms at the sink.
$node->safe_psql('app',
	"SELECT idemgate.register_endpoint('narrow', '$base/delay/300?kind=narrow', max_in_flight => 3)");
enqueue_effects($node, 'narrow', 30, 'narrow');
ok(wait_until($node, "SELECT count(*) = 30 FROM idemgate.outbox WHERE effect_type = 'narrow' AND state = 'completed'", 120),
	'30 effects delivered');
# A request holds its slot from its first byte until its response, which
# the sink sends 300 ms after the request arrived: [rx, rx + 0.29) is
# inside that for sure.
my @iv = map { [ $_->{rx}, $_->{rx} + 0.29 ] } grep { $_->{path} =~ /kind=narrow/ } @{ sink_requests($sink) };
my $max_conc = 0;
for my $a (@iv)
{
	my $c = grep { $_->[0] <= $a->[0] && $_->[1] > $a->[0] } @iv;
	$max_conc = $c if $c > $max_conc;
}
diag("max_in_flight 3: at most $max_conc requests at the sink at once");
cmp_ok($max_conc, '<=', 3, 'never more than 3 at once');
cmp_ok($max_conc, '>=', 2, 'but more than one (the limit is not 1)');

stop_sink($sink);
$node->stop;
done_testing();
