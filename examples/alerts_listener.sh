#!/usr/bin/env bash
# examples/alerts_listener.sh — follow idemgate alerts from a shell.
#
# Prints the alerts firing now (the view is the source of truth: a NOTIFY
# sent while nobody listened is lost), then LISTENs on idemgate_alerts and
# prints every transition (firing / cleared) as it arrives: one line
# "== <time> <payload>", the payload as idemgate sent it (JSON: alert,
# severity, state, at, subject, count, message — the business event, e.g.
# "run lead-0042 of workflow lead-intake failed for good ..." — and keys
# for the alerts about runs; only alert, severity, state and at when the
# superuser turned idemgate.alert_notify_details off), then the view's rows
# again.
#
# When the connection is lost (server restart, failover, network) it says
# so on stderr and reconnects, waiting 1 s, then 2, 4 ... up to 30 s between
# attempts; once connected it prints the alerts firing now again (a
# transition sent while it was away is not replayed) and listens. It stops
# only when killed (Ctrl-C).
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
set -uo pipefail

MAX_BACKOFF=${ALERTS_LISTENER_MAX_BACKOFF:-30}	# seconds

now() { date -u +%H:%M:%S; }
# show_alerts → the alerts firing now, most severe first; fails when the
# server cannot be reached.
show_alerts() {
  psql -X -At -F ' | ' -v ON_ERROR_STOP=1 -c "SELECT severity, alert, message FROM idemgate.alerts
    ORDER BY array_position(ARRAY['critical', 'warning', 'info'], severity), alert, since"
}
# listen → prints each notification until the connection ends. psql prints
# 'Asynchronous notification "idemgate_alerts" with payload "..." received
# from server process ...' after each command it runs; a cheap command
# every second gives it the chance to print them as they arrive, and shows
# it a lost connection within a second.
listen() {
  {
    echo 'LISTEN idemgate_alerts;'
    while sleep 1; do echo 'SELECT;' || exit 0; done
  } | psql -X -q -At -v ON_ERROR_STOP=1 2>&1 | while IFS= read -r line; do
    case $line in
      *'Asynchronous notification "idemgate_alerts" with payload "'*)
        payload=${line#*with payload \"}; payload=${payload%\" received from server process*}
        echo "== $(now) $payload"
        show_alerts ;;
      '') ;;
      *) echo "== $(now) psql: $line" >&2 ;;
    esac
  done
}

backoff=1	# seconds to the next attempt: 1, 2, 4 ... MAX_BACKOFF; back to 1 once it stayed up
while :; do
  if out=$(show_alerts 2>&1); then
    echo "== $(now) firing now"
    [ -n "$out" ] && printf '%s\n' "$out"
    started=$SECONDS
    listen
    if [ $((SECONDS - started)) -ge 10 ]; then	# it was up: reconnect at once
      backoff=1
      echo "== $(now) connection lost; reconnecting" >&2
      continue
    fi
    echo "== $(now) connection lost after $((SECONDS - started)) s; next attempt in ${backoff} s" >&2
    sleep "$backoff"
    backoff=$((backoff * 2)); [ "$backoff" -gt "$MAX_BACKOFF" ] && backoff=$MAX_BACKOFF
  else
    echo "== $(now) cannot connect: $(printf '%s' "$out" | head -1); next attempt in ${backoff} s" >&2
    sleep "$backoff"
    backoff=$((backoff * 2)); [ "$backoff" -gt "$MAX_BACKOFF" ] && backoff=$MAX_BACKOFF
  fi
done
