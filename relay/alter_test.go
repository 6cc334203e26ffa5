//go:build !js

package relay

import (
	"errors"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestAlterColumnThroughRelay (issue 15): alter_column migrations pushed
// by two devices, out of HLC order, reach a third device through the
// relay's log, and a device joining by the relay's snapshot gets the
// altered columns (latest alter per attribute) too, before the restart
// and after it.
func TestAlterColumnThroughRelay(t *testing.T) {
	needFiles(t)
	dir := t.TempDir()
	r := startRelay(t, Config{DataDir: dir})
	clock := newManualClock()
	open := func(s *model.Schema) *engine.Engine {
		e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: s, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := open(testSchema()), open(testSchema())
	if _, err := a.Insert("trips", map[string]any{"id": "t1", "title": "One"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ApplyChanges(localSets(t, a)); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	clock.Advance(10 * time.Millisecond)
	// a: budget notNull with default 5; title optional.
	if err := a.AlterColumn("trips", "budget", engine.Alteration{NotNull: &yes, SetDefault: true, Default: 5.0}); err != nil {
		t.Fatal(err)
	}
	if err := a.AlterColumn("trips", "title", engine.Alteration{NotNull: &no}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Millisecond)
	// b, later, concurrently: budget's default 7 (wins over a's 5; a's
	// notNull stays).
	if err := b.AlterColumn("trips", "budget", engine.Alteration{SetDefault: true, Default: 7.0}); err != nil {
		t.Fatal(err)
	}
	// b pushes first: the relay learns the later alter before the earlier.
	connectAs(t, r, "db", b).apply("b1", localSets(t, b))
	connectAs(t, r, "db", a).apply("a1", localSets(t, a))

	check := func(e *engine.Engine, what string) {
		t.Helper()
		s, err := e.Schema()
		if err != nil {
			t.Fatal(err)
		}
		var budget, title *model.ColumnDef
		for i := range s.Tables {
			if s.Tables[i].Name != "trips" {
				continue
			}
			for j := range s.Tables[i].Columns {
				switch c := &s.Tables[i].Columns[j]; c.Name {
				case "budget":
					budget = c
				case "title":
					title = c
				}
			}
		}
		if budget == nil || !budget.NotNull || !budget.HasDefault || !budget.Default.Equal(model.Real(7)) {
			t.Fatalf("%s: budget is %+v, want notNull with default 7", what, budget)
		}
		if title == nil || title.NotNull {
			t.Fatalf("%s: title is %+v, want optional", what, title)
		}
		row, err := e.Insert("trips", map[string]any{"id": "x-" + what})
		if err != nil {
			t.Fatalf("%s: insert without title and budget: %v", what, err)
		}
		if !row["budget"].Equal(model.Real(7)) {
			t.Fatalf("%s: inserted %v", what, row)
		}
		var ve *engine.ValidationError
		if _, err := e.Update("trips", engine.Key{"t1"}, map[string]any{"budget": nil}); !errors.As(err, &ve) {
			t.Fatalf("%s: budget set to null: %v, want a *ValidationError", what, err)
		}
		got, err := e.Get("trips", engine.Key{"t1"})
		if err != nil || !got["budget"].IsNull() {
			t.Fatalf("%s: the row that held a null budget: %v %v", what, got, err)
		}
	}
	// A third device pulling the log.
	c := open(testSchema())
	sets, _, _ := connectAs(t, r, "db", c).pullAll(0)
	if _, err := c.ApplyChanges(sets); err != nil {
		t.Fatal(err)
	}
	check(c, "pulled")

	bootstrap := func(cl *client, what string) {
		t.Helper()
		f := open(testSchema()) // declares title notNull, budget without default: the alters win
		for _, ch := range collectSnapshot(t, cl, &wire.GetSnapshot{}).chunks {
			if _, err := f.ApplySnapshotChunk(ch); err != nil {
				t.Fatal(err)
			}
		}
		check(f, what)
	}
	bootstrap(connect(t, r, "db"), "snapshot")
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r2 := startRelay(t, Config{DataDir: dir})
	bootstrap(connect(t, r2, "db"), "snapshot-after-restart")
}
