//go:build !js

package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPhoneWidth: the demo at a phone's width (390 CSS px): nothing
// overflows sideways, the sync bar and its toggle are on screen, and a
// user can add a sample trip, import the cities excerpt with the button
// and search it. It also logs the time to the first interactive render,
// cold (a new profile) and warm (a reload).
func TestPhoneWidth(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	phone := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	p := b.newDevice("phone").open(r.URL+"?db=phone", phone)
	var cold float64
	p.eval(`return app.timing.firstRender;`, &cold)
	p.waitStatus("synced", syncTimeout)

	noOverflow := func(where string) {
		t.Helper()
		var m struct {
			Scroll, Inner int
			Toggle        float64
		}
		p.eval(`return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth, toggle: document.getElementById("sync-toggle").getBoundingClientRect().right};`, &m)
		if m.Inner != 390 || m.Scroll > m.Inner || m.Toggle > float64(m.Inner) {
			t.Errorf("%s: page %d px wide in a %d px viewport, sync toggle ends at %.0f px", where, m.Scroll, m.Inner, m.Toggle)
		}
	}
	p.click("#sample-trip")
	p.waitJS("the sample trip", `tripEl("Portugal by train") && tripEl("Portugal by train").querySelectorAll(".stop").length === 4`, syncTimeout)
	noOverflow("trips")
	p.shot("trips")

	p.click("#tab-cities")
	p.waitJS("the cities view", `!document.getElementById("view-cities").hidden && document.getElementById("city-country").options.length > 100`, syncTimeout)
	p.click("#import")
	p.waitJS("the import to finish", `document.getElementById("import-label").dataset.done === "true"`, 2*time.Minute)
	p.do(chromedp.SendKeys(chromedp.CSS("#city-q"), "San"))
	p.waitJS("the search results", `+document.getElementById("city-rows").dataset.count > 0 && document.getElementById("city-count").dataset.count === String(await db.count("cities", {where: {search: {prefix: "san"}}}))`, syncTimeout)
	if n := p.evalString(`return String(await db.count("cities"));`); n != "3016" {
		t.Errorf("%s cities after the import, want 3016", n)
	}
	noOverflow("cities")
	p.shot("cities")

	p.do(chromedp.Reload())
	p.waitReady()
	var warm float64
	p.eval(`return app.timing.firstRender;`, &warm)
	t.Logf("first interactive render (ms since navigation start, trips listed and forms enabled): cold %.0f ms, warm (reload) %.0f ms", cold, warm)
}

// TestSyncLatency: trips written one after another on device A all reach
// device B's live subscription, in order; it logs the time from each commit
// on A (db.insert resolved) to B's subscription callback: over 200 writes
// with REPLICA_FIGURES=1, else 20.
func TestSyncLatency(t *testing.T) {
	r := startRelay(t)
	b := newBrowser(t, "")
	a := b.newDevice("A").open(r.URL + "?db=latency")
	bb := b.newDevice("B").open(r.URL + "?db=latency")
	a.waitStatus("synced", syncTimeout)
	bb.waitStatus("synced", syncTimeout)
	bb.eval(`window.seen = new Map();
		window.applied = [];
		db.on("remoteChange", () => applied.push(performance.timeOrigin + performance.now()));
		db.subscribe("trips", {where: {title: {prefix: "lat-"}}}, (rows) => {
			const now = performance.timeOrigin + performance.now();
			for (const r of rows) if (!seen.has(r.title)) seen.set(r.title, now);
		});
		return null;`, nil)
	n := 20
	if figures() {
		n = 200
	}
	lat := make([]float64, 0, n)   // commit on A to B's subscription callback
	apply := make([]float64, 0, n) // commit on A to B's remoteChange event
	for i := range n {
		title := fmt.Sprintf("lat-%03d", i)
		var committed float64
		a.eval(`await db.insert("trips", {title: `+jsString(title)+`, createdAt: new Date()}); return performance.timeOrigin + performance.now();`, &committed)
		var arrived struct{ Sub, Applied float64 }
		bb.eval(`const sub = await wait("`+title+` on B", () => seen.get(`+jsString(title)+`));
			return {sub, applied: applied.find((t) => t > `+jsFloat(committed)+`) || sub};`, &arrived)
		lat = append(lat, arrived.Sub-committed)
		apply = append(apply, arrived.Applied-committed)
	}
	if got := bb.evalString(`return [...seen.keys()].join();`); got != strings.Join(func() []string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf("lat-%03d", i))
		}
		return s
	}(), ",") {
		t.Errorf("B saw %s", got)
	}
	slices.Sort(lat)
	slices.Sort(apply)
	t.Logf("commit on A to B's subscription callback, %d writes one at a time: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms",
		n, lat[n/2], lat[n*9/10], lat[n*99/100], lat[n-1])
	t.Logf("of which commit on A to B's remoteChange event (pushed, relayed, applied): p50 %.1f ms, p90 %.1f ms, p99 %.1f ms",
		apply[n/2], apply[n*9/10], apply[n*99/100])
}

// figures reports whether the measurements that only serve the report
// should run (REPLICA_FIGURES=1, make bench-e2e).
func figures() bool { return os.Getenv("REPLICA_FIGURES") != "" }
