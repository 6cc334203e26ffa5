package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testRenameKinds: RenameTable on the replica that issues it and on a
// peer, whichever comes first, the rename or the data; its refusals; a
// declaration of the old name and of the new one; events; and the way
// through a schema-less (relay) replica and a snapshot (docs/design.md §
// Schema migrations, "Renaming tables").
func (s *suite) testRenameKinds(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "Lisbon", "days": 3}))(t)
	pull(t, b, a)
	a.clock.Advance(10)
	var events []engine.Event
	unsub := a.Subscribe(func(ev engine.Event) { events = append(events, ev) })
	if err := a.RenameTable("trips", "journeys"); err != nil {
		t.Fatal(err)
	}
	// The old name is refused, saying the new one; the new one works,
	// its index too.
	if _, err := a.Insert("trips", map[string]any{"id": "x", "title": "X"}); !errors.Is(err, engine.ErrUnknownTable) || !strings.Contains(err.Error(), `renamed to "journeys"`) {
		t.Fatalf("insert into the old name: %v, want ErrUnknownTable saying it was renamed to journeys", err)
	}
	if _, err := a.Query("trips", engine.Query{}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("query of the old name: %v", err)
	}
	must(a.Insert("journeys", map[string]any{"id": "t2", "title": "Porto"}))(t)
	if _, err := a.Insert("journeys", map[string]any{"id": "t2", "title": "again"}); !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "journeys") {
		t.Fatalf("insert of an existing key: %v, want ErrConflict naming journeys", err)
	}
	if _, err := a.Update("journeys", engine.Key{"t2"}, map[string]any{"id": "t1"}); !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "journeys") {
		t.Fatalf("moving a row onto an existing key: %v, want ErrConflict naming journeys", err)
	}
	// Errors about the renamed table's rows and columns name it by its
	// current name, not the one it was created with.
	for what, err := range map[string]error{
		"insert without the notNull title": func() error { _, err := a.Insert("journeys", map[string]any{"id": "t9"}); return err }(),
		"insert of an unknown column": func() error {
			_, err := a.Insert("journeys", map[string]any{"id": "t9", "title": "T", "nope": 1})
			return err
		}(),
		"update of title to null": func() error {
			_, err := a.Update("journeys", engine.Key{"t2"}, map[string]any{"title": nil})
			return err
		}(),
		"filter on an unknown column": func() error {
			_, err := a.Query("journeys", engine.Query{Where: []engine.Filter{{Column: "nope", Op: "eq", Value: 1}}})
			return err
		}(),
	} {
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || ve.Table != "journeys" || strings.Contains(err.Error(), "trips") {
			t.Errorf("%s: %v, want a ValidationError naming journeys, not trips", what, err)
		}
	}
	rows := must(a.Query("journeys", engine.Query{Where: []engine.Filter{{Column: "title", Op: "prefix", Value: "Po"}}}))(t)
	if len(rows) != 1 || rows[0]["id"].Text() != "t2" {
		t.Fatalf("journeys by title prefix Po: %v", rows)
	}
	unsub()
	if len(events) != 2 || !slices.Equal(events[1].Tables, []string{"journeys"}) || len(events[1].Rows) != 1 || events[1].Rows[0].Table != "journeys" {
		t.Fatalf("events name the renamed table by its new name: %+v", events)
	}
	if d := schemaOf(t, a, "journeys"); d == nil || schemaOf(t, a, "trips") != nil || !slices.Equal(indexNames(d), []string{"by_title", "by_done_days"}) {
		t.Fatalf("a's schema: %+v", must(a.Schema())(t))
	}
	// b writes under the old name before it learns the rename: the write
	// lands in the renamed table on both replicas.
	b.clock.Advance(5)
	must(b.Insert("trips", map[string]any{"id": "t3", "title": "Faro"}))(t)
	must(b.Update("trips", engine.Key{"t1"}, map[string]any{"days": 4}))(t)
	pull(t, a, b)
	var bTables []string
	unsubB := b.Subscribe(func(ev engine.Event) { bTables = append(bTables, ev.Tables...) })
	pull(t, b, a)
	unsubB()
	if !slices.Contains(bTables, "trips") || !slices.Contains(bTables, "journeys") {
		t.Fatalf("b's events on learning the rename name %v, want trips (what read the old name must re-run) and journeys", bTables)
	}
	for _, r := range []*replica{a, b} {
		got := must(r.Query("journeys", engine.Query{OrderBy: []engine.Order{{Column: "id"}}}))(t)
		var ids []string
		for _, row := range got {
			ids = append(ids, row["id"].Text())
		}
		if !slices.Equal(ids, []string{"t1", "t2", "t3"}) {
			t.Fatalf("%s: journeys holds %v, want t1 t2 t3", r.name, ids)
		}
		if row := must(r.Get("journeys", engine.Key{"t1"}))(t); !row["days"].Equal(engine.Int(4)) {
			t.Fatalf("%s: t1 %v, want b's update of days", r.name, fmtRow(row))
		}
	}
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("a and b differ: %s", d)
	}
	// A peer's change for a column the table does not define, under the
	// old name: held, and counted under the current name.
	site := engine.SiteID{7, 7}
	h := engine.HLC{Wall: T0 + 1, Site: site}
	held := engine.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: h, Changes: []engine.Change{
		{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text("t1")}, Column: "later", Value: engine.Int(1), HLC: h}}}
	must(a.ApplyChanges([]engine.ChangeSet{held}))(t)
	must(b.ApplyChanges([]engine.ChangeSet{held}))(t)
	if hc := must(a.HeldCounts())(t); len(hc) != 1 || hc[0].Table != "journeys" || hc[0].Reason != engine.HeldUnknownColumn {
		t.Fatalf("held counts after the rename: %+v, want one unknown column of journeys", hc)
	}
	if hs := must(a.HeldChanges("journeys"))(t); len(hs) != 1 || hs[0].Change.Table != "trips" {
		t.Fatalf("held changes of journeys: %+v, want the one held under trips", hs)
	}
	// Refusals write nothing.
	before := DumpStore(t, a.store)
	for _, c := range []struct {
		from, to string
		want     error
	}{
		{"journeys", "bad name!", engine.ErrSchema},
		{"journeys", "", engine.ErrSchema},
		{"journeys", "journeys", engine.ErrSchema},
		{"journeys", "stops", engine.ErrSchema},      // another table's
		{"stops", "trips", engine.ErrSchema},         // another table's former name
		{"trips", "voyages", engine.ErrUnknownTable}, // not its name any more
		{"nosuch", "voyages", engine.ErrUnknownTable},
	} {
		if err := a.RenameTable(c.from, c.to); !errors.Is(err, c.want) {
			t.Errorf("RenameTable(%q, %q): %v, want %v", c.from, c.to, err, c.want)
		}
	}
	if d := diffStore(before, DumpStore(t, a.store)); d != "" {
		t.Fatalf("refused renames wrote: %s", d)
	}
	// An old app version declaring the old name opens (nothing recorded)
	// and its writes to the old name are refused, saying the new name; a
	// new one declaring the new name opens onto the same table.
	for _, c := range []struct {
		name     string
		declared string
	}{{"old app", "trips"}, {"new app", "journeys"}} {
		sc := TripsSchema()
		sc.Tables[0].Name = c.declared
		e, err := engine.Open(a.store, engine.Options{Schema: sc, Clock: a.clock})
		if err != nil {
			t.Fatalf("%s: open: %v", c.name, err)
		}
		_, werr := e.Insert(c.declared, map[string]any{"id": "y", "title": "Y"})
		n, qerr := e.Count("journeys", nil)
		e.Close()
		if c.declared == "trips" && (!errors.Is(werr, engine.ErrUnknownTable) || !strings.Contains(werr.Error(), `renamed to "journeys"`)) {
			t.Fatalf("%s: insert: %v", c.name, werr)
		}
		if c.declared == "journeys" && (werr != nil || qerr != nil || n != 4) {
			t.Fatalf("%s: insert %v, count %d %v", c.name, werr, n, qerr)
		}
	}
	if d := diffBuckets(before, DumpStore(t, a.store), "migrations"); d != "" {
		t.Fatalf("opening with either name recorded a migration: %s", d)
	}
	// Renaming back to a former name is a rename like any other; a drop
	// wins over renames.
	a.clock.Advance(10)
	if err := a.RenameTable("journeys", "trips"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(20)
	if err := b.RenameTable("journeys", "voyages"); err != nil { // concurrent, later HLC
		t.Fatal(err)
	}
	pull(t, a, b)
	pull(t, b, a)
	for _, r := range []*replica{a, b} {
		if schemaOf(t, r, "voyages") == nil || schemaOf(t, r, "trips") != nil {
			t.Fatalf("%s: the concurrent rename with the higher HLC names the table: %+v", r.name, must(r.Schema())(t))
		}
	}
	s.checkViaRelayAs(t, "voyages", a, b)
	if err := a.DropTable("voyages"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(50)
	if err := b.RenameTable("voyages", "outings"); err != nil { // later than the drop
		t.Fatal(err)
	}
	pull(t, a, b)
	pull(t, b, a)
	for _, r := range []*replica{a, b} {
		if d := schemaOf(t, r, "outings"); d != nil || schemaOf(t, r, "voyages") != nil {
			t.Fatalf("%s: a rename after a drop brought the table back: %+v", r.name, must(r.Schema())(t))
		}
		if err := r.RenameTable("outings", "x"); !errors.Is(err, engine.ErrUnknownTable) {
			t.Fatalf("%s: renaming a dropped table: %v", r.name, err)
		}
	}
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("a and b differ after the drop: %s", d)
	}
}

