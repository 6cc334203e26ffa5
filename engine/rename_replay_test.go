package engine_test

import (
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// TestRenamedHeldReplayRemaining: a renamed table's changes may be held
// under several of its names (they keep the name their writer knew). When
// some are replayed, the HeldReplayed event's Remaining counts those still
// held under any of its names, as HeldCounts does, and ReplayHeld given
// the table's current name replays those held under its former names too.
func TestRenamedHeldReplayRemaining(t *testing.T) {
	clock := &stepClock{ms: 1_800_000_000_000}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tbl := func(name string, cols ...string) model.TableDef {
		d := model.TableDef{Name: name, Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}}, PrimaryKey: []string{"id"}}
		for _, c := range cols {
			d.Columns = append(d.Columns, model.ColumnDef{Name: c, Type: model.KindInteger})
		}
		return d
	}
	open := func(store kv.Store, tables ...model.TableDef) *engine.Engine {
		t.Helper()
		db, err := engine.Open(store, engine.Options{Schema: &model.Schema{Tables: tables}, Clock: clock})
		must(err)
		return db
	}
	since := func(db *engine.Engine, h model.HLC) ([]engine.ChangeSet, model.HLC) {
		t.Helper()
		cs, err := db.ChangesSince(h, 0, engine.ChangesFilter{})
		must(err)
		if len(cs) > 0 {
			h = cs[len(cs)-1].HLC
		}
		return cs, h
	}

	r := open(memkv.New(engine.Buckets...), tbl("a", "n"))
	clock.ms++
	// d1 knows a from r, adds column x to it, writes x, then renames a to b.
	d1store := memkv.New(engine.Buckets...)
	d1 := open(d1store, tbl("a", "n"))
	rs, _ := since(r, model.HLC{})
	_, err := d1.ApplyChanges(rs)
	must(err)
	must(d1.Close())
	clock.ms++
	d1 = open(d1store, tbl("a", "n", "x"))
	addX, h1 := since(d1, model.HLC{})
	clock.ms++
	_, err = d1.Insert("a", map[string]any{"id": "r1", "x": 1})
	must(err)
	writeX, h1 := since(d1, h1)
	clock.ms++
	must(d1.RenameTable("a", "b"))
	rename, _ := since(d1, h1)
	// d2, an app version that knows the table as b, created it on its own
	// with a column y and wrote y before it ever synced.
	clock.ms++
	d2 := open(memkv.New(engine.Buckets...), tbl("b", "y"))
	clock.ms++
	_, err = d2.Insert("b", map[string]any{"id": "r2", "y": 2})
	must(err)
	d2all, _ := since(d2, model.HLC{})
	var writeY []engine.ChangeSet
	for _, cs := range d2all {
		if len(cs.Migrations) == 0 {
			writeY = append(writeY, cs)
		}
	}

	// r holds x (under a: unknown column) and y (under b: unknown table).
	_, err = r.ApplyChanges(append(writeX, writeY...))
	must(err)
	var reports []engine.ReplayReport
	unsub := r.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.HeldReplayed {
			reports = append(reports, *ev.Replayed)
		}
	})
	defer unsub()
	// The rename joins a and b; x's column arrives: x replays, y stays
	// held (its column is still unknown here).
	_, err = r.ApplyChanges(append(addX, rename...))
	must(err)
	counts, err := r.HeldCounts()
	must(err)
	held := 0
	for _, c := range counts {
		if c.Table != "b" {
			t.Errorf("HeldCounts names %q, want b", c.Table)
		}
		held += c.Changes
	}
	if held == 0 {
		t.Fatalf("nothing held after the join: %+v", counts)
	}
	if len(reports) == 0 {
		t.Fatal("no HeldReplayed event")
	}
	last := reports[len(reports)-1]
	if last.Table != "b" || last.Remaining != held {
		t.Errorf("HeldReplayed events %+v: the last says %d remain for %q; HeldCounts holds %d for b", reports, last.Remaining, last.Table, held)
	}
	for _, rep := range reports {
		if rep.Remaining < held {
			t.Errorf("HeldReplayed %+v: Remaining %d, but %d stay held for b", rep, rep.Remaining, held)
		}
	}
}
