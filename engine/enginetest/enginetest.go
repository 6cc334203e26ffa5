// Package enginetest is the engine's behavioural test suite, written against
// any kv.Store so it runs natively (memkv, boltkv) and in the browser over
// IndexedDB (idbkv).
package enginetest

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
)

// Opener returns a fresh, empty store holding engine.Buckets. The suite
// closes what it opens through t.Cleanup registered by the opener, or not at
// all (memory stores).
type Opener func(t testing.TB) kv.Store

// Options tune the suite for a backend.
type Options struct {
	// Short runs fewer property-test cases (browsers are slower).
	Short bool
	// Seed fixes the property tests' seed; 0 picks one (and prints it).
	Seed uint64
	// SkipConcurrency skips the test that calls one Engine from many
	// goroutines at once with readers spinning until the writers finish:
	// in a browser, goroutines share one JS thread and IndexedDB
	// serializes the transactions, so the spinning readers starve the
	// writers (idbkv's own tests cover two engines over one database).
	SkipConcurrency bool
}

// Run runs the whole suite.
func Run(t *testing.T, open Opener, o Options) {
	s := &suite{open: open, o: o}
	t.Run("Basics", s.testBasics)
	t.Run("Validation", s.testValidation)
	t.Run("Limits", s.testLimits)
	t.Run("Transactions", s.testTransactions)
	t.Run("Staged", s.testStaged)
	t.Run("TwoEnginesOneStore", s.testTwoEnginesOneStore)
	t.Run("ChangesSince", s.testChangesSince)
	t.Run("Hooks", s.testHooks)
	t.Run("BulkPrefetch", s.testBulkPrefetch)
	t.Run("SchemaLess", s.testSchemaLess)
	t.Run("Merge", s.testMerge)
	t.Run("BadInput", s.testBadInput)
	t.Run("HeldChanges", s.testHeldChanges)
	t.Run("Migrations", s.testMigrations)
	t.Run("Snapshot", s.testSnapshot)
	t.Run("Query", s.testQuery)
	t.Run("Prune", s.testPrune)
	t.Run("LocalChangeLogOnly", s.testLocalChangeLogOnly)
	t.Run("OwnLogEntries", s.testOwnLogEntries)
	t.Run("CountLocalTransactions", s.testCountLocalTransactions)
	t.Run("Events", s.testEvents)
	t.Run("Convergence", s.testConvergence)
	t.Run("ConvergenceMixed", s.testConvergenceMixed)
	t.Run("ResurrectionPolicies", s.testResurrectionPolicies)
	t.Run("DropKinds", s.testDropKinds)
	t.Run("Drops", s.testDrops)
	t.Run("AlterKinds", s.testAlterKinds)
	t.Run("Alters", s.testAlters)
	t.Run("AlterOneAttribute", s.testAlterOneAttribute)
	t.Run("RenameKinds", s.testRenameKinds)
	t.Run("RenameJoin", s.testRenameJoin)
	t.Run("Renames", s.testRenames)
	t.Run("RenameResolver", s.testRenameResolver)
	t.Run("RenameMalformed", s.testRenameMalformed)
	t.Run("RenameJoinKeys", s.testRenameJoinKeys)
	t.Run("DeadCells", s.testDeadCells)
	t.Run("ChangeLogInvariants", s.testChangeLogInvariants)
	t.Run("QueryStrict", s.testQueryStrict)
	t.Run("Concurrency", s.testConcurrency)
	t.Run("SnapshotChaos", s.testSnapshotChaos)
	t.Run("SchemaEvolution", s.testSchemaEvolution)
	t.Run("IndexesAndKeys", s.testIndexesAndKeys)
	t.Run("SnapshotApply", s.testSnapshotApply)
	t.Run("ApplyAndChangeLog", s.testApplyAndChangeLog)
	t.Run("DoesNotFit", s.testDoesNotFit)
	t.Run("ValueLimits", s.testValueLimits)
}

type suite struct {
	open Opener
	o    Options
}

// ManualClock is a Clock tests move by hand.
type ManualClock struct {
	mu sync.Mutex
	ms uint64
}

