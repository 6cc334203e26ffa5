package enginetest

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testMerge covers how changes merge, one rule per subtest: last writer
// wins per column, a delete against older updates, a batch against the same
// changes one by one, reapplying, clock drift, primary-key changes.
func (s *suite) testMerge(t *testing.T) {
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
