//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
	"time"
)

// collector subscribes to table with options and records every delivery
// as a description of the rows.
type collector struct {
	t     *testing.T
	calls js.Value // JS array of descriptions
	unsub js.Value
}

func subscribeT(t *testing.T, db js.Value, table, options, project string) *collector {
	t.Helper()
	c := &collector{t: t, calls: jsv("[]")}
	cb := jsfn("calls, describe", "return (rows) => calls.push(describe(rows.map("+project+")))").Invoke(c.calls, testHelpers.Get("describe"))
	c.unsub = db.Call("subscribe", table, jsv(options), cb)
	return c
}

func (c *collector) n() int { return c.calls.Length() }

func (c *collector) last() string { return c.calls.Index(c.n() - 1).String() }

// settle waits until the refresher has nothing left to do, then lets
// JavaScript run the queued deliveries.
func settle(t *testing.T, d *db) {
	t.Helper()
	waitFor(t, "the refresher to be idle", func() bool {
		d.subs.mu.Lock()
		idle := len(d.subs.dirty) == 0 && len(d.subs.fresh) == 0
		d.subs.mu.Unlock()
		return idle && d.subs.idle.Load() && len(d.subs.wake) == 0
	})
	time.Sleep(5 * time.Millisecond)
}

func TestSubscribe(t *testing.T) {
	db := openT(t)
	d := dbOf(t, db)
	c := subscribeT(t, db, "items", `{where: {n: {gt: 5}}, orderBy: "-n"}`, `(r) => r.n + ":" + r.title + ":" + (r.data ? r.data.join("") : "-")`)
	waitFor(t, "the initial rows", func() bool { return c.n() == 1 })
	if got := c.last(); got != "[]" {
		t.Fatalf("initial rows %s", got)
	}
	step := func(what string, write func(), wantCalls int, wantLast string) {
		t.Helper()
		write()
		settle(t, d)
		if c.n() != wantCalls {
			t.Fatalf("after %s: %d deliveries (last %s), want %d", what, c.n(), c.last(), wantCalls)
		}
		if wantLast != "" && c.last() != wantLast {
			t.Fatalf("after %s: rows %s, want %s", what, c.last(), wantLast)
		}
	}
	q0 := d.subs.queries.Load()
	step("a write to another table", func() { must(t, db.Call("insert", "other", jsv(`{v: 1}`))) }, 1, "")
	if q := d.subs.queries.Load(); q != q0 {
		t.Errorf("a write to another table re-ran the query (%d runs)", q-q0)
	}
	step("a write outside the result", func() { must(t, db.Call("insert", "items", jsv(`{id: "a", n: 1}`))) }, 1, "")
	if d.subs.queries.Load() == q0 {
		t.Error("a write to the table did not re-run the query")
	}
	step("a matching insert", func() {
		must(t, db.Call("insert", "items", jsv(`{id: "b", n: 10, title: "x", data: new Uint8Array([1, 2])}`)))
	}, 2, `["10:x:12"]`)
	step("an update to the same values", func() { must(t, db.Call("update", "items", "b", jsv(`{title: "x", data: new Uint8Array([1, 2])}`))) }, 2, "")
	step("an update inside the result", func() { must(t, db.Call("update", "items", "b", jsv(`{data: new Uint8Array([1, 3])}`))) }, 3, `["10:x:13"]`)
	step("a row entering the result", func() { must(t, db.Call("update", "items", "a", jsv(`{n: 20}`))) }, 4, `["20:null:-", "10:x:13"]`)
	step("a delete", func() { must(t, db.Call("delete", "items", "a")) }, 5, `["10:x:13"]`)
	step("a transaction", func() {
		must(t, asyncfn("db", `await db.transaction(async (tx) => { await tx.insert("items", {n: 6}); await tx.update("items", "b", {n: 7}); })`).Invoke(db))
	}, 6, `["7:x:13", "6:null:-"]`)
	// A burst of un-awaited writes is coalesced: the refresher, woken
	// while the worker still has the burst's calls queued, waits for it.
	n0, w0 := c.n(), d.subs.waited.Load()
	must(t, asyncfn("db", `const ps = []; for (let i = 0; i < 30; i++) ps.push(db.insert("items", {n: 100 + i})); await Promise.all(ps);`).Invoke(db))
	// The last round may start after the writes' promises resolve (its
	// commit's event wakes it): wait for the burst's final rows, then
	// for quiet.
	waitFor(t, "the burst's last row delivered (after the burst: the newest n is 129)", func() bool {
		return jsfn("s", "return s.startsWith('[\"129:')").Invoke(c.last()).Bool()
	})
	settle(t, d)
	if got := c.n() - n0; got < 1 || got > 15 {
		t.Errorf("a burst of 30 inserts gave %d deliveries, want 1 to 15", got)
	}
	if d.subs.waited.Load() == w0 {
		t.Error("the burst's rounds never waited for it to settle")
	}
	// After unsubscribing, nothing more.
	c.unsub.Invoke()
	c.unsub.Invoke() // idempotent
	n1 := c.n()
	step("a write after unsubscribe", func() { must(t, db.Call("insert", "items", jsv(`{n: 50}`))) }, n1, "")
	d.subs.mu.Lock()
	left := len(d.subs.subs)
	d.subs.mu.Unlock()
	if left != 0 {
		t.Errorf("%d subscriptions left after unsubscribe", left)
	}
}

