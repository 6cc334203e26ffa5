package enginetest

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// validSet returns a well-formed remote ChangeSet inserting trips row id.
func validSet(site engine.SiteID, wall uint64, id string) engine.ChangeSet {
	base := engine.HLC{Wall: wall, Site: site}
	var cs engine.ChangeSet
	cs.SiteID = site
	for i, col := range []struct {
		name string
		v    engine.Value
	}{{"id", engine.Text(id)}, {"title", engine.Text("remote")}, {"days", engine.Int(2)}} {
		h := base
		h.OpSeq = uint32(i)
		cs.Changes = append(cs.Changes, engine.Change{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text(id)}, Column: col.name, Value: col.v, HLC: h})
	}
	cs.HLC = cs.Changes[len(cs.Changes)-1].HLC
	cs.TransactionID = base.TransactionID()
	return cs
}

func (s *suite) testBadInput(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	peer := engine.SiteID{9, 9, 9}
	now := a.clock.Now()
	cases := []struct {
		name string
		mut  func(cs *engine.ChangeSet)
	}{
		{"zero site", func(cs *engine.ChangeSet) { cs.SiteID = engine.SiteID{} }},
		{"empty ChangeSet", func(cs *engine.ChangeSet) { cs.Changes = nil }},
		{"wrong transaction id", func(cs *engine.ChangeSet) { cs.TransactionID = "1:2:x" }},
		{"hlc not the max fact", func(cs *engine.ChangeSet) { cs.HLC = cs.Changes[0].HLC }},
		{"facts of two transactions", func(cs *engine.ChangeSet) { cs.Changes[1].HLC.Counter++ }},
		{"facts of another site", func(cs *engine.ChangeSet) { cs.Changes[1].HLC.Site = engine.SiteID{7} }},
		{"duplicate opSeq", func(cs *engine.ChangeSet) { cs.Changes[1].HLC.OpSeq = 0 }},
		{"empty primary key", func(cs *engine.ChangeSet) { cs.Changes[1].PK = nil }},
		{"null primary key value", func(cs *engine.ChangeSet) { cs.Changes[1].PK = []engine.Value{engine.Null} }},
		{"invalid table name", func(cs *engine.ChangeSet) { cs.Changes[1].Table = "no such; table" }},
		{"invalid column name", func(cs *engine.ChangeSet) { cs.Changes[1].Column = "" }},
		{"deletion with a value", func(cs *engine.ChangeSet) {
			cs.Changes[2].Type = engine.RowDeletion
			cs.Changes[2].Column = ""
		}},
		{"unknown change type", func(cs *engine.ChangeSet) { cs.Changes[2].Type = 9 }},
	}
	for _, c := range cases {
		good := validSet(peer, now, "good")
		bad := validSet(peer, now+1, "bad")
		c.mut(&bad)
		before := DumpStore(t, a.store)
		// A bad ChangeSet in a batch rejects the whole batch.
		_, err := a.ApplyChanges([]engine.ChangeSet{good, bad})
		if !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", c.name, err)
			continue
		}
		if d := diffStore(before, DumpStore(t, a.store)); d != "" {
			t.Errorf("%s: rejected batch wrote: %s", c.name, d)
		}
	}
	// A change whose key does not fit the local table (another app version
	// declared the table with another primary key) is neither refused —
	// that would block sync with the peer forever — nor dropped: it is
	// held, reported, and never replayed.
	for _, mis := range []func(cs *engine.ChangeSet){
		func(cs *engine.ChangeSet) { cs.Changes[0].Value = engine.Text("other") },
		func(cs *engine.ChangeSet) {
			for i := range cs.Changes {
				cs.Changes[i].PK = []engine.Value{engine.Text("k"), engine.Int(1)}
			}
		},
	} {
		b := s.newReplica(t, "b", TripsSchema(), nil)
		cs := validSet(peer, now, "fit")
		mis(&cs)
		var events []engine.HeldReport
		b.Subscribe(func(ev engine.Event) {
			if ev.Type == engine.ChangesHeld {
				events = append(events, *ev.Held)
			}
		})
		res := must(b.ApplyChanges([]engine.ChangeSet{cs}))(t)
		if res.Held == 0 || len(events) != 1 || events[0].Reason != engine.HeldKeyMismatch || events[0].Detail == "" {
			t.Fatalf("key that does not fit: result %+v, events %+v", res, events)
		}
		held := must(b.HeldChanges("trips"))(t)
		if len(held) == 0 || !held[len(held)-1].NeverReplayed && !held[0].NeverReplayed {
			t.Fatalf("key that does not fit not held: %+v", held)
		}
		if n := must(b.ReplayHeld("trips"))(t); n != 0 {
			t.Fatalf("key that does not fit replayed (%d)", n)
		}
		if len(must(b.HeldChanges("trips"))(t)) != len(held) {
			t.Fatal("replay dropped a change that does not fit")
		}
	}
	// The good set alone applies; the caller's ChangeSets are not modified.
	good := validSet(peer, now, "good")
	keep := good.Changes[0]
	if _, err := a.ApplyChanges([]engine.ChangeSet{good}); err != nil {
		t.Fatal(err)
	}
	if good.Changes[0].Table != keep.Table || !good.Changes[0].Value.Equal(keep.Value) {
		t.Fatal("ApplyChanges modified its input")
	}
	if r := must(a.Get("trips", engine.Key{"good"}))(t); r["title"].Text() != "remote" {
		t.Fatalf("good row = %s", fmtRow(r))
	}
	// Own echoes are skipped.
	own := validSet(a.SiteID(), now, "echo")
	res := must(a.ApplyChanges([]engine.ChangeSet{own}))(t)
	if res.Applied != 0 || res.Skipped != 3 || res.Transactions != 0 {
		t.Fatalf("own echo: %+v", res)
	}
	// Remote values are normalized to the column type: an integral number
	// sent for a real column is stored as a real.
	n := validSet(peer, now+5, "norm")
	n.Changes = append(n.Changes, engine.Change{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text("norm")}, Column: "budget", Value: engine.Int(3), HLC: engine.HLC{Wall: now + 5, Site: peer, OpSeq: 3}})
	n.HLC = n.Changes[3].HLC
	must(a.ApplyChanges([]engine.ChangeSet{n}))(t)
	if b := must(a.Get("trips", engine.Key{"norm"}))(t)["budget"]; !b.Equal(engine.Real(3)) {
		t.Fatalf("budget = %s (%s), want real 3", b, b.Kind())
	}
	// HLC decoding is strict about length.
	if _, err := engine.HLCFromBytes(make([]byte, 29)); err == nil {
		t.Fatal("29-byte HLC decoded")
	}
	if _, err := engine.ParseSiteID("AAAAAAAAAAAAAAAAAAAAAA=="); err == nil {
		t.Fatal("padded site id parsed")
	}
}

