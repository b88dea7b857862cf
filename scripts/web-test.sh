#!/usr/bin/env bash
# web-test.sh — the checks of the tab SDK (web/sdk), of the demo app
# built on it (web/demo), of the React package (web/react) and of its
# example app (web/examples/react): their dev dependencies from their
# package-lock.json (npm ci, as scripts/ensure-deps.sh does for
# tests/node), the type checks, a rebuild compared with the committed
# dist/ (a stale build fails; for the demo also its bundle.json, with
# tabrelay-bundle --check), the unit tests under Node 22's test runner
# (scripts/node22.sh) with the SDK's size budget among them, the SDK as a
# consumer installs it (web/sdk/scripts/consumer.mjs: npm pack, the
# tarball's files, its types under TypeScript 5.0, 5.9 and ours), and the
# size reports. With "lint", only the dependencies and the type checks (make lint).
# Fails with one line.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
fail() { echo "web-test: $*" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || fail "npm is missing (install Node.js and npm)"
mkdir -p .cache

node="$(bash scripts/node22.sh 2>.cache/node22.log)" || { tail -3 .cache/node22.log >&2; fail "could not install Node 22 (scripts/node22.sh)"; }

# deps DIR NAME: npm ci in DIR when its lock changed since the last one.
# A node_modules that is a symlink (a worktree sharing another checkout's)
# is left as it is: npm ci would empty the shared directory through it.
deps() {
  if [ -L "$1/node_modules" ]; then
    [ -f "$1/node_modules/.package-lock.json" ] || fail "$1/node_modules is a symlink to nothing installed: run npm ci where it points"
    return 0
  fi
  if [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error) >".cache/npm-ci-$2.log" 2>&1 ||
      { tail -5 ".cache/npm-ci-$2.log" >&2; fail "npm ci in $1 failed (see .cache/npm-ci-$2.log)"; }
  fi
}
# typecheck DIR
typecheck() { (cd "$1" && "$node" node_modules/typescript/bin/tsc --noEmit -p .) || fail "the type check failed (tsc --noEmit in $1)"; }

sdk=web/sdk demo=web/demo react=web/react example=web/examples/react
deps "$sdk" sdk
deps "$demo" demo # after the SDK's: the demo depends on it (file:../sdk)
deps "$react" react
deps "$example" example-react # links the SDK and the React package (file:)
typecheck "$sdk"
typecheck "$demo"
typecheck "$react" # with test/consumer/app.tsx: useToolHandler's types, the elements' JSX
typecheck "$example"
[ "${1:-}" = "lint" ] && exit 0 # make lint: the type checks only

fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT
# rebuilt DIR FILE…: rebuild DIR into a temporary directory and compare.
rebuilt() {
  local dir="$1" out="$fresh/${1//\//-}"
  shift
  (cd "$dir" && "$node" scripts/build.mjs --outdir "$out") || fail "the build failed (node scripts/build.mjs in $dir)"
  for f in "$@"; do
    cmp -s "$out/$f" "$dir/dist/$f" || fail "$dir/dist/$f is stale: run npm run build in $dir and commit dist/ (and README.md or bundle.json)"
  done
}

rebuilt "$sdk" tabrelay.js tabrelay.d.ts tabrelay-ui.js tabrelay-ui.d.ts tabrelay-ui.css tabrelay-ui-de.js tabrelay-ui-de.d.ts tabrelay-chat.js tabrelay-chat.d.ts tabrelay-bundle.js
(cd "$sdk" && "$node" scripts/test.mjs) || fail "the unit tests failed (npm test in $sdk)"
(cd "$sdk" && "$node" scripts/consumer.mjs) || fail "the packed SDK does not install and type-check in a fresh project (node scripts/consumer.mjs in $sdk)"
(cd "$sdk" && "$node" scripts/size.mjs)

rebuilt "$demo" app.js card.html tools.js
(cd "$demo" && "$node" node_modules/@tabrelay/tab/dist/tabrelay-bundle.js --app dist/tools.js --out bundle.json --check) ||
  fail "$demo/bundle.json is stale: run npm run build in $demo and commit it"
(cd "$demo" && "$node" scripts/test.mjs) || fail "the unit tests failed (npm test in $demo)"
(cd "$demo" && "$node" scripts/size.mjs)

rebuilt "$react" tabrelay-react.js tabrelay-react.d.ts tabrelay-react-elements.d.ts
(cd "$react" && "$node" scripts/test.mjs) || fail "the unit tests failed (npm test in $react)"
(cd "$react" && "$node" scripts/consumer.mjs) || fail "the packed React package does not install and type-check in a fresh project (node scripts/consumer.mjs in $react)"
(cd "$react" && "$node" scripts/size.mjs)
# The example after the package: it bundles web/react/dist as committed.
rebuilt "$example" app.js tools.js
(cd "$example" && "$node" node_modules/@tabrelay/tab/dist/tabrelay-bundle.js --app dist/tools.js --out bundle.json --check) ||
  fail "$example/bundle.json is stale: run npm run build in $example and commit it"
cd "$root"
