//go:build js && wasm

package idbkv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall/js"

	"github.com/hack-pad/go-indexeddb/idb"

	"github.com/replica-sync/replica/kv"
)

var (
	_ kv.Store       = (*Store)(nil)
	_ kv.BatchGetter = (*Tx)(nil)
)

// Store is a kv.Store over one IndexedDB database: one object store per
// bucket, one IndexedDB transaction per kv transaction. It is safe for
// concurrent use by multiple goroutines; see the package documentation for
// the transaction model.
type Store struct {
	name    string
	buckets map[string]int // bucket name -> index into names
	names   []string
	jsNames js.Value      // JS array of names, handed to IDBDatabase.transaction
	modeRW  js.Value      // "readwrite", created once
	modeRO  js.Value      // "readonly"
	db      js.Value      // the IDBDatabase connection
	drv     *helperDriver // issues the IndexedDB requests, through helper.js
	onGone  js.Func       // versionchange and close listener
	cache   *readCache    // speculative reads (Speculate), nil without
	budget  *budget       // storage margin (storage.go)

	mu     sync.Mutex
	closed bool   // Close was called
	gone   string // why the browser closed the connection; "" while it is open
	// goneErr is what later calls fail with once gone is set: kv.ErrClosed,
	// joined with ErrStorage when the browser closed the connection on its
	// own (an IO error, a full disk, storage cleared) rather than for a
	// versionchange.
	goneErr error
	txs     map[int]*Tx
	nextID  int
	active  sync.WaitGroup // running transactions, awaited by Close
	// resumed is non-nil while the Store is suspended (Suspend), and
	// closed by Resume: new transactions wait for it.
	resumed chan struct{}
}

// Open opens (creating or upgrading it if needed) the IndexedDB database
// called name with one object store per bucket and returns a Store over it.
//
// Buckets must be non-empty, distinct names; at least one is required. If
// the database exists but lacks some of them, Open upgrades it to the next
// version and creates them there; existing object stores and their data are
// kept, and object stores not named in buckets are left alone (and are not
// part of this Store's transactions). An upgrade makes the browser close
// every other connection to the database (other Stores and other tabs, which
// then return kv.ErrClosed); if one of them does not close, Open waits until
// it does or ctx is done.
//
// ctx bounds opening only: the returned Store does not watch it. Errors from
// the browser are wrapped with the database name; a page without IndexedDB
// (or a private mode that disables it) fails here.
func Open(ctx context.Context, name string, buckets []string, opts ...Option) (*Store, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	return open(ctx, name, buckets, o)
}

// Option configures Open.
type Option func(*openOptions)

// Speculate makes the Store answer the first GetBatch of an Update from a
// cache of values its earlier Updates read and committed, and check them
// inside the IndexedDB transaction at commit (see "Speculative reads" in
// the package documentation). With it, Update may call its function twice:
// the function must be safe to run again, its only effects being its
// writes to the transaction and variables it sets anew on every run.
func Speculate() Option { return func(o *openOptions) { o.speculate = true } }

// Durability sets the durability hint of the Store's read-write IndexedDB
// transactions (IDBTransactionOptions.durability): "strict" (the browser
// reports a transaction complete only once it is flushed to the disk, so
// it survives a power loss or an OS crash), "relaxed" (complete once the
// OS has it: it survives the browser crashing, not the machine), or
// "default" (the browser's choice; Chromium's acts as relaxed). Without
// the option, "default". Any other value makes Open fail.
func Durability(mode string) Option { return func(o *openOptions) { o.durability = mode } }

// openOptions exist for tests.
type openOptions struct {
	// helper: see Helper.
	helper js.Value
	// noGetAllRecords makes the helper take the paths for browsers
	// without IDBObjectStore.getAllRecords (tests).
	noGetAllRecords bool
	// speculate: see Speculate.
	speculate bool
	// quota: see Quota.
	quota int64
	// durability: see Durability ("" is "default").
	durability string
}

