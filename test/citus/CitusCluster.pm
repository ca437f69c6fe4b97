# test/citus/CitusCluster.pm
#    A Citus cluster on one machine for the TAP tests in test/citus/t: a
#    coordinator and two workers, three PostgreSQL::Test::Cluster nodes with
#    shared_preload_libraries = 'citus,idemgate' and idemgate.database =
#    'app', listening on 127.0.0.1. citus_cluster() starts them, creates
#    database app and extension citus on each, registers the coordinator and
#    adds the workers, then (unless told not to) creates extension idemgate
#    on the coordinator (Citus propagates it) and waits until each node's
#    dispatcher runs. The sink and the enqueue helpers come from
#    test/t/DispatchHelpers.pm (run.sh puts test/t on @INC).
package CitusCluster;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(citus_cluster plain_node distribute psql_result query
  dispatchers_running on_each poll_app);

# run.sh's timeout sends SIGTERM: die instead, so that END blocks run and
# PostgreSQL::Test::Cluster stops every node it started.
# Each test file is bounded too (IDEMGATE_CITUS_FILE_TIMEOUT seconds,
# default 300): SIGALRM dies the same way.
$SIG{TERM} = $SIG{INT} = sub { die "killed by signal\n" };
$SIG{ALRM} = sub { die "killed by signal (the file ran longer than its limit)\n" };
alarm($ENV{IDEMGATE_CITUS_FILE_TIMEOUT} || 300);

my $common_conf = <<'EOC';
shared_preload_libraries = 'citus,idemgate'
idemgate.database = 'app'
idemgate.poll_interval = '100ms'
max_worker_processes = 32
max_connections = 200
max_prepared_transactions = 100
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
listen_addresses = '127.0.0.1'
citus.node_conninfo = 'sslmode=disable'
log_min_messages = warning
log_line_prefix = '%m [%p] %b '
EOC

# citus_cluster($name, %o) → { coord => node, workers => [w1, w2],
# nodes => [coord, w1, w2] }. Options: conf => { guc => value } added to every
# node, idemgate => 0 to stop before CREATE EXTENSION idemgate,
# distribute => 1 to run idemgate.distribute() as well.
sub citus_cluster
{
	my ($name, %o) = @_;
	my @nodes;
	for my $role (qw(coord w1 w2))
	{
		my $n = PostgreSQL::Test::Cluster->new("${name}_$role");
		$n->init;
		my $c = $common_conf;
		$c .= "$_ = $o{conf}{$_}\n" for sort keys %{ $o{conf} // {} };
		$n->append_conf('postgresql.conf', $c);
		$n->start;
		$n->safe_psql('postgres', 'CREATE DATABASE app');
		$n->safe_psql('app', 'CREATE EXTENSION citus');
		push @nodes, $n;
	}
	my ($coord, @workers) = @nodes;
	$coord->safe_psql('app',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ')');
	$coord->safe_psql('app', "SELECT citus_add_node('127.0.0.1', " . $_->port . ')')
	  for @workers;
	my $cl = { coord => $coord, workers => \@workers, nodes => \@nodes };
	return $cl if defined $o{idemgate} && !$o{idemgate};

	$coord->safe_psql('app', 'CREATE EXTENSION idemgate');
	for my $n (@nodes)
	{
		$n->poll_query_until('app',
			"SELECT count(*) > 0 FROM pg_catalog.pg_extension WHERE extname = 'idemgate'")
		  or die 'extension idemgate did not reach ' . $n->name;
		dispatchers_running($n) or die 'no dispatcher started on ' . $n->name;
	}
	distribute($cl) if $o{distribute};
	return $cl;
}

# dispatchers_running($node): waits until the node runs an idemgate
# dispatcher (pg_stat_activity); true when it does.
sub dispatchers_running
{
	my ($n) = @_;
	return $n->poll_query_until('app',
		"SELECT count(*) > 0 FROM pg_catalog.pg_stat_activity WHERE backend_type = 'idemgate dispatcher'"
	);
}

# distribute($cl, $shards): idemgate.distribute() on the coordinator.
sub distribute
{
	my ($cl, $shards) = @_;
	$cl->{coord}->safe_psql('app',
		'SELECT idemgate.distribute(' . ($shards // '') . ')');
}

# plain_node($name): a cluster with only idemgate preloaded (no Citus),
# database app with extension idemgate.
sub plain_node
{
	my ($name) = @_;
	my $n = PostgreSQL::Test::Cluster->new($name);
	$n->init;
	$n->append_conf('postgresql.conf',
		"shared_preload_libraries = 'idemgate'\nidemgate.database = 'app'\n");
	$n->start;
	$n->safe_psql('postgres', 'CREATE DATABASE app');
	$n->safe_psql('app', 'CREATE EXTENSION idemgate');
	return $n;
}

# psql_result($node, $sql) → (ret, stdout, stderr) of psql in database app,
# with VERBOSITY verbose so the SQLSTATE is in stderr.
sub psql_result
{
	my ($n, $sql) = @_;
	my ($out, $err) = ('', '');
	my $ret = $n->psql('app', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, on_error_stop => 1);
	return ($ret, $out, $err);
}

# query($node, $sql) → the output of $sql in database app, or on failure
# the error ("ERROR: ..."), so a test can compare it and go on.
sub query
{
	my ($n, $sql) = @_;
	my ($out, $err) = ('', '');
	my $ret = $n->psql('app', $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
	return $out if $ret == 0;
	my ($e) = $err =~ /(ERROR:.*)/;
	return $e // "psql exit $ret: $err";
}

# on_each($cl, $sql) → { node name => result } over the three nodes.
sub on_each
{
	my ($cl, $sql) = @_;
	return { map { $_->name => $_->safe_psql('app', $sql) } @{ $cl->{nodes} } };
}

# poll_app($node, $query, $secs): polls a boolean query in database app
# until it is true; true when it became so within $secs (default 60).
sub poll_app
{
	my ($n, $query, $secs) = @_;
	my $end = time + ($secs // 60);
	while (time < $end)
	{
		my ($ret, $out) = (0, '');
		$ret = $n->psql('app', $query, stdout => \$out);
		return 1 if $ret == 0 && $out eq 't';
		usleep(100_000);
	}
	return 0;
}

1;
