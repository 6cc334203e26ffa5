//go:build !js

package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// behindClock is a clock a fixed offset behind another: a device whose
// deletions are stamped long ago while the relay receives them now.
type behindClock struct {
	c  *manualClock
	by time.Duration
}

func (b behindClock) Now() uint64 { return b.c.Now() - uint64(b.by.Milliseconds()) }

// deleteStop inserts a stop and deletes it, two transactions, and returns
// their ChangeSets.
func deleteStop(t *testing.T, e *engine.Engine) []model.ChangeSet {
	t.Helper()
	sets := insertStops(t, e, "gone", 1)
	pk := sets[0].Changes[0].PK
	cs, err := e.Transact(func(tx *engine.Tx) error {
		_, err := tx.Delete("stops", engine.Key{pk[0].Text()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return append(sets, *cs)
}

// marks reads the relay's stored horizon marks of database id, as sent to
// a connection of a site the log held no ChangeSet of (siteHlc the zero
// HLC, stated).
func marks(t *testing.T, r *testRelay, id string) []wire.Horizon {
	t.Helper()
	r.srv.dbMu.Lock()
	d := r.srv.dbs[id]
	r.srv.dbMu.Unlock()
	var hs []wire.Horizon
	err := d.store.View(func(tx kv.Tx) error {
		var err error
		hs, err = marksIn(tx, 0, wire.MaxCursor)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range hs {
		hs[i].SiteHLCStated = true
	}
	return hs
}

// TestHorizonMarkSiteHLC (wire version 4): each mark tells a site's
// connections the newest of that site's ChangeSets the log held when the
// mark was made, in changes replies and in push_changes, whatever the
// site pushed after it; a site without any is told the zero HLC.
func TestHorizonMarkSiteHLC(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	repA := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	repC := newReplica(t, clock)
	a := connectAs(t, r, "acme", repA)
	c := connectAs(t, r, "acme", repC)
	b := connect(t, r, "acme")
	before := append(localSets(t, repA), deleteStop(t, repA)...)
	a.apply("apply-1", before)
	recvType[*wire.PushChanges](c)
	recvType[*wire.PushChanges](b)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	head := uint64(len(before))
	a.apply("apply-2", insertStops(t, repA, "after", 1)) // after the mark
	recvType[*wire.PushChanges](c)
	recvType[*wire.PushChanges](b)

	want := before[len(before)-1].HLC
	for _, tc := range []struct {
		name string
		cl   *client
		hlc  model.HLC
	}{{"the pushing site", a, want}, {"a site without ChangeSets", b, model.HLC{}}, {"another site", c, model.HLC{}}} {
		ch := tc.cl.getChanges(0)
		if len(ch.Horizons) != 1 || ch.Horizons[0].Cursor != head || !ch.Horizons[0].SiteHLCStated || ch.Horizons[0].SiteHLC != tc.hlc {
			t.Errorf("%s: changes since 0 carry marks %+v, want one at %d with siteHlc %s", tc.name, ch.Horizons, head, tc.hlc)
		}
	}

	// A second mark after a's later push and c's first: push_changes
	// carries it with each receiver's own siteHlc.
	cSets := insertStops(t, repC, "c", 1)
	c.apply("apply-c", cSets)
	recvType[*wire.PushChanges](a)
	recvType[*wire.PushChanges](b)
	clock.Advance(time.Hour)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.apply("apply-3", insertStops(t, repA, "later", 1))
	all := localSets(t, repA)
	for _, tc := range []struct {
		name string
		cl   *client
		hlc  model.HLC
	}{{"another site, which pushed before the mark", c, cSets[len(cSets)-1].HLC}, {"a site without ChangeSets", b, model.HLC{}}} {
		p := recvType[*wire.PushChanges](tc.cl)
		if len(p.Horizons) != 1 || !p.Horizons[0].SiteHLCStated || p.Horizons[0].SiteHLC != tc.hlc {
			t.Errorf("%s: push_changes carries marks %+v, want one with siteHlc %s", tc.name, p.Horizons, tc.hlc)
		}
	}
	ch := a.getChanges(head + 2)
	if len(ch.Horizons) != 1 || ch.Horizons[0].SiteHLC != all[len(all)-2].HLC {
		t.Errorf("a's pull of the second mark: %+v, want siteHlc %s (apply-2's, not apply-3's)", ch.Horizons, all[len(all)-2].HLC)
	}
}

// TestHorizonMark: a maintenance pass past the retention period stores a
// horizon mark at the log's head (wall = now − Retention, the chain value
// at the head) and prunes the merged replica's tombstones deleted before
// it; get_changes serves the mark to a pull from at or below its cursor,
// push_changes carries it with the next ChangeSet, the snapshot header
// carries its wall, and a pass that does not move the horizon makes none.
func TestHorizonMark(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	// The device's deletions are stamped 40 days ago; the relay receives
	// them now, so the arrival log keeps them.
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	sets := localSets(t, rep)
	sets = append(sets, deleteStop(t, rep)...)
	sets = append(sets, insertStops(t, rep, "kept", 1)...)
	a.apply("apply-1", sets)
	head := uint64(len(sets))

	b := connect(t, r, "acme")
	if ch := b.getChanges(0); len(ch.Horizons) != 0 {
		t.Fatalf("marks before any maintenance: %+v", ch.Horizons)
	}
	if s := collectSnapshot(t, b, &wire.GetSnapshot{}); s.rows["stops"] != 2 || s.header.Horizon != 0 {
		t.Fatalf("before the horizon: %d stop rows (want 2: one tombstoned), header horizon %d", s.rows["stops"], s.header.Horizon)
	}

	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	cutoff := clock.Now() - uint64(engine.DefaultRetention.Milliseconds())
	hs := marks(t, r, "acme")
	ch := b.getChanges(0)
	if len(hs) != 1 || hs[0].Cursor != head || hs[0].Wall != cutoff || hs[0].Chain != ch.Chain {
		t.Fatalf("marks %+v, want one at cursor %d, wall %d, chain %s", hs, head, cutoff, ch.Chain)
	}
	if len(ch.Horizons) != 1 || ch.Horizons[0] != hs[0] || len(ch.ChangeSets) != int(head) {
		t.Fatalf("changes since 0: horizons %+v, %d ChangeSets; want the mark and %d", ch.Horizons, len(ch.ChangeSets), head)
	}
	if ch := b.getChanges(head); len(ch.Horizons) != 1 || ch.Horizons[0] != hs[0] {
		t.Fatalf("changes since the mark's cursor: horizons %+v, want the mark", ch.Horizons)
	}
	s := collectSnapshot(t, b, &wire.GetSnapshot{})
	if s.rows["stops"] != 1 || s.header.Horizon != cutoff || s.header.Cursor != head {
		t.Fatalf("after the horizon: %d stop rows (want 1: the tombstoned row pruned), header horizon %d cursor %d, want %d and %d",
			s.rows["stops"], s.header.Horizon, s.header.Cursor, cutoff, head)
	}

	// The next ChangeSet's push carries the mark (first-1 = its cursor).
	a.apply("apply-2", insertStops(t, rep, "after", 1))
	p := recvType[*wire.PushChanges](b)
	if p.Cursor != head+1 || len(p.Horizons) != 1 || p.Horizons[0] != hs[0] {
		t.Fatalf("push_changes at %d: horizons %+v, want the mark at %d", p.Cursor, p.Horizons, head)
	}
	a.apply("apply-3", insertStops(t, rep, "later", 1))
	if p := recvType[*wire.PushChanges](b); len(p.Horizons) != 0 {
		t.Fatalf("push_changes at %d carries marks %+v outside its range", p.Cursor, p.Horizons)
	}
	if ch := b.getChanges(head + 1); len(ch.Horizons) != 0 {
		t.Fatalf("changes since %d: horizons %+v, want none", head+1, ch.Horizons)
	}

	// Without time passing the horizon does not move: no new mark.
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hs2 := marks(t, r, "acme"); len(hs2) != 1 {
		t.Fatalf("marks after a pass without time passing: %+v, want the one", hs2)
	}
	clock.Advance(time.Hour)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs2 := marks(t, r, "acme")
	if len(hs2) != 2 || hs2[1].Cursor != head+2 || hs2[1].Wall != cutoff+uint64(time.Hour.Milliseconds()) {
		t.Fatalf("marks after an hour: %+v, want a second at cursor %d", hs2, head+2)
	}
	// A page ends at a mark: since 0 stops at the first, since the first
	// carries both.
	if ch := b.getChanges(0); len(ch.Horizons) != 1 || ch.Horizons[0] != hs2[0] || ch.Cursor != head || !ch.More {
		t.Fatalf("changes since 0: cursor %d more %v horizons %+v, want a page ending at the first mark %+v", ch.Cursor, ch.More, ch.Horizons, hs2[0])
	}
	if ch := b.getChanges(head); len(ch.Horizons) != 2 || ch.Horizons[0] != hs2[0] || ch.Horizons[1] != hs2[1] || ch.Cursor != head+2 || ch.More {
		t.Fatalf("changes since %d: cursor %d more %v horizons %+v, want %+v", head, ch.Cursor, ch.More, ch.Horizons, hs2)
	}
}

// TestHorizonNotDuringSnapshot: no mark is made while a snapshot of the
// database streams; the next pass makes it.
func TestHorizonNotDuringSnapshot(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", append(localSets(t, rep), deleteStop(t, rep)...))
	r.srv.dbMu.Lock()
	d := r.srv.dbs["acme"]
	r.srv.dbMu.Unlock()
	_, _, _, ended, err := d.snapshotStarted() // as a stream in progress does
	if err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hs := marks(t, r, "acme"); len(hs) != 0 {
		t.Fatalf("a mark was made while a snapshot streamed: %+v", hs)
	}
	ended()
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hs := marks(t, r, "acme"); len(hs) != 1 {
		t.Fatalf("after the stream: marks %+v, want one", hs)
	}
}

// TestHorizonPruneAtOpen: a crash between storing a mark and pruning at it
// (simulated by storing a mark and "horizonPending" in the file of a
// stopped relay) is finished when the database opens: the tombstones
// before the mark's wall are gone before anything is served. A mark whose
// pruning completed (no "horizonPending") is not pruned at again: the
// relay may since have applied late deletes before its wall, whose
// tombstones its clients, having applied the mark before them, keep
// (before, every open pruned at the newest mark and dropped them on the
// relay alone).
func TestHorizonPruneAtOpen(t *testing.T) {
	needFiles(t)
	clock := newManualClock()
	dir := t.TempDir()
	r := startRelay(t, Config{Clock: clock, DataDir: dir})
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	sets := append(localSets(t, rep), deleteStop(t, rep)...)
	a.apply("apply-1", sets)
	head := uint64(len(sets))
	b := connect(t, r, "acme")
	chain := b.getChanges(0).Chain
	if s := collectSnapshot(t, b, &wire.GetSnapshot{}); s.rows["stops"] != 1 {
		t.Fatalf("before: %d stop rows, want the tombstoned one", s.rows["stops"])
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	wall := clock.Now() - uint64(engine.DefaultRetention.Milliseconds())
	write := func(f func(tx kv.Tx) error) {
		t.Helper()
		st, err := boltkv.Open(dbPath(dir, "acme"), storeBuckets, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Update(f); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(func(tx kv.Tx) error {
		return tx.Put(bucketHorizons, cursorKey(head), encodeMark(wire.Horizon{Cursor: head, Wall: wall, Chain: chain}))
	})
	r2 := startRelay(t, Config{Clock: clock, DataDir: dir})
	c := connect(t, r2, "acme")
	if s := collectSnapshot(t, c, &wire.GetSnapshot{}); s.rows["stops"] != 1 || s.header.Horizon != wall {
		t.Fatalf("reopened after a completed mark: %d stop rows (want 1: not pruned again), header horizon %d, want %d", s.rows["stops"], s.header.Horizon, wall)
	}
	if err := r2.stop(); err != nil {
		t.Fatal(err)
	}

	write(func(tx kv.Tx) error {
		return tx.Put(bucketRelay, keyHorizonPending, binary.BigEndian.AppendUint64(nil, wall))
	})
	r3 := startRelay(t, Config{Clock: clock, DataDir: dir})
	c = connect(t, r3, "acme")
	s := collectSnapshot(t, c, &wire.GetSnapshot{})
	if s.rows["stops"] != 0 || s.header.Horizon != wall {
		t.Fatalf("after reopening with the pruning pending: %d stop rows (want 0: pruned at open), header horizon %d, want %d", s.rows["stops"], s.header.Horizon, wall)
	}
	if ch := c.getChanges(0); len(ch.Horizons) != 1 || ch.Horizons[0].Wall != wall {
		t.Fatalf("changes after reopening: horizons %+v", ch.Horizons)
	}
	if err := r3.stop(); err != nil {
		t.Fatal(err)
	}
	st, err := boltkv.Open(dbPath(dir, "acme"), storeBuckets, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_ = st.View(func(tx kv.Tx) error {
		if _, err := tx.Get(bucketRelay, keyHorizonPending); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("horizonPending after the pruning at open: %v, want not found", err)
		}
		return nil
	})
}

// TestHorizonMarksRetained: marks below the arrival log's compaction point
// go with the arrivals; the newest stays.
func TestHorizonMarksRetained(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	first := append(localSets(t, rep), deleteStop(t, rep)...)
	a.apply("apply-1", first)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.apply("apply-2", insertStops(t, rep, "x", 2))
	head := uint64(len(first) + 2)
	if hs := marks(t, r, "acme"); len(hs) != 1 || hs[0].Cursor != uint64(len(first)) {
		t.Fatalf("first mark: %+v", hs)
	}
	// Past the retention period every arrival is pruned; the pass makes a
	// mark at the head first.
	clock.Advance(engine.DefaultRetention + time.Hour)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := marks(t, r, "acme")
	if len(hs) != 1 || hs[0].Cursor != head {
		t.Fatalf("after the log was pruned to %d: marks %+v, want only the newest at %d", head, hs, head)
	}
	b := connect(t, r, "acme")
	if ch := b.getChanges(head); len(ch.Horizons) != 1 || ch.Horizons[0] != hs[0] {
		t.Fatalf("changes since the compaction point: horizons %+v, want %+v", ch.Horizons, hs)
	}
}

// TestHorizonResumeAfterMark: a resume whose checkpoint's cursor is not
// below the newest mark's is served as a new snapshot (the mark may have
// been made after the interrupted stream read its data); one older than
// every mark resumes.
func TestHorizonResumeAfterMark(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	a.apply("apply-1", append(localSets(t, rep), deleteStop(t, rep)...))
	b := connect(t, r, "acme")
	h := collectSnapshot(t, b, &wire.GetSnapshot{}).header
	cp := model.SnapshotCheckpoint{SnapshotID: h.SnapshotID, SiteID: h.SiteID, HLC: h.HLC, Cursor: h.Cursor}
	if got := collectSnapshot(t, b, &wire.ResumeSnapshot{Checkpoint: cp}).header; got.SnapshotID != h.SnapshotID {
		t.Fatalf("resume before any mark: snapshot %q, want %q resumed", got.SnapshotID, h.SnapshotID)
	}
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := collectSnapshot(t, b, &wire.ResumeSnapshot{Checkpoint: cp})
	if got.header.SnapshotID == h.SnapshotID || got.header.Horizon == 0 || got.rows["stops"] != 0 {
		t.Fatalf("resume after a mark at its cursor: snapshot %q (was %q), horizon %d, %d stop rows; want a new snapshot with the horizon and the pruned row gone",
			got.header.SnapshotID, h.SnapshotID, got.header.Horizon, got.rows["stops"])
	}
	// A checkpoint taken after the mark resumes.
	a.apply("apply-2", insertStops(t, rep, "new", 1))
	recvType[*wire.PushChanges](b)
	h2 := collectSnapshot(t, b, &wire.GetSnapshot{}).header
	cp2 := model.SnapshotCheckpoint{SnapshotID: h2.SnapshotID, SiteID: h2.SiteID, HLC: h2.HLC, Cursor: h2.Cursor}
	if got := collectSnapshot(t, b, &wire.ResumeSnapshot{Checkpoint: cp2}).header; got.SnapshotID != h2.SnapshotID || got.Horizon != h2.Horizon || h2.Horizon == 0 {
		t.Fatalf("resume after the mark: snapshot %q horizon %d, want %q resumed with horizon %d", got.SnapshotID, got.Horizon, h2.SnapshotID, h2.Horizon)
	}
}

// TestOwnChangeSetsAskedBack: get_changes with ownAbove and ownUpTo
// (version 5, wire's "Own ChangeSets after a mark") gets the requester's
// own ChangeSets whose hlc lies in that range, in their place in the log,
// with the others' as always; without them, none of its own.
func TestOwnChangeSetsAskedBack(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	repA := newReplica(t, clock)
	repC := newReplica(t, clock)
	a := connectAs(t, r, "acme", repA)
	c := connectAs(t, r, "acme", repC)
	mine := insertStops(t, repA, "a", 4) // four transactions
	a.apply("apply-1", mine[:1])
	recvType[*wire.PushChanges](c)
	theirs := insertStops(t, repC, "c", 1)
	c.apply("apply-c", theirs)
	recvType[*wire.PushChanges](a)
	a.apply("apply-2", mine[1:])
	recvType[*wire.PushChanges](c)

	names := func(ch *wire.Changes) []string {
		var out []string
		for _, cs := range ch.ChangeSets {
			out = append(out, cs.TransactionID)
		}
		return out
	}
	ch := a.getChanges(0)
	if got := names(ch); !slices.Equal(got, []string{theirs[0].TransactionID}) || ch.Cursor != 5 {
		t.Errorf("a's changes since 0 without a range: %v at cursor %d, want c's alone at 5", got, ch.Cursor)
	}
	a.send(&wire.GetChanges{OwnAbove: mine[0].HLC, OwnUpTo: mine[2].HLC, OwnStated: true})
	ch = recvType[*wire.Changes](a)
	want := []string{theirs[0].TransactionID, mine[1].TransactionID, mine[2].TransactionID}
	if got := names(ch); !slices.Equal(got, want) || ch.Cursor != 5 {
		t.Errorf("a's changes since 0 asking back (%s, %s]: %v at cursor %d, want %v at 5", mine[0].HLC, mine[2].HLC, got, ch.Cursor, want)
	}
	a.send(&wire.GetChanges{Since: 3, OwnUpTo: mine[3].HLC, OwnStated: true})
	ch = recvType[*wire.Changes](a)
	want = []string{mine[2].TransactionID, mine[3].TransactionID}
	if got := names(ch); !slices.Equal(got, want) {
		t.Errorf("a's changes since 3 asking back (zero, %s]: %v, want %v", mine[3].HLC, got, want)
	}
}

// TestHandshakeHorizonVerdict (wire version 8): a handshake presents the
// tombstone horizon its client applied with its position; the relay
// answers "diverged" when the newest mark it holds at or below the cursor
// has a lower wall (or there is none): a restored copy lost a mark the
// client applied, which the chain value at the cursor does not show. The
// newest mark below the arrival log's compaction point is kept for a
// client at a cursor with no retained mark at or below it; below the
// compaction point there is no verdict (SNAPSHOT_REQUIRED follows).
func TestHandshakeHorizonVerdict(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	sets := append(localSets(t, rep), deleteStop(t, rep)...)
	a.apply("apply-1", sets)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := uint64(len(sets))
	hs := marks(t, r, "acme")
	if len(hs) != 1 || hs[0].Cursor != n {
		t.Fatalf("first mark: %+v", hs)
	}
	w1 := hs[0].Wall
	more := insertStops(t, rep, "x", 2) // cursors n+1, n+2: pruned below
	a.apply("apply-2", more)
	sets = append(sets, more...)
	clock.Advance(engine.DefaultRetention + time.Hour)
	recent := insertStops(t, rep, "y", 2) // n+3, n+4: kept
	a.apply("apply-3", recent)
	sets = append(sets, recent...)
	chain := chainOf(sets)
	server := a.ack.ServerSiteID

	check := func(name string, cursor, horizon uint64, want wire.History) {
		t.Helper()
		c := dial(t, r, nil)
		c.site = rep.SiteID()
		c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "acme", SiteID: c.site,
			Log: server, Cursor: cursor, Chain: chain[cursor], Horizon: horizon})
		if ack := recvType[*wire.HandshakeAck](c); ack.History != want {
			t.Errorf("%s (cursor %d, horizon %d): history %q, want %q", name, cursor, horizon, ack.History, want)
		}
	}
	check("the mark applied", n, w1, wire.HistoryContinues)
	check("no horizon", n, 0, wire.HistoryContinues)
	check("a lost mark at the cursor", n, w1+1, wire.HistoryDiverged)
	check("no mark at or below the cursor", n-1, w1, wire.HistoryDiverged)
	check("the mark below the cursor", n+2, w1, wire.HistoryContinues)

	// The pass makes a mark at the head and prunes the arrivals up to
	// n+2: the mark at n stays, the newest below the compaction point.
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs = marks(t, r, "acme")
	if len(hs) != 2 || hs[0].Cursor != n || hs[1].Cursor != n+4 {
		t.Fatalf("after pruning the arrivals to %d: marks %+v, want at %d and %d", n+2, hs, n, n+4)
	}
	w2 := hs[1].Wall
	check("at the compaction point", n+2, w1, wire.HistoryContinues)
	check("at the compaction point, a lost mark", n+2, w1+1, wire.HistoryDiverged)
	check("at n+3", n+3, w1, wire.HistoryContinues)
	check("at the head", n+4, w2, wire.HistoryContinues)
	check("at the head, a lost mark", n+4, w2+1, wire.HistoryDiverged)
	check("below the compaction point", n+1, w2+1, "")
}
