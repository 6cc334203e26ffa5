package enginetest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
)

// Regression tests for defects found in review, one subtest each.
func (s *suite) testReview(t *testing.T) {
	t.Run("IndexAddedOnReopenCoversExistingRows", s.testIndexOnReopen)
	t.Run("IndexFromPeerCoversExistingRows", s.testIndexFromPeer)
	t.Run("FailedMoveInTransactionWritesNothing", s.testFailedMove)
	t.Run("ColumnLearnedLateIsNormalized", s.testColumnLearnedLate)
	t.Run("SnapshotSchemaAdvancesClock", s.testSnapshotSchemaClock)
	t.Run("SnapshotSchemaDrift", s.testSnapshotSchemaDrift)
	t.Run("RemoteKeyTooLong", s.testRemoteKeyTooLong)
	t.Run("LocalKeyTooLong", s.testLocalKeyTooLong)
	t.Run("BadSnapshotRows", s.testBadSnapshotRows)
	t.Run("ApplyExtraError", s.testApplyExtraError)
	t.Run("DrainAfterSnapshotSchema", s.testDrainAfterSnapshotSchema)
	t.Run("ConflictingDeclarations", s.testConflictingDeclarations)
	t.Run("ConflictingPrimaryKeys", s.testConflictingPrimaryKeys)
	t.Run("ConflictingPrimaryKeysWedge", s.testConflictingPrimaryKeysWedge)
	t.Run("LargeValues", s.testLargeValues)
	t.Run("StagedUpsertLearnedTable", s.testStagedUpsertLearnedTable)
	t.Run("SnapshotAfterFailedChunk", s.testSnapshotAfterFailedChunk)
	t.Run("IndexValueTooLongInTransaction", s.testIndexValueTooLongInTransaction)
	t.Run("SchemaListsTablesOnce", s.testSchemaListsTablesOnce)
	t.Run("SnapshotEventCallback", s.testSnapshotEventCallback)
	t.Run("SchemaLessLateDDL", s.testSchemaLessLateDDL)
	t.Run("RefusedBatchWithMigration", s.testRefusedBatchWithMigration)
	t.Run("NothingWrittenNoTick", s.testNothingWrittenNoTick)
	t.Run("SnapshotSkipsAnnouncedTable", s.testSnapshotSkipsAnnouncedTable)
	t.Run("ForwardPaging", s.testForwardPaging)
	t.Run("RestoredReplicaOwnFacts", s.testRestoredReplicaOwnFacts)
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

// A statement that fails inside a transaction writes nothing, so the
// transaction can go on (Transact's contract). Moving a row to a key that is
// too long must not leave the old key tombstoned.
func (s *suite) testFailedMove(t *testing.T) {
	for _, allow := range []bool{false, true} {
		a := s.newReplica(t, "a", TripsSchema(), func(o *engine.Options) { o.AllowResurrection = allow })
		must(a.Insert("stops", map[string]any{"trip": "t", "pos": 1, "name": "x"}))(t)
		before := DumpStore(t, a.store)
		long := strings.Repeat("k", 3000)
		cs, err := a.Transact(func(tx *engine.Tx) error {
			if _, err := tx.Update("stops", engine.Key{"t", 1}, map[string]any{"trip": long}); !errors.Is(err, engine.ErrValidation) {
				t.Errorf("move to a too-long key: %v, want a validation error", err)
			}
			return nil // the caller handled the error
		})
		if err != nil {
			t.Fatal(err)
		}
		if cs != nil {
			t.Fatalf("allow=%v: the failed statement committed %d facts: %+v", allow, len(cs.Changes), cs.Changes)
		}
		if _, err := a.Get("stops", engine.Key{"t", 1}); err != nil {
			t.Fatalf("allow=%v: row gone after a failed move: %v", allow, err)
		}
		if d := diffStore(before, DumpStore(t, a.store)); d != "" {
			t.Fatalf("allow=%v: failed move wrote: %s", allow, d)
		}
		// The same through a staged transaction: the failed preview must not
		// change what later previews see.
		st := a.Stage()
		if _, err := st.Update("stops", engine.Key{"t", 1}, map[string]any{"trip": long}); !errors.Is(err, engine.ErrValidation) {
			t.Fatalf("staged move to a too-long key: %v", err)
		}
		if _, err := st.Get("stops", engine.Key{"t", 1}); err != nil {
			t.Fatalf("allow=%v: staged preview lost the row after a failed move: %v", allow, err)
		}
		st.Discard()
	}
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

// Applying a snapshot max-merges every HLC it carries into the clock,
// migrations included, so the next local fact is stamped above them. A
// snapshot of a replica whose clock runs ahead (within the drift bound)
// and whose table has no rows yet brings only the create_table; a local
// add_column minted below it would be folded before the table exists and
// silently dropped.
func (s *suite) testSnapshotSchemaClock(t *testing.T) {
	ahead := NewManualClock(T0 + 50_000)
	st := s.open(t)
	a := must(engine.Open(st, engine.Options{Schema: notesV1(), Clock: ahead}))(t)
	defer a.Close()
	ra := &replica{Engine: a, store: st, clock: ahead, name: "a"}
	chunks := collect(t, ra, engine.SnapshotOptions{})

	bst := s.open(t)
	clk := NewManualClock(T0)
	b := must(engine.Open(bst, engine.Options{Clock: clk}))(t) // schema-less until the snapshot
	for _, c := range chunks {
		must(b.ApplySnapshotChunk(c))(t)
	}
	b.Close()
	v2 := notesV1()
	v2.Tables[0].Columns = append(v2.Tables[0].Columns, engine.ColumnDef{Name: "score", Type: engine.KindReal})
	clk.Advance(10)
	b = must(engine.Open(bst, engine.Options{Schema: v2, Clock: clk}))(t)
	defer b.Close()
	sc := must(b.Schema())(t)
	if len(sc.Tables) != 1 || len(sc.Tables[0].Columns) != 4 {
		t.Fatalf("schema after adding a column locally: %+v", sc.Tables)
	}
	if now := must(b.Now())(t); now.Wall < T0+50_000 {
		t.Fatalf("clock after the snapshot is %s, below the snapshot's migrations (wall %d)", now, T0+50_000)
	}
}

// Migrations in a snapshot's schema chunk are drift-checked like every
// other remote HLC, before anything is written.
func (s *suite) testSnapshotSchemaDrift(t *testing.T) {
	b := s.newReplica(t, "b", nil, nil)
	peer := engine.SiteID{4, 4}
	h := engine.HLC{Wall: b.clock.Now(), Site: peer}
	must(b.ApplySnapshotChunk(engine.SnapshotChunk{Type: engine.ChunkHeader, Header: &engine.SnapshotHeader{
		Format: engine.SnapshotFormat, SnapshotID: "s1", SiteID: peer, HLC: h}}))(t)
	before := DumpStore(t, b.store)
	def := notesV1().Tables[0]
	def.PrimaryKey = []string{"id"}
	far := engine.HLC{Wall: b.clock.Now() + 3_600_000, Site: peer}
	_, err := b.ApplySnapshotChunk(engine.SnapshotChunk{Type: engine.ChunkSchema, Migrations: []engine.SchemaMigration{
		{Type: engine.CreateTable, TableName: "notes", Table: &def, HLC: far}}})
	if !errors.Is(err, engine.ErrClockDrift) {
		t.Fatalf("schema chunk with a migration an hour ahead: %v, want ErrClockDrift", err)
	}
	if d := diffStore(before, DumpStore(t, b.store)); d != "" {
		t.Fatalf("drifted schema chunk wrote: %s", d)
	}
	_, err = b.ApplySnapshotChunk(engine.SnapshotChunk{Type: engine.ChunkSchema, Migrations: []engine.SchemaMigration{
		{Type: engine.CreateTable, TableName: "notes", Table: &def, HLC: engine.HLC{Wall: b.clock.Now()}}}})
	if !errors.Is(err, engine.ErrMalformed) {
		t.Fatalf("schema chunk with a migration without a site: %v, want ErrMalformed", err)
	}
	if d := diffStore(before, DumpStore(t, b.store)); d != "" {
		t.Fatalf("schema chunk with a migration without a site wrote: %s", d)
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

// A snapshot rows chunk that lies is refused whole: nothing of it is
// written, the checkpoint does not move, nothing panics. (Rows that are
// well formed but do not fit the local schema are held instead:
// Hardening/SnapshotMisfits.)
func (s *suite) testBadSnapshotRows(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "x"}))(t)
	chunks := collect(t, a, engine.SnapshotOptions{})
	var rows engine.SnapshotChunk
	for _, c := range chunks {
		if c.Type == engine.ChunkRows && c.Table == "trips" {
			rows = c
		}
	}
	now := a.clock.Now()
	peer := engine.SiteID{6}
	cell := func(col string, v engine.Value, h engine.HLC) engine.SnapshotCell {
		return engine.SnapshotCell{Column: col, Value: v, HLC: h}
	}
	good := engine.HLC{Wall: now, Site: peer}
	cases := map[string]engine.SnapshotRow{
		"NaN key":           {PK: []engine.Value{engine.Real(math.NaN())}, Cells: []engine.SnapshotCell{cell("title", engine.Text("x"), good)}},
		"cell without site": {PK: []engine.Value{engine.Text("z1")}, Cells: []engine.SnapshotCell{cell("title", engine.Text("x"), engine.HLC{Wall: now})}},
		"zero cell HLC":     {PK: []engine.Value{engine.Text("z2")}, Cells: []engine.SnapshotCell{cell("title", engine.Text("x"), engine.HLC{})}},
		"tomb without site": {PK: []engine.Value{engine.Text("z3")}, HasTombstone: true, Tombstone: engine.HLC{Wall: now}},
		"drifted tombstone": {PK: []engine.Value{engine.Text("z6")}, HasTombstone: true, Tombstone: engine.HLC{Wall: now + 61_000, Site: peer}},
		"key too long":      {PK: []engine.Value{engine.Text(strings.Repeat("k", 3000))}, Cells: []engine.SnapshotCell{cell("title", engine.Text("x"), good)}},
	}
	for name, bad := range cases {
		b := s.newReplica(t, "b", TripsSchema(), nil)
		for _, c := range chunks[:3] { // header, schema, table_start
			must(b.ApplySnapshotChunk(c))(t)
		}
		before := DumpStore(t, b.store)
		cp := must(b.SnapshotCheckpoint())(t)
		chunk := rows
		chunk.Rows = append(append([]engine.SnapshotRow(nil), rows.Rows...), bad)
		_, err := b.ApplySnapshotChunk(chunk)
		if !errors.Is(err, engine.ErrMalformed) && !errors.Is(err, engine.ErrClockDrift) {
			t.Errorf("%s: %v, want ErrMalformed or ErrClockDrift", name, err)
		}
		if d := diffStore(before, DumpStore(t, b.store)); d != "" {
			t.Errorf("%s: refused rows chunk wrote: %s", name, d)
		}
		if cp2 := must(b.SnapshotCheckpoint())(t); cp2 == nil || cp2.RowsApplied != cp.RowsApplied {
			t.Errorf("%s: checkpoint moved: %+v", name, cp2)
		}
	}
}

// ApplyOptions.Extra runs inside the batch's transaction: its error rolls
// back the whole batch (rows, log, clock, state) and no event is emitted.
func (s *suite) testApplyExtraError(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	peer := engine.SiteID{2}
	cs := validSet(peer, a.clock.Now()+30_000, "x")
	before := DumpStore(t, a.store)
	clock := must(a.Now())(t)
	var events int
	a.Subscribe(func(engine.Event) { events++ })
	boom := errors.New("boom")
	var seen engine.ApplyResult
	_, err := a.Apply([]engine.ChangeSet{cs}, engine.ApplyOptions{
		State: map[string][]byte{"cursor": []byte("7")},
		Extra: func(_ kv.Tx, res engine.ApplyResult) error { seen = res; return boom },
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Extra's error: %v", err)
	}
	if seen.Applied != 3 || seen.Transactions != 1 {
		t.Fatalf("Extra saw %+v", seen)
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("batch rolled back by Extra wrote: %s", d)
	}
	if now := must(a.Now())(t); now != clock {
		t.Fatalf("clock moved %s → %s", clock, now)
	}
	if v := must(a.State("cursor"))(t); v != nil {
		t.Fatalf("state written: %q", v)
	}
	if events != 0 {
		t.Fatalf("%d events for a rolled-back batch", events)
	}
}

// Changes held for a table are replayed as soon as the table appears,
// however it appears: here from the schema chunk of a snapshot that is then
// abandoned (or interrupted by a restart) before its footer.
func (s *suite) testDrainAfterSnapshotSchema(t *testing.T) {
	notes := TripsSchema()
	notes.Tables = append(notes.Tables, engine.TableDef{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}})
	b := s.newReplica(t, "b", notes, nil)
	must(b.Insert("notes", map[string]any{"id": "n1", "body": "hello"}))(t)
	var data []engine.ChangeSet
	for _, cs := range must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		if len(cs.Changes) > 0 {
			data = append(data, cs)
		}
	}
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.ApplyChanges(data))(t)
	if n := len(must(a.Quarantined("notes"))(t)); n != 2 {
		t.Fatalf("%d changes held, want 2", n)
	}
	chunks := collect(t, b, engine.SnapshotOptions{})
	for _, c := range chunks[:2] { // header, schema: the table now exists
		must(a.ApplySnapshotChunk(c))(t)
	}
	must(0, a.DiscardSnapshotCheckpoint())(t)
	if n := len(must(a.Quarantined("notes"))(t)); n != 0 {
		t.Fatalf("%d changes still held after the table appeared", n)
	}
	if r := must(a.Get("notes", engine.Key{"n1"}))(t); r["body"].Text() != "hello" {
		t.Fatalf("drained row = %s", fmtRow(r))
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
// forever (a poison batch); instead such changes are held (misfits, never
// replayed), reported with an UnknownTableSeen event carrying the reason,
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
	if res.UnknownTable == 0 {
		t.Fatalf("misfit rows were not diverted: %+v", res)
	}
	var misfits int
	for _, h := range must(a.Quarantined("notes"))(t) {
		if h.Misfit {
			misfits++
		}
	}
	if misfits == 0 {
		t.Fatal("b's rows are not held on a")
	}
	// Sync goes on: a later, fitting write from b still arrives.
	must(a.Insert("notes", map[string]any{"id": "a2", "body": "after"}))(t)
	pull(t, b, a)
	if r := must(b.Query("notes", engine.Query{}))(t); len(r) < 2 {
		t.Fatalf("b has %d notes after the conflict, want a's two", len(r))
	}
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
		cs.Changes[0].Table = "nosuchtable" // held in quarantine
		if _, err := a.ApplyChanges([]engine.ChangeSet{cs}); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("9 MiB value from a peer for an unknown table: %v, want ErrMalformed", err)
		}
		if d := diffStore(before, DumpStore(t, a.store)); d != "" {
			t.Errorf("refused large values wrote: %s", d)
		}
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

