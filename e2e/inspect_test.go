//go:build !js

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replica-sync/replica/internal/cities"
	"github.com/replica-sync/replica/relay"
)

// fullShot saves a screenshot of the whole page (not only the viewport)
// as shotDir/TEST-NAME.png and returns its path.
func (p *page) fullShot(name string) string {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("%s: screenshot: %v", p.name, err)
	}
	file := filepath.Join(shotDir, shotName(p.t.Name())+"-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	return file
}

// openInspector opens the inspector page of the replica name in a new tab
// of d and waits until it has rendered its first view.
func openInspector(r *relayServer, d *device, name string) *page {
	p := d.openPlain(r.URL + "inspect?db=" + strings.ReplaceAll(name, "/", "%2F"))
	p.name = d.name + " (inspector)"
	p.waitJS("the inspector to open", `document.body.dataset.ready === "true" && document.getElementById("main").dataset.loading === "false"`, syncTimeout)
	return p
}

// inspectorGo clicks the navigation link to hash (or runs the action js)
// and waits until the view it shows has rendered and cond holds.
func (p *page) inspectorGo(click, cond string) {
	p.t.Helper()
	if click != "" {
		p.waitJS(click+" to exist", "document.querySelector("+jsString(click)+") !== null", syncTimeout)
		// Clicked from the page in one step: the inspector re-renders its
		// navigation as counts change, and a node the driver found a
		// moment before may be gone when it clicks ("Could not find node
		// with given id").
		p.eval(`document.querySelector(`+jsString(click)+`).click(); return null;`, nil)
	}
	p.waitJS(click+" to render", `document.getElementById("main").dataset.loading === "false" && (`+cond+`)`, syncTimeout)
}

