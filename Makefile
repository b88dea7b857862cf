# tabrelay — the two commands a new user needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/tabrelay
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

# make run: one node on the embedded store, serving the demo app at /demo/
# (its origin allowed, APP_URL pointing at it: they follow RELAY_LISTEN).
RUN_ENV := RELAY_DATA_DIR=$${RELAY_DATA_DIR:-data} RELAY_DEMO=$${RELAY_DEMO:-true}

.PHONY: build run test bench lint fuzz clean proto

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tabrelay

run: build
	$(RUN_ENV) ./$(BIN) serve

# Every test, race detector on; then the tests of several nodes (or actor
# systems with protoactor's remote) in one process, which only run without
# it (tests/cluster_inproc_test.go says why). Tests that need programs beyond Go install
# them through scripts/ensure-deps.sh and fail with one line when they cannot.
test:
	@bash scripts/ensure-deps.sh
	bash scripts/web-test.sh
	$(GO) test -race -count=1 -timeout 20m ./...
	$(GO) test -count=1 -timeout 10m -run InProcess ./tests ./actors
	GO=$(GO) bash scripts/fuzz.sh $(FUZZBRIEF) $(FUZZ_TARGETS)

# The in-process benchmarks, then issue 13's out-of-process one (relay vs
# go-sdk, load, idle tabs, admission, restart storm; docs/BENCHMARKS.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	TABRELAY_LEAN_BENCH=1 $(GO) test -run '^$$' -bench BenchmarkLeanCallPath -benchtime 1x -timeout 20m ./tests

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	@bash scripts/web-test.sh lint

# Every fuzz target, as package:target (docs/security.md says what each
# one holds the decoder to). `make fuzz` runs each for FUZZTIME; `make test`
# for FUZZBRIEF each (a count of inputs, not a time: a timed run of a
# couple of seconds can end in the fuzzing engine's own "context deadline
# exceeded" on a loaded machine), after the seed corpora ran as tests.
FUZZ_TARGETS := protocol:FuzzTabMessage protocol:FuzzLoadBundle protocol:FuzzEncodeResult \
                protocol:FuzzTagData protocol:FuzzImageCheck protocol:FuzzScopeIntersect \
                mcp:FuzzServeHTTP tabsocket:FuzzTabSocket tabsocket:FuzzTabHello \
                oauth:FuzzToken oauth:FuzzRevoke oauth:FuzzRegister oauth:FuzzAuthorize \
                oauth/cimd:FuzzDocument oauth:FuzzScopeParam internal/redisurl:FuzzParse
FUZZTIME  ?= 60s
FUZZBRIEF ?= 500x

fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

clean:
	rm -rf bin

# Regenerate the protobuf messages between actors (generated code is
# committed; needs protoc, Debian's protobuf-compiler (3.21.12 made the
# committed file), and protoc-gen-go at go.mod's google.golang.org/protobuf
# version: go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12).
proto:
	cd actors/wire && protoc --go_out=. --go_opt=paths=source_relative wire.proto
