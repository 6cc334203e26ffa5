//go:build js && wasm

package jsbridge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/idbkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// current is the installed bridge (tests reach the open replicas through it).
var current atomic.Pointer[bridge]

// IDBPrefix is prepended to a replica's name to name its IndexedDB
// database: Replica.open({name: "trips"}) uses the database "replica:trips".
const IDBPrefix = "replica:"

// db is one open replica: Replica.open's result on the Go side.
type db struct {
	b        *bridge
	h        int
	name     string
	store    *idbkv.Store
	eng      *engine.Engine
	declared map[string]bool // tables of the schema given to open
	unsub    func()          // engine event subscription
	batch    int             // Replica.open's batchSize: client.Options.PushLimit (0: its default)

	// The worker runs the calls of this replica one at a time, in call
	// order, so that un-awaited calls behave as IndexedDB requests do (a
	// read issued after a write sees it). It runs only while there is work.
	qmu     sync.Mutex
	queue   []func()
	running bool
	idle    chan struct{} // capacity 1: the worker drained its queue
	closing bool          // close was called: later calls fail with CLOSED

	// Touched only by the worker.
	txs map[int]*engine.Staged
	// dropped is the journal and ack of this replica's last drop of
	// acknowledged journal records (journal.go).
	dropped journalTok
	nextTx  atomic.Int64

	colMu sync.Mutex
	cols  map[string][]string // table -> column order, from the effective schema

	subs *subscriptions

	leader atomic.Bool // this tab holds the leader lock
	sy     syncer
	pr     pruner // retention, in the leader (retention.go)

	// listening is the facade's mask of what it wants emitted (listen*
	// bits): events with listeners, and whether other tabs are open (they
	// get this tab's commits and, from the leader, its sync state).
	listening atomic.Uint32
	// Local commits made while no other tab was known (their tables and
	// number), announced to the first tab that makes itself known.
	unMu        sync.Mutex
	unannounced map[string]bool
	unCommits   int
}

// noteUnannounced records a local commit no other tab was told of.
func (d *db) noteUnannounced(tables []string) {
	d.unMu.Lock()
	defer d.unMu.Unlock()
	if d.unannounced == nil {
		d.unannounced = map[string]bool{}
	}
	for _, t := range tables {
		d.unannounced[t] = true
	}
	d.unCommits++
}

// announce hands the facade the commits no other tab was told of, which
// it posts to the tabs it now knows ({tables, commits}).
func (d *db) announce() {
	d.unMu.Lock()
	tables, n := d.unannounced, d.unCommits
	d.unannounced, d.unCommits = nil, 0
	d.unMu.Unlock()
	if n == 0 {
		return
	}
	var o jsonObject
	o.key("tables")
	o.b = append(o.b, '[')
	first := true
	for t := range tables {
		if !first {
			o.b = append(o.b, ',')
		}
		first = false
		o.b = appendString(o.b, t)
	}
	o.b = append(o.b, ']')
	o.int("commits", int64(n))
	d.emit("announce", o.result())
}

// Bits of the listen operation's mask (facade.js: LISTEN).
const (
	listenChange       = 1 << iota // change listeners
	listenRemoteChange             // remoteChange listeners
	listenConflict
	listenHeld // held listeners, or unknownTable (its older name) ones
	listenSyncState
	listenPeers        // another tab of this replica is open
	listenHeldReplayed // heldReplayed listeners
)

var listenNames = map[string]int{
	"change": listenChange, "remoteChange": listenRemoteChange, "conflict": listenConflict,
	"held": listenHeld, "unknownTable": listenHeld, "syncState": listenSyncState, "peers": listenPeers,
	"heldReplayed": listenHeldReplayed,
}

// wants reports whether the facade wants any of the listen bits.
func (d *db) wants(bits uint32) bool { return d.listening.Load()&bits != 0 }

// The bounds of Replica.open's retentionHorizonMs.
const (
	minRetentionMs = float64(time.Minute / time.Millisecond)
	maxRetentionMs = float64(10 * 365 * 24 * time.Hour / time.Millisecond)
)

