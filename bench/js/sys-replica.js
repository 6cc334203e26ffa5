// sys-replica.js: Replica through its public API (web/replica.js loading
// the release build of replica.wasm), the schema of BENCH_CONFIG.schema:
// table cities (text id, name, real lat/lng, country, admin1, admin2) with
// the index by_name on name (and W8's table pings). W1 db.insert per row, each awaited; W2 one
// db.transaction issuing every tx.insert (not awaited one by one: calls run
// in order); W3 db.update of lat per row, each awaited; W4 db.query with
// where {name: {prefix}}, orderBy name, limit 50; W5 db.sync.connect to the
// bench's relay, whose database BENCH_CONFIG.relayDB holds the rows, until
// the sync state is "synced" (snapshot applied, caught up). W8: both
// devices sync database o.syncDB of the relay; B subscribes to the pings
// table (orderBy -n, limit 1); A inserts ping i. The page of "Replica
// sealed" (BENCH_CONFIG.sealKey: 32 raw key bytes) connects with {key: a
// Uint8Array(32)}: its W5 database holds a sealed checkpoint a native
// device uploaded, its W8 database is sealed by the two pages.
(function () {
	"use strict";
	const schema = BENCH_CONFIG.schema;
	const sealKey = BENCH_CONFIG.sealKey ? new Uint8Array(BENCH_CONFIG.sealKey) : null;
	const target = (database) => sealKey ? {database, key: sealKey} : {database};
	B.start({
		name: sealKey ? "replica-sealed" : "replica",
		rowsFromRelay: true,
		open: (name) => Replica.open({name, schema}),
		first: (db) => db.get("cities", "c000000"),
		close: (db) => db.close(),
		async w1(db, rows) {
			for (const r of rows) await db.insert("cities", r);
		},
		async w2(db, rows) {
			await db.transaction(async (tx) => {
				for (const r of rows) tx.insert("cities", r);
			});
		},
		async w3(db, rows) {
			for (const r of rows) await db.update("cities", r.id, {lat: r.lat + 0.001});
		},
		async w4(db, prefixes) {
			let n = 0;
			for (const p of prefixes) n += (await db.query("cities", {where: {name: {prefix: p}}, orderBy: "name", limit: 50})).length;
			return {rows: n};
		},
		async w5(db, _rows, o) {
			const url = location.origin.replace(/^http/, "ws") + "/sync";
			let last = null;
			await new Promise((ok, fail) => {
				const off = db.on("syncState", (st) => {
					last = st;
					if (st.status === "synced") { off(); ok(); }
					if (st.status === "error") { off(); fail(new Error("sync: " + JSON.stringify(st))); }
				});
				db.sync.connect(url, target(o.relayDB)).catch(fail);
			});
			await db.sync.disconnect();
			const n = await db.count("cities");
			if (n !== o.total) throw new Error("replica holds " + n + " rows after the snapshot, want " + o.total + " (last state " + JSON.stringify(last) + ")");
		},
		async w8Connect(db, o, onRow) {
			const url = location.origin.replace(/^http/, "ws") + "/sync";
			await new Promise((ok, fail) => {
				const off = db.on("syncState", (st) => {
					if (st.status === "synced") { off(); ok(); }
					if (st.status === "error") { off(); fail(new Error("sync: " + JSON.stringify(st))); }
				});
				db.sync.connect(url, target(o.syncDB)).catch(fail);
			});
			db.subscribe("pings", {orderBy: "-n", limit: 1}, (rows) => { if (rows.length) onRow(rows[0].n); });
		},
		// w8Watch reports when a remote ping's insert was applied here (its
		// change event), to split W8's latency at B's IndexedDB commit.
		w8Pushed: (db) => db.sync.pushed(),
		w8Watch(db, onApplied) {
			db.on("change", (ev) => {
				if (!ev.remote || !ev.changes) return;
				for (const c of ev.changes) if (c.table === "pings" && typeof c.pk[0] === "string") onApplied(Number(c.pk[0].slice(1)));
			});
		},
		w8Write: (db, i, t) => db.insert("pings", {id: "p" + i, n: i, at: t}),
		w8Update: (db, id, i, t) => db.update("pings", id, {n: i, at: t}),
	});
})();
