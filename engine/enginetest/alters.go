package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testAlterKinds: AlterColumn on the replica that issues it and on a peer
// (notNull and the default replicate), its refusals, a declaration that
// differs, a peer's malformed alter, and the way through a schema-less
// (relay) replica and a snapshot.
func (s *suite) testAlterKinds(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "old", "title": "Old"}))(t) // days null
	pull(t, b, a)
	a.clock.Advance(10)
	yes, no := true, false
	if err := a.AlterColumn("trips", "days", engine.Alteration{NotNull: &yes, SetDefault: true, Default: 3}); err != nil {
		t.Fatal(err)
	}
	// title is declared notNull; the alter makes it optional everywhere,
	// whatever each replica's declaration says.
	if err := a.AlterColumn("trips", "title", engine.Alteration{NotNull: &no}); err != nil {
		t.Fatal(err)
	}
	if err := a.AlterColumn("trips", "budget", engine.Alteration{DropDefault: true}); err != nil {
		t.Fatal(err)
	}
	pull(t, b, a)
	// Right after learning the alters (before anything reads the schema):
	// b's declaration says title is notNull, the alter does not.
	must(b.Insert("trips", map[string]any{"id": "fast"}))(t)
	st := b.Stage()
	must(st.Insert("trips", map[string]any{"id": "staged"}))(t)
	must(st.Commit())(t)
	for _, id := range []string{"fast", "staged"} {
		if row := must(b.Get("trips", engine.Key{id}))(t); !row["days"].Equal(engine.Int(3)) || !row["title"].IsNull() {
			t.Fatalf("b: %s: %v", id, fmtRow(row))
		}
	}
	for _, r := range []*replica{a, b} {
		d := schemaOf(t, r, "trips")
		c := column(d, "days")
		if !c.NotNull || !c.HasDefault || !c.Default.Equal(engine.Int(3)) {
			t.Fatalf("%s: days after the alter: %+v", r.name, c)
		}
		if c := column(d, "title"); c.NotNull {
			t.Fatalf("%s: title still notNull: %+v", r.name, c)
		}
		if c := column(d, "budget"); c.HasDefault {
			t.Fatalf("%s: budget still has a default: %+v", r.name, c)
		}
		// Later inserts take the new default and may omit title.
		row := must(r.Insert("trips", map[string]any{"id": "new-" + r.name}))(t)
		if !row["days"].Equal(engine.Int(3)) || !row["title"].IsNull() || !row["budget"].IsNull() {
			t.Fatalf("%s: insert after the alter: %v", r.name, fmtRow(row))
		}
		// Writes must satisfy notNull; the row that held null keeps it.
		var ve *engine.ValidationError
		if _, err := r.Update("trips", engine.Key{"new-" + r.name}, map[string]any{"days": nil}); !errors.As(err, &ve) {
			t.Fatalf("%s: days set to null after the alter: %v, want a *ValidationError", r.name, err)
		}
		old := must(r.Get("trips", engine.Key{"old"}))(t)
		if !old["days"].IsNull() {
			t.Fatalf("%s: the existing row changed: %v", r.name, fmtRow(old))
		}
		must(r.Update("trips", engine.Key{"old"}, map[string]any{"title": "Still old"}))(t) // other columns may change
	}
	pull(t, a, b)
	pull(t, b, a)
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("after the alters: %s", d)
	}

	// Refusals.
	var se *engine.SchemaError
	for _, c := range []struct {
		table, col string
		a          engine.Alteration
		want       string
	}{
		{"trips", "id", engine.Alteration{NotNull: &no}, "primary key column cannot be altered"},
		{"stops", "pos", engine.Alteration{SetDefault: true, Default: 1}, "primary key column cannot be altered"},
		{"trips", "nope", engine.Alteration{NotNull: &yes}, "no such column"},
		{"trips", "days", engine.Alteration{Type: engine.KindText}, "add a new column of type text, copy the values, and drop this one"},
		{"trips", "days", engine.Alteration{}, "changes nothing"},
		{"trips", "days", engine.Alteration{SetDefault: true, Default: 1, DropDefault: true}, "not both"},
		{"trips", "days", engine.Alteration{SetDefault: true, Default: nil}, "null default"},
		{"trips", "days", engine.Alteration{SetDefault: true, Default: "many"}, "invalid default"},
		{"trips", "budget", engine.Alteration{NotNull: &yes, SetDefault: true}, "null default"},
	} {
		before := ownMigrations(t, a)
		err := a.AlterColumn(c.table, c.col, c.a)
		if !errors.As(err, &se) || !errors.Is(err, engine.ErrSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("alter %s.%s %+v: %v, want a *SchemaError saying %q", c.table, c.col, c.a, err, c.want)
		}
		if ownMigrations(t, a) != before {
			t.Errorf("alter %s.%s %+v recorded a migration", c.table, c.col, c.a)
		}
	}
	if err := a.AlterColumn("nope", "x", engine.Alteration{NotNull: &yes}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Errorf("alter in an unknown table: %v", err)
	}
	// The same type is not a change of type.
	if err := a.AlterColumn("trips", "days", engine.Alteration{Type: engine.KindInteger, SetDefault: true, Default: 4}); err != nil {
		t.Fatal(err)
	}
	// A dropped column is not altered.
	a.clock.Advance(10)
	if err := a.DropColumn("trips", "photo"); err != nil {
		t.Fatal(err)
	}
	if err := a.AlterColumn("trips", "photo", engine.Alteration{NotNull: &no}); !errors.As(err, &se) || !strings.Contains(err.Error(), "dropped") {
		t.Errorf("alter of a dropped column: %v", err)
	}

	// Re-opening with the declaration (title notNull, budget default 0)
	// records nothing and alters nothing.
	n := ownMigrations(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := engine.Open(b.store, engine.Options{Schema: TripsSchema(), Clock: b.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b2.Close() })
	b = &replica{Engine: b2, store: b.store, clock: b.clock, name: "b"}
	if got := ownMigrations(t, b); got != n {
		t.Fatalf("re-open recorded %d migrations", got-n)
	}
	if c := column(schemaOf(t, b, "trips"), "title"); c.NotNull {
		t.Fatalf("re-open with the declaration made title notNull again")
	}
	must(b.Insert("trips", map[string]any{"id": "after-reopen"}))(t)
	pull(t, a, b)
	pull(t, b, a)

	// A peer's malformed alter is refused and writes nothing.
	site := engine.SiteID{7, 7}
	h := engine.HLC{Wall: T0 + 1000, Site: site}
	for _, m := range []engine.SchemaMigration{
		{Type: engine.AlterColumn, TableName: "trips", Name: "days"},
		{Type: engine.AlterColumn, TableName: "trips", Name: "bad name!", Alter: &engine.ColumnAlter{SetNotNull: true}},
		{Type: engine.AlterColumn, TableName: "trips", Name: "days", Alter: &engine.ColumnAlter{}},
		{Type: engine.AlterColumn, TableName: "trips", Name: "days", Alter: &engine.ColumnAlter{SetNotNull: true}, Column: &engine.ColumnDef{Name: "days", Type: engine.KindInteger}},
		{Type: engine.DropColumn, TableName: "trips", Name: "days", Alter: &engine.ColumnAlter{SetNotNull: true}},
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
	// A peer's alter whose default does not fit the column's type (or of
	// a key column) has no effect (on that attribute); the rest applies.
	h.Wall++
	h1 := engine.HLC{Wall: h.Wall, Site: site, OpSeq: 1}
	cs := engine.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h1, Migrations: []engine.SchemaMigration{
		{Type: engine.AlterColumn, TableName: "trips", Name: "days", HLC: h, Alter: &engine.ColumnAlter{SetNotNull: true, NotNull: false, SetDefault: true, HasDefault: true, Default: engine.Text("x")}},
		{Type: engine.AlterColumn, TableName: "trips", Name: "id", HLC: h1, Alter: &engine.ColumnAlter{SetNotNull: true, NotNull: false}},
	}}
	must(a.ApplyChanges([]engine.ChangeSet{cs}))(t)
	d := schemaOf(t, a, "trips")
	if c := column(d, "days"); c.NotNull || !c.Default.Equal(engine.Int(4)) {
		t.Fatalf("days after a peer's alter with a misfit default: %+v", c)
	}
	if c := column(d, "id"); !c.NotNull {
		t.Fatalf("a peer's alter made a key column optional")
	}
	pull(t, b, a)
	s.checkViaRelay(t, a, b)
	// A device joining by snapshot (from the relay, above) gets the
	// altered column: checked there by comparing the stores, migrations
	// included; and directly:
	f := s.newReplica(t, "fresh", TripsSchema(), nil)
	for _, c := range collect(t, a, engine.SnapshotOptions{ChunkRows: 1}) {
		must(f.ApplySnapshotChunk(c))(t)
	}
	if c := column(schemaOf(t, f, "trips"), "days"); c.NotNull || !c.Default.Equal(engine.Int(4)) {
		t.Fatalf("days on a replica bootstrapped by snapshot: %+v", c)
	}
	if row := must(f.Insert("trips", map[string]any{"id": "fresh"}))(t); !row["days"].Equal(engine.Int(4)) || !row["title"].IsNull() {
		t.Fatalf("insert on a replica bootstrapped by snapshot: %v", fmtRow(row))
	}
}

