//go:build !js

package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDurability: a write on A survives a reload made right after it
// resolved; a write made offline survives closing the tab, and when the
// page is opened again (online) it reaches B exactly once.
func TestDurability(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	devA := b.newDevice("A")
	a := devA.open(r.URL + "?db=durable")
	a.waitStatus("synced", syncTimeout)

	// Write, then reload in the same task as the write's resolution.
	a.eval(`window.beforeReload = true;
		await db.insert("trips", {title: "Reykjavik", destination: "Iceland", budget: 2100, createdAt: new Date()});
		setTimeout(() => location.reload(), 0); // at once, in the next task
		return null;`, nil)
	a.waitNewDocument("beforeReload")
	a.waitJS("the trip after the reload", `tripEl("Reykjavik")`, syncTimeout)
	if got := a.evalString(`return (await db.query("trips", {where: {title: "Reykjavik"}})).map((r) => r.destination + " " + r.budget).join();`); got != "Iceland 2100" {
		t.Errorf("after the reload: %q", got)
	}
	a.waitStatus("synced", syncTimeout)
	// "synced" means caught up with the relay; the trip's push may still be
	// on its way (under load it was not acknowledged before going offline,
	// and B below never saw it). The sync bar's unsent count says when.
	a.waitJS(`"0 unsent": the trip was pushed`, `document.getElementById("sync-pending").dataset.count === "0"`, syncTimeout)

	// Offline: write through the form, close the tab.
	a.goOffline()
	a.addTrip("Written offline", "Nowhere", "10")
	a.shot("A-offline-write")
	a.close()

	// B syncs meanwhile and does not have it.
	bb := b.newDevice("B").open(r.URL + "?db=durable")
	bb.waitStatus("synced", syncTimeout)
	bb.waitJS("A's first trip on B", `tripEl("Reykjavik")`, syncTimeout)
	if bb.evalString(`return String(!!tripEl("Written offline"));`) != "false" {
		t.Fatal("B has the offline write before A came back")
	}

	// Reopen A: the page connects, pushes the write; B gets it once.
	a2 := devA.open(r.URL + "?db=durable")
	a2.waitJS("the offline write after reopening", `tripEl("Written offline")`, syncTimeout)
	a2.waitStatus("synced", syncTimeout)
	bb.waitJS("the offline write on B", `tripEl("Written offline")`, syncTimeout)
	// Give a duplicate every chance to show: A reloads (reconnects) once more.
	a2.do(chromedp.Reload())
	a2.waitReady()
	a2.waitStatus("synced", syncTimeout)
	a2.eval(`await db.insert("trips", {title: "Marker", createdAt: new Date()}); return null;`, nil)
	bb.waitJS("a later write from A", `tripEl("Marker")`, syncTimeout)
	rows := waitSame(t, "the same trips on A and B", syncTimeout, []string{"trips"}, a2, bb)
	if got := bb.evalString(`return titles().filter((t) => t === "Written offline").length + " of " + (await db.count("trips", {where: {title: "Written offline"}}));`); got != "1 of 1" {
		t.Errorf("B shows the offline write %s times in the list (list of rows), want 1 of 1; trips: %s", got, rows["trips"])
	}
	if n := r.metric(t, "replica_relay_changesets_stored_total"); n < 3 {
		t.Errorf("relay stored %v ChangeSets", n)
	}
	bb.shot("B-got-offline-write")
}

// TestUnsentCountOffline: the count of local changes not yet acknowledged
// by the relay (db.sync.state.pending, shown in the sync bar) counts writes
// made offline, and drops to 0 once they are pushed.
//
// (It failed while jsbridge computed pending only when its sync client
// reported a state change or an acknowledged push: it has no client while
// disconnected, so the count stayed 0 however many writes waited offline.)
func TestUnsentCountOffline(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=unsent")
	a.waitStatus("synced", syncTimeout)
	a.goOffline()
	a.addTrip("One", "", "1")
	a.addTrip("Two", "", "2")
	a.waitJS(`"2 unsent" in the sync bar while offline (db.sync.state.pending = 2)`,
		`document.getElementById("sync-pending").dataset.count === "2"`, syncTimeout)
	a.goOnline()
	a.waitJS(`"0 unsent" once synced`, `document.getElementById("sync-pending").dataset.count === "0"`, syncTimeout)
}
