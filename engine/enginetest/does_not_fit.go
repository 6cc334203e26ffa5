package enginetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// testDoesNotFit: values from peers must fit the schema; remote changes and
// snapshot rows that do not are held, not applied, and a schema-less
// replica refuses them.
func (s *suite) testDoesNotFit(t *testing.T) {
	t.Run("RemoteDoesNotFit", s.testRemoteDoesNotFit)
	t.Run("SnapshotDoesNotFit", s.testSnapshotDoesNotFit)
	t.Run("SchemaLessRefusesWrongTypes", s.testSchemaLessRefusesWrongTypes)
}

// forged is a ChangeSet of site with one fact per change, numbered in order.
func forged(site engine.SiteID, wall uint64, changes ...engine.Change) engine.ChangeSet {
	base := engine.HLC{Wall: wall, Site: site}
	for i := range changes {
		changes[i].HLC = base
		changes[i].HLC.OpSeq = uint32(i)
	}
	return engine.ChangeSet{SiteID: site, HLC: changes[len(changes)-1].HLC, TransactionID: base.TransactionID(), Changes: changes}
}

func setCell(table string, pk engine.Value, col string, v engine.Value) engine.Change {
	return engine.Change{Type: engine.ColumnChange, Table: table, PK: []engine.Value{pk}, Column: col, Value: v}
}

// unfitCases are peers' facts that do not fit TripsSchema: a forged push
// through the schema-less relay put each of them into every browser.
func unfitCases() map[string]engine.Change {
	return map[string]engine.Change{
		"text into real":         setCell("trips", engine.Text("m"), "budget", engine.Text("lots")),
		"fraction into integer":  setCell("trips", engine.Text("m"), "days", engine.Real(1.5)),
		"number into boolean":    setCell("trips", engine.Text("m"), "done", engine.Int(1)),
		"text into timestamp":    setCell("trips", engine.Text("m"), "starts", engine.Text("tomorrow")),
		"text into blob":         setCell("trips", engine.Text("m"), "photo", engine.Text("x")),
		"integer key for text":   setCell("trips", engine.Int(5), "title", engine.Text("x")),
		"blob into text":         setCell("trips", engine.Text("m"), "title", engine.Blob([]byte("x"))),
		"invalid UTF-8 text":     setCell("trips", engine.Text("m"), "title", engine.Text("\xff")),
		"json nested too deeply": setCell("trips", engine.Text("m"), "tags", jsonNest(engine.MaxJSONDepth+1)),
		"timestamp before Date":  setCell("trips", engine.Text("m"), "starts", engine.Int(-engine.MaxTimestampMillis-1)),
		"timestamp after Date":   setCell("trips", engine.Text("m"), "starts", engine.TimestampMillis(engine.MaxTimestampMillis+1)),
	}
}