// openOptions is Replica.open's options, which facade.js sends as JSON
// (JSON.stringify(options)).
type openOptions struct {
	Name              *string
	Schema            []byte // raw JSON, for wire.ParseSchema
	AllowResurrection *bool
	HeldChanges       *string // engine.ParseHeldPolicy
	// UnknownTableDisposition is heldChanges's older name, accepted for
	// one release (replica.d.ts marks it deprecated).
	UnknownTableDisposition *string
	StorageQuota            *float64 // bytes, idbkv.Quota
	RetentionHorizonMs      *float64 // engine.Options.Retention, in ms
	BatchSize               *float64 // client.Options.PushLimit, in changes
	Durability              *string  // idbkv.Durability
	Resolver                *string  // "lww", "localWins", "remoteWins", or "function" (resolver.go)
}

func parseOpenOptions(text string) (openOptions, error) {
	var o openOptions
	r := newReader([]byte(text), nil)
	err := r.object(func(key string) (err error) {
		switch key {
		case "name":
			return r.optString(&o.Name, "options.name")
		case "schema":
			o.Schema, err = r.skip()
			return err
		case "allowResurrection":
			return r.optBool(&o.AllowResurrection, "options.allowResurrection")
		case "heldChanges":
			return r.optString(&o.HeldChanges, "options.heldChanges")
		case "unknownTableDisposition":
			return r.optString(&o.UnknownTableDisposition, "options.unknownTableDisposition")
		case "storageQuota":
			return r.optNumber(&o.StorageQuota, "options.storageQuota")
		case "retentionHorizonMs":
			return r.optNumber(&o.RetentionHorizonMs, "options.retentionHorizonMs")
		case "batchSize":
			return r.optNumber(&o.BatchSize, "options.batchSize")
		case "durability":
			return r.optString(&o.Durability, "options.durability")
		case "resolver":
			return r.optString(&o.Resolver, "options.resolver")
		case "worker":
			// Read by the loader (web/replica.js: where the replica
			// runs); checked here, and otherwise ignored.
			var w *bool
			return r.optBool(&w, "options.worker")
		}
		return argError("unknown option %q (known: name, schema, allowResurrection, heldChanges, storageQuota, retentionHorizonMs, batchSize, durability, resolver, worker)", key)
	})
	if err == nil {
		err = r.End()
	}
	if errors.Is(err, errSyntax) {
		return o, argError("options must be an object")
	}
	return o, err
}

// open handles Replica.open: a = the options as JSON.
func (b *bridge) open(c *call) {
	text, resolver := c.str(0), c.value(1)
	go func() {
		r := func() (r result) {
			defer func() {
				if p := recover(); p != nil {
					r = fail(panicError("Replica.open", p), "", "")
				}
			}()
			if testHook != nil {
				testHook("Replica.open")
			}
			d, err := b.openDB(text, resolver)
			if err != nil {
				return fail(err, "Replica.open", "")
			}
			// [handle, siteId]
			return result{kind: kindJSON, text: "[" + strconv.Itoa(d.h) + "," + string(appendString(nil, d.eng.SiteID().String())) + "]"}
		}()
		b.reply(c.id, r)
	}()
}

