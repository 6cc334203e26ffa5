//go:build js && wasm

package jsbridge

import (
	"context"
	"fmt"
	"syscall/js"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/idbkv"
	"github.com/replica-sync/replica/wire"
)

// The benchmarks separate the bridge's cost from the engine's: each
// workload runs through the JS API (bridge) and directly on an engine over
// idbkv (engine), in the same page. `make bench-browser` runs them; the
// release build's figures beside raw IndexedDB come from cmd/wasm
// TestMeasure.

const benchSchema = `{tables: {cities: {columns: {id: "text", name: "text", country: "text", pop: "integer", lat: "real", lon: "real"}}}}`

const benchRow = `(i) => ({id: "c" + String(i).padStart(6, "0"), name: "City " + i, country: ["FR", "PT", "DE", "JP"][i % 4], pop: 1000 + i * 7, lat: (i % 180) - 90 + 0.123, lon: (i % 360) - 180 + 0.456})`

func benchValues(i int) map[string]any {
	return map[string]any{"id": fmt.Sprintf("c%06d", i), "name": fmt.Sprintf("City %d", i), "country": []string{"FR", "PT", "DE", "JP"}[i%4],
		"pop": float64(1000 + i*7), "lat": float64(i%180) - 90 + 0.123, "lon": float64(i%360) - 180 + 0.456}
}

func benchEngine(b testing.TB) *engine.Engine {
	b.Helper()
	name := dbName(b)
	b.Cleanup(func() { deleteIDB(name) })
	st, err := idbkv.Open(context.Background(), IDBPrefix+name, engine.Buckets)
	if err != nil {
		b.Fatal(err)
	}
	schemaJSON := js.Global().Get("JSON").Call("stringify", jsv(benchSchema)).String()
	schema, err := wire.ParseSchema([]byte(schemaJSON))
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.Open(st, engine.Options{Schema: &schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close(); _ = st.Close() })
	return e
}

func benchDB(b testing.TB) js.Value {
	name := dbName(b)
	b.Cleanup(func() { deleteIDB(name) })
	return openDB(b, name, benchSchema)
}

func BenchmarkInsert(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		e := benchEngine(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := e.Insert("cities", benchValues(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bridge", func(b *testing.B) {
		db := benchDB(b)
		b.ResetTimer()
		must(b, asyncfn("db, n", "const row = "+benchRow+"; for (let i = 0; i < n; i++) await db.insert('cities', row(i));").Invoke(db, b.N))
	})
}

func BenchmarkTransaction1000(b *testing.B) {
	b.Run("engine-staged", func(b *testing.B) {
		e := benchEngine(b)
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			st := e.Stage()
			for i := 0; i < 1000; i++ {
				if _, err := st.Insert("cities", benchValues(n*1000+i)); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := st.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bridge", func(b *testing.B) {
		db := benchDB(b)
		b.ResetTimer()
		must(b, asyncfn("db, n", "const row = "+benchRow+"; for (let k = 0; k < n; k++) await db.transaction(async (tx) => { for (let i = 0; i < 1000; i++) await tx.insert('cities', row(k * 1000 + i)); });").Invoke(db, b.N))
	})
}

func BenchmarkQuery10000(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		e := benchEngine(b)
		st := e.Stage()
		for i := 0; i < 10000; i++ {
			_, _ = st.Insert("cities", benchValues(i))
		}
		if _, err := st.Commit(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			rows, err := e.Query("cities", engine.Query{})
			if err != nil || len(rows) != 10000 {
				b.Fatal(err, len(rows))
			}
		}
	})
	b.Run("bridge", func(b *testing.B) {
		db := benchDB(b)
		must(b, asyncfn("db", "const row = "+benchRow+"; await db.transaction(async (tx) => { for (let i = 0; i < 10000; i++) await tx.insert('cities', row(i)); });").Invoke(db))
		b.ResetTimer()
		must(b, asyncfn("db, n", "for (let k = 0; k < n; k++) { const r = await db.query('cities'); if (r.length !== 10000) throw new Error('rows ' + r.length); }").Invoke(db, b.N))
	})
}
