//go:build js && wasm

package jsbridge

import (
	"testing"
)

// TestFreezeEventSuspends: on the freeze event (dispatched here: the page
// goes on running, so what a frozen page would do late happens at once)
// the replica gives up leadership and aborts the IndexedDB transaction of
// the write it had running: another connection to its database (another
// tab) gets the object stores' lock at once. The write waits, and settles
// after the resume event, written once; the replica leads again (no other
// tab). A staged transaction committed across the freeze commits too.
func TestFreezeEventSuspends(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	db := openDB(t, name, testSchema)
	waitFor(t, "leadership", func() bool { return db.Get("isLeader").Bool() })
	d := dbOf(t, db)

	out := must(t, asyncfn("db, idbName", `
		const states = [];
		db.on("syncState", (s) => states.push(s.status + (s.leader ? "/leader" : "")));
		const p = db.insert("items", {n: 1}); // its transaction runs when the freeze comes
		const tx = db.transaction(async (tx) => { await tx.insert("items", {n: 2}); });
		let settled = null;
		p.then(() => { settled = "resolved"; }, (e) => { settled = "rejected: " + e.code + ": " + e.message; });
		document.dispatchEvent(new Event("freeze"));
		const leaderAfterFreeze = db.isLeader;
		// Another connection (another tab) writes: the lock is free.
		const other = await new Promise((res, rej) => {
			const rq = indexedDB.open(idbName);
			rq.onsuccess = () => res(rq.result);
			rq.onerror = () => rej(rq.error);
		});
		const stores = [...other.objectStoreNames];
		await new Promise((res, rej) => {
			const t = other.transaction(stores, "readwrite");
			t.objectStore("meta").count();
			t.oncomplete = res;
			t.onerror = t.onabort = () => rej(t.error);
		});
		other.close();
		const settledWhileFrozen = settled;
		document.dispatchEvent(new Event("resume"));
		await p;
		await tx;
		return {leaderAfterFreeze, settledWhileFrozen, settled, states, count: await db.count("items")};
	`).Invoke(db, IDBPrefix+name))
	if out.Get("leaderAfterFreeze").Bool() {
		t.Error("isLeader still true after the freeze event")
	}
	if s := out.Get("settledWhileFrozen"); !s.IsNull() {
		t.Errorf("the write settled while suspended: %s", s.String())
	}
	if s := out.Get("settled").String(); s != "resolved" {
		t.Errorf("the write in flight at the freeze: %s, want resolved", s)
	}
	if n := out.Get("count").Int(); n != 2 {
		t.Errorf("%d rows after resume, want 2 (each write once)", n)
	}
	waitFor(t, "leadership again after resume", func() bool { return db.Get("isLeader").Bool() && d.leader.Load() })
	t.Logf("sync states: %s", describe(out.Get("states")))
}