// TestInspector: the relay's /inspect page (Config.Inspect) opens the
// demo's replica in another tab of the same profile, by name, and shows
// through db.inspect: the tables with row counts, a page of 3,016 cities
// and one row's cells with their HLCs and writing site, a search, the
// tombstone of a deleted stop, changes held for a table and a column the
// app does not have, offline writes as unsent in the change log, the sync
// cursors, and a conflict the demo's tab resolves as it arrives. Each
// view is asserted on its DOM and saved as a full-page screenshot.
func TestInspector(t *testing.T) {
	r := startRelayConfig(t, relay.Config{Inspect: true})
	br := newBrowser(t, "")
	da, db := br.newDevice("A"), br.newDevice("B")
	a := da.open(r.URL + "?db=insp")
	a.waitStatus("synced", syncTimeout)
	a.eval(`const res = await app.runImport(async () => (await fetch("data/cities-excerpt.json")).json(), 500);
		if (!res || res.rows !== 3016) throw new Error("import: " + JSON.stringify(res)); return null;`, nil)
	a.click("#sample-trip")
	a.waitJS("the sample trip", `app.trips.length === 1`, syncTimeout)
	siteA := a.evalString(`return db.siteId;`)
	b := db.open(r.URL + "?db=insp")
	b.waitStatus("synced", syncTimeout)
	waitSame(t, "B to hold A's trip", syncTimeout, []string{"trips", "stops"}, a, b)
	siteB := b.evalString(`return db.siteId;`)
	// B renames a stop: its cell then carries B's site in A's replica.
	b.eval(`const s = (await db.query("stops")).find((s) => s.name === "Porto"); await db.update("stops", s.id, {name: "Porto (B)"}); return null;`, nil)
	a.waitJS("B's edit", `(await db.query("stops")).some((s) => s.name === "Porto (B)")`, syncTimeout)
	a.eval(`const s = (await db.query("stops")).find((s) => s.name === "Sintra"); await db.delete("stops", s.id); return null;`, nil)

	in := openInspector(r, da, "trip-planner/insp")
	in.waitJS("the row counts", `document.getElementById("nav").textContent.includes("cities3,016")`, syncTimeout)
	var nav []string
	in.eval(`return [...document.querySelectorAll("nav a")].map((a) => a.textContent);`, &nav)
	if got := strings.Join(nav, "|"); !strings.Contains(got, "cities3,016") || !strings.Contains(got, "stops3") || !strings.Contains(got, "trips1") || !strings.Contains(got, "Held changes0") {
		t.Fatalf("navigation: %q; tables %s", got, in.evalString(`return JSON.stringify(await inspector.db.inspect.tables());`))
	}
	if s := in.evalString(`return document.getElementById("facts").textContent;`); !strings.Contains(s, "follower") || !strings.Contains(s, siteA[:8]) {
		t.Errorf("facts: %q (want a follower tab of site %s)", s, siteA)
	}

	// The tables view: the first page of cities.
	in.inspectorGo(`a[data-nav="#t=cities"]`, `document.querySelectorAll("#rows tbody tr").length === 50`)
	if s := in.evalString(`return document.getElementById("page-summary").textContent;`); !strings.HasPrefix(s, "rows 1–50") {
		t.Errorf("page summary %q", s)
	}
	shots := []string{in.fullShot("1-tables")}
	in.inspectorGo(`#next`, `document.getElementById("page-summary").textContent.startsWith("rows 51–100")`)
	in.inspectorGo(`#prev`, `document.getElementById("page-summary").textContent.startsWith("rows 1–50")`)

	// A stop's cells: B's rename carries B's site, the rest A's.
	in.inspectorGo(`a[data-nav="#t=stops"]`, `document.querySelectorAll("#rows tbody tr").length === 3`)
	in.eval(`[...document.querySelectorAll("#rows tbody tr")].find((tr) => tr.textContent.includes("Porto (B)")).click(); return null;`, nil)
	in.waitJS("the row's cells", `document.querySelectorAll("#cells tbody tr").length >= 6`, syncTimeout)
	var cells map[string]string
	in.eval(`return Object.fromEntries([...document.querySelectorAll("#cells tbody tr")].map((tr) => [tr.dataset.column, (tr.querySelector("[data-site]") || {}).dataset?.site || ""]));`, &cells)
	if cells["name"] != siteB || cells["tripId"] != siteA || cells["nights"] != siteA {
		t.Errorf("cell sites: %v (A %s, B %s)", cells, siteA, siteB)
	}
	if s := in.evalString(`return document.querySelector('#cells tr[data-column="name"]').textContent;`); !strings.Contains(s, "@"+siteB+"/") {
		t.Errorf("the name cell's row lacks B's HLC: %q", s)
	}
	shots = append(shots, in.fullShot("2-row-cells"))

	// Tombstones: the deleted stop, with the deletion by A.
	in.inspectorGo(`button[data-kind="deleted"]`, `document.querySelectorAll("#rows tbody tr").length === 1`)
	if s := in.evalString(`return document.querySelector("#rows tbody tr").textContent;`); !strings.Contains(s, "Sintra") || !strings.Contains(s, siteA[:8]) {
		t.Errorf("deleted stops: %q", s)
	}
	in.click("#rows tbody tr")
	in.waitJS("the tombstone", `document.getElementById("detail") && document.getElementById("detail").textContent.includes("Tombstone")`, syncTimeout)
	shots = append(shots, in.fullShot("3-tombstones"))

	// Search the cities.
	in.inspectorGo(`a[data-nav="#t=cities"]`, `document.querySelectorAll("#rows tbody tr").length === 50`)
	in.do(chromedp.SendKeys("#search", "lisbo\r"))
	in.waitJS("search results", `document.getElementById("main").dataset.loading === "false" && document.getElementById("page-summary").textContent.includes("records")
		&& [...document.querySelectorAll("#rows tbody tr")].length > 0 && [...document.querySelectorAll("#rows tbody tr")].every((tr) => tr.textContent.toLowerCase().includes("lisbo"))`, syncTimeout)
	if s := in.evalString(`return document.getElementById("rows").textContent;`); !strings.Contains(s, "Lisbon") {
		t.Errorf("search lisbo: %q", s)
	}
	shots = append(shots, in.fullShot("4-search"))

	// Held changes: another replica's rows for a table and a column this
	// app does not define, applied without their migrations.
	in.eval(`const s = await Replica.open({name: "scratch", schema: {tables: {ghosts: {columns: {name: "text"}}, trips: {columns: {title: "text", rating: "integer"}}}}});
		await s.insert("ghosts", {name: "Casper"});
		await s.insert("ghosts", {name: "Slimer"});
		await s.insert("trips", {title: "Rated", rating: 5});
		const data = (await s.changesSince(null)).changeSets.filter((cs) => !cs.schemaMigrations);
		const res = await inspector.db.applyChanges(data);
		await s.close();
		if (data.length !== 3 || res.held !== 5) throw new Error("applied " + data.length + " ChangeSets: " + JSON.stringify(res));
		return null;`, nil)
	in.waitJS("the held count", `document.querySelector('a[data-nav="#held"] .count').textContent === "5"`, syncTimeout)
	in.inspectorGo(`a[data-nav="#held"]`, `document.querySelectorAll("#held tbody tr").length === 5`)
	if s := in.evalString(`return document.getElementById("held").textContent;`); !strings.Contains(s, "unknownTable") || !strings.Contains(s, "unknownColumn") || !strings.Contains(s, "rating = 5") || !strings.Contains(s, "Casper") {
		t.Errorf("held changes: %q", s)
	}
	shots = append(shots, in.fullShot("5-held"))

	// Offline writes: unsent in the change log.
	a.goOffline()
	b.goOffline()
	a.eval(`const t = (await db.query("trips")).find((t) => t.title === "Portugal by train"); await db.update("trips", t.id, {title: "Portugal by train (A)"}); return null;`, nil)
	time.Sleep(20 * time.Millisecond) // B writes later: its title wins
	b.eval(`const t = (await db.query("trips")).find((t) => t.title === "Portugal by train"); await db.update("trips", t.id, {title: "Portugal by train (B)"}); return null;`, nil)
	in.inspectorGo(`a[data-nav="#log"]`, `document.querySelectorAll('#log tbody tr[data-unsent="true"]').length === 1`)
	if s := in.evalString(`return document.querySelector('#log tbody tr[data-unsent="true"]').textContent;`); !strings.Contains(s, "trips ×1") || !strings.Contains(s, "unsent") {
		t.Errorf("the unsent entry: %q", s)
	}
	if n := in.evalString(`return String(document.querySelectorAll('#log tbody tr[data-unsent="false"]').length);`); n == "0" {
		t.Error("no sent entry in the change log")
	}
	in.inspectorGo(`button[data-kind="unsent"]`, `document.querySelectorAll("#log tbody tr").length === 1`)
	in.waitJS("the unsent count", `document.querySelector('a[data-nav="#log"]').textContent === "Change log1 unsent" && document.getElementById("fact-unsent").textContent === "unsent: 1"`, syncTimeout)
	shots = append(shots, in.fullShot("6-change-log"))

	// The conflict: B's later title reaches A, whose tab resolves it.
	in.inspectorGo(`a[data-nav="#conflicts"]`, `document.getElementById("main").textContent.includes("None since")`)
	b.goOnline()
	a.goOnline()
	in.waitJS("the conflict", `document.querySelectorAll("#conflicts .conflict").length >= 1`, syncTimeout)
	if s := in.evalString(`return document.getElementById("conflicts").textContent;`); !strings.Contains(s, "title") || !strings.Contains(s, "Portugal by train (B)") || !strings.Contains(s, "in another tab") {
		t.Errorf("conflict: %q", s)
	}
	if s := in.evalString(`return document.querySelector("#conflicts .win").textContent;`); !strings.Contains(s, "(B)") {
		t.Errorf("the winning value: %q, want B's", s)
	}
	shots = append(shots, in.fullShot("7-conflict"))

	// Sync: the relay, the cursors, the unsent count as the app shows it.
	// (A's offline write lost the conflict: all its facts are superseded,
	// so it is never pushed, and the unsent count, which counts change-log
	// keys, keeps it until a later push moves the watermark past it; see
	// client.PendingCount.)
	a.waitJS("A synced", `app.syncState.status === "synced"`, syncTimeout)
	time.Sleep(500 * time.Millisecond)
	pending := a.evalString(`return String(app.syncState.pending);`)
	in.inspectorGo(`a[data-nav="#sync"]`, `document.getElementById("cursors") !== null`)
	in.waitJS("the app's unsent count", `document.getElementById("sync").textContent.includes("unsent transactions`+pending+`") && document.getElementById("fact-unsent").textContent === "unsent: `+pending+`"`, syncTimeout)
	if s := in.evalString(`return document.getElementById("main").textContent;`); !strings.Contains(s, ":cursor") || !strings.Contains(s, "database insp") || !strings.Contains(s, "synced") {
		t.Errorf("sync view: %q", s)
	}
	shots = append(shots, in.fullShot("8-sync"))
	if pending != "0" {
		in.inspectorGo(`a[data-nav="#log"]`, `document.querySelectorAll('#log tbody tr[data-unsent="true"]').length >= 1`)
		if s := in.evalString(`return document.querySelector('#log tbody tr[data-unsent="true"]').textContent;`); !strings.Contains(s, "superseded: nothing to push") {
			t.Errorf("A's losing write, unsent: %q (want it marked superseded)", s)
		}
		shots = append(shots, in.fullShot("9-superseded"))
	}
	for _, s := range shots {
		t.Logf("screenshot %s", s)
	}
}

