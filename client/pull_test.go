//go:build !js

package client

import (
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// peerSets returns n ChangeSets of another replica, one insert each.
func peerSets(t *testing.T, n int, prefix string) []model.ChangeSet {
	t.Helper()
	other, _ := newEngine(t)
	for i := range n {
		insert(t, other, prefix+string(rune('a'+i)), prefix)
	}
	return dataSets(t, other)
}

func has(t *testing.T, db *engine.Engine, id string) bool {
	t.Helper()
	_, ok := getTitle(t, db, id)
	return ok
}

// TestPushChangesCursor: a push_changes that continues the cursor is
// applied and moves it, atomically; one with a gap is not applied (a
// tombstone horizon mark may lie in the gap: its ChangeSets must follow
// the mark's pruning), leaves the cursor, and the gap is pulled; one
// already covered is ignored.
func TestPushChangesCursor(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	sets := peerSets(t, 6, "p")

	// 6: next after 5.
	p.send(t, &wire.PushChanges{Cursor: 6, ChangeSets: sets[0:1]})
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("contiguous push answered with %v", got)
	}
	if !has(t, db, "pa") || stateOf(t, db, cursorKey(testNS)) != "6" {
		t.Fatalf("after push 6: row %v, cursor %q", has(t, db, "pa"), stateOf(t, db, cursorKey(testNS)))
	}
	// 7..8 overlapping the cursor (6..8 would be 3 sets; 2 sets end at 8
	// start at 7): continues it.
	p.send(t, &wire.PushChanges{Cursor: 8, ChangeSets: sets[1:3]})
	p.barrier(t)
	if stateOf(t, db, cursorKey(testNS)) != "8" {
		t.Fatalf("cursor %q after 7..8", stateOf(t, db, cursorKey(testNS)))
	}
	// Already covered: ignored.
	p.send(t, &wire.PushChanges{Cursor: 8, ChangeSets: sets[1:3]})
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("covered push answered with %v", got)
	}
	// 11 alone: 9 and 10 are missing (another client's, or this one's
	// own push). Not applied, cursor kept, gap pulled from 8.
	p.send(t, &wire.PushChanges{Cursor: 11, ChangeSets: sets[5:6]})
	g := expect[*wire.GetChanges](t, p)
	if g.Since != 8 {
		t.Fatalf("gap pulled since %d, want 8", g.Since)
	}
	if has(t, db, "pf") || stateOf(t, db, cursorKey(testNS)) != "8" {
		t.Fatalf("gap push: row %v, cursor %q", has(t, db, "pf"), stateOf(t, db, cursorKey(testNS)))
	}
	// A push arriving while the pull is in flight does not start another.
	p.send(t, &wire.PushChanges{Cursor: 13, ChangeSets: sets[0:1]})
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("second pull while one is in flight: %v", got)
	}
	p.send(t, &wire.Changes{Cursor: 11, ChangeSets: sets[3:6]})
	// The reply reached 11, but 13 was seen: pull again.
	if g := expect[*wire.GetChanges](t, p); g.Since != 11 {
		t.Fatalf("second pull since %d", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 13, ChangeSets: sets[0:1]})
	p.barrier(t)
	if stateOf(t, db, cursorKey(testNS)) != "13" || !has(t, db, "pd") || !has(t, db, "pe") {
		t.Fatalf("after the pulls: cursor %q", stateOf(t, db, cursorKey(testNS)))
	}
}

// TestInOrder: frames are handled one at a time in arrival order: twenty
// consecutive push_changes sent back to back each continue the cursor, so
// none looks like a gap.
func TestInOrder(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 100)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	sets := peerSets(t, 20, "q")
	for i := range sets {
		p.send(t, &wire.PushChanges{Cursor: 101 + uint64(i), ChangeSets: sets[i : i+1]})
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("in-order pushes answered with %v", got)
	}
	if got := stateOf(t, db, cursorKey(testNS)); got != "120" {
		t.Fatalf("cursor %q, want 120", got)
	}
}

