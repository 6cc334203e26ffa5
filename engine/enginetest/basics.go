package enginetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replica-sync/replica/engine"
)

func (s *suite) testBasics(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)

	row := must(a.Insert("trips", map[string]any{"title": "Lisbon", "days": 4, "tags": []string{"sea"}, "photo": []byte{0, 1, 2}, "starts": time.UnixMilli(T0 + 86_400_000)}))(t)
	id := row["id"].Text()
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		t.Fatalf("generated id %q is not a UUIDv7 (%v)", id, err)
	}
	want := engine.Row{
		"id": engine.Text(id), "title": engine.Text("Lisbon"), "budget": engine.Real(0), "days": engine.Int(4),
		"done": engine.Bool(false), "starts": engine.TimestampMillis(T0 + 86_400_000), "tags": mustJSON(t, `["sea"]`),
		"photo": engine.Blob([]byte{0, 1, 2}),
	}
	if !rowsEqual(row, want) {
		t.Fatalf("insert returned %s, want %s", fmtRow(row), fmtRow(want))
	}
	got := must(a.Get("trips", engine.Key{id}))(t)
	if !rowsEqual(got, want) {
		t.Fatalf("get returned %s, want %s", fmtRow(got), fmtRow(want))
	}

	// An update records only the columns whose value changes.
	var cs *engine.ChangeSet
	cs, err = a.Transact(func(tx *engine.Tx) error {
		_, err := tx.Update("trips", engine.Key{id}, map[string]any{"title": "Lisbon", "days": 5})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Changes) != 1 || cs.Changes[0].Column != "days" || !cs.Changes[0].Value.Equal(engine.Int(5)) {
		t.Fatalf("update facts = %+v, want one fact days=5", cs.Changes)
	}
	if !cs.Changes[0].HasPrior || !cs.Changes[0].PriorValue.Equal(engine.Int(4)) {
		t.Fatalf("update fact before-image = %v %v, want 4", cs.Changes[0].HasPrior, cs.Changes[0].PriorValue)
	}
	// An update that changes nothing records nothing and ticks nothing.
	before := must(a.Now())(t)
	cs, err = a.Transact(func(tx *engine.Tx) error {
		_, err := tx.Update("trips", engine.Key{id}, map[string]any{"days": 5})
		return err
	})
	if err != nil || cs != nil {
		t.Fatalf("no-op update: cs=%v err=%v, want nil, nil", cs, err)
	}
	if after := must(a.Now())(t); after != before {
		t.Fatalf("no-op update moved the clock from %s to %s", before, after)
	}

	// Insert of an existing key conflicts; upsert updates it.
	if _, err := a.Insert("trips", map[string]any{"id": id, "title": "again"}); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("insert existing: %v, want ErrConflict", err)
	}
	up := must(a.Upsert("trips", map[string]any{"id": id, "budget": 120.5}))(t)
	if !up["budget"].Equal(engine.Real(120.5)) || !up["title"].Equal(engine.Text("Lisbon")) {
		t.Fatalf("upsert existing returned %s", fmtRow(up))
	}
	ins := must(a.Upsert("trips", map[string]any{"id": "t2", "title": "Porto"}))(t)
	if !ins["done"].Equal(engine.Bool(false)) {
		t.Fatalf("upsert new row returned %s, want defaults filled", fmtRow(ins))
	}

	// Update of a missing row.
	if _, err := a.Update("trips", engine.Key{"nope"}, map[string]any{"days": 1}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("update missing: %v, want ErrNotFound", err)
	}

	// Delete is soft; a second delete reports false; the key stays dead.
	if ok := must(a.Delete("trips", engine.Key{"t2"}))(t); !ok {
		t.Fatal("delete of a live row reported false")
	}
	if ok := must(a.Delete("trips", engine.Key{"t2"}))(t); ok {
		t.Fatal("delete of a deleted row reported true")
	}
	if _, err := a.Get("trips", engine.Key{"t2"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	if _, err := a.Insert("trips", map[string]any{"id": "t2", "title": "Porto"}); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("re-insert deleted (delete wins): %v, want ErrConflict", err)
	}

	// Composite keys, and a key change: tombstone at the old key, full row
	// at the new one.
	must(a.Insert("stops", map[string]any{"trip": id, "pos": 1, "name": "Alfama"}))(t)
	cs, err = a.Transact(func(tx *engine.Tx) error {
		_, err := tx.Update("stops", engine.Key{id, 1}, map[string]any{"pos": 2})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var dels, cols int
	for _, c := range cs.Changes {
		switch c.Type {
		case engine.RowDeletion:
			dels++
			if !c.PK[1].Equal(engine.Int(1)) || c.PriorRow["name"].Text() != "Alfama" {
				t.Fatalf("key change deletion = %+v", c)
			}
		case engine.ColumnChange:
			cols++
			if !c.PK[1].Equal(engine.Int(2)) {
				t.Fatalf("key change column fact at key %v", c.PK)
			}
		}
	}
	if dels != 1 || cols != 3 {
		t.Fatalf("key change recorded %d deletions and %d column facts, want 1 and 3", dels, cols)
	}
	if _, err := a.Get("stops", engine.Key{id, 1}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("old key after move: %v", err)
	}
	if r := must(a.Get("stops", engine.Key{id, 2}))(t); r["name"].Text() != "Alfama" {
		t.Fatalf("moved row = %s", fmtRow(r))
	}

	// Unknown table.
	if _, err := a.Insert("nope", map[string]any{"x": 1}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("insert into unknown table: %v", err)
	}

	// After Close every call fails with ErrClosed.
	a.Close()
	if _, err := a.Get("trips", engine.Key{id}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if _, err := a.Insert("trips", map[string]any{"title": "x"}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("insert after close: %v", err)
	}
}

func mustJSON(t testing.TB, s string) engine.Value {
	v, err := engine.JSONValue([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (s *suite) testValidation(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	cases := []struct {
		name   string
		values map[string]any
		column string
	}{
		{"text into integer", map[string]any{"title": "x", "days": "42"}, "days"},
		{"fraction into integer", map[string]any{"title": "x", "days": 1.5}, "days"},
		{"unknown column", map[string]any{"title": "x", "color": "red"}, "color"},
		{"missing not null", map[string]any{"days": 3}, "title"},
		{"null into not null", map[string]any{"title": nil}, "title"},
		{"number into boolean", map[string]any{"title": "x", "done": 1}, "done"},
		{"string into blob", map[string]any{"title": "x", "photo": "abc"}, "photo"},
	}
	for _, c := range cases {
		_, err := a.Insert("trips", c.values)
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, engine.ErrValidation) {
			t.Errorf("%s: err = %v, want a *ValidationError", c.name, err)
			continue
		}
		if ve.Table != "trips" || ve.Column != c.column || ve.Reason == "" {
			t.Errorf("%s: error names %q.%q (%q), want trips.%s", c.name, ve.Table, ve.Column, ve.Reason, c.column)
		}
	}
	// A float with no fraction into an integer column is accepted.
	r := must(a.Insert("trips", map[string]any{"title": "x", "days": 3.0}))(t)
	if !r["days"].Equal(engine.Int(3)) {
		t.Fatalf("days = %s, want integer 3", r["days"])
	}
	// Nothing of the invalid writes was stored.
	rows := must(a.Query("trips", engine.Query{}))(t)
	if len(rows) != 1 {
		t.Fatalf("%d rows after invalid inserts, want 1", len(rows))
	}
	// Coercion when the schema asks for it.
	sc := &engine.Schema{Tables: []engine.TableDef{{Name: "n", Columns: []engine.ColumnDef{{Name: "v", Type: engine.KindInteger, Coerce: true}}}}}
	b := s.newReplica(t, "b", sc, nil)
	r = must(b.Insert("n", map[string]any{"v": "42"}))(t)
	if !r["v"].Equal(engine.Int(42)) {
		t.Fatalf("coerced v = %s, want 42", r["v"])
	}
}

func (s *suite) testTransactions(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	// A multi-statement transaction is one HLC tick, opSeq in write order.
	cs, err := a.Transact(func(tx *engine.Tx) error {
		if _, err := tx.Insert("trips", map[string]any{"id": "t1", "title": "A"}); err != nil {
			return err
		}
		if _, err := tx.Insert("stops", map[string]any{"trip": "t1", "pos": 1, "name": "x"}); err != nil {
			return err
		}
		// Reads see the transaction's own writes.
		r, err := tx.Get("trips", engine.Key{"t1"})
		if err != nil || r["title"].Text() != "A" {
			t.Errorf("read own write: %v %v", r, err)
		}
		rows, err := tx.Query("stops", engine.Query{Where: []engine.Filter{{Column: "trip", Op: engine.Eq, Value: "t1"}}})
		if err != nil || len(rows) != 1 {
			t.Errorf("query own write: %d rows, %v", len(rows), err)
		}
		_, err = tx.Update("trips", engine.Key{"t1"}, map[string]any{"title": "B"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Changes) != 8+3 {
		t.Fatalf("transaction has %d facts, want 11 (8 trip cells, 3 stop cells)", len(cs.Changes))
	}
	base := cs.Changes[0].HLC
	seen := map[uint32]bool{}
	for i, c := range cs.Changes {
		if !c.HLC.SameTransaction(base) {
			t.Fatalf("fact %d has HLC %s, not of transaction %s", i, c.HLC, base)
		}
		if seen[c.HLC.OpSeq] {
			t.Fatalf("opSeq %d twice", c.HLC.OpSeq)
		}
		seen[c.HLC.OpSeq] = true
		if i > 0 && !cs.Changes[i-1].HLC.Less(c.HLC) {
			t.Fatalf("facts not in opSeq order at %d", i)
		}
		if c.Column == "title" && c.Value.Text() != "B" {
			t.Fatalf("title fact = %s, want the last write B", c.Value)
		}
	}
	if cs.HLC != cs.Changes[len(cs.Changes)-1].HLC || cs.TransactionID != base.TransactionID() {
		t.Fatalf("ChangeSet hlc/id = %s/%s", cs.HLC, cs.TransactionID)
	}

	// A rolled-back transaction writes nothing and consumes no HLC.
	before := must(a.Now())(t)
	dump := DumpStore(t, a.store)
	boom := errors.New("boom")
	_, err = a.Transact(func(tx *engine.Tx) error {
		if _, err := tx.Insert("trips", map[string]any{"id": "t9", "title": "gone"}); err != nil {
			return err
		}
		if _, err := tx.Delete("trips", engine.Key{"t1"}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("rollback returned %v, want the function's error unchanged", err)
	}
	if d := diffStore(dump, DumpStore(t, a.store)); d != "" {
		t.Fatalf("rolled-back transaction left state behind: %s", d)
	}
	if after := must(a.Now())(t); after != before {
		t.Fatalf("rolled-back transaction moved the clock %s → %s", before, after)
	}
	next := must(a.Insert("trips", map[string]any{"title": "after"}))(t)
	_ = next
	sets := must(a.ChangesSince(cs.HLC, 0, engine.ChangesFilter{}))(t)
	if len(sets) != 1 || !cs.HLC.Less(sets[0].HLC) {
		t.Fatalf("next transaction: %d sets", len(sets))
	}
	if w := sets[0].HLC; w.Wall == before.Wall && w.Counter != before.Counter+1 {
		t.Fatalf("next transaction's HLC %s is not the tick after %s", w, before)
	}
}

// Two engines over one store (two tabs over one IndexedDB database) never
// mint the same HLC, whatever their clocks say.
func (s *suite) testTwoEnginesOneStore(t *testing.T) {
	st := s.open(t)
	clk1, clk2 := NewManualClock(T0), NewManualClock(T0-5000)
	e1 := must(engine.Open(st, engine.Options{Schema: TripsSchema(), Clock: clk1}))(t)
	e2 := must(engine.Open(st, engine.Options{Schema: TripsSchema(), Clock: clk2}))(t)
	defer e1.Close()
	defer e2.Close()
	if e1.SiteID() != e2.SiteID() {
		t.Fatalf("two engines over one store have site ids %s and %s", e1.SiteID(), e2.SiteID())
	}
	seen := map[string]bool{}
	var last engine.HLC
	for i := 0; i < 200; i++ {
		e := e1
		if i%3 == 1 {
			e = e2
		}
		cs, err := e.Transact(func(tx *engine.Tx) error {
			_, err := tx.Insert("trips", map[string]any{"title": "x"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		id := cs.TransactionID
		if seen[id] {
			t.Fatalf("transaction id %s minted twice", id)
		}
		seen[id] = true
		if !last.Less(cs.HLC) {
			t.Fatalf("HLC went from %s to %s", last, cs.HLC)
		}
		last = cs.HLC
		if i%50 == 0 {
			clk2.Set(T0 - 60_000) // a tab with a clock far behind
		}
	}
	// A restart (a new engine) never mints a lower HLC, even with the wall
	// clock moved back.
	clk3 := NewManualClock(T0 - 3_600_000)
	e3 := must(engine.Open(st, engine.Options{Schema: TripsSchema(), Clock: clk3}))(t)
	defer e3.Close()
	cs := must(e3.Transact(func(tx *engine.Tx) error {
		_, err := tx.Insert("trips", map[string]any{"title": "late"})
		return err
	}))(t)
	if !last.Less(cs.HLC) {
		t.Fatalf("restart with a backward clock minted %s after %s", cs.HLC, last)
	}
}

func (s *suite) testLimits(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	long := strings.Repeat("x", 5000)
	if _, err := a.Insert("trips", map[string]any{"id": long, "title": "t"}); !errors.Is(err, engine.ErrValidation) {
		t.Fatalf("5000-byte key: %v, want a validation error", err)
	}
	if _, err := a.Insert("trips", map[string]any{"title": long}); !errors.Is(err, engine.ErrValidation) {
		t.Fatalf("5000-byte indexed value: %v, want a validation error", err)
	}
	// A long value in a column without an index is fine.
	must(a.Insert("trips", map[string]any{"title": "t", "tags": []string{long}}))(t)
	if n := must(a.Count("trips", nil))(t); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// Staged transactions: previews now, one transaction at Commit.
func (s *suite) testStaged(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	st := a.Stage()
	trip := must(st.Insert("trips", map[string]any{"title": "Rome"}))(t)
	id := trip["id"].Text()
	if id == "" || !trip["done"].Equal(engine.Bool(false)) {
		t.Fatalf("staged insert preview %s", fmtRow(trip))
	}
	if _, err := a.Get("trips", engine.Key{id}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal("staged insert visible before commit")
	}
	if r := must(st.Get("trips", engine.Key{id}))(t); r["title"].Text() != "Rome" {
		t.Fatalf("staged get %s", fmtRow(r))
	}
	up := must(st.Update("trips", engine.Key{id}, map[string]any{"days": 3}))(t)
	if up["days"].Int() != 3 || up["title"].Text() != "Rome" {
		t.Fatalf("staged update preview %s", fmtRow(up))
	}
	must(st.Insert("stops", map[string]any{"trip": id, "pos": 1}))(t)
	if _, err := st.Insert("stops", map[string]any{"trip": id, "pos": 1}); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("second staged insert of one key: %v", err)
	}
	if _, err := st.Insert("stops", map[string]any{"trip": id}); !errors.Is(err, engine.ErrValidation) {
		t.Fatalf("invalid staged insert: %v", err)
	}
	rows := must(st.Query("trips", engine.Query{Where: []engine.Filter{{Column: "days", Op: engine.Eq, Value: 3}}}))(t)
	if len(rows) != 1 || rows[0]["id"].Text() != id {
		t.Fatalf("staged query: %v", rows)
	}
	if n := must(a.Count("trips", nil))(t); n != 0 {
		t.Fatalf("staged query leaked %d rows into the store", n)
	}
	cs := must(st.Commit())(t)
	if len(cs.Changes) != 8+3 || cs.HLC.Base() != cs.Changes[0].HLC.Base() {
		t.Fatalf("commit wrote %d facts", len(cs.Changes))
	}
	got := must(a.Get("trips", engine.Key{id}))(t)
	if got["days"].Int() != 3 {
		t.Fatalf("committed row %s", fmtRow(got))
	}
	if _, err := st.Insert("trips", map[string]any{"title": "x"}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("staged after commit: %v", err)
	}
	// A staged insert's preview is the row as committed (defaults filled),
	// and the caller's own: changing it changes nothing written.
	stp := a.Stage()
	pre := must(stp.Insert("trips", map[string]any{"title": "Lisbon"}))(t)
	want := fmtRow(pre)
	pre["title"] = engine.Text("changed")
	must(stp.Commit())(t)
	if got := fmtRow(must(a.Get("trips", engine.Key{pre["id"].Text()}))(t)); got != want {
		t.Fatalf("staged insert previewed %s, committed %s", want, got)
	}
	// A statement that previewed fine fails at commit when another writer
	// got there first; nothing of the staged transaction is written.
	st2 := a.Stage()
	must(st2.Insert("trips", map[string]any{"id": "race", "title": "mine"}))(t)
	must(st2.Insert("trips", map[string]any{"id": "other", "title": "other"}))(t)
	must(a.Insert("trips", map[string]any{"id": "race", "title": "theirs"}))(t)
	if _, err := st2.Commit(); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("commit after a concurrent insert: %v", err)
	}
	if _, err := a.Get("trips", engine.Key{"other"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal("failed commit wrote part of the transaction")
	}
	// Discard writes nothing.
	st3 := a.Stage()
	must(st3.Insert("trips", map[string]any{"id": "gone", "title": "x"}))(t)
	st3.Discard()
	if _, err := st3.Commit(); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("commit after discard: %v", err)
	}
	if _, err := a.Get("trips", engine.Key{"gone"}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal("discarded statement written")
	}
}
