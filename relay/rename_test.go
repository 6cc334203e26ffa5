//go:build !js

package relay

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestRenameTableThroughRelay (issue 15): a rename_table pushed after the
// writes of a device that had not learned it (which name the old table),
// and the renaming device's own ChangeSets pushed newest first, reach a
// third device through the relay's log with every row in the renamed
// table; a device of the new app version that created the table under
// its new name before its first sync (and wrote to it) joins it; devices
// joining by the relay's snapshot, before and after a restart, hold the
// same rows under the new name, and the old name is refused.
func TestRenameTableThroughRelay(t *testing.T) {
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
	renamed := func() *model.Schema {
		s := testSchema()
		s.Tables[0].Name = "journeys"
		return s
	}
	a, b := open(testSchema()), open(testSchema())
	if _, err := a.Insert("trips", map[string]any{"id": "t1", "title": "One"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ApplyChanges(localSets(t, a)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Millisecond)
	if err := a.RenameTable("trips", "journeys"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Insert("journeys", map[string]any{"id": "t2", "title": "Two"}); err != nil {
		t.Fatal(err)
	}
	// b has not learned the rename: it writes to trips.
	clock.Advance(10 * time.Millisecond)
	if _, err := b.Insert("trips", map[string]any{"id": "t3", "title": "Three"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update("trips", engine.Key{"t1"}, map[string]any{"budget": 9.5}); err != nil {
		t.Fatal(err)
	}
	// A fresh device of the new app version, before its first sync.
	clock.Advance(10 * time.Millisecond)
	f := open(renamed())
	if _, err := f.Insert("journeys", map[string]any{"id": "f1", "title": "Fresh"}); err != nil {
		t.Fatal(err)
	}
	// b pushes first; a's ChangeSets arrive newest first (its data before
	// the rename, the rename before the table's creation); f last.
	connectAs(t, r, "db", b).apply("b1", localSets(t, b))
	as := localSets(t, a)
	slices.Reverse(as)
	ca := connectAs(t, r, "db", a)
	for i := range as {
		ca.apply("a"+as[i].TransactionID, as[i:i+1])
	}
	connectAs(t, r, "db", f).apply("f1", localSets(t, f))

	check := func(e *engine.Engine, what string, want ...string) {
		t.Helper()
		rows, err := e.Query("journeys", engine.Query{OrderBy: []engine.Order{{Column: "id"}}})
		if err != nil {
			t.Fatalf("%s: query journeys: %v", what, err)
		}
		var ids []string
		for _, row := range rows {
			ids = append(ids, row["id"].Text())
			if row["id"].Text() == "t1" && !row["budget"].Equal(model.Real(9.5)) {
				t.Fatalf("%s: t1 lost b's update: %v", what, row)
			}
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("%s: journeys holds %v, want %v", what, ids, want)
		}
		if _, err := e.Insert("trips", map[string]any{"id": "x", "title": "X"}); !errors.Is(err, engine.ErrUnknownTable) || !strings.Contains(err.Error(), `renamed to "journeys"`) {
			t.Fatalf("%s: insert into trips: %v, want ErrUnknownTable saying it was renamed", what, err)
		}
		s, err := e.Schema()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tb := range s.Tables {
			names = append(names, tb.Name)
		}
		if slices.Sort(names); !slices.Equal(names, []string{"journeys", "stops"}) {
			t.Fatalf("%s: tables %v", what, names)
		}
	}
	all := []string{"f1", "t1", "t2", "t3"}
	// A third device (old app version: it declares trips) pulling the log.
	c := open(testSchema())
	sets, _, _ := connectAs(t, r, "db", c).pullAll(0)
	if _, err := c.ApplyChanges(sets); err != nil {
		t.Fatal(err)
	}
	check(c, "pulled", all...)
	// The fresh device learns the rest; its row stays.
	fs, _, _ := connectAs(t, r, "db", f).pullAll(0)
	if _, err := f.ApplyChanges(fs); err != nil {
		t.Fatal(err)
	}
	check(f, "fresh device after its pull", all...)

	bootstrap := func(cl *client, what string, s *model.Schema) {
		t.Helper()
		j := open(s)
		for _, ch := range collectSnapshot(t, cl, &wire.GetSnapshot{}).chunks {
			if _, err := j.ApplySnapshotChunk(ch); err != nil {
				t.Fatal(err)
			}
		}
		check(j, what, all...)
	}
	bootstrap(connect(t, r, "db"), "snapshot (new app)", renamed())
	bootstrap(connect(t, r, "db"), "snapshot (old app)", testSchema())
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r2 := startRelay(t, Config{DataDir: dir})
	bootstrap(connect(t, r2, "db"), "snapshot after restart", renamed())
	c2 := open(testSchema())
	sets, _, _ = connectAs(t, r2, "db", c2).pullAll(0)
	if _, err := c2.ApplyChanges(sets); err != nil {
		t.Fatal(err)
	}
	check(c2, "pulled after restart", all...)
}
