//go:build !js

package main

import (
	"os"
	"testing"

	"github.com/replica-sync/replica/internal/pagebench"
)

// TestMeasure times the release build (web/replica.wasm through
// web/replica.js) in headless Chromium beside raw IndexedDB doing the same
// puts in the same page. It asserts nothing; it logs the figures. Run it
// alone (two benchmarks on 2 cores distort each other):
//
//	REPLICA_CHROMIUM=/usr/bin/chromium REPLICA_MEASURE=1 go test -run TestMeasure -v ./cmd/wasm
//
// (`make bench-browser` does.) Workloads, N = 10,000 rows of 6 columns
// (text id, name, country, integer pop, real lat, lon):
//   - open: Replica.open of a fresh replica (new IndexedDB database);
//   - single: N awaited db.insert calls / N raw transactions of one put each;
//   - bulk: one db.transaction of N awaited tx.insert / one raw transaction of N puts.
//
// It also counts IndexedDB requests (put, get, getAll*, cursors, deletes)
// per row, from patched prototypes (internal/pagebench's idbcount.js, which
// make bench uses too, as it does rawidb.js for the raw IndexedDB side).
func TestMeasure(t *testing.T) {
	if os.Getenv("REPLICA_MEASURE") == "" {
		t.Skip("set REPLICA_MEASURE=1 to measure")
	}
	ctx := browser(t)
	srv := serve(t, "application/wasm")
	var res map[string]float64
	run(t, ctx, srv.URL+"/two.html", `
		const N = +(new URLSearchParams(location.search).get("n") || 10000);
		const schema = {tables: {cities: {columns: {id: "text", name: "text", country: "text", pop: "integer", lat: "real", lon: "real"}}}};
		const row = (i) => ({id: "c" + String(i).padStart(6, "0"), name: "City " + i, country: ["FR", "PT", "DE", "JP"][i % 4], pop: 1000 + i * 7, lat: (i % 180) - 90 + 0.123, lon: (i % 360) - 180 + 0.456});
		`+pagebench.IDBCountJS+pagebench.RawIDBJS+`
		const snap = idbCount.snap, per = idbCount.per;
		const {req, done} = rawIDB;
		const rawOpen = (name) => rawIDB.open(name, (db) => db.createObjectStore("cities", {keyPath: "id"}));
		const out = {};
		const stamp = Date.now();

		let t0 = performance.now();
		const db = await Replica.open({name: "measure-single-" + stamp, schema});
		out.openMs = performance.now() - t0;
		await db.close();

		// single-row inserts
		const db1 = await Replica.open({name: "measure-single-" + stamp, schema});
		let c0 = snap();
		t0 = performance.now();
		for (let i = 0; i < N; i++) await db1.insert("cities", row(i));
		out.singleReplicaRowsPerSec = N / ((performance.now() - t0) / 1000);
		out.singleRequests = per(c0, snap(), N);
		const raw1 = await rawOpen("measure-raw-single-" + stamp);
		t0 = performance.now();
		for (let i = 0; i < N; i++) { const tx = raw1.transaction("cities", "readwrite"); tx.objectStore("cities").put(row(i)); await done(tx); }
		out.singleRawRowsPerSec = N / ((performance.now() - t0) / 1000);
		raw1.close();

		// one transaction of N rows
		const db2 = await Replica.open({name: "measure-bulk-" + stamp, schema});
		c0 = snap();
		t0 = performance.now();
		await db2.transaction(async (tx) => { for (let i = 0; i < N; i++) await tx.insert("cities", row(i)); });
		out.bulkReplicaRowsPerSec = N / ((performance.now() - t0) / 1000);
		out.bulkRequests = per(c0, snap(), N);
		const raw2 = await rawOpen("measure-raw-bulk-" + stamp);
		t0 = performance.now();
		{ const tx = raw2.transaction("cities", "readwrite"); const st = tx.objectStore("cities"); for (let i = 0; i < N; i++) st.put(row(i)); await done(tx); }
		out.bulkRawRowsPerSec = N / ((performance.now() - t0) / 1000);
		raw2.close();

		// reads
		t0 = performance.now();
		const all = await db2.query("cities");
		out.queryAllMs = performance.now() - t0;
		out.queryAllRows = all.length;
		t0 = performance.now();
		for (let i = 0; i < 1000; i++) await db2.get("cities", "c" + String(i * 7).padStart(6, "0"));
		out.getPerSec = 1000 / ((performance.now() - t0) / 1000);

		await db1.close(); await db2.close();
		for (const n of ["replica:measure-single-" + stamp, "replica:measure-bulk-" + stamp, "measure-raw-single-" + stamp, "measure-raw-bulk-" + stamp]) await req(indexedDB.deleteDatabase(n));
		const flat = {};
		for (const [k, v] of Object.entries(out)) {
			if (typeof v === "object") for (const [k2, v2] of Object.entries(v)) flat[k + "." + k2] = v2; else flat[k] = v;
		}
		return flat;
	`, &res)
	t.Logf("open a fresh replica: %.1f ms", res["openMs"])
	t.Logf("single-row inserts: Replica %.0f rows/s, raw IndexedDB (one put per transaction) %.0f rows/s: Replica takes %.2fx the time",
		res["singleReplicaRowsPerSec"], res["singleRawRowsPerSec"], res["singleRawRowsPerSec"]/res["singleReplicaRowsPerSec"])
	t.Logf("one transaction of 10,000 rows: Replica %.0f rows/s, raw IndexedDB (one transaction) %.0f rows/s: Replica reaches %.2f of raw",
		res["bulkReplicaRowsPerSec"], res["bulkRawRowsPerSec"], res["bulkReplicaRowsPerSec"]/res["bulkRawRowsPerSec"])
	t.Logf("query of all 10,000 rows: %.1f ms; point gets: %.0f/s", res["queryAllMs"], res["getPerSec"])
	for k, v := range res {
		if len(k) > 8 && (k[:8] == "singleRe" || k[:8] == "bulkRequ") {
			t.Logf("IndexedDB calls per row, %s: %.2f", k, v)
		}
	}
}
