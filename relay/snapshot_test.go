//go:build !js

package relay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// snapStream is a received snapshot stream.
type snapStream struct {
	header *model.SnapshotHeader
	chunks []model.SnapshotChunk
	tables []string       // in table_start order
	rows   map[string]int // row entries per table
	// complete is the stream's snapshot_complete.
	complete *wire.SnapshotComplete
}

// collectSnapshot sends req (get_snapshot or resume_snapshot) and receives
// the stream up to snapshot_complete, checking the chunk order
// header → schema → (table_start → rows* → table_end)* → footer and the
// footer's counts.
func collectSnapshot(t testing.TB, c *client, req wire.Message) snapStream {
	t.Helper()
	c.send(req)
	s := snapStream{rows: map[string]int{}}
	state := "header"
	var table string
	var total int64
	for {
		m := c.recv()
		if sc, ok := m.(*wire.SnapshotComplete); ok {
			if state != "complete" {
				t.Fatalf("snapshot_complete while expecting %s", state)
			}
			s.complete = sc
			return s
		}
		sc, ok := m.(*wire.SnapshotChunk)
		if !ok {
			t.Fatalf("got %s (%+v) inside a snapshot stream", m.Type(), describe(m))
		}
		ch := sc.Chunk
		s.chunks = append(s.chunks, ch)
		bad := func() { t.Fatalf("chunk %d is %s while expecting %s", len(s.chunks)-1, ch.Type, state) }
		switch ch.Type {
		case model.ChunkHeader:
			if state != "header" {
				bad()
			}
			s.header = ch.Header
			state = "schema"
		case model.ChunkSchema:
			if state != "schema" {
				bad()
			}
			state = "table_start or footer"
		case model.ChunkTableStart:
			if state != "table_start or footer" {
				bad()
			}
			table = ch.Table
			s.tables = append(s.tables, table)
			state = "rows or table_end"
		case model.ChunkRows:
			if state != "rows or table_end" || ch.Table != table {
				bad()
			}
			s.rows[table] += len(ch.Rows)
			total += int64(len(ch.Rows))
		case model.ChunkTableEnd:
			if state != "rows or table_end" || ch.Table != table {
				bad()
			}
			state = "table_start or footer"
		case model.ChunkFooter:
			if state != "table_start or footer" {
				bad()
			}
			if ch.Footer.Tables != len(s.tables) || ch.Footer.Rows != total || s.header.Rows != total {
				t.Fatalf("footer %+v, header rows %d, stream carried %d tables and %d rows", *ch.Footer, s.header.Rows, len(s.tables), total)
			}
			if !slices.Equal(s.header.Tables, s.tables) {
				t.Fatalf("header lists tables %v, stream carried %v", s.header.Tables, s.tables)
			}
			state = "complete"
		default:
			t.Fatalf("unknown chunk type %q", ch.Type)
		}
	}
}

