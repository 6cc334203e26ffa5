package enginetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
)

func (s *suite) testChangesSince(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	var hlcs []engine.HLC
	for i := 0; i < 30; i++ {
		a.clock.Advance(1)
		cs := must(a.Transact(func(tx *engine.Tx) error {
			_, err := tx.Insert("stops", map[string]any{"trip": "t", "pos": i, "name": "s"})
			return err
		}))(t)
		hlcs = append(hlcs, cs.HLC)
	}
	all := must(a.ChangesSince(engine.HLC{}, 1_000_000, engine.ChangesFilter{}))(t)
	// The schema's own DDL-only transaction comes first.
	if len(all) != 31 || len(all[0].Migrations) != 2 || len(all[0].Changes) != 0 {
		t.Fatalf("got %d sets (first: %d migrations, %d changes), want 31 with the DDL first", len(all), len(all[0].Migrations), len(all[0].Changes))
	}
	for i, cs := range all[1:] {
		if cs.HLC != hlcs[i] || len(cs.Changes) != 3 {
			t.Fatalf("set %d: hlc %s with %d changes, want %s with 3", i, cs.HLC, len(cs.Changes), hlcs[i])
		}
	}
	// Paging: exclusive lower bound, bounded at transaction granularity.
	page := must(a.ChangesSince(hlcs[4], 7, engine.ChangesFilter{}))(t)
	if len(page) != 3 || page[0].HLC != hlcs[5] {
		t.Fatalf("page after set 4 with limit 7: %d sets starting %v, want 3 starting %s", len(page), page, hlcs[5])
	}
	// A transaction larger than the limit comes whole.
	big := must(a.Transact(func(tx *engine.Tx) error {
		for i := 100; i < 150; i++ {
			if _, err := tx.Insert("stops", map[string]any{"trip": "u", "pos": i}); err != nil {
				return err
			}
		}
		return nil
	}))(t)
	one := must(a.ChangesSince(hlcs[29], 10, engine.ChangesFilter{}))(t)
	if len(one) != 1 || len(one[0].Changes) != 150 || one[0].HLC != big.HLC {
		t.Fatalf("oversized transaction: %d sets, %d changes", len(one), len(one[0].Changes))
	}
	// Superseded facts leave the log: overwrite a cell, the old
	// transaction loses that fact; delete a row, its cells go.
	must(a.Update("stops", engine.Key{"t", 0}, map[string]any{"name": "renamed"}))(t)
	must(a.Delete("stops", engine.Key{"t", 1}))(t)
	all = must(a.ChangesSince(engine.HLC{}, 1_000_000, engine.ChangesFilter{}))(t)
	if len(all[1].Changes) != 2 {
		t.Fatalf("first data transaction after its name was overwritten has %d facts, want 2", len(all[1].Changes))
	}
	if len(all[2].Changes) != 0 && all[2].HLC == hlcs[1] {
		t.Fatalf("transaction of a deleted row still returned: %+v", all[2])
	}
	for _, cs := range all {
		if cs.HLC == hlcs[1] {
			t.Fatalf("transaction whose only row was deleted still in the log")
		}
	}
	// Filters.
	if own := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t); len(own) == 0 {
		t.Fatal("OnlyLocal returned nothing")
	}
	if ex := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{ExcludeSite: a.SiteID()}))(t); len(ex) != 0 {
		t.Fatalf("ExcludeSite of the only origin returned %d sets", len(ex))
	}
}

