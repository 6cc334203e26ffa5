// rawidb.js: the few helpers plain-JavaScript IndexedDB code needs, shared
// by the in-browser measurements that put Replica beside raw IndexedDB.
// Defines globalThis.rawIDB: {req, done, open, drop}.
(function (g) {
	"use strict";
	if (g.rawIDB) return;
	// req resolves with a request's result (rejects with its error).
	const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
	// done resolves when a transaction completes (rejects when it aborts).
	const done = (tx) => new Promise((ok, fail) => { tx.oncomplete = () => ok(); tx.onabort = tx.onerror = () => fail(tx.error); });
	g.rawIDB = {
		req,
		done,
		// open opens (creating) database name at version 1; upgrade(db) creates
		// its object stores on creation.
		open(name, upgrade) {
			const r = indexedDB.open(name, 1);
			r.onupgradeneeded = () => upgrade(r.result);
			return req(r);
		},
		// drop deletes database name.
		drop: (name) => req(indexedDB.deleteDatabase(name)),
	};
})(globalThis);
