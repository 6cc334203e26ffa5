//go:build js && wasm

package jsbridge

import (
	"syscall/js"
	"testing"
)

// TestSyncArguments: db.sync.connect validates its arguments.
func TestSyncArguments(t *testing.T) {
	db := openT(t)
	s := db.Get("sync")
	mustReject(t, s.Call("connect", 5, jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "url must be a string")
	mustReject(t, s.Call("connect", "", jsv(`{database: "d"}`)), "INVALID_ARGUMENT", "url")
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync"), "INVALID_ARGUMENT", "options")
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "bad id!"}`)), "INVALID_ARGUMENT", "database id")
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d", tokn: "x"}`)), "INVALID_ARGUMENT", `"tokn"`)
	mustReject(t, s.Call("connect", "ws://127.0.0.1:9/sync", jsv(`{database: "d", token: 5}`)), "INVALID_ARGUMENT", "token")
	if got := describe(s.Get("state")); got != `{status: "disconnected", pending: 0, leader: false}` && got != `{status: "disconnected", pending: 0, leader: true}` {
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
