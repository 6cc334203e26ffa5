// Package pagebench holds what the in-browser measurements share: the
// headless Chromium they drive (the flags of scripts/chromium, plus what
// measuring needs), and small JavaScript files a measuring page loads
// before the code it measures:
//
//   - IDBCountJS (js/idbcount.js): counts IndexedDB requests and
//     transactions from patched prototypes (globalThis.idbCount);
//   - GoCountJS (js/gocount.js): counts Go<->JS boundary crossings of a Go
//     WebAssembly module started through wasm_exec.js's Go class, and reads
//     the size of its WebAssembly memory (globalThis.goCount);
//   - RawIDBJS (js/rawidb.js): the request/transaction helpers of the
//     plain-JavaScript IndexedDB baselines (globalThis.rawIDB).
//
// cmd/wasm's TestMeasure and the browser half of `make bench` (bench/) use
// it. It is native-only (it starts a browser) and never part of the
// WebAssembly build.
package pagebench
