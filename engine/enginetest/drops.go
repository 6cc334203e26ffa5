package enginetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testDropKinds: what each drop does on the replica that issues it and on
// a peer, whichever comes first, the drop or the data (docs/design.md §
// Schema migrations).
func (s *suite) testDropKinds(t *testing.T) {
	t.Run("DropIndex", s.testDropIndex)
	t.Run("DropColumn", s.testDropColumn)
	t.Run("DropTable", s.testDropTable)
	t.Run("Malformed", s.testDropMalformed)
}

// testDropMalformed: a peer's drop migration of the wrong shape is
// refused (ErrMalformed) and writes nothing.
func (s *suite) testDropMalformed(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	site := engine.SiteID{7, 7}
	h := engine.HLC{Wall: T0 - 10, Site: site}
	for _, m := range []engine.SchemaMigration{
		{Type: engine.DropColumn, TableName: "trips"},
		{Type: engine.DropColumn, TableName: "trips", Name: "bad name!"},
		{Type: engine.DropIndex, TableName: "trips", Name: "by_title", Index: &engine.IndexDef{Name: "by_title", Columns: []string{"title"}}},
		{Type: engine.DropTable, TableName: "trips", Name: "title"},
		{Type: engine.AddColumn, TableName: "trips", Name: "x", Column: &engine.ColumnDef{Name: "x", Type: engine.KindText}},
		{Type: engine.DropTable, TableName: ""},
	} {
		m.HLC = h
		cs := engine.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h, Migrations: []engine.SchemaMigration{m}}
		before := DumpStore(t, a.store)
		if _, err := a.ApplyChanges([]engine.ChangeSet{cs}); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("%+v: %v, want ErrMalformed", m, err)
		}
		if d := diffStore(before, DumpStore(t, a.store)); d != "" {
			t.Errorf("%+v wrote: %s", m, d)
		}
	}
}

// checkViaRelay: a schema-less replica (the relay's merged replica) given
// the ChangeSets of reps, a's first, in reverse order of their HLCs (data
// before the migrations that define or drop its table), serves a snapshot
// from which a fresh replica ends equal to reps[0].
func (s *suite) checkViaRelay(t *testing.T, reps ...*replica) {
	t.Helper()
	rl := s.newReplica(t, "relay", nil, func(o *engine.Options) { o.LocalChangeLogOnly = true })
	for _, r := range reps {
		sets := must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t)
		for i := len(sets) - 1; i >= 0; i-- {
			must(rl.ApplyChanges(sets[i : i+1]))(t)
		}
	}
	for _, tb := range must(rl.Schema())(t).Tables {
		if want := schemaOf(t, reps[0], tb.Name); want == nil || !slices.Equal(columnNames(want), columnNames(&tb)) {
			t.Fatalf("the relay holds table %s %v, want %v", tb.Name, columnNames(&tb), want)
		}
	}
	f := s.newReplica(t, "fresh-from-relay", TripsSchema(), nil)
	for _, c := range collect(t, rl, engine.SnapshotOptions{ChunkRows: 1}) {
		if _, err := f.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("snapshot from the relay: %v", err)
		}
	}
	pull(t, f, reps[0])
	pull(t, reps[0], f)
	if d := diffDumps(DumpStore(t, reps[0].store), DumpStore(t, f.store)); d != "" {
		t.Fatalf("%s and a replica bootstrapped from the relay: %s", reps[0].name, d)
	}
}

func schemaOf(t testing.TB, r *replica, table string) *engine.TableDef {
	t.Helper()
	for _, tb := range must(r.Schema())(t).Tables {
		if tb.Name == table {
			return &tb
		}
	}
	return nil
}

func indexNames(d *engine.TableDef) []string {
	var out []string
	for _, ix := range d.Indexes {
		out = append(out, ix.Name)
	}
	return out
}

func columnNames(d *engine.TableDef) []string {
	var out []string
	for _, c := range d.Columns {
		out = append(out, c.Name)
	}
	return out
}

// ownMigrations counts the migrations r's own change log carries.
func ownMigrations(t testing.TB, r *replica) int {
	n := 0
	for _, cs := range must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t) {
		n += len(cs.Migrations)
	}
	return n
}