// NewManualClock starts at ms.
func NewManualClock(ms uint64) *ManualClock { return &ManualClock{ms: ms} }

// Now implements engine.Clock.
func (c *ManualClock) Now() uint64 { c.mu.Lock(); defer c.mu.Unlock(); return c.ms }

// Set moves the clock to ms (backward too).
func (c *ManualClock) Set(ms uint64) { c.mu.Lock(); c.ms = ms; c.mu.Unlock() }

// Advance moves the clock forward by d ms.
func (c *ManualClock) Advance(d uint64) { c.mu.Lock(); c.ms += d; c.mu.Unlock() }

// T0 is the suite's epoch: 2026-11-29T00:00:00Z in ms.
const T0 = 1795910400000

// TripsSchema is the schema most tests use.
func TripsSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{
		{
			Name: "trips",
			Columns: []engine.ColumnDef{
				{Name: "id", Type: engine.KindText},
				{Name: "title", Type: engine.KindText, NotNull: true},
				{Name: "budget", Type: engine.KindReal, HasDefault: true, Default: engine.Real(0)},
				{Name: "days", Type: engine.KindInteger},
				{Name: "done", Type: engine.KindBoolean, NotNull: true, HasDefault: true, Default: engine.Bool(false)},
				{Name: "starts", Type: engine.KindTimestamp},
				{Name: "tags", Type: engine.KindJSON},
				{Name: "photo", Type: engine.KindBlob},
			},
			Indexes: []engine.IndexDef{{Name: "by_title", Columns: []string{"title"}}, {Name: "by_done_days", Columns: []string{"done", "days"}}},
		},
		{
			Name: "stops",
			Columns: []engine.ColumnDef{
				{Name: "trip", Type: engine.KindText, NotNull: true},
				{Name: "pos", Type: engine.KindInteger, NotNull: true},
				{Name: "name", Type: engine.KindText},
			},
			PrimaryKey: []string{"trip", "pos"},
		},
	}}
}

// replica is one engine over its own store, with its clock.
type replica struct {
	*engine.Engine
	store kv.Store
	clock *ManualClock
	name  string
}

func (s *suite) newReplica(t testing.TB, name string, schema *engine.Schema, mod func(*engine.Options)) *replica {
	t.Helper()
	st := s.open(t)
	clk := NewManualClock(T0)
	opts := engine.Options{Schema: schema, Clock: clk}
	if mod != nil {
		mod(&opts)
	}
	e, err := engine.Open(st, opts)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { e.Close() })
	return &replica{Engine: e, store: st, clock: clk, name: name}
}

// must returns v, or fails the test given to the returned function:
// must(f())(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// pull moves every change src has that dst lacks into dst, in pages.
func pull(t testing.TB, dst, src *replica) engine.ApplyResult {
	t.Helper()
	var total engine.ApplyResult
	var since engine.HLC
	for {
		sets, err := src.ChangesSince(since, 100, engine.ChangesFilter{ExcludeSite: dst.SiteID()})
		if err != nil {
			t.Fatalf("changes from %s: %v", src.name, err)
		}
		if len(sets) == 0 {
			return total
		}
		res, err := dst.ApplyChanges(sets)
		if err != nil {
			t.Fatalf("apply %s→%s: %v", src.name, dst.name, err)
		}
		total.Applied += res.Applied
		total.Skipped += res.Skipped
		total.Conflicts += res.Conflicts
		total.Transactions += res.Transactions
		total.Held += res.Held
		since = sets[len(sets)-1].HLC
	}
}

// Dump is a replica's state in comparable form: rows and index buckets
// verbatim, the change log and migrations with the class byte (own/remote,
// which is relative to the replica) stripped, the held changes verbatim.
// Buckets is keyed by the stored bucket names: the held changes' bucket
// is "quarantine", its name from before the term "held change" (a stored
// format: it stays).
type Dump struct {
	Buckets map[string][]string
}