// A peer's value that is not of its column's type (after the lossless
// normalization of wire spellings), a key of the wrong type, or a column
// the table does not define is not stored: it is held (never replayed for
// a wrong type or key; replayed when the column appears for an unknown
// column), reported by a ChangesHeld event with its HeldReason, and the
// rest of the batch applies. Prune drops what is held at the horizon.
func (s *suite) testRemoteDoesNotFit(t *testing.T) {
	peer := engine.SiteID{8, 8}
	cases := unfitCases()
	cases["unknown column"] = setCell("trips", engine.Text("m"), "anything", engine.Text("x"))
	for name, bad := range cases {
		a := s.newReplica(t, "a", TripsSchema(), nil)
		var events []engine.HeldReport
		a.Subscribe(func(ev engine.Event) {
			if ev.Type == engine.ChangesHeld {
				events = append(events, *ev.Held)
			}
		})
		now := a.clock.Now()
		// One ChangeSet mixes a fitting row with the bad fact; a second is
		// all good. NotNull is not enforced on peers' facts (column merges
		// make partial rows): a null title applies.
		mixed := forged(peer, now, setCell("trips", engine.Text("m"), "id", engine.Text("m")),
			setCell("trips", engine.Text("m"), "title", engine.Text("fits")), bad)
		if name == "integer key for text" {
			mixed.Changes[0] = setCell("trips", engine.Text("m"), "id", engine.Text("m"))
			mixed = forged(peer, now, mixed.Changes...)
		}
		good := forged(engine.SiteID{8, 9}, now, setCell("trips", engine.Text("g"), "id", engine.Text("g")),
			setCell("trips", engine.Text("g"), "title", engine.Null))
		res, err := a.ApplyChanges([]engine.ChangeSet{mixed, good})
		if err != nil {
			t.Fatalf("%s: %v (a change that does not fit must not block the batch)", name, err)
		}
		if res.Held != 1 || res.Applied != 4 {
			t.Errorf("%s: result %+v, want 4 applied and 1 held", name, res)
		}
		want := engine.HeldWrongType
		switch name {
		case "unknown column":
			want = engine.HeldUnknownColumn
		case "integer key for text":
			want = engine.HeldKeyMismatch
		}
		if len(events) != 1 || events[0].Table != "trips" || events[0].Reason != want || events[0].Detail == "" || events[0].Changes != 1 {
			t.Errorf("%s: events %+v, want one ChangesHeld for %s with a detail", name, events, want)
		}
		row := must(a.Get("trips", engine.Key{"m"}))(t)
		if row["title"].Text() != "fits" {
			t.Errorf("%s: row m = %s", name, fmtRow(row))
		}
		for col, v := range row {
			if !v.IsNull() && col != "id" && col != "title" {
				t.Errorf("%s: value that does not fit stored: %s = %s", name, col, v)
			}
		}
		if _, ok := row["anything"]; ok {
			t.Errorf("%s: unknown column stored", name)
		}
		if g := must(a.Get("trips", engine.Key{"g"}))(t); !g["title"].IsNull() {
			t.Errorf("%s: remote null for a notNull column: %s", name, fmtRow(g))
		}
		held := must(a.HeldChanges("trips"))(t)
		if len(held) != 1 || held[0].NeverReplayed != (name != "unknown column") {
			t.Errorf("%s: held %+v", name, held)
		}
		if n := must(a.ReplayHeld("trips"))(t); n != 0 {
			t.Errorf("%s: %d held changes replayed", name, n)
		}
		// Re-delivery holds nothing twice and applies nothing.
		res = must(a.ApplyChanges([]engine.ChangeSet{mixed, good}))(t)
		if res.Applied != 0 || len(must(a.HeldChanges(""))(t)) != 1 {
			t.Errorf("%s: re-delivery: %+v", name, res)
		}
		a.clock.Advance(uint64((engine.DefaultRetention + time.Hour).Milliseconds()))
		if pr := must(a.Prune())(t); pr.Held != 1 {
			t.Errorf("%s: prune at the horizon dropped %d held changes, want 1", name, pr.Held)
		}
	}
}

