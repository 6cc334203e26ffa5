//go:build !js

package engine

// Benchmarks (make bench): the engine on memkv and boltkv.
//
//	go test -run XXX -bench . -benchmem ./engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/kv/memkv"

	"github.com/replica-sync/replica/engine/internal/layout"
	"github.com/replica-sync/replica/engine/internal/rowrec"
)

type benchClock struct{ ms uint64 }

func (c *benchClock) Now() uint64 { c.ms++; return c.ms / 8 }

const benchT0 = 1795910400000

func citySchema() *Schema {
	return &Schema{Tables: []TableDef{{
		Name: "cities",
		Columns: []ColumnDef{
			{Name: "id", Type: KindInteger},
			{Name: "name", Type: KindText, NotNull: true},
			{Name: "lat", Type: KindReal},
			{Name: "lng", Type: KindReal},
			{Name: "country", Type: KindText},
			{Name: "admin1", Type: KindText},
			{Name: "admin2", Type: KindText},
		},
		PrimaryKey: []string{"id"},
		Indexes:    []IndexDef{{Name: "by_name", Columns: []string{"name"}}},
	}}}
}

// benchRows returns n city rows: real ones when the data set is present,
// synthetic ones of the same shape otherwise.
func benchRows(b testing.TB, n int) []map[string]any {
	cs, err := cities.Load(n)
	if err != nil && !errors.Is(err, cities.ErrAbsent) {
		b.Fatal(err)
	}
	rows := make([]map[string]any, n)
	for i := range rows {
		if i < len(cs) {
			c := cs[i]
			rows[i] = map[string]any{"id": i + 1, "name": c.Name, "lat": c.Lat, "lng": c.Lng, "country": c.Country, "admin1": c.Admin1, "admin2": c.Admin2}
		} else {
			rows[i] = map[string]any{"id": i + 1, "name": fmt.Sprintf("City %d", i), "lat": 42.53176, "lng": 1.56654, "country": "AD", "admin1": "03", "admin2": ""}
		}
	}
	return rows
}

type backend struct {
	name string
	open func(b testing.TB) kv.Store
}

var backends = []backend{
	{"memkv", func(b testing.TB) kv.Store { return memkv.New(Buckets...) }},
	{"boltkv", func(b testing.TB) kv.Store {
		st, err := boltkv.Open(filepath.Join(b.TempDir(), "bench.db"), Buckets, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}},
}

func openBench(b testing.TB, be backend) *Engine {
	e, err := Open(be.open(b), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8}})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// insertBench inserts rows into e's cities table, 1,000 rows per
