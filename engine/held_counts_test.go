package engine_test

import (
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// TestHeldCountsAndReplay: HeldCounts counts held changes per table and
// reason as the schema stands — a table this replica lacks, a column it
// does not define, a key that does not fit, a value of the wrong type —
// and once the peer's schema ChangeSet creates the missing table, its
// held changes are replayed: a HeldReplayed event says how many, how
// many of the table's stay held, and the counts drop them.
func TestHeldCountsAndReplay(t *testing.T) {
	local := &model.Schema{Tables: []model.TableDef{{Name: "items", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "n", Type: model.KindInteger}}}}}
	peerSchema := &model.Schema{Tables: []model.TableDef{
		local.Tables[0],
		{Name: "ghosts", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}, {Name: "v", Type: model.KindText}}},
	}}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: local})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	peer, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: peerSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	var replayed []engine.ReplayReport
	db.Subscribe(func(ev engine.Event) {
		if ev.Type == engine.HeldReplayed {
			replayed = append(replayed, *ev.Replayed)
		}
	})

	for _, id := range []string{"g1", "g2"} {
		if _, err := peer.Insert("ghosts", map[string]any{"id": id, "v": "boo"}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := peer.ChangesSince(model.HLC{}, 1000, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	schemaSet, data := all[0], all[1:]
	if len(schemaSet.Migrations) == 0 || len(data) != 2 {
		t.Fatalf("peer's log: %d ChangeSets, the first with %d migrations", len(all), len(schemaSet.Migrations))
	}
	if _, err := db.ApplyChanges(data); err != nil {
		t.Fatal(err)
	}
	// Changes that do not fit items, hand-made by a peer site.
	site := model.SiteID{5}
	h := model.HLC{Wall: data[1].HLC.Wall + 1, Site: site}
	misfits := []model.Change{
		{Type: model.ColumnChange, Table: "items", PK: []model.Value{model.Text("a")}, Column: "nosuch", Value: model.Int(1)},
		{Type: model.ColumnChange, Table: "items", PK: []model.Value{model.Text("a"), model.Int(2)}, Column: "n", Value: model.Int(1)},
		{Type: model.ColumnChange, Table: "items", PK: []model.Value{model.Text("b")}, Column: "n", Value: model.Text("not a number")},
	}
	for i := range misfits {
		misfits[i].HLC = h
		misfits[i].HLC.OpSeq = uint32(i)
	}
	cs := model.ChangeSet{SiteID: site, TransactionID: h.TransactionID(), HLC: misfits[2].HLC, Changes: misfits}
	if _, err := db.ApplyChanges([]model.ChangeSet{cs}); err != nil {
		t.Fatal(err)
	}
	counts, err := db.HeldCounts()
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.HeldCount{
		{Table: "ghosts", Reason: engine.HeldUnknownTable, Changes: 4}, // 2 rows × (id, v)
		{Table: "items", Reason: engine.HeldUnknownColumn, Changes: 1},
		{Table: "items", Reason: engine.HeldKeyMismatch, Changes: 1},
		{Table: "items", Reason: engine.HeldWrongType, Changes: 1},
	}
	if !equalCounts(counts, want) {
		t.Fatalf("HeldCounts = %+v\nwant %+v", counts, want)
	}

	// The peer's schema arrives: ghosts exists, its changes replay.
	if _, err := db.ApplyChanges([]model.ChangeSet{schemaSet}); err != nil {
		t.Fatal(err)
	}
	if len(replayed) != 1 || replayed[0] != (engine.ReplayReport{Table: "ghosts", Changes: 4, Remaining: 0}) {
		t.Fatalf("HeldReplayed events %+v, want one for ghosts: 4 replayed, none left", replayed)
	}
	if n, err := db.Count("ghosts", nil); err != nil || n != 2 {
		t.Fatalf("ghosts after the replay: %d rows (%v), want 2", n, err)
	}
	counts, err = db.HeldCounts()
	if err != nil {
		t.Fatal(err)
	}
	if !equalCounts(counts, want[1:]) {
		t.Fatalf("HeldCounts after the replay = %+v\nwant %+v", counts, want[1:])
	}
}

func equalCounts(a, b []engine.HeldCount) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
