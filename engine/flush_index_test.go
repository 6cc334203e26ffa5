//go:build !js

package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv/memkv"
)

// TestFlushErrorKeepsIndexEntries: a statement of a transaction fails at
// flush (Tx.Query flushes; a row over MaxLocalRowSize is refused there),
// fn handles the error, mends the row and commits, as Transact allows.
// The rows the failed flush wrote before the refused one keep their index
// entries: a query through the index finds them.
func TestFlushErrorKeepsIndexEntries(t *testing.T) {
	sch := &engine.Schema{Tables: []engine.TableDef{{Name: "items",
		Columns: []engine.ColumnDef{{Name: "id", Type: engine.KindText}, {Name: "tag", Type: engine.KindText},
			{Name: "s1", Type: engine.KindText}, {Name: "s2", Type: engine.KindText}},
		Indexes: []engine.IndexDef{{Name: "by_tag", Columns: []string{"tag"}}}}}}
	e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	half := strings.Repeat("x", engine.MaxLocalRowSize*3/4)
	_, err = e.Transact(func(tx *engine.Tx) error {
		if _, err := tx.Insert("items", map[string]any{"id": "a", "tag": "t"}); err != nil {
			return err
		}
		// Each value fits alone; the row does not.
		if _, err := tx.Insert("items", map[string]any{"id": "b", "tag": "t", "s1": half, "s2": half}); err != nil {
			return err
		}
		_, qerr := tx.Query("items", engine.Query{})
		var ve *engine.ValidationError
		if !errors.As(qerr, &ve) {
			t.Errorf("query over an oversized row: %v, want a ValidationError", qerr)
		}
		_, err := tx.Update("items", engine.Key{"b"}, map[string]any{"s2": ""})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query("items", engine.Query{Where: []engine.Filter{{Column: "tag", Op: engine.Eq, Value: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r["id"].Text())
	}
	if got := strings.Join(ids, ","); got != "a,b" {
		t.Fatalf("rows with tag t through the index: [%s], want [a,b]", got)
	}
}
