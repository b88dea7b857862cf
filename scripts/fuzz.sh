#!/usr/bin/env bash
# fuzz.sh TIME PACKAGE:TARGET...: runs each fuzz target for TIME, one after
# the other. `make fuzz` gives each a minute; `make test` a few seconds
# each, so that a decoder change that panics on an input the seeds do not
# hold is caught. Each package's instrumented test binary is built once
# (go test -fuzz would link it anew for every target). Inputs that widen
# coverage go to Go's fuzz cache, as `go test -fuzz` keeps them; a failing
# input is written to the package's testdata/fuzz/<Target>/ and fails the
# run: keep it there (it is a seed from then on) and fix what it found.
set -euo pipefail
time=${1:?usage: fuzz.sh TIME PACKAGE:TARGET...}
shift
go=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cache=$($go env GOCACHE)/fuzz
status=0
for t in "$@"; do
	pkg=${t%%:*} target=${t#*:}
	exe="$bin/${pkg//\//_}.test"
	if [ ! -x "$exe" ]; then
		(cd "$root" && $go test -c -fuzz=. -o "$exe" "./$pkg")
	fi
	importpath=$(cd "$root" && $go list "./$pkg")
	start=$SECONDS
	if ! (cd "$root/$pkg" && "$exe" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$time" \
		-test.fuzzminimizetime=5s -test.fuzzcachedir="$cache/$importpath" >"$bin/log" 2>&1); then
		grep -v '^fuzz: elapsed' "$bin/log" | tail -20
		echo "FAIL fuzz $pkg $target"
		status=1
		continue
	fi
	echo "ok   fuzz $pkg $target $time, $((SECONDS - start)) s $(grep -o "execs: [0-9]*" "$bin/log" | tail -1)"
done
exit $status