// The behaviours sync.md spells out, each on its own.
func (s *suite) testSeedBehaviours(t *testing.T) {
	pair := func(t *testing.T, allow bool) (*replica, *replica) {
		mod := func(o *engine.Options) { o.AllowResurrection = allow }
		a := s.newReplica(t, "a", TripsSchema(), mod)
		b := s.newReplica(t, "b", TripsSchema(), mod)
		pull(t, b, a)
		pull(t, a, b)
		return a, b
	}
	t.Run("DifferentColumnsBothSurvive", func(t *testing.T) {
		a, b := pair(t, false)
		must(a.Insert("trips", map[string]any{"id": "x", "title": "T", "days": 1}))(t)
		pull(t, b, a)
		a.clock.Advance(10)
		b.clock.Advance(20)
		must(a.Update("trips", engine.Key{"x"}, map[string]any{"title": "from a"}))(t)
		must(b.Update("trips", engine.Key{"x"}, map[string]any{"days": 9}))(t)
		pull(t, b, a)
		pull(t, a, b)
		for _, r := range []*replica{a, b} {
			row := must(r.Get("trips", engine.Key{"x"}))(t)
			if row["title"].Text() != "from a" || row["days"].Int() != 9 {
				t.Fatalf("%s: %s, want both edits", r.name, fmtRow(row))
			}
		}
		if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
			t.Fatal(d)
		}
	})
	t.Run("SameColumnHigherHLCWins", func(t *testing.T) {
		for _, order := range []string{"ab", "ba"} {
			a, b := pair(t, false)
			c := s.newReplica(t, "c", TripsSchema(), nil)
			must(a.Insert("trips", map[string]any{"id": "x", "title": "T"}))(t)
			pull(t, b, a)
			a.clock.Advance(10)
			b.clock.Advance(20) // b writes later
			must(a.Update("trips", engine.Key{"x"}, map[string]any{"title": "a"}))(t)
			must(b.Update("trips", engine.Key{"x"}, map[string]any{"title": "b"}))(t)
			if order == "ab" {
				pull(t, c, a)
				pull(t, c, b)
			} else {
				pull(t, c, b)
				pull(t, c, a)
			}
			if got := must(c.Get("trips", engine.Key{"x"}))(t)["title"].Text(); got != "b" {
				t.Fatalf("order %s: title %q, want the later write b", order, got)
			}
			res := pull(t, a, b)
			if res.Conflicts != 1 {
				t.Fatalf("concurrent same-cell edits counted %d conflicts, want 1", res.Conflicts)
			}
		}
	})
	t.Run("DeleteThenOlderUpdateStaysDeleted", func(t *testing.T) {
		a, b := pair(t, false)
		must(a.Insert("trips", map[string]any{"id": "x", "title": "T"}))(t)
		pull(t, b, a)
		b.clock.Advance(5)
		must(b.Update("trips", engine.Key{"x"}, map[string]any{"title": "older edit"}))(t) // at +5
		a.clock.Advance(50)
		must(a.Delete("trips", engine.Key{"x"}))(t) // at +50
		pull(t, b, a)                               // b: delete arrives after its own older edit
		pull(t, a, b)                               // a: the older edit arrives after the delete
		for _, r := range []*replica{a, b} {
			if _, err := r.Get("trips", engine.Key{"x"}); !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("%s: row visible after delete + older update: %v", r.name, err)
			}
		}
	})
	for _, allow := range []bool{false, true} {
		name := "DeleteWins"
		if allow {
			name = "Resurrection"
		}
		t.Run("InBatchDeleteEqualsSeparateBatches/"+name, func(t *testing.T) {
			mod := func(o *engine.Options) { o.AllowResurrection = allow }
			a, b := pair(t, allow)
			must(a.Insert("trips", map[string]any{"id": "x", "title": "T", "days": 1}))(t)
			pull(t, b, a)
			a.clock.Advance(10)
			must(a.Delete("trips", engine.Key{"x"}))(t)
			b.clock.Advance(20)
			must(b.Update("trips", engine.Key{"x"}, map[string]any{"days": 2}))(t) // newer than the delete
			setsA := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
			setsB := must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{ExcludeSite: a.SiteID()}))(t)
			one := s.newReplica(t, "one", TripsSchema(), mod)
			must(one.ApplyChanges(append(append([]engine.ChangeSet{}, setsB...), setsA...)))(t)
			sep := s.newReplica(t, "sep", TripsSchema(), mod)
			must(sep.ApplyChanges(setsA))(t)
			must(sep.ApplyChanges(setsB))(t)
			if d := diffData(DumpStore(t, one.store), DumpStore(t, sep.store)); d != "" {
				t.Fatalf("one batch and separate batches differ: %s", d)
			}
			_, err := one.Get("trips", engine.Key{"x"})
			if allow && err != nil {
				t.Fatalf("resurrection: newer update should revive the row: %v", err)
			}
			if !allow && !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("delete wins: row visible: %v", err)
			}
			if allow {
				row := must(one.Get("trips", engine.Key{"x"}))(t)
				// Cells at or below the tombstone died with it: the revived
				// row has its key, the newer cell, and nulls elsewhere.
				if row["days"].Int() != 2 || row["id"].Text() != "x" || !row["title"].IsNull() || !row["done"].IsNull() {
					t.Fatalf("revived row = %s, want only the cells written after the delete (id, days)", fmtRow(row))
				}
			}
		})
	}
	t.Run("ReapplyChangesNothing", func(t *testing.T) {
		a, b := pair(t, false)
		for i := 0; i < 20; i++ {
			must(a.Insert("trips", map[string]any{"title": "t", "days": i}))(t)
		}
		sets := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
		must(b.ApplyChanges(sets))(t)
		before := DumpStore(t, b.store)
		res := must(b.ApplyChanges(sets))(t)
		if res.Applied != 0 || res.Skipped == 0 {
			t.Fatalf("re-apply: %+v, want nothing applied", res)
		}
		if d := diffStore(before, DumpStore(t, b.store)); d != "" {
			t.Fatalf("re-applying a batch changed state: %s", d)
		}
	})
	t.Run("Drift", func(t *testing.T) {
		a, b := pair(t, false)
		a.clock.Advance(61_000)
		must(a.Insert("trips", map[string]any{"id": "future", "title": "T"}))(t)
		sets := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{ExcludeSite: b.SiteID()}))(t)
		before := DumpStore(t, b.store)
		clockBefore := must(b.Now())(t)
		_, err := b.ApplyChanges(sets)
		var de *engine.DriftError
		if !errors.Is(err, engine.ErrClockDrift) || !errors.As(err, &de) {
			t.Fatalf("61 s ahead: %v, want ErrClockDrift", err)
		}
		if d := diffStore(before, DumpStore(t, b.store)); d != "" {
			t.Fatalf("drifted batch wrote: %s", d)
		}
		if c := must(b.Now())(t); c != clockBefore {
			t.Fatal("drifted batch moved the clock")
		}
		b.clock.Advance(1000) // now exactly 60 s behind a
		if _, err := b.ApplyChanges(sets); err != nil {
			t.Fatalf("exactly 60 s ahead: %v, want accepted", err)
		}
		// Local writes after receiving are stamped above what was received.
		cs := must(b.Transact(func(tx *engine.Tx) error {
			_, err := tx.Update("trips", engine.Key{"future"}, map[string]any{"title": "later"})
			return err
		}))(t)
		if !sets[len(sets)-1].HLC.Less(cs.HLC) {
			t.Fatalf("local write after receive stamped %s, not above %s", cs.HLC, sets[len(sets)-1].HLC)
		}
	})
	t.Run("PrimaryKeyChange", func(t *testing.T) {
		a, b := pair(t, false)
		must(a.Insert("stops", map[string]any{"trip": "t", "pos": 1, "name": "n"}))(t)
		pull(t, b, a)
		must(a.Update("stops", engine.Key{"t", 1}, map[string]any{"pos": 7}))(t)
		pull(t, b, a)
		rows := must(b.Query("stops", engine.Query{}))(t)
		if len(rows) != 1 || rows[0]["pos"].Int() != 7 || rows[0]["name"].Text() != "n" {
			t.Fatalf("peer after key change has %d rows: %v", len(rows), rows)
		}
	})
}

