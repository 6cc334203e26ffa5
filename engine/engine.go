package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replica-sync/replica/internal/sysrand"
	"github.com/replica-sync/replica/kv"

	"github.com/replica-sync/replica/engine/internal/layout"
)

// HeldPolicy says what ApplyChanges (and a snapshot's apply) does with a
// synced change it cannot apply now: one for a table outside the local
// schema, for a column its table does not define yet, or whose key or value
// does not fit the local table (HeldReason; docs/design.md § Held changes).
// Such a change is a held change whichever the policy: it is counted in
// ApplyResult.Held and reported by a ChangesHeld event, never silently lost.
type HeldPolicy uint8

const (
	// Hold keeps each such change durably, committed with the rest of the
	// batch, and replays it when its table or column appears (a key or
	// value that does not fit is never replayed); Prune drops it at the
	// retention horizon. The default.
	Hold HeldPolicy = iota
	// Drop discards them: they are counted and reported, not stored.
	// This covers changes to known tables that do not fit, too.
	Drop
	// HoldAndForward holds them like Hold and also re-offers those that
	// may be replayed (unknown table, unknown column) in ChangesSince, so
	// peers that have the table or column receive them.
	HoldAndForward
)

// String returns the policy's name as ParseHeldPolicy reads it: "hold",
// "drop" or "hold-and-forward".
func (p HeldPolicy) String() string {
	switch p {
	case Hold:
		return "hold"
	case Drop:
		return "drop"
	case HoldAndForward:
		return "hold-and-forward"
	}
	return "invalid"
}

// ParseHeldPolicy parses "hold" (or "", the default), "drop" or
// "hold-and-forward". The names of the release before (the JavaScript
// option unknownTableDisposition's values) are accepted as aliases for one
// release: "quarantine" for Hold, "ignore" for Drop, "store-and-forward"
// for HoldAndForward. Any other string is an error naming the valid ones.
func ParseHeldPolicy(s string) (HeldPolicy, error) {
	switch s {
	case "hold", "quarantine", "":
		return Hold, nil
	case "drop", "ignore":
		return Drop, nil
	case "hold-and-forward", "store-and-forward":
		return HoldAndForward, nil
	}
	return 0, fmt.Errorf("unknown held-change policy %q (want hold, drop or hold-and-forward)", s)
}

// DefaultRetention is the default retention horizon: tombstones and
// held changes older than this are pruned (docs/design.md § Retention).
const DefaultRetention = 30 * 24 * time.Hour

