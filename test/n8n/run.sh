#!/usr/bin/env bash
# test/n8n/run.sh — the shipped n8n workflows (examples/n8n-postgres-node/*.json), imported
# unchanged into a real n8n and driven on loopback. As root, after
# `make install` (scripts/test.sh runs it as its own suite).
#
# What it does, with test/n8n/harness.sh (shared with test/n8n-nodes/run.sh):
# installs the pinned n8n release from the npm registry into a cache
# directory (reused by later runs), and puppeteer-core to drive Debian's
# chromium; starts a throwaway PostgreSQL with idemgate, the loopback sink
# (test/sink) as the notifier, provider and chat endpoints, and n8n with
# N8N_USER_FOLDER in a temp dir (sqlite, 127.0.0.1); imports two
# credentials by the names the workflows use and the workflows themselves
# with n8n's CLI, activates them, then runs test/n8n/drive.js. Everything it
# started is stopped on exit. Prints "N passed, M failed" last. If n8n cannot
# be installed or started, that is a failure with the reason, never a skip.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/test/n8n/harness.sh"

n8n_preflight chromium
n8n_install puppeteer
n8n_scratch n8n
n8n_postgres "" "" client approver
n8n_sink /worker
n8n_environment idemgate
# A test-only workflow whose work fails the way the intake raises it, with
# the shipped error workflow as its error workflow.
n8n_import examples/n8n-postgres-node test/n8n/failing-work.json IdemgateErrors01 client:20 approver:10
n8n_start idemgate '^200$' "of examples/n8n-postgres-node"
n8n_drive test/n8n/drive.js
n8n_finish
