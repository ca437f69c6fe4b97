#!/usr/bin/env bash
# scripts/install-deps.sh — install what building and testing idemgate needs
# on Debian 12, as root. The dev package is pinned to the installed server:
# an unpinned postgresql-server-dev-15 would upgrade the server under a
# running cluster.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
need=()
if ! dpkg-query -W -f='${Status}' postgresql-15 2>/dev/null | grep -q 'ok installed'; then
  apt-get update -qq; apt-get install -y -qq postgresql-15 >/dev/null
fi
server=$(dpkg-query -W -f='${Version}' postgresql-15)
dev=$(dpkg-query -W -f='${Version}' postgresql-server-dev-15 2>/dev/null || true)
[ "$dev" = "$server" ] || need+=("postgresql-server-dev-15=$server")
# pg_buildext (test/package) comes with postgresql-server-dev-all, pinned to
# the installed postgresql-common: unpinned it would upgrade that too.
common=$(dpkg-query -W -f='${Version}' postgresql-common)
devall=$(dpkg-query -W -f='${Version}' postgresql-server-dev-all 2>/dev/null || true)
[ "$devall" = "$common" ] || need+=("postgresql-server-dev-all=$common")
for p in build-essential libssl-dev libcurl4-openssl-dev libipc-run-perl postgresql-15-pgtap curl python3 \
         prometheus prometheus-postgres-exporter \
         chromium debhelper dpkg-dev fakeroot; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
