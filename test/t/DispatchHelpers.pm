# test/t/DispatchHelpers.pm
#    Shared pieces of the dispatcher TAP tests (test/t/01*-04*): a node with
#    the library preloaded, the loopback sink (test/sink/sink.c, built here
#    with cc), its JSONL log, and enqueueing effects through the public API.
package DispatchHelpers;

use strict;
use warnings;

use Exporter 'import';
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(dispatch_node start_sink stop_sink sink_requests sink_stats
  requests_by_key enqueue_effects register_endpoint wait_until);

my $sink_bin;

# build_sink compiles the sink once per test file.
sub build_sink
{
	return $sink_bin if defined $sink_bin;
	$sink_bin = "$PostgreSQL::Test::Utils::tmp_check/sink";
	system('cc', '-O2', '-o', $sink_bin, 'test/sink/sink.c') == 0
	  or BAIL_OUT('cannot build test/sink/sink.c');
	return $sink_bin;
}

# start_sink starts a sink that stops by itself after $max_seconds.
sub start_sink
{
	my ($name, $max_seconds) = @_;
	my $dir = $PostgreSQL::Test::Utils::tmp_check;
	my $port_file = "$dir/sink_$name.port";
	my $log = "$dir/sink_$name.jsonl";
	unlink $port_file;
	my $h = IPC::Run::start(
		[
			build_sink(), '--port', '0', '--port-file', $port_file,
			'--log', $log, '--max-seconds', $max_seconds // 300, '--quiet'
		],
		'<', \undef, '>', "$dir/sink_$name.out", '2>', "$dir/sink_$name.err");
	for (1 .. 100)
	{
		last if -s $port_file;
		usleep(100_000);
	}
	my $port = PostgreSQL::Test::Utils::slurp_file($port_file);
	chomp $port;
	return {
		name => $name,
		port => $port,
		log => $log,
		handle => $h,
		base => "http://127.0.0.1:$port"
	};
}

# stop_sink stops the sink (it flushes its log first).
sub stop_sink
{
	my ($s) = @_;
	$s->{handle}->signal('TERM');
	$s->{handle}->finish;
}

# sink_requests returns every logged request (array of hashes).
sub sink_requests
{
	my ($s) = @_;
	my @r;
	open(my $fh, '<', $s->{log}) or return [];
	while (my $line = <$fh>)
	{
		next unless $line =~ /\n\z/;    # a line still being written
		push @r, decode_json($line);
	}
	close $fh;
	return \@r;
}

# requests_by_key groups logged requests by Idempotency-Key.
sub requests_by_key
{
	my ($s) = @_;
	my %by;
	push @{ $by{ $_->{idempotency_key} // '' } }, $_ for @{ sink_requests($s) };
	return \%by;
}

# sink_stats returns GET /__stats.
sub sink_stats
{
	my ($s) = @_;
	my $res = HTTP::Tiny->new(timeout => 10)->get("$s->{base}/__stats");
	die "sink stats: $res->{status}" unless $res->{success};
	return decode_json($res->{content});
}

# dispatch_node starts a node that preloads idemgate. The database the
# dispatcher serves ('app') is created only after the start, as a user
# would, so the launcher's wait-for-database path runs every time.
sub dispatch_node
{
	my ($name, %conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $c = "shared_preload_libraries = 'idemgate'\n"
	  . "idemgate.database = 'app'\n"
	  . "max_worker_processes = 16\n"
	  . "log_min_messages = log\n";
	$c .= "$_ = $conf{$_}\n" for sort keys %conf;
	$node->append_conf('postgresql.conf', $c);
	$node->start;
	$node->safe_psql('postgres', 'CREATE DATABASE app');
	$node->safe_psql('app', 'CREATE EXTENSION idemgate');
	$node->poll_query_until('app',
		'SELECT count(*) > 0 FROM idemgate.dispatcher_status()')
	  or die 'no dispatcher started';
	return $node;
}

# register_endpoint registers effect type $type at $url.
sub register_endpoint
{
	my ($node, $type, $url, %o) = @_;
	my $timeout = $o{timeout} // '5 seconds';
	my $max = $o{max_attempts} // 3;
	my $honors = $o{honors} ? 'true' : 'false';
	my $headers = $o{headers} // '{}';
	my $field = $o{provider_id_field} // 'id';
	$node->safe_psql('app',
		"SELECT idemgate.register_endpoint('$type', '$url', '$timeout', $max, $honors, '$headers', '$field')"
	);
}

# enqueue_effects claims $n runs "$prefix-<i>" and enqueues one effect of
# $type for each, all in one transaction (the dispatcher is woken once, at
# commit). The payload records clock_timestamp() at insert time.
sub enqueue_effects
{
	my ($node, $prefix, $n, $type) = @_;
	$node->safe_psql(
		'app', qq{
DO \$\$
DECLARE c record;
BEGIN
  FOR i IN 1..$n LOOP
    SELECT * INTO c FROM idemgate.claim('$prefix-' || i, jsonb_build_object('i', i));
    PERFORM idemgate.enqueue_effect(c.idempotency_key, c.lease_owner, c.version,
      jsonb_build_object('type', '$type', 'target', 'target-' || i,
                         'payload', jsonb_build_object('i', i, 'at', extract(epoch FROM clock_timestamp()))));
  END LOOP;
END \$\$;});
}

# wait_until polls a boolean query until it is true (up to $secs seconds).
sub wait_until
{
	my ($node, $query, $secs) = @_;
	my $end = time + ($secs // 60);
	while (time < $end)
	{
		my $r = $node->safe_psql('app', $query);
		return 1 if $r eq 't';
		usleep(100_000);
	}
	return 0;
}

1;