func column(d *engine.TableDef, name string) *engine.ColumnDef {
	if d == nil {
		return nil
	}
	for i := range d.Columns {
		if d.Columns[i].Name == name {
			return &d.Columns[i]
		}
	}
	return &engine.ColumnDef{Name: name + " (missing)"}
}

// alterAttrs is what testAlters compares: a column's notNull and default.
func alterAttrs(c *engine.ColumnDef) string {
	if c == nil {
		return "missing"
	}
	if !c.HasDefault {
		return fmt.Sprintf("notNull=%t default=none", c.NotNull)
	}
	return fmt.Sprintf("notNull=%t default=%v", c.NotNull, c.Default)
}

// testAlters: replicas alter the same columns concurrently at random
// clocks, exchange their ChangeSets in random orders (with duplicates),
// and must end with the same notNull and default, per attribute the
// alter with the highest HLC (an alter after a drop of its column has no
// effect), the same stores, and so must a replica that joins by snapshot.
func (s *suite) testAlters(t *testing.T) {
	seed := s.seed(t)
	cases := 30
	if s.o.Short || testing.Short() {
		cases = 6
	}
	for i := 0; i < cases; i++ {
		if !s.alterCase(t, i, seed+uint64(i)) {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
}

func (s *suite) alterCase(t *testing.T, n int, seed uint64) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	reps := make([]*replica, 3)
	for i := range reps {
		reps[i] = s.newReplica(t, fmt.Sprintf("c%d-r%d", n, i), TripsSchema(), nil)
		reps[i].clock.Set(T0 + uint64(rng.IntN(5)))
	}
	yes, no := true, false
	cols := []string{"days", "budget", "title", "tags"}
	defaults := map[string][]any{"days": {1, 2, 3}, "budget": {0.5, 9.0}, "title": {"a", "b"}, "tags": {`[1]`, `{"k":2}`}}
	for op := 0; op < 40; op++ {
		r := reps[rng.IntN(len(reps))]
		r.clock.Advance(uint64(rng.IntN(3)))
		col := cols[rng.IntN(len(cols))]
		var a engine.Alteration
		switch rng.IntN(5) {
		case 0:
			a.NotNull = &yes
		case 1:
			a.NotNull = &no
		case 2:
			a.SetDefault, a.Default = true, defaults[col][rng.IntN(len(defaults[col]))]
		case 3:
			a.DropDefault = true
		case 4:
			if rng.IntN(8) == 0 {
				_ = r.DropColumn("trips", "tags") // the others' alters of it go with it
				continue
			}
			a.NotNull, a.SetDefault, a.Default = &yes, true, defaults[col][0]
		}
		_ = r.AlterColumn("trips", col, a) // refusals (a null default on notNull, a dropped column) are fine
		if rng.IntN(4) == 0 {
			_, _ = r.Insert("trips", map[string]any{"title": "t", "days": rng.IntN(4), "budget": 1.0, "tags": "[]"})
		}
		if rng.IntN(6) == 0 {
			// Some exchange on the way: alters then build on others'.
			pull(t, reps[rng.IntN(len(reps))], r)
		}
	}
	// Everything, to everyone, in random order, some twice.
	var all []engine.ChangeSet
	for _, r := range reps {
		all = append(all, must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t)...)
	}
	for _, r := range reps {
		order := rng.Perm(len(all))
		for _, i := range order {
			if all[i].SiteID == r.SiteID() {
				continue
			}
			must(r.ApplyChanges(all[i : i+1]))(t)
			if rng.IntN(5) == 0 {
				must(r.ApplyChanges(all[i : i+1]))(t)
			}
		}
	}
	// Expected: per attribute, the highest HLC's alter that applied.
	want := map[string]string{}
	base := schemaOf(t, reps[0], "trips")
	for _, c := range cols {
		want[c] = alterAttrs(column(base, c))
	}
	ok := true
	for _, r := range reps[1:] {
		got := schemaOf(t, r, "trips")
		for _, c := range cols {
			if g := alterAttrs(column(got, c)); g != want[c] {
				t.Errorf("case %d: %s: %s is %s, %s has %s", n, r.name, c, g, reps[0].name, want[c])
				ok = false
			}
		}
		if d := diffDumps(DumpStore(t, reps[0].store), DumpStore(t, r.store)); d != "" {
			t.Errorf("case %d: %s and %s differ: %s", n, reps[0].name, r.name, d)
			ok = false
		}
	}
	// The expected winner, computed from the migrations themselves.
	type win struct {
		h   engine.HLC
		val string
	}
	nn, def := map[string]win{}, map[string]win{}
	dropped := map[string]bool{}
	for _, cs := range all {
		for _, m := range cs.Migrations {
			switch {
			case m.Type == engine.DropColumn:
				dropped[m.Name] = true
			case m.Type != engine.AlterColumn:
			default:
				if m.Alter.SetNotNull && nn[m.Name].h.Less(m.HLC) {
					nn[m.Name] = win{m.HLC, fmt.Sprint(m.Alter.NotNull)}
				}
				if m.Alter.SetDefault && def[m.Name].h.Less(m.HLC) {
					v := "none"
					if m.Alter.HasDefault {
						v = fmt.Sprint(m.Alter.Default)
					}
					def[m.Name] = win{m.HLC, v}
				}
			}
		}
	}
	for _, c := range cols {
		if dropped[c] {
			if col := column(base, c); !strings.HasSuffix(col.Name, "(missing)") {
				t.Errorf("case %d: %s was dropped but is there: %+v", n, c, col)
				ok = false
			}
			continue
		}
		col := column(base, c)
		if w, set := nn[c]; set && fmt.Sprint(col.NotNull) != w.val {
			t.Errorf("case %d: %s notNull %t, the latest alter says %s", n, c, col.NotNull, w.val)
			ok = false
		}
		if w, set := def[c]; set {
			got := "none"
			if col.HasDefault {
				got = fmt.Sprint(col.Default)
			}
			// A null default on a column left notNull is no default.
			if got != w.val && !(w.val == fmt.Sprint(engine.Null) && got == "none" && col.NotNull) {
				t.Errorf("case %d: %s default %s, the latest alter says %s", n, c, got, w.val)
				ok = false
			}
		}
	}
	// A replica joining by snapshot has the same schema and rows.
	f := s.newReplica(t, fmt.Sprintf("c%d-fresh", n), TripsSchema(), nil)
	for _, c := range collect(t, reps[1], engine.SnapshotOptions{ChunkRows: 2}) {
		must(f.ApplySnapshotChunk(c))(t)
	}
	got := schemaOf(t, f, "trips")
	for _, c := range cols {
		if g := alterAttrs(column(got, c)); g != want[c] {
			t.Errorf("case %d: the snapshot-bootstrapped replica: %s is %s, want %s", n, c, g, want[c])
			ok = false
		}
	}
	return ok
}

