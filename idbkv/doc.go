//go:build js && wasm

// Package idbkv implements kv.Store over IndexedDB, for Go compiled to
// WebAssembly (GOOS=js GOARCH=wasm) and run in a browser page or worker.
//
// # Layout
//
// A Store is one IndexedDB database; each kv bucket is one object store with
// out-of-line keys. Keys are stored as binary keys (Uint8Array in,
// ArrayBuffer out), which IndexedDB compares bytewise, so the order matches
// bytes.Compare; JS strings would not (they compare by UTF-16 code unit:
// U+1F600 sorts before U+FF61 as a string, after it as UTF-8). Values are
// stored as Uint8Arrays holding exactly the value's bytes.
//
// Open creates the object stores in the database's upgrade step. If the
// database exists without some of the buckets, Open bumps its version and
// creates them; this makes the browser close every other connection to the
// database first (see Multiple tabs).
//
// # Transactions
//
// Each Update or View is one IndexedDB transaction ("readwrite" or
// "readonly") whose scope is every object store of the Store, so everything
// one Update writes, in any bucket, commits together or not at all, and
// IndexedDB itself serializes read-write transactions: between the Stores of
// one page, and between tabs of one browser profile.
//
// Reads go to IndexedDB inside the transaction. Writes do not: Put, Delete
// and DeleteRange are buffered in Go, in an ordered overlay per bucket, and
// Get, GetMany and Scan merge that overlay with what IndexedDB returns, so a
// transaction reads its own writes. When the function returns nil, every
// buffered write is issued at once, in one batch, and Update returns when
// the browser reports the transaction complete. When it returns an error or
// panics, the IndexedDB transaction is aborted and nothing is written.
//
// # The auto-commit hazard
//
// IndexedDB commits a transaction by itself as soon as control returns to
// the browser's event loop while none of the transaction's requests is
// pending. In Go on WebAssembly control returns to the event loop whenever
// every goroutine is blocked on something JS must deliver: time.Sleep, a
// channel fed by a timer or by a JS callback, a Promise from elsewhere, a
// network read, WebCrypto. Waiting on the transaction's own requests is fine
// (the browser runs the Go code that continues after a request's success
// event while the transaction is still active), and so is a handoff to
// another goroutine that does not itself wait on JS, or a microtask.
//
// A function that waits on anything else inside a transaction has therefore
// already lost its transaction: the browser committed whatever had been
// issued so far. Written request by request, that would leave half a
// transaction behind, and no error handling could undo it. idbkv cannot
// half-commit because it issues no write before commit, and at commit the
// first request fails if the transaction is no longer active (with no
// writes, a probe read plays that role). The result is:
//
//   - Update returns kv.ErrTxInactive and nothing of the transaction is
//     written, whether the wait came before or after its Puts;
//   - a Get, GetMany or Scan after such a wait returns kv.ErrTxInactive, and
//     so does every later call of that transaction;
//   - a View's reads after the wait fail the same way.
//
// Rule: inside Update and View, only compute and call the Tx. Fetch, sleep,
// encrypt or wait for other goroutines before the transaction or after it.
//
// # Cost model and the JS helper
//
// Crossing the Go<->JS boundary costs more than the IndexedDB work of a small
// request (see BROWSER-FACTS.md in the project's shared documents: creating a
// JS value from Go costs microseconds, a JS->Go callback ~10 µs, awaiting a
// Promise from Go ~15 µs), so idbkv crosses it once per batch, not per item:
//
//   - GetMany issues every get and awaits once (Get is a GetMany of one);
//   - Scan reads pages with getAllRecords (getAllKeys+getAll where the
//     browser lacks it; a descending Scan then uses a cursor iterated in JS),
//     over an IDBKeyRange with a count, the first page small (many scans stop
//     early) and later ones larger; each page comes back as one packed buffer;
//   - commit hands every write to JS as one packed buffer, and one call issues
//     every put, delete and range delete;
//   - the awaits use one callback per batch, not the two callbacks, four
//     listener calls and two goroutines per request of go-indexeddb's Await.
//
// These batches run in a small JS helper (helper.js, embedded), compiled once
// per Store with new Function. A page whose Content-Security-Policy forbids
// 'unsafe-eval' makes new Function throw: such a page carries helper.js in
// its own scripts, as a function (cb, opts) whose body is HelperSource(),
// and passes it to Open with Helper (web/replica.js does this for the
// Replica API); without it Open fails there. go-indexeddb (github.com/hack-pad/go-indexeddb) opens, upgrades
// and deletes databases, where its per-request cost does not matter.
//
// # Speculative reads
//
// A Store opened with the Speculate option saves the await of an Update's
// first read. It keeps a bounded cache (a few MiB) of the values its Updates
// read with GetBatch, as they stood when those Updates committed. When an
// Update's first operation is a GetBatch and the cache holds at least one of
// its keys, the GetBatch is answered from the cache at once (keys the cache
// lacks read as absent) and the function goes on computing its writes. At
// commit the helper re-reads every assumed value inside the same IndexedDB
// transaction, before its writes, in the same batch; the last read's success
// handler compares them and commits only if all are unchanged. If one
// changed (another tab or Store wrote it), it aborts the transaction, so
// nothing is written, and Update runs the function again without
// speculation in a new transaction. If the function returns an error after
// a speculative read, it runs again at once, reading for real, in the same
// transaction (nothing was issued yet); its error stands only then. The
// function may therefore run twice: Speculate is for functions whose only
// effects are their writes and variables they set anew on each run (the
// engine's single-statement writes). The transaction's isolation is unchanged, because the check and the
// writes happen in one IndexedDB transaction, which IndexedDB serializes
// with every other read-write transaction. An Update whose function waited
// on something foreign before its speculative first read still fails with
// kv.ErrTxInactive at commit, but that read itself returns no error.
//
// # Multiple tabs
//
// Every tab (and every Store opened on the same name in one page) has its own
// connection; read-write transactions over the same object stores are
// serialized by IndexedDB, so a read-modify-write inside one Update is never
// interleaved with another's. When another connection deletes the database or
// upgrades its version, the browser sends this connection a versionchange
// event: the Store closes its connection so the other side can proceed, and
// every later Update and View returns kv.ErrClosed (transactions already
// running complete first). The same happens when the browser closes the
// connection itself (for example when the site's storage is cleared). Writes
// are never dropped silently: either Update returned nil after the browser
// reported the transaction complete, or it returned an error.
//
// # Storage margin
//
// Chromium's IndexedDB is a LevelDB database, which needs free disk space
// beyond the data while it compacts: up to the database's size again
// (measured with the profile on a 40 MiB disk: 12.4 MB of rows took 24.6
// MB during a compaction). A disk that fills up meanwhile fails the next
// write with an IO error ("FILE_ERROR_NO_SPACE"), and Chromium then
// discards the whole database: all its rows, committed or not, are gone
// after a reload (3 of 4 runs). Chromium's own quota (60% of the disk)
// does not leave that room, and the quota navigator.storage.estimate()
// reports to pages is usage + 1 GiB whatever the disk's size.
//
// So a Store opened with Quota refuses a commit whose puts would take the
// origin's usage past half of min(the reported quota, Quota's bytes) with
// kv.ErrQuotaExceeded, before issuing anything (nothing is written; a
// commit without puts always passes). Usage is the last estimate() plus
// the bytes this Store's commits put since; the estimate is refreshed
// before an Update begins (never inside a transaction: it awaits a
// Promise) once 1 MiB was committed since, after 5 s of writing, and at
// most every second after a refusal. estimate() costs ~2.6 ms in Chromium
// (loaded 2-core machine), about as much as a single-row commit, so it is
// not asked per write. Usage may stay high for a while after a
// compaction; writes that fit resume once it falls. Without Quota there
// is no margin and estimate() is never asked: half of a reported quota of
// usage + 1 GiB would refuse every growing write once the origin uses
// 1 GiB, whatever the disk. The browser's own quota errors remain
// (kv.ErrQuotaExceeded), as do IO errors (below).
//
// After an IO error (an UnknownError, or an abort whose message names an
// IO error) or the connection's close event (the browser closed it on its
// own: an IO error, a full disk, storage cleared), the Store fails every
// transaction waiting on the browser at once and every later one, with
// ErrStorage joined with kv.ErrClosed: nothing waits for a reply the
// browser will not send, and a transaction begun after the close learns
// the storage failed, not only that the Store is closed. A connection
// closed for a versionchange (another tab deletes or upgrades the
// database) fails later calls with kv.ErrClosed alone.
//
// # Frozen pages
//
// A frozen page (a background tab, a page in the back/forward cache) runs
// no callbacks, so a transaction it has running when it freezes never
// reaches its commit: it holds its object stores' locks, and every other
// connection's transactions over them (other tabs') wait for the whole
// freeze. Store.Suspend, called from the page's freeze or pagehide
// handler, aborts every running transaction (one already committing is
// left to complete) and holds new ones until Resume; the aborted ones fail
// with ErrSuspended once the page runs again. Nothing of them was written,
// so the caller runs them again (after Resumed).
//
// # Errors
//
// Browser errors come back as *DOMError, wrapping the kv sentinel they map
// to: QuotaExceededError is kv.ErrQuotaExceeded (nothing of the transaction
// is written; the storage margin refuses with it too), an IO error is
// ErrStorage, TransactionInactiveError (and InvalidStateError for a finished
// transaction) is kv.ErrTxInactive, a connection closed by the browser is
// kv.ErrClosed. Errors returned by the transaction function come back from
// Update and View unchanged.
//
// # Testing
//
// The tests run in headless Chromium: `make test` (or, with the browser
// tools installed, `GOOS=js GOARCH=wasm go test ./idbkv` with .bin on PATH).
// They run the kv conformance suite (kv/kvtest) with both drivers, and the
// browser-specific cases above. Benchmarks, with the same shapes measured in
// plain JavaScript beside them: `make bench-browser`.
package idbkv
