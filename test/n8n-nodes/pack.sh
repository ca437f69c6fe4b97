#!/usr/bin/env bash
# test/n8n-nodes/pack.sh — the community-node package built the way
# n8n/README.md says ("Build the tarball"), from a clean copy of n8n/: the
# files git tracks, no node_modules, no dist. Runs `npm ci` and
# `npm run pack` there and fails if the tarball lacks a node package.json
# names (dist/nodes/*/*.node.js), an icon, or holds node_modules, or if the
# peer dependency on n8n-workflow is "*" or not optional.
#
# Usage: pack.sh [DIR]. Leaves the copy (built, with node_modules) in
# DIR/pkg and the tarball in DIR (a temp dir, removed on exit, without DIR).
# test/n8n-nodes/run.sh calls it and installs DIR's tarball into n8n.
# Needs node, npm and the npm registry. Prints "N passed, M failed" last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

if [ $# -ge 1 ]; then
  out=$1; mkdir -p "$out" || { not_ok "pack: cannot create $out"; finish; }
  out=$(cd "$out" && pwd)
else
  out=$(mktemp -d /tmp/idemgate-pack.XXXXXX)
  trap 'rm -rf "$out"' EXIT
fi
pkg=$out/pkg
rm -rf "$pkg" "$out"/n8n-nodes-idemgate-*.tgz
mkdir -p "$pkg"

# The clean copy: what a fresh clone has (git's tracked files, as they are
# in the work tree); without git, the folder minus what the build makes.
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z -- n8n | while IFS= read -r -d '' f; do
     [ -e "$f" ] && printf '%s\0' "${f#n8n/}"
   done) >"$out/files.list"
  (cd "$root/n8n" && tar --null -T "$out/files.list" -cf -) | (cd "$pkg" && tar -xf -)
else
  (cd "$root/n8n" && tar --exclude=./node_modules --exclude=./dist --exclude='./*.tgz' -cf - .) | (cd "$pkg" && tar -xf -)
fi
if [ -f "$pkg/package.json" ] && [ ! -e "$pkg/dist" ] && [ ! -e "$pkg/node_modules" ]; then
  ok "pack: a clean copy of n8n/ ($(find "$pkg" -type f | wc -l) files, no dist, no node_modules)"
else
  not_ok "pack: a clean copy of n8n/"; finish
fi

# The README's commands, verbatim.
for cmd in "npm ci" "npm run pack"; do
  log=$out/$(echo "$cmd" | tr ' ' '-').log
  if (cd "$pkg" && $cmd) >"$log" 2>&1; then
    ok "pack: $cmd"
  else
    not_ok "pack: $cmd"; tail -25 "$log" | sed 's/^/#   /'; finish
  fi
done
tgz=$(ls "$pkg"/n8n-nodes-idemgate-*.tgz 2>/dev/null | head -1)
[ -n "$tgz" ] || { not_ok "pack: npm run pack made a tarball"; finish; }
mv "$tgz" "$out/" && tgz=$out/$(basename "$tgz")
tar -tzf "$tgz" | sort >"$out/tgz.list"

# Every node package.json declares, and its icon, is in the tarball.
node -e '
  const p = require(process.argv[1]);
  for (const f of [...(p.n8n.nodes || []), ...(p.n8n.credentials || [])]) console.log("package/" + f);
' "$pkg/package.json" >"$out/declared.list"
missing=$(grep -vxF -f "$out/tgz.list" "$out/declared.list")
nodes=$(grep -cE '^package/dist/nodes/[^/]+/[^/]+\.node\.js$' "$out/tgz.list")
if [ -s "$out/declared.list" ] && [ -z "$missing" ] && [ "$nodes" -ge 2 ]; then
  ok "pack: the tarball holds the $nodes built nodes package.json declares (dist/nodes/*/*.node.js)"
else
  not_ok "pack: the tarball holds the built nodes"
  echo "#   missing: ${missing:-(no dist/nodes/*/*.node.js)}"; sed 's/^/#   /' "$out/tgz.list"
fi
icons=0
for n in $(grep -E '^package/dist/nodes/[^/]+/[^/]+\.node\.js$' "$out/tgz.list"); do
  grep -qE "^$(dirname "$n")/[^/]+\.(svg|png)$" "$out/tgz.list" && icons=$((icons + 1))
done
if [ "$icons" -eq "$nodes" ] && ! grep -q 'node_modules/' "$out/tgz.list"; then
  ok "pack: an icon beside each node, no node_modules ($(wc -l <"$out/tgz.list") files)"
else
  not_ok "pack: an icon beside each node and no node_modules"; sed 's/^/#   /' "$out/tgz.list"
fi

# The peer dependency: a real range, optional, so that a plain
# `npm install <tarball>` in ~/.n8n/nodes uses n8n's own n8n-workflow and
# never fetches the newest one.
peer=$(tar -xzOf "$tgz" package/package.json | node -e '
  const p = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const r = (p.peerDependencies || {})["n8n-workflow"];
  const opt = ((p.peerDependenciesMeta || {})["n8n-workflow"] || {}).optional === true;
  const dev = (p.devDependencies || {})["n8n-workflow"];
  console.log([r, opt, dev].join(" "));
')
read -r range optional devver <<<"$peer"
if [ -n "$range" ] && [ "$range" != "*" ] && [ "$optional" = true ] &&
   (cd "$pkg" && node -e '
     const semver = require("semver");
     process.exit(semver.satisfies(process.argv[1], process.argv[2]) ? 0 : 1);' "$devver" "$range") 2>/dev/null; then
  ok "pack: peer dependency n8n-workflow $range (optional), which the build's $devver satisfies"
else
  not_ok "pack: peer dependency n8n-workflow is a range the build satisfies, and optional (got: $peer)"
fi
echo "# tarball: $tgz"
finish