func open(ctx context.Context, name string, buckets []string, o openOptions) (*Store, error) {
	if len(buckets) == 0 {
		return nil, fmt.Errorf("idbkv: open %q: no buckets", name)
	}
	switch o.durability {
	case "", "default", "strict", "relaxed":
	default:
		return nil, fmt.Errorf("idbkv: open %q: durability %q (want \"strict\", \"relaxed\" or \"default\")", name, o.durability)
	}
	s := &Store{
		name:    name,
		buckets: make(map[string]int, len(buckets)),
		names:   slices.Clone(buckets),
		txs:     make(map[int]*Tx),
		budget:  &budget{cap: max(o.quota, 0)},
	}
	for i, b := range buckets {
		if b == "" {
			return nil, fmt.Errorf("idbkv: open %q: empty bucket name", name)
		}
		if _, dup := s.buckets[b]; dup {
			return nil, fmt.Errorf("idbkv: open %q: bucket %q named twice", name, b)
		}
		s.buckets[b] = i
	}
	db, err := openDB(ctx, name, buckets)
	if err != nil {
		return nil, err
	}
	s.db = db
	s.jsNames = js.Global().Get("Array").New(len(buckets))
	for i, b := range buckets {
		s.jsNames.SetIndex(i, b)
	}
	s.modeRW = js.ValueOf("readwrite")
	s.modeRO = js.ValueOf("readonly")
	h, err := newHelperDriver(s, o)
	if err != nil {
		db.Call("close")
		return nil, fmt.Errorf("idbkv: open %q (a Content-Security-Policy without 'unsafe-eval' needs the Helper option: see HelperSource): %w", name, err)
	}
	s.drv = h
	if o.speculate {
		s.cache = newReadCache() // the helper checks the assumed values
	}
	s.onGone = js.FuncOf(s.handleGone)
	db.Call("addEventListener", "versionchange", s.onGone)
	db.Call("addEventListener", "close", s.onGone)
	return s, nil
}

// openError wraps err, the failure of IDBFactory.open, with the sentinel
// its DOMException name maps to: QuotaExceededError (Chromium's "Encountered
// full disk while opening backing store") is kv.ErrQuotaExceeded, an IO
// error is ErrStorage; others are wrapped as they are.
func openError(name string, err error) error {
	switch msg := err.Error(); {
	case isDOMName(err, "QuotaExceededError") || strings.Contains(msg, "QuotaExceededError"):
		return fmt.Errorf("idbkv: open %q: %w: %w", name, kv.ErrQuotaExceeded, err)
	case isDOMName(err, "UnknownError") || isIOError("", msg):
		return fmt.Errorf("idbkv: open %q: %w: %w", name, ErrStorage, err)
	}
	return fmt.Errorf("idbkv: open %q: %w", name, err)
}

// openDB opens the database, upgrading it until it holds every bucket, and
// returns the IDBDatabase.
func openDB(ctx context.Context, name string, buckets []string) (db js.Value, err error) {
	factory, err := idbFactory()
	if err != nil {
		return js.Value{}, fmt.Errorf("idbkv: open %q: %w", name, err)
	}
	var upgradeErr error
	upgrade := func(db *idb.Database, _, _ uint) error {
		// go-indexeddb panics (in a JS callback, fatally) if this returns an
		// error, so failures are reported after the open instead.
		have, err := db.ObjectStoreNames()
		if err != nil {
			upgradeErr = err
			return nil
		}
		for _, b := range buckets {
			if !slices.Contains(have, b) {
				if _, err := db.CreateObjectStore(b, idb.ObjectStoreOptions{}); err != nil {
					upgradeErr = fmt.Errorf("create object store %q: %w", b, err)
					return nil
				}
			}
		}
		return nil
	}
	var version uint // 0: open whatever version exists (or create version 1)
	for attempt := 0; ; attempt++ {
		// go-indexeddb keeps listeners until the context it was given is
		// done: give it one that ends with this attempt.
		actx, cancel := context.WithCancel(ctx)
		req, err := factory.Open(actx, name, version, upgrade)
		if err != nil {
			cancel()
			return js.Value{}, fmt.Errorf("idbkv: open %q: %w", name, err)
		}
		conn, err := req.Await(actx)
		cancel()
		if err != nil && ctx.Err() != nil {
			closeLate(req)
			return js.Value{}, fmt.Errorf("idbkv: open %q: %w", name, ctx.Err())
		}
		if err != nil {
			if attempt < 5 && isDOMName(err, "VersionError") {
				version = 0 // another tab upgraded past us meanwhile: look again
				continue
			}
			return js.Value{}, openError(name, err)
		}
		if upgradeErr != nil {
			_ = conn.Close()
			return js.Value{}, fmt.Errorf("idbkv: open %q: upgrade: %w", name, upgradeErr)
		}
		have, err := conn.ObjectStoreNames()
		if err != nil {
			_ = conn.Close()
			return js.Value{}, fmt.Errorf("idbkv: open %q: %w", name, err)
		}
		missing := false
		for _, b := range buckets {
			missing = missing || !slices.Contains(have, b)
		}
		if !missing {
			raw, err := req.Request.Result()
			if err != nil {
				_ = conn.Close()
				return js.Value{}, fmt.Errorf("idbkv: open %q: %w", name, err)
			}
			return raw, nil
		}
		v, err := conn.Version()
		_ = conn.Close()
		if err != nil || attempt >= 5 {
			return js.Value{}, fmt.Errorf("idbkv: open %q: cannot add object stores (version %d, err %v)", name, v, err)
		}
		version = v + 1
	}
}

