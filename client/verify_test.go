//go:build !js

package client

import (
	"errors"
	"testing"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestHandshakePresentsPosition: the chain value of a changes reply is
// stored with its cursor and presented, with the relay's site id, in the
// next handshake; an ack saying the history diverged voids the cursor and
// the client bootstraps, and a siteHlc below what the relay acknowledged
// makes it push those transactions again.
func TestHandshakePresentsPosition(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "mine")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	if h := p.ack(t); !h.Log.IsZero() || h.Cursor != 0 {
		t.Fatalf("first handshake presents %+v", h)
	}
	expect[*wire.GetChanges](t, p)
	ch := wire.GenesisChain.Next(testServerSite, "t-7")
	p.send(t, &wire.Changes{Cursor: 7, Chain: ch})
	ev.waitState(t, Synced)
	a := expect[*wire.ApplyChanges](t, p)
	p.ackPush(t, a)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	if got := stateOf(t, db, chainKey(testNS)); got != "7 "+ch.String() {
		t.Fatalf("stored chain %q", got)
	}
	c.Disconnect()

	c.Connect(relay.url, "db1", "")
	p = relay.accept(t)
	h := expect[*wire.Handshake](t, p)
	if h.Log != testServerSite || h.Cursor != 7 || h.Chain != ch {
		t.Fatalf("second handshake presents %s %d %s, want %s 7 %s", h.Log, h.Cursor, h.Chain, testServerSite, ch)
	}
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "db1", ServerSiteID: testServerSite, ConnectionID: "c",
		History: wire.HistoryDiverged, SiteHLCStated: true})
	expect[*wire.GetSnapshot](t, p)
	if got := stateOf(t, db, cursorKey(testNS)); got != "" {
		t.Fatalf("cursor %q kept after diverged", got)
	}
	src, _ := newEngine(t)
	p.streamSnapshot(t, src, 3)
	if g := expect[*wire.GetChanges](t, p); g.Since != 3 {
		t.Fatalf("pull since %d after the snapshot, want 3", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 3, Chain: wire.GenesisChain})
	// The relay holds nothing of this replica (siteHlc zero): its
	// transactions go out again, the same ones.
	again := expect[*wire.ApplyChanges](t, p)
	if len(again.ChangeSets) != len(a.ChangeSets) || again.ChangeSets[0].TransactionID != a.ChangeSets[0].TransactionID {
		t.Fatalf("re-push %+v, want the first push's transactions", again.ChangeSets)
	}
	ev.wait(t, "the report", func(e Event) bool { return e.Type == ErrorReported })
	p.ackPush(t, again)
	ev.wait(t, "the second ack", func(e Event) bool {
		return e.Type == PushAcked && e.Result.Transactions == len(again.ChangeSets) && ev.count(PushAcked) == 2
	})
	n := 0
	for _, e := range ev.snapshot() {
		if e.Type == ErrorReported {
			if !errors.Is(e.Err, ErrRelayDiverged) {
				t.Fatalf("reported %v", e.Err)
			}
			n++
		}
	}
	if n != 1 {
		t.Fatalf("ErrRelayDiverged reported %d times, want once", n)
	}
}