func (s *suite) testHeldChanges(t *testing.T) {
	for _, policy := range []engine.HeldPolicy{engine.Hold, engine.Drop, engine.HoldAndForward} {
		t.Run(policy.String(), func(t *testing.T) {
			// b knows a table "notes" that a does not declare.
			notes := TripsSchema()
			notes.Tables = append(notes.Tables, engine.TableDef{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}})
			a := s.newReplica(t, "a", TripsSchema(), func(o *engine.Options) { o.HeldChanges = policy })
			b := s.newReplica(t, "b", notes, nil)
			must(b.Insert("notes", map[string]any{"id": "n1", "body": "hello"}))(t)
			// Only the data, not b's schema: as from a peer whose create_table
			// a never saw.
			sets := must(b.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
			var data []engine.ChangeSet
			for _, cs := range sets {
				if len(cs.Changes) > 0 {
					data = append(data, cs)
				}
			}
			var events []engine.HeldReport
			a.Subscribe(func(ev engine.Event) {
				if ev.Type == engine.ChangesHeld {
					events = append(events, *ev.Held)
				}
			})
			res := must(a.ApplyChanges(data))(t)
			if res.Held != 2 || res.Applied != 0 {
				t.Fatalf("result %+v, want 2 changes held", res)
			}
			if len(events) != 1 || events[0].Table != "notes" || events[0].Changes != 2 || events[0].Policy != policy ||
				events[0].Reason != engine.HeldUnknownTable || events[0].Detail != "" {
				t.Fatalf("events %+v", events)
			}
			held := must(a.HeldChanges("notes"))(t)
			if policy == engine.Drop {
				if len(held) != 0 {
					t.Fatalf("drop held %d changes", len(held))
				}
				return
			}
			if len(held) != 2 || held[0].Forward != (policy == engine.HoldAndForward) {
				t.Fatalf("held %+v", held)
			}
			// Holding is idempotent.
			must(a.ApplyChanges(data))(t)
			if n := len(must(a.HeldChanges(""))(t)); n != 2 {
				t.Fatalf("re-apply held %d changes, want 2", n)
			}
			// Hold-and-forward re-offers them to peers.
			if policy == engine.HoldAndForward {
				c := s.newReplica(t, "c", notes, nil)
				fwd := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
				must(c.ApplyChanges(fwd))(t)
				if r := must(c.Get("notes", engine.Key{"n1"}))(t); r["body"].Text() != "hello" {
					t.Fatalf("forwarded row = %s", fmtRow(r))
				}
			}
			// The table appears (b's schema arrives): the held changes replay.
			must(a.ApplyChanges(sets[:1]))(t)
			if r := must(a.Get("notes", engine.Key{"n1"}))(t); r["body"].Text() != "hello" {
				t.Fatalf("replayed row = %s", fmtRow(r))
			}
			if n := len(must(a.HeldChanges(""))(t)); n != 0 {
				t.Fatalf("%d changes still held after the table appeared", n)
			}
		})
	}
	// A local schema that adds the table replays them too (reopen with it).
	t.Run("ReplayOnOpen", func(t *testing.T) {
		st := s.open(t)
		clk := NewManualClock(T0)
		a := must(engine.Open(st, engine.Options{Schema: TripsSchema(), Clock: clk}))(t)
		peer := engine.SiteID{5}
		cs := engine.ChangeSet{SiteID: peer, HLC: engine.HLC{Wall: T0, Site: peer}, TransactionID: engine.HLC{Wall: T0, Site: peer}.TransactionID(),
			Changes: []engine.Change{{Type: engine.ColumnChange, Table: "notes", PK: []engine.Value{engine.Text("n")}, Column: "body", Value: engine.Text("held"), HLC: engine.HLC{Wall: T0, Site: peer}}}}
		must(a.ApplyChanges([]engine.ChangeSet{cs}))(t)
		a.Close()
		sc := TripsSchema()
		sc.Tables = append(sc.Tables, engine.TableDef{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}})
		a2 := must(engine.Open(st, engine.Options{Schema: sc, Clock: clk}))(t)
		defer a2.Close()
		if r := must(a2.Get("notes", engine.Key{"n"}))(t); r["body"].Text() != "held" {
			t.Fatalf("row after reopen = %s", fmtRow(r))
		}
	})
}

