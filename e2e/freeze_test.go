//go:build !js

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// setLifecycle puts the tab into a Web lifecycle state ("frozen" or
// "active") as Chromium does to background tabs (CDP
// Page.setWebLifecycleState): frozen, its task queues stop (no timers,
// no event handlers, no IndexedDB callbacks) after its freeze event.
func (p *page) setLifecycle(state cdppage.SetWebLifecycleStateState) {
	p.t.Helper()
	if _, err := chromedp.Call(p.ctx, cdppage.SetWebLifecycleState, cdppage.SetWebLifecycleStateParams{State: state}); err != nil {
		p.t.Fatalf("%s: Page.setWebLifecycleState %s: %v", p.name, state, err)
	}
}

// timedInsert inserts a trip with db.insert and returns how long it took
// to settle, in ms, or -1 if it had not settled after limit.
func (p *page) timedInsert(title string, limit time.Duration) float64 {
	p.t.Helper()
	var ms float64
	p.eval(fmt.Sprintf(`const t0 = performance.now();
		const r = await Promise.race([
			db.insert("trips", {title: %s, destination: "Frozen", budget: 1}).then(() => true),
			new Promise((res) => setTimeout(() => res(false), %d)),
		]);
		return r ? performance.now() - t0 : -1;`, jsString(title), limit.Milliseconds()), &ms)
	return ms
}

