# nichealthd build, test and packaging. `make help` lists targets.
GO        ?= go
BIN       ?= bin
# One version for every binary and the .deb: internal/version.Base plus,
# off a release tag, the commit (scripts/version says how).
VERSION   ?= $(shell $(GO) run ./scripts/version)
LDFLAGS   := -s -w -X github.com/nichealth/nichealthd/internal/version.stamp=$(VERSION)
PKGS      := ./...
FUZZTIME  ?= 2s
CMDS      := $(notdir $(wildcard cmd/*))
# The try-it node of `make try`: simulated host, private bus, daemon, pid file.
TRY_DIR   ?= $(CURDIR)/.try
# The go test -json stream of test-go, for the closing summary of make test.
TEST_JSON ?= $(BIN)/test-go.json

.PHONY: help build test test-go test-fuzz test-packaging test-packaging-scripts run try try-fleet try-stop bench lint analyze proto deb install clean mutate

help:
	@echo "make run        build and run the demo on a simulated DGX H100 node"
	@echo "make try        leave a simulated node, its own D-Bus and nichealthd running; prints the exports"
	@echo "make try-fleet  make try, plus a local Prometheus with the shipped rules scraping the node"
	@echo "make try-stop   stop what make try and make try-fleet left running"
	@echo "make test       the whole test suite (what CI runs)"
	@echo "make build      build $(CMDS) into $(BIN)/"
	@echo "make bench      benchmarks (poll cycle, evaluator, outbox, D-Bus)"
	@echo "make mutate     mutation testing of checks, persist and the D-Bus access rule (minutes; not in make test)"
	@echo "make lint       gofmt + go vet"
	@echo "make analyze    staticcheck and nilaway (nil panics) over the product's code"
	@echo "make deb        Debian package into dist/"
	@echo "make install    install under DESTDIR/PREFIX (non-Debian hosts)"
	@echo "make proto      regenerate the platform-connector gRPC code"

# One binary at a time, so progress shows: the first one also compiles the
# dependencies (about a minute on 2 cores), the others mostly link. Every
# binary is static pure Go (CGO_ENABLED=0) except the ones in CGO_CMDS:
# nichealth-mad carries rdma-core's MAD libraries (libibumad-dev and
# libibmad-dev to build it), so that nichealthd never links C.
CGO_CMDS  := nichealth-mad
build:
	@echo "go build: $(CMDS) into $(BIN)/"
	@for c in $(CMDS); do \
		start=$$(date +%s); printf '  %s/%s ... ' '$(BIN)' "$$c"; \
		cgo=0; case " $(CGO_CMDS) " in *" $$c "*) cgo=1;; esac; \
		CGO_ENABLED=$$cgo $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/$$c || exit 1; \
		echo "$$(( $$(date +%s) - start ))s"; \
	done

# gofmt, go vet and shellcheck on every shell script.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	bash scripts/shellcheck.sh

# staticcheck (dead code, misuse of the standard library such as a nil
# context) and nilaway (nil flows that panic: a typed nil returned into an
# interface crashed the daemon at start on real RoCE hosts) over every
# non-test file, the simulate build's included, with zero findings. Both
# are module tools (go.mod's tool directive), pinned there, so `go mod
# download` fetches them once and the suite then runs offline. A false
# positive is annotated where it is reported, with its reason:
# //nolint:nilaway // why. The generated protobuf code passes too.
NILAWAY_FLAGS := -test=false -pretty-print=false -include-pkgs=github.com/nichealth/nichealthd

analyze:
	$(GO) tool staticcheck -tests=false $(PKGS)
	$(GO) tool staticcheck -tests=false -tags simulate ./cmd/nichealthd
	$(GO) tool nilaway $(NILAWAY_FLAGS) $(PKGS)
	$(GO) tool nilaway $(NILAWAY_FLAGS) -tags simulate ./cmd/nichealthd

# Ends with the skipped tests, their reasons and one line of counts.
# The packaging scripts run beside test-go: they mostly wait (a container
# booting, a daemon's watchdog) while test-go mostly computes, and they
# share nothing with it (the container has a private network; the Go tests
# use their own temporary directories and buses). The fuzz run comes after:
# it writes into testdata/fuzz, which test-go reads. Every stage runs even
# when one before it failed, and make test fails if any did.
test: lint analyze build deb
	@status=0; \
	$(MAKE) --no-print-directory test-packaging-scripts >$(BIN)/test-packaging.log 2>&1 & pk=$$!; \
	$(MAKE) --no-print-directory test-go || status=1; \
	wait $$pk || status=2; \
	echo "== test-packaging (ran beside test-go; its log: $(BIN)/test-packaging.log)"; cat $(BIN)/test-packaging.log; \
	if [ $$status = 2 ]; then echo "test-packaging: FAILED"; fi; \
	$(MAKE) --no-print-directory test-fuzz || status=1; \
	$(GO) run ./scripts/testsummary report $(TEST_JSON) || status=1; \
	exit $$status

# go test -json, reported package by package with failures in full
# (scripts/testsummary); the raw stream stays in $(TEST_JSON).
# -parallel 4: the black-box tests spend their time waiting on the daemons
# they start, so four at a time keep two cores busy where the default (one
# per core) leaves them mostly idle.
test-go:
	@mkdir -p $(dir $(TEST_JSON))
	$(GO) run ./scripts/testsummary run -save $(TEST_JSON) -- $(GO) test -race -count=1 -parallel 4 -timeout 20m -json $(PKGS)

# A short run of every fuzz target over its kept corpus plus new inputs;
# scripts/fuzz.sh explains how it tells a finding from an engine hiccup.
test-fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME)

test-packaging: build deb test-packaging-scripts

test-packaging-scripts:
	bash packaging/test/unit-quality.sh $(BIN)
	bash packaging/test/prometheus-rules.sh
	bash packaging/test/e2e-systemd.sh $(BIN) $$(ls -t dist/*.deb | head -n1)

# Mutation testing: gremlins (a maintained Go mutation tool, installed
# from the module proxy by go run) flips conditionals, boundaries and
# arithmetic in the core promises one at a time and reruns the package's
# tests; a LIVED line is a survivor, a bug no test would catch. -short
# leaves out the multi-process crash tests, which would make each of the
# ~800 runs take seconds. Not part of make test: it takes many minutes.
GREMLINS        ?= github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
MUTATE_WORKERS  ?= 1
MUTATE_FLAGS    := unleash --workers $(MUTATE_WORKERS) --timeout-coefficient 10 -S lt
DBUSAPI_NOT_ACCESS := (client|names|objects|ring|schema|server|view|_test)\.go$$

mutate:
	@set -e; for p in checks persist; do \
		echo "== mutation testing ./$$p (survivors: LIVED / TIMED OUT)"; \
		GOFLAGS=-short $(GO) run $(GREMLINS) $(MUTATE_FLAGS) ./$$p -E '_test\.go$$'; \
	done; \
	echo "== mutation testing ./dbusapi/access.go"; \
	GOFLAGS=-short $(GO) run $(GREMLINS) $(MUTATE_FLAGS) ./dbusapi -E '$(DBUSAPI_NOT_ACCESS)' -E '(dbustest|localbus)/'

run: build
	@$(BIN)/nichealth-demo --bin $(BIN)

# METRICS=host:port: where the try node's daemon serves /metrics (empty:
# 127.0.0.1:2112, or a free loopback port when that one is taken); make try
# prints the address the daemon bound and fails when it could not.
METRICS   ?=
try: build
	@$(BIN)/nichealth-demo --keep --dir $(TRY_DIR) --bin $(BIN) --policy packaging/dbus/org.nichealth.NicHealth1.conf --metrics-address "$(METRICS)"

# make try's node (started if need be), scraped by a local Prometheus
# (Debian's prometheus package) with the shipped rules.
try-fleet: try
	@$(BIN)/nichealth-demo --fleet --dir $(TRY_DIR) --bin $(BIN) --rules packaging/prometheus/nichealth.rules.yml

try-stop:
	@test -x $(BIN)/nichealth-demo || $(MAKE) --no-print-directory build
	@$(BIN)/nichealth-demo --stop --dir $(TRY_DIR)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

proto:
	bash daemon/sink/connector/pb/generate.sh

deb: build
	bash packaging/build-deb.sh $(BIN) dist

install: build
	VERSION=$(VERSION) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) bash packaging/install.sh $(BIN)

clean:
	rm -rf $(BIN) dist