// TestPullPaging: the client pulls until more is false, persisting each
// page's cursor with its ChangeSets, and only then is Synced and pushes.
func TestPullPaging(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	sets := peerSets(t, 6, "r")
	if g := expect[*wire.GetChanges](t, p); g.Since != 0 {
		t.Fatalf("first pull since %d", g.Since)
	}
	for page := range 3 {
		cursor := uint64(page*2 + 2)
		p.send(t, &wire.Changes{Cursor: cursor, More: page < 2, ChangeSets: sets[page*2 : page*2+2]})
		if page == 2 {
			break
		}
		// The next get_changes shows the page was handled.
		if g := expect[*wire.GetChanges](t, p); g.Since != cursor {
			t.Fatalf("page %d: next pull since %d, want %d", page, g.Since, cursor)
		}
		if st := c.State().State; st != Syncing {
			t.Fatalf("state %s with more to pull", st)
		}
		if got := stateOf(t, db, cursorKey(testNS)); got != string(encodeCursor(cursor)) {
			t.Fatalf("cursor %q after page %d", got, page)
		}
	}
	ev.waitState(t, Synced)
	expect[*wire.ApplyChanges](t, p)
	for i := range 6 {
		if !has(t, db, "r"+string(rune('a'+i))) {
			t.Fatalf("row %d missing", i)
		}
	}
	if got := stateOf(t, db, cursorKey(testNS)); got != "6" {
		t.Fatalf("cursor %q", got)
	}
}

// TestSnapshotRequired: a cursor the relay cannot serve makes the client
// bootstrap from a snapshot (its own data stays), then pull from the
// snapshot's cursor.
func TestSnapshotRequired(t *testing.T) {
	relay := newScriptRelay(t)
	src, _ := newEngine(t)
	insert(t, src, "remote", "r")
	db, _ := newEngine(t)
	insert(t, db, "mine", "m")
	db.SetState(cursorKey(testNS), encodeCursor(3))
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	if g := expect[*wire.GetChanges](t, p); g.Since != 3 {
		t.Fatalf("since %d", g.Since)
	}
	p.send(t, wire.NewError(wire.CodeSnapshotRequired, "log compacted"))
	expect[*wire.GetSnapshot](t, p)
	p.streamSnapshot(t, src, 40)
	if g := expect[*wire.GetChanges](t, p); g.Since != 40 {
		t.Fatalf("since %d after the snapshot", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 40})
	ev.waitState(t, Synced)
	if !has(t, db, "remote") || !has(t, db, "mine") {
		t.Fatal("snapshot lost data")
	}
	a := expect[*wire.ApplyChanges](t, p)
	if len(a.ChangeSets) != 2 {
		t.Fatalf("pushed %d sets after the snapshot", len(a.ChangeSets))
	}
}