// After a chunk fails, the stream is broken: the engine refuses its later
// chunks until a new header, so a caller that carries on cannot mark a
// table whose rows did not land as completed (a resume would then skip it
// for good).
func (s *suite) testSnapshotAfterFailedChunk(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	for i := 0; i < 6; i++ {
		must(a.Insert("trips", map[string]any{"id": fmt.Sprintf("t%d", i), "title": "x"}))(t)
	}
	chunks := collect(t, a, engine.SnapshotOptions{ChunkRows: 2})
	b := s.newReplica(t, "b", TripsSchema(), nil)
	for _, c := range chunks[:3] { // header, schema, table_start
		must(b.ApplySnapshotChunk(c))(t)
	}
	bad := chunks[3]
	bad.Rows = []engine.SnapshotRow{{PK: []engine.Value{engine.Text("far")}, HasTombstone: true,
		Tombstone: engine.HLC{Wall: b.clock.Now() + 120_000, Site: a.SiteID()}}}
	if _, err := b.ApplySnapshotChunk(bad); !errors.Is(err, engine.ErrClockDrift) {
		t.Fatalf("drifted rows: %v", err)
	}
	for _, c := range chunks[3:] { // the caller carries on
		if _, err := b.ApplySnapshotChunk(c); err == nil && c.Type != engine.ChunkHeader {
			t.Fatalf("%s chunk accepted after a failed rows chunk", c.Type)
		}
	}
	if cp := must(b.SnapshotCheckpoint())(t); cp != nil && len(cp.CompletedTables) > 0 {
		t.Fatalf("checkpoint marks %v completed though rows of trips failed", cp.CompletedTables)
	}
	// A fresh header starts over, and the snapshot lands.
	for _, c := range chunks {
		must(b.ApplySnapshotChunk(c))(t)
	}
	sameVisible(t, a, b, "trips")
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

// Event subscribers may call the Engine (Subscribe's contract), including
// its snapshot methods, from a RemoteChange a snapshot chunk emits.
func (s *suite) testSnapshotEventCallback(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "x"}))(t)
	chunks := collect(t, a, engine.SnapshotOptions{})
	b := s.newReplica(t, "b", TripsSchema(), nil)
	b.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.RemoteChange {
			b.DiscardSnapshotCheckpoint() // e.g. a UI cancelling the bootstrap
		}
	})
	done := make(chan error, 1)
	go func() {
		var err error
		for _, c := range chunks {
			if _, err = b.ApplySnapshotChunk(c); err != nil {
				break
			}
		}
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock: a subscriber called the engine's snapshot methods from an event of ApplySnapshotChunk")
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

// Transactions that record no fact write nothing, not even the clock:
// failed statements only, reads only, a staged commit of no-ops, a delete
// of a missing row, an update to the same values.
func (s *suite) testNothingWrittenNoTick(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "x", "days": 2}))(t)
	a.clock.Advance(10)
	before := DumpStore(t, a.store)
	clock := must(a.Now())(t)
	cs := must(a.Transact(func(tx *engine.Tx) error {
		tx.Insert("trips", map[string]any{"id": "t1", "title": "dup"}) // conflict
		tx.Update("trips", engine.Key{"nope"}, map[string]any{"days": 1})
		tx.Insert("trips", map[string]any{"title": 5}) // invalid
		tx.Query("trips", engine.Query{})
		tx.Get("trips", engine.Key{"t1"})
		tx.Delete("trips", engine.Key{"nope"})
		tx.Update("trips", engine.Key{"t1"}, map[string]any{"days": 2, "title": "x"})
		return nil
	}))(t)
	if cs != nil {
		t.Fatalf("a transaction that recorded nothing returned %+v", cs)
	}
	st := a.Stage()
	must(st.Update("trips", engine.Key{"t1"}, map[string]any{"days": 2}))(t)
	must(st.Delete("trips", engine.Key{"nope"}))(t)
	if cs := must(st.Commit())(t); cs != nil {
		t.Fatalf("a staged commit of no-ops returned %+v", cs)
	}
	if now := must(a.Now())(t); now != clock {
		t.Fatalf("clock moved %s → %s", clock, now)
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("wrote: %s", d)
	}
}