// transaction (len(rows) a multiple of 1,000).
func insertBench(b testing.TB, e *Engine, rows []map[string]any) {
	for i := 0; i < len(rows); i += 1000 {
		_, err := e.Transact(func(tx *Tx) error {
			for _, r := range rows[i : i+1000] {
				if _, err := tx.Insert("cities", r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsert(b *testing.B) {
	rows := benchRows(b, 10000)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := openBench(b, be)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := rows[i%len(rows)]
				r["id"] = i + 1
				if _, err := e.Insert("cities", r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTransaction1000(b *testing.B) {
	rows := benchRows(b, 1000)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := openBench(b, be)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := e.Transact(func(tx *Tx) error {
					for j, r := range rows {
						r["id"] = i*1000 + j + 1
						if _, err := tx.Insert("cities", r); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkStaged1000 is Transaction1000 through a Staged transaction, the
// path of the JavaScript API's db.transaction (W2 in the browser).
func BenchmarkStaged1000(b *testing.B) {
	rows := benchRows(b, 1000)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := openBench(b, be)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := e.Stage()
				for j, r := range rows {
					r["id"] = i*1000 + j + 1
					if _, err := s.Insert("cities", r); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// sourceSets returns ChangeSets holding about facts column changes, in
// transactions of 100 rows.
func sourceSets(b testing.TB, facts int) []ChangeSet {
	rowsN := facts / 7
	rows := benchRows(b, rowsN)
	src := openBench(b, backends[0])
	for i := 0; i < rowsN; i += 100 {
		_, err := src.Transact(func(tx *Tx) error {
			for j := i; j < i+100 && j < rowsN; j++ {
				if _, err := tx.Insert("cities", rows[j]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	sets, err := src.ChangesSince(HLC{}, 1<<30, ChangesFilter{})
	if err != nil {
		b.Fatal(err)
	}
	return sets
}

func countChanges(sets []ChangeSet) int {
	n := 0
	for _, cs := range sets {
		n += len(cs.Changes) + len(cs.Migrations)
	}
	return n
}

func BenchmarkApplyChanges10k(b *testing.B) {
	sets := sourceSets(b, 10000)
	n := countChanges(sets)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := openBench(b, be)
				b.StartTimer()
				if _, err := e.ApplyChanges(sets); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

func BenchmarkChangesSince100k(b *testing.B) {
	sets := sourceSets(b, 100000)
	n := countChanges(sets)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := openBench(b, be)
			if _, err := e.ApplyChanges(sets); err != nil {
				b.Fatal(err)
			}
			// The replica's log holds the applied changes plus its own
			// schema migration (the DDL every replica records when it opens).
			own, err := e.ChangesSince(HLC{}, 1<<30, ChangesFilter{OnlyLocal: true})
			if err != nil {
				b.Fatal(err)
			}
			want := n + countChanges(own)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got := 0
				var since HLC
				for {
					page, err := e.ChangesSince(since, 1000, ChangesFilter{})
					if err != nil {
						b.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					got += countChanges(page)
					since = page[len(page)-1].HLC
				}
				if got != want {
					b.Fatalf("read %d changes, want %d (%d applied + %d own)", got, want, n, want-n)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

func BenchmarkSnapshot100k(b *testing.B) {
	const rowsN = 100000
	rows := benchRows(b, rowsN)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			e := openBench(b, be)
			insertBench(b, e, rows)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var got int64
				for c, err := range e.Snapshot(SnapshotOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					got += int64(len(c.Rows))
				}
				if got != rowsN {
					b.Fatalf("snapshot carried %d rows", got)
				}
			}
			b.ReportMetric(float64(b.N*rowsN)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkStorage reports the kv bytes per row of 10,000 city rows
// inserted one per transaction: own-B/row is what a plain key-value store
// would hold (the row key and the column names and values, in the record's
// value encoding), meta-B/row everything Replica adds (cell HLCs, change-log
// and index entries, clock), and overhead-x their ratio.
func BenchmarkStorage(b *testing.B) {
	const rowsN = 10000
	rows := benchRows(b, rowsN)
	for i := 0; i < b.N; i++ {
		st := memkv.New(Buckets...)
		e, err := Open(st, Options{Schema: &Schema{Tables: []TableDef{{Name: "cities", Columns: citySchema().Tables[0].Columns, PrimaryKey: []string{"id"}}}}, Clock: &benchClock{ms: benchT0 * 8}})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			if _, err := e.Insert("cities", r); err != nil {
				b.Fatal(err)
			}
		}
		var own, total int
		tk := layout.TableKey("cities")
		err = st.View(func(tx kv.Tx) error {
			for _, bk := range []string{layout.BucketRows, layout.BucketLog, layout.BucketIndex} {
				err := tx.Scan(bk, kv.Range{}, func(k, v []byte) bool {
					total += len(k) + len(v)
					return true
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			pk := []Value{Int(int64(r["id"].(int)))}
			own += len(layout.RowKey(tk, pk))
			for _, c := range citySchema().Tables[0].Columns[1:] {
				own += 1 + len(c.Name)
				var v Value
				switch x := r[c.Name].(type) {
				case string:
					v = Text(x)
				case float64:
					v = Real(x)
				}
				own += len(rowrec.AppendValue(nil, v))
			}
		}
		total += 10 + 8 // the clock and schema version, once
		b.ReportMetric(float64(own)/rowsN, "own-B/row")
		b.ReportMetric(float64(total-own)/rowsN, "meta-B/row")
		b.ReportMetric(float64(total-own)/float64(own), "overhead-x")
	}
}

// BenchmarkApplySnapshot100k applies a 100,000-row snapshot (chunks of
// 1,000 rows, as a relay sends them) to an empty replica: the native half
// of a browser bootstrap.
func BenchmarkApplySnapshot100k(b *testing.B) {
	const rowsN = 100000
	rows := benchRows(b, rowsN)
	src := openBench(b, backends[0])
	insertBench(b, src, rows)
	var chunks []SnapshotChunk
	for c, err := range src.Snapshot(SnapshotOptions{}) {
		if err != nil {
			b.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e, err := Open(be.open(b), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8}, LocalChangeLogOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, c := range chunks {
					if _, err := e.ApplySnapshotChunk(c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*rowsN)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
