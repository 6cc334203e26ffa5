package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

type stepClock struct{ ms uint64 }

func (c *stepClock) Now() uint64 { return c.ms }

// TestSystemColumns: Query.System adds $createdAt (the insert's time),
// $updatedAt and $siteId (the last write's time and writer) to each row,
// and Where and OrderBy may name them; Query.Deleted returns the deleted
// rows (a trash view) with the values they had and $deletedAt, filtered
// and ordered like live rows; plain queries and counts are unchanged.
func TestSystemColumns(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{{Name: "notes", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "body", Type: model.KindText}, {Name: "n", Type: model.KindInteger}},
		Indexes: []model.IndexDef{{Name: "by_n", Columns: []string{"n"}}}}}}
	clock := &stepClock{ms: uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())}
	t0 := clock.ms
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	site := db.SiteID().String()
	at := func(step uint64) model.Value { return model.TimestampMillis(int64(t0 + step*1000)) }
	write := func(step uint64, fn func() error) {
		t.Helper()
		clock.ms = t0 + step*1000
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
	write(1, func() error {
		_, err := db.Insert("notes", map[string]any{"id": "a", "body": "first", "n": 1})
		return err
	})
	write(2, func() error {
		_, err := db.Insert("notes", map[string]any{"id": "b", "body": "second", "n": 2})
		return err
	})
	write(3, func() error {
		_, err := db.Insert("notes", map[string]any{"id": "c", "body": "third", "n": 3})
		return err
	})
	write(4, func() error {
		_, err := db.Update("notes", engine.Key{"a"}, map[string]any{"body": "first, edited"})
		return err
	})
	write(5, func() error { _, err := db.Delete("notes", engine.Key{"b"}); return err })

	rows, err := db.Query("notes", engine.Query{System: true, OrderBy: []engine.Order{{Column: engine.SysUpdatedAt, Desc: true}}})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range rows {
		got += fmt.Sprintf("%v c=%v u=%v s=%v; ", r["id"].Text(), r[engine.SysCreatedAt].Equal(at(map[string]uint64{"a": 1, "c": 3}[r["id"].Text()])), r[engine.SysUpdatedAt].Int(), r[engine.SysSiteID].Text() == site)
	}
	want := fmt.Sprintf("a c=true u=%d s=true; c c=true u=%d s=true; ", at(4).Int(), at(3).Int())
	if got != want {
		t.Fatalf("System rows by $updatedAt desc: %s\nwant %s", got, want)
	}
	rows, err = db.Query("notes", engine.Query{System: true, Where: []engine.Filter{{Column: engine.SysCreatedAt, Op: engine.Ge, Value: time.UnixMilli(int64(t0 + 2000))}}})
	if err != nil || len(rows) != 1 || rows[0]["id"].Text() != "c" {
		t.Fatalf("rows created at step 2 or later: %v (%v), want c", rows, err)
	}
	if rows, err := db.Query("notes", engine.Query{}); err != nil || len(rows) != 2 || len(rows[0]) != 3 {
		t.Fatalf("a plain query: %v (%v), want a and c with their three columns", rows, err)
	}
	if _, err := db.Query("notes", engine.Query{Where: []engine.Filter{{Column: engine.SysCreatedAt, Op: engine.Eq, Value: 1}}}); err == nil {
		t.Fatal("a filter on a system column without Query.System was accepted")
	}
	if _, err := db.Query("notes", engine.Query{System: true, OrderBy: []engine.Order{{Column: engine.SysDeletedAt}}}); err == nil {
		t.Fatal("$deletedAt accepted without Query.Deleted")
	}

	trash, err := db.Query("notes", engine.Query{Deleted: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(trash) != 1 {
		t.Fatalf("trash: %v, want b alone", trash)
	}
	b := trash[0]
	if b["id"].Text() != "b" || b["body"].Text() != "second" || b["n"].Int() != 2 || !b[engine.SysDeletedAt].Equal(at(5)) || !b[engine.SysUpdatedAt].Equal(at(5)) || b[engine.SysSiteID].Text() != site {
		t.Fatalf("trash row %v: want b as it was (second, 2), deleted at step 5 by this site", b)
	}
	if rows, err := db.Query("notes", engine.Query{Deleted: true, Where: []engine.Filter{{Column: "n", Op: engine.Eq, Value: 1}}}); err != nil || len(rows) != 0 {
		t.Fatalf("trash filtered on n = 1 (an indexed column; b has 2): %v (%v)", rows, err)
	}
	if rows, err := db.Query("notes", engine.Query{Deleted: true, Where: []engine.Filter{{Column: "n", Op: engine.Eq, Value: 2}}}); err != nil || len(rows) != 1 {
		t.Fatalf("trash filtered on n = 2: %v (%v), want b", rows, err)
	}
	if n, err := db.Count("notes", nil); err != nil || n != 2 {
		t.Fatalf("count %d (%v), want 2", n, err)
	}

	// A remote deletion whose origin sent no image: the key alone.
	peer := model.SiteID{7}
	h := model.HLC{Wall: clock.ms + 1000, Site: peer}
	del := model.Change{Type: model.RowDeletion, Table: "notes", PK: []model.Value{model.Text("c")}, HLC: h}
	if _, err := db.ApplyChanges([]model.ChangeSet{{SiteID: peer, TransactionID: h.TransactionID(), HLC: h, Changes: []model.Change{del}}}); err != nil {
		t.Fatal(err)
	}
	trash, err = db.Query("notes", engine.Query{Deleted: true, OrderBy: []engine.Order{{Column: engine.SysDeletedAt}}})
	if err != nil || len(trash) != 2 {
		t.Fatalf("trash after the remote delete: %v (%v)", trash, err)
	}
	c := trash[1]
	if c["id"].Text() != "c" || !c["body"].IsNull() || c[engine.SysSiteID].Text() != peer.String() {
		t.Fatalf("remote deletion without an image: %v, want c's key, null values, deleted by %s", c, peer)
	}
}

// TestPendingColumn: with Query.PendingAbove (a sent watermark), $pending
// says which rows hold a local write above it — not yet on the relay — and
// which do not (written at or below it, or only by other replicas).
func TestPendingColumn(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{{Name: "notes", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "n", Type: model.KindInteger}}}}}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Insert("notes", map[string]any{"id": "sent", "n": 1}); err != nil {
		t.Fatal(err)
	}
	all, err := db.ChangesSince(model.HLC{}, 100, engine.ChangesFilter{OnlyLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	wm := all[len(all)-1].HLC // as if the relay acknowledged everything so far
	if _, err := db.Insert("notes", map[string]any{"id": "new", "n": 2}); err != nil {
		t.Fatal(err)
	}
	peer := model.SiteID{3}
	h := model.HLC{Wall: wm.Wall + 1, Site: peer}
	ch := []model.Change{{Type: model.ColumnChange, Table: "notes", PK: []model.Value{model.Text("theirs")}, Column: "id", Value: model.Text("theirs"), HLC: h}}
	if _, err := db.ApplyChanges([]model.ChangeSet{{SiteID: peer, TransactionID: h.TransactionID(), HLC: h, Changes: ch}}); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("notes", engine.Query{System: true, PendingAbove: &wm, OrderBy: []engine.Order{{Column: "id"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range rows {
		got += fmt.Sprintf("%s=%v ", r["id"].Text(), r[engine.SysPending].Bool())
	}
	if got != "new=true sent=false theirs=false " {
		t.Fatalf("$pending: %s", got)
	}
	if rows, err := db.Query("notes", engine.Query{System: true, PendingAbove: &wm, Where: []engine.Filter{{Column: engine.SysPending, Op: engine.Eq, Value: true}}}); err != nil || len(rows) != 1 {
		t.Fatalf("where $pending = true: %v (%v), want the one new row", rows, err)
	}
}
