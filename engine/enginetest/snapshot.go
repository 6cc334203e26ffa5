package enginetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/replica-sync/replica/engine"
)

func collect(t testing.TB, e *replica, o engine.SnapshotOptions) []engine.SnapshotChunk {
	t.Helper()
	var out []engine.SnapshotChunk
	for c, err := range e.Snapshot(o) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func sameVisible(t testing.TB, a, b *replica, tables ...string) {
	t.Helper()
	for _, tb := range tables {
		ra := must(a.Query(tb, engine.Query{}))(t)
		rb := must(b.Query(tb, engine.Query{}))(t)
		if len(ra) != len(rb) {
			t.Fatalf("%s: %s has %d rows, %s has %d", tb, a.name, len(ra), b.name, len(rb))
		}
		for i := range ra {
			if !rowsEqual(ra[i], rb[i]) {
				t.Fatalf("%s row %d: %s vs %s", tb, i, fmtRow(ra[i]), fmtRow(rb[i]))
			}
		}
	}
}

func (s *suite) testSnapshot(t *testing.T) {
	a := s.newReplica(t, "a", TripsSchema(), nil)
	for i := 0; i < 25; i++ {
		must(a.Insert("trips", map[string]any{"id": fmt.Sprintf("t%02d", i), "title": fmt.Sprintf("trip %d", i), "days": i}))(t)
		must(a.Insert("stops", map[string]any{"trip": fmt.Sprintf("t%02d", i), "pos": 1}))(t)
	}
	must(a.Update("trips", engine.Key{"t03"}, map[string]any{"title": "changed"}))(t)
	must(a.Delete("trips", engine.Key{"t04"}))(t)
	must(a.Delete("stops", engine.Key{"t05", 1}))(t)
	chunks := collect(t, a, engine.SnapshotOptions{ChunkRows: 4, Cursor: 77})
	if chunks[0].Type != engine.ChunkHeader || chunks[0].Header.Format != engine.SnapshotFormat || chunks[0].Header.Rows != 50 || chunks[0].Header.Cursor != 77 {
		t.Fatalf("header %+v", chunks[0].Header)
	}
	if chunks[1].Type != engine.ChunkSchema || len(chunks[1].Migrations) != 2 {
		t.Fatalf("second chunk %s with %d migrations", chunks[1].Type, len(chunks[1].Migrations))
	}
	last := chunks[len(chunks)-1]
	if last.Type != engine.ChunkFooter || last.Footer.Rows != 50 || last.Footer.Tables != 2 {
		t.Fatalf("footer %+v", last.Footer)
	}

	t.Run("Bootstrap", func(t *testing.T) {
		b := s.newReplica(t, "b", nil, nil) // schema-less until the snapshot brings it
		b2 := s.newReplica(t, "b2", TripsSchema(), nil)
		for _, r := range []*replica{b, b2} {
			var p engine.SnapshotProgress
			for _, c := range chunks {
				p = must(r.ApplySnapshotChunk(c))(t)
				if c.Type != engine.ChunkFooter && c.Type != engine.ChunkHeader {
					if cp := must(r.SnapshotCheckpoint())(t); cp == nil {
						t.Fatalf("no checkpoint while applying (%s chunk)", c.Type)
					}
				}
			}
			if !p.Done || p.RowsApplied != 50 || p.TablesDone != 2 {
				t.Fatalf("final progress %+v", p)
			}
			if cp := must(r.SnapshotCheckpoint())(t); cp != nil {
				t.Fatalf("checkpoint left after footer: %+v", cp)
			}
			sameVisible(t, a, r, "trips", "stops")
		}
		// The deleted row stays deleted against a stale write.
		stale := validSet(engine.SiteID{3}, T0-1000, "t04")
		must(b2.ApplyChanges([]engine.ChangeSet{stale}))(t)
		if _, err := b2.Get("trips", engine.Key{"t04"}); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("stale write revived a row deleted before the snapshot: %v", err)
		}
		// Deltas after the snapshot catch up; local writes after the
		// bootstrap are stamped above everything received.
		a.clock.Advance(5)
		must(a.Update("trips", engine.Key{"t07"}, map[string]any{"days": 70}))(t)
		pull(t, b2, a)
		sameVisible(t, a, b2, "trips", "stops")
		cs := must(b2.Transact(func(tx *engine.Tx) error {
			_, err := tx.Update("trips", engine.Key{"t08"}, map[string]any{"days": 80})
			return err
		}))(t)
		if !chunks[0].Header.HLC.Less(cs.HLC) {
			t.Fatalf("write after bootstrap stamped %s, below the snapshot's %s", cs.HLC, chunks[0].Header.HLC)
		}
		// Applying the same snapshot again changes nothing.
		before := DumpStore(t, b2.store)
		for _, c := range chunks {
			must(b2.ApplySnapshotChunk(c))(t)
		}
		if d := diffStore(before, DumpStore(t, b2.store)); d != "" {
			t.Fatalf("re-applied snapshot changed state: %s", d)
		}
	})
	t.Run("Resume", func(t *testing.T) {
		st := s.open(t)
		clk := NewManualClock(T0)
		b := must(engine.Open(st, engine.Options{Clock: clk}))(t)
		// Apply up to the middle of the second table, then "crash".
		var mid int
		for i, c := range chunks {
			if c.Type == engine.ChunkRows && c.Table == "stops" {
				mid = i
				break
			}
		}
		for _, c := range chunks[:mid+1] {
			must(b.ApplySnapshotChunk(c))(t)
		}
		b.Close()
		b = must(engine.Open(st, engine.Options{Clock: clk}))(t)
		defer b.Close()
		cp := must(b.SnapshotCheckpoint())(t)
		if cp == nil || len(cp.CompletedTables) != 1 || cp.CompletedTables[0] != "trips" || cp.Cursor != 77 {
			t.Fatalf("checkpoint after crash: %+v", cp)
		}
		rest := collect(t, a, engine.SnapshotOptions{ChunkRows: 4, Resume: cp})
		if h := rest[0].Header; h.SnapshotID != cp.SnapshotID || len(h.Tables) != 1 || h.Tables[0] != "stops" {
			t.Fatalf("resumed header %+v", h)
		}
		for _, c := range rest {
			if c.Table == "trips" {
				t.Fatal("resumed stream re-sent a finished table")
			}
			must(b.ApplySnapshotChunk(c))(t)
		}
		if cp := must(b.SnapshotCheckpoint())(t); cp != nil {
			t.Fatal("checkpoint left after the resumed footer")
		}
		br := &replica{Engine: b, store: st, clock: clk, name: "resumed"}
		// trips came from the original stream, before a's later update of
		// t07; the deltas after the snapshot bring it.
		pull(t, br, a)
		sameVisible(t, a, br, "trips", "stops")
	})
	t.Run("Refused", func(t *testing.T) {
		b := s.newReplica(t, "b", nil, nil)
		before := DumpStore(t, b.store)
		h := *chunks[0].Header
		h.Format = 2
		if _, err := b.ApplySnapshotChunk(engine.SnapshotChunk{Type: engine.ChunkHeader, Header: &h}); !errors.Is(err, engine.ErrSnapshotFormat) {
			t.Fatalf("format 2: %v", err)
		}
		h = *chunks[0].Header
		h.HLC.Wall = b.clock.Now() + 61_000
		if _, err := b.ApplySnapshotChunk(engine.SnapshotChunk{Type: engine.ChunkHeader, Header: &h}); !errors.Is(err, engine.ErrClockDrift) {
			t.Fatalf("drifted header: %v", err)
		}
		if cp := must(b.SnapshotCheckpoint())(t); cp != nil {
			t.Fatal("refused header left a checkpoint")
		}
		if d := diffStore(before, DumpStore(t, b.store)); d != "" {
			t.Fatalf("refused header wrote: %s", d)
		}
		if _, err := b.ApplySnapshotChunk(chunks[3]); !errors.Is(err, engine.ErrMalformed) {
			t.Fatalf("rows before a header: %v", err)
		}
		must(b.ApplySnapshotChunk(chunks[0]))(t)
		if _, err := b.ApplySnapshotChunk(chunks[len(chunks)-1]); !errors.Is(err, engine.ErrMalformed) {
			t.Fatalf("footer right after the header: %v", err)
		}
		must(b.ApplySnapshotChunk(chunks[1]))(t)
		bad := engine.SnapshotChunk{Type: engine.ChunkFooter, Footer: &engine.SnapshotFooter{Tables: 0, Rows: 5}}
		if _, err := b.ApplySnapshotChunk(bad); !errors.Is(err, engine.ErrMalformed) {
			t.Fatalf("footer with wrong counts: %v", err)
		}
	})
}
