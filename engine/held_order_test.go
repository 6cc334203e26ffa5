//go:build !js

package engine_test

import (
	"bytes"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/kv/memkv"
)

func heldSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{Name: "trips", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "title", Type: engine.KindText}, {Name: "photo", Type: engine.KindBlob}}}}}
}

// A fact held for a column not defined yet; the migration adding it
// commits, but the process ends (here: Close) before the separate replay
// transaction. Open replays every held table, so the fact lands on reopen
// as it would have on a replica that got the two in the other order. (It
// stayed held until the horizon when Open replayed only the tables its own
// declaration grew.)
func TestHeldColumnReplayedAfterInterruptedReplay(t *testing.T) {
	const T0 = enginetest.T0
	peer := engine.SiteID{9, 9}
	peer2 := engine.SiteID{7, 7}
	mig := engine.SchemaMigration{Type: engine.AddColumn, TableName: "trips",
		Column: &engine.ColumnDef{Name: "extra", Type: engine.KindText}, HLC: engine.HLC{Wall: T0 + 10, Site: peer2}}
	migCS := engine.ChangeSet{SiteID: peer2, HLC: mig.HLC, TransactionID: mig.HLC.TransactionID(), Migrations: []engine.SchemaMigration{mig}}
	h := engine.HLC{Wall: T0 + 20, Site: peer}
	fact := engine.ChangeSet{SiteID: peer, HLC: h, TransactionID: h.TransactionID(), Changes: []engine.Change{
		{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text("m")}, Column: "extra", Value: engine.Text("x"), HLC: h}}}

	open := func(st *memkv.Store) *engine.Engine {
		e, err := engine.Open(st, engine.Options{Schema: heldSchema(), Clock: enginetest.NewManualClock(T0)})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// b: migration first, then the fact.
	b := open(memkv.New(engine.Buckets...))
	if _, err := b.ApplyChanges([]engine.ChangeSet{migCS}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ApplyChanges([]engine.ChangeSet{fact}); err != nil {
		t.Fatal(err)
	}
	rb, _ := b.Get("trips", engine.Key{"m"})

	// a: the fact first (held), then the migration; the app closes right
	// after the migration's commit (tab closed, crash).
	st := memkv.New(engine.Buckets...)
	a := open(st)
	if _, err := a.ApplyChanges([]engine.ChangeSet{fact}); err != nil {
		t.Fatal(err)
	}
	a.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.RemoteChange {
			a.Close()
		}
	})
	if _, err := a.ApplyChanges([]engine.ChangeSet{migCS}); err != nil {
		t.Fatal(err)
	}
	a2 := open(st) // restart, same declaration
	ra, _ := a2.Get("trips", engine.Key{"m"})
	held, _ := a2.HeldChanges("")
	t.Logf("b=%v a=%v held=%d", rb, ra, len(held))
	if rb["extra"].Text() != ra["extra"].Text() {
		t.Fatalf("diverged: b has extra=%v, a after restart has %v (held: %d)", rb["extra"], ra["extra"], len(held))
	}
}

// Updating a 1.5 MiB column (under MaxLocalRowSize) to another 1.5 MiB value.
func TestLocalUpdateOfLargeValue(t *testing.T) {
	e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: heldSchema(), Clock: enginetest.NewManualClock(enginetest.T0)})
	if err != nil {
		t.Fatal(err)
	}
	v1 := bytes.Repeat([]byte{1}, 3<<19)
	v2 := bytes.Repeat([]byte{2}, 3<<19)
	if _, err := e.Insert("trips", map[string]any{"id": "r", "photo": v1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update("trips", engine.Key{"r"}, map[string]any{"photo": v2}); err != nil {
		t.Fatalf("update of a 1.5 MiB value to another: %v", err)
	}
}

// Two app versions added column c with different types (A: integer at a
// lower HLC, B: text). The fold keeps the lowest HLC's type (integer) on
// every replica. A replica that gets B's migration and B's text value
// before A's migration stores the text (it fitted then; the refold keeps
// the cell); a replica that gets A's migration first holds the same fact
// as a wrong type. The refold must hold the stored cell as one too, so
// both orders end with the same visible state.
func TestRefoldedColumnWrongTypeIndependentOfArrivalOrder(t *testing.T) {
	const T0 = enginetest.T0
	siteA, siteB := engine.SiteID{0xA}, engine.SiteID{0xB}
	hA := engine.HLC{Wall: T0 + 10, Site: siteA}
	mA := engine.ChangeSet{SiteID: siteA, HLC: hA, TransactionID: hA.TransactionID(), Migrations: []engine.SchemaMigration{{
		Type: engine.AddColumn, TableName: "trips", Column: &engine.ColumnDef{Name: "c", Type: engine.KindInteger}, HLC: hA}}}
	hB := engine.HLC{Wall: T0 + 20, Site: siteB}
	fB := hB
	fB.OpSeq = 1
	mB := engine.ChangeSet{SiteID: siteB, HLC: fB, TransactionID: hB.TransactionID(),
		Migrations: []engine.SchemaMigration{{Type: engine.AddColumn, TableName: "trips", Column: &engine.ColumnDef{Name: "c", Type: engine.KindText}, HLC: hB}},
		Changes:    []engine.Change{{Type: engine.ColumnChange, Table: "trips", PK: []engine.Value{engine.Text("m")}, Column: "c", Value: engine.Text("hello"), HLC: fB}}}
	open := func() *engine.Engine {
		e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: heldSchema(), Clock: enginetest.NewManualClock(T0)})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	x, y := open(), open()
	for _, cs := range []engine.ChangeSet{mB, mA} {
		if _, err := x.ApplyChanges([]engine.ChangeSet{cs}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cs := range []engine.ChangeSet{mA, mB} {
		if _, err := y.ApplyChanges([]engine.ChangeSet{cs}); err != nil {
			t.Fatal(err)
		}
	}
	sx, _ := x.Schema()
	sy, _ := y.Schema()
	rx, _ := x.Get("trips", engine.Key{"m"})
	ry, _ := y.Get("trips", engine.Key{"m"})
	t.Logf("schema x %+v\nschema y %+v", sx.Tables[0].Columns, sy.Tables[0].Columns)
	if rx["c"].String() != ry["c"].String() {
		t.Fatalf("diverged: B then A: c=%v (%v); A then B: c=%v (%v)", rx["c"], rx["c"].Kind(), ry["c"], ry["c"].Kind())
	}
}