// TestRequestSnapshot: with its own cursor the replica pulls first; calls
// while the pull or the transfer is in flight join it; exactly one
// get_snapshot goes on the wire. Pushes are held and
// push_changes dropped while it lands; both resume after the catch-up.
func TestRequestSnapshot(t *testing.T) {
	relay := newScriptRelay(t)
	src, _ := newEngine(t)
	insert(t, src, "remote", "r")
	db, _ := newEngine(t)
	insert(t, db, "mine", "m")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 2)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })

	c.RequestSnapshot()
	// With its own cursor the replica pulls first (a cursor past the
	// horizon would be answered SNAPSHOT_REQUIRED), then asks for the
	// snapshot once caught up.
	if g := expect[*wire.GetChanges](t, p); g.Since != 2 {
		t.Fatalf("pull before the snapshot since %d", g.Since)
	}
	c.RequestSnapshot() // joins: the pull is in flight
	p.send(t, &wire.Changes{Cursor: 2})
	expect[*wire.GetSnapshot](t, p)
	c.RequestSnapshot()
	c.RequestSnapshot()
	insert(t, db, "during", "x") // held
	late := peerSets(t, 1, "late")
	p.send(t, &wire.PushChanges{Cursor: 3, ChangeSets: late}) // dropped
	chunks := snapshotChunks(t, src, engine.SnapshotOptions{Cursor: 2})
	for _, ch := range chunks[:2] {
		p.send(t, &wire.SnapshotChunk{Chunk: ch})
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("sent while the snapshot lands: %v", got)
	}
	if has(t, db, "latea") || stateOf(t, db, cursorKey(testNS)) != "2" {
		t.Fatal("push_changes applied during the snapshot")
	}
	if st := c.State(); st.State != Syncing || st.Snapshot == nil {
		t.Fatalf("status during the snapshot %+v", st)
	}
	for _, ch := range chunks[2:] {
		p.send(t, &wire.SnapshotChunk{Chunk: ch})
	}
	p.send(t, &wire.SnapshotComplete{})
	if g := expect[*wire.GetChanges](t, p); g.Since != 2 {
		t.Fatalf("catch-up since %d", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 3, ChangeSets: late})
	a := expect[*wire.ApplyChanges](t, p)
	if len(a.ChangeSets) != 1 || a.ChangeSets[0].Changes[0].PK[0].Text() != "during" {
		t.Fatalf("push after the snapshot %+v", a)
	}
	if got := p.barrier(t); len(got) != 0 {
		t.Fatalf("a second snapshot request reached the wire: %v", got)
	}
	if !has(t, db, "remote") || !has(t, db, "latea") {
		t.Fatal("data missing after snapshot and catch-up")
	}
	if st := c.State(); st.State != Synced || st.Snapshot != nil {
		t.Fatalf("status %+v", st)
	}
}

