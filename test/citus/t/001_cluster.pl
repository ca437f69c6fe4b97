# test/citus/t/001_cluster.pl
#    The harness: three clusters (coordinator + 2 workers) with Citus and
#    idemgate preloaded. CREATE EXTENSION idemgate on the coordinator
#    reaches both workers at the current version, every node runs its
#    launcher and a dispatcher, and a claim on the coordinator works before
#    distribute() (the tables are still local to the coordinator).
use strict;
use warnings;

use lib 'test/citus';
use CitusCluster;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $cl = citus_cluster('cluster');
my $coord = $cl->{coord};

is($coord->safe_psql('app',
	"SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid > 0"),
	'2', 'two active workers registered on the coordinator');

for my $n (@{ $cl->{nodes} })
{
	my $name = $n->name;
	is($n->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'idemgate'"),
		$n->safe_psql('app', "SELECT default_version FROM pg_available_extensions WHERE name = 'idemgate'"),
		"$name: idemgate at the library's version");
	is($n->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'citus'"),
		$coord->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'citus'"),
		"$name: citus at the coordinator's version");
	is($n->safe_psql('app',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'idemgate launcher'"),
		'1', "$name: launcher running");
	ok(dispatchers_running($n), "$name: dispatcher running");
	is($n->safe_psql('app',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'idemgate dispatcher' AND datname = 'app'"),
		$n->safe_psql('app', "SELECT count(*) FROM idemgate.dispatcher_status()"),
		"$name: dispatcher_status() lists the running dispatchers");
}

# A claim before distribute: the plain single-node path.
is($coord->safe_psql('app', "SELECT outcome FROM idemgate.claim('pre-1', '{\"a\":1}')"),
	'claimed', 'claim on the coordinator before distribute');
is($coord->safe_psql('app', "SELECT outcome FROM idemgate.claim('pre-1', '{\"a\":1}')"),
	'duplicate', 'second claim of the key is a duplicate');
is($coord->safe_psql('app', "SELECT state FROM idemgate.runs WHERE idempotency_key = 'pre-1'"),
	'processing', 'the run is stored on the coordinator');
is($cl->{workers}[0]->safe_psql('app', "SELECT count(*) FROM idemgate.runs"),
	'0', 'not on a worker (not distributed yet)');

$_->stop for reverse @{ $cl->{nodes} };
done_testing();
