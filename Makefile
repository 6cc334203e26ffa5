# Replica — build, test, run. `make help` lists the targets.
#
# `make test` needs only Go: the first run installs what the browser tests use
# (Debian's chromium with apt-get, wasmbrowsertest into .bin/; for the
# end-to-end cases in the other engines Debian's firefox-esr,
# webkit2gtk-driver and xvfb) and the PostgreSQL the native tests start
# private clusters of (Debian's postgresql), and later runs reuse them.
GO ?= go
export GOFLAGS ?=

BIN := $(CURDIR)/.bin

# Inlining off (-l) in the packages of the browser build where it costs
# download size and buys no speed: ~140 KB of replica.wasm gzipped (issue
# 17, W9; the measurements and the packages kept inlined are in
# internal/wasmbuild, whose test checks that this line matches its
# GCFlags). Every release build of replica.wasm passes them.
WASM_GCFLAGS := -gcflags=github.com/replica-sync/replica/...=-l -gcflags=github.com/replica-sync/replica/engine/internal/...= -gcflags=github.com/replica-sync/replica/kv= -gcflags=github.com/hack-pad/...=-l -gcflags=fmt=-l -gcflags=internal/fmtsort=-l -gcflags=reflect=-l -gcflags=time=-l -gcflags=log=-l -gcflags=encoding/json=-l -gcflags=internal/bisect=-l -gcflags=internal/godebug=-l

# Directories whose tests also run in headless Chromium (GOOS=js GOARCH=wasm
# go test through wasmbrowsertest). Add a directory when it gets browser
# tests; one without test files yet is skipped.
BROWSER_TEST_DIRS := idbkv jsbridge

# The real browser the tests drive. Debian's `chromium` package installs it
# here; elsewhere install Chromium and pass CHROMIUM=/path/to/chromium.
CHROMIUM ?= /usr/bin/chromium
# The `go test` exec wrapper for js/wasm. Installed project-locally, never in
# go.mod: its chromedp version conflicts with ours.
WASMBROWSERTEST_VERSION := v0.11.0

