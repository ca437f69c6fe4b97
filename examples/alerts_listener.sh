#!/usr/bin/env bash
# examples/alerts_listener.sh — follow idemgate alerts from a shell.
#
# Prints the alerts firing now (the view is the source of truth: a NOTIFY
# sent while nobody listened is lost), then LISTENs on idemgate_alerts and
# prints every transition (firing / cleared) as it arrives. Each payload
# names the alert, its severity, state and time only; the details (counts,
# effect types, workflows) are read from idemgate.alerts again.
#
#   PGHOST=127.0.0.1 PGDATABASE=app PGUSER=oncall PGPASSWORD='<its password>' examples/alerts_listener.sh
#
# It connects like psql (PG* variables). The role logs in and needs the
# reader bundle:
#   CREATE ROLE oncall LOGIN PASSWORD '<its password>';
#   SELECT idemgate.grant_role('oncall', 'reader');
# (Debian's pg_hba.conf asks TCP clients on 127.0.0.1 for a password and
# lets only the OS user of the same name in through the socket.)
# The dispatcher publishes transitions about every second (publish_alerts);
# without a dispatcher, an operator job must call idemgate.publish_alerts().
# Pipe the output to a chat or paging command instead of the terminal.
set -euo pipefail
show_alerts() {
  psql -X -At -F ' | ' -c "SELECT severity, alert, message FROM idemgate.alerts ORDER BY severity, alert"
}
echo "== firing now"; show_alerts
# psql prints 'Asynchronous notification "idemgate_alerts" with payload "..." received
# from server process ...' after each command it runs; a cheap command
# every second gives it the chance to print them as they arrive.
{
  echo 'LISTEN idemgate_alerts;'
  while sleep 1; do echo 'SELECT;'; done
} | psql -X -q -At 2>&1 | while IFS= read -r line; do
  case $line in
    *'Asynchronous notification "idemgate_alerts" with payload "'*)
      payload=${line#*with payload \"}; payload=${payload%%\" received*}
      echo "== $(date -u +%H:%M:%S) $payload"
      show_alerts ;;
  esac
done
