package enginetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// testHardening holds the fixes of a security review: values a replica
// accepts must be values it can sync, and values from peers must fit the
// schema.
func (s *suite) testHardening(t *testing.T) {
	t.Run("JSONDepth", s.testJSONDepth)
	t.Run("LocalRowLimit", s.testLocalRowLimit)
	t.Run("RemoteMisfits", s.testRemoteMisfits)
	t.Run("SnapshotMisfits", s.testSnapshotMisfits)
	t.Run("SchemaLessRefusesMisfits", s.testSchemaLessRefusesMisfits)
	t.Run("TimestampRange", s.testTimestampRange)
	t.Run("NoConflictWithinOneSite", s.testNoConflictWithinOneSite)
}

// A json value deeper than the wire's limit was accepted locally but could
// never be pushed (the client retried forever): it is refused at write
// time, naming table and column.
func (s *suite) testJSONDepth(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ok := nest(engine.MaxJSONDepth)
	must(a.Insert("trips", map[string]any{"id": "ok", "title": "t", "tags": json.RawMessage(ok)}))(t)
	if r := must(a.Get("trips", engine.Key{"ok"}))(t); string(r["tags"].JSON()) != ok {
		t.Fatalf("tags = %.40s…", r["tags"].JSON())
	}
	deep := nest(engine.MaxJSONDepth + 1)
	dv, err := engine.JSONValue([]byte(deep))
	if err != nil {
		t.Fatal(err)
	}
	var goDeep any = []any{}
	for i := 0; i < engine.MaxJSONDepth; i++ {
		goDeep = []any{goDeep}
	}
	before := DumpStore(t, a.store)
	for name, v := range map[string]any{"RawMessage": json.RawMessage(deep), "Value": dv, "Go value": goDeep} {
		_, err := a.Insert("trips", map[string]any{"id": "deep", "title": "t", "tags": v})
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || ve.Table != "trips" || ve.Column != "tags" {
			t.Errorf("%s: insert of a json value %d deep: %v, want a ValidationError naming trips.tags", name, engine.MaxJSONDepth+1, err)
		}
		_, err = a.Update("trips", engine.Key{"ok"}, map[string]any{"tags": v})
		if !errors.As(err, &ve) || ve.Column != "tags" {
			t.Errorf("%s: update to a json value %d deep: %v, want a ValidationError", name, engine.MaxJSONDepth+1, err)
		}
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused writes wrote: %s", d)
	}
}

func filesSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{Name: "files", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "a", Type: engine.KindBlob}, {Name: "b", Type: engine.KindBlob}, {Name: "n", Type: engine.KindInteger}}}}}
}