func TestSnapshotAndResume(t *testing.T) {
	r := startRelay(t, Config{SnapshotChunkRows: 1000})
	src := newReplica(t, nil)
	a := connectAs(t, r, "acme", src)
	if _, err := src.Transact(func(tx *engine.Tx) error {
		for i := 0; i < 30; i++ {
			if _, err := tx.Insert("trips", map[string]any{"id": fmt.Sprintf("trip-%02d", i), "title": "T", "budget": float64(i)}); err != nil {
				return err
			}
		}
		for i := 0; i < 2500; i++ {
			if _, err := tx.Insert("stops", map[string]any{"trip": "trip-01", "pos": i, "name": "s"}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Delete("trips", engine.Key{"trip-07"}); err != nil {
		t.Fatal(err)
	}
	a.apply("apply-1", localSets(t, src))
	cursor := uint64(3) // DDL, the bulk insert, the delete

	b := connect(t, r, "acme")
	s := collectSnapshot(t, b, &wire.GetSnapshot{})
	if s.header.Cursor != cursor || s.header.SiteID != b.ackSite(r) {
		t.Fatalf("header cursor %d site %s, want cursor %d and the relay's site", s.header.Cursor, s.header.SiteID, cursor)
	}
	if !slices.Equal(s.tables, []string{"trips", "stops"}) || s.rows["trips"] != 30 || s.rows["stops"] != 2500 {
		t.Fatalf("tables %v rows %v, want trips (30 entries, one a tombstone) then stops (2500)", s.tables, s.rows)
	}
	rowsChunks := 0
	for _, ch := range s.chunks {
		if ch.Type == model.ChunkRows {
			rowsChunks++
			if len(ch.Rows) > 1000 {
				t.Fatalf("rows chunk of %d rows above the 1000-row bound", len(ch.Rows))
			}
		}
	}
	if rowsChunks != 4 {
		t.Fatalf("%d rows chunks, want 1 for trips and 3 for stops", rowsChunks)
	}
	// The stream rebuilds the source's state in a fresh replica.
	dst := newReplica(t, nil)
	for _, ch := range s.chunks {
		if _, err := dst.ApplySnapshotChunk(ch); err != nil {
			t.Fatalf("apply %s chunk: %v", ch.Type, err)
		}
	}
	for _, table := range []string{"trips", "stops"} {
		want, _ := src.Query(table, engine.Query{})
		got, err := dst.Query(table, engine.Query{})
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %d rows from the snapshot (%v), source has %d", table, len(got), err, len(want))
		}
	}
	if row, err := dst.Get("trips", engine.Key{"trip-07"}); err == nil && row != nil {
		t.Fatalf("deleted trip came back through the snapshot: %v", row)
	}
	// The client pulls from the header's cursor afterwards.
	if ch := b.getChanges(s.header.Cursor); ch.Cursor != cursor || len(ch.ChangeSets) != 0 {
		t.Fatalf("pull after snapshot: cursor %d, %d ChangeSets", ch.Cursor, len(ch.ChangeSets))
	}

	// Resume after trips completed: only stops come, under the same id
	// and with the original cursor, even though the log moved on.
	a.apply("apply-2", insertStops(t, src, "late", 1))
	recvType[*wire.PushChanges](b)
	cp := model.SnapshotCheckpoint{SnapshotID: s.header.SnapshotID, SiteID: s.header.SiteID, HLC: s.header.HLC,
		Cursor: s.header.Cursor, CompletedTables: []string{"trips"}, RowsApplied: 30, CreatedAt: 1}
	res := collectSnapshot(t, b, &wire.ResumeSnapshot{Checkpoint: cp})
	if res.header.SnapshotID != cp.SnapshotID || res.header.Cursor != cp.Cursor {
		t.Fatalf("resumed header id %q cursor %d, want %q and %d", res.header.SnapshotID, res.header.Cursor, cp.SnapshotID, cp.Cursor)
	}
	if !slices.Equal(res.tables, []string{"stops"}) || res.rows["stops"] != 2501 {
		t.Fatalf("resumed stream tables %v rows %v, want stops only (2501 rows, read live)", res.tables, res.rows)
	}
	// The connection works normally after a stream.
	b.ping()

	// A checkpoint of another relay log is refused.
	cp.SiteID = b.site
	b.send(&wire.ResumeSnapshot{Checkpoint: cp})
	b.expectError(wire.CodeSnapshotError)
	b.ping()
}

// ackSite handshakes a throwaway connection to learn the relay's site id of
// the client's database.
func (c *client) ackSite(r *testRelay) model.SiteID {
	c.t.Helper()
	return dial(c.t, r, nil).handshake("acme", "").ServerSiteID
}

func TestSnapshotOfEmptyDatabase(t *testing.T) {
	r := startRelay(t, Config{})
	c := connect(t, r, "fresh")
	s := collectSnapshot(t, c, &wire.GetSnapshot{})
	if s.header.Cursor != 0 || len(s.tables) != 0 {
		t.Fatalf("empty database: cursor %d, tables %v", s.header.Cursor, s.tables)
	}
}
