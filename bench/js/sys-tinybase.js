// sys-tinybase.js: TinyBase (the min ES modules of bench/node_modules/tinybase):
// a MergeableStore (CRDT metadata per cell, as Replica keeps) persisted by
// createIndexedDbPersister. Row id = the city id; cells name, lat, lng,
// country, admin1, admin2. A "transaction" is a store change followed by an
// awaited persister.save() (the persister writes the whole store content:
// the cost grows with the store). W1 setRow + save per row; W2 one
// store.transaction of setRow calls + save; W3 setCell(lat) + save per row;
// W4 TinyBase queries (select name, where name starts with the prefix,
// sorted by name, first 50); W5 one store.transaction of every setRow +
// save. W1 and W3 stop after o.capMs and report how far they got. W8: both
// devices sync through TinyBase's own WebSocket server (node,
// bench/tinybase-ws-server.mjs) with createWsSynchronizer, and autosave to
// IndexedDB; B listens to the pings table's rows; A sets ping i's row.
import {createMergeableStore} from "/nm/tinybase/min/mergeable-store/index.js";
import {createIndexedDbPersister} from "/nm/tinybase/min/persisters/persister-indexed-db/index.js";
import {createQueries} from "/nm/tinybase/min/queries/index.js";

const cells = (r) => ({name: r.name, lat: r.lat, lng: r.lng, country: r.country, admin1: r.admin1, admin2: r.admin2});

B.start({
	name: "tinybase",
	async open(name) {
		const store = createMergeableStore();
		const persister = createIndexedDbPersister(store, name);
		await persister.load();
		return {store, persister};
	},
	async first(h) { return h.store.getRow("cities", "c000000"); },
	async close(h) { await h.persister.destroy(); },
	async w1(h, rows, o) {
		const t0 = performance.now();
		let i = 0;
		for (const r of rows) {
			h.store.setRow("cities", r.id, cells(r));
			await h.persister.save();
			i++;
			if (o.capMs && performance.now() - t0 > o.capMs) break;
		}
		if (i < rows.length) return {n: i, capped: true};
	},
	async w2(h, rows) {
		h.store.transaction(() => { for (const r of rows) h.store.setRow("cities", r.id, cells(r)); });
		await h.persister.save();
	},
	async prepareW3(h, rows) {
		h.store.transaction(() => { for (const r of rows) if (!h.store.hasRow("cities", r.id)) h.store.setRow("cities", r.id, cells(r)); });
		await h.persister.save();
	},
	async w3(h, rows, o) {
		const t0 = performance.now();
		let i = 0;
		for (const r of rows) {
			h.store.setCell("cities", r.id, "lat", r.lat + 0.001);
			await h.persister.save();
			i++;
			if (o.capMs && performance.now() - t0 > o.capMs) break;
		}
		if (i < rows.length) return {n: i, capped: true};
	},
	async w4(h, prefixes) {
		const q = createQueries(h.store);
		let n = 0;
		for (const p of prefixes) {
			q.setQueryDefinition("prefix", "cities", ({select, where}) => {
				select("name"); select("lat"); select("lng"); select("country"); select("admin1"); select("admin2");
				where((getCell) => getCell("name").startsWith(p));
			});
			const ids = q.getResultSortedRowIds("prefix", "name", false, 0, 50);
			n += ids.map((id) => q.getResultRow("prefix", id)).length;
		}
		q.destroy();
		return {rows: n};
	},
	async w5(h, rows) {
		h.store.transaction(() => { for (const r of rows) h.store.setRow("cities", r.id, cells(r)); });
		await h.persister.save();
	},
	async w8Connect(h, o, onRow) {
		const {createWsSynchronizer} = await import("/nm/tinybase/min/synchronizers/synchronizer-ws-client/index.js");
		const ws = new WebSocket(o.tinybaseURL + "/" + o.syncDB);
		h.sync = await createWsSynchronizer(h.store, ws);
		await h.sync.startSync();
		await h.persister.startAutoSave();
		h.store.addRowListener("pings", null, (store, _table, rowId) => {
			const n = store.getCell("pings", rowId, "n");
			if (n !== undefined) onRow(n);
		});
	},
	async w8Write(h, i, t) { h.store.setRow("pings", "p" + i, {n: i, at: t}); },
	async w8Update(h, id, i, t) { h.store.setPartialRow("pings", id, {n: i, at: t}); },
});
