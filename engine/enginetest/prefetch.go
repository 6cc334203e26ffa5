package enginetest

import (
	"fmt"
	"testing"

	"github.com/replica-sync/replica/engine"
)

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
