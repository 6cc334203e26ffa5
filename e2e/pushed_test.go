//go:build !js

package e2e

import (
	"testing"
	"time"
)

// pushedJS opens the replica "pushtest" in a page (window.pdb) and
// defines pushedNow(): a promise's state probe for db.sync.pushed.
const pushedJS = `
	window.pdb = await Replica.open({name: "pushtest", schema: {tables: {notes: {columns: {id: "text", body: "text"}}}}});
	window.track = (p) => { const t = {state: "waiting"}; p.then(() => { t.state = "resolved"; }, (e) => { t.state = "rejected: " + (e && e.code); }); return t; };
	return null;`

// TestSyncPushed: db.sync.pushed resolves only once the relay holds what
// was written before the call: it waits offline, resolves after connect
// when the relay's stored count includes the writes, resolves at once
// when nothing is unsent, and works in a tab that does not lead (the
// acknowledged position comes through IndexedDB), for a write of that tab.
func TestSyncPushed(t *testing.T) {
	r := startRelay(t)
	dev := newBrowser(t, "").newDevice("A")
	a := dev.open(r.URL + "?db=demo")
	stored := func() float64 { return r.metric(t, "replica_relay_changesets_stored_total") }

	a.eval(pushedJS, nil)
	a.eval(`await pdb.insert("notes", {id: "n1", body: "offline"}); window.t1 = track(pdb.sync.pushed());
		window.subPending = null;
		pdb.subscribe("notes", {system: true}, (rows) => { window.subPending = rows.map((r) => r.id + "=" + r.$pending).join(" "); });
		return null;`, nil)
	if got := a.evalString(`return (await pdb.query("notes", {system: true})).map((r) => r.id + "=" + r.$pending).join(" ");`); got != "n1=true" {
		t.Fatalf("$pending offline: %s, want n1=true", got)
	}
	time.Sleep(300 * time.Millisecond)
	if st := a.evalString(`return t1.state;`); st != "waiting" {
		t.Fatalf("pushed() offline: %s, want waiting", st)
	}
	before := stored()
	a.eval(`await pdb.sync.connect(location.origin.replace("http", "ws") + "/sync", {database: "pushtest"}); return null;`, nil)
	a.waitJS("pushed() to resolve after connect", `t1.state === "resolved"`, syncTimeout)
	if got := stored(); got < before+2 {
		t.Fatalf("pushed() resolved with %v ChangeSets stored on the relay, want at least %v (the schema and the insert)", got, before+2)
	}
	if got := a.evalString(`return (await pdb.query("notes", {system: true})).map((r) => r.id + "=" + r.$pending).join(" ");`); got != "n1=false" {
		t.Fatalf("$pending once pushed: %s, want n1=false", got)
	}
	a.waitJS("the subscription to see $pending false", `subPending === "n1=false"`, syncTimeout)
	a.waitJS("a second pushed() with nothing unsent to resolve at once", `(await Promise.race([pdb.sync.pushed().then(() => "resolved"), new Promise((ok) => setTimeout(() => ok("slow"), 100))])) === "resolved"`, syncTimeout)

	// A second tab of the device: it does not lead (a does); its write
	// is pushed by a's connection.
	b := dev.open(r.URL + "?db=demo")
	b.eval(pushedJS, nil)
	if b.evalString(`return String(pdb.isLeader);`) != "false" {
		t.Fatal("the second tab leads pushtest")
	}
	before = stored()
	b.eval(`await pdb.insert("notes", {id: "n2", body: "from the other tab"}); window.t2 = track(pdb.sync.pushed()); return null;`, nil)
	b.waitJS("pushed() in the tab that does not lead", `t2.state === "resolved"`, syncTimeout)
	if got := stored(); got < before+1 {
		t.Fatalf("pushed() in the second tab resolved with %v ChangeSets stored, want at least %v", got, before+1)
	}

	// Close cuts a wait short: offline again, a new write, then close.
	a.eval(`await pdb.sync.disconnect(); await pdb.insert("notes", {id: "n3", body: "never sent"}); window.t3 = track(pdb.sync.pushed()); await new Promise((ok) => setTimeout(ok, 200)); await pdb.close(); return null;`, nil)
	a.waitJS("pushed() to reject when the replica closes", `t3.state === "rejected: CLOSED"`, syncTimeout)
}
