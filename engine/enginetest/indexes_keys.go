package enginetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testIndexesAndKeys covers secondary indexes over existing rows, and the
// size limits of keys, index entries and values.
func (s *suite) testIndexesAndKeys(t *testing.T) {
	t.Run("IndexAddedOnReopenCoversExistingRows", s.testIndexOnReopen)
	t.Run("IndexFromPeerCoversExistingRows", s.testIndexFromPeer)
	t.Run("IndexValueTooLongInTransaction", s.testIndexValueTooLongInTransaction)
	t.Run("RemoteKeyTooLong", s.testRemoteKeyTooLong)
	t.Run("LocalKeyTooLong", s.testLocalKeyTooLong)
	t.Run("LargeValues", s.testLargeValues)
}

// An index declared on reopen must index the rows that already exist:
// otherwise a query the planner answers through it silently misses them.
func (s *suite) testIndexOnReopen(t *testing.T) {
	st := s.open(t)
	clk := NewManualClock(T0)
	a := must(engine.Open(st, engine.Options{Schema: notesV1(), Clock: clk}))(t)
	for i, id := range []string{"n1", "n2", "n3"} {
		must(a.Insert("notes", map[string]any{"id": id, "body": "x", "stars": i + 1}))(t)
	}
	a.Close()
	clk.Advance(10)
	a = must(engine.Open(st, engine.Options{Schema: notesV2(), Clock: clk}))(t)
	defer a.Close()
	rows := must(a.Query("notes", engine.Query{Where: []engine.Filter{{Column: "stars", Op: engine.Ge, Value: 2}}}))(t)
	if len(rows) != 2 {
		t.Fatalf("query through the index added on reopen found %d rows, want 2 (n2, n3)", len(rows))
	}
	rows = must(a.Query("notes", engine.Query{OrderBy: []engine.Order{{Column: "stars", Desc: true}}}))(t)
	if len(rows) != 3 || rows[0]["id"].Text() != "n3" {
		t.Fatalf("ordered query through the new index: %v", rows)
	}
	// The index is what a replica that had it from the start holds.
	b := s.newReplica(t, "b", notesV2(), nil)
	pull(t, b, &replica{Engine: a, store: st, clock: clk, name: "a"})
	if d := diffBuckets(DumpStore(t, st), DumpStore(t, b.store), "index"); d != "" {
		t.Fatalf("index entries differ from a replica that had the index from the start: %s", d)
	}
}

// An add_index migration from a peer indexes the receiver's existing rows.
func (s *suite) testIndexFromPeer(t *testing.T) {
	a := s.newReplica(t, "a", notesV1(), nil)
	c := s.newReplica(t, "c", notesV1(), nil)
	must(c.Insert("notes", map[string]any{"id": "c1", "body": "mine", "stars": 4}))(t)
	must(a.Insert("notes", map[string]any{"id": "a1", "body": "theirs", "stars": 5}))(t)
	pull(t, c, a) // c holds both rows, no index yet
	// b declares the index (another device on a newer app version).
	b := s.newReplica(t, "b", notesV2(), nil)
	b.clock.Advance(100)
	c.clock.Advance(100)
	pull(t, c, b)
	rows := must(c.Query("notes", engine.Query{Where: []engine.Filter{{Column: "stars", Op: engine.Ge, Value: 4}}}))(t)
	if len(rows) != 2 {
		t.Fatalf("after a peer's add_index, the query through it found %d rows, want 2: %v", len(rows), rows)
	}
	if n := must(c.Count("notes", []engine.Filter{{Column: "stars", Op: engine.Eq, Value: 4}}))(t); n != 1 {
		t.Fatalf("eq through the peer's index found %d rows, want 1", n)
	}
}

// A value too long for an index fails its statement, not the transaction
// at commit: the caller can handle the error and go on (Transact's
// contract), and what the transaction wrote otherwise commits.
func (s *suite) testIndexValueTooLongInTransaction(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t0", "title": "short"}))(t)
	long := strings.Repeat("x", 5000)
	cs, err := a.Transact(func(tx *engine.Tx) error {
		if _, err := tx.Insert("trips", map[string]any{"id": "t1", "title": long}); !errors.Is(err, engine.ErrValidation) {
			t.Errorf("insert with a too-long indexed value: %v, want a validation error", err)
		}
		if _, err := tx.Update("trips", engine.Key{"t0"}, map[string]any{"title": long}); !errors.Is(err, engine.ErrValidation) {
			t.Errorf("update to a too-long indexed value: %v, want a validation error", err)
		}
		if _, err := tx.Upsert("trips", map[string]any{"id": "t0", "title": long}); !errors.Is(err, engine.ErrValidation) {
			t.Errorf("upsert to a too-long indexed value: %v, want a validation error", err)
		}
		_, err := tx.Insert("trips", map[string]any{"id": "t2", "title": "fine"})
		return err
	})
	if err != nil {
		t.Fatalf("transaction whose failed statements were handled: %v", err)
	}
	if cs == nil || len(cs.Changes) != 8 {
		t.Fatalf("committed %v, want the 8 cells of t2", cs)
	}
	if r := must(a.Get("trips", engine.Key{"t0"}))(t); r["title"].Text() != "short" {
		t.Fatalf("t0 = %s", fmtRow(r))
	}
	if _, err := a.Get("trips", engine.Key{"t1"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("t1: %v", err)
	}
}

// A remote key longer than a local write may use is malformed input: a
// typed error, nothing written — never a kv error, nor a row that cannot be
// indexed.
func (s *suite) testRemoteKeyTooLong(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	peer := engine.SiteID{8}
	for _, n := range []int{3000, 5000} {
		cs := validSet(peer, a.clock.Now(), strings.Repeat("k", n))
		before := DumpStore(t, a.store)
		if _, err := a.ApplyChanges([]engine.ChangeSet{cs}); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("%d-byte remote key: %v, want ErrMalformed", n, err)
		}
		if d := diffStore(before, DumpStore(t, a.store)); d != "" {
			t.Errorf("%d-byte remote key wrote: %s", n, d)
		}
	}
}

