//go:build !js

package pgstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestRoundTripsPerApply: an apply_changes of one new transaction costs
// the relay that applies it at most four round trips to PostgreSQL (the
// writer lock; BEGIN with everything the apply reads; the writes with the
// NOTIFY and the COMMIT; the unlock), and each other relay holding a
// connection of the database at most two to push it (its read and its
// snapshot's end) (relay/doc.go § Several relays on PostgreSQL). Counts,
// not times: a regression that adds a read per apply fails it.
func TestRoundTripsPerApply(t *testing.T) {
	const applies = 50
	s := newSetup(t, "pg3")
	db := "trips"
	w := newWriter(t)
	pusher := dialBench(t, s.urls[0], db, w.e.SiteID())
	var readers []*benchConn
	for _, u := range s.urls[1:] {
		readers = append(readers, dialBench(t, u, db, randomSite(t)))
	}
	// waitPush reads c's frames until a push_changes reaches cursor.
	waitPush := func(c *benchConn, cursor uint64) {
		for {
			m, err := c.recv()
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := m.(*wire.PushChanges); ok && p.Cursor >= cursor {
				return
			}
		}
	}
	pusher.send(&wire.ApplyChanges{RequestID: "warm", ChangeSets: w.sets(t)})
	cur := pusher.applied().Cursor
	for _, r := range readers {
		waitPush(r, cur)
	}
	own, others := s.tripsNow(0), s.tripsNow(-1)-s.tripsNow(0)
	for i := range applies {
		pusher.send(&wire.ApplyChanges{RequestID: strconv.Itoa(i), ChangeSets: []model.ChangeSet{w.tx(t)}})
		cur = pusher.applied().Cursor
		// One at a time, so that each apply's catch-ups are counted
		// alone (a relay behind by several catches up in one read).
		for _, r := range readers {
			waitPush(r, cur)
		}
	}
	// The last unlock and the other relays' last snapshot ends run in
	// the background: let them land.
	time.Sleep(200 * time.Millisecond)
	// Slack for the relays' head checks every 2 s (two round trips each).
	slack := int64(2 * len(s.urls) * 2)
	t.Logf("round trips per apply: relay 1 %.2f, the other relays %.2f", float64(s.tripsNow(0)-own)/applies, float64(s.tripsNow(-1)-s.tripsNow(0)-others)/applies)
	if n := s.tripsNow(0) - own; n > 4*applies+slack {
		t.Errorf("relay 1 made %d round trips for %d applies (%.2f each), want at most 4 each", n, applies, float64(n)/applies)
	}
	if n := s.tripsNow(-1) - s.tripsNow(0) - others; n > 2*int64(len(readers))*applies+slack {
		t.Errorf("the other relays made %d round trips for %d applies (%.2f each), want at most 2 each per relay", n, applies, float64(n)/applies)
	}
}
