package enginetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testSchemaEvolution covers schemas that change: columns and tables
// learned from peers, conflicting declarations, migrations in refused
// batches, schema-less DDL.
func (s *suite) testSchemaEvolution(t *testing.T) {
	t.Run("ColumnLearnedLateIsNormalized", s.testColumnLearnedLate)
	t.Run("ConflictingDeclarations", s.testConflictingDeclarations)
	t.Run("ConflictingPrimaryKeys", s.testConflictingPrimaryKeys)
	t.Run("ConflictingPrimaryKeysWedge", s.testConflictingPrimaryKeysWedge)
	t.Run("SchemaListsTablesOnce", s.testSchemaListsTablesOnce)
	t.Run("SchemaLessLateDDL", s.testSchemaLessLateDDL)
	t.Run("RefusedBatchWithMigration", s.testRefusedBatchWithMigration)
	t.Run("StagedUpsertLearnedTable", s.testStagedUpsertLearnedTable)
}

func notesV1() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}, {Name: "stars", Type: engine.KindInteger}}}}}
}

func notesV2() *engine.Schema {
	s := notesV1()
	s.Tables[0].Indexes = []engine.IndexDef{{Name: "by_stars", Columns: []string{"stars"}}}
	return s
}

// A value for a column the receiver does not know yet is stored as
// received; when the column's add_column arrives later, the value must end
// as it would have been stored had the column been known (normalized to the
// column's type), or replicas that saw the two in different orders diverge.
func (s *suite) testColumnLearnedLate(t *testing.T) {
	v2 := notesV1()
	v2.Tables[0].Columns = append(v2.Tables[0].Columns, engine.ColumnDef{Name: "score", Type: engine.KindReal})
	// b's add_column and b's write, as two transactions.
	st := s.open(t)
	clk := NewManualClock(T0)
	b := must(engine.Open(st, engine.Options{Schema: notesV1(), Clock: clk}))(t)
	b.Close()
	clk.Advance(5)
	b = must(engine.Open(st, engine.Options{Schema: v2, Clock: clk}))(t)
	defer b.Close()
	clk.Advance(5)
	must(b.Insert("notes", map[string]any{"id": "n", "body": "x", "score": 3.0}))(t)
	sets := must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	// On the wire a JSON number without a fraction decodes as an Integer.
	for i := range sets {
		for j := range sets[i].Changes {
			if c := &sets[i].Changes[j]; c.Column == "score" {
				c.Value = engine.Int(int64(c.Value.Real()))
			}
		}
	}
	var ddl, data []engine.ChangeSet
	for _, cs := range sets {
		if len(cs.Migrations) > 0 && len(cs.Changes) == 0 {
			ddl = append(ddl, cs)
		} else {
			data = append(data, cs)
		}
	}
	inOrder := s.newReplica(t, "inOrder", notesV1(), nil)
	must(inOrder.ApplyChanges(ddl))(t)
	must(inOrder.ApplyChanges(data))(t)
	late := s.newReplica(t, "late", notesV1(), nil)
	must(late.ApplyChanges(data))(t)
	must(late.ApplyChanges(ddl))(t)
	for _, r := range []*replica{inOrder, late} {
		row := must(r.Get("notes", engine.Key{"n"}))(t)
		if !row["score"].Equal(engine.Real(3)) {
			t.Errorf("%s: score = %s (%s), want real 3", r.name, row["score"], row["score"].Kind())
		}
		if n := must(r.Count("notes", []engine.Filter{{Column: "score", Op: engine.Eq, Value: 3}}))(t); n != 1 {
			t.Errorf("%s: score = 3 matches %d rows, want 1", r.name, n)
		}
	}
	if d := diffData(DumpStore(t, inOrder.store), DumpStore(t, late.store)); d != "" {
		t.Fatalf("delivery order changed the stored rows: %s", d)
	}
}

