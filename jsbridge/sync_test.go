//go:build js && wasm

package jsbridge

import (
	"errors"
	"fmt"
	"strconv"
	"syscall/js"
	"testing"
	"time"

	"github.com/replica-sync/replica/client"
	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/kv/memkv"
	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// TestSyncArguments: db.sync.connect validates its arguments.
func TestSyncArguments(t *testing.T) {
	db := openT(t)
	s := db.Get("sync")
	mustReject(t, s.Call("connect", 5, jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "url must be a URL string or a non-empty array of them")
	mustReject(t, s.Call("connect", jsv(`[]`), jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "non-empty array")
	mustReject(t, s.Call("connect", jsv(`["ws://127.0.0.1:9/sync", 5]`), jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "non-empty array")
	mustReject(t, s.Call("connect", jsv(`["ws://127.0.0.1:9/sync", "ftp://x"]`), jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "ftp://x")
	mustReject(t, s.Call("connect", "", jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "url")
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync"), "INVALID_ARGUMENT", "options")
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "bad id!"}`)), "INVALID_ARGUMENT", "database id")
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d", tokn: "x"}`)), "INVALID_ARGUMENT", `"tokn"`)
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d", token: 5}`)), "INVALID_ARGUMENT", "token")
	// pending: 0 before the first count, then 1 (the schema's migrations).
	if got := describe(s.Get("state")); got != `{status: "disconnected", pending: 0, leader: false}` && got != `{status: "disconnected", pending: 0, leader: true}` && got != `{status: "disconnected", pending: 1, leader: true}` {
		t.Errorf("initial state %s", got)
	}
}

// TestSyncUnreachable: the leader connects; a relay that is not there
// shows as connecting, then disconnected with a SYNC_FAILED error and a
// retry time; disconnect stops it.
func TestSyncUnreachable(t *testing.T) {
	db := openT(t)
	waitFor(t, "leadership", func() bool { return db.Get("isLeader").Bool() })
	states := jsv("[]")
	db.Call("on", "syncState", jsfn("s", "return (e) => s.push(e)").Invoke(states))
	must(t, db.Get("sync").Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d", token: "t"}`)))
	waitFor(t, "a failed attempt", func() bool {
		st := db.Get("sync").Get("state")
		return st.Get("status").String() == "disconnected" && st.Get("error").Type() == js.TypeObject && st.Get("retryAt").Type() == js.TypeNumber
	})
	st := db.Get("sync").Get("state")
	if code := st.Get("error").Get("code").String(); code != "SYNC_FAILED" {
		t.Errorf("error code %s", code)
	}
	if !st.Get("leader").Bool() {
		t.Error("state.leader false in the leader tab")
	}
	seen := map[string]bool{}
	for i := 0; i < states.Length(); i++ {
		seen[states.Index(i).Get("status").String()] = true
	}
	if !seen["connecting"] {
		t.Errorf("no connecting state among %s", describe(states))
	}
	must(t, db.Get("sync").Call("disconnect"))
	st = db.Get("sync").Get("state")
	if st.Get("status").String() != "disconnected" || st.Get("error").Type() != js.TypeUndefined {
		t.Errorf("after disconnect: %s", describe(st))
	}
	if dbOf(t, db).sy.cl != nil {
		t.Error("client still there after disconnect")
	}
}

// TestSyncTargetSharedWithLeader: connect in a tab that is not the leader
// records the target in every tab; only the leader runs a client; when the
// leader closes, the next one connects.
func TestSyncTargetSharedWithLeader(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "a leads", func() bool { return a.Get("isLeader").Bool() })
	b := openDB(t, name, testSchema)
	da, dbb := dbOf(t, a), dbOf(t, b)
	must(t, b.Get("sync").Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "shared"}`)))
	waitFor(t, "the leader to get the target and a client", func() bool {
		da.sy.mu.Lock()
		defer da.sy.mu.Unlock()
		return da.sy.cl != nil
	})
	if da.sy.target == nil || da.sy.target.Database != "shared" {
		t.Errorf("leader target %+v", da.sy.target)
	}
	if dbb.sy.cl != nil {
		t.Error("a tab that is not the leader runs a client")
	}
	// The follower sees the leader's state.
	waitFor(t, "the leader's state in the follower", func() bool {
		return b.Get("sync").Get("state").Get("status").String() != "disconnected" || b.Get("sync").Get("state").Get("error").Type() == js.TypeObject
	})
	// A tab that opens later learns the target.
	c := openDB(t, name, testSchema)
	dc := dbOf(t, c)
	waitFor(t, "the late tab to learn the target", func() bool {
		var ok bool
		dc.enqueueWait(func() { ok = dc.sy.target != nil && dc.sy.target.Database == "shared" })
		return ok
	})
	must(t, a.Call("close"))
	waitFor(t, "a new leader with a client", func() bool {
		for _, d := range []*db{dbb, dc} {
			d.sy.mu.Lock()
			has := d.sy.cl != nil
			d.sy.mu.Unlock()
			if has {
				return true
			}
		}
		return false
	})
	must(t, b.Get("sync").Call("disconnect"))
	waitFor(t, "every client gone", func() bool {
		for _, d := range []*db{dbb, dc} {
			d.sy.mu.Lock()
			has := d.sy.cl != nil
			d.sy.mu.Unlock()
			if has {
				return false
			}
		}
		return true
	})
}

// enqueueWait runs fn on the worker and waits for it.
func (d *db) enqueueWait(fn func()) {
	done := make(chan struct{})
	d.enqueue(func() { fn(); close(done) })
	<-done
}

// pendingKnown reports whether the leader d has counted its unsent
// transactions.
func pendingKnown(d *db) bool {
	d.sy.mu.Lock()
	defer d.sy.mu.Unlock()
	return d.sy.pendKnown && !d.sy.pcRunning
}

// TestSyncPendingOffline: db.sync.state.pending counts local transactions
// while there is no client at all (never connected), after every commit of
// this tab and of another, each change emitted to syncState listeners;
// it agrees with a count from the change log.
func TestSyncPendingOffline(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "leadership", func() bool { return a.Get("isLeader").Bool() })
	da := dbOf(t, a)
	waitFor(t, "the first count", func() bool { return pendingKnown(da) })
	pending := func() int { return a.Get("sync").Get("state").Get("pending").Int() }
	p0 := pending()
	if p0 != 1 {
		t.Errorf("a new replica counts %d unsent, want 1 (its schema)", p0)
	}
	// Without listeners the count is current too (the getter asks Go).
	must(t, a.Call("insert", "items", jsv(`{n: 1}`)))
	if n := pending(); n != p0+1 {
		t.Fatalf("pending %d after an insert, want %d", n, p0+1)
	}
	states := jsv("[]")
	a.Call("on", "syncState", jsfn("s", "return (e) => s.push(e.pending)").Invoke(states))
	must(t, a.Call("insert", "items", jsv(`{n: 2}`)))
	must(t, asyncfn("db", `await db.transaction(async (tx) => { tx.insert("items", {n: 3}); tx.insert("other", {v: 1}); });`).Invoke(a))
	if n := pending(); n != p0+3 {
		t.Fatalf("pending %d after an insert and a transaction, want %d", n, p0+3)
	}
	waitFor(t, "syncState events with the counts", func() bool { return describe(states) == describe(jsv(`[`+itoa(p0+2)+`, `+itoa(p0+3)+`]`)) })
	// Another tab's commits count too.
	b := openDB(t, name, testSchema)
	must(t, b.Call("insert", "items", jsv(`{n: 4}`)))
	must(t, b.Call("update", "items", must(t, b.Call("query", "items", jsv(`{where: {n: 4}}`))).Index(0).Get("id"), jsv(`{n: 5}`)))
	waitFor(t, "the leader to count the other tab's commits", func() bool { return pending() == p0+5 })
	// The other tab shows the leader's count.
	waitFor(t, "the other tab to show the count", func() bool { return b.Get("sync").Get("state").Get("pending").Int() == p0+5 })
	if n, err := client.PendingCount(da.eng, "", ""); err != nil || n != p0+5 {
		t.Errorf("the change log counts %d (%v), the state %d", n, err, p0+5)
	}
	if got := describe(states); got != describe(jsv(`[`+itoa(p0+2)+`, `+itoa(p0+3)+`, `+itoa(p0+4)+`, `+itoa(p0+5)+`]`)) {
		t.Errorf("syncState pending counts %s", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSyncStateToNewTab: a tab that opens learns the leader's sync state
// at once (the answer to its hello), not at the leader's next change.
func TestSyncStateToNewTab(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "leadership", func() bool { return a.Get("isLeader").Bool() })
	must(t, a.Get("sync").Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d"}`)))
	waitFor(t, "a failed attempt", func() bool { return a.Get("sync").Get("state").Get("retryAt").Type() == js.TypeNumber })
	retry := a.Get("sync").Get("state").Get("retryAt").Float()
	start := time.Now()
	b := openDB(t, name, testSchema)
	for b.Get("sync").Get("state").Get("retryAt").Type() != js.TypeNumber {
		if time.Since(start) > 500*time.Millisecond {
			t.Fatalf("the new tab still shows %s", describe(b.Get("sync").Get("state")))
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := b.Get("sync").Get("state")
	if st.Get("retryAt").Float() < retry || st.Get("status").String() != "disconnected" || st.Get("leader").Bool() || st.Get("error").Get("code").String() != "SYNC_FAILED" {
		t.Errorf("the new tab shows %s", describe(st))
	}
	// Its connect with the same target changes nothing in the leader.
	cl := dbOf(t, a).sy.cl
	must(t, b.Get("sync").Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d"}`)))
	time.Sleep(50 * time.Millisecond)
	if dbOf(t, a).sy.cl != cl {
		t.Error("the leader's client was replaced")
	}
}

// TestLocalChangeLogOnly: a replica opened from JavaScript keeps no
// change-log entries for its peers' changes.
func TestLocalChangeLogOnly(t *testing.T) {
	db := openT(t)
	d := dbOf(t, db)
	sch, err := d.eng.Schema()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := engine.Open(memkv.New(engine.Buckets...), engine.Options{Schema: &sch})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for i := 0; i < 3; i++ {
		if _, err := peer.Insert("other", map[string]any{"v": i}); err != nil {
			t.Fatal(err)
		}
	}
	sets, err := peer.ChangesSince(model.HLC{}, 0, engine.ChangesFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.eng.ApplyChanges(sets); err != nil {
		t.Fatal(err)
	}
	if n := must(t, db.Call("count", "other")).Int(); n != 3 {
		t.Fatalf("%d rows applied", n)
	}
	must(t, db.Call("insert", "other", jsv(`{v: 9}`)))
	var own, peers int
	if err := d.store.View(func(tx kv.Tx) error {
		return tx.Scan("log", kv.Range{KeysOnly: true}, func(k, _ []byte) bool {
			if k[0] == 1 {
				own++
			} else {
				peers++
			}
			return true
		})
	}); err != nil {
		t.Fatal(err)
	}
	if peers != 0 || own == 0 {
		t.Errorf("change log: %d own entries, %d of peers' changes", own, peers)
	}
}

// TestSiteID: db.siteId is the replica's site id, the same in every tab.
func TestSiteID(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	b := openDB(t, name, testSchema)
	id := a.Get("siteId").String()
	if _, err := model.ParseSiteID(id); err != nil || len(id) != 22 || id != dbOf(t, a).eng.SiteID().String() {
		t.Errorf("siteId %q (%v), engine's %s", id, err, dbOf(t, a).eng.SiteID())
	}
	if b.Get("siteId").String() != id {
		t.Errorf("the other tab's siteId %q, want %q", b.Get("siteId").String(), id)
	}
}

// TestSyncLastError: a transient error the client reports (here fed to the
// leader's handler as the client posts it) shows as db.sync.state.lastError
// {code, message, at} in this tab and in the others, with a syncState
// event; a push's error outlives applied changes and clears at the next
// acknowledged push; another error clears when changes apply; a
// SNAPSHOT_REQUIRED report is no error; a transaction the client gave up on
// (client.RefusedError) stays until disconnect clears it.
func TestSyncLastError(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "leadership", func() bool { return a.Get("isLeader").Bool() })
	b := openDB(t, name, testSchema)
	da := dbOf(t, a)
	events := jsv("[]")
	a.Call("on", "syncState", jsfn("s", "return (e) => s.push(e.lastError ? e.lastError.code : null)").Invoke(events))
	lastErr := func(db js.Value) js.Value { return db.Get("sync").Get("state").Get("lastError") }
	if v := lastErr(a); v.Type() != js.TypeUndefined {
		t.Fatalf("lastError %s before any error", describe(v))
	}
	synced := client.Status{State: client.Synced}
	da.onSyncEvent(client.Event{Type: client.StateChanged, Status: synced})

	before := time.Now().UnixMilli()
	refused := &wire.Error{Code: wire.CodeApplyChangesRefused, Message: "held copy differs", RequestID: "apply-3"}
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: synced, Err: refused})
	waitFor(t, "lastError", func() bool { return lastErr(a).Type() == js.TypeObject })
	le := lastErr(a)
	if le.Get("code").String() != "APPLY_CHANGES_REFUSED" || le.Get("message").String() != refused.Error() {
		t.Errorf("lastError %s", describe(le))
	}
	if at := int64(le.Get("at").Float()); at < before || at > time.Now().UnixMilli() {
		t.Errorf("lastError.at %d, want between %d and now", at, before)
	}
	if st := a.Get("sync").Get("state").Get("status").String(); st != "synced" {
		t.Errorf("status %s beside the transient error, want synced", st)
	}
	waitFor(t, "the other tab to show lastError", func() bool {
		v := lastErr(b)
		return v.Type() == js.TypeObject && v.Get("code").String() == "APPLY_CHANGES_REFUSED"
	})
	// Changes from the relay do not clear a push's error; an ack does.
	da.onSyncEvent(client.Event{Type: client.ChangesApplied, Status: synced})
	da.onSyncEvent(client.Event{Type: client.StateChanged, Status: synced})
	if lastErr(a).Type() != js.TypeObject {
		t.Fatal("applied changes cleared the refused push's error")
	}
	da.onSyncEvent(client.Event{Type: client.PushAcked, Status: synced})
	waitFor(t, "lastError cleared by the ack", func() bool { return lastErr(a).Type() == js.TypeUndefined })
	waitFor(t, "lastError cleared in the other tab", func() bool { return lastErr(b).Type() == js.TypeUndefined })

	// A failed apply (not a relay error) has a code of its own and clears
	// when changes apply.
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: synced, Err: fmt.Errorf("client: applying changes 4..5: %w", model.ErrClockDrift)})
	waitFor(t, "the apply error", func() bool { return lastErr(a).Type() == js.TypeObject })
	if c := lastErr(a).Get("code").String(); c != "CLOCK_DRIFT" {
		t.Errorf("a failed apply's code %s", c)
	}
	da.onSyncEvent(client.Event{Type: client.ChangesApplied, Status: synced})
	waitFor(t, "lastError cleared by applied changes", func() bool { return lastErr(a).Type() == js.TypeUndefined })
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: synced, Err: errors.New("client: something else")})
	waitFor(t, "a plain error", func() bool { return lastErr(a).Type() == js.TypeObject })
	if c := lastErr(a).Get("code").String(); c != "SYNC_ERROR" {
		t.Errorf("a plain error's code %s", c)
	}
	// Not an error: the relay asks for a snapshot.
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: synced, Err: &wire.Error{Code: wire.CodeSnapshotRequired}})
	if c := lastErr(a).Get("code").String(); c != "SYNC_ERROR" {
		t.Errorf("after SNAPSHOT_REQUIRED the code is %s", c)
	}
	// A transaction the client gave up on will not sync: later successes
	// do not clear it; disconnect does.
	big := &client.RefusedError{TransactionID: "1:0:x", Message: "it encodes to 9 bytes", Err: client.ErrTooLarge}
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: synced, Err: big})
	waitFor(t, "the too-large transaction", func() bool { return lastErr(a).Get("code").String() == "TRANSACTION_TOO_LARGE" })
	skipped := &client.RefusedError{TransactionID: "1:1:x", Code: wire.CodeApplyChangesRefused, Message: "too many changes", Err: &wire.Error{Code: wire.CodeApplyChangesRefused, Message: "too many changes", RequestID: "apply-9"}}
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: synced, Err: skipped})
	waitFor(t, "the skipped transaction", func() bool { return lastErr(a).Get("code").String() == "APPLY_CHANGES_REFUSED" })
	da.onSyncEvent(client.Event{Type: client.PushAcked, Status: synced})
	da.onSyncEvent(client.Event{Type: client.ChangesApplied, Status: synced})
	da.onSyncEvent(client.Event{Type: client.StateChanged, Status: synced})
	if le := lastErr(a); le.Type() != js.TypeObject || le.Get("message").String() != skipped.Error() {
		t.Errorf("after an ack, applied changes and synced, lastError %s, want the skipped transaction's", describe(le))
	}
	must(t, a.Get("sync").Call("disconnect"))
	if v := lastErr(a); v.Type() != js.TypeUndefined {
		t.Errorf("lastError %s after disconnect", describe(v))
	}
	// Each change was emitted (a state emitted again repeats its lastError).
	changes := jsfn("e", "return e.filter((c, i) => i === 0 || c !== e[i - 1])").Invoke(events)
	if got := describe(changes); got != `[null, "APPLY_CHANGES_REFUSED", null, "CLOCK_DRIFT", null, "SYNC_ERROR", "TRANSACTION_TOO_LARGE", "APPLY_CHANGES_REFUSED", null]` {
		t.Errorf("syncState events' lastError codes %s", describe(events))
	}
}