// Options configure Open. The zero value is a schema-less replica with the
// system clock, delete-wins tombstones and the Hold policy for held changes.
type Options struct {
	// Schema declares the tables. Nil opens the replica schema-less: every
	// table is accepted, values are stored exactly as received (no
	// coercion), unknown-table detection is off, and schema migrations are
	// recorded and forwarded (the relay's mode). A declared schema is
	// validated (Schema.Validate); tables, columns and indexes the replica
	// does not hold yet are created by migrations stamped at open, but for
	// those a drop retired (DropTable, DropColumn, DropIndex), which it
	// names without error and without effect. A column's notNull or
	// default that differs from the database's records nothing either
	// (AlterColumn changes them; an altered attribute governs writes
	// whatever the declaration says).
	Schema *Schema
	// Clock supplies wall time; nil means SystemClock.
	Clock Clock
	// AllowResurrection declares ResurrectionAllowed for every table of
	// Schema that declares no policy itself (TableDef.Resurrection): the
	// declaration is recorded as a set_resurrection_policy migration when
	// the database holds no policy for the table, and is a *SchemaError
	// naming both policies when the database's is delete-wins. False
	// declares nothing: such tables follow the database (delete-wins until
	// some device declares otherwise). The policy is the database's, so
	// every replica and the relay apply the same one (see
	// ResurrectionPolicy). Ignored by a schema-less replica.
	AllowResurrection bool
	// HeldChanges is the policy for synced changes this replica cannot
	// apply now (see HeldPolicy): for tables outside the schema, for
	// columns not defined yet, and those whose key or value does not fit
	// the local table. Ignored in schema-less mode, which applies every
	// table and column as received and refuses a value that does not fit
	// a declared type.
	HeldChanges HeldPolicy
	// Resolver replaces last-writer-wins for column conflicts (see
	// ConflictResolver). Nil means LWW, the only convergent choice.
	Resolver ConflictResolver
	// LocalChangeLogOnly keeps only this replica's own transactions in
	// the change log: ChangesSince then returns local transactions only
	// (what a sync client pushes), and applying a peer's change costs one
	// write less per row. For replicas that never serve their peers'
	// changes to others: browser clients (the JavaScript API sets it) and
	// the relay, which serves from its arrival log.
	LocalChangeLogOnly bool
	// OmitLocalChanges makes local transactions (Transact, Insert, …,
	// Staged.Commit) return and announce in LocalChange events a
	// ChangeSet without its Changes: SiteID, TransactionID, HLC and
	// Migrations are set, Changes is nil (events still list the tables).
	// ChangesSince still returns every fact. A transaction's Changes cost
	// about 230 bytes per fact to build (16 MB for 10,000 rows of 7
	// columns): for hosts that only need to know a transaction committed,
	// such as the JavaScript API, which pushes from the change log.
	OmitLocalChanges bool
	// Retention is the horizon of Prune; 0 means DefaultRetention.
	Retention time.Duration
	// Rand is the source of the site id and of snapshot ids; nil means
	// crypto/rand (in the browser build, the crypto.getRandomValues that
	// crypto/rand reads there: internal/sysrand). Generated keys are
	// UUIDv7s (github.com/google/uuid natively, engine's uuidV7 in the
	// browser build) whose random bits come from the system's source, not
	// from Rand.
	Rand io.Reader
	// Logger receives warnings (a failed replay of held changes, a
	// held change dropped); nil means the standard log package. A
	// *slog.Logger satisfies it.
	Logger Logger
}

// Engine is one replica: its rows, their CRDT metadata and its clock, over a
// kv.Store. It is safe for concurrent use. Several Engines may share one
// store (two browser tabs over one IndexedDB database): the clock is read and
// advanced inside each write transaction, so they never mint the same HLC.
type Engine struct {
	store    kv.Store
	opts     Options
	clock    Clock
	site     SiteID
	declared map[string]*table // nil in schema-less mode
	log      Logger

	mu     sync.Mutex
	schema *schemaState // cached effective schema, refreshed by schemaver

	subMu  sync.Mutex
	subs   map[int]func(Event)
	nextID int

	snapMu      sync.Mutex
	snap        *snapApply // snapshot being applied, nil if none
	snapCreated []string   // tables its schema chunk created

	closed atomic.Bool

	note atomic.Pointer[WriteNote] // see SetWriteNote
}

// Open opens the replica stored in store (creating it when empty: a new
// site id, a zero clock) and brings its schema up to opts.Schema. The store
// must hold every bucket in Buckets; the Engine does not close it.
//
// Errors: ErrSchema (invalid declaration, or one contradicting the stored
// schema), ErrStorageFormat (a store written by an incompatible version),
// and the store's own errors.
func Open(store kv.Store, opts Options) (*Engine, error) {
	e := &Engine{store: store, opts: opts, clock: opts.Clock, subs: map[int]func(Event){}}
	if e.clock == nil {
		e.clock = SystemClock{}
	}
	if e.opts.Rand == nil {
		e.opts.Rand = sysrand.Reader
	}
	if e.opts.Retention <= 0 {
		e.opts.Retention = DefaultRetention
	}
	e.log = opts.Logger
	if e.log == nil {
		e.log = stdLogger{}
	}
	var declared Schema
	if opts.Schema != nil {
		var err error
		if declared, e.declared, err = compileDeclared(opts.Schema, opts.AllowResurrection); err != nil {
			return nil, err
		}
	}
	var newSite SiteID
	if _, err := io.ReadFull(e.opts.Rand, newSite[:]); err != nil {
		return nil, fmt.Errorf("generate site id: %w", err)
	}
	readSite := func(tx kv.Tx) error {
		var err error
		e.site, err = openSite(tx, newSite)
		return err
	}
	if opts.Schema != nil {
		// One store transaction reads the site id and records the
		// declared schema's migrations (IndexedDB: one transaction fewer
		// on every Replica.open).
		if err := e.declareSchema(declared, readSite); err != nil {
			return nil, err
		}
		return e, nil
	}
	if err := store.Update(readSite); err != nil {
		return nil, fmt.Errorf("open replica: %w", err)
	}
	return e, nil
}

