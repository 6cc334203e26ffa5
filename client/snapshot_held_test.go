//go:build !js

package client

import (
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestReplaceDropsOwnFactsTheRelayHeld (review): a replacing snapshot keeps
// this replica's own facts the relay did not hold, not those above the
// sent watermark. "gone" was pushed and appended by the relay (the
// handshake_ack's siteHlc covers it), but the ack was lost; another
// replica deleted it (delete-wins) and the relay pruned it at a mark.
// The replacing snapshot lacks it; kept here, it is pushed again, the
// relay re-merges the resend into its replica without appending it (a
// duplicate), and the replicas that pruned it at the mark never see it
// again: this device and the relay hold a row every other replica lacks.
func TestReplaceDropsOwnFactsTheRelayHeld(t *testing.T) {
	relay := newScriptRelay(t)
	src, _ := newEngine(t)
	insert(t, src, "remote", "r")
	db, _ := newEngine(t)
	insert(t, db, "gone", "g")
	sets := ownSets(t, db, model.HLC{})
	held := sets[len(sets)-1].HLC // the relay appended these; no ack came back
	time.Sleep(2 * time.Millisecond)
	insert(t, db, "mine", "m") // never pushed
	db.SetState(cursorKey(testNS), encodeCursor(3))
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	hs := expect[*wire.Handshake](t, p)
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: hs.DatabaseID, ServerSiteID: testServerSite, ConnectionID: "c-test",
		SiteHLC: held, SiteHLCStated: true})
	if g := expect[*wire.GetChanges](t, p); g.Since != 3 {
		t.Fatalf("since %d", g.Since)
	}
	p.send(t, wire.NewError(wire.CodeSnapshotRequired, "log compacted"))
	expect[*wire.GetSnapshot](t, p)
	p.sendSnapshot(t, withHorizon(snapshotChunks(t, src, engine.SnapshotOptions{Cursor: 40}), uint64(time.Now().UnixMilli())))
	if g := expect[*wire.GetChanges](t, p); g.Since != 40 {
		t.Fatalf("since %d after the snapshot", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 40})
	ev.waitState(t, Synced)
	if !has(t, db, "remote") || !has(t, db, "mine") {
		t.Fatal("the snapshot lost the relay's row or the unsent own one")
	}
	if has(t, db, "gone") {
		t.Error("the replacing snapshot kept an own row the relay held (siteHlc) and no longer holds: it is pushed again, the relay re-merges it without appending it, and the other replicas never see it")
	}
}