func (s *suite) testHooks(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	if own := must(a.HasOwnFacts())(t); own {
		t.Fatal("a replica with only its schema reports own facts")
	}
	must(a.Insert("trips", map[string]any{"title": "x"}))(t)
	if own := must(a.HasOwnFacts())(t); !own {
		t.Fatal("HasOwnFacts false after a local insert")
	}
	sets := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	// State and Extra commit with the batch, or not at all.
	boom := errors.New("boom")
	_, err := b.Apply(sets, engine.ApplyOptions{State: map[string][]byte{"cursor": []byte("7")},
		Extra: func(tx kv.Tx, res engine.ApplyResult) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("Extra error: %v", err)
	}
	if v := must(b.State("cursor"))(t); v != nil {
		t.Fatal("state written by an aborted batch")
	}
	if n := must(b.Count("trips", nil))(t); n != 0 {
		t.Fatal("rows written by an aborted batch")
	}
	var seen engine.ApplyResult
	must(b.Apply(sets, engine.ApplyOptions{State: map[string][]byte{"cursor": []byte("7")},
		Extra: func(tx kv.Tx, res engine.ApplyResult) error { seen = res; return nil }}))(t)
	if string(must(b.State("cursor"))(t)) != "7" || seen.Applied == 0 {
		t.Fatalf("state/extra after a good batch: %+v", seen)
	}
	if own := must(b.HasOwnFacts())(t); own {
		t.Fatal("remote facts counted as own")
	}
}

// A schema-less replica (the relay's mode) accepts every table, keeps values
// exactly as received, and passes them on; replicas with a schema normalize
// them on arrival.
func (s *suite) testSchemaLess(t *testing.T) {
	relay := s.newReplica(t, "relay", nil, nil)
	a := s.newReplica(t, "a", TripsSchema(), nil)
	peer := engine.SiteID{8}
	h := engine.HLC{Wall: T0, Site: peer}
	cs := engine.ChangeSet{SiteID: peer, TransactionID: h.TransactionID()}
	add := func(col string, v engine.Value) {
		hh := h
		hh.OpSeq = uint32(len(cs.Changes))
		cs.Changes = append(cs.Changes, engine.Change{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text("r")}, Column: col, Value: v, HLC: hh})
		cs.HLC = hh
	}
	add("title", engine.Text("t"))
	add("budget", engine.Int(3)) // an integral real, as JSON may carry it
	add("anything", engine.Text("x"))
	cs2 := cs
	cs2.Changes = nil
	h2 := engine.HLC{Wall: T0, Site: peer, Counter: 1}
	cs2.TransactionID = h2.TransactionID()
	cs2.HLC = h2
	cs2.Changes = []engine.Change{{Type: engine.ColumnChange, Table: "elsewhere", PK: []engine.Value{engine.Int(1)}, Column: "v", Value: engine.Bool(true), HLC: h2}}
	res := must(relay.ApplyChanges([]engine.ChangeSet{cs, cs2}))(t)
	if res.Applied != 4 || res.UnknownTable != 0 {
		t.Fatalf("schema-less apply: %+v", res)
	}
	row := must(relay.Get("trips", engine.Key{"r"}))(t)
	if b := row["budget"]; b.Kind() != engine.KindInteger {
		t.Fatalf("relay stored budget as %s, want it as received (integer)", b.Kind())
	}
	if must(relay.Get("elsewhere", engine.Key{1}))(t)["v"].Bool() != true {
		t.Fatal("relay lost a table nobody declared")
	}
	// Passed on, the value is normalized by the receiver's schema.
	pull(t, a, relay)
	if b := must(a.Get("trips", engine.Key{"r"}))(t)["budget"]; !b.Equal(engine.Real(3)) {
		t.Fatalf("receiver stored budget %s (%s), want real 3", b, b.Kind())
	}
	if _, err := relay.Insert("trips", map[string]any{"title": "x"}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("local write on a schema-less replica: %v", err)
	}
}

