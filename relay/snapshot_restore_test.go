//go:build !js

package relay

import (
	"os"
	"slices"
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/internal/testdir"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestResumeAfterRestore: a snapshot checkpoint taken from a relay log that
// was then restored from an older copy (same server site id) and appended
// other entries up to and past the checkpoint's cursor is not resumed: the
// relay streams a fresh snapshot (another snapshot id, its current cursor,
// every table). Resuming would have the client pull from the checkpoint's
// cursor and skip, for good, the entries the restored log appended below
// it (seed 100765 of internal/sim: a device missed another device's
// re-pushed upsert that way).
func TestResumeAfterRestore(t *testing.T) {
	needFiles(t)
	dir, backup := t.TempDir(), t.TempDir()
	r := startRelay(t, Config{DataDir: dir})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", localSets(t, rep)) // cursor 1: the schema
	a.readAll()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	testdir.Copy(t, dir, backup)

	// The log moves on to cursor 3, and a device takes a snapshot there
	// whose transfer is interrupted after its last table.
	r = startRelay(t, Config{DataDir: dir})
	a = connectAs(t, r, "acme", rep)
	a.apply("apply-2", insertStops(t, rep, "lost", 2))
	b := connect(t, r, "acme")
	s := collectSnapshot(t, b, &wire.GetSnapshot{})
	if s.header.Cursor != 3 {
		t.Fatalf("snapshot cursor %d, want 3", s.header.Cursor)
	}
	cp := model.SnapshotCheckpoint{SnapshotID: s.header.SnapshotID, SiteID: s.header.SiteID, HLC: s.header.HLC,
		Cursor: s.header.Cursor, CompletedTables: s.tables, RowsApplied: 2, CreatedAt: 1}
	// On the intact log the checkpoint resumes: nothing left to stream.
	if res := collectSnapshot(t, b, &wire.ResumeSnapshot{Checkpoint: cp}); res.header.SnapshotID != cp.SnapshotID || res.header.Cursor != 3 || len(res.tables) != 0 {
		t.Fatalf("resume on the intact log: id %q cursor %d tables %v, want %q, 3, none", res.header.SnapshotID, res.header.Cursor, res.tables, cp.SnapshotID)
	} else if s.complete.Cursor != 3 || s.complete.Chain.IsZero() || *res.complete != *s.complete {
		// snapshot_complete states the chain value at the cursor the
		// client pulls from (wire version 10), resumed or not.
		t.Fatalf("snapshot_complete: %+v, resumed %+v, want cursor 3 and the same chain value", *s.complete, *res.complete)
	}
	for _, c := range []*client{a, b} {
		c.readAll()
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	// Restored from the backup (cursor 1, same server site id); another
	// device pushes two transactions: cursors 2 and 3 again, other entries.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	testdir.Copy(t, backup, dir)
	r = startRelay(t, Config{DataDir: dir})
	other := newReplica(t, nil)
	o := connectAs(t, r, "acme", other)
	if o.ack.ServerSiteID != s.header.SiteID {
		t.Fatalf("restored relay's site %s, want the backup's %s", o.ack.ServerSiteID, s.header.SiteID)
	}
	o.apply("apply-1", insertStops(t, other, "kept", 2))

	c := connect(t, r, "acme")
	res := collectSnapshot(t, c, &wire.ResumeSnapshot{Checkpoint: cp})
	if res.header.SnapshotID == cp.SnapshotID || res.header.Cursor != 3 || !slices.Equal(res.tables, s.tables) {
		t.Fatalf("resume on the restored log: id %q cursor %d tables %v, want a fresh snapshot (not %q) at cursor 3 of tables %v",
			res.header.SnapshotID, res.header.Cursor, res.tables, cp.SnapshotID, s.tables)
	}
	if res.complete.Cursor != 3 || res.complete.Chain.IsZero() || res.complete.Chain == s.complete.Chain {
		t.Fatalf("the fresh snapshot's snapshot_complete: %+v, want cursor 3 with the restored log's chain value (not %s)", *res.complete, s.complete.Chain)
	}
	dst := newReplica(t, nil)
	for _, ch := range res.chunks {
		if _, err := dst.ApplySnapshotChunk(ch); err != nil {
			t.Fatalf("apply %s chunk: %v", ch.Type, err)
		}
	}
	if n, err := dst.Count("stops", []engine.Filter{{Column: "trip", Op: engine.Eq, Value: "kept"}}); err != nil || n != 2 {
		t.Fatalf("the restored log's stops in the fresh snapshot: %d (%v), want 2", n, err)
	}
	// A fresh snapshot resumes as usual.
	cp2 := model.SnapshotCheckpoint{SnapshotID: res.header.SnapshotID, SiteID: res.header.SiteID, HLC: res.header.HLC,
		Cursor: res.header.Cursor, CompletedTables: res.tables[:1], CreatedAt: 1}
	if again := collectSnapshot(t, c, &wire.ResumeSnapshot{Checkpoint: cp2}); again.header.SnapshotID != cp2.SnapshotID || !slices.Equal(again.tables, res.tables[1:]) {
		t.Fatalf("resume of the fresh snapshot: id %q tables %v, want %q and %v", again.header.SnapshotID, again.tables, cp2.SnapshotID, res.tables[1:])
	}
	// A checkpoint whose id binds no log position (taken from a relay
	// before binding) cannot be judged: a fresh snapshot too.
	cp3 := cp2
	cp3.SnapshotID = "0123456789abcdef01234567"
	if fresh := collectSnapshot(t, c, &wire.ResumeSnapshot{Checkpoint: cp3}); fresh.header.SnapshotID == cp3.SnapshotID || !slices.Equal(fresh.tables, s.tables) {
		t.Fatalf("resume of an unbound id: id %q tables %v, want a fresh snapshot of %v", fresh.header.SnapshotID, fresh.tables, s.tables)
	}
}
