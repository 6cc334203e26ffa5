//go:build !js

package client

import (
	"testing"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// chainN is a made-up chain value for cursor n.
func chainN(n uint64) wire.Chain { return wire.Chain{byte(n), 0xac, 0x4b} }

// TestAckPosition (wire version 9, "Acknowledged position"): an
// apply_result whose entries continue the cursor moves it to their last,
// with their chain value, without a pull; one whose entries leave a gap
// (another device's entries between) leaves it and pulls; one without a
// position (a resend) changes nothing; one carrying a mark at first-1
// applies the mark, and since the push's own ChangeSets must then be
// merged again after the pruning (asked back), it pulls them from its
// cursor instead of moving past them.
func TestAckPosition(t *testing.T) {
	relay := newScriptRelay(t)
	db, _ := newEngine(t)
	insert(t, db, "a", "1")
	c := newClient(t, db, Options{})
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	noPull := func(what string) {
		t.Helper()
		for _, m := range p.barrier(t) {
			if g, ok := m.(*wire.GetChanges); ok {
				t.Fatalf("%s: the client pulled (since %d)", what, g.Since)
			}
		}
	}
	acks := 0
	ack := func(a *wire.ApplyChanges, first, last uint64, marks ...wire.Horizon) {
		t.Helper()
		m := &wire.ApplyResult{RequestID: a.RequestID, ApplyResult: model.ApplyResult{Applied: len(a.ChangeSets), Transactions: len(a.ChangeSets)}}
		if last != 0 {
			m.First, m.Cursor, m.Chain, m.Horizons = first, last, chainN(last), marks
		}
		p.send(t, m)
		acks++
		n := acks
		waitCond(t, "the ack", func() bool { return ev.count(PushAcked) >= n })
	}
	cursor := func() string { return stateOf(t, db, cursorKey(testNS)) }

	// Contiguous: 5 → 6 … 7.
	a1 := expect[*wire.ApplyChanges](t, p)
	ack(a1, 6, 7)
	noPull("contiguous")
	if got := cursor(); got != "7" {
		t.Fatalf("cursor %q after a contiguous ack, want 7", got)
	}
	if got := stateOf(t, db, chainKey(testNS)); got != string(encodeChain(7, chainN(7))) {
		t.Fatalf("chain %q after a contiguous ack, want the ack's", got)
	}

	// A gap (8 is another device's): the cursor stays, the client pulls.
	insert(t, db, "b", "2")
	a2 := expect[*wire.ApplyChanges](t, p)
	ack(a2, 9, 9)
	g := expect[*wire.GetChanges](t, p)
	if g.Since != 7 || cursor() != "7" {
		t.Fatalf("after a gap: pulled since %d, cursor %q; want 7, 7", g.Since, cursor())
	}
	p.send(t, &wire.Changes{Cursor: 9, Chain: chainN(9)})
	waitCond(t, "the pull", func() bool { return cursor() == "9" })

	// No position (a resend): nothing moves.
	insert(t, db, "c", "3")
	a3 := expect[*wire.ApplyChanges](t, p)
	ack(a3, 0, 0)
	noPull("no position")
	if got := cursor(); got != "9" {
		t.Fatalf("cursor %q after an ack without a position, want 9", got)
	}

	// A mark at first-1 (9) the relay made before this push: applied at
	// the cursor; this push's ChangeSets lie above its siteHlc (a3's), so
	// they are asked back and pulled from 9.
	insert(t, db, "d", "4")
	a4 := expect[*wire.ApplyChanges](t, p)
	mark := wire.Horizon{Cursor: 9, Wall: 1000, Chain: chainN(9), SiteHLC: a3.ChangeSets[len(a3.ChangeSets)-1].HLC, SiteHLCStated: true}
	ack(a4, 10, 10, mark)
	g = expect[*wire.GetChanges](t, p)
	if g.Since != 9 || !g.OwnStated || !g.OwnAbove.Less(a4.ChangeSets[0].HLC) || g.OwnUpTo.Less(a4.ChangeSets[0].HLC) {
		t.Fatalf("after a mark: get_changes %+v, want since 9 asking back %s", g, wire.FormatHLC(a4.ChangeSets[0].HLC))
	}
	if got := stateOf(t, db, horizonKey(testNS)); got != "1000" {
		t.Fatalf("horizon %q after the ack's mark, want 1000", got)
	}
	p.send(t, &wire.Changes{Cursor: 10, Chain: chainN(10), ChangeSets: a4.ChangeSets})
	waitCond(t, "the pull", func() bool { return cursor() == "10" })
}
