//go:build js && wasm

package jsbridge

import (
	"fmt"
	"runtime"
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
)

// TestOversizedValueRefusedInJS: a row's 200 MB value (a string for a text
// or json column, bytes for a blob column, an object whose JSON is that
// large; by insert, update, upsert and a transaction's staged insert) is
// refused with VALIDATION naming the column, and nothing is written. The
// facade refuses it on its length before it is copied into WebAssembly:
// the Go heap grows by less than 1 MiB while it is refused. Before, the
// value crossed into Go (at least 200 MB allocated there) and was refused
// only once the row was encoded, 52 s later in the browser. Each refusal's
// time is logged.
func TestOversizedValueRefusedInJS(t *testing.T) {
	db := openT(t)
	seed := must(t, db.Call("insert", "items", jsv(`{title: "seed"}`)))
	id := seed.Get("id")
	huge := jsv(`"x".repeat(200 * 2 ** 20)`)
	hugeBytes := jsv(`new Uint8Array(200 * 2 ** 20)`)
	hugeObj := jsv(`({s: "y".repeat(200 * 2 ** 20)})`)
	row := func(col string, v js.Value) js.Value {
		r := jsv("({})")
		r.Set(col, v)
		return r
	}
	withID := func(r js.Value) js.Value { r.Set("id", id); return r }
	staged := asyncfn("db, row", `return db.transaction(async (tx) => { await tx.insert("items", row); });`)
	cases := []struct {
		name, col string
		call      func() js.Value
	}{
		{"insert text", "title", func() js.Value { return db.Call("insert", "items", row("title", huge)) }},
		{"insert blob", "data", func() js.Value { return db.Call("insert", "items", row("data", hugeBytes)) }},
		{"insert json string", "meta", func() js.Value { return db.Call("insert", "items", row("meta", huge)) }},
		{"insert json object", "meta", func() js.Value { return db.Call("insert", "items", row("meta", hugeObj)) }},
		{"update", "title", func() js.Value { return db.Call("update", "items", id, row("title", huge)) }},
		{"upsert", "title", func() js.Value { return db.Call("upsert", "items", withID(row("title", huge))) }},
		{"transaction insert", "title", func() js.Value { return staged.Invoke(db, row("title", huge)) }},
	}
	for _, c := range cases {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc := ms.TotalAlloc
		start := time.Now()
		v, rejected := await(c.call())
		took := time.Since(start)
		runtime.ReadMemStats(&ms)
		if !rejected {
			t.Fatalf("%s of 200 MB resolved: %s", c.name, describe(v))
		}
		checkError(t, v, "VALIDATION", c.col, "too large", fmt.Sprint(engine.MaxLocalRowSize))
		if col := v.Get("column"); col.Type() != js.TypeString || col.String() != c.col {
			t.Errorf("%s: error column %s, want %s", c.name, describe(col), c.col)
		}
		t.Logf("%s of 200 MB refused in %v, Go heap +%d bytes", c.name, took, ms.TotalAlloc-alloc)
		if n := ms.TotalAlloc - alloc; n > 1<<20 {
			t.Errorf("%s of 200 MB: Go allocated %d bytes refusing it: the value crossed into WebAssembly", c.name, n)
		}
	}
	if n := must(t, db.Call("count", "items")); n.Int() != 1 {
		t.Fatalf("%d rows after the refused writes, want 1", n.Int())
	}
	got := must(t, db.Call("get", "items", id))
	if s := got.Get("title").String(); s != "seed" {
		t.Fatalf("row after the refused writes: title %q", s)
	}
}
