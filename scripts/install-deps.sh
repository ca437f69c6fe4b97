#!/usr/bin/env bash
# scripts/install-deps.sh — install what building and testing idemgate needs
# on Debian 12, as root. The dev package is pinned to the installed server:
# an unpinned postgresql-server-dev-15 would upgrade the server under a
# running cluster.
#
# Node.js >= 20.19 for the n8n suite (test/n8n: n8n 1.123 needs it): Debian
# 12's nodejs is 18, so when `node` is missing or older, this installs
# Debian's nodejs and npm, then the official Node.js build from the npm
# registry (package node-linux-<arch>, version NODE_VERSION) into /usr/local,
# whose bin/ comes before /usr/bin in PATH, and npm 10 (NPM_VERSION) there
# when the npm in PATH is older. Debian's node and npm stay in /usr/bin.
#
# With --build (scripts/demo.sh), only what building and the demo need:
# PostgreSQL 15 and its pinned dev package, build-essential, libssl-dev,
# libcurl4-openssl-dev, libicu-dev, python3; no test tools, no Node.js.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
build_only=false
case ${1:-} in
  --build) build_only=true ;;
  "") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac
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
if ! $build_only; then
  common=$(dpkg-query -W -f='${Version}' postgresql-common)
  devall=$(dpkg-query -W -f='${Version}' postgresql-server-dev-all 2>/dev/null || true)
  [ "$devall" = "$common" ] || need+=("postgresql-server-dev-all=$common")
fi
pkgs=(build-essential libssl-dev libcurl4-openssl-dev libicu-dev python3)
$build_only || pkgs+=(libipc-run-perl postgresql-15-pgtap curl \
                      prometheus prometheus-postgres-exporter \
                      chromium debhelper dpkg-dev fakeroot)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
$build_only && exit 0

NODE_VERSION=${NODE_VERSION:-20.20.2}
node_ok() {	# node on PATH and >= 20.19
  command -v node >/dev/null &&
    node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'
}
if ! node_ok; then
  case $(dpkg --print-architecture) in
    amd64) arch=x64 ;; arm64) arch=arm64 ;;
    *) echo "no Node.js build on the npm registry for $(dpkg --print-architecture)" >&2; exit 1 ;;
  esac
  if ! command -v npm >/dev/null; then
    echo "installing: nodejs npm (Debian's, to fetch Node.js $NODE_VERSION from the npm registry)"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  echo "installing: node-linux-$arch@$NODE_VERSION from the npm registry into /usr/local"
  npm install -g --prefix /usr/local --no-audit --no-fund --loglevel=error "node-linux-$arch@$NODE_VERSION" >/dev/null
  hash -r
  node_ok || { echo "Node.js >= 20.19 is still not first in PATH ($(command -v node): $(node --version 2>&1)); /usr/local/bin must come before /usr/bin" >&2; exit 1; }
fi
# npm 10 or later: Debian's npm 9.2 cannot install n8n (it rejects the
# override test/n8n/run.sh sets for n8n's xlsx dependency with "Invalid
# comparator"). NPM_VERSION is the npm that Node.js 20.20.2 ships with.
NPM_VERSION=${NPM_VERSION:-10.8.2}
npm_ok() { command -v npm >/dev/null && [ "$(npm --version | cut -d. -f1)" -ge 10 ]; }
if ! npm_ok; then
  echo "installing: npm@$NPM_VERSION from the npm registry into /usr/local"
  npm install -g --prefix /usr/local --no-audit --no-fund --loglevel=error "npm@$NPM_VERSION" >/dev/null
  hash -r
  npm_ok || { echo "npm >= 10 is still not first in PATH ($(command -v npm): $(npm --version 2>&1))" >&2; exit 1; }
fi
