//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/model"
)

// TestTwoTabs opens one replica name twice in one page — two engines over
// one IndexedDB database, two BroadcastChannel endpoints, two Web Locks
// requests — as two tabs of one profile would.
func TestTwoTabs(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	b := openDB(t, name, testSchema)
	da, dbb := dbOf(t, a), dbOf(t, b)
	if da.eng.SiteID() != dbb.eng.SiteID() {
		t.Fatalf("site ids differ: %s, %s", da.eng.SiteID(), dbb.eng.SiteID())
	}

	// A write through one reaches the other's subscription and events.
	c := subscribeT(t, b, "items", `{orderBy: "n"}`, `(r) => r.n`)
	events := jsv("[]")
	b.Call("on", "change", jsfn("ev", "return (e) => ev.push(e)").Invoke(events))
	waitFor(t, "b's initial rows", func() bool { return c.n() == 1 })
	must(t, a.Call("insert", "items", jsv(`{n: 1}`)))
	waitFor(t, "b's subscription to see a's write", func() bool { return c.last() == "[1]" })
	waitFor(t, "b's change event", func() bool { return events.Length() == 1 })
	ev := events.Index(0)
	if !ev.Get("fromOtherTab").Bool() || ev.Get("remote").Bool() || describe(ev.Get("tables")) != `["items"]` || ev.Get("transactionId").Type() != js.TypeString {
		t.Errorf("b's change event: %s", describe(ev))
	}
	if got := ev.Get("siteId"); got.Type() != js.TypeString || got.String() != b.Get("siteId").String() {
		t.Errorf("b's change event from a has siteId %s, want the replica's %s", describe(got), b.Get("siteId").String())
	}
	// A write to another table through a does not re-run b's query.
	settle(t, dbb)
	q := dbb.subs.queries.Load()
	must(t, a.Call("insert", "other", jsv(`{v: 1}`)))
	waitFor(t, "b's second change event", func() bool { return events.Length() == 2 })
	settle(t, dbb)
	if dbb.subs.queries.Load() != q {
		t.Error("a write to another table in the other tab re-ran b's query")
	}

	// Interleaved writes from both never mint the same HLC.
	must(t, asyncfn("a, b", `
		const ps = [];
		for (let i = 0; i < 40; i++) {
			ps.push(a.insert("items", {n: 100 + i}));
			ps.push(b.insert("items", {n: 200 + i}));
			if (i % 5 === 0) ps.push(b.transaction(async (tx) => { await tx.insert("other", {v: i}); await tx.insert("items", {n: 300 + i}); }));
		}
		await Promise.all(ps);
	`).Invoke(a, b))
	sets, err := da.eng.ChangesSince(model.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range sets {
		if seen[s.TransactionID] {
			t.Errorf("transaction id %s minted twice", s.TransactionID)
		}
		seen[s.TransactionID] = true
	}
	if want := 1 + 2 + 80 + 8; len(sets) < want {
		t.Errorf("%d transactions in the log, want at least %d", len(sets), want)
	}
	waitFor(t, "b's subscription to see every row", func() bool {
		return must(t, b.Call("count", "items")).Int() == 89 && jsfn("s", "return s.split(',').length").Invoke(c.last()).Int() == 89
	})

	// Exactly one leader; closing it hands leadership to the other.
	waitFor(t, "a leader", func() bool { return a.Get("isLeader").Bool() || b.Get("isLeader").Bool() })
	if a.Get("isLeader").Bool() == b.Get("isLeader").Bool() {
		t.Fatalf("isLeader: a %v, b %v", a.Get("isLeader").Bool(), b.Get("isLeader").Bool())
	}
	leader, follower := a, b
	if b.Get("isLeader").Bool() {
		leader, follower = b, a
	}
	changes := jsv("[]")
	follower.Call("on", "leaderChange", jsfn("c", "return (e) => c.push(e.isLeader)").Invoke(changes))
	if !dbOf(t, leader).leader.Load() || dbOf(t, follower).leader.Load() {
		t.Error("the Go side does not know who leads")
	}
	start := time.Now()
	must(t, leader.Call("close"))
	waitFor(t, "the follower to lead", func() bool { return follower.Get("isLeader").Bool() })
	if d := time.Since(start); d > time.Second {
		t.Errorf("leadership moved after %v, want within 1 s", d)
	}
	waitFor(t, "the leaderChange event", func() bool { return changes.Length() == 1 })
	if !changes.Index(0).Bool() {
		t.Error("leaderChange payload isLeader false")
	}
}
