#!/usr/bin/env bash
# Ensures what `make test` needs beyond Go on a fresh machine of this kind
# (Debian, Go, gcc, node 20, npm). Today that is Go alone; the cluster,
# OAuth-conformance and browser work add redis-server, node packages and
# Debian's chromium here, installed by this script, never by hand.
set -euo pipefail
need() { command -v "$1" >/dev/null 2>&1 || { echo "make test: $1 is missing ($2)" >&2; exit 1; }; }
need go "install Go 1.26 or newer"
need git "install git"