// A stream that skips a table its header announced (or carries one it did
// not announce) does not end complete: the checkpoint stays, so the data
// is known to be partial.
func (s *suite) testSnapshotSkipsAnnouncedTable(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "x"}))(t)
	must(a.Insert("stops", map[string]any{"trip": "t1", "pos": 1}))(t)
	chunks := collect(t, a, engine.SnapshotOptions{})
	var kept []engine.SnapshotChunk
	for _, c := range chunks {
		if c.Table == "stops" {
			continue
		}
		if c.Type == engine.ChunkFooter {
			f := *c.Footer
			f.Tables, f.Rows = 1, 1 // consistent with what is left
			c.Footer = &f
		}
		kept = append(kept, c)
	}
	b := s.newReplica(t, "b", TripsSchema(), nil)
	var err error
	for _, c := range kept {
		if _, err = b.ApplySnapshotChunk(c); err != nil {
			break
		}
	}
	if !errors.Is(err, engine.ErrMalformed) {
		t.Fatalf("stream without an announced table: %v, want ErrMalformed", err)
	}
	if cp := must(b.SnapshotCheckpoint())(t); cp == nil {
		t.Fatal("no checkpoint: the partial snapshot looks complete")
	}
	c := s.newReplica(t, "c", TripsSchema(), nil)
	for _, ch := range chunks[:2] {
		must(c.ApplySnapshotChunk(ch))(t)
	}
	if _, err := c.ApplySnapshotChunk(engine.SnapshotChunk{Type: engine.ChunkTableStart, Table: "other"}); !errors.Is(err, engine.ErrMalformed) {
		t.Fatalf("table_start of an unannounced table: %v, want ErrMalformed", err)
	}
}