// compileDeclared validates the declared schema and compiles its tables;
// with allowResurrection, tables that do not declare a resurrection policy
// allow it.
func compileDeclared(schema *Schema, allowResurrection bool) (Schema, map[string]*table, error) {
	declared, err := schema.Validate()
	if err != nil {
		return Schema{}, nil, err
	}
	if allowResurrection {
		for i := range declared.Tables {
			if declared.Tables[i].Resurrection == ResurrectionUndeclared {
				declared.Tables[i].Resurrection = ResurrectionAllowed
			}
		}
	}
	tables := make(map[string]*table, len(declared.Tables))
	for _, t := range declared.Tables {
		tables[t.Name] = compileTable(t)
	}
	return declared, tables, nil
}

// openSite checks the store's format and returns its site id. A new store
// is initialized: the format is stored, and newSite as its site id. A
// store of format 1 is upgraded to StorageFormat in tx (upgradeFormat1);
// any other format than those two is ErrStorageFormat.
func openSite(tx kv.Tx, newSite SiteID) (SiteID, error) {
	f, err := tx.Get(layout.BucketMeta, layout.MetaFormat)
	switch {
	case errors.Is(err, kv.ErrNotFound):
		if err := tx.Put(layout.BucketMeta, layout.MetaFormat, []byte(strconv.Itoa(StorageFormat))); err != nil {
			return SiteID{}, err
		}
		if err := tx.Put(layout.BucketMeta, layout.MetaSite, newSite[:]); err != nil {
			return SiteID{}, err
		}
	case err != nil:
		return SiteID{}, err
	case string(f) == strconv.Itoa(StorageFormat):
	case string(f) == "1":
		if err := upgradeFormat1(tx); err != nil {
			return SiteID{}, err
		}
	default:
		return SiteID{}, fmt.Errorf("%w: store has format %q, this version reads 1 and %d", ErrStorageFormat, f, StorageFormat)
	}
	s, err := tx.Get(layout.BucketMeta, layout.MetaSite)
	if err != nil {
		return SiteID{}, fmt.Errorf("read site id: %w", err)
	}
	if len(s) != 16 {
		return SiteID{}, fmt.Errorf("%w: stored site id has %d bytes", ErrStorageFormat, len(s))
	}
	var site SiteID
	copy(site[:], s)
	return site, nil
}