// TestFrozenLeaderTab: three tabs of one device, syncing. Chromium freezes
// the leader tab (as it does to background tabs). On its freeze event the
// tab gives up leadership and its relay connection: another tab leads
// within 2 seconds and syncs, a write in any other tab settles at once
// (nothing waits on the frozen tab), and the followers never show
// "synced" while no tab syncs. Resumed, the tab rejoins as a follower:
// still one connection for the device.
func TestFrozenLeaderTab(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	dev := b.newDevice("device")
	url := r.URL + "?db=frozen"
	tabs := make([]*page, 3)
	for i := range tabs {
		tabs[i] = dev.open(url)
		tabs[i].name = fmt.Sprintf("tab %d", i+1)
		tabs[i].waitStatus("synced", syncTimeout)
	}
	other := b.newDevice("other").open(url)
	other.waitStatus("synced", syncTimeout)
	var lead bool
	tabs[0].eval(`return db.isLeader;`, &lead)
	if !lead {
		t.Fatal("tab 1 (opened first) does not lead")
	}
	r.waitMetric(t, "replica_relay_connections", "one connection per device", func(v float64) bool { return v == 2 }, syncTimeout)
	accepted := r.metric(t, "replica_relay_connections_total")

	// Writes in every tab while syncing, then freeze the leader.
	for i, p := range tabs {
		if ms := p.timedInsert(fmt.Sprintf("Before freeze %d", i+1), 10*time.Second); ms < 0 {
			t.Fatalf("%s: db.insert did not settle in 10 s before any freeze", p.name)
		}
	}
	// The leader is busy when it freezes: it pushes a follower's writes
	// and applies the other device's, so IndexedDB transactions of its
	// are running (a frozen tab runs none of their callbacks: left open,
	// they would hold every object store's lock for the whole freeze).
	for _, p := range tabs[1:] {
		p.eval(`window.ledAt = 0; db.on("leaderChange", (e) => { if (e.isLeader) window.ledAt = Date.now(); }); return null;`, nil)
	}
	// The leader writes too: its own calls in flight at the freeze must
	// settle after it resumes, as if nothing happened.
	// Each burst insert has a title of its own: none may be written twice
	// (in worker mode the Worker is replaced at the freeze, and the
	// inserts it never answered are settled from its write journal or
	// sent again), and each that settled must be there once.
	const burst = `window.burstErrors = []; window.burstPending = 0; window.burstOK = [];
		window.burstTag = "Burst " + Math.random().toString(36).slice(2) + " ";
		let n = 0;
		window.burst = setInterval(() => {
			burstPending++;
			const title = burstTag + (++n);
			db.insert("trips", {title, budget: 2}).then(
				(row) => { burstPending--; if (row.title === title) burstOK.push(title); else burstErrors.push("the insert of " + title + " settled with " + JSON.stringify(row)); },
				(e) => { burstPending--; burstErrors.push(e.code + ": " + e.message); });
		}, 10); return null;`
	for _, p := range []*page{tabs[0], tabs[2], other} {
		p.eval(burst, nil)
	}
	time.Sleep(300 * time.Millisecond)
	frozenAt := time.Now()
	tabs[0].setLifecycle(cdppage.SetWebLifecycleStateStateFrozen)
	tabs[2].eval(`clearInterval(window.burst); return null;`, nil)
	other.eval(`clearInterval(window.burst); return null;`, nil)

	// A write in a follower never waits on the frozen tab.
	if ms := tabs[1].timedInsert("During freeze", 10*time.Second); ms < 0 {
		t.Errorf("tab 2: db.insert did not settle within 10 s of freezing the leader tab")
	} else {
		t.Logf("tab 2: db.insert settled in %.1f ms with the leader tab frozen", ms)
	}

	// Another tab leads within 2 s (as its leaderChange listener saw it).
	var leader *page
	var ledAt int64
	for leader == nil {
		for _, p := range tabs[1:] {
			var at int64
			p.eval(`return window.ledAt;`, &at)
			if at != 0 {
				leader, ledAt = p, at
			}
		}
		if leader == nil && time.Since(frozenAt) > 10*time.Second {
			t.Fatalf("no tab leads %v after the leader tab froze", time.Since(frozenAt).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	led := time.Duration(ledAt-frozenAt.UnixMilli()) * time.Millisecond
	t.Logf("%s leads %v after the freeze", leader.name, led)
	if led > 2*time.Second {
		t.Errorf("%s led %v after the leader tab froze, want within 2 s", leader.name, led)
	}
	follower := tabs[1]
	if follower == leader {
		follower = tabs[2]
	}

	// Sync goes on: the write made during the freeze reaches the other
	// device, and the other device's reaches both live tabs.
	other.waitJS("tab 2's write made during the freeze", `tripEl("During freeze")`, syncTimeout)
	other.addTrip("From the other device", "There", "7")
	leader.waitJS("the other device's write", `tripEl("From the other device")`, syncTimeout)
	follower.waitJS("the other device's write", `tripEl("From the other device")`, syncTimeout)
	r.waitMetric(t, "replica_relay_connections", "the new leader's connection beside the other device's", func(v float64) bool { return v == 2 }, syncTimeout)

	// The followers did not go on showing "synced" while no tab synced:
	// the live follower's history after the freeze shows no tab syncing
	// ("connecting") before the new leader's states.
	var shown []string
	follower.eval(fmt.Sprintf(`const since = performance.timeOrigin; return app.syncHistory.filter((s) => since + s.t >= %d).map((s) => s.status + (s.leader ? "/leader" : ""));`, frozenAt.UnixMilli()), &shown)
	t.Logf("%s's sync states since the freeze: %v", follower.name, shown)
	if !slices.Contains(shown, "connecting") {
		t.Errorf("%s showed %v from the freeze on: never that no tab was syncing", follower.name, shown)
	}

	// Resumed, tab 1 is a follower and the device still has one connection.
	if ms := tabs[1].timedInsert("During freeze, later", 10*time.Second); ms < 0 {
		t.Errorf("tab 2: a second db.insert did not settle within 10 s with the leader tab frozen")
	} else {
		t.Logf("tab 2: a second db.insert settled in %.1f ms with the leader tab frozen", ms)
	}
	tabs[0].setLifecycle(cdppage.SetWebLifecycleStateStateActive)
	tabs[0].eval(`clearInterval(window.burst); return null;`, nil)
	tabs[0].waitJS("tab 1's writes made before the freeze to settle", `burstPending === 0`, syncTimeout)
	var errs []string
	tabs[0].eval(`return burstErrors;`, &errs)
	if len(errs) > 0 {
		t.Errorf("tab 1: %d writes in flight at the freeze failed, the first: %s", len(errs), errs[0])
	}
	var burstN struct{ OK, Stored, Distinct int }
	tabs[0].eval(`const rows = (await db.query("trips")).filter((r) => r.title.startsWith(burstTag));
		return {OK: burstOK.length, Stored: rows.length, Distinct: new Set(rows.map((r) => r.title)).size};`, &burstN)
	t.Logf("tab 1: %d burst inserts settled, %d stored", burstN.OK, burstN.Stored)
	if burstN.Stored != burstN.Distinct || burstN.Stored != burstN.OK {
		t.Errorf("tab 1: %d burst inserts settled, %d rows stored, %d distinct: want each settled insert stored once", burstN.OK, burstN.Stored, burstN.Distinct)
	}
	tabs[0].waitJS("tab 1 to show the new leader's state", `!db.isLeader && db.sync.state.status === "synced"`, syncTimeout)
	tabs[0].waitJS("the other device's write in tab 1", `tripEl("From the other device")`, syncTimeout)
	tabs[0].addTrip("After resume", "Here", "3")
	other.waitJS("tab 1's write after resuming", `tripEl("After resume")`, syncTimeout)
	if n := r.metric(t, "replica_relay_connections"); n != 2 {
		t.Errorf("%v relay connections after tab 1 resumed, want 2 (one per device)", n)
	}
	t.Logf("the relay accepted %v connections from the freeze on (the new leader's)", r.metric(t, "replica_relay_connections_total")-accepted)
	waitSame(t, "the same trips", syncTimeout, []string{"trips"}, tabs[0], tabs[1], tabs[2], other)
}