// TestSyncLastErrorClockDrift: the relay's CLOCK_DRIFT refusing a push
// (this device's clock ahead) shows as lastError.code CLOCK_DRIFT beside
// the client's "syncing" state, is a push's error (applied changes do not
// clear it) and clears at the next acknowledged push; the engine's drift
// refusing changes from the relay (this device behind) has the same code.
func TestSyncLastErrorClockDrift(t *testing.T) {
	name := dbName(t)
	t.Cleanup(func() { deleteIDB(name) })
	a := openDB(t, name, testSchema)
	waitFor(t, "leadership", func() bool { return a.Get("isLeader").Bool() })
	da := dbOf(t, a)
	lastErr := func() js.Value { return a.Get("sync").Get("state").Get("lastError") }
	status := func() string { return a.Get("sync").Get("state").Get("status").String() }
	syncing := client.Status{State: client.Syncing}
	drift := &wire.Error{Code: wire.CodeClockDrift, RequestID: "apply-4",
		Message: "clock drift: remote time 1764374861234 ms is 356341 ms ahead of local time 1764374504893 ms (limit 60000 ms)"}
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: syncing, Err: drift})
	da.onSyncEvent(client.Event{Type: client.StateChanged, Status: syncing})
	waitFor(t, "lastError", func() bool { return lastErr().Type() == js.TypeObject })
	if c := lastErr().Get("code").String(); c != "CLOCK_DRIFT" {
		t.Errorf("lastError.code %s for the relay's CLOCK_DRIFT", c)
	}
	if st := status(); st != "syncing" {
		t.Errorf("status %s while pushes are refused", st)
	}
	da.onSyncEvent(client.Event{Type: client.ChangesApplied, Status: syncing})
	if lastErr().Type() != js.TypeObject {
		t.Fatal("applied changes cleared the refused push's CLOCK_DRIFT")
	}
	synced := client.Status{State: client.Synced}
	da.onSyncEvent(client.Event{Type: client.PushAcked, Status: syncing})
	da.onSyncEvent(client.Event{Type: client.StateChanged, Status: synced})
	waitFor(t, "lastError cleared by the ack", func() bool { return lastErr().Type() == js.TypeUndefined })
	if st := status(); st != "synced" {
		t.Errorf("status %s after the ack", st)
	}
	behind := fmt.Errorf("client: applying changes 4..5: %w", &model.DriftError{Remote: model.HLC{Wall: 1764374861234}, Now: 1764374504893})
	da.onSyncEvent(client.Event{Type: client.ErrorReported, Status: syncing, Err: behind})
	waitFor(t, "the pull's drift", func() bool { return lastErr().Type() == js.TypeObject })
	if c := lastErr().Get("code").String(); c != "CLOCK_DRIFT" {
		t.Errorf("lastError.code %s for changes from the relay ahead of this device", c)
	}
}