// A snapshot that carries rows or cells that do not fit the local schema
// (a relay stores what it is sent) is applied without them: they are held
// and reported, not a reason to refuse the snapshot, which would keep every
// new device from bootstrapping.
func (s *suite) testSnapshotDoesNotFit(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	for i := 0; i < 3; i++ {
		must(a.Insert("trips", map[string]any{"id": fmt.Sprintf("t%d", i), "title": "x", "days": i}))(t)
	}
	chunks := collect(t, a, engine.SnapshotOptions{})
	peer := engine.SiteID{6}
	h := engine.HLC{Wall: a.clock.Now(), Site: peer}
	var bad []engine.SnapshotRow
	n := 0
	for _, c := range unfitCases() {
		h.OpSeq++
		cell := engine.SnapshotCell{Column: c.Column, Value: c.Value, HLC: h}
		if c.PK[0].Kind() != engine.KindText {
			bad = append(bad, engine.SnapshotRow{PK: c.PK, Cells: []engine.SnapshotCell{cell}})
		} else {
			// A cell that does not fit beside one that does, in a row of its own.
			id := fmt.Sprintf("bad%d", n)
			h2 := h
			h2.OpSeq += 1000
			bad = append(bad, engine.SnapshotRow{PK: []engine.Value{engine.Text(id)}, Cells: []engine.SnapshotCell{
				{Column: "title", Value: engine.Text("fits"), HLC: h2}, cell}})
		}
		n++
	}
	h.OpSeq = 5000
	bad = append(bad, engine.SnapshotRow{PK: []engine.Value{engine.Text("k"), engine.Int(1)}, Cells: []engine.SnapshotCell{{Column: "title", Value: engine.Text("x"), HLC: h}}})
	h.OpSeq++
	h2 := h
	h2.OpSeq++
	bad = append(bad, engine.SnapshotRow{PK: []engine.Value{engine.Text("u")}, Cells: []engine.SnapshotCell{{Column: "title", Value: engine.Text("u"), HLC: h}, {Column: "nosuch", Value: engine.Int(1), HLC: h2}}})
	for i := range chunks {
		if c := &chunks[i]; c.Type == engine.ChunkRows && c.Table == "trips" {
			c.Rows = append(append([]engine.SnapshotRow(nil), c.Rows...), bad...)
			for j := i + 1; j < len(chunks); j++ {
				if chunks[j].Type == engine.ChunkFooter {
					f := *chunks[j].Footer
					f.Rows += int64(len(bad))
					chunks[j].Footer = &f
				}
			}
		}
	}
	// The chunks after the grown one count its rows (SnapshotChunk.Offset).
	var off int64
	for i := range chunks {
		switch c := &chunks[i]; c.Type {
		case engine.ChunkTableStart:
			off = 0
		case engine.ChunkRows:
			c.Offset = off
			off += int64(len(c.Rows))
		case engine.ChunkTableEnd:
			c.Offset = off
		}
	}
	b := s.newReplica(t, "b", TripsSchema(), nil)
	var events []engine.HeldReport
	b.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.ChangesHeld {
			events = append(events, *ev.Held)
		}
	})
	for _, c := range chunks {
		if _, err := b.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("%s chunk: %v (facts that do not fit must not refuse the snapshot)", c.Type, err)
		}
	}
	rows := must(b.Query("trips", engine.Query{}))(t)
	want := 3 + n - 1 + 1 // a's rows, the bad rows with a fitting title, u
	if len(rows) != want {
		t.Fatalf("b has %d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		if r["id"].Text() == "t0" || r["id"].Text() == "t1" || r["id"].Text() == "t2" {
			continue
		}
		for col, v := range r {
			if !v.IsNull() && col != "id" && col != "title" {
				t.Errorf("value that does not fit stored: %s = %s in %s", col, v, fmtRow(r))
			}
		}
	}
	held := must(b.HeldChanges("trips"))(t)
	if len(held) != n+2 {
		t.Errorf("held %d facts, want %d", len(held), n+2)
	}
	if len(events) != 1 || events[0].Changes != n+2 || events[0].Reason.String() == "invalid" || events[0].Detail == "" {
		t.Errorf("events %+v, want one ChangesHeld for %d facts", events, n+2)
	}
	if cp := must(b.SnapshotCheckpoint())(t); cp != nil {
		t.Errorf("snapshot not complete: %+v", cp)
	}
}

// A schema-less replica (the relay) stores values as received, but a value
// for a column whose type a migration declared must fit it: a value of the
// wrong type is refused (ErrMalformed, so the relay answers APPLY_CHANGES_REFUSED) and
// nothing of the batch is stored. Columns and tables without a declaration
// are accepted as received.
func (s *suite) testSchemaLessRefusesWrongTypes(t *testing.T) {
	src := s.newReplica(t, "src", TripsSchema(), nil)
	ddl := must(src.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	peer := engine.SiteID{4}
	for name, bad := range unfitCases() {
		r := s.newReplica(t, "relay", nil, nil)
		must(r.ApplyChanges(ddl))(t)
		now := r.clock.Now()
		before := DumpStore(t, r.store)
		cs := forged(peer, now, setCell("trips", engine.Text("m"), "title", engine.Text("fits")), bad)
		if _, err := r.ApplyChanges([]engine.ChangeSet{cs}); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
		if d := diffStore(before, DumpStore(t, r.store)); d != "" {
			t.Errorf("%s: refused batch wrote: %s", name, d)
		}
	}
	r := s.newReplica(t, "relay", nil, nil)
	must(r.ApplyChanges(ddl))(t)
	now := r.clock.Now()
	// Spellings that normalize to the column's type are stored as received.
	ok := forged(peer, now, setCell("trips", engine.Text("m"), "budget", engine.Int(3)),
		setCell("trips", engine.Text("m"), "starts", engine.Int(1000)),
		setCell("trips", engine.Text("m"), "days", engine.Real(2)),
		setCell("trips", engine.Text("m"), "other", engine.Text("undeclared column")),
		setCell("untyped", engine.Int(5), "x", engine.Real(1.5)))
	res := must(r.ApplyChanges([]engine.ChangeSet{ok}))(t)
	if res.Applied != 5 {
		t.Fatalf("fitting facts: %+v, want 5 applied", res)
	}
}