// DumpStore reads the comparable state of a store. The change log is
// compared by what it lists that is live (engine.InspectChangeLog): a
// replica records its own transactions and its peers' in different forms,
// and its own entries may list rows whose facts were superseded since. The
// dump fails the test if the log lists a peer's fact that is not there.
// "lograw" holds the raw log bucket, for before/after comparisons of one
// store.
func DumpStore(t testing.TB, st kv.Store) Dump {
	t.Helper()
	d := Dump{Buckets: map[string][]string{}}
	rep, err := engine.InspectChangeLog(st)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dead != 0 {
		t.Fatalf("change log lists %d facts of peers that are not in their rows", rep.Dead)
	}
	d.Buckets["log"] = rep.Live
	err = st.View(func(tx kv.Tx) error {
		for _, b := range []string{"rows", "lograw", "index", "migrations", "quarantine", "tombsraw"} {
			var lines []string
			bucket := b
			switch b {
			case "lograw":
				bucket = "log"
			case "tombsraw":
				bucket = "tombs"
			}
			err := tx.Scan(bucket, kv.Range{}, func(k, v []byte) bool {
				if b == "migrations" {
					k = k[1:]
				}
				lines = append(lines, fmt.Sprintf("%x=%x", k, v))
				return true
			})
			if err != nil {
				return err
			}
			sort.Strings(lines)
			d.Buckets[b] = lines
		}
		tombs, err := tombIndex(tx)
		d.Buckets["tombs"] = tombs
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// diffDumps returns a description of the first difference, or "".
func diffDumps(a, b Dump) string {
	return diffBuckets(a, b, "rows", "log", "index", "migrations", "quarantine", "tombs")
}

// diffStore compares two dumps of one store (before and after something
// that must write nothing), raw change log and prune index included.
func diffStore(a, b Dump) string {
	return diffBuckets(a, b, "rows", "lograw", "log", "index", "migrations", "quarantine", "tombsraw")
}

// tombIndex reads the prune index as replicas share it: one entry per
// tombstoned row. A replica's own tombstone may record a shadow, the
// tombstone it superseded (a value naming it, and the shadow's own entry:
// engine/writetx.go, putShadow), which depends on the order the replica
// saw the deletions in, and is left out.
func tombIndex(tx kv.Tx) ([]string, error) {
	type entry struct{ k, v []byte }
	var es []entry
	err := tx.Scan("tombs", kv.Range{}, func(k, v []byte) bool {
		es = append(es, entry{bytes.Clone(k), bytes.Clone(v)})
		return true
	})
	if err != nil {
		return nil, err
	}
	shadow := map[string]bool{}
	for _, e := range es {
		if len(e.v) != engine.HLCSize || len(e.k) < engine.BaseSize {
			continue
		}
		h, err := engine.HLCFromBytes(e.v)
		if err != nil {
			return nil, err
		}
		sk := make([]byte, engine.BaseSize, len(e.k))
		h.PutBase(sk)
		shadow[string(append(sk, e.k[engine.BaseSize:]...))] = true
	}
	var lines []string
	for _, e := range es {
		if !shadow[string(e.k)] {
			lines = append(lines, fmt.Sprintf("%x=", e.k))
		}
	}
	sort.Strings(lines)
	return lines, nil
}

// diffData compares only the data: rows, change log and indexes (replicas
// that declared their schema separately hold different migrations).
func diffData(a, b Dump) string { return diffBuckets(a, b, "rows", "log", "index", "tombs") }

func diffBuckets(a, b Dump, names ...string) string {
	for _, name := range names {
		x, y := a.Buckets[name], b.Buckets[name]
		for i := 0; i < len(x) || i < len(y); i++ {
			var l, r string
			if i < len(x) {
				l = x[i]
			}
			if i < len(y) {
				r = y[i]
			}
			if l != r {
				return fmt.Sprintf("bucket %s entry %d:\n  %s\n  %s\n(%d vs %d entries)", name, i, clip(l), clip(r), len(x), len(y))
			}
		}
	}
	return ""
}

// clip shortens a dump line for a failure message.
func clip(s string) string {
	if len(s) > 400 {
		return s[:200] + "…" + s[len(s)-200:]
	}
	return s
}

func rowsEqual(a, b engine.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !v.Equal(w) {
			return false
		}
	}
	return true
}

func fmtRow(r engine.Row) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", k, r[k])
	}
	b.WriteString("}")
	return b.String()
}