// Bulk reads: a batch of many rows reads them with one range scan when the
// key range is sparse, and falls back to one read per row when it is
// dense; either way the merge is the same as row by row.
func (s *suite) testBulkPrefetch(t *testing.T) {
	n := 600
	if s.o.Short {
		n = 200
	}
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Transact(func(tx *engine.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := tx.Insert("trips", map[string]any{"id": fmt.Sprintf("k%05d", i*7), "title": "a", "days": i}); err != nil {
				return err
			}
		}
		return nil
	}))(t)
	sets := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	for _, dense := range []bool{false, true} {
		b := s.newReplica(t, "b", TripsSchema(), nil)
		ref := s.newReplica(t, "ref", TripsSchema(), nil)
		// Both start from the same rows, written by c: some of a's keys,
		// and keys between them.
		c := s.newReplica(t, "c", TripsSchema(), nil)
		c.clock.Advance(5)
		step := 21
		if dense {
			step = 1
		}
		must(c.Transact(func(tx *engine.Tx) error {
			for i := 0; i < n*7; i += step {
				if _, err := tx.Insert("trips", map[string]any{"id": fmt.Sprintf("k%05d", i), "title": "c"}); err != nil {
					return err
				}
			}
			return nil
		}))(t)
		pull(t, b, c)
		pull(t, ref, c)
		must(b.ApplyChanges(sets))(t) // one batch: one range read, or the fallback
		for _, cs := range sets {     // row by row
			for _, c := range cs.Changes {
				one := cs
				one.Changes = []engine.Change{c}
				one.HLC = c.HLC
				one.Migrations = nil
				must(ref.ApplyChanges([]engine.ChangeSet{one}))(t)
			}
		}
		if d := diffBuckets(DumpStore(t, b.store), DumpStore(t, ref.store), "rows", "index", "tombs"); d != "" {
			t.Fatalf("dense=%v: one batch and row by row differ: %s", dense, d)
		}
		if got := must(b.Count("trips", nil))(t); got == 0 {
			t.Fatal("no rows")
		}
	}
}
