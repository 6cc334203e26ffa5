package wire

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
)

// TestSnapshotRowSizeBound: a rows chunk's snapshot_chunk frame is never
// larger than MaxRowsChunkOverhead plus the SnapshotRowSize of its rows,
// whatever the values (text of control characters escapes 6x, quotes and
// backslashes 2x, blobs 4/3, bigints, reals, json), the key, the bases and
// the tombstones. The relay sizes chunks with it to stay under the frame
// limit. Random rows; the seed is printed.
func TestSnapshotRowSizeBound(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	text := func() string {
		alphabets := []string{"abc", "\x00\x01\x1f", "\"\\\n\t", "é€😀", "a\x02\"é"}
		a := []rune(alphabets[rng.IntN(len(alphabets))])
		var b strings.Builder
		for range rng.IntN(200) {
			b.WriteRune(a[rng.IntN(len(a))])
		}
		return b.String()
	}
	value := func() model.Value {
		switch rng.IntN(8) {
		case 0:
			return model.Null
		case 1:
			return model.Bool(rng.IntN(2) == 0)
		case 2:
			return model.Int(int64(rng.Uint64()))
		case 3:
			return model.Real(math.Float64frombits(rng.Uint64()&^(0x7ff<<52)) * math.Pow(10, float64(rng.IntN(600)-300)))
		case 4:
			b := make([]byte, rng.IntN(300))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return model.Blob(b)
		case 5:
			return mustJSON(t, `{"k":[1,"`+strings.Repeat("x", rng.IntN(50))+`"]}`)
		case 6:
			return model.TimestampMillis(rng.Int64N(8.64e15))
		}
		return model.Text(text())
	}
	for iter := range 300 {
		var rows []model.SnapshotRow
		for r := range 1 + rng.IntN(30) {
			base := hlcAt(uint64(rng.IntN(1000)), uint16(rng.IntN(3)), 0)
			row := model.SnapshotRow{PK: []model.Value{model.Text("k" + string(rune('a'+r)))}}
			if rng.IntN(3) == 0 {
				row.PK = append(row.PK, model.Int(int64(rng.Uint32())))
			}
			for c := range rng.IntN(12) {
				h := base
				h.OpSeq = uint32(c) + uint32(rng.IntN(2))*uint32(rng.Uint32())
				col := "c" + string(rune('a'+rng.IntN(20)))
				if c == 0 {
					col = "id"
				}
				row.Cells = append(row.Cells, model.SnapshotCell{Column: col, Value: value(), HLC: h})
			}
			if len(row.Cells) == 0 || rng.IntN(4) == 0 {
				row.HasTombstone, row.Tombstone = true, hlcAt(uint64(rng.IntN(1000)), 0, rng.Uint32())
			}
			rows = append(rows, row)
		}
		table := strings.Repeat("t", 1+rng.IntN(model.MaxNameLen))
		frame, err := Encode(&SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: table, Rows: rows}})
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		bound := MaxRowsChunkOverhead
		for i := range rows {
			bound += SnapshotRowSize(&rows[i])
		}
		if len(frame) > bound {
			t.Fatalf("iteration %d: frame of %d bytes above the bound %d: %.300s", iter, len(frame), bound, frame)
		}
	}
}

// TestSnapshotRowSizeWorstCases: the bound is exact enough for the values
// that expand most: a text of control characters (6x) and a blob (4/3).
func TestSnapshotRowSizeWorstCases(t *testing.T) {
	h := hlcAt(1, 0, 0)
	for _, v := range []model.Value{model.Text(strings.Repeat("\x01", 1<<20)), model.Blob(make([]byte, 1<<20)), model.Text(strings.Repeat("\"", 1<<20))} {
		rows := []model.SnapshotRow{{PK: []model.Value{model.Text("k")}, Cells: []model.SnapshotCell{{Column: "id", Value: model.Text("k"), HLC: h}, {Column: "v", Value: v, HLC: h}}}}
		frame, err := Encode(&SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "t", Rows: rows}})
		if err != nil {
			t.Fatal(err)
		}
		size := SnapshotRowSize(&rows[0])
		if len(frame) > MaxRowsChunkOverhead+size || size > len(frame)+1024 {
			t.Fatalf("%v of %d bytes: frame %d bytes, SnapshotRowSize %d", v.Kind(), len(v.Text()), len(frame), size)
		}
	}
}