// checkViaRelayAs is checkViaRelay for a renamed trips table: the relay's
// snapshot, taken after the data and migrations arrived newest first,
// bootstraps a fresh replica (declaring trips, the old name) to reps[0]'s
// state, the table named name.
func (s *suite) checkViaRelayAs(t *testing.T, name string, reps ...*replica) {
	t.Helper()
	rl := s.newReplica(t, "relay", nil, func(o *engine.Options) { o.LocalChangeLogOnly = true })
	for _, r := range reps {
		sets := must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t)
		for i := len(sets) - 1; i >= 0; i-- {
			must(rl.ApplyChanges(sets[i : i+1]))(t)
		}
	}
	if schemaOf(t, rl, name) == nil {
		t.Fatalf("the relay does not hold %s: %+v", name, must(rl.Schema())(t))
	}
	f := s.newReplica(t, "fresh-from-relay", TripsSchema(), nil)
	for _, c := range collect(t, rl, engine.SnapshotOptions{ChunkRows: 1}) {
		if _, err := f.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("snapshot from the relay: %v", err)
		}
	}
	pull(t, f, reps[0])
	pull(t, reps[0], f)
	// Rows, log, indexes, tombstones (changes held from a peer the relay
	// never saw are a's alone).
	if d := diffData(DumpStore(t, reps[0].store), DumpStore(t, f.store)); d != "" {
		t.Fatalf("%s and a replica bootstrapped from the relay: %s", reps[0].name, d)
	}
	if got, want := fmt.Sprint(must(f.Schema())(t).Tables), fmt.Sprint(must(reps[0].Schema())(t).Tables); got != want {
		t.Fatalf("the replica bootstrapped from the relay has schema %s, want %s", got, want)
	}
	if n := must(f.Count(name, nil))(t); n != must(reps[0].Count(name, nil))(t) {
		t.Fatalf("the bootstrapped replica counts %d rows in %s", n, name)
	}
}

