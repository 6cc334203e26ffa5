// sys-dexie.js: Dexie (dist/dexie.min.js from bench/node_modules), table
// cities with schema "id, name" (primary key id, index name). W1 table.add
// per row, each awaited (Dexie's own transaction per call); W2 bulkPut of
// all rows; W3 table.update(id, {lat}) per row, each awaited (a get and a
// put in one transaction); W4 where("name").startsWith(p).limit(50).toArray();
// W5 bulkPut of all rows (one call: Dexie's own bulk load).
(function () {
	"use strict";
	B.start({
		name: "dexie",
		async open(name) {
			const db = new Dexie(name);
			db.version(1).stores({cities: "id, name"});
			await db.open();
			return db;
		},
		first: (db) => db.cities.get("c000000"),
		async close(db) { db.close(); },
		async w1(db, rows) {
			for (const r of rows) await db.cities.add(r);
		},
		async w2(db, rows) {
			await db.cities.bulkPut(rows);
		},
		async w3(db, rows) {
			for (const r of rows) await db.cities.update(r.id, {lat: r.lat + 0.001});
		},
		async w4(db, prefixes) {
			let n = 0;
			for (const p of prefixes) n += (await db.cities.where("name").startsWith(p).limit(50).toArray()).length;
			return {rows: n};
		},
		async w5(db, rows) {
			await db.cities.bulkPut(rows);
		},
	});
})();