// closeLate closes the connection that an abandoned open request (its
// context ended first) may still deliver, so that it does not block other
// connections' upgrades and deletions for the life of the page.
func closeLate(req *idb.OpenDBRequest) {
	_ = req.ListenSuccess(context.Background(), func() {
		if conn, err := req.Request.Result(); err == nil {
			catch(func() { conn.Call("close") })
		}
	})
}

// idbFactory returns window.indexedDB; go-indexeddb panics when it is absent.
func idbFactory() (f *idb.Factory, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("IndexedDB unavailable: %v", r)
		}
	}()
	return idb.Global(), nil
}

// isDOMName reports whether err is a DOMException with the given name.
// go-indexeddb's DOMException matches errors.Is by name, but only when it is
// not wrapped by something that loses it, so the message is checked too.
func isDOMName(err error, name string) bool {
	return errors.Is(err, idb.NewDOMException(name)) || strings.HasPrefix(err.Error(), name)
}

// handleGone is the listener for the connection's versionchange event
// (another connection wants to delete or upgrade the database) and close
// event (the browser closed the connection, e.g. its storage was cleared).
// It closes the connection so the other side can proceed; every later
// Update and View returns kv.ErrClosed. Transactions already running finish
// normally after a versionchange, and fail with kv.ErrClosed after a close.
func (s *Store) handleGone(_ js.Value, args []js.Value) any {
	defer func() { _ = recover() }() // a panic here would kill the Go runtime
	if len(args) == 0 || args[0].Get("type").String() != "versionchange" {
		// A close event: the browser lost the backing store (an IO
		// error, a full disk, storage cleared). Transactions waiting on
		// it fail now.
		s.fail(closedByBrowser, ErrStorage)
		return nil
	}
	s.markGone("another connection is deleting or upgrading the database (versionchange)", nil)
	catch(func() { s.db.Call("close") })
	return nil
}

// closedByBrowser is the reason a Store is gone after the browser closed its
// connection on its own (its close event, or a closing connection found
// before that event arrived).
const closedByBrowser = "the browser closed the connection (its storage failed or was cleared)"

// markGone records, unless the Store is gone already, that it is gone for
// reason; later calls fail with kv.ErrClosed joined with cause (nil for a
// versionchange, ErrStorage when the browser closed the connection).
func (s *Store) markGone(reason string, cause error) {
	s.mu.Lock()
	if s.gone == "" {
		s.gone = reason
		s.goneErr = kv.ErrClosed
		if cause != nil {
			s.goneErr = errors.Join(cause, kv.ErrClosed)
		}
	}
	s.mu.Unlock()
}

// goneError returns what an operation fails with once the Store is gone (see
// goneErr), or nil while the connection is open.
func (s *Store) goneError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goneErr
}

// closedUnderneath reports whether the error e that aborted a transaction we
// were waiting on came from the browser closing the connection. A forced
// close aborts transactions (AbortError) before its close event arrives, so
// the connection is probed: creating a transaction on a closed connection
// throws InvalidStateError. The Store is then marked gone.
func (s *Store) closedUnderneath(e js.Value) bool {
	if e.Type() != js.TypeObject || e.Get("name").String() != "AbortError" {
		return false
	}
	thrown, ok := catch(func() { s.db.Call("transaction", s.jsNames, s.modeRO) })
	if ok || thrown.Type() != js.TypeObject || thrown.Get("name").String() != "InvalidStateError" {
		return false
	}
	s.markGone(closedByBrowser, ErrStorage)
	return true
}

// Update runs fn in a read-write IndexedDB transaction over every bucket and
// commits its writes if fn returns nil. Before it begins it may refresh the
// Store's storage estimate (see "Storage margin" in the package
// documentation); a commit that would take storage use past the margin is
// not issued and returns kv.ErrQuotaExceeded. Writes are buffered in Go and issued
// all at once at commit; Update returns after the browser reports the
// transaction complete (durability as the browser's default, which is
// "relaxed" in Chromium).
//
// Errors: fn's own error, unchanged (nothing is written); kv.ErrTxInactive if
// fn waited on something other than the transaction's own requests (nothing
// is written); kv.ErrQuotaExceeded (nothing is written); ErrStorage when
// the browser's storage failed (the Store is closed then); kv.ErrClosed
// after Close or once the browser closed the connection. If fn panics,
// nothing is written and the panic propagates.
func (s *Store) Update(fn func(kv.Tx) error) error {
	if s.budget.stale() {
		s.budget.refresh() // outside any transaction: it awaits a Promise
	}
	if s.cache == nil {
		return s.update(fn, false, false, nil)
	}
	// Hold a place among the running transactions across both attempts,
	// so that Close waits for the retry too.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("idbkv: %q: %w", s.name, kv.ErrClosed)
	}
	s.active.Add(1)
	s.mu.Unlock()
	defer s.active.Done()
	var assumed []assumed
	err := s.update(fn, true, false, &assumed)
	if errors.Is(err, errStale) {
		statStale.Add(1)
		// A value assumed from the cache had changed (another tab or
		// Store wrote it): nothing was written; forget what this attempt
		// assumed and run fn again for real. The retry belongs to the
		// same running Update: a Close called meanwhile waits for it.
		s.cache.forget(assumed)
		err = s.update(fn, false, true, nil)
	}
	return err
}