// openDB opens the replica of Replica.open's options (JSON text) and, when
// options.resolver was a function, resolverFn (facade.js sends it apart:
// JSON has no functions).
func (b *bridge) openDB(text string, resolverFn js.Value) (*db, error) {
	o, err := parseOpenOptions(text)
	if err != nil {
		return nil, err
	}
	if o.Name == nil || *o.Name == "" {
		return nil, argError("options.name must be a non-empty string")
	}
	// Without options.schema the replica opens with the schema it holds
	// (storedSchema, after the store is open): for tools such as the
	// inspector, which open an app's replica by name.
	stored := len(o.Schema) == 0
	if string(o.Schema) == "null" {
		return nil, argError("options.schema must be a schema {tables: {...}}, or left out to open the schema the replica holds")
	}
	var schema model.Schema
	if !stored {
		schema, err = wire.ParseSchema(o.Schema)
	}
	if err != nil {
		// Named in the API's terms: the path in options.schema, without
		// the decoder's package and byte offset (JSON text the caller
		// never wrote: facade.js serialized its object).
		if path, msg, ok := wire.ErrorAt(err); ok && errors.Is(err, model.ErrSchema) {
			at := "options.schema"
			if path != "" {
				at += "." + path
			}
			return nil, &bridgeError{code: codeSchema, msg: "invalid schema: " + at + ": " + msg}
		}
		return nil, fmt.Errorf("options.schema: %w", err)
	}
	// A browser replica never serves its peers' changes (only the relay
	// does; the client pushes only its own, OnlyLocal): no change-log
	// entry per row applied from the relay or from a snapshot. Local
	// transactions' events carry no facts: nothing here reads them.
	opts := engine.Options{Schema: &schema, LocalChangeLogOnly: true, OmitLocalChanges: true}
	if o.AllowResurrection != nil {
		// The option declares the resurrection policy of every table
		// whose schema entry does not (model.ResurrectionPolicy): the
		// database's, replicated as a migration; a contradiction with
		// the database's policy is a SCHEMA error naming both.
		opts.AllowResurrection = *o.AllowResurrection
		if !*o.AllowResurrection {
			for i := range schema.Tables {
				if schema.Tables[i].Resurrection == model.ResurrectionUndeclared {
					schema.Tables[i].Resurrection = model.DeleteWins
				}
			}
		}
	}
	policy, name := o.HeldChanges, "options.heldChanges"
	if o.UnknownTableDisposition != nil {
		if policy != nil {
			return nil, argError("options.heldChanges and options.unknownTableDisposition (its older name) are both set: give heldChanges only")
		}
		policy, name = o.UnknownTableDisposition, "options.unknownTableDisposition"
	}
	if policy != nil {
		// Either name takes the policy's names and the older ones
		// ("quarantine", "ignore", "store-and-forward").
		p, err := engine.ParseHeldPolicy(*policy)
		if err != nil {
			return nil, argError("%s: %v", name, err)
		}
		opts.HeldChanges = p
	}
	if ms := o.RetentionHorizonMs; ms != nil {
		if *ms != math.Trunc(*ms) || *ms < minRetentionMs || *ms > maxRetentionMs {
			return nil, argError("options.retentionHorizonMs must be a whole number of milliseconds from %d (one minute) to %d (ten years), got %v", int64(minRetentionMs), int64(maxRetentionMs), *ms)
		}
		opts.Retention = time.Duration(*ms) * time.Millisecond
	}
	batch := 0 // client.Options.PushLimit's default
	if n := o.BatchSize; n != nil {
		if *n != math.Trunc(*n) || *n < 1 || *n > maxChangesLimit {
			return nil, argError("options.batchSize must be a whole number of changes from 1 to %d, got %v", maxChangesLimit, *n)
		}
		batch = int(*n)
	}
	if o.Resolver != nil {
		if opts.Resolver, err = b.resolver(*o.Resolver, resolverFn); err != nil {
			return nil, err
		}
	}
	if engineOptionsHook != nil {
		engineOptionsHook(&opts)
	}
	idbOpts := []idbkv.Option{idbkv.Speculate(), idbkv.Helper(b.idbHelper)}
	if q := o.StorageQuota; q != nil {
		if !(*q > 0) || *q > 1<<53 {
			return nil, argError("options.storageQuota must be a positive number of bytes, got %v", *q)
		}
		idbOpts = append(idbOpts, idbkv.Quota(int64(*q)))
	}
	if dur := o.Durability; dur != nil {
		switch *dur {
		case "strict", "relaxed", "default":
			idbOpts = append(idbOpts, idbkv.Durability(*dur))
		default:
			return nil, argError(`options.durability must be "strict", "relaxed" or "default", got %q`, *dur)
		}
	}
	store, err := idbkv.Open(context.Background(), IDBPrefix+*o.Name, engine.Buckets, idbOpts...)
	if err != nil {
		return nil, err
	}
	if stored {
		if schema, err = storedSchema(store, *o.Name); err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	eng, err := engine.Open(store, opts)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	d := &db{b: b, name: *o.Name, store: store, eng: eng, batch: batch, declared: map[string]bool{}, txs: map[int]*engine.Staged{}, idle: make(chan struct{}, 1)}
	for _, t := range schema.Tables {
		d.declared[t.Name] = true
	}
	d.subs = newSubscriptions(d)
	b.mu.Lock()
	b.nextDB++
	d.h = b.nextDB
	b.dbs[d.h] = d
	b.mu.Unlock()
	d.columns("", true) // cache every table's column order
	d.unsub = eng.Subscribe(d.onEvent)
	return d, nil
}

// enqueue adds fn to the worker's queue, starting the worker if idle.
func (d *db) enqueue(fn func()) {
	d.qmu.Lock()
	d.queue = append(d.queue, fn)
	start := !d.running
	d.running = true
	d.qmu.Unlock()
	if start {
		go d.work()
	}
}

func (d *db) work() {
	for {
		d.qmu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.qmu.Unlock()
			select {
			case d.idle <- struct{}{}:
			default:
			}
			return
		}
		fn := d.queue[0]
		d.queue[0] = nil
		d.queue = d.queue[1:]
		d.qmu.Unlock()
		fn()
	}
}

