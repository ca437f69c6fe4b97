#!/usr/bin/env bash
# test/package/meta_version.sh — the version is written in idemgate.control
# (default_version); META.json and CHANGELOG.md must not drift from it.
#   - META.json parses, has the PGXN Meta Spec 1.0.0 required keys, and its
#     version and provides.idemgate.version are semver whose first two parts
#     (major.minor) are default_version;
#   - CHANGELOG.md has a section "## [<default_version>]";
#   - debian/changelog's newest entry is <default_version>.0-<revision>.
# Prints "ok - ..." / "not ok - ..." and "N passed, M failed" last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

control=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$root/idemgate.control")
check "idemgate.control has a default_version ($control)" test -n "$control"

# meta FIELD → prints one field of META.json (dotted path), empty if absent.
meta() {
  python3 - "$root/META.json" "$1" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)
PY
}
check "META.json parses" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$root/META.json"
for key in name abstract maintainer license version provides meta-spec.version; do
  check "META.json has $key" test -n "$(meta "$key" 2>/dev/null)"
done
check "META.json meta-spec is 1.0.0" test "$(meta meta-spec.version)" = 1.0.0
check "META.json name is idemgate" test "$(meta name)" = idemgate
check "META.json license is postgresql" test "$(meta license)" = postgresql
semver='^[0-9]+\.[0-9]+\.[0-9]+$'
for field in version provides.idemgate.version; do
  v=$(meta "$field")
  check "META.json $field ($v) is semver" grep -Eq "$semver" <<<"$v"
  check "META.json $field ($v) is default_version $control" test "${v%.*}" = "$control"
done
file=$(meta provides.idemgate.file)
check "META.json provides.idemgate.file ($file) exists" test -n "$file" -a -f "$root/$file"

check "CHANGELOG.md has a section for $control" \
  grep -Eq "^## \[$(sed 's/\./\\./g' <<<"$control")\]" "$root/CHANGELOG.md"

deb=$(sed -n '1s/^idemgate (\([^)]*\)).*/\1/p' "$root/debian/changelog" 2>/dev/null)
check "debian/changelog's version ($deb) is default_version $control" test "${deb%%-*}" = "$control.0"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