test_dirs = $(strip $(foreach d,$(1),$(if $(wildcard $(d)/*_test.go),./$(d))))

# Environment of every browser run: .bin first on PATH supplies
# go_js_wasm_exec (wasmbrowsertest) and the chromium wrapper it starts.
BROWSER_ENV = PATH="$(BIN):$$PATH" REPLICA_CHROMIUM="$(CHROMIUM)" GOOS=js GOARCH=wasm

.PHONY: help sim test test-native test-browser test-e2e vet vet-native vet-wasm typecheck \
	browser-deps engine-deps pg-deps bench-browser bench-e2e bench bench-go bench-page bench-profile wasm package run clean-tools

help:
	@echo "make run           - build replica.wasm, serve the demo and the relay at http://$(RUN_ADDR)/"
	@echo "make test          - vet (native and js/wasm), native tests, browser tests, end-to-end tests"
	@echo "make test-native   - go test ./... except ./e2e (the simulator's budgeted run included: TestSimBudget)"
	@echo "make sim           - the deterministic simulator for SIM_OPS operations (default 1000000), SIM_PARALLEL seeds at once"
	@echo "make test-browser  - js/wasm tests in headless Chromium: $(BROWSER_TEST_DIRS)"
	@echo "make test-e2e      - the demo in headless Chromium against in-process relays (./e2e), and its core cases in Firefox ESR and WebKitGTK"
	@echo "                     (REPLICA_BROWSERS=chromium,firefox,webkit names the engines; Firefox or WebKit left out is neither installed nor tested)"
	@echo "make bench-e2e     - the end-to-end figures (bootstrap, sync latency, first render; an awaited insert beside raw IndexedDB in each engine), logged"
	@echo "make vet           - go vet ./... natively and for js/wasm"
	@echo "make typecheck     - tsc --strict (typescript from npm) on typecheck/usage.ts against web/replica.d.ts, and on typecheck/module/usage.ts against the npm package's index.d.ts"
	@echo "make bench         - Go benchmarks (benchstat) and Replica beside raw IndexedDB, Dexie and TinyBase in Chromium: bench/out/bench.md"
	@echo "                     (BENCH_QUICK=1: fewer repetitions; make bench-go / bench-page: one half)"
	@echo "make bench-profile - V8 CPU profile of one browser workload (BENCH_PROFILE=replica:w2), Go names included"
	@echo "make bench-browser - js/wasm benchmarks in headless Chromium"
	@echo "make wasm          - build web/replica.wasm and copy wasm_exec.js"
	@echo "make package       - the npm package @replica-sync/replica in dist/package and its tarball (npm pack; nothing is published)"
	@echo "make browser-deps  - install Chromium and wasmbrowsertest if missing"
	@echo "make engine-deps   - install Firefox ESR, WebKitWebDriver and Xvfb (Debian's firefox-esr webkit2gtk-driver xvfb) if missing"
	@echo "make pg-deps       - install PostgreSQL (Debian's postgresql) if missing, for the tests of kv/pgkv, relay/pgstore and the relay on PostgreSQL"
	@echo "make clean-tools   - remove .bin/"

test: vet typecheck test-native test-browser test-e2e

# The d.ts as an app sees it: typecheck/usage.ts uses every option, method
# and event payload, and its @ts-expect-error lines what must be refused.
# Then the module typings as an app importing the npm package sees them:
# internal/npmpkg writes the package's package.json and index.d.ts (derived
# from web/replica.d.ts) into typecheck/module/node_modules, and
# typecheck/module/usage.ts imports them (moduleResolution "bundler").
typecheck: typecheck/node_modules/.package-lock.json
	typecheck/node_modules/.bin/tsc -p typecheck/tsconfig.json
	$(GO) run ./internal/npmpkg -types-only -out typecheck/module/node_modules/@replica-sync/replica
	typecheck/node_modules/.bin/tsc -p typecheck/module/tsconfig.json

typecheck/node_modules/.package-lock.json: typecheck/package.json typecheck/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: installing Debian's npm"; apt-get update -qq && apt-get install -y -qq npm; }
	cd typecheck && npm ci --no-audit --no-fund

vet: vet-native vet-wasm

vet-native:
	$(GO) vet ./...

# Every package, tests included, as the browser build sees it: native-only
# ones (boltkv, relay, cmd/relay, bench, e2e) carry //go:build !js.
vet-wasm:
	GOOS=js GOARCH=wasm $(GO) vet ./...

# ./e2e needs Chromium: test-e2e runs it, after browser-deps.
# The relay's tests run twice: on bbolt files, then on PostgreSQL
# (REPLICA_RELAY_STORE=postgres: relay/storage_pg_test.go), its storage
# contract on both backends.
test-native: pg-deps
	$(GO) test -count=1 $$($(GO) list ./... | grep -v '/e2e$$')
	REPLICA_RELAY_STORE=postgres $(GO) test -count=1 ./relay

# The deterministic simulator of devices, relay and network (internal/sim)
# for SIM_OPS driver operations across consecutive seeds from SIM_FIRST,
# SIM_PARALLEL at once; it prints operations per second and the faults
# injected by kind, and every failing seed with its shrunk trace. make test
# runs its fixed budget (100 000 operations) as part of test-native.
SIM_OPS ?= 1000000
SIM_PARALLEL ?= 2
SIM_FIRST ?= 1
sim:
	$(GO) test -count=1 -timeout 0 -run '^TestSimBudget$$' -v ./internal/sim \
		-sim.ops $(SIM_OPS) -sim.parallel $(SIM_PARALLEL) -sim.first $(SIM_FIRST)

# cmd/wasm's TestLoader* tests load replica.js, and the npm package (its
# TestLoaderPackage runs `make package` into a temporary directory and npm
# installs the tarball offline), in Chromium; its TestWorker* tests the
# engine in a Worker (the default), frozen and resumed. TestWorkerLongTasks
# asserts main-thread task lengths, a timing: it runs in make bench-browser.
test-browser: browser-deps
	$(BROWSER_ENV) $(GO) test -count=1 $(call test_dirs,$(BROWSER_TEST_DIRS))
	$(BROWSER_ENV) $(GO) test -count=1 -run 'TestWebCrypto|TestWebKey' ./wire ./seal
	REPLICA_CHROMIUM="$(CHROMIUM)" $(GO) test -count=1 -run 'TestLoader|TestSync|TestWorker' -skip 'TestWorkerLongTasks' ./cmd/wasm

bench-browser: browser-deps
	$(BROWSER_ENV) $(GO) test -count=1 -run XXX -bench . $(call test_dirs,$(BROWSER_TEST_DIRS))
	REPLICA_CHROMIUM="$(CHROMIUM)" $(GO) test -count=1 -run 'TestWorkerLongTasks' -v ./cmd/wasm
	REPLICA_CHROMIUM="$(CHROMIUM)" REPLICA_MEASURE=1 $(GO) test -count=1 -run 'TestMeasure' -v ./cmd/wasm

# make bench: the Go benchmarks, summarized by benchstat, then the browser
# benchmark (go run ./bench: see bench/doc.go) on the release build of
# replica.wasm, built into bench/out/ (never web/, which tests rebuild). The
# peers come from npm into bench/node_modules (npm ci from the committed
# bench/package-lock.json); without npm they are left out. Everything lands
# in bench/out/ (ignored by git); bench.md holds the table, the notes and the
# benchstat summary. `make test` uses nothing of bench/.
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
BENCH_OUT := bench/out
BENCH_GO_PKGS := ./engine ./wire ./kv/memkv ./kv/boltkv ./relay ./relay/pgstore
BENCH_QUICK ?=
# The Go half runs in two passes. The micro benchmarks run -count 2, which
# gives benchstat a median and a spread per benchmark. The scenario
# benchmarks (BENCH_GO_ONCE: a relay load of seconds of wall time, relays
# talking across PostgreSQL, the relational mapping's bulk paths) run once:
# each is already seconds of work, and three runs of them took 6 of make
# bench's 27 minutes (measured 2026-12-07). BenchmarkLoad's window is 5 s
# here (RELAY_LOAD_SECONDS; 10 s when run alone). The whole of make bench
# then fits in 15 minutes on 2 cores.
BENCH_COUNT := $(if $(BENCH_QUICK),1,2)
BENCH_TIME := $(if $(BENCH_QUICK),100ms,200ms)
BENCH_GO_ONCE := ^(BenchmarkLoad|BenchmarkCrossRelayLatency|BenchmarkRelationalApply|BenchmarkRelationalSnapshot|BenchmarkIdleConnections|BenchmarkSteadyLoad|BenchmarkStorage|BenchmarkInsertOversized)$$
BENCH_FLAGS ?=
BENCH_PROFILE ?= replica:w2

bench: bench-go bench-page

bench-go: pg-deps $(BIN)/benchstat-$(BENCHSTAT_VERSION)
	@mkdir -p $(BENCH_OUT)
	@echo "Go benchmarks: -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) $(BENCH_GO_PKGS), then once: $(BENCH_GO_ONCE)"
	{ $(GO) test -run XXX -bench . -skip '$(BENCH_GO_ONCE)' -benchmem -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) $(BENCH_GO_PKGS) 2>&1; s1=$$?; \
		RELAY_LOAD_SECONDS=5 $(GO) test -run XXX -bench '$(BENCH_GO_ONCE)' -benchmem -count 1 -benchtime $(BENCH_TIME) $(BENCH_GO_PKGS) 2>&1; s2=$$?; \
		[ $$s1 -eq 0 ] && [ $$s2 -eq 0 ]; } > $(BENCH_OUT)/go.txt; \
		status=$$?; grep -E -- '^(--- FAIL|FAIL|ok|panic)' $(BENCH_OUT)/go.txt; \
		$(BIN)/benchstat-$(BENCHSTAT_VERSION) $(BENCH_OUT)/go.txt > $(BENCH_OUT)/benchstat.txt; \
		echo "benchstat summary: $(BENCH_OUT)/benchstat.txt"; \
		if [ $$status -ne 0 ]; then echo "(some Go benchmarks failed: see $(BENCH_OUT)/go.txt)"; fi

bench-page: browser-deps bench/node_modules/.package-lock.json
	@mkdir -p $(BENCH_OUT)
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags="-s -w" $(WASM_GCFLAGS) -o $(BENCH_OUT)/replica.wasm ./cmd/wasm
	REPLICA_CHROMIUM="$(CHROMIUM)" $(GO) run ./bench -wasm $(BENCH_OUT)/replica.wasm \
		$(if $(wildcard $(BENCH_OUT)/benchstat.txt),-benchstat $(BENCH_OUT)/benchstat.txt -gotest $(BENCH_OUT)/go.txt) \
		$(if $(BENCH_QUICK),-quick) $(BENCH_FLAGS)

# A build with Go's symbols (no -s -w), so that the profile names Go functions.
bench-profile: browser-deps bench/node_modules/.package-lock.json
	@mkdir -p $(BENCH_OUT)
	GOOS=js GOARCH=wasm $(GO) build -trimpath $(WASM_GCFLAGS) -o $(BENCH_OUT)/replica-symbols.wasm ./cmd/wasm
	REPLICA_CHROMIUM="$(CHROMIUM)" $(GO) run ./bench -wasm $(BENCH_OUT)/replica-symbols.wasm -cpuprofile $(BENCH_PROFILE) $(BENCH_FLAGS)

# The peers, from the committed lock file. Without npm they are skipped
# (the bench says so) and Replica is still measured beside raw IndexedDB.
bench/node_modules/.package-lock.json: bench/package.json bench/package-lock.json
	@if command -v npm >/dev/null 2>&1; then cd bench && npm ci --no-audit --no-fund; \
	else echo "npm not found: Dexie and TinyBase are left out of make bench (install Node.js and npm)"; fi

$(BIN)/benchstat-$(BENCHSTAT_VERSION): | $(BIN)
	GOOS= GOARCH= GOFLAGS= GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)
	mv $(BIN)/benchstat $@

# End to end: each test starts its own relay in-process and drives the demo
# (web/) in headless Chromium; TestMain builds replica.wasm once, into a
# copy of web/. Screenshots go to $$REPLICA_SCREENSHOTS (default: a temp
# directory, printed). TestEngines runs the core cases in Firefox ESR and
# WebKitGTK too (e2e/engines_test.go), each beside a Chromium device.
test-e2e: browser-deps engine-deps pg-deps
	REPLICA_CHROMIUM="$(CHROMIUM)" REPLICA_FIREFOX="$(FIREFOX)" REPLICA_WEBKIT_DRIVER="$(WEBKIT_DRIVER)" \
		$(GO) test -count=1 -timeout 30m ./e2e

bench-e2e: browser-deps engine-deps
	REPLICA_CHROMIUM="$(CHROMIUM)" REPLICA_FIREFOX="$(FIREFOX)" REPLICA_WEBKIT_DRIVER="$(WEBKIT_DRIVER)" REPLICA_FIGURES=1 \
		$(GO) test -count=1 -timeout 30m -run 'TestBootstrapCities|TestSyncLatency|TestPhoneWidth|TestEngineInsertCost' -v ./e2e

# The demo: build replica.wasm, then run the relay on RUN_ADDR with its
# databases under ./data, serving web/ at / and sync at /sync. Ctrl-C stops it.
# First the new relay binary checks (relay -check) that no relay runs on
# ./data and the address is free: a second `make run` in the same checkout
# stops there, before it rebuilds the web/replica.wasm the running relay
# serves or replaces its binary.
RUN_ADDR ?= 127.0.0.1:8080
run: | $(BIN)
	$(GO) build -o $(BIN)/relay.new ./cmd/relay
	@$(BIN)/relay.new -check -addr $(RUN_ADDR) -data data || { rm -f $(BIN)/relay.new; \
		echo "make run: not started, nothing rebuilt. A relay already runs in this checkout (or something else listens on $(RUN_ADDR))."; \
		echo "  Use the running one, or stop it first (Ctrl-C in its terminal) and run make run again."; exit 1; }
	@mv -f $(BIN)/relay.new $(BIN)/relay
	@$(MAKE) --no-print-directory wasm
	@echo "Starting the relay. Open the URL below in two browser windows (or add ?db=NAME for a database of your own); Ctrl-C stops it."
	@$(BIN)/relay -addr $(RUN_ADDR) -data data -web web -inspect

# The release build, then its data segments merged (internal/wasmsize
# -pack, Go only): Go's linker starts a data segment at every run of zero
# bytes, and the merged module, with the same initial memory, is ~100 KB
# smaller gzipped (~70 KB with brotli) for ~10 % more raw bytes.
wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags="-s -w" $(WASM_GCFLAGS) -o web/replica.wasm ./cmd/wasm
	$(GO) run ./internal/wasmsize -pack web/replica.wasm -gzip web/replica.wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" wasm_exec.js
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" web/wasm_exec.js

# The npm package @replica-sync/replica (web/npm/README.md): the release
# build of replica.wasm as `make wasm` makes it, then internal/npmpkg
# assembles $(DIST)/package/ (package.json, the ES module index.js and its
# index.d.ts, both derived from web/replica.js and web/replica.d.ts, the
# script-tag replica.js and replica.d.ts, replica.wasm, the wasm_exec.js of
# this Go, replica-worker.js (worker mode), README.md), and npm pack writes
# $(DIST)/replica-sync-replica-$(PACKAGE_VERSION).tgz. Nothing is published.
# The repository names no license yet: PACKAGE_LICENSE (an SPDX expression)
# stays UNLICENSED until it does.
DIST ?= dist
PACKAGE_VERSION ?= 0.1.0
PACKAGE_LICENSE ?= UNLICENSED
package:
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: installing Debian's npm"; apt-get update -qq && apt-get install -y -qq npm; }
	@mkdir -p $(DIST)
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags="-s -w" $(WASM_GCFLAGS) -o $(DIST)/replica.wasm ./cmd/wasm
	$(GO) run ./internal/wasmsize -pack $(DIST)/replica.wasm $(DIST)/replica.wasm
	$(GO) run ./internal/npmpkg -out $(DIST)/package -version $(PACKAGE_VERSION) -license $(PACKAGE_LICENSE) \
		-wasm $(DIST)/replica.wasm -wasm-exec "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js"
	cd $(DIST) && npm pack ./package --pack-destination . --no-fund --no-audit --no-update-notifier

# --- PostgreSQL for the native tests -----------------------------------------

# internal/pgtest starts private clusters from the newest
# /usr/lib/postgresql/*/bin. Debian's postgresql package is installed with
# apt-get only when no initdb is there; where that cannot work (not root, no
# apt-get) or fails, make stops with one line saying what to install.
PG_INITDB = $(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin/initdb)))
define install_postgresql
$(info installing Debian's postgresql for the native tests (apt-get; log: .bin/apt-get-postgresql.log) ...)
$(shell mkdir -p $(BIN) && { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; } >$(BIN)/apt-get-postgresql.log 2>&1 && echo ok)
endef
NEED_POSTGRESQL := kv/pgkv's tests need PostgreSQL: run 'apt-get install postgresql' as root on Debian (initdb under /usr/lib/postgresql/*/bin)

pg-deps:
	@$(if $(PG_INITDB),true,$(if $(and $(can_apt),$(strip $(install_postgresql)),$(wildcard /usr/lib/postgresql/*/bin/initdb)),echo "installed PostgreSQL",$(error $(NEED_POSTGRESQL))))

# --- browser test tools -----------------------------------------------------

browser-deps: $(CHROMIUM) $(BIN)/go_js_wasm_exec $(BIN)/chromium $(BIN)/headless_shell

$(BIN):
	mkdir -p $@

# Chromium is installed with apt-get only when $(CHROMIUM) is missing. Where
# that cannot work (not root, no apt-get) or fails, make stops with one line
# saying what to install; apt-get's own output goes to .bin/apt-get.log.
can_apt = $(shell command -v apt-get >/dev/null 2>&1 && test "$$(id -u)" = 0 && echo yes)
define install_chromium
$(info installing Debian's chromium for the browser tests (apt-get; log: .bin/apt-get.log) ...)
$(shell mkdir -p $(BIN) && { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } >$(BIN)/apt-get.log 2>&1 && echo ok)
endef
NEED_CHROMIUM := browser tests need Chromium: run 'apt-get install chromium' as root on Debian, or install Chromium and run make with CHROMIUM=/path/to/chromium

$(CHROMIUM):
	@$(if $(and $(can_apt),$(strip $(install_chromium)),$(wildcard $@)),echo "installed $@",$(error $(NEED_CHROMIUM)))

# wasmbrowsertest, named by version so that changing the version reinstalls it.
$(BIN)/wasmbrowsertest-$(WASMBROWSERTEST_VERSION): | $(BIN)
	GOOS= GOARCH= GOBIN=$(BIN) $(GO) install github.com/agnivade/wasmbrowsertest@$(WASMBROWSERTEST_VERSION)
	mv $(BIN)/wasmbrowsertest $@

$(BIN)/go_js_wasm_exec: $(BIN)/wasmbrowsertest-$(WASMBROWSERTEST_VERSION)
	ln -sf $(notdir $<) $@

# wasmbrowsertest lets chromedp pick the browser: the first of headless_shell,
# headless-shell, chromium, chromium-browser, google-chrome, ... found on
# PATH. Both names link to the wrapper so that .bin wins even when a
# headless_shell is installed elsewhere on PATH.
$(BIN)/chromium $(BIN)/headless_shell: scripts/chromium | $(BIN)
	ln -sf ../scripts/chromium $@

# --- Firefox ESR and WebKitGTK for ./e2e's TestEngines -----------------------

# REPLICA_BROWSERS (comma-separated chromium, firefox, webkit; unset: all)
# names the engines ./e2e tests; engine-deps installs the ones named.
# Firefox ESR is driven over WebDriver BiDi, which it speaks itself (Debian
# has no geckodriver); WebKitGTK through WebKitWebDriver (webkit2gtk-driver,
# whose libwebkit2gtk-4.1-0 brings MiniBrowser), on an Xvfb display:
# MiniBrowser has no headless mode. Installed with apt-get only when
# missing; where that cannot work, make stops with one line saying what to
# install (or how to leave the engine out).
FIREFOX ?= /usr/bin/firefox-esr
WEBKIT_DRIVER ?= /usr/bin/WebKitWebDriver
XVFB := /usr/bin/Xvfb
comma := ,
ENGINES_WANTED := $(if $(strip $(REPLICA_BROWSERS)),$(filter firefox webkit,$(subst $(comma), ,$(REPLICA_BROWSERS))),firefox webkit)
ENGINE_FILES := $(if $(filter firefox,$(ENGINES_WANTED)),$(FIREFOX)) $(if $(filter webkit,$(ENGINES_WANTED)),$(WEBKIT_DRIVER) $(XVFB))
ENGINE_MISSING = $(strip $(foreach f,$(ENGINE_FILES),$(if $(wildcard $(f)),,$(f))))
ENGINE_PACKAGES := $(if $(filter firefox,$(ENGINES_WANTED)),firefox-esr) $(if $(filter webkit,$(ENGINES_WANTED)),webkit2gtk-driver xvfb)
define install_engines
$(info installing Debian's $(strip $(ENGINE_PACKAGES)) for the end-to-end tests in Firefox and WebKit (apt-get; log: .bin/apt-get-engines.log) ...)
$(shell mkdir -p $(BIN) && { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(ENGINE_PACKAGES); } >$(BIN)/apt-get-engines.log 2>&1 && echo ok)
endef
NEED_ENGINES = the end-to-end tests need $(ENGINE_MISSING): run 'apt-get install $(strip $(ENGINE_PACKAGES))' as root on Debian, or leave engines out with REPLICA_BROWSERS=chromium

engine-deps:
	@$(if $(ENGINE_MISSING),$(if $(and $(can_apt),$(strip $(install_engines)),$(if $(ENGINE_MISSING),,ok)),echo "installed $(strip $(ENGINE_PACKAGES))",$(error $(NEED_ENGINES))),true)

clean-tools:
	rm -rf $(BIN)