// busy reports whether the worker has calls to run.
func (d *db) busy() bool {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	return d.running
}

// run queues op on the worker and settles call c with its result.
func (d *db) run(c *call, method, table string, op func() (result, error)) {
	d.enqueue(func() { d.b.reply(c.id, guard(method, table, d.resumable(op))) })
}

// resumable runs op again, once the page runs again, while it fails with
// idbkv.ErrSuspended: the page was frozen while op's IndexedDB
// transaction ran, and freeze aborted it (nothing of it was written; see
// suspend). Every operation run through run is one engine call (or a
// staged transaction's commit), which writes nothing when its transaction
// aborts, so running it again is safe.
func (d *db) resumable(op func() (result, error)) func() (result, error) {
	return func() (result, error) {
		for {
			r, err := op()
			if !errors.Is(err, idbkv.ErrSuspended) {
				return r, err
			}
			<-d.store.Resumed()
		}
	}
}

// runNow runs op at once, inside the dispatch callback, when the worker is
// idle (so call order is kept), and reports whether it did. Only for
// operations that never wait on JavaScript: a staged insert into a table of
// the declared schema (engine.Staged.Insert reads no store then).
func (d *db) runNow(c *call, method, table string, op func() (result, error)) bool {
	d.qmu.Lock()
	idle := !d.running && len(d.queue) == 0
	d.qmu.Unlock()
	if !idle {
		return false
	}
	d.b.reply(c.id, guard(method, table, op))
	return true
}

// guard runs op: a panic in it becomes an INTERNAL rejection (and the
// replica goes on), an error its JS form.
func guard(method, table string, op func() (result, error)) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = fail(panicError(method, p), method, table)
		}
	}()
	if testHook != nil {
		testHook(method)
	}
	res, err := op()
	if err != nil {
		return fail(err, method, table)
	}
	return res
}

// handle runs one call of this replica (queue worker or inDispatch),
// unless the replica is closing; the result is dispatch's.
func (d *db) handle(c *call) any {
	d.qmu.Lock()
	closing := d.closing
	if c.op.closes {
		d.closing = true
	}
	d.qmu.Unlock()
	if closing {
		d.b.reply(c.id, fail(closedError(), "", ""))
		return nil
	}
	if c.op.queue != worker {
		return c.op.now(d, c)
	}
	if c.tok == nil && c.op.inline != nil && c.op.inline(d, c) {
		return nil
	}
	work := func() (result, error) { return c.op.work(d, c) }
	if c.tok != nil {
		work = d.journaled(c, c.tok, work)
	}
	d.run(c, c.methodName(), c.tableName(), work)
	return nil
}

