# Kassa. `make run` starts the service on its embedded default (Pebble and
# the simulated chain and Lightning); `make test` runs every test.
GO      ?= go
BIN     := bin/kassa
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.Version=$(VERSION)
# Pinned code generators and linters, built once.
TOOLS   ?= $(HOME)/.cache/kassa/tools
# The build tags of the tests the fast tier (test-short) leaves unbuilt:
# daemon, some packages' tests against a real PostgreSQL or etcd; bench,
# the tests of kassa-bench's floor (they link Pebble for the bench's
# yardstick alone). Every other target builds them.
TEST_TAGS := daemon,bench
# The test targets pipe go test -json through internal/testreport: a line
# a package, the whole output of what failed, and a line for each skipped
# test with its reason (go test without -v prints no skip's reason; a skip
# without one fails the run). pipefail keeps go test's exit status.
SHELL       := bash
.SHELLFLAGS := -o pipefail -c
REPORT      := $(GO) run ./internal/testreport

.PHONY: all build run test test-short test-fuzz test-deps bench lint protos itest test-pg test-cluster btcd lnd regtest clean screenshots

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kassa

run: build
	$(BIN) serve --dev

# Every test, with the race detector. The end-to-end and kill -9 tests
# start the real binary; the browser tests drive it in headless Chromium.
# The integration tests against real daemons (itest/) run in `make itest`.
# Some packages' tests against a real PostgreSQL or etcd carry the build
# tag daemon (without it each such package has one test that skips and
# says so, or no test files when all its tests need one): make test and
# the targets below build with it (TEST_TAGS).
# The suites check their HTTP exchanges against the OpenAPI document and
# write what they exercised to a directory; TestOpenAPICoverage then lists
# what none exercised (kassatest/apitest).
test: test-deps
	$(GO) vet -tags $(TEST_TAGS) ./...
	cov=$$(mktemp -d) && trap 'rm -rf "$$cov"' EXIT && \
	KASSA_OPENAPI_COVERAGE=$$cov $(GO) test -json -tags $(TEST_TAGS) -race -count=1 -timeout 20m -skip '^TestOpenAPICoverage$$' $$($(GO) list ./... | grep -v '/itest') | $(REPORT) && \
	KASSA_OPENAPI_COVERAGE=$$cov KASSA_OPENAPI_COVERAGE_CHECK=1 $(GO) test -tags $(TEST_TAGS) -count=1 -run '^TestOpenAPICoverage$$' -v ./kassatest/apitest
	$(MAKE) test-fuzz

# Each fuzz target of the calls between nodes (actors, FuzzXxxCall: one
# a StoreCall command) for FUZZTIME runs after a first instrumented build.
# go test -fuzz takes one package and one target a run. The budget is a
# count, not a duration: Go 1.26's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" when a duration ends while a
# worker is mid-call (golang/go#75804, fixed in Go 1.27); a count has no
# deadline. 20000 runs take 2-30 s a target here (700-11,000 runs a
# second).
FUZZTIME ?= 20000x
test-fuzz:
	@for f in $$($(GO) test -list 'Fuzz.*' ./actors/ | grep '^Fuzz'); do \
		echo "fuzz $$f"; \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./actors/ || exit 1; \
	done

# The fast tier: go test -short, no race detector, no PostgreSQL, etcd,
# Chromium, daemon or built binary (the tests that need one skip and say
# which; those of a few packages against PostgreSQL or etcd, and the
# bench floor's, build only with TEST_TAGS, so nothing is linked just to
# skip them); `make test` runs them all. Built without cgo, as the container
# image (deploy/Containerfile) builds the binary that ships: Pebble's
# cache then lives in Go's heap and its zstd is pure Go, as in production,
# and the test binaries link without gcc (a third less CPU; `make test`
# keeps cgo, which the race detector needs).
test-short:
	CGO_ENABLED=0 $(GO) test -json -short -count=1 ./... | $(REPORT)

# Runs the browser tests with KASSA_SCREENSHOTS set: they write the
# screenshots the README links to docs/screenshots/ (otherwise to a
# temporary directory).
screenshots: test-deps
	KASSA_SCREENSHOTS=1 $(GO) test -count=1 -run 'TestBrowser' ./cmd/kassa/

