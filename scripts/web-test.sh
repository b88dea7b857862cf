#!/usr/bin/env bash
# web-test.sh — the tab SDK's checks (web/sdk): its dev dependencies from
# its package-lock.json (npm ci, as scripts/ensure-deps.sh does for
# tests/node), the type check, a rebuild compared with the committed
# dist/ (a stale build fails), the unit tests under Node 22's test runner
# (scripts/node22.sh) with the size budget among them, and the size report.
# With "lint", only the dependencies and the type check (make lint).
# Fails with one line.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "web-test: $*" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || fail "npm is missing (install Node.js and npm)"
mkdir -p .cache

node="$(bash scripts/node22.sh 2>.cache/node22.log)" || { tail -3 .cache/node22.log >&2; fail "could not install Node 22 (scripts/node22.sh)"; }

sdk=web/sdk
if [ ! -f "$sdk/node_modules/.package-lock.json" ] || [ "$sdk/package-lock.json" -nt "$sdk/node_modules/.package-lock.json" ]; then
  (cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error) >.cache/npm-ci-sdk.log 2>&1 ||
    { tail -5 .cache/npm-ci-sdk.log >&2; fail "npm ci in $sdk failed (see .cache/npm-ci-sdk.log)"; }
fi
cd "$sdk"

"$node" node_modules/typescript/bin/tsc --noEmit -p . || fail "the type check failed (tsc --noEmit in $sdk)"
[ "${1:-}" = "lint" ] && exit 0 # make lint: the type check only

fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT
"$node" scripts/build.mjs --outdir "$fresh" || fail "the build failed (node scripts/build.mjs in $sdk)"
for f in tabrelay.js tabrelay.d.ts tabrelay-ui.js tabrelay-ui.d.ts tabrelay-bundle.js; do
  cmp -s "$fresh/$f" "dist/$f" || fail "$sdk/dist/$f is stale: run npm run build in $sdk and commit dist/ and README.md"
done

"$node" scripts/test.mjs || fail "the unit tests failed (npm test in $sdk)"
"$node" scripts/size.mjs