func (s *suite) testDropIndex(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	for _, id := range []string{"x", "y"} {
		must(a.Insert("trips", map[string]any{"id": id, "title": "T" + id, "days": 2}))(t)
	}
	pull(t, b, a)
	a.clock.Advance(10)
	if err := a.DropIndex("trips", "by_title"); err != nil {
		t.Fatal(err)
	}
	var se *engine.SchemaError
	if err := a.DropIndex("trips", "by_title"); !errors.As(err, &se) || !errors.Is(err, engine.ErrSchema) {
		t.Fatalf("second drop: %v, want a *SchemaError", err)
	}
	if err := a.DropIndex("nope", "by_title"); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("drop in unknown table: %v", err)
	}
	if got := indexNames(schemaOf(t, a, "trips")); !slices.Equal(got, []string{"by_done_days"}) {
		t.Fatalf("indexes after the drop: %v", got)
	}
	// The peer learns it; the rows it holds lose their entries; a query
	// on the column still answers (a scan).
	pull(t, b, a)
	pull(t, a, b)
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("after the drop: %s", d)
	}
	if rows := must(b.Query("trips", engine.Query{Where: []engine.Filter{{Column: "title", Op: engine.Eq, Value: "Tx"}}}))(t); len(rows) != 1 {
		t.Fatalf("query on the dropped index's column: %v", rows)
	}
	// Most destructive wins: a replica that declares the index later (a
	// higher HLC) does not bring it back, nor does a re-open.
	c := s.newReplica(t, "c", TripsSchema(), nil)
	c.clock.Advance(1000)
	pull(t, a, c)
	pull(t, c, a)
	for _, r := range []*replica{a, c} {
		if got := indexNames(schemaOf(t, r, "trips")); slices.Contains(got, "by_title") {
			t.Fatalf("%s: by_title came back: %v", r.name, got)
		}
	}
	s.checkViaRelay(t, a, b, c)
	before := ownMigrations(t, a)
	a2 := must(engine.Open(a.store, engine.Options{Schema: TripsSchema(), Clock: a.clock}))(t)
	defer a2.Close()
	if got := ownMigrations(t, &replica{Engine: a2}); got != before {
		t.Fatalf("re-open recorded %d migrations, want none", got-before)
	}
}

func (s *suite) testDropColumn(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "x", "title": "X", "days": 2, "budget": 5.0}))(t)
	must(a.Update("trips", engine.Key{"x"}, map[string]any{"days": 3}))(t)
	must(a.Insert("trips", map[string]any{"id": "y", "title": "Y", "days": 4}))(t)
	must(a.Delete("trips", engine.Key{"y"}))(t) // a tombstone whose prior row holds days
	pull(t, b, a)
	a.clock.Advance(10)
	var se *engine.SchemaError
	if err := a.DropColumn("trips", "id"); !errors.As(err, &se) {
		t.Fatalf("dropping a key column: %v, want a *SchemaError", err)
	}
	if err := a.DropColumn("trips", "nope"); !errors.As(err, &se) {
		t.Fatalf("dropping an unknown column: %v, want a *SchemaError", err)
	}
	// b writes the column concurrently; it reaches a after the drop.
	b.clock.Advance(20)
	must(b.Update("trips", engine.Key{"x"}, map[string]any{"days": 9, "title": "X2"}))(t)
	if err := a.DropColumn("trips", "days"); err != nil {
		t.Fatal(err)
	}
	d := schemaOf(t, a, "trips")
	if slices.Contains(columnNames(d), "days") || slices.Contains(indexNames(d), "by_done_days") {
		t.Fatalf("after the drop: columns %v, indexes %v", columnNames(d), indexNames(d))
	}
	row := must(a.Get("trips", engine.Key{"x"}))(t)
	if _, ok := row["days"]; ok || row["budget"].Real() != 5 {
		t.Fatalf("row after the drop: %v", row)
	}
	// Writes naming it are refused; an insert through the declaration
	// that still lists it writes the other columns.
	if _, err := a.Update("trips", engine.Key{"x"}, map[string]any{"days": 1}); err == nil {
		t.Fatal("update of a dropped column succeeded")
	}
	if _, err := a.Insert("trips", map[string]any{"id": "z", "title": "Z", "days": 1}); err == nil {
		t.Fatal("insert naming a dropped column succeeded")
	}
	if _, err := a.Transact(func(tx *engine.Tx) error {
		_, err := tx.Insert("trips", map[string]any{"id": "z", "title": "Z", "days": 1})
		return err
	}); err == nil {
		t.Fatal("insert (Transact) naming a dropped column succeeded")
	}
	if _, err := a.Stage().Insert("trips", map[string]any{"id": "z", "title": "Z", "days": 1}); err == nil {
		t.Fatal("staged insert naming a dropped column succeeded")
	}
	st := a.Stage()
	must(st.Insert("trips", map[string]any{"id": "w", "title": "W"}))(t)
	must(st.Commit())(t)
	if got := must(a.Get("trips", engine.Key{"w"}))(t); got == nil || got["title"].Text() != "W" {
		t.Fatalf("staged insert: %v", got)
	}
	row = must(a.Insert("trips", map[string]any{"id": "z", "title": "Z"}))(t)
	if _, ok := row["days"]; ok {
		t.Fatalf("inserted row: %v", row)
	}
	res := pull(t, a, b)
	if res.Held != 0 || res.Skipped == 0 {
		t.Fatalf("pulling b's write of the dropped column: %+v, want it skipped (discarded), not held", res)
	}
	if got := must(a.Get("trips", engine.Key{"x"}))(t); got["title"].Text() != "X2" {
		t.Fatalf("the same ChangeSet's other column: %v", got)
	}
	pull(t, b, a)
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("after the exchange: %s", d)
	}
	for _, cs := range must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		for _, c := range cs.Changes {
			if c.Column == "days" || c.PriorRow["days"] != (engine.Value{}) {
				t.Fatalf("ChangesSince carries the dropped column: %+v", c)
			}
		}
	}
	// A replica that held the column's changes (it did not know the
	// column yet) drops them with the column.
	c := s.newReplica(t, "c", &engine.Schema{Tables: []engine.TableDef{{Name: "trips", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "title", Type: engine.KindText}}}}}, nil)
	var data []engine.ChangeSet
	for _, cs := range must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		if len(cs.Migrations) == 0 {
			data = append(data, cs)
		}
	}
	if res := must(c.ApplyChanges(data))(t); res.Held == 0 {
		t.Fatalf("c holds nothing: %+v", res)
	}
	pull(t, c, a)
	pull(t, c, b)
	pull(t, a, c)
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, c.store)); d != "" {
		t.Fatalf("a and c: %s", d)
	}
	s.checkViaRelay(t, a, b, c)
}

