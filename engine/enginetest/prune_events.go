package enginetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
)

func (s *suite) testPrune(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "old", "title": "x"}))(t)
	must(a.Insert("trips", map[string]any{"id": "kept", "title": "y"}))(t)
	must(a.Delete("trips", engine.Key{"old"}))(t)
	peer := engine.SiteID{4}
	held := engine.ChangeSet{SiteID: peer, HLC: engine.HLC{Wall: T0, Site: peer}, TransactionID: engine.HLC{Wall: T0, Site: peer}.TransactionID(),
		Changes: []engine.Change{{Type: engine.ColumnChange, Table: "gone", PK: []engine.Value{engine.Text("g")}, Column: "v", Value: engine.Int(1), HLC: engine.HLC{Wall: T0, Site: peer}}}}
	must(a.ApplyChanges([]engine.ChangeSet{held}))(t)
	// Within the horizon nothing goes.
	a.clock.Advance(29 * 24 * 3600 * 1000)
	if r := must(a.Prune())(t); r != (engine.PruneResult{}) {
		t.Fatalf("prune inside the horizon: %+v", r)
	}
	if r := must(a.PruneTombstones(horizonOf(a)))(t); r != (engine.PruneResult{}) {
		t.Fatalf("PruneTombstones inside the horizon: %+v", r)
	}
	a.clock.Advance(2 * 24 * 3600 * 1000)
	// Prune drops the held change, not the tombstone: tombstones go only
	// at an explicit bound (docs/design.md § Retention).
	r := must(a.Prune())(t)
	if r.Tombstones != 0 || r.Rows != 0 || r.Held != 1 {
		t.Fatalf("prune past the horizon: %+v, want 1 held change and no tombstone", r)
	}
	if d := DumpStore(t, a.store); len(d.Buckets["tombs"]) != 1 {
		t.Fatalf("after Prune: %d tombstones, want 1", len(d.Buckets["tombs"]))
	}
	r = must(a.PruneTombstones(horizonOf(a)))(t)
	if r.Tombstones != 1 || r.Rows != 1 || r.Held != 0 {
		t.Fatalf("PruneTombstones past the horizon: %+v, want 1 tombstone, 1 row", r)
	}
	d := DumpStore(t, a.store)
	// "quarantine": the held changes' bucket, under its stored name.
	if len(d.Buckets["rows"]) != 1 || len(d.Buckets["quarantine"]) != 0 {
		t.Fatalf("after prune: %d row records, %d held", len(d.Buckets["rows"]), len(d.Buckets["quarantine"]))
	}
	for _, cs := range must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		for _, c := range cs.Changes {
			if c.Type == engine.RowDeletion {
				t.Fatal("pruned tombstone still in the change log")
			}
		}
	}
	if _, err := a.Get("kept", engine.Key{"kept"}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("get from unknown table: %v", err)
	}
	must(a.Get("trips", engine.Key{"kept"}))(t)
}

func (s *suite) testEvents(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	var evA, evB []engine.Event
	unsubA := a.Subscribe(func(ev engine.Event) { evA = append(evA, ev) })
	b.Subscribe(func(ev engine.Event) { evB = append(evB, ev) })
	must(a.Transact(func(tx *engine.Tx) error {
		if _, err := tx.Insert("trips", map[string]any{"id": "x", "title": "t"}); err != nil {
			return err
		}
		_, err := tx.Insert("stops", map[string]any{"trip": "x", "pos": 1})
		return err
	}))(t)
	if len(evA) != 1 || evA[0].Type != engine.LocalChange || len(evA[0].Tables) != 2 || evA[0].Tables[0] != "stops" || evA[0].Tables[1] != "trips" {
		t.Fatalf("local events %+v", evA)
	}
	// A failed or empty transaction emits nothing.
	a.Transact(func(tx *engine.Tx) error { return errors.New("no") })
	a.Transact(func(tx *engine.Tx) error { return nil })
	if len(evA) != 1 {
		t.Fatalf("%d events after failed/empty transactions", len(evA))
	}
	pull(t, b, a)
	var remote int
	for _, ev := range evB {
		if ev.Type == engine.RemoteChange {
			remote++
			if ev.ChangeSet == nil || ev.ChangeSet.SiteID != a.SiteID() {
				t.Fatalf("remote event %+v", ev)
			}
		}
	}
	if remote != 2 { // a's schema transaction and its data transaction
		t.Fatalf("%d remote events, want 2", remote)
	}
	// A concurrent edit of the same cell is reported as a conflict.
	a.clock.Advance(10)
	b.clock.Advance(20)
	must(a.Update("trips", engine.Key{"x"}, map[string]any{"title": "from a"}))(t)
	must(b.Update("trips", engine.Key{"x"}, map[string]any{"title": "from b"}))(t)
	evB = nil
	pull(t, b, a)
	var conflicts []*engine.Conflict
	for _, ev := range evB {
		if ev.Type == engine.ConflictResolved {
			conflicts = append(conflicts, ev.Conflict)
		}
	}
	if len(conflicts) != 1 || conflicts[0].RemoteWon || conflicts[0].LocalValue.Text() != "from b" || conflicts[0].RemoteValue.Text() != "from a" || !conflicts[0].HasRemotePrior {
		t.Fatalf("conflicts %+v", conflicts)
	}
	// A re-delivery is not a remote change.
	evB = nil
	pull(t, b, a)
	for _, ev := range evB {
		if ev.Type == engine.RemoteChange {
			t.Fatalf("re-delivery emitted %+v", ev)
		}
	}
	unsubA()
	n := len(evA)
	must(a.Insert("trips", map[string]any{"title": "after"}))(t)
	if len(evA) != n {
		t.Fatal("event delivered after unsubscribe")
	}
	// A custom resolver decides conflicts.
	c := s.newReplica(t, "c", TripsSchema(), func(o *engine.Options) { o.Resolver = engine.LocalWins })
	must(c.Insert("trips", map[string]any{"id": "x", "title": "mine"}))(t)
	pull(t, c, a)
	if got := must(c.Get("trips", engine.Key{"x"}))(t)["title"].Text(); got != "mine" {
		t.Fatalf("LocalWins kept %q", got)
	}
}