func (s *suite) testMigrations(t *testing.T) {
	v1 := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}}}}}
	v2 := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindText}, {Name: "stars", Type: engine.KindInteger, HasDefault: true, Default: engine.Int(0)}},
		Indexes: []engine.IndexDef{{Name: "by_stars", Columns: []string{"stars"}}}}}}
	st := s.open(t)
	clk := NewManualClock(T0)
	a := must(engine.Open(st, engine.Options{Schema: v1, Clock: clk}))(t)
	must(a.Insert("notes", map[string]any{"id": "n1", "body": "x"}))(t)
	a.Close()
	clk.Advance(10)
	a = must(engine.Open(st, engine.Options{Schema: v2, Clock: clk}))(t)
	defer a.Close()
	sets := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	var types []engine.MigrationType
	for _, cs := range sets {
		for _, m := range cs.Migrations {
			types = append(types, m.Type)
		}
	}
	if len(types) != 3 || types[0] != engine.CreateTable || types[1] != engine.AddColumn || types[2] != engine.AddIndex {
		t.Fatalf("migrations %v, want create_table, add_column, add_index", types)
	}
	// Reopening with the same schema records nothing.
	before := len(sets)
	a.Close()
	a = must(engine.Open(st, engine.Options{Schema: v2, Clock: clk}))(t)
	if n := len(must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)); n != before {
		t.Fatalf("reopen with the same schema: %d sets, want %d", n, before)
	}
	// A peer that never declared notes receives the table, the column and
	// the index, DDL before data, and can query by the index.
	b := s.newReplica(t, "b", nil, nil)
	c := s.newReplica(t, "c", TripsSchema(), nil)
	must(a.Update("notes", engine.Key{"n1"}, map[string]any{"stars": 5}))(t)
	all := must(a.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i] // deliver in reverse: DDL must still go first
	}
	must(b.ApplyChanges(all))(t)
	must(c.ApplyChanges(all))(t)
	rows := must(c.Query("notes", engine.Query{Where: []engine.Filter{{Column: "stars", Op: engine.Ge, Value: 5}}}))(t)
	if len(rows) != 1 || rows[0]["body"].Text() != "x" {
		t.Fatalf("peer query by the migrated index: %v", rows)
	}
	sc := must(c.Schema())(t)
	var notes *engine.TableDef
	for i := range sc.Tables {
		if sc.Tables[i].Name == "notes" {
			notes = &sc.Tables[i]
		}
	}
	if notes == nil || len(notes.Columns) != 3 || len(notes.Indexes) != 1 {
		t.Fatalf("peer schema for notes: %+v", notes)
	}
	// A duplicate identical migration (another device declaring the same
	// schema) is a no-op for the schema.
	d := s.newReplica(t, "d", v2, nil)
	dd := must(d.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{}))(t)
	must(c.ApplyChanges(dd))(t)
	sc2 := must(c.Schema())(t)
	for i := range sc2.Tables {
		if sc2.Tables[i].Name == "notes" && len(sc2.Tables[i].Columns) != 3 {
			t.Fatalf("duplicate migration changed the schema: %+v", sc2.Tables[i])
		}
	}
	// A declaration that contradicts the stored schema is refused.
	bad := &engine.Schema{Tables: []engine.TableDef{{Name: "notes", Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "body", Type: engine.KindInteger}}}}}
	a.Close()
	if _, err := engine.Open(st, engine.Options{Schema: bad, Clock: clk}); !errors.Is(err, engine.ErrSchema) {
		t.Fatalf("changed column type: %v, want ErrSchema", err)
	}
}
