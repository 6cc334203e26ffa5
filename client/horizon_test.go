//go:build !js

package client

import (
	"strconv"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// tombstones counts the rows of db holding a tombstone.
func tombstones(t *testing.T, db *engine.Engine) int {
	t.Helper()
	n := 0
	for c, err := range db.Snapshot(engine.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Rows {
			if r.HasTombstone {
				n++
			}
		}
	}
	return n
}

// deletedWithLateWrite deletes row "gone" of db (inserted first) and
// returns the wall of its tombstone and a ChangeSet of another site
// writing "gone" after the deletion: under delete-wins it stays dead on a
// replica holding the tombstone, and revives "gone" on one without it.
func deletedWithLateWrite(t *testing.T, db *engine.Engine) (uint64, model.ChangeSet) {
	t.Helper()
	insert(t, db, "gone", "g")
	if ok, err := db.Delete("notes", engine.Key{"gone"}); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	wall := uint64(time.Now().UnixMilli())
	time.Sleep(3 * time.Millisecond)
	other, _ := newEngine(t)
	insert(t, other, "gone", "late")
	return wall, dataSets(t, other)[0]
}

// TestHorizonMarksInChanges: marks at a pull's since are applied before
// the page's ChangeSets (the late write after the pruning revives the row,
// as on the relay), marks at the page's cursor after them, the horizon is
// stored, a mark carried again is skipped, and a mark inside a page is a
// protocol error that applies nothing.
func TestHorizonMarksInChanges(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	wall, late := deletedWithLateWrite(t, db)
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	if tombstones(t, db) != 1 {
		t.Fatal("the deletion holds no tombstone")
	}
	ch := func(n int) wire.Chain { return wire.GenesisChain.Next(testServerSite, strconv.Itoa(n)) }
	sets := peerSets(t, 4, "p")

	// A gap push makes the client pull since 5.
	p.send(t, &wire.PushChanges{Cursor: 20, ChangeSets: sets[3:4]})
	if g := expect[*wire.GetChanges](t, p); g.Since != 5 {
		t.Fatalf("pull since %d, want 5", g.Since)
	}
	p.send(t, &wire.Changes{Cursor: 7, More: true, Chain: ch(7), ChangeSets: []model.ChangeSet{late, sets[0]},
		Horizons: []wire.Horizon{{Cursor: 5, Wall: wall + 1, Chain: ch(5)}, {Cursor: 7, Wall: wall + 2, Chain: ch(7)}}})
	if g := expect[*wire.GetChanges](t, p); g.Since != 7 {
		t.Fatalf("next page since %d, want 7", g.Since)
	}
	if title, ok := getTitle(t, db, "gone"); !ok || title != "late" {
		t.Fatalf(`"gone" after the mark at since: %q %v; want revived by the late write (pruned first)`, title, ok)
	}
	if tombstones(t, db) != 0 || stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(wall+2, 10) || stateOf(t, db, cursorKey(testNS)) != "7" {
		t.Fatalf("after the page: %d tombstones, horizon %q, cursor %q", tombstones(t, db), stateOf(t, db, horizonKey(testNS)), stateOf(t, db, cursorKey(testNS)))
	}

	// The mark at 7 again (a page from its cursor): skipped.
	p.send(t, &wire.Changes{Cursor: 9, More: true, Chain: ch(9), ChangeSets: sets[1:2],
		Horizons: []wire.Horizon{{Cursor: 7, Wall: wall + 2, Chain: ch(7)}}})
	if g := expect[*wire.GetChanges](t, p); g.Since != 9 {
		t.Fatalf("next page since %d, want 9", g.Since)
	}
	if stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(wall+2, 10) || stateOf(t, db, cursorKey(testNS)) != "9" {
		t.Fatalf("after the repeated mark: horizon %q, cursor %q", stateOf(t, db, horizonKey(testNS)), stateOf(t, db, cursorKey(testNS)))
	}

	// A mark inside the page (neither at since nor at its cursor).
	p.send(t, &wire.Changes{Cursor: 20, Chain: ch(20), ChangeSets: sets[2:4],
		Horizons: []wire.Horizon{{Cursor: 12, Wall: uint64(time.Now().UnixMilli()) + 1000, Chain: ch(12)}}})
	p.barrier(t)
	if stateOf(t, db, cursorKey(testNS)) != "9" || has(t, db, "pc") || stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(wall+2, 10) {
		t.Fatalf("a mark inside a page: cursor %q, row pc %v, horizon %q; want nothing applied", stateOf(t, db, cursorKey(testNS)), has(t, db, "pc"), stateOf(t, db, horizonKey(testNS)))
	}
	ev.wait(t, "protocol error", func(e Event) bool { return e.Type == ErrorReported && isErr(e.Err, ErrProtocol) })
}

// TestHorizonMarkInPush: a contiguous push_changes with a mark at the
// position before its first ChangeSet prunes before applying it.
func TestHorizonMarkInPush(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	wall, late := deletedWithLateWrite(t, db)
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	chain := wire.GenesisChain.Next(testServerSite, "5")
	p.send(t, &wire.PushChanges{Cursor: 6, ChangeSets: []model.ChangeSet{late},
		Horizons: []wire.Horizon{{Cursor: 5, Wall: wall + 1, Chain: chain}}})
	p.barrier(t)
	if title, ok := getTitle(t, db, "gone"); !ok || title != "late" || stateOf(t, db, cursorKey(testNS)) != "6" {
		t.Fatalf(`"gone" after the push: %q %v, cursor %q; want revived (pruned first), cursor 6`, title, ok, stateOf(t, db, cursorKey(testNS)))
	}
	if stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(wall+1, 10) {
		t.Fatalf("horizon %q", stateOf(t, db, horizonKey(testNS)))
	}
}

// TestHorizonAfterSnapshot: a bootstrap prunes at the snapshot header's
// horizon when the header arrives, before the rows merge, and stores it
// before pulling. Before, it pruned after the rows and dropped the
// tombstones below the horizon the relay still held (review, helper-24).
func TestHorizonAfterSnapshot(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	c := newClient(t, db, Options{})
	recordEvents(t, c)
	if err := c.Connect(relay.url, "db1", ""); err != nil {
		t.Fatal(err)
	}
	p := relay.accept(t)
	p.ack(t)
	expect[*wire.GetSnapshot](t, p)
	src, _ := newEngine(t)
	insert(t, src, "kept", "k")
	insert(t, src, "gone", "g")
	if ok, err := src.Delete("notes", engine.Key{"gone"}); err != nil || !ok {
		t.Fatal(err)
	}
	horizon := uint64(time.Now().UnixMilli()) + 1
	p.sendSnapshot(t, withHorizon(snapshotChunks(t, src, engine.SnapshotOptions{Cursor: 3}), horizon))
	if g := expect[*wire.GetChanges](t, p); g.Since != 3 {
		t.Fatalf("pull since %d after the snapshot", g.Since)
	}
	// The snapshot's tombstone below the horizon is kept: the relay holds
	// it (a late delete it applied after its mark), and so does every
	// replica until the next mark; pruning happened at the header, before
	// the rows merged.
	if tombstones(t, db) != 1 || !has(t, db, "kept") || stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(horizon, 10) {
		t.Fatalf("after the bootstrap: %d tombstones (want the snapshot's 1), kept %v, horizon %q", tombstones(t, db), has(t, db, "kept"), stateOf(t, db, horizonKey(testNS)))
	}
}

// TestHorizonKeepsUnsentOwnDelete: a mark whose wall is above one of this
// replica's own deletes that the relay has not acknowledged yet does not
// prune its tombstone, so the delete is still pushed; once acknowledged, a
// later mark prunes it. Before, applying the mark pruned it and the delete
// was never pushed: the row stayed alive everywhere else. Found by review
// (helper-24).
func TestHorizonKeepsUnsentOwnDelete(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	if ok, err := db.Delete("notes", engine.Key{"mine"}); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	wall := uint64(time.Now().UnixMilli()) + 1000 // above the delete
	ch := func(n int) wire.Chain { return wire.GenesisChain.Next(testServerSite, strconv.Itoa(n)) }
	p.send(t, &wire.PushChanges{Cursor: 6, Chain: ch(6), ChangeSets: peerSets(t, 1, "p"),
		Horizons: []wire.Horizon{{Cursor: 5, Wall: wall, Chain: ch(5)}}})
	var a *wire.ApplyChanges // the delete's push: before or after the mark
	for _, m := range p.barrier(t) {
		if x, ok := m.(*wire.ApplyChanges); ok {
			a = x
		}
	}
	if stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(wall, 10) {
		t.Fatalf("horizon %q, want the mark's %d applied", stateOf(t, db, horizonKey(testNS)), wall)
	}
	if n := tombstones(t, db); n != 1 {
		t.Fatalf("%d tombstones after the mark, want the unsent delete's kept", n)
	}
	if a == nil {
		clk.Advance(time.Second) // any debounce is over
		a = expect[*wire.ApplyChanges](t, p)
	}
	deletes := 0
	for _, cs := range a.ChangeSets {
		for _, c := range cs.Changes {
			if c.Type == model.RowDeletion && len(c.PK) == 1 && c.PK[0] == model.Text("mine") {
				deletes++
			}
		}
	}
	if deletes != 1 {
		t.Fatalf("push after the mark: %+v, want the delete of mine", a.ChangeSets)
	}
	p.ackPush(t, a)
	ev.wait(t, "the second ack", func(e Event) bool { return e.Type == PushAcked && ev.count(PushAcked) == 2 })
	p.send(t, &wire.PushChanges{Cursor: 7, Chain: ch(7), ChangeSets: peerSets(t, 1, "q"),
		Horizons: []wire.Horizon{{Cursor: 6, Wall: wall + 1, Chain: ch(6)}}})
	p.barrier(t)
	if n := tombstones(t, db); n != 0 {
		t.Fatalf("%d tombstones after a mark above the acknowledged delete, want 0", n)
	}
}

// TestHorizonKeepsOwnFactsAfterTheMark (wire version 4): a mark keeps this
// replica's own facts above the mark's siteHlc, the newest of its
// transactions the relay held when it pruned, even acknowledged ones: the
// relay applied those after its pruning and holds them. Before, the client
// kept only those above its sent watermark, so an own delete acknowledged
// after the mark was pruned here and kept by the relay until its next mark
// (a cell of a delete-wins row, for good). A later mark whose siteHlc
// covers the delete prunes it.
func TestHorizonKeepsOwnFactsAfterTheMark(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	first := expect[*wire.ApplyChanges](t, p)
	p.ackPush(t, first)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	held := first.ChangeSets[len(first.ChangeSets)-1].HLC // what the relay holds at its mark
	if ok, err := db.Delete("notes", engine.Key{"mine"}); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	clk.Advance(time.Second)
	del := expect[*wire.ApplyChanges](t, p)
	p.ackPush(t, del) // acknowledged: the sent watermark passes the delete
	ev.wait(t, "the second ack", func(e Event) bool { return e.Type == PushAcked && ev.count(PushAcked) == 2 })

	wall := uint64(time.Now().UnixMilli()) + 1000 // above the delete
	ch := func(n int) wire.Chain { return wire.GenesisChain.Next(testServerSite, strconv.Itoa(n)) }
	p.send(t, &wire.PushChanges{Cursor: 6, Chain: ch(6), ChangeSets: peerSets(t, 1, "p"),
		Horizons: []wire.Horizon{{Cursor: 5, Wall: wall, Chain: ch(5), SiteHLC: held, SiteHLCStated: true}}})
	p.barrier(t)
	if stateOf(t, db, horizonKey(testNS)) != strconv.FormatUint(wall, 10) {
		t.Fatalf("horizon %q, want the mark's %d applied", stateOf(t, db, horizonKey(testNS)), wall)
	}
	if n := tombstones(t, db); n != 1 {
		t.Fatalf("%d tombstones after the mark, want the delete the relay got after it kept", n)
	}
	p.send(t, &wire.PushChanges{Cursor: 7, Chain: ch(7), ChangeSets: peerSets(t, 1, "q"),
		Horizons: []wire.Horizon{{Cursor: 6, Wall: wall + 1, Chain: ch(6), SiteHLC: del.ChangeSets[len(del.ChangeSets)-1].HLC, SiteHLCStated: true}}})
	p.barrier(t)
	if n := tombstones(t, db); n != 0 {
		t.Fatalf("%d tombstones after a mark whose siteHlc covers the delete, want 0", n)
	}
}

// TestHorizonAsksOwnBack: a mark whose siteHlc is below what this replica
// had pushed when it applied it (the relay got those pushes after the
// mark) makes the pulls ask them back (get_changes' ownAbove and ownUpTo,
// stored under echoKey), and the client merges them in their place (wire
// version 5: engine.TestPruneSupersededUnsentCell is what it is for). A
// page whose leading mark set that range was read without it: it is not
// applied, and the pull from the same cursor asks again. The own
// ChangeSet asked back revives the row a peer's later deletion, pruned at
// the mark, had taken from this replica, as on the relay.
func TestHorizonAsksOwnBack(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	first := expect[*wire.ApplyChanges](t, p)
	p.ackPush(t, first)
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })
	held := first.ChangeSets[len(first.ChangeSets)-1].HLC // what the relay holds at its mark
	clk.Advance(time.Second)
	insert(t, db, "second", "y")
	clk.Advance(time.Second)
	second := expect[*wire.ApplyChanges](t, p)
	p.ackPush(t, second) // appended by the relay after its mark
	ev.wait(t, "the second ack", func(e Event) bool { return e.Type == PushAcked && ev.count(PushAcked) == 2 })
	upTo := second.ChangeSets[len(second.ChangeSets)-1].HLC
	// A peer's later deletion of the second row, which this replica
	// pulled before the mark: it kills the row's own cells, and the mark
	// prunes it, so the row is gone here; the relay, which got the
	// second push after its pruning, revived the row from it.
	peer, _ := newEngine(t)
	if _, err := peer.ApplyChanges(second.ChangeSets); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Delete("notes", engine.Key{"second"}); err != nil {
		t.Fatal(err)
	}
	del := dataSets(t, peer)
	if _, err := db.ApplyChanges(del[len(del)-1:]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the mark's wall is past the deletion

	ch := func(n int) wire.Chain { return wire.GenesisChain.Next(testServerSite, strconv.Itoa(n)) }
	sets := peerSets(t, 2, "p")
	p.send(t, &wire.PushChanges{Cursor: 20, ChangeSets: sets[1:2]}) // a gap: pull since 5
	if g := expect[*wire.GetChanges](t, p); g.Since != 5 || g.OwnStated {
		t.Fatalf("pull %+v, want since 5 asking nothing back", g)
	}
	mark := wire.Horizon{Cursor: 5, Wall: uint64(time.Now().UnixMilli()), Chain: ch(5), SiteHLC: held, SiteHLCStated: true}
	p.send(t, &wire.Changes{Cursor: 7, More: true, Chain: ch(7), ChangeSets: sets[:1], Horizons: []wire.Horizon{mark}})
	g := expect[*wire.GetChanges](t, p)
	if g.Since != 5 || !g.OwnStated || g.OwnAbove != held || g.OwnUpTo != upTo {
		t.Fatalf("pull after the mark %+v, want since 5 asking back (%s, %s]", g, held, upTo)
	}
	if got, want := stateOf(t, db, echoKey(testNS)), wire.FormatHLC(held)+" "+wire.FormatHLC(upTo); got != want {
		t.Fatalf("stored range %q, want %q", got, want)
	}
	if has(t, db, "second") {
		t.Fatal("the second row survived the mark: the test does not reach the case")
	}
	// The same page with the own ChangeSet asked back: applied (the mark
	// is not applied again), and the pulls go on asking.
	p.send(t, &wire.Changes{Cursor: 7, More: true, Chain: ch(7), ChangeSets: []model.ChangeSet{second.ChangeSets[0], sets[0]}, Horizons: []wire.Horizon{mark}})
	if g := expect[*wire.GetChanges](t, p); g.Since != 7 || !g.OwnStated {
		t.Fatalf("next pull %+v, want since 7 asking back", g)
	}
	if !has(t, db, "second") {
		t.Fatal("the second row is not back: the own ChangeSet asked back was not merged (engine.ApplyOptions.MergeOwn)")
	}
	// A later mark covering the pushes ends the range.
	p.send(t, &wire.Changes{Cursor: 20, Chain: ch(20), ChangeSets: sets[1:2], Horizons: []wire.Horizon{{Cursor: 20, Wall: mark.Wall + 1, Chain: ch(20), SiteHLC: upTo, SiteHLCStated: true}}})
	p.barrier(t)
	if got := stateOf(t, db, echoKey(testNS)); got != "" {
		t.Fatalf("stored range %q after a mark covering the pushes, want none", got)
	}
}