// A store-and-forward replica pages its forwardable held changes like its
// log: whole transactions in HLC order, merged with its own, at every
// limit, each once.
func (s *suite) testForwardPaging(t *testing.T) {
	notes := TripsSchema()
	notes.Tables = append(notes.Tables, engine.TableDef{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}})
	b := s.newReplica(t, "b", notes, nil)
	a := s.newReplica(t, "a", TripsSchema(), func(o *engine.Options) { o.UnknownTables = engine.StoreAndForward })
	for i := 0; i < 6; i++ {
		b.clock.Advance(1)
		a.clock.Advance(1)
		must(b.Transact(func(tx *engine.Tx) error {
			tx.Insert("notes", map[string]any{"id": fmt.Sprintf("n%d", i), "body": "x"})
			_, err := tx.Insert("trips", map[string]any{"id": fmt.Sprintf("b%d", i), "title": "b"})
			return err
		}))(t)
		must(a.Insert("trips", map[string]any{"id": fmt.Sprintf("a%d", i), "title": "a"}))(t)
	}
	var data []engine.ChangeSet
	for _, cs := range must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t) {
		if len(cs.Changes) > 0 {
			data = append(data, cs)
		}
	}
	must(a.ApplyChanges(data))(t)
	all := must(a.ChangesSince(engine.HLC{}, 1<<30, engine.ChangesFilter{}))(t)
	for _, cs := range all {
		if cs.SiteID == b.SiteID() && len(cs.Changes) != 2+8 {
			t.Fatalf("b's transaction %s forwarded with %d facts, want 10 (its notes row rejoined with its trips row)", cs.TransactionID, len(cs.Changes))
		}
	}
	for _, limit := range []int{1, 3, 11} {
		var since engine.HLC
		var got []engine.ChangeSet
		for {
			page := must(a.ChangesSince(since, limit, engine.ChangesFilter{}))(t)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			since = page[len(page)-1].HLC
		}
		if len(got) != len(all) {
			t.Fatalf("limit %d: %d ChangeSets paged, %d in one call", limit, len(got), len(all))
		}
		for i := range got {
			if got[i].TransactionID != all[i].TransactionID || len(got[i].Changes) != len(all[i].Changes) {
				t.Fatalf("limit %d: ChangeSet %d differs", limit, i)
			}
		}
	}
	// A peer with the table receives b's transactions whole from a.
	c := s.newReplica(t, "c", notes, nil)
	pull(t, c, a)
	if n := must(c.Count("notes", nil))(t); n != 6 {
		t.Fatalf("c got %d notes through a, want 6", n)
	}
}

