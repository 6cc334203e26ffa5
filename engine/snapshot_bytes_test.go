//go:build !js

package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/replica-sync/replica/kv/memkv"
)

func wideSchema() *Schema {
	return &Schema{Tables: []TableDef{{Name: "files", Columns: []ColumnDef{
		{Name: "id", Type: KindText}, {Name: "a", Type: KindText}, {Name: "b", Type: KindText},
		{Name: "c", Type: KindText}, {Name: "d", Type: KindBlob}}}}}
}

// TestSnapshotChunkBytes: rows chunks are bounded by ChunkBytes (as
// RowBytes measures them) as well as by ChunkRows: 20 KB rows fill a chunk
// up to the bound, and a row larger than the bound on its own (four
// peers' columns of ~1.9 MiB merged into one ~7.6 MiB row) travels in
// parts of one row each, each part as many cells as fit, a cell larger
// than the bound alone. A fresh replica applying the stream ends with
// exactly the source's rows. Before, a chunk held 1000 rows whatever their
// size (20 MB for rows of 20 KB, above the 16 MiB frame limit).
func TestSnapshotChunkBytes(t *testing.T) {
	clock := &benchClock{ms: benchT0 * 8}
	src, err := Open(memkv.New(Buckets...), Options{Schema: wideSchema(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		if _, err := src.Insert("files", map[string]any{"id": "r" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i), "a": strings.Repeat("x", 20_000)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Delete("files", Key{"r005"}); err != nil {
		t.Fatal(err)
	}
	// Four peers each set one column of row "big".
	const big = 1900 << 10
	for i, col := range []string{"a", "b", "c", "d"} {
		site := SiteID{byte(10 + i)}
		h := HLC{Wall: clock.Now(), Site: site}
		var v Value = Text(strings.Repeat(string(rune('p'+i)), big))
		if col == "d" {
			v = Blob(make([]byte, big))
		}
		cs := ChangeSet{SiteID: site, HLC: h, TransactionID: h.TransactionID(), Changes: []Change{
			{Type: ColumnChange, Table: "files", PK: []Value{Text("big")}, Column: col, Value: v, HLC: h}}}
		if _, err := src.ApplyChanges([]ChangeSet{cs}); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 1 << 20
	var chunks []SnapshotChunk
	parts := 0
	for c, err := range src.Snapshot(SnapshotOptions{ChunkBytes: limit}) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
		if c.Type != ChunkRows {
			continue
		}
		size := 0
		for i := range c.Rows {
			size += SnapshotRowBytes(&c.Rows[i])
		}
		switch {
		case len(c.Rows) > 1 && size > limit:
			t.Fatalf("a chunk of %d rows measures %d bytes, above ChunkBytes %d", len(c.Rows), size, limit)
		case len(c.Rows) == 1 && size > limit && len(c.Rows[0].Cells) > 1:
			t.Fatalf("a one-row chunk of %d cells measures %d bytes, above ChunkBytes %d", len(c.Rows[0].Cells), size, limit)
		}
		if c.Rows[0].PK[0].Text() == "big" {
			parts++
		}
	}
	if parts != 4 {
		t.Fatalf("row big travelled in %d parts, want 4 (one per ~1.9 MiB cell)", parts)
	}
	dst, err := Open(memkv.New(Buckets...), Options{Schema: wideSchema(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := dst.ApplySnapshotChunk(c); err != nil {
			t.Fatalf("applying %s: %v", c.Type, err)
		}
	}
	all := func(e *Engine) []SnapshotRow {
		var out []SnapshotRow
		for c, err := range e.Snapshot(SnapshotOptions{ChunkRows: 100000, ChunkBytes: 1 << 30}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c.Rows...)
		}
		return out
	}
	want, got := all(src), all(dst)
	if len(want) != 121 {
		t.Fatalf("source has %d rows, want 121", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the replica has %d rows, the source %d (or different cells)", len(got), len(want))
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
