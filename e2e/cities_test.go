//go:build !js

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/replica-sync/replica/internal/cities"
)

// serveCities serves the GeoNames file as /cities.json (the gzip bytes with
// Content-Encoding: gzip, so the browser inflates it) to any origin.
func serveCities(t *testing.T) string {
	t.Helper()
	path := cities.Path()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%v: %s (the full GeoNames cities file; see internal/cities)", cities.ErrAbsent, path)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		http.ServeFile(w, r, path)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/cities.json"
}

// sampleCities picks rows to compare: every 9,999th, and the few whose
// names have Cyrillic, Greek or Arabic letters (14 in this version).
func sampleCities(t *testing.T, all []cities.City) []cities.City {
	t.Helper()
	var out []cities.City
	for i := 0; i < len(all); i += 9999 {
		out = append(out, all[i])
	}
	for _, script := range []*unicode.RangeTable{unicode.Cyrillic, unicode.Greek, unicode.Arabic} {
		n := 0
		for _, c := range all {
			if strings.IndexFunc(c.Name, func(r rune) bool { return unicode.Is(script, r) }) >= 0 {
				out = append(out, c)
				n++
			}
		}
		if n == 0 {
			t.Errorf("no city name in %v letters", script)
		}
	}
	return out
}

// TestBootstrapCities: device A imports all 171,075 GeoNames rows through
// the page (transactions of 1,000 rows); a fresh device B bootstraps from a
// snapshot with progress events and ends with the same row count, the same
// sampled rows (non-Latin names included) and the same name-prefix search
// results. Each device is its own Chromium with an on-disk profile.
func TestBootstrapCities(t *testing.T) {
	requireBrowser(t)
	dataURL := serveCities(t)
	all, err := cities.Load(0)
	if errors.Is(err, cities.ErrAbsent) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t)
	url := r.URL + "?db=cities#cities"

	// A imports offline, then goes online and pushes. (Importing online
	// was measured slower: the pushes compete with the import for the
	// page's one Go thread, and both phases together took longer.)
	a := newBrowser(t, t.TempDir()).defaultDevice("A").open(url)
	a.waitStatus("synced", syncTimeout)
	a.goOffline()
	a.eval(`window.importDone = app.runImport(async () => (await fetch(`+jsString(dataURL)+`)).json(), 1000); return null;`, nil)
	a.waitLogging("A's import", `document.getElementById("import-label").dataset.done === "true"`, `document.getElementById("import-label").textContent`, 10*time.Minute)
	a.shot("A-imported")
	var imp struct {
		Rows    int     `json:"rows"`
		Seconds float64 `json:"seconds"`
		Error   string  `json:"error"`
	}
	a.eval(`return await importDone;`, &imp)
	if imp.Error != "" || imp.Rows != len(all) {
		t.Fatalf("import: %+v", imp)
	}
	t.Logf("A imported %d rows in %.1f s (%.0f rows/s; fetching and parsing the file included), in transactions of 1,000 rows", imp.Rows, imp.Seconds, float64(imp.Rows)/imp.Seconds)
	start := time.Now()
	a.click("#sync-toggle")
	a.waitLogging("A's pushes to be acknowledged", `app.syncState.status === "synced" && app.syncState.pending === 0`, `JSON.stringify(app.syncState)`, 10*time.Minute)
	t.Logf("A pushed %d rows in %.1f s (%.0f rows/s)", len(all), time.Since(start).Seconds(), float64(len(all))/time.Since(start).Seconds())

	// B bootstraps.
	start = time.Now()
	bb := newBrowser(t, t.TempDir()).defaultDevice("B").open(url)
	bb.waitJS("the snapshot to start", `document.getElementById("sync").dataset.status === "syncing" && app.syncState.progress`, time.Minute)
	bb.shot("B-bootstrapping")
	bb.waitLogging("B's bootstrap", `document.getElementById("sync").dataset.status === "synced"`, `document.getElementById("sync-message").textContent`, 10*time.Minute)
	var boot struct {
		Ms       float64 `json:"ms"`
		Progress int     `json:"progress"`
		Last     struct {
			RowsApplied int `json:"rowsApplied"`
			RowsTotal   int `json:"rowsTotal"`
		} `json:"last"`
		Monotonic bool `json:"monotonic"`
	}
	bb.eval(`const h = app.syncHistory;
		const first = h.find((s) => s.status === "syncing"), done = h.find((s) => s.status === "synced");
		const p = h.filter((s) => s.progress && s.progress.table === "cities");
		let monotonic = true;
		for (let i = 1; i < p.length; i++) if (p[i].progress.rowsApplied < p[i - 1].progress.rowsApplied) monotonic = false;
		return {ms: done.t - first.t, progress: p.length, last: p.length ? p[p.length - 1].progress : null, monotonic};`, &boot)
	t.Logf("B bootstrapped %d rows in %.1f s (%.0f rows/s) from its first syncing state to synced; %.1f s from opening the page; %d progress events, last %+v",
		len(all), boot.Ms/1000, float64(len(all))/(boot.Ms/1000), time.Since(start).Seconds(), boot.Progress, boot.Last)
	if boot.Progress < 10 || !boot.Monotonic || boot.Last.RowsApplied < len(all)*9/10 {
		t.Errorf("snapshot progress events: %d, monotonic %v, last %+v", boot.Progress, boot.Monotonic, boot.Last)
	}
	bb.shot("B-bootstrapped")
	if figures() {
		// The same rows put into a plain IndexedDB object store, in a new
		// tab of B's browser (a page of the same origin without the app)
		// once B's page is idle (its counters have caught up).
		bb.waitJS("B's counters", `document.getElementById("city-total").textContent === "in this replica" && document.getElementById("city-count").dataset.count === "`+fmt.Sprint(len(all))+`"`, 5*time.Minute)
		ms := rawPut(t, bb.dev, r.URL+"data/README.md", dataURL)
		t.Logf("raw IndexedDB in B's browser: put %d rows in %.1f s (%.0f rows/s), transactions of 1,000, one object store, no index; Replica's bootstrap took %.1fx that",
			len(all), ms/1000, float64(len(all))/(ms/1000), boot.Ms/ms)
	}

	// Same count, same sampled rows, same searches.
	for _, p := range []*page{a, bb} {
		if n := p.evalString(`return String(await db.count("cities"));`); n != fmt.Sprint(len(all)) {
			t.Errorf("%s has %s cities, want %d", p.name, n, len(all))
		}
	}
	sample := sampleCities(t, all)
	keys, _ := json.Marshal(func() [][]any {
		var k [][]any
		for _, c := range sample {
			k = append(k, []any{c.Country, c.Admin1, c.Name, c.Lat, c.Lng})
		}
		return k
	}())
	getAll := `const keys = ` + string(keys) + `; const out = []; for (const k of keys) out.push(await db.get("cities", k) || null); return JSON.stringify(out);`
	rowsA, rowsB := a.evalString(getAll), bb.evalString(getAll)
	if rowsA != rowsB {
		t.Errorf("sampled rows differ:\nA %s\nB %s", rowsA, rowsB)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(rowsB), &got); err != nil {
		t.Fatal(err)
	}
	for i, c := range sample {
		g := got[i]
		if g == nil || g["name"] != c.Name || g["country"] != c.Country || g["admin1"] != c.Admin1 || g["lat"] != c.Lat || g["lng"] != c.Lng {
			t.Errorf("B's row for %+v: %v", c, g)
		}
	}
	for _, q := range []struct{ q, country string }{{"Ок", ""}, {"Сл", "MK"}, {"Mosynopolis", ""}, {"al-medy", ""}, {"san", ""}, {"saint", "FR"}, {"", "IS"}} {
		js := fmt.Sprintf(`return JSON.stringify(await app.searchCities({q: %s, country: %s, limit: 1000}));`, jsString(q.q), jsString(q.country))
		resA, resB := a.evalString(js), bb.evalString(js)
		if resA != resB {
			t.Errorf("search %+v: A and B differ:\nA %.500s\nB %.500s", q, resA, resB)
		}
		var n []any
		_ = json.Unmarshal([]byte(resB), &n)
		if len(n) == 0 {
			t.Errorf("search %+v found nothing", q)
		}
	}
	// And through the page: type a Cyrillic prefix.
	bb.eval(`const q = document.getElementById("city-q"); q.value = "Ок"; q.dispatchEvent(new Event("input")); return null;`, nil)
	bb.waitJS("the counter for Ок", `document.getElementById("city-count").dataset.count === String(await db.count("cities", {where: {search: {prefix: "ок"}}})) && +document.getElementById("city-rows").dataset.count > 0`, syncTimeout)
	bb.shot("B-search")
}

