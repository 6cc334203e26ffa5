//go:build !js

package relay

import (
	"context"
	"testing"
	"time"

	"github.com/replica-sync/replica/wire"
)

// TestResendAfterMarkRevivesPrunedRow (review): a resend of a transaction
// the log holds adds nothing to the log (checkResend), but apply still
// merges it into the relay's replica. After a horizon mark pruned the row
// it wrote (delete-wins, deleted before the mark's wall), the resend
// revives the row in the merged replica, and so in every later snapshot,
// while no replica pulling the log ever sees it: the relay's replica and
// its log disagree for good. A client resends whatever its sent watermark
// does not cover (a lost ack), so a client that keeps facts the relay
// pruned (see client TestReplaceDropsOwnFactsTheRelayHeld) makes this
// happen. Fails on main.
func TestResendAfterMarkRevivesPrunedRow(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	rep := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", rep)
	sets := deleteStop(t, rep) // insert, then delete, stamped 40 days ago
	a.apply("apply-1", sets)
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := connect(t, r, "acme")
	if s := collectSnapshot(t, b, &wire.GetSnapshot{}); s.rows["stops"] != 0 {
		t.Fatalf("after the mark the snapshot carries %d stops rows, want 0: the test does not reach the case", s.rows["stops"])
	}
	a.apply("apply-again", sets[:1]) // the insert, resent (its ack was lost)
	if s := collectSnapshot(t, b, &wire.GetSnapshot{}); s.rows["stops"] != 0 {
		t.Errorf("after a resend of the pruned row's insert the snapshot carries %d stops rows, want 0: the log holds no entry that revives it", s.rows["stops"])
	}
}
