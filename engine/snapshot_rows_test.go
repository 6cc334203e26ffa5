//go:build !js

package engine

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/replica-sync/replica/kv/memkv"
)

// TestSnapshotRowsAnyOrder applies a snapshot whose rows chunks carry their
// rows shuffled, and some rows split in two entries of the same chunk
// (cells divided between them, some sent in both), and checks the replica
// ends with exactly the rows of the clean stream: applySnapshotRows takes
// rows in key order without a lookup and must notice the others.
func TestSnapshotRowsAnyOrder(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	src, err := Open(memkv.New(Buckets...), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8}})
	if err != nil {
		t.Fatal(err)
	}
	rows := benchRows(t, 600)
	for i := 0; i < len(rows); i += 100 {
		_, err := src.Transact(func(tx *Tx) error {
			for _, r := range rows[i : i+100] {
				if _, err := tx.Insert("cities", r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		if _, err := src.Delete("cities", Key{1 + rng.IntN(600)}); err != nil {
			t.Fatal(err)
		}
	}
	var clean []SnapshotChunk
	for c, err := range src.Snapshot(SnapshotOptions{ChunkRows: 128}) {
		if err != nil {
			t.Fatal(err)
		}
		clean = append(clean, c)
	}
	apply := func(chunks []SnapshotChunk) []SnapshotRow {
		e, err := Open(memkv.New(Buckets...), Options{Schema: citySchema(), Clock: &benchClock{ms: benchT0 * 8}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			if _, err := e.ApplySnapshotChunk(c); err != nil {
				t.Fatal(err)
			}
		}
		var out []SnapshotRow
		for c, err := range e.Snapshot(SnapshotOptions{ChunkRows: 100000}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c.Rows...)
		}
		return out
	}
	var mangled []SnapshotChunk
	split := 0
	for _, c := range clean {
		if c.Type != ChunkRows {
			mangled = append(mangled, c)
			continue
		}
		var rs []SnapshotRow
		for _, r := range c.Rows {
			if len(r.Cells) > 1 && rng.IntN(3) == 0 {
				cut := 1 + rng.IntN(len(r.Cells)-1)
				a, b := r, r
				a.Cells = r.Cells[:cut]
				b.Cells = r.Cells[cut-rng.IntN(cut+1):] // sometimes repeating cells of a
				b.HasTombstone = false
				rs = append(rs, a, b)
				split++
				continue
			}
			rs = append(rs, r)
		}
		rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		c.Rows = rs
		mangled = append(mangled, c)
	}
	if split == 0 {
		t.Fatal("no row was split")
	}
	// The footer counts rows as sent.
	last := &mangled[len(mangled)-1]
	f := *last.Footer
	f.Rows = 0
	for _, c := range mangled {
		f.Rows += int64(len(c.Rows))
	}
	last.Footer = &f
	renumberChunks(mangled)
	want, got := apply(clean), apply(mangled)
	if len(want) != 600 {
		t.Fatalf("clean stream: %d rows, want 600", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shuffled and split rows gave %d rows, the clean stream %d (or different cells)", len(got), len(want))
	}
}

// renumberChunks sets the offsets of a stream's rows and table_end chunks
// (SnapshotChunk.Offset) after a test changed the rows they carry.
func renumberChunks(chunks []SnapshotChunk) {
	var n int64
	for i := range chunks {
		switch c := &chunks[i]; c.Type {
		case ChunkTableStart:
			n = 0
		case ChunkRows:
			c.Offset = n
			n += int64(len(c.Rows))
		case ChunkTableEnd:
			c.Offset = n
		}
	}
}