// testAlterOneAttribute: an alter governs only the attributes it names. b
// declares a default for days that the table's creator (a) did not; a's
// alter makes days notNull and leaves the default alone, so b's inserts
// that omit days still take b's declared default (before the fix, the
// alter replaced both attributes with the store's: no default, and b's
// inserts were refused), and a's, with no default, are refused.
func (s *suite) testAlterOneAttribute(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	bs := TripsSchema()
	for i := range bs.Tables[0].Columns {
		if c := &bs.Tables[0].Columns[i]; c.Name == "days" {
			c.HasDefault, c.Default = true, engine.Int(7)
		}
	}
	b := s.newReplica(t, "b", bs, nil)
	a.clock.Advance(10)
	yes := true
	if err := a.AlterColumn("trips", "days", engine.Alteration{NotNull: &yes}); err != nil {
		t.Fatal(err)
	}
	pull(t, b, a)
	row := must(b.Insert("trips", map[string]any{"id": "b1", "title": "B"}))(t)
	if !row["days"].Equal(engine.Int(7)) {
		t.Fatalf("b's insert without days: %v, want b's declared default 7", fmtRow(row))
	}
	st := b.Stage()
	must(st.Insert("trips", map[string]any{"id": "b2", "title": "B"}))(t)
	must(st.Commit())(t)
	if _, err := b.Update("trips", engine.Key{"b1"}, map[string]any{"days": nil}); err == nil {
		t.Fatal("b set days to null after the notNull alter")
	}
	if _, err := a.Insert("trips", map[string]any{"id": "a1", "title": "A"}); err == nil {
		t.Fatal("a inserted a row without days after making it notNull (a has no default)")
	}
}