// A replica whose store was restored from an older copy (a backup, a
// synced profile folder) receives its own later facts back from peers, and
// skips them as echoes: it never holds them again, while every peer does.
// Applying own-origin facts as a join would be idempotent (the relay
// already excludes a client's own site when answering it, so echoes are
// rare); skipping them is what the seeds do, to avoid quarantining one's
// own changes.
func (s *suite) testRestoredReplicaOwnFacts(t *testing.T) {
	t.Skip("known limitation, documented in the engine manual (# Backups): a replica restored from an older copy of its store keeps its site id and skips its own later facts as echoes; restore by re-bootstrapping instead")
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "before the backup"}))(t)
	backup := s.open(t)
	copyStore(t, a.store, backup)
	a.clock.Advance(10)
	must(a.Insert("trips", map[string]any{"id": "t2", "title": "after the backup"}))(t)
	p := s.newReplica(t, "p", TripsSchema(), nil)
	pull(t, p, a)
	restored := &replica{Engine: must(engine.Open(backup, engine.Options{Schema: TripsSchema(), Clock: a.clock}))(t), store: backup, clock: a.clock, name: "restored"}
	sets := must(p.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	must(restored.ApplyChanges(sets))(t)
	if _, err := restored.Get("trips", engine.Key{"t2"}); err != nil {
		t.Fatalf("restored replica never gets its own later write back: %v", err)
	}
}

func copyStore(t testing.TB, from, to kv.Store) {
	t.Helper()
	type kvp struct{ b, k, v []byte }
	var all []kvp
	err := from.View(func(tx kv.Tx) error {
		for _, b := range engine.Buckets {
			if err := tx.Scan(b, kv.Range{}, func(k, v []byte) bool {
				all = append(all, kvp{[]byte(b), append([]byte(nil), k...), append([]byte(nil), v...)})
				return true
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := to.Update(func(tx kv.Tx) error {
		for _, e := range all {
			if err := tx.Put(string(e.b), e.k, e.v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
