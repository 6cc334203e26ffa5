//go:build !js

package engine_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/engine/enginetest"
	"github.com/replica-sync/replica/kv/memkv"
)

func oversizeSchema() *engine.Schema {
	return &engine.Schema{Tables: []engine.TableDef{{Name: "files", Columns: []engine.ColumnDef{
		{Name: "id", Type: engine.KindText}, {Name: "a", Type: engine.KindText}, {Name: "d", Type: engine.KindBlob}, {Name: "j", Type: engine.KindJSON}}}}}
}

// TestOversizedValueRefusedFirst: a local write of a 200 MB value (text,
// bytes, a json string; insert, update, upsert, a transaction's insert) is
// refused with a ValidationError naming the column, writes nothing, and is
// refused before the value is converted or encoded: the refusal allocates
// under 1 MiB. Before, the row's size check came after the row was encoded
// (hundreds of MB allocated, 8.8 s natively, 52 s in the browser).
func TestOversizedValueRefusedFirst(t *testing.T) {
	st := memkv.New(engine.Buckets...)
	e, err := engine.Open(st, engine.Options{Schema: oversizeSchema()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Insert("files", map[string]any{"id": "k", "a": "small"}); err != nil {
		t.Fatal(err)
	}
	before := enginetest.DumpStore(t, st)
	huge := strings.Repeat("x", 200<<20)
	hugeBytes := make([]byte, 200<<20)
	writes := map[string]func() error{
		"insert text": func() error { _, err := e.Insert("files", map[string]any{"id": "n", "a": huge}); return err },
		"insert blob": func() error { _, err := e.Insert("files", map[string]any{"id": "n", "d": hugeBytes}); return err },
		"insert json": func() error { _, err := e.Insert("files", map[string]any{"id": "n", "j": huge}); return err },
		"insert value": func() error {
			_, err := e.Insert("files", map[string]any{"id": "n", "a": engine.Text(huge)})
			return err
		},
		"update": func() error { _, err := e.Update("files", engine.Key{"k"}, map[string]any{"a": huge}); return err },
		"upsert": func() error { _, err := e.Upsert("files", map[string]any{"id": "k", "a": huge}); return err },
		"transaction": func() error {
			_, err := e.Transact(func(tx *engine.Tx) error {
				_, err := tx.Insert("files", map[string]any{"id": "n", "a": huge})
				return err
			})
			return err
		},
	}
	for name, write := range writes {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc := ms.TotalAlloc
		err := write()
		runtime.ReadMemStats(&ms)
		var ve *engine.ValidationError
		if !errors.As(err, &ve) || ve.Table != "files" || (ve.Column != "a" && ve.Column != "d" && ve.Column != "j") || !strings.Contains(ve.Reason, fmt.Sprint(200<<20)) {
			t.Fatalf("%s of 200 MB: %v, want a ValidationError naming the column and the size", name, err)
		}
		if n := ms.TotalAlloc - alloc; n > 1<<20 {
			t.Errorf("%s of 200 MB: refusing it allocated %d bytes: the value was processed before the size check", name, n)
		}
	}
	if d := diffDump(before, enginetest.DumpStore(t, st)); d != "" {
		t.Fatalf("refused writes wrote: %s", d)
	}
	// Just under the limit, a value still takes the usual path.
	if _, err := e.Update("files", engine.Key{"k"}, map[string]any{"a": huge[:engine.MaxLocalRowSize-1024]}); err != nil {
		t.Fatalf("a value just under the limit: %v", err)
	}
}

func diffDump(a, b enginetest.Dump) string {
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%d buckets before, %d after, contents differ", len(a.Buckets), len(b.Buckets))
	}
	return ""
}

// BenchmarkInsertOversized: a local insert of a text value of 5, 50 or
// 200 MB, far above MaxLocalRowSize, refused with a ValidationError.
func BenchmarkInsertOversized(b *testing.B) {
	for _, mb := range []int{5, 50, 200} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			e, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: oversizeSchema()})
			if err != nil {
				b.Fatal(err)
			}
			v := strings.Repeat("x", mb<<20)
			b.ResetTimer()
			for range b.N {
				_, err := e.Insert("files", map[string]any{"id": "k", "a": v})
				var ve *engine.ValidationError
				if !errors.As(err, &ve) {
					b.Fatalf("insert of %d MB: %v, want a ValidationError", mb, err)
				}
			}
		})
	}
}