// Reads and writes naming a key longer than any stored key answer with a
// typed error, not the kv store's.
func (s *suite) testLocalKeyTooLong(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	long := strings.Repeat("k", 5000)
	typed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, engine.ErrValidation) && !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s with a 5000-byte key: %v, want a validation or not-found error", what, err)
		}
	}
	_, err := a.Get("trips", engine.Key{long})
	typed("Get", err)
	_, err = a.Update("trips", engine.Key{long}, map[string]any{"days": 1})
	typed("Update", err)
	_, err = a.Delete("trips", engine.Key{long})
	typed("Delete", err)
	_, err = a.Upsert("trips", map[string]any{"id": long, "title": "x"})
	typed("Upsert", err)
	_, err = a.Transact(func(tx *engine.Tx) error { _, err := tx.Get("trips", engine.Key{long}); return err })
	typed("Tx.Get", err)
}

// Large values: a row that fits can always be updated (and, with
// resurrection, re-created after a delete) — its best-effort before-images
// must not push the stored record over the kv value limit — and a row that
// cannot fit is a typed error that writes nothing, locally and from a peer.
func (s *suite) testLargeValues(t *testing.T) {
	if s.o.Short {
		t.Skip("large values: native only")
	}
	for _, allow := range []bool{false, true} {
		a := s.newReplica(t, "a", TripsSchema(), func(o *engine.Options) { o.AllowResurrection = allow })
		big := func(b byte) []byte {
			p := make([]byte, 3<<19) // 1.5 MiB: under the local row limit
			p[0] = b
			return p
		}
		must(a.Insert("trips", map[string]any{"id": "z", "title": "t", "photo": big(1)}))(t)
		if _, err := a.Update("trips", engine.Key{"z"}, map[string]any{"photo": big(2)}); err != nil {
			t.Fatalf("allow=%v: update of a 1.5 MiB value: %v", allow, err)
		}
		if r := must(a.Get("trips", engine.Key{"z"}))(t); r["photo"].Blob()[0] != 2 {
			t.Fatal("update not visible")
		}
		if allow {
			must(a.Delete("trips", engine.Key{"z"}))(t)
			if _, err := a.Insert("trips", map[string]any{"id": "z", "title": "t", "photo": big(3)}); err != nil {
				t.Fatalf("re-insert of a 1.5 MiB row after its deletion: %v", err)
			}
		}
		before := DumpStore(t, a.store)
		if _, err := a.Insert("trips", map[string]any{"id": "y", "title": "t", "photo": make([]byte, 9<<20)}); !errors.Is(err, engine.ErrValidation) {
			t.Errorf("9 MiB value: %v, want a validation error", err)
		}
		peer := engine.SiteID{1}
		h := engine.HLC{Wall: a.clock.Now(), Site: peer}
		cs := engine.ChangeSet{SiteID: peer, HLC: h, TransactionID: h.TransactionID(), Changes: []engine.Change{{Type: engine.ColumnChange, Table: "trips",
			PK: []engine.Value{engine.Text("r")}, Column: "photo", Value: engine.Blob(make([]byte, 9<<20)), HLC: h}}}
		if _, err := a.ApplyChanges([]engine.ChangeSet{cs}); !errors.Is(err, engine.ErrValidation) && !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("9 MiB value from a peer: %v, want a typed error", err)
		}
		cs.Changes[0].Table = "nosuchtable" // held (unknown table)
		if _, err := a.ApplyChanges([]engine.ChangeSet{cs}); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("9 MiB value from a peer for an unknown table: %v, want ErrMalformed", err)
		}
		if d := diffStore(before, DumpStore(t, a.store)); d != "" {
			t.Errorf("refused large values wrote: %s", d)
		}
	}
}