// LocalChangeLogOnly: a replica that records only its own transactions in
// its change log (browser clients, the relay) still merges everything, and
// serves exactly its own transactions.
func (s *suite) testLocalChangeLogOnly(t *testing.T) {
	mod := func(o *engine.Options) { o.LocalChangeLogOnly = true }
	a := s.newReplica(t, "a", TripsSchema(), mod)
	b := s.newReplica(t, "b", TripsSchema(), mod)
	full := s.newReplica(t, "full", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "a1", "title": "from a"}))(t)
	must(b.Insert("trips", map[string]any{"id": "b1", "title": "from b"}))(t)
	pull(t, a, b)
	pull(t, b, a)
	for _, cs := range must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		if cs.SiteID != a.SiteID() {
			t.Fatalf("a serves a peer's transaction %s", cs.TransactionID)
		}
	}
	rep := must(engine.InspectChangeLog(a.store))(t)
	if rep.Dead != 0 {
		t.Fatalf("change log report %+v", rep)
	}
	// Each replica's own facts reach a third through it.
	pull(t, full, a)
	pull(t, full, b)
	sameVisible(t, a, full, "trips")
	sameVisible(t, b, full, "trips")
	if d := diffBuckets(DumpStore(t, a.store), DumpStore(t, b.store), "rows", "index", "tombs"); d != "" {
		t.Fatalf("a and b hold different rows: %s", d)
	}
	// Deleting a peer's row, and pruning its tombstone later, works without
	// a log of the peer's facts.
	must(a.Delete("trips", engine.Key{"b1"}))(t)
	a.clock.Advance(31 * 24 * 3600 * 1000)
	r := must(a.PruneTombstones(horizonOf(a)))(t)
	if r.Tombstones != 1 {
		t.Fatalf("prune: %+v", r)
	}
}

// Own change-log entries are written once per local transaction and not
// rewritten when later writes supersede their facts; ChangesSince returns
// only what is still there, and Prune tidies entries past the horizon.
func (s *suite) testOwnLogEntries(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	cs := must(a.Transact(func(tx *engine.Tx) error {
		for i := 0; i < 50; i++ {
			if _, err := tx.Insert("trips", map[string]any{"id": fmt.Sprint("t", i), "title": "x"}); err != nil {
				return err
			}
		}
		return nil
	}))(t)
	raw := func() int {
		n := 0
		a.store.View(func(tx kv.Tx) error {
			return tx.Scan("log", kv.Range{KeysOnly: true}, func(_, _ []byte) bool { n++; return true })
		})
		return n
	}
	if n := raw(); n != 1 {
		t.Fatalf("a 50-row transaction wrote %d change-log entries, want 1", n)
	}
	for i := 0; i < 50; i += 2 {
		must(a.Delete("trips", engine.Key{fmt.Sprint("t", i)}))(t)
	}
	got := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	var first *engine.ChangeSet
	for i := range got {
		if got[i].TransactionID == cs.TransactionID {
			first = &got[i]
		}
	}
	if first == nil || len(first.Changes) != 25*8 {
		t.Fatalf("the import transaction comes back with %v facts, want those of its 25 live rows", first)
	}
	rep := must(engine.InspectChangeLog(a.store))(t)
	if rep.Stale != 25 {
		t.Fatalf("report %+v, want 25 stale rows listed", rep)
	}
	a.clock.Advance(31 * 24 * 3600 * 1000)
	r := must(a.PruneTombstones(horizonOf(a)))(t)
	r.LogEntries = must(a.Prune())(t).LogEntries
	if r.Tombstones != 25 || r.LogEntries < 1 {
		t.Fatalf("prune %+v", r)
	}
	if rep := must(engine.InspectChangeLog(a.store))(t); rep.Stale != 0 || rep.Dead != 0 {
		t.Fatalf("after prune: %+v", rep)
	}
	if n := must(a.Count("trips", nil))(t); n != 25 {
		t.Fatalf("%d rows after prune", n)
	}
}

// horizonOf is the tombstone bound at r's clock minus the default retention:
// what a relay's horizon mark says when its clock agrees with r's.
func horizonOf(r *replica) uint64 {
	return r.clock.Now() - uint64(engine.DefaultRetention.Milliseconds())
}