// update is one attempt of Update; spec lets its first GetBatch be answered
// from the cache. retry: the second attempt of an Update whose first one
// was stale (begins even if Close was called since, which waits for it).
// If spec, what the attempt assumed is stored in *assumedOut.
func (s *Store) update(fn func(kv.Tx) error, spec, retry bool, assumedOut *[]assumed) error {
	t, err := s.begin(true, retry)
	if err != nil {
		return err
	}
	if assumedOut != nil {
		defer func() { *assumedOut = t.expects }()
	}
	t.spec = spec
	committing := false
	defer func() {
		t.ended = true
		if !committing {
			s.drv.abort(t)
		}
		s.end(t)
	}()
	if err := fn(t); err != nil {
		if len(t.expects) == 0 {
			return err
		}
		// The error may come from a value the cache assumed: run fn
		// again in the same IndexedDB transaction (nothing was issued
		// yet), reading for real.
		t.reset()
		statErrRerun.Add(1)
		if err := fn(t); err != nil {
			return err
		}
	}
	t.ended = true
	if t.failed != nil {
		return t.failed
	}
	grow := t.putBytes()
	if err := s.budget.admit(grow); err != nil {
		return err // the deferred abort writes nothing
	}
	committing = true
	if err := s.drv.commit(t); err != nil {
		return err
	}
	s.budget.committed(grow)
	if s.cache != nil {
		s.cache.committed(t)
	}
	return nil
}

// View runs fn in a read-only IndexedDB transaction over every bucket. It
// returns fn's error; kv.ErrClosed after Close or once the browser closed
// the connection. Reads after fn waited on something other than the
// transaction's own requests fail with kv.ErrTxInactive.
func (s *Store) View(fn func(kv.Tx) error) error {
	t, err := s.begin(false, false)
	if err != nil {
		return err
	}
	defer func() {
		t.ended = true
		s.drv.finish(t)
		s.end(t)
	}()
	return fn(t)
}

// begin registers a transaction and creates its IndexedDB transaction.
func (s *Store) begin(writable, retry bool) (*Tx, error) {
	s.mu.Lock()
	s.waitResumedLocked()
	if s.closed && !retry {
		s.mu.Unlock()
		return nil, fmt.Errorf("idbkv: %q: %w", s.name, kv.ErrClosed)
	}
	if s.gone != "" {
		gone, goneErr := s.gone, s.goneErr
		s.mu.Unlock()
		return nil, fmt.Errorf("idbkv: %q: %s: %w", s.name, gone, goneErr)
	}
	s.nextID++
	t := &Tx{s: s, id: s.nextID, writable: writable, reply: make(chan reply, 1), ov: make([]*overlay, len(s.names)), scanning: make([]int, len(s.names))}
	s.txs[t.id] = t
	s.active.Add(1)
	s.mu.Unlock()
	mode := s.modeRO
	if writable {
		mode = s.modeRW
	}
	if err := s.drv.begin(t, mode); err != nil {
		s.end(t)
		var de *DOMError
		if errors.As(err, &de) && de.Name == "InvalidStateError" {
			// The connection is closing: closed by the browser, whose close
			// event has not reached us yet (a versionchange marks the
			// Store gone before it closes the connection).
			s.markGone(closedByBrowser, ErrStorage)
			de.Err = s.goneError()
		}
		return nil, err
	}
	return t, nil
}

// end unregisters t.
func (s *Store) end(t *Tx) {
	s.mu.Lock()
	delete(s.txs, t.id)
	s.mu.Unlock()
	s.active.Done()
}

// tx returns the running transaction with the given id, or nil.
func (s *Store) tx(id int) *Tx {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txs[id]
}

// Close waits for running transactions to finish, then closes the IndexedDB
// connection and releases the Store's JS callbacks. Later Update and View
// calls return kv.ErrClosed. Close is idempotent and returns nil; it must not
// be called from inside a transaction of the same Store (it would wait for
// itself).
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.resumed != nil { // transactions waiting to begin fail with ErrClosed
		close(s.resumed)
		s.resumed = nil
	}
	s.mu.Unlock()
	s.active.Wait()
	catch(func() {
		s.db.Call("removeEventListener", "versionchange", s.onGone)
		s.db.Call("removeEventListener", "close", s.onGone)
		s.db.Call("close")
	})
	s.onGone.Release()
	s.drv.close()
	return nil
}