# Builds btcd and btcctl (pinned, cached under ~/.cache/kassa/bin); fails
# when they cannot be built.
btcd:
	bash scripts/build-btcd.sh >/dev/null

# Builds lnd and lncli (pinned, cached under ~/.cache/kassa/bin; the first
# build takes minutes); fails when they cannot be built.
lnd:
	bash scripts/build-lnd.sh >/dev/null

# Integration tests against a real btcd in regtest and real lnd nodes,
# built with the tag itest (without it go test ./... skips the package).
# Never skipped: a daemon that cannot be built fails them.
itest: btcd lnd
	$(GO) test -json -tags itest,$(TEST_TAGS) -race -count=1 -timeout 20m ./itest/... | $(REPORT)
	$(MAKE) test-pg
	$(MAKE) test-cluster

# The single-node end-to-end suite again, with the store in a throw-away
# PostgreSQL (kassa serve --store postgres://…).
# The suites on PostgreSQL and on the cluster leave out, by name and
# saying so, the tests that do not use the suite's store (they start
# their own PostgreSQL and etcd: make test runs them) and those that
# cannot run on it. Run by hand with KASSA_E2E_STORE set, the first kind
# simply run again on their own servers.
OWN_STORE_TESTS = TestClusterSigtermWithoutEtcd|TestClusterNodeCutOffFromEtcd|TestClusterRidesOutEtcd|TestHealthSaysStorageUnavailable|TestClusterInFlightAtNodeLoss|TestClusterKillAndStall
test-pg:
	@echo "test-pg leaves out $(OWN_STORE_TESTS): they start their own PostgreSQL and etcd (make test runs them); and TestDiskFull: it fills Pebble's disk"
	KASSA_E2E_STORE=postgres $(GO) test -json -tags $(TEST_TAGS) -race -count=1 -timeout 20m -skip '^($(OWN_STORE_TESTS)|TestDiskFull)$$' ./cmd/kassa | $(REPORT)

# The single-node end-to-end suite against three-node clusters (each
# server a test starts is the first of three nodes over PostgreSQL and
# etcd; the node ports speak mutual TLS with certificates made per
# cluster as `kassa cluster certs` makes them). Without -race: make test
# runs the cluster code under -race.
test-cluster:
	@echo "test-cluster leaves out $(OWN_STORE_TESTS): they start their own PostgreSQL and etcd (make test runs them); TestDiskFull: it fills Pebble's disk; TestPayoutCrashPoints: it runs one process of a crashpoints build (on a cluster TestKill9DuringPayouts kills a node during payouts); TestBrowserTwoFactor: a passkey's relying party is one fixed localhost address"
	KASSA_E2E_STORE=cluster $(GO) test -json -tags $(TEST_TAGS) -count=1 -timeout 20m -skip '^($(OWN_STORE_TESTS)|TestDiskFull|TestPayoutCrashPoints|TestBrowserTwoFactor)$$' ./cmd/kassa | $(REPORT)

# A regtest btcd on loopback, a funded test wallet and Kassa serving
# against it; type `pay ADDRESS SATS` or `mine N` (README, "Real node").
regtest: btcd
	$(GO) run ./itest/regtest

# What the tests need beyond Go: Debian's chromium (needs root when missing).
test-deps:
	bash scripts/install-test-deps.sh

# Benchmarks are not tests: they print BENCH lines and ratios against a
# floor measured in the same run; then a create in-process, Kassa's and
# the work floor's, with its CPU time and allocations.
bench:
	$(GO) run ./cmd/kassa-bench
	$(GO) test -tags $(TEST_TAGS) -run '^$$' -bench 'CreateInvoice$$|WorkFloor$$' -benchtime 2000x -benchmem ./http ./cmd/kassa-bench/internal/floor

