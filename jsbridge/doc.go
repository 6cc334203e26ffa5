//go:build js && wasm

// Package jsbridge is Replica's JavaScript API: the global Replica that a
// page gets from web/replica.js and replica.wasm (cmd/wasm). The contract is
// web/replica.d.ts; this documentation says how the bridge meets it. It is
// thin: it parses arguments, converts values, and calls package engine (the
// replica), idbkv (its IndexedDB store) and client (sync).
//
// # Shape: a JS facade and one Go entry point
//
// Crossing the Go<->JS boundary costs far more than the work of a small call
// (BROWSER-FACTS.md: ~0.5 µs per property get, 2–4.5 µs per JS value created
// from Go, ~10 µs per JS->Go callback), so the API objects themselves are
// JavaScript: facade.js, embedded here and compiled once with new Function
// (or taken from web/replica.js, which carries a verbatim copy, on pages
// whose Content-Security-Policy forbids 'unsafe-eval'; it carries idbkv's
// helper.js too, handed to every Store with idbkv.Helper). The facade checks
// argument types, turns each call's values into one JSON text (plus one
// Uint8Array for all its bytes), creates the Promise, and calls Go through a
// single js.Func:
//
//	go(op, handle, tx, id, a, b, c, d)
//
// Go answers later with settle(id, kind, text, blobs), one Go->JS call per
// call, whatever the number of rows. The operation and result-kind numbers
// are passed to the facade at install, so the two sides cannot disagree;
// the table operations (ops.go) lists each operation once: its name, the
// JavaScript method its errors name, where it runs and its handler.
// There is no js.Func per call or per listener: the only one is the entry
// point, released by the uninstall function of Install. Promises hold no Go
// state; listeners and subscription callbacks live in the facade.
//
// # Calls
//
// Each open replica has a worker goroutine that runs its calls one at a
// time in call order (so un-awaited calls behave like IndexedDB requests: a
// read issued after a write sees it), started when a call arrives and ended
// when the queue is empty. The dispatch callback never blocks: it copies the
// arguments into Go and queues the work. The one exception runs inside the
// callback: staged inserts (tx.insert) into tables of the declared schema
// when the worker is idle, which are pure computation (engine.Staged.Insert
// reads no store then), so a bulk transaction does not pay a goroutine hop
// per row. The facade does not send tx.inserts one by one either: it queues
// those issued in one turn of the event loop and sends them as one
// insertMany call (before any other call, so call order holds), which Go
// answers with one result holding every row and the errors of the rows that
// failed; each tx.insert promise still settles on its own. A bulk
// transaction thus crosses into Go once per turn, not once per row.
//
// The replica's IndexedDB store is opened with idbkv.Speculate: a
// single-row write (db.insert, update, upsert, delete) reads the clock
// record and its row from idbkv's cache of values earlier writes committed,
// issues those reads again together with its writes, and commits only if
// they are unchanged (another tab may have written them; then it runs
// again, reading first). A write thus awaits IndexedDB once, for the
// commit, instead of twice.
//
// # Values
//
// Input values are tagged JSON (decode.go): plain JSON for strings, finite
// numbers, booleans and null; {"n"} BigInt, {"d"} Date, {"b"} bytes (an
// offset and length into the call's blob buffer), {"j"} json objects and
// arrays (raw JSON text), {"f"} -0, NaN and ±Infinity, {"x"} values no column
// takes (a function, a Symbol, a Map), {"i"} an object or array holding NaN
// or ±Infinity (which JSON.stringify would silently write as null: refused
// with VALIDATION naming the table, column and where the number sits). They become the Go values the
// engine's coercion takes (float64, json.Number, time.Time, []byte,
// json.RawMessage), so the engine decides validity and converts per column.
//
// Results are one JSON text of rows plus fixes (encode.go): values JSON
// carries exactly are plain JSON (reals included: -0 survives JSON.parse),
// json values are embedded as their own text; timestamps, integers beyond
// ±(2^53−1) and blobs are listed as fixes the facade applies after
// JSON.parse (new Date, BigInt, a slice of the blob buffer). Row objects
// have every column, in schema order.
//
// # Errors
//
// Every rejection is a ReplicaError (a JS Error) with a stable code
// (errors.go): engine and kv sentinels are mapped with errors.Is/As
// (ValidationError -> VALIDATION with table and column; ErrUnknownTable ->
// VALIDATION with table; ErrNotFound, ErrConflict, ErrClosed/kv.ErrClosed,
// kv.ErrQuotaExceeded, ErrClockDrift, ErrSchema, ErrStorageFormat); bad call
// shapes are INVALID_ARGUMENT, checked in the facade (types) or here
// (options, operators). Messages start with the method ("db.insert: ...").
//
// # Panics
//
// Every path that runs Go for JavaScript recovers panics: the dispatch
// callback, each queued operation, the subscription refresher, event and
// sync-event handlers, the retention loop. A panic rejects the call (or reaches the
// subscription's onError) with INTERNAL, is logged with its stack to the
// console, and the module goes on; cmd/wasm's main never returns.
//
// # Transactions
//
// db.transaction(fn) is orchestrated by the facade: begin creates an
// engine.Staged (an optimistic transaction that holds no kv transaction),
// tx methods stage and preview statements (an insert resolves with the row
// it will write, generated id included; reads see staged writes), and when
// fn's promise resolves the facade asks for commit — one kv transaction,
// one HLC tick — or, when it rejects, discard. No IndexedDB transaction is
// ever open across fn's awaits. Commit and discard are queued behind the
// transaction's statements, so a forgotten await does not reorder them.
//
// # Subscriptions and events
//
// db.subscribe queries run on one refresher goroutine per replica (from
// open to close). Engine events (local commits, remote applies) and
// sibling-tab notices only mark the subscribed tables dirty and wake it;
// when the replica's worker is idle (a remote apply, a sibling tab's notice)
// it runs at once, and while the worker still runs calls (a burst of
// writes) it waits for the burst to settle (1 ms, then until the worker
// drains, at most 16 ms); it re-runs the subscriptions of
// dirty tables, compares each result with the last delivered one in Go
// (model.Value.Equal: blobs byte-wise, reals by bits) and delivers only
// changed results. A write to another table never re-runs a query.
//
// Engine events become change, remoteChange, conflict and held events
// (events.go; facade.js also fires unknownTable, held's older name, for
// one release), handed to the facade, which calls listeners from
// microtasks, each isolated (an exception is reported, not propagated).
// Each crossing costs, so the facade tells Go what it wants (the listen
// operation: a mask of the events that have listeners, and whether another
// tab is open) and Go hands over only those: an insert with no change
// listener and no other tab crosses to JavaScript only to settle its
// promise.
//
// # Several tabs
//
// Every tab runs its own module over the shared IndexedDB database
// "replica:"+name (engine reads the site id and clock inside each write
// transaction, so two tabs never mint the same HLC), and has the same
// db.siteId. The facade posts every local commit's tables on the
// BroadcastChannel "replica:"+name; other tabs mark them dirty for their
// subscriptions and fire change with fromOtherTab. A postMessage costs
// ~0.1 ms, so notices go out only while another tab is known to be open: a
// tab says hello when it opens (every tab answers here, the leader with its
// sync target and state) and bye when it closes. A tab that learns of
// another re-runs its subscriptions (the other may have committed before
// it knew), and Go announces the commits it made while it knew of no other
// tab (their tables and number), so none is missed.
// The facade requests the Web Locks lock "replica-leader:"+name and holds
// it for the replica's life; the holder is the leader (db.isLeader,
// leaderChange), and Go learns it through the leader operation.
//
// # Frozen and hidden tabs
//
// A frozen page (Chromium freezes background tabs; the back/forward cache
// freezes hidden pages) runs nothing: no timers, no message handlers, no
// IndexedDB callbacks. An IndexedDB transaction it had running then stays
// open — its requests' results wait in the frozen task queue, and the Go
// code that would go on and commit never runs — and holds the lock of
// every object store (each transaction spans them all), so every other
// tab's reads and writes wait for the whole freeze (Chromium aborts such
// a transaction after 60 s of inactivity). A frozen leader also kept the
// leader lock with a dead socket: no tab synced, and the others went on
// showing its last state ("synced"). So on the freeze and pagehide events
// every tab suspends, inside the event's dispatch (the freeze operation):
// idbkv.Store.Suspend aborts every running transaction of the tab's
// store and holds new ones until resume; an operation whose transaction
// was aborted (idbkv.ErrSuspended: nothing of it was written) runs again
// once the page runs (db.resumable; a staged transaction's commit too,
// and subscription queries), so a call made just before the freeze
// settles after it as if nothing happened. A leader drops its socket at
// once (client.DropConnection: Chromium keeps a frozen page's connection
// open otherwise, and the relay counts it) and closes its client, then
// the facade reports the loss of leadership, releases the lock (the next
// tab in the lock's queue leads within milliseconds, connects and resumes
// from the persisted cursors), withdraws a queued lock request (a lock
// granted to a frozen tab would make a frozen leader) and posts bye, with
// resign when it led: the other tabs show "connecting" (leader: false;
// the last known pending count) until the new leader's state arrives.
// Tabs ignore their own Go's sync state while they do not lead. On resume
// (or pageshow from the back/forward cache) the tab lets its transactions
// run, re-runs its subscriptions (it missed the other tabs' notices),
// says hello — the leader answers with its target and state — and queues
// for the lock again: it rejoins as a follower, with no connection of its
// own. A tab that stops answering without a freeze event (a page stuck in
// a long task) is not detected: it keeps the lock, and any transaction it
// holds, until it runs again.
//
// # Sync
//
// sync.go: only the leader runs a client.Client. db.sync.connect in any tab
// records the target (url, database, token) in every tab (shared over the
// channel, and sent to tabs that open later); the leader connects, and a
// new leader connects in turn and resumes from the persisted cursors. Other
// tabs' commits reach the leader's client through Notify; its remote
// applies reach the other tabs as change notices; its syncState events are
// forwarded to them. db.sync.connect with the target the leader already
// syncs with leaves its session alone (client.Connect is a no-op then).
//
// Sealed databases (sealkeys.go): db.sync.connect's key and oldKeys
// (a Uint8Array(32), {passphrase} or a SealKey) become SealKeys in the
// calling tab's facade first (the sealKey operation: seal.ImportWebKey or
// seal.PassphraseWebKey on a goroutine of its own, resolved through
// settleValue with {keyId, cryptoKey}); only SealKeys, whose CryptoKeys are
// non-extractable, reach Go's target and the other tabs (beside the target
// JSON, structured-cloned over the channel). A target with keys makes the
// leader run a client with a seal.WebKeyring (client.Options.Sealer); a
// client of the other mode is replaced, and other keys for the same
// target go to client.SetSealer, which reconnects (so envelopes held for
// want of a key are pulled again). The client seals and opens on its
// session goroutine, outside kv transactions: WebCrypto's Promises settle
// while it waits on a channel.
//
// The leader keeps the unsent count (SyncState.pending) with or without a
// client (offline, or before connecting): counted from the change log's
// keys (client.PendingCount, against the last target) when it may have
// shrunk or is unknown — on becoming leader, a new target, an ack, a state
// change — and incremented by one per local commit of any tab in between,
// so a commit costs nothing to count. A change is emitted as syncState
// when a listener or another tab wants it; db.sync.state's getter asks Go
// for the count synchronously (the pending operation, the one call that
// dispatch answers with a return value).
//
// The client's transient errors (client.ErrorReported: a relay error frame
// without the fatal flag, a push the relay refused, a failed local apply, a
// push that does not encode) become SyncState.lastError {code, message,
// at}, emitted at once with the state (and so forwarded to the other tabs):
// code is the relay's error code when there is one (client.RelayError),
// else TRANSACTION_TOO_LARGE, CLOCK_DRIFT, QUOTA_EXCEEDED, SYNC_STATE_RESET
// (client.ErrSyncStateReset), RELAY_DIVERGED (client.ErrRelayDiverged),
// DECRYPT_FAILED (seal.ErrDecryptFailed), CHECKPOINT_REFUSED
// (client.ErrCheckpointRefused), ENVELOPE_INVALID (seal.ErrEnvelopeInvalid;
// lasting, as the refused ChangeSet will not sync) or SYNC_ERROR.
// CLOCK_DRIFT comes both ways: the relay's code refusing a push (this
// device ahead, with the push's requestId, so a push's error) and the
// engine's model.ErrClockDrift refusing changes from the relay (this
// device behind); while either lasts the client's state, and so the
// status, is "syncing". A
// push's error is cleared by the next PushAcked; any other also by
// ChangesApplied or the state becoming synced; a transaction the client
// gave up on (client.ErrRefused) by none of these, as it will not sync;
// all by a newer error, disconnect, a new target or the loss of leadership
// (syncStop). SNAPSHOT_REQUIRED, the relay's way of asking for a
// bootstrap, is not one.
//
// Replicas opened from JavaScript set engine.Options.LocalChangeLogOnly:
// a browser replica never serves its peers' changes (the client pushes only
// its own), so rows applied from the relay or a snapshot write no
// change-log entry. They also set engine.Options.OmitLocalChanges: a local
// transaction's events carry its ids and tables, not its facts, which
// nothing here reads (pushes are read from the change log); a 10,000-row
// transaction no longer builds ~16 MB of Changes.
//
// # Your own channel: changesSince and applyChanges
//
// changes.go: db.changesSince(since, {limit}) pages engine.ChangesSince
// (only the replica's own transactions: a browser replica is opened with
// LocalChangeLogOnly) as wire ChangeSets (wire.MarshalChangeSet) with the
// next watermark; db.applyChanges takes such an array (or its JSON text),
// decodes each with wire.UnmarshalChangeSet (INVALID_ARGUMENT naming the
// index) and applies the batch with engine.ApplyChanges: one IndexedDB
// transaction, drift-gated (CLOCK_DRIFT), held changes held. Its events
// are a remote apply's (remoteChange, subscriptions, other tabs), as for
// the relay's changes; nothing of it is pushed to a relay (each device
// pushes its own). Tested by TestChangesChannel: two replicas converge
// through JSON text the test carries, and a third given every ChangeSet
// in reverse order ends identical.
//
// # Resolvers
//
// resolver.go: Replica.open's resolver becomes engine.Options.Resolver:
// "lww" none (the engine's fast path), "localWins" and "remoteWins" the
// engine's, a function a closure that encodes the conflict as rows are
// and calls facade.js's resolve(fn, ...) synchronously from the Go code
// applying the batch — inside its IndexedDB transaction, which stays
// active because nothing yields to the event loop. facade.js sends the
// function beside the options' JSON (argument b of open). A throw or an
// answer other than "local" or "remote" is reported and LWW decides.
//
// # Retention
//
// retention.go: the leader tab (and only it: every tab shares the IndexedDB
// database) runs engine.Prune — tombstones and held changes older
// than the retention horizon (engine.DefaultRetention, 30 days) dropped,
// superseded own change-log entries past it tidied, in bounded kv
// transactions — on a goroutine of its own, never in a js.FuncOf callback:
// 30 s after becoming leader, then every 6 hours while it leads. Losing
// leadership and close stop the loop (close waits for a Prune that runs). A
// failure or a panic is logged to the console (the standard log package,
// as the engine and the client log) and retried at the next interval.
//
// # Inspecting
//
// inspect.go: db.inspect (replica.d.ts Inspector) is five read-only
// operations on the worker — tables, rows, changeLog, heldChanges, sync —
// over engine.InspectRows, InspectLog, InspectHeld and States, which read
// in kv transactions of at most 4,096 records that wait on nothing else.
// rows answers kind many: the rows' values as the encoder writes any row
// (dates, BigInts and bytes revived by the facade), and beside them each
// row's key, cell HLCs and tombstone, which the facade joins. changeLog
// marks entries unsent against the sent watermark of the sync target this
// tab knows (its own, or the leader's as shared), else of the relay last
// counted, else the newest stored for any relay (the "sync:relay:" hints),
// and asks the engine which unsent ones are superseded. conflicts is the
// facade's: the tab that calls it posts "inspecting" on the replica's
// BroadcastChannel (and says so in its hello answers); a tab that learns
// it asks Go for conflict events (listenConflict) and posts each conflict
// to the other tabs, whose inspect listeners get it with fromOtherTab. The
// inspector page (relay/inspector, served by the relay with -inspect)
// opens the replica with Replica.open({name}): without options.schema,
// openDB reads the schema the store holds (storedSchema) and declares it,
// so the page is one more tab of the app (it may lead and sync, with the
// app's own schema).
//
// # Testing
//
// The tests run in headless Chromium (make test-browser, or GOOS=js
// GOARCH=wasm go test ./jsbridge with .bin on PATH) and drive the installed
// globalThis.Replica with JavaScript values; TestMain fails the run when a
// goroutine outlives the replicas. cmd/wasm's native tests build
// replica.wasm, check web/replica.js and web/replica.d.ts against the
// implementation, load the release build through replica.js in Chromium,
// load the npm package's ES module (make package) the same way, and run two
// real tabs against a relay.
package jsbridge
