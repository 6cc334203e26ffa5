//go:build !js

package relay

import (
	"testing"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// repair pushes sets as a repair push and returns the apply_result and
// the push_changes received before it (the sender's own repair entries
// reach it too).
func (c *client) repair(requestID string, sets []model.ChangeSet) (*wire.ApplyResult, []*wire.PushChanges) {
	c.t.Helper()
	c.send(&wire.ApplyChanges{RequestID: requestID, Repair: true, ChangeSets: sets})
	var pushes []*wire.PushChanges
	for {
		m := c.recv()
		if pc, ok := m.(*wire.PushChanges); ok {
			pushes = append(pushes, pc)
			continue
		}
		res, ok := m.(*wire.ApplyResult)
		if !ok {
			c.t.Fatalf("got %s (%+v), want apply_result", m.Type(), describe(m))
		}
		if res.RequestID != requestID {
			c.t.Fatalf("apply_result requestId %q, want %q", res.RequestID, requestID)
		}
		return res, pushes
	}
}

// peerFacts returns every fact of other sites e holds (engine.PeerFacts,
// all pages).
func peerFacts(t *testing.T, e *engine.Engine) []model.ChangeSet {
	t.Helper()
	var out []model.ChangeSet
	var pos []byte
	for {
		page, next, err := e.PeerFacts(pos, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if next == nil {
			return out
		}
		pos = next
	}
}

// TestRepairPush (wire version 6, "Repair pushes"): a relay new to the
// database (wiped) gets back, from device B, the facts of site X that B
// holds, X's deleted stop included; the entries reach X (their author)
// and every other connection, B (their sender) included, in push_changes
// and in pulls; a plain
// push of another site's ChangeSets, and a repair push of the sender's
// own, are refused; a repair that changes nothing is not appended; repair
// entries do not count as X's own (siteHlc stays zero).
func TestRepairPush(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	repX, repB, repC := newReplica(t, clock), newReplica(t, clock), newReplica(t, clock)
	insertStops(t, repX, "t1", 3)
	deleteStop(t, repX)
	if _, err := repB.ApplyChanges(localSets(t, repX)); err != nil {
		t.Fatal(err)
	}
	x := connectAs(t, r, "acme", repX)
	b := connectAs(t, r, "acme", repB)
	c := connectAs(t, r, "acme", repC)

	held := peerFacts(t, repB)
	if len(held) == 0 {
		t.Fatal("B holds no facts of X")
	}
	// A plain push of X's ChangeSets from B is refused, as before.
	b.send(&wire.ApplyChanges{RequestID: "plain", ChangeSets: held})
	if e := b.expectError(wire.CodeApplyChangesRefused); e.RequestID != "plain" {
		t.Fatalf("refusal for %q", e.RequestID)
	}
	// A repair push of B's own ChangeSets too.
	own := insertStops(t, repB, "b", 1)
	b.send(&wire.ApplyChanges{RequestID: "own", Repair: true, ChangeSets: own})
	if e := b.expectError(wire.CodeApplyChangesRefused); e.RequestID != "own" {
		t.Fatalf("refusal for %q", e.RequestID)
	}

	res, bPushes := b.repair("repair-1", held)
	if res.Applied == 0 {
		t.Fatalf("repair applied nothing: %+v", res.ApplyResult)
	}
	// X, their author, C, and B, their sender, get the entries: B merges
	// them in their place in the log too, after the marks before them
	// (a mark it applies after its repair push would otherwise prune
	// there what every other replica holds again after it: the
	// simulator's seeds 41 and 66).
	for _, tc := range []struct {
		name string
		cl   *client
	}{{"author", x}, {"other", c}, {"sender", b}} {
		var pc *wire.PushChanges
		if tc.cl == b {
			if len(bPushes) != 1 {
				t.Fatalf("sender: %d push_changes before its apply_result, want 1", len(bPushes))
			}
			pc = bPushes[0]
		} else {
			pc = recvType[*wire.PushChanges](tc.cl)
		}
		if len(pc.ChangeSets) != len(held) || pc.Cursor != uint64(len(held)) {
			t.Fatalf("%s: push_changes with %d ChangeSets up to cursor %d, want %d", tc.name, len(pc.ChangeSets), pc.Cursor, len(held))
		}
		got, cur, _ := tc.cl.pullAll(0)
		if len(got) != len(held) || cur != uint64(len(held)) {
			t.Fatalf("%s: pulled %d ChangeSets up to %d, want %d", tc.name, len(got), cur, len(held))
		}
	}
	// X's pull merges them back: a fresh replica of X's site would hold
	// the deleted stop's tombstone again.
	rebuilt := newReplica(t, clock)
	if _, err := rebuilt.ApplyChanges(held); err != nil {
		t.Fatal(err)
	}
	want, _ := repX.Query("stops", engine.Query{})
	have, _ := rebuilt.Query("stops", engine.Query{})
	if len(have) != len(want) {
		t.Fatalf("the repair entries rebuild %d stops, X holds %d", len(have), len(want))
	}

	// C repairs the same facts: nothing changes, nothing is appended.
	if _, err := repC.ApplyChanges(held); err != nil {
		t.Fatal(err)
	}
	res, _ = c.repair("repair-2", peerFacts(t, repC))
	if res.Applied != 0 {
		t.Fatalf("second repair applied %d facts", res.Applied)
	}
	x.ping()
	if _, cur, _ := x.pullAll(0); cur != uint64(len(held)) {
		t.Fatalf("a repair that changed nothing moved the head to %d", cur)
	}
	// Repair entries are not X's own: a reconnect of X is told it holds
	// none of X's transactions, so X pushes them all.
	ack := connectAs(t, r, "acme", repX).ack
	if !ack.SiteHLCStated || !ack.SiteHLC.IsZero() {
		t.Fatalf("X's siteHlc = %s (stated %v), want zero", ack.SiteHLC, ack.SiteHLCStated)
	}
}
