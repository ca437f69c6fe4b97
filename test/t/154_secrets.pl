# test/t/154_secrets.pl
#    Provider credentials outside the database (src/policy/secrets.c): a header
#    value names a secret, "Bearer ${secret:crm_token}", whose value is only
#    in idemgate.secrets_file (a JSON object of strings, outside the data
#    directory, owned by the server's user, mode 0600):
#    - the provider receives the value; the endpoints table, a pg_dump and
#      the server log never hold it;
#    - register_endpoint refuses (22023) a name the file lacks, a file with
#      group or other bits, an unset setting, a malformed reference;
#    - a secret gone at send time holds the effect (pending, attempt not
#      counted, nothing sent) and fires secret_missing; put back and
#      reloaded, the effect is delivered once and the alert clears.
use strict;
use warnings;

use lib 'test/t';
use DispatchHelpers;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $secret = 'tok-ABC-123-do-not-log';
my $file = "$PostgreSQL::Test::Utils::tmp_check/secrets_154.json";
sub write_secrets
{
	my ($json, $mode) = @_;
	open(my $fh, '>', $file) or die "cannot write $file: $!";
	print $fh $json;
	close $fh;
	chmod($mode // 0600, $file) or die;
}

my $node = dispatch_node('secrets', 'idemgate.poll_interval' => '100ms');
my $sink = start_sink('secrets', 120);
my $base = $sink->{base};
my $headers = q({"X-Api-Key": "Bearer ${secret:crm_token}"});

sub refusal
{
	my ($hdr) = @_;
	my ($rc, $out, $err) = $node->psql('app',
		"\\set VERBOSITY verbose\nSELECT idemgate.register_endpoint('sec', '$base/ok', headers => '$hdr')");
	return $err;
}

# Not set: refused.
like(refusal($headers), qr/22023.*names secret "crm_token", but idemgate.secrets_file is not set/s,
	'without idemgate.secrets_file a reference is refused (22023)');

write_secrets(qq({"crm_token": "$secret", "other": "x"}));
$node->safe_psql('app', "ALTER SYSTEM SET idemgate.secrets_file = '$file'");
$node->reload;
sleep 1;

like(refusal(q({"X-Api-Key": "${secret:nope}"})), qr/22023.*names secret "nope", which idemgate.secrets_file lacks/s,
	'a name the file lacks is refused');
like(refusal(q({"X-Api-Key": "${secret:}"})), qr/22023.*malformed secret reference/s,
	'a malformed reference is refused');
chmod(0640, $file);
like(refusal($headers), qr/22023.*readable or writable by others/s, 'a file others may read is refused');
chmod(0600, $file);
# Inside the data directory (a base backup would copy it): refused.
my $inside = $node->data_dir . '/secrets.json';
open(my $in, '>', $inside) or die; print $in qq({"crm_token": "$secret"}); close $in; chmod(0600, $inside);
$node->safe_psql('app', "ALTER SYSTEM SET idemgate.secrets_file = '$inside'");
$node->reload;
sleep 1;
like(refusal($headers), qr/22023.*is inside the data directory/s, 'a file inside the data directory is refused');
unlink($inside);
$node->safe_psql('app', "ALTER SYSTEM SET idemgate.secrets_file = '$file'");
$node->reload;
sleep 1;
is($node->safe_psql('app', 'SELECT count(*) FROM idemgate.endpoints'), '0',
	'nothing was registered by the refused calls');

$node->safe_psql('app', "SELECT idemgate.register_endpoint('sec', '$base/ok?kind=sec', headers => '$headers')");
is($node->safe_psql('app', "SELECT headers->>'X-Api-Key' FROM idemgate.endpoints WHERE effect_type = 'sec'"),
	'Bearer ${secret:crm_token}', 'the table holds the reference, not the value');

# Delivered with the value.
enqueue_effects($node, 'sec-a', 1, 'sec');
ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.outbox WHERE idempotency_key = 'sec-a-1' AND state = 'completed'", 30),
	'an effect of the type is delivered');
my @got = grep { $_->{path} =~ /kind=sec/ } @{ sink_requests($sink) };
is(scalar(@got), 1, 'one request');
is($got[0]{headers}{'X-Api-Key'}, "Bearer $secret", 'the provider received the secret');

# Gone at send time: held, alerted.
write_secrets(q({"other": "x"}));
enqueue_effects($node, 'sec-b', 1, 'sec');
ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.alerts WHERE alert = 'secret_missing' AND message LIKE 'endpoint of type sec %'", 30),
	'secret_missing fires');
like($node->safe_psql('app', "SELECT message FROM idemgate.alerts WHERE alert = 'secret_missing'"),
	qr/names secret crm_token that idemgate.secrets_file lacks/, 'naming the secret');
ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.outbox WHERE idempotency_key = 'sec-b-1' AND state = 'pending' AND next_attempt_at > now()", 30),
	'the effect is held pending');
is($node->safe_psql('app', "SELECT attempts FROM idemgate.outbox WHERE idempotency_key = 'sec-b-1'"),
	'0', 'its attempt not counted');
is(scalar(grep { $_->{path} =~ /kind=sec/ } @{ sink_requests($sink) }), 1, 'and nothing more was sent');

# Back: delivered once, the alert clears.
write_secrets(qq({"crm_token": "$secret"}));
$node->reload;
ok(wait_until($node, "SELECT count(*) = 1 FROM idemgate.outbox WHERE idempotency_key = 'sec-b-1' AND state = 'completed'", 90),
	'with the secret back the held effect is delivered');
@got = grep { $_->{path} =~ /kind=sec/ } @{ sink_requests($sink) };
is(scalar(@got), 2, 'once');
is($got[1]{headers}{'X-Api-Key'}, "Bearer $secret", 'with the secret');
is($node->safe_psql('app', "SELECT count(*) FROM idemgate.alerts WHERE alert = 'secret_missing'"), '0',
	'secret_missing cleared');

# Nowhere in the database or its log.
my $dump = `pg_dump -d '@{[ $node->connstr('app') ]}' 2>&1`;
ok(length($dump) > 1000, 'pg_dump ran');
unlike($dump, qr/\Q$secret\E/, 'the dump does not hold the secret');
my $hex = unpack('H*', $secret);	# the query itself must not carry it
is($node->safe_psql('app',
		"SELECT count(*) FROM idemgate.events WHERE strpos(details::text, convert_from(decode('$hex', 'hex'), 'UTF8')) > 0"),
	'0', 'no event holds it');
$node->stop;
unlike(slurp_file($node->logfile), qr/\Q$secret\E/, 'the server log does not hold it');
stop_sink($sink);
done_testing();
