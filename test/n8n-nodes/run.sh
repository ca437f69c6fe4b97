#!/usr/bin/env bash
# test/n8n-nodes/run.sh — the n8n community-node package (n8n/) in a real
# n8n, driving the workflows built from its nodes (examples/n8n-idemgate-nodes/) on
# loopback. As root, after `make install` (scripts/test.sh runs it as its
# own suite).
#
# What it does: builds the package as n8n/README.md says (npm ci, npm run
# pack, in a clean copy of n8n/: test/n8n-nodes/pack.sh, which also checks
# the tarball), runs its unit tests and lint; installs the tarball into
# n8n's ~/.n8n/nodes with a plain `npm install <tarball>`. The rest is
# test/n8n/harness.sh, shared with test/n8n/run.sh: the same cached n8n
# release; a throwaway PostgreSQL with idemgate on a free loopback port, the
# loopback sink (test/sink) as notifier, provider and chat, and n8n on
# 127.0.0.1 with N8N_USER_FOLDER in a temp dir; three credentials (client,
# approver, operator) and the workflows imported with n8n's CLI and
# activated; then test/n8n-nodes/drive.js. Everything it started is stopped
# on exit. Prints "N passed, M failed" last. If anything cannot be built,
# installed or started, that is a failure with the reason, never a skip.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/test/n8n/harness.sh"

n8n_preflight
n8n_install
n8n_scratch n8n-nodes

# The package, built as n8n/README.md says from a clean copy of n8n/
# (test/n8n-nodes/pack.sh: npm ci, npm run pack, the tarball's contents and
# peer dependency), then its unit tests and n8n's community-node lint there.
bash "$root/test/n8n-nodes/pack.sh" "$T/pack" >"$T/pack.log" 2>&1
sed -n '/^\(not \)\?ok - /p; /^#/p' "$T/pack.log"
count "$T/pack.log"
tgz=$(ls "$T"/pack/n8n-nodes-idemgate-*.tgz 2>/dev/null | head -1)
[ -n "$tgz" ] || fail_now "package: test/n8n-nodes/pack.sh made no tarball"
step() {	# step NAME COMMAND... → runs in the package copy, fails the suite with the log's tail
  local name=$1; shift
  if (cd "$T/pack/pkg" && "$@") >"$T/pkg-$name.log" 2>&1; then
    ok "package: $name"
  else
    echo "# $name:"; tail -25 "$T/pkg-$name.log" | sed 's/^/#   /'
    fail_now "package: $name failed"
  fi
}
step "unit tests (node --test)" npm test
step "lint (eslint-plugin-n8n-nodes-base)" npm run lint
echo "# package built after $(( $(date +%s) - started )) s"

# The server logs every error with its statement (log_min_error_statement),
# as a production server does: the test greps that log for approval tokens.
# idemgate 1.2's grant_role makes the approver role quiet (no statement
# text, terse errors in the server log). Undone here, as on a 1.1 server or
# one whose DBA changed it: the node must keep tokens out of the log itself.
n8n_postgres "-c log_min_error_statement=error -c log_min_messages=warning" \
  "ALTER ROLE n8n_approver RESET ALL;" client approver operator
# The provider: every effect's first attempt gets 503 with Retry-After 1,
# its second 200.
n8n_sink "/seq/503,200?retry_after=1"
n8n_environment idemgate-nodes N8N_COMMUNITY_PACKAGES_ENABLED=true N8N_REINSTALL_MISSING_PACKAGES=false

# The package installed into n8n's community-nodes folder (~/.n8n/nodes) as
# n8n's manual-install docs and n8n/README.md say: a plain
# `npm install <tarball>` there. No flags: the peer dependency n8n-workflow
# is optional, so npm installs no second copy (n8n's own is used) and never
# fetches the newest one.
nodes_dir=$N8N_USER_FOLDER/.n8n/nodes
mkdir -p "$nodes_dir"
printf '{"name":"installed-nodes","private":true}\n' >"$nodes_dir/package.json"
if (cd "$nodes_dir" && npm install "$tgz") >"$T/nodes-install.log" 2>&1 &&
   [ -f "$nodes_dir/node_modules/n8n-nodes-idemgate/dist/nodes/Idemgate/Idemgate.node.js" ] &&
   [ -d "$nodes_dir/node_modules/pg" ] && [ ! -e "$nodes_dir/node_modules/n8n-workflow" ]; then
  ok "package: a plain npm install of the tarball in ~/.n8n/nodes installs it with pg and no n8n-workflow ($(ls "$nodes_dir/node_modules" | wc -l) packages)"
else
  tail -20 "$T/nodes-install.log" | sed 's/^/#   /'
  fail_now "package: npm install of the tarball into ~/.n8n/nodes failed"
fi

# A test-only workflow whose work fails without recording it, with the
# shipped error workflow as its error workflow.
n8n_import examples/n8n-idemgate-nodes test/n8n-nodes/failing-work.json IdgNodeErrors001 client:40 approver:20 operator:5
n8n_start idemgate-nodes '^20[02]$' "built from the idemgate node"
n8n_drive test/n8n-nodes/drive.js
n8n_finish
