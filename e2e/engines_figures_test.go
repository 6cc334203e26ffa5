//go:build !js

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// insertCostPage is a page with Replica and nothing else (no demo app
// writing or syncing beside the measurement).
const insertCostPage = `<!doctype html><meta charset="utf-8"><title>insert cost</title>
<script src="wasm_exec.js"></script><script src="replica.js"></script>`

// insertCostJS inserts N rows, each in a transaction of its own and
// awaited, into a new database of SYSTEM ("raw": IndexedDB, one object
// store with an index on name, as make bench's raw system; "replica":
// db.insert, with make bench's cities schema), and returns the ms per row.
const insertCostJS = `
	await Replica.ready;
	const n = N, tag = TAG;
	const rows = [];
	for (let i = 0; i < n; i++) rows.push({id: "c" + String(i).padStart(6, "0"), name: "City " + i, lat: 38 + i / 1e4, lng: -9 - i / 1e4, country: "PT", admin1: "11", admin2: "1106"});
	let ms;
	if (SYSTEM === "raw") {
		const idb = await new Promise((res, rej) => {
			const r = indexedDB.open("raw-" + tag, 1);
			r.onupgradeneeded = () => r.result.createObjectStore("cities", {keyPath: "id"}).createIndex("name", "name");
			r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error);
		});
		const t0 = performance.now();
		for (const row of rows) {
			const tx = idb.transaction("cities", "readwrite");
			tx.objectStore("cities").add(row);
			await new Promise((res, rej) => { tx.oncomplete = res; tx.onerror = tx.onabort = () => rej(tx.error); });
		}
		ms = performance.now() - t0;
		idb.close();
	} else {
		const rdb = await Replica.open({name: "replica-" + tag, schema: {tables: {cities: {columns: {id: "text", name: {type: "text", notNull: true},
			lat: "real", lng: "real", country: "text", admin1: "text", admin2: "text"}, indexes: {by_name: ["name"]}}}}});
		const t0 = performance.now();
		for (const row of rows) await rdb.insert("cities", row);
		ms = performance.now() - t0;
		await rdb.close();
	}
	return ms / n;`

// TestEngineInsertCost (REPLICA_FIGURES=1, make bench-e2e) logs what a
// single awaited insert costs in Replica beside raw IndexedDB (make
// bench's W1, smaller: 1,000 rows, 5 alternating repetitions, medians) in
// Chromium, Firefox ESR and WebKitGTK. Logged, never asserted.
func TestEngineInsertCost(t *testing.T) {
	if os.Getenv("REPLICA_FIGURES") == "" {
		t.Skip("a figure: REPLICA_FIGURES=1 (make bench-e2e) runs it")
	}
	r := startRelay(t)
	if err := os.WriteFile(filepath.Join(webDir, "insert-cost.html"), []byte(insertCostPage), 0o644); err != nil {
		t.Fatal(err)
	}
	url := r.URL + "insert-cost.html"
	const n, reps = 1000, 5
	measure := func(name string, p jsPage) {
		var raw, rep []float64
		for i := range reps {
			for _, sys := range []string{"raw", "replica"} {
				js := insertCostJS
				for k, v := range map[string]string{"N": fmt.Sprint(n), "TAG": jsString(fmt.Sprint(i)), "SYSTEM": jsString(sys)} {
					js = replaceWord(js, k, v)
				}
				var ms float64
				p.eval(js, &ms)
				if sys == "raw" {
					raw = append(raw, ms)
				} else {
					rep = append(rep, ms)
				}
			}
		}
		t.Logf("%s: a single awaited insert, %d rows, medians of %d: raw IndexedDB %.3f ms, Replica %.3f ms: %.1fx (raw %.3v, Replica %.3v)",
			name, n, reps, median(raw), median(rep), median(rep)/median(raw), raw, rep)
	}
	c := newBrowser(t, "").newDevice("chromium").openPlain(url)
	measure("Chromium", c)
	for _, e := range otherEngines {
		t.Run(e.name, func(t *testing.T) {
			measure(e.title+" "+e.use(t).version(), openXTab(t, e, e.name, url, false))
		})
	}
}

// replaceWord replaces the whole word w in s by v.
func replaceWord(s, w, v string) string {
	out := []byte{}
	isWord := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
	}
	for i := 0; i < len(s); {
		if i+len(w) <= len(s) && s[i:i+len(w)] == w && (i == 0 || !isWord(s[i-1])) && (i+len(w) == len(s) || !isWord(s[i+len(w)])) {
			out = append(out, v...)
			i += len(w)
			continue
		}
		out = append(out, s[i])
		i++
	}
	return string(out)
}
