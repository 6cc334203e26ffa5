//go:build !js

package e2e

import (
	"testing"
	"time"
)

// TestTwoTabs: two tabs of one device share the replica. With syncing off
// (no relay involved), a write in tab 1 appears in tab 2's live list
// through the BroadcastChannel; online, only one tab holds the relay
// connection; closing that tab hands the connection to the other within 2
// seconds, and syncing goes on.
func TestTwoTabs(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	dev := b.newDevice("device")
	url := r.URL + "?db=tabs"
	tab1 := dev.open(url)
	tab1.name = "tab 1"
	tab1.waitStatus("synced", syncTimeout)
	tab2 := dev.open(url)
	tab2.name = "tab 2"
	leaders := func() (bool, bool) {
		var l1, l2 bool
		tab1.eval(`return db.isLeader;`, &l1)
		tab2.eval(`return db.isLeader;`, &l2)
		return l1, l2
	}
	if l1, l2 := leaders(); !l1 || l2 {
		t.Fatalf("leaders: tab 1 %v, tab 2 %v; want tab 1 only", l1, l2)
	}

	// Offline (in every tab's name): tab 1's write reaches tab 2 without the relay.
	tab1.goOffline()
	tab2.waitStatus("offline", syncTimeout)
	stored := r.metric(t, "replica_relay_changesets_stored_total")
	tab1.addTrip("Between tabs", "Here", "5")
	tab2.waitJS("tab 1's write in tab 2's list", `tripEl("Between tabs")`, syncTimeout)
	tab2.waitJS("the other-tab entry in tab 2's log", `app.log.some((e) => e.kind === "tab")`, syncTimeout)
	if n := r.metric(t, "replica_relay_changesets_stored_total"); n != stored {
		t.Errorf("the relay stored %v ChangeSets while offline, want %v", n, stored)
	}
	if n := r.metric(t, "replica_relay_connections"); n != 0 {
		t.Errorf("%v relay connections while offline", n)
	}
	tab2.shot("tab2-offline-write-from-tab1")

	// Back online, pressed in the follower tab: one connection, held by tab 1.
	tab2.goOnline()
	tab1.waitStatus("synced", syncTimeout)
	r.waitMetric(t, "replica_relay_connections", "one connection", func(v float64) bool { return v == 1 }, syncTimeout)
	if l1, l2 := leaders(); !l1 || l2 {
		t.Fatalf("leaders: tab 1 %v, tab 2 %v; want tab 1 only", l1, l2)
	}
	if got := tab2.evalString(`return document.getElementById("info-leader").textContent;`); got != "syncs through another tab" {
		t.Errorf("tab 2 says %q", got)
	}
	other := b.newDevice("other").open(url)
	other.waitJS("the tabs' write on another device", `tripEl("Between tabs")`, syncTimeout)
	if n := r.metric(t, "replica_relay_connections"); n != 2 {
		t.Errorf("%v relay connections with one device of two tabs and another device, want 2", n)
	}

	// Close the leader tab: tab 2 takes over within 2 seconds.
	start := time.Now()
	tab1.close()
	tab2.waitJS("leadership in tab 2", `db.isLeader`, 5*time.Second)
	led := time.Since(start)
	if led > 2*time.Second {
		t.Errorf("tab 2 became leader %v after tab 1 closed, want within 2 s", led)
	}
	tab2.waitJS("tab 2's own session to be synced", `app.syncHistory.some((s) => s.leader && s.status === "synced")`, syncTimeout)
	r.waitMetric(t, "replica_relay_connections", "tab 2's connection beside the other device's", func(v float64) bool { return v == 2 }, syncTimeout)
	t.Logf("hand-over: tab 2 led %v after tab 1 closed, and was connected after %v", led.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if got := tab2.evalString(`return document.getElementById("info-leader").textContent;`); got != "holds the relay connection" {
		t.Errorf("tab 2 says %q", got)
	}

	// Sync goes on, both ways.
	other.addTrip("From the other device", "There", "7")
	tab2.waitJS("the other device's write in tab 2", `tripEl("From the other device")`, syncTimeout)
	tab2.addTrip("From tab 2", "Here", "8")
	other.waitJS("tab 2's write on the other device", `tripEl("From tab 2")`, syncTimeout)
	waitSame(t, "the same trips", syncTimeout, []string{"trips"}, tab2, other)
	tab2.shot("tab2-leader")
}

// TestSecondTabKeepsConnection: opening a second tab of a device that is
// synced neither drops the leader tab's relay connection nor leaves the new
// tab showing a stale state: it shows "synced" at once.
//
// Every page calls db.sync.connect on load (as any app would); in a tab
// that is not the leader that records the target and shares it with the
// other tabs, and the leader's client.Connect with the same target must
// leave its session alone (it used to close its socket and dial anew,
// interrupting a snapshot being downloaded). And a new tab must learn the
// leader's state from the answer to its hello, not from the leader's next
// syncState event.
func TestSecondTabKeepsConnection(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	dev := b.newDevice("device")
	url := r.URL + "?db=second-tab"
	tab1 := dev.open(url)
	tab1.waitStatus("synced", syncTimeout)
	accepted := r.metric(t, "replica_relay_connections_total")
	tab2 := dev.open(url)
	tab2.name = "tab 2"
	tab2.waitStatus("synced", 5*time.Second)
	// A reconnect would have come within the time tab 2 took to show synced.
	if n := r.metric(t, "replica_relay_connections_total"); n != accepted {
		t.Errorf("the relay accepted %v connections before tab 2 opened and %v after: the leader tab reconnected", accepted, n)
	}
}