// TestSnapshotStallResumes: a transfer that receives no chunk for 60 s is
// closed; the reconnect resumes it from the engine's checkpoint
// (resume_snapshot), and the replica ends identical to the source.
func TestSnapshotStallResumes(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	src, srcStore := newEngine(t)
	for i := range 30 {
		insert(t, src, string(rune('a'+i)), "s")
	}
	// A second table, so the resume has a finished table to skip.
	schema2 := notesSchema()
	schema2.Tables = append(schema2.Tables, model.TableDef{Name: "tags", Columns: []model.ColumnDef{{Name: "id", Type: model.KindText}, {Name: "name", Type: model.KindText}}})
	src2, err := engine.Open(srcStore, engine.Options{Schema: schema2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := src2.Insert("tags", map[string]any{"id": string(rune('a' + i)), "name": "t"}); err != nil {
			t.Fatal(err)
		}
	}
	db, dbStore := newEngine(t)
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	expect[*wire.GetSnapshot](t, p)
	chunks := snapshotChunks(t, src2, engine.SnapshotOptions{Cursor: 9, ChunkRows: 7})
	// header, schema, table notes: start, rows…, end; then tags: start, rows.
	cut := 0
	for i, ch := range chunks {
		if ch.Type == model.ChunkTableStart && ch.Table == "tags" {
			cut = i + 2
			break
		}
	}
	for _, ch := range chunks[:cut] {
		p.send(t, &wire.SnapshotChunk{Chunk: ch})
	}
	p.barrier(t)
	clk.waitTimer(t, DefaultSnapshotStallTimeout)
	clk.Advance(DefaultSnapshotStallTimeout - time.Millisecond)
	if got := p.barrier(t); len(got) != 0 { // still open
		t.Fatalf("unexpected %v", got)
	}
	clk.Advance(time.Millisecond)
	p.waitClosed(t)
	e := ev.wait(t, "the stall", func(e Event) bool { return e.Type == StateChanged && e.Status.State == Disconnected })
	if !isErr(e.Status.Err, ErrSnapshotStalled) {
		t.Fatalf("ended with %v", e.Status.Err)
	}
	// One failed transfer: the delay is 2 s, not 1.
	clk.waitTimer(t, 2*time.Second)
	clk.Advance(2 * time.Second)
	p = relay.accept(t)
	p.ack(t)
	r := expect[*wire.ResumeSnapshot](t, p)
	hdr := chunks[0].Header
	if r.Checkpoint.SnapshotID != hdr.SnapshotID || r.Checkpoint.Cursor != 9 || len(r.Checkpoint.CompletedTables) != 1 || r.Checkpoint.CompletedTables[0] != "notes" {
		t.Fatalf("resume checkpoint %+v", r.Checkpoint)
	}
	resumed := snapshotChunks(t, src2, engine.SnapshotOptions{Cursor: 12, ChunkRows: 7, Resume: &r.Checkpoint})
	if h := resumed[0].Header; len(h.Tables) != 1 || h.Tables[0] != "tags" {
		t.Fatalf("resumed stream carries %v", h.Tables)
	}
	for _, ch := range resumed {
		p.send(t, &wire.SnapshotChunk{Chunk: ch})
	}
	p.send(t, &wire.SnapshotComplete{})
	if g := expect[*wire.GetChanges](t, p); g.Since != 9 {
		t.Fatalf("pull after the resumed snapshot since %d, want the original 9", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 9})
	ev.waitState(t, Synced)
	if cp, _ := db.SnapshotCheckpoint(); cp != nil {
		t.Fatalf("checkpoint left: %+v", cp)
	}
	sameData(t, srcStore, dbStore)
}

// TestResumeRefusedBootstrapsAfresh: a snapshot checkpoint the relay cannot
// resume (SNAPSHOT_ERROR: it comes from another relay log, after the relay
// was wiped) is discarded and a get_snapshot follows in the same session.
// Before, the session ended and every reconnect resumed the same checkpoint:
// the device was locked out for good (found by the simulator, seed 13).
func TestResumeRefusedBootstrapsAfresh(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	src, srcStore, db, dbStore := interruptedBootstrap(t)
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	expect[*wire.ResumeSnapshot](t, p)
	p.send(t, &wire.Error{Code: wire.CodeSnapshotError, Message: "the checkpoint comes from another relay log: discard it and send get_snapshot"})
	expect[*wire.GetSnapshot](t, p)
	if cp, _ := db.SnapshotCheckpoint(); cp != nil {
		t.Fatalf("checkpoint kept: %+v", cp)
	}
	for _, ch := range snapshotChunks(t, src, engine.SnapshotOptions{Cursor: 7, ChunkRows: 3}) {
		p.send(t, &wire.SnapshotChunk{Chunk: ch})
	}
	p.send(t, &wire.SnapshotComplete{})
	if g := expect[*wire.GetChanges](t, p); g.Since != 7 {
		t.Fatalf("pull after the fresh snapshot since %d, want 7", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 7})
	ev.waitState(t, Synced)
	sameData(t, srcStore, dbStore)
}

// TestResumeTransientErrorKeepsCheckpoint: a SNAPSHOT_ERROR answering the
// resume of a checkpoint of this relay log (its site is the handshake's
// server site id: a storage failure on the relay, "resume later") is
// transient: the checkpoint is kept and resumed at the next connection,
// not discarded for a whole new transfer. (Found by review: the fix for
// a checkpoint of another relay log discarded every checkpoint.)
func TestResumeTransientErrorKeepsCheckpoint(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	src, _, db, _ := interruptedBootstrap(t)
	c := newClient(t, db, quietOptions(clk))
	c.Connect(relay.url, "db1", "")
	ackAs := func(p *peer) {
		h := expect[*wire.Handshake](t, p)
		p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: h.DatabaseID, ServerSiteID: src.SiteID(), ConnectionID: "c-test"})
	}
	p := relay.accept(t)
	ackAs(p)
	expect[*wire.ResumeSnapshot](t, p)
	p.send(t, &wire.Error{Code: wire.CodeSnapshotError, Message: "snapshot failed on the relay after 0 chunks: resume later"})
	p.waitClosed(t)
	if cp, _ := db.SnapshotCheckpoint(); cp == nil {
		t.Fatal("the checkpoint was discarded after a transient SNAPSHOT_ERROR")
	}
	// The reconnect comes after the backoff (a failed transfer: seconds).
	p = nil
	for i := 0; p == nil; i++ {
		if i == 300 {
			t.Fatal("no reconnect within 300 s of backoff")
		}
		clk.Advance(time.Second)
		select {
		case p = <-relay.conns:
		case <-time.After(20 * time.Millisecond):
		}
	}
	ackAs(p)
	if r := expect[*wire.ResumeSnapshot](t, p); r.Checkpoint.SiteID != src.SiteID() {
		t.Fatalf("resumed checkpoint of site %v, want %v", r.Checkpoint.SiteID, src.SiteID())
	}
}