// testRenameJoin: a device that has not learned a rename creates a table
// under the new name (a fresh device of the new app version, before its
// first sync) and writes to it: the two tables are one (a name, once a
// table's, names it for good), whatever the order, and no row is lost.
func (s *suite) testRenameJoin(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	must(a.Insert("trips", map[string]any{"id": "a1", "title": "A"}))(t)
	a.clock.Advance(10)
	if err := a.RenameTable("trips", "journeys"); err != nil {
		t.Fatal(err)
	}
	sc := TripsSchema()
	sc.Tables[0].Name = "journeys"
	f := s.newReplica(t, "fresh", sc, nil)
	f.clock.Advance(20)
	must(f.Insert("journeys", map[string]any{"id": "f1", "title": "F"}))(t)
	must(f.Insert("journeys", map[string]any{"id": "a1", "title": "F's a1"}))(t) // the same key, later
	// f bootstraps from a's snapshot: its rows move into the table.
	for _, c := range collect(t, a, engine.SnapshotOptions{ChunkRows: 1}) {
		must(f.ApplySnapshotChunk(c))(t)
	}
	pull(t, a, f)
	pull(t, f, a)
	for _, r := range []*replica{a, f} {
		rows := must(r.Query("journeys", engine.Query{OrderBy: []engine.Order{{Column: "id"}}}))(t)
		if len(rows) != 2 || rows[0]["title"].Text() != "F's a1" || rows[1]["id"].Text() != "f1" {
			t.Fatalf("%s: journeys %v", r.name, rows)
		}
		if tb := must(r.Schema())(t).Tables; len(tb) != 2 {
			t.Fatalf("%s: tables %+v", r.name, tb)
		}
	}
	if d := diffDumps(DumpStore(t, a.store), DumpStore(t, f.store)); d != "" {
		t.Fatalf("a and f differ: %s", d)
	}
	s.checkViaRelayAs(t, "journeys", f, a)
	// A replacing bootstrap (a device past the relay's horizon) keeps the
	// unsent rows it wrote under the new name too.
	g := s.newReplica(t, "fresh-replace", sc, nil)
	g.clock.Advance(30)
	must(g.Insert("journeys", map[string]any{"id": "g1", "title": "G"}))(t)
	for _, c := range collect(t, a, engine.SnapshotOptions{ChunkRows: 1}) {
		if _, err := g.ApplySnapshotChunkWith(c, engine.ApplySnapshotOptions{Replace: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := must(g.Count("journeys", nil))(t); n != 3 {
		t.Fatalf("after a replacing bootstrap: %d rows in journeys, want a's 2 and g1", n)
	}
	if _, err := g.Get("journeys", engine.Key{"g1"}); err != nil {
		t.Fatalf("the unsent row after a replacing bootstrap: %v", err)
	}
}

// testRenames: replicas rename the trips table concurrently at random
// clocks (to names from a small pool, so renames collide, and one replica
// declares a table under one of those names), drop it now and then, and
// write to it by the name each knows; they exchange their ChangeSets in
// random orders (with duplicates) and must end with the same names
// (per table, the rename with the highest HLC; nothing after a drop), the
// same stores, every row written and not deleted, and so must a replica
// that joins by snapshot and the relay's schema-less replica.
func (s *suite) testRenames(t *testing.T) {
	seed := s.seed(t)
	cases := 30
	if s.o.Short || testing.Short() {
		cases = 6
	}
	for i := 0; i < cases; i++ {
		if !s.renameCase(t, i, seed+uint64(i)) {
			t.Fatalf("case %d failed; replay with REPLICA_SEED=%d", i, seed)
		}
	}
}

// tripsName returns the current name of r's table with a budget column
// (the trips table's class), "" when it has none.
func tripsName(t testing.TB, r *replica) string {
	for _, tb := range must(r.Schema())(t).Tables {
		if slices.Contains(columnNames(&tb), "budget") {
			return tb.Name
		}
	}
	return ""
}

func (s *suite) renameCase(t *testing.T, n int, seed uint64) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 91))
	pool := []string{"journeys", "voyages", "outings"}
	reps := make([]*replica, 3)
	for i := range reps {
		sc := TripsSchema()
		if i == 2 {
			// A table created under a name the others rename trips to.
			sc.Tables = append(sc.Tables, engine.TableDef{Name: "voyages", Columns: []engine.ColumnDef{
				{Name: "id", Type: engine.KindText}, {Name: "title", Type: engine.KindText}, {Name: "note", Type: engine.KindText}}})
		}
		reps[i] = s.newReplica(t, fmt.Sprintf("c%d-r%d", n, i), sc, nil)
		reps[i].clock.Set(T0 + uint64(rng.IntN(5)))
	}
	written := map[string]bool{} // ids written to trips' class and not deleted since
	dropped := false
	for op := 0; op < 50; op++ {
		r := reps[rng.IntN(len(reps))]
		r.clock.Advance(uint64(rng.IntN(3)))
		name := tripsName(t, r)
		switch k := rng.IntN(10); {
		case name == "":
		case k < 2:
			_ = r.RenameTable(name, pool[rng.IntN(len(pool))]) // refusals (a taken name) are fine
		case k == 2 && rng.IntN(25) == 0:
			if r.DropTable(name) == nil {
				dropped = true
			}
		case k < 7:
			id := fmt.Sprintf("r%d", rng.IntN(12))
			if _, err := r.Upsert(name, map[string]any{"id": id, "title": fmt.Sprint("t", op), "days": op}); errors.Is(err, engine.ErrValidation) || errors.Is(err, engine.ErrConflict) {
				continue // a deleted key (delete-wins), or r declares the name for voyages' columns (a joined table)
			} else if err != nil {
				t.Fatalf("case %d: upsert into %s: %v", n, name, err)
			}
			written[id] = true
		case k < 8:
			id := fmt.Sprintf("r%d", rng.IntN(12))
			if ok, err := r.Delete(name, engine.Key{id}); err != nil {
				t.Fatalf("case %d: delete from %s: %v", n, name, err)
			} else if ok {
				delete(written, id) // a concurrent upsert may still win: checked below only when not deleted anywhere
			}
		default:
			if r == reps[2] && rng.IntN(2) == 0 {
				if vn := tableNamed(t, r, "note"); vn != "" {
					id := fmt.Sprintf("v%d", op)
					must(r.Insert(vn, map[string]any{"id": id, "title": "v", "note": "n"}))(t)
				}
			}
		}
		if rng.IntN(6) == 0 {
			pull(t, reps[rng.IntN(len(reps))], r)
		}
	}
	var all []engine.ChangeSet
	for _, r := range reps {
		all = append(all, must(r.ChangesSince(engine.HLC{}, 0, engine.ChangesFilter{OnlyLocal: true}))(t)...)
	}
	deletedSomewhere := map[string]bool{}
	for _, cs := range all {
		for _, c := range cs.Changes {
			if c.Type == engine.RowDeletion {
				deletedSomewhere[c.PK[0].Text()] = true
			}
		}
	}
	for _, r := range reps {
		for _, i := range rng.Perm(len(all)) {
			if all[i].SiteID == r.SiteID() {
				continue
			}
			must(r.ApplyChanges(all[i : i+1]))(t)
			if rng.IntN(5) == 0 {
				must(r.ApplyChanges(all[i : i+1]))(t)
			}
		}
	}
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("case %d: "+format, append([]any{n}, args...)...)
		ok = false
	}
	// The expected name of trips' class, from the migrations: the names
	// renames join to trips, and the highest-HLC rename among them.
	joined := map[string]bool{"trips": true}
	var renames []engine.SchemaMigration
	for _, cs := range all {
		for _, m := range cs.Migrations {
			if m.Type == engine.RenameTable {
				renames = append(renames, m)
			}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, m := range renames {
			if joined[m.TableName] != joined[m.Name] {
				joined[m.TableName], joined[m.Name], grew = true, true, true
			}
		}
	}
	want := "trips"
	var top engine.HLC
	for _, m := range renames {
		if joined[m.TableName] && top.Less(m.HLC) {
			top, want = m.HLC, m.Name
		}
	}
	if dropped {
		want = ""
	}
	t.Logf("case %d: %d renames, trips joined with voyages %t, named %q, %d rows written", n, len(renames), joined["voyages"], want, len(written))
	schema0 := fmt.Sprint(must(reps[0].Schema())(t).Tables)
	for _, r := range reps {
		if got := tripsName(t, r); got != want {
			fail("%s names trips' table %q, want %q (renames %d, dropped %t)", r.name, got, want, len(renames), dropped)
		}
		if got := fmt.Sprint(must(r.Schema())(t).Tables); got != schema0 {
			fail("%s's schema %s, %s's %s", r.name, got, reps[0].name, schema0)
		}
		if d := diffDumps(DumpStore(t, reps[0].store), DumpStore(t, r.store)); d != "" {
			fail("%s and %s differ: %s", reps[0].name, r.name, d)
		}
		if want == "" {
			continue
		}
		for id := range written {
			if deletedSomewhere[id] {
				continue
			}
			if _, err := r.Get(want, engine.Key{id}); err != nil {
				fail("%s: row %s written to trips is not in %s: %v", r.name, id, want, err)
			}
		}
	}
	// A replica joining by snapshot (declaring the old name), and one
	// bootstrapped from the relay's schema-less replica, hold the same.
	f := s.newReplica(t, fmt.Sprintf("c%d-fresh", n), TripsSchema(), nil)
	for _, c := range collect(t, reps[1], engine.SnapshotOptions{ChunkRows: 2}) {
		must(f.ApplySnapshotChunk(c))(t)
	}
	pull(t, f, reps[0])
	pull(t, reps[0], f)
	if got := tripsName(t, f); got != want {
		fail("the snapshot-bootstrapped replica names trips' table %q, want %q", got, want)
	}
	if d := diffData(DumpStore(t, reps[0].store), DumpStore(t, f.store)); d != "" {
		fail("the snapshot-bootstrapped replica differs: %s", d)
	}
	rl := s.newReplica(t, fmt.Sprintf("c%d-relay", n), nil, func(o *engine.Options) { o.LocalChangeLogOnly = true })
	for _, i := range rng.Perm(len(all)) {
		must(rl.ApplyChanges(all[i : i+1]))(t)
	}
	g := s.newReplica(t, fmt.Sprintf("c%d-from-relay", n), TripsSchema(), nil)
	for _, c := range collect(t, rl, engine.SnapshotOptions{ChunkRows: 3}) {
		must(g.ApplySnapshotChunk(c))(t)
	}
	pull(t, g, reps[0])
	if d := diffData(DumpStore(t, reps[0].store), DumpStore(t, g.store)); d != "" {
		fail("the replica bootstrapped from the relay differs: %s", d)
	}
	return ok
}

