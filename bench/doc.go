//go:build !js

// Command bench is the browser half of `make bench`: it measures Replica in
// headless Chromium beside raw IndexedDB and peer libraries (Dexie,
// TinyBase) on the same workloads, and prints one markdown table of medians
// with every figure's ratio to raw IndexedDB measured in the same run. The
// Makefile runs the Go benchmarks (benchstat) first and passes their
// summary in with -benchstat, so the report holds both.
//
// # Running
//
//	make bench                 # Go benchmarks + this, under 15 minutes
//	make bench BENCH_QUICK=1   # fewer repetitions, for development
//	make bench-page BENCH_QUICK=1 BENCH_FLAGS="-systems raw,replica,replica-sealed -workloads w5,w8"
//	go run ./bench -wasm bench/out/replica.wasm -reps 1 -systems raw,replica -workloads w1,w2
//
// It needs the release build of replica.wasm (-wasm; `make bench` builds it
// into bench/out/ with the flags of `make wasm`), web/replica.js,
// wasm_exec.js from GOROOT, the cities data set (../shared/data/cities.json.gz
// or $REPLICA_CITIES: without it, it prints why and exits 0), Chromium
// ($REPLICA_CHROMIUM, default /usr/bin/chromium) and, for the peers, node
// and the packages of bench/package.json installed in bench/node_modules
// (`make bench` runs npm ci). A peer whose files are missing is left out
// with a message; Replica and raw IndexedDB still run.
//
// # How it measures
//
// One HTTP server on 127.0.0.1 serves a page per system (/p/SYSTEM.html),
// the libraries (/lib/: replica.js, wasm_exec.js, replica.wasm; /nm/: the
// peers' dist files straight from bench/node_modules, no bundler), the
// adapters of bench/js/, the rows (/data/rows.json: the 171,075 cities with
// ids c000000…, lat/lng as numbers) and the relay's /sync. The relay runs
// in-process (package relay, bbolt with fsync, as in production); before
// the browser starts, a native replica pushes every city into its database
// "cities" through package client, so a browser replica bootstraps from a
// snapshot of rows already merged there.
//
// make bench runs one repetition (-reps 1; -reps N reports medians): a
// repetition of the six systems takes about 7 minutes on 2 cores, so two
// would not fit make bench's 15 minutes beside W8 and the Go half. Within
// one repetition W1–W3 are already totals over 10,000 transactions.
//
// Every repetition starts a fresh Chromium (fresh profile: empty HTTP cache,
// no IndexedDB) per system, and runs, one at a time:
//
//   - page 1: W6 cold is the time from the page's first script to an open
//     database that answered one read; then W1, W2 (into a second
//     database), W3 on the first 10,000 rows;
//   - page 2: W5 into a new database, W7 (performance.memory's used JS heap
//     after gc(), plus the WebAssembly memory of replica.wasm), W4;
//   - page 3: W6 warm: the same open of W5's database (171,075 rows).
//
// W8 runs once per system that syncs, in two browser contexts (two
// devices: separate IndexedDB, no BroadcastChannel between them) of one
// Chromium: device A commits a row, device B's subscription sees it; 200
// writes, each after B saw the previous one and 60 ms of quiet (so each
// write starts a push of its own rather than joining a debounced burst).
// Where a system reports them (Replica), the cell also gives two points
// along the way, as p50s from the same commit: the relay's acknowledgment
// reaching A (db.sync.pushed() resolving) and B committing the change (its
// remote change event), so the latency splits into A → relay → B's
// IndexedDB and B's commit → its subscription. Then the burst, 3 times:
// A inserts a ping and updates it 199 times back to back, each write
// awaited and none waiting for the relay; the latency is from the start
// of the last update to B's subscription seeing its value (issue 17's
// target: within 100 ms).
// Timestamps are taken in the pages (performance.timeOrigin + now()).
// TinyBase syncs through its own WebSocket server (createWsServer over the
// ws package) started with node.
//
// "Replica sealed" (-systems replica-sealed, on by default) is Replica
// syncing sealed databases, beside the plain one in the same run, under a
// raw key of 32 random bytes made for the run (seal.GenerateKey): the
// pages pass it to db.sync.connect as {database, key: Uint8Array(32)}.
// It runs W5 only (and W7 after it; the other workloads do not sync and
// are Replica's) and W8. For its W5, before the browser starts, a native
// replica pushes every city into a sealed database as envelopes and a
// second native device pulls them and uploads a sealed checkpoint (a
// device's cursor moves only when it pulls, so the writer itself would
// not), which the browser replica then bootstraps from, opening each part
// with WebCrypto. Its W8 database is sealed by the two pages. The report
// compares both with plain Replica of the same run: W5 as a ratio (target
// ≤ 1.2×), W8's p50 as a difference (target ≤ +2 ms). A replica.wasm
// whose db.sync.connect does not take a key leaves the column out, with
// a note.
//
// "Replica in a Worker" (-systems replica-worker, on by default) is the
// same adapter in worker mode, the loader's default (its script tag has
// data-worker="true": replica.wasm runs in a dedicated Worker, the page
// never loads it); "Replica, page mode" (-systems replica) runs it on the
// page's thread (data-worker="false"), as do the -profile counters and
// -cpuprofile (they see Go only there) and "Replica sealed". The peer
// columns (Replica ÷ Dexie, ÷ TinyBase) and the target column judge the
// default mode when it ran, else page mode. Its cells give the
// ratio to raw IndexedDB and to Replica in the page of the same run: W1
// and W3 show what a Worker round trip adds to each awaited call, W10 what
// it takes off the main thread. Its W7 adds every Worker's used JS heap
// and replica.wasm's memory in it to the page's heap. The heap comes from
// V8 through CDP after a full GC (internal/pagebench.WorkerHeaps; a Worker
// has no performance.memory), read when the page's flow ended, after W4;
// the wasm memory from bench/js/workermem.js, loaded before replica.js,
// which wraps the Worker constructor so that each Worker answers the
// bench's question. The spare Worker (web/replica.js) counts too: its JS
// heap. Neither a Worker's compiled code nor Chromium's process memory is
// in W7; cmd/wasm TestMeasureSpare measures what the spare costs in the
// processes' PSS.
//
// W10 is the main thread's long tasks (PerformanceObserver "longtask",
// installed by the page's first script, before any system's) that started
// during W2 and during W5: the longest, and the total blocking time (the
// sum of each long task's time beyond 50 ms). Target: no task over 50 ms
// caused by Replica (issue 16).
//
// W9 compresses the files a page loads: gzip -9 (compress/gzip) and brotli
// -q 11 (the brotli command, else node's zlib).
//
// W11 is bytes on the wire, measured in the Go half (relay's
// BenchmarkWireBytes in `make bench-go`, read from its go test output,
// -gotest): the TCP bytes a GeoNames cities row costs between an
// in-process relay and native clients (package client) on loopback, per
// row, for a push (device → relay), a live push_changes to a device online
// meanwhile, a pull (get_changes) of a device catching up and a new
// device's snapshot, in transactions of 1 row (each pushed alone) and of
// 1,000, with permessage-deflate off, without context takeover (the
// relay's default, and what Chromium negotiates with it) and with it;
// beside the rows' compact JSON (json.Marshal of each row's map) of the
// same run, in raw IndexedDB's column. Native clients rather than the
// pages: the bytes are the protocol's and the WebSocket's, the same from a
// browser (cmd/wasm TestSyncCompression checks what Chromium negotiates),
// and the Go half measures them without a browser (BenchmarkWireBytes,
// BenchmarkDeflate and BenchmarkConnectionMemoryDeflate add 65–80 s to
// `make bench-go` on 2 cores at load average 13 to 20, 14–20 s of it
// CPU). Target
// (issue 17): within 2× of compact JSON with the default. The figures,
// the breakdown of a ChangeSet's bytes and the prototypes of a denser
// form: relay/doc.go, "Compression" and "Bytes on the wire". Alone:
//
//	go test -run '^$' -bench 'WireBytes' -count 1 ./relay
//
// With -profile, a further pass runs Replica and raw IndexedDB with
// counters: IndexedDB requests and transactions per row (patched
// prototypes) and Go<->JS boundary crossings per row (a wrapped Go class):
// internal/pagebench's scripts, the same as cmd/wasm's TestMeasure uses.
//
// Results: bench/out/browser.json (every sample), bench/out/bench.md (the
// table, notes, and the benchstat summary), the table on stdout.
//
// # How the files are served
//
// The pages load /lib/replica.js, replica-worker.js, wasm_exec.js and
// replica.wasm through the in-process relay's own static handler (its
// Config.WebDir: a directory of links to the files), so they get the
// headers users get from cmd/relay and `make run`: application/wasm,
// Cache-Control: no-cache with Last-Modified, 304 on revalidation
// (relay/static.go). Until issue 17's W6 work the bench served them with
// http.ServeFile and no Cache-Control (Last-Modified only: heuristic
// freshness, so a second page might skip the revalidation production
// makes). No replica.wasm.gz is made for the bench: replica.wasm travels
// uncompressed over loopback, where production's relay sends the gzip
// sibling `make wasm` writes.
//
// # The wasm code cache
//
// Issue 17's W6 target counts compiling replica.wasm and asks to cache the
// compiled module where the platform allows. In Chromium that is V8's
// wasm code cache: for a module compiled by compileStreaming /
// instantiateStreaming from a same-origin application/wasm Response of
// the HTTP cache (the loader's path, in the page and in the Worker), V8
// may serialize its optimized code into the profile's "Code Cache/wasm",
// keyed by URL and the response's time, and the next load deserializes it
// instead of compiling. internal/wasmcacheprobe measures when it does
// (fresh profile, visits of a page opening a replica, the profile's
// Code Cache/wasm listed after each, Chromium's trace for V8's caching
// events). Headless Chromium 156.0.8078.129, 2 shared cores:
//
//   - With default V8 flags no entry is ever written. Not in worker mode
//     after an open and 2,000 or 10,000 inserts and 3–4 s idle, not in
//     page mode after 2,000 inserts and 15 s idle. The trace shows why:
//     66 TurboFan compilations, the last 1.7 s into the page, the page
//     alive until 8 s, and no wasm.CompilationChunkFinished (V8's caching
//     event). V8 caches when 1 MB of TurboFan code has been made since the
//     last entry (--wasm-caching-hard-threshold) or when 2 s pass without
//     new TurboFan code after 1 KB was made (--wasm-caching-timeout-ms,
//     --wasm-caching-threshold); the timeout never fired, with 500 ms
//     either (--js-flags=--wasm-caching-timeout-ms=500: no entry), while
//     --wasm-caching-hard-threshold=200000 wrote entries at once (3, 856
//     KiB). Opens and thousands of inserts make less than 1 MB of
//     TurboFan code, so they never reach the trigger that works; the
//     bench's page 2 does (W5's bootstrap of 171,075 rows and W4: 2.6 MB
//     in Code Cache/wasm after it, in worker mode).
//   - Made to cache early (--wasm-caching-timeout-ms=0), the path works:
//     the Worker writes an entry (489–696 KB serialized), the spare
//     Worker's compile 2 s later and the next visit's load hit it
//     (v8.wasm.moduleCacheHit); in the trace the Worker's module was ready
//     about 70 ms after its response on a hit against 140–160 ms
//     compiling. The opens themselves (T0 to the first read) are too noisy
//     on this shared machine to quote a gain: 221–440 ms on hits against
//     587–1,920 ms for first visits that also downloaded the file.
//   - Revalidation: with the relay's no-cache, a load revalidates
//     (304) and still hits an entry made during the session that
//     downloaded the file (Blink compares the entry's time with the
//     response's original_response_time), but an entry V8 writes during
//     a revalidated session is stored with the 304's time and the next
//     load misses it and clears it: visit 1 writes, the spare and visit 2
//     hit (and write), visit 3 and the compile-only pages compile from
//     scratch. Served with Cache-Control: max-age=31536000, immutable (no
//     revalidation) every later load hit and the entry grew with each
//     session (490, 619, 696 KB). Both runs, twice, gave the same events.
//
// So the bench's W6 warm cannot use the entries page 2 writes: page 2's
// replica.wasm was a 304, as production's would be. With the bench's
// former serving (no Cache-Control: heuristic freshness, 10% of the
// file's age) page 2 could take replica.wasm from the HTTP cache without
// revalidating and write valid entries, which W6 warm then used: a figure
// production's no-cache does not give. That is one reason the bench now
// serves as the relay does.
//
// Nothing the loader or the relay can do makes the cache engage for
// ordinary sessions in this Chromium: the loader already streams from the
// fetch's Response in both modes (an ArrayBuffer would get no cache at
// all; cmd/wasm TestWorkerWasmCodeCache), and headers cannot lower V8's
// 1 MB trigger. Content-hashed names served immutable keep entries valid
// once V8 writes them (README, "Serving replica.wasm"); a fixed name must
// be revalidated, and then only an entry written in the session that
// downloaded it survives.
//
//	go run ./internal/wasmcacheprobe -serve relay -mode worker -work 2000 -linger 4s
//	go run ./internal/wasmcacheprobe -serve relay -every -work 500 -linger 1s -js-flags=--wasm-caching-timeout-ms=0 -trace /tmp/trace.json
//	go run ./internal/wasmcacheprobe -serve immutable -every -work 500 -linger 1s -js-flags=--wasm-caching-timeout-ms=0 -trace /tmp/trace.json
//
// The W5 figure comes from a bench run with a fixed profile directory
// (a local change to session(), not kept) listing Code Cache/wasm after
// each page: nothing after page 1, 2 files (2.6 MB) after page 2.
//
// W6 before and after the bench served as the relay does (3 repetitions
// each, medians, raw IndexedDB of the same run; load average 10 from
// other work on the 2 cores, so single samples range 2–4×): cold, worker
// 666 ms (3.0× raw's 219 ms) before, 1,645 ms (8.0× raw's 205 ms) after;
// warm, worker 260 ms (5.4× raw's 48 ms) before, 441 ms (5.6× raw's 78
// ms) after; page mode warm 319 ms (6.6×) before, 171 ms (2.2×) after.
// Noise, not the headers, separates them; the change is that the bench
// now revalidates replica.wasm as production does.
package main
