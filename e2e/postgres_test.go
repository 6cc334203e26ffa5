//go:build !js

package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/pgtest"
	"github.com/replica-sync/replica/relay"
	"github.com/replica-sync/replica/relay/pgstore"
)

// TestTwoDevicesTwoRelaysOnPostgres: two relays share one PostgreSQL
// database (relay/pgstore; two Stores, as two processes would have), and
// each browser device syncs with another one of them: a trip added on A
// (relay 1) shows on B (relay 2), B's edit shows on A, A's delete leaves
// B, and a third device bootstrapping from relay 2 gets what both wrote.
func TestTwoDevicesTwoRelaysOnPostgres(t *testing.T) {
	requireBrowser(t)
	url := pgtest.NewDatabase(t)
	relayOn := func() *relayServer {
		st, err := pgstore.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return startRelayConfig(t, relay.Config{Storage: st})
	}
	r1, r2 := relayOn(), relayOn()
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r1.URL + "?db=trips")
	bb := b.newDevice("B").open(r2.URL + "?db=trips")
	a.waitStatus("synced", syncTimeout)
	bb.waitStatus("synced", syncTimeout)

	a.addTrip("Lisbon", "Portugal", "1200")
	bb.waitJS("A's trip on B, through the other relay", `tripEl("Lisbon")`, syncTimeout)
	bb.addTrip("Porto", "Portugal", "300")
	a.waitJS("B's trip on A", `tripEl("Porto")`, syncTimeout)

	bb.eval(`const i = tripEl("Lisbon").querySelector(".trip-title"); i.focus(); i.select(); return null;`, nil)
	bb.do(chromedp.KeyEvent("Lisbon and Sintra\r"))
	a.waitJS("B's edit on A", `tripEl("Lisbon and Sintra")`, syncTimeout)

	a.eval(`tripEl("Porto").querySelector('[data-action="delete-trip"]').click(); return null;`, nil)
	bb.waitJS("A's delete on B", `!tripEl("Porto")`, syncTimeout)

	c := b.newDevice("C").open(r2.URL + "?db=trips")
	c.waitStatus("synced", syncTimeout)
	waitSame(t, "A, B and C", syncTimeout, []string{"trips"}, a, bb, c)
}