// interruptedBootstrap returns a source replica of 10 notes and a replica
// that applied the first three chunks of its snapshot (header, schema, table
// start), so it holds a checkpoint to resume, with their stores.
func interruptedBootstrap(t *testing.T) (src *engine.Engine, srcStore kv.Store, db *engine.Engine, dbStore kv.Store) {
	t.Helper()
	src, srcStore = newEngine(t)
	for i := range 10 {
		insert(t, src, string(rune('a'+i)), "s")
	}
	db, dbStore = newEngine(t)
	old := snapshotChunks(t, src, engine.SnapshotOptions{Cursor: 4, ChunkRows: 3})
	for _, ch := range old[:3] { // header, schema, table start: a checkpoint
		if _, err := db.ApplySnapshotChunk(ch); err != nil {
			t.Fatal(err)
		}
	}
	if cp, _ := db.SnapshotCheckpoint(); cp == nil {
		t.Fatal("no checkpoint to resume")
	}
	return src, srcStore, db, dbStore
}

// TestSnapshotPastUnappliedHorizonReplaces (the simulator's seed 96): a
// snapshot read under a tombstone horizon this replica never applied
// replaces the local rows it lacks, even one that started merging (here a
// RequestSnapshot without a cursor of its own): the relay pruned the
// tombstones of rows deleted before that horizon, so a merge would keep
// them on this replica for good. Its unsent own writes stay. Under a
// horizon it applied (none here: 0), the snapshot merges.
func TestSnapshotPastUnappliedHorizonReplaces(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cursor   bool // this replica holds its own cursor in the log
		horizon  uint64
		keepGone bool
	}{
		{"own cursor, no horizon", true, 0, true},
		{"own cursor, a horizon never applied", true, 1764374500000, false},
		// Without a position of its own its rows came from no log the
		// relay pruned: it merges (the relay may have lost them).
		{"no cursor, a horizon", false, 1764374500000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relay := newScriptRelay(t)
			src, _ := newEngine(t)
			insert(t, src, "remote", "r")
			db, _ := newEngine(t)
			// "gone" reached this replica from another, and was deleted
			// and pruned on the relay since.
			if _, err := db.ApplyChanges(peerSets(t, 1, "gone")); err != nil {
				t.Fatal(err)
			}
			insert(t, db, "mine", "m")
			if tc.cursor {
				db.SetState(cursorKey(testNS), encodeCursor(3))
			}
			c := newClient(t, db, Options{})
			ev := recordEvents(t, c)
			c.RequestSnapshot()
			c.Connect(relay.url, "db1", "")
			p := relay.accept(t)
			p.ack(t)
			if tc.cursor {
				// RequestSnapshot with its own cursor pulls first.
				if g := expect[*wire.GetChanges](t, p); g.Since != 3 {
					t.Fatalf("pull since %d", g.Since)
				}
				p.send(t, &wire.Changes{Cursor: 3})
			}
			expect[*wire.GetSnapshot](t, p)
			p.sendSnapshot(t, withHorizon(snapshotChunks(t, src, engine.SnapshotOptions{Cursor: 5}), tc.horizon))
			if g := expect[*wire.GetChanges](t, p); g.Since != 5 {
				t.Fatalf("since %d after the snapshot", g.Since)
			}
			p.send(t, &wire.Changes{Cursor: 5})
			ev.waitState(t, Synced)
			if !has(t, db, "remote") || !has(t, db, "mine") {
				t.Fatal("the snapshot lost the relay's row or the unsent own one")
			}
			if got := has(t, db, "gonea"); got != tc.keepGone {
				t.Errorf("the row the relay deleted and pruned: held %v, want %v", got, tc.keepGone)
			}
		})
	}
}