// TestReturnToEarlierLogVoidsCursor: a device syncs with relay log A (cursor
// 7), then with log B (another server site id: A was wiped or replaced),
// then A is back (restored from an older copy). The handshake presents its
// position in B, the log last seen, so A checks nothing, and the cursor
// kept for A is unverified: the restored log may end below it and append
// new entries there, which a pull from 7 would skip for good. Found by the
// simulator (seed 91 with -sim.resurrection: a replica lacked a
// transaction appended just below its stale cursor). The client voids the
// cursor and bootstraps, as for a diverged history.
func TestReturnToEarlierLogVoidsCursor(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "mine")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p, _ := syncedAtSeven(t, relay, c, ev)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	c.Disconnect()

	// Log B: another relay site; the device has its own facts and no
	// cursor there, so it pulls B from the start.
	siteB := model.SiteID{0xBB, 1}
	c.Connect(relay.url, "db1", "")
	p = relay.accept(t)
	expect[*wire.Handshake](t, p)
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "db1", ServerSiteID: siteB, ConnectionID: "c", SiteHLCStated: true})
	if g := expect[*wire.GetChanges](t, p); g.Since != 0 {
		t.Fatalf("first pull of log B since %d, want 0", g.Since)
	}
	chB := wire.GenesisChain.Next(siteB, "t-2")
	p.send(t, &wire.Changes{Cursor: 2, Chain: chB})
	ev.waitState(t, Synced)
	c.Disconnect()

	// Log A again: the handshake presents B's position; A cannot check
	// it and says nothing about the history.
	c.Connect(relay.url, "db1", "")
	p = relay.accept(t)
	h := expect[*wire.Handshake](t, p)
	if h.Log != siteB || h.Cursor != 2 {
		t.Fatalf("third handshake presents %s %d, want %s 2", h.Log, h.Cursor, siteB)
	}
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "db1", ServerSiteID: testServerSite, ConnectionID: "c", SiteHLCStated: true})
	switch m := p.recv(t).(type) {
	case *wire.GetSnapshot:
	case *wire.GetChanges:
		t.Fatalf("pulls log A since %d, a cursor kept from an earlier session that log A never checked; want a bootstrap", m.Since)
	default:
		t.Fatalf("after the handshake: %T, want get_snapshot", m)
	}
	if got := stateOf(t, db, cursorKey(testNS)); got != "" {
		t.Fatalf("cursor %q kept for log A", got)
	}
}

// TestNewURLPresentsLastLog: a relay moved to a new URL is presented the
// position this replica holds in the log it last synced the database with,
// so a restored copy at the new address is caught as at the old one.
// Before, a URL never used presented nothing, and the cursor of the log,
// found by serverSiteId after the ack, was used unchecked.
func TestNewURLPresentsLastLog(t *testing.T) {
	old := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "mine")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	_, chA := syncedAtSeven(t, old, c, ev)
	c.Disconnect()

	moved := newScriptRelay(t)
	c.Connect(moved.url, "db1", "")
	p := moved.accept(t)
	h := expect[*wire.Handshake](t, p)
	if h.Log != testServerSite || h.Cursor != 7 || h.Chain != chA {
		t.Fatalf("handshake at the new URL presents %s %d %v, want %s 7 %v", h.Log, h.Cursor, h.Chain, testServerSite, chA)
	}
	// The relay at the new URL is an older copy: history diverged.
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "db1", ServerSiteID: testServerSite, ConnectionID: "c", History: wire.HistoryDiverged, SiteHLCStated: true})
	if _, ok := p.recv(t).(*wire.GetSnapshot); !ok {
		t.Fatal("after a diverged ack at the new URL: no bootstrap")
	}
}

// syncedAtSeven connects c to relay (log testServerSite), answers its first
// pull with cursor 7 and the chain value there, and waits for Synced.
func syncedAtSeven(t *testing.T, relay *scriptRelay, c *Client, ev *eventLog) (*peer, wire.Chain) {
	t.Helper()
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	expect[*wire.GetChanges](t, p)
	ch := wire.GenesisChain.Next(testServerSite, "t-7")
	p.send(t, &wire.Changes{Cursor: 7, Chain: ch})
	ev.waitState(t, Synced)
	return p, ch
}