// Two devices declared the same table with different column types (two app
// versions, or two apps). After they sync, the effective schema is the
// first definition (lowest HLC) everywhere, which is convergent. The device
// whose declaration lost keeps working with its own declaration for writes
// and queries until it reopens; then Open refuses the contradicting
// declaration with ErrSchema naming the column (the engine manual, # Schema
// conflicts between app versions): Replica cannot change a column's type.
func (s *suite) testConflictingDeclarations(t *testing.T) {
	text := notesV1()
	integer := notesV1()
	integer.Tables[0].Columns[1].Type = engine.KindInteger // body
	a := s.newReplica(t, "a", text, nil)
	st := s.open(t)
	clk := NewManualClock(T0 + 10)
	b := must(engine.Open(st, engine.Options{Schema: integer, Clock: clk}))(t)
	must(b.Insert("notes", map[string]any{"id": "b1", "body": 5}))(t)
	rb := &replica{Engine: b, store: st, clock: clk, name: "b"}
	pull(t, a, rb)
	pull(t, rb, a)
	if _, err := b.Query("notes", engine.Query{Where: []engine.Filter{{Column: "body", Op: engine.Eq, Value: 5}}}); err != nil {
		t.Errorf("b queries its own column by its declared type: %v", err)
	}
	b.Close()
	_, err := engine.Open(st, engine.Options{Schema: integer, Clock: clk})
	var se *engine.SchemaError
	if !errors.As(err, &se) || se.Column != "body" {
		t.Fatalf("reopen with the losing declaration: %v, want a SchemaError naming body", err)
	}
	// The data is intact and readable under the effective schema.
	b = must(engine.Open(st, engine.Options{Schema: text, Clock: clk}))(t)
	defer b.Close()
	if n := must(b.Count("notes", nil))(t); n != 1 {
		t.Fatalf("%d notes after reopening with the effective schema", n)
	}
}

// Two devices declared the same table with different primary keys. Once
// the other device's definition wins the fold, this device's local writes
// validated against its own declaration must not be stored under the
// effective key: that wrote rows under a null key and minted ChangeSets
// every peer rejects as malformed (a poison batch that blocks sync).
func (s *suite) testConflictingPrimaryKeys(t *testing.T) {
	sa := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}}}}
	sb := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "k1", Type: engine.KindInteger}, {Name: "k2", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}, PrimaryKey: []string{"k1", "k2"}}}}
	a := s.newReplica(t, "a", sa, nil)
	st := s.open(t)
	clk := NewManualClock(T0 + 10) // b declares later: a's create_table wins the fold
	eb := must(engine.Open(st, engine.Options{Schema: sb, Clock: clk}))(t)
	defer eb.Close()
	b := &replica{Engine: eb, store: st, clock: clk, name: "b"}
	must(a.Insert("notes", map[string]any{"id": "a1", "body": "a"}))(t)
	pull(t, b, a)
	_, err := b.Insert("notes", map[string]any{"k1": 2, "k2": "y", "body": "b2"})
	if !errors.Is(err, engine.ErrSchema) {
		t.Errorf("write under a declaration whose key lost the fold: %v, want ErrSchema", err)
	}
	for _, r := range must(b.Query("notes", engine.Query{}))(t) {
		if r["id"].IsNull() && r["k1"].Int() == 2 {
			t.Errorf("row stored under a null key: %s", fmtRow(r))
		}
	}
	sets := must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{ExcludeSite: a.SiteID()}))(t)
	if _, err := a.ApplyChanges(sets); err != nil {
		t.Fatalf("a rejects what b sends: %v", err)
	}
}

// The same conflict with data on both sides: whichever key wins the fold,
// the rows the other device wrote under its own key do not fit the winning
// definition. Refusing the batch would wedge sync between the two devices
// forever (a poison batch); instead such changes are held (HeldKeyMismatch,
// never replayed), reported with a ChangesHeld event carrying the reason,
// and everything else in the batch applies.
func (s *suite) testConflictingPrimaryKeysWedge(t *testing.T) {
	sa := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}}}}
	sb := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "k1", Type: engine.KindInteger}, {Name: "k2", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}, PrimaryKey: []string{"k1", "k2"}}}}
	a := s.newReplica(t, "a", sa, nil)
	st := s.open(t)
	clk := NewManualClock(T0 + 10)
	eb := must(engine.Open(st, engine.Options{Schema: sb, Clock: clk}))(t)
	defer eb.Close()
	b := &replica{Engine: eb, store: st, clock: clk, name: "b"}
	must(b.Insert("notes", map[string]any{"k1": 1, "k2": "x", "body": "b"}))(t)
	must(a.Insert("notes", map[string]any{"id": "a1", "body": "a"}))(t)
	pull(t, b, a)
	res := pull(t, a, b) // b's row is keyed (k1, k2); a holds the key (id)
	if res.Held == 0 {
		t.Fatalf("rows keyed differently were not held: %+v", res)
	}
	var unfit int
	for _, h := range must(a.HeldChanges("notes"))(t) {
		if h.NeverReplayed {
			unfit++
		}
	}
	if unfit == 0 {
		t.Fatal("b's rows are not held on a")
	}
	// Sync goes on: a later, fitting write from b still arrives.
	must(a.Insert("notes", map[string]any{"id": "a2", "body": "after"}))(t)
	pull(t, b, a)
	if r := must(b.Query("notes", engine.Query{}))(t); len(r) < 2 {
		t.Fatalf("b has %d notes after the conflict, want a's two", len(r))
	}
}

