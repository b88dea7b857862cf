#!/usr/bin/env bash
# Ensures what `make test` needs beyond Go on a fresh machine of this kind
# (Debian, Go, gcc, node 20, npm): a Node >= 22 for the MCP conformance
# suite (scripts/node22.sh, from the npm registry) and the suite itself,
# pinned in scripts/conformance/package-lock.json, and the official MCP
# TypeScript client the end-to-end tests drive (on the system node 20),
# pinned in tests/node/package-lock.json, a redis-server for the Redis
# store's tests, Chromium, Firefox ESR and WebKitGTK (with Xvfb) for the
# browser tests, and promtool for the alert rules' tests (Debian's packages).
# Fails with one line.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "make test: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || fail "$1 is missing ($2)"; }
need go "install Go 1.26 or newer"
need git "install git"
need npm "install Node.js and npm (node 20 is enough; scripts/node22.sh fetches Node 22 for the conformance suite)"

mkdir -p .cache

# apt_install CMD PACKAGE WHY: installs Debian's PACKAGE when CMD is missing.
apt_updated=""
apt_install() {
  command -v "$1" >/dev/null 2>&1 && return 0
  local as_root
  if [ "$(id -u)" -eq 0 ]; then as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then as_root=(sudo -n)
  else fail "$1 is missing and installing it needs root (apt-get install $2) — $3"; fi
  if [ -z "$apt_updated" ]; then
    "${as_root[@]}" apt-get update -qq >.cache/apt-update.log 2>&1 ||
      { tail -5 .cache/apt-update.log >&2; fail "apt-get update failed (see .cache/apt-update.log)"; }
    apt_updated=1
  fi
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >".cache/apt-$2.log" 2>&1 ||
    { tail -5 ".cache/apt-$2.log" >&2; fail "could not install $2 (see .cache/apt-$2.log)"; }
  command -v "$1" >/dev/null 2>&1 || fail "$1 is still missing after apt-get install $2"
}

# deploy/'s tests check and unit-test the alert rules with promtool, which
# Debian ships in its prometheus package (the server's service is not
# needed and is not started by the tests).
apt_install promtool prometheus "deploy/'s tests run promtool check rules and promtool test rules"
# store/redis tests start a real redis-server on a loopback port; their
# sentinels are `redis-server --sentinel` (no redis-sentinel package needed)
# and their Redis Cluster nodes redis-servers with cluster-enabled.
apt_install redis-server redis-server "the Redis store's tests start one"
# The tab SDK's browser tests run in three engines, driven from Go
# (tests/browser_engine_test.go): Debian's Chromium (headless), its Firefox
# ESR (headless, over WebDriver BiDi) and WebKitGTK's WebKitWebDriver with
# its MiniBrowser, which needs a display: a virtual one, from xvfb-run.
apt_install chromium chromium "the tab SDK's browser tests run in it"
apt_install firefox-esr firefox-esr "the tab SDK's browser tests run in it"
apt_install WebKitWebDriver webkit2gtk-driver "the tab SDK's browser tests run in WebKit through it"
apt_install xvfb-run xvfb "WebKit's MiniBrowser runs on its virtual display"
apt_install xauth xauth "xvfb-run needs it"
bash scripts/node22.sh >/dev/null 2>.cache/node22.log || { tail -3 .cache/node22.log >&2; fail "could not install Node 22 (scripts/node22.sh)"; }

conf=scripts/conformance
if [ ! -f "$conf/node_modules/.package-lock.json" ] || [ "$conf/package-lock.json" -nt "$conf/node_modules/.package-lock.json" ]; then
  (cd "$conf" && npm ci --no-audit --no-fund --loglevel=error) >.cache/npm-ci.log 2>&1 ||
    { tail -5 .cache/npm-ci.log >&2; fail "npm ci in $conf failed (see .cache/npm-ci.log)"; }
fi

tsclient=tests/node
if [ ! -f "$tsclient/node_modules/.package-lock.json" ] || [ "$tsclient/package-lock.json" -nt "$tsclient/node_modules/.package-lock.json" ]; then
  (cd "$tsclient" && npm ci --no-audit --no-fund --loglevel=error) >.cache/npm-ci-tsclient.log 2>&1 ||
    { tail -5 .cache/npm-ci-tsclient.log >&2; fail "npm ci in $tsclient failed (see .cache/npm-ci-tsclient.log)"; }
fi
