package enginetest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// testSnapshotApply covers applying snapshots: their schema, malformed or
// failed chunks, events, and tables announced meanwhile.
func (s *suite) testSnapshotApply(t *testing.T) {
	t.Run("SnapshotSchemaAdvancesClock", s.testSnapshotSchemaClock)
	t.Run("SnapshotSchemaDrift", s.testSnapshotSchemaDrift)
	t.Run("BadSnapshotRows", s.testBadSnapshotRows)
	t.Run("ReplayAfterSnapshotSchema", s.testReplayAfterSnapshotSchema)
	t.Run("SnapshotAfterFailedChunk", s.testSnapshotAfterFailedChunk)
	t.Run("SnapshotEventCallback", s.testSnapshotEventCallback)
	t.Run("SnapshotSkipsAnnouncedTable", s.testSnapshotSkipsAnnouncedTable)
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

// A snapshot rows chunk that lies is refused whole: nothing of it is
// written, the checkpoint does not move, nothing panics. (Rows that are
// well formed but do not fit the local schema are held instead:
// DoesNotFit/SnapshotDoesNotFit.)
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

// Changes held for a table are replayed as soon as the table appears,
// however it appears: here from the schema chunk of a snapshot that is then
// abandoned (or interrupted by a restart) before its footer.
func (s *suite) testReplayAfterSnapshotSchema(t *testing.T) {
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
	if n := len(must(a.HeldChanges("notes"))(t)); n != 2 {
		t.Fatalf("%d changes held, want 2", n)
	}
	chunks := collect(t, b, engine.SnapshotOptions{})
	for _, c := range chunks[:2] { // header, schema: the table now exists
		must(a.ApplySnapshotChunk(c))(t)
	}
	must(0, a.DiscardSnapshotCheckpoint())(t)
	if n := len(must(a.HeldChanges("notes"))(t)); n != 0 {
		t.Fatalf("%d changes still held after the table appeared", n)
	}
	if r := must(a.Get("notes", engine.Key{"n1"}))(t); r["body"].Text() != "hello" {
		t.Fatalf("replayed row = %s", fmtRow(r))
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
