//go:build !js

package engine

import (
	"testing"
	"time"
)

// BenchmarkQuery10k runs the query shapes of the planner on 10,000 city
// rows in memkv: an index scan with a limit (the index yields the order),
// an index prefix scan, a primary-key range, a table scan with a filter on
// an unindexed column, and Count with and without filters.
//
//	go test -run '^$' -bench Query10k -benchmem ./engine
func BenchmarkQuery10k(b *testing.B) {
	const rowsN = 10000
	rows := benchRows(b, rowsN)
	e := openBench(b, backends[0])
	insertBench(b, e, rows)
	name := rows[rowsN/2]["name"].(string)
	country := rows[rowsN/2]["country"].(string)
	cases := []struct {
		name string
		q    Query
	}{
		{"index-ordered-limit", Query{Where: []Filter{{Column: "name", Op: Ge, Value: name}}, OrderBy: []Order{{Column: "name"}}, Limit: 50}},
		{"index-prefix", Query{Where: []Filter{{Column: "name", Op: Prefix, Value: name[:1]}}}},
		{"pk-range", Query{Where: []Filter{{Column: "id", Op: Ge, Value: 2000}, {Column: "id", Op: Lt, Value: 3000}}}},
		{"table-scan", Query{Where: []Filter{{Column: "country", Op: Eq, Value: country}}, OrderBy: []Order{{Column: "lat", Desc: true}}, Limit: 20}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				got, err := e.Query("cities", c.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) == 0 {
					b.Fatal("no rows")
				}
			}
		})
	}
	b.Run("count-all", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if n, err := e.Count("cities", nil); err != nil || n != rowsN {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("count-filter", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if n, err := e.Count("cities", []Filter{{Column: "country", Op: Eq, Value: country}}); err != nil || n == 0 {
				b.Fatal(n, err)
			}
		}
	})
}

// BenchmarkPrune2k prunes 2,000 tombstones (rows deleted past a 1 ms
// horizon) and the change-log entries of their inserts, on memkv.
func BenchmarkPrune2k(b *testing.B) {
	const rowsN = 2000
	rows := benchRows(b, rowsN)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clock := &benchClock{ms: benchT0 * 8}
		e, err := Open(backends[0].open(b), Options{Schema: citySchema(), Clock: clock, Retention: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < rowsN; j += 500 {
			_, err := e.Transact(func(tx *Tx) error {
				for k := j; k < j+500; k++ {
					if _, err := tx.Insert("cities", rows[k]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		for j := 0; j < rowsN; j += 500 {
			_, err := e.Transact(func(tx *Tx) error {
				for k := j; k < j+500; k++ {
					if _, err := tx.Delete("cities", Key{rows[k]["id"]}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		clock.ms += 1000 * 8 // one second on: every deletion is past the horizon
		b.StartTimer()
		res, err := e.PruneTombstones(clock.ms/8 - 1)
		if err != nil {
			b.Fatal(err)
		}
		if res.Tombstones != rowsN {
			b.Fatalf("pruned %d tombstones, want %d", res.Tombstones, rowsN)
		}
	}
}
