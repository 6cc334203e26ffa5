// idbcount.js: counts IndexedDB requests and transactions made by everything
// in the page, from patched prototypes. Load it before the code to measure
// (it must run before that code caches any prototype method). It defines
// globalThis.idbCount: {counts, snap(), per(before, after, n)}; counts maps
// "put", "get", "getAll", "getAllKeys", "getAllRecords", "openCursor",
// "cursor.continue", "delete", "count", "index.get", ... and "tx"
// (IDBDatabase.transaction) to the number of calls so far.
(function (g) {
	"use strict";
	if (g.idbCount) return;
	const counts = {};
	const patch = (proto, prefix, names) => {
		for (const n of names) {
			const f = proto && proto[n];
			if (typeof f !== "function") continue;
			const key = prefix + n;
			proto[n] = function (...a) { counts[key] = (counts[key] || 0) + 1; return f.apply(this, a); };
		}
	};
	patch(g.IDBObjectStore && IDBObjectStore.prototype, "", ["put", "add", "get", "getKey", "getAll", "getAllKeys", "getAllRecords", "openCursor", "openKeyCursor", "delete", "clear", "count"]);
	patch(g.IDBIndex && IDBIndex.prototype, "index.", ["get", "getKey", "getAll", "getAllKeys", "getAllRecords", "openCursor", "openKeyCursor", "count"]);
	patch(g.IDBCursor && IDBCursor.prototype, "cursor.", ["continue", "advance", "update", "delete"]);
	if (g.IDBDatabase) {
		const tx = IDBDatabase.prototype.transaction;
		IDBDatabase.prototype.transaction = function (...a) { counts.tx = (counts.tx || 0) + 1; return tx.apply(this, a); };
	}
	g.idbCount = {
		counts,
		snap: () => Object.assign({}, counts),
		// per returns the counts made between two snaps, divided by n and
		// rounded to 2 decimals; zero counts are left out.
		per(a, b, n) {
			const o = {};
			for (const k of Object.keys(b)) {
				const d = (b[k] || 0) - (a[k] || 0);
				if (d) o[k] = +(d / n).toFixed(2);
			}
			return o;
		},
	};
})(globalThis);
