//go:build !js

package relay

import (
	"context"
	"testing"
	"time"

	"github.com/replica-sync/replica/wire"
)

// TestApplyResultPosition (wire version 9): apply_result tells the sender
// where the log holds what its request appended (first, cursor, the chain
// value at cursor) and the horizon marks at first-1 … cursor with the
// sender's siteHlc, as a push_changes of the same entries would; a resend
// that appends nothing tells no position, and a batch mixing held and new
// transactions tells the new ones' cursors.
func TestApplyResultPosition(t *testing.T) {
	clock := newManualClock()
	r := startRelay(t, Config{Clock: clock})
	repA := newReplica(t, behindClock{clock, 40 * 24 * time.Hour})
	a := connectAs(t, r, "acme", repA)
	b := connect(t, r, "acme")

	first := append(localSets(t, repA), insertStops(t, repA, "t", 2)...)
	res := a.apply("apply-1", first)
	chains := chainOf(first)
	if res.First != 1 || res.Cursor != 3 || res.Chain != chains[3] || len(res.Horizons) != 0 {
		t.Fatalf("apply_result position %d … %d chain %s marks %+v, want 1 … 3 chain %s, no mark", res.First, res.Cursor, res.Chain, res.Horizons, chains[3])
	}
	if p := recvType[*wire.PushChanges](b); p.Cursor != 3 || p.Chain != res.Chain {
		t.Fatalf("push_changes cursor %d chain %s, want the apply_result's 3 %s", p.Cursor, p.Chain, res.Chain)
	}

	// A resend: nothing appended, no position.
	if res := a.apply("apply-2", first); res.Cursor != 0 || res.First != 0 || !res.Chain.IsZero() {
		t.Fatalf("resend: apply_result position %d … %d chain %s, want none", res.First, res.Cursor, res.Chain)
	}

	// A held transaction and a new one: the new one's cursor alone.
	next := insertStops(t, repA, "u", 1)
	res = a.apply("apply-3", append(first[1:2:2], next...))
	chains = chainOf(append(first, next...))
	if res.First != 4 || res.Cursor != 4 || res.Chain != chains[4] {
		t.Fatalf("mixed resend: apply_result position %d … %d chain %s, want 4 … 4 chain %s", res.First, res.Cursor, res.Chain, chains[4])
	}
	recvType[*wire.PushChanges](b)

	// A mark at the head (4), then a push: its apply_result carries the
	// mark at first-1 with the sender's siteHlc.
	if err := r.srv.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	later := insertStops(t, repA, "v", 2)
	res = a.apply("apply-4", later)
	if res.First != 5 || res.Cursor != 6 {
		t.Fatalf("after the mark: apply_result position %d … %d, want 5 … 6", res.First, res.Cursor)
	}
	if len(res.Horizons) != 1 || res.Horizons[0].Cursor != 4 || res.Horizons[0].Chain != chains[4] ||
		!res.Horizons[0].SiteHLCStated || res.Horizons[0].SiteHLC != next[0].HLC {
		t.Fatalf("after the mark: apply_result marks %+v, want one at 4 with chain %s and siteHlc %s", res.Horizons, chains[4], next[0].HLC)
	}
	p := recvType[*wire.PushChanges](b)
	if len(p.Horizons) != 1 || p.Horizons[0].Cursor != 4 || p.Horizons[0].Wall != res.Horizons[0].Wall {
		t.Fatalf("push_changes marks %+v, want the apply_result's %+v", p.Horizons, res.Horizons)
	}
	// The next push after it carries it no more.
	if res := a.apply("apply-5", insertStops(t, repA, "w", 1)); res.First != 7 || len(res.Horizons) != 0 {
		t.Fatalf("second push after the mark: position %d … %d marks %+v, want 7, no mark", res.First, res.Cursor, res.Horizons)
	}
}
