package enginetest

import (
	"testing"

	"github.com/replica-sync/replica/engine"
)

// CountLocalTransactions counts what ChangesSince(since, OnlyLocal) returns
// (schema migrations included, once per transaction), from any watermark,
// and ignores peers' transactions.
func (s *suite) testCountLocalTransactions(t *testing.T) {
	for _, localOnly := range []bool{false, true} {
		a := s.newReplica(t, "a", TripsSchema(), func(o *engine.Options) { o.LocalChangeLogOnly = localOnly })
		b := s.newReplica(t, "b", TripsSchema(), nil)
		check := func(what string) {
			t.Helper()
			sets := must(a.ChangesSince(engine.HLC{}, 1<<20, engine.ChangesFilter{OnlyLocal: true}))(t)
			if n := must(a.CountLocalTransactions(engine.HLC{}))(t); n != len(sets) {
				t.Fatalf("%s: CountLocalTransactions(0) = %d, ChangesSince returns %d transactions", what, n, len(sets))
			}
			for i := range sets {
				if n := must(a.CountLocalTransactions(sets[i].HLC))(t); n != len(sets)-i-1 {
					t.Fatalf("%s: CountLocalTransactions(transaction %d of %d) = %d, want %d", what, i+1, len(sets), n, len(sets)-i-1)
				}
				if n := must(a.CountLocalTransactions(sets[i].HLC.Base()))(t); n != len(sets)-i-1 {
					t.Fatalf("%s: CountLocalTransactions(base of transaction %d) = %d, want %d", what, i+1, n, len(sets)-i-1)
				}
			}
		}
		check("after open")
		before := must(a.CountLocalTransactions(engine.HLC{}))(t)
		for i, id := range []string{"t1", "t2", "t3"} {
			a.clock.Advance(uint64(i))
			must(a.Insert("trips", map[string]any{"id": id, "title": id}))(t)
		}
		must(a.Transact(func(tx *engine.Tx) error {
			if _, err := tx.Insert("trips", map[string]any{"id": "t4", "title": "four"}); err != nil {
				return err
			}
			_, err := tx.Update("trips", engine.Key{"t1"}, map[string]any{"title": "one"})
			return err
		}))(t)
		if n := must(a.CountLocalTransactions(engine.HLC{}))(t); n != before+4 {
			t.Fatalf("after 4 transactions: %d, want %d", n, before+4)
		}
		check("after writes")
		// A peer's transactions are not ours to push.
		must(b.Insert("trips", map[string]any{"id": "b1", "title": "from b"}))(t)
		pull(t, a, b)
		if n := must(a.CountLocalTransactions(engine.HLC{}))(t); n != before+4 {
			t.Fatalf("after a peer's transaction: %d, want %d", n, before+4)
		}
		// A migration of our own in a transaction of its own.
		sch := TripsSchema()
		sch.Tables[0].Columns = append(sch.Tables[0].Columns, engine.ColumnDef{Name: "extra", Type: engine.KindText})
		a.Close()
		a2, err := engine.Open(a.store, engine.Options{Schema: sch, Clock: a.clock, LocalChangeLogOnly: localOnly})
		if err != nil {
			t.Fatal(err)
		}
		a.Engine = a2
		t.Cleanup(func() { a2.Close() })
		check("after a migration")
		if n := must(a.CountLocalTransactions(engine.HLC{}))(t); n != before+5 {
			t.Fatalf("after a migration: %d, want %d", n, before+5)
		}
	}
}
