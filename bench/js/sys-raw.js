// sys-raw.js: the baseline, plain JavaScript on IndexedDB: one object store
// "cities" (keyPath id) with an index "name". Transaction shapes: W1 one
// add per transaction; W2 one transaction of adds; W3 get + put in one
// transaction per row; W4 an index cursor over [prefix, prefix+U+FFFF],
// 50 rows (w4getAll: index.getAll(range, 50), for reference); W5 put in
// transactions of 1,000 rows, one after the other.
(function () {
	"use strict";
	const {req, done} = rawIDB;
	const upgrade = (db) => db.createObjectStore("cities", {keyPath: "id"}).createIndex("name", "name");
	const range = (p) => IDBKeyRange.bound(p, p + "\uffff");
	B.start({
		name: "raw",
		open: (name) => rawIDB.open(name, upgrade),
		first: (db) => req(db.transaction("cities").objectStore("cities").get("c000000")),
		async close(db) { db.close(); },
		async w1(db, rows) {
			for (const r of rows) {
				const tx = db.transaction("cities", "readwrite");
				tx.objectStore("cities").add(r);
				await done(tx);
			}
		},
		async w2(db, rows) {
			const tx = db.transaction("cities", "readwrite");
			const s = tx.objectStore("cities");
			for (const r of rows) s.add(r);
			await done(tx);
		},
		async w3(db, rows) {
			for (const r of rows) {
				const tx = db.transaction("cities", "readwrite");
				const s = tx.objectStore("cities");
				const g = s.get(r.id);
				g.onsuccess = () => { const v = g.result; v.lat += 0.001; s.put(v); };
				await done(tx);
			}
		},
		async w4(db, prefixes) {
			let n = 0;
			for (const p of prefixes) {
				const idx = db.transaction("cities").objectStore("cities").index("name");
				const out = [];
				await new Promise((ok, fail) => {
					const c = idx.openCursor(range(p));
					c.onsuccess = () => {
						const cur = c.result;
						if (!cur) return ok();
						out.push(cur.value);
						if (out.length < 50) cur.continue(); else ok();
					};
					c.onerror = () => fail(c.error);
				});
				n += out.length;
			}
			return {rows: n};
		},
		async w4getAll(db, prefixes) {
			let n = 0;
			for (const p of prefixes) {
				const idx = db.transaction("cities").objectStore("cities").index("name");
				n += (await req(idx.getAll(range(p), 50))).length;
			}
			return {rows: n};
		},
		async w5(db, rows) {
			for (let i = 0; i < rows.length; i += 1000) {
				const tx = db.transaction("cities", "readwrite");
				const s = tx.objectStore("cities");
				for (let j = i; j < Math.min(i + 1000, rows.length); j++) s.put(rows[j]);
				await done(tx);
			}
		},
	});
})();
