package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/replica-sync/replica/engine"
)

// testSnapshotChaos feeds a replica mangled snapshot streams — chunks
// dropped, repeated, swapped, truncated, streams restarted mid-way,
// footers and table names that lie — and checks that every refusal is a
// typed error (never a panic), that a completed stream leaves no
// checkpoint, and that one clean stream afterwards brings the replica to
// exactly the source's rows, whatever the mangled streams left behind.
func (s *suite) testSnapshotChaos(t *testing.T) {
	seed := s.seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	src := s.newReplica(t, "src", TripsSchema(), nil)
	for i := 0; i < 30; i++ {
		must(src.Insert("trips", map[string]any{"id": fmt.Sprintf("t%02d", i), "title": "x", "days": i}))(t)
		must(src.Insert("stops", map[string]any{"trip": fmt.Sprintf("t%02d", i), "pos": i % 3}))(t)
	}
	for i := 0; i < 30; i += 4 {
		must(src.Delete("trips", engine.Key{fmt.Sprintf("t%02d", i)}))(t)
	}
	rounds := 15
	if s.o.Short {
		rounds = 4
	}
	for round := 0; round < rounds; round++ {
		dst := s.newReplica(t, "dst", TripsSchema(), nil)
		for k := 0; k < 3; k++ {
			chunks := collect(t, src, engine.SnapshotOptions{ChunkRows: 1 + rng.IntN(8)})
			mangled := append([]engine.SnapshotChunk(nil), chunks...)
			for m := rng.IntN(4); m > 0; m-- {
				i := rng.IntN(len(mangled))
				switch rng.IntN(6) {
				case 0: // drop
					mangled = append(mangled[:i], mangled[i+1:]...)
				case 1: // repeat
					mangled = append(mangled[:i+1], mangled[i:]...)
				case 2: // swap with the next
					if i+1 < len(mangled) {
						mangled[i], mangled[i+1] = mangled[i+1], mangled[i]
					}
				case 3: // truncate
					mangled = mangled[:i]
				case 4: // a lying footer
					if f := mangled[len(mangled)-1]; f.Type == engine.ChunkFooter {
						lie := *f.Footer
						lie.Rows += int64(rng.IntN(3)) - 1
						lie.Tables += rng.IntN(3) - 1
						mangled[len(mangled)-1].Footer = &lie
					}
				case 5: // a chunk naming another table
					c := mangled[i]
					if c.Table != "" {
						c.Table = []string{"trips", "stops", "nope"}[rng.IntN(3)]
						mangled[i] = c
					}
				}
				if len(mangled) == 0 {
					break
				}
			}
			for _, c := range mangled {
				p, err := dst.ApplySnapshotChunk(c)
				if err != nil {
					if !errors.Is(err, engine.ErrMalformed) && !errors.Is(err, engine.ErrClockDrift) && !errors.Is(err, engine.ErrSnapshotFormat) {
						t.Fatalf("round %d: %s chunk: untyped error %v", round, c.Type, err)
					}
					continue
				}
				if p.Done {
					if cp := must(dst.SnapshotCheckpoint())(t); cp != nil {
						t.Fatalf("round %d: checkpoint left after a completed stream", round)
					}
				}
			}
		}
		for _, c := range collect(t, src, engine.SnapshotOptions{ChunkRows: 5}) {
			if _, err := dst.ApplySnapshotChunk(c); err != nil {
				t.Fatalf("round %d: clean stream after mangled ones: %s chunk: %v", round, c.Type, err)
			}
		}
		if cp := must(dst.SnapshotCheckpoint())(t); cp != nil {
			t.Fatalf("round %d: checkpoint left after the clean stream", round)
		}
		sameVisible(t, src, dst, "trips", "stops")
		if d := diffData(DumpStore(t, src.store), DumpStore(t, dst.store)); d != "" {
			// Snapshots carry no before-images: compare what the
			// source's snapshot says instead of its bytes.
			again := s.newReplica(t, "again", TripsSchema(), nil)
			for _, c := range collect(t, src, engine.SnapshotOptions{}) {
				must(again.ApplySnapshotChunk(c))(t)
			}
			if d := diffData(DumpStore(t, again.store), DumpStore(t, dst.store)); d != "" {
				t.Fatalf("round %d: mangled streams left state a clean one does not: %s", round, d)
			}
		}
	}
}
