//go:build !js

package client

import (
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/wire"
)

// TestRequestSnapshotWhilePullFails (review): RequestSnapshot with the
// replica's own cursor pulls first and asks for the snapshot once the pull
// caught up. When the pull cannot succeed (here a ChangeSet the engine
// refuses: here malformed, its hlc not its facts' maximum), the snapshot the app
// asked for never starts: the pull is retried after its backoff forever.
// Before, get_snapshot went out at once.
func TestRequestSnapshotWhilePullFails(t *testing.T) {
	relay := newScriptRelay(t)
	clk := newFakeClock()
	db, _ := newEngine(t)
	insert(t, db, "mine", "x")
	c := newClient(t, db, quietOptions(clk))
	ev := recordEvents(t, c)
	p := connectSynced(t, relay, c, ev, 5)
	p.ackPush(t, expect[*wire.ApplyChanges](t, p))
	ev.wait(t, "the ack", func(e Event) bool { return e.Type == PushAcked })

	bad := peerSets(t, 1, "f")
	bad[0].HLC.Wall += uint64((40 * 24 * time.Hour).Milliseconds())
	if other, _ := newEngine(t); true {
		if _, err := other.Apply(bad, engine.ApplyOptions{}); err == nil {
			t.Fatal("the altered ChangeSet applies: the test does not reach the case")
		}
	}
	ch6 := wire.GenesisChain.Next(testServerSite, "6")
	c.RequestSnapshot()
	for i := range 4 {
		switch m := p.recv(t).(type) {
		case *wire.GetSnapshot:
			return
		case *wire.GetChanges:
			if m.Since != 5 {
				t.Fatalf("pull %d since %d", i, m.Since)
			}
			p.send(t, &wire.Changes{Cursor: 6, Chain: ch6, ChangeSets: bad})
		default:
			t.Fatalf("unexpected %T", m)
		}
		for _, m := range p.barrier(t) {
			if _, ok := m.(*wire.GetSnapshot); ok {
				return
			}
		}
		clk.Advance(time.Hour) // past any pull backoff
	}
	t.Fatal("the snapshot RequestSnapshot asked for never started while the pull kept failing")
}