// TestInspectorWithoutInspect: a relay without Config.Inspect serves no
// inspector page; with it, db.inspect.open() called from a click in the
// app opens the inspector on the app's replica in a new window, GET
// /inspect without ?db lists the replicas of the profile, and a name it
// does not hold says so and lists them; db.inspect.open refuses bad
// options with INVALID_ARGUMENT.
func TestInspectorWithoutInspect(t *testing.T) {
	r := startRelay(t)
	d := newBrowser(t, "").newDevice("A")
	a := d.open(r.URL + "?db=list")
	p := d.openPlain(r.URL + "inspect")
	p.waitJS("the page", `document.readyState === "complete"`, syncTimeout)
	if s := p.evalString(`return document.body.textContent;`); !strings.Contains(s, "404") {
		t.Errorf("GET /inspect without Config.Inspect: %q", s)
	}
	_ = a

	r2 := startRelayConfig(t, relay.Config{Inspect: true})
	a2 := d.open(r2.URL + "?db=list")
	a2.eval(`const b = document.createElement("button"); b.id = "open-inspector"; b.textContent = "Inspect";
		b.onclick = () => { window.inspectorWindow = db.inspect.open(); }; document.body.prepend(b); return null;`, nil)
	a2.click("#open-inspector")
	a2.waitJS("the inspector window", `window.inspectorWindow && inspectorWindow.document.body && inspectorWindow.document.body.dataset.ready === "true"`, syncTimeout)
	if s := a2.evalString(`const w = inspectorWindow; const s = w.location.pathname + w.location.search + " " + w.document.getElementById("db-name").textContent + " " + w.document.getElementById("nav").textContent; w.close(); return s;`); !strings.HasPrefix(s, "/inspect?db=trip-planner%2Flist trip-planner/list ") || !strings.Contains(s, "trips") {
		t.Errorf("db.inspect.open(): %q", s)
	}
	l := d.openPlain(r2.URL + "inspect")
	l.waitJS("the list", `document.body.dataset.ready === "true"`, syncTimeout)
	if s := l.evalString(`return document.getElementById("main").textContent;`); !strings.Contains(s, "trip-planner/list") {
		t.Errorf("replica list: %q", s)
	}
	m := d.openPlain(r2.URL + "inspect?db=nosuch")
	m.waitJS("the error", `document.body.dataset.ready === "error"`, syncTimeout)
	if s := m.evalString(`return document.getElementById("main").textContent;`); !strings.Contains(s, "NOT_FOUND") || !strings.Contains(s, "trip-planner/list") {
		t.Errorf("unknown replica (want NOT_FOUND and the profile's replicas listed): %q", s)
	}
	// Bad arguments to db.inspect.open: INVALID_ARGUMENT, no window opened.
	if s := a2.evalString(`const out = [];
		for (const o of [{url: "http://[bad"}, {bogus: 1}, {target: 5}, 5]) {
			try { db.inspect.open(o); out.push("opened"); } catch (e) { out.push(e.code + " " + e.message); }
		}
		return out.join("\n");`); strings.Count(s, "INVALID_ARGUMENT") != 4 || !strings.Contains(s, `options.url is not a URL: "http://[bad"`) || !strings.Contains(s, `unknown option "bogus"`) {
		t.Errorf("db.inspect.open with bad options: %q", s)
	}
	m.fullShot("not-found")
}