# third_party/ is protoactor-go as upstream wrote it (but for its
# patches), not linted by gofmt.
# gofmt, go vet, go.mod and go.sum tidy, staticcheck and deadcode (every
# function unreachable even from the tests); any finding fails. The two
# linters are pinned and built once into TOOLS (one folder a version).
STATICCHECK := v0.8.2
DEADCODE    := v0.52.0
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$' | grep -v '^third_party/'))" || (gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$' | grep -v '^third_party/'); exit 1)
	$(GO) vet ./...
	$(GO) vet -tags itest,$(TEST_TAGS) ./...
	$(GO) mod tidy -diff
	@test -x $(TOOLS)/staticcheck@$(STATICCHECK)/staticcheck || GOBIN=$(TOOLS)/staticcheck@$(STATICCHECK) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK)
	@test -x $(TOOLS)/deadcode@$(DEADCODE)/deadcode || GOBIN=$(TOOLS)/deadcode@$(DEADCODE) $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE)
	$(TOOLS)/staticcheck@$(STATICCHECK)/staticcheck -tags itest,$(TEST_TAGS) ./...
	@out=$$($(TOOLS)/deadcode@$(DEADCODE)/deadcode -test -tags itest,$(TEST_TAGS) ./... 2>&1) || { echo "$$out"; exit 1; }; \
	test -z "$$out" || { echo "deadcode: unreachable functions:"; echo "$$out"; exit 1; }

# Regenerates protos/kassa.pb.go, protos/storecall.pb.go and the lnd client stubs under
# lightning/lnd/lnrpc: lightning.proto, routerrpc/router.proto,
# invoicesrpc/invoices.proto and walletrpc/walletkit.proto, read from the module cache at the lnd version
# go.mod pins, trimmed (internal/prototrim) to the methods listed in
# lightning/lnd/lnrpc/methods.txt and the messages they reach. Their proto
# packages stay lnrpc, routerrpc, invoicesrpc and walletrpc, so the wire protocol is
# lnd's. Needs protoc (Debian protobuf-compiler).
# protoc-gen-go is built at go.mod's google.golang.org/protobuf version,
# protoc-gen-go-grpc at PROTOC_GEN_GO_GRPC, into TOOLS.
PROTOC_GEN_GO_GRPC := v1.6.2
LNRPC   := lightning/lnd/lnrpc
LNRPC_PROTOS := lightning.proto routerrpc/router.proto invoicesrpc/invoices.proto walletrpc/walletkit.proto
LNRPC_M := Mlightning.proto=github.com/kassapay/kassa/$(LNRPC),Mrouterrpc/router.proto=github.com/kassapay/kassa/$(LNRPC)/routerrpc,Minvoicesrpc/invoices.proto=github.com/kassapay/kassa/$(LNRPC)/invoicesrpc,Mwalletrpc/walletkit.proto=github.com/kassapay/kassa/$(LNRPC)/walletrpc,Msignrpc/signer.proto=github.com/kassapay/kassa/$(LNRPC)/signrpc
protos:
	@command -v protoc >/dev/null || { echo "protos: protoc is missing (apt-get install protobuf-compiler)"; exit 1; }
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$$($(GO) list -m -f '{{.Version}}' google.golang.org/protobuf)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC)
	cd protos && PATH="$(TOOLS):$$PATH" protoc --go_out=. --go_opt=paths=source_relative kassa.proto storecall.proto
	$(GO) mod download github.com/lightningnetwork/lnd && \
	lnd=$$($(GO) list -m -f '{{.Dir}}' github.com/lightningnetwork/lnd)/lnrpc && \
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	protoc -I "$$lnd" --include_imports --include_source_info --descriptor_set_out="$$tmp/full.pb" $(LNRPC_PROTOS) && \
	$(GO) run ./internal/prototrim -keep $(LNRPC)/methods.txt -in "$$tmp/full.pb" -out "$$tmp/trimmed.pb" && \
	PATH="$(TOOLS):$$PATH" protoc --descriptor_set_in="$$tmp/trimmed.pb" \
		--go_out=$(LNRPC) --go_opt=paths=source_relative,$(LNRPC_M) \
		--go-grpc_out=$(LNRPC) --go-grpc_opt=paths=source_relative,$(LNRPC_M) \
		$(LNRPC_PROTOS)

clean:
	rm -rf bin