// tableNamed returns the current name of r's table that has column col,
// "" when none has.
func tableNamed(t testing.TB, r *replica, col string) string {
	var out []string
	for _, tb := range must(r.Schema())(t).Tables {
		if slices.Contains(columnNames(&tb), col) {
			out = append(out, tb.Name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

// testRenameResolver: a resolver and a conflict event see a renamed
// table by its current name, also for a change from a device that wrote
// under the old name.
func (s *suite) testRenameResolver(t *testing.T) {
	var seen []string
	r := s.newReplica(t, "r", TripsSchema(), func(o *engine.Options) {
		o.Resolver = func(c engine.ConflictContext) bool { seen = append(seen, c.Table); return engine.LWW(c) }
	})
	p := s.newReplica(t, "p", TripsSchema(), nil)
	must(r.Insert("trips", map[string]any{"id": "t1", "title": "One"}))(t)
	pull(t, p, r)
	r.clock.Advance(5)
	if err := r.RenameTable("trips", "journeys"); err != nil {
		t.Fatal(err)
	}
	must(r.Update("journeys", engine.Key{"t1"}, map[string]any{"title": "R"}))(t)
	p.clock.Advance(10)
	must(p.Update("trips", engine.Key{"t1"}, map[string]any{"title": "P"}))(t)
	var conflicts []string
	unsub := r.Subscribe(func(ev engine.Event) {
		if ev.Conflict != nil {
			conflicts = append(conflicts, ev.Conflict.Table)
		}
	})
	defer unsub()
	pull(t, r, p)
	if !slices.Equal(seen, []string{"journeys"}) || !slices.Equal(conflicts, []string{"journeys"}) {
		t.Fatalf("the resolver saw %v, the conflict events %v; want journeys once each", seen, conflicts)
	}
	if row := must(r.Get("journeys", engine.Key{"t1"}))(t); row["title"].Text() != "P" {
		t.Fatalf("t1 %v, want p's later title", fmtRow(row))
	}
}

// testRenameMalformed: a peer's rename_table of the wrong shape (no new
// name, an invalid one, a definition with it) is refused (ErrMalformed)
// and writes nothing.
func (s *suite) testRenameMalformed(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	site := engine.SiteID{7, 7}
	h := engine.HLC{Wall: T0 - 10, Site: site}
	for _, m := range []engine.SchemaMigration{
		{Type: engine.RenameTable, TableName: "trips"},
		{Type: engine.RenameTable, TableName: "trips", Name: "bad name!"},
		{Type: engine.RenameTable, TableName: "", Name: "journeys"},
		{Type: engine.RenameTable, TableName: "trips", Name: "journeys", Index: &engine.IndexDef{Name: "i", Columns: []string{"title"}}},
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

// testRenameJoinKeys: concurrent renames of two tables with different
// keys to one name join them (a name names one table): the table keyed
// first (lowest create_table HLC) keeps its key and rows, the other's
// rows are held as key mismatches (HeldChanges lists them, as for two
// devices declaring one table with two keys), and both replicas, whatever
// the order, end the same.
func (s *suite) testRenameJoinKeys(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	b := s.newReplica(t, "b", TripsSchema(), nil)
	pull(t, b, a)
	must(a.Insert("trips", map[string]any{"id": "t1", "title": "T"}))(t)
	must(b.Insert("stops", map[string]any{"trip": "t1", "pos": 1, "name": "S"}))(t)
	a.clock.Advance(5)
	b.clock.Advance(7)
	if err := a.RenameTable("trips", "halts"); err != nil {
		t.Fatal(err)
	}
	if err := b.RenameTable("stops", "halts"); err != nil {
		t.Fatal(err)
	}
	pull(t, a, b)
	pull(t, b, a)
	// The held changes carry when each replica held them: compared by
	// what they hold.
	if d := diffData(DumpStore(t, a.store), DumpStore(t, b.store)); d != "" {
		t.Fatalf("a and b differ: %s", d)
	}
	ha, hb := must(a.HeldChanges(""))(t), must(b.HeldChanges(""))(t)
	if len(ha) == 0 || len(ha) != len(hb) {
		t.Fatalf("held: a %d changes, b %d", len(ha), len(hb))
	}
	for i := range ha {
		if x, y := fmt.Sprintf("%+v", ha[i].Change), fmt.Sprintf("%+v", hb[i].Change); x != y || ha[i].NeverReplayed != hb[i].NeverReplayed {
			t.Fatalf("held change %d: a %s, b %s", i, x, y)
		}
	}
	for _, r := range []*replica{a, b} {
		tb := must(r.Schema())(t).Tables
		if len(tb) != 1 || tb[0].Name != "halts" || !slices.Equal(tb[0].PrimaryKey, []string{"id"}) {
			t.Fatalf("%s: tables %+v, want halts keyed by id", r.name, tb)
		}
		if _, err := r.Get("halts", engine.Key{"t1"}); err != nil {
			t.Fatalf("%s: trips' row: %v", r.name, err)
		}
		held := must(r.HeldCounts())(t)
		if len(held) != 1 || held[0].Reason != engine.HeldKeyMismatch {
			t.Fatalf("%s: held %+v, want stops' row held as a key mismatch", r.name, held)
		}
	}
}