// rawPut times putting every row of the data file into a plain IndexedDB
// object store (out-of-line keys, no index) in transactions of 1,000 rows,
// in a new tab of dev at url (a page of the relay's origin), and returns
// the milliseconds.
func rawPut(t *testing.T, dev *device, url, dataURL string) float64 {
	t.Helper()
	p := dev.openPlain(url)
	var raw struct{ Ms float64 }
	p.eval(`const rows = await (await fetch(`+jsString(dataURL)+`)).json();
		const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
		const open = indexedDB.open("raw-cities-" + Date.now(), 1);
		open.onupgradeneeded = () => open.result.createObjectStore("cities");
		const idb = await req(open);
		const t0 = performance.now();
		for (let i = 0; i < rows.length; i += 1000) {
			const tx = idb.transaction("cities", "readwrite");
			const st = tx.objectStore("cities");
			for (const c of rows.slice(i, i + 1000)) {
				const r = {country: c.country, admin1: c.admin1, name: c.name, lat: +c.lat, lng: +c.lng, admin2: c.admin2 || null};
				st.put(r, [r.country, r.admin1, r.name, r.lat, r.lng]);
			}
			await new Promise((ok, fail) => { tx.oncomplete = ok; tx.onabort = tx.onerror = () => fail(tx.error); });
		}
		const ms = performance.now() - t0;
		const n = await req(idb.transaction("cities").objectStore("cities").count());
		idb.close();
		if (n !== rows.length) throw new Error("raw IndexedDB holds " + n + " rows");
		return {ms};`, &raw)
	return raw.Ms
}