// declareSchema records, as one local transaction, the migrations that
// bring the effective schema up to the declared one, then replays held
// changes for tables that just appeared. pre runs first in that
// transaction (Open's openSite).
func (e *Engine) declareSchema(declared Schema, pre func(kv.Tx) error) error {
	var created []string
	lc, err := e.writeAfter(pre, nil, func(w *writeTx) error {
		migs, err := diffSchema(w.schema, declared)
		if err != nil {
			return err
		}
		for i := range migs {
			if migs[i].Type == CreateTable || migs[i].Type == AddColumn {
				created = append(created, migs[i].TableName) // held changes may fit now
			}
			if err := w.recordMigration(&migs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("open replica: %w", err)
	}
	e.emitLocal(lc)
	// Replay every held table, not only those this declaration grew: an
	// apply that grew a table commits before its replay, and a crash (a
	// closed tab) in between left the replay undone. Held changes that
	// still do not fit stay held.
	if _, err := e.ReplayHeld(); err != nil {
		return fmt.Errorf("open replica: replay held changes: %w", err)
	}
	return nil
}

// SiteID returns this replica's site id.
func (e *Engine) SiteID() SiteID { return e.site }

// Close marks the engine closed: later calls return ErrClosed. It does not
// close the kv.Store, which the caller owns.
func (e *Engine) Close() error {
	e.closed.Store(true)
	e.subMu.Lock()
	e.subs = map[int]func(Event){}
	e.subMu.Unlock()
	return nil
}

// checkOpen returns ErrClosed once the engine is closed. Out of line, like
// begin: inlined at its ~20 call sites it cost more code than the call.
//
//go:noinline
func (e *Engine) checkOpen() error {
	if e.closed.Load() {
		return ErrClosed
	}
	return nil
}

// metaState is what every write transaction reads first.
type metaState struct {
	clock     clockState
	schemaVer uint64
}

// The meta record under "clock": wall ms (8), counter (2) and schema
// version (8), big-endian. One key, so a write transaction's first read is
// one request.
const metaRecordSize = 18

func readMeta(tx kv.Tx) (metaState, error) {
	v, err := tx.Get(layout.BucketMeta, layout.MetaClock)
	if errors.Is(err, kv.ErrNotFound) {
		return metaState{}, nil
	}
	if err != nil {
		return metaState{}, err
	}
	return decodeMeta(v)
}

func decodeMeta(v []byte) (metaState, error) {
	if len(v) != metaRecordSize {
		return metaState{}, fmt.Errorf("%w: clock record has %d bytes", ErrStorageFormat, len(v))
	}
	return metaState{
		clock:     clockState{Wall: binary.BigEndian.Uint64(v), Counter: binary.BigEndian.Uint16(v[8:])},
		schemaVer: binary.BigEndian.Uint64(v[10:]),
	}, nil
}

func putMeta(tx kv.Tx, m metaState) error {
	var b [metaRecordSize]byte
	binary.BigEndian.PutUint64(b[:], m.clock.Wall)
	binary.BigEndian.PutUint16(b[8:], m.clock.Counter)
	binary.BigEndian.PutUint64(b[10:], m.schemaVer)
	return tx.Put(layout.BucketMeta, layout.MetaClock, b[:])
}

// currentSchema is schemaFor at the schema version the meta record names:
// the effective schema as tx sees it.
func (e *Engine) currentSchema(tx kv.Tx) (*schemaState, error) {
	m, err := readMeta(tx)
	if err != nil {
		return nil, err
	}
	return e.schemaFor(tx, m.schemaVer)
}

// schemaFor returns the effective schema at version ver, reloading it from
// the migrations bucket when the cache is stale (another Engine over the
// same store, e.g. another tab, changed it).
func (e *Engine) schemaFor(tx kv.Tx, ver uint64) (*schemaState, error) {
	e.mu.Lock()
	s := e.schema
	e.mu.Unlock()
	if s != nil && s.version == ver {
		return s, nil
	}
	var migs []SchemaMigration
	var derr error
	err := tx.Scan(layout.BucketMigrations, kv.Range{}, func(k, v []byte) bool {
		m, err := decodeMigration(k, v)
		if err != nil {
			derr = err
			return false
		}
		migs = append(migs, m)
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("load schema: %w", err)
	}
	s = foldSchema(ver, migs, e.declared == nil)
	e.mu.Lock()
	if e.schema == nil || e.schema.version <= ver {
		e.schema = s
	}
	e.mu.Unlock()
	return s, nil
}

// Schema returns the effective schema: every table, column and index this
// replica holds, declared locally or created by peers' migrations, in
// creation order.
func (e *Engine) Schema() (Schema, error) {
	if err := e.checkOpen(); err != nil {
		return Schema{}, err
	}
	var out Schema
	err := e.store.View(func(tx kv.Tx) error {
		s, err := e.currentSchema(tx)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, m := range s.migrations {
			if r := s.resolve(m.TableName); m.Type == CreateTable && !seen[r] {
				// Several devices may have created the table (under
				// names a rename_table joined, too).
				seen[r] = true
				if t := s.tables[r]; t != nil {
					def := cloneTableDef(t.def)
					def.Name = t.name // a renamed table's current name
					out.Tables = append(out.Tables, def)
				}
			}
		}
		return nil
	})
	return out, err
}

// State returns the caller state stored under name (see ApplyOptions.State
// and SetState), or nil if there is none. The sync client keeps its cursors
// and watermarks here so they commit with the changes they describe.
func (e *Engine) State(name string) ([]byte, error) {
	if err := e.checkOpen(); err != nil {
		return nil, err
	}
	var out []byte
	err := e.store.View(func(tx kv.Tx) error {
		v, err := tx.Get(layout.BucketMeta, append(append([]byte(nil), layout.MetaStatePrefix...), name...))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		out = append([]byte(nil), v...)
		return err
	})
	return out, err
}

// SetState stores value under name (nil deletes it).
func (e *Engine) SetState(name string, value []byte) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	return e.store.Update(func(tx kv.Tx) error { return putState(tx, name, value) })
}

// WriteNote is a state record (as SetState stores one) that each local
// write stores in its own kv transaction while it is set (SetWriteNote):
// so the record exists if and only if the write committed. jsbridge's
// worker mode records each write call's answer this way, to learn after
// its Worker was terminated which calls committed.
type WriteNote struct {
	// Name is the state's name (State reads it).
	Name string
	// Value returns the value to store, given the row the write's last
	// Insert, Update or Upsert returned (nil for other writes). It runs
	// inside the kv transaction (possibly more than once, if the store
	// retries it): it must not wait on anything.
	Value func(row Row) []byte
	// States named from DropFrom (inclusive) to DropTo (exclusive) are
	// deleted in the same transaction; none when DropTo is "".
	DropFrom, DropTo string
}

func (n *WriteNote) put(tx kv.Tx, row Row) error {
	if n.DropTo != "" {
		lo := append(append([]byte(nil), layout.MetaStatePrefix...), n.DropFrom...)
		hi := append(append([]byte(nil), layout.MetaStatePrefix...), n.DropTo...)
		if err := tx.DeleteRange(layout.BucketMeta, lo, hi); err != nil {
			return err
		}
	}
	return putState(tx, n.Name, n.Value(row))
}

// SetWriteNote makes every local write (Insert, Update, Upsert, Delete,
// Transact, Staged.Commit, the migrations), until the next call, store n in
// its kv transaction, whether or not it changed anything (a write that
// fails stores nothing); nil stops it. Writes applied from peers
// (ApplyChangeSet and the sync client's) never store it. The caller makes
// sure that no other local write runs while n is set.
func (e *Engine) SetWriteNote(n *WriteNote) { e.note.Store(n) }

func putState(tx kv.Tx, name string, value []byte) error {
	k := append(append([]byte(nil), layout.MetaStatePrefix...), name...)
	if value == nil {
		return tx.Delete(layout.BucketMeta, k)
	}
	return tx.Put(layout.BucketMeta, k, value)
}

// Now returns the engine's current HLC (the persisted clock state with this
// site id), without advancing it.
func (e *Engine) Now() (HLC, error) {
	var h HLC
	err := e.store.View(func(tx kv.Tx) error {
		m, err := readMeta(tx)
		h = HLC{Wall: m.clock.Wall, Counter: m.clock.Counter, Site: e.site}
		return err
	})
	return h, err
}

// Logger is where the engine reports problems it handles itself. Args are
// alternating keys and values, as log/slog takes them; *slog.Logger
// implements it. (The engine does not import log/slog: it would add ~100 KB
// to the browser build.)
type Logger interface {
	Warn(msg string, args ...any)
}

// stdLogger writes warnings with the standard log package.
type stdLogger struct{}

func (stdLogger) Warn(msg string, args ...any) {
	for i := 0; i+1 < len(args); i += 2 {
		msg += fmt.Sprintf(" %v=%v", args[i], args[i+1])
	}
	log.Print("WARN " + msg)
}