func (s *suite) testDropTable(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	must(a.Insert("stops", map[string]any{"trip": "x", "pos": 1, "name": "A"}))(t)
	must(a.Insert("stops", map[string]any{"trip": "x", "pos": 2}))(t)
	must(a.Delete("stops", engine.Key{"x", 2}))(t)
	must(a.Insert("trips", map[string]any{"id": "x", "title": "X"}))(t)
	snap := collect(t, a, engine.SnapshotOptions{}) // taken before the drop
	pull(t, b, a)
	b.clock.Advance(20)
	must(b.Insert("stops", map[string]any{"trip": "x", "pos": 3}))(t) // concurrent with the drop
	a.clock.Advance(10)
	if err := a.DropTable("stops"); err != nil {
		t.Fatal(err)
	}
	if err := a.DropTable("stops"); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("second drop: %v", err)
	}
	if _, err := a.Query("stops", engine.Query{}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("query of a dropped table: %v", err)
	}
	if _, err := a.Insert("stops", map[string]any{"trip": "x", "pos": 9}); !errors.Is(err, engine.ErrUnknownTable) || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("insert into a dropped table: %v", err)
	}
	res := pull(t, a, b)
	if res.Held != 0 || res.Skipped == 0 {
		t.Fatalf("pulling b's write to the dropped table: %+v, want it skipped", res)
	}
	pull(t, b, a)
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("after the exchange: %s", d)
	}
	for _, cs := range must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		for _, c := range cs.Changes {
			if c.Table == "stops" {
				t.Fatalf("ChangesSince carries the dropped table: %+v", c)
			}
		}
	}
	// A snapshot taken before the drop, applied after it: its rows are
	// discarded. A re-open declaring the table creates nothing.
	for _, c := range snap {
		if _, err := b.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("old snapshot: %v", err)
		}
	}
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("after an old snapshot: %s", d)
	}
	before := ownMigrations(t, b)
	b2 := must(engine.Open(b.store, engine.Options{Schema: TripsSchema(), Clock: b.clock}))(t)
	defer b2.Close()
	if got := ownMigrations(t, &replica{Engine: b2}); got != before {
		t.Fatalf("re-open recorded %d migrations, want none", got-before)
	}
	if schemaOf(t, &replica{Engine: b2}, "stops") != nil {
		t.Fatal("re-open brought the dropped table back")
	}
	// A fresh replica bootstrapped from a's snapshot learns the drop.
	f := s.newReplica(t, "f", TripsSchema(), nil)
	for _, c := range collect(t, a, engine.SnapshotOptions{ChunkRows: 1}) {
		if _, err := f.ApplySnapshotChunk(c); err != nil {
			t.Fatal(err)
		}
	}
	pull(t, f, a)
	pull(t, a, f)
	if schemaOf(t, f, "stops") != nil {
		t.Fatal("a fresh replica holds the dropped table")
	}
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, f.store)); d != "" {
		t.Fatalf("a and the fresh replica: %s", d)
	}
	s.checkViaRelay(t, a, b)
}
