package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// TestInspect: InspectRows pages a table's rows in key order with each
// cell's value and HLC (the writing site: here two replicas'), finds rows
// by a case-insensitive substring or prefix of any cell, lists deleted
// rows with their tombstone and image, and bounds a search by MaxScan;
// InspectLog lists own transactions newest first with their tables;
// States lists caller state by prefix.
func TestInspect(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{{Name: "cities", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "name", Type: model.KindText}, {Name: "pop", Type: model.KindInteger}}}}}
	clock := &stepClock{ms: uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())}
	open := func() *engine.Engine {
		db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	for i := range 120 {
		clock.ms++
		if _, err := a.Insert("cities", map[string]any{"id": fmt.Sprintf("c%03d", i), "name": fmt.Sprintf("Town %d", i), "pop": i}); err != nil {
			t.Fatal(err)
		}
	}
	clock.ms++
	if _, err := a.Update("cities", engine.Key{"c005"}, map[string]any{"name": "Lisbon"}); err != nil {
		t.Fatal(err)
	}
	clock.ms++
	if _, err := a.Delete("cities", engine.Key{"c007"}); err != nil {
		t.Fatal(err)
	}
	sets, err := a.ChangesSince(model.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ApplyChanges(sets); err != nil {
		t.Fatal(err)
	}
	clock.ms++
	if _, err := b.Update("cities", engine.Key{"c005"}, map[string]any{"pop": 505}); err != nil {
		t.Fatal(err)
	}

	page, err := b.InspectRows("cities", engine.InspectOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if exact, err := b.InspectRows("cities", engine.InspectOptions{Limit: 119}); err != nil || len(exact.Rows) != 119 || exact.Next != nil {
		t.Fatalf("a page of exactly every row: %d rows, next %v, %v", len(exact.Rows), exact.Next != nil, err)
	}
	if len(page.Rows) != 50 || page.Next == nil || page.Rows[0].Key[0].Text() != "c000" {
		t.Fatalf("first page: %d rows, next %v, first %v", len(page.Rows), page.Next != nil, page.Rows[0].Key)
	}
	var c5 *engine.InspectRow
	for i := range page.Rows {
		if page.Rows[i].Key[0].Text() == "c005" {
			c5 = &page.Rows[i]
		}
		if page.Rows[i].Key[0].Text() == "c007" {
			t.Fatal("the deleted row c007 is listed as live")
		}
	}
	if c5 == nil {
		t.Fatal("c005 missing")
	}
	sites := map[string]string{}
	for _, c := range c5.Cells {
		sites[c.Column] = c.HLC.Site.String() + "=" + c.Value.String()
	}
	want := map[string]string{"id": a.SiteID().String() + `="c005"`, "name": a.SiteID().String() + `="Lisbon"`, "pop": b.SiteID().String() + "=505"}
	if fmt.Sprint(sites) != fmt.Sprint(want) {
		t.Fatalf("c005's cells: %v, want %v", sites, want)
	}
	total := len(page.Rows)
	for next := page.Next; next != nil; {
		p, err := b.InspectRows("cities", engine.InspectOptions{After: next, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		total += len(p.Rows)
		next = p.Next
	}
	if total != 119 {
		t.Fatalf("paged %d live rows, want 119", total)
	}

	found, err := b.InspectRows("cities", engine.InspectOptions{Search: "LISB"})
	if err != nil || len(found.Rows) != 1 || found.Rows[0].Key[0].Text() != "c005" || found.Next != nil {
		t.Fatalf("search LISB: %+v, %v", found, err)
	}
	if p, _ := b.InspectRows("cities", engine.InspectOptions{Search: "isbon", Prefix: true}); len(p.Rows) != 0 {
		t.Fatalf("prefix isbon found %d rows", len(p.Rows))
	}
	if p, _ := b.InspectRows("cities", engine.InspectOptions{Search: "town 11", Prefix: true}); len(p.Rows) != 11 { // 11, 110..119
		t.Fatalf("prefix 'town 11' found %d rows, want 11", len(p.Rows))
	}
	bounded, err := b.InspectRows("cities", engine.InspectOptions{Search: "town 119", MaxScan: 30})
	if err != nil || len(bounded.Rows) != 0 || bounded.Next == nil || bounded.Scanned != 30 {
		t.Fatalf("bounded search: %d rows, next %v, scanned %d, %v", len(bounded.Rows), bounded.Next != nil, bounded.Scanned, err)
	}

	if live, deleted, err := b.InspectCount("cities"); err != nil || live != 119 || deleted != 1 {
		t.Fatalf("InspectCount: %d live, %d deleted, %v", live, deleted, err)
	}
	del, err := b.InspectRows("cities", engine.InspectOptions{Deleted: true})
	if err != nil || len(del.Rows) != 1 || !del.Rows[0].Deleted || del.Rows[0].Tomb.Site != a.SiteID() || del.Rows[0].PriorRow["name"].Text() != "Town 7" {
		t.Fatalf("deleted: %+v, %v", del, err)
	}

	if _, err := b.InspectRows("nope", engine.InspectOptions{}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Fatalf("unknown table: %v", err)
	}
	var ve *engine.ValidationError
	if _, err := b.InspectRows("cities", engine.InspectOptions{Limit: 1001}); !errors.As(err, &ve) {
		t.Fatalf("limit 1001: %v", err)
	}
	if _, err := b.InspectRows("cities", engine.InspectOptions{After: []byte("x")}); !errors.Is(err, engine.ErrBadCursor) {
		t.Fatalf("foreign cursor: %v", err)
	}

	log, more, err := a.InspectLog(engine.LogOptions{Limit: 3})
	if err != nil || len(log) != 3 || !more || log[0].HLC.Wall <= log[1].HLC.Wall || log[0].Rows["cities"] != 1 {
		t.Fatalf("log: %+v %v %v", log, more, err)
	}
	older, _, err := a.InspectLog(engine.LogOptions{Before: log[2].HLC, After: log[2].HLC.Base(), Limit: 10})
	if err != nil || len(older) != 0 {
		t.Fatalf("empty window: %+v %v", older, err)
	}
	all, more, err := a.InspectLog(engine.LogOptions{Limit: 1000})
	if err != nil || len(all) != 123 || more {
		t.Fatalf("whole log: %d entries, more %v, %v", len(all), more, err)
	}
	if oldest := all[len(all)-1]; fmt.Sprint(oldest.Migrations) != "[create_table cities]" || len(oldest.Rows) != 0 {
		t.Fatalf("oldest entry: %+v, want the table's creation", oldest)
	}
	if cnt, _ := a.CountLocalTransactions(model.HLC{}); cnt != len(all) {
		t.Fatalf("CountLocalTransactions %d, log entries %d", cnt, len(all))
	}
	checked, _, err := a.InspectLog(engine.LogOptions{Limit: 1000, Checked: &model.HLC{}})
	if err != nil {
		t.Fatal(err)
	}
	var sup []int
	for i, en := range checked {
		if en.Superseded {
			sup = append(sup, i)
		}
	}
	// Newest first: the delete of c007 (0), the update of c005 (1), the
	// inserts c119 … c000 (2 … 121), the schema (122). The delete dropped
	// c007's cells: its insert (121-7 = 114) holds no fact any more.
	if fmt.Sprint(sup) != "[114]" || all[114].Superseded {
		t.Fatalf("superseded entries %v, want [114] (and none unless checked)", sup)
	}
	after, _, _ := a.InspectLog(engine.LogOptions{After: all[2].HLC})
	if len(after) != 2 {
		t.Fatalf("after the third newest: %d entries, want 2", len(after))
	}

	if err := b.SetState("sync:x:cursor", []byte("17")); err != nil {
		t.Fatal(err)
	}
	if err := b.SetState("other", []byte("1")); err != nil {
		t.Fatal(err)
	}
	st, err := b.States("sync:")
	if err != nil || len(st) != 1 || st[0].Name != "sync:x:cursor" || string(st[0].Value) != "17" {
		t.Fatalf("states: %+v %v", st, err)
	}
}

// TestInspectSearchRaw: a search that only text can match skips rows
// whose stored bytes lack it (inspectMatcher.mayMatch) and finds exactly
// what decoding every row finds: text and JSON values, keys, any case,
// non-ASCII letters; numbers, booleans and timestamps by their text forms.
func TestInspectSearchRaw(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{{Name: "t", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "name", Type: model.KindText}, {Name: "n", Type: model.KindInteger},
		{Name: "r", Type: model.KindReal}, {Name: "ok", Type: model.KindBoolean}, {Name: "at", Type: model.KindTimestamp},
		{Name: "j", Type: model.KindJSON}}}}}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := []map[string]any{
		{"id": "Zürich-1", "name": "ZÜRICH Hauptbahnhof", "n": 8001, "r": 47.37, "ok": true, "at": time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), "j": json.RawMessage(`{"city":"Bern"}`)},
		{"id": "k2", "name": "Lisboa", "n": -12, "r": 1.5e6, "ok": false, "j": json.RawMessage(`["Quito"]`)},
		{"id": "k3", "name": "nul\x00byte", "n": 3},
		{"id": "Ω-key", "name": "omega"},
		{"id": "k5", "name": "\u212Aelvin İSTANBUL"}, // the Kelvin sign and İ lower-case to k and i
	}
	for _, r := range rows {
		if _, err := db.Insert("t", r); err != nil {
			t.Fatal(err)
		}
	}
	all, err := db.InspectRows("t", engine.InspectOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	brute := func(needle string, prefix bool) []string {
		needle = strings.ToLower(needle)
		var out []string
		for _, r := range all.Rows {
			for _, c := range r.Cells {
				s := c.Value.String()
				if c.Value.Kind() == model.KindText {
					s = c.Value.Text()
				}
				if c.Value.IsNull() || c.Value.Kind() == model.KindBlob {
					continue
				}
				s = strings.ToLower(s)
				if (prefix && strings.HasPrefix(s, needle)) || (!prefix && strings.Contains(s, needle)) {
					out = append(out, r.Key[0].Text())
					break
				}
			}
		}
		return out
	}
	for _, needle := range []string{"zü", "ZÜRICH", "hauptbahnhof", "bern", "quito", "lisb", "ω", "Ω-K", "omega", "8001", "-12", "1.5e+06", "true", "fal", "2026-03-04t05", "byte", "\x00b", "city", "k", "xyz", "47.37", "kelvin", "elvin i", "istanbul", "i̇stanbul", "vin İs"} {
		for _, prefix := range []bool{false, true} {
			got, err := db.InspectRows("t", engine.InspectOptions{Search: needle, Prefix: prefix, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range got.Rows {
				keys = append(keys, r.Key[0].Text())
			}
			if want := brute(needle, prefix); fmt.Sprint(keys) != fmt.Sprint(want) {
				t.Errorf("search %q (prefix %v): %q, want %q", needle, prefix, keys, want)
			}
		}
	}
}

// TestInspectRenamed: InspectRows and InspectCount name a renamed table by
// its current name, as queries do: its former name is ErrUnknownTable
// saying the new one (they read the table under its former name before).
func TestInspectRenamed(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{{Name: "items", Columns: []model.ColumnDef{
		{Name: "id", Type: model.KindText}, {Name: "title", Type: model.KindText}}}}}
	db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Insert("items", map[string]any{"id": "a", "title": "A"}); err != nil {
		t.Fatal(err)
	}
	if err := db.RenameTable("items", "goods"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InspectRows("items", engine.InspectOptions{}); !errors.Is(err, engine.ErrUnknownTable) || !strings.Contains(err.Error(), `renamed to "goods"`) {
		t.Errorf("InspectRows of the former name: %v, want ErrUnknownTable saying goods", err)
	}
	if _, _, err := db.InspectCount("items"); !errors.Is(err, engine.ErrUnknownTable) || !strings.Contains(err.Error(), `renamed to "goods"`) {
		t.Errorf("InspectCount of the former name: %v, want ErrUnknownTable saying goods", err)
	}
	if p, err := db.InspectRows("goods", engine.InspectOptions{}); err != nil || len(p.Rows) != 1 {
		t.Errorf("InspectRows of the current name: %d rows, %v", len(p.Rows), err)
	}
	if live, _, err := db.InspectCount("goods"); err != nil || live != 1 {
		t.Errorf("InspectCount of the current name: %d, %v", live, err)
	}
	if _, err := db.InspectRows("nope", engine.InspectOptions{}); !errors.Is(err, engine.ErrUnknownTable) {
		t.Errorf("InspectRows of no table: %v", err)
	}
	// The change log counts rows under the current name, and says what a
	// rename renamed to.
	if _, err := db.Insert("goods", map[string]any{"id": "b", "title": "B"}); err != nil {
		t.Fatal(err)
	}
	entries, _, err := db.InspectLog(engine.LogOptions{})
	if err != nil || len(entries) != 4 {
		t.Fatalf("InspectLog: %d entries, %v", len(entries), err)
	}
	if got := fmt.Sprint(entries[0].Rows, entries[1].Migrations, entries[2].Rows, entries[3].Migrations); got != "map[goods:1] [rename_table items to goods] map[goods:1] [create_table items]" {
		t.Errorf("InspectLog after the rename: %s", got)
	}
}

// TestInspectHeldRenamed: held changes of a renamed table are listed
// under its current name, asked for by it, whatever name they were held
// under; its former name is ErrUnknownTable saying the new one.
func TestInspectHeldRenamed(t *testing.T) {
	def := func(cols ...string) *model.Schema {
		td := model.TableDef{Name: "items", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}}}
		for _, c := range cols {
			td.Columns = append(td.Columns, model.ColumnDef{Name: c, Type: model.KindText})
		}
		return &model.Schema{Tables: []model.TableDef{td}}
	}
	open := func(s *model.Schema) *engine.Engine {
		db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: s})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(def("title")), open(def("title", "extra"))
	if _, err := b.Insert("items", map[string]any{"id": "x", "title": "X", "extra": "E"}); err != nil {
		t.Fatal(err)
	}
	sets, err := b.ChangesSince(model.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var data []model.ChangeSet // b's schema (its create of items with extra) does not reach a: extra's value is held
	for _, cs := range sets {
		if cs.Migrations = nil; len(cs.Changes) > 0 {
			data = append(data, cs)
		}
	}
	if _, err := a.ApplyChanges(data); err != nil {
		t.Fatal(err)
	}
	if held, _, err := a.InspectHeld("items", nil, 10); err != nil || len(held) != 1 {
		t.Fatalf("before the rename: %+v, %v; want extra's change held", held, err)
	}
	if err := a.RenameTable("items", "goods"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"", "goods"} {
		held, _, err := a.InspectHeld(table, nil, 10)
		if err != nil || len(held) != 1 || held[0].Change.Table != "goods" || held[0].Change.Column != "extra" {
			t.Errorf("InspectHeld(%q): %+v, %v; want extra's change, table goods", table, held, err)
		}
	}
	if _, _, err := a.InspectHeld("items", nil, 10); !errors.Is(err, engine.ErrUnknownTable) || !strings.Contains(err.Error(), `renamed to "goods"`) {
		t.Errorf("InspectHeld of the former name: %v", err)
	}
	if held, _, err := a.InspectHeld("nosuch", nil, 10); err != nil || len(held) != 0 {
		t.Errorf("InspectHeld of a table nobody has: %+v, %v", held, err)
	}
}
