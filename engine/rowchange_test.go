package engine_test

import (
	"fmt"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
)

// TestEventRows: a LocalChange event under OmitLocalChanges summarizes the
// rows it wrote (Event.Rows) exactly as RowsOf summarizes the full
// ChangeSet of the same writes on a replica without it: table, key,
// columns written, deletion, and the deleted row's prior image.
func TestEventRows(t *testing.T) {
	sch := &model.Schema{Tables: []model.TableDef{
		{Name: "items", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}, {Name: "n", Type: model.KindInteger}, {Name: "s", Type: model.KindText}}},
		{Name: "other", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}, {Name: "v", Type: model.KindInteger}}},
		{Name: "nums", Columns: []model.ColumnDef{{Name: "id", Type: model.KindInteger}, {Name: "v", Type: model.KindInteger}}},
	}}
	run := func(lean bool) [][]engine.RowChange {
		db, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch, OmitLocalChanges: lean})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var out [][]engine.RowChange
		db.Subscribe(func(ev engine.Event) {
			if ev.Type != engine.LocalChange {
				return
			}
			rows := ev.Rows
			if !lean {
				if ev.Rows != nil {
					t.Errorf("Event.Rows set without OmitLocalChanges")
				}
				rows = engine.RowsOf(ev.ChangeSet)
			}
			out = append(out, rows)
		})
		must := func(_ any, err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(db.Insert("items", map[string]any{"id": "a", "n": 1, "s": "x"}))
		must(db.Update("items", engine.Key{"a"}, map[string]any{"n": 2}))
		must(db.Transact(func(tx *engine.Tx) error {
			if _, err := tx.Insert("other", map[string]any{"id": "o", "v": 1}); err != nil {
				return err
			}
			if _, err := tx.Insert("items", map[string]any{"id": "b", "n": 5}); err != nil {
				return err
			}
			_, err := tx.Delete("items", engine.Key{"a"})
			return err
		}))
		// Rows written out of table and key order (integer keys, whose
		// order is not their text's): the event lists them in order.
		must(db.Transact(func(tx *engine.Tx) error {
			for _, w := range []struct {
				table string
				row   map[string]any
			}{
				{"nums", map[string]any{"id": 10, "v": 1}}, {"other", map[string]any{"id": "z", "v": 1}},
				{"nums", map[string]any{"id": 9, "v": 1}}, {"items", map[string]any{"id": "c", "n": 1}},
				{"nums", map[string]any{"id": -1, "v": 1}}, {"other", map[string]any{"id": "p", "v": 1}},
				{"nums", map[string]any{"id": 100}},
			} {
				if _, err := tx.Insert(w.table, w.row); err != nil {
					return err
				}
			}
			return nil
		}))
		return out
	}
	lean, full := run(true), run(false)
	if len(lean) != 4 {
		t.Fatalf("%d LocalChange events, want 4", len(lean))
	}
	if got, want := fmt.Sprint(lean), fmt.Sprint(full); got != want {
		t.Fatalf("Event.Rows %s\nRowsOf     %s", got, want)
	}
	tx := lean[2]
	if len(tx) != 3 || tx[0].Table != "items" || !tx[0].Deleted || tx[1].Table != "items" || tx[2].Table != "other" {
		t.Fatalf("the transaction's rows: %+v, want items a (deleted), items b, other o", tx)
	}
	if p := tx[0].Prior; p == nil || !p["n"].Equal(model.Int(2)) || !p["s"].Equal(model.Text("x")) || !p["id"].Equal(model.Text("a")) {
		t.Fatalf("the deleted row's prior image: %v, want id a, n 2, s x", p)
	}
	var order []string
	for _, r := range lean[3] {
		order = append(order, r.Table+fmt.Sprint(r.PK))
	}
	if got, want := fmt.Sprint(order), `[items["c"] nums[-1] nums[9] nums[10] nums[100] other["p"] other["z"]]`; got != want {
		t.Fatalf("the rows of a transaction written out of order: %s, want %s", got, want)
	}
	if c := fmt.Sprint(lean[1][0].Columns); c != "[n]" {
		t.Fatalf("the update's columns: %s, want [n]", c)
	}
}