// suspend serves the facade's freeze and pagehide handlers, inside the
// event's dispatch (so before the page stops running): the store aborts
// every IndexedDB transaction this tab has running and holds new ones
// until resume, so a frozen tab holds no lock another tab's transaction
// would wait for; a leader also closes its socket at once (before the
// page freezes: Chromium keeps a frozen page's connection open, and the
// relay would count it for the whole freeze) and then its sync client (no
// session to resume, no reconnect when it wakes). The facade then reports the loss of
// leadership (leaderChanged, on the worker) and releases the lock.
// Nothing here blocks.
func (d *db) suspend() {
	d.store.Suspend()
	if d.leader.Swap(false) {
		d.sy.mu.Lock()
		cl := d.sy.cl
		d.sy.mu.Unlock()
		if cl != nil {
			// Its session may wait on a transaction just aborted:
			// close the socket without waiting for it.
			cl.DropConnection()
		}
		go func() {
			defer func() {
				if p := recover(); p != nil {
					_ = panicError("closing the sync client on freeze", p)
				}
			}()
			d.syncStop()
		}()
	}
}

// close ends the replica: staged transactions are discarded, subscriptions
// and the engine stopped, the IndexedDB connection closed (after running
// transactions finish). Runs on the worker, after every call made before
// db.close().
func (d *db) close() {
	d.stopPruning(true)
	d.syncStop()
	d.stopPendingCount()
	for id, st := range d.txs {
		st.Discard()
		delete(d.txs, id)
	}
	d.unsub()
	d.subs.stop()
	_ = d.eng.Close()
	_ = d.store.Close()
	d.b.mu.Lock()
	delete(d.b.dbs, d.h)
	d.b.mu.Unlock()
}

// columns returns the column order of table for output rows; refresh
// reloads the effective schema (a peer or another tab added columns).
func (d *db) columns(table string, refresh bool) []string {
	d.colMu.Lock()
	cols, ok := d.cols[table]
	d.colMu.Unlock()
	if ok && !refresh {
		return cols
	}
	s, err := d.eng.Schema()
	if err != nil {
		return cols
	}
	m := make(map[string][]string, len(s.Tables))
	for _, t := range s.Tables {
		names := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			names[i] = c.Name
		}
		m[t.Name] = names
	}
	d.colMu.Lock()
	d.cols = m
	d.colMu.Unlock()
	return m[table]
}

// cachedColumns returns the column order of table if it is cached (it is
// for every table after open), without reading the store.
func (d *db) cachedColumns(table string) ([]string, bool) {
	d.colMu.Lock()
	defer d.colMu.Unlock()
	cols, ok := d.cols[table]
	return cols, ok
}

// rowsResult encodes rows of table for the facade.
// newColumn reports whether row has a column cols lacks (a migration
// added it), system columns ("$createdAt", engine.SysCreatedAt) aside.
func newColumn(row model.Row, cols []string) bool {
	known := 0
	for _, c := range cols {
		if _, ok := row[c]; ok {
			known++
		}
	}
	for k := range row {
		if len(k) > 0 && k[0] == '$' {
			known++
		}
	}
	return known < len(row)
}

func (d *db) rowsResult(kind int, table string, rows []model.Row) result {
	cols := d.columns(table, false)
	for _, r := range rows {
		if len(r) > len(cols) && newColumn(r, cols) {
			cols = d.columns(table, true)
			break
		}
	}
	text, blobs := encodeRows(rows, cols)
	return result{kind: kind, text: text, blobs: blobs}
}

// storedSchema returns the schema the replica in store holds (its
// effective schema, as engine.Schema reads it), for Replica.open without
// options.schema; a replica without tables is NOT_FOUND (a name nothing
// was opened under, or never given a schema).
func storedSchema(store *idbkv.Store, name string) (model.Schema, error) {
	eng, err := engine.Open(store, engine.Options{LocalChangeLogOnly: true})
	if err != nil {
		return model.Schema{}, err
	}
	schema, err := eng.Schema()
	_ = eng.Close()
	if err != nil {
		return model.Schema{}, err
	}
	if len(schema.Tables) == 0 {
		return model.Schema{}, &bridgeError{code: codeNotFound, msg: fmt.Sprintf("no replica named %q with tables is stored in this browser profile: give options.schema to create one", name)}
	}
	return schema, nil
}
