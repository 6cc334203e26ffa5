//go:build !js

package relay

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/boltkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// chainOf folds sets into a chain from GenesisChain: the chain value at
// each cursor, index 0 for cursor 0.
func chainOf(sets []model.ChangeSet) []wire.Chain {
	out := []wire.Chain{wire.GenesisChain}
	for _, cs := range sets {
		out = append(out, out[len(out)-1].Next(cs.SiteID, cs.TransactionID))
	}
	return out
}

// handshakeAt handshakes for db presenting a position in log.
func (c *client) handshakeAt(db string, log model.SiteID, cursor uint64, chain wire.Chain) *wire.HandshakeAck {
	c.t.Helper()
	c.send(&wire.Handshake{ProtocolVersion: wire.ProtocolVersion, DatabaseID: db, SiteID: c.site, Log: log, Cursor: cursor, Chain: chain})
	return recvType[*wire.HandshakeAck](c)
}

// TestLogChainAndHistory: changes and push_changes carry the log's chain
// value at their cursor (GenesisChain folded with each entry's site id and
// transactionId); handshake_ack judges a presented position (continues,
// diverged, unverified: held but presented without a chain value, or no
// verdict) and states the newest hlc the log holds of the
// handshaking site; both hold across pruning (the compaction point keeps
// its chain value) and a restart.
func TestLogChainAndHistory(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	sets := localSets(t, rep) // the schema's transaction
	sets = append(sets, insertStops(t, rep, "t", 2)...)
	a.apply("apply-1", sets) // cursors 1…3
	b := connect(t, r, "acme")
	server := b.ack.ServerSiteID
	want := chainOf(sets)
	for since := uint64(0); since <= 3; since++ {
		if ch := b.getChanges(since); ch.Cursor != 3 || ch.Chain != want[3] {
			t.Fatalf("changes since %d: cursor %d chain %s, want 3 %s", since, ch.Cursor, ch.Chain, want[3])
		}
	}
	more := insertStops(t, rep, "u", 1)
	a.apply("apply-2", more)
	want = chainOf(append(sets, more...))
	if p := recvType[*wire.PushChanges](b); p.Cursor != 4 || p.Chain != want[4] {
		t.Fatalf("push_changes: cursor %d chain %s, want 4 %s", p.Cursor, p.Chain, want[4])
	}
	// The sender's own entries are left out of its pages, not out of the
	// chain.
	if ch := a.getChanges(1); ch.Cursor != 4 || len(ch.ChangeSets) != 0 || ch.Chain != want[4] {
		t.Fatalf("own pull: cursor %d, %d sets, chain %s, want 4, 0, %s", ch.Cursor, len(ch.ChangeSets), ch.Chain, want[4])
	}

	// snapshot_complete states the chain value at the snapshot's cursor
	// (wire version 10).
	if s := collectSnapshot(t, b, &wire.GetSnapshot{}); s.header.Cursor != 4 || *s.complete != (wire.SnapshotComplete{Cursor: 4, Chain: want[4]}) {
		t.Fatalf("snapshot at cursor %d: %+v, want cursor 4 chain %s", s.header.Cursor, *s.complete, want[4])
	}

	other := model.SiteID{1, 2, 3}
	newest := more[0].HLC
	check := func(name string, log model.SiteID, cursor uint64, chain wire.Chain, wantHistory wire.History) {
		t.Helper()
		c := dial(t, r, nil)
		c.site = rep.SiteID()
		ack := c.handshakeAt("acme", log, cursor, chain)
		if ack.History != wantHistory {
			t.Errorf("%s: history %q, want %q", name, ack.History, wantHistory)
		}
		if !ack.SiteHLCStated || ack.SiteHLC != newest {
			t.Errorf("%s: siteHlc %v (stated %v), want %v", name, ack.SiteHLC, ack.SiteHLCStated, newest)
		}
	}
	check("head", server, 4, want[4], wire.HistoryContinues)
	check("inside", server, 2, want[2], wire.HistoryContinues)
	check("empty log position", server, 0, wire.GenesisChain, wire.HistoryContinues)
	check("other chain", server, 2, want[3], wire.HistoryDiverged)
	check("ahead", server, 9, want[4], wire.HistoryDiverged)
	check("ahead without chain", server, 9, wire.Chain{}, wire.HistoryDiverged)
	// A cursor held without a chain value to check it against (a
	// snapshot's cursor before the first pull): unverified (version 10).
	check("no chain", server, 2, wire.Chain{}, wire.HistoryUnverified)
	check("no chain at the head", server, 4, wire.Chain{}, wire.HistoryUnverified)
	check("no chain at 0", server, 0, wire.Chain{}, "")
	check("another log", other, 2, want[2], "")
	check("none", model.SiteID{}, 0, wire.Chain{}, "")
	if ack := dial(t, r, nil).handshakeAt("acme", server, 4, want[4]); !ack.SiteHLCStated || !ack.SiteHLC.IsZero() {
		t.Errorf("a site the log never stored: siteHlc %v (stated %v), want zero, stated", ack.SiteHLC, ack.SiteHLCStated)
	}

	// Prune cursors 1…4; the compaction point 4 keeps its chain value.
	clock.Advance(engine.DefaultRetention + 24*time.Hour)
	last := insertStops(t, rep, "v", 1)
	a.apply("apply-3", last) // cursor 5
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	want = chainOf(append(append(sets, more...), last...))
	newest = last[0].HLC
	if p := recvType[*wire.PushChanges](b); p.Cursor != 5 || p.Chain != want[5] {
		t.Fatalf("push_changes: cursor %d chain %s, want 5 %s", p.Cursor, p.Chain, want[5])
	}
	check("compaction point", server, 4, want[4], wire.HistoryContinues)
	check("compaction point, other chain", server, 4, want[3], wire.HistoryDiverged)
	check("below the retained log", server, 2, want[2], "")
	check("below the retained log without chain", server, 2, wire.Chain{}, "")
	check("compaction point without chain", server, 4, wire.Chain{}, wire.HistoryUnverified)
	if ch := b.getChanges(4); ch.Cursor != 5 || ch.Chain != want[5] {
		t.Fatalf("after pruning: cursor %d chain %s, want 5 %s", ch.Cursor, ch.Chain, want[5])
	}

	dir := r.dir
	for _, c := range []*client{a, b} {
		c.readAll()
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	r = startRelay(t, Config{DataDir: dir, Clock: clock})
	c := dial(t, r, nil)
	c.site = rep.SiteID()
	if ack := c.handshakeAt("acme", server, 5, want[5]); ack.History != wire.HistoryContinues || ack.SiteHLC != last[0].HLC {
		t.Fatalf("after restart: %+v", ack)
	}
}

// TestUpgradeFormat1: a database file of relay format 1 (no chain values,
// no per-site hlc) is upgraded when opened: chain values from GenesisChain
// over the retained entries, the newest hlc of each site among them.
func TestUpgradeFormat1(t *testing.T) {
	needFiles(t)
	r := startRelay(t, Config{})
	rep := newReplica(t, nil)
	a := connectAs(t, r, "acme", rep)
	sets := append(localSets(t, rep), insertStops(t, rep, "t", 3)...)
	a.apply("apply-1", sets)
	server := a.ack.ServerSiteID
	dir := r.dir
	a.readAll()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// Make it a format-1 file.
	st, err := boltkv.Open(filepath.Join(dir, "acme.db"), storeBuckets, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(tx kv.Tx) error {
		for _, b := range []string{bucketChain, bucketSites} {
			if err := tx.DeleteRange(b, nil, nil); err != nil {
				return err
			}
		}
		for _, k := range [][]byte{keyChain, keyPrunedChain} {
			if err := tx.Delete(bucketRelay, k); err != nil {
				return err
			}
		}
		return tx.Put(bucketRelay, keyFormat, []byte("1"))
	})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	r = startRelay(t, Config{DataDir: dir})
	want := chainOf(sets)
	c := dial(t, r, nil)
	c.site = rep.SiteID()
	ack := c.handshakeAt("acme", server, 2, want[2])
	if ack.History != wire.HistoryContinues || !ack.SiteHLCStated || ack.SiteHLC != sets[len(sets)-1].HLC {
		t.Fatalf("upgraded: %+v, want continues and siteHlc %v", ack, sets[len(sets)-1].HLC)
	}
	if ch := c.getChanges(1); ch.Cursor != 4 || ch.Chain != want[4] {
		t.Fatalf("upgraded: changes cursor %d chain %s, want 4 %s", ch.Cursor, ch.Chain, want[4])
	}
}