// TestInspectorCities: the inspector opens a replica holding all 171,075
// GeoNames cities, pages them and searches them; the times of the first
// page, a paged step and searches are logged (figures, not limits).
func TestInspectorCities(t *testing.T) {
	requireBrowser(t)
	dataURL := serveCities(t)
	all, err := cities.Load(0)
	if errors.Is(err, cities.ErrAbsent) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := startRelayConfig(t, relay.Config{Inspect: true})
	d := newBrowser(t, t.TempDir()).defaultDevice("A")
	a := d.open(r.URL + "?db=citiesinsp")
	a.waitStatus("synced", syncTimeout)
	a.goOffline()
	a.eval(`window.importDone = app.runImport(async () => (await fetch(`+jsString(dataURL)+`)).json(), 2000); return null;`, nil)
	a.waitLogging("the import", `document.getElementById("import-label").dataset.done === "true"`, `document.getElementById("import-label").textContent`, 15*time.Minute)

	start := time.Now()
	in := d.openPlain(r.URL + "inspect?db=trip-planner%2Fcitiesinsp")
	in.name = "A (inspector)"
	in.waitLogging("the inspector to open", `document.body.dataset.ready === "true" && document.getElementById("main").dataset.loading === "false"`, `JSON.stringify(inspector.timings)`, 5*time.Minute)
	opened := time.Since(start)
	t.Logf("the inspector opened in %v; in the page, ms: %s", opened.Round(time.Millisecond), in.evalString(`return JSON.stringify(inspector.timings);`))
	in.waitLogging("the row counts", `document.getElementById("nav").textContent.includes("cities`+commas(len(all))+`")`, `document.getElementById("nav").textContent`, 5*time.Minute)
	t.Logf("counted %d cities (db.inspect.count) in %s ms", len(all), in.evalString(`return inspector.counts.cities.ms.toFixed(0);`))
	timed := func(what, click, cond string) float64 {
		in.inspectorGo(click, cond)
		var ms float64
		in.eval(`return inspector.lastMs;`, &ms)
		t.Logf("%s: %.0f ms (db.inspect.rows, in the page)", what, ms)
		return ms
	}
	timed("the first page of 171,075 cities", `a[data-nav="#t=cities"]`, `document.querySelectorAll("#rows tbody tr").length === 50`)
	timed("the next page", `#next`, `document.getElementById("page-summary").textContent.startsWith("rows 51–100")`)
	in.do(chromedp.SendKeys("#search", "zürich\r"))
	in.waitJS("the search", `document.getElementById("main").dataset.loading === "false" && document.getElementById("search").value === "zürich" && document.getElementById("page-summary").textContent.includes("read")`, time.Minute)
	var ms float64
	in.eval(`return inspector.lastMs;`, &ms)
	summary := in.evalString(`return document.getElementById("page-summary").textContent;`)
	t.Logf("search \"zürich\" (a few matches in the whole table): %.0f ms: %s", ms, summary)
	if !strings.Contains(in.evalString(`return document.getElementById("rows").textContent;`), "Zürich") {
		t.Errorf("search zürich: %s", summary)
	}
	in.fullShot("search-171k")
	in.eval(`const s = document.getElementById("search"); s.value = ""; s.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"})); return null;`, nil)
	in.waitJS("the cleared search", `document.getElementById("main").dataset.loading === "false" && document.querySelectorAll("#rows tbody tr").length === 50`, time.Minute)
	in.do(chromedp.SendKeys("#search", "zzzzqq\r"))
	in.waitJS("the empty search", `document.getElementById("main").dataset.loading === "false" && document.getElementById("page-summary").textContent.startsWith("no rows match")`, time.Minute)
	in.eval(`return inspector.lastMs;`, &ms)
	t.Logf("search with no match (reads all %d rows): %.0f ms: %s; the inspector opened (tables with counts) in %v", len(all), ms, in.evalString(`return document.getElementById("page-summary").textContent;`), opened.Round(time.Millisecond))
	in.fullShot("nomatch-171k")
}

// commas writes n with thousands separators, as the page does.
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