// TestSubscribeIdleRunsAtOnce: a change that wakes the refresher while the
// worker is idle (here a write straight to the engine, as a remote apply or
// a sibling tab's notice comes) is re-queried at once, with no coalescing
// timer.
func TestSubscribeIdleRunsAtOnce(t *testing.T) {
	db := openT(t)
	d := dbOf(t, db)
	c := subscribeT(t, db, "items", `{orderBy: "n"}`, `(r) => r.n`)
	waitFor(t, "the initial rows", func() bool { return c.n() == 1 })
	settle(t, d)
	for i := 1; i <= 3; i++ {
		w0, r0 := d.subs.waited.Load(), d.subs.rounds.Load()
		if _, err := d.eng.Insert("items", map[string]any{"n": int64(i)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the round", func() bool { return d.subs.rounds.Load() > r0 })
		settle(t, d)
		if w := d.subs.waited.Load(); w != w0 {
			t.Errorf("change %d with the worker idle: the round waited for a burst", i)
		}
		if c.n() != i+1 {
			t.Errorf("change %d: %d deliveries (last %s), want %d", i, c.n(), c.last(), i+1)
		}
	}
	if got := c.last(); got != "[1, 2, 3]" {
		t.Errorf("rows %s", got)
	}
}

// TestSubscribeErrors: a query that cannot run goes to onError (and ends
// the subscription); a subscription without options works.
func TestSubscribeErrors(t *testing.T) {
	db := openT(t)
	errs := jsv("[]")
	onErr := jsfn("errs", "return (e) => errs.push(e)").Invoke(errs)
	noop := jsfn("", "return () => {}").Invoke()
	db.Call("subscribe", "nope", jsv("{}"), noop, onErr)
	db.Call("subscribe", "items", jsv(`{where: {zz: 1}}`), noop, onErr)
	db.Call("subscribe", "items", jsv(`{limit: -1}`), noop, onErr)
	waitFor(t, "three errors", func() bool { return errs.Length() == 3 })
	codes := map[string]bool{}
	for i := 0; i < 3; i++ {
		codes[errs.Index(i).Get("code").String()] = true
	}
	if !codes["VALIDATION"] || !codes["INVALID_ARGUMENT"] {
		t.Errorf("codes %v", codes)
	}
	rows := jsv("[]")
	db.Call("subscribe", "other", jsfn("rows", "return (r) => rows.push(r.length)").Invoke(rows))
	waitFor(t, "initial rows without options", func() bool { return rows.Length() == 1 })
}

// TestEvents: change events name the tables of each commit; listeners are
// removed by the function on returns.
func TestEvents(t *testing.T) {
	db := openT(t)
	got := jsv("[]")
	off := db.Call("on", "change", jsfn("got, describe", "return (e) => got.push(describe(e))").Invoke(got, testHelpers.Get("describe")))
	remote := jsv("[]")
	db.Call("on", "remoteChange", jsfn("r", "return (e) => r.push(e)").Invoke(remote))
	sites := jsv("[]")
	db.Call("on", "change", jsfn("s", "return (e) => s.push(e.siteId)").Invoke(sites))
	must(t, db.Call("insert", "items", jsv(`{n: 1}`)))
	must(t, asyncfn("db", `await db.transaction(async (tx) => { await tx.insert("other", {v: 1}); await tx.insert("items", {n: 2}); })`).Invoke(db))
	waitFor(t, "two change events", func() bool { return got.Length() == 2 })
	for i, want := range []string{`{tables: ["items"], remote: false, fromOtherTab: false, transactionId: `, `{tables: ["items", "other"], remote: false, fromOtherTab: false, transactionId: `} {
		if s := got.Index(i).String(); len(s) < len(want) || s[:len(want)] != want {
			t.Errorf("event %d: %s", i, s)
		}
	}
	for i := range 2 {
		if s := sites.Index(i); s.Type() != js.TypeString || s.String() != db.Get("siteId").String() {
			t.Errorf("event %d: siteId %s, want db.siteId %s", i, describe(s), db.Get("siteId").String())
		}
	}
	off.Invoke()
	must(t, db.Call("insert", "items", jsv(`{n: 3}`)))
	time.Sleep(20 * time.Millisecond)
	if got.Length() != 2 {
		t.Errorf("listener called after removal: %d events", got.Length())
	}
	if remote.Length() != 0 {
		t.Errorf("remoteChange fired for local writes")
	}
}

// TestClose: after close every call rejects with CLOSED (and the
// synchronous methods throw it); calls made before close complete.
func TestClose(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	db := openDB(t, name, testSchema)
	before := db.Call("insert", "items", jsv(`{n: 1}`))
	closing := db.Call("close")
	must(t, before)
	must(t, closing)
	must(t, db.Call("close")) // idempotent
	for _, expr := range []string{
		`db.insert("items", {})`, `db.update("items", "x", {})`, `db.upsert("items", {})`,
		`db.delete("items", "x")`, `db.get("items", "x")`, `db.query("items")`, `db.count("items")`,
		`db.transaction(async () => {})`, `db.sync.connect("ws://localhost:1", {database: "d"})`,
	} {
		mustReject(t, jsfn("db", "return "+expr).Invoke(db), "CLOSED")
	}
	for _, expr := range []string{`db.on("change", () => {})`, `db.subscribe("items", () => {})`} {
		thrown := jsfn("db", "try { "+expr+"; return null } catch (e) { return e }").Invoke(db)
		if thrown.IsNull() {
			t.Errorf("%s did not throw after close", expr)
			continue
		}
		checkError(t, thrown, "CLOSED")
	}
	// The data is there for the next open.
	db2 := openDB(t, name, testSchema)
	if n := must(t, db2.Call("count", "items")).Int(); n != 1 {
		t.Errorf("count after reopen %d, want 1", n)
	}
}

// TestPanicRecovery: a Go panic inside a call rejects that call with
// INTERNAL, and the module keeps working.
func TestPanicRecovery(t *testing.T) {
	db := openT(t)
	errs := jsv("[]")
	onErr := jsfn("errs", "return (e) => errs.push(e)").Invoke(errs)
	for _, m := range []string{"db.count", "tx.insert", "db.subscribe", "Replica.open"} {
		testHook = func(method string) {
			if method == m {
				panic("injected panic in " + m)
			}
		}
		switch m {
		case "db.count":
			mustReject(t, db.Call("count", "items"), "INTERNAL", "injected panic in db.count")
		case "tx.insert":
			e := mustReject(t, asyncfn("db", `await db.transaction(async (tx) => { await tx.insert("items", {n: 1}); })`).Invoke(db), "INTERNAL", "injected panic")
			_ = e
		case "db.subscribe":
			db.Call("subscribe", "items", jsv("{}"), jsfn("", "return () => {}").Invoke(), onErr)
			waitFor(t, "the subscription's error", func() bool { return errs.Length() == 1 })
			checkError(t, errs.Index(0), "INTERNAL", "injected panic")
		case "Replica.open":
			mustReject(t, js.Global().Get("Replica").Call("open", jsv(`{name: "p", schema: {tables: {}}}`)), "INTERNAL", "injected")
		}
		testHook = nil
	}
	if n := must(t, db.Call("count", "items")).Int(); n != 0 {
		t.Errorf("count %d after the panics, want 0", n)
	}
	must(t, db.Call("insert", "items", jsv(`{n: 1}`)))
	if n := must(t, db.Call("count", "items")).Int(); n != 1 {
		t.Errorf("count %d, want 1", n)
	}
}