// A row over the storage limit (8 MiB) is refused on every path, so two
// devices that each set a different 5 MiB column of one row offline could
// never exchange them: the relay and the peer both refused the merged
// row, cutting sync in both directions. Local writes are therefore held to
// a quarter of it (engine.MaxLocalRowSize); applies keep the storage limit,
// so the merge of concurrent writes lands.
func (s *suite) testLocalRowLimit(t *testing.T) {
	blob := func(n int, b byte) []byte {
		p := make([]byte, n)
		p[0] = b
		return p
	}
	const mib = 1 << 20
	a := s.newReplica(t, "a", filesSchema(), nil)
	b := s.newReplica(t, "b", filesSchema(), nil)
	before := DumpStore(t, a.store)
	_, err := a.Insert("files", map[string]any{"id": "big", "a": blob(engine.MaxLocalRowSize, 1)})
	var ve *engine.ValidationError
	if !errors.As(err, &ve) || ve.Table != "files" {
		t.Fatalf("local insert of a row over %d bytes: %v, want a ValidationError", engine.MaxLocalRowSize, err)
	}
	must(a.Insert("files", map[string]any{"id": "r"}))(t)
	pull(t, b, a)
	// Offline, a and b each set another column of the row.
	must(a.Update("files", engine.Key{"r"}, map[string]any{"a": blob(3*mib/2, 2)}))(t)
	if _, err := a.Update("files", engine.Key{"r"}, map[string]any{"b": blob(mib, 3)}); !errors.As(err, &ve) {
		t.Fatalf("local update growing a row past the local limit: %v, want a ValidationError", err)
	}
	if d := diffStore(before, DumpStore(t, a.store)); !strings.Contains(d, "rows") {
		t.Fatalf("the fitting insert did not land: %s", d)
	}
	must(b.Update("files", engine.Key{"r"}, map[string]any{"b": blob(3*mib/2, 4)}))(t)
	// Both directions merge into a 3 MiB row: over the local limit, under
	// the storage limit.
	pull(t, a, b)
	pull(t, b, a)
	for _, r := range []*replica{a, b} {
		row := must(r.Get("files", engine.Key{"r"}))(t)
		if len(row["a"].Blob()) != 3*mib/2 || len(row["b"].Blob()) != 3*mib/2 {
			t.Fatalf("%s: merged row has a %d, b %d bytes", r.name, len(row["a"].Blob()), len(row["b"].Blob()))
		}
	}
	sameVisible(t, a, b, "files")
	// A peer's single fact may grow a row past the local limit too.
	peer := engine.SiteID{7}
	h := engine.HLC{Wall: a.clock.Now(), Site: peer}
	cs := engine.ChangeSet{SiteID: peer, HLC: h, TransactionID: h.TransactionID(), Changes: []engine.Change{{Type: engine.ColumnChange, Table: "files",
		PK: []engine.Value{engine.Text("p")}, Column: "a", Value: engine.Blob(blob(5*mib, 5)), HLC: h}}}
	must(a.ApplyChanges([]engine.ChangeSet{cs}))(t)
	if len(must(a.Get("files", engine.Key{"p"}))(t)["a"].Blob()) != 5*mib {
		t.Fatal("a peer's 5 MiB value did not land")
	}
	// A local write that does not grow a merged row above the limit is
	// allowed: clearing a column, deleting the row.
	must(a.Update("files", engine.Key{"r"}, map[string]any{"b": nil}))(t)
	must(a.Delete("files", engine.Key{"p"}))(t)
	pull(t, b, a)
	sameVisible(t, a, b, "files")
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

// misfitCases are peers' facts that do not fit TripsSchema: a forged push
// through the schema-less relay put each of them into every browser.
func misfitCases() map[string]engine.Change {
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

func jsonNest(n int) engine.Value {
	v, err := engine.JSONValue([]byte(strings.Repeat("[", n) + strings.Repeat("]", n)))
	if err != nil {
		panic(err)
	}
	return v
}

// A peer's value that is not of its column's type (after the lossless
// normalization of wire spellings), a key of the wrong type, or a column
// the table does not define is not stored: it is held (never replayed for
// a misfit; replayed when the column appears for an unknown column),
// reported by an UnknownTableSeen event with a reason, and the rest of the
// batch applies. Prune drops what is held at the horizon.
func (s *suite) testRemoteMisfits(t *testing.T) {
	peer := engine.SiteID{8, 8}
	cases := misfitCases()
	cases["unknown column"] = setCell("trips", engine.Text("m"), "anything", engine.Text("x"))
	for name, bad := range cases {
		a := s.newReplica(t, "a", TripsSchema(), nil)
		var events []engine.UnknownTable
		a.Subscribe(func(ev engine.Event) {
			if ev.Type == engine.UnknownTableSeen {
				events = append(events, *ev.UnknownTable)
			}
		})
		now := a.clock.Now()
		// One ChangeSet mixes a fitting row with the misfit; a second is
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
			t.Fatalf("%s: %v (a misfit must not block the batch)", name, err)
		}
		if res.UnknownTable != 1 || res.Applied != 4 {
			t.Errorf("%s: result %+v, want 4 applied and 1 held", name, res)
		}
		if len(events) != 1 || events[0].Table != "trips" || events[0].Reason == "" || events[0].Changes != 1 {
			t.Errorf("%s: events %+v, want one UnknownTableSeen with a reason", name, events)
		}
		row := must(a.Get("trips", engine.Key{"m"}))(t)
		if row["title"].Text() != "fits" {
			t.Errorf("%s: row m = %s", name, fmtRow(row))
		}
		for col, v := range row {
			if !v.IsNull() && col != "id" && col != "title" {
				t.Errorf("%s: misfit stored: %s = %s", name, col, v)
			}
		}
		if _, ok := row["anything"]; ok {
			t.Errorf("%s: unknown column stored", name)
		}
		if g := must(a.Get("trips", engine.Key{"g"}))(t); !g["title"].IsNull() {
			t.Errorf("%s: remote null for a notNull column: %s", name, fmtRow(g))
		}
		held := must(a.Quarantined("trips"))(t)
		if len(held) != 1 || held[0].Misfit != (name != "unknown column") {
			t.Errorf("%s: held %+v", name, held)
		}
		if n := must(a.DrainQuarantine("trips"))(t); n != 0 {
			t.Errorf("%s: %d held changes replayed", name, n)
		}
		// Re-delivery holds nothing twice and applies nothing.
		res = must(a.ApplyChanges([]engine.ChangeSet{mixed, good}))(t)
		if res.Applied != 0 || len(must(a.Quarantined(""))(t)) != 1 {
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
func (s *suite) testSnapshotMisfits(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	for i := 0; i < 3; i++ {
		must(a.Insert("trips", map[string]any{"id": fmt.Sprintf("t%d", i), "title": "x", "days": i}))(t)
	}
	chunks := collect(t, a, engine.SnapshotOptions{})
	peer := engine.SiteID{6}
	h := engine.HLC{Wall: a.clock.Now(), Site: peer}
	var bad []engine.SnapshotRow
	n := 0
	for _, c := range misfitCases() {
		h.OpSeq++
		cell := engine.SnapshotCell{Column: c.Column, Value: c.Value, HLC: h}
		if c.PK[0].Kind() != engine.KindText {
			bad = append(bad, engine.SnapshotRow{PK: c.PK, Cells: []engine.SnapshotCell{cell}})
		} else {
			// A misfit cell beside a fitting one, in a row of its own.
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
	b := s.newReplica(t, "b", TripsSchema(), nil)
	var events []engine.UnknownTable
	b.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.UnknownTableSeen {
			events = append(events, *ev.UnknownTable)
		}
	})
	for _, c := range chunks {
		if _, err := b.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("%s chunk: %v (misfits must not refuse the snapshot)", c.Type, err)
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
				t.Errorf("misfit stored: %s = %s in %s", col, v, fmtRow(r))
			}
		}
	}
	held := must(b.Quarantined("trips"))(t)
	if len(held) != n+2 {
		t.Errorf("held %d facts, want %d", len(held), n+2)
	}
	if len(events) != 1 || events[0].Changes != n+2 || events[0].Reason == "" {
		t.Errorf("events %+v, want one UnknownTableSeen for %d facts", events, n+2)
	}
	if cp := must(b.SnapshotCheckpoint())(t); cp != nil {
		t.Errorf("snapshot not complete: %+v", cp)
	}
}

// A schema-less replica (the relay) stores values as received, but a value
// for a column whose type a migration declared must fit it: a misfit is
// refused (ErrMalformed, so the relay answers APPLY_CHANGES_REFUSED) and
// nothing of the batch is stored. Columns and tables without a declaration
// are accepted as received.
func (s *suite) testSchemaLessRefusesMisfits(t *testing.T) {
	src := s.newReplica(t, "src", TripsSchema(), nil)
	ddl := must(src.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	peer := engine.SiteID{4}
	for name, bad := range misfitCases() {
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

// A timestamp column holds a JavaScript Date's range, ±8.64e15 ms: beyond
// it a browser reads back an Invalid Date. A local write outside it is a
// ValidationError whatever its spelling; a peer's value outside it is a
// misfit (RemoteMisfits, SchemaLessRefusesMisfits).
func (s *suite) testTimestampRange(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	const max = engine.MaxTimestampMillis
	for i, v := range []any{int64(max), int64(-max), float64(max), engine.TimestampMillis(-max)} {
		id := fmt.Sprintf("ok%d", i)
		must(a.Insert("trips", map[string]any{"id": id, "title": "t", "starts": v}))(t)
		if got := must(a.Get("trips", engine.Key{id}))(t)["starts"]; got.Int() != max && got.Int() != -max {
			t.Errorf("%T %v stored as %s", v, v, got)
		}
	}
	before := DumpStore(t, a.store)
	for _, v := range []any{int64(max + 1), int64(-max - 1), float64(max + 1), 8.64e15 + 2, engine.TimestampMillis(max + 1),
		time.UnixMilli(max + 1), json.Number("8640000000000001")} {
		_, err := a.Insert("trips", map[string]any{"id": "bad", "title": "t", "starts": v})
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || ve.Column != "starts" {
			t.Errorf("%T %v: %v, want a ValidationError for starts", v, v, err)
		}
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused writes wrote: %s", d)
	}
}

// A conflict is two writers disagreeing about a cell (sync.md § Conflict
// Resolution). Re-delivered facts, and one site's later write superseding
// its earlier one — in either arrival order, with or without a
// before-image — are not conflicts: no event, not counted; an identical
// fact again counts as skipped.
func (s *suite) testNoConflictWithinOneSite(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	var conflicts []engine.Conflict
	a.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.ConflictResolved {
			conflicts = append(conflicts, *ev.Conflict)
		}
	})
	p, q := engine.SiteID{3, 1}, engine.SiteID{3, 2}
	now := a.clock.Now()
	f1 := forged(p, now, setCell("trips", engine.Text("c"), "id", engine.Text("c")), setCell("trips", engine.Text("c"), "title", engine.Text("one")))
	f2 := forged(p, now+1, setCell("trips", engine.Text("c"), "title", engine.Text("two"))) // no priorHlc, as forged
	check := func(step string, sets []engine.ChangeSet, applied, skipped int) {
		t.Helper()
		res := must(a.ApplyChanges(sets))(t)
		if res.Conflicts != 0 || len(conflicts) != 0 || res.Applied != applied || res.Skipped != skipped {
			t.Errorf("%s: result %+v, conflicts %+v; want no conflict, %d applied, %d skipped", step, res, conflicts, applied, skipped)
		}
		conflicts = nil
	}
	check("first write", []engine.ChangeSet{f1}, 2, 0)
	check("same site's later write", []engine.ChangeSet{f2}, 1, 0)
	check("earlier write re-delivered", []engine.ChangeSet{f1}, 0, 2)
	check("later write re-delivered", []engine.ChangeSet{f2}, 0, 1)
	// Arriving the other way round: the earlier write after the later.
	b := s.newReplica(t, "b", TripsSchema(), nil)
	a, conflicts = b, nil
	a.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.ConflictResolved {
			conflicts = append(conflicts, *ev.Conflict)
		}
	})
	check("later write first", []engine.ChangeSet{f2}, 1, 0)
	check("earlier write after it", []engine.ChangeSet{f1}, 1, 1)
	if r := must(b.Get("trips", engine.Key{"c"}))(t); r["title"].Text() != "two" {
		t.Fatalf("title = %s, want two", r["title"])
	}
	// Two sites disagreeing is a conflict, reported once.
	g := forged(q, now+2, setCell("trips", engine.Text("c"), "title", engine.Text("three")))
	res := must(b.ApplyChanges([]engine.ChangeSet{g}))(t)
	if res.Conflicts != 1 || len(conflicts) != 1 || !conflicts[0].RemoteWon {
		t.Fatalf("concurrent write of another site: %+v, %+v", res, conflicts)
	}
	conflicts = nil
	check("conflicting write re-delivered", []engine.ChangeSet{g}, 0, 1)
}
