//go:build !js

// Package e2e holds Replica's end-to-end tests: the demo app of web/ in
// headless Chromium, driven through github.com/chromedp/chromedp, syncing
// through a real relay; and TestEngines, the core cases in Firefox ESR and
// WebKitGTK, each beside a Chromium device (engines_test.go). The package
// has no code besides its tests.
//
// # Running
//
//	make test-e2e        # part of make test; installs Chromium, Firefox ESR, WebKitGTK and Xvfb first if missing
//	REPLICA_CHROMIUM=/usr/bin/chromium go test -count=1 ./e2e
//	REPLICA_WORKER=0 REPLICA_CHROMIUM=/usr/bin/chromium go test -count=1 ./e2e   # the same in page mode
//
// The pages run Replica as the loader does by default, in worker mode (the
// engine in a dedicated Worker); REPLICA_WORKER=0 makes page mode the
// loader's default for the whole run (harness_test.go, setPageDefault).
//
// The browser is $REPLICA_CHROMIUM, else /usr/bin/chromium (Debian's
// `chromium` package, installed by make browser-deps); without one the
// tests skip.
//
// TestEngines drives Firefox ESR ($REPLICA_FIREFOX, default
// /usr/bin/firefox-esr: Debian's firefox-esr) over WebDriver BiDi, which
// Firefox speaks itself (Debian has no geckodriver), and WebKitGTK through
// WebKitWebDriver ($REPLICA_WEBKIT_DRIVER, default /usr/bin/WebKitWebDriver:
// Debian's webkit2gtk-driver), which starts MiniBrowser on an Xvfb display
// (Debian's xvfb; MiniBrowser has no headless mode). make test-e2e installs
// the three packages. REPLICA_BROWSERS, a comma-separated list of
// chromium, firefox and webkit (unset: all), leaves engines out: those
// cases skip, saying so. An engine not left out that is missing fails.
// Chromium is always needed.
//
// TestMain builds replica.wasm once (GOOS=js GOARCH=wasm,
// -trimpath -ldflags="-s -w", as make wasm does) into a temporary copy of
// web/ with the toolchain's wasm_exec.js, so the working tree is never
// touched. The real-data test reads ../shared/data/cities.json.gz (or
// $REPLICA_CITIES) and skips with a message when it is absent.
//
// Each test starts its own relay in-process (relay.New and Serve on a free
// 127.0.0.1 port, a temporary data directory, serving that web copy) and
// its own Chromium with the flags of scripts/chromium. A "device" is a
// separate browser context (its own IndexedDB, BroadcastChannel and Web
// Locks, like another browser profile), or for the large bootstrap a
// separate browser process with its own on-disk profile; a "tab" is another
// page of the same browser context.
//
// Every page is watched: an uncaught exception or a console.error call
// fails the test (browser log entries such as a refused WebSocket are only
// logged). Screenshots of the key states go to $REPLICA_SCREENSHOTS, or to
// a temporary directory that TestMain prints; they are not part of the
// repository.
//
// Figures (bootstrap time beside raw IndexedDB, commit-to-subscription
// latency, time to first render) are logged, never asserted; set
// REPLICA_FIGURES=1 (make bench-e2e) for the measurements that only serve
// them.
package e2e