// TestDivergedVoidsHorizon (wire version 8): the handshake presents the
// tombstone horizon applied with the cursor; an ack saying the history
// diverged voids both. When the bootstrap then fails and the replica,
// holding facts of its own, pulls the log from 0, it applies the log's
// marks again, the older ones too. Kept, the horizon made it skip them
// and present it again with its next cursor: diverged again at every
// handshake, the cursor moving back each time (the simulator's seed 79
// with every fault).
func TestDivergedVoidsHorizon(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "mine")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	p.ack(t)
	expect[*wire.GetChanges](t, p)
	ch := wire.GenesisChain.Next(testServerSite, "t-7")
	const high, low = 1_764_633_600_000, 1_764_000_000_000
	p.send(t, &wire.Changes{Cursor: 7, Chain: ch, Horizons: []wire.Horizon{{Cursor: 7, Wall: high, Chain: ch}}})
	ev.waitState(t, Synced)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	if got := stateOf(t, db, horizonKey(testNS)); got != "1764633600000" {
		t.Fatalf("stored horizon %q", got)
	}
	c.Disconnect()

	c.Connect(relay.url, "db1", "")
	p = relay.accept(t)
	h := expect[*wire.Handshake](t, p)
	if h.Log != testServerSite || h.Cursor != 7 || h.Chain != ch || h.Horizon != high {
		t.Fatalf("second handshake presents %s %d %s horizon %d, want %s 7 %s %d", h.Log, h.Cursor, h.Chain, h.Horizon, testServerSite, ch, uint64(high))
	}
	p.send(t, &wire.HandshakeAck{ProtocolVersion: wire.ProtocolVersion, DatabaseID: "db1", ServerSiteID: testServerSite, ConnectionID: "c",
		History: wire.HistoryDiverged, SiteHLCStated: true})
	expect[*wire.GetSnapshot](t, p)
	for _, k := range []string{cursorKey(testNS), horizonKey(testNS)} {
		if got := stateOf(t, db, k); got != "" {
			t.Fatalf("%s %q kept after diverged", k, got)
		}
	}
	// The bootstrap never gets its header: the replica holds facts of its
	// own, so it pulls the log from 0 and applies its mark.
	c.Disconnect()
	c.Connect(relay.url, "db1", "")
	p = relay.accept(t)
	if h := p.ack(t); !h.Log.IsZero() || h.Horizon != 0 {
		t.Fatalf("third handshake presents %+v", h)
	}
	if g := expect[*wire.GetChanges](t, p); g.Since != 0 {
		t.Fatalf("pull since %d, want 0", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 7, Chain: ch, Horizons: []wire.Horizon{{Cursor: 7, Wall: low, Chain: ch}}})
	waitCond(t, "the relay's mark applied", func() bool { return stateOf(t, db, horizonKey(testNS)) == "1764000000000" })
}

// TestPullFromStartVoidsHorizon: a horizon kept without a cursor (a
// snapshot header's, the transfer then lost with its checkpoint) is void
// when the replica, holding facts of its own, pulls the log from 0: it
// names a mark of a history the relay may have lost since (restored from
// an older copy). Kept, the pull skipped the log's marks up to it and
// the next handshake presented it with the new cursor: diverged, the
// cursor moving back (the simulator's seed 7107, two relays).
func TestPullFromStartVoidsHorizon(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "x", "mine")
	const high, low = 1_764_633_600_000, 1_764_000_000_000
	if err := db.SetState(horizonKey(testNS), encodeCursor(high)); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, db, Options{})
	c.Connect(relay.url, "db1", "")
	p := relay.accept(t)
	if h := p.ack(t); !h.Log.IsZero() || h.Horizon != 0 {
		t.Fatalf("first handshake presents %+v", h)
	}
	if g := expect[*wire.GetChanges](t, p); g.Since != 0 {
		t.Fatalf("pull since %d, want 0", g.Since)
	}
	ch := wire.GenesisChain.Next(testServerSite, "t-7")
	p.send(t, &wire.Changes{Cursor: 7, Chain: ch, Horizons: []wire.Horizon{{Cursor: 7, Wall: low, Chain: ch}}})
	waitCond(t, "the relay's mark applied", func() bool { return stateOf(t, db, horizonKey(testNS)) == "1764000000000" })
	waitCond(t, "the cursor stored", func() bool { return stateOf(t, db, cursorKey(testNS)) == "7" })
	c.Disconnect()

	c.Connect(relay.url, "db1", "")
	p = relay.accept(t)
	h := expect[*wire.Handshake](t, p)
	if h.Log != testServerSite || h.Cursor != 7 || h.Horizon != low {
		t.Fatalf("second handshake presents %s %d horizon %d, want %s 7 %d", h.Log, h.Cursor, h.Horizon, testServerSite, uint64(low))
	}
}