// Schema lists each table once, even when several devices created it.
func (s *suite) testSchemaListsTablesOnce(t *testing.T) {
	a := s.newReplica(t, "a", notesV1(), nil)
	b := s.newReplica(t, "b", notesV1(), nil)
	pull(t, a, b)
	sc := must(a.Schema())(t)
	if len(sc.Tables) != 1 {
		var names []string
		for _, tb := range sc.Tables {
			names = append(names, tb.Name)
		}
		t.Fatalf("Schema lists %v, want [notes]", names)
	}
}

// A schema-less replica (the relay) stores rows that arrive before their
// table's create_table without knowing the key columns; once the table is
// known, its rows must be stored exactly as if it had been known all along,
// so two relays that received the same facts in different orders hold the
// same bytes (and index entries).
func (s *suite) testSchemaLessLateDDL(t *testing.T) {
	src := s.newReplica(t, "src", notesV2(), nil)
	must(src.Insert("notes", map[string]any{"id": "n1", "body": "x", "stars": 3}))(t)
	sets := must(src.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	var ddl, data []engine.ChangeSet
	for _, cs := range sets {
		if len(cs.Changes) == 0 {
			ddl = append(ddl, cs)
		} else {
			data = append(data, cs)
		}
	}
	inOrder := s.newReplica(t, "inOrder", nil, nil)
	must(inOrder.ApplyChanges(ddl))(t)
	must(inOrder.ApplyChanges(data))(t)
	late := s.newReplica(t, "late", nil, nil)
	must(late.ApplyChanges(data))(t)
	must(late.ApplyChanges(ddl))(t)
	if d := diffDumps(DumpStore(t, inOrder.store), DumpStore(t, late.store)); d != "" {
		t.Fatalf("delivery order changed what the relay stores: %s", d)
	}
}

// A batch refused while merging (here a change whose key is too long to
// store, found once the batch's own create_table is folded) leaves nothing
// behind: no rows, no migrations, no schema in the engine's cache, no clock.
func (s *suite) testRefusedBatchWithMigration(t *testing.T) {
	src := s.newReplica(t, "src", notesV2(), nil)
	must(src.Insert("notes", map[string]any{"id": "n1", "body": "x", "stars": 3}))(t)
	sets := must(src.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	last := &sets[len(sets)-1]
	bad := last.Changes[0]
	bad.PK = []engine.Value{engine.Text(strings.Repeat("k", 3000))}
	if bad.Column == "id" {
		bad.Value = bad.PK[0]
	}
	bad.HLC.OpSeq = 99
	last.Changes = append(last.Changes, bad)
	last.HLC = bad.HLC
	a := s.newReplica(t, "a", TripsSchema(), nil)
	a.clock.Advance(5)
	before := DumpStore(t, a.store)
	clock := must(a.Now())(t)
	if _, err := a.ApplyChanges(sets); !errors.Is(err, engine.ErrMalformed) {
		t.Fatalf("batch with a key too long to store: %v, want ErrMalformed", err)
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused batch wrote: %s", d)
	}
	if now := must(a.Now())(t); now != clock {
		t.Fatalf("refused batch moved the clock")
	}
	for _, tb := range must(a.Schema())(t).Tables {
		if tb.Name == "notes" {
			t.Fatal("refused batch's create_table is in the schema")
		}
	}
	if _, err := a.Query("notes", engine.Query{}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("query of the refused batch's table: %v", err)
	}
}

// A staged upsert without a key into a table this replica did not declare
// (it learned it from a peer) commits the row under the id its preview
// returned, as a staged insert does.
func (s *suite) testStagedUpsertLearnedTable(t *testing.T) {
	notes := TripsSchema()
	notes.Tables = append(notes.Tables, engine.TableDef{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}})
	b := s.newReplica(t, "b", notes, nil)
	a := s.newReplica(t, "a", TripsSchema(), nil)
	pull(t, a, b)
	for _, kind := range []string{"insert", "upsert"} {
		st := a.Stage()
		var row engine.Row
		var err error
		if kind == "insert" {
			row, err = st.Insert("notes", map[string]any{"body": kind})
		} else {
			row, err = st.Upsert("notes", map[string]any{"body": kind})
		}
		if err != nil {
			t.Fatalf("staged %s: %v", kind, err)
		}
		must(st.Commit())(t)
		if _, err := a.Get("notes", engine.Key{row["id"].Text()}); err != nil {
			t.Errorf("staged %s previewed id %s, but no row has it after commit: %v", kind, row["id"], err)
		}
	}
}
